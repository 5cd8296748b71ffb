// SPDX-License-Identifier: Apache-2.0
// The NDKPI provider driver (internal): the objects behind NDK_ADAPTER, NDK_PD, NDK_CQ, NDK_QP,
// NDK_SRQ, NDK_MR, NDK_MW, NDK_CONNECTOR, NDK_LISTENER and NDK_SHARED_ENDPOINT. The driver
// reaches the NIC only as a real one would (hw/hsi/hsi.h): rings in host memory, MMIO doorbells,
// the command queue, the event queue and MSI-X vector 0. Behaviour spec: ndkpi.md.
//
// Threads: every entry point runs in the caller's SC_THREAD (consumer code or the host's DPC
// thread); consumer callbacks run in the DPC thread. The driver may wait() (CPU time, MMIO,
// synchronous commands); a synchronous wait polls the command slot in host memory, so it never
// depends on the DPC thread and may run inside a callback.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <systemc>

#include "hw/common/quick_event.h"
#include "hw/hsi/hsi.h"
#include "ndk_shim/ndk_sim.h"
#include "ndk_shim/provider/cm_mad.h"

namespace rnic::ndk::provider {

struct adapter_impl;
struct qp_impl;
struct connector_impl;

// Handle allocator (QPN, CQN, PDN, SRQN, key index) over [first, count): the handles below
// `first` are reserved (index 0 always; QPNs 0 and 1 are the SMI and GSI QPs).
class handle_pool {
public:
    explicit handle_pool(uint32_t count = 0, uint32_t first = 1)
        : m_used(count, false)
        , m_next(first) {
        for (uint32_t h = 1; h < first && h < count; ++h) {
            m_used[h] = true;  // never handed out, never counted as in use
        }
    }
    // 0 when exhausted.
    uint32_t alloc();
    void free(uint32_t h);
    uint32_t in_use() const { return m_in_use; }

private:
    std::vector<bool> m_used;
    uint32_t m_next = 1;
    uint32_t m_in_use = 0;
};

// Close bookkeeping common to every object (ndkpi.md 5): a close completes only when the
// object has no children, no request or event callback in progress, and its hardware object
// is destroyed. Antecedents (parent, CQs, SRQ) count this object as a child until then.
struct object_base {
    adapter_impl* adapter = nullptr;
    std::vector<object_base*> antecedents;
    uint32_t children = 0;
    uint32_t busy = 0;  // requests whose completion callback is still due
    bool closing = false;
    bool teardown_started = false;
    bool teardown_done = false;
    bool* closed_inline = nullptr;  // set while NdkCloseObject runs: finish without callback
    NDK_FN_CLOSE_COMPLETION close_cb = nullptr;
    void* close_ctx = nullptr;

    virtual ~object_base() = default;
    // Destroys the hardware object (if any); calls `done` when it is gone (inline or later).
    virtual void teardown(std::function<void()> done) { done(); }
    // Called once when the close starts: cancel work that only the object's own progress (not
    // the NIC) would finish, e.g. a connect waiting for the peer.
    virtual void cancel() {}
    void add_antecedent(object_base* a) {
        antecedents.push_back(a);
        ++a->children;
    }
};

// --------------------------------------------------------------------------------------------
struct pd_impl : NDK_PD, object_base {
    uint32_t pdn = 0;
    void teardown(std::function<void()> done) override;
};

struct cq_impl : NDK_CQ, object_base {
    uint32_t cqn = 0;
    uint32_t depth = 0;     // consumer's CqDepth
    uint32_t log_size = 0;  // ring of 2^log_size CQEs
    hsi::cqe* ring = nullptr;
    uint32_t consumer = 0;          // free-running
    uint32_t reported = 0;          // consumer index last written to REG_CQ_DOORBELL
    uint32_t report_threshold = 1;  // CQEs consumed before the consumer index is written
    NDK_FN_CQ_NOTIFICATION_CALLBACK notify_cb = nullptr;
    void* notify_ctx = nullptr;
    int arm = -1;          // -1 disarmed, else NDK_CQ_NOTIFY_*
    bool overrun = false;  // EVENT_CQ_ERROR / EVENT_DEVICE_FATAL seen: CQ and its QPs are dead
    bool overrun_reported = false;
    // What the notification reports for the dead CQ: STATUS_BUFFER_OVERFLOW (overrun) or
    // STATUS_INTERNAL_ERROR (CQE write error, device fatal).
    NTSTATUS dead_status = STATUS_BUFFER_OVERFLOW;
    // Interrupt moderation (ControlCqInterruptModeration), as programmed into the NIC.
    uint32_t moderation_interval_us = 0;
    uint32_t moderation_count = 0;

