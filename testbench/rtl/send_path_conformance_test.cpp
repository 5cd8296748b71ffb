// SPDX-License-Identifier: Apache-2.0
// Send path conformance suite: the RTL built into the simulator (ours, or the one given to
// CMake as RNICSIM_SEND_PATH_RTL) against the SystemC model, beat by beat and cycle by cycle,
// on directed and random stimulus: every opcode, sizes 0 to several MTUs, every header
// alignment, payload arriving late, back-pressure patterns, reset in the middle of a message.
// The last tests show that the suite catches deliberately broken RTL and says where.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <vector>

#include <systemc>

#include "hw/roce/roce.h"
#include "hw/send_path/send_path_lockstep.h"
#include "hw/send_path/send_path_model.h"
#include "rtl/send_path/send_path_broken.h"
#include "rtl/send_path/send_path_rtl.h"

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

bool always(uint64_t) { return true; }

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
        rtl::make_send_path_core,
        [](uint64_t e) { return ((e * 2654435761u) >> 13) % 4 != 0; }, cfg);
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
                    c.bytes.assign(m.payload.begin() + static_cast<std::ptrdiff_t>(off),
                                   m.payload.begin() +
                                       static_cast<std::ptrdiff_t>(off + m.chunks[i]));
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
