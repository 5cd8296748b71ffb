// SPDX-License-Identifier: Apache-2.0
// TIMELY (Mittal et al., SIGCOMM 2015), see timely.h.
#include "hw/cc/timely.h"

#include <algorithm>
#include <cmath>

namespace rnic::hw::cc {

timely_config parse_timely_config(config::reader r) {
    timely_config c;
    r.get("ewma_alpha", c.ewma_alpha, 0.0, 1.0);
    r.get("beta", c.beta, 0.0, 1.0);
    r.get("add_step_mbps", c.add_step_mbps, 0.001, 1.6e6);
    r.get("t_low_us", c.t_low_us, 0.0, 1e6);
    r.get("t_high_us", c.t_high_us, 0.0, 1e6);
    r.get("min_rtt_us", c.min_rtt_us, 0.001, 1e6);
    r.get("hai_threshold", c.hai_threshold, 1u, 1000u);
    r.get("min_rate_mbps", c.min_rate_mbps, 1.0, 1.6e6);
    r.get("segment_bytes", c.segment_bytes, 0u, 0x80000000u);
    if (c.segment_bytes != 0 && c.segment_bytes < 256) {
        r.error("segment_bytes",
                "must be 0 (one RTT sample per message) or at least 256 (one packet)");
    }
    r.get("low_rate_sample_us", c.low_rate_sample_us, 0.0, 1e6);
    r.get("patched", c.patched);
    r.get("rtt_ref_us", c.rtt_ref_us, 0.001, 1e6);
    if (c.t_high_us <= c.t_low_us) {
        r.error("t_high_us", "must be greater than t_low_us");
    }
    if (c.patched && (c.rtt_ref_us <= c.t_low_us || c.rtt_ref_us >= c.t_high_us)) {
        r.error("rtt_ref_us", "must be between t_low_us and t_high_us");
    }
    r.finish();
    return c;
}

// Registration (hw/cc/registry.cpp): parse rnic.cc.timely, build one per NIC.
cc_factory parse_timely(config::reader r) {
    const timely_config c = parse_timely_config(std::move(r));
    return [c](const cc_env& env) { return std::make_unique<timely>(c, env); };
}

timely::timely(const timely_config& cfg, const cc_env& env)
    : m_cfg(cfg)
    , m_line(static_cast<double>(env.line_rate_mbps)) {}

uint32_t timely::ack_segment_bytes(const cc_qp_state& s) const {
    const timely_state& t = slice<timely_state>(s);
    if (m_cfg.segment_bytes == 0 || m_cfg.low_rate_sample_us <= 0 || t.rate_mbps <= 0) {
        return m_cfg.segment_bytes;  // off, or at line rate (no sample yet): the full segment
    }
    // Mb/s x us / 8 = bytes; the transmit engine rounds down to whole packets (at least one).
    const double bytes = t.rate_mbps * m_cfg.low_rate_sample_us / 8;
    return bytes >= m_cfg.segment_bytes ? m_cfg.segment_bytes
                                        : std::max<uint32_t>(1, static_cast<uint32_t>(bytes));
}

cc_decision timely::on_event(cc_qp_state& s, const cc_event& e) {
    if ((e.kind != cc_event_kind::ACK && e.kind != cc_event_kind::NAK) || e.rtt_ps == 0) {
        return {};
    }
    timely_state& t = slice<timely_state>(s);
    double rate = t.rate_mbps > 0 ? t.rate_mbps : m_line;
    const double rtt = static_cast<double>(e.rtt_ps);
    // Algorithm 1: new_rtt_diff = new_rtt - prev_rtt; rtt_diff = (1 - a) rtt_diff + a new.
    const double new_diff = t.have_prev ? rtt - static_cast<double>(t.prev_rtt_ps) : 0.0;
    t.prev_rtt_ps = e.rtt_ps;
    t.have_prev = 1;
    t.rtt_diff_ps = (1 - m_cfg.ewma_alpha) * t.rtt_diff_ps + m_cfg.ewma_alpha * new_diff;
    const double gradient = t.rtt_diff_ps / (m_cfg.min_rtt_us * 1e6);
    const double t_low = m_cfg.t_low_us * 1e6;
    const double t_high = m_cfg.t_high_us * 1e6;
    if (rtt < t_low) {
        rate += m_cfg.add_step_mbps;
        t.negative_run = 0;
    } else if (rtt > t_high) {
        rate *= 1 - m_cfg.beta * (1 - t_high / rtt);
        t.negative_run = 0;
    } else if (m_cfg.patched) {
        // CoNEXT'16 patch: the gradient only weighs additive increase against a decrease that
        // grows with the RTT's excess over the reference.
        const double w = std::clamp(2 * gradient + 0.5, 0.0, 1.0);
        const double ref = m_cfg.rtt_ref_us * 1e6;
        rate = m_cfg.add_step_mbps * (1 - w) + rate * (1 - m_cfg.beta * w * (rtt - ref) / ref);
        t.negative_run = 0;
    } else if (gradient <= 0) {
        ++t.negative_run;
        const double n = t.negative_run >= m_cfg.hai_threshold ? m_cfg.hai_threshold : 1;
        rate += n * m_cfg.add_step_mbps;
    } else {
        t.negative_run = 0;
        rate *= 1 - m_cfg.beta * gradient;
    }
    rate = std::clamp(rate, m_cfg.min_rate_mbps, m_line);
    t.rate_mbps = rate;
    cc_decision out;
    const uint64_t shown = rate >= m_line ? 0 : static_cast<uint64_t>(std::llround(rate));
    out.rate_mbps = shown;
    out.target_mbps = shown;
    return out;
}

}  // namespace rnic::hw::cc
