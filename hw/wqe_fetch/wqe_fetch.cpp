// SPDX-License-Identifier: Apache-2.0
// WQE fetch.
#include "hw/wqe_fetch/wqe_fetch.h"

#include <algorithm>
#include <cstring>

#include "hw/wqe_fetch/wqe_decode.h"

namespace rnic::hw {

wqe_fetch_config parse_wqe_fetch_config(config::reader r) {
    wqe_fetch_config c;
    r.get("batch", c.batch, 1u, 64u);
    r.get("parse_cycles", c.parse_cycles, 0u, 100u);
    r.get("fifo_depth", c.fifo_depth, 1u, 4096u);
    r.finish();
    return c;
}

wqe_fetch::wqe_fetch(sc_core::sc_module_name name, const wqe_fetch_config& cfg,
                     const clock_domain& clk, context_store& contexts, dma_engine& dma,
                     doorbell& db, uint32_t node_id, sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_contexts(contexts)
    , m_dma(dma)
    , m_doorbell(db)
    , m_node_id(node_id)
    , m_ctx(ctx)
    , m_out("wqes", cfg.fifo_depth) {
    SC_HAS_PROCESS(wqe_fetch);
    SC_THREAD(fetch_thread);
    auto& s = ctx.stats;
    s.add(this->name(), "wqes", m_stats.wqes, "count", "WQEs fetched");
    s.add(this->name(), "dma_reads", m_stats.dma_reads, "count", "DMA reads of SQ rings");
    s.add(this->name(), "pushed", m_stats.pushed, "count", "WQEs taken from a doorbell push");
    s.add(this->name(), "malformed", m_stats.malformed, "count", "WQEs with a bad opcode or size");
    s.add(
        this->name(), "out_full_waits", [this] { return nlohmann::json(m_out.full_waits()); },
        "count", "times the transmit engine was not ready for a WQE");
    if (ctx.vcd != nullptr) {
        m_out.trace(ctx.vcd, this->name());
        sc_core::sc_trace(ctx.vcd, m_stats.wqes, std::string(this->name()) + ".wqes_fetched");
        sc_core::sc_trace(ctx.vcd, m_stats.dma_reads, std::string(this->name()) + ".dma_reads");
    }
}

wqe_item wqe_fetch::parse(uint32_t qpn, const uint8_t* slot, uint32_t stride) {
    wqe_item w = parse_wqe(slot, stride);  // hw/wqe_fetch/wqe_decode.h
    w.qpn = qpn;
    w.flow_id = (static_cast<uint64_t>(m_node_id) << 56) | (static_cast<uint64_t>(qpn) << 32) |
                m_stats.wqes;
    return w;
}

void wqe_fetch::fetch_thread() {
    std::vector<uint8_t> buf;
    for (;;) {
        const uint32_t qpn = m_doorbell.sq_ready().get();
        const sc_core::sc_time doorbell_time = sc_core::sc_time_stamp();
        qp_context* qp = m_contexts.qp(qpn);
        if (qp == nullptr) {
            m_doorbell.reschedule(qpn);
            continue;
        }
        if (m_cache != nullptr) {
            m_cache->access(ctx_kind::QPC, qpn, true, cache_port::WQE_FETCH);  // SQ fetch index
        }
        // One batch: contiguous slots from the fetch index, not wrapping, at most `batch`.
        const uint32_t depth = 1u << qp->sq_log_depth;
        const uint32_t first = qp->sq_fetched;
        const uint32_t slot = first & (depth - 1);
        const uint32_t n = std::min({qp->sq_producer - first, m_cfg.batch, depth - slot});
        if (n == 0) {
            m_doorbell.reschedule(qpn);
            continue;
        }
        const uint32_t stride = qp->sq_stride;
        buf.resize(static_cast<size_t>(n) * stride);
        hsi::wqe_ctrl pushed{};
        if (n == 1 && m_doorbell.take_pushed_wqe(qpn, first & 0xffff, pushed) &&
            pushed.size_bb == 1) {
            // WQE pushed with the doorbell: no DMA read.
            std::memcpy(buf.data(), &pushed, sizeof(pushed));
            ++m_stats.pushed;
        } else {
            m_dma.read_wait(dma_client::WQE_FETCH,
                            qp->sq_addr + static_cast<uint64_t>(slot) * stride, buf.data(),
                            n * stride);
            ++m_stats.dma_reads;
        }
        qp->sq_fetched = first + n;
        m_doorbell.reschedule(qpn);
        for (uint32_t i = 0; i < n; ++i) {
            wqe_item w = parse(qpn, buf.data() + static_cast<size_t>(i) * stride, stride);
            w.doorbell_time = doorbell_time;
            m_clk.wait_cycles(m_cfg.parse_cycles * std::max<uint32_t>(1, w.ctrl.size_bb));
            if (w.malformed) {
                ++m_stats.malformed;
            }
            ++m_stats.wqes;
            if (m_ctx.tracer != nullptr) {
                m_ctx.tracer->slice(name(), "wqe_fetch", w.flow_id, doorbell_time,
                                    sc_core::sc_time_stamp());
            }
            m_out.put(std::move(w));
        }
    }
}

}  // namespace rnic::hw
