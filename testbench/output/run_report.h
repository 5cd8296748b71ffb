// SPDX-License-Identifier: Apache-2.0
// The files of a run's output folder: stats.json, summary.txt (perftest style), config.json,
// speed.json (the simulator's own speed, the one file that depends on the machine).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "testbench/scenario/run_result.h"
#include "testbench/scenario/scenario_config.h"

namespace rnic::output {

class output_dir;

// stats.json: {"blocks": {<module>: {<counter>: v}}, "summary": {...}, "stages": {<stage>:
// {...}}, "stages_by_block": {<block>: {<stage>: {...}}}, "integrity": {...}, "sim": {...},
// "result": {...}} (configs/README.md lists the keys). A function of the config alone: two runs
// of the same config and seed write the same bytes. Wall-clock figures are in speed.json.
nlohmann::json make_stats_json(const scenario::run_result& r);

// stats.json "utilization": {"<block>[.<part>]": busy fraction of the workload's duration} for
// every block counter named busy_ps or <part>_busy_ps (busy time in ps), capped at 1.
nlohmann::json make_utilization(const scenario::run_result& r);
// The most utilized resource of make_utilization's answer ("" if none) and its fraction: what
// bound the run (summary.txt "Bound by").
std::string binding_resource(const nlohmann::json& utilization, double* fraction);

// speed.json: {"wall_s", "simulated_ns", "packets", "packets_per_wall_s",
// "simulated_ns_per_wall_s"}: how fast this machine simulated the run. The only output that
// changes between two runs of the same config.
nlohmann::json make_speed_json(const scenario::run_result& r);

// summary.txt: perftest-like table of the workload and its results (no wall-clock figures).
std::string make_summary(const scenario::scenario_config& cfg, const scenario::run_result& r);

// One line for the terminal (stderr): "rnicsim: simulator speed: 1.234 s wall, ...".
std::string make_speed_line(const scenario::run_result& r);

// Writes every output of a finished run that is not streamed while it runs (stats.json,
// flows.csv on a fabric, summary.txt, config.json, cc.csv with congestion control, the run's
// extra files, speed.json) into `dir`'s staging folder, as `rnicsim run` does (rank 0 alone in a
// partitioned run); returns the summary. Throws output_dir_error.
std::string write_run_outputs(const output_dir& dir, const scenario::scenario_config& cfg,
                              const scenario::run_result& r);

// JSON text as written to stats.json / config.json: 2-space indent, sorted keys, final newline.
std::string to_file_text(const nlohmann::json& j);

}  // namespace rnic::output
