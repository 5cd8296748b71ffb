// SPDX-License-Identifier: Apache-2.0
// The switch's shared-buffer accounting (its MMU), SystemC-free: per (port, priority) the
// egress queue occupancy with its reserved space and the dynamic threshold over the shared
// pool, the ingress accounting PFC looks at with its headroom, the XOFF/XON decisions and the
// RED marking probability (tlm/switch/README.md, "Priorities, buffer, admission", "PFC",
// "ECN"). eth_switch owns one and asks it at every arrival and departure; the unit tests
// (testbench/unit/switch_buffer_test.cpp) drive it alone. Bytes are frame bytes (no FCS,
// preamble or IFG).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tlm/switch/switch_config.h"

namespace rnic::fabric {

class switch_buffer {
public:
    // One (port, priority): its egress queue, and its ingress accounting (bytes that arrived
    // on this port at this priority and are still buffered, wherever they wait).
    struct queue {
        uint64_t egress_bytes = 0;  // egress queue occupancy (traced)
        uint64_t egress_peak_bytes = 0;
        uint64_t ingress_bytes = 0;  // (traced)
        uint64_t ingress_peak_bytes = 0;
        bool xoff = false;  // XOFF asserted for this ingress (port, priority) (traced)
    };
    // What a change of an ingress (port, priority) asks of PFC.
    enum class pfc_change { none, xoff, xon };

    switch_buffer(const switch_config& cfg, uint32_t ports);

    // Lossless room above XOFF on ingress port p (README, "Headroom").
    void set_headroom(uint32_t port, uint64_t bytes) { m_headroom.at(port) = bytes; }
    uint64_t headroom(uint32_t port) const { return m_headroom[port]; }

    // May a frame of `bytes` that arrived on `in` at priority `prio` join the egress queue
    // (out, prio)? Never beyond buffer_bytes in all; lossless: ingress + bytes <= XOFF +
    // headroom; lossy: within the reserved space, or above it by at most alpha x the free
    // shared pool (dynamic threshold).
    bool admit(uint32_t in, uint32_t out, uint32_t prio, uint64_t bytes) const {
        bool ok = m_used + bytes <= m_cfg.buffer_bytes;
        const queue& iq = at(in, prio);
        const queue& eq = at(out, prio);
        if (m_cfg.lossless[prio]) {
            ok = ok && iq.ingress_bytes + bytes <= m_cfg.xoff_bytes + m_headroom[in];
        } else if (eq.egress_bytes + bytes > m_cfg.reserved_bytes) {
            const uint64_t above = eq.egress_bytes + bytes - m_cfg.reserved_bytes;
            ok = ok && static_cast<double>(above) <= m_cfg.alpha * free_shared();
        }
        return ok;
    }
    // The frame joins egress queue (out, prio), counted on ingress (in, prio).
    void enqueue(uint32_t in, uint32_t out, uint32_t prio, uint64_t bytes) {
        queue& eq = slot(out, prio);
        const uint64_t r = m_cfg.reserved_bytes;
        const uint64_t old_q = eq.egress_bytes;
        m_shared_used += (old_q + bytes > r ? old_q + bytes - r : 0) - (old_q > r ? old_q - r : 0);
        m_used += bytes;
        m_peak_used = std::max(m_peak_used, m_used);
        eq.egress_bytes = old_q + bytes;
        eq.egress_peak_bytes = std::max(eq.egress_peak_bytes, eq.egress_bytes);
        queue& iq = slot(in, prio);
        iq.ingress_bytes += bytes;
        iq.ingress_peak_bytes = std::max(iq.ingress_peak_bytes, iq.ingress_bytes);
    }
    // The frame leaves egress queue (out, prio) (sent, or flushed).
    void dequeue(uint32_t in, uint32_t out, uint32_t prio, uint64_t bytes) {
        queue& eq = slot(out, prio);
        const uint64_t r = m_cfg.reserved_bytes;
        const uint64_t old_q = eq.egress_bytes;
        m_shared_used -= (old_q > r ? old_q - r : 0) - (old_q - bytes > r ? old_q - bytes - r : 0);
        m_used -= bytes;
        eq.egress_bytes = old_q - bytes;
        slot(in, prio).ingress_bytes -= bytes;
    }
    // After a change of ingress (port, prio): XOFF when a lossless priority's ingress is
    // above the XOFF threshold (static, or with xoff_alpha the dynamic one when lower), XON at
    // or below XON (the same distance below it). Records the new state.
    pfc_change update_pfc(uint32_t port, uint32_t prio) {
        if (!m_cfg.lossless[prio]) {
            return pfc_change::none;
        }
        queue& q = slot(port, prio);
        const uint64_t off = xoff_threshold();
        const uint64_t gap = m_cfg.xoff_bytes - m_cfg.xon_bytes;
        const uint64_t on = off > gap ? off - gap : 0;
        if (!q.xoff && q.ingress_bytes > off) {
            q.xoff = true;
            return pfc_change::xoff;
        }
        if (q.xoff && q.ingress_bytes <= on) {
            q.xoff = false;
            return pfc_change::xon;
        }
        return pfc_change::none;
    }
    // XOFF threshold now: xoff_bytes, or with xoff_alpha > 0 the lower of that and
    // reserved_bytes + xoff_alpha x the free shared pool.
    uint64_t xoff_threshold() const {
        uint64_t off = m_cfg.xoff_bytes;
        if (m_cfg.xoff_alpha > 0) {
            const uint64_t fs = m_shared_size > m_shared_used ? m_shared_size - m_shared_used : 0;
            off = std::min<uint64_t>(
                off, m_cfg.reserved_bytes +
                         static_cast<uint64_t>(m_cfg.xoff_alpha * static_cast<double>(fs)));
        }
        return off;
    }
    // RED: probability of marking an ECT frame that finds egress queue (out, prio) as it is:
    // 0 up to kmin_bytes, pmax x (q - kmin) / (kmax - kmin) up to kmax_bytes, 1 above.
    double mark_probability(uint32_t out, uint32_t prio) const {
        const double q = static_cast<double>(at(out, prio).egress_bytes);
        const double kmin = static_cast<double>(m_cfg.kmin_bytes[prio]);
        const double kmax = static_cast<double>(m_cfg.kmax_bytes[prio]);
        if (q > kmax) {
            return 1;
        }
        return q > kmin ? m_cfg.pmax[prio] * (q - kmin) / (kmax - kmin) : 0;
    }

    const queue& at(uint32_t port, uint32_t prio) const {
        return m_q[port * SWITCH_PRIORITIES + prio];
    }
    uint64_t used() const { return m_used; }  // every buffered byte
    const uint64_t& peak_used() const { return m_peak_used; }
    uint64_t shared_used() const { return m_shared_used; }  // bytes above the queues' reserve
    uint64_t shared_size() const { return m_shared_size; }  // buffer - every queue's reserve
    double free_shared() const {
        return static_cast<double>(m_shared_size > m_shared_used ? m_shared_size - m_shared_used
                                                                 : 0);
    }

private:
    queue& slot(uint32_t port, uint32_t prio) { return m_q[port * SWITCH_PRIORITIES + prio]; }

    const switch_config m_cfg;
    std::vector<queue> m_q;  // port x SWITCH_PRIORITIES + priority
    std::vector<uint64_t> m_headroom;
    uint64_t m_used = 0;
    uint64_t m_peak_used = 0;
    uint64_t m_shared_used = 0;
    uint64_t m_shared_size = 0;
};

}  // namespace rnic::fabric
