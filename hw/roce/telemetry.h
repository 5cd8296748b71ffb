// SPDX-License-Identifier: Apache-2.0
// HPCC in-band network telemetry (INT) on RoCEv2 frames: the per-hop record a switch writes at
// egress (link rate, timestamp, bytes sent, queue length; Li et al., "HPCC: High Precision
// Congestion Control", SIGCOMM 2019, section 3.2 and Figure 5; field widths and units of the
// authors' ns-3 model, simulation/src/network/utils/int-header.h), its encoding in a 64-bit word
// and the stack of up to five hops. Wire placement: hw/roce/README.md, "In-band telemetry".
//
// Pure C++ (no SystemC): the switch stamps with it, the NIC reads it, the tests decode it.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace rnic::roce {

// The stack: a 4-byte INT header, then INT_MAX_HOPS hop records of 8 bytes (network order).
constexpr size_t INT_MAX_HOPS = 5;  // the authors' IntHeader::maxHop
constexpr size_t INT_HEADER_BYTES = 4;
constexpr size_t INT_HOP_BYTES = 8;
constexpr size_t INT_STACK_BYTES = INT_HEADER_BYTES + INT_MAX_HOPS * INT_HOP_BYTES;  // 44
// INT header byte 0: this value identifies the stack (version 1 of this layout).
constexpr uint8_t INT_TYPE_HPCC = 0x48;
// BTH byte 8 (AckReq, then Resv7; covered by the ICRC): bit 6, the first reserved bit, flags the
// INT stack.
constexpr uint8_t BTH8_INT_FLAG = 0x40;

// Field widths (bits) of a hop record, most significant first: rate code, time, bytes, qlen.
constexpr unsigned INT_RATE_BITS = 3;
constexpr unsigned INT_TIME_BITS = 24;   // ns, wraps every 16.8 ms
constexpr unsigned INT_BYTES_BITS = 20;  // tx bytes in byte units (below)
constexpr unsigned INT_QLEN_BITS = 17;   // queue bytes in qlen units (below)

// One decoded hop. Units: the authors' 128-byte and 80-byte units at 25 Gb/s, scaled with the
// link rate (their IntHop::multi = rate / 25 Gb/s), so the counters wrap at the same time at
// every speed: bytes wrap after 2^20 x 128 B x multi (134 MB at 25G, 5.4 ms at line rate).
struct int_hop {
    uint64_t rate_mbps = 0;  // 0: unknown rate code
    uint32_t time_ns = 0;    // INT_TIME_BITS, free-running
    uint32_t bytes = 0;      // INT_BYTES_BITS, in byte_unit()
    uint32_t qlen = 0;       // INT_QLEN_BITS, in qlen_unit() (saturates)
    uint32_t byte_unit = 0;  // bytes per count of `bytes`
    uint32_t qlen_unit = 0;  // bytes per count of `qlen`
    uint64_t qlen_bytes() const { return uint64_t{qlen} * qlen_unit; }
};

// Rate code of a link (Mb/s): 0 = 25G, 1 = 50G, 2 = 100G, 3 = 200G, 4 = 400G (the authors'
// lineRateValues), 5 = 10G, 6 = 40G, 7 = 800G (ours). -1: not encodable.
int int_rate_code(uint64_t rate_mbps);

// The record a switch writes: `tx_bytes` (bytes the egress port has sent, free-running) and
// `qlen_bytes` (egress queue) are divided by the units of the link rate; the time is taken
// modulo 2^24 ns; qlen saturates. A rate without a code (int_rate_code < 0) gives 0: the switch
// checks its links' rates when it is built.
uint64_t int_encode_hop(uint64_t rate_mbps, uint64_t time_ns, uint64_t tx_bytes,
                        uint64_t qlen_bytes);
int_hop int_decode_hop(uint64_t word);

// Differences between two records of the same hop, modulo the field widths (the counters wrap).
uint64_t int_time_delta_ns(const int_hop& now, const int_hop& before);
uint64_t int_bytes_delta(const int_hop& now, const int_hop& before);

