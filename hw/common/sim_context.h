// SPDX-License-Identifier: Apache-2.0
// What every block of one simulation shares besides its ports: stats and optional trace sinks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

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
    // The same for names that live as long as the caller (a module's name(), a literal), with
    // no arguments: no string is built per slice (a few per packet on every node).
    virtual void slice(const char* block, const char* stage, uint64_t flow_id,
                       const sc_core::sc_time& start, const sc_core::sc_time& end) {
        slice(std::string(block), std::string(stage), flow_id, start, end);
    }
};

struct sim_context {
    stats_registry stats;
    sc_core::sc_trace_file* vcd = nullptr;  // model-level waveform, when requested
    event_tracer* tracer = nullptr;         // WQE timeline, when requested
    std::string rtl_fst_base;               // RTL waveforms: <base>.<nic>.fst; empty = off
    // A block that finds the run has gone wrong in a way no completion shows (a co-simulated
    // RTL breaking its contract, a lockstep divergence) records "<block>: <what>" and stops
    // the simulation; the runner lists these first among the run's failures, with the
    // outputs written.
    std::vector<std::string> failures;
    // Files a block adds to the run's outputs folder (name -> content), e.g. divergence.json.
    std::map<std::string, std::string> outputs;
    void fail(const std::string& what) {
        failures.push_back(what);
        if (failures.size() == 1 && !sc_core::sc_end_of_simulation_invoked() &&
            sc_core::sc_get_status() != sc_core::SC_STOPPED) {
            sc_core::sc_stop();
        }
    }
};

}  // namespace rnic::hw
