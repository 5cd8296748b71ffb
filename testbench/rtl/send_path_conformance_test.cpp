// SPDX-License-Identifier: Apache-2.0
// Send path conformance suite: the RTL built into the simulator (ours, or the one given to
// CMake as RNICSIM_SEND_PATH_RTL) against the SystemC model, beat by beat and cycle by cycle,
// on directed and random stimulus: every opcode, sizes 0 to several MTUs, every header
// alignment, payload arriving late, back-pressure patterns, reset in the middle of a message.
// The last tests show that the suite catches deliberately broken RTL and says where.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

#include "hw/roce/roce.h"
#include "hw/send_path/send_path.h"
#include "hw/send_path/send_path_lockstep.h"
#include "hw/send_path/send_path_model.h"
#include "rtl/send_path/send_path_broken.h"
#include "rtl/send_path/send_path_rtl.h"
#include "tlm/ethernet/eth_link.h"

namespace {

using namespace rnic;
using namespace rnic::hw;

constexpr double CLOCK_MHZ = 500.0;

// One message of stimulus: descriptor, payload, how it is chunked and when the chunks are in.
struct stim_message {
    tx_descriptor desc;
    std::vector<uint8_t> payload;
    std::vector<uint32_t> chunks;       // chunk sizes (sum = payload size)
    std::vector<uint32_t> ready_delay;  // per chunk: ready this many ns after its put
    uint32_t gap_ns = 0;                // idle time before the descriptor is put
};

// Model (reference) and RTL (under test) side by side, each with its own output driven by
// the same ready pattern, compared by a beat_comparator.
struct conformance_bench {
    conformance_bench(const rtl::send_path_core_factory& core, std::function<bool(uint64_t)> ready,
                      send_path_config cfg = {})
        : clk("nic", CLOCK_MHZ)
        , ref_out(clk)
        , dut_out(clk)
        , ref("ref", cfg, clk, ref_out, ctx)
        , dut("dut", cfg, clk, dut_out, ctx, core) {
        ref_out.ready = ready;
        dut_out.ready = ready;
        ref.set_beat_observer([this](const frame_beat& b) { cmp.expected(b); });
        dut.set_beat_observer([this](const frame_beat& b) {
            ++dut_beats;
            cmp.actual(b);
        });
        // The RTL gets exactly what the model's FIFOs accept, when they accept it.
        ref.inputs().on_descriptor = [this](const tx_descriptor& d, uint64_t v) {
            dut.inputs().mirror_descriptor(d, v);
        };
        ref.inputs().on_payload = [this](const uint8_t* p, size_t n, uint64_t v) {
            dut.inputs().mirror_payload(p, n, v);
        };
        dut_out.on_frame = [this](fabric::eth_frame&& f, uint64_t) {
            roce::parsed_frame p;
            if (roce::parse_frame(f.data.data(), f.data.size(), p) != roce::parse_error::NONE) {
                ++dut_bad_frames;
            }
            ++dut_frames;
        };
    }

    void put(const stim_message& m) {
        if (m.gap_ns > 0) {
            sc_core::wait(m.gap_ns, sc_core::SC_NS);
        }
        ref.put_descriptor(m.desc);
        size_t off = 0;
        for (size_t i = 0; i < m.chunks.size(); ++i) {
            payload_chunk c;
            c.bytes.assign(m.payload.begin() + static_cast<std::ptrdiff_t>(off),
                           m.payload.begin() + static_cast<std::ptrdiff_t>(off + m.chunks[i]));
            off += m.chunks[i];
            c.ready = sc_core::sc_time_stamp() + sc_core::sc_time(m.ready_delay[i], sc_core::SC_NS);
            ref.put_payload(std::move(c));
        }
    }

    // Runs `driver` as an SC_THREAD, then to starvation; returns false on a divergence.
    bool run(std::function<void()> driver) {
        sc_core::sc_spawn(std::move(driver), "driver");
        sc_core::sc_start();
        cmp.finish();
        if (cmp.diverged()) {
            std::cout << "[ conformance ] " << cmp.divergence().describe() << std::endl;
        }
        return !cmp.diverged();
    }

