// SPDX-License-Identifier: Apache-2.0
// timeseries.csv (outputs.timeseries) and report.html through the built binary: the rows add up
// to the blocks' own end-of-run counters (a link direction's bytes, a node's completed work
// requests), a pause column is 1 only where the link's PFC counters saw a pause, sampling adds
// no events (every other output and the kernel's delta cycles are the same with it off), the
// window and the column set, config errors, and `rnicsim report DIR` writing the same
// report.html as the run did.
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/common/cli_run.h"
#include "testbench/common/scratch_dir.h"

namespace {

using rnic::testing::cli_result;
using rnic::testing::read_file;
using rnic::testing::rnicsim;
using rnic::testing::source_dir;
namespace fs = std::filesystem;
using nlohmann::json;

struct scratch : rnic::testing::scratch_dir {
    scratch()
        : scratch_dir("rnic_timeseries_test") {}
};

// timeseries.csv as column name -> values (time_ns included).
struct table {
    std::vector<std::string> names;
    std::map<std::string, std::vector<double>> cols;
    size_t rows = 0;
};

table read_table(const std::string& text) {
    table t;
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    std::stringstream head(line);
    for (std::string c; std::getline(head, c, ',');) {
        t.names.push_back(c);
    }
    while (std::getline(in, line)) {
        std::stringstream row(line);
        size_t i = 0;
        for (std::string c; std::getline(row, c, ','); ++i) {
            t.cols[t.names.at(i)].push_back(std::stod(c));
        }
        EXPECT_EQ(i, t.names.size()) << line;
        ++t.rows;
    }
    return t;
}

const std::vector<std::string> INCAST = {
    "run", "", "--set", "workload.messages=8", "--set", "workload.message_bytes=32768"};

std::vector<std::string> incast(const std::string& out, std::vector<std::string> more = {}) {
    std::vector<std::string> a = INCAST;
    a[1] = source_dir() + "/configs/fabric/incast_8to1.json";
    a.insert(a.end(), {"--out", out});
    a.insert(a.end(), more.begin(), more.end());
    return a;
}

TEST(TimeSeries, RowsAddUpToTheCountersAndAddNoEvents) {
    scratch s;
    const std::string on = s.dir + "/on";
    const std::string off = s.dir + "/off";
    const cli_result r = rnicsim(s, incast(on, {"--set", "outputs.timeseries.interval_ns=2000",
                                                "--set", "outputs.pcap=true"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(rnicsim(s, incast(off, {"--set", "outputs.pcap=true"})).exit_code, 0);
    EXPECT_FALSE(fs::exists(off + "/timeseries.csv"));  // off by default

    // Sampling pauses the simulation but runs nothing: the same outputs, the same kernel work.
    for (const char* f : {"stats.json", "flows.csv", "summary.txt", "wire.pcap"}) {
        EXPECT_TRUE(read_file(on + "/" + f) == read_file(off + "/" + f)) << f;
    }
    EXPECT_EQ(json::parse(read_file(on + "/speed.json"))["delta_cycles"],
              json::parse(read_file(off + "/speed.json"))["delta_cycles"]);

    const json stats = json::parse(read_file(on + "/stats.json"));
    const table t = read_table(read_file(on + "/timeseries.csv"));
    ASSERT_GT(t.rows, 10u);
    // Rows every 2 us from 2 us, then one at the run's end.
    const auto& time = t.cols.at("time_ns");
    const double end_ns = stats["sim"]["simulated_ns"].get<double>();
    for (size_t i = 0; i + 1 < t.rows; ++i) {
        EXPECT_DOUBLE_EQ(time[i], 2000.0 * static_cast<double>(i + 1));
    }
    EXPECT_NEAR(time.back(), end_ns, 1.0);

    // Per link direction: Gbit/s x interval / 8 summed over the rows = the direction's bytes.
    size_t links = 0;
    for (const auto& [block, c] : stats["blocks"].items()) {
        if (block.rfind("link", 0) != 0 || block.find(".dir") == std::string::npos ||
            !c.contains("bytes")) {
            continue;
        }
        const auto& g = t.cols.at(block + ".gbps");
        double bytes = 0;
        for (size_t i = 0; i < t.rows; ++i) {
            const double dt = time[i] - (i == 0 ? 0.0 : time[i - 1]);
            bytes += g[i] * dt / 8.0;
        }
        // Each cell has 3 decimals: at most 0.0005 Gbit/s x dt of rounding per row.
        EXPECT_NEAR(bytes, c["bytes"].get<double>(), 0.0005 * end_ns / 8.0 + 1) << block;
        // Paused at some boundary only if PFC paused the direction at all.
        double paused = 0;
        for (double v : t.cols.at(block + ".paused")) {
            EXPECT_TRUE(v == 0 || v == 1) << block;
            paused += v;
        }
        if (c["pfc_pause_ps"].get<double>() == 0) {
            EXPECT_EQ(paused, 0) << block;
        }
        ++links;
    }
    EXPECT_EQ(links, 18u);  // 9 hosts on one switch, both directions
    // The incast pauses the senders: some direction is paused at some boundary.
    double any_paused = 0;
    for (const auto& n : t.names) {
        if (n.size() > 7 && n.compare(n.size() - 7, 7, ".paused") == 0) {
            for (double v : t.cols.at(n)) {
                any_paused += v;
            }
        }
    }
    EXPECT_GT(any_paused, 0);

    // Per node: goodput and message rate summed over the rows = its completed work requests.
    for (int n = 1; n <= 8; ++n) {
        const std::string node = "node" + std::to_string(n);
        double bytes = 0;
        double msgs = 0;
        for (size_t i = 0; i < t.rows; ++i) {
            const double dt = time[i] - (i == 0 ? 0.0 : time[i - 1]);
            bytes += t.cols.at(node + ".goodput_gbps")[i] * dt / 8.0;
            msgs += t.cols.at(node + ".mpps")[i] * dt / 1e3;
        }
        const double done = stats["blocks"]["workload." + node]["write_completions"].get<double>();
        EXPECT_EQ(done, 8);
        EXPECT_NEAR(msgs, done, 0.0001 * static_cast<double>(t.rows) + 0.01) << node;
        EXPECT_NEAR(bytes, done * 32768, 0.0005 * end_ns / 8.0 + 1) << node;
    }
    // Switch queues: bytes, never above the switch's own peak counters.
    const auto& q = t.cols.at("sw0.port0.queue_bytes");
    double peak = 0;
    for (double v : q) {
        peak = std::max(peak, v);
    }
    EXPECT_GT(peak, 0);
    EXPECT_LE(peak, stats["blocks"]["sw0"]["buffer_peak_bytes"].get<double>());
}

// Utilization columns: busy fraction x interval summed over the rows = the block's busy-time
// counter in stats.json (the same counter stats.json's "utilization" divides), and no interval
// busier than itself. 64 B WRITEs at the message rate keep the receiving NIC's receive thread
// busy for stretches much longer than the 500 ns interval, which it used to count only when the
// stretch ended, and PCIe reserves TLPs ahead of time, which it counted when reserved (an
// interval then showed up to 5.0 at line rate).
TEST(TimeSeries, UtilizationAddsUpToTheBusyCountersAndStaysAtMostOne) {
    scratch s;
    struct resource {
        std::string column;
        std::string block;
        std::string counter;
    };
    // Per run: the busiest interval of each resource.
    auto check = [&](const std::string& config, const std::string& messages) {
        std::map<std::string, double> busiest;
        const std::string out = s.dir + "/" + messages;
        const cli_result r = rnicsim(
            s, {"run", source_dir() + config, "--out", out, "--set",
                "workload.messages=" + messages, "--set", "outputs.timeseries.interval_ns=500",
                "--set", R"(outputs.timeseries.sample=["utilization"])"});
        EXPECT_EQ(r.exit_code, 0) << r.err;
        const json stats = json::parse(read_file(out + "/stats.json"));
        const table t = read_table(read_file(out + "/timeseries.csv"));
        EXPECT_GT(t.rows, 20u);
        EXPECT_EQ(t.names.size(), 1u + 2 * 4);  // 2 nodes x wqe_fetch, recv_path, pcie up/down
        const auto& time = t.cols.at("time_ns");
        const double end_ns = stats["sim"]["simulated_ns"].get<double>();
        for (int n = 0; n < 2; ++n) {
            const std::string node = "node" + std::to_string(n);
            for (const resource& x :
                 std::vector<resource>{{".nic.wqe_fetch.util", ".nic.wqe_fetch", "busy_ps"},
                                       {".nic.recv_path.util", ".nic.recv_path", "busy_ps"},
                                       {".pcie.up.util", ".pcie", "up_busy_ps"},
                                       {".pcie.down.util", ".pcie", "down_busy_ps"}}) {
                const auto& u = t.cols.at(node + x.column);
                double busy_ps = 0;
                for (size_t i = 0; i < t.rows; ++i) {
                    const double dt = time[i] - (i == 0 ? 0.0 : time[i - 1]);
                    busy_ps += u[i] * dt * 1e3;
                    if (x.column != ".nic.wqe_fetch.util") {
                        // Counted up to each boundary: never more than the interval. (WQE fetch
                        // counts a read's QP-context lookup when the read is issued.)
                        EXPECT_LE(u[i], 1.0)
                            << config << " " << node << x.column << " at " << time[i];
                    }
                    busiest[node + x.column] = std::max(busiest[node + x.column], u[i]);
                }
                // 4 decimals per cell: at most 0.00005 x dt ns of rounding per row.
                EXPECT_NEAR(busy_ps, stats["blocks"][node + x.block][x.counter].get<double>(),
                            0.00005 * end_ns * 1e3 + 1)
                    << config << " " << node << x.column;
            }
        }
        return busiest;
    };
    // 64 B WRITEs at the message rate: the receiving NIC's receive thread is busy in stretches
    // much longer than an interval; some interval is all busy.
    EXPECT_GT(check("/configs/bench/write_64b_msg_rate.json", "3000")["node1.nic.recv_path.util"],
              0.99);
    // 64 KiB WRITEs at line rate: PCIe reserves a message's TLPs microseconds ahead (the
    // sender's payload reads come down, the receiver's writes go up); all busy at times.
    auto line = check("/configs/bench/write_64k_line_rate.json", "50");
    EXPECT_GT(line["node0.pcie.down.util"], 0.99);
    EXPECT_GT(line["node1.pcie.up.util"], 0.99);
}

// Congestion-control columns: at each boundary, each node's mean and lowest rate over its QPs
// that have one, as cc.csv's rows up to then give them.
TEST(TimeSeries, CcRatesFollowCcCsv) {
    scratch s;
    const std::string out = s.dir + "/out";
    const cli_result r =
        rnicsim(s, {"run", source_dir() + "/configs/fabric/incast_8to1_dcqcn.json", "--out", out,
                    "--set", "workload.messages=8", "--set", "outputs.timeseries.interval_ns=2000",
                    "--set", R"(outputs.timeseries.sample=["cc"])"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const table t = read_table(read_file(out + "/timeseries.csv"));
    EXPECT_EQ(t.names.size(), 1u + 2 * 9);
    // cc.csv: time_ns,node,qpn,rate_mbps,target_mbps,alpha,cnps, in time order.
    struct row {
        double t;
        int node;
        int qpn;
        double mbps;
    };
    std::vector<row> rows;
    std::istringstream in(read_file(out + "/cc.csv"));
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
        std::stringstream f(line);
        std::vector<std::string> c;
        for (std::string x; std::getline(f, x, ',');) {
            c.push_back(x);
        }
        rows.push_back({std::stod(c[0]), std::stoi(c[1]), std::stoi(c[2]), std::stod(c[3])});
    }
    ASSERT_GT(rows.size(), 20u);
    const auto& time = t.cols.at("time_ns");
    double lowest = 1e9;
    for (int n = 0; n < 9; ++n) {
        const std::string node = "node" + std::to_string(n);
        size_t k = 0;
        std::map<int, double> rate;
        for (size_t i = 0; i < t.rows; ++i) {
            for (; k < rows.size() && rows[k].t <= time[i]; ++k) {
                if (rows[k].node == n) {
                    rate[rows[k].qpn] = rows[k].mbps;
                }
            }
            double sum = 0;
            double low = 0;
            for (const auto& [q, v] : rate) {
                sum += v;
                low = (low == 0 || v < low) ? v : low;
            }
            const double mean = rate.empty() ? 0 : std::floor(sum / rate.size());
            EXPECT_NEAR(t.cols.at(node + ".cc_mean_gbps")[i], mean / 1e3, 0.0005)
                << node << " at " << time[i];
            EXPECT_NEAR(t.cols.at(node + ".cc_min_gbps")[i], low / 1e3, 0.0005)
                << node << " at " << time[i];
            if (!rate.empty()) {
                lowest = std::min(lowest, low);
            }
        }
    }
    EXPECT_LT(lowest, 50000);  // DCQCN cut some sender below half its 100 Gb/s
}

TEST(TimeSeries, WindowAndColumnsAsAsked) {
    scratch s;
    const std::string out = s.dir + "/out";
    const cli_result r =
        rnicsim(s, incast(out, {"--set", "outputs.timeseries.interval_ns=1000", "--set",
                                "outputs.timeseries.start_ns=10000", "--set",
                                "outputs.timeseries.end_ns=20000", "--set",
                                R"(outputs.timeseries.sample=["queues"])"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const table t = read_table(read_file(out + "/timeseries.csv"));
    ASSERT_EQ(t.rows, 10u);
    EXPECT_EQ(t.cols.at("time_ns").front(), 11000);
    EXPECT_EQ(t.cols.at("time_ns").back(), 20000);
    for (const auto& n : t.names) {
        EXPECT_TRUE(n == "time_ns" || n.find("queue_bytes") != std::string::npos ||
                    n.find("buffer_bytes") != std::string::npos)
            << n;
    }
}

TEST(TimeSeries, ConfigErrorsNameTheirPath) {
    scratch s;
    const std::string q = source_dir() + "/configs/quickstart.json";
    struct bad {
        std::string set;
        std::string error;
    };
    for (const bad& b : std::vector<bad>{
             {"outputs.timeseries.interval_ns=-1", "outputs.timeseries.interval_ns: "},
             {R"(outputs.timeseries.sample=["links","cpu"])",
              "outputs.timeseries.sample.1: \"cpu\" is not one of"},
             {"outputs.timeseries.end_ns=0", "outputs.timeseries.end_ns: 0 is not after"},
             {"outputs.timeseries.every=1", "outputs.timeseries.every"},
             {"outputs.report=3", "outputs.report: "}}) {
        const cli_result r = rnicsim(s, {"validate", q, "--set", b.set});
        EXPECT_EQ(r.exit_code, 2) << b.set;
        EXPECT_NE(r.err.find(b.error), std::string::npos) << b.set << ": " << r.err;
    }
}

TEST(Report, WrittenByDefaultAndRebuiltFromTheFiles) {
    scratch s;
    const std::string out = s.dir + "/out";
    ASSERT_EQ(rnicsim(s, incast(out, {"--set", "outputs.timeseries.interval_ns=2000"})).exit_code,
              0);
    const std::string html = read_file(out + "/report.html");
    EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
    // Self-contained: Chart.js and the page's script inlined, nothing fetched.
    EXPECT_NE(html.find("Chart.js v"), std::string::npos);
    EXPECT_NE(html.find("id=\"rnicsim-data\""), std::string::npos);
    EXPECT_EQ(html.find("src=\"http"), std::string::npos);
    EXPECT_EQ(html.find("<link "), std::string::npos);
    EXPECT_EQ(html.find(out), std::string::npos);  // no path: the same wherever it was written
    for (const char* chart : {"\"goodput\"", "\"queues\"", "\"pausemap\"", "\"latency\"",
                              "\"stages\"", "\"slowdown\""}) {
        EXPECT_NE(html.find(chart), std::string::npos) << chart;
    }
    // `rnicsim report DIR` writes the same page from the files.
    fs::remove(out + "/report.html");
    const cli_result r = rnicsim(s, {"report", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(read_file(out + "/report.html") == html);
    // Off on request.
    const std::string none = s.dir + "/none";
    ASSERT_EQ(rnicsim(s, incast(none, {"--set", "outputs.report=false"})).exit_code, 0);
    EXPECT_FALSE(fs::exists(none + "/report.html"));
    // A folder without a run's files: exit 2 naming the file.
    const cli_result bad = rnicsim(s, {"report", s.dir + "/nothing"});
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("stats.json"), std::string::npos) << bad.err;
}

}  // namespace