// The stack as the NIC keeps it (raw words; nhop 0: none).
struct int_stack {
    std::array<uint64_t, INT_MAX_HOPS> hop{};
    uint8_t nhop = 0;
};

// Serialise / parse the 44-byte stack (no checks beyond the type byte; nhop is clamped to 5).
void int_write_stack(const int_stack& s, uint8_t* out);
bool int_read_stack(const uint8_t* in, int_stack& s);

// Frames (Ethernet header first, untagged IPv4 without options, `len` bytes without FCS).
// The stack sits right before the ICRC (README). Offset of the stack, or 0 if the frame carries
// none (not RoCEv2, BTH flag clear, too short, wrong type byte).
size_t int_stack_offset(const uint8_t* frame, size_t len);
// A switch's stamp: writes `word` into the next free hop slot and counts it. False when the
// frame carries no stack or every slot is taken (the hop is not recorded). The ICRC stays valid:
// the stack is read as ones by it (hw/roce/roce.h, compute_icrc).
bool int_push_hop(uint8_t* frame, size_t len, uint64_t word);

// --- implementation (header-only: the switch layer uses it without the NIC library) ---

namespace int_detail {
struct rate_entry {
    uint64_t mbps;
    uint32_t byte_unit;  // 128 B x rate / 25G (the authors' byteUnit x multi)
    uint32_t qlen_unit;  // 80 B x rate / 25G (qlenUnit x multi)
};
// Index = rate code. 10G keeps the 25G units (multi would be 0.4), 40G those of 50G.
constexpr rate_entry RATES[8] = {
    {25000, 128, 80},     {50000, 256, 160}, {100000, 512, 320}, {200000, 1024, 640},
    {400000, 2048, 1280}, {10000, 128, 80},  {40000, 256, 160},  {800000, 4096, 2560},
};
constexpr uint64_t mask(unsigned bits) {
    return (uint64_t{1} << bits) - 1;
}
constexpr unsigned QLEN_SHIFT = 0;
constexpr unsigned BYTES_SHIFT = INT_QLEN_BITS;
constexpr unsigned TIME_SHIFT = BYTES_SHIFT + INT_BYTES_BITS;
constexpr unsigned RATE_SHIFT = TIME_SHIFT + INT_TIME_BITS;
static_assert(RATE_SHIFT + INT_RATE_BITS == 64);
// An empty slot (all zero) reads as a 25G hop: the stack's hop count says which are filled.
}  // namespace int_detail

inline int int_rate_code(uint64_t rate_mbps) {
    for (int c = 0; c < 8; ++c) {
        if (int_detail::RATES[c].mbps == rate_mbps) {
            return c;
        }
    }
    return -1;
}

inline uint64_t int_encode_hop(uint64_t rate_mbps, uint64_t time_ns, uint64_t tx_bytes,
                               uint64_t qlen_bytes) {
    const int code = int_rate_code(rate_mbps);
    if (code < 0) {
        return 0;
    }
    const int_detail::rate_entry& r = int_detail::RATES[code];
    const uint64_t q =
        std::min<uint64_t>(qlen_bytes / r.qlen_unit, int_detail::mask(INT_QLEN_BITS));
    return (uint64_t(code) << int_detail::RATE_SHIFT) |
           ((time_ns & int_detail::mask(INT_TIME_BITS)) << int_detail::TIME_SHIFT) |
           (((tx_bytes / r.byte_unit) & int_detail::mask(INT_BYTES_BITS))
            << int_detail::BYTES_SHIFT) |
           (q << int_detail::QLEN_SHIFT);
}

inline int_hop int_decode_hop(uint64_t w) {
    int_hop h;
    const int_detail::rate_entry& r =
        int_detail::RATES[(w >> int_detail::RATE_SHIFT) & int_detail::mask(INT_RATE_BITS)];
    h.rate_mbps = r.mbps;
    h.time_ns =
        static_cast<uint32_t>((w >> int_detail::TIME_SHIFT) & int_detail::mask(INT_TIME_BITS));
    h.bytes =
        static_cast<uint32_t>((w >> int_detail::BYTES_SHIFT) & int_detail::mask(INT_BYTES_BITS));
    h.qlen = static_cast<uint32_t>((w >> int_detail::QLEN_SHIFT) & int_detail::mask(INT_QLEN_BITS));
    h.byte_unit = r.byte_unit;
    h.qlen_unit = r.qlen_unit;
    return h;
}

