// SPDX-License-Identifier: Apache-2.0
// rnicsim's command line around the outputs: the outputs.* keys (validation lists every error,
// a config error writes nothing, show-config shows the defaults), `rnicsim signals`, usage
// errors, and the progress bar (only on a terminal, never with CI=true).
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/output/progress.h"
#include "testbench/system/outputs_common.h"

namespace {

using namespace rnic::outputs_test;
using nlohmann::json;

std::string write_scenario(const scratch& s, const std::string& name, const json& doc) {
    const std::string path = s.dir + "/" + name;
    std::ofstream(path) << doc.dump(2);
    return path;
}

TEST(OutputsCli, ValidateListsEveryOutputsError) {
    scratch s;
    const std::string bad = write_scenario(s, "bad.json",
                                           {{"outputs",
                                             {{"pcap", "yes"},
                                              {"trace", 1},
                                              {"waves_start_ns", -5},
                                              {"colour", true},
                                              {"pcap_links", {"link", "link.dir2"}},
                                              {"waves_qps", {2, 0, "3"}}}}});
    const cli_result r = rnicsim(s, {"validate", bad});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("7 config errors"), std::string::npos) << r.err;
    for (const char* path :
         {"outputs.pcap: ", "outputs.trace: ", "outputs.waves_start_ns: ",
          "outputs.colour: unknown key", "outputs.pcap_links.1: \"link.dir2\" is not a link",
          "outputs.waves_qps.1: 0 is not a QPN", "outputs.waves_qps.2: \"3\" is not a QPN"}) {
        EXPECT_NE(r.err.find(std::string("  ") + path), std::string::npos) << path << "\n" << r.err;
    }
    // The window must not be empty.
    const cli_result w =
        rnicsim(s, {"validate", quickstart(), "--set", "outputs.waves_start_ns=500", "--set",
                    "outputs.waves_end_ns=500"});
    EXPECT_EQ(w.exit_code, 2);
    EXPECT_NE(w.err.find("outputs.waves_end_ns: 500 is not after waves_start_ns 500"),
              std::string::npos)
        << w.err;
    const cli_result ok =
        rnicsim(s, {"validate", quickstart(), "--set", "outputs.pcap=true", "--set",
                    "outputs.trace=true", "--set", "outputs.waves_end_ns=1000"});
    EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// --set goes through the same validation as the file: every error, each with its JSON path;
// a malformed override names itself. run, validate and show-config agree.
TEST(OutputsCli, SetErrorsNameTheirJsonPaths) {
    scratch s;
    const std::vector<std::string> sets = {
        "--set", "workload.bogus=1",           "--set", "rnic.pcie.lanes=3",
        "--set", "workload.message_bytes=big", "--set", "outputs.pcap_links=\"link\""};
    for (const char* cmd : {"validate", "show-config", "run"}) {
        SCOPED_TRACE(cmd);
        std::vector<std::string> args = {cmd, quickstart()};
        args.insert(args.end(), sets.begin(), sets.end());
        if (std::string(cmd) == "run") {
            args.insert(args.end(), {"--out", s.dir + "/o"});
        }
        const cli_result r = rnicsim(s, args);
        EXPECT_EQ(r.exit_code, 2);
        EXPECT_EQ(r.out, "");
        EXPECT_NE(r.err.find(": 4 config errors:\n"), std::string::npos) << r.err;
        for (const char* line :
             {"  rnic.pcie.lanes: 3 is not one of 1, 2, 4, 8, 16\n",
              "  workload.message_bytes: \"big\" is not an integer\n",
              "  workload.bogus: unknown key\n",
              "  outputs.pcap_links: \"link\" is not an array of link names\n"}) {
            EXPECT_NE(r.err.find(line), std::string::npos) << line << r.err;
        }
        EXPECT_FALSE(fs::exists(s.dir + "/o"));
    }
    // Overrides that cannot apply: each named, with the path that does not fit.
    const cli_result bad =
        rnicsim(s, {"validate", quickstart(), "--set", "workload.qps.x=1", "--set", "nodots"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("  --set workload.qps.x=1: workload.qps is 1, which has no member "
                           "\"x\"\n"),
              std::string::npos)
        << bad.err;
    EXPECT_NE(bad.err.find("  --set nodots: expected PATH=VALUE\n"), std::string::npos) << bad.err;
}

TEST(OutputsCli, ConfigErrorWritesNothing) {
    scratch s;
    const std::string out = s.dir + "/out";
    const cli_result r = rnicsim(s, {"run", quickstart(), "--out", out, "--set",
                                     "outputs.pcap=maybe", "--set", "outputs.trace=true"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("outputs.pcap: "), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out));
    // Nothing staged either.
    for (const auto& e : fs::directory_iterator(s.dir)) {
        EXPECT_EQ(e.path().filename().string().find(".out.tmp"), std::string::npos);
    }
}

TEST(OutputsCli, ShowConfigHasTheOutputsDefaults) {
    scratch s;
    const cli_result r = rnicsim(s, {"show-config", quickstart()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json o = json::parse(r.out).at("outputs");
    EXPECT_EQ(o.at("pcap"), false);
    EXPECT_EQ(o.at("trace"), false);
    EXPECT_EQ(o.at("waves"), false);
    EXPECT_EQ(o.at("waves_start_ns").get<double>(), 0.0);
    EXPECT_EQ(o.at("waves_end_ns").get<double>(), 1e18);
    EXPECT_EQ(o.at("pcap_links"), json::array());
    EXPECT_EQ(o.at("waves_qps"), json::array());
}

TEST(OutputsCli, SignalsListsNamesWidthsAndMeanings) {
    scratch s;
    const cli_result r = rnicsim(s, {"signals", quickstart()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("node0.nic.doorbell.sq_ready.occupancy"), std::string::npos);
    EXPECT_NE(r.out.find("link.dir0.busy"), std::string::npos);
    // name, width, meaning on one line.
    const size_t at = r.out.find("workload.node0.outstanding");
    ASSERT_NE(at, std::string::npos);
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_NE(line.find(" 32  work requests"), std::string::npos) << line;
    // A broken scenario is a config error like everywhere else.
    const cli_result bad = rnicsim(s, {"signals", quickstart(), "--set", "rnic.pcie.lanes=3"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("rnic.pcie.lanes"), std::string::npos) << bad.err;
}

TEST(OutputsCli, UsageErrorsExit2) {
    scratch s;
    EXPECT_EQ(rnicsim(s, {}).exit_code, 2);
    EXPECT_EQ(rnicsim(s, {"run"}).exit_code, 2);
    EXPECT_EQ(rnicsim(s, {"frobnicate", quickstart()}).exit_code, 2);
    EXPECT_EQ(rnicsim(s, {"run", quickstart(), "--set"}).exit_code, 2);
    const cli_result missing = rnicsim(s, {"run", s.dir + "/nope.json", "--out", s.dir + "/o"});
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("cannot open"), std::string::npos) << missing.err;
    EXPECT_FALSE(fs::exists(s.dir + "/o"));
}

TEST(OutputsCli, ProgressBarRendering) {
    using rnic::output::progress_bar;
    EXPECT_EQ(progress_bar::render(0.5, "x", 10), "[#####-----]  50%  x");
    EXPECT_EQ(progress_bar::render(0.0, "", 4), "[----]   0%  ");
    EXPECT_EQ(progress_bar::render(1.7, "done", 4), "[####] 100%  done");
    EXPECT_EQ(progress_bar::render(-1, "", 2), "[--]   0%  ");
    setenv("CI", "true", 1);
    EXPECT_FALSE(progress_bar::wanted());
    // Not drawn before its delay.
    progress_bar bar(3600);
    bar.update(0.5, "x");
    EXPECT_FALSE(bar.shown());
}

// A run that lasts well over the bar's 2 s delay, under a pseudo-terminal (script(1)). Under
// AddressSanitizer rnicsim is about 5x slower: a sixth of the messages still runs for over 10 s,
// and the two runs stay inside the test's timeout.
#if defined(__SANITIZE_ADDRESS__)
constexpr const char* LONG_RUN_MESSAGES = "workload.messages=10000";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr const char* LONG_RUN_MESSAGES = "workload.messages=10000";
#else
constexpr const char* LONG_RUN_MESSAGES = "workload.messages=60000";
#endif
#else
constexpr const char* LONG_RUN_MESSAGES = "workload.messages=60000";
#endif

cli_result run_on_terminal(const scratch& s, const std::string& env) {
    const std::string cmd =
        rnicsim_command({"run", source_dir() + "/configs/bench/write_64k_line_rate.json", "--out",
                         s.dir + "/long", "--set", LONG_RUN_MESSAGES}) +
        " >/dev/null";
    return shell(s, env + " script -qec " + quote(cmd) + " /dev/null");
}

TEST(OutputsCli, ProgressBarOnlyOnATerminalAndNotInCi) {
    if (find_tool("script").empty()) {
        GTEST_SKIP() << "script(1) not installed";
    }
    scratch s;
    // Not a terminal (stderr is a file here): never a bar.
    const cli_result plain = rnicsim(s, short_run(s.dir + "/p", {}));
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_EQ(plain.err.find('\r'), std::string::npos);

    const cli_result tty = run_on_terminal(s, "env -u CI");
    ASSERT_EQ(tty.exit_code, 0) << tty.out << tty.err;
    EXPECT_NE(tty.out.find("\r["), std::string::npos) << "no progress bar on a terminal";
    EXPECT_NE(tty.out.find("WRs posted"), std::string::npos);
    EXPECT_NE(tty.out.find("\r\x1b[K"), std::string::npos) << "the bar is not erased at the end";

    const cli_result ci = run_on_terminal(s, "env CI=true");
    ASSERT_EQ(ci.exit_code, 0) << ci.out << ci.err;
    EXPECT_EQ(ci.out.find("\r["), std::string::npos) << "progress bar with CI=true";
}

}  // namespace
