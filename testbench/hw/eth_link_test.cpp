// SPDX-License-Identifier: Apache-2.0
// Ethernet link: wire bytes per frame, serialization at the line rate, arrival after
// serialization + propagation, back-to-back frames at exactly line rate, MAC FIFO
// back-pressure, capture at tx_start, full duplex, and the stats counters.
#include "tlm/ethernet/eth_link.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

#include "hw/common/config_reader.h"
#include "hw/common/sim_context.h"

namespace {

using rnic::fabric::eth_frame;
using rnic::fabric::eth_link;
using rnic::fabric::eth_link_config;
using rnic::fabric::eth_wire_bytes;
using sc_core::SC_NS;
using sc_core::SC_PS;
using sc_core::sc_time;

sc_time ps(double v) {
    return sc_time(v, SC_PS);
}

// The MAC receive side of a NIC: records each frame and when its last bit arrived.
struct sink : rnic::fabric::frame_sink_if {
    struct rx {
        sc_time at;
        eth_frame frame;
    };
    std::vector<rx> frames;
    void receive_frame(eth_frame&& f) override {
        frames.push_back({sc_core::sc_time_stamp(), std::move(f)});
    }
};

// A RoCEv2-shaped frame: BTH opcode at byte 42, destination QP at bytes 47..49. A frame shorter
// than 50 bytes has no room for those fields and stays filler only.
eth_frame roce_frame(size_t len, uint64_t flow, uint8_t opcode, uint32_t dest_qp) {
    eth_frame f;
    f.data.assign(len, 0x5A);
    if (len >= 50) {
        f.data[42] = opcode;
        f.data[47] = static_cast<uint8_t>(dest_qp >> 16);
        f.data[48] = static_cast<uint8_t>(dest_qp >> 8);
        f.data[49] = static_cast<uint8_t>(dest_qp);
    }
    f.flow_id = flow;
    return f;
}

eth_frame make_frame(size_t len, uint64_t flow, uint8_t seed = 0) {
    eth_frame f;
    f.data.resize(len);
    for (size_t i = 0; i < len; ++i) {
        f.data[i] = static_cast<uint8_t>(seed + i);
    }
    f.flow_id = flow;
    return f;
}

struct bench {
    rnic::hw::sim_context ctx;
    eth_link link;
    sink rx[2];
    explicit bench(const eth_link_config& cfg, const char* name = "eth")
        : link(name, cfg, ctx) {
        link.attach(0, &rx[0]);
        link.attach(1, &rx[1]);
    }
    // ps on the wire for a frame of `len` bytes (without FCS).
    double wire_ps(size_t len) const {
        return eth_wire_bytes(len) * 8000.0 / link.config().rate_gbps;
    }
    // Last bit of the frame (its FCS) after tx_start: wire time less the inter-frame gap.
    double last_bit_ps(size_t len) const {
        return (eth_wire_bytes(len) - 12) * 8000.0 / link.config().rate_gbps;
    }
    nlohmann::json stat(int side, const std::string& key) const {
        return ctx.stats.values()[std::string(link.name()) + ".dir" + std::to_string(side)][key];
    }
};

TEST(EthLink, WireBytesIncludeFcsPreambleIfgAndMinimumFrame) {
    EXPECT_EQ(eth_wire_bytes(0), 84u);   // padded to 64 B with FCS
    EXPECT_EQ(eth_wire_bytes(60), 84u);  // 60 + 4 FCS = 64: the minimum frame
    EXPECT_EQ(eth_wire_bytes(61), 85u);
    EXPECT_EQ(eth_wire_bytes(1000), 1024u);
    EXPECT_EQ(eth_wire_bytes(1514), 1538u);  // full 1500 B MTU frame: 1538 B slot
    EXPECT_EQ(eth_wire_bytes(9014), 9038u);
    eth_link_config c;
    EXPECT_DOUBLE_EQ(c.rate_gbps, 100.0);
    EXPECT_DOUBLE_EQ(c.propagation_ns, 50.0);
}

// rnic.link in a scenario: values, defaults and errors that name the JSON path.
TEST(EthLinkConfig, ParsesRateDelayFifoAndFaults) {
    rnic::config::parse_context pc;
    const auto j = nlohmann::json::parse(R"({"rate_gbps": 25, "propagation_ns": 500,
        "tx_fifo_frames": 8, "ctrl_fifo_frames": 3, "faults": {"drop": 0.5, "qp": 291, "opcode": 4,
        "link_down_ns": [[100, 200], [300, 400]], "seed": 7}})");
    const eth_link_config c =
        rnic::fabric::parse_eth_link_config(rnic::config::reader(j, "link", pc));
    EXPECT_TRUE(pc.errors.empty());
    EXPECT_DOUBLE_EQ(c.rate_gbps, 25.0);
    EXPECT_DOUBLE_EQ(c.propagation_ns, 500.0);
    EXPECT_EQ(c.tx_fifo_frames, 8u);
    EXPECT_EQ(c.ctrl_fifo_frames, 3u);
    EXPECT_DOUBLE_EQ(c.faults.drop, 0.5);
    EXPECT_EQ(c.faults.qp, 291);
    EXPECT_EQ(c.faults.opcode, 4);
    ASSERT_EQ(c.faults.link_down_ns.size(), 2u);
    EXPECT_DOUBLE_EQ(c.faults.link_down_ns[1].first, 300.0);
    EXPECT_EQ(c.faults.seed, 7u);
    EXPECT_TRUE(c.faults.any());
    EXPECT_EQ(pc.effective["link"]["faults"]["duplicate"], 0.0);  // defaults filled in
    EXPECT_EQ(eth_link_config{}.ctrl_fifo_frames, 8u);
    // One data slot is enough: the send path alone fills the data FIFO.
    rnic::config::parse_context one;
    const eth_link_config c1 = rnic::fabric::parse_eth_link_config(
        rnic::config::reader(nlohmann::json::parse(R"({"tx_fifo_frames": 1})"), "link", one));
    EXPECT_TRUE(one.errors.empty());
    EXPECT_EQ(c1.tx_fifo_frames, 1u);
    EXPECT_EQ(one.effective["link"]["ctrl_fifo_frames"], 8);

