// SPDX-License-Identifier: Apache-2.0
// Send path model: segmentation, opcodes, PSNs, headers, payload and ICRC of every frame, and
// the cycle timing of the 64-byte frame stream (first beat, throughput, stalls, back-pressure,
// FIFO blocking, reset).
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

#include "hw/common/config_reader.h"
#include "hw/roce/roce.h"
#include "hw/send_path/send_path_config.h"
#include "hw/send_path/send_path_model.h"
#include "hw/send_path/send_path_packets.h"

namespace {

using namespace rnic;
using namespace rnic::hw;

constexpr double CLOCK_MHZ = 500.0;  // 2 ns edges

// Frame output with a programmable ready pattern; records each frame with its completion edge.
class recording_output : public frame_output_if {
public:
    explicit recording_output(const clock_domain& clk)
        : m_clk(clk) {}
    std::function<bool(uint64_t)> ready = [](uint64_t) { return true; };
    uint64_t next_ready(uint64_t edge, bool) override {
        while (!ready(edge)) {
            ++edge;
        }
        return edge;
    }
    bool ready_at(uint64_t edge, bool) override { return ready(edge); }
    uint64_t peek_ready(uint64_t edge, bool fs) override { return next_ready(edge, fs); }
    void put_frame(fabric::eth_frame&& f) override {
        frames.push_back(std::move(f));
        frame_edges.push_back(m_clk.cycle_of(sc_core::sc_time_stamp()));
    }
    std::vector<fabric::eth_frame> frames;
    std::vector<uint64_t> frame_edges;

private:
    const clock_domain& m_clk;
};

struct bench {
    explicit bench(send_path_config cfg = {})
        : clk("nic", CLOCK_MHZ)
        , out(clk)
        , dut("send_path", cfg, clk, out, ctx) {
        dut.set_beat_observer([this](const frame_beat& b) { beats.push_back(b); });
    }
    sim_context ctx;
    clock_domain clk;
    recording_output out;
    send_path_model dut;
    std::vector<frame_beat> beats;

    // Runs `fn` as an SC_THREAD, then the simulation to starvation.
    void run(std::function<void()> fn) {
        sc_core::sc_spawn(std::move(fn), "driver");
        sc_core::sc_start();
    }
    sc_core::sc_time edge(uint64_t n) const { return time_of_edge(clk, n); }
};

std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 8));
    }
    return v;
}

tx_descriptor make_desc(tx_kind kind, uint32_t length, uint32_t psn, uint32_t pmtu = 1024) {
    tx_descriptor d;
    d.kind = kind;
    d.length = length;
    d.psn = psn;
    d.pmtu = pmtu;
    d.src_qpn = 0x12;
    d.dest_qpn = 0x345;
    d.remote_va = 0x00007f0012340000ull;
    d.rkey = 0xabcd;
    d.imm_or_key = 0x11223344;
    d.syndrome = roce::AETH_ACK_NO_CREDIT;
    d.msn = 77;
    d.src_mac = {0x02, 0, 0, 0, 0, 1};
    d.dst_mac = {0x02, 0, 0, 0, 0, 2};
    d.src_ip = 0xc0a80101;
    d.dst_ip = 0xc0a80102;
    return d;
}

// Puts a message: descriptor, then its payload in chunks of `chunk` bytes, ready at once.
void put_message(send_path_if& sp, const tx_descriptor& d, const std::vector<uint8_t>& payload,
                 size_t chunk = 1000) {
    sp.put_descriptor(d);
    for (size_t off = 0; off < payload.size(); off += chunk) {
        payload_chunk c;
        const size_t n = std::min(chunk, payload.size() - off);
        c.bytes.assign(payload.begin() + static_cast<std::ptrdiff_t>(off),
                       payload.begin() + static_cast<std::ptrdiff_t>(off + n));
        c.ready = sc_core::sc_time_stamp();
        sp.put_payload(std::move(c));
    }
}

roce::parsed_frame parse_ok(const fabric::eth_frame& f) {
    roce::parsed_frame p;
    const roce::parse_error e = roce::parse_frame(f.data.data(), f.data.size(), p);
    EXPECT_EQ(e, roce::parse_error::NONE) << roce::to_string(e);
    return p;
}

struct expected_message {
    tx_descriptor d;
    std::vector<uint8_t> payload;
};

