// SPDX-License-Identifier: Apache-2.0
// The conformance suite's own tests (label conformance_self), whichever RTL is built in: our
// RTL (rtl/send_path/send_path.sv) matches the model exactly; an independent send path written
// from CONTRACT.md alone (testbench/rtl/external/deep_send_path.sv: 6 edges from descriptor to
// first beat, its own CRC structure) passes the functional suite, its timing is measured as 2
// edges later, calibration finds the parameters that make the model match it exactly, and its
// ACK-in-the-pipeline quiescence is caught; deliberately broken builds (ours and the
// independent one's) fail with reports naming packet, byte and rule.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "rtl/send_path/send_path_broken.h"
#include "testbench/rtl/external/deep_cores.h"
#include "testbench/rtl/send_path_calibration.h"
#include "testbench/rtl/send_path_stimulus.h"

namespace {

using namespace rnic;
using namespace rnic::hw;
using namespace rnic::sptest;

// The independent RTL keeps an ACK 5 edges inside without a handshake (see its header).
send_path_config deep_cfg() {
    send_path_config c;
    c.rtl.quiescent_edges = 5;
    return c;
}

send_path_config deep_model() {
    send_path_config c;
    c.timing.output_registers = 3;  // X, Y, O after the assembler
    return c;
}

void run_directed_and_random(conformance_bench& b) {
    std::vector<stim_message> msgs = directed_stimulus();
    for (auto& m : random_stimulus(8, 200)) {
        msgs.push_back(std::move(m));
    }
    b.run_all(msgs);
    EXPECT_EQ(b.frames.compared(), expected_frames(msgs));
}

}  // namespace

// Our RTL: every beat on the model's edge (default timing), with and without back-pressure.
TEST(SendPathSelf, OurRtlMatchesTheModelExactly) {
    conformance_bench b(rtl::make_send_path_core_ours,
                        [](uint64_t e) { return e % 200 >= 37 && e % 5 != 2; });
    run_directed_and_random(b);
    EXPECT_FALSE(b.exact.diverged()) << b.exact.divergence().describe();
    EXPECT_TRUE(b.functional_report("our RTL"));
    EXPECT_EQ(b.dut.get_stats().stall_backpressure_cycles,
              b.ref.get_stats().stall_backpressure_cycles);
    EXPECT_EQ(b.dut.get_stats().stall_payload_cycles, b.ref.get_stats().stall_payload_cycles);
}

// Our RTL one cycle late: functionally correct (it passes the functional suite), and the exact
// comparison (the timing report) shows +1 edge from the first beat on.
TEST(SendPathSelf, OneCycleLateRtlIsFunctionallyCorrectAndMeasuredLate) {
    conformance_bench b(rtl::make_send_path_core_late, always);
    b.run_all(directed_stimulus());
    EXPECT_TRUE(b.functional_report("our RTL, one output register more"));
    const beat_divergence& d = b.exact.divergence();
    EXPECT_EQ(d.what, "cycle");
    EXPECT_EQ(d.frame, 0u);
    EXPECT_EQ(d.beat, 0u);
    EXPECT_EQ(d.cycle_expected, 5u);
    EXPECT_EQ(d.cycle_got, 6u);
    EXPECT_EQ(b.frames.min_delta(), 1);
    EXPECT_EQ(b.frames.max_delta(), 1);
}

