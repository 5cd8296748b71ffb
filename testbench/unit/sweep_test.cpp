// SPDX-License-Identifier: Apache-2.0
// Sweeps: sweep file parsing and its errors, grid/zip expansion, the up-front check of every
// point, results.csv, the local runner (failures, crashes, resume, interruption) against a
// stand-in for `rnicsim run`, and the Slurm script and submission against a stand-in sbatch.
#include "testbench/sweep/sweep.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hw/common/config_reader.h"
#include "testbench/common/cli_run.h"
#include "testbench/sweep/results.h"
#include "testbench/sweep/runner.h"
#include "testbench/sweep/slurm.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using rnic::testing::read_file;
using rnic::testing::source_dir;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace rnic::sweep;

std::string quickstart() {
    return source_dir() + "/configs/quickstart.json";
}

struct scratch {
    std::string dir;
    scratch() {
        std::string t = (fs::temp_directory_path() / "rnic_sweep_test_XXXXXX").string();
        dir = mkdtemp(t.data());
    }
    ~scratch() { fs::remove_all(dir); }
    std::string path(const std::string& name) const { return dir + "/" + name; }
    std::string write(const std::string& name, const std::string& text, bool exec = false) const {
        const std::string p = path(name);
        fs::create_directories(fs::path(p).parent_path());
        std::ofstream(p) << text;
        if (exec) {
            chmod(p.c_str(), 0755);
        }
        return p;
    }
};

// Every error of parsing `doc` (empty when it parses).
std::vector<std::string> sweep_errors(const json& doc, const std::string& dir = "/cfg") {
    try {
        (void)parse_sweep(doc, dir);
    } catch (const rnic::config::config_error& e) {
        return e.errors;
    }
    return {};
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& e : v) {
        s += e + "\n";
    }
    return s;
}

bool has_error_starting(const std::vector<std::string>& errors, const std::string& prefix) {
    return std::any_of(errors.begin(), errors.end(),
                       [&](const std::string& e) { return e.rfind(prefix, 0) == 0; });
}

// One CSV record per line (the runner's CSV never breaks lines inside a field), RFC 4180 quotes.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> row;
        std::string field;
        bool quoted = false;
        for (size_t i = 0; i < line.size(); ++i) {
            const char c = line[i];
            if (quoted) {
                if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
                    field += '"';
                    ++i;
                } else if (c == '"') {
                    quoted = false;
                } else {
                    field += c;
                }
            } else if (c == '"') {
                quoted = true;
            } else if (c == ',') {
                row.push_back(field);
                field.clear();
            } else {
                field += c;
            }
        }
        row.push_back(field);
        rows.push_back(row);
    }
    return rows;
}

// results.csv as one map per row, column name -> cell.
std::vector<std::map<std::string, std::string>> csv_rows(const std::string& text) {
    const auto rows = parse_csv(text);
    std::vector<std::map<std::string, std::string>> out;
    for (size_t r = 1; r < rows.size(); ++r) {
        std::map<std::string, std::string> m;
        for (size_t c = 0; c < rows[0].size() && c < rows[r].size(); ++c) {
            m[rows[0][c]] = rows[r][c];
        }
        out.push_back(m);
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// Sweep files

TEST(SweepFile, ParsesGridZipSetAndResolvesBase) {
    const json doc = json::parse(R"({
      "description": "sizes by op",
      "base": "../quickstart.json",
      "set": {"workload.messages": 16, "host.memory_latency_ns": 80},
      "parameters": [
        {"path": "workload.operation", "values": ["write", "read"]},
        {"zip": [
          {"name": "size", "path": "workload.message_bytes", "values": [64, 4096]},
          {"paths": ["topology.nodes.0.mtu", "topology.nodes.1.mtu"], "name": "mtu",
           "values": [256, 4096]}
        ]}
      ]
    })");
    const sweep_spec s = parse_sweep(doc, "/work/configs/sweeps");
    EXPECT_EQ(s.description, "sizes by op");
    EXPECT_EQ(s.base, "/work/configs/quickstart.json");
    ASSERT_EQ(s.fixed.size(), 2u);
    EXPECT_EQ(s.fixed[0].first, "host.memory_latency_ns");  // JSON objects are sorted by key
    EXPECT_EQ(s.fixed[1].second, json(16));
    ASSERT_EQ(s.axes.size(), 2u);
    ASSERT_EQ(s.axes[0].params.size(), 1u);
    EXPECT_EQ(s.axes[0].params[0].name, "workload.operation");  // the path when unnamed
    EXPECT_EQ(s.axes[0].params[0].origin, "parameters.0");
    ASSERT_EQ(s.axes[1].params.size(), 2u);
    EXPECT_EQ(s.axes[1].size(), 2u);
    EXPECT_EQ(s.axes[1].params[0].name, "size");
    EXPECT_EQ(s.axes[1].params[1].paths.size(), 2u);
    EXPECT_EQ(s.axes[1].params[1].origin, "parameters.1.zip.1");
}

TEST(SweepFile, AbsoluteBaseIsKept) {
    const sweep_spec s = parse_sweep(
        json::parse(
            R"({"base": "/a/b/../c.json", "parameters": [{"path": "x.y", "values": [1]}]})"),
        "/elsewhere");
    EXPECT_EQ(s.base, "/a/c.json");
}

TEST(SweepFile, RangeStepAndFactor) {
    const sweep_spec s = parse_sweep(json::parse(R"({"base": "b.json", "parameters": [
        {"path": "a.geo", "range": {"from": 64, "to": 1048576, "factor": 4}},
        {"path": "a.lin", "range": {"from": 1, "to": 10, "step": 3}},
        {"path": "a.flt", "range": {"from": 0.5, "to": 1.0, "step": 0.1}}
    ]})"),
                                     "/d");
    const auto& geo = s.axes[0].params[0].values;
    ASSERT_EQ(geo.size(), 8u);  // 64, 256, ..., 1 MiB
    EXPECT_EQ(geo.front(), json(64));
    EXPECT_EQ(geo.back(), json(1048576));
    EXPECT_TRUE(geo[1].is_number_integer());
    EXPECT_EQ(s.axes[1].params[0].values, (std::vector<json>{1, 4, 7, 10}));
    const auto& flt = s.axes[2].params[0].values;
    ASSERT_EQ(flt.size(), 6u);  // 0.5 .. 1.0 despite rounding
    EXPECT_TRUE(flt[0].is_number_float());
    EXPECT_NEAR(flt.back().get<double>(), 1.0, 1e-9);
}

struct error_case {
    const char* name;
    const char* doc;
    const char* expected;  // the start of one error
};

