// SPDX-License-Identifier: Apache-2.0
// PFC deadlock detection over the switches of a fabric (tlm/switch/README.md, "PFC deadlock"):
// when a switch finds an egress queue that has held frames while paused for
// pfc_deadlock_detect_ns, the monitor looks for a cycle of such stuck queues, each paused by
// the ingress of the next one's switch whose frames wait in it (a cyclic buffer dependency).
// Found: the callback gets a message naming the cycle of ports and priority queues.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace rnic::fabric {

class eth_link;
class eth_switch;

class pfc_deadlock_monitor {
public:
    // Every switch of the fabric (of this process), before the simulation starts.
    void add(eth_switch& sw);
    void set_on_deadlock(std::function<void(const std::string&)> fn) { m_on = std::move(fn); }
    // A partitioned run: side `side` of `link` (a cut link) is switch port `name` ("leaf1.port2")
    // simulated by another rank. A stuck queue paused from there may be part of a cycle that
    // crosses ranks, which this monitor cannot follow: check() then ends the run saying so.
    void add_remote_switch_end(const eth_link* link, int side, std::string name) {
        m_remote[{link, side}] = std::move(name);
    }
    // Called by a switch that found a stuck queue: searches the cycle, reports it once.
    void check();
    bool found() const { return m_found; }

private:
    struct queue_id {
        uint32_t sw;
        uint32_t port;
        uint32_t prio;
        bool operator<(const queue_id& o) const {
            return std::tie(sw, port, prio) < std::tie(o.sw, o.port, o.prio);
        }
        bool operator==(const queue_id& o) const {
            return sw == o.sw && port == o.port && prio == o.prio;
        }
    };
    std::vector<queue_id> successors(const queue_id& q) const;
    std::string name(const queue_id& q) const;

    std::vector<eth_switch*> m_switches;
    std::map<std::pair<const eth_link*, int>, std::pair<uint32_t, uint32_t>> m_ends;  // -> sw, port
    std::map<std::pair<const eth_link*, int>, std::string> m_remote;  // another rank's ports
    std::function<void(const std::string&)> m_on;
    bool m_found = false;
};

}  // namespace rnic::fabric
