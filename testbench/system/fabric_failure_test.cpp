// SPDX-License-Identifier: Apache-2.0
// A fabric that fails (issue 27): a link that flaps and dies, rerouted around
// (configs/fabric/link_flap_reroute.json); a ring whose routes make a cyclic buffer dependency,
// whose PFC deadlock the run detects and names (configs/fabric/pfc_deadlock_ring.json).
// Lossless priorities never drop: sw*.lossless_drops is 0 in every run here.
//
// One elaboration per process: ctest runs each TEST as its own process.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
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

run_result run_file(const std::string& name, const std::vector<std::string>& sets = {}) {
    return rnic::scenario::run_scenario(
        rnic::scenario::load_scenario(source_dir() + "/configs/fabric/" + name, sets));
}

double stat(const run_result& r, const std::string& block, const std::string& name) {
    if (!r.blocks.contains(block) || !r.blocks[block].contains(name)) {
        ADD_FAILURE() << "stats: no " << block << "." << name;
        return 0;
    }
    return r.blocks[block][name].get<double>();
}

// Sum of a switch counter over the switches sw0 .. sw<n-1>.
double over_switches(const run_result& r, uint32_t n, const std::string& name) {
    double s = 0;
    for (uint32_t i = 0; i < n; ++i) {
        s += stat(r, "sw" + std::to_string(i), name);
    }
    return s;
}

}  // namespace

// link5 (sw0 - sw2) is down 100-150 us and from 250 us on, while WRITEs stream over both
// paths. Both ends see it go down twice (10 us after each loss begins) and up once; the routes
// are recomputed each time (3 tables per switch, every switch carrying traffic); frames lost
// before detection are resent by RC; every message completes, intact.
TEST(FabricReroute, FlappingLinkFlowsCompleteAfterReroute) {
    const run_result r = run_file("link_flap_reroute.json");
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    ASSERT_TRUE(r.passed());
    ASSERT_EQ(r.flows.size(), 4u);
    for (const auto& f : r.flows) {
        EXPECT_TRUE(f.complete);
    }
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_EQ(r.bytes_checked, 4u * 48 * 65536);
    EXPECT_EQ(stat(r, "sw0.port3", "link_downs"), 2);
    EXPECT_EQ(stat(r, "sw2.port0", "link_downs"), 2);
    EXPECT_EQ(stat(r, "sw0.port2", "link_downs"), 0);  // sw0 - sw1 never failed
    for (uint32_t s = 0; s < 4; ++s) {
        EXPECT_EQ(stat(r, "sw" + std::to_string(s), "reroutes"), 3) << s;
    }
    EXPECT_GT(stat(r, "link5.dir0", "faults_link_down") + stat(r, "link5.dir1", "faults_link_down"),
              0)
        << "the flap hit traffic";
    double resent = 0;
    for (uint32_t n = 0; n < 4; ++n) {
        resent += stat(r, "node" + std::to_string(n) + ".nic.tx_engine", "retransmitted_packets");
    }
    EXPECT_GT(resent, 0) << "RC recovered what the dead link swallowed";
    // After the final failure everything goes through sw1.
    EXPECT_GT(stat(r, "sw1", "frames"), stat(r, "sw2", "frames"));
    EXPECT_EQ(over_switches(r, 4, "lossless_drops"), 0);
}

// The same flap without reroute: the flows hashed onto the dead link never get through, the
// requesters' retries run out and the run fails (so the reroute above is what let them finish).
TEST(FabricReroute, WithoutRerouteTheDeadLinksFlowsFail) {
    const run_result r = run_file("link_flap_reroute.json", {"topology.switch.reroute=false"});
    EXPECT_FALSE(r.passed());
    EXPECT_EQ(over_switches(r, 4, "reroutes"), 0);
    EXPECT_EQ(stat(r, "sw0.port3", "link_downs"), 0);
    EXPECT_GT(stat(r, "link5.dir0", "faults_link_down"), 0);
}

namespace {

double over_ring(const run_result& r, const std::string& name) {
    double s = 0;
    for (uint32_t i = 0; i < 5; ++i) {
        s += stat(r, "r" + std::to_string(i), name);
    }
    return s;
}

}  // namespace

// The ring deadlocks: the run ends at the detection (long before its 50 ms time limit), failed,
// with one failure naming the cycle of the five ring queues (each r<i>.port1.q0, paused by
// r<i+1>'s ingress port 2), and nothing lossless was dropped.
TEST(FabricPfc, RingDeadlockIsDetectedAndNamed) {
    const run_result r = run_file("pfc_deadlock_ring.json");
    EXPECT_FALSE(r.passed());
    ASSERT_EQ(r.failures.size(), 1u);
    const std::string& f = r.failures[0];
    EXPECT_EQ(f.rfind("PFC deadlock: a cycle of paused queues", 0), 0u) << f;
    for (uint32_t i = 0; i < 5; ++i) {
        EXPECT_NE(f.find("r" + std::to_string(i) + ".port1.q0 -> "), std::string::npos) << f;
    }
    EXPECT_EQ(f.find(".port0."), std::string::npos) << "host ports are not in the cycle: " << f;
    EXPECT_LT(r.simulated_ns, 10'000'000u) << "ended at the detection, not the time limit";
    EXPECT_EQ(over_ring(r, "lossless_drops"), 0);
}