    rnic::config::parse_context bad;
    const auto jb = nlohmann::json::parse(R"({"rate_gbps": 0, "tx_fifo_frames": 0, "mtu": 1,
        "ctrl_fifo_frames": 4097,
        "faults": {"drop": 2, "link_down_ns": [[5, 1]], "window_start_ns": 10,
                   "window_end_ns": 5}})");
    rnic::fabric::parse_eth_link_config(rnic::config::reader(jb, "topology.link", bad));
    const std::vector<std::string> want = {
        "topology.link.rate_gbps:",           "topology.link.tx_fifo_frames:",
        "topology.link.ctrl_fifo_frames:",    "topology.link.mtu:",
        "topology.link.faults.drop:",         "topology.link.faults.link_down_ns:",
        "topology.link.faults.window_end_ns:"};
    for (const auto& w : want) {
        bool found = false;
        for (const auto& e : bad.errors) {
            found = found || e.rfind(w, 0) == 0;
        }
        EXPECT_TRUE(found) << "no error for " << w;
    }
    EXPECT_EQ(bad.errors.size(), want.size());
    EXPECT_THROW(bad.throw_if_errors(), rnic::config::config_error);
}

// faults.pfc_storm_*: a list of priorities becomes the class-enable mask, "b" side 1; bad
// values are errors that name their JSON path.
TEST(EthLinkConfig, PfcStormKeys) {
    rnic::config::parse_context pc;
    const auto j = nlohmann::json::parse(R"({"faults": {"pfc_storm_side": "b",
        "pfc_storm_priorities": [0, 3], "pfc_storm_start_ns": 100, "pfc_storm_end_ns": 200}})");
    const eth_link_config c =
        rnic::fabric::parse_eth_link_config(rnic::config::reader(j, "link", pc));
    EXPECT_TRUE(pc.errors.empty());
    EXPECT_EQ(c.faults.pfc_storm_side, 1);
    EXPECT_EQ(c.faults.pfc_storm_priorities, 0x09);
    EXPECT_DOUBLE_EQ(c.faults.pfc_storm_end_ns, 200.0);
    EXPECT_FALSE(c.faults.any()) << "a storm touches no frame";
    EXPECT_EQ(eth_link_config{}.faults.pfc_storm_priorities, 0) << "off by default";

    for (const char* bad_json :
         {R"({"faults": {"pfc_storm_priorities": [8]}})",
          R"({"faults": {"pfc_storm_priorities": 1}})", R"({"faults": {"pfc_storm_side": "c"}})",
          R"({"faults": {"pfc_storm_priorities": [0], "pfc_storm_start_ns": 5,
                         "pfc_storm_end_ns": 5}})",
          R"({"pfc": false, "faults": {"pfc_storm_priorities": [0]}})"}) {
        rnic::config::parse_context bad;
        rnic::fabric::parse_eth_link_config(
            rnic::config::reader(nlohmann::json::parse(bad_json), "topology.link", bad));
        ASSERT_EQ(bad.errors.size(), 1u) << bad_json;
        EXPECT_EQ(bad.errors[0].rfind("topology.link.faults.pfc_storm_", 0), 0u) << bad.errors[0];
    }
}

// 100 Gb/s = 80 ps per byte: a 1000 B frame occupies 1024 x 80 = 81.92 ns of the wire and is
// in at the peer 1012 x 80 ps + 50 ns after its first bit left.
TEST(EthLink, SerializationAndArrivalTime) {
    eth_link_config cfg;
    bench b(cfg);
    EXPECT_DOUBLE_EQ(b.link.ps_per_byte(), 80.0);
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(sc_time(10, SC_NS));
            b.link.tx(0).put(make_frame(1000, 7, 3));
            sc_core::wait(sc_time(1, sc_core::SC_US));
            b.link.tx(0).put(make_frame(40, 8));  // runt: padded to the minimum slot
        },
        "mac0");
    sc_core::sc_start();
    ASSERT_EQ(b.rx[1].frames.size(), 2u);
    EXPECT_TRUE(b.rx[0].frames.empty());
    const auto& f = b.rx[1].frames[0];
    EXPECT_EQ(f.frame.tx_start, sc_time(10, SC_NS));
    EXPECT_EQ(f.at, sc_time(10, SC_NS) + ps(1012 * 80) + sc_time(50, SC_NS));
    EXPECT_EQ(f.frame.data, make_frame(1000, 7, 3).data);
    EXPECT_EQ(f.frame.flow_id, 7u);
    const auto& g = b.rx[1].frames[1];
    EXPECT_EQ(g.frame.data.size(), 40u);  // padding is wire cost only
    EXPECT_EQ(g.at - g.frame.tx_start, ps(72 * 80) + sc_time(50, SC_NS));
    EXPECT_EQ(b.link.get_stats(0).busy_ps, 1024u * 80 + 84u * 80);
}

// A sink that takes frames ahead (a switch port) gets each data frame as its first bit leaves,
// with the arrival time of the rule above (last bit + propagation), computed then; the link
// delivers nothing to it later. A PFC frame never goes to it: the receiving MAC consumes it at
// its arrival and pauses its own transmitter.
struct ahead_sink : rnic::fabric::frame_sink_if {
    struct rx {
        sc_time handed;  // when the link handed it over
        sc_time at;      // its arrival
        eth_frame frame;
    };
    std::vector<rx> frames;
    int late = 0;  // receive_frame calls (at arrival): none expected
    void receive_frame(eth_frame&&) override { ++late; }
    bool takes_frames_ahead() const override { return true; }
    void receive_frame_ahead(eth_frame&& f, const sc_time& at) override {
        frames.push_back({sc_core::sc_time_stamp(), at, std::move(f)});
    }
};

