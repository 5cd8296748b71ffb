// SPDX-License-Identifier: Apache-2.0
// Scenario file parsing, --set overrides and cross-checks between sections.
#include "testbench/scenario/scenario_config.h"

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "hw/common/numeric.h"
#include "ndk_shim/ndk_sim.h"

#include <fmt/format.h>

namespace rnic::scenario {

const char* to_string(operation op) {
    switch (op) {
        case operation::WRITE:
            return "write";
        case operation::SEND:
            return "send";
        case operation::READ:
            return "read";
        case operation::MIXED:
            return "mixed";
    }
    return "?";
}

operation operation_of(const workload_config& w, uint32_t q, uint64_t i) {
    if (w.op != operation::MIXED) {
        return w.op;
    }
    // splitmix64 of (seed, q, i): a stateless draw, so both consumers and the tests agree on
    // every message's operation without sharing a generator.
    const uint64_t z = splitmix64(w.seed ^ (uint64_t{q} << 40) ^ (i * SPLITMIX64_GAMMA));
    const uint64_t total = uint64_t{w.mix.write} + w.mix.read + w.mix.send;
    if (total == 0) {
        return operation::WRITE;  // rejected by parse_workload; never divide by 0
    }
    const uint64_t pick = z % total;
    if (pick < w.mix.write) {
        return operation::WRITE;
    }
    return pick < uint64_t{w.mix.write} + w.mix.read ? operation::READ : operation::SEND;
}

const char* to_string(traffic_pattern p) {
    switch (p) {
        case traffic_pattern::PAIRS:
            return "pairs";
        case traffic_pattern::INCAST:
            return "incast";
        case traffic_pattern::PERMUTATION:
            return "permutation";
        case traffic_pattern::ALL_TO_ALL:
            return "all_to_all";
        case traffic_pattern::RING_ALLREDUCE:
            return "ring_allreduce";
        case traffic_pattern::FLOWS:
            return "flows";
        case traffic_pattern::PING_PONG:
            return "ping_pong";
    }
    return "?";
}

namespace {

workload_config parse_workload(config::reader r, const hw::nic_limits& lim, size_t nodes,
                               config::parse_context& ctx) {
    workload_config w;
    {
        std::string p = to_string(w.pattern);
        r.get_one_of("pattern", p,
                     {"pairs", "incast", "permutation", "all_to_all", "ring_allreduce", "flows",
                      "ping_pong"});
        w.pattern = p == "incast"           ? traffic_pattern::INCAST
                    : p == "permutation"    ? traffic_pattern::PERMUTATION
                    : p == "all_to_all"     ? traffic_pattern::ALL_TO_ALL
                    : p == "ring_allreduce" ? traffic_pattern::RING_ALLREDUCE
                    : p == "flows"          ? traffic_pattern::FLOWS
                    : p == "ping_pong"      ? traffic_pattern::PING_PONG
                                            : traffic_pattern::PAIRS;
    }
    const auto node_count = static_cast<uint32_t>(nodes);
    auto node_error = [&](const std::string& key, const nlohmann::json& v) {
        r.error(key, config::describe(v) + " is not a node index in [0, " +
                         std::to_string(node_count - 1) + "] (topology.nodes)");
    };
    // workload.pairs: [[src, dst], ...].
    if (const nlohmann::json* v = r.raw("pairs"); v != nullptr) {
        w.pairs.clear();
        if (!v->is_array() || v->empty()) {
            r.error("pairs", config::describe(*v) +
                                 " is not a non-empty array of [source, "
                                 "destination] node pairs");
        } else {
            for (size_t i = 0; i < v->size(); ++i) {
                const nlohmann::json& e = (*v)[i];
                const std::string key = "pairs." + std::to_string(i);
                if (!e.is_array() || e.size() != 2) {
                    r.error(key, config::describe(e) + " is not a [source, destination] pair");
                    continue;
                }
                bool ok = true;
                for (size_t k = 0; k < 2; ++k) {
                    if (!e[k].is_number_integer() || e[k].get<int64_t>() < 0 ||
                        e[k].get<uint64_t>() >= node_count) {
                        node_error(key + "." + std::to_string(k), e[k]);
                        ok = false;
                    }
                }
                if (ok && e[0] == e[1]) {
                    r.error(key, "a node cannot be its own peer (loopback is not modelled)");
                    ok = false;
                }
                if (ok) {
                    w.pairs.emplace_back(e[0].get<uint32_t>(), e[1].get<uint32_t>());
                }
            }
        }
    }
    {
        nlohmann::json pairs = nlohmann::json::array();
        for (const auto& [a, b] : w.pairs) {
            pairs.push_back({a, b});
        }
        r.set_effective("pairs", pairs);
    }
    // With no nodes (a topology error, reported there) nothing here can be checked.
    r.get("receiver", w.receiver, 0u, ~0u);
    if (w.receiver >= node_count && node_count > 0) {
        node_error("receiver", w.receiver);
    }
    r.get("senders", w.senders, 0u, ~0u);
    if (w.senders >= node_count && node_count > 0) {
        r.error("senders", std::to_string(w.senders) + " senders need more than the " +
                               std::to_string(node_count) + " nodes of the topology");
    }
    // workload.flows: [{"src", "dst", "bytes", "start_ns"}, ...].
    nlohmann::json flows_eff = nlohmann::json::array();
    if (const nlohmann::json* v = r.raw("flows"); v != nullptr) {
        if (!v->is_array()) {
            r.error("flows", config::describe(*v) + " is not an array of flows");
        } else {
            for (size_t i = 0; i < v->size(); ++i) {
                config::reader fr((*v)[i], r.path_of("flows." + std::to_string(i)), ctx);
                flow_entry e;
                fr.get("src", e.src, 0u, ~0u);
                fr.get("dst", e.dst, 0u, ~0u);
                fr.get("bytes", e.bytes, uint64_t{0}, uint64_t{1} << 32);
                fr.get("start_ns", e.start_ns, 0.0, 1e15);
                for (const char* k : {"src", "dst", "bytes"}) {
                    if (!fr.has(k)) {
                        fr.error(k, "missing");
                    }
                }
                fr.finish();
                if (node_count > 0 && e.src >= node_count) {
                    node_error("flows." + std::to_string(i) + ".src", e.src);
                } else if (node_count > 0 && e.dst >= node_count) {
                    node_error("flows." + std::to_string(i) + ".dst", e.dst);
                } else if (e.src == e.dst) {
                    r.error("flows." + std::to_string(i),
                            "a node cannot be its own peer (loopback is not modelled)");
                } else if (e.bytes > lim.max_message) {
                    r.error("flows." + std::to_string(i) + ".bytes",
                            std::to_string(e.bytes) + " exceeds rnic.limits.max_message " +
                                std::to_string(lim.max_message));
                }
                w.flow_list.push_back(e);
                flows_eff.push_back(
                    {{"src", e.src}, {"dst", e.dst}, {"bytes", e.bytes}, {"start_ns", e.start_ns}});
            }
        }
    }
    r.set_effective("flows", flows_eff);
    r.get("cdf", w.cdf_file);
    r.get("load", w.load, 0.001, 1.0);
    r.get("duration_us", w.duration_us, 0.001, 1e9);
    r.get("start_us", w.start_us, 0.0, 1e9);
    if (w.pattern == traffic_pattern::FLOWS && w.flow_list.empty()) {
        if (w.cdf_file.empty()) {
            r.error("pattern", "\"flows\" needs workload.flows or workload.cdf");
        } else {
            std::ifstream in(w.cdf_file);
            if (!in) {
                r.error("cdf", "cannot open \"" + w.cdf_file +
                                   "\" (relative to the scenario's folder or the current folder)");
            } else {
                // "bytes percent" per line, both rising, the percent from 0 to 100.
                std::string line;
                size_t no = 0;
                std::string bad;
                while (std::getline(in, line) && bad.empty()) {
                    ++no;
                    if (line.find_first_not_of(" \t\r") == std::string::npos) {
                        continue;
                    }
                    std::istringstream ls(line);
                    double x = 0;
                    double y = 0;
                    if (!(ls >> x >> y) || x < 0 || y < 0 || y > 100) {
                        bad = "line " + std::to_string(no) + ": not \"bytes percent\"";
                    } else if (!w.cdf.points.empty() && (x < w.cdf.points.back().first ||
                                                         y / 100 < w.cdf.points.back().second)) {
                        bad = "line " + std::to_string(no) + ": not rising";
                    } else {
                        w.cdf.points.emplace_back(x, y / 100);
                    }
                }
                if (bad.empty() && (w.cdf.points.size() < 2 || w.cdf.points.back().second != 1.0)) {
                    bad = "needs at least 2 points, the last at 100 percent";
                }
                if (bad.empty() && w.cdf.points.back().first > lim.max_message) {
                    bad = "its largest flow exceeds rnic.limits.max_message";
                }
                if (!bad.empty()) {
                    r.error("cdf", "\"" + w.cdf_file + "\": " + bad);
                }
            }
        }
    }
    if ((w.pattern == traffic_pattern::PERMUTATION || w.pattern == traffic_pattern::ALL_TO_ALL ||
         w.pattern == traffic_pattern::RING_ALLREDUCE || w.pattern == traffic_pattern::FLOWS ||
         w.pattern == traffic_pattern::INCAST) &&
        node_count == 1) {
        r.error("pattern", "needs at least 2 nodes");
    }
    std::string op = to_string(w.op);
    r.get_one_of("operation", op, {"write", "send", "read", "mixed"});
    w.op = op == "send"    ? operation::SEND
           : op == "read"  ? operation::READ
           : op == "mixed" ? operation::MIXED
                           : operation::WRITE;
    {
        config::reader m = r.child("mix");
        m.get("write", w.mix.write, 0u, 1000000u);
        m.get("read", w.mix.read, 0u, 1000000u);
        m.get("send", w.mix.send, 0u, 1000000u);
        m.finish();
        if (uint64_t{w.mix.write} + w.mix.read + w.mix.send == 0) {
            r.error("mix", "the weights of write, read and send are all 0");
        }
    }
    r.get("message_bytes", w.message_bytes, uint64_t{0}, uint64_t{1} << 32);
    r.get("messages", w.messages, uint64_t{1}, uint64_t{1} << 40);
    r.get("qps", w.qps, 1u, 1u << 20);
    r.get("queue_depth", w.queue_depth, 1u, 1u << 20);
    r.get("seed", w.seed, uint64_t{0}, ~uint64_t{0});
    r.get("signal_every", w.signal_every, 1u, 1u << 20);
    r.get("inline_threshold", w.inline_threshold, 0u, 1u << 20);
    r.get("doorbell_batch", w.doorbell_batch, 1u, 4096u);
    r.get("use_events", w.use_events);
    r.get("time_limit_ms", w.time_limit_ms, 0.0, 1e9);
    r.get("idle_ms", w.idle_ms, 0.0, 1e6);
    r.get("timeout_log", w.timeout_log, 0u, 31u);
    r.get("retry_count", w.retry_count, 0u, 7u);
    r.get("rnr_retry", w.rnr_retry, 0u, 7u);

    // Against the adapter's limits (rnic.limits): what NdkCreateQp/NdkWrite would reject.
    auto over = [&](const char* key, uint64_t value, uint64_t max, const char* what) {
        if (value > max) {
            r.error(key, std::to_string(value) + " exceeds " + what + " " + std::to_string(max));
        }
    };
    over("message_bytes", w.message_bytes, lim.max_message, "rnic.limits.max_message");
    // QPNs 0 (SMI) and 1 (GSI) are reserved: a node's workload QPs get QPNs 2 .. max_qps - 1.
    if (uint64_t{w.qps} + 2 > lim.max_qps) {
        r.error("qps", fmt::format("{} exceeds rnic.limits.max_qps {} - 2 (QPNs 0 and 1 are "
                                   "reserved)",
                                   w.qps, lim.max_qps));
    }
    // SEND (and a mix with SENDs) keeps 2 x queue_depth receives posted (see workload.cpp).
    const bool sends = has_sends(w);
    // Queue depths as the driver offers them: powers of two within the limits (ndk_sim.h).
    auto usable = [](uint32_t limit, const char* key) {
        return limit == ndk::usable_queue_depth(limit)
                   ? std::string(key)
                   : std::string(key) + " " + std::to_string(limit) +
                         " as usable (a power of two):";
    };
    over("queue_depth", sends ? 2ull * w.queue_depth : w.queue_depth,
         ndk::usable_queue_depth(lim.max_qp_depth),
         ((sends ? "(x2 receives for send) " : "") +
          usable(lim.max_qp_depth, "rnic.limits.max_qp_depth"))
             .c_str());
    over("inline_threshold", w.inline_threshold, lim.max_inline, "rnic.limits.max_inline");
    // One CQ per node holds every completion that can be outstanding on it.
    const uint64_t per_qp = (sends ? 2ull : 1ull) * w.queue_depth;
    const uint32_t cq_depth = ndk::usable_queue_depth(lim.max_cq_depth);
    if (uint64_t{w.qps} * per_qp > cq_depth) {
        r.error("qps", std::to_string(w.qps) + " QPs x " + std::to_string(per_qp) +
                           " completions = " + std::to_string(uint64_t{w.qps} * per_qp) +
                           " exceed " + usable(lim.max_cq_depth, "rnic.limits.max_cq_depth") + " " +
                           std::to_string(cq_depth));
    }
    // Send-queue slots are only returned by signaled completions: a window of queue_depth
    // posted WRs must contain a signaled one.
    over("signal_every", w.signal_every, w.queue_depth, "workload.queue_depth");
    if (w.pattern == traffic_pattern::RING_ALLREDUCE && w.op != operation::SEND) {
        r.error("operation",
                "ring_allreduce moves its steps by SEND (the receive completion "
                "tells the next step it may start): use \"send\"");
    }
    if (w.pattern == traffic_pattern::PING_PONG) {
        if (w.op != operation::SEND) {
            r.error("operation",
                    "ping_pong answers each message when its receive completes (ib_send_lat): "
                    "use \"send\"");
        }
        if (w.qps != 1) {
            r.error("qps", std::to_string(w.qps) +
                               ": ping_pong runs one exchange at a time over one QP per pair "
                               "(ib_send_lat): use 1");
        }
    }
    r.finish();
    return w;
}

outputs_config parse_outputs(config::reader r, const hw::nic_limits& lim,
                             const topology_config& topo) {
    outputs_config o;
    r.get("dir", o.dir);
    if (o.dir.empty()) {
        r.error("dir", "\"\" is not a directory name");
    }
    r.get("waves", o.waves);
    r.get("waves_start_ns", o.waves_start_ns, 0.0, 1e18);
    r.get("waves_end_ns", o.waves_end_ns, 0.0, 1e18);
    if (o.waves_end_ns <= o.waves_start_ns) {
        r.error("waves_end_ns",
                fmt::format("{} is not after waves_start_ns {}", o.waves_end_ns, o.waves_start_ns));
    }
    r.get("pcap", o.pcap);
    r.get("trace", o.trace);
    // outputs.pcap_links: names of links (or link directions) to capture.
    nlohmann::json links = nlohmann::json::array();
    if (const nlohmann::json* v = r.raw("pcap_links"); v != nullptr) {
        if (!v->is_array()) {
            r.error("pcap_links", config::describe(*v) + " is not an array of link names");
        } else {
            for (size_t i = 0; i < v->size(); ++i) {
                const nlohmann::json& e = (*v)[i];
                const std::string key = "pcap_links." + std::to_string(i);
                bool known = false;
                for (const auto& l : topo.links) {
                    known = known || (e.is_string() && (e == l.name || e == l.name + ".dir0" ||
                                                        e == l.name + ".dir1"));
                }
                if (!known) {
                    const std::string l0 = topo.links.empty() ? "link" : topo.links[0].name;
                    r.error(key, config::describe(e) + " is not a link: \"" + l0 + "\", \"" + l0 +
                                     ".dir0\" or \"" + l0 + ".dir1\"");
                    continue;
                }
                o.pcap_links.push_back(e.get<std::string>());
                links.push_back(e);
            }
        }
    }
    r.set_effective("pcap_links", links);
    // outputs.waves_qps: QPNs whose context state waves.vcd holds.
    nlohmann::json qps = nlohmann::json::array();
    if (const nlohmann::json* v = r.raw("waves_qps"); v != nullptr) {
        if (!v->is_array()) {
            r.error("waves_qps", config::describe(*v) + " is not an array of QP numbers");
        } else {
            for (size_t i = 0; i < v->size(); ++i) {
                const nlohmann::json& e = (*v)[i];
                const std::string key = "waves_qps." + std::to_string(i);
                if (!e.is_number_unsigned() || e.get<uint64_t>() < 1 ||
                    e.get<uint64_t>() >= lim.max_qps) {
                    r.error(key, config::describe(e) + " is not a QPN in [1, " +
                                     std::to_string(lim.max_qps - 1) + "] (rnic.limits.max_qps)");
                    continue;
                }
                o.waves_qps.push_back(e.get<uint32_t>());
                qps.push_back(e);
            }
        }
    }
    r.set_effective("waves_qps", qps);
    r.get_one_of("trace_format", o.trace_format, {"json", "perfetto"});
    r.get("trace_start_ns", o.trace_start_ns, 0.0, 1e18);
    r.get("trace_end_ns", o.trace_end_ns, 0.0, 1e18);
    if (o.trace_end_ns <= o.trace_start_ns) {
        r.error("trace_end_ns",
                fmt::format("{} is not after trace_start_ns {}", o.trace_end_ns, o.trace_start_ns));
    }
    // outputs.trace_qps / trace_nodes: numbers (QPNs, node indexes).
    auto numbers = [&r](const std::string& key, uint64_t limit, const std::string& what,
                        std::vector<uint32_t>& out) {
        nlohmann::json eff = nlohmann::json::array();
        if (const nlohmann::json* v = r.raw(key); v != nullptr) {
            if (!v->is_array()) {
                r.error(key, config::describe(*v) + " is not an array of " + what);
            } else {
                for (size_t i = 0; i < v->size(); ++i) {
                    const nlohmann::json& e = (*v)[i];
                    if (!e.is_number_unsigned() || e.get<uint64_t>() >= limit) {
                        r.error(key + "." + std::to_string(i),
                                config::describe(e) + " is not one of " + what + " (0 to " +
                                    std::to_string(limit - 1) + ")");
                        continue;
                    }
                    out.push_back(e.get<uint32_t>());
                    eff.push_back(e);
                }
            }
        }
        r.set_effective(key, eff);
    };
    numbers("trace_qps", lim.max_qps, "QP numbers", o.trace_qps);
    numbers("trace_nodes", std::max<uint64_t>(1, topo.nodes.size()), "the topology's nodes",
            o.trace_nodes);
    r.get("report", o.report);
    config::reader ts = r.child("timeseries");
    timeseries_config& t = o.timeseries;
    ts.get("interval_ns", t.interval_ns, 0.0, 1e15);
    ts.get("start_ns", t.start_ns, 0.0, 1e18);
    ts.get("end_ns", t.end_ns, 0.0, 1e18);
    if (t.end_ns <= t.start_ns) {
        ts.error("end_ns", fmt::format("{} is not after start_ns {}", t.end_ns, t.start_ns));
    }
    // timeseries.sample: which columns, from the names below.
    const std::array<std::pair<const char*, bool*>, 6> kinds = {{{"links", &t.links},
                                                                 {"pauses", &t.pauses},
                                                                 {"queues", &t.queues},
                                                                 {"nodes", &t.nodes},
                                                                 {"utilization", &t.utilization},
                                                                 {"cc", &t.cc}}};
    std::string names;
    for (const auto& [k, flag] : kinds) {
        names += std::string(names.empty() ? "" : ", ") + "\"" + k + "\"";
    }
    nlohmann::json sample = nlohmann::json::array();
    if (const nlohmann::json* v = ts.raw("sample"); v != nullptr) {
        if (!v->is_array()) {
            ts.error("sample", config::describe(*v) + " is not an array of " + names);
        } else {
            for (const auto& [k, flag] : kinds) {
                *flag = false;
            }
            for (size_t i = 0; i < v->size(); ++i) {
                const nlohmann::json& e = (*v)[i];
                bool* flag = nullptr;
                for (const auto& [k, f] : kinds) {
                    if (e == k) {
                        flag = f;
                    }
                }
                if (flag == nullptr) {
                    ts.error("sample." + std::to_string(i),
                             config::describe(e) + " is not one of " + names);
                    continue;
                }
                *flag = true;
            }
        }
    }
    for (const auto& [k, flag] : kinds) {
        if (*flag) {
            sample.push_back(k);
        }
    }
    ts.set_effective("sample", sample);
    ts.finish();
    r.finish();
    return o;
}

}  // namespace

scenario_config parse_scenario(const nlohmann::json& j) {
    config::parse_context ctx;
    config::reader root(j, "", ctx);
    scenario_config s;
    s.topology = parse_topology(root.child("topology"), ctx);
    s.rnic = hw::parse_nic_config(root.child("rnic"));
    s.topology.nic_cut_through = s.rnic.recv_path.cut_through;
    s.host = ndk::parse_host_config(root.child("host"));
    s.workload =
        parse_workload(root.child("workload"), s.rnic.limits, s.topology.nodes.size(), ctx);
    s.outputs = parse_outputs(root.child("outputs"), s.rnic.limits, s.topology);
    for (size_t i = 0; i < s.topology.nodes.size(); ++i) {
        if (s.topology.nodes[i].mtu > s.rnic.limits.max_mtu) {
            ctx.errors.push_back("topology.nodes." + std::to_string(i) +
                                 ".mtu: " + std::to_string(s.topology.nodes[i].mtu) +
                                 " exceeds rnic.limits.max_mtu " +
                                 std::to_string(s.rnic.limits.max_mtu));
        }
    }
    // HPCC's signal is the switches' in-band telemetry: a switch that does not stamp it would
    // leave the senders at line rate without a word.
    if (s.rnic.cc.algorithm == "hpcc") {
        for (size_t i = 0; i < s.topology.switches.size(); ++i) {
            if (!s.topology.switches[i].cfg.int_telemetry) {
                ctx.errors.push_back(
                    "topology.switch.int_telemetry: false on switch " +
                    s.topology.switches[i].name +
                    ", but rnic.cc.algorithm \"hpcc\" needs every switch's in-band telemetry "
                    "(set it true)");
                break;
            }
        }
    }
    // The NIC's receive buffer must hold its PFC headroom on every lossless link a node is
    // cabled to, and leave room for XON below XOFF (two largest frames).
    for (size_t i = 0; i < s.topology.nodes.size() && i < s.topology.node_link.size(); ++i) {
        if (s.topology.node_link[i] >= s.topology.links.size()) {
            continue;  // not cabled (a topology error, reported at its own key)
        }
        const fabric::eth_link_config& lc = s.topology.links[s.topology.node_link[i]].cfg;
        if (!lc.pfc || s.rnic.recv_path.pfc_headroom_bytes >= s.rnic.recv_path.fifo_bytes) {
            continue;  // (a headroom given above the buffer is reported at its own key)
        }
        const hw::pfc_thresholds t =
            hw::nic_pfc_thresholds(s.rnic.recv_path, lc.rate_gbps, lc.propagation_ns);
        const uint64_t frame = fabric::eth_wire_bytes(s.rnic.recv_path.max_frame_bytes);
        if (t.xoff < 2 * frame) {
            ctx.errors.push_back(fmt::format(
                "rnic.recv_path.fifo_bytes: {} holds no PFC headroom of {} B for node{}'s link "
                "({} Gb/s, {} ns) plus two largest frames ({} B each): at least {}",
                s.rnic.recv_path.fifo_bytes, t.headroom, i, lc.rate_gbps, lc.propagation_ns, frame,
                t.headroom + 2 * frame));
            break;
        }
    }
    root.finish();
    ctx.throw_if_errors();
    s.effective = ctx.effective;
    return s;
}

std::string apply_override(nlohmann::json& doc, const std::string& assignment) {
    const size_t eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) {
        return "--set " + assignment + ": expected PATH=VALUE";
    }
    const std::string path = assignment.substr(0, eq);
    const std::string text = assignment.substr(eq + 1);
    nlohmann::json value;
    try {
        value = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error&) {
        value = text;  // not JSON: a bare string such as --set workload.operation=send
    }

