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
    // At low rates a segment shrinks so that a sample comes at least every this many us:
    // segment = clamp(rate x low_rate_sample_us / 8, one packet, segment_bytes); 0: fixed
    // segments (a QP at 10 Mb/s then waits ~52 ms for a 64 KiB segment's sample).
    double low_rate_sample_us = 100;
    // The patched TIMELY of Zhu et al., "ECN or Delay: Lessons Learnt from Analysis of DCQCN and
    // TIMELY" (CoNEXT 2016, section 4): between T_low and T_high the rate follows
    // R <- delta (1 - w(g)) + R (1 - beta w(g) (RTT - RTT_ref) / RTT_ref), w(g) = 0 for
    // g <= -1/4, 2g + 1/2 between, 1 for g >= 1/4: a unique, fair fixed point (the original's
    // gradient-only rule has a continuum of them: any split of the link is stable).
    bool patched = false;
    double rtt_ref_us = 100;  // patched: the reference RTT, within (t_low_us, t_high_us)
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
    uint32_t ack_segment_bytes(const cc_qp_state& s) const override;

private:
    timely_config m_cfg;
    double m_line;
};

}  // namespace rnic::hw::cc