// Checks every field of the frames of `msgs`, in order, against the segmentation rules.
void check_frames(const std::vector<fabric::eth_frame>& frames,
                  const std::vector<expected_message>& msgs) {
    size_t fi = 0;
    for (const auto& m : msgs) {
        const tx_descriptor& d = m.d;
        const bool payload = d.kind != tx_kind::READ_REQUEST && d.kind != tx_kind::ACK;
        const uint32_t n = payload && d.length > 0 ? (d.length + d.pmtu - 1) / d.pmtu : 1;
        for (uint32_t i = 0; i < n; ++i, ++fi) {
            SCOPED_TRACE(std::string(to_string(d.kind)) + " length " + std::to_string(d.length) +
                         " packet " + std::to_string(i));
            ASSERT_LT(fi, frames.size());
            const roce::parsed_frame p = parse_ok(frames[fi]);
            const auto& oi = roce::info(p.hdr.bth_.opcode);
            const bool first = i == 0, last = i + 1 == n;
            EXPECT_EQ(p.hdr.bth_.psn, (d.psn + i) & 0xFFFFFF);
            EXPECT_EQ(p.hdr.bth_.dest_qp, d.dest_qpn);
            EXPECT_EQ(p.hdr.udp_src_port, udp_source_port(d.src_qpn, d.dest_qpn));
            EXPECT_GE(p.hdr.udp_src_port, 0xC000);
            EXPECT_EQ(oi.is_only, first && last);
            EXPECT_EQ(oi.is_first, first && !last);
            EXPECT_EQ(oi.is_last, last && !first);
            EXPECT_EQ(oi.is_middle, !first && !last);
            const bool request = d.kind == tx_kind::SEND || d.kind == tx_kind::WRITE ||
                                 d.kind == tx_kind::READ_REQUEST;
            EXPECT_EQ(p.hdr.bth_.ack_req, last && request && d.ack_req);
            EXPECT_EQ(p.hdr.bth_.se,
                      last && d.solicited && (d.kind == tx_kind::SEND || d.kind == tx_kind::WRITE));
            switch (d.kind) {
                case tx_kind::SEND:
                    EXPECT_LE(p.hdr.bth_.opcode, roce::RC_SEND_ONLY_INV);
                    EXPECT_TRUE(p.hdr.bth_.opcode <= roce::RC_SEND_ONLY_IMM ||
                                p.hdr.bth_.opcode >= roce::RC_SEND_LAST_INV);
                    break;
                case tx_kind::WRITE:
                    EXPECT_GE(p.hdr.bth_.opcode, roce::RC_WRITE_FIRST);
                    EXPECT_LE(p.hdr.bth_.opcode, roce::RC_WRITE_ONLY_IMM);
                    EXPECT_EQ(oi.has_reth, first);
                    break;
                case tx_kind::READ_RESPONSE:
                    EXPECT_GE(p.hdr.bth_.opcode, roce::RC_READ_RESP_FIRST);
                    EXPECT_LE(p.hdr.bth_.opcode, roce::RC_READ_RESP_ONLY);
                    EXPECT_EQ(oi.has_aeth, !(!first && !last));
                    break;
                case tx_kind::READ_REQUEST:
                    EXPECT_EQ(p.hdr.bth_.opcode, roce::RC_READ_REQUEST);
                    break;
                case tx_kind::ACK:
                    EXPECT_EQ(p.hdr.bth_.opcode, roce::RC_ACK);
                    break;
            }
            EXPECT_EQ(oi.has_immdt, last && d.with_imm);
            EXPECT_EQ(oi.has_ieth, last && d.with_inv);
            if (oi.has_immdt) {
                EXPECT_EQ(p.hdr.immdt, d.imm_or_key);
            }
            if (oi.has_ieth) {
                EXPECT_EQ(p.hdr.ieth_rkey, d.imm_or_key);
            }
            if (oi.has_reth) {
                EXPECT_EQ(p.hdr.reth_.va, d.remote_va);
                EXPECT_EQ(p.hdr.reth_.rkey, d.rkey);
                EXPECT_EQ(p.hdr.reth_.dma_length, d.length);
            }
            if (oi.has_aeth) {
                EXPECT_EQ(p.hdr.aeth_.syndrome, d.syndrome);
                EXPECT_EQ(p.hdr.aeth_.msn, d.msn);
            }
            const size_t off = size_t{i} * d.pmtu;
            const size_t len = payload ? std::min<size_t>(d.pmtu, d.length - off) : 0;
            ASSERT_EQ(p.payload_len, len);
            if (len > 0) {
                EXPECT_EQ(0, std::memcmp(frames[fi].data.data() + p.payload_offset,
                                         m.payload.data() + off, len));
            }
            EXPECT_EQ(frames[fi].data.size(), roce::frame_bytes(p.hdr.bth_.opcode, len));
        }
    }
    EXPECT_EQ(fi, frames.size());
}

// Beats: in order, one per edge at most, contents equal to the frames, last flags right.
void check_beats_match_frames(const std::vector<frame_beat>& beats,
                              const std::vector<fabric::eth_frame>& frames) {
    size_t bi = 0;
    uint64_t prev = 0;
    for (const auto& f : frames) {
        const size_t nb = (f.data.size() + 63) / 64;
        for (size_t j = 0; j < nb; ++j, ++bi) {
            ASSERT_LT(bi, beats.size());
            const frame_beat& b = beats[bi];
            EXPECT_GT(b.cycle, prev);
            prev = b.cycle;
            const size_t n = std::min<size_t>(64, f.data.size() - 64 * j);
            EXPECT_EQ(0, std::memcmp(b.data.data(), f.data.data() + 64 * j, n));
            EXPECT_EQ(b.keep, n == 64 ? ~0ull : (1ull << n) - 1);
            EXPECT_EQ(b.last, j + 1 == nb);
        }
    }
    EXPECT_EQ(bi, beats.size());
}

}  // namespace

TEST(SendPath, SegmentsEverySizeAndOpcode) {
    bench b;
    std::vector<expected_message> msgs;
    const uint32_t pmtu = 256;
    uint32_t psn = 0xFFFFF0;  // wraps through 2^24
    uint8_t seed = 1;
    for (tx_kind k : {tx_kind::SEND, tx_kind::WRITE, tx_kind::READ_RESPONSE}) {
        for (uint32_t len : {0u, 1u, pmtu - 1, pmtu, pmtu + 1, 3 * pmtu + 5}) {
            for (int variant = 0; variant < 3; ++variant) {
                tx_descriptor d = make_desc(k, len, psn, pmtu);
                if (variant == 1 && k != tx_kind::READ_RESPONSE) {
                    d.with_imm = true;
                    d.solicited = true;
                } else if (variant == 2 && k == tx_kind::SEND) {
                    d.with_inv = true;
                    d.ack_req = false;
                } else if (variant != 0) {
                    continue;
                }
                msgs.push_back({d, pattern_bytes(len, seed++)});
                psn = (psn + packet_count(d)) & 0xFFFFFF;
            }
        }
    }
    tx_descriptor rr = make_desc(tx_kind::READ_REQUEST, 3 * pmtu + 5, psn, pmtu);
    msgs.push_back({rr, {}});
    psn = (psn + 4) & 0xFFFFFF;
    tx_descriptor ack = make_desc(tx_kind::ACK, 0, psn, pmtu);
    ack.syndrome = roce::AETH_NAK_PSN_SEQ_ERROR;
    msgs.push_back({ack, {}});

    b.run([&] {
        for (const auto& m : msgs) {
            put_message(b.dut, m.d, m.payload, 100);
        }
    });
    check_frames(b.out.frames, msgs);
    check_beats_match_frames(b.beats, b.out.frames);
    EXPECT_EQ(b.dut.get_stats().packets, b.out.frames.size());
    EXPECT_EQ(b.dut.get_stats().frames_read_request, 1u);
    EXPECT_EQ(b.dut.get_stats().frames_ack, 1u);
    EXPECT_EQ(b.dut.get_stats().messages, msgs.size());
    EXPECT_EQ(b.dut.get_stats().frames_send + b.dut.get_stats().frames_write +
                  b.dut.get_stats().frames_read_response + 2,
              b.out.frames.size());
}

