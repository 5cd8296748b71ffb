// SPDX-License-Identifier: Apache-2.0
// `rnicsim sweep`, `rnicsim sweep collect`, `rnicsim sweep point`.
#include "testbench/sweep/sweep_cli.h"

#include <filesystem>
#include <iostream>
#include <thread>

#include "hw/common/config_reader.h"
#include "testbench/sweep/results.h"
#include "testbench/sweep/runner.h"
#include "testbench/sweep/slurm.h"
#include "testbench/sweep/sweep.h"

namespace rnic::sweep {

namespace fs = std::filesystem;

namespace {

void print_config_errors(const std::string& what, const config::config_error& e) {
    std::cerr << "rnicsim: " << what << ": " << e.errors.size() << " error"
              << (e.errors.size() == 1 ? "" : "s") << ":\n";
    for (const auto& err : e.errors) {
        std::cerr << "  " << err << "\n";
    }
}

// out/sweeps/<stem of the sweep file>
std::string default_out(const std::string& file) {
    return (fs::path("out") / "sweeps" / fs::path(file).stem()).string();
}

void print_summary(const results_summary& s, const std::string& dir) {
    std::cerr << "sweep: " << s.ok << " ok, " << s.failed << " failed";
    if (s.missing > 0) {
        std::cerr << ", " << s.missing << " not run";
    }
    std::cerr << "; results in " << (fs::path(dir) / RESULTS_FILE).string() << "\n";
}

}  // namespace

sweep_cli::sweep_cli(CLI::App& app) {
    m_jobs = std::max(1u, std::thread::hardware_concurrency());
    m_sweep = app.add_subcommand(
        "sweep", "run a sweep: a base scenario with parameters varied (configs/sweeps/)");
    m_sweep->require_subcommand(0, 1);
    m_sweep->add_option("sweep", m_file, "sweep file (JSON)");
    m_sweep->add_option("--out,-o", m_out, "sweep folder (default: out/sweeps/<sweep file name>)");
    m_jobs_opt = m_sweep
                     ->add_option("--jobs,-j", m_jobs,
                                  "points run at once (local: default the CPU count; slurm: "
                                  "the job array's task limit, default none)")
                     ->check(CLI::Range(1u, 4096u));
    m_sweep->add_option("--backend", m_backend, "where the points run")
        ->check(CLI::IsMember({"local", "slurm"}))
        ->capture_default_str();
    m_sweep->add_flag("--dry-run", m_dry_run,
                      "check the sweep and show what would run (local: the points; slurm: write "
                      "and print sweep.sbatch) without running anything");
    m_sweep->add_flag("--wait", m_wait,
                      "slurm: wait for the job array to end, then write results.csv");
    m_sweep
        ->add_option("--sbatch-arg", m_sbatch_args,
                     "slurm: one more sbatch option, e.g. --sbatch-arg=--partition=sim; "
                     "repeatable")
        ->allow_extra_args(false);

    m_collect = m_sweep->add_subcommand("collect", "write DIR/results.csv from the points run");
    m_collect->add_option("dir", m_dir, "sweep folder")->required();

    m_point = m_sweep->add_subcommand("point", "run one point of a sweep folder (Slurm task)");
    m_point->add_option("dir", m_dir, "sweep folder")->required();
    m_point->add_option("index", m_index, "point index (the Slurm array task id)")->required();
}

bool sweep_cli::parsed() const {
    return m_sweep->parsed();
}

int sweep_cli::run() {
    if (m_collect->parsed()) {
        return run_collect();
    }
    if (m_point->parsed()) {
        return run_point();
    }
    return run_sweep();
}

int sweep_cli::run_sweep() {
    if (m_file.empty()) {
        std::cerr << "rnicsim sweep: a sweep file is required (see --help)\n";
        return EXIT_CONFIG;
    }
    if (m_wait && m_backend != "slurm") {
        std::cerr << "rnicsim sweep: --wait is for --backend slurm (local sweeps always wait)\n";
        return EXIT_CONFIG;
    }
    plan p;
    try {
        p = load_plan(m_file);
    } catch (const config::config_error& e) {
        print_config_errors(m_file, e);
        return EXIT_CONFIG;
    }
    const std::string out = m_out.empty() ? default_out(m_file) : m_out;

    if (m_dry_run && m_backend == "local") {
        // The points, whether they would run, and the command of each.
        for (const auto& pt : p.points) {
            const bool done = read_point(out, p, pt).state == point_state::OK;
            std::cout << pt.id << (done ? " finished:" : " to run: ");
            for (const auto& a : point_command(p, pt, "rnicsim", point_dir(out, pt))) {
                std::cout << " " << shell_quote(a);
            }
            std::cout << "\n";
        }
        std::cerr << "sweep: " << p.points.size()
                  << " points, all valid; nothing run (--dry-run)\n";
        return EXIT_OK;
    }

    try {
        prepare_out_dir(out, p);
        if (m_backend == "local") {
            run_options o;
            o.out_dir = out;
            o.jobs = m_jobs;
            return run_local(p, o);
        }
        slurm_options o;
        o.out_dir = out;
        o.binary = self_executable();
        o.max_parallel = m_jobs_opt->count() > 0 ? m_jobs : 0;
        o.sbatch_args = m_sbatch_args;
        o.wait = m_wait;
        o.dry_run = m_dry_run;
        return run_slurm(p, o);
    } catch (const sweep_dir_error& e) {
        std::cerr << "rnicsim sweep: " << e.what() << "\n";
        return EXIT_CONFIG;
    } catch (const std::runtime_error& e) {
        std::cerr << "rnicsim sweep: " << e.what() << "\n";
        return EXIT_POINT_FAILED;
    }
}

int sweep_cli::run_collect() {
    try {
        const plan p = read_plan(m_dir);
        const results_summary s = write_results_csv(m_dir, p);
        print_summary(s, m_dir);
        return s.failed + s.missing > 0 ? EXIT_POINT_FAILED : EXIT_OK;
    } catch (const config::config_error& e) {
        print_config_errors(m_dir, e);
        return EXIT_CONFIG;
    } catch (const std::runtime_error& e) {
        std::cerr << "rnicsim sweep collect: " << e.what() << "\n";
        return EXIT_POINT_FAILED;
    }
}

int sweep_cli::run_point() {
    try {
        const plan p = read_plan(m_dir);
        if (m_index >= p.points.size()) {
            std::cerr << "rnicsim sweep point: index " << m_index << " is past the last point ("
                      << p.points.size() << " points)\n";
            return EXIT_CONFIG;
        }
        const point_outcome r = run_one_point(m_dir, p, m_index, SELF_EXE);
        const point& pt = p.points[m_index];
        std::cerr << "sweep: point " << pt.id << ": " << (r.ok ? "ok" : "FAILED: " + r.error)
                  << " (" << point_dir(m_dir, pt) << ")\n";
        return r.ok ? EXIT_OK : EXIT_POINT_FAILED;
    } catch (const config::config_error& e) {
        print_config_errors(m_dir, e);
        return EXIT_CONFIG;
    } catch (const std::runtime_error& e) {
        std::cerr << "rnicsim sweep point: " << e.what() << "\n";
        return EXIT_POINT_FAILED;
    }
}

}  // namespace rnic::sweep
