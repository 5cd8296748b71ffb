// SPDX-License-Identifier: Apache-2.0
// Clock domain helpers: period rounding to whole ps, edge alignment, and that wait_cycles /
// wait_until always resume a thread on an edge of the domain.
#include "hw/common/clock_domain.h"

#include <random>
#include <stdexcept>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

namespace {

using rnic::hw::clock_domain;
using sc_core::SC_NS;
using sc_core::SC_PS;
using sc_core::sc_time;

sc_time ps(double v) {
    return sc_time(v, SC_PS);
}

// Runs `body` as an SC_THREAD from t = 0 until the simulation starves.
template <typename F>
void run_thread(F body) {
    sc_core::sc_spawn(body, "body");
    sc_core::sc_start();
}

TEST(ClockDomain, PeriodIsRoundedToWholePicoseconds) {
    EXPECT_EQ(clock_domain("a", 250).period_ps(), 4000u);
    EXPECT_EQ(clock_domain("b", 156.25).period_ps(), 6400u);
    EXPECT_EQ(clock_domain("c", 300).period_ps(), 3333u);         // 3333.33 ps rounds down
    EXPECT_EQ(clock_domain("d", 700).period_ps(), 1429u);         // 1428.57 ps rounds up
    EXPECT_EQ(clock_domain("e", 322.265625).period_ps(), 3103u);  // 100G MAC clock
    const clock_domain c("c", 300);
    EXPECT_EQ(c.period(), ps(3333));
    EXPECT_EQ(c.cycles(0), sc_core::SC_ZERO_TIME);
    EXPECT_EQ(c.cycles(3), ps(9999));  // n whole periods, no drift from the exact 10 ns
    EXPECT_EQ(c.cycles(1000000), ps(3333000000.0));
    EXPECT_EQ(c.name(), "c");
    EXPECT_DOUBLE_EQ(c.freq_mhz(), 300.0);
    // A frequency whose period rounds to 0 ps cannot keep a grid.
    EXPECT_THROW(clock_domain("fast", 3e6), std::invalid_argument);
}

TEST(ClockDomain, EdgeAtOrAfterAndCycleOf) {
    const clock_domain c("nic", 250);  // 4 ns
    EXPECT_EQ(c.edge_at_or_after(sc_core::SC_ZERO_TIME), sc_core::SC_ZERO_TIME);
    EXPECT_EQ(c.edge_at_or_after(ps(1)), ps(4000));
    EXPECT_EQ(c.edge_at_or_after(ps(3999)), ps(4000));
    EXPECT_EQ(c.edge_at_or_after(ps(4000)), ps(4000));  // on an edge: that edge
    EXPECT_EQ(c.edge_at_or_after(ps(4001)), ps(8000));
    EXPECT_EQ(c.edge_at_or_after(sc_time(1, sc_core::SC_MS)), sc_time(1, sc_core::SC_MS));
    EXPECT_EQ(c.cycle_of(sc_core::SC_ZERO_TIME), 0u);
    EXPECT_EQ(c.cycle_of(ps(1)), 1u);
    EXPECT_EQ(c.cycle_of(ps(4000)), 1u);
    EXPECT_EQ(c.cycle_of(ps(4001)), 2u);
    EXPECT_EQ(c.cycle_of(sc_time(1, sc_core::SC_US)), 250u);

    const clock_domain odd("odd", 300);  // 3333 ps: edges are multiples of the rounded period
    EXPECT_EQ(odd.edge_at_or_after(sc_time(10, SC_NS)), ps(13332));
    EXPECT_EQ(odd.edge_at_or_after(ps(9999)), ps(9999));
    EXPECT_EQ(odd.cycle_of(ps(9999)), 3u);
}

// ps_time (inline sc_time x double below 2^52 units) against sc_time::from_value, on both sides
// of the bound, and the times built from it (cycles, time_of_cycle, edge_at_or_after) against
// their formulas in whole ps; with and without a ppm offset.
TEST(ClockDomain, TimesFromPicosecondsMatchFromValueOnBothSidesOfTheInlineBound) {
    const clock_domain c("c", 300);
    const clock_domain off("off", 322.265625, 37);
    const uint64_t bound = uint64_t{1} << 52;
    std::mt19937_64 rng(29);
    std::vector<uint64_t> values = {
        0, 1, 2, 3333, bound - 2, bound - 1, bound, bound + 1, bound + 3, (uint64_t{1} << 60) + 7};
    for (int i = 0; i < 2000; ++i) {
        values.push_back(rng() >> (rng() % 64));
    }
    for (const uint64_t v : values) {
        SCOPED_TRACE(v);
        EXPECT_EQ(c.ps_time(v).value(), v);
        EXPECT_EQ(c.ps_time(v), sc_time::from_value(v));
        const uint64_t n = v / 4000;  // cycles below and above the bound
        EXPECT_EQ(c.cycles(n).value(), n * 3333);
        if (n < ~uint64_t{0} / c.period_fs()) {  // edge n's fs fit in 64 bits
            EXPECT_EQ(c.time_of_cycle(n).value(), n * 3333);
        }
        const uint64_t k = v >> 22;  // the offset clock: floor(k x period_fs / 1000) ps
        EXPECT_EQ(off.time_of_cycle(k).value(), k * off.period_fs() / 1000);
        EXPECT_EQ(off.cycles(k).value(), k * off.period_fs() / 1000);
        if (v < (uint64_t{1} << 62)) {
            EXPECT_EQ(c.edge_at_or_after(sc_time::from_value(v)).value(), (v + 3332) / 3333 * 3333);
        }
    }
}

TEST(ClockDomain, WaitCyclesLandsOnEdges) {
    const clock_domain c("nic", 250);
    std::vector<sc_time> t;
    run_thread([&] {
        c.wait_cycles(0);  // on an edge already: no wait
        t.push_back(sc_core::sc_time_stamp());
        c.wait_cycles(3);  // 0 -> 12 ns
        t.push_back(sc_core::sc_time_stamp());
        sc_core::wait(ps(1500));  // off the grid at 13.5 ns
        c.wait_cycles(0);         // next edge: 16 ns
        t.push_back(sc_core::sc_time_stamp());
        sc_core::wait(ps(1));  // 16.001 ns
        c.wait_cycles(2);      // edge 20 ns + 2 cycles = 28 ns
        t.push_back(sc_core::sc_time_stamp());
    });
    ASSERT_EQ(t.size(), 4u);
    EXPECT_EQ(t[0], sc_core::SC_ZERO_TIME);
    EXPECT_EQ(t[1], sc_time(12, SC_NS));
    EXPECT_EQ(t[2], sc_time(16, SC_NS));
    EXPECT_EQ(t[3], sc_time(28, SC_NS));
    for (const auto& x : t) {
        EXPECT_EQ(c.edge_at_or_after(x), x) << x;
    }
}

TEST(ClockDomain, WaitUntilLandsOnTheEdgeAtOrAfter) {
    const clock_domain c("nic", 300);  // 3333 ps
    std::vector<sc_time> t;
    run_thread([&] {
        c.wait_until(ps(1));  // -> 3333
        t.push_back(sc_core::sc_time_stamp());
        c.wait_until(ps(6666));  // exactly an edge
        t.push_back(sc_core::sc_time_stamp());
        c.wait_until(sc_core::SC_ZERO_TIME);  // in the past, already on an edge: no wait
        t.push_back(sc_core::sc_time_stamp());
        sc_core::wait(ps(10));  // 6676, off the grid
        c.wait_until(ps(100));  // in the past: the next edge from now, 9999
        t.push_back(sc_core::sc_time_stamp());
        c.wait_until(sc_time(1, sc_core::SC_US));  // 1e6 ps -> 301 x 3333 = 1003233
        t.push_back(sc_core::sc_time_stamp());
    });
    ASSERT_EQ(t.size(), 5u);
    EXPECT_EQ(t[0], ps(3333));
    EXPECT_EQ(t[1], ps(6666));
    EXPECT_EQ(t[2], ps(6666));
    EXPECT_EQ(t[3], ps(9999));
    EXPECT_EQ(t[4], ps(1003233));
}

TEST(ClockDomain, TwoDomainsKeepTheirOwnGrids) {
    const clock_domain nic("nic", 250);      // 4000 ps
    const clock_domain mac("mac", 390.625);  // 2560 ps
    std::vector<sc_time> t_nic;
    std::vector<sc_time> t_mac;
    sc_core::sc_spawn(
        [&] {
            for (int i = 0; i < 5; ++i) {
                sc_core::wait(ps(777));
                nic.wait_cycles(1);
                t_nic.push_back(sc_core::sc_time_stamp());
            }
        },
        "nic_thread");
    sc_core::sc_spawn(
        [&] {
            for (int i = 0; i < 5; ++i) {
                sc_core::wait(ps(777));
                mac.wait_cycles(1);
                t_mac.push_back(sc_core::sc_time_stamp());
            }
        },
        "mac_thread");
    sc_core::sc_start();
    ASSERT_EQ(t_nic.size(), 5u);
    ASSERT_EQ(t_mac.size(), 5u);
    // nic: 777 -> edge 4000 + 4000 = 8000; 8777 -> 12000 + 4000 = 16000; ...
    EXPECT_EQ(t_nic[0], ps(8000));
    EXPECT_EQ(t_nic[1], ps(16000));
    EXPECT_EQ(t_nic[4], ps(40000));
    // mac: 777 -> 2560 + 2560 = 5120; 5897 -> 7680 + 2560 = 10240; ...
    EXPECT_EQ(t_mac[0], ps(5120));
    EXPECT_EQ(t_mac[1], ps(10240));
    for (const auto& x : t_nic) {
        EXPECT_EQ(x.value() % 4000, 0u);
    }
    for (const auto& x : t_mac) {
        EXPECT_EQ(x.value() % 2560, 0u);
    }
}

// A clock `ppm` off nominal (topology.clocks) runs at f x (1 + ppm/1e6): 500 MHz at +50 ppm has
// a period of 2 ns / 1.00005 = 1999.90000 ps, kept in fs; its edge n is at floor(n x period) ps,
// so a million cycles take 1,999,900,005 ps less the fraction (100 ns less than nominal), and
// -50 ppm adds 100 ns. Every edge + cycles(n) waited on lands on edge n further.
TEST(ClockDomain, OffsetInPpmMakesTheFrequencyExact) {
    const clock_domain fast("fast", 500, 50);
    const clock_domain slow("slow", 500, -50);
    const clock_domain exact("exact", 500, 0);
    EXPECT_EQ(fast.period_fs(), 1999900u);  // 2e6 / 1.00005 = 1999900.005
    EXPECT_EQ(slow.period_fs(), 2000100u);  // 2e6 / 0.99995 = 2000100.005
    EXPECT_EQ(exact.period_fs(), 2000000u);
    EXPECT_DOUBLE_EQ(fast.offset_ppm(), 50.0);
    EXPECT_EQ(fast.period(), ps(1999));
    EXPECT_EQ(fast.time_of_cycle(1000000), ps(1999900000));
    EXPECT_EQ(slow.time_of_cycle(1000000), ps(2000100000));
    // Measured frequency: whole cycles in one simulated ms (the last edge at or before it)
    // against f x (1 + ppm/1e6).
    const sc_time ms(1, sc_core::SC_MS);
    EXPECT_EQ(fast.cycle_after(ms) - 1, 500025u);  // 500000 x 1.00005 = 500025
    EXPECT_EQ(slow.cycle_after(ms) - 1, 499975u);
    EXPECT_EQ(exact.cycle_after(ms) - 1, 500000u);
    // edge_at_or_after and cycle_of agree with the edge times.
    for (uint64_t n = 0; n < 5000; n += 7) {
        const sc_time e = fast.time_of_cycle(n);
        EXPECT_EQ(fast.edge_at_or_after(e), e) << n;
        EXPECT_EQ(fast.cycle_of(e), n) << n;
        if (n > 0) {
            EXPECT_EQ(fast.edge_at_or_after(e - ps(1)), e) << n;
            EXPECT_EQ(fast.cycle_after(e - ps(1)), n) << n;
            EXPECT_EQ(fast.cycle_after(e), n + 1) << n;
        }
    }
    std::vector<std::pair<sc_time, sc_time>> got;  // (reached, expected)
    run_thread([&] {
        fast.wait_cycles(3);
        got.emplace_back(sc_core::sc_time_stamp(), fast.time_of_cycle(3));
        for (uint64_t k = 3, n = 1; k < 40000; k += n, n = n % 13 + 1) {
            fast.wait_until(sc_core::sc_time_stamp() + fast.cycles(n));
            got.emplace_back(sc_core::sc_time_stamp(), fast.time_of_cycle(k + n));
        }
        sc_core::wait(ps(700));
        const uint64_t k = fast.cycle_of(sc_core::sc_time_stamp());
        fast.wait_cycles(2);
        got.emplace_back(sc_core::sc_time_stamp(), fast.time_of_cycle(k + 2));
    });
    ASSERT_GT(got.size(), 5000u);
    for (const auto& [reached, expected] : got) {
        ASSERT_EQ(reached, expected);
    }
}

}  // namespace