TEST(SendPath, LargeMtuMessagesAndStatsRegistered) {
    bench b;
    std::vector<expected_message> msgs;
    uint32_t psn = 5;
    uint8_t seed = 9;
    for (uint32_t pmtu : {512u, 1024u, 2048u, 4096u}) {
        for (uint32_t len : {pmtu - 1, pmtu, pmtu + 1, 3 * pmtu + 5}) {
            tx_descriptor d = make_desc(tx_kind::WRITE, len, psn, pmtu);
            msgs.push_back({d, pattern_bytes(len, seed++)});
            psn += packet_count(d);
        }
    }
    b.run([&] {
        for (const auto& m : msgs) {
            put_message(b.dut, m.d, m.payload, 4096);
        }
    });
    check_frames(b.out.frames, msgs);
    const auto v = b.ctx.stats.values();
    ASSERT_TRUE(v.contains("send_path"));
    EXPECT_EQ(v["send_path"]["packets"].get<uint64_t>(), b.out.frames.size());
    EXPECT_EQ(v["send_path"]["beats"].get<uint64_t>(), b.beats.size());
}

// Descriptor and payload put at time 0 (valid on edge 1): accepted at edge 1, header
// registered at 2, first beat in the assembler at 3, in the output register at 4, out at 5.
TEST(SendPath, FirstBeatFourEdgesAfterDescriptorAndOneBeatPerCycle) {
    bench b;
    const auto payload = pattern_bytes(1000, 3);
    const tx_descriptor d = make_desc(tx_kind::SEND, 1000, 0);
    b.run([&] { put_message(b.dut, d, payload, 1000); });
    ASSERT_EQ(b.out.frames.size(), 1u);
    const size_t nbeats = (54 + 1000 + 4 + 63) / 64;  // 17
    ASSERT_EQ(b.beats.size(), nbeats);
    for (size_t j = 0; j < nbeats; ++j) {
        EXPECT_EQ(b.beats[j].cycle, 5 + j);
    }
    EXPECT_EQ(b.out.frame_edges[0], 5 + nbeats - 1);
    EXPECT_EQ(b.dut.get_stats().stall_payload_cycles, 0u);
    EXPECT_EQ(b.dut.get_stats().stall_backpressure_cycles, 0u);
}

// Frames of a multi-packet message and of following messages leave back to back.
TEST(SendPath, BackToBackFramesAcrossPacketsAndMessages) {
    bench b;
    std::vector<expected_message> msgs;
    for (int i = 0; i < 6; ++i) {
        const uint32_t len = i % 2 ? 4 * 1024 + 100 : 70;
        msgs.push_back({make_desc(i == 3 ? tx_kind::WRITE : tx_kind::SEND, len, 100 * i),
                        pattern_bytes(len, static_cast<uint8_t>(i))});
    }
    msgs.push_back({make_desc(tx_kind::ACK, 0, 900), {}});
    msgs.push_back({make_desc(tx_kind::ACK, 0, 901), {}});
    b.run([&] {
        for (const auto& m : msgs) {
            put_message(b.dut, m.d, m.payload, 4096);
        }
    });
    check_frames(b.out.frames, msgs);
    ASSERT_GT(b.beats.size(), 100u);
    EXPECT_EQ(b.beats[0].cycle, 5u);
    for (size_t i = 1; i < b.beats.size(); ++i) {
        EXPECT_EQ(b.beats[i].cycle, b.beats[i - 1].cycle + 1) << "beat " << i;
    }
}

// Payload beat 5 (bytes 320..383) is only in at edge 100: the output beat that consumes it
// enters the assembler at 100 (valid on the first edge after the ready time 99 * period),
// the output register at 101 and leaves at 102; the beats after it follow one per cycle.
TEST(SendPath, StallsWhenPayloadArrivesLate) {
    bench b;
    const auto payload = pattern_bytes(1000, 3);
    const tx_descriptor d = make_desc(tx_kind::SEND, 1000, 0);  // H = 54: beat j takes input j
    b.run([&] {
        b.dut.put_descriptor(d);
        payload_chunk c1;
        c1.bytes.assign(payload.begin(), payload.begin() + 320);
        c1.ready = sc_core::SC_ZERO_TIME;
        b.dut.put_payload(std::move(c1));
        payload_chunk c2;
        c2.bytes.assign(payload.begin() + 320, payload.end());
        c2.ready = b.edge(99);
        b.dut.put_payload(std::move(c2));
    });
    ASSERT_EQ(b.beats.size(), 17u);
    for (size_t j = 0; j < 5; ++j) {
        EXPECT_EQ(b.beats[j].cycle, 5 + j);
    }
    for (size_t j = 5; j < 17; ++j) {
        EXPECT_EQ(b.beats[j].cycle, 102 + (j - 5));
    }
    // Edges 10..101 had no beat valid inside the frame.
    EXPECT_EQ(b.dut.get_stats().stall_payload_cycles, 102u - 10u);
    check_frames(b.out.frames, {{d, payload}});
}

// The same late payload as one chunk streamed in parts (payload_chunk::parts, a transmit
// engine that cuts through): the beats are those of the two chunks above. With cut_through the
// frame enters the MAC FIFO at its first beat's edge carrying its last beat's time.
TEST(SendPath, StreamedPartsAndCutThroughIntoTheMac) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    channel<fabric::eth_frame> mac("mac_tx", 4);
    send_path_config cfg;
    cfg.cut_through = true;
    send_path_model dut("send_path", cfg, clk, mac, ctx);
    std::vector<frame_beat> beats;
    dut.set_beat_observer([&](const frame_beat& b) { beats.push_back(b); });
    const auto payload = pattern_bytes(1000, 3);
    const tx_descriptor d = make_desc(tx_kind::SEND, 1000, 0);
    sc_core::sc_spawn(
        [&] {
            dut.put_descriptor(d);
            payload_chunk c;
            c.bytes = payload;
            c.ready = time_of_edge(clk, 99);
            c.parts = {{320, sc_core::SC_ZERO_TIME}, {1000, time_of_edge(clk, 99)}};
            dut.put_payload(std::move(c));
        },
        "driver");
    std::vector<fabric::eth_frame> frames;
    sc_core::sc_time got_at;
    sc_core::sc_spawn(
        [&] {
            frames.push_back(mac.get());
            got_at = sc_core::sc_time_stamp();
        },
        "mac");
    sc_core::sc_start();
    ASSERT_EQ(beats.size(), 17u);
    for (size_t j = 0; j < 5; ++j) {
        EXPECT_EQ(beats[j].cycle, 5 + j);
    }
    for (size_t j = 5; j < 17; ++j) {
        EXPECT_EQ(beats[j].cycle, 102 + (j - 5));
    }
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(got_at, time_of_edge(clk, 5));
    EXPECT_EQ(frames[0].complete, time_of_edge(clk, 113));  // the last beat
    EXPECT_EQ(dut.get_stats().frames_cut_through, 1u);
    check_frames(frames, {{d, payload}});
}

