// SPDX-License-Identifier: Apache-2.0
// GSI (QP1): the RNIC's management-datagram port. The driver's CM agent exchanges IB CM MADs
// (REQ, MRA, REJ, REP, RTU, DREQ, DREP) with its peers through two host-memory rings (hw/hsi/
// hsi.h, GSI section); on the wire each MAD is a RoCEv2 UD SEND-only frame (BTH opcode 0x64,
// dest QP 1, DETH with the GSI Q_Key and source QP 1, 256 B MAD, ICRC) as in IBA 13.4 / annex
// A17. The same rings carry ARP (RFC 826) frames for the driver's neighbour resolution, and the
// block answers ARP requests for the port's own IPv4 itself (hardware responder). Not modelled:
// P_Key tables (0xFFFF always), QP0/SMPs, other management classes (dropped and counted), MAD
// segmentation (RMPP), IPv6 (neighbour discovery), ARP for other EtherTypes than IPv4.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>

#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
#include "hw/common/config_reader.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/dma_engine/dma_engine.h"
#include "hw/hsi/hsi.h"
#include "hw/nic/nic_identity.h"
#include "tlm/ethernet/eth_link.h"

namespace rnic::hw {

class cq_writer;

struct gsi_config {
    uint32_t process_cycles = 8;  // build or check one MAD frame's headers: +8 cycles (0..1000)
    uint32_t rx_fifo_frames = 8;  // QP1 frames waiting for a receive slot write (1..1024)
};
gsi_config parse_gsi_config(config::reader r);

// Timing (NIC clock, event-driven):
// - Send: a REG_GSI_SQ_DOORBELL write wakes the send thread; per slot: a 320 B DMA read, then
//   process_cycles (header build, ICRC), then the frame joins the MAC transmit FIFO (shared
//   with the send path at frame granularity; blocks while it is full), then the slot's `done`
//   byte is DMA-written (posted).
// - Receive: the receive path hands over QP1 frames after its parse stage; per frame:
//   process_cycles (checks), then one 320 B DMA write of the slot and an EQ event
//   (EVENT_GSI_RECEIVE) through the CQ writer, which signals MSI-X vector 0.
// - ARP: a send slot of kind ARP is sent as is (padded to 60 B) after process_cycles. A received
//   ARP request for the port's IPv4 is answered by the block: process_cycles, then the reply
//   joins the MAC FIFO, before the request itself is written to the receive ring (so the
//   driver learns the requester too). Replies for the port go to the ring like requests.
class gsi : public sc_core::sc_module {
public:
    gsi(sc_core::sc_module_name name, const gsi_config& cfg, const clock_domain& clk,
        const nic_identity& id, dma_engine& dma, cq_writer& cqw, channel<fabric::eth_frame>& mac_tx,
        sim_context& ctx);

    // True for BAR0 offsets in the GSI register window (the doorbell block routes them here).
    static bool decodes(uint64_t offset) {
        return offset >= hsi::REG_GSI_BASE && offset < hsi::REG_GSI_BASE + hsi::GSI_BAR_BYTES;
    }
    // A BAR0 write / read. False: unknown register or bad width.
    bool mmio_write(uint64_t offset, const uint8_t* data, unsigned len);
    bool mmio_read(uint64_t offset, uint8_t* data, unsigned len) const;

    // True if the frame is a RoCEv2 UD SEND-only frame or an ARP frame (the receive path hands
    // those here).
    static bool claims(const std::vector<uint8_t>& frame);
    static bool is_arp(const std::vector<uint8_t>& frame);
    // The ARP reply the hardware responder sends for `request` (an ARP request for `id.ip`).
    static std::vector<uint8_t> build_arp_reply(const std::vector<uint8_t>& request,
                                                const nic_identity& id);
    // From the receive path: a claimed frame (dropped and counted when the FIFO is full).
    void receive(fabric::eth_frame&& frame);

    // The UD SEND-only frame of one MAD (exposed for tests and the pcap checks).
    static std::vector<uint8_t> build_frame(const hsi::gsi_send_header& h, const uint8_t* mad,
                                            uint32_t psn, uint16_t ip_id);

    struct stats {
        uint64_t mads_sent = 0;
        uint64_t mads_received = 0;
        uint64_t send_bad_mad = 0;   // send slot dropped: not a CM MAD
        uint64_t rx_fifo_drops = 0;  // receive FIFO full
        uint64_t rx_malformed = 0;   // lengths, IP header, pad, UDP
        uint64_t rx_bad_icrc = 0;
        uint64_t rx_not_qp1 = 0;  // UD frame for another QP (no UD QPs besides QP1)
        uint64_t rx_bad_qkey = 0;
        uint64_t rx_not_for_us = 0;     // destination MAC or IP is not this port's
        uint64_t rx_bad_mad = 0;        // base version / class not a CM MAD
        uint64_t rx_no_buffer = 0;      // receive ring not set up or full
        uint64_t arp_sent = 0;          // ARP frames from send slots
        uint64_t send_bad_frame = 0;    // send slot dropped: raw frame not ARP / bad length
        uint64_t arp_received = 0;      // ARP frames written to the receive ring
        uint64_t arp_replies_sent = 0;  // answers of the hardware responder
        uint64_t arp_malformed = 0;     // not IPv4-over-Ethernet ARP, or too short
        uint64_t arp_not_for_us = 0;    // ARP for another IPv4 / MAC
    };
    const stats& get_stats() const { return m_stats; }

private:
    void send_thread();
    void recv_thread();
    // Checks a claimed frame; true if it goes to the receive ring (else a drop was counted).
    bool accept(const std::vector<uint8_t>& f);
    // ARP receive: answers requests for this port, true if the frame goes to the ring.
    bool accept_arp(const std::vector<uint8_t>& f);
    void send_raw(const uint8_t* frame, uint32_t bytes, uint8_t& done);
    // Writes one receive slot (header + bytes after it) and posts its EQ entry.
    void place(const hsi::gsi_recv_header& h, const uint8_t* body, size_t body_bytes);

    gsi_config m_cfg;
    const clock_domain& m_clk;
    nic_identity m_id;
    dma_engine& m_dma;
    cq_writer& m_cq_writer;
    channel<fabric::eth_frame>& m_mac_tx;
    channel<fabric::eth_frame> m_rx_fifo;
    // Registers.
    uint64_t m_sq_base = 0;
    uint32_t m_sq_log = 0;
    uint32_t m_sq_producer = 0;
    uint64_t m_rq_base = 0;
    uint32_t m_rq_log = 0;
    uint32_t m_rq_consumer = 0;
    // Engine state.
    uint32_t m_sq_consumer = 0;
    uint32_t m_rq_producer = 0;
    uint32_t m_psn = 0;  // BTH PSN of QP1's next frame
    uint16_t m_ip_id = 0;
    quick_event m_doorbell;
    stats m_stats;
};

}  // namespace rnic::hw
