// SPDX-License-Identifier: Apache-2.0
// Unit tests of the waves recorder: the change-only writer for scalar variables (widths, signs,
// reals, enums, changes outside the traced width, the window), and the fallback to SystemC's
// VCD writer when a SystemC datatype is traced.
#include "testbench/output/waves.h"

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

#include <unistd.h>

namespace {

using rnic::output::waves;
using namespace sc_core;

std::string temp_vcd() {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    return ::testing::TempDir() + "rnic_waves_" + t->name() + "_" + std::to_string(::getpid()) +
           ".vcd";
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// The VCD as: var declarations (dotted name -> "kind width"), the "#t" of $dumpvars, the
// initial values and each later step's changes (dotted name -> value token).
struct parsed {
    std::map<std::string, std::string> vars;
    std::map<std::string, std::string> names;  // id -> dotted name
    uint64_t dump_time = ~uint64_t{0};
    std::map<std::string, std::string> initial;
    std::vector<std::pair<uint64_t, std::map<std::string, std::string>>> steps;
    std::string date;
};

parsed parse(const std::string& text) {
    parsed v;
    std::istringstream in(text);
    std::string tok;
    std::vector<std::string> scope;
    enum { HEADER, DUMPVARS, BODY } where = HEADER;
    uint64_t now = 0;
    auto value = [&](const std::string& first, std::map<std::string, std::string>& into) {
        std::string val = first, id;
        if (first[0] == 'b' || first[0] == 'r') {
            in >> id;
        } else {
            val = first.substr(0, 1);
            id = first.substr(1);
        }
        ASSERT_TRUE(v.names.count(id)) << "unknown id " << id;
        into[v.names[id]] = val;
    };
    while (in >> tok) {
        if (tok == "$date") {
            while (in >> tok && tok != "$end") {
                v.date += tok;
            }
        } else if (tok == "$scope") {
            std::string kind, name;
            in >> kind >> name >> tok;
            scope.push_back(name);
        } else if (tok == "$upscope") {
            in >> tok;
            scope.pop_back();
        } else if (tok == "$var") {
            std::string kind, width, id, name;
            in >> kind >> width >> id >> name;
            while (in >> tok && tok != "$end") {
            }
            std::string full;
            for (size_t i = 1; i < scope.size(); ++i) {
                full += scope[i] + ".";
            }
            v.names[id] = full + name;
            v.vars[full + name] = kind + " " + width;
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
            ADD_FAILURE() << "unexpected token " << tok;
        }
    }
    return v;
}

enum colour : unsigned { RED, GREEN, BLUE };
const char* colour_names[] = {"RED", "GREEN", "BLUE", nullptr};

// Variables of every scalar kind, changed by a thread at 10, 20 and 30 ns.
SC_MODULE(stimulus) {
    bool flag = false;
    uint8_t nibble = 3;  // traced 4 bits wide
    int16_t level = 5;
    uint64_t count = 0;
    double ratio = 0.5;
    unsigned colour_now = RED;

    SC_CTOR(stimulus) {
        SC_THREAD(run);
    }

    void trace(sc_trace_file * tf) {
        sc_trace(tf, flag, "top.ctl.flag");
        sc_trace(tf, nibble, "top.ctl.nibble", 4);
        sc_trace(tf, level, "top.level");
        sc_trace(tf, count, "top.count");
        sc_trace(tf, ratio, "top.ratio");
        sc_trace(tf, colour_now, "top.colour", colour_names);
    }

    void run() {
        wait(10, SC_NS);
        flag = true;
        level = -2;
        count = uint64_t{1} << 40;
        wait(10, SC_NS);
        nibble = 0x13;  // bit 4 is outside the traced width: the 4-bit value stays 3
        ratio = 0.25;
        colour_now = BLUE;
        wait(10, SC_NS);
        flag = false;
        nibble = 0x1a;
    }
};

TEST(Waves, ScalarWriterWritesEachChangeOnce) {
    stimulus top("stim");
    waves w;
    top.trace(&w);
    ASSERT_EQ(w.signals().size(), 6u);
    const std::string path = temp_vcd();
    w.open(path);
    sc_start(100, SC_NS);
    w.close();
    const parsed v = parse(read_file(path));
    std::remove(path.c_str());

    EXPECT_EQ(v.date, "rnicsim");
    EXPECT_EQ(v.vars.at("top.ctl.flag"), "wire 1");
    EXPECT_EQ(v.vars.at("top.ctl.nibble"), "wire 4");
    EXPECT_EQ(v.vars.at("top.level"), "wire 16");
    EXPECT_EQ(v.vars.at("top.count"), "wire 64");
    EXPECT_EQ(v.vars.at("top.ratio"), "real 1");
    EXPECT_EQ(v.vars.at("top.colour"), "wire 32");

    EXPECT_EQ(v.dump_time, 0u);
    EXPECT_EQ(v.initial, (std::map<std::string, std::string>{{"top.ctl.flag", "0"},
                                                             {"top.ctl.nibble", "b11"},
                                                             {"top.level", "b101"},
                                                             {"top.count", "b0"},
                                                             {"top.ratio", "r0.5"},
                                                             {"top.colour", "b0"}}));
    ASSERT_EQ(v.steps.size(), 3u);
    EXPECT_EQ(v.steps[0].first, 10000u);  // ps
    EXPECT_EQ(v.steps[0].second, (std::map<std::string, std::string>{
                                     {"top.ctl.flag", "1"},
                                     {"top.level", "b1111111111111110"},  // -2 in 16 bits
                                     {"top.count", "b1" + std::string(40, '0')}}));
    EXPECT_EQ(v.steps[1].first, 20000u);
    EXPECT_EQ(v.steps[1].second,  // no nibble: only a bit outside its width changed
              (std::map<std::string, std::string>{{"top.ratio", "r0.25"}, {"top.colour", "b10"}}));
    EXPECT_EQ(v.steps[2].first, 30000u);
    EXPECT_EQ(v.steps[2].second, (std::map<std::string, std::string>{{"top.ctl.flag", "0"},
                                                                     {"top.ctl.nibble", "b1010"}}));
}

TEST(Waves, WindowStartsWithTheValuesOfItsFirstStep) {
    stimulus top("stim");
    waves w;
    top.trace(&w);
    const std::string path = temp_vcd();
    sc_start(15, SC_NS);  // before the window: nothing written
    EXPECT_FALSE(w.was_opened());
    w.open(path);
    EXPECT_TRUE(w.is_open());
    sc_start(10, SC_NS);  // 15 .. 25 ns: resuming samples 15 ns, then the step at 20 ns
    w.close();
    EXPECT_FALSE(w.is_open());
    w.open(path);  // a closed window does not reopen
    EXPECT_FALSE(w.is_open());
    sc_start(20, SC_NS);
    const parsed v = parse(read_file(path));
    std::remove(path.c_str());
    EXPECT_EQ(v.dump_time, 15000u);                // the window's start
    EXPECT_EQ(v.initial.at("top.ctl.flag"), "1");  // set at 10 ns, before the window
    EXPECT_EQ(v.initial.at("top.colour"), "b0");
    ASSERT_EQ(v.steps.size(), 1u);  // 30 ns is after the window
    EXPECT_EQ(v.steps[0].first, 20000u);
    EXPECT_EQ(v.steps[0].second,
              (std::map<std::string, std::string>{{"top.ratio", "r0.25"}, {"top.colour", "b10"}}));
}

TEST(Waves, AWindowWithoutATimeStepLeavesNoFile) {
    stimulus top("stim");
    waves w;
    top.trace(&w);
    const std::string path = temp_vcd();
    sc_start(5, SC_NS);
    w.open(path);
    w.close();
    EXPECT_FALSE(std::ifstream(path).good());
}

TEST(Waves, OpenRejectsANameWithoutVcdAndReportsAnUncreatableFile) {
    waves w;
    EXPECT_THROW(w.open(temp_vcd() + ".txt"), std::invalid_argument);
    EXPECT_THROW(w.open("/nonexistent-dir/x.vcd"), std::runtime_error);
}

// A SystemC datatype: the whole file goes through SystemC's own VCD writer, same layout.
SC_MODULE(datatype_stimulus) {
    sc_dt::sc_bv<8> bits;
    bool flag = false;
    SC_CTOR(datatype_stimulus)
        : bits("00000001") {
        SC_THREAD(run);
    }
    void run() {
        wait(10, SC_NS);
        bits = "10000001";
        flag = true;
    }
};

TEST(Waves, SystemCDatatypesGoThroughSystemCsWriter) {
    datatype_stimulus top("stim");
    waves w;
    sc_trace(&w, top.bits, "top.bits");
    sc_trace(&w, top.flag, "top.flag");
    const std::string path = temp_vcd();
    w.open(path);
    sc_start(50, SC_NS);
    w.close();
    const std::string text = read_file(path);
    std::remove(path.c_str());
    EXPECT_NE(text.find("SystemC 2.3"), std::string::npos);  // SystemC's $version
    const parsed v = parse(text);
    EXPECT_EQ(v.date, "rnicsim");  // the header fix: no wall-clock date
    EXPECT_EQ(v.vars.at("top.bits"), "wire 8");
    EXPECT_EQ(v.initial.at("top.bits"), "b1");
    EXPECT_EQ(v.initial.at("top.flag"), "0");
    ASSERT_GE(v.steps.size(), 1u);  // SystemC's writer also puts an empty "#t" at its close
    EXPECT_EQ(v.steps[0].first, 10000u);
    EXPECT_EQ(v.steps[0].second.at("top.bits"), "b10000001");
    EXPECT_EQ(v.steps.size(), 1 + (v.steps.size() == 2 && v.steps[1].second.empty()));
    EXPECT_EQ(v.steps[0].second.at("top.flag"), "1");
}

}  // namespace