// Ready low for edges 7..11: the beat due at 7 leaves at 12; the pipeline holds one beat in
// the output register and one in the assembler, so the rest follow back to back.
TEST(SendPath, BackPressureHoldsTheStream) {
    bench b;
    b.out.ready = [](uint64_t e) { return e < 7 || e >= 12; };
    const auto payload = pattern_bytes(2000, 4);
    const tx_descriptor d = make_desc(tx_kind::WRITE, 2000, 0, 4096);
    b.run([&] { put_message(b.dut, d, payload, 2000); });
    const size_t nbeats = (70 + 2000 + 4 + 63) / 64;
    ASSERT_EQ(b.beats.size(), nbeats);
    EXPECT_EQ(b.beats[0].cycle, 5u);
    EXPECT_EQ(b.beats[1].cycle, 6u);
    for (size_t j = 2; j < nbeats; ++j) {
        EXPECT_EQ(b.beats[j].cycle, 12 + (j - 2));
    }
    EXPECT_EQ(b.dut.get_stats().stall_backpressure_cycles, 5u);
    EXPECT_EQ(b.dut.get_stats().stall_payload_cycles, 0u);
}

// Frames into a one-deep MAC FIFO that nobody drains until 1 us: the second frame's first beat
// waits for the pop (ready from the first edge at or after it).
TEST(SendPath, MacFifoFullStallsFirstBeat) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    channel<fabric::eth_frame> mac("mac_tx", 1);
    send_path_model dut("send_path", send_path_config{}, clk, mac, ctx);
    std::vector<frame_beat> beats;
    dut.set_beat_observer([&](const frame_beat& b) { beats.push_back(b); });
    std::vector<uint64_t> popped;
    sc_core::sc_spawn(
        [&] {
            dut.put_descriptor(make_desc(tx_kind::ACK, 0, 1));
            dut.put_descriptor(make_desc(tx_kind::ACK, 0, 2));
        },
        "driver");
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(1001, sc_core::SC_NS);  // between edges 500 and 501
            for (int i = 0; i < 2; ++i) {
                mac.get();
                popped.push_back(clk.cycle_of(sc_core::sc_time_stamp()));
            }
        },
        "mac");
    sc_core::sc_start();
    ASSERT_EQ(beats.size(), 2u);  // an ACK frame is 62 bytes: one beat
    EXPECT_EQ(beats[0].cycle, 5u);
    EXPECT_EQ(beats[1].cycle, 501u);
    EXPECT_EQ(dut.get_stats().stall_backpressure_cycles, 501u - 6u);
    ASSERT_EQ(popped.size(), 2u);
}

// The same one-deep MAC FIFO with frames of many beats (a 2-packet WRITE, payload in at once):
// frame 0 leaves on edges 5..22 (70 + 1024 + 4 bytes: 18 beats), frame 1 (54 + 1024 + 4: 17
// beats) is ready at 23 but the FIFO is full until the pop at 1001 ns: its first beat leaves
// at 501 and the rest one per edge behind it, 502..517 (the beats after a held first beat
// stream as when nothing held it: the model computes them at once, and here its MAC path).
TEST(SendPath, MacFifoFullHoldsAFrameWhoseOtherBeatsFollowOnePerEdge) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    channel<fabric::eth_frame> mac("mac_tx", 1);
    send_path_model dut("send_path", send_path_config{}, clk, mac, ctx);
    std::vector<frame_beat> beats;
    dut.set_beat_observer([&](const frame_beat& b) { beats.push_back(b); });
    const auto payload = pattern_bytes(2048, 9);
    const tx_descriptor d = make_desc(tx_kind::WRITE, 2048, 10);
    std::vector<fabric::eth_frame> frames;
    std::vector<uint64_t> popped;
    sc_core::sc_spawn([&] { put_message(dut, d, payload, 1024); }, "driver");
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(1001, sc_core::SC_NS);  // between edges 500 and 501
            for (int i = 0; i < 2; ++i) {
                frames.push_back(mac.get());
                popped.push_back(clk.cycle_of(sc_core::sc_time_stamp()));
            }
        },
        "mac");
    sc_core::sc_start();
    ASSERT_EQ(beats.size(), 18u + 17u);
    for (size_t j = 0; j < 18; ++j) {
        EXPECT_EQ(beats[j].cycle, 5 + j) << "frame 0 beat " << j;
    }
    for (size_t j = 0; j < 17; ++j) {
        EXPECT_EQ(beats[18 + j].cycle, 501 + j) << "frame 1 beat " << j;
    }
    EXPECT_EQ(dut.get_stats().stall_backpressure_cycles, 501u - 23u);
    EXPECT_EQ(dut.get_stats().stall_payload_cycles, 0u);
    ASSERT_EQ(popped.size(), 2u);
    EXPECT_EQ(popped[1], 517u);  // frame 1 entered the FIFO at its last beat
    check_frames(frames, {{d, payload}});
}

