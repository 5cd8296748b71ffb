// SPDX-License-Identifier: Apache-2.0
// Segmentation and header rules of the send path.
#include "hw/send_path/send_path_packets.h"

#include <algorithm>
#include <cstring>

namespace rnic::hw {

bool carries_payload(const tx_descriptor& d) {
    return d.kind == tx_kind::SEND || d.kind == tx_kind::WRITE || d.kind == tx_kind::READ_RESPONSE;
}

uint32_t packet_count(const tx_descriptor& d) {
    if (!carries_payload(d) || d.length == 0) {
        return 1;
    }
    return (d.length + d.pmtu - 1) / d.pmtu;
}

uint32_t segment_end(const tx_descriptor& d) {
    const uint32_t n = packet_count(d);
    if (d.packets == 0) {
        return n;
    }
    return std::min(n, d.first_packet + d.packets);
}

uint64_t segment_payload_bytes(const tx_descriptor& d) {
    if (!carries_payload(d)) {
        return 0;
    }
    if (d.first_packet == 0 && d.packets == 0) {
        return d.length;
    }
    const uint64_t from = uint64_t{d.first_packet} * d.pmtu;
    const uint64_t to = std::min<uint64_t>(d.length, uint64_t{segment_end(d)} * d.pmtu);
    return to > from ? to - from : 0;
}

uint32_t segment_first_psn(const tx_descriptor& d) {
    return (d.psn + d.first_packet) & roce::PSN_MASK;
}

uint32_t segment_packets(const tx_descriptor& d) {
    const uint32_t end = segment_end(d);
    return end > d.first_packet ? end - d.first_packet : 0;
}

bool is_segment(const tx_descriptor& d) {
    return d.first_packet != 0 || segment_end(d) != packet_count(d);
}

bool continues_segment(const tx_descriptor& prev, const tx_descriptor& d) {
    return d.first_packet != 0 && d.first_packet == segment_end(prev) &&
           prev.src_qpn == d.src_qpn && prev.psn == d.psn && prev.kind == d.kind;
}

namespace {
uint8_t choose_opcode(const tx_descriptor& d, bool first, bool last) {
    using namespace roce;
    switch (d.kind) {
        case tx_kind::SEND:
            if (first && last) {
                return d.with_imm ? RC_SEND_ONLY_IMM : d.with_inv ? RC_SEND_ONLY_INV : RC_SEND_ONLY;
            }
            if (last) {
                return d.with_imm ? RC_SEND_LAST_IMM : d.with_inv ? RC_SEND_LAST_INV : RC_SEND_LAST;
            }
            return first ? RC_SEND_FIRST : RC_SEND_MIDDLE;
        case tx_kind::WRITE:
            if (first && last) {
                return d.with_imm ? RC_WRITE_ONLY_IMM : RC_WRITE_ONLY;
            }
            if (last) {
                return d.with_imm ? RC_WRITE_LAST_IMM : RC_WRITE_LAST;
            }
            return first ? RC_WRITE_FIRST : RC_WRITE_MIDDLE;
        case tx_kind::READ_RESPONSE:
            if (first && last) {
                return RC_READ_RESP_ONLY;
            }
            if (last) {
                return RC_READ_RESP_LAST;
            }
            return first ? RC_READ_RESP_FIRST : RC_READ_RESP_MIDDLE;
        case tx_kind::READ_REQUEST:
            return RC_READ_REQUEST;
        case tx_kind::ACK:
            return RC_ACK;
    }
    return RC_SEND_ONLY;
}
}  // namespace

packet_plan plan_packet(const tx_descriptor& d, uint32_t index) {
    packet_plan p;
    const uint32_t n = packet_count(d);
    p.index = index;
    p.first = index == 0;
    p.last = index + 1 == n;
    p.end = index + 1 == segment_end(d);
    p.psn = (d.psn + index) & roce::PSN_MASK;
    if (carries_payload(d)) {
        p.payload_offset = index * d.pmtu;
        p.payload_len = p.last ? d.length - p.payload_offset : d.pmtu;
    }
    p.opcode = choose_opcode(d, p.first, p.last);
    p.header_bytes = static_cast<uint32_t>(roce::header_bytes(p.opcode));
    p.frame_bytes = static_cast<uint32_t>(roce::frame_bytes(p.opcode, p.payload_len) +
                                          (d.telemetry ? roce::INT_STACK_BYTES : 0));
    p.beats = (p.frame_bytes + SEND_PATH_BEAT_BYTES - 1) / SEND_PATH_BEAT_BYTES;
    p.input_beats = (p.payload_len + SEND_PATH_BEAT_BYTES - 1) / SEND_PATH_BEAT_BYTES;
    return p;
}

uint32_t rdma_calc_flow_label(uint32_t lqpn, uint32_t rqpn) {
    uint64_t v = static_cast<uint64_t>(lqpn & roce::QPN_MASK) * (rqpn & roce::QPN_MASK);
    v ^= v >> 20;
    v ^= v >> 40;
    return static_cast<uint32_t>(v & 0xFFFFF);
}

uint16_t rdma_flow_label_to_udp_sport(uint32_t flow_label) {
    const uint32_t low = flow_label & 0x3FFF;
    const uint32_t high = flow_label & 0xFC000;
    return static_cast<uint16_t>(0xC000 | (low ^ (high >> 14)));
}

uint16_t udp_source_port(uint32_t src_qpn, uint32_t dest_qpn) {
    return rdma_flow_label_to_udp_sport(rdma_calc_flow_label(src_qpn, dest_qpn));
}

uint16_t udp_source_port_qpn_xor(uint32_t src_qpn, uint32_t dest_qpn) {
    const uint32_t x = (src_qpn ^ dest_qpn) & roce::QPN_MASK;
    return static_cast<uint16_t>(0xC000 | ((x ^ (x >> 14)) & 0x3FFF));
}

roce::frame_header make_frame_header(const tx_descriptor& d, const packet_plan& p) {
    roce::frame_header h;
    std::memcpy(h.dst_mac.b.data(), d.dst_mac.data(), 6);
    std::memcpy(h.src_mac.b.data(), d.src_mac.data(), 6);
    h.src_ip = d.src_ip;
    h.dst_ip = d.dst_ip;
    h.udp_src_port = udp_source_port(d.src_qpn, d.dest_qpn);
    const bool request =
        d.kind == tx_kind::SEND || d.kind == tx_kind::WRITE || d.kind == tx_kind::READ_REQUEST;
    h.bth_.opcode = p.opcode;
    // SE only on the message's last packet of a SEND/WRITE; AckReq only on the descriptor's
    // last packet of a request (the message's last, or a segment's last: tx_descriptor).
    h.bth_.se = p.last && d.solicited && (d.kind == tx_kind::SEND || d.kind == tx_kind::WRITE);
    h.bth_.ack_req = p.end && d.ack_req && request;
    h.bth_.dest_qp = d.dest_qpn & roce::QPN_MASK;
    h.bth_.psn = p.psn;
    h.reth_.va = d.remote_va;
    h.reth_.rkey = d.rkey;
    h.reth_.dma_length = d.length;
    h.aeth_.syndrome = d.syndrome;
    h.aeth_.msn = d.msn & 0xFFFFFF;
    h.immdt = d.imm_or_key;
    h.ieth_rkey = d.imm_or_key;
    h.telemetry = d.telemetry;
    h.int_ = d.int_;
    return h;
}

std::string check_descriptor(const tx_descriptor& d) {
    if (d.pmtu < 256 || d.pmtu > 4096 || (d.pmtu & (d.pmtu - 1)) != 0) {
        return "pmtu " + std::to_string(d.pmtu) + " is not 256, 512, 1024, 2048 or 4096";
    }
    if (d.length > 0x80000000u) {
        return "length " + std::to_string(d.length) + " exceeds 2^31";
    }
    if (d.with_imm && d.with_inv) {
        return "with_imm and with_inv are exclusive";
    }
    if (d.with_imm && d.kind != tx_kind::SEND && d.kind != tx_kind::WRITE) {
        return std::string("with_imm on ") + to_string(d.kind);
    }
    if (d.with_inv && d.kind != tx_kind::SEND) {
        return std::string("with_inv on ") + to_string(d.kind);
    }
    if (d.first_packet != 0 || d.packets != 0) {
        const uint32_t n = packet_count(d);
        if (!carries_payload(d) || d.first_packet >= n || d.packets > n - d.first_packet) {
            return std::string("segment of packets ") + std::to_string(d.first_packet) + " + " +
                   std::to_string(d.packets) + " outside the " + std::to_string(n) + "-packet " +
                   to_string(d.kind) + " message";
        }
    }
    return {};
}

const char* to_string(tx_kind k) {
    switch (k) {
        case tx_kind::SEND:
            return "SEND";
        case tx_kind::WRITE:
            return "WRITE";
        case tx_kind::READ_REQUEST:
            return "READ_REQUEST";
        case tx_kind::READ_RESPONSE:
            return "READ_RESPONSE";
        case tx_kind::ACK:
            return "ACK";
    }
    return "?";
}

}  // namespace rnic::hw
