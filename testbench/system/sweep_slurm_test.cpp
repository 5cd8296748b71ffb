// SPDX-License-Identifier: Apache-2.0
// `rnicsim sweep --backend slurm` on a real one-node Slurm cluster started here
// (testbench/common/local_slurm.h). Skipped (with the reason) where Slurm cannot start:
// slurm-wlm or munge missing, or not root.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/common/local_slurm.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace rnic::test_slurm;

std::vector<std::map<std::string, std::string>> read_csv(const fs::path& file) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(read_file(file));
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> row;
        std::string field;
        bool quoted = false;
        for (char c : line) {
            if (c == '"') {
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

void expect_rows_match_stats(const fs::path& out) {
    const auto rows = read_csv(out / "results.csv");
    ASSERT_EQ(rows.size(), 3u);
    for (size_t i = 0; i < rows.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(rows[i].at("status"), "ok") << rows[i].at("error");
        const json stats =
            json::parse(read_file(out / "points" / rows[i].at("point") / "stats.json"));
        EXPECT_EQ(json::parse(rows[i].at("goodput_gbps")), stats.at("summary").at("goodput_gbps"));
        EXPECT_EQ(json::parse(rows[i].at("latency_p99_ns")),
                  stats.at("summary").at("latency_ns").at("p99"));
        EXPECT_EQ(json::parse(rows[i].at("packets")), stats.at("sim").at("packets"));
        EXPECT_EQ(json::parse(rows[i].at("messages")), 32);
    }
}

TEST(SweepSlurmCluster, RunsASweepAsAJobArray) {
    local_slurm cluster;
    if (!cluster.unavailable.empty()) {
        GTEST_SKIP() << "Slurm cluster not available: " << cluster.unavailable;
    }
    const std::string rnicsim = binary_dir() + "/rnicsim";
    ASSERT_TRUE(fs::exists(rnicsim)) << rnicsim << " is not built";
    const std::string work = cluster.dir + "/work";
    fs::create_directories(work);
    const std::string sweep = work + "/sweep.json";
    std::ofstream(sweep) << R"({"base": ")" << source_dir() << R"(/configs/quickstart.json",
      "set": {"workload.messages": 32},
      "parameters": [{"path": "workload.operation", "values": ["write", "read", "send"]}]})";
    const fs::path out = work + "/out";

    // --wait: sbatch --wait on the array, then results.csv here.
    const cmd_result r = shell(work, quote(rnicsim) + " sweep " + quote(sweep) + " --out " +
                                         quote(out.string()) + " --backend slurm --wait --jobs 2");
    ASSERT_EQ(r.exit_code, 0) << r.err << cluster.logs();
    EXPECT_NE(r.err.find("3 ok, 0 failed"), std::string::npos) << r.err;
    EXPECT_NE(read_file(out / "sweep.sbatch").find("#SBATCH --array=0-2%2\n"), std::string::npos);
    expect_rows_match_stats(out);
    // Each array task logged into DIR/slurm/.
    size_t task_logs = 0;
    for (const auto& e : fs::directory_iterator(out / "slurm")) {
        task_logs += e.path().extension() == ".out";
    }
    EXPECT_EQ(task_logs, 3u);

    // Resume through the cluster: only the missing point is submitted, and the dependent
    // collect job rewrites results.csv when the array has ended.
    fs::remove_all(out / "points" / "0001");
    fs::remove(out / "results.csv");
    const cmd_result sub = shell(work, quote(rnicsim) + " sweep " + quote(sweep) + " --out " +
                                           quote(out.string()) + " --backend slurm");
    ASSERT_EQ(sub.exit_code, 0) << sub.err << cluster.logs();
    EXPECT_NE(read_file(out / "sweep.sbatch").find("#SBATCH --array=1\n"), std::string::npos);
    const std::string array_job = sub.out.substr(0, sub.out.find('\n'));
    ASSERT_FALSE(array_job.empty()) << sub.err;
    EXPECT_NE(sub.err.find("collect job"), std::string::npos) << sub.err;
    // A job that can only start after the collect job has ended (afterany on everything
    // submitted so far); sbatch --wait returns when it has run.
    const cmd_result wait = shell(work,
                                  "sbatch --wait --dependency=singleton "
                                  "--job-name=rnicsim-sweep-collect --output=/dev/null "
                                  "--wrap=true");
    EXPECT_EQ(wait.exit_code, 0) << wait.err;
    ASSERT_TRUE(fs::exists(out / "results.csv")) << cluster.logs();
    expect_rows_match_stats(out);
}

}  // namespace
