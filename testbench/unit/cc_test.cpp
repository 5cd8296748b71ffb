// SPDX-License-Identifier: Apache-2.0
// Congestion control, unit level (no simulation): the DCQCN reaction point step by step against
// values worked out by hand from the documented ConnectX rules (hw/cc/README.md), TIMELY against
// the formulas of Algorithm 1 of Mittal et al. (SIGCOMM 2015) recomputed here, the pacer's slot
// arithmetic, the notification point's per-QP limiter and CNP bytes, and the rnic.cc config.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hw/cc/dcqcn.h"
#include "hw/cc/registry.h"
#include "hw/cc/timely.h"
#include "hw/nic/nic_config.h"
#include "hw/recv_path/notification_point.h"
#include "hw/tx_engine/pacer.h"

namespace {

using namespace rnic::hw::cc;
using nlohmann::json;

constexpr uint64_t US = 1'000'000;  // ps
constexpr uint64_t LINE = 100'000;  // Mb/s

dcqcn make(const json& keys = json::object()) {
    rnic::config::parse_context pc;
    const dcqcn_config c = parse_dcqcn_config(rnic::config::reader(keys, "rnic.cc.dcqcn", pc));
    pc.throw_if_errors();
    cc_env env;
    env.line_rate_mbps = LINE;
    return dcqcn(c, env);
}

cc_event ev(cc_event_kind k, uint64_t t_ps, uint32_t bytes = 0) {
    cc_event e;
    e.kind = k;
    e.now_ps = t_ps;
    e.bytes = bytes;
    return e;
}

// --- DCQCN ------------------------------------------------------------------------------------

// The documented fixed-point formats (hw/cc/README.md, "Precision"), recomputed here: alpha a
// 20-bit fraction (1.0 = 2^20), rates Mb/s with 8 fractional bits (1/256 Mb/s).
uint64_t alpha_step(uint64_t a, bool cnp, uint64_t g = 1019) {
    a = (a * g) >> 10;
    return cnp ? std::min<uint64_t>((1u << 20) - 1, a + ((1024 - g) << 10)) : a;
}
uint64_t cut_q(uint64_t rc_q, uint64_t alpha, uint32_t gd = 11) {
    return std::max(rc_q - ((rc_q * alpha) >> (gd + 10)), rc_q / 2);  // rp_min_dec_fac 50
}
constexpr uint64_t LINE_Q = LINE << 8;

// First CNP at 10 us: alpha = rp_initial_alpha_value 1023/1024 = 1047552 / 2^20, R_T = R_C =
// line = 25600000 / 256, then R_C = 25600000 - floor(25600000 * 1047552 / 2^21) = 12812500
// (50048.83 Mb/s: the pacer gets 50048; >= 50 % of 100000). Second CNP at 12 us: inside the 4 us
// monitor period, no decrease; alpha: period [10,11) had a CNP: floor(1047552 * 1019 / 1024) +
// 5 * 1024 = 1047557 (shown 1023); [11,12) none: floor(1047557 * 1019 / 1024) = 1042441 (1018).
// Third CNP at 14.5 us: [12,13) had the CNP: 1042470 (1018); [13,14) none: 1037379 (1013).
// Decrease: 12812500 - floor(12812500 * 1037379 / 2^21) = 6474658 (25291.6 Mb/s: 25291); no
// timer or byte-counter increase since the last decrease, so R_T stays 100000.
TEST(Dcqcn, AlphaUpdateAndRateDecreaseByHand) {
    dcqcn a = make();
    cc_qp_state s;
    cc_decision d = a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    EXPECT_EQ(*d.rate_mbps, 50048u);
    EXPECT_EQ(*d.target_mbps, LINE);
    EXPECT_EQ(*d.alpha, 1023u);
    EXPECT_EQ(*d.timer_at_ps, 310 * US);  // rp_time_reset 300 us after the decrease
    d = a.on_event(s, ev(cc_event_kind::CNP, 12 * US));
    EXPECT_EQ(*d.rate_mbps, 50048u) << "a CNP within rp_rate_reduce_monitor_period decreased";
    EXPECT_EQ(*d.alpha, 1018u);
    d = a.on_event(s, ev(cc_event_kind::CNP, 14 * US + US / 2));
    EXPECT_EQ(*d.alpha, 1013u);
    EXPECT_EQ(*d.rate_mbps, 25291u);
    EXPECT_EQ(*d.target_mbps, LINE);
    EXPECT_EQ(*d.timer_at_ps, 314 * US + US / 2);
}

// A CNP inside the monitor period is not lost (NVIDIA, rpg_gd: "the flow rate is reduced at the
// beginning of the next rate_reduce_monitor_period interval"; the HPCC ns-3 model's
// CheckRateDecreaseMlx likewise): it is latched and the decrease comes when the period ends.
// First CNP at 10 us: 50048 as above, timer 310 us. CNP at 12 us: no decrease, the QP's timer
// moves to 14 us (10 + 4). TIMER at 14 us: alpha 1013 (as above: [10,11) CNP -> 1023, [11,12)
// -> 1018, [12,13) CNP -> 1018, [13,14) -> 1013), R_C = 25291 as above, R_T stays 100000 (no timer
// increase came between), timer 14 + 300 us. Before the latch, the CNP at 12 us was dropped and
// this QP kept 50048 until its next CNP.
TEST(Dcqcn, CnpWithinMonitorPeriodDecreasesWhenThePeriodEnds) {
    dcqcn a = make();
    cc_qp_state s;
    a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    cc_decision d = a.on_event(s, ev(cc_event_kind::CNP, 12 * US));
    EXPECT_EQ(*d.rate_mbps, 50048u);
    EXPECT_EQ(*d.timer_at_ps, 14 * US) << "the decrease is due when the monitor period ends";
    d = a.on_event(s, ev(cc_event_kind::TIMER, 14 * US));
    EXPECT_EQ(*d.alpha, 1013u);
    EXPECT_EQ(*d.rate_mbps, 25291u);
    EXPECT_EQ(*d.target_mbps, LINE);
    EXPECT_EQ(*d.timer_at_ps, 314 * US);
    // Two CNPs in one period owe one decrease: the next timer is the increase timer.
    a.on_event(s, ev(cc_event_kind::CNP, 15 * US));
    d = a.on_event(s, ev(cc_event_kind::CNP, 16 * US));
    EXPECT_EQ(*d.rate_mbps, 25291u);
    EXPECT_EQ(*d.timer_at_ps, 18 * US);
    d = a.on_event(s, ev(cc_event_kind::TIMER, 18 * US));
    EXPECT_LT(*d.rate_mbps, 25291u);
    EXPECT_EQ(*d.timer_at_ps, 318 * US);
}

// With a monitor period longer than rp_time_reset (400 us against 300 us), the rate-increase
// timer still fires while a decrease is latched, then the decrease comes at the period's end:
// CNP at 10 us (50048.83), CNP at 20 us (latched, due 410 us); TIMER 310 us: fast recovery,
// R_C = ceil((12812500 + 25600000) / 2) / 256 = 75024.4, next timer min(610, 410) = 410 us;
// TIMER 410 us: the decrease, R_T clamped to R_C (a timer increase came between, _ati 1), alpha
// recomputed here.
TEST(Dcqcn, IncreaseTimerAndLatchedDecreaseShareTheQpTimer) {
    dcqcn a = make({{"rp_rate_reduce_monitor_period", 400}, {"rp_threshold", 5}});
    cc_qp_state s;
    a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::CNP, 20 * US)).timer_at_ps, 310 * US);
    cc_decision d = a.on_event(s, ev(cc_event_kind::TIMER, 310 * US));
    EXPECT_EQ(*d.rate_mbps, 75024u);
    EXPECT_EQ(*d.timer_at_ps, 410 * US);
    d = a.on_event(s, ev(cc_event_kind::TIMER, 410 * US));
    uint64_t alpha = alpha_step(1023u << 10, true);  // [10,11): the first CNP
    for (int p = 11; p < 410; ++p) {                 // [20,21) had the second CNP
        alpha = alpha_step(alpha, p == 20);
    }
    EXPECT_EQ(*d.alpha, alpha >> 10);
    EXPECT_EQ(*d.target_mbps, 75024u);
    EXPECT_EQ(*d.rate_mbps, cut_q(19206250, alpha) >> 8);
    EXPECT_EQ(*d.timer_at_ps, 710 * US);
}

