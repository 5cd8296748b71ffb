// SPDX-License-Identifier: Apache-2.0
// A sweep's folder (plan.json, points/<id>/ with their done markers) and its results.csv: one
// row per point, the varied parameters, then status, the summary metrics of stats.json, error.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testbench/sweep/sweep.h"

namespace rnic::sweep {

inline constexpr const char* PLAN_FILE = "plan.json";
inline constexpr const char* RESULTS_FILE = "results.csv";
inline constexpr const char* POINTS_DIR = "points";
inline constexpr const char* DONE_FILE = "done.json";  // written last into a point's folder
inline constexpr const char* STATS_FILE = "stats.json";
inline constexpr const char* SPEED_FILE = "speed.json";  // wall-clock figures of the point's run

// A results.csv column taken from a point's stats.json (or, for the simulator's wall-clock
// speed, from its speed.json).
struct metric {
    const char* column;   // goodput_gbps
    const char* pointer;  // JSON pointer into the file: /summary/goodput_gbps
    const char* file = STATS_FILE;
};
// In column order: messages, bytes, goodput_gbps, msg_rate_mpps, latency_{avg,p50,p99,max}_ns,
// integrity_bytes_checked, integrity_mismatches, simulated_ns, wall_s (speed.json), packets.
const std::vector<metric>& metrics();

// "point", "status", "error" and the metric columns: names a parameter may not take.
bool is_results_column(const std::string& name);

enum class point_state { OK, FAILED, MISSING };
const char* to_string(point_state s);  // "ok" | "failed" | "missing"

// What a point's folder says about it.
struct point_record {
    point_state state = point_state::MISSING;
    std::string error;     // why it failed or is missing
    nlohmann::json stats;  // its stats.json, null when there is none
    nlohmann::json speed;  // its speed.json, null when there is none
};

// DIR/points/<id>
std::string point_dir(const std::string& out_dir, const point& pt);

// A point is finished (OK) when points/<id>/done.json says it completed with the same base and
// overrides as `p` has now and points/<id>/stats.json exists. FAILED when its done marker says
// the run failed; MISSING when it has not run (or ran with other settings).
point_record read_point(const std::string& out_dir, const plan& p, const point& pt);

struct results_summary {
    size_t ok = 0;
    size_t failed = 0;
    size_t missing = 0;
};

// The CSV text for `p` from the points' folders (rows in point order).
std::string make_results_csv(const std::string& out_dir, const plan& p,
                             results_summary* summary = nullptr);

// Writes DIR/results.csv (through a temporary file and a rename) and returns the counts.
// Throws std::runtime_error when it cannot write.
results_summary write_results_csv(const std::string& out_dir, const plan& p);

// One CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
std::string csv_field(const std::string& s);

// Reads DIR/plan.json. Throws config::config_error.
plan read_plan(const std::string& out_dir);

// Writes `text` to `file` through `file`.tmp and a rename. Throws std::runtime_error.
void write_file_atomic(const std::string& file, const std::string& text);

}  // namespace rnic::sweep
