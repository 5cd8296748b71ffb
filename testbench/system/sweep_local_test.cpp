// SPDX-License-Identifier: Apache-2.0
// `rnicsim sweep` end to end on this machine, with the real simulator: results.csv against the
// points' stats.json, a failing point among good ones, resume, invalid sweep files, collect,
// a single point, the example sweeps of configs/sweeps/, and scripts/plot on the results.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/common/cli_run.h"
#include "testbench/common/scratch_dir.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using rnic::testing::binary_dir;
using rnic::testing::cli_result;
using rnic::testing::quote;
using rnic::testing::read_file;
using rnic::testing::shell;
using rnic::testing::source_dir;
using cmd_result = cli_result;

// A temporary folder (testbench/common/scratch_dir.h), named for these tests.
struct scratch : rnic::testing::scratch_dir {
    scratch()
        : scratch_dir("rnic_sweep_sys") {}
};

// `program args...` with stdin closed (a sweep's sbatch or srun must not wait on the terminal).
cmd_result run_cmd(const scratch& s, const std::string& program,
                   const std::vector<std::string>& args) {
    std::string cmd = quote(program);
    for (const auto& a : args) {
        cmd += " " + quote(a);
    }
    return shell(s, cmd + " </dev/null");
}

cmd_result rnicsim(const scratch& s, const std::vector<std::string>& args) {
    const std::string bin = binary_dir() + "/rnicsim";
    EXPECT_TRUE(fs::exists(bin)) << bin << " is not built (ninja rnicsim)";
    return run_cmd(s, bin, args);
}

// results.csv (no line breaks inside fields) as one column -> cell map per row.
std::vector<std::map<std::string, std::string>> parse_csv(const std::string& text) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> row;
        std::string field;
        bool quoted = false;
        for (size_t i = 0; i < line.size(); ++i) {
            const char c = line[i];
            if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                field += '"';
                ++i;
            } else if (c == '"') {
                quoted = !quoted;
            } else if (c == ',' && !quoted) {
                row.push_back(field);
                field.clear();
            } else {
                field += c;
            }
        }
        row.push_back(field);
        rows.push_back(row);
    }
    std::vector<std::map<std::string, std::string>> out;
    for (size_t r = 1; r < rows.size(); ++r) {
        std::map<std::string, std::string> m;
        for (size_t c = 0; c < rows[0].size() && c < rows[r].size(); ++c) {
            m[rows[0][c]] = rows[r][c];
        }
        out.push_back(m);
    }
    return out;
}

std::vector<std::map<std::string, std::string>> read_csv(const fs::path& file) {
    return parse_csv(read_file(file));
}

// The metric columns of results.csv and where they come from in stats.json (wall_s: in
// speed.json, the run's one machine-dependent file).
const std::vector<std::pair<std::string, std::string>> METRICS = {
    {"messages", "/summary/messages"},
    {"bytes", "/summary/bytes"},
    {"goodput_gbps", "/summary/goodput_gbps"},
    {"msg_rate_mpps", "/summary/msg_rate_mpps"},
    {"latency_avg_ns", "/summary/latency_ns/avg"},
    {"latency_p50_ns", "/summary/latency_ns/p50"},
    {"latency_p99_ns", "/summary/latency_ns/p99"},
    {"latency_max_ns", "/summary/latency_ns/max"},
    {"integrity_bytes_checked", "/integrity/bytes_checked"},
    {"integrity_mismatches", "/integrity/mismatches"},
    {"simulated_ns", "/sim/simulated_ns"},
    {"wall_s", "speed.json/wall_s"},
    {"packets", "/sim/packets"},
};

void expect_row_matches_stats(const std::map<std::string, std::string>& row,
                              const fs::path& point_dir) {
    const json stats = json::parse(read_file(point_dir / "stats.json"));
    const json speed = json::parse(read_file(point_dir / "speed.json"));
    for (const auto& [column, pointer] : METRICS) {
        SCOPED_TRACE(column);
        ASSERT_TRUE(row.count(column));
        const bool in_speed = pointer.rfind("speed.json", 0) == 0;
        const json& from = in_speed ? speed : stats;
        const std::string p = in_speed ? pointer.substr(10) : pointer;
        EXPECT_EQ(json::parse(row.at(column)), from.at(json::json_pointer(p)));
    }
}

// A small sweep of the quickstart scenario: a few dozen messages per point.
std::string small_sweep(const scratch& s, const std::string& parameters,
                        const std::string& name = "sweep.json") {
    return s.write(name, R"({
      "description": "system test sweep",
      "base": ")" + source_dir() +
                             R"(/configs/quickstart.json",
      "set": {"workload.messages": 48},
      "parameters": )" + parameters +
                             "}");
}

