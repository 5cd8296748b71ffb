// SPDX-License-Identifier: Apache-2.0
// DCQCN reaction point (ConnectX firmware behaviour), see dcqcn.h and README.md.
#include "hw/cc/dcqcn.h"

#include <algorithm>

namespace rnic::hw::cc {

namespace {
constexpr uint64_t PS_PER_US = 1'000'000;
constexpr uint8_t LIMITED = 1;        // a CNP arrived and the rate is not back at line rate
constexpr uint8_t CNP_IN_PERIOD = 2;  // a CNP arrived in the current alpha period
constexpr uint8_t DEC_PENDING = 4;    // a CNP came within the monitor period: decrease at its end

uint64_t rate_q(uint64_t mbps, uint8_t frac) {
    return (mbps << RATE_FRAC_BITS) | frac;
}
}  // namespace

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
    return m_cfg.rp_byte_reset != 0 && (slice<dcqcn_state>(s).flags & LIMITED) != 0;
}

void dcqcn::set_rates(cc_qp_state& s, uint64_t rc_q, uint64_t rt_q) const {
    dcqcn_state& d = slice<dcqcn_state>(s);
    s.rate_mbps = rc_q >> RATE_FRAC_BITS;
    d.rate_frac = static_cast<uint8_t>(rc_q);
    s.target_mbps = rt_q >> RATE_FRAC_BITS;
    d.target_frac = static_cast<uint8_t>(rt_q);
}

void dcqcn::update_alpha(cc_qp_state& s, uint64_t now) const {
    dcqcn_state& d = slice<dcqcn_state>(s);
    if ((d.flags & LIMITED) == 0) {
        return;
    }
    const uint64_t period = uint64_t{m_cfg.rp_dce_tcp_rtt} * PS_PER_US;
    const uint64_t g = m_cfg.rp_dce_tcp_g;
    // (1 - g/1024) in the alpha fraction: what a period with a CNP adds.
    const uint64_t gain = (1024 - g) << ALPHA_SHOWN_SHIFT;
    while (d.alpha_period_ps + period <= now) {
        uint64_t a = (uint64_t{d.alpha} * g) >> 10;
        if ((d.flags & CNP_IN_PERIOD) != 0) {
            a = std::min<uint64_t>(ALPHA_MAX, a + gain);
        }
        d.alpha = static_cast<uint32_t>(a);
        d.flags &= static_cast<uint8_t>(~CNP_IN_PERIOD);
        d.alpha_period_ps += period;
        if (d.alpha == 0 || g == 1024) {
            // Decays no further without a CNP: skip the remaining whole periods at once.
            d.alpha_period_ps += (now - d.alpha_period_ps) / period * period;
            break;
        }
    }
    s.alpha = d.alpha >> ALPHA_SHOWN_SHIFT;
}

