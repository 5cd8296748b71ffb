// SPDX-License-Identifier: Apache-2.0
// A run's outputs depend on simulated time and fixed keys only, never on the order SystemC
// happens to run the processes of one instant. That order is left open by the standard, and the
// reference kernel's follows the shape of its timed-event heap: an event nobody waits for,
// added anywhere in the queue, reorders the processes woken together later. A partitioned
// (MPI) run holds a different set of events in each rank's kernel than a single process does,
// so a model that served same-instant requests in process order could not be byte-identical
// across partitionings. Each run below is made twice, in two child processes (one SystemC
// elaboration each): once as is and once with unrelated timed events in the kernel: stats.json
// must be the same bytes, wire.pcap the same bytes and trace.json the same stage slices.
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
#include "testbench/common/unrelated_events.h"
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

// Where the unrelated events go, and whether trace.json and wire.pcap are written and compared
// (the larger fabrics' are hundreds of MB and slow to write: those runs compare fewer files).
// By default the events cover the first 20 us, where connections are set up and the first
// messages go.
struct run_kind {
    double from_us = 0;
    double span_us = 20;
    bool trace = true;
    bool pcap = true;
};

// Runs `config` with `overrides` in a child process, writing stats.json and (as `kind` says)
// wire.pcap and trace.json into `out`; returns the child's exit status (0: ran and wrote).
int run_child(const std::string& config, const std::vector<std::string>& overrides, bool unrelated,
              const run_kind& kind, const std::string& out) {
    std::filesystem::create_directories(out);
    const pid_t pid = fork();
    if (pid == 0) {
        int rc = 0;
        try {
            const rnic::scenario::scenario_config cfg =
                rnic::scenario::load_scenario(source_dir() + "/" + config, overrides);
            if (unrelated) {
                rnic::testing::add_unrelated_events(kind.from_us, kind.span_us);
            }
            rnic::scenario::run_options opts;
            if (kind.pcap) {
                opts.pcap = out + "/wire.pcap";
            }
            if (kind.trace) {
                opts.trace = out + "/trace.json";
            }
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

// wire.pcap's records (16-byte header + frame), sorted: the multiset, to tell a changed frame
// from a changed record order.
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

void expect_same_outputs(const std::string& config, const std::vector<std::string>& overrides,
                         const run_kind& kind = {}) {
    rnic::testing::scratch_dir s("rnic_kernel_order");
    ASSERT_EQ(run_child(config, overrides, false, kind, s.path("plain")), 0);
    ASSERT_EQ(run_child(config, overrides, true, kind, s.path("unrelated")), 0);
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
    if (!kind.pcap) {
        return;
    }
    const std::string wa = read_file(s.path("plain/wire.pcap"));
    const std::string wb = read_file(s.path("unrelated/wire.pcap"));
    const std::vector<std::string> pa = pcap_records(wa);
    EXPECT_GT(pa.size(), 0u);
    EXPECT_TRUE(pa == pcap_records(wb))
        << config << ": the frames on the wire changed when unrelated events were added";
    // The runner writes frames of one instant in a fixed order (time, link, direction, the
    // direction's sequence), so the file itself must not change either.
    EXPECT_TRUE(wa == wb) << config << ": wire.pcap's record order changed with unrelated events";
    if (!kind.trace) {
        return;
    }
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

// A leaf-spine fabric with PFC: pause frames arrive, switches' egress ports choose their next
// frame and XOFF/XON change at the same instants. Failed before the links chose their next
// frame once the instant had settled (tlm/ethernet/README.md, Timing): first difference
// stats.json blocks.leaf0.paused_ps, then switch queue averages and peaks. (Without trace.json,
// which doubles the time of this larger run.)
TEST(KernelOrder, PermutationIndependentOfUnrelatedEvents) {
    expect_same_outputs("configs/fabric/permutation_4x4.json", {}, {0, 20, false});
}

// The 64-node web-search scenario, issue 16's exactness case, whole (its first same-instant race
// without the settled choice came after 1.1 ms: stats.json's leaf queue averages and wire.pcap
// differed), with unrelated events over the whole arrival period (flows start at 100 us).
// stats.json only: its wire.pcap is 0.9 GB (the partitioned-run check compares it).
TEST(KernelOrder, WebSearchIndependentOfUnrelatedEvents) {
    expect_same_outputs("configs/fabric/websearch_64_30.json", {}, {90, 1000, false, false});
}

// Web search with DCQCN (issue 23): congestion control changes a QP's rate at the instant its
// packet's rate limiter slot comes due; before the pacer applied a rate set at t only to what it
// decides after t (hw/tx_engine/pacer.h, set_rate), the packet went at the old or the new rate
// by process order: node50's packet left 2 ns apart (wire.pcap at 245 us, then cc.csv, flows.csv
// and stats.json differed; --ranks 2 and 3 differed the same way). stats.json only (the larger
// outputs: ctest -L mpi).
TEST(KernelOrder, DcqcnWebSearchIndependentOfUnrelatedEvents) {
    expect_same_outputs("configs/fabric/websearch_64_30_dcqcn.json", {"workload.duration_us=200"},
                        {0, 300, false, false});
}

// The NIC's doorbell scheduler and WQE fetch (issue 23's tools, found on the fidelity
// scenarios): a doorbell decoded, a QP handed back after its fetch and the scheduler's next QP
// at one instant were taken in process order, and so was WQE fetch's choice between issuing a
// newly scheduled QP's ring read and parsing the next WQE (hw/doorbell/README.md and
// hw/wqe_fetch/README.md, "Same-instant order"). Without it: 8 threads pushing 64 B WRITEs to 8
// peers, node0.nic.wqe_fetch busy_ps and the wqe_fetch stage times differed (a QP's WQE issued
// 4 ns apart); 8 clients reading 32 B from one server, a client's doorbell.scheduled and
// wqe_fetch.dma_reads differed (a newly scheduled QP missed and its next batch read bigger).
TEST(KernelOrder, PushedWritesToEightPeersIndependentOfUnrelatedEvents) {
    expect_same_outputs("configs/fidelity/write_64b_8_peers.json", {"workload.messages=200"},
                        {0, 120});
}

TEST(KernelOrder, ReadIncastClientsIndependentOfUnrelatedEvents) {
    expect_same_outputs("configs/fidelity/read_32b_incast_8.json", {"workload.messages=100"},
                        {0, 120});
}

TEST(KernelOrder, FrameAtItsQpTeardownInstantIndependentOfUnrelatedEvents) {
    // Every fault kind on the 4x4 leaf-spine permutation: at 529,908 ns node7's command
    // processor moves QP 2 to ERROR (the workload's teardown) in the instant its receive lane
    // classifies a duplicate frame of that QP. The unrelated events from 525 us change which of
    // the two SystemC runs first; the frame was a duplicate or bad_state by that order (node7's
    // recv_path duplicates/bad_state 748/8 or 747/9, as between one and two MPI ranks) until the
    // command processor changed the context tables only once the instant had settled
    // (hw/cmd_processor/cmd_processor.cpp). The window is this case's; the check holds for any.
    run_kind kind;
    kind.from_us = 525;
    kind.span_us = 4;
    kind.trace = false;
    expect_same_outputs("configs/fabric/permutation_4x4.json",
                        {"workload.messages=8", "topology.link.faults.drop=0.002",
                         "topology.link.faults.duplicate=0.002",
                         "topology.link.faults.reorder=0.002", "topology.link.faults.jitter_ns=20"},
                        kind);
}
