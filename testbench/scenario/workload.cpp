// SPDX-License-Identifier: Apache-2.0
// The scenario workload: NDK consumer code on both nodes and the payload checker.
#include "testbench/scenario/workload.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>

#include "hw/common/numeric.h"
#include "testbench/scenario/ndk_async_call.h"
#include "testbench/scenario/pattern.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

namespace rnic::scenario {

namespace {

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
// A refused connect (no listener yet) is tried again after this, up to CONNECT_ATTEMPTS times.
constexpr double CONNECT_RETRY_NS = 2000;
constexpr uint32_t CONNECT_ATTEMPTS = 1000;

// Closes return SUCCESS or PENDING and never fail (ndkpi.md 5.3).
void close_object(NDK_FN_CLOSE_OBJECT close, NDK_OBJECT_HEADER* h) {
    async_call c;
    c.wait(close(h, async_call::on_close, &c));
}
}  // namespace

workload::workload(sc_core::sc_module_name name, const scenario_config& cfg,
                   std::vector<node*> nodes, hw::sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_w(cfg.workload) {
    m_flow_specs = flows_of(cfg);
    m_nodes.resize(nodes.size());
    const uint32_t qps = m_w.qps;
    const bool sends = has_sends(m_w);
    const bool mixed = m_w.op == operation::MIXED;
    for (size_t fi = 0; fi < m_flow_specs.size(); ++fi) {
        flow& f = m_flows.emplace_back();
        f.index = fi;
        f.spec = m_flow_specs[fi];
        f.w = m_w;
        f.w.seed = m_w.seed + fi;
        f.seed = f.w.seed;
        f.w.message_bytes = f.spec.message_bytes;
        f.w.messages = f.spec.messages;
        f.total = f.spec.messages;
        f.per_qp.assign(qps, f.total / qps);
        for (uint64_t q = 0; q < f.total % qps; ++q) {
            ++f.per_qp[q];
        }
        // Slots: at most queue_depth messages are in flight per QP, so a ring of 2 x
        // queue_depth never overwrites a message still in flight and leaves a WRITE's data
        // queue_depth messages to land before its target slot is checked and reused.
        f.slots = std::max<uint64_t>(1, std::min<uint64_t>(f.per_qp[0], 2ull * m_w.queue_depth));
        f.stride = std::max<uint64_t>(64, (f.w.message_bytes + 63) / 64 * 64);
        f.region_bytes = uint64_t{qps} * f.slots * f.stride;
        f.regions = mixed ? 3 : 1;
        f.remote.resize(qps);
        f.next.assign(qps, 0);
        f.done.assign(qps, 0);
        f.limit = f.per_qp;
        f.limit_total = f.total;
        f.last_write.assign(uint64_t{qps} * f.slots, 0);
        f.read_checked.assign(qps, 0);
        f.post_time.resize(uint64_t{qps} * m_w.queue_depth);
        f.send_index.resize(qps);
        if (sends) {
            for (uint32_t q = 0; q < qps; ++q) {
                for (uint64_t i = 0; i < f.per_qp[q]; ++i) {
                    if (operation_of(f.w, q, i) == operation::SEND) {
                        f.send_index[q].push_back(i);
                    }
                }
                f.recv_total += f.send_index[q].size();
            }
        }
        f.recv_posted.assign(qps, 0);
        f.recv_done.assign(qps, 0);
        m_total_all += f.total;

        role& in = f.init;
        in.initiator = true;
        in.mr_flags = m_w.op == operation::READ
                          ? NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_RDMA_READ_SINK
                      : mixed ? NDK_MR_FLAG_ALLOW_LOCAL_READ | NDK_MR_FLAG_ALLOW_LOCAL_WRITE |
                                    NDK_MR_FLAG_RDMA_READ_SINK
                              : NDK_MR_FLAG_ALLOW_LOCAL_READ;
        in.cq_depth = qps * m_w.queue_depth;
        in.sq_depth = m_w.queue_depth;
        in.rq_depth = 1;
        in.bytes = f.region_bytes;
        role& tg = f.target;
        tg.initiator = false;
        tg.mr_flags = mixed ? NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE |
                                  NDK_MR_FLAG_ALLOW_REMOTE_READ
                      : sends                      ? NDK_MR_FLAG_ALLOW_LOCAL_WRITE
                      : m_w.op == operation::WRITE ? NDK_MR_FLAG_ALLOW_REMOTE_WRITE
                                                   : NDK_MR_FLAG_ALLOW_REMOTE_READ;
        tg.rq_depth = sends ? static_cast<ULONG>(f.slots) : 1;
        tg.cq_depth = qps * tg.rq_depth;
        tg.sq_depth = 1;
        tg.bytes = f.regions * f.region_bytes;
        for (role* r : {&in, &tg}) {
            r->owner = this;
            r->f = &f;
            r->qps.assign(qps, nullptr);
            r->connectors.assign(qps, nullptr);
            const uint32_t at = r->initiator ? f.spec.src : f.spec.dst;
            if (nodes[at] == nullptr) {
                continue;  // another rank's node: the role is elaborated there
            }
            auto& ns = m_nodes[at];
            if (!ns) {
                ns = std::make_unique<node_state>();
                ns->index = at;
                ns->n = nodes[at];
            }
            r->ns = ns.get();
            r->offset = ns->buffer_bytes;  // the node's buffer: its roles' regions in order
            ns->buffer_bytes += r->bytes;
            ns->roles.push_back(r);
            ++ns->roles_left;
        }
    }
    m_latency_ns.reserve(m_total_all / m_w.signal_every + qps * m_flows.size());

    // Only nodes with a role have a consumer: the others cost nothing.
    for (auto& ns : m_nodes) {
        if (!ns) {
            continue;
        }
        ++m_nodes_left;
        const std::string b = std::string(this->name()) + ".node" + std::to_string(ns->index);
        auto& c = ns->counters;
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
        st.add(b, "cm_retransmits", c.cm_retransmits, "count",
               "CM REQ / REP / DREQ sent again after host.cm_response_timeout_log (teardown)");
        st.add(b, "cm_timeouts", c.cm_timeouts, "count",
               "CM exchanges given up after host.cm_retries (teardown)");
        if (ctx.vcd != nullptr) {
            sc_core::sc_trace(ctx.vcd, ns->outstanding, b + ".outstanding");
        }
    }

    // Two threads per flow, in flow order: its initiator, then its target (of this rank's nodes).
    for (flow& f : m_flows) {
        const std::string base = f.index == 0 ? "" : "flow" + std::to_string(f.index) + "_";
        if (f.init.ns != nullptr) {
            sc_core::sc_spawn([this, &f] { initiator_thread(f); },
                              (base + "initiator_thread").c_str());
        }
        if (f.target.ns != nullptr) {
            sc_core::sc_spawn([this, &f] { target_thread(f); }, (base + "target_thread").c_str());
        }
    }
}

// --------------------------------------------------------------------------------------------
// Failures
// --------------------------------------------------------------------------------------------

void workload::record_failure(size_t node, const std::string& what) {
    const auto ps =
        static_cast<uint64_t>(std::llround(sc_core::sc_time_stamp().to_seconds() * 1e12));
    m_failures.push_back({ps, node, m_failures.size(), fmt::format("node{}: {}", node, what)});
}

void workload::fabric_failure(const std::string& what) {
    const auto ps =
        static_cast<uint64_t>(std::llround(sc_core::sc_time_stamp().to_seconds() * 1e12));
    m_failures.push_back({ps, 0, m_failures.size(), what});
    sc_core::sc_stop();
}

NTSTATUS workload::check(node_state& ns, NTSTATUS st, const char* what) {
    if (st != STATUS_SUCCESS) {
        fail(ns, fmt::format("{} returned 0x{:08x}", what, static_cast<uint32_t>(st)));
    }
    return st;
}

void workload::fail(node_state& ns, const std::string& what) {
    record_failure(ns.index, what);
    // The other nodes may wait forever for this one: end the run now.
    sc_core::sc_stop();
    throw setup_failed{};
}

void workload::check_bytes(uint64_t key, const uint8_t* p, uint64_t len) {
    const uint64_t bad = pattern_mismatches(key, p, len);
    m_bytes_checked += len;
    m_mismatches += bad;
}

// --------------------------------------------------------------------------------------------
// Consumer callbacks (DPC thread): hand the event to the consumer threads.
// --------------------------------------------------------------------------------------------

VOID workload::on_cq_notification(PVOID ctx, NTSTATUS status) {
    auto* r = static_cast<role*>(ctx);
    if (status != STATUS_SUCCESS) {
        if (r->done) {
            r->owner->record_failure(
                r->ns->index,
                fmt::format("CQ notification with status 0x{:08x}", static_cast<uint32_t>(status)));
        } else {
            r->cq_error = status;  // the role's thread names it and ends the run
            r->cq_error_event.notify();
        }
    }
    r->cq_notified = true;
    r->wake.notify();
}

VOID workload::on_connect_event(PVOID ctx, NDK_CONNECTOR* connector) {
    auto* ns = static_cast<node_state*>(ctx);
    ns->incoming.push_back(connector);
    ns->wake.notify();
}

VOID workload::on_disconnect_event(PVOID ctx) {
    auto* r = static_cast<role*>(ctx);
    ++r->disconnects;
    r->wake.notify();
}

// --------------------------------------------------------------------------------------------
// Setup
// --------------------------------------------------------------------------------------------

void workload::setup_node(node_state& ns) {
    ns.setup_started = true;
    const node_config& nc = m_cfg.topology.nodes[ns.index];
    ndk::adapter_params p;
    p.node_id = static_cast<uint32_t>(ns.index);
    p.mac = nc.mac;
    p.ip = nc.ip;
    p.limits = m_cfg.rnic.limits;
    p.default_mtu = nc.mtu;
    p.timeout_log = static_cast<uint8_t>(m_w.timeout_log);
    p.retry_count = static_cast<uint8_t>(m_w.retry_count);
    p.rnr_retry = static_cast<uint8_t>(m_w.rnr_retry);
    p.cm_timeout_ns = ndk::cm_timeout_ns_of(m_cfg.host.cm_response_timeout_log);
    p.cm_retries = m_cfg.host.cm_retries;
    check(ns, ndk::open_adapter(ns.n->host, p, &ns.adapter), "open_adapter");

    ULONG info_size = sizeof(ns.info);
    check(ns, ns.adapter->Dispatch->NdkQueryAdapterInfo(ns.adapter, &ns.info, &info_size),
          "NdkQueryAdapterInfo");
    for (const role* r : ns.roles) {
        const NDK_ADAPTER_INFO& i = ns.info;
        if (r->sq_depth > i.MaxInitiatorQueueDepth || r->rq_depth > i.MaxReceiveQueueDepth ||
            r->cq_depth > i.MaxCqDepth || r->f->w.message_bytes > i.MaxTransferLength ||
            m_w.inline_threshold > i.MaxInlineDataSize) {
            fail(ns,
                 fmt::format("adapter limits (SQ {}, RQ {}, CQ {}, transfer {}, inline {}) do not "
                             "fit the workload (SQ {}, RQ {}, CQ {}, message {}, inline {})",
                             i.MaxInitiatorQueueDepth, i.MaxReceiveQueueDepth, i.MaxCqDepth,
                             i.MaxTransferLength, i.MaxInlineDataSize, r->sq_depth, r->rq_depth,
                             r->cq_depth, r->f->w.message_bytes, m_w.inline_threshold));
        }
    }

    {
        async_call c;
        NDK_PD* pd = nullptr;
        const NTSTATUS st =
            ns.adapter->Dispatch->NdkCreatePd(ns.adapter, async_call::on_create, &c, &pd);
        check(ns, c.wait(st), "NdkCreatePd");
        ns.pd = c.created(st, pd);
    }
    for (role* r : ns.roles) {
        async_call c;
        NDK_CQ* cq = nullptr;
        const NTSTATUS st =
            ns.adapter->Dispatch->NdkCreateCq(ns.adapter, r->cq_depth, on_cq_notification, r,
                                              nullptr, async_call::on_create, &c, &cq);
        check(ns, c.wait(st), "NdkCreateCq");
        r->cq = c.created(st, cq);
        // Errors only (overrun, the NIC's fatal error): a polling consumer learns through it
        // that no completion can come. Nothing goes to the NIC for it (no MMIO, no timing).
        r->cq->Dispatch->NdkArmCq(r->cq, NDK_CQ_NOTIFY_ERRORS);
    }

    // One buffer for all roles' rings, real process memory shared with the simulated DRAM,
    // registered as one MR over a chain of MDLs.
    ULONG mr_flags = 0;
    for (const role* r : ns.roles) {
        mr_flags |= r->mr_flags;
    }
    ns.buffer = static_cast<uint8_t*>(ns.n->host.alloc(ns.buffer_bytes));
    MDL** link = &ns.mdl;
    for (uint64_t off = 0; off < ns.buffer_bytes; off += MDL_CHUNK) {
        *link = ns.n->host.build_mdl(ns.buffer + off, std::min(MDL_CHUNK, ns.buffer_bytes - off));
        link = &(*link)->Next;
    }
    {
        async_call c;
        NDK_MR* mr = nullptr;
        const NTSTATUS st =
            ns.pd->Dispatch->NdkCreateMr(ns.pd, FALSE, async_call::on_create, &c, &mr);
        check(ns, c.wait(st), "NdkCreateMr");
        ns.mr = c.created(st, mr);
    }
    {
        async_call c;
        const NTSTATUS st = ns.mr->Dispatch->NdkRegisterMr(ns.mr, ns.mdl, ns.buffer_bytes, mr_flags,
                                                           async_call::on_request, &c);
        check(ns, c.wait(st), "NdkRegisterMr");
        ns.local_token = ns.mr->Dispatch->NdkGetLocalTokenFromMr(ns.mr);
        ns.remote_token = ns.mr->Dispatch->NdkGetRemoteTokenFromMr(ns.mr);
    }

    for (role* r : ns.roles) {
        for (uint32_t q = 0; q < m_w.qps; ++q) {
            async_call c;
            NDK_QP* qp = nullptr;
            const NTSTATUS st = ns.pd->Dispatch->NdkCreateQp(
                ns.pd, r->cq, r->cq, reinterpret_cast<PVOID>(uintptr_t{q}), r->rq_depth,
                r->sq_depth, 1, 1, m_w.inline_threshold, async_call::on_create, &c, &qp);
            check(ns, c.wait(st), "NdkCreateQp");
            r->qps[q] = c.created(st, qp);
        }
    }

    // Targets: receives posted and READ sources filled before anyone can connect.
    bool target = false;
    for (role* r : ns.roles) {
        if (r->initiator) {
            continue;
        }
        target = true;
        flow& f = *r->f;
        const bool send = has_sends(m_w);
        for (uint32_t q = 0; q < m_w.qps; ++q) {
            if (send) {
                const uint64_t sends = f.send_index[q].size();
                while (f.recv_posted[q] < std::min(sends, f.slots)) {
                    post_receive(*r, q, f.recv_posted[q]);
                }
            }
            if (m_w.op == operation::READ || m_w.op == operation::MIXED) {
                // READ sources are static: slot k holds pattern k for the whole run.
                const uint32_t region = region_of(operation::READ);
                for (uint64_t k = 0; k < f.slots; ++k) {
                    pattern_fill(pattern_key(f.seed, q, k), slot_ptr(*r, q, k, region),
                                 f.w.message_bytes);
                }
            }
        }
    }
    if (target) {
        {
            async_call c;
            NDK_LISTENER* l = nullptr;
            const NTSTATUS st = ns.adapter->Dispatch->NdkCreateListener(
                ns.adapter, on_connect_event, &ns, async_call::on_create, &c, &l);
            check(ns, c.wait(st), "NdkCreateListener");
            ns.listener = c.created(st, l);
        }
        {
            SOCKADDR_IN addr = sockaddr_of(nc.ip, PORT);
            async_call c;
            const NTSTATUS st =
                ns.listener->Dispatch->NdkListen(ns.listener, reinterpret_cast<PSOCKADDR>(&addr),
                                                 sizeof(addr), async_call::on_request, &c);
            check(ns, c.wait(st), "NdkListen");
        }
    }
    ns.ready = true;
    ns.ready_event.notify();
}

void workload::wait_ready(node_state& ns) {
    if (!ns.setup_started) {
        setup_node(ns);
    }
    while (!ns.ready) {
        sc_core::wait(ns.ready_event);
    }
}

void workload::connect_all(role& r) {
    node_state& ns = *r.ns;
    flow& f = *r.f;
    const uint32_t my_ip = m_cfg.topology.nodes[f.spec.src].ip;
    const uint32_t peer_ip = m_cfg.topology.nodes[f.spec.dst].ip;
    for (uint32_t q = 0; q < m_w.qps; ++q) {
        NDK_CONNECTOR* conn = nullptr;
        // The target's listener may not be up yet (its node is still setting up): the CM
        // refuses (REJ, no listener), and the initiator tries again on a new connector after
        // CONNECT_RETRY_NS, as a client retries a server that is starting.
        for (uint32_t attempt = 0;; ++attempt) {
            {
                async_call c;
                NDK_CONNECTOR* created_conn = nullptr;
                const NTSTATUS st = ns.adapter->Dispatch->NdkCreateConnector(
                    ns.adapter, async_call::on_create, &c, &created_conn);
                check(ns, c.wait(st), "NdkCreateConnector");
                conn = c.created(st, created_conn);
            }
            SOCKADDR_IN src = sockaddr_of(my_ip, 0);  // port 0: ephemeral
            SOCKADDR_IN dst = sockaddr_of(peer_ip, PORT);
            connect_private mine{MAGIC, static_cast<uint32_t>(f.index * m_w.qps + q)};
            async_call c;
            const NTSTATUS st = c.wait(conn->Dispatch->NdkConnect(
                conn, r.qps[q], reinterpret_cast<PSOCKADDR>(&src), sizeof(src),
                reinterpret_cast<PSOCKADDR>(&dst), sizeof(dst), ns.info.MaxInboundReadLimit,
                ns.info.MaxOutboundReadLimit, &mine, sizeof(mine), async_call::on_request, &c));
            if (st != STATUS_CONNECTION_REFUSED || attempt + 1 >= CONNECT_ATTEMPTS) {
                check(ns, st, "NdkConnect");
                break;
            }
            close_object(conn->Dispatch->NdkCloseConnector, &conn->Header);
            // Plus a per-flow offset of whole picoseconds: two flows of one node refused at the
            // same instant do not retry at the same instant, where their order would be the
            // kernel's tie order of timed events (which depends on everything else it holds:
            // not the same in a partitioned run, testbench/distributed).
            sc_core::wait(
                sc_core::sc_time(CONNECT_RETRY_NS, sc_core::SC_NS) +
                sc_core::sc_time(static_cast<double>(f.index % 1000 + 1), sc_core::SC_PS));
        }
        r.connectors[q] = conn;
        // The passive side's accept carries where this QP's remote ring is.
        uint8_t data[256] = {};
        ULONG len = sizeof(data);
        ULONG ird = 0;
        ULONG ord = 0;
        check(ns, conn->Dispatch->NdkGetConnectionData(conn, &ird, &ord, data, &len),
              "NdkGetConnectionData");
        accept_private theirs{};
        std::memcpy(&theirs, data, std::min<size_t>(len, sizeof(theirs)));
        if (len < sizeof(theirs) || theirs.magic != MAGIC) {
            fail(ns, fmt::format("QP {}: accept private data of {} bytes is not the workload's", q,
                                 len));
        }
        f.remote[q] = {theirs.va, theirs.token};
        {
            async_call c;
            const NTSTATUS st = conn->Dispatch->NdkCompleteConnect(conn, on_disconnect_event, &r,
                                                                   async_call::on_request, &c);
            check(ns, c.wait(st), "NdkCompleteConnect");
        }
    }
}

void workload::accept_for(role& mine) {
    node_state& ns = *mine.ns;
    while (mine.accepted < m_w.qps) {
        if (ns.incoming.empty()) {
            sc_core::wait(ns.wake);
            continue;
        }
        NDK_CONNECTOR* conn = ns.incoming.front();
        ns.incoming.pop_front();
        uint8_t data[256] = {};
        ULONG len = sizeof(data);
        ULONG ird = 0;
        ULONG ord = 0;
        check(ns, conn->Dispatch->NdkGetConnectionData(conn, &ird, &ord, data, &len),
              "NdkGetConnectionData");
        connect_private theirs{};
        std::memcpy(&theirs, data, std::min<size_t>(len, sizeof(theirs)));
        // The flow it belongs to must end at this node.
        const uint64_t fi = theirs.qp_index / m_w.qps;
        const uint32_t q = theirs.qp_index % m_w.qps;
        role* r = nullptr;
        if (len >= sizeof(theirs) && theirs.magic == MAGIC && fi < m_flows.size() &&
            m_flows[fi].spec.dst == ns.index) {
            r = &m_flows[fi].target;
        }
        if (r == nullptr || r->connectors[q] != nullptr) {
            conn->Dispatch->NdkReject(conn, nullptr, 0);
            fail(ns, fmt::format("rejected a connect request with {} bytes of private data", len));
        }
        r->connectors[q] = conn;
        accept_private ap{MAGIC, ns.remote_token,
                          static_cast<uint64_t>(reinterpret_cast<uintptr_t>(slot_ptr(*r, q, 0)))};
        async_call c;
        const NTSTATUS st = conn->Dispatch->NdkAccept(
            conn, r->qps[q], ns.info.MaxInboundReadLimit, ns.info.MaxOutboundReadLimit, &ap,
            sizeof(ap), on_disconnect_event, r, async_call::on_request, &c);
        check(ns, c.wait(st), "NdkAccept");
        ++r->accepted;
        if (r != &mine) {
            ns.wake.notify();  // the other flow's target thread may be waiting for it
        }
    }
}

// --------------------------------------------------------------------------------------------
// Data path
// --------------------------------------------------------------------------------------------

void workload::post_receive(role& r, uint32_t q, uint64_t j) {
    flow& f = *r.f;
    uint8_t* p = slot_ptr(r, q, j % f.slots, region_of(operation::SEND));
    std::memset(p, POISON, f.w.message_bytes);
    NDK_SGE sge{};
    sge.VirtualAddress = p;
    sge.Length = static_cast<ULONG>(f.w.message_bytes);
    sge.MemoryRegionToken = r.ns->local_token;
    NDK_QP* qp = r.qps[q];
    check(*r.ns,
          qp->Dispatch->NdkReceive(qp, reinterpret_cast<PVOID>(uintptr_t{j}), &sge,
                                   f.w.message_bytes > 0 ? 1 : 0),
          "NdkReceive");
    ++f.recv_posted[q];
    ++r.ns->counters.receives_posted;
}

void workload::post_message(role& r, uint32_t q, uint64_t i, bool defer) {
    flow& f = *r.f;
    const uint64_t slot = i % f.slots;
    uint8_t* local = slot_ptr(r, q, slot);
    const size_t len = f.w.message_bytes;
    const operation op = operation_of(f.w, q, i);
    switch (op) {
        case operation::WRITE: {
            uint64_t& prev = f.last_write[uint64_t{q} * f.slots + slot];
            if (prev != 0) {
                // The previous WRITE into this target slot (message prev - 1 <= i - slots)
                // completed at least queue_depth messages ago: its bytes are in the slot this
                // one is about to overwrite (checked on the target's rank when it is elsewhere).
                if (f.target.ns != nullptr) {
                    check_bytes(pattern_key(f.seed, q, prev - 1), slot_ptr(f.target, q, slot), len);
                } else {
                    m_remote_checks.push_back({f.index, q, slot, prev - 1});
                }
            }
            prev = i + 1;
            pattern_fill(pattern_key(f.seed, q, i), local, len);
            break;
        }
        case operation::SEND:
            pattern_fill(pattern_key(f.seed, q, i), local, len);
            break;
        case operation::READ:
        case operation::MIXED:
            std::memset(local, POISON, len);
            break;
    }

    NDK_SGE sge{};
    sge.VirtualAddress = local;
    sge.Length = static_cast<ULONG>(len);
    sge.MemoryRegionToken = r.ns->local_token;
    const ULONG nsge = len > 0 ? 1 : 0;
    const bool last = i + 1 == f.per_qp[q];
    const bool signaled = (i + 1) % m_w.signal_every == 0 || last;
    ULONG flags = signaled ? 0 : NDK_OP_FLAG_SILENT_SUCCESS;
    if (defer) {
        flags |= NDK_OP_FLAG_DEFER;
    }
    if (op != operation::READ && m_w.inline_threshold > 0 && len <= m_w.inline_threshold) {
        flags |= NDK_OP_FLAG_INLINE;
    }
    const uint64_t remote = f.remote[q].va + region_of(op) * f.region_bytes + slot * f.stride;
    const auto ctx = reinterpret_cast<PVOID>(static_cast<uintptr_t>(i));
    NDK_QP* qp = r.qps[q];

    // Latency starts before the post call: it includes the CPU time of posting, as perftest's.
    f.post_time[uint64_t{q} * m_w.queue_depth + i % m_w.queue_depth] = sc_core::sc_time_stamp();
    NTSTATUS st = STATUS_SUCCESS;
    switch (op) {
        case operation::WRITE:
            st = qp->Dispatch->NdkWrite(qp, ctx, &sge, nsge, remote, f.remote[q].token, flags);
            break;
        case operation::SEND:
            st = qp->Dispatch->NdkSend(qp, ctx, &sge, nsge, flags);
            break;
        case operation::READ:
        case operation::MIXED:  // operation_of never returns MIXED
            st = qp->Dispatch->NdkRead(qp, ctx, &sge, nsge, remote, f.remote[q].token, flags);
            break;
    }
    if (st != STATUS_SUCCESS) {
        // No completion will come for it (ndkpi.md 6): stop this QP where it is.
        record_failure(r.ns->index, fmt::format("QP {} message {}: post returned 0x{:08x}", q, i,
                                                static_cast<uint32_t>(st)));
        stop_posting(f, q, i);
        return;
    }
    ++f.next[q];
    ++r.ns->counters.posted;
    ++r.ns->outstanding;
    ++m_posted;
}

bool workload::reap(role& r) {
    NDK_RESULT_EX results[REAP_BATCH];
    const ULONG n = r.cq->Dispatch->NdkGetCqResultsEx(r.cq, results, REAP_BATCH);
    if (n == 0) {
        ++r.ns->counters.empty_polls;
        return false;
    }
    for (ULONG k = 0; k < n; ++k) {
        on_completion(r, results[k]);
    }
    return true;
}

void workload::on_completion(role& r, const NDK_RESULT_EX& res) {
    flow& f = *r.f;
    node_state& ns = *r.ns;
    auto& c = ns.counters;
    ++c.completions;
    const auto q = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(res.QPContext));
    const auto idx = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(res.RequestContext));
    const bool ok = res.Status == STATUS_SUCCESS;
    if (!ok) {
        ++c.error_completions;
        std::string port;  // a QP that failed behind a dead port: say so (hw/nic port)
        if (ns.n != nullptr && !ns.n->nic.link_up()) {
            port = fmt::format("; {}.port sees its link down (loss of signal) since {:.0f} ns",
                               ns.n->nic.name(), ns.n->nic.link_down_since().to_seconds() * 1e9);
        }
        record_failure(ns.index, fmt::format("QP {} request {}: completion status 0x{:08x} "
                                             "(provider error {}){}",
                                             q, idx, static_cast<uint32_t>(res.Status),
                                             res.ProviderErrorCode, port));
    }

