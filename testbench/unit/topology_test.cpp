// SPDX-License-Identifier: Apache-2.0
// Topology config: generators expand to the explicit form, addresses and routes follow the
// documented rules (checked against values worked out by hand), every error names its JSON
// path, and today's two-node form is unchanged. Traffic patterns as flow lists.
#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hw/common/config_reader.h"
#include "testbench/scenario/flows.h"
#include "testbench/scenario/scenario_config.h"

namespace {

using nlohmann::json;
using rnic::config::config_error;
using rnic::scenario::flows_of;
using rnic::scenario::format_ipv4;
using rnic::scenario::parse_scenario;
using rnic::scenario::route;
using rnic::scenario::scenario_config;

std::vector<std::string> errors_of(const json& doc) {
    try {
        parse_scenario(doc);
    } catch (const config_error& e) {
        return e.errors;
    }
    return {};
}

std::string error_of(const json& doc) {
    const auto errs = errors_of(doc);
    EXPECT_EQ(errs.size(), 1u) << doc.dump();
    for (const auto& e : errs) {
        std::cerr << "  error: " << e << "\n";
    }
    return errs.empty() ? "" : errs.front();
}

uint32_t ip(int a, int b, int c, int d) {
    return (uint32_t(a) << 24) | (uint32_t(b) << 16) | (uint32_t(c) << 8) | uint32_t(d);
}

json topo(const json& t) {
    return {{"topology", t}};
}

TEST(Topology, BackToBackIsTodaysFormUnchanged) {
    const scenario_config c = parse_scenario(json::object());
    EXPECT_EQ(c.topology.form, "back_to_back");
    ASSERT_EQ(c.topology.nodes.size(), 2u);
    ASSERT_EQ(c.topology.links.size(), 1u);
    EXPECT_EQ(c.topology.links[0].name, "link");
    EXPECT_EQ(c.topology.node_side[0], 0);
    EXPECT_EQ(c.topology.node_side[1], 1);
    EXPECT_TRUE(c.topology.switches.empty());
    // The effective config of today's form: exactly the keys it always had.
    const json& t = c.effective["topology"];
    std::vector<std::string> keys;
    for (auto it = t.begin(); it != t.end(); ++it) {
        keys.push_back(it.key());
    }
    EXPECT_EQ(keys, (std::vector<std::string>{"link", "nodes"}));
    EXPECT_EQ(t["nodes"][1],
              (json{{"ip", "10.0.0.2"}, {"mac", "02:00:00:00:00:02"}, {"mtu", 1024}}));
    // No gateway: the host's own IPv4 config applies.
    EXPECT_FALSE(c.topology.nodes[0].gateway.has_value());
}

TEST(Topology, StarAddressesAndRoutes) {
    const scenario_config c = parse_scenario(topo({{"star", {{"hosts", 8}}}}));
    const auto& t = c.topology;
    ASSERT_EQ(t.nodes.size(), 8u);
    ASSERT_EQ(t.switches.size(), 1u);
    EXPECT_EQ(t.switches[0].name, "sw0");
    EXPECT_EQ(t.switches[0].ports, 8u);
    ASSERT_EQ(t.links.size(), 8u);
    for (uint32_t h = 0; h < 8; ++h) {
        // Host h: 10.0.0.(2h+1)/31, gateway 10.0.0.(2h) = the switch's port h.
        EXPECT_EQ(t.nodes[h].ip, ip(10, 0, 0, 2 * h + 1)) << h;
        EXPECT_EQ(t.nodes[h].prefix_length.value_or(0), 31u);
        EXPECT_EQ(t.nodes[h].gateway.value_or(0), ip(10, 0, 0, 2 * h));
        EXPECT_EQ(t.ports[0][h].ip, ip(10, 0, 0, 2 * h));
        EXPECT_EQ(t.ports[0][h].neighbor_mac, t.nodes[h].mac);
        EXPECT_EQ(t.nodes[h].mac[5], h + 1);
    }
    ASSERT_EQ(t.routes[0].size(), 8u);
    for (uint32_t h = 0; h < 8; ++h) {
        EXPECT_EQ(t.routes[0][h], (route{ip(10, 0, 0, 2 * h + 1), 32, {h}}));
    }
    EXPECT_EQ(t.hops(0, 7), 1u);
}

TEST(Topology, LeafSpineEcmpRoutes) {
    const scenario_config c = parse_scenario(
        topo({{"leaf_spine", {{"leaves", 4}, {"spines", 4}, {"hosts_per_leaf", 4}}}}));
    const auto& t = c.topology;
    ASSERT_EQ(t.nodes.size(), 16u);
    ASSERT_EQ(t.switches.size(), 8u);
    EXPECT_EQ(t.switches[0].name, "leaf0");
    EXPECT_EQ(t.switches[4].name, "spine0");
    EXPECT_EQ(t.switches[0].ports, 8u);  // 4 hosts + 4 uplinks
    EXPECT_EQ(t.switches[4].ports, 4u);  // one per leaf
    EXPECT_EQ(t.links.size(), 16u + 16u);
    // Leaf l's hosts: 10.0.l.{1,3,5,7}: the smallest covering prefix is 10.0.l.0/29.
    EXPECT_EQ(t.nodes[5].ip, ip(10, 0, 1, 3));
    for (uint32_t l = 0; l < 4; ++l) {
        const auto& r = t.routes[l];
        ASSERT_EQ(r.size(), 4u + 3u) << l;
        for (uint32_t h = 0; h < 4; ++h) {
            EXPECT_EQ(r[h], (route{ip(10, 0, l, 2 * h + 1), 32, {h}}));
        }
        // Every other leaf's /29 over all four uplinks (ports 4..7): the ECMP group.
        std::set<uint32_t> others;
        for (size_t k = 4; k < r.size(); ++k) {
            EXPECT_EQ(r[k].length, 29u);
            EXPECT_EQ(r[k].ports, (std::vector<uint32_t>{4, 5, 6, 7}));
            others.insert(r[k].prefix);
        }
        EXPECT_EQ(others.size(), 3u);
        EXPECT_EQ(others.count(ip(10, 0, l, 0)), 0u);
    }
    for (uint32_t s = 4; s < 8; ++s) {
        ASSERT_EQ(t.routes[s].size(), 4u);
        for (uint32_t l = 0; l < 4; ++l) {
            EXPECT_EQ(t.routes[s][l], (route{ip(10, 0, l, 0), 29, {l}}));
        }
    }
    EXPECT_EQ(t.hops(0, 3), 1u);
    EXPECT_EQ(t.hops(0, 4), 3u);
}

TEST(Topology, FatTreeShapeAndHops) {
    const scenario_config c = parse_scenario(topo({{"fat_tree", {{"k", 4}}}}));
    const auto& t = c.topology;
    EXPECT_EQ(t.nodes.size(), 16u);              // k^3/4
    EXPECT_EQ(t.switches.size(), 8u + 8u + 4u);  // edges, aggregations, (k/2)^2 cores
    EXPECT_EQ(t.links.size(), 16u + 16u + 16u);
    EXPECT_EQ(t.hops(0, 1), 1u);   // same edge
    EXPECT_EQ(t.hops(0, 2), 3u);   // same pod
    EXPECT_EQ(t.hops(0, 15), 5u);  // other pod: edge, agg, core, agg, edge
    // edge0_0 reaches another pod over both aggregation ports (2, 3).
    const auto& r = t.routes[0];
    const auto other_pod = std::find_if(r.begin(), r.end(), [&](const route& x) {
        return (t.nodes[15].ip & (~0u << (32 - x.length))) == x.prefix && x.length < 32;
    });
    ASSERT_NE(other_pod, r.end());
    EXPECT_EQ(other_pod->ports, (std::vector<uint32_t>{2, 3}));
}

TEST(Topology, ExpansionIsTheExplicitFormAndParsesToItself) {
    const scenario_config c =
        parse_scenario(topo({{"leaf_spine", {{"leaves", 2}, {"spines", 2}, {"hosts_per_leaf", 2}}},
                             {"link", {{"rate_gbps", 25}}}}));
    const json& t = c.effective["topology"];
    EXPECT_FALSE(t.contains("leaf_spine"));
    ASSERT_EQ(t["nodes"].size(), 4u);
    EXPECT_EQ(t["nodes"][2]["ip"], "10.0.1.1");
    EXPECT_EQ(t["nodes"][2]["gateway"], "10.0.1.0");
    EXPECT_EQ(t["nodes"][2]["prefix_length"], 31);
    EXPECT_EQ(t["switches"][2]["name"], "spine0");
    EXPECT_EQ(
        t["links"][0],
        (json{{"a", "node0"}, {"b", "leaf0:0"}, {"rate_gbps", 25.0}, {"propagation_ns", 50.0}}));
    const scenario_config again = parse_scenario(c.effective);
    EXPECT_EQ(again.effective, c.effective);
    EXPECT_EQ(again.topology.form, "explicit");
    EXPECT_EQ(again.topology.routes, c.topology.routes);
}

TEST(Topology, ExplicitFormWithGivenAddressesAndPerLinkRates) {
    const json t = {
        {"nodes",
         json::array({{{"ip", "192.168.0.1"}, {"gateway", "192.168.0.254"}, {"prefix_length", 24}},
                      json::object(),
                      json::object()})},
        {"switches", json::array({{{"name", "tor"}, {"ports", 3}, {"max_rate_gbps", 200}}})},
        {"links", json::array({{{"a", "node0"}, {"b", "tor:2"}, {"rate_gbps", 200}},
                               {{"a", "tor:0"}, {"b", "node1:0"}},
                               {{"a", "node2"}, {"b", "tor:1"}, {"propagation_ns", 500}}})}};
    const scenario_config c = parse_scenario(topo(t));
    const auto& tp = c.topology;
    EXPECT_EQ(tp.links[0].cfg.rate_gbps, 200.0);
    EXPECT_EQ(tp.links[1].cfg.rate_gbps, 100.0);
    EXPECT_EQ(tp.links[2].cfg.propagation_ns, 500.0);
    EXPECT_EQ(tp.links[1].name, "link1");
    EXPECT_EQ(tp.ports[0][2].ip, ip(192, 168, 0, 254));  // the given gateway is the port's
    EXPECT_EQ(tp.node_side[1], 1);
    EXPECT_EQ(tp.nodes[1].ip, ip(10, 0, 0, 3));  // second host of the leaf (node order)
    EXPECT_EQ(tp.nodes[1].gateway.value_or(0), ip(10, 0, 0, 2));
}

TEST(Topology, ErrorsNameTheirJsonPath) {
    auto star_with = [](json links) {
        return topo({{"nodes", json::array({json::object(), json::object()})},
                     {"switches", json::array({{{"name", "s"}, {"ports", 2}}})},
                     {"links", std::move(links)}});
    };
    EXPECT_EQ(error_of(star_with(
                  json::array({{{"a", "node0"}, {"b", "s:0"}}, {{"a", "node1"}, {"b", "s:2"}}}))),
              "topology.links.1.b: \"s:2\": s has ports 0..1");
    EXPECT_EQ(error_of(star_with(
                  json::array({{{"a", "node0"}, {"b", "s:0"}}, {{"a", "node1"}, {"b", "s:0"}}}))),
              "topology.links.1.b: \"s:0\" is already cabled by topology.links.0");
    EXPECT_EQ(error_of(star_with(
                  json::array({{{"a", "node0"}, {"b", "s:0"}}, {{"a", "node1"}, {"b", "t:1"}}}))),
              "topology.links.1.b: \"t:1\": no node or switch is named t");
    EXPECT_EQ(error_of(star_with(
                  json::array({{{"a", "node0"}, {"b", "s:0"}}, {{"a", "node7"}, {"b", "s:1"}}}))),
              "topology.links.1.a: \"node7\": there is no node7 (topology.nodes has 2)");
    EXPECT_EQ(
        error_of(star_with(json::array(
            {{{"a", "node0"}, {"b", "s:0"}}, {{"a", "node1"}, {"b", "s:1"}, {"rate_gbps", 800}}}))),
        "topology.links.1.rate_gbps: 800 exceeds the port rate of s (400 Gb/s, "
        "topology.switches.0.max_rate_gbps)");
    // A node on no link, and a switch port on no link.
    const json lonely = topo(
        {{"nodes", json::array({json::object(), json::object(), json::object()})},
         {"switches", json::array({{{"name", "s"}, {"ports", 2}}})},
         {"links", json::array({{{"a", "node0"}, {"b", "s:0"}}, {{"a", "node1"}, {"b", "s:1"}}})}});
    EXPECT_EQ(error_of(lonely), "topology.nodes.2: node2 is cabled to no link (topology.links)");
    // Two islands: nodes 2 and 3 cabled to each other only.
    const json islands = topo(
        {{"nodes", json::array({json::object(), json::object(), json::object(), json::object()})},
         {"switches", json::array({{{"name", "s"}, {"ports", 2}}})},
         {"links", json::array({{{"a", "node0"}, {"b", "s:0"}},
                                {{"a", "node1"}, {"b", "s:1"}},
                                {{"a", "node2"}, {"b", "node3"}}})}});
    const auto errs = errors_of(islands);
    ASSERT_EQ(errs.size(), 2u);
    EXPECT_EQ(errs[0], "topology.nodes.2: node2 has no path to node0 through topology.links");
    EXPECT_EQ(errors_of(star_with(json::array({{{"a", "node0"}, {"b", "s:0"}}})))[0],
              "topology.nodes.1: node1 is cabled to no link (topology.links)");
    EXPECT_EQ(error_of(topo({{"star", {{"hosts", 2}}}, {"links", json::array()}})),
              "topology.links: not with topology.star: the generator gives the switches and links");
    EXPECT_EQ(error_of(topo({{"fat_tree", {{"k", 5}}}})), "topology.fat_tree.k: 5 is not even");
    EXPECT_EQ(error_of(topo({{"star", {{"hosts", 4}}}, {"link", {{"rate_gbps", 800}}}})),
              "topology.link.rate_gbps: 800 exceeds the port rate of sw0 (400 Gb/s, "
              "topology.star.max_rate_gbps)");
    EXPECT_EQ(error_of(topo({{"nodes", json::array({json::object()})}})),
              "topology.nodes: 1 nodes given: back to back joins exactly 2 (give topology.links "
              "or a generator for more)");
    EXPECT_EQ(error_of(topo(
                  {{"star", {{"hosts", 2}}}, {"nodes", json::array({{{"gateway", "10.0.0.9"}}})}})),
              "topology.nodes.0.gateway: \"10.0.0.9\" is not another address in node0's subnet "
              "10.0.0.0/31");
    EXPECT_EQ(error_of(topo({{"star", {{"hosts", 2}}}, {"switch", {{"bogus", 1}}}})),
              "topology.switch.bogus: unknown key");
    EXPECT_EQ(error_of({{"workload", {{"pairs", json::array({json::array({0, 2})})}}}}),
              "workload.pairs.0.1: 2 is not a node index in [0, 1] (topology.nodes)");
}

// topology.switches.<i> keys on top of topology.switch, per switch; the other switches keep
// topology.switch's values (given or default), and the expansion records each switch's own keys.
TEST(Topology, PerSwitchOverridesInTheExplicitForm) {
    const json t = {
        {"nodes", json::array({json::object(), json::object()})},
        {"switch", {{"buffer_bytes", 4 << 20}, {"xoff_bytes", 40000}, {"xon_bytes", 20000}}},
        {"switches", json::array({{{"name", "a"}, {"ports", 2}},
                                  {{"name", "b"},
                                   {"ports", 2},
                                   {"xoff_bytes", 100000},
                                   {"xon_bytes", 50000},
                                   {"pipeline_ns", 1200},
                                   {"scheduler", "dwrr"},
                                   {"ecn", {true, false, false, false, false, false, false, false}},
                                   {"kmin_bytes", {1000, 0, 0, 0, 0, 0, 0, 0}},
                                   {"kmax_bytes", {9000, 0, 0, 0, 0, 0, 0, 0}},
                                   {"pmax", {0.5, 0, 0, 0, 0, 0, 0, 0}}}})},
        {"links", json::array({{{"a", "node0"}, {"b", "a:0"}},
                               {{"a", "a:1"}, {"b", "b:0"}},
                               {{"a", "b:1"}, {"b", "node1"}}})}};
    const scenario_config c = parse_scenario(topo(t));
    const auto& a = c.topology.switches[0].cfg;
    const auto& b = c.topology.switches[1].cfg;
    // a: topology.switch as given, defaults elsewhere (tlm/switch/README.md).
    EXPECT_EQ(a.buffer_bytes, 4u << 20);
    EXPECT_EQ(a.xoff_bytes, 40000u);
    EXPECT_EQ(a.pipeline_ns, 400.0);
    EXPECT_EQ(a.scheduler, "strict");
    EXPECT_FALSE(a.ecn[0]);
    // b: its own keys over topology.switch.
    EXPECT_EQ(b.buffer_bytes, 4u << 20);
    EXPECT_EQ(b.xoff_bytes, 100000u);
    EXPECT_EQ(b.xon_bytes, 50000u);
    EXPECT_EQ(b.pipeline_ns, 1200.0);
    EXPECT_EQ(b.scheduler, "dwrr");
    EXPECT_TRUE(b.ecn[0]);
    EXPECT_EQ(b.kmin_bytes[0], 1000u);
    EXPECT_EQ(b.kmax_bytes[0], 9000u);
    EXPECT_EQ(b.pmax[0], 0.5);
    const json& e = c.effective["topology"];
    EXPECT_EQ(e["switches"][0], (json{{"name", "a"}, {"ports", 2}, {"max_rate_gbps", 400.0}}));
    EXPECT_EQ(e["switches"][1]["pipeline_ns"], 1200);
    EXPECT_EQ(e["switch"]["xoff_bytes"], 40000);
    const scenario_config again = parse_scenario(c.effective);
    EXPECT_EQ(again.effective, c.effective);
    EXPECT_EQ(again.topology.switches[1].cfg.xoff_bytes, 100000u);
    EXPECT_EQ(again.topology.switches[0].cfg.xoff_bytes, 40000u);
}

// Generator tiers: leaf / spine switch keys and host_link / uplink link keys (an oversubscribed
// leaf-spine: 100G hosts, 400G uplinks), fat_tree's edge / aggregation / core.
TEST(Topology, GeneratorTiersGiveSwitchAndLinkParameters) {
    const scenario_config c = parse_scenario(
        topo({{"link", {{"rate_gbps", 25}, {"propagation_ns", 80}}},
              {"switch", {{"pipeline_ns", 500}}},
              {"leaf_spine",
               {{"leaves", 2},
                {"spines", 2},
                {"hosts_per_leaf", 3},
                {"leaf", {{"buffer_bytes", 2 << 20}, {"cut_through", true}}},
                {"spine", {{"pipeline_ns", 900}, {"max_rate_gbps", 800}}},
                {"host_link", {{"rate_gbps", 100}}},
                {"uplink",
                 {{"rate_gbps", 400}, {"propagation_ns", 600}, {"faults", {{"drop", 0.01}}}}}}}}));
    const auto& t = c.topology;
    ASSERT_EQ(t.switches.size(), 4u);
    for (int l = 0; l < 2; ++l) {
        EXPECT_EQ(t.switches[l].cfg.buffer_bytes, 2u << 20) << l;
        EXPECT_TRUE(t.switches[l].cfg.cut_through) << l;
        EXPECT_EQ(t.switches[l].cfg.pipeline_ns, 500.0) << l;  // topology.switch's
        EXPECT_EQ(t.switches[l].max_rate_gbps, 400.0) << l;
        EXPECT_EQ(t.switches[2 + l].cfg.pipeline_ns, 900.0) << l;
        EXPECT_EQ(t.switches[2 + l].cfg.buffer_bytes, 12u << 20) << l;  // the default
        EXPECT_FALSE(t.switches[2 + l].cfg.cut_through) << l;
        EXPECT_EQ(t.switches[2 + l].max_rate_gbps, 800.0) << l;
    }
    ASSERT_EQ(t.links.size(), 6u + 4u);
    for (size_t i = 0; i < 6; ++i) {  // host links first
        EXPECT_EQ(t.links[i].cfg.rate_gbps, 100.0) << i;
        EXPECT_EQ(t.links[i].cfg.propagation_ns, 80.0) << i;  // topology.link's
        EXPECT_EQ(t.links[i].cfg.faults.drop, 0.0) << i;
    }
    for (size_t i = 6; i < 10; ++i) {
        EXPECT_EQ(t.links[i].cfg.rate_gbps, 400.0) << i;
        EXPECT_EQ(t.links[i].cfg.propagation_ns, 600.0) << i;
        EXPECT_EQ(t.links[i].cfg.faults.drop, 0.01) << i;
    }
    // The path 0 -> 3: host link, uplink, uplink, host link through leaf0, a spine, leaf1.
    const auto path = t.path_between(0, 3);
    ASSERT_EQ(path.links.size(), 4u);
    EXPECT_EQ(path.links[0], 0u);
    EXPECT_GE(path.links[1], 6u);
    EXPECT_GE(path.links[2], 6u);
    EXPECT_EQ(path.links[3], 3u);
    EXPECT_EQ(path.switches, (std::vector<uint32_t>{0, path.switches[1], 1}));
    EXPECT_GE(path.switches[1], 2u);
    // The expansion carries each element's own keys and parses to the same parameters.
    const json& e = c.effective["topology"];
    EXPECT_EQ(e["switches"][2]["pipeline_ns"], 900);
    EXPECT_EQ(e["switches"][2]["max_rate_gbps"], 800.0);
    EXPECT_EQ(e["switches"][0]["buffer_bytes"], 2 << 20);
    EXPECT_EQ(e["links"][7]["rate_gbps"], 400);
    EXPECT_EQ(e["links"][1]["rate_gbps"], 100);
    const scenario_config again = parse_scenario(c.effective);
    EXPECT_EQ(again.effective, c.effective);
    for (size_t s = 0; s < 4; ++s) {
        EXPECT_EQ(again.topology.switches[s].cfg.pipeline_ns, t.switches[s].cfg.pipeline_ns);
        EXPECT_EQ(again.topology.switches[s].cfg.buffer_bytes, t.switches[s].cfg.buffer_bytes);
    }

    const scenario_config f =
        parse_scenario(topo({{"fat_tree",
                              {{"k", 4},
                               {"edge", {{"xoff_bytes", 30000}, {"xon_bytes", 10000}}},
                               {"aggregation", {{"pipeline_ns", 700}}},
                               {"core", {{"pipeline_ns", 1500}, {"max_rate_gbps", 800}}},
                               {"host_link", {{"rate_gbps", 25}}},
                               {"edge_link", {{"rate_gbps", 100}}},
                               {"core_link", {{"rate_gbps", 400}}}}}}));
    const auto& ft = f.topology;
    ASSERT_EQ(ft.switches.size(), 20u);
    EXPECT_EQ(ft.switches[7].cfg.xoff_bytes, 30000u);  // edge3_1
    EXPECT_EQ(ft.switches[8].cfg.pipeline_ns, 700.0);  // agg0_0
    EXPECT_EQ(ft.switches[8].cfg.xoff_bytes, 65536u);
    EXPECT_EQ(ft.switches[19].cfg.pipeline_ns, 1500.0);  // core3
    EXPECT_EQ(ft.links[15].cfg.rate_gbps, 25.0);         // node15's
    EXPECT_EQ(ft.links[16].cfg.rate_gbps, 100.0);        // edge0_0 - agg0_0
    EXPECT_EQ(ft.links[47].cfg.rate_gbps, 400.0);        // agg3_1 - core3
    const auto p = ft.path_between(0, 15);
    ASSERT_EQ(p.links.size(), 6u);
    std::vector<double> rates;
    for (uint32_t l : p.links) {
        rates.push_back(ft.links[l].cfg.rate_gbps);
    }
    EXPECT_EQ(rates, (std::vector<double>{25, 100, 400, 400, 100, 25}));
}

TEST(Topology, PerSwitchAndTierErrorsNameWhereTheKeyWasWritten) {
    const json explicit_form = {
        {"nodes", json::array({json::object(), json::object()})},
        {"switches", json::array({{{"name", "a"}, {"ports", 2}, {"pipeline_ns", -5}}})},
        {"links", json::array({{{"a", "node0"}, {"b", "a:0"}}, {{"a", "a:1"}, {"b", "node1"}}})}};
    EXPECT_EQ(error_of(topo(explicit_form)),
              "topology.switches.0.pipeline_ns: -5 out of range [0.0, 1000000.0]");
    json bogus = explicit_form;
    bogus["switches"][0] = {{"name", "a"}, {"ports", 2}, {"bogus", 1}};
    EXPECT_EQ(error_of(topo(bogus)), "topology.switches.0.bogus: unknown key");
    json xon = explicit_form;  // own xoff below topology.switch's xon: the switch's error
    xon["switches"][0] = {{"name", "a"}, {"ports", 2}, {"xoff_bytes", 1000}};
    EXPECT_EQ(error_of(topo(xon)),
              "topology.switches.0.xon_bytes: must be below xoff_bytes (1000)");
    auto ls = [](const json& extra) {
        json g = {{"leaves", 2}, {"spines", 3}, {"hosts_per_leaf", 2}};
        g.update(extra);
        return topo({{"leaf_spine", g}});
    };
    // Once for the tier, not once per spine.
    EXPECT_EQ(error_of(ls({{"spine", {{"pipeline_ns", "slow"}}}})),
              "topology.leaf_spine.spine.pipeline_ns: \"slow\" is not a number");
    EXPECT_EQ(error_of(ls({{"leaf", {{"scheduler", "fifo"}}}})),
              "topology.leaf_spine.leaf.scheduler: \"fifo\" is not one of \"strict\", \"dwrr\"");
    EXPECT_EQ(error_of(ls({{"spine", {{"ports", 9}}}})),
              "topology.leaf_spine.spine.ports: set by the generator, not per tier");
    EXPECT_EQ(error_of(ls({{"spine", 7}})),
              "topology.leaf_spine.spine: 7 is not an object of switch keys");
    EXPECT_EQ(error_of(ls({{"spine", {{"max_rate_gbps", 0}}}})),
              "topology.leaf_spine.spine.max_rate_gbps: 0 out of range [1, 1600]");
    EXPECT_EQ(error_of(ls({{"uplink", {{"rate_gbps", 0}}}})),
              "topology.leaf_spine.uplink.rate_gbps: 0 out of range [1.0, 1600.0]");
    EXPECT_EQ(error_of(ls({{"host_link", {{"a", "node0"}}}})),
              "topology.leaf_spine.host_link.a: set by the generator, not per kind of link");
    EXPECT_EQ(error_of(ls({{"uplink", {{"faults", {{"drop", 2}}}}}})),
              "topology.leaf_spine.uplink.faults.drop: 2 out of range [0.0, 1.0]");
    // The rate a port cannot take: named once, at the key that set the rate, with the limit.
    EXPECT_EQ(error_of(ls({{"uplink", {{"rate_gbps", 800}}}, {"spine", {{"max_rate_gbps", 800}}}})),
              "topology.leaf_spine.uplink.rate_gbps: 800 exceeds the port rate of leaf0 (400 "
              "Gb/s, topology.leaf_spine.max_rate_gbps)");
    EXPECT_EQ(error_of(ls({{"uplink", {{"rate_gbps", 800}}}, {"leaf", {{"max_rate_gbps", 800}}}})),
              "topology.leaf_spine.uplink.rate_gbps: 800 exceeds the port rate of spine0 (400 "
              "Gb/s, topology.leaf_spine.max_rate_gbps)");
    EXPECT_EQ(errors_of(ls({{"uplink", {{"rate_gbps", 800}}},
                            {"leaf", {{"max_rate_gbps", 800}}},
                            {"spine", {{"max_rate_gbps", 800}}}})),
              std::vector<std::string>{});
    EXPECT_EQ(
        error_of(ls({{"host_link", {{"rate_gbps", 800}}}, {"leaf", {{"max_rate_gbps", 200}}}})),
        "topology.leaf_spine.host_link.rate_gbps: 800 exceeds the port rate of leaf0 (200 "
        "Gb/s, topology.leaf_spine.leaf.max_rate_gbps)");
}

TEST(Topology, OverridesOfGeneratedNodes) {
    // --set topology.nodes.3.mtu=4096 on a generated topology: the other nodes keep defaults.
    json doc = topo({{"star", {{"hosts", 4}}}});
    ASSERT_EQ(rnic::scenario::apply_override(doc, "topology.nodes.3.mtu=2048"), "");
    const scenario_config c = parse_scenario(doc);
    EXPECT_EQ(c.topology.nodes[3].mtu, 2048u);
    EXPECT_EQ(c.topology.nodes[0].mtu, 1024u);
}

TEST(Flows, Patterns) {
    auto flows = [](const json& w, uint32_t hosts) {
        return flows_of(
            parse_scenario({{"topology", {{"star", {{"hosts", hosts}}}}}, {"workload", w}}));
    };
    // Today's default: one flow, node 0 to node 1.
    const auto pairs = flows_of(parse_scenario(json::object()));
    ASSERT_EQ(pairs.size(), 1u);
    EXPECT_EQ(pairs[0].src, 0u);
    EXPECT_EQ(pairs[0].dst, 1u);

    const auto incast = flows({{"pattern", "incast"}, {"receiver", 2}}, 9);
    ASSERT_EQ(incast.size(), 8u);
    std::set<uint32_t> senders;
    for (const auto& f : incast) {
        EXPECT_EQ(f.dst, 2u);
        senders.insert(f.src);
    }
    EXPECT_EQ(senders.size(), 8u);
    EXPECT_EQ(senders.count(2), 0u);
    EXPECT_EQ(flows({{"pattern", "incast"}, {"senders", 3}}, 9).size(), 3u);

    auto perm = [&](uint64_t seed) {
        std::vector<uint32_t> to(16);
        for (const auto& f : flows({{"pattern", "permutation"}, {"seed", seed}}, 16)) {
            to[f.src] = f.dst;
            EXPECT_NE(f.src, f.dst);
        }
        EXPECT_EQ(std::set<uint32_t>(to.begin(), to.end()).size(), 16u);  // a permutation
        return to;
    };
    EXPECT_EQ(perm(1), perm(1));
    EXPECT_NE(perm(1), perm(2));

    const auto a2a = flows({{"pattern", "all_to_all"}}, 5);
    EXPECT_EQ(a2a.size(), 20u);
}

TEST(Flows, RingAllReduceSteps) {
    const auto flows = flows_of(parse_scenario(
        {{"topology", {{"star", {{"hosts", 4}}}}},
         {"workload",
          {{"pattern", "ring_allreduce"}, {"operation", "send"}, {"message_bytes", 4096}}}}));
    ASSERT_EQ(flows.size(), 4u);
    for (uint32_t i = 0; i < 4; ++i) {
        EXPECT_EQ(flows[i].src, i);
        EXPECT_EQ(flows[i].dst, (i + 1) % 4);
        EXPECT_EQ(flows[i].messages, 6u);                             // 2 (N - 1) steps
        EXPECT_EQ(flows[i].gate, static_cast<int64_t>((i + 3) % 4));  // the flow into node i
        EXPECT_EQ(flows[i].message_bytes, 4096u);
    }
    EXPECT_EQ(error_of({{"workload", {{"pattern", "ring_allreduce"}}}}),
              "workload.operation: ring_allreduce moves its steps by SEND (the receive completion "
              "tells the next step it may start): use \"send\"");
}

// ib_send_lat's exchange: per pair a -> b and b -> a, the answer to message i gated on message
// i being in (one ahead), message i + 1 on answer i; SEND on one QP only.
TEST(Flows, PingPongPairs) {
    const auto flows = flows_of(parse_scenario({{"topology", {{"star", {{"hosts", 4}}}}},
                                                {"workload",
                                                 {{"pattern", "ping_pong"},
                                                  {"pairs", {{0, 1}, {3, 2}}},
                                                  {"operation", "send"},
                                                  {"messages", 7},
                                                  {"message_bytes", 32}}}}));
    ASSERT_EQ(flows.size(), 4u);
    const uint32_t ends[4][2] = {{0, 1}, {1, 0}, {3, 2}, {2, 3}};
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(flows[i].src, ends[i][0]) << i;
        EXPECT_EQ(flows[i].dst, ends[i][1]) << i;
        EXPECT_EQ(flows[i].messages, 7u);
        EXPECT_EQ(flows[i].message_bytes, 32u);
        EXPECT_EQ(flows[i].gate, static_cast<int64_t>(i ^ 1));  // the other direction
        EXPECT_EQ(flows[i].gate_ahead, i % 2);                  // the answer waits for its message
    }
    EXPECT_EQ(error_of({{"workload", {{"pattern", "ping_pong"}}}}),
              "workload.operation: ping_pong answers each message when its receive completes "
              "(ib_send_lat): use \"send\"");
    EXPECT_EQ(
        error_of({{"workload", {{"pattern", "ping_pong"}, {"operation", "send"}, {"qps", 2}}}}),
        "workload.qps: 2: ping_pong runs one exchange at a time over one QP per pair "
        "(ib_send_lat): use 1");
}

