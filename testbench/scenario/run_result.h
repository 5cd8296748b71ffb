// SPDX-License-Identifier: Apache-2.0
// What one scenario run produced: workload metrics, integrity, simulator speed, block counters.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rnic::scenario {

struct latency_summary {
    uint64_t samples = 0;  // signaled work requests, post to completion reaped
    double avg_ns = 0;
    uint64_t p50_ns = 0;  // nearest rank
    uint64_t p99_ns = 0;
    uint64_t max_ns = 0;
    std::vector<uint64_t> percentiles;  // nearest rank at 0, 1, ..., 100 % (report.html's CDF)
};

// One flow of the workload (flows.csv).
struct flow_result {
    uint32_t src = 0;
    uint32_t dst = 0;
    uint64_t bytes = 0;     // messages x message_bytes the flow was to move
    uint64_t messages = 0;  // completed
    uint64_t message_bytes = 0;
    double start_ns = -1;  // first post (-1: never connected)
    double end_ns = -1;    // last completion reaped
    bool complete = false;
    double fct_ns() const { return end_ns - start_ns; }
};

struct run_result {
    // Why the run failed (integrity mismatch, error completion, time limit...); empty = passed.
    std::vector<std::string> failures;

    uint64_t messages = 0;     // work requests completed by the initiator
    uint64_t bytes = 0;        // messages x message_bytes
    double duration_ns = 0;    // first post to last completion reaped (initiator)
    double goodput_gbps = 0;   // bytes x 8 / duration
    double msg_rate_mpps = 0;  // messages / duration
    latency_summary latency;

    uint64_t bytes_checked = 0;  // payload bytes compared with the pattern at their destination
    uint64_t mismatches = 0;     // bytes that differed

    uint64_t simulated_ns = 0;  // simulated time at the end of the run (setup and teardown too)
    double wall_s = 0;          // elaboration + simulation, wall clock
    uint64_t packets = 0;       // Ethernet frames on every link, both directions (packet-hops)
    // SystemC delta cycles of the run (speed.json): what the kernel did; nodes and switches with
    // nothing to do add none.
    uint64_t delta_cycles = 0;

    nlohmann::json blocks = nlohmann::json::object();  // {"<module name>": {"<counter>": v}}
    // Per-stage latency of the WQE timeline (output::timeline): {"<stage>": {"count",
    // "avg_ns", "p50_ns", "p99_ns", "max_ns"}}, and the same per block {"<block>": {...}}.
    nlohmann::json stages = nlohmann::json::object();
    nlohmann::json stages_by_block = nlohmann::json::object();
    // Extra output files blocks filed (hw::sim_context::outputs), e.g. divergence.json.
    std::map<std::string, std::string> files;

    // cc.csv (rnic.cc.algorithm other than "none"): one row per change of a QP's rate, target
    // or alpha and per CNP arrival, both nodes, in time order; empty when congestion control
    // is off.
    std::string cc_csv;
    // timeseries.csv (outputs.timeseries.interval_ns > 0); empty when off.
    std::string timeseries_csv;

    std::vector<flow_result> flows;  // in workload flow order

    // Partitioned runs (testbench/distributed): each rank's share of the work, for speed.json;
    // one entry (rank 0) for a single process.
    struct rank_speed {
        int rank = 0;
        uint64_t delta_cycles = 0;  // SystemC delta cycles this rank ran
        uint64_t windows = 0;       // synchronisation windows (0: a single process)
        double wall_s = 0;          // elaboration + simulation
        double wait_s = 0;          // time spent in the window collectives (waiting for peers)
        // CPU time (user + system) of this rank's process up to the end of its part, waiting
        // included (a rank polls while it waits, yielding the core to any other program).
        double cpu_s = 0;
    };
    std::vector<rank_speed> ranks;

    bool passed() const { return failures.empty(); }
};

}  // namespace rnic::scenario
