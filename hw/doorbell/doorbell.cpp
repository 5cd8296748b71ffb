// SPDX-License-Identifier: Apache-2.0
// Doorbell and QP scheduler.
#include "hw/doorbell/doorbell.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "hw/cq_writer/cq_writer.h"
#include "hw/gsi/gsi.h"
#include "hw/netdma/netdma.h"

namespace rnic::hw {

namespace {
constexpr uint32_t QPN_MASK = 0xffffff;

uint64_t load_le(const uint8_t* p, unsigned len) {
    uint64_t v = 0;
    for (unsigned i = 0; i < len && i < 8; ++i) {
        v |= static_cast<uint64_t>(p[i]) << (8 * i);
    }
    return v;
}

void store_le(uint8_t* p, unsigned len, uint64_t v) {
    for (unsigned i = 0; i < len; ++i) {
        p[i] = i < 8 ? static_cast<uint8_t>(v >> (8 * i)) : 0;
    }
}

// A free-running 32-bit index rebuilt from the 16 bits the driver writes: the driver never has
// 2^16 or more WQEs outstanding, so the new index is the old one plus the 16-bit distance.
uint32_t widen_index(uint32_t old, uint64_t new16) {
    return old + ((static_cast<uint32_t>(new16) - old) & 0xffffu);
}
}  // namespace

doorbell_config parse_doorbell_config(config::reader r) {
    doorbell_config c;
    r.get("decode_cycles", c.decode_cycles, 0u, 1000u);
    r.get("ready_fifo_depth", c.ready_fifo_depth, 1u, 65536u);
    r.get("push_buffers", c.push_buffers, 1u, 4096u);
    r.finish();
    return c;
}

// BAR0 register table (hsi.h). SQ/RQ/CQ doorbells are write-only and need one 64-bit write;
// the 32-bit doorbells also accept a 64-bit write (upper half ignored); the base/size CSRs may
// be written as two 32-bit halves.
const doorbell::reg_desc doorbell::REGS[] = {
    {hsi::REG_CMDQ_BASE, 8, true, &doorbell::rd_cmdq_base, &doorbell::wr_cmdq_base, nullptr},
    {hsi::REG_CMDQ_LOG_SIZE, 8, true, &doorbell::rd_cmdq_log_size, &doorbell::wr_cmdq_log_size,
     nullptr},
    {hsi::REG_CMDQ_DOORBELL, 4, false, &doorbell::rd_cmdq_doorbell, &doorbell::wr_cmdq_doorbell,
     nullptr},
    {hsi::REG_EQ_BASE, 8, true, &doorbell::rd_eq_base, &doorbell::wr_eq_base, nullptr},
    {hsi::REG_EQ_LOG_SIZE, 8, true, &doorbell::rd_eq_log_size, &doorbell::wr_eq_log_size, nullptr},
    {hsi::REG_EQ_CONSUMER, 4, false, &doorbell::rd_eq_consumer, &doorbell::wr_eq_consumer, nullptr},
    {hsi::REG_DEVICE_ID, 8, true, &doorbell::rd_device_id, nullptr, nullptr},
    {hsi::REG_ICM_BASE, 8, true, &doorbell::rd_icm_base, &doorbell::wr_icm_base, nullptr},
    {hsi::REG_ICM_SIZE, 8, true, &doorbell::rd_icm_size, &doorbell::wr_icm_size,
     &doorbell::held_icm_size},
    {hsi::REG_SQ_DOORBELL, 8, false, nullptr, &doorbell::wr_sq_doorbell, nullptr},
    {hsi::REG_RQ_DOORBELL, 8, false, nullptr, &doorbell::wr_rq_doorbell, nullptr},
    {hsi::REG_CQ_DOORBELL, 8, false, nullptr, &doorbell::wr_cq_doorbell, nullptr},
};

doorbell::doorbell(sc_core::sc_module_name name, const doorbell_config& cfg,
                   const clock_domain& clk, context_store& contexts, sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_contexts(contexts)
    , m_ctx(ctx)
    , m_sq_ready("sq_ready", cfg.ready_fifo_depth)
    , m_cmd_doorbells("cmd_doorbells", 8)
    , m_scheduled(contexts.max_qps(), false)
    , m_sq_rung_at(contexts.max_qps(), sc_core::sc_max_time())
    , m_sq_producer_before(contexts.max_qps(), 0) {
    mmio_in.register_b_transport(this, &doorbell::mmio_b_transport);
    SC_HAS_PROCESS(doorbell);
    SC_THREAD(scheduler_thread);

    const std::string b = this->name();
    auto& s = ctx.stats;
    s.add(b, "sq_doorbells", m_stats.sq_doorbells, "count", "send-queue doorbells");
    s.add(b, "rq_doorbells", m_stats.rq_doorbells, "count", "receive-queue and SRQ doorbells");
    s.add(b, "cq_doorbells", m_stats.cq_doorbells, "count", "CQ consumer/arm doorbells");
    s.add(b, "cmd_doorbells", m_stats.cmd_doorbells, "count", "command-queue doorbells");
    s.add(b, "wqe_pushes", m_stats.wqe_pushes, "count",
          "WQE pushes (doorbell + the WQE's first 64-256 B, write-combined)");
    s.add(b, "wqe_push_bytes", m_stats.wqe_push_bytes, "bytes", "bytes of WQE pushes");
    s.add(b, "bad_doorbells", m_stats.bad_doorbells, "count",
          "writes to unknown offsets, malformed widths or for invalid QPs/CQs (ignored)");
    s.add(b, "eq_doorbells", m_stats.eq_doorbells, "count", "event-queue consumer writes");
    s.add(b, "csr_writes", m_stats.csr_writes, "count", "command/event queue CSR writes");
    s.add(b, "msix_writes", m_stats.msix_writes, "count", "MSI-X table writes");
    s.add(b, "mmio_reads", m_stats.mmio_reads, "count", "BAR0 reads");
    s.add(b, "bad_reads", m_stats.bad_reads, "count", "reads of unknown or write-only offsets");
    s.add(b, "cmd_coalesced", m_stats.cmd_coalesced, "count",
          "command doorbells merged into a queued one (channel full)");
    s.add(b, "push_overflows", m_stats.push_overflows, "count",
          "pushed WQE blocks dropped for lack of a buffer (fetched by DMA instead)");
    s.add(b, "pushed_taken", m_stats.pushed_taken, "count", "pushed WQE blocks used by WQE fetch");
    s.add(b, "scheduled", m_stats.scheduled, "count", "QPs handed to WQE fetch");
    s.add(b, "stale_skipped", m_stats.stale_skipped, "count",
          "scheduled QPs dropped at dispatch (destroyed, left RTS, or no work left)");
    s.add(b, "rq_flush_requests", m_stats.rq_flush_requests, "count",
          "RQ doorbells of QPs in ERROR: the receive path flushes the new receives");
    s.add(
        b, "sq_ready_max", [this] { return nlohmann::json(m_sq_ready.max_occupancy()); }, "count",
        "peak occupancy of the ready FIFO to WQE fetch");
    s.add(
        b, "sq_ready_full_waits", [this] { return nlohmann::json(m_sq_ready.full_waits()); },
        "count", "times the scheduler stalled on a full ready FIFO");
    if (ctx.vcd != nullptr) {
        m_sq_ready.trace(ctx.vcd, b);
        m_cmd_doorbells.trace(ctx.vcd, b);
        sc_core::sc_trace(ctx.vcd, m_pending_count, b + ".pending");
        sc_core::sc_trace(ctx.vcd, m_stats.sq_doorbells, b + ".sq_doorbells");
        sc_core::sc_trace(ctx.vcd, m_stats.scheduled, b + ".scheduled");
    }
}

const doorbell::reg_desc* doorbell::find_reg(uint64_t offset) const {
    for (const reg_desc& r : REGS) {
        if (offset == r.offset || (r.halves && offset == r.offset + 4)) {
            return &r;
        }
    }
    return nullptr;
}

void doorbell::mmio_b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    const uint64_t offset = gp.get_address();
    const unsigned len = gp.get_data_length();
    uint8_t* data = gp.get_data_ptr();
    m_arrival = sc_core::sc_time_stamp() + delay;
    if (gp.is_write()) {
        // Posted: nothing goes back to the host, so errors are only counted.
        handle_write(offset, data, len);
    } else if (gp.is_read()) {
        ++m_stats.mmio_reads;
        if (!handle_read(offset, data, len)) {
            ++m_stats.bad_reads;
            std::memset(data, 0, len);
        }
        // Register read: decode and mux, then the completion leaves.
        delay += m_clk.cycles(m_cfg.decode_cycles);
    }
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

void doorbell::handle_write(uint64_t offset, const uint8_t* data, unsigned len) {
    if (m_netdma != nullptr && netdma::decodes(offset)) {
        m_netdma->mmio_write(offset, data, len, m_arrival);  // counts its own bad accesses
        return;
    }
    if (m_gsi != nullptr && gsi::decodes(offset)) {
        if (!m_gsi->mmio_write(offset, data, len)) {
            ++m_stats.bad_doorbells;
        }
        return;
    }
    if (offset >= hsi::REG_MSIX_TABLE && offset < hsi::REG_MSIX_TABLE + 16ull * hsi::MSIX_VECTORS) {
        if (!msix_write(offset, data, len)) {
            ++m_stats.bad_doorbells;
        }
        return;
    }
    if (offset == hsi::REG_WQE_PUSH) {
        if (len < hsi::WQE_PUSH_SIZE || len > hsi::WQE_PUSH_MAX_SIZE || len % 64 != 0) {
            ++m_stats.bad_doorbells;
            return;
        }
        hsi::wqe_ctrl ctrl;
        std::memcpy(&ctrl, data, sizeof(ctrl));
        const uint32_t qpn = ctrl.qpn & QPN_MASK;
        if (ctrl.qpn > QPN_MASK || (ctrl.doorbell & QPN_MASK) != qpn ||
            m_contexts.qp(qpn) == nullptr) {
            ++m_stats.bad_doorbells;
            return;
        }
        ++m_stats.wqe_pushes;
        // One buffer per (QP, index): a re-push replaces; when all are taken the oldest goes
        // (WQE fetch then reads that WQE from the ring, which the driver also wrote).
        m_pushed.erase(std::remove_if(m_pushed.begin(), m_pushed.end(),
                                      [&](const auto& p) {
                                          return p.qpn == qpn && p.index == ctrl.wqe_index;
                                      }),
                       m_pushed.end());
        if (m_pushed.size() >= m_cfg.push_buffers) {
            m_pushed.erase(m_pushed.begin());
            ++m_stats.push_overflows;
        }
        m_pushed.push_back({qpn, ctrl.wqe_index, std::vector<uint8_t>(data, data + len)});
        m_stats.wqe_push_bytes += len;
        sq_doorbell(ctrl.doorbell);
        return;
    }
    const reg_desc* r = find_reg(offset);
    if (r == nullptr || r->write == nullptr) {
        ++m_stats.bad_doorbells;
        return;
    }
    uint64_t value = 0;
    if (offset == r->offset && (len == r->size || (r->size == 4 && len == 8))) {
        value = load_le(data, len);
        if (r->size == 4) {
            value &= 0xffffffffull;
        }
    } else if (r->halves && len == 4) {
        // Half of a 64-bit CSR: read-modify-write.
        const uint64_t old = (this->*(r->held != nullptr ? r->held : r->read))();
        const uint64_t half = load_le(data, 4);
        value = offset == r->offset ? (old & ~0xffffffffull) | half
                                    : (old & 0xffffffffull) | (half << 32);
    } else {
        ++m_stats.bad_doorbells;
        return;
    }
    (this->*(r->write))(value);
}

bool doorbell::handle_read(uint64_t offset, uint8_t* data, unsigned len) {
    if (m_netdma != nullptr && netdma::decodes(offset)) {
        return m_netdma->mmio_read(offset, data, len);
    }
    if (m_gsi != nullptr && gsi::decodes(offset)) {
        return m_gsi->mmio_read(offset, data, len);
    }
    if (offset >= hsi::REG_MSIX_TABLE && offset < hsi::REG_MSIX_TABLE + 16ull * hsi::MSIX_VECTORS) {
        return msix_read(offset, data, len);
    }
    const reg_desc* r = find_reg(offset);
    if (r == nullptr || r->read == nullptr) {
        return false;
    }
    const uint64_t v = (this->*(r->read))();
    if (offset == r->offset && (len == 4 || len == 8)) {
        store_le(data, len, r->size == 4 ? (v & 0xffffffffull) : v);
        return true;
    }
    if (offset == r->offset + 4 && len == 4) {
        store_le(data, 4, v >> 32);
        return true;
    }
    return false;
}

// MSI-X table: 16 B per vector, dwords addr lo, addr hi, data, control. 4-, 8- and 16-byte
// accesses, dword aligned, within one entry.
bool doorbell::msix_write(uint64_t offset, const uint8_t* data, unsigned len) {
    const uint64_t rel = offset - hsi::REG_MSIX_TABLE;
    const auto vector = static_cast<uint32_t>(rel / 16);
    const auto first = static_cast<unsigned>(rel % 16);
    if ((len != 4 && len != 8 && len != 16) || first % 4 != 0 || first + len > 16) {
        return false;
    }
    auto& e = m_regs.msix[vector];
    for (unsigned i = 0; i < len / 4; ++i) {
        const auto dw = static_cast<uint32_t>(load_le(data + 4 * i, 4));
        switch (first / 4 + i) {
            case 0:
                e.addr = (e.addr & ~0xffffffffull) | dw;
                break;
            case 1:
                e.addr = (e.addr & 0xffffffffull) | (static_cast<uint64_t>(dw) << 32);
                break;
            case 2:
                e.data = dw;
                break;
            default:
                e.control = dw;
                break;
        }
    }
    ++m_stats.msix_writes;
    if (m_cq_writer != nullptr) {
        m_cq_writer->msix_control_written(vector);  // an unmask sends a pending message
    }
    if (m_netdma != nullptr) {
        m_netdma->msix_control_written(vector);
    }
    return true;
}

bool doorbell::msix_read(uint64_t offset, uint8_t* data, unsigned len) const {
    const uint64_t rel = offset - hsi::REG_MSIX_TABLE;
    const auto first = static_cast<unsigned>(rel % 16);
    if ((len != 4 && len != 8 && len != 16) || first % 4 != 0 || first + len > 16) {
        return false;
    }
    const auto& e = m_regs.msix[rel / 16];
    const uint32_t dws[4] = {static_cast<uint32_t>(e.addr), static_cast<uint32_t>(e.addr >> 32),
                             e.data, e.control};
    for (unsigned i = 0; i < len / 4; ++i) {
        store_le(data + 4 * i, 4, dws[first / 4 + i]);
    }
    return true;
}

void doorbell::wr_cmdq_base(uint64_t v) {
    m_regs.cmdq_base = v;
    ++m_stats.csr_writes;
}

void doorbell::wr_cmdq_log_size(uint64_t v) {
    m_regs.cmdq_log_size = static_cast<uint32_t>(v);
    ++m_stats.csr_writes;
}

void doorbell::wr_eq_base(uint64_t v) {
    m_regs.eq_base = v;
    ++m_stats.csr_writes;
}

void doorbell::wr_eq_log_size(uint64_t v) {
    m_regs.eq_log_size = static_cast<uint32_t>(v);
    ++m_stats.csr_writes;
}

void doorbell::wr_icm_base(uint64_t v) {
    if ((v & (hsi::PAGE_SIZE - 1)) != 0) {
        ++m_stats.bad_doorbells;  // must be 4 KiB aligned: ignored
        return;
    }
    m_regs.icm_base = v;
    ++m_stats.csr_writes;
}

// The driver writes the size it allocated; a read returns the size the NIC needs.
void doorbell::wr_icm_size(uint64_t v) {
    m_regs.icm_size = v;
    ++m_stats.csr_writes;
}

void doorbell::wr_cmdq_doorbell(uint64_t v) {
    ++m_stats.cmd_doorbells;
    m_cmd_producer = static_cast<uint32_t>(v);
    // The command processor always works up to cmd_producer(), so a doorbell that finds the
    // channel full is already covered by the ones queued.
    if (m_cmd_doorbells.full()) {
        ++m_stats.cmd_coalesced;
    } else {
        m_cmd_doorbells.put(m_cmd_producer);
    }
}

void doorbell::wr_eq_consumer(uint64_t v) {
    ++m_stats.eq_doorbells;
    m_eq_consumer = static_cast<uint32_t>(v);
    if (m_cq_writer != nullptr) {
        m_cq_writer->eq_consumer(m_eq_consumer);
    }
}

void doorbell::wr_rq_doorbell(uint64_t v) {
    const uint32_t id = static_cast<uint32_t>(v) & QPN_MASK;
    const uint64_t new16 = (v >> 32) & 0xffff;
    if ((v & hsi::RQ_DOORBELL_SRQ) != 0) {
        srq_context* srq = m_contexts.srq(id);
        if (srq == nullptr) {
            ++m_stats.bad_doorbells;
            return;
        }
        srq->producer = widen_index(srq->producer, new16);
    } else {
        qp_context* qp = m_contexts.qp(id);
        if (qp == nullptr) {
            ++m_stats.bad_doorbells;
            return;
        }
        qp->rq_producer = widen_index(qp->rq_producer, new16);
        if (qp->state == hsi::QPS_ERROR && qp->srqn == 0 && m_rq_flush) {
            // IBA 10.3.1: a receive posted to a QP in ERROR completes with a flush error. The
            // receive path fetches it like any posted receive once the doorbell is decoded
            // (+decode_cycles) and completes it with CQE_WR_FLUSH_ERR.
            ++m_stats.rq_flush_requests;
            m_rq_flush(id, m_clk.edge_at_or_after(m_arrival) + m_clk.cycles(m_cfg.decode_cycles));
        }
    }
    ++m_stats.rq_doorbells;
}

void doorbell::reset_qp(uint32_t qpn) {
    m_pushed.erase(std::remove_if(m_pushed.begin(), m_pushed.end(),
                                  [qpn](const auto& p) { return p.qpn == qpn; }),
                   m_pushed.end());
}

void doorbell::wr_cq_doorbell(uint64_t v) {
    const uint32_t cqn = static_cast<uint32_t>(v) & QPN_MASK;
    const auto arm = static_cast<uint8_t>((v >> 24) & 3);
    const auto consumer = static_cast<uint32_t>(v >> 32);
    if (m_contexts.cq(cqn) == nullptr || m_cq_writer == nullptr) {
        ++m_stats.bad_doorbells;
        return;
    }
    ++m_stats.cq_doorbells;
    m_cq_writer->cq_doorbell(cqn, arm, consumer);
}

void doorbell::sq_doorbell(uint64_t value) {
    const uint32_t qpn = static_cast<uint32_t>(value) & QPN_MASK;
    qp_context* qp = m_contexts.qp(qpn);
    if (qp == nullptr) {
        ++m_stats.bad_doorbells;
        return;
    }
    ++m_stats.sq_doorbells;
    if (m_sq_rung_at[qpn] != sc_core::sc_time_stamp()) {
        m_sq_rung_at[qpn] = sc_core::sc_time_stamp();
        m_sq_producer_before[qpn] = qp->sq_producer;
    }
    qp->sq_producer = widen_index(qp->sq_producer, (value >> 32) & 0xffff);
    // +decode_cycles: the doorbell write is decoded and the QP's ready bit set.
    try_schedule(qpn, m_clk.edge_at_or_after(m_arrival) + m_clk.cycles(m_cfg.decode_cycles), true,
                 m_arrival);
}

void doorbell::try_schedule(uint32_t qpn, const sc_core::sc_time& ready, bool from_doorbell,
                            const sc_core::sc_time& rung) {
    qp_context* qp = m_contexts.qp(qpn);
    if (qp == nullptr || m_scheduled[qpn]) {
        return;
    }
    // ERROR: the WQEs are fetched to be completed with a flush status.
    if (qp->state != hsi::QPS_RTS && qp->state != hsi::QPS_ERROR) {
        return;
    }
    if (qp->sq_producer == qp->sq_fetched) {
        return;
    }
    m_scheduled[qpn] = true;
    // Same-instant order: QPs queued at one instant (a decoded doorbell, a QP WQE fetch hands
    // back, a kick) go in order of (ready, QPN), not in the order SystemC ran the processes
    // that queued them; QPs queued at different instants keep their arrival order.
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    auto at = m_pending.end();
    while (at != m_pending.begin()) {
        const pending_qp& prev = *std::prev(at);
        if (prev.queued != now || prev.ready < ready || (prev.ready == ready && prev.qpn < qpn)) {
            break;
        }
        --at;
    }
    m_pending.insert(at, {qpn, ready, rung, from_doorbell, now});
    set_pending_trace();
    m_pending_event.notify(sc_core::SC_ZERO_TIME);
}

void doorbell::reschedule(uint32_t qpn) {
    if (qpn >= m_scheduled.size()) {
        return;
    }
    m_scheduled[qpn] = false;
    const qp_context* qp = m_contexts.qp(qpn);
    if (qp != nullptr && m_sq_rung_at[qpn] == sc_core::sc_time_stamp() &&
        m_sq_producer_before[qpn] == qp->sq_fetched) {
        // WQE fetch left out an SQ doorbell of this instant (sq_producer_now) and has nothing
        // else to fetch: the QP is scheduled as that doorbell schedules it, whichever of the
        // two ran first.
        try_schedule(qpn,
                     m_clk.edge_at_or_after(m_sq_rung_at[qpn]) + m_clk.cycles(m_cfg.decode_cycles),
                     true, m_sq_rung_at[qpn]);
        return;
    }
    try_schedule(qpn, sc_core::sc_time_stamp());
}

bool doorbell::hands_on_now() const {
    return !m_pending.empty() && !m_sq_ready.full() &&
           m_clk.edge_at_or_after(std::max(m_pending.front().ready, m_next_slot)) <=
               sc_core::sc_time_stamp();
}

void doorbell::kick(uint32_t qpn) {
    if (qpn >= m_scheduled.size()) {
        return;
    }
    try_schedule(qpn, sc_core::sc_time_stamp());
}

bool doorbell::take_pushed_wqe(uint32_t qpn, uint32_t index, std::vector<uint8_t>& out) {
    const auto idx16 = static_cast<uint16_t>(index);
    bool found = false;
    for (auto it = m_pushed.begin(); it != m_pushed.end();) {
        if (it->qpn != qpn) {
            ++it;
            continue;
        }
        const auto distance = static_cast<int16_t>(it->index - idx16);
        if (distance == 0) {
            out = std::move(it->bytes);
            found = true;
            it = m_pushed.erase(it);
        } else if (distance < 0) {
            it = m_pushed.erase(it);  // older than what is being fetched: never used
        } else {
            ++it;
        }
    }
    if (found) {
        ++m_stats.pushed_taken;
    }
    return found;
}

void doorbell::set_pending_trace() {
    m_pending_count = static_cast<uint32_t>(m_pending.size());
}

// One QP per cycle, in the order they became ready (round-robin: a QP that still has work after
// its fetch batch goes to the back). A QP waits for its doorbell's decode_cycles.
void doorbell::scheduler_thread() {
    for (;;) {
        while (m_pending.empty()) {
            sc_core::wait(m_pending_event);
        }
        // Same-instant order: a QP queued later at this instant may go to the front (try_schedule):
        // wait for the front's turn or for a change of the list, then look again.
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        const sc_core::sc_time due =
            m_clk.edge_at_or_after(std::max(m_pending.front().ready, m_next_slot));
        if (due > now) {
            sc_core::wait(due - now, m_pending_event);
            continue;
        }
        const pending_qp p = m_pending.front();
        m_pending.pop_front();
        set_pending_trace();
        m_next_slot = m_clk.edge_at_or_after(sc_core::sc_time_stamp()) + m_clk.period();
        const qp_context* qp = m_contexts.qp(p.qpn);
        if (qp == nullptr || (qp->state != hsi::QPS_RTS && qp->state != hsi::QPS_ERROR) ||
            qp->sq_producer == qp->sq_fetched) {
            m_scheduled[p.qpn] = false;
            ++m_stats.stale_skipped;
            m_decided.notify(sc_core::SC_ZERO_TIME);
            continue;
        }
        m_sq_ready.put(p.qpn);  // blocks while WQE fetch is behind (back-pressure)
        ++m_stats.scheduled;
        m_decided.notify(sc_core::SC_ZERO_TIME);
        if (p.from_doorbell && m_ctx.tracer != nullptr) {
            // Doorbell at the BAR -> decode -> scheduler -> QP in WQE fetch's ready FIFO.
            m_ctx.tracer->slice(name(), "doorbell", 0, p.rung, sc_core::sc_time_stamp(),
                                "\"qpn\":" + std::to_string(p.qpn));
        }
        m_next_slot = std::max(m_next_slot,
                               m_clk.edge_at_or_after(sc_core::sc_time_stamp()) + m_clk.period());
    }
}

}  // namespace rnic::hw
