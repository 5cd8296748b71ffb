// SPDX-License-Identifier: Apache-2.0
// Scenario config loading: defaults, every error path (with its JSON path), --set overrides.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hw/common/config_reader.h"
#include "testbench/common/cli_run.h"
#include "testbench/scenario/scenario_config.h"

#include <stdlib.h>

namespace {

using nlohmann::json;
using rnic::config::config_error;
using rnic::scenario::apply_override;
using rnic::scenario::load_scenario;
using rnic::scenario::parse_scenario;
using rnic::scenario::scenario_config;
using rnic::testing::source_dir;
using scratch = rnic::testing::scratch_dir;

// The errors parse_scenario reports for `doc` (empty when it parses).
std::vector<std::string> errors_of(const json& doc) {
    try {
        parse_scenario(doc);
    } catch (const config_error& e) {
        return e.errors;
    }
    return {};
}

// The single error for `doc`; fails the test when there are none or several.
std::string error_of(const json& doc) {
    const auto errs = errors_of(doc);
    EXPECT_EQ(errs.size(), 1u) << doc.dump();
    return errs.empty() ? "" : errs.front();
}

TEST(ScenarioConfig, EmptyDocumentGivesDocumentedDefaults) {
    const scenario_config c = parse_scenario(json::object());
    EXPECT_EQ(c.workload.op, rnic::scenario::operation::WRITE);
    EXPECT_EQ(c.workload.message_bytes, 65536u);
    EXPECT_EQ(c.workload.messages, 1000u);
    EXPECT_EQ(c.workload.qps, 1u);
    EXPECT_EQ(c.workload.queue_depth, 16u);
    EXPECT_EQ(c.workload.signal_every, 1u);
    EXPECT_FALSE(c.outputs.waves);
    EXPECT_EQ(c.outputs.dir, "out");
    EXPECT_EQ(c.topology.nodes[0].ip, 0x0A000001u);
    EXPECT_EQ(c.topology.nodes[1].ip, 0x0A000002u);
    EXPECT_EQ(c.topology.nodes[1].mac[5], 2);
    EXPECT_EQ(c.rnic.pcie.lanes, 16u);

    // The effective config names every section and every default.
    const json& e = c.effective;
    EXPECT_EQ(e["workload"]["operation"], "write");
    EXPECT_EQ(e["workload"]["queue_depth"], 16);
    EXPECT_EQ(e["outputs"]["waves"], false);
    EXPECT_EQ(e["topology"]["nodes"][0]["ip"], "10.0.0.1");
    EXPECT_EQ(e["topology"]["nodes"][1]["mac"], "02:00:00:00:00:02");
    EXPECT_EQ(e["topology"]["link"]["rate_gbps"], 100.0);
    EXPECT_EQ(e["rnic"]["pcie"]["lanes"], 16);
    EXPECT_TRUE(e["rnic"].contains("limits"));
    EXPECT_TRUE(e["host"].contains("memory_latency_ns"));
}

TEST(ScenarioConfig, EffectiveConfigParsesToItself) {
    json doc = {{"workload", {{"operation", "read"}, {"message_bytes", 4096}, {"qps", 2}}},
                {"rnic", {{"pcie", {{"lanes", 8}}}}}};
    const scenario_config c = parse_scenario(doc);
    const scenario_config again = parse_scenario(c.effective);
    EXPECT_EQ(again.effective, c.effective);
    EXPECT_EQ(again.workload.op, rnic::scenario::operation::READ);
    EXPECT_EQ(again.rnic.pcie.lanes, 8u);
}

TEST(ScenarioConfig, QuickstartLoads) {
    const scenario_config c = load_scenario(source_dir() + "/configs/quickstart.json", {});
    EXPECT_EQ(c.topology.nodes.size(), 2u);
    EXPECT_GT(c.workload.messages, 0u);
    EXPECT_EQ(c.outputs.dir, "out/quickstart");
}

TEST(ScenarioConfig, UnknownKeysAtEveryDepth) {
    EXPECT_EQ(error_of({{"bogus", 1}}), "bogus: unknown key");
    EXPECT_EQ(error_of({{"workload", {{"msgs", 1}}}}), "workload.msgs: unknown key");
    EXPECT_EQ(error_of({{"rnic", {{"pcie", {{"width", 16}}}}}}), "rnic.pcie.width: unknown key");
    EXPECT_EQ(error_of({{"topology", {{"link", {{"speed", 1}}}}}}),
              "topology.link.speed: unknown key");
    json nodes = json::array({json::object(), {{"gw", "10.0.0.254"}}});
    EXPECT_EQ(error_of({{"topology", {{"nodes", nodes}}}}), "topology.nodes.1.gw: unknown key");
}

TEST(ScenarioConfig, WrongTypes) {
    EXPECT_EQ(error_of({{"workload", {{"messages", "many"}}}}),
              "workload.messages: \"many\" is not an integer");
    EXPECT_EQ(error_of({{"workload", {{"messages", 1.5}}}}),
              "workload.messages: 1.5 is not an integer");
    EXPECT_EQ(error_of({{"outputs", {{"waves", 1}}}}), "outputs.waves: 1 is not true or false");
    EXPECT_EQ(error_of({{"outputs", {{"dir", 7}}}}), "outputs.dir: 7 is not a string");
    EXPECT_EQ(error_of({{"topology", {{"link", {{"rate_gbps", "fast"}}}}}}),
              "topology.link.rate_gbps: \"fast\" is not a number");
    json nodes = json::array({{{"mac", 5}}, json::object()});
    EXPECT_EQ(error_of({{"topology", {{"nodes", nodes}}}}),
              "topology.nodes.0.mac: 5 is not a string");
}

TEST(ScenarioConfig, OutOfRange) {
    EXPECT_EQ(error_of({{"workload", {{"queue_depth", 0}}}}),
              "workload.queue_depth: 0 out of range [1, 1048576]");
    EXPECT_EQ(error_of({{"workload", {{"messages", -3}}}}),
              "workload.messages: -3 out of range [1, 1099511627776]");
    EXPECT_EQ(error_of({{"rnic", {{"pcie", {{"gen", 6}}}}}}),
              "rnic.pcie.gen: 6 out of range [1, 5]");
    EXPECT_EQ(error_of({{"topology", {{"link", {{"rate_gbps", 0.5}}}}}}),
              "topology.link.rate_gbps: 0.5 out of range [1.0, 1600.0]");
}

// host.cm_ids: "auto" by default (the provider sizes the table from rnic.limits.max_qps), or an
// explicit number of entries; anything else names the key.
TEST(ScenarioConfig, CmIdsAutoOrNumber) {
    const scenario_config d = parse_scenario(json::object());
    EXPECT_EQ(d.host.cm_ids, rnic::ndk::CM_IDS_AUTO);
    EXPECT_EQ(d.effective["host"]["cm_ids"], "auto");
    EXPECT_EQ(parse_scenario({{"host", {{"cm_ids", "auto"}}}}).host.cm_ids, rnic::ndk::CM_IDS_AUTO);
    const scenario_config three = parse_scenario({{"host", {{"cm_ids", 3}}}});
    EXPECT_EQ(three.host.cm_ids, 3u);
    EXPECT_EQ(three.effective["host"]["cm_ids"], 3);
    EXPECT_EQ(parse_scenario(three.effective).host.cm_ids, 3u);
    EXPECT_EQ(error_of({{"host", {{"cm_ids", 0}}}}),
              "host.cm_ids: 0 out of range [1, 1048576] (or \"auto\")");
    EXPECT_EQ(error_of({{"host", {{"cm_ids", 1048577}}}}),
              "host.cm_ids: 1048577 out of range [1, 1048576] (or \"auto\")");
    EXPECT_EQ(error_of({{"host", {{"cm_ids", -1}}}}),
              "host.cm_ids: -1 out of range [1, 1048576] (or \"auto\")");
    EXPECT_EQ(error_of({{"host", {{"cm_ids", "many"}}}}),
              "host.cm_ids: \"many\" is not \"auto\" or an integer");
    EXPECT_EQ(error_of({{"host", {{"cm_ids", 2.5}}}}),
              "host.cm_ids: 2.5 is not \"auto\" or an integer");
    // Sized for a connector on every QPN the NIC can connect (QPNs 0 and 1 are reserved) plus
    // a listener: what a passive node needs for max_qps - 2 connections.
    rnic::ndk::host_config h;
    EXPECT_GE(rnic::ndk::cm_id_entries(h, 1026), 1024u + 1u);
    EXPECT_GE(rnic::ndk::cm_id_entries(h, 4), 2u + 1u);
    h.cm_ids = 7;
    EXPECT_EQ(rnic::ndk::cm_id_entries(h, 1026), 7u);
}

TEST(ScenarioConfig, NotOneOf) {
    EXPECT_EQ(error_of({{"rnic", {{"pcie", {{"lanes", 12}}}}}}),
              "rnic.pcie.lanes: 12 is not one of 1, 2, 4, 8, 16");
    EXPECT_EQ(error_of({{"workload", {{"operation", "atomic"}}}}),
              "workload.operation: \"atomic\" is not one of \"write\", \"send\", \"read\", "
              "\"mixed\"");
    json nodes = json::array({{{"mtu", 1500}}, json::object()});
    EXPECT_EQ(error_of({{"topology", {{"nodes", nodes}}}}),
              "topology.nodes.0.mtu: 1500 is not one of 256, 512, 1024, 2048, 4096");
}

TEST(ScenarioConfig, NonObjects) {
    EXPECT_EQ(error_of(json::array()), "(top level): an array is not an object");
    EXPECT_EQ(error_of(5), "(top level): 5 is not an object");
    EXPECT_EQ(error_of({{"rnic", 5}}), "rnic: 5 is not an object");
    EXPECT_EQ(error_of({{"workload", "write"}}), "workload: \"write\" is not an object");
    EXPECT_EQ(error_of({{"rnic", {{"pcie", json::array()}}}}),
              "rnic.pcie: an array is not an object");
    json nodes = json::array({json::object(), 7});
    EXPECT_EQ(error_of({{"topology", {{"nodes", nodes}}}}), "topology.nodes.1: 7 is not an object");
}

TEST(ScenarioConfig, TopologyNodes) {
    EXPECT_EQ(error_of({{"topology", {{"nodes", json::array({json::object()})}}}}),
              "topology.nodes: 1 nodes given: back to back joins exactly 2 (give topology.links "
              "or a generator for more)");
    EXPECT_EQ(error_of({{"topology", {{"nodes", "two"}}}}),
              "topology.nodes: \"two\" is not an array of nodes");
    json bad_mac = json::array({{{"mac", "02:00:00:00:00"}}, json::object()});
    EXPECT_EQ(error_of({{"topology", {{"nodes", bad_mac}}}}),
              "topology.nodes.0.mac: \"02:00:00:00:00\" is not a MAC address like "
              "02:00:00:00:00:01");
    json bad_ip = json::array({json::object(), {{"ip", "10.0.0.256"}}});
    EXPECT_EQ(error_of({{"topology", {{"nodes", bad_ip}}}}),
              "topology.nodes.1.ip: \"10.0.0.256\" is not an IPv4 address like 10.0.0.1");
    json same = json::array({{{"ip", "10.1.1.1"}}, {{"ip", "10.1.1.1"}}});
    EXPECT_EQ(error_of({{"topology", {{"nodes", same}}}}),
              "topology.nodes.1.ip: \"10.1.1.1\" is also node 0's IP");
    json same_mac = json::array({{{"mac", "02:00:00:00:00:09"}}, {{"mac", "02:00:00:00:00:09"}}});
    EXPECT_EQ(error_of({{"topology", {{"nodes", same_mac}}}}),
              "topology.nodes.1.mac: \"02:00:00:00:00:09\" is also node 0's MAC");

    json custom =
        json::array({{{"mac", "AA:bb:cc:00:11:22"}, {"ip", "192.168.7.9"}}, json::object()});
    const scenario_config c = parse_scenario({{"topology", {{"nodes", custom}}}});
    EXPECT_EQ(c.topology.nodes[0].mac[0], 0xAA);
    EXPECT_EQ(c.topology.nodes[0].mac[5], 0x22);
    EXPECT_EQ(c.topology.nodes[0].ip, (192u << 24) | (168u << 16) | (7u << 8) | 9u);
}

TEST(ScenarioConfig, CrossChecksAgainstAdapterLimits) {
    EXPECT_EQ(error_of({{"workload", {{"queue_depth", 8}, {"signal_every", 9}}}}),
              "workload.signal_every: 9 exceeds workload.queue_depth 8");
    EXPECT_EQ(error_of({{"workload", {{"inline_threshold", 512}}}}),
              "workload.inline_threshold: 512 exceeds rnic.limits.max_inline 256");
    EXPECT_EQ(error_of({{"workload", {{"qps", 2000}}}}),
              "workload.qps: 2000 exceeds rnic.limits.max_qps 1024 - 2 (QPNs 0 and 1 are "
              "reserved)");
    // The driver's QPNs are 2 .. max_qps - 1: 1022 QPs fit in 1024, 1023 do not.
    EXPECT_EQ(error_of({{"workload", {{"qps", 1023}, {"queue_depth", 1}}}}),
              "workload.qps: 1023 exceeds rnic.limits.max_qps 1024 - 2 (QPNs 0 and 1 are "
              "reserved)");
    EXPECT_TRUE(errors_of({{"workload", {{"qps", 1022}, {"queue_depth", 1}}}}).empty());
    EXPECT_EQ(error_of({{"workload", {{"queue_depth", 5000}, {"signal_every", 1}}}}),
              "workload.queue_depth: 5000 exceeds rnic.limits.max_qp_depth 4096");
    EXPECT_EQ(
        error_of({{"workload", {{"operation", "send"}, {"queue_depth", 4096}}}}),
        "workload.queue_depth: 8192 exceeds (x2 receives for send) rnic.limits.max_qp_depth 4096");
    EXPECT_EQ(error_of({{"workload", {{"qps", 64}, {"queue_depth", 2048}}}}),
              "workload.qps: 64 QPs x 2048 completions = 131072 exceed rnic.limits.max_cq_depth "
              "65536");
    // A raised limit lifts the cross-check.
    EXPECT_TRUE(errors_of({{"workload", {{"inline_threshold", 512}}},
                           {"rnic", {{"limits", {{"max_inline", 1024}}}}}})
                    .empty());
    json mtu = json::array({{{"mtu", 4096}}, json::object()});
    EXPECT_EQ(
        error_of({{"topology", {{"nodes", mtu}}}, {"rnic", {{"limits", {{"max_mtu", 2048}}}}}}),
        "topology.nodes.0.mtu: 4096 exceeds rnic.limits.max_mtu 2048");
}

TEST(ScenarioConfig, ReportsEveryErrorTogether) {
    json doc = {{"bogus", true},
                {"workload", {{"operation", "atomic"}, {"queue_depth", 0}}},
                {"rnic", {{"pcie", {{"lanes", 12}}}}},
                {"outputs", {{"waves", "yes"}}}};
    try {
        parse_scenario(doc);
        FAIL() << "parse_scenario accepted an invalid config";
    } catch (const config_error& e) {
        const std::vector<std::string> expected = {
            "rnic.pcie.lanes: 12 is not one of 1, 2, 4, 8, 16",
            "workload.operation: \"atomic\" is not one of \"write\", \"send\", \"read\", "
            "\"mixed\"",
            "workload.queue_depth: 0 out of range [1, 1048576]",
            "outputs.waves: \"yes\" is not true or false",
            "bogus: unknown key",
        };
        EXPECT_EQ(e.errors, expected);
        // what() holds them all, one per line.
        std::string joined;
        for (const auto& s : expected) {
            joined += (joined.empty() ? "" : "\n") + s;
        }
        EXPECT_EQ(std::string(e.what()), joined);
    }
}

TEST(ScenarioOverrides, ValuesAreJsonElseStrings) {
    json doc = json::object();
    EXPECT_EQ(apply_override(doc, "workload.messages=20"), "");
    EXPECT_EQ(apply_override(doc, "workload.operation=send"), "");
    EXPECT_EQ(apply_override(doc, "outputs.waves=true"), "");
    EXPECT_EQ(apply_override(doc, "outputs.dir=\"123\""), "");
    EXPECT_EQ(apply_override(doc, "topology.link={\"rate_gbps\": 25}"), "");
    EXPECT_EQ(apply_override(doc, "topology.nodes.1.ip=10.9.9.9"), "");
    EXPECT_EQ(doc["workload"]["messages"], 20);
    EXPECT_EQ(doc["workload"]["operation"], "send");
    EXPECT_EQ(doc["outputs"]["waves"], true);
    EXPECT_EQ(doc["outputs"]["dir"], "123");
    EXPECT_EQ(doc["topology"]["link"]["rate_gbps"], 25);
    ASSERT_TRUE(doc["topology"]["nodes"].is_array());
    EXPECT_EQ(doc["topology"]["nodes"][1]["ip"], "10.9.9.9");
    EXPECT_TRUE(doc["topology"]["nodes"][0].is_null());  // node 0 keeps its defaults

    const scenario_config c = parse_scenario(doc);
    EXPECT_EQ(c.workload.messages, 20u);
    EXPECT_EQ(c.workload.op, rnic::scenario::operation::SEND);
    EXPECT_TRUE(c.outputs.waves);
    EXPECT_EQ(c.topology.link.rate_gbps, 25.0);
    EXPECT_EQ(c.topology.nodes[0].ip, 0x0A000001u);
    EXPECT_EQ(c.topology.nodes[1].ip, (10u << 24) | (9u << 16) | (9u << 8) | 9u);
}

TEST(ScenarioOverrides, MalformedAssignments) {
    json doc = {{"workload", {{"messages", 5}}}, {"topology", {{"nodes", json::array()}}}};
    EXPECT_EQ(apply_override(doc, "workload.messages"),
              "--set workload.messages: expected PATH=VALUE");
    EXPECT_EQ(apply_override(doc, "=5"), "--set =5: expected PATH=VALUE");
    EXPECT_EQ(apply_override(doc, "workload..messages=5"),
              "--set workload..messages=5: empty component in \"workload..messages\"");
    EXPECT_EQ(apply_override(doc, "workload.messages.x=1"),
              "--set workload.messages.x=1: workload.messages is 5, which has no member \"x\"");
    EXPECT_EQ(apply_override(doc, "topology.nodes.ip=1"),
              "--set topology.nodes.ip=1: topology.nodes is an array, which has no member \"ip\"");
    EXPECT_EQ(doc["workload"]["messages"], 5);  // failed overrides change nothing
}

TEST(ScenarioOverrides, LoadValidatesOverriddenValues) {
    scratch s;
    const std::string file = s.write("s.json", R"({"workload": {"messages": 10}})");
    const scenario_config c = load_scenario(file, {"workload.messages=7", "rnic.pcie.lanes=8"});
    EXPECT_EQ(c.workload.messages, 7u);
    EXPECT_EQ(c.rnic.pcie.lanes, 8u);
    EXPECT_EQ(c.effective["workload"]["messages"], 7);

    try {
        load_scenario(file, {"rnic.pcie.lanes=12", "workload.bogus=1", "workload.qps=many"});
        FAIL() << "bad overrides accepted";
    } catch (const config_error& e) {
        const std::vector<std::string> expected = {
            "rnic.pcie.lanes: 12 is not one of 1, 2, 4, 8, 16",
            "workload.qps: \"many\" is not an integer",
            "workload.bogus: unknown key",
        };
        EXPECT_EQ(e.errors, expected);
    }
    try {
        load_scenario(file, {"nonsense", "workload.messages.deep=1"});
        FAIL() << "malformed overrides accepted";
    } catch (const config_error& e) {
        ASSERT_EQ(e.errors.size(), 2u);
        EXPECT_EQ(e.errors[0], "--set nonsense: expected PATH=VALUE");
        EXPECT_EQ(e.errors[1],
                  "--set workload.messages.deep=1: workload.messages is 10, which has no member "
                  "\"deep\"");
    }
}

TEST(ScenarioFiles, MissingAndMalformedFiles) {
    scratch s;
    try {
        load_scenario(s.dir + "/absent.json", {});
        FAIL() << "missing file accepted";
    } catch (const config_error& e) {
        ASSERT_EQ(e.errors.size(), 1u);
        EXPECT_EQ(e.errors[0], s.dir + "/absent.json: cannot open");
    }
    const std::string bad = s.write("bad.json", "{\"workload\": {\"messages\": }");
    try {
        load_scenario(bad, {});
        FAIL() << "malformed JSON accepted";
    } catch (const config_error& e) {
        ASSERT_EQ(e.errors.size(), 1u);
        EXPECT_EQ(e.errors[0].rfind(bad + ": ", 0), 0u) << e.errors[0];
        EXPECT_NE(e.errors[0].find("parse error"), std::string::npos) << e.errors[0];
    }
    // Comments are allowed in scenario files.
    const std::string commented =
        s.write("c.json", "{\n  // a comment\n  \"workload\": {\"messages\": 3}\n}");
    EXPECT_EQ(load_scenario(commented, {}).workload.messages, 3u);
}

// Every leaf of the effective config, as documented: array elements as <i>.
void leaf_paths(const json& j, const std::string& path, std::vector<std::string>& out) {
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it) {
            leaf_paths(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
        }
    } else if (j.is_array() && !j.empty() && j.front().is_object()) {
        leaf_paths(j.front(), path + ".<i>", out);
    } else {
        out.push_back(path);
    }
}

