// SPDX-License-Identifier: Apache-2.0
// np_cnp_prio on the wire: with it set, CNPs carry an 802.1Q priority tag (TPID 0x8100, PCP =
// np_cnp_prio, DEI 0, VID 0) after the MACs; the NIC MACs and the switches classify a tagged
// frame by its PCP (else by its DSCP), the receiving NIC strips the tag and reacts to the CNP,
// tshark decodes it. Unset (the default), CNPs are the untagged 74 bytes of before.
//
// Frames are checked here byte by byte against IEEE 802.1Q and the RoCEv2 CNP layout
// (outputs_common.h's independent ICRC), not against the model's builder.
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/system/outputs_common.h"
#include "tlm/ethernet/eth_link.h"

namespace {

using namespace rnic::outputs_test;
using nlohmann::json;

using run = run_outputs;

run run_cli(const scratch& s, const std::string& name, const std::vector<std::string>& args) {
    const std::string out = s.dir + "/" + name;
    std::vector<std::string> all = args;
    all.insert(all.end(), {"--out", out, "--set", "outputs.pcap=true"});
    return run_and_read(s, out, all);
}

uint64_t stat(const run& r, const std::string& block, const std::string& name) {
    return block_counter(r.stats, block, name);
}

void expect_passed(const run& r) {
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.stats["result"]["passed"].get<bool>());
    EXPECT_EQ(r.stats["integrity"]["mismatches"].get<uint64_t>(), 0u);
}

// A RoCEv2 CNP (BTH opcode 0x81) after `l2` bytes of Ethernet header.
bool is_cnp(const std::vector<uint8_t>& f, size_t l2) {
    return f.size() > l2 + 28 + 12 && be16(f, l2 - 2) == 0x0800 && f[l2 + 9] == 17 &&
           be16(f, l2 + 22) == 4791 && f[l2 + 28] == 0x81;
}

std::vector<std::string> two_node_cc(int prio) {
    std::vector<std::string> a = {"run",   quickstart(),
                                  "--set", "workload.messages=20",
                                  "--set", "rnic.cc.algorithm=dcqcn",
                                  "--set", "topology.link.faults.ecn_mark=0.01",
                                  "--set", "topology.link.faults.seed=5"};
    if (prio >= 0) {
        a.insert(a.end(), {"--set", "rnic.cc.dcqcn.np_cnp_prio=" + std::to_string(prio)});
    }
    return a;
}

// The frame source of the NIC MACs (their transmit FIFO and control queue) and of the link's
// PFC accounting: a tag's PCP wins over the DSCP.
TEST(CnpPriority, MacClassifiesByPcpWhenTaggedElseDscp) {
    std::vector<uint8_t> ip(64, 0);
    ip[12] = 0x08;
    ip[15] = 48 << 2;  // DSCP 48: priority 6 by DSCP >> 3
    EXPECT_EQ(rnic::fabric::default_priority(ip), 6);
    std::vector<uint8_t> tagged = ip;
    const uint8_t tag[4] = {0x81, 0x00, 3 << 5, 0x00};  // PCP 3, VID 0
    tagged.insert(tagged.begin() + 12, tag, tag + 4);
    EXPECT_EQ(rnic::fabric::default_priority(tagged), 3);
    std::vector<uint8_t> arp(64, 0);
    arp[12] = 0x08;
    arp[13] = 0x06;
    EXPECT_EQ(rnic::fabric::default_priority(arp), 0);
}

struct capture_sink : rnic::fabric::frame_sink_if {
    std::vector<rnic::fabric::eth_frame> frames;
    void receive_frame(rnic::fabric::eth_frame&& f) override { frames.push_back(std::move(f)); }
};

// A RoCEv2-shaped frame (IPv4, DSCP 0) with BTH opcode `op`, tagged with PCP `pcp` or not.
rnic::fabric::eth_frame shaped(uint8_t op, int pcp, uint64_t flow) {
    rnic::fabric::eth_frame f;
    f.data.assign(80, 0);
    f.data[12] = 0x08;
    f.data[14] = 0x45;
    f.data[42] = op;
    if (pcp >= 0) {
        const uint8_t tag[4] = {0x81, 0x00, static_cast<uint8_t>(pcp << 5), 0x00};
        f.data.insert(f.data.begin() + 12, tag, tag + 4);
    }
    f.flow_id = flow;
    return f;
}

// The link's MAC gives a tagged frame its PCP as priority, and its fault filters find the BTH
// after the tag: a drop filtered on opcode 0x81 (CNP) takes tagged and untagged CNPs alike.
TEST(CnpPriority, LinkFaultFiltersAndPriorityLookPastTheTag) {
    rnic::hw::sim_context ctx;
    rnic::fabric::eth_link_config cfg;
    cfg.faults.drop = 1.0;
    cfg.faults.opcode = 0x81;
    rnic::fabric::eth_link link("link", cfg, ctx);
    capture_sink rx[2];
    link.attach(0, &rx[0]);
    link.attach(1, &rx[1]);
    sc_core::sc_spawn(
        [&] {
            link.ctrl_tx(0).put(shaped(0x81, 5, 1));   // tagged CNP: dropped
            link.ctrl_tx(0).put(shaped(0x81, -1, 2));  // untagged CNP: dropped
            link.ctrl_tx(0).put(shaped(0x11, 5, 3));   // tagged ACK: delivered, priority 5
            link.ctrl_tx(0).put(shaped(0x11, -1, 4));  // untagged, DSCP 0: priority 0
        },
        "mac");
    sc_core::sc_start();
    ASSERT_EQ(rx[1].frames.size(), 2u);
    EXPECT_EQ(rx[1].frames[0].flow_id, 3u);
    EXPECT_EQ(rx[1].frames[0].priority, 5u);
    EXPECT_EQ(rx[1].frames[1].flow_id, 4u);
    EXPECT_EQ(rx[1].frames[1].priority, 0u);
    EXPECT_EQ(link.get_stats(0).dropped, 2u);
}

