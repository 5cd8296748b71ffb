// SPDX-License-Identifier: Apache-2.0
// RC requester state of one QP (IBA 9.7, reliable connection): what the responder has
// acknowledged, the retry and RNR retry budgets, the loss recovery episode, the go-back-N resends
// still queued (and their epoch), selective repeat's tail probe, the congestion-window accounting
// of the bytes in flight, and per outstanding READ the progress of its responses. Plain C++ (no
// SystemC): tx_engine (the SystemC shell) owns the retransmission timer, the outstanding queue and
// the queues to the send path, and asks this class what the PSNs mean. Unit tests:
// testbench/unit/rc_requester_test.cpp.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "hw/roce/protocol.h"

namespace rnic::hw {

// Loss recovery counters, per QP and in total (stats.json: the `recovery_*` counters and
// `recovery_by_qp`; hw/tx_engine/README.md "Loss recovery counters").
struct recovery_stats {
    uint64_t nak_episodes = 0;
    uint64_t timeout_episodes = 0;
    uint64_t recovered_by_nak = 0;
    uint64_t recovered_by_timeout = 0;
    uint64_t recovery_failed = 0;
    uint64_t timeouts = 0;
    uint64_t retransmitted_packets = 0;
    uint64_t retransmitted_bytes = 0;
};

// How a loss recovery episode ended.
enum class episode_end { BY_NAK, BY_TIMEOUT, FAILED };

class rc_requester {
public:
    // --- The acknowledgement point: every PSN up to acked_psn() was received in order ---
    // A request takes PSNs from `first_psn`: before the connection's first, nothing is
    // acknowledged and the point is the PSN just before it.
    void on_request(uint32_t first_psn);
    bool acked_any() const { return m_acked_any; }
    uint32_t acked_psn() const { return m_acked_psn; }
    // The first PSN the responder has not acknowledged.
    uint32_t first_unacked() const { return roce::psn_add(m_acked_psn, 1); }
    // A NAK (or ACK) at `psn` that is at or behind the acknowledgement point: overtaken on the
    // wire by a later ACK or NAK, or a copy.
    bool stale(uint32_t psn) const { return m_acked_any && roce::psn_le(psn, m_acked_psn); }
    // The responder acknowledged every PSN up to `psn` (an ACK; a NAK for psn + 1; READ
    // responses). `last_assigned`: the last PSN given to a request (the QP's next PSN - 1). True
    // when that is forward progress (IBA 9.7.6.1.2: beyond the point, not beyond what was sent);
    // then the point moves to `psn` and the open episode ends if its PSN is now acknowledged
    // (`*ended` set).
    bool acknowledge(uint32_t psn, uint32_t last_assigned, bool* ended);

    // --- Loss recovery episode (one at a time, until the PSN it went back to is acknowledged) ---
    bool episode_open() const { return m_episode_open; }
    uint32_t episode_psn() const { return m_episode_psn; }
    // A NAK (or a READ response gap) at `psn`: opens an episode unless one is open. True if it
    // opened one.
    bool open_nak_episode(uint32_t psn);
    // The retransmission timer fired, going back to `from`: opens an episode unless one is open
    // (true then), and marks the open one as timed out.
    bool timer_expired(uint32_t from);
    // The episode ends (`failed`: the QP left RTS first): how it ended.
    episode_end end_episode(bool failed);
    // A response placed in order up to `psn` repairs the open episode if it went back to `psn`
    // or before.
    bool repairs_episode(uint32_t psn) const {
        return m_episode_open && roce::psn_le(m_episode_psn, psn);
    }

    // --- Retry budgets (IBA 9.7.6.1.3: retry_cnt; 9.7.5.2.8: rnr_retry, 7 = infinite) ---
    void refill_retries(uint8_t retry_count) { m_retries_left = retry_count; }
    void refill_rnr(uint8_t rnr_retry) { m_rnr_left = rnr_retry; }
    // A timeout retry: false when the budget is spent (the QP fails with RETRY_EXCEEDED).
    bool take_retry();
    // An RNR retry: false when the budget is spent; 7 never runs out.
    bool take_rnr_retry();
    uint8_t retries_left() const { return m_retries_left; }
    uint8_t rnr_left() const { return m_rnr_left; }
    // The RNR back-off owns the timer (`psn`: the RNR-NAKed request) until it ends.
    void start_rnr_wait(uint32_t psn) {
        m_rnr_wait = true;
        m_rnr_psn = psn;
    }
    void end_rnr_wait() { m_rnr_wait = false; }
    bool rnr_wait() const { return m_rnr_wait; }
    uint32_t rnr_psn() const { return m_rnr_psn; }

    // --- Go-back-N resends still queued for the transmit scheduler (first PSN of each) ---
    // A go-back-N from `psn`: true if the resends still queued start at or before it (they
    // cover it: nothing to queue). Otherwise they are superseded (the count is returned in
    // `*superseded`, the epoch moves on: the scheduler drops jobs of an older one) and the
    // caller queues the go-back-N afresh.
    bool resends_cover(uint32_t psn, uint64_t* superseded);
    void queue_resend(uint32_t first_psn) { m_queued_resends.push_back(first_psn); }
    // A go-back-N resend was taken by the scheduler.
    void resend_taken() {
        if (!m_queued_resends.empty()) {
            m_queued_resends.pop_front();
        }
    }
    bool resends_queued() const { return !m_queued_resends.empty(); }
    uint32_t resend_epoch() const { return m_resend_epoch; }