TEST(EthLink, ASinkThatTakesFramesAheadGetsThemAsTheyStartWithTheirArrival) {
    eth_link_config cfg;  // 100 Gb/s (80 ps a byte), 50 ns
    rnic::hw::sim_context ctx;
    eth_link link("eth", cfg, ctx);
    ahead_sink a;
    sink nic;
    link.attach(0, &a);
    link.attach(1, &nic);
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(sc_time(10, SC_NS));
            link.tx(1).put(make_frame(1000, 7, 3));
            link.tx(1).put(make_frame(40, 8));  // back to back; a runt: the minimum slot
            sc_core::wait(sc_time(1, SC_NS));
            link.set_xoff(1, 1, true);  // side 1's receiver: a pause frame toward 0
        },
        "mac1");
    sc_core::sc_start(sc_time(5, sc_core::SC_US));
    ASSERT_EQ(a.frames.size(), 2u);
    EXPECT_EQ(a.late, 0);
    EXPECT_EQ(a.frames[0].handed, sc_time(10, SC_NS));
    EXPECT_EQ(a.frames[0].frame.tx_start, sc_time(10, SC_NS));
    EXPECT_EQ(a.frames[0].at, sc_time(10, SC_NS) + ps(1012 * 80) + sc_time(50, SC_NS));
    EXPECT_EQ(a.frames[0].frame.data, make_frame(1000, 7, 3).data);
    // The runt goes after the first frame's 1024-byte slot and the pause frame (queued at 11 ns,
    // sent ahead of data at that boundary).
    const sc_time second = a.frames[1].frame.tx_start;
    EXPECT_EQ(a.frames[1].handed, second);
    EXPECT_EQ(second, sc_time(10, SC_NS) + ps(1024 * 80) + ps(84 * 80));
    EXPECT_EQ(a.frames[1].at, second + ps(72 * 80) + sc_time(50, SC_NS));
    // The pause frame reached side 0's MAC (its transmitter is paused for priority 0), not the
    // sink.
    EXPECT_EQ(link.get_stats(1).pfc_frames, 1u);
    EXPECT_EQ(link.get_stats(0).pauses, 1u);
    EXPECT_EQ(link.paused(0) & 1, 1);
    EXPECT_TRUE(nic.frames.empty());
}

// Cut-through from the send path (eth_frame::complete): a frame put into the MAC FIFO before its
// last byte is in starts at the latest of now and (complete - (8 + L) byte times), so its last
// byte is in when the wire needs it; with `complete` already past it starts at once.
TEST(EthLink, CutThroughFrameStartsOnceItCannotUnderrun) {
    eth_link_config cfg;  // 100 Gb/s: 80 ps per byte
    bench b(cfg);
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(sc_time(10, SC_NS));
            eth_frame late = make_frame(4000, 1);
            late.complete = sc_time(10, SC_NS) + sc_time(500, SC_NS);  // in 0.5 us
            b.link.tx(0).put(std::move(late));
            sc_core::wait(sc_time(2, sc_core::SC_US));
            eth_frame early = make_frame(4000, 2);
            early.complete = sc_core::sc_time_stamp() + sc_time(100, SC_NS);  // faster than wire
            b.link.tx(0).put(std::move(early));
        },
        "mac0");
    sc_core::sc_start();
    ASSERT_EQ(b.rx[1].frames.size(), 2u);
    // 500 ns - (8 + 4000) x 80 ps = 179.36 ns after the put.
    EXPECT_EQ(b.rx[1].frames[0].frame.tx_start, sc_time(10, SC_NS) + ps(500e3 - 4008 * 80));
    EXPECT_EQ(b.rx[1].frames[1].frame.tx_start, sc_time(2010, SC_NS));
    EXPECT_EQ(b.rx[1].frames[1].frame.complete, sc_core::SC_ZERO_TIME);  // the MAC's own
}

// Frames queued back to back leave exactly one wire time apart (line rate), whatever their
// sizes, and arrive with the same spacing; at 25 Gb/s a byte is 320 ps.
TEST(EthLink, BackToBackFramesRunAtLineRate) {
    eth_link_config cfg;
    cfg.rate_gbps = 25;
    cfg.propagation_ns = 500;
    cfg.tx_fifo_frames = 16;
    bench b(cfg);
    const std::vector<size_t> sizes = {1514, 60, 1000, 100, 9014, 64, 64, 300};
    sc_core::sc_spawn(
        [&] {
            for (size_t i = 0; i < sizes.size(); ++i) {
                b.link.tx(1).put(make_frame(sizes[i], i));
            }
        },
        "mac1");
    sc_core::sc_start();
    const auto& rx = b.rx[0].frames;
    ASSERT_EQ(rx.size(), sizes.size());
    double start = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_EQ(rx[i].frame.flow_id, i);
        EXPECT_EQ(rx[i].frame.tx_start, ps(std::round(start))) << i;
        EXPECT_EQ(rx[i].at, ps(std::round(start)) + ps(std::round(b.last_bit_ps(sizes[i]))) +
                                sc_time(500, SC_NS))
            << i;
        start += b.wire_ps(sizes[i]);
    }
    // Throughput: all frame bytes over the busy time is the line rate times the frame share.
    uint64_t wire = 0;
    for (size_t s : sizes) {
        wire += eth_wire_bytes(s);
    }
    EXPECT_EQ(b.link.get_stats(1).wire_bytes, wire);
    EXPECT_EQ(b.link.get_stats(1).busy_ps, wire * 320);
    EXPECT_EQ(b.link.get_stats(0).frames, 0u);
}

