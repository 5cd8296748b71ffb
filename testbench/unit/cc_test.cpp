// SPDX-License-Identifier: Apache-2.0
// Congestion control, unit level (no simulation): the DCQCN reaction point step by step against
// values worked out by hand from the documented ConnectX rules (hw/cc/README.md), TIMELY against
// the formulas of Algorithm 1 of Mittal et al. (SIGCOMM 2015) recomputed here, the pacer's slot
// arithmetic, the notification point's per-QP limiter and CNP bytes, and the rnic.cc config.
#include <cmath>
#include <cstdint>
#include <string>

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

// First CNP at 10 us: alpha = rp_initial_alpha_value 1023, R_T = R_C = line, then
// R_C = 100000 - floor(100000 * 1023 / 2^11) = 100000 - 49951 = 50049 (>= 50 % of 100000).
// Second CNP at 12 us: inside the 4 us monitor period, no decrease; alpha: period [10,11) had a
// CNP: floor(1023*1019/1024) + 5 = 1018 + 5 = 1023; period [11,12) none: floor(1023*1019/1024) =
// 1018. Third CNP at 14.5 us: [12,13) had the CNP: floor(1018*1019/1024) + 5 = 1013 + 5 = 1018;
// [13,14) none: 1013. Decrease: 50049 - floor(50049*1013/2048) = 50049 - 24755 = 25294; no timer
// increase since the last decrease, so R_T stays 100000 (rp_clamp_tgt_rate 0, _ati 1).
TEST(Dcqcn, AlphaUpdateAndRateDecreaseByHand) {
    dcqcn a = make();
    cc_qp_state s;
    cc_decision d = a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    EXPECT_EQ(*d.rate_mbps, 50049u);
    EXPECT_EQ(*d.target_mbps, LINE);
    EXPECT_EQ(*d.alpha, 1023u);
    EXPECT_EQ(*d.timer_at_ps, 310 * US);  // rp_time_reset 300 us after the decrease
    d = a.on_event(s, ev(cc_event_kind::CNP, 12 * US));
    EXPECT_EQ(*d.rate_mbps, 50049u) << "a CNP within rp_rate_reduce_monitor_period decreased";
    EXPECT_EQ(*d.alpha, 1018u);
    d = a.on_event(s, ev(cc_event_kind::CNP, 14 * US + US / 2));
    EXPECT_EQ(*d.alpha, 1013u);
    EXPECT_EQ(*d.rate_mbps, 25294u);
    EXPECT_EQ(*d.target_mbps, LINE);
    EXPECT_EQ(*d.timer_at_ps, 314 * US + US / 2);
}

// A CNP inside the monitor period is not lost (NVIDIA, rpg_gd: "the flow rate is reduced at the
// beginning of the next rate_reduce_monitor_period interval"; the HPCC ns-3 model's
// CheckRateDecreaseMlx likewise): it is latched and the decrease comes when the period ends.
// First CNP at 10 us: 50049 as above, timer 310 us. CNP at 12 us: no decrease, the QP's timer
// moves to 14 us (10 + 4). TIMER at 14 us: alpha 1013 (as above: [10,11) CNP -> 1023, [11,12)
// -> 1018, [12,13) CNP -> 1018, [13,14) -> 1013), R_C = 50049 - floor(50049 * 1013 / 2048) =
// 25294, R_T stays 100000 (no timer increase came between), timer 14 + 300 us.
// Before the latch, the CNP at 12 us was dropped and this QP kept 50049 until its next CNP.
TEST(Dcqcn, CnpWithinMonitorPeriodDecreasesWhenThePeriodEnds) {
    dcqcn a = make();
    cc_qp_state s;
    a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    cc_decision d = a.on_event(s, ev(cc_event_kind::CNP, 12 * US));
    EXPECT_EQ(*d.rate_mbps, 50049u);
    EXPECT_EQ(*d.timer_at_ps, 14 * US) << "the decrease is due when the monitor period ends";
    d = a.on_event(s, ev(cc_event_kind::TIMER, 14 * US));
    EXPECT_EQ(*d.alpha, 1013u);
    EXPECT_EQ(*d.rate_mbps, 25294u);
    EXPECT_EQ(*d.target_mbps, LINE);
    EXPECT_EQ(*d.timer_at_ps, 314 * US);
    // Two CNPs in one period owe one decrease: the next timer is the increase timer.
    a.on_event(s, ev(cc_event_kind::CNP, 15 * US));
    d = a.on_event(s, ev(cc_event_kind::CNP, 16 * US));
    EXPECT_EQ(*d.rate_mbps, 25294u);
    EXPECT_EQ(*d.timer_at_ps, 18 * US);
    d = a.on_event(s, ev(cc_event_kind::TIMER, 18 * US));
    EXPECT_LT(*d.rate_mbps, 25294u);
    EXPECT_EQ(*d.timer_at_ps, 318 * US);
}