    sim_context ctx;
    clock_domain clk;
    pattern_output ref_out;
    pattern_output dut_out;
    send_path_model ref;
    rtl::send_path_rtl dut;
    beat_comparator cmp;
    uint64_t dut_beats = 0;
    uint64_t dut_frames = 0;
    uint64_t dut_bad_frames = 0;
};

tx_descriptor make_desc(tx_kind kind, uint32_t length, uint32_t psn, uint32_t pmtu) {
    tx_descriptor d;
    d.kind = kind;
    d.length = length;
    d.psn = psn & 0xFFFFFF;
    d.pmtu = pmtu;
    d.src_qpn = 0x1234 + psn % 7;
    d.dest_qpn = 0xABCDE - psn % 5;
    d.remote_va = 0x00007f0012340000ull + psn * 4096;
    d.rkey = 0xabcd0000u + psn;
    d.imm_or_key = 0x11223344u ^ psn;
    d.syndrome = psn % 3 ? roce::AETH_ACK_NO_CREDIT : roce::AETH_NAK_PSN_SEQ_ERROR;
    d.msn = psn * 3;
    d.src_mac = {0x02, 0, 0, 0, 0, 1};
    d.dst_mac = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(2 + psn % 3)};
    d.src_ip = 0xc0a80101;
    d.dst_ip = 0xc0a80102 + psn % 4;
    return d;
}

stim_message simple(tx_descriptor d, std::mt19937& rng) {
    stim_message m;
    m.desc = d;
    if (carries_payload(d)) {
        m.payload.resize(d.length);
        for (auto& b : m.payload) {
            b = static_cast<uint8_t>(rng());
        }
        if (d.length > 0) {
            m.chunks.push_back(d.length);
            m.ready_delay.push_back(0);
        }
    }
    return m;
}

// Every opcode and header length (54, 58, 70, 74 bytes: header mod 64 = 54, 58, 6, 10)
// with payload lengths covering every residue mod 64 (pad 0..3, ICRC in the same beat or
// spilling into the next), plus multi-packet messages at every path MTU.
std::vector<stim_message> directed_stimulus() {
    std::mt19937 rng(7);
    std::vector<stim_message> v;
    uint32_t psn = 0xFFFFF0;
    auto add = [&](tx_descriptor d) {
        v.push_back(simple(d, rng));
        psn += packet_count(d);
    };
    for (uint32_t len = 0; len <= 130; ++len) {
        add(make_desc(tx_kind::SEND, len, psn, 256));
        tx_descriptor imm = make_desc(tx_kind::SEND, len, psn, 256);
        imm.with_imm = true;
        imm.solicited = true;
        add(imm);
        tx_descriptor inv = make_desc(tx_kind::SEND, len, psn, 256);
        inv.with_inv = true;
        add(inv);
        add(make_desc(tx_kind::WRITE, len, psn, 256));
        tx_descriptor wimm = make_desc(tx_kind::WRITE, len, psn, 256);
        wimm.with_imm = true;
        add(wimm);
        add(make_desc(tx_kind::READ_RESPONSE, len, psn, 256));
    }
    add(make_desc(tx_kind::READ_REQUEST, 0, psn, 1024));
    add(make_desc(tx_kind::READ_REQUEST, 100000, psn, 1024));
    add(make_desc(tx_kind::ACK, 0, psn, 1024));
    for (uint32_t pmtu : {256u, 512u, 1024u, 2048u, 4096u}) {
        for (uint32_t len : {pmtu - 1, pmtu, pmtu + 1, 3 * pmtu + 5}) {
            for (tx_kind k : {tx_kind::SEND, tx_kind::WRITE, tx_kind::READ_RESPONSE}) {
                tx_descriptor d = make_desc(k, len, psn, pmtu);
                d.with_imm = k != tx_kind::READ_RESPONSE && len % 2 == 1;
                add(d);
            }
        }
    }
    return v;
}

