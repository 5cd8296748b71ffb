// SPDX-License-Identifier: Apache-2.0
// DIR/wire.pcap end to end (outputs.pcap): every frame of the link, stamped with the time its
// first bit left the MAC, decoded and ICRC-checked here independently of the model's builder,
// decoded by tshark when it is installed, captured as sent under fault injection, and the
// same bytes for the same config.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/system/outputs_common.h"

namespace {

using namespace rnic::outputs_test;
using nlohmann::json;

// The checker itself against the reference frames of reference/rocev2.md (checked there by two
// independent CRC computations and tshark).
TEST(OutputsPcap, CheckerAcceptsReferenceFramesAndRejectsAFlippedBit) {
    const std::vector<std::string> vectors = {
        "02000000000202000000000108004502003c123440004011a527c0a80101c0a80102c00012b7002800000400"
        "ffff0000001180000100000102030405060708090a0b0c0d0e0f4f058350",
        "020000000002020000000001080045020044123440004011a51fc0a80101c0a80102c00012b7003000000a00"
        "ffff000000128000020000007f000000100000001234000000084142434445464748b3b23a1a",
        "020000000002020000000001080045020030123440004011a533c0a80101c0a80102c00012b7001c00001100"
        "ffff00000011000001001f000001dab70a97",
    };
    for (const auto& hex : vectors) {
        std::vector<uint8_t> f = from_hex(hex);
        EXPECT_EQ(check_roce_frame(f), "") << hex;
        // Masked fields do not change the ICRC; anything else does.
        f[14 + 8] ^= 0x01;  // TTL (masked) - the IP checksum catches it, the ICRC does not
        EXPECT_NE(check_roce_frame(f).find("checksum"), std::string::npos);
        f[14 + 8] ^= 0x01;
        f[f.size() - 5] ^= 0x80;  // last payload/header byte before the ICRC
        EXPECT_NE(check_roce_frame(f).find("ICRC"), std::string::npos);
    }
}

struct pcap_run {
    int exit_code = -1;
    std::string err;
    json stats;
    pcap_file pcap;
    std::string bytes;
};

pcap_run run_with_pcap(const scratch& s, const std::string& name,
                       const std::vector<std::string>& sets) {
    const std::string out = s.dir + "/" + name;
    std::vector<std::string> all = {"outputs.pcap=true"};
    all.insert(all.end(), sets.begin(), sets.end());
    const cli_result r = rnicsim(s, short_run(out, all));
    pcap_run p;
    p.exit_code = r.exit_code;
    p.err = r.err;
    if (fs::exists(out + "/stats.json")) {
        p.stats = json::parse(read_file(out + "/stats.json"));
    }
    p.pcap = read_pcap(out + "/wire.pcap");
    p.bytes = read_file(out + "/wire.pcap");
    return p;
}

// Checks the whole capture; returns the opcode histogram.
std::map<int, int> check_capture(const pcap_run& p) {
    EXPECT_EQ(p.pcap.magic, 0xa1b23c4du) << "nanosecond pcap magic";
    EXPECT_EQ(p.pcap.linktype, 1u) << "Ethernet";
    EXPECT_FALSE(p.pcap.truncated);
    EXPECT_EQ(p.pcap.records.size(), p.stats["sim"]["packets"].get<uint64_t>())
        << "every frame of both directions";
    std::map<int, int> opcodes;
    uint64_t last_ns = 0;
    int bad = 0;
    int arps = 0;
    for (size_t i = 0; i < p.pcap.records.size(); ++i) {
        const pcap_record& r = p.pcap.records[i];
        EXPECT_EQ(r.orig_len, r.data.size()) << "frame " << i << " truncated";
        EXPECT_GE(r.ns, last_ns) << "frame " << i << " out of time order";
        last_ns = r.ns;
        if (r.data.size() == 60 && be16(r.data, 12) == 0x0806) {
            ++arps;  // ARP before the connection exchange (ndk_shim README, neighbour resolution)
            continue;
        }
        const std::string why = check_roce_frame(r.data);
        if (!why.empty() && ++bad <= 5) {
            ADD_FAILURE() << "frame " << i << " at " << r.ns << " ns: " << why;
        }
        if (r.data.size() > 42) {
            ++opcodes[r.data[42]];
        }
    }
    EXPECT_EQ(bad, 0);
    EXPECT_GE(arps, 2) << "the initiator's ARP request and the peer NIC's reply";
    EXPECT_LE(last_ns, p.stats["sim"]["simulated_ns"].get<uint64_t>());
    return opcodes;
}

TEST(OutputsPcap, WriteCaptureHasEveryFrameWithCorrectIcrc) {
    scratch s;
    const pcap_run p = run_with_pcap(s, "w", {});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const auto ops = check_capture(p);
    // 8 x 64 KiB at MTU 1024: First, 62 Middle, Last per message, and ACKs back.
    EXPECT_EQ(ops.at(0x06), 8);
    EXPECT_EQ(ops.at(0x07), 8 * 62);
    EXPECT_EQ(ops.at(0x08), 8);
    EXPECT_GE(ops.at(0x11), 1);
    // Back-to-back frames of one direction are one wire slot apart: 1082 B + FCS, preamble,
    // IFG at 100 Gb/s = 88.48 ns; the pcap's nanosecond stamps floor the picosecond times.
    const auto& rec = p.pcap.records;
    bool found = false;
    for (size_t i = 1; i < rec.size() && !found; ++i) {
        if (rec[i].data[42] == 0x07 && rec[i - 1].data[42] == 0x07 &&
            rec[i].data.size() == rec[i - 1].data.size()) {
            const uint64_t gap = rec[i].ns - rec[i - 1].ns;
            EXPECT_GE(gap, 88u);
            EXPECT_LE(gap, 89u);
            found = gap <= 89;
        }
    }
    EXPECT_TRUE(found) << "no back-to-back Middle frames";
}

TEST(OutputsPcap, ReadAndSendCapturesAreValidToo) {
    scratch s;
    const pcap_run read = run_with_pcap(s, "r", {"workload.operation=read"});
    ASSERT_EQ(read.exit_code, 0) << read.err;
    const auto rops = check_capture(read);
    EXPECT_EQ(rops.at(0x0c), 8) << "READ requests";
    EXPECT_EQ(rops.at(0x0d), 8) << "READ Response First";
    const pcap_run send =
        run_with_pcap(s, "s", {"workload.operation=send", "workload.message_bytes=99"});
    ASSERT_EQ(send.exit_code, 0) << send.err;
    const auto sops = check_capture(send);
    EXPECT_EQ(sops.at(0x04), 8) << "SEND Only, 99 bytes and one pad byte";
}

TEST(OutputsPcap, FaultInjectedFramesAreCapturedAsSent) {
    scratch s;
    // Some frames get a bit flipped on the wire (the receiver drops them on the ICRC and the
    // requester retransmits, some after its ACK timeout); the capture shows them as they left
    // the MAC, with a good ICRC.
    const pcap_run p = run_with_pcap(
        s, "f", {"topology.link.faults.corrupt=0.005", "topology.link.faults.seed=7"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const uint64_t corrupted = p.stats["blocks"]["link.dir0"]["faults_corrupted"].get<uint64_t>() +
                               p.stats["blocks"]["link.dir1"]["faults_corrupted"].get<uint64_t>();
    ASSERT_GT(corrupted, 0u) << "the fault seed hit no frame";
    check_capture(p);
}

TEST(OutputsPcap, TsharkDecodesEveryFrameAsRoce) {
    const std::string tshark = find_tool("tshark");
    if (tshark.empty()) {
        GTEST_SKIP() << "tshark not installed";
    }
    scratch s;
    // Every frame of every operation (READ requests and responses, SEND with padding too).
    for (const char* op : {"read", "send", "write"}) {
        SCOPED_TRACE(op);
        const pcap_run p = run_with_pcap(
            s, op, {std::string("workload.operation=") + op, "workload.message_bytes=3001"});
        ASSERT_EQ(p.exit_code, 0) << p.err;
        const std::string pcap = s.dir + "/" + op + "/wire.pcap";
        const cli_result protos =
            shell(s, quote(tshark) + " -n -r " + quote(pcap) + " -T fields -e frame.protocols");
        ASSERT_EQ(protos.exit_code, 0) << protos.err;
        std::stringstream lines(protos.out);
        std::string line;
        size_t n = 0;
        size_t arps = 0;
        // The InfiniBand dissector hands a SEND's or READ response's payload on to "data"
        // (no upper protocol claims it); WRITE payload and header-only packets stay in it.
        // Before the connection exchange: one ARP request and its reply.
        while (std::getline(lines, line)) {
            arps += line == "eth:ethertype:arp" ? 1 : 0;
            EXPECT_TRUE(line == "eth:ethertype:ip:udp:infiniband" ||
                        line == "eth:ethertype:ip:udp:infiniband:data" ||
                        (line == "eth:ethertype:arp" && n < 2))
                << "frame " << n + 1 << ": " << line;
            ++n;
        }
        EXPECT_EQ(n, p.pcap.records.size());
        EXPECT_EQ(arps, 2u);
        // No malformed packet and no error-level expert info anywhere.
        const cli_result bad = shell(s, quote(tshark) + " -n -r " + quote(pcap) +
                                            " -Y '_ws.malformed || _ws.expert.severity >= error'");
        ASSERT_EQ(bad.exit_code, 0) << bad.err;
        EXPECT_EQ(bad.out, "");
    }
    const pcap_run p = run_with_pcap(s, "t", {});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const std::string pcap = s.dir + "/t/wire.pcap";
    // tshark reads the BTH as the model wrote it: PSNs of one QP's data frames count up by one.
    const cli_result psn = shell(s, quote(tshark) + " -n -r " + quote(pcap) +
                                        " -Y 'infiniband.bth.opcode == 7' -T fields -e "
                                        "infiniband.bth.psn");
    ASSERT_EQ(psn.exit_code, 0) << psn.err;
    std::stringstream ps(psn.out);
    uint64_t a = 0, b = 0, c = 0;
    ps >> a >> b >> c;
    EXPECT_EQ(b, a + 1);
    EXPECT_EQ(c, b + 1);
}

TEST(OutputsPcap, SameConfigGivesTheSameBytes) {
    scratch s;
    const pcap_run a = run_with_pcap(s, "a", {"workload.qps=2"});
    const pcap_run b = run_with_pcap(s, "b", {"workload.qps=2"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    ASSERT_GT(a.bytes.size(), 24u);
    EXPECT_TRUE(a.bytes == b.bytes) << "wire.pcap differs between identical runs";
    // Another payload seed: same frames, other bytes.
    const pcap_run c = run_with_pcap(s, "c", {"workload.qps=2", "workload.seed=5"});
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_EQ(c.bytes.size(), a.bytes.size());
    EXPECT_FALSE(c.bytes == a.bytes);
}

// outputs.pcap_links: one direction of the link only.
TEST(OutputsPcap, OnlyTheNamedLinkDirection) {
    scratch s;
    const pcap_run p = run_with_pcap(s, "d", {"outputs.pcap_links=[\"link.dir1\"]"});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_FALSE(p.pcap.truncated);
    // Node 1 to node 0 only: for an RDMA WRITE, the ACKs, and node 1's side of the connection
    // exchange (CM MADs in UD SEND-only frames to QP 1).
    EXPECT_EQ(p.pcap.records.size(), p.stats["blocks"]["link.dir1"]["frames"].get<uint64_t>());
    ASSERT_GT(p.pcap.records.size(), 0u);
    size_t arps = 0;
    for (const pcap_record& r : p.pcap.records) {
        if (be16(r.data, 12) == 0x0806) {
            ++arps;  // node 1's NIC answering node 0's ARP request
            continue;
        }
        EXPECT_EQ(check_roce_frame(r.data), "");
        EXPECT_TRUE(r.data[42] == 0x11 || r.data[42] == 0x64) << "not an ACK or a CM MAD";
    }
    EXPECT_EQ(arps, 1u);
    // "link": both directions, as with no selection.
    const pcap_run both = run_with_pcap(s, "b", {"outputs.pcap_links=[\"link\"]"});
    ASSERT_EQ(both.exit_code, 0) << both.err;
    EXPECT_EQ(both.pcap.records.size(), both.stats["sim"]["packets"].get<uint64_t>());
}

TEST(OutputsPcap, OffByDefault) {
    scratch s;
    const std::string out = s.dir + "/o";
    const cli_result r = rnicsim(s, short_run(out, {}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(fs::exists(out + "/wire.pcap"));
    EXPECT_FALSE(fs::exists(out + "/trace.json"));
    EXPECT_FALSE(fs::exists(out + "/waves.vcd"));
    EXPECT_EQ(json::parse(read_file(out + "/config.json"))["outputs"]["pcap"], false);
}

}  // namespace
