// SPDX-License-Identifier: Apache-2.0
// The scenario workload: NDK consumer code on both nodes and the payload checker.
#include "testbench/scenario/workload.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "testbench/scenario/pattern.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

namespace rnic::scenario {

namespace {

// One asynchronous NDK request. The provider either finishes it inline (any status but
// STATUS_PENDING, no callback) or returns STATUS_PENDING and calls back exactly once, from the
// host's DPC thread; the consumer thread sleeps on the event meanwhile (ndkpi.md 5).
struct async_call {
    sc_core::sc_event event;
    bool done = false;
    NTSTATUS status = STATUS_PENDING;
    NDK_OBJECT_HEADER* object = nullptr;

    static VOID on_create(PVOID ctx, NTSTATUS st, NDK_OBJECT_HEADER* obj) {
        auto* c = static_cast<async_call*>(ctx);
        c->object = obj;
        c->complete(st);
    }
    static VOID on_request(PVOID ctx, NTSTATUS st) { static_cast<async_call*>(ctx)->complete(st); }
    static VOID on_close(PVOID ctx) { static_cast<async_call*>(ctx)->complete(STATUS_SUCCESS); }

    void complete(NTSTATUS st) {
        status = st;
        done = true;
        event.notify();
    }
    // `returned` is what the provider call returned; the final status of the request.
    NTSTATUS wait(NTSTATUS returned) {
        if (returned != STATUS_PENDING) {
            return returned;
        }
        while (!done) {
            sc_core::wait(event);
        }
        return status;
    }
};

// The object of a create call: from the out-parameter when it finished inline, from the create
// completion when it was pending (every NDK object starts with its NDK_OBJECT_HEADER).
template <typename T>
T* created(NTSTATUS returned, T* out, const async_call& c) {
    return returned == STATUS_PENDING ? reinterpret_cast<T*>(c.object) : out;
}

SOCKADDR_IN sockaddr_of(uint32_t ip, uint16_t port) {
    SOCKADDR_IN a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(ip);
    return a;
}

NDK_OPERATION_TYPE ndk_type(operation op) {
    switch (op) {
        case operation::WRITE:
            return NdkOperationTypeWrite;
        case operation::SEND:
            return NdkOperationTypeSend;
        case operation::READ:
            return NdkOperationTypeRead;
        case operation::MIXED:
            break;  // never asked: each message has its own operation
    }
    return NdkOperationTypeWrite;
}

constexpr ULONG REAP_BATCH = 16;            // NDK_RESULT_EX entries per NdkGetCqResultsEx
constexpr uint64_t MDL_CHUNK = 4ull << 20;  // one MDL's PFN array stays far below CSHORT Size
constexpr size_t MAX_FAILURES = 20;         // failures listed; the rest are counted
}  // namespace

workload::workload(sc_core::sc_module_name name, const scenario_config& cfg,
                   std::array<node*, NODES> nodes, hw::sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_w(cfg.workload) {
    const uint32_t qps = m_w.qps;
    m_total = m_w.messages;
    m_per_qp.assign(qps, m_total / qps);
    for (uint64_t q = 0; q < m_total % qps; ++q) {
        ++m_per_qp[q];
    }
    // Slots: at most queue_depth messages are in flight per QP, so a ring of 2 x queue_depth
    // never overwrites a message still in flight and leaves a WRITE's data queue_depth
    // messages to land before its target slot is checked and reused.
    m_slots = std::max<uint64_t>(1, std::min<uint64_t>(m_per_qp[0], 2ull * m_w.queue_depth));
    m_stride = std::max<uint64_t>(64, (m_w.message_bytes + 63) / 64 * 64);
    m_region_bytes = uint64_t{qps} * m_slots * m_stride;
    m_regions = m_w.op == operation::MIXED ? 3 : 1;

    m_remote.resize(qps);
    m_next.assign(qps, 0);
    m_done.assign(qps, 0);
    m_limit = m_per_qp;
    m_limit_total = m_total;
    m_last_write.assign(uint64_t{qps} * m_slots, 0);
    m_read_checked.assign(qps, 0);
    m_post_time.resize(uint64_t{qps} * m_w.queue_depth);
    m_send_index.resize(qps);
    if (has_sends(m_w)) {
        for (uint32_t q = 0; q < qps; ++q) {
            for (uint64_t i = 0; i < m_per_qp[q]; ++i) {
                if (operation_of(m_w, q, i) == operation::SEND) {
                    m_send_index[q].push_back(i);
                }
            }
            m_recv_total += m_send_index[q].size();
        }
    }
    m_recv_posted.assign(qps, 0);
    m_recv_done.assign(qps, 0);
    m_latency_ns.reserve(m_total / m_w.signal_every + qps);

    for (size_t i = 0; i < NODES; ++i) {
        side& s = m_side[i];
        s.owner = this;
        s.index = i;
        s.n = nodes[i];
        s.qps.assign(qps, nullptr);
        s.connectors.assign(qps, nullptr);
        const std::string b = std::string(this->name()) + ".node" + std::to_string(i);
        auto& c = s.counters;
        auto& st = ctx.stats;
        st.add(b, "posted", c.posted, "count", "WRITE/SEND/READ work requests posted");
        st.add(b, "receives_posted", c.receives_posted, "count", "receive work requests posted");
        st.add(b, "completions", c.completions, "count", "completions reaped, all types");
        st.add(b, "write_completions", c.write_completions, "count", "successful WRITE CQEs");
        st.add(b, "send_completions", c.send_completions, "count", "successful SEND CQEs");
        st.add(b, "read_completions", c.read_completions, "count", "successful READ CQEs");
        st.add(b, "receive_completions", c.receive_completions, "count", "successful receive CQEs");
        st.add(b, "receive_bytes", c.receive_bytes, "bytes",
               "BytesTransferred of successful receives");
        st.add(b, "error_completions", c.error_completions, "count",
               "completions with a status other than STATUS_SUCCESS");
        st.add(b, "unexpected_completions", c.unexpected_completions, "count",
               "completions of a type, QP or request this node did not post");
        st.add(b, "empty_polls", c.empty_polls, "count", "NdkGetCqResultsEx calls that found none");
        st.add(b, "sleeps", c.sleeps, "count",
               "waits for completion activity (polling) or a CQ notification (events)");
        if (ctx.vcd != nullptr) {
            sc_core::sc_trace(ctx.vcd, s.outstanding, b + ".outstanding");
        }
    }

    SC_HAS_PROCESS(workload);
    SC_THREAD(initiator_thread);
    SC_THREAD(target_thread);
}

// --------------------------------------------------------------------------------------------
// Failures
// --------------------------------------------------------------------------------------------

void workload::record_failure(const std::string& what) {
    if (m_failures.size() < MAX_FAILURES) {
        m_failures.push_back(what);
    } else {
        ++m_failures_dropped;
    }
}

NTSTATUS workload::check(side& s, NTSTATUS st, const char* what) {
    if (st != STATUS_SUCCESS) {
        fail(s, fmt::format("{} returned 0x{:08x}", what, static_cast<uint32_t>(st)));
    }
    return st;
}

void workload::fail(side& s, const std::string& what) {
    record_failure(fmt::format("node{}: {}", s.index, what));
    // The other node may wait forever for this one: end the run now.
    sc_core::sc_stop();
    throw setup_failed{};
}

void workload::check_bytes(uint64_t key, const uint8_t* p) {
    const uint64_t bad = pattern_mismatches(key, p, m_w.message_bytes);
    m_bytes_checked += m_w.message_bytes;
    m_mismatches += bad;
}

// --------------------------------------------------------------------------------------------
// Consumer callbacks (DPC thread): hand the event to the consumer thread.
// --------------------------------------------------------------------------------------------

VOID workload::on_cq_notification(PVOID ctx, NTSTATUS status) {
    auto* s = static_cast<side*>(ctx);
    if (status != STATUS_SUCCESS) {
        s->owner->record_failure(fmt::format("node{}: CQ notification with status 0x{:08x}",
                                             s->index, static_cast<uint32_t>(status)));
    }
    s->cq_notified = true;
    s->wake.notify();
}

VOID workload::on_connect_event(PVOID ctx, NDK_CONNECTOR* connector) {
    auto* s = static_cast<side*>(ctx);
    s->incoming.push_back(connector);
    s->wake.notify();
}

VOID workload::on_disconnect_event(PVOID ctx) {
    auto* s = static_cast<side*>(ctx);
    ++s->disconnects;
    s->wake.notify();
}

// --------------------------------------------------------------------------------------------
// Setup
// --------------------------------------------------------------------------------------------

void workload::open(side& s, ULONG cq_depth, ULONG sq_depth, ULONG rq_depth, ULONG mr_flags) {
    const node_config& nc = m_cfg.topology.nodes[s.index];
    ndk::adapter_params p;
    p.node_id = static_cast<uint32_t>(s.index);
    p.mac = nc.mac;
    p.ip = nc.ip;
    p.limits = m_cfg.rnic.limits;
    p.default_mtu = nc.mtu;
    p.timeout_log = static_cast<uint8_t>(m_w.timeout_log);
    p.retry_count = static_cast<uint8_t>(m_w.retry_count);
    p.rnr_retry = static_cast<uint8_t>(m_w.rnr_retry);
    check(s, ndk::open_adapter(s.n->host, p, &s.adapter), "open_adapter");

    ULONG info_size = sizeof(s.info);
    check(s, s.adapter->Dispatch->NdkQueryAdapterInfo(s.adapter, &s.info, &info_size),
          "NdkQueryAdapterInfo");
    if (sq_depth > s.info.MaxInitiatorQueueDepth || rq_depth > s.info.MaxReceiveQueueDepth ||
        cq_depth > s.info.MaxCqDepth || m_w.message_bytes > s.info.MaxTransferLength ||
        m_w.inline_threshold > s.info.MaxInlineDataSize) {
        fail(s, fmt::format("adapter limits (SQ {}, RQ {}, CQ {}, transfer {}, inline {}) do not "
                            "fit the workload (SQ {}, RQ {}, CQ {}, message {}, inline {})",
                            s.info.MaxInitiatorQueueDepth, s.info.MaxReceiveQueueDepth,
                            s.info.MaxCqDepth, s.info.MaxTransferLength, s.info.MaxInlineDataSize,
                            sq_depth, rq_depth, cq_depth, m_w.message_bytes, m_w.inline_threshold));
    }

    {
        async_call c;
        NDK_PD* pd = nullptr;
        const NTSTATUS st =
            s.adapter->Dispatch->NdkCreatePd(s.adapter, async_call::on_create, &c, &pd);
        check(s, c.wait(st), "NdkCreatePd");
        s.pd = created(st, pd, c);
    }
    {
        async_call c;
        NDK_CQ* cq = nullptr;
        const NTSTATUS st = s.adapter->Dispatch->NdkCreateCq(
            s.adapter, cq_depth, on_cq_notification, &s, nullptr, async_call::on_create, &c, &cq);
        check(s, c.wait(st), "NdkCreateCq");
        s.cq = created(st, cq, c);
    }

    // One buffer for all QPs' rings, real process memory shared with the simulated DRAM,
    // registered as one MR over a chain of MDLs.
    s.buffer_bytes = (s.index == 1 ? m_regions : 1) * m_region_bytes;
    s.buffer = static_cast<uint8_t*>(s.n->host.alloc(s.buffer_bytes));
    MDL** link = &s.mdl;
    for (uint64_t off = 0; off < s.buffer_bytes; off += MDL_CHUNK) {
        *link = s.n->host.build_mdl(s.buffer + off, std::min(MDL_CHUNK, s.buffer_bytes - off));
        link = &(*link)->Next;
    }
    {
        async_call c;
        NDK_MR* mr = nullptr;
        const NTSTATUS st =
            s.pd->Dispatch->NdkCreateMr(s.pd, FALSE, async_call::on_create, &c, &mr);
        check(s, c.wait(st), "NdkCreateMr");
        s.mr = created(st, mr, c);
    }
    {
        async_call c;
        const NTSTATUS st = s.mr->Dispatch->NdkRegisterMr(s.mr, s.mdl, s.buffer_bytes, mr_flags,
                                                          async_call::on_request, &c);
        check(s, c.wait(st), "NdkRegisterMr");
        s.local_token = s.mr->Dispatch->NdkGetLocalTokenFromMr(s.mr);
        s.remote_token = s.mr->Dispatch->NdkGetRemoteTokenFromMr(s.mr);
    }

    for (uint32_t q = 0; q < m_w.qps; ++q) {
        async_call c;
        NDK_QP* qp = nullptr;
        const NTSTATUS st = s.pd->Dispatch->NdkCreateQp(
            s.pd, s.cq, s.cq, reinterpret_cast<PVOID>(uintptr_t{q}), rq_depth, sq_depth, 1, 1,
            m_w.inline_threshold, async_call::on_create, &c, &qp);
        check(s, c.wait(st), "NdkCreateQp");
        s.qps[q] = created(st, qp, c);
    }
}

void workload::connect_all(side& s) {
    const uint32_t my_ip = m_cfg.topology.nodes[0].ip;
    const uint32_t peer_ip = m_cfg.topology.nodes[1].ip;
    for (uint32_t q = 0; q < m_w.qps; ++q) {
        {
            async_call c;
            NDK_CONNECTOR* conn = nullptr;
            const NTSTATUS st = s.adapter->Dispatch->NdkCreateConnector(
                s.adapter, async_call::on_create, &c, &conn);
            check(s, c.wait(st), "NdkCreateConnector");
            s.connectors[q] = created(st, conn, c);
        }
        NDK_CONNECTOR* conn = s.connectors[q];
        SOCKADDR_IN src = sockaddr_of(my_ip, 0);  // port 0: ephemeral
        SOCKADDR_IN dst = sockaddr_of(peer_ip, PORT);
        connect_private mine{MAGIC, q};
        {
            async_call c;
            const NTSTATUS st = conn->Dispatch->NdkConnect(
                conn, s.qps[q], reinterpret_cast<PSOCKADDR>(&src), sizeof(src),
                reinterpret_cast<PSOCKADDR>(&dst), sizeof(dst), s.info.MaxInboundReadLimit,
                s.info.MaxOutboundReadLimit, &mine, sizeof(mine), async_call::on_request, &c);
            check(s, c.wait(st), "NdkConnect");
        }
        // The passive side's accept carries where this QP's remote ring is.
        uint8_t data[256] = {};
        ULONG len = sizeof(data);
        ULONG ird = 0;
        ULONG ord = 0;
        check(s, conn->Dispatch->NdkGetConnectionData(conn, &ird, &ord, data, &len),
              "NdkGetConnectionData");
        accept_private theirs{};
        std::memcpy(&theirs, data, std::min<size_t>(len, sizeof(theirs)));
        if (len < sizeof(theirs) || theirs.magic != MAGIC) {
            fail(s, fmt::format("QP {}: accept private data of {} bytes is not the workload's", q,
                                len));
        }
        m_remote[q] = {theirs.va, theirs.token};
        {
            async_call c;
            const NTSTATUS st = conn->Dispatch->NdkCompleteConnect(conn, on_disconnect_event, &s,
                                                                   async_call::on_request, &c);
            check(s, c.wait(st), "NdkCompleteConnect");
        }
    }
}

void workload::accept_all(side& s) {
    for (uint32_t accepted = 0; accepted < m_w.qps;) {
        while (s.incoming.empty()) {
            sc_core::wait(s.wake);
        }
        NDK_CONNECTOR* conn = s.incoming.front();
        s.incoming.pop_front();
        uint8_t data[256] = {};
        ULONG len = sizeof(data);
        ULONG ird = 0;
        ULONG ord = 0;
        check(s, conn->Dispatch->NdkGetConnectionData(conn, &ird, &ord, data, &len),
              "NdkGetConnectionData");
        connect_private theirs{};
        std::memcpy(&theirs, data, std::min<size_t>(len, sizeof(theirs)));
        if (len < sizeof(theirs) || theirs.magic != MAGIC || theirs.qp_index >= m_w.qps ||
            s.connectors[theirs.qp_index] != nullptr) {
            conn->Dispatch->NdkReject(conn, nullptr, 0);
            fail(s, fmt::format("rejected a connect request with {} bytes of private data", len));
        }
        const uint32_t q = theirs.qp_index;
        s.connectors[q] = conn;
        accept_private mine{MAGIC, s.remote_token,
                            static_cast<uint64_t>(reinterpret_cast<uintptr_t>(slot_ptr(s, q, 0)))};
        async_call c;
        const NTSTATUS st = conn->Dispatch->NdkAccept(
            conn, s.qps[q], s.info.MaxInboundReadLimit, s.info.MaxOutboundReadLimit, &mine,
            sizeof(mine), on_disconnect_event, &s, async_call::on_request, &c);
        check(s, c.wait(st), "NdkAccept");
        ++accepted;
    }
}

// --------------------------------------------------------------------------------------------
// Data path
// --------------------------------------------------------------------------------------------

void workload::post_receive(side& s, uint32_t q, uint64_t j) {
    uint8_t* p = slot_ptr(s, q, j % m_slots, region_of(operation::SEND));
    std::memset(p, POISON, m_w.message_bytes);
    NDK_SGE sge{};
    sge.VirtualAddress = p;
    sge.Length = static_cast<ULONG>(m_w.message_bytes);
    sge.MemoryRegionToken = s.local_token;
    NDK_QP* qp = s.qps[q];
    check(s,
          qp->Dispatch->NdkReceive(qp, reinterpret_cast<PVOID>(uintptr_t{j}), &sge,
                                   m_w.message_bytes > 0 ? 1 : 0),
          "NdkReceive");
    ++m_recv_posted[q];
    ++s.counters.receives_posted;
}

void workload::post_message(side& s, uint32_t q, uint64_t i) {
    const uint64_t slot = i % m_slots;
    uint8_t* local = slot_ptr(s, q, slot);
    const size_t len = m_w.message_bytes;
    const operation op = operation_of(m_w, q, i);
    switch (op) {
        case operation::WRITE: {
            uint64_t& prev = m_last_write[uint64_t{q} * m_slots + slot];
            if (prev != 0) {
                // The previous WRITE into this target slot (message prev - 1 <= i - slots)
                // completed at least queue_depth messages ago: its bytes are in the slot this
                // one is about to overwrite.
                check_bytes(pattern_key(m_w.seed, q, prev - 1), slot_ptr(m_side[1], q, slot));
            }
            prev = i + 1;
            pattern_fill(pattern_key(m_w.seed, q, i), local, len);
            break;
        }
        case operation::SEND:
            pattern_fill(pattern_key(m_w.seed, q, i), local, len);
            break;
        case operation::READ:
        case operation::MIXED:
            std::memset(local, POISON, len);
            break;
    }

    NDK_SGE sge{};
    sge.VirtualAddress = local;
    sge.Length = static_cast<ULONG>(len);
    sge.MemoryRegionToken = s.local_token;
    const ULONG nsge = len > 0 ? 1 : 0;
    const bool last = i + 1 == m_per_qp[q];
    const bool signaled = (i + 1) % m_w.signal_every == 0 || last;
    ULONG flags = signaled ? 0 : NDK_OP_FLAG_SILENT_SUCCESS;
    if (op != operation::READ && m_w.inline_threshold > 0 && len <= m_w.inline_threshold) {
        flags |= NDK_OP_FLAG_INLINE;
    }
    const uint64_t remote = m_remote[q].va + region_of(op) * m_region_bytes + slot * m_stride;
    const auto ctx = reinterpret_cast<PVOID>(static_cast<uintptr_t>(i));
    NDK_QP* qp = s.qps[q];

    // Latency starts before the post call: it includes the CPU time of posting, as perftest's.
    m_post_time[uint64_t{q} * m_w.queue_depth + i % m_w.queue_depth] = sc_core::sc_time_stamp();
    NTSTATUS st = STATUS_SUCCESS;
    switch (op) {
        case operation::WRITE:
            st = qp->Dispatch->NdkWrite(qp, ctx, &sge, nsge, remote, m_remote[q].token, flags);
            break;
        case operation::SEND:
            st = qp->Dispatch->NdkSend(qp, ctx, &sge, nsge, flags);
            break;
        case operation::READ:
        case operation::MIXED:  // operation_of never returns MIXED
            st = qp->Dispatch->NdkRead(qp, ctx, &sge, nsge, remote, m_remote[q].token, flags);
            break;
    }
    if (st != STATUS_SUCCESS) {
        // No completion will come for it (ndkpi.md 6): stop this QP where it is.
        record_failure(fmt::format("node0: QP {} message {}: post returned 0x{:08x}", q, i,
                                   static_cast<uint32_t>(st)));
        stop_posting(q, i);
        return;
    }
    ++m_next[q];
    ++s.counters.posted;
    ++s.outstanding;
}

bool workload::reap(side& s) {
    NDK_RESULT_EX results[REAP_BATCH];
    const ULONG n = s.cq->Dispatch->NdkGetCqResultsEx(s.cq, results, REAP_BATCH);
    if (n == 0) {
        ++s.counters.empty_polls;
        return false;
    }
    for (ULONG k = 0; k < n; ++k) {
        on_completion(s, results[k]);
    }
    return true;
}

void workload::on_completion(side& s, const NDK_RESULT_EX& r) {
    auto& c = s.counters;
    ++c.completions;
    const auto q = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(r.QPContext));
    const auto idx = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(r.RequestContext));
    const bool ok = r.Status == STATUS_SUCCESS;
    if (!ok) {
        ++c.error_completions;
        record_failure(
            fmt::format("node{}: QP {} request {}: completion status 0x{:08x} "
                        "(provider error {})",
                        s.index, q, idx, static_cast<uint32_t>(r.Status), r.ProviderErrorCode));
    }

