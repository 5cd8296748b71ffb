// SPDX-License-Identifier: Apache-2.0
// Unit tests of the RoCEv2 wire format: reference vectors, ICRC, parse round trips and errors.
#include "hw/roce/roce.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hw/send_path/send_path_packets.h"

namespace {

using namespace rnic::roce;

std::vector<uint8_t> from_hex(const std::string& hex) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
        out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    }
    return out;
}

// The three vectors of /work/shared/reference/rocev2.md (Ethernet frame without FCS).
const std::string SEND_ONLY_HEX =
    "02000000000202000000000108004502003c123440004011a527c0a80101c0a80102c00012b7002800000400ffff"
    "0000001180000100000102030405060708090a0b0c0d0e0f4f058350";
const std::string WRITE_ONLY_HEX =
    "020000000002020000000001080045020044123440004011a51fc0a80101c0a80102c00012b7003000000a00ffff"
    "000000128000020000007f000000100000001234000000084142434445464748b3b23a1a";
const std::string ACK_HEX =
    "020000000002020000000001080045020030123440004011a533c0a80101c0a80102c00012b7001c00001100ffff"
    "00000011000001001f000001dab70a97";

// Header fields read off the vectors' hex: 02:..:01 -> 02:..:02, 192.168.1.1 -> 192.168.1.2,
// TOS 0x02, TTL 64, IP id 0x1234, UDP source port 0xC000.
frame_header vector_header(uint8_t op) {
    frame_header h;
    h.dst_mac.b = {0x02, 0, 0, 0, 0, 0x02};
    h.src_mac.b = {0x02, 0, 0, 0, 0, 0x01};
    h.src_ip = 0xC0A80101;
    h.dst_ip = 0xC0A80102;
    h.tos = 0x02;
    h.ttl = 64;
    h.ip_id = 0x1234;
    h.udp_src_port = 0xC000;
    h.bth_.opcode = op;
    return h;
}

std::vector<uint8_t> build(const frame_header& h, const std::vector<uint8_t>& payload) {
    std::vector<uint8_t> out;
    build_frame(h, payload.data(), payload.size(), out);
    return out;
}

std::vector<uint8_t> send_only_frame() {
    frame_header h = vector_header(RC_SEND_ONLY);
    h.bth_.dest_qp = 0x11;
    h.bth_.psn = 0x100;
    h.bth_.ack_req = true;
    std::vector<uint8_t> payload(16);
    for (size_t i = 0; i < payload.size(); ++i) {
        payload[i] = static_cast<uint8_t>(i);
    }
    return build(h, payload);
}

std::vector<uint8_t> write_only_frame() {
    frame_header h = vector_header(RC_WRITE_ONLY);
    h.bth_.dest_qp = 0x12;
    h.bth_.psn = 0x200;
    h.bth_.ack_req = true;
    h.reth_.va = 0x00007f0000001000ull;
    h.reth_.rkey = 0x1234;
    h.reth_.dma_length = 8;
    const std::string s = "ABCDEFGH";
    return build(h, std::vector<uint8_t>(s.begin(), s.end()));
}

std::vector<uint8_t> ack_frame() {
    frame_header h = vector_header(RC_ACK);
    h.bth_.dest_qp = 0x11;
    h.bth_.psn = 0x100;
    h.aeth_.syndrome = AETH_ACK_NO_CREDIT;
    h.aeth_.msn = 1;
    return build(h, {});
}

uint32_t wire_icrc(const std::vector<uint8_t>& f) {
    const size_t n = f.size();
    return uint32_t{f[n - 4]} | (uint32_t{f[n - 3]} << 8) | (uint32_t{f[n - 2]} << 16) |
           (uint32_t{f[n - 1]} << 24);
}

