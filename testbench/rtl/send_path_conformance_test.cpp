// SPDX-License-Identifier: Apache-2.0
// Send path conformance suite, functional (label conformance): the RTL built into the
// simulator (ours, or the one given to CMake as RNICSIM_SEND_PATH_RTL) checked against the
// contract's hard rules (rtl/send_path/CONTRACT.md) on directed and random stimulus: the
// frames in order and byte for byte within keep (the SystemC model gives the expected bytes),
// keep and last on every beat, the stream rules (a valid beat holds until ready, ready does not
// depend on valid, nothing comes out without input, reset), the quiescence rule, every header
// alignment and pad length, back-pressure and payload gaps. Timing is not compared here (label
// conformance_timing reports it). A test goes on after a difference and prints each one,
// naming the packet (opcode, QP, PSN), the byte offset and both values, then a summary.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "rtl/send_path/send_path_core.h"
#include "testbench/rtl/send_path_stimulus.h"

namespace {

using namespace rnic;
using namespace rnic::hw;
using namespace rnic::sptest;

void expect_conforms(conformance_bench& b, const std::vector<stim_message>& msgs,
                     const std::string& what) {
    b.run_all(msgs);
    EXPECT_TRUE(b.functional_report(what));
    EXPECT_EQ(b.frames.compared(), expected_frames(msgs));
    EXPECT_EQ(b.dut_beats, expected_beats(msgs));
    EXPECT_EQ(b.dut_bad_frames, 0u);
    EXPECT_EQ(b.dut.get_stats().packets, b.ref.get_stats().packets);
}

}  // namespace

TEST(SendPathConformance, DirectedEveryOpcodeSizeAndAlignment) {
    conformance_bench b(rtl::make_send_path_core, always);
    expect_conforms(b, directed_stimulus(), "directed");
}

TEST(SendPathConformance, DirectedWithBackPressureEveryThirdCycle) {
    conformance_bench b(rtl::make_send_path_core, [](uint64_t e) { return e % 3 != 0; });
    expect_conforms(b, directed_stimulus(), "directed, back-pressure every third edge");
}

TEST(SendPathConformance, RandomSeed1) {
    conformance_bench b(rtl::make_send_path_core, always);
    expect_conforms(b, random_stimulus(1, 400), "random seed 1");
}

TEST(SendPathConformance, RandomSeed2WithBurstyBackPressure) {
    // Ready low for 37-cycle bursts every 200 cycles, and every 5th cycle.
    conformance_bench b(rtl::make_send_path_core,
                        [](uint64_t e) { return e % 200 >= 37 && e % 5 != 2; });
    expect_conforms(b, random_stimulus(2, 400), "random seed 2, bursty back-pressure");
}

TEST(SendPathConformance, RandomSeed3WithRandomReadyAndSmallFifos) {
    send_path_config cfg;
    cfg.desc_fifo_depth = 2;
    cfg.payload_fifo_bytes = 4096;
    conformance_bench b(
        rtl::make_send_path_core, [](uint64_t e) { return ((e * 2654435761u) >> 13) % 4 != 0; },
        cfg);
    expect_conforms(b, random_stimulus(3, 300), "random seed 3, random ready, small FIFOs");
}

