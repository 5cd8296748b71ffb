// SPDX-License-Identifier: Apache-2.0
// Soak (issue "Reliable transport and hostile inputs", part 6): configs/soak/soak_{write,send,
// read,mixed}.json, many QPs over a link with 1 % drop, 0.1 % corruption, 1 % reordering,
// duplicates and jitter, run to the end. Passes only with zero data mismatches, every posted
// request completed exactly once and successfully, and counters that show the faults happened
// and were repaired. soak_mixed.json runs 32 QPs of WRITE, READ and SEND drawn per message
// (workload.operation "mixed"); configs/soak/README.md gives the longer configurations.
//
// One elaboration per process: ctest runs each TEST as its own process.
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/system/transport_bench.h"

namespace rnic::transport_test {
namespace {

void soak(const std::string& file) {
    std::vector<std::string> overrides;
    if (const uint64_t shift = seed_shift(); shift != 0) {  // RNICSIM_TEST_SEED: other streams
        const scenario::scenario_config plain =
            scenario::load_scenario(source_dir() + "/configs/soak/" + file, {});
        overrides.push_back("topology.link.faults.seed=" +
                            std::to_string(plain.topology.link.faults.seed + shift));
        overrides.push_back("workload.seed=" + std::to_string(plain.workload.seed + shift));
    }
    const scenario::scenario_config cfg =
        scenario::load_scenario(source_dir() + "/configs/soak/" + file, overrides);
    const scenario::run_result r = scenario::run_scenario(cfg);
    expect_clean_run(r, cfg.workload);

    // The faults happened, in both directions...
    EXPECT_GT(link_counter(r, "faults_dropped"), 0u);
    EXPECT_GT(link_counter(r, "faults_corrupted"), 0u);
    EXPECT_GT(link_counter(r, "faults_reordered"), 0u);
    EXPECT_GT(link_counter(r, "faults_duplicated"), 0u);
    EXPECT_GT(
        counter(r, "link.dir0", "faults_dropped") + counter(r, "link.dir0", "faults_corrupted"),
        0u);
    EXPECT_GT(
        counter(r, "link.dir1", "faults_dropped") + counter(r, "link.dir1", "faults_corrupted"),
        0u);
    // ... and were repaired: corrupted frames refused, losses resent, duplicates not executed.
    EXPECT_GT(nic_counter(r, "recv_path", "parse_errors"), 0u);
    EXPECT_LE(nic_counter(r, "recv_path", "parse_errors"), link_counter(r, "faults_corrupted"));
    EXPECT_GT(counter(r, "node0.nic.tx_engine", "retransmits"), 0u);
    EXPECT_GT(counter(r, "node0.nic.tx_engine", "nak_sequence") +
                  counter(r, "node0.nic.tx_engine", "timeouts"),
              0u);
    EXPECT_GT(nic_counter(r, "recv_path", "duplicates"), 0u);
    // The responder executed each message once: WRITE/SEND messages, and READs served the
    // first time (read_requests counts duplicates served again too).
    const expected_completions e = expected_of(cfg.workload);
    const uint64_t reads = e.messages_by_op[static_cast<int>(scenario::operation::READ)];
    EXPECT_EQ(counter(r, "node1.nic.recv_path", "messages"), cfg.workload.messages - reads);
    EXPECT_EQ(counter(r, "node1.nic.recv_path", "read_requests") -
                  counter(r, "node1.nic.recv_path", "duplicate_reads"),
              reads);
    // The requester retired exactly what was posted.
    EXPECT_EQ(counter(r, "node0.nic.tx_engine", "wqes"), cfg.workload.messages);
    std::cout << "soak " << file << ": " << r.messages << " messages, " << r.packets
              << " packets, dropped " << link_counter(r, "faults_dropped") << ", corrupted "
              << link_counter(r, "faults_corrupted") << ", reordered "
              << link_counter(r, "faults_reordered") << ", retransmits "
              << counter(r, "node0.nic.tx_engine", "retransmits") << ", timeouts "
              << counter(r, "node0.nic.tx_engine", "timeouts") << ", simulated "
              << r.simulated_ns / 1e6 << " ms, wall " << r.wall_s << " s\n";
}

TEST(TransportSoak, WriteOverFaultyLink) {
    soak("soak_write.json");
}
TEST(TransportSoak, SendOverFaultyLink) {
    soak("soak_send.json");
}
TEST(TransportSoak, ReadOverFaultyLink) {
    soak("soak_read.json");
}

// workload.mix is checked like every config section: errors name the JSON path.
TEST(TransportSoak, MixKeysAreValidated) {
    auto error_of = [](const json& mix) {
        try {
            (void)scenario::parse_scenario({{"workload", {{"operation", "mixed"}, {"mix", mix}}}});
        } catch (const config::config_error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(error_of({{"atomic", 1}}).find("workload.mix.atomic: unknown key"),
              std::string::npos);
    EXPECT_NE(error_of({{"read", -1}}).find("workload.mix.read: -1 out of range"),
              std::string::npos)
        << error_of({{"read", -1}});
    EXPECT_NE(error_of({{"write", 0}, {"read", 0}, {"send", 0}})
                  .find("workload.mix: the weights of write, read and send are all 0"),
              std::string::npos);
    EXPECT_EQ(error_of({{"write", 3}, {"read", 0}, {"send", 1}}), "");
    // With no SENDs in the mix, every message is a WRITE or a READ.
    scenario::workload_config w;
    w.op = scenario::operation::MIXED;
    w.mix = {1, 1, 0};
    for (uint64_t i = 0; i < 1000; ++i) {
        EXPECT_NE(scenario::operation_of(w, 0, i), scenario::operation::SEND);
    }
    EXPECT_FALSE(scenario::has_sends(w));
}

// 32 QPs, each message WRITE, READ or SEND (equal weights), all on the same QPs and link.
TEST(TransportSoak, MixedOverFaultyLink) {
    const scenario::scenario_config cfg =
        scenario::load_scenario(source_dir() + "/configs/soak/soak_mixed.json", {});
    ASSERT_EQ(cfg.workload.op, scenario::operation::MIXED);
    EXPECT_GE(cfg.workload.qps, 32u);
    // Every operation really is in the mix, in every QP's stream.
    const expected_completions e = expected_of(cfg.workload);
    for (const uint64_t n : e.messages_by_op) {
        EXPECT_GT(n, cfg.workload.messages / 5);
    }
    for (uint32_t q = 0; q < cfg.workload.qps; ++q) {
        bool seen[3] = {false, false, false};
        for (uint64_t i = 0; i < cfg.workload.messages / cfg.workload.qps; ++i) {
            seen[static_cast<int>(scenario::operation_of(cfg.workload, q, i))] = true;
        }
        EXPECT_TRUE(seen[0] && seen[1] && seen[2]) << "QP " << q;
    }
    soak("soak_mixed.json");
}

}  // namespace
}  // namespace rnic::transport_test
