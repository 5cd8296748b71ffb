// SPDX-License-Identifier: Apache-2.0
// Point folders, done markers and results.csv.
#include "testbench/sweep/results.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "hw/common/config_reader.h"
#include "testbench/output/html_report.h"

namespace rnic::sweep {

namespace fs = std::filesystem;

namespace {

bool read_json(const fs::path& file, nlohmann::json& out) {
    std::ifstream in(file);
    if (!in) {
        return false;
    }
    try {
        out = nlohmann::json::parse(in);
        return true;
    } catch (const nlohmann::json::parse_error&) {
        return false;
    }
}

// The CSV field of the value at `pointer` in `from`; empty when there is none (a point that did
// not finish, or a stat the run did not report).
std::string field_at(const nlohmann::json& from, const std::string& pointer) {
    if (!from.is_object()) {
        return "";
    }
    const nlohmann::json::json_pointer ptr(pointer);
    if (!from.contains(ptr) || from.at(ptr).is_null()) {
        return "";
    }
    return csv_field(format_value(from.at(ptr)));
}

}  // namespace

const std::vector<metric>& metrics() {
    static const std::vector<metric> m = {
        {"messages", "/summary/messages"},
        {"bytes", "/summary/bytes"},
        {"goodput_gbps", "/summary/goodput_gbps"},
        {"msg_rate_mpps", "/summary/msg_rate_mpps"},
        {"latency_avg_ns", "/summary/latency_ns/avg"},
        {"latency_p50_ns", "/summary/latency_ns/p50"},
        {"latency_p99_ns", "/summary/latency_ns/p99"},
        {"latency_max_ns", "/summary/latency_ns/max"},
        {"integrity_bytes_checked", "/integrity/bytes_checked"},
        {"integrity_mismatches", "/integrity/mismatches"},
        {"simulated_ns", "/sim/simulated_ns"},
        {"wall_s", "/wall_s", SPEED_FILE},
        {"packets", "/sim/packets"},
    };
    return m;
}

bool is_results_column(const std::string& name) {
    if (name == "point" || name == "status" || name == "error") {
        return true;
    }
    for (const auto& m : metrics()) {
        if (name == m.column) {
            return true;
        }
    }
    return false;
}

const char* to_string(point_state s) {
    switch (s) {
        case point_state::OK:
            return "ok";
        case point_state::FAILED:
            return "failed";
        case point_state::MISSING:
            return "missing";
    }
    return "?";
}

std::string point_dir(const std::string& out_dir, const point& pt) {
    return (fs::path(out_dir) / POINTS_DIR / pt.id).string();
}

point_record read_point(const std::string& out_dir, const plan& p, const point& pt) {
    point_record rec;
    const fs::path dir = point_dir(out_dir, pt);
    nlohmann::json done;
    if (!read_json(dir / DONE_FILE, done) || !done.is_object()) {
        rec.error = "not run";
        return rec;
    }
    if (done.value("base", std::string()) != p.base ||
        done.value("overrides", nlohmann::json::array()) != nlohmann::json(pt.overrides)) {
        rec.error = "ran with other settings (the sweep file changed); not run with these";
        return rec;
    }
    const bool has_stats = read_json(dir / STATS_FILE, rec.stats);
    if (!has_stats) {
        rec.stats = nullptr;
    }
    if (!read_json(dir / SPEED_FILE, rec.speed)) {
        rec.speed = nullptr;
    }
    const std::string status = done.value("status", std::string());
    if (status == "ok" && has_stats) {
        rec.state = point_state::OK;
    } else if (status == "ok") {
        rec.error = "stats.json is missing or unreadable";
    } else {
        rec.state = point_state::FAILED;
        rec.error = done.value("error", std::string("failed"));
    }
    return rec;
}

std::string csv_field(const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) {
        return s;
    }
    std::string q = "\"";
    for (char c : s) {
        q += c;
        if (c == '"') {
            q += '"';
        }
    }
    return q + "\"";
}

std::string make_results_csv(const std::string& out_dir, const plan& p, results_summary* summary) {
    std::ostringstream csv;
    csv << "point";
    for (const auto& c : p.columns) {
        csv << "," << csv_field(c);
    }
    csv << ",status";
    for (const auto& m : metrics()) {
        csv << "," << m.column;
    }
    for (const auto& c : p.stat_columns) {
        csv << "," << csv_field(c.name);
    }
    csv << ",error\n";
    results_summary counts;
    for (const auto& pt : p.points) {
        const point_record rec = read_point(out_dir, p, pt);
        csv << pt.id;
        for (const auto& v : pt.values) {
            csv << "," << csv_field(format_value(v));
        }
        csv << "," << to_string(rec.state);
        for (const auto& m : metrics()) {
            const nlohmann::json& from = std::string(m.file) == SPEED_FILE ? rec.speed : rec.stats;
            csv << "," << field_at(from, m.pointer);
        }
        for (const auto& c : p.stat_columns) {
            csv << "," << field_at(rec.stats, c.pointer);
        }
        csv << "," << csv_field(rec.state == point_state::OK ? "" : rec.error) << "\n";
        switch (rec.state) {
            case point_state::OK:
                ++counts.ok;
                break;
            case point_state::FAILED:
                ++counts.failed;
                break;
            case point_state::MISSING:
                ++counts.missing;
                break;
        }
    }
    if (summary != nullptr) {
        *summary = counts;
    }
    return csv.str();
}

void write_file_atomic(const std::string& file, const std::string& text) {
    const std::string tmp = file + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        out.close();
        if (!out) {
            throw std::runtime_error(tmp + ": write failed");
        }
    }
    std::error_code ec;
    fs::rename(tmp, file, ec);
    if (ec) {
        throw std::runtime_error(file + ": cannot rename " + tmp + " into place: " + ec.message());
    }
}

results_summary write_results_csv(const std::string& out_dir, const plan& p) {
    results_summary s;
    const std::string text = make_results_csv(out_dir, p, &s);
    write_file_atomic((fs::path(out_dir) / RESULTS_FILE).string(), text);
    // report.html: the points compared, each point's own report linked.
    write_file_atomic((fs::path(out_dir) / "report.html").string(),
                      output::make_sweep_report_html(out_dir));
    return s;
}

plan read_plan(const std::string& out_dir) {
    const fs::path file = fs::path(out_dir) / PLAN_FILE;
    std::ifstream in(file);
    if (!in) {
        throw config::config_error(
            {file.string() + ": cannot open (is " + out_dir + " a sweep's --out folder?)"});
    }
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
        throw config::config_error({file.string() + ": " + e.what()});
    }
    try {
        return plan::from_json(j);
    } catch (const config::config_error& e) {
        std::vector<std::string> errors;
        for (const auto& m : e.errors) {
            errors.push_back(file.string() + ": " + m);
        }
        throw config::config_error(errors);
    }
}

}  // namespace rnic::sweep
