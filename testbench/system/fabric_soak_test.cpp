// SPDX-License-Identifier: Apache-2.0
// Fabric soak (issue 27): configs/soak/soak_fabric_resilience.json, a 2x2 leaf-spine with link
// flaps on the uplinks, drops, corruption, reordering, duplicates and jitter on every link,
// 4 QPs per pair of WRITE/READ/SEND mixed, run with go-back-N and selective repeat, traffic on a
// lossless (PFC) and on a lossy priority, on several fault seeds. Each run must complete every
// message exactly once with every byte intact, no lossless port may drop, and the faults and
// their repairs must show in the counters. The switches see the 20 us flaps of the uplinks (10 us
// detection; the 5 us ones go unseen) and reroute around them, down and up again; what was lost
// before the reroute is repaired by RC. Nothing lossless is dropped, at a NIC or at a switch.
//
// One elaboration per process: ctest runs each TEST as its own process.
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/system/transport_bench.h"

namespace rnic::transport_test {
namespace {

// Sum of counter `name` over every block named `<prefix>...<suffix>` that has it.
uint64_t sum(const scenario::run_result& r, const std::string& prefix, const std::string& name,
             const std::string& suffix = "") {
    uint64_t s = 0;
    for (auto it = r.blocks.begin(); it != r.blocks.end(); ++it) {
        const std::string& b = it.key();
        if (b.rfind(prefix, 0) == 0 && b.size() >= suffix.size() &&
            b.compare(b.size() - suffix.size(), suffix.size(), suffix) == 0 &&
            it.value().contains(name)) {
            s += it.value()[name].get<uint64_t>();
        }
    }
    return s;
}
uint64_t nics(const scenario::run_result& r, const std::string& unit, const std::string& name) {
    return sum(r, "node", name, ".nic." + unit);
}

void soak(const std::string& recovery, bool lossless, uint64_t seed) {
    const std::string file = source_dir() + "/configs/soak/soak_fabric_resilience.json";
    const std::vector<std::string> sets = {
        "rnic.transport.recovery=" + recovery,
        // Priority 0 is lossless in the file's switches, priority 1 lossy (DSCP 8 >> 3).
        "rnic.send_path.dscp=" + std::string(lossless ? "0" : "8"),
        "topology.link.faults.seed=" + std::to_string(seed),
        "topology.leaf_spine.uplink.faults.seed=" + std::to_string(seed + 1000),
        "workload.seed=" + std::to_string(seed),
    };
    const scenario::scenario_config cfg = scenario::load_scenario(file, sets);
    const scenario::run_result r = scenario::run_scenario(cfg);
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    ASSERT_TRUE(r.passed());
    const scenario::workload_config& w = cfg.workload;
    const uint64_t flows = r.flows.size();
    ASSERT_EQ(flows, cfg.topology.nodes.size());  // a permutation: one flow per node
    // Every message completed exactly once, every byte intact.
    EXPECT_EQ(r.messages, flows * w.messages);
    EXPECT_EQ(r.bytes_checked, flows * w.messages * w.message_bytes);
    EXPECT_EQ(r.mismatches, 0u);
    // One CQE per message at its initiator (signal_every 1) plus one receive CQE per SEND.
    ASSERT_EQ(w.signal_every, 1u);
    EXPECT_EQ(sum(r, "workload.node", "posted"), flows * w.messages);
    EXPECT_EQ(sum(r, "workload.node", "completions"),
              flows * w.messages + sum(r, "workload.node", "receive_completions"));
    EXPECT_GT(sum(r, "workload.node", "receive_completions"), 0u);
    EXPECT_EQ(sum(r, "workload.node", "error_completions"), 0u);
    EXPECT_EQ(sum(r, "workload.node", "unexpected_completions"), 0u);
    for (const auto& f : r.flows) {
        EXPECT_TRUE(f.complete) << f.src << " -> " << f.dst;
        EXPECT_EQ(f.messages, w.messages) << f.src << " -> " << f.dst;
    }
    // The responders executed each message once: WRITE/SEND messages placed, READs served the
    // first time (duplicates are re-ACKed or served again, never executed twice), and every
    // SEND's receive completed once.
    EXPECT_EQ(nics(r, "recv_path", "messages") + nics(r, "recv_path", "read_requests") -
                  nics(r, "recv_path", "duplicate_reads"),
              flows * w.messages);
    EXPECT_EQ(nics(r, "recv_path", "receive_wqes"), sum(r, "workload.node", "receive_completions"));
    // No QP failed, nothing flushed; no lossless port dropped.
    EXPECT_EQ(nics(r, "tx_engine", "retry_exceeded"), 0u);
    EXPECT_EQ(nics(r, "tx_engine", "flushed"), 0u);
    EXPECT_EQ(nics(r, "tx_engine", "error_completions"), 0u);
    EXPECT_EQ(nics(r, "recv_path", "fatal_naks"), 0u);
    EXPECT_EQ(nics(r, "recv_path", "flushed_receives"), 0u);
    EXPECT_EQ(nics(r, "recv_path", "lossless_drops"), 0u);
    EXPECT_EQ(sum(r, "leaf", "lossless_drops") + sum(r, "spine", "lossless_drops"), 0u);
    // Reroute on (topology.switch.reroute, the default): every switch recomputed its routes at
    // the down and the up of both 20 us flaps near 70 us (the flaps are not seeded; a run that
    // lasts to the later ones, at 16.88 and 33.66 ms, sees more), and both ends of the 4 uplinks
    // saw each of those flaps.
    for (const char* sw : {"leaf0", "leaf1", "spine0", "spine1"}) {
        EXPECT_GE(r.blocks[sw]["reroutes"].get<uint64_t>(), 4u) << sw;
    }
    EXPECT_GE(sum(r, "leaf", "link_downs") + sum(r, "spine", "link_downs"), 16u);
    // The faults happened (flaps included) and were repaired; the counters are in stats.json.
    EXPECT_GT(sum(r, "link", "faults_dropped"), 0u);
    EXPECT_GT(sum(r, "link", "faults_corrupted"), 0u);
    EXPECT_GT(sum(r, "link", "faults_reordered"), 0u);
    EXPECT_GT(sum(r, "link", "faults_duplicated"), 0u);
    EXPECT_GT(sum(r, "link", "faults_link_down"), 0u);
    EXPECT_GT(nics(r, "recv_path", "parse_errors"), 0u);
    EXPECT_GT(nics(r, "tx_engine", "retransmitted_packets"), 0u);
    EXPECT_GT(
        nics(r, "tx_engine", "recovered_by_nak") + nics(r, "tx_engine", "recovered_by_timeout"),
        0u);
    EXPECT_GT(nics(r, "recv_path", "duplicates"), 0u);
    if (recovery == "selective_repeat") {
        EXPECT_GT(nics(r, "recv_path", "sr_selective_naks"), 0u);
    }
    std::cout << "fabric soak " << recovery << (lossless ? " lossless" : " lossy") << " seed "
              << seed << ": " << r.messages << " messages, " << r.packets << " packets, dropped "
              << sum(r, "link", "faults_dropped") << ", link-down drops "
              << sum(r, "link", "faults_link_down") << ", packets resent "
              << nics(r, "tx_engine", "retransmitted_packets") << ", timeouts "
              << nics(r, "tx_engine", "timeouts") << ", simulated " << r.simulated_ns / 1e6
              << " ms, wall " << r.wall_s << " s\n";
}

TEST(FabricSoak, GoBackNLosslessSeed1) {
    soak("go_back_n", true, 1);
}
TEST(FabricSoak, GoBackNLossySeed2) {
    soak("go_back_n", false, 2);
}
TEST(FabricSoak, SelectiveRepeatLosslessSeed3) {
    soak("selective_repeat", true, 3);
}
TEST(FabricSoak, SelectiveRepeatLossySeed4) {
    soak("selective_repeat", false, 4);
}
TEST(FabricSoak, GoBackNLosslessSeed5) {
    soak("go_back_n", true, 5);
}
TEST(FabricSoak, SelectiveRepeatLosslessSeed6) {
    soak("selective_repeat", true, 6);
}

}  // namespace
}  // namespace rnic::transport_test
