// SPDX-License-Identifier: Apache-2.0
#include "testbench/output/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

namespace rnic::output {

namespace assets {  // cmake/embed.cmake (CMakeLists.txt): Chart.js, report.js, report.css
extern const unsigned char chart_js[];
extern const std::size_t chart_js_size;
extern const unsigned char report_js[];
extern const std::size_t report_js_size;
extern const unsigned char report_css[];
extern const std::size_t report_css_size;
}  // namespace assets

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr size_t MAX_POINTS = 300;  // per time-series line (rates: averaged over groups of rows)
constexpr size_t TOP = 5;           // lines besides the aggregate
constexpr size_t MAX_MAP_ROWS = 40;
constexpr size_t MAX_MAP_COLS = 300;
constexpr size_t MAX_SCATTER = 5000;

std::optional<std::string> read_text(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

json read_json(const fs::path& p) {
    const auto t = read_text(p);
    if (!t) {
        throw std::runtime_error(p.string() + ": cannot read");
    }
    try {
        return json::parse(*t);
    } catch (const json::exception& e) {
        throw std::runtime_error(p.string() + ": not JSON: " + e.what());
    }
}

// A CSV file: header and rows of fields (RFC 4180 quotes).
struct csv {
    std::vector<std::string> head;
    std::vector<std::vector<std::string>> rows;
    int col(const std::string& name) const {
        for (size_t i = 0; i < head.size(); ++i) {
            if (head[i] == name) {
                return static_cast<int>(i);
            }
        }
        return -1;
    }
};

csv parse_csv(const std::string& text) {
    csv c;
    std::vector<std::string> row;
    std::string field;
    bool quoted = false;
    bool any = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (quoted) {
            if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                field += '"';
                ++i;
            } else if (ch == '"') {
                quoted = false;
            } else {
                field += ch;
            }
            continue;
        }
        if (ch == '"') {
            quoted = true;
            any = true;
        } else if (ch == ',') {
            row.push_back(std::move(field));
            field.clear();
            any = true;
        } else if (ch == '\n') {
            row.push_back(std::move(field));
            field.clear();
            (c.head.empty() ? c.head : c.rows.emplace_back()) = std::move(row);
            row.clear();
            any = false;
        } else if (ch != '\r') {
            field += ch;
            any = true;
        }
    }
    if (any) {
        row.push_back(std::move(field));
        (c.head.empty() ? c.head : c.rows.emplace_back()) = std::move(row);
    }
    return c;
}

double num(const std::string& s) {
    try {
        return std::stod(s);
    } catch (const std::exception&) {
        return std::nan("");
    }
}

// Four significant digits: the page stays small and the numbers read as the files say.
double r4(double v) {
    if (!std::isfinite(v)) {
        return 0;
    }
    return std::stod(fmt::format("{:.4g}", v));
}

std::string html_escape(const std::string& s) {
    std::string o;
    for (const char c : s) {
        switch (c) {
            case '&':
                o += "&amp;";
                break;
            case '<':
                o += "&lt;";
                break;
            case '>':
                o += "&gt;";
                break;
            case '"':
                o += "&quot;";
                break;
            default:
                o += c;
        }
    }
    return o;
}

json points(const std::vector<double>& x, const std::vector<double>& y) {
    json p = json::array();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
        p.push_back({r4(x[i]), r4(y[i])});
    }
    return p;
}

json series(const std::string& name, json pts, bool step = false, double width = 0,
            bool aggregate = false) {
    json s = {{"name", name}, {"points", std::move(pts)}};
    if (aggregate) {
        s["aggregate"] = true;
    }
    if (step) {
        s["step"] = true;
    }
    if (width > 0) {
        s["width"] = width;
    }
    return s;
}

json axis(const std::string& label, bool log = false) {
    json a = {{"label", label}};
    if (log) {
        a["log"] = true;
    }
    return a;
}

json chart(const std::string& id, const std::string& title, const std::string& answers,
           const std::string& type, json x, json y, json ser) {
    return {{"id", id}, {"title", title}, {"answers", answers},      {"type", type},
            {"x", x},   {"y", y},         {"series", std::move(ser)}};
}

// ---- timeseries.csv ----

// The file's columns, each averaged over groups of rows so that a line has at most MAX_POINTS
// points (a pause flag becomes the fraction of the group's samples that were paused).
struct sampled {
    std::vector<double> t_us;
    std::vector<std::string> names;
    std::vector<std::vector<double>> cols;  // [column][point]
    std::vector<double> mean;               // over the whole run, per column
    std::vector<double> peak;
};