TEST(SweepFile, EveryErrorNamesItsJsonPath) {
    const error_case cases[] = {
        {"not an object", R"([1, 2])", "(top level): an array is not an object"},
        {"unknown top-level key", R"({"base": "b", "parameters": [{"path": "a.b", "values": [1]}],
           "paramters": []})",
         "paramters: unknown key"},
        {"description type", R"({"base": "b", "description": 3,
           "parameters": [{"path": "a.b", "values": [1]}]})",
         "description: 3 is not a string"},
        {"base missing", R"({"parameters": [{"path": "a.b", "values": [1]}]})", "base: missing"},
        {"base type", R"({"base": 3, "parameters": [{"path": "a.b", "values": [1]}]})",
         "base: 3 is not a file name"},
        {"parameters missing", R"({"base": "b"})", "parameters: missing"},
        {"parameters empty", R"({"base": "b", "parameters": []})", "parameters: empty"},
        {"parameters type", R"({"base": "b", "parameters": {"a": 1}})",
         "parameters: an object is not an array"},
        {"parameter type", R"({"base": "b", "parameters": [3]})",
         "parameters.0: 3 is not an object"},
        {"path missing", R"({"base": "b", "parameters": [{"values": [1]}]})",
         "parameters.0.path: missing"},
        {"path and paths", R"({"base": "b", "parameters": [{"path": "a.b", "paths": ["a.c"],
           "values": [1]}]})",
         "parameters.0.paths: give path or paths, not both"},
        {"path type", R"({"base": "b", "parameters": [{"path": 5, "values": [1]}]})",
         "parameters.0.path: 5 is not a string"},
        {"path syntax", R"({"base": "b", "parameters": [{"path": "workload..x", "values": [1]}]})",
         "parameters.0.path: \"workload..x\" is not a config path"},
        {"paths element", R"({"base": "b", "parameters": [{"paths": ["a.b", 7], "values": [1]}]})",
         "parameters.0.paths.1: 7 is not a config path"},
        {"paths empty", R"({"base": "b", "parameters": [{"paths": [], "values": [1]}]})",
         "parameters.0.paths: empty"},
        {"outputs.dir",
         R"({"base": "b", "parameters": [{"path": "outputs.dir", "values": ["x"]}]})",
         "parameters.0.path: outputs.dir is chosen by the sweep"},
        {"values missing", R"({"base": "b", "parameters": [{"path": "a.b"}]})",
         "parameters.0.values: missing"},
        {"values empty", R"({"base": "b", "parameters": [{"path": "a.b", "values": []}]})",
         "parameters.0.values: empty"},
        {"values null", R"({"base": "b", "parameters": [{"path": "a.b", "values": [1, null]}]})",
         "parameters.0.values.1: null is not a config value"},
        {"values and range", R"({"base": "b", "parameters": [{"path": "a.b", "values": [1],
           "range": {"from": 1, "to": 2, "step": 1}}]})",
         "parameters.0.range: give values or range, not both"},
        {"range from", R"({"base": "b", "parameters": [{"path": "a.b",
           "range": {"to": 2, "step": 1}}]})",
         "parameters.0.range.from: missing"},
        {"range to type", R"({"base": "b", "parameters": [{"path": "a.b",
           "range": {"from": 1, "to": "x", "step": 1}}]})",
         "parameters.0.range.to: \"x\" is not a number"},
        {"range backwards", R"({"base": "b", "parameters": [{"path": "a.b",
           "range": {"from": 5, "to": 2, "step": 1}}]})",
         "parameters.0.range.to: 2 is below from (5)"},
        {"range step zero", R"({"base": "b", "parameters": [{"path": "a.b",
           "range": {"from": 1, "to": 2, "step": 0}}]})",
         "parameters.0.range.step: 0 is not above 0"},
        {"range factor one", R"({"base": "b", "parameters": [{"path": "a.b",
           "range": {"from": 1, "to": 2, "factor": 1}}]})",
         "parameters.0.range.factor: 1 is not above 1"},
        {"range both", R"({"base": "b", "parameters": [{"path": "a.b",
           "range": {"from": 1, "to": 2, "factor": 2, "step": 1}}]})",
         "parameters.0.range.factor: give step or factor, not both"},
        {"range neither", R"({"base": "b", "parameters": [{"path": "a.b",
           "range": {"from": 1, "to": 2}}]})",
         "parameters.0.range.step: missing"},
        {"range unknown key", R"({"base": "b", "parameters": [{"path": "a.b",
           "range": {"from": 1, "to": 2, "step": 1, "stop": 3}}]})",
         "parameters.0.range.stop: unknown key"},
        {"range too long", R"({"base": "b", "parameters": [{"path": "a.b",
           "range": {"from": 1, "to": 1000000, "step": 1}}]})",
         "parameters.0.range.to: more than 100000 values"},
        {"parameter unknown key", R"({"base": "b", "parameters": [{"path": "a.b", "value": [1],
           "values": [1]}]})",
         "parameters.0.value: unknown key"},
        {"name type",
         R"({"base": "b", "parameters": [{"path": "a.b", "name": "", "values": [1]}]})",
         "parameters.0.name: \"\" is not a non-empty string"},
        {"name reserved", R"({"base": "b", "parameters": [{"path": "a.b", "name": "status",
           "values": [1]}]})",
         "parameters.0.name: \"status\" is a column results.csv already has"},
        {"name comma", R"({"base": "b", "parameters": [{"path": "a.b", "name": "a,b",
           "values": [1]}]})",
         "parameters.0.name: \"a,b\" holds a comma"},
        {"duplicate name", R"({"base": "b", "parameters": [
           {"path": "a.b", "name": "x", "values": [1]}, {"path": "a.c", "name": "x", "values": [1]}]})",
         "parameters.1.name: \"x\" is also the name of parameters.0"},
        {"duplicate path", R"({"base": "b", "parameters": [
           {"path": "a.b", "values": [1]}, {"path": "a.b", "name": "y", "values": [2]}]})",
         "parameters.1.path: a.b is also set by parameters.0"},
        {"path also in set", R"({"base": "b", "set": {"a.b": 1}, "parameters": [
           {"path": "a.b", "values": [1]}]})",
         "parameters.0.path: a.b is also set by set"},
        {"zip lengths", R"({"base": "b", "parameters": [{"zip": [
           {"path": "a.b", "values": [1, 2, 3]}, {"path": "a.c", "values": [1, 2]}]}]})",
         "parameters.0.zip.1.values: 2 values, but parameters.0.zip.0 has 3"},
        {"zip type", R"({"base": "b", "parameters": [{"zip": {"path": "a.b"}}]})",
         "parameters.0.zip: an object is not an array"},
        {"zip extra key", R"({"base": "b", "parameters": [{"zip": [{"path": "a.b", "values": [1]}],
           "name": "z"}]})",
         "parameters.0.name: unknown key"},
        {"zip nested", R"({"base": "b", "parameters": [{"zip": [{"zip": [], "path": "a.b",
           "values": [1]}]}]})",
         "parameters.0.zip.0.zip: a zip group cannot be nested"},
        {"zip element error", R"({"base": "b", "parameters": [{"zip": [
           {"path": "a.b", "values": [1]}, {"path": "a.c"}]}]})",
         "parameters.0.zip.1.values: missing"},
        {"set type", R"({"base": "b", "set": ["a.b=1"], "parameters": [{"path": "a.c",
           "values": [1]}]})",
         "set: an array is not an object"},
        {"set path", R"({"base": "b", "set": {"a..b": 1}, "parameters": [{"path": "a.c",
           "values": [1]}]})",
         "set.a..b: \"a..b\" is not a config path"},
        {"set outputs.dir", R"({"base": "b", "set": {"outputs.dir": "x"}, "parameters": [
           {"path": "a.c", "values": [1]}]})",
         "set.outputs.dir: outputs.dir is chosen by the sweep"},
        {"set null", R"({"base": "b", "set": {"a.b": null}, "parameters": [{"path": "a.c",
           "values": [1]}]})",
         "set.a.b: null is not a config value"},
        {"stats_columns type", R"({"base": "b", "parameters": [{"path": "a.b", "values": [1]}],
           "stats_columns": {"x": "/a"}})",
         "stats_columns: an object is not an array"},
        {"stat column type", R"({"base": "b", "parameters": [{"path": "a.b", "values": [1]}],
           "stats_columns": ["/a"]})",
         "stats_columns.0: \"/a\" is not an object"},
        {"stat column name missing", R"({"base": "b", "parameters": [{"path": "a.b",
           "values": [1]}], "stats_columns": [{"stat": "/a"}]})",
         "stats_columns.0.name: missing"},
        {"stat column reserved name", R"({"base": "b", "parameters": [{"path": "a.b",
           "values": [1]}], "stats_columns": [{"name": "goodput_gbps", "stat": "/a"}]})",
         "stats_columns.0.name: \"goodput_gbps\" is a column results.csv already has"},
        {"stat column not a pointer", R"({"base": "b", "parameters": [{"path": "a.b",
           "values": [1]}], "stats_columns": [{"name": "m", "stat": "blocks.x"}]})",
         "stats_columns.0.stat: \"blocks.x\" is not a JSON pointer"},
        {"stat column bad escape", R"({"base": "b", "parameters": [{"path": "a.b",
           "values": [1]}], "stats_columns": [{"name": "m", "stat": "/a~2"}]})",
         "stats_columns.0.stat: \"/a~2\" is not a valid JSON pointer"},
        {"stat column unknown key", R"({"base": "b", "parameters": [{"path": "a.b",
           "values": [1]}], "stats_columns": [{"name": "m", "stat": "/a", "file": "x"}]})",
         "stats_columns.0.file: unknown key"},
        {"stat column name twice", R"({"base": "b", "parameters": [{"path": "a.b",
           "name": "m", "values": [1]}], "stats_columns": [{"name": "m", "stat": "/a"}]})",
         "stats_columns.0.name: \"m\" is also the name of parameters.0"},
        {"too many points", R"({"base": "b", "parameters": [
           {"path": "a.a", "range": {"from": 1, "to": 1000, "step": 1}},
           {"path": "a.b", "range": {"from": 1, "to": 1000, "step": 1}}]})",
         "parameters: the grid has 1000000 points, at most 100000"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        const auto errors = sweep_errors(json::parse(c.doc));
        EXPECT_TRUE(has_error_starting(errors, c.expected))
            << "expected an error starting with: " << c.expected << "\ngot:\n"
            << joined(errors);
    }
}