    if (s.index == 0) {
        const operation op = operation_of(m_w, static_cast<uint32_t>(q), idx);
        if (q >= m_w.qps || r.Type != ndk_type(op) || idx < m_done[q] || idx >= m_next[q]) {
            ++c.unexpected_completions;
            record_failure(fmt::format("node0: unexpected completion: type {}, QP {}, request {}",
                                       static_cast<int>(r.Type), q, idx));
            return;
        }
        if (ok) {
            switch (op) {
                case operation::WRITE:
                    ++c.write_completions;
                    break;
                case operation::SEND:
                    ++c.send_completions;
                    break;
                case operation::READ:
                case operation::MIXED:
                    ++c.read_completions;
                    break;
            }
            const sc_core::sc_time& posted =
                m_post_time[q * m_w.queue_depth + idx % m_w.queue_depth];
            m_latency_ns.push_back(static_cast<uint64_t>(
                (sc_core::sc_time_stamp() - posted) / sc_core::sc_time(1, sc_core::SC_NS) + 0.5));
            if (m_w.op == operation::READ || m_w.op == operation::MIXED) {
                // In-order completion: every read up to idx has landed in its sink slot.
                const auto qp = static_cast<uint32_t>(q);
                for (uint64_t m = m_read_checked[q]; m <= idx; ++m) {
                    if (operation_of(m_w, qp, m) == operation::READ) {
                        check_bytes(pattern_key(m_w.seed, qp, m % m_slots),
                                    slot_ptr(s, qp, m % m_slots));
                    }
                }
                m_read_checked[q] = idx + 1;
            }
        } else {
            stop_posting(static_cast<uint32_t>(q), m_next[q]);  // the QP is in error
        }
        s.outstanding -= static_cast<uint32_t>(idx + 1 - m_done[q]);
        m_completed += idx + 1 - m_done[q];
        m_done[q] = idx + 1;
        m_last_completion = sc_core::sc_time_stamp();
        return;
    }

