// SPDX-License-Identifier: Apache-2.0
// CQ writer: CQEs, event-queue entries and MSI-X messages.
#include "hw/cq_writer/cq_writer.h"

#include <algorithm>

namespace rnic::hw {

namespace {
constexpr uint8_t EQE_PHASE = 0x80;  // event_entry.flags bit 7
constexpr uint32_t MAX_EQ_LOG = 24;  // larger REG_EQ_LOG_SIZE values: EQ not usable
constexpr uint32_t MSIX_MASKED = 1;  // vector control bit 0
}  // namespace

cq_writer_config parse_cq_writer_config(config::reader r) {
    cq_writer_config c;
    r.get("latency_cycles", c.latency_cycles, 0u, 1000u);
    r.get("fifo_depth", c.fifo_depth, 1u, 65536u);
    r.finish();
    return c;
}

cq_config parse_cq_config(config::reader r) {
    cq_config c;
    r.get("interrupt_moderation", c.interrupt_moderation);
    r.get("moderation_timers", c.moderation_timers, 0u, 16777216u);
    r.finish();
    return c;
}

cq_writer::cq_writer(sc_core::sc_module_name name, const cq_writer_config& cfg,
                     const clock_domain& clk, context_store& contexts, dma_engine& dma,
                     const bar_registers& regs, sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_contexts(contexts)
    , m_dma(dma)
    , m_regs(regs)
    , m_ctx(ctx)
    , m_requests("requests", cfg.fifo_depth)
    , m_solicited(contexts.max_cqs())
    , m_moderation(contexts.max_cqs()) {
    SC_HAS_PROCESS(cq_writer);
    SC_THREAD(writer_thread);
    SC_METHOD(on_moderation_timer);
    sensitive << m_timer_event;
    dont_initialize();

    const std::string b = this->name();
    auto& s = ctx.stats;
    s.add(b, "cqes", m_stats.cqes, "count", "CQEs written to host memory");
    s.add(b, "error_cqes", m_stats.error_cqes, "count", "CQEs written with a status other than OK");
    s.add(b, "events", m_stats.events, "count", "event-queue entries written");
    s.add(b, "interrupts", m_stats.interrupts, "count", "MSI-X messages sent");
    s.add(b, "overruns", m_stats.overruns, "count", "CQ overruns (CQ put in error)");
    s.add(b, "dropped", m_stats.dropped, "count",
          "CQEs for an invalid or errored CQ (not written)");
    s.add(b, "cq_events", m_stats.cq_events, "count", "armed CQs that fired (EVENT_CQ_COMPLETION)");
    s.add(b, "events_dropped", m_stats.events_dropped, "count",
          "events lost because the EQ is not set up (base 0 or bad size)");
    s.add(b, "eq_overruns", m_stats.eq_overruns, "count", "events lost because the EQ was full");
    s.add(b, "masked_interrupts", m_stats.masked_interrupts, "count",
          "MSI-X messages held pending because the vector was masked");
    s.add(b, "pending_sent", m_stats.pending_sent, "count",
          "pending MSI-X messages sent on unmask");
    s.add(b, "bad_vectors", m_stats.bad_vectors, "count",
          "interrupts for a vector outside the table");
    s.add(b, "cqe_write_errors", m_stats.cqe_write_errors, "count",
          "CQE writes that completed with a PCIe error (CQ put in error)");
    s.add(b, "moderated", m_stats.moderated, "count",
          "completion events held by interrupt moderation");
    s.add(b, "moderation_timeouts", m_stats.moderation_timeouts, "count",
          "held completion events released by the moderation period");
    s.add(
        b, "requests_max", [this] { return nlohmann::json(m_requests.max_occupancy()); }, "count",
        "peak occupancy of the completion request FIFO");
    s.add(
        b, "requests_full_waits", [this] { return nlohmann::json(m_requests.full_waits()); },
        "count", "times a producer stalled on a full completion request FIFO");
    if (ctx.vcd != nullptr) {
        m_requests.trace(ctx.vcd, b);
        sc_core::sc_trace(ctx.vcd, m_events_queued, b + ".events_queued");
        sc_core::sc_trace(ctx.vcd, m_eq_producer, b + ".eq_producer");
        sc_core::sc_trace(ctx.vcd, m_eq_armed, b + ".eq_armed");
        sc_core::sc_trace(ctx.vcd, m_stats.cqes, b + ".cqes");
        sc_core::sc_trace(ctx.vcd, m_stats.interrupts, b + ".interrupts");
    }
}

void cq_writer::post_event(uint8_t type, uint32_t data, uint32_t data2) {
    hsi::event_entry e{};
    e.type = type;
    e.data = data;
    e.data2 = data2;
    m_events.push_back(e);
    m_events_queued = static_cast<uint32_t>(m_events.size());
    m_event_posted.notify(sc_core::SC_ZERO_TIME);
}

void cq_writer::cq_reset(uint32_t cqn) {
    if (cqn < m_solicited.size()) {
        m_solicited[cqn] = solicited_mark{};
        if (m_moderation[cqn].timer) {
            --m_timers_in_use;
        }
        m_moderation[cqn] = moderation_state{};  // a stale deadline entry is ignored
    }
}

void cq_writer::device_fatal() {
    for (uint32_t cqn = 0; cqn < m_moderation.size(); ++cqn) {
        if (cq_context* cq = m_contexts.cq(cqn)) {
            cq->error = true;
            cq->armed = hsi::CQ_ARM_NONE;
        }
        m_moderation[cqn].held = false;
    }
}

void cq_writer::kill_cq(uint32_t cqn, cq_context& cq, uint32_t syndrome) {
    // The CQ is dead from now on; the driver learns it from the event. Its QPs follow it into
    // ERROR (their completions have nowhere to go): IBA's CQ error affiliated to every QP.
    cq.error = true;
    cq.armed = hsi::CQ_ARM_NONE;
    m_moderation[cqn].held = false;
    post_event(hsi::EVENT_CQ_ERROR, cqn, syndrome);
    for (uint32_t qpn = 0; qpn < m_contexts.max_qps(); ++qpn) {
        qp_context* qp = m_contexts.qp(qpn);
        if (qp == nullptr || qp->state == hsi::QPS_ERROR ||
            (qp->send_cqn != cqn && qp->recv_cqn != cqn)) {
            continue;
        }
        qp_error(qpn);
    }
}

void cq_writer::qp_error(uint32_t qpn) {
    if (m_qp_error_handler) {
        m_qp_error_handler(qpn);
    } else if (qp_context* qp = m_contexts.qp(qpn)) {
        qp->state = hsi::QPS_ERROR;
    }
}

uint8_t cq_writer::modify_moderation(uint32_t cqn, uint32_t count, uint32_t period_us) {
    if (!m_cq_cfg.interrupt_moderation) {
        return hsi::CMD_BAD_OPCODE;
    }
    cq_context* slot = m_contexts.cq_slot(cqn);
    if (slot == nullptr) {
        return hsi::CMD_BAD_PARAM;
    }
    cq_context* cq = m_contexts.cq(cqn);
    if (cq == nullptr) {
        return hsi::CMD_BAD_HANDLE;
    }
    moderation_state& m = m_moderation[cqn];
    if (period_us != 0 && !m.timer) {
        if (m_timers_in_use >= m_cq_cfg.moderation_timers) {
            return hsi::CMD_NO_RESOURCES;  // every timer belongs to another CQ
        }
        m.timer = true;
        ++m_timers_in_use;
    } else if (period_us == 0 && m.timer) {
        m.timer = false;
        --m_timers_in_use;
    }
    cq->moderation_count = count;
    cq->moderation_period_us = period_us;
    if (m.held) {
        // The newest settings apply to the event already held ("as soon as possible").
        if (period_us != 0) {
            m.deadline = m.since + sc_core::sc_time(period_us, sc_core::SC_US);
            if (m.deadline > sc_core::sc_time_stamp()) {
                m_deadlines.emplace(m.deadline, cqn);
                m_timer_event.notify(m.deadline - sc_core::sc_time_stamp());
            }
        }
        moderation_check(cqn, *cq);
    }
    return hsi::CMD_OK;
}

void cq_writer::moderation_check(uint32_t cqn, const cq_context& cq) {
    const moderation_state& m = m_moderation[cqn];
    if (!m.held) {
        return;
    }
    const bool off = cq.moderation_count == 0 && cq.moderation_period_us == 0;
    const bool count_due =
        cq.moderation_count != 0 && cq.producer - cq.consumer >= cq.moderation_count;
    const bool period_due = cq.moderation_period_us != 0 && m.deadline <= sc_core::sc_time_stamp();
    if (off || count_due || period_due) {
        release_held(cqn);
    }
}

void cq_writer::release_held(uint32_t cqn) {
    m_moderation[cqn].held = false;
    ++m_stats.cq_events;
    post_event(hsi::EVENT_CQ_COMPLETION, cqn);
}

void cq_writer::on_moderation_timer() {
    // One timer for every CQ: wake at the earliest deadline, release what is due, re-arm.
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    while (!m_deadlines.empty() && m_deadlines.begin()->first <= now) {
        const auto [at, cqn] = *m_deadlines.begin();
        m_deadlines.erase(m_deadlines.begin());
        const moderation_state& m = m_moderation[cqn];
        const cq_context* cq = m_contexts.cq(cqn);
        if (m.held && m.deadline == at && cq != nullptr && !cq->error) {
            ++m_stats.moderation_timeouts;
            release_held(cqn);
        }
    }
    if (!m_deadlines.empty()) {
        m_timer_event.notify(m_deadlines.begin()->first - now);
    }
}

bool cq_writer::solicited_pending(uint32_t cqn, const cq_context& cq) const {
    const solicited_mark& m = m_solicited[cqn];
    return m.valid && static_cast<int32_t>(m.end - cq.consumer) > 0;
}

void cq_writer::fire_cq(uint32_t cqn, cq_context& cq) {
    cq.armed = hsi::CQ_ARM_NONE;
    if (cq.moderation_count == 0 && cq.moderation_period_us == 0) {
        ++m_stats.cq_events;
        post_event(hsi::EVENT_CQ_COMPLETION, cqn);
        return;
    }
    // Moderated: hold the event from this first matching completion.
    moderation_state& m = m_moderation[cqn];
    m.held = true;
    m.since = sc_core::sc_time_stamp();
    ++m_stats.moderated;
    if (cq.moderation_period_us != 0) {
        m.deadline = m.since + sc_core::sc_time(cq.moderation_period_us, sc_core::SC_US);
        m_deadlines.emplace(m.deadline, cqn);
        m_timer_event.notify(m.deadline - m.since);  // an earlier pending deadline stays
    }
    moderation_check(cqn, cq);
}

void cq_writer::cq_doorbell(uint32_t cqn, uint8_t arm, uint32_t consumer) {
    cq_context* cq = m_contexts.cq(cqn);
    if (cq == nullptr) {
        return;
    }
    cq->consumer = consumer;
    if (arm == hsi::CQ_ARM_NONE || cq->error) {
        return;
    }
    // A request combines with an armed state: ANY wins over SOLICITED (arm value 3 = ANY).
    if ((arm & hsi::CQ_ARM_ANY) != 0 || cq->armed == hsi::CQ_ARM_ANY) {
        cq->armed = hsi::CQ_ARM_ANY;
    } else {
        cq->armed = hsi::CQ_ARM_SOLICITED;
    }
    // Arming over unconsumed CQEs that match fires at once (no lost wake-up).
    if (cq->producer != cq->consumer &&
        (cq->armed == hsi::CQ_ARM_ANY || solicited_pending(cqn, *cq))) {
        fire_cq(cqn, *cq);
    }
}

void cq_writer::eq_consumer(uint32_t consumer) {
    m_eq_consumer = consumer;
    m_eq_armed = true;
    if (m_eq_producer != consumer) {
        // Entries the driver has not consumed yet: signal at once.
        m_eq_armed = false;
        m_irq_owed.push_back(hsi::MSIX_VECTOR_ASYNC);
        m_event_posted.notify(sc_core::SC_ZERO_TIME);
    }
}

void cq_writer::msix_control_written(uint32_t vector) {
    if (vector >= hsi::MSIX_VECTORS || !m_msix_pending[vector] ||
        (m_regs.msix[vector].control & MSIX_MASKED) != 0) {
        return;
    }
    m_msix_pending[vector] = false;
    ++m_stats.pending_sent;
    m_irq_owed.push_back(vector);
    m_event_posted.notify(sc_core::SC_ZERO_TIME);
}

void cq_writer::writer_thread() {
    m_wake |= m_requests.written_event();
    m_wake |= m_event_posted;
    for (;;) {
        while (m_requests.empty() && m_events.empty() && m_irq_owed.empty()) {
            sc_core::wait(m_wake);
        }
        if (!m_irq_owed.empty()) {
            const uint32_t v = m_irq_owed.front();
            m_irq_owed.pop_front();
            raise_msix(v);
        } else if (!m_events.empty()) {
            write_events();
        } else {
            write_cqe(m_requests.get());
        }
    }
}

void cq_writer::write_cqe(const completion_request& req) {
    // The slice covers the wait in the request FIFO, formatting and the CQE's DMA write.
    const sc_core::sc_time start = std::min(req.requested, sc_core::sc_time_stamp());
    // +latency_cycles: CQ context read and CQE formatting.
    m_clk.wait_cycles(m_cfg.latency_cycles);
    cq_context* cq = m_contexts.cq(req.cqn);
    if (cq == nullptr || cq->error) {
        ++m_stats.dropped;
        return;
    }
    const uint32_t depth = 1u << cq->log_depth;
    if (cq->producer - cq->consumer >= depth) {
        // No free slot: the CQ is dead from now on; the driver learns it from the event.
        ++m_stats.overruns;
        kill_cq(req.cqn, *cq, hsi::CQ_ERR_OVERRUN);
        return;
    }
    hsi::cqe e = req.entry;
    // Phase 1 on the first pass over the ring, 0 on the second, and so on.
    const bool phase = ((cq->producer >> cq->log_depth) & 1) == 0;
    e.flags =
        static_cast<uint8_t>((e.flags & ~hsi::CQE_FLAG_PHASE) | (phase ? hsi::CQE_FLAG_PHASE : 0));
    const uint64_t addr =
        cq->ring_addr + static_cast<uint64_t>(cq->producer & (depth - 1)) * sizeof(hsi::cqe);
    const bool solicited = (e.flags & hsi::CQE_FLAG_SOLICITED) != 0 || e.status != hsi::CQE_OK;
    ++cq->producer;
    if (solicited) {
        m_solicited[req.cqn] = {true, cq->producer};
    }
    const dma_status st = m_dma.write_wait(dma_client::COMPLETION, addr, &e, sizeof(e), m_dma_done);
    if (st != dma_status::OK) {
        // The ring is not reachable (memory released, IOMMU mapping gone): the CQE is lost and
        // the CQ with it.
        ++m_stats.cqe_write_errors;
        if (cq->valid && !cq->error) {
            kill_cq(req.cqn, *cq, hsi::CQ_ERR_DMA_ACCESS);
        }
        return;
    }
    ++m_stats.cqes;
    if (e.status != hsi::CQE_OK) {
        ++m_stats.error_cqes;
    }
    // The CQ may have been destroyed (or have died) while the write was on its way.
    if (cq->valid && !cq->error) {
        if (m_moderation[req.cqn].held) {
            moderation_check(req.cqn, *cq);  // one more CQE may reach the count
        } else if (cq->armed == hsi::CQ_ARM_ANY ||
                   (cq->armed == hsi::CQ_ARM_SOLICITED && solicited)) {
            fire_cq(req.cqn, *cq);
        }
    }
    if (m_ctx.tracer != nullptr) {
        m_ctx.tracer->slice(name(), "cqe", req.flow_id, start, sc_core::sc_time_stamp());
    }
}

void cq_writer::write_events() {
    // +latency_cycles: EQ pointer read and entry formatting, once per batch.
    m_clk.wait_cycles(m_cfg.latency_cycles);
    std::vector<uint32_t> vectors;  // to signal after the batch, first-seen order
    while (!m_events.empty()) {
        hsi::event_entry e = m_events.front();
        m_events.pop_front();
        m_events_queued = static_cast<uint32_t>(m_events.size());
        const uint64_t base = m_regs.eq_base;
        const uint32_t log = m_regs.eq_log_size;
        if (base == 0 || log > MAX_EQ_LOG) {
            ++m_stats.events_dropped;
            continue;
        }
        const uint32_t depth = 1u << log;
        if (m_eq_producer - m_eq_consumer >= depth) {
            ++m_stats.eq_overruns;
            continue;
        }
        e.flags = ((m_eq_producer >> log) & 1) == 0 ? EQE_PHASE : 0;
        const uint64_t addr =
            base + static_cast<uint64_t>(m_eq_producer & (depth - 1)) * sizeof(hsi::event_entry);
        ++m_eq_producer;
        m_dma.write_wait(dma_client::COMPLETION, addr, &e, sizeof(e), m_dma_done);
        ++m_stats.events;
        uint32_t vector = hsi::MSIX_VECTOR_ASYNC;
        if (e.type == hsi::EVENT_CQ_COMPLETION) {
            if (const cq_context* cq = m_contexts.cq(e.data)) {
                vector = cq->msix_vector;
            }
        }
        if (std::find(vectors.begin(), vectors.end(), vector) == vectors.end()) {
            vectors.push_back(vector);
        }
    }
    // One message per vector touched, then the EQ stays quiet until the driver re-arms it.
    if (m_eq_armed && !vectors.empty()) {
        m_eq_armed = false;
        for (uint32_t v : vectors) {
            raise_msix(v);
        }
    }
}

void cq_writer::raise_msix(uint32_t vector) {
    if (vector >= hsi::MSIX_VECTORS) {
        ++m_stats.bad_vectors;
        return;
    }
    const auto& entry = m_regs.msix[vector];
    if ((entry.control & MSIX_MASKED) != 0) {
        m_msix_pending[vector] = true;
        ++m_stats.masked_interrupts;
        return;
    }
    const uint32_t data = entry.data;
    m_dma.write_wait(dma_client::INTERRUPT, entry.addr, &data, sizeof(data), m_dma_done);
    ++m_stats.interrupts;
}

}  // namespace rnic::hw