TEST(Flows, ExplicitList) {
    const json list = json::array({{{"src", 1}, {"dst", 0}, {"bytes", 1000}, {"start_ns", 5000}},
                                   {{"src", 0}, {"dst", 2}, {"bytes", 64}}});
    const auto flows =
        flows_of(parse_scenario({{"topology", {{"star", {{"hosts", 3}}}}},
                                 {"workload", {{"pattern", "flows"}, {"flows", list}}}}));
    ASSERT_EQ(flows.size(), 2u);
    EXPECT_EQ(flows[0].message_bytes, 1000u);
    EXPECT_EQ(flows[0].messages, 1u);
    EXPECT_EQ(flows[0].start_ns, 5000.0);
    EXPECT_EQ(flows[1].dst, 2u);
    EXPECT_EQ(error_of({{"workload",
                         {{"pattern", "flows"},
                          {"flows", json::array({{{"src", 1}, {"dst", 1}, {"bytes", 8}}})}}}}),
              "workload.flows.0: a node cannot be its own peer (loopback is not modelled)");
    EXPECT_EQ(
        error_of({{"workload",
                   {{"pattern", "flows"}, {"flows", json::array({{{"src", 0}, {"dst", 1}}})}}}}),
        "workload.flows.0.bytes: missing");
    EXPECT_EQ(error_of({{"workload", {{"pattern", "flows"}}}}),
              "workload.pattern: \"flows\" needs workload.flows or workload.cdf");
}

