// SPDX-License-Identifier: Apache-2.0
// Reaction-point pacer, see pacer.h.
#include "hw/tx_engine/pacer.h"

#include <algorithm>

#include "hw/roce/roce.h"
#include "hw/send_path/send_path_packets.h"

namespace rnic::hw {

pacer::pacer(const std::string& name, const clock_domain& clk, uint32_t max_qps, sim_context& ctx)
    : m_clk(clk)
    , m_rate(max_qps, 0)
    , m_before(max_qps, 0)
    , m_set_at(max_qps, 0)
    , m_last(max_qps)
    , m_handed(max_qps, 0) {
    ctx.stats.add(name, "paced_packets", m_stats.paced_packets, "count",
                  "packets held by their QP's rate limiter");
    ctx.stats.add(name, "pacing_wait_ps", m_stats.wait_ps, "ps",
                  "time packets waited for their rate limiter slot");
}

void pacer::set_rate(uint32_t qpn, uint64_t rate_mbps) {
    if (qpn >= m_rate.size() || m_rate[qpn] == rate_mbps) {
        return;
    }
    if (!sc_core::sc_is_running()) {
        m_rate[qpn] = rate_mbps;  // before the simulation: at once
        m_set_at[qpn] = 0;
        return;
    }
    const uint64_t at = sc_core::sc_time_stamp().value() + 1;
    if (m_set_at[qpn] != at) {
        m_before[qpn] = m_rate[qpn];  // the first change at this instant: the rate until now
        m_set_at[qpn] = at;
    }
    m_rate[qpn] = rate_mbps;
    // Waiters re-book once the rate is in effect, one time unit from now. Notified whether or
    // not one waits now: a packet that starts to wait later at this instant (its booking made
    // at the old rate) must be re-booked too, in whichever order the kernel runs the two.
    m_rate_changed.notify(sc_core::sc_time::from_value(1));
}

void pacer::reset(uint32_t qpn) {
    if (qpn < m_rate.size()) {
        m_rate[qpn] = 0;
        m_set_at[qpn] = 0;  // at once: the QP is gone or starts again
        m_last[qpn] = booking{};
        m_handed[qpn] = 0;
        if (m_waiting != 0) {
            m_rate_changed.notify(sc_core::SC_ZERO_TIME);
        }
    }
}

uint64_t pacer::reserve(uint32_t qpn, uint64_t now_ps, uint32_t wire_bytes) {
    const uint64_t rate = rate_in_effect(qpn);
    if (rate == 0) {
        return now_ps;
    }
    // bytes * 8 bit / (rate Mb/s) = bytes * 8e6 / rate ps.
    const booking& last = m_last[qpn];
    const uint64_t free_ps = last.start_ps + last.wire * 8'000'000 / rate;
    const uint64_t start = std::max(now_ps, free_ps);
    m_last[qpn] = booking{start, wire_bytes};
    return start;
}

namespace {
uint64_t now_in_ps() {
    return static_cast<uint64_t>(sc_core::sc_time_stamp().value() /
                                 sc_core::sc_time(1, sc_core::SC_PS).value());
}
}  // namespace

uint64_t pacer::try_pace(const tx_descriptor& d, uint32_t index, uint64_t queued_ps,
                         uint64_t now_ps, uint64_t& held_cycles) {
    held_cycles = 0;
    if (d.kind == tx_kind::ACK) {
        return 0;
    }
    const uint32_t qpn = d.src_qpn;
    if (!limited(qpn)) {
        pass(d, index);
        return 0;
    }
    const packet_plan plan = plan_packet(d, index);
    const auto wire = static_cast<uint32_t>(roce::wire_bytes(plan.frame_bytes));
    const booking& last = m_last[qpn];
    const uint64_t free_ps = last.start_ps + last.wire * 8'000'000 / rate_in_effect(qpn);
    if (free_ps > now_ps) {
        return free_ps;  // refused: counts nothing (when the scheduler looks is not the packet's)
    }
    // Counted from the packet's own times, not from when the scheduler happened to look
    // (README, "Rate limiter counters"): ready once its job was queued and its QP's previous
    // packet was handed on; held when its slot started later.
    const uint64_t ready = std::max(queued_ps, m_handed[qpn]);
    if (free_ps > ready) {
        ++m_stats.paced_packets;
        m_stats.wait_ps += free_ps - ready;
        const uint64_t period = m_clk.period_ps();
        const auto first_edge = static_cast<uint64_t>(
            m_clk.edge_at_or_after(sc_core::sc_time(static_cast<double>(ready), sc_core::SC_PS))
                .value() /
            sc_core::sc_time(1, sc_core::SC_PS).value());
        held_cycles = free_ps > first_edge ? (free_ps - first_edge + period - 1) / period : 0;
    }
    // Due: booked at its slot's start when that was within the last clock period (the
    // scheduler woke on the edge after it), else now.
    const uint64_t start = now_ps - free_ps < m_clk.period_ps() ? free_ps : now_ps;
    m_last[qpn] = booking{start, wire};
    m_handed[qpn] = now_ps;
    if (m_listener) {
        m_listener(qpn, plan.psn, wire);
    }
    return 0;
}

void pacer::pass(const tx_descriptor& d, uint32_t index) {
    if (d.kind == tx_kind::ACK) {
        return;
    }
    const uint32_t qpn = d.src_qpn;
    const bool lim = limited(qpn);
    if (!lim && !m_listener) {
        return;
    }
    const packet_plan plan = plan_packet(d, index);
    const auto wire = static_cast<uint32_t>(roce::wire_bytes(plan.frame_bytes));
    if (lim) {
        m_last[qpn] = booking{now_in_ps(), wire};
        m_handed[qpn] = now_in_ps();
    }
    if (m_listener) {
        m_listener(qpn, plan.psn, wire);
    }
}

void pacer::pace(const tx_descriptor& d, uint32_t index) {
    if (d.kind == tx_kind::ACK) {
        return;  // ACKs / NAKs are not rate limited
    }
    const uint32_t qpn = d.src_qpn;
    const bool limited = this->limited(qpn);
    if (!limited && !m_listener) {
        return;
    }
    const packet_plan plan = plan_packet(d, index);
    const auto wire = static_cast<uint32_t>(roce::wire_bytes(plan.frame_bytes));
    if (limited) {
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        const auto ps = [](const sc_core::sc_time& t) {
            return static_cast<uint64_t>(t.value() / sc_core::sc_time(1, sc_core::SC_PS).value());
        };
        uint64_t now_ps = ps(now);
        const booking before = m_last[qpn];
        uint64_t start = reserve(qpn, now_ps, wire);
        if (start > now_ps) {
            ++m_stats.paced_packets;
        }
        while (start > now_ps) {
            // Sleep until the slot, or until the QP's rate changes: then book again from the
            // previous packet at the new rate (a raised rate moves the slot earlier).
            ++m_waiting;
            sc_core::wait(sc_core::sc_time(static_cast<double>(start - now_ps), sc_core::SC_PS),
                          m_rate_changed);
            --m_waiting;
            now_ps = ps(sc_core::sc_time_stamp());
            if (now_ps >= start) {
                m_clk.wait_until(sc_core::sc_time(static_cast<double>(start), sc_core::SC_PS));
                break;
            }
            m_last[qpn] = before;
            start = reserve(qpn, now_ps, wire);
            if (start <= now_ps) {
                m_clk.wait_until(sc_core::sc_time_stamp());  // on this clock's edge, as a slot
            }
        }
        m_stats.wait_ps += ps(sc_core::sc_time_stamp() - now);
        m_handed[qpn] = ps(sc_core::sc_time_stamp());
    }
    if (m_listener) {
        m_listener(qpn, plan.psn, wire);
    }
}

}  // namespace rnic::hw
