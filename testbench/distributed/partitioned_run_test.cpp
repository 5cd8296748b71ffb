// SPDX-License-Identifier: Apache-2.0
// Partitioned runs (issue 16): the same scenario on one process and on 2 and 3 MPI ranks
// (mpirun on localhost, --oversubscribe) gives byte-identical stats.json, flows.csv, wire.pcap and
// summary.txt; and the partition and lookahead rules, checked against their definitions.
#include <algorithm>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/distributed/partition.h"
#include "testbench/scenario/scenario_config.h"
#include "testbench/system/outputs_common.h"

#include <unistd.h>

namespace {

using namespace rnic::outputs_test;
namespace sc = rnic::scenario;

std::string mpirun_command(int ranks, const std::vector<std::string>& args) {
    const std::string mpirun = find_tool("mpirun");
    EXPECT_FALSE(mpirun.empty()) << "mpirun not found (scripts/setup installs openmpi-bin)";
    std::string cmd = quote(mpirun) + " -np " + std::to_string(ranks) + " --oversubscribe";
    if (geteuid() == 0) {
        cmd += " --allow-run-as-root";
    }
    return cmd + " " + rnicsim_command(args);
}

// Runs `config` (with `sets`) on 1, 2 and 3 ranks and compares the outputs with the single
// process's. Returns the single process's stats.json text.
std::string expect_same_on_ranks(const std::string& config, const std::vector<std::string>& sets) {
    scratch s;
    auto args = [&](const std::string& out) {
        std::vector<std::string> a = {"run", config, "--out", out, "--set", "outputs.pcap=true"};
        for (const auto& v : sets) {
            a.push_back("--set");
            a.push_back(v);
        }
        return a;
    };
    const cli_result one = rnicsim(s, args(s.path("np1")));
    EXPECT_EQ(one.exit_code, 0) << one.err;
    const std::string stats = read_file(s.path("np1/stats.json"));
    EXPECT_NE(stats.find("\"passed\": true"), std::string::npos) << "the single run passed";
    for (int ranks : {2, 3}) {
        const std::string out = s.path("np" + std::to_string(ranks));
        const cli_result r = shell(s, mpirun_command(ranks, args(out)));
        EXPECT_EQ(r.exit_code, 0) << ranks << " ranks:\n" << r.err;
        // Really partitioned: every rank reports its windows.
        for (int k = 0; k < ranks; ++k) {
            EXPECT_NE(r.err.find("rank " + std::to_string(k) + ": "), std::string::npos)
                << ranks << " ranks: no figures of rank " << k << "\n"
                << r.err;
        }
        for (const char* f : {"stats.json", "flows.csv", "wire.pcap", "summary.txt"}) {
            const std::string a = read_file(s.path(std::string("np1/") + f));
            const std::string b = read_file(out + "/" + f);
            EXPECT_FALSE(a.empty()) << f;
            EXPECT_TRUE(a == b) << f << " differs between 1 and " << ranks << " ranks";
        }
    }
    return stats;
}

TEST(Partitioned, IncastSameOutputsOnOneTwoAndThreeRanks) {
    // 9 nodes on one switch: no leaf to keep whole, so host links are cut.
    expect_same_on_ranks(source_dir() + "/configs/fabric/incast_8to1.json",
                         {"workload.messages=16"});
}

TEST(Partitioned, LeafSpinePermutationUnderFaultsSameOnOneTwoAndThreeRanks) {
    // Every fault kind on every link: each direction draws from its own stream, on whichever
    // rank sends; the drops must really happen for the test to mean anything.
    const std::string stats = expect_same_on_ranks(
        source_dir() + "/configs/fabric/permutation_4x4.json",
        {"workload.messages=8", "topology.link.faults.drop=0.002",
         "topology.link.faults.duplicate=0.002", "topology.link.faults.reorder=0.002",
         "topology.link.faults.jitter_ns=20"});
    uint64_t dropped = 0;
    const nlohmann::json j = nlohmann::json::parse(stats);
    for (auto it = j["blocks"].begin(); it != j["blocks"].end(); ++it) {
        if (it->is_object() && it->contains("faults_dropped")) {
            dropped += (*it)["faults_dropped"].get<uint64_t>();
        }
    }
    EXPECT_GT(dropped, 0u) << "some link dropped frames";
}

TEST(Partitioned, RingAllReduceSameOnOneTwoAndThreeRanks) {
    expect_same_on_ranks(source_dir() + "/configs/fabric/ring_allreduce_16.json",
                         {"workload.message_bytes=16384"});
}

TEST(Partitioned, ExplicitPartitionCuttingHostLinksSameOnTwoRanks) {
    // topology.partition: leaf0 on rank 1 while two of its hosts stay on rank 0, the spines
    // split: host links and uplinks are cut. Checked on 2 ranks (the part count must match).
    scratch s;
    const std::string cfg = source_dir() + "/configs/fabric/permutation_4x4.json";
    const std::string part =
        R"(topology.partition=[["node0","node1","node4","node5","node6","node7","leaf1",)"
        R"("spine0","spine1"],["node2","node3","leaf0","node8","node9","node10","node11",)"
        R"("node12","node13","node14","node15","leaf2","leaf3","spine2","spine3"]])";
    auto args = [&](const std::string& out) {
        return std::vector<std::string>{"run",   cfg,
                                        "--out", out,
                                        "--set", "outputs.pcap=true",
                                        "--set", "workload.messages=8",
                                        "--set", part};
    };
    const cli_result one = rnicsim(s, args(s.path("np1")));
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const cli_result two = shell(s, mpirun_command(2, args(s.path("np2"))));
    ASSERT_EQ(two.exit_code, 0) << two.err;
    for (const char* f : {"stats.json", "flows.csv", "wire.pcap", "summary.txt"}) {
        EXPECT_TRUE(read_file(s.path(std::string("np1/") + f)) ==
                    read_file(s.path(std::string("np2/") + f)))
            << f;
    }
    // Three ranks for two parts: refused, naming the key.
    const cli_result three = shell(s, mpirun_command(3, args(s.path("np3"))));
    EXPECT_NE(three.exit_code, 0);
    EXPECT_NE(three.err.find("topology.partition: 2 parts given, but the run has 3 ranks"),
              std::string::npos)
        << three.err;
}

sc::scenario_config load(const std::string& topology_json) {
    scratch s;
    const std::string path = s.write("t.json", "{\"topology\": " + topology_json + "}");
    return sc::load_scenario(path, {});
}

TEST(Partition, AutomaticKeepsLeavesWholeAndBalancesNodes) {
    const auto cfg = load(R"({"leaf_spine": {"leaves": 4, "spines": 2, "hosts_per_leaf": 4}})");
    const auto& t = cfg.topology;
    for (int ranks : {2, 3, 4}) {
        const auto p = rnic::distributed::automatic_partition(t, ranks);
        std::vector<int> nodes_of(static_cast<size_t>(ranks), 0);
        for (const auto& l : t.links) {
            // A host link never cut: a leaf and its hosts are on one rank.
            if (l.a.is_switch != l.b.is_switch) {
                EXPECT_FALSE(p.is_cut(l)) << l.name << " with " << ranks << " ranks";
            }
        }
        for (int r : p.node_rank) {
            ASSERT_GE(r, 0);
            ASSERT_LT(r, ranks);
            ++nodes_of[static_cast<size_t>(r)];
        }
        // 4 leaves of 4 hosts: 2 ranks 8 + 8; 3 ranks at most 8 on one; 4 ranks 4 each.
        const int most = *std::max_element(nodes_of.begin(), nodes_of.end());
        EXPECT_LE(most, ranks == 3 ? 8 : 16 / ranks) << ranks << " ranks";
        for (int n : nodes_of) {
            EXPECT_GT(n, 0) << "every rank has nodes with " << ranks << " ranks";
        }
    }
}

TEST(Partition, AutomaticSpreadsSpinesOverTheRanks) {
    // 8 leaves of 8 hosts and 4 spines (the web-search fabric). Weights: a leaf with its hosts
    // 8 x 10 + 12 ports x 3 = 116, a spine 8 x 3 = 24. On 2 ranks 4 leaves each, so the spines
    // go 2 and 2 (all four on one rank made it the slower by ~25 % of delta cycles). On 3 ranks
    // the leaves go 3, 2, 3 (348, 232, 348) and every spine to the middle rank (256 .. 328, still
    // the lightest). On 4 ranks, 2 leaves and one spine each.
    const auto cfg = load(R"({"leaf_spine": {"leaves": 8, "spines": 4, "hosts_per_leaf": 8}})");
    const auto& t = cfg.topology;
    auto spines_of = [&](const rnic::distributed::partition& p, int ranks) {
        std::vector<int> n(static_cast<size_t>(ranks), 0);
        for (size_t s = 0; s < t.switches.size(); ++s) {
            if (t.switches[s].name.rfind("spine", 0) == 0) {
                ++n[static_cast<size_t>(p.switch_rank[s])];
            }
        }
        return n;
    };
    EXPECT_EQ(spines_of(rnic::distributed::automatic_partition(t, 2), 2), (std::vector<int>{2, 2}));
    EXPECT_EQ(spines_of(rnic::distributed::automatic_partition(t, 3), 3),
              (std::vector<int>{0, 4, 0}));
    EXPECT_EQ(spines_of(rnic::distributed::automatic_partition(t, 4), 4),
              (std::vector<int>{1, 1, 1, 1}));
}

TEST(Partition, LookaheadIsTheShortestCutLinkLatency) {
    // Propagation + 72 bytes (the 84-byte minimum slot without the 12-byte gap) at the line rate.
    const auto cfg = load(
        R"({"leaf_spine": {"leaves": 2, "spines": 1, "hosts_per_leaf": 2},
            "link": {"rate_gbps": 100, "propagation_ns": 250}})");
    const auto p = rnic::distributed::automatic_partition(cfg.topology, 2);
    const double expect_ns = 250 + 72 * 8 / 100.0;  // 255.76 ns
    EXPECT_EQ(rnic::distributed::lookahead(cfg.topology, p),
              sc_core::sc_time(expect_ns, sc_core::SC_NS));
    const auto one = rnic::distributed::automatic_partition(cfg.topology, 1);
    EXPECT_EQ(rnic::distributed::lookahead(cfg.topology, one), sc_core::sc_max_time())
        << "nothing cut: no windows";
}

