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
    uint64_t message_bytes = 65536;  // per work request
    uint64_t messages = 1;           // spread over the workload's qps
    double start_ns = 0;             // first post not before (the QPs connect first)
    // Message i is posted once flow `gate` has delivered i + gate_ahead messages to this flow's
    // source (a ring collective's steps: gate_ahead 0; the answer of a ping-pong: 1); -1: no
    // gate.
    int64_t gate = -1;
    uint64_t gate_ahead = 0;
};

// Expands cfg.workload's pattern over cfg.topology's nodes (deterministic for a seed):
//   pairs        workload.pairs, in order (default [[0, 1]]: today's two-node workload)
//   incast       workload.senders nodes (0: all others), the ones after workload.receiver in
//                node order, each to workload.receiver
//   permutation  every node to one other, a random derangement drawn from workload.seed
//   all_to_all   every node to every other, source-major order
//   ring_allreduce  node i SENDs to node i+1 (mod N) the 2 (N - 1) steps of a ring
//                all-reduce (reduce-scatter, then all-gather), message_bytes each; step k of
//                node i waits for step k - 1 from node i - 1 (as collective libraries post them)
//   ping_pong    per entry [a, b] of workload.pairs two flows, a -> b (the ping) then b -> a
//                (the answer): SEND i of the answer waits for ping i, ping i + 1 for answer i
//                (perftest's ib_send_lat); the run's latency samples are half the round trips
//   flows        workload.flows (explicit), or one flow per arrival: per source node, Poisson
//                arrivals at workload.load of its link rate during workload.duration_us from
//                workload.start_us, size drawn from the workload.cdf distribution, destination
//                uniform among the other nodes (every flow one message of its size)
// Everything but "flows" moves workload.messages x workload.message_bytes per flow.
std::vector<flow_spec> flows_of(const scenario_config& cfg);

}  // namespace rnic::scenario
