// SPDX-License-Identifier: Apache-2.0
// RoCEv2 (IPv4) wire format: opcode table, frame builder with ICRC, validating parser.
#include "hw/roce/roce.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>
#include <string>

// CRC-32 (IEEE, reflected; the same function as zlib crc32) from libdeflate, which folds
// with carry-less multiplies on x86: the ICRC of a 4 KiB packet costs ~0.1 instruction/byte.
#include <libdeflate.h>

namespace rnic::roce {

namespace {

// --- opcode table -------------------------------------------------------------------------

enum class position { FIRST, MIDDLE, LAST, ONLY };

// Header/payload flags for the table below.
constexpr unsigned RETH = 1, AETH = 2, IMMDT = 4, IETH = 8, PAYLOAD = 16;

constexpr opcode_info UNKNOWN_INFO{false, false, false, false, false,    false,
                                   false, false, false, false, "UNKNOWN"};

constexpr opcode_info make_info(unsigned hdrs, position pos, const char* name) {
    return opcode_info{true,
                       (hdrs & RETH) != 0,
                       (hdrs & AETH) != 0,
                       (hdrs & IMMDT) != 0,
                       (hdrs & IETH) != 0,
                       (hdrs & PAYLOAD) != 0,
                       pos == position::FIRST,
                       pos == position::MIDDLE,
                       pos == position::LAST,
                       pos == position::ONLY,
                       name};
}

struct opcode_tables {
    std::array<opcode_info, 256> info{};
    std::array<uint16_t, 256> header_bytes{};  // 0 = unknown opcode
};

constexpr opcode_tables make_tables() {
    opcode_tables t{};
    for (auto& i : t.info) {
        i = UNKNOWN_INFO;
    }
    using P = position;
    // IBA vol. 1 RC opcodes and annex A17 (CNP); extension headers in wire order.
    // clang-format off
    t.info[RC_SEND_FIRST]       = make_info(PAYLOAD,                P::FIRST,  "RC_SEND_FIRST");
    t.info[RC_SEND_MIDDLE]      = make_info(PAYLOAD,                P::MIDDLE, "RC_SEND_MIDDLE");
    t.info[RC_SEND_LAST]        = make_info(PAYLOAD,                P::LAST,   "RC_SEND_LAST");
    t.info[RC_SEND_LAST_IMM]    = make_info(IMMDT | PAYLOAD,        P::LAST,   "RC_SEND_LAST_IMM");
    t.info[RC_SEND_ONLY]        = make_info(PAYLOAD,                P::ONLY,   "RC_SEND_ONLY");
    t.info[RC_SEND_ONLY_IMM]    = make_info(IMMDT | PAYLOAD,        P::ONLY,   "RC_SEND_ONLY_IMM");
    t.info[RC_WRITE_FIRST]      = make_info(RETH | PAYLOAD,         P::FIRST,  "RC_WRITE_FIRST");
    t.info[RC_WRITE_MIDDLE]     = make_info(PAYLOAD,                P::MIDDLE, "RC_WRITE_MIDDLE");
    t.info[RC_WRITE_LAST]       = make_info(PAYLOAD,                P::LAST,   "RC_WRITE_LAST");
    t.info[RC_WRITE_LAST_IMM]   = make_info(IMMDT | PAYLOAD,        P::LAST,   "RC_WRITE_LAST_IMM");
    t.info[RC_WRITE_ONLY]       = make_info(RETH | PAYLOAD,         P::ONLY,   "RC_WRITE_ONLY");
    t.info[RC_WRITE_ONLY_IMM]   = make_info(RETH | IMMDT | PAYLOAD, P::ONLY,   "RC_WRITE_ONLY_IMM");
    t.info[RC_READ_REQUEST]     = make_info(RETH,                   P::ONLY,   "RC_READ_REQUEST");
    t.info[RC_READ_RESP_FIRST]  = make_info(AETH | PAYLOAD,         P::FIRST,  "RC_READ_RESP_FIRST");
    t.info[RC_READ_RESP_MIDDLE] = make_info(PAYLOAD,                P::MIDDLE, "RC_READ_RESP_MIDDLE");
    t.info[RC_READ_RESP_LAST]   = make_info(AETH | PAYLOAD,         P::LAST,   "RC_READ_RESP_LAST");
    t.info[RC_READ_RESP_ONLY]   = make_info(AETH | PAYLOAD,         P::ONLY,   "RC_READ_RESP_ONLY");
    t.info[RC_ACK]              = make_info(AETH,                   P::ONLY,   "RC_ACK");
    t.info[RC_SEND_LAST_INV]    = make_info(IETH | PAYLOAD,         P::LAST,   "RC_SEND_LAST_INV");
    t.info[RC_SEND_ONLY_INV]    = make_info(IETH | PAYLOAD,         P::ONLY,   "RC_SEND_ONLY_INV");
    t.info[CNP]                 = make_info(0,                      P::ONLY,   "CNP");
    // clang-format on

    for (size_t op = 0; op < 256; ++op) {
        const opcode_info& i = t.info[op];
        if (!i.valid) {
            continue;
        }
        size_t n = BTH_OFFSET + BTH_BYTES;
        n += i.has_reth ? RETH_BYTES : 0;
        n += i.has_aeth ? AETH_BYTES : 0;
        n += i.has_immdt ? IMMDT_BYTES : 0;
        n += i.has_ieth ? IETH_BYTES : 0;
        n += op == CNP ? CNP_RESERVED_BYTES : 0;
        t.header_bytes[op] = static_cast<uint16_t>(n);
    }
    return t;
}

constexpr opcode_tables TABLES = make_tables();

// The longest header stack of any opcode (Ethernet .. the last extension header).
constexpr size_t MAX_HEADER_BYTES = [] {
    size_t n = 0;
    for (const uint16_t b : TABLES.header_bytes) {
        n = std::max<size_t>(n, b);
    }
    return n;
}();

// --- byte order helpers (network order is big endian) ---------------------------------------

inline void put16(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
inline void put24(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 16);
    p[1] = static_cast<uint8_t>(v >> 8);
    p[2] = static_cast<uint8_t>(v);
}
inline void put32(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}
inline void put64(uint8_t* p, uint64_t v) {
    put32(p, static_cast<uint32_t>(v >> 32));
    put32(p + 4, static_cast<uint32_t>(v));
}
inline uint16_t get16(const uint8_t* p) {
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
inline uint32_t get24(const uint8_t* p) {
    return (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
}
inline uint32_t get32(const uint8_t* p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline uint64_t get64(const uint8_t* p) {
    return (uint64_t{get32(p)} << 32) | get32(p + 4);
}

// zlib crc32 of the eight 0xFF bytes standing in for the LRH: the raw register state is
// 0xDEBB20E3, zlib reports it inverted.
constexpr uint32_t LRH_CRC = 0x2144DF1Cu;
// Bytes after the Ethernet header that contain masked fields: IPv4 + UDP + BTH.
constexpr size_t MASKED_SPAN = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + BTH_BYTES;

// ICRC over `n` bytes starting at the IPv4 header: one pass over a masked stack copy of the
// IPv4/UDP/BTH headers, then continued over the rest in place.
uint32_t icrc_from_ip(const uint8_t* ip, size_t n) {
    uint8_t masked[MASKED_SPAN];
    const size_t m = std::min(n, MASKED_SPAN);
    std::memcpy(masked, ip, m);
    // Variant fields read as all ones (offsets relative to the IPv4 header).
    constexpr size_t MASK_OFFSETS[] = {
        1,                                         // TOS (DSCP/ECN)
        8,                                         // TTL
        10,                                        // header checksum
        11,                                        //
        IPV4_HEADER_BYTES + 6,                     // UDP checksum
        IPV4_HEADER_BYTES + 7,                     //
        IPV4_HEADER_BYTES + UDP_HEADER_BYTES + 4,  // BTH FECN/BECN/reserved
    };
    for (size_t off : MASK_OFFSETS) {
        if (off < m) {
            masked[off] = 0xFF;
        }
    }
    uint32_t crc = libdeflate_crc32(LRH_CRC, masked, m);
    // An INT stack before the ICRC is variant too (switches write it): read as ones.
    const bool stack = n >= MASKED_SPAN + INT_STACK_BYTES &&
                       (ip[IPV4_HEADER_BYTES + UDP_HEADER_BYTES + 8] & BTH8_INT_FLAG) != 0;
    const size_t end = stack ? n - INT_STACK_BYTES : n;
    if (end > m) {
        crc = libdeflate_crc32(crc, ip + m, end - m);
    }
    if (stack) {
        static const std::array<uint8_t, INT_STACK_BYTES> ONES = [] {
            std::array<uint8_t, INT_STACK_BYTES> a{};
            a.fill(0xFF);
            return a;
        }();
        crc = libdeflate_crc32(crc, ONES.data(), ONES.size());
    }
    return crc;
}

}  // namespace

const opcode_info& info(uint8_t opcode) {
    return TABLES.info[opcode];
}

size_t header_bytes(uint8_t opcode) {
    return TABLES.header_bytes[opcode];
}

size_t frame_bytes(uint8_t opcode, size_t payload_len) {
    const size_t h = TABLES.header_bytes[opcode];
    if (h == 0) {
        return 0;
    }
    return h + payload_len + pad_bytes(payload_len) + ICRC_BYTES;
}

void build_frame(const frame_header& h, const uint8_t* payload, size_t len,
                 std::vector<uint8_t>& out) {
    const uint8_t op = h.bth_.opcode;
    const opcode_info& oi = TABLES.info[op];
    if (!oi.valid) {
        throw std::invalid_argument("roce::build_frame: unknown opcode " + std::to_string(op));
    }
    if (len != 0 && !oi.has_payload) {
        throw std::invalid_argument(std::string("roce::build_frame: ") + oi.name +
                                    " carries no payload, got " + std::to_string(len) + " bytes");
    }
    const size_t hdr = TABLES.header_bytes[op];
    const uint8_t pad = pad_bytes(len);
    const size_t stack = h.telemetry ? INT_STACK_BYTES : 0;
    const size_t ip_total = hdr - ETH_HEADER_BYTES + len + pad + stack + ICRC_BYTES;
    if (ip_total > 0xFFFF) {
        throw std::length_error("roce::build_frame: payload of " + std::to_string(len) +
                                " bytes exceeds the IPv4 total length");
    }

    // The headers are written into a zeroed stack buffer (zero covers the reserved fields),
    // then the frame is appended once: headers, payload, and the zeroed tail (pad, INT stack,
    // ICRC). The payload bytes are copied once and never cleared first.
    std::array<uint8_t, MAX_HEADER_BYTES> hbuf{};
    uint8_t* const frame = hbuf.data();

    // Ethernet II
    std::memcpy(frame, h.dst_mac.b.data(), 6);
    std::memcpy(frame + 6, h.src_mac.b.data(), 6);
    put16(frame + 12, ETHERTYPE_IPV4);

    // IPv4, no options, DF
    uint8_t* const ip = frame + ETH_HEADER_BYTES;
    ip[0] = 0x45;
    ip[1] = h.tos;
    put16(ip + 2, static_cast<uint32_t>(ip_total));
    put16(ip + 4, h.ip_id);
    ip[6] = 0x40;
    ip[7] = 0x00;
    ip[8] = h.ttl;
    ip[9] = IP_PROTO_UDP;
    put32(ip + 12, h.src_ip);
    put32(ip + 16, h.dst_ip);
    put16(ip + 10, static_cast<uint16_t>(~ipv4_fold(ip)));  // checksum field is still zero

    // UDP, checksum 0 (not used by RoCEv2; masked out of the ICRC)
    uint8_t* const udp = ip + IPV4_HEADER_BYTES;
    put16(udp, h.udp_src_port);
    put16(udp + 2, ROCEV2_UDP_PORT);
    put16(udp + 4, static_cast<uint32_t>(ip_total - IPV4_HEADER_BYTES));

    // BTH
    const bth& b = h.bth_;
    uint8_t* p = udp + UDP_HEADER_BYTES;
    p[0] = op;
    p[1] = static_cast<uint8_t>((b.se ? 0x80 : 0) | (b.migreq ? 0x40 : 0) | (pad << 4) |
                                (b.tver & 0x0F));
    put16(p + 2, b.pkey);
    p[4] = static_cast<uint8_t>((b.fecn ? 0x80 : 0) | (b.becn ? 0x40 : 0));
    put24(p + 5, b.dest_qp & QPN_MASK);
    p[8] = static_cast<uint8_t>((b.ack_req ? 0x80 : 0) | (h.telemetry ? BTH8_INT_FLAG : 0));
    put24(p + 9, b.psn & PSN_MASK);
    p += BTH_BYTES;

    // Extension headers in IBA order
    if (oi.has_reth) {
        put64(p, h.reth_.va);
        put32(p + 8, h.reth_.rkey);
        put32(p + 12, h.reth_.dma_length);
        p += RETH_BYTES;
    }
    if (oi.has_aeth) {
        p[0] = h.aeth_.syndrome;
        put24(p + 1, h.aeth_.msn & 0xFFFFFF);
        p += AETH_BYTES;
    }
    if (oi.has_immdt) {
        put32(p, h.immdt);
        p += IMMDT_BYTES;
    }
    if (oi.has_ieth) {
        put32(p, h.ieth_rkey);
        p += IETH_BYTES;
    }
    // CNP: the reserved bytes are already zero.

    const size_t base = out.size();
    const size_t total = ETH_HEADER_BYTES + ip_total;
    out.reserve(base + total);
    out.insert(out.end(), frame, frame + hdr);
    if (len != 0) {
        out.insert(out.end(), payload, payload + len);
    }
    out.resize(base + total);  // pad, INT stack and ICRC: zero
    uint8_t* const tail = out.data() + base + hdr + len;
    if (h.telemetry) {
        int_write_stack(h.int_, tail + pad);
    }

    // ICRC over IPv4..pad, least significant byte first.
    const size_t covered = ip_total - ICRC_BYTES;
    const uint32_t crc = icrc_from_ip(out.data() + base + ETH_HEADER_BYTES, covered);
    uint8_t* const icrc = out.data() + base + ETH_HEADER_BYTES + covered;
    icrc[0] = static_cast<uint8_t>(crc);
    icrc[1] = static_cast<uint8_t>(crc >> 8);
    icrc[2] = static_cast<uint8_t>(crc >> 16);
    icrc[3] = static_cast<uint8_t>(crc >> 24);
}

uint32_t compute_icrc(const uint8_t* frame, size_t len_without_icrc) {
    if (len_without_icrc <= ETH_HEADER_BYTES) {
        return static_cast<uint32_t>(LRH_CRC);
    }
    return icrc_from_ip(frame + ETH_HEADER_BYTES, len_without_icrc - ETH_HEADER_BYTES);
}

const char* to_string(parse_error e) {
    switch (e) {
        case parse_error::NONE:
            return "NONE";
        case parse_error::TOO_SHORT:
            return "TOO_SHORT";
        case parse_error::NOT_IPV4:
            return "NOT_IPV4";
        case parse_error::BAD_IP_HEADER:
            return "BAD_IP_HEADER";
        case parse_error::BAD_IP_CHECKSUM:
            return "BAD_IP_CHECKSUM";
        case parse_error::NOT_UDP:
            return "NOT_UDP";
        case parse_error::NOT_ROCE_PORT:
            return "NOT_ROCE_PORT";
        case parse_error::BAD_LENGTH:
            return "BAD_LENGTH";
        case parse_error::UNKNOWN_OPCODE:
            return "UNKNOWN_OPCODE";
        case parse_error::BAD_ICRC:
            return "BAD_ICRC";
        case parse_error::BAD_PAD:
            return "BAD_PAD";
    }
    return "INVALID";
}

parse_error parse_frame(const uint8_t* frame, size_t len, parsed_frame& out) {
    out = parsed_frame{};
    if (frame == nullptr || len < ETH_HEADER_BYTES) {
        return parse_error::TOO_SHORT;
    }
    if (get16(frame + 12) != ETHERTYPE_IPV4) {
        return parse_error::NOT_IPV4;
    }
    if (len < ETH_HEADER_BYTES + IPV4_HEADER_BYTES) {
        return parse_error::TOO_SHORT;
    }
    const uint8_t* const ip = frame + ETH_HEADER_BYTES;
    if ((ip[0] >> 4) != 4) {
        return parse_error::NOT_IPV4;
    }
    if ((ip[0] & 0x0F) != 5) {
        return parse_error::BAD_IP_HEADER;  // options are not modelled
    }
    if ((get16(ip + 6) & 0x3FFF) != 0) {
        return parse_error::BAD_IP_HEADER;  // MF set or non-zero fragment offset
    }
    if (!ipv4_checksum_ok(ip)) {
        return parse_error::BAD_IP_CHECKSUM;
    }
    if (ip[9] != IP_PROTO_UDP) {
        return parse_error::NOT_UDP;
    }
    if (len < BTH_OFFSET) {
        return parse_error::TOO_SHORT;
    }
    const uint8_t* const udp = ip + IPV4_HEADER_BYTES;
    if (get16(udp + 2) != ROCEV2_UDP_PORT) {
        return parse_error::NOT_ROCE_PORT;
    }
    // Lengths: the IP total length bounds the packet (anything after it is Ethernet padding).
    const size_t ip_total = get16(ip + 2);
    const size_t udp_len = get16(udp + 4);
    if (ip_total < IPV4_HEADER_BYTES + UDP_HEADER_BYTES + BTH_BYTES + ICRC_BYTES ||
        ETH_HEADER_BYTES + ip_total > len || udp_len != ip_total - IPV4_HEADER_BYTES) {
        return parse_error::BAD_LENGTH;
    }
    // ICRC first: a corrupted opcode or pad count is reported as BAD_ICRC.
    const size_t covered = ip_total - ICRC_BYTES;
    const uint32_t wire_icrc = uint32_t{ip[covered]} | (uint32_t{ip[covered + 1]} << 8) |
                               (uint32_t{ip[covered + 2]} << 16) |
                               (uint32_t{ip[covered + 3]} << 24);
    if (icrc_from_ip(ip, covered) != wire_icrc) {
        return parse_error::BAD_ICRC;
    }

    const uint8_t* const b = udp + UDP_HEADER_BYTES;
    const uint8_t op = b[0];
    const opcode_info& oi = TABLES.info[op];
    if (!oi.valid) {
        return parse_error::UNKNOWN_OPCODE;
    }
    const size_t hdr = TABLES.header_bytes[op];
    size_t frame_end = ETH_HEADER_BYTES + covered;  // first ICRC byte
    const bool stack = (b[8] & BTH8_INT_FLAG) != 0;
    if (stack) {
        // The INT stack ends at the ICRC (its type byte checked; the hops are the switches').
        if (hdr + INT_STACK_BYTES > frame_end ||
            !int_read_stack(frame + frame_end - INT_STACK_BYTES, out.hdr.int_)) {
            return parse_error::BAD_LENGTH;
        }
        frame_end -= INT_STACK_BYTES;
        out.hdr.telemetry = true;
    }
    if (hdr > frame_end) {
        return parse_error::BAD_LENGTH;
    }
    const size_t area = frame_end - hdr;  // payload + pad
    if (!oi.has_payload && area != 0) {
        return parse_error::BAD_LENGTH;
    }
    // Payload + pad is 4-byte aligned. Whether First/Middle packets carry exactly one path MTU
    // is for the receiver to check: the wire format does not know the MTU.
    const uint8_t pad = (b[1] >> 4) & 0x3;
    if ((area & 3) != 0 || pad > area) {
        return parse_error::BAD_PAD;
    }

    frame_header& h = out.hdr;
    std::memcpy(h.dst_mac.b.data(), frame, 6);
    std::memcpy(h.src_mac.b.data(), frame + 6, 6);
    h.tos = ip[1];
    h.ip_id = get16(ip + 4);
    h.ttl = ip[8];
    h.src_ip = get32(ip + 12);
    h.dst_ip = get32(ip + 16);
    h.udp_src_port = get16(udp);
    bth& t = h.bth_;
    t.opcode = op;
    t.se = (b[1] & 0x80) != 0;
    t.migreq = (b[1] & 0x40) != 0;
    t.pad_count = pad;
    t.tver = b[1] & 0x0F;
    t.pkey = get16(b + 2);
    t.fecn = (b[4] & 0x80) != 0;
    t.becn = (b[4] & 0x40) != 0;
    t.dest_qp = get24(b + 5);
    t.ack_req = (b[8] & 0x80) != 0;
    t.psn = get24(b + 9);
    const uint8_t* p = b + BTH_BYTES;
    if (oi.has_reth) {
        h.reth_.va = get64(p);
        h.reth_.rkey = get32(p + 8);
        h.reth_.dma_length = get32(p + 12);
        p += RETH_BYTES;
    }
    if (oi.has_aeth) {
        h.aeth_.syndrome = p[0];
        h.aeth_.msn = get24(p + 1);
        p += AETH_BYTES;
    }
    if (oi.has_immdt) {
        h.immdt = get32(p);
        p += IMMDT_BYTES;
    }
    if (oi.has_ieth) {
        h.ieth_rkey = get32(p);
    }
    out.payload_offset = hdr;
    out.payload_len = area - pad;
    return parse_error::NONE;
}

size_t wire_bytes(size_t frame_len_without_fcs) {
    constexpr size_t MIN_FRAME_WITH_FCS = 64;
    constexpr size_t PREAMBLE_SFD_IFG = 8 + 12;
    return std::max(frame_len_without_fcs + FCS_BYTES, MIN_FRAME_WITH_FCS) + PREAMBLE_SFD_IFG;
}

}  // namespace rnic::roce
