// SPDX-License-Identifier: Apache-2.0
// report.html: a run's results as one self-contained page that opens offline (double-click):
// the verdict and the configuration, then charts drawn by Chart.js (Debian's libjs-chart.js,
// inlined into the page with the page's own script, testbench/output/report/) from the files of
// the run's folder: stats.json, config.json, summary.txt and, when present, timeseries.csv,
// flows.csv and cc.csv. Data with one line per node, link or QP is reduced to an aggregate and
// the top few (by mean or peak) so that a chart stays readable at a thousand QPs or nodes. The
// page is a function of those files alone (no time stamps, no paths): two runs of the same
// config, on one process or many ranks, give the same bytes.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace rnic::output {

// The report of the run whose files are in `dir` (stats.json and config.json are needed).
// Throws std::runtime_error naming the file that is missing or malformed.
std::string make_report_html(const std::string& dir);
// The same page from stats.json and config.json as the run holds them in memory (what the two
// files parse to; see survives_file_round_trip), stats.json's "blocks" given apart (nullptr:
// none), the other files still read from `dir`: the run writes its report without parsing the
// files it has just written.
std::string make_report_html(const std::string& dir, const nlohmann::json& stats,
                             const nlohmann::json* blocks, const nlohmann::json& config);
// Whether `j` parses back from its dump() as the same values: false if it holds a NaN or an
// infinity (dump() writes them as null).
bool survives_file_round_trip(const nlohmann::json& j);

// A sweep's report (DIR holds results.csv, plan.json and points/<id>/): results.csv as curves
// of each numeric result against the swept parameter, and a table linking each point's
// report.html.
std::string make_sweep_report_html(const std::string& dir);

}  // namespace rnic::output
