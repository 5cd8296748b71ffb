// SPDX-License-Identifier: Apache-2.0
// Send path parameters (rnic.send_path).
#pragma once

#include <cstdint>
#include <string>

#include "hw/common/config_reader.h"

namespace rnic::hw {

// The model's cycle timing (rnic.send_path.timing), learnt from an RTL by
// `send_path_calibrate` (rtl/send_path/CONTRACT.md, "Timing the model adapts to"). Defaults:
// rtl/send_path/send_path.sv (first beat 4 edges after the descriptor).
struct send_path_timing {
    uint32_t header_edges = 1;      // descriptor (or previous packet's header) to header register
    uint32_t output_registers = 1;  // registers a frame beat passes after the assembler
    uint32_t frame_gap = 0;         // idle edges between two frames of one message
    uint32_t message_gap = 0;       // idle edges between the last frame of a message and the next
    bool operator==(const send_path_timing& o) const {
        return header_edges == o.header_edges && output_registers == o.output_registers &&
               frame_gap == o.frame_gap && message_gap == o.message_gap;
    }
    // First beat's handshake edge after the descriptor's, with payload ready and no back-pressure.
    uint32_t first_beat_latency() const { return header_edges + 2 + output_registers; }
    std::string describe() const;  // "header_edges=1 output_registers=1 ..."
};

// The quiescence window the built-in RTL declares (CMake RNICSIM_SEND_PATH_RTL_QUIESCENT_EDGES,
// 4 for rtl/send_path/send_path.sv): the default of rnic.send_path.rtl.quiescent_edges.
uint32_t built_in_rtl_quiescent_edges();

// How the wrapper clocks the RTL (rnic.send_path.rtl).
struct send_path_rtl_config {
    // "gated": the clock stops after quiescent_edges edges without a handshake (CONTRACT.md,
    // Quiescence) until an input changes; "free": every edge is evaluated (slow, for RTL that
    // keeps working without handshakes).
    std::string clock = "gated";
    uint32_t quiescent_edges = built_in_rtl_quiescent_edges();
    // Gated clock: on restart, up to this many of the stopped edges are evaluated with the
    // inputs unchanged; an output that changes on one fails the run (quiescence rule).
    uint32_t quiescence_check_edges = 4;
};

// Lockstep comparison (rnic.send_path.lockstep): "exact" (every beat on the same edge),
// "functional" (frames, bytes and order; timing differences counted in stats) or "tolerance"
// (as functional, and every frame within tolerance_cycles edges of the model's).
struct send_path_lockstep_config {
    std::string compare = "exact";
    uint32_t tolerance_cycles = 0;
};

struct send_path_config {
    std::string impl = "model";           // "model" | "rtl" | "lockstep"
    uint32_t desc_fifo_depth = 8;         // message descriptors
    uint32_t payload_fifo_bytes = 16384;  // payload buffer in front of the packet builder
    send_path_timing timing;
    send_path_rtl_config rtl;
    send_path_lockstep_config lockstep;
    // DSCP of the RoCEv2 frames it builds (ECN field ECT(0)); a switch maps it to a priority
    // (default DSCP >> 3) for queueing and PFC. The RTL sends DSCP 0 only.
    uint32_t dscp = 0;
    // UDP source port (ECMP entropy) of the RoCEv2 frames: "flow_label" (Linux and its RoCE
    // drivers: rdma_flow_label_to_udp_sport(rdma_calc_flow_label(src_qpn, dest_qpn)), every QP
    // of a host pair its own port) or "qpn_xor" (0xC000 | fold(src_qpn ^ dest_qpn), the former
    // rnicsim rule: QPs numbered alike at both ends share one port; model only).
    std::string udp_sport = "flow_label";
    // Cut-through into the MAC: a frame enters the MAC transmit FIFO at its first beat, with
    // the time its last beat is in, and the MAC starts it once it cannot underrun (README.md,
    // "Timing"); false: at its last beat (store and forward). Model only: the RTL wrapper
    // collects a frame's beats and hands it over whole.
    bool cut_through = false;
};
send_path_config parse_send_path_config(config::reader r);

}  // namespace rnic::hw
