// SPDX-License-Identifier: Apache-2.0
// Scenario runner: elaboration, simulation (with the waveform window and progress slices),
// outputs, result gathering.
#include "testbench/scenario/runner.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <tuple>

#include <systemc>

#include "hw/common/sim_context.h"
#include "testbench/output/pcap_writer.h"
#include "testbench/output/progress.h"
#include "testbench/output/timeline.h"
#include "testbench/scenario/node.h"
#include "testbench/scenario/workload.h"
#include "tlm/ethernet/eth_link.h"
#include "tlm/switch/eth_switch.h"

#include <fmt/format.h>

namespace rnic::scenario {

namespace {

// Everything one run simulates, elaborated from the expanded topology alone (cfg.topology:
// nodes, switches, links, addresses, routes). Members are built in order: the context first
// (blocks register their counters and traces in it), the links before the NICs and switches
// that attach to them.
struct testbench {
    hw::sim_context ctx;
    std::vector<std::unique_ptr<fabric::eth_link>> links;
    std::vector<std::unique_ptr<node>> nodes;
    std::vector<std::unique_ptr<fabric::eth_switch>> switches;
    std::unique_ptr<workload> load;

    // `vcd`: where the blocks trace their signals (the waves recorder), or null. `rtl_fst_base`:
    // where a Verilated send path writes its own waveform (<base>.fst, <base>.node1.fst), or empty.
    // `consumers`: run_options::consumers (then no workload), or empty.
    testbench(const scenario_config& cfg, sc_core::sc_trace_file* vcd, hw::event_tracer* tracer,
              std::string rtl_fst_base = {},
              const std::function<void(const std::vector<node*>&)>& consumers = {}) {
        ctx.vcd = vcd;
        ctx.tracer = tracer;
        ctx.rtl_fst_base = std::move(rtl_fst_base);
        const topology_config& t = cfg.topology;
        for (const link_desc& l : t.links) {
            links.push_back(std::make_unique<fabric::eth_link>(l.name.c_str(), l.cfg, ctx));
        }
        for (size_t i = 0; i < t.nodes.size(); ++i) {
            nodes.push_back(std::make_unique<node>(("node" + std::to_string(i)).c_str(), i, cfg,
                                                   *links[t.node_link[i]], t.node_side[i], ctx));
        }
        for (size_t s = 0; s < t.switches.size(); ++s) {
            const switch_desc& d = t.switches[s];
            auto sw = std::make_unique<fabric::eth_switch>(d.name.c_str(), t.sw, d.ports, ctx);
            for (uint32_t p = 0; p < d.ports; ++p) {
                const auto& pi = t.ports[s][p];
                sw->connect(p, *links[pi.link], pi.side);
                sw->set_port_address(p, pi.mac, pi.ip);
                sw->set_neighbor_mac(p, pi.neighbor_mac);
            }
            for (const route& r : t.routes[s]) {
                sw->add_route(r.prefix, r.length, r.ports);
            }
            switches.push_back(std::move(sw));
        }
        std::vector<node*> ns;
        for (auto& n : nodes) {
            ns.push_back(n.get());
        }
        if (consumers) {
            consumers(ns);
        } else {
            load = std::make_unique<workload>("workload", cfg, std::move(ns), ctx);
        }
        if (vcd != nullptr) {
            trace_qps(cfg, vcd);
        }
    }

