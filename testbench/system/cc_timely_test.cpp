// SPDX-License-Identifier: Apache-2.0
// TIMELY's RTT samples per segment (rnic.cc.timely.segment_bytes; Mittal et al., SIGCOMM 2015:
// one completion-time RTT per 16-64 KB segment). The transmit engine sends a long SEND/WRITE as
// segments of floor(segment_bytes / path MTU) packets, each asking for an ACK on its last
// packet, and the reaction point takes one RTT sample per ACK. Counted here on the wire (AckReq
// bits and ACK frames, parsed independently of the frame builder) and against the formula, and
// shown to matter: in an incast a long WRITE's rate falls while it is still going out.
#include <cmath>
#include <cstdint>
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
    std::string out;
};

run run_cli(const scratch& s, const std::string& name, const std::vector<std::string>& args) {
    run r;
    r.out = s.dir + "/" + name;
    std::vector<std::string> all = args;
    all.insert(all.begin() + 2, {"--out", r.out});
    static_cast<run_outputs&>(r) = run_and_read(s, r.out, all);
    return r;
}

std::vector<std::string> quickstart_run(const std::vector<std::string>& sets) {
    std::vector<std::string> a = {"run", quickstart(), "--set", "outputs.pcap=true"};
    for (const auto& v : sets) {
        a.push_back("--set");
        a.push_back(v);
    }
    return a;
}

uint64_t stat(const run& r, const std::string& block, const std::string& name) {
    return block_counter(r.stats, block, name);
}

void expect_passed(const run& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(r.stats.contains("result"));
    EXPECT_TRUE(r.stats["result"]["passed"].get<bool>());
    EXPECT_EQ(r.stats["integrity"]["mismatches"].get<uint64_t>(), 0u);
}

// RoCEv2 over IPv4/UDP 4791, untagged: BTH at byte 42 (opcode), AckReq = bit 7 of byte 50.
bool is_roce(const pcap_record& f) {
    return f.data.size() > 54 && be16(f.data, 12) == 0x0800 && f.data[23] == 17 &&
           be16(f.data, 36) == 4791;
}
uint32_t src_ip(const pcap_record& f) {
    return (uint32_t{f.data[26]} << 24) | (uint32_t{f.data[27]} << 16) |
           (uint32_t{f.data[28]} << 8) | f.data[29];
}
constexpr uint32_t NODE0_IP = 0x0A000001;  // quickstart: 10.0.0.1 (the WRITE initiator)
constexpr uint8_t RC_ACK = 0x11;

struct wire_counts {
    uint64_t write_packets = 0;  // node 0 -> node 1 WRITE packets (opcodes 0x06 .. 0x0B)
    uint64_t ack_req = 0;        // of them, with AckReq
    uint64_t acks = 0;           // node 1 -> node 0 Acknowledge frames
};
wire_counts count_wire(const run& r) {
    wire_counts c;
    for (const pcap_record& f : r.pcap.records) {
        if (!is_roce(f)) {
            continue;
        }
        const uint8_t op = f.data[42];
        if (src_ip(f) == NODE0_IP && op >= 0x06 && op <= 0x0B) {
            ++c.write_packets;
            c.ack_req += (f.data[50] & 0x80) != 0 ? 1 : 0;
        } else if (src_ip(f) != NODE0_IP && op == RC_ACK) {
            ++c.acks;
        }
    }
    return c;
}

// N segments -> N AckReqs, N ACKs, N RTT samples. A message of L bytes at path MTU P is
// ceil(L / P) packets; segments are floor(S / P) packets (at least one) from the message's
// start, so it asks for ceil(ceil(L / P) / max(1, floor(S / P))) ACKs; S = 0: one (its last).
TEST(TimelySegments, OneRttSamplePerSegment) {
    constexpr uint64_t L = 200000, P = 1024, M = 5;  // quickstart: WRITE, path MTU 1024, one QP
    scratch s;
    const auto expected = [&](uint64_t seg) -> uint64_t {
        const auto packets = static_cast<uint64_t>(std::ceil(static_cast<double>(L) / P));
        if (seg == 0) {
            return M;
        }
        const uint64_t per = std::max<uint64_t>(1, seg / P);
        return M * static_cast<uint64_t>(std::ceil(static_cast<double>(packets) / per));
    };
    for (const uint64_t seg :
         {uint64_t{0}, uint64_t{16384}, uint64_t{20000}, uint64_t{65536}, uint64_t{300}}) {
        SCOPED_TRACE("segment_bytes " + std::to_string(seg));
        const run r = run_cli(s, "seg" + std::to_string(seg),
                              quickstart_run({"rnic.cc.algorithm=timely",
                                              "rnic.cc.timely.segment_bytes=" + std::to_string(seg),
                                              "workload.message_bytes=" + std::to_string(L),
                                              "workload.messages=" + std::to_string(M)}));
        expect_passed(r);
        const wire_counts w = count_wire(r);
        EXPECT_EQ(w.write_packets, M * ((L + P - 1) / P)) << "no packet lost or resent";
        EXPECT_EQ(w.ack_req, expected(seg));
        EXPECT_EQ(w.acks, expected(seg));
        EXPECT_EQ(stat(r, "node0.nic.cc", "rtt_samples"), expected(seg));
    }
    // 16384 B at 1024: 196 packets in 13 segments (12 x 16 + 4); 20000 B: 19-packet segments,
    // 11 of them; 300 B (below one packet): every packet asks.
    EXPECT_EQ(expected(16384), M * 13);
    EXPECT_EQ(expected(20000), M * 11);
    EXPECT_EQ(expected(300), M * 196);
}

