// SPDX-License-Identifier: Apache-2.0
// The provider's CM messages and their wire form: IB CM MADs (IBA 12.6, base version 1, class
// 0x07, class version 2, method Send) with RoCE's IP-based addressing (IBA annex A11: the REQ's
// private data starts with the 36 B IP CM header, the Service ID is the RDMA-CM TCP port space
// 0x0000000001060000 | port, the port GIDs are IPv4-mapped). The provider adds a one-byte
// length before the consumer's private data (NDK reports the exact length; CM's private data
// fields have fixed sizes): REQ 92 B = IP CM header 36 + length 1 + caller data 55; REP 196 B
// and REJ 148 B = length 1 + callee data (147 at most, REJ's limit).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hw/hsi/hsi.h"
#include "ndk_shim/ntstatus.h"

namespace rnic::ndk {

// IBA REJ reasons the provider uses (IBA table 109).
enum cm_reject_reason : uint16_t {
    CM_REJ_NO_RESOURCES = 3,  // the CM's communication-ID table is full
    CM_REJ_TIMEOUT = 4,
    CM_REJ_INVALID_SERVICE_ID = 8,  // no listener on the port
    CM_REJ_STALE_CONN = 10,
    CM_REJ_CONSUMER = 28,  // NdkReject
};

struct cm_message {
    enum kind : uint8_t { REQ, MRA, REJ, REP, RTU, DREQ, DREP };
    kind type = REQ;
    uint32_t src_conn = 0;  // sender's local communication ID
    uint32_t dst_conn = 0;  // receiver's communication ID (0 in a REQ)
    uint32_t src_ip = 0;    // host order (REQ: IP CM header; others: the IP header)
    uint16_t src_port = 0;  // REQ only
    uint32_t dst_ip = 0;
    uint16_t dst_port = 0;  // REQ only (from the Service ID)
    // Transport attributes of the sender's QP (REQ, REP; DREQ carries the receiver's QPN).
    uint32_t qpn = 0;
    uint32_t psn = 0;
    uint32_t ird = 0;  // responder resources: inbound reads the sender accepts
    uint32_t ord = 0;  // initiator depth: outbound reads the sender wants to issue
    uint8_t pmtu_log = 10;
    uint8_t retry_count = 7;
    uint8_t rnr_retry = 7;
    uint8_t timeout_log = 14;                  // local ACK timeout
    std::array<uint8_t, 6> mac{};              // sender's MAC (from the Ethernet header)
    uint16_t reject_reason = CM_REJ_CONSUMER;  // REJ
    uint8_t rejected_msg = 0;                  // REJ / MRA: 0 REQ, 1 REP, 2 other
    std::vector<uint8_t> private_data;         // the consumer's bytes (exact length)
};

// Status a Connect completes with for a REJ's reason.
NTSTATUS reject_status(uint16_t reason);

constexpr uint32_t CM_REQ_CALLER_DATA = 55;
constexpr uint32_t CM_CALLEE_DATA = 147;

// MAD bytes of `m` (type, IDs, QP attributes, private data). `tid` is the transaction ID.
std::array<uint8_t, hsi::MAD_BYTES> encode_cm_mad(const cm_message& m, uint64_t tid);
// Parses a CM MAD; false (m unspecified) for other classes, attributes or bad lengths.
// Addresses that the MAD does not carry (IPs of non-REQ messages, MAC) are left alone.
bool decode_cm_mad(const uint8_t* mad, cm_message& m);

}  // namespace rnic::ndk