    void teardown(std::function<void()> done) override;
    bool valid_at(uint32_t index) const;
    // A queued CQE matches an arm of `type` (SOLICITED: solicited or error CQE).
    bool has_match(int type) const;
    void write_doorbell(uint8_t hw_arm);
    // From the ISR (EVENT_CQ_COMPLETION / EVENT_CQ_ERROR) or a driver DPC.
    void on_event(NTSTATUS status);
    template <typename R>
    ULONG poll(R* results, ULONG n);
};

struct srq_impl : NDK_SRQ, object_base {
    uint32_t srqn = 0;
    pd_impl* pd = nullptr;
    uint32_t depth = 0;
    uint32_t log_size = 0;
    uint32_t max_sge = 0;
    uint32_t stride = 0;
    uint8_t* ring = nullptr;
    uint32_t producer = 0;
    uint32_t consumer = 0;  // retired by receive CQEs
    std::vector<void*> shadow;
    uint32_t notify_threshold = 0;
    NDK_FN_SRQ_NOTIFICATION_CALLBACK notify_cb = nullptr;
    void* notify_ctx = nullptr;

    bool dead = false;  // EVENT_SRQ_ERROR / EVENT_DEVICE_FATAL seen
    bool dead_reported = false;

    void teardown(std::function<void()> done) override;
    void retire(uint16_t wqe_index);
    // EVENT_SRQ_ERROR or device fatal (ISR): STATUS_INTERNAL_ERROR to the armed notification
    // (once), else to the next NdkModifySrq that arms it (qp.cpp).
    void on_error();
};

struct sq_shadow_entry {
    void* context = nullptr;
    NDK_OPERATION_TYPE type = NdkOperationTypeSend;
};

struct qp_impl : NDK_QP, object_base {
    enum conn_state { IDLE, CONNECTING, CONNECTED, DISCONNECTED };
    uint32_t qpn = 0;
    pd_impl* pd = nullptr;
    cq_impl* recv_cq = nullptr;
    cq_impl* send_cq = nullptr;
    srq_impl* srq = nullptr;
    void* context = nullptr;
    uint32_t sq_depth = 0, rq_depth = 0;  // consumer's depths
    uint32_t sq_log = 0, rq_log = 0;      // ring sizes 2^log
    uint32_t max_send_sge = 0, max_recv_sge = 0, max_inline = 0;
    uint32_t sq_stride = 0, rq_stride = 0;
    uint8_t* sq_ring = nullptr;
    uint8_t* rq_ring = nullptr;
    uint32_t sq_producer = 0, sq_consumer = 0;  // free-running
    uint32_t rq_producer = 0, rq_consumer = 0;
    std::vector<sq_shadow_entry> sq_shadow;
    std::vector<void*> rq_shadow;
    bool doorbell_pending = false;  // DEFERred WQEs not yet rung
    conn_state state = IDLE;
    connector_impl* connector = nullptr;

