// SPDX-License-Identifier: Apache-2.0
// The shared protocol constants and helpers (hw/roce/protocol.h, hw/common/numeric.h) against
// their sources: IBA 24-bit PSN arithmetic and AETH syndromes (tables 44/45), the RFC 1071
// checksum of a published IPv4 header, splitmix64's reference outputs, the nearest-rank
// percentile's textbook example.
#include "hw/roce/protocol.h"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "hw/common/numeric.h"

namespace {

using namespace rnic::roce;

TEST(Protocol, PsnArithmeticWrapsAt24Bits) {
    EXPECT_EQ(psn_add(0xFFFFFE, 3), 1u);
    EXPECT_EQ(psn_add(5, 0), 5u);
    EXPECT_EQ(psn_diff(1, 0xFFFFFF), 2u);
    EXPECT_EQ(psn_diff(0xFFFFFF, 1), 0xFFFFFEu);
    // a <= b when b is less than half the space (2^23) ahead of a, across the wrap too.
    EXPECT_TRUE(psn_le(7, 7));
    EXPECT_TRUE(psn_le(0xFFFFFF, 0));
    EXPECT_FALSE(psn_le(0, 0xFFFFFF));
    EXPECT_TRUE(psn_le(0, 0x7FFFFF));
    EXPECT_FALSE(psn_le(0, 0x800000));
    EXPECT_TRUE(psn_in(0, 0xFFFFF0, 0x10));
    EXPECT_FALSE(psn_in(0x11, 0xFFFFF0, 0x10));
    EXPECT_FALSE(psn_in(0xFFFFEF, 0xFFFFF0, 0x10));
}

TEST(Protocol, PacketsOfAMessage) {
    EXPECT_EQ(packets_of(0, 1024), 1u);  // a zero-length message takes one PSN
    EXPECT_EQ(packets_of(1, 1024), 1u);
    EXPECT_EQ(packets_of(1024, 1024), 1u);
    EXPECT_EQ(packets_of(1025, 1024), 2u);
    EXPECT_EQ(packets_of(65536, 4096), 16u);
}

TEST(Protocol, AethSyndromesFollowIbaTable44) {
    EXPECT_TRUE(aeth_is_ack(AETH_ACK_NO_CREDIT));
    EXPECT_FALSE(aeth_is_rnr_nak(AETH_ACK_NO_CREDIT));
    EXPECT_TRUE(aeth_is_rnr_nak(AETH_TYPE_RNR_NAK | 14));
    for (uint8_t nak :
         {AETH_NAK_PSN_SEQ_ERROR, AETH_NAK_INVALID_REQUEST, AETH_NAK_REMOTE_ACCESS_ERROR,
          AETH_NAK_REMOTE_OP_ERROR, AETH_NAK_SELECTIVE}) {
        EXPECT_EQ(nak & AETH_TYPE_MASK, AETH_TYPE_NAK) << int(nak);
        EXPECT_FALSE(aeth_is_ack(nak));
        EXPECT_FALSE(aeth_is_rnr_nak(nak));
    }
    EXPECT_EQ(AETH_NAK_REMOTE_ACCESS_ERROR & 0x1F, 2);
    // Table 45: code 0 is the longest delay, 1 the shortest; 14 is 1.28 ms.
    EXPECT_DOUBLE_EQ(RNR_TIMER_MS[0], 655.36);
    EXPECT_DOUBLE_EQ(RNR_TIMER_MS[1], 0.01);
    EXPECT_DOUBLE_EQ(RNR_TIMER_MS[14], 1.28);
    EXPECT_DOUBLE_EQ(RNR_TIMER_MS[31], 491.52);
}

TEST(Protocol, Ipv4ChecksumOfAPublishedHeader) {
    // 45 00 00 73 00 00 40 00 40 11 [b8 61] c0 a8 00 01 c0 a8 00 c7: checksum 0xB861
    // (the worked example of the IPv4 header checksum, RFC 1071 arithmetic).
    uint8_t ip[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                      0xB8, 0x61, 0xC0, 0xA8, 0x00, 0x01, 0xC0, 0xA8, 0x00, 0xC7};
    EXPECT_EQ(ipv4_checksum(ip), 0xB861);  // the field's own value does not count
    EXPECT_TRUE(ipv4_checksum_ok(ip));
    EXPECT_EQ(ipv4_fold(ip), 0xFFFF);
    ip[11] ^= 1;
    EXPECT_FALSE(ipv4_checksum_ok(ip));
    EXPECT_EQ(ipv4_checksum(ip), 0xB861);
    ip[10] = ip[11] = 0;
    EXPECT_EQ(static_cast<uint16_t>(~ipv4_fold(ip)), 0xB861);
    // With options (IHL 6): the extra word is summed too.
    uint8_t opt[24] = {0x46, 0x00, 0x00, 0x18, 0,    0, 0, 0, 0x40, 0x11, 0,    0,
                       0x0A, 0,    0,    1,    0x0A, 0, 0, 2, 0x01, 0x02, 0x03, 0x04};
    const uint16_t c = ipv4_checksum(opt, 24);
    opt[10] = static_cast<uint8_t>(c >> 8);
    opt[11] = static_cast<uint8_t>(c);
    EXPECT_TRUE(ipv4_checksum_ok(opt, 24));
    EXPECT_FALSE(ipv4_checksum_ok(opt, 20));
}

TEST(Protocol, Ipv4ChecksumEqualsTheBigEndianWordSumOfRfc1071) {
    // RFC 1071's sum as the RFC writes it (16-bit big-endian words, end-around carry), here,
    // against the header helpers on random headers of every IHL, all-zero and all-ones bytes
    // included (the sums whose fold is 0 or 0xFFFF).
    auto rfc1071 = [](const uint8_t* ip, size_t bytes, bool skip_field) {
        uint32_t sum = 0;
        for (size_t i = 0; i < bytes; i += 2) {
            if (!(skip_field && i == 10)) {
                sum += static_cast<uint32_t>(ip[i] << 8 | ip[i + 1]);
            }
        }
        while ((sum >> 16) != 0) {
            sum = (sum & 0xFFFF) + (sum >> 16);
        }
        return static_cast<uint16_t>(sum);
    };
    std::mt19937 rng(1071);
    uint8_t ip[60];
    for (int round = 0; round < 20000; ++round) {
        const size_t bytes = 4 * (5 + round % 11);  // IHL 5 .. 15
        const int kind = round % 7;
        for (size_t i = 0; i < bytes; ++i) {
            ip[i] = kind == 0 ? 0 : kind == 1 ? 0xFF : static_cast<uint8_t>(rng());
        }
        ASSERT_EQ(ipv4_fold(ip, bytes), rfc1071(ip, bytes, false)) << "round " << round;
        ASSERT_EQ(ipv4_checksum(ip, bytes), static_cast<uint16_t>(~rfc1071(ip, bytes, true)))
            << "round " << round;
    }
}

TEST(Numeric, Splitmix64MatchesTheReferenceSequence) {
    // Vigna's splitmix64.c seeded with 0: the first outputs of next().
    EXPECT_EQ(rnic::splitmix64(0), 0xE220A8397B1DCDAFull);
    EXPECT_EQ(rnic::splitmix64(rnic::SPLITMIX64_GAMMA), 0x6E789E6AA1B965F4ull);
    EXPECT_EQ(rnic::splitmix64(2 * rnic::SPLITMIX64_GAMMA), 0x06C45D188009454Full);
}

TEST(Numeric, NearestRankPercentile) {
    // The textbook example: {15, 20, 35, 40, 50}: P5 = 15, P30 = 20, P40 = 20, P50 = 35,
    // P100 = 50 (rank ceil(p * n)).
    const std::vector<int> v = {15, 20, 35, 40, 50};
    EXPECT_EQ(rnic::nearest_rank(v, 0.05), 15);
    EXPECT_EQ(rnic::nearest_rank(v, 0.30), 20);
    EXPECT_EQ(rnic::nearest_rank(v, 0.40), 20);
    EXPECT_EQ(rnic::nearest_rank(v, 0.50), 35);
    EXPECT_EQ(rnic::nearest_rank(v, 1.00), 50);
    const std::vector<double> one = {7.5};
    EXPECT_EQ(rnic::nearest_rank(one, 0.99), 7.5);
}

}  // namespace
