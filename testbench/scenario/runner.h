// SPDX-License-Identifier: Apache-2.0
// Runs one scenario: elaborates the nodes and the link, runs the NDK workload to its end, checks
// the data, and gathers every counter; optionally writes the wire capture, the WQE timeline and
// the waveforms on the way.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "testbench/output/waves.h"
#include "testbench/scenario/run_result.h"
#include "testbench/scenario/scenario_config.h"

namespace rnic::distributed {
class mpi_comm;
}

namespace rnic::scenario {

class node;

// Where the optional outputs of a run go (the CLI passes paths in the staging folder); an
// empty path leaves that output off and costs nothing.
struct run_options {
    // waves.vcd: every block's traced signals and the context state of the QPs in
    // cfg.outputs.waves_qps, limited to cfg.outputs.waves_start_ns .. waves_end_ns (the file is
    // created at the window start and closed at its end).
    std::string waves_vcd;
    // wire.pcap: every frame (of the links in cfg.outputs.pcap_links) as its first bit leaves a
    // MAC.
    std::string pcap;
    std::string trace;  // trace.json: Chrome trace events of every stage of every WQE
    // A progress bar on stderr once the run lasts 2 s of wall time (output::progress_bar). The
    // simulation then runs in slices of simulated time between which the bar is redrawn: no
    // events are added, and the results are the same as without it.
    bool progress = false;
    // Consumer programs in place of the scenario's workload (testbench/testbed): when set, the
    // workload is not built; this is called once, after the nodes and links are elaborated and
    // before the simulation starts, with every node in topology order, and spawns the consumer
    // threads. The run ends when a consumer calls sc_stop(), when nothing is left to simulate,
    // or at workload.time_limit_ms; run_result's workload figures stay zero.
    std::function<void(const std::vector<node*>&)> consumers;
    // A partitioned run (testbench/distributed, built with MPI): this rank simulates its part of
    // the topology (cfg.topology partitioned over comm->size() ranks), in windows synchronised
    // with the others; rank 0's result and files (wire.pcap, trace.json, waves.vcd) are what one
    // process gives; every rank needs the same paths non-empty for the outputs that are on. Null:
    // the whole topology in this process. The progress bar is for one process.
    distributed::mpi_comm* comm = nullptr;
};

// Elaborates and simulates `cfg` to the end of its workload (or workload.time_limit_ms) and
// returns the results; a failed check is in run_result::failures, not an exception. The
// per-stage latency (run_result::stages) is always aggregated. SystemC allows one elaboration
// per process: call this once. Throws what the models throw (sc_report on a model error) and
// std::runtime_error when an output file cannot be written.
run_result run_scenario(const scenario_config& cfg, const run_options& opts = {});

// Elaborates `cfg` without simulating it and returns every signal waves.vcd would hold, in
// registration order. Uses up the process's one elaboration, like run_scenario().
std::vector<output::waves::signal> scenario_signals(const scenario_config& cfg);

}  // namespace rnic::scenario
