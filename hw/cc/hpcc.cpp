// SPDX-License-Identifier: Apache-2.0
// HPCC (Li et al., SIGCOMM 2019, Algorithm 1), see hpcc.h and README.md.
#include "hw/cc/hpcc.h"

#include <algorithm>
#include <cmath>

#include "hw/roce/protocol.h"

namespace rnic::hw::cc {

hpcc_config parse_hpcc_config(config::reader r) {
    hpcc_config c;
    r.get("eta", c.eta, 0.01, 1.0);
    r.get("max_stage", c.max_stage, 0u, 1000u);
    r.get("base_rtt_us", c.base_rtt_us, 0.1, 10000.0);
    r.get("w_ai_bytes", c.w_ai_bytes, 0u, 0x10000000u);
    r.get("min_rate_mbps", c.min_rate_mbps, 1.0, 1.6e6);
    r.finish();
    return c;
}

// Registration (hw/cc/registry.cpp): parse rnic.cc.hpcc, build one per NIC.
cc_factory parse_hpcc(config::reader r) {
    const hpcc_config c = parse_hpcc_config(std::move(r));
    return [c](const cc_env& env) { return std::make_unique<hpcc>(c, env); };
}

hpcc::hpcc(const hpcc_config& cfg, const cc_env& env)
    : m_cfg(cfg)
    , m_line(env.line_rate_mbps)
    , m_t_ns(cfg.base_rtt_us * 1000.0) {
    // Mb/s x us / 8 = bytes.
    m_w_init = static_cast<uint64_t>(std::llround(double(m_line) * cfg.base_rtt_us / 8));
    m_w_ai =
        cfg.w_ai_bytes != 0
            ? cfg.w_ai_bytes
            : static_cast<uint64_t>(std::llround(double(m_line) / 2500.0 * cfg.base_rtt_us / 8));
    m_w_ai = std::max<uint64_t>(m_w_ai, 1);
    m_w_min = std::min<uint64_t>(
        m_w_init, static_cast<uint64_t>(std::llround(cfg.min_rate_mbps * cfg.base_rtt_us / 8)));
}

cc_decision hpcc::on_event(cc_qp_state& s, const cc_event& e) {
    const roce::int_stack& ack = e.telemetry;
    if ((e.kind != cc_event_kind::ACK && e.kind != cc_event_kind::NAK) || ack.nhop == 0) {
        return {};
    }
    hpcc_state& h = slice<hpcc_state>(s);
    if (h.nhop == 0) {
        // First ACK with telemetry: L = ack.L, lastUpdateSeq = snd_nxt (the authors'
        // UpdateRateHp, "first RTT"); the window stays W_init.
        std::copy(ack.hop.begin(), ack.hop.end(), h.last_hop);
        h.nhop = ack.nhop;
        h.last_update_psn = e.next_psn;
        // The window starts at W_init (the QP had none before its first feedback).
        cc_decision first;
        first.window_bytes = static_cast<uint32_t>(m_w_init);
        return first;
    }
    // Algorithm 1, NewAck: a full update (W_c moves) once per RTT, when the ACK covers a packet
    // sent after the last update (ack.seq > lastUpdateSeq, in PSNs: the newest acknowledged PSN
    // is at or past the snd_nxt recorded then); a fast reaction (W from W_c) otherwise.
    const bool update_wc = roce::psn_le(h.last_update_psn, e.psn);

    // MeasureInflight: per hop u' = min(ack.qlen, L.qlen) / (B T) + txRate / B, txRate =
    // (ack.txBytes - L.txBytes) / (ack.ts - L.ts); u = the largest, tau its time difference.
    double u = 0;
    uint64_t tau = 0;
    bool measured = false;
    for (size_t i = 0; i < ack.nhop; ++i) {
        if (i < h.nhop) {
            const roce::int_hop now = roce::int_decode_hop(ack.hop[i]);
            const roce::int_hop before = roce::int_decode_hop(h.last_hop[i]);
            const uint64_t dt = roce::int_time_delta_ns(now, before);
            if (dt != 0 && now.rate_mbps != 0) {
                // B in bytes per ns = rate_mbps / 8000; B T in bytes = rate_mbps T_ns / 8000.
                const double b_bytes_per_ns = double(now.rate_mbps) / 8000.0;
                const double tx_rate = double(roce::int_bytes_delta(now, before)) / double(dt);
                const double q = double(std::min(now.qlen_bytes(), before.qlen_bytes()));
                const double u_hop = q / (b_bytes_per_ns * m_t_ns) + tx_rate / b_bytes_per_ns;
                if (!measured || u_hop > u) {
                    u = u_hop;
                    tau = dt;
                }
                measured = true;
            }
        }
        h.last_hop[i] = ack.hop[i];
    }
    h.nhop = ack.nhop;
    cc_decision d;
    if (measured) {
        // U = (1 - tau / T) U + tau / T u, tau <= T.
        const double w = std::min(double(tau), m_t_ns) / m_t_ns;
        h.u = (1 - w) * h.u + w * u;
        // ComputeWind.
        const double wc = h.wc_bytes != 0 ? double(h.wc_bytes) : double(m_w_init);
        double win;
        uint8_t stage;
        if (h.u >= m_cfg.eta || h.inc_stage >= m_cfg.max_stage) {
            win = h.u > 0 ? wc / (h.u / m_cfg.eta) + double(m_w_ai) : double(m_w_init);
            stage = 0;
        } else {
            win = wc + double(m_w_ai);
            stage = static_cast<uint8_t>(std::min<uint32_t>(h.inc_stage + 1u, 255u));
        }
        // Bounded by the line rate and the floor, as the authors' model bounds the rate.
        const uint64_t w_bytes =
            std::clamp<uint64_t>(static_cast<uint64_t>(win), m_w_min, m_w_init);
        if (update_wc) {
            h.wc_bytes = static_cast<uint32_t>(w_bytes);
            h.inc_stage = stage;
        }
        // R = W / T (bytes / ns x 8000 = Mb/s).
        const uint64_t rate =
            static_cast<uint64_t>(std::llround(double(w_bytes) * 8000.0 / m_t_ns));
        d.rate_mbps = std::min(rate, m_line);
        d.window_bytes = static_cast<uint32_t>(w_bytes);
        const double wc_now = h.wc_bytes != 0 ? double(h.wc_bytes) : double(m_w_init);
        d.target_mbps = std::min<uint64_t>(
            m_line, static_cast<uint64_t>(std::llround(wc_now * 8000.0 / m_t_ns)));
        d.alpha = static_cast<uint32_t>(std::llround(std::min(h.u, 1e6) * 1024));
    }
    if (update_wc) {
        h.last_update_psn = e.next_psn;
    }
    return d;
}

}  // namespace rnic::hw::cc