// A wrong ICRC byte is caught at that byte in every frame: frame 0 is SEND Only with no
// payload, 54 header bytes, so the ICRC starts at byte offset 54.
TEST(SendPathSelf, CatchesWrongIcrcByte) {
    conformance_bench b(rtl::make_send_path_core_badcrc, always);
    const auto msgs = directed_stimulus();
    b.run_all(msgs);
    EXPECT_FALSE(b.functional_report("our RTL, first ICRC byte inverted"));
    EXPECT_EQ(b.frames.differing(), expected_frames(msgs)) << "every frame, not only the first";
    ASSERT_FALSE(b.frames.differences().empty());
    const frame_difference& d = b.frames.differences().front();
    EXPECT_EQ(d.frame, 0u);
    EXPECT_EQ(d.opcode, 0x04);  // SEND Only
    EXPECT_EQ(d.byte_offset, 54);
    EXPECT_EQ(d.expected ^ d.got, 0xFF);
    EXPECT_NE(d.describe().find("PSN 0xfffff0"), std::string::npos) << d.describe();
    EXPECT_GT(b.dut.malformed_frames(), 0u);
}

// The independent RTL passes the functional suite: every opcode, alignment and pad length,
// random messages, bursty back-pressure, small FIFOs; no contract violation.
TEST(SendPathSelf, IndependentDeepRtlPassesTheFunctionalSuite) {
    conformance_bench b(
        rtl::make_deep_core, [](uint64_t e) { return e % 200 >= 37 && e % 5 != 2; }, deep_cfg());
    run_directed_and_random(b);
    EXPECT_TRUE(b.functional_report("independent RTL"));
    EXPECT_EQ(b.dut_bad_frames, 0u);
}

// ... and its timing report shows it 2 edges behind the contract's example on every frame
// without back-pressure: first beat 6 edges after the descriptor instead of 4.
TEST(SendPathSelf, IndependentDeepRtlIsMeasuredTwoEdgesLater) {
    conformance_bench b(rtl::make_deep_core, always, deep_cfg());
    b.run_all(directed_stimulus());
    EXPECT_TRUE(b.functional_report("independent RTL, no back-pressure"));
    EXPECT_EQ(b.frames.min_delta(), 2);
    EXPECT_EQ(b.frames.max_delta(), 2);
    ASSERT_FALSE(b.dut_first_edges.empty());
    EXPECT_EQ(b.dut_first_edges[0] - b.desc_valid_edges[0], 6u);
    EXPECT_EQ(b.ref_first_edges[0] - b.desc_valid_edges[0], 4u);
}

// With rnic.send_path.timing.output_registers = 3 (what calibration finds, next test) the model
// matches it on every beat, back-pressure included.
TEST(SendPathSelf, CalibratedModelMatchesIndependentRtlExactly) {
    conformance_bench b(
        rtl::make_deep_core, [](uint64_t e) { return e % 200 >= 37 && e % 5 != 2; }, deep_cfg(),
        deep_model());
    run_directed_and_random(b);
    EXPECT_FALSE(b.exact.diverged()) << b.exact.divergence().describe();
    EXPECT_EQ(b.frames.timing_differs(), 0u);
}

TEST(SendPathSelf, CalibrationFindsTheIndependentRtlsTiming) {
    const calibration_result r = calibrate(rtl::make_deep_core);
    std::cout << r.report();
    EXPECT_TRUE(r.exact);
    EXPECT_EQ(r.timing, deep_model().timing);
    EXPECT_EQ(r.quiescent_edges_needed, 5u);
    EXPECT_EQ(r.rtl_violations, 0u);
}

TEST(SendPathSelf, CalibrationFindsOurRtlsTiming) {
    const calibration_result r = calibrate(rtl::make_send_path_core_ours);
    std::cout << r.report();
    EXPECT_TRUE(r.exact);
    EXPECT_EQ(r.timing, send_path_timing{});
    EXPECT_LE(r.quiescent_edges_needed, 4u);
}