// Random messages: kinds, flags, sizes 0..3 MTUs + 100, MTUs, chunking, late payload, gaps.
std::vector<stim_message> random_stimulus(uint32_t seed, size_t count) {
    std::mt19937 rng(seed);
    auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
    std::vector<stim_message> v;
    uint32_t psn = rng() & 0xFFFFFF;
    for (size_t i = 0; i < count; ++i) {
        const tx_kind k = static_cast<tx_kind>(pick(5));
        const uint32_t pmtu = 256u << pick(5);
        uint32_t len = 0;
        switch (pick(4)) {
            case 0:
                len = pick(130);
                break;
            case 1:
                len = pick(pmtu + 70);
                break;
            default:
                len = pick(3 * pmtu + 100);
                break;
        }
        tx_descriptor d = make_desc(k, len, psn, pmtu);
        d.with_imm = (k == tx_kind::SEND || k == tx_kind::WRITE) && pick(3) == 0;
        d.with_inv = k == tx_kind::SEND && !d.with_imm && pick(4) == 0;
        d.solicited = pick(2);
        d.ack_req = pick(4) != 0;
        stim_message m = simple(d, rng);
        if (!m.payload.empty()) {
            m.chunks.clear();
            m.ready_delay.clear();
            uint32_t left = len;
            while (left > 0) {
                const uint32_t c = std::min(left, 1 + pick(pick(2) ? 300 : 5000));
                m.chunks.push_back(c);
                m.ready_delay.push_back(pick(4) == 0 ? pick(400) : 0);
                left -= c;
            }
        }
        m.gap_ns = pick(5) == 0 ? pick(300) : 0;
        psn += packet_count(d);
        v.push_back(std::move(m));
    }
    return v;
}

size_t expected_beats(const std::vector<stim_message>& msgs) {
    size_t n = 0;
    for (const auto& m : msgs) {
        for (uint32_t p = 0; p < packet_count(m.desc); ++p) {
            n += plan_packet(m.desc, p).beats;
        }
    }
    return n;
}

void expect_conforms(conformance_bench& b, const std::vector<stim_message>& msgs) {
    EXPECT_TRUE(b.run([&] {
        for (const auto& m : msgs) {
            b.put(m);
        }
    }));
    EXPECT_EQ(b.dut_beats, expected_beats(msgs));
    EXPECT_EQ(b.cmp.compared(), expected_beats(msgs));
    EXPECT_EQ(b.dut_bad_frames, 0u);
    EXPECT_EQ(b.dut.get_stats().stall_backpressure_cycles,
              b.ref.get_stats().stall_backpressure_cycles);
    EXPECT_EQ(b.dut.get_stats().stall_payload_cycles, b.ref.get_stats().stall_payload_cycles);
    EXPECT_EQ(b.dut.get_stats().packets, b.ref.get_stats().packets);
}

bool always(uint64_t) {
    return true;
}

}  // namespace

TEST(SendPathConformance, DirectedEveryOpcodeSizeAndAlignment) {
    conformance_bench b(rtl::make_send_path_core, always);
    expect_conforms(b, directed_stimulus());
}

TEST(SendPathConformance, DirectedWithBackPressureEveryThirdCycle) {
    conformance_bench b(rtl::make_send_path_core, [](uint64_t e) { return e % 3 != 0; });
    expect_conforms(b, directed_stimulus());
}

TEST(SendPathConformance, RandomSeed1) {
    conformance_bench b(rtl::make_send_path_core, always);
    expect_conforms(b, random_stimulus(1, 400));
}

TEST(SendPathConformance, RandomSeed2WithBurstyBackPressure) {
    // Ready low for 37-cycle bursts every 200 cycles, and every 5th cycle.
    conformance_bench b(rtl::make_send_path_core,
                        [](uint64_t e) { return e % 200 >= 37 && e % 5 != 2; });
    expect_conforms(b, random_stimulus(2, 400));
}

