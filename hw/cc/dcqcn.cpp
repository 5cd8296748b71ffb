// SPDX-License-Identifier: Apache-2.0
// DCQCN reaction point (ConnectX firmware behaviour), see dcqcn.h and README.md.
#include "hw/cc/dcqcn.h"

#include <algorithm>

namespace rnic::hw::cc {

namespace {
constexpr uint64_t PS_PER_US = 1'000'000;
}

dcqcn_config parse_dcqcn_config(config::reader r) {
    dcqcn_config c;
    constexpr uint32_t MAX_MBPS = 1'600'000;  // the fastest link a topology may have
    r.get("rp_time_reset", c.rp_time_reset, 1u, 131071u);
    r.get("rp_byte_reset", c.rp_byte_reset, 0u, 0x7FFFFFFFu);
    r.get("rp_threshold", c.rp_threshold, 1u, 31u);
    r.get("rp_ai_rate", c.rp_ai_rate, 1u, MAX_MBPS);
    r.get("rp_hai_rate", c.rp_hai_rate, 1u, MAX_MBPS);
    r.get("rp_gd", c.rp_gd, 0u, 15u);
    r.get("rp_min_dec_fac", c.rp_min_dec_fac, 0u, 100u);
    r.get("rp_min_rate", c.rp_min_rate, 1u, MAX_MBPS);
    r.get("rp_rate_to_set_on_first_cnp", c.rp_rate_to_set_on_first_cnp, 0u, MAX_MBPS);
    r.get("rp_dce_tcp_g", c.rp_dce_tcp_g, 0u, 1023u);
    r.get("rp_dce_tcp_rtt", c.rp_dce_tcp_rtt, 1u, 131071u);
    r.get("rp_rate_reduce_monitor_period", c.rp_rate_reduce_monitor_period, 0u, 0xFFFFFFFFu);
    r.get("rp_initial_alpha_value", c.rp_initial_alpha_value, 0u, 1023u);
    r.get("rp_clamp_tgt_rate", c.rp_clamp_tgt_rate, 0u, 1u);
    r.get("rp_clamp_tgt_rate_ati", c.rp_clamp_tgt_rate_ati, 0u, 1u);
    r.get("np_min_time_between_cnps", c.np_min_time_between_cnps, 0u, 4095u);
    r.get("np_cnp_dscp", c.np_cnp_dscp, 0u, 63u);
    r.get("np_cnp_prio", c.np_cnp_prio, -1, 7);
    r.finish();
    return c;
}

// Registration (hw/cc/registry.cpp): parse rnic.cc.dcqcn, build one per NIC.
cc_factory parse_dcqcn(config::reader r) {
    const dcqcn_config c = parse_dcqcn_config(std::move(r));
    return [c](const cc_env& env) { return std::make_unique<dcqcn>(c, env); };
}

dcqcn::dcqcn(const dcqcn_config& cfg, const cc_env& env)
    : m_cfg(cfg)
    , m_line(env.line_rate_mbps) {
    m_np.min_time_between_cnps_ps = uint64_t{cfg.np_min_time_between_cnps} * PS_PER_US;
    m_np.cnp_dscp = static_cast<uint8_t>(cfg.np_cnp_dscp);
    m_np.cnp_prio = static_cast<int8_t>(cfg.np_cnp_prio);
}

bool dcqcn::wants_sent(const cc_qp_state& s) const {
    return m_cfg.rp_byte_reset != 0 && slice<dcqcn_state>(s).limited;
}

void dcqcn::update_alpha(cc_qp_state& s, uint64_t now) const {
    dcqcn_state& d = slice<dcqcn_state>(s);
    if (!d.limited) {
        return;
    }
    const uint64_t period = uint64_t{m_cfg.rp_dce_tcp_rtt} * PS_PER_US;
    const uint32_t g = m_cfg.rp_dce_tcp_g;
    while (d.alpha_period_ps + period <= now) {
        if (d.cnp_in_period) {
            s.alpha = std::min<uint32_t>(1023, ((s.alpha * g) >> 10) + (1024 - g));
        } else {
            s.alpha = (s.alpha * g) >> 10;
        }
        d.cnp_in_period = 0;
        d.alpha_period_ps += period;
        if (s.alpha == 0 || g == 1024) {
            // Decays no further without a CNP: skip the remaining whole periods at once.
            d.alpha_period_ps += (now - d.alpha_period_ps) / period * period;
            break;
        }
    }
}

cc_decision dcqcn::on_event(cc_qp_state& s, const cc_event& e) {
    dcqcn_state& d = slice<dcqcn_state>(s);
    switch (e.kind) {
        case cc_event_kind::CNP:
            on_cnp(s, e.now_ps);
            return decision(s);
        case cc_event_kind::TIMER:
            if (!d.limited) {
                return {};
            }
            update_alpha(s, e.now_ps);
            if (d.dec_pending && e.now_ps >= decrease_due(s)) {
                // The monitor period of a latched CNP ended: the decrease it owes (which also
                // restarts the rate-increase timer).
                decrease(s, e.now_ps, false);
                return decision(s);
            }
            d.timer_inc = 1;
            increase(s);
            ++d.time_stage;  // after the increase: the stage that fired counts from 0
            if (d.limited) {
                s.timer_at_ps = e.now_ps + uint64_t{m_cfg.rp_time_reset} * PS_PER_US;
                if (d.dec_pending) {
                    s.timer_at_ps = std::min(s.timer_at_ps, decrease_due(s));
                }
            }
            return decision(s);
        case cc_event_kind::SENT: {
            if (!d.limited || m_cfg.rp_byte_reset == 0) {
                return {};
            }
            d.byte_count += e.bytes;
            if (d.byte_count < m_cfg.rp_byte_reset) {
                return {};
            }
            while (d.byte_count >= m_cfg.rp_byte_reset && d.limited) {
                d.byte_count -= m_cfg.rp_byte_reset;
                increase(s);
                ++d.byte_stage;
            }
            update_alpha(s, e.now_ps);
            return decision(s);
        }
        default:
            return {};  // ACK / NAK: DCQCN reacts to CNPs only
    }
}

void dcqcn::on_cnp(cc_qp_state& s, uint64_t now) {
    dcqcn_state& d = slice<dcqcn_state>(s);
    bool first = false;
    if (!d.limited) {
        // First CNP of the flow (or the first since it got back to line rate).
        first = true;
        d = dcqcn_state{};
        d.limited = 1;
        d.alpha_period_ps = now;
        s.alpha = m_cfg.rp_initial_alpha_value;
        s.rate_mbps = m_line;
        s.target_mbps = m_line;
        if (m_cfg.rp_rate_to_set_on_first_cnp != 0) {
            s.rate_mbps = s.target_mbps =
                std::min<uint64_t>(m_line, m_cfg.rp_rate_to_set_on_first_cnp);
            d.cnp_in_period = 1;
            d.last_decrease_ps = now;
            s.timer_at_ps = now + uint64_t{m_cfg.rp_time_reset} * PS_PER_US;
            return;
        }
    } else {
        update_alpha(s, now);
    }
    d.cnp_in_period = 1;
    if (!first && now < decrease_due(s)) {
        // At most one decrease per monitor period; the CNP is not lost: it is latched and the
        // decrease comes when the period ends (the timer wakes the QP then).
        if (!d.dec_pending) {
            d.dec_pending = 1;
            s.timer_at_ps = std::min(s.timer_at_ps, decrease_due(s));
        }
        return;
    }
    decrease(s, now, first);
}

uint64_t dcqcn::decrease_due(const cc_qp_state& s) const {
    return slice<dcqcn_state>(s).last_decrease_ps +
           uint64_t{m_cfg.rp_rate_reduce_monitor_period} * PS_PER_US;
}

void dcqcn::decrease(cc_qp_state& s, uint64_t now, bool first) {
    dcqcn_state& d = slice<dcqcn_state>(s);
    // Rate decrease: R_T <- R_C (when clamping says so), R_C <- R_C (1 - alpha / 2^gd), kept
    // at or above rp_min_dec_fac % of R_C and rp_min_rate.
    if (first || m_cfg.rp_clamp_tgt_rate != 0 ||
        (m_cfg.rp_clamp_tgt_rate_ati != 0 && d.timer_inc)) {
        s.target_mbps = s.rate_mbps;
    }
    const uint64_t rc = s.rate_mbps;
    uint64_t next = rc - ((rc * s.alpha) >> m_cfg.rp_gd);
    next = std::max(next, rc * m_cfg.rp_min_dec_fac / 100);
    next = std::max<uint64_t>(next, m_cfg.rp_min_rate);
    s.rate_mbps = std::min(next, m_line);
    d.last_decrease_ps = now;
    d.time_stage = 0;
    d.byte_stage = 0;
    d.byte_count = 0;
    d.timer_inc = 0;
    d.dec_pending = 0;
    s.timer_at_ps = now + uint64_t{m_cfg.rp_time_reset} * PS_PER_US;
}

void dcqcn::increase(cc_qp_state& s) {
    dcqcn_state& d = slice<dcqcn_state>(s);
    const uint32_t f = m_cfg.rp_threshold;
    // The stages as they were before this event counted it (ConnectX: rpg_threshold is "the number
    // of times rpByteStage or rpTimeStage can count before the RP rate control state machine
    // advances states"; the DCQCN ns-3 models increment the stage after the increase): F events
    // of fast recovery after a decrease, then additive, hyper once both stages passed F.
    const uint32_t t = d.time_stage;
    const uint32_t b = d.byte_stage;
    if (std::max(t, b) < f) {
        // Fast recovery: halfway back to the target.
    } else if (std::min(t, b) > f) {
        s.target_mbps += m_cfg.rp_hai_rate;  // hyper increase
    } else {
        s.target_mbps += m_cfg.rp_ai_rate;  // additive increase
    }
    s.target_mbps = std::min(s.target_mbps, m_line);
    // R_C <- (R_C + R_T) / 2, rounded up so that R_C reaches R_T.
    s.rate_mbps = std::min((s.rate_mbps + s.target_mbps + 1) / 2, m_line);
    if (s.rate_mbps >= m_line && !d.dec_pending) {
        // Back at line rate: the QP leaves the rate limiter and its timers stop (unless a
        // latched CNP still owes its decrease).
        d.limited = 0;
        s.timer_at_ps = 0;
    }
    // The rate-increase timer keeps its own period (restarted by decreases and by its expiry).
}

cc_decision dcqcn::decision(const cc_qp_state& s) const {
    cc_decision out;
    const bool limited = slice<dcqcn_state>(s).limited != 0;
    out.rate_mbps = limited ? s.rate_mbps : 0;
    out.target_mbps = limited ? s.target_mbps : 0;
    out.alpha = s.alpha;
    out.timer_at_ps = s.timer_at_ps;
    return out;
}

}  // namespace rnic::hw::cc