    // Node 1 posts only receives, and they complete in order.
    if (q >= m_w.qps || r.Type != NdkOperationTypeReceive || idx != m_recv_done[q] ||
        idx >= m_send_index[q].size()) {
        ++c.unexpected_completions;
        record_failure(fmt::format("node1: unexpected completion: type {}, QP {}, request {}",
                                   static_cast<int>(r.Type), q, idx));
        return;
    }
    ++m_recv_done[q];
    ++m_received;
    if (!ok) {
        return;
    }
    ++c.receive_completions;
    c.receive_bytes += r.BytesTransferred;
    if (r.BytesTransferred != m_w.message_bytes) {
        record_failure(fmt::format("node1: QP {} receive {}: {} bytes transferred, sent {}", q, idx,
                                   r.BytesTransferred, m_w.message_bytes));
    }
    // Receive idx holds the QP's idx-th SEND (message send_index[idx] of the QP).
    const auto qp = static_cast<uint32_t>(q);
    check_bytes(pattern_key(m_w.seed, qp, m_send_index[q][idx]),
                slot_ptr(s, qp, idx % m_slots, region_of(operation::SEND)));
    if (m_recv_posted[q] < m_send_index[q].size()) {
        post_receive(s, qp, m_recv_posted[q]);  // reuses the slot just checked
    }
}

