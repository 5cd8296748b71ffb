// SPDX-License-Identifier: Apache-2.0
// IBA / RoCEv2 protocol constants and the small helpers every block that speaks the protocol
// needs: 24-bit PSN serial arithmetic, packets per message, AETH syndromes (and the RNR NAK timer
// table), the IPv4 header checksum. Header only, no SystemC: the NIC blocks (hw/), the switch and
// the link (tlm/) and the benches share it. Sources: IBA Vol 1 (9.7 reliable service, 9.7.5.1
// AETH, table 45 RNR timer), RFC 1071 / RFC 791 (checksum), /work/shared/reference/rocev2.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rnic::roce {

// --- PSNs and QP numbers are 24 bits (IBA 9.7.1: PSN arithmetic is modulo 2^24) ---
constexpr uint32_t PSN_MASK = 0xFFFFFF;
constexpr uint32_t QPN_MASK = 0xFFFFFF;
// Half the PSN space: b is "after" a when (b - a) mod 2^24 is below it (IBA 9.7.5.1.2: the
// responder's valid window is half the space ahead of the expected PSN).
constexpr uint32_t HALF_PSN = 0x800000;

constexpr uint32_t psn_add(uint32_t psn, uint32_t n) {
    return (psn + n) & PSN_MASK;
}
// (a - b) mod 2^24: how far a is past b.
constexpr uint32_t psn_diff(uint32_t a, uint32_t b) {
    return (a - b) & PSN_MASK;
}
// a <= b in 24-bit serial arithmetic.
constexpr bool psn_le(uint32_t a, uint32_t b) {
    return psn_diff(b, a) < HALF_PSN;
}
// first <= psn <= last in 24-bit serial arithmetic.
constexpr bool psn_in(uint32_t psn, uint32_t first, uint32_t last) {
    return psn_le(first, psn) && psn_le(psn, last);
}
// PSNs a message of `len` bytes takes at path MTU `pmtu` (a zero-length message takes one).
constexpr uint32_t packets_of(uint32_t len, uint32_t pmtu) {
    return len == 0 ? 1 : (len + pmtu - 1) / pmtu;
}

// --- AETH syndromes (IBA 9.7.5.1, table 44): bits 6:5 select ACK / RNR NAK / NAK ---
constexpr uint8_t AETH_ACK_NO_CREDIT = 0x1F;  // ACK, credit count "invalid"
constexpr uint8_t AETH_TYPE_MASK = 0x60;
constexpr uint8_t AETH_TYPE_ACK = 0x00;
constexpr uint8_t AETH_TYPE_RNR_NAK = 0x20;  // low 5 bits: the RNR NAK timer code (table 45)
constexpr uint8_t AETH_TYPE_NAK = 0x60;
constexpr uint8_t AETH_NAK_PSN_SEQ_ERROR = 0x60;
constexpr uint8_t AETH_NAK_INVALID_REQUEST = 0x61;
constexpr uint8_t AETH_NAK_REMOTE_ACCESS_ERROR = 0x62;
constexpr uint8_t AETH_NAK_REMOTE_OP_ERROR = 0x63;
// Selective repeat's NAK (IRN, rnic.transport.recovery selective_repeat): resend only the
// packet at this PSN. A code the IBA reserves (0x65..0x7F): both ends must run selective repeat.
constexpr uint8_t AETH_NAK_SELECTIVE = 0x65;

constexpr bool aeth_is_ack(uint8_t syndrome) {
    return (syndrome & AETH_TYPE_MASK) == AETH_TYPE_ACK;
}
constexpr bool aeth_is_rnr_nak(uint8_t syndrome) {
    return (syndrome & AETH_TYPE_MASK) == AETH_TYPE_RNR_NAK;
}

// IBA table 45: RNR NAK timer field -> minimum delay, ms.
constexpr double RNR_TIMER_MS[32] = {655.36, 0.01,  0.02,  0.03,   0.04,   0.06,   0.08,   0.12,
                                     0.16,   0.24,  0.32,  0.48,   0.64,   0.96,   1.28,   1.92,
                                     2.56,   3.84,  5.12,  7.68,   10.24,  15.36,  20.48,  30.72,
                                     40.96,  61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52};

// --- IPv4 header checksum (RFC 1071 one's complement sum, RFC 791) ---
// The folded one's complement sum of the header's 16-bit words (`bytes`: IHL x 4), the
// checksum field included as it stands.
//
// Summed four bytes at a time in host order (RFC 1071 section 2(B): the one's complement sum
// does not depend on byte order; the folded result is swapped back): the same value as a sum of
// big-endian 16-bit words, four times fewer steps. `bytes` is even (an IPv4 header's IHL x 4).
namespace detail {
// The integer sum of the header's 32-bit words as loaded (host order); `skip_checksum`: less
// the checksum field (bytes 10-11, the upper half of the third word on a little-endian host).
inline uint64_t ipv4_word_sum(const uint8_t* ip, size_t bytes, bool skip_checksum) {
    uint64_t sum = 0;
    size_t i = 0;
    for (; i + 4 <= bytes; i += 4) {
        uint32_t w;
        std::memcpy(&w, ip + i, 4);
        sum += w;
    }
    if (i < bytes) {  // a last 16-bit word
        uint16_t h;
        std::memcpy(&h, ip + i, 2);
        sum += h;
    }
    if (skip_checksum && bytes >= 12) {
        // The field's two bytes where they sit in the word loaded from bytes 8-11: subtracted,
        // they leave the integer sum of every other byte pair exactly (nothing is folded yet).
        uint32_t field = 0;
        std::memcpy(reinterpret_cast<uint8_t*>(&field) + 2, ip + 10, 2);
        sum -= field;
    }
    return sum;
}
// One's complement fold of an integer sum to 16 bits, swapped to network order: congruent to
// the big-endian word sum modulo 0xFFFF and 0 only for an all-zero sum, as the plain fold.
inline uint16_t ipv4_fold_sum(uint64_t sum) {
    while ((sum >> 16) != 0) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    sum = ((sum & 0xFF) << 8) | (sum >> 8);
#endif
    return static_cast<uint16_t>(sum);
}
}  // namespace detail

inline uint16_t ipv4_fold(const uint8_t* ip, size_t bytes = 20) {
    return detail::ipv4_fold_sum(detail::ipv4_word_sum(ip, bytes, false));
}
// The checksum to store in bytes 10-11: the complement of the sum of every other word (the
// field's current value is ignored).
inline uint16_t ipv4_checksum(const uint8_t* ip, size_t bytes = 20) {
    return static_cast<uint16_t>(~detail::ipv4_fold_sum(detail::ipv4_word_sum(ip, bytes, true)));
}
// A received header's checksum is right: the sum of all its words, the checksum's included,
// is 0xFFFF.
inline bool ipv4_checksum_ok(const uint8_t* ip, size_t bytes = 20) {
    return ipv4_fold(ip, bytes) == 0xFFFF;
}

}  // namespace rnic::roce