    if (r.initiator) {
        const operation op = operation_of(f.w, static_cast<uint32_t>(q), idx);
        if (q >= m_w.qps || res.Type != ndk_type(op) || idx < f.done[q] || idx >= f.next[q]) {
            ++c.unexpected_completions;
            record_failure(ns.index,
                           fmt::format("unexpected completion: type {}, QP {}, request {}",
                                       static_cast<int>(res.Type), q, idx));
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
            ++ns.done_messages;
            ns.done_bytes += f.w.message_bytes;
            if (m_w.pattern != traffic_pattern::PING_PONG) {  // there: the round trips
                const sc_core::sc_time& posted =
                    f.post_time[q * m_w.queue_depth + idx % m_w.queue_depth];
                m_latency_ns.push_back(static_cast<uint64_t>(
                    (sc_core::sc_time_stamp() - posted) / sc_core::sc_time(1, sc_core::SC_NS) +
                    0.5));
            }
            if (m_w.op == operation::READ || m_w.op == operation::MIXED) {
                // In-order completion: every read up to idx has landed in its sink slot.
                const auto qp = static_cast<uint32_t>(q);
                for (uint64_t m = f.read_checked[q]; m <= idx; ++m) {
                    if (operation_of(f.w, qp, m) == operation::READ) {
                        check_bytes(pattern_key(f.seed, qp, m % f.slots),
                                    slot_ptr(r, qp, m % f.slots), f.w.message_bytes);
                    }
                }
                f.read_checked[q] = idx + 1;
            }
        } else {
            stop_posting(f, static_cast<uint32_t>(q), f.next[q]);  // the QP is in error
        }
        ns.outstanding -= static_cast<uint32_t>(idx + 1 - f.done[q]);
        f.completed += idx + 1 - f.done[q];
        f.done[q] = idx + 1;
        f.last_completion = sc_core::sc_time_stamp();
        m_last_completion = f.last_completion;
        return;
    }

