// SPDX-License-Identifier: Apache-2.0
// RC requester state of one QP, see rc_requester.h.
#include "hw/tx_engine/rc_requester.h"

namespace rnic::hw {

using roce::psn_add;
using roce::psn_diff;
using roce::psn_le;

void rc_requester::on_request(uint32_t first_psn) {
    if (!m_acked_any) {
        m_acked_any = true;  // nothing of this connection is acknowledged yet
        m_acked_psn = psn_add(first_psn, roce::PSN_MASK);  // first_psn - 1
    }
}

bool rc_requester::acknowledge(uint32_t psn, uint32_t last_assigned, bool* ended) {
    *ended = false;
    if (!m_acked_any || psn_le(psn, m_acked_psn) || !psn_le(psn, last_assigned)) {
        return false;  // nothing new (a stale or duplicated ACK/NAK), or beyond what was sent
    }
    m_acked_psn = psn;
    *ended = repairs_episode(psn);
    return true;
}

bool rc_requester::open_nak_episode(uint32_t psn) {
    if (m_episode_open) {
        return false;  // one episode until its PSN is acknowledged, however many NAKs it takes
    }
    m_episode_open = true;
    m_episode_timed_out = false;
    m_episode_psn = psn;
    return true;
}

bool rc_requester::timer_expired(uint32_t from) {
    const bool opened = !m_episode_open;
    if (opened) {
        m_episode_open = true;
        m_episode_psn = from;
    }
    m_episode_timed_out = true;
    return opened;
}

episode_end rc_requester::end_episode(bool failed) {
    m_episode_open = false;
    if (failed) {
        return episode_end::FAILED;
    }
    return m_episode_timed_out ? episode_end::BY_TIMEOUT : episode_end::BY_NAK;
}

bool rc_requester::take_retry() {
    if (m_retries_left == 0) {
        return false;
    }
    --m_retries_left;
    return true;
}

bool rc_requester::take_rnr_retry() {
    if (m_rnr_left == 0) {
        return false;
    }
    if (m_rnr_left != 7) {  // 7 = retry forever (IBA)
        --m_rnr_left;
    }
    return true;
}

bool rc_requester::resends_cover(uint32_t psn, uint64_t* superseded) {
    *superseded = 0;
    if (m_queued_resends.empty()) {
        return false;
    }
    if (psn_le(m_queued_resends.front(), psn)) {
        return true;
    }
    // The queued resends start beyond `psn` (the message holding it has gone to the send path
    // since and lost a packet again): superseded, the go-back-N starts over from `psn` so the
    // messages go out in PSN order.
    *superseded = m_queued_resends.size();
    m_queued_resends.clear();
    ++m_resend_epoch;
    return false;
}

void rc_requester::sent(uint32_t last, bool selective_resend, uint32_t resend_first, bool ack_req) {
    if (selective_resend && m_sent_any) {
        m_probe = true;  // its ACK shows whether what was sent before it arrived
        m_probe_from = resend_first;
        m_probe_psn = m_sent_psn;
    }
    if (selective_resend) {
        m_resent_any = true;
        m_resent_first = resend_first;
        m_resent_last = last;
        m_ack_req_since_resend = false;
    } else if (ack_req) {
        m_ack_req_since_resend = true;
    }
    if (!m_sent_any || psn_le(m_sent_psn, last)) {
        m_sent_any = true;
        m_sent_psn = last;
    }
}

bool rc_requester::lost_tail(uint32_t psn, uint32_t* from, uint32_t* to) {
    if (!m_probe || !psn_le(m_probe_from, psn)) {
        return false;  // no probe armed, or the ACK does not cover the resend yet
    }
    // The responder NAKs the next gap at once when anything past it has arrived, so an ACK
    // short of the last PSN sent before the resend means the packets after it never came.
    m_probe = false;
    if (psn_le(m_probe_psn, psn)) {
        return false;
    }
    *from = psn_add(psn, 1);
    *to = m_probe_psn;
    return true;
}

void rc_requester::count_sent(uint32_t psn, uint32_t bytes) {
    if (sent_before(psn)) {
        return;  // a resend: the same bytes are still the unacknowledged ones
    }
    m_counted_any = true;
    m_sent_high = psn;
    m_sent_total += bytes;
    m_sent_log.emplace_back(psn, m_sent_total);
}

bool rc_requester::window_acked() {
    bool opened = false;
    while (!m_sent_log.empty() && psn_le(m_sent_log.front().first, m_acked_psn)) {
        m_acked_total = m_sent_log.front().second;
        m_sent_log.pop_front();
        opened = true;
    }
    return opened;
}

read_progress::step read_progress::on_placed(uint32_t psn) {
    if (have.empty() && psn != next) {
        have.assign(packets, 0);  // the READ's first gap (in order, none is needed)
    }
    if (!have.empty()) {
        have[psn_diff(psn, first_psn)] = 1;
    }
    if (psn != next) {
        return step::PAST_GAP;
    }
    // In order: move past it and every response placed since.
    uint32_t k = next_index() + 1;
    while (k < packets && k < have.size() && have[k] != 0) {
        ++k;
    }
    next = psn_add(first_psn, k);
    gap = k < asked;  // a gap inside the last re-issued run is being answered already
    return k == packets ? step::DONE : step::ADVANCED;
}

bool read_progress::kept_past_next() const {
    for (uint32_t k = next_index(); k < have.size(); ++k) {
        if (have[k] != 0) {
            return true;
        }
    }
    return false;
}

void read_progress::gap_range(uint32_t* from, uint32_t* to) const {
    *from = next_index();
    uint32_t t = *from;
    while (t < packets && (t >= have.size() || have[t] == 0)) {
        ++t;
    }
    *to = t;
}

}  // namespace rnic::hw