// Reset in the middle of messages: after each reset the RTL starts over as after power-on;
// the frames of the last epoch (everything put after the last reset) are compared.
TEST(SendPathConformance, ResetInTheMiddleOfAMessage) {
    conformance_bench b(rtl::make_send_path_core, [](uint64_t e) { return e % 7 != 0; });
    std::mt19937 rng(11);
    const auto before = random_stimulus(4, 6);
    const auto after = random_stimulus(5, 20);
    b.run([&] {
        for (int round = 0; round < 3; ++round) {
            b.put(simple(make_desc(tx_kind::WRITE, 3000 + 500 * round, 1, 1024), rng));
            // Mid-cycle, in the middle of the message (first frame streaming).
            sc_core::wait(sc_core::sc_time(2 * (20 + 37 * round) + 1, sc_core::SC_NS));
            b.ref.reset(2 + round);
            b.dut.reset(2 + round);
            b.frames.cut();
            sc_core::wait(sc_core::sc_time(13, sc_core::SC_NS));
        }
        for (const auto& m : before) {
            b.put(m);
        }
        sc_core::wait(sc_core::sc_time(301, sc_core::SC_NS));
        b.ref.reset(3);
        b.dut.reset(3);
        b.frames.cut();
        for (const auto& m : after) {
            b.put(m);
        }
    });
    EXPECT_TRUE(b.functional_report("reset, then 20 messages"));
    EXPECT_GE(b.frames.compared(), expected_frames(after));  // and frames done before it
    EXPECT_EQ(b.dut_bad_frames, 0u);
}

// Lockstep with compare "functional": model and RTL on the same stimulus through a slow MAC,
// every frame compared, none differs, and the timing differences are counted, not failed.
TEST(SendPathConformance, LockstepFunctionalAgrees) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    channel<fabric::eth_frame> mac("mac_tx", 2);
    send_path_config cfg;
    cfg.lockstep.compare = "functional";
    send_path_lockstep ls("send_path", cfg, clk, mac, ctx);
    uint64_t differences = 0;
    ls.frames().on_difference = [&](const frame_difference& d) {
        ++differences;
        std::cout << "[ conformance ] " << d.describe() << std::endl;
    };
    const auto msgs = random_stimulus(6, 100);
    uint64_t frames = 0;
    sc_core::sc_spawn(
        [&] {
            for (const auto& m : msgs) {
                put_message(ls, m);
            }
        },
        "driver");
    // A slow MAC: one frame per 40 ns, so its FIFO fills and back-pressures both.
    sc_core::sc_spawn(
        [&] {
            for (;;) {
                mac.get();
                ++frames;
                sc_core::wait(40, sc_core::SC_NS);
            }
        },
        "mac");
    sc_core::sc_start();
    ls.frames().finish();
    std::cout << "[ conformance ] lockstep: " << ls.frames().summary() << std::endl;
    EXPECT_EQ(differences, 0u);
    EXPECT_TRUE(ctx.failures.empty()) << ctx.failures.front();
    EXPECT_EQ(ls.frames().compared(), expected_frames(msgs));
    EXPECT_EQ(frames, ls.get_stats().packets);
}