cc_decision dcqcn::on_event(cc_qp_state& s, const cc_event& e) {
    dcqcn_state& d = slice<dcqcn_state>(s);
    const bool limited = (d.flags & LIMITED) != 0;
    switch (e.kind) {
        case cc_event_kind::CNP:
            on_cnp(s, e.now_ps);
            return decision(s);
        case cc_event_kind::TIMER:
            if (!limited) {
                return {};
            }
            update_alpha(s, e.now_ps);
            if ((d.flags & DEC_PENDING) != 0 && e.now_ps >= decrease_due(s)) {
                // The monitor period of a latched CNP ended: the decrease it owes (which also
                // restarts the rate-increase timer).
                decrease(s, e.now_ps, false);
                return decision(s);
            }
            increase(s);
            ++d.time_stage;  // after the increase: the stage that fired counts from 0
            if ((d.flags & LIMITED) != 0) {
                s.timer_at_ps = e.now_ps + uint64_t{m_cfg.rp_time_reset} * PS_PER_US;
                if ((d.flags & DEC_PENDING) != 0) {
                    s.timer_at_ps = std::min(s.timer_at_ps, decrease_due(s));
                }
            }
            return decision(s);
        case cc_event_kind::SENT: {
            if (!limited || m_cfg.rp_byte_reset == 0) {
                return {};
            }
            d.byte_count += e.bytes;
            if (d.byte_count < m_cfg.rp_byte_reset) {
                return {};
            }
            while (d.byte_count >= m_cfg.rp_byte_reset && (d.flags & LIMITED) != 0) {
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
    if ((d.flags & LIMITED) == 0) {
        // First CNP of the flow (or the first since it got back to line rate): a rate limiter
        // is allocated, alpha starts at rp_initial_alpha_value.
        first = true;
        d = dcqcn_state{};
        d.flags = LIMITED;
        d.alpha_period_ps = now;
        d.alpha = m_cfg.rp_initial_alpha_value << ALPHA_SHOWN_SHIFT;
        s.alpha = m_cfg.rp_initial_alpha_value;
        set_rates(s, m_line << RATE_FRAC_BITS, m_line << RATE_FRAC_BITS);
        if (m_cfg.rp_rate_to_set_on_first_cnp != 0) {
            // NVIDIA: "the rate that is set for the flow when a rate limiter is allocated to it
            // upon first CNP received": R_C = R_T = that rate, no decrease for this CNP.
            const uint64_t r = std::min<uint64_t>(m_line, m_cfg.rp_rate_to_set_on_first_cnp);
            set_rates(s, r << RATE_FRAC_BITS, r << RATE_FRAC_BITS);
            d.flags |= CNP_IN_PERIOD;
            d.last_decrease_ps = now;
            s.timer_at_ps = now + uint64_t{m_cfg.rp_time_reset} * PS_PER_US;
            return;
        }
    } else {
        update_alpha(s, now);
    }
    d.flags |= CNP_IN_PERIOD;
    if (!first && now < decrease_due(s)) {
        // At most one decrease per monitor period; the CNP is not lost: it is latched and the
        // decrease comes when the period ends (the timer wakes the QP then).
        if ((d.flags & DEC_PENDING) == 0) {
            d.flags |= DEC_PENDING;
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
    const uint64_t rc = rate_q(s.rate_mbps, d.rate_frac);
    uint64_t rt = rate_q(s.target_mbps, d.target_frac);
    // R_T <- R_C: always with rp_clamp_tgt_rate; after a byte-counter increase since the last
    // decrease; after a timer increase with rp_clamp_tgt_rate_ati (NVIDIA: "the target rate
    // should be updated if the transmission rate was increased due to the timer, and not only
    // due to the byte counter"). The first CNP leaves R_T at the line rate.
    if (!first && (m_cfg.rp_clamp_tgt_rate != 0 || d.byte_stage != 0 ||
                   (m_cfg.rp_clamp_tgt_rate_ati != 0 && d.time_stage != 0))) {
        rt = rc;
    }
    // R_C <- R_C - R_C alpha / 2^(rp_gd - 10) (alpha /1024 in mlx5's units: rp_gd 11 cuts by
    // alpha / 2), at most (100 - rp_min_dec_fac) % of R_C, never below rp_min_rate.
    const uint64_t cut = (rc * d.alpha) >> (m_cfg.rp_gd + ALPHA_SHOWN_SHIFT);
    const uint64_t max_cut = rc * (100 - m_cfg.rp_min_dec_fac) / 100;
    uint64_t next = rc - std::min(cut, max_cut);
    next = std::max<uint64_t>(next, uint64_t{m_cfg.rp_min_rate} << RATE_FRAC_BITS);
    set_rates(s, std::min(next, m_line << RATE_FRAC_BITS), rt);
    d.last_decrease_ps = now;
    d.time_stage = 0;
    d.byte_stage = 0;
    d.byte_count = 0;
    d.flags &= static_cast<uint8_t>(~DEC_PENDING);
    s.timer_at_ps = now + uint64_t{m_cfg.rp_time_reset} * PS_PER_US;
}

void dcqcn::increase(cc_qp_state& s) {
    dcqcn_state& d = slice<dcqcn_state>(s);
    const uint32_t f = m_cfg.rp_threshold;
    const uint64_t line = m_line << RATE_FRAC_BITS;
    // The stages as they were before this event counted it (ConnectX: rpg_threshold is "the number
    // of times rpByteStage or rpTimeStage can count before the RP rate control state machine
    // advances states"; the DCQCN ns-3 models increment the stage after the increase): F events
    // of fast recovery after a decrease, then additive, hyper once both stages passed F.
    const uint32_t t = d.time_stage;
    const uint32_t b = d.byte_stage;
    uint64_t rt = rate_q(s.target_mbps, d.target_frac);
    if (std::max(t, b) < f) {
        // Fast recovery: halfway back to the target.
    } else if (std::min(t, b) > f) {
        rt += uint64_t{m_cfg.rp_hai_rate} << RATE_FRAC_BITS;  // hyper increase
    } else {
        rt += uint64_t{m_cfg.rp_ai_rate} << RATE_FRAC_BITS;  // additive increase
    }
    rt = std::min(rt, line);
    // R_C <- (R_C + R_T) / 2, rounded up so that R_C reaches R_T; within 1 Mb/s of the line rate
    // (what the pacer, in whole Mb/s, cannot tell from it) it is the line rate.
    uint64_t rc = std::min((rate_q(s.rate_mbps, d.rate_frac) + rt + 1) / 2, line);
    if (line - rc < (uint64_t{1} << RATE_FRAC_BITS)) {
        rc = line;
    }
    set_rates(s, rc, rt);
    if (rc >= line && (d.flags & DEC_PENDING) == 0) {
        // Back at line rate: the QP leaves the rate limiter and its timers stop (unless a
        // latched CNP still owes its decrease).
        d.flags &= static_cast<uint8_t>(~LIMITED);
        s.timer_at_ps = 0;
    }
    // The rate-increase timer keeps its own period (restarted by decreases and by its expiry).
}

cc_decision dcqcn::decision(const cc_qp_state& s) const {
    cc_decision out;
    const bool limited = (slice<dcqcn_state>(s).flags & LIMITED) != 0;
    out.rate_mbps = limited ? s.rate_mbps : 0;
    out.target_mbps = limited ? s.target_mbps : 0;
    out.alpha = s.alpha;
    out.timer_at_ps = s.timer_at_ps;
    return out;
}

}  // namespace rnic::hw::cc