TEST(Flows, SizeDistributionAndPoissonArrivals) {
    // A two-point CDF: sizes uniform in [999, 1001], mean 1000 bytes.
    const std::string path = ::testing::TempDir() + "/rnic_cdf_test.txt";
    {
        std::ofstream f(path);
        f << "999 0\n1001 100\n";
    }
    rnic::scenario::size_cdf cdf;
    cdf.points = {{0, 0}, {10, 0.5}, {20, 1}};
    EXPECT_DOUBLE_EQ(cdf.mean(), 0.5 * 5 + 0.5 * 15);
    EXPECT_DOUBLE_EQ(cdf.draw(0.25), 5);
    EXPECT_DOUBLE_EQ(cdf.draw(0.75), 15);
    // Load 0.5 of 100 Gb/s with 1000-byte flows: 6.25 flows per us per source.
    const auto flows = flows_of(parse_scenario({{"topology", {{"star", {{"hosts", 2}}}}},
                                                {"workload",
                                                 {{"pattern", "flows"},
                                                  {"cdf", path},
                                                  {"load", 0.5},
                                                  {"start_us", 10},
                                                  {"duration_us", 1000}}}}));
    const double expected = 2 * 6.25 * 1000;
    EXPECT_NEAR(static_cast<double>(flows.size()), expected, expected * 0.03);
    double bytes = 0;
    for (size_t i = 0; i < flows.size(); ++i) {
        EXPECT_NE(flows[i].src, flows[i].dst);
        EXPECT_GE(flows[i].start_ns, 10000.0);
        EXPECT_LT(flows[i].start_ns, 1010000.0);
        if (i > 0) {
            EXPECT_GE(flows[i].start_ns, flows[i - 1].start_ns);  // in arrival order
        }
        EXPECT_GE(flows[i].message_bytes, 999u);
        EXPECT_LE(flows[i].message_bytes, 1004u);  // rounded up to whole words
        bytes += static_cast<double>(flows[i].message_bytes);
    }
    // round(draw): 999 (1/4), 1000 (1/2), 1001 (1/4); up to words: 1000, 1000, 1004.
    EXPECT_NEAR(bytes / static_cast<double>(flows.size()), 1001.0, 1.0);
    EXPECT_EQ(error_of({{"workload", {{"pattern", "flows"}, {"cdf", "/nonexistent/cdf.txt"}}}}),
              "workload.cdf: cannot open \"/nonexistent/cdf.txt\" (relative to the scenario's "
              "folder or the current folder)");
}

}  // namespace

