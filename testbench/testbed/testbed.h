// SPDX-License-Identifier: Apache-2.0
// The testbed: what a consumer program (an NDK workload of your own, a test) uses to run on
// simulated machines. From a scenario (JSON file or object, the same keys `rnicsim run` takes)
// it elaborates the nodes and their links exactly as `rnicsim run` does
// (testbench/scenario/runner), hands each consumer thread its node (the host, ready-made
// ndk::adapter_params whose limits are the NIC's), runs the threads in simulated time, and
// gathers the run's counters and outputs (stats.json, config.json, speed.json and, when the
// scenario's outputs.* ask for them, wire.pcap, trace.json, waves.vcd).
//
//   rnic::testbed::testbed tb = rnic::testbed::testbed::from_file("my.json");
//   tb.spawn(1, "server", [](rnic::testbed::node_env& n) { ... NDK calls ... });
//   tb.spawn(0, "client", [](rnic::testbed::node_env& n) { ... });
//   rnic::scenario::run_result r = tb.run();   // passed() unless a thread failed or timed out
//
// SystemC elaborates once per process: one testbed, one run() per process (a gtest TEST is its
// own process under ctest). Everything is per node index, for any number of nodes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include <nlohmann/json.hpp>

#include "ndk_shim/host/host_system.h"
#include "ndk_shim/ndk_sim.h"
#include "ndk_shim/ndkpi.h"
#include "testbench/scenario/run_result.h"
#include "testbench/scenario/scenario_config.h"

namespace rnic::scenario {
class node;
}

namespace rnic::testbed {

// What a consumer thread gets: its node. Valid for the thread's whole life.
class node_env {
public:
    size_t index() const { return m_index; }
    // The node's host: kernel memory (alloc), MDLs (build_mdl), CPU time; open_adapter takes it.
    ndk::host_system& host();
    // Node id, MAC, IPv4 and path MTU from topology.nodes[index], the NIC's rnic.limits, and the
    // transport timers of workload.{timeout_log,retry_count,rnr_retry}: ready for open_adapter.
    const ndk::adapter_params& adapter_params() const { return m_params; }
    // The IPv4 address (host order) of node `i`, e.g. the peer to connect to.
    uint32_t ip_of(size_t i) const;
    // A SOCKADDR_IN for node `i`'s address and `port` (both in network order inside).
    SOCKADDR_IN address_of(size_t i, uint16_t port) const;
    // The scenario's effective config.
    const scenario::scenario_config& config() const { return *m_cfg; }
    // Marks the run failed (the thread goes on): run_result::failures gets
    // "<thread name>: <what>" and the run does not pass.
    void fail(const std::string& what);
    // Figures the consumer measured, into run_result (summary of stats.json): messages and bytes
    // it completed over `duration_ns` (goodput and message rate follow), and latency samples.
    void report(uint64_t messages, uint64_t bytes, double duration_ns);
    void latency_sample(double ns);

private:
    friend class testbed;
    struct shared;
    node_env(size_t index, std::string thread, const scenario::scenario_config* cfg,
             scenario::node* n, shared* s);
    size_t m_index;
    std::string m_thread;
    const scenario::scenario_config* m_cfg;
    scenario::node* m_node;
    shared* m_shared;
    ndk::adapter_params m_params;
};

class testbed {
public:
    using consumer = std::function<void(node_env&)>;

    // A scenario object, with `--set`-style overrides ("workload.time_limit_ms=5"). Checked as
    // `rnicsim run` checks it: throws config::config_error listing every error with its path.
    explicit testbed(const nlohmann::json& scenario, const std::vector<std::string>& sets = {});
    static testbed from_file(const std::string& path, const std::vector<std::string>& sets = {});

    struct settings;
    // A program's command line: [SCENARIO.json] [--set PATH=VALUE]... [--out DIR]
    // [--time-limit-ms MS]. No scenario: the defaults (two nodes, one 100 Gb/s link). Fills
    // `s` (out_dir, time_limit_ms); throws config::config_error on bad usage or a bad scenario.
    static testbed from_args(int argc, char** argv, settings& s);

    const scenario::scenario_config& config() const { return m_cfg; }
    size_t node_count() const { return m_cfg.topology.nodes.size(); }