TEST(ScenarioConfig, ReadmeDocumentsEveryKey) {
    std::ifstream in(source_dir() + "/configs/README.md");
    ASSERT_TRUE(in) << "configs/README.md not found";
    const std::string readme((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
    std::vector<std::string> keys;
    leaf_paths(parse_scenario(json::object()).effective, "", keys);
    EXPECT_GT(keys.size(), 50u);
    for (const auto& k : keys) {
        EXPECT_NE(readme.find("| `" + k + "` |"), std::string::npos)
            << k << " is not documented in configs/README.md";
    }
}

TEST(ScenarioConfig, AddressHelpers) {
    std::array<uint8_t, 6> mac{};
    EXPECT_TRUE(rnic::scenario::parse_mac("0a:1B:2c:3D:4e:5F", mac));
    EXPECT_EQ(rnic::scenario::format_mac(mac), "0a:1b:2c:3d:4e:5f");
    EXPECT_FALSE(rnic::scenario::parse_mac("0a-1b-2c-3d-4e-5f", mac));
    EXPECT_FALSE(rnic::scenario::parse_mac("0a:1b:2c:3d:4e:5g", mac));
    EXPECT_FALSE(rnic::scenario::parse_mac("0a:1b:2c:3d:4e:5f:", mac));
    uint32_t ip = 0;
    EXPECT_TRUE(rnic::scenario::parse_ipv4("255.0.10.1", ip));
    EXPECT_EQ(rnic::scenario::format_ipv4(ip), "255.0.10.1");
    EXPECT_FALSE(rnic::scenario::parse_ipv4("1.2.3", ip));
    EXPECT_FALSE(rnic::scenario::parse_ipv4("1.2.3.4.5", ip));
    EXPECT_FALSE(rnic::scenario::parse_ipv4("1.2.3.1000", ip));
    EXPECT_FALSE(rnic::scenario::parse_ipv4("1..3.4", ip));
}

}  // namespace

// The NIC's PFC headroom in bytes from the IEEE 802.1Qbb terms (Cisco's white paper, IEEE 802.3
// Table 31D-1), computed here from the standard's figures, not from the model's helper: the
// cable both ways at the line rate, two largest frames on the wire (RoCE frame of max_mtu:
// Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 + payload + ICRC 4, then FCS 4,
// preamble 8, IFG 12), a pause frame (64 B + preamble + IFG = 84 B), the response time.
TEST(ScenarioConfig, NicPfcHeadroomInBytesFromTheLink) {
    const scenario_config c =
        parse_scenario({{"topology", {{"link", {{"rate_gbps", 100}, {"propagation_ns", 100}}}}}});
    const auto& rp = c.rnic.recv_path;
    EXPECT_EQ(rp.fifo_bytes, 262016u);  // ConnectX-4/5 port buffer (Mellanox DOC-2933)
    const uint64_t frame = 14 + 20 + 8 + 12 + 16 + 4 + 4096 + 4 + 4 + 8 + 12;  // 4198
    const uint64_t cable = 2 * 100 * 100 / 8;                                  // 2500 B
    const uint64_t response = 201728 / 8;  // 100GBASE-R: 394 quanta, 201728 bits
    const rnic::hw::pfc_thresholds t = rnic::hw::nic_pfc_thresholds(rp, 100, 100);
    EXPECT_EQ(t.headroom, cable + 2 * frame + 84 + response);  // 36196 B
    EXPECT_EQ(t.xoff, 262016 - t.headroom);
    EXPECT_EQ(t.xon, t.xoff - frame);  // mlx5: xon = xoff - max_mtu
    // 25 Gb/s, 1 us (200 m of fibre): 80 quanta (40960 bits).
    const rnic::hw::pfc_thresholds t25 = rnic::hw::nic_pfc_thresholds(rp, 25, 1000);
    EXPECT_EQ(t25.headroom, 2 * 1000 * 25 / 8 + 2 * frame + 84 + 40960 / 8);
    // Set by hand: taken as given.
    json doc = {
        {"rnic", {{"recv_path", {{"pfc_headroom_bytes", 50000}, {"pfc_xon_bytes", 1000}}}}}};
    const scenario_config h = parse_scenario(doc);
    const rnic::hw::pfc_thresholds th = rnic::hw::nic_pfc_thresholds(h.rnic.recv_path, 100, 100);
    EXPECT_EQ(th.headroom, 50000u);
    EXPECT_EQ(th.xoff, 262016u - 50000u);
    EXPECT_EQ(th.xon, 1000u);
    // A buffer that cannot hold the headroom of a node's link is refused, named by its path.
    const std::string e = error_of({{"rnic", {{"recv_path", {{"fifo_bytes", 40000}}}}}});
    EXPECT_EQ(e.rfind("rnic.recv_path.fifo_bytes: 40000 holds no PFC headroom", 0), 0u) << e;
    EXPECT_TRUE(errors_of({{"rnic", {{"recv_path", {{"fifo_bytes", 40000}}}}},
                           {"topology", {{"link", {{"pfc", false}}}}}})
                    .empty());
    EXPECT_EQ(error_of({{"rnic", {{"recv_path", {{"pfc_headroom_bytes", 300000}}}}}}),
              "rnic.recv_path.pfc_headroom_bytes: must be below fifo_bytes (262016)");
    EXPECT_EQ(error_of({{"rnic", {{"recv_path", {{"fifo_frames", 64}}}}}}),
              "rnic.recv_path.fifo_frames: unknown key");
}