// With deadlock detection off the same ring runs into its time limit: the detection above is
// what ended it.
TEST(FabricPfc, RingWithoutDetectionRunsToTheTimeLimit) {
    const run_result r =
        run_file("pfc_deadlock_ring.json",
                 {"topology.switch.pfc_deadlock_detect_ns=0", "workload.time_limit_ms=5"});
    EXPECT_FALSE(r.passed());
    ASSERT_FALSE(r.failures.empty());
    EXPECT_NE(r.failures[0].find("did not finish"), std::string::npos) << r.failures[0];
    EXPECT_EQ(over_ring(r, "lossless_drops"), 0);
}

// A PFC deadlock made by rerouting (issue 27; configs/fabric/pfc_deadlock_down_up.json): with
// leaf0-spine0 and leaf3-spine1 dead, node0's and node3's traffic to each other goes down to a
// middle leaf and up again; with the up-down flows between leaf1 and leaf2 the four make a
// cyclic buffer dependency through both spines and both middle leaves (Hu et al., HotNets
// 2016). The run ends at the detection, long before its 50 ms limit, naming that cycle, with
// nothing lossless dropped.
TEST(FabricPfc, DownUpRouteDeadlockIsDetectedAndNamed) {
    const run_result r = run_file("pfc_deadlock_down_up.json");
    EXPECT_FALSE(r.passed());
    ASSERT_EQ(r.failures.size(), 1u);
    const std::string& f = r.failures[0];
    EXPECT_EQ(f.rfind("PFC deadlock: a cycle of paused queues", 0), 0u) << f;
    for (const char* q : {"leaf1.port2.q0 -> ", "spine1.port2.q0 -> ", "leaf2.port1.q0 -> ",
                          "spine0.port1.q0 -> "}) {
        EXPECT_NE(f.find(q), std::string::npos) << q << " in " << f;
    }
    EXPECT_EQ(f.find("leaf0."), std::string::npos) << "the dead links' leaves are not in it";
    EXPECT_EQ(f.find("leaf3."), std::string::npos) << f;
    EXPECT_LT(r.simulated_ns, 10'000'000u) << "ended at the detection, not the time limit";
    double lossless_drops = 0;
    for (const char* sw : {"leaf0", "leaf1", "leaf2", "leaf3", "spine0", "spine1"}) {
        lossless_drops += stat(r, sw, "lossless_drops");
        EXPECT_GT(stat(r, sw, "reroutes"), 0) << sw << " rerouted around the dead links";
    }
    EXPECT_EQ(lossless_drops, 0);
}

// Without the failures the same flows take up-down routes only: no cycle, every flow completes.
TEST(FabricPfc, DownUpScenarioWithoutTheFailuresCompletes) {
    const run_result r =
        run_file("pfc_deadlock_down_up.json",
                 {"topology.links.4.faults.link_down_ns=[]", "workload.messages=16",
                  "topology.links.11.faults.link_down_ns=[]"});
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    EXPECT_TRUE(r.passed());
    EXPECT_EQ(r.mismatches, 0u);
}

// NICs watch their own link (issue 27): the cable of the quickstart goes dead for good at 30 us.
// Each NIC's port sees the loss of signal after its 10 us debounce (hw/nic/nic.cpp), counts it
// once and stays down; the QPs' retries run out (retry exceeded: STATUS_IO_TIMEOUT, as an
// RC QP completes on real hardware) and the failures name the port's state.
TEST(NicPort, DeadCableIsSeenAndNamedInTheQpsFailures) {
    const run_result r = rnic::scenario::run_scenario(rnic::scenario::load_scenario(
        source_dir() + "/configs/quickstart.json",
        {"topology.link.faults.link_down_ns=[[30000, 1e15]]", "workload.messages=64",
         "workload.timeout_log=6", "workload.retry_count=2", "host.cm_response_timeout_log=6",
         "outputs.report=false"}));
    EXPECT_FALSE(r.passed());
    for (const char* n : {"node0.nic.port", "node1.nic.port"}) {
        EXPECT_EQ(stat(r, n, "link_downs"), 1) << n;
        EXPECT_EQ(stat(r, n, "link_ups"), 0) << n;
        EXPECT_EQ(stat(r, n, "link_up"), 0) << n;
        // Down from 40 us (30 + 10 detection) to the end of the run.
        EXPECT_NEAR(stat(r, n, "link_down_ps"), (r.simulated_ns - 40000) * 1000.0, 1000) << n;
    }
    bool named = false;
    for (const auto& f : r.failures) {
        named = named || (f.find("0xc00000b5") != std::string::npos &&
                          f.find("node0.nic.port sees its link down (loss of signal) since "
                                 "40000 ns") != std::string::npos);
    }
    EXPECT_TRUE(named) << (r.failures.empty() ? "" : r.failures[0]);
}

