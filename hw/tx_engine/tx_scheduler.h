// SPDX-License-Identifier: Apache-2.0
// The transmit scheduler: which message (or which packets of it) the transmit engine hands the
// send path next. An interface with one implementation per policy, chosen by name
// (rnic.tx_engine.scheduler.policy) from the table in tx_scheduler.cpp, as hw/cc picks its
// algorithms: `fifo` (fifo_scheduler.h) and `round_robin` (round_robin_scheduler.h).
//
// Plain C++: a scheduler owns no SystemC process, event or time. It reads the engine's three
// queues and asks the engine what it needs to know (tx_sched_host: is a job still live, is a
// QP's rate limiter slot due, how much of a window is open) and answers with a turn to send or
// with what to sleep on. The engine's transmit thread (the SystemC shell) sends the turn,
// waits, and reports back. Unit tests drive a scheduler with a hand-written host:
// testbench/unit/tx_scheduler_order_test.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hw/tx_engine/tx_engine_config.h"
#include "hw/tx_engine/tx_engine_if.h"

namespace rnic::hw {

// The engine's queues a scheduler takes work from (tx_engine.h).
enum class tx_queue : uint8_t {
    RESPONSES,  // ACK/NAKs and READ responses from the receive path, in order
    RESENDS,    // go-back-N and selective-repeat resends, before newer requests
    REQUESTS,   // new requests from the requester, in posting order per QP
};

// What the scheduler asks the transmit engine. Every check that drops a job counts the drop
// itself (the engine's `dropped_stale`, `dropped_in_error`).
class tx_sched_host {
public:
    virtual ~tx_sched_host() = default;

    virtual bool has(tx_queue q) const = 0;
    virtual const tx_job& front(tx_queue q) = 0;
    // Moves the job at the head of `q` into `into` (no temporary: a job is large).
    virtual void take(tx_queue q, tx_job& into) = 0;

    // A response taken from its queue still goes (ACK/NAKs always unless their QP was reset
    // since; READ responses not when their QP is in error).
    virtual bool response_live(const tx_job& job) = 0;
    // A new request still goes (its QP not reset since, not in error).
    virtual bool request_live(const tx_job& job) = 0;
    // A resend still goes (also: not superseded by a newer go-back-N of its QP); counts it as
    // retransmitted.
    virtual bool resend_live(const tx_job& job) = 0;
    // Go-back-N resend `r` is of its QP's current epoch and goes back to `copy`'s first PSN or
    // before: it carries `copy`'s message again.
    virtual bool supersedes(const tx_job& r, const tx_job& copy) const = 0;

    // Congestion control's rate limiter (pacer.h): present at all, the QP limited now, and
    // packet `index` of `job`'s slot: 0 when it may go now (booked; `held_cycles`: the clock
    // edges its rate limiter held it, pacer::try_pace), else the time (ps) it comes.
    virtual bool paced() const = 0;
    virtual bool limited(uint32_t qpn) const = 0;
    virtual uint64_t try_pace(const tx_job& job, uint32_t index, uint64_t& held_cycles) = 0;
    // Packets per congestion-control segment of `d` (0: none).
    virtual uint32_t ack_segment_packets(const tx_descriptor& d) const = 0;
    // Congestion window: of packets next .. next + n - 1 of `d`, how many may go now (0: the
    // window is full). `windowed`: the QP has a window at all (else n).
    virtual uint32_t window_fit(const tx_descriptor& d, uint32_t next, uint32_t n,
                                bool& windowed) = 0;

    // Packets first .. first + packets - 1 of SEND/WRITE `job` went: counted in flight. Returns
    // the QP's bytes in flight if it has a window (0 otherwise).
    virtual uint64_t count_sent(const tx_job& job, uint32_t first, uint32_t packets) = 0;
    // A request's last packet (the one with AckReq) went: its retransmission timer may start.
    virtual void request_sent(const tx_job& job) = 0;
};

// One hand-over to the send path.
struct tx_turn {
    tx_job* job = nullptr;  // owned by the scheduler until turn_done()
    // true: the job as it is (a whole message or a selective-repeat segment), split only at
    // congestion-control segments, the engine asking the rate limiter for each packet itself.
    // false: packets first .. first + count - 1 (count 0: the job's descriptor as it is), the
    // first one's rate-limiter slot booked by the scheduler; AckReq on the last one if
    // `ack_at_end` (a job's last packet has it anyway).
    bool whole = true;
    uint32_t first = 0;
    uint32_t count = 0;
    bool ack_at_end = false;
    // Also AckReq on the last one if a congestion-control segment ends there (the segment size
    // read when the turn goes, after `wait_cycles`).
    bool ack_at_segment_end = false;
    uint32_t wait_cycles = 0;  // arbitration cycles before the turn
};

// Nothing may go now: what wakes the scheduler to be asked again.
struct tx_sleep {
    uint64_t until_ps = UINT64_MAX;  // the first clock edge at or after (UINT64_MAX: no timeout)
    bool on_responses = true;        // a response queued
    bool on_requests = true;         // a request or a resend queued
    bool on_window = false;          // an ACK opened a congestion window
    bool on_rate = false;            // a rate change (the engine watches the rate limiter)
};

// A counter a scheduler owns (registered by the engine under its block name).
struct tx_sched_counter {
    const char* name;
    const uint64_t* value;
    const char* unit;
    const char* description;
};

class tx_scheduler {
public:
    virtual ~tx_scheduler() = default;

    // The next turn (true, `t` filled), or nothing may go now (false, `s` filled).
    virtual bool next(tx_turn& t, tx_sleep& s) = 0;
    // The last turn was handed to the send path; `ok` false: a source key failed in it (the job
    // is over).
    virtual void turn_done(bool ok) = 0;
    // An ACK that shrinks a QP's bytes in flight can let it go again (round_robin: the window
    // is applied; fifo does not apply it).
    virtual bool applies_windows() const = 0;
    // Its counters, registered with the engine's; `paced_counters` only with a rate limiter.
    virtual std::vector<tx_sched_counter> counters() const = 0;
    virtual std::vector<tx_sched_counter> paced_counters() const = 0;
};

// The table of policies (tx_scheduler.cpp): name -> factory.
struct tx_scheduler_registration {
    const char* name;
    std::unique_ptr<tx_scheduler> (*make)(const tx_engine_config& cfg, tx_sched_host& host);
};
const std::vector<tx_scheduler_registration>& tx_schedulers();
// The scheduler `cfg.scheduler.policy` names (a name the config accepted: one of the table).
std::unique_ptr<tx_scheduler> make_tx_scheduler(const tx_engine_config& cfg, tx_sched_host& host);

}  // namespace rnic::hw
