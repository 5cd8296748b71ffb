// SPDX-License-Identifier: Apache-2.0
// The `rnicsim sweep` subcommands:
//   rnicsim sweep SWEEP.json [--out DIR] [--jobs N] [--backend local|slurm] [--dry-run]
//                 [--wait] [--sbatch-arg ARG]...        run (or submit) every unfinished point
//   rnicsim sweep collect DIR                           build DIR/results.csv from the points
//   rnicsim sweep point DIR INDEX                       run one point (a Slurm array task)
// Exit 0 all points ok, 1 a point failed or has not run, 2 invalid sweep file/folder/arguments,
// 130 interrupted.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace rnic::sweep {

class sweep_cli {
public:
    // Registers the subcommands on `app`.
    explicit sweep_cli(CLI::App& app);
    sweep_cli(const sweep_cli&) = delete;
    sweep_cli& operator=(const sweep_cli&) = delete;

    // True when the command line named `sweep`.
    bool parsed() const;
    // Runs the parsed command; returns the exit code.
    int run();

private:
    int run_sweep();
    int run_collect();
    int run_point();

    CLI::App* m_sweep = nullptr;
    CLI::App* m_collect = nullptr;
    CLI::App* m_point = nullptr;
    CLI::Option* m_jobs_opt = nullptr;
    std::string m_file;
    std::string m_out;
    unsigned m_jobs = 1;
    std::string m_backend = "local";
    bool m_dry_run = false;
    bool m_wait = false;
    std::vector<std::string> m_sbatch_args;
    std::string m_dir;
    size_t m_index = 0;
};

}  // namespace rnic::sweep
