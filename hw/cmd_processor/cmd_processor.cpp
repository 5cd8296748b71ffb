// SPDX-License-Identifier: Apache-2.0
// Command processor: the firmware that owns the context tables.
#include "hw/cmd_processor/cmd_processor.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "hw/common/timestep_arbiter.h"
#include "hw/context_cache/context_cache.h"

namespace rnic::hw {

namespace {
constexpr uint32_t MAX_CMDQ_LOG = 16;      // command ring of at most 65536 slots
constexpr uint32_t MAX_HANDLE = 0xffffff;  // QPN/CQN/... are 24 bits on the wire
constexpr uint32_t ACCESS_ALL = hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_READ |
                                hsi::ACCESS_REMOTE_WRITE | hsi::ACCESS_FAST_REG |
                                hsi::ACCESS_REMOTE_ACCESS_OK | hsi::ACCESS_MW_BIND;
constexpr uint32_t MIN_PMTU_LOG = 8;   // 256 B
constexpr uint32_t MAX_PMTU_LOG = 12;  // 4096 B
constexpr uint32_t MAX_STRIDE = 4096;

const char* status_name(size_t s) {
    static const char* names[] = {"ok",         "bad_opcode", "bad_param",   "no_resources",
                                  "bad_handle", "busy",       "device_fatal"};
    return names[s];
}

void release(uint32_t& refcount) {
    if (refcount > 0) {
        --refcount;
    }
}
}  // namespace

cmd_processor_config parse_cmd_processor_config(config::reader r) {
    cmd_processor_config c;
    r.get("cycles_per_command", c.cycles_per_command, 0u, 1000000u);
    r.get("max_inline_mtt_fetch", c.max_inline_mtt_fetch, 1u, 4096u);
    r.finish();
    return c;
}

fault_config parse_fault_config(config::reader r) {
    fault_config c;
    r.get("fatal_error_at_ns", c.fatal_error_at_ns, 0.0, 1e15);
    r.finish();
    return c;
}

cmd_processor::cmd_processor(sc_core::sc_module_name name, const cmd_processor_config& cfg,
                             const clock_domain& clk, context_store& contexts, dma_engine& dma,
                             const nic_limits& limits, doorbell& db, cq_writer& cqw,
                             sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_contexts(contexts)
    , m_limits(limits)
    , m_dma(dma)
    , m_doorbell(db)
    , m_cq_writer(cqw) {
    SC_HAS_PROCESS(cmd_processor);
    SC_THREAD(command_thread);
    SC_METHOD(on_fatal_timer);
    sensitive << m_fatal_event;
    dont_initialize();

    const std::string b = this->name();
    auto& s = ctx.stats;
    s.add(b, "commands", m_stats.commands, "count", "commands executed");
    s.add(b, "failed", m_stats.failed, "count", "commands completed with a status other than OK");
    s.add(b, "mtt_pages_loaded", m_stats.mtt_pages_loaded, "pages",
          "page addresses read into the MTT by CREATE_MR");
    s.add(b, "mtt_dma_reads", m_stats.mtt_dma_reads, "count", "page-list DMA reads");
    s.add(b, "ring_errors", m_stats.ring_errors, "count",
          "command doorbells ignored: ring not set up or producer index out of range");
    for (size_t i = 0; i < m_stats.by_status.size(); ++i) {
        s.add(b, std::string("status_") + status_name(i), m_stats.by_status[i], "count",
              std::string("commands completed with status ") + status_name(i));
    }
    if (ctx.vcd != nullptr) {
        sc_core::sc_trace(ctx.vcd, m_busy, b + ".busy");
        sc_core::sc_trace(ctx.vcd, m_consumer, b + ".consumer");
    }
}

void cmd_processor::command_thread() {
    for (;;) {
        m_doorbell.cmd_doorbells().get();
        // Work up to the latest producer index (later doorbells may have been coalesced).
        for (;;) {
            const uint32_t producer = m_doorbell.cmd_producer();
            if (producer == m_consumer) {
                break;
            }
            const bar_registers& regs = m_doorbell.registers();
            const uint32_t log = regs.cmdq_log_size;
            if (regs.cmdq_base == 0 || log > MAX_CMDQ_LOG || producer - m_consumer > (1u << log)) {
                // Not a usable ring: ignore the doorbell; a later one with a sane index works.
                ++m_stats.ring_errors;
                break;
            }
            m_busy = true;
            const uint64_t slot_addr =
                regs.cmdq_base +
                static_cast<uint64_t>(m_consumer & ((1u << log) - 1)) * sizeof(hsi::cmd_slot);
            hsi::cmd_slot slot;
            m_dma.read_wait(dma_client::COMMAND, slot_addr, &slot, sizeof(slot));
            // +cycles_per_command: firmware decode and context-table update.
            m_clk.wait_cycles(m_cfg.cycles_per_command);
            // A command that takes a context out of service (a QP to ERROR or RESET, a QP, MR,
            // MW, SRQ or CQ destroyed) changes the context tables once every other process has
            // finished at this instant (settle_instant): a block that reads the context at this
            // instant (a receive lane classifying a frame by its QP's state, a key check) reads
            // it before the change, whatever order SystemC runs the two in. Without it a frame
            // arriving at the instant of its QP's teardown was a duplicate or bad_state by
            // process order, which differed between one and two MPI ranks. Teardowns are rare:
            // the settle costs nothing per packet.
            if (takes_out_of_service(slot)) {
                settle_instant();
            }
            const uint8_t status = m_fatal ? hsi::CMD_DEVICE_FATAL : execute(slot);
            if (slot.opcode == hsi::CMD_QUERY_DEVICE && status == hsi::CMD_OK) {
                // The output goes ahead of the status (posted writes stay in order).
                m_dma.write_wait(dma_client::COMMAND, slot_addr + offsetof(hsi::cmd_slot, u),
                                 &slot.u.query, sizeof(slot.u.query));
            }
            // Status and done in one 2-byte write: the driver never sees done without status.
            const uint8_t writeback[2] = {status, 1};
            m_dma.write_wait(dma_client::COMMAND, slot_addr + hsi::CMD_STATUS_OFFSET, writeback,
                             sizeof(writeback));
            m_cq_writer.post_event(hsi::EVENT_CMD_DONE, slot.token);
            ++m_consumer;
            ++m_stats.commands;
            if (status != hsi::CMD_OK) {
                ++m_stats.failed;
            }
            if (status < m_stats.by_status.size()) {
                ++m_stats.by_status[status];
            }
        }
        m_busy = false;
    }
}

bool cmd_processor::takes_out_of_service(const hsi::cmd_slot& cmd) {
    switch (cmd.opcode) {
        case hsi::CMD_MODIFY_QP:
            return cmd.u.modify_qp.state == hsi::QPS_ERROR ||
                   cmd.u.modify_qp.state == hsi::QPS_RESET;
        case hsi::CMD_DESTROY_QP:
        case hsi::CMD_DESTROY_MR:
        case hsi::CMD_DESTROY_MW:
        case hsi::CMD_DESTROY_SRQ:
        case hsi::CMD_DESTROY_CQ:
            return true;
        default:
            return false;
    }
}

uint8_t cmd_processor::execute(hsi::cmd_slot& cmd) {
    switch (cmd.opcode) {
        case hsi::CMD_NOP:
            return hsi::CMD_OK;
        case hsi::CMD_CREATE_CQ:
            return create_cq(cmd.u.cq);
        case hsi::CMD_RESIZE_CQ:
            return resize_cq(cmd.u.cq);
        case hsi::CMD_DESTROY_CQ:
            return destroy_cq(cmd.u.obj.handle);
        case hsi::CMD_CREATE_PD:
            return create_pd(cmd.u.obj.handle);
        case hsi::CMD_DESTROY_PD:
            return destroy_pd(cmd.u.obj.handle);
        case hsi::CMD_CREATE_QP:
            return create_qp(cmd.u.qp);
        case hsi::CMD_MODIFY_QP:
            return modify_qp(cmd.u.modify_qp);
        case hsi::CMD_DESTROY_QP:
            return destroy_qp(cmd.u.obj.handle);
        case hsi::CMD_CREATE_MR:
            return create_mr(cmd.u.mr);
        case hsi::CMD_DESTROY_MR:
            return destroy_mr(cmd.u.obj.handle);
        case hsi::CMD_CREATE_MW:
            return create_mw(cmd.u.obj);
        case hsi::CMD_DESTROY_MW:
            return destroy_mw(cmd.u.obj.handle);
        case hsi::CMD_CREATE_SRQ:
            return create_srq(cmd.u.srq);
        case hsi::CMD_MODIFY_SRQ:
            return modify_srq(cmd.u.srq);
        case hsi::CMD_DESTROY_SRQ:
            return destroy_srq(cmd.u.obj.handle);
        case hsi::CMD_QUERY_DEVICE:
            return query_device(cmd.u.query);
        case hsi::CMD_MODIFY_CQ:
            return m_cq_writer.modify_moderation(cmd.u.modify_cq.cqn, cmd.u.modify_cq.count,
                                                 cmd.u.modify_cq.period_us);
        default:
            return hsi::CMD_BAD_OPCODE;
    }
}

uint8_t cmd_processor::query_device(hsi::cmd_query_device& out) const {
    const cq_config& cq = m_cq_writer.get_cq_config();
    out = hsi::cmd_query_device{};
    out.caps = cq.interrupt_moderation ? hsi::DEVICE_CAP_CQ_MODERATION : 0;
    out.moderation_timers = cq.interrupt_moderation ? cq.moderation_timers : 0;
    return hsi::CMD_OK;
}

void cmd_processor::qp_to_error(uint32_t qpn) {
    qp_context* qp = m_contexts.qp(qpn);
    if (qp == nullptr) {
        return;
    }
    qp->state = hsi::QPS_ERROR;
    invalidate_qp(qpn);
    if (m_qp_error_handler) {
        m_qp_error_handler(qpn);
    }
    m_doorbell.kick(qpn);
}

void cmd_processor::inject_fatal_error(uint32_t syndrome) {
    if (m_fatal) {
        return;
    }
    m_fatal = true;
    // CQs first: the flushes of the QPs below find them dead and write nothing.
    m_cq_writer.device_fatal();
    for (uint32_t srqn = 0; srqn < m_contexts.max_srqs(); ++srqn) {
        if (srq_context* srq = m_contexts.srq(srqn)) {
            srq->error = true;
        }
    }
    for (uint32_t qpn = 0; qpn < m_contexts.max_qps(); ++qpn) {
        qp_context* qp = m_contexts.qp(qpn);
        if (qp != nullptr && qp->state != hsi::QPS_ERROR) {
            qp_to_error(qpn);
        }
    }
    m_cq_writer.post_event(hsi::EVENT_DEVICE_FATAL, syndrome);
}

void cmd_processor::fatal_error_at(const sc_core::sc_time& at) {
    m_fatal_at = at;
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    m_fatal_event.notify(at > now ? at - now : sc_core::SC_ZERO_TIME);
}

void cmd_processor::on_fatal_timer() {
    // Runs once at a scheduled fault (rnic.faults.fatal_error_at_ns); costs nothing otherwise.
    // Nothing in the fatal path blocks (flushes and kicks only queue work).
    if (m_fatal_at <= sc_core::sc_time_stamp()) {
        inject_fatal_error(hsi::FATAL_INJECTED);
    }
}

bool cmd_processor::depth_ok(uint32_t log_depth, uint32_t limit) const {
    return log_depth < 32 && (1ull << log_depth) <= limit;
}

void cmd_processor::invalidate_qp(uint32_t qpn) {
    if (m_context_cache != nullptr) {
        m_context_cache->invalidate(ctx_kind::QPC, qpn);
    }
}

void cmd_processor::invalidate_key(uint32_t key) {
    if (m_context_cache != nullptr) {
        m_context_cache->invalidate(ctx_kind::MPT, hsi::key_index(key));
    }
}

void cmd_processor::invalidate_mtt(uint32_t base, uint32_t pages) {
    if (m_context_cache == nullptr || pages == 0) {
        return;
    }
    const uint32_t per_line = std::max(1u, m_context_cache->mtt_entries_per_line());
    for (uint32_t i = base - base % per_line; i < base + pages; i += per_line) {
        m_context_cache->invalidate(ctx_kind::MTT, i);
    }
}

// --- CQ ---------------------------------------------------------------------------------------

uint8_t cmd_processor::create_cq(const hsi::cmd_create_cq& c) {
    cq_context* cq = m_contexts.cq_slot(c.cqn);
    if (cq == nullptr || cq->valid) {
        return hsi::CMD_BAD_PARAM;
    }
    if (!depth_ok(c.log_depth, m_limits.max_cq_depth) || c.ring_addr == 0 ||
        c.msix_vector >= hsi::MSIX_VECTORS) {
        return hsi::CMD_BAD_PARAM;
    }
    *cq = cq_context{};
    cq->valid = true;
    cq->log_depth = c.log_depth;
    cq->ring_addr = c.ring_addr;
    cq->msix_vector = c.msix_vector;
    m_cq_writer.cq_reset(c.cqn);
    return hsi::CMD_OK;
}

uint8_t cmd_processor::resize_cq(const hsi::cmd_create_cq& c) {
    cq_context* cq = m_contexts.cq_slot(c.cqn);
    if (cq == nullptr) {
        return hsi::CMD_BAD_PARAM;
    }
    if (!cq->valid) {
        return hsi::CMD_BAD_HANDLE;
    }
    if (!depth_ok(c.log_depth, m_limits.max_cq_depth) || c.ring_addr == 0 ||
        cq->producer - cq->consumer > (1u << c.log_depth)) {
        return hsi::CMD_BAD_PARAM;  // includes: new ring too small for the unconsumed CQEs
    }
    // Producer and consumer indices carry over: the next CQE goes to slot producer & new mask
    // with the phase of (producer >> new log).
    cq->log_depth = c.log_depth;
    cq->ring_addr = c.ring_addr;
    return hsi::CMD_OK;
}

uint8_t cmd_processor::destroy_cq(uint32_t cqn) {
    cq_context* cq = m_contexts.cq_slot(cqn);
    if (cq == nullptr) {
        return hsi::CMD_BAD_PARAM;
    }
    if (!cq->valid) {
        return hsi::CMD_BAD_HANDLE;
    }
    if (cq->refcount > 0) {
        return hsi::CMD_BUSY;
    }
    *cq = cq_context{};
    m_cq_writer.cq_reset(cqn);
    return hsi::CMD_OK;
}

// --- PD ---------------------------------------------------------------------------------------

uint8_t cmd_processor::create_pd(uint32_t pdn) {
    pd_context* pd = m_contexts.pd_slot(pdn);
    if (pd == nullptr || pd->valid) {
        return hsi::CMD_BAD_PARAM;
    }
    *pd = pd_context{};
    pd->valid = true;
    return hsi::CMD_OK;
}

uint8_t cmd_processor::destroy_pd(uint32_t pdn) {
    pd_context* pd = m_contexts.pd_slot(pdn);
    if (pd == nullptr) {
        return hsi::CMD_BAD_PARAM;
    }
    if (!pd->valid) {
        return hsi::CMD_BAD_HANDLE;
    }
    if (pd->refcount > 0) {
        return hsi::CMD_BUSY;
    }
    *pd = pd_context{};
    return hsi::CMD_OK;
}

// --- QP ---------------------------------------------------------------------------------------

uint8_t cmd_processor::create_qp(const hsi::cmd_create_qp& c) {
    qp_context* qp = m_contexts.qp_slot(c.qpn);
    if (qp == nullptr || qp->valid) {
        return hsi::CMD_BAD_PARAM;
    }
    const bool own_rq = c.srqn == 0;
    if (!depth_ok(c.sq_log_depth, m_limits.max_qp_depth) || c.sq_addr == 0 || c.sq_stride < 64 ||
        c.sq_stride % 64 != 0 || c.sq_stride > MAX_STRIDE || c.max_inline > m_limits.max_inline) {
        return hsi::CMD_BAD_PARAM;
    }
    if (own_rq && (!depth_ok(c.rq_log_depth, m_limits.max_qp_depth) || c.rq_addr == 0 ||
                   c.rq_stride < 16 || c.rq_stride % 16 != 0 || c.rq_stride > MAX_STRIDE)) {
        return hsi::CMD_BAD_PARAM;
    }
    pd_context* pd = m_contexts.pd(c.pdn);
    cq_context* send_cq = m_contexts.cq(c.send_cqn);
    cq_context* recv_cq = m_contexts.cq(c.recv_cqn);
    srq_context* srq = own_rq ? nullptr : m_contexts.srq(c.srqn);
    if (pd == nullptr || send_cq == nullptr || recv_cq == nullptr || (!own_rq && srq == nullptr)) {
        return hsi::CMD_BAD_HANDLE;
    }
    *qp = qp_context{};
    qp->valid = true;
    qp->state = hsi::QPS_INIT;
    qp->pdn = c.pdn;
    qp->send_cqn = c.send_cqn;
    qp->recv_cqn = c.recv_cqn;
    qp->srqn = c.srqn;
    qp->sq_log_depth = c.sq_log_depth;
    qp->rq_log_depth = own_rq ? c.rq_log_depth : 0;
    qp->sq_addr = c.sq_addr;
    qp->rq_addr = own_rq ? c.rq_addr : 0;
    qp->sq_stride = c.sq_stride;
    qp->rq_stride = c.rq_stride;
    qp->max_inline = c.max_inline;
    invalidate_qp(c.qpn);
    ++pd->refcount;
    ++send_cq->refcount;
    ++recv_cq->refcount;  // twice when both are the same CQ; destroy releases twice
    if (srq != nullptr) {
        ++srq->refcount;
    }
    return hsi::CMD_OK;
}

uint8_t cmd_processor::modify_qp(const hsi::cmd_modify_qp& c) {
    qp_context* qp = m_contexts.qp_slot(c.qpn);
    if (qp == nullptr) {
        return hsi::CMD_BAD_PARAM;
    }
    if (!qp->valid) {
        return hsi::CMD_BAD_HANDLE;
    }
    const uint8_t from = qp->state;
    const uint8_t to = c.state;
    if (to == hsi::QPS_ERROR) {
        // From any state; the other fields are ignored. Queued WQEs get fetched and flushed.
        qp->state = hsi::QPS_ERROR;
        invalidate_qp(c.qpn);
        if (m_qp_error_handler) {
            m_qp_error_handler(c.qpn);  // flush what is in flight and the posted receives
        }
        m_doorbell.kick(c.qpn);
        return hsi::CMD_OK;
    }
    if (to == hsi::QPS_RESET) {
        // Back to a fresh queue pair: the creation parameters stay, all queue and transport
        // state is cleared.
        qp_context fresh{};
        fresh.valid = true;
        fresh.pdn = qp->pdn;
        fresh.send_cqn = qp->send_cqn;
        fresh.recv_cqn = qp->recv_cqn;
        fresh.srqn = qp->srqn;
        fresh.sq_log_depth = qp->sq_log_depth;
        fresh.rq_log_depth = qp->rq_log_depth;
        fresh.sq_addr = qp->sq_addr;
        fresh.rq_addr = qp->rq_addr;
        fresh.sq_stride = qp->sq_stride;
        fresh.rq_stride = qp->rq_stride;
        fresh.max_inline = qp->max_inline;
        fresh.state = hsi::QPS_RESET;
        *qp = fresh;
        invalidate_qp(c.qpn);
        if (m_qp_reset_handler) {
            m_qp_reset_handler(c.qpn);
        }
        return hsi::CMD_OK;
    }
    const bool allowed = (from == hsi::QPS_RESET && to == hsi::QPS_INIT) ||
                         (from == hsi::QPS_INIT && (to == hsi::QPS_INIT || to == hsi::QPS_RTR)) ||
                         (from == hsi::QPS_RTR && (to == hsi::QPS_RTR || to == hsi::QPS_RTS)) ||
                         (from == hsi::QPS_RTS && to == hsi::QPS_RTS);
    if (!allowed) {
        return hsi::CMD_BAD_PARAM;
    }
    if (c.pmtu_log < MIN_PMTU_LOG || c.pmtu_log > MAX_PMTU_LOG ||
        (1u << c.pmtu_log) > m_limits.max_mtu || c.max_rd_atomic > m_limits.max_read_depth ||
        c.dest_qpn > MAX_HANDLE || c.retry_count > 7 || c.rnr_retry > 7 || c.timeout_log > 31) {
        return hsi::CMD_BAD_PARAM;
    }
    qp->pmtu = 1u << c.pmtu_log;
    qp->retry_count = c.retry_count;
    qp->rnr_retry = c.rnr_retry;
    qp->dest_qpn = c.dest_qpn;
    qp->dest_ip = c.dest_ip;
    std::copy(std::begin(c.dest_mac), std::end(c.dest_mac), qp->dest_mac.begin());
    qp->timeout_log = c.timeout_log;
    qp->max_rd_atomic = c.max_rd_atomic;
    // PSNs are taken on entering the state only (a later RTR->RTR or RTS->RTS keeps them).
    if (to == hsi::QPS_RTR && from != hsi::QPS_RTR) {
        qp->expected_psn = c.rq_psn & 0xffffff;
    }
    if (to == hsi::QPS_RTS && from != hsi::QPS_RTS) {
        qp->next_psn = c.sq_psn & 0xffffff;
    }
    qp->state = to;
    invalidate_qp(c.qpn);
    if (to == hsi::QPS_RTS) {
        m_doorbell.kick(c.qpn);  // WQEs posted before RTS start now
    }
    return hsi::CMD_OK;
}

uint8_t cmd_processor::destroy_qp(uint32_t qpn) {
    qp_context* qp = m_contexts.qp_slot(qpn);
    if (qp == nullptr) {
        return hsi::CMD_BAD_PARAM;
    }
    if (!qp->valid) {
        return hsi::CMD_BAD_HANDLE;
    }
    if (pd_context* pd = m_contexts.pd(qp->pdn)) {
        release(pd->refcount);
    }
    if (cq_context* cq = m_contexts.cq(qp->send_cqn)) {
        release(cq->refcount);
    }
    if (cq_context* cq = m_contexts.cq(qp->recv_cqn)) {
        release(cq->refcount);
    }
    if (qp->srqn != 0) {
        if (srq_context* srq = m_contexts.srq(qp->srqn)) {
            release(srq->refcount);
        }
    }
    *qp = qp_context{};
    invalidate_qp(qpn);
    if (m_qp_reset_handler) {
        m_qp_reset_handler(qpn);
    }
    return hsi::CMD_OK;
}

// --- MR / MW ----------------------------------------------------------------------------------

uint8_t cmd_processor::create_mr(const hsi::cmd_create_mr& c) {
    const uint32_t index = hsi::key_index(c.key);
    if (index == 0 || index >= m_contexts.max_keys()) {
        return hsi::CMD_BAD_PARAM;  // index 0 is the privileged key
    }
    mpt_entry* e = m_contexts.mpt_slot(c.key);
    if (e->allocated || (c.access & ~ACCESS_ALL) != 0) {
        return hsi::CMD_BAD_PARAM;
    }
    pd_context* pd = m_contexts.pd(c.pdn);
    if (pd == nullptr) {
        return hsi::CMD_BAD_HANDLE;
    }
    const bool fast_reg = (c.access & hsi::ACCESS_FAST_REG) != 0;
    if (c.page_count > m_limits.max_mtt_pages) {
        return hsi::CMD_BAD_PARAM;
    }
    if (fast_reg) {
        if (c.page_count == 0) {
            return hsi::CMD_BAD_PARAM;  // a fast-reg MR needs a page capacity
        }
    } else {
        // The pages must cover [first_byte_offset, first_byte_offset + length).
        const uint64_t covered = static_cast<uint64_t>(c.page_count) * hsi::PAGE_SIZE;
        if (c.first_byte_offset >= hsi::PAGE_SIZE || c.length > covered ||
            c.first_byte_offset > covered - c.length ||
            (c.page_count > 0 && c.page_list_addr == 0)) {
            return hsi::CMD_BAD_PARAM;
        }
    }
    const uint32_t mtt_base = m_contexts.mtt_alloc(c.page_count);
    if (mtt_base == UINT32_MAX) {
        return hsi::CMD_NO_RESOURCES;
    }
    if (!fast_reg) {
        // Page list into the MTT, max_inline_mtt_fetch pages per DMA read.
        std::vector<uint64_t> chunk;
        for (uint32_t done = 0; done < c.page_count;) {
            const uint32_t n = std::min(m_cfg.max_inline_mtt_fetch, c.page_count - done);
            chunk.resize(n);
            m_dma.read_wait(dma_client::COMMAND, c.page_list_addr + uint64_t{done} * 8,
                            chunk.data(), n * 8);
            for (uint32_t i = 0; i < n; ++i) {
                m_contexts.mtt(mtt_base + done + i) = chunk[i];
            }
            done += n;
            m_stats.mtt_pages_loaded += n;
            ++m_stats.mtt_dma_reads;
        }
    }
    *e = mpt_entry{};
    e->allocated = true;
    e->valid = !fast_reg;  // a fast-reg MR becomes valid with its first FAST_REG WQE
    e->key = c.key;
    e->pdn = c.pdn;
    e->access = c.access;
    e->base_va = c.va;
    e->length = c.length;
    e->first_byte_offset = c.first_byte_offset;
    e->mtt_base = mtt_base;
    e->max_pages = c.page_count;  // MTT extent owned by the key (freed on destroy)
    e->page_count = fast_reg ? 0 : c.page_count;
    invalidate_key(c.key);
    invalidate_mtt(mtt_base, c.page_count);
    ++pd->refcount;
    return hsi::CMD_OK;
}

uint8_t cmd_processor::destroy_mr(uint32_t key) {
    const uint32_t index = hsi::key_index(key);
    if (index == 0 || index >= m_contexts.max_keys()) {
        return hsi::CMD_BAD_PARAM;
    }
    // By index: FAST_REG may have changed the key's variant byte since creation.
    mpt_entry* e = m_contexts.mpt_slot(key);
    if (!e->allocated || e->is_mw) {
        return hsi::CMD_BAD_HANDLE;
    }
    if (e->bind_count > 0) {
        return hsi::CMD_BUSY;
    }
    m_contexts.mtt_free(e->mtt_base, e->max_pages);
    invalidate_mtt(e->mtt_base, e->max_pages);
    invalidate_key(key);
    if (pd_context* pd = m_contexts.pd(e->pdn)) {
        release(pd->refcount);
    }
    *e = mpt_entry{};
    return hsi::CMD_OK;
}

uint8_t cmd_processor::create_mw(const hsi::cmd_object& c) {
    const uint32_t index = hsi::key_index(c.handle);
    if (index == 0 || index >= m_contexts.max_keys()) {
        return hsi::CMD_BAD_PARAM;
    }
    mpt_entry* e = m_contexts.mpt_slot(c.handle);
    if (e->allocated) {
        return hsi::CMD_BAD_PARAM;
    }
    pd_context* pd = m_contexts.pd(c.pdn);
    if (pd == nullptr) {
        return hsi::CMD_BAD_HANDLE;
    }
    *e = mpt_entry{};
    e->allocated = true;
    e->is_mw = true;
    e->valid = false;  // usable once bound (BIND_MW WQE)
    e->key = c.handle;
    e->pdn = c.pdn;
    invalidate_key(c.handle);
    ++pd->refcount;
    return hsi::CMD_OK;
}

uint8_t cmd_processor::destroy_mw(uint32_t key) {
    const uint32_t index = hsi::key_index(key);
    if (index == 0 || index >= m_contexts.max_keys()) {
        return hsi::CMD_BAD_PARAM;
    }
    mpt_entry* e = m_contexts.mpt_slot(key);
    if (!e->allocated || !e->is_mw) {
        return hsi::CMD_BAD_HANDLE;
    }
    if (e->valid) {
        // A bound window goes with its binding.
        mpt_entry* parent = m_contexts.mpt_slot(e->parent_index << 8);
        if (parent != nullptr && parent->allocated && !parent->is_mw) {
            release(parent->bind_count);
            invalidate_key(e->parent_index << 8);
        }
    }
    if (pd_context* pd = m_contexts.pd(e->pdn)) {
        release(pd->refcount);
    }
    *e = mpt_entry{};
    invalidate_key(key);
    return hsi::CMD_OK;
}

// --- SRQ --------------------------------------------------------------------------------------

uint8_t cmd_processor::create_srq(const hsi::cmd_create_srq& c) {
    srq_context* srq = m_contexts.srq_slot(c.srqn);
    if (c.srqn == 0 || srq == nullptr || srq->valid) {
        return hsi::CMD_BAD_PARAM;  // SRQN 0 means "no SRQ" in CREATE_QP
    }
    if (!depth_ok(c.log_depth, m_limits.max_srq_depth) || c.ring_addr == 0 || c.stride < 16 ||
        c.stride % 16 != 0 || c.stride > MAX_STRIDE || c.limit > (1u << c.log_depth)) {
        return hsi::CMD_BAD_PARAM;
    }
    pd_context* pd = m_contexts.pd(c.pdn);
    if (pd == nullptr) {
        return hsi::CMD_BAD_HANDLE;
    }
    *srq = srq_context{};
    srq->valid = true;
    srq->pdn = c.pdn;
    srq->ring_addr = c.ring_addr;
    srq->log_depth = c.log_depth;
    srq->stride = c.stride;
    srq->limit = c.limit;
    ++pd->refcount;
    return hsi::CMD_OK;
}

uint8_t cmd_processor::modify_srq(const hsi::cmd_create_srq& c) {
    srq_context* srq = m_contexts.srq_slot(c.srqn);
    if (c.srqn == 0 || srq == nullptr) {
        return hsi::CMD_BAD_PARAM;
    }
    if (!srq->valid) {
        return hsi::CMD_BAD_HANDLE;
    }
    if (c.limit > (1u << srq->log_depth)) {
        return hsi::CMD_BAD_PARAM;
    }
    srq->limit = c.limit;  // (re-)arms the limit event; the other fields are ignored
    return hsi::CMD_OK;
}

uint8_t cmd_processor::destroy_srq(uint32_t srqn) {
    srq_context* srq = m_contexts.srq_slot(srqn);
    if (srqn == 0 || srq == nullptr) {
        return hsi::CMD_BAD_PARAM;
    }
    if (!srq->valid) {
        return hsi::CMD_BAD_HANDLE;
    }
    if (srq->refcount > 0) {
        return hsi::CMD_BUSY;
    }
    if (pd_context* pd = m_contexts.pd(srq->pdn)) {
        release(pd->refcount);
    }
    *srq = srq_context{};
    return hsi::CMD_OK;
}

}  // namespace rnic::hw