// rp_min_dec_fac bounds one decrease: 80 % keeps 80000 of 100000 (the formula gives 50048).
TEST(Dcqcn, MinimumDecreaseFactor) {
    dcqcn a = make({{"rp_min_dec_fac", 80}});
    cc_qp_state s;
    EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::CNP, 10 * US)).rate_mbps, 80000u);
    dcqcn none = make({{"rp_min_dec_fac", 100}});  // 100: no decrease at all
    cc_qp_state s2;
    EXPECT_EQ(*none.on_event(s2, ev(cc_event_kind::CNP, 10 * US)).rate_mbps, LINE);
}

// rp_min_rate floors R_C: the second decrease would give 25291 (see above), the floor is 30000.
TEST(Dcqcn, MinRateFloor) {
    dcqcn a = make({{"rp_min_rate", 30000}});
    cc_qp_state s;
    EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::CNP, 10 * US)).rate_mbps, 50048u);
    a.on_event(s, ev(cc_event_kind::CNP, 12 * US));
    EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::CNP, 14 * US + US / 2)).rate_mbps, 30000u);
    // However many CNPs follow, never below.
    for (uint64_t t = 20; t < 200; t += 5) {
        EXPECT_GE(*a.on_event(s, ev(cc_event_kind::CNP, t * US)).rate_mbps, 30000u);
    }
}

// Fast recovery (rp_threshold 5: five timer events, stages 0..4 when they fire):
// R_C <- ceil((R_C+R_T)/2) with R_T = line, in 1/256 Mb/s from 12812500 (50048.83): 19206250,
// 22403125, 24001563, 24800782, 25200391 (75024.4, 87512.2, 93756.1, 96878.1, 98439.0); the timer
// re-arms every 300 us. The sixth (stage 5 = F) is additive: R_T 100000 + 5, clamped to the
// line, R_C ceil((25200391 + 25600000) / 2) = 25400196 (99219.5). (Before 2026-11-26 the stage
// counted before the check: 4 fast-recovery steps for F = 5, none for the default F = 1.)
TEST(Dcqcn, FastRecoveryByTimer) {
    dcqcn a = make({{"rp_threshold", 5}, {"rp_ai_rate", 5}});
    cc_qp_state s;
    a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    const uint64_t want[] = {75024, 87512, 93756, 96878, 98439, 99219};
    uint64_t t = 10 * US;
    for (uint64_t w : want) {
        t += 300 * US;
        const cc_decision d = a.on_event(s, ev(cc_event_kind::TIMER, t));
        EXPECT_EQ(*d.rate_mbps, w);
        EXPECT_EQ(*d.target_mbps, LINE);
        EXPECT_EQ(*d.timer_at_ps, t + 300 * US);
    }
}

