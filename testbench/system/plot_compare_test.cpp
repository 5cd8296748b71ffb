// SPDX-License-Identifier: Apache-2.0
// scripts/plot with several flows.csv: the runs side by side (one panel each, their PFC pauses
// from stats.json in the panel titles) and their percentiles overlaid, written as one PNG; bad
// input (a --label count that does not match, a CSV that is not a flows.csv) exits 2 and
// writes nothing.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/system/outputs_common.h"

namespace {

using namespace rnic::outputs_test;

// A flows.csv of `n` flows of growing sizes with the given slowdown, and a stats.json whose
// links counted `pauses` PFC pauses in all.
void write_run(const scratch& s, const std::string& name, int n, double slowdown, int pauses) {
    fs::create_directories(s.dir + "/" + name);
    std::string csv =
        "flow,src,dst,operation,bytes,messages,start_ns,end_ns,fct_ns,ideal_ns,slowdown,complete\n";
    for (int i = 0; i < n; ++i) {
        const double bytes = 1000.0 * (1 << (i % 14));
        csv += std::to_string(i) + ",1,0,write," + std::to_string(static_cast<long>(bytes)) +
               ",1,0,100,100,50," + std::to_string(slowdown * (1 + i % 3)) + ",1\n";
    }
    csv += "99,2,0,write,4096,1,0,,,50,,0\n";  // an incomplete flow: no slowdown, left out
    std::ofstream(s.dir + "/" + name + "/flows.csv") << csv;
    std::ofstream(s.dir + "/" + name + "/stats.json")
        << "{\"blocks\": {\"link0.dir0\": {\"pfc_pauses\": " << pauses - 1
        << "}, \"link1.dir1\": {\"pfc_pauses\": 1}, \"sw0.port0\": {\"pfc_pauses\": 1000}}}";
}

cli_result plot(const scratch& s, const std::vector<std::string>& args) {
    std::string cmd = "/usr/bin/python3 " + quote(source_dir() + "/scripts/plot");
    for (const auto& a : args) {
        cmd += " " + quote(a);
    }
    return shell(s, cmd);
}

TEST(PlotCompare, SeveralFlowsCsvSideBySide) {
    scratch s;
    write_run(s, "none", 40, 2, 500);
    write_run(s, "dcqcn", 40, 1.5, 70);
    write_run(s, "timely", 40, 1.7, 92);
    const std::string png = s.dir + "/compare.png";
    const cli_result r =
        plot(s, {s.dir + "/none/flows.csv", s.dir + "/dcqcn/flows.csv", s.dir + "/timely/flows.csv",
                 "--label", "none", "--label", "DCQCN", "--label", "TIMELY", "--out", png});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string bytes = read_file(png);
    ASSERT_GT(bytes.size(), 1000u);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_NE(r.out.find(png), std::string::npos);
    // Each run's summary (as in its panel's title): completed flows, p99 slowdown (nearest
    // rank of 40: the 40th smallest, 3 x the base), PFC pauses of the links only.
    EXPECT_NE(r.err.find("none: 40 flows, p99 6, 500 PFC pauses"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("DCQCN: 40 flows, p99 4.5, 70 PFC pauses"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("TIMELY: 40 flows, p99 5.1, 92 PFC pauses"), std::string::npos) << r.err;
    // Default output: compare.png beside the first CSV.
    const cli_result d = plot(s, {s.dir + "/none/flows.csv", s.dir + "/dcqcn/flows.csv"});
    ASSERT_EQ(d.exit_code, 0) << d.err;
    EXPECT_TRUE(fs::exists(s.dir + "/none/compare.png"));
}

TEST(PlotCompare, BadInputExits2AndWritesNothing) {
    scratch s;
    write_run(s, "a", 10, 2, 5);
    write_run(s, "b", 10, 2, 5);
    const std::string png = s.dir + "/bad.png";
    const cli_result labels = plot(
        s, {s.dir + "/a/flows.csv", s.dir + "/b/flows.csv", "--label", "only one", "--out", png});
    EXPECT_EQ(labels.exit_code, 2);
    EXPECT_NE(labels.err.find("1 --label for 2 flows.csv"), std::string::npos) << labels.err;
    fs::create_directories(s.dir + "/c");
    std::ofstream(s.dir + "/c/flows.csv") << "x,y\n1,2\n";
    const cli_result notflows =
        plot(s, {s.dir + "/a/flows.csv", s.dir + "/c/flows.csv", "--out", png});
    EXPECT_EQ(notflows.exit_code, 2);
    EXPECT_NE(notflows.err.find("not a flows.csv"), std::string::npos) << notflows.err;
    EXPECT_FALSE(fs::exists(png));
}

}  // namespace