// The model computes a frame's beats as soon as it can and does what happens at the last beat
// (the frame into the MAC FIFO, FIFO space, counters, idle) at that edge without waiting for it
// (README "Timing"): a frame computed ahead still holds its MAC FIFO slot from its first beat.
// A two-deep MAC FIFO drained from 2001 ns, a 4-packet WRITE (payload in at once): frames 0 and
// 1 leave back to back (edges 5..22, 23..39), frame 2 finds both slots taken (frame 1 not in
// the FIFO yet while its beats are still to come, then in it) and its first beat waits for the
// first pop at 2001 ns (edge 1001); frame 3 is ready behind it. Each frame enters the FIFO at
// its last beat's edge, the send path is idle from the last frame's last edge and not before,
// and the payload FIFO's space returns at each last beat.
TEST(SendPath, FramesComputedAheadHoldTheirMacSlotAndEnterAtTheirLastBeat) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    channel<fabric::eth_frame> mac("mac_tx", 2);
    send_path_config cfg;
    send_path_model dut("send_path", cfg, clk, mac, ctx);
    std::vector<frame_beat> beats;
    dut.set_beat_observer([&](const frame_beat& b) { beats.push_back(b); });
    const auto payload = pattern_bytes(4096, 3);
    const tx_descriptor d = make_desc(tx_kind::WRITE, 4096, 20);
    std::vector<uint64_t> entered;                    // edge of each put into the MAC FIFO
    std::vector<std::pair<uint64_t, uint64_t>> held;  // (edge, payload bytes held) at changes
    std::vector<std::pair<uint64_t, bool>> idle;      // (edge, idle) at every change
    sc_core::sc_spawn([&] { put_message(dut, d, payload, 4096); }, "driver");
    sc_core::sc_spawn(
        [&] {
            size_t before = 0;
            uint64_t bytes = 0;
            bool was_idle = dut.idle();
            // Samples once per edge, just after it (every change is made at an edge).
            for (uint64_t e = 0; e < 1200; ++e) {
                sc_core::wait(clk.time_of_cycle(e) + sc_core::sc_time(1, sc_core::SC_PS) -
                              sc_core::sc_time_stamp());
                if (mac.total() != before) {
                    entered.push_back(e);
                    before = mac.total();
                }
                if (dut.inputs().payload_bytes_held() != bytes) {
                    bytes = dut.inputs().payload_bytes_held();
                    held.emplace_back(e, bytes);
                }
                if (dut.idle() != was_idle) {
                    was_idle = dut.idle();
                    idle.emplace_back(e, was_idle);
                }
            }
        },
        "monitor");
    std::vector<fabric::eth_frame> frames;
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(2001, sc_core::SC_NS);  // between edges 1000 and 1001
            for (int i = 0; i < 4; ++i) {
                frames.push_back(mac.get());
            }
        },
        "mac");
    sc_core::sc_start();
    // Frame 0: 70 + 1024 + 4 bytes, 18 beats; the others 54 + 1024 + 4, 17 beats.
    ASSERT_EQ(beats.size(), 18u + 3 * 17u);
    const uint64_t first[4] = {5, 23, 1001, 1018};
    const uint32_t n[4] = {18, 17, 17, 17};
    std::vector<uint64_t> last;
    size_t k = 0;
    for (int f = 0; f < 4; ++f) {
        for (uint32_t j = 0; j < n[f]; ++j, ++k) {
            EXPECT_EQ(beats[k].cycle, first[f] + j) << "frame " << f << " beat " << j;
        }
        last.push_back(first[f] + n[f] - 1);
    }
    EXPECT_EQ(entered, last);  // into the MAC FIFO at the last beat's edge
    // The payload FIFO (16 KiB) took the whole message; 1024 bytes returned per last beat.
    ASSERT_EQ(held.size(), 5u);
    EXPECT_EQ(held[0].second, 4096u);
    for (size_t f = 0; f < 4; ++f) {
        EXPECT_EQ(held[f + 1], std::make_pair(last[f], uint64_t{4096 - 1024 * (f + 1)}));
    }
    ASSERT_FALSE(idle.empty());
    EXPECT_EQ(idle.back(), std::make_pair(last[3], true));
    EXPECT_EQ(dut.get_stats().packets, 4u);
    EXPECT_EQ(dut.get_stats().stall_backpressure_cycles, 1001u - 40u);
    check_frames(frames, {{d, payload}});
}

// A producer waiting for payload room with more of the message to put after it
// (wait_payload_room(true), as the transmit engine waits mid-segment) is let go at the edge of the
// last beat that returns the room, with that frame already in the MAC FIFO, and a MAC waiting for a
// frame gets it at the same time (README "Wake-ups": the waiting producer does the frame's
// last-beat step itself). Payload FIFO of 4 KiB, an 8-packet WRITE of 1 KiB packets, payload put at
// once while there is room, a one-frame MAC FIFO the MAC empties at once: chunks 0..3 go in at 0
// ns; frame 0 (18 beats, RETH) leaves at edges 5..22, frames 1..7 (17 beats) back to back after it
// (each computed at the pop of the one before, at its last beat), so chunk 4 goes in at edge 22,
// chunk 5 at 39, chunk 6 at 56, chunk 7 at 73 (each the last beat of the frame whose 1 KiB leaves),
// and the MAC has frame f at its last beat.
TEST(SendPath, ProducerWaitingForRoomGoesOnAtTheLastBeatWithTheFrameInTheMac) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    channel<fabric::eth_frame> mac("mac_tx", 1);
    send_path_config cfg;
    cfg.payload_fifo_bytes = 4096;
    send_path_model dut("send_path", cfg, clk, mac, ctx);
    const auto payload = pattern_bytes(8192, 5);
    const tx_descriptor d = make_desc(tx_kind::WRITE, 8192, 40);
    std::vector<uint64_t> put_edge;    // edge at which chunk i went in
    std::vector<uint64_t> mac_at_put;  // frames in the MAC by then
    sc_core::sc_spawn(
        [&] {
            dut.put_descriptor(d);
            for (size_t off = 0; off < payload.size(); off += 1024) {
                dut.wait_payload_room(off + 1024 < payload.size());
                put_edge.push_back(clk.cycle_of(sc_core::sc_time_stamp()));
                mac_at_put.push_back(mac.total());
                payload_chunk c;
                c.bytes.assign(payload.begin() + static_cast<std::ptrdiff_t>(off),
                               payload.begin() + static_cast<std::ptrdiff_t>(off + 1024));
                c.ready = sc_core::sc_time_stamp();
                dut.put_payload(std::move(c));
            }
        },
        "producer");
    std::vector<uint64_t> got_edge;
    std::vector<fabric::eth_frame> frames;
    sc_core::sc_spawn(
        [&] {
            for (int i = 0; i < 8; ++i) {
                frames.push_back(mac.get());
                got_edge.push_back(clk.cycle_of(sc_core::sc_time_stamp()));
            }
        },
        "mac");
    sc_core::sc_start();
    std::vector<uint64_t> last;  // each frame's last beat
    for (uint64_t f = 0, e = 22; f < 8; ++f, e += 17) {
        last.push_back(e);
    }
    EXPECT_EQ(put_edge, (std::vector<uint64_t>{0, 0, 0, 0, 22, 39, 56, 73}));
    EXPECT_EQ(mac_at_put, (std::vector<uint64_t>{0, 0, 0, 0, 1, 2, 3, 4}));
    EXPECT_EQ(got_edge, last);
    EXPECT_EQ(dut.get_stats().packets, 8u);
    EXPECT_EQ(dut.get_stats().stall_payload_cycles, 0u);
    check_frames(frames, {{d, payload}});
}

