// SPDX-License-Identifier: Apache-2.0
// Same-cycle arbitration (hw/common/timestep_arbiter): requests of one clock edge are granted
// by priority, then requesting process name, whatever delta cycle or process order they were
// made in; requests between edges are sampled at the next edge; `hold` returns at edge + hold;
// nothing is left running once the requests are served; a lone request at a settled instant is
// granted without a delta cycle; settle_instant() lets a reader see
// what other processes write at the same instant, one settled reader at a time.
#include "hw/common/timestep_arbiter.h"

#include <string>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

#include "hw/common/clock_domain.h"

namespace {

using rnic::hw::clock_domain;
using rnic::hw::settle_instant;
using rnic::hw::timestep_arbiter;
using sc_core::SC_NS;
using sc_core::sc_time;

// A one-request-per-cycle port in front of the arbiter, as context_cache and translation use it.
struct port {
    const clock_domain& clk;
    timestep_arbiter arb;
    sc_time free = sc_core::SC_ZERO_TIME;
    std::vector<std::string> grants;  // "<who>@<start ns>", in grant order
    explicit port(const clock_domain& c)
        : clk(c)
        , arb(c) {}

    // From a thread: asks for the port; returns the cycle granted.
    sc_time use(const std::string& who, uint32_t priority, sc_time hold = sc_core::SC_ZERO_TIME) {
        sc_time start;
        arb.request(
            priority,
            [&] {
                start = std::max(sc_core::sc_time_stamp(), free);
                free = start + clk.period();
                grants.push_back(who + "@" + std::to_string(start.to_seconds() * 1e9));
            },
            hold);
        return start;
    }
};

std::string at(const char* who, double ns) {
    return std::string(who) + "@" + std::to_string(ns);
}

// Spawns a requester that waits until `t`, then `deltas` delta cycles, then asks.
void requester(port& p, const char* name, sc_time t, int deltas, uint32_t priority,
               std::vector<sc_time>* returned = nullptr, sc_time hold = sc_core::SC_ZERO_TIME) {
    sc_core::sc_spawn(
        [&p, name, t, deltas, priority, returned, hold] {
            sc_core::wait(t);
            for (int i = 0; i < deltas; ++i) {
                sc_core::wait(sc_core::SC_ZERO_TIME);
            }
            const sc_time start = p.use(name, priority, hold);
            if (returned != nullptr) {
                returned->push_back(sc_core::sc_time_stamp());
                returned->push_back(start);
            }
        },
        name);
}

TEST(TimestepArbiter, SameEdgeGrantedByPriorityWhateverTheDeltaOrProcessOrder) {
    const clock_domain clk("nic", 500);  // 2 ns
    port a(clk);
    port b(clk);
    // Edge 10 ns on port a: the lowest priority asks first (delta 0), the highest last
    // (delta 3), the middle one in between.
    requester(a, "a_low", sc_time(10, SC_NS), 0, 3);
    requester(a, "a_high", sc_time(10, SC_NS), 3, 0);
    requester(a, "a_mid", sc_time(10, SC_NS), 1, 1);
    // The same on port b, spawned in the opposite order and with the deltas swapped.
    requester(b, "b_mid", sc_time(10, SC_NS), 2, 1);
    requester(b, "b_high", sc_time(10, SC_NS), 0, 0);
    requester(b, "b_low", sc_time(10, SC_NS), 3, 3);
    sc_core::sc_start();
    EXPECT_EQ(a.grants,
              (std::vector<std::string>{at("a_high", 10), at("a_mid", 12), at("a_low", 14)}));
    EXPECT_EQ(b.grants,
              (std::vector<std::string>{at("b_high", 10), at("b_mid", 12), at("b_low", 14)}));
    EXPECT_EQ(a.arb.requests(), 3u);
    EXPECT_EQ(a.arb.rounds(), 1u);  // one edge: one round, however many deltas it spanned
    EXPECT_EQ(a.arb.contended_rounds(), 1u);
    // Served, nothing left scheduled: an idle arbiter costs nothing.
    EXPECT_FALSE(sc_core::sc_pending_activity());
}

TEST(TimestepArbiter, TiesGoByProcessNameAndLaterEdgesComeAfter) {
    const clock_domain clk("nic", 500);
    port p(clk);
    // Equal priority: by hierarchical process name, not by who ran first.
    requester(p, "zeta", sc_time(20, SC_NS), 0, 2);
    requester(p, "alpha", sc_time(20, SC_NS), 2, 2);
    requester(p, "mid", sc_time(20, SC_NS), 1, 2);
    // A higher priority request at the next edge does not overtake the requests of this one
    // still waiting for the port: they were granted their cycles at 20 ns.
    requester(p, "late_high", sc_time(22, SC_NS), 0, 0);
    sc_core::sc_start();
    EXPECT_EQ(p.grants, (std::vector<std::string>{at("alpha", 20), at("mid", 22), at("zeta", 24),
                                                  at("late_high", 26)}));
    EXPECT_EQ(p.arb.rounds(), 2u);
    EXPECT_EQ(p.arb.contended_rounds(), 1u);
}

TEST(TimestepArbiter, BetweenEdgesSampledAtTheNextEdgeAndHoldReturnsAfterIt) {
    const clock_domain clk("nic", 500);
    port p(clk);
    std::vector<sc_time> early;
    std::vector<sc_time> on_edge;
    std::vector<sc_time> held;
    // Asks at 29.5 ns, between edges: sampled with the requests of 30 ns, where its higher
    // priority wins over the one that asked on the edge.
    requester(p, "early", sc_time(29500, sc_core::SC_PS), 0, 0, &early);
    requester(p, "on_edge", sc_time(30, SC_NS), 0, 1, &on_edge);
    // Hold 4 ns (a pipeline latency it waits anyway): returns at 34 ns, once, with its grant.
    requester(p, "held", sc_time(30, SC_NS), 0, 2, &held, sc_time(4, SC_NS));
    sc_core::sc_start();
    EXPECT_EQ(p.grants,
              (std::vector<std::string>{at("early", 30), at("on_edge", 32), at("held", 34)}));
    ASSERT_EQ(early.size(), 2u);
    EXPECT_EQ(early[0], sc_time(30, SC_NS));  // returned at the grant, zero time after the edge
    EXPECT_EQ(early[1], sc_time(30, SC_NS));
    ASSERT_EQ(on_edge.size(), 2u);
    EXPECT_EQ(on_edge[0], sc_time(30, SC_NS));
    EXPECT_EQ(on_edge[1], sc_time(32, SC_NS));  // the port's next cycle
    ASSERT_EQ(held.size(), 2u);
    EXPECT_EQ(held[0], sc_time(34, SC_NS));
    EXPECT_EQ(held[1], sc_time(34, SC_NS));
    EXPECT_EQ(sc_core::sc_time_stamp(), sc_time(34, SC_NS));
}

TEST(TimestepArbiter, LoneRequestAtASettledInstantIsGrantedWithoutADeltaCycle) {
    const clock_domain clk("nic", 500);
    port p(clk);
    sc_core::sc_event woken;
    uint64_t deltas_before = 0;
    uint64_t deltas_after = 0;
    sc_time lone_start;
    sc_time late_start;
    // Alone at 30 ns (nothing else runnable or pending): a round of its own, served at once.
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(sc_time(30, SC_NS));
            deltas_before = sc_core::sc_delta_count();
            lone_start = p.use("lone", 1);
            deltas_after = sc_core::sc_delta_count();
            woken.notify();  // wakes a requester of higher priority at the same instant
        },
        "lone");
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(woken);
            late_start = p.use("late", 0);
        },
        "late");
    sc_core::sc_start();
    EXPECT_EQ(lone_start, sc_time(30, SC_NS));
    EXPECT_EQ(deltas_after, deltas_before);  // no delta cycle, no process switch
    // Asked after the lone grant (it could not have asked before: it was woken by it): the
    // port's next cycle, whatever its priority, as when the lone request waited for its round.
    EXPECT_EQ(late_start, sc_time(32, SC_NS));
    EXPECT_EQ(p.grants, (std::vector<std::string>{at("lone", 30), at("late", 32)}));
    EXPECT_EQ(p.arb.rounds(), 2u);
    EXPECT_EQ(p.arb.requests(), 2u);
}

