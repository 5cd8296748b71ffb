// SPDX-License-Identifier: Apache-2.0
// DIR/trace.json end to end (outputs.trace): Chrome trace events that Perfetto and
// chrome://tracing open, one track per block, one complete WQE from doorbell to completion linked
// by flow events, no overlapping slices on a thread, times that agree with wire.pcap, per-stage
// latency in stats.json with or without the trace and equal to the trace's slices, and the same
// bytes for the same config.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/system/outputs_common.h"

namespace {

using namespace rnic::outputs_test;
using nlohmann::json;

struct slice {
    std::string thread;  // thread_name of its (pid, tid)
    std::string name;
    std::string flow;
    json args;
    int pid = 0;
    int tid = 0;
    uint64_t ts_ps = 0;
    uint64_t dur_ps = 0;
};

uint64_t to_ps(const json& us) {
    return static_cast<uint64_t>(std::llround(us.get<double>() * 1e6));
}

struct trace {
    std::vector<slice> slices;
    std::map<uint64_t, std::pair<json, json>> flows;  // id -> ("s", "f")
    std::map<std::pair<int, int>, std::string> threads;
    std::set<std::string> processes;
};

trace parse_trace(const std::string& text) {
    const json doc = json::parse(text);
    trace t;
    for (const json& e : doc.at("traceEvents")) {
        const std::string ph = e.at("ph");
        if (ph == "M" && e.at("name") == "thread_name") {
            t.threads[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
        } else if (ph == "M" && e.at("name") == "process_name") {
            t.processes.insert(e.at("args").at("name").get<std::string>());
        }
    }
    for (const json& e : doc.at("traceEvents")) {
        const std::string ph = e.at("ph");
        if (ph == "X") {
            slice s;
            s.pid = e.at("pid");
            s.tid = e.at("tid");
            s.thread = t.threads.at({s.pid, s.tid});
            s.name = e.at("name");
            s.flow = e.at("args").at("flow");
            s.args = e.at("args");
            s.ts_ps = to_ps(e.at("ts"));
            s.dur_ps = to_ps(e.at("dur"));
            t.slices.push_back(s);
        } else if (ph == "s") {
            t.flows[e.at("id").get<uint64_t>()].first = e;
        } else if (ph == "f") {
            EXPECT_EQ(e.value("bp", ""), "e");
            t.flows[e.at("id").get<uint64_t>()].second = e;
        }
    }
    return t;
}

struct traced_run {
    int exit_code = -1;
    std::string err;
    std::string text;
    json stats;
};

traced_run run_traced(const scratch& s, const std::string& name,
                      const std::vector<std::string>& sets) {
    const std::string out = s.dir + "/" + name;
    const cli_result r = rnicsim(s, short_run(out, sets));
    traced_run t;
    t.exit_code = r.exit_code;
    t.err = r.err;
    t.text = read_file(out + "/trace.json");
    if (fs::exists(out + "/stats.json")) {
        t.stats = json::parse(read_file(out + "/stats.json"));
    }
    return t;
}

bool starts_with(const std::string& s, const std::string& p) {
    return s.rfind(p, 0) == 0;
}

TEST(OutputsTrace, OneWqeFlowsFromFetchToCompletion) {
    scratch s;
    const traced_run r = run_traced(s, "t", {"outputs.trace=true"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const trace t = parse_trace(r.text);
    EXPECT_EQ(t.processes, (std::set<std::string>{"link", "node0", "node1"}));

    // The first WQE node 0 fetched.
    std::string flow;
    for (const slice& x : t.slices) {
        if (x.name == "wqe_fetch") {
            flow = x.flow;
            break;
        }
    }
    ASSERT_FALSE(flow.empty());
    ASSERT_NE(flow, "0x0");
    std::vector<size_t> mine;
    std::map<std::string, std::vector<const slice*>> by_stage;
    for (size_t i = 0; i < t.slices.size(); ++i) {
        if (t.slices[i].flow == flow) {
            mine.push_back(i);
            by_stage[t.slices[i].name].push_back(&t.slices[i]);
        }
    }
    // Every stage of a 64 KiB RDMA WRITE at MTU 1024, on the block that does it.
    auto one = [&](const std::string& stage, const std::string& thread) -> const slice& {
        static const slice none;
        const auto it = by_stage.find(stage);
        if (it == by_stage.end()) {
            ADD_FAILURE() << "no " << stage << " slice for flow " << flow;
            return none;
        }
        EXPECT_TRUE(starts_with(it->second.front()->thread, thread))
            << stage << " on " << it->second.front()->thread;
        return *it->second.front();
    };
    // One track per block: its lanes are named "<block>" and "<block> #<n>".
    const slice& bell = one("doorbell", "node0.nic.doorbell");
    const slice& fetch = one("wqe_fetch", "node0.nic.wqe_fetch");
    const slice& xlate = one("translation", "node0.nic.tx_engine");
    const slice& dma = one("payload_dma", "node0.nic.tx_engine");
    const slice& first = one("RC_WRITE_FIRST", "node0.nic.send_path");
    const slice& ack = one("ack", "node0.nic.tx_engine");
    const slice& cqe = one("cqe", "node0.nic.cq_writer");
    ASSERT_FALSE(HasFailure());
    for (const slice& x : t.slices) {
        const std::string& th = x.thread;
        const std::string block = th.substr(0, th.find(' '));
        EXPECT_TRUE(th == block || th.rfind(block + " #", 0) == 0) << th;
    }
    // The doorbell names its QP; the translation says whether the context cache hit (the
    // first WQE's keys and pages are not cached yet).
    EXPECT_EQ(bell.args.at("qpn").get<uint64_t>(),
              (std::stoull(flow, nullptr, 16) >> 32) & 0xFFFFFF);
    EXPECT_EQ(xlate.args.at("cache"), "miss");
    EXPECT_GT(xlate.args.at("misses").get<int>(), 0);
    for (const slice& x : t.slices) {
        if (x.name == "translation") {
            const std::string c = x.args.at("cache");
            EXPECT_TRUE(c == "hit" || c == "miss") << c;
        }
    }
    EXPECT_EQ(by_stage["RC_WRITE_MIDDLE"].size(), 62u);
    EXPECT_EQ(by_stage["RC_WRITE_LAST"].size(), 1u);
    // 64 data packets on the wire and into node 1; the ACK back is the WQE's too.
    size_t data_wire = 0, data_receive = 0;
    uint64_t last_data_receive = 0;
    for (const slice* w : by_stage["wire"]) {
        data_wire += starts_with(w->thread, "link.dir0") ? 1 : 0;
    }
    for (const slice* w : by_stage["receive"]) {
        if (starts_with(w->thread, "node1.nic.recv_path")) {
            ++data_receive;
            last_data_receive = std::max(last_data_receive, w->ts_ps + w->dur_ps);
        }
    }
    EXPECT_EQ(data_wire, 64u);
    EXPECT_EQ(data_receive, 64u);
    EXPECT_EQ(by_stage["rx_dma"].size(), 64u);
    // In time order through the blocks.
    EXPECT_LE(bell.ts_ps + bell.dur_ps, fetch.ts_ps);
    EXPECT_LE(fetch.ts_ps + fetch.dur_ps, xlate.ts_ps + xlate.dur_ps);
    EXPECT_LE(xlate.ts_ps, dma.ts_ps);
    EXPECT_LE(dma.ts_ps, first.ts_ps);
    EXPECT_LT(first.ts_ps, by_stage["wire"].front()->ts_ps + 1);
    EXPECT_GT(ack.ts_ps, last_data_receive);
    EXPECT_GE(cqe.ts_ps + cqe.dur_ps, ack.ts_ps);

    // Flow events link every slice of the WQE into one chain: each "s"/"f" pair joins the
    // slice enclosing "s" to the slice starting at "f", on their threads, both of this WQE.
    std::vector<size_t> parent(t.slices.size());
    std::iota(parent.begin(), parent.end(), 0);
    std::function<size_t(size_t)> root = [&](size_t i) {
        return parent[i] == i ? i : parent[i] = root(parent[i]);
    };
    // The WQE's slice on the event's thread that starts at its timestamp or, for "s", else
    // encloses it.
    auto find_slice = [&](const json& e, bool enclosing) -> long {
        const int pid = e.at("pid");
        const int tid = e.at("tid");
        const uint64_t ts = to_ps(e.at("ts"));
        for (int pass = 0; pass < (enclosing ? 2 : 1); ++pass) {
            for (size_t i : mine) {
                const slice& x = t.slices[i];
                if (x.pid == pid && x.tid == tid &&
                    (pass == 0 ? x.ts_ps == ts : (x.ts_ps <= ts && ts <= x.ts_ps + x.dur_ps))) {
                    return static_cast<long>(i);
                }
            }
        }
        return -1;
    };
    size_t links = 0;
    for (const auto& [id, pair] : t.flows) {
        ASSERT_FALSE(pair.first.is_null()) << "flow " << id << " without start";
        ASSERT_FALSE(pair.second.is_null()) << "flow " << id << " without finish";
        const long a = find_slice(pair.first, true);
        const long b = find_slice(pair.second, false);
        if (a < 0 && b < 0) {
            continue;  // another WQE's arrow
        }
        ASSERT_GE(a, 0) << "flow " << id << " starts outside the WQE's slices";
        ASSERT_GE(b, 0) << "flow " << id << " ends outside the WQE's slices";
        parent[root(static_cast<size_t>(a))] = root(static_cast<size_t>(b));
        ++links;
    }
    EXPECT_EQ(links, mine.size() - 1);
    for (size_t i : mine) {
        EXPECT_EQ(root(i), root(mine.front())) << t.slices[i].name << " on " << t.slices[i].thread
                                               << " is not linked to the WQE's chain";
    }
}

TEST(OutputsTrace, SlicesOnOneThreadNeverOverlap) {
    scratch s;
    const traced_run r = run_traced(s, "t", {"outputs.trace=true", "workload.qps=2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const trace t = parse_trace(r.text);
    std::map<std::pair<int, int>, std::vector<std::pair<uint64_t, uint64_t>>> per_thread;
    for (const slice& x : t.slices) {
        per_thread[{x.pid, x.tid}].push_back({x.ts_ps, x.ts_ps + x.dur_ps});
    }
    EXPECT_GT(per_thread.size(), 10u);
    for (auto& [key, v] : per_thread) {
        std::sort(v.begin(), v.end());
        for (size_t i = 1; i < v.size(); ++i) {
            EXPECT_GE(v[i].first, v[i - 1].second)
                << t.threads.at(key) << ": slice at " << v[i].first << " ps overlaps one ending at "
                << v[i - 1].second << " ps";
        }
    }
}

TEST(OutputsTrace, WireSlicesStartWhenThePcapSaysTheFrameLeft) {
    scratch s;
    const traced_run r = run_traced(s, "t", {"outputs.trace=true", "outputs.pcap=true"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const trace t = parse_trace(r.text);
    std::vector<uint64_t> wire;
    for (const slice& x : t.slices) {
        if (x.name == "wire") {
            wire.push_back(x.ts_ps);
        }
    }
    std::sort(wire.begin(), wire.end());
    const pcap_file p = read_pcap(s.dir + "/t/wire.pcap");
    ASSERT_EQ(p.records.size(), wire.size());
    for (size_t i = 0; i < wire.size(); ++i) {
        ASSERT_EQ(p.records[i].ns, wire[i] / 1000) << "frame " << i;
    }
}

TEST(OutputsTrace, StageLatencyIsInStatsWithOrWithoutTheTrace) {
    scratch s;
    const traced_run with = run_traced(s, "with", {"outputs.trace=true"});
    const traced_run without = run_traced(s, "without", {});
    ASSERT_EQ(with.exit_code, 0) << with.err;
    ASSERT_EQ(without.exit_code, 0) << without.err;
    EXPECT_TRUE(without.text.empty()) << "trace.json written although outputs.trace is false";
    const json& st = without.stats.at("stages");
    for (const char* stage : {"doorbell", "wqe_fetch", "translation", "payload_dma", "wire",
                              "receive", "rx_dma", "ack", "cqe"}) {
        ASSERT_TRUE(st.contains(stage)) << stage << " missing in " << st.dump();
        const json& v = st.at(stage);
        EXPECT_GT(v.at("count").get<uint64_t>(), 0u) << stage;
        EXPECT_GT(v.at("avg_ns").get<double>(), 0.0) << stage;
        EXPECT_LE(v.at("p50_ns").get<double>(), v.at("p99_ns").get<double>()) << stage;
        EXPECT_LE(v.at("p99_ns").get<double>(), v.at("max_ns").get<double>()) << stage;
        EXPECT_LE(v.at("avg_ns").get<double>(), v.at("max_ns").get<double>()) << stage;
    }
    EXPECT_EQ(st.at("wqe_fetch").at("count"), 8);
    EXPECT_EQ(st.at("cqe").at("count"), 8);  // node 0's send CQEs (WRITE: none on node 1)
    EXPECT_EQ(st.at("wire").at("count"), without.stats["sim"]["packets"]);
    // Per block: node 1 receives the data, node 0 the ACKs.
    const json& blocks = without.stats.at("stages_by_block");
    EXPECT_EQ(blocks.at("node1.nic.recv_path").at("receive").at("count"), 8 * 64);
    EXPECT_TRUE(blocks.at("node0.nic.recv_path").contains("receive"));
    // Aggregation does not depend on whether the events are written.
    EXPECT_EQ(with.stats.at("stages"), without.stats.at("stages"));
    EXPECT_EQ(with.stats.at("stages_by_block"), without.stats.at("stages_by_block"));
}

// stats.json's per-stage breakdown is the distribution of the trace's slices of that stage:
// count, average, nearest-rank p50/p99 and maximum of their durations.
TEST(OutputsTrace, StageLatencyInStatsIsWhatTheTraceShows) {
    scratch s;
    const traced_run r = run_traced(s, "t", {"outputs.trace=true", "workload.qps=2"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const trace t = parse_trace(r.text);
    std::map<std::string, std::vector<uint64_t>> durations;  // stage -> ps
    for (const slice& x : t.slices) {
        durations[x.name].push_back(x.dur_ps);
    }
    const json& st = r.stats.at("stages");
    std::set<std::string> in_stats;
    for (const auto& [stage, v] : st.items()) {
        in_stats.insert(stage);
    }
    std::set<std::string> in_trace;
    for (const auto& [stage, d] : durations) {
        in_trace.insert(stage);
    }
    EXPECT_EQ(in_stats, in_trace);
    for (const char* stage : {"doorbell", "wqe_fetch", "translation", "payload_dma",
                              "RC_WRITE_FIRST", "wire", "receive", "rx_dma", "ack", "cqe"}) {
        EXPECT_TRUE(in_trace.count(stage)) << stage;
    }
    auto rank = [](const std::vector<uint64_t>& sorted, double p) {
        const auto k = std::max<size_t>(
            1, static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size()))));
        return sorted[k - 1];
    };
    for (auto& [stage, d] : durations) {
        SCOPED_TRACE(stage);
        std::sort(d.begin(), d.end());
        const json& v = st.at(stage);
        const double sum = std::accumulate(d.begin(), d.end(), 0.0);
        EXPECT_EQ(v.at("count").get<size_t>(), d.size());
        EXPECT_NEAR(v.at("avg_ns").get<double>(), sum / d.size() / 1000.0, 1e-6);
        EXPECT_DOUBLE_EQ(v.at("p50_ns").get<double>(), rank(d, 0.50) / 1000.0);
        EXPECT_DOUBLE_EQ(v.at("p99_ns").get<double>(), rank(d, 0.99) / 1000.0);
        EXPECT_DOUBLE_EQ(v.at("max_ns").get<double>(), d.back() / 1000.0);
    }
}

TEST(OutputsTrace, SameConfigGivesTheSameBytes) {
    scratch s;
    const traced_run a = run_traced(s, "a", {"outputs.trace=true", "workload.qps=2"});
    const traced_run b = run_traced(s, "b", {"outputs.trace=true", "workload.qps=2"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    ASSERT_GT(a.text.size(), 1000u);
    EXPECT_TRUE(a.text == b.text) << "trace.json differs between identical runs";
}

}  // namespace
