// SPDX-License-Identifier: Apache-2.0
// What every block of one simulation shares besides its ports: stats and optional trace sinks.
#pragma once

#include <cstdint>
#include <string>

#include <systemc>

#include "hw/common/stats.h"

namespace rnic::hw {

// Receives the life of each WQE/packet through the blocks (Chrome trace events, issue 5).
// A null pointer in sim_context means tracing is off and costs one branch.
class event_tracer {
public:
    virtual ~event_tracer() = default;
    // One stage of one item: [start, end) on track `block` (hierarchical module name).
    virtual void slice(const std::string& block, const std::string& stage, uint64_t flow_id,
                       const sc_core::sc_time& start, const sc_core::sc_time& end,
                       const std::string& args_json = "") = 0;
};

struct sim_context {
    stats_registry stats;
    sc_core::sc_trace_file* vcd = nullptr;  // model-level waveform, when requested
    event_tracer* tracer = nullptr;         // WQE timeline, when requested
    std::string rtl_fst_base;               // RTL waveforms: <base>.<nic>.fst; empty = off
};

}  // namespace rnic::hw