// Fast recovery lasts rp_threshold increase events: with rp_rate_to_set_on_first_cnp 40000 the
// first CNP sets R_C = R_T = 40000 (no decrease), so fast recovery leaves both where they are
// and the first additive step shows when it comes: timer events 1..5 (stages 0..4) keep R_T at
// 40000, the sixth (stage 5 = F) makes it 40005 and R_C (40000 + 40005) / 2 = 40002.5. The
// default F = 1: one fast-recovery event, then additive. (Before the fix the F-th event was
// already additive, and with F = 1 there was no fast recovery at all.)
TEST(Dcqcn, FastRecoveryLastsRpThresholdEvents) {
    for (const uint32_t f : {5u, 1u}) {
        dcqcn a = make({{"rp_threshold", f}, {"rp_rate_to_set_on_first_cnp", 40000}});
        cc_qp_state s;
        a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
        uint64_t t = 10 * US;
        for (uint32_t i = 1; i <= f; ++i) {
            t += 300 * US;
            const cc_decision d = a.on_event(s, ev(cc_event_kind::TIMER, t));
            EXPECT_EQ(*d.target_mbps, 40000u) << "F " << f << ", event " << i;
            EXPECT_EQ(*d.rate_mbps, 40000u) << "F " << f << ", event " << i;
        }
        const cc_decision d = a.on_event(s, ev(cc_event_kind::TIMER, t + 300 * US));
        EXPECT_EQ(*d.target_mbps, 40005u) << "F " << f;
        EXPECT_EQ(*d.rate_mbps, 40002u) << "F " << f;
    }
}

// Additive and hyper increase through the timer and the byte counter (rp_threshold 1,
// rp_byte_reset 1000, rp_rate_to_set_on_first_cnp 40000: R_C = R_T = 40000, no decrease). The
// stages T, BC as the event finds them (its own counts after it):
//   1000 B sent:  T0 B0 -> fast recovery: R_C ceil((40000+40000)/2) = 40000, R_T 40000
//   timer:        T0 B1 -> max 1 >= F, min 0 <= F: additive: R_T 40005, R_C 80005/2 = 40002.5
//   1000 B sent:  T1 B1 -> additive: R_T 40010, R_C ceil((40002.5+40010)/2 in 1/256) = 40006.25
//   timer:        T1 B2 -> additive: R_T 40015, R_C (40006.25+40015)/2 = 40010.625
//   1000 B sent:  T2 B2 -> min(T,B) 2 > 1 -> hyper: R_T 40065, R_C (40010.625+40065)/2 = 40037.8
// (the pacer gets the whole Mb/s: 40002, 40006, 40010, 40037)
TEST(Dcqcn, AdditiveAndHyperIncreaseByTimerAndByteCounter) {
    dcqcn a = make({{"rp_byte_reset", 1000}, {"rp_rate_to_set_on_first_cnp", 40000}});
    cc_qp_state s;
    cc_decision d = a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    EXPECT_EQ(*d.rate_mbps, 40000u);
    EXPECT_EQ(*d.target_mbps, 40000u);
    EXPECT_TRUE(a.wants_sent(s));
    EXPECT_FALSE(a.on_event(s, ev(cc_event_kind::SENT, 11 * US, 999)).rate_mbps.has_value());
    d = a.on_event(s, ev(cc_event_kind::SENT, 11 * US, 1));  // 1000 bytes now
    EXPECT_EQ(*d.target_mbps, 40000u);
    EXPECT_EQ(*d.rate_mbps, 40000u);
    d = a.on_event(s, ev(cc_event_kind::TIMER, 310 * US));
    EXPECT_EQ(*d.target_mbps, 40005u);
    EXPECT_EQ(*d.rate_mbps, 40002u);
    d = a.on_event(s, ev(cc_event_kind::SENT, 311 * US, 1000));
    EXPECT_EQ(*d.target_mbps, 40010u);
    EXPECT_EQ(*d.rate_mbps, 40006u);
    d = a.on_event(s, ev(cc_event_kind::TIMER, 610 * US));
    EXPECT_EQ(*d.target_mbps, 40015u);
    EXPECT_EQ(*d.rate_mbps, 40010u);
    d = a.on_event(s, ev(cc_event_kind::SENT, 611 * US, 1000));
    EXPECT_EQ(*d.target_mbps, 40065u);
    EXPECT_EQ(*d.rate_mbps, 40037u);
}

// Target clamping: with rp_clamp_tgt_rate_ati 1, a decrease after a timer increase sets
// R_T = R_C; with 0 (and rp_clamp_tgt_rate 0) R_T stays. Timer at 310 us: R_C 19206250 / 256 =
// 75024.4 (fast recovery, R_T stays at line). CNP at 311 us: R_T <- 75024 (ati 1) or 100000.
TEST(Dcqcn, TargetClamping) {
    for (int ati = 0; ati <= 1; ++ati) {
        dcqcn a = make({{"rp_clamp_tgt_rate_ati", ati}});
        cc_qp_state s;
        a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
        EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::TIMER, 310 * US)).rate_mbps, 75024u);
        const cc_decision d = a.on_event(s, ev(cc_event_kind::CNP, 311 * US));
        EXPECT_EQ(*d.target_mbps, ati == 1 ? 75024u : LINE) << "ati " << ati;
        // Alpha after 301 periods, recomputed here: one CNP period, then 300 of decay.
        uint64_t alpha = alpha_step(1023u << 10, true);
        for (int i = 0; i < 300; ++i) {
            alpha = alpha_step(alpha, false);
        }
        EXPECT_EQ(*d.alpha, alpha >> 10);
        EXPECT_EQ(*d.rate_mbps, cut_q(19206250, alpha) >> 8);
    }
    // rp_clamp_tgt_rate 1: every decrease clamps.
    dcqcn c = make({{"rp_clamp_tgt_rate", 1}, {"rp_clamp_tgt_rate_ati", 0}});
    cc_qp_state s;
    c.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    EXPECT_EQ(*c.on_event(s, ev(cc_event_kind::CNP, 15 * US)).target_mbps, 50048u);
}