    // Starts `body` as an SC_THREAD named `name` on node `node` at time 0 of run(). Any number
    // of threads per node; out-of-range nodes throw std::out_of_range.
    void spawn(size_t node, const std::string& name, consumer body);

    struct settings {
        // Simulated-time limit of the run; <= 0: the scenario's workload.time_limit_ms. A
        // thread still running at the limit fails the run, naming the thread and the time.
        double time_limit_ms = 0;
        // Output folder, written as `rnicsim run` writes it (staged, renamed when complete):
        // stats.json, config.json, speed.json, and wire.pcap / trace.json / waves.vcd when the
        // scenario's outputs.pcap / trace / waves say so. Empty: no files.
        std::string out_dir;
    };
    // Elaborates and simulates until every thread has returned (then the simulation stops) or
    // the time limit; returns the counters (run_result::blocks, as stats.json), simulated time,
    // packets and the failures. Once per process. Throws what the models throw (sc_report) and
    // output::output_dir_error when out_dir cannot be used.
    scenario::run_result run(const settings& s);
    scenario::run_result run() { return run(settings{}); }

private:
    scenario::scenario_config m_cfg;
    struct thread_spec {
        size_t node;
        std::string name;
        consumer body;
    };
    std::vector<thread_spec> m_threads;
};

// ---------------------------------------------------------------------------------------------
// Waiting in simulated time, from a consumer thread. Each returns false when `timeout` passed
// first (the condition is checked once more at the deadline).
// ---------------------------------------------------------------------------------------------
// Until cond() holds, re-checking whenever `ev` fires.
bool wait_until(const std::function<bool()>& cond, const sc_core::sc_event& ev,
                const sc_core::sc_time& timeout);
// Until cond() holds, re-checking whenever the NIC writes the host's memory (a CQE, a
// completion word): the way a polling consumer waits (ndk::wait_for_completion_activity).
bool poll_until(ndk::host_system& host, const std::function<bool()>& cond,
                const sc_core::sc_time& timeout);

// One NDK request that may complete either way the documents allow: inline (any status but
// STATUS_PENDING, no callback) or STATUS_PENDING and exactly one callback. Pass `callback` /
// `create_callback` / `close_callback` with context() as the request context, then
// wait(returned status). After a timeout the callback may still come: the state it writes
// outlives the request then (it is released by the callback's arrival, or never).
class request {
public:
    request();
    ~request();
    request(const request&) = delete;
    request& operator=(const request&) = delete;
    static VOID callback(PVOID ctx, NTSTATUS st);
    static VOID create_callback(PVOID ctx, NTSTATUS st, NDK_OBJECT_HEADER* object);
    static VOID close_callback(PVOID ctx);
    PVOID context() { return m_state; }
    // The final status: `returned` itself unless it is STATUS_PENDING, else the callback's;
    // STATUS_IO_TIMEOUT if no callback came within `timeout`.
    NTSTATUS wait(NTSTATUS returned,
                  const sc_core::sc_time& timeout = sc_core::sc_time(10, sc_core::SC_MS));
    // The object a pending create delivered (null for an inline outcome: use the out-parameter).
    NDK_OBJECT_HEADER* object() const;

private:
    struct state;
    state* m_state;
};

// A create call, both outcomes: `call(create_callback, &req, &out)` is the Ndk* call with the
// completion and out-parameter filled in; returns the object or null (status in *status).
template <typename T, typename Call>
T* create(Call call, NTSTATUS* status = nullptr,
          const sc_core::sc_time& timeout = sc_core::sc_time(10, sc_core::SC_MS)) {
    request req;
    T* out = nullptr;
    const NTSTATUS returned = call(&request::create_callback, req.context(), &out);
    const NTSTATUS st = req.wait(returned, timeout);
    if (status != nullptr) {
        *status = st;
    }
    if (st != STATUS_SUCCESS) {
        return nullptr;
    }
    return returned == STATUS_PENDING ? reinterpret_cast<T*>(req.object()) : out;
}

// For a program's exit: prints each failure on stderr ("<program>: <failure>") and returns 0
// when the run passed, else 1.
int exit_code(const char* program, const scenario::run_result& r);

}  // namespace rnic::testbed