// topology.clocks: each element's offset is a uniform draw in [-ppm, +ppm] from the seed and
// its name alone (so every rank draws the same), recorded in config.json; bad values name
// their JSON path.
TEST(Topology, ClockOffsetsAreSeededPerElementName) {
    json doc = topo({{"leaf_spine", {{"leaves", 8}, {"spines", 4}, {"hosts_per_leaf", 16}}},
                     {"clocks", {{"ppm", 100}, {"seed", 7}}}});
    const scenario_config a = parse_scenario(doc);
    const auto& t = a.topology;
    ASSERT_EQ(t.node_ppm.size(), 128u);
    ASSERT_EQ(t.switch_ppm.size(), 12u);
    double sum = 0;
    double lo = 0;
    double hi = 0;
    for (size_t i = 0; i < t.node_ppm.size(); ++i) {
        const double p = t.node_ppm[i];
        EXPECT_GE(p, -100);
        EXPECT_LT(p, 100);
        EXPECT_EQ(p, rnic::scenario::clock_offset_ppm(t.clocks, "node" + std::to_string(i)));
        sum += p;
        lo = std::min(lo, p);
        hi = std::max(hi, p);
    }
    // 128 uniform draws on [-100, 100): mean within 4 sd (57.7 / sqrt(128) = 5.1) of 0, and
    // spread over most of the range.
    EXPECT_NEAR(sum / 128, 0, 20.5);
    EXPECT_LT(lo, -80);
    EXPECT_GT(hi, 80);
    EXPECT_EQ(t.switch_ppm[0], rnic::scenario::clock_offset_ppm(t.clocks, t.switches[0].name));
    EXPECT_EQ(a.effective["topology"]["clocks"]["ppm"], 100);
    // Another seed, other draws; ppm 0 (the default), every clock exact.
    doc["topology"]["clocks"]["seed"] = 8;
    EXPECT_NE(parse_scenario(doc).topology.node_ppm, t.node_ppm);
    doc["topology"].erase("clocks");
    for (double p : parse_scenario(doc).topology.node_ppm) {
        EXPECT_EQ(p, 0);
    }
    EXPECT_EQ(error_of(topo({{"clocks", {{"ppm", -1}}}})).rfind("topology.clocks.ppm: ", 0), 0u);
    EXPECT_EQ(error_of(topo({{"clocks", {{"jitter", 1}}}})).rfind("topology.clocks.jitter", 0), 0u);
}
