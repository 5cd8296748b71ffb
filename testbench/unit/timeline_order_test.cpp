// SPDX-License-Identifier: Apache-2.0
// trace.json does not depend on the order in which SystemC ran the processes that filed
// same-instant slices, nor on how the blocks were spread over MPI ranks (issue 16): the same
// slices give the same bytes filed in another interleaving of the blocks, and split over two
// spooling timelines merged by the first.
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/common/scratch_dir.h"
#include "testbench/output/timeline.h"

namespace {

using rnic::output::timeline;
using sc_core::SC_NS;
using sc_core::sc_time;

struct slice_in {
    std::string block;
    std::string stage;
    uint64_t flow;
    double start_ns;
    double end_ns;
};

// Two nodes and a link, slices of two WQEs; filed at one instant (the kernel is not running:
// sc_time_stamp() is 0 for every call). Within a block the order is the block's own.
std::vector<slice_in> slices() {
    return {
        {"node0.nic.wqe_fetch", "wqe_fetch", 0x100000001, 0, 20},
        {"node0.nic.wqe_fetch", "wqe_fetch", 0x100000002, 0, 25},
        {"node0.nic.send_path", "send", 0x100000001, 20, 40},
        {"node0.nic.send_path", "send", 0x100000002, 25, 60},
        {"link0.dir0", "wire", 0x100000001, 40, 45},
        {"link0.dir0", "wire", 0x100000002, 60, 65},
        {"node1.nic.recv_path", "receive", 0x100000001, 45, 70},
        {"node1.nic.recv_path", "receive", 0x100000002, 65, 90},
    };
}

void file(timeline& t, const slice_in& s) {
    t.slice(s.block, s.stage, s.flow, sc_time(s.start_ns, SC_NS), sc_time(s.end_ns, SC_NS));
}

std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

TEST(TimelineOrder, SameInstantSlicesWrittenTheSameWhateverTheProcessOrder) {
    rnic::testing::scratch_dir d("rnic_timeline_order");
    const auto all = slices();
    {
        timeline a(d.path("a.json"));
        for (const auto& s : all) {
            file(a, s);
        }
        a.close();
    }
    {
        // Another interleaving of the blocks (as another partition would run them): the
        // receiver's, then the link's, then node 0's, each block's slices in their own order.
        timeline b(d.path("b.json"));
        for (const char* first : {"node1.", "link0.", "node0.nic.send", "node0.nic.wqe"}) {
            for (const auto& s : all) {
                if (s.block.rfind(first, 0) == 0) {
                    file(b, s);
                }
            }
        }
        b.close();
    }
    const std::string a = read(d.path("a.json"));
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a, read(d.path("b.json")));

    // Independent of the writer's code: the slices ("X") come in start order.
    const auto j = nlohmann::json::parse(a);
    double last = -1;
    size_t n = 0;
    for (const auto& e : j["traceEvents"]) {
        if (e["ph"] == "X") {
            EXPECT_GE(e["ts"].get<double>(), last) << e.dump();
            last = e["ts"].get<double>();
            ++n;
        }
    }
    EXPECT_EQ(n, all.size());
}

TEST(TimelineOrder, RanksSpooledAndMergedWriteTheSingleProcessTrace) {
    rnic::testing::scratch_dir d("rnic_timeline_ranks");
    const auto all = slices();
    nlohmann::json single_stages;
    {
        timeline one(d.path("one.json"));
        for (const auto& s : all) {
            file(one, s);
        }
        one.close();
        single_stages = one.block_stage_latency();
    }
    // Rank 0 holds node 0, rank 1 the link and node 1; rank 0 alone writes the file.
    timeline rank0(d.path("merged.json"), true);
    timeline rank1("", true);
    for (const auto& s : all) {
        file(s.block.rfind("node0.", 0) == 0 ? rank0 : rank1, s);
    }
    rank0.merge_state(rank1.take_state());
    rank0.merge_spooled({&rank1});  // the slices: each rank's spool, merged (MPI: every rank)
    rank0.close();
    EXPECT_EQ(read(d.path("one.json")), read(d.path("merged.json")));
    EXPECT_EQ(rank0.block_stage_latency(), single_stages);
    EXPECT_EQ(rank0.slices(), all.size());
}

TEST(TimelineOrder, MalformedRankStateIsRefused) {
    timeline rank0("", true);
    std::vector<uint8_t> state = timeline("", true).take_state();
    state.push_back(7);  // a stray byte
    EXPECT_THROW(rank0.merge_state(state), std::runtime_error);
    state.resize(3);  // truncated
    EXPECT_THROW(rank0.merge_state(state), std::runtime_error);
}

}  // namespace