TEST(SweepFile, ReportsEveryErrorAtOnce) {
    const auto errors = sweep_errors(json::parse(R"({"parameters": [
        {"path": "a.b"}, {"path": "a.c", "values": [1], "colour": "red"}], "extra": 1})"));
    EXPECT_TRUE(has_error_starting(errors, "base: missing")) << joined(errors);
    EXPECT_TRUE(has_error_starting(errors, "parameters.0.values: missing")) << joined(errors);
    EXPECT_TRUE(has_error_starting(errors, "parameters.1.colour: unknown key")) << joined(errors);
    EXPECT_TRUE(has_error_starting(errors, "extra: unknown key")) << joined(errors);
}

TEST(SweepFile, LoadReadsCommentsAndReportsFileErrors) {
    scratch s;
    const std::string good = s.write("good.json", R"({
      // a sweep with comments
      "base": "base.json",
      "parameters": [{"path": "workload.qps", "values": [1, 2]}]  /* two points */
    })");
    const sweep_spec spec = load_sweep(good);
    EXPECT_EQ(spec.base, fs::path(s.dir) / "base.json");
    EXPECT_EQ(spec.file, good);

    try {
        (void)load_sweep(s.path("missing.json"));
        ADD_FAILURE() << "no error for a missing file";
    } catch (const rnic::config::config_error& e) {
        EXPECT_EQ(e.errors.at(0), s.path("missing.json") + ": cannot open");
    }
    const std::string bad = s.write("bad.json", R"({"base": "b", )");
    try {
        (void)load_sweep(bad);
        ADD_FAILURE() << "no error for a syntax error";
    } catch (const rnic::config::config_error& e) {
        EXPECT_EQ(e.errors.at(0).rfind(bad + ": ", 0), 0u) << e.errors.at(0);
        EXPECT_NE(e.errors.at(0).find("parse error"), std::string::npos) << e.errors.at(0);
    }
}

// ---------------------------------------------------------------------------------------------
// Expansion

TEST(SweepExpand, GridVariesTheFirstAxisSlowest) {
    const sweep_spec s = parse_sweep(json::parse(R"({"base": "/b.json",
        "set": {"workload.messages": 8},
        "parameters": [
          {"path": "workload.operation", "values": ["write", "read"]},
          {"path": "workload.message_bytes", "values": [64, 128, 256]}
        ]})"),
                                     "/");
    const plan p = expand(s);
    EXPECT_EQ(p.columns,
              (std::vector<std::string>{"workload.operation", "workload.message_bytes"}));
    ASSERT_EQ(p.points.size(), 6u);
    const std::vector<std::pair<const char*, int>> expected = {
        {"write", 64}, {"write", 128}, {"write", 256}, {"read", 64}, {"read", 128}, {"read", 256}};
    for (size_t i = 0; i < 6; ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(p.points[i].index, i);
        EXPECT_EQ(p.points[i].id, "000" + std::to_string(i));
        EXPECT_EQ(p.points[i].values, (std::vector<json>{expected[i].first, expected[i].second}));
        EXPECT_EQ(p.points[i].overrides,
                  (std::vector<std::string>{
                      "workload.messages=8",
                      std::string("workload.operation=\"") + expected[i].first + "\"",
                      "workload.message_bytes=" + std::to_string(expected[i].second)}));
    }
}

TEST(SweepExpand, ZippedListsStepTogether) {
    const sweep_spec s = parse_sweep(json::parse(R"({"base": "/b.json", "parameters": [
          {"zip": [
            {"path": "workload.message_bytes", "values": [64, 65536, 1048576]},
            {"path": "workload.messages", "values": [1000, 100, 10]}
          ]},
          {"path": "workload.qps", "values": [1, 8]}
        ]})"),
                                     "/");
    const plan p = expand(s);
    ASSERT_EQ(p.points.size(), 6u);  // 3 zipped x 2, not 3 x 3 x 2
    EXPECT_EQ(p.points[0].values, (std::vector<json>{64, 1000, 1}));
    EXPECT_EQ(p.points[1].values, (std::vector<json>{64, 1000, 8}));
    EXPECT_EQ(p.points[4].values, (std::vector<json>{1048576, 10, 1}));
    EXPECT_EQ(p.points[5].overrides,
              (std::vector<std::string>{"workload.message_bytes=1048576", "workload.messages=10",
                                        "workload.qps=8"}));
}

