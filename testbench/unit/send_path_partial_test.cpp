// SPDX-License-Identifier: Apache-2.0
// The send path's descriptor contract for part of a message: a segment (`first_packet`,
// `packets`) of a SEND/WRITE message, the one form that selective repeat's resends, the
// round-robin scheduler's turns and congestion control's ACK-requesting segments all use. Its
// packets must be what IBA 9.2 / 9.4 (table 38 opcodes, RETH on WRITE First/Only, ImmDt / IETH
// on the last packet, SE on the last packet of a message, AckReq allowed on any request packet)
// says the same packets of the whole message are: only AckReq moves, to the segment's last
// packet. Expected values are the IBA opcode numbers written out, not the segmenter's tables.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "hw/roce/roce.h"
#include "hw/send_path/send_path_packets.h"

namespace {

using namespace rnic;
using namespace rnic::hw;

// IBA table 38, RC.
constexpr uint8_t SEND_FIRST = 0x00, SEND_MIDDLE = 0x01, SEND_LAST = 0x02, SEND_LAST_IMM = 0x03;
constexpr uint8_t WRITE_FIRST = 0x06, WRITE_MIDDLE = 0x07, WRITE_LAST = 0x08, WRITE_LAST_IMM = 0x09;

tx_descriptor write_of(uint32_t length) {
    tx_descriptor d;
    d.kind = tx_kind::WRITE;
    d.pmtu = 256;
    d.psn = 100;
    d.length = length;
    d.remote_va = 0x10000;
    d.rkey = 0x1234;
    d.solicited = true;
    return d;
}

tx_descriptor segment_of(tx_descriptor d, uint32_t first, uint32_t packets) {
    d.first_packet = first;
    d.packets = packets;
    return d;
}

// Builds every packet of the descriptor as a frame and parses it back (lengths, ICRC): what the
// wire holds.
std::vector<roce::parsed_frame> frames_of(const tx_descriptor& d) {
    std::vector<roce::parsed_frame> out;
    const std::vector<uint8_t> payload(d.length, 0xAB);
    for (uint32_t i = d.first_packet; i < segment_end(d); ++i) {
        const packet_plan p = plan_packet(d, i);
        std::vector<uint8_t> f;
        roce::build_frame(make_frame_header(d, p), payload.data() + p.payload_offset, p.payload_len,
                          f);
        EXPECT_EQ(f.size(), p.frame_bytes);
        roce::parsed_frame pf;
        EXPECT_EQ(roce::parse_frame(f.data(), f.size(), pf), roce::parse_error::NONE);
        out.push_back(pf);
    }
    return out;
}

TEST(SendPathPartial, WholeMessageIsUnchanged) {
    // first_packet / packets 0: First, Middle..., Last; RETH with the message length on the
    // First only; SE and AckReq on the Last only.
    const auto f = frames_of(write_of(3 * 256 + 10));
    ASSERT_EQ(f.size(), 4u);
    EXPECT_EQ(f[0].hdr.bth_.opcode, WRITE_FIRST);
    EXPECT_EQ(f[0].hdr.reth_.dma_length, 3u * 256 + 10);
    EXPECT_EQ(f[1].hdr.bth_.opcode, WRITE_MIDDLE);
    EXPECT_EQ(f[3].hdr.bth_.opcode, WRITE_LAST);
    for (size_t i = 0; i < f.size(); ++i) {
        EXPECT_EQ(f[i].hdr.bth_.psn, 100 + i);
        EXPECT_EQ(f[i].hdr.bth_.ack_req, i == 3);
        EXPECT_EQ(f[i].hdr.bth_.se, i == 3);
    }
    EXPECT_FALSE(is_segment(write_of(3 * 256 + 10)));
    EXPECT_FALSE(is_segment(segment_of(write_of(3 * 256 + 10), 0, 4)));
}

TEST(SendPathPartial, OneMiddlePacketOfAWrite) {
    // Packet 2 of 4, resent alone: a WRITE Middle (no RETH), full path MTU, PSN 100 + 2, with
    // AckReq (the segment's last packet) and without SE (not the message's last packet).
    const tx_descriptor d = segment_of(write_of(4 * 256), 2, 1);
    EXPECT_EQ(check_descriptor(d), "");
    EXPECT_TRUE(is_segment(d));
    EXPECT_EQ(segment_first_psn(d), 102u);
    EXPECT_EQ(segment_packets(d), 1u);
    EXPECT_EQ(segment_payload_bytes(d), 256u);
    const auto f = frames_of(d);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].hdr.bth_.opcode, WRITE_MIDDLE);
    EXPECT_FALSE(roce::info(f[0].hdr.bth_.opcode).has_reth);
    EXPECT_EQ(f[0].payload_len, 256u);
    EXPECT_EQ(f[0].hdr.bth_.psn, 102u);
    EXPECT_TRUE(f[0].hdr.bth_.ack_req);
    EXPECT_FALSE(f[0].hdr.bth_.se);
}

