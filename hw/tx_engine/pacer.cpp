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
    , m_next_ps(max_qps, 0) {
    ctx.stats.add(name, "paced_packets", m_stats.paced_packets, "count",
                  "packets held by their QP's rate limiter");
    ctx.stats.add(name, "pacing_wait_ps", m_stats.wait_ps, "ps",
                  "time packets waited for their rate limiter slot");
}

void pacer::set_rate(uint32_t qpn, uint64_t rate_mbps) {
    if (qpn < m_rate.size()) {
        m_rate[qpn] = rate_mbps;
    }
}

void pacer::reset(uint32_t qpn) {
    if (qpn < m_rate.size()) {
        m_rate[qpn] = 0;
        m_next_ps[qpn] = 0;
    }
}

uint64_t pacer::reserve(uint32_t qpn, uint64_t now_ps, uint32_t wire_bytes) {
    if (qpn >= m_rate.size() || m_rate[qpn] == 0) {
        return now_ps;
    }
    const uint64_t start = std::max(now_ps, m_next_ps[qpn]);
    // bytes * 8 bit / (rate Mb/s) = bytes * 8e6 / rate ps.
    m_next_ps[qpn] = start + uint64_t{wire_bytes} * 8'000'000 / m_rate[qpn];
    return start;
}

void pacer::pace(const tx_descriptor& d, uint32_t index) {
    if (d.kind == tx_kind::ACK) {
        return;  // ACKs / NAKs are not rate limited
    }
    const uint32_t qpn = d.src_qpn;
    const bool limited = qpn < m_rate.size() && m_rate[qpn] != 0;
    if (!limited && !m_listener) {
        return;
    }
    const packet_plan plan = plan_packet(d, index);
    const auto wire = static_cast<uint32_t>(roce::wire_bytes(plan.frame_bytes));
    if (limited) {
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        const uint64_t now_ps =
            static_cast<uint64_t>(now.value() / sc_core::sc_time(1, sc_core::SC_PS).value());
        const uint64_t start = reserve(qpn, now_ps, wire);
        if (start > now_ps) {
            ++m_stats.paced_packets;
            m_clk.wait_until(sc_core::sc_time(static_cast<double>(start), sc_core::SC_PS));
            m_stats.wait_ps += static_cast<uint64_t>((sc_core::sc_time_stamp() - now).value() /
                                                     sc_core::sc_time(1, sc_core::SC_PS).value());
        }
    }
    if (m_listener) {
        m_listener(qpn, plan.psn, wire);
    }
}

}  // namespace rnic::hw
