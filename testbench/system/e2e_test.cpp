// SPDX-License-Identifier: Apache-2.0
// End to end: two nodes, one link, the NDK workload over the whole stack (driver, PCIe, NIC,
// wire). WRITE / SEND / READ at 0 B, 1 B, MTU-1, MTU, MTU+1 and 1 MiB: every payload byte is
// checked in the destination's host memory against the sender's pattern, and both nodes' CQs
// must hold exactly the completions the workload expects.
//
// One elaboration per process: ctest runs each TEST as its own process. Run the binary by hand
// with --gtest_filter=EndToEnd.<one test>.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/scenario/pattern.h"
#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"

namespace {

using nlohmann::json;
using rnic::scenario::run_result;
using rnic::scenario::scenario_config;

// The default path MTU of the topology (topology.nodes.<i>.mtu).
uint64_t mtu() {
    return rnic::scenario::parse_scenario(json::object()).topology.nodes[0].mtu;
}

struct e2e_case {
    std::string op;  // "write" | "send" | "read"
    uint64_t size;   // bytes per message
    uint64_t messages = 6;
    uint32_t qps = 1;
    uint32_t queue_depth = 4;
    uint32_t signal_every = 1;
    uint32_t inline_threshold = 0;
    bool use_events = false;
};

run_result run(const e2e_case& c) {
    const json doc = {{"workload",
                       {{"operation", c.op},
                        {"message_bytes", c.size},
                        {"messages", c.messages},
                        {"qps", c.qps},
                        {"queue_depth", c.queue_depth},
                        {"signal_every", c.signal_every},
                        {"inline_threshold", c.inline_threshold},
                        {"use_events", c.use_events},
                        {"seed", 7},
                        {"time_limit_ms", 2000}}}};
    const scenario_config cfg = rnic::scenario::parse_scenario(doc);
    return rnic::scenario::run_scenario(cfg);
}

// Signaled work requests of one QP with `n` messages (the last one is always signaled).
uint64_t signaled(uint64_t n, uint32_t every) {
    return n / every + (n % every != 0 ? 1 : 0);
}

void run_and_check(const e2e_case& c) {
    const run_result r = run(c);
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    EXPECT_TRUE(r.passed());

    // Data: every byte moved was compared with the pattern at its destination.
    EXPECT_EQ(r.messages, c.messages);
    EXPECT_EQ(r.bytes, c.messages * c.size);
    EXPECT_EQ(r.bytes_checked, c.messages * c.size);
    EXPECT_EQ(r.mismatches, 0u);

    // Node 0's CQ: one completion per signaled work request, of the posted type, all successful.
    uint64_t expected_cqes = 0;
    for (uint32_t q = 0; q < c.qps; ++q) {
        const uint64_t n = c.messages / c.qps + (q < c.messages % c.qps ? 1 : 0);
        expected_cqes += signaled(n, c.signal_every);
    }
    ASSERT_TRUE(r.blocks.contains("workload.node0")) << r.blocks.dump();
    ASSERT_TRUE(r.blocks.contains("workload.node1"));
    const json& n0 = r.blocks["workload.node0"];
    const json& n1 = r.blocks["workload.node1"];
    EXPECT_EQ(n0["posted"], c.messages);
    EXPECT_EQ(n0["completions"], expected_cqes);
    EXPECT_EQ(n0[c.op + "_completions"], expected_cqes);
    EXPECT_EQ(n0["error_completions"], 0);
    EXPECT_EQ(n0["unexpected_completions"], 0);
    EXPECT_EQ(n0["receive_completions"], 0);
    EXPECT_EQ(r.latency.samples, expected_cqes);
    EXPECT_GT(r.latency.p50_ns, 0u);
    EXPECT_LE(r.latency.p50_ns, r.latency.p99_ns);
    EXPECT_LE(r.latency.p99_ns, r.latency.max_ns);

    // Node 1's CQ: a receive completion per SEND with the sent length; nothing for WRITE/READ.
    EXPECT_EQ(n1["posted"], 0);
    EXPECT_EQ(n1["error_completions"], 0);
    EXPECT_EQ(n1["unexpected_completions"], 0);
    if (c.op == "send") {
        EXPECT_EQ(n1["completions"], c.messages);
        EXPECT_EQ(n1["receive_completions"], c.messages);
        EXPECT_EQ(n1["receive_bytes"], c.messages * c.size);
    } else {
        EXPECT_EQ(n1["completions"], 0);
        EXPECT_EQ(n1["receive_completions"], 0);
    }

    // The payload crossed the wire in path-MTU packets: at least one per MTU (or one per empty
    // message) in the data direction, node 0 -> 1 for WRITE/SEND, 1 -> 0 for READ responses.
    const uint64_t per_msg = c.size == 0 ? 1 : (c.size + mtu() - 1) / mtu();
    const std::string dir = c.op == "read" ? "link.dir1" : "link.dir0";
    ASSERT_TRUE(r.blocks.contains(dir)) << r.blocks.dump();
    EXPECT_GE(r.blocks[dir]["frames"].get<uint64_t>(), c.messages * per_msg);
    EXPECT_GE(r.packets, c.messages * per_msg);
    EXPECT_GT(r.simulated_ns, 0u);
}

constexpr uint64_t MIB = 1 << 20;

TEST(EndToEnd, Write0B) {
    run_and_check({"write", 0});
}
TEST(EndToEnd, Write1B) {
    run_and_check({"write", 1});
}
TEST(EndToEnd, WriteMtuMinus1) {
    run_and_check({"write", mtu() - 1});
}
TEST(EndToEnd, WriteMtu) {
    run_and_check({"write", mtu()});
}
TEST(EndToEnd, WriteMtuPlus1) {
    run_and_check({"write", mtu() + 1});
}
TEST(EndToEnd, Write1MiB) {
    run_and_check({"write", MIB, 3});
}

TEST(EndToEnd, Send0B) {
    run_and_check({"send", 0});
}
TEST(EndToEnd, Send1B) {
    run_and_check({"send", 1});
}
TEST(EndToEnd, SendMtuMinus1) {
    run_and_check({"send", mtu() - 1});
}
TEST(EndToEnd, SendMtu) {
    run_and_check({"send", mtu()});
}
TEST(EndToEnd, SendMtuPlus1) {
    run_and_check({"send", mtu() + 1});
}
TEST(EndToEnd, Send1MiB) {
    run_and_check({"send", MIB, 3});
}

TEST(EndToEnd, Read0B) {
    run_and_check({"read", 0});
}
TEST(EndToEnd, Read1B) {
    run_and_check({"read", 1});
}
TEST(EndToEnd, ReadMtuMinus1) {
    run_and_check({"read", mtu() - 1});
}
TEST(EndToEnd, ReadMtu) {
    run_and_check({"read", mtu()});
}
TEST(EndToEnd, ReadMtuPlus1) {
    run_and_check({"read", mtu() + 1});
}
TEST(EndToEnd, Read1MiB) {
    run_and_check({"read", MIB, 3});
}

// More messages than buffer slots: the rings wrap, so WRITE targets are checked before reuse and
// READ sinks / SEND receive buffers are poisoned and refilled.
TEST(EndToEnd, WriteRingWraps) {
    run_and_check({"write", 3000, 40, 1, 4});
}
TEST(EndToEnd, SendRingWraps) {
    run_and_check({"send", 3000, 40, 1, 4});
}
TEST(EndToEnd, ReadRingWraps) {
    run_and_check({"read", 3000, 40, 1, 4});
}

// Two QPs, one CQE per four work requests (the rest NDK_OP_FLAG_SILENT_SUCCESS), and CQ
// notifications instead of polling.
TEST(EndToEnd, WriteTwoQpsSignalEveryFourWithEvents) {
    run_and_check({"write", 2048, 22, 2, 8, 4, 0, true});
}
TEST(EndToEnd, SendTwoQpsWithEvents) {
    run_and_check({"send", 512, 16, 2, 4, 1, 0, true});
}

// Payload copied into the WQE at post time (NDK_OP_FLAG_INLINE).
TEST(EndToEnd, SendInline) {
    run_and_check({"send", 100, 10, 1, 4, 1, 128});
}
TEST(EndToEnd, WriteInline) {
    run_and_check({"write", 64, 10, 1, 4, 1, 128});
}

// Every QP the NIC can connect gets connected with the default host config: rnic.limits.max_qps
// 1026 leaves QPNs 2..1025 for 1024 QP pairs, and the passive node's CM then holds its listener
// and 1024 connectors (a table of exactly 1024 entries refused the last REQ).
TEST(EndToEnd, EveryConnectableQpConnectsWithTheDefaultCmIdTable) {
    const json doc = {{"rnic", {{"limits", {{"max_qps", 1026}}}}},
                      {"workload",
                       {{"operation", "write"},
                        {"message_bytes", 64},
                        {"messages", 1024},
                        {"qps", 1024},
                        {"queue_depth", 1},
                        {"time_limit_ms", 2000}}}};
    const run_result r = rnic::scenario::run_scenario(rnic::scenario::parse_scenario(doc));
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    EXPECT_TRUE(r.passed());
    EXPECT_EQ(r.messages, 1024u);
    EXPECT_EQ(r.bytes_checked, 1024u * 64u);
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_EQ(r.blocks["workload.node0"]["write_completions"], 1024);
}

// The checker itself (no simulation): what the e2e tests rely on to see wrong data.
TEST(Pattern, DetectsEveryKindOfWrongData) {
    using rnic::scenario::pattern_fill;
    using rnic::scenario::pattern_key;
    using rnic::scenario::pattern_mismatches;
    std::vector<uint8_t> buf(1027);
    const uint64_t key = pattern_key(1, 0, 5);
    pattern_fill(key, buf.data(), buf.size());
    EXPECT_EQ(pattern_mismatches(key, buf.data(), buf.size()), 0u);

    buf[1026] ^= 0x01;  // one bit in the tail
    EXPECT_EQ(pattern_mismatches(key, buf.data(), buf.size()), 1u);
    buf[1026] ^= 0x01;
    buf[8] ^= 0xff;  // one byte in a full word
    EXPECT_EQ(pattern_mismatches(key, buf.data(), buf.size()), 1u);
    buf[8] ^= 0xff;

    // Another message, QP or seed: (almost) every byte differs.
    for (uint64_t other : {pattern_key(1, 0, 4), pattern_key(1, 1, 5), pattern_key(2, 0, 5)}) {
        EXPECT_GT(pattern_mismatches(other, buf.data(), buf.size()), buf.size() * 9 / 10);
    }
    // Data shifted by one word (placed at the wrong offset).
    std::vector<uint8_t> shifted(1024 + 8);
    pattern_fill(key, shifted.data() + 8, 1024);
    EXPECT_GT(pattern_mismatches(key, shifted.data(), 1024), 1000u);
    // Poison (a transfer that never landed).
    std::vector<uint8_t> poison(64, rnic::scenario::POISON);
    EXPECT_GT(pattern_mismatches(key, poison.data(), poison.size()), 60u);
}

}  // namespace