    // --- Selective repeat: the tail probe (README "Selective repeat") ---
    // A request whose last PSN is `last` went to the send path (`ack_req`: its last packet asks
    // for an ACK); a selective resend starting at `resend_first` (`selective_resend`) arms the
    // probe: its ACK shows whether what was sent before it (up to the highest PSN sent so far)
    // arrived.
    void sent(uint32_t last, bool selective_resend, uint32_t resend_first, bool ack_req);
    // A selective NAK for `psn` repeats one already answered: `psn` is in the last selective
    // resend and no packet asking for an ACK went out after it. The responder repeats a
    // selective NAK only for an AckReq packet past the gap (hw/recv_path), so only one sent
    // before the resend can have asked it: the resend is on its way.
    bool repeated_nak(uint32_t psn) const {
        return m_resent_any && !m_ack_req_since_resend &&
               roce::psn_in(psn, m_resent_first, m_resent_last);
    }
    // An ACK from the wire through `psn`: if it answers the armed probe and stops short of the
    // highest PSN sent before the resend, the packets after `psn` up to that PSN never arrived:
    // true, with the range to resend (and the probe disarmed).
    bool lost_tail(uint32_t psn, uint32_t* from, uint32_t* to);
    // A NAK: the responder has something past a gap, so it is no lost tail.
    void cancel_probe() { m_probe = false; }
    // A selective NAK for `psn` (not stale): true if it is news, the probe then disarmed (as
    // for any NAK); false for a repeat (repeated_nak), which leaves the probe armed: it answers
    // an AckReq sent before the resend and tells nothing about what was sent after it, so a
    // lost NAK of the next gap is still found by the resend's ACK (issue 24).
    bool take_selective_nak(uint32_t psn) {
        if (repeated_nak(psn)) {
            return false;
        }
        cancel_probe();
        return true;
    }

    // --- Congestion window (round-robin scheduler): SEND/WRITE payload bytes in flight ---
    // A request packet with `psn` carrying `bytes` went to the send path (a PSN sent before is
    // a resend: its bytes are the same unacknowledged ones).
    void count_sent(uint32_t psn, uint32_t bytes);
    bool sent_before(uint32_t psn) const { return m_counted_any && roce::psn_le(psn, m_sent_high); }
    uint64_t in_flight() const { return m_sent_total - m_acked_total; }
    // The bytes of the packets up to the acknowledgement point leave the count; true if any did
    // (the window opened).
    bool window_acked();

private:
    bool m_acked_any = false;
    uint32_t m_acked_psn = 0;
    bool m_episode_open = false;
    bool m_episode_timed_out = false;  // the timer fired during it
    uint32_t m_episode_psn = 0;        // repaired once this PSN is acknowledged
    uint8_t m_retries_left = 7;
    uint8_t m_rnr_left = 7;
    bool m_rnr_wait = false;
    uint32_t m_rnr_psn = 0;
    std::deque<uint32_t> m_queued_resends;
    uint32_t m_resend_epoch = 0;
    bool m_sent_any = false;
    uint32_t m_sent_psn = 0;  // the highest PSN handed to the send path
    bool m_probe = false;
    uint32_t m_probe_from = 0;  // the selective resend's PSN
    uint32_t m_probe_psn = 0;   // the highest PSN sent before it
    // The PSNs of the last selective resend, and whether an AckReq packet went out after it.
    bool m_resent_any = false;
    uint32_t m_resent_first = 0;
    uint32_t m_resent_last = 0;
    bool m_ack_req_since_resend = false;
    std::deque<std::pair<uint32_t, uint64_t>> m_sent_log;  // (PSN, running total of bytes)
    uint64_t m_sent_total = 0;
    uint64_t m_acked_total = 0;
    bool m_counted_any = false;
    uint32_t m_sent_high = 0;  // the highest PSN counted
};

// The responses of one outstanding READ of `packets` PSNs from `first_psn` (IBA 9.7.5.1.4: a
// response past a missing one re-issues the READ from the first missing PSN). In PSN order only
// (go-back-N): `next` moves with each in-order response. Selective repeat: responses past a gap
// are kept (a bitmap); each gap is asked for once, as a READ of the missing PSNs only.
struct read_progress {
    uint32_t first_psn = 0;
    uint32_t packets = 1;
    uint32_t next = 0;          // the next response PSN expected in order
    bool gap = false;           // a re-issue for the gap at `next` is outstanding
    std::vector<uint8_t> have;  // selective repeat: responses placed, by index
    uint32_t asked = 0;         // the end (index) of the last gap re-issued
    uint32_t next_index() const { return roce::psn_diff(next, first_psn); }
    bool placed(uint32_t psn) const {
        const uint32_t i = roce::psn_diff(psn, first_psn);
        return i < have.size() && have[i] != 0;
    }
    // Selective repeat: the response at `psn` was placed (kept in the bitmap). In order, `next`
    // moves past it and every response placed since: ADVANCED, or DONE when every response is
    // in. Past a gap: PAST_GAP (the gap is to be asked for unless `gap`).
    enum class step { PAST_GAP, ADVANCED, DONE };
    step on_placed(uint32_t psn);
    // A response past `next` is placed already (the next gap can be asked for at once).
    bool kept_past_next() const;
    // The gap at `next`: indices [from, to) up to the next response placed (or the end).
    void gap_range(uint32_t* from, uint32_t* to) const;
    // The READ was re-issued for the gap up to index `to`.
    void asked_for(uint32_t to) {
        gap = true;
        asked = to;
    }
};

}  // namespace rnic::hw
