// SPDX-License-Identifier: Apache-2.0
// The files of a run's output folder: stats.json, summary.txt (perftest style), config.json.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "testbench/scenario/run_result.h"
#include "testbench/scenario/scenario_config.h"

namespace rnic::output {

// stats.json: {"blocks": {<module>: {<counter>: v}}, "summary": {...}, "stages": {<stage>:
// {...}}, "stages_by_block": {<block>: {<stage>: {...}}}, "integrity": {...}, "sim": {...},
// "result": {...}} (configs/README.md lists the keys). Only sim.wall_s and sim.packets_per_wall_s
// depend on the machine; everything else is a function of the config.
nlohmann::json make_stats_json(const scenario::run_result& r);

// stats.json minus the fields that depend on the machine (sim.wall_s, sim.packets_per_wall_s):
// what two runs of the same config agree on byte for byte.
nlohmann::json without_wall_fields(nlohmann::json stats);

// summary.txt: perftest-like table of the workload and its results; the last line holds the
// simulator speed (wall time) and is the only line that varies between identical runs.
std::string make_summary(const scenario::scenario_config& cfg, const scenario::run_result& r);

// JSON text as written to stats.json / config.json: 2-space indent, sorted keys, final newline.
std::string to_file_text(const nlohmann::json& j);

}  // namespace rnic::output
