// SPDX-License-Identifier: Apache-2.0
// Egress schedulers and their table (an explicit table: a static library would drop
// self-registering objects nobody references).
#include "tlm/switch/egress_scheduler.h"

#include <stdexcept>

namespace rnic::fabric {

uint32_t strict_priority_scheduler::pick(uint8_t eligible, uint8_t,
                                         const std::array<uint64_t, SWITCH_PRIORITIES>&) {
    uint32_t k = SWITCH_PRIORITIES - 1;
    while (((eligible >> k) & 1) == 0) {
        --k;
    }
    return k;
}

dwrr_scheduler::dwrr_scheduler(const std::array<uint32_t, SWITCH_PRIORITIES>& weights,
                               uint32_t quantum_bytes) {
    for (uint32_t k = 0; k < SWITCH_PRIORITIES; ++k) {
        m_quantum[k] = static_cast<int64_t>(weights[k]) * quantum_bytes;
    }
}

uint32_t dwrr_scheduler::pick(uint8_t eligible, uint8_t backlogged,
                              const std::array<uint64_t, SWITCH_PRIORITIES>& head_bytes) {
    for (;;) {
        const uint32_t k = m_rr;
        if ((eligible >> k) & 1) {
            if (!m_granted[k]) {
                m_deficit[k] += m_quantum[k];
                m_granted[k] = true;
            }
            if (m_deficit[k] >= static_cast<int64_t>(head_bytes[k])) {
                m_deficit[k] -= static_cast<int64_t>(head_bytes[k]);
                return k;
            }
        } else if (((backlogged >> k) & 1) == 0) {
            m_deficit[k] = 0;
        }
        m_granted[k] = false;
        m_rr = (m_rr + 1) % SWITCH_PRIORITIES;
    }
}

void dwrr_scheduler::drained(uint32_t k) {
    m_deficit[k] = 0;
    m_granted[k] = false;
    m_rr = (m_rr + 1) % SWITCH_PRIORITIES;
}

const std::vector<egress_scheduler_registration>& egress_schedulers() {
    static const std::vector<egress_scheduler_registration> list = {
        {"strict",
         [](const switch_config&) -> std::unique_ptr<egress_scheduler> {
             return std::make_unique<strict_priority_scheduler>();
         }},
        {"dwrr",
         [](const switch_config& c) -> std::unique_ptr<egress_scheduler> {
             return std::make_unique<dwrr_scheduler>(c.dwrr_weights, c.dwrr_quantum_bytes);
         }},
    };
    return list;
}

std::unique_ptr<egress_scheduler> make_egress_scheduler(const switch_config& cfg) {
    for (const auto& s : egress_schedulers()) {
        if (cfg.scheduler == s.name) {
            return s.make(cfg);
        }
    }
    throw std::invalid_argument("switch scheduler \"" + cfg.scheduler + "\" is not registered");
}

}  // namespace rnic::fabric
