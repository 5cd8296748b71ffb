// SPDX-License-Identifier: Apache-2.0
// Scenario file parsing, --set overrides and cross-checks between sections.
#include "testbench/scenario/scenario_config.h"

#include <cstdio>
#include <fstream>
#include <sstream>

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
    uint64_t z = w.seed ^ (uint64_t{q} << 40) ^ (i * 0x9E3779B97F4A7C15ull);
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
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

bool parse_mac(const std::string& s, std::array<uint8_t, 6>& out) {
    // Exactly six two-digit hex groups separated by ':'.
    if (s.size() != 17) {
        return false;
    }
    std::array<uint8_t, 6> mac{};
    for (size_t i = 0; i < 6; ++i) {
        const size_t p = i * 3;
        if (i > 0 && s[p - 1] != ':') {
            return false;
        }
        unsigned v = 0;
        for (size_t k = 0; k < 2; ++k) {
            const char c = s[p + k];
            unsigned d;
            if (c >= '0' && c <= '9') {
                d = c - '0';
            } else if (c >= 'a' && c <= 'f') {
                d = c - 'a' + 10;
            } else if (c >= 'A' && c <= 'F') {
                d = c - 'A' + 10;
            } else {
                return false;
            }
            v = v * 16 + d;
        }
        mac[i] = static_cast<uint8_t>(v);
    }
    out = mac;
    return true;
}

bool parse_ipv4(const std::string& s, uint32_t& out) {
    uint32_t ip = 0;
    size_t pos = 0;
    for (int part = 0; part < 4; ++part) {
        if (part > 0) {
            if (pos >= s.size() || s[pos] != '.') {
                return false;
            }
            ++pos;
        }
        size_t digits = 0;
        unsigned v = 0;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && digits < 4) {
            v = v * 10 + (s[pos] - '0');
            ++pos;
            ++digits;
        }
        if (digits == 0 || digits > 3 || v > 255) {
            return false;
        }
        ip = (ip << 8) | v;
    }
    if (pos != s.size()) {
        return false;
    }
    out = ip;
    return true;
}

std::string format_mac(const std::array<uint8_t, 6>& mac) {
    char buf[18];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                  mac[4], mac[5]);
    return buf;
}

std::string format_ipv4(uint32_t ip) {
    return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 0xff) + "." +
           std::to_string((ip >> 8) & 0xff) + "." + std::to_string(ip & 0xff);
}

namespace {

node_config parse_node(config::reader r, size_t index) {
    node_config n;
    n.mac = {0x02, 0x00, 0x00, 0x00, 0x00, static_cast<uint8_t>(index + 1)};
    n.ip = (10u << 24) | static_cast<uint32_t>(index + 1);  // 10.0.0.<index+1>
    std::string mac = format_mac(n.mac);
    std::string ip = format_ipv4(n.ip);
    r.get("mac", mac);
    if (r.has("mac") && !parse_mac(mac, n.mac)) {
        r.error("mac", nlohmann::json(mac).dump() + " is not a MAC address like 02:00:00:00:00:01");
    }
    r.get("ip", ip);
    if (r.has("ip") && !parse_ipv4(ip, n.ip)) {
        r.error("ip", nlohmann::json(ip).dump() + " is not an IPv4 address like 10.0.0.1");
    }
    r.get_one_of("mtu", n.mtu, {256u, 512u, 1024u, 2048u, 4096u});
    r.finish();
    return n;
}

// topology.nodes is an array; its elements are read with paths topology.nodes.<i>, which is
// also how --set addresses them.
topology_config parse_topology(config::reader r, config::parse_context& ctx) {
    topology_config t;
    const nlohmann::json* nodes = r.raw("nodes");
    const bool nodes_ok = nodes == nullptr || (nodes->is_array() && nodes->size() == NODES);
    if (!nodes_ok) {
        r.error("nodes", nodes->is_array()
                             ? std::to_string(nodes->size()) + " nodes given, exactly " +
                                   std::to_string(NODES) + " are modelled"
                             : config::describe(*nodes) + " is not an array of " +
                                   std::to_string(NODES) + " nodes");
    }
    for (size_t i = 0; i < NODES; ++i) {
        const nlohmann::json elem =
            nodes_ok && nodes != nullptr ? (*nodes)[i] : nlohmann::json::object();
        t.nodes[i] =
            parse_node(config::reader(elem, r.path_of("nodes." + std::to_string(i)), ctx), i);
    }
    t.link = fabric::parse_eth_link_config(r.child("link"));
    for (size_t i = 1; i < NODES; ++i) {
        if (t.nodes[i].mac == t.nodes[0].mac) {
            r.error("nodes." + std::to_string(i) + ".mac",
                    "\"" + format_mac(t.nodes[i].mac) + "\" is also node 0's MAC");
        }
        if (t.nodes[i].ip == t.nodes[0].ip) {
            r.error("nodes." + std::to_string(i) + ".ip",
                    "\"" + format_ipv4(t.nodes[i].ip) + "\" is also node 0's IP");
        }
    }
    r.finish();
    return t;
}

workload_config parse_workload(config::reader r, const hw::nic_limits& lim) {
    workload_config w;
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
    r.finish();
    return w;
}

outputs_config parse_outputs(config::reader r, const hw::nic_limits& lim) {
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
                if (!e.is_string() || (e != "link" && e != "link.dir0" && e != "link.dir1")) {
                    r.error(key, config::describe(e) +
                                     " is not a link: \"link\", \"link.dir0\" or \"link.dir1\"");
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
    s.host = ndk::parse_host_config(root.child("host"));
    s.workload = parse_workload(root.child("workload"), s.rnic.limits);
    s.outputs = parse_outputs(root.child("outputs"), s.rnic.limits);
    for (size_t i = 0; i < NODES; ++i) {
        if (s.topology.nodes[i].mtu > s.rnic.limits.max_mtu) {
            ctx.errors.push_back("topology.nodes." + std::to_string(i) +
                                 ".mtu: " + std::to_string(s.topology.nodes[i].mtu) +
                                 " exceeds rnic.limits.max_mtu " +
                                 std::to_string(s.rnic.limits.max_mtu));
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
    for (const auto& o : overrides) {
        std::string err = apply_override(doc, o);
        if (!err.empty()) {
            errors.push_back(std::move(err));
        }
    }
    if (!errors.empty()) {
        throw config::config_error(errors);
    }
    return parse_scenario(doc);
}

}  // namespace rnic::scenario
