// SPDX-License-Identifier: Apache-2.0
#pragma once
// Timed waits that an event usually cuts short. SystemC 2.3 does not take a cancelled timed
// notification out of its timed-event queue: `wait(t, e)` woken by `e` leaves its timeout there
// as a dead entry until time t, and every timed notification of the run pays O(log n) for the
// queue's depth. A 67 ms ACK timeout cut short once per message kept that queue ~8,000 deep on a
// two-node line-rate run (17 % of all instructions in its heap); a 10 ms command timeout per
// admin command kept it thousands deep through the first 10 ms of a 1024-node run. A waiter
// that waits at most short_wait_step() at once, and goes back to waiting when it wakes with
// nothing due, bounds how long such an entry lives. The extra wake-ups change no timing: the
// waiter only finds its deadline not reached (and a run cut by its time limit ends at the limit,
// not at its last event, testbench/scenario/runner.cpp).
#include <algorithm>

#include <systemc>

namespace rnic::hw {

// The longest single wait: an entry cut short lives at most this long in the queue; a waiter
// whose deadline is further ahead wakes once per step, far fewer wake-ups than events per step
// of a busy NIC.
inline sc_core::sc_time short_wait_step() {
    static const sc_core::sc_time step(16, sc_core::SC_US);  // first used after elaboration
    return step;
}

// A waiter looping on its own deadline: how long to wait now for `deadline` (> now).
inline sc_core::sc_time short_wait_until(const sc_core::sc_time& deadline) {
    return std::min(deadline - sc_core::sc_time_stamp(), short_wait_step());
}

// wait(timeout, e) in steps: returns when `e` is notified or `timeout` has passed, as the single
// wait would.
inline void short_wait(const sc_core::sc_time& timeout, const sc_core::sc_event& e) {
    const sc_core::sc_time end = sc_core::sc_time_stamp() + timeout;
    for (;;) {
        sc_core::wait(short_wait_until(end), e);
        // A step's end and `e` notified in the same delta cycle (an immediate notification by a
        // process that ran first): `e` would have ended the single wait, so it ends this one.
        if (!sc_core::timed_out() || sc_core::sc_time_stamp() >= end || e.triggered()) {
            return;
        }
    }
}

}  // namespace rnic::hw
