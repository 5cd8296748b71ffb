// SPDX-License-Identifier: Apache-2.0
// The transmit scheduler (hw/tx_engine/README.md, "Scheduler"): with
// rnic.tx_engine.scheduler.policy "round_robin" the NIC arbitrates between QPs a packet at a time,
// so a short flow does not wait behind a long WRITE of the same node, a rate-limited QP does not
// hold up an unlimited one, and a congestion-control window is enforced. Bounds come from
// formulas written here (wire bytes per RoCEv2 packet, share of the link, what the pipeline
// downstream of the scheduler can hold) and from the wire capture, not from the scheduler's own
// counters. Before the scheduler existed the policy key was unknown; with "fifo" (today's
// one-message-at-a-time engine, kept as the default) the first two bounds fail by orders of
// magnitude (FifoKeepsOneMessageAtATime shows it).
//
// One elaboration per process: ctest runs each TEST as its own process; tests needing two runs
// use the CLI.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hw/cc/cc_algorithm.h"
#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"
#include "testbench/system/outputs_common.h"

namespace {

using nlohmann::json;
using namespace rnic::outputs_test;

constexpr double RATE_GBPS = 100;
constexpr uint64_t PROPAGATION_NS = 100;
constexpr uint64_t MTU = 1024;
// Wire bytes of a RoCEv2 packet besides its payload: preamble+SFD 8, Ethernet 14, IPv4 20,
// UDP 8, BTH 12, ICRC 4, FCS 4, IFG 12; a WRITE's first packet adds its RETH (16).
constexpr uint64_t PER_PACKET = 82;
constexpr uint64_t RETH = 16;
// Defaults the pipeline bound uses (configs/README.md): the send path's payload FIFO and the
// MAC transmit FIFO, both downstream of the scheduler.
constexpr uint64_t PAYLOAD_FIFO_BYTES = 16384;
constexpr uint64_t MAC_TX_FIFO_FRAMES = 4;

double wire_bytes_of_write(uint64_t bytes) {
    const uint64_t packets = bytes == 0 ? 1 : (bytes + MTU - 1) / MTU;
    return static_cast<double>(bytes + packets * PER_PACKET + RETH);
}
double ns_at(double bytes, double gbps) {
    return bytes * 8.0 / gbps;
}

json two_nodes(const std::string& policy, const json& flows, const json& extra_rnic = {}) {
    json rnic = {{"tx_engine", {{"scheduler", {{"policy", policy}}}}}};
    for (auto it = extra_rnic.begin(); it != extra_rnic.end(); ++it) {
        rnic[it.key()] = it.value();
    }
    return {
        {"topology",
         {{"nodes", {{{"mtu", MTU}}, {{"mtu", MTU}}}},
          {"link", {{"rate_gbps", RATE_GBPS}, {"propagation_ns", PROPAGATION_NS}}}}},
        {"rnic", rnic},
        {"workload",
         {{"pattern", "flows"}, {"operation", "write"}, {"time_limit_ms", 100}, {"flows", flows}}}};
}

struct flow_row {
    uint64_t bytes = 0;
    double start_ns = 0;
    double end_ns = 0;
    double fct_ns = 0;
    bool complete = false;
};

// Runs `doc` through the CLI and reads flows.csv (one line per flow, in workload order).
std::vector<flow_row> run_flows(const scratch& s, const std::string& name, const json& doc) {
    const std::string cfg = s.dir + "/" + name + ".json";
    { std::ofstream(cfg) << doc.dump(2); }
    const std::string out = s.dir + "/" + name;
    const cli_result c = rnicsim(s, {"run", cfg, "--out", out});
    EXPECT_EQ(c.exit_code, 0) << name << ": " << c.err;
    std::vector<flow_row> rows;
    std::istringstream in(read_file(out + "/flows.csv"));
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line,
              "flow,src,dst,operation,bytes,messages,start_ns,end_ns,fct_ns,ideal_ns,slowdown,"
              "complete");
    while (std::getline(in, line)) {
        std::vector<std::string> v;
        std::istringstream ls(line);
        std::string cell;
        while (std::getline(ls, cell, ',')) {
            v.push_back(cell);
        }
        if (v.size() != 12) {
            ADD_FAILURE() << "flows.csv: " << line;
            continue;
        }
        flow_row r;
        r.bytes = std::stoull(v[4]);
        r.start_ns = std::stod(v[6]);
        r.end_ns = std::stod(v[7]);
        r.fct_ns = std::stod(v[8]);
        r.complete = v[11] == "1";
        rows.push_back(r);
    }
    return rows;
}

