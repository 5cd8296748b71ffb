// SPDX-License-Identifier: Apache-2.0
// Reaction-point pacer: the per-QP rate limiter of the transmit scheduler. Congestion control
// (hw/cc) sets a QP's rate; the transmit engine asks for every packet's slot before it hands the
// packet to the send path (the descriptor for the first packet, the payload read for the
// others), so the packets of a message leave spaced by wire size / rate, on whole cycles. A QP
// at line rate (rate 0) is not paced at all: no wait, no booking.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <systemc>

#include "hw/common/clock_domain.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/send_path/send_path_if.h"

namespace rnic::hw {

class pacer {
public:
    pacer(const std::string& name, const clock_domain& clk, uint32_t max_qps, sim_context& ctx);

    // Rate of `qpn` in Mb/s; 0: line rate (not paced). Same-instant rule (issue 23): a rate set
    // at simulated time t applies to what the pacer decides after t, as a rate register written
    // at a clock edge is read by the scheduler from the next one: every booking and limited()
    // at t uses the rate from before t, whichever process the kernel runs first at t (the
    // order a partitioned run, or any unrelated event, changes: testbench/distributed/README.md
    // "Same-instant order"). A packet waiting for its slot is re-booked at the new rate one
    // time unit after t. Before the simulation runs (elaboration, unit tests) it applies at once.
    void set_rate(uint32_t qpn, uint64_t rate_mbps);
    // The rate last set (what congestion control decided), in effect or about to be.
    uint64_t rate(uint32_t qpn) const { return qpn < m_rate.size() ? m_rate[qpn] : 0; }
    // The QP was reset or destroyed: line rate, no booking.
    void reset(uint32_t qpn);

    // Books a packet of `wire_bytes` of `qpn` that is ready at `now_ps`; returns the time it may
    // start: max(now, end of the previous packet's slot). A slot lasts wire_bytes * 8 / rate at
    // the QP's rate now (a rate change applies to the slot of the packet that waits, as a
    // hardware limiter that compares "last start + size / current rate" with the time does).
    // Pure bookkeeping (no SystemC): the unit tests call it directly.
    uint64_t reserve(uint32_t qpn, uint64_t now_ps, uint32_t wire_bytes);

    // From the transmit engine's thread: packet `index` of message `d` is next. Waits until its
    // slot (the first clock edge at or after it), then tells the listener it is sent. A rate
    // change while it waits re-books it at the new rate: a QP cut to a few Mb/s whose rate then
    // recovers does not sit out a slot computed at the old rate (8 ms per 1 KB at 1 Mb/s).
    void pace(const tx_descriptor& d, uint32_t index);
    // Without waiting (the transmit schedulers, which skip a QP that is not due): if packet
    // `index` of `d` may start at `now_ps`, books it, tells the listener and returns 0; else
    // books nothing and returns the time (ps) its slot starts. A slot that started less than a
    // clock period ago is booked at its start (as pace() books it and then moves to the edge),
    // so the spacing is exact on average. Counted at the booking, from the packet's own times
    // only, never from a refusal (the scheduler looks whenever SystemC's process order has it
    // look; hw/tx_engine/README.md, "Rate limiter counters"): the packet was ready at the later
    // of `queued_ps` (its job queued at the engine) and its QP's previous packet handed on; it
    // is paced when its slot started after that, waiting slot start - ready, and
    // `held_cycles` is the clock edges from the first at or after ready to before the slot
    // start (the rounds a per-cycle arbiter passes it over; 0 when not paced).
    uint64_t try_pace(const tx_descriptor& d, uint32_t index, uint64_t queued_ps, uint64_t now_ps,
                      uint64_t& held_cycles);
    // Books packet `index` of `d` at the current time whatever its slot (a later packet of a
    // scheduler's burst; a limited QP's burst is one packet, so only a rate cut during the burst
    // makes this early) and tells the listener.
    void pass(const tx_descriptor& d, uint32_t index);
    bool limited(uint32_t qpn) const { return rate_in_effect(qpn) != 0; }
    // A rate change of any QP, notified one time unit after the change (when the new rate is in
    // effect: set_rate), for the scheduler that waits on it while a skipped QP is not due.
    const sc_core::sc_event& rate_changed_event() const { return m_rate_changed; }
    void watch(bool on) { on ? ++m_waiting : --m_waiting; }
    // Told of every packet of a requester or READ-response message as it is handed on:
    // (qpn, psn, wire bytes). Congestion control counts bytes and stamps RTTs with it.
    void set_listener(std::function<void(uint32_t, uint32_t, uint32_t)> fn) {
        m_listener = std::move(fn);
    }

    struct stats {
        uint64_t paced_packets = 0;  // packets whose slot started after they were ready
        uint64_t wait_ps = 0;        // slot start - ready, summed over them
    };
    const stats& get_stats() const { return m_stats; }

private:
    const clock_domain& m_clk;
    // The rate bookings use now (set_rate's rule): m_rate unless it was set at this instant.
    uint64_t rate_in_effect(uint32_t qpn) const {
        if (qpn >= m_rate.size()) {
            return 0;
        }
        return m_set_at[qpn] != 0 && m_set_at[qpn] == sc_core::sc_time_stamp().value() + 1
                   ? m_before[qpn]
                   : m_rate[qpn];
    }
    std::vector<uint64_t> m_rate;    // Mb/s, 0: line rate
    std::vector<uint64_t> m_before;  // the rate before the instant of the last change
    std::vector<uint64_t> m_set_at;  // 1 + kernel time of the last change while running (0: none)
    struct booking {
        uint64_t start_ps = 0;  // start of the last booked packet's slot
        uint64_t wire = 0;      // its wire bytes (0: none booked)
    };
    std::vector<booking> m_last;
    std::vector<uint64_t> m_handed;  // when the QP's last packet was booked (ps)
    quick_event m_rate_changed;      // set_rate: always; reset: while a packet waits
    uint32_t m_waiting = 0;
    std::function<void(uint32_t, uint32_t, uint32_t)> m_listener;
    stats m_stats;
};

}  // namespace rnic::hw
