// SPDX-License-Identifier: Apache-2.0
// Fidelity of small-message latency: an 8 B RDMA WRITE, one QP, queue depth 1, with the 100 Gb/s
// Gen3 x16 preset (configs/hw/nic100g_gen3x16.json) takes 0.6 to 2 us one way, as ConnectX-class
// NICs do (../shared/reference/pcie_and_rnic_figures.md), and the per-stage stats account for
// every nanosecond of it: the stages on the critical path, plus a few cycles per hand-off
// between blocks, add up to the span the WQE timeline shows, and that span plus the PCIe
// crossings and the host's own costs adds up to the latency the consumer measures.
//
// One elaboration per process: run the binary by hand with --gtest_filter=<one test>.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/common/cli_run.h"
#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"

#include <unistd.h>

namespace {

using rnic::testing::source_dir;
namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const std::string& path) {
    std::ifstream in(path);
    return json::parse(in, nullptr, true, /*ignore_comments=*/true);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// One stage of the WQE timeline: (block, stage) as stats.json's stages_by_block names it.
using stage_id = std::pair<std::string, std::string>;

// The critical path of one signaled WRITE, in order. The payload read (tx_engine payload_dma)
// runs under the send path's frame slice, which waits for it, and the ACK's wire time covers
// its one-cycle send-path slice, so neither is on the list.
const std::vector<stage_id> FORWARD = {
    {"node0.nic.doorbell", "doorbell"},        // doorbell at the BAR -> QP scheduled
    {"node0.nic.wqe_fetch", "wqe_fetch"},      // WQE read over PCIe
    {"node0.nic.tx_engine", "translation"},    // lkey -> MPT/MTT
    {"node0.nic.send_path", "RC_WRITE_ONLY"},  // payload read + frame build + out of the MAC
    {"link.dir0", "wire"},                     // serialization + propagation
    {"node1.nic.recv_path", "receive"},        // parse, checks, rkey -> MPT/MTT
    {"node1.nic.recv_path", "rx_dma"},         // payload DMA write issued at the target
};
const std::vector<stage_id> BACKWARD = {
    {"link.dir1", "wire"},               // the ACK
    {"node0.nic.recv_path", "receive"},  // ACK parsed
    {"node0.nic.cq_writer", "cqe"},      // CQE written
};

TEST(FidelityLatency, Write8BytesOneWayWithinRangeAndStagesAccountForIt) {
    const std::string root = source_dir();
    json rnic = read_json(root + "/configs/hw/nic100g_gen3x16.json");
    rnic.erase("//");
    const json doc = {{"topology",
                       {{"nodes",
                         {{{"mac", "02:00:00:00:00:01"}, {"ip", "10.0.0.1"}, {"mtu", 4096}},
                          {{"mac", "02:00:00:00:00:02"}, {"ip", "10.0.0.2"}, {"mtu", 4096}}}},
                        {"link", {{"rate_gbps", 100}, {"propagation_ns", 50}}}}},
                      {"rnic", rnic},
                      {"workload",
                       {{"operation", "write"},
                        {"message_bytes", 8},
                        {"messages", 120},
                        {"qps", 1},
                        {"queue_depth", 1},
                        {"signal_every", 1},
                        {"inline_threshold", 0},
                        {"time_limit_ms", 100}}}};
    const rnic::scenario::scenario_config cfg = rnic::scenario::parse_scenario(doc);

    const fs::path dir = fs::temp_directory_path() / ("rnic_fidelity_" + std::to_string(getpid()));
    fs::create_directories(dir);
    rnic::scenario::run_options opts;
    opts.trace = (dir / "trace.json").string();
    const rnic::scenario::run_result r = rnic::scenario::run_scenario(cfg, opts);
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    ASSERT_TRUE(r.passed());
    const json trace = read_json(opts.trace);
    fs::remove_all(dir);

    // --- the per-stage stats (p50: at queue depth 1 every WQE after warm-up is alike) ---
    // A receive path with several lanes (the preset's rnic.recv_path.lanes) records its stages
    // per lane (`<block>.lane<i>`, hw/recv_path/README.md); one QP's frames all take one lane.
    auto p50 = [&](const stage_id& s) {
        const json& b = r.stages_by_block;
        for (const auto& [block, stages] : b.items()) {
            const bool lane = block.rfind(s.first + ".lane", 0) == 0;
            if ((block == s.first || lane) && stages.contains(s.second)) {
                return stages[s.second]["p50_ns"].get<double>();
            }
        }
        ADD_FAILURE() << "no stage " << s.first << " / " << s.second << " in " << b.dump();
        return 0.0;
    };
    double forward = 0;
    for (const auto& s : FORWARD) {
        forward += p50(s);
    }
    double backward = 0;
    for (const auto& s : BACKWARD) {
        backward += p50(s);
    }

    // --- the same WQEs on the timeline: doorbell arrival to payload write (forward) and to the
    // CQE write (whole loop), per WQE, median over the warm ones ---
    std::map<std::pair<int, int>, std::string> tracks;  // (pid, tid) -> "block stage"
    std::map<std::string, std::vector<const json*>> flows;
    std::vector<const json*> doorbells;
    for (const auto& e : trace["traceEvents"]) {
        if (e.value("ph", "") == "M" && e.value("name", "") == "thread_name") {
            tracks[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
        } else if (e.value("ph", "") == "X") {
            if (e["name"] == "doorbell") {
                doorbells.push_back(&e);
            } else if (e.contains("args") && e["args"].contains("flow")) {
                flows[e["args"]["flow"].get<std::string>()].push_back(&e);
            }
        }
    }
    auto end_us = [](const json* e) {
        return e->at("ts").get<double>() + e->at("dur").get<double>();
    };
    std::vector<double> fwd_span;
    std::vector<double> loop_span;
    size_t n = 0;
    for (auto& [id, evs] : flows) {
        if (evs.size() < 8 || n++ < 20) {
            continue;  // skip the warm-up (cold caches) and anything that is not a WQE
        }
        const json* fetch = nullptr;
        const json* rx_dma = nullptr;
        const json* cqe = nullptr;
        for (const json* e : evs) {
            fetch = e->at("name") == "wqe_fetch" ? e : fetch;
            rx_dma = e->at("name") == "rx_dma" ? e : rx_dma;
            cqe = e->at("name") == "cqe" ? e : cqe;
        }
        ASSERT_TRUE(fetch != nullptr && rx_dma != nullptr && cqe != nullptr) << id;
        // The doorbell that handed this QP to WQE fetch ends where the fetch starts.
        const double fetch_ts = fetch->at("ts").get<double>();
        const json* db = nullptr;
        for (const json* d : doorbells) {
            if (std::abs(end_us(d) - fetch_ts) < 1e-6) {
                db = d;
            }
        }
        ASSERT_NE(db, nullptr) << "no doorbell slice ends at the fetch of " << id;
        fwd_span.push_back((end_us(rx_dma) - db->at("ts").get<double>()) * 1000.0);
        loop_span.push_back((end_us(cqe) - db->at("ts").get<double>()) * 1000.0);
    }
    ASSERT_GE(fwd_span.size(), 50u);
    const double fwd = median(fwd_span);
    const double loop = median(loop_span);

    // Stages tile the span: what they leave out is hand-offs of at most two NIC cycles each
    // (a FIFO write seen on the next edge, a DMA issue) or the one-cycle overlap of a frame's
    // last beat with its first bit on the wire.
    const double cycle_ns = 1000.0 / rnic["clock_mhz"].get<double>();
    const double handoff = 2 * cycle_ns;
    EXPECT_NEAR(forward, fwd, handoff * FORWARD.size()) << "forward stages " << forward;
    // The ACK leaves once the payload write is issued (one hand-off), then the loop closes.
    EXPECT_NEAR(forward + backward, loop, handoff * (FORWARD.size() + BACKWARD.size()))
        << "loop stages " << forward + backward;

    // --- one way: the CPU's doorbell crosses PCIe down, the payload write crosses PCIe up ---
    const json& pcie = rnic["pcie"];
    const double ack_limit = 168;  // Gen3 x16, MPS 256 (PCIe spec tables; reference figures)
    const double tlp_bytes_per_ns = 8.0 * pcie["lanes"].get<double>() * 128.0 / 130.0 / 8.0 *
                                    (1.0 - 16.0 / ack_limit - 4.0 / 1538.0);
    ASSERT_EQ(pcie["gen"], 3);
    ASSERT_EQ(pcie["mps"], 256);
    const double latency = pcie["latency_ns"].get<double>();
    const double doorbell_down = latency + (24 + 8) / tlp_bytes_per_ns;
    const double payload_up = latency + (24 + 8) / tlp_bytes_per_ns;
    const double cqe_up = latency + (24 + 64) / tlp_bytes_per_ns;
    const double host_post = cfg.host.post_ns + cfg.host.mmio_write_ns;
    const double one_way = host_post + doorbell_down + fwd + payload_up;
    EXPECT_GE(one_way, 600.0);
    EXPECT_LE(one_way, 2000.0);

    // --- round trip as the consumer measures it (post to completion reaped) ---
    const double rtt = host_post + doorbell_down + loop + cqe_up + cfg.host.poll_ns;
    EXPECT_NEAR(static_cast<double>(r.latency.p50_ns), rtt, 0.05 * rtt)
        << "post " << host_post << " + MMIO " << doorbell_down << " + NIC loop " << loop
        << " + CQE " << cqe_up << " + poll " << cfg.host.poll_ns;

    RecordProperty("one_way_ns", std::to_string(one_way));
    RecordProperty("forward_stages_ns", std::to_string(forward));
    RecordProperty("rtt_p50_ns", std::to_string(r.latency.p50_ns));
}

}  // namespace