inline uint64_t int_time_delta_ns(const int_hop& now, const int_hop& before) {
    return (uint64_t{now.time_ns} - before.time_ns) & int_detail::mask(INT_TIME_BITS);
}

inline uint64_t int_bytes_delta(const int_hop& now, const int_hop& before) {
    return ((uint64_t{now.bytes} - before.bytes) & int_detail::mask(INT_BYTES_BITS)) *
           now.byte_unit;
}

inline void int_write_stack(const int_stack& s, uint8_t* out) {
    out[0] = INT_TYPE_HPCC;
    out[1] = static_cast<uint8_t>(std::min<size_t>(s.nhop, INT_MAX_HOPS));
    out[2] = static_cast<uint8_t>(INT_MAX_HOPS);
    out[3] = 0;
    for (size_t i = 0; i < INT_MAX_HOPS; ++i) {
        for (int b = 0; b < 8; ++b) {
            out[INT_HEADER_BYTES + i * INT_HOP_BYTES + b] =
                static_cast<uint8_t>(s.hop[i] >> (56 - 8 * b));
        }
    }
}

inline bool int_read_stack(const uint8_t* in, int_stack& s) {
    if (in[0] != INT_TYPE_HPCC) {
        return false;
    }
    s.nhop = static_cast<uint8_t>(std::min<size_t>(in[1], INT_MAX_HOPS));
    for (size_t i = 0; i < INT_MAX_HOPS; ++i) {
        uint64_t w = 0;
        for (int b = 0; b < 8; ++b) {
            w = (w << 8) | in[INT_HEADER_BYTES + i * INT_HOP_BYTES + b];
        }
        s.hop[i] = w;
    }
    return true;
}

inline size_t int_stack_offset(const uint8_t* f, size_t len) {
    constexpr size_t IP = 14;                   // Ethernet header
    constexpr size_t BTH_OFFSET = IP + 20 + 8;  // IPv4 (no options) + UDP
    constexpr size_t BTH_BYTES = 12;
    constexpr size_t ICRC_BYTES = 4;
    if (len < BTH_OFFSET + BTH_BYTES + INT_STACK_BYTES + ICRC_BYTES || f[12] != 0x08 ||
        f[13] != 0x00 || f[IP] != 0x45 || f[IP + 9] != 17 || f[IP + 22] != (4791 >> 8) ||
        f[IP + 23] != (4791 & 0xFF) || (f[BTH_OFFSET + 8] & BTH8_INT_FLAG) == 0) {
        return 0;
    }
    // The stack ends where the ICRC starts: at the end of the IP packet minus 4.
    const size_t ip_total = (size_t{f[IP + 2]} << 8) | f[IP + 3];
    const size_t end = IP + ip_total;
    if (end > len || end < BTH_OFFSET + BTH_BYTES + INT_STACK_BYTES + ICRC_BYTES) {
        return 0;
    }
    const size_t off = end - ICRC_BYTES - INT_STACK_BYTES;
    return f[off] == INT_TYPE_HPCC ? off : 0;
}

inline bool int_push_hop(uint8_t* frame, size_t len, uint64_t word) {
    const size_t off = int_stack_offset(frame, len);
    if (off == 0 || frame[off + 1] >= INT_MAX_HOPS) {
        return false;
    }
    const uint8_t n = frame[off + 1];
    uint8_t* p = frame + off + INT_HEADER_BYTES + n * INT_HOP_BYTES;
    for (int b = 0; b < 8; ++b) {
        p[b] = static_cast<uint8_t>(word >> (56 - 8 * b));
    }
    frame[off + 1] = static_cast<uint8_t>(n + 1);
    return true;
}

}  // namespace rnic::roce
