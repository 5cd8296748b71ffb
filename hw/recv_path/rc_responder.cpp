// SPDX-License-Identifier: Apache-2.0
// RC responder checks and selective repeat's window, see rc_responder.h.
#include "hw/recv_path/rc_responder.h"

namespace rnic::hw {

namespace rc {

bool consumes_receive(uint8_t op) {
    if (is_send(op)) {
        const roce::opcode_info& oi = roce::info(op);
        return oi.is_first || oi.is_only;
    }
    return op == roce::RC_WRITE_LAST_IMM || op == roce::RC_WRITE_ONLY_IMM;
}

bool send_out_of_sequence(uint8_t op, bool send_open) {
    return is_send(op) && consumes_receive(op) == send_open;
}

}  // namespace rc

void sr_window::open(uint32_t window) {
    slots.assign(window, 0);
    head = 0;
}

void sr_window::shift(uint32_t n) {
    if (slots.empty()) {
        return;
    }
    const auto w = static_cast<uint32_t>(slots.size());
    for (uint32_t k = 0; k < n && k < w; ++k) {
        slots[head] = 0;
        head = (head + 1) % w;
    }
    beyond = beyond > n ? beyond - n : 0;
}

bool sr_window::needs_go_back() {
    bool go_back = overflow;
    for (uint32_t i = 0; !slots.empty() && i <= beyond; ++i) {
        go_back = go_back || (slot(i) & DROPPED) != 0;
    }
    return go_back;
}

void sr_window::cover_unplaced() {
    for (uint32_t i = 0; !slots.empty() && i <= beyond; ++i) {
        uint8_t& s = slot(i);
        if ((s & PLACED) == 0) {
            s = COVERED;
        }
    }
    overflow = false;
}

bool sr_window::next_gap_open() {
    const uint8_t gap = slot(0);
    return (beyond > 0 || overflow || (gap & DROPPED) != 0) && (gap & COVERED) == 0;
}

}  // namespace rnic::hw