// Test helpers to forge frames: recompute the IPv4 checksum and the ICRC after an edit.
void fix_ip_checksum(std::vector<uint8_t>& f) {
    f[24] = f[25] = 0;
    uint32_t sum = 0;
    for (size_t i = 14; i < 34; i += 2) {
        sum += (uint32_t{f[i]} << 8) | f[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    const uint16_t c = static_cast<uint16_t>(~sum);
    f[24] = static_cast<uint8_t>(c >> 8);
    f[25] = static_cast<uint8_t>(c);
}
void fix_icrc(std::vector<uint8_t>& f) {
    const uint32_t c = compute_icrc(f.data(), f.size() - 4);
    for (int i = 0; i < 4; ++i) {
        f[f.size() - 4 + i] = static_cast<uint8_t>(c >> (8 * i));
    }
}
// Sets IP total length and UDP length from the vector size, then fixes both checksums.
void fix_all(std::vector<uint8_t>& f) {
    const size_t ip_total = f.size() - 14;
    f[16] = static_cast<uint8_t>(ip_total >> 8);
    f[17] = static_cast<uint8_t>(ip_total);
    const size_t udp_len = ip_total - 20;
    f[38] = static_cast<uint8_t>(udp_len >> 8);
    f[39] = static_cast<uint8_t>(udp_len);
    fix_ip_checksum(f);
    fix_icrc(f);
}

parse_error parse(const std::vector<uint8_t>& f) {
    parsed_frame p;
    return parse_frame(f.data(), f.size(), p);
}

// --- reference vectors ------------------------------------------------------------------

TEST(Roce, SendOnlyVectorByteForByte) {
    EXPECT_EQ(send_only_frame(), from_hex(SEND_ONLY_HEX));
}

TEST(Roce, WriteOnlyVectorByteForByte) {
    EXPECT_EQ(write_only_frame(), from_hex(WRITE_ONLY_HEX));
}

TEST(Roce, AckVectorByteForByte) {
    EXPECT_EQ(ack_frame(), from_hex(ACK_HEX));
}

TEST(Roce, IcrcOfVectorsIsLeastSignificantByteFirst) {
    const auto send = from_hex(SEND_ONLY_HEX);
    const auto write = from_hex(WRITE_ONLY_HEX);
    const auto ack = from_hex(ACK_HEX);
    EXPECT_EQ(compute_icrc(send.data(), send.size() - 4), 0x5083054fu);
    EXPECT_EQ(compute_icrc(write.data(), write.size() - 4), 0x1a3ab2b3u);
    EXPECT_EQ(compute_icrc(ack.data(), ack.size() - 4), 0x970ab7dau);
    EXPECT_EQ(wire_icrc(send), 0x5083054fu);
}

TEST(Roce, IcrcIgnoresVariantFields) {
    auto f = from_hex(SEND_ONLY_HEX);
    const uint32_t ref = compute_icrc(f.data(), f.size() - 4);
    // TOS (ECN marking by a switch), TTL, IP checksum, UDP checksum, BTH FECN/BECN byte.
    for (size_t off : {15, 22, 24, 25, 40, 41, 46}) {
        auto g = f;
        g[off] ^= 0xA5;
        EXPECT_EQ(compute_icrc(g.data(), g.size() - 4), ref) << "offset " << off;
    }
    // Lengths, addresses, ports, opcode, payload are covered.
    for (size_t off : {16, 17, 18, 26, 30, 34, 36, 38, 42, 43, 45, 47, 50, 54, 69}) {
        auto g = f;
        g[off] ^= 0x01;
        EXPECT_NE(compute_icrc(g.data(), g.size() - 4), ref) << "offset " << off;
    }
    // Ethernet addresses are not covered.
    auto g = f;
    g[0] ^= 0xFF;
    g[11] ^= 0xFF;
    EXPECT_EQ(compute_icrc(g.data(), g.size() - 4), ref);
}

TEST(Roce, LrhStandInSeed) {
    // The CRC register after the eight 0xFF bytes is 0xDEBB20E3 (zlib reports it inverted).
    const std::vector<uint8_t> eth(14, 0);
    EXPECT_EQ(~compute_icrc(eth.data(), eth.size()), 0xDEBB20E3u);
}

TEST(Roce, ParseVectors) {
    parsed_frame p;
    const auto send = from_hex(SEND_ONLY_HEX);
    ASSERT_EQ(parse_frame(send.data(), send.size(), p), parse_error::NONE);
    EXPECT_EQ(p.hdr.bth_.opcode, RC_SEND_ONLY);
    EXPECT_EQ(p.hdr.bth_.dest_qp, 0x11u);
    EXPECT_EQ(p.hdr.bth_.psn, 0x100u);
    EXPECT_TRUE(p.hdr.bth_.ack_req);
    EXPECT_EQ(p.hdr.bth_.pkey, 0xFFFF);
    EXPECT_EQ(p.hdr.src_ip, 0xC0A80101u);
    EXPECT_EQ(p.hdr.dst_ip, 0xC0A80102u);
    EXPECT_EQ(p.hdr.ip_id, 0x1234);
    EXPECT_EQ(p.hdr.tos, 0x02);
    EXPECT_EQ(p.hdr.ttl, 64);
    EXPECT_EQ(p.hdr.udp_src_port, 0xC000);
    EXPECT_EQ(p.hdr.src_mac.b[5], 0x01);
    EXPECT_EQ(p.hdr.dst_mac.b[5], 0x02);
    EXPECT_EQ(p.payload_offset, 54u);
    ASSERT_EQ(p.payload_len, 16u);
    for (size_t i = 0; i < 16; ++i) {
        EXPECT_EQ(send[p.payload_offset + i], i);
    }

    const auto write = from_hex(WRITE_ONLY_HEX);
    ASSERT_EQ(parse_frame(write.data(), write.size(), p), parse_error::NONE);
    EXPECT_EQ(p.hdr.bth_.opcode, RC_WRITE_ONLY);
    EXPECT_EQ(p.hdr.reth_.va, 0x00007f0000001000ull);
    EXPECT_EQ(p.hdr.reth_.rkey, 0x1234u);
    EXPECT_EQ(p.hdr.reth_.dma_length, 8u);
    EXPECT_EQ(p.payload_offset, 70u);
    EXPECT_EQ(p.payload_len, 8u);

    const auto ack = from_hex(ACK_HEX);
    ASSERT_EQ(parse_frame(ack.data(), ack.size(), p), parse_error::NONE);
    EXPECT_EQ(p.hdr.bth_.opcode, RC_ACK);
    EXPECT_FALSE(p.hdr.bth_.ack_req);
    EXPECT_EQ(p.hdr.aeth_.syndrome, AETH_ACK_NO_CREDIT);
    EXPECT_EQ(p.hdr.aeth_.msn, 1u);
    EXPECT_EQ(p.payload_len, 0u);
}

// --- opcode table -------------------------------------------------------------------------

TEST(Roce, OpcodeTableMatchesIba) {
    struct expect {
        uint8_t op;
        const char* hdrs;  // R=RETH A=AETH I=ImmDt V=IETH P=payload
        char pos;          // F M L O
        size_t ext_bytes;
    };
    const expect table[] = {
        {RC_SEND_FIRST, "P", 'F', 0},
        {RC_SEND_MIDDLE, "P", 'M', 0},
        {RC_SEND_LAST, "P", 'L', 0},
        {RC_SEND_LAST_IMM, "IP", 'L', 4},
        {RC_SEND_ONLY, "P", 'O', 0},
        {RC_SEND_ONLY_IMM, "IP", 'O', 4},
        {RC_WRITE_FIRST, "RP", 'F', 16},
        {RC_WRITE_MIDDLE, "P", 'M', 0},
        {RC_WRITE_LAST, "P", 'L', 0},
        {RC_WRITE_LAST_IMM, "IP", 'L', 4},
        {RC_WRITE_ONLY, "RP", 'O', 16},
        {RC_WRITE_ONLY_IMM, "RIP", 'O', 20},
        {RC_READ_REQUEST, "R", 'O', 16},
        {RC_READ_RESP_FIRST, "AP", 'F', 4},
        {RC_READ_RESP_MIDDLE, "P", 'M', 0},
        {RC_READ_RESP_LAST, "AP", 'L', 4},
        {RC_READ_RESP_ONLY, "AP", 'O', 4},
        {RC_ACK, "A", 'O', 4},
        {RC_SEND_LAST_INV, "VP", 'L', 4},
        {RC_SEND_ONLY_INV, "VP", 'O', 4},
        {CNP, "", 'O', 16},
    };
    std::set<int> known;
    for (const auto& e : table) {
        known.insert(e.op);
        const opcode_info& i = info(e.op);
        const std::string h = e.hdrs;
        SCOPED_TRACE(i.name);
        EXPECT_TRUE(i.valid);
        EXPECT_EQ(i.has_reth, h.find('R') != std::string::npos);
        EXPECT_EQ(i.has_aeth, h.find('A') != std::string::npos);
        EXPECT_EQ(i.has_immdt, h.find('I') != std::string::npos);
        EXPECT_EQ(i.has_ieth, h.find('V') != std::string::npos);
        EXPECT_EQ(i.has_payload, h.find('P') != std::string::npos);
        EXPECT_EQ(i.is_first, e.pos == 'F');
        EXPECT_EQ(i.is_middle, e.pos == 'M');
        EXPECT_EQ(i.is_last, e.pos == 'L');
        EXPECT_EQ(i.is_only, e.pos == 'O');
        EXPECT_EQ(header_bytes(e.op), 54 + e.ext_bytes);
        EXPECT_EQ(frame_bytes(e.op, 0), 58 + e.ext_bytes);
        EXPECT_EQ(frame_bytes(e.op, 5), 58 + e.ext_bytes + 8);
    }
    EXPECT_STREQ(info(RC_WRITE_ONLY_IMM).name, "RC_WRITE_ONLY_IMM");
    for (int op = 0; op < 256; ++op) {
        if (known.count(op) == 0) {
            EXPECT_FALSE(info(static_cast<uint8_t>(op)).valid) << op;
            EXPECT_EQ(header_bytes(static_cast<uint8_t>(op)), 0u) << op;
            EXPECT_EQ(frame_bytes(static_cast<uint8_t>(op), 8), 0u) << op;
        }
    }
}

// --- round trips --------------------------------------------------------------------------

std::vector<uint8_t> valid_opcodes() {
    std::vector<uint8_t> ops;
    for (int op = 0; op < 256; ++op) {
        if (info(static_cast<uint8_t>(op)).valid) {
            ops.push_back(static_cast<uint8_t>(op));
        }
    }
    return ops;
}

// A header with every field set to a distinctive non-default value.
frame_header busy_header(uint8_t op, uint32_t salt) {
    frame_header h;
    h.dst_mac.b = {0x02, 0x11, 0x22, 0x33, 0x44, static_cast<uint8_t>(salt)};
    h.src_mac.b = {0x02, 0xAA, 0xBB, 0xCC, 0xDD, static_cast<uint8_t>(salt >> 8)};
    h.src_ip = 0x0A000001 + salt;
    h.dst_ip = 0x0A0000FE - salt;
    h.tos = static_cast<uint8_t>(0x03 | (salt << 2));  // CE
    h.ttl = static_cast<uint8_t>(1 + salt);
    h.ip_id = static_cast<uint16_t>(0xBEEF ^ salt);
    h.udp_src_port = static_cast<uint16_t>(0xC000 | salt);
    h.bth_.opcode = op;
    h.bth_.se = salt & 1;
    h.bth_.migreq = salt & 2;
    h.bth_.tver = 0;
    h.bth_.pkey = static_cast<uint16_t>(0x8000 | salt);
    h.bth_.fecn = salt & 4;
    h.bth_.becn = salt & 8;
    h.bth_.dest_qp = 0xABCDEF ^ salt;
    h.bth_.ack_req = salt & 16;
    h.bth_.psn = 0xFFFFFF - salt;
    h.reth_.va = 0x123456789ABCDEF0ull + salt;
    h.reth_.rkey = 0xCAFEF00D ^ salt;
    h.reth_.dma_length = 0x10000 + salt;
    h.aeth_.syndrome = static_cast<uint8_t>(0x60 | (salt & 3));
    h.aeth_.msn = 0x00FEDCBA ^ salt;
    h.immdt = 0xDEADBEEF ^ salt;
    h.ieth_rkey = 0x5EED0000 | salt;
    return h;
}

void expect_header_round_trip(const frame_header& in, const frame_header& out, size_t len) {
    const opcode_info& oi = info(in.bth_.opcode);
    EXPECT_EQ(out.dst_mac.b, in.dst_mac.b);
    EXPECT_EQ(out.src_mac.b, in.src_mac.b);
    EXPECT_EQ(out.src_ip, in.src_ip);
    EXPECT_EQ(out.dst_ip, in.dst_ip);
    EXPECT_EQ(out.tos, in.tos);
    EXPECT_EQ(out.ttl, in.ttl);
    EXPECT_EQ(out.ip_id, in.ip_id);
    EXPECT_EQ(out.udp_src_port, in.udp_src_port);
    EXPECT_EQ(out.bth_.opcode, in.bth_.opcode);
    EXPECT_EQ(out.bth_.se, in.bth_.se);
    EXPECT_EQ(out.bth_.migreq, in.bth_.migreq);
    EXPECT_EQ(out.bth_.pad_count, pad_bytes(len));
    EXPECT_EQ(out.bth_.tver, in.bth_.tver);
    EXPECT_EQ(out.bth_.pkey, in.bth_.pkey);
    EXPECT_EQ(out.bth_.fecn, in.bth_.fecn);
    EXPECT_EQ(out.bth_.becn, in.bth_.becn);
    EXPECT_EQ(out.bth_.dest_qp, in.bth_.dest_qp);
    EXPECT_EQ(out.bth_.ack_req, in.bth_.ack_req);
    EXPECT_EQ(out.bth_.psn, in.bth_.psn);
    const frame_header zero;
    EXPECT_EQ(out.reth_.va, oi.has_reth ? in.reth_.va : zero.reth_.va);
    EXPECT_EQ(out.reth_.rkey, oi.has_reth ? in.reth_.rkey : zero.reth_.rkey);
    EXPECT_EQ(out.reth_.dma_length, oi.has_reth ? in.reth_.dma_length : zero.reth_.dma_length);
    EXPECT_EQ(out.aeth_.syndrome, oi.has_aeth ? in.aeth_.syndrome : zero.aeth_.syndrome);
    EXPECT_EQ(out.aeth_.msn, oi.has_aeth ? in.aeth_.msn : zero.aeth_.msn);
    EXPECT_EQ(out.immdt, oi.has_immdt ? in.immdt : zero.immdt);
    EXPECT_EQ(out.ieth_rkey, oi.has_ieth ? in.ieth_rkey : zero.ieth_rkey);
}

TEST(Roce, RoundTripEveryOpcodeAndPadding) {
    std::mt19937 rng(7);
    uint32_t salt = 0;
    for (uint8_t op : valid_opcodes()) {
        const opcode_info& oi = info(op);
        std::vector<size_t> lengths = {0};
        if (oi.has_payload) {
            lengths = {0, 1, 2, 3, 4, 5, 255, 1024, 4093, 4096, 9000};
        }
        for (size_t len : lengths) {
            SCOPED_TRACE(std::string(oi.name) + " len " + std::to_string(len));
            std::vector<uint8_t> payload(len);
            for (auto& b : payload) {
                b = static_cast<uint8_t>(rng());
            }
            const frame_header h = busy_header(op, ++salt);
            const auto f = build(h, payload);
            ASSERT_EQ(f.size(), frame_bytes(op, len));
            // Pad bytes are zero and precede the ICRC.
            const size_t pad = pad_bytes(len);
            EXPECT_EQ((len + pad) % 4, 0u);
            for (size_t i = 0; i < pad; ++i) {
                EXPECT_EQ(f[header_bytes(op) + len + i], 0);
            }
            EXPECT_EQ(compute_icrc(f.data(), f.size() - 4), wire_icrc(f));

            parsed_frame p;
            ASSERT_EQ(parse_frame(f.data(), f.size(), p), parse_error::NONE);
            expect_header_round_trip(h, p.hdr, len);
            EXPECT_EQ(p.payload_offset, header_bytes(op));
            ASSERT_EQ(p.payload_len, len);
            EXPECT_TRUE(std::equal(payload.begin(), payload.end(), f.begin() + p.payload_offset));
        }
    }
}

TEST(Roce, CnpHasSixteenReservedZeroBytes) {
    frame_header h = vector_header(CNP);
    h.bth_.becn = true;
    h.bth_.dest_qp = 0x42;
    const auto f = build(h, {});
    ASSERT_EQ(f.size(), 14u + 20 + 8 + 12 + 16 + 4);
    for (size_t i = 54; i < 70; ++i) {
        EXPECT_EQ(f[i], 0) << i;
    }
    EXPECT_EQ(f[46], 0x40);  // BECN
    parsed_frame p;
    ASSERT_EQ(parse_frame(f.data(), f.size(), p), parse_error::NONE);
    EXPECT_TRUE(p.hdr.bth_.becn);
    EXPECT_EQ(p.hdr.bth_.dest_qp, 0x42u);
    EXPECT_EQ(p.payload_len, 0u);
}

TEST(Roce, BuilderMasksFieldsAndIgnoresGivenPadCount) {
    frame_header h = vector_header(RC_SEND_ONLY);
    h.bth_.psn = 0x1234567;  // 25 bits: wraps to 24
    h.bth_.dest_qp = 0xFF000001;
    h.bth_.pad_count = 3;  // recomputed from the length
    h.bth_.tver = 0x1F;    // 4-bit field
    const auto f = build(h, std::vector<uint8_t>(8, 0xEE));
    parsed_frame p;
    ASSERT_EQ(parse_frame(f.data(), f.size(), p), parse_error::NONE);
    EXPECT_EQ(p.hdr.bth_.psn, 0x234567u);
    EXPECT_EQ(p.hdr.bth_.dest_qp, 0x000001u);
    EXPECT_EQ(p.hdr.bth_.pad_count, 0);
    EXPECT_EQ(p.hdr.bth_.tver, 0x0F);
    EXPECT_EQ(f[20], 0x40);  // DF
    EXPECT_EQ(f[21], 0x00);
    EXPECT_EQ(f[40], 0x00);  // UDP checksum 0
    EXPECT_EQ(f[41], 0x00);
}

TEST(Roce, BuilderAppendsWithoutReallocatingReservedVector) {
    std::vector<uint8_t> out;
    out.reserve(8192);
    const uint8_t* const data = out.data();
    std::vector<uint8_t> payload(1000, 0x5A);
    frame_header h = vector_header(RC_WRITE_FIRST);
    build_frame(h, payload.data(), payload.size(), out);
    const size_t first = out.size();
    h.bth_.opcode = RC_WRITE_LAST;
    h.bth_.psn = 1;
    build_frame(h, payload.data(), 3, out);
    EXPECT_EQ(out.data(), data);  // no reallocation: the builder only grows `out`
    EXPECT_EQ(first, frame_bytes(RC_WRITE_FIRST, 1000));
    EXPECT_EQ(out.size(), first + frame_bytes(RC_WRITE_LAST, 3));
    parsed_frame p;
    ASSERT_EQ(parse_frame(out.data(), first, p), parse_error::NONE);
    EXPECT_EQ(p.payload_len, 1000u);
    ASSERT_EQ(parse_frame(out.data() + first, out.size() - first, p), parse_error::NONE);
    EXPECT_EQ(p.hdr.bth_.opcode, RC_WRITE_LAST);
    EXPECT_EQ(p.hdr.bth_.psn, 1u);
    EXPECT_EQ(p.payload_len, 3u);
}

TEST(Roce, BuilderRejectsInvalidRequests) {
    std::vector<uint8_t> out;
    const uint8_t byte = 1;
    EXPECT_THROW(build_frame(vector_header(0x12), nullptr, 0, out), std::invalid_argument);
    EXPECT_THROW(build_frame(vector_header(0x64), nullptr, 0, out), std::invalid_argument);
    EXPECT_THROW(build_frame(vector_header(RC_ACK), &byte, 1, out), std::invalid_argument);
    EXPECT_THROW(build_frame(vector_header(RC_READ_REQUEST), &byte, 1, out), std::invalid_argument);
    EXPECT_THROW(build_frame(vector_header(CNP), &byte, 1, out), std::invalid_argument);
    // Largest payload that fits the 16-bit IPv4 total length with its pad, and one byte more.
    const size_t max_len = (0xFFFF - (header_bytes(RC_SEND_ONLY) - 14) - 4) & ~size_t{3};
    std::vector<uint8_t> big(max_len + 1, 0x77);
    EXPECT_THROW(build_frame(vector_header(RC_SEND_ONLY), big.data(), big.size(), out),
                 std::length_error);
    EXPECT_TRUE(out.empty());
    build_frame(vector_header(RC_SEND_ONLY), big.data(), max_len, out);
    parsed_frame p;
    ASSERT_EQ(parse_frame(out.data(), out.size(), p), parse_error::NONE);
    EXPECT_EQ(p.payload_len, max_len);
}

// --- parse errors -------------------------------------------------------------------------

TEST(Roce, ParseTooShortAndNotIpv4) {
    const auto f = send_only_frame();
    parsed_frame p;
    EXPECT_EQ(parse_frame(nullptr, 0, p), parse_error::TOO_SHORT);
    EXPECT_EQ(parse_frame(f.data(), 0, p), parse_error::TOO_SHORT);
    EXPECT_EQ(parse_frame(f.data(), 13, p), parse_error::TOO_SHORT);
    EXPECT_EQ(parse_frame(f.data(), 33, p), parse_error::TOO_SHORT);
    EXPECT_EQ(parse_frame(f.data(), 41, p), parse_error::TOO_SHORT);

    auto g = f;
    g[12] = 0x86;  // IPv6 EtherType
    g[13] = 0xDD;
    EXPECT_EQ(parse(g), parse_error::NOT_IPV4);
    g = f;
    g[13] = 0x01;
    EXPECT_EQ(parse(g), parse_error::NOT_IPV4);
    g = f;
    g[14] = 0x65;  // IP version 6
    fix_ip_checksum(g);
    EXPECT_EQ(parse(g), parse_error::NOT_IPV4);
}

TEST(Roce, ParseBadIpHeaderAndChecksum) {
    const auto f = send_only_frame();
    auto g = f;
    g[14] = 0x46;  // IHL 6: options are not modelled
    fix_ip_checksum(g);
    EXPECT_EQ(parse(g), parse_error::BAD_IP_HEADER);
    g = f;
    g[14] = 0x44;  // IHL 4: impossible
    fix_ip_checksum(g);
    EXPECT_EQ(parse(g), parse_error::BAD_IP_HEADER);
    g = f;
    g[20] = 0x20;  // MF
    fix_ip_checksum(g);
    EXPECT_EQ(parse(g), parse_error::BAD_IP_HEADER);
    g = f;
    g[21] = 0x08;  // fragment offset
    fix_ip_checksum(g);
    EXPECT_EQ(parse(g), parse_error::BAD_IP_HEADER);

    g = f;
    g[25] ^= 0x01;
    EXPECT_EQ(parse(g), parse_error::BAD_IP_CHECKSUM);
    g = f;
    g[22] = 63;  // TTL changed without fixing the checksum
    EXPECT_EQ(parse(g), parse_error::BAD_IP_CHECKSUM);
    g[22] = 63;  // ... and with: a router decrementing TTL keeps the ICRC valid
    fix_ip_checksum(g);
    EXPECT_EQ(parse(g), parse_error::NONE);
}

TEST(Roce, ParseNotUdpAndNotRocePort) {
    const auto f = send_only_frame();
    auto g = f;
    g[23] = 6;  // TCP
    fix_ip_checksum(g);
    EXPECT_EQ(parse(g), parse_error::NOT_UDP);
    g = f;
    g[37] ^= 0x01;  // dst port 4790
    EXPECT_EQ(parse(g), parse_error::NOT_ROCE_PORT);
    g = f;
    g[36] = 0;  // the source port is entropy only
    g[37] = 53;
    EXPECT_EQ(parse(g), parse_error::NOT_ROCE_PORT);
}

TEST(Roce, ParseBadLength) {
    const auto f = send_only_frame();
    // IP total length larger than the frame.
    auto g = f;
    g[17] += 4;
    fix_ip_checksum(g);
    EXPECT_EQ(parse(g), parse_error::BAD_LENGTH);
    // UDP length disagrees with the IP total length.
    g = f;
    g[39] -= 4;
    fix_icrc(g);
    EXPECT_EQ(parse(g), parse_error::BAD_LENGTH);
    // IP total length too small for UDP + BTH + ICRC.
    g = f;
    g.resize(14 + 40);
    fix_all(g);
    EXPECT_EQ(parse(g), parse_error::BAD_LENGTH);
    // An ACK carrying four bytes of "payload".
    g = ack_frame();
    g.insert(g.end() - 4, {1, 2, 3, 4});
    fix_all(g);
    EXPECT_EQ(parse(g), parse_error::BAD_LENGTH);
    // Opcode headers longer than the packet: an ACK relabelled as WRITE Only (needs RETH).
    g = ack_frame();
    g[42] = RC_WRITE_ONLY;
    fix_icrc(g);
    EXPECT_EQ(parse(g), parse_error::BAD_LENGTH);
    // The frame itself cut short of the IP total length.
    g = f;
    g.pop_back();
    EXPECT_EQ(parse(g), parse_error::BAD_LENGTH);
}

TEST(Roce, ParseUnknownOpcodeAndBadIcrc) {
    const auto f = send_only_frame();
    for (uint8_t op : {0x12, 0x13, 0x18, 0x24, 0x64, 0x80, 0xFF}) {
        auto g = f;
        g[42] = op;
        fix_icrc(g);
        EXPECT_EQ(parse(g), parse_error::UNKNOWN_OPCODE) << int(op);
    }
    for (size_t i = 1; i <= 4; ++i) {
        auto g = f;
        g[g.size() - i] ^= 0x80;
        EXPECT_EQ(parse(g), parse_error::BAD_ICRC) << i;
    }
    auto g = f;
    g[60] ^= 0x01;  // payload byte
    EXPECT_EQ(parse(g), parse_error::BAD_ICRC);
    g = f;
    g[42] = 0x12;  // opcode corrupted in flight: the ICRC catches it first
    EXPECT_EQ(parse(g), parse_error::BAD_ICRC);
}

TEST(Roce, ParseBadPad) {
    // Pad count larger than payload + pad.
    frame_header h = vector_header(RC_SEND_ONLY);
    auto g = build(h, {});
    g[43] |= 0x30;
    fix_icrc(g);
    EXPECT_EQ(parse(g), parse_error::BAD_PAD);
    // Pad count on an opcode without payload.
    g = ack_frame();
    g[43] |= 0x10;
    fix_icrc(g);
    EXPECT_EQ(parse(g), parse_error::BAD_PAD);
    // Payload + pad not a multiple of four.
    g = build(h, {1, 2, 3, 4});
    g.insert(g.end() - 4, 5);
    fix_all(g);
    EXPECT_EQ(parse(g), parse_error::BAD_PAD);
    // A consistent pad count change is accepted and moves the payload length.
    g = build(h, {1, 2, 3, 4});
    g[43] |= 0x20;
    fix_icrc(g);
    parsed_frame p;
    ASSERT_EQ(parse_frame(g.data(), g.size(), p), parse_error::NONE);
    EXPECT_EQ(p.payload_len, 2u);
}

TEST(Roce, ParseIgnoresEthernetPadding) {
    // A zero-length SEND Only is 58 bytes; the MAC pads it to the 60-byte minimum.
    auto f = build(vector_header(RC_SEND_ONLY), {});
    ASSERT_EQ(f.size(), 58u);
    f.push_back(0);
    f.push_back(0);
    parsed_frame p;
    ASSERT_EQ(parse_frame(f.data(), f.size(), p), parse_error::NONE);
    EXPECT_EQ(p.payload_len, 0u);
    EXPECT_EQ(p.payload_offset, 54u);
}

TEST(Roce, ToStringNamesEveryError) {
    const parse_error all[] = {
        parse_error::NONE,          parse_error::TOO_SHORT,       parse_error::NOT_IPV4,
        parse_error::BAD_IP_HEADER, parse_error::BAD_IP_CHECKSUM, parse_error::NOT_UDP,
        parse_error::NOT_ROCE_PORT, parse_error::BAD_LENGTH,      parse_error::UNKNOWN_OPCODE,
        parse_error::BAD_ICRC,      parse_error::BAD_PAD};
    std::set<std::string> names;
    for (parse_error e : all) {
        names.insert(to_string(e));
    }
    EXPECT_EQ(names.size(), std::size(all));
    EXPECT_STREQ(to_string(parse_error::BAD_ICRC), "BAD_ICRC");
}

// --- robustness ---------------------------------------------------------------------------

std::vector<std::vector<uint8_t>> sample_frames() {
    std::vector<std::vector<uint8_t>> frames = {send_only_frame(), write_only_frame(), ack_frame()};
    std::vector<uint8_t> payload(37, 0xC3);
    for (uint8_t op :
         {RC_WRITE_ONLY_IMM, RC_READ_REQUEST, RC_READ_RESP_LAST, RC_SEND_ONLY_INV, CNP}) {
        const auto& oi = info(op);
        frames.push_back(
            build(busy_header(op, 3), oi.has_payload ? payload : std::vector<uint8_t>{}));
    }
    return frames;
}

TEST(Roce, EveryTruncationIsAnError) {
    for (const auto& f : sample_frames()) {
        for (size_t n = 0; n < f.size(); ++n) {
            // Exact-size heap copy, so a sanitizer build catches any read past the end.
            std::unique_ptr<uint8_t[]> buf(new uint8_t[n == 0 ? 1 : n]);
            std::copy(f.begin(), f.begin() + n, buf.get());
            parsed_frame p;
            EXPECT_NE(parse_frame(buf.get(), n, p), parse_error::NONE)
                << "opcode " << int(f[42]) << " truncated to " << n;
        }
    }
}

TEST(Roce, BitFlipsNeverPassWithWrongIcrc) {
    // Fields the ICRC does not cover, and nothing else checks: Ethernet addresses, UDP
    // checksum, BTH FECN/BECN/reserved byte. A flip anywhere else must be rejected.
    std::set<size_t> uncovered = {40, 41, 46};
    for (size_t i = 0; i < 12; ++i) {
        uncovered.insert(i);
    }
    for (const auto& f : sample_frames()) {
        size_t accepted = 0;
        for (size_t i = 0; i < f.size(); ++i) {
            for (int bit = 0; bit < 8; ++bit) {
                auto g = f;
                g[i] ^= static_cast<uint8_t>(1u << bit);
                parsed_frame p;
                const parse_error e = parse_frame(g.data(), g.size(), p);
                if (e == parse_error::NONE) {
                    ++accepted;
                    EXPECT_TRUE(uncovered.count(i)) << "byte " << i << " bit " << bit;
                    EXPECT_EQ(compute_icrc(g.data(), g.size() - 4), wire_icrc(g));
                }
            }
        }
        EXPECT_EQ(accepted, uncovered.size() * 8) << "opcode " << int(f[42]);
    }
}

TEST(Roce, RandomCorruptionNeverAcceptsBadIcrc) {
    std::mt19937 rng(12345);
    const auto frames = sample_frames();
    size_t accepted = 0;
    for (int iter = 0; iter < 100000; ++iter) {
        auto g = frames[rng() % frames.size()];
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < edits; ++k) {
            g[rng() % g.size()] = static_cast<uint8_t>(rng());
        }
        if (rng() % 4 == 0) {
            g.resize(rng() % (g.size() + 1));
        }
        parsed_frame p;
        if (parse_frame(g.data(), g.size(), p) == parse_error::NONE) {
            ++accepted;
            const size_t ip_total = (size_t{g[16]} << 8) | g[17];
            std::vector<uint8_t> pkt(g.begin(), g.begin() + 14 + ip_total);
            EXPECT_EQ(compute_icrc(pkt.data(), pkt.size() - 4), wire_icrc(pkt));
            EXPECT_LE(p.payload_offset + p.payload_len, g.size());
        }
    }
    EXPECT_GT(accepted, 0u);  // edits that hit only uncovered bytes still parse
}

// --- wire occupancy -----------------------------------------------------------------------

TEST(Roce, WireBytesCountFcsPreambleGapAndMinimumSize) {
    EXPECT_EQ(wire_bytes(0), 84u);
    EXPECT_EQ(wire_bytes(58), 84u);  // zero-length SEND Only, padded to 64 B with FCS
    EXPECT_EQ(wire_bytes(60), 84u);
    EXPECT_EQ(wire_bytes(61), 85u);
    EXPECT_EQ(wire_bytes(1514), 1538u);
    EXPECT_EQ(wire_bytes(frame_bytes(RC_WRITE_MIDDLE, 4096)), 58u + 4096 + 24);
    EXPECT_EQ(wire_bytes(frame_bytes(RC_WRITE_ONLY, 4096)), 74u + 4096 + 24);
}

}  // namespace

