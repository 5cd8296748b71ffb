// SPDX-License-Identifier: Apache-2.0
// Congestion-control engine of one NIC (reaction point): hosts the selected algorithm, keeps
// its per-QP state in the QP context (every CNP, ACK and timer event reads and writes the QPC
// through the context cache, so the state is cached, evicted and written back like the rest of
// the QPC), runs one timer queue for all QPs, stamps packets for the NIC-measured RTT, and
// gives the rates it decides to the transmit scheduler's pacer (hw/tx_engine/pacer.h).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include <systemc>

#include "hw/cc/cc_algorithm.h"
#include "hw/common/clock_domain.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/context_cache/context_cache.h"
#include "hw/tx_engine/pacer.h"

namespace rnic::hw::cc {

class cc_engine : public sc_core::sc_module {
public:
    // Cycles of the rate computation per event (after the QPC access).
    static constexpr uint32_t EVENT_CYCLES = 4;

    cc_engine(sc_core::sc_module_name name, std::unique_ptr<cc_algorithm> algo,
              const clock_domain& clk, context_store& contexts, pacer& pacer,
              uint64_t line_rate_mbps, sim_context& ctx);

    void set_context_cache(context_cache* cache) { m_cache = cache; }
    const cc_algorithm& algorithm() const { return *m_algo; }

    // --- events ---
    // The pacer handed packet `psn` (`wire_bytes` on the wire) of `qpn` on (transmit thread).
    void on_sent(uint32_t qpn, uint32_t psn, uint32_t wire_bytes);
    // A frame of this NIC starts on the wire (the MAC; delay-based algorithms only): a request
    // packet's RTT stamp moves from the scheduler's hand-off to this instant, so the sample
    // leaves out the payload read and the send path's FIFO (TIMELY stamps at the NIC's MAC).
    void on_wire(const std::vector<uint8_t>& frame);
    // An ACK (or the implied ACK of a NAK) covering `psn` arrived for requester `qpn`.
    void on_ack(uint32_t qpn, uint32_t psn, bool nak);
    // HPCC: the ACK about to be taken (on_ack) reflects this INT stack.
    void on_telemetry(uint32_t qpn, const roce::int_stack& s);
    // HPCC: a frame of this NIC starts on the wire; counts the INT stacks it sends.
    void count_telemetry(const std::vector<uint8_t>& frame);
    // A CNP for `qpn` arrived (from the notification point).
    void on_cnp(uint32_t qpn);
    // The QP was reset or destroyed: its state, timer and stamps start over.
    void reset_qp(uint32_t qpn);

    // One row per change of a QP's rate, target or alpha (cc.csv).
    struct rate_row {
        uint64_t time_ps;
        uint32_t qpn;
        uint64_t rate_mbps;  // 0 in the state = line rate; written here as the line rate
        uint64_t target_mbps;
        uint32_t alpha;
        uint32_t cnps;
    };
    const std::vector<rate_row>& rate_log() const { return m_log; }
    uint64_t line_rate_mbps() const { return m_line; }

    struct stats {
        uint64_t events = 0;        // CNP / ACK / NAK / timer events processed
        uint64_t timer_events = 0;  // of which timer expiries
        uint64_t rate_changes = 0;  // decisions that changed a QP's rate
        uint64_t sent_events = 0;   // SENT events given to the algorithm
        uint64_t rtt_samples = 0;   // ACK/NAK events carrying an RTT (delay-based algorithms)
        uint64_t int_acks = 0;      // ACKs with an INT stack given to the algorithm (HPCC)
        uint64_t int_frames = 0;    // frames sent with an INT stack (requests and reflecting ACKs)
        uint64_t int_bytes = 0;     // their INT stacks' bytes (the NIC's telemetry overhead)
    };
    const stats& get_stats() const { return m_stats; }

private:
    struct pending {
        uint32_t qpn;
        cc_event ev;
    };
    void engine_thread();
    void process(uint32_t qpn, const cc_event& ev);
    // Applies a decision (rate to the pacer, timer to the queue) and logs a cc.csv row when
    // rate, target or alpha changed, or `force_row` (a CNP arrival).
    void apply(uint32_t qpn, cc_qp_state& s, uint64_t old_timer, const cc_decision& d,
               uint64_t now_ps, bool force_row);
    static uint64_t now_ps();

    std::unique_ptr<cc_algorithm> m_algo;
    const clock_domain& m_clk;
    context_store& m_contexts;
    pacer& m_pacer;
    uint64_t m_line;
    context_cache* m_cache = nullptr;
    std::deque<pending> m_queue;
    hw::quick_event m_wake;
    // The time stamp at which the engine last let its instant settle (engine_thread).
    sc_core::sc_time m_settled_at = sc_core::sc_max_time();
    std::set<std::pair<uint64_t, uint32_t>> m_timers;                 // (time ps, qpn)
    std::vector<std::deque<std::pair<uint32_t, uint64_t>>> m_stamps;  // per QP: (psn, sent ps)
    std::unordered_map<uint64_t, uint32_t> m_peer_qpn;  // (dest IP, dest QPN) -> stamped QP
    std::vector<roce::int_stack> m_telemetry;           // per QP: the stack of the ACK at hand
    // Per QP (HPCC): snd_nxt, the PSN after the newest packet sent, and its value before the
    // instant it last changed (an ACK taken at that instant sees the earlier one, whatever the
    // order of the instant's processes: exact on any number of ranks).
    struct snd_nxt_state {
        uint32_t now = 0;
        uint32_t before = 0;
        uint64_t at_ps = 0;
    };
    std::vector<snd_nxt_state> m_snd_nxt;
    std::vector<rate_row> m_log;
    stats m_stats;
};

}  // namespace rnic::hw::cc
