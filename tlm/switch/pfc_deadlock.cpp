// SPDX-License-Identifier: Apache-2.0
// PFC deadlock detection (pfc_deadlock.h).
#include "tlm/switch/pfc_deadlock.h"

#include <set>
#include <tuple>

#include "tlm/switch/eth_switch.h"

namespace rnic::fabric {

void pfc_deadlock_monitor::add(eth_switch& sw) {
    const auto index = static_cast<uint32_t>(m_switches.size());
    m_switches.push_back(&sw);
    for (uint32_t p = 0; p < sw.ports(); ++p) {
        if (sw.port_link(p) != nullptr) {
            m_ends[{sw.port_link(p), sw.port_side(p)}] = {index, p};
        }
    }
    sw.set_stuck_observer([this]() { check(); });
}

// Queue q (switch S, egress port p, priority k) is paused by the device at the other end of
// p. When that is a switch S2 (its port r), q waits for S2's ingress (r, k) to drain, which
// drains only as S2's egress queues holding frames that came in at r move: those that are stuck
// are q's successors.
std::vector<pfc_deadlock_monitor::queue_id> pfc_deadlock_monitor::successors(
    const queue_id& q) const {
    std::vector<queue_id> out;
    const eth_switch& s = *m_switches[q.sw];
    const auto it = m_ends.find({s.port_link(q.port), 1 - s.port_side(q.port)});
    if (it == m_ends.end()) {
        return out;  // a NIC (or another rank's switch) holds the pause
    }
    const auto [s2, r] = it->second;
    const eth_switch& n = *m_switches[s2];
    for (uint32_t o = 0; o < n.ports(); ++o) {
        if (n.queue_stuck(o, q.prio) && n.holds_from(o, q.prio, r)) {
            out.push_back({s2, o, q.prio});
        }
    }
    return out;
}

std::string pfc_deadlock_monitor::name(const queue_id& q) const {
    return std::string(m_switches[q.sw]->name()) + ".port" + std::to_string(q.port) + ".q" +
           std::to_string(q.prio);
}

void pfc_deadlock_monitor::check() {
    if (m_found) {
        return;
    }
    // Depth-first search for a cycle among the stuck queues (white/grey/black).
    std::map<queue_id, int> color;
    std::vector<queue_id> path;
    std::vector<queue_id> cycle;
    std::function<bool(const queue_id&)> visit = [&](const queue_id& q) {
        color[q] = 1;
        path.push_back(q);
        for (const queue_id& n : successors(q)) {
            const int c = color.count(n) != 0 ? color[n] : 0;
            if (c == 1) {
                auto at = path.begin();
                while (!(*at == n)) {
                    ++at;
                }
                cycle.assign(at, path.end());
                return true;
            }
            if (c == 0 && visit(n)) {
                return true;
            }
        }
        color[q] = 2;
        path.pop_back();
        return false;
    };
    for (uint32_t s = 0; s < m_switches.size() && cycle.empty(); ++s) {
        const eth_switch& sw = *m_switches[s];
        for (uint32_t p = 0; p < sw.ports() && cycle.empty(); ++p) {
            for (uint32_t k = 0; k < SWITCH_PRIORITIES && cycle.empty(); ++k) {
                const queue_id q{s, p, k};
                if (sw.queue_stuck(p, k) && color.count(q) == 0) {
                    visit(q);
                }
            }
        }
    }
    if (cycle.empty()) {
        // A partitioned run: a stuck queue paused by another rank's switch may close a cycle
        // there, which no rank can see. Say so rather than run into the time limit.
        for (uint32_t s = 0; s < m_switches.size(); ++s) {
            const eth_switch& sw = *m_switches[s];
            for (uint32_t p = 0; p < sw.ports(); ++p) {
                const auto far = m_remote.find({sw.port_link(p), 1 - sw.port_side(p)});
                if (far == m_remote.end()) {
                    continue;
                }
                for (uint32_t k = 0; k < SWITCH_PRIORITIES; ++k) {
                    if (!sw.queue_stuck(p, k)) {
                        continue;
                    }
                    m_found = true;
                    if (m_on) {
                        m_on("PFC deadlock suspected across ranks: " + name({s, p, k}) +
                             " has held frames while paused by " + far->second +
                             " (simulated by another rank) for " +
                             std::to_string(
                                 static_cast<uint64_t>(sw.config().pfc_deadlock_detect_ns)) +
                             " ns; a partitioned run does not follow a cycle of paused queues "
                             "across "
                             "ranks (tlm/switch/README.md, \"PFC deadlock\"): run it in one "
                             "process, "
                             "or give topology.partition a part that holds the whole cycle");
                    }
                    return;
                }
            }
        }
        return;
    }
    m_found = true;
    std::string text = "PFC deadlock: a cycle of paused queues, each waiting for the next (";
    for (const queue_id& q : cycle) {
        text += name(q) + " -> ";
    }
    text += name(cycle.front()) + "), priority " + std::to_string(cycle.front().prio) +
            ", no frame sent from any of them for " +
            std::to_string(static_cast<uint64_t>(
                m_switches[cycle.front().sw]->config().pfc_deadlock_detect_ns)) +
            " ns while pauses held";
    if (m_on) {
        m_on(text);
    }
}

}  // namespace rnic::fabric