void workload::wait_for_completions(side& s) {
    ++s.counters.sleeps;
    if (m_w.use_events) {
        // An arm fires at once if a completion arrived since the last notification, so a CQE
        // that landed after the empty poll is not lost (ndkpi.md 7).
        s.cq_notified = false;
        s.cq->Dispatch->NdkArmCq(s.cq, NDK_CQ_NOTIFY_ANY);
        // Node 1 also wakes when the peer has gone (nothing more will arrive).
        while (!s.cq_notified && !(s.index == 1 && s.disconnects >= m_w.qps)) {
            sc_core::wait(s.wake);
        }
    } else {
        ndk::wait_for_completion_activity(s.n->host);
    }
}

// --------------------------------------------------------------------------------------------
// Teardown
// --------------------------------------------------------------------------------------------

void workload::disconnect_all(side& s) {
    for (uint32_t q = 0; q < m_w.qps; ++q) {
        NDK_CONNECTOR* conn = s.connectors[q];
        async_call c;
        const NTSTATUS st = c.wait(conn->Dispatch->NdkDisconnect(conn, async_call::on_request, &c));
        if (st != STATUS_SUCCESS) {
            record_failure(fmt::format("node0: QP {}: NdkDisconnect returned 0x{:08x}", q,
                                       static_cast<uint32_t>(st)));
        }
    }
}

