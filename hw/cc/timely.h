// SPDX-License-Identifier: Apache-2.0
// TIMELY: RTT-gradient rate control (Mittal et al., "TIMELY: RTT-based Congestion Control for
// the Datacenter", SIGCOMM 2015, Algorithm 1), driven by the RTTs the NIC measures itself: the
// time from a packet leaving the transmit scheduler to the ACK that covers it. A delay-based
// algorithm of a different kind than DCQCN: no CNPs, no switch support. Keys: rnic.cc.timely.
#pragma once

#include <cstdint>

#include "hw/cc/cc_algorithm.h"
#include "hw/common/config_reader.h"

namespace rnic::hw::cc {

// Defaults: the paper's parameters (section 5, 10 Gb/s testbed values).
struct timely_config {
    double ewma_alpha = 0.875;   // EWMA weight of the new RTT difference
    double beta = 0.8;           // multiplicative decrease factor
    double add_step_mbps = 10;   // delta: additive increase step
    double t_low_us = 50;        // below: additive increase whatever the gradient
    double t_high_us = 500;      // above: decrease by beta (1 - T_high / RTT)
    double min_rtt_us = 20;      // normalises the gradient
    uint32_t hai_threshold = 5;  // N: after N negative gradients in a row, increase by N delta
    double min_rate_mbps = 10;   // floor of the rate
    // One RTT sample per segment of this many bytes of a message (the paper's 16-64 KB
    // segments; 64 KiB, the segment its authors' reference code gives T_low for); 0: one per
    // message (the ACK of its last packet).
    uint32_t segment_bytes = 65536;
};
timely_config parse_timely_config(config::reader r);

struct timely_state {
    double rate_mbps;    // exact rate (0 before the first sample: line rate)
    double rtt_diff_ps;  // EWMA of RTT differences
    uint64_t prev_rtt_ps;
    uint32_t negative_run;  // completions in a row with gradient <= 0
    uint8_t have_prev;
};

class timely : public cc_algorithm {
public:
    timely(const timely_config& cfg, const cc_env& env);
    const char* name() const override { return "timely"; }
    cc_decision on_event(cc_qp_state& s, const cc_event& e) override;
    bool wants_acks() const override { return true; }
    uint32_t ack_segment_bytes() const override { return m_cfg.segment_bytes; }

private:
    timely_config m_cfg;
    double m_line;
};

}  // namespace rnic::hw::cc
