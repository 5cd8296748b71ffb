// SPDX-License-Identifier: Apache-2.0
// A scenario file (configs/*.json): topology, NIC, host, workload and outputs, typed, with
// defaults, every error named by its JSON path (configs/README.md documents every key).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/common/config_reader.h"
#include "hw/nic/nic_config.h"
#include "ndk_shim/host/host_system.h"
#include "testbench/scenario/topology.h"
#include "tlm/ethernet/eth_link.h"

namespace rnic::scenario {

// MIXED: each message draws WRITE, SEND or READ (workload_config::mix, operation_of()).
enum class operation { WRITE, SEND, READ, MIXED };
const char* to_string(operation op);

// Weights of the operations of a "mixed" workload (key "workload.mix").
struct operation_mix {
    uint32_t write = 1;
    uint32_t read = 1;
    uint32_t send = 1;
};

// workload.pattern: who talks to whom (flows.h).
enum class traffic_pattern {
    PAIRS,
    INCAST,
    PERMUTATION,
    ALL_TO_ALL,
    RING_ALLREDUCE,
    FLOWS,
    PING_PONG
};

// A flow-size distribution (workload.cdf): (bytes, cumulative fraction) points, the fraction
// from 0 to 1, interpolated linearly between points (the DCTCP / HPCC traffic generators'
// convention; files list "bytes percent" per line, configs/cdf/).
struct size_cdf {
    std::vector<std::pair<double, double>> points;
    double mean() const;
    double draw(double u) const;  // u uniform in [0, 1)
};

// One entry of workload.flows: one message of `bytes` from src to dst, posted at start_ns.
struct flow_entry {
    uint32_t src = 0;
    uint32_t dst = 1;
    uint64_t bytes = 0;
    double start_ns = 0;
};
const char* to_string(traffic_pattern p);

struct workload_config {
    traffic_pattern pattern = traffic_pattern::PAIRS;
    // "pairs": [source, destination] node indices, one flow each.
    std::vector<std::pair<uint32_t, uint32_t>> pairs{{0, 1}};
    uint32_t receiver = 0;  // "incast": the node every sender writes to
    uint32_t senders = 0;   // "incast": how many senders (0: every other node)
    // "flows": an explicit list, or arrivals drawn from a size distribution.
    std::vector<flow_entry> flow_list;
    std::string cdf_file;      // "bytes percent" lines (configs/cdf/web_search.txt)
    size_cdf cdf;              // its points
    double load = 0.3;         // of each source's link rate
    double duration_us = 100;  // arrivals in [start_us, start_us + duration_us)
    double start_us = 100;     // the QPs connect before
    // Each flow: the operation, `messages` of `message_bytes` over `qps` QP pairs.
    operation op = operation::WRITE;  // key "operation": "write" | "send" | "read" | "mixed"
    operation_mix mix;                // "mixed" only: relative weights, not all 0
    uint64_t message_bytes = 65536;   // per work request, one SGE
    uint64_t messages = 1000;         // per flow, spread over its QPs
    uint32_t qps = 1;                 // connected QP pairs per flow
    uint32_t queue_depth = 16;        // outstanding work requests per QP
    uint64_t seed = 1;                // payload pattern
    uint32_t signal_every = 1;        // one signaled WR in N (others NDK_OP_FLAG_SILENT_SUCCESS)
    uint32_t inline_threshold = 0;    // WRITE/SEND of at most this many bytes go inline
    // Doorbell batching (Kalia et al. ATC'16): the work requests posted to one QP in one go
    // share a doorbell, up to this many (the others are posted with NDK_OP_FLAG_DEFER).
    uint32_t doorbell_batch = 1;
    bool use_events = false;       // arm the CQ and sleep instead of polling it
    double time_limit_ms = 10000;  // simulated; the run fails if the workload is not done
    // Simulated time node 0 stays idle (connected, nothing posted) after its last completion
    // and before it disconnects: what idle time costs the simulator (configs/bench/idle_10ms).
    double idle_ms = 0;
    // Transport attributes the provider gives every QP (IBA QP attributes; NDK has no per-QP
    // knob for them): local ACK timeout 4.096 us x 2^timeout_log, retries, RNR retries.
    uint32_t timeout_log = 14;
    uint32_t retry_count = 7;
    uint32_t rnr_retry = 7;  // 7: retry forever
};

// The operation of message `i` of QP `q`: `w.op`, or for MIXED a draw from the workload seed
// weighted by `w.mix` (the same on both nodes and in tests: a hash of seed, q and i).
operation operation_of(const workload_config& w, uint32_t q, uint64_t i);
// True when some message of the workload is a SEND (node 1 posts receives).
inline bool has_sends(const workload_config& w) {
    return w.op == operation::SEND || (w.op == operation::MIXED && w.mix.send > 0);
}

// outputs.timeseries: timeseries.csv, the fabric's state every interval_ns (0: off) from
// start_ns to end_ns; `sample` says which columns (testbench/output/timeseries.h).
struct timeseries_config {
    double interval_ns = 0;
    double start_ns = 0;
    double end_ns = 1e18;
    bool links = true;   // link<i>.dir<s>.gbps: frame bytes sent per direction
    bool pauses = true;  // link<i>.dir<s>.paused: 1 when PFC pauses some priority of it
    bool queues = true;  // <switch>.port<p>.queue_bytes (all priorities), <switch>.buffer_bytes
    bool nodes = true;   // node<i>.goodput_gbps, node<i>.mpps: the node's completed WRs
    // node<i>.<resource>.util: busy fraction of each resource with a busy-time counter
    bool utilization = true;
    // node<i>.cc_{mean,min}_gbps: its QPs' congestion-control rates (rnic.cc.algorithm set)
    bool cc = true;
    bool on() const { return interval_ns > 0; }
};

struct outputs_config {
    std::string dir = "out";    // rnicsim run --out DIR is --set outputs.dir=DIR
    bool waves = false;         // DIR/waves.vcd
    double waves_start_ns = 0;  // waves.vcd covers [waves_start_ns, waves_end_ns) only
    double waves_end_ns = 1e18;
    bool pcap = false;   // DIR/wire.pcap: every frame on the link
    bool trace = false;  // DIR/trace.json: Chrome trace events of every WQE
    // The trace's form: "json" (trace.json, Chrome trace events) or "perfetto"
    // (trace.perfetto-trace, Perfetto's protobuf), and its filters: slices overlapping
    // [trace_start_ns, trace_end_ns), the WQEs of trace_qps, of (and the blocks of) trace_nodes.
    std::string trace_format = "json";
    double trace_start_ns = 0;
    double trace_end_ns = 1e18;
    std::vector<uint32_t> trace_qps;
    std::vector<uint32_t> trace_nodes;
    // wire.pcap captures these links only: "<link>" (both directions), "<link>.dir0" (side a
    // to side b) or "<link>.dir1", with <link> "link" back to back and "link<i>"
    // (topology.links.<i>) otherwise; empty = every link.
    std::vector<std::string> pcap_links;
    // waves.vcd holds the context state of these QPNs on every node (qp<N>.*); empty = QPNs 1
    // to workload.qps + 1 (the GSI QP and the workload's QPs, numbered in creation order).
    std::vector<uint32_t> waves_qps;
    timeseries_config timeseries;
    bool report = true;  // DIR/report.html: the run's results as charts, one offline file
};

struct scenario_config {
    topology_config topology;
    hw::nic_config rnic;
    ndk::host_config host;
    workload_config workload;
    outputs_config outputs;
    nlohmann::json effective;  // every key, defaults filled in (config.json)
};

// Parses a whole scenario. Throws config::config_error listing every error found.
scenario_config parse_scenario(const nlohmann::json& j);

// Applies one `--set PATH=VALUE` to a scenario document. VALUE is parsed as JSON, else taken as
// a string; PATH is dot-separated, numeric components index arrays. Objects (and arrays) on the
// way are created as needed. Returns an error message ("" on success).
std::string apply_override(nlohmann::json& doc, const std::string& assignment);

// Resolves the keys that name other files, relative to the scenario `file`'s folder, then to the
// working directory: "rnic": {"preset": FILE} (the preset's NIC parameters under the document's
// own rnic keys, a JSON merge patch; the key is removed) and workload.cdf (rewritten to the file
// read). Returns the errors, each starting with its JSON path.
std::vector<std::string> resolve_file_references(nlohmann::json& doc, const std::string& file);

// Reads the file, applies the overrides in order and parses the result. Throws
// config::config_error (unreadable file, JSON syntax, bad overrides, invalid values). The
// overrides go before the file references are resolved, so `--set rnic.preset=FILE` works.
scenario_config load_scenario(const std::string& file, const std::vector<std::string>& overrides);

}  // namespace rnic::scenario
