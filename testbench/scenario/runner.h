// SPDX-License-Identifier: Apache-2.0
// Runs one scenario: elaborates the nodes and the link, runs the NDK workload to its end, checks
// the data, and gathers every counter.
#pragma once

#include <string>

#include "testbench/scenario/run_result.h"
#include "testbench/scenario/scenario_config.h"

namespace rnic::scenario {

// Elaborates and simulates `cfg` to the end of its workload (or workload.time_limit_ms) and
// returns the results; a failed check is in run_result::failures, not an exception. When
// `vcd_base` is not empty, waves go to `vcd_base`.vcd (opened before elaboration, so every block
// traces itself into it). SystemC allows one elaboration per process: call this once.
// Throws what the models throw (sc_report on a model error).
run_result run_scenario(const scenario_config& cfg, const std::string& vcd_base = "");

}  // namespace rnic::scenario
