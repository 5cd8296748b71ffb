// SPDX-License-Identifier: Apache-2.0
// DIR/waves.vcd end to end (outputs.waves): hierarchical scopes for every block, every signal
// documented (`rnicsim signals`), converts with GTKWave's vcd2fst, the time window is exactly
// the full dump restricted to it, and the same bytes for the same config.
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/output/waves.h"
#include "testbench/system/outputs_common.h"

namespace {

using namespace rnic::outputs_test;
using nlohmann::json;

// A VCD as SystemC writes it: header ($scope/$var), optional "#t" and $dumpvars, then "#t"
// blocks of value changes ("b101 id", "1id").
struct vcd {
    std::map<std::string, std::string> names;    // id -> dotted name (without the SystemC scope)
    uint64_t dump_time = 0;                      // "#t" before $dumpvars (0 if none)
    std::map<std::string, std::string> initial;  // name -> value in $dumpvars
    std::vector<std::pair<uint64_t, std::map<std::string, std::string>>> steps;  // time, changes
    std::string date;
    bool ok = false;
};

vcd parse_vcd(const std::string& text) {
    vcd v;
    std::stringstream in(text);
    std::string tok;
    std::vector<std::string> scope;
    enum { HEADER, DUMPVARS, BODY } where = HEADER;
    uint64_t now = 0;
    auto value = [&](const std::string& first, std::map<std::string, std::string>& into) {
        std::string val, id;
        if (first[0] == 'b' || first[0] == 'r') {
            val = first;
            in >> id;
        } else {
            val = first.substr(0, 1);
            id = first.substr(1);
        }
        const auto it = v.names.find(id);
        EXPECT_NE(it, v.names.end()) << "unknown id " << id;
        if (it != v.names.end()) {
            into[it->second] = val;
        }
    };
    while (in >> tok) {
        if (tok == "$date") {
            std::string w;
            while (in >> w && w != "$end") {
                v.date += w + " ";
            }
        } else if (tok == "$scope") {
            std::string kind, name, end;
            in >> kind >> name >> end;
            scope.push_back(name);
        } else if (tok == "$upscope") {
            in >> tok;
            scope.pop_back();
        } else if (tok == "$var") {
            std::string kind, width, id, name, w;
            in >> kind >> width >> id >> name;
            while (in >> w && w != "$end") {
            }
            std::string full;
            for (size_t i = 1; i < scope.size(); ++i) {  // scope[0] is "SystemC"
                full += scope[i] + ".";
            }
            v.names[id] = full + name;
        } else if (tok == "$comment" || tok == "$version" || tok == "$timescale") {
            while (in >> tok && tok != "$end") {
            }
        } else if (tok == "$enddefinitions") {
            in >> tok;
        } else if (tok == "$dumpvars") {
            where = DUMPVARS;
            v.dump_time = now;
        } else if (tok == "$end" && where == DUMPVARS) {
            where = BODY;
        } else if (tok[0] == '#') {
            now = std::stoull(tok.substr(1));
            if (where == BODY) {
                v.steps.push_back({now, {}});
            }
        } else if (where == DUMPVARS) {
            value(tok, v.initial);
        } else if (where == BODY && !v.steps.empty()) {
            value(tok, v.steps.back().second);
        } else {
            ADD_FAILURE() << "unexpected VCD token " << tok;
            return v;
        }
    }
    v.ok = where == BODY;
    return v;
}

// Values of every signal at time `t` (after all changes at t).
std::map<std::string, std::string> state_at(const vcd& v, uint64_t t) {
    std::map<std::string, std::string> s = v.initial;
    for (const auto& [time, changes] : v.steps) {
        if (time > t) {
            break;
        }
        for (const auto& [n, val] : changes) {
            s[n] = val;
        }
    }
    return s;
}

struct waves_run {
    int exit_code = -1;
    std::string err;
    std::string text;
    json stats;
};

waves_run run_waves(const scratch& s, const std::string& name,
                    const std::vector<std::string>& sets) {
    const std::string out = s.dir + "/" + name;
    std::vector<std::string> all = {"outputs.waves=true"};
    all.insert(all.end(), sets.begin(), sets.end());
    const cli_result r = rnicsim(s, short_run(out, all));
    waves_run w;
    w.exit_code = r.exit_code;
    w.err = r.err;
    w.text = read_file(out + "/waves.vcd");
    if (fs::exists(out + "/stats.json")) {
        w.stats = json::parse(read_file(out + "/stats.json"));
    }
    return w;
}

TEST(OutputsWaves, EveryBlockHasItsScopeAndEverySignalIsDocumented) {
    scratch s;
    const waves_run w = run_waves(s, "w", {});
    ASSERT_EQ(w.exit_code, 0) << w.err;
    const vcd v = parse_vcd(w.text);
    ASSERT_TRUE(v.ok);
    std::set<std::string> names;
    for (const auto& [id, n] : v.names) {
        names.insert(n);
    }
    for (const char* n :
         {"link.dir0.busy", "link.mac_tx0.occupancy", "node0.pcie.up_writes_in_flight",
          "node0.nic.doorbell.sq_ready.occupancy", "node0.nic.doorbell.pending",
          "node0.nic.wqe_fetch.wqes.valid", "node0.nic.translation.lookups",
          "node0.nic.context_cache.qpc_hits", "node0.nic.dma_engine.reads_in_flight",
          "node0.nic.dma_engine.writes_in_flight", "node0.nic.tx_engine.requests.ready",
          "node0.nic.send_path.desc_fifo.occupancy", "node1.nic.recv_path.rx_fifo.occupancy",
          "node0.nic.cq_writer.requests.occupancy", "node0.nic.cq_writer.cqes",
          "node0.nic.cmd_processor.busy", "workload.node0.outstanding"}) {
        EXPECT_TRUE(names.count(n)) << n << " is not in waves.vcd";
    }
    // Each of the counters moved: the blocks' state really is sampled over the run.
    const auto end = state_at(v, ~uint64_t{0});
    EXPECT_EQ(end.at("node0.nic.cq_writer.cqes"), "b1000");  // 8 CQEs
    EXPECT_NE(end.at("node1.nic.recv_path.frames"), "b0");

    // `rnicsim signals` lists exactly these, each with a meaning.
    const cli_result sig = rnicsim(s, {"signals", quickstart()});
    ASSERT_EQ(sig.exit_code, 0) << sig.err;
    std::set<std::string> listed;
    std::stringstream lines(sig.out);
    std::string line;
    while (std::getline(lines, line)) {
        std::stringstream ls(line);
        std::string name, width;
        ls >> name >> width;
        listed.insert(name);
        EXPECT_EQ(line.find("(undocumented)"), std::string::npos) << line;
    }
    EXPECT_EQ(listed, names);

    // configs/README.md's table has every one, per node (node<i>) and NetDMA channel (<k>).
    const std::string readme = read_file(source_dir() + "/configs/README.md");
    ASSERT_FALSE(readme.empty());
    for (const std::string& n : names) {
        const std::string generic = std::regex_replace(
            std::regex_replace(std::regex_replace(n, std::regex("^node[0-9]+\\."), "node<i>."),
                               std::regex("\\.channel[0-9]+\\."), ".channel<k>."),
            std::regex("\\.qp[0-9]+\\."), ".qp<n>.");
        EXPECT_NE(readme.find("| `" + generic + "` |"), std::string::npos)
            << generic << " is not in configs/README.md's signal table";
    }
}

TEST(OutputsWaves, ConvertsWithVcd2fst) {
    const std::string vcd2fst = find_tool("vcd2fst");
    if (vcd2fst.empty()) {
        GTEST_SKIP() << "vcd2fst (GTKWave) not installed";
    }
    scratch s;
    const waves_run w = run_waves(s, "w", {});
    ASSERT_EQ(w.exit_code, 0) << w.err;
    const std::string fst = s.dir + "/w.fst";
    const cli_result c =
        shell(s, quote(vcd2fst) + " " + quote(s.dir + "/w/waves.vcd") + " " + quote(fst));
    ASSERT_EQ(c.exit_code, 0) << c.out << c.err;
    EXPECT_EQ(c.err.find("rror"), std::string::npos) << c.err;
    ASSERT_TRUE(fs::exists(fst));
    EXPECT_GT(fs::file_size(fst), 1000u);
    // And back: the same signals.
    const std::string fst2vcd = find_tool("fst2vcd");
    if (!fst2vcd.empty()) {
        const cli_result b = shell(s, quote(fst2vcd) + " " + quote(fst));
        ASSERT_EQ(b.exit_code, 0) << b.err;
        const vcd back = parse_vcd(b.out);
        EXPECT_EQ(back.names.size(), parse_vcd(w.text).names.size());
    }
}

TEST(OutputsWaves, WindowIsTheFullDumpRestrictedToIt) {
    scratch s;
    const waves_run full = run_waves(s, "full", {});
    ASSERT_EQ(full.exit_code, 0) << full.err;
    const vcd f = parse_vcd(full.text);
    ASSERT_TRUE(f.ok);
    const uint64_t end_ns = full.stats["sim"]["simulated_ns"];
    // A window in the middle of the data transfer.
    const uint64_t a_ns = end_ns / 3;
    const uint64_t b_ns = end_ns / 2;
    const waves_run win = run_waves(s, "win",
                                    {"outputs.waves_start_ns=" + std::to_string(a_ns),
                                     "outputs.waves_end_ns=" + std::to_string(b_ns)});
    ASSERT_EQ(win.exit_code, 0) << win.err;
    const vcd w = parse_vcd(win.text);
    ASSERT_TRUE(w.ok);
    EXPECT_EQ(w.names, f.names);
    EXPECT_LT(win.text.size(), full.text.size() / 2);

    // Initial values are stamped at the first sampled step of the window, and equal the full
    // dump's state then; every later step has exactly the full dump's changes.
    const uint64_t a_ps = a_ns * 1000;
    const uint64_t b_ps = b_ns * 1000;
    EXPECT_GE(w.dump_time, a_ps);
    EXPECT_LT(w.dump_time, b_ps);
    EXPECT_EQ(w.initial, state_at(f, w.dump_time));
    std::map<uint64_t, const std::map<std::string, std::string>*> full_steps;
    for (const auto& [t, c] : f.steps) {
        full_steps[t] = &c;
    }
    size_t compared = 0;
    for (const auto& [t, changes] : w.steps) {
        EXPECT_GT(t, w.dump_time);
        EXPECT_LE(t, b_ps) << "step after the window";
        if (changes.empty()) {
            continue;  // the closing time stamp
        }
        const auto it = full_steps.find(t);
        ASSERT_NE(it, full_steps.end()) << "step at " << t << " ps not in the full dump";
        EXPECT_EQ(changes, *it->second) << "at " << t << " ps";
        ++compared;
    }
    EXPECT_GT(compared, 10u);
    // ... and every step of the full dump inside the window is there.
    size_t inside = 0;
    for (const auto& [t, c] : f.steps) {
        inside += t > w.dump_time && t < b_ps && !c.empty() ? 1 : 0;
    }
    EXPECT_EQ(compared, inside);
}

TEST(OutputsWaves, WindowAfterTheEndWritesNoFile) {
    scratch s;
    const waves_run w = run_waves(s, "w", {"outputs.waves_start_ns=1e15"});
    ASSERT_EQ(w.exit_code, 0) << w.err;
    EXPECT_FALSE(fs::exists(s.dir + "/w/waves.vcd"));
    EXPECT_TRUE(fs::exists(s.dir + "/w/stats.json"));
}

TEST(OutputsWaves, SameConfigGivesTheSameBytes) {
    scratch s;
    const waves_run a = run_waves(s, "a", {"workload.qps=2"});
    const waves_run b = run_waves(s, "b", {"workload.qps=2"});
    ASSERT_EQ(a.exit_code, 0) << a.err;
    ASSERT_EQ(b.exit_code, 0) << b.err;
    ASSERT_GT(a.text.size(), 1000u);
    EXPECT_TRUE(a.text == b.text) << "waves.vcd differs between identical runs";
    EXPECT_EQ(parse_vcd(a.text).date, "rnicsim ");  // the wall-clock date is not kept
}

// The QPs' context state: by default every QP the workload uses, else only the chosen QPNs.
TEST(OutputsWaves, QpStateForTheChosenQpsOnly) {
    scratch s;
    const waves_run all = run_waves(s, "all", {"workload.qps=2"});
    ASSERT_EQ(all.exit_code, 0) << all.err;
    const vcd a = parse_vcd(all.text);
    ASSERT_TRUE(a.ok);
    // The largest value each signal took (the QPs are destroyed, their contexts cleared, at
    // the end of the run).
    std::map<std::string, std::set<uint64_t>> seen;  // every value each signal took
    auto peaks = [&seen](const vcd& v) {
        std::map<std::string, uint64_t> peak;
        auto see = [&](const std::string& name, const std::string& val) {
            const uint64_t x = val[0] == 'b' ? std::stoull(val.substr(1), nullptr, 2) : 0;
            peak[name] = std::max(peak[name], x);
            seen[name].insert(x);
        };
        for (const auto& [n, val] : v.initial) {
            see(n, val);
        }
        for (const auto& [t, changes] : v.steps) {
            for (const auto& [n, val] : changes) {
                see(n, val);
            }
        }
        return peak;
    };
    const auto peak = peaks(a);
    // The workload's QPs: those whose send queue got work on node 0 (4 WRs each).
    std::vector<std::string> used;
    std::set<std::string> qps_traced;
    const std::regex qp_signal("node0\\.nic\\.(qp[0-9]+)\\.sq_producer");
    for (const auto& [name, value] : peak) {
        std::smatch m;
        if (std::regex_match(name, m, qp_signal)) {
            qps_traced.insert(m[1]);
            if (value == 4) {
                used.push_back(m[1]);
            }
        }
    }
    ASSERT_EQ(used.size(), 2u) << "QPs traced: " << qps_traced.size();
    EXPECT_EQ(qps_traced.size(), 3u);  // the GSI QP and the workload's two
    // Both sides went through INIT and RTR to RTS (and to ERROR at the teardown), and the
    // responder accepted every PSN the requester sent.
    for (const std::string& qp : used) {
        for (const char* node : {"node0", "node1"}) {
            const std::set<uint64_t>& states = seen.at(std::string(node) + ".nic." + qp + ".state");
            EXPECT_TRUE(states.count(1) && states.count(2) && states.count(3)) << node << " " << qp;
        }
        EXPECT_EQ(peak.at("node0.nic." + qp + ".sq_fetched"), 4u) << qp;
        EXPECT_GT(peak.at("node0.nic." + qp + ".next_psn"), 4u) << qp;
        EXPECT_EQ(peak.at("node0.nic." + qp + ".next_psn"),
                  peak.at("node1.nic." + qp + ".expected_psn"))
            << qp;
    }

    // Only the second one.
    const std::string qpn = used[1].substr(2);
    const waves_run one =
        run_waves(s, "one", {"workload.qps=2", "outputs.waves_qps=[" + qpn + "]"});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    const vcd o = parse_vcd(one.text);
    ASSERT_TRUE(o.ok);
    size_t qp_signals = 0;
    for (const auto& [id, name] : o.names) {
        if (std::regex_search(name, std::regex("\\.qp[0-9]+\\."))) {
            EXPECT_NE(name.find("." + used[1] + "."), std::string::npos) << name;
            ++qp_signals;
        }
    }
    EXPECT_EQ(qp_signals, 2u * 9);  // nine fields on each node
    EXPECT_LT(o.names.size(), a.names.size());
    EXPECT_EQ(peaks(o).at("node0.nic." + used[1] + ".sq_producer"), 4u);
    EXPECT_EQ(json::parse(read_file(s.dir + "/one/config.json"))["outputs"]["waves_qps"],
              json::array({std::stoi(qpn)}));
}

// The header patch on a file as SystemC writes it when the window opens late.
TEST(OutputsWaves, HeaderFixMovesInitialValuesToTheWindowStart) {
    scratch s;
    const std::string path = s.dir + "/x.vcd";
    const std::string original =
        "$date\n     Nov 22, 2026       01:48:09\n$end\n\n$timescale\n     1 ps\n$end\n\n"
        "$scope module SystemC $end\n$var wire    1  aaaaa  b       $end\n$upscope $end\n"
        "$enddefinitions  $end\n\n$comment\nAll initial values are dumped below at time "
        "2.5e-08 sec = 25000 timescale units.\n$end\n\n$dumpvars\n0aaaaa\n$end\n\n#30000\n"
        "1aaaaa\n";
    std::ofstream(path, std::ios::binary) << original;
    rnic::output::fix_vcd_header(path);
    const std::string fixed = read_file(path);
    EXPECT_EQ(fixed.size(), original.size());
    const vcd v = parse_vcd(fixed);
    ASSERT_TRUE(v.ok);
    EXPECT_EQ(v.date, "rnicsim ");
    EXPECT_EQ(v.dump_time, 25000u);
    EXPECT_EQ(v.initial.at("b"), "0");
    ASSERT_EQ(v.steps.size(), 1u);
    EXPECT_EQ(v.steps[0].first, 30000u);
    EXPECT_NE(fixed.find("#25000\n"), std::string::npos);
    EXPECT_EQ(fixed.substr(fixed.find("$dumpvars")), original.substr(original.find("$dumpvars")));
}

}  // namespace