// Broken builds of the independent RTL fail the functional suite, naming packet and byte.
TEST(SendPathSelf, CatchesIcrcMostSignificantByteFirst) {
    conformance_bench b(rtl::make_deep_core_icrc_order, always, deep_cfg());
    b.run_all(directed_stimulus());
    EXPECT_FALSE(b.functional_report("independent RTL, ICRC byte order"));
    ASSERT_FALSE(b.frames.differences().empty());
    const frame_difference& d = b.frames.differences().front();
    EXPECT_EQ(d.what, "data");
    EXPECT_EQ(d.frame, 0u);
    EXPECT_EQ(d.opcode, 0x04);
    EXPECT_EQ(d.qp, 0xABCDEu - 0xFFFFF0u % 5);
    EXPECT_EQ(d.psn, 0xFFFFF0u);
    EXPECT_EQ(d.byte_offset, 54);  // the ICRC's first byte
    EXPECT_GT(b.dut.malformed_frames(), 0u);
}

TEST(SendPathSelf, CatchesADroppedPadByte) {
    conformance_bench b(rtl::make_deep_core_pad, always, deep_cfg());
    b.run_all(directed_stimulus());
    EXPECT_FALSE(b.functional_report("independent RTL, pad byte dropped"));
    ASSERT_FALSE(b.frames.differences().empty());
    // Frame 0..2 are SENDs of 0 bytes (no pad); the first with a pad is a 1-byte message:
    // SEND Only (frame 6), 54 + 1 bytes, pad 3 at 55..57: its frame ends a byte early, and the
    // byte at offset 57 is the ICRC's first byte instead of pad.
    const frame_difference& d = b.frames.differences().front();
    EXPECT_EQ(d.frame, 6u);
    EXPECT_EQ(d.opcode, 0x04);
    EXPECT_EQ(d.what, "data");
    EXPECT_EQ(d.byte_offset, 57);
    EXPECT_EQ(d.expected, 0);
    // Messages whose length is a multiple of 4 have no pad and are not reported.
    for (const auto& x : b.frames.differences()) {
        EXPECT_NE(x.frame % 24, 0u) << x.describe();
    }
}

TEST(SendPathSelf, CatchesValidDroppedWhileNotReady) {
    conformance_bench b(
        rtl::make_deep_core_valid, [](uint64_t e) { return e % 3 != 0; }, deep_cfg());
    b.run_all(directed_stimulus());
    EXPECT_FALSE(b.functional_report("independent RTL, valid dropped while not ready"));
    EXPECT_EQ(b.frames.differing(), 0u) << "the bytes are right; the stream rule is not";
    ASSERT_GT(b.dut.rule_violations(), 0u);
    const std::string& v = b.dut.violation_log().front();
    EXPECT_NE(v.find("stream (a valid beat holds until ready)"), std::string::npos) << v;
    EXPECT_NE(v.find("fr_valid_o fell"), std::string::npos) << v;
}

// In a run (violations fail it), the first frame that does not parse stops the run with a
// failure naming the send path, the frame (opcode, QP, PSN) and what is wrong.
TEST(SendPathSelf, MalformedFrameFailsTheRunNamingTheFrame) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    pattern_output out(clk);
    rtl::send_path_rtl dut("send_path", deep_cfg(), clk, out, ctx, rtl::make_deep_core_pad);
    std::mt19937 rng(2);
    sc_core::sc_spawn(
        [&] {
            put_message(dut, simple(make_desc(tx_kind::SEND, 1000, 0x42, 1024), rng));   // no pad
            put_message(dut, simple(make_desc(tx_kind::WRITE, 1001, 0x43, 1024), rng));  // pad 3
            put_message(dut, simple(make_desc(tx_kind::SEND, 7, 0x44, 1024), rng));
        },
        "driver");
    sc_core::sc_start();
    ASSERT_EQ(ctx.failures.size(), 1u);
    const std::string& f = ctx.failures.front();
    std::cout << f << std::endl;
    EXPECT_EQ(f.rfind("send_path: RTL broke the packet format rule", 0), 0u) << f;
    // WRITE Only (0x0a) to QP 0xabcde - 0x43 % 5, PSN 0x43.
    EXPECT_NE(f.find("frame 1 (message 1 packet 0: opcode 0x0a, QP 0x0abcdc, PSN 0x000043"),
              std::string::npos)
        << f;
    EXPECT_NE(f.find("does not parse: BAD_LENGTH"), std::string::npos) << f;
    EXPECT_EQ(dut.malformed_frames(), 1u);
}