namespace {
// Closes return SUCCESS or PENDING and never fail (ndkpi.md 5.3).
void close_object(NDK_FN_CLOSE_OBJECT close, NDK_OBJECT_HEADER* h) {
    async_call c;
    c.wait(close(h, async_call::on_close, &c));
}
}  // namespace

void workload::teardown(side& s) {
    for (auto*& conn : s.connectors) {
        if (conn != nullptr) {
            close_object(conn->Dispatch->NdkCloseConnector, &conn->Header);
            conn = nullptr;
        }
    }
    for (auto*& qp : s.qps) {
        close_object(qp->Dispatch->NdkCloseQp, &qp->Header);
        qp = nullptr;
    }
    if (s.listener != nullptr) {
        close_object(s.listener->Dispatch->NdkCloseListener, &s.listener->Header);
        s.listener = nullptr;
    }
    {
        async_call c;
        check(s, c.wait(s.mr->Dispatch->NdkDeregisterMr(s.mr, async_call::on_request, &c)),
              "NdkDeregisterMr");
    }
    close_object(s.mr->Dispatch->NdkCloseMr, &s.mr->Header);
    for (MDL* m = s.mdl; m != nullptr;) {
        MDL* next = m->Next;
        s.n->host.free_mdl(m);
        m = next;
    }
    s.mdl = nullptr;
    close_object(s.cq->Dispatch->NdkCloseCq, &s.cq->Header);
    close_object(s.pd->Dispatch->NdkClosePd, &s.pd->Header);
    while (s.index == 1 && !m_disconnected) {
        sc_core::wait(m_disconnected_event);
    }
    ndk::close_adapter(s.adapter);  // blocking: every callback has returned
    s.adapter = nullptr;
    // The buffer stays allocated: finish() checks the target slots after the simulation.
}

