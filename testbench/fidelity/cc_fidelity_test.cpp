// SPDX-License-Identifier: Apache-2.0
// Congestion control against published figures (issue 26; label `fidelity`): DCQCN with
// ConnectX's defaults and with the HPCC authors' settings, in the HPCC paper's testbed setting
// (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019, section 5: 25 Gb/s hosts,
// PFC XOFF 1 MB per ingress, RED Kmin 100 KB / Kmax 400 KB / Pmax 0.2).
//
// - 7:1 incast (configs/cc/dcqcn_connectx.json, dcqcn_hpcc_testbed.json: nodes 1..7 WRITE
//   16 x 64 KiB each to node 0 through one switch): the switch queue toward node 0 peaks where
//   DCQCN holds it, within 2x of the paper's ~550 KB for DCQCN, and far below what PFC alone
//   allows (7 ingresses x 1 MB XOFF; 7.37 MB measured without congestion control, issue 26).
//   Measured on the switch's counters (sw0.port0.q0.peak_bytes), not on the algorithm.
// - Web search at 30% load: the p99 slowdown of flows under 3 KB within 2x of the paper's 11.2
//   for DCQCN (its Figure 11 at 30% load). Scaled to run here in seconds (see below).
//
// One simulation per TEST (ctest runs each TEST as its own process).
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/system/outputs_common.h"

