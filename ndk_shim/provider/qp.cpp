// SPDX-License-Identifier: Apache-2.0
// Provider driver: queue pairs and shared receive queues. Work requests are written into the
// SQ/RQ rings in host memory (hsi::wqe_ctrl + segments) and announced by MMIO doorbells with the
// free-running producer index; NDK_OP_FLAG_DEFER holds the doorbell until the next non-deferred
// post (or an inline failure), so one doorbell covers a batch (ndkpi.md 6).
#include <algorithm>
#include <cstring>

#include "ndk_shim/provider/provider.h"
#include "ndk_shim/status_map.h"

namespace rnic::ndk::provider {

namespace {
uint32_t round64(uint32_t v) {
    return (v + 63) & ~63u;
}

uint8_t wqe_flags(ULONG f) {
    uint8_t w = 0;
    if (!(f & NDK_OP_FLAG_SILENT_SUCCESS)) {
        w |= hsi::WQE_FLAG_SIGNALED;
    }
    if (f & NDK_OP_FLAG_READ_FENCE) {
        w |= hsi::WQE_FLAG_FENCE;
    }
    if (f & NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT) {
        w |= hsi::WQE_FLAG_SOLICITED;
    }
    return w;
}

// Rights of a Bind / FastRegister (NDK_OP_FLAG_ALLOW_*) as hsi::mr_access.
uint32_t op_access(ULONG f) {
    uint32_t a = 0;
    if (f & NDK_OP_FLAG_ALLOW_REMOTE_READ) {
        a |= hsi::ACCESS_REMOTE_READ;
    }
    if (f & NDK_OP_FLAG_ALLOW_LOCAL_WRITE) {
        a |= hsi::ACCESS_LOCAL_WRITE;
    }
    if ((f & NDK_OP_FLAG_ALLOW_REMOTE_WRITE) == NDK_OP_FLAG_ALLOW_REMOTE_WRITE) {
        a |= hsi::ACCESS_REMOTE_WRITE | hsi::ACCESS_LOCAL_WRITE;
    }
    return a;
}

hsi::cmd_slot modify_cmd(uint32_t qpn, uint8_t state) {
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_MODIFY_QP;
    c.u.modify_qp.qpn = qpn;
    c.u.modify_qp.state = state;
    return c;
}

// Writes receive WQE `index` (header + SGEs) into a ring slot.
NTSTATUS write_recv(uint8_t* slot, uint32_t index, const NDK_SGE* sgl, ULONG n) {
    hsi::rq_wqe_hdr h{};
    h.wqe_index = static_cast<uint16_t>(index);
    h.num_sge = static_cast<uint8_t>(n);
    for (ULONG i = 0; i < n; ++i) {
        hsi::wqe_sge s{};
        s.addr = static_cast<uint64_t>(sgl[i].LogicalAddress.QuadPart);
        s.length = sgl[i].Length;
        s.lkey = sgl[i].MemoryRegionToken;
        std::memcpy(slot + sizeof(h) + i * sizeof(s), &s, sizeof(s));
    }
    std::memcpy(slot, &h, sizeof(h));
    return STATUS_SUCCESS;
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Posting
// ---------------------------------------------------------------------------------------------
void qp_impl::ring_sq(const uint8_t* wqe, uint32_t bytes, bool inline_data) {
    host_system& host = adapter->host;
    const uint64_t db = static_cast<uint64_t>(qpn) | static_cast<uint64_t>(sq_producer & 0xFFFF)
                                                         << 32;
    // mlx5 (rdma-core providers/mlx5/qp.c) BlueFlames a lone WQE only when it has inline data
    // unless MLX5_POST_SEND_PREFER_BF is set: host.wqe_push_inline_only.
    if (wqe != nullptr && host.config().wqe_push && bytes <= host.config().wqe_push_bytes &&
        bytes <= hsi::WQE_PUSH_MAX_SIZE && (inline_data || !host.config().wqe_push_inline_only)) {
        // WQE push: the whole WQE (one write-combined store of up to wqe_push_bytes) goes to
        // the NIC with the doorbell value in its control segment; no separate doorbell.
        uint8_t block[hsi::WQE_PUSH_MAX_SIZE];
        std::memcpy(block, wqe, bytes);
        hsi::wqe_ctrl c;
        std::memcpy(&c, block, sizeof(c));
        c.qpn = qpn;
        c.doorbell = db;
        std::memcpy(block, &c, sizeof(c));
        host.mmio_write(hsi::REG_WQE_PUSH, block, bytes);
        ++adapter->counters.wqe_pushes;
    } else {
        host.mmio_write64(hsi::REG_SQ_DOORBELL, db);
        ++adapter->counters.sq_doorbells;
    }
    doorbell_pending = false;
}

NTSTATUS qp_impl::fail(NTSTATUS status) {
    if (doorbell_pending) {
        ring_sq(nullptr, 0);  // earlier deferred requests go to hardware (ndkpi.md 6)
    }
    return status;
}

NTSTATUS qp_impl::post_sq(hsi::wqe_ctrl ctrl, const void* payload, uint32_t payload_bytes,
                          void* request_context, NDK_OPERATION_TYPE type, ULONG flags) {
    const uint32_t ring = 1u << sq_log;
    if (sq_producer - sq_consumer >= ring) {
        return fail(STATUS_INSUFFICIENT_RESOURCES);
    }
    const uint32_t slot = sq_producer & (ring - 1);
    uint8_t* w = sq_ring + static_cast<size_t>(slot) * sq_stride;
    const uint32_t bytes = round64(payload_bytes);
    ctrl.wqe_index = static_cast<uint16_t>(sq_producer);
    ctrl.size_bb = static_cast<uint8_t>(1 + bytes / 64);
    if (payload_bytes > 0) {
        std::memcpy(w + sizeof(hsi::wqe_ctrl), payload, payload_bytes);
        std::memset(w + sizeof(hsi::wqe_ctrl) + payload_bytes, 0, bytes - payload_bytes);
    }
    std::memcpy(w, &ctrl, sizeof(ctrl));
    sq_shadow[slot] = sq_shadow_entry{request_context, type};
    ++sq_producer;
    ++adapter->counters.wqes_posted;
    if (flags & NDK_OP_FLAG_DEFER) {
        doorbell_pending = true;
        return STATUS_SUCCESS;
    }
    // A doorbell that covers earlier deferred WQEs pushes nothing (as mlx5 uses BlueFlame only
    // for a doorbell of one WQE).
    if (doorbell_pending) {
        ring_sq(nullptr, 0);
    } else {
        ring_sq(w, ctrl.size_bb * 64u, (ctrl.flags & hsi::WQE_FLAG_INLINE) != 0);
    }
    return STATUS_SUCCESS;
}

void qp_impl::retire_sq(uint16_t wqe_index) {
    // A CQE for index i also retires every earlier (unsignalled) WQE of the SQ.
    sq_consumer += static_cast<uint16_t>(wqe_index - static_cast<uint16_t>(sq_consumer)) + 1u;
}

void qp_impl::retire_rq(uint16_t wqe_index) {
    rq_consumer += static_cast<uint16_t>(wqe_index - static_cast<uint16_t>(rq_consumer)) + 1u;
}

void srq_impl::retire(uint16_t wqe_index) {
    // SRQ receives may complete out of order across QPs: count them.
    (void)wqe_index;
    ++consumer;
}

namespace {
// Send, SendAndInvalidate, Write, Read.
NTSTATUS post_data(NDK_QP* p, void* rc, const NDK_SGE* sgl, ULONG nsge, ULONG flags, uint8_t opcode,
                   uint64_t remote_va, uint32_t rkey, uint32_t imm, NDK_OPERATION_TYPE type) {
    qp_impl* qp = impl(p);
    adapter_impl* ad = qp->adapter;
    ad->host.cpu(ad->host.config().post_ns);
    if (qp->state != qp_impl::CONNECTED) {
        return qp->fail(STATUS_CONNECTION_INVALID);
    }
    if (nsge > 0 && sgl == nullptr) {
        return qp->fail(STATUS_INVALID_PARAMETER);
    }
    uint64_t total = 0;
    for (ULONG i = 0; i < nsge; ++i) {
        total += sgl[i].Length;
    }
    if (total > ad->params.limits.max_message) {
        return qp->fail(STATUS_INVALID_PARAMETER);
    }
    hsi::wqe_ctrl c{};
    c.opcode = opcode;
    c.flags = wqe_flags(flags);
    c.total_length = static_cast<uint32_t>(total);
    c.imm_or_key = imm;
    c.remote_va = remote_va;
    c.rkey = rkey;
    if (opcode == hsi::WQE_READ && (flags & NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE) && nsge > 0) {
        c.flags |= hsi::WQE_FLAG_READ_LOCAL_INV;
        c.imm_or_key = sgl[0].MemoryRegionToken;
    }
    std::vector<uint8_t> payload;
    if ((flags & NDK_OP_FLAG_INLINE) && opcode != hsi::WQE_READ) {
        if (total > qp->max_inline) {
            return qp->fail(STATUS_INVALID_PARAMETER);
        }
        // Copied now: the consumer's buffer need only be valid until this call returns.
        payload.resize(total);
        size_t off = 0;
        for (ULONG i = 0; i < nsge; ++i) {
            if (sgl[i].Length > 0) {
                std::memcpy(payload.data() + off, sgl[i].VirtualAddress, sgl[i].Length);
            }
            off += sgl[i].Length;
        }
        c.flags |= hsi::WQE_FLAG_INLINE;
        c.num_sge = 0;
    } else {
        if (nsge > qp->max_send_sge) {
            return qp->fail(STATUS_INVALID_PARAMETER);
        }
        payload.resize(nsge * sizeof(hsi::wqe_sge));
        for (ULONG i = 0; i < nsge; ++i) {
            hsi::wqe_sge s{};
            s.addr = static_cast<uint64_t>(sgl[i].LogicalAddress.QuadPart);
            s.length = sgl[i].Length;
            s.lkey = sgl[i].MemoryRegionToken;
            std::memcpy(payload.data() + i * sizeof(s), &s, sizeof(s));
        }
        c.num_sge = static_cast<uint8_t>(nsge);
    }
    return qp->post_sq(c, payload.data(), static_cast<uint32_t>(payload.size()), rc, type, flags);
}
}  // namespace

NTSTATUS qp_send(NDK_QP* p, PVOID rc, CONST NDK_SGE* sgl, ULONG n, ULONG flags) {
    return post_data(p, rc, sgl, n, flags, hsi::WQE_SEND, 0, 0, 0, NdkOperationTypeSend);
}

NTSTATUS qp_send_and_invalidate(NDK_QP* p, PVOID rc, CONST NDK_SGE* sgl, ULONG n, ULONG flags,
                                UINT32 remote_token) {
    return post_data(p, rc, sgl, n, flags, hsi::WQE_SEND_INV, 0, 0, remote_token,
                     NdkOperationTypeSend);
}

NTSTATUS qp_write(NDK_QP* p, PVOID rc, CONST NDK_SGE* sgl, ULONG n, UINT64 va, UINT32 token,
                  ULONG flags) {
    return post_data(p, rc, sgl, n, flags, hsi::WQE_WRITE, va, token, 0, NdkOperationTypeWrite);
}

NTSTATUS qp_read(NDK_QP* p, PVOID rc, CONST NDK_SGE* sgl, ULONG n, UINT64 va, UINT32 token,
                 ULONG flags) {
    return post_data(p, rc, sgl, n, flags & ~NDK_OP_FLAG_INLINE, hsi::WQE_READ, va, token, 0,
                     NdkOperationTypeRead);
}

NTSTATUS qp_receive(NDK_QP* p, PVOID rc, CONST NDK_SGE* sgl, ULONG n) {
    qp_impl* qp = impl(p);
    adapter_impl* ad = qp->adapter;
    ad->host.cpu(ad->host.config().post_ns);
    if (qp->srq != nullptr) {
        return STATUS_INVALID_DEVICE_STATE;  // receives go to the SRQ
    }
    if (ad->fatal) {
        return STATUS_DEVICE_NOT_READY;  // EVENT_DEVICE_FATAL: the NIC is dead
    }
    if (n > qp->max_recv_sge || (n > 0 && sgl == nullptr)) {
        return STATUS_INVALID_PARAMETER;
    }
    const uint32_t ring = 1u << qp->rq_log;
    if (qp->rq_producer - qp->rq_consumer >= ring) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    const uint32_t slot = qp->rq_producer & (ring - 1);
    write_recv(qp->rq_ring + static_cast<size_t>(slot) * qp->rq_stride, qp->rq_producer, sgl, n);
    qp->rq_shadow[slot] = rc;
    ++qp->rq_producer;
    ++ad->counters.wqes_posted;
    ad->host.mmio_write64(
        hsi::REG_RQ_DOORBELL,
        static_cast<uint64_t>(qp->qpn) | static_cast<uint64_t>(qp->rq_producer & 0xFFFF) << 32);
    ++ad->counters.rq_doorbells;
    return STATUS_SUCCESS;
}

NTSTATUS qp_bind(NDK_QP* p, PVOID rc, NDK_MR* mrp, NDK_MW* mwp, PVOID va, SIZE_T len, ULONG flags) {
    qp_impl* qp = impl(p);
    adapter_impl* ad = qp->adapter;
    ad->host.cpu(ad->host.config().post_ns);
    if (qp->state != qp_impl::CONNECTED) {
        return qp->fail(STATUS_CONNECTION_INVALID);
    }
    if (mrp == nullptr || mwp == nullptr) {
        return qp->fail(STATUS_INVALID_PARAMETER);
    }
    mr_impl* mr = impl(mrp);
    mw_impl* mw = impl(mwp);
    const uint32_t access =
        op_access(flags & (NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE));
    if (!mr->registered) {
        return qp->fail(STATUS_INVALID_PARAMETER);
    }
    // Remote write on the window needs local write on the region (ndkpi.md 8): rights not
    // granted at registration fail inline (ndkpi.md 6), no CQE.
    if ((access & hsi::ACCESS_REMOTE_WRITE) && !(mr->access & hsi::ACCESS_LOCAL_WRITE)) {
        return qp->fail(STATUS_ACCESS_VIOLATION);
    }
    hsi::wqe_ctrl c{};
    c.opcode = hsi::WQE_BIND_MW;
    c.flags = wqe_flags(flags);
    hsi::bind_segment b{};
    b.mw_key = mw->key();
    b.mr_key = mr->key();
    b.va = reinterpret_cast<uint64_t>(va);
    b.length = len;
    b.access = access;  // the NIC checks remote write against the MR's local write right
    c.imm_or_key = b.mw_key;
    return qp->post_sq(c, &b, sizeof(b), rc, NdkOperationTypeBind, flags);
}

NTSTATUS qp_fast_register(NDK_QP* p, PVOID rc, NDK_MR* mrp, ULONG page_count,
                          CONST NDK_LOGICAL_ADDRESS* pages, ULONG fbo, SIZE_T length, PVOID base_va,
                          ULONG flags) {
    qp_impl* qp = impl(p);
    adapter_impl* ad = qp->adapter;
    ad->host.cpu(ad->host.config().post_ns);
    if (qp->state != qp_impl::CONNECTED) {
        return qp->fail(STATUS_CONNECTION_INVALID);
    }
    if (mrp == nullptr) {
        return qp->fail(STATUS_INVALID_PARAMETER);
    }
    mr_impl* mr = impl(mrp);
    if (!mr->fast_register || !mr->registered || page_count == 0 ||
        page_count > mr->page_capacity || pages == nullptr || fbo >= hsi::PAGE_SIZE ||
        length > static_cast<SIZE_T>(page_count) * hsi::PAGE_SIZE - fbo) {
        return qp->fail(STATUS_INVALID_PARAMETER);
    }
    const uint32_t access = op_access(flags);
    if ((access & (hsi::ACCESS_REMOTE_READ | hsi::ACCESS_REMOTE_WRITE)) && !mr->remote_access) {
        return qp->fail(STATUS_ACCESS_VIOLATION);
    }
    for (ULONG i = 0; i < page_count; ++i) {
        mr->fr_page_list[i] = static_cast<uint64_t>(pages[i].QuadPart);
    }
    mr->variant = (mr->variant + 1) & 0xFF;  // a new key per registration
    hsi::wqe_ctrl c{};
    c.opcode = hsi::WQE_FAST_REG;
    c.flags = wqe_flags(flags);
    hsi::fast_reg_segment f{};
    f.key = mr->key();
    f.access = access | hsi::ACCESS_FAST_REG;
    f.base_va = reinterpret_cast<uint64_t>(base_va);
    f.length = length;
    f.page_list_addr = ad->host.phys(mr->fr_page_list);
    f.page_count = page_count;
    f.first_byte_offset = fbo;
    c.imm_or_key = f.key;
    return qp->post_sq(c, &f, sizeof(f), rc, NdkOperationTypeFastRegister, flags);
}

NTSTATUS qp_invalidate(NDK_QP* p, PVOID rc, NDK_OBJECT_HEADER* obj, ULONG flags) {
    qp_impl* qp = impl(p);
    adapter_impl* ad = qp->adapter;
    ad->host.cpu(ad->host.config().post_ns);
    if (qp->state != qp_impl::CONNECTED) {
        return qp->fail(STATUS_CONNECTION_INVALID);
    }
    uint32_t key = 0;
    if (obj != nullptr && obj->ObjectType == NdkObjectTypeMr) {
        key = impl(reinterpret_cast<NDK_MR*>(obj))->key();
    } else if (obj != nullptr && obj->ObjectType == NdkObjectTypeMw) {
        key = impl(reinterpret_cast<NDK_MW*>(obj))->key();
    } else {
        return qp->fail(STATUS_INVALID_PARAMETER);
    }
    hsi::wqe_ctrl c{};
    c.opcode = hsi::WQE_LOCAL_INV;
    c.flags = wqe_flags(flags);
    c.imm_or_key = key;
    return qp->post_sq(c, nullptr, 0, rc, NdkOperationTypeInvalidate, flags);
}

// Flush: the QP goes to ERROR; the NIC completes everything outstanding on both queues with
// CQE_WR_FLUSH_ERR (STATUS_CANCELLED). Initiator posts after it fail inline.
VOID flush_qp(NDK_QP* p) {
    qp_impl* qp = impl(p);
    if (qp->doorbell_pending) {
        qp->ring_sq(nullptr, 0);
    }
    if (qp->state == qp_impl::CONNECTED || qp->state == qp_impl::CONNECTING) {
        qp->state = qp_impl::DISCONNECTED;
    }
    qp->adapter->commands({modify_cmd(qp->qpn, hsi::QPS_ERROR)}, false, [](uint8_t) {});
}

// ---------------------------------------------------------------------------------------------
// Create / close
// ---------------------------------------------------------------------------------------------
void qp_impl::teardown(std::function<void()> done) {
    if (connector != nullptr) {
        connector->qp = nullptr;
        connector = nullptr;
    }
    adapter_impl* ad = adapter;
    qp_impl* self = this;
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_DESTROY_QP;
    c.u.obj.handle = qpn;
    ad->commands({c}, ad->sync(), [ad, self, done](uint8_t) {
        ad->qp_table[self->qpn] = nullptr;
        ad->qpns.free(self->qpn);
        ad->host.free(self->sq_ring);
        ad->host.free(self->rq_ring);
        done();
    });
}

namespace {
NTSTATUS make_qp(NDK_PD* pdp, NDK_CQ* rcq, NDK_CQ* icq, NDK_SRQ* srqp, PVOID qpc, ULONG rq_depth,
                 ULONG sq_depth, ULONG max_rsge, ULONG max_isge, ULONG inline_size,
                 NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_QP** out) {
    pd_impl* pd = impl(pdp);
    adapter_impl* ad = pd->adapter;
    const hw::nic_limits& l = ad->params.limits;
    const uint32_t max_depth = usable_depth(l.max_qp_depth);  // rings are powers of two
    if (rcq == nullptr || icq == nullptr || sq_depth == 0 || sq_depth > max_depth ||
        (srqp == nullptr && (rq_depth == 0 || rq_depth > max_depth)) || max_isge > l.max_sge ||
        max_rsge > l.max_sge || inline_size > l.max_inline) {
        return STATUS_INVALID_PARAMETER;
    }
    const uint32_t qpn = ad->qpns.alloc();
    if (qpn == 0) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    auto* qp = new qp_impl;
    ad->init_header(qp, NdkObjectTypeQp, &qp_dispatch);
    qp->adapter = ad;
    qp->qpn = qpn;
    qp->pd = pd;
    qp->recv_cq = impl(rcq);
    qp->send_cq = impl(icq);
    qp->srq = srqp != nullptr ? impl(srqp) : nullptr;
    qp->context = qpc;
    qp->sq_depth = sq_depth;
    qp->rq_depth = srqp != nullptr ? 0 : rq_depth;
    qp->sq_log = log2_ceil(sq_depth);
    qp->rq_log = srqp != nullptr ? 0 : log2_ceil(rq_depth);
    qp->max_send_sge = max_isge;
    qp->max_recv_sge = max_rsge;
    qp->max_inline = inline_size;
    // SQ slot: control segment + room for the largest data part (SGEs, inline data, or a
    // 64 B fast-register / bind segment).
    qp->sq_stride = 64 + round64(std::max<uint32_t>({max_isge * 16u, inline_size, 64u}));
    qp->rq_stride = 16 + 16 * std::max<uint32_t>(1, max_rsge);
    qp->sq_ring =
        static_cast<uint8_t*>(ad->host.alloc((size_t{1} << qp->sq_log) * qp->sq_stride, true));
    qp->rq_ring =
        static_cast<uint8_t*>(ad->host.alloc((size_t{1} << qp->rq_log) * qp->rq_stride, true));
    qp->sq_shadow.resize(size_t{1} << qp->sq_log);
    qp->rq_shadow.resize(size_t{1} << qp->rq_log);
    ad->qp_table[qpn] = qp;

    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_CREATE_QP;
    c.u.qp.qpn = qpn;
    c.u.qp.pdn = pd->pdn;
    c.u.qp.send_cqn = qp->send_cq->cqn;
    c.u.qp.recv_cqn = qp->recv_cq->cqn;
    c.u.qp.srqn = qp->srq != nullptr ? qp->srq->srqn : 0;
    c.u.qp.sq_log_depth = static_cast<uint16_t>(qp->sq_log);
    c.u.qp.rq_log_depth = static_cast<uint16_t>(qp->rq_log);
    c.u.qp.sq_addr = ad->host.phys(qp->sq_ring);
    c.u.qp.rq_addr = ad->host.phys(qp->rq_ring);
    c.u.qp.sq_stride = static_cast<uint16_t>(qp->sq_stride);
    c.u.qp.rq_stride = static_cast<uint16_t>(qp->rq_stride);
    c.u.qp.max_inline = static_cast<uint16_t>(inline_size);
    // The NIC creates the QP in INIT: receives can be posted before the connection exists.
    const bool sync = ad->sync();
    NTSTATUS result = STATUS_PENDING;
    ad->commands({c}, sync, [ad, qp, cb, ctx, sync, &result](uint8_t st) {
        const NTSTATUS s = cmd_status_to_ntstatus(st);
        if (s == STATUS_SUCCESS) {
            qp->add_antecedent(qp->pd);
            qp->add_antecedent(qp->recv_cq);
            qp->add_antecedent(qp->send_cq);
            if (qp->srq != nullptr) {
                qp->add_antecedent(qp->srq);
            }
        } else {
            hsi::cmd_slot d{};
            d.opcode = hsi::CMD_DESTROY_QP;  // in case the create half succeeded
            d.u.obj.handle = qp->qpn;
            ad->commands({d}, false, [](uint8_t) {});
            ad->qp_table[qp->qpn] = nullptr;
            ad->qpns.free(qp->qpn);
            ad->host.free(qp->sq_ring);
            ad->host.free(qp->rq_ring);
            delete qp;
        }
        if (sync) {
            result = s;
        } else {
            cb(ctx, s, s == STATUS_SUCCESS ? &qp->Header : nullptr);
        }
    });
    if (sync && result == STATUS_SUCCESS) {
        *out = qp;
    }
    return result;
}
}  // namespace

NTSTATUS create_qp(NDK_PD* pd, NDK_CQ* rcq, NDK_CQ* icq, PVOID qpc, ULONG rq_depth, ULONG sq_depth,
                   ULONG max_rsge, ULONG max_isge, ULONG inline_size, NDK_FN_CREATE_COMPLETION cb,
                   PVOID ctx, NDK_QP** out) {
    return make_qp(pd, rcq, icq, nullptr, qpc, rq_depth, sq_depth, max_rsge, max_isge, inline_size,
                   cb, ctx, out);
}

NTSTATUS create_qp_with_srq(NDK_PD* pd, NDK_CQ* rcq, NDK_CQ* icq, NDK_SRQ* srq, PVOID qpc,
                            ULONG sq_depth, ULONG max_isge, ULONG inline_size,
                            NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_QP** out) {
    if (srq == nullptr) {
        return STATUS_INVALID_PARAMETER;
    }
    return make_qp(pd, rcq, icq, srq, qpc, 0, sq_depth, 0, max_isge, inline_size, cb, ctx, out);
}

// ---------------------------------------------------------------------------------------------
// SRQ
// ---------------------------------------------------------------------------------------------
void srq_impl::teardown(std::function<void()> done) {
    adapter_impl* ad = adapter;
    srq_impl* self = this;
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_DESTROY_SRQ;
    c.u.obj.handle = srqn;
    ad->commands({c}, ad->sync(), [ad, self, done](uint8_t) {
        ad->srq_table[self->srqn] = nullptr;
        ad->srqns.free(self->srqn);
        ad->host.free(self->ring);
        done();
    });
}

void srq_impl::on_error() {
    if (dead) {
        return;
    }
    dead = true;
    if (notify_cb == nullptr || notify_threshold == 0 || closing) {
        return;  // not armed: the next NdkModifySrq that arms it hears about it
    }
    notify_threshold = 0;  // one-shot
    dead_reported = true;
    ++busy;
    notify_cb(notify_ctx, STATUS_INTERNAL_ERROR);
    --busy;
    adapter->progress(this);
}

NTSTATUS create_srq(NDK_PD* pdp, ULONG depth, ULONG max_sge, ULONG threshold,
                    NDK_FN_SRQ_NOTIFICATION_CALLBACK notify, PVOID notify_ctx, GROUP_AFFINITY*,
                    NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_SRQ** out) {
    pd_impl* pd = impl(pdp);
    adapter_impl* ad = pd->adapter;
    const hw::nic_limits& l = ad->params.limits;
    const uint32_t max_depth = usable_depth(l.max_srq_depth);  // rings are powers of two
    if (depth == 0 || depth > max_depth || max_sge > l.max_sge || threshold > depth) {
        return STATUS_INVALID_PARAMETER;
    }
    const uint32_t srqn = ad->srqns.alloc();
    if (srqn == 0) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    auto* srq = new srq_impl;
    ad->init_header(srq, NdkObjectTypeSrq, &srq_dispatch);
    srq->adapter = ad;
    srq->srqn = srqn;
    srq->pd = pd;
    srq->depth = depth;
    // The ring is sized for the adapter's maximum so NdkModifySrq can grow the depth in place.
    srq->log_size = log2_ceil(max_depth);
    srq->max_sge = max_sge;
    srq->stride = 16 + 16 * std::max<uint32_t>(1, max_sge);
    srq->ring =
        static_cast<uint8_t*>(ad->host.alloc((size_t{1} << srq->log_size) * srq->stride, true));
    srq->shadow.resize(size_t{1} << srq->log_size);
    srq->notify_threshold = notify != nullptr ? threshold : 0;
    srq->notify_cb = notify;
    srq->notify_ctx = notify_ctx;
    ad->srq_table[srqn] = srq;

    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_CREATE_SRQ;
    c.u.srq.srqn = srqn;
    c.u.srq.pdn = pd->pdn;
    c.u.srq.ring_addr = ad->host.phys(srq->ring);
    c.u.srq.log_depth = static_cast<uint16_t>(srq->log_size);
    c.u.srq.stride = static_cast<uint16_t>(srq->stride);
    c.u.srq.limit = srq->notify_threshold;
    const bool sync = ad->sync();
    NTSTATUS result = STATUS_PENDING;
    ad->commands({c}, sync, [ad, srq, cb, ctx, sync, &result](uint8_t st) {
        const NTSTATUS s = cmd_status_to_ntstatus(st);
        if (s == STATUS_SUCCESS) {
            srq->add_antecedent(srq->pd);
        } else {
            ad->srq_table[srq->srqn] = nullptr;
            ad->srqns.free(srq->srqn);
            ad->host.free(srq->ring);
            delete srq;
        }
        if (sync) {
            result = s;
        } else {
            cb(ctx, s, s == STATUS_SUCCESS ? &srq->Header : nullptr);
        }
    });
    if (sync && result == STATUS_SUCCESS) {
        *out = srq;
    }
    return result;
}

NTSTATUS modify_srq(NDK_SRQ* p, ULONG depth, ULONG threshold, NDK_FN_REQUEST_COMPLETION cb,
                    PVOID ctx) {
    srq_impl* srq = impl(p);
    adapter_impl* ad = srq->adapter;
    const uint32_t new_depth = depth != 0 ? depth : srq->depth;
    if (new_depth > usable_depth(ad->params.limits.max_srq_depth) || threshold > new_depth ||
        new_depth < srq->producer - srq->consumer) {
        return STATUS_INVALID_PARAMETER;
    }
    srq->depth = new_depth;
    if (threshold == 0) {
        return STATUS_SUCCESS;  // keeps the current threshold and arming
    }
    if (srq->dead) {
        // The SRQ died (EVENT_SRQ_ERROR / device fatal) with no arm in place: this arm gets
        // STATUS_INTERNAL_ERROR at once (from a DPC, once); the NIC is not asked.
        if (srq->notify_cb != nullptr && !srq->dead_reported) {
            srq->dead_reported = true;
            ++srq->busy;
            ad->host.queue_dpc([ad, srq] {
                if (!srq->closing) {
                    srq->notify_cb(srq->notify_ctx, STATUS_INTERNAL_ERROR);
                }
                --srq->busy;
                ad->progress(srq);
            });
        }
        return STATUS_SUCCESS;
    }
    srq->notify_threshold = threshold;
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_MODIFY_SRQ;
    c.u.srq.srqn = srq->srqn;
    c.u.srq.pdn = srq->pd->pdn;
    c.u.srq.ring_addr = ad->host.phys(srq->ring);
    c.u.srq.log_depth = static_cast<uint16_t>(srq->log_size);
    c.u.srq.stride = static_cast<uint16_t>(srq->stride);
    c.u.srq.limit = threshold;
    const bool sync = ad->sync();
    NTSTATUS result = STATUS_PENDING;
    ++srq->busy;
    ad->commands({c}, sync, [ad, srq, threshold, cb, ctx, sync, &result](uint8_t st) {
        const NTSTATUS s = cmd_status_to_ntstatus(st);
        // Already below the threshold: notify right away (from a DPC).
        if (s == STATUS_SUCCESS && srq->notify_cb != nullptr &&
            srq->producer - srq->consumer < threshold) {
            ++srq->busy;
            ad->host.queue_dpc([ad, srq] {
                if (srq->notify_threshold != 0 && !srq->closing) {
                    srq->notify_threshold = 0;
                    srq->notify_cb(srq->notify_ctx, STATUS_SUCCESS);
                }
                --srq->busy;
                ad->progress(srq);
            });
        }
        --srq->busy;
        if (sync) {
            result = s;
        } else {
            cb(ctx, s);
        }
        ad->progress(srq);
    });
    return result;
}

NTSTATUS srq_receive(NDK_SRQ* p, PVOID rc, CONST NDK_SGE* sgl, ULONG n) {
    srq_impl* srq = impl(p);
    adapter_impl* ad = srq->adapter;
    ad->host.cpu(ad->host.config().post_ns);
    if (ad->fatal || srq->dead) {
        return STATUS_DEVICE_NOT_READY;  // the NIC takes no receives from a dead SRQ
    }
    if (n > srq->max_sge || (n > 0 && sgl == nullptr)) {
        return STATUS_INVALID_PARAMETER;
    }
    if (srq->producer - srq->consumer >= srq->depth) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    const uint32_t ring = 1u << srq->log_size;
    const uint32_t slot = srq->producer & (ring - 1);
    write_recv(srq->ring + static_cast<size_t>(slot) * srq->stride, srq->producer, sgl, n);
    srq->shadow[slot] = rc;
    ++srq->producer;
    ++ad->counters.wqes_posted;
    ad->host.mmio_write64(hsi::REG_RQ_DOORBELL,
                          static_cast<uint64_t>(srq->srqn) | hsi::RQ_DOORBELL_SRQ |
                              static_cast<uint64_t>(srq->producer & 0xFFFF) << 32);
    ++ad->counters.rq_doorbells;
    return STATUS_SUCCESS;
}

}  // namespace rnic::ndk::provider