// post(): the request joins its edge's round as request() would (by priority, then name), but
// the requester goes on at once: it sees the request not yet served, does its other waiting
// (here until 50 ns), and wait_granted() then returns at once with the grant of 40 ns. A
// requester that calls wait_granted() right away returns at the grant, at the edge.
TEST(TimestepArbiter, PostedRequestIsGrantedInItsRoundWhileTheRequesterGoesOn) {
    const clock_domain clk("nic", 500);
    port p(clk);
    requester(p, "a_req", sc_time(40, SC_NS), 1, 1);
    requester(p, "c_high", sc_time(40, SC_NS), 2, 0);
    bool served_on_return = true;
    sc_time b_start;
    sc_time b_granted_at;
    sc_time d_start;
    sc_time d_granted_at;
    auto grant = [&p, &clk](const std::string& who, sc_time& start) {
        start = std::max(sc_core::sc_time_stamp(), p.free);
        p.free = start + clk.period();
        p.grants.push_back(who + "@" + std::to_string(start.to_seconds() * 1e9));
    };
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(sc_time(39500, sc_core::SC_PS));  // between edges: posted at 40 ns
            auto serve = [&] { grant("b_post", b_start); };
            timestep_arbiter::ticket t;
            p.arb.post(1, serve, t);
            served_on_return = t.served;
            EXPECT_EQ(sc_core::sc_time_stamp(), sc_time(40, SC_NS));
            sc_core::wait(sc_time(10, SC_NS));  // the requester's other waiting
            p.arb.wait_granted(t);
            b_granted_at = sc_core::sc_time_stamp();
        },
        "b_post");
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(sc_time(40, SC_NS));
            auto serve = [&] { grant("d_post", d_start); };
            timestep_arbiter::ticket t;
            p.arb.post(1, serve, t);
            p.arb.wait_granted(t);
            d_granted_at = sc_core::sc_time_stamp();
        },
        "d_post");
    sc_core::sc_start();
    EXPECT_FALSE(served_on_return);
    EXPECT_EQ(p.grants, (std::vector<std::string>{at("c_high", 40), at("a_req", 42),
                                                  at("b_post", 44), at("d_post", 46)}));
    EXPECT_EQ(b_start, sc_time(44, SC_NS));
    EXPECT_EQ(b_granted_at, sc_time(50, SC_NS));  // no later than its own waiting
    EXPECT_EQ(d_start, sc_time(46, SC_NS));
    EXPECT_EQ(d_granted_at, sc_time(40, SC_NS));  // the round at the edge
    EXPECT_EQ(p.arb.rounds(), 1u);
    EXPECT_EQ(p.arb.contended_rounds(), 1u);
}