    // The target posts only receives, and they complete in order.
    if (q >= m_w.qps || res.Type != NdkOperationTypeReceive || idx != f.recv_done[q] ||
        idx >= f.send_index[q].size()) {
        ++c.unexpected_completions;
        record_failure(ns.index, fmt::format("unexpected completion: type {}, QP {}, request {}",
                                             static_cast<int>(res.Type), q, idx));
        return;
    }
    ++f.recv_done[q];
    ++f.received;
    if (!ok) {
        return;
    }
    ++c.receive_completions;
    c.receive_bytes += res.BytesTransferred;
    if (res.BytesTransferred != f.w.message_bytes) {
        record_failure(ns.index, fmt::format("QP {} receive {}: {} bytes transferred, sent {}", q,
                                             idx, res.BytesTransferred, f.w.message_bytes));
    }
    // Receive idx holds the QP's idx-th SEND (message send_index[idx] of the QP).
    const auto qp = static_cast<uint32_t>(q);
    check_bytes(pattern_key(f.seed, qp, f.send_index[q][idx]),
                slot_ptr(r, qp, idx % f.slots, region_of(operation::SEND)), f.w.message_bytes);
    const bool repost = f.recv_posted[q] < f.send_index[q].size();  // into the slot checked
    if (m_w.pattern == traffic_pattern::PING_PONG) {
        // As ib_send_lat: the receive goes back before the answer (or the next message) is
        // posted, and its CPU time is part of the round trip.
        if (repost) {
            post_receive(r, qp, f.recv_posted[q]);
        }
        if (f.spec.gate_ahead == 1) {
            // The answer to message m is in, on m's source: half the round trip from m's post.
            const uint64_t m = f.send_index[q][idx];
            const flow& ping = m_flows[static_cast<size_t>(f.spec.gate)];
            const sc_core::sc_time& posted =
                ping.post_time[q * m_w.queue_depth + m % m_w.queue_depth];
            m_latency_ns.push_back(static_cast<uint64_t>(
                (sc_core::sc_time_stamp() - posted) / sc_core::sc_time(2, sc_core::SC_NS) + 0.5));
        }
        f.recv_event.notify();  // the answer, or the next message, may go
        return;
    }
    f.recv_event.notify();  // a flow gated on this one may post its next step
    if (repost) {
        post_receive(r, qp, f.recv_posted[q]);  // reuses the slot just checked
    }
}

