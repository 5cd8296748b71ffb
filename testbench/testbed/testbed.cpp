// SPDX-License-Identifier: Apache-2.0
// The testbed: consumer threads on the nodes of an elaborated scenario (testbench/scenario).
#include "testbench/testbed/testbed.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <utility>

#include "hw/common/config_reader.h"
#include "hw/common/numeric.h"
#include "testbench/output/output_dir.h"
#include "testbench/output/run_report.h"
#include "testbench/scenario/node.h"
#include "testbench/scenario/runner.h"

#include <arpa/inet.h>
#include <fmt/format.h>

namespace rnic::testbed {

// What the threads share with run(): how many still run, and what they reported.
struct node_env::shared {
    size_t running = 0;
    std::vector<std::string> failures;
    std::vector<std::string> running_names;
    uint64_t messages = 0;
    uint64_t bytes = 0;
    double duration_ns = 0;
    std::vector<double> latency_ns;
};

node_env::node_env(size_t index, std::string thread, const scenario::scenario_config* cfg,
                   scenario::node* n, shared* s)
    : m_index(index)
    , m_thread(std::move(thread))
    , m_cfg(cfg)
    , m_node(n)
    , m_shared(s) {
    const scenario::node_config& nc = cfg->topology.nodes[index];
    m_params.node_id = static_cast<uint32_t>(index);
    m_params.mac = nc.mac;
    m_params.ip = nc.ip;
    m_params.limits = cfg->rnic.limits;  // the NIC's own limits: never copied by hand
    m_params.default_mtu = nc.mtu;
    m_params.timeout_log = static_cast<uint8_t>(cfg->workload.timeout_log);
    m_params.retry_count = static_cast<uint8_t>(cfg->workload.retry_count);
    m_params.rnr_retry = static_cast<uint8_t>(cfg->workload.rnr_retry);
    m_params.cm_timeout_ns = ndk::cm_timeout_ns_of(cfg->host.cm_response_timeout_log);
    m_params.cm_retries = cfg->host.cm_retries;
}

ndk::host_system& node_env::host() {
    return m_node->host;
}

uint32_t node_env::ip_of(size_t i) const {
    return m_cfg->topology.nodes.at(i).ip;
}

SOCKADDR_IN node_env::address_of(size_t i, uint16_t port) const {
    SOCKADDR_IN a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(ip_of(i));
    return a;
}

void node_env::fail(const std::string& what) {
    m_shared->failures.push_back(m_thread + ": " + what);
}

void node_env::report(uint64_t messages, uint64_t bytes, double duration_ns) {
    m_shared->messages += messages;
    m_shared->bytes += bytes;
    m_shared->duration_ns = std::max(m_shared->duration_ns, duration_ns);
}

void node_env::latency_sample(double ns) {
    m_shared->latency_ns.push_back(ns);
}

testbed::testbed(const nlohmann::json& scenario, const std::vector<std::string>& sets) {
    nlohmann::json doc = scenario;
    std::vector<std::string> errors;
    for (const std::string& s : sets) {
        const std::string e = scenario::apply_override(doc, s);
        if (!e.empty()) {
            errors.push_back(e);
        }
    }
    if (!errors.empty()) {
        throw config::config_error(errors);
    }
    m_cfg = scenario::parse_scenario(doc);
}

testbed testbed::from_file(const std::string& path, const std::vector<std::string>& sets) {
    testbed tb(nlohmann::json::object());
    tb.m_cfg = scenario::load_scenario(path, sets);
    return tb;
}

testbed testbed::from_args(int argc, char** argv, settings& s) {
    std::string scenario;
    std::vector<std::string> sets;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--set" && has_value) {
            sets.push_back(argv[++i]);
        } else if (a == "--out" && has_value) {
            s.out_dir = argv[++i];
        } else if (a == "--time-limit-ms" && has_value) {
            s.time_limit_ms = std::atof(argv[++i]);
        } else if (a.rfind("--", 0) != 0 && scenario.empty()) {
            scenario = a;
        } else {
            throw config::config_error({"usage: " + std::string(argv[0]) +
                                        " [SCENARIO.json] [--set PATH=VALUE]... [--out DIR] "
                                        "[--time-limit-ms MS] (at \"" +
                                        a + "\")"});
        }
    }
    return scenario.empty() ? testbed(nlohmann::json::object(), sets) : from_file(scenario, sets);
}

