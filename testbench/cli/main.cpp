// SPDX-License-Identifier: Apache-2.0
// rnicsim command line: run a scenario, validate it, or show its effective config.
//   rnicsim run SCENARIO.json [--out DIR] [--set PATH=VALUE]... [--ranks N]
//                                                                 exit 0 ok, 1 failed, 2 config
//   rnicsim validate SCENARIO.json [--set PATH=VALUE]...          exit 0 valid, 2 invalid
//   rnicsim show-config SCENARIO.json [--set PATH=VALUE]...       effective config on stdout
//   rnicsim signals SCENARIO.json [--set PATH=VALUE]...           waves.vcd's signals on stdout
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <systemc>

#include <nlohmann/json.hpp>

#include "hw/common/config_reader.h"
#include "testbench/distributed/mpi_comm.h"
#include "testbench/output/flows_report.h"
#include "testbench/output/html_report.h"
#include "testbench/output/output_dir.h"
#include "testbench/output/progress.h"
#include "testbench/output/run_report.h"
#include "testbench/output/signal_docs.h"
#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"
#include "testbench/sweep/results.h"
#include "testbench/sweep/sweep_cli.h"

#include <limits.h>
#include <sysc/kernel/sc_kernel_ids.h>
#include <unistd.h>
#ifdef RNICSIM_HAVE_MPI
#include "testbench/distributed/mpi_comm.h"
#endif

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
    int ranks = 0;  // --ranks N (0: not given)
};

void add_common(CLI::App* cmd, options& o) {
    cmd->add_option("scenario", o.scenario, "scenario file (JSON)")->required();
    cmd->add_option("--set", o.sets,
                    "override one config value: PATH=VALUE (VALUE is JSON, "
                    "else a string); repeatable")
        ->type_name("PATH=VALUE")
        ->allow_extra_args(false);
}

// Loads the scenario or prints every error (each starting with its JSON path; when `print`)
// and returns false.
bool load(const options& o, rnic::scenario::scenario_config& cfg, bool print = true) {
    std::vector<std::string> sets = o.sets;
    if (!o.out.empty()) {
        sets.push_back("outputs.dir=" + nlohmann::json(o.out).dump());
    }
    try {
        cfg = rnic::scenario::load_scenario(o.scenario, sets);
        return true;
    } catch (const rnic::config::config_error& e) {
        if (!print) {
            return false;
        }
        std::cerr << "rnicsim: " << o.scenario << ": " << e.errors.size() << " config error"
                  << (e.errors.size() == 1 ? "" : "s") << ":\n";
        for (const auto& err : e.errors) {
            std::cerr << "  " << err << "\n";
        }
        return false;
    }
}

// trace.json, or trace.perfetto-trace in Perfetto's protobuf form (outputs.trace_format).
std::string trace_file(const rnic::scenario::scenario_config& cfg) {
    return cfg.outputs.trace_format == "perfetto" ? "trace.perfetto-trace" : "trace.json";
}

rnic::scenario::run_options staged_options(const rnic::scenario::scenario_config& cfg,
                                           const rnic::output::output_dir& dir) {
    rnic::scenario::run_options opts;
    opts.waves_vcd = cfg.outputs.waves ? dir.staged("waves.vcd") : "";
    opts.pcap = cfg.outputs.pcap ? dir.staged("wire.pcap") : "";
    opts.trace = cfg.outputs.trace ? dir.staged(trace_file(cfg)) : "";
    opts.progress = rnic::output::progress_bar::wanted();
    return opts;
}

