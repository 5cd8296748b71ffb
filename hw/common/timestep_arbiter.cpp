// SPDX-License-Identifier: Apache-2.0
// Same-cycle fixed-priority arbitration, independent of SystemC's process order.
#include "hw/common/timestep_arbiter.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "hw/common/quick_event.h"

namespace rnic::hw {

namespace {
int g_granting = 0;  // grant functions running (nested: a grant that issues another request)
struct granting {
    granting() { ++g_granting; }
    ~granting() { --g_granting; }
    granting(const granting&) = delete;
    granting& operator=(const granting&) = delete;
};
}  // namespace

bool in_grant() {
    return g_granting != 0;
}

// One method process for the whole simulation: it runs at the end of every instant at which
// some arbiter holds requests, once nothing else is left to run at that instant, and serves the
// arbiters in creation order. One process, not one per arbiter: two processes that each waited
// for the other to finish would wait forever.
class timestep_settle {
public:
    static timestep_settle& get() {
        // Never destroyed: the kernel owns the process and may outlive static destructors.
        static timestep_settle* s = new timestep_settle;
        return *s;
    }
    uint32_t next_id() { return m_ids++; }
    // No arbiter round and no settle_instant() waiter pending at this instant.
    bool idle() const { return !m_armed; }
    void enlist(timestep_arbiter* a) {
        if (!a->m_enlisted) {
            a->m_enlisted = true;
            m_ready.push_back(a);
        }
        arm();
    }
    // settle_instant(): the calling thread goes on once the instant has settled, one waiter
    // per settled instant, by process name.
    void wait_settled() {
        // Nothing else runs at this instant (no runnable process, delta notification or
        // update, no arbiter round or earlier waiter pending): it has settled already, and
        // waiting for the check would only cost two process switches.
        if (!m_armed && m_waiters.empty() && !sc_core::sc_pending_activity_at_current_time()) {
            return;
        }
        // Each waiter sleeps on an event of its own (from a pool): a release wakes the one
        // waiter it lets go, not every waiter of the instant (hundreds in a large fabric, each
        // woken per release only to sleep again).
        if (m_free.empty()) {
            m_free.push_back(std::make_unique<sc_core::sc_event>());
        }
        std::unique_ptr<sc_core::sc_event> ev = std::move(m_free.back());
        m_free.pop_back();
        bool released = false;
        m_waiters.push_back({sc_core::sc_get_current_process_b(), &released, ev.get()});
        arm();
        while (!released) {
            sc_core::wait(*ev);
        }
        m_free.push_back(std::move(ev));
    }

    // settle_ticket::settled(): the same from a method process.
    bool method_settled(bool& queued, bool& released, sc_core::sc_event& release) {
        if (queued) {
            if (released) {
                queued = false;
                return true;
            }
            sc_core::next_trigger(release);  // not released yet
            return false;
        }
        if (!m_armed && m_waiters.empty() && !sc_core::sc_pending_activity_at_current_time()) {
            return true;
        }
        queued = true;
        released = false;
        m_waiters.push_back({sc_core::sc_get_current_process_b(), &released, &release});
        arm();
        sc_core::next_trigger(release);
        return false;
    }

private:
    struct waiter {
        const sc_core::sc_object* who;
        bool* released;
        sc_core::sc_event* release;  // notified when this waiter may go on
    };
    void arm() {
        if (!m_armed) {
            m_armed = true;
            m_check.notify(sc_core::SC_ZERO_TIME);
        }
    }
    timestep_settle() {
        sc_core::sc_spawn_options o;
        o.spawn_method();
        o.set_sensitivity(&m_check);
        o.dont_initialize();
        sc_core::sc_spawn([this] { on_check(); }, "timestep_settle", &o);
    }
    // Each delta cycle in which another process still has work at this instant (a runnable
    // process, a delta notification, a channel update) could add a request: look again one
    // delta later. Costs one activation per delta of an instant that has requests.
    void on_check() {
        if (sc_core::sc_pending_activity_at_current_time()) {
            m_check.notify(sc_core::SC_ZERO_TIME);
            return;
        }
        m_armed = false;
        // Serving may enlist arbiters again (for a later delta): work on a copy, keep both
        // vectors' storage.
        std::vector<timestep_arbiter*>& ready = m_serving;
        ready.assign(m_ready.begin(), m_ready.end());
        m_ready.clear();
        if (ready.size() > 1) {
            std::sort(ready.begin(), ready.end(),
                      [](const timestep_arbiter* a, const timestep_arbiter* b) {
                          return a->m_id < b->m_id;
                      });
        }
        for (timestep_arbiter* a : ready) {
            a->m_enlisted = false;
            a->serve_round();
        }
        if (!m_waiters.empty()) {
            // One at a time: what it does at this instant settles before the next one runs.
            auto first = std::min_element(m_waiters.begin(), m_waiters.end(),
                                          [](const waiter& a, const waiter& b) {
                                              return std::strcmp(a.who->name(), b.who->name()) < 0;
                                          });
            *first->released = true;
            sc_core::sc_event* release = first->release;
            m_waiters.erase(first);
            release->notify();
            if (!m_waiters.empty()) {
                arm();
            }
        }
    }

