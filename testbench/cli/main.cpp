// SPDX-License-Identifier: Apache-2.0
// rnicsim command line: run a scenario, validate it, or show its effective config.
//   rnicsim run SCENARIO.json [--out DIR] [--set PATH=VALUE]...   exit 0 ok, 1 failed, 2 config
//   rnicsim validate SCENARIO.json [--set PATH=VALUE]...          exit 0 valid, 2 invalid
//   rnicsim show-config SCENARIO.json [--set PATH=VALUE]...       effective config on stdout
//   rnicsim signals SCENARIO.json [--set PATH=VALUE]...           waves.vcd's signals on stdout
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <systemc>

#include <nlohmann/json.hpp>

#include "hw/common/config_reader.h"
#include "testbench/distributed/mpi_comm.h"
#include "testbench/output/flows_report.h"
#include "testbench/output/output_dir.h"
#include "testbench/output/progress.h"
#include "testbench/output/run_report.h"
#include "testbench/output/signal_docs.h"
#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"
#include "testbench/sweep/sweep_cli.h"

#include <CLI/CLI.hpp>

namespace {

constexpr int EXIT_OK = 0;
constexpr int EXIT_RUN_FAILED = 1;
constexpr int EXIT_CONFIG = 2;  // config or usage error: nothing was written

// stdout carries the summary (and show-config's JSON): SystemC's messages go to stderr, and its
// own informational ones ("Simulation stopped by user.") are not printed at all.
void report_to_stderr(const sc_core::sc_report& rep, const sc_core::sc_actions& actions) {
    if ((actions & sc_core::SC_DISPLAY) != 0) {
        std::cerr << sc_core::sc_report_compose_message(rep) << std::endl;
    }
    sc_core::sc_report_handler::default_handler(rep, actions & ~sc_core::SC_DISPLAY);
}

struct options {
    std::string scenario;
    std::string out;
    std::vector<std::string> sets;
};

void add_common(CLI::App* cmd, options& o) {
    cmd->add_option("scenario", o.scenario, "scenario file (JSON)")->required();
    cmd->add_option("--set", o.sets,
                    "override one config value: PATH=VALUE (VALUE is JSON, "
                    "else a string); repeatable")
        ->type_name("PATH=VALUE")
        ->allow_extra_args(false);
}

// Loads the scenario or prints every error (each starting with its JSON path) and returns false.
bool load(const options& o, rnic::scenario::scenario_config& cfg) {
    std::vector<std::string> sets = o.sets;
    if (!o.out.empty()) {
        sets.push_back("outputs.dir=" + nlohmann::json(o.out).dump());
    }
    try {
        cfg = rnic::scenario::load_scenario(o.scenario, sets);
        return true;
    } catch (const rnic::config::config_error& e) {
        std::cerr << "rnicsim: " << o.scenario << ": " << e.errors.size() << " config error"
                  << (e.errors.size() == 1 ? "" : "s") << ":\n";
        for (const auto& err : e.errors) {
            std::cerr << "  " << err << "\n";
        }
        return false;
    }
}

int run(const options& o) {
    rnic::scenario::scenario_config cfg;
    if (!load(o, cfg)) {
        return EXIT_CONFIG;
    }
    try {
#ifdef RNICSIM_HAVE_MPI
        // Started by mpirun/srun: one rank of a partitioned run (testbench/distributed). Minimal
        // hook of the core (M1); the infrastructure's --ranks and staging replace it. Ranks other
        // than 0 write nothing (their pcap records go to rank 0).
        std::unique_ptr<rnic::distributed::mpi_comm> comm;
        if (rnic::distributed::mpi_comm::launched_by_mpi()) {
            comm = std::make_unique<rnic::distributed::mpi_comm>(nullptr, nullptr);
            if (comm->rank() != 0) {
                rnic::scenario::run_options opts;
                opts.comm = comm.get();
                opts.pcap = cfg.outputs.pcap ? "(rank 0 writes wire.pcap)" : "";
                rnic::scenario::run_scenario(cfg, opts);
                return EXIT_OK;
            }
        }
#endif
        rnic::output::output_dir dir(cfg.outputs.dir);
        rnic::scenario::run_options opts;
        opts.waves_vcd = cfg.outputs.waves ? dir.staged("waves.vcd") : "";
        opts.pcap = cfg.outputs.pcap ? dir.staged("wire.pcap") : "";
        opts.trace = cfg.outputs.trace ? dir.staged("trace.json") : "";
        opts.progress = rnic::output::progress_bar::wanted();
#ifdef RNICSIM_HAVE_MPI
        opts.comm = comm.get();
        if (comm && comm->size() > 1) {
            opts.progress = false;
        }
#endif
        const rnic::scenario::run_result r = rnic::scenario::run_scenario(cfg, opts);
        const std::string summary = rnic::output::make_summary(cfg, r);
        nlohmann::json stats = rnic::output::make_stats_json(r);
        if (rnic::output::has_fabric_outputs(cfg, r)) {
            // Fabric scenarios: per-flow results (today's single flow back to back keeps its
            // outputs as they were).
            stats["fabric"] = rnic::output::make_fabric_json(cfg, r);
            dir.write("flows.csv", rnic::output::make_flows_csv(cfg, r));
        }
        dir.write("stats.json", rnic::output::to_file_text(stats));
        dir.write("summary.txt", summary);
        dir.write("config.json", rnic::output::to_file_text(cfg.effective));
        if (!r.cc_csv.empty()) {
            dir.write("cc.csv", r.cc_csv);  // congestion control on: rates over time
        }
        for (const auto& [name, text] : r.files) {  // e.g. divergence.json (lockstep)
            dir.write(name, text);
        }
        // The one file that differs between two runs of the same config: kept apart so that
        // every other file is byte for byte the same.
        dir.write("speed.json", rnic::output::to_file_text(rnic::output::make_speed_json(r)));
        // A finished run keeps its outputs even when a check failed: they say what went wrong.
        dir.commit();
        std::cout << summary << std::flush;
        std::cerr << rnic::output::make_speed_line(r);
        if (r.ranks.size() > 1) {  // partitioned: each rank's share (M2's speed.json has them too)
            for (const auto& k : r.ranks) {
                std::cerr << "rnicsim: rank " << k.rank << ": " << k.delta_cycles
                          << " delta cycles, " << k.windows << " windows, " << k.wall_s
                          << " s wall, " << k.wait_s << " s in window collectives\n";
            }
        }
        if (!r.passed()) {
            std::cerr << "rnicsim: run failed:\n";
            for (const auto& f : r.failures) {
                std::cerr << "  " << f << "\n";
            }
            return EXIT_RUN_FAILED;
        }
        std::cerr << "rnicsim: outputs in " << cfg.outputs.dir << "\n";
        return EXIT_OK;
    } catch (const rnic::output::output_dir_error& e) {
        std::cerr << "rnicsim: " << e.what() << "\n";
        return EXIT_CONFIG;
    } catch (const std::exception& e) {
        // Model errors (sc_report) and I/O errors: the staging folder is removed, nothing kept.
        std::cerr << "rnicsim: run aborted: " << e.what() << "\n";
        return EXIT_RUN_FAILED;
    }
}

// `rnicsim signals`: every signal waves.vcd holds for this scenario, with its width and meaning.
int signals(const options& o) {
    rnic::scenario::scenario_config cfg;
    if (!load(o, cfg)) {
        return EXIT_CONFIG;
    }
    const auto list = rnic::scenario::scenario_signals(cfg);
    size_t w = 0;
    for (const auto& s : list) {
        w = std::max(w, s.name.size());
    }
    for (const auto& s : list) {
        const std::string meaning = rnic::output::signal_meaning(s.name);
        const std::string width = s.width > 0 ? std::to_string(s.width) : "-";
        std::cout << s.name << std::string(w + 2 - s.name.size(), ' ')
                  << std::string(width.size() < 3 ? 3 - width.size() : 0, ' ') << width << "  "
                  << (meaning.empty() ? "(undocumented)" : meaning) << "\n";
    }
    return EXIT_OK;
}

}  // namespace