// The quiescence rule: with the contract's default 4-edge window the wrapper stops the clock
// while an ACK is still inside the independent RTL; the restart check sees fr_valid_o rise
// with no input change and fails the run naming rule and edge. With the clock kept running
// (or the window the calibration measured) the same RTL runs correctly.
namespace {

std::vector<stim_message> acks() {
    std::vector<stim_message> v;
    std::mt19937 rng(1);
    for (uint32_t i = 0; i < 6; ++i) {
        stim_message m = simple(make_desc(tx_kind::ACK, 0, 100 + i, 1024), rng);
        m.gap_ns = 2000;  // idle in between: the clock stops
        v.push_back(m);
    }
    return v;
}

struct quiescence_run {
    sim_context ctx;
    clock_domain clk{"nic", CLOCK_MHZ};
    pattern_output out{clk};
    std::vector<uint64_t> first_edges;
    std::vector<uint64_t> desc_edges;
    explicit quiescence_run(send_path_config cfg) {
        rtl::send_path_rtl dut("dut", cfg, clk, out, ctx, rtl::make_deep_core);
        dut.set_beat_observer([this](const frame_beat& b) { first_edges.push_back(b.cycle); });
        dut.inputs().on_descriptor = [this](const tx_descriptor&, uint64_t v) {
            desc_edges.push_back(v);
        };
        sc_core::sc_spawn(
            [&] {
                for (const auto& m : acks()) {
                    put_message(dut, m);
                }
                sc_core::wait(5, sc_core::SC_US);
                sc_core::sc_stop();
            },
            "driver");
        sc_core::sc_start();
    }
};

}  // namespace

TEST(SendPathSelf, QuiescenceViolationFailsTheRun) {
    send_path_config cfg;
    cfg.rtl.quiescent_edges = 4;
    quiescence_run r(cfg);
    ASSERT_EQ(r.ctx.failures.size(), 1u);
    const std::string& f = r.ctx.failures.front();
    std::cout << f << std::endl;
    EXPECT_NE(f.find("dut: RTL broke the quiescence rule"), std::string::npos) << f;
    // Descriptor taken on edge D, the clock stopped after D+4; on restart edge D+5 is
    // evaluated with the pins unchanged and fr_valid_o rises: 5 edges after the handshake.
    ASSERT_FALSE(r.desc_edges.empty());
    const std::string edge = std::to_string(r.desc_edges[0] + 5);
    EXPECT_NE(f.find("at edge " + edge + ": fr_valid_o rose on edge " + edge + ", 5 edges"),
              std::string::npos)
        << f;
    EXPECT_NE(f.find("quiescent_edges to at least 5"), std::string::npos) << f;
}

void expect_acks_on_time(const send_path_config& cfg) {
    quiescence_run r(cfg);
    EXPECT_TRUE(r.ctx.failures.empty()) << r.ctx.failures.front();
    ASSERT_EQ(r.first_edges.size(), 6u);
    for (size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(r.first_edges[i] - r.desc_edges[i], 6u) << "ACK " << i;
    }
}

TEST(SendPathSelf, QuiescenceWithClockKeptRunningIsCorrect) {
    send_path_config cfg;
    cfg.rtl.clock = "free";
    cfg.rtl.quiescent_edges = 4;
    expect_acks_on_time(cfg);
}

TEST(SendPathSelf, QuiescenceWithTheMeasuredWindowIsCorrect) {
    send_path_config cfg;
    cfg.rtl.quiescent_edges = 5;
    expect_acks_on_time(cfg);
}

