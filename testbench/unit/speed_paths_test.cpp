// SPDX-License-Identifier: Apache-2.0
// Unit tests of the fast paths written for simulator speed, each against a plain independent
// implementation: the payload pattern (testbench/scenario/pattern.h) byte by byte from its
// formula, the latency histogram's exact percentiles (testbench/output/timeline.h) from a sorted
// list of every sample, the const char* timeline slices and those filed by stage id (a block's
// stage_slicer) against the std::string ones, the recycled frame buffers, and the stats
// registry's shared strings.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

#include "hw/common/numeric.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/common/stats.h"
#include "testbench/common/scratch_dir.h"
#include "testbench/output/timeline.h"
#include "testbench/scenario/pattern.h"
#include "tlm/ethernet/eth_link.h"

namespace {

using namespace rnic;

// Byte i of a message is byte (i mod 8) of the little-endian word key ^ ((i / 8) * golden ratio).
uint8_t pattern_byte(uint64_t key, size_t i) {
    const uint64_t w = key ^ (uint64_t{i / 8} * 0x9E3779B97F4A7C15ull);
    return static_cast<uint8_t>(w >> (8 * (i % 8)));
}

TEST(PatternFast, FillMatchesTheFormulaAtEveryLengthAndAlignment) {
    std::mt19937_64 rng(7);
    for (size_t len = 0; len < 300; ++len) {
        const uint64_t key = rng();
        for (size_t align = 0; align < 3; ++align) {
            std::vector<uint8_t> buf(len + 8, 0x5A);
            rnic::scenario::pattern_fill(key, buf.data() + align, len);
            for (size_t i = 0; i < len; ++i) {
                ASSERT_EQ(buf[align + i], pattern_byte(key, i)) << "len " << len << " byte " << i;
            }
            for (size_t i = align + len; i < buf.size(); ++i) {
                ASSERT_EQ(buf[i], 0x5A) << "written past the end, len " << len;
            }
        }
    }
}

TEST(PatternFast, MismatchesCountEveryDifferingByte) {
    std::mt19937_64 rng(11);
    for (int t = 0; t < 400; ++t) {
        const size_t len = rng() % 2000 + (t % 50 == 0 ? 65536 : 0);
        const uint64_t key = rng();
        std::vector<uint8_t> buf(len);
        for (size_t i = 0; i < len; ++i) {
            buf[i] = pattern_byte(key, i);
        }
        ASSERT_EQ(rnic::scenario::pattern_mismatches(key, buf.data(), len), 0u);
        const size_t flips = len == 0 ? 0 : rng() % 20;
        for (size_t f = 0; f < flips; ++f) {
            buf[rng() % len] ^= static_cast<uint8_t>(rng() | 1);
        }
        uint64_t expect = 0;
        for (size_t i = 0; i < len; ++i) {
            expect += buf[i] != pattern_byte(key, i);
        }
        ASSERT_EQ(rnic::scenario::pattern_mismatches(key, buf.data(), len), expect)
            << "len " << len;
    }
}

// Nearest rank over every sample: the smallest value with at least p of the samples at or below.
double rank_ns(std::vector<uint64_t> v, double p) {
    std::sort(v.begin(), v.end());
    return static_cast<double>(rnic::nearest_rank(v, p)) / 1000.0;
}

TEST(LatencyHistogramFast, PercentilesMatchASortedListOfEverySample) {
    std::mt19937_64 rng(3);
    output::latency_histogram h;
    output::latency_histogram other;
    std::vector<uint64_t> all;
    // Many distinct values (the table grows several times), runs of equal ones, zero and the
    // largest value a duration can hold.
    for (int i = 0; i < 50000; ++i) {
        uint64_t ps = rng() % 3 == 0 ? 2000 : rng() % 20000;
        if (i == 100) {
            ps = 0;
        }
        if (i == 200) {
            ps = ~uint64_t{0};
        }
        const int run = static_cast<int>(rng() % 4) + 1;
        for (int r = 0; r < run; ++r) {
            (i % 2 == 0 ? h : other).add(ps);
            all.push_back(ps);
        }
    }
    h.merge(other);
    const nlohmann::json j = h.summary();
    EXPECT_EQ(j["count"].get<uint64_t>(), all.size());
    EXPECT_DOUBLE_EQ(j["p50_ns"].get<double>(), rank_ns(all, 0.50));
    EXPECT_DOUBLE_EQ(j["p99_ns"].get<double>(), rank_ns(all, 0.99));
    EXPECT_DOUBLE_EQ(j["max_ns"].get<double>(), rank_ns(all, 1.0));
}

TEST(TimelineFast, CharSlicesAggregateAsStringSlices) {
    output::timeline by_char;
    output::timeline by_string;
    static const char* const blocks[] = {"node0.nic.send_path", "node1.nic.recv_path"};
    static const char* const stages[] = {"RC_WRITE_FIRST", "receive", "rx_dma"};
    std::mt19937_64 rng(5);
    for (int i = 0; i < 3000; ++i) {
        const char* b = blocks[rng() % 2];
        const char* s = stages[rng() % 3];
        const sc_core::sc_time start(static_cast<double>(rng() % 1000), sc_core::SC_NS);
        const sc_core::sc_time end =
            start + sc_core::sc_time(static_cast<double>(rng() % 50), sc_core::SC_NS);
        by_char.slice(b, s, 0, start, end);
        by_string.slice(std::string(b), std::string(s), 0, start, end);
    }
    EXPECT_EQ(by_char.slices(), 3000u);
    EXPECT_EQ(by_char.block_stage_latency().dump(), by_string.block_stage_latency().dump());
    EXPECT_EQ(by_char.stage_latency().dump(), by_string.stage_latency().dump());
}

// Six stages through one slicer (more than its slots: pairs are asked again), then a second
// timeline through the same slicers: its own ids, which differ from the first's (the pairs come
// in another order), so slices filed with the first's ids would land under the wrong stage.
TEST(TimelineFast, StageSlicerSlicesAggregateAndTraceAsStringSlices) {
    rnic::testing::scratch_dir d("rnic_stage_slicer");
    static const char* const blocks[] = {"node0.nic.send_path", "node1.nic.recv_path"};
    static const char* const stages[] = {"RC_WRITE_FIRST", "RC_WRITE_MIDDLE", "RC_WRITE_LAST",
                                         "RC_ACK",         "receive",         "rx_dma"};
    auto run = [&](output::timeline& by_id, output::timeline& by_string, uint64_t seed) {
        hw::stage_slicer slicers[2];
        std::mt19937_64 rng(seed);
        for (int i = 0; i < 3000; ++i) {
            const size_t b = rng() % 2;
            const char* s = stages[rng() % 6];
            const sc_core::sc_time start(static_cast<double>(rng() % 1000), sc_core::SC_NS);
            const sc_core::sc_time end =
                start + sc_core::sc_time(static_cast<double>(rng() % 50), sc_core::SC_NS);
            slicers[b].slice(by_id, blocks[b], s, i, start, end);
            by_string.slice(std::string(blocks[b]), std::string(s), i, start, end);
        }
        return std::move(slicers[0]);
    };
    output::timeline a_id(d.path("a_id.json"));
    output::timeline a_string(d.path("a_string.json"));
    hw::stage_slicer kept = run(a_id, a_string, 5);
    EXPECT_EQ(a_id.slices(), 3000u);
    EXPECT_EQ(a_id.block_stage_latency().dump(), a_string.block_stage_latency().dump());
    EXPECT_EQ(a_id.stage_latency().dump(), a_string.stage_latency().dump());
    a_id.close();
    a_string.close();
    auto read = [](const std::string& p) {
        std::ifstream in(p, std::ios::binary);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    };
    EXPECT_GT(read(d.path("a_id.json")).size(), 3000u * 50);
    EXPECT_EQ(read(d.path("a_id.json")), read(d.path("a_string.json")));

    // Another tracer: the slicer asks it for its own ids.
    output::timeline b_id;
    output::timeline b_string;
    b_id.stage_id("node9.other", "first");  // shifts every id of b_id against a_id's
    for (int i = 0; i < 6; ++i) {
        const sc_core::sc_time start(static_cast<double>(10 * i), sc_core::SC_NS);
        const sc_core::sc_time end(static_cast<double>(10 * i + 3 + i), sc_core::SC_NS);
        kept.slice(b_id, blocks[0], stages[i], 1, start, end);
        b_string.slice(std::string(blocks[0]), std::string(stages[i]), 1, start, end);
    }
    nlohmann::json got = b_id.block_stage_latency();
    got.erase("node9.other");
    EXPECT_EQ(got.dump(), b_string.block_stage_latency().dump());
}

TEST(FrameBuffers, ABufferGivenBackIsTakenAgainEmptyWithItsCapacity) {
    while (fabric::take_frame_buffer().capacity() != 0) {  // none spare from before
    }
    EXPECT_EQ(fabric::take_frame_buffer().capacity(), 0u);  // none spare: a new, empty one
    std::vector<uint8_t> frame(4154, 0xAB);
    const uint8_t* bytes = frame.data();
    fabric::give_frame_buffer(std::move(frame));
    std::vector<uint8_t> again = fabric::take_frame_buffer();
    EXPECT_EQ(again.data(), bytes);  // the same storage, no allocation
    EXPECT_TRUE(again.empty());
    EXPECT_GE(again.capacity(), 4154u);
    EXPECT_EQ(fabric::take_frame_buffer().capacity(), 0u);  // it was the only one
}

// The stats registry keeps each distinct string once and its entries in a deque: an entry's
// strings are the registry's own (the caller's temporaries are gone), counters read their
// variable when asked, and stats.json groups a block's counters whatever order they came in.
TEST(StatsRegistry, EntriesOwnTheirStringsAndValuesGroupByBlock) {
    hw::stats_registry reg;
    uint64_t frames = 3;
    uint64_t drops = 0;
    const hw::stats_registry::entry* first = nullptr;
    for (int i = 0; i < 3000; ++i) {  // enough to grow the deque past its first blocks
        const std::string block = "node" + std::to_string(i % 2) + ".nic.recv_path";
        reg.add(block, "frames_" + std::to_string(i), frames, std::string("count"),
                std::string("frames the receive path took from the MAC"));
        if (i == 0) {
            first = &reg.entries().front();
        }
    }
    reg.add(std::string("sw0"), std::string("drops"), drops, "count", "frames dropped");
    reg.add(
        std::string("node0.nic.recv_path"), std::string("ratio"),
        [] { return nlohmann::json(0.5); }, "fraction", "a computed value");
    ASSERT_EQ(reg.entries().size(), 3002u);
    EXPECT_EQ(first, &reg.entries().front());  // entries stay where they are
    EXPECT_EQ(first->block, "node0.nic.recv_path");
    EXPECT_EQ(first->name, "frames_0");
    EXPECT_EQ(first->unit, "count");
    EXPECT_EQ(first->description, "frames the receive path took from the MAC");
    frames = 7;
    drops = 2;
    const nlohmann::json v = reg.values();
    EXPECT_EQ(v.size(), 3u);
    EXPECT_EQ(v["node0.nic.recv_path"].size(), 1501u);
    EXPECT_EQ(v["node1.nic.recv_path"].size(), 1500u);
    EXPECT_EQ(v["node0.nic.recv_path"]["frames_2998"], 7);
    EXPECT_EQ(v["node1.nic.recv_path"]["frames_2999"], 7);
    EXPECT_EQ(v["node0.nic.recv_path"]["ratio"], 0.5);
    EXPECT_EQ(v["sw0"], (nlohmann::json{{"drops", 2}}));
    const nlohmann::json d = reg.descriptions();
    EXPECT_EQ(d["sw0.drops"],
              (nlohmann::json{{"unit", "count"}, {"description", "frames dropped"}}));
    EXPECT_EQ(d.size(), 3002u);
}

}  // namespace