TEST(SweepExpand, OneParameterSetsEachOfItsPaths) {
    const sweep_spec s = parse_sweep(json::parse(R"({"base": "/b.json", "parameters": [
        {"name": "mtu", "paths": ["topology.nodes.0.mtu", "topology.nodes.1.mtu"],
         "values": [1024, 4096]}]})"),
                                     "/");
    const plan p = expand(s);
    EXPECT_EQ(p.columns, (std::vector<std::string>{"mtu"}));
    ASSERT_EQ(p.points.size(), 2u);
    EXPECT_EQ(p.points[1].overrides,
              (std::vector<std::string>{"topology.nodes.0.mtu=4096", "topology.nodes.1.mtu=4096"}));
}

TEST(SweepExpand, PointIdsAreZeroPaddedToTheLargestIndex) {
    EXPECT_EQ(point_id(5, 10), "0005");
    EXPECT_EQ(point_id(9999, 10000), "9999");
    EXPECT_EQ(point_id(42, 10001), "00042");
    EXPECT_EQ(point_id(0, 1), "0000");
}

TEST(SweepExpand, PlanJsonRoundTrips) {
    const sweep_spec s = parse_sweep(json::parse(R"({"base": "/b.json", "parameters": [
        {"path": "workload.operation", "values": ["write", "send"]},
        {"path": "rnic.pcie.gen", "values": [3, 4, 5]}]})"),
                                     "/");
    const plan p = expand(s);
    const plan q = plan::from_json(json::parse(p.to_json().dump()));
    EXPECT_EQ(q.base, p.base);
    EXPECT_EQ(q.columns, p.columns);
    EXPECT_TRUE(q.stat_columns.empty());
    // Extra stats.json columns survive the round trip, in order.
    const plan r = plan::from_json(json::parse(expand(parse_sweep(json::parse(R"({"base": "/b.json",
            "parameters": [{"path": "workload.qps", "values": [1]}],
            "stats_columns": [{"name": "z", "stat": "/blocks/node1.nic.x/misses"},
                              {"name": "a", "stat": "/sim/packets"}]})"),
                                                                  "/"))
                                                   .to_json()
                                                   .dump()));
    ASSERT_EQ(r.stat_columns.size(), 2u);
    EXPECT_EQ(r.stat_columns[0].name, "z");
    EXPECT_EQ(r.stat_columns[0].pointer, "/blocks/node1.nic.x/misses");
    EXPECT_EQ(r.stat_columns[1].name, "a");
    ASSERT_EQ(q.points.size(), p.points.size());
    for (size_t i = 0; i < p.points.size(); ++i) {
        EXPECT_EQ(q.points[i].id, p.points[i].id);
        EXPECT_EQ(q.points[i].index, i);
        EXPECT_EQ(q.points[i].values, p.points[i].values);
        EXPECT_EQ(q.points[i].overrides, p.points[i].overrides);
    }
    json broken = p.to_json();
    broken["points"][1]["id"] = "../x";
    broken["points"][2].erase("overrides");
    try {
        (void)plan::from_json(broken);
        ADD_FAILURE() << "a broken plan was accepted";
    } catch (const rnic::config::config_error& e) {
        EXPECT_TRUE(has_error_starting(e.errors, "points.1.id: \"../x\" is not a folder name"))
            << joined(e.errors);
        EXPECT_TRUE(has_error_starting(e.errors, "points.2.overrides: missing"))
            << joined(e.errors);
    }
}

// ---------------------------------------------------------------------------------------------
// The up-front check of every point against the real scenario parser

std::vector<std::string> plan_errors(const std::string& sweep_doc, const scratch& s) {
    const std::string file = s.write("sweep.json", sweep_doc);
    try {
        (void)load_plan(file);
    } catch (const rnic::config::config_error& e) {
        return e.errors;
    }
    return {};
}

TEST(SweepValidate, AcceptsValidPoints) {
    scratch s;
    const auto errors = plan_errors(R"({"base": ")" + quickstart() + R"(",
        "parameters": [{"path": "workload.message_bytes", "values": [64, 4096]},
                       {"path": "workload.operation", "values": ["write", "read", "send"]}]})",
                                    s);
    EXPECT_TRUE(errors.empty()) << joined(errors);
}

TEST(SweepValidate, NamesTheValueThatMakesAPointInvalid) {
    scratch s;
    const auto errors = plan_errors(R"({"base": ")" + quickstart() + R"(",
        "parameters": [{"path": "workload.operation", "values": ["write", "read"]},
                       {"name": "mtu", "paths": ["topology.nodes.0.mtu", "topology.nodes.1.mtu"],
                        "values": [1024, 1000, 4096]}]})",
                                    s);
    // Once per path it sets, not once per operation.
    ASSERT_EQ(errors.size(), 2u) << joined(errors);
    EXPECT_EQ(errors[0].rfind("parameters.1.values.1: topology.nodes.0.mtu: 1000 is not one of", 0),
              0u)
        << errors[0];
    EXPECT_EQ(errors[1].rfind("parameters.1.values.1: topology.nodes.1.mtu: 1000 is not one of", 0),
              0u)
        << errors[1];
}

TEST(SweepValidate, AnErrorOfEveryValueNamesTheParameter) {
    scratch s;
    const auto errors = plan_errors(R"({"base": ")" + quickstart() + R"(",
        "parameters": [{"path": "workload.message_bytez", "values": [64, 128]}]})",
                                    s);
    ASSERT_EQ(errors.size(), 1u) << joined(errors);
    EXPECT_EQ(errors[0], "parameters.0: workload.message_bytez: unknown key");
}

TEST(SweepValidate, AnUnknownObjectAParameterCreatesIsNamed) {
    scratch s;
    const auto errors = plan_errors(R"({"base": ")" + quickstart() + R"(",
        "parameters": [{"path": "workload.qps", "values": [1]},
                       {"path": "colour.shade", "values": ["red", "blue"]}]})",
                                    s);
    ASSERT_EQ(errors.size(), 1u) << joined(errors);
    EXPECT_EQ(errors[0], "parameters.1: colour: unknown key");
}

TEST(SweepValidate, NamesSetEntriesBaseAndPoints) {
    scratch s;
    // A "set" value out of range.
    auto errors = plan_errors(R"({"base": ")" + quickstart() + R"(", "set": {"workload.qps": 0},
        "parameters": [{"path": "workload.message_bytes", "values": [64]}]})",
                              s);
    ASSERT_EQ(errors.size(), 1u) << joined(errors);
    EXPECT_EQ(errors[0].rfind("set.workload.qps: workload.qps: 0 out of range", 0), 0u)
        << errors[0];

    // A base file that does not exist.
    errors =
        plan_errors(R"({"base": "nope.json", "parameters": [{"path": "a.b", "values": [1]}]})", s);
    ASSERT_EQ(errors.size(), 1u) << joined(errors);
    EXPECT_EQ(errors[0], "base: " + s.path("nope.json") + ": cannot open");

    // An error of the base itself, in every point.
    s.write("base.json", R"({"workload": {"colour": "red"}})");
    errors = plan_errors(R"({"base": "base.json", "parameters": [
        {"path": "workload.qps", "values": [1, 2]}]})",
                         s);
    ASSERT_EQ(errors.size(), 1u) << joined(errors);
    EXPECT_EQ(errors[0], "base: workload.colour: unknown key");

    // A cross-check no single parameter explains: too many completions for the CQ, reported at
    // workload.qps (from the base) when queue_depth grows.
    s.write("base2.json", R"({"workload": {"qps": 1000}})");
    errors = plan_errors(R"({"base": "base2.json", "parameters": [
        {"path": "workload.queue_depth", "values": [1, 128]}]})",
                         s);
    ASSERT_EQ(errors.size(), 1u) << joined(errors);
    EXPECT_EQ(errors[0].rfind("points.0001 (workload.queue_depth=128): workload.qps: 1000 QPs", 0),
              0u)
        << errors[0];
}

