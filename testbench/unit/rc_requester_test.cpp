// SPDX-License-Identifier: Apache-2.0
// The RC requester state (hw/tx_engine/rc_requester.h) against sequences worked out by hand from
// the IBA rules: the acknowledgement point and forward progress (9.7.6.1.2), a NAK acknowledging
// the PSNs before it (9.7.5.1.3), the retry budgets (retry_cnt; rnr_retry 7 = infinite), go-back-N
// epochs, selective repeat's tail probe, the in-flight byte count of a congestion window, and a
// READ's response progress (9.7.5.1.4) with selective repeat's gaps. No SystemC.
#include "hw/tx_engine/rc_requester.h"

#include <cstdint>

#include <gtest/gtest.h>

namespace {

using rnic::hw::episode_end;
using rnic::hw::rc_requester;
using rnic::hw::read_progress;

TEST(RcRequester, AcknowledgementPointMovesOnlyForward) {
    rc_requester rc;
    EXPECT_FALSE(rc.acked_any());
    bool ended = true;
    EXPECT_FALSE(rc.acknowledge(5, 10, &ended));  // nothing requested yet: nothing to ACK
    EXPECT_FALSE(ended);
    rc.on_request(100);  // requests take PSNs 100.. (the QP's next PSN is 110 after them)
    rc.on_request(105);  // a later request does not move the point
    EXPECT_EQ(rc.acked_psn(), 99u);
    EXPECT_EQ(rc.first_unacked(), 100u);
    EXPECT_TRUE(rc.acknowledge(102, 109, &ended));  // 100..102 received in order: progress
    EXPECT_EQ(rc.first_unacked(), 103u);
    EXPECT_FALSE(rc.acknowledge(102, 109, &ended));  // a duplicate ACK: no progress
    EXPECT_FALSE(rc.acknowledge(101, 109, &ended));  // an older one overtaken on the wire
    EXPECT_FALSE(rc.acknowledge(110, 109, &ended));  // beyond the last PSN sent: ignored
    EXPECT_EQ(rc.acked_psn(), 102u);
    EXPECT_TRUE(rc.stale(102));  // a NAK at 102 is behind the point
    EXPECT_FALSE(rc.stale(103));
}

TEST(RcRequester, AcknowledgementPointWrapsAtTwoTo24) {
    rc_requester rc;
    rc.on_request(0xFFFFFE);  // a 4-packet message: PSNs FFFFFE, FFFFFF, 0, 1
    EXPECT_EQ(rc.acked_psn(), 0xFFFFFDu);
    bool ended = false;
    EXPECT_TRUE(rc.acknowledge(0, 1, &ended));
    EXPECT_EQ(rc.first_unacked(), 1u);
    EXPECT_TRUE(rc.stale(0xFFFFFF));
    EXPECT_TRUE(rc.acknowledge(1, 1, &ended));
}

TEST(RcRequester, OneEpisodeUntilItsPsnIsAcknowledged) {
    rc_requester rc;
    rc.on_request(0);
    bool ended = false;
    // A sequence NAK at 5 (everything before it acknowledged): an episode opens at 5.
    EXPECT_TRUE(rc.acknowledge(4, 20, &ended));
    EXPECT_FALSE(ended);
    EXPECT_TRUE(rc.open_nak_episode(5));
    EXPECT_FALSE(rc.open_nak_episode(8));  // a second NAK during it: the same episode
    EXPECT_EQ(rc.episode_psn(), 5u);
    EXPECT_TRUE(rc.acknowledge(5, 20, &ended));  // the resend of 5 arrived
    EXPECT_TRUE(ended);
    EXPECT_EQ(rc.end_episode(false), episode_end::BY_NAK);
    EXPECT_FALSE(rc.episode_open());
    // The timer fires with no episode open: one opens at the PSN it goes back to, timed out.
    EXPECT_TRUE(rc.timer_expired(6));
    EXPECT_FALSE(rc.timer_expired(6));  // a second expiry: still the same episode
    EXPECT_TRUE(rc.acknowledge(9, 20, &ended));
    EXPECT_TRUE(ended);
    EXPECT_EQ(rc.end_episode(false), episode_end::BY_TIMEOUT);
    // A NAK episode during which the timer fires ends "by timeout".
    EXPECT_TRUE(rc.open_nak_episode(12));
    EXPECT_FALSE(rc.timer_expired(12));
    EXPECT_TRUE(rc.repairs_episode(12));
    EXPECT_FALSE(rc.repairs_episode(11));
    EXPECT_EQ(rc.end_episode(false), episode_end::BY_TIMEOUT);
    // An episode cut short (the QP left RTS) failed.
    EXPECT_TRUE(rc.open_nak_episode(14));
    EXPECT_EQ(rc.end_episode(true), episode_end::FAILED);
}

TEST(RcRequester, RetryBudgets) {
    rc_requester rc;
    rc.refill_retries(3);  // retry_cnt 3: three resends after timeouts, the fourth expiry fails
    EXPECT_TRUE(rc.take_retry());
    EXPECT_TRUE(rc.take_retry());
    EXPECT_TRUE(rc.take_retry());
    EXPECT_FALSE(rc.take_retry());
    rc.refill_retries(3);  // forward progress: the budget starts over
    EXPECT_EQ(rc.retries_left(), 3);
    rc.refill_rnr(2);
    EXPECT_TRUE(rc.take_rnr_retry());
    EXPECT_TRUE(rc.take_rnr_retry());
    EXPECT_FALSE(rc.take_rnr_retry());
    rc.refill_rnr(7);  // 7: retry forever
    for (int i = 0; i < 100; ++i) {
        ASSERT_TRUE(rc.take_rnr_retry());
    }
    EXPECT_EQ(rc.rnr_left(), 7);
    rc.start_rnr_wait(42);
    EXPECT_TRUE(rc.rnr_wait());
    EXPECT_EQ(rc.rnr_psn(), 42u);
    rc.end_rnr_wait();
    EXPECT_FALSE(rc.rnr_wait());
}

TEST(RcRequester, GoBackNResendsCoverOrAreSuperseded) {
    rc_requester rc;
    uint64_t superseded = 99;
    EXPECT_FALSE(rc.resends_cover(10, &superseded));  // nothing queued: queue the go-back-N
    EXPECT_EQ(superseded, 0u);
    rc.queue_resend(10);  // messages from PSN 10 and 20 queued again
    rc.queue_resend(20);
    EXPECT_TRUE(rc.resends_cover(15, &superseded));  // a NAK at 15: the resend from 10 covers it
    EXPECT_TRUE(rc.resends_cover(10, &superseded));
    EXPECT_EQ(rc.resend_epoch(), 0u);
    rc.resend_taken();  // the scheduler took the one from 10; 20 still queued
    // A NAK at 12 (the resend of 10..19 lost a packet again): 20 does not cover it; superseded.
    EXPECT_FALSE(rc.resends_cover(12, &superseded));
    EXPECT_EQ(superseded, 1u);
    EXPECT_EQ(rc.resend_epoch(), 1u);
    EXPECT_FALSE(rc.resends_queued());
}

TEST(RcRequester, TailProbeFindsPacketsLostAfterTheLastOneThatArrived) {
    rc_requester rc;
    rc.sent(9, false, 0, true);   // PSNs 0..9 sent
    rc.sent(19, false, 0, true);  // 10..19 sent
    // A selective NAK asked for 12; its resend goes after everything up to 19.
    rc.sent(12, true, 12, true);
    uint32_t from = 0;
    uint32_t to = 0;
    EXPECT_FALSE(rc.lost_tail(11, &from, &to));  // an ACK that does not cover the resend yet
    // The ACK answering the resend covers 12..15 only: 16..19 never arrived.
    EXPECT_TRUE(rc.lost_tail(15, &from, &to));
    EXPECT_EQ(from, 16u);
    EXPECT_EQ(to, 19u);
    EXPECT_FALSE(rc.lost_tail(15, &from, &to));  // disarmed: asked once
    // A resend whose ACK covers everything sent before it: nothing lost.
    rc.sent(17, true, 17, true);
    EXPECT_FALSE(rc.lost_tail(19, &from, &to));
    // A NAK cancels the probe: the responder has something past a gap.
    rc.sent(21, false, 0, true);
    rc.sent(20, true, 20, true);
    rc.cancel_probe();
    EXPECT_FALSE(rc.lost_tail(20, &from, &to));
    // The first request sent: nothing before it to probe.
    rc_requester fresh;
    fresh.sent(3, true, 3, true);
    EXPECT_FALSE(fresh.lost_tail(3, &from, &to));
}

TEST(RcRequester, WindowCountsNewBytesUntilAcknowledged) {
    rc_requester rc;
    rc.on_request(0);
    rc.count_sent(0, 1000);
    rc.count_sent(1, 1000);
    rc.count_sent(2, 500);
    EXPECT_EQ(rc.in_flight(), 2500u);
    rc.count_sent(1, 1000);  // a go-back-N resend of 1: the same bytes, not counted again
    EXPECT_TRUE(rc.sent_before(2));
    EXPECT_FALSE(rc.sent_before(3));
    EXPECT_EQ(rc.in_flight(), 2500u);
    EXPECT_FALSE(rc.window_acked());  // nothing acknowledged yet (the point is before 0)
    bool ended = false;
    ASSERT_TRUE(rc.acknowledge(1, 2, &ended));
    EXPECT_TRUE(rc.window_acked());
    EXPECT_EQ(rc.in_flight(), 500u);
    EXPECT_FALSE(rc.window_acked());
    ASSERT_TRUE(rc.acknowledge(2, 2, &ended));
    EXPECT_TRUE(rc.window_acked());
    EXPECT_EQ(rc.in_flight(), 0u);
}

TEST(RcRequester, RepeatedSelectiveNakOfTheLastResendIsRecognised) {
    rc_requester rc;
    rc.sent(19, false, 0, true);        // PSNs up to 19 sent, the message's last asks for an ACK
    EXPECT_FALSE(rc.repeated_nak(12));  // nothing resent yet: a NAK at 12 is news
    rc.sent(12, true, 12, true);        // the selective resend of 12
    // A NAK at 12 now can only have been asked by an AckReq sent before the resend: a repeat.
    EXPECT_TRUE(rc.repeated_nak(12));
    EXPECT_FALSE(rc.repeated_nak(13));  // another PSN: a new gap
    rc.sent(20, false, 0, false);       // no AckReq: still a repeat
    EXPECT_TRUE(rc.repeated_nak(12));
    rc.sent(21, false, 0, true);  // an AckReq after the resend: a NAK at 12 may answer it
    EXPECT_FALSE(rc.repeated_nak(12));
}

// Issue 24 (soak_rc_scale_selective): the NAK of the next gap is lost, and a repeated NAK of the
// PSN just resent arrives before the resend's ACK. The repeat answers an AckReq sent before the
// resend, so it must not disarm the probe: the resend's ACK then shows the packets after it
// missing and they go again, instead of after the retransmission timer (67 ms by default).
TEST(RcRequester, RepeatedSelectiveNakLeavesTheTailProbeArmed) {
    rc_requester rc;
    rc.sent(19, false, 0, true);              // PSNs 0..19, the message's last asks for an ACK
    rc.sent(12, true, 12, true);              // the selective resend of 12 (NAKed), sent after 19
    EXPECT_FALSE(rc.take_selective_nak(12));  // a repeat: ignored
    uint32_t from = 0;
    uint32_t to = 0;
    // The resend's ACK covers 12..15 only: a gap at 16 whose NAK was lost; 16..19 go again.
    ASSERT_TRUE(rc.lost_tail(15, &from, &to));
    EXPECT_EQ(from, 16u);
    EXPECT_EQ(to, 19u);
    // A NAK that is news disarms it: the responder has something past that gap.
    rc.sent(25, false, 0, true);
    rc.sent(21, true, 21, true);
    EXPECT_TRUE(rc.take_selective_nak(23));
    EXPECT_FALSE(rc.lost_tail(22, &from, &to));
}

read_progress read_of(uint32_t first, uint32_t packets) {
    read_progress r;
    r.first_psn = first;
    r.packets = packets;
    r.next = first;
    return r;
}

TEST(ReadProgress, InOrderResponsesAdvanceToDone) {
    read_progress r = read_of(100, 3);
    EXPECT_EQ(r.on_placed(100), read_progress::step::ADVANCED);
    EXPECT_EQ(r.next, 101u);
    EXPECT_TRUE(r.have.empty());  // no gap: no bitmap needed
    EXPECT_EQ(r.on_placed(101), read_progress::step::ADVANCED);
    EXPECT_EQ(r.on_placed(102), read_progress::step::DONE);
    EXPECT_EQ(r.next, 103u);
}

TEST(ReadProgress, SelectiveRepeatKeepsResponsesPastAGapAndAsksForEachGapOnce) {
    // A READ of 6 responses, PSNs 200..205. 200 arrives, 201-202 are lost, 203 arrives, 204 is
    // lost, 205 arrives.
    read_progress r = read_of(200, 6);
    EXPECT_EQ(r.on_placed(200), read_progress::step::ADVANCED);
    EXPECT_EQ(r.on_placed(203), read_progress::step::PAST_GAP);
    EXPECT_FALSE(r.gap);  // not asked yet: the requester re-issues the gap now
    uint32_t from = 0;
    uint32_t to = 0;
    r.gap_range(&from, &to);
    EXPECT_EQ(from, 1u);  // PSNs 201..202: indices [1, 3)
    EXPECT_EQ(to, 3u);
    r.asked_for(to);
    EXPECT_TRUE(r.gap);
    EXPECT_EQ(r.on_placed(205), read_progress::step::PAST_GAP);  // asked already: nothing new
    EXPECT_TRUE(r.placed(203));
    EXPECT_TRUE(r.placed(205));
    EXPECT_FALSE(r.placed(204));
    // The re-issued READ answers 201: in order; 202 is still inside the asked run.
    EXPECT_EQ(r.on_placed(201), read_progress::step::ADVANCED);
    EXPECT_EQ(r.next, 202u);
    EXPECT_TRUE(r.gap);
    // 202: next moves past 203 (placed before) to 204; the gap at 204 is not asked yet, and
    // 205 past it is in: the next gap can be asked for at once.
    EXPECT_EQ(r.on_placed(202), read_progress::step::ADVANCED);
    EXPECT_EQ(r.next, 204u);
    EXPECT_FALSE(r.gap);
    EXPECT_TRUE(r.kept_past_next());
    r.gap_range(&from, &to);
    EXPECT_EQ(from, 4u);
    EXPECT_EQ(to, 5u);
    r.asked_for(to);
    // 204 arrives: next moves past 205 to the end.
    EXPECT_EQ(r.on_placed(204), read_progress::step::DONE);
    EXPECT_EQ(r.next, 206u);
}

TEST(ReadProgress, GapRunsToTheEndWhenNothingPastItIsIn) {
    read_progress r = read_of(0xFFFFFE, 4);  // PSNs FFFFFE, FFFFFF, 0, 1
    EXPECT_EQ(r.on_placed(0xFFFFFE), read_progress::step::ADVANCED);
    EXPECT_FALSE(r.kept_past_next());
    uint32_t from = 0;
    uint32_t to = 0;
    r.gap_range(&from, &to);
    EXPECT_EQ(from, 1u);
    EXPECT_EQ(to, 4u);
    EXPECT_EQ(r.on_placed(1), read_progress::step::PAST_GAP);  // across the PSN wrap
    EXPECT_TRUE(r.placed(1));
    r.gap_range(&from, &to);
    EXPECT_EQ(to, 3u);
}

}  // namespace