// Each MAC transmits on its own oscillator (set_clock, topology.clocks): a port 100 ppm fast
// sends 1000 back-to-back 1024-byte slots in 1000 x 1024 x 80 ps / 1.0001 (81,911,809 ps,
// 8,191 ps less than nominal), each frame's start within 1 ps of that exact schedule; the other
// direction, at -40 ppm, is 40 ppm slow. With a jitter of 500 ps each frame starts off the
// exact schedule by a uniform draw in [0, 500] ps (less the first frame's), the rate unchanged.
TEST(EthLink, EachPortSendsOnItsOwnOscillator) {
    eth_link_config cfg;  // 100 Gb/s: 80 ps per byte
    cfg.propagation_ns = 0;
    cfg.tx_fifo_frames = 16;
    bench b(cfg);
    b.link.set_clock(0, 100, 0, 1);
    b.link.set_clock(1, -40, 0, 1);
    // A second link, both ports exact but for 500 ps of phase noise on side 0.
    bench j(cfg, "jittery");
    j.link.set_clock(0, 0, 500, 7);
    constexpr int N = 1000;
    constexpr size_t LEN = 1000;  // 1024-byte slot
    auto stream = [](eth_link& l, int side) {
        sc_core::sc_spawn(
            [&l, side] {
                for (int i = 0; i < N; ++i) {
                    l.tx(side).put(make_frame(LEN, i));
                }
            },
            sc_core::sc_gen_unique_name("mac"));
    };
    stream(b.link, 0);
    stream(b.link, 1);
    stream(j.link, 0);
    sc_core::sc_start();
    for (int side = 0; side < 2; ++side) {
        const double ppm = side == 0 ? 100 : -40;
        const auto& rx = b.rx[1 - side].frames;
        ASSERT_EQ(rx.size(), static_cast<size_t>(N));
        const double slot_ps = 1024 * 80.0 / (1 + ppm * 1e-6);
        for (int i = 0; i < N; ++i) {
            EXPECT_NEAR(rx[i].frame.tx_start.to_seconds() * 1e12, i * slot_ps, 1.0) << side << i;
        }
    }
    const double end0 = b.rx[1].frames.back().frame.tx_start.to_seconds() * 1e12;
    EXPECT_NEAR(999 * 1024 * 80.0 - end0, 999 * 1024 * 80.0 * (1 - 1 / 1.0001), 1.0);

    // Phase noise: frame i starts at i x slot + o_i - o_0, o uniform in [0, 500] ps: within
    // 500 ps of the exact schedule, with the spread of a uniform draw (sd 500 / sqrt(12) =
    // 144 ps), the rate exact.
    const auto& jr = j.rx[1].frames;
    ASSERT_EQ(jr.size(), static_cast<size_t>(N));
    double sum = 0;
    double sum2 = 0;
    for (int i = 0; i < N; ++i) {
        const double off = jr[i].frame.tx_start.to_seconds() * 1e12 - i * 1024 * 80.0;
        EXPECT_LE(std::abs(off), 500) << i;
        sum += off;
        sum2 += off * off;
    }
    const double mean = sum / N;
    EXPECT_NEAR(std::sqrt(sum2 / N - mean * mean), 500 / std::sqrt(12.0), 15);
}

// The MAC FIFO holds tx_fifo_frames; the producer's put() blocks until the serializer takes a
// frame, so a full FIFO releases one slot per wire time.
TEST(EthLink, FifoBackPressure) {
    eth_link_config cfg;
    cfg.tx_fifo_frames = 4;
    bench b(cfg);
    std::vector<sc_time> put_done;
    sc_core::sc_spawn(
        [&] {
            for (int i = 0; i < 10; ++i) {
                b.link.tx(0).put(make_frame(1514, i));
                put_done.push_back(sc_core::sc_time_stamp());
            }
        },
        "producer");
    sc_core::sc_start();
    ASSERT_EQ(put_done.size(), 10u);
    const sc_time slot = ps(1538 * 80);  // 123.04 ns
    // Frame 0 goes straight to the wire; 1..4 fill the FIFO; 5 waits until frame 1 leaves
    // the FIFO at the end of frame 0 ... (the serializer takes the next frame per slot).
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(put_done[i], sc_core::SC_ZERO_TIME) << i;
    }
    for (int i = 5; i < 10; ++i) {
        EXPECT_EQ(put_done[i], slot * static_cast<double>(i - 4)) << i;
    }
    EXPECT_EQ(b.link.tx(0).max_occupancy(), 4u);
    EXPECT_GT(b.link.tx(0).full_waits(), 0u);
    ASSERT_EQ(b.rx[1].frames.size(), 10u);
    EXPECT_EQ(b.rx[1].frames[9].frame.tx_start, slot * 9.0);  // still back to back
}

TEST(EthLink, CaptureSeesEveryFrameAtTxStartBothDirections) {
    eth_link_config cfg;
    bench b(cfg);
    struct cap {
        int side;
        sc_time now;
        sc_time tx_start;
        size_t len;
        uint64_t flow;
    };
    std::vector<cap> caps;
    b.link.set_capture([&](int side, const eth_frame& f) {
        caps.push_back({side, sc_core::sc_time_stamp(), f.tx_start, f.data.size(), f.flow_id});
    });
    // Full duplex: both sides send at once, neither waits for the other.
    sc_core::sc_spawn(
        [&] {
            b.link.tx(0).put(make_frame(500, 1));
            b.link.tx(0).put(make_frame(500, 2));
        },
        "a");
    sc_core::sc_spawn([&] { b.link.tx(1).put(make_frame(200, 3)); }, "z");
    sc_core::sc_start();
    ASSERT_EQ(caps.size(), 3u);
    int side0 = 0;
    for (const auto& c : caps) {
        EXPECT_EQ(c.now, c.tx_start) << "capture not at the first bit";
        side0 += c.side == 0;
        if (c.flow == 3) {
            EXPECT_EQ(c.side, 1);
            EXPECT_EQ(c.tx_start, sc_core::SC_ZERO_TIME);
            EXPECT_EQ(c.len, 200u);
        }
        if (c.flow == 2) {
            EXPECT_EQ(c.tx_start, ps(524 * 80));
        }
    }
    EXPECT_EQ(side0, 2);
    ASSERT_EQ(b.rx[0].frames.size(), 1u);
    ASSERT_EQ(b.rx[1].frames.size(), 2u);
    EXPECT_EQ(b.rx[0].frames[0].at, ps(212 * 80) + sc_time(50, SC_NS));
}

