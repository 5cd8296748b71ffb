// SPDX-License-Identifier: Apache-2.0
// Shared by the libFuzzer targets and the seed generator: the recv_path fuzz input format, the
// NIC-side bench's fixed objects (QPs, keys, addresses), and frame fix-ups.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "hw/roce/roce.h"

namespace rnic::fuzz {

// Stops the fuzzer with a message: libFuzzer records the input as a crash.
[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
    std::abort();
}
#define RNIC_FUZZ_CHECK(cond)          \
    do {                               \
        if (!(cond)) {                 \
            ::rnic::fuzz::fail(#cond); \
        }                              \
    } while (0)

// --- recv_path_fuzz input: a sequence of records ------------------------------------------
// [kind:1][len:2, little-endian][len bytes]; a short last record takes what is left.
//   RECORD_RAW     the bytes go on the wire as they are (almost always a parse error);
//   RECORD_FIXED   lengths, IPv4 checksum and ICRC are recomputed first (fix_frame), so the
//                  mutated headers reach the responder/requester logic behind the ICRC check;
//   RECORD_WAIT    idle the wire for len x 100 ns (ACK coalescing and RNR timers expire).
// kind is taken modulo RECORD_KINDS, so every byte value is a valid kind.
enum record_kind : uint8_t { RECORD_RAW = 0, RECORD_FIXED = 1, RECORD_WAIT = 2, RECORD_KINDS = 3 };
constexpr size_t MAX_RECORDS = 64;        // frames (and waits) per input
constexpr size_t MAX_FRAME_BYTES = 9000;  // jumbo frame; longer records are cut

struct record {
    uint8_t kind = RECORD_RAW;
    std::vector<uint8_t> bytes;  // frame, or for RECORD_WAIT the wait units as len
    size_t len = 0;
};

inline std::vector<record> split_records(const uint8_t* data, size_t size) {
    std::vector<record> out;
    size_t i = 0;
    while (i < size && out.size() < MAX_RECORDS) {
        record r;
        r.kind = static_cast<uint8_t>(data[i] % RECORD_KINDS);
        size_t len = 0;
        if (i + 3 <= size) {
            len = data[i + 1] | (static_cast<size_t>(data[i + 2]) << 8);
        }
        i += 3;
        r.len = len;
        if (r.kind != RECORD_WAIT) {
            const size_t avail = i < size ? size - i : 0;
            const size_t n = len < avail ? len : avail;
            const size_t keep = n < MAX_FRAME_BYTES ? n : MAX_FRAME_BYTES;
            r.bytes.assign(data + (i < size ? i : size), data + (i < size ? i : size) + keep);
            i += n;
        }
        out.push_back(std::move(r));
    }
    return out;
}

inline void append_record(std::vector<uint8_t>& out, uint8_t kind, const std::vector<uint8_t>& b) {
    out.push_back(kind);
    out.push_back(static_cast<uint8_t>(b.size()));
    out.push_back(static_cast<uint8_t>(b.size() >> 8));
    out.insert(out.end(), b.begin(), b.end());
}

// Makes a mutated frame self-consistent where a mutation rarely is: IPv4 total length and UDP
// length from the frame size, IPv4 header checksum, ICRC (the last 4 bytes). Frames too short
// for an IPv4 + UDP header are left alone.
inline void fix_frame(std::vector<uint8_t>& f) {
    using namespace roce;
    if (f.size() < BTH_OFFSET + ICRC_BYTES || f.size() - ETH_HEADER_BYTES > 0xFFFF) {
        return;
    }
    uint8_t* ip = f.data() + ETH_HEADER_BYTES;
    const size_t ip_total = f.size() - ETH_HEADER_BYTES;
    ip[2] = static_cast<uint8_t>(ip_total >> 8);
    ip[3] = static_cast<uint8_t>(ip_total);
    const size_t udp_len = ip_total - IPV4_HEADER_BYTES;
    ip[IPV4_HEADER_BYTES + 4] = static_cast<uint8_t>(udp_len >> 8);
    ip[IPV4_HEADER_BYTES + 5] = static_cast<uint8_t>(udp_len);
    ip[10] = ip[11] = 0;
    if ((ip[0] & 0x0F) == 5) {  // only a header this parser accepts can have a right checksum
        uint32_t sum = 0;
        for (size_t i = 0; i < IPV4_HEADER_BYTES; i += 2) {
            sum += (static_cast<uint32_t>(ip[i]) << 8) | ip[i + 1];
        }
        while (sum > 0xFFFF) {
            sum = (sum & 0xFFFF) + (sum >> 16);
        }
        const uint16_t csum = static_cast<uint16_t>(~sum);
        ip[10] = static_cast<uint8_t>(csum >> 8);
        ip[11] = static_cast<uint8_t>(csum);
    }
    const size_t covered = f.size() - ICRC_BYTES;
    const uint32_t crc = compute_icrc(f.data(), covered);
    for (size_t i = 0; i < ICRC_BYTES; ++i) {
        f[covered + i] = static_cast<uint8_t>(crc >> (8 * i));
    }
}

// --- the NIC-side bench of recv_path_fuzz (also what the seeds aim at) ----------------------
// One NIC (scenario node 0, defaults) on side 0 of a link; the fuzzer's frames enter on side 1.
// Contexts are written directly into the NIC's context store and reset before every input.
namespace bench {
constexpr uint32_t PDN = 1;
constexpr uint32_t CQN = 1;
constexpr uint32_t CQ_LOG_DEPTH = 5;  // 32 CQEs: a long input overruns it (CQ error path)
constexpr uint64_t CQ_RING = 0x00100000;
constexpr uint32_t PMTU = 1024;
// QP_RQ: own receive queue, RTS. QP_SRQ: receives from the SRQ, RTS. QP_RTR: requests only.
constexpr uint32_t QP_RQ = 1;
constexpr uint32_t QP_SRQ = 2;
constexpr uint32_t QP_RTR = 3;
constexpr uint32_t PEER_QPN = 0x11;
constexpr uint64_t RQ_RING = 0x00200000;
constexpr uint32_t RQ_LOG_DEPTH = 3;  // 8 receive WQEs per input, then RNR NAKs
constexpr uint32_t RQ_STRIDE = 48;    // header + 2 SGEs
constexpr uint32_t RQ_BAD_SLOT = 5;   // this receive WQE has a bad lkey (local protection error)
constexpr uint64_t RQ_RTR_RING = 0x00280000;  // QP_RTR's RQ: its first receive WQE has no SGE
constexpr uint32_t SRQN = 1;
constexpr uint64_t SRQ_RING = 0x00300000;
constexpr uint32_t SRQ_LOG_DEPTH = 2;
constexpr uint32_t SRQ_STRIDE = 32;  // header + 1 SGE
constexpr uint32_t SRQ_LIMIT = 2;
// Keys (index << 8 | variant). MR_RW: local write, remote read and write. MR_RO: remote read
// only. MR_FAST: fast-register MR (SEND with Invalidate may invalidate it). MW: window into
// MR_RW, remote read and write.
constexpr uint32_t MR_RW = 0x0101;
constexpr uint32_t MR_RO = 0x0202;
constexpr uint32_t MR_FAST = 0x0303;
constexpr uint32_t MW = 0x0404;
constexpr uint64_t MR_RW_VA = 0x7f0000010000ull;
constexpr uint64_t MR_RW_BYTES = 64 * 1024;
constexpr uint64_t MR_RW_PHYS = 0x00400000;  // 16 contiguous pages
constexpr uint64_t MR_RO_VA = 0x7f0000100000ull;
constexpr uint64_t MR_RO_BYTES = 8192;
constexpr uint64_t MR_RO_PHYS = 0x00500000;
constexpr uint64_t MR_FAST_VA = 0x7f0000200000ull;
constexpr uint64_t MR_FAST_BYTES = 4096;
constexpr uint64_t MR_FAST_PHYS = 0x00600000;
constexpr uint64_t MW_VA = MR_RW_VA + 8192;
constexpr uint64_t MW_BYTES = 4096;
}  // namespace bench

// A frame to the bench's NIC (as the peer would send it), built with roce::build_frame.
inline std::vector<uint8_t> bench_frame(uint8_t opcode, uint32_t dest_qp, uint32_t psn,
                                        size_t payload_len, bool ack_req = true) {
    roce::frame_header h;
    h.dst_mac.b = {0x02, 0, 0, 0, 0, 0x01};
    h.src_mac.b = {0x02, 0, 0, 0, 0, 0x02};
    h.src_ip = (10u << 24) | 2;
    h.dst_ip = (10u << 24) | 1;
    h.bth_.opcode = opcode;
    h.bth_.dest_qp = dest_qp;
    h.bth_.psn = psn;
    h.bth_.ack_req = ack_req;
    h.reth_.va = bench::MR_RW_VA;
    h.reth_.rkey = bench::MR_RW;
    h.reth_.dma_length = static_cast<uint32_t>(payload_len);
    h.aeth_.syndrome = roce::AETH_ACK_NO_CREDIT;
    h.immdt = 0x12345678;
    h.ieth_rkey = bench::MR_FAST;
    std::vector<uint8_t> payload(payload_len);
    for (size_t i = 0; i < payload_len; ++i) {
        payload[i] = static_cast<uint8_t>(i * 7 + 1);
    }
    std::vector<uint8_t> out;
    roce::build_frame(h, payload.data(), payload.size(), out);
    return out;
}

}  // namespace rnic::fuzz
