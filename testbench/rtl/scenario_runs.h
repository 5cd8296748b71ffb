// SPDX-License-Identifier: Apache-2.0
// Whole-scenario runs of the built rnicsim for the send path suites (scenario_*_test.cpp):
// a scratch folder, one run's outputs (exit code, stderr, wire.pcap, trace.json, stats.json)
// and checks common to them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/common/scratch_dir.h"

#include <stdlib.h>
#include <sys/wait.h>

namespace rnic::sptest {

namespace fs = std::filesystem;
using json = nlohmann::json;

inline std::string binary_dir() {
    const char* d = std::getenv("RNICSIM_BINARY_DIR");
    return d != nullptr ? d : fs::read_symlink("/proc/self/exe").parent_path().string();
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// A temporary folder (testbench/common/scratch_dir.h), named for these tests.
struct scratch : rnic::testing::scratch_dir {
    scratch()
        : scratch_dir("rnic_scenario_eq") {}
};

// One rnicsim run's outputs.
struct run_output {
    int exit_code = -1;
    std::string err;
    std::string pcap;
    std::string trace;
    json stats;
    std::string out;  // the outputs folder
};

// Runs `cfg` with the given send path implementation, pcap and trace on.
// RNICSIM_SEND_PATH_TIMING="output_registers=3,..." as rnic.send_path.timing.
inline json timing_from_env() {
    json t = json::object();
    const char* env = std::getenv("RNICSIM_SEND_PATH_TIMING");
    std::string s = env != nullptr ? env : "";
    size_t pos = 0;
    while (pos < s.size()) {
        size_t end = s.find(',', pos);
        end = end == std::string::npos ? s.size() : end;
        const std::string kv = s.substr(pos, end - pos);
        const size_t eq = kv.find('=');
        if (eq != std::string::npos) {
            t[kv.substr(0, eq)] = std::stoul(kv.substr(eq + 1));
        }
        pos = end + 1;
    }
    return t;
}

// `tag` names the run's files when one impl runs more than once.
inline run_output run(const scratch& s, json cfg, const std::string& impl,
                      const std::string& tag = "") {
    cfg["rnic"]["send_path"]["impl"] = impl;
    const json timing = timing_from_env();
    for (const auto& [k, v] : timing.items()) {
        cfg["rnic"]["send_path"]["timing"][k] = v;
    }
    cfg["outputs"]["pcap"] = true;
    cfg["outputs"]["trace"] = true;
    cfg["outputs"]["waves"] = false;
    const std::string base = s.dir + "/" + impl + tag;
    const std::string cfg_path = base + ".json";
    std::ofstream(cfg_path) << cfg.dump(2);
    const std::string out = base + ".out";
    const std::string cmd = binary_dir() + "/rnicsim run " + cfg_path + " --out " + out + " >" +
                            base + ".stdout 2>" + base + ".stderr";
    const int status = std::system(cmd.c_str());
    run_output r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.err = read_file(base + ".stderr");
    r.pcap = read_file(out + "/wire.pcap");
    r.trace = read_file(out + "/trace.json");
    r.out = out;
    const std::string st = read_file(out + "/stats.json");
    r.stats = st.empty() ? json::object() : json::parse(st);
    return r;
}

// wire.pcap records: (timestamp ns, frame bytes).
struct pcap_record {
    uint64_t ts_ns = 0;
    std::string bytes;
};
inline std::vector<pcap_record> pcap_records(const std::string& p) {
    std::vector<pcap_record> v;
    size_t off = 24;  // global header
    while (off + 16 <= p.size()) {
        uint32_t h[4];
        std::memcpy(h, p.data() + off, sizeof(h));
        pcap_record r;
        r.ts_ns = uint64_t{h[0]} * 1000000000u + h[1];  // nanosecond pcap
        r.bytes = p.substr(off + 16, h[2]);
        v.push_back(std::move(r));
        off += 16 + h[2];
    }
    return v;
}

// Completion time of every work request: the CQE write events of trace.json, by flow.
inline std::map<std::string, std::vector<double>> completion_times(const json& trace) {
    std::map<std::string, std::vector<double>> m;
    for (const auto& e : trace) {
        if (e.value("name", "") == "cqe" && e.contains("ts")) {
            m[e["args"].value("flow", "") + "@" + std::to_string(e.value("pid", 0))].push_back(
                e["ts"].get<double>());
        }
    }
    return m;
}

inline json trace_events(const std::string& trace) {
    if (trace.empty()) {
        return json::array();
    }
    json t = json::parse(trace);
    return t.is_object() ? t.at("traceEvents") : t;
}

inline void expect_passed(const run_output& r) {
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(r.stats.contains("result")) << r.err;
    EXPECT_TRUE(r.stats["result"].value("passed", false)) << r.stats["result"].dump();
}

// On a perfect link no retransmission timer expires: a late frame (an RTL mis-timed by its
// wrapper) would show here as a timeout long before a completion fails.
inline void expect_no_timeouts(const run_output& r) {
    const json& blocks = r.stats.value("blocks", json::object());
    for (const char* n : {"node0.nic.tx_engine", "node1.nic.tx_engine"}) {
        ASSERT_TRUE(blocks.contains(n)) << n;
        EXPECT_EQ(blocks[n].value("timeouts", uint64_t{1}), 0u) << n << " retransmission timeouts";
    }
}

inline json scenario(const std::string& op, uint64_t bytes, uint64_t messages, uint32_t qps,
                     uint32_t mtu) {
    json c;
    c["topology"]["nodes"] =
        json::array({{{"mac", "02:00:00:00:00:01"}, {"ip", "10.0.0.1"}, {"mtu", mtu}},
                     {{"mac", "02:00:00:00:00:02"}, {"ip", "10.0.0.2"}, {"mtu", mtu}}});
    c["topology"]["link"] = {{"rate_gbps", 100}, {"propagation_ns", 50}};
    c["rnic"]["clock_mhz"] = 500;
    c["workload"] = {{"operation", op},  {"message_bytes", bytes}, {"messages", messages},
                     {"qps", qps},       {"queue_depth", 8},       {"seed", 3},
                     {"signal_every", 1}};
    c["outputs"]["dir"] = "out/scenario_equivalence";
    return c;
}

inline uint64_t counter(const json& stats, const std::string& block, const std::string& name) {
    if (!stats.contains("blocks") || !stats["blocks"].contains(block)) {
        return 0;
    }
    return stats["blocks"][block].value(name, uint64_t{0});
}

}  // namespace rnic::sptest