TEST(SweepValidate, ABadOverridePathIsNamed) {
    scratch s;
    // workload.operation is a string in the base: it has no member "x".
    const auto errors = plan_errors(R"({"base": ")" + quickstart() + R"(",
        "parameters": [{"path": "workload.operation.x", "values": [1, 2]}]})",
                                    s);
    ASSERT_FALSE(errors.empty());
    EXPECT_EQ(errors[0].rfind("parameters.0", 0), 0u) << joined(errors);
    EXPECT_NE(errors[0].find("has no member \"x\""), std::string::npos) << joined(errors);
}

// ---------------------------------------------------------------------------------------------
// results.csv from point folders

// A finished (or failed) point's folder as the runner leaves it.
void file_point(const std::string& out_dir, const plan& p, size_t index, const std::string& status,
                const json& stats, const std::string& error = "") {
    const fs::path dir = point_dir(out_dir, p.points[index]);
    fs::create_directories(dir);
    if (!stats.is_null()) {
        std::ofstream(dir / STATS_FILE) << stats.dump(2);
        std::ofstream(dir / SPEED_FILE) << json({{"wall_s", 0.25}}).dump(2);
    }
    const json done = {{"status", status},
                       {"error", error},
                       {"base", p.base},
                       {"overrides", p.points[index].overrides}};
    std::ofstream(dir / DONE_FILE) << done.dump(2);
}

json fake_stats(double goodput) {
    return {{"summary",
             {{"messages", 8},
              {"bytes", 512},
              {"goodput_gbps", goodput},
              {"msg_rate_mpps", 0.125},
              {"latency_ns", {{"avg", 1234.5}, {"p50", 1200}, {"p99", 1500}, {"max", 1600}}}}},
            {"integrity", {{"bytes_checked", 512}, {"mismatches", 0}}},
            {"sim", {{"simulated_ns", 98765}, {"packets", 16}}},
            {"blocks", {{"nic0.doorbell", {{"rings", 8}}}}}};
}

TEST(SweepResults, CsvHasParametersStatusMetricsAndErrors) {
    scratch s;
    const sweep_spec spec = parse_sweep(json::parse(R"({"base": "/b.json", "parameters": [
        {"path": "workload.operation", "values": ["write", "send"]},
        {"name": "note", "path": "test.note", "values": ["a,b", "c\"d"]}]})"),
                                        "/");
    const plan p = expand(spec);
    file_point(s.dir, p, 0, "ok", fake_stats(97.53086419753086));
    file_point(s.dir, p, 1, "failed", fake_stats(1.5),
               "exit 1: rnicsim: run failed: | late, \"very\"");
    file_point(s.dir, p, 2, "failed", nullptr, "killed by signal 9 (Killed)");
    // Point 3 ran with other overrides: it does not count as run.
    plan other = p;
    other.points[3].overrides.back() = "test.note=\"zzz\"";
    file_point(s.dir, other, 3, "ok", fake_stats(3));

    results_summary sum;
    const std::string csv = make_results_csv(s.dir, p, &sum);
    EXPECT_EQ(sum.ok, 1u);
    EXPECT_EQ(sum.failed, 2u);
    EXPECT_EQ(sum.missing, 1u);
    const auto rows = parse_csv(csv);
    ASSERT_EQ(rows.size(), 5u) << csv;
    EXPECT_EQ(rows[0], (std::vector<std::string>{
                           "point", "workload.operation", "note", "status", "messages", "bytes",
                           "goodput_gbps", "msg_rate_mpps", "latency_avg_ns", "latency_p50_ns",
                           "latency_p99_ns", "latency_max_ns", "integrity_bytes_checked",
                           "integrity_mismatches", "simulated_ns", "wall_s", "packets", "error"}));
    EXPECT_EQ(rows[1],
              (std::vector<std::string>{"0000", "write", "a,b", "ok", "8", "512",
                                        "97.53086419753086", "0.125", "1234.5", "1200", "1500",
                                        "1600", "512", "0", "98765", "0.25", "16", ""}));
    EXPECT_EQ(rows[2][2], "c\"d");
    EXPECT_EQ(rows[2][3], "failed");
    EXPECT_EQ(rows[2][6], "1.5");  // a failed run's stats are still shown
    EXPECT_EQ(rows[2].back(), "exit 1: rnicsim: run failed: | late, \"very\"");
    EXPECT_EQ(rows[3][3], "failed");
    EXPECT_EQ(rows[3][6], "");
    EXPECT_EQ(rows[3].back(), "killed by signal 9 (Killed)");
    EXPECT_EQ(rows[4][3], "missing");
    EXPECT_NE(rows[4].back().find("other settings"), std::string::npos);
    // Quoting per RFC 4180.
    EXPECT_NE(csv.find(",\"a,b\","), std::string::npos);
    EXPECT_NE(csv.find(",\"c\"\"d\","), std::string::npos);
}

TEST(SweepResults, StatsColumnsFollowTheMetrics) {
    scratch s;
    const plan p = expand(parse_sweep(json::parse(R"({"base": "/b.json",
        "parameters": [{"path": "workload.qps", "values": [1, 2]}],
        "stats_columns": [{"name": "rings", "stat": "/blocks/nic0.doorbell/rings"},
                          {"name": "absent", "stat": "/blocks/nic0.doorbell/nothing"}]})"),
                                      "/"));
    json st = fake_stats(1);
    st["blocks"]["nic0.doorbell"]["rings"] = 42;
    file_point(s.dir, p, 0, "ok", st);
    const auto rows = csv_rows(make_results_csv(s.dir, p));
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].at("rings"), "42");
    EXPECT_EQ(rows[0].at("absent"), "");  // a stat the run did not report stays empty
    EXPECT_EQ(rows[1].at("rings"), "");   // a point that has not run
    const auto header = parse_csv(make_results_csv(s.dir, p)).front();
    ASSERT_GE(header.size(), 3u);
    EXPECT_EQ(header[header.size() - 3], "rings");
    EXPECT_EQ(header[header.size() - 2], "absent");
    EXPECT_EQ(header.back(), "error");
}

TEST(SweepResults, CsvFieldQuotesOnlyWhenNeeded) {
    EXPECT_EQ(csv_field("plain"), "plain");
    EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
    EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
}

