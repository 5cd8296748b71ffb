// SPDX-License-Identifier: Apache-2.0
// Unit tests of the MAC's stomp list (hw/send_path/send_path_if.h egress_stomp): exactly the
// registered payload packets get a corrupted ICRC, once each; ACKs/NAKs and other QPs pass intact.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "hw/roce/roce.h"
#include "hw/send_path/send_path_if.h"

namespace {

using namespace rnic;

std::vector<uint8_t> frame(uint8_t opcode, uint32_t qpn, uint32_t psn, size_t payload) {
    roce::frame_header h;
    h.bth_.opcode = opcode;
    h.bth_.dest_qp = qpn;
    h.bth_.psn = psn;
    const std::vector<uint8_t> data(payload, 0);
    std::vector<uint8_t> out;
    roce::build_frame(h, data.data(), data.size(), out);
    return out;
}

bool icrc_good(const std::vector<uint8_t>& f) {
    const uint32_t crc = roce::compute_icrc(f.data(), f.size() - roce::ICRC_BYTES);
    const size_t at = f.size() - roce::ICRC_BYTES;
    return f[at] == (crc & 0xFF) && f[at + 1] == ((crc >> 8) & 0xFF) &&
           f[at + 2] == ((crc >> 16) & 0xFF) && f[at + 3] == (crc >> 24);
}

TEST(EgressStomp, OnlyTheRegisteredPayloadPacketsOnce) {
    hw::egress_stomp s;
    EXPECT_TRUE(s.empty());
    s.add(5, 11, 2);  // PSNs 11 and 12 of QP 5
    EXPECT_FALSE(s.empty());

    auto first = frame(roce::RC_WRITE_FIRST, 5, 10, 256);
    auto ack = frame(roce::RC_ACK, 5, 11, 0);               // same QP and PSN, no payload
    auto other = frame(roce::RC_WRITE_MIDDLE, 6, 11, 256);  // another QP
    auto middle = frame(roce::RC_WRITE_MIDDLE, 5, 11, 256);
    auto last = frame(roce::RC_WRITE_LAST, 5, 12, 100);
    auto again = frame(roce::RC_WRITE_LAST, 5, 12, 100);  // after the range is used up
    for (auto* f : {&first, &ack, &other, &middle, &last}) {
        s.apply(*f);
    }
    EXPECT_TRUE(icrc_good(first));
    EXPECT_TRUE(icrc_good(ack));
    EXPECT_TRUE(icrc_good(other));
    EXPECT_FALSE(icrc_good(middle));
    EXPECT_FALSE(icrc_good(last));
    EXPECT_EQ(s.stomped, 2u);
    EXPECT_TRUE(s.empty());
    s.apply(again);
    EXPECT_TRUE(icrc_good(again));
    EXPECT_EQ(s.stomped, 2u);
    // Only the ICRC changed: the receiver still parses the headers, then drops the frame.
    auto clean = frame(roce::RC_WRITE_MIDDLE, 5, 11, 256);
    ASSERT_EQ(clean.size(), middle.size());
    EXPECT_TRUE(std::equal(clean.begin(), clean.end() - roce::ICRC_BYTES, middle.begin()));
}

TEST(EgressStomp, PsnRangeWrapsAndReadResponsesMatch) {
    hw::egress_stomp s;
    s.add(7, 0xFFFFFF, 2);  // PSNs 0xFFFFFF and 0
    auto a = frame(roce::RC_READ_RESP_MIDDLE, 7, 0xFFFFFF, 256);
    auto b = frame(roce::RC_READ_RESP_LAST, 7, 0, 64);
    s.apply(a);
    s.apply(b);
    EXPECT_FALSE(icrc_good(a));
    EXPECT_FALSE(icrc_good(b));
    EXPECT_TRUE(s.empty());
    s.add(7, 3, 0);  // nothing to stomp: nothing registered
    EXPECT_TRUE(s.empty());
}

}  // namespace