// --- A short flow behind a long WRITE of the same node ------------------------------------
//
// Node 0 WRITEs 8 MB to node 1 (one message, 7813 packets, ~690 us at line rate); 100 us in, a
// 516 B WRITE (the web-search flow of issue 14's finding) starts on another QP of node 0. With
// round-robin the short flow's one packet waits for at most what is already past the scheduler
// (the send path's payload FIFO, the MAC transmit FIFO, the long flow's current turn) and then
// shares the link with the long flow, so its completion time is bounded by
//   FCT alone (the same flow with nothing else on the NIC: the NIC, PCIe and link latencies)
//   + its wire bytes over half the link
//   + the pipeline ahead of it at line rate.
// With "fifo" it completes only after the long message's last packet: ~590 us later.
constexpr uint64_t LONG_BYTES = 8'000'000;
constexpr uint64_t SHORT_BYTES = 516;
constexpr uint64_t SHORT_START_NS = 100'000;

json long_and_short(const std::string& policy) {
    return two_nodes(
        policy, {{{"src", 0}, {"dst", 1}, {"bytes", LONG_BYTES}, {"start_ns", 0}},
                 {{"src", 0}, {"dst", 1}, {"bytes", SHORT_BYTES}, {"start_ns", SHORT_START_NS}}});
}

