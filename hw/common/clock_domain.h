// SPDX-License-Identifier: Apache-2.0
// Clock domain: a period and the helpers that keep a block's timing on its clock grid.
#pragma once

#include <cstdint>
#include <string>

#include <systemc>

namespace rnic::hw {

// A block never clocks itself every cycle. It sleeps until it has work, then moves to the next
// edge of its domain and advances by whole cycles (DESIGN.md section 2). All times that leave a
// block are edges of its domain.
class clock_domain {
public:
    clock_domain(std::string name, double freq_mhz);

    const std::string& name() const { return m_name; }
    double freq_mhz() const { return m_freq_mhz; }
    const sc_core::sc_time& period() const { return m_period; }
    uint64_t period_ps() const { return m_period_ps; }

    // The first clock edge at or after t.
    sc_core::sc_time edge_at_or_after(const sc_core::sc_time& t) const;
    // n cycles as a duration (exact: whole multiples of the period's kernel value).
    sc_core::sc_time cycles(uint64_t n) const {
        return sc_core::sc_time::from_value(m_period.value() * n);
    }
    // A duration in whole picoseconds (for busy/stall time counters).
    uint64_t ps_of(const sc_core::sc_time& d) const { return d.value() / m_ps_value; }
    // Cycle number of the edge at or after t (for traces and RTL comparison).
    uint64_t cycle_of(const sc_core::sc_time& t) const;

    // From inside an SC_THREAD: move to the next edge (if not on one) then wait n more cycles.
    void wait_cycles(uint64_t n) const;
    // From inside an SC_THREAD: wait until the edge at or after t.
    void wait_until(const sc_core::sc_time& t) const;

private:
    std::string m_name;
    double m_freq_mhz;
    uint64_t m_period_ps;
    sc_core::sc_time m_period;
    uint64_t m_ps_value;  // kernel time units per ps (the time resolution is at most 1 ps)
};

}  // namespace rnic::hw