TEST(EthLink, StatsCounters) {
    eth_link_config cfg;
    cfg.rate_gbps = 400;  // 20 ps per byte
    bench b(cfg);
    sc_core::sc_spawn(
        [&] {
            b.link.tx(0).put(make_frame(60, 0));
            b.link.tx(0).put(make_frame(1514, 1));
            b.link.tx(1).put(make_frame(100, 2));
        },
        "traffic");
    sc_core::sc_start();
    const auto& s0 = b.link.get_stats(0);
    const auto& s1 = b.link.get_stats(1);
    EXPECT_EQ(s0.frames, 2u);
    EXPECT_EQ(s0.bytes, 1574u);
    EXPECT_EQ(s0.wire_bytes, 84u + 1538u);
    EXPECT_EQ(s0.busy_ps, (84u + 1538u) * 20u);
    EXPECT_EQ(s1.frames, 1u);
    EXPECT_EQ(s1.bytes, 100u);
    EXPECT_EQ(s1.wire_bytes, 124u);
    EXPECT_EQ(b.stat(0, "frames").get<uint64_t>(), 2u);
    EXPECT_EQ(b.stat(0, "wire_bytes").get<uint64_t>(), 1622u);
    EXPECT_EQ(b.stat(1, "bytes").get<uint64_t>(), 100u);
    EXPECT_EQ(b.stat(1, "busy_ps").get<uint64_t>(), 124u * 20u);
}

// ---- Fault injection (seeded, filtered by time window, opcode and QP) ----------------------

TEST(EthLink, FaultDropFilterAndLinkDownWindow) {
    eth_link_config down;
    down.faults.link_down_ns = {{1000, 2000}};
    eth_link_config drop;
    drop.faults.drop = 1.0;
    drop.faults.opcode = 0x11;  // only this opcode
    bench a(down, "eth_down");
    bench b(drop, "eth_drop");
    sc_core::sc_spawn(
        [&] {
            a.link.tx(0).put(roce_frame(100, 0, 0x04, 1));  // sent at 0: delivered
            sc_core::wait(sc_time(1500, SC_NS));
            a.link.tx(0).put(roce_frame(100, 1, 0x04, 1));  // sent at 1.5 us: lost
            sc_core::wait(sc_time(1000, SC_NS));
            a.link.tx(0).put(roce_frame(100, 2, 0x04, 1));  // sent at 2.5 us: delivered
        },
        "a_tx");
    sc_core::sc_spawn(
        [&] {
            b.link.tx(1).put(roce_frame(100, 10, 0x11, 1));
            b.link.tx(1).put(roce_frame(100, 11, 0x04, 1));
            b.link.tx(1).put(roce_frame(100, 12, 0x11, 1));
            b.link.tx(1).put(roce_frame(30, 13, 0x00, 0));  // too short to have a BTH: kept
        },
        "b_tx");
    sc_core::sc_start();
    ASSERT_EQ(a.rx[1].frames.size(), 2u);
    EXPECT_EQ(a.rx[1].frames[0].frame.flow_id, 0u);
    EXPECT_EQ(a.rx[1].frames[1].frame.flow_id, 2u);
    EXPECT_EQ(a.link.get_stats(0).link_down_drops, 1u);
    EXPECT_EQ(a.link.get_stats(0).frames, 3u);  // the lost frame still used the wire
    ASSERT_EQ(b.rx[0].frames.size(), 2u);
    EXPECT_EQ(b.rx[0].frames[0].frame.flow_id, 11u);
    EXPECT_EQ(b.rx[0].frames[1].frame.flow_id, 13u);
    EXPECT_EQ(b.link.get_stats(1).dropped, 2u);
    EXPECT_EQ(b.stat(1, "faults_dropped").get<uint64_t>(), 2u);
}

