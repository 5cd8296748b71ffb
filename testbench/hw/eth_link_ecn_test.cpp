// SPDX-License-Identifier: Apache-2.0
// Ethernet link, faults.ecn_mark: ECT frames leave marked CE with a valid IPv4 header checksum
// (and the ICRC, which masks the TOS byte, still right), non-ECT frames are never touched, the
// fault filters apply, and the marks have their own random stream: setting ecn_mark changes no
// other fault's draws.
#include <cstdint>
#include <set>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

#include "hw/common/sim_context.h"
#include "hw/roce/roce.h"
#include "tlm/ethernet/eth_link.h"

namespace {

using rnic::fabric::eth_frame;
using rnic::fabric::eth_link;
using rnic::fabric::eth_link_config;

struct sink : rnic::fabric::frame_sink_if {
    std::vector<eth_frame> frames;
    void receive_frame(eth_frame&& f) override { frames.push_back(std::move(f)); }
};

// A real RoCEv2 frame (checksums right) with the given TOS and opcode.
eth_frame frame(uint8_t tos, uint8_t opcode, uint64_t flow) {
    rnic::roce::frame_header h;
    h.src_ip = 0x0A000001;
    h.dst_ip = 0x0A000002;
    h.tos = tos;
    h.bth_.opcode = opcode;
    h.bth_.dest_qp = 2;
    std::vector<uint8_t> payload(opcode == rnic::roce::RC_SEND_ONLY ? 64 : 0, 0xA5);
    eth_frame f;
    rnic::roce::build_frame(h, payload.data(), payload.size(), f.data);
    f.flow_id = flow;
    return f;
}

struct bench {
    rnic::hw::sim_context ctx;
    eth_link link;
    sink rx[2];
    bench(const eth_link_config& cfg, const char* name)
        : link(name, cfg, ctx) {
        link.attach(0, &rx[0]);
        link.attach(1, &rx[1]);
    }
};

bool parses(const eth_frame& f) {
    rnic::roce::parsed_frame p;
    return rnic::roce::parse_frame(f.data.data(), f.data.size(), p) ==
           rnic::roce::parse_error::NONE;
}

TEST(EthLinkEcn, MarksEctFramesOnlyWithValidChecksums) {
    eth_link_config c;
    c.faults.ecn_mark = 1.0;
    c.faults.opcode = rnic::roce::RC_SEND_ONLY;  // the filters apply to marking too
    bench b(c, "eth_ecn");
    const std::vector<eth_frame> sent = {
        frame(0x02, rnic::roce::RC_SEND_ONLY, 0),  // ECT(0): marked
        frame(0x01, rnic::roce::RC_SEND_ONLY, 1),  // ECT(1): marked
        frame(0x00, rnic::roce::RC_SEND_ONLY, 2),  // not-ECT: untouched
        frame(0xC0, rnic::roce::RC_SEND_ONLY, 3),  // DSCP 48, not-ECT (a CNP's TOS): untouched
        frame(0x02, rnic::roce::RC_ACK, 4),        // ECT(0), filtered out by opcode: untouched
        frame(0xBA, rnic::roce::RC_SEND_ONLY, 5),  // DSCP 46 + ECT(0): marked, DSCP kept
    };
    sc_core::sc_spawn(
        [&] {
            for (const auto& f : sent) {
                b.link.tx(0).put(eth_frame(f));
            }
        },
        "tx");
    sc_core::sc_start();
    ASSERT_EQ(b.rx[1].frames.size(), sent.size());
    const uint8_t want_tos[] = {0x03, 0x03, 0x00, 0xC0, 0x02, 0xBB};
    for (size_t i = 0; i < sent.size(); ++i) {
        const eth_frame& got = b.rx[1].frames[i];
        EXPECT_EQ(got.data[15], want_tos[i]) << "frame " << i;
        EXPECT_TRUE(parses(got)) << "frame " << i << ": IP checksum or ICRC broken";
        if (want_tos[i] == sent[i].data[15]) {
            EXPECT_EQ(got.data, sent[i].data) << "frame " << i << " changed";
        }
    }
    EXPECT_EQ(b.link.get_stats(0).ecn_marked, 3u);
    EXPECT_EQ(b.ctx.stats.values()["eth_ecn.dir0"]["faults_ecn_marked"], 3u);
}

// p = 0.25 over 2000 ECT frames: about 500 marked (binomial sd ~19, so 400..600 is > 5 sd);
// with drop = 0.3 too, exactly the same frames are dropped as without ecn_mark.
TEST(EthLinkEcn, OwnStreamLeavesOtherFaultsAlone) {
    eth_link_config plain;
    plain.faults.drop = 0.3;
    plain.faults.seed = 7;
    eth_link_config marked = plain;
    marked.faults.ecn_mark = 0.25;
    bench a(plain, "eth_plain");
    bench b(marked, "eth_marked");
    constexpr int N = 2000;
    sc_core::sc_spawn(
        [&] {
            for (int i = 0; i < N; ++i) {
                a.link.tx(0).put(frame(0x02, rnic::roce::RC_SEND_ONLY, i));
                b.link.tx(0).put(frame(0x02, rnic::roce::RC_SEND_ONLY, i));
            }
        },
        "tx");
    sc_core::sc_start();
    std::set<uint64_t> got_a;
    std::set<uint64_t> got_b;
    for (const auto& f : a.rx[1].frames) {
        got_a.insert(f.flow_id);
    }
    uint64_t ce = 0;
    for (const auto& f : b.rx[1].frames) {
        got_b.insert(f.flow_id);
    }
    EXPECT_EQ(got_a, got_b) << "ecn_mark shifted the drop stream";
    EXPECT_GT(got_a.size(), 1200u);
    EXPECT_LT(got_a.size(), 1600u);
    // Marks are drawn for every frame sent (dropped ones included).
    ce = b.link.get_stats(0).ecn_marked;
    EXPECT_GT(ce, 400u);
    EXPECT_LT(ce, 600u);
    uint64_t ce_delivered = 0;
    for (const auto& f : b.rx[1].frames) {
        ce_delivered += (f.data[15] & 3) == 3 ? 1 : 0;
    }
    EXPECT_LE(ce_delivered, ce);
    EXPECT_GT(ce_delivered, 0u);
}

}  // namespace