    // The context state of the chosen QPs (outputs.waves_qps) on every node, as the NIC keeps
    // it in its QP context table: "<node>.nic.qp<N>.<field>". The table is sized at
    // elaboration, so a slot's fields can be traced before the driver creates the QP.
    void trace_qps(const scenario_config& cfg, sc_core::sc_trace_file* vcd) {
        std::vector<uint32_t> qpns = cfg.outputs.waves_qps;
        if (qpns.empty()) {
            for (uint32_t q = 1; q <= cfg.workload.qps + 1; ++q) {
                qpns.push_back(q);
            }
        }
        for (const auto& n : nodes) {
            for (uint32_t q : qpns) {
                hw::qp_context* c = n->nic.contexts().qp_slot(q);
                if (c == nullptr) {
                    continue;  // beyond rnic.limits.max_qps
                }
                const std::string p = std::string(n->nic.name()) + ".qp" + std::to_string(q) + ".";
                sc_core::sc_trace(vcd, c->state, p + "state", 8);
                sc_core::sc_trace(vcd, c->sq_producer, p + "sq_producer");
                sc_core::sc_trace(vcd, c->sq_fetched, p + "sq_fetched");
                sc_core::sc_trace(vcd, c->next_psn, p + "next_psn");
                sc_core::sc_trace(vcd, c->outstanding_reads, p + "outstanding_reads");
                sc_core::sc_trace(vcd, c->rq_producer, p + "rq_producer");
                sc_core::sc_trace(vcd, c->rq_consumer, p + "rq_consumer");
                sc_core::sc_trace(vcd, c->expected_psn, p + "expected_psn");
                sc_core::sc_trace(vcd, c->msn, p + "msn");
                if (n->nic.congestion_control() != nullptr) {
                    // Congestion control's slice of the QPC (0: not limited, line rate).
                    sc_core::sc_trace(vcd, c->cc.rate_mbps, p + "cc_rate_mbps");
                    sc_core::sc_trace(vcd, c->cc.target_mbps, p + "cc_target_mbps");
                    sc_core::sc_trace(vcd, c->cc.alpha, p + "cc_alpha");
                    sc_core::sc_trace(vcd, c->cc.cnps, p + "cc_cnps");
                }
            }
        }
    }
};

// cc.csv: every node's rate log, merged in time order (then node, then log order).
std::string make_cc_csv(const testbench& tb) {
    struct row {
        uint64_t time_ps;
        size_t node;
        size_t seq;
        const hw::cc::cc_engine::rate_row* r;
    };
    std::vector<row> rows;
    bool any = false;
    for (size_t i = 0; i < tb.nodes.size(); ++i) {
        const hw::cc::cc_engine* cc = tb.nodes[i]->nic.congestion_control();
        if (cc == nullptr) {
            continue;
        }
        any = true;
        const auto& log = cc->rate_log();
        for (size_t k = 0; k < log.size(); ++k) {
            rows.push_back({log[k].time_ps, i, k, &log[k]});
        }
    }
    if (!any) {
        return {};
    }
    std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) {
        return std::tie(a.time_ps, a.node, a.seq) < std::tie(b.time_ps, b.node, b.seq);
    });
    std::string out = "time_ns,node,qpn,rate_mbps,target_mbps,alpha,cnps\n";
    for (const row& x : rows) {
        out +=
            fmt::format("{}.{:03},{},{},{},{},{},{}\n", x.time_ps / 1000, x.time_ps % 1000, x.node,
                        x.r->qpn, x.r->rate_mbps, x.r->target_mbps, x.r->alpha, x.r->cnps);
    }
    return out;
}

double to_ns(const sc_core::sc_time& t) {
    return t / sc_core::sc_time(1, sc_core::SC_NS);
}

sc_core::sc_time ns(double v) {
    return sc_core::sc_time(v, sc_core::SC_NS);
}

bool stopped() {
    return sc_core::sc_get_status() == sc_core::SC_STOPPED ||
           sc_core::sc_end_of_simulation_invoked();
}

// Runs the simulation to its end the way one sc_start() would (to the time limit, or until
// sc_stop() or starvation without one), but in pieces: it pauses at the waveform window's
// edges to open and close waves.vcd, and every `quantum` of simulated time for the progress
// bar. Pausing adds no events; what runs and in which order is the same as in one piece.
class simulation_loop {
public:
    simulation_loop(const scenario_config& cfg, const run_options& opts, testbench& tb,
                    output::waves* waves)
        : m_cfg(cfg)
        , m_tb(tb)
        , m_waves(waves)
        , m_limited(cfg.workload.time_limit_ms > 0)
        , m_limit(m_limited ? sc_core::sc_time(cfg.workload.time_limit_ms, sc_core::SC_MS)
                            : sc_core::sc_max_time())
        , m_waves_path(opts.waves_vcd) {
        if (opts.progress) {
            m_bar = std::make_unique<output::progress_bar>();
        }
    }

