// SPDX-License-Identifier: Apache-2.0
// flows.csv and stats.json "fabric".
#include "testbench/output/flows_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "hw/common/numeric.h"

#include <fmt/format.h>

namespace rnic::output {

namespace {

// Nearest rank, as the latency summary.
double rank(std::vector<double> v, double p) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    return nearest_rank(v, p);
}

// Size buckets of the DCTCP / HPCC FCT plots (upper bounds, bytes).
const std::vector<std::pair<uint64_t, const char*>>& buckets() {
    static const std::vector<std::pair<uint64_t, const char*>> b = {{10000, "<=10KB"},
                                                                    {100000, "10KB-100KB"},
                                                                    {1000000, "100KB-1MB"},
                                                                    {10000000, "1MB-10MB"},
                                                                    {~uint64_t{0}, ">10MB"}};
    return b;
}

}  // namespace

bool has_fabric_outputs(const scenario::scenario_config& cfg, const scenario::run_result& r) {
    return cfg.topology.form != "back_to_back" || r.flows.size() > 1;
}

double ideal_fct_ns(const scenario::scenario_config& cfg, const scenario::flow_result& f) {
    const auto& t = cfg.topology;
    const auto& w = cfg.workload;
    const uint32_t mtu = std::min(t.nodes[f.src].mtu, t.nodes[f.dst].mtu);
    const uint64_t len = f.message_bytes;
    const uint64_t messages = f.message_bytes > 0 ? f.bytes / f.message_bytes : 1;
    const uint64_t packets = std::max<uint64_t>(1, (len + mtu - 1) / mtu);
    const bool write = w.op == scenario::operation::WRITE;
    const bool read = w.op == scenario::operation::READ;
    // Wire bytes of packet k of a message (preamble and IFG included).
    auto wire = [&](uint64_t k) {
        const uint64_t payload = std::min<uint64_t>(mtu, len - std::min(len, k * mtu));
        uint64_t frame = 14 + 20 + 8 + 12 + payload + 4;
        if (write && k == 0) {
            frame += 16;  // RETH
        }
        if (read && (k == 0 || k + 1 == packets)) {
            frame += 4;  // AETH
        }
        return std::max<uint64_t>(84, frame + 4 + 8 + 12);
    };
    // The data goes from the READ's responder, else from the flow's source, along one shortest
    // path. Each packet leaves a link's sender when it has arrived (store-and-forward: its last
    // bit; cut-through into a link no faster than the one it came on: its first 8 + 64 bytes),
    // plus the switch's pipeline, and the link is free again (the previous packet's wire
    // bytes sent). The ideal ends with the last packet's last bit at the receiver.
    const uint32_t from = read ? f.dst : f.src;
    const uint32_t to = read ? f.src : f.dst;
    const scenario::topology_config::path path = t.path_between(from, to);
    if (path.links.empty()) {
        return 0;
    }
    const size_t hops = path.links.size();
    // Per hop: ps per byte of its link, its propagation, and (all but the last) the pipeline of
    // the switch it leads into and whether that switch cuts the next hop through.
    std::vector<double> ps_per_byte(hops);
    std::vector<double> propagation_ps(hops);
    std::vector<double> pipeline_ps(hops, 0.0);
    std::vector<uint8_t> cut(hops, 0);
    for (size_t j = 0; j < hops; ++j) {
        const auto& link = t.links[path.links[j]].cfg;
        ps_per_byte[j] = 8000.0 / link.rate_gbps;
        propagation_ps[j] = link.propagation_ns * 1000.0;
    }
    for (size_t j = 0; j + 1 < hops; ++j) {
        const auto& sw = t.switches[path.switches[j]].cfg;
        pipeline_ps[j] = sw.pipeline_ns * 1000.0;
        cut[j] = sw.cut_through && ps_per_byte[j + 1] >= ps_per_byte[j] ? 1 : 0;
    }
    std::vector<double> bytes(packets);
    for (uint64_t k = 0; k < packets; ++k) {
        bytes[k] = static_cast<double>(wire(k));
    }
    const auto header = static_cast<double>(8 + fabric::CUT_THROUGH_BYTES);
    std::vector<double> free_at(hops, 0.0);  // ps: each link's sender is idle from
    double last = 0;                         // ps: the last packet's last bit at the receiver
    for (uint64_t m = 0; m < messages; ++m) {
        for (uint64_t k = 0; k < packets; ++k) {
            const double b = bytes[k];
            const double frame = b - 12;  // preamble to FCS: what the receiver waits for
            double start = 0;
            for (size_t j = 0; j < hops; ++j) {
                start = std::max(start, free_at[j]);
                free_at[j] = start + b * ps_per_byte[j];
                if (j + 1 == hops) {
                    last = start + frame * ps_per_byte[j] + propagation_ps[j];
                    break;
                }
                const double seen = cut[j] != 0 ? std::min(frame, header) : frame;
                start += seen * ps_per_byte[j] + propagation_ps[j] + pipeline_ps[j];
            }
        }
    }
    return last / 1000.0;
}