// hw::quick_event (hw/common/quick_event.h): made at elaboration, an event is in the object
// hierarchy under its module with a name of its own, next to SystemC's own generated names
// without a clash; made while the simulation runs, it is nameless as an unnamed sc_event is.
struct quick_event_owner : sc_core::sc_module {
    hw::quick_event a;
    hw::quick_event b[2];
    sc_core::sc_event plain;  // SystemC's "event_0"
    hw::quick_event c;
    std::unique_ptr<hw::quick_event> made_running;
    std::unique_ptr<sc_core::sc_event> plain_running;
    explicit quick_event_owner(sc_core::sc_module_name n)
        : sc_core::sc_module(n) {
        SC_HAS_PROCESS(quick_event_owner);
        SC_THREAD(run);
    }
    void run() {
        made_running = std::make_unique<hw::quick_event>();
        plain_running = std::make_unique<sc_core::sc_event>();
        a.notify(sc_core::SC_ZERO_TIME);
        wait(a);
    }
};

TEST(QuickEvent, NamedInTheHierarchyAtElaborationNamelessWhileRunning) {
    quick_event_owner m("owner");
    const sc_core::sc_event* all[] = {&m.a, &m.b[0], &m.b[1], &m.plain, &m.c};
    std::vector<std::string> names;
    for (const sc_core::sc_event* e : all) {
        ASSERT_TRUE(e->in_hierarchy());
        const std::string n = e->name();
        EXPECT_EQ(n.rfind("owner.", 0), 0u) << n;
        EXPECT_EQ(sc_core::sc_find_event(n.c_str()), e) << n;
        names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
    EXPECT_EQ(m.get_child_events().size(), 5u);
    sc_core::sc_start();
    EXPECT_EQ(sc_core::sc_report_handler::get_count(sc_core::SC_WARNING), 0);
    ASSERT_NE(m.made_running, nullptr);
    EXPECT_EQ(m.made_running->in_hierarchy(), m.plain_running->in_hierarchy());
    EXPECT_FALSE(m.made_running->in_hierarchy());
    EXPECT_EQ(m.get_child_events().size(), 5u);
}
