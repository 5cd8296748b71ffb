// SPDX-License-Identifier: Apache-2.0
// Transmit engine: requester, transmit scheduler, in-order retirement.
#include "hw/tx_engine/tx_engine.h"

#include <algorithm>
#include <cstring>

#include "hw/common/short_wait.h"
#include "hw/hsi/hsi.h"
#include "hw/roce/protocol.h"
#include "hw/send_path/send_path_packets.h"

namespace rnic::hw {

namespace {
using roce::packets_of;
using roce::psn_in;
using roce::psn_le;
using roce::PSN_MASK;

uint64_t now_ps() {
    return static_cast<uint64_t>(sc_core::sc_time_stamp().value() /
                                 sc_core::sc_time(1, sc_core::SC_PS).value());
}

uint8_t cqe_opcode_of(uint8_t wqe_opcode) {
    switch (wqe_opcode) {
        case hsi::WQE_SEND:
        case hsi::WQE_SEND_IMM:
        case hsi::WQE_SEND_INV:
            return hsi::CQE_SEND;
        case hsi::WQE_WRITE:
        case hsi::WQE_WRITE_IMM:
            return hsi::CQE_WRITE;
        case hsi::WQE_READ:
            return hsi::CQE_READ;
        case hsi::WQE_FAST_REG:
            return hsi::CQE_FAST_REG;
        case hsi::WQE_BIND_MW:
            return hsi::CQE_BIND_MW;
        case hsi::WQE_LOCAL_INV:
            return hsi::CQE_LOCAL_INV;
        default:
            return hsi::CQE_SEND;
    }
}
}  // namespace

tx_engine_config parse_tx_engine_config(config::reader r) {
    tx_engine_config c;
    r.get("wqe_cycles", c.wqe_cycles, 0u, 1000u);
    r.get("job_fifo_depth", c.job_fifo_depth, 1u, 4096u);
    r.get("response_fifo_depth", c.response_fifo_depth, 1u, 4096u);
    r.get("max_outstanding", c.max_outstanding, 1u, 65536u);
    r.get("cut_through", c.cut_through);
    config::reader sr = r.child("scheduler");
    sr.get("policy", c.scheduler.policy);
    std::string names;
    bool known = false;
    for (const tx_scheduler_registration& p : tx_schedulers()) {
        names += std::string(names.empty() ? "\"" : ", \"") + p.name + "\"";
        known = known || c.scheduler.policy == p.name;
    }
    if (!known) {
        sr.error("policy", "\"" + c.scheduler.policy + "\" is not one of " + names);
    }
    sr.get("burst_packets", c.scheduler.burst_packets, 1u, 4096u);
    sr.get("arbitration_cycles", c.scheduler.arbitration_cycles, 0u, 1000u);
    sr.finish();
    r.finish();
    return c;
}

tx_engine::tx_engine(sc_core::sc_module_name name, const tx_engine_config& cfg,
                     const clock_domain& clk, const nic_identity& id, context_store& contexts,
                     translation& xlate, dma_engine& dma, channel<wqe_item>& wqes,
                     send_path_if& send_path, cq_writer& cqw, sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_id(id)
    , m_contexts(contexts)
    , m_xlate(xlate)
    , m_dma(dma)
    , m_wqes(wqes)
    , m_send_path(send_path)
    , m_cq_writer(cqw)
    , m_ctx(ctx)
    , m_requests("requests", cfg.job_fifo_depth)
    , m_responses("responses", cfg.response_fifo_depth) {
    SC_HAS_PROCESS(tx_engine);
    SC_THREAD(requester_thread);
    m_sched = make_tx_scheduler(m_cfg, *this);
    SC_THREAD(transmit_thread);
    SC_THREAD(timer_thread);
    auto& s = ctx.stats;
    const std::string b = this->name();
    s.add(b, "wqes", m_stats.wqes, "count", "WQEs processed");
    s.add(b, "messages", m_stats.messages, "count", "request messages handed to the send path");
    s.add(b, "payload_bytes", m_stats.payload_bytes, "bytes", "payload bytes fetched by DMA");
    s.add(b, "inline_bytes", m_stats.inline_bytes, "bytes", "payload bytes carried in WQEs");
    if (m_cfg.cut_through) {
        s.add(b, "payload_read_parts", m_stats.payload_read_parts, "count",
              "payload read requests streamed to the send path as each came in (cut_through)");
    }
    s.add(b, "responses", m_stats.responses, "count", "READ responses sent");
    s.add(b, "acks_sent", m_stats.acks_sent, "count", "ACK/NAK packets sent");
    s.add(b, "completions", m_stats.completions, "count", "send-queue CQEs requested");
    s.add(b, "error_completions", m_stats.error_completions, "count", "send-queue error CQEs");
    s.add(b, "flushed", m_stats.flushed, "count", "WQEs completed with flush error");
    s.add(b, "local_ops", m_stats.local_ops, "count", "FAST_REG / BIND / LOCAL_INV executed");
    s.add(b, "fence_waits", m_stats.fence_waits, "count", "WQEs held by a read fence");
    s.add(b, "read_limit_waits", m_stats.read_limit_waits, "count", "READs held by the ORD limit");
    s.add(b, "timeouts", m_stats.timeouts, "count", "retransmission timer expiries");
    s.add(b, "retransmits", m_stats.retransmits, "count", "messages retransmitted (go-back-N)");
    s.add(b, "nak_sequence", m_stats.nak_sequence, "count", "PSN sequence error NAKs acted on");
    s.add(b, "superseded_resends", m_stats.superseded_resends, "count",
          "queued go-back-N resends replaced by a newer one from an earlier PSN (not sent)");
    s.add(b, "stale_naks", m_stats.stale_naks, "count",
          "sequence NAKs for a PSN already acknowledged (late or duplicated on the wire): ignored");
    s.add(b, "recovery_nak_episodes", m_recovery.nak_episodes, "count",
          "loss recovery episodes started by a sequence NAK (or a READ response gap)");
    s.add(b, "recovery_timeout_episodes", m_recovery.timeout_episodes, "count",
          "loss recovery episodes started by a timer expiry (no NAK to act on)");
    s.add(b, "recovered_by_nak", m_recovery.recovered_by_nak, "count",
          "episodes repaired by the resends of their NAK, no timer expiry");
    s.add(b, "recovered_by_timeout", m_recovery.recovered_by_timeout, "count",
          "episodes repaired only after the retransmission timer fired");
    s.add(b, "recovery_failed", m_recovery.recovery_failed, "count",
          "episodes cut short by the QP leaving RTS (retries exhausted, error, reset)");
    s.add(b, "retransmitted_packets", m_recovery.retransmitted_packets, "count",
          "request packets sent again (go-back-N resends, re-issued READs)");
    s.add(b, "retransmitted_bytes", m_recovery.retransmitted_bytes, "bytes",
          "payload bytes of the request packets sent again");
    s.add(
        b, "recovery_by_qp",
        [this] {
            nlohmann::json j = nlohmann::json::object();
            for (const auto& [qpn, r] : m_recovery_by_qp) {
                j[std::to_string(qpn)] = {{"nak_episodes", r.nak_episodes},
                                          {"timeout_episodes", r.timeout_episodes},
                                          {"recovered_by_nak", r.recovered_by_nak},
                                          {"recovered_by_timeout", r.recovered_by_timeout},
                                          {"recovery_failed", r.recovery_failed},
                                          {"timeouts", r.timeouts},
                                          {"retransmitted_packets", r.retransmitted_packets},
                                          {"retransmitted_bytes", r.retransmitted_bytes}};
            }
            return j;
        },
        "object", "the recovery counters above per QP number, for the QPs that recovered a loss");
    s.add(b, "rnr_naks", m_stats.rnr_naks, "count", "RNR NAKs received");
    s.add(b, "retry_exceeded", m_stats.retry_exceeded, "count", "QPs failed: retries exhausted");
    s.add(b, "read_reissues", m_stats.read_reissues, "count",
          "READs re-issued from a missing response PSN");
    s.add(b, "dropped_in_error", m_stats.dropped_in_error, "count",
          "queued requests and READ responses of a QP in error, not sent");
    s.add(b, "source_key_faults", m_stats.source_key_faults, "count",
          "payload source keys (gather lkey, READ source rkey) that failed a per-packet check");
    s.add(b, "stomped_packets", m_stomp.stomped, "count",
          "packets sent stomped (bad CRC) after a source key fault: their payload was not read");
    s.add(b, "reset_discarded", m_stats.reset_discarded, "count",
          "WQEs of a QP reset or destroyed before they completed (no completion)");
    s.add(b, "dropped_stale", m_stats.dropped_stale, "count",
          "queued jobs of a QP reset or destroyed since, not sent");
    for (const tx_sched_counter& c : m_sched->counters()) {
        s.add(b, c.name, *c.value, c.unit, c.description);
    }
    if (selective()) {
        s.add(b, "selective_naks", m_stats.selective_naks, "count",
              "selective NAKs acted on: the one packet at their PSN resent");
        s.add(b, "tail_resends", m_stats.tail_resends, "count",
              "packets resent because the ACK of a selective resend stopped short of them");
    }
    if (ctx.vcd != nullptr) {
        m_requests.trace(ctx.vcd, b);
        m_responses.trace(ctx.vcd, b);
        sc_core::sc_trace(ctx.vcd, m_stats.wqes, b + ".wqes");
        sc_core::sc_trace(ctx.vcd, m_stats.messages, b + ".messages");
        sc_core::sc_trace(ctx.vcd, m_stats.completions, b + ".completions");
        sc_core::sc_trace(ctx.vcd, m_stats.acks_sent, b + ".acks_sent");
        sc_core::sc_trace(ctx.vcd, m_stats.timeouts, b + ".timeouts");
        sc_core::sc_trace(ctx.vcd, m_stats.retransmits, b + ".retransmits");
    }
}

void tx_engine::set_pacer(pacer* p) {
    m_pacer = p;
    if (p != nullptr) {
        for (const tx_sched_counter& c : m_sched->paced_counters()) {
            m_ctx.stats.add(this->name(), c.name, *c.value, c.unit, c.description);
        }
    }
}

void tx_engine::push_resend(tx_job&& j) {
    j.queued_ps = now_ps();
    m_retransmits.push_back(std::move(j));
}

uint64_t tx_engine::try_pace(const tx_job& job, uint32_t index, uint64_t& held_cycles) {
    return m_pacer->try_pace(job.desc, index, job.queued_ps, now_ps(), held_cycles);
}

void tx_engine::post_response(tx_job&& job) {
    job.generation = generation_of(job.desc.src_qpn);
    job.queued_ps = now_ps();
    m_responses.put(std::move(job));
}

uint32_t tx_engine::generation_of(uint32_t qpn) const {
    const auto it = m_qps.find(qpn);
    return it == m_qps.end() ? 0 : it->second.generation;
}

void tx_engine::reset_qp(uint32_t qpn) {
    qp_state& st = m_qps[qpn];
    if (st.deadline != sc_core::SC_ZERO_TIME) {
        m_timers.erase({st.deadline, qpn});
    }
    if (st.rc.episode_open()) {
        end_episode(qpn, st, true);
    }
    // Requests sent and not retired yet: gone with the queue, no completion (IBA 10.3.1).
    for (const auto& o : st.queue) {
        m_stats.reset_discarded += o.done ? 0 : 1;
    }
    const uint32_t generation = st.generation + 1;
    // In place: a WQE waiting in process_wqe holds a reference and sees the new generation.
    st = qp_state{};
    st.generation = generation;
    st.was_reset = true;
    st.reset_at = sc_core::sc_time_stamp();
    timers_changed();
    m_progress.notify(sc_core::SC_ZERO_TIME);
}

tx_descriptor tx_engine::base_descriptor(const qp_context& qp, uint32_t qpn) const {
    tx_descriptor d;
    d.src_qpn = qpn;
    d.dest_qpn = qp.dest_qpn;
    d.pmtu = qp.pmtu;
    d.src_mac = m_id.mac;
    d.dst_mac = qp.dest_mac;
    d.src_ip = m_id.ip;
    d.dst_ip = qp.dest_ip;
    return d;
}

void tx_engine::requester_thread() {
    for (;;) {
        wqe_item w = m_wqes.get();
        m_clk.wait_cycles(m_cfg.wqe_cycles);
        ++m_stats.wqes;
        process_wqe(w);
    }
}

void tx_engine::process_wqe(wqe_item& w) {
    if (m_cache != nullptr) {
        m_cache->access(ctx_kind::QPC, w.qpn, true, cache_port::TX_ENGINE);  // PSN, counters
    }
    qp_context* qp = m_contexts.qp(w.qpn);
    if (qp == nullptr) {
        return;  // QP destroyed under its WQEs: nothing to complete to
    }
    qp_state& st = m_qps[w.qpn];
    if (st.was_reset && w.doorbell_time <= st.reset_at) {
        // Fetched before the QP was reset or destroyed: a WQE of the old incarnation, removed
        // with its queue (no completion), never run against the new QP.
        ++m_stats.reset_discarded;
        return;
    }
    const uint32_t generation = st.generation;
    // The QP was reset or destroyed while this WQE waited (for a slot, a fence, the read limit
    // or its translation): it is dropped like the rest of its queue.
    auto reset_meanwhile = [&] {
        if (st.generation == generation) {
            return false;
        }
        ++m_stats.reset_discarded;
        return true;
    };
    while (st.queue.size() >= m_cfg.max_outstanding) {
        sc_core::wait(m_progress);
    }
    if (reset_meanwhile()) {
        return;
    }
    qp = m_contexts.qp(w.qpn);  // the QP may have changed while this WQE waited
    if (qp == nullptr) {
        return;
    }
    outstanding o;
    o.wqe_index = w.ctrl.wqe_index;
    o.cqe_opcode = cqe_opcode_of(w.ctrl.opcode);
    o.signaled = (w.ctrl.flags & hsi::WQE_FLAG_SIGNALED) != 0;
    o.flow_id = w.flow_id;

    auto finish_now = [&](uint8_t status) {
        o.done = true;
        o.status = status;
        st.queue.push_back(std::move(o));
        retire(w.qpn);
    };
    if (qp->state == hsi::QPS_ERROR) {
        ++m_stats.flushed;
        finish_now(hsi::CQE_WR_FLUSH_ERR);
        return;
    }
    if (w.malformed || qp->state != hsi::QPS_RTS) {
        finish_now(hsi::CQE_LOCAL_QP_OP_ERR);
        fail_qp(w.qpn);
        return;
    }
    if (w.ctrl.flags & hsi::WQE_FLAG_FENCE) {
        if (st.reads_in_flight > 0) {
            ++m_stats.fence_waits;
        }
        while (st.reads_in_flight > 0 && !in_error(w.qpn)) {
            sc_core::wait(m_progress);
        }
        if (reset_meanwhile()) {
            return;
        }
        if (in_error(w.qpn)) {
            ++m_stats.flushed;
            finish_now(hsi::CQE_WR_FLUSH_ERR);
            return;
        }
    }
    const uint8_t op = w.ctrl.opcode;
    if (op == hsi::WQE_FAST_REG || op == hsi::WQE_BIND_MW || op == hsi::WQE_LOCAL_INV ||
        op == hsi::WQE_NOP) {
        execute_local(w, o);
        const uint8_t status = o.status;
        finish_now(status);
        if (status != hsi::CQE_OK) {
            fail_qp(w.qpn);
        }
        return;
    }

    // Local buffers: translate every SGE (READ: they are written, so need local write).
    const bool is_read = op == hsi::WQE_READ;
    tx_job job;
    job.generation = generation;
    job.src_pdn = qp->pdn;
    uint64_t length = 0;
    if (!is_read && (w.ctrl.flags & hsi::WQE_FLAG_INLINE)) {
        job.inline_data = std::move(w.inline_data);
        length = job.inline_data.size();
    } else {
        const sc_core::sc_time xlate_start = sc_core::sc_time_stamp();
        // MPT/MTT lines the lookups missed in the context cache (timeline: hit or miss).
        auto xlate_misses = [this] {
            return m_cache == nullptr ? uint64_t{0}
                                      : m_cache->get_stats(ctx_kind::MPT).misses +
                                            m_cache->get_stats(ctx_kind::MTT).misses;
        };
        const uint64_t misses_before = xlate_misses();
        for (const auto& sge : w.sges) {
            const xlate_status xs =
                m_xlate.translate(sge.lkey, qp->pdn, sge.addr, sge.length,
                                  is_read ? XLATE_LOCAL_WRITE : XLATE_LOCAL_READ, false,
                                  is_read ? o.read_segments : job.segments);
            if (xs != xlate_status::OK) {
                finish_now(hsi::CQE_LOCAL_PROT_ERR);
                fail_qp(w.qpn);
                return;
            }
            (is_read ? o.read_keys : job.src_keys).push_back(sge.lkey);
            length += sge.length;
        }
        if (m_ctx.tracer != nullptr && !w.sges.empty()) {
            const uint64_t misses = xlate_misses() - misses_before;
            m_ctx.tracer->slice(
                name(), "translation", w.flow_id, xlate_start, sc_core::sc_time_stamp(),
                misses == 0 ? std::string("\"cache\":\"hit\"")
                            : "\"cache\":\"miss\",\"misses\":" + std::to_string(misses));
        }
    }
    if (length > 0x7FFFFFFF) {
        finish_now(hsi::CQE_LOCAL_LENGTH_ERR);
        fail_qp(w.qpn);
        return;
    }
    if (is_read) {
        if (st.reads_in_flight >= qp->max_rd_atomic) {
            ++m_stats.read_limit_waits;
        }
        while (st.reads_in_flight >= std::max<uint32_t>(1, qp->max_rd_atomic) && !in_error(w.qpn)) {
            sc_core::wait(m_progress);
        }
    }
    if (reset_meanwhile()) {
        return;
    }
    qp = m_contexts.qp(w.qpn);
    if (in_error(w.qpn)) {
        // The QP failed (or was flushed) while this WQE waited for a slot, a fence or the
        // translation: it is flushed, never sent.
        ++m_stats.flushed;
        finish_now(hsi::CQE_WR_FLUSH_ERR);
        return;
    }

    tx_descriptor& d = job.desc;
    d = base_descriptor(*qp, w.qpn);
    d.length = static_cast<uint32_t>(length);
    d.flow_id = w.flow_id;
    d.solicited = (w.ctrl.flags & hsi::WQE_FLAG_SOLICITED) != 0;
    d.imm_or_key = w.ctrl.imm_or_key;
    switch (op) {
        case hsi::WQE_SEND:
            d.kind = tx_kind::SEND;
            break;
        case hsi::WQE_SEND_IMM:
            d.kind = tx_kind::SEND;
            d.with_imm = true;
            break;
        case hsi::WQE_SEND_INV:
            d.kind = tx_kind::SEND;
            d.with_inv = true;
            break;
        case hsi::WQE_WRITE:
            d.kind = tx_kind::WRITE;
            break;
        case hsi::WQE_WRITE_IMM:
            d.kind = tx_kind::WRITE;
            d.with_imm = true;
            break;
        case hsi::WQE_READ:
            d.kind = tx_kind::READ_REQUEST;
            break;
        default:
            break;
    }
    d.remote_va = w.ctrl.remote_va;
    d.rkey = w.ctrl.rkey;
    d.telemetry = m_telemetry && (d.kind == tx_kind::SEND || d.kind == tx_kind::WRITE);
    const uint32_t npk = packets_of(d.length, qp->pmtu);
    d.psn = qp->next_psn;
    qp->next_psn = (qp->next_psn + npk) & PSN_MASK;
    st.rc.on_request(d.psn);
    o.on_wire = true;
    o.first_psn = d.psn;
    o.last_psn = (d.psn + npk - 1) & PSN_MASK;
    o.resp.first_psn = d.psn;
    o.resp.packets = npk;
    o.resp.next = d.psn;
    o.length = d.length;
    o.is_read = is_read;
    if (is_read) {
        ++st.reads_in_flight;
        ++qp->outstanding_reads;
    }
    o.job = job;
    // Nothing outstanding (the timer is stopped then): fresh budgets.
    if (st.deadline == sc_core::SC_ZERO_TIME &&
        std::none_of(st.queue.begin(), st.queue.end(),
                     [](const outstanding& e) { return !e.done; })) {
        st.rc.refill_retries(qp->retry_count);
        st.rc.refill_rnr(qp->rnr_retry);
    }
    st.queue.push_back(std::move(o));
    // The retransmission timer starts when the message's last packet (AckReq) is handed to the
    // send path (request_sent), not now: the job may wait behind other QPs' messages, and a
    // long message's own transmission must not count against the local ACK timeout.
    ++m_stats.messages;
    job.queued_ps = now_ps();
    m_requests.put(std::move(job));
}

void tx_engine::execute_local(wqe_item& w, outstanding& o) {
    ++m_stats.local_ops;
    o.status = hsi::CQE_OK;
    qp_context* qp = m_contexts.qp(w.qpn);
    switch (w.ctrl.opcode) {
        case hsi::WQE_NOP:
            break;
        case hsi::WQE_LOCAL_INV: {
            mpt_entry* e = m_contexts.mpt(w.ctrl.imm_or_key);
            if (e == nullptr || e->pdn != qp->pdn ||
                (!e->is_mw && !(e->access & hsi::ACCESS_FAST_REG))) {
                o.status = hsi::CQE_LOCAL_PROT_ERR;
            } else {
                if (e->is_mw && e->valid) {
                    if (mpt_entry* mr = m_contexts.mpt_slot(e->parent_index << 8)) {
                        mr->bind_count -= mr->bind_count > 0 ? 1 : 0;
                    }
                }
                e->valid = false;
            }
            break;
        }
        case hsi::WQE_FAST_REG: {
            hsi::fast_reg_segment f{};
            std::memcpy(&f, w.segment.data(), sizeof(f));
            mpt_entry* e = m_contexts.mpt_slot(f.key);
            const bool remote =
                (f.access & (hsi::ACCESS_REMOTE_READ | hsi::ACCESS_REMOTE_WRITE)) != 0;
            if (e == nullptr || !e->allocated || e->is_mw || !(e->access & hsi::ACCESS_FAST_REG) ||
                e->valid || e->pdn != qp->pdn || f.page_count > e->max_pages ||
                (remote && !(e->access & hsi::ACCESS_REMOTE_ACCESS_OK)) ||
                f.first_byte_offset >= hsi::PAGE_SIZE ||
                f.length + f.first_byte_offset >
                    static_cast<uint64_t>(f.page_count) * hsi::PAGE_SIZE) {
                o.status = hsi::CQE_LOCAL_PROT_ERR;
                break;
            }
            std::vector<uint64_t> pages(f.page_count);
            if (f.page_count > 0) {
                m_dma.read_wait(dma_client::WQE_FETCH, f.page_list_addr, pages.data(),
                                f.page_count * 8);
            }
            for (uint32_t i = 0; i < f.page_count; ++i) {
                m_contexts.mtt(e->mtt_base + i) = pages[i];
            }
            e->key = f.key;
            e->base_va = f.base_va;
            e->length = f.length;
            e->first_byte_offset = f.first_byte_offset;
            e->page_count = f.page_count;
            e->access = (e->access & (hsi::ACCESS_FAST_REG | hsi::ACCESS_REMOTE_ACCESS_OK)) |
                        (f.access & (hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_READ |
                                     hsi::ACCESS_REMOTE_WRITE | hsi::ACCESS_MW_BIND));
            e->valid = true;
            break;
        }
        case hsi::WQE_BIND_MW: {
            hsi::bind_segment b{};
            std::memcpy(&b, w.segment.data(), sizeof(b));
            mpt_entry* mw = m_contexts.mpt_slot(b.mw_key);
            mpt_entry* mr = m_contexts.mpt(b.mr_key);
            const bool remote_write = (b.access & hsi::ACCESS_REMOTE_WRITE) != 0;
            if (mw == nullptr || !mw->allocated || !mw->is_mw || mw->pdn != qp->pdn ||
                mr == nullptr || !mr->valid || mr->is_mw || mr->pdn != qp->pdn ||
                b.va < mr->base_va || b.length > mr->length ||
                b.va - mr->base_va > mr->length - b.length ||
                (remote_write && !(mr->access & hsi::ACCESS_LOCAL_WRITE))) {
                o.status = hsi::CQE_MW_BIND_ERR;
                break;
            }
            if (mw->valid) {
                if (mpt_entry* old = m_contexts.mpt_slot(mw->parent_index << 8)) {
                    old->bind_count -= old->bind_count > 0 ? 1 : 0;
                }
            }
            mw->key = b.mw_key;
            mw->parent_index = hsi::key_index(b.mr_key);
            mw->base_va = b.va;
            mw->length = b.length;
            mw->access = b.access & (hsi::ACCESS_REMOTE_READ | hsi::ACCESS_REMOTE_WRITE);
            mw->valid = true;
            ++mr->bind_count;
            break;
        }
        default:
            o.status = hsi::CQE_LOCAL_QP_OP_ERR;
            break;
    }
}

void tx_engine::push_cqe(uint32_t qpn, const outstanding& o) {
    const qp_context* qp = m_contexts.qp_slot(qpn);
    completion_request r;
    r.cqn = qp->send_cqn;
    r.entry.qpn = qpn;
    r.entry.wqe_index = o.wqe_index;
    r.entry.opcode = o.cqe_opcode;
    r.entry.status = o.status;
    r.entry.byte_len = o.length;
    r.flow_id = o.flow_id;
    ++m_stats.completions;
    if (o.status != hsi::CQE_OK) {
        ++m_stats.error_completions;
    }
    m_cq_writer.requests().put(r);
}

void tx_engine::retire(uint32_t qpn) {
    qp_state& st = m_qps[qpn];
    bool any = false;
    while (!st.queue.empty() && st.queue.front().done) {
        outstanding o = std::move(st.queue.front());
        st.queue.pop_front();
        if (o.signaled || o.status != hsi::CQE_OK) {
            push_cqe(qpn, o);
        }
        any = true;
    }
    if (any) {
        m_progress.notify(sc_core::SC_ZERO_TIME);
    }
}

bool tx_engine::in_error(uint32_t qpn) const {
    const qp_context* qp = m_contexts.qp(qpn);
    return qp == nullptr || qp->state == hsi::QPS_ERROR;
}

void tx_engine::read_finished(uint32_t qpn, qp_state& st) {
    // Both counts of READs in flight (the engine's and the QP context's) drop on every path a
    // READ leaves the wire: done, NAKed, faulted or flushed.
    if (st.reads_in_flight > 0) {
        --st.reads_in_flight;
    }
    if (qp_context* qp = m_contexts.qp_slot(qpn)) {
        qp->outstanding_reads -= qp->outstanding_reads > 0 ? 1 : 0;
    }
}

void tx_engine::flush_outstanding(uint32_t qpn) {
    qp_state& st = m_qps[qpn];
    for (auto& o : st.queue) {
        if (!o.done) {
            o.done = true;
            o.status = hsi::CQE_WR_FLUSH_ERR;
            ++m_stats.flushed;
            if (o.is_read) {
                read_finished(qpn, st);
            }
        }
    }
    st.rc.end_rnr_wait();
    if (st.rc.episode_open()) {
        end_episode(qpn, st, true);
    }
    arm_timer(qpn, st, sc_core::SC_ZERO_TIME);
    // Queued go-back-N resends are skipped by the transmit thread (the QP is in error).
    m_progress.notify(sc_core::SC_ZERO_TIME);
    retire(qpn);
}

void tx_engine::fail_qp(uint32_t qpn) {
    qp_context* qp = m_contexts.qp_slot(qpn);
    if (qp == nullptr || qp->state == hsi::QPS_ERROR) {
        return;
    }
    qp->state = hsi::QPS_ERROR;
    m_cq_writer.post_event(hsi::EVENT_QP_ERROR, qpn);
    flush_outstanding(qpn);
    if (m_error_listener) {
        m_error_listener(qpn);
    }
}

void tx_engine::qp_error(uint32_t qpn) {
    fail_qp(qpn);
}

void tx_engine::flush_qp(uint32_t qpn) {
    qp_context* qp = m_contexts.qp_slot(qpn);
    if (qp == nullptr) {
        return;
    }
    // Software moved the QP to ERROR: no async event (IBA 11.6.3 affiliated errors are for
    // transitions the hardware makes), but the same flush of both queues.
    qp->state = hsi::QPS_ERROR;
    flush_outstanding(qpn);
    if (m_error_listener) {
        m_error_listener(qpn);
    }
}

void tx_engine::on_ack(uint32_t qpn, uint32_t psn, bool from_wire) {
    if (m_ack_observer) {
        m_ack_observer(qpn, psn, false);  // congestion control: RTT sample
    }
    auto it = m_qps.find(qpn);
    if (it == m_qps.end()) {
        return;
    }
    // Progress: the ACK covers a PSN not acknowledged before (a message completed, or part of
    // one: a NAK acknowledges the packets before its PSN).
    bool progress = acknowledge_through(qpn, it->second, psn);
    if (m_sched->applies_windows()) {
        // Congestion window: the acknowledged bytes leave the QP's in-flight count, for the
        // scheduler from the next clock edge on (window_in_flight): it looks again then.
        qp_state& q = it->second;
        const uint64_t before = q.rc.in_flight();
        if (q.rc.window_acked()) {
            q.window_acked.add(before - q.rc.in_flight());
            const sc_core::sc_time now = sc_core::sc_time_stamp();
            m_sched_wake.notify(m_clk.edge_at_or_after(now + sc_core::sc_time::from_value(1)) -
                                now);
        }
    }
    for (auto& o : it->second.queue) {
        if (!psn_le(o.last_psn, psn)) {
            break;
        }
        if (!o.is_read && !o.done) {
            o.done = true;
            o.status = hsi::CQE_OK;
            progress = true;
            if (m_ctx.tracer != nullptr) {
                m_ctx.tracer->slice(name(), "ack", o.flow_id, sc_core::sc_time_stamp(),
                                    sc_core::sc_time_stamp() + m_clk.period());
            }
        }
    }
    if (progress) {
        restart_timer(qpn, it->second);
    }
    qp_state& st = it->second;
    uint32_t from = 0;
    uint32_t to = 0;
    if (from_wire && st.rc.lost_tail(psn, &from, &to)) {
        // Selective repeat, tail loss: this ACK answers the last selective resend, which went
        // out after every PSN up to `to`, and stops short of it: the packets after `psn` never
        // came (lost at the tail, where no later packet reveals the gap). They go again now,
        // not after the retransmission timer.
        resend_range(st, from, to);
    }
    retire(qpn);
}

void tx_engine::resend_range(qp_state& st, uint32_t from, uint32_t to) {
    for (auto& o : st.queue) {
        if (o.done || !o.on_wire || o.is_read || !psn_le(from, o.last_psn) ||
            !psn_le(o.first_psn, to)) {
            continue;  // READs are repaired by their responses' gaps and the timer
        }
        const uint32_t k0 = psn_le(from, o.first_psn) ? 0 : (from - o.first_psn) & PSN_MASK;
        const uint32_t k1 = psn_le(o.last_psn, to) ? (o.last_psn - o.first_psn) & PSN_MASK
                                                   : (to - o.first_psn) & PSN_MASK;
        tx_job j = slice_job(o, k0, k1);
        j.selective = true;
        m_stats.tail_resends += k1 - k0 + 1;
        push_resend(std::move(j));
        ++m_stats.retransmits;
    }
    m_retransmit_event.notify(sc_core::SC_ZERO_TIME);
}

sc_core::sc_time tx_engine::timeout_of(const qp_context& qp) const {
    // IBA local ACK timeout: 4.096 us x 2^timeout_log.
    return sc_core::sc_time(
        4.096 * static_cast<double>(1ull << std::min<uint8_t>(qp.timeout_log, 31)), sc_core::SC_US);
}

void tx_engine::arm_timer(uint32_t qpn, qp_state& st, const sc_core::sc_time& deadline) {
    if (st.deadline != sc_core::SC_ZERO_TIME) {
        m_timers.erase({st.deadline, qpn});
    }
    st.deadline = deadline;
    if (deadline != sc_core::SC_ZERO_TIME) {
        m_timers.insert({deadline, qpn});
    }
    timers_changed();
}

void tx_engine::timers_changed() {
    // The timer thread wakes by itself at m_timer_wake: it needs waking only for an earlier
    // deadline. A deadline that moved later or went away is found at that wake (and slept
    // over): one pending timeout per engine, not one dead one per re-arm left in the kernel's
    // event queue (a 67 ms ACK timeout re-armed per message made that queue thousands deep).
    // With no deadline left, a sleeping thread is woken once too, to wait untimed: a pending
    // wake-up after the work is done would keep the kernel busy (a run ends by starvation).
    const bool earlier = !m_timers.empty() && (m_timer_wake == sc_core::SC_ZERO_TIME ||
                                               m_timers.begin()->first < m_timer_wake);
    const bool none_left = m_timers.empty() && m_timer_wake != sc_core::SC_ZERO_TIME;
    if (earlier || none_left) {
        m_timer_changed.notify(sc_core::SC_ZERO_TIME);
    }
}

void tx_engine::restart_timer(uint32_t qpn, qp_state& st) {
    const qp_context* qp = m_contexts.qp_slot(qpn);
    if (qp != nullptr) {
        st.rc.refill_retries(qp->retry_count);  // forward progress resets the retry budgets
    }
    if (st.rc.rnr_wait()) {
        // Progress of an earlier message (a READ's responses) during an RNR back-off: the
        // back-off still owns the timer and the RNR-NAKed message keeps its RNR budget.
        return;
    }
    // Anything sent (its AckReq packet included) still waiting for a response? A message not
    // yet (fully) sent starts the timer when its last packet goes (request_sent).
    bool waiting = false;
    for (const auto& o : st.queue) {
        waiting = waiting || (!o.done && o.sent);
    }
    if (qp != nullptr) {
        st.rc.refill_rnr(qp->rnr_retry);
    }
    arm_timer(qpn, st,
              waiting && qp != nullptr ? sc_core::sc_time_stamp() + timeout_of(*qp)
                                       : sc_core::SC_ZERO_TIME);
}

bool tx_engine::acknowledge_through(uint32_t qpn, qp_state& st, uint32_t psn) {
    const qp_context* qp = m_contexts.qp_slot(qpn);
    if (qp == nullptr) {
        return false;
    }
    bool ended = false;
    const bool progress = st.rc.acknowledge(psn, (qp->next_psn - 1) & PSN_MASK, &ended);
    if (ended) {
        end_episode(qpn, st, false);
    }
    return progress;
}

void tx_engine::end_episode(uint32_t qpn, qp_state& st, bool failed) {
    recovery_stats& q = qp_recovery(qpn);
    switch (st.rc.end_episode(failed)) {
        case episode_end::FAILED:
            ++m_recovery.recovery_failed;
            ++q.recovery_failed;
            break;
        case episode_end::BY_TIMEOUT:
            ++m_recovery.recovered_by_timeout;
            ++q.recovered_by_timeout;
            break;
        case episode_end::BY_NAK:
            ++m_recovery.recovered_by_nak;
            ++q.recovered_by_nak;
            break;
    }
}

recovery_stats tx_engine::recovery_of(uint32_t qpn) const {
    const auto it = m_recovery_by_qp.find(qpn);
    return it == m_recovery_by_qp.end() ? recovery_stats{} : it->second;
}

bool tx_engine::go_back_n(uint32_t qpn, uint32_t psn) {
    qp_state& st = m_qps[qpn];
    uint64_t superseded = 0;
    if (st.rc.resends_cover(psn, &superseded)) {
        return true;  // the resends still queued start at or before `psn`: they cover it
    }
    // Resends queued that start beyond `psn` (the message holding it has gone to the send path
    // since and lost a packet again) are superseded: the go-back-N starts over from `psn`.
    m_stats.superseded_resends += superseded;
    for (auto& o : st.queue) {
        if (o.done || !psn_le(psn, o.last_psn)) {
            continue;
        }
        if (o.is_read && o.resp.next != o.first_psn) {
            // Responses up to resp.next are placed: re-issue the READ from the first missing
            // response (IBA 9.7.5.1.4), for the rest of the range. The responder serves it as
            // a duplicate READ, starting at that PSN.
            tx_job j = o.job;
            const uint32_t skip = o.resp.next_index();
            const uint64_t bytes = static_cast<uint64_t>(skip) * j.desc.pmtu;
            if (bytes < j.desc.length) {
                j.desc.psn = o.resp.next;
                j.desc.remote_va += bytes;
                j.desc.length -= static_cast<uint32_t>(bytes);
                j.resend_epoch = st.rc.resend_epoch();
                st.rc.queue_resend(j.desc.psn);
                push_resend(std::move(j));
                ++m_stats.retransmits;
                ++m_stats.read_reissues;
                if (selective()) {  // the rest is asked for: its gaps are no new ones
                    o.resp.asked_for(o.resp.packets);
                }
                continue;
            }
        }
        if (selective() && !o.is_read && psn_in(psn, o.first_psn, o.last_psn) &&
            psn != o.first_psn) {
            // Selective repeat: the message goes again from the packet at `psn` (its First
            // and the packets before were acknowledged), as Middle/Last packets.
            const uint32_t k = (psn - o.first_psn) & PSN_MASK;
            tx_job j = slice_job(o, k, (o.last_psn - o.first_psn) & PSN_MASK);
            j.resend_epoch = st.rc.resend_epoch();
            st.rc.queue_resend(segment_first_psn(j.desc));
            push_resend(std::move(j));
            ++m_stats.retransmits;
            continue;
        }
        // Whole messages go again; the responder drops the packets it already has as
        // duplicates and resumes at its expected PSN.
        push_resend(tx_job(o.job));
        m_retransmits.back().resend_epoch = st.rc.resend_epoch();
        st.rc.queue_resend(o.job.desc.psn);
        ++m_stats.retransmits;
    }
    m_retransmit_event.notify(sc_core::SC_ZERO_TIME);
    return st.rc.resends_queued();
}

void tx_engine::on_nak_sequence(uint32_t qpn, uint32_t psn) {
    auto it = m_qps.find(qpn);
    if (it == m_qps.end()) {
        return;
    }
    qp_state& st = it->second;
    if (st.rc.stale(psn)) {
        // NAKs a PSN acknowledged already: a NAK overtaken on the wire by a later ACK or NAK,
        // or a copy. The responder is past it; going back would only resend what it has.
        ++m_stats.stale_naks;
        return;
    }
    // The NAK acknowledges everything before `psn` in any case (IBA 9.7.5.1.3); if that is more
    // than was acknowledged before, it is forward progress: the retransmission timer and the
    // retry budget start over (a long message may make progress only through NAKs).
    st.rc.cancel_probe();
    on_ack(qpn, (psn - 1) & PSN_MASK);
    if (st.rc.rnr_wait() && psn == st.rc.rnr_psn()) {
        return;  // the RNR timer owns the retry of this PSN
    }
    ++m_stats.nak_sequence;
    open_nak_episode(qpn, st, psn);
    if (m_ack_observer) {
        m_ack_observer(qpn, psn, true);  // congestion control: NAK event
    }
    go_back_n(qpn, psn);
}

void tx_engine::open_nak_episode(uint32_t qpn, qp_state& st, uint32_t psn) {
    if (!st.rc.open_nak_episode(psn)) {
        return;  // one episode until its PSN is acknowledged, however many NAKs it takes
    }
    ++m_recovery.nak_episodes;
    ++qp_recovery(qpn).nak_episodes;
}

void tx_engine::on_nak_selective(uint32_t qpn, uint32_t psn) {
    auto it = m_qps.find(qpn);
    if (it == m_qps.end()) {
        return;
    }
    qp_state& st = it->second;
    if (st.rc.stale(psn)) {
        ++m_stats.stale_naks;  // overtaken by a later ACK or NAK
        return;
    }
    // News disarms the tail probe (the responder has something past `psn`: a gap, not a lost
    // tail); a repeat leaves it armed (rc_requester::take_selective_nak).
    const bool news = st.rc.take_selective_nak(psn);
    on_ack(qpn, (psn - 1) & PSN_MASK);  // acknowledges everything before `psn`
    if (st.rc.rnr_wait() && psn == st.rc.rnr_psn()) {
        return;
    }
    if (!news) {
        // A repeated NAK (hw/recv_path: one per AckReq past the gap) that only an AckReq sent
        // before this packet's resend can have asked: the resend is on its way.
        ++m_stats.stale_naks;
        return;
    }
    ++m_stats.selective_naks;
    open_nak_episode(qpn, st, psn);
    if (m_ack_observer) {
        m_ack_observer(qpn, psn, true);  // congestion control: NAK event
    }
    for (auto& o : st.queue) {
        if (o.done || !o.on_wire || !psn_in(psn, o.first_psn, o.last_psn)) {
            continue;
        }
        if (o.is_read && psn == o.first_psn) {
            // The READ request never arrived: it alone goes again (the responder kept what
            // came after it).
            tx_job j = o.job;
            j.selective = true;
            push_resend(std::move(j));
            ++m_stats.retransmits;
            m_retransmit_event.notify(sc_core::SC_ZERO_TIME);
            return;
        }
        if (o.is_read) {
            go_back_n(qpn, psn);  // re-issued from its first missing response
            return;
        }
        // The responder kept what came after `psn`: only this packet goes again. A WRITE
        // Middle/Last needs no RETH: the responder expects this PSN, so it has the First.
        const uint32_t k = (psn - o.first_psn) & PSN_MASK;
        tx_job j = slice_job(o, k, k);
        j.selective = true;
        push_resend(std::move(j));
        ++m_stats.retransmits;
        m_retransmit_event.notify(sc_core::SC_ZERO_TIME);
        return;
    }
}

tx_job tx_engine::slice_job(const outstanding& o, uint32_t first, uint32_t last) const {
    tx_job j = o.job;
    tx_descriptor& d = j.desc;
    const uint32_t n = packets_of(d.length, d.pmtu);
    if (first == 0 && last + 1 >= n) {
        return j;  // the whole message
    }
    // A segment of the message (tx_descriptor::first_packet): psn, length and RETH stay the
    // message's; the job's data (inline bytes or gather list) is cut to the segment's bytes,
    // the payload stream its descriptor takes.
    const uint64_t from = static_cast<uint64_t>(first) * d.pmtu;
    const uint64_t to = std::min<uint64_t>(d.length, static_cast<uint64_t>(last + 1) * d.pmtu);
    d.first_packet = first;
    d.packets = std::min(last + 1, n) - first;
    d.ack_req = true;  // the responder answers the resend (IBA allows AckReq on any packet)
    if (!j.inline_data.empty()) {
        j.inline_data.assign(o.job.inline_data.begin() + static_cast<std::ptrdiff_t>(from),
                             o.job.inline_data.begin() + static_cast<std::ptrdiff_t>(to));
        return j;
    }
    // The gather list cut to [from, to).
    j.segments.clear();
    uint64_t at = 0;
    for (const dma_segment& seg : o.job.segments) {
        const uint64_t end = at + seg.len;
        if (end > from && at < to) {
            const uint64_t lo = std::max(at, from);
            const uint64_t hi = std::min(end, to);
            dma_segment c = seg;
            c.bus_addr = seg.bus_addr + (lo - at);
            c.len = static_cast<uint32_t>(hi - lo);
            j.segments.push_back(c);
        }
        at = end;
    }
    return j;
}

void tx_engine::on_rnr(uint32_t qpn, uint32_t psn, const sc_core::sc_time& delay) {
    auto it = m_qps.find(qpn);
    if (it == m_qps.end()) {
        return;
    }
    ++m_stats.rnr_naks;
    on_ack(qpn, (psn - 1) & PSN_MASK);
    if (m_ack_observer) {
        m_ack_observer(qpn, psn, true);  // congestion control: NAK event
    }
    qp_state& st = it->second;
    if (!st.rc.take_rnr_retry()) {
        ++m_stats.retry_exceeded;
        on_nak(qpn, psn, hsi::CQE_RNR_RETRY_EXCEEDED);
        return;
    }
    st.rc.start_rnr_wait(psn);
    arm_timer(qpn, st, sc_core::sc_time_stamp() + delay);
}

void tx_engine::timer_thread() {
    for (;;) {
        if (m_timers.empty()) {
            m_timer_wake = sc_core::SC_ZERO_TIME;
            sc_core::wait(m_timer_changed);
            continue;
        }
        const auto [deadline, qpn] = *m_timers.begin();
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        if (deadline > now) {
            // At most a short wait at once (hw/common/short_wait.h): a deadline moved later
            // or gone wakes this thread early, and the timeout cut short stays in the kernel's
            // event queue until its time.
            m_timer_wake = std::min(deadline, now + hw::short_wait_step());
            sc_core::wait(m_timer_wake - now, m_timer_changed);
            continue;
        }
        m_timers.erase(m_timers.begin());
        qp_state& st = m_qps[qpn];
        st.deadline = sc_core::SC_ZERO_TIME;
        const qp_context* qp = m_contexts.qp(qpn);
        if (qp == nullptr || qp->state == hsi::QPS_ERROR) {
            continue;
        }
        // The oldest request still waiting for the network.
        const outstanding* head = nullptr;
        for (const auto& o : st.queue) {
            if (!o.done) {
                head = &o;
                break;
            }
        }
        if (head == nullptr) {
            continue;
        }
        if (st.rc.rnr_wait()) {
            st.rc.end_rnr_wait();
            go_back_n(qpn, st.rc.rnr_psn());
        } else {
            ++m_stats.timeouts;
            ++m_recovery.timeouts;
            ++qp_recovery(qpn).timeouts;
            // Go back to the first PSN the responder has not acknowledged (known from the last
            // ACK or NAK), not to the start of the oldest message: a partly answered READ goes
            // again from its first missing response, and SEND / WRITE messages are resent whole
            // from the one holding that PSN (the send path builds whole messages; the responder
            // drops the packets it already has as duplicates).
            const uint32_t una = st.rc.first_unacked();
            const uint32_t from =
                head->is_read || psn_le(una, head->first_psn) ? head->first_psn : una;
            if (st.rc.timer_expired(from)) {
                ++m_recovery.timeout_episodes;
                ++qp_recovery(qpn).timeout_episodes;
            }
            if (!st.rc.take_retry()) {
                ++m_stats.retry_exceeded;
                on_nak(qpn, from, hsi::CQE_RETRY_EXCEEDED);
                continue;
            }
            go_back_n(qpn, from);
        }
        // The timer stays stopped until the resend's last packet is handed to the send path
        // (request_sent): a long resend must not expire it again while it is still going out.
    }
}

void tx_engine::request_sent(const tx_job& job) {
    const uint32_t qpn = job.desc.src_qpn;
    auto it = m_qps.find(qpn);
    const qp_context* qp = m_contexts.qp(qpn);
    if (it == m_qps.end() || it->second.generation != job.generation || qp == nullptr ||
        qp->state == hsi::QPS_ERROR) {
        return;
    }
    qp_state& st = it->second;
    if (selective()) {
        const bool read = job.desc.kind == tx_kind::READ_REQUEST;
        // A READ request takes the PSNs of its responses; a segment ends at its last packet.
        const uint32_t end =
            read ? packets_of(job.desc.length, job.desc.pmtu) : segment_end(job.desc);
        const uint32_t last = (job.desc.psn + end - 1) & PSN_MASK;
        st.rc.sent(last, job.selective && !read, segment_first_psn(job.desc), job.desc.ack_req);
    }
    // Newest first: a new request is the last entry, a resend one of the oldest few.
    for (auto o = st.queue.rbegin(); o != st.queue.rend(); ++o) {
        if (psn_in(job.desc.psn, o->first_psn, o->last_psn) && o->on_wire) {
            if (o->done) {
                return;  // acknowledged while it was going out
            }
            o->sent = true;
            if (!st.rc.rnr_wait() && st.deadline == sc_core::SC_ZERO_TIME) {
                arm_timer(qpn, st, sc_core::sc_time_stamp() + timeout_of(*qp));
            }
            return;
        }
    }
}

void tx_engine::on_nak(uint32_t qpn, uint32_t psn, uint8_t status) {
    auto it = m_qps.find(qpn);
    if (it == m_qps.end()) {
        return;
    }
    on_ack(qpn, (psn - 1) & PSN_MASK);  // a NAK acknowledges everything before it
    for (auto& o : it->second.queue) {
        if (!o.done && psn_in(psn, o.first_psn, o.last_psn)) {
            o.done = true;
            o.status = status;
            if (o.is_read) {
                read_finished(qpn, it->second);
            }
            break;
        }
    }
    fail_qp(qpn);
}

read_target tx_engine::find_read(uint32_t qpn, uint32_t psn) {
    read_target t;
    auto it = m_qps.find(qpn);
    if (it == m_qps.end()) {
        return t;
    }
    for (const auto& o : it->second.queue) {
        if (o.is_read && !o.done && psn_in(psn, o.first_psn, o.last_psn)) {
            t.found = true;
            t.first_psn = o.first_psn;
            t.length = o.length;
            t.segments = o.read_segments;
            t.flow_id = o.flow_id;
            t.next_psn = o.resp.next;
            t.sink_keys = o.read_keys;
            t.placed = o.resp.placed(psn);
            if (const qp_context* qp = m_contexts.qp(qpn)) {
                t.pdn = qp->pdn;
            }
            break;
        }
    }
    return t;
}

void tx_engine::on_read_response(uint32_t qpn, uint32_t first_psn, uint32_t psn, bool in_order) {
    auto it = m_qps.find(qpn);
    if (it == m_qps.end()) {
        return;
    }
    qp_state& st = it->second;
    for (auto& o : st.queue) {
        if (o.is_read && !o.done && o.first_psn == first_psn) {
            if (in_order) {
                o.resp.next = (psn + 1) & PSN_MASK;
                o.resp.gap = false;
                if (st.rc.repairs_episode(psn)) {
                    end_episode(qpn, st, false);  // the missing response came
                }
                // A valid response is forward progress (IBA 9.7.6.1.2): the retransmission
                // timer and the retry budget start over.
                restart_timer(qpn, st);
            } else if (!o.resp.gap) {
                // Once per gap: the responses behind the missing one are still arriving and
                // must not each re-issue the READ. If the re-issued READ loses its first
                // response too, the retransmission timer repairs it.
                o.resp.gap = go_back_n(qpn, first_psn);
                if (o.resp.gap) {  // a gap in the responses: like a sequence NAK
                    open_nak_episode(qpn, st, o.resp.next);
                }
            }
            return;
        }
    }
}

void tx_engine::on_read_placed(uint32_t qpn, uint32_t first_psn, uint32_t psn) {
    auto it = m_qps.find(qpn);
    if (it == m_qps.end()) {
        return;
    }
    qp_state& st = it->second;
    for (auto& o : st.queue) {
        if (!o.is_read || o.done || o.first_psn != first_psn) {
            continue;
        }
        const read_progress::step step = o.resp.on_placed(psn);
        if (step == read_progress::step::PAST_GAP) {
            // Past a gap: kept; the missing responses are asked for once (a READ of them only).
            if (!o.resp.gap) {
                reissue_read_gap(qpn, st, o);
                open_nak_episode(qpn, st, o.resp.next);  // a gap: like a sequence NAK
            }
            return;
        }
        // In order: moved past it and every response placed since.
        if (st.rc.repairs_episode((o.resp.next - 1) & PSN_MASK)) {
            end_episode(qpn, st, false);
        }
        if (step == read_progress::step::DONE) {
            on_read_done(qpn, first_psn);  // every response is in
            return;
        }
        restart_timer(qpn, st);  // forward progress (IBA 9.7.6.1.2)
        if (!o.resp.gap && o.resp.kept_past_next()) {
            reissue_read_gap(qpn, st, o);  // the next gap: responses past it are in
        }
        return;
    }
}

void tx_engine::reissue_read_gap(uint32_t qpn, qp_state& st, outstanding& o) {
    uint32_t from = 0;
    uint32_t to = 0;
    o.resp.gap_range(&from, &to);
    tx_job j = o.job;
    const uint64_t skip = static_cast<uint64_t>(from) * j.desc.pmtu;
    if (skip >= j.desc.length) {
        return;
    }
    j.desc.psn = o.resp.next;
    j.desc.remote_va += skip;
    j.desc.length = static_cast<uint32_t>(
        std::min<uint64_t>(j.desc.length - skip, static_cast<uint64_t>(to - from) * j.desc.pmtu));
    j.resend_epoch = st.rc.resend_epoch();
    j.selective = true;
    push_resend(std::move(j));
    m_retransmit_event.notify(sc_core::SC_ZERO_TIME);
    ++m_stats.retransmits;
    ++m_stats.read_reissues;
    o.resp.asked_for(to);
}

void tx_engine::on_read_done(uint32_t qpn, uint32_t first_psn) {
    auto it = m_qps.find(qpn);
    if (it == m_qps.end()) {
        return;
    }
    on_ack(qpn, (first_psn - 1) & PSN_MASK);  // responses imply earlier requests arrived
    for (auto& o : it->second.queue) {
        if (o.is_read && !o.done && o.first_psn == first_psn) {
            o.done = true;
            o.status = hsi::CQE_OK;
            read_finished(qpn, it->second);
            // The responses acknowledge the READ request and everything before it.
            acknowledge_through(qpn, it->second, o.last_psn);
            break;
        }
    }
    restart_timer(qpn, it->second);  // progress; stops the timer if nothing else is waiting
    retire(qpn);
}

void tx_engine::on_read_fault(uint32_t qpn, uint32_t first_psn, uint8_t status) {
    auto it = m_qps.find(qpn);
    if (it == m_qps.end() || in_error(qpn)) {
        return;
    }
    on_ack(qpn, (first_psn - 1) & PSN_MASK);  // responses imply earlier requests arrived
    for (auto& o : it->second.queue) {
        if (o.is_read && !o.done && o.first_psn == first_psn) {
            o.done = true;
            o.status = status;
            read_finished(qpn, it->second);
            break;
        }
    }
    fail_qp(qpn);
}

// The transmit scheduler (tx_scheduler.h) decides what goes next; this thread hands it to the
// send path and sleeps on what the scheduler names when nothing may go.
void tx_engine::transmit_thread() {
    for (;;) {
        tx_turn t;
        tx_sleep s;
        if (!m_sched->next(t, s)) {
            sleep(s);
            continue;
        }
        if (t.wait_cycles != 0) {
            m_clk.wait_cycles(t.wait_cycles);
        }
        bool ok = true;
        if (t.whole) {
            send_job(*t.job);
        } else {
            bool ack = t.ack_at_end;
            if (t.ack_at_segment_end && t.count != 0) {
                const uint32_t per = ack_segment_packets(t.job->desc);
                ack = ack || (per != 0 && (t.first + t.count) % per == 0);
            }
            ok = send_packets(*t.job, t.first, t.count, true, ack);
        }
        m_sched->turn_done(ok);
    }
}

void tx_engine::sleep(const tx_sleep& s) {
    sc_core::sc_event_or_list ev;
    if (s.on_responses) {
        ev |= m_responses.written_event();
    }
    if (s.on_requests) {
        ev |= m_requests.written_event();
        ev |= m_retransmit_event;
    }
    if (s.on_window) {
        ev |= m_sched_wake;
    }
    if (s.on_rate) {
        ev |= m_pacer->rate_changed_event();
        m_pacer->watch(true);
    }
    if (s.until_ps != UINT64_MAX) {
        const sc_core::sc_time slot(static_cast<double>(s.until_ps), sc_core::SC_PS);
        sc_core::wait(m_clk.edge_at_or_after(slot) - sc_core::sc_time_stamp(), ev);
    } else {
        sc_core::wait(ev);
    }
    if (s.on_rate) {
        m_pacer->watch(false);
    }
}

bool tx_engine::has(tx_queue q) const {
    switch (q) {
        case tx_queue::RESPONSES:
            return !m_responses.empty();
        case tx_queue::RESENDS:
            return !m_retransmits.empty();
        default:
            return !m_requests.empty();
    }
}

const tx_job& tx_engine::front(tx_queue q) {
    switch (q) {
        case tx_queue::RESPONSES:
            return m_responses.front();
        case tx_queue::RESENDS:
            return m_retransmits.front();
        default:
            return m_requests.front();
    }
}

void tx_engine::take(tx_queue q, tx_job& into) {
    switch (q) {
        case tx_queue::RESPONSES:
            into = std::move(m_responses.front());
            m_responses.pop();
            break;
        case tx_queue::RESENDS:
            into = std::move(m_retransmits.front());
            m_retransmits.pop_front();
            break;
        default:
            into = std::move(m_requests.front());
            m_requests.pop();
            break;
    }
}

bool tx_engine::resend_live(const tx_job& job) {
    auto it = m_qps.find(job.desc.src_qpn);
    if (it == m_qps.end() || it->second.generation != job.generation) {
        ++m_stats.dropped_stale;  // queued before the QP was reset or destroyed
        return false;
    }
    if (!job.selective && job.resend_epoch != it->second.rc.resend_epoch()) {
        return false;  // superseded by a newer go-back-N of the QP (counted there)
    }
    if (!job.selective) {
        it->second.rc.resend_taken();
    }
    if (in_error(job.desc.src_qpn)) {
        ++m_stats.dropped_in_error;
        return false;
    }
    const bool request = job.desc.kind == tx_kind::READ_REQUEST;
    const uint64_t packets = request ? 1 : segment_packets(job.desc);
    const uint64_t bytes = request ? 0 : segment_payload_bytes(job.desc);
    recovery_stats& q = qp_recovery(job.desc.src_qpn);
    m_recovery.retransmitted_packets += packets;
    m_recovery.retransmitted_bytes += bytes;
    q.retransmitted_packets += packets;
    q.retransmitted_bytes += bytes;
    return true;
}

bool tx_engine::request_live(const tx_job& job) {
    // Requests queued before their QP failed were flushed already: not sent.
    if (job.generation != generation_of(job.desc.src_qpn)) {
        ++m_stats.dropped_stale;
        return false;
    }
    if (in_error(job.desc.src_qpn)) {
        ++m_stats.dropped_in_error;
        return false;
    }
    return true;
}

bool tx_engine::response_live(const tx_job& job) {
    if (job.generation != generation_of(job.desc.src_qpn)) {
        ++m_stats.dropped_stale;  // the responder QP was reset or destroyed since
        return false;
    }
    // ACKs and NAKs always go (the NAK that put the QP in error among them); READ responses of
    // a QP in error are dropped.
    if (job.desc.kind == tx_kind::READ_RESPONSE && in_error(job.desc.src_qpn)) {
        ++m_stats.dropped_in_error;
        return false;
    }
    return true;
}

bool tx_engine::supersedes(const tx_job& r, const tx_job& copy) const {
    const auto q = m_qps.find(r.desc.src_qpn);
    return q != m_qps.end() && r.generation == q->second.generation &&
           r.resend_epoch == q->second.rc.resend_epoch() &&
           psn_le(segment_first_psn(r.desc), segment_first_psn(copy.desc));
}

uint64_t tx_engine::window_in_flight(const qp_state& st) {
    return st.rc.in_flight() + st.window_acked.now();
}

uint32_t tx_engine::window_fit(const tx_descriptor& d, uint32_t next, uint32_t n, bool& windowed) {
    // The algorithm's window_bytes in the QPC's congestion-control slice (hw/cc).
    const qp_context* qp = m_contexts.qp_slot(d.src_qpn);
    const uint32_t window = qp != nullptr ? qp->cc.window_bytes : 0;
    if (window == 0) {
        return n;
    }
    windowed = true;
    qp_state& st = m_qps[d.src_qpn];
    const uint64_t inflight = window_in_flight(st);
    uint64_t add = 0;
    uint32_t fit = 0;
    for (; fit < n; ++fit) {
        const uint32_t k = next + fit;
        const uint32_t psn = (d.psn + k) & PSN_MASK;
        if (st.rc.sent_before(psn)) {
            continue;  // resent bytes are in flight already
        }
        const uint64_t b = plan_packet(d, k).payload_len;
        if (inflight + add != 0 && inflight + add + b > window) {
            break;
        }
        add += b;
    }
    return fit;
}

uint64_t tx_engine::count_sent(const tx_job& job, uint32_t first, uint32_t packets) {
    const tx_descriptor& d = job.desc;
    auto it = m_qps.find(d.src_qpn);
    if (it == m_qps.end() || it->second.generation != job.generation) {
        return 0;
    }
    for (uint32_t k = first; k < first + packets; ++k) {
        it->second.rc.count_sent((d.psn + k) & PSN_MASK, plan_packet(d, k).payload_len);
    }
    const qp_context* qp = m_contexts.qp_slot(d.src_qpn);
    return qp != nullptr && qp->cc.window_bytes != 0 ? window_in_flight(it->second) : 0;
}

uint32_t tx_engine::ack_segment_packets(const tx_descriptor& d) const {
    if (m_ack_segment_bytes == 0 || (d.kind != tx_kind::SEND && d.kind != tx_kind::WRITE)) {
        return 0;
    }
    const uint32_t bytes = m_ack_segment_fn ? m_ack_segment_fn(d.src_qpn) : m_ack_segment_bytes;
    return std::max<uint32_t>(1, bytes / d.pmtu);
}

void tx_engine::send_job(tx_job& job) {
    const uint32_t per = ack_segment_packets(job.desc);
    const uint32_t end = segment_end(job.desc);
    uint32_t first = job.desc.first_packet;
    if (per == 0 || first / per == (end - 1) / per) {
        send_packets(job, 0, 0, false);  // as built: no segment boundary inside
        return;
    }
    // Congestion-control segments: boundaries at multiples of `per` packets of the message,
    // each segment's last packet asks for an ACK (the NIC's RTT sample per segment). The send
    // path times a segment that continues the previous one as the message's next packet.
    while (first < end) {
        const uint32_t to = std::min(end, (first / per + 1) * per);
        if (!send_packets(job, first, to - first, false, true)) {
            return;
        }
        first = to;
    }
}

bool tx_engine::send_packets(tx_job& job, uint32_t first, uint32_t count, bool scheduled,
                             bool ack_at_end) {
    // A part of the job (a scheduler turn, a congestion-control segment) goes on its own
    // descriptor, a segment of the message (tx_descriptor::first_packet): packets first ..
    // first + count - 1, AckReq on its last when it ends the job or `ack_at_end`. count 0 is
    // the job as built (a whole message, or selective repeat's segment). The job's data holds
    // the bytes of its own packets, from packet `base` on.
    const uint32_t base = job.desc.first_packet;
    tx_descriptor seg = job.desc;
    if (count != 0) {
        seg.first_packet = first;
        seg.packets = count;
        seg.ack_req = job.desc.ack_req && (ack_at_end || first + count >= segment_end(job.desc));
    } else {
        first = base;
    }
    const tx_descriptor& d = seg;
    const uint32_t end = segment_end(d);
    const bool has_payload =
        d.kind == tx_kind::SEND || d.kind == tx_kind::WRITE || d.kind == tx_kind::READ_RESPONSE;
    const bool from_memory =
        has_payload && d.length != 0 && job.inline_data.empty() && !job.segments.empty();
    // The gather translation runs per packet (mlx5: through the MKey/MTT cache, which a
    // deregistration invalidates). The first packet's check: a source key that died since the
    // WQE was translated (a deregistration while the request sat in the job FIFO, or before a
    // go-back-N resend) puts nothing of the message (of this segment on) on the wire.
    if (from_memory && !source_keys_live(job)) {
        source_fault(job, (d.psn + first) & PSN_MASK);
        return false;
    }
    if (first == 0) {
        if (d.kind == tx_kind::ACK) {
            ++m_stats.acks_sent;
        } else if (d.kind == tx_kind::READ_RESPONSE) {
            ++m_stats.responses;
        }
    }
    if (m_pacer != nullptr) {
        // Congestion control: the first packet's rate-limiter slot (the scheduler booked it
        // before it chose this turn).
        if (!scheduled) {
            m_pacer->pace(d, first);
        }
    }
    m_send_path.put_descriptor(d);
    if (!has_payload || d.length == 0) {
        return true;
    }
    if (!from_memory) {
        if (count == 0) {
            m_stats.inline_bytes += job.inline_data.size();
            m_send_path.put_payload({std::move(job.inline_data), sc_core::sc_time_stamp()});
        } else {
            const uint64_t from = uint64_t{first - base} * d.pmtu;
            const uint64_t n = segment_payload_bytes(d);
            m_stats.inline_bytes += n;
            const auto at = job.inline_data.begin() + static_cast<std::ptrdiff_t>(from);
            m_send_path.put_payload({std::vector<uint8_t>(at, at + static_cast<std::ptrdiff_t>(n)),
                                     sc_core::sc_time_stamp()});
        }
        return true;
    }
    // Payload reads, one per path-MTU chunk so the first packet can start as soon as its
    // bytes are in; the send path's payload FIFO back-pressures the next read. The source keys
    // are checked again before every later chunk (one per packet; more when a packet spans
    // scatter entries): once a key fails, nothing more is read from host memory. A part of the
    // job reads only its packets' bytes [seg_from, seg_to) of the job's data.
    const uint64_t seg_from = uint64_t{first - base} * d.pmtu;
    const uint64_t seg_to = seg_from + segment_payload_bytes(d);
    const sc_core::sc_time dma_start = sc_core::sc_time_stamp();
    sc_core::sc_time last_ready = dma_start;
    uint64_t offset = 0;  // of the scatter entry's start within the job's data
    bool faulted = false;
    uint32_t fault_psn = 0;
    for (const dma_segment& seg : job.segments) {
        if (offset + seg.len <= seg_from) {
            offset += seg.len;
            continue;
        }
        if (offset >= seg_to) {
            break;
        }
        uint32_t done = 0;
        while (done < seg.len) {
            uint32_t n = std::min(seg.len - done, d.pmtu);
            uint64_t at = offset;  // offset of this chunk in the job's data
            if (at < seg_from) {   // a segment starting inside the chunk
                const auto skip = static_cast<uint32_t>(std::min<uint64_t>(seg_from - at, n));
                done += skip;
                offset += skip;
                n -= skip;
                at += skip;
                if (n == 0) {
                    continue;
                }
            }
            if (at >= seg_to) {
                break;
            }
            n = static_cast<uint32_t>(std::min<uint64_t>(n, seg_to - at));
            if (m_pacer != nullptr) {  // congestion control: slots of the packets starting here
                for (uint64_t k = (at + d.pmtu - 1) / d.pmtu; k * d.pmtu < at + n; ++k) {
                    const auto index = static_cast<uint32_t>(base + k);  // in the message
                    if (index != first) {
                        if (scheduled) {
                            m_pacer->pass(d, index);
                        } else {
                            m_pacer->pace(d, index);
                        }
                    }
                }
            }
            if (!faulted && at != seg_from && !source_keys_live(job)) {
                faulted = true;
                const auto first_bad = static_cast<uint32_t>(base + at / d.pmtu);
                fault_psn = (d.psn + first_bad) & PSN_MASK;
                m_stomp.add(d.dest_qpn, fault_psn, end - first_bad);
            }
            payload_chunk c;
            // A buffer the send path recycles (no allocation, no zero-fill): the read below
            // writes every byte of it (zeros when it fails).
            c.bytes = m_send_path.payload_buffer(n);
            if (faulted) {
                // The send path takes exactly the descriptor's bytes and has no abort: the rest
                // of the segment goes in as zeros, and the MAC stomps those packets.
                std::fill(c.bytes.begin(), c.bytes.end(), uint8_t{0});
                c.ready = sc_core::sc_time_stamp();
            } else {
                // The read is requested now (granted at this edge, in the DMA engine's order)
                // and goes into the send path's payload FIFO when the FIFO has room: when it is
                // full (at line rate, each time), one wait for its room, not a wake-up at the
                // grant first. Streamed (cut_through): each read request's bytes go on as its
                // completions are in.
                dma_engine::posted_read r;
                m_dma.read_posted(dma_client::TX_PAYLOAD, seg.bus_addr + done, c.bytes.data(), n, r,
                                  m_cfg.cut_through ? &m_read_parts : nullptr);
                m_stats.payload_bytes += n;
                // More of this segment follows this chunk (and no rate limiter looks at this
                // instant): the send path may do its frames' last-beat steps in this wait.
                m_send_path.wait_payload_room(m_pacer == nullptr && at + n < seg_to);
                m_dma.wait_granted(r);
                c.ready = r.done;
                if (m_cfg.cut_through) {
                    c.parts.assign(m_read_parts.begin(), m_read_parts.end());
                    m_stats.payload_read_parts += m_read_parts.size();
                }
                last_ready = c.ready;
            }
            m_send_path.put_payload(std::move(c));
            done += n;
            offset += n;
        }
        if (offset >= seg_to) {
            break;
        }
    }
    if (m_ctx.tracer != nullptr) {
        // One slice per message: a message sent in turns from its first turn's read to its
        // last turn's.
        if (count == 0) {
            m_ctx.tracer->slice(name(), "payload_dma", d.flow_id, dma_start, last_ready);
        } else if (first == base) {
            job.dma_start = dma_start;
        }
        if (count != 0 && end == segment_end(job.desc)) {
            m_ctx.tracer->slice(name(), "payload_dma", d.flow_id, job.dma_start, last_ready);
        }
    }
    if (faulted) {
        source_fault(job, fault_psn);
        return false;
    }
    return true;
}

bool tx_engine::source_keys_live(const tx_job& job) const {
    for (const uint32_t key : job.src_keys) {
        if (key == hsi::PRIVILEGED_KEY) {
            continue;
        }
        const mpt_entry* e = m_contexts.mpt(key);
        if (e == nullptr || !e->valid || e->pdn != job.src_pdn) {
            return false;
        }
        if (e->is_mw) {
            const mpt_entry* mr = m_contexts.mpt_slot(e->parent_index << 8);
            if (mr == nullptr || !mr->valid) {
                return false;
            }
        }
    }
    return true;
}

void tx_engine::source_fault(const tx_job& job, uint32_t psn) {
    ++m_stats.source_key_faults;
    const uint32_t qpn = job.desc.src_qpn;
    if (job.generation != generation_of(qpn)) {
        return;  // the QP was reset or destroyed meanwhile: nothing left to fail
    }
    if (job.desc.kind == tx_kind::READ_RESPONSE) {
        // Responder: the READ's source is gone. NAK "remote access error" at the first PSN
        // that could not be served (IBA 9.7.5.2.4; the requester completes the READ with
        // CQE_REMOTE_ACCESS_ERR), then the responder QP goes to ERROR (class C/D error).
        if (const qp_context* qp = m_contexts.qp(qpn)) {
            tx_job nak;
            nak.desc = base_descriptor(*qp, qpn);
            nak.desc.kind = tx_kind::ACK;
            nak.desc.psn = psn;
            nak.desc.syndrome = roce::AETH_NAK_REMOTE_ACCESS_ERROR;
            nak.desc.msn = qp->msn & PSN_MASK;
            nak.desc.flow_id = job.desc.flow_id;
            send_job(nak);
        }
        fail_qp(qpn);
        return;
    }
    // Requester: the WQE this message belongs to completes with a local protection error and
    // the QP goes to ERROR (the requests behind it are flushed).
    auto it = m_qps.find(qpn);
    if (it != m_qps.end()) {
        for (auto& o : it->second.queue) {
            if (!o.done && !o.is_read && psn_in(job.desc.psn, o.first_psn, o.last_psn)) {
                o.done = true;
                o.status = hsi::CQE_LOCAL_PROT_ERR;
                break;
            }
        }
    }
    fail_qp(qpn);
    retire(qpn);
}

}  // namespace rnic::hw