// With waveforms on, a Verilated send path writes the RTL's own waveform next to waves.vcd, one
// file per node; the model writes none.
TEST(OutputsWaves, RtlSendPathWritesItsOwnFstPerNode) {
    scratch s;
    const waves_run rtl = run_waves(s, "rtl", {"rnic.send_path.impl=rtl"});
    ASSERT_EQ(rtl.exit_code, 0) << rtl.err;
    for (const char* f : {"/rtl/rtl.fst", "/rtl/rtl.node1.fst"}) {
        ASSERT_TRUE(fs::exists(s.dir + f)) << f;
        EXPECT_GT(fs::file_size(s.dir + f), 100u) << f;
    }
    const std::string fst2vcd = find_tool("fst2vcd");
    if (!fst2vcd.empty()) {
        const cli_result b = shell(s, quote(fst2vcd) + " " + quote(s.dir + "/rtl/rtl.fst"));
        ASSERT_EQ(b.exit_code, 0) << b.err;
        EXPECT_NE(b.out.find("$var"), std::string::npos);
        EXPECT_NE(b.out.find("#"), std::string::npos);  // value changes, not just a header
    }
    const waves_run model = run_waves(s, "model", {});
    ASSERT_EQ(model.exit_code, 0) << model.err;
    EXPECT_FALSE(fs::exists(s.dir + "/model/rtl.fst"));
}
