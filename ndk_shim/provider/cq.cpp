// SPDX-License-Identifier: Apache-2.0
// Provider driver: completion queues. The CQ ring is 2^n 32 B hsi::cqe entries in contiguous
// kernel memory; entries are valid when their phase bit matches the consumer's pass. The
// consumer index reaches the NIC by REG_CQ_DOORBELL writes, batched (every report_threshold
// CQEs, and with every arm), so the NIC's overrun check sees the ring space actually free.
// Interrupt moderation and CQ errors come from the NIC (CMD_MODIFY_CQ, EVENT_CQ_ERROR).
#include <algorithm>
#include <cstring>

#include "ndk_shim/provider/provider.h"
#include "ndk_shim/status_map.h"

namespace rnic::ndk::provider {

namespace {
// Ring of at least twice the requested depth (so a stale consumer index cannot make the NIC
// see an overrun the consumer did not cause), within the NIC's maximum.
uint32_t cq_log_size(uint32_t depth, uint32_t max_depth) {
    const uint32_t max_log = log2_ceil(usable_depth(max_depth));
    return std::max<uint32_t>(2, std::min(log2_ceil(depth) + 1, max_log));
}

uint32_t cq_threshold(uint32_t log_size, uint32_t depth) {
    const uint32_t ring = 1u << log_size;
    const uint32_t spare = ring > depth ? ring - depth : 0;
    return std::max<uint32_t>(1, std::min(ring / 4, spare));
}

bool is_receive(uint8_t opcode) {
    return opcode == hsi::CQE_RECV || opcode == hsi::CQE_RECV_IMM || opcode == hsi::CQE_RECV_INV;
}

void fill(NDK_RESULT& r, NTSTATUS st, ULONG bytes, void* qpc, void* req, NDK_OPERATION_TYPE,
          uint32_t, uint32_t) {
    r.Status = st;
    r.BytesTransferred = bytes;
    r.QPContext = qpc;
    r.RequestContext = req;
}

void fill(NDK_RESULT_EX& r, NTSTATUS st, ULONG bytes, void* qpc, void* req, NDK_OPERATION_TYPE type,
          uint32_t vendor_err, uint32_t inv_key) {
    r.Status = st;
    r.BytesTransferred = bytes;
    r.QPContext = qpc;
    r.RequestContext = req;
    r.Type = type;
    r.ProviderErrorCode = st == STATUS_SUCCESS ? 0 : (vendor_err != 0 ? vendor_err : 1);
    r.TypeSpecificCompletionOutput = type == NdkOperationTypeReceiveAndInvalidate ? inv_key : 0;
}
}  // namespace

bool cq_impl::valid_at(uint32_t index) const {
    const hsi::cqe& e = ring[index & ((1u << log_size) - 1)];
    const uint8_t phase = ((index >> log_size) & 1) ? 0 : 1;
    return ((e.flags >> 7) & 1) == phase;
}

bool cq_impl::has_match(int type) const {
    if (type == static_cast<int>(NDK_CQ_NOTIFY_ANY)) {
        return valid_at(consumer);
    }
    if (type == static_cast<int>(NDK_CQ_NOTIFY_SOLICITED)) {
        const uint32_t mask = (1u << log_size) - 1;
        for (uint32_t i = consumer; valid_at(i) && i - consumer <= mask; ++i) {
            const hsi::cqe& e = ring[i & mask];
            if ((e.flags & hsi::CQE_FLAG_SOLICITED) || e.status != hsi::CQE_OK) {
                return true;  // errors always match SOLICITED
            }
        }
    }
    return false;
}

void cq_impl::write_doorbell(uint8_t hw_arm) {
    adapter->host.mmio_write64(hsi::REG_CQ_DOORBELL, static_cast<uint64_t>(cqn) |
                                                         static_cast<uint64_t>(hw_arm) << 24 |
                                                         static_cast<uint64_t>(consumer) << 32);
    reported = consumer;
    ++adapter->counters.cq_doorbells;
}

// Interrupt moderation is the NIC's (CMD_MODIFY_CQ): it holds the completion event until
// ModerationCount CQEs are queued or ModerationInterval us passed, so the notification goes out
// as the event arrives. A dead CQ (EVENT_CQ_ERROR, EVENT_DEVICE_FATAL) reports its status
// (STATUS_BUFFER_OVERFLOW for an overrun, STATUS_INTERNAL_ERROR for a hardware error) once:
// to the armed notification, or to the next ArmCq.
void cq_impl::on_event(NTSTATUS status) {
    if (closing || notify_cb == nullptr || arm < 0) {
        return;  // a dead CQ with no arm is reported by the next ArmCq
    }
    if (status != STATUS_SUCCESS) {
        if (overrun_reported) {
            return;
        }
        overrun_reported = true;
    } else if (overrun || !has_match(arm)) {
        // After an overrun or a fatal error the CQ is dead: no more completion notifications
        // (ndkpi.md 7). Stale event (the consumer already polled the CQE, or an ERRORS-only
        // arm): the arm stays until a matching completion is really queued.
        return;
    }
    arm = -1;  // one-shot
    ++adapter->counters.cq_notifications;
    ++busy;
    notify_cb(notify_ctx, status);
    --busy;
    adapter->progress(this);
}

uint32_t device_caps(adapter_impl* ad) {
    if (!ad->caps_known) {
        // The answer lands in the command's own slot (before its status): remember which.
        const uint32_t slot = ad->cmd_producer & ((1u << ad->params.cmdq_log_size) - 1);
        hsi::cmd_slot c{};
        c.opcode = hsi::CMD_QUERY_DEVICE;
        ad->commands({c}, true, [ad, slot](uint8_t st) {
            if (st == hsi::CMD_OK) {
                hsi::cmd_query_device q{};
                std::memcpy(&q, &ad->cmdq[slot].u.query, sizeof(q));
                ad->caps = q.caps;
                ad->caps_known = true;
            }
        });
    }
    return ad->caps;
}

void device_fatal(adapter_impl* ad) {
    ad->fatal = true;
    for (cq_impl* cq : ad->cq_table) {
        if (cq != nullptr) {
            if (!cq->overrun) {
                cq->dead_status = STATUS_INTERNAL_ERROR;
            }
            cq->overrun = true;
            cq->on_event(cq->dead_status);
        }
    }
    for (srq_impl* srq : ad->srq_table) {
        if (srq != nullptr) {
            srq->on_error();
        }
    }
    // The NIC moved every QP to ERROR: work requests fail inline from now on.
    for (qp_impl* qp : ad->qp_table) {
        if (qp != nullptr &&
            (qp->state == qp_impl::CONNECTED || qp->state == qp_impl::CONNECTING)) {
            qp->state = qp_impl::DISCONNECTED;
        }
    }
}

template <typename R>
ULONG cq_impl::poll(R* results, ULONG n) {
    host_system& host = adapter->host;
    host.cpu(host.config().poll_ns);
    const uint32_t mask = (1u << log_size) - 1;
    ULONG count = 0;
    // The answer "nothing queued" must hold when poll returns: the empty-poll doorbell costs CPU
    // time (MMIO write), and a CQE landing meanwhile would be missed by a caller that then sleeps
    // until the next DMA write (wait_for_completion_activity) -> hang. So look at the ring again
    // after that doorbell, as drivers re-poll after an arm.
    for (;;) {
        while (count < n && !overrun && valid_at(consumer)) {
            const hsi::cqe c = ring[consumer & mask];
            ++consumer;
            ++adapter->counters.cqes_polled;
            qp_impl* qp = c.qpn < adapter->qp_table.size() ? adapter->qp_table[c.qpn] : nullptr;
            if (qp == nullptr) {
                continue;  // the QP was destroyed: nobody to report to
            }
            const NTSTATUS st = cqe_status_to_ntstatus(c.status);
            void* req = nullptr;
            NDK_OPERATION_TYPE type;
            ULONG bytes = 0;
            if (is_receive(c.opcode)) {
                type = c.opcode == hsi::CQE_RECV_INV ? NdkOperationTypeReceiveAndInvalidate
                                                     : NdkOperationTypeReceive;
                bytes = c.byte_len;
                if (c.srqn & 0x80000000u) {
                    const uint32_t sn = c.srqn & 0x00FFFFFFu;
                    srq_impl* s = sn < adapter->srq_table.size() ? adapter->srq_table[sn] : nullptr;
                    if (s == nullptr) {
                        continue;
                    }
                    req = s->shadow[c.wqe_index & (s->shadow.size() - 1)];
                    s->retire(c.wqe_index);
                } else {
                    req = qp->rq_shadow[c.wqe_index & (qp->rq_shadow.size() - 1)];
                    qp->retire_rq(c.wqe_index);
                }
            } else {
                const sq_shadow_entry& e = qp->sq_shadow[c.wqe_index & (qp->sq_shadow.size() - 1)];
                req = e.context;
                type = e.type;
                bytes = c.byte_len;
                qp->retire_sq(c.wqe_index);
            }
            fill(results[count], st, bytes, qp->context, req, type, c.vendor_err, c.imm_or_key);
            ++count;
        }
        if (consumer - reported >= report_threshold || (count == 0 && consumer != reported)) {
            // Keep the current arm when only the consumer index moves.
            const uint8_t hw = arm == static_cast<int>(NDK_CQ_NOTIFY_ANY) ? hsi::CQ_ARM_ANY
                               : arm == static_cast<int>(NDK_CQ_NOTIFY_SOLICITED)
                                   ? hsi::CQ_ARM_SOLICITED
                                   : hsi::CQ_ARM_NONE;
            write_doorbell(hw);
            if (count == 0 && !overrun && valid_at(consumer)) {
                continue;  // a CQE landed during the doorbell write
            }
        }
        break;
    }
    return count;
}

void cq_impl::teardown(std::function<void()> done) {
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_DESTROY_CQ;
    c.u.obj.handle = cqn;
    adapter_impl* ad = adapter;
    cq_impl* self = this;
    ad->commands({c}, ad->sync(), [ad, self, done](uint8_t) {
        ad->cq_table[self->cqn] = nullptr;
        ad->cqns.free(self->cqn);
        ad->host.free(self->ring);
        self->ring = nullptr;
        done();
    });
}

NTSTATUS create_cq(NDK_ADAPTER* a, ULONG depth, NDK_FN_CQ_NOTIFICATION_CALLBACK notify,
                   PVOID notify_ctx, GROUP_AFFINITY*, NDK_FN_CREATE_COMPLETION cb, PVOID ctx,
                   NDK_CQ** out) {
    adapter_impl* ad = impl(a);
    if (depth == 0 || depth > usable_depth(ad->params.limits.max_cq_depth)) {
        return STATUS_INVALID_PARAMETER;
    }
    const uint32_t cqn = ad->cqns.alloc();
    if (cqn == 0) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    auto* cq = new cq_impl;
    ad->init_header(cq, NdkObjectTypeCq, &cq_dispatch);
    cq->adapter = ad;
    cq->cqn = cqn;
    cq->depth = depth;
    cq->log_size = cq_log_size(depth, ad->params.limits.max_cq_depth);
    cq->report_threshold = cq_threshold(cq->log_size, depth);
    cq->ring = static_cast<hsi::cqe*>(
        ad->host.alloc((size_t{1} << cq->log_size) * sizeof(hsi::cqe), true));
    cq->notify_cb = notify;
    cq->notify_ctx = notify_ctx;
    ad->cq_table[cqn] = cq;

    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_CREATE_CQ;
    c.u.cq.cqn = cqn;
    c.u.cq.log_depth = cq->log_size;
    c.u.cq.ring_addr = ad->host.phys(cq->ring);
    c.u.cq.msix_vector = hsi::MSIX_VECTOR_ASYNC;  // notifications arrive as EQ events
    const bool sync = ad->sync();
    NTSTATUS result = STATUS_PENDING;
    ad->commands({c}, sync, [ad, cq, cb, ctx, sync, &result](uint8_t st) {
        const NTSTATUS s = cmd_status_to_ntstatus(st);
        if (s == STATUS_SUCCESS) {
            cq->add_antecedent(ad);
        } else {
            ad->cq_table[cq->cqn] = nullptr;
            ad->cqns.free(cq->cqn);
            ad->host.free(cq->ring);
            delete cq;
        }
        if (sync) {
            result = s;
        } else {
            cb(ctx, s, s == STATUS_SUCCESS ? &cq->Header : nullptr);
        }
    });
    if (sync && result == STATUS_SUCCESS) {
        *out = cq;
    }
    return result;
}

VOID arm_cq(NDK_CQ* p, ULONG type) {
    cq_impl* cq = impl(p);
    if (type > NDK_CQ_NOTIFY_SOLICITED) {
        return;
    }
    // Re-arming before the first arm fired combines (ndkpi.md 7): ANY wins, then SOLICITED.
    const int t = static_cast<int>(type);
    if (cq->arm < 0) {
        cq->arm = t;
    } else if (cq->arm == static_cast<int>(NDK_CQ_NOTIFY_ANY) || t == NDK_CQ_NOTIFY_ANY) {
        cq->arm = NDK_CQ_NOTIFY_ANY;
    } else if (cq->arm == static_cast<int>(NDK_CQ_NOTIFY_SOLICITED) ||
               t == NDK_CQ_NOTIFY_SOLICITED) {
        cq->arm = NDK_CQ_NOTIFY_SOLICITED;
    }
    const uint8_t hw = cq->arm == static_cast<int>(NDK_CQ_NOTIFY_ANY) ? hsi::CQ_ARM_ANY
                       : cq->arm == static_cast<int>(NDK_CQ_NOTIFY_SOLICITED)
                           ? hsi::CQ_ARM_SOLICITED
                           : hsi::CQ_ARM_NONE;
    if (hw != hsi::CQ_ARM_NONE || cq->consumer != cq->reported) {
        cq->write_doorbell(hw);
    }
    // Already satisfied (a completion is queued, or the CQ died and that was not reported
    // yet): fire from a DPC, never from inside ArmCq.
    const bool dead_due = cq->overrun && !cq->overrun_reported;
    if (dead_due || (!cq->overrun && cq->has_match(cq->arm))) {
        ++cq->busy;
        const NTSTATUS st = dead_due ? cq->dead_status : STATUS_SUCCESS;
        cq->adapter->host.queue_dpc([cq, st] {
            --cq->busy;
            cq->on_event(st);
            cq->adapter->progress(cq);
        });
    }
}

ULONG get_cq_results(NDK_CQ* p, NDK_RESULT results[], ULONG n) {
    return impl(p)->poll(results, n);
}

ULONG get_cq_results_ex(NDK_CQ* p, NDK_RESULT_EX results[], ULONG n) {
    return impl(p)->poll(results, n);
}

NTSTATUS control_cq_moderation(NDK_CQ* p, ULONG interval, ULONG count) {
    cq_impl* cq = impl(p);
    adapter_impl* ad = cq->adapter;
    if ((device_caps(ad) & hsi::DEVICE_CAP_CQ_MODERATION) == 0) {
        return STATUS_NOT_SUPPORTED;  // adapter flag 0x4 is clear too
    }
    // ndkpi.md 7: MAXULONG interval = count-controlled; MAXULONG count (or above the depth) =
    // interval-controlled; both = a bad mix. Interval 0 and count 0/1 mean "off".
    const bool interval_off = interval == MAXULONG;
    const bool count_off = count == MAXULONG || count > cq->depth;
    if (interval_off && count_off) {
        return STATUS_INVALID_PARAMETER_MIX;
    }
    // The NIC holds the event (CMD_MODIFY_CQ). Never PENDING: the driver waits for the answer,
    // so the newest settings are in force when the call returns.
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_MODIFY_CQ;
    c.u.modify_cq.cqn = cq->cqn;
    c.u.modify_cq.count = count <= 1 || count_off ? 0 : count;
    c.u.modify_cq.period_us = interval == 0 || interval_off ? 0 : interval;
    uint8_t status = hsi::CMD_OK;
    ad->commands({c}, true, [&status](uint8_t st) { status = st; });
    if (status == hsi::CMD_OK) {
        cq->moderation_interval_us = interval;
        cq->moderation_count = count;
    }
    // CMD_NO_RESOURCES (no moderation timer left) -> INSUFFICIENT_RESOURCES; BAD_OPCODE ->
    // NOT_SUPPORTED; DEVICE_FATAL -> INTERNAL_ERROR.
    return cmd_status_to_ntstatus(status);
}

// Resize: a new ring is given to the NIC with CMD_RESIZE_CQ. Producer and consumer indices
// carry over (the NIC writes the next CQE to slot producer & new mask), so the driver copies the
// CQEs it has not retrieved yet to their slots in the new ring, with the new ring's phase.
NTSTATUS resize_cq(NDK_CQ* p, ULONG depth, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx) {
    cq_impl* cq = impl(p);
    adapter_impl* ad = cq->adapter;
    if (depth == 0 || depth > usable_depth(ad->params.limits.max_cq_depth)) {
        return STATUS_INVALID_PARAMETER;
    }
    // Entries not yet retrieved must fit into the new depth.
    uint32_t queued = 0;
    while (queued < (1u << cq->log_size) && cq->valid_at(cq->consumer + queued)) {
        ++queued;
    }
    if (queued > depth) {
        return STATUS_INVALID_PARAMETER;
    }
    if (cq->consumer != cq->reported) {
        cq->write_doorbell(hsi::CQ_ARM_NONE);  // the NIC checks the new size against it
    }
    const uint32_t new_log = cq_log_size(depth, ad->params.limits.max_cq_depth);
    auto* new_ring =
        static_cast<hsi::cqe*>(ad->host.alloc((size_t{1} << new_log) * sizeof(hsi::cqe), true));
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_RESIZE_CQ;
    c.u.cq.cqn = cq->cqn;
    c.u.cq.log_depth = new_log;
    c.u.cq.ring_addr = ad->host.phys(new_ring);
    c.u.cq.msix_vector = hsi::MSIX_VECTOR_ASYNC;
    const bool sync = ad->sync();
    NTSTATUS result = STATUS_PENDING;
    ++cq->busy;
    ad->commands({c}, sync, [ad, cq, new_ring, new_log, depth, cb, ctx, sync, &result](uint8_t st) {
        const NTSTATUS s = cmd_status_to_ntstatus(st);
        if (s == STATUS_SUCCESS) {
            const uint32_t old_mask = (1u << cq->log_size) - 1;
            const uint32_t new_mask = (1u << new_log) - 1;
            for (uint32_t i = cq->consumer; cq->valid_at(i) && i - cq->consumer <= old_mask; ++i) {
                hsi::cqe e = cq->ring[i & old_mask];
                const bool phase = ((i >> new_log) & 1) == 0;
                e.flags = static_cast<uint8_t>((e.flags & ~hsi::CQE_FLAG_PHASE) |
                                               (phase ? hsi::CQE_FLAG_PHASE : 0));
                new_ring[i & new_mask] = e;
            }
            ad->host.free(cq->ring);
            cq->ring = new_ring;
            cq->log_size = new_log;
            cq->depth = depth;
            cq->report_threshold = cq_threshold(new_log, depth);
        } else {
            ad->host.free(new_ring);
        }
        --cq->busy;
        if (sync) {
            result = s;
        } else {
            cb(ctx, s);
        }
        ad->progress(cq);
    });
    return result;
}

}  // namespace rnic::ndk::provider