// With a monitor period longer than rp_time_reset (400 us against 300 us), the rate-increase
// timer still fires while a decrease is latched, then the decrease comes at the period's end:
// CNP at 10 us (50049), CNP at 20 us (latched, due 410 us); TIMER 310 us: fast recovery,
// R_C = ceil((50049 + 100000) / 2) = 75025, next timer min(610, 410) = 410 us; TIMER 410 us: the
// decrease, R_T clamped to 75025 (a timer increase came between, _ati 1), alpha recomputed here.
TEST(Dcqcn, IncreaseTimerAndLatchedDecreaseShareTheQpTimer) {
    dcqcn a = make({{"rp_rate_reduce_monitor_period", 400}, {"rp_threshold", 5}});
    cc_qp_state s;
    a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::CNP, 20 * US)).timer_at_ps, 310 * US);
    cc_decision d = a.on_event(s, ev(cc_event_kind::TIMER, 310 * US));
    EXPECT_EQ(*d.rate_mbps, 75025u);
    EXPECT_EQ(*d.timer_at_ps, 410 * US);
    d = a.on_event(s, ev(cc_event_kind::TIMER, 410 * US));
    uint32_t alpha = ((1023u * 1019u) >> 10) + 5u;  // [10,11): the first CNP
    for (int p = 11; p < 410; ++p) {                // [20,21) had the second CNP
        alpha = ((alpha * 1019u) >> 10) + (p == 20 ? 5u : 0u);
    }
    EXPECT_EQ(*d.alpha, alpha);
    EXPECT_EQ(*d.target_mbps, 75025u);
    EXPECT_EQ(*d.rate_mbps, std::max<uint64_t>(75025 - ((75025 * alpha) >> 11), 75025 / 2));
    EXPECT_EQ(*d.timer_at_ps, 710 * US);
}

// rp_min_dec_fac bounds one decrease: 80 % keeps 80000 of 100000 (the formula gives 50049).
TEST(Dcqcn, MinimumDecreaseFactor) {
    dcqcn a = make({{"rp_min_dec_fac", 80}});
    cc_qp_state s;
    EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::CNP, 10 * US)).rate_mbps, 80000u);
    dcqcn none = make({{"rp_min_dec_fac", 100}});  // 100: no decrease at all
    cc_qp_state s2;
    EXPECT_EQ(*none.on_event(s2, ev(cc_event_kind::CNP, 10 * US)).rate_mbps, LINE);
}

// rp_min_rate floors R_C: the second decrease would give 25294 (see above), the floor is 30000.
TEST(Dcqcn, MinRateFloor) {
    dcqcn a = make({{"rp_min_rate", 30000}});
    cc_qp_state s;
    EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::CNP, 10 * US)).rate_mbps, 50049u);
    a.on_event(s, ev(cc_event_kind::CNP, 12 * US));
    EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::CNP, 14 * US + US / 2)).rate_mbps, 30000u);
    // However many CNPs follow, never below.
    for (uint64_t t = 20; t < 200; t += 5) {
        EXPECT_GE(*a.on_event(s, ev(cc_event_kind::CNP, t * US)).rate_mbps, 30000u);
    }
}

// Fast recovery (rp_threshold 5: five timer events, stages 0..4 when they fire):
// R_C <- ceil((R_C+R_T)/2) with R_T = line, from 50049: 75025, 87513, 93757, 96879, 98440; the
// timer re-arms every 300 us. The sixth (stage 5 = F) is additive: R_T 100000 + 5, clamped to
// the line, R_C ceil((98440 + 100000) / 2) = 99220. (Before 2026-11-26 the stage counted before
// the check: 4 fast-recovery steps for F = 5, none for the default F = 1.)
TEST(Dcqcn, FastRecoveryByTimer) {
    dcqcn a = make({{"rp_threshold", 5}, {"rp_ai_rate", 5}});
    cc_qp_state s;
    a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    const uint64_t want[] = {75025, 87513, 93757, 96879, 98440, 99220};
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
// 40000, the sixth (stage 5 = F) makes it 40005 and R_C ceil((40000 + 40005) / 2) = 40003. The
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
        EXPECT_EQ(*d.rate_mbps, 40003u) << "F " << f;
    }
}