void workload::wait_for_completions(role& r) {
    ++r.ns->counters.sleeps;
    if (m_w.use_events) {
        // An arm fires at once if a completion arrived since the last notification, so a CQE
        // that landed after the empty poll is not lost (ndkpi.md 7).
        r.cq_notified = false;
        r.cq->Dispatch->NdkArmCq(r.cq, NDK_CQ_NOTIFY_ANY);
        // The target also wakes when the peer has gone (nothing more will arrive).
        while (!r.cq_notified && !(!r.initiator && r.disconnects >= m_w.qps)) {
            sc_core::wait(r.wake);
        }
    } else {
        ndk::wait_for_completion_activity(r.ns->n->host, &r.cq_error_event);
    }
    end_if_cq_dead(r);
}

void workload::end_if_cq_dead(role& r) {
    if (r.cq_error != STATUS_SUCCESS) {
        // The CQ is dead: nothing this role waits for can come, so the run can make no more
        // progress here. End it now, naming why, rather than at the time limit.
        const flow& f = *r.f;
        fail(*r.ns,
             fmt::format("{} CQ reported status 0x{:08x}{}: no completion can come (flow {} -> {}: "
                         "{} of {} messages completed); run ended at {:.0f} ns",
                         r.initiator ? "initiator" : "target", static_cast<uint32_t>(r.cq_error),
                         r.cq_error == STATUS_INTERNAL_ERROR
                             ? " (STATUS_INTERNAL_ERROR: the NIC had a fatal error, "
                               "EVENT_DEVICE_FATAL)"
                             : "",
                         f.spec.src, f.spec.dst, f.completed, f.limit_total,
                         sc_core::sc_time_stamp().to_seconds() * 1e9));
    }
}

