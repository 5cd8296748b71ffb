// SPDX-License-Identifier: Apache-2.0
// Clock domain: a period and the helpers that keep a block's timing on its clock grid.
#pragma once

#include <cstdint>
#include <string>

#include <systemc>

#include "hw/common/sim_now.h"

namespace rnic::hw {

// A block never clocks itself every cycle. It sleeps until it has work, then moves to the next
// edge of its domain and advances by whole cycles (DESIGN.md section 2). All times that leave a
// block are edges of its domain.
//
// The period is the nominal frequency's, rounded to whole picoseconds; a clock offset in ppm
// (topology.clocks: each node's oscillator, configs/README.md) makes it fractional: the period is
// then kept in femtoseconds and edge n is at floor(n x period) ps (the kernel's resolution is
// 1 ps), so a clock 50 ppm fast gains a picosecond every 20,000 ps of its own and the long-run
// frequency is exact. With no offset every edge is a whole multiple of the rounded period, as
// before offsets existed.
class clock_domain {
public:
    clock_domain(std::string name, double freq_mhz, double offset_ppm = 0.0);

    const std::string& name() const { return m_name; }
    double freq_mhz() const { return m_freq_mhz; }
    double offset_ppm() const { return m_offset_ppm; }
    // One period, whole picoseconds (rounded down when the offset makes it fractional).
    const sc_core::sc_time& period() const { return m_period; }
    uint64_t period_ps() const { return m_period_ps; }
    // The exact period in femtoseconds.
    uint64_t period_fs() const { return m_period_fs; }

    // The first clock edge at or after t. Inline for its usual case (t is an edge already, as
    // when a block asks at its own edge: t itself, no sc_time made).
    sc_core::sc_time edge_at_or_after(const sc_core::sc_time& t) const {
        if (m_exact && m_ps_value == 1 && t.value() % m_period_ps == 0) {
            return t;
        }
        return next_edge_slow(t);
    }
    // n cycles as a duration: whole multiples of the period; with an offset, floor(n x period)
    // ps, which added to an edge gives that edge's n-th successor or 1 ps before it (then
    // wait_until / edge_at_or_after land on the successor).
    sc_core::sc_time cycles(uint64_t n) const {
        if (m_exact) {
            return n < m_exact_cycles ? ps_time(m_period_ps * n)
                                      : sc_core::sc_time::from_value(m_period.value() * n);
        }
        return ps_time(fs_to_ps(n * m_period_fs));
    }
    // A duration in whole picoseconds (for busy/stall time counters).
    uint64_t ps_of(const sc_core::sc_time& d) const { return d.value() / m_ps_value; }
    // Cycle number of the edge at or after t (for traces and RTL comparison).
    uint64_t cycle_of(const sc_core::sc_time& t) const;
    // Cycle number of the first edge after t.
    uint64_t cycle_after(const sc_core::sc_time& t) const;
    // The time of edge n.
    sc_core::sc_time time_of_cycle(uint64_t n) const { return ps_time(fs_to_ps(n * m_period_fs)); }
    // `ps` picoseconds as a time: sc_time::from_value(ps x units per ps), made inline by the
    // kernel's own sc_time x double, exact while that value is below 2^52 (75 simulated minutes
    // at 1 ps), where from_value is a library call (a few per packet in every block).
    sc_core::sc_time ps_time(uint64_t ps) const {
        if (ps < m_exact_ps) {
            return m_one_ps * static_cast<double>(ps);
        }
        return sc_core::sc_time::from_value(ps * m_ps_value);
    }

    // From inside an SC_THREAD: move to the next edge (if not on one) then wait n more cycles.
    void wait_cycles(uint64_t n) const;
    // From inside an SC_THREAD: wait until the edge at or after t.
    void wait_until(const sc_core::sc_time& t) const;

private:
    static uint64_t fs_to_ps(uint64_t fs) { return fs / 1000; }
    sc_core::sc_time next_edge_slow(const sc_core::sc_time& t) const;  // edge_at_or_after's rest
    std::string m_name;
    double m_freq_mhz;
    double m_offset_ppm;
    uint64_t m_period_ps;
    uint64_t m_period_fs;
    bool m_exact;  // the period is whole picoseconds (no offset)
    sc_core::sc_time m_period;
    uint64_t m_ps_value;          // kernel time units per ps (the time resolution is at most 1 ps)
    sc_core::sc_time m_one_ps;    // 1 ps
    uint64_t m_exact_ps = 0;      // ps_time's bound: 2^52 units, in ps
    uint64_t m_exact_cycles = 0;  // the same in whole periods (m_exact)
};

}  // namespace rnic::hw