void workload::stop_posting(uint32_t q, uint64_t at) {
    if (at < m_limit[q]) {
        m_limit_total -= m_limit[q] - at;
        m_limit[q] = at;
    }
}

void workload::done(side& s) {
    m_finished[s.index] = true;
    if (finished()) {
        sc_core::sc_stop();
    }
}

// --------------------------------------------------------------------------------------------
// The two consumers
// --------------------------------------------------------------------------------------------

void workload::initiator_thread() {
    side& s = m_side[0];
    try {
        const ULONG mr_flags = m_w.op == operation::READ
                                   ? NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK
                               : m_w.op == operation::MIXED
                                   ? NDK_MR_FLAG_ALLOW_LOCAL_READ | NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
                                         NDK_MR_FLAG_RDMA_READ_SINK
                                   : NDK_MR_FLAG_ALLOW_LOCAL_READ;
        open(s, m_w.qps * m_w.queue_depth, m_w.queue_depth, 1, mr_flags);
        while (!m_listening) {
            sc_core::wait(m_listening_event);
        }
        connect_all(s);

        m_first_post = sc_core::sc_time_stamp();
        m_last_completion = m_first_post;
        while (m_completed < m_limit_total) {
            // Keep every QP's send queue queue_depth deep, then reap.
            for (uint32_t q = 0; q < m_w.qps; ++q) {
                while (m_next[q] < m_limit[q] && m_next[q] - m_done[q] < m_w.queue_depth) {
                    post_message(s, q, m_next[q]);
                }
            }
            if (!reap(s) && m_completed < m_limit_total) {
                wait_for_completions(s);
            }
        }
        if (m_w.idle_ms > 0) {
            // Idle with every QP connected: no block has work, so this costs one timed event.
            sc_core::wait(sc_core::sc_time(m_w.idle_ms, sc_core::SC_MS));
        }

        disconnect_all(s);
        m_disconnected = true;
        m_disconnected_event.notify();
        teardown(s);
    } catch (const setup_failed&) {
        return;  // fail() recorded why and stopped the simulation
    }
    done(s);
}