TEST(SweepResults, StderrTailKeepsTheLastLines) {
    EXPECT_EQ(stderr_tail(""), "");
    EXPECT_EQ(stderr_tail("a\n\n  b  \nc\nd\n"), "b | c | d");
    const std::string long_line(1000, 'x');
    const std::string t = stderr_tail(long_line + "\nend\n");
    EXPECT_LE(t.size(), 410u);
    EXPECT_EQ(t.substr(t.size() - 3), "end");
}

// ---------------------------------------------------------------------------------------------
// The local runner, with a stand-in for `rnicsim run`

// Writes stats.json from its --set overrides and logs each run; test.* overrides make it fail,
// crash, end without stats, or interrupt the sweep that started it.
std::string write_fake_rnicsim(const scratch& s) {
    const std::string log = s.path("runs.log");
    return s.write("fake-rnicsim", R"(#!/bin/sh
[ "$1" = run ] || { echo "fake: expected run" >&2; exit 3; }
shift 2
out=; sets=; bytes=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --set) sets="$sets $2"; case "$2" in workload.message_bytes=*) bytes=${2#*=} ;; esac; shift 2 ;;
    *) echo "fake: bad argument $1" >&2; exit 3 ;;
  esac
done
echo "$sets" >> ')" + log + R"('
case "$sets" in
  *test.fail=1*) echo "rnicsim: run failed:" >&2
                 echo "  workload: 3 of 8 messages done at time_limit_ms" >&2; exit 1 ;;
  *test.crash=1*) kill -KILL $$ ;;
  *test.nostats=1*) exit 0 ;;
  *test.interrupt=1*) kill -TERM $PPID; exec sleep 600 ;;
esac
mkdir -p "$out"
echo "summary of$sets"
printf '{"summary":{"messages":8,"bytes":%s,"goodput_gbps":%s.5,"msg_rate_mpps":0.25,"latency_ns":{"avg":1000.5,"p50":990,"p99":1500,"max":2000}},"integrity":{"bytes_checked":%s,"mismatches":0},"sim":{"simulated_ns":123456,"packets":16}}\n' $((bytes*8)) $bytes $((bytes*8)) > "$out/stats.json"
echo '{"wall_s":0.01}' > "$out/speed.json"
echo '{}' > "$out/config.json"
)",
                   true);
}

std::vector<std::string> logged_runs(const scratch& s) {
    std::vector<std::string> runs;
    std::istringstream in(read_file(s.path("runs.log")));
    std::string line;
    while (std::getline(in, line)) {
        runs.push_back(line);
    }
    return runs;
}

plan plan_of(const std::string& doc) {
    sweep_spec spec = parse_sweep(json::parse(doc), "/");
    return expand(spec);
}

int run_sweep(const plan& p, const scratch& s, const std::string& binary, unsigned jobs,
              std::string* log_text = nullptr) {
    prepare_out_dir(s.path("out"), p);
    run_options o;
    o.out_dir = s.path("out");
    o.jobs = jobs;
    o.binary = binary;
    std::ostringstream log;
    o.log = &log;
    const int rc = run_local(p, o);
    if (log_text != nullptr) {
        *log_text = log.str();
    }
    return rc;
}

std::vector<std::string> hidden_entries(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string n = e.path().filename().string();
        if (n[0] == '.') {
            names.push_back(n);
        }
    }
    return names;
}

const char* FOUR_SIZES = R"({"base": "/cfg/base.json", "parameters": [
    {"path": "workload.message_bytes", "values": [64, 128, 256, 512]}]})";

TEST(SweepRunner, RunsEveryPointAndCsvEqualsStats) {
    scratch s;
    const std::string fake = write_fake_rnicsim(s);
    const plan p = plan_of(FOUR_SIZES);
    std::string log;
    EXPECT_EQ(run_sweep(p, s, fake, 2, &log), EXIT_OK) << log;
    EXPECT_EQ(logged_runs(s).size(), 4u);
    EXPECT_NE(log.find("[4/4]"), std::string::npos) << log;

    const auto rows = csv_rows(read_file(s.path("out/results.csv")));
    ASSERT_EQ(rows.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        SCOPED_TRACE(i);
        const fs::path dir = s.path("out/points/000" + std::to_string(i));
        EXPECT_EQ(rows[i].at("point"), "000" + std::to_string(i));
        EXPECT_EQ(rows[i].at("workload.message_bytes"), p.points[i].values[0].dump());
        EXPECT_EQ(rows[i].at("status"), "ok");
        for (const auto& m : metrics()) {
            const json from = json::parse(read_file(dir / m.file));  // stats.json, speed.json
            EXPECT_EQ(json::parse(rows[i].at(m.column)), from.at(json::json_pointer(m.pointer)))
                << m.column;
        }
        // The run's outputs, its stdout/stderr and the done marker, all in one folder.
        EXPECT_TRUE(fs::exists(dir / "config.json"));
        EXPECT_NE(read_file(dir / "stdout.txt").find("summary of"), std::string::npos);
        EXPECT_TRUE(fs::exists(dir / "stderr.txt"));
        const json done = json::parse(read_file(dir / "done.json"));
        EXPECT_EQ(done.at("status"), "ok");
        EXPECT_EQ(done.at("overrides"), json(p.points[i].overrides));
        EXPECT_EQ(done.at("exit_code"), 0);
    }
    EXPECT_TRUE(hidden_entries(s.path("out/points")).empty());  // no work folder left
    EXPECT_TRUE(fs::exists(s.path("out/plan.json")));
}

TEST(SweepRunner, AFailedPointDoesNotStopTheOthers) {
    scratch s;
    const std::string fake = write_fake_rnicsim(s);
    const plan p = plan_of(R"({"base": "/cfg/base.json", "parameters": [{"zip": [
        {"path": "workload.message_bytes", "values": [64, 128, 256, 512, 1024]},
        {"path": "test.fail", "values": [0, 1, 0, 0, 0]},
        {"path": "test.crash", "values": [0, 0, 1, 0, 0]},
        {"path": "test.nostats", "values": [0, 0, 0, 1, 0]}]}]})");
    std::string log;
    EXPECT_EQ(run_sweep(p, s, fake, 1, &log), EXIT_POINT_FAILED);
    EXPECT_EQ(logged_runs(s).size(), 5u);  // every point ran

    const auto rows = csv_rows(read_file(s.path("out/results.csv")));
    ASSERT_EQ(rows.size(), 5u);
    EXPECT_EQ(rows[0].at("status"), "ok");
    EXPECT_EQ(rows[1].at("status"), "failed");
    EXPECT_EQ(rows[1].at("error"),
              "exit 1: rnicsim: run failed: | workload: 3 of 8 messages done at time_limit_ms");
    EXPECT_EQ(rows[2].at("status"), "failed");
    EXPECT_EQ(rows[2].at("error").rfind("killed by signal 9", 0), 0u) << rows[2].at("error");
    EXPECT_EQ(rows[3].at("status"), "failed");
    EXPECT_EQ(rows[3].at("error"), "exit 0, but no stats.json");
    EXPECT_EQ(rows[4].at("status"), "ok");
    EXPECT_EQ(rows[4].at("goodput_gbps"), "1024.5");
    // Failures are reported on the log (stderr) with their error as they happen.
    EXPECT_NE(log.find("0001 workload.message_bytes=128 test.fail=1 test.crash=0 test.nostats=0: "
                       "FAILED"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("3 of 8 messages done"), std::string::npos) << log;
    EXPECT_NE(log.find("2 ok, 3 failed"), std::string::npos) << log;
    // A failed point keeps its folder (stderr, done marker) for a look.
    EXPECT_NE(read_file(s.path("out/points/0001/stderr.txt")).find("run failed"),
              std::string::npos);
    EXPECT_EQ(json::parse(read_file(s.path("out/points/0001/done.json"))).at("status"), "failed");
}

