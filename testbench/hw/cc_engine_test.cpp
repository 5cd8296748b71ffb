// SPDX-License-Identifier: Apache-2.0
// The congestion-control engine's same-instant rules (hw/cc/README.md, Timing; issue 23): what
// reaches the engine at one instant is taken in one order whatever order SystemC runs the
// processes of that instant in (an order that differs between a single process and MPI ranks).
//  - An event and a QP's timer due at the same instant: the queued event first, then the timer.
//  - A packet the rate limiter hands on (SENT: byte counter) at the instant the engine writes a
//    decision: the packet counts first, the decision is computed after it.
// Each rule is checked with the other process running late in the instant (a few delta cycles
// after the engine woke), where a first-come order would take the two the other way round.
// The expected rates come from the DCQCN algorithm itself (plain C++, unit-tested by hand in
// testbench/unit/cc_test.cpp) fed the events in the rule's order; the test also checks that the
// other order gives another rate, so it can tell the two apart.
#include "hw/cc/cc_engine.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

#include "hw/cc/dcqcn.h"
#include "hw/common/clock_domain.h"
#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/tx_engine/pacer.h"

namespace {

using namespace rnic::hw;
using namespace rnic::hw::cc;
using sc_core::sc_time;

constexpr uint64_t LINE = 100'000;  // Mb/s
constexpr uint64_t US = 1'000'000;  // ps
constexpr uint32_t WIRE = 1100;     // bytes of the packet sent at the decision instant

dcqcn_config config() {
    dcqcn_config c;
    c.rp_byte_reset = 1024;               // one packet of WIRE bytes is a byte-counter increase
    c.rp_rate_reduce_monitor_period = 0;  // every CNP decreases at once
    c.rp_time_reset = 30;                 // us: the rate-increase timer
    c.rp_threshold = 5;                   // fast recovery for the whole test
    return c;
}

cc_event ev(cc_event_kind k, uint64_t t_ps, uint32_t bytes = 0) {
    cc_event e;
    e.kind = k;
    e.now_ps = t_ps;
    e.bytes = bytes;
    return e;
}

// The rate DCQCN arrives at for `events` (its pacer rate: 0 at line rate).
uint64_t rate_after(const std::vector<cc_event>& events) {
    cc_env env;
    env.line_rate_mbps = LINE;
    dcqcn a(config(), env);
    cc_qp_state s;
    uint64_t rate = 0;
    for (const cc_event& e : events) {
        const cc_decision d = a.on_event(s, e);
        if (d.rate_mbps) {
            rate = *d.rate_mbps;
        }
    }
    return rate;
}

// One NIC's engine, pacer and QP contexts (QPs 1 and 2 valid), 2 ns clock, no context cache.
struct bench {
    clock_domain clk{"nic", 500};
    sim_context sim;
    context_store contexts{4, 1, 1, 1, 1, 1};
    pacer pace{"nic.pacer", clk, 4, sim};
    cc_engine engine;
    bench()
        : engine("cc", make(), clk, contexts, pace, LINE, sim) {
        contexts.qp_slot(1)->valid = true;
        contexts.qp_slot(2)->valid = true;
    }
    static std::unique_ptr<cc_algorithm> make() {
        cc_env env;
        env.line_rate_mbps = LINE;
        return std::make_unique<dcqcn>(config(), env);
    }
    // When the engine acts on an event taken at edge t: EVENT_CYCLES later.
    uint64_t decided(uint64_t t_ps) const {
        return t_ps + cc_engine::EVENT_CYCLES * clk.period_ps();
    }
};

// Spawns a process that waits until `t_ps`, then `deltas` delta cycles, then calls `fn`.
template <class F>
void at(uint64_t t_ps, int deltas, const char* name, F fn) {
    sc_core::sc_spawn(
        [=] {
            sc_core::wait(sc_time(static_cast<double>(t_ps), sc_core::SC_PS));
            for (int i = 0; i < deltas; ++i) {
                sc_core::wait(sc_core::SC_ZERO_TIME);
            }
            fn();
        },
        name);
}

// QP 1's packet goes at the decision instant in the first delta cycle, QP 2's three delta cycles
// later (after the engine has resumed there): both count before the decision, as the rule says.
TEST(CcEngine, PacketSentAtTheDecisionInstantCountsBeforeTheDecision) {
    bench b;
    std::vector<uint64_t> second_at;
    for (uint32_t qpn : {1u, 2u}) {
        const uint64_t t0 = (95 + 5 * qpn) * US;  // first CNP: the QP becomes rate limited
        const uint64_t t1 = t0 + 10 * US;         // second CNP: its decrease meets the packet
        at(t0, 0, qpn == 1 ? "cnp1a" : "cnp2a", [&b, qpn] { b.engine.on_cnp(qpn); });
        at(t1, 0, qpn == 1 ? "cnp1b" : "cnp2b", [&b, qpn] { b.engine.on_cnp(qpn); });
        at(b.decided(t1), qpn == 1 ? 0 : 3, qpn == 1 ? "sent1" : "sent2",
           [&b, qpn] { b.engine.on_sent(qpn, 0, WIRE); });
        second_at.push_back(b.decided(t1));
    }
    // Until before the first rate-increase timer (rp_time_reset after QP 1's second decrease).
    sc_core::sc_start(sc_time(125, sc_core::SC_US));

    const uint64_t first = b.decided(100 * US);
    const uint64_t second = b.decided(110 * US);
    // Times relative to the first CNP are the same for both QPs (alpha counts from it).
    const uint64_t rule =
        rate_after({ev(cc_event_kind::CNP, first), ev(cc_event_kind::SENT, second, WIRE),
                    ev(cc_event_kind::CNP, second)});
    const uint64_t other =
        rate_after({ev(cc_event_kind::CNP, first), ev(cc_event_kind::CNP, second),
                    ev(cc_event_kind::SENT, second, WIRE)});
    ASSERT_NE(rule, other) << "the two orders give one rate: the test tells nothing";
    EXPECT_EQ(b.pace.rate(1), rule) << "QP 1 (packet in the decision's first delta cycle)";
    EXPECT_EQ(b.pace.rate(2), rule) << "QP 2 (packet three delta cycles into the decision's "
                                       "instant): the decision was written before it counted";
    EXPECT_EQ(b.engine.get_stats().sent_events, 2u);
    // The decisions were written where the test expects them (else it tests nothing).
    std::vector<uint64_t> rows;
    for (const auto& r : b.engine.rate_log()) {
        rows.push_back(r.time_ps);
    }
    for (uint64_t t : second_at) {
        EXPECT_NE(std::find(rows.begin(), rows.end(), t), rows.end())
            << "no decision at " << t << " ps";
    }
}

// A CNP that arrives at the instant the QP's rate-increase timer is due, three delta cycles
// after the engine woke for the timer: the CNP goes first (its decrease restarts the timer, so
// no timer event), as it would had it arrived first.
TEST(CcEngine, EventAndTimerAtOneInstantTakeTheEventFirst) {
    bench b;
    const uint64_t t0 = 10 * US;
    const uint64_t first = b.decided(t0);
    const uint64_t due = first + config().rp_time_reset * US;  // the timer the decrease set
    at(t0, 0, "cnp_first", [&b] { b.engine.on_cnp(1); });
    at(due, 3, "cnp_at_timer", [&b] { b.engine.on_cnp(1); });
    sc_core::sc_start(sc_time(due + 20 * US, sc_core::SC_PS));

    const uint64_t rule =
        rate_after({ev(cc_event_kind::CNP, first), ev(cc_event_kind::CNP, b.decided(due))});
    const uint64_t other =
        rate_after({ev(cc_event_kind::CNP, first), ev(cc_event_kind::TIMER, b.decided(due)),
                    ev(cc_event_kind::CNP, b.decided(b.decided(due)))});
    ASSERT_NE(rule, other) << "the two orders give one rate: the test tells nothing";
    EXPECT_EQ(b.pace.rate(1), rule);
    EXPECT_EQ(b.engine.get_stats().timer_events, 0u)
        << "the timer went first: the CNP's decrease restarts it";
    EXPECT_EQ(b.engine.get_stats().events, 2u);
}

}  // namespace
