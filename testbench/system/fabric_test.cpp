// SPDX-License-Identifier: Apache-2.0
// The fabric, end to end (issue 14, "Fidelity"): every node a full NIC, switches from
// tlm/switch, flows set up through the CM over the fabric. Expectations come from formulas
// written here (wire bytes per RoCEv2 packet, serialization, per-hop latency) and from
// invariants (no drop when lossless, queue bounded by XOFF + headroom, pauses on every sender's
// link), not from the model's own helpers.
//
// One elaboration per process: ctest runs each TEST as its own process. Run the binary by hand
// with --gtest_filter=<one test>.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"
#include "testbench/system/outputs_common.h"

namespace {

using nlohmann::json;
using rnic::scenario::run_result;
using namespace rnic::outputs_test;

// --- Wire bytes of a RoCEv2 packet besides its payload (IBA annex A17, IEEE 802.3) ---
constexpr uint64_t PER_PACKET = 8 /*preamble+SFD*/ + 14 /*Ethernet*/ + 20 /*IPv4*/ + 8 /*UDP*/ +
                                12 /*BTH*/ + 4 /*ICRC*/ + 4 /*FCS*/ + 12 /*IFG*/;  // 82 B
constexpr uint64_t RETH = 16;                                                      // WRITE, first
constexpr uint64_t MTU = 1024;
constexpr double RATE_GBPS = 100;
constexpr double PROPAGATION_NS = 100;
constexpr double PIPELINE_NS = 400;  // the switch default (tlm/switch/README.md)

json writes(uint64_t messages, uint64_t bytes = 65536) {
    return {{"operation", "write"}, {"message_bytes", bytes}, {"messages", messages}, {"qps", 1},
            {"queue_depth", 16},    {"time_limit_ms", 1000}};
}

json scenario(const json& topology_shape, const json& workload, const json& sw = json::object()) {
    json t = topology_shape;
    t["link"] = {{"rate_gbps", RATE_GBPS}, {"propagation_ns", PROPAGATION_NS}};
    if (!sw.empty()) {
        t["switch"] = sw;
    }
    return {{"topology", t}, {"workload", workload}};
}

run_result run(const json& doc) {
    const run_result r = rnic::scenario::run_scenario(rnic::scenario::parse_scenario(doc));
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    return r;
}

double counter(const run_result& r, const std::string& block, const std::string& name) {
    if (!r.blocks.contains(block) || !r.blocks[block].contains(name)) {
        ADD_FAILURE() << "stats: no " << block << "." << name;
        return 0;
    }
    return r.blocks[block][name].get<double>();
}

// Sum of counter `name` over every block whose name starts with `prefix` and has no further
// '.' after it (ports, not their queues), or over queues too when `queues`.
double sum(const run_result& r, const std::string& prefix, const std::string& name,
           bool queues = false) {
    double s = 0;
    for (auto it = r.blocks.begin(); it != r.blocks.end(); ++it) {
        const std::string& b = it.key();
        if (b.rfind(prefix, 0) != 0) {
            continue;
        }
        const bool is_queue = b.find(".q", prefix.size()) != std::string::npos;
        if (is_queue != queues || !it.value().contains(name)) {
            continue;
        }
        s += it.value()[name].get<double>();
    }
    return s;
}

// One flow of `messages` x 64 KiB WRITEs alone through `switches` switches: its completion time
// is the serialization of every wire byte at the line rate plus, per switch, the pipeline and
// the store-and-forward of the first packet, plus the propagation of every link.
run_result one_flow_through(const json& shape, uint32_t src, uint32_t dst, uint32_t switches) {
    const uint64_t messages = 256;
    const uint64_t bytes = 65536;
    json w = writes(messages, bytes);
    w["pairs"] = json::array({json::array({src, dst})});
    const run_result r = run(scenario(shape, w));
    if (r.flows.size() != 1) {
        ADD_FAILURE() << r.flows.size() << " flows";
        return r;
    }
    const uint64_t packets = (bytes + MTU - 1) / MTU;
    const double wire = static_cast<double>(messages * (bytes + packets * PER_PACKET + RETH));
    const double ns_per_byte = 8.0 / RATE_GBPS;
    const double first_packet = static_cast<double>(MTU + PER_PACKET + RETH) * ns_per_byte;
    const double ideal = wire * ns_per_byte + switches * (PIPELINE_NS + first_packet) +
                         (switches + 1) * PROPAGATION_NS;
    const double fct = r.flows[0].fct_ns();
    EXPECT_NEAR(fct / ideal, 1.0, 0.01) << "FCT " << fct << " ns, formula " << ideal << " ns";
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_EQ(r.bytes_checked, messages * bytes);
    return r;
}

TEST(FabricFidelity, OneFlowThroughOneSwitch) {
    one_flow_through({{"star", {{"hosts", 2}}}}, 0, 1, 1);
}

TEST(FabricFidelity, OneFlowThroughThreeSwitches) {
    one_flow_through({{"leaf_spine", {{"leaves", 2}, {"spines", 1}, {"hosts_per_leaf", 1}}}}, 0, 1,
                     3);
}

TEST(FabricFidelity, OneFlowThroughFiveSwitchesOfAFatTree) {
    // 16 nodes, 20 switches: the 14 idle nodes open nothing and send nothing.
    const run_result r = one_flow_through({{"fat_tree", {{"k", 4}}}}, 0, 15, 5);
    for (uint32_t n = 1; n < 15; ++n) {
        const std::string link = "link" + std::to_string(n);  // node n's cable (side a)
        EXPECT_EQ(counter(r, link + ".dir0", "frames"), 0) << "idle node" << n << " sent";
        EXPECT_EQ(counter(r, link + ".dir1", "frames"), 0) << "idle node" << n << " received";
        EXPECT_FALSE(r.blocks.contains("workload.node" + std::to_string(n)));
        EXPECT_EQ(counter(r, "node" + std::to_string(n) + ".memory", "dma_reads"), 0);
    }
}

TEST(FabricConfig, SameConfigSameOutputs) {
    // Flows drawn from a size distribution (Hadoop) over a leaf-spine: two runs, byte-identical
    // files.
    scratch s;
    const std::vector<std::string> args = {
        "--set", "workload.cdf=" + source_dir() + "/configs/cdf/hadoop.txt",
        "--set", "workload.duration_us=100",
        "--set", "workload.load=0.5",
        "--set", "topology.leaf_spine={\"leaves\": 2, \"spines\": 2, \"hosts_per_leaf\": 4}",
        "--set", "outputs.pcap=true"};
    for (const char* name : {"a", "b"}) {
        std::vector<std::string> run = {"run",
                                        source_dir() + "/configs/fabric/websearch_64_30.json",
                                        "--out", s.dir + "/" + name};
        run.insert(run.end(), args.begin(), args.end());
        const auto res = rnicsim(s, run);
        ASSERT_EQ(res.exit_code, 0) << res.err;
    }
    for (const char* f : {"stats.json", "flows.csv", "summary.txt", "wire.pcap"}) {
        EXPECT_EQ(read_file(s.dir + "/a/" + f), read_file(s.dir + "/b/" + f)) << f;
    }
    const std::string flows = read_file(s.dir + "/a/flows.csv");
    EXPECT_GT(std::count(flows.begin(), flows.end(), '\n'), 20);
}

TEST(FabricScale, IdleNodesCostNoEvents) {
    // The same flow (node 0 to node 1 on leaf 0) in a 4-node and in a 128-node leaf-spine: the
    // 124 more nodes and 10 more switches have nothing to do, so the kernel does exactly the same
    // work (delta cycles) and the flow the same thing at the same times.
    scratch s;
    std::vector<json> speed;
    std::vector<std::string> flows;
    for (const auto& [leaves, hosts] : {std::pair{2, 2}, std::pair{8, 16}}) {
        const std::string out = s.dir + "/" + std::to_string(leaves);
        const json t = {
            {"leaf_spine", {{"leaves", leaves}, {"spines", 2}, {"hosts_per_leaf", hosts}}}};
        const auto res =
            rnicsim(s, {"run", source_dir() + "/configs/quickstart.json", "--out", out, "--set",
                        "topology=" + t.dump(), "--set", "workload.messages=50"});
        ASSERT_EQ(res.exit_code, 0) << res.err;
        speed.push_back(json::parse(read_file(out + "/speed.json")));
        flows.push_back(read_file(out + "/flows.csv"));
    }
    EXPECT_GT(speed[0]["delta_cycles"].get<uint64_t>(), 0u);
    EXPECT_EQ(speed[0]["delta_cycles"], speed[1]["delta_cycles"]);
    EXPECT_EQ(speed[0]["packets"], speed[1]["packets"]);
    EXPECT_EQ(flows[0].substr(flows[0].find('\n')), flows[1].substr(flows[1].find('\n')));
}

TEST(FabricConfig, BadTopologyExits2AndWritesNothing) {
    scratch s;
    const std::string out = s.dir + "/out";
    const auto res =
        rnicsim(s, {"run", source_dir() + "/configs/fabric/incast_8to1.json", "--out", out, "--set",
                    "topology.star.hosts=1", "--set", "workload.receiver=3"});
    EXPECT_EQ(res.exit_code, 2);
    EXPECT_NE(res.err.find("workload.receiver: 3 is not a node index in [0, 0]"), std::string::npos)
        << res.err;
    EXPECT_FALSE(fs::exists(out));
    const auto bad_link =
        rnicsim(s, {"validate", source_dir() + "/configs/quickstart.json", "--set",
                    R"(topology={"nodes": [{}, {}], "switches": [{"name": "s", "ports": 2}],
                         "links": [{"a": "node0", "b": "s:0"}, {"a": "node1", "b": "s:0"}]})"});
    EXPECT_EQ(bad_link.exit_code, 2);
    EXPECT_NE(
        bad_link.err.find("topology.links.1.b: \"s:0\" is already cabled by topology.links.0"),
        std::string::npos)
        << bad_link.err;
}

// The per-hop terms alone: the same one-message flow through 1, 3 and 5 switches (three runs
// of the CLI), so that everything the NICs add cancels out. Each extra switch adds, on the data
// path, its pipeline, one more store-and-forward of a data packet and one more link's
// propagation, and the same on the ACK's way back (an ACK: Ethernet 14 + IPv4 20 + UDP 8 + BTH
// 12 + AETH 4 + ICRC 4 + FCS 4 + preamble 8 + IFG 12 = 86 wire bytes).
double one_message_fct(const scratch& s, const std::string& name, const json& topology,
                       uint32_t dst) {
    json t = topology;
    t["link"] = {{"rate_gbps", RATE_GBPS}, {"propagation_ns", PROPAGATION_NS}};
    const std::string out = s.dir + "/" + name;
    const auto res = rnicsim(s, {"run", source_dir() + "/configs/quickstart.json", "--out", out,
                                 "--set", "topology=" + t.dump(), "--set", "workload.messages=1",
                                 "--set", "workload.pairs=[[0," + std::to_string(dst) + "]]"});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    const std::vector<std::string> cells = csv_cells(read_file(out + "/flows.csv"), 1);
    return cells.size() > 8 ? std::stod(cells[8]) : 0.0;
}

TEST(FabricFidelity, EachSwitchAddsItsPipelineStoreAndForwardAndPropagation) {
    scratch s;
    const double one = one_message_fct(s, "one", {{"star", {{"hosts", 2}}}}, 1);
    const double three = one_message_fct(
        s, "three", {{"leaf_spine", {{"leaves", 2}, {"spines", 1}, {"hosts_per_leaf", 1}}}}, 1);
    const double five = one_message_fct(s, "five", {{"fat_tree", {{"k", 4}}}}, 15);
    const double ns_per_byte = 8.0 / RATE_GBPS;
    const double data = PIPELINE_NS + (MTU + PER_PACKET + RETH) * ns_per_byte + PROPAGATION_NS;
    const double ack = PIPELINE_NS + 86 * ns_per_byte + PROPAGATION_NS;
    const double per_two_switches = 2 * (data + ack);  // 2193.4 ns
    EXPECT_NEAR(three - one, per_two_switches, per_two_switches * 0.01);
    EXPECT_NEAR(five - three, per_two_switches, per_two_switches * 0.01);
}

// 8 senders, one receiver, one switch: nodes 1..8 on ports 1..8, node 0 on port 0 (link0,
// whose direction 1 goes from the switch to node 0).
constexpr uint64_t INCAST_MESSAGES = 32;
constexpr uint64_t XOFF = 65536;
constexpr uint64_t HEADROOM = 32768;

json incast(const json& sw) {
    json w = writes(INCAST_MESSAGES);
    w["pattern"] = "incast";
    w["receiver"] = 0;
    return scenario({{"star", {{"hosts", 9}}}}, w, sw);
}

TEST(FabricIncast, LosslessEightToOne) {
    const run_result r = run(incast({{"xoff_bytes", XOFF}, {"headroom_bytes", HEADROOM}}));
    ASSERT_TRUE(r.passed());
    ASSERT_EQ(r.flows.size(), 8u);
    // No drop anywhere, every byte where it belongs.
    EXPECT_EQ(sum(r, "sw0.port", "drops"), 0);
    EXPECT_EQ(sum(r, "sw0.port", "drops", true), 0);
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_EQ(r.bytes_checked, 8 * INCAST_MESSAGES * 65536);
    // The receiver's downlink is busy from the first flow's start to the last flow's end.
    double start = 1e30;
    double end = 0;
    for (const auto& f : r.flows) {
        EXPECT_TRUE(f.complete);
        start = std::min(start, f.start_ns);
        end = std::max(end, f.end_ns);
    }
    // The switch keeps the downlink busy whenever node 0 lets it send: node 0's own NIC may
    // pause it (receive buffer XOFF; with the 262016 B buffer it does not at this load), which
    // is the receiver's doing, not the switch's.
    const double busy_ns = counter(r, "link0.dir1", "busy_ps") / 1000.0;
    const double paused_ns = counter(r, "link0.dir1", "pfc_pause_ps") / 1000.0;
    EXPECT_GE(busy_ns / (end - start - paused_ns), 0.99)
        << busy_ns << " ns busy of " << end - start << " ns, " << paused_ns
        << " ns paused by the receiver";
    EXPECT_LE(paused_ns / (end - start), 0.05) << "the receiver paused its downlink too long";
    // Every ingress queue stayed within XOFF + headroom; every sender was paused.
    for (uint32_t p = 0; p < 9; ++p) {
        const std::string q = "sw0.port" + std::to_string(p) + ".q0";
        EXPECT_LE(counter(r, q, "ingress_peak_bytes"), XOFF + HEADROOM) << q;
    }
    for (uint32_t h = 1; h <= 8; ++h) {
        const std::string l = "link" + std::to_string(h);
        EXPECT_GT(counter(r, l + ".dir1", "pfc_frames"), 0) << l << ": no pause frame sent";
        EXPECT_GT(counter(r, l + ".dir0", "pfc_pauses"), 0) << l << ": the sender never paused";
        EXPECT_GT(counter(r, l + ".dir0", "pfc_pause_ps"), 0) << l;
    }
}

TEST(FabricIncast, LossyDropsAndGoBackNRecovers) {
    // Priority 0 lossy and a small buffer: the switch tail-drops, the senders' go-back-N
    // retransmits, every message still arrives intact.
    json lossless = json::array();
    for (int i = 0; i < 8; ++i) {
        lossless.push_back(false);
    }
    json doc = incast({{"lossless", lossless}, {"buffer_bytes", 1 << 20}});
    doc["workload"]["timeout_log"] = 8;  // 1 ms retransmission timer
    const run_result r = run(doc);
    ASSERT_TRUE(r.passed());
    EXPECT_GT(sum(r, "sw0.port", "drops", true), 0) << "nothing was dropped";
    EXPECT_EQ(sum(r, "sw0.port", "pause_frames_sent"), 0);
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_EQ(r.bytes_checked, 8 * INCAST_MESSAGES * 65536);
    for (const auto& f : r.flows) {
        EXPECT_TRUE(f.complete);
    }
}

// ECMP over a 4x4 leaf-spine under permutation traffic, through the CLI (two seeds: two runs,
// one elaboration each). Returns each spine's transmitted bytes.
std::vector<double> spine_bytes(const scratch& s, const std::string& name, uint64_t ecmp_seed) {
    const std::string out = s.dir + "/" + name;
    const auto res = rnicsim(s, {"run", source_dir() + "/configs/fabric/permutation_4x4.json",
                                 "--out", out, "--set", "workload.messages=8", "--set",
                                 "topology.switch.ecmp_seed=" + std::to_string(ecmp_seed)});
    EXPECT_EQ(res.exit_code, 0) << res.err;
    const json stats = json::parse(read_file(out + "/stats.json"));
    std::vector<double> b(4, 0.0);
    for (uint32_t sp = 0; sp < 4; ++sp) {
        for (uint32_t p = 0; p < 4; ++p) {
            const std::string blk = "spine" + std::to_string(sp) + ".port" + std::to_string(p);
            b[sp] += stats["blocks"][blk]["tx_bytes"].get<double>();
        }
    }
    return b;
}

TEST(FabricEcmp, PermutationSpreadsOverSpinesAndTheSeedChangesPaths) {
    scratch s;
    const std::vector<double> a = spine_bytes(s, "a", 0);
    const std::vector<double> b = spine_bytes(s, "b", 12345);
    double total = 0;
    for (double v : a) {
        total += v;
    }
    ASSERT_GT(total, 0);
    // 16 flows, of which those between leaves (a permutation drawn from seed 1) hash over 4
    // spines: no spine carries more than half of the inter-leaf bytes, and at least 3 are used.
    const double most = *std::max_element(a.begin(), a.end());
    EXPECT_LE(most / total, 0.5);
    EXPECT_GE(std::count_if(a.begin(), a.end(), [](double v) { return v > 0; }), 3);
    EXPECT_NE(a, b) << "changing topology.switch.ecmp_seed did not move any flow";
    double total_b = 0;
    for (double v : b) {
        total_b += v;
    }
    EXPECT_NEAR(total_b, total, total * 0.02);  // same traffic, other paths
}

// Pause propagation (configs/fabric/pause_propagation.json): a 4:1 incast to node 16 (leaf 4)
// from one node of each of leaves 0..3, and a victim flow node 1 -> node 13 (leaf 0 -> leaf 3)
// that shares leaf0's uplink (link20: leaf0 port 4 -> spine0 port 0, direction 0) with the
// incast but not its receiver. Run through the CLI, lossless then lossy.
struct pp_run {
    json stats;
    std::vector<std::vector<std::string>> flows;  // flows.csv rows
};

pp_run pause_propagation(const scratch& s, const std::string& name, bool lossless) {
    const std::string out = s.dir + "/" + name;
    std::vector<std::string> args = {"run", source_dir() + "/configs/fabric/pause_propagation.json",
                                     "--out", out};
    if (!lossless) {
        args.insert(args.end(), {"--set",
                                 "topology.switch.lossless=[false,false,false,false,"
                                 "false,false,false,false]",
                                 "--set", "topology.switch.buffer_bytes=2097152"});
    }
    const auto res = rnicsim(s, args);
    EXPECT_EQ(res.exit_code, 0) << res.err;
    pp_run r;
    r.stats = json::parse(read_file(out + "/stats.json"));
    std::stringstream csv(read_file(out + "/flows.csv"));
    std::string line;
    std::getline(csv, line);  // header
    while (std::getline(csv, line)) {
        std::vector<std::string> cells;
        std::stringstream ls(line);
        std::string c;
        while (std::getline(ls, c, ',')) {
            cells.push_back(c);
        }
        r.flows.push_back(cells);
    }
    return r;
}

double blocks_sum(const json& stats, const std::string& prefix, const std::string& name,
                  bool queues) {
    double v = 0;
    for (auto it = stats["blocks"].begin(); it != stats["blocks"].end(); ++it) {
        const bool q = it.key().find(".q") != std::string::npos;
        if (it.key().rfind(prefix, 0) == 0 && q == queues && it.value().contains(name)) {
            v += it.value()[name].get<double>();
        }
    }
    return v;
}

TEST(FabricPfc, PausePropagatesToAVictimAndNotWhenLossy) {
    scratch s;
    const pp_run on = pause_propagation(s, "lossless", true);
    const pp_run off = pause_propagation(s, "lossy", false);
    ASSERT_EQ(on.flows.size(), 5u);
    ASSERT_EQ(off.flows.size(), 5u);
    const auto& victim_on = on.flows[4];
    const auto& victim_off = off.flows[4];
    ASSERT_EQ(victim_on[1], "1");
    ASSERT_EQ(victim_on[2], "13");
    // Lossless: the spine pauses leaf0's uplink, which the victim shares.
    const double uplink_paused = on.stats["blocks"]["link20.dir0"]["pfc_pause_ps"].get<double>();
    EXPECT_GT(uplink_paused, 0);
    EXPECT_EQ(blocks_sum(on.stats, "spine0.port", "drops", true), 0);
    EXPECT_EQ(blocks_sum(on.stats, "leaf", "drops", true), 0);
    // ... and the victim loses throughput: its FCT is well above the lossy run's.
    const double fct_on = std::stod(victim_on[8]);
    const double fct_off = std::stod(victim_off[8]);
    EXPECT_GT(fct_on, 1.5 * fct_off)
        << "victim FCT " << fct_on << " ns lossless, " << fct_off << " ns lossy";
    // Lossy: no switch sends a pause, the incast drops instead, go-back-N recovers all of it.
    EXPECT_EQ(blocks_sum(off.stats, "spine0.port", "pause_frames_sent", false) +
                  blocks_sum(off.stats, "leaf", "pause_frames_sent", false),
              0);
    EXPECT_EQ(off.stats["blocks"]["link20.dir0"]["pfc_pause_ps"].get<double>(), 0);
    EXPECT_GT(blocks_sum(off.stats, "spine0.port", "drops", true), 0);
    EXPECT_EQ(off.stats["result"]["passed"], true);
    EXPECT_EQ(off.stats["integrity"]["mismatches"], 0);
    for (const auto& f : off.flows) {
        EXPECT_EQ(f.back(), "1") << "flow " << f[0] << " incomplete";
    }
}

}  // namespace