TEST(TxScheduler, ShortFlowBehindLongWriteCompletesInItsShareOfTheLink) {
    scratch s;
    const auto shared = run_flows(s, "shared", long_and_short("round_robin"));
    // The short flow alone (a second, later flow only so that flows.csv is written; it starts
    // after the short one has completed).
    const auto alone = run_flows(
        s, "alone",
        two_nodes("round_robin",
                  {{{"src", 0}, {"dst", 1}, {"bytes", SHORT_BYTES}, {"start_ns", SHORT_START_NS}},
                   {{"src", 0}, {"dst", 1}, {"bytes", 4096}, {"start_ns", 300'000}}}));
    ASSERT_EQ(shared.size(), 2u);
    ASSERT_EQ(alone.size(), 2u);
    ASSERT_TRUE(shared[0].complete && shared[1].complete && alone[0].complete);
    const double frame = static_cast<double>(MTU + PER_PACKET + RETH);  // largest frame, wire
    const double ahead = static_cast<double>(PAYLOAD_FIFO_BYTES / MTU) * frame +
                         static_cast<double>(MAC_TX_FIFO_FRAMES + 1) * frame;  // + one turn
    const double bound = alone[0].fct_ns + ns_at(wire_bytes_of_write(SHORT_BYTES), RATE_GBPS / 2) +
                         ns_at(ahead, RATE_GBPS);
    EXPECT_LE(shared[1].fct_ns, bound) << "short flow FCT " << shared[1].fct_ns << " ns; alone "
                                       << alone[0].fct_ns << " ns; bound " << bound << " ns";
    EXPECT_LT(shared[1].end_ns, shared[0].end_ns) << "the short flow finished before the long one";
    // The long flow still moves at the line rate less the short flow's few bytes.
    EXPECT_GE(shared[0].fct_ns, ns_at(wire_bytes_of_write(LONG_BYTES), RATE_GBPS));
    EXPECT_LE(shared[0].fct_ns, 1.03 * ns_at(wire_bytes_of_write(LONG_BYTES), RATE_GBPS) + 10'000);
}

// Today's engine stays available: with "fifo" the short flow waits for the whole long message
// (its last packet leaves before the short flow's first).
TEST(TxScheduler, FifoKeepsOneMessageAtATime) {
    scratch s;
    const auto r = run_flows(s, "fifo", long_and_short("fifo"));
    ASSERT_EQ(r.size(), 2u);
    ASSERT_TRUE(r[0].complete && r[1].complete);
    const double long_wire_left =
        ns_at(wire_bytes_of_write(LONG_BYTES), RATE_GBPS) - (SHORT_START_NS - r[0].start_ns);
    EXPECT_GE(r[1].fct_ns, long_wire_left) << "the short flow waited for the long message";
    EXPECT_GE(r[1].end_ns, r[0].end_ns - 2'000);
}

// --- A rate-limited QP does not delay an unlimited one ------------------------------------
//
// DCQCN with increases off (timer 131 ms, byte counter off) and rp_rate_to_set_on_first_cnp
// 5 Gb/s: the link marks CE on every frame to flow A's QP during its first 40 us, so A is cut
// to 5 Gb/s (or below, on later CNPs) before flow B starts at 50 us, and stays there. B is
// never marked. Round-robin passes over A while its rate limiter slot is not due, so B gets the
// rest of the link: its FCT is bounded by its wire bytes over (100 - 5) Gb/s plus 10 us of NIC
// latency and pipeline (FCT alone is ~3.5 us). With "fifo" B waits behind A's 1 MB at 5 Gb/s:
// ~1.6 ms and more.
// With "fifo" and congestion control (README, "Timing") B, of another QP at line rate, goes
// while A's next packet waits for its slot: the same bound holds.
// Flow A (node 0 -> node 1, PACED_A_BYTES from 0, marked during its first 40 us) and flow B
// (B_BYTES from 50 us, never marked) from node `b_src` to node `b_dst`, under `policy`.
constexpr uint64_t PACED_A_BYTES = 1'000'000;
constexpr uint64_t B_BYTES = 2'000'000;
constexpr double A_MAX_GBPS = 5;

rnic::scenario::run_result run_paced_a_with_b(const std::string& policy, int b_src, int b_dst) {
    json doc =
        two_nodes(policy,
                  {{{"src", 0}, {"dst", 1}, {"bytes", PACED_A_BYTES}, {"start_ns", 0}},
                   {{"src", b_src}, {"dst", b_dst}, {"bytes", B_BYTES}, {"start_ns", 50'000}}},
                  {{"cc",
                    {{"algorithm", "dcqcn"},
                     {"dcqcn",
                      {{"rp_rate_to_set_on_first_cnp", 5000},
                       {"rp_time_reset", 131071},
                       {"rp_byte_reset", 0}}}}}});
    // Flow A's requester talks to node 1's QP 2 (the first QP the flows workload connects).
    doc["topology"]["link"]["faults"] = {{"ecn_mark", 1}, {"qp", 2}, {"window_end_ns", 40'000}};
    rnic::scenario::run_result r =
        rnic::scenario::run_scenario(rnic::scenario::parse_scenario(doc));
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    EXPECT_EQ(r.mismatches, 0u);
    return r;
}

// A is limited: its FCT is at least its bytes after the first 40 us at 5 Gb/s.
void expect_a_limited(const rnic::scenario::run_result& r) {
    EXPECT_GT(r.blocks["node0.nic.pacer"]["paced_packets"].get<uint64_t>(), 0u) << "A was paced";
    EXPECT_GE(r.flows[0].fct_ns(),
              ns_at(wire_bytes_of_write(PACED_A_BYTES) - 40'000 * RATE_GBPS / 8, A_MAX_GBPS));
}

void paced_qp_does_not_delay_an_unpaced_one(const std::string& policy) {
    const rnic::scenario::run_result r = run_paced_a_with_b(policy, 0, 1);
    ASSERT_EQ(r.flows.size(), 2u);
    ASSERT_TRUE(r.flows[0].complete && r.flows[1].complete);
    EXPECT_GT(r.blocks["node1.nic.np"]["cnps_sent"].get<uint64_t>(), 0u) << "A was marked";
    expect_a_limited(r);
    const double bound = ns_at(wire_bytes_of_write(B_BYTES), RATE_GBPS - A_MAX_GBPS) + 10'000;
    EXPECT_LE(r.flows[1].fct_ns(), bound) << "B's FCT " << r.flows[1].fct_ns() << " ns";
}

TEST(TxScheduler, PacedQpDoesNotDelayAnUnpacedOne) {
    paced_qp_does_not_delay_an_unpaced_one("round_robin");
}

TEST(TxScheduler, FifoPacedQpDoesNotDelayAnUnpacedOne) {
    paced_qp_does_not_delay_an_unpaced_one("fifo");
}

// --- fifo: a paced WRITE does not hold its node's ACKs -------------------------------------
//
// The same rate-limited flow A (node 0 -> node 1, cut to 5 Gb/s or below during its first
// 40 us, ~1.6 ms to finish), now with the default "fifo" scheduler, and a flow B the other way
// (node 1 -> node 0, never marked) from 50 us. B completes when node 0's ACK of its last packet
// reaches node 1. The rate limiter gates only A's requester data (hw/tx_engine/README.md,
// "Timing"): node 0's ACKs go while A's next packet waits for its slot, so B's FCT is bounded
// by its wire bytes at line rate plus 10 us of NIC latency and pipeline (an ACK waits at most
// behind one of A's packets and what the send path holds). Before, the ACK waited behind A's
// whole paced message: B's FCT was ~1.5 ms.
TEST(TxScheduler, FifoPacedWriteDoesNotHoldItsNodesAcks) {
    const rnic::scenario::run_result r = run_paced_a_with_b("fifo", 1, 0);
    ASSERT_EQ(r.flows.size(), 2u);
    ASSERT_TRUE(r.flows[0].complete && r.flows[1].complete);
    expect_a_limited(r);
    const double bound = ns_at(wire_bytes_of_write(B_BYTES), RATE_GBPS) + 10'000;
    EXPECT_LE(r.flows[1].fct_ns(), bound) << "B's FCT " << r.flows[1].fct_ns() << " ns";
    EXPECT_GT(r.blocks["node0.nic.tx_engine"]["paced_bypasses"].get<uint64_t>(), 0u);
}

// --- The congestion window is enforced ----------------------------------------------------
//
// A congestion-control algorithm of the plug-in interface (hw/cc/cc_algorithm.h) that decides a
// fixed window: 8 KiB per QP. 1 QP WRITEs 200 x 2 KiB messages (queue depth 16). In flight =
// payload bytes of the WRITE packets on the wire whose PSN the responder has not acknowledged;
// it is recomputed here from wire.pcap: at each data packet (time of its first bit, at or after
// the scheduler sent it), the ACKs counted are those whose first bit left node 1 at least one
// propagation delay earlier (an ACK can have reached node 0 no sooner), so the figure is never
// above what the NIC knew. It must never exceed the window; without one it does (next test).
constexpr uint32_t WINDOW = 8192;

class fixed_window : public rnic::hw::cc::cc_algorithm {
public:
    const char* name() const override { return "fixed_window"; }
    rnic::hw::cc::cc_decision on_event(rnic::hw::cc::cc_qp_state&,
                                       const rnic::hw::cc::cc_event&) override {
        rnic::hw::cc::cc_decision d;
        d.window_bytes = WINDOW;
        return d;
    }
    bool wants_sent(const rnic::hw::cc::cc_qp_state& s) const override {
        return s.window_bytes == 0;  // the first packet's event sets it
    }
};

uint32_t be24(const std::vector<uint8_t>& d, size_t at) {
    return (uint32_t{d[at]} << 16) | (uint32_t{d[at + 1]} << 8) | d[at + 2];
}
bool psn_after(uint32_t a, uint32_t b) {  // a > b, 24-bit serial
    const uint32_t diff = (a - b) & 0xFFFFFF;
    return diff != 0 && diff < 0x800000;
}

// Max in-flight payload bytes of node 0's WRITEs, from the capture.
uint64_t max_in_flight(const pcap_file& p) {
    struct ack {
        uint64_t ns;
        uint32_t psn;
    };
    std::vector<ack> acks;
    for (const pcap_record& f : p.records) {
        if (f.data.size() >= 54 && f.data[29] == 2 && f.data[42] == 0x11) {  // from 10.0.0.2
            acks.push_back({f.ns, be24(f.data, 51)});
        }
    }
    std::map<uint32_t, uint64_t> unacked;  // PSN -> payload bytes
    bool any_acked = false;
    uint32_t acked = 0;
    size_t next_ack = 0;
    uint64_t worst = 0;
    for (const pcap_record& f : p.records) {
        const uint8_t op = f.data.size() >= 54 ? f.data[42] : 0xFF;
        if (f.data[29] != 1 || op < 0x06 || op > 0x0B) {
            continue;  // only node 0's WRITE packets
        }
        while (next_ack < acks.size() && acks[next_ack].ns + PROPAGATION_NS <= f.ns) {
            if (!any_acked || psn_after(acks[next_ack].psn, acked)) {
                acked = acks[next_ack].psn;
                any_acked = true;
            }
            ++next_ack;
        }
        for (auto it = unacked.begin(); it != unacked.end();) {
            it = any_acked && !psn_after(it->first, acked) ? unacked.erase(it) : std::next(it);
        }
        const bool reth = op == 0x06 || op == 0x0A || op == 0x0B;
        const uint32_t pad = (f.data[43] >> 4) & 3;
        const uint64_t payload = f.orig_len - 58 - (reth ? RETH : 0) - 4 - pad;
        unacked[be24(f.data, 51)] = payload;
        uint64_t sum = 0;
        for (const auto& [psn, b] : unacked) {
            sum += b;
        }
        worst = std::max(worst, sum);
    }
    return worst;
}

rnic::scenario::run_result windowed_run(const scratch& s, bool window) {
    const json doc = {{"topology",
                       {{"nodes", {{{"mtu", MTU}}, {{"mtu", MTU}}}},
                        {"link", {{"rate_gbps", RATE_GBPS}, {"propagation_ns", PROPAGATION_NS}}}}},
                      {"rnic", {{"tx_engine", {{"scheduler", {{"policy", "round_robin"}}}}}}},
                      {"workload",
                       {{"operation", "write"},
                        {"message_bytes", 2048},
                        {"messages", 200},
                        {"qps", 1},
                        {"queue_depth", 16},
                        {"time_limit_ms", 100}}}};
    rnic::scenario::scenario_config cfg = rnic::scenario::parse_scenario(doc);
    if (window) {
        cfg.rnic.cc.algorithm = "fixed_window";
        cfg.rnic.cc.factory = [](const rnic::hw::cc::cc_env&) {
            return std::make_unique<fixed_window>();
        };
    }
    rnic::scenario::run_options o;
    o.pcap = s.dir + "/wire.pcap";
    const rnic::scenario::run_result r = rnic::scenario::run_scenario(cfg, o);
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    EXPECT_EQ(r.messages, 200u);
    EXPECT_EQ(r.mismatches, 0u);
    return r;
}

TEST(TxScheduler, CongestionWindowIsNeverExceeded) {
    scratch s;
    const rnic::scenario::run_result r = windowed_run(s, true);
    const uint64_t worst = max_in_flight(read_pcap(s.dir + "/wire.pcap"));
    EXPECT_LE(worst, WINDOW) << "bytes in flight on the wire";
    EXPECT_GE(worst, WINDOW - MTU) << "the window is what limits";
    EXPECT_LE(r.blocks["node0.nic.tx_engine"]["sched_max_inflight"].get<uint64_t>(), WINDOW);
    EXPECT_GT(r.blocks["node0.nic.tx_engine"]["sched_skipped_window"].get<uint64_t>(), 0u);
    EXPECT_EQ(r.blocks["node0.nic.tx_engine"]["timeouts"].get<uint64_t>(), 0u);
}

// The same workload without a window keeps more than the window in flight (the test above is
// not met by accident).
TEST(TxScheduler, WithoutAWindowMoreIsInFlight) {
    scratch s;
    windowed_run(s, false);
    EXPECT_GT(max_in_flight(read_pcap(s.dir + "/wire.pcap")), WINDOW * 3 / 2);
}

// A single active QP: round-robin gives exactly what fifo gives, on the wire and in every
// counter but its own (each turn's segment continues the message in the send path with the
// message's timing and its descriptor-FIFO slot).
nlohmann::json without_scheduler_counters(nlohmann::json stats) {
    for (auto& [block, counters] : stats["blocks"].items()) {
        for (const char* k :
             {"sched_turns", "sched_skipped_paced", "sched_skipped_window", "sched_max_inflight"}) {
            counters.erase(k);
        }
    }
    return stats;
}

TEST(TxScheduler, OneQpRoundRobinGivesTheSameOutputsAsFifo) {
    scratch s;
    std::string pcaps[2];
    nlohmann::json stats[2];
    int i = 0;
    for (const char* policy : {"fifo", "round_robin"}) {
        const std::string out = s.dir + "/" + policy;
        const cli_result c = rnicsim(
            s, short_run(out, {std::string("rnic.tx_engine.scheduler.policy=\"") + policy + "\"",
                               "rnic.tx_engine.scheduler.burst_packets=3", "outputs.pcap=true",
                               "workload.messages=40"}));
        ASSERT_EQ(c.exit_code, 0) << c.err;
        pcaps[i] = read_file(out + "/wire.pcap");
        stats[i] = without_scheduler_counters(json::parse(read_file(out + "/stats.json")));
        ++i;
    }
    ASSERT_GT(pcaps[0].size(), 1000u);
    EXPECT_TRUE(pcaps[0] == pcaps[1]) << "wire.pcap differs";
    EXPECT_EQ(stats[0], stats[1]);
}

// Loss recovery with interleaved QPs: the mixed soak (32 QPs of WRITE / READ / SEND over a link
// that drops, corrupts, duplicates, reorders and delays frames) with the round-robin scheduler:
// every message completes exactly once, nothing is corrupted, and losses are repaired mostly by
// NAKs (go-back-N resends cut the copy of a message a QP was sending into turns).
TEST(TxScheduler, MixedSoakOverAFaultyLinkRecovers) {
    scratch s;
    const std::string out = s.dir + "/soak";
    const cli_result c =
        rnicsim(s, {"run", source_dir() + "/configs/soak/soak_mixed.json", "--out", out, "--set",
                    "rnic.tx_engine.scheduler.policy=\"round_robin\""});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    const json st = json::parse(read_file(out + "/stats.json"));
    EXPECT_TRUE(st["result"]["passed"].get<bool>());
    EXPECT_EQ(st["integrity"]["mismatches"].get<uint64_t>(), 0u);
    EXPECT_EQ(st["integrity"]["bytes_checked"].get<uint64_t>(),
              st["summary"]["bytes"].get<uint64_t>());
    const json& tx = st["blocks"]["node0.nic.tx_engine"];
    EXPECT_GT(tx["retransmits"].get<uint64_t>(), 0u) << "the faults did hit";
    EXPECT_EQ(tx["retry_exceeded"].get<uint64_t>(), 0u);
    EXPECT_EQ(tx["error_completions"].get<uint64_t>(), 0u);
    EXPECT_LT(tx["recovered_by_timeout"].get<uint64_t>() * 10,
              tx["recovered_by_nak"].get<uint64_t>());
}

// rnic.tx_engine.scheduler.arbitration_cycles: a decision's cycles come before its turn's
// descriptor. One 8-byte WRITE (one turn) leaves exactly 50 cycles (100 ns at 500 MHz) later
// with 50 than with 0.
uint64_t first_write_ns(const scratch& s, const std::string& name, uint32_t cycles) {
    const std::string out = s.dir + "/" + name;
    const cli_result c = rnicsim(
        s,
        short_run(out, {"rnic.tx_engine.scheduler.policy=\"round_robin\"",
                        "rnic.tx_engine.scheduler.arbitration_cycles=" + std::to_string(cycles),
                        "workload.message_bytes=8", "workload.messages=1", "outputs.pcap=true"}));
    EXPECT_EQ(c.exit_code, 0) << c.err;
    for (const pcap_record& f : read_pcap(out + "/wire.pcap").records) {
        if (f.data.size() >= 54 && f.data[42] == 0x0A) {  // RDMA WRITE Only
            return f.ns;
        }
    }
    ADD_FAILURE() << name << ": no WRITE on the wire";
    return 0;
}

TEST(TxScheduler, ArbitrationCyclesComeBeforeTheTurn) {
    scratch s;
    const uint64_t t0 = first_write_ns(s, "arb0", 0);
    const uint64_t t50 = first_write_ns(s, "arb50", 50);
    EXPECT_EQ(t50 - t0, 100u) << "50 cycles of the 500 MHz NIC clock";
}

// The RTL send path's pins carry whole messages: a packet scheduler with it is a config error.
TEST(TxScheduler, RoundRobinWithTheRtlSendPathIsAConfigError) {
    scratch s;
    const cli_result c =
        rnicsim(s, short_run(s.dir + "/rtl", {"rnic.tx_engine.scheduler.policy=\"round_robin\"",
                                              "rnic.send_path.impl=\"rtl\""}));
    EXPECT_EQ(c.exit_code, 2);
    EXPECT_NE(c.err.find("rnic.tx_engine.scheduler.policy"), std::string::npos) << c.err;
    EXPECT_FALSE(fs::exists(s.dir + "/rtl/stats.json"));
}

}  // namespace