TEST(SendPathPartial, TailOfAWriteWithImmediate) {
    // Packets 2..3 (packets 0: through the last) of a WRITE with immediate: Middle, then Last
    // with Immediate (ImmDt, SE, the 10 bytes left).
    tx_descriptor d = segment_of(write_of(3 * 256 + 10), 2, 0);
    d.with_imm = true;
    d.imm_or_key = 0xCAFE;
    EXPECT_EQ(segment_payload_bytes(d), 256u + 10);
    const auto f = frames_of(d);
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].hdr.bth_.opcode, WRITE_MIDDLE);
    EXPECT_EQ(f[1].hdr.bth_.opcode, WRITE_LAST_IMM);
    EXPECT_EQ(f[1].hdr.immdt, 0xCAFEu);
    EXPECT_EQ(f[1].payload_len, 10u);
    EXPECT_TRUE(f[1].hdr.bth_.se);
    EXPECT_FALSE(f[0].hdr.bth_.ack_req);
    EXPECT_TRUE(f[1].hdr.bth_.ack_req);
}

TEST(SendPathPartial, FirstPacketAloneCarriesTheWholeMessageLength) {
    // The First packet of a 4-packet WRITE alone: RETH DMA length is the message's (IBA 9.4.3:
    // the length of the whole RDMA WRITE), not the segment's 256 bytes; AckReq on it.
    const auto f = frames_of(segment_of(write_of(4 * 256), 0, 1));
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].hdr.bth_.opcode, WRITE_FIRST);
    EXPECT_EQ(f[0].hdr.reth_.dma_length, 4u * 256);
    EXPECT_EQ(f[0].hdr.reth_.va, 0x10000u);
    EXPECT_TRUE(f[0].hdr.bth_.ack_req);
}

TEST(SendPathPartial, AckReqOnlyWhereTheDescriptorAsksForIt) {
    // A segment with ack_req false (a scheduler turn inside a message) carries no AckReq at all;
    // the segments of a message, each with ack_req, carry it on each one's last packet only.
    tx_descriptor d = segment_of(write_of(6 * 256), 0, 3);
    d.ack_req = false;
    for (const auto& f : frames_of(d)) {
        EXPECT_FALSE(f.hdr.bth_.ack_req);
    }
    std::vector<bool> ack;
    for (uint32_t first = 0; first < 6; first += 2) {
        for (const auto& f : frames_of(segment_of(write_of(6 * 256), first, 2))) {
            ack.push_back(f.hdr.bth_.ack_req);
        }
    }
    EXPECT_EQ(ack, (std::vector<bool>{false, true, false, true, false, true}));
}

TEST(SendPathPartial, SendMiddleAndLast) {
    tx_descriptor m = write_of(4 * 256);
    m.kind = tx_kind::SEND;
    auto f = frames_of(segment_of(m, 1, 2));
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].hdr.bth_.opcode, SEND_MIDDLE);
    EXPECT_EQ(f[1].hdr.bth_.opcode, SEND_MIDDLE);
    m.with_imm = true;
    f = frames_of(segment_of(m, 2, 2));
    EXPECT_EQ(f[1].hdr.bth_.opcode, SEND_LAST_IMM);
    m.with_imm = false;
    f = frames_of(segment_of(m, 0, 1));
    EXPECT_EQ(f[0].hdr.bth_.opcode, SEND_FIRST);
    f = frames_of(segment_of(m, 3, 1));
    EXPECT_EQ(f[0].hdr.bth_.opcode, SEND_LAST);
    m.length = 100;
    f = frames_of(segment_of(m, 0, 1));
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].hdr.bth_.opcode, SEND_FIRST);  // starts and ends the message: Only
}

TEST(SendPathPartial, Refused) {
    // A segment must lie inside its message.
    EXPECT_NE(check_descriptor(segment_of(write_of(300), 2, 0)), "");
    EXPECT_NE(check_descriptor(segment_of(write_of(300), 1, 2)), "");
    EXPECT_EQ(check_descriptor(segment_of(write_of(300), 1, 1)), "");
    // Only messages with payload have packets to cut.
    tx_descriptor d = segment_of(write_of(256), 0, 1);
    d.kind = tx_kind::READ_REQUEST;
    d.packets = 2;
    EXPECT_NE(check_descriptor(d), "");
    d.kind = tx_kind::ACK;
    EXPECT_NE(check_descriptor(d), "");
}

}  // namespace
