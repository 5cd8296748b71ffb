// SPDX-License-Identifier: Apache-2.0
// rnicsim command line (exit codes, nothing written on a config error, validate, show-config)
// and the output folder writers. The CLI tests run the built binary ($RNICSIM_BINARY_DIR).
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/common/cli_run.h"
#include "testbench/output/html_report.h"
#include "testbench/output/output_dir.h"
#include "testbench/output/run_report.h"
#include "testbench/scenario/scenario_config.h"

#include <stdlib.h>
#include <sys/wait.h>

namespace {

using rnic::testing::binary_dir;
using rnic::testing::cli_result;
using rnic::testing::quote;
using rnic::testing::read_file;
using rnic::testing::rnicsim;
using rnic::testing::source_dir;
namespace fs = std::filesystem;
using nlohmann::json;

struct scratch : rnic::testing::scratch_dir {
    scratch()
        : scratch_dir("rnic_cli_test") {}
    std::vector<std::string> entries(const std::string& sub = "") const {
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(dir + (sub.empty() ? "" : "/" + sub))) {
            names.push_back(e.path().filename().string());
        }
        std::sort(names.begin(), names.end());
        return names;
    }
};

std::string quickstart() {
    return source_dir() + "/configs/quickstart.json";
}

const char* INVALID = R"({
  "workload": {"operation": "atomic", "queue_depth": 0},
  "rnic": {"pcie": {"lanes": 12}},
  "colour": "blue"
})";

TEST(Cli, ValidateAcceptsQuickstart) {
    scratch s;
    const cli_result r = rnicsim(s, {"validate", quickstart()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, quickstart() + ": ok\n");
}

TEST(Cli, ValidateListsEveryErrorAndExits2) {
    scratch s;
    const std::string file = s.write("bad.json", INVALID);
    const cli_result r = rnicsim(s, {"validate", file});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "rnicsim: " + file +
                         ": 4 config errors:\n"
                         "  rnic.pcie.lanes: 12 is not one of 1, 2, 4, 8, 16\n"
                         "  workload.operation: \"atomic\" is not one of \"write\", \"send\", "
                         "\"read\", \"mixed\"\n"
                         "  workload.queue_depth: 0 out of range [1, 1048576]\n"
                         "  colour: unknown key\n");
}