TEST(SendPathConformance, RandomSeed3WithRandomReadyAndSmallFifos) {
    send_path_config cfg;
    cfg.desc_fifo_depth = 2;
    cfg.payload_fifo_bytes = 4096;
    conformance_bench b(
        rtl::make_send_path_core, [](uint64_t e) { return ((e * 2654435761u) >> 13) % 4 != 0; },
        cfg);
    expect_conforms(b, random_stimulus(3, 300));
}

TEST(SendPathConformance, ResetInTheMiddleOfAMessage) {
    conformance_bench b(rtl::make_send_path_core, [](uint64_t e) { return e % 7 != 0; });
    std::mt19937 rng(11);
    const auto before = random_stimulus(4, 6);
    const auto after = random_stimulus(5, 20);
    EXPECT_TRUE(b.run([&] {
        for (int round = 0; round < 3; ++round) {
            b.put(simple(make_desc(tx_kind::WRITE, 3000 + 500 * round, 1, 1024), rng));
            // Mid-cycle, in the middle of the message (first frame streaming).
            sc_core::wait(sc_core::sc_time(2 * (20 + 37 * round) + 1, sc_core::SC_NS));
            b.ref.reset(2 + round);
            b.dut.reset(2 + round);
            sc_core::wait(sc_core::sc_time(13, sc_core::SC_NS));
        }
        for (const auto& m : before) {
            b.put(m);
        }
        sc_core::wait(sc_core::sc_time(301, sc_core::SC_NS));
        b.ref.reset(3);
        b.dut.reset(3);
        for (const auto& m : after) {
            b.put(m);
        }
    }));
    EXPECT_GT(b.cmp.compared(), expected_beats(after));
    EXPECT_EQ(b.dut_bad_frames, 0u);
}