// After the outputs are in place: the summary on stdout, the verdict on stderr.
int report(const rnic::scenario::scenario_config& cfg, const rnic::scenario::run_result& r,
           const std::string& summary) {
    std::cout << summary << std::flush;
    std::cerr << rnic::output::make_speed_line(r);
    if (r.ranks.size() > 1) {  // partitioned: each rank's share (speed.json "ranks" too)
        for (const auto& k : r.ranks) {
            std::cerr << "rnicsim: rank " << k.rank << ": " << k.delta_cycles << " delta cycles, "
                      << k.windows << " windows, " << k.wall_s << " s wall, " << k.wait_s
                      << " s in window collectives, " << k.cpu_s << " s CPU\n";
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
}

int run(const options& o) {
    rnic::scenario::scenario_config cfg;
    if (!load(o, cfg)) {
        return EXIT_CONFIG;
    }
    try {
        rnic::output::output_dir dir(cfg.outputs.dir);
        const rnic::scenario::run_result r =
            rnic::scenario::run_scenario(cfg, staged_options(cfg, dir));
        const std::string summary = rnic::output::write_run_outputs(dir, cfg, r);
        // A finished run keeps its outputs even when a check failed: they say what went wrong.
        dir.commit();
        return report(cfg, r, summary);
    } catch (const rnic::output::output_dir_error& e) {
        std::cerr << "rnicsim: " << e.what() << "\n";
        return EXIT_CONFIG;
    } catch (const std::exception& e) {
        // Model errors (sc_report) and I/O errors: the staging folder is removed, nothing kept.
        std::cerr << "rnicsim: run aborted: " << e.what() << "\n";
        return EXIT_RUN_FAILED;
    }
}

// --- partitioned runs (README "Partitioned runs") ---

// srun with several tasks but no MPI launcher (--mpi=pmix): every task would run the whole
// scenario into the same folder. Returns the task count, 0 when not in such a step.
int srun_tasks_without_mpi() {
    const char* tasks = std::getenv("SLURM_STEP_NUM_TASKS");
    const int n = tasks != nullptr ? std::atoi(tasks) : 0;
#ifdef RNICSIM_HAVE_MPI
    if (rnic::distributed::mpi_comm::launched_by_mpi()) {
        return 0;
    }
#endif
    return n > 1 ? n : 0;
}

// topology.partition gives the parts of a partitioned run: one per rank. False (and the error
// printed, starting with the JSON path) when the rank count differs.
bool partition_fits(const rnic::scenario::scenario_config& cfg, int ranks, bool print) {
    if (ranks > 1 && cfg.rnic.send_path.impl != "model" && cfg.rnic.send_path.rtl.clock == "free") {
        // A free-running RTL clock never runs out of events: its run ends with the workload's
        // last role, an instant a rank cannot know before every rank has reached it.
        if (print) {
            std::cerr << "rnicsim: rnic.send_path.rtl.clock: \"free\" cannot be partitioned over "
                      << ranks << " ranks (use \"gated\", or one process)\n";
        }
        return false;
    }
    const size_t parts = cfg.topology.partition_parts;
    if (ranks <= 1 || parts == 0 || parts == static_cast<size_t>(ranks)) {
        return true;
    }
    if (print) {
        std::cerr << "rnicsim: topology.partition: " << parts << " parts given, but the run has "
                  << ranks << " ranks (give one part per rank, or leave topology.partition out)\n";
    }
    return false;
}

#ifdef RNICSIM_HAVE_MPI

// `rnicsim run SCENARIO --ranks N` outside mpirun: checks the scenario and the output folder
// here (one error message, not N), then replaces this process with
// `mpirun -np N <this binary> <the same arguments but --ranks>`; mpirun's exit status is ours.
int launch_mpirun(const options& o, int argc, char** argv) {
    rnic::scenario::scenario_config cfg;
    if (!load(o, cfg) || !partition_fits(cfg, o.ranks, true)) {
        return EXIT_CONFIG;
    }
    try {
        rnic::output::output_dir check(cfg.outputs.dir);  // refuses a folder it may not replace
    } catch (const rnic::output::output_dir_error& e) {
        std::cerr << "rnicsim: " << e.what() << "\n";
        return EXIT_CONFIG;
    }
    char self[PATH_MAX] = {};
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        std::cerr << "rnicsim: --ranks: cannot find this executable (/proc/self/exe)\n";
        return EXIT_CONFIG;
    }
    std::vector<std::string> args = {RNICSIM_MPIEXEC, "-np", std::to_string(o.ranks)};
    // More ranks than cores: Open MPI refuses unless told; a rank then shares a core (slower,
    // same outputs). No binding: ranks of other runs may share this machine.
    if (static_cast<unsigned>(o.ranks) > std::max(1u, std::thread::hardware_concurrency())) {
        args.emplace_back("--oversubscribe");
    }
    args.insert(args.end(), {"--bind-to", "none"});
    // Ranks wait for each other at every window end: yield the core while waiting instead of
    // busy-polling, or a rank that shares a core with another (oversubscribed, or a busy
    // machine) starves it (measured: incast 8:1, 2 ranks on a loaded 2-core machine, 14.9 s
    // busy-polling, 1.3 s yielding). OMPI_MCA_mpi_yield_when_idle in the environment wins.
    // Start-up (testbench/distributed/README.md "Speed"): the ranks share this machine, so Open
    // MPI's own transports serve (pml ob1 over btl vader, shared memory; tcp for a launch that
    // spans an allocation's hosts): MPI_Init took 0.25 s with the default UCX pml, 0.05 s with
    // ob1, for the same window round trip. A window's frames (a few KB) go eagerly up to 32 KB
    // (vader's default, 4 KB, adds a rendezvous round trip above it; measured 2 % of the run).
    // hwloc discovers no I/O devices (ten X displays probed for OpenGL, the PCI bus; 30 ms of
    // the run): shared memory and TCP need only the cores. Each, set in the environment
    // (OMPI_MCA_<name>, HWLOC_COMPONENTS), wins.
    for (const auto& [name, value] :
         {std::pair<const char*, const char*>{"mpi_yield_when_idle", "1"},
          {"pml", "ob1"},
          {"btl", "self,vader,tcp"},
          {"btl_vader_eager_limit", "32768"}}) {
        if (std::getenv(("OMPI_MCA_" + std::string(name)).c_str()) == nullptr) {
            args.insert(args.end(), {"--mca", name, value});
        }
    }
    if (std::getenv("HWLOC_COMPONENTS") == nullptr) {
        // mpirun and the ranks inherit it
        setenv("HWLOC_COMPONENTS", "-gl,-opencl,-pci,-linuxio", 1);
    }
    if (geteuid() == 0) {
        args.emplace_back("--allow-run-as-root");  // containers and CI run as root
    }
    args.emplace_back(self);
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--ranks") {
            ++i;  // and its value
        } else if (a.rfind("--ranks=", 0) != 0) {
            args.push_back(a);
        }
    }
    std::vector<char*> cargs;
    for (auto& a : args) {
        cargs.push_back(a.data());
    }
    cargs.push_back(nullptr);
    std::cout << std::flush;
    execv(cargs[0], cargs.data());
    std::cerr << "rnicsim: --ranks: cannot start " << RNICSIM_MPIEXEC << ": "
              << std::strerror(errno) << "\n";
    return EXIT_CONFIG;
}

