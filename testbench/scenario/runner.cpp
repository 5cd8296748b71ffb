// SPDX-License-Identifier: Apache-2.0
// Scenario runner: elaboration, simulation, result gathering.
#include "testbench/scenario/runner.h"

#include <array>
#include <chrono>
#include <cmath>
#include <memory>

#include <systemc>

#include "hw/common/sim_context.h"
#include "ndk_shim/provider/fabric_cm.h"
#include "testbench/scenario/node.h"
#include "testbench/scenario/workload.h"
#include "tlm/ethernet/eth_link.h"

namespace rnic::scenario {

namespace {

// Everything one run simulates. Members are built in order: the context first (blocks register
// their counters and traces in it), the link before the NICs that attach to it.
struct testbench {
    hw::sim_context ctx;
    ndk::fabric_cm cm;
    std::unique_ptr<fabric::eth_link> link;
    std::array<std::unique_ptr<node>, NODES> nodes;
    std::unique_ptr<workload> load;

    testbench(const scenario_config& cfg, const std::string& vcd_base) {
        if (!vcd_base.empty()) {
            // Before elaboration, so every block's constructor can trace into it.
            ctx.vcd = sc_core::sc_create_vcd_trace_file(vcd_base.c_str());
            ctx.vcd->set_time_unit(1, sc_core::SC_PS);  // the kernel's resolution
        }
        link = std::make_unique<fabric::eth_link>("link", cfg.topology.link, ctx);
        for (size_t i = 0; i < NODES; ++i) {
            nodes[i] =
                std::make_unique<node>(("node" + std::to_string(i)).c_str(), i, cfg, *link, ctx);
        }
        load = std::make_unique<workload>(
            "workload", cfg, std::array<node*, NODES>{nodes[0].get(), nodes[1].get()}, cm, ctx);
    }
};

double to_ns(const sc_core::sc_time& t) {
    return t / sc_core::sc_time(1, sc_core::SC_NS);
}

}  // namespace

run_result run_scenario(const scenario_config& cfg, const std::string& vcd_base) {
    const auto wall_start = std::chrono::steady_clock::now();

    // The testbench is never deleted: SystemC keeps its processes (some still suspended when a
    // time limit ends the run) until the process exits, and a process holds one elaboration.
    auto* tb = new testbench(cfg, vcd_base);

    if (cfg.workload.time_limit_ms > 0) {
        sc_core::sc_start(sc_core::sc_time(cfg.workload.time_limit_ms, sc_core::SC_MS));
    } else {
        sc_core::sc_start();
    }
    if (tb->ctx.vcd != nullptr) {
        sc_core::sc_close_vcd_trace_file(tb->ctx.vcd);
        tb->ctx.vcd = nullptr;
    }

    run_result r;
    tb->load->finish(r);
    r.simulated_ns = static_cast<uint64_t>(std::llround(to_ns(sc_core::sc_time_stamp())));
    r.packets = tb->link->get_stats(0).frames + tb->link->get_stats(1).frames;
    r.blocks = tb->ctx.stats.values();
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return r;
}

}  // namespace rnic::scenario