TEST(SendPathConformance, LockstepRunsBothAndAgrees) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    channel<fabric::eth_frame> mac("mac_tx", 2);
    send_path_lockstep ls("send_path", send_path_config{}, clk, mac, ctx);
    bool diverged = false;
    ls.comparator().on_divergence = [&](const beat_divergence&) { diverged = true; };
    const auto msgs = random_stimulus(6, 100);
    uint64_t frames = 0;
    sc_core::sc_spawn(
        [&] {
            for (const auto& m : msgs) {
                if (m.gap_ns > 0) {
                    sc_core::wait(m.gap_ns, sc_core::SC_NS);
                }
                ls.put_descriptor(m.desc);
                size_t off = 0;
                for (size_t i = 0; i < m.chunks.size(); ++i) {
                    payload_chunk c;
                    c.bytes.assign(
                        m.payload.begin() + static_cast<std::ptrdiff_t>(off),
                        m.payload.begin() + static_cast<std::ptrdiff_t>(off + m.chunks[i]));
                    off += m.chunks[i];
                    c.ready = sc_core::sc_time_stamp() +
                              sc_core::sc_time(m.ready_delay[i], sc_core::SC_NS);
                    ls.put_payload(std::move(c));
                }
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
    ls.comparator().finish();
    EXPECT_FALSE(diverged) << ls.comparator().divergence().describe();
    EXPECT_EQ(ls.comparator().compared(), expected_beats(msgs));
    EXPECT_EQ(frames, ls.get_stats().packets);
    EXPECT_GT(ls.get_stats().stall_backpressure_cycles, 0u);
}

// The suite itself: a send path one cycle late is caught at the first beat, with both cycles.
TEST(SendPathConformance, CatchesOneCycleLateRtl) {
    conformance_bench b(rtl::make_send_path_core_late, always);
    EXPECT_FALSE(b.run([&] {
        for (const auto& m : directed_stimulus()) {
            b.put(m);
        }
    }));
    const beat_divergence& d = b.cmp.divergence();
    EXPECT_EQ(d.what, "cycle");
    EXPECT_EQ(d.frame, 0u);
    EXPECT_EQ(d.beat, 0u);
    EXPECT_EQ(d.cycle_expected, 5u);
    EXPECT_EQ(d.cycle_got, 6u);
}

// ... and a wrong ICRC byte is caught at that byte: frame 0 is SEND Only with no payload,
// 54 header bytes, so the ICRC starts at byte offset 54.
TEST(SendPathConformance, CatchesWrongIcrcByte) {
    conformance_bench b(rtl::make_send_path_core_badcrc, always);
    EXPECT_FALSE(b.run([&] {
        for (const auto& m : directed_stimulus()) {
            b.put(m);
        }
    }));
    const beat_divergence& d = b.cmp.divergence();
    EXPECT_EQ(d.what, "data");
    EXPECT_EQ(d.frame, 0u);
    EXPECT_EQ(d.byte_offset, 54);
    EXPECT_EQ(d.expected ^ d.got, 0xFF);
    EXPECT_EQ(d.cycle_expected, d.cycle_got);
    EXPECT_GT(b.dut_bad_frames, 0u);
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

// The RTL writes its own waveform (rtl.fst) when asked: signals of the send path, clocked
// edges only, time in ps.
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
            const stim_message m = simple(make_desc(tx_kind::SEND, 200, 1, 1024), rng);
            dut.put_descriptor(m.desc);
            payload_chunk c;
            c.bytes = m.payload;
            c.ready = sc_core::SC_ZERO_TIME;
            dut.put_payload(std::move(c));
            sc_core::wait(1, sc_core::SC_US);
            sc_core::sc_stop();  // end_of_simulation closes the file
        },
        "driver");
    sc_core::sc_start();
    const std::string vcd = fst_as_vcd(path);
    ASSERT_FALSE(vcd.empty()) << path;
    EXPECT_NE(vcd.find("fr_valid_o"), std::string::npos);
    EXPECT_NE(vcd.find("crc_q"), std::string::npos);
    // Edges 1..8 are clocked (descriptor at 1, beats out at 5..8), nothing after.
    const auto [first, last] = vcd_time_range(vcd);
    EXPECT_EQ(first, 0u);
    EXPECT_GE(last, 8u * 2000u);
    EXPECT_LT(last, 20u * 2000u);
    EXPECT_LT(dut.clocked_edges(), 20u);
}

