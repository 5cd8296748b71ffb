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

#include "testbench/common/cli_run.h"
#include "testbench/common/scratch_dir.h"

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

// A temporary folder (testbench/common/scratch_dir.h), named for these tests.
struct scratch : rnic::testing::scratch_dir {
    scratch()
        : scratch_dir("rnic_run_test") {}
};

std::string quickstart() {
    return source_dir() + "/configs/quickstart.json";
}

// A short quickstart: same topology and NIC, fewer messages.
std::vector<std::string> short_run(const std::string& out) {
    return {"run", quickstart(), "--out", out, "--set", "workload.messages=40"};
}

// Every frame on the wire is lost: two WRITEs that never arrive, given up at the time limit.
std::vector<std::string> all_lost_run(const std::string& out, const std::string& limit_ms) {
    std::vector<std::string> args = short_run(out);
    args.insert(args.end(), {"--set", "topology.link.faults.drop=1.0", "--set",
                             "workload.messages=2", "--set", "workload.time_limit_ms=" + limit_ms});
    return args;
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
    EXPECT_EQ(files_in(out), (std::vector<std::string>{"config.json", "report.html", "speed.json",
                                                       "stats.json", "summary.txt"}));

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
    // Utilization: the wire toward node 1 was busy at least as long as the payload alone takes
    // at 100 Gb/s; summary.txt's "Bound by" names the most utilized resource.
    const json& u = stats["utilization"];
    ASSERT_TRUE(u.contains("link.dir0")) << u.dump();
    EXPECT_GE(u["link.dir0"].get<double>(),
              stats["summary"]["goodput_gbps"].get<double>() / 100.0 * 0.999);
    EXPECT_LE(u["link.dir0"].get<double>(), 1.0);
    EXPECT_TRUE(u.contains("node0.nic.wqe_fetch")) << u.dump();
    std::string most;
    double most_f = -1;
    for (const auto& [k, v] : u.items()) {
        if (v.get<double>() > most_f) {
            most_f = v.get<double>();
            most = k;
        }
    }
    EXPECT_NE(r.out.find("Bound by        : "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(most), std::string::npos) << "Bound by should name " << most << "\n"
                                                   << r.out;
    EXPECT_GT(stats["sim"]["simulated_ns"].get<uint64_t>(), 0u);
    EXPECT_GE(stats["sim"]["packets"].get<uint64_t>(), 40u * 64);  // 64 KiB in 1 KiB packets
    // The simulator's speed: in speed.json and on stderr, not in stats.json or summary.txt.
    EXPECT_FALSE(stats["sim"].contains("wall_s"));
    const json speed = json::parse(read_file(out + "/speed.json"));
    EXPECT_GT(speed["wall_s"].get<double>(), 0.0);
    EXPECT_EQ(speed["packets"], stats["sim"]["packets"]);
    EXPECT_EQ(speed["simulated_ns"], stats["sim"]["simulated_ns"]);
    EXPECT_GT(speed["packets_per_wall_s"].get<double>(), 0.0);
    EXPECT_GT(speed["simulated_ns_per_wall_s"].get<double>(), 0.0);
    EXPECT_NE(r.err.find("rnicsim: simulator speed: "), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("wall"), std::string::npos) << r.out;
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

// Every output on, two QPs, written twice into two folders: every file but speed.json is the
// same bytes (DESIGN.md 4: same config and seed, same outputs).
// Doorbell batching (workload.doorbell_batch): the requests posted to a QP in one go share a
// doorbell (NDK_OP_FLAG_DEFER on all but the last), so the NIC decodes fewer SQ doorbells than
// requests; without it one doorbell per request. Every request still completes intact.
TEST(RunOutputs, DoorbellBatchSharesDoorbells) {
    scratch s;
    uint64_t doorbells[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
        const std::string out = s.dir + "/out" + std::to_string(k);
        const cli_result r =
            rnicsim(s, {"run", quickstart(), "--out", out, "--set", "workload.messages=64", "--set",
                        "workload.message_bytes=64", "--set",
                        k == 0 ? "workload.doorbell_batch=1" : "workload.doorbell_batch=8"});
        ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
        const json stats = json::parse(read_file(out + "/stats.json"));
        EXPECT_EQ(stats["summary"]["messages"], 64);
        EXPECT_EQ(stats["integrity"]["mismatches"], 0);
        doorbells[k] = stats["blocks"]["node0.nic.doorbell"]["sq_doorbells"].get<uint64_t>();
    }
    EXPECT_EQ(doorbells[0], 64u);
    // The first fill posts queue_depth (16) requests: 2 doorbells instead of 16.
    EXPECT_LE(doorbells[1], 64u - 14u);
    EXPECT_GE(doorbells[1], 8u);
}

TEST(RunOutputs, SameConfigAndSeedGiveTheSameOutputs) {
    scratch s;
    auto args = [&](const std::string& out) {
        return std::vector<std::string>{
            "run",   quickstart(),           "--out", out,
            "--set", "workload.messages=30", "--set", "workload.qps=2",
            "--set", "outputs.pcap=true",    "--set", "outputs.trace=true",
            "--set", "outputs.waves=true",   "--set", "outputs.timeseries.interval_ns=500"};
    };
    const std::string a = s.dir + "/a";
    const std::string b = s.dir + "/b";
    const cli_result ra = rnicsim(s, args(a));
    ASSERT_EQ(ra.exit_code, 0) << ra.err;
    const cli_result rb = rnicsim(s, args(b));
    ASSERT_EQ(rb.exit_code, 0) << rb.err;
    EXPECT_EQ(ra.out, rb.out);  // the summary printed

    const std::vector<std::string> names = files_in(a);
    EXPECT_EQ(names, (std::vector<std::string>{"config.json", "report.html", "speed.json",
                                               "stats.json", "summary.txt", "timeseries.csv",
                                               "trace.json", "waves.vcd", "wire.pcap"}));
    EXPECT_EQ(files_in(b), names);
    for (const std::string& n : names) {
        if (n == "speed.json") {
            continue;  // wall-clock figures
        }
        const std::string x = read_file(a + "/" + n);
        const std::string y = read_file(b + "/" + n);
        EXPECT_GT(x.size(), 0u) << n;
        // config.json names its own output folder; everything else must match byte for byte.
        if (n == "config.json") {
            json cx = json::parse(x);
            json cy = json::parse(y);
            EXPECT_EQ(cx["outputs"]["dir"], a);
            cx["outputs"]["dir"] = cy["outputs"]["dir"];
            EXPECT_EQ(cx, cy);
            continue;
        }
        EXPECT_TRUE(x == y) << n << " differs between two runs of the same config and seed";
    }
    // Running again into the same folder replaces it with the same bytes.
    const std::string stats1 = read_file(a + "/stats.json");
    ASSERT_EQ(rnicsim(s, args(a)).exit_code, 0);
    EXPECT_TRUE(read_file(a + "/stats.json") == stats1);

    // A different seed moves different bytes but the same amount.
    const std::string other = s.dir + "/other";
    std::vector<std::string> seeded = args(other);
    seeded.insert(seeded.end(), {"--set", "workload.seed=99"});
    ASSERT_EQ(rnicsim(s, seeded).exit_code, 0);
    const json c = json::parse(read_file(other + "/stats.json"));
    const json s1 = json::parse(stats1);
    EXPECT_EQ(c["integrity"]["bytes_checked"], s1["integrity"]["bytes_checked"]);
    EXPECT_FALSE(read_file(other + "/wire.pcap") == read_file(a + "/wire.pcap"));
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
    const cli_result r = rnicsim(s, all_lost_run(out, "50"));
    EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
    EXPECT_NE(r.err.find("rnicsim: run failed:"), std::string::npos) << r.err;
    // The finished run's files are kept and say why it failed.
    ASSERT_TRUE(fs::exists(out + "/stats.json"));
    const json stats = json::parse(read_file(out + "/stats.json"));
    EXPECT_EQ(stats["result"]["passed"], false);
    EXPECT_FALSE(stats["result"]["failures"].empty());
    EXPECT_NE(read_file(out + "/summary.txt").find("Result          : FAILED"), std::string::npos);
}

// A run cut by its time limit ends at the limit, as a partitioned run does (testbench/scenario
// runner.cpp), not at whichever event came last before it: here the sender's ACK timer (67 ms)
// is still armed at 1 ms, every frame having been lost.
TEST(RunOutputs, ARunCutByItsTimeLimitEndsAtTheLimit) {
    scratch s;
    const std::string out = s.dir + "/out";
    const cli_result r = rnicsim(s, all_lost_run(out, "1"));
    EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
    const json stats = json::parse(read_file(out + "/stats.json"));
    EXPECT_EQ(stats["sim"]["simulated_ns"], 1000000);
}

}  // namespace
