// SPDX-License-Identifier: Apache-2.0
// Soak (issue "Reliable transport and hostile inputs", part 6): configs/soak/soak_{write,send,
// read}.json, many QPs over a link with 1 % drop, 0.1 % corruption, 1 % reordering, duplicates
// and jitter, run to the end. Passes only with zero data mismatches, every posted request
// completed exactly once and successfully, and counters that show the faults happened and were
// repaired. The workload runs one operation per scenario, so the mix is three scenarios (see
// configs/soak/README.md for the longer configurations and the proposed "mixed" workload).
//
// One elaboration per process: ctest runs each TEST as its own process.
#include <iostream>
#include <string>

#include <gtest/gtest.h>

#include "testbench/system/transport_bench.h"

namespace rnic::transport_test {
namespace {

void soak(const std::string& file) {
    const scenario::scenario_config cfg =
        scenario::load_scenario(source_dir() + "/configs/soak/" + file, {});
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
    EXPECT_GT(nic_counter(r, "recv_path", "duplicates"), 0u);
    // The responder executed each message once: WRITE/SEND messages, or READs served the first
    // time (read_requests counts duplicates served again).
    const uint64_t executed = cfg.workload.op == scenario::operation::READ
                                  ? counter(r, "node1.nic.recv_path", "read_requests") -
                                        counter(r, "node1.nic.recv_path", "duplicates")
                                  : counter(r, "node1.nic.recv_path", "messages");
    EXPECT_EQ(executed, cfg.workload.messages);
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

}  // namespace
}  // namespace rnic::transport_test