int exit_code(const char* program, const scenario::run_result& r) {
    for (const std::string& f : r.failures) {
        std::cerr << program << ": " << f << "\n";
    }
    return r.passed() ? 0 : 1;
}

void testbed::spawn(size_t node, const std::string& name, consumer body) {
    if (node >= node_count()) {
        throw std::out_of_range(
            fmt::format("testbed::spawn: node {} of {} nodes", node, node_count()));
    }
    m_threads.push_back({node, name, std::move(body)});
}

namespace {
// Nearest-rank percentile of sorted samples (as the workload's latency summary).
uint64_t rank(const std::vector<double>& v, double p) {
    return static_cast<uint64_t>(std::llround(nearest_rank(v, p)));
}
}  // namespace

scenario::run_result testbed::run(const settings& s) {
    scenario::scenario_config cfg = m_cfg;
    if (s.time_limit_ms > 0) {
        cfg.workload.time_limit_ms = s.time_limit_ms;
        cfg.effective["workload"]["time_limit_ms"] = s.time_limit_ms;
    }
    std::unique_ptr<output::output_dir> dir;
    scenario::run_options opts;
    if (!s.out_dir.empty()) {
        dir = std::make_unique<output::output_dir>(s.out_dir);
        opts.waves_vcd = cfg.outputs.waves ? dir->staged("waves.vcd") : "";
        opts.pcap = cfg.outputs.pcap ? dir->staged("wire.pcap") : "";
        opts.trace = cfg.outputs.trace ? dir->staged(cfg.outputs.trace_format == "perfetto"
                                                         ? "trace.perfetto-trace"
                                                         : "trace.json")
                                       : "";
    }

    // Lives until the process ends, like the elaborated modules the threads refer to.
    auto* sh = new node_env::shared;
    auto* envs = new std::vector<std::unique_ptr<node_env>>;
    const scenario::scenario_config* kept = new scenario::scenario_config(cfg);
    opts.consumers = [this, sh, envs, kept](const std::vector<scenario::node*>& nodes) {
        for (const thread_spec& t : m_threads) {
            envs->push_back(std::unique_ptr<node_env>(
                new node_env(t.node, t.name, kept, nodes.at(t.node), sh)));
            node_env* env = envs->back().get();
            ++sh->running;
            sh->running_names.push_back(t.name);
            consumer body = t.body;
            const std::string name = t.name;
            sc_core::sc_spawn(
                [sh, env, body, name] {
                    body(*env);
                    sh->running_names.erase(
                        std::find(sh->running_names.begin(), sh->running_names.end(), name));
                    if (--sh->running == 0) {
                        sc_core::sc_stop();  // every consumer returned: the run is over
                    }
                },
                ("testbed_" + name).c_str());  // apart from the nodes' module names
        }
    };

    scenario::run_result r = scenario::run_scenario(cfg, opts);
    r.failures.insert(r.failures.begin(), sh->failures.begin(), sh->failures.end());
    for (const std::string& name : sh->running_names) {
        r.failures.push_back(fmt::format(
            "testbed: consumer thread '{}' still running at the time limit ({} ms simulated)", name,
            cfg.workload.time_limit_ms));
    }
    r.messages = sh->messages;
    r.bytes = sh->bytes;
    r.duration_ns = sh->duration_ns;
    if (sh->duration_ns > 0) {
        r.goodput_gbps = static_cast<double>(sh->bytes) * 8 / sh->duration_ns;
        r.msg_rate_mpps = static_cast<double>(sh->messages) * 1e3 / sh->duration_ns;
    }
    std::vector<double>& lat = sh->latency_ns;
    if (!lat.empty()) {
        std::sort(lat.begin(), lat.end());
        double sum = 0;
        for (double v : lat) {
            sum += v;
        }
        r.latency.samples = lat.size();
        r.latency.avg_ns = sum / static_cast<double>(lat.size());
        r.latency.p50_ns = rank(lat, 0.50);
        r.latency.p99_ns = rank(lat, 0.99);
        r.latency.max_ns = static_cast<uint64_t>(std::llround(lat.back()));
    }
    if (dir) {
        dir->write("stats.json", output::to_file_text(output::make_stats_json(r)));
        dir->write("config.json", output::to_file_text(cfg.effective));
        dir->write("speed.json", output::to_file_text(output::make_speed_json(r)));
        dir->commit();
    }
    return r;
}