// The key is typed and validated with its JSON path, and an RTL send path (whose descriptor
// pins carry whole messages) refuses segments at config time.
TEST(TimelySegments, ConfigErrors) {
    scratch s;
    const run small =
        run_cli(s, "small",
                quickstart_run({"rnic.cc.algorithm=timely", "rnic.cc.timely.segment_bytes=100"}));
    EXPECT_EQ(small.exit_code, 2);
    EXPECT_NE(small.err.find("rnic.cc.timely.segment_bytes"), std::string::npos) << small.err;
    const run typed = run_cli(
        s, "typed",
        quickstart_run({"rnic.cc.algorithm=timely", "rnic.cc.timely.segment_bytes=\"64k\""}));
    EXPECT_EQ(typed.exit_code, 2);
    EXPECT_NE(typed.err.find("rnic.cc.timely.segment_bytes"), std::string::npos) << typed.err;
    const run rtl = run_cli(
        s, "rtl", quickstart_run({"rnic.cc.algorithm=timely", "rnic.send_path.impl=\"lockstep\""}));
    EXPECT_EQ(rtl.exit_code, 2);
    EXPECT_NE(rtl.err.find("rnic.cc.timely.segment_bytes"), std::string::npos) << rtl.err;
    EXPECT_FALSE(fs::exists(rtl.out + "/stats.json")) << "nothing written";
}

// cc.csv rows: time_ns,node,qpn,rate_mbps,target_mbps,alpha,cnps.
std::vector<std::vector<double>> csv(const std::string& text) {
    std::vector<std::vector<double>> rows;
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
        std::vector<double> v;
        std::istringstream ls(line);
        std::string cell;
        while (std::getline(ls, cell, ',')) {
            v.push_back(cell == "write" ? 0.0 : std::stod(cell));
        }
        rows.push_back(v);
    }
    return rows;
}

// 8:1 incast (configs/fabric/incast_8to1_timely.json: star of 9, 100 Gb/s, TIMELY with T_high
// 30 us) of one 2 MiB WRITE per sender. Alone a WRITE takes ~170 us; eight of them share the
// receiver's link, so each lasts ~1.45 ms and the queue (held by PFC) adds tens of us to the
// RTT within the first segments. With 64 KiB segments every sender gets 32 RTT samples and its
// rate is cut before the first half of its WRITE has gone; with one sample per message
// (segment_bytes 0) the only sample is the ACK of the last packet: no rate change before the
// WRITE has gone out entirely (the behaviour before segments).
TEST(TimelySegments, RateFallsWithinALongMessageInAnIncast) {
    scratch s;
    const auto incast = [&](const std::string& name, uint32_t seg) {
        return run_cli(s, name,
                       {"run", source_dir() + "/configs/fabric/incast_8to1_timely.json", "--set",
                        "workload.messages=1", "--set", "workload.message_bytes=2097152", "--set",
                        "workload.queue_depth=1", "--set",
                        "rnic.cc.timely.segment_bytes=" + std::to_string(seg)});
    };
    for (const uint32_t seg : {65536u, 0u}) {
        SCOPED_TRACE("segment_bytes " + std::to_string(seg));
        const run r = incast("incast" + std::to_string(seg), seg);
        expect_passed(r);
        // flows.csv: flow,src,dst,operation,bytes,messages,start_ns,end_ns,...
        std::map<int, std::pair<double, double>> span;  // sender node -> (start, end) ns
        for (const auto& f : csv(read_file(r.out + "/flows.csv"))) {
            ASSERT_GE(f.size(), 8u);
            span[static_cast<int>(f[1])] = {f[6], f[7]};
        }
        ASSERT_EQ(span.size(), 8u);
        std::map<int, double> first_cut;  // node -> first time its rate went below the line
        for (const auto& row : csv(read_file(r.out + "/cc.csv"))) {
            ASSERT_EQ(row.size(), 7u);
            const int node = static_cast<int>(row[1]);
            if (row[3] < 100000 && first_cut.count(node) == 0) {
                first_cut[node] = row[0];
            }
        }
        for (const auto& [node, se] : span) {
            SCOPED_TRACE("node " + std::to_string(node));
            const double half = se.first + (se.second - se.first) / 2;
            const auto cut = first_cut.find(node);
            if (seg != 0) {
                EXPECT_EQ(stat(r, "node" + std::to_string(node) + ".nic.cc", "rtt_samples"),
                          2097152u / 65536u);
                ASSERT_NE(cut, first_cut.end()) << "the rate never fell";
                EXPECT_LT(cut->second, half) << "rate cut before half of the WRITE went";
            } else {
                EXPECT_EQ(stat(r, "node" + std::to_string(node) + ".nic.cc", "rtt_samples"), 1u);
                EXPECT_TRUE(cut == first_cut.end() || cut->second > half)
                    << "one sample, at the end: " << cut->second;
            }
        }
    }
}

}  // namespace