// Additive and hyper increase through the timer and the byte counter (rp_threshold 1,
// rp_byte_reset 1000, rp_rate_to_set_on_first_cnp 40000: R_C = R_T = 40000, no decrease). The
// stages T, BC as the event finds them (its own counts after it):
//   1000 B sent:  T0 B0 -> fast recovery: R_C ceil((40000+40000)/2) = 40000, R_T 40000
//   timer:        T0 B1 -> max 1 >= F, min 0 <= F: additive: R_T 40005, R_C ceil(80005/2) = 40003
//   1000 B sent:  T1 B1 -> additive: R_T 40010, R_C ceil((40003+40010)/2) = 40007
//   timer:        T1 B2 -> additive: R_T 40015, R_C ceil((40007+40015)/2) = 40011
//   1000 B sent:  T2 B2 -> min(T,B) 2 > 1 -> hyper: R_T 40065, R_C ceil((40011+40065)/2) = 40038
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
    EXPECT_EQ(*d.rate_mbps, 40003u);
    d = a.on_event(s, ev(cc_event_kind::SENT, 311 * US, 1000));
    EXPECT_EQ(*d.target_mbps, 40010u);
    EXPECT_EQ(*d.rate_mbps, 40007u);
    d = a.on_event(s, ev(cc_event_kind::TIMER, 610 * US));
    EXPECT_EQ(*d.target_mbps, 40015u);
    EXPECT_EQ(*d.rate_mbps, 40011u);
    d = a.on_event(s, ev(cc_event_kind::SENT, 611 * US, 1000));
    EXPECT_EQ(*d.target_mbps, 40065u);
    EXPECT_EQ(*d.rate_mbps, 40038u);
}

// Target clamping: with rp_clamp_tgt_rate_ati 1, a decrease after a timer increase sets
// R_T = R_C; with 0 (and rp_clamp_tgt_rate 0) R_T stays. Timer at 310 us: R_C 75025 (additive,
// R_T clamped at line). CNP at 311 us: R_T <- 75025 (ati 1) or 100000 (ati 0).
TEST(Dcqcn, TargetClamping) {
    for (int ati = 0; ati <= 1; ++ati) {
        dcqcn a = make({{"rp_clamp_tgt_rate_ati", ati}});
        cc_qp_state s;
        a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
        EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::TIMER, 310 * US)).rate_mbps, 75025u);
        const cc_decision d = a.on_event(s, ev(cc_event_kind::CNP, 311 * US));
        EXPECT_EQ(*d.target_mbps, ati == 1 ? 75025u : LINE) << "ati " << ati;
        // Alpha after 301 periods, recomputed here: one CNP period, then 300 of decay.
        uint32_t alpha = ((1023u * 1019u) >> 10) + 5u;
        for (int i = 0; i < 300; ++i) {
            alpha = (alpha * 1019u) >> 10;
        }
        EXPECT_EQ(*d.alpha, alpha);
        const uint64_t rc = 75025;
        EXPECT_EQ(*d.rate_mbps, std::max(rc - ((rc * alpha) >> 11), rc / 2));
    }
    // rp_clamp_tgt_rate 1: every decrease clamps.
    dcqcn c = make({{"rp_clamp_tgt_rate", 1}, {"rp_clamp_tgt_rate_ati", 0}});
    cc_qp_state s;
    c.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    EXPECT_EQ(*c.on_event(s, ev(cc_event_kind::CNP, 15 * US)).target_mbps, 50049u);
}

// The rate never exceeds the line rate: recovery reaches it, then the QP leaves the limiter
// (rate 0 = not paced) and its timer stops; a later CNP starts over from line rate.
TEST(Dcqcn, LineRateCeilingEndsLimiting) {
    dcqcn a = make({{"rp_threshold", 31}});
    cc_qp_state s;
    a.on_event(s, ev(cc_event_kind::CNP, 10 * US));
    uint64_t want = 50049;
    uint64_t t = 10 * US;
    for (int i = 0; i < 40 && want < LINE; ++i) {
        want = (want + LINE + 1) / 2;  // independent: ceil of the halfway point
        t += 300 * US;
        const cc_decision d = a.on_event(s, ev(cc_event_kind::TIMER, t));
        ASSERT_LE(s.rate_mbps, LINE);
        if (want >= LINE) {
            EXPECT_EQ(*d.rate_mbps, 0u);
            EXPECT_EQ(*d.timer_at_ps, 0u);
        } else {
            EXPECT_EQ(*d.rate_mbps, want);
        }
    }
    EXPECT_EQ(want, LINE);
    EXPECT_FALSE(a.wants_sent(s));
    EXPECT_EQ(*a.on_event(s, ev(cc_event_kind::CNP, t + US)).rate_mbps, 50049u);
}

// Every documented default, and the NP parameters the algorithm hands to the receive path.
TEST(Dcqcn, DefaultsAndNotificationPointParameters) {
    const dcqcn_config c;
    EXPECT_EQ(c.rp_time_reset, 300u);
    EXPECT_EQ(c.rp_byte_reset, 32767u);
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
    EXPECT_EQ(config_error({{"cc", {{"algorithm", "hpcc"}}}}),
              "rnic.cc.algorithm: \"hpcc\" is not one of \"none\", \"dcqcn\", \"timely\"");
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