    void run() {
        if (m_waves != nullptr && m_cfg.outputs.waves_start_ns <= 0) {
            m_waves->open(m_waves_path);  // from time 0: before the first time step
        }
        bool started = false;
        for (;;) {
            const sc_core::sc_time now = sc_core::sc_time_stamp();
            sc_core::sc_time next = m_limit;
            if (m_waves != nullptr && !m_waves->was_opened()) {
                next = std::min(next, ns(m_cfg.outputs.waves_start_ns));
            } else if (m_waves != nullptr && m_waves->is_open()) {
                next = std::min(next, ns(m_cfg.outputs.waves_end_ns));
            }
            if (m_bar) {
                next = std::min(next, now + m_quantum);
            }
            if (next >= m_limit) {
                // The last piece, exactly as a single sc_start() would end.
                if (m_limited) {
                    sc_core::sc_start(m_limit - now);
                } else {
                    sc_core::sc_start();
                }
                break;
            }
            if (!started) {
                // Initialization phase and the first delta cycle: from here on the kernel's
                // pending activity says whether anything will ever happen again.
                sc_core::sc_start(sc_core::SC_ZERO_TIME);
                started = true;
                continue;
            }
            if (next > now) {
                const auto wall = std::chrono::steady_clock::now();
                if (!advance_to(next)) {
                    break;
                }
                adapt_quantum(
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count());
            }
            at_pause();
        }
        if (m_waves != nullptr) {
            m_waves->close();  // the window was still open at the end of the run
        }
        if (m_bar) {
            m_bar->finish();
        }
    }

private:
    // Simulates up to `next` (events at `next` itself may be left for the next piece), moving
    // the clock there like sc_start(next - now) would, unless the simulation ends first: by
    // sc_stop(), or by starving (then, with a time limit, the clock still runs to the limit as
    // one sc_start(limit) would, and without one it stays at the last event). Returns false
    // when it ended.
    bool advance_to(const sc_core::sc_time& next) {
        if (!sc_core::sc_pending_activity()) {
            return end_starved();
        }
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        if (now + sc_core::sc_time_to_pending_activity() > next) {
            sc_core::sc_start(next - now);  // nothing happens before `next`
            return true;
        }
        // Stops at the last event before `next` if nothing follows it in time.
        sc_core::sc_start(next - now, sc_core::SC_EXIT_ON_STARVATION);
        if (stopped()) {
            return false;
        }
        const sc_core::sc_time reached = sc_core::sc_time_stamp();
        if (reached < next) {
            if (!sc_core::sc_pending_activity()) {
                return end_starved();
            }
            sc_core::sc_start(next - reached);  // the next event is after `next`
        }
        return true;
    }

    bool end_starved() {
        if (m_limited) {
            sc_core::sc_start(m_limit - sc_core::sc_time_stamp());
        }
        return false;
    }

    void at_pause() {
        const double t = to_ns(sc_core::sc_time_stamp());
        if (m_waves != nullptr && !m_waves->was_opened() && t >= m_cfg.outputs.waves_start_ns) {
            m_waves->open(m_waves_path);
        } else if (m_waves != nullptr && m_waves->is_open() && t >= m_cfg.outputs.waves_end_ns) {
            m_waves->close();
        }
        if (m_bar) {
            const uint64_t total = m_tb.load ? m_tb.load->total_messages() : 0;  // 0: consumers
            const uint64_t posted = m_tb.load ? m_tb.load->posted() : 0;
            double fraction =
                total > 0 ? static_cast<double>(posted) / static_cast<double>(total) : 0.0;
            if (m_limited) {
                fraction = std::max(fraction, sc_core::sc_time_stamp() / m_limit);
            }
            const double wall = m_bar->wall_s();
            // Simulated time, work requests posted, and speed: simulated ms per wall second.
            m_bar->update(
                fraction,
                fmt::format("sim {:.3f} ms  {}/{} WRs posted  {:.3f} sim-ms/s  wall {:.0f} s",
                            t / 1e6, posted, total, wall > 0 ? t / 1e6 / wall : 0.0, wall));
        }
    }

    // Aims at ~0.1 s of wall time per piece: short enough for a lively bar, long enough that
    // pausing costs nothing measurable.
    void adapt_quantum(double wall_s) {
        const double factor = std::clamp(0.1 / std::max(wall_s, 1e-4), 0.5, 2.0);
        m_quantum = std::clamp(m_quantum * factor, sc_core::sc_time(1, sc_core::SC_US),
                               sc_core::sc_time(100, sc_core::SC_MS));
    }

    const scenario_config& m_cfg;
    testbench& m_tb;
    output::waves* m_waves;
    bool m_limited;
    sc_core::sc_time m_limit;
    std::string m_waves_path;
    std::unique_ptr<output::progress_bar> m_bar;
    sc_core::sc_time m_quantum{10, sc_core::SC_US};
};

}  // namespace

