// SPDX-License-Identifier: Apache-2.0
// Fabric results: per-flow completion time (FCT) and slowdown over the ideal FCT of an empty
// network (flows.csv), and their distribution by flow size, per-node goodput and the flow
// counts (stats.json "fabric"). Written for every scenario but today's single flow back to back
// (whose outputs stay as they were).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "testbench/scenario/run_result.h"
#include "testbench/scenario/scenario_config.h"

namespace rnic::output {

// True when the run has fabric outputs (a switched topology or more than one flow).
bool has_fabric_outputs(const scenario::scenario_config& cfg, const scenario::run_result& r);

// The FCT flow `f` would have alone in an empty network, from formulas only: every packet's
// wire bytes (Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 [+ RETH 16 on a WRITE's first packet,
// + AETH 4 on a READ response's first and last] + payload + ICRC 4 + FCS 4 + preamble 8 +
// IFG 12, at least 84) sent back to back along one shortest path from the data's sender: each
// link at its own rate and propagation, each switch forwarding a packet its own pipeline latency
// after its last bit (store-and-forward) or first 8 + 64 bytes (cut-through into a link no
// faster) arrived, once the next link is free; up to the last packet's last bit at the
// receiver. The NIC's own latencies (PCIe, WQE fetch, ACK) are not in it: they show as slowdown
// above 1.
double ideal_fct_ns(const scenario::scenario_config& cfg, const scenario::flow_result& f);

// flows.csv: flow,src,dst,operation,bytes,messages,start_ns,end_ns,fct_ns,ideal_ns,slowdown,
// complete (one line per flow, workload order).
std::string make_flows_csv(const scenario::scenario_config& cfg, const scenario::run_result& r);

// stats.json "fabric": {"flows", "complete", "fct_ns": {p50, p99, max}, "slowdown": {"all":
// {count, p50, p99}, "<size bucket>": {...}}, "nodes": {"node<i>": {"tx_gbps", "rx_gbps"}}}.
nlohmann::json make_fabric_json(const scenario::scenario_config& cfg,
                                const scenario::run_result& r);

}  // namespace rnic::output