// Issue 23: the receiver's own cut-through setting (a generator's per-tier key), not
// topology.switch's: configs/fabric/oversubscribed_2to1.json's cut-through leaves behind 400 Gb/s
// uplinks take a frame 8 bytes (the preamble) after its first bit, so the lookahead is 100 ns +
// 8 x 8 / 400 ns. With topology.switch's store-and-forward default (72 bytes, 101.44 ns) frames
// arrived inside the window that had just ended (2 and 3 ranks differed from one process).
TEST(Partition, LookaheadUsesTheReceiversOwnCutThrough) {
    const auto cfg = load(
        R"({"leaf_spine": {"leaves": 2, "spines": 1, "hosts_per_leaf": 2,
                           "leaf": {"cut_through": true}, "uplink": {"rate_gbps": 400}},
            "link": {"rate_gbps": 100, "propagation_ns": 100}})");
    const auto p = rnic::distributed::automatic_partition(cfg.topology, 2);
    EXPECT_EQ(rnic::distributed::lookahead(cfg.topology, p),
              sc_core::sc_time(100 + 8 * 8 / 400.0, sc_core::SC_NS));  // 100.16 ns
}

TEST(Partition, ExplicitPartitionErrorsNameTheirPath) {
    const std::string base = R"({"star": {"hosts": 3}, "partition": )";
    auto errors = [&](const std::string& partition) {
        try {
            load(base + partition + "}");
        } catch (const rnic::config::config_error& e) {
            std::string all;
            for (const auto& x : e.errors) {
                all += x + "\n";
            }
            return all;
        }
        return std::string();
    };
    EXPECT_NE(errors(R"([["node0","sw0"],["node1","node7"]])")
                  .find("topology.partition.1.1: \"node7\": there is no such node"),
              std::string::npos);
    EXPECT_NE(errors(R"([["node0","sw0","node2"],["node1","node0"]])")
                  .find("topology.partition.1.1: \"node0\" is already in topology.partition.0"),
              std::string::npos);
    EXPECT_NE(
        errors(R"([["node0","sw0"],["node1"]])").find("topology.partition: node2 is in no part"),
        std::string::npos);
    EXPECT_NE(
        errors(R"([["node0","node1","node2"]])").find("topology.partition: sw0 is in no part"),
        std::string::npos);
    EXPECT_NE(errors(R"({"a": 1})").find("topology.partition: expected a list of parts"),
              std::string::npos);
    EXPECT_EQ(errors(R"([["node0","sw0"],["node1","node2"]])"), "");
    const auto cfg = load(base + R"([["node0","sw0"],["node1","node2"]])" + "}");
    EXPECT_EQ(cfg.topology.partition_parts, 2u);
    EXPECT_EQ(cfg.topology.partition_node, (std::vector<int>{0, 1, 1}));
    EXPECT_EQ(cfg.topology.partition_switch, (std::vector<int>{0}));
}

}  // namespace
