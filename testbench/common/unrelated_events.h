// SPDX-License-Identifier: Apache-2.0
// Timed events no process is sensitive to, for the KernelOrder checks (testbench/system/
// kernel_order_test.cpp, testbench/system/kernel_order_check.cpp): they change only the shape
// of the kernel's timed-event queue, and with it the order in which the reference kernel runs
// the processes woken at one instant (an order the standard leaves open). A run's outputs must
// not change with them.
#pragma once

#include <systemc>

namespace rnic::testing {

// One event every 10 ns from `from_us` for `span_us`, and four more at its end. Call before the
// simulation starts; all must be before the run's end (a run ends when nothing is left to do:
// an event pending after that would make it longer).
inline void add_unrelated_events(double from_us, double span_us) {
    for (int i = 0; i < 4; ++i) {
        (new sc_core::sc_event())->notify(from_us + span_us, sc_core::SC_US);
    }
    const int n = static_cast<int>(span_us * 100);
    for (int i = 1; i <= n; ++i) {
        (new sc_core::sc_event())->notify(from_us * 1000 + 10.0 * i, sc_core::SC_NS);
    }
}

}  // namespace rnic::testing