namespace {

std::string test_output(const std::string& name) {
    const char* dir = std::getenv("RNICSIM_BINARY_DIR");
    const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
    std::remove(path.c_str());
    return path;
}

// The FST as VCD text (GTKWave's fst2vcd), empty if it cannot be read.
std::string fst_as_vcd(const std::string& path) {
    std::string text;
    FILE* p = popen(("fst2vcd -f '" + path + "' 2>/dev/null").c_str(), "r");
    if (p == nullptr) {
        return text;
    }
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) {
        text.append(buf, n);
    }
    pclose(p);
    return text;
}

// First and last timestamps (#t lines) of a VCD text.
std::pair<uint64_t, uint64_t> vcd_time_range(const std::string& vcd) {
    uint64_t first = UINT64_MAX, last = 0;
    size_t pos = 0;
    while ((pos = vcd.find("\n#", pos)) != std::string::npos) {
        const uint64_t t = std::strtoull(vcd.c_str() + pos + 2, nullptr, 10);
        first = std::min(first, t);
        last = std::max(last, t);
        ++pos;
    }
    return {first, last};
}

}  // namespace

// Lockstep with waves on: at the first divergence the RTL's waveform window is written; the
// window holds the edges before the divergence was found, including the diverging beat.
TEST(SendPathSelf, LockstepWritesWaveformWindowAtDivergence) {
    const std::string path = test_output("send_path_lockstep_window_test.fst");
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    pattern_output out(clk);
    const send_path_config cfg;
    send_path_lockstep ls("send_path", cfg, clk, out, ctx, path,
                          [&](frame_output_if& o, const std::string& fst, bool window) {
                              return std::make_unique<rtl::send_path_rtl>(
                                  "rtl", cfg, clk, o, ctx, rtl::make_send_path_core_late, fst,
                                  window);
                          });
    beat_divergence div;
    ls.comparator().on_divergence = [&](const beat_divergence& d) {
        ls.rtl().dump_waveform_window();
        div = d;
        sc_core::sc_stop();
    };
    std::mt19937 rng(4);
    sc_core::sc_spawn(
        [&] {
            for (uint32_t i = 0; i < 4; ++i) {
                const stim_message m = simple(make_desc(tx_kind::WRITE, 3000, i * 3, 1024), rng);
                ls.put_descriptor(m.desc);
                payload_chunk c;
                c.bytes = m.payload;
                c.ready = sc_core::sc_time_stamp();
                ls.put_payload(std::move(c));
            }
        },
        "driver");
    sc_core::sc_start();
    EXPECT_EQ(div.what, "cycle");
    EXPECT_EQ(div.cycle_expected, 5u);
    EXPECT_EQ(div.cycle_got, 6u);
    const std::string vcd = fst_as_vcd(path);
    ASSERT_FALSE(vcd.empty()) << path;
    EXPECT_NE(vcd.find("fr_valid_o"), std::string::npos);
    const auto [first, last] = vcd_time_range(vcd);
    EXPECT_LE(first, div.cycle_got * 2000);
    EXPECT_GE(last, div.cycle_got * 2000);
}

// The window is bounded: after thousands of clocked edges only the last WINDOW_EDGES are
// written.
TEST(SendPathSelf, WaveformWindowKeepsOnlyTheLastEdges) {
    const std::string path = test_output("send_path_window_bound_test.fst");
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    pattern_output out(clk);
    rtl::send_path_rtl dut("dut", send_path_config{}, clk, out, ctx, rtl::make_send_path_core_ours,
                           path, true);
    std::mt19937 rng(5);
    sc_core::sc_spawn(
        [&] {
            for (uint32_t i = 0; i < 50; ++i) {
                const stim_message m = simple(make_desc(tx_kind::SEND, 4096, i, 4096), rng);
                dut.put_descriptor(m.desc);
                payload_chunk c;
                c.bytes = m.payload;
                c.ready = sc_core::sc_time_stamp();
                dut.put_payload(std::move(c));
            }
        },
        "driver");
    sc_core::sc_start();
    const uint64_t edges = dut.clocked_edges();
    ASSERT_GT(edges, 3000u);
    dut.dump_waveform_window();
    const std::string vcd = fst_as_vcd(path);
    ASSERT_FALSE(vcd.empty()) << path;
    const auto [first, last] = vcd_time_range(vcd);
    EXPECT_GE(first, (edges - rtl::send_path_rtl::WINDOW_EDGES - 1) * 2000 - 1000);
    EXPECT_LE(first, (edges - rtl::send_path_rtl::WINDOW_EDGES + 1) * 2000);
    EXPECT_GE(last, (edges - 1) * 2000);
}

