// SPDX-License-Identifier: Apache-2.0
// scripts/plot --reference: published figures drawn beside a sweep's simulated curves. A figure
// with a value of the x parameter is a mark at that x, one without is a line across x, one whose
// other parameters match no point of the sweep is left out (and said); a file without a
// `source` column exits 2.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/system/outputs_common.h"

namespace {

using namespace rnic::outputs_test;

cli_result plot(const scratch& s, const std::vector<std::string>& args) {
    std::string cmd = "/usr/bin/python3 " + quote(source_dir() + "/scripts/plot");
    for (const auto& a : args) {
        cmd += " " + quote(a);
    }
    return shell(s, cmd);
}

// A sweep's results.csv: QPs 1, 4, 16 x WRITE / READ.
void write_results(const scratch& s) {
    std::ofstream(s.dir + "/results.csv")
        << "point,workload.qps,workload.operation,status,msg_rate_mpps,latency_p50_ns,error\n"
           "0000,1,write,ok,10,900,\n0001,1,read,ok,8,1000,\n"
           "0002,4,write,ok,30,950,\n0003,4,read,ok,25,1100,\n"
           "0004,16,write,ok,60,1200,\n0005,16,read,ok,50,1300,\n";
}

TEST(PlotReference, MarksLinesAndLeftOut) {
    scratch s;
    write_results(s);
    std::ofstream(s.dir + "/published.csv")
        << "source,workload.operation,workload.qps,msg_rate_mpps,latency_p50_ns\n"
           "\"Paper A, Fig. 3\",write,4,33,\n"  // a mark at qps 4 on the rate panel
           "\"Vendor B\",,,80,\n"               // a line across x
           "\"Paper C\",atomic,4,5,\n"          // no atomic points in the sweep: left out
           "\"Paper D\",read,16,,1250\n";       // a mark on the latency panel only
    const std::string png = s.dir + "/out.png";
    const cli_result r =
        plot(s, {s.dir + "/results.csv", "--reference", s.dir + "/published.csv", "--out", png});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string bytes = read_file(png);
    ASSERT_GT(bytes.size(), 1000u);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    EXPECT_NE(r.err.find("published msg_rate_mpps 33 at qps=4 (Paper A, Fig. 3)"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("published msg_rate_mpps 80 across qps (Vendor B)"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("published latency_p50_ns 1250 at qps=16 (Paper D)"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find("Paper C)"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("1 reference figure(s)"), std::string::npos) << r.err;
}

TEST(PlotReference, NoSourceColumnExits2) {
    scratch s;
    write_results(s);
    std::ofstream(s.dir + "/published.csv") << "paper,msg_rate_mpps\nA,80\n";
    const std::string png = s.dir + "/out.png";
    const cli_result r =
        plot(s, {s.dir + "/results.csv", "--reference", s.dir + "/published.csv", "--out", png});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("expected a `source` column"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(png));
}

}  // namespace
