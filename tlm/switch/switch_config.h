// SPDX-License-Identifier: Apache-2.0
// A switch's parameters (topology.switch and its per-switch overrides; tlm/switch/README.md,
// "Config"). SystemC-free: the buffer accounting (switch_buffer.h) and the egress schedulers
// (egress_scheduler.h) are built from it and unit-tested without a kernel.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "hw/common/config_reader.h"

namespace rnic::fabric {

constexpr uint32_t SWITCH_PRIORITIES = 8;

struct switch_config {
    // Shared buffer (bytes of frame data, without FCS/preamble/IFG).
    uint64_t buffer_bytes = 12u << 20;  // total packet buffer
    uint64_t reserved_bytes = 4096;     // guaranteed per egress queue (port, priority)
    double alpha = 1.0;                 // dynamic threshold: a queue may take alpha x free shared
    // Pipeline: a frame may start leaving `pipeline_ns` after its last bit arrived
    // (store-and-forward) or after its headers arrived (cut-through, when the egress rate is
    // not above the ingress rate; otherwise that frame is stored and forwarded).
    double pipeline_ns = 400.0;
    bool cut_through = false;
    // Scheduler between the 8 priorities of an egress port, by name (egress_scheduler.h).
    std::string scheduler = "strict";  // "strict" (7 highest) or "dwrr"
    std::array<uint32_t, SWITCH_PRIORITIES> dwrr_weights{1, 1, 1, 1, 1, 1, 1, 1};
    uint32_t dwrr_quantum_bytes = 1536;  // bytes per round per unit of weight
    // DSCP (0..63) -> priority; default: DSCP >> 3 (class selector).
    std::array<uint8_t, 64> dscp_to_priority{};
    // PFC, per priority: lossless priorities pause the upstream at XOFF; lossy ones tail-drop.
    std::array<bool, SWITCH_PRIORITIES> lossless{true, true, true, true, true, true, true, true};
    uint64_t xoff_bytes = 65536;  // ingress queue (port, priority) above this: pause sent
    uint64_t xon_bytes = 32768;   // ... at or below this again: resume (quanta 0) sent
    double xoff_alpha = 0;        // > 0: XOFF at min(xoff_bytes, reserved_bytes + xoff_alpha x free
                                  // shared pool); XON (xoff_bytes - xon_bytes) below it
    uint64_t headroom_bytes = 0;  // per ingress queue beyond XOFF; 0: computed per port from
                                  // its link (round trip + two maximum frames + pause frame)
    uint32_t pause_quanta = 0xFFFF;  // quanta in the XOFF frames (refreshed at half their time)
    // ECN: RED-style marking of ECT frames at egress enqueue, per priority.
    std::array<bool, SWITCH_PRIORITIES> ecn{};  // marking enabled
    std::array<uint64_t, SWITCH_PRIORITIES> kmin_bytes{};
    std::array<uint64_t, SWITCH_PRIORITIES> kmax_bytes{};
    std::array<double, SWITCH_PRIORITIES> pmax{};
    // Where the RED decision is taken: "enqueue" (on the egress queue the frame finds) or
    // "dequeue" (on the queue it leaves behind as it starts out: the mark is not delayed by the
    // queue it waits in; the HPCC authors' ns-3 switch, SwitchNotifyDequeue).
    std::string ecn_mark_at = "enqueue";
    // HPCC in-band telemetry: at egress, a frame that carries an INT stack (hw/roce/telemetry.h)
    // gets this hop's record (link rate, time, bytes the port sent, bytes queued on the port),
    // as the HPCC authors' switch does at dequeue (switch-node.cc, SwitchNotifyDequeue).
    // false: the stack passes untouched (a switch without INT).
    bool int_telemetry = false;
    // ECMP hash seed (5-tuple hash; the UDP source port carries RoCEv2's entropy) and the
    // seed of the marking decisions.
    uint64_t ecmp_seed = 0;
    uint64_t seed = 1;
    // Link failure (topology.link(s).faults.link_down_ns): a port sees its link down this long
    // after the loss of signal begins and up this long after it ends; the fabric's routes are
    // then recomputed without the link (reroute false: nothing is detected, frames are lost
    // while the link is down).
    bool reroute = true;
    double link_down_detect_ns = 10000;
    double link_up_detect_ns = 10000;
    // PFC watchdog (switch vendors' "PFC watchdog": SONiC/NVIDIA, Arista, Cisco): an egress
    // queue that holds frames while paused for detection_ns is in a PFC storm; for
    // restoration_ns it drops its frames and those that arrive for it ("drop") or sends them
    // ignoring the pauses ("forward"), then honours pauses again. detection_ns 0: off.
    struct watchdog {
        double detection_ns = 0;
        double restoration_ns = 200e6;
        std::string action = "drop";
    } pfc_watchdog;
    // PFC deadlock: an egress queue that holds frames while paused this long is stuck; a cycle
    // of stuck queues (pfc_deadlock.h) ends the run with a report naming it. 0: off.
    double pfc_deadlock_detect_ns = 1e6;
    switch_config();
};
// Reads switch keys (see tlm/switch/README.md); errors name their JSON path.
switch_config parse_switch_config(config::reader r);

}  // namespace rnic::fabric