TEST(SweepRunner, ABinaryThatCannotStartFailsEveryPoint) {
    scratch s;
    const plan p = plan_of(FOUR_SIZES);
    std::string log;
    EXPECT_EQ(run_sweep(p, s, s.path("no-such-rnicsim"), 2, &log), EXIT_POINT_FAILED);
    const auto rows = csv_rows(read_file(s.path("out/results.csv")));
    ASSERT_EQ(rows.size(), 4u);
    for (const auto& r : rows) {
        EXPECT_EQ(r.at("status"), "failed");
        EXPECT_NE(r.at("error").find("cannot start"), std::string::npos) << r.at("error");
    }
}

TEST(SweepRunner, ResumeRunsOnlyUnfinishedPoints) {
    scratch s;
    const std::string fake = write_fake_rnicsim(s);
    const plan p = plan_of(FOUR_SIZES);
    ASSERT_EQ(run_sweep(p, s, fake, 2), EXIT_OK);
    ASSERT_EQ(logged_runs(s).size(), 4u);

    // As if the sweep had been killed: point 1 never finished (no folder), point 2 failed,
    // and a work folder of an interrupted point is left over.
    fs::remove_all(s.path("out/points/0001"));
    json done = json::parse(read_file(s.path("out/points/0002/done.json")));
    done["status"] = "failed";
    std::ofstream(s.path("out/points/0002/done.json")) << done.dump();
    fs::create_directories(s.path("out/points/.0003.tmp-abcdef/run"));
    // Finished points are recognised by their marker: these two must stay as they are.
    std::ofstream(s.path("out/points/0000/untouched")) << "marker";
    std::ofstream(s.path("out/points/0003/untouched")) << "marker";

    std::string log;
    EXPECT_EQ(run_sweep(p, s, fake, 2, &log), EXIT_OK) << log;
    const auto runs = logged_runs(s);
    ASSERT_EQ(runs.size(), 6u);  // two more, the unfinished ones
    std::vector<std::string> reruns = {runs[4], runs[5]};
    std::sort(reruns.begin(), reruns.end());
    EXPECT_EQ(reruns, (std::vector<std::string>{" workload.message_bytes=128",
                                                " workload.message_bytes=256"}));
    EXPECT_NE(log.find("2 already finished"), std::string::npos) << log;
    EXPECT_TRUE(fs::exists(s.path("out/points/0000/untouched")));
    EXPECT_TRUE(fs::exists(s.path("out/points/0003/untouched")));
    EXPECT_TRUE(hidden_entries(s.path("out/points")).empty());
    for (const auto& r : csv_rows(read_file(s.path("out/results.csv")))) {
        EXPECT_EQ(r.at("status"), "ok");
    }

    // Nothing left to do: a third run starts nothing.
    EXPECT_EQ(run_sweep(p, s, fake, 2), EXIT_OK);
    EXPECT_EQ(logged_runs(s).size(), 6u);
}

TEST(SweepRunner, AChangedSweepRerunsOnlyChangedPoints) {
    scratch s;
    const std::string fake = write_fake_rnicsim(s);
    ASSERT_EQ(run_sweep(plan_of(FOUR_SIZES), s, fake, 2), EXIT_OK);
    // Same folder, one value changed: point 2 is now 300 bytes.
    const plan changed = plan_of(R"({"base": "/cfg/base.json", "parameters": [
        {"path": "workload.message_bytes", "values": [64, 128, 300, 512]}]})");
    EXPECT_EQ(pending_points(s.path("out"), changed), (std::vector<size_t>{2}));
    EXPECT_EQ(run_sweep(changed, s, fake, 2), EXIT_OK);
    const auto runs = logged_runs(s);
    ASSERT_EQ(runs.size(), 5u);
    EXPECT_EQ(runs[4], " workload.message_bytes=300");
    EXPECT_EQ(csv_rows(read_file(s.path("out/results.csv")))[2].at("goodput_gbps"), "300.5");
}

TEST(SweepRunner, AnInterruptStopsRunningPointsAndKeepsFinishedOnes) {
    scratch s;
    const std::string fake = write_fake_rnicsim(s);
    // Point 1 signals the sweep (SIGTERM, as `kill` would) and then waits to be stopped.
    const plan p = plan_of(R"({"base": "/cfg/base.json", "parameters": [{"zip": [
        {"path": "workload.message_bytes", "values": [64, 128, 256, 512]},
        {"path": "test.interrupt", "values": [0, 1, 0, 0]}]}]})");
    std::string log;
    EXPECT_EQ(run_sweep(p, s, fake, 1, &log), EXIT_INTERRUPTED) << log;
    EXPECT_NE(log.find("terminated; stopping 1 running point"), std::string::npos) << log;
    EXPECT_EQ(logged_runs(s).size(), 2u);  // points 2 and 3 never started
    EXPECT_TRUE(fs::exists(s.path("out/points/0000/done.json")));
    EXPECT_FALSE(fs::exists(s.path("out/points/0001")));
    EXPECT_TRUE(hidden_entries(s.path("out/points")).empty());
    const auto rows = csv_rows(read_file(s.path("out/results.csv")));
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[0].at("status"), "ok");
    EXPECT_EQ(rows[1].at("status"), "missing");
    EXPECT_EQ(rows[3].at("status"), "missing");
    EXPECT_EQ(pending_points(s.path("out"), p), (std::vector<size_t>{1, 2, 3}));
}

TEST(SweepRunner, OneSweepAtATimePerFolder) {
    scratch s;
    const std::string fake = write_fake_rnicsim(s);
    const plan p = plan_of(FOUR_SIZES);
    prepare_out_dir(s.path("out"), p);
    const int fd = open(s.path("out/.lock").c_str(), O_RDWR | O_CREAT, 0644);
    ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
    run_options o;
    o.out_dir = s.path("out");
    o.binary = fake;
    std::ostringstream log;
    o.log = &log;
    EXPECT_THROW(run_local(p, o), sweep_dir_error);
    close(fd);
    EXPECT_TRUE(logged_runs(s).empty());
}

TEST(SweepRunner, OutputFolderMustBeEmptyOrASweeps) {
    scratch s;
    const plan p = plan_of(FOUR_SIZES);
    s.write("other/notes.txt", "mine");
    EXPECT_THROW(prepare_out_dir(s.path("other"), p), sweep_dir_error);
    s.write("file", "x");
    EXPECT_THROW(prepare_out_dir(s.path("file"), p), sweep_dir_error);
    fs::create_directories(s.path("empty"));
    prepare_out_dir(s.path("empty"), p);
    const plan back = read_plan(s.path("empty"));
    EXPECT_EQ(back.points.size(), 4u);
    prepare_out_dir(s.path("empty"), p);  // an earlier sweep's folder is fine
    EXPECT_THROW((void)read_plan(s.path("other")), rnic::config::config_error);
}

