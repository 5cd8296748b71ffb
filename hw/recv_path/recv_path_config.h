// SPDX-License-Identifier: Apache-2.0
// Receive path parameters (rnic.recv_path).
#pragma once

#include <cstdint>

#include "hw/common/config_reader.h"
#include "hw/common/transport_config.h"

namespace rnic::hw {

struct recv_path_config {
    uint32_t fifo_frames = 64;  // receive FIFO; a frame arriving to a full FIFO is dropped
    // PFC on the receive FIFO (when the link's pfc is on): XOFF pause frames for the
    // priorities in pfc_priorities once the FIFO holds pfc_xoff_frames, XON at pfc_xon_frames.
    // What is above XOFF is the headroom for frames already on the cable. 0: fifo_frames * 3 / 4
    // and fifo_frames / 2.
    uint32_t pfc_xoff_frames = 0;
    uint32_t pfc_xon_frames = 0;
    uint32_t pfc_priorities = 0xFF;  // bit p: priority p is paused
    uint32_t parse_cycles = 4;       // header parse, ICRC check and QP lookup: +4 cycles per packet
    // The parse stage works ahead of the handler: a frame's parse starts when it is in the FIFO
    // and the stage is free (one frame per cycle), so the handler waits only for what is left.
    bool parse_pipelined = false;
    double placement_lag_ns =
        2000;                     // DMA writes may trail the parser by this much before it stalls
    uint32_t ack_coalesce = 1;    // ACK every Nth AckReq message (1: every one)
    double ack_delay_ns = 2000;   // ... or this long after the oldest unacknowledged one
    uint32_t rnr_timer_code = 1;  // RNR NAK timer field (IBA table: 1 = 0.01 ms)
    uint32_t rq_prefetch = 4;     // receive WQEs read ahead per RQ/SRQ
    transport_config transport;   // rnic.transport (loss recovery), set by the NIC
};
recv_path_config parse_recv_path_config(config::reader r);

}  // namespace rnic::hw