sampled read_timeseries(const csv& c, size_t max_points) {
    sampled s;
    const size_t rows = c.rows.size();
    const size_t group = std::max<size_t>(1, (rows + max_points - 1) / max_points);
    for (size_t r = 0; r < rows; r += group) {
        const size_t last = std::min(rows, r + group) - 1;
        s.t_us.push_back(num(c.rows[last][0]) / 1e3);
    }
    for (size_t k = 1; k < c.head.size(); ++k) {
        s.names.push_back(c.head[k]);
        std::vector<double> v;
        double sum = 0;
        double peak = 0;
        for (size_t r = 0; r < rows; r += group) {
            const size_t end = std::min(rows, r + group);
            double g = 0;
            for (size_t i = r; i < end; ++i) {
                const double x = k < c.rows[i].size() ? num(c.rows[i][k]) : 0.0;
                const double y = std::isfinite(x) ? x : 0.0;
                g += y;
                sum += y;
                peak = std::max(peak, y);
            }
            v.push_back(g / static_cast<double>(end - r));
        }
        s.cols.push_back(std::move(v));
        s.mean.push_back(rows > 0 ? sum / static_cast<double>(rows) : 0.0);
        s.peak.push_back(peak);
    }
    return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string strip(const std::string& s, const std::string& suffix) {
    return s.substr(0, s.size() - suffix.size());
}

// The columns ending in `suffix`.
std::vector<size_t> columns_of(const sampled& s, const std::string& suffix) {
    std::vector<size_t> out;
    for (size_t i = 0; i < s.names.size(); ++i) {
        if (ends_with(s.names[i], suffix)) {
            out.push_back(i);
        }
    }
    return out;
}

// The `n` columns of `cols` with the largest `by` (ties: file order), nonzero only.
std::vector<size_t> top(const std::vector<size_t>& cols, const std::vector<double>& by, size_t n) {
    std::vector<size_t> t;
    for (size_t c : cols) {
        if (by[c] > 0) {
            t.push_back(c);
        }
    }
    std::stable_sort(t.begin(), t.end(), [&](size_t a, size_t b) { return by[a] > by[b]; });
    t.resize(std::min(t.size(), n));
    return t;
}

// An aggregate line (sum or max over `cols`) and the top few columns by mean.
json aggregate_and_top(const sampled& s, const std::vector<size_t>& cols, const std::string& what,
                       bool use_max, const std::string& suffix, double scale,
                       const std::vector<double>& rank_by) {
    json ser = json::array();
    std::vector<double> agg(s.t_us.size(), 0.0);
    for (size_t c : cols) {
        for (size_t i = 0; i < agg.size(); ++i) {
            agg[i] =
                use_max ? std::max(agg[i], s.cols[c][i] * scale) : agg[i] + s.cols[c][i] * scale;
        }
    }
    const auto best = top(cols, rank_by, TOP);
    if (cols.size() > 1) {
        ser.push_back(series(what, points(s.t_us, agg), false, 2, true));
    }
    for (size_t c : best) {
        std::vector<double> v = s.cols[c];
        for (double& x : v) {
            x *= scale;
        }
        ser.push_back(series(strip(s.names[c], suffix), points(s.t_us, v)));
    }
    return ser;
}

void timeseries_charts(const csv& c, json& charts) {
    const sampled s = read_timeseries(c, MAX_POINTS);
    json t_axis = axis("time (us)");
    if (!s.t_us.empty()) {
        t_axis["min"] = 0;
        t_axis["max"] = r4(s.t_us.back());
    }
    const auto good = columns_of(s, ".goodput_gbps");
    if (!good.empty()) {
        json ser = aggregate_and_top(s, good, fmt::format("all {} nodes", good.size()), false,
                                     ".goodput_gbps", 1.0, s.mean);
        charts.push_back(chart("goodput", "Goodput over time",
                               "How fast did the workload complete data, and when? (completed "
                               "work requests' payload per interval; the busiest nodes)",
                               "line", t_axis, axis("Gbit/s"), ser));
    }
    const auto mpps = columns_of(s, ".mpps");
    if (!mpps.empty()) {
        json ser = aggregate_and_top(s, mpps, fmt::format("all {} nodes", mpps.size()), false,
                                     ".mpps", 1.0, s.mean);
        charts.push_back(chart("msgrate", "Message rate over time",
                               "How many work requests completed per second, and when?", "line",
                               t_axis, axis("million messages/s"), ser));
    }
    const auto links = columns_of(s, ".gbps");
    std::vector<size_t> link_cols;
    for (size_t l : links) {
        if (!ends_with(s.names[l], ".goodput_gbps")) {
            link_cols.push_back(l);
        }
    }
    if (!link_cols.empty()) {
        json ser = json::array();
        for (size_t l : top(link_cols, s.mean, TOP + 1)) {
            ser.push_back(series(strip(s.names[l], ".gbps"), points(s.t_us, s.cols[l])));
        }
        json ch = chart("links", "Busiest link directions",
                        "Which links carried the traffic, and when were they full? (frame bytes "
                        "sent per interval, the busiest of " +
                            std::to_string(link_cols.size()) + " link directions)",
                        "line", t_axis, axis("Gbit/s"), ser);
        if (!ser.empty()) {
            charts.push_back(ch);
        }
    }
    const auto util = columns_of(s, ".util");
    if (!util.empty()) {
        json ser = json::array();
        for (size_t u : top(util, s.mean, TOP + 1)) {
            ser.push_back(series(strip(s.names[u], ".util"), points(s.t_us, s.cols[u])));
        }
        if (!ser.empty()) {
            charts.push_back(chart("utilization", "Busiest resources over time",
                                   "What bound the run, and when? (busy fraction per interval of "
                                   "the most utilized of " +
                                       std::to_string(util.size()) +
                                       " NIC and PCIe resources, stats.json \"utilization\")",
                                   "line", t_axis, axis("busy fraction"), ser));
        }
    }
    const auto queues = columns_of(s, ".queue_bytes");
    if (!queues.empty()) {
        json ser = aggregate_and_top(s, queues, fmt::format("max of {} ports", queues.size()), true,
                                     ".queue_bytes", 1e-3, s.peak);
        charts.push_back(chart("queues", "Switch egress queues over time",
                               "Where and when did queues build up? (bytes queued at each "
                               "sample, all priorities; the ports with the highest peaks)",
                               "line", t_axis, axis("KB queued"), ser));
    }
    const auto paused = columns_of(s, ".paused");
    if (!paused.empty()) {
        std::vector<double> count(s.t_us.size(), 0.0);
        for (size_t p : paused) {
            for (size_t i = 0; i < count.size(); ++i) {
                count[i] += s.cols[p][i];
            }
        }
        json ser = json::array({series("paused link directions", points(s.t_us, count), true, 2)});
        charts.push_back(chart("pauses", "PFC pauses over time",
                               "How many link directions were held by PFC at each moment? (of " +
                                   std::to_string(paused.size()) + ")",
                               "line", t_axis, axis("link directions paused"), ser));
        // The pause map: the directions that paused most, one row each, on a coarser time grid.
        const sampled m = read_timeseries(c, MAX_MAP_COLS);
        const auto mp = columns_of(m, ".paused");
        const auto rows = top(mp, m.mean, MAX_MAP_ROWS);
        json map = {{"id", "pausemap"},
                    {"title", "Pause map"},
                    {"answers",
                     "Which links paused, and when? (one row per link direction that PFC "
                     "paused, the " +
                         std::to_string(rows.size()) + " most paused; darker: paused longer)"},
                    {"type", "heatmap"},
                    {"x", axis("us")},
                    {"times", json::array()},
                    {"rows", json::array()}};
        for (double t : m.t_us) {
            map["times"].push_back(r4(t));
        }
        for (size_t r : rows) {
            json cells = json::array();
            for (double v : m.cols[r]) {
                cells.push_back(r4(v));
            }
            map["rows"].push_back({{"name", strip(m.names[r], ".paused")}, {"cells", cells}});
        }
        if (rows.empty()) {
            map["note"] = "No link direction was paused.";
            map["rows"].push_back(
                {{"name", "(none)"}, {"cells", json::array({0})}});  // an empty map still draws
            map["times"] = json::array({0});
        }
        charts.push_back(map);
    }
}

// ---- stats.json ----

void latency_charts(const json& stats, json& charts) {
    const json* lat = nullptr;
    if (stats.contains("summary") && stats["summary"].contains("latency_ns")) {
        lat = &stats["summary"]["latency_ns"];
    }
    if (lat != nullptr && lat->contains("percentiles") && !(*lat)["percentiles"].empty()) {
        const auto& p = (*lat)["percentiles"];
        std::vector<double> x;
        std::vector<double> y;
        for (size_t i = 0; i < p.size(); ++i) {
            x.push_back(p[i].get<double>() / 1e3);
            y.push_back(static_cast<double>(i));
        }
        json ch =
            chart("latency", "Latency distribution",
                  fmt::format("How long did a work request take from post to completion? "
                              "(CDF of {} samples: p50 {:.3f} us, p99 {:.3f} us)",
                              (*lat)["samples"].get<uint64_t>(), (*lat)["p50"].get<double>() / 1e3,
                              (*lat)["p99"].get<double>() / 1e3),
                  "line", axis("latency (us)"), axis("% of work requests at or below"),
                  json::array({series("post to completion", points(x, y), true, 2)}));
        charts.push_back(ch);
    }
    if (!stats.contains("stages") || stats["stages"].empty()) {
        return;
    }
    // The stages in the order a WQE meets them; others (the send path's opcodes) after the
    // payload DMA.
    static const std::vector<std::string> order = {
        "doorbell", "wqe_fetch", "translation", "payload_dma", "*",  "wire",
        "switch",   "receive",   "rx_dma",      "ack",         "cqe"};
    auto rank = [&](const std::string& s) {
        for (size_t i = 0; i < order.size(); ++i) {
            if (order[i] == s) {
                return i;
            }
        }
        return static_cast<size_t>(4);
    };
    std::vector<std::string> names;
    for (const auto& [k, v] : stats["stages"].items()) {
        names.push_back(k);
    }
    std::stable_sort(names.begin(), names.end(),
                     [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
    json labels = json::array();
    json avg = json::array();
    json p99 = json::array();
    double at = 0;
    for (const auto& n : names) {
        const json& st = stats["stages"][n];
        const double a = st.value("avg_ns", 0.0);
        const double q = st.value("p99_ns", 0.0);
        labels.push_back(fmt::format("{} ({})", n, st.value("count", uint64_t{0})));
        avg.push_back({r4(at), r4(at + a)});
        p99.push_back({r4(at), r4(at + q)});
        at += a;
    }
    json ch = {{"id", "stages"},
               {"title", "Where a work request's time goes"},
               {"answers",
                "Which stage of the NIC and the fabric takes the time? (each stage's average, "
                "starting where the previous one's average ended, and its p99; pipelined stages "
                "overlap in reality, so the sum is longer than the latency)"},
               {"type", "waterfall"},
               {"x", axis("ns")},
               {"labels", labels},
               {"tall", std::max<size_t>(220, 40 + 26 * names.size())},
               {"series", json::array({{{"name", "average"}, {"bars", avg}},
                                       {{"name", "p99"}, {"bars", p99}}})}};
    charts.push_back(ch);
}

// Counters about recovery and errors, summed by the counter's name over blocks of one kind
// (node3.nic.tx_engine and node5.nic.tx_engine are both node*.nic.tx_engine), nonzero only.
json error_table(const json* blocks) {
    static const std::vector<std::string> words = {
        "retrans", "timeout", "nak",  "error", "drop",     "corrupt", "rnr",   "out_of",
        "dup",     "reorder", "fail", "lost",  "mismatch", "retry",   "stomp", "discard",
        "invalid", "resend",  "ecn",  "cnp",   "pause",    "no_route"};
    struct agg {
        double total = 0;
        size_t blocks = 0;
        std::string top;
        double top_value = 0;
    };
    std::map<std::string, agg> rows;
    std::unordered_map<std::string, bool> matched;  // counter name: holds one of the words
    if (blocks != nullptr) {
        for (const auto& [block, counters] : blocks->items()) {
            std::string kind;
            for (size_t i = 0; i < block.size(); ++i) {
                if (std::isdigit(static_cast<unsigned char>(block[i])) != 0) {
                    if (kind.empty() || kind.back() != '*') {
                        kind += '*';
                    }
                } else {
                    kind += block[i];
                }
            }
            if (!counters.is_object()) {
                continue;
            }
            for (const auto& [name, v] : counters.items()) {
                if (!v.is_number() || v.get<double>() <= 0 || ends_with(name, "_ps")) {
                    continue;
                }
                // Every node has the same counter names: each name is matched once.
                auto [known, added] = matched.try_emplace(name, false);
                if (added) {
                    for (const auto& w : words) {
                        known->second = known->second || name.find(w) != std::string::npos;
                    }
                }
                if (!known->second) {
                    continue;
                }
                agg& a = rows[kind + "." + name];
                a.total += v.get<double>();
                ++a.blocks;
                if (v.get<double>() > a.top_value) {
                    a.top_value = v.get<double>();
                    a.top = block;
                }
            }
        }
    }
    json t = {{"title", "Recovery and error counters"},
              {"answers",
               "Did anything go wrong or need recovery? (stats.json counters about drops, "
               "retransmissions, NAKs, timeouts, errors, ECN/CNP and pauses; summed over blocks "
               "of one kind, with the block that counted most)"},
              {"columns", json::array({"counter", "total", "blocks", "most in", "there"})},
              {"rows", json::array()},
              {"empty", "All such counters are zero."}};
    for (const auto& [k, a] : rows) {
        t["rows"].push_back({k, a.total, a.blocks, a.top, a.top_value});
    }
    return t;
}

// ---- cc.csv ----

void cc_chart(const csv& c, json& charts) {
    const int ct = c.col("time_ns");
    const int cn = c.col("node");
    const int cq = c.col("qpn");
    const int cr = c.col("rate_mbps");
    if (ct < 0 || cn < 0 || cq < 0 || cr < 0 || c.rows.empty()) {
        return;
    }
    struct qp {
        std::vector<double> t;
        std::vector<double> rate;
        double min = 1e300;
    };
    std::map<std::pair<uint64_t, uint64_t>, qp> qps;
    double t_end = 0;
    for (const auto& r : c.rows) {
        auto& q = qps[{static_cast<uint64_t>(num(r[cn])), static_cast<uint64_t>(num(r[cq]))}];
        const double t = num(r[ct]) / 1e3;
        const double rate = num(r[cr]) / 1e3;
        if (!q.t.empty() && q.t.back() == t) {
            q.rate.back() = rate;
        } else {
            q.t.push_back(t);
            q.rate.push_back(rate);
        }
        q.min = std::min(q.min, rate);
        t_end = std::max(t_end, t);
    }
    // Mean and minimum over the QPs that have a rate, on a grid of MAX_POINTS instants.
    std::vector<double> grid;
    std::vector<double> mean;
    std::vector<double> low;
    for (size_t i = 1; i <= MAX_POINTS; ++i) {
        const double t = t_end * static_cast<double>(i) / MAX_POINTS;
        double sum = 0;
        double mn = 1e300;
        size_t n = 0;
        for (const auto& [k, q] : qps) {
            const auto it = std::upper_bound(q.t.begin(), q.t.end(), t);
            if (it == q.t.begin()) {
                continue;
            }
            const double r = q.rate[static_cast<size_t>(it - q.t.begin()) - 1];
            sum += r;
            mn = std::min(mn, r);
            ++n;
        }
        if (n > 0) {
            grid.push_back(t);
            mean.push_back(sum / static_cast<double>(n));
            low.push_back(mn);
        }
    }
    json ser = json::array();
    ser.push_back(
        series(fmt::format("mean of {} QPs", qps.size()), points(grid, mean), true, 2, true));
    if (qps.size() > 1) {
        ser.push_back(series("lowest QP", points(grid, low), true, 1.5));
    }
    std::vector<std::pair<double, std::pair<uint64_t, uint64_t>>> order;
    for (const auto& [k, q] : qps) {
        order.push_back({q.min, k});
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < order.size() && i < TOP; ++i) {
        const auto& q = qps[order[i].second];
        std::vector<double> t = q.t;
        std::vector<double> v = q.rate;
        if (t.size() > 2000) {  // every k-th change: the shape stays
            const size_t k = (t.size() + 1999) / 2000;
            std::vector<double> t2;
            std::vector<double> v2;
            for (size_t j = 0; j < t.size(); j += k) {
                t2.push_back(t[j]);
                v2.push_back(v[j]);
            }
            t.swap(t2);
            v.swap(v2);
        }
        ser.push_back(
            series(fmt::format("node{} qp{}", order[i].second.first, order[i].second.second),
                   points(t, v), true));
    }
    charts.push_back(chart("cc", "Congestion-control rates over time",
                           "How did congestion control throttle the QPs? (cc.csv: the mean and "
                           "lowest rate over all QPs, and the QPs cut deepest)",
                           "line", axis("time (us)"), axis("rate (Gbit/s)"), ser));
}

// ---- flows.csv ----

void fct_charts(const csv& c, json& charts) {
    const int cb = c.col("bytes");
    const int cs = c.col("slowdown");
    const int cc = c.col("complete");
    if (cb < 0 || cs < 0 || c.rows.empty()) {
        return;
    }
    std::vector<std::pair<double, double>> flows;  // (bytes, slowdown)
    for (const auto& r : c.rows) {
        const double b = num(r[cb]);
        const double s = num(r[cs]);
        if ((cc < 0 || r[cc] == "1" || r[cc] == "true") && std::isfinite(b) && std::isfinite(s) &&
            b > 0 && s > 0) {
            flows.push_back({b, s});
        }
    }
    if (flows.empty()) {
        return;
    }
    std::vector<double> x;
    std::vector<double> y;
    const size_t step = (flows.size() + MAX_SCATTER - 1) / MAX_SCATTER;
    for (size_t i = 0; i < flows.size(); i += step) {
        x.push_back(flows[i].first);
        y.push_back(flows[i].second);
    }
    // p50 and p99 per power-of-two size bucket (nearest rank).
    std::map<int, std::vector<double>> buckets;
    for (const auto& f : flows) {
        buckets[static_cast<int>(std::floor(std::log2(f.first)))].push_back(f.second);
    }
    std::vector<double> bx;
    std::vector<double> b50;
    std::vector<double> b99;
    auto rank = [](std::vector<double>& v, double p) {
        const auto k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
        return v[std::max<size_t>(k, 1) - 1];
    };
    for (auto& [b, v] : buckets) {
        std::sort(v.begin(), v.end());
        bx.push_back(std::ldexp(1.5, b));
        b50.push_back(rank(v, 0.50));
        b99.push_back(rank(v, 0.99));
    }
    json ser = json::array();
    ser.push_back(series(fmt::format("flows ({})", flows.size()), points(x, y)));
    ser.push_back(series("p50 per size", points(bx, b50), false, 2));
    ser.push_back(series("p99 per size", points(bx, b99), false, 2));
    ser[1]["line"] = true;
    ser[2]["line"] = true;
    json sc = chart("slowdown", "FCT slowdown by flow size",
                    "Which flow sizes suffered? (flow completion time over the same flow alone "
                    "in an empty network; 1 is ideal)",
                    "scatter", axis("flow size (bytes)", true), axis("slowdown", true), ser);
    charts.push_back(sc);
    // CDF of slowdown.
    std::vector<double> s;
    for (const auto& f : flows) {
        s.push_back(f.second);
    }
    std::sort(s.begin(), s.end());
    std::vector<double> cx;
    std::vector<double> cy;
    const size_t n = s.size();
    const size_t cstep = std::max<size_t>(1, n / 500);
    for (size_t i = 0; i < n; i += cstep) {
        cx.push_back(s[i]);
        cy.push_back(100.0 * static_cast<double>(i + 1) / static_cast<double>(n));
    }
    if (cx.back() != s.back() || cy.back() != 100.0) {
        cx.push_back(s.back());
        cy.push_back(100.0);
    }
    charts.push_back(chart("slowdown_cdf", "FCT slowdown CDF",
                           "How many flows finished within k times their ideal time?", "line",
                           axis("slowdown", true), axis("% of flows at or below"),
                           json::array({series("all flows", points(cx, cy), true, 2)})));
}

// ---- the page ----

std::string as_text(const unsigned char* p, std::size_t n) {
    return std::string(reinterpret_cast<const char*>(p), n);
}

// JSON inside <script>: no '<' at all (only strings can hold one), so no "</script>".
std::string script_json(const json& j) {
    std::string s = j.dump();
    std::string o;
    o.reserve(s.size());
    for (const char c : s) {
        if (c == '<') {
            o += "\\u003c";
        } else {
            o += c;
        }
    }
    return o;
}

std::string page(const std::string& title, const std::string& header_html, const json& data) {
    std::string h;
    h += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    h += "<meta name=\"generator\" content=\"rnicsim\">\n";
    h += "<title>" + html_escape(title) + "</title>\n<style>\n";
    h += as_text(assets::report_css, assets::report_css_size);
    h += "</style>\n</head>\n<body>\n<header>\n" + header_html + "</header>\n";
    h += "<main id=\"charts\"></main>\n<main id=\"tables\"></main>\n";
    h += "<script type=\"application/json\" id=\"rnicsim-data\">" + script_json(data) +
         "</script>\n<script>\n";
    h += as_text(assets::chart_js, assets::chart_js_size);
    h += "\n</script>\n<script>\n";
    h += as_text(assets::report_js, assets::report_js_size);
    h += "</script>\n</body>\n</html>\n";
    return h;
}

std::string config_value(const json& cfg, const std::string& pointer) {
    const json::json_pointer p(pointer);
    if (!cfg.contains(p)) {
        return {};
    }
    const json& v = cfg[p];
    return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

std::string make_report_html(const std::string& dir) {
    const fs::path d(dir);
    const json stats = read_json(d / "stats.json");
    return make_report_html(dir, stats, stats.contains("blocks") ? &stats["blocks"] : nullptr,
                            read_json(d / "config.json"));
}

std::string make_report_html(const std::string& dir, const nlohmann::json& stats,
                             const nlohmann::json* blocks, const nlohmann::json& cfg) {
    const fs::path d(dir);
    // Named by its workload, not by its folder: the page is the same wherever the run was
    // written (config.json's outputs.dir is left out below for the same reason).
    json shown = cfg;
    if (shown.contains("outputs") && shown["outputs"].is_object()) {
        shown["outputs"].erase("dir");
    }
    const std::string name = fmt::format("{} {} {} x {} B", config_value(cfg, "/workload/pattern"),
                                         config_value(cfg, "/workload/operation"),
                                         config_value(cfg, "/workload/messages"),
                                         config_value(cfg, "/workload/message_bytes"));

    // Header: verdict, headline figures, configuration, failures, the summary table.
    const bool passed = stats.value("/result/passed"_json_pointer, false);
    std::string hd = "<h1>rnicsim run: " + html_escape(name) + " <span class=\"verdict " +
                     (passed ? "pass\">PASSED" : "fail\">FAILED") + "</span></h1>\n";
    const json& sm = stats.contains("summary") ? stats["summary"] : json::object();
    hd += fmt::format(
        "<div>{} messages, {:.3f} Gbit/s goodput, {:.4f} Mmsg/s, latency p50 {:.3f} us / p99 "
        "{:.3f} us; {} ns simulated, {} packets</div>\n",
        sm.value("messages", uint64_t{0}), sm.value("goodput_gbps", 0.0),
        sm.value("msg_rate_mpps", 0.0),
        sm.contains("latency_ns") ? sm["latency_ns"].value("p50", 0.0) / 1e3 : 0.0,
        sm.contains("latency_ns") ? sm["latency_ns"].value("p99", 0.0) / 1e3 : 0.0,
        stats.value("/sim/simulated_ns"_json_pointer, uint64_t{0}),
        stats.value("/sim/packets"_json_pointer, uint64_t{0}));
    if (stats.contains("/result/failures"_json_pointer)) {
        const json& f = stats["/result/failures"_json_pointer];
        for (size_t i = 0; i < f.size() && i < 20; ++i) {
            hd += "<div class=\"failures\">" + html_escape(f[i].get<std::string>()) + "</div>\n";
        }
    }
    static const std::vector<std::pair<std::string, std::string>> keys = {
        {"pattern", "/workload/pattern"},
        {"operation", "/workload/operation"},
        {"message bytes", "/workload/message_bytes"},
        {"messages", "/workload/messages"},
        {"QPs per flow", "/workload/qps"},
        {"queue depth", "/workload/queue_depth"},
        {"nodes", "/topology/nodes"},
        {"congestion control", "/rnic/cc/algorithm"},
        {"transmit scheduler", "/rnic/tx_engine/scheduler/policy"},
        {"NIC clock MHz", "/rnic/clock_mhz"},
    };
    hd += "<div class=\"cfg\">";
    for (const auto& [label, ptr] : keys) {
        std::string v = config_value(cfg, ptr);
        if (ptr == "/topology/nodes" && cfg.contains(json::json_pointer(ptr))) {
            v = std::to_string(cfg[json::json_pointer(ptr)].size());
        }
        if (!v.empty()) {
            hd += "<b>" + html_escape(label) + "</b><span>" + html_escape(v) + "</span>";
        }
    }
    hd += "</div>\n";
    if (const auto s = read_text(d / "summary.txt")) {
        hd +=
            "<details><summary>summary.txt</summary><pre>" + html_escape(*s) + "</pre></details>\n";
    }
    hd += "<details><summary>config.json</summary><pre>" + html_escape(shown.dump(2)) +
          "</pre></details>\n";

    json data = {{"charts", json::array()}, {"tables", json::array()}};
    json& charts = data["charts"];
    if (const auto t = read_text(d / "timeseries.csv")) {
        timeseries_charts(parse_csv(*t), charts);
    }
    latency_charts(stats, charts);
    if (const auto t = read_text(d / "cc.csv")) {
        cc_chart(parse_csv(*t), charts);
    }
    if (const auto t = read_text(d / "flows.csv")) {
        fct_charts(parse_csv(*t), charts);
    }
    data["tables"].push_back(error_table(blocks));
    if (!read_text(d / "timeseries.csv")) {
        hd +=
            "<p class=\"note\">Goodput, queues and pauses over time need the time series: "
            "rerun with <code>--set outputs.timeseries.interval_ns=1000</code> (or any interval) "
            "and <code>rnicsim report DIR</code>.</p>\n";
    }
    return page("rnicsim: " + name, hd, data);
}

bool survives_file_round_trip(const nlohmann::json& j) {
    if (j.is_number_float()) {
        return std::isfinite(j.get<double>());
    }
    if (j.is_structured()) {
        for (const auto& v : j) {
            if (!survives_file_round_trip(v)) {
                return false;
            }
        }
    }
    return true;
}

std::string make_sweep_report_html(const std::string& dir) {
    const fs::path d(dir);
    const auto text = read_text(d / "results.csv");
    if (!text) {
        throw std::runtime_error((d / "results.csv").string() + ": cannot read");
    }
    const csv c = parse_csv(*text);
    const int cstatus = c.col("status");
    const int cpoint = c.col("point");
    if (cstatus < 0 || cpoint < 0) {
        throw std::runtime_error((d / "results.csv").string() + ": no point/status columns");
    }
    // The parameters are the columns between "point" and "status".
    std::vector<int> params;
    for (int i = cpoint + 1; i < cstatus; ++i) {
        params.push_back(i);
    }
    static const std::vector<std::string> metrics = {
        "goodput_gbps", "msg_rate_mpps", "latency_p50_ns", "latency_p99_ns", "latency_max_ns"};
    json data = {{"charts", json::array()}, {"tables", json::array()}};
    // x: the first numeric parameter; one line per value of the others.
    int xcol = -1;
    for (int p : params) {
        bool numeric = !c.rows.empty();
        for (const auto& r : c.rows) {
            numeric = numeric && std::isfinite(num(r[static_cast<size_t>(p)]));
        }
        if (numeric) {
            xcol = p;
            break;
        }
    }
    for (const auto& m : metrics) {
        const int mc = c.col(m);
        if (mc < 0) {
            continue;
        }
        std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> lines;
        std::vector<std::string> order;
        for (size_t i = 0; i < c.rows.size(); ++i) {
            const auto& r = c.rows[i];
            if (r[static_cast<size_t>(cstatus)] != "ok") {
                continue;
            }
            std::string key;
            for (int p : params) {
                if (p != xcol) {
                    key += (key.empty() ? "" : ", ") + c.head[static_cast<size_t>(p)] + "=" +
                           r[static_cast<size_t>(p)];
                }
            }
            if (key.empty()) {
                key = m;
            }
            if (lines.find(key) == lines.end()) {
                order.push_back(key);
            }
            auto& l = lines[key];
            l.first.push_back(xcol >= 0 ? num(r[static_cast<size_t>(xcol)])
                                        : static_cast<double>(i));
            l.second.push_back(num(r[static_cast<size_t>(mc)]));
        }
        json ser = json::array();
        for (size_t k = 0; k < order.size() && k < 8; ++k) {
            ser.push_back(series(order[k], points(lines[order[k]].first, lines[order[k]].second)));
            ser.back()["line"] = true;
        }
        if (!ser.empty()) {
            data["charts"].push_back(
                chart("sweep_" + m, m, "results.csv: " + m + " at each point", "scatter",
                      axis(xcol >= 0 ? c.head[static_cast<size_t>(xcol)] : "point"), axis(m), ser));
        }
    }
    std::string hd = "<h1>rnicsim sweep: " + html_escape(d.filename().string()) + "</h1>\n";
    hd += "<table><tr><th>point</th>";
    for (int p : params) {
        hd += "<th>" + html_escape(c.head[static_cast<size_t>(p)]) + "</th>";
    }
    hd += "<th>status</th><th>goodput Gbit/s</th><th>report</th></tr>\n";
    const int cg = c.col("goodput_gbps");
    for (const auto& r : c.rows) {
        const std::string id = r[static_cast<size_t>(cpoint)];
        hd += "<tr><td>" + html_escape(id) + "</td>";
        for (int p : params) {
            hd += "<td>" + html_escape(r[static_cast<size_t>(p)]) + "</td>";
        }
        hd += "<td>" + html_escape(r[static_cast<size_t>(cstatus)]) + "</td><td>" +
              (cg >= 0 ? html_escape(r[static_cast<size_t>(cg)]) : "") + "</td><td>";
        const std::string rel = "points/" + id + "/report.html";
        if (fs::exists(d / rel)) {
            hd += "<a href=\"" + html_escape(rel) + "\">report</a>";
        }
        hd += "</td></tr>\n";
    }
    hd += "</table>\n";
    return page("rnicsim sweep: " + d.filename().string(), hd, data);
}

}  // namespace rnic::output
