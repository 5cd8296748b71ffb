// SPDX-License-Identifier: Apache-2.0
// WQE fetch.
#include "hw/wqe_fetch/wqe_fetch.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "hw/wqe_fetch/wqe_decode.h"

namespace rnic::hw {

wqe_fetch_config parse_wqe_fetch_config(config::reader r) {
    wqe_fetch_config c;
    r.get("batch", c.batch, 1u, 64u);
    r.get("parse_cycles", c.parse_cycles, 0u, 100u);
    r.get("fifo_depth", c.fifo_depth, 1u, 4096u);
    r.get("max_outstanding", c.max_outstanding, 1u, 256u);
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
    , m_out("wqes", cfg.fifo_depth)
    , m_batches(cfg.max_outstanding) {
    SC_HAS_PROCESS(wqe_fetch);
    SC_THREAD(fetch_thread);
    auto& s = ctx.stats;
    s.add(this->name(), "wqes", m_stats.wqes, "count", "WQEs fetched");
    s.add(this->name(), "dma_reads", m_stats.dma_reads, "count", "DMA reads of SQ rings");
    s.add(this->name(), "pushed", m_stats.pushed, "count", "WQEs taken from a doorbell push");
    s.add(this->name(), "malformed", m_stats.malformed, "count", "WQEs with a bad opcode or size");
    s.add(this->name(), "max_in_flight", m_stats.max_in_flight, "count",
          "most SQ ring reads in flight at once");
    s.add(this->name(), "outstanding_full", m_stats.outstanding_full, "count",
          "times a scheduled QP waited because max_outstanding ring reads were in flight");
    s.add(
        this->name(), "busy_ps",
        [this] { return nlohmann::json(busy_ps_at(sc_core::sc_time_stamp())); }, "ps",
        "read-slot time (issue to last WQE parsed) over max_outstanding, up to now");
    s.add(this->name(), "stall_ps", m_stats.stall_ps, "ps",
          "time a parsed WQE waited for the transmit engine (output FIFO full)");
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

void wqe_fetch::issue(uint32_t qpn) {
    const sc_core::sc_time doorbell_time = sc_core::sc_time_stamp();
    qp_context* qp = m_contexts.qp(qpn);
    if (qp == nullptr) {
        m_doorbell.reschedule(qpn);
        return;
    }
    if (m_cache != nullptr) {
        m_cache->access(ctx_kind::QPC, qpn, true, cache_port::WQE_FETCH);  // SQ fetch index
    }
    // One batch: contiguous slots from the fetch index, not wrapping, at most `batch`.
    const uint32_t depth = 1u << qp->sq_log_depth;
    const uint32_t first = qp->sq_fetched;
    const uint32_t slot = first & (depth - 1);
    uint32_t n =
        std::min({m_doorbell.sq_producer_now(qpn, *qp) - first, m_cfg.batch, depth - slot});
    if (n == 0) {
        m_doorbell.reschedule(qpn);
        return;
    }
    batch& b = m_batches[(m_head + m_count) % m_batches.size()];
    b.qpn = qpn;
    b.next = 0;
    b.stride = qp->sq_stride;
    b.doorbell_time = doorbell_time;
    // A WQE pushed whole with its doorbell (up to the write-combining size) needs no DMA read.
    // (A WQE larger than what was pushed, or than its slot, is read from the ring.)
    if (m_doorbell.take_pushed_wqe(qpn, first & 0xffff, m_pushed) && m_pushed.size() <= b.stride &&
        m_pushed[offsetof(hsi::wqe_ctrl, size_bb)] * 64u <= m_pushed.size()) {
        n = 1;
        b.bytes.assign(b.stride, 0);
        std::memcpy(b.bytes.data(), m_pushed.data(), m_pushed.size());
        b.done = sc_core::sc_time_stamp();
        ++m_stats.pushed;
    } else {
        b.bytes.resize(static_cast<size_t>(n) * b.stride);
        b.done =
            m_dma.read(dma_client::WQE_FETCH, qp->sq_addr + static_cast<uint64_t>(slot) * b.stride,
                       b.bytes.data(), n * b.stride);
        ++m_stats.dma_reads;
    }
    b.n = n;
    qp->sq_fetched = first + n;
    m_doorbell.reschedule(qpn);
    ++m_count;
    m_stats.max_in_flight = std::max<uint64_t>(m_stats.max_in_flight, m_count);
}

uint64_t wqe_fetch::busy_ps_at(const sc_core::sc_time& now) const {
    const auto max = static_cast<uint32_t>(m_batches.size());
    uint64_t busy = m_stats.busy_ps;
    for (uint32_t k = 0; k < m_count; ++k) {
        const batch& b = m_batches[(m_head + k) % max];
        busy += m_clk.ps_of(now - b.doorbell_time) / max;
    }
    return busy;
}

// One thread: it issues the reads of scheduled QPs while fewer than max_outstanding are in
// flight, and parses the oldest read's WQEs in order once its data is in. With
// max_outstanding 1 this is read, parse, next read (one ring read for the whole NIC).
void wqe_fetch::fetch_thread() {
    const auto max = static_cast<uint32_t>(m_batches.size());
    for (;;) {
        if (m_count == 0) {
            while (m_doorbell.sq_ready().empty()) {
                sc_core::wait(m_doorbell.sq_ready().written_event());  // idle: nothing in flight
            }
        }
        // Same-instant order: a QP the scheduler hands on at this instant is issued now,
        // whatever order SystemC runs the two processes in (and so on any number of MPI ranks).
        while (m_count < max && m_doorbell.sq_ready().empty() && m_doorbell.hands_on_now()) {
            sc_core::wait(m_doorbell.decided_event());
        }
        // Issue: a scheduled QP's read whenever a slot is free.
        while (m_count < max && !m_doorbell.sq_ready().empty()) {
            issue(m_doorbell.sq_ready().get());
        }
        if (m_count == 0) {
            continue;
        }
        batch& b = m_batches[m_head];
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        if (b.done > now) {
            if (m_count < max) {
                // Wait for the data, or for a QP to issue meanwhile.
                sc_core::wait(m_clk.edge_at_or_after(b.done) - now,
                              m_doorbell.sq_ready().written_event());
                continue;
            }
            if (!m_doorbell.sq_ready().empty()) {
                ++m_stats.outstanding_full;
            }
            m_clk.wait_until(b.done);
        }
        // Parse the next WQE of the oldest read.
        wqe_item w =
            parse(b.qpn, b.bytes.data() + static_cast<size_t>(b.next) * b.stride, b.stride);
        w.doorbell_time = b.doorbell_time;
        m_clk.wait_cycles(m_cfg.parse_cycles * std::max<uint32_t>(1, w.ctrl.size_bb));
        if (w.malformed) {
            ++m_stats.malformed;
        }
        ++m_stats.wqes;
        if (m_ctx.tracer != nullptr) {
            m_ctx.tracer->slice(name(), "wqe_fetch", w.flow_id, b.doorbell_time,
                                sc_core::sc_time_stamp());
        }
        if (++b.next == b.n) {
            m_stats.busy_ps += m_clk.ps_of(sc_core::sc_time_stamp() - b.doorbell_time) / max;
            m_head = (m_head + 1) % max;
            --m_count;
        }
        if (m_out.full()) {
            const sc_core::sc_time blocked = sc_core::sc_time_stamp();
            m_out.put(std::move(w));
            m_stats.stall_ps += m_clk.ps_of(sc_core::sc_time_stamp() - blocked);
        } else {
            m_out.put(std::move(w));
        }
    }
}

}  // namespace rnic::hw