// This rank, for the signal handler (no allocation there).
char g_rank_line[256] = {};

// mpirun ends every rank with SIGTERM when one of them died or exited early, or when the job
// is cancelled (Ctrl-C, scancel): say who we are and why we stop, remove the staging folder,
// and exit non-zero. Async-signal-safe calls only.
extern "C" void on_terminate(int sig) {
    const char* what = sig == SIGINT ? "SIGINT" : sig == SIGHUP ? "SIGHUP" : "SIGTERM";
    const ssize_t ignored1 = write(STDERR_FILENO, g_rank_line, std::strlen(g_rank_line));
    const ssize_t ignored2 = write(STDERR_FILENO, what, std::strlen(what));
    static const char tail[] =
        ": stopped because another rank failed or lost its connection, or the job was cancelled "
        "(mpirun/srun names the failed rank); no outputs written\n";
    const ssize_t ignored3 = write(STDERR_FILENO, tail, sizeof tail - 1);
    (void)ignored1;
    (void)ignored2;
    (void)ignored3;
    rnic::output::output_dir::remove_staging_from_signal_handler();
    _exit(EXIT_RUN_FAILED);
}

// One rank of a partitioned run (started by mpirun / srun). Every rank loads the scenario and
// simulates its part; rank 0 alone writes outputs, into its staging folder, which it renames
// into place only after every rank has said its part of the run ended well.
int run_rank(const options& o, rnic::distributed::mpi_comm& comm);