// A byte-counter increase since the last decrease clamps R_T at the next decrease whatever the
// two clamp keys say (NVIDIA, clamp_tgt_rate_after_time_inc: the target is updated "if the
// transmission rate was increased due to the timer, and not only due to the byte counter"; the
// isekai ConnectX model clamps on increase_stage_by_byte > 0 alike). First CNP at 10 us: R_C
// 12812500 / 256, R_T line. 1000 B sent: fast recovery, R_C ceil((12812500 + 25600000) / 2) =
// 19206250 (75024.4). CNP at 15 us: R_T <- 75024, R_C cut from 19206250 by the alpha of 5
// periods. Without the byte increase (a second QP), R_T stays at the line rate.
TEST(Dcqcn, ByteCounterIncreaseClampsTheTarget) {
    dcqcn a = make({{"rp_byte_reset", 1000}, {"rp_clamp_tgt_rate_ati", 0}});
    cc_qp_state s, quiet;
    a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    a.on_event(quiet, ev(cc_event_kind::CNP, 10 * US));
    EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::SENT, 11 * US, 1000)).rate_mbps, 75024u);
    cc_decision d = a.on_event(s, ev(cc_event_kind::CNP, 15 * US));
    uint64_t alpha = alpha_step(1023u << 10, true);
    for (int i = 0; i < 4; ++i) {
        alpha = alpha_step(alpha, false);
    }
    EXPECT_EQ(*d.target_mbps, 75024u);
    EXPECT_EQ(*d.rate_mbps, cut_q(19206250, alpha) >> 8);
    d = a.on_event(quiet, ev(cc_event_kind::CNP, 15 * US));
    EXPECT_EQ(*d.target_mbps, LINE);
    EXPECT_EQ(*d.rate_mbps, cut_q(12812500, alpha) >> 8);
}

// The rate never exceeds the line rate: recovery reaches it, then the QP leaves the limiter
// (rate 0 = not paced) and its timer stops; a later CNP starts over from line rate. In 1/256
// Mb/s the halfway steps from 12812500 come within 1 Mb/s (256) of 25600000 at the 16th event
// (99998.48 after the 15th), which is the line rate (the pacer's whole Mb/s cannot tell them
// apart; without that rule the QP stayed limited at 99999 Mb/s until the 24th).
TEST(Dcqcn, LineRateCeilingEndsLimiting) {
    dcqcn a = make({{"rp_threshold", 31}});
    cc_qp_state s;
    a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    uint64_t want = 12812500;
    uint64_t t = 10 * US;
    int events = 0;
    for (; events < 40 && want < LINE_Q; ++events) {
        want = (want + LINE_Q + 1) / 2;  // independent: ceil of the halfway point
        if (LINE_Q - want < 256) {
            want = LINE_Q;
        }
        t += 300 * US;
        const cc_decision d = a.on_event(s, ev(cc_event_kind::TIMER, t));
        ASSERT_LE(s.rate_mbps, LINE);
        if (want >= LINE_Q) {
            EXPECT_EQ(*d.rate_mbps, 0u);
            EXPECT_EQ(*d.timer_at_ps, 0u);
        } else {
            EXPECT_EQ(*d.rate_mbps, want >> 8);
        }
    }
    EXPECT_EQ(events, 16);
    EXPECT_FALSE(a.wants_sent(s));
    EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::CNP, t + US)).rate_mbps, 50048u);
}

// Alpha keeps the fraction the 10 bits it shows drop (ConnectX with g = 1/256 holds alpha at the
// share of periods that saw a CNP; in 10-bit floor arithmetic it fell to 0 while CNPs kept
// coming, issue 26). dce_tcp_g 1020 (g = 4/1024 = 1/256), alpha period 1 us, a CNP every 8 us.
// Exact: as a CNP arrives, alpha has had one CNP period and 7 without since the last one, so its
// fixed point is a* = g (1-g)^7 / (1 - (1-g)^8) = 0.12329 (126.25 / 1024); the 20-bit floor
// arithmetic stays within 1/1024 of it. In 10 bits (the same loop below) a period without CNP
// loses a whole unit below 256 and a CNP adds 4: 8 periods lose 4 net, alpha goes to 0.
TEST(Dcqcn, AlphaHoldsUnderSparseCnpsWithGOneIn256) {
    dcqcn a = make({{"rp_dce_tcp_g", 1020}, {"rp_byte_reset", 0}, {"rp_time_reset", 100000}});
    cc_qp_state s;
    uint64_t t = 10 * US;
    a.on_event(s, ev(cc_event_kind::CNP, t));
    for (int i = 0; i < 3000; ++i) {
        t += 8 * US;
        a.on_event(s, ev(cc_event_kind::CNP, t));
    }
    const double g = 4.0 / 1024;
    const double fixed = g * std::pow(1 - g, 7) / (1 - std::pow(1 - g, 8));
    EXPECT_NEAR(s.alpha / 1024.0, fixed, 1.0 / 1024) << "alpha decayed while CNPs kept coming";
    uint32_t alpha10 = 1023;  // the same CNP pattern in 10-bit floor arithmetic
    for (int i = 0; i < 3000 * 8; ++i) {
        alpha10 = ((alpha10 * 1020u) >> 10) + (i % 8 == 0 ? 4u : 0u);
    }
    EXPECT_EQ(alpha10, 0u) << "10 bits: alpha collapses (what the 20-bit fraction fixes)";
}

