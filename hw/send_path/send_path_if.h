// SPDX-License-Identifier: Apache-2.0
// The send path's transaction-level port contract (model and RTL implement it alike):
// message descriptors and payload in, Ethernet frames out. See rtl/send_path/CONTRACT.md for
// the pin-level form of the same streams.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <systemc>

#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
#include "hw/common/sim_context.h"
#include "hw/roce/telemetry.h"
#include "hw/send_path/send_path_config.h"
#include "tlm/ethernet/eth_link.h"

namespace rnic::hw {

enum class tx_kind : uint8_t {
    SEND,           // SEND First/Middle/Last/Only (+Imm / +Inv on the last)
    WRITE,          // RDMA WRITE First/Middle/Last/Only (+Imm on the last)
    READ_REQUEST,   // one packet, RETH, no payload; consumes ceil(length/pmtu) PSNs
    READ_RESPONSE,  // READ Response First/Middle/Last/Only; AETH on First/Last/Only
    ACK,            // Acknowledge (AETH), no payload
};

// Everything the send path needs to build a message's packets.
struct tx_descriptor {
    tx_kind kind = tx_kind::SEND;
    bool with_imm = false;   // SEND/WRITE: ImmDt on the last packet
    bool with_inv = false;   // SEND: IETH on the last packet
    bool solicited = false;  // SE bit on the last packet
    // AckReq on the descriptor's last packet (requests): the message's last for a whole
    // message, the segment's last for a segment (first_packet / packets below).
    bool ack_req = true;
    uint32_t src_qpn = 0;  // for the UDP source port (entropy)
    uint32_t dest_qpn = 0;
    uint32_t psn = 0;         // PSN of the message's first packet
    uint32_t pmtu = 1024;     // path MTU, bytes (256..4096)
    uint32_t length = 0;      // payload bytes of the message (READ_REQUEST: bytes to read)
    uint64_t remote_va = 0;   // RETH
    uint32_t rkey = 0;        // RETH
    uint32_t imm_or_key = 0;  // ImmDt or IETH
    uint8_t syndrome = 0x1F;  // AETH (ACK, READ_RESPONSE)
    uint32_t msn = 0;         // AETH
    std::array<uint8_t, 6> src_mac{};
    std::array<uint8_t, 6> dst_mac{};
    uint32_t src_ip = 0;
    uint32_t dst_ip = 0;
    uint64_t flow_id = 0;  // WQE id for the timeline trace
    // A segment of the message: this descriptor builds packets first_packet .. first_packet +
    // packets - 1 of it (packets 0: through its last packet). One form for every partial
    // message: the round-robin transmit scheduler's turns (rnic.tx_engine.scheduler), selective
    // repeat's resends of the packets a responder is missing, and the ACK-requesting segments
    // of congestion control (hw/tx_engine). psn, length, remote_va and the flags stay the
    // message's, so every frame is the one the whole message would have: First / Only and RETH
    // (DMA length = length) only on packet 0, Last / Only, ImmDt / IETH and SE only on the
    // message's last packet; AckReq (when ack_req) on the descriptor's last packet, wherever it
    // is in the message. The payload stream carries only the segment's bytes. 0 / 0 (the
    // default) is the whole message. Model only: the RTL send path's pins carry whole messages
    // (rtl/send_path/CONTRACT.md); the RTL wrapper fails a run that gives it a segment.
    uint32_t first_packet = 0;
    uint32_t packets = 0;
    // HPCC in-band telemetry (hw/roce/telemetry.h): every packet carries an INT stack, `int_`
    // (requests: empty, for the switches to fill; an ACK: the stack of the request it answers).
    // Model only, like segments.
    bool telemetry = false;
    roce::int_stack int_;
};

// Payload of the current message, in order, as the DMA engine delivers it. `ready` is the time
// the bytes are in the NIC; the send path must not emit a beat carrying them earlier. `parts`
// (optional; a transmit engine that streams, rnic.tx_engine.cut_through): the chunk's bytes
// come in per PCIe read request, bytes [0, end) at time t for each (end, t), ends increasing,
// the last one the chunk's size; a beat waits only for the part that holds its bytes.
struct payload_chunk {
    payload_chunk() = default;
    payload_chunk(std::vector<uint8_t> b, const sc_core::sc_time& r)
        : bytes(std::move(b))
        , ready(r) {}
    std::vector<uint8_t> bytes;
    sc_core::sc_time ready;
    std::vector<std::pair<uint32_t, sc_core::sc_time>> parts;
};

// Packets whose payload the transmit engine could not read (a source key died mid-message, so
// the rest of the message went in as zeros: exactly `length` bytes follow every descriptor).
// They must not reach a receiver as good data: the MAC transmits them stomped, with a corrupted
// CRC, and the receiver drops them. A real RNIC carries the error with the payload beat to the
// MAC (an AXI-Stream tuser bit); here the transmit engine names the packets (destination QP and
// PSNs) and the MAC transmit FIFO marks them as they enter (frames carry no FCS in this model,
// so the stomp inverts the ICRC; the receiver counts them as bad_icrc). The send path, model or
// RTL, is untouched: same beats on the same cycles.
class egress_stomp {
public:
    // Packets first_psn .. first_psn + packets - 1 (24-bit PSNs) of a message to dest_qpn:
    // only payload-carrying packets match (an ACK or NAK with the same PSN goes out intact).
    void add(uint32_t dest_qpn, uint32_t first_psn, uint32_t packets);
    bool empty() const { return m_ranges.empty(); }
    // If `frame` is one of the registered packets, corrupts its ICRC and forgets the packet.
    void apply(std::vector<uint8_t>& frame);
    uint64_t stomped = 0;  // packets stomped so far

private:
    struct range {
        uint32_t dest_qpn;
        uint32_t first_psn;
        uint32_t packets;
        uint32_t left;  // not yet seen
    };
    std::vector<range> m_ranges;
};

// What the transmit engine talks to. put_* block (from an SC_THREAD) while the input FIFOs
// are full. Descriptors with payload (SEND, WRITE, READ_RESPONSE with length > 0) are followed
// on the payload stream by exactly `length` bytes (a segment: the bytes of its packets), in one
// or more chunks.
class send_path_if {
public:
    virtual ~send_path_if() = default;
    virtual void put_descriptor(const tx_descriptor& d) = 0;
    virtual void put_payload(payload_chunk&& c) = 0;
    // A buffer of `n` bytes for a payload chunk, its contents unspecified (the producer
    // overwrites every byte): the input FIFO recycles the buffers of the chunks it has
    // released, so a chunk per packet costs no allocation and no zero-fill.
    virtual std::vector<uint8_t> payload_buffer(size_t n) { return std::vector<uint8_t>(n); }
    // From an SC_THREAD: returns once the payload FIFO has room, when put_payload would take
    // bytes (the wait put_payload begins with, for a producer that waits for the FIFO before
    // its data is ready). Default: no wait (put_payload waits). `continuing`: the producer
    // goes on with the same stream after its next put (it puts more of the same message,
    // looking at nothing else at this instant); the model may then do the frames' last-beat
    // steps itself while it waits (send_path README "Wake-ups").
    virtual void wait_payload_room(bool continuing = false) { (void)continuing; }
};

}  // namespace rnic::hw