// --------------------------------------------------------------------------------------------
// Teardown
// --------------------------------------------------------------------------------------------

void workload::disconnect_all(role& r) {
    for (uint32_t q = 0; q < m_w.qps; ++q) {
        NDK_CONNECTOR* conn = r.connectors[q];
        async_call c;
        const NTSTATUS st = c.wait(conn->Dispatch->NdkDisconnect(conn, async_call::on_request, &c));
        if (st != STATUS_SUCCESS) {
            record_failure(r.ns->index, fmt::format("QP {}: NdkDisconnect returned 0x{:08x}", q,
                                                    static_cast<uint32_t>(st)));
        }
    }
}

void workload::teardown(node_state& ns) {
    for (role* r : ns.roles) {
        for (auto*& conn : r->connectors) {
            if (conn != nullptr) {
                close_object(conn->Dispatch->NdkCloseConnector, &conn->Header);
                conn = nullptr;
            }
        }
    }
    for (role* r : ns.roles) {
        for (auto*& qp : r->qps) {
            close_object(qp->Dispatch->NdkCloseQp, &qp->Header);
            qp = nullptr;
        }
    }
    if (ns.listener != nullptr) {
        close_object(ns.listener->Dispatch->NdkCloseListener, &ns.listener->Header);
        ns.listener = nullptr;
    }
    {
        async_call c;
        check(ns, c.wait(ns.mr->Dispatch->NdkDeregisterMr(ns.mr, async_call::on_request, &c)),
              "NdkDeregisterMr");
    }
    close_object(ns.mr->Dispatch->NdkCloseMr, &ns.mr->Header);
    for (MDL* m = ns.mdl; m != nullptr;) {
        MDL* next = m->Next;
        ns.n->host.free_mdl(m);
        m = next;
    }
    ns.mdl = nullptr;
    for (role* r : ns.roles) {
        close_object(r->cq->Dispatch->NdkCloseCq, &r->cq->Header);
    }
    close_object(ns.pd->Dispatch->NdkClosePd, &ns.pd->Header);
    const ndk::cm_counters cm = ndk::get_cm_counters(ns.adapter);
    ns.counters.cm_retransmits = cm.retransmits;
    ns.counters.cm_timeouts = cm.timeouts;
    // A target node's host keeps its adapter open (a server stays up): its CM answers a DREQ
    // sent again after a lost DREP, however late. It costs nothing: an idle adapter has no
    // events. A node with initiator roles only closes it.
    for (role* r : ns.roles) {
        if (!r->initiator) {
            return;
        }
    }
    ndk::close_adapter(ns.adapter);  // blocking: every callback has returned
    ns.adapter = nullptr;
    // The buffer stays allocated: finish() checks the target slots after the simulation.
}

