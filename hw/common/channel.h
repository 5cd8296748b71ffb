// SPDX-License-Identifier: Apache-2.0
// Bounded FIFO between two blocks: the model of a valid/ready stream with a skid buffer.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>

#include <systemc>

#include "hw/common/instant_count.h"
#include "hw/common/quick_event.h"

namespace rnic::hw {

// A channel carries whole transactions (a WQE, a packet) between SC_THREADs. put() blocks while
// the channel is full (back-pressure, ready low), get() blocks while it is empty (valid low).
// Waking is by event only: an idle channel costs nothing. Occupancy, valid and ready are plain
// variables that a VCD trace samples, so tracing costs nothing when it is off.
template <typename T>
class channel {
public:
    channel(std::string name, size_t depth)
        : m_name(std::move(name))
        , m_depth(depth) {}

    const std::string& name() const { return m_name; }
    size_t depth() const { return m_depth; }
    size_t size() const { return m_items.size(); }
    bool empty() const { return m_items.empty(); }
    bool full() const { return m_items.size() >= m_depth; }

    void put(T item) {
        if (full_at_edge()) {
            ++m_full_waits;
        }
        while (full()) {
            sc_core::wait(m_read_event);
        }
        push(std::move(item));
        m_write_event.notify(sc_core::SC_ZERO_TIME);
    }
    // A put that cannot block (the caller holds a free slot), notifying a waiting consumer at
    // once (immediate notification: it runs in this delta cycle) instead of in the next delta:
    // with nobody waiting, no delta notification is left pending at this instant (which would
    // count as activity there, sc_pending_activity_at_current_time).
    void put_now(T item) {
        if (full_at_edge()) {
            ++m_full_waits;
        }
        sc_assert(!full());
        push(std::move(item));
        m_write_event.notify();
    }

    T get() {
        while (empty()) {
            sc_core::wait(m_write_event);
        }
        T item = std::move(m_items.front());
        pop();
        return item;
    }

    // Non-blocking access for blocks that arbitrate between several inputs.
    T& front() { return m_items.front(); }
    void pop() {
        m_pops_now.add(1);
        m_items.pop_front();
        update();
        m_read_event.notify(sc_core::SC_ZERO_TIME);
    }

    const sc_core::sc_event& written_event() const { return m_write_event; }
    const sc_core::sc_event& read_event() const { return m_read_event; }

    uint64_t total() const { return m_total; }
    // Puts that found the channel full at their clock edge: before the pops of that instant,
    // which make room for the put at once but are not seen as ready until after the edge. So
    // the count is the same whichever order SystemC runs a same-instant put and get in.
    uint64_t full_waits() const { return m_full_waits; }
    uint32_t max_occupancy() const { return m_max; }

    void trace(sc_core::sc_trace_file* tf, const std::string& prefix) const {
        sc_core::sc_trace(tf, m_occupancy, prefix + "." + m_name + ".occupancy");
        sc_core::sc_trace(tf, m_valid, prefix + "." + m_name + ".valid");
        sc_core::sc_trace(tf, m_ready, prefix + "." + m_name + ".ready");
    }

private:
    void push(T&& item) {
        m_items.push_back(std::move(item));
        ++m_total;
        update();
    }
    bool full_at_edge() const { return m_items.size() + m_pops_now.now() >= m_depth; }

    void update() {
        m_occupancy = static_cast<uint32_t>(m_items.size());
        m_valid = !m_items.empty();
        m_ready = m_items.size() < m_depth;
        if (m_occupancy > m_max) {
            m_max = m_occupancy;
        }
    }

    std::string m_name;
    size_t m_depth;
    std::deque<T> m_items;
    quick_event m_write_event;
    quick_event m_read_event;
    uint64_t m_total = 0;
    uint64_t m_full_waits = 0;
    instant_count m_pops_now;  // pops at the current instant
    uint32_t m_max = 0;
    uint32_t m_occupancy = 0;  // traced
    bool m_valid = false;      // traced
    bool m_ready = true;       // traced
};

}  // namespace rnic::hw