void workload::target_thread() {
    side& s = m_side[1];
    try {
        const bool send = has_sends(m_w);
        const bool mixed = m_w.op == operation::MIXED;
        const ULONG mr_flags = mixed ? NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
                                           NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
                                           NDK_MR_FLAG_ALLOW_REMOTE_READ
                               : send                       ? NDK_MR_FLAG_ALLOW_LOCAL_WRITE
                               : m_w.op == operation::WRITE ? NDK_MR_FLAG_ALLOW_REMOTE_WRITE
                                                            : NDK_MR_FLAG_ALLOW_REMOTE_READ;
        const ULONG rq_depth = send ? static_cast<ULONG>(m_slots) : 1;
        open(s, m_w.qps * rq_depth, 1, rq_depth, mr_flags);
        for (uint32_t q = 0; q < m_w.qps; ++q) {
            if (send) {
                const uint64_t sends = m_send_index[q].size();
                while (m_recv_posted[q] < std::min(sends, m_slots)) {
                    post_receive(s, q, m_recv_posted[q]);
                }
            }
            if (m_w.op == operation::READ || mixed) {
                // READ sources are static: slot k holds pattern k for the whole run.
                const uint32_t region = region_of(operation::READ);
                for (uint64_t k = 0; k < m_slots; ++k) {
                    pattern_fill(pattern_key(m_w.seed, q, k), slot_ptr(s, q, k, region),
                                 m_w.message_bytes);
                }
            }
        }
        {
            async_call c;
            NDK_LISTENER* l = nullptr;
            const NTSTATUS st = s.adapter->Dispatch->NdkCreateListener(
                s.adapter, on_connect_event, &s, async_call::on_create, &c, &l);
            check(s, c.wait(st), "NdkCreateListener");
            s.listener = created(st, l, c);
        }
        {
            SOCKADDR_IN addr = sockaddr_of(m_cfg.topology.nodes[1].ip, PORT);
            async_call c;
            const NTSTATUS st =
                s.listener->Dispatch->NdkListen(s.listener, reinterpret_cast<PSOCKADDR>(&addr),
                                                sizeof(addr), async_call::on_request, &c);
            check(s, c.wait(st), "NdkListen");
        }
        m_listening = true;
        m_listening_event.notify();
        accept_all(s);

        if (send) {
            while (m_received < m_recv_total && s.disconnects < m_w.qps) {
                if (!reap(s)) {
                    wait_for_completions(s);
                }
            }
        }
        // Node 0 disconnects once all its work requests completed.
        while (s.disconnects < m_w.qps) {
            sc_core::wait(s.wake);
        }
        while (reap(s)) {
            // Whatever is left was never posted for (WRITE/READ) or came late: counted there.
        }
        teardown(s);
    } catch (const setup_failed&) {
        return;
    }
    done(s);
}

