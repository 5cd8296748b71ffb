// SPDX-License-Identifier: Apache-2.0
// flows.csv and stats.json "fabric".
#include "testbench/output/flows_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace rnic::output {

namespace {

// Nearest rank, as the latency summary.
double rank(std::vector<double> v, double p) {
    if (v.empty()) {
        return 0;
    }
    std::sort(v.begin(), v.end());
    const auto k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::max<size_t>(k, 1) - 1];
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
    uint64_t message_wire = 0;
    for (uint64_t k = 0; k < packets; ++k) {
        message_wire += wire(k);
    }
    const double rate = std::min(t.links[t.node_link[f.src]].cfg.rate_gbps,
                                 t.links[t.node_link[f.dst]].cfg.rate_gbps);
    const double ns_per_byte = 8.0 / rate;
    const size_t switches = t.hops(f.src, f.dst);
    const double serialize = static_cast<double>(message_wire * messages) * ns_per_byte;
    const double per_switch =
        t.sw.pipeline_ns + (t.sw.cut_through ? 0.0 : static_cast<double>(wire(0)) * ns_per_byte);
    const double propagation =
        t.links[t.node_link[f.src]].cfg.propagation_ns * static_cast<double>(switches + 1);
    return serialize + static_cast<double>(switches) * (switches > 0 ? per_switch : 0.0) +
           propagation;
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