// Lockstep with waves on: at the first divergence the RTL's waveform window is written; the
// window holds the edges before the divergence was found, including the diverging beat.
TEST(SendPathConformance, LockstepWritesWaveformWindowAtDivergence) {
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
TEST(SendPathConformance, WaveformWindowKeepsOnlyTheLastEdges) {
    const std::string path = test_output("send_path_window_bound_test.fst");
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    pattern_output out(clk);
    rtl::send_path_rtl dut("dut", send_path_config{}, clk, out, ctx, rtl::make_send_path_core, path,
                           true);
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

// A whole wire: the same traffic through the model and through the RTL, each into its own
// 100 Gb/s link, gives the same frames with the same capture timestamps (what wire.pcap
// records) and the same arrival times.
TEST(SendPathConformance, ModelAndRtlProduceTheSameWire) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    fabric::eth_link_config lc;
    lc.rate_gbps = 100.0;
    fabric::eth_link link_m("link_model", lc, ctx);
    fabric::eth_link link_r("link_rtl", lc, ctx);
    send_path_config cfg;
    cfg.impl = "model";
    auto model = make_send_path("send_path_model", cfg, clk, link_m.tx(0), ctx);
    cfg.impl = "rtl";
    auto rtl_sp = make_send_path("send_path_rtl", cfg, clk, link_r.tx(0), ctx);
    struct capture : fabric::frame_sink_if {
        std::vector<std::pair<sc_core::sc_time, std::vector<uint8_t>>> sent, received;
        void receive_frame(fabric::eth_frame&& f) override {
            received.emplace_back(sc_core::sc_time_stamp(), std::move(f.data));
        }
    } cap_m, cap_r;
    link_m.attach(1, &cap_m);
    link_r.attach(1, &cap_r);
    link_m.set_capture(
        [&](int, const fabric::eth_frame& f) { cap_m.sent.emplace_back(f.tx_start, f.data); });
    link_r.set_capture(
        [&](int, const fabric::eth_frame& f) { cap_r.sent.emplace_back(f.tx_start, f.data); });
    const auto msgs = random_stimulus(9, 300);
    for (send_path_if* sp :
         {static_cast<send_path_if*>(model.get()), static_cast<send_path_if*>(rtl_sp.get())}) {
        sc_core::sc_spawn(
            [&msgs, sp] {
                for (const auto& m : msgs) {
                    if (m.gap_ns > 0) {
                        sc_core::wait(m.gap_ns, sc_core::SC_NS);
                    }
                    sp->put_descriptor(m.desc);
                    size_t off = 0;
                    for (size_t i = 0; i < m.chunks.size(); ++i) {
                        payload_chunk c;
                        c.bytes.assign(
                            m.payload.begin() + static_cast<std::ptrdiff_t>(off),
                            m.payload.begin() + static_cast<std::ptrdiff_t>(off + m.chunks[i]));
                        off += m.chunks[i];
                        c.ready = sc_core::sc_time_stamp() +
                                  sc_core::sc_time(m.ready_delay[i], sc_core::SC_NS);
                        sp->put_payload(std::move(c));
                    }
                }
            },
            sc_core::sc_gen_unique_name("driver"));
    }
    sc_core::sc_start();
    size_t frames = 0;
    for (const auto& m : msgs) {
        frames += packet_count(m.desc);
    }
    ASSERT_EQ(cap_m.sent.size(), frames);
    ASSERT_EQ(cap_r.sent.size(), frames);
    ASSERT_EQ(cap_r.received.size(), frames);
    for (size_t i = 0; i < frames; ++i) {
        ASSERT_EQ(cap_m.sent[i].first, cap_r.sent[i].first) << "frame " << i;
        ASSERT_EQ(cap_m.sent[i].second, cap_r.sent[i].second) << "frame " << i;
        ASSERT_EQ(cap_m.received[i].first, cap_r.received[i].first) << "frame " << i;
    }
    EXPECT_EQ(model->get_stats().stall_backpressure_cycles,
              rtl_sp->get_stats().stall_backpressure_cycles);
    EXPECT_GT(model->get_stats().stall_backpressure_cycles, 0u);
}

// Idle simulated time costs the RTL nothing: a millisecond of silence between two messages
// adds no clocked edges (the wrapper stops the clock when the block is quiescent).
TEST(SendPathConformance, IdleTimeCostsTheRtlNoEdges) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    pattern_output out(clk);
    rtl::send_path_rtl dut("dut", send_path_config{}, clk, out, ctx, rtl::make_send_path_core);
    std::mt19937 rng(6);
    uint64_t after_first = 0;
    sc_core::sc_spawn(
        [&] {
            for (int i = 0; i < 2; ++i) {
                const stim_message m = simple(make_desc(tx_kind::SEND, 1000, i, 1024), rng);
                dut.put_descriptor(m.desc);
                payload_chunk c;
                c.bytes = m.payload;
                c.ready = sc_core::sc_time_stamp();
                dut.put_payload(std::move(c));
                sc_core::wait(1, sc_core::SC_MS);  // 500000 idle edges
                after_first = after_first == 0 ? dut.clocked_edges() : after_first;
            }
        },
        "driver");
    sc_core::sc_start();
    // 17 beats per message, 4 edges of latency and 4 quiescent edges: about 25 each.
    EXPECT_LE(after_first, 30u);
    EXPECT_LE(dut.clocked_edges(), 2 * after_first);
    EXPECT_EQ(dut.get_stats().packets, 2u);
}