// Lockstep "tolerance": our RTL against a model one output register deeper (every frame one
// edge later) agrees within 1 edge and diverges, naming the frame, with a tolerance of 0.
namespace {

std::vector<frame_difference> lockstep_tolerance(uint32_t tolerance, uint64_t& compared) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    pattern_output out(clk);
    out.ready = [](uint64_t e) { return e % 50 >= 5; };
    send_path_config cfg;
    cfg.timing.output_registers = 2;
    cfg.lockstep.compare = "tolerance";
    cfg.lockstep.tolerance_cycles = tolerance;
    send_path_lockstep ls("send_path", cfg, clk, out, ctx, "",
                          [&](frame_output_if& o, const std::string&, bool) {
                              return std::make_unique<rtl::send_path_rtl>(
                                  "rtl", cfg, clk, o, ctx, rtl::make_send_path_core_ours);
                          });
    std::vector<frame_difference> diffs;
    ls.frames().on_difference = [&](const frame_difference& d) { diffs.push_back(d); };
    sc_core::sc_spawn(
        [&] {
            for (const auto& m : random_stimulus(12, 60)) {
                put_message(ls, m);
            }
        },
        "driver");
    sc_core::sc_start();
    ls.frames().finish();
    compared = ls.frames().compared();
    return diffs;
}

}  // namespace

TEST(SendPathSelf, LockstepToleranceAcceptsOneEdge) {
    uint64_t compared = 0;
    const auto diffs = lockstep_tolerance(1, compared);
    EXPECT_TRUE(diffs.empty()) << diffs.front().describe();
    EXPECT_GT(compared, 60u);
}

TEST(SendPathSelf, LockstepToleranceZeroNamesTheFrame) {
    uint64_t compared = 0;
    const auto diffs = lockstep_tolerance(0, compared);
    ASSERT_FALSE(diffs.empty());
    EXPECT_EQ(diffs.front().frame, 0u);
    EXPECT_NE(diffs.front().what.find("timing: -1 edges from the model (tolerance 0)"),
              std::string::npos)
        << diffs.front().describe();
}

// Idle simulated time costs the RTL nothing: a millisecond of silence between two messages
// adds no clocked edges (the wrapper stops the clock when the block is quiescent).
TEST(SendPathSelf, IdleTimeCostsTheRtlNoEdges) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    pattern_output out(clk);
    rtl::send_path_rtl dut("dut", send_path_config{}, clk, out, ctx, rtl::make_send_path_core_ours);
    std::mt19937 rng(6);
    uint64_t after_first = 0;
    sc_core::sc_spawn(
        [&] {
            for (int i = 0; i < 2; ++i) {
                put_message(dut, simple(make_desc(tx_kind::SEND, 1000, i, 1024), rng));
                sc_core::wait(1, sc_core::SC_MS);  // 500000 idle edges
                after_first = after_first == 0 ? dut.clocked_edges() : after_first;
            }
        },
        "driver");
    sc_core::sc_start();
    // 17 beats per message, 4 edges of latency, 4 quiescent edges and 4 checked on restart:
    // about 29 each.
    EXPECT_LE(after_first, 32u);
    EXPECT_LE(dut.clocked_edges(), 2 * after_first + send_path_rtl_config{}.quiescence_check_edges);
    EXPECT_EQ(dut.get_stats().packets, 2u);
}