TEST(Cli, ValidateAppliesOverrides) {
    scratch s;
    cli_result r = rnicsim(s, {"validate", quickstart(), "--set", "rnic.pcie.lanes=12"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("  rnic.pcie.lanes: 12 is not one of 1, 2, 4, 8, 16\n"), std::string::npos)
        << r.err;
    r = rnicsim(s, {"validate", quickstart(), "--set", "rnic.pcie.lanes=8", "--set",
                    "workload.operation=read"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = rnicsim(s, {"validate", quickstart(), "--set", "no-equals-sign"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--set no-equals-sign: expected PATH=VALUE"), std::string::npos) << r.err;
}

// configs/README.md documents rnic.preset, and --set goes through the same checks as the file:
// a preset named on the command line is read (relative to the scenario's folder, then to the
// working directory) and its keys lie under the scenario's own rnic keys.
TEST(Cli, SetNamesAPreset) {
    scratch s;
    cli_result r = rnicsim(s, {"show-config", quickstart(), "--set",
                               "rnic.preset=" + source_dir() + "/configs/hw/nic200g_gen4x16.json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json shown = json::parse(r.out);
    EXPECT_EQ(shown["rnic"]["context_cache"]["qpc"]["entries"], 2048);  // from the preset
    EXPECT_EQ(shown["rnic"]["clock_mhz"], 500);                         // the scenario's own
    EXPECT_FALSE(shown["rnic"].contains("preset"));
    r = rnicsim(s, {"validate", quickstart(), "--set", "rnic.preset=hw/nic100g_gen3x16.json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;  // relative to the scenario's folder (configs/)
    r = rnicsim(s, {"validate", quickstart(), "--set", "rnic.preset=hw/no_such_nic.json"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("rnic.preset: cannot open \"hw/no_such_nic.json\""), std::string::npos)
        << r.err;
    r = rnicsim(s, {"validate", quickstart(), "--set", "rnic.preset=3"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("rnic.preset: 3 is not a string"), std::string::npos) << r.err;
}

TEST(Cli, ShowConfigPrintsTheEffectiveConfig) {
    scratch s;
    const cli_result r = rnicsim(s, {"show-config", quickstart(), "--set", "workload.qps=2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json shown = json::parse(r.out);
    const auto expected = rnic::scenario::load_scenario(quickstart(), {"workload.qps=2"});
    EXPECT_EQ(shown, expected.effective);
    EXPECT_EQ(shown["workload"]["qps"], 2);
    EXPECT_TRUE(shown["rnic"].contains("limits"));  // defaults filled in
    EXPECT_EQ(r.out, rnic::output::to_file_text(expected.effective));

    const cli_result bad = rnicsim(s, {"show-config", s.write("bad.json", INVALID)});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_EQ(bad.out, "");
}

TEST(Cli, RunWithConfigErrorWritesNothing) {
    scratch s;
    const std::string file = s.write("bad.json", INVALID);
    const std::string out = s.dir + "/results/run1";
    cli_result r = rnicsim(s, {"run", file, "--out", out});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("  colour: unknown key\n"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_FALSE(fs::exists(s.dir + "/results"));

    // A bad override of a good file: same.
    r = rnicsim(s, {"run", quickstart(), "--out", out, "--set", "rnic.pcie.lanes=12"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("rnic.pcie.lanes: 12 is not one of 1, 2, 4, 8, 16"), std::string::npos);
    EXPECT_FALSE(fs::exists(s.dir + "/results"));
    EXPECT_EQ(s.entries(), std::vector<std::string>{"bad.json"});
}

TEST(Cli, RunRefusesAFolderWithForeignFiles) {
    scratch s;
    s.write("notes.txt", "mine");
    const cli_result r = rnicsim(s, {"run", quickstart(), "--out", s.dir});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("holds notes.txt, which rnicsim did not write"), std::string::npos)
        << r.err;
    EXPECT_EQ(read_file(s.dir + "/notes.txt"), "mine");
    EXPECT_EQ(s.entries(), std::vector<std::string>{"notes.txt"});
}

// README: `scripts/plot DIR/flows.csv` writes DIR/flows.png (cc.csv: cc.png; several runs:
// compare.png beside the first). A later run into DIR replaces them with the old run's files
// (they plot the old run); any other file still makes it refuse the folder.
TEST(Cli, RunReplacesTheRunsOwnPlots) {
    scratch s;
    const std::string out = s.dir + "/run";
    const std::vector<std::string> small = {"--set", "workload.messages=4", "--set",
                                            "workload.message_bytes=4096"};
    std::vector<std::string> args = {"run", quickstart(), "--out", out};
    args.insert(args.end(), small.begin(), small.end());
    ASSERT_EQ(rnicsim(s, args).exit_code, 0);
    for (const char* png : {"flows.png", "cc.png", "compare.png"}) {
        s.write(std::string("run/") + png, "png");
    }
    cli_result r = rnicsim(s, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(out + "/stats.json"));
    EXPECT_FALSE(fs::exists(out + "/flows.png"));
    EXPECT_FALSE(fs::exists(out + "/cc.png"));
    EXPECT_FALSE(fs::exists(out + "/compare.png"));
    s.write("run/loss.png", "png");  // a plot named by the user: not ours to delete
    r = rnicsim(s, args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("holds loss.png, which rnicsim did not write"), std::string::npos)
        << r.err;
}

TEST(Cli, UsageErrorsExit2) {
    scratch s;
    EXPECT_EQ(rnicsim(s, {}).exit_code, 2);                                // no subcommand
    EXPECT_EQ(rnicsim(s, {"simulate", quickstart()}).exit_code, 2);        // unknown subcommand
    EXPECT_EQ(rnicsim(s, {"run"}).exit_code, 2);                           // no scenario
    EXPECT_EQ(rnicsim(s, {"run", quickstart(), "--bogus"}).exit_code, 2);  // unknown option
    const cli_result missing = rnicsim(s, {"validate", s.dir + "/absent.json"});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find(s.dir + "/absent.json: cannot open"), std::string::npos)
        << missing.err;
    const cli_result help = rnicsim(s, {"--help"});
    EXPECT_EQ(help.exit_code, 0);
    EXPECT_NE(help.out.find("show-config"), std::string::npos);
}

// --ranks (partitioned runs, README "Partitioned runs"): what is refused before any rank runs.
TEST(CliRanks, RanksBelowOneIsAUsageError) {
    scratch s;
    const cli_result r = rnicsim(s, {"run", quickstart(), "--out", s.dir + "/o", "--ranks", "0"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_FALSE(fs::exists(s.dir + "/o"));
}

#ifdef RNICSIM_HAVE_MPI
TEST(CliRanks, ConfigErrorsPrintedOnceBeforeAnyRankStarts) {
    scratch s;
    const std::string file = s.write("bad.json", INVALID);
    const cli_result r = rnicsim(s, {"run", file, "--out", s.dir + "/o", "--ranks", "3"});
    EXPECT_EQ(r.exit_code, 2);
    const std::string line = "  colour: unknown key\n";
    const size_t first = r.err.find(line);
    ASSERT_NE(first, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(line, first + 1), std::string::npos) << "printed by every rank:\n"
                                                              << r.err;
    EXPECT_EQ(r.err.find("mpirun"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(s.dir + "/o"));

    s.write("notes.txt", "mine");  // a folder it may not replace: refused here too
    const cli_result d = rnicsim(s, {"run", quickstart(), "--out", s.dir, "--ranks", "2"});
    EXPECT_EQ(d.exit_code, 2);
    EXPECT_NE(d.err.find("holds "), std::string::npos) << d.err;
}

TEST(CliRanks, PartitionWithAnotherPartCountIsAConfigError) {
    scratch s;
    // Two parts (node 0 | node 1) of the quickstart's two nodes, run on three ranks.
    const cli_result r = rnicsim(s, {"run", quickstart(), "--out", s.dir + "/o", "--ranks", "3",
                                     "--set", "topology.partition=[[\"node0\"], [\"node1\"]]"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("topology.partition: 2 parts given, but the run has 3 ranks"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(s.dir + "/o"));
}

TEST(CliRanks, RankCountDifferentFromTheLaunchersIsRefused) {
    scratch s;
    const std::string cmd = "mpirun -np 2 --oversubscribe --allow-run-as-root " +
                            quote(binary_dir() + "/rnicsim") + " run " + quote(quickstart()) +
                            " --out " + quote(s.dir + "/o") + " --ranks 3 >" +
                            quote(s.dir + "/.out") + " 2>" + quote(s.dir + "/.err");
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << status;
    const std::string err = read_file(s.dir + "/.err");
    EXPECT_NE(err.find("--ranks 3 but started as 2 MPI ranks"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(s.dir + "/o"));
}
#else
TEST(CliRanks, RefusedInABuildWithoutMpi) {
    scratch s;
    const cli_result r = rnicsim(s, {"run", quickstart(), "--out", s.dir + "/o", "--ranks", "2"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("built without MPI"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(s.dir + "/o"));
}
#endif

TEST(CliRanks, SrunTasksWithoutAnMpiLauncherAreRefused) {
    // What srun --mpi=none -n 2 sets in each task (and no PMI/PMIx variables).
    setenv("SLURM_STEP_NUM_TASKS", "2", 1);
    scratch s;
    const cli_result r = rnicsim(s, {"run", quickstart(), "--out", s.dir + "/o"});
    unsetenv("SLURM_STEP_NUM_TASKS");
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("started by srun as 2 tasks without an MPI launcher"), std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(s.dir + "/o"));
}

// ---------------------------------------------------------------------------------------------
// Output folder and report writers (no simulation)
// ---------------------------------------------------------------------------------------------

TEST(OutputDir, CommitPutsTheFilesInPlaceAtOnce) {
    scratch s;
    const std::string final_dir = s.dir + "/out/run";
    {
        rnic::output::output_dir d(final_dir);
        d.write("stats.json", "{}\n");
        EXPECT_FALSE(fs::exists(final_dir));  // nothing visible before commit
        EXPECT_TRUE(fs::exists(d.staged("stats.json")));
        d.commit();
    }
    EXPECT_EQ(read_file(final_dir + "/stats.json"), "{}\n");
    EXPECT_EQ(s.entries("out"), std::vector<std::string>{"run"});  // no staging left over

    // A second run replaces the first one's files wholesale.
    {
        rnic::output::output_dir d(final_dir);
        d.write("summary.txt", "second\n");
        d.commit();
    }
    EXPECT_FALSE(fs::exists(final_dir + "/stats.json"));
    EXPECT_EQ(read_file(final_dir + "/summary.txt"), "second\n");
    EXPECT_EQ(s.entries("out"), std::vector<std::string>{"run"});
}

TEST(OutputDir, AbandonedRunLeavesNothing) {
    scratch s;
    const std::string final_dir = s.dir + "/run";
    {
        rnic::output::output_dir d(final_dir);
        d.write("stats.json", "{}\n");
    }  // no commit: a failed run
    EXPECT_FALSE(fs::exists(final_dir));
    EXPECT_TRUE(s.entries().empty());
}

TEST(OutputDir, RefusesFoldersItDidNotWrite) {
    scratch s;
    s.write("data.csv", "x");
    EXPECT_THROW(rnic::output::output_dir d(s.dir), rnic::output::output_dir_error);
    const std::string file = s.write("plain", "x");
    EXPECT_THROW(rnic::output::output_dir d(file), rnic::output::output_dir_error);
    EXPECT_TRUE(rnic::output::output_dir::is_output_file("waves.vcd"));
    EXPECT_FALSE(rnic::output::output_dir::is_output_file("data.csv"));
    // A fabric run's flows.csv, a lockstep divergence and any node's RTL waveform are the
    // simulator's own: running again into the same --out replaces them.
    EXPECT_TRUE(rnic::output::output_dir::is_output_file("flows.csv"));
    EXPECT_TRUE(rnic::output::output_dir::is_output_file("divergence.json"));
    EXPECT_TRUE(rnic::output::output_dir::is_output_file("rtl.node17.fst"));
    EXPECT_FALSE(rnic::output::output_dir::is_output_file("rtl.nodeX.fst"));
}

TEST(RunReport, StatsJsonHasEveryDocumentedKey) {
    rnic::scenario::run_result r;
    r.messages = 10;
    r.bytes = 10 * 4096;
    r.duration_ns = 4000;
    r.goodput_gbps = 81.92;
    r.msg_rate_mpps = 2.5;
    r.latency = {10, 1500.5, 1400, 2900, 3100};
    r.bytes_checked = 40960;
    r.simulated_ns = 12345;
    r.wall_s = 0.5;
    r.packets = 50;
    r.blocks = {{"node0.nic.doorbell", {{"sq_doorbells", 10}}}};
    const json j = rnic::output::make_stats_json(r);
    EXPECT_EQ(j["blocks"]["node0.nic.doorbell"]["sq_doorbells"], 10);
    EXPECT_EQ(j["summary"]["messages"], 10);
    EXPECT_EQ(j["summary"]["bytes"], 40960);
    EXPECT_EQ(j["summary"]["goodput_gbps"], 81.92);
    EXPECT_EQ(j["summary"]["msg_rate_mpps"], 2.5);
    EXPECT_EQ(j["summary"]["latency_ns"]["avg"], 1500.5);
    EXPECT_EQ(j["summary"]["latency_ns"]["p50"], 1400);
    EXPECT_EQ(j["summary"]["latency_ns"]["p99"], 2900);
    EXPECT_EQ(j["summary"]["latency_ns"]["max"], 3100);
    EXPECT_EQ(j["integrity"]["bytes_checked"], 40960);
    EXPECT_EQ(j["integrity"]["mismatches"], 0);
    EXPECT_EQ(j["sim"]["simulated_ns"], 12345);
    EXPECT_EQ(j["sim"]["packets"], 50);
    EXPECT_EQ(j["result"]["passed"], true);
    EXPECT_EQ(j["utilization"], json::object());  // no busy-time counter
    // Utilization: busy_ps / <part>_busy_ps counters over the duration (4000 ns), capped at 1.
    rnic::scenario::run_result busy = r;
    busy.blocks = {{"node0.pcie", {{"up_busy_ps", 2'000'000}, {"down_busy_ps", 9'000'000}}},
                   {"node0.nic.wqe_fetch", {{"busy_ps", 3'000'000}, {"stall_ps", 4'000'000}}},
                   {"node0.nic.doorbell", {{"sq_doorbells", 10}}}};
    const json u = rnic::output::make_stats_json(busy)["utilization"];
    EXPECT_EQ(
        u, (json{{"node0.pcie.up", 0.5}, {"node0.pcie.down", 1.0}, {"node0.nic.wqe_fetch", 0.75}}))
        << u.dump();
    double f = 0;
    EXPECT_EQ(rnic::output::binding_resource(u, &f), "node0.pcie.down");
    EXPECT_EQ(f, 1.0);
    // Nothing that depends on the machine: stats.json is the same bytes on every run.
    EXPECT_FALSE(j["sim"].contains("wall_s"));
    EXPECT_EQ(j.dump().find("wall"), std::string::npos) << j.dump();
    rnic::scenario::run_result slower = r;
    slower.wall_s = 7.0;
    EXPECT_EQ(rnic::output::make_stats_json(slower), j);
    // The simulator's speed is in speed.json.
    const json speed = rnic::output::make_speed_json(r);
    EXPECT_EQ(speed["wall_s"], 0.5);
    EXPECT_EQ(speed["packets"], 50);
    EXPECT_EQ(speed["simulated_ns"], 12345);
    EXPECT_EQ(speed["packets_per_wall_s"], 100.0);
    EXPECT_EQ(speed["simulated_ns_per_wall_s"], 24690.0);
}

// write_run_outputs writes stats.json without copying the blocks' counters into one object and
// report.html without parsing the files it has just written: the files must be the bytes of
// to_file_text(make_stats_json(r)) and of `rnicsim report DIR` (make_report_html(DIR)) all the
// same, also with values that do not survive a file round trip (NaN: written as null).
TEST(RunReport, WrittenFilesAreTheBytesOfTheirFunctions) {
    auto cfg = rnic::scenario::parse_scenario({{"workload", {{"message_bytes", 4096}}}});
    cfg.outputs.report = true;
    rnic::scenario::run_result r;
    r.messages = 3;
    r.duration_ns = 4000;
    r.latency = {3, 1500.5, 1400, 2900, 3100, {1000, 1400, 3100}};
    r.simulated_ns = 12345;
    r.blocks = {{"node0.nic.doorbell", {{"sq_doorbells", 10}, {"drops", 2}}},
                {"node1.nic.tx_engine",
                 {{"busy_ps", 2'000'000}, {"retransmits", 7}, {"empty", json::object()}}},
                {"a.block",
                 {{"note", "line\n  \"blocks\": null"},
                  {"list", {1, -2, 2.5, json::array(), {{"in", {true, nullptr}}}}},
                  {"k\"ey\\\ttab", -3},
                  {"\xc2\xb5s", 4},
                  {"raw", json::binary({1, 2})}}},
                {"z.block", json::array()}};
    r.failures = {"one failure"};
    for (const bool nan : {false, true}) {
        SCOPED_TRACE(nan ? "with a NaN" : "finite");
        if (nan) {
            r.blocks["node0.nic.doorbell"]["drop_ratio"] = std::nan("");  // an error counter's name
        }
        scratch s;
        rnic::output::output_dir d(s.dir + "/run");
        rnic::output::write_run_outputs(d, cfg, r);
        const std::string staged = fs::path(d.staged("stats.json")).parent_path().string();
        EXPECT_EQ(read_file(staged + "/stats.json"),
                  rnic::output::to_file_text(rnic::output::make_stats_json(r)));
        const std::string html = read_file(staged + "/report.html");
        EXPECT_NE(html.find("node*.nic.tx_engine.retransmits"), std::string::npos);
        EXPECT_TRUE(html == rnic::output::make_report_html(staged));
    }
    EXPECT_TRUE(rnic::output::survives_file_round_trip(r.blocks["node1.nic.tx_engine"]));
    EXPECT_FALSE(rnic::output::survives_file_round_trip(r.blocks));
    EXPECT_FALSE(rnic::output::survives_file_round_trip(json::array({1, {{"x", INFINITY}}})));
}

TEST(RunReport, SummaryIsAPerftestTable) {
    const auto cfg = rnic::scenario::parse_scenario(
        {{"workload", {{"operation", "send"}, {"message_bytes", 4096}, {"qps", 2}}}});
    rnic::scenario::run_result r;
    r.messages = 1000;
    r.goodput_gbps = 91.234;
    r.msg_rate_mpps = 2.78;
    r.latency = {1000, 2500, 2400, 4100, 5000};
    r.bytes_checked = 4096000;
    r.wall_s = 2;
    r.packets = 4000;
    std::string s = rnic::output::make_summary(cfg, r);
    EXPECT_NE(s.find("Send BW Test"), std::string::npos) << s;
    EXPECT_NE(s.find(" Number of qps   : 2 "), std::string::npos) << s;
    EXPECT_NE(s.find(" #bytes     #iterations    BW average[Gb/sec]"), std::string::npos) << s;
    EXPECT_NE(s.find(" 4096       1000           91.23                2.780000       2.500"),
              std::string::npos)
        << s;
    EXPECT_NE(s.find("Result          : PASSED"), std::string::npos) << s;
    // No wall-clock figure: summary.txt is the same bytes on every run; the speed line goes to
    // the terminal.
    EXPECT_EQ(s.find("wall"), std::string::npos) << s;
    EXPECT_EQ(rnic::output::make_speed_line(r),
              "rnicsim: simulator speed: 2.000 s wall, 2000 packets/s, 0 simulated ns per wall "
              "second\n");

    r.failures = {"integrity: 3 of 4096000 bytes checked differ from what the sender wrote"};
    s = rnic::output::make_summary(cfg, r);
    EXPECT_NE(s.find("Result          : FAILED\n   integrity: 3 of"), std::string::npos) << s;
}

}  // namespace