// SystemC calls this from sc_elab_and_sim (below): the whole command runs inside it.
int sc_main(int argc, char** argv) {
    sc_core::sc_report_handler::set_handler(report_to_stderr);
    sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                            sc_core::SC_DO_NOTHING);
    // Also the VCD writer's "tracing timescale unit set" notes, which name the staging folder.
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);

    CLI::App app{"rnicsim: cycle-accurate RDMA NIC simulator"};
    app.require_subcommand(1);
    options o;

    CLI::App* run_cmd = app.add_subcommand("run", "simulate a scenario and write its outputs");
    add_common(run_cmd, o);
    run_cmd->add_option("--out,-o", o.out, "output folder (default: outputs.dir of the scenario)");

    CLI::App* validate_cmd =
        app.add_subcommand("validate", "check a scenario; list every error (exit 2)");
    add_common(validate_cmd, o);

    CLI::App* show_cmd =
        app.add_subcommand("show-config", "print the effective config (defaults filled in)");
    add_common(show_cmd, o);

    CLI::App* signals_cmd = app.add_subcommand(
        "signals", "list the signals of waves.vcd: name, width in bits, meaning");
    add_common(signals_cmd, o);

    rnic::sweep::sweep_cli sweep_cmd(app);  // sweep, sweep collect, sweep point

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);  // prints help, or the usage error
        return code == 0 ? EXIT_OK : EXIT_CONFIG;
    }

    if (sweep_cmd.parsed()) {
        return sweep_cmd.run();
    }
    if (run_cmd->parsed()) {
        return run(o);
    }
    if (signals_cmd->parsed()) {
        return signals(o);
    }
    rnic::scenario::scenario_config cfg;
    if (!load(o, cfg)) {
        return EXIT_CONFIG;
    }
    if (validate_cmd->parsed()) {
        std::cout << o.scenario << ": ok\n";
    } else {
        std::cout << rnic::output::to_file_text(cfg.effective);
    }
    return EXIT_OK;
}

// Same config, same outputs, whatever the process's address-space layout: the simulated hosts'
// kernel virtual addresses (which RDMA puts in WQEs and on the wire as RETH VAs) come from a
// fixed region allocated in order (ndk_shim/host), not from wherever malloc puts things.
int main(int argc, char** argv) {
    // The SystemC banner would land in the middle of the summary on stdout.
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