// Stream rules at the pins, driven directly: fr_valid_o and pl_ready_o low in reset; nothing comes
// out without input; ready never depends on the same stream's valid, and fr_valid_o never on
// fr_ready_i (each settled both ways on every edge of a stimulus with back-pressure).
TEST(SendPathConformance, StreamRulesAtThePins) {
    auto core = rtl::make_send_path_core(false);
    rtl::send_path_core& c = *core;
    c.set_clk(false);
    c.set_rst_n(false);
    c.set_desc_valid(false);
    c.set_payload_valid(false);
    c.set_fr_ready(true);
    c.eval();
    EXPECT_FALSE(c.fr_valid()) << "fr_valid_o high in reset";
    EXPECT_FALSE(c.pl_ready()) << "pl_ready_o high in reset";
    c.set_rst_n(true);
    c.eval();
    rtl::send_path_core::outputs o;
    // Idle: 200 edges without input, nothing comes out and ready is steady.
    for (int e = 0; e < 200; ++e) {
        c.settle(false, false, e % 2 == 0, o);
        ASSERT_FALSE(o.fr_valid) << "frame output without input, edge " << e;
        c.rise(o);
    }
    // Messages offered at the pins: a SEND with payload, a READ request, an ACK, a WRITE.
    std::mt19937 rng(3);
    std::vector<stim_message> msgs = {simple(make_desc(tx_kind::SEND, 300, 10, 256), rng),
                                      simple(make_desc(tx_kind::READ_REQUEST, 5000, 20, 1024), rng),
                                      simple(make_desc(tx_kind::ACK, 0, 30, 1024), rng),
                                      simple(make_desc(tx_kind::WRITE, 1001, 40, 512), rng)};
    size_t di = 0, pm = 0;
    uint32_t pb = 0;
    auto next_payload = [&]() -> bool {
        while (pm < msgs.size() &&
               (!carries_payload(msgs[pm].desc) || pb * 64 >= msgs[pm].desc.length)) {
            ++pm;
            pb = 0;
        }
        return pm < msgs.size();
    };
    uint64_t beats = 0, violations = 0;
    for (uint64_t e = 0; e < 3000; ++e) {
        const bool fr = (e * 2654435761u >> 11) % 3 != 0;
        const bool dv = di < msgs.size();
        if (dv) {
            c.set_desc(true, msgs[di].desc);
        }
        const bool pv = next_payload();
        if (pv) {
            uint8_t* lanes = c.payload_lanes();
            const auto& p = msgs[pm].payload;
            const size_t from = pb * 64, n = std::min<size_t>(64, p.size() - from);
            std::fill(lanes, lanes + 64, uint8_t{0});
            std::copy(p.begin() + static_cast<std::ptrdiff_t>(from),
                      p.begin() + static_cast<std::ptrdiff_t>(from + n), lanes);
            c.set_payload_meta(n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1,
                               from + n == p.size());
        }
        rtl::send_path_core::outputs a, b2;
        c.settle(false, pv, fr, a);
        c.settle(dv, pv, fr, b2);
        if (a.desc_ready != b2.desc_ready) {
            ++violations;
            ADD_FAILURE() << "desc_ready_o depends on desc_valid_i at edge " << e;
        }
        c.settle(dv, false, fr, a);
        c.settle(dv, pv, fr, b2);
        if (a.pl_ready != b2.pl_ready) {
            ++violations;
            ADD_FAILURE() << "pl_ready_o depends on pl_valid_i at edge " << e;
        }
        c.settle(dv, pv, !fr, a);
        c.settle(dv, pv, fr, b2);
        if (a.fr_valid != b2.fr_valid) {
            ++violations;
            ADD_FAILURE() << "fr_valid_o depends on fr_ready_i at edge " << e;
        }
        if (violations > 5) {
            break;
        }
        const bool hs_d = dv && b2.desc_ready, hs_p = pv && b2.pl_ready;
        beats += b2.fr_valid && fr;
        c.rise(o);
        if (hs_d) {
            ++di;
        }
        if (hs_p) {
            ++pb;
        }
    }
    EXPECT_EQ(di, msgs.size()) << "descriptors taken";
    EXPECT_EQ(beats, expected_beats(msgs)) << "frame beats";
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

}  // namespace

// The RTL writes its own waveform (rtl.fst) when asked: its ports (internal signals are the
// RTL's own business), clocked edges only, time in ps.
TEST(SendPathConformance, RtlWritesItsWaveform) {
    const std::string path = test_output("send_path_rtl_waveform_test.fst");
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    pattern_output out(clk);
    rtl::send_path_rtl dut("dut", send_path_config{}, clk, out, ctx, rtl::make_send_path_core,
                           path);
    std::mt19937 rng(3);
    sc_core::sc_spawn(
        [&] {
            put_message(dut, simple(make_desc(tx_kind::SEND, 200, 1, 1024), rng));
            sc_core::wait(1, sc_core::SC_US);
            sc_core::sc_stop();  // end_of_simulation closes the file
        },
        "driver");
    sc_core::sc_start();
    const std::string vcd = fst_as_vcd(path);
    ASSERT_FALSE(vcd.empty()) << path;
    for (const char* port : {"clk_i", "fr_valid_o", "fr_data_o", "desc_ready_o", "pl_ready_o"}) {
        EXPECT_NE(vcd.find(port), std::string::npos) << port;
    }
    EXPECT_EQ(dut.get_stats().packets, 1u);
    EXPECT_LT(dut.clocked_edges(), 100u);  // the clock stopped after the frame
}
