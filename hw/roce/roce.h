// SPDX-License-Identifier: Apache-2.0
// RoCEv2 (IPv4) wire format: opcode table, frame builder with ICRC, validating parser.
//
// Pure C++ (no SystemC): the send path, the receive path, the Ethernet link and the pcap writer
// share it. Layout and ICRC follow IBA annex A17 as summarised in
// /work/shared/reference/rocev2.md. Not modelled: IPv6 (GRH), VLAN tags, IPv4 options, UC/UD
// transports (DETH), atomics (AtomicETH/AtomicAckETH) and the Ethernet FCS (the MAC adds it;
// wire_bytes() counts it).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hw/roce/protocol.h"   // PSN arithmetic, AETH syndromes, IPv4 checksum
#include "hw/roce/telemetry.h"  // HPCC in-band telemetry stack

namespace rnic::roce {

// Base transport header opcodes (RC transport, plus the RoCEv2 congestion notification packet).
enum opcode : uint8_t {
    RC_SEND_FIRST = 0x00,
    RC_SEND_MIDDLE,
    RC_SEND_LAST,
    RC_SEND_LAST_IMM,
    RC_SEND_ONLY,
    RC_SEND_ONLY_IMM,
    RC_WRITE_FIRST,
    RC_WRITE_MIDDLE,
    RC_WRITE_LAST,
    RC_WRITE_LAST_IMM,
    RC_WRITE_ONLY,
    RC_WRITE_ONLY_IMM,
    RC_READ_REQUEST,
    RC_READ_RESP_FIRST,
    RC_READ_RESP_MIDDLE,
    RC_READ_RESP_LAST,
    RC_READ_RESP_ONLY,
    RC_ACK = 0x11,
    RC_SEND_LAST_INV = 0x16,
    RC_SEND_ONLY_INV = 0x17,
    CNP = 0x81,
};

constexpr uint16_t ROCEV2_UDP_PORT = 4791;

// Header sizes in bytes, in wire order.
constexpr size_t ETH_HEADER_BYTES = 14;
constexpr size_t IPV4_HEADER_BYTES = 20;
constexpr size_t UDP_HEADER_BYTES = 8;
constexpr size_t BTH_BYTES = 12;
constexpr size_t RETH_BYTES = 16;
constexpr size_t AETH_BYTES = 4;
constexpr size_t IMMDT_BYTES = 4;
constexpr size_t IETH_BYTES = 4;
constexpr size_t CNP_RESERVED_BYTES = 16;  // CNP: 16 reserved (zero) bytes follow the BTH
constexpr size_t ICRC_BYTES = 4;
constexpr size_t FCS_BYTES = 4;
// Offset of the BTH in a frame (Ethernet + IPv4 without options + UDP).
constexpr size_t BTH_OFFSET = ETH_HEADER_BYTES + IPV4_HEADER_BYTES + UDP_HEADER_BYTES;
constexpr uint16_t ETHERTYPE_IPV4 = 0x0800;
constexpr uint8_t IP_PROTO_UDP = 17;
struct mac_addr {
    std::array<uint8_t, 6> b{};
};

// Base transport header, host-order fields.
struct bth {
    uint8_t opcode = 0;
    bool se = false, migreq = false;
    uint8_t pad_count = 0;  // set by build_frame from the payload length
    uint8_t tver = 0;
    uint16_t pkey = 0xFFFF;
    bool fecn = false, becn = false;
    uint32_t dest_qp = 0;  // 24 bits
    bool ack_req = false;
    uint32_t psn = 0;  // 24 bits
};

// RDMA extended transport header (WRITE First/Only, READ Request).
struct reth {
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t dma_length = 0;
};

// ACK extended transport header (ACK, READ Response First/Last/Only).
struct aeth {
    uint8_t syndrome = 0;
    uint32_t msn = 0;  // 24 bits
};

// Which extension headers an opcode carries, in wire order (RETH, AETH, ImmDt, IETH), per IBA.
// is_only is also set for the single-packet READ Request, ACK and CNP.
struct opcode_info {
    bool valid;
    bool has_reth, has_aeth, has_immdt, has_ieth;
    bool has_payload;
    bool is_first, is_middle, is_last, is_only;
    const char* name;
};

// Table look-up; valid=false (name "UNKNOWN") for opcodes this library does not model.
const opcode_info& info(uint8_t opcode);

// Everything before the payload.
struct frame_header {
    mac_addr dst_mac, src_mac;
    uint32_t src_ip = 0, dst_ip = 0;  // host order
    uint8_t tos = 0x02;               // DSCP 0, ECN = ECT(0)
    uint8_t ttl = 64;
    uint16_t ip_id = 0;
    uint16_t udp_src_port = 0xC000;  // flow entropy, >= 0xC000 by convention
    bth bth_;
    reth reth_;
    aeth aeth_;
    uint32_t immdt = 0;
    uint32_t ieth_rkey = 0;
    // HPCC in-band telemetry: the frame carries an INT stack (INT_STACK_BYTES) between payload/pad
    // and ICRC, flagged by BTH8_INT_FLAG (hw/roce/README.md, "In-band telemetry").
    bool telemetry = false;
    int_stack int_;
};

// Eth+IPv4+UDP+BTH+extension headers (no payload/pad/ICRC); 0 for unknown opcodes.
// For CNP the 16 reserved bytes after the BTH count as header.
size_t header_bytes(uint8_t opcode);

// Full frame without FCS: headers + payload + pad to 4 B + ICRC; 0 for unknown opcodes.
// A frame with telemetry is INT_STACK_BYTES longer.
size_t frame_bytes(uint8_t opcode, size_t payload_len);

// Pad bytes that bring a payload of `payload_len` bytes to a multiple of 4.
constexpr uint8_t pad_bytes(size_t payload_len) {
    return static_cast<uint8_t>((4 - (payload_len & 3)) & 3);
}

// Appends one frame (no FCS) to `out`: IPv4 header checksum computed, DF set, UDP checksum 0,
// BTH pad count set from `len` (h.bth_.pad_count is ignored), pad bytes zero, ICRC appended
// least significant byte first; with h.telemetry the INT stack h.int_ after the pad. Throws
// std::invalid_argument for an unknown opcode or a payload on an opcode that carries none,
// std::length_error if the frame exceeds the IPv4 total length. Allocates nothing besides growing
// `out`.
void build_frame(const frame_header& h, const uint8_t* payload, size_t len,
                 std::vector<uint8_t>& out);

// ICRC of a frame that starts at the Ethernet header (IPv4 without options) and is
// `len_without_icrc` bytes long without its ICRC. Covers an LRH stand-in of eight 0xFF, then
// everything after the Ethernet header with TOS, TTL, IP checksum, UDP checksum and BTH byte 4
// (FECN/BECN/reserved) read as all ones, and, when the BTH flags an INT stack, the stack's
// INT_STACK_BYTES before the ICRC read as all ones too (switches write it on the way). Returns
// the CRC value; on the wire its least significant byte comes first.
uint32_t compute_icrc(const uint8_t* frame, size_t len_without_icrc);

enum class parse_error {
    NONE,
    TOO_SHORT,        // shorter than the fixed headers
    NOT_IPV4,         // EtherType or IP version is not IPv4
    BAD_IP_HEADER,    // IHL != 5 (options) or a fragment
    BAD_IP_CHECKSUM,  // IPv4 header checksum wrong
    NOT_UDP,          // IP protocol is not UDP
    NOT_ROCE_PORT,    // UDP destination port is not 4791
    BAD_LENGTH,       // IP total length / UDP length / frame length / opcode headers disagree
    UNKNOWN_OPCODE,   // opcode not modelled
    BAD_ICRC,         // invariant CRC wrong
    BAD_PAD,          // pad count larger than payload+pad, or payload+pad not 4-byte aligned
};
const char* to_string(parse_error e);

struct parsed_frame {
    frame_header hdr;
    size_t payload_offset = 0;  // from the start of the frame
    size_t payload_len = 0;     // without pad (and without the INT stack)
};

// Validates everything (lengths consistent with IP total length / UDP length, IP checksum,
// opcode, pad count, ICRC) and never reads out of bounds on any input. Bytes after the IP total
// length (Ethernet minimum-size padding) are ignored. `out` is only meaningful on NONE.
parse_error parse_frame(const uint8_t* frame, size_t len, parsed_frame& out);

// Bytes one frame occupies on the Ethernet wire: frame + FCS 4 (frame padded to the 64 B
// minimum) + preamble/SFD 8 + inter-frame gap 12.
size_t wire_bytes(size_t frame_len_without_fcs);

}  // namespace rnic::roce
