// SPDX-License-Identifier: Apache-2.0
// The transmit engine as the receive path sees it: the one boundary between the two halves of
// the transport. The receive path hands the responder's outbound traffic (ACK/NAKs, READ
// responses) to the transmit scheduler, and the requester's inbound events (ACKs, NAKs, READ
// responses) to the requester state; nothing else of tx_engine is reachable from recv_path.
// A block bench of the receive path implements it to record what the receive path asks for.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <systemc>

#include "hw/dma_engine/dma_engine.h"
#include "hw/send_path/send_path_if.h"
#include "hw/translation/translation.h"  // dma_segment

namespace rnic::hw {

// A message ready to go: the descriptor and where its payload comes from.
struct tx_job {
    tx_descriptor desc;
    std::vector<dma_segment> segments;  // payload in host memory, in order
    std::vector<uint8_t> inline_data;   // or inline payload
    // Keys of the payload source (the requester's gather lkeys, a READ response's rkey) and the
    // PD they must still belong to: re-checked for every packet read from host memory.
    std::vector<uint32_t> src_keys;
    uint32_t src_pdn = 0;
    uint32_t generation = 0;    // incarnation of src_qpn (reset/destroy): stale jobs are not sent
    uint32_t resend_epoch = 0;  // go-back-N resends: superseded when the QP's epoch moved on
    // Sent in turns (round-robin scheduler): when its first turn's payload read started (the
    // timeline's payload_dma slice spans the whole message, as when it goes whole).
    sc_core::sc_time dma_start;
    // When the engine queued it (ps): the rate limiter's counters take a packet as ready from
    // then, or from its QP's previous packet (pacer::try_pace).
    uint64_t queued_ps = 0;
    bool selective = false;  // a selective repeat resend of one packet: never superseded
};

// Where the payload of an outstanding READ lands (for the receive path).
struct read_target {
    bool found = false;
    uint32_t first_psn = 0;
    uint32_t length = 0;
    std::vector<dma_segment> segments;
    uint64_t flow_id = 0;
    uint32_t next_psn = 0;            // the response PSN the requester takes next (in order only)
    uint32_t pdn = 0;                 // the QP's PD: the sink keys are re-checked per packet
    std::vector<uint32_t> sink_keys;  // local keys of the sink's scatter entries
    bool placed = false;              // selective repeat: the response at `psn` is placed already
};

class tx_engine_if {
public:
    virtual ~tx_engine_if() = default;

    // --- from the receive path (responder side) ---
    // Queue an ACK/NAK or a READ response (blocking while the response FIFO is full).
    virtual void post_response(tx_job&& job) = 0;
    // post_response would block now; the event when the FIFO gives up an entry (receive
    // lanes waiting for room retry in a fixed order, hw/recv_path). A stand-in that never
    // blocks keeps the defaults.
    virtual bool response_fifo_full() const { return false; }
    virtual const sc_core::sc_event* response_taken() const { return nullptr; }

    // --- from the receive path (requester side) ---
    // ACK (syndrome ACK) covering every request up to and including `psn`. `from_wire`: an
    // ACK packet (not one implied by a NAK or a READ response).
    virtual void on_ack(uint32_t qpn, uint32_t psn, bool from_wire = false) = 0;
    // NAK: the request at `psn` failed with the hsi::cqe_status given; the QP goes to error.
    virtual void on_nak(uint32_t qpn, uint32_t psn, uint8_t status) = 0;
    // NAK PSN sequence error: the responder expects `psn`; go back N from there.
    virtual void on_nak_sequence(uint32_t qpn, uint32_t psn) = 0;
    // Selective NAK (rnic.transport.recovery selective_repeat, IRN): the responder expects
    // `psn` and keeps what came after it; resend only the packet at `psn`.
    virtual void on_nak_selective(uint32_t qpn, uint32_t psn) = 0;
    // RNR NAK: no receive posted at the responder for `psn`; retry after `delay`.
    virtual void on_rnr(uint32_t qpn, uint32_t psn, const sc_core::sc_time& delay) = 0;
    // The outstanding READ whose response PSNs include `psn`.
    virtual read_target find_read(uint32_t qpn, uint32_t psn) = 0;
    // A response of the READ starting at `first_psn` was placed (`in_order`), or arrived past a
    // missing one: then the READ is re-issued (once per gap; the responder serves it again and
    // the responses already placed are dropped as duplicates).
    virtual void on_read_response(uint32_t qpn, uint32_t first_psn, uint32_t psn,
                                  bool in_order) = 0;
    // The READ starting at `first_psn` received its last response packet.
    virtual void on_read_done(uint32_t qpn, uint32_t first_psn) = 0;
    // Selective repeat: the response at `psn` of the READ starting at `first_psn` was placed,
    // in PSN order or past a gap. Responses past a gap are kept; each gap is re-issued once, as a
    // READ of the missing PSNs only; the READ completes when every response is in.
    virtual void on_read_placed(uint32_t qpn, uint32_t first_psn, uint32_t psn) = 0;
    // The sink of the READ starting at `first_psn` no longer passes its key check (MR
    // deregistered or invalidated mid-transfer): the READ completes with `status` and the QP
    // goes to error.
    virtual void on_read_fault(uint32_t qpn, uint32_t first_psn, uint8_t status) = 0;

    // The responder hit a fatal error on `qpn` (it sent a remote access / invalid request /
    // remote operational NAK): the QP goes to ERROR, the async QP error event is posted and the
    // send queue is flushed (IBA 10.3.1).
    virtual void qp_error(uint32_t qpn) = 0;
    // Called whenever a QP enters ERROR through the transmit engine: the receive path flushes
    // its posted receives.
    virtual void set_qp_error_listener(std::function<void(uint32_t)> fn) = 0;
};

}  // namespace rnic::hw
