// SPDX-License-Identifier: Apache-2.0
// Sweep files (configs/sweeps/*.json): a base scenario and the parameters to vary, expanded into
// a plan of points, each point one `rnicsim run` with --set overrides.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace rnic::sweep {

// One column of results.csv: the value of each point is set at every path in `paths`.
struct parameter {
    std::string name;                    // column name (default: the first path)
    std::vector<std::string> paths;      // scenario config paths, e.g. workload.message_bytes
    std::vector<nlohmann::json> values;  // one per position along its axis
    std::string origin;                  // where it was declared: parameters.2.zip.1
};

// One dimension of the grid: a single parameter, or a zip group whose parameters step together.
struct axis {
    std::vector<parameter> params;  // all with the same number of values
    size_t size() const { return params.empty() ? 0 : params.front().values.size(); }
};

// An extra results.csv column (sweep-file key "stats_columns"): a value of each point's
// stats.json, named by a JSON pointer because block names hold dots
// (/blocks/node1.nic.context_cache/qpc_misses).
struct stat_column {
    std::string name;     // column name
    std::string pointer;  // JSON pointer into stats.json
};

struct sweep_spec {
    std::string file;         // the sweep file as named on the command line
    std::string description;  // free text
    std::string base;         // base scenario, absolute (relative paths are from the sweep file)
    std::vector<std::pair<std::string, nlohmann::json>> fixed;  // "set": every point, first
    std::vector<axis> axes;                 // the grid: the first axis varies slowest
    std::vector<stat_column> stat_columns;  // after the built-in metrics in results.csv
};

// One run of the sweep.
struct point {
    size_t index = 0;
    std::string id;                      // zero-padded index: the folder points/<id>
    std::vector<nlohmann::json> values;  // one per plan column
    std::vector<std::string> overrides;  // PATH=JSON for `rnicsim run --set`, fixed ones first
};

// The expanded sweep, written as DIR/plan.json so that `sweep point` and `sweep collect` (on
// another machine of a cluster, or after an interruption) see exactly the same points.
struct plan {
    std::string sweep_file;                 // absolute
    std::string description;                // of the sweep file (plot titles)
    std::string base;                       // absolute
    std::vector<std::string> columns;       // parameter names, in axis order
    std::vector<stat_column> stat_columns;  // extra stats.json columns of the sweep file
    std::vector<point> points;              // index order

    nlohmann::json to_json() const;
    // Throws config::config_error naming the broken key of plan.json.
    static plan from_json(const nlohmann::json& j);
};

inline constexpr size_t MAX_POINTS = 100000;  // a guard against a mistyped range

// Parses a sweep document; `dir` is the folder relative base paths start from. Throws
// config::config_error listing every error, each starting with its JSON path.
sweep_spec parse_sweep(const nlohmann::json& j, const std::string& dir);

// Reads the file (JSON with comments) and parses it. Throws config::config_error.
sweep_spec load_sweep(const std::string& file);

// The grid: every combination of the axes, the first axis varying slowest.
plan expand(const sweep_spec& spec);

// Checks every point's scenario (the base with the point's overrides) the way `rnicsim run`
// would, before anything runs. Errors name the sweep-file path that caused them
// (`parameters.0.values.3: workload.message_bytes: 0 out of range [1, ...]`), or the point.
// Throws config::config_error.
void validate(const sweep_spec& spec, const plan& p);

// load_sweep + expand + validate.
plan load_plan(const std::string& sweep_file);

// "0042" for index 42 of a sweep of `count` points (at least four digits).
std::string point_id(size_t index, size_t count);

// A value as it appears in results.csv and in messages: strings bare, the rest as JSON.
std::string format_value(const nlohmann::json& v);

}  // namespace rnic::sweep