TEST(EthLink, FaultCorruptDuplicateReorderAndJitter) {
    eth_link_config dup;
    dup.faults.corrupt = 1.0;
    dup.faults.duplicate = 1.0;
    dup.faults.qp = 0x123;  // only frames to this QP
    eth_link_config reo;
    reo.faults.reorder = 1.0;
    reo.faults.reorder_delay_ns = 1000;
    reo.faults.window_start_ns = 0;
    reo.faults.window_end_ns = 10;  // only the first frame
    eth_link_config jit;
    jit.faults.jitter_ns = 100;
    bench a(dup, "eth_dup");
    bench b(reo, "eth_reo");
    bench c(jit, "eth_jit");
    sc_core::sc_spawn(
        [&] {
            a.link.tx(0).put(roce_frame(200, 1, 0x04, 0x123));
            a.link.tx(0).put(roce_frame(200, 2, 0x04, 0x124));
            b.link.tx(0).put(roce_frame(200, 1, 0x04, 1));
            b.link.tx(0).put(roce_frame(200, 2, 0x04, 1));
            for (int i = 0; i < 20; ++i) {
                c.link.tx(0).put(roce_frame(100, i, 0x04, 1));
            }
        },
        "tx");
    sc_core::sc_start();
    // Corrupt + duplicate: the QP's frame arrives twice, one bit flipped, at the same time.
    ASSERT_EQ(a.rx[1].frames.size(), 3u);
    const auto clean = roce_frame(200, 1, 0x04, 0x123).data;
    int dups = 0;
    for (const auto& r : a.rx[1].frames) {
        if (r.frame.flow_id != 1) {
            EXPECT_EQ(r.frame.data, roce_frame(200, 2, 0x04, 0x124).data);
            continue;
        }
        ++dups;
        int bits = 0;
        for (size_t i = 0; i < clean.size(); ++i) {
            bits += __builtin_popcount(static_cast<unsigned>(clean[i] ^ r.frame.data[i]));
        }
        EXPECT_EQ(bits, 1);
        EXPECT_EQ(r.at, ps(std::round(a.last_bit_ps(200))) + sc_time(50, SC_NS));
    }
    EXPECT_EQ(dups, 2);
    EXPECT_EQ(a.link.get_stats(0).corrupted, 1u);
    EXPECT_EQ(a.link.get_stats(0).duplicated, 1u);
    // Reorder: the first frame is held back 1 us and the second overtakes it.
    ASSERT_EQ(b.rx[1].frames.size(), 2u);
    EXPECT_EQ(b.rx[1].frames[0].frame.flow_id, 2u);
    EXPECT_EQ(b.rx[1].frames[1].frame.flow_id, 1u);
    EXPECT_EQ(b.rx[1].frames[1].at, ps(std::round(b.last_bit_ps(200))) + sc_time(50 + 1000, SC_NS));
    EXPECT_EQ(b.link.get_stats(0).reordered, 1u);
    // Jitter: each frame up to 100 ns late, never early.
    ASSERT_EQ(c.rx[1].frames.size(), 20u);
    bool any_late = false;
    for (const auto& r : c.rx[1].frames) {
        const sc_time nominal =
            r.frame.tx_start + ps(std::round(c.last_bit_ps(100))) + sc_time(50, SC_NS);
        EXPECT_GE(r.at, nominal);
        EXPECT_LE(r.at, nominal + sc_time(100, SC_NS));
        any_late = any_late || r.at > nominal;
    }
    EXPECT_TRUE(any_late);
    EXPECT_EQ(c.link.get_stats(0).delayed, 20u);
}

// Same seed, same faults: a run is reproducible frame by frame.
TEST(EthLink, FaultsAreReproducibleForASeed) {
    eth_link_config cfg;
    cfg.faults.drop = 0.3;
    cfg.faults.corrupt = 0.2;
    cfg.faults.seed = 42;
    eth_link_config other = cfg;
    other.faults.seed = 43;
    bench a(cfg, "eth_a");
    bench b(cfg, "eth_b");
    bench c(other, "eth_c");
    sc_core::sc_spawn(
        [&] {
            for (int i = 0; i < 200; ++i) {
                a.link.tx(0).put(roce_frame(100, i, 0x04, 1));
                b.link.tx(0).put(roce_frame(100, i, 0x04, 1));
                c.link.tx(0).put(roce_frame(100, i, 0x04, 1));
            }
        },
        "tx");
    sc_core::sc_start();
    ASSERT_EQ(a.rx[1].frames.size(), b.rx[1].frames.size());
    for (size_t i = 0; i < a.rx[1].frames.size(); ++i) {
        EXPECT_EQ(a.rx[1].frames[i].frame.flow_id, b.rx[1].frames[i].frame.flow_id);
        EXPECT_EQ(a.rx[1].frames[i].frame.data, b.rx[1].frames[i].frame.data);
        EXPECT_EQ(a.rx[1].frames[i].at, b.rx[1].frames[i].at);
    }
    // About 30 % dropped; another seed drops other frames.
    EXPECT_GT(a.link.get_stats(0).dropped, 30u);
    EXPECT_LT(a.link.get_stats(0).dropped, 90u);
    bool differs = c.rx[1].frames.size() != a.rx[1].frames.size();
    for (size_t i = 0; !differs && i < a.rx[1].frames.size(); ++i) {
        differs = a.rx[1].frames[i].frame.flow_id != c.rx[1].frames[i].frame.flow_id;
    }
    EXPECT_TRUE(differs);
}

}  // namespace

namespace {
// An IPv4 frame with the given DSCP (its PFC priority is DSCP >> 3).
eth_frame ipv4_frame(size_t len, uint64_t flow, uint8_t dscp) {
    eth_frame f = make_frame(len, flow);
    f.data[12] = 0x08;
    f.data[13] = 0x00;
    f.data[14] = 0x45;
    f.data[15] = static_cast<uint8_t>(dscp << 2);
    return f;
}
}  // namespace

