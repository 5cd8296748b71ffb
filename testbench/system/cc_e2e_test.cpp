// SPDX-License-Identifier: Apache-2.0
// Congestion control end to end on two nodes (rnicsim CLI runs): the link marks CE on ECT frames
// (topology.link.faults.ecn_mark, standing in for a congested switch queue), the receiver's
// notification point answers with CNPs on the wire, the sender's DCQCN reaction point lowers the
// QP's rate and its pacer spaces the packets, and every byte still arrives. The wire capture is
// checked here independently of the model's frame builder (outputs_common.h).
//
// Fabric-level behaviour (fair share at a bottleneck, incast) is in cc_fabric_test.cpp.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/system/outputs_common.h"

namespace {

using namespace rnic::outputs_test;
using nlohmann::json;

struct run : run_outputs {
    std::string pcap_bytes;
    std::string summary;
    std::string cc_csv;
    bool has_cc_csv = false;
};

run run_cli(const scratch& s, const std::string& name, const std::vector<std::string>& sets,
            int messages = 20) {
    const std::string out = s.dir + "/" + name;
    std::vector<std::string> all = {"outputs.pcap=true",
                                    "workload.messages=" + std::to_string(messages)};
    all.insert(all.end(), sets.begin(), sets.end());
    run r;
    static_cast<run_outputs&>(r) = run_and_read(s, out, short_run(out, all));
    r.pcap_bytes = read_file(out + "/wire.pcap");
    r.summary = read_file(out + "/summary.txt");
    r.has_cc_csv = fs::exists(out + "/cc.csv");
    if (r.has_cc_csv) {
        r.cc_csv = read_file(out + "/cc.csv");
    }
    return r;
}

uint64_t stat(const run& r, const std::string& block, const std::string& name) {
    return block_counter(r.stats, block, name);
}

void expect_passed(const run& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(r.stats.contains("result"));
    EXPECT_TRUE(r.stats["result"]["passed"].get<bool>());
    EXPECT_EQ(r.stats["integrity"]["mismatches"].get<uint64_t>(), 0u);
    EXPECT_EQ(r.stats["integrity"]["bytes_checked"].get<uint64_t>(),
              r.stats["summary"]["bytes"].get<uint64_t>());
}

bool is_roce(const pcap_record& f) {
    return f.data.size() > 50 && be16(f.data, 12) == 0x0800 && f.data[23] == 17 &&
           be16(f.data, 36) == 4791;
}
uint8_t opcode(const pcap_record& f) {
    return f.data[42];
}
uint32_t dest_qp(const pcap_record& f) {
    return (uint32_t{f.data[47]} << 16) | (uint32_t{f.data[48]} << 8) | f.data[49];
}
uint32_t src_ip(const pcap_record& f) {
    return (uint32_t{f.data[26]} << 24) | (uint32_t{f.data[27]} << 16) |
           (uint32_t{f.data[28]} << 8) | f.data[29];
}
constexpr uint32_t NODE0_IP = 0x0A000001;  // quickstart: 10.0.0.1 (initiator), 10.0.0.2
bool is_data(uint8_t op) {
    return op <= 0x10 && op != 0x0C;  // SEND / WRITE / READ response packets
}

// The cc.csv rows: time_ns,node,qpn,rate_mbps,target_mbps,alpha,cnps.
std::vector<std::vector<double>> csv_rows(const std::string& text) {
    std::vector<std::vector<double>> rows;
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "time_ns,node,qpn,rate_mbps,target_mbps,alpha,cnps");
    while (std::getline(in, line)) {
        std::vector<double> v;
        std::istringstream ls(line);
        std::string cell;
        while (std::getline(ls, cell, ',')) {
            v.push_back(std::stod(cell));
        }
        EXPECT_EQ(v.size(), 7u) << line;
        rows.push_back(v);
    }
    return rows;
}