    quick_event m_check;
    std::vector<waiter> m_waiters;
    std::vector<std::unique_ptr<sc_core::sc_event>> m_free;  // waiters' events not in use
    std::vector<timestep_arbiter*> m_ready;    // arbiters with requests at this instant
    std::vector<timestep_arbiter*> m_serving;  // the ones being served
    uint32_t m_ids = 0;
    bool m_armed = false;  // m_check notified for this instant
};

void settle_instant() {
    timestep_settle::get().wait_settled();
}

bool settle_ticket::settled() {
    return timestep_settle::get().method_settled(m_queued, m_released, m_release);
}

timestep_arbiter::timestep_arbiter(const clock_domain& clk)
    : m_clk(clk)
    , m_id(timestep_settle::get().next_id()) {}

void timestep_arbiter::enqueue(pending& p, const sc_core::sc_time& hold, bool posted) {
    // The request line is sampled at the clock edge: a request made between edges waits for it.
    const sc_core::sc_time now = sim_now();
    const sc_core::sc_time edge = m_clk.edge_at_or_after(now);
    if (edge > now) {
        sc_core::wait(edge - now);
    }
    if (timestep_settle::get().idle() && !sc_core::sc_pending_activity_at_current_time()) {
        // Nothing else can request at this instant before the round: no other process is
        // runnable, no delta notification or update is pending, and no arbiter round or
        // settle_instant() waiter is. Queued, this request would be a round of its own, served
        // one delta later with nothing else having run: it is served here, the same round
        // without the two process switches (as settle_instant() returns at once when the
        // instant has settled).
        ++m_rounds;
        ++m_requests;
        {
            const granting g;
            p.call(p.fn);
        }
        if (posted) {
            *p.served = true;
            return;
        }
        if (hold != sc_core::SC_ZERO_TIME) {
            sc_core::wait(hold);
        }
        return;
    }
    bool served = false;
    if (!posted) {
        p.served = &served;
    }
    p.who = sc_core::sc_get_current_process_b();
    p.wake_on_grant = hold == sc_core::SC_ZERO_TIME;
    m_pending.push_back(p);
    timestep_settle::get().enlist(this);
    if (posted) {
        return;  // wait_granted() waits for m_served, notified by the round
    }
    if (!p.wake_on_grant) {
        // The round of this edge runs before the edge's time step ends: served on waking.
        sc_core::wait(hold);
        sc_assert(served);
        return;
    }
    while (!served) {
        sc_core::wait(m_served);
    }
}

void timestep_arbiter::wait_granted(const ticket& t) {
    while (!t.served) {
        sc_core::wait(m_served);
    }
}

void timestep_arbiter::serve_round() {
    ++m_rounds;
    if (m_pending.size() > 1) {
        ++m_contended;
        std::sort(m_pending.begin(), m_pending.end(), [](const pending& a, const pending& b) {
            if (a.priority != b.priority) {
                return a.priority < b.priority;
            }
            return std::strcmp(a.who->name(), b.who->name()) < 0;
        });
    }
    bool wake = false;
    const granting g;
    for (const pending& p : m_pending) {
        ++m_requests;
        p.call(p.fn);
        *p.served = true;
        wake = wake || p.wake_on_grant;
    }
    m_pending.clear();
    if (wake) {
        // Immediate: the requesters run in this evaluation phase, no further delta cycle.
        m_served.notify();
    }
}

}  // namespace rnic::hw
