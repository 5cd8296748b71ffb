// SPDX-License-Identifier: Apache-2.0
// The `round_robin` transmit scheduler (rnic.tx_engine.scheduler.policy "round_robin";
// hw/tx_engine/README.md "Scheduler"): per-QP arbitration at packet granularity. Work is staged
// from the engine's queues into one lane per QP and direction (requester: resends, then new
// requests; responder: READ responses and the ACKs behind them). Lanes with work take turns in a
// ring; a turn is the next 1 .. burst_packets packets of the lane's message. A lane whose rate
// limiter slot is not due or whose congestion window is full is passed over, not waited on. ACKs
// with nothing queued ahead of them in their responder lane go first, between turns. Plain C++
// (tx_scheduler.h).
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "hw/tx_engine/tx_scheduler.h"

namespace rnic::hw {

class round_robin_scheduler final : public tx_scheduler {
public:
    round_robin_scheduler(const tx_engine_config& cfg, tx_sched_host& host);

    bool next(tx_turn& t, tx_sleep& s) override;
    void turn_done(bool ok) override;
    bool applies_windows() const override { return true; }
    std::vector<tx_sched_counter> counters() const override;
    std::vector<tx_sched_counter> paced_counters() const override { return {}; }

    struct stats {
        uint64_t turns = 0;           // turns given (a descriptor of 1..burst packets)
        uint64_t skipped_paced = 0;   // edges a ready packet's rate limiter slot was not due
        uint64_t skipped_window = 0;  // QPs passed over: congestion window full
        uint64_t max_inflight = 0;    // most unacknowledged SEND/WRITE bytes of a windowed QP
    };
    const stats& get_stats() const { return m_stats; }

private:
    // A QP's requester (or responder) work in order, and the message going out a turn at a
    // time (the send-queue state of a QP context).
    struct lane {
        std::deque<tx_job> resends;  // resends (requester), before newer requests
        std::deque<tx_job> jobs;     // new requests / READ responses and the ACKs behind them
        tx_job cur;                  // the message going out
        bool active = false;
        bool resend = false;  // cur is a resend
        uint32_t next = 0;    // its next packet (index in the message)
        uint32_t end = 0;     // one past its last packet (a segment ends before the message)
        bool in_ring = false;
        // A message copy set aside while selective resends of the QP go (its state as above).
        bool parked = false;
        tx_job parked_cur;
        bool parked_resend = false;
        uint32_t parked_next = 0;
        uint32_t parked_end = 0;
    };
    static uint32_t key_of(uint32_t qpn, bool responder) { return qpn * 2 + (responder ? 1 : 0); }
    // Moves queued work into the lanes within the FIFO depths; ACKs of a responder with nothing
    // queued go to m_acks (sent first).
    void stage_work();
    void enter_ring(uint32_t key);
    // Takes the lane's next job (resends first) as `cur`, dropping what is no longer live.
    // False: the lane has no work.
    bool start_job(lane& l);
    // A resend queued while `l`'s message goes out: a go-back-N to it or before ends the copy;
    // a selective resend sets the copy aside until it has gone.
    void take_resends_first(lane& l);
    // Packets of `l`'s message that may go in this turn (0: skipped; `wake_ps` lowered to the
    // time its rate limiter slot comes).
    uint32_t turn_size(lane& l, uint64_t& wake_ps, bool& windowed);

    const uint32_t m_burst;
    const uint32_t m_arbitration_cycles;
    const uint32_t m_job_depth;
    const uint32_t m_response_depth;
    tx_sched_host& m_host;
    std::unordered_map<uint32_t, lane> m_lanes;  // key_of(qpn, responder)
    std::deque<uint32_t> m_ring;                 // lanes with work, in turn order
    std::deque<tx_job> m_acks;                   // ACKs / NAKs with nothing ahead of them
    uint32_t m_staged_requests = 0;              // requests in lanes, not started
    uint32_t m_staged_responses = 0;             // responses in lanes, not started
    tx_job m_ack;                                // the ACK of a whole turn
    // The turn handed out: its lane (none: an ACK), first packet and size.
    bool m_turn_lane = false;
    uint32_t m_turn_key = 0;
    uint32_t m_turn_first = 0;
    uint32_t m_turn_packets = 0;
    stats m_stats;
};

}  // namespace rnic::hw
