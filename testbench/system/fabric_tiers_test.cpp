// SPDX-License-Identifier: Apache-2.0
// Per-switch and per-link parameters in the fabric (topology.switches.<i> keys, generator tiers
// such as topology.leaf_spine.{leaf,spine,host_link,uplink}), end to end: every node a full NIC.
// Expectations come from formulas written here: wire bytes per RoCEv2 packet, serialization at
// each link's own rate, each switch's own pipeline, each link's own propagation; not from the
// model's helpers (flows.csv's ideal is checked against them).
//
// One elaboration per process: ctest runs each TEST as its own process.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/system/outputs_common.h"

namespace {

using nlohmann::json;
using namespace rnic::outputs_test;

// Wire bytes of a RoCEv2 packet besides its payload (IBA annex A17, IEEE 802.3): preamble+SFD
// 8, Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4, FCS 4, IFG 12.
constexpr double PER_PACKET = 82;
constexpr double RETH = 16;  // a WRITE's first packet
constexpr double ACK = 86;   // BTH + AETH, no payload
constexpr double MTU = 1024;
constexpr double FIRST = MTU + PER_PACKET + RETH;  // 1122 B: each WRITE message's first packet

double ns(double bytes, double gbps) {
    return bytes * 8.0 / gbps;
}

// Two leaves, two spines, one host per leaf: node 0 -> node 1 crosses leaf0, a spine, leaf1.
json leaf_spine(double host_gbps, double uplink_gbps, double uplink_prop_ns, double leaf_pipe_ns,
                double spine_pipe_ns) {
    return {{"link", {{"rate_gbps", 100}, {"propagation_ns", 100}}},
            {"leaf_spine",
             {{"leaves", 2},
              {"spines", 2},
              {"hosts_per_leaf", 1},
              {"leaf", {{"pipeline_ns", leaf_pipe_ns}}},
              {"spine", {{"pipeline_ns", spine_pipe_ns}}},
              {"host_link", {{"rate_gbps", host_gbps}}},
              {"uplink", {{"rate_gbps", uplink_gbps}, {"propagation_ns", uplink_prop_ns}}}}}};
}

struct flow_run {
    double fct_ns = 0;
    double ideal_ns = 0;  // flows.csv's
};

// One flow node 0 -> node 1 of `messages` WRITEs of `bytes`, run by rnicsim in its own process
// (a test may compare two topologies); its FCT and ideal from flows.csv.
flow_run one_flow(const scratch& s, const std::string& name, const json& topology,
                  uint64_t messages, uint64_t bytes) {
    const json w = {{"operation", "write"},
                    {"message_bytes", bytes},
                    {"messages", messages},
                    {"qps", 1},
                    {"queue_depth", 16},
                    {"time_limit_ms", 1000},
                    {"signal_every", 1},
                    {"inline_threshold", 0},
                    {"seed", 1},
                    {"pairs", json::array({json::array({0, 1})})}};
    const std::string out = s.dir + "/" + name;
    const auto res = rnicsim(s, {"run", quickstart(), "--out", out, "--set",
                                 "topology=" + topology.dump(), "--set", "workload=" + w.dump()});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    EXPECT_NE(read_file(out + "/stats.json").find("\"mismatches\": 0"), std::string::npos);
    const std::string flows = read_file(out + "/flows.csv");
    const std::vector<std::string> cells = csv_cells(flows, 1);
    if (cells.size() < 12 || cells[11] != "1") {
        ADD_FAILURE() << name << ": flows.csv: " << flows;
        return {};
    }
    return {std::stod(cells[8]), std::stod(cells[9])};
}

// The receiver of each hop waits for a frame's last bit, not for the 12-byte gap after it: the
// formulas below count whole wire bytes, so they are above flows.csv's ideal by at most one
// IFG per link.
double ifg_ns(const std::vector<double>& rates) {
    double t = 0;
    for (double r : rates) {
        t += ns(12, r);
    }
    return t;
}

// 256 x 64 KiB WRITEs, 100G hosts, 400G uplinks (4:1 faster core). The bottleneck is the host
// links: every wire byte at 100G, plus the first packet once more on the other host link and
// on each 400G uplink (store-and-forward), plus every switch's own pipeline and every link's
// own propagation.
TEST(FabricTiers, FlowThroughFasterUplinksAtEachLinksOwnRate) {
    const uint64_t messages = 256;
    const uint64_t bytes = 65536;
    scratch s;
    const flow_run f = one_flow(s, "tiers", leaf_spine(100, 400, 500, 300, 1000), messages, bytes);
    const double packets = bytes / MTU;
    const double wire = messages * (bytes + packets * PER_PACKET + RETH);
    const double ideal = ns(wire, 100) + ns(FIRST, 100) + 2 * ns(FIRST, 400) +
                         (100 + 500 + 500 + 100) + (300 + 1000 + 300);
    EXPECT_NEAR(f.fct_ns / ideal, 1.0, 0.01) << "FCT " << f.fct_ns << " ns, formula " << ideal;
    // flows.csv's ideal is the same formula.
    EXPECT_NEAR(f.ideal_ns, ideal, ifg_ns({100, 400, 400, 100}) + 1);
}

// The bottleneck in the middle: 100G hosts, 25G uplinks. Every wire byte at 25G once, plus the
// first packet on the host link and the first 25G uplink before it, plus the last packet (no
// RETH) on the host link after it.
TEST(FabricTiers, FlowThroughASlowerCoreRunsAtTheCoresRate) {
    const uint64_t messages = 64;
    const uint64_t bytes = 65536;
    scratch s;
    const flow_run f = one_flow(s, "core25", leaf_spine(100, 25, 100, 400, 400), messages, bytes);
    const double packets = bytes / MTU;
    const double wire = messages * (bytes + packets * PER_PACKET + RETH);
    const double last = MTU + PER_PACKET;
    const double ideal =
        ns(FIRST, 100) + ns(FIRST, 25) + ns(wire, 25) + ns(last, 100) + 4 * 100 + 3 * 400;
    EXPECT_NEAR(f.fct_ns / ideal, 1.0, 0.01) << "FCT " << f.fct_ns << " ns, formula " << ideal;
    EXPECT_NEAR(f.ideal_ns, ideal, ifg_ns({100, 25, 25, 100}) + 1);
}

// One 1 KiB WRITE (one data packet, one ACK back) on the same leaf-spine with uniform
// parameters and with tiers: the FCT grows by exactly what the tiers change on the two
// directions' hops (the NIC's own latencies cancel): each uplink crossing at 400G instead of
// 100G and 500 ns instead of 100 ns, the spine's 1000 ns and the leaves' 300 ns pipelines
// instead of 400 ns.
TEST(FabricTiers, OnePacketPaysEachHopsOwnSerializationPipelineAndPropagation) {
    scratch s;
    const flow_run base = one_flow(s, "uniform", leaf_spine(100, 100, 100, 400, 400), 1, 1024);
    const flow_run tiers = one_flow(s, "tiers", leaf_spine(100, 400, 500, 300, 1000), 1, 1024);
    auto one_way = [](double bytes) {
        return 2 * (ns(bytes, 400) - ns(bytes, 100)) + 2 * (500 - 100) + (1000 - 400) +
               2 * (300 - 400);
    };
    const double expected = one_way(FIRST) + one_way(ACK);  // 2545.3 ns
    EXPECT_NEAR(tiers.fct_ns - base.fct_ns, expected, 10.0)
        << "uniform " << base.fct_ns << " ns, tiers " << tiers.fct_ns << " ns";
}

// Per switch in the explicit form: a cut-through switch between two store-and-forward ones.
// One data packet and its ACK each skip one store-and-forward (the frame minus the 8 + 64 bytes
// the cut-through switch waits for) against the same topology all store-and-forward.
TEST(FabricTiers, OneSwitchOfTheExplicitFormCutsThrough) {
    auto chain = [](bool middle_cut_through) {
        json middle = {{"name", "m"}, {"ports", 2}};
        if (middle_cut_through) {
            middle["cut_through"] = true;
        }
        return json{
            {"link", {{"rate_gbps", 100}, {"propagation_ns", 100}}},
            {"nodes", json::array({json::object(), json::object()})},
            {"switches",
             json::array({{{"name", "a"}, {"ports", 2}}, middle, {{"name", "b"}, {"ports", 2}}})},
            {"links", json::array({{{"a", "node0"}, {"b", "a:0"}},
                                   {{"a", "a:1"}, {"b", "m:0"}},
                                   {{"a", "m:1"}, {"b", "b:0"}},
                                   {{"a", "b:1"}, {"b", "node1"}}})}};
    };
    scratch s;
    const flow_run sf = one_flow(s, "store", chain(false), 1, 1024);
    const flow_run ct = one_flow(s, "cut", chain(true), 1, 1024);
    // The cut-through switch waits for preamble + 64 bytes; store-and-forward for the frame
    // (wire bytes less the IFG).
    const double saved =
        ns(FIRST - 12 - (8 + 64), 100) + ns(ACK - 12 - (8 + 64), 100);  // 83.2 + 0.2 ns
    EXPECT_NEAR(sf.fct_ns - ct.fct_ns, saved, 5.0)
        << "store-and-forward " << sf.fct_ns << " ns, cut-through " << ct.fct_ns << " ns";
    EXPECT_NEAR(sf.ideal_ns - ct.ideal_ns, ns(FIRST - 12 - (8 + 64), 100), 1.0);  // whole ns
}

}  // namespace