// The slow-decay regime between sparse CNPs, by hand: after the first CNP (alpha 1047552 / 2^20)
// no CNP for 5 periods: 1047557 (the first period held the CNP), then floor(a 1019 / 1024):
// 1042441, 1037350, 1032284, 1027243; a CNP at 15 us sees 1027243 (shown 1003) and its
// decrease (the monitor period ended at 14 us) cuts R_C = 12812500 by floor(12812500 * 1027243 /
// 2^21) = 6275916 to 6536584 (25533.53 Mb/s). The 10-bit arithmetic gave 1003 too here: the
// difference is in the long tail (next test).
TEST(Dcqcn, SlowDecayBetweenSparseCnpsByHand) {
    dcqcn a = make();
    cc_qp_state s;
    a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    const cc_decision d = a.on_event(s, ev(cc_event_kind::CNP, 15 * US));
    EXPECT_EQ(*d.alpha, 1003u);
    EXPECT_EQ(*d.rate_mbps, 25533u);
    EXPECT_EQ(*d.target_mbps, LINE);
}

// The long tail: 1500 periods after one CNP the 20-bit alpha, floor-iterated from 1047557, is 569
// / 2^20 (shown 0, still cutting a little); 10-bit alpha was 0 after ~820 periods. (Floor
// arithmetic still ends at 0: after ~1950 periods without a CNP at g = 5/1024.)
TEST(Dcqcn, LongDecayKeepsTheFraction) {
    dcqcn a = make({{"rp_time_reset", 100000}, {"rp_byte_reset", 0}});
    cc_qp_state s;
    a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    a.on_event(s, ev(cc_event_kind::CNP, 15 * US));  // 6536584 / 256, as above
    const cc_decision d = a.on_event(s, ev(cc_event_kind::CNP, 1515 * US));
    uint64_t alpha = alpha_step(1023u << 10, true);
    for (int p = 11; p < 1515; ++p) {
        alpha = alpha_step(alpha, p == 15);
    }
    EXPECT_EQ(alpha, 569u);
    EXPECT_EQ(*d.alpha, 0u);
    EXPECT_EQ(*d.rate_mbps, cut_q(6536584, alpha) >> 8);
}

// Every documented default, and the NP parameters the algorithm hands to the receive path.
TEST(Dcqcn, DefaultsAndNotificationPointParameters) {
    const dcqcn_config c;
    EXPECT_EQ(c.rp_time_reset, 300u);
    EXPECT_EQ(c.rp_byte_reset, 32767u * 64);  // mlx5 units of 64 bytes (hw/cc/README.md)
    EXPECT_EQ(c.rp_threshold, 1u);
    EXPECT_EQ(c.rp_ai_rate, 5u);
    EXPECT_EQ(c.rp_hai_rate, 50u);
    EXPECT_EQ(c.rp_gd, 11u);
    EXPECT_EQ(c.rp_min_dec_fac, 50u);
    EXPECT_EQ(c.rp_min_rate, 1u);
    EXPECT_EQ(c.rp_dce_tcp_g, 1019u);
    EXPECT_EQ(c.rp_dce_tcp_rtt, 1u);
    EXPECT_EQ(c.rp_rate_reduce_monitor_period, 4u);
    EXPECT_EQ(c.rp_initial_alpha_value, 1023u);
    dcqcn a = make({{"np_min_time_between_cnps", 7}, {"np_cnp_dscp", 26}, {"np_cnp_prio", 3}});
    ASSERT_NE(a.notification_point(), nullptr);
    EXPECT_EQ(a.notification_point()->min_time_between_cnps_ps, 7 * US);
    EXPECT_EQ(a.notification_point()->cnp_dscp, 26);
    EXPECT_EQ(a.notification_point()->cnp_prio, 3);
}

// --- TIMELY -----------------------------------------------------------------------------------

// Algorithm 1 of the paper, written out here in doubles (the reference the model must match).
struct timely_ref {
    double rate, prev = 0, diff = 0;
    int neg = 0;
    bool have = false;
    double alpha = 0.875, beta = 0.8, delta = 10, tlow = 50, thigh = 500, minrtt = 20;
    int n = 5;
    double step(double rtt_us) {
        const double new_diff = have ? rtt_us - prev : 0;
        prev = rtt_us;
        have = true;
        diff = (1 - alpha) * diff + alpha * new_diff;
        const double g = diff / minrtt;
        if (rtt_us < tlow) {
            rate += delta;
            neg = 0;
        } else if (rtt_us > thigh) {
            rate *= 1 - beta * (1 - thigh / rtt_us);
            neg = 0;
        } else if (g <= 0) {
            ++neg;
            rate += (neg >= n ? n : 1) * delta;
        } else {
            neg = 0;
            rate *= 1 - beta * g;
        }
        rate = std::min(std::max(rate, 10.0), 100000.0);
        return rate;
    }
};

timely make_timely(const json& keys) {
    rnic::config::parse_context pc;
    const timely_config c = parse_timely_config(rnic::config::reader(keys, "rnic.cc.timely", pc));
    pc.throw_if_errors();
    cc_env env;
    env.line_rate_mbps = LINE;
    return timely(c, env);
}

uint64_t ack(timely& t, cc_qp_state& s, double rtt_us) {
    cc_event e;
    e.kind = cc_event_kind::ACK;
    e.rtt_ps = static_cast<uint64_t>(rtt_us * 1e6);
    const cc_decision d = t.on_event(s, e);
    return *d.rate_mbps == 0 ? LINE : *d.rate_mbps;
}

// RTT above T_high: rate x (1 - beta (1 - T_high/RTT)); by hand 100000 x (1 - 0.8/6) = 86667.
TEST(Timely, HighRttDecreaseByHand) {
    timely t = make_timely(json::object());
    cc_qp_state s;
    EXPECT_EQ(ack(t, s, 10), LINE);  // below T_low: +delta, clamped at the line rate
    EXPECT_EQ(ack(t, s, 600), 86667u);
}

