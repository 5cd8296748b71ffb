// SPDX-License-Identifier: Apache-2.0
// `rnicsim run` end to end through the built binary ($RNICSIM_BINARY_DIR): the output folder,
// determinism (same config, same outputs), waves on request, and exit 1 on a failed run.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/output/run_report.h"

#include <stdlib.h>
#include <sys/wait.h>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// $RNICSIM_SOURCE_DIR / $RNICSIM_BINARY_DIR as ctest sets them; by hand, the tree this file is
// in and the folder of this test executable (where rnicsim is built too).
std::string source_dir() {
    const char* d = std::getenv("RNICSIM_SOURCE_DIR");
    return d != nullptr
               ? d
               : std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().string();
}
std::string binary_dir() {
    const char* d = std::getenv("RNICSIM_BINARY_DIR");
    return d != nullptr ? d
                        : std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) {
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return q + "'";
}

struct scratch {
    std::string dir;
    scratch() {
        std::string t = (fs::temp_directory_path() / "rnic_run_test_XXXXXX").string();
        dir = mkdtemp(t.data());
    }
    ~scratch() { fs::remove_all(dir); }
};

struct cli_result {
    int exit_code = -1;
    std::string out;
    std::string err;
};

cli_result rnicsim(const scratch& s, const std::vector<std::string>& args) {
    const std::string bin = binary_dir() + "/rnicsim";
    EXPECT_TRUE(fs::exists(bin)) << bin << " is not built (ninja rnicsim)";
    std::string cmd = quote(bin);
    for (const auto& a : args) {
        cmd += " " + quote(a);
    }
    cmd += " >" + quote(s.dir + "/.stdout") + " 2>" + quote(s.dir + "/.stderr");
    const int status = std::system(cmd.c_str());
    cli_result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(s.dir + "/.stdout");
    r.err = read_file(s.dir + "/.stderr");
    return r;
}

std::string quickstart() {
    return source_dir() + "/configs/quickstart.json";
}

// A short quickstart: same topology and NIC, fewer messages.
std::vector<std::string> short_run(const std::string& out) {
    return {"run", quickstart(), "--out", out, "--set", "workload.messages=40"};
}