run_result run_scenario(const scenario_config& cfg, const run_options& opts) {
    const auto wall_start = std::chrono::steady_clock::now();

    // Outputs outlive the testbench's use of them: they are closed before this returns, and
    // the context's pointers to them are cleared.
    auto tl = std::make_unique<output::timeline>(opts.trace);
    std::unique_ptr<output::waves> waves;
    if (!opts.waves_vcd.empty()) {
        waves = std::make_unique<output::waves>();
    }
    std::unique_ptr<output::pcap_writer> pcap;
    if (!opts.pcap.empty()) {
        pcap = std::make_unique<output::pcap_writer>(opts.pcap);
    }

    // The testbench is never deleted: SystemC keeps its processes (some still suspended when a
    // time limit ends the run) until the process exits, and a process holds one elaboration.
    // With waveforms on, an RTL send path also writes the RTL's own waveform next to waves.vcd
    // (rtl.fst for node 0, rtl.node1.fst for node 1): the model has no RTL signals to write.
    std::string rtl_fst_base;
    if (!opts.waves_vcd.empty()) {
        rtl_fst_base = (std::filesystem::path(opts.waves_vcd).parent_path() / "rtl").string();
    }
    auto* tb = new testbench(cfg, waves.get(), tl.get(), rtl_fst_base, opts.consumers);

    if (pcap) {
        // Stamped with the time the first bit leaves the sender's MAC, before fault injection
        // (a frame the link drops or corrupts is captured as sent). Picoseconds floor to ns.
        const double ps_per_unit = sc_core::sc_get_time_resolution().to_seconds() * 1e12;
        output::pcap_writer* w = pcap.get();
        // outputs.pcap_links: which directions of which links (empty: every one). Frames of
        // several links go into the file in the order they start; frames starting at the same
        // instant in (link, direction) order (pcap_writer::write_frame).
        const bool all = cfg.outputs.pcap_links.empty();
        for (size_t i = 0; i < tb->links.size(); ++i) {
            const std::string& name = cfg.topology.links[i].name;
            std::array<bool, 2> side = {all, all};
            for (const std::string& l : cfg.outputs.pcap_links) {
                side[0] = side[0] || l == name || l == name + ".dir0";
                side[1] = side[1] || l == name || l == name + ".dir1";
            }
            if (!side[0] && !side[1]) {
                continue;
            }
            const auto link = static_cast<uint32_t>(i);
            tb->links[i]->set_capture(
                [w, ps_per_unit, side, link](int from, const fabric::eth_frame& f) {
                    const uint8_t dir = from == 0 ? 0 : 1;
                    if (!side[dir]) {
                        return;
                    }
                    const auto ps = static_cast<uint64_t>(
                        std::llround(static_cast<double>(f.tx_start.value()) * ps_per_unit));
                    w->write_frame(ps, link, dir, f.data.data(), f.data.size());
                });
        }
    }

    simulation_loop(cfg, opts, *tb, waves.get()).run();

    for (auto& l : tb->links) {
        l->set_capture(nullptr);
    }
    tb->ctx.tracer = nullptr;
    tb->ctx.vcd = nullptr;
    if (pcap) {
        pcap->close();
    }
    tl->close();

    run_result r;
    if (tb->load) {
        tb->load->finish(r);
    }
    // Failures blocks recorded (hw::sim_context::fail) come first: they name the block.
    r.failures.insert(r.failures.begin(), tb->ctx.failures.begin(), tb->ctx.failures.end());
    r.files = tb->ctx.outputs;
    r.simulated_ns = static_cast<uint64_t>(std::llround(to_ns(sc_core::sc_time_stamp())));
    r.delta_cycles = sc_core::sc_delta_count();
    // Packet-hops: every frame on every link, both directions.
    r.packets = 0;
    for (auto& l : tb->links) {
        r.packets += l->get_stats(0).frames + l->get_stats(1).frames;
    }
    r.blocks = tb->ctx.stats.values();
    r.stages = tl->stage_latency();
    r.stages_by_block = tl->block_stage_latency();
    r.cc_csv = make_cc_csv(*tb);
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return r;
}

std::vector<output::waves::signal> scenario_signals(const scenario_config& cfg) {
    auto waves = std::make_unique<output::waves>();
    auto* tb = new testbench(cfg, waves.get(), nullptr);  // never simulated, never deleted
    tb->ctx.vcd = nullptr;
    return waves->signals();
}

}  // namespace rnic::scenario
