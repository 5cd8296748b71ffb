// SPDX-License-Identifier: Apache-2.0
// The flows of a workload: workload.pattern expanded into who sends to whom. Every flow is the
// workload's operation, messages x message_bytes over `qps` QPs, from `src` to `dst`.
#pragma once

#include <cstdint>
#include <vector>

#include "testbench/scenario/scenario_config.h"

namespace rnic::scenario {

struct flow_spec {
    uint32_t src = 0;
    uint32_t dst = 1;
};

// Expands cfg.workload's pattern over cfg.topology's nodes (deterministic for a seed):
//   pairs        workload.pairs, in order (default [[0, 1]]: today's two-node workload)
//   incast       workload.senders nodes (0: all others), the ones after workload.receiver in
//                node order, each to workload.receiver
//   permutation  every node to one other, a random derangement drawn from workload.seed
//   all_to_all   every node to every other, source-major order
std::vector<flow_spec> flows_of(const scenario_config& cfg);

}  // namespace rnic::scenario
