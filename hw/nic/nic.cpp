// SPDX-License-Identifier: Apache-2.0
// The RNIC top.
#include "hw/nic/nic.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace rnic::hw {

namespace {
// The port's loss-of-signal debounce (port_thread): a loss shorter than this goes unseen, the
// signal is seen again this long after it is back. 10 us: the switch ports' default
// (topology.switch.link_down_detect_ns, tlm/switch/README.md), so both ends of a host cable see
// a loss at the same time; not configurable per NIC yet.
constexpr double PORT_LINK_DOWN_DETECT_NS = 10000;
constexpr double PORT_LINK_UP_DETECT_NS = 10000;

// DIR/rtl.fst for node 0 (the initiator), DIR/rtl.node<N>.fst for the others.
std::string rtl_fst_path(const std::string& base, uint32_t node_id) {
    if (base.empty()) {
        return {};
    }
    return node_id == 0 ? base + ".fst" : base + ".node" + std::to_string(node_id) + ".fst";
}
}  // namespace

nic::nic(sc_core::sc_module_name name, const nic_config& cfg, const nic_identity& id,
         fabric::eth_link& link, int link_side, sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_id(id)
    , m_clk(std::string(this->name()) + ".clk", cfg.clock_mhz, id.clock_ppm)
    , m_contexts(cfg.limits.max_qps, cfg.limits.max_cqs, cfg.limits.max_srqs, cfg.limits.max_pds,
                 cfg.limits.max_keys, cfg.limits.max_mtt_pages)
    , m_dma("dma_engine", cfg.dma, m_clk, ctx)
    , m_context_cache("context_cache", cfg.context_cache, m_clk, m_dma, ctx)
    , m_doorbell("doorbell", cfg.doorbell, m_clk, m_contexts, ctx)
    , m_cq_writer("cq_writer", cfg.cq_writer, m_clk, m_contexts, m_dma, m_doorbell.registers(), ctx)
    , m_netdma("netdma", cfg.netdma, m_clk, m_dma, m_doorbell.registers(), ctx)
    , m_cmd_processor("cmd_processor", cfg.cmd_processor, m_clk, m_contexts, m_dma, m_cfg.limits,
                      m_doorbell, m_cq_writer, ctx)
    , m_translation("translation", cfg.translation, m_clk, m_contexts, ctx)
    , m_wqe_fetch("wqe_fetch", cfg.wqe_fetch, m_clk, m_contexts, m_dma, m_doorbell, id.node_id, ctx)
    // The send path alone feeds the MAC's data FIFO; the GSI and the notification point feed
    // its control queue, which the MAC serves first at frame boundaries (tlm/ethernet).
    , m_send_path(make_send_path("send_path", cfg.send_path, m_clk, link.tx(link_side), ctx,
                                 rtl_fst_path(ctx.rtl_fst_base, id.node_id)))
    , m_tx_engine("tx_engine", cfg.tx_engine, m_clk, id, m_contexts, m_translation, m_dma,
                  m_wqe_fetch.out(), *m_send_path, m_cq_writer, ctx)
    , m_recv_path("recv_path", cfg.recv_path, m_clk, id, m_contexts, m_translation, m_dma,
                  m_tx_engine, m_cq_writer, ctx)
    , m_gsi("gsi", cfg.gsi, m_clk, id, m_dma, m_cq_writer, link.ctrl_tx(link_side), ctx) {
    m_doorbell.bind_cq_writer(&m_cq_writer);
    m_doorbell.bind_netdma(&m_netdma);
    m_doorbell.bind_gsi(&m_gsi);
    m_recv_path.set_gsi(&m_gsi);
    m_send_path->set_egress_stomp(&m_tx_engine.stomp());
    m_context_cache.watch_icm_base(&m_doorbell.registers().icm_base, cfg.limits.max_qps,
                                   cfg.limits.max_keys);
    m_doorbell.set_icm_bytes_needed(context_cache::icm_bytes(
        cfg.context_cache, cfg.limits.max_qps, cfg.limits.max_keys, cfg.limits.max_mtt_pages));
    m_cmd_processor.set_context_cache(&m_context_cache);
    m_translation.set_context_cache(&m_context_cache);
    m_wqe_fetch.set_context_cache(&m_context_cache);
    m_tx_engine.set_context_cache(&m_context_cache);
    m_recv_path.set_context_cache(&m_context_cache);
    // MODIFY_QP to ERROR flushes the QP's requests in flight and its posted receives.
    m_cmd_processor.set_qp_error_handler([this](uint32_t qpn) { m_tx_engine.flush_qp(qpn); });
    // MODIFY_QP to RESET / DESTROY_QP: per-QP transport state starts over (QPN re-use).
    m_cmd_processor.set_qp_reset_handler([this](uint32_t qpn) {
        m_tx_engine.reset_qp(qpn);
        m_recv_path.reset_qp(qpn);
        m_doorbell.reset_qp(qpn);
        if (m_cc) {
            m_cc->reset_qp(qpn);
        }
        if (m_np) {
            m_np->reset_qp(qpn);
        }
    });
    // A receive posted to a QP in ERROR is fetched and flushed by the receive path.
    m_doorbell.set_rq_flush_listener(
        [this](uint32_t qpn, const sc_core::sc_time& at) { m_recv_path.flush_receives(qpn, at); });
    // CQ features; a dead CQ takes its QPs into ERROR (flushed like MODIFY_QP to ERROR).
    m_cq_writer.set_cq_config(cfg.cq);
    m_cq_writer.set_qp_error_handler([this](uint32_t qpn) { m_cmd_processor.qp_to_error(qpn); });
    if (cfg.faults.fatal_error_at_ns > 0) {
        m_cmd_processor.fatal_error_at(
            sc_core::sc_time(cfg.faults.fatal_error_at_ns, sc_core::SC_NS));
    }
    if (cfg.cc.factory) {
        // Congestion control: none of it exists with rnic.cc.algorithm "none" (no cost, and
        // every output is as without it).
        cc::cc_env env;
        env.line_rate_mbps = static_cast<uint64_t>(link.config().rate_gbps * 1000.0 + 0.5);
        m_pacer = std::make_unique<pacer>(std::string(this->name()) + ".pacer", m_clk,
                                          cfg.limits.max_qps, ctx);
        m_cc = std::make_unique<cc::cc_engine>("cc", cfg.cc.factory(env), m_clk, m_contexts,
                                               *m_pacer, env.line_rate_mbps, ctx);
        m_cc->set_context_cache(&m_context_cache);
        m_tx_engine.set_pacer(m_pacer.get());
        m_tx_engine.set_ack_segment_bytes(m_cc->algorithm().ack_segment_bytes());
        if (m_cc->algorithm().ack_segment_bytes() != 0) {
            m_tx_engine.set_ack_segment_fn([this](uint32_t qpn) {
                const qp_context* qp = m_contexts.qp_slot(qpn);
                return qp != nullptr ? m_cc->algorithm().ack_segment_bytes(qp->cc)
                                     : m_cc->algorithm().ack_segment_bytes();
            });
        }
        if (m_cc->algorithm().wants_acks()) {
            link.set_tx_observer(link_side,
                                 [this](const fabric::eth_frame& f) { m_cc->on_wire(f.data); });
        }
        if (m_cc->algorithm().wants_telemetry()) {
            // HPCC: requests carry an INT stack, the ACKs' reflected stacks go to the engine.
            m_tx_engine.set_telemetry(true);
            m_recv_path.set_telemetry_observer(
                [this](uint32_t qpn, const roce::int_stack& s) { m_cc->on_telemetry(qpn, s); });
            link.set_tx_observer(
                link_side, [this](const fabric::eth_frame& f) { m_cc->count_telemetry(f.data); });
        }
        m_tx_engine.set_ack_observer(
            [this](uint32_t qpn, uint32_t psn, bool nak) { m_cc->on_ack(qpn, psn, nak); });
        if (const cc::np_params* np = m_cc->algorithm().notification_point()) {
            m_np = std::make_unique<notification_point>("np", *np, m_clk, id, cfg.limits.max_qps,
                                                        link.ctrl_tx(link_side), ctx);
            m_np->set_reaction_point([this](uint32_t qpn) { m_cc->on_cnp(qpn); });
            m_recv_path.set_notification_point(m_np.get());
        }
    }
    link.set_mac(link_side, id.mac);  // source of the MAC's PFC pause frames
    if (!link.config().faults.link_down_ns.empty()) {
        // Only a link that loses its signal gives the port something to watch (and counters).
        const std::string b = std::string(this->name()) + ".port";
        ctx.stats.add(b, "link_downs", m_port_stats.link_downs, "count",
                      "times the port saw its link go down (loss of signal)");
        ctx.stats.add(b, "link_ups", m_port_stats.link_ups, "count",
                      "times the port saw its link come back");
        ctx.stats.add(
            b, "link_down_ps",
            [this] {
                uint64_t ps = m_port_stats.link_down_ps;
                if (!m_link_up) {
                    ps += m_clk.ps_of(sc_core::sc_time_stamp() - m_link_down_since);
                }
                return nlohmann::json(ps);
            },
            "ps", "time the port saw its link down (until the end of the run if still down)");
        ctx.stats.add(
            b, "link_up", [this] { return nlohmann::json(m_link_up ? 1 : 0); }, "bool",
            "1: the port sees its link up at the end of the run");
        if (ctx.vcd != nullptr) {
            sc_core::sc_trace(ctx.vcd, m_link_up, b + ".link_up");
        }
        sc_core::sc_spawn(
            sc_core::sc_bind(&nic::port_thread, this, link.config().faults.link_down_ns), "port");
    }
    if (id.clock_ppm != 0) {  // only then: runs on exact clocks keep their stats.json
        ctx.stats.add(
            this->name(), "clock_ppm", [this] { return nlohmann::json(m_clk.offset_ppm()); }, "ppm",
            "offset of this node's oscillator (topology.clocks): core clock and MAC");
    }
    link.attach(link_side, &m_recv_path);
}

void nic::port_thread(std::vector<std::pair<double, double>> down_ns) {
    // The PHY sees loss of signal PORT_LINK_DOWN_DETECT_NS after it begins (a shorter loss goes
    // unseen) and the signal again PORT_LINK_UP_DETECT_NS after it ends, like a switch port
    // (tlm/switch/README.md). Frames the NIC sends meanwhile are lost on the wire; RC recovers
    // them, or runs out of retries (IBV_WC_RETRY_EXC_ERR: completion status
    // STATUS_IO_TIMEOUT), and the run's failures name the port's state.
    // The windows the port sees down, [down, up) in ns; windows that touch are one.
    std::vector<std::pair<double, double>> seen;
    std::sort(down_ns.begin(), down_ns.end());
    for (const auto& [from, to] : down_ns) {
        if (to - from <= PORT_LINK_DOWN_DETECT_NS) {
            continue;
        }
        const double down = from + PORT_LINK_DOWN_DETECT_NS;
        const double up = to >= 1e16 ? 1e18 : to + PORT_LINK_UP_DETECT_NS;  // 1e18: for good
        if (!seen.empty() && down <= seen.back().second) {
            seen.back().second = std::max(seen.back().second, up);
        } else {
            seen.emplace_back(down, up);
        }
    }
    for (const auto& [down, up] : seen) {
        sc_core::wait(sc_core::sc_time(down, sc_core::SC_NS) - sc_core::sc_time_stamp());
        m_link_up = false;
        m_link_down_since = sc_core::sc_time_stamp();
        ++m_port_stats.link_downs;
        if (up >= 1e18) {
            return;  // down for good
        }
        sc_core::wait(sc_core::sc_time(up, sc_core::SC_NS) - sc_core::sc_time_stamp());
        m_link_up = true;
        ++m_port_stats.link_ups;
        m_port_stats.link_down_ps += m_clk.ps_of(sc_core::sc_time_stamp() - m_link_down_since);
    }
}

nic::~nic() = default;

}  // namespace rnic::hw
