// SPDX-License-Identifier: Apache-2.0
// Send path timing report (label conformance_timing): the built-in RTL's timing measured and
// printed against the model's (rnic.send_path.timing, from RNICSIM_SEND_PATH_TIMING or the
// defaults): per frame the difference of the handshake edges, first-beat latency, throughput
// under load and recovery after back-pressure. A different timing is not a failure (the model
// adapts to it: send_path_calibrate); only the contract's hard limits are
// (rtl/send_path/CONTRACT.md, "Hard limits").
#include <cstdio>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "rtl/send_path/send_path_core.h"
#include "testbench/rtl/send_path_stimulus.h"

namespace {

using namespace rnic;
using namespace rnic::hw;
using namespace rnic::sptest;

// Contract hard limits.
constexpr uint64_t MAX_FIRST_BEAT_LATENCY = 16;  // edges, descriptor handshake to first beat
constexpr double MIN_BEATS_PER_EDGE = 0.95;      // 4 KiB frames, payload ready, no back-pressure
constexpr uint64_t MAX_RECOVERY_BUBBLES = 2;     // in the 8 edges after ready rises

// Per-frame edge differences (last beat, RTL - model) as a histogram line.
void print_deltas(const conformance_bench& b, const std::string& what) {
    std::map<int64_t, uint64_t> h;
    const size_t n = std::min(b.ref_first_edges.size(), b.dut_first_edges.size());
    for (size_t i = 0; i < n; ++i) {
        ++h[static_cast<int64_t>(b.dut_first_edges[i]) -
            static_cast<int64_t>(b.ref_first_edges[i])];
    }
    std::string line;
    for (const auto& [d, c] : h) {
        line += " " + std::to_string(d) + ":" + std::to_string(c);
    }
    std::printf(
        "[ timing ] %s: %zu frames, first-beat edge RTL - model (edges:frames)%s; "
        "exact beat comparison: %s\n",
        what.c_str(), n, line.c_str(),
        b.exact.diverged() ? b.exact.divergence().describe().c_str()
                           : "every beat on the model's edge");
}

}  // namespace

TEST(SendPathTiming, PerFrameDifferenceFromTheModel) {
    conformance_bench b(
        rtl::make_send_path_core, [](uint64_t e) { return e % 200 >= 37 && e % 5 != 2; }, {},
        model_timing_from_env());
    std::vector<stim_message> msgs = directed_stimulus();
    for (auto& m : random_stimulus(2, 300)) {
        msgs.push_back(std::move(m));
    }
    b.run_all(msgs);
    print_deltas(b, "directed + random, bursty back-pressure");
    std::printf("[ timing ] model timing: %s\n", b.ref_cfg.timing.describe().c_str());
    EXPECT_EQ(b.frames.compared(), expected_frames(msgs)) << "every frame came out";
}

TEST(SendPathTiming, FirstBeatLatency) {
    conformance_bench b(rtl::make_send_path_core, always, {}, model_timing_from_env());
    std::mt19937 rng(1);
    std::vector<stim_message> msgs;
    for (tx_kind k : {tx_kind::SEND, tx_kind::WRITE, tx_kind::READ_REQUEST, tx_kind::ACK}) {
        stim_message m = simple(make_desc(k, 64, 5, 1024), rng);
        m.gap_ns = 1000;  // each one alone
        msgs.push_back(m);
    }
    b.run_all(msgs);
    ASSERT_EQ(b.dut_first_edges.size(), msgs.size());
    for (size_t i = 0; i < msgs.size(); ++i) {
        const uint64_t rtl = b.dut_first_edges[i] - b.desc_valid_edges[i];
        const uint64_t model = b.ref_first_edges[i] - b.desc_valid_edges[i];
        std::printf("[ timing ] first-beat latency, %s: RTL %llu edges, model %llu\n",
                    i == 0   ? "SEND"
                    : i == 1 ? "WRITE"
                    : i == 2 ? "READ request"
                             : "ACK",
                    static_cast<unsigned long long>(rtl), static_cast<unsigned long long>(model));
        EXPECT_LE(rtl, MAX_FIRST_BEAT_LATENCY) << "hard limit";
    }
}

TEST(SendPathTiming, ThroughputUnderLoad) {
    conformance_bench b(rtl::make_send_path_core, always, {}, model_timing_from_env());
    std::mt19937 rng(2);
    std::vector<stim_message> msgs;
    for (uint32_t i = 0; i < 40; ++i) {
        msgs.push_back(simple(make_desc(tx_kind::WRITE, 4096, i, 4096), rng));
    }
    b.run_all(msgs);
    ASSERT_EQ(b.dut_beats, expected_beats(msgs));
    const double span = static_cast<double>(b.last_dut_edge - b.dut_beat_edges.front() + 1);
    const double rtl = static_cast<double>(b.dut_beats) / span;
    std::printf(
        "[ timing ] throughput, 40 x 4 KiB WRITE: RTL %.4f beats/edge (%.1f Gb/s at "
        "%.0f MHz)\n",
        rtl, rtl * 512 * CLOCK_MHZ / 1000, CLOCK_MHZ);
    EXPECT_GE(rtl, MIN_BEATS_PER_EDGE) << "hard limit";
}

TEST(SendPathTiming, RecoveryAfterBackPressure) {
    // Ready low for 30 edges out of every 100 while a long stream is going out.
    conformance_bench b(
        rtl::make_send_path_core, [](uint64_t e) { return e % 100 < 70; }, {},
        model_timing_from_env());
    std::mt19937 rng(3);
    std::vector<stim_message> msgs;
    for (uint32_t i = 0; i < 20; ++i) {
        msgs.push_back(simple(make_desc(tx_kind::SEND, 8000, i * 2, 4096), rng));
    }
    b.run_all(msgs);
    ASSERT_EQ(b.dut_beats, expected_beats(msgs));
    uint64_t worst = 0, releases = 0;
    for (uint64_t r = 100; r + 8 < b.last_dut_edge; r += 100) {  // ready rises at r
        uint64_t beats = 0;
        for (uint64_t e : b.dut_beat_edges) {
            beats += e >= r && e < r + 8;
        }
        worst = std::max<uint64_t>(worst, 8 - beats);
        ++releases;
    }
    std::printf(
        "[ timing ] recovery: worst %llu bubbles in the 8 edges after ready rose "
        "(%llu releases)\n",
        static_cast<unsigned long long>(worst), static_cast<unsigned long long>(releases));
    EXPECT_LE(worst, MAX_RECOVERY_BUBBLES) << "hard limit";
}