// Descriptor FIFO of one: the second put returns when the first message's last frame left
// (edge 5), so the second descriptor is valid at 6 and its frame leaves at 10.
TEST(SendPath, DescriptorFifoBlocksUntilMessageLeft) {
    send_path_config cfg;
    cfg.desc_fifo_depth = 1;
    bench b(cfg);
    sc_core::sc_time second_put;
    b.run([&] {
        b.dut.put_descriptor(make_desc(tx_kind::ACK, 0, 1));
        b.dut.put_descriptor(make_desc(tx_kind::ACK, 0, 2));
        second_put = sc_core::sc_time_stamp();
    });
    EXPECT_EQ(second_put, b.edge(5));
    ASSERT_EQ(b.beats.size(), 2u);
    EXPECT_EQ(b.beats[1].cycle, 10u);
}

// Payload FIFO of 4096 bytes, two 4 KiB packets: the second packet's bytes enter when the
// first packet has left, and the put returns then.
TEST(SendPath, PayloadFifoBlocksUntilPacketLeft) {
    send_path_config cfg;
    cfg.payload_fifo_bytes = 4096;
    bench b(cfg);
    const auto payload = pattern_bytes(8192, 5);
    const tx_descriptor d = make_desc(tx_kind::SEND, 8192, 0, 4096);
    sc_core::sc_time done;
    b.run([&] {
        put_message(b.dut, d, payload, 8192);
        done = sc_core::sc_time_stamp();
    });
    ASSERT_EQ(b.out.frames.size(), 2u);
    EXPECT_EQ(done, b.edge(b.out.frame_edges[0]));
    // Second frame's first payload beat is valid one edge after the release.
    EXPECT_EQ(b.beats[(54 + 4096 + 4 + 63) / 64].cycle, b.out.frame_edges[0] + 3);
    check_frames(b.out.frames, {{d, payload}});
}

// Reset in the middle of a message: beats before the reset edge are reported, the rest of the
// message is dropped, and traffic after the reset starts from a clean pipeline.
TEST(SendPath, ResetMidMessageDropsInFlightWork) {
    bench b;
    const auto payload = pattern_bytes(3000, 6);
    b.run([&] {
        put_message(b.dut, make_desc(tx_kind::SEND, 3000, 0), payload, 3000);
        sc_core::wait(b.edge(20) + sc_core::sc_time(1, sc_core::SC_NS) - sc_core::sc_time_stamp());
        b.dut.reset(2);  // edges 21, 22 in reset
        sc_core::wait(b.edge(30) - sc_core::sc_time_stamp());
        b.dut.put_descriptor(make_desc(tx_kind::ACK, 0, 9));
    });
    // Beats 5..20 of the first frame left; then the ACK: valid 31, out at 35.
    ASSERT_EQ(b.beats.size(), 17u);
    for (size_t j = 0; j < 16; ++j) {
        EXPECT_EQ(b.beats[j].cycle, 5 + j);
        EXPECT_FALSE(b.beats[j].last);
    }
    EXPECT_EQ(b.beats[16].cycle, 35u);
    EXPECT_TRUE(b.beats[16].last);
    EXPECT_EQ(b.beats[16].frame, 0u);
    ASSERT_EQ(b.out.frames.size(), 1u);
    EXPECT_EQ(roce::info(b.out.frames[0].data[42]).name, std::string("RC_ACK"));
}

TEST(SendPathConfig, ParsesAndRejectsWithJsonPath) {
    config::parse_context ctx;
    const auto c = parse_send_path_config(config::reader(
        nlohmann::json{{"impl", "lockstep"}, {"desc_fifo_depth", 4}}, "rnic.send_path", ctx));
    EXPECT_TRUE(ctx.errors.empty());
    EXPECT_EQ(c.impl, "lockstep");
    EXPECT_EQ(c.desc_fifo_depth, 4u);
    EXPECT_EQ(c.payload_fifo_bytes, 16384u);
    config::parse_context bad;
    parse_send_path_config(config::reader(
        nlohmann::json{{"impl", "verilog"}, {"payload_fifo_bytes", 100}, {"depth", 1}},
        "rnic.send_path", bad));
    ASSERT_EQ(bad.errors.size(), 3u);
    EXPECT_NE(bad.errors[0].find("rnic.send_path.impl"), std::string::npos);
    EXPECT_NE(bad.errors[1].find("rnic.send_path.payload_fifo_bytes: 100 out of range"),
              std::string::npos);
    EXPECT_NE(bad.errors[2].find("rnic.send_path.depth: unknown key"), std::string::npos);
}

// cut_through is the model's: the RTL wrapper hands whole frames to the MAC.
TEST(SendPathConfig, CutThroughIsModelOnly) {
    config::parse_context ctx;
    const auto c = parse_send_path_config(
        config::reader(nlohmann::json{{"cut_through", true}}, "rnic.send_path", ctx));
    EXPECT_TRUE(ctx.errors.empty());
    EXPECT_TRUE(c.cut_through);
    EXPECT_FALSE(send_path_config{}.cut_through);
    for (const char* impl : {"rtl", "lockstep"}) {
        config::parse_context bad;
        parse_send_path_config(config::reader(nlohmann::json{{"impl", impl}, {"cut_through", true}},
                                              "rnic.send_path", bad));
        ASSERT_EQ(bad.errors.size(), 1u) << impl;
        EXPECT_NE(bad.errors[0].find("rnic.send_path.cut_through: "), std::string::npos);
    }
}