// MPI start-up and any error outside the simulation (a collective that failed because a peer is
// gone): this rank says so and exits without MPI_Finalize, so the launcher ends the others.
int run_rank(const options& o, int argc, char** argv) {
    try {
        rnic::distributed::mpi_comm comm(&argc, &argv);
        return run_rank(o, comm);
    } catch (const std::exception& e) {
        std::cerr << (g_rank_line[0] != '\0' ? g_rank_line : "rnicsim: ")
                  << "run aborted: " << e.what() << std::endl;
        rnic::output::output_dir::remove_staging_from_signal_handler();
        std::_Exit(EXIT_RUN_FAILED);
    }
}

int run_rank(const options& o, rnic::distributed::mpi_comm& comm) {
    const int rank = comm.rank();
    const int size = comm.size();
    const std::string me = "rank " + std::to_string(rank) + " of " + std::to_string(size);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const std::string line =
        "rnicsim: " + me + " (" + host + ", pid " + std::to_string(getpid()) + "): ";
    line.copy(g_rank_line, std::min(line.size(), sizeof g_rank_line - 1));
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
        std::signal(sig, on_terminate);
    }
    if (o.ranks > 0 && o.ranks != size) {
        if (rank == 0) {
            std::cerr << "rnicsim: --ranks " << o.ranks << " but started as " << size
                      << " MPI ranks; leave --ranks out under mpirun/srun\n";
        }
        return EXIT_CONFIG;
    }
    // Every rank reads the same files: the same verdict everywhere, printed once.
    rnic::scenario::scenario_config cfg;
    if (!load(o, cfg, rank == 0) || !partition_fits(cfg, size, rank == 0)) {
        return EXIT_CONFIG;
    }
    std::unique_ptr<rnic::output::output_dir> dir;
    bool dir_failed = false;
    if (rank == 0) {
        try {
            dir = std::make_unique<rnic::output::output_dir>(cfg.outputs.dir);
        } catch (const rnic::output::output_dir_error& e) {
            std::cerr << "rnicsim: " << e.what() << "\n";
            dir_failed = true;
        }
    }
    if (comm.any(dir_failed)) {
        return EXIT_CONFIG;
    }
    rnic::scenario::run_options opts;
    if (rank == 0) {
        opts = staged_options(cfg, *dir);
    } else {
        // The same outputs on, but only rank 0 writes files: a path no rank can create, so
        // that opening it by mistake fails loudly instead of writing beside the run.
        const std::string nowhere = "/dev/null/rnicsim-rank" + std::to_string(rank) + "/";
        opts.waves_vcd = cfg.outputs.waves ? nowhere + "waves.vcd" : "";
        opts.pcap = cfg.outputs.pcap ? nowhere + "wire.pcap" : "";
        opts.trace = cfg.outputs.trace ? nowhere + trace_file(cfg) : "";
    }
    opts.comm = &comm;
    if (size > 1) {
        opts.progress = false;  // ranks run in windows; mpirun would interleave the bars
        // A rank with nothing to do in a window still runs its kernel to the window's end:
        // SystemC's "no activity or clock movement for sc_start()" is normal here, not news.
        sc_core::sc_report_handler::set_actions(sc_core::SC_ID_NO_SC_START_ACTIVITY_,
                                                sc_core::SC_DO_NOTHING);
    }
    rnic::scenario::run_result r;
    std::string summary;
    bool failed = false;
    try {
        r = rnic::scenario::run_scenario(cfg, opts);
        if (rank == 0) {
            summary = rnic::output::write_run_outputs(*dir, cfg, r);
        }
    } catch (const std::exception& e) {
        // A model error, or a collective that failed because a peer is gone: the other ranks
        // cannot finish without this one.
        std::cerr << line << "run aborted: " << e.what() << "\n";
        failed = true;
    }
    if (failed) {
        dir.reset();  // the staging folder goes
        // Exit without MPI_Finalize: mpirun (and srun --kill-on-bad-exit) then end the other
        // ranks with SIGTERM, which each reports (on_terminate). MPI_Abort would have them
        // SIGKILLed under srun, silently.
        std::cerr << std::flush;
        std::_Exit(EXIT_RUN_FAILED);
    }
    // Every rank's part ended: only now do the outputs replace the folder.
    if (comm.any(false)) {
        return EXIT_RUN_FAILED;
    }
    if (rank != 0) {
        return EXIT_OK;  // rank 0 holds the merged result and gives the verdict
    }
    try {
        dir->commit();
    } catch (const rnic::output::output_dir_error& e) {
        std::cerr << "rnicsim: " << e.what() << "\n";
        return EXIT_RUN_FAILED;
    }
    return report(cfg, r, summary);
}

