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
    uint32_t rp_time_reset = 300;                // us between timer-driven rate increases
    uint32_t rp_byte_reset = 32767 * 64;         // bytes between byte-counter increases (0: off);
                                                 // mlx5 32767 in 64-byte units (README)
    uint32_t rp_threshold = 1;                   // stages before additive / hyper increase (F)
    uint32_t rp_ai_rate = 5;                     // Mb/s, additive increase of the target rate
    uint32_t rp_hai_rate = 50;                   // Mb/s, hyper increase of the target rate
    uint32_t rp_gd = 11;                         // decrease: rate * alpha / 2^rp_gd
    uint32_t rp_min_dec_fac = 50;                // %, one decrease keeps at least this much
    uint32_t rp_min_rate = 1;                    // Mb/s, floor of the current rate
    uint32_t rp_rate_to_set_on_first_cnp = 0;    // Mb/s, 0: the first CNP decreases as usual
    uint32_t rp_dce_tcp_g = 1019;                // alpha gain g, fixed point /1024
    uint32_t rp_dce_tcp_rtt = 1;                 // us, alpha update period
    uint32_t rp_rate_reduce_monitor_period = 4;  // us, at most one decrease per period
    uint32_t rp_initial_alpha_value = 1023;      // alpha on the first CNP, /1024
    uint32_t rp_clamp_tgt_rate = 0;              // 1: every decrease sets target = current
    uint32_t rp_clamp_tgt_rate_ati = 1;          // 1: ... if a timer increase happened since
    uint32_t np_min_time_between_cnps = 0;       // us, per QP at the notification point
    uint32_t np_cnp_dscp = 48;                   // DSCP of CNPs
    int32_t np_cnp_prio = -1;                    // 802.1p priority of CNPs (tag); -1: untagged
};
dcqcn_config parse_dcqcn_config(config::reader r);

// Fixed-point formats of the reaction point's state (hw/cc/README.md, "Precision"):
// alpha is an unsigned fraction with ALPHA_FRAC_BITS bits (1.0 = 2^20; the 10-bit value mlx5
// shows, in initial_alpha_value's and dce_tcp_g's 1/1024 units, is alpha >> 10), and the
// rates R_C and R_T are Mb/s with RATE_FRAC_BITS fractional bits (1/256 Mb/s).
constexpr uint32_t ALPHA_FRAC_BITS = 20;
constexpr uint32_t ALPHA_SHOWN_SHIFT = ALPHA_FRAC_BITS - 10;  // to mlx5's 1/1024 units
constexpr uint32_t ALPHA_MAX = (1u << ALPHA_FRAC_BITS) - 1;
constexpr uint32_t RATE_FRAC_BITS = 8;

// Private per-QP state in the QPC slice. The integer Mb/s of R_C and R_T are the common fields
// rate_mbps and target_mbps of cc_qp_state (the pacer's rate); their fractions are here, and so
// is the full-precision alpha (cc_qp_state::alpha shows its top 10 bits).
struct dcqcn_state {
    uint64_t last_decrease_ps;  // time of the last rate decrease
    uint64_t alpha_period_ps;   // start of the current alpha-update period
    uint32_t alpha;             // alpha, ALPHA_FRAC_BITS fraction
    uint32_t byte_count;        // bytes sent since the last byte stage
    uint16_t time_stage;        // T: timer increases since the last decrease
    uint16_t byte_stage;        // BC: byte-counter increases since the last decrease
    uint8_t flags;              // LIMITED | CNP_IN_PERIOD | DEC_PENDING
    uint8_t rate_frac;          // R_C's fraction, 1/256 Mb/s
    uint8_t target_frac;        // R_T's fraction, 1/256 Mb/s
};

class dcqcn : public cc_algorithm {
public:
    dcqcn(const dcqcn_config& cfg, const cc_env& env);
    const char* name() const override { return "dcqcn"; }
    cc_decision on_event(cc_qp_state& s, const cc_event& e) override;
    bool wants_sent(const cc_qp_state& s) const override;
    const np_params* notification_point() const override { return &m_np; }

    // Alpha updates owed up to `now` (one per rp_dce_tcp_rtt since the first CNP), applied as
    // the hardware's periodic timer would have: floor(alpha g / 1024) (+ (1024 - g) / 1024 if a
    // CNP came in the period), in the 20-bit fraction.
    void update_alpha(cc_qp_state& s, uint64_t now_ps) const;

private:
    void on_cnp(cc_qp_state& s, uint64_t now);
    void decrease(cc_qp_state& s, uint64_t now, bool first);
    uint64_t decrease_due(const cc_qp_state& s) const;  // end of the current monitor period
    void increase(cc_qp_state& s);
    void set_rates(cc_qp_state& s, uint64_t rc_q, uint64_t rt_q) const;
    cc_decision decision(const cc_qp_state& s) const;

    dcqcn_config m_cfg;
    uint64_t m_line;
    np_params m_np;
};

}  // namespace rnic::hw::cc