struct file_stamp {
    ino_t inode = 0;
    int64_t mtime_ns = 0;
    bool operator==(const file_stamp& o) const {
        return inode == o.inode && mtime_ns == o.mtime_ns;
    }
};
file_stamp stamp(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(stat(p.c_str(), &st), 0) << p;
    return {st.st_ino, int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

TEST(SweepLocal, RunsTheGridAndResultsEqualTheStats) {
    scratch s;
    const std::string sweep = small_sweep(s, R"([
        {"path": "workload.message_bytes", "values": [1024, 8192]},
        {"path": "workload.operation", "values": ["write", "read"]}])");
    const cmd_result r = rnicsim(s, {"sweep", sweep, "--out", s.path("out"), "--jobs", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("4 ok, 0 failed"), std::string::npos) << r.err;

    const auto rows = read_csv(s.path("out/results.csv"));
    ASSERT_EQ(rows.size(), 4u);
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"1024", "write"}, {"1024", "read"}, {"8192", "write"}, {"8192", "read"}};
    for (size_t i = 0; i < rows.size(); ++i) {
        SCOPED_TRACE(i);
        const fs::path dir = s.path("out/points/000" + std::to_string(i));
        EXPECT_EQ(rows[i].at("point"), "000" + std::to_string(i));
        EXPECT_EQ(rows[i].at("workload.message_bytes"), expected[i].first);
        EXPECT_EQ(rows[i].at("workload.operation"), expected[i].second);
        EXPECT_EQ(rows[i].at("status"), "ok");
        EXPECT_EQ(rows[i].at("error"), "");
        expect_row_matches_stats(rows[i], dir);
        // The point ran the overridden scenario.
        const json cfg = json::parse(read_file(dir / "config.json"));
        EXPECT_EQ(cfg.at("workload").at("message_bytes"), std::stoi(expected[i].first));
        EXPECT_EQ(cfg.at("workload").at("operation"), expected[i].second);
        EXPECT_EQ(cfg.at("workload").at("messages"), 48);
        EXPECT_TRUE(fs::exists(dir / "summary.txt"));
        EXPECT_EQ(json::parse(read_file(dir / "done.json")).at("status"), "ok");
    }
    EXPECT_EQ(json::parse(rows[0].at("messages")), 48);
    EXPECT_EQ(json::parse(rows[0].at("integrity_mismatches")), 0);

    // scripts/plot turns it into a PNG.
    const cmd_result p = run_cmd(
        s, "/usr/bin/python3",
        {source_dir() + "/scripts/plot", s.path("out/results.csv"), "--out", s.path("plot.png")});
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const std::string png = read_file(s.path("plot.png"));
    ASSERT_GT(png.size(), 1000u);
    EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_NE(p.err.find("2 lines per panel"), std::string::npos) << p.err;  // one per operation
}

TEST(SweepLocal, AFailingPointDoesNotStopTheOthers) {
    scratch s;
    // The middle point cannot finish within its simulated time limit: rnicsim run exits 1.
    const std::string sweep = small_sweep(s, R"([{"zip": [
        {"path": "workload.message_bytes", "values": [1024, 2048, 4096]},
        {"path": "workload.time_limit_ms", "values": [10000, 0.001, 10000]}]}])");
    const cmd_result r = rnicsim(s, {"sweep", sweep, "--out", s.path("out"), "--jobs", "1"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("0001 workload.message_bytes=2048 workload.time_limit_ms=0.001: FAILED"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("2 ok, 1 failed"), std::string::npos) << r.err;

    const auto rows = read_csv(s.path("out/results.csv"));
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].at("status"), "ok");
    EXPECT_EQ(rows[2].at("status"), "ok");
    expect_row_matches_stats(rows[2], s.path("out/points/0002"));
    EXPECT_EQ(rows[1].at("status"), "failed");
    EXPECT_EQ(rows[1].at("error").rfind("exit 1: ", 0), 0u) << rows[1].at("error");
    EXPECT_NE(rows[1].at("error").find("time limit"), std::string::npos) << rows[1].at("error");
    // The failed run still wrote its stats: they are in the row.
    expect_row_matches_stats(rows[1], s.path("out/points/0001"));
}

