// SPDX-License-Identifier: Apache-2.0
// RC loss recovery of long messages (issue 18: "RC recovery at scale"). Long messages at a small
// path MTU under loss make progress through sequence NAKs, one gap at a time, long before the
// message is acknowledged. Each test below failed before its fix:
//  - A sequence NAK whose PSN is beyond the last one acknowledged acknowledges the packets
//    before it: forward progress (IBA 9.7.5.1.3 / 9.7.6.1.2), so the retransmission timer and
//    the retry budget start over. Before, only an ACK that completed a message did, and a long
//    message repaired by NAKs spent its retry budget over its lifetime ("retry exceeded").
//  - Every sequence NAK is answered by a resend from its PSN. Before, a NAK that arrived while
//    go-back-N resends of the QP were still queued was ignored, even when those resends began
//    after its PSN (the message holding it had already gone to the send path and lost a packet
//    again), and the requester waited for the timer.
//  - A message longer on the wire than the local ACK timeout completes. Its only AckReq is on
//    its last packet (the send path's contract), so no response can come before that packet
//    is sent: the timer starts when it is handed to the send path (and again after each
//    resend), not when the WQE is processed. Before, a 1 MiB WRITE at MTU 256 (84 us on the
//    wire) failed on a perfect link with a 16 us timeout ("retry exceeded").
// The recovery counters (stats.json: recovery_*, retransmitted_*, recovery_by_qp) are checked
// against the wire.
//
// One elaboration per process: ctest runs each TEST as its own process.
#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/system/transport_bench.h"