// A run of RTTs through every region: below T_low, above T_high, gradient <= 0 (additive, then
// the hyper-additive N delta after N negative gradients in a row), gradient > 0.
TEST(Timely, FollowsAlgorithmOneOfThePaper) {
    timely t = make_timely({{"min_rtt_us", 200.0}});
    timely_ref ref;
    ref.rate = 100000;
    ref.minrtt = 200;
    cc_qp_state s;
    const double rtts[] = {10, 600, 300, 299, 298, 297, 296, 295, 294, 340, 360, 450, 700, 30};
    for (double r : rtts) {
        const double want = ref.step(r);
        EXPECT_EQ(ack(t, s, r), static_cast<uint64_t>(std::llround(want))) << "rtt " << r;
    }
    // An ACK without an RTT sample and a CNP change nothing.
    cc_event cnp;
    cnp.kind = cc_event_kind::CNP;
    EXPECT_FALSE(t.on_event(s, cnp).rate_mbps.has_value());
    EXPECT_EQ(t.notification_point(), nullptr);
    EXPECT_TRUE(t.wants_acks());
}

// The patched TIMELY (Zhu et al., CoNEXT 2016, section 4) by hand, rtt_ref 100 us, the paper's
// other values: RTT 600 us (above T_high): 100000 x (1 - 0.8 (1 - 500/600)) = 86666.67. RTT 150
// us: new_diff 150 - 600 = -450, rtt_diff 0.125 x 0 + 0.875 x -450 = -393.75, g = -19.7 <= -1/4:
// w = 0: rate = 10 + 86666.67 = 86676.67 (pure additive, whatever the RTT). RTT 160: new_diff
// 10, rtt_diff 0.125 x -393.75 + 8.75 = -40.47, g -2.02: w 0, 86686.67. RTT 200: new_diff 40,
// rtt_diff -5.06 + 35 = 29.94, g 1.497: w 1: rate x (1 - 0.8 x (200-100)/100) = 0.2 x 86686.67 =
// 17337.33. RTT 202: new_diff 2: rtt_diff 3.742 + 1.75 = 5.492, g 0.2746 >= 1/4: w 1:
// 17337.33 x (1 - 0.8 x 1.02) = 3190.07. RTT 101: new_diff -101, rtt_diff 0.6865 - 88.375 =
// -87.69: w 0: 3200.07. RTT 105: new_diff 4: rtt_diff -10.961 + 3.5 = -7.461, g = -0.373: w 0:
// 3210.07. RTT 110: new_diff 5: rtt_diff -0.9327 + 4.375 = 3.442, g = 0.1721: w = 0.8442:
// 10 x 0.1558 + 3210.07 x (1 - 0.8 x 0.8442 x 0.1) = 1.558 + 2993.27 = 2994.83.
TEST(Timely, PatchedRuleByHand) {
    timely t = make_timely({{"patched", true}, {"rtt_ref_us", 100.0}});
    cc_qp_state s;
    EXPECT_EQ(ack(t, s, 600), 86667u);
    EXPECT_EQ(ack(t, s, 150), 86677u);
    EXPECT_EQ(ack(t, s, 160), 86687u);
    EXPECT_EQ(ack(t, s, 200), 17337u);
    EXPECT_EQ(ack(t, s, 202), 3190u);
    EXPECT_EQ(ack(t, s, 101), 3200u);
    EXPECT_EQ(ack(t, s, 105), 3210u);
    EXPECT_EQ(ack(t, s, 110), 2995u);
}

// The patched rule has one fixed point for every flow that sees the same RTT: with the gradient
// at 0 (steady RTT, w = 1/2), R = delta / 2 + R (1 - beta / 2 e) is fixed at R* = delta / (beta
// e): e = (RTT - ref) / ref. Two QPs at very different rates fed the same steady RTT of 101 us
// (e = 0.01; R* = 10 / 0.008 = 1250 Mb/s) both end near R*; the original rule (gradient 0:
// additive increase only) keeps their difference forever.
TEST(Timely, PatchedConvergesToOneFixedPointOriginalDoesNot) {
    for (const bool patched : {true, false}) {
        timely t = make_timely({{"patched", patched}, {"rtt_ref_us", 100.0}});
        cc_qp_state a, b;
        const uint64_t a0 = ack(t, a, 600);  // 86667
        ack(t, b, 600);
        uint64_t b0 = 0;
        for (int i = 0; i < 6; ++i) {
            b0 = ack(t, b, 700);  // b cut further
        }
        uint64_t ra = 0, rb = 0;
        // The original adds the same N delta to both at a steady RTT (gradient <= 0): 200
        // samples keep both below the line rate.
        for (int i = 0; i < (patched ? 3000 : 200); ++i) {
            ra = ack(t, a, 101);
            rb = ack(t, b, 101);
        }
        if (patched) {
            EXPECT_NEAR(static_cast<double>(ra), 1250.0, 2.0);
            EXPECT_NEAR(static_cast<double>(rb), 1250.0, 2.0);
        } else {
            ASSERT_LT(ra, LINE);
            EXPECT_NEAR(static_cast<double>(ra - rb), static_cast<double>(a0 - b0), 1.0)
                << "original TIMELY keeps any split";
        }
    }
}