// PFC: side 1's receiver asserts XOFF for priority 0 at t = 0. Its pause frame (802.1Qbb
// layout) leaves at once and pauses side 0 only when its last bit has arrived, 72 byte times +
// propagation later; side 0 keeps sending until then, finishes nothing new after, and resumes
// when the XON frame (quanta 0) has arrived. Pause frames never reach the receiver's client.
TEST(EthLink, PfcPauseActsWhenItArrivesAndResumesAtXon) {
    eth_link_config cfg;
    cfg.propagation_ns = 1000;
    cfg.tx_fifo_frames = 64;
    bench b(cfg);
    b.link.set_mac(1, {0x02, 0, 0, 0, 0, 0x11});
    std::vector<std::pair<int, eth_frame>> cap;
    b.link.set_capture([&](int side, const eth_frame& f) { cap.emplace_back(side, f); });
    sc_core::sc_spawn(
        [&] {
            for (uint64_t k = 0; k < 20; ++k) {
                b.link.tx(0).put(ipv4_frame(1000, k, 0));
            }
        },
        "mac0");
    sc_core::sc_spawn(
        [&] {
            b.link.set_xoff(1, 0x01, true);
            sc_core::wait(sc_time(3000, SC_NS));
            b.link.set_xoff(1, 0x01, false);
        },
        "rx1");
    sc_core::sc_start();
    ASSERT_EQ(b.rx[1].frames.size(), 20u);
    EXPECT_TRUE(b.rx[0].frames.empty()) << "MAC control frames stay in the MAC";
    const sc_time arrive_on = ps(72 * 80) + sc_time(1000, SC_NS);
    const sc_time arrive_off = sc_time(3000, SC_NS) + ps(72 * 80) + sc_time(1000, SC_NS);
    const double slot = 1024 * 80;  // 1000-byte frame: 1024 wire bytes
    // Frames whose first bit left before the pause arrived: k * slot < arrive_on.
    const uint64_t before = static_cast<uint64_t>(std::ceil(arrive_on.to_seconds() * 1e12 / slot));
    for (uint64_t k = 0; k < 20; ++k) {
        const sc_time expect = k < before ? ps(k * slot) : arrive_off + ps((k - before) * slot);
        EXPECT_EQ(b.rx[1].frames[k].frame.tx_start, expect) << k;
    }
    // Two pause frames from side 1: XOFF (time[0] = 0xFFFF) and XON (0), 802.1Qbb layout.
    std::vector<std::vector<uint8_t>> pauses;
    for (const auto& c : cap) {
        if (c.first == 1) {
            pauses.push_back(c.second.data);
        }
    }
    ASSERT_EQ(pauses.size(), 2u);
    std::vector<uint8_t> xoff = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01, 0x02, 0,    0,    0,
                                 0,    0x11, 0x88, 0x08, 0x01, 0x01, 0x00, 0x01, 0xFF, 0xFF};
    xoff.resize(60, 0);
    EXPECT_EQ(pauses[0], xoff);
    std::vector<uint8_t> xon = xoff;
    xon[18] = xon[19] = 0;
    EXPECT_EQ(pauses[1], xon);
    EXPECT_EQ(b.link.get_stats(1).pfc_frames, 2u);
    EXPECT_EQ(b.link.get_stats(0).pauses, 1u);
    EXPECT_EQ(b.link.get_stats(0).pause_ps, 3000000u);
}

// A pause names priorities: a pause of priority 1 leaves priority 0 frames flowing; with pfc
// off, set_xoff sends nothing.
TEST(EthLink, PfcPausesOnlyTheNamedPriorities) {
    eth_link_config cfg;
    cfg.tx_fifo_frames = 64;
    bench b(cfg);
    sc_core::sc_spawn(
        [&] {
            b.link.set_xoff(1, 0x02, true);
            sc_core::wait(sc_time(500, SC_NS));
            for (uint64_t k = 0; k < 5; ++k) {
                b.link.tx(0).put(ipv4_frame(500, k, 0));
            }
            b.link.tx(0).put(ipv4_frame(500, 5, 8));  // DSCP 8: priority 1, held
            sc_core::wait(sc_time(2000, SC_NS));
            b.link.set_xoff(1, 0x02, false);
        },
        "mac");
    sc_core::sc_start();
    ASSERT_EQ(b.rx[1].frames.size(), 6u);
    EXPECT_EQ(b.rx[1].frames[0].frame.tx_start, sc_time(500, SC_NS));
    EXPECT_EQ(b.rx[1].frames[4].frame.tx_start, sc_time(500, SC_NS) + ps(4 * 524 * 80));
    // Priority 1 leaves when the XON frame (sent at 2500 ns) has arrived: 72 bytes + 50 ns.
    EXPECT_EQ(b.rx[1].frames[5].frame.tx_start,
              sc_time(2500, SC_NS) + ps(72 * 80) + sc_time(50, SC_NS));
    EXPECT_EQ(b.link.get_stats(0).pauses, 1u);
    EXPECT_EQ(b.link.get_stats(1).pfc_frames, 2u);
}

TEST(EthLink, PfcOffSendsNoPauseFrames) {
    eth_link_config cfg;
    cfg.pfc = false;
    bench b(cfg);
    sc_core::sc_spawn([&] { b.link.set_xoff(1, 0xFF, true); }, "rx1");
    sc_core::sc_start();
    EXPECT_EQ(b.link.get_stats(1).pfc_frames, 0u);
    EXPECT_EQ(b.link.get_stats(1).frames, 0u);
}

namespace {

// The MAC control queue (ctrl_tx: CM MADs and ARP from the GSI, CNPs): served ahead of the data
// FIFO at the next frame boundary. Data frames of 1000 B (1024 wire bytes) queue at t = 0; a
// 60-byte control frame (84 wire bytes) put at 10 ns leaves as soon as data frame 0 is done,
// and data frame 1 follows it: t = 1024, 1024 + 84 byte times (80 ps at 100 Gb/s).
TEST(EthLinkCtrlQueue, ControlGoesAheadOfQueuedDataAtNextFrameBoundary) {
    eth_link_config cfg;
    cfg.tx_fifo_frames = 8;
    bench b(cfg);
    sc_core::sc_spawn(
        [&] {
            for (uint64_t k = 0; k < 6; ++k) {
                b.link.tx(0).put(ipv4_frame(1000, k, 0));
            }
        },
        "data");
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(sc_time(10, SC_NS));
            b.link.ctrl_tx(0).put(ipv4_frame(60, 100, 0));
        },
        "ctrl");
    sc_core::sc_start();
    const auto& rx = b.rx[1].frames;
    ASSERT_EQ(rx.size(), 7u);
    const std::vector<uint64_t> order = {0, 100, 1, 2, 3, 4, 5};
    const std::vector<double> start = {0,         1024,      1024 + 84, 2048 + 84,
                                       3072 + 84, 4096 + 84, 5120 + 84};
    for (size_t i = 0; i < rx.size(); ++i) {
        EXPECT_EQ(rx[i].frame.flow_id, order[i]) << i;
        EXPECT_EQ(rx[i].frame.tx_start, ps(start[i] * 80)) << i;
    }
    EXPECT_EQ(b.link.get_stats(0).ctrl_frames, 1u);
    EXPECT_EQ(b.stat(0, "ctrl_frames"), 1);
    EXPECT_EQ(b.stat(0, "ctrl_peak_frames"), 1);
    EXPECT_EQ(b.link.get_stats(0).frames, 7u);
}