TEST(SendPathConfig, TimingRtlAndLockstepKeys) {
    config::parse_context ctx;
    const auto c = parse_send_path_config(config::reader(
        nlohmann::json{{"timing", {{"output_registers", 3}, {"frame_gap", 2}}},
                       {"rtl", {{"clock", "free"}, {"quiescent_edges", 5}}},
                       {"lockstep", {{"compare", "tolerance"}, {"tolerance_cycles", 3}}}},
        "rnic.send_path", ctx));
    EXPECT_TRUE(ctx.errors.empty());
    EXPECT_EQ(c.timing.output_registers, 3u);
    EXPECT_EQ(c.timing.header_edges, 1u);
    EXPECT_EQ(c.timing.frame_gap, 2u);
    EXPECT_EQ(c.timing.first_beat_latency(), 6u);
    EXPECT_EQ(c.rtl.clock, "free");
    EXPECT_EQ(c.rtl.quiescent_edges, 5u);
    EXPECT_EQ(c.rtl.quiescence_check_edges, 4u);
    EXPECT_EQ(c.lockstep.compare, "tolerance");
    EXPECT_EQ(c.lockstep.tolerance_cycles, 3u);
    config::parse_context bad;
    parse_send_path_config(config::reader(nlohmann::json{{"timing", {{"output_registers", 0}}},
                                                         {"rtl", {{"clock", "sometimes"}}},
                                                         {"lockstep", {{"compare", "roughly"}}}},
                                          "rnic.send_path", bad));
    ASSERT_EQ(bad.errors.size(), 3u);
    EXPECT_NE(bad.errors[0].find("rnic.send_path.timing.output_registers: 0 out of range"),
              std::string::npos)
        << bad.errors[0];
    EXPECT_NE(bad.errors[1].find("rnic.send_path.rtl.clock"), std::string::npos);
    EXPECT_NE(bad.errors[2].find("rnic.send_path.lockstep.compare"), std::string::npos);
}

// rnic.send_path.timing: a message's first beat leaves header_edges + 2 + output_registers
// edges after its descriptor (valid on edge 1), the frames back to back with frame_gap idle
// edges before each further frame of a message; with the default timing, 4 and none.
TEST(SendPath, TimingParametersMoveTheBeats) {
    send_path_config cfg;
    cfg.timing.header_edges = 2;
    cfg.timing.output_registers = 3;
    cfg.timing.frame_gap = 2;
    bench b(cfg);
    const auto payload = pattern_bytes(600, 9);
    const tx_descriptor d = make_desc(tx_kind::SEND, 600, 0, 256);  // 3 packets
    b.run([&] { put_message(b.dut, d, payload, 600); });
    ASSERT_EQ(b.out.frames.size(), 3u);
    // Descriptor accepted at edge 1: header at 1 + 2, assembler 4, registers 5, 6, 7, out 8.
    EXPECT_EQ(b.beats[0].cycle, 1u + 2 + 2 + 3);
    size_t first_of_next = 0;
    for (size_t i = 1; i < b.beats.size(); ++i) {
        const uint64_t gap = b.beats[i].cycle - b.beats[i - 1].cycle;
        if (b.beats[i].index == 0) {
            EXPECT_EQ(gap, 1u + 2) << "beat " << i << ": frame_gap idle edges before a frame";
            ++first_of_next;
        } else {
            EXPECT_EQ(gap, 1u) << "beat " << i;
        }
    }
    EXPECT_EQ(first_of_next, 2u);
}

// With a VCD open, the input FIFOs' occupancy/valid/ready are traced under the block's name.
TEST(SendPath, TracesFifoOccupancyValidReady) {
    const char* dir = std::getenv("RNICSIM_BINARY_DIR");
    const std::string base = std::string(dir != nullptr ? dir : "/tmp") + "/send_path_trace_test";
    sc_core::sc_trace_file* tf = sc_core::sc_create_vcd_trace_file(base.c_str());
    {
        sim_context ctx;
        ctx.vcd = tf;
        clock_domain clk("nic", CLOCK_MHZ);
        recording_output out(clk);
        send_path_model dut("send_path", send_path_config{}, clk, out, ctx);
        sc_core::sc_spawn(
            [&] { put_message(dut, make_desc(tx_kind::SEND, 300, 0), pattern_bytes(300, 1)); },
            "driver");
        sc_core::sc_start();
        EXPECT_EQ(out.frames.size(), 1u);
    }
    sc_core::sc_close_vcd_trace_file(tf);
    std::ifstream f(base + ".vcd");
    const std::string vcd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    // SystemC's VCD writer turns the dotted names into scopes.
    for (const char* text :
         {"$scope module send_path", "$scope module desc_fifo", "$scope module payload_fifo",
          " occupancy ", " valid ", " ready ", " bytes ", " idle "}) {
        EXPECT_NE(vcd.find(text), std::string::npos) << text;
    }
}

// rnic.send_path.dscp: every frame carries the DSCP with ECN = ECT(0) in the IPv4 TOS, with a
// valid header checksum and ICRC (parse_frame checks both); the default is TOS 0x02.
TEST(SendPath, DscpGoesIntoTheTosWithEct0) {
    send_path_config cfg;
    cfg.dscp = 26;
    bench b(cfg);
    const auto payload = pattern_bytes(3000, 4);
    const tx_descriptor d = make_desc(tx_kind::WRITE, 3000, 7);
    b.run([&] { put_message(b.dut, d, payload, 1000); });
    ASSERT_EQ(b.out.frames.size(), 3u);
    for (const auto& f : b.out.frames) {
        const roce::parsed_frame p = parse_ok(f);
        EXPECT_EQ(f.data[15], (26 << 2) | 0x02);
        EXPECT_EQ(p.hdr.tos, (26 << 2) | 0x02);
    }
    rnic::config::parse_context pc;
    const nlohmann::json bad = {{"impl", "rtl"}, {"dscp", 26}};
    (void)parse_send_path_config(rnic::config::reader(bad, "rnic.send_path", pc));
    ASSERT_EQ(pc.errors.size(), 1u);
    EXPECT_EQ(pc.errors[0].rfind("rnic.send_path.dscp", 0), 0u) << pc.errors[0];
}

