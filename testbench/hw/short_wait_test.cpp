// SPDX-License-Identifier: Apache-2.0
// hw::short_wait (hw/common/short_wait.h): a wait for an event or a timeout, taken in steps of at
// most 16 us, ends exactly where the single SystemC wait(timeout, event) would.
#include "hw/common/short_wait.h"

#include <systemc>

#include <gtest/gtest.h>

namespace {

using sc_core::sc_time;
using sc_core::SC_US;

TEST(ShortWait, WithoutTheEventItEndsAtTheTimeout) {
    sc_core::sc_event e("e");
    sc_time woke;
    sc_core::sc_spawn(
        [&] {
            rnic::hw::short_wait(sc_time(100, SC_US), e);  // 6.25 steps
            woke = sc_core::sc_time_stamp();
        },
        "waiter");
    sc_core::sc_start();
    EXPECT_EQ(woke, sc_time(100, SC_US));
}

TEST(ShortWait, TheEventEndsItAtOnce) {
    sc_core::sc_event e("e");
    sc_time woke;
    bool woke_by_event = false;
    sc_core::sc_spawn(
        [&] {
            rnic::hw::short_wait(sc_time(67, sc_core::SC_MS), e);
            woke = sc_core::sc_time_stamp();
            woke_by_event = !sc_core::timed_out();
        },
        "waiter");
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(50, SC_US);
            e.notify();
        },
        "notifier");
    sc_core::sc_start();
    EXPECT_EQ(woke, sc_time(50, SC_US));
    EXPECT_TRUE(woke_by_event);
    // Nothing is left pending after the event: the run ends there, not at 67 ms.
    EXPECT_EQ(sc_core::sc_time_stamp(), sc_time(50, SC_US));
}

TEST(ShortWait, ADeadlineLooperNeverWaitsMoreThanAStep) {
    sc_time woke;
    sc_core::sc_spawn(
        [&] {
            const sc_time deadline(40, SC_US);
            EXPECT_EQ(rnic::hw::short_wait_until(deadline), sc_time(16, SC_US));
            sc_core::wait(rnic::hw::short_wait_until(sc_time(5, SC_US)));
            woke = sc_core::sc_time_stamp();
        },
        "looper");
    sc_core::sc_start();
    EXPECT_EQ(woke, sc_time(5, SC_US));
}

}  // namespace