    void teardown(std::function<void()> done) override;
    // Doorbell for the WQEs posted so far; `wqe` (its `bytes`, 0: none) is the one WQE this
    // doorbell announces, pushed with it when host.wqe_push is on and it fits wqe_push_bytes
    // (and, with host.wqe_push_inline_only, carries its payload inline).
    void ring_sq(const uint8_t* wqe, uint32_t bytes, bool inline_data = false);
    // Writes one SQ WQE (ctrl + `payload` bytes after it) and rings unless deferred.
    NTSTATUS post_sq(hsi::wqe_ctrl ctrl, const void* payload, uint32_t payload_bytes,
                     void* request_context, NDK_OPERATION_TYPE type, ULONG flags);
    NTSTATUS fail(NTSTATUS status);  // inline failure: flush deferred doorbells first
    void retire_sq(uint16_t wqe_index);
    void retire_rq(uint16_t wqe_index);
};

struct mr_impl : NDK_MR, object_base {
    pd_impl* pd = nullptr;
    bool fast_register = false;
    uint32_t index = 0;                // key index
    uint32_t variant = 0;              // key variant byte
    bool registered = false;           // RegisterMr or InitializeFastRegisterMr completed
    bool remote_access = false;        // fast-reg: initialised with RemoteAccess
    uint32_t access = 0;               // hsi::mr_access of the current registration
    uint32_t page_capacity = 0;        // fast-reg
    uint64_t* fr_page_list = nullptr;  // fast-reg page list (driver memory the NIC reads)
    uint32_t key() const { return index << 8 | (variant & 0xFF); }
    void teardown(std::function<void()> done) override;
};

struct mw_impl : NDK_MW, object_base {
    pd_impl* pd = nullptr;
    uint32_t index = 0;
    uint32_t variant = 0;
    uint32_t key() const { return index << 8 | (variant & 0xFF); }
    void teardown(std::function<void()> done) override;
};

struct listener_impl : NDK_LISTENER, object_base {
    NDK_FN_CONNECT_EVENT_CALLBACK connect_cb = nullptr;
    void* connect_ctx = nullptr;
    bool listening = false;
    bool paused = false;
    uint16_t port = 0;
    void teardown(std::function<void()> done) override;
};

struct shared_endpoint_impl : NDK_SHARED_ENDPOINT, object_base {
    uint16_t port = 0;
    void teardown(std::function<void()> done) override;
};

struct connector_impl : NDK_CONNECTOR, object_base {
    enum state_t {
        IDLE,
        CONNECTING,    // active: REQ sent
        REPLIED,       // active: REP received, Connect completed, CompleteConnect due
        COMPLETING,    // active: CompleteConnect modifying the QP
        REQ_RECEIVED,  // passive: handed to the listener's connect event
        ACCEPTING,     // passive: REP sent, waiting for RTU
        CONNECTED,
        DISCONNECTING,  // local Disconnect: DREQ sent
        PEER_DISCONNECTED,
        DISCONNECTED,
        REJECTED,  // REJ received (active) or sent (passive)
    };
    state_t state = IDLE;
    bool passive = false;
    uint32_t conn_id = 0;    // local communication ID
    uint32_t peer_conn = 0;  // the peer's (0 until it answered)
    qp_impl* qp = nullptr;
    uint32_t local_ip = 0, peer_ip = 0;
    uint16_t local_port = 0, peer_port = 0;
    bool owns_port = false;  // took a port reference (active, not via shared endpoint)
    uint32_t my_ird = 0, my_ord = 0;
    uint32_t my_psn = 0;
    cm_message peer;  // the peer's REQ (passive) or REP/REJ (active)
    bool have_peer = false;
    std::array<uint8_t, 6> peer_mac{};  // next hop's MAC (ARP) or the MAC of the peer's MADs
    bool resolving = false;             // Connect waits for the next hop's MAC (ARP)
    uint64_t resolve_token = 0;         // its neighbour-cache waiter
    bool holds_cm_id = false;           // counts in the adapter's CM ID table
    // Retransmission of the last REQ / REP / DREQ until its answer (CM response timeout).
    cm_message last_sent;
    uint64_t timer = 0;  // host DPC token of the pending timeout (0 = none)
    uint32_t retries_left = 0;
    // Pending request completions.
    NDK_FN_REQUEST_COMPLETION req_cb = nullptr;
    void* req_ctx = nullptr;
    NDK_FN_REQUEST_COMPLETION disc_req_cb = nullptr;
    void* disc_req_ctx = nullptr;
    // Disconnect event (plain or Ex).
    NDK_FN_DISCONNECT_EVENT_CALLBACK disc_cb = nullptr;
    NDK_FN_DISCONNECT_EVENT_CALLBACK_EX disc_cb_ex = nullptr;
    void* disc_ctx = nullptr;
    bool disc_reported = false;

    bool awaiting_peer = false;  // the pending request completes on a peer message
    bool timed_out = false;      // active: CompleteConnect missed the RTU deadline

