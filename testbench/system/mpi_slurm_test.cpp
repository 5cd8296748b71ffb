// SPDX-License-Identifier: Apache-2.0
// Partitioned runs on a real one-node Slurm cluster started here (testbench/common/
// local_slurm.h; label slurm): scripts/slurm/partitioned.sbatch (srun --mpi=pmix) against the
// single process, and srun without an MPI launcher refused. Skipped (with the reason) where
// Slurm cannot start, or where rnicsim was built without MPI.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/common/local_slurm.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace rnic::test_slurm;

// The fabric incast, cut down, with the wire capture on.
const char* const SCENARIO_SETS =
    " --set workload.messages=8 --set outputs.pcap=true --set outputs.trace=true";

std::string scenario() {
    return quote(source_dir() + "/configs/fabric/incast_8to1.json");
}

TEST(MpiSlurmCluster, BatchScriptRunsAPartitionedRunIdenticalToOneProcess) {
#ifndef RNICSIM_HAVE_MPI
    GTEST_SKIP() << "rnicsim built without MPI (RNICSIM_MPI=OFF)";
#endif
    local_slurm cluster;
    if (!cluster.unavailable.empty()) {
        GTEST_SKIP() << "Slurm cluster not available: " << cluster.unavailable;
    }
    const std::string rnicsim = binary_dir() + "/rnicsim";
    const std::string work = cluster.dir + "/work";
    fs::create_directories(work);

    const cmd_result single = shell(work, "cd " + quote(work) + " && " + quote(rnicsim) + " run " +
                                              scenario() + " --out single" + SCENARIO_SETS);
    ASSERT_EQ(single.exit_code, 0) << single.err;

    // Two tasks on the cluster's one node (2 CPUs): two ranks started by srun through PMIx.
    const cmd_result job = shell(
        work, "cd " + quote(work) + " && RNICSIM=" + quote(rnicsim) + " sbatch --wait --ntasks=2 " +
                  quote(source_dir() + "/scripts/slurm/partitioned.sbatch") + " " + scenario() +
                  " --out part" + SCENARIO_SETS);
    std::string job_log = "sbatch: " + job.out + job.err + "\nin " + work + ":";
    for (const auto& e : fs::directory_iterator(work)) {
        job_log += " " + e.path().filename().string();
    }
    job_log += "\n";
    for (const auto& e : fs::directory_iterator(work)) {
        if (e.path().filename().string().rfind("rnicsim-partitioned-", 0) == 0) {
            job_log += read_file(e.path());
        }
    }
    ASSERT_EQ(job.exit_code, 0) << job.err << job_log << cluster.logs();
    for (const char* f : {"stats.json", "flows.csv", "wire.pcap", "summary.txt", "trace.json"}) {
        SCOPED_TRACE(f);
        ASSERT_TRUE(fs::exists(fs::path(work) / "part" / f)) << job_log;
        EXPECT_TRUE(read_file(fs::path(work) / "part" / f) ==
                    read_file(fs::path(work) / "single" / f))
            << f << " of the 2-rank Slurm run differs from the single process's";
    }
    const json speed = json::parse(read_file(fs::path(work) / "part" / "speed.json"));
    ASSERT_TRUE(speed.contains("ranks")) << speed.dump();
    ASSERT_EQ(speed["ranks"].size(), 2u);
    EXPECT_EQ(speed["ranks"][1]["rank"], 1);
}

TEST(MpiSlurmCluster, SrunWithoutAnMpiLauncherIsRefused) {
    local_slurm cluster;
    if (!cluster.unavailable.empty()) {
        GTEST_SKIP() << "Slurm cluster not available: " << cluster.unavailable;
    }
    const std::string rnicsim = binary_dir() + "/rnicsim";
    const std::string work = cluster.dir + "/work";
    fs::create_directories(work);
    // Two tasks that are not MPI ranks would each run the whole scenario into one folder.
    const cmd_result r =
        shell(work, "cd " + quote(work) + " && srun --mpi=none --ntasks=2 " + quote(rnicsim) +
                        " run " + scenario() + " --out twice" + SCENARIO_SETS);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("started by srun as 2 tasks without an MPI launcher"), std::string::npos)
        << r.err << r.out;
    EXPECT_FALSE(fs::exists(fs::path(work) / "twice"));
}

}  // namespace