void workload::stop_posting(flow& f, uint32_t q, uint64_t at) {
    if (at < f.limit[q]) {
        f.limit_total -= f.limit[q] - at;
        f.limit[q] = at;
    }
}

void workload::role_done(role& r) {
    r.done = true;
    node_state& ns = *r.ns;
    if (--ns.roles_left > 0) {
        return;
    }
    teardown(ns);
    // The run ends when nothing is left to simulate (runner.cpp), not here: the end must not
    // depend on which rank (testbench/distributed) saw the last role finish. Except with an RTL
    // send path on a free-running clock, which always has something left (an edge every cycle):
    // that run ends with its last role (partitioned runs refuse the free clock).
    if (--m_nodes_left == 0 && m_cfg.rnic.send_path.impl != "model" &&
        m_cfg.rnic.send_path.rtl.clock == "free") {
        sc_core::sc_stop();
    }
}

// --------------------------------------------------------------------------------------------
// The two roles of a flow
// --------------------------------------------------------------------------------------------

void workload::initiator_thread(flow& f) {
    role& r = f.init;
    try {
        wait_ready(*r.ns);
        connect_all(r);

        // An arrival time (flows from a size distribution, explicit flow lists): connected
        // first, posted then.
        const sc_core::sc_time start(f.spec.start_ns, sc_core::SC_NS);
        if (start > sc_core::sc_time_stamp()) {
            sc_core::wait(start - sc_core::sc_time_stamp());
        }
        f.started = true;
        f.first_post = sc_core::sc_time_stamp();
        f.last_completion = f.first_post;
        if (!m_any_post) {
            m_any_post = true;
            m_first_post = f.first_post;
            m_last_completion = m_first_post;
        }
        const uint32_t qps = m_w.qps;
        // A gated flow (a ring collective's step, a ping-pong) posts message i once the flow
        // into its node has delivered i + gate_ahead messages here (the previous step's data,
        // the ping to answer).
        flow* gate = f.spec.gate >= 0 ? &m_flows[static_cast<size_t>(f.spec.gate)] : nullptr;
        auto may_post = [&](uint64_t i) {
            return gate == nullptr || gate->received >= i + f.spec.gate_ahead;
        };
        while (f.completed < f.limit_total) {
            // Keep every QP's send queue queue_depth deep, then reap.
            for (uint32_t q = 0; q < qps; ++q) {
                // Doorbell batching: of the requests posted now, all but every
                // doorbell_batch-th and the last are deferred (one doorbell covers them).
                const uint64_t room =
                    std::min(f.limit[q] - f.next[q], m_w.queue_depth - (f.next[q] - f.done[q]));
                for (uint64_t k = 0; f.next[q] < f.limit[q] &&
                                     f.next[q] - f.done[q] < m_w.queue_depth && may_post(f.next[q]);
                     ++k) {
                    const bool defer = m_w.doorbell_batch > 1 && gate == nullptr && k + 1 < room &&
                                       (k + 1) % m_w.doorbell_batch != 0;
                    post_message(r, q, f.next[q], defer);
                }
            }
            if (!reap(r) && f.completed < f.limit_total) {
                uint64_t in_flight = 0;
                for (uint32_t q = 0; q < qps; ++q) {
                    in_flight += f.next[q] - f.done[q];
                }
                if (in_flight == 0 && gate != nullptr) {
                    sc_core::wait(gate->recv_event);  // nothing to reap: the next step's data
                } else {
                    wait_for_completions(r);
                }
            }
        }
        if (m_w.idle_ms > 0) {
            // Idle with every QP connected: no block has work, so this costs one timed event.
            sc_core::wait(sc_core::sc_time(m_w.idle_ms, sc_core::SC_MS));
        }

        disconnect_all(r);
        role_done(r);
    } catch (const setup_failed&) {
        return;  // fail() recorded why and stopped the simulation
    }
}