    void teardown(std::function<void()> done) override;
    void cancel() override;
    void complete_request(NTSTATUS status);
    void complete_disconnect(NTSTATUS status);
    void on_message(const cm_message& m);
    void send(cm_message m);
    // Sends `m` and retransmits it every CM response timeout (`service` times longer after an
    // MRA) until stop_timer(); after cm_retries retransmissions on_timeout() runs.
    void send_reliable(cm_message m, double timeout_ns = 0);
    void stop_timer();
    void on_timeout();
    void detach_qp(bool flush);
    void report_disconnect();
    // Neighbour resolution of the next hop finished: send the REQ, or fail the Connect with
    // STATUS_HOST_UNREACHABLE.
    void on_resolved(bool resolved, const std::array<uint8_t, 6>& mac);
};

// --------------------------------------------------------------------------------------------
struct adapter_impl : NDK_ADAPTER, object_base {
    host_system& host;
    adapter_params params;
    NDK_VERSION version{1, 2};
    adapter_counters counters;

    // Command ring and event queue.
    hsi::cmd_slot* cmdq = nullptr;
    uint32_t cmd_producer = 0, cmd_consumer = 0;
    uint32_t next_token = 0;
    struct pending_cmd {
        uint32_t slot = 0;
        std::function<void(uint8_t)> done;
    };
    std::map<uint32_t, pending_cmd> cmds;  // by token
    std::vector<uint32_t> slot_token;      // 0 = slot free
    hsi::event_entry* eq = nullptr;
    void* icm = nullptr;  // context memory lent to the NIC (REG_ICM_BASE)
    uint32_t eq_consumer = 0;
    // CMD_QUERY_DEVICE answer, asked once (device_caps() in cq.cpp).
    bool caps_known = false;
    uint32_t caps = 0;
    bool fatal = false;  // EVENT_DEVICE_FATAL seen: the NIC is dead

    handle_pool qpns, cqns, pdns, srqns, keys;
    std::vector<uint8_t> key_variant;  // per key index: last variant byte used
    std::vector<qp_impl*> qp_table;
    std::vector<cq_impl*> cq_table;
    std::vector<srq_impl*> srq_table;
    std::map<uint32_t, connector_impl*> conns;  // by local communication ID
    uint32_t next_conn = 0;
    uint32_t cm_ids_in_use = 0;  // connectors and listeners (cm_id_entries())
    uint64_t next_tid = 0;
    // GSI (QP1) rings: CM MADs on the wire (hsi GSI section).
    uint8_t* gsi_sq = nullptr;
    uint8_t* gsi_rq = nullptr;
    uint32_t gsi_sq_producer = 0, gsi_sq_consumer = 0;
    uint32_t gsi_rq_consumer = 0;
    cm_counters cm_stats;
    // REJs sent by NdkReject, answered again to a retransmitted REQ (newest last, at most 64).
    std::deque<cm_message> recent_rejects;
    std::map<uint16_t, listener_impl*> listeners;
    std::map<uint16_t, uint32_t> port_refs;
    uint16_t next_ephemeral = 49152;
    hw::quick_event children_gone;

    adapter_impl(host_system& h, const adapter_params& p);
    ~adapter_impl() override;

    bool sync() const { return !host.config().async_create; }
    NTSTATUS init();

    // Commands: run in ring order; `done(first non-OK status or CMD_OK)` once all finished.
    // wait = true blocks the caller (polling the slots) and calls `done` before returning.
    void commands(std::vector<hsi::cmd_slot> list, bool wait, std::function<void(uint8_t)> done);
    uint32_t post_command(const hsi::cmd_slot& cmd, std::function<void(uint8_t)> done);
    bool complete_command(uint32_t token);  // false if unknown or not done
    void isr();

    // Close machinery.
    NTSTATUS close_object(object_base* o, NDK_FN_CLOSE_COMPLETION cb, void* ctx);
    void progress(object_base* o);
    void finalize(object_base* o);
    template <typename T>
    void init_header(T* obj, NDK_OBJECT_TYPE type, const void* dispatch);

    // Ports of this adapter's IP.
    NTSTATUS take_port(uint16_t& port);  // 0 = ephemeral
    void release_port(uint16_t port);
    uint32_t new_key(uint32_t index);  // next variant for a key index