// CE marks on node 0's WRITEs: node 1 sends CNPs (checked byte by byte on the wire, addressed to
// node 0's QP, each after a CE-marked data packet), node 0's rate drops below the line rate and
// its pacer holds packets, and the data is intact.
TEST(CongestionControl, CnpsOnTheWireRateReducedDataCorrect) {
    scratch s;
    const run r = run_cli(s, "dcqcn",
                          {"rnic.cc.algorithm=dcqcn", "topology.link.faults.ecn_mark=0.01",
                           "topology.link.faults.seed=5"});
    expect_passed(r);
    ASSERT_FALSE(r.pcap.records.empty());
    uint64_t cnps = 0;
    uint64_t ce_data = 0;
    uint64_t last_ce_ns = 0;
    bool have_ce = false;
    uint32_t node0_qp = 0;  // from the ACKs node 1 sends to node 0's requester QP
    for (const pcap_record& f : r.pcap.records) {
        if (!is_roce(f)) {
            continue;
        }
        if (opcode(f) == 0x11 && src_ip(f) != NODE0_IP) {
            node0_qp = dest_qp(f);
        }
        if (is_data(opcode(f)) && src_ip(f) == NODE0_IP && (f.data[15] & 3) == 3) {
            ++ce_data;
            last_ce_ns = f.ns;
            have_ce = true;
        }
        if (opcode(f) != 0x81) {
            continue;
        }
        ++cnps;
        EXPECT_EQ(check_roce_frame(f.data), "") << "CNP at " << f.ns;
        EXPECT_EQ(f.data.size(), 74u) << "Eth 14 + IPv4 20 + UDP 8 + BTH 12 + 16 reserved + ICRC";
        EXPECT_NE(src_ip(f), NODE0_IP) << "the receiver (node 1) notifies";
        EXPECT_EQ(f.data[15], 48 << 2) << "DSCP 48 (np_cnp_dscp), ECN not-ECT";
        EXPECT_EQ(f.data[46] & 0x40, 0x40) << "BECN";
        EXPECT_EQ(be16(f.data, 44), 0xFFFF) << "P_Key";
        for (size_t i = 54; i < 70; ++i) {
            EXPECT_EQ(f.data[i], 0) << "reserved byte " << i;
        }
        EXPECT_TRUE(have_ce && f.ns >= last_ce_ns) << "a CNP without a CE-marked packet before it";
        EXPECT_EQ(dest_qp(f), node0_qp) << "to node 0's requester QP";
    }
    EXPECT_GT(ce_data, 0u);
    EXPECT_GT(cnps, 0u);
    EXPECT_EQ(cnps, stat(r, "node1.nic.np", "cnps_sent"));
    EXPECT_EQ(cnps, stat(r, "node0.nic.np", "cnps_received"));
    EXPECT_EQ(ce_data, stat(r, "node1.nic.np", "ce_packets"));
    // np_min_time_between_cnps is 0 by default: one CNP per CE packet.
    EXPECT_EQ(stat(r, "node1.nic.np", "cnps_suppressed"), 0u);
    EXPECT_EQ(cnps, ce_data);
    // The reaction point cut the rate and the pacer held packets.
    EXPECT_GT(stat(r, "node0.nic.cc", "rate_changes"), 0u);
    EXPECT_GT(stat(r, "node0.nic.pacer", "paced_packets"), 0u);
    ASSERT_TRUE(r.has_cc_csv);
    const auto rows = csv_rows(r.cc_csv);
    ASSERT_FALSE(rows.empty());
    double min_rate = 1e18;
    for (const auto& row : rows) {
        EXPECT_EQ(row[1], 0) << "only node 0 sends data";
        EXPECT_LE(row[3], 100000);
        EXPECT_GE(row[3], 1);  // rp_min_rate
        min_rate = std::min(min_rate, row[3]);
    }
    EXPECT_LE(min_rate, 50049) << "the first CNP alone takes 100000 Mb/s to 50049";
    EXPECT_EQ(rows.back()[6], static_cast<double>(cnps)) << "the QP counted every CNP";
    // tshark decodes the CNPs: BTH opcode 129 to node 0's QP, DSCP 48, not ECN-capable.
    const std::string tshark = find_tool("tshark");
    if (!tshark.empty()) {
        const cli_result t =
            shell(s, quote(tshark) + " -r " + quote(s.dir + "/dcqcn/wire.pcap") +
                         " -Y 'infiniband.bth.opcode == 129' -T fields -e infiniband.bth.opcode"
                         " -e infiniband.bth.destqp -e ip.dsfield.dscp -e ip.dsfield.ecn");
        ASSERT_EQ(t.exit_code, 0) << t.err;
        std::istringstream lines(t.out);
        std::string line;
        uint64_t decoded = 0;
        char qp[16];
        std::snprintf(qp, sizeof qp, "0x%06x", node0_qp);
        while (std::getline(lines, line)) {
            EXPECT_EQ(line, std::string("129\t") + qp + "\t48\t0");
            ++decoded;
        }
        EXPECT_EQ(decoded, cnps);
    }
}

