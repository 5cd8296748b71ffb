// SPDX-License-Identifier: Apache-2.0
// Clock domain helpers.
#include "hw/common/clock_domain.h"

#include <cmath>
#include <stdexcept>

namespace rnic::hw {

clock_domain::clock_domain(std::string name, double freq_mhz, double offset_ppm)
    : m_name(std::move(name))
    , m_freq_mhz(freq_mhz)
    , m_offset_ppm(offset_ppm)
    , m_period_ps(static_cast<uint64_t>(std::llround(1e6 / freq_mhz)))
    , m_period_fs(m_period_ps * 1000)
    , m_exact(true)
    , m_period(sc_core::sc_time::from_value(0))
    , m_ps_value(0) {
    if (m_period_ps == 0) {
        throw std::invalid_argument("clock " + m_name + ": frequency too high");
    }
    if (offset_ppm != 0) {
        if (!(offset_ppm > -1e5 && offset_ppm < 1e5)) {
            throw std::invalid_argument("clock " + m_name + ": offset out of range");
        }
        // A clock offset_ppm fast runs at f x (1 + ppm/1e6): its period is the nominal one
        // divided by that.
        m_period_fs = static_cast<uint64_t>(
            std::llround(static_cast<double>(m_period_ps) * 1000.0 / (1.0 + offset_ppm * 1e-6)));
        m_exact = m_period_fs % 1000 == 0;
        m_period_ps = m_period_fs / 1000;
        if (m_period_ps == 0) {
            throw std::invalid_argument("clock " + m_name + ": frequency too high");
        }
    }
    m_period = sc_core::sc_time(static_cast<double>(m_period_ps), sc_core::SC_PS);
    // Called on every activation of every block: keep the unit conversion out of it (an
    // sc_time built from a double and a unit costs a look-up and a rounding each time).
    m_ps_value = sc_core::sc_time(1, sc_core::SC_PS).value();
    m_one_ps = sc_core::sc_time::from_value(m_ps_value);
    m_exact_ps = (uint64_t{1} << 52) / m_ps_value;
    m_exact_cycles = m_exact_ps / m_period_ps;
}

sc_core::sc_time clock_domain::next_edge_slow(const sc_core::sc_time& t) const {
    const uint64_t ps = t.value() / m_ps_value;
    if (m_exact) {
        const uint64_t edge = (ps + m_period_ps - 1) / m_period_ps * m_period_ps;
        return ps_time(edge);
    }
    return time_of_cycle(cycle_of(t));
}

uint64_t clock_domain::cycle_of(const sc_core::sc_time& t) const {
    const uint64_t ps = t.value() / m_ps_value;
    if (m_exact) {
        return (ps + m_period_ps - 1) / m_period_ps;
    }
    // The smallest n with floor(n x period_fs / 1000) >= ps, i.e. n x period_fs >= ps x 1000.
    return (ps * 1000 + m_period_fs - 1) / m_period_fs;
}

uint64_t clock_domain::cycle_after(const sc_core::sc_time& t) const {
    const uint64_t ps = t.value() / m_ps_value;
    if (m_exact) {
        return ps / m_period_ps + 1;
    }
    return ((ps + 1) * 1000 + m_period_fs - 1) / m_period_fs;
}

void clock_domain::wait_cycles(uint64_t n) const {
    const sc_core::sc_time now = sim_now();
    const sc_core::sc_time target =
        m_exact ? edge_at_or_after(now) + cycles(n) : time_of_cycle(cycle_of(now) + n);
    if (target > now) {
        sc_core::wait(target - now);
    }
}

void clock_domain::wait_until(const sc_core::sc_time& t) const {
    const sc_core::sc_time now = sim_now();
    const sc_core::sc_time target = edge_at_or_after(t > now ? t : now);
    if (target > now) {
        sc_core::wait(target - now);
    }
}

}  // namespace rnic::hw
