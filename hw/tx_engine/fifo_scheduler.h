// SPDX-License-Identifier: Apache-2.0
// The `fifo` transmit scheduler (rnic.tx_engine.scheduler.policy "fifo", the default;
// hw/tx_engine/README.md "Scheduler" and "Timing: fifo and the rate limiter"). One message at a
// time, in the order: responses (ACK/NAKs, READ responses), then resends, then new requests.
// Without a rate limiter (or for an ACK) a message goes whole. With one, a message goes a packet
// per turn, each after its rate-limiter slot; while the slot is not due, the responses at the
// head of their queue that the rule lets pass go first (whole), then the next requester job if
// it is of another QP at line rate (whole, a packet per slot; it may not be passed itself
// except by responses). Plain C++ (tx_scheduler.h).
#pragma once

#include <vector>

#include "hw/tx_engine/tx_scheduler.h"

namespace rnic::hw {

class fifo_scheduler final : public tx_scheduler {
public:
    explicit fifo_scheduler(tx_sched_host& host);

    bool next(tx_turn& t, tx_sleep& s) override;
    void turn_done(bool ok) override;
    bool applies_windows() const override { return false; }
    std::vector<tx_sched_counter> counters() const override { return {}; }
    std::vector<tx_sched_counter> paced_counters() const override;

    // Responses and requester jobs of QPs at line rate sent while a rate-limited job waited for
    // its slot.
    uint64_t paced_bypasses() const { return m_paced_bypasses; }

private:
    // A job going a packet per turn (rate limiter on): the one in progress, and at most one
    // requester job passing it while it waits for its slot.
    struct frame {
        tx_job job;
        uint32_t next = 0;     // its next packet (index in the message)
        uint32_t end = 0;      // one past its last packet
        uint32_t per = 0;      // packets per congestion-control segment (0: none)
        bool single = false;   // one packet: sent with its descriptor as it is
        bool request = false;  // a requester job (its timer may start when it has gone)
        bool bypass = false;   // passing the frame below it
    };
    // Sends the job taken into m_whole: whole (`t` filled, true) or as a new frame (false).
    bool begin(bool request, bool bypass, tx_turn& t);
    // Takes the next resend (else request) into m_whole; false when it was dropped.
    bool take_request();
    // The response at the head of the queue, if it may pass `f`'s waiting packet, as a whole
    // turn (true).
    bool serve_bypassing(const frame& f, tx_turn& t);
    // The next requester job, if it may pass `f` (another QP, at line rate), becomes a frame
    // above it (true: taken, or dropped as not live).
    bool bypass_request(const frame& f);
    void finish_frame();

    tx_sched_host& m_host;
    std::vector<frame> m_frames;  // at most two
    tx_job m_whole;               // the job taken, and the job of a whole turn
    enum class turn_kind { NONE, WHOLE, WHOLE_REQUEST, WHOLE_BYPASSING, PACKET };
    turn_kind m_turn = turn_kind::NONE;
    uint64_t m_paced_bypasses = 0;
};

}  // namespace rnic::hw
