// SPDX-License-Identifier: Apache-2.0
// PFC between two NICs (issue 14): a receiver whose receive FIFO crosses XOFF sends real
// 802.1Qbb pause frames and the sender's MAC stops until XON, so nothing is lost and the
// transfer completes intact; with topology.link.pfc off the same overload drops frames at the
// receive buffer, counted, and go-back-N recovers them.
//
// One elaboration per process: ctest runs each TEST as its own process.
#include <cstdint>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"

namespace {

using nlohmann::json;
using rnic::scenario::run_result;

// 200 64 KiB WRITEs at 100 Gb/s into a receiver with a 36000 B receive buffer and 1 KiB
// frames (rnic.limits.max_mtu 1024: its computed PFC headroom at 100 Gb/s, 50 ns is 28802 B,
// XOFF at 7198 B, about 6 frames, XON one frame lower; without PFC the overload peaks at 42 kB
// and overflows it): the receive DMA stalls on each message's compulsory MTT misses (MTT
// prefetch off, so a message's lines are fetched one after the other), the parser falls behind
// and the FIFO fills.
json overload(bool pfc) {
    return {{"topology",
             {{"nodes",
               {{{"mac", "02:00:00:00:00:01"}, {"ip", "10.0.0.1"}, {"mtu", 1024}},
                {{"mac", "02:00:00:00:00:02"}, {"ip", "10.0.0.2"}, {"mtu", 1024}}}},
              {"link", {{"rate_gbps", 100}, {"propagation_ns", 50}, {"pfc", pfc}}}}},
            {"rnic",
             {{"clock_mhz", 500},
              {"pcie", {{"gen", 3}, {"lanes", 16}, {"mps", 256}, {"mrrs", 512}}},
              {"limits", {{"max_mtu", 1024}}},
              {"recv_path", {{"fifo_bytes", 36000}}},
              {"translation", {{"mtt_prefetch_lines", 0}}}}},
            {"host", {{"memory_latency_ns", 90}}},
            {"workload",
             {{"operation", "write"},
              {"message_bytes", 65536},
              {"messages", 200},
              {"qps", 1},
              {"queue_depth", 16},
              {"seed", 1},
              {"time_limit_ms", 1000}}}};
}

uint64_t counter(const run_result& r, const char* block, const char* key) {
    return r.blocks.at(block).at(key).get<uint64_t>();
}

}  // namespace

TEST(PfcTwoNode, SlowReceiverPausesTheSenderAndLosesNothing) {
    const run_result r =
        rnic::scenario::run_scenario(rnic::scenario::parse_scenario(overload(true)));
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    ASSERT_TRUE(r.passed());
    EXPECT_EQ(r.messages, 200u);
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_GT(r.bytes_checked, 0u);
    EXPECT_EQ(counter(r, "node1.nic.recv_path", "fifo_drops"), 0u) << "lossless: no drop";
    EXPECT_EQ(counter(r, "node1.nic.recv_path", "lossless_drops"), 0u);
    EXPECT_LE(counter(r, "node1.nic.recv_path", "fifo_peak_bytes"), 36000u);
    EXPECT_EQ(counter(r, "node0.nic.recv_path", "fifo_drops"), 0u);
    // Node 1 sent pause frames (XOFF and XON) toward node 0, whose MAC was paused by them.
    const uint64_t sent = counter(r, "link.dir1", "pfc_frames");
    EXPECT_GE(sent, 2u);
    EXPECT_EQ(sent % 2, 0u) << "every XOFF is followed by an XON (no refresh at this load)";
    EXPECT_EQ(counter(r, "link.dir0", "pfc_pauses"), sent / 2);
    EXPECT_GT(counter(r, "link.dir0", "pfc_pause_ps"), 0u);
    EXPECT_EQ(counter(r, "link.dir0", "pfc_frames"), 0u) << "node 0 never overloaded";
    EXPECT_EQ(counter(r, "node1.nic.tx_engine", "retransmits"), 0u);
    EXPECT_EQ(counter(r, "node0.nic.tx_engine", "retransmits"), 0u);
}

TEST(PfcTwoNode, WithoutPfcTheOverloadDropsAndGoBackNRecovers) {
    const run_result r =
        rnic::scenario::run_scenario(rnic::scenario::parse_scenario(overload(false)));
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    ASSERT_TRUE(r.passed());
    EXPECT_EQ(r.messages, 200u);
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_GT(counter(r, "node1.nic.recv_path", "fifo_drops"), 0u);
    EXPECT_EQ(counter(r, "node1.nic.recv_path", "lossless_drops"), 0u) << "a lossy link";
    EXPECT_EQ(counter(r, "link.dir1", "pfc_frames"), 0u);
    EXPECT_EQ(counter(r, "link.dir0", "pfc_pauses"), 0u);
    EXPECT_GT(counter(r, "node0.nic.tx_engine", "retransmits"), 0u);
}