std::string make_flows_csv(const scenario::scenario_config& cfg, const scenario::run_result& r) {
    std::string s =
        "flow,src,dst,operation,bytes,messages,start_ns,end_ns,fct_ns,ideal_ns,slowdown,complete\n";
    for (size_t i = 0; i < r.flows.size(); ++i) {
        const auto& f = r.flows[i];
        const double ideal = ideal_fct_ns(cfg, f);
        const bool timed = f.complete && f.start_ns >= 0;
        s +=
            fmt::format("{},{},{},{},{},{},{:.0f},{:.0f},{},{:.0f},{},{}\n", i, f.src, f.dst,
                        to_string(cfg.workload.op), f.bytes, f.messages, f.start_ns, f.end_ns,
                        timed ? fmt::format("{:.0f}", f.fct_ns()) : "", ideal,
                        timed ? fmt::format("{:.4f}", f.fct_ns() / ideal) : "", f.complete ? 1 : 0);
    }
    return s;
}

nlohmann::json make_fabric_json(const scenario::scenario_config& cfg,
                                const scenario::run_result& r) {
    nlohmann::json j;
    uint64_t complete = 0;
    std::vector<double> fct;
    std::vector<double> all;
    std::map<std::string, std::vector<double>> by_bucket;
    std::map<uint32_t, std::pair<uint64_t, uint64_t>> node_bytes;  // tx, rx
    double start = -1;
    double end = -1;
    for (const auto& f : r.flows) {
        if (!f.complete || f.start_ns < 0) {
            continue;
        }
        ++complete;
        const double slow = f.fct_ns() / ideal_fct_ns(cfg, f);
        fct.push_back(f.fct_ns());
        all.push_back(slow);
        for (const auto& [upper, name] : buckets()) {
            if (f.bytes <= upper) {
                by_bucket[name].push_back(slow);
                break;
            }
        }
        node_bytes[f.src].first += f.bytes;
        node_bytes[f.dst].second += f.bytes;
        start = start < 0 ? f.start_ns : std::min(start, f.start_ns);
        end = std::max(end, f.end_ns);
    }
    j["flows"] = r.flows.size();
    j["complete"] = complete;
    j["fct_ns"] = {{"p50", rank(fct, 0.5)}, {"p99", rank(fct, 0.99)}, {"max", rank(fct, 1.0)}};
    nlohmann::json slow;
    slow["all"] = {{"count", all.size()}, {"p50", rank(all, 0.5)}, {"p99", rank(all, 0.99)}};
    for (const auto& [name, v] : by_bucket) {
        slow[name] = {{"count", v.size()}, {"p50", rank(v, 0.5)}, {"p99", rank(v, 0.99)}};
    }
    j["slowdown"] = slow;
    // Goodput of each node over the span of all flows (first start to last end).
    nlohmann::json nodes = nlohmann::json::object();
    const double span = end - start;
    for (const auto& [n, b] : node_bytes) {
        nodes["node" + std::to_string(n)] = {
            {"tx_bytes", b.first},
            {"rx_bytes", b.second},
            {"tx_gbps", span > 0 ? static_cast<double>(b.first) * 8.0 / span : 0.0},
            {"rx_gbps", span > 0 ? static_cast<double>(b.second) * 8.0 / span : 0.0}};
    }
    j["nodes"] = nodes;
    return j;
}

}  // namespace rnic::output
