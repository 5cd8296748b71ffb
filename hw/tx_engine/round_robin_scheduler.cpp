// SPDX-License-Identifier: Apache-2.0
#include "hw/tx_engine/round_robin_scheduler.h"

#include <algorithm>
#include <utility>

#include "hw/send_path/send_path_packets.h"

namespace rnic::hw {

namespace {

bool is_response(const tx_job& job) {
    return job.desc.kind == tx_kind::ACK || job.desc.kind == tx_kind::READ_RESPONSE;
}

}  // namespace

round_robin_scheduler::round_robin_scheduler(const tx_engine_config& cfg, tx_sched_host& host)
    : m_burst(cfg.scheduler.burst_packets)
    , m_arbitration_cycles(cfg.scheduler.arbitration_cycles)
    , m_job_depth(cfg.job_fifo_depth)
    , m_response_depth(cfg.response_fifo_depth)
    , m_host(host) {}

std::vector<tx_sched_counter> round_robin_scheduler::counters() const {
    return {
        {"sched_turns", &m_stats.turns, "count",
         "round-robin turns: descriptors of 1..burst_packets packets handed on"},
        {"sched_skipped_paced", &m_stats.skipped_paced, "cycles",
         "clock edges rate-limited QPs with a packet ready were passed over: their slot was not "
         "due (counted from the packets' times, hw/tx_engine/README.md)"},
        {"sched_skipped_window", &m_stats.skipped_window, "count",
         "QPs passed over in a round: congestion window full"},
        {"sched_max_inflight", &m_stats.max_inflight, "bytes",
         "most unacknowledged SEND/WRITE payload bytes of a QP whose window was set"},
    };
}

void round_robin_scheduler::enter_ring(uint32_t key) {
    lane& l = m_lanes[key];
    if (!l.in_ring) {
        l.in_ring = true;
        m_ring.push_back(key);
    }
}

void round_robin_scheduler::stage_work() {
    while (m_host.has(tx_queue::RESENDS)) {
        const uint32_t key = key_of(m_host.front(tx_queue::RESENDS).desc.src_qpn, false);
        auto& resends = m_lanes[key].resends;
        m_host.take(tx_queue::RESENDS, resends.emplace_back());
        enter_ring(key);
    }
    while (m_host.has(tx_queue::RESPONSES)) {
        const tx_job& head = m_host.front(tx_queue::RESPONSES);
        const uint32_t key = key_of(head.desc.src_qpn, true);
        auto it = m_lanes.find(key);
        const bool lane_busy =
            it != m_lanes.end() && (it->second.active || !it->second.jobs.empty());
        if (head.desc.kind == tx_kind::ACK && !lane_busy) {
            m_host.take(tx_queue::RESPONSES, m_acks.emplace_back());
            continue;
        }
        if (m_staged_responses >= m_response_depth) {
            break;
        }
        ++m_staged_responses;
        m_host.take(tx_queue::RESPONSES, m_lanes[key].jobs.emplace_back());
        enter_ring(key);
    }
    while (m_host.has(tx_queue::REQUESTS) && m_staged_requests < m_job_depth) {
        const uint32_t key = key_of(m_host.front(tx_queue::REQUESTS).desc.src_qpn, false);
        ++m_staged_requests;
        m_host.take(tx_queue::REQUESTS, m_lanes[key].jobs.emplace_back());
        enter_ring(key);
    }
}

bool round_robin_scheduler::start_job(lane& l) {
    while (!l.active) {
        if (l.parked && (l.resends.empty() || !l.resends.front().selective)) {
            // The copy set aside for selective resends resumes, unless a go-back-N queued
            // since goes back to it or before (its resends carry it again).
            l.parked = false;
            if (!l.resends.empty() && m_host.supersedes(l.resends.front(), l.parked_cur)) {
                l.parked_cur = tx_job{};
                continue;
            }
            l.cur = std::move(l.parked_cur);
            l.parked_cur = tx_job{};
            l.resend = l.parked_resend;
            l.next = l.parked_next;
            l.end = l.parked_end;
            l.active = true;
            return true;
        }
        if (!l.resends.empty()) {
            // A resend of an older incarnation or a superseded go-back-N is dropped, one of a
            // QP in error is not sent.
            tx_job job = std::move(l.resends.front());
            l.resends.pop_front();
            if (!m_host.resend_live(job)) {
                continue;
            }
            l.cur = std::move(job);
            l.resend = true;
        } else if (!l.jobs.empty()) {
            tx_job job = std::move(l.jobs.front());
            l.jobs.pop_front();
            const bool response = is_response(job);
            if (response) {
                --m_staged_responses;
            } else {
                --m_staged_requests;
            }
            // ACKs and NAKs always go; requests and READ responses of a QP in error do not.
            if (!(response ? m_host.response_live(job) : m_host.request_live(job))) {
                continue;
            }
            l.cur = std::move(job);
            l.resend = false;
        } else {
            return false;
        }
        l.active = true;
        l.next = l.cur.desc.first_packet;  // a segment (selective repeat) from its first packet
        l.end = segment_end(l.cur.desc);
    }
    return true;
}

void round_robin_scheduler::take_resends_first(lane& l) {
    if (!l.resends.front().selective) {
        // A go-back-N that arrived while this message was going out and goes back to it or
        // before: its resends carry the message again from its first packet (it is unfinished),
        // so the rest of this copy is not sent (the responder would drop it as out of sequence)
        // and the resends go now. This also frees a message held by a full window that only the
        // resends can open.
        if (m_host.supersedes(l.resends.front(), l.cur)) {
            l.active = false;
            l.cur = tx_job{};
        }
    } else if (!l.cur.selective && !l.parked) {
        // A selective resend (selective repeat) carries only the packet its NAK asked for,
        // never the rest of this message, which the responder keeps taking past the gap: the
        // copy is set aside and resumes at its next packet once the selective resends ahead of
        // it have gone (start_job).
        l.parked = true;
        l.parked_cur = std::move(l.cur);
        l.parked_resend = l.resend;
        l.parked_next = l.next;
        l.parked_end = l.end;
        l.cur = tx_job{};
        l.active = false;
    }
}

uint32_t round_robin_scheduler::turn_size(lane& l, uint64_t& wake_ps, bool& windowed) {
    const tx_descriptor& d = l.cur.desc;
    uint32_t n = std::min(l.end - l.next, m_burst);
    if (d.kind == tx_kind::ACK) {
        return 1;
    }
    if (const uint32_t per = m_host.ack_segment_packets(d); per != 0) {
        n = std::min(n, per - l.next % per);  // a turn ends at a congestion-control segment's end
    }
    // Congestion window: a new SEND/WRITE packet goes only if the QP's unacknowledged bytes
    // stay within it (or nothing is in flight: a packet larger than the window still moves).
    if (d.kind == tx_kind::SEND || d.kind == tx_kind::WRITE) {
        const uint32_t fit = m_host.window_fit(d, l.next, n, windowed);
        if (windowed) {
            if (fit == 0) {
                ++m_stats.skipped_window;
                return 0;
            }
            n = fit;
        }
    }
    // Rate limiter: a limited QP's turn is one packet, and only when its slot is due.
    // Passed over until then; counted when it goes, as the clock edges its limiter held it
    // (pacer::try_pace: from the packet's own times, not from how often this round looked).
    uint64_t held = 0;
    if (m_host.paced() && m_host.limited(d.src_qpn)) {
        const uint64_t at = m_host.try_pace(l.cur, l.next, held);
        if (at != 0) {
            wake_ps = std::min(wake_ps, at);
            return 0;
        }
        m_stats.skipped_paced += held;
        return 1;
    }
    if (m_host.paced()) {
        m_host.try_pace(l.cur, l.next, held);  // not limited: books nothing, tells the listener
    }
    return n;
}

bool round_robin_scheduler::next(tx_turn& t, tx_sleep& s) {
    t = tx_turn{};
    for (;;) {
        stage_work();
        if (!m_acks.empty()) {
            m_ack = std::move(m_acks.front());
            m_acks.pop_front();
            if (!m_host.response_live(m_ack)) {
                continue;
            }
            t.job = &m_ack;
            t.whole = true;
            m_turn_lane = false;
            return true;
        }
        // One round over the lanes with work, from the one after the last served.
        uint64_t wake_ps = UINT64_MAX;
        for (size_t i = 0, n = m_ring.size(); i < n; ++i) {
            const uint32_t key = m_ring.front();
            m_ring.pop_front();
            lane& l = m_lanes[key];
            if (l.active && !l.resends.empty()) {
                take_resends_first(l);
            }
            if (!start_job(l)) {
                l.in_ring = false;
                continue;
            }
            // The job's QP may have failed or been reset since it was taken (it may have waited
            // for its rate limiter or window): the rest of its message is not sent (requests and
            // READ responses; ACKs always go).
            if (!(is_response(l.cur) ? m_host.response_live(l.cur) : m_host.request_live(l.cur))) {
                l.active = false;
                l.cur = tx_job{};
                m_ring.push_back(key);
                continue;
            }
            bool windowed = false;
            const uint32_t packets = turn_size(l, wake_ps, windowed);
            if (packets == 0) {
                m_ring.push_back(key);  // not eligible now: its place comes round again
                continue;
            }
            // One send-path descriptor for these packets. Under a window the responder is asked
            // to ACK every turn (AckReq on its last packet): it ACKs only packets that ask, and
            // the window opens only with ACKs. A congestion-control segment ending with this
            // turn asks for its ACK too (turn_size does not let a turn cross one).
            const bool whole = l.next == l.cur.desc.first_packet && l.next + packets == l.end;
            t.job = &l.cur;
            t.whole = false;
            t.first = l.next;
            t.count = whole ? 0 : packets;
            t.ack_at_end = windowed;
            t.ack_at_segment_end = true;
            t.wait_cycles = m_arbitration_cycles;
            ++m_stats.turns;
            m_turn_lane = true;
            m_turn_key = key;
            m_turn_first = l.next;
            m_turn_packets = packets;
            return true;
        }
        // Nothing eligible: sleep until new work, an ACK (a window opens), a rate change or the
        // earliest rate limiter slot.
        s = tx_sleep{};
        s.until_ps = wake_ps;
        s.on_window = true;
        s.on_rate = !m_ring.empty() && m_host.paced();
        return false;
    }
}

void round_robin_scheduler::turn_done(bool ok) {
    if (!m_turn_lane) {
        m_ack = tx_job{};
        return;
    }
    m_turn_lane = false;
    lane& l = m_lanes[m_turn_key];
    const tx_kind kind = l.cur.desc.kind;
    l.next += m_turn_packets;
    if (ok && (kind == tx_kind::SEND || kind == tx_kind::WRITE)) {
        m_stats.max_inflight =
            std::max(m_stats.max_inflight, m_host.count_sent(l.cur, m_turn_first, m_turn_packets));
    }
    if (!ok || l.next >= l.end) {
        if (ok &&
            (kind == tx_kind::SEND || kind == tx_kind::WRITE || kind == tx_kind::READ_REQUEST)) {
            m_host.request_sent(l.cur);  // its last packet (AckReq) is with the send path
        }
        l.active = false;
        l.cur = tx_job{};
    }
    m_ring.push_back(m_turn_key);  // dropped from the ring at its next turn if it has no work
}

}  // namespace rnic::hw
