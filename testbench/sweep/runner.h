// SPDX-License-Identifier: Apache-2.0
// Runs a sweep's points as separate `rnicsim run` processes (one SystemC elaboration each), N
// at a time, each into a private temporary folder renamed to points/<id> when it ends, so that
// an interrupted sweep resumes without redoing finished points.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <vector>

#include "testbench/sweep/results.h"
#include "testbench/sweep/sweep.h"

namespace rnic::sweep {

// Exit codes of the sweep commands.
inline constexpr int EXIT_OK = 0;
inline constexpr int EXIT_POINT_FAILED = 1;  // some point failed or has not run
inline constexpr int EXIT_CONFIG = 2;        // invalid sweep file, folder or arguments
inline constexpr int EXIT_INTERRUPTED = 130;

// The simulator the points run: this very binary, even if it was rebuilt in the meantime.
inline constexpr const char* SELF_EXE = "/proc/self/exe";

struct run_options {
    std::string out_dir;
    unsigned jobs = 1;              // points run at once
    std::string binary = SELF_EXE;  // `<binary> run SCENARIO --out DIR --set ...`
    std::ostream* log = nullptr;    // progress and failures (default std::cerr)
};

// How one point's process ended.
struct point_outcome {
    bool ok = false;
    int exit_code = -1;  // -1 when killed by a signal
    int signal = 0;
    double wall_s = 0;
    std::string error;  // the tail of its stderr, or how it ended
};

// Thrown when the output folder cannot be used (exit 2).
struct sweep_dir_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Checks that `out_dir` is missing, empty or an earlier sweep's folder, creates it and writes
// plan.json. Throws sweep_dir_error.
void prepare_out_dir(const std::string& out_dir, const plan& p);

// The points that are not finished (see read_point), in index order.
std::vector<size_t> pending_points(const std::string& out_dir, const plan& p);

// The argument vector of `rnicsim run` for one point writing into `run_dir`.
std::vector<std::string> point_command(const plan& p, const point& pt, const std::string& binary,
                                       const std::string& run_dir);

// Runs one point now, in this process's child, and files its folder (sweep point DIR INDEX).
point_outcome run_one_point(const std::string& out_dir, const plan& p, size_t index,
                            const std::string& binary);

// Runs every unfinished point, `jobs` at a time, then writes results.csv. A failed point does
// not stop the others. SIGINT/SIGTERM stop the running points (they rerun on resume) and
// still write results.csv. Returns EXIT_OK, EXIT_POINT_FAILED or EXIT_INTERRUPTED. Throws
// sweep_dir_error when another sweep holds the folder.
int run_local(const plan& p, const run_options& o);

// The last few non-empty lines of a process's stderr, joined with " | " (at most ~400 chars).
std::string stderr_tail(const std::string& text);

}  // namespace rnic::sweep