#endif  // RNICSIM_HAVE_MPI

int run_command(const options& o, int argc, char** argv) {
    if (const int tasks = srun_tasks_without_mpi(); tasks > 0) {
        std::cerr << "rnicsim: started by srun as " << tasks
                  << " tasks without an MPI launcher: every task would run the whole scenario; "
                     "use `srun --mpi=pmix` (scripts/slurm/partitioned.sbatch) or one task\n";
        return EXIT_CONFIG;
    }
#ifdef RNICSIM_HAVE_MPI
    if (rnic::distributed::mpi_comm::launched_by_mpi()) {
        return run_rank(o, argc, argv);
    }
    if (o.ranks > 0) {
        return launch_mpirun(o, argc, argv);
    }
#else
    if (o.ranks > 0) {
        std::cerr << "rnicsim: --ranks " << o.ranks
                  << ": this rnicsim was built without MPI (RNICSIM_MPI=OFF); install Open MPI "
                     "(scripts/setup), rebuild (scripts/build -DRNICSIM_MPI=ON), or run without "
                     "--ranks\n";
        return EXIT_CONFIG;
    }
#endif
    return run(o);
}

// `rnicsim report DIR`: report.html again from the files of an earlier run (or a sweep's
// folder: its comparison of the points), e.g. after turning the time series on or with a newer
// rnicsim.
int report_command(const std::string& dir) {
    namespace fs = std::filesystem;
    try {
        const bool sweep = fs::exists(fs::path(dir) / "results.csv");
        const std::string html =
            sweep ? rnic::output::make_sweep_report_html(dir) : rnic::output::make_report_html(dir);
        rnic::sweep::write_file_atomic((fs::path(dir) / "report.html").string(), html);
        std::cout << (fs::path(dir) / "report.html").string() << "\n";
    } catch (const std::exception& e) {
        std::cerr << "rnicsim: report: " << e.what() << "\n";
        return EXIT_CONFIG;
    }
    return EXIT_OK;
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
    run_cmd
        ->add_option("--ranks", o.ranks,
                     "partition the fabric over N MPI ranks (starts mpirun; implied when "
                     "started by mpirun or srun); outputs are the same as one process's")
        ->check(CLI::Range(1, 65536));

    CLI::App* validate_cmd =
        app.add_subcommand("validate", "check a scenario; list every error (exit 2)");
    add_common(validate_cmd, o);

    CLI::App* show_cmd =
        app.add_subcommand("show-config", "print the effective config (defaults filled in)");
    add_common(show_cmd, o);

    CLI::App* signals_cmd = app.add_subcommand(
        "signals", "list the signals of waves.vcd: name, width in bits, meaning");
    add_common(signals_cmd, o);

    std::string report_dir;
    CLI::App* report_cmd = app.add_subcommand(
        "report", "write DIR/report.html again from a run's (or a sweep's) files");
    report_cmd->add_option("dir", report_dir, "the run's or the sweep's output folder")->required();

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
        return run_command(o, argc, argv);
    }
    if (signals_cmd->parsed()) {
        return signals(o);
    }
    if (report_cmd->parsed()) {
        return report_command(report_dir);
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