void workload::target_thread(flow& f) {
    role& r = f.target;
    try {
        wait_ready(*r.ns);
        accept_for(r);

        if (has_sends(m_w)) {
            while (f.received < f.recv_total && r.disconnects < m_w.qps) {
                if (!reap(r)) {
                    wait_for_completions(r);
                }
            }
        }
        // The initiator disconnects once all its work requests completed.
        while (r.disconnects < m_w.qps) {
            sc_core::wait(r.wake);
            end_if_cq_dead(r);
        }
        while (reap(r)) {
            // Whatever is left was never posted for (WRITE/READ) or came late: counted there.
        }
        role_done(r);
    } catch (const setup_failed&) {
        return;
    }
}

// --------------------------------------------------------------------------------------------
// Results
// --------------------------------------------------------------------------------------------

void workload::run_remote_check(const remote_check& c) {
    flow& f = m_flows[c.flow];
    check_bytes(pattern_key(f.seed, c.q, c.message), slot_ptr(f.target, c.q, c.slot),
                f.w.message_bytes);
}

namespace {
uint64_t ps_of(const sc_core::sc_time& t) {
    return static_cast<uint64_t>(std::llround(t.to_seconds() * 1e12));
}
}  // namespace

nlohmann::json workload::export_initiators() const {
    nlohmann::json out = nlohmann::json::array();
    for (const flow& f : m_flows) {
        if (f.init.ns == nullptr) {
            continue;
        }
        out.push_back({{"flow", f.index},
                       {"done", f.done},
                       {"last_write", f.last_write},
                       {"completed", f.completed}});
    }
    return out;
}

void workload::import_initiators(const nlohmann::json& j) {
    for (const auto& e : j) {
        flow& f = m_flows[e["flow"].get<size_t>()];
        if (f.init.ns != nullptr || f.target.ns == nullptr) {
            continue;  // this rank's own initiator, or a flow it has no part of
        }
        f.done = e["done"].get<std::vector<uint64_t>>();
        f.last_write = e["last_write"].get<std::vector<uint64_t>>();
        f.completed = e["completed"].get<uint64_t>();
    }
}

void workload::final_checks() {
    for (flow& f : m_flows) {
        if (f.target.ns == nullptr) {
            continue;  // checked on the target's rank
        }
        // The last WRITE into each target slot is still there (checked if it completed).
        for (uint32_t q = 0; q < m_w.qps; ++q) {
            for (uint64_t slot = 0; slot < f.slots; ++slot) {
                uint64_t& last = f.last_write[uint64_t{q} * f.slots + slot];
                if (last != 0 && last - 1 < f.done[q]) {
                    check_bytes(pattern_key(f.seed, q, last - 1), slot_ptr(f.target, q, slot),
                                f.w.message_bytes);
                }
                last = 0;
            }
        }
    }
}

nlohmann::json workload::partial() const {
    nlohmann::json j;
    nlohmann::json flows = nlohmann::json::array();
    for (const flow& f : m_flows) {
        if (f.init.ns == nullptr && f.target.ns == nullptr) {
            continue;
        }
        nlohmann::json e = {{"flow", f.index}};
        if (f.init.ns != nullptr) {
            e["completed"] = f.completed;
            e["started"] = f.started;
            e["first_post_ps"] = ps_of(f.first_post);
            e["last_completion_ps"] = ps_of(f.last_completion);
        }
        if (f.target.ns != nullptr) {
            e["received"] = f.received;
        }
        flows.push_back(e);
    }
    j["flows"] = flows;
    j["latency_ns"] = m_latency_ns;
    j["any_post"] = m_any_post;
    j["first_post_ps"] = ps_of(m_first_post);
    j["last_completion_ps"] = ps_of(m_last_completion);
    j["bytes_checked"] = m_bytes_checked;
    j["mismatches"] = m_mismatches;
    nlohmann::json fails = nlohmann::json::array();
    for (const auto& x : m_failures) {
        fails.push_back({x.time_ps, x.node, x.seq, x.text});
    }
    j["failures"] = fails;
    j["nodes_left"] = m_nodes_left;
    return j;
}

void workload::finish(run_result& r) {
    final_checks();
    combine(m_cfg, {partial()}, r);
}

