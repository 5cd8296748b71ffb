// SPDX-License-Identifier: Apache-2.0
// Traffic patterns as flow lists.
#include "testbench/scenario/flows.h"

#include <numeric>
#include <random>

namespace rnic::scenario {

std::vector<flow_spec> flows_of(const scenario_config& cfg) {
    const workload_config& w = cfg.workload;
    const auto n = static_cast<uint32_t>(cfg.topology.nodes.size());
    std::vector<flow_spec> flows;
    switch (w.pattern) {
        case traffic_pattern::PAIRS:
            for (const auto& [src, dst] : w.pairs) {
                flows.push_back({src, dst});
            }
            break;
        case traffic_pattern::INCAST: {
            const uint32_t senders = w.senders == 0 ? n - 1 : w.senders;
            for (uint32_t k = 1; k <= senders; ++k) {
                flows.push_back({(w.receiver + k) % n, w.receiver});
            }
            break;
        }
        case traffic_pattern::PERMUTATION: {
            // Sattolo's algorithm: a uniformly drawn single cycle, so no node sends to itself.
            std::vector<uint32_t> to(n);
            std::iota(to.begin(), to.end(), 0u);
            std::mt19937_64 rng(w.seed);
            for (uint32_t i = n - 1; i > 0; --i) {
                const auto j = static_cast<uint32_t>(rng() % i);  // j < i
                std::swap(to[i], to[j]);
            }
            for (uint32_t i = 0; i < n; ++i) {
                flows.push_back({i, to[i]});
            }
            break;
        }
        case traffic_pattern::ALL_TO_ALL:
            for (uint32_t s = 0; s < n; ++s) {
                for (uint32_t d = 0; d < n; ++d) {
                    if (s != d) {
                        flows.push_back({s, d});
                    }
                }
            }
            break;
    }
    return flows;
}

}  // namespace rnic::scenario