namespace {

using nlohmann::json;
using namespace rnic::outputs_test;

constexpr double PAPER_INCAST_PEAK_BYTES = 550e3;  // HPCC paper, section 5, DCQCN
constexpr double PFC_XOFF_BYTES = 1048576;         // per ingress, the testbed's

double block_value(const json& stats, const std::string& block, const std::string& name) {
    const json& b = stats["blocks"];
    if (!b.contains(block) || !b[block].contains(name)) {
        ADD_FAILURE() << "stats.json: no " << block << "." << name;
        return 0;
    }
    return b[block][name].get<double>();
}

struct incast_run {
    json stats;
    double peak = 0;
};

incast_run run_incast(const scratch& s, const std::string& file,
                      const std::vector<std::string>& sets = {}) {
    const std::string out = s.dir + "/out";
    std::vector<std::string> args = {"run", source_dir() + "/configs/cc/" + file, "--out", out};
    for (const auto& v : sets) {
        args.push_back("--set");
        args.push_back(v);
    }
    const cli_result c = rnicsim(s, args);
    incast_run r;
    EXPECT_EQ(c.exit_code, 0) << c.err;
    if (c.exit_code != 0) {
        return r;
    }
    r.stats = json::parse(read_file(out + "/stats.json"));
    EXPECT_TRUE(r.stats["result"]["passed"].get<bool>());
    EXPECT_EQ(block_value(r.stats, "sw0", "drops"), 0) << "lossless: nothing dropped";
    r.peak = block_value(r.stats, "sw0.port0.q0", "peak_bytes");
    return r;
}

// The incast's peak queue is DCQCN's: within 2x of the paper's figure, and below one ingress's
// XOFF (so no ingress paused: PFC did not bound it).
void expect_dcqcn_sets_the_peak(const incast_run& r, const char* set) {
    EXPECT_GE(r.peak, PAPER_INCAST_PEAK_BYTES / 2) << set;
    EXPECT_LE(r.peak, PAPER_INCAST_PEAK_BYTES * 2) << set;
    EXPECT_LT(r.peak, PFC_XOFF_BYTES) << set << ": the queue reached PFC's range";
    EXPECT_EQ(block_value(r.stats, "sw0", "pause_frames_sent"), 0)
        << set << ": PFC paused a sender (PFC, not DCQCN, bounded the queue)";
}

TEST(CcFidelityIncast, ConnectXDefaultsPeakQueueWithinTwiceThePaper) {
    scratch s;
    const incast_run r = run_incast(s, "dcqcn_connectx.json");
    expect_dcqcn_sets_the_peak(r, "ConnectX defaults");
}

TEST(CcFidelityIncast, HpccTestbedDcqcnPeakQueueWithinTwiceThePaper) {
    scratch s;
    const incast_run r = run_incast(s, "dcqcn_hpcc_testbed.json");
    expect_dcqcn_sets_the_peak(r, "HPCC testbed DCQCN");
}

// The reference: the same incast without congestion control queues nearly all of its 7 MiB at
// the port (6.6 MB; no ingress passes its 1 MB XOFF with 1 MiB per sender, so nothing but the
// buffer bounds it), against DCQCN's ~0.7 MB.
TEST(CcFidelityIncast, WithoutCongestionControlTheQueueTakesTheIncast) {
    scratch s;
    const incast_run r = run_incast(s, "dcqcn_connectx.json", {"rnic.cc.algorithm=none"});
    EXPECT_GT(r.peak, 5 * PFC_XOFF_BYTES);
}

// HPCC in the same incast (configs/cc/hpcc_testbed.json: the switch stamps in-band telemetry,
// the senders follow Algorithm 1 with eta 95 %, maxStage 5). The HPCC paper's claim is
// "near-zero in-network queues" (Li et al., SIGCOMM 2019, abstract; the authors' summary at
// hpcc-group.github.io) against DCQCN's ~550 KB peak in this incast (section 5). The peak is
// HPCC's first RTT: before its first feedback a QP has no window and sends at line rate, so 7
// senders queue ~350 KB (measured 346 KB) while the queue delays the ACKs that bring the
// telemetry; then the windows hold the queue at a few packets. Asserted: the peak below the
// paper's DCQCN peak, and the time-weighted mean queue at most a tenth of it (measured 12 KB;
// DCQCN's mean in the same incast is ~140-150 KB, configs/fabric/README.md). No pause, nothing
// dropped, telemetry stamped.
TEST(CcFidelityIncast, HpccKeepsTheQueueFarBelowDcqcns) {
    scratch s;
    const incast_run r = run_incast(s, "hpcc_testbed.json");
    EXPECT_LE(r.peak, PAPER_INCAST_PEAK_BYTES);
    EXPECT_LE(block_value(r.stats, "sw0.port0.q0", "avg_bytes"), PAPER_INCAST_PEAK_BYTES / 10);
    EXPECT_EQ(block_value(r.stats, "sw0", "pause_frames_sent"), 0);
    EXPECT_GT(block_value(r.stats, "sw0.port0", "int_hops"), 0) << "telemetry was stamped";
}

// --- Web search at 30% load ------------------------------------------------------------------
//
// The paper: 320 hosts at 25 Gb/s, web-search flow sizes (configs/cdf/web_search.txt), 30% load,
// DCQCN's p99 slowdown of the smallest flows 11.2 (HPCC paper, Figure 11). Scaled to run here in
// ~10 s of CPU: 16 hosts (2 leaves x 8, one spine, 2 x 100 Gb/s uplinks per leaf: no
// oversubscription, as the paper's fabric at the leaves), 30 ms of Poisson arrivals (seed 1:
// 265 flows, 5 of them under 3 KB, 29 up to 10 KB), 1 us links, the testbed's switch settings
// (RED 100/400 KB on the leaves, scaled by 4 for the spine's 100 Gb/s ports as the HPCC authors'
// KMIN_MAP / KMAX_MAP do, marking at dequeue, XOFF 1 MB), ConnectX's DCQCN defaults, and the
// round-robin transmit scheduler (with `fifo` a small WRITE waits behind its node's paced large
// one in the NIC: p99 of small flows 240, an artefact of that engine, hw/cc/README.md). What
// the scaling changes: fewer concurrent flows per link (16 hosts: at most 7 other senders per
// receiver), and 5 small flows make the p99 their maximum.
TEST(CcFidelityWebSearch, SmallFlowP99SlowdownWithinTwiceThePaper) {
    scratch s;
    const json doc = {{"topology",
                       {{"leaf_spine",
                         {{"leaves", 2},
                          {"spines", 1},
                          {"hosts_per_leaf", 8},
                          {"uplinks", 2},
                          {"uplink", {{"rate_gbps", 100}}},
                          {"spine",
                           {{"kmin_bytes", {400000, 0, 0, 0, 0, 0, 0, 0}},
                            {"kmax_bytes", {1600000, 0, 0, 0, 0, 0, 0, 0}}}}}},
                        {"link", {{"rate_gbps", 25}, {"propagation_ns", 1000}}},
                        {"switch",
                         {{"xoff_bytes", 1048576},
                          {"xon_bytes", 1015808},
                          {"ecn", {true, false, false, false, false, false, false, false}},
                          {"kmin_bytes", {100000, 0, 0, 0, 0, 0, 0, 0}},
                          {"kmax_bytes", {400000, 0, 0, 0, 0, 0, 0, 0}},
                          {"pmax", {0.2, 0, 0, 0, 0, 0, 0, 0}},
                          {"ecn_mark_at", "dequeue"}}}}},
                      {"rnic",
                       {{"tx_engine", {{"scheduler", {{"policy", "round_robin"}}}}},
                        {"cc", {{"algorithm", "dcqcn"}}}}},
                      {"workload",
                       {{"pattern", "flows"},
                        {"cdf", source_dir() + "/configs/cdf/web_search.txt"},
                        {"load", 0.30},
                        {"start_us", 100},
                        {"duration_us", 30000},
                        {"seed", 1},
                        {"operation", "write"},
                        {"qps", 1},
                        {"queue_depth", 1},
                        {"time_limit_ms", 200}}}};
    const std::string cfg = s.dir + "/websearch.json";
    { std::ofstream(cfg) << doc.dump(2); }
    const std::string out = s.dir + "/out";
    const cli_result c = rnicsim(s, {"run", cfg, "--out", out});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    // flows.csv: flow,src,dst,operation,bytes,messages,start_ns,end_ns,fct_ns,ideal_ns,slowdown,..
    std::vector<double> small;
    size_t flows = 0;
    std::stringstream csv(read_file(out + "/flows.csv"));
    std::string line;
    std::getline(csv, line);
    while (std::getline(csv, line)) {
        const std::vector<std::string> cells = csv_cells(line + "\n", 0);
        ASSERT_GE(cells.size(), 12u) << line;
        ++flows;
        EXPECT_EQ(cells[11], "1") << "flow " << cells[0] << " did not complete";
        if (std::stoull(cells[4]) < 3000) {
            small.push_back(std::stod(cells[10]));
        }
    }
    EXPECT_GE(flows, 200u);
    ASSERT_GE(small.size(), 3u);
    std::sort(small.begin(), small.end());
    // Nearest rank: the p99 of n values is the ceil(0.99 n)-th.
    const size_t rank = (99 * small.size() + 99) / 100;
    const double p99 = small[rank - 1];
    constexpr double PAPER_P99 = 11.2;
    EXPECT_GE(p99, PAPER_P99 / 2) << "p99 slowdown of flows < 3 KB";
    EXPECT_LE(p99, PAPER_P99 * 2) << "p99 slowdown of flows < 3 KB";
}

}  // namespace