namespace {

// Connection teardown under sustained traffic (configs/fabric/permutation_4x4.json's traffic):
// flows end up to 3x apart (ECMP collisions), so nodes whose flow is done exchange DREQ/DREP
// with peers still streaming at line rate, whose send path keeps the MAC data FIFO full. The
// CM MADs go through each MAC's control queue, ahead of data: every disconnect completes (a
// MAD sharing the data FIFO behind a rule leaving its last slot to data waited out the CM
// timeouts: "NdkDisconnect returned 0xc00000b5"), and the run ends shortly after the last flow
// (teardown: one DREQ/DREP round trip and the host's polls, far below one CM timeout).
TEST(FabricCm, DisconnectCompletesWhilePeersStream) {
    json w = writes(128);
    w["pattern"] = "permutation";
    w["seed"] = 1;
    const run_result r =
        run(scenario({{"leaf_spine", {{"leaves", 4}, {"spines", 4}, {"hosts_per_leaf", 4}}}}, w));
    ASSERT_TRUE(r.passed());
    ASSERT_EQ(r.flows.size(), 16u);
    double first_end = 1e18;
    double last_end = 0;
    for (const auto& f : r.flows) {
        EXPECT_TRUE(f.complete);
        first_end = std::min(first_end, f.end_ns);
        last_end = std::max(last_end, f.end_ns);
    }
    EXPECT_GT(last_end - first_end, 500e3) << "meant to have flows end while others stream";
    EXPECT_LT(static_cast<double>(r.simulated_ns) - last_end, 100e3);
    // Every frame the GSIs sent (MADs, ARP requests and replies) left through a control queue.
    const double gsi_frames = sum(r, "node", "mads_sent") + sum(r, "node", "arp_sent") +
                              sum(r, "node", "arp_replies_sent");
    EXPECT_GT(gsi_frames, 0);
    EXPECT_EQ(sum(r, "link", "ctrl_frames"), gsi_frames);
}

}  // namespace
