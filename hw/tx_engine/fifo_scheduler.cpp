// SPDX-License-Identifier: Apache-2.0
#include "hw/tx_engine/fifo_scheduler.h"

#include <utility>

#include "hw/send_path/send_path_packets.h"

namespace rnic::hw {

fifo_scheduler::fifo_scheduler(tx_sched_host& host)
    : m_host(host) {
    m_frames.reserve(2);  // the job in progress and one passing it: references stay valid
}

std::vector<tx_sched_counter> fifo_scheduler::paced_counters() const {
    return {{"paced_bypasses", &m_paced_bypasses, "count",
             "ACK/NAKs, READ responses and requester jobs of QPs at line rate sent while a "
             "rate-limited job waited for its slot (fifo)"}};
}

bool fifo_scheduler::take_request() {
    const bool resend = m_host.has(tx_queue::RESENDS);
    m_host.take(resend ? tx_queue::RESENDS : tx_queue::REQUESTS, m_whole);
    return resend ? m_host.resend_live(m_whole) : m_host.request_live(m_whole);
}

bool fifo_scheduler::begin(bool request, bool bypass, tx_turn& t) {
    if (!m_host.paced() || m_whole.desc.kind == tx_kind::ACK) {
        t.job = &m_whole;
        t.whole = true;
        m_turn = request ? turn_kind::WHOLE_REQUEST : turn_kind::WHOLE;
        return true;
    }
    // A rate limiter is on: every job but an ACK goes a packet per turn (a rate cut can come
    // mid-message, so the split cannot wait for the QP to be limited).
    frame f;
    f.job = std::move(m_whole);
    f.next = f.job.desc.first_packet;
    f.end = segment_end(f.job.desc);
    f.per = m_host.ack_segment_packets(f.job.desc);
    f.single = f.end - f.next == 1;
    f.request = request;
    f.bypass = bypass;
    m_frames.push_back(std::move(f));
    return false;
}

bool fifo_scheduler::serve_bypassing(const frame& f, tx_turn& t) {
    while (m_host.has(tx_queue::RESPONSES)) {
        const tx_job& head = m_host.front(tx_queue::RESPONSES);
        const uint32_t qpn = head.desc.src_qpn;
        // Responder order: nothing of the QP whose READ response waits overtakes it; a READ
        // response that is rate limited itself waits its turn (and holds what is behind it).
        if (f.job.desc.kind == tx_kind::READ_RESPONSE && qpn == f.job.desc.src_qpn) {
            return false;
        }
        if (head.desc.kind != tx_kind::ACK && m_host.limited(qpn)) {
            return false;
        }
        m_host.take(tx_queue::RESPONSES, m_whole);
        if (m_host.response_live(m_whole)) {
            ++m_paced_bypasses;
            t.job = &m_whole;
            t.whole = true;
            m_turn = turn_kind::WHOLE;
            return true;
        }
    }
    return false;
}

bool fifo_scheduler::bypass_request(const frame& f) {
    // The next requester job in fifo order (resends first), if its QP is not the waiting job's
    // and is at line rate; anything else stays behind the waiting job.
    const bool resend = m_host.has(tx_queue::RESENDS);
    if (!resend && !m_host.has(tx_queue::REQUESTS)) {
        return false;
    }
    const uint32_t qpn = m_host.front(resend ? tx_queue::RESENDS : tx_queue::REQUESTS).desc.src_qpn;
    if (qpn == f.job.desc.src_qpn || m_host.limited(qpn)) {
        return false;
    }
    if (take_request()) {
        tx_turn unused;
        begin(true, true, unused);  // paced: always a frame
    }
    return true;
}

bool fifo_scheduler::next(tx_turn& t, tx_sleep& s) {
    t = tx_turn{};
    for (;;) {
        if (m_frames.empty()) {
            // Responder traffic first (ACKs and READ responses keep the peer's requester
            // moving), then resends, which must precede newer requests.
            bool request = false;
            if (m_host.has(tx_queue::RESPONSES)) {
                m_host.take(tx_queue::RESPONSES, m_whole);
                if (!m_host.response_live(m_whole)) {
                    continue;
                }
            } else if (m_host.has(tx_queue::RESENDS) || m_host.has(tx_queue::REQUESTS)) {
                if (!take_request()) {
                    continue;
                }
                request = true;
            } else {
                s = tx_sleep{};
                return false;
            }
            if (begin(request, false, t)) {
                return true;
            }
            continue;
        }
        // The frame on top waits for its next packet's slot; what may pass it goes meanwhile.
        const frame& f = m_frames.back();
        if (serve_bypassing(f, t)) {
            return true;
        }
        uint64_t held = 0;
        const uint64_t slot_ps = m_host.try_pace(f.job, f.next, held);
        if (slot_ps == 0) {  // booked (or the QP is at line rate now)
            frame& top = m_frames.back();
            t.job = &top.job;
            t.whole = false;
            if (!top.single) {
                t.first = top.next;
                t.count = 1;
                t.ack_at_end = top.per != 0 && (top.next + 1) % top.per == 0;
            }
            m_turn = turn_kind::PACKET;
            return true;
        }
        if (m_frames.size() == 1 && bypass_request(f)) {
            continue;  // a request of another QP goes (or was dropped); the slot may be due now
        }
        // Until the slot, new work or a rate change (which may move the slot). While a job
        // passes another, only responses may pass it.
        s = tx_sleep{};
        s.until_ps = slot_ps;
        s.on_requests = m_frames.size() == 1;
        s.on_rate = true;
        return false;
    }
}

void fifo_scheduler::finish_frame() {
    frame& f = m_frames.back();
    if (f.request) {
        m_host.request_sent(f.job);
    }
    if (f.bypass) {
        ++m_paced_bypasses;
    }
    m_frames.pop_back();
}

void fifo_scheduler::turn_done(bool ok) {
    switch (m_turn) {
        case turn_kind::WHOLE_REQUEST:
            m_host.request_sent(m_whole);
            break;
        case turn_kind::PACKET: {
            frame& f = m_frames.back();
            ++f.next;
            if (!ok || f.next >= f.end) {
                finish_frame();  // a source key failure ends the job too
            }
            break;
        }
        default:
            break;
    }
    m_turn = turn_kind::NONE;
}

}  // namespace rnic::hw
