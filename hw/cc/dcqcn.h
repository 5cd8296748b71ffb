// SPDX-License-Identifier: Apache-2.0
// DCQCN reaction point as ConnectX-4 and later run it (Zhu et al., SIGCOMM 2015, with the
// firmware's parameters and their mlx5 names). Keys: rnic.cc.dcqcn; see README.md for the
// state machine and the source of every default.
#pragma once

#include <cstdint>

#include "hw/cc/cc_algorithm.h"
#include "hw/common/config_reader.h"

namespace rnic::hw::cc {

// Defaults: NVIDIA "DCQCN Parameters" (ConnectX-4 and later) table, and the mlx5_ib congestion
// debugfs (drivers/infiniband/hw/mlx5/cong.c) for np_min_time_between_cnps. Units as mlx5.
struct dcqcn_config {
    uint32_t rp_time_reset = 300;              // us between timer-driven rate increases
    uint32_t rp_byte_reset = 32767;            // bytes sent between byte-counter increases (0: off)
    uint32_t rp_threshold = 1;                 // stages before additive / hyper increase (F)
    uint32_t rp_ai_rate = 5;                   // Mb/s, additive increase of the target rate
    uint32_t rp_hai_rate = 50;                 // Mb/s, hyper increase of the target rate
    uint32_t rp_gd = 11;                       // decrease: rate * alpha / 2^rp_gd
    uint32_t rp_min_dec_fac = 50;              // %, one decrease keeps at least this much
    uint32_t rp_min_rate = 1;                  // Mb/s, floor of the current rate
    uint32_t rp_rate_to_set_on_first_cnp = 0;  // Mb/s, 0: the first CNP decreases as usual
    uint32_t rp_dce_tcp_g = 1019;              // alpha gain g, fixed point /1024
    uint32_t rp_dce_tcp_rtt = 1;               // us, alpha update period
    uint32_t rp_rate_reduce_monitor_period = 4;  // us, at most one decrease per period
    uint32_t rp_initial_alpha_value = 1023;      // alpha on the first CNP, /1024
    uint32_t rp_clamp_tgt_rate = 0;              // 1: every decrease sets target = current
    uint32_t rp_clamp_tgt_rate_ati = 1;          // 1: ... if a timer increase happened since
    uint32_t np_min_time_between_cnps = 0;       // us, per QP at the notification point
    uint32_t np_cnp_dscp = 48;                   // DSCP of CNPs
    int32_t np_cnp_prio = -1;                    // 802.1p priority of CNPs (tag); -1: untagged
};
dcqcn_config parse_dcqcn_config(config::reader r);

// Private per-QP state in the QPC slice (rate = R_C, target = R_T and alpha are the common
// fields of cc_qp_state).
struct dcqcn_state {
    uint64_t last_decrease_ps;  // time of the last rate decrease
    uint64_t alpha_period_ps;   // start of the current alpha-update period
    uint32_t byte_count;        // bytes sent since the last byte stage
    uint16_t time_stage;        // T: timer increases since the last decrease
    uint16_t byte_stage;        // BC: byte-counter increases since the last decrease
    uint8_t limited;            // a CNP arrived and the rate is not back at line rate
    uint8_t cnp_in_period;      // a CNP arrived in the current alpha period
    uint8_t timer_inc;          // a timer increase happened since the last decrease
    uint8_t dec_pending;        // a CNP came within the monitor period: decrease at its end
};

class dcqcn : public cc_algorithm {
public:
    dcqcn(const dcqcn_config& cfg, const cc_env& env);
    const char* name() const override { return "dcqcn"; }
    cc_decision on_event(cc_qp_state& s, const cc_event& e) override;
    bool wants_sent(const cc_qp_state& s) const override;
    const np_params* notification_point() const override { return &m_np; }

    // Alpha updates owed up to `now` (one per rp_dce_tcp_rtt since the first CNP), applied as
    // the hardware's periodic timer would have: g*alpha/1024 (+ 1024 - g if a CNP came in).
    void update_alpha(cc_qp_state& s, uint64_t now_ps) const;

private:
    void on_cnp(cc_qp_state& s, uint64_t now);
    void decrease(cc_qp_state& s, uint64_t now, bool first);
    uint64_t decrease_due(const cc_qp_state& s) const;  // end of the current monitor period
    void increase(cc_qp_state& s);
    cc_decision decision(const cc_qp_state& s) const;

    dcqcn_config m_cfg;
    uint64_t m_line;
    np_params m_np;
};

}  // namespace rnic::hw::cc