// A CE flood (every ECT frame marked) at line rate (rp_min_dec_fac 100: the reaction point never
// slows the sender, so a CE packet arrives every ~90 ns): at most one CNP per QP per
// np_min_time_between_cnps (4 us) on the wire, the rest suppressed; the data still arrives.
TEST(CongestionControl, NotificationPointRateLimitsACeFlood) {
    scratch s;
    const run r =
        run_cli(s, "flood",
                {"rnic.cc.algorithm=dcqcn", "topology.link.faults.ecn_mark=1",
                 "rnic.cc.dcqcn.np_min_time_between_cnps=4", "rnic.cc.dcqcn.rp_min_dec_fac=100"},
                8);
    expect_passed(r);
    std::vector<uint64_t> times;
    for (const pcap_record& f : r.pcap.records) {
        if (is_roce(f) && opcode(f) == 0x81) {
            times.push_back(f.ns);
        }
    }
    ASSERT_GT(times.size(), 2u);
    for (size_t i = 1; i < times.size(); ++i) {
        // Admitted >= 4 us apart; on the wire a CNP may wait behind one ACK in the MAC FIFO.
        EXPECT_GE(times[i] - times[i - 1], 4000u - 100u) << "CNPs " << i - 1 << " and " << i;
    }
    const uint64_t ce = stat(r, "node1.nic.np", "ce_packets");
    // 8 x 64 packets at line rate take ~45 us: about 12 intervals of 4 us.
    EXPECT_LE(times.size(), (times.back() - times.front()) / 4000 + 1);
    EXPECT_GT(stat(r, "node1.nic.np", "cnps_suppressed"), 10 * times.size());
    EXPECT_EQ(ce, times.size() + stat(r, "node1.nic.np", "cnps_suppressed"));
}

// The pacer spaces the packets of a message by their wire size over the rate. DCQCN is pinned
// at 10 Gb/s: the first CNP sets it (rp_rate_to_set_on_first_cnp), rp_min_dec_fac 100 forbids
// decreases, and no increase comes (timer at its maximum, byte counter off). After the rate is
// set, node 0's data frames leave one slot apart: slot = previous frame's wire bytes (frame +
// FCS + preamble + IFG) x 8 / 10 Gb/s, on the 2 ns clock grid (pcap stamps floor to ns).
TEST(CongestionControl, PacerSpacesPacketsBySizeOverRate) {
    scratch s;
    const run r =
        run_cli(s, "paced",
                {"rnic.cc.algorithm=dcqcn", "topology.link.faults.ecn_mark=1",
                 "topology.link.faults.opcode=6", "rnic.cc.dcqcn.rp_rate_to_set_on_first_cnp=10000",
                 "rnic.cc.dcqcn.rp_min_dec_fac=100", "rnic.cc.dcqcn.rp_time_reset=131071",
                 "rnic.cc.dcqcn.rp_byte_reset=0"},
                12);
    expect_passed(r);
    uint64_t first_cnp_ns = 0;
    for (const pcap_record& f : r.pcap.records) {
        if (is_roce(f) && opcode(f) == 0x81) {
            first_cnp_ns = f.ns;
            break;
        }
    }
    ASSERT_GT(first_cnp_ns, 0u);
    std::vector<const pcap_record*> data;
    for (const pcap_record& f : r.pcap.records) {
        // From a while after the CNP (it reaches node 0, the engine acts) on.
        if (is_roce(f) && src_ip(f) == NODE0_IP && is_data(opcode(f)) &&
            f.ns > first_cnp_ns + 5000) {
            data.push_back(&f);
        }
    }
    ASSERT_GT(data.size(), 100u);
    double want_total = 0;
    double got_total = 0;
    for (size_t i = 1; i < data.size(); ++i) {
        const double wire = std::max<double>(data[i - 1]->data.size() + 4, 64) + 8 + 12;
        const double slot_ns = wire * 8 / 10000e6 * 1e9;
        const double gap = static_cast<double>(data[i]->ns - data[i - 1]->ns);
        // Every packet one slot after the previous: the clock grid (2 ns) and the ns floor of
        // the stamps move one edge by at most 4 ns; the first packet of a message takes a few
        // cycles more from its slot to the wire than the others (descriptor, longer header).
        EXPECT_NEAR(gap, slot_ns, 24.0) << "packets " << i - 1 << " and " << i;
        want_total += slot_ns;
        got_total += gap;
    }
    EXPECT_NEAR(got_total / want_total, 1.0, 0.002);
    // And so the goodput is the paced rate times payload / wire bytes (1024 of ~1106).
    const double goodput = r.stats["summary"]["goodput_gbps"].get<double>();
    EXPECT_GT(goodput, 8.5);
    EXPECT_LT(goodput, 10.0);
}