    // CM transport (connector.cpp).
    uint32_t new_conn_id();
    // CM ID table: false when all cm_id_entries(host config, max_qps) entries are taken.
    bool take_cm_id();
    void release_cm_id();
    // Sends a CM message to `dst_mac` as a MAD on the GSI send ring. Fills in the sender's MAC.
    void cm_send(cm_message m, const std::array<uint8_t, 6>& dst_mac);
    // Sends an ARP frame (request or duplicate-address probe) on the GSI send ring.
    void arp_send(const arp_packet& a);
    // A free GSI send slot (reclaiming sent ones), or nullptr when the ring is full.
    uint8_t* gsi_send_slot();
    void gsi_init();     // programs the GSI rings (after init())
    void gsi_release();  // turns the rings off and frees them (close_adapter)
    void gsi_poll();     // EVENT_GSI_RECEIVE: decode and dispatch the received MADs and ARP
    void arp_receive(const arp_packet& a);
    // Duplicate address detection (RFC 5227 probes, host config dad_probes): true if another
    // node answered for params.ip. Blocks the caller (open_adapter) for the probe interval.
    bool address_in_use();
    bool dad_conflict = false;  // an ARP frame from another MAC named params.ip as its sender
    void cm_receive(const cm_message& msg);
};

// Dispatch tables (dispatch.cpp).
extern const NDK_ADAPTER_DISPATCH adapter_dispatch;
extern const NDK_PD_DISPATCH pd_dispatch;
extern const NDK_CQ_DISPATCH cq_dispatch;
extern const NDK_QP_DISPATCH qp_dispatch;
extern const NDK_SRQ_DISPATCH srq_dispatch;
extern const NDK_MR_DISPATCH mr_dispatch;
extern const NDK_MW_DISPATCH mw_dispatch;
extern const NDK_CONNECTOR_DISPATCH connector_dispatch;
extern const NDK_LISTENER_DISPATCH listener_dispatch;
extern const NDK_SHARED_ENDPOINT_DISPATCH shared_endpoint_dispatch;

template <typename T>
void adapter_impl::init_header(T* obj, NDK_OBJECT_TYPE type, const void* dispatch) {
    obj->Header = NDK_OBJECT_HEADER{};
    obj->Header.Version = version;
    obj->Header.ObjectType = type;
    obj->Dispatch = static_cast<decltype(obj->Dispatch)>(dispatch);
}

// Impl from an NDK object pointer.
inline adapter_impl* impl(NDK_ADAPTER* p) {
    return static_cast<adapter_impl*>(p);
}
inline pd_impl* impl(NDK_PD* p) {
    return static_cast<pd_impl*>(p);
}
inline cq_impl* impl(NDK_CQ* p) {
    return static_cast<cq_impl*>(p);
}
inline qp_impl* impl(NDK_QP* p) {
    return static_cast<qp_impl*>(p);
}
inline srq_impl* impl(NDK_SRQ* p) {
    return static_cast<srq_impl*>(p);
}
inline mr_impl* impl(NDK_MR* p) {
    return static_cast<mr_impl*>(p);
}
inline mw_impl* impl(NDK_MW* p) {
    return static_cast<mw_impl*>(p);
}
inline connector_impl* impl(NDK_CONNECTOR* p) {
    return static_cast<connector_impl*>(p);
}
inline listener_impl* impl(NDK_LISTENER* p) {
    return static_cast<listener_impl*>(p);
}
inline shared_endpoint_impl* impl(NDK_SHARED_ENDPOINT* p) {
    return static_cast<shared_endpoint_impl*>(p);
}
// Any object header -> its object_base (by ObjectType).
object_base* base_of(NDK_OBJECT_HEADER* h);

// Helpers shared by the translation units.
uint32_t log2_ceil(uint32_t v);
// The deepest queue the driver offers under a NIC limit (rnic.limits.max_qp_depth,
// max_srq_depth, max_cq_depth): the largest power of two not above it. Rings are powers of two
// and the NIC refuses a ring larger than its limit, so a limit of 100 gives 64: QueryAdapterInfo
// reports it and Create* refuse anything deeper inline (STATUS_INVALID_PARAMETER).
uint32_t usable_depth(uint32_t nic_limit);
// The NIC's hsi::device_caps (CMD_QUERY_DEVICE, synchronous, asked once per adapter).
uint32_t device_caps(adapter_impl* ad);
// EVENT_DEVICE_FATAL (ISR): every CQ and SRQ reports STATUS_INTERNAL_ERROR, QPs are dead.
void device_fatal(adapter_impl* ad);
uint32_t path_mtu_log(uint32_t mtu);
// Bus addresses of the PAGE_SIZE pages of [MmGetMdlVirtualAddress(mdl), +length) over an MDL
// chain, and the offset of the first byte. INVALID_PARAMETER if the chain is not virtually
// contiguous or shorter than `length`.
NTSTATUS mdl_pages(const MDL* mdl, SIZE_T length, std::vector<uint64_t>& pages, ULONG& fbo);
NTSTATUS read_sockaddr(const SOCKADDR* a, ULONG len, uint32_t& ip, uint16_t& port);
NTSTATUS write_sockaddr(uint32_t ip, uint16_t port, SOCKADDR* a, ULONG* len);

// Entry points (the dispatch tables point at these).
NTSTATUS query_extension(NDK_OBJECT_HEADER*, GUID*, NDK_VERSION, NDK_EXTENSION_INTERFACE*);
NTSTATUS close_any(NDK_OBJECT_HEADER* h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx);

NTSTATUS query_adapter_info(NDK_ADAPTER*, NDK_ADAPTER_INFO*, ULONG*);
NTSTATUS create_cq(NDK_ADAPTER*, ULONG, NDK_FN_CQ_NOTIFICATION_CALLBACK, PVOID, GROUP_AFFINITY*,
                   NDK_FN_CREATE_COMPLETION, PVOID, NDK_CQ**);
NTSTATUS create_pd(NDK_ADAPTER*, NDK_FN_CREATE_COMPLETION, PVOID, NDK_PD**);
NTSTATUS create_shared_endpoint(NDK_ADAPTER*, CONST PSOCKADDR, ULONG, NDK_FN_CREATE_COMPLETION,
                                PVOID, NDK_SHARED_ENDPOINT**);
NTSTATUS create_connector(NDK_ADAPTER*, NDK_FN_CREATE_COMPLETION, PVOID, NDK_CONNECTOR**);
NTSTATUS create_listener(NDK_ADAPTER*, NDK_FN_CONNECT_EVENT_CALLBACK, PVOID,
                         NDK_FN_CREATE_COMPLETION, PVOID, NDK_LISTENER**);
NTSTATUS build_lam(NDK_ADAPTER*, MDL*, SIZE_T, NDK_FN_REQUEST_COMPLETION, PVOID,
                   NDK_LOGICAL_ADDRESS_MAPPING*, ULONG*, ULONG*);
VOID release_lam(NDK_ADAPTER*, NDK_LOGICAL_ADDRESS_MAPPING*);

NTSTATUS create_mr(NDK_PD*, BOOLEAN, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MR**);
NTSTATUS create_mw(NDK_PD*, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MW**);
NTSTATUS create_srq(NDK_PD*, ULONG, ULONG, ULONG, NDK_FN_SRQ_NOTIFICATION_CALLBACK, PVOID,
                    GROUP_AFFINITY*, NDK_FN_CREATE_COMPLETION, PVOID, NDK_SRQ**);
NTSTATUS create_qp(NDK_PD*, NDK_CQ*, NDK_CQ*, PVOID, ULONG, ULONG, ULONG, ULONG, ULONG,
                   NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP**);
NTSTATUS create_qp_with_srq(NDK_PD*, NDK_CQ*, NDK_CQ*, NDK_SRQ*, PVOID, ULONG, ULONG, ULONG,
                            NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP**);
VOID get_privileged_token(NDK_PD*, UINT32*);

NTSTATUS resize_cq(NDK_CQ*, ULONG, NDK_FN_REQUEST_COMPLETION, PVOID);
VOID arm_cq(NDK_CQ*, ULONG);
ULONG get_cq_results(NDK_CQ*, NDK_RESULT[], ULONG);
NTSTATUS control_cq_moderation(NDK_CQ*, ULONG, ULONG);
ULONG get_cq_results_ex(NDK_CQ*, NDK_RESULT_EX[], ULONG);

VOID flush_qp(NDK_QP*);
NTSTATUS qp_send(NDK_QP*, PVOID, CONST NDK_SGE*, ULONG, ULONG);
NTSTATUS qp_receive(NDK_QP*, PVOID, CONST NDK_SGE*, ULONG);
NTSTATUS qp_bind(NDK_QP*, PVOID, NDK_MR*, NDK_MW*, PVOID, SIZE_T, ULONG);
NTSTATUS qp_fast_register(NDK_QP*, PVOID, NDK_MR*, ULONG, CONST NDK_LOGICAL_ADDRESS*, ULONG, SIZE_T,
                          PVOID, ULONG);
NTSTATUS qp_invalidate(NDK_QP*, PVOID, NDK_OBJECT_HEADER*, ULONG);
NTSTATUS qp_read(NDK_QP*, PVOID, CONST NDK_SGE*, ULONG, UINT64, UINT32, ULONG);
NTSTATUS qp_write(NDK_QP*, PVOID, CONST NDK_SGE*, ULONG, UINT64, UINT32, ULONG);
NTSTATUS qp_send_and_invalidate(NDK_QP*, PVOID, CONST NDK_SGE*, ULONG, ULONG, UINT32);

NTSTATUS modify_srq(NDK_SRQ*, ULONG, ULONG, NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS srq_receive(NDK_SRQ*, PVOID, CONST NDK_SGE*, ULONG);

NTSTATUS register_mr(NDK_MR*, MDL*, SIZE_T, ULONG, NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS deregister_mr(NDK_MR*, NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS initialize_fast_register_mr(NDK_MR*, ULONG, BOOLEAN, NDK_FN_REQUEST_COMPLETION, PVOID);
UINT32 mr_remote_token(NDK_MR*);
UINT32 mr_local_token(NDK_MR*);
UINT32 mw_remote_token(NDK_MW*);

NTSTATUS connect(NDK_CONNECTOR*, NDK_QP*, CONST PSOCKADDR, ULONG, CONST PSOCKADDR, ULONG, ULONG,
                 ULONG, CONST PVOID, ULONG, NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS connect_with_shared_endpoint(NDK_CONNECTOR*, NDK_QP*, NDK_SHARED_ENDPOINT*,
                                      CONST PSOCKADDR, ULONG, ULONG, ULONG, CONST PVOID, ULONG,
                                      NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS complete_connect(NDK_CONNECTOR*, NDK_FN_DISCONNECT_EVENT_CALLBACK, PVOID,
                          NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS complete_connect_ex(NDK_CONNECTOR*, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX, PVOID,
                             NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS accept(NDK_CONNECTOR*, NDK_QP*, ULONG, ULONG, CONST PVOID, ULONG,
                NDK_FN_DISCONNECT_EVENT_CALLBACK, PVOID, NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS accept_ex(NDK_CONNECTOR*, NDK_QP*, ULONG, ULONG, CONST PVOID, ULONG,
                   NDK_FN_DISCONNECT_EVENT_CALLBACK_EX, PVOID, NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS reject(NDK_CONNECTOR*, CONST PVOID, ULONG);
NTSTATUS get_connection_data(NDK_CONNECTOR*, ULONG*, ULONG*, PVOID, ULONG*);
NTSTATUS connector_local_address(NDK_CONNECTOR*, PSOCKADDR, ULONG*);
NTSTATUS connector_peer_address(NDK_CONNECTOR*, PSOCKADDR, ULONG*);
NTSTATUS disconnect(NDK_CONNECTOR*, NDK_FN_REQUEST_COMPLETION, PVOID);

NTSTATUS listen(NDK_LISTENER*, CONST PSOCKADDR, ULONG, NDK_FN_REQUEST_COMPLETION, PVOID);
NTSTATUS listener_local_address(NDK_LISTENER*, PSOCKADDR, ULONG*);
VOID control_connect_events(NDK_LISTENER*, BOOLEAN);
NTSTATUS shared_endpoint_local_address(NDK_SHARED_ENDPOINT*, PSOCKADDR, ULONG*);

// Provider limits not in nic_limits.
constexpr ULONG MAX_CALLER_DATA = CM_REQ_CALLER_DATA;  // REQ private data (cm_mad.h)
constexpr ULONG MAX_CALLEE_DATA = CM_CALLEE_DATA;      // REJ's (REP allows more): the smaller one

}  // namespace rnic::ndk::provider
