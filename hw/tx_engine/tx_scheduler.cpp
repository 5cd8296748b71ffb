// SPDX-License-Identifier: Apache-2.0
// The transmit scheduler registry: an explicit table (as hw/cc/registry.cpp; a static library
// would drop self-registering objects nobody references).
#include "hw/tx_engine/tx_scheduler.h"

#include <stdexcept>

#include "hw/tx_engine/fifo_scheduler.h"
#include "hw/tx_engine/round_robin_scheduler.h"

namespace rnic::hw {

const std::vector<tx_scheduler_registration>& tx_schedulers() {
    static const std::vector<tx_scheduler_registration> list = {
        {"fifo",
         [](const tx_engine_config&, tx_sched_host& host) -> std::unique_ptr<tx_scheduler> {
             return std::make_unique<fifo_scheduler>(host);
         }},
        {"round_robin",
         [](const tx_engine_config& cfg, tx_sched_host& host) -> std::unique_ptr<tx_scheduler> {
             return std::make_unique<round_robin_scheduler>(cfg, host);
         }},
    };
    return list;
}

std::unique_ptr<tx_scheduler> make_tx_scheduler(const tx_engine_config& cfg, tx_sched_host& host) {
    for (const auto& s : tx_schedulers()) {
        if (cfg.scheduler.policy == s.name) {
            return s.make(cfg, host);
        }
    }
    throw std::invalid_argument("transmit scheduler \"" + cfg.scheduler.policy +
                                "\" is not registered");
}

}  // namespace rnic::hw
