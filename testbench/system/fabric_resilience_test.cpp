// SPDX-License-Identifier: Apache-2.0
// A fabric that fails like real ones and never loses data (issue 27): the NIC's PFC headroom in
// bytes, CM timers of real stacks, ECMP entropy per QP, clocks that drift, fatal errors.
// Expectations come from first principles (wire bytes per READ response at the line rate) and
// from PFC's promise (no frame dropped on a lossless port), not from the model's own helpers.
//
// One elaboration per process: ctest runs each TEST as its own process. Run the binary by hand
// with --gtest_filter=<one test>.
#include <cstdint>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"
#include "testbench/system/outputs_common.h"

namespace {

using nlohmann::json;
using rnic::scenario::run_result;
using namespace rnic::outputs_test;

run_result run(const json& doc) {
    const run_result r = rnic::scenario::run_scenario(rnic::scenario::parse_scenario(doc));
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    return r;
}

// Sum of counter `name` over every block that has it.
double total(const run_result& r, const std::string& name) {
    double s = 0;
    for (auto it = r.blocks.begin(); it != r.blocks.end(); ++it) {
        if (it.value().contains(name)) {
            s += it.value()[name].get<double>();
        }
    }
    return s;
}

// The reproduction: 8 clients READ 512 B from one server through a switch at 112 Gb/s,
// 2 QPs each, 256 READs outstanding per QP. The server's receive buffer takes the clients' READ
// requests (90 B frames) at up to the line rate while its parser takes one per few cycles.
// Counted in frames (64, XOFF at 48: 16 frames of headroom, fewer than a pause round trip of
// small frames) it dropped: 388 drops, 89 NAKs, 5 RC timeouts of 67 ms, 0.24 M READs/s. In
// bytes (the ConnectX port buffer, headroom from the cable) nothing is lost.
json small_reads(const json& recv_path = json::object()) {
    json doc = {
        {"topology",
         {{"star", {{"hosts", 9}}}, {"link", {{"rate_gbps", 112}, {"propagation_ns", 100}}}}},
        {"workload",
         {{"pattern", "incast"},
          {"receiver", 0},
          {"operation", "read"},
          {"message_bytes", 512},
          {"messages", 1000},
          {"qps", 2},
          {"queue_depth", 256},
          {"time_limit_ms", 2000}}}};
    if (!recv_path.empty()) {
        doc["rnic"] = {{"recv_path", recv_path}};
    }
    return doc;
}

void expect_lossless(const run_result& r) {
    ASSERT_TRUE(r.passed());
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_EQ(r.bytes_checked, 8u * 1000 * 512);
    // PFC's promise: no frame lost anywhere, so nothing to NAK or to time out.
    EXPECT_EQ(total(r, "lossless_drops"), 0);
    EXPECT_EQ(total(r, "fifo_drops"), 0);
    EXPECT_EQ(total(r, "drops"), 0);  // switch ports and queues
    EXPECT_EQ(total(r, "naks_sent"), 0);
    EXPECT_EQ(total(r, "timeouts"), 0);
    // The server's downlink carries the READ responses: 512 B + RoCE headers with AETH
    // (14 + 20 + 8 + 12 + 4 + ICRC 4) + FCS, preamble, IFG (24) = 598 B per response at
    // 112 Gb/s, 23.4 M/s. Without loss the run gets within a factor 2 of it.
    const double ideal_mpps = 112e3 / 8 / (512 + 62 + 24);
    EXPECT_GT(r.msg_rate_mpps, ideal_mpps / 2)
        << r.msg_rate_mpps << " M READs/s, the wire allows " << ideal_mpps;
}

TEST(FabricLossless, IncastOfSmallReadsLosesNothing) {
    expect_lossless(run(small_reads()));
}

// The same with a receive buffer just above its headroom (80000 B: XOFF at 10.8 kB, which the
// requests cross): the server pauses the switch, and the headroom computed from the cable, the
// rate, the largest frame and the response time holds what is on the way.
TEST(FabricLossless, TightBufferPausesAndLosesNothing) {
    const run_result r = run(small_reads({{"fifo_bytes", 80000}}));
    expect_lossless(r);
    const json stats = {{"blocks", r.blocks}};
    EXPECT_GT(block_counter(stats, "link0.dir0", "pfc_frames"), 0u)
        << "the server never paused the switch";
    EXPECT_LE(block_counter(stats, "node0.nic.recv_path", "fifo_peak_bytes"), 80000u);
}

// The counter can fail: a headroom forced below one round trip (1000 B) on a buffer of 6000 B
// (MTU 1024, so that two largest frames fit below XOFF) loses frames on the lossless port, and
// lossless_drops says so (RC repairs them).
TEST(FabricLossless, TooLittleHeadroomIsCounted) {
    json doc = small_reads({{"fifo_bytes", 6000}, {"pfc_headroom_bytes", 1000}});
    doc["rnic"]["limits"] = {{"max_mtu", 1024}};
    const run_result r = run(doc);
    EXPECT_GT(total(r, "lossless_drops"), 0);
    EXPECT_EQ(total(r, "lossless_drops"), total(r, "fifo_drops"));
    EXPECT_EQ(r.mismatches, 0u);
}

// CM timers of real stacks: 8 senders each WRITE one 8 MiB message to node 0 through a switch
// with a deep buffer (16 MiB, lossless, XOFF at 1 MiB per ingress) at 10 Gb/s; the queue toward
// node 0 holds about 8 MB, 6.7 ms at 10 Gb/s. A ninth sender's 64 KiB WRITE at 100 us and then
// its DREQ each wait behind it, longer than the former CM wait of 200 us x (4 retries + 1) =
// 1 ms. With Linux rdma_cm's timers (4.3 s, 15 retries) every disconnect completes.
json deep_queue() {
    json flows = json::array();
    for (int i = 1; i <= 8; ++i) {
        flows.push_back({{"src", i}, {"dst", 0}, {"bytes", 8 << 20}, {"start_ns", 0}});
    }
    flows.push_back({{"src", 9}, {"dst", 0}, {"bytes", 65536}, {"start_ns", 100000}});
    return {{"topology",
             {{"star", {{"hosts", 10}}},
              {"link", {{"rate_gbps", 10}, {"propagation_ns", 100}}},
              {"switch",
               {{"buffer_bytes", 16 << 20}, {"xoff_bytes", 1 << 20}, {"xon_bytes", 1 << 19}}}}},
            {"workload",
             {{"pattern", "flows"},
              {"flows", flows},
              {"operation", "write"},
              {"qps", 1},
              {"queue_depth", 1},
              {"time_limit_ms", 1000}}}};
}

TEST(FabricCm, DisconnectBehindADeepQueue) {
    const run_result r = run(deep_queue());
    ASSERT_TRUE(r.passed());
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_EQ(r.bytes_checked, 8u * (8 << 20) + 65536);
    // The receiver's downlink queue was deep: more than 1 ms of data at 10 Gb/s (1.25 MB).
    const json stats = {{"blocks", r.blocks}};
    EXPECT_GT(block_counter(stats, "sw0", "buffer_peak_bytes"), 1250000u);
    // Nothing was given up, and no REQ, REP or DREQ needed a resend.
    EXPECT_EQ(total(r, "cm_timeouts"), 0);
    EXPECT_EQ(total(r, "cm_retransmits"), 0);
}

// The failure the issue saw, with timers like the former ones (4.096 us x 2^6 = 262 us, 4
// retries: 1.3 ms): a DREQ behind the queue is given up, NdkDisconnect returns
// STATUS_IO_TIMEOUT although every flow completed.
TEST(FabricCm, MillisecondTimersGiveUpBehindADeepQueue) {
    json doc = deep_queue();
    doc["host"] = {{"cm_response_timeout_log", 6}, {"cm_retries", 4}};
    const rnic::scenario::run_result r =
        rnic::scenario::run_scenario(rnic::scenario::parse_scenario(doc));
    EXPECT_FALSE(r.passed());
    EXPECT_EQ(r.mismatches, 0u);
    bool timed_out = false;
    for (const auto& f : r.failures) {
        timed_out = timed_out || f.find("NdkDisconnect returned 0xc00000b5") != std::string::npos;
    }
    EXPECT_TRUE(timed_out) << "expected a DREQ given up (STATUS_IO_TIMEOUT)";
    EXPECT_GT(total(r, "cm_timeouts"), 0);
}

// ECMP entropy per QP: 4 leaves x 4 spines, one host per leaf, the ring of pairs 0->1, 1->2,
// 2->3, 3->0, 8 QPs per pair, 8 WRITEs of 8 KiB per QP. Each leaf's uplinks then carry its own
// host's WRITEs (and the reverse pair's ACKs, a few kB), so the spines a pair's 8 QPs take are
// the uplinks of its source leaf that carried at least one QP's 64 KiB. If the 8 QPs spread as 8
// separate flows do (each on a spine drawn uniformly from S = 4 by the switches' hash), the number
// D of spines a pair uses has P(D = 1) = 4 x 4^-8 = 6.1e-5, P(D = 2) = 6 x (2^8 - 2) / 4^8 = 0.023,
// P(D = 3) = 4 x (3^8 - 3 x 2^8 + 3) / 4^8 = 0.354, P(D = 4) = 0.623: E[D] = 3.60, sd 0.54.
// Bounds: every pair on at least 2 spines (false alarm 4 x 6.1e-5) and the four pairs on at
// least 11 spines in all (mean 14.4, sd 1.08: 3 sd). The former rule (0xC000 | fold(src ^
// dst)) gives the 8 QPs of a pair one UDP port, so D = 1 for every pair.
TEST(FabricEcmp, EightQpsPerPairSpreadOverTheSpines) {
    constexpr uint32_t LEAVES = 4;
    constexpr uint32_t SPINES = 4;
    constexpr uint64_t MESSAGE = 8192;
    constexpr uint64_t PER_QP = 8;  // messages per QP: 64 KiB, one QP's share of a spine
    json pairs = json::array();
    for (uint32_t h = 0; h < LEAVES; ++h) {
        pairs.push_back({h, (h + 1) % LEAVES});
    }
    const json doc = {
        {"topology",
         {{"leaf_spine", {{"leaves", LEAVES}, {"spines", SPINES}, {"hosts_per_leaf", 1}}},
          {"link", {{"rate_gbps", 100}, {"propagation_ns", 100}}}}},
        {"workload",
         {{"pattern", "pairs"},
          {"pairs", pairs},
          {"operation", "write"},
          {"message_bytes", MESSAGE},
          {"messages", 8 * PER_QP},
          {"qps", 8},
          {"queue_depth", 4},
          {"time_limit_ms", 1000}}}};
    const run_result r = run(doc);
    ASSERT_TRUE(r.passed());
    EXPECT_EQ(r.mismatches, 0u);
    const json stats = {{"blocks", r.blocks}};
    uint32_t all = 0;
    for (uint32_t l = 0; l < LEAVES; ++l) {
        uint32_t used = 0;
        uint64_t bytes = 0;
        for (uint32_t s = 0; s < SPINES; ++s) {
            const std::string port = "leaf" + std::to_string(l) + ".port" + std::to_string(1 + s);
            const uint64_t b = block_counter(stats, port, "tx_bytes");
            bytes += b;
            used += b >= PER_QP * MESSAGE ? 1 : 0;  // at least one QP's data went this way
        }
        EXPECT_GE(bytes, 8 * PER_QP * MESSAGE) << "leaf" << l;
        EXPECT_GE(used, 2u) << "pair " << l << " -> " << (l + 1) % LEAVES << " took one spine";
        all += used;
    }
    EXPECT_GE(all, 11u) << "spines used by the 4 pairs of 8 QPs";
}

// A NIC fatal error ends the run: the quickstart with every NIC failing at 20 us (mid-transfer:
// the first WRITE completes after about 10 us). The NIC moves every QP to ERROR and kills every
// CQ (EVENT_DEVICE_FATAL); the consumer's CQs report STATUS_INTERNAL_ERROR, nothing more can
// complete, and the run ends there, naming it, instead of at the 10 s time limit with only
// "workload did not finish".
TEST(FabricFatal, NicFatalErrorEndsTheRun) {
    const rnic::scenario::scenario_config cfg = rnic::scenario::load_scenario(
        quickstart(), {"rnic.faults.fatal_error_at_ns=20000", "workload.messages=200"});
    const run_result r = rnic::scenario::run_scenario(cfg);
    ASSERT_FALSE(r.passed());
    bool named = false;
    for (const auto& f : r.failures) {
        named = named || (f.find("fatal error") != std::string::npos &&
                          f.find("0xc00000e5") != std::string::npos);
        EXPECT_EQ(f.find("did not finish"), std::string::npos) << f;
    }
    EXPECT_TRUE(named) << "no failure names the fatal error";
    // Ended within a few microseconds of the fault (interrupt, DPC, the consumer's wake-up),
    // not at the time limit.
    EXPECT_GE(r.simulated_ns, 20000u);
    EXPECT_LT(r.simulated_ns, 100000u) << "the run went on after the NIC died";
}

}  // namespace
