// SPDX-License-Identifier: Apache-2.0
// Whole scenarios with the built-in send path RTL (label conformance), functionally: with
// rnic.send_path.impl = "rtl" and with "lockstep" (compare "functional") every run passes,
// carries the same frames as the model run (timing may differ: another RTL may take other
// edges), no retransmission timer expires on a perfect link, and lockstep finds no frame that
// differs. A lockstep divergence still writes the run's outputs and divergence.json.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/rtl/scenario_runs.h"

namespace {

using namespace rnic::sptest;

// Frames of a run as a sorted list of byte strings (the order of QPs' frames may differ
// when the send path takes other edges).
std::vector<std::string> frame_set(const run_output& r) {
    std::vector<std::string> v;
    for (auto& p : pcap_records(r.pcap)) {
        v.push_back(std::move(p.bytes));
    }
    std::sort(v.begin(), v.end());
    return v;
}

void expect_functionally_equivalent(const json& cfg) {
    scratch s;
    const run_output model = run(s, cfg, "model");
    expect_passed(model);
    expect_no_timeouts(model);
    const auto frames = frame_set(model);
    ASSERT_FALSE(frames.empty());
    {
        SCOPED_TRACE("rtl");
        const run_output r = run(s, cfg, "rtl");
        expect_passed(r);
        expect_no_timeouts(r);
        EXPECT_TRUE(frame_set(r) == frames) << "the RTL run's frames differ from the model run's";
    }
    {
        SCOPED_TRACE("lockstep, functional");
        json c = cfg;
        c["rnic"]["send_path"]["lockstep"]["compare"] = "functional";
        const run_output r = run(s, c, "lockstep");
        expect_passed(r);
        expect_no_timeouts(r);
        EXPECT_EQ(r.err.find("diverge"), std::string::npos) << r.err;
        for (const std::string n : {"node0.nic.send_path", "node1.nic.send_path"}) {
            const json& b = r.stats["blocks"].value(n, json::object());
            EXPECT_GT(b.value("lockstep_frames_compared", uint64_t{0}), 0u) << n;
            EXPECT_EQ(
                b.value("packets", uint64_t{0}),
                r.stats["blocks"].value(n + ".rtl", json::object()).value("packets", uint64_t{1}))
                << n;
        }
    }
}

}  // namespace

TEST(ScenarioFunctional, WriteMtu1024TwoQps) {
    expect_functionally_equivalent(scenario("write", 10000, 24, 2, 1024));
}

TEST(ScenarioFunctional, ReadMtu4096) {
    expect_functionally_equivalent(scenario("read", 20000, 16, 2, 4096));
}

// Few small SENDs: each ACK is the last frame for a while, so a send path that keeps it
// inside while its clock is stopped would leave it to the retransmission timer.
TEST(ScenarioFunctional, FewSmallSends) {
    json c = scenario("send", 1001, 6, 1, 1024);
    expect_functionally_equivalent(c);
}

TEST(ScenarioFunctional, InlineSmallWritesTwoQps) {
    json c = scenario("write", 103, 60, 2, 4096);
    c["workload"]["inline_threshold"] = 128;
    expect_functionally_equivalent(c);
}

// A lockstep run whose model is timed differently from the RTL (8 output registers) diverges
// under compare "exact": the run fails (exit 1) naming the send path and the packet, and still
// writes stats.json, wire.pcap and divergence.json with the packet, beat, values and edges;
// compare "functional" accepts the same pair and counts the timing differences.
TEST(ScenarioFunctional, LockstepDivergenceWritesOutputs) {
    scratch s;
    json c = scenario("write", 5000, 4, 1, 1024);
    c["rnic"]["send_path"]["timing"]["output_registers"] = 8;
    c["rnic"]["send_path"]["lockstep"]["compare"] = "exact";
    const run_output r = run(s, c, "lockstep", "_exact");
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("send_path: model and RTL diverge: first divergence (cycle) at frame 0 "
                         "beat 0"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("(opcode 0x"), std::string::npos) << r.err;
    ASSERT_TRUE(r.stats.contains("blocks")) << "stats.json written";
    EXPECT_FALSE(r.stats["result"].value("passed", true));
    EXPECT_GT(pcap_records(r.pcap).size(), 0u) << "wire.pcap written";
    const std::string dj = read_file(r.out + "/divergence.json");
    ASSERT_FALSE(dj.empty()) << "divergence.json written";
    const json d = json::parse(dj);
    EXPECT_EQ(d["what"], "cycle");
    EXPECT_EQ(d["frame"], 0);
    EXPECT_EQ(d["beat"], 0);
    EXPECT_TRUE(d.contains("opcode") && d.contains("qp") && d.contains("psn"));
    EXPECT_GT(d["cycle_expected"].get<uint64_t>(), d["cycle_got"].get<uint64_t>());

    c["rnic"]["send_path"]["lockstep"]["compare"] = "functional";
    const run_output f = run(s, c, "lockstep", "_functional");
    expect_passed(f);
    const json& b = f.stats["blocks"]["node0.nic.send_path"];
    EXPECT_GT(b.value("lockstep_timing_differs", uint64_t{0}), 0u);
    EXPECT_GT(b.value("lockstep_max_edge_delta", uint64_t{0}), 0u);
}

// Never mis-timed silently: with a quiescence window shorter than the built-in RTL needs (2
// edges; ours needs 3, an ACK spends them inside), the wrapper stops the clock with the ACK
// still inside; the restart check sees it and the run fails naming the rule and the edge,
// with its outputs written. With the clock kept running the same run passes on time.
TEST(ScenarioFunctional, QuiescenceViolationFailsTheRunAndFreeClockPasses) {
    scratch s;
    json c = scenario("send", 1001, 6, 1, 1024);
    c["rnic"]["send_path"]["rtl"]["quiescent_edges"] = 2;
    const run_output bad = run(s, c, "rtl", "_q2");
    EXPECT_EQ(bad.exit_code, 1) << bad.err;
    EXPECT_NE(
        bad.err.find("nic.send_path: RTL broke the quiescence rule (rtl/send_path/CONTRACT.md) "
                     "at edge "),
        std::string::npos)
        << bad.err;
    ASSERT_TRUE(bad.stats.contains("result")) << "stats.json written";
    EXPECT_FALSE(bad.stats["result"].value("passed", true));

    c["rnic"]["send_path"]["rtl"]["clock"] = "free";
    const run_output good = run(s, c, "rtl", "_free");
    expect_passed(good);
    expect_no_timeouts(good);
}
