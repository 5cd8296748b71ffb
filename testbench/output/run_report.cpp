// SPDX-License-Identifier: Apache-2.0
// stats.json, speed.json and summary.txt of a run.
#include "testbench/output/run_report.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "testbench/output/flows_report.h"
#include "testbench/output/html_report.h"
#include "testbench/output/output_dir.h"

#include <fmt/format.h>

namespace rnic::output {

namespace {
// "busy_ps" -> "", "up_busy_ps" -> "up"; npos: not a busy-time counter.
bool busy_counter(const std::string& name, std::string& part) {
    static const std::string suffix = "busy_ps";
    if (name.size() < suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
        return false;
    }
    part = name.substr(0, name.size() - suffix.size());
    if (!part.empty() && part.back() == '_') {
        part.pop_back();
    }
    return true;
}
}  // namespace

nlohmann::json make_utilization(const scenario::run_result& r) {
    nlohmann::json u = nlohmann::json::object();
    if (r.duration_ns <= 0) {
        return u;
    }
    for (const auto& [block, counters] : r.blocks.items()) {
        if (!counters.is_object()) {
            continue;
        }
        for (const auto& [name, v] : counters.items()) {
            std::string part;
            if (!v.is_number() || !busy_counter(name, part)) {
                continue;
            }
            const double f = v.get<double>() / (r.duration_ns * 1e3);
            u[part.empty() ? block : block + "." + part] = std::min(1.0, f);
        }
    }
    return u;
}

std::string binding_resource(const nlohmann::json& utilization, double* fraction) {
    std::string best;
    double most = -1;
    for (const auto& [name, v] : utilization.items()) {  // sorted keys: ties go to the first
        if (v.get<double>() > most) {
            most = v.get<double>();
            best = name;
        }
    }
    if (fraction != nullptr) {
        *fraction = most < 0 ? 0 : most;
    }
    return best;
}

namespace {
// stats.json without "blocks" (a null in its place): write_run_outputs writes the blocks'
// counters into the text without copying them into the object.
nlohmann::json stats_json_but_blocks(const scenario::run_result& r, nlohmann::json utilization) {
    nlohmann::json j;
    j["utilization"] = std::move(utilization);
    j["blocks"] = nullptr;
    j["summary"] = {
        {"messages", r.messages},
        {"bytes", r.bytes},
        {"duration_ns", r.duration_ns},
        {"goodput_gbps", r.goodput_gbps},
        {"msg_rate_mpps", r.msg_rate_mpps},
        {"latency_ns",
         {{"samples", r.latency.samples},
          {"avg", r.latency.avg_ns},
          {"p50", r.latency.p50_ns},
          {"p99", r.latency.p99_ns},
          {"max", r.latency.max_ns},
          {"percentiles", r.latency.percentiles}}},
    };
    j["stages"] = r.stages;
    j["stages_by_block"] = r.stages_by_block;
    j["integrity"] = {{"bytes_checked", r.bytes_checked}, {"mismatches", r.mismatches}};
    j["sim"] = {{"simulated_ns", r.simulated_ns}, {"packets", r.packets}};
    j["result"] = {{"passed", r.passed()}, {"failures", r.failures}};
    return j;
}

// Appends value.dump(2) as it would read nested `indent` spaces deep in a dump(2) (the
// layout's line breaks followed by `indent` more spaces). Objects, arrays, integers and keys
// without characters to escape are written here (nlohmann's dump of them goes through its
// escaping byte by byte: 1 % of a 16-host run's instructions); any other value is its dump(2).
void append_dump(std::string& out, const nlohmann::json& v, size_t indent) {
    auto plain = [](const std::string& k) {
        return std::all_of(k.begin(), k.end(), [](char c) {
            const auto u = static_cast<unsigned char>(c);
            return u >= 0x20 && u < 0x7f && c != '"' && c != '\\';
        });
    };
    if (v.is_object() || v.is_array()) {
        if (v.empty()) {
            out += v.is_object() ? "{}" : "[]";
            return;
        }
        out += v.is_object() ? "{\n" : "[\n";
        bool first = true;
        for (auto it = v.begin(); it != v.end(); ++it) {
            if (!first) {
                out += ",\n";
            }
            first = false;
            out.append(indent + 2, ' ');
            if (v.is_object()) {
                if (plain(it.key())) {
                    out += '"';
                    out += it.key();
                    out += '"';
                } else {
                    out += nlohmann::json(it.key()).dump();
                }
                out += ": ";
            }
            append_dump(out, *it, indent + 2);
        }
        out += '\n';
        out.append(indent, ' ');
        out += v.is_object() ? '}' : ']';
        return;
    }
    if (v.is_number_unsigned() || v.is_number_integer()) {
        char buf[24];
        const auto r = v.is_number_unsigned()
                           ? std::to_chars(buf, buf + sizeof buf, v.get<uint64_t>())
                           : std::to_chars(buf, buf + sizeof buf, v.get<int64_t>());
        out.append(buf, r.ptr);
        return;
    }
    // A float, string, boolean, null (one line) or binary (laid out over lines by dump(2)).
    const std::string d = v.dump(2);
    for (size_t from = 0; from < d.size();) {
        const size_t nl = d.find('\n', from);
        if (nl == std::string::npos) {
            out.append(d, from, std::string::npos);
            break;
        }
        out.append(d, from, nl + 1 - from).append(indent, ' ');
        from = nl + 1;
    }
}

// to_file_text(j) with j's top-level member `key` (a null in j) set to `value`. A member of the
// top-level object is dumped at one level of indent: the value's own dump with two spaces after
// each line break (a JSON string holds no raw line break, so every one is the layout's).
std::string to_file_text_with(const nlohmann::json& j, const std::string& key,
                              const nlohmann::json& value) {
    std::string text = to_file_text(j);
    const std::string placeholder = "\n  \"" + key + "\": null";
    const size_t at = text.find(placeholder);
    if (at == std::string::npos) {
        throw std::logic_error("to_file_text_with: no top-level null \"" + key + "\"");
    }
    std::string out;
    out.reserve(text.size() + 64 * 1024);
    out.append(text, 0, at + placeholder.size() - 4);  // up to the null
    append_dump(out, value, 2);
    out.append(text, at + placeholder.size(), std::string::npos);
    return out;
}
}  // namespace

nlohmann::json make_stats_json(const scenario::run_result& r) {
    nlohmann::json j = stats_json_but_blocks(r, make_utilization(r));
    j["blocks"] = r.blocks;
    return j;
}

nlohmann::json make_speed_json(const scenario::run_result& r) {
    const double w = r.wall_s;
    nlohmann::json j = {
        {"wall_s", w},
        {"simulated_ns", r.simulated_ns},
        {"packets", r.packets},
        {"packets_per_wall_s", w > 0 ? static_cast<double>(r.packets) / w : 0.0},
        {"simulated_ns_per_wall_s", w > 0 ? static_cast<double>(r.simulated_ns) / w : 0.0},
        {"delta_cycles", r.delta_cycles},
    };
    if (!r.ranks.empty()) {
        // The load balance of a partitioned run (one entry for a single process): a rank that
        // waits much of its wall time at window ends had less to simulate than the slowest
        // one, or the windows are short (README "Partitioned runs", lookahead).
        nlohmann::json ranks = nlohmann::json::array();
        for (const auto& k : r.ranks) {
            ranks.push_back({{"rank", k.rank},
                             {"delta_cycles", k.delta_cycles},
                             {"windows", k.windows},
                             {"wall_s", k.wall_s},
                             {"wait_s", k.wait_s},
                             {"cpu_s", k.cpu_s},
                             {"wait_fraction", k.wall_s > 0 ? k.wait_s / k.wall_s : 0.0}});
        }
        j["ranks"] = std::move(ranks);
    }
    return j;
}

std::string make_speed_line(const scenario::run_result& r) {
    return fmt::format(
        "rnicsim: simulator speed: {:.3f} s wall, {:.0f} packets/s, {:.0f} "
        "simulated ns per wall second\n",
        r.wall_s, r.wall_s > 0 ? r.packets / r.wall_s : 0.0,
        r.wall_s > 0 ? r.simulated_ns / r.wall_s : 0.0);
}

std::string to_file_text(const nlohmann::json& j) {
    return j.dump(2) + "\n";
}

namespace {
const char* test_name(scenario::operation op) {
    switch (op) {
        case scenario::operation::WRITE:
            return "RDMA_Write";
        case scenario::operation::SEND:
            return "Send";
        case scenario::operation::READ:
            return "RDMA_Read";
        case scenario::operation::MIXED:
            return "Mixed_Write_Read_Send";
    }
    return "?";
}
}  // namespace

namespace {
// summary.txt from the run's utilization (make_utilization) and, on a fabric, its "fabric"
// object (make_fabric_json): write_run_outputs computes them once for both files.
std::string summary_of(const scenario::scenario_config& cfg, const scenario::run_result& r,
                       const nlohmann::json& utilization, const nlohmann::json& fabric) {
    const auto& w = cfg.workload;
    const std::string rule(87, '-');
    std::string s;
    s += rule + "\n";
    s += fmt::format("{:>20}{} BW Test (rnicsim)\n", "", test_name(w.op));
    s += fmt::format(" {:<16}: {:<14} {:<15}: {}\n", "Number of qps", w.qps, "Transport type",
                     "RoCEv2");
    s += fmt::format(" {:<16}: {:<14} {:<15}: {}\n", "Connection type", "RC", "Using SRQ", "OFF");
    s += fmt::format(" {:<16}: {:<14} {:<15}: {}\n", "TX depth", w.queue_depth, "CQ Moderation",
                     w.signal_every);
    s += fmt::format(" {:<16}: {:<14} {:<15}: {}[B]\n", "Mtu",
                     fmt::format("{}[B]", cfg.topology.nodes[0].mtu), "Max inline data",
                     w.inline_threshold);
    s += fmt::format(" {:<16}: {:<14} {:<15}: {}\n", "Link type",
                     fmt::format("Eth {:g}G", cfg.topology.link.rate_gbps), "PCIe",
                     fmt::format("Gen{} x{}", cfg.rnic.pcie.gen, cfg.rnic.pcie.lanes));
    s += fmt::format(" {:<16}: {:<14} {:<15}: {}\n", "Completions",
                     w.use_events ? "events" : "polled", "Seed", w.seed);
    s += rule + "\n";
    s += fmt::format(" {:<10} {:<14} {:<20} {:<14} {:<12} {:<12} {:<12} {}\n", "#bytes",
                     "#iterations", "BW average[Gb/sec]", "MsgRate[Mpps]", "t_avg[usec]",
                     "t_p50[usec]", "t_p99[usec]", "t_max[usec]");
    s += fmt::format(" {:<10} {:<14} {:<20.2f} {:<14.6f} {:<12.3f} {:<12.3f} {:<12.3f} {:.3f}\n",
                     w.message_bytes, r.messages, r.goodput_gbps, r.msg_rate_mpps,
                     r.latency.avg_ns / 1e3, r.latency.p50_ns / 1e3, r.latency.p99_ns / 1e3,
                     r.latency.max_ns / 1e3);
    s += rule + "\n";
    s += fmt::format(" {:<16}: {} bytes checked, {} mismatches\n", "Integrity", r.bytes_checked,
                     r.mismatches);
    s += fmt::format(" {:<16}: {}\n", "Result", r.passed() ? "PASSED" : "FAILED");
    for (const auto& f : r.failures) {
        s += fmt::format("   {}\n", f);
    }
    s += fmt::format(" {:<16}: {:.3f} us, {} packets\n", "Simulated", r.simulated_ns / 1e3,
                     r.packets);
    {
        double f = 0;
        const std::string b = binding_resource(utilization, &f);
        // Below 80% nothing in the NIC, its PCIe link or the wire was saturated: the host's
        // posting or the round trip (latency, window) set the rate.
        if (!b.empty() && f >= 0.8) {
            s += fmt::format(" {:<16}: {} {:.0f}% busy (stats.json \"utilization\")\n", "Bound by",
                             b, f * 100);
        } else if (!b.empty()) {
            s += fmt::format(
                " {:<16}: no resource 80% busy (most: {} {:.0f}%): host posting or round trips\n",
                "Bound by", b, f * 100);
        }
    }
    if (has_fabric_outputs(cfg, r)) {
        // Fabric runs: the table above sums every flow; flows.csv has each one.
        const nlohmann::json& f = fabric;
        s += fmt::format(" {:<16}: {} topology, {} nodes, {} switches, {} links\n", "Fabric",
                         cfg.topology.form, cfg.topology.nodes.size(), cfg.topology.switches.size(),
                         cfg.topology.links.size());
        s += fmt::format(" {:<16}: {} ({}), {} of them complete\n", "Flows",
                         f["flows"].get<uint64_t>(), to_string(cfg.workload.pattern),
                         f["complete"].get<uint64_t>());
        s += fmt::format(
            " {:<16}: p50 {:.3f} us, p99 {:.3f} us; slowdown p50 {:.2f}, p99 {:.2f}\n", "FCT",
            f["fct_ns"]["p50"].get<double>() / 1e3, f["fct_ns"]["p99"].get<double>() / 1e3,
            f["slowdown"]["all"]["p50"].get<double>(), f["slowdown"]["all"]["p99"].get<double>());
    }
    return s;
}
}  // namespace

std::string make_summary(const scenario::scenario_config& cfg, const scenario::run_result& r) {
    return summary_of(cfg, r, make_utilization(r),
                      has_fabric_outputs(cfg, r) ? make_fabric_json(cfg, r) : nlohmann::json());
}

std::string write_run_outputs(const output_dir& dir, const scenario::scenario_config& cfg,
                              const scenario::run_result& r) {
    const bool fabric = has_fabric_outputs(cfg, r);
    nlohmann::json fabric_json = fabric ? make_fabric_json(cfg, r) : nlohmann::json();
    nlohmann::json utilization = make_utilization(r);
    const std::string summary = summary_of(cfg, r, utilization, fabric_json);
    // stats.json: r.blocks (most of it) goes into the text without a copy of it in `stats`.
    nlohmann::json stats = stats_json_but_blocks(r, std::move(utilization));
    if (fabric) {
        // Fabric scenarios: per-flow results (today's single flow back to back keeps its
        // outputs as they were).
        stats["fabric"] = std::move(fabric_json);
        dir.write("flows.csv", make_flows_csv(cfg, r));
    }
    dir.write("stats.json", to_file_text_with(stats, "blocks", r.blocks));
    dir.write("summary.txt", summary);
    dir.write("config.json", to_file_text(cfg.effective));
    if (!r.cc_csv.empty()) {
        dir.write("cc.csv", r.cc_csv);  // congestion control on: rates over time
    }
    if (!r.timeseries_csv.empty()) {
        dir.write("timeseries.csv", r.timeseries_csv);  // outputs.timeseries
    }
    for (const auto& [name, text] : r.files) {  // e.g. divergence.json (lockstep)
        dir.write(name, text);
    }
    if (cfg.outputs.report) {  // the page `rnicsim report DIR` makes of the files just written
        const std::string staged = std::filesystem::path(dir.staged("stats.json")).parent_path();
        // From stats.json's and config.json's values in memory where they parse back the same
        // (parsing the files again was 3 % of a 16-host run's instructions).
        dir.write("report.html", survives_file_round_trip(stats) &&
                                         survives_file_round_trip(r.blocks) &&
                                         survives_file_round_trip(cfg.effective)
                                     ? make_report_html(staged, stats, &r.blocks, cfg.effective)
                                     : make_report_html(staged));
    }
    // The one file that differs between two runs of the same config: kept apart so that
    // every other file is byte for byte the same.
    dir.write("speed.json", to_file_text(make_speed_json(r)));
    return summary;
}

}  // namespace rnic::output
