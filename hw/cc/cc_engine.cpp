// SPDX-License-Identifier: Apache-2.0
// Congestion-control engine (reaction point), see cc_engine.h.
#include "hw/cc/cc_engine.h"

#include "hw/common/timestep_arbiter.h"
#include "hw/roce/protocol.h"

namespace rnic::hw::cc {

using roce::psn_le;

cc_engine::cc_engine(sc_core::sc_module_name name, std::unique_ptr<cc_algorithm> algo,
                     const clock_domain& clk, context_store& contexts, pacer& pacer,
                     uint64_t line_rate_mbps, sim_context& ctx)
    : sc_module(name)
    , m_algo(std::move(algo))
    , m_clk(clk)
    , m_contexts(contexts)
    , m_pacer(pacer)
    , m_line(line_rate_mbps)
    , m_stamps(m_algo->wants_acks() ? contexts.max_qps() : 0) {
    SC_HAS_PROCESS(cc_engine);
    SC_THREAD(engine_thread);
    const std::string b = this->name();
    auto& s = ctx.stats;
    s.add(b, "events", m_stats.events, "count", "CNP, ACK, NAK and timer events processed");
    s.add(b, "timer_events", m_stats.timer_events, "count", "per-QP timer expiries");
    s.add(b, "rate_changes", m_stats.rate_changes, "count", "decisions that changed a QP's rate");
    s.add(b, "sent_events", m_stats.sent_events, "count", "packet-sent events (byte counting)");
    if (m_algo->wants_acks()) {
        s.add(b, "rtt_samples", m_stats.rtt_samples, "count",
              "ACK/NAK events with an RTT (newest stamped packet the ACK covers -> ACK)");
    }
    if (m_algo->wants_telemetry()) {
        m_telemetry.resize(contexts.max_qps());
        m_snd_nxt.resize(contexts.max_qps());
        s.add(b, "int_acks", m_stats.int_acks, "count",
              "ACKs with the switches' INT stack given to the algorithm");
        s.add(b, "int_frames", m_stats.int_frames, "frames",
              "frames sent with an INT stack (requests, and ACKs reflecting one)");
        s.add(b, "int_bytes", m_stats.int_bytes, "bytes",
              "INT stack bytes of those frames (44 each: the NIC's telemetry overhead)");
    }
    m_pacer.set_listener(
        [this](uint32_t qpn, uint32_t psn, uint32_t bytes) { on_sent(qpn, psn, bytes); });
}

uint64_t cc_engine::now_ps() {
    static const sc_core::sc_time::value_type ps = sc_core::sc_time(1, sc_core::SC_PS).value();
    return sc_core::sc_time_stamp().value() / ps;
}

void cc_engine::on_sent(uint32_t qpn, uint32_t psn, uint32_t wire_bytes) {
    qp_context* qp = m_contexts.qp(qpn);
    if (qp == nullptr) {
        return;
    }
    if (!m_stamps.empty()) {
        auto& st = m_stamps[qpn];
        if (st.empty()) {
            m_peer_qpn[(uint64_t{qp->dest_ip} << 24) | qp->dest_qpn] = qpn;
        }
        st.emplace_back(psn, now_ps());
        if (st.size() > 4096) {
            st.pop_front();  // stamps of packets never acknowledged (a flushed QP)
        }
    }
    if (qpn < m_snd_nxt.size()) {
        snd_nxt_state& n = m_snd_nxt[qpn];
        const uint64_t t = now_ps();
        if (n.at_ps != t) {
            n.before = n.now;
            n.at_ps = t;
        }
        n.now = (psn + 1) & roce::PSN_MASK;  // snd_nxt (a resend moves it back)
    }
    if (!m_algo->wants_sent(qp->cc)) {
        return;
    }
    // Byte counting runs in the rate limiter beside the pacer: no QPC access per packet.
    ++m_stats.sent_events;
    cc_event ev;
    ev.kind = cc_event_kind::SENT;
    ev.now_ps = now_ps();
    ev.bytes = wire_bytes;
    const uint64_t old_timer = qp->cc.timer_at_ps;
    apply(qpn, qp->cc, old_timer, m_algo->on_event(qp->cc, ev), ev.now_ps, false);
}

void cc_engine::on_wire(const std::vector<uint8_t>& f) {
    // Untagged IPv4 / UDP 4791 / BTH: Ethernet 14, IPv4 20 (IHL 5, as the send path builds
    // it), UDP 8, then the BTH's opcode (42), destination QP (47..49) and PSN (51..53).
    constexpr size_t BTH = 42;
    if (m_stamps.empty() || f.size() < BTH + 12 || f[12] != 0x08 || f[13] != 0x00 ||
        f[14] != 0x45 || f[23] != 17 || f[36] != 0x12 || f[37] != 0xB7) {
        return;
    }
    if (f[BTH] > 0x0C) {
        return;  // not a request (READ responses, ACKs go the other way of the same QP pair)
    }
    const uint32_t ip =
        (uint32_t{f[30]} << 24) | (uint32_t{f[31]} << 16) | (uint32_t{f[32]} << 8) | f[33];
    const uint32_t dqpn = (uint32_t{f[BTH + 5]} << 16) | (uint32_t{f[BTH + 6]} << 8) | f[BTH + 7];
    const uint32_t psn = (uint32_t{f[BTH + 9]} << 16) | (uint32_t{f[BTH + 10]} << 8) | f[BTH + 11];
    const auto it = m_peer_qpn.find((uint64_t{ip} << 24) | dqpn);
    if (it == m_peer_qpn.end()) {
        return;
    }
    auto& st = m_stamps[it->second];
    // The newest stamps are at the back: the frame is one of the few the send path holds.
    for (auto s = st.rbegin(); s != st.rend(); ++s) {
        if (s->first == psn) {
            s->second = now_ps();
            return;
        }
    }
}

void cc_engine::on_telemetry(uint32_t qpn, const roce::int_stack& s) {
    if (qpn < m_telemetry.size()) {
        m_telemetry[qpn] = s;
    }
}

void cc_engine::count_telemetry(const std::vector<uint8_t>& f) {
    if (roce::int_stack_offset(f.data(), f.size()) != 0) {
        ++m_stats.int_frames;
        m_stats.int_bytes += roce::INT_STACK_BYTES;
    }
}

void cc_engine::on_ack(uint32_t qpn, uint32_t psn, bool nak) {
    if (!m_telemetry.empty()) {
        // HPCC: an event per ACK that reflects telemetry (the transmit engine's other implied
        // ACKs, a NAK's, a READ response's, carry none).
        if (qpn >= m_telemetry.size() || m_telemetry[qpn].nhop == 0) {
            return;
        }
        cc_event ev;
        ev.kind = nak ? cc_event_kind::NAK : cc_event_kind::ACK;
        ev.now_ps = now_ps();
        ev.psn = psn;
        ev.telemetry = m_telemetry[qpn];
        m_telemetry[qpn].nhop = 0;
        ++m_stats.int_acks;
        m_queue.push_back({qpn, ev});
        m_wake.notify(sc_core::SC_ZERO_TIME);
        return;
    }
    if (m_stamps.empty() || qpn >= m_stamps.size()) {
        return;
    }
    // The newest stamped packet the ACK covers gives the RTT sample.
    auto& st = m_stamps[qpn];
    uint64_t sent = 0;
    while (!st.empty() && psn_le(st.front().first, psn)) {
        sent = st.front().second;
        st.pop_front();
    }
    if (sent == 0 && !nak) {
        return;  // nothing new acknowledged (a duplicate ACK)
    }
    cc_event ev;
    ev.kind = nak ? cc_event_kind::NAK : cc_event_kind::ACK;
    ev.now_ps = now_ps();
    ev.rtt_ps = sent == 0 ? 0 : ev.now_ps - sent;
    m_stats.rtt_samples += sent == 0 ? 0 : 1;
    m_queue.push_back({qpn, ev});
    m_wake.notify(sc_core::SC_ZERO_TIME);
}

void cc_engine::on_cnp(uint32_t qpn) {
    cc_event ev;
    ev.kind = cc_event_kind::CNP;
    ev.now_ps = now_ps();
    m_queue.push_back({qpn, ev});
    m_wake.notify(sc_core::SC_ZERO_TIME);
}

void cc_engine::reset_qp(uint32_t qpn) {
    qp_context* qp = m_contexts.qp_slot(qpn);
    if (qp == nullptr) {
        return;
    }
    if (qp->cc.timer_at_ps != 0) {
        m_timers.erase({qp->cc.timer_at_ps, qpn});
    }
    const uint32_t epoch = qp->cc.epoch + 1;
    qp->cc = cc_qp_state{};
    qp->cc.epoch = epoch;
    m_pacer.reset(qpn);
    if (qpn < m_stamps.size()) {
        m_stamps[qpn].clear();
    }
}

void cc_engine::engine_thread() {
    for (;;) {
        // Same-instant order: an ACK or CNP and a timer due at the same time stamp go in one
        // order whatever the order SystemC runs the processes of the instant in (and so on
        // any number of MPI ranks): with work at hand, the engine first lets the instant settle
        // (every event of the instant queued), then takes the queued events, then the timers.
        if (sc_core::sc_time_stamp() != m_settled_at &&
            (!m_queue.empty() || (!m_timers.empty() && m_timers.begin()->first <= now_ps()))) {
            hw::settle_instant();
            m_settled_at = sc_core::sc_time_stamp();
        }
        if (m_queue.empty()) {
            if (m_timers.empty()) {
                sc_core::wait(m_wake);
                continue;
            }
            const uint64_t at = m_timers.begin()->first;
            const uint64_t now = now_ps();
            if (at > now) {
                sc_core::wait(sc_core::sc_time(static_cast<double>(at - now), sc_core::SC_PS),
                              m_wake);
                continue;
            }
            const uint32_t qpn = m_timers.begin()->second;
            m_timers.erase(m_timers.begin());
            qp_context* qp = m_contexts.qp(qpn);
            if (qp == nullptr || qp->cc.timer_at_ps != at) {
                continue;  // destroyed, or the timer moved meanwhile
            }
            qp->cc.timer_at_ps = 0;  // expired (the algorithm may set the next one)
            ++m_stats.timer_events;
            cc_event ev;
            ev.kind = cc_event_kind::TIMER;
            ev.now_ps = now;
            process(qpn, ev);
            continue;
        }
        const pending p = m_queue.front();
        m_queue.pop_front();
        process(p.qpn, p.ev);
    }
}

void cc_engine::process(uint32_t qpn, const cc_event& event) {
    // The rate state is in the QP context: read-modify-write through the context cache.
    if (m_cache != nullptr) {
        m_cache->access(ctx_kind::QPC, qpn, true, cache_port::OTHER);
    }
    m_clk.wait_cycles(EVENT_CYCLES);
    // Same-instant order at the write-back: a packet the rate limiter hands on at this instant
    // counts (SENT, on_sent: byte counter, rate) before the decision is computed and written,
    // whatever the order SystemC runs the two processes in (on MPI ranks it differs: issue 23).
    // Nothing else touches the state at this instant once it has settled.
    hw::settle_instant();
    m_settled_at = sc_core::sc_time_stamp();
    qp_context* qp = m_contexts.qp(qpn);
    if (qp == nullptr) {
        return;  // destroyed meanwhile
    }
    ++m_stats.events;
    cc_event ev = event;
    ev.now_ps = now_ps();  // the time the engine acts on it
    if (ev.kind == cc_event_kind::CNP) {
        ++qp->cc.cnps;
    }
    // snd_nxt as the engine acts (HPCC's lastUpdateSeq): the PSN after the newest packet the
    // scheduler handed on (qp->next_psn is assigned a whole message ahead).
    if (qpn < m_snd_nxt.size()) {
        const snd_nxt_state& n = m_snd_nxt[qpn];
        ev.next_psn = n.at_ps == ev.now_ps ? n.before : n.now;
    } else {
        ev.next_psn = qp->next_psn;
    }
    const uint64_t old_timer = qp->cc.timer_at_ps;
    apply(qpn, qp->cc, old_timer, m_algo->on_event(qp->cc, ev), ev.now_ps,
          ev.kind == cc_event_kind::CNP);
}

void cc_engine::apply(uint32_t qpn, cc_qp_state& s, uint64_t old_timer, const cc_decision& d,
                      uint64_t now, bool force_row) {
    const uint64_t old_rate = m_pacer.rate(qpn);
    const uint64_t old_target = s.target_mbps;
    const uint32_t old_alpha = s.alpha;
    if (d.rate_mbps) {
        // Only the pacer applies a rate; at or above line rate the QP is not paced. The QPC
        // keeps the algorithm's value as it is (it is the algorithm's own state too).
        s.rate_mbps = *d.rate_mbps;
        m_pacer.set_rate(qpn, *d.rate_mbps >= m_line ? 0 : *d.rate_mbps);
    }
    if (d.target_mbps) {
        s.target_mbps = *d.target_mbps;
    }
    if (d.alpha) {
        s.alpha = *d.alpha;
    }
    if (d.window_bytes) {
        s.window_bytes = *d.window_bytes;
    }
    const uint64_t timer = d.timer_at_ps ? *d.timer_at_ps : s.timer_at_ps;
    if (old_timer != 0) {
        m_timers.erase({old_timer, qpn});
    }
    s.timer_at_ps = timer;
    if (timer != 0) {
        m_timers.insert({timer, qpn});
        m_wake.notify(sc_core::SC_ZERO_TIME);
    }
    const bool rate_changed = m_pacer.rate(qpn) != old_rate;
    m_stats.rate_changes += rate_changed ? 1 : 0;
    if (rate_changed || s.target_mbps != old_target || s.alpha != old_alpha || force_row) {
        const uint64_t rate = m_pacer.rate(qpn);
        m_log.push_back({now, qpn, rate == 0 ? m_line : rate,
                         s.target_mbps == 0 || s.target_mbps > m_line ? m_line : s.target_mbps,
                         s.alpha, s.cnps});
    }
}

}  // namespace rnic::hw::cc