    nlohmann::json* node = &doc;
    std::string walked;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
        if (key.empty()) {
            return "--set " + assignment + ": empty component in \"" + path + "\"";
        }
        const bool numeric = key.find_first_not_of("0123456789") == std::string::npos;
        if (node->is_null()) {
            *node = numeric ? nlohmann::json::array() : nlohmann::json::object();
        }
        nlohmann::json* next;
        if (node->is_object()) {
            next = &(*node)[key];
        } else if (node->is_array() && numeric && key.size() <= 6) {
            const size_t index = std::stoul(key);
            while (node->size() <= index) {
                node->push_back(nullptr);
            }
            next = &(*node)[index];
        } else {
            return "--set " + assignment + ": " + (walked.empty() ? "(top level)" : walked) +
                   " is " + config::describe(*node) + ", which has no member \"" + key + "\"";
        }
        walked += (walked.empty() ? "" : ".") + key;
        node = next;
        if (dot == std::string::npos) {
            break;
        }
        start = dot + 1;
    }
    *node = std::move(value);
    return "";
}

std::vector<std::string> resolve_file_references(nlohmann::json& doc, const std::string& file) {
    std::vector<std::string> errors;
    // "rnic": {"preset": "configs/hw/NAME.json", ...}: the preset's NIC parameters, then the
    // scenario's own keys on top (a JSON merge patch). Relative to the scenario's folder, then
    // to the working directory.
    if (doc.is_object() && doc.contains("rnic") && doc["rnic"].is_object() &&
        doc["rnic"].contains("preset")) {
        nlohmann::json& rnic = doc["rnic"];
        const nlohmann::json preset_name = rnic["preset"];
        rnic.erase("preset");
        if (!preset_name.is_string()) {
            errors.push_back("rnic.preset: " + config::describe(preset_name) + " is not a string");
        } else {
            const std::string name = preset_name.get<std::string>();
            const size_t slash = file.find_last_of('/');
            const std::string near =
                slash == std::string::npos ? name : file.substr(0, slash + 1) + name;
            std::ifstream p(name.empty() || name[0] == '/' ? name : near);
            if (!p) {
                p.open(name);
            }
            nlohmann::json preset;
            if (!p) {
                errors.push_back("rnic.preset: cannot open \"" + name + "\"");
            } else {
                try {
                    preset = nlohmann::json::parse(p, nullptr, true, /*ignore_comments=*/true);
                } catch (const nlohmann::json::parse_error& e) {
                    errors.push_back("rnic.preset: \"" + name + "\": " + e.what());
                }
            }
            if (preset.is_object()) {
                preset.erase("//");  // the preset's own description
                const nlohmann::json own = rnic;
                preset.merge_patch(own);
                rnic = preset;
            } else if (errors.empty()) {
                errors.push_back("rnic.preset: \"" + name + "\" is not a JSON object");
            }
        }
    }
    // "workload": {"cdf": FILE}: like the preset, relative to the scenario's folder when the file
    // is there, else to the working directory (the path is rewritten, so config.json names the
    // file that was read).
    if (doc.is_object() && doc.contains("workload") && doc["workload"].is_object() &&
        doc["workload"].contains("cdf") && doc["workload"]["cdf"].is_string()) {
        const std::string name = doc["workload"]["cdf"].get<std::string>();
        const size_t slash = file.find_last_of('/');
        if (!name.empty() && name[0] != '/' && slash != std::string::npos) {
            const std::string near = file.substr(0, slash + 1) + name;
            if (std::ifstream(near)) {
                doc["workload"]["cdf"] = near;
            }
        }
    }
    return errors;
}

scenario_config load_scenario(const std::string& file, const std::vector<std::string>& overrides) {
    std::ifstream in(file);
    if (!in) {
        throw config::config_error({file + ": cannot open"});
    }
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text.str(), nullptr, true, /*ignore_comments=*/true);
    } catch (const nlohmann::json::parse_error& e) {
        throw config::config_error({file + ": " + e.what()});
    }
    std::vector<std::string> errors;
    // The overrides first: `--set rnic.preset=FILE` names a preset as the file's own key does.
    for (const auto& o : overrides) {
        std::string err = apply_override(doc, o);
        if (!err.empty()) {
            errors.push_back(std::move(err));
        }
    }
    for (auto& e : resolve_file_references(doc, file)) {
        errors.push_back(std::move(e));
    }
    if (!errors.empty()) {
        throw config::config_error(errors);
    }
    return parse_scenario(doc);
}

}  // namespace rnic::scenario