void workload::combine(const scenario_config& cfg, const std::vector<nlohmann::json>& parts,
                       run_result& r) {
    const workload_config& w = cfg.workload;
    const std::vector<flow_spec> specs = flows_of(cfg);
    // Per flow: the initiator's figures and the target's receive count, from whichever rank.
    struct flow_fig {
        uint64_t completed = 0;
        uint64_t received = 0;
        bool started = false;
        uint64_t first_ps = 0;
        uint64_t last_ps = 0;
    };
    std::vector<flow_fig> figs(specs.size());
    std::vector<uint64_t> lat;
    bool any_post = false;
    uint64_t first_post_ps = 0;
    uint64_t last_completion_ps = 0;
    uint64_t bytes_checked = 0;
    uint64_t mismatches = 0;
    uint64_t nodes_left = 0;
    std::vector<failure_rec> failures;
    for (const nlohmann::json& p : parts) {
        for (const auto& e : p["flows"]) {
            flow_fig& g = figs[e["flow"].get<size_t>()];
            if (e.contains("completed")) {
                g.completed = e["completed"].get<uint64_t>();
                g.started = e["started"].get<bool>();
                g.first_ps = e["first_post_ps"].get<uint64_t>();
                g.last_ps = e["last_completion_ps"].get<uint64_t>();
            }
            if (e.contains("received")) {
                g.received = e["received"].get<uint64_t>();
            }
        }
        const auto l = p["latency_ns"].get<std::vector<uint64_t>>();
        lat.insert(lat.end(), l.begin(), l.end());
        if (p["any_post"].get<bool>()) {
            const uint64_t first = p["first_post_ps"].get<uint64_t>();
            const uint64_t last = p["last_completion_ps"].get<uint64_t>();
            first_post_ps = any_post ? std::min(first_post_ps, first) : first;
            last_completion_ps = any_post ? std::max(last_completion_ps, last) : last;
            any_post = true;
        }
        bytes_checked += p["bytes_checked"].get<uint64_t>();
        mismatches += p["mismatches"].get<uint64_t>();
        nodes_left += p["nodes_left"].get<uint64_t>();
        for (const auto& x : p["failures"]) {
            failures.push_back({x[0].get<uint64_t>(), x[1].get<uint64_t>(), x[2].get<uint64_t>(),
                                x[3].get<std::string>()});
        }
    }
    // Failures in the order they happened: time, then node, then the node's own order.
    std::stable_sort(
        failures.begin(), failures.end(), [](const failure_rec& a, const failure_rec& b) {
            return std::tie(a.time_ps, a.node, a.seq) < std::tie(b.time_ps, b.node, b.seq);
        });

    uint64_t completed = 0;
    uint64_t bytes = 0;
    uint64_t bytes_total = 0;
    uint64_t received = 0;
    uint64_t total_all = 0;
    for (size_t fi = 0; fi < specs.size(); ++fi) {
        const flow_spec& spec = specs[fi];
        const flow_fig& g = figs[fi];
        completed += g.completed;
        received += g.received;
        bytes += g.completed * spec.message_bytes;
        bytes_total += spec.messages * spec.message_bytes;
        total_all += spec.messages;
        flow_result fr;
        fr.src = spec.src;
        fr.dst = spec.dst;
        fr.bytes = spec.messages * spec.message_bytes;
        fr.message_bytes = spec.message_bytes;
        fr.messages = g.completed;
        fr.start_ns = g.started ? static_cast<double>(g.first_ps) / 1000.0 : -1;
        fr.end_ns = g.started ? static_cast<double>(g.last_ps) / 1000.0 : -1;
        fr.complete = g.completed == spec.messages;
        r.flows.push_back(fr);
    }

    r.messages = completed;
    r.bytes = bytes;
    r.duration_ns = static_cast<double>(last_completion_ps - first_post_ps) / 1000.0;
    if (r.duration_ns > 0) {
        r.goodput_gbps = static_cast<double>(r.bytes) * 8.0 / r.duration_ns;
        r.msg_rate_mpps = static_cast<double>(r.messages) * 1e3 / r.duration_ns;
    }
    std::sort(lat.begin(), lat.end());
    r.latency.samples = lat.size();
    if (!lat.empty()) {
        double sum = 0;
        for (uint64_t v : lat) {
            sum += static_cast<double>(v);
        }
        r.latency.avg_ns = sum / static_cast<double>(lat.size());
        r.latency.p50_ns = nearest_rank(lat, 0.50);
        r.latency.p99_ns = nearest_rank(lat, 0.99);
        r.latency.max_ns = lat.back();
        r.latency.percentiles.clear();
        for (uint64_t pct = 0; pct <= 100; ++pct) {  // nearest rank, in integers
            const uint64_t k = (pct * lat.size() + 99) / 100;
            r.latency.percentiles.push_back(lat[std::max<uint64_t>(k, 1) - 1]);
        }
    }
    r.bytes_checked = bytes_checked;
    r.mismatches = mismatches;

    for (size_t k = 0; k < failures.size() && k < MAX_FAILURES; ++k) {
        r.failures.push_back(failures[k].text);
    }
    if (failures.size() > MAX_FAILURES) {
        r.failures.push_back(
            fmt::format("... and {} more failures", failures.size() - MAX_FAILURES));
    }
    if (nodes_left > 0 && failures.empty()) {
        if (specs.size() == 1) {
            r.failures.push_back(fmt::format(
                "workload did not finish (time limit {} ms): node{} completed {} of {} messages, "
                "node{} received {}",
                w.time_limit_ms, specs[0].src, completed, total_all, specs[0].dst, received));
        } else {
            uint64_t unfinished = 0;
            for (size_t fi = 0; fi < specs.size(); ++fi) {
                unfinished += figs[fi].completed < specs[fi].messages ? 1 : 0;
            }
            r.failures.push_back(fmt::format(
                "workload did not finish (time limit {} ms): {} of {} flows incomplete, {} of {} "
                "messages completed",
                w.time_limit_ms, unfinished, specs.size(), completed, total_all));
        }
    }
    if (mismatches > 0) {
        r.failures.push_back(
            fmt::format("integrity: {} of {} bytes checked differ from what "
                        "the sender wrote",
                        mismatches, bytes_checked));
    }
    if (bytes_checked != bytes_total && r.failures.empty()) {
        r.failures.push_back(
            fmt::format("integrity: {} bytes checked, {} expected", bytes_checked, bytes_total));
    }
}

}  // namespace rnic::scenario