// settle_instant() tests: a DMA write landing at 40 ns three delta cycles into the instant,
// and a CPU thread resuming at 40 ns that reads it once the instant has settled (each appends
// to `log`, so the order they ran in shows).
void spawn_landing(int& memory, std::vector<std::string>& log) {
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(sc_time(40, SC_NS));
            for (int i = 0; i < 3; ++i) {
                sc_core::wait(sc_core::SC_ZERO_TIME);
            }
            memory = 7;
            log.push_back("write");
        },
        "landing");
}

void spawn_reader(const char* name, const int& memory, std::vector<std::string>& log) {
    sc_core::sc_spawn(
        [&, name] {
            sc_core::wait(sc_time(40, SC_NS));
            settle_instant();
            log.push_back(std::string(name) + " saw " + std::to_string(memory) + " after " +
                          std::to_string(log.size()));
            EXPECT_EQ(sc_core::sc_time_stamp(), sc_time(40, SC_NS));  // zero time
        },
        name);
}

TEST(TimestepArbiter, SettleInstantSeesWritesOfTheSameInstantOneReaderAtATime) {
    // A DMA write landing at 40 ns a few delta cycles into the instant, and two CPU threads
    // resuming at 40 ns that read it: without settle_instant() what they see depends on the
    // order SystemC runs them in. Each reader also appends to a shared log, so the order in
    // which the readers ran shows.
    int memory = 0;
    std::vector<std::string> log;
    spawn_landing(memory, log);
    for (const char* name : {"cpu_b", "cpu_a"}) {
        spawn_reader(name, memory, log);
    }
    sc_core::sc_start();
    EXPECT_EQ(log,
              (std::vector<std::string>{"write", "cpu_a saw 7 after 1", "cpu_b saw 7 after 2"}));
    EXPECT_FALSE(sc_core::sc_pending_activity());
}

