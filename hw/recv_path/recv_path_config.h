// SPDX-License-Identifier: Apache-2.0
// Receive path parameters (rnic.recv_path).
#pragma once

#include <cstdint>

#include "hw/common/config_reader.h"
#include "hw/common/transport_config.h"

namespace rnic::hw {

struct recv_path_config {
    // Receive buffer in bytes (a frame arriving to a full buffer is dropped): ConnectX-4/5's
    // port receive buffer, 262016 B (Mellanox community DOC-2933, "HowTo Tune Receive Buffers":
    // "Port buffer size = 262016").
    uint64_t fifo_bytes = 262016;
    // PFC on the receive buffer (when the link's pfc is on): XOFF pause frames for the
    // priorities in pfc_priorities once the buffer holds fifo_bytes - headroom, XON once it is
    // down to pfc_xon_bytes. The headroom is what may still arrive after XOFF is decided
    // (pfc_headroom_bytes(); 0: computed per link as switch vendors do, IEEE 802.1Qbb / 802.3
    // Annex 31D; hw/recv_path/README.md). pfc_xon_bytes 0: the XOFF threshold - one largest
    // frame (mlx5's xon = xoff - max_mtu).
    uint64_t pfc_headroom_bytes = 0;
    uint32_t pfc_response_quanta = 0;  // the upstream MAC's PFC response time; 0: IEEE 802.3
                                       // Table 31D-1 for the link rate
    uint64_t pfc_xon_bytes = 0;
    uint32_t pfc_priorities = 0xFF;  // bit p: priority p is paused
    uint32_t parse_cycles = 4;       // header parse, ICRC check and QP lookup: +4 cycles per packet
    // The parse stage works ahead of the handler: a frame's parse starts when it is in the FIFO
    // and the stage is free (one frame per cycle), so the handler waits only for what is left.
    bool parse_pipelined = false;
    // Receive lanes: frame-processing units working at once, each frame steered to lane
    // (destination QPN mod lanes) so that one QP's frames go through one lane in order; the
    // lanes share the parse stage, the receive buffer, DMA, translation and the context cache.
    uint32_t lanes = 1;
    double placement_lag_ns =
        2000;                     // DMA writes may trail the parser by this much before it stalls
    uint32_t ack_coalesce = 1;    // ACK every Nth AckReq message (1: every one)
    double ack_delay_ns = 2000;   // ... or this long after the oldest unacknowledged one
    uint32_t rnr_timer_code = 1;  // RNR NAK timer field (IBA table: 1 = 0.01 ms)
    uint32_t rq_prefetch = 4;     // receive WQEs read ahead per RQ/SRQ
    transport_config transport;   // rnic.transport (loss recovery), set by the NIC
    uint32_t max_frame_bytes = 4170;  // largest RoCE frame (rnic.limits.max_mtu), set by the NIC
    // Cut-through receive: the link hands a frame over once its headers are in, the parse
    // starts then, and the payload is written to host memory as it arrives (each PCIe write TLP
    // once its bytes are in); what completes the packet (CQE, ACK) waits for its last byte and
    // the ICRC. false: the frame is taken when its last byte is in (README.md, "Cut-through").
    bool cut_through = false;
};
recv_path_config parse_recv_path_config(config::reader r);

// PFC thresholds of the receive buffer on a link of `rate_gbps` and one-way `propagation_ns`
// (cable and PHYs).
struct pfc_thresholds {
    uint64_t headroom = 0;  // bytes above XOFF
    uint64_t xoff = 0;      // XOFF once the buffer holds this many bytes
    uint64_t xon = 0;       // XON once it is down to this many
};
// IEEE 802.3 Table 31D-1: the longest a MAC may keep sending after a PFC frame arrives, in
// pause quanta (512 bit times), for the PHY rate class of `rate_gbps`.
uint32_t pfc_response_quanta(double rate_gbps);
// The headroom as switch vendors size it (IEEE 802.1Qbb, Cisco "Priority Flow Control: Build
// Reliable Layer 2 Infrastructure"): our pause frame waits behind one largest frame of ours,
// travels the cable, the upstream responds within its response time and finishes the largest
// frame it has started; what it sent meanwhile is on the cable on its way back. In wire bytes
// (FCS, preamble and inter-frame gap counted): 2 x propagation x rate + 2 largest frames + a
// pause frame + the response time.
pfc_thresholds nic_pfc_thresholds(const recv_path_config& c, double rate_gbps,
                                  double propagation_ns);

}  // namespace rnic::hw