// waves.vcd holds the QP's rate, target, alpha and CNP count (outputs.waves_qps): the CNP count
// steps once per CNP that reached the QP, and the rate goes below the line rate.
TEST(CongestionControl, WavesShowRateAndCnpArrivals) {
    scratch s;
    const run r =
        run_cli(s, "waves",
                {"rnic.cc.algorithm=dcqcn", "topology.link.faults.ecn_mark=0.01",
                 "topology.link.faults.seed=5", "outputs.waves=true", "outputs.waves_qps=[2]"});
    expect_passed(r);
    const std::string vcd = read_file(s.dir + "/waves/waves.vcd");
    ASSERT_FALSE(vcd.empty());
    // Scope-qualified names of the variables, from the header.
    std::map<std::string, std::string> id_of;
    std::vector<std::string> scopes;
    std::istringstream in(vcd);
    std::string line;
    while (std::getline(in, line) && line.rfind("$enddefinitions", 0) != 0) {
        std::istringstream ls(line);
        std::string tok, kind, width, id, name;
        ls >> tok;
        if (tok == "$scope") {
            ls >> kind >> name;
            scopes.push_back(name);
        } else if (tok == "$upscope") {
            scopes.pop_back();
        } else if (tok == "$var") {
            ls >> kind >> width >> id >> name;
            std::string full;
            for (size_t i = 1; i < scopes.size(); ++i) {  // below the "SystemC" root scope
                full += scopes[i] + ".";
            }
            id_of[full + name] = id;
        }
    }
    const std::string rate = id_of["node0.nic.qp2.cc_rate_mbps"];
    const std::string cnps = id_of["node0.nic.qp2.cc_cnps"];
    ASSERT_FALSE(rate.empty()) << "node0.nic.qp2.cc_rate_mbps not in waves.vcd";
    ASSERT_FALSE(cnps.empty());
    ASSERT_FALSE(id_of["node0.nic.qp2.cc_alpha"].empty());
    ASSERT_FALSE(id_of["node0.nic.qp2.cc_target_mbps"].empty());
    uint64_t cnp_steps = 0;
    uint64_t last_cnps = 0;
    uint64_t min_rate = ~uint64_t{0};
    while (std::getline(in, line)) {
        if (line.empty() || line[0] != 'b') {
            continue;
        }
        const size_t sp = line.find(' ');
        const std::string id = line.substr(sp + 1);
        const uint64_t v = std::stoull(line.substr(1, sp - 1), nullptr, 2);
        if (id == cnps && v == 0) {
            last_cnps = 0;  // the QP destroyed at the end of the run (its context cleared)
        } else if (id == cnps && v != last_cnps) {
            EXPECT_EQ(v, last_cnps + 1) << "one step per CNP";
            ++cnp_steps;
            last_cnps = v;
        } else if (id == rate && v != 0) {
            min_rate = std::min(min_rate, v);
        }
    }
    EXPECT_GT(cnp_steps, 0u);
    EXPECT_EQ(cnp_steps, stat(r, "node0.nic.np", "cnps_received"));
    EXPECT_LT(min_rate, 100000u);
}

