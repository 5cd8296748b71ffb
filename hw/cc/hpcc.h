// SPDX-License-Identifier: Apache-2.0
// HPCC: window and rate from in-band telemetry (Li et al., "HPCC: High Precision Congestion
// Control", SIGCOMM 2019, Algorithm 1). Every switch on the path appends a record per hop
// (link rate B, timestamp ts, bytes sent txBytes, queue length qlen) to each data packet; the
// receiver reflects the stack in its ACK; per ACK the sender estimates each link's normalised
// inflight bytes from the change since the last ACK, takes the largest, smooths it over the
// base RTT T and sets its window W (and rate W / T) against the target utilisation eta.
// Keys: rnic.cc.hpcc. Wire format: hw/roce/telemetry.h.
#pragma once

#include <cstdint>

#include "hw/cc/cc_algorithm.h"
#include "hw/common/config_reader.h"

namespace rnic::hw::cc {

struct hpcc_config {
    double eta = 0.95;        // target utilisation (paper section 5: 95 %)
    uint32_t max_stage = 5;   // additive steps before a multiplicative one (paper: 5)
    double base_rtt_us = 10;  // T: the fabric's base RTT (the authors' maxRtt); W_init = B_nic T
    // W_AI: additive increase per update. 0: the authors' setting, R_AI = 10 Mb/s per 25 Gb/s
    // of the NIC's line rate (run.py: ai = 10 * bw / 25), W_AI = R_AI x T.
    uint32_t w_ai_bytes = 0;
    double min_rate_mbps = 1000;  // floor of W / T (the authors' MIN_RATE 1000Mb/s)
};
hpcc_config parse_hpcc_config(config::reader r);

// Per-QP state (the QPC's scratch): the hop records of the last ACK (L), the smoothed U, the
// reference window W_c, the update sequence and the stage.
struct hpcc_state {
    uint64_t last_hop[roce::INT_MAX_HOPS];  // L[i]: raw records of the previous ACK
    double u;                               // U
    uint32_t wc_bytes;                      // W_c; 0: W_init (the QP has not been updated yet)
    uint32_t last_update_psn;               // lastUpdateSeq: snd_nxt at the last update
    uint8_t inc_stage;                      // incStage
    uint8_t nhop;                           // hops in last_hop; 0: no telemetry seen yet
};

class hpcc : public cc_algorithm {
public:
    hpcc(const hpcc_config& cfg, const cc_env& env);
    const char* name() const override { return "hpcc"; }
    cc_decision on_event(cc_qp_state& s, const cc_event& e) override;
    bool wants_telemetry() const override { return true; }
    // An ACK per packet (the authors' ns-3 acknowledges every packet: L2_ACK_INTERVAL 1), so
    // every packet's telemetry comes back.
    uint32_t ack_segment_bytes() const override { return 1; }

    // Derived values, shown for tests and documentation.
    uint64_t w_init_bytes() const { return m_w_init; }
    uint64_t w_ai_bytes() const { return m_w_ai; }

private:
    hpcc_config m_cfg;
    uint64_t m_line;    // NIC line rate, Mb/s
    double m_t_ns;      // T
    uint64_t m_w_init;  // B_nic x T, bytes
    uint64_t m_w_ai;    // bytes
    uint64_t m_w_min;   // min_rate_mbps x T, bytes
};

}  // namespace rnic::hw::cc
