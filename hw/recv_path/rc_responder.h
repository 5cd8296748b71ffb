// SPDX-License-Identifier: Apache-2.0
// RC responder checks and state, plain C++ (no SystemC): the PSN check every request passes
// (IBA 9.7.5.2.1-2: in order, a duplicate behind the expected PSN, or ahead of it), the opcode
// sequence of a SEND (9.7.5.2.2: a First/Only while a SEND is open, or a Middle/Last with none,
// is an invalid request), which requests consume a receive WQE, and selective repeat's bitmap
// window past the expected PSN (IRN; README "Selective repeat"). recv_path (the SystemC shell)
// executes what they decide. Unit tests: testbench/unit/rc_responder_test.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "hw/roce/protocol.h"
#include "hw/roce/roce.h"

namespace rnic::hw {

namespace rc {

inline bool is_send(uint8_t op) {
    return op <= roce::RC_SEND_ONLY_IMM || op == roce::RC_SEND_LAST_INV ||
           op == roce::RC_SEND_ONLY_INV;
}
inline bool is_write(uint8_t op) {
    return op >= roce::RC_WRITE_FIRST && op <= roce::RC_WRITE_ONLY_IMM;
}
inline bool is_read_response(uint8_t op) {
    return op >= roce::RC_READ_RESP_FIRST && op <= roce::RC_READ_RESP_ONLY;
}

// Where a request's PSN lies against the responder's expected PSN (IBA 9.7.5.2.1-2): the
// expected one; behind it by at most half the PSN space (a duplicate: executed already, a READ
// is served again); else ahead of it (out of sequence: a gap before it).
enum class psn_check { IN_ORDER, DUPLICATE, AHEAD };
inline psn_check check_psn(uint32_t psn, uint32_t expected, uint32_t* ahead) {
    const uint32_t diff = roce::psn_diff(psn, expected);
    *ahead = diff;
    if (diff == 0) {
        return psn_check::IN_ORDER;
    }
    return diff >= roce::HALF_PSN ? psn_check::DUPLICATE : psn_check::AHEAD;
}

// The request takes a receive WQE: a SEND's First/Only, a WRITE with immediate's Last/Only.
bool consumes_receive(uint8_t op);
// A SEND packet out of opcode sequence: a First/Only while a SEND is open (`send_open`), or a
// Middle/Last with none open (IBA 9.7.5.2.2: NAK invalid request).
bool send_out_of_sequence(uint8_t op, bool send_open);

}  // namespace rc

// Selective repeat's bitmap window past the expected PSN (a ring of rnic.transport.sr_window
// slots, allocated at the QP's first out-of-order packet: slot i, counted from `head`, is PSN
// expected_psn + i). Part of the QP context (qp_context::sr).
struct sr_window {
    // Slot flags.
    static constexpr uint8_t PLACED = 1;    // placed, waiting for the packets before it
    static constexpr uint8_t END = 2;       // ... and it ends its message
    static constexpr uint8_t ACKREQ = 4;    // ... and it asked for an ACK
    static constexpr uint8_t DROPPED = 8;   // seen, not kept (a resend is needed)
    static constexpr uint8_t COVERED = 16;  // dropped, and a go-back NAK asked for it again

    std::vector<uint8_t> slots;
    uint32_t head = 0;
    uint32_t beyond = 0;    // highest slot seen in use (0: nothing past expected_psn)
    bool overflow = false;  // a packet past the window was dropped, no go-back NAK since

    bool active() const { return !slots.empty(); }
    // The QP's first loss or reordering: `window` slots, all free.
    void open(uint32_t window);
    uint8_t& slot(uint32_t i) { return slots[(head + i) % slots.size()]; }
    // The expected PSN moved on by `n`: the slots leaving the window are cleared.
    void shift(uint32_t n);
    // A packet `ahead` of the expected PSN was seen (its slot in use).
    void seen(uint32_t ahead) { beyond = beyond > ahead ? beyond : ahead; }
    // The NAK for the gap at the expected PSN goes back (sequence NAK: resend from the gap on)
    // rather than asking for that one packet: something past the gap was dropped unkept, or
    // did not fit the window.
    bool needs_go_back();
    // A go-back NAK went: every slot not kept up to the highest one seen is on its way again.
    void cover_unplaced();
    // After the expected PSN moved: something past it arrived and the packet there is not on
    // its way again after a go-back NAK, so the next gap is NAKed at once.
    bool next_gap_open();
};

}  // namespace rnic::hw
