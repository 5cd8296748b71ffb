// SPDX-License-Identifier: Apache-2.0
// Segmentation and header rules of the send path, shared by the SystemC model, the RTL wrapper
// and the tests: which packets a message becomes, their opcodes, PSNs and headers.
#pragma once

#include <cstdint>
#include <string>

#include "hw/roce/roce.h"
#include "hw/send_path/send_path_if.h"

namespace rnic::hw {

// The datapath is 64 bytes (512 bits) wide: one beat per cycle in and out.
constexpr uint32_t SEND_PATH_BEAT_BYTES = 64;

// One packet of a message, as the segmenter plans it.
struct packet_plan {
    uint8_t opcode = 0;
    uint32_t index = 0;           // packet number within the message
    uint32_t psn = 0;             // (descriptor psn + index) mod 2^24
    uint32_t payload_offset = 0;  // first payload byte within the message
    uint32_t payload_len = 0;
    bool first = false;         // the message's first packet (First/Only opcode)
    bool last = false;          // the message's last packet (Last/Only opcode)
    bool end = false;           // the descriptor's last packet (== last for a whole message;
                                // AckReq goes here)
    uint32_t header_bytes = 0;  // Ethernet .. last extension header
    uint32_t frame_bytes = 0;   // headers + payload + pad + ICRC (no FCS)
    uint32_t beats = 0;         // output beats: ceil(frame_bytes / 64)
    uint32_t input_beats = 0;   // payload beats consumed: ceil(payload_len / 64)

    // Index of the payload input beat (within this packet) that output beat j consumes, or -1.
    // Output beat j holds frame bytes [64j, 64j+64); payload byte i sits at header_bytes + i.
    // Since header_bytes mod 64 is never 0, beat j >= header_bytes/64 takes the upper part of
    // input beat j - header_bytes/64 - 1 (held from the previous cycle) and the lower part of
    // input beat j - header_bytes/64, which it consumes.
    int32_t input_beat_of(uint32_t j) const {
        const uint32_t hb = header_bytes / SEND_PATH_BEAT_BYTES;
        if (j < hb || j - hb >= input_beats) {
            return -1;
        }
        return static_cast<int32_t>(j - hb);
    }
};

// SEND, WRITE and READ_RESPONSE carry `length` payload bytes; READ_REQUEST and ACK none.
bool carries_payload(const tx_descriptor& d);
// ceil(length / pmtu) for messages with payload (1 when length is 0); 1 otherwise.
uint32_t packet_count(const tx_descriptor& d);
// The descriptor's packets: first = d.first_packet, end = one past its last (a segment of the
// message, or the whole message when first_packet and packets are 0).
uint32_t segment_end(const tx_descriptor& d);
// Payload bytes the descriptor's packets carry (= length for a whole message).
uint64_t segment_payload_bytes(const tx_descriptor& d);
// `d` is a segment that continues `prev`'s message at the packet after prev's last.
bool continues_segment(const tx_descriptor& prev, const tx_descriptor& d);
// PSN of the descriptor's first packet (psn + first_packet) and its number of packets.
uint32_t segment_first_psn(const tx_descriptor& d);
uint32_t segment_packets(const tx_descriptor& d);
// The descriptor holds packets of its message but not all of them.
bool is_segment(const tx_descriptor& d);
// Packet `index` (< packet_count(d)) of the message.
packet_plan plan_packet(const tx_descriptor& d, uint32_t index);
// Flow label of a QP pair as Linux computes it when the GRH has none (include/rdma/ib_verbs.h
// rdma_calc_flow_label): the 48-bit product of the two QPNs, folded to 20 bits (v ^= v >> 20;
// v ^= v >> 40). Symmetric: both directions of a connection get one label.
uint32_t rdma_calc_flow_label(uint32_t lqpn, uint32_t rqpn);
// RoCEv2 UDP source port of a flow label (ib_verbs.h rdma_flow_label_to_udp_sport): the low
// 14 bits XOR the high 6, in 0xC000..0xFFFF.
uint16_t rdma_flow_label_to_udp_sport(uint32_t flow_label);
// UDP source port (flow entropy) of the RoCEv2 frames of a QP: Linux's, from the flow label.
uint16_t udp_source_port(uint32_t src_qpn, uint32_t dest_qpn);
// The former rule (rnic.send_path.udp_sport "qpn_xor"): 0xC000 | 14-bit fold of
// src_qpn ^ dest_qpn (every QP i <-> i pair gets 0xC000).
uint16_t udp_source_port_qpn_xor(uint32_t src_qpn, uint32_t dest_qpn);
// Every header field of packet `p` of message `d`, for roce::build_frame.
roce::frame_header make_frame_header(const tx_descriptor& d, const packet_plan& p);
// Empty when the send path can build the message, else the reason it cannot.
std::string check_descriptor(const tx_descriptor& d);
const char* to_string(tx_kind k);

}  // namespace rnic::hw
