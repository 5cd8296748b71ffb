// SPDX-License-Identifier: Apache-2.0
// A run's outputs depend on simulated time and fixed keys only, never on the order SystemC
// happens to run the processes of one instant. That order is left open by the standard, and the
// reference kernel's follows the shape of its timed-event heap: an event nobody waits for,
// added anywhere in the queue, reorders the processes woken together later. A partitioned
// (MPI) run holds a different set of events in each rank's kernel than a single process does,
// so a model that served same-instant requests in process order could not be byte-identical
// across partitionings. Each run below is made twice, in two child processes (one SystemC
// elaboration each): once as is and once with unrelated timed events in the kernel: stats.json
// must be the same bytes, wire.pcap the same frames and trace.json the same stage slices.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

#include "testbench/common/scratch_dir.h"
#include "testbench/output/flows_report.h"
#include "testbench/output/run_report.h"
#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"

#include <sys/wait.h>
#include <unistd.h>

namespace {

std::string source_dir() {
    const char* d = std::getenv("RNICSIM_SOURCE_DIR");
    return d != nullptr
               ? d
               : std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().string();
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Events no process is sensitive to: they only change the kernel's timed queue. One every 10 ns
// over the first 20 us, and four more at its end, all before any run here has ended (a run ends
// when nothing is left to do: an event pending after that would make it longer), so the queue's
// shape differs at every instant of the run's first part, where connections are set up and the
// first messages go.
void add_unrelated_events() {
    for (int i = 0; i < 4; ++i) {
        (new sc_core::sc_event())->notify(20, sc_core::SC_US);
    }
    for (int i = 1; i <= 2000; ++i) {
        (new sc_core::sc_event())->notify(10.0 * i, sc_core::SC_NS);
    }
}

// Runs `config` with `overrides` in a child process, writing stats.json, wire.pcap and
// trace.json into `out`; returns the child's exit status (0: ran and wrote).
int run_child(const std::string& config, const std::vector<std::string>& overrides, bool unrelated,
              const std::string& out) {
    std::filesystem::create_directories(out);
    const pid_t pid = fork();
    if (pid == 0) {
        int rc = 0;
        try {
            const rnic::scenario::scenario_config cfg =
                rnic::scenario::load_scenario(source_dir() + "/" + config, overrides);
            if (unrelated) {
                add_unrelated_events();
            }
            rnic::scenario::run_options opts;
            opts.pcap = out + "/wire.pcap";
            opts.trace = out + "/trace.json";
            const rnic::scenario::run_result r = rnic::scenario::run_scenario(cfg, opts);
            nlohmann::json stats = rnic::output::make_stats_json(r);
            if (rnic::output::has_fabric_outputs(cfg, r)) {
                stats["fabric"] = rnic::output::make_fabric_json(cfg, r);
            }
            std::ofstream(out + "/stats.json") << rnic::output::to_file_text(stats);
            rc = r.failures.empty() ? 0 : 3;
        } catch (const std::exception& e) {
            fprintf(stderr, "child run failed: %s\n", e.what());
            rc = 4;
        }
        fflush(nullptr);
        _exit(rc);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// wire.pcap's records (16-byte header + frame), sorted: frames of one instant on different links
// are written in the order their links emitted them, which the pcap writer of the partitioned
// runs (issue 16) puts in a fixed order; until then the multiset is what must not change.
std::vector<std::string> pcap_records(const std::string& bytes) {
    std::vector<std::string> r;
    size_t o = 24;  // global header
    while (o + 16 <= bytes.size()) {
        uint32_t incl = 0;
        std::memcpy(&incl, bytes.data() + o + 8, 4);
        r.push_back(bytes.substr(o, 16 + incl));
        o += 16 + incl;
    }
    EXPECT_EQ(o, bytes.size()) << "truncated wire.pcap";
    std::sort(r.begin(), r.end());
    return r;
}

// trace.json's slices (complete events) with their track's name in place of its number, sorted:
// tracks are numbered and flow arrows emitted in first-use order, and slices of one instant come
// in process order (the timeline of the partitioned runs orders all three); the slices
// themselves (which block did what, when, for how long) must not change.
std::vector<std::string> trace_slices(const std::string& text) {
    const nlohmann::json j = nlohmann::json::parse(text);
    const nlohmann::json& ev = j.is_object() ? j.at("traceEvents") : j;
    std::map<std::pair<int64_t, int64_t>, std::string> names;  // (pid, tid) -> track name
    for (const auto& e : ev) {
        if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name") {
            names[{e.at("pid").get<int64_t>(), e.at("tid").get<int64_t>()}] =
                e.at("args").at("name").get<std::string>();
        }
    }
    std::vector<std::string> r;
    for (auto e : ev) {
        if (e.value("ph", "") == "X") {
            e["tid"] = names[{e.at("pid").get<int64_t>(), e.at("tid").get<int64_t>()}];
            e.erase("pid");  // the track name starts with its block's
            r.push_back(e.dump());
        }
    }
    std::sort(r.begin(), r.end());
    return r;
}

void expect_same_outputs(const std::string& config, const std::vector<std::string>& overrides) {
    rnic::testing::scratch_dir s("rnic_kernel_order");
    ASSERT_EQ(run_child(config, overrides, false, s.path("plain")), 0);
    ASSERT_EQ(run_child(config, overrides, true, s.path("unrelated")), 0);
    const std::string a = read_file(s.path("plain/stats.json"));
    const std::string b = read_file(s.path("unrelated/stats.json"));
    ASSERT_GT(a.size(), 0u);
    if (a != b) {
        // Name the first differing line for the reader.
        std::istringstream ia(a), ib(b);
        std::string la, lb;
        int n = 1;
        while (std::getline(ia, la) && std::getline(ib, lb) && la == lb) {
            ++n;
        }
        ADD_FAILURE() << config << ": stats.json line " << n << ": '" << la << "' vs '" << lb
                      << "' with unrelated events in the kernel";
    }
    const std::vector<std::string> pa = pcap_records(read_file(s.path("plain/wire.pcap")));
    EXPECT_GT(pa.size(), 0u);
    EXPECT_TRUE(pa == pcap_records(read_file(s.path("unrelated/wire.pcap"))))
        << config << ": the frames on the wire changed when unrelated events were added";
    const std::vector<std::string> ta = trace_slices(read_file(s.path("plain/trace.json")));
    EXPECT_GT(ta.size(), 0u);
    EXPECT_TRUE(ta == trace_slices(read_file(s.path("unrelated/trace.json"))))
        << config << ": the WQE stages changed when unrelated events were added";
}

}  // namespace

TEST(KernelOrder, Send4kIndependentOfUnrelatedEvents) {
    expect_same_outputs("configs/bench/send_4k.json", {"workload.messages=1000"});
}

TEST(KernelOrder, Read64kIndependentOfUnrelatedEvents) {
    expect_same_outputs("configs/bench/read_64k.json", {"workload.messages=60"});
}

TEST(KernelOrder, QuickstartTwoQpsIndependentOfUnrelatedEvents) {
    expect_same_outputs("configs/quickstart.json", {"workload.messages=60", "workload.qps=2"});
}

TEST(KernelOrder, IncastIndependentOfUnrelatedEvents) {
    expect_same_outputs("configs/fabric/incast_8to1.json", {"workload.messages=16"});
}

TEST(KernelOrder, LossyWriteIndependentOfUnrelatedEvents) {
    expect_same_outputs("configs/bench/write_64k_loss.json", {"workload.messages=100"});
}

TEST(KernelOrder, DcqcnIncastIndependentOfUnrelatedEvents) {
    expect_same_outputs("configs/fabric/incast_8to1_dcqcn.json", {"workload.messages=16"});
}

// Fails today (disabled, run it with --gtest_also_run_disabled_tests): a leaf-spine fabric with
// PFC still depends on the kernel's order somewhere in the switch / pause path; the first
// difference is stats.json blocks.leaf0.paused_ps (728004800 vs 727793440 ps), then switch
// queue averages and peaks. Not localized yet.
TEST(KernelOrder, DISABLED_PermutationIndependentOfUnrelatedEvents) {
    expect_same_outputs("configs/fabric/permutation_4x4.json", {});
}
