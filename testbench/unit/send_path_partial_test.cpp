// SPDX-License-Identifier: Apache-2.0
// The send path's descriptor contract, extended for selective repeat (issue 18): a descriptor may
// hold part of a SEND/WRITE message (`starts_message` / `ends_message` false). Its packets must be
// what IBA 9.2 / 9.4 (table 38 opcodes, RETH on WRITE First/Only, ImmDt / IETH on the last packet,
// SE on the last packet of a message, AckReq allowed on any request packet) says the same packets
// of the whole message are: only the opcode class changes with the position in the message.
// Expected values are the IBA opcode numbers written out, not the segmenter's tables.
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

// Builds every packet of `d` as a frame and parses it back (lengths, ICRC): what the wire holds.
std::vector<roce::parsed_frame> frames_of(const tx_descriptor& d) {
    std::vector<roce::parsed_frame> out;
    const std::vector<uint8_t> payload(d.length, 0xAB);
    for (uint32_t i = 0; i < packet_count(d); ++i) {
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
    // Both flags true: First, Middle..., Last; RETH with the message length on the First only;
    // SE and AckReq on the Last only.
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
}

TEST(SendPathPartial, OneMiddlePacketOfAWrite) {
    // Packet 2 of 4, resent alone: a WRITE Middle (no RETH), full path MTU, with AckReq (the
    // resend asks for an answer) and without SE (not the message's last packet).
    tx_descriptor d = write_of(256);
    d.psn = 102;
    d.starts_message = false;
    d.ends_message = false;
    EXPECT_EQ(check_descriptor(d), "");
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
    // Packets 2..3 of a WRITE with immediate: Middle, then Last with Immediate (ImmDt, SE).
    tx_descriptor d = write_of(256 + 10);
    d.psn = 102;
    d.starts_message = false;
    d.with_imm = true;
    d.imm_or_key = 0xCAFE;
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
    // The First packet of a 4-packet WRITE resent alone: RETH DMA length is the message's
    // (IBA 9.4.3: the length of the whole RDMA WRITE), not the descriptor's 256 bytes.
    tx_descriptor d = write_of(256);
    d.ends_message = false;
    d.message_length = 4 * 256;
    const auto f = frames_of(d);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].hdr.bth_.opcode, WRITE_FIRST);
    EXPECT_EQ(f[0].hdr.reth_.dma_length, 4u * 256);
    EXPECT_EQ(f[0].hdr.reth_.va, 0x10000u);
    EXPECT_TRUE(f[0].hdr.bth_.ack_req);
}

TEST(SendPathPartial, SendMiddleAndLast) {
    tx_descriptor d = write_of(2 * 256);
    d.kind = tx_kind::SEND;
    d.starts_message = false;
    d.ends_message = false;
    auto f = frames_of(d);
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].hdr.bth_.opcode, SEND_MIDDLE);
    EXPECT_EQ(f[1].hdr.bth_.opcode, SEND_MIDDLE);
    d.ends_message = true;
    d.with_imm = true;
    f = frames_of(d);
    EXPECT_EQ(f[1].hdr.bth_.opcode, SEND_LAST_IMM);
    d.with_imm = false;
    d.starts_message = true;
    d.length = 100;
    f = frames_of(d);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].hdr.bth_.opcode, SEND_FIRST);  // starts and ends: Only
    d.length = 256;
    d.ends_message = false;
    f = frames_of(d);
    EXPECT_EQ(f[0].hdr.bth_.opcode, SEND_FIRST);
    d.starts_message = false;
    d.ends_message = true;
    f = frames_of(d);
    EXPECT_EQ(f[0].hdr.bth_.opcode, SEND_LAST);
}

TEST(SendPathPartial, Refused) {
    // A run that does not end the message must end on a packet boundary.
    tx_descriptor d = write_of(300);
    d.ends_message = false;
    EXPECT_NE(check_descriptor(d), "");
    d.length = 0;
    EXPECT_NE(check_descriptor(d), "");
    // Only SEND and WRITE messages are ever cut.
    d = write_of(256);
    d.kind = tx_kind::READ_RESPONSE;
    d.starts_message = false;
    EXPECT_NE(check_descriptor(d), "");
    d.kind = tx_kind::READ_REQUEST;
    EXPECT_NE(check_descriptor(d), "");
    // The message cannot be shorter than the part.
    d = write_of(512);
    d.message_length = 256;
    EXPECT_NE(check_descriptor(d), "");
}

}  // namespace