TEST(SweepLocal, ResumeRunsOnlyWhatIsNotFinished) {
    scratch s;
    const std::string sweep = small_sweep(s, R"([
        {"path": "workload.message_bytes", "values": [512, 1024, 2048]}])");
    ASSERT_EQ(rnicsim(s, {"sweep", sweep, "--out", s.path("out")}).exit_code, 0);
    const std::string first_csv = read_file(s.path("out/results.csv"));
    const file_stamp p0 = stamp(s.path("out/points/0000/stats.json"));
    const file_stamp p2 = stamp(s.path("out/points/0002/done.json"));

    // As if the sweep had been killed while point 1 ran.
    fs::remove_all(s.path("out/points/0001"));
    fs::remove(s.path("out/results.csv"));
    const cmd_result r = rnicsim(s, {"sweep", sweep, "--out", s.path("out")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("3 points, 2 already finished; running 1"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("[1/1] 0001"), std::string::npos) << r.err;
    EXPECT_TRUE(stamp(s.path("out/points/0000/stats.json")) == p0);  // not rerun
    EXPECT_TRUE(stamp(s.path("out/points/0002/done.json")) == p2);
    EXPECT_TRUE(fs::exists(s.path("out/points/0001/stats.json")));
    // The same rows as the uninterrupted sweep (same config, same seed), wall time aside.
    auto before = parse_csv(first_csv);
    auto after = read_csv(s.path("out/results.csv"));
    ASSERT_EQ(after.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(after[i].at("status"), "ok");
        before[i].erase("wall_s");
        after[i].erase("wall_s");
        EXPECT_EQ(after[i], before[i]) << "row " << i;
    }
}

TEST(SweepLocal, AnInvalidSweepNamesJsonPathsAndRunsNothing) {
    scratch s;
    const std::string sweep = small_sweep(s, R"([
        {"path": "workload.message_bytes", "values": [1024, -1]},
        {"path": "workload.qps", "values": [1], "colour": "blue"}])");
    const cmd_result r = rnicsim(s, {"sweep", sweep, "--out", s.path("out")});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("  parameters.1.colour: unknown key\n"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(s.path("out")));

    const std::string sweep2 = small_sweep(s, R"([
        {"path": "workload.message_bytes", "values": [1024, -1]}])",
                                           "sweep2.json");
    const cmd_result r2 = rnicsim(s, {"sweep", sweep2, "--out", s.path("out")});
    EXPECT_EQ(r2.exit_code, 2);
    EXPECT_NE(r2.err.find("  parameters.0.values.1: workload.message_bytes: -1 out of range"),
              std::string::npos)
        << r2.err;
    EXPECT_FALSE(fs::exists(s.path("out")));

    const cmd_result r3 = rnicsim(s, {"sweep", s.path("missing.json")});
    EXPECT_EQ(r3.exit_code, 2);
    EXPECT_NE(r3.err.find(s.path("missing.json") + ": cannot open"), std::string::npos) << r3.err;

    // A folder that is not a sweep's is refused.
    s.write("notes.txt", "mine");
    const cmd_result r4 = rnicsim(s, {"sweep", sweep, "--out", s.dir});
    EXPECT_EQ(r4.exit_code, 2);
}

TEST(SweepLocal, CollectAndSinglePoints) {
    scratch s;
    const std::string sweep = small_sweep(s, R"([
        {"path": "workload.operation", "values": ["write", "send", "read"]}])");
    // The Slurm dry run writes the plan and the job-array script without running anything.
    const cmd_result dry = rnicsim(s, {"sweep", sweep, "--out", s.path("out"), "--backend", "slurm",
                                       "--dry-run", "--jobs", "2"});
    ASSERT_EQ(dry.exit_code, 0) << dry.err;
    EXPECT_NE(dry.out.find("#SBATCH --array=0-2%2\n"), std::string::npos) << dry.out;
    EXPECT_NE(dry.out.find(" sweep point "), std::string::npos) << dry.out;
    EXPECT_EQ(read_file(s.path("out/sweep.sbatch")), dry.out);
    EXPECT_FALSE(fs::exists(s.path("out/points/0000")));

    // What an array task runs.
    const cmd_result one = rnicsim(s, {"sweep", "point", s.path("out"), "1"});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_TRUE(fs::exists(s.path("out/points/0001/stats.json")));
    EXPECT_EQ(rnicsim(s, {"sweep", "point", s.path("out"), "3"}).exit_code, 2);

    // collect writes what there is; the points not run make it exit 1.
    const cmd_result c1 = rnicsim(s, {"sweep", "collect", s.path("out")});
    EXPECT_EQ(c1.exit_code, 1);
    EXPECT_NE(c1.err.find("1 ok, 0 failed, 2 not run"), std::string::npos) << c1.err;
    auto rows = read_csv(s.path("out/results.csv"));
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].at("status"), "missing");
    EXPECT_EQ(rows[1].at("status"), "ok");
    expect_row_matches_stats(rows[1], s.path("out/points/0001"));

    // The local sweep finishes the other two; collect then agrees with it.
    const cmd_result r = rnicsim(s, {"sweep", sweep, "--out", s.path("out")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("1 already finished; running 2"), std::string::npos) << r.err;
    const std::string csv = read_file(s.path("out/results.csv"));
    fs::remove(s.path("out/results.csv"));
    EXPECT_EQ(rnicsim(s, {"sweep", "collect", s.path("out")}).exit_code, 0);
    EXPECT_EQ(read_file(s.path("out/results.csv")), csv);

    EXPECT_EQ(rnicsim(s, {"sweep", "collect", s.path("nothing-here")}).exit_code, 2);
}

TEST(SweepLocal, ExampleSweepsAreValid) {
    scratch s;
    size_t count = 0;
    for (const auto& e : fs::directory_iterator(source_dir() + "/configs/sweeps")) {
        if (e.path().extension() != ".json") {
            continue;
        }
        SCOPED_TRACE(e.path().string());
        ++count;
        const cmd_result r =
            rnicsim(s, {"sweep", e.path().string(), "--out", s.path("x"), "--dry-run"});
        EXPECT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.err.find("all valid"), std::string::npos) << r.err;
        EXPECT_GT(std::count(r.out.begin(), r.out.end(), '\n'), 1);
        EXPECT_FALSE(fs::exists(s.path("x")));  // a local dry run writes nothing
    }
    EXPECT_GE(count, 4u);
}

}  // namespace