TEST(TimestepArbiter, SettleInstantReleasesManyWaitersOfAnInstantOneAtATimeByName) {
    // Six readers resuming at one instant (started in reverse name order) and one that starts
    // to wait a few delta cycles later: each goes on alone, by name, and sees what every one
    // before it wrote at that instant (each reader writes as it goes on).
    std::vector<std::string> log;
    for (const char* name : {"r5", "r4", "r3", "r2", "r1", "r0"}) {
        sc_core::sc_spawn(
            [&, name] {
                sc_core::wait(sc_time(10, SC_NS));
                settle_instant();
                log.push_back(std::string(name) + "@" + std::to_string(log.size()));
                EXPECT_EQ(sc_core::sc_time_stamp(), sc_time(10, SC_NS));
            },
            name);
    }
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(sc_time(10, SC_NS));
            for (int i = 0; i < 3; ++i) {
                sc_core::wait(sc_core::SC_ZERO_TIME);
            }
            settle_instant();
            log.push_back("r2a@" + std::to_string(log.size()));
        },
        "r2a");
    sc_core::sc_start();
    EXPECT_EQ(log,
              (std::vector<std::string>{"r0@0", "r1@1", "r2@2", "r2a@3", "r3@4", "r4@5", "r5@6"}));
    EXPECT_FALSE(sc_core::sc_pending_activity());
}

// settle_ticket: a method process settles the instant as a settle_instant() thread does, in the
// same queue (by process name). The write lands three delta cycles into 40 ns; readers cpu_a
// and cpu_c are threads, cpu_b a method woken at 40 ns: each sees the write, one at a time in
// name order; the queued method is triggered only by its own release (not cpu_a's) and goes
// on then. At 60 ns, with nothing else running, the method's settled() is true at once (one
// activation, no queueing).
TEST(TimestepArbiter, SettleTicketQueuesAMethodWithTheThreadsByName) {
    int memory = 0;
    std::vector<std::string> log;
    spawn_landing(memory, log);
    for (const char* name : {"cpu_c", "cpu_a"}) {
        spawn_reader(name, memory, log);
    }
    rnic::hw::settle_ticket ticket;
    sc_core::sc_event wake;
    int activations = 0;
    bool queued_once = false;
    sc_core::sc_spawn_options o;
    o.spawn_method();
    o.dont_initialize();
    o.set_sensitivity(&wake);
    sc_core::sc_spawn(
        [&] {
            ++activations;
            if (!ticket.settled()) {
                queued_once = queued_once || ticket.queued();
                return;
            }
            log.push_back("cpu_b saw " + std::to_string(memory) + " after " +
                          std::to_string(log.size()) + " at " +
                          std::to_string(sc_core::sc_time_stamp().to_seconds() * 1e9));
        },
        "cpu_b", &o);
    sc_core::sc_spawn([&] {
        wake.notify(sc_time(40, SC_NS));
        sc_core::wait(sc_time(50, SC_NS));
        EXPECT_EQ(activations, 2);  // woken, its own release
        wake.notify(sc_time(10, SC_NS));
    });
    sc_core::sc_start();
    EXPECT_TRUE(queued_once);
    EXPECT_EQ(activations, 3);
    EXPECT_EQ(log, (std::vector<std::string>{
                       "write", "cpu_a saw 7 after 1", "cpu_b saw 7 after 2 at 40.000000",
                       "cpu_c saw 7 after 3", "cpu_b saw 7 after 4 at 60.000000"}));
    EXPECT_FALSE(sc_core::sc_pending_activity());
}

}  // namespace