TEST(SweepRunner, RunOnePointFilesItsFolder) {
    scratch s;
    const std::string fake = write_fake_rnicsim(s);
    const plan p = plan_of(FOUR_SIZES);
    prepare_out_dir(s.path("out"), p);
    const point_outcome r = run_one_point(s.path("out"), p, 2, fake);
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(read_point(s.path("out"), p, p.points[2]).state, point_state::OK);
    EXPECT_EQ(read_point(s.path("out"), p, p.points[1]).state, point_state::MISSING);
    EXPECT_EQ(pending_points(s.path("out"), p), (std::vector<size_t>{0, 1, 3}));
}

// ---------------------------------------------------------------------------------------------
// Slurm

TEST(SweepSlurm, ArraySpecCompressesRanges) {
    EXPECT_EQ(array_spec({0, 1, 2, 3}, 0), "0-3");
    EXPECT_EQ(array_spec({0, 1, 2, 5, 7, 8, 9}, 0), "0-2,5,7-9");
    EXPECT_EQ(array_spec({4}, 2), "4%2");
}

TEST(SweepSlurm, ShellQuote) {
    EXPECT_EQ(shell_quote("/usr/bin/rnicsim"), "/usr/bin/rnicsim");
    EXPECT_EQ(shell_quote("my dir"), "'my dir'");
    EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
    EXPECT_EQ(shell_quote(""), "''");
}

TEST(SweepSlurm, ScriptRunsOnePointPerArrayTask) {
    const plan p = plan_of(FOUR_SIZES);
    slurm_options o;
    o.out_dir = "/shared/sweeps/my run";
    o.binary = "/opt/rnicsim/bin/rnicsim";
    o.max_parallel = 3;
    const std::string script = make_sbatch_script(p, {0, 2, 3}, o);
    EXPECT_EQ(script.rfind("#!/bin/bash\n", 0), 0u);
    EXPECT_NE(script.find("\n#SBATCH --array=0,2-3%3\n"), std::string::npos) << script;
    EXPECT_NE(script.find("\n#SBATCH --job-name=rnicsim-sweep\n"), std::string::npos);
    EXPECT_NE(script.find("\n#SBATCH --output=/shared/sweeps/my run/slurm/%A_%a.out\n"),
              std::string::npos)
        << script;
    EXPECT_NE(script.find("\nexec /opt/rnicsim/bin/rnicsim sweep point '/shared/sweeps/my run' "
                          "\"$SLURM_ARRAY_TASK_ID\"\n"),
              std::string::npos)
        << script;
}

// A PATH entry with a stand-in sbatch that logs its arguments and prints job ids 42, 43, ...
struct fake_sbatch {
    std::string old_path;
    std::string log;
    explicit fake_sbatch(const scratch& s) {
        log = s.path("sbatch.log");
        s.write("bin/sbatch",
                "#!/bin/sh\necho \"$@\" >> '" + log + "'\nn=$(wc -l < '" + log +
                    "')\necho $((41 + n))\n",
                true);
        old_path = std::getenv("PATH");
        setenv("PATH", (s.path("bin") + ":" + old_path).c_str(), 1);
    }
    ~fake_sbatch() { setenv("PATH", old_path.c_str(), 1); }
    std::vector<std::string> calls() const {
        std::vector<std::string> lines;
        std::istringstream in(read_file(log));
        std::string line;
        while (std::getline(in, line)) {
            lines.push_back(line);
        }
        return lines;
    }
};

TEST(SweepSlurm, SubmitsTheArrayAndADependentCollectJob) {
    scratch s;
    fake_sbatch sb(s);
    const plan p = plan_of(FOUR_SIZES);
    prepare_out_dir(s.path("out"), p);
    // Point 1 already finished: the array leaves it out.
    file_point(s.path("out"), p, 1, "ok", fake_stats(5));
    slurm_options o;
    o.out_dir = s.path("out");
    o.binary = "/opt/rnicsim";
    o.sbatch_args = {"--partition=sim"};
    std::ostringstream out;
    std::ostringstream log;
    o.out = &out;
    o.log = &log;
    EXPECT_EQ(run_slurm(p, o), EXIT_OK) << log.str();
    EXPECT_EQ(out.str(), "42\n");
    const auto calls = sb.calls();
    ASSERT_EQ(calls.size(), 2u);
    EXPECT_EQ(calls[0], "--parsable --partition=sim " + s.path("out/sweep.sbatch"));
    EXPECT_NE(calls[1].find("--dependency=afterany:42"), std::string::npos) << calls[1];
    EXPECT_NE(calls[1].find("--wrap=exec /opt/rnicsim sweep collect " + s.path("out")),
              std::string::npos)
        << calls[1];
    EXPECT_NE(log.str().find("collect job 43"), std::string::npos) << log.str();
    const std::string script = read_file(s.path("out/sweep.sbatch"));
    EXPECT_NE(script.find("#SBATCH --array=0,2-3\n"), std::string::npos) << script;
}

TEST(SweepSlurm, DryRunWritesAndPrintsTheScriptOnly) {
    scratch s;
    fake_sbatch sb(s);
    const plan p = plan_of(FOUR_SIZES);
    prepare_out_dir(s.path("out"), p);
    slurm_options o;
    o.out_dir = s.path("out");
    o.binary = "/opt/rnicsim";
    o.dry_run = true;
    std::ostringstream out;
    std::ostringstream log;
    o.out = &out;
    o.log = &log;
    EXPECT_EQ(run_slurm(p, o), EXIT_OK);
    EXPECT_TRUE(sb.calls().empty());
    EXPECT_EQ(out.str(), read_file(s.path("out/sweep.sbatch")));
    EXPECT_NE(out.str().find("#SBATCH --array=0-3\n"), std::string::npos);
    EXPECT_NE(log.str().find("not submitted (--dry-run)"), std::string::npos);
}

TEST(SweepSlurm, AFailingSbatchIsReported) {
    scratch s;
    s.write("bin/sbatch", "#!/bin/sh\necho 'sbatch: error: no partition' >&2\nexit 1\n", true);
    const std::string old_path = std::getenv("PATH");
    setenv("PATH", (s.path("bin") + ":" + old_path).c_str(), 1);
    const plan p = plan_of(FOUR_SIZES);
    prepare_out_dir(s.path("out"), p);
    slurm_options o;
    o.out_dir = s.path("out");
    o.binary = "/opt/rnicsim";
    std::ostringstream out;
    std::ostringstream log;
    o.out = &out;
    o.log = &log;
    EXPECT_EQ(run_slurm(p, o), EXIT_POINT_FAILED);
    setenv("PATH", old_path.c_str(), 1);
    EXPECT_NE(log.str().find("sbatch failed (exit 1)"), std::string::npos) << log.str();
}

}  // namespace