std::vector<std::string> files_in(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) {
        names.push_back(e.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

TEST(RunOutputs, RunWritesStatsSummaryAndConfig) {
    scratch s;
    const std::string out = s.dir + "/out";
    const cli_result r = rnicsim(s, short_run(out));
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_EQ(files_in(out),
              (std::vector<std::string>{"config.json", "stats.json", "summary.txt"}));

    // summary.txt is what was printed.
    EXPECT_EQ(read_file(out + "/summary.txt"), r.out);
    EXPECT_NE(r.out.find("RDMA_Write BW Test"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Result          : PASSED"), std::string::npos) << r.out;

    const json stats = json::parse(read_file(out + "/stats.json"));
    EXPECT_EQ(stats["summary"]["messages"], 40);
    EXPECT_EQ(stats["summary"]["bytes"], 40 * 65536);
    EXPECT_GT(stats["summary"]["goodput_gbps"].get<double>(), 0.0);
    EXPECT_LE(stats["summary"]["goodput_gbps"].get<double>(), 100.0);  // the link's line rate
    EXPECT_GT(stats["summary"]["msg_rate_mpps"].get<double>(), 0.0);
    for (const char* k : {"avg", "p50", "p99", "max"}) {
        EXPECT_GT(stats["summary"]["latency_ns"][k].get<double>(), 0.0) << k;
    }
    EXPECT_EQ(stats["integrity"]["bytes_checked"], 40 * 65536);
    EXPECT_EQ(stats["integrity"]["mismatches"], 0);
    EXPECT_GT(stats["sim"]["simulated_ns"].get<uint64_t>(), 0u);
    EXPECT_GT(stats["sim"]["wall_s"].get<double>(), 0.0);
    EXPECT_GE(stats["sim"]["packets"].get<uint64_t>(), 40u * 64);  // 64 KiB in 1 KiB packets
    EXPECT_GT(stats["sim"]["packets_per_wall_s"].get<double>(), 0.0);
    // Block counters under their hierarchical module names.
    EXPECT_TRUE(stats["blocks"].contains("link.dir0")) << stats["blocks"].dump();
    EXPECT_TRUE(stats["blocks"].contains("node0.memory"));
    EXPECT_TRUE(stats["blocks"].contains("workload.node0"));
    EXPECT_EQ(stats["blocks"]["workload.node0"]["write_completions"], 40);

    // config.json is the effective config show-config prints for the same arguments.
    const cli_result shown =
        rnicsim(s, {"show-config", quickstart(), "--set", "workload.messages=40", "--set",
                    "outputs.dir=" + json(out).dump()});
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_EQ(read_file(out + "/config.json"), shown.out);
    EXPECT_EQ(json::parse(shown.out)["outputs"]["dir"], out);
}

TEST(RunOutputs, SameConfigAndSeedGiveTheSameOutputs) {
    scratch s;
    const std::string out = s.dir + "/out";
    const std::vector<std::string> args = {"run",   quickstart(),    "--out",
                                           out,     "--set",         "workload.messages=30",
                                           "--set", "workload.qps=2"};
    ASSERT_EQ(rnicsim(s, args).exit_code, 0);
    const std::string stats1 = read_file(out + "/stats.json");
    const std::string summary1 = read_file(out + "/summary.txt");
    const std::string config1 = read_file(out + "/config.json");
    ASSERT_EQ(rnicsim(s, args).exit_code, 0);  // replaces the first run's folder
    const std::string stats2 = read_file(out + "/stats.json");
    const std::string summary2 = read_file(out + "/summary.txt");

    const json a = rnic::output::without_wall_fields(json::parse(stats1));
    const json b = rnic::output::without_wall_fields(json::parse(stats2));
    EXPECT_EQ(a.dump(2), b.dump(2));
    EXPECT_EQ(config1, read_file(out + "/config.json"));
    // summary.txt: all but the simulator-speed line.
    auto body = [](const std::string& t) { return t.substr(0, t.rfind(" Simulator speed")); };
    EXPECT_EQ(body(summary1), body(summary2));
    EXPECT_NE(body(summary1).find("Integrity"), std::string::npos);

    // A different seed moves different bytes but the same amount.
    const std::string other = s.dir + "/other";
    std::vector<std::string> seeded = args;
    seeded[3] = other;
    seeded.insert(seeded.end(), {"--set", "workload.seed=99"});
    ASSERT_EQ(rnicsim(s, seeded).exit_code, 0);
    const json c = json::parse(read_file(other + "/stats.json"));
    EXPECT_EQ(c["integrity"]["bytes_checked"], a["integrity"]["bytes_checked"]);
}

TEST(RunOutputs, WavesOnlyWhenRequested) {
    scratch s;
    const std::string out = s.dir + "/out";
    std::vector<std::string> args = short_run(out);
    args.insert(args.end(), {"--set", "outputs.waves=true", "--set", "workload.messages=4"});
    const cli_result r = rnicsim(s, args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(fs::exists(out + "/waves.vcd"));
    const std::string vcd = read_file(out + "/waves.vcd");
    EXPECT_NE(vcd.find("$enddefinitions"), std::string::npos);
    EXPECT_NE(vcd.find("$var"), std::string::npos);
    EXPECT_NE(vcd.find("outstanding"), std::string::npos);  // the workload traces itself too
    EXPECT_NE(vcd.find("\n#"), std::string::npos);          // value changes over time
    EXPECT_EQ(json::parse(read_file(out + "/config.json"))["outputs"]["waves"], true);
}

TEST(RunOutputs, FailedRunExits1) {
    scratch s;
    const std::string out = s.dir + "/out";
    // Every frame on the wire is lost: the data never arrives, the run cannot pass.
    std::vector<std::string> args = short_run(out);
    args.insert(args.end(), {"--set", "topology.link.faults.drop=1.0", "--set",
                             "workload.messages=2", "--set", "workload.time_limit_ms=50"});
    const cli_result r = rnicsim(s, args);
    EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
    EXPECT_NE(r.err.find("rnicsim: run failed:"), std::string::npos) << r.err;
    // The finished run's files are kept and say why it failed.
    ASSERT_TRUE(fs::exists(out + "/stats.json"));
    const json stats = json::parse(read_file(out + "/stats.json"));
    EXPECT_EQ(stats["result"]["passed"], false);
    EXPECT_FALSE(stats["result"]["failures"].empty());
    EXPECT_NE(read_file(out + "/summary.txt").find("Result          : FAILED"), std::string::npos);
}

}  // namespace