// ---------------------------------------------------------------------------------------------
bool wait_until(const std::function<bool()>& cond, const sc_core::sc_event& ev,
                const sc_core::sc_time& timeout) {
    const sc_core::sc_time deadline = sc_core::sc_time_stamp() + timeout;
    while (!cond()) {
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        if (now >= deadline) {
            return false;
        }
        sc_core::wait(deadline - now, ev);
    }
    return true;
}

bool poll_until(ndk::host_system& host, const std::function<bool()>& cond,
                const sc_core::sc_time& timeout) {
    const sc_core::sc_time deadline = sc_core::sc_time_stamp() + timeout;
    // A spinning CPU sees the NIC's writes at once; a write that landed while the poll itself
    // was in flight (its doorbell MMIO) is caught by the next spin, at most `spin` later. The
    // spin period backs off (200 ns to 100 us) while nothing happens: no busy simulated idle.
    double spin_ns = 200;
    while (!cond()) {
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        if (now >= deadline) {
            return false;
        }
        const double left_ns = (deadline - now).to_seconds() * 1e9;
        const sc_core::sc_time before = now;
        host.wait_for_dma(std::min(spin_ns, left_ns));
        const bool woke_early =
            sc_core::sc_time_stamp() - before < sc_core::sc_time(spin_ns, sc_core::SC_NS);
        spin_ns = woke_early ? 200 : std::min(spin_ns * 2, 100e3);
    }
    return true;
}

struct request::state {
    sc_core::sc_event event;
    bool done = false;
    bool abandoned = false;  // the request timed out and is gone: the callback frees this
    NTSTATUS status = STATUS_PENDING;
    NDK_OBJECT_HEADER* object = nullptr;
    void finish(NTSTATUS st) {
        if (abandoned) {
            delete this;  // a late callback: nobody waits any more
            return;
        }
        status = st;
        done = true;
        event.notify(sc_core::SC_ZERO_TIME);
    }
};

request::request()
    : m_state(new state) {}

request::~request() {
    if (!m_state->abandoned) {
        delete m_state;
    }  // else it timed out: the late callback (if it ever comes) releases the state
}

VOID request::callback(PVOID ctx, NTSTATUS st) {
    static_cast<state*>(ctx)->finish(st);
}

VOID request::create_callback(PVOID ctx, NTSTATUS st, NDK_OBJECT_HEADER* object) {
    auto* s = static_cast<state*>(ctx);
    if (!s->abandoned) {
        s->object = object;
    }
    s->finish(st);
}

VOID request::close_callback(PVOID ctx) {
    static_cast<state*>(ctx)->finish(STATUS_SUCCESS);
}

NDK_OBJECT_HEADER* request::object() const {
    return m_state->object;
}

NTSTATUS request::wait(NTSTATUS returned, const sc_core::sc_time& timeout) {
    if (returned != STATUS_PENDING) {
        return returned;
    }
    state* s = m_state;
    if (!wait_until([s] { return s->done; }, s->event, timeout)) {
        s->abandoned = true;
        return STATUS_IO_TIMEOUT;
    }
    return s->status;
}

}  // namespace rnic::testbed
