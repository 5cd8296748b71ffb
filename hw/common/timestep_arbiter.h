// SPDX-License-Identifier: Apache-2.0
// Fixed-priority grant of a shared port among requests made in the same clock cycle, whatever
// order SystemC runs the requesting processes in.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include <systemc>

#include "hw/common/clock_domain.h"
#include "hw/common/quick_event.h"

namespace rnic::hw {

// SystemC runs the processes of one time step in an order it leaves open, and that order
// changes when an unrelated block wakes its processes in other delta cycles (the Verilated send
// path does). A shared port that served requests first come, first served would give a cycle
// to whichever process happened to run first, and a whole run could drift by a cycle.
//
// Hardware registers the request lines of its requesters and samples them at the clock edge;
// a fixed-priority grant then picks among the requests of that cycle. This class models that:
//  - a request made at time t belongs to the cycle whose edge is at or after t (a request made
//    between edges waits for that edge; on an edge it waits for nothing);
//  - the requests of one edge are served once every process has finished its work at that
//    instant (zero simulated time: a few delta cycles), in order of priority (lower first),
//    ties by the requesting process's hierarchical name, so the order depends only on who asks;
//  - requests of different edges are served in time order.
// "Served" means the owner's grant function runs for the request, in that order, from the
// arbiter (the order-dependent part of a request: reserving the port, updating tags); then the
// requester's request() returns. Nothing runs while no request is pending (DESIGN.md section 2).
class timestep_arbiter {
public:
    explicit timestep_arbiter(const clock_domain& clk);
    timestep_arbiter(const timestep_arbiter&) = delete;
    timestep_arbiter& operator=(const timestep_arbiter&) = delete;

    // From an SC_THREAD: queues the request and returns once `serve()` has run in grant order
    // (at the same time stamp if the caller is on an edge of the clock). `hold`: the requester
    // has nothing to do for that long after the edge whatever the grant (a pipeline latency it
    // waits out anyway); it then sleeps one timed wait to edge + hold instead of being woken
    // at the grant, which spares a process switch per request.
    template <class F>
    void request(uint32_t priority, F&& serve,
                 const sc_core::sc_time& hold = sc_core::SC_ZERO_TIME) {
        pending p;
        p.priority = priority;
        p.fn = &serve;
        p.call = [](void* f) { (*static_cast<std::remove_reference_t<F>*>(f))(); };
        enqueue(p, hold);
    }

    // A request whose requester goes on before its grant. From an SC_THREAD: returns once the
    // request is queued (at the edge at or after now, as request() does) or served (a lone
    // request at a settled instant), not at the grant; `serve` and `t` must outlive the grant,
    // which comes at this edge in the same order request() would have it. Then
    // wait_granted(t) returns at once if served, else at the grant. For a requester that has
    // other waiting to do first (a FIFO's room): its wake-up at the grant is spared.
    struct ticket {
        bool served = false;
    };
    template <class F>
    void post(uint32_t priority, F& serve, ticket& t) {
        pending p;
        p.priority = priority;
        p.fn = &serve;
        p.call = [](void* f) { (*static_cast<F*>(f))(); };
        t.served = false;
        p.served = &t.served;
        enqueue(p, sc_core::SC_ZERO_TIME, true);
    }
    void wait_granted(const ticket& t);

    // Requests served so far, and rounds of arbitration (edges with at least one request).
    uint64_t requests() const { return m_requests; }
    uint64_t rounds() const { return m_rounds; }
    // Rounds in which more than one request competed.
    uint64_t contended_rounds() const { return m_contended; }

private:
    friend class timestep_settle;
    struct pending {
        uint32_t priority = 0;
        const sc_core::sc_object* who = nullptr;  // requesting process: name is the tie-break
        void* fn = nullptr;
        void (*call)(void*) = nullptr;
        bool* served = nullptr;
        bool wake_on_grant = false;  // no hold: the requester waits for m_served
    };
    // `posted`: return once queued (post()).
    void enqueue(pending& p, const sc_core::sc_time& hold, bool posted = false);
    void serve_round();  // from the settle process: the requests of this instant, in order

    const clock_domain& m_clk;
    uint32_t m_id;  // creation order: arbiters served in the same instant go in this order
    bool m_enlisted = false;  // holds requests the settle process knows of
    std::vector<pending> m_pending;
    quick_event m_served;
    uint64_t m_requests = 0;
    uint64_t m_rounds = 0;
    uint64_t m_contended = 0;
};

// From an SC_THREAD: returns, at the same time stamp, once no other process has work left at
// this instant, after every timestep_arbiter round of the instant; several callers of one
// instant go one at a time, by process name. For a reader that must see everything written at
// this instant whatever the process order (e.g. a CPU reading memory that a posted DMA write
// reaches at the same picosecond).
void settle_instant();

// settle_instant() for a method process. The method calls settled(): true, the instant has
// settled and the method goes on now; false, it is queued as settle_instant()'s caller would be
// (the same rules and order, by process name) and must return: the release triggers it again
// (next_trigger), and settled() then returns true. While queued, only the release triggers it,
// and settled() must be called again on each activation until it returns true.
class settle_ticket {
public:
    bool settled();
    bool queued() const { return m_queued; }

private:
    bool m_queued = false;
    bool m_released = false;
    quick_event m_release;  // the release of this ticket's method (its waiter's event)
};

// True while a timestep_arbiter grant function runs (from the settle process, or from the
// requester when it asked alone at a settled instant): a request issued from a grant goes at
// once, in the grant's order, not through another arbiter's round.
bool in_grant();

}  // namespace rnic::hw