namespace {

// Puts message `d` as segments of `sizes` packets each (tx_descriptor::first_packet / packets),
// each followed by its bytes only. AckReq (ack_req) on the segment that ends the message, and
// on every segment with `ack_each` (as the scheduler's turns under a window).
void put_segments(send_path_if& sp, const tx_descriptor& d, const std::vector<uint8_t>& payload,
                  const std::vector<uint32_t>& sizes, bool ack_each = false) {
    uint32_t first = 0;
    for (const uint32_t n : sizes) {
        tx_descriptor s = d;
        s.first_packet = first;
        s.packets = n;
        s.ack_req = d.ack_req && (ack_each || first + n >= packet_count(d));
        const size_t from = static_cast<size_t>(first) * d.pmtu;
        const size_t to = std::min(payload.size(), static_cast<size_t>(first + n) * d.pmtu);
        sp.put_descriptor(s);
        payload_chunk c;
        c.bytes.assign(payload.begin() + static_cast<std::ptrdiff_t>(from),
                       payload.begin() + static_cast<std::ptrdiff_t>(to));
        c.ready = sc_core::sc_time_stamp();
        sp.put_payload(std::move(c));
        first += n;
    }
}

}  // namespace

// The round-robin scheduler (hw/tx_engine) hands a message in segments. A message sent as
// segments is the whole message's frames byte for byte (opcodes First..Last, PSNs, RETH only on
// packet 0, ImmDt and AckReq only on the last, the segment's bytes in place), and segments that
// continue one another keep the whole message's beat timing: one beat per edge, no gap. The
// descriptor FIFO (depth 1 here) takes the continuing segments without a slot of their own.
TEST(SendPath, SegmentsOfAMessageAreTheWholeMessage) {
    send_path_config cfg;
    cfg.desc_fifo_depth = 1;
    bench b(cfg);
    tx_descriptor d = make_desc(tx_kind::WRITE, 5 * 1024 + 300, 1000);
    d.with_imm = true;
    const std::vector<uint8_t> payload = pattern_bytes(d.length, 9);
    std::vector<expected_message> msgs = {{d, payload}, {d, payload}};
    b.run([&] {
        put_message(b.dut, d, payload, 4096);
        put_segments(b.dut, d, payload, {1, 2, 3});
    });
    ASSERT_EQ(b.out.frames.size(), 12u);
    check_frames(std::vector<fabric::eth_frame>(b.out.frames.begin(), b.out.frames.begin() + 6),
                 {msgs[0]});
    for (size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(b.out.frames[i].data, b.out.frames[6 + i].data) << "packet " << i;
    }
    // Within each message one beat per edge (the second message's first descriptor waits for
    // the first message's slot: depth 1), across its segments included.
    for (size_t i = 1; i < b.beats.size(); ++i) {
        if (b.beats[i].frame == 6 && b.beats[i].index == 0) {
            continue;
        }
        EXPECT_EQ(b.beats[i].cycle, b.beats[i - 1].cycle + 1) << "beat " << i;
    }
    EXPECT_EQ(b.dut.get_stats().messages, 2u) << "segments count as one message";
}

// A segment that asks for it carries AckReq on its own last packet (a windowed turn); a
// segment of another message (a second QP) is a message boundary: the header edges again.
TEST(SendPath, SegmentAckReqAndInterleavedMessages) {
    bench b;
    tx_descriptor a = make_desc(tx_kind::WRITE, 3 * 1024, 10);
    tx_descriptor c = make_desc(tx_kind::SEND, 2 * 1024, 500);
    c.src_qpn = 0x13;
    c.dest_qpn = 0x346;
    const std::vector<uint8_t> pa = pattern_bytes(a.length, 1);
    const std::vector<uint8_t> pc = pattern_bytes(c.length, 2);
    b.run([&] {
        put_segments(b.dut, a, pa, {1}, true);  // a: packet 0 (AckReq asked)
        put_segments(b.dut, c, pc, {1});        // c: packet 0
        tx_descriptor a1 = a;                   // a: packets 1..2
        a1.first_packet = 1;
        a1.packets = 2;
        b.dut.put_descriptor(a1);
        payload_chunk rest;
        rest.bytes.assign(pa.begin() + 1024, pa.end());
        rest.ready = sc_core::sc_time_stamp();
        b.dut.put_payload(std::move(rest));
        tx_descriptor c1 = c;  // c: packet 1
        c1.first_packet = 1;
        b.dut.put_descriptor(c1);
        payload_chunk crest;
        crest.bytes.assign(pc.begin() + 1024, pc.end());
        crest.ready = sc_core::sc_time_stamp();
        b.dut.put_payload(std::move(crest));
    });
    ASSERT_EQ(b.out.frames.size(), 5u);
    const uint8_t want_op[] = {roce::RC_WRITE_FIRST, roce::RC_SEND_FIRST, roce::RC_WRITE_MIDDLE,
                               roce::RC_WRITE_LAST, roce::RC_SEND_LAST};
    const uint32_t want_psn[] = {10, 500, 11, 12, 501};
    const bool want_ack[] = {true, false, false, true, true};
    for (size_t i = 0; i < 5; ++i) {
        const roce::parsed_frame p = parse_ok(b.out.frames[i]);
        EXPECT_EQ(p.hdr.bth_.opcode, want_op[i]) << "frame " << i;
        EXPECT_EQ(p.hdr.bth_.psn, want_psn[i]) << "frame " << i;
        EXPECT_EQ(p.hdr.bth_.ack_req, want_ack[i]) << "frame " << i;
    }
    EXPECT_EQ(b.dut.get_stats().messages, 2u);
}

// A segment outside its message is a bad descriptor (the model refuses it).
TEST(SendPath, SegmentOutsideTheMessageIsRefused) {
    tx_descriptor d = make_desc(tx_kind::WRITE, 2048, 0);
    d.first_packet = 2;
    EXPECT_NE(check_descriptor(d), "");
    d.first_packet = 1;
    d.packets = 2;
    EXPECT_NE(check_descriptor(d), "");
    d.packets = 1;
    EXPECT_EQ(check_descriptor(d), "");
    tx_descriptor ack = make_desc(tx_kind::ACK, 0, 0);
    ack.first_packet = 1;
    EXPECT_NE(check_descriptor(ack), "");
}