// A 100 us loss of signal (30-130 us): both ports see it from 40 us to 140 us (10 us detection
// each way), once; RC resends what was lost and the run passes.
TEST(NicPort, FlapIsCountedAndRecovered) {
    const run_result r = rnic::scenario::run_scenario(rnic::scenario::load_scenario(
        source_dir() + "/configs/quickstart.json",
        {"topology.link.faults.link_down_ns=[[30000, 130000]]", "workload.messages=64",
         "workload.timeout_log=6", "host.cm_response_timeout_log=6", "outputs.report=false"}));
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    EXPECT_TRUE(r.passed());
    for (const char* n : {"node0.nic.port", "node1.nic.port"}) {
        EXPECT_EQ(stat(r, n, "link_downs"), 1) << n;
        EXPECT_EQ(stat(r, n, "link_ups"), 1) << n;
        EXPECT_EQ(stat(r, n, "link_up"), 1) << n;
        EXPECT_EQ(stat(r, n, "link_down_ps"), 100e6) << n;
    }
    EXPECT_GT(stat(r, "link.dir0", "faults_link_down"), 0) << "the loss hit traffic";
}

namespace {

const rnic::scenario::flow_result* flow(const run_result& r, uint32_t src, uint32_t dst) {
    for (const auto& f : r.flows) {
        if (f.src == src && f.dst == dst) {
            return &f;
        }
    }
    ADD_FAILURE() << "no flow " << src << " -> " << dst;
    return nullptr;
}

}  // namespace

// A PFC storm (configs/fabric/pfc_storm.json): node3's NIC holds XOFF on priority 0 toward sw0
// from 20 us with real, refreshed pause frames. Without a watchdog the storm spreads: sw0's
// queue to node3 backs up, sw0 pauses node0, and node0 -> node2, which never touches node3,
// stalls with it; the run ends at its time limit, nothing lossless dropped.
TEST(FabricPfc, StormWithoutWatchdogSpreadsToOtherFlows) {
    const run_result r = run_file("pfc_storm.json");
    EXPECT_FALSE(r.passed());
    // One XOFF at 20 us, refreshed every half pause time while held (802.1Qbb: 0xFFFF quanta
    // of 512 bit times at 100 Gb/s = 335.5 us, refresh 167.8 us) until the run ends.
    const double refresh_ns = 65535 * 5.12 / 2;
    EXPECT_EQ(stat(r, "link3.dir0", "pfc_frames"),
              1 + std::floor((static_cast<double>(r.simulated_ns) - 20000) / refresh_ns));
    EXPECT_GT(stat(r, "link3.dir1", "pfc_pauses"), 0) << "the storm pauses sw0's port to node3";
    EXPECT_GT(stat(r, "link0.dir0", "pfc_pauses"), 0) << "sw0 pauses node0: the storm spread";
    const auto* victim = flow(r, 0, 2);
    ASSERT_NE(victim, nullptr);
    EXPECT_FALSE(victim->complete);
    EXPECT_EQ(stat(r, "sw0", "pfcwd_storms"), 0);
    EXPECT_EQ(stat(r, "sw0", "lossless_drops"), 0);
}

// The same storm with sw0's PFC watchdog (drop, 100 us): the queue to node3 is declared in a
// storm and its frames dropped (counted), sw0's ingress from node0 drains, node0 -> node2 and
// node1 -> node2 complete intact; node0 -> node3, whose frames the watchdog drops, does not.
TEST(FabricPfc, WatchdogBreaksTheStormAndOtherFlowsComplete) {
    const run_result r =
        run_file("pfc_storm.json", {"topology.switch.pfc_watchdog={\"detection_ns\": 100000, "
                                    "\"restoration_ns\": 1e9}"});
    EXPECT_EQ(stat(r, "sw0", "pfcwd_storms"), 1);
    EXPECT_GT(stat(r, "sw0", "pfcwd_drops"), 0);
    EXPECT_EQ(stat(r, "sw0", "lossless_drops"), 0);
    for (const auto& [src, dst] : std::vector<std::pair<uint32_t, uint32_t>>{{0, 2}, {1, 2}}) {
        const auto* f = flow(r, src, dst);
        ASSERT_NE(f, nullptr);
        EXPECT_TRUE(f->complete) << src << " -> " << dst;
    }
    const auto* stuck = flow(r, 0, 3);
    ASSERT_NE(stuck, nullptr);
    EXPECT_FALSE(stuck->complete);
    EXPECT_EQ(r.mismatches, 0u);
}