// At low rates the segment (one RTT sample each) shrinks to rate x low_rate_sample_us: at
// 10 Mb/s and 100 us, 125 bytes (the transmit engine makes that one packet); at line rate and
// above 64 KiB x 8 / 100 us = 5243 Mb/s, the configured 64 KiB.
TEST(Timely, SegmentShrinksAtLowRates) {
    timely t = make_timely(json::object());
    cc_qp_state s;
    EXPECT_EQ(t.ack_segment_bytes(s), 65536u);  // no sample yet: line rate
    ack(t, s, 600);                             // 86667 Mb/s
    EXPECT_EQ(t.ack_segment_bytes(s), 65536u);
    for (int i = 0; i < 60; ++i) {
        ack(t, s, 100000);  // RTT 100 ms: cut to the 10 Mb/s floor
    }
    EXPECT_EQ(*t.on_event(s, cc_event{cc_event_kind::ACK, 0, 0, 100'000'000'000}).rate_mbps, 10u);
    EXPECT_EQ(t.ack_segment_bytes(s), 125u);
    timely fixed = make_timely({{"low_rate_sample_us", 0.0}});
    EXPECT_EQ(fixed.ack_segment_bytes(s), 65536u);
}

// --- pacer ------------------------------------------------------------------------------------

// Slots of size x 8 / rate: 1106 wire bytes at 10 Gb/s last 884800 ps; a QP that idled does
// not bank credit; rate 0 is not paced.
TEST(Pacer, SlotsAreWireBytesOverRate) {
    rnic::hw::sim_context ctx;
    rnic::hw::clock_domain clk("clk", 500);
    rnic::hw::pacer p("pacer", clk, 8, ctx);
    EXPECT_EQ(p.reserve(3, 1000, 1106), 1000u);  // not limited
    p.set_rate(3, 10000);
    EXPECT_EQ(p.reserve(3, 0, 1106), 0u);
    EXPECT_EQ(p.reserve(3, 100, 1106), 884800u);
    EXPECT_EQ(p.reserve(3, 100, 84), 2 * 884800u);
    EXPECT_EQ(p.reserve(3, 5'000'000, 1106), 5'000'000u);  // idle: no credit
    EXPECT_EQ(p.reserve(4, 7, 1106), 7u);                  // another QP: its own limiter
    p.reset(3);
    EXPECT_EQ(p.rate(3), 0u);
}

// A rate change applies to the next slot: the previous packet's slot is recomputed at the rate
// of now (1106 B at 1 Mb/s last 8.848 ms; at 99.999 Gb/s 88.48 ns), so a QP cut to rp_min_rate
// does not sit out milliseconds after its rate recovered (pace() re-books a waiting packet).
TEST(Pacer, RateChangeAppliesToTheWaitingSlot) {
    rnic::hw::sim_context ctx;
    rnic::hw::clock_domain clk("clk", 500);
    rnic::hw::pacer p("pacer", clk, 8, ctx);
    p.set_rate(3, 1);
    EXPECT_EQ(p.reserve(3, 0, 1106), 0u);
    p.set_rate(3, 99999);
    EXPECT_EQ(p.reserve(3, 10, 1106), 88'480u) << "1106 x 8e6 / 99999 ps after the first";
    p.set_rate(3, 1);
    EXPECT_EQ(p.reserve(3, 20, 1106), 88'480u + 8'848'000'000u);  // 1106 x 8 bit at 1 Mb/s
}

// The round-robin scheduler looks at a limited QP whenever SystemC's process order has it look
// (an unrelated delta cycle moved a look by 138 ns in fabric/websearch_64_30_hpcc, timing
// unchanged): the counters are taken from the packets' own times, so two schedulers that book
// the same packets at the same times count the same, however often and whenever they were
// refused before (hw/tx_engine/README.md, "Rate limiter counters"). A 3-packet WRITE of QP 3
// at 10 Gb/s queued at 0 and a 1-packet WRITE queued at 3 us; clock 500 MHz (2 ns). Wire
// bytes: 1024 + 82 per packet, + 16 (RETH) on a WRITE's first: 1122 B last 897,600 ps, 1106 B
// 884,800 ps. Packet 1: ready at 0 (packet 0 booked then), slot at 897,600: waits 897,600 ps,
// the edges 0 .. 896,000 (449). Packet 2: ready at 898,000 (packet 1 booked), slot at
// 1,782,400: waits 884,400 ps, the edges 898,000 .. 1,782,000 (443). The second WRITE, ready at
// 3 us, after its slot (2,667,200): not paced.
TEST(Pacer, CountsDoNotDependOnWhenTheSchedulerLooked) {
    rnic::hw::sim_context ctx;
    rnic::hw::clock_domain clk("clk", 500);
    rnic::hw::tx_descriptor w;
    w.kind = rnic::hw::tx_kind::WRITE;
    w.src_qpn = 3;
    w.pmtu = 1024;
    w.length = 3 * 1024;
    w.psn = 100;
    rnic::hw::tx_descriptor one = w;
    one.length = 1024;
    one.psn = 103;
    struct look {
        uint64_t now_ps;
        bool granted;  // expected
    };
    // Scheduler A looks often (refused at 1,000, 400,000 and at the instant packet 1 went),
    // scheduler B only when each packet is due.
    const std::vector<std::vector<look>> a = {{{0, true}},
                                              {{1'000, false}, {400'000, false}, {898'000, true}},
                                              {{898'000, false}, {1'782'500, true}},
                                              {{3'000'000, true}}};
    const std::vector<std::vector<look>> b = {
        {{0, true}}, {{898'000, true}}, {{1'782'500, true}}, {{3'000'000, true}}};
    uint64_t held_total[2] = {0, 0};
    rnic::hw::pacer::stats got[2];
    for (int run = 0; run < 2; ++run) {
        rnic::hw::pacer p("pacer" + std::to_string(run), clk, 8, ctx);
        p.set_rate(3, 10'000);
        const auto& looks = run == 0 ? a : b;
        for (uint32_t k = 0; k < looks.size(); ++k) {
            const bool second = k == 3;
            for (const look& l : looks[k]) {
                uint64_t held = 0;
                const uint64_t at = p.try_pace(second ? one : w, second ? 0 : k,
                                               second ? 3'000'000 : 0, l.now_ps, held);
                EXPECT_EQ(at == 0, l.granted)
                    << "run " << run << " packet " << k << " at " << l.now_ps << ": slot " << at;
                held_total[run] += held;
            }
        }
        got[run] = p.get_stats();
    }
    for (int run = 0; run < 2; ++run) {
        EXPECT_EQ(got[run].paced_packets, 2u) << "run " << run;
        EXPECT_EQ(got[run].wait_ps, 897'600u + 884'400u) << "run " << run;
        EXPECT_EQ(held_total[run], 449u + 443u) << "run " << run;
    }
}

// --- notification point -------------------------------------------------------------------------

// A flood of CE packets: at most one CNP per QP per np_min_time_between_cnps (4 us).
TEST(NotificationPoint, OneCnpPerQpPerInterval) {
    rnic::hw::sim_context ctx;
    rnic::hw::clock_domain clk("clk", 500);
    rnic::hw::channel<rnic::fabric::eth_frame> mac("mac", 4);
    np_params np;
    np.min_time_between_cnps_ps = 4 * US;
    rnic::hw::nic_identity id;
    rnic::hw::notification_point n("np", np, clk, id, 16, mac, ctx);
    uint32_t admitted[2] = {0, 0};
    for (uint64_t t = 0; t < 100 * US; t += 10'000) {  // a CE packet every 10 ns on QPs 1 and 2
        for (uint32_t q = 1; q <= 2; ++q) {
            admitted[q - 1] += n.admit(q, t) ? 1 : 0;
        }
    }
    EXPECT_EQ(admitted[0], 25u);  // t = 0, 4, 8, ... 96 us
    EXPECT_EQ(admitted[1], 25u);
    n.reset_qp(1);
    EXPECT_TRUE(n.admit(1, 100 * US + 1));
    EXPECT_FALSE(n.admit(99, 0));  // no such QP
}

// The CNP's bytes, field by field (annex A17.9.3 / reference/rocev2.md): IPv4 ToS = DSCP << 2
// with ECN not-ECT, UDP 4791, BTH opcode 0x81, BECN set, P_Key 0xFFFF, DestQP = the peer QP,
// 16 zero reserved bytes, then the ICRC; 74 bytes in all.
TEST(NotificationPoint, CnpFormat) {
    rnic::hw::sim_context ctx;
    rnic::hw::clock_domain clk("clk", 500);
    rnic::hw::channel<rnic::fabric::eth_frame> mac("mac", 4);
    np_params np;
    np.cnp_dscp = 48;
    rnic::hw::nic_identity id;
    id.mac = {2, 0, 0, 0, 0, 2};
    id.ip = 0x0A000002;
    rnic::hw::notification_point n("np", np, clk, id, 16, mac, ctx);
    rnic::hw::qp_context qp;
    qp.dest_qpn = 0x000123;
    qp.dest_mac = {2, 0, 0, 0, 0, 1};
    qp.dest_ip = 0x0A000001;
    const std::vector<uint8_t> f = n.build_cnp(5, qp);
    ASSERT_EQ(f.size(), 14u + 20 + 8 + 12 + 16 + 4);
    EXPECT_EQ(f[0], 2);
    EXPECT_EQ(f[5], 1);   // to the peer's MAC
    EXPECT_EQ(f[11], 2);  // from ours
    EXPECT_EQ(f[12], 0x08);
    EXPECT_EQ(f[13], 0x00);
    EXPECT_EQ(f[15], 48 << 2);  // DSCP 48, ECN 00
    EXPECT_EQ(f[23], 17);
    EXPECT_EQ((f[36] << 8) | f[37], 4791);
    EXPECT_EQ(f[42], 0x81);
    EXPECT_EQ((f[44] << 8) | f[45], 0xFFFF);
    EXPECT_EQ(f[46], 0x40);  // BECN
    EXPECT_EQ((f[47] << 16) | (f[48] << 8) | f[49], 0x123);
    for (size_t i = 54; i < 70; ++i) {
        EXPECT_EQ(f[i], 0) << "reserved byte " << i;
    }
}

// --- config -------------------------------------------------------------------------------------

std::string config_error(const json& rnic) {
    rnic::config::parse_context pc;
    rnic::hw::parse_nic_config(rnic::config::reader(rnic, "rnic", pc));
    return pc.errors.empty() ? "" : pc.errors.front();
}

TEST(CcConfig, AlgorithmsAndErrorsWithPaths) {
    EXPECT_EQ(config_error({{"cc", {{"algorithm", "dcqcn"}}}}), "");
    EXPECT_EQ(config_error({{"cc", {{"algorithm", "timely"}}}}), "");
    EXPECT_EQ(config_error({{"cc", {{"algorithm", "hpcc"}}}}), "");
    EXPECT_EQ(config_error({{"cc", {{"algorithm", "bbr"}}}}),
              "rnic.cc.algorithm: \"bbr\" is not one of \"none\", \"dcqcn\", \"timely\", \"hpcc\"");
    EXPECT_EQ(config_error({{"cc", {{"dcqcn", {{"rp_gd", 16}}}}}}),
              "rnic.cc.dcqcn.rp_gd: 16 out of range [0, 15]");
    EXPECT_EQ(config_error({{"cc", {{"dcqcn", {{"rpg_gd", 11}}}}}}),
              "rnic.cc.dcqcn.rpg_gd: unknown key");
    EXPECT_EQ(config_error({{"cc", {{"timely", {{"t_low_us", 600.0}}}}}}),
              "rnic.cc.timely.t_high_us: must be greater than t_low_us");
    rnic::config::parse_context pc;
    const auto c = rnic::hw::parse_nic_config(rnic::config::reader(json::object(), "rnic", pc));
    EXPECT_EQ(c.cc.algorithm, "none");
    EXPECT_FALSE(c.cc.factory);
    EXPECT_EQ(pc.effective["rnic"]["cc"]["dcqcn"]["rp_time_reset"], 300);
}

}  // namespace
