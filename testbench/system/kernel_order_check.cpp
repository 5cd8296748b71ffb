// SPDX-License-Identifier: Apache-2.0
// kernel_order_check: one scenario run in a single process with unrelated timed events in the
// kernel, every output written as `rnicsim run` writes it. ctest label `mpi` runs it on every
// shipped multi-node scenario (testbench/mpi/mpi_test.py `kernel_order`) and wants every output
// but speed.json byte for byte the plain single process's: a model that served the processes of
// one instant in the order the kernel happens to run them would change with these events, as it
// changes between partitionings (testbench/distributed/README.md, "Same-instant order";
// testbench/system/kernel_order_test.cpp for the fixed cases).
//
//   kernel_order_check SCENARIO --out DIR --from-us F --span-us S [--set PATH=VALUE]...
//
// Exit 0: the run passed and its outputs are in DIR; 1: it ran but a check failed (outputs
// written); 2: bad arguments or config.
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <systemc>

#include "testbench/common/unrelated_events.h"
#include "testbench/output/output_dir.h"
#include "testbench/output/run_report.h"
#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"

int sc_main(int argc, char** argv) {
    // As rnicsim: SystemC's own informational notes ("Simulation stopped by user.") unprinted.
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    std::string scenario, out;
    double from_us = -1, span_us = -1;
    std::vector<std::string> sets;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--out" && has_value) {
            out = argv[++i];
        } else if (a == "--set" && has_value) {
            sets.emplace_back(argv[++i]);
        } else if (a == "--from-us" && has_value) {
            from_us = std::atof(argv[++i]);
        } else if (a == "--span-us" && has_value) {
            span_us = std::atof(argv[++i]);
        } else if (scenario.empty() && a.rfind("--", 0) != 0) {
            scenario = a;
        } else {
            std::cerr << "kernel_order_check: unexpected argument '" << a << "'\n";
            return 2;
        }
    }
    if (scenario.empty() || out.empty() || from_us < 0 || span_us <= 0) {
        std::cerr << "usage: kernel_order_check SCENARIO --out DIR --from-us F --span-us S "
                     "[--set PATH=VALUE]...\n";
        return 2;
    }
    try {
        sets.push_back("outputs.dir=" + out);  // as `rnicsim run --out DIR`
        const rnic::scenario::scenario_config cfg = rnic::scenario::load_scenario(scenario, sets);
        rnic::output::output_dir dir(out);
        rnic::scenario::run_options opts;
        opts.waves_vcd = cfg.outputs.waves ? dir.staged("waves.vcd") : "";
        opts.pcap = cfg.outputs.pcap ? dir.staged("wire.pcap") : "";
        opts.trace = cfg.outputs.trace ? dir.staged("trace.json") : "";
        rnic::testing::add_unrelated_events(from_us, span_us);
        const rnic::scenario::run_result r = rnic::scenario::run_scenario(cfg, opts);
        rnic::output::write_run_outputs(dir, cfg, r);
        dir.commit();
        if (!r.passed()) {
            std::cerr << "kernel_order_check: the run failed:\n";
            for (const auto& f : r.failures) {
                std::cerr << "  " << f << "\n";
            }
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "kernel_order_check: " << e.what() << "\n";
        return 2;
    }
}