namespace rnic::transport_test {
namespace {

// Both nodes at a 256 B path MTU: a 64 KiB message is 256 packets.
json small_mtu() {
    return {{"topology", {{"nodes", json::array({{{"mtu", 256}}, {{"mtu", 256}}})}}}};
}

// Only WRITE Middle packets are lost (254 of the 256 packets of a 64 KiB message), so every
// sequence NAK and ACK reaches the requester.
json requests_dropped(double drop, uint64_t seed) {
    return {{"drop", drop}, {"opcode", roce::RC_WRITE_MIDDLE}, {"seed", seed}};
}

// --- a NAK beyond the last acknowledged PSN is forward progress -------------------------------

// 64 KiB WRITEs of 256 packets, 3 % of them lost: each message needs about eight NAK-driven
// resends, ~70 us in all, while the local ACK timeout is 16.4 us (timeout_log 2) and the retry
// budget one. Every NAK acknowledges more than before, so the timer and the budget start over
// and the run completes; counting only message completions as progress, the timer expired twice
// within the first message and the QP failed with "retry exceeded".
TEST(TransportRecovery, NakProgressRestartsTimerAndRetryBudget) {
    json w = {{"operation", "write"}, {"message_bytes", 65536},
              {"messages", 8},        {"qps", 1},
              {"queue_depth", 2},     {"seed", 3},
              {"timeout_log", 2},     {"retry_count", 1},
              {"time_limit_ms", 1000}};
    const scenario::scenario_config cfg =
        scenario::parse_scenario(scenario_doc(w, requests_dropped(0.03, 21), small_mtu()));
    const scenario::run_result r = scenario::run_scenario(cfg);
    expect_clean_run(r, cfg.workload);
    const uint64_t naks = counter(r, "node0.nic.tx_engine", "nak_sequence");
    // Far more NAK episodes than the budget allows timeouts: the budget was restored by them.
    EXPECT_GT(naks, 8u * (cfg.workload.retry_count + 1));
    EXPECT_EQ(counter(r, "node0.nic.tx_engine", "retry_exceeded"), 0u);
    // Only requests are lost, so NAKs do the repairing; the timer fires only when a resent
    // packet at the NAKed PSN is lost too (the responder NAKs a gap once), a small fraction.
    const uint64_t timeouts = counter(r, "node0.nic.tx_engine", "timeouts");
    EXPECT_LT(timeouts * 10, naks) << timeouts << " timeouts for " << naks << " NAKs";
    // Every episode ended, and the per-QP breakdown (one QP: node 0's QP 2) adds up to the total.
    const uint64_t started = counter(r, "node0.nic.tx_engine", "recovery_nak_episodes") +
                             counter(r, "node0.nic.tx_engine", "recovery_timeout_episodes");
    EXPECT_EQ(counter(r, "node0.nic.tx_engine", "recovery_nak_episodes"), naks);
    EXPECT_EQ(started, counter(r, "node0.nic.tx_engine", "recovered_by_nak") +
                           counter(r, "node0.nic.tx_engine", "recovered_by_timeout"));
    EXPECT_EQ(counter(r, "node0.nic.tx_engine", "recovery_failed"), 0u);
    const json& by_qp = r.blocks["node0.nic.tx_engine"]["recovery_by_qp"];
    ASSERT_EQ(by_qp.size(), 1u) << by_qp.dump();
    const json& q = by_qp.begin().value();
    EXPECT_EQ(q["nak_episodes"].get<uint64_t>(), naks);
    EXPECT_EQ(q["timeouts"].get<uint64_t>(), timeouts);
    EXPECT_EQ(q["retransmitted_packets"].get<uint64_t>(),
              counter(r, "node0.nic.tx_engine", "retransmitted_packets"));
    EXPECT_EQ(counter(r, "node0.nic.tx_engine", "retransmitted_bytes"),
              counter(r, "node0.nic.tx_engine", "retransmitted_packets") * 256);
}

// --- the timer covers the response, not the transmission ----------------------------------------

// Four 1 MiB WRITEs (4096 packets each at MTU 256, 84 us on the wire), two in flight, a local
// ACK timeout of 16.4 us (timeout_log 2) and one retry, on a perfect link: no timer expires.
TEST(TransportRecovery, MessageLongerThanTheTimeoutCompletes) {
    json w = {{"operation", "write"}, {"message_bytes", 1048576},
              {"messages", 4},        {"qps", 1},
              {"queue_depth", 2},     {"seed", 3},
              {"timeout_log", 2},     {"retry_count", 1},
              {"time_limit_ms", 1000}};
    const scenario::scenario_config cfg =
        scenario::parse_scenario(scenario_doc(w, json::object(), small_mtu()));
    const scenario::run_result r = scenario::run_scenario(cfg);
    expect_clean_run(r, cfg.workload);
    EXPECT_EQ(counter(r, "node0.nic.tx_engine", "timeouts"), 0u);
    EXPECT_EQ(counter(r, "node0.nic.tx_engine", "retransmitted_packets"), 0u);
    // Every request packet went once: 4 x 4096.
    EXPECT_EQ(counter(r, "node0.nic.send_path", "packets"), 4u * 4096u);
}

// --- every sequence NAK is answered by a resend from its PSN ------------------------------------

// Four 64 KiB WRITEs in flight on one QP, 2 % of the requests lost, the default 67 ms timer. For
// every sequence NAK node 1 sends, node 0 must put the NAKed PSN on the wire again soon after
// the NAK arrives (a whole-message resend reaches it within a few message times), never only
// at the timer.
TEST(TransportRecovery, EverySequenceNakIsAnsweredByAResend) {
    two_node_bench b(scenario_doc(json::object(), requests_dropped(0.02, 5), small_mtu()));
    consumer c0(b, 0);
    consumer c1(b, 1);
    constexpr size_t LEN = 65536;
    constexpr int MESSAGES = 12;
    std::vector<NDK_RESULT_EX> got;
    buffer src, dst;
    NDK_QP* q1 = nullptr;
    const bool finished = b.run([&] {
        c0.open(c0.params());
        c1.open(c1.params());
        NDK_QP* q0 = c0.create_qp(100);
        q1 = c1.create_qp(101);
        ASSERT_NE(q0, nullptr);
        ASSERT_NE(q1, nullptr);
        consumer::connect_pair(c0, q0, c1, q1);
        src = c0.make_buffer(LEN * MESSAGES, NDK_MR_FLAG_ALLOW_LOCAL_READ);
        for (size_t i = 0; i < LEN * MESSAGES; ++i) {
            src.data[i] = static_cast<uint8_t>(i * 7 + i / 4093);
        }
        dst = c1.make_buffer(LEN * MESSAGES,
                             NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
        int posted = 0;
        while (got.size() < static_cast<size_t>(MESSAGES)) {
            while (posted < MESSAGES && posted - static_cast<int>(got.size()) < 4) {
                NDK_SGE sg = sge_of(src, posted * LEN, LEN);
                ASSERT_EQ(q0->Dispatch->NdkWrite(q0, reinterpret_cast<PVOID>(posted + 1), &sg, 1,
                                                 dst.va(posted * LEN), dst.token, 0),
                          STATUS_SUCCESS);
                ++posted;
            }
            for (const auto& r : c0.reap(1, 2e8)) {
                got.push_back(r);
            }
        }
        wait_ns(200000);  // resends still queued when the last ACK came go out (duplicates)
    });
    // (Ignoring a NAK leaves the repair to the 67 ms timer: the WRITEs do not finish in time.)
    EXPECT_TRUE(finished) << "the WRITEs did not complete within 2 s of simulated time";
    ASSERT_NE(q1, nullptr);
    EXPECT_EQ(got.size(), static_cast<size_t>(MESSAGES));
    for (const auto& r : got) {
        EXPECT_EQ(static_cast<uint32_t>(r.Status), 0u);
    }
    if (finished) {
        EXPECT_EQ(std::memcmp(src.data, dst.data, LEN * MESSAGES), 0) << "data differs";
    }
    ASSERT_EQ(ndk::get_qp_number(q1), 2u);

    // The NAKs node 1 sent (none is lost: only WRITE Middle packets are dropped), and when node 0
    // sent each PSN.
    std::map<uint32_t, std::vector<sc_core::sc_time>> sent_at;
    for (const auto& f : b.frames) {
        if (f.side == 0 && f.parsed && f.dest_qp == 2 && f.opcode <= roce::RC_WRITE_ONLY_IMM) {
            sent_at[f.psn].push_back(f.at);
        }
    }
    size_t naks = 0;
    for (const auto& f : b.sent(1, roce::RC_ACK)) {
        if (f.syndrome != roce::AETH_NAK_PSN_SEQ_ERROR) {
            continue;
        }
        ++naks;
        // The NAK arrives within a few us; the resend holding its PSN follows within a few
        // message times (a 256-packet message is 6.7 us on the wire). The timer is 67 ms.
        const sc_core::sc_time limit = f.at + sc_core::sc_time(100, sc_core::SC_US);
        const auto& times = sent_at[f.psn];
        const bool resent = std::any_of(times.begin(), times.end(), [&](const sc_core::sc_time& t) {
            return t > f.at && t <= limit;
        });
        EXPECT_TRUE(resent) << "PSN " << f.psn << " NAKed at " << f.at
                            << " was not sent again within 100 us";
    }
    EXPECT_GT(naks, 10u);
    EXPECT_EQ(
        b.stat("node0.nic.tx_engine", "nak_sequence") + b.stat("node0.nic.tx_engine", "stale_naks"),
        naks);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "retry_exceeded"), 0u);
    // The retransmission counters, from the wire: every request packet beyond the first copy of
    // each PSN is a retransmission (256 payload bytes each).
    uint64_t copies = 0;
    for (const auto& [psn, times] : sent_at) {
        copies += times.size() - 1;
    }
    if (finished) {
        EXPECT_EQ(sent_at.size(), static_cast<size_t>(MESSAGES) * (LEN / 256));
    }
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "retransmitted_packets"), copies);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "retransmitted_bytes"), copies * 256);
    EXPECT_GT(copies, 0u);
}

}  // namespace
}  // namespace rnic::transport_test