// A data FIFO kept full (a producer that refills its single slot the moment it frees, as the
// send path does under sustained traffic) never holds a control frame back for more than the
// frame on the wire: each of 20 control frames, put at random-looking times during a stream of
// 400 full-size frames, starts within one 1538-byte slot of its put. (Sharing one FIFO,
// first come first served or with a rule leaving the last slot to data, both fail this.)
TEST(EthLinkCtrlQueue, ControlIsNeverStarvedByAFullDataFifo) {
    eth_link_config cfg;
    cfg.tx_fifo_frames = 1;
    cfg.ctrl_fifo_frames = 2;
    bench b(cfg);
    bool data_done = false;
    sc_core::sc_spawn(
        [&] {
            for (uint64_t k = 0; k < 400; ++k) {
                b.link.tx(0).put(ipv4_frame(1514, k, 0));
            }
            data_done = true;
        },
        "data");
    std::vector<sc_time> put_at;
    sc_core::sc_spawn(
        [&] {
            for (uint64_t k = 0; k < 20; ++k) {
                sc_core::wait(ps(1000.0 * (1000 + 997 * k % 1500)));
                put_at.push_back(sc_core::sc_time_stamp());
                b.link.ctrl_tx(0).put(ipv4_frame(60, 1000 + k, 0));
            }
            EXPECT_FALSE(data_done) << "the stream was meant to outlast the control frames";
        },
        "ctrl");
    sc_core::sc_start();
    std::vector<sc_time> sent;
    for (const auto& r : b.rx[1].frames) {
        if (r.frame.flow_id >= 1000) {
            sent.push_back(r.frame.tx_start);
        }
    }
    ASSERT_EQ(sent.size(), 20u);
    ASSERT_EQ(put_at.size(), 20u);
    for (size_t k = 0; k < 20; ++k) {
        EXPECT_GE(sent[k], put_at[k]) << k;
        EXPECT_LE(sent[k], put_at[k] + ps(1538 * 80)) << k;
    }
    EXPECT_EQ(b.rx[1].frames.size(), 420u);
    EXPECT_EQ(b.link.get_stats(0).ctrl_frames, 20u);
    // Nothing lost to the arbitration: the link never idled while frames waited.
    EXPECT_EQ(b.link.get_stats(0).busy_ps, (400u * 1538 + 20u * 84) * 80);
}

// Control frames are subject to PFC like data: a control frame of priority 3 (DSCP 24) waits
// while priority 3 is paused, and priority 0 data passes it meanwhile; it leaves once the XON
// frame (sent at 2 us) has arrived, at the next frame boundary.
TEST(EthLinkCtrlQueue, ControlFramesHonourPfcOfTheirPriority) {
    eth_link_config cfg;
    cfg.tx_fifo_frames = 64;
    bench b(cfg);
    sc_core::sc_spawn(
        [&] {
            b.link.set_xoff(1, 0x08, true);
            sc_core::wait(sc_time(500, SC_NS));
            b.link.ctrl_tx(0).put(ipv4_frame(60, 100, 24));
            for (uint64_t k = 0; k < 60; ++k) {  // still streaming when XON arrives
                b.link.tx(0).put(ipv4_frame(500, k, 0));
            }
            sc_core::wait(sc_time(1500, SC_NS));
            b.link.set_xoff(1, 0x08, false);
        },
        "mac");
    sc_core::sc_start();
    const auto& rx = b.rx[1].frames;
    ASSERT_EQ(rx.size(), 61u);
    EXPECT_EQ(rx[0].frame.flow_id, 0u) << "data of an unpaused priority passes";
    EXPECT_EQ(rx[0].frame.tx_start, sc_time(500, SC_NS));
    // XON leaves at 2000 ns and is in 72 byte times + 50 ns later; the control frame goes at
    // the first data frame boundary (500 ns + k x 524 byte times) at or after that.
    const double xon_in_ps = 2000e3 + 72 * 80 + 50e3;
    const double slot = 524 * 80;
    const double boundary = 500e3 + std::ceil((xon_in_ps - 500e3) / slot) * slot;
    size_t ctrl_at = rx.size();
    for (size_t i = 0; i < rx.size(); ++i) {
        if (rx[i].frame.flow_id == 100) {
            ctrl_at = i;
        }
    }
    ASSERT_LT(ctrl_at, rx.size());
    EXPECT_EQ(rx[ctrl_at].frame.tx_start, ps(boundary));
    EXPECT_EQ(rx[ctrl_at].frame.priority, 3u);
}

// The control queue holds ctrl_fifo_frames: a third put waits until the serializer takes one.
TEST(EthLinkCtrlQueue, ControlQueueBackPressure) {
    eth_link_config cfg;
    cfg.ctrl_fifo_frames = 2;
    bench b(cfg);
    std::vector<sc_time> put_done;
    sc_core::sc_spawn(
        [&] {
            for (uint64_t k = 0; k < 5; ++k) {
                b.link.ctrl_tx(0).put(ipv4_frame(1514, k, 0));
                put_done.push_back(sc_core::sc_time_stamp());
            }
        },
        "ctrl");
    sc_core::sc_start();
    ASSERT_EQ(put_done.size(), 5u);
    const sc_time slot = ps(1538 * 80);
    // Frame 0 goes to the wire at 0, 1 and 2 fill the queue; 3 and 4 wait one slot each.
    EXPECT_EQ(put_done[2], sc_core::SC_ZERO_TIME);
    EXPECT_EQ(put_done[3], slot);
    EXPECT_EQ(put_done[4], slot * 2.0);
    EXPECT_EQ(b.stat(0, "ctrl_peak_frames"), 2);
    EXPECT_EQ(b.link.ctrl_tx(0).max_occupancy(), 2u);
}

}  // namespace