// --------------------------------------------------------------------------------------------
// Results
// --------------------------------------------------------------------------------------------

void workload::finish(run_result& r) {
    const uint64_t len = m_w.message_bytes;
    // The last WRITE into each target slot is still there (checked if it completed).
    for (uint32_t q = 0; q < m_w.qps; ++q) {
        for (uint64_t slot = 0; slot < m_slots; ++slot) {
            uint64_t& last = m_last_write[uint64_t{q} * m_slots + slot];
            if (last != 0 && last - 1 < m_done[q]) {
                check_bytes(pattern_key(m_w.seed, q, last - 1), slot_ptr(m_side[1], q, slot));
            }
            last = 0;
        }
    }

    r.messages = m_completed;
    r.bytes = m_completed * len;
    r.duration_ns = (m_last_completion - m_first_post) / sc_core::sc_time(1, sc_core::SC_NS);
    if (r.duration_ns > 0) {
        r.goodput_gbps = static_cast<double>(r.bytes) * 8.0 / r.duration_ns;
        r.msg_rate_mpps = static_cast<double>(r.messages) * 1e3 / r.duration_ns;
    }
    std::vector<uint64_t> lat = m_latency_ns;
    std::sort(lat.begin(), lat.end());
    r.latency.samples = lat.size();
    if (!lat.empty()) {
        double sum = 0;
        for (uint64_t v : lat) {
            sum += static_cast<double>(v);
        }
        r.latency.avg_ns = sum / static_cast<double>(lat.size());
        // Nearest rank: the smallest sample with at least p% of the samples at or below it.
        auto rank = [&](double p) {
            const auto k = static_cast<size_t>(std::ceil(p * static_cast<double>(lat.size())));
            return lat[std::max<size_t>(k, 1) - 1];
        };
        r.latency.p50_ns = rank(0.50);
        r.latency.p99_ns = rank(0.99);
        r.latency.max_ns = lat.back();
    }
    r.bytes_checked = m_bytes_checked;
    r.mismatches = m_mismatches;

    for (const auto& f : m_failures) {
        r.failures.push_back(f);
    }
    if (m_failures_dropped > 0) {
        r.failures.push_back(fmt::format("... and {} more failures", m_failures_dropped));
    }
    if (!finished() && m_failures.empty()) {
        r.failures.push_back(fmt::format(
            "workload did not finish (time limit {} ms): node0 completed {} of {} messages, "
            "node1 received {}",
            m_w.time_limit_ms, m_completed, m_total, m_received));
    }
    if (m_mismatches > 0) {
        r.failures.push_back(
            fmt::format("integrity: {} of {} bytes checked differ from what "
                        "the sender wrote",
                        m_mismatches, m_bytes_checked));
    }
    if (m_bytes_checked != m_total * len && r.failures.empty()) {
        r.failures.push_back(fmt::format("integrity: {} bytes checked, {} expected",
                                         m_bytes_checked, m_total * len));
    }
}

}  // namespace rnic::scenario