// The RoCEv2 UDP source port of a QP pair, as Linux derives it (include/rdma/ib_verbs.h:
// rdma_calc_flow_label, rdma_flow_label_to_udp_sport; also irdma's kc_ copies). Expected values
// worked by hand from those definitions: v = lqpn * rqpn; v ^= v >> 20; v ^= v >> 40;
// fl = v & 0xFFFFF; port = 0xC000 | ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)).
TEST(UdpSourcePort, FlowLabelAsLinux) {
    using rnic::hw::rdma_calc_flow_label;
    using rnic::hw::rdma_flow_label_to_udp_sport;
    using rnic::hw::udp_source_port;
    EXPECT_EQ(rdma_calc_flow_label(2, 2), 0x4u);
    EXPECT_EQ(udp_source_port(2, 2), 0xC004);
    EXPECT_EQ(udp_source_port(0x11, 0x22), 0xC242);
    // 0x123456 x 0x654321 = 0x7336BF94116; folded: 0xA77AE; port 0xC000 | (0x37AE ^ 0x29).
    EXPECT_EQ(rdma_calc_flow_label(0x123456, 0x654321), 0xA77AEu);
    EXPECT_EQ(rdma_flow_label_to_udp_sport(0xA77AE), 0xF787);
    EXPECT_EQ(udp_source_port(0xFFFFFF, 0xFFFFFF), 0xFF21);
    // Symmetric: both directions of a connection hash alike.
    EXPECT_EQ(udp_source_port(5, 9), udp_source_port(9, 5));
    // QPs numbered alike at both ends (i <-> i) get a port each; the former XOR rule gave all
    // of them 0xC000.
    std::set<uint16_t> ports;
    for (uint32_t q = 2; q < 10; ++q) {
        ports.insert(udp_source_port(q, q));
        EXPECT_EQ(rnic::hw::udp_source_port_qpn_xor(q, q), 0xC000);
        EXPECT_GE(udp_source_port(q, q), 0xC000);
    }
    EXPECT_EQ(ports.size(), 8u);
}
