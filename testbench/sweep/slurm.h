// SPDX-License-Identifier: Apache-2.0
// Slurm backend of `rnicsim sweep`: DIR/sweep.sbatch is a job array with one task per
// unfinished point (`rnicsim sweep point DIR $SLURM_ARRAY_TASK_ID`), submitted with sbatch,
// followed by a collect job that writes DIR/results.csv once every task has ended. DIR must be
// on a file system the cluster's nodes share, and the rnicsim binary at the same path.
#pragma once

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

#include "testbench/sweep/sweep.h"

namespace rnic::sweep {

inline constexpr const char* SBATCH_FILE = "sweep.sbatch";
inline constexpr const char* SLURM_LOG_DIR = "slurm";  // DIR/slurm/<job>_<task>.out

struct slurm_options {
    std::string out_dir;        // made absolute for the script
    std::string binary;         // absolute path of rnicsim on the nodes
    unsigned max_parallel = 0;  // the array's %N (tasks at once), 0: Slurm decides
    std::string job_name = "rnicsim-sweep";
    std::vector<std::string> sbatch_args;  // more sbatch options, e.g. --partition=sim
    bool wait = false;            // sbatch --wait, then collect here (results.csv when it returns)
    bool dry_run = false;         // write sweep.sbatch and print it; submit nothing
    std::ostream* out = nullptr;  // the script on --dry-run, job ids (default std::cout)
    std::ostream* log = nullptr;  // progress and errors (default std::cerr)
};

// Slurm's --array value for these indices: ranges compressed, "0-3,7,9-12", "%N" appended
// when max_parallel > 0.
std::string array_spec(const std::vector<size_t>& indices, unsigned max_parallel);

// The job-array script for the given point indices.
std::string make_sbatch_script(const plan& p, const std::vector<size_t>& indices,
                               const slurm_options& o);

// Writes DIR/sweep.sbatch for the unfinished points and submits it (plus the collect job), or
// prints it on dry_run. plan.json must already be in DIR (prepare_out_dir). Returns an exit
// code: 0 submitted (or, with wait, every point ok), 1 sbatch failed or a point failed.
int run_slurm(const plan& p, const slurm_options& o);

// The absolute path of the running executable (for the script). Throws std::runtime_error
// when it cannot be found or was deleted (rebuilt) since it started.
std::string self_executable();

// A word for /bin/sh: single-quoted unless it is made of safe characters only.
std::string shell_quote(const std::string& s);

}  // namespace rnic::sweep