// Two nodes, CE marks on node 0's data: with np_cnp_prio 3 node 1's CNPs are the untagged CNP
// with a priority tag inserted after the MACs, node 0's NIC takes every one (it strips the
// tag), and the run is the same otherwise. Unset: the untagged 74-byte CNPs of before.
TEST(CnpPriority, TwoNodesTaggedCnpsOnTheWireAndReceived) {
    scratch s;
    const run plain = run_cli(s, "plain", two_node_cc(-1));
    const run tagged = run_cli(s, "tagged", two_node_cc(3));
    expect_passed(plain);
    expect_passed(tagged);
    std::vector<std::vector<uint8_t>> plain_cnps;
    std::vector<std::vector<uint8_t>> tagged_cnps;
    for (const auto& f : plain.pcap.records) {
        EXPECT_FALSE(be16(f.data, 12) == 0x8100) << "a tag without np_cnp_prio at " << f.ns;
        if (is_cnp(f.data, 14)) {
            plain_cnps.push_back(f.data);
        }
    }
    for (const auto& f : tagged.pcap.records) {
        if (be16(f.data, 12) != 0x8100) {
            EXPECT_FALSE(is_cnp(f.data, 14)) << "an untagged CNP at " << f.ns;
            continue;
        }
        ASSERT_TRUE(is_cnp(f.data, 18)) << "only CNPs are tagged (" << f.ns << ")";
        EXPECT_EQ(f.data.size(), 78u) << "the 74-byte CNP + the 4-byte tag";
        EXPECT_EQ(f.data[14] >> 5, 3) << "PCP = np_cnp_prio";
        EXPECT_EQ(f.data[14] & 0x10, 0) << "DEI";
        EXPECT_EQ(be16(f.data, 14) & 0x0FFF, 0) << "VID 0: a priority tag";
        EXPECT_EQ(f.data[19], 48 << 2) << "DSCP np_cnp_dscp still in the IPv4 header";
        std::vector<uint8_t> inner = f.data;
        inner.erase(inner.begin() + 12, inner.begin() + 16);
        EXPECT_EQ(check_roce_frame(inner), "") << "without its tag, a valid CNP";
        tagged_cnps.push_back(inner);
    }
    ASSERT_FALSE(plain_cnps.empty());
    // The same CE marks (seeded), so the same CNPs, byte for byte once the tag is removed.
    EXPECT_EQ(tagged_cnps, plain_cnps);
    for (const auto& f : plain_cnps) {
        EXPECT_EQ(f.size(), 74u);
    }
    EXPECT_EQ(stat(tagged, "node1.nic.np", "cnps_sent"), tagged_cnps.size());
    EXPECT_EQ(stat(tagged, "node0.nic.np", "cnps_received"), tagged_cnps.size());
    EXPECT_EQ(stat(tagged, "node0.nic.recv_path", "parse_errors"), 0u);
    EXPECT_GT(stat(tagged, "node0.nic.cc", "rate_changes"), 0u);

    // tshark decodes the tag and the CNP behind it.
    const std::string tshark = find_tool("tshark");
    if (tshark.empty()) {
        GTEST_SKIP() << "tshark not installed: the byte checks above stand";
    }
    const cli_result t =
        shell(s, quote(tshark) + " -r " + quote(s.dir + "/tagged/wire.pcap") +
                     " -Y 'vlan' -T fields -e vlan.priority -e vlan.id -e ip.dsfield.dscp"
                     " -e infiniband.bth.opcode");
    ASSERT_EQ(t.exit_code, 0) << t.err;
    std::istringstream lines(t.out);
    std::string line;
    uint64_t decoded = 0;
    while (std::getline(lines, line)) {
        EXPECT_EQ(line, "3\t0\t48\t129");
        ++decoded;
    }
    EXPECT_EQ(decoded, tagged_cnps.size());
}

// 8:1 incast with DCQCN through one switch: CNPs tagged with PCP 3 (DSCP 48 would say 6) are
// queued by the switch in priority 3, and no CNP in priority 6.
TEST(CnpPriority, SwitchQueuesTaggedCnpsByTheirPcp) {
    scratch s;
    const std::string cfg = source_dir() + "/configs/fabric/incast_8to1_dcqcn.json";
    const run r = run_cli(
        s, "incast",
        {"run", cfg, "--set", "workload.messages=16", "--set", "rnic.cc.dcqcn.np_cnp_prio=3"});
    expect_passed(r);
    uint64_t sent = 0;
    for (uint32_t n = 0; n < 9; ++n) {
        sent += stat(r, "node" + std::to_string(n) + ".nic.np", "cnps_sent");
    }
    ASSERT_GT(sent, 0u);
    uint64_t received = 0;
    for (uint32_t n = 0; n < 9; ++n) {
        received += stat(r, "node" + std::to_string(n) + ".nic.np", "cnps_received");
    }
    EXPECT_EQ(received, sent);
    uint64_t q3 = 0;
    uint64_t q6 = 0;
    for (uint32_t p = 0; p < 9; ++p) {
        const std::string port = "sw0.port" + std::to_string(p);
        q3 += stat(r, port + ".q3", "frames");
        q6 += stat(r, port + ".q6", "frames");
    }
    EXPECT_EQ(q3, sent) << "every CNP forwarded from priority 3";
    EXPECT_EQ(q6, 0u) << "none by its DSCP";
}

}  // namespace
