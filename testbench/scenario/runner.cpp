// SPDX-License-Identifier: Apache-2.0
// Scenario runner: elaboration, simulation (with the waveform window and progress slices),
// outputs, result gathering.
#include "testbench/scenario/runner.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>

#include <systemc>

#include "hw/common/sim_context.h"
#include "testbench/distributed/mpi_comm.h"
#include "testbench/distributed/partition.h"
#include "testbench/output/pcap_stream.h"
#include "testbench/output/pcap_writer.h"
#include "testbench/output/progress.h"
#include "testbench/output/spool.h"
#include "testbench/output/timeline.h"
#include "testbench/output/timeseries.h"
#include "testbench/scenario/node.h"
#include "testbench/scenario/workload.h"
#include "tlm/ethernet/eth_link.h"
#include "tlm/switch/eth_switch.h"
#include "tlm/switch/pfc_deadlock.h"

#include <fmt/format.h>
#include <sys/resource.h>

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
    fabric::pfc_deadlock_monitor deadlocks;  // over this process's switches
    std::unique_ptr<workload> load;

    // `vcd`: where the blocks trace their signals (the waves recorder), or null. `rtl_fst_base`:
    // where a Verilated send path writes its own waveform (<base>.fst, <base>.node1.fst), or empty.
    // `consumers`: run_options::consumers (then no workload), or empty.
    // `part` (a partitioned run): only rank `rank`'s nodes and switches, and the links with at
    // least one end here, are elaborated (the others stay null); a link with one end elsewhere
    // is a cut link.
    testbench(const scenario_config& cfg, sc_core::sc_trace_file* vcd, hw::event_tracer* tracer,
              std::string rtl_fst_base = {},
              const std::function<void(const std::vector<node*>&)>& consumers = {},
              const distributed::partition* part = nullptr, int rank = 0) {
        ctx.vcd = vcd;
        ctx.tracer = tracer;
        ctx.rtl_fst_base = std::move(rtl_fst_base);
        const topology_config& t = cfg.topology;
        auto here = [&](const link_end& e) { return part == nullptr || part->rank_of(e) == rank; };
        // waves.vcd's signals keyed by the block that registers them (partitioned runs).
        auto* waves = dynamic_cast<output::waves*>(vcd);
        auto unit = [waves](uint64_t kind, uint64_t i,
                            std::function<uint64_t(const std::string&)> sub = {}) {
            if (waves != nullptr) {
                waves->begin_unit(kind << 40 | i, std::move(sub));
            }
        };
        for (const link_desc& l : t.links) {
            if (!here(l.a) && !here(l.b)) {
                links.push_back(nullptr);
                continue;
            }
            unit(0, links.size());
            links.push_back(std::make_unique<fabric::eth_link>(l.name.c_str(), l.cfg, ctx));
            for (int side = 0; side < 2; ++side) {
                const link_end& e = side == 0 ? l.a : l.b;
                // The MAC at this end runs on its node's or switch's oscillator.
                const double ppm = e.is_switch ? t.switch_ppm[e.index] : t.node_ppm[e.index];
                if (ppm != 0 || t.clocks.jitter_ps > 0) {
                    links.back()->set_clock(
                        side, ppm, t.clocks.jitter_ps,
                        t.jitter_seed(static_cast<uint32_t>(links.size() - 1), side));
                }
                if (!here(e)) {
                    links.back()->set_remote(side, t.cut_through(e));
                    if (waves != nullptr) {  // the other rank sends in this direction
                        const std::string s = std::to_string(side) + ".";
                        waves->disown(l.name + ".dir" + s);
                        waves->disown(l.name + ".mac_tx" + s);
                        waves->disown(l.name + ".mac_ctrl_tx" + s);
                    }
                }
            }
        }
        for (size_t i = 0; i < t.nodes.size(); ++i) {
            if (!here(link_end{false, static_cast<uint32_t>(i), 0})) {
                nodes.push_back(nullptr);
                continue;
            }
            unit(1, i);
            nodes.push_back(std::make_unique<node>(("node" + std::to_string(i)).c_str(), i, cfg,
                                                   *links[t.node_link[i]], t.node_side[i], ctx));
        }
        std::vector<std::vector<fabric::eth_switch::route_epoch>> epochs = route_epochs(t);
        for (size_t s = 0; s < t.switches.size(); ++s) {
            if (!here(link_end{true, static_cast<uint32_t>(s), 0})) {
                switches.push_back(nullptr);
                continue;
            }
            const switch_desc& d = t.switches[s];
            unit(2, s);
            auto sw = std::make_unique<fabric::eth_switch>(d.name.c_str(), d.cfg, d.ports, ctx);
            for (uint32_t p = 0; p < d.ports; ++p) {
                const auto& pi = t.ports[s][p];
                sw->connect(p, *links[pi.link], pi.side);
                sw->set_port_address(p, pi.mac, pi.ip);
                sw->set_neighbor_mac(p, pi.neighbor_mac);
            }
            for (const route& r : t.routes[s]) {
                sw->add_route(r.prefix, r.length, r.ports);
            }
            sw->set_route_epochs(std::move(epochs[s]));
            if (const double ppm = t.switch_ppm[s]; ppm != 0) {  // its ports' MACs (above)
                ctx.stats.add(
                    d.name, "clock_ppm", [ppm] { return nlohmann::json(ppm); }, "ppm",
                    "offset of this switch's oscillator (topology.clocks): its ports' MACs");
            }
            switches.push_back(std::move(sw));
        }
        std::vector<node*> ns;  // null: another rank's node
        for (auto& n : nodes) {
            ns.push_back(n.get());
        }
        // The workload registers per node ("workload.node<i>.<signal>").
        unit(3, 0, [](const std::string& name) -> uint64_t {
            const size_t at = name.find(".node");
            return at == std::string::npos ? 0 : std::strtoull(name.c_str() + at + 5, nullptr, 10);
        });
        if (consumers) {
            consumers(ns);
        } else {
            load = std::make_unique<workload>("workload", cfg, std::move(ns), ctx);
        }
        // PFC deadlocks (tlm/switch/README.md): a cycle of stuck queues ends the run, named.
        for (auto& sw : switches) {
            if (sw && sw->config().pfc_deadlock_detect_ns > 0) {
                deadlocks.add(*sw);
            }
        }
        // Cut links whose far end is another rank's switch (a cycle through it is not seen).
        for (size_t li = 0; li < t.links.size(); ++li) {
            const link_desc& l = t.links[li];
            for (int side = 0; side < 2; ++side) {
                const link_end& e = side == 0 ? l.a : l.b;
                if (links[li] && e.is_switch && !here(e)) {
                    deadlocks.add_remote_switch_end(
                        links[li].get(), side,
                        t.switches[e.index].name + ".port" + std::to_string(e.port));
                }
            }
        }
        deadlocks.set_on_deadlock([this](const std::string& what) {
            if (load) {
                load->fabric_failure(what);
            } else {
                sc_core::sc_stop();
            }
        });
        if (vcd != nullptr) {
            trace_qps(cfg, vcd, waves);
        }
    }

    // The context state of the chosen QPs (outputs.waves_qps) on every node, as the NIC keeps
    // it in its QP context table: "<node>.nic.qp<N>.<field>". The table is sized at
    // elaboration, so a slot's fields can be traced before the driver creates the QP.
    void trace_qps(const scenario_config& cfg, sc_core::sc_trace_file* vcd, output::waves* waves) {
        std::vector<uint32_t> qpns = cfg.outputs.waves_qps;
        if (qpns.empty()) {
            for (uint32_t q = 1; q <= cfg.workload.qps + 1; ++q) {
                qpns.push_back(q);
            }
        }
        for (size_t i = 0; i < nodes.size(); ++i) {
            const auto& n = nodes[i];
            if (!n) {
                continue;
            }
            if (waves != nullptr) {
                waves->begin_unit(uint64_t{4} << 40 | i);
            }
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

// This rank's part of cc.csv: every local node's rate log as [time_ps, node, seq, qpn,
// rate_mbps, target_mbps, alpha, cnps] rows; null when congestion control is off.
nlohmann::json cc_rows(const testbench& tb) {
    nlohmann::json rows = nlohmann::json::array();
    bool any = false;
    for (size_t i = 0; i < tb.nodes.size(); ++i) {
        if (!tb.nodes[i]) {
            continue;
        }
        const hw::cc::cc_engine* cc = tb.nodes[i]->nic.congestion_control();
        if (cc == nullptr) {
            continue;
        }
        any = true;
        const auto& log = cc->rate_log();
        for (size_t k = 0; k < log.size(); ++k) {
            const auto& r = log[k];
            rows.push_back({r.time_ps, i, k, r.qpn, r.rate_mbps, r.target_mbps, r.alpha, r.cnps});
        }
    }
    return any ? rows : nlohmann::json();
}

// cc.csv: every node's rate log, merged in time order (then node, then log order).
std::string make_cc_csv(const std::vector<nlohmann::json>& parts) {
    using row = std::array<uint64_t, 8>;
    std::vector<row> rows;
    bool any = false;
    for (const auto& p : parts) {
        if (p.is_null()) {
            continue;
        }
        any = true;
        for (const auto& r : p) {
            rows.push_back(r.get<row>());
        }
    }
    if (!any) {
        return {};
    }
    std::sort(rows.begin(), rows.end(), [](const row& a, const row& b) {
        return std::tie(a[0], a[1], a[2]) < std::tie(b[0], b[1], b[2]);
    });
    std::string out = "time_ns,node,qpn,rate_mbps,target_mbps,alpha,cnps\n";
    for (const row& x : rows) {
        out += fmt::format("{}.{:03},{},{},{},{},{},{}\n", x[0] / 1000, x[0] % 1000, x[1], x[3],
                           x[4], x[5], x[6], x[7]);
    }
    return out;
}

double to_ns(const sc_core::sc_time& t);
sc_core::sc_time ns(double v);

// timeseries.csv's columns (outputs.timeseries), from the topology alone: every rank declares
// all of them in the same order and reads only what it simulates (a link direction belongs to
// the rank that sends in it); null when the output is off.
std::unique_ptr<output::timeseries> make_timeseries(const scenario_config& cfg,
                                                    const testbench& tb) {
    const timeseries_config& c = cfg.outputs.timeseries;
    if (!c.on()) {
        return nullptr;
    }
    const double ps_per_unit = sc_core::sc_get_time_resolution().to_seconds() * 1e12;
    const uint64_t end = c.end_ns * 1e3 < 1.8e19 ? ns(c.end_ns).value() : ~uint64_t{0};
    auto ts = std::make_unique<output::timeseries>(
        ns(c.start_ns).value(), std::max<uint64_t>(1, ns(c.interval_ns).value()), end, ps_per_unit);
    using kind = output::timeseries::kind;
    const topology_config& t = cfg.topology;
    for (size_t i = 0; i < t.links.size(); ++i) {
        const fabric::eth_link* l = tb.links[i].get();
        for (int side = 0; side < 2; ++side) {
            const bool mine = l != nullptr && !l->remote(side);
            const std::string p = t.links[i].name + ".dir" + std::to_string(side);
            if (c.links) {  // frame bytes x 8 per ns: Gbit/s
                ts->add(p + ".gbps", kind::rate, 8.0, 3,
                        mine ? std::function<uint64_t(uint64_t)>(
                                   [l, side](uint64_t) { return l->get_stats(side).bytes; })
                             : nullptr);
            }
            if (c.pauses) {
                ts->add(p + ".paused", kind::instant, 1.0, 0,
                        mine ? std::function<uint64_t(uint64_t)>([l, side](uint64_t at) {
                            return l->paused_at(side, sc_core::sc_time::from_value(at)) != 0 ? 1
                                                                                             : 0;
                        })
                             : nullptr);
            }
        }
    }
    if (c.queues) {
        for (size_t s = 0; s < t.switches.size(); ++s) {
            const fabric::eth_switch* sw = tb.switches[s].get();
            const switch_desc& d = t.switches[s];
            for (uint32_t p = 0; p < d.ports; ++p) {
                ts->add(d.name + ".port" + std::to_string(p) + ".queue_bytes", kind::instant, 1.0,
                        0,
                        sw != nullptr ? std::function<uint64_t(uint64_t)>([sw, p](uint64_t) {
                            uint64_t b = 0;
                            for (uint32_t q = 0; q < fabric::SWITCH_PRIORITIES; ++q) {
                                b += sw->buffer().at(p, q).egress_bytes;
                            }
                            return b;
                        })
                                      : nullptr);
            }
            ts->add(d.name + ".buffer_bytes", kind::instant, 1.0, 0,
                    sw != nullptr ? std::function<uint64_t(uint64_t)>(
                                        [sw](uint64_t) { return sw->buffer_used(); })
                                  : nullptr);
        }
    }
    if (c.nodes) {
        for (size_t i = 0; i < t.nodes.size(); ++i) {
            const bool mine = tb.nodes[i] != nullptr;
            const uint64_t* bytes = mine && tb.load ? tb.load->done_bytes(i) : nullptr;
            const uint64_t* msgs = mine && tb.load ? tb.load->done_messages(i) : nullptr;
            auto reader = [mine](const uint64_t* v) -> std::function<uint64_t(uint64_t)> {
                if (!mine) {
                    return nullptr;
                }
                return [v](uint64_t) { return v != nullptr ? *v : 0; };
            };
            const std::string n = "node" + std::to_string(i);
            ts->add(n + ".goodput_gbps", kind::rate, 8.0, 3, reader(bytes));
            ts->add(n + ".mpps", kind::rate, 1e3, 4, reader(msgs));
        }
    }
    if (c.utilization) {
        // The node resources with a busy-time counter (stats.json "utilization"): busy ps per
        // ns of the interval / 1000, the busy fraction. Each counted up to the boundary: WQE
        // fetch and the receive thread through their stats (busy stretches under way included),
        // PCIe without the TLP time reserved beyond the boundary.
        const double ps_per_unit = sc_core::sc_get_time_resolution().to_seconds() * 1e12;
        for (size_t i = 0; i < t.nodes.size(); ++i) {
            const std::string n = "node" + std::to_string(i) + ".";
            const bool mine = tb.nodes[i] != nullptr;
            // The blocks by their SystemC names (the stats.json block names).
            auto block = [&](const std::string& name) -> sc_core::sc_object* {
                sc_core::sc_object* o = sc_core::sc_find_object((n + name).c_str());
                if (o == nullptr) {
                    throw std::logic_error("timeseries: no block " + n + name);
                }
                return o;
            };
            std::function<uint64_t(uint64_t)> fetch;
            std::function<uint64_t(uint64_t)> recv;
            if (mine) {
                const auto* f = dynamic_cast<const hw::wqe_fetch*>(block("nic.wqe_fetch"));
                const auto* r = dynamic_cast<const hw::recv_path*>(block("nic.recv_path"));
                if (f == nullptr || r == nullptr) {
                    throw std::logic_error("timeseries: " + n + "nic's blocks are not as named");
                }
                fetch = [f](uint64_t at) {
                    return f->busy_ps_at(sc_core::sc_time::from_value(at));
                };
                recv = [r](uint64_t at) { return r->busy_ps_at(sc_core::sc_time::from_value(at)); };
            }
            ts->add(n + "nic.wqe_fetch.util", kind::rate, 1e-3, 4, std::move(fetch));
            ts->add(n + "nic.recv_path.util", kind::rate, 1e-3, 4, std::move(recv));
            fabric::pcie_link* pcie = mine ? &tb.nodes[i]->pcie : nullptr;
            if (pcie != nullptr) {
                pcie->track_busy(true);
            }
            for (const bool up : {true, false}) {
                std::function<uint64_t(uint64_t)> read;
                if (pcie != nullptr) {
                    read = [pcie, up, ps_per_unit](uint64_t at) {
                        return pcie->busy_ps_at(up, static_cast<double>(at) * ps_per_unit);
                    };
                }
                ts->add(n + (up ? "pcie.up.util" : "pcie.down.util"), kind::rate, 1e-3, 4,
                        std::move(read));
            }
        }
    }
    if (c.cc && cfg.rnic.cc.algorithm != "none") {
        // Each node's QPs' congestion-control rates at the boundary, from its rate log (cc.csv):
        // the mean and the lowest over the QPs that have a rate (a row in the log) by then.
        struct cc_rates {
            const hw::cc::cc_engine* cc = nullptr;
            double ps_per_unit = 1;
            size_t cursor = 0;
            std::map<uint32_t, uint64_t> rate_mbps;  // by QPN
            uint64_t sum = 0;
            void update(uint64_t at) {
                const auto& log = cc->rate_log();
                const double at_ps = static_cast<double>(at) * ps_per_unit;
                for (; cursor < log.size() && static_cast<double>(log[cursor].time_ps) <= at_ps;
                     ++cursor) {
                    uint64_t& r = rate_mbps[log[cursor].qpn];
                    sum = sum - r + log[cursor].rate_mbps;
                    r = log[cursor].rate_mbps;
                }
            }
        };
        const double ps_per_unit = sc_core::sc_get_time_resolution().to_seconds() * 1e12;
        for (size_t i = 0; i < t.nodes.size(); ++i) {
            std::function<uint64_t(uint64_t)> mean;
            std::function<uint64_t(uint64_t)> low;
            const hw::cc::cc_engine* cc =
                tb.nodes[i] != nullptr ? tb.nodes[i]->nic.congestion_control() : nullptr;
            if (cc != nullptr) {
                auto st = std::make_shared<cc_rates>();
                st->cc = cc;
                st->ps_per_unit = ps_per_unit;
                mean = [st](uint64_t at) -> uint64_t {
                    st->update(at);
                    return st->rate_mbps.empty() ? 0 : st->sum / st->rate_mbps.size();
                };
                low = [st](uint64_t at) -> uint64_t {
                    st->update(at);
                    uint64_t m = ~uint64_t{0};
                    for (const auto& [qpn, r] : st->rate_mbps) {
                        m = std::min(m, r);
                    }
                    return st->rate_mbps.empty() ? 0 : m;
                };
            }
            const std::string n = "node" + std::to_string(i);
            ts->add(n + ".cc_mean_gbps", kind::instant, 1e-3, 3, std::move(mean));
            ts->add(n + ".cc_min_gbps", kind::instant, 1e-3, 3, std::move(low));
        }
    }
    return ts;
}

double to_ns(const sc_core::sc_time& t) {
    return t / sc_core::sc_time(1, sc_core::SC_NS);
}

sc_core::sc_time ns(double v) {
    return sc_core::sc_time(v, sc_core::SC_NS);
}

// The end rule's question: has the workload finished (consumer programs: never, they end by
// sc_stop)?
bool workload_finished(const testbench& tb) {
    return tb.load && tb.load->finished();
}

bool stopped() {
    return sc_core::sc_get_status() == sc_core::SC_STOPPED ||
           sc_core::sc_end_of_simulation_invoked();
}

// Runs the simulation to its end: the time limit (the clock ends there), sc_stop() (a failure),
// or starvation (the end rule of every run: the workload has finished and nothing is left to
// simulate; the clock stays at the last event, so a partitioned run ends at the same instant),
// but in pieces: it pauses at the waveform window's edges to open and close waves.vcd, and every
// `quantum` of simulated time for the progress bar. Pausing adds no events; what runs and in which
// order is the same as in one piece.
class simulation_loop {
public:
    simulation_loop(const scenario_config& cfg, const run_options& opts, testbench& tb,
                    output::waves* waves, output::timeseries* ts)
        : m_cfg(cfg)
        , m_tb(tb)
        , m_waves(waves)
        , m_ts(ts)
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
            if (m_ts != nullptr && m_ts->next() < next.value()) {
                next = sc_core::sc_time::from_value(m_ts->next());  // the next sample
            }
            if (next >= m_limit) {
                // The last piece, exactly as a single sc_start() would end.
                if (m_limited) {
                    sc_core::sc_start(m_limit - now, sc_core::SC_EXIT_ON_STARVATION);
                    if (!stopped() && !sc_core::sc_pending_activity()) {
                        end_starved();
                    } else if (!stopped() && sc_core::sc_time_stamp() < m_limit) {
                        // Cut by the limit with events after it: the clock to the limit, as a
                        // partitioned run's (window_loop), not to whichever event came last.
                        sc_core::sc_start(m_limit - sc_core::sc_time_stamp());
                    }
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
    // sc_stop(), or by starving (the clock stays at the last event). Returns false
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

    // Nothing is left to simulate. A finished workload ends the run here, at its last event
    // (the end rule: it does not depend on the partition, testbench/distributed); one that did
    // not finish (a role or consumer stuck waiting) is given up at the time limit, to which the
    // clock runs as one sc_start(limit) would.
    bool end_starved() {
        if (m_limited && !workload_finished(m_tb) && sc_core::sc_time_stamp() < m_limit) {
            sc_core::sc_start(m_limit - sc_core::sc_time_stamp());
        }
        return false;
    }

    void at_pause() {
        if (m_ts != nullptr) {
            m_ts->sample_through(sc_core::sc_time_stamp().value());
        }
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
    output::timeseries* m_ts;
    bool m_limited;
    sc_core::sc_time m_limit;
    std::string m_waves_path;
    std::unique_ptr<output::progress_bar> m_bar;
    sc_core::sc_time m_quantum{10, sc_core::SC_US};
};

#ifdef RNICSIM_HAVE_MPI
// The conservative window loop of a partitioned run (testbench/distributed/README.md). Every
// rank simulates the window [start, start + lookahead) (events before its end), then the ranks
// exchange what crossed their cut links (frames, with their arrival time, and the workload's
// remote slot checks) and agree on the earliest pending activity anywhere: the next window
// starts there (skip-ahead). A frame sent in a window arrives at or after its end, so no rank
// ever receives one from its past. The run ends when no rank has anything left (the end rule
// of every run: its simulated end is the latest last event of any rank), at the time limit, or
// when a rank stopped (a failure).
class window_loop {
public:
    window_loop(const scenario_config& cfg, testbench& tb, const distributed::partition& part,
                distributed::mpi_comm& comm)
        : m_cfg(cfg)
        , m_tb(tb)
        , m_part(part)
        , m_comm(comm) {
        m_lookahead = distributed::lookahead(cfg.topology, part);
        for (size_t li = 0; li < tb.links.size(); ++li) {
            if (tb.links[li] && (tb.links[li]->remote(0) || tb.links[li]->remote(1))) {
                m_cut_links.push_back(li);
            }
        }
        m_limited = cfg.workload.time_limit_ms > 0;
        m_limit = m_limited ? sc_core::sc_time(cfg.workload.time_limit_ms, sc_core::SC_MS)
                            : sc_core::sc_max_time();
    }

private:
    template <typename F>
    auto timed(F&& f) {
        const auto t0 = std::chrono::steady_clock::now();
        auto v = f();
        m_wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return v;
    }

public:
    void run() {
        sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaboration done, first delta cycle
        for (;;) {
            const sc_core::sc_time now = sc_core::sc_time_stamp();
            const sc_core::sc_time next = sc_core::sc_time::from_value(exchange());
            const bool stop = m_stop;
            if (stop || next == sc_core::sc_max_time() || next >= m_limit) {
                // Starved everywhere, a rank stopped, or nothing before the limit.
                m_starved = next == sc_core::sc_max_time();
                // Starved with the workload unfinished somewhere: given up at the limit.
                if (!stop && (!m_starved || m_unfinished) && m_limited && now < m_limit) {
                    sc_core::sc_start(m_limit - now);  // nothing runs: the clock to the limit
                }
                break;
            }
            // The window ends one time unit short of next + lookahead: every frame sent in it
            // arrives after the clock's stop, so the receiver takes it in the time step of its
            // arrival, woken by its timed event with the frames of its local links (a frame that
            // arrived exactly at the clock's stop would be taken in a delta cycle of its own,
            // before that time step's timed events: the switch's same-instant batch, which orders
            // arrivals by ingress port, would miss it).
            sc_core::sc_time end = next + m_lookahead - sc_core::sc_time::from_value(1);
            if (m_lookahead == sc_core::sc_max_time() || end > m_limit || end < next) {
                end = m_limit;
            }
            if (ts != nullptr) {
                // Every rank has simulated the events before `next` and none at or after it:
                // the state of every boundary up to `next`, where one process pauses too.
                ts->sample_through(next.value());
                end = std::min(end, sc_core::sc_time::from_value(ts->next()));
            }
            if (on_waves_start && next >= waves_start) {
                on_waves_start();  // every rank has simulated the events before the window
                on_waves_start = nullptr;
            } else if (on_waves_start) {
                end = std::min(end, waves_start);  // and none at or after its start
            }
            run_window(end);
            m_window_end = end;
            ++m_windows;
        }
        // Every rank's clock to the run's end, the latest of them (no events run: every rank
        // has starved, or stands at the limit).
        m_end = sc_core::sc_time::from_value(timed([&] { return max_clock(); }));
        if (!stopped() && sc_core::sc_time_stamp() < m_end) {
            sc_core::sc_start(m_end - sc_core::sc_time_stamp());
        }
    }

    // waves.vcd: called between two windows once every rank has simulated the events before
    // `waves_start` and none at or after it (where one process pauses to open the file).
    std::function<void()> on_waves_start;
    sc_core::sc_time waves_start;
    output::timeseries* ts = nullptr;  // timeseries.csv: sampled between windows

    sc_core::sc_time end_time() const { return m_end; }
    uint64_t windows() const { return m_windows; }
    double wait_s() const { return m_wait_s; }

private:
    uint64_t local_next() const {
        if (!sc_core::sc_pending_activity()) {
            return sc_core::sc_max_time().value();
        }
        return (sc_core::sc_time_stamp() + sc_core::sc_time_to_pending_activity()).value();
    }

    uint64_t max_clock() {
        // The latest clock of any rank: a max as the negated min.
        return ~m_comm.min(~sc_core::sc_time_stamp().value());
    }

    // Simulates this rank's events before `end`. The clock moves only with work: to `end` when
    // something is pending after it, else it stays at the last event (so that at the end of
    // the run every rank's clock is at most the run's last event, as one process's is).
    void run_window(const sc_core::sc_time& end) {
        if (!sc_core::sc_pending_activity()) {
            return;
        }
        sc_core::sc_start(end - sc_core::sc_time_stamp(), sc_core::SC_EXIT_ON_STARVATION);
    }

    // One round trip per window (mpi_comm::round): to every other rank, this rank's next
    // activity (its pending events and the frames it sends), whether it stopped, and the frames
    // and checks for that rank. Returns the earliest next activity of all ranks.
    uint64_t exchange() {
        const auto ranks = static_cast<size_t>(m_comm.size());
        std::vector<distributed::bytes>& out = m_out;  // buffers kept from window to window
        out.resize(ranks);
        const size_t hbytes = distributed::mpi_comm::header_bytes(m_header);
        for (auto& b : out) {
            b.assign(hbytes, 0);  // room for the header (mpi_comm::round writes it)
        }
        const topology_config& t = m_cfg.topology;
        uint64_t next = local_next();
        auto put = [](distributed::bytes& b, uint64_t v, int n) {
            for (int i = 0; i < n; ++i) {
                b.push_back(static_cast<uint8_t>(v >> (8 * i)));
            }
        };
        for (const size_t li : m_cut_links) {
            for (auto& o : m_tb.links[li]->take_outbox()) {
                next = std::min<uint64_t>(next, o.arrive.value());
                const link_desc& d = t.links[li];
                if (o.arrive <= m_window_end) {
                    // The receiving rank has simulated past this arrival already: the lookahead
                    // is longer than this link's latency (distributed::link_latency is wrong).
                    throw std::runtime_error(
                        "partitioned run: a frame on cut link " + d.name + " (direction " +
                        std::to_string(o.from_side) + ") arrives at " + o.arrive.to_string() +
                        ", inside the window that ended at " + m_window_end.to_string() +
                        " (lookahead " + m_lookahead.to_string() +
                        " longer than the link's latency): the result would not be exact");
                }
                const int to = m_part.rank_of(o.from_side == 0 ? d.b : d.a);
                auto& b = out[static_cast<size_t>(to)];
                b.push_back(0);  // kind: frame
                put(b, li, 4);
                put(b, static_cast<uint64_t>(o.from_side), 1);
                put(b, o.arrive.value(), 8);
                put(b, o.frame.tx_start.value(), 8);
                put(b, o.frame.flow_id, 8);
                put(b, o.frame.priority, 1);
                put(b, o.frame.data.size(), 4);
                b.insert(b.end(), o.frame.data.begin(), o.frame.data.end());
            }
        }
        if (m_tb.load) {
            for (const auto& c : m_tb.load->take_remote_checks()) {
                const int to = m_part.node_rank[m_tb.load->target_node(c.flow)];
                auto& b = out[static_cast<size_t>(to)];
                b.push_back(1);  // kind: remote slot check
                put(b, c.flow, 8);
                put(b, c.q, 4);
                put(b, c.slot, 8);
                put(b, c.message, 8);
            }
        }
        m_header = {next, stopped() ? 1u : 0u, workload_finished(m_tb) ? 0u : 1u};
        timed([&] {
            m_comm.round(m_header, out, m_round);
            return 0;
        });
        const auto& round = m_round;
        uint64_t global_next = ~uint64_t{0};
        m_unfinished = false;
        for (size_t r = 0; r < ranks; ++r) {
            global_next = std::min(global_next, round.headers[3 * r]);
            m_stop = m_stop || round.headers[3 * r + 1] != 0;
            m_unfinished = m_unfinished || round.headers[3 * r + 2] != 0;
        }
        const std::vector<distributed::bytes>& in = round.in;
        for (const auto& b : in) {
            size_t at = std::min(hbytes, b.size());  // the payload: after the header
            auto get = [&](int n) {
                uint64_t v = 0;
                for (int i = 0; i < n; ++i) {
                    v |= static_cast<uint64_t>(b[at++]) << (8 * i);
                }
                return v;
            };
            while (at < b.size()) {
                if (b[at++] == 0) {
                    const auto li = static_cast<size_t>(get(4));
                    const int from = static_cast<int>(get(1));
                    const auto arrive = sc_core::sc_time::from_value(get(8));
                    fabric::eth_frame f;
                    f.tx_start = sc_core::sc_time::from_value(get(8));
                    f.flow_id = get(8);
                    f.priority = static_cast<uint8_t>(get(1));
                    const auto len = static_cast<size_t>(get(4));
                    f.data.assign(b.begin() + static_cast<std::ptrdiff_t>(at),
                                  b.begin() + static_cast<std::ptrdiff_t>(at + len));
                    at += len;
                    m_tb.links[li]->inject(from, arrive, std::move(f));
                } else {
                    workload::remote_check c;
                    c.flow = get(8);
                    c.q = static_cast<uint32_t>(get(4));
                    c.slot = get(8);
                    c.message = get(8);
                    m_tb.load->run_remote_check(c);
                }
            }
        }
        return global_next;
    }

    const scenario_config& m_cfg;
    testbench& m_tb;
    const distributed::partition& m_part;
    distributed::mpi_comm& m_comm;
    sc_core::sc_time m_lookahead;
    sc_core::sc_time m_window_end;    // the last window's end (events before it are simulated)
    std::vector<size_t> m_cut_links;  // the links with an end on another rank: the only outboxes
    std::vector<uint64_t> m_header = std::vector<uint64_t>(3);  // next, stopped, unfinished
    std::vector<distributed::bytes> m_out;                      // per rank, reused every window
    distributed::mpi_comm::round_result m_round;
    bool m_limited = false;
    sc_core::sc_time m_limit;
    bool m_starved = false;
    sc_core::sc_time m_end;
    uint64_t m_windows = 0;
    double m_wait_s = 0;
    bool m_stop = false;        // some rank stopped (a failure): the run ends
    bool m_unfinished = false;  // some rank's workload has not finished
};
#endif

// What one rank (or the one process) contributes to the result: everything rank 0 merges.
nlohmann::json rank_part(const testbench& tb, const scenario_config& cfg) {
    nlohmann::json j;
    nlohmann::json blocks = tb.ctx.stats.values();
    // A cut link's direction that the other rank sends in: its counters are that rank's.
    for (size_t i = 0; i < tb.links.size(); ++i) {
        if (!tb.links[i]) {
            continue;
        }
        for (int side = 0; side < 2; ++side) {
            if (tb.links[i]->remote(side)) {
                blocks.erase(cfg.topology.links[i].name + ".dir" + std::to_string(side));
            }
        }
    }
    j["blocks"] = std::move(blocks);
    uint64_t packets = 0;
    for (size_t i = 0; i < tb.links.size(); ++i) {
        for (int side = 0; side < 2 && tb.links[i]; ++side) {
            if (!tb.links[i]->remote(side)) {
                packets += tb.links[i]->get_stats(side).frames;
            }
        }
    }
    j["packets"] = packets;
    j["workload"] = tb.load ? tb.load->partial() : nlohmann::json();
    nlohmann::json fails = nlohmann::json::array();
    for (const auto& f : tb.ctx.failures) {
        fails.push_back(f);
    }
    j["failures"] = fails;
    j["files"] = tb.ctx.outputs;
    j["cc"] = cc_rows(tb);
    return j;
}

}  // namespace

run_result run_scenario(const scenario_config& cfg, const run_options& opts) {
    const auto wall_start = std::chrono::steady_clock::now();
    int rank = 0;
    [[maybe_unused]] int ranks = 1;  // used by partitioned runs (MPI builds) only
    std::unique_ptr<distributed::partition> part;
#ifdef RNICSIM_HAVE_MPI
    if (opts.comm != nullptr && opts.comm->size() > 1) {
        rank = opts.comm->rank();
        ranks = opts.comm->size();
        part = std::make_unique<distributed::partition>(
            distributed::partition_for(cfg.topology, ranks));
    }
#endif
    const bool distributed_run = part != nullptr;

    // Outputs outlive the testbench's use of them: they are closed before this returns, and
    // the context's pointers to them are cleared.
    // trace.json of a partitioned run: every rank keeps its slices (spool), rank 0 merges them
    // and writes the file in the single process's order (output::timeline).
    const bool spool_trace = distributed_run && !opts.trace.empty();
    output::trace_options trace_opts;  // outputs.trace_*: the form and the filters
    trace_opts.perfetto = cfg.outputs.trace_format == "perfetto";
    trace_opts.start_ps = static_cast<uint64_t>(std::llround(cfg.outputs.trace_start_ns * 1e3));
    trace_opts.end_ps = cfg.outputs.trace_end_ns * 1e3 < 1.8e19
                            ? static_cast<uint64_t>(std::llround(cfg.outputs.trace_end_ns * 1e3))
                            : ~uint64_t{0};
    trace_opts.qps = cfg.outputs.trace_qps;
    trace_opts.nodes = cfg.outputs.trace_nodes;
    auto tl = std::make_unique<output::timeline>(
        distributed_run && rank != 0 ? std::string() : opts.trace, spool_trace, trace_opts);
    // waves.vcd: every rank records its blocks' signals (output::partitioned_waves).
    std::unique_ptr<output::waves> waves;
    if (!opts.waves_vcd.empty()) {
        waves = std::make_unique<output::waves>();
    }

    // The testbench is never deleted: SystemC keeps its processes (some still suspended when a
    // time limit ends the run) until the process exits, and a process holds one elaboration.
    // With waveforms on, an RTL send path also writes the RTL's own waveform next to waves.vcd
    // (rtl.fst for node 0, rtl.node1.fst for node 1): the model has no RTL signals to write.
    std::string rtl_fst_base;
    if (waves && !distributed_run) {
        rtl_fst_base = (std::filesystem::path(opts.waves_vcd).parent_path() / "rtl").string();
    }
    auto* tb =
        new testbench(cfg, waves.get(), tl.get(), rtl_fst_base, opts.consumers, part.get(), rank);
    // timeseries.csv: the state at time 0 (the baseline of the first interval's rates), when
    // the window starts there, before anything runs.
    std::unique_ptr<output::timeseries> ts = make_timeseries(cfg, *tb);
    if (ts) {
        ts->sample_through(0);
    }

    // wire.pcap: stamped with the time the first bit leaves the sender's MAC, before fault
    // injection (a frame the link drops or corrupts is captured as sent). Picoseconds floor to
    // ns. In a partition-independent order (time, link, direction, the direction's order), the
    // same for one process and for many ranks: output::pcap_stream sorts each instant's frames
    // as the next instant begins and hands them on, to the file (one process) or to the rank's
    // spool, which rank 0 merges at the end (output::merge_spools). Memory: one instant's frames.
    std::unique_ptr<output::pcap_writer> pcap_file;
    std::unique_ptr<output::record_spool> pcap_spool;
    std::unique_ptr<output::pcap_stream> pcap;
    if (!opts.pcap.empty()) {
        output::pcap_stream::sink to;
        if (distributed_run) {
            pcap_spool = std::make_unique<output::record_spool>();
            to = [s = pcap_spool.get(),
                  b = std::vector<uint8_t>()](const output::pcap_stream::record& r) mutable {
                b.clear();
                output::pcap_stream::encode(r, b);
                s->append(b.data(), b.size());
            };
        } else {
            pcap_file = std::make_unique<output::pcap_writer>(opts.pcap);
            to = [w = pcap_file.get()](const output::pcap_stream::record& r) {
                w->write(r.ps / 1000, r.data.data(), r.data.size());
            };
        }
        pcap = std::make_unique<output::pcap_stream>(std::move(to));
        const double ps_per_unit = sc_core::sc_get_time_resolution().to_seconds() * 1e12;
        // outputs.pcap_links: which directions of which links (empty: every one).
        const bool all = cfg.outputs.pcap_links.empty();
        auto* records = pcap.get();
        for (size_t i = 0; i < tb->links.size(); ++i) {
            if (!tb->links[i]) {
                continue;
            }
            const std::string& name = cfg.topology.links[i].name;
            std::array<bool, 2> side = {all, all};
            for (const std::string& l : cfg.outputs.pcap_links) {
                side[0] = side[0] || l == name || l == name + ".dir0";
                side[1] = side[1] || l == name || l == name + ".dir1";
            }
            if (!side[0] && !side[1]) {
                continue;
            }
            auto seq = std::make_shared<std::array<uint64_t, 2>>();
            const auto li = static_cast<uint32_t>(i);
            tb->links[i]->set_capture(
                [records, ps_per_unit, side, seq, li](int from, const fabric::eth_frame& f) {
                    const int s = from == 0 ? 0 : 1;
                    if (!side[s]) {
                        return;
                    }
                    const auto ps = static_cast<uint64_t>(
                        std::llround(static_cast<double>(f.tx_start.value()) * ps_per_unit));
                    records->add({ps, li, static_cast<uint32_t>(s), (*seq)[s]++, f.data});
                });
        }
    }

    uint64_t windows = 0;
    double wait_s = 0;
    uint64_t end_value = 0;
#ifdef RNICSIM_HAVE_MPI
    std::unique_ptr<output::partitioned_waves> pwaves;
    if (distributed_run) {
        window_loop loop(cfg, *tb, *part, *opts.comm);
        loop.ts = ts.get();
        if (waves) {
            const double end_ps = cfg.outputs.waves_end_ns * 1e3;
            pwaves = std::make_unique<output::partitioned_waves>(
                *opts.comm, *waves, end_ps < 1.8e19 ? ns(cfg.outputs.waves_end_ns).value() : ~0ull);
            if (cfg.outputs.waves_start_ns <= 0) {
                pwaves->open(0);  // from time 0: before the first time step
            } else {
                loop.waves_start = ns(cfg.outputs.waves_start_ns);
                loop.on_waves_start = [&] { pwaves->open(loop.waves_start.value()); };
            }
        }
        loop.run();
        windows = loop.windows();
        wait_s = loop.wait_s();
        end_value = loop.end_time().value();
    }
#endif
    if (!distributed_run) {
        simulation_loop(cfg, opts, *tb, waves.get(), ts.get()).run();
        end_value = sc_core::sc_time_stamp().value();
    }
    if (ts) {
        ts->finish(end_value);
    }
    // A run that ended by starvation or its time limit has not been stopped: stopping it now
    // runs the blocks' end_of_simulation() (a Verilated send path closes its FST there), as
    // sc_stop() at the end of the workload did. No event runs after this.
    if (!stopped()) {
        sc_core::sc_stop();
    }

    for (auto& l : tb->links) {
        if (l) {
            l->set_capture(nullptr);
        }
    }
    tb->ctx.tracer = nullptr;
    tb->ctx.vcd = nullptr;
    if (!spool_trace) {
        tl->close();
    }

    // The workload's end-of-run checks need every initiator's progress.
    if (tb->load) {
        nlohmann::json init = tb->load->export_initiators();
#ifdef RNICSIM_HAVE_MPI
        if (distributed_run) {
            const distributed::bytes mine = nlohmann::json::to_cbor(init);
            const auto all = opts.comm->exchange(
                std::vector<distributed::bytes>(static_cast<size_t>(ranks), mine));
            for (const auto& b : all) {
                tb->load->import_initiators(nlohmann::json::from_cbor(b));
            }
        }
#endif
        tb->load->final_checks();
    }
    const double rank_wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const double cpu_s =
        static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
        static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
    nlohmann::json mine = rank_part(*tb, cfg);
    mine["speed"] = {rank, sc_core::sc_delta_count(), windows, rank_wall, wait_s, cpu_s};
    if (rank != 0) {
        // Its stage-latency histograms and, with the trace on, its spooled slices.
        mine["timeline"] = nlohmann::json::binary(tl->take_state());
        if (ts) {
            mine["timeseries"] = nlohmann::json::binary(ts->take_state());
        }
    }
    std::vector<nlohmann::json> parts;
#ifdef RNICSIM_HAVE_MPI
    if (distributed_run) {
        // Rank 0 keeps its own part as it is (no CBOR round trip) and decodes the others'.
        const auto all =
            opts.comm->gather(rank == 0 ? distributed::bytes{} : nlohmann::json::to_cbor(mine));
        for (size_t k = 1; k < all.size(); ++k) {
            parts.push_back(nlohmann::json::from_cbor(all[k]));
        }
    }
#endif
    if (rank == 0) {
        parts.insert(parts.begin(), std::move(mine));
    }
    if (pcap) {
        pcap->flush();  // the last instant
        if (pcap_file) {
            pcap_file->close();
        }
#ifdef RNICSIM_HAVE_MPI
        if (pcap_spool) {
            std::unique_ptr<output::pcap_writer> w;
            if (rank == 0) {
                w = std::make_unique<output::pcap_writer>(opts.pcap);
            }
            output::merge_spools(*opts.comm, *pcap_spool, output::pcap_stream::encoded_less,
                                 [&w](const uint8_t* p, size_t len) {
                                     const auto r = output::pcap_stream::decode(p, len);
                                     w->write(r.ps / 1000, r.data.data(), r.data.size());
                                 });
            if (w) {
                w->close();
            }
        }
#endif
    }
#ifdef RNICSIM_HAVE_MPI
    if (pwaves) {
        pwaves->finish(opts.waves_vcd);  // rank 0 writes the file
    }
    if (spool_trace) {
        tl->merge_spooled(*opts.comm);  // rank 0 writes every rank's slices; close() ends the file
    }
#endif

    run_result r;
    if (rank != 0) {
        return r;  // rank 0 holds the run's result
    }
    if (tb->load) {
        std::vector<nlohmann::json> loads;
        for (const auto& p : parts) {
            loads.push_back(p["workload"]);
        }
        workload::combine(cfg, loads, r);
    }
    // Failures blocks recorded (hw::sim_context::fail) come first: they name the block.
    std::vector<std::string> block_failures;
    std::vector<nlohmann::json> cc;
    r.blocks = nlohmann::json::object();
    r.packets = 0;
    r.delta_cycles = 0;
    for (auto& p : parts) {
        for (const auto& f : p["failures"]) {
            block_failures.push_back(f.get<std::string>());
        }
        for (const auto& [k, v] : p["files"].items()) {
            r.files[k] = v.get<std::string>();
        }
        for (auto& [k, v] : p["blocks"].items()) {
            r.blocks[k] = std::move(v);  // the parts' blocks are not read after this
        }
        r.packets += p["packets"].get<uint64_t>();
        cc.push_back(p["cc"]);
        const auto& sp = p["speed"];
        run_result::rank_speed rs;
        rs.rank = sp[0].get<int>();
        rs.delta_cycles = sp[1].get<uint64_t>();
        rs.windows = sp[2].get<uint64_t>();
        rs.wall_s = sp[3].get<double>();
        rs.wait_s = sp[4].get<double>();
        rs.cpu_s = sp[5].get<double>();
        r.delta_cycles += rs.delta_cycles;
        r.ranks.push_back(rs);
    }
    r.failures.insert(r.failures.begin(), block_failures.begin(), block_failures.end());
    r.simulated_ns =
        static_cast<uint64_t>(std::llround(to_ns(sc_core::sc_time::from_value(end_value))));
    for (const auto& p : parts) {
        if (p.contains("timeline")) {
            tl->merge_state(p["timeline"].get_binary());
        }
    }
    r.stages = tl->stage_latency();
    r.stages_by_block = tl->block_stage_latency();
    if (spool_trace) {
        tl->close();
    }
    r.cc_csv = make_cc_csv(cc);
    if (ts) {
        for (const auto& p : parts) {
            if (p.contains("timeseries")) {
                ts->merge_state(p["timeseries"].get_binary());
            }
        }
        r.timeseries_csv = ts->csv();
    }
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