// The rate state lives in the QP context: every CNP / timer event reads and writes it through the
// context cache. Same marks with and without congestion control: node 0's QPC lookups grow by
// exactly one per CNP frame (the receive path's lookup of every frame) plus one per engine event.
TEST(CongestionControl, RateStateGoesThroughTheQpContextCache) {
    scratch s;
    const std::vector<std::string> marks = {"topology.link.faults.ecn_mark=0.01",
                                            "topology.link.faults.seed=5"};
    std::vector<std::string> on = marks;
    on.push_back("rnic.cc.algorithm=dcqcn");
    const run off_run = run_cli(s, "off", marks);
    const run on_run = run_cli(s, "on", on);
    expect_passed(off_run);
    expect_passed(on_run);
    auto qpc = [](const run& r) {
        return stat(r, "node0.nic.context_cache", "qpc_hits") +
               stat(r, "node0.nic.context_cache", "qpc_misses");
    };
    const uint64_t events = stat(on_run, "node0.nic.cc", "events");
    const uint64_t cnps = stat(on_run, "node0.nic.np", "cnps_received");
    EXPECT_GT(events, 0u);
    EXPECT_EQ(qpc(on_run) - qpc(off_run), cnps + events);
}

// rnic.cc.algorithm none is the same as no rnic.cc at all, and DCQCN with no CE mark changes
// nothing on the wire either (a QP at line rate is never paced).
TEST(CongestionControl, OffAndUnmarkedGiveTheSameWire) {
    scratch s;
    const run base = run_cli(s, "base", {});
    const run none = run_cli(s, "none", {"rnic.cc.algorithm=none"});
    const run dcqcn = run_cli(s, "dcqcn", {"rnic.cc.algorithm=dcqcn"});
    expect_passed(base);
    EXPECT_FALSE(base.has_cc_csv);
    EXPECT_FALSE(none.has_cc_csv);
    EXPECT_FALSE(base.stats["blocks"].contains("node0.nic.cc"));
    EXPECT_EQ(base.pcap_bytes, none.pcap_bytes);
    EXPECT_EQ(base.summary, none.summary);
    EXPECT_EQ(base.stats, none.stats);
    EXPECT_EQ(base.pcap_bytes, dcqcn.pcap_bytes);
    EXPECT_EQ(stat(dcqcn, "node0.nic.pacer", "paced_packets"), 0u);
}

// TIMELY on the NIC's own RTTs: with T_high below the two-node RTT every ACK is a high-RTT
// sample, so the rate falls; the data is intact. The RTT is stamped at the MAC (hw/cc/README.md):
// a 1 KiB frame's 84 ns on the wire, 2 x 50 ns of cable, the responder's ACK: about 0.25 us.
TEST(CongestionControl, TimelyReactsToNicMeasuredRtt) {
    scratch s;
    const run r = run_cli(s, "timely",
                          {"rnic.cc.algorithm=timely", "rnic.cc.timely.t_low_us=0.05",
                           "rnic.cc.timely.t_high_us=0.2", "rnic.cc.timely.min_rate_mbps=20000"});
    expect_passed(r);
    EXPECT_GT(stat(r, "node0.nic.cc", "events"), 0u);
    EXPECT_GT(stat(r, "node0.nic.cc", "rate_changes"), 0u);
    EXPECT_GT(stat(r, "node0.nic.pacer", "paced_packets"), 0u);
    EXPECT_FALSE(r.stats["blocks"].contains("node1.nic.np")) << "TIMELY uses no CNPs";
    const auto rows = csv_rows(r.cc_csv);
    ASSERT_FALSE(rows.empty());
    for (const auto& row : rows) {
        EXPECT_GE(row[3], 20000) << "min_rate_mbps";
        EXPECT_LT(row[3], 100000);
    }
}

}  // namespace
