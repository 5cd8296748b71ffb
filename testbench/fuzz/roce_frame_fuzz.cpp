// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: roce::parse_frame on arbitrary bytes, and the round trip of whatever it
// accepts through roce::build_frame.
//
// Checked for every input: no out-of-bounds read (ASan: libFuzzer hands over an exact-size heap
// copy), no UB. For an accepted frame: the payload lies inside the frame; build_frame of the
// parsed header and payload gives a frame of exactly the IPv4 total length that parses to the
// same header and payload; and it equals the input byte for byte except where the receiver
// ignores a field by design (IPv4 DF/reserved flag bits, UDP checksum, BTH reserved bits, pad
// bytes, CNP reserved bytes, and the IPv4 checksum and ICRC that cover them).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hw/roce/roce.h"
#include "testbench/fuzz/fuzz_common.h"

namespace {
using namespace rnic::roce;

bool same_header(const frame_header& a, const frame_header& b) {
    const bth& x = a.bth_;
    const bth& y = b.bth_;
    return a.dst_mac.b == b.dst_mac.b && a.src_mac.b == b.src_mac.b && a.src_ip == b.src_ip &&
           a.dst_ip == b.dst_ip && a.tos == b.tos && a.ttl == b.ttl && a.ip_id == b.ip_id &&
           a.udp_src_port == b.udp_src_port && x.opcode == y.opcode && x.se == y.se &&
           x.migreq == y.migreq && x.pad_count == y.pad_count && x.tver == y.tver &&
           x.pkey == y.pkey && x.fecn == y.fecn && x.becn == y.becn && x.dest_qp == y.dest_qp &&
           x.ack_req == y.ack_req && x.psn == y.psn && a.reth_.va == b.reth_.va &&
           a.reth_.rkey == b.reth_.rkey && a.reth_.dma_length == b.reth_.dma_length &&
           a.aeth_.syndrome == b.aeth_.syndrome && a.aeth_.msn == b.aeth_.msn &&
           a.immdt == b.immdt && a.ieth_rkey == b.ieth_rkey;
}

// Byte offsets (from the frame start) whose value the parser ignores; `derived` are the
// checksums that change when one of those does.
bool ignored_byte(size_t off, const parsed_frame& p, size_t ip_total, bool& derived) {
    constexpr size_t IP = ETH_HEADER_BYTES;
    constexpr size_t UDP = IP + IPV4_HEADER_BYTES;
    constexpr size_t BTH = BTH_OFFSET;
    derived = false;
    if (off == IP + 6) {
        return true;  // flags: DF and the reserved bit (MF and offset are checked)
    }
    if (off == UDP + 6 || off == UDP + 7) {
        return true;  // UDP checksum
    }
    if (off == BTH + 4 || off == BTH + 8) {
        return true;  // BTH reserved bits beside FECN/BECN and AckReq
    }
    const size_t payload_end = p.payload_offset + p.payload_len;
    const size_t icrc = ETH_HEADER_BYTES + ip_total - ICRC_BYTES;
    if (off >= payload_end && off < icrc) {
        return true;  // pad bytes
    }
    if (p.hdr.bth_.opcode == CNP && off >= BTH + BTH_BYTES && off < BTH + BTH_BYTES + 16) {
        return true;  // CNP reserved
    }
    if (off == IP + 10 || off == IP + 11 || off >= icrc) {
        derived = true;
        return true;
    }
    return false;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    parsed_frame p;
    const parse_error e = parse_frame(data, size, p);
    RNIC_FUZZ_CHECK(to_string(e) != nullptr);
    if (e != parse_error::NONE) {
        return 0;
    }
    const uint8_t op = p.hdr.bth_.opcode;
    RNIC_FUZZ_CHECK(info(op).valid);
    RNIC_FUZZ_CHECK(p.payload_offset == header_bytes(op));
    RNIC_FUZZ_CHECK(p.payload_offset + p.payload_len <= size);
    RNIC_FUZZ_CHECK(info(op).has_payload || p.payload_len == 0);
    const size_t ip_total =
        (static_cast<size_t>(data[ETH_HEADER_BYTES + 2]) << 8) | data[ETH_HEADER_BYTES + 3];

    std::vector<uint8_t> rebuilt;
    build_frame(p.hdr, data + p.payload_offset, p.payload_len, rebuilt);  // must not throw
    RNIC_FUZZ_CHECK(rebuilt.size() == ETH_HEADER_BYTES + ip_total);
    // A frame with HPCC telemetry (the BTH's INT flag) carries its INT stack before the ICRC.
    RNIC_FUZZ_CHECK(rebuilt.size() ==
                    frame_bytes(op, p.payload_len) + (p.hdr.telemetry ? INT_STACK_BYTES : 0));

    parsed_frame q;
    RNIC_FUZZ_CHECK(parse_frame(rebuilt.data(), rebuilt.size(), q) == parse_error::NONE);
    RNIC_FUZZ_CHECK(same_header(p.hdr, q.hdr));
    RNIC_FUZZ_CHECK(q.payload_offset == p.payload_offset && q.payload_len == p.payload_len);
    RNIC_FUZZ_CHECK(std::memcmp(rebuilt.data() + q.payload_offset, data + p.payload_offset,
                                p.payload_len) == 0);

    bool ignored_differs = false;
    bool derived_differs = false;
    for (size_t i = 0; i < rebuilt.size(); ++i) {
        if (rebuilt[i] == data[i]) {
            continue;
        }
        bool derived = false;
        RNIC_FUZZ_CHECK(ignored_byte(i, p, ip_total, derived));
        (derived ? derived_differs : ignored_differs) = true;
    }
    // A checksum may only differ because an ignored field did, or as the other one's-complement
    // zero (0x0000 / 0xFFFF both verify when the rest of the header sums to 0xFFFF).
    const auto csum_of = [](const uint8_t* f) {
        return (static_cast<uint32_t>(f[ETH_HEADER_BYTES + 10]) << 8) | f[ETH_HEADER_BYTES + 11];
    };
    const bool zero_pair = (csum_of(data) ^ csum_of(rebuilt.data())) == 0xFFFF;
    RNIC_FUZZ_CHECK(!derived_differs || ignored_differs || zero_pair);
    return 0;
}
