// SPDX-License-Identifier: Apache-2.0
// A consumer written only against the NDKPI names, on two real nodes (host, PCIe, NIC) joined by
// one Ethernet link: ping-pong with SEND / RECEIVE, RDMA WRITE followed by a SEND that solicits
// the peer's notification (the NDK way of "write with immediate"), and a fast-registered region
// written remotely, then invalidated. Every byte is checked. Beyond the NDK dispatch tables the
// consumer uses only what the simulator substitutes for the kernel (ndk_sim.h): how it obtains
// the adapter (open_adapter / close_adapter, the NDIS role), kernel memory and MDLs
// (host_system::alloc / build_mdl); it runs in simulated time (SC_THREAD, wait()).
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hw/common/sim_context.h"
#include "ndk_shim/ndk_sim.h"
#include "ndk_shim/ndkpi.h"
#include "testbench/scenario/node.h"
#include "testbench/scenario/scenario_config.h"
#include "tlm/ethernet/eth_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace rnic::ndk::consumer_test {
namespace {

constexpr USHORT PORT = 5000;
constexpr ULONG MSG = 256;          // ping-pong message bytes
constexpr ULONG BULK = 64 * 1024;   // RDMA WRITE payload
constexpr ULONG FR_PAGES = 4;       // fast-registered region: 4 pages
constexpr ULONG FR_FBO = 200;       // starting 200 bytes into the first page
constexpr ULONG FR_LEN = 3 * 4096;  // bytes of the fast-registered region

// Two nodes and their link, as a scenario builds them (one elaboration per process: the modules
// stay allocated until the process exits, like the runner's).
struct bench {
    hw::sim_context ctx;
    scenario::scenario_config cfg;
    fabric::eth_link* link;
    scenario::node* nodes[2];
    bench()
        : cfg(scenario::parse_scenario(nlohmann::json::object())) {
        link = new fabric::eth_link("link", cfg.topology.link, ctx);
        nodes[0] = new scenario::node("node0", 0, cfg, *link, ctx);
        nodes[1] = new scenario::node("node1", 1, cfg, *link, ctx);
    }
    adapter_params params(size_t i) const {
        const auto& nc = cfg.topology.nodes[i];
        adapter_params p;
        p.node_id = static_cast<uint32_t>(i);
        p.mac = nc.mac;
        p.ip = nc.ip;
        p.limits = cfg.rnic.limits;
        p.default_mtu = nc.mtu;
        return p;
    }
};

// ---------------------------------------------------------------------------------------------
// The consumer: NDK calls only. Every asynchronous call is handled in both ways the documents
// allow (an inline status, or STATUS_PENDING and exactly one completion callback).
// ---------------------------------------------------------------------------------------------
struct pending {
    sc_core::sc_event ev;
    bool done = false;
    NTSTATUS status = STATUS_PENDING;
    NDK_OBJECT_HEADER* object = nullptr;
    static VOID on_create(PVOID ctx, NTSTATUS st, NDK_OBJECT_HEADER* obj) {
        auto* p = static_cast<pending*>(ctx);
        p->object = obj;
        p->finish(st);
    }
    static VOID on_request(PVOID ctx, NTSTATUS st) { static_cast<pending*>(ctx)->finish(st); }
    static VOID on_close(PVOID ctx) { static_cast<pending*>(ctx)->finish(STATUS_SUCCESS); }
    void finish(NTSTATUS st) {
        status = st;
        done = true;
        ev.notify(sc_core::SC_ZERO_TIME);
    }
    NTSTATUS wait(NTSTATUS returned) {
        if (returned != STATUS_PENDING) {
            return returned;
        }
        while (!done) {
            sc_core::wait(ev);
        }
        return status;
    }
};

// CQ notifications (NdkArmCq) counted and signalled to the consumer thread.
struct cq_events {
    sc_core::sc_event ev;
    int count = 0;
    NTSTATUS last = STATUS_PENDING;
    static VOID fn(PVOID ctx, NTSTATUS st) {
        auto* e = static_cast<cq_events*>(ctx);
        ++e->count;
        e->last = st;
        e->ev.notify(sc_core::SC_ZERO_TIME);
    }
};

struct connect_events {
    sc_core::sc_event ev;
    NDK_CONNECTOR* incoming = nullptr;
    static VOID fn(PVOID ctx, NDK_CONNECTOR* c) {
        auto* e = static_cast<connect_events*>(ctx);
        e->incoming = c;
        e->ev.notify(sc_core::SC_ZERO_TIME);
    }
};

// A registered buffer: kernel memory, its MDL, an MR over all of it.
struct region {
    uint8_t* data = nullptr;
    ULONG bytes = 0;
    MDL* mdl = nullptr;
    NDK_MR* mr = nullptr;
    UINT32 token = 0;
};

// The message a side sends to advertise a region to its peer.
struct advert {
    UINT64 address;
    UINT32 token;
    UINT32 length;
};

class side {
public:
    side(host_system& h, const adapter_params& p)
        : m_host(h)
        , m_params(p) {}

    NDK_ADAPTER* adapter = nullptr;
    NDK_PD* pd = nullptr;
    NDK_CQ* cq = nullptr;
    NDK_QP* qp = nullptr;
    NDK_CONNECTOR* connector = nullptr;
    NDK_LISTENER* listener = nullptr;
    NDK_ADAPTER_INFO info{};
    cq_events notes;
    connect_events connects;

    void open() {
        ASSERT_EQ(open_adapter(m_host, m_params, &adapter), STATUS_SUCCESS);
        ULONG size = sizeof(info);
        ASSERT_EQ(adapter->Dispatch->NdkQueryAdapterInfo(adapter, &info, &size), STATUS_SUCCESS);
        {
            pending p;
            NDK_PD* out = nullptr;
            const NTSTATUS st =
                adapter->Dispatch->NdkCreatePd(adapter, pending::on_create, &p, &out);
            ASSERT_EQ(p.wait(st), STATUS_SUCCESS);
            pd = st == STATUS_PENDING ? reinterpret_cast<NDK_PD*>(p.object) : out;
        }
        {
            pending p;
            NDK_CQ* out = nullptr;
            const NTSTATUS st = adapter->Dispatch->NdkCreateCq(
                adapter, 64, cq_events::fn, &notes, nullptr, pending::on_create, &p, &out);
            ASSERT_EQ(p.wait(st), STATUS_SUCCESS);
            cq = st == STATUS_PENDING ? reinterpret_cast<NDK_CQ*>(p.object) : out;
        }
        {
            pending p;
            NDK_QP* out = nullptr;
            const NTSTATUS st = pd->Dispatch->NdkCreateQp(
                pd, cq, cq, this, 32, 32, 2, 2, std::min<ULONG>(64, info.MaxInlineDataSize),
                pending::on_create, &p, &out);
            ASSERT_EQ(p.wait(st), STATUS_SUCCESS);
            qp = st == STATUS_PENDING ? reinterpret_cast<NDK_QP*>(p.object) : out;
        }
    }

    region make_region(ULONG bytes, ULONG flags) {
        region r;
        r.bytes = bytes;
        r.data = static_cast<uint8_t*>(m_host.alloc(bytes));
        std::memset(r.data, 0, bytes);
        r.mdl = m_host.build_mdl(r.data, bytes);
        pending c;
        NDK_MR* out = nullptr;
        const NTSTATUS st = pd->Dispatch->NdkCreateMr(pd, FALSE, pending::on_create, &c, &out);
        EXPECT_EQ(c.wait(st), STATUS_SUCCESS);
        r.mr = st == STATUS_PENDING ? reinterpret_cast<NDK_MR*>(c.object) : out;
        pending reg;
        EXPECT_EQ(reg.wait(r.mr->Dispatch->NdkRegisterMr(r.mr, r.mdl, bytes, flags,
                                                         pending::on_request, &reg)),
                  STATUS_SUCCESS);
        r.token = r.mr->Dispatch->NdkGetLocalTokenFromMr(r.mr);
        return r;
    }

    // Passive side: listen on PORT.
    void listen() {
        pending c;
        NDK_LISTENER* out = nullptr;
        const NTSTATUS st = adapter->Dispatch->NdkCreateListener(
            adapter, connect_events::fn, &connects, pending::on_create, &c, &out);
        ASSERT_EQ(c.wait(st), STATUS_SUCCESS);
        listener = st == STATUS_PENDING ? reinterpret_cast<NDK_LISTENER*>(c.object) : out;
        SOCKADDR_IN a = sockaddr(m_params.ip, PORT);
        pending l;
        ASSERT_EQ(l.wait(listener->Dispatch->NdkListen(listener, reinterpret_cast<PSOCKADDR>(&a),
                                                       sizeof(a), pending::on_request, &l)),
                  STATUS_SUCCESS);
    }

    // Active side: Connect, then CompleteConnect. Passive side: Accept the incoming request.
    void connect_to(uint32_t peer_ip, side& passive) {
        pending c;
        NDK_CONNECTOR* out = nullptr;
        const NTSTATUS st =
            adapter->Dispatch->NdkCreateConnector(adapter, pending::on_create, &c, &out);
        ASSERT_EQ(c.wait(st), STATUS_SUCCESS);
        connector = st == STATUS_PENDING ? reinterpret_cast<NDK_CONNECTOR*>(c.object) : out;
        SOCKADDR_IN dst = sockaddr(peer_ip, PORT);
        pending connected;
        const NTSTATUS cst = connector->Dispatch->NdkConnect(
            connector, qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&dst), sizeof(dst), 4, 4,
            nullptr, 0, pending::on_request, &connected);
        while (passive.connects.incoming == nullptr) {
            sc_core::wait(passive.connects.ev);
        }
        passive.connector = passive.connects.incoming;
        pending accepted;
        const NTSTATUS ast = passive.connector->Dispatch->NdkAccept(
            passive.connector, passive.qp, 4, 4, nullptr, 0, nullptr, nullptr, pending::on_request,
            &accepted);
        ASSERT_EQ(connected.wait(cst), STATUS_SUCCESS);
        pending completed;
        ASSERT_EQ(completed.wait(connector->Dispatch->NdkCompleteConnect(
                      connector, nullptr, nullptr, pending::on_request, &completed)),
                  STATUS_SUCCESS);
        ASSERT_EQ(accepted.wait(ast), STATUS_SUCCESS);
    }

    // Polls until `n` completions arrived (the polling consumer's spin-wait in between).
    std::vector<NDK_RESULT_EX> reap(size_t n) {
        std::vector<NDK_RESULT_EX> v;
        NDK_RESULT_EX r[8];
        const sc_core::sc_time end =
            sc_core::sc_time_stamp() + sc_core::sc_time(20, sc_core::SC_MS);
        while (v.size() < n && sc_core::sc_time_stamp() < end) {
            const ULONG k = cq->Dispatch->NdkGetCqResultsEx(cq, r, 8);
            v.insert(v.end(), r, r + k);
            if (k == 0) {
                // A CPU spinning on the CQ: one poll every 200 ns (wait_for_completion_activity
                // can miss a CQE written while the poll's own doorbell write is in flight).
                sc_core::wait(sc_core::sc_time(200, sc_core::SC_NS));
            }
        }
        return v;
    }

    NTSTATUS receive(void* ctx, const region& r, ULONG off, ULONG len) {
        NDK_SGE s{};
        s.VirtualAddress = r.data + off;
        s.Length = len;
        s.MemoryRegionToken = r.token;
        return qp->Dispatch->NdkReceive(qp, ctx, &s, 1);
    }
    NTSTATUS send(void* ctx, const region& r, ULONG off, ULONG len, ULONG flags) {
        NDK_SGE s{};
        s.VirtualAddress = r.data + off;
        s.Length = len;
        s.MemoryRegionToken = r.token;
        return qp->Dispatch->NdkSend(qp, ctx, &s, 1, flags);
    }

    host_system& host() { return m_host; }

    static SOCKADDR_IN sockaddr(uint32_t ip, USHORT port) {
        SOCKADDR_IN a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(ip);
        return a;
    }

private:
    host_system& m_host;
    adapter_params m_params;
};

void fill(uint8_t* p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; ++i) {
        p[i] = static_cast<uint8_t>((i * 131 + seed * 17 + (i >> 8)) & 0xFF);
    }
}

bool same(const uint8_t* p, size_t n, uint32_t seed) {
    std::vector<uint8_t> want(n);
    fill(want.data(), n, seed);
    return std::memcmp(p, want.data(), n) == 0;
}

void run(std::function<void()> body) {
    sc_core::sc_spawn([body] {
        body();
        sc_core::sc_stop();
    });
    sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_SEC));
}

// ---------------------------------------------------------------------------------------------
TEST(NdkConsumer, PingPongWriteSolicitAndFastRegister) {
    bench b;
    bool finished = false;
    run([&] {
        side a(b.nodes[0]->host, b.params(0));
        side p(b.nodes[1]->host, b.params(1));
        a.open();
        p.open();
        ASSERT_NE(a.qp, nullptr);
        ASSERT_NE(p.qp, nullptr);
        p.listen();
        // Receives may be posted before the connection exists.
        region a_msgs = a.make_region(16 * MSG, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
        region p_msgs = p.make_region(16 * MSG, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
        for (ULONG i = 0; i < 8; ++i) {
            ASSERT_EQ(p.receive(reinterpret_cast<void*>(uintptr_t{i}), p_msgs, i * MSG, MSG),
                      STATUS_SUCCESS);
            ASSERT_EQ(a.receive(reinterpret_cast<void*>(uintptr_t{i}), a_msgs, i * MSG, MSG),
                      STATUS_SUCCESS);
        }
        a.connect_to(b.params(1).ip, p);

        // 1. Ping-pong: a sends "ping i" (MSG bytes) from slot 8 + i, p checks it and answers
        //    from its slot 8 + i with a different pattern; a checks the answer.
        for (ULONG i = 0; i < 8; ++i) {
            fill(a_msgs.data + (8 + i) * MSG, MSG, 100 + i);
            ASSERT_EQ(a.send(reinterpret_cast<void*>(uintptr_t{0x100 + i}), a_msgs, (8 + i) * MSG,
                             MSG, 0),
                      STATUS_SUCCESS);
            auto got = p.reap(1);
            ASSERT_EQ(got.size(), 1u);
            EXPECT_EQ(got[0].Status, STATUS_SUCCESS);
            EXPECT_EQ(got[0].Type, NdkOperationTypeReceive);
            EXPECT_EQ(got[0].QPContext, &p);
            EXPECT_EQ(got[0].RequestContext, reinterpret_cast<void*>(uintptr_t{i}));
            EXPECT_EQ(got[0].BytesTransferred, MSG);
            EXPECT_TRUE(same(p_msgs.data + i * MSG, MSG, 100 + i)) << "ping " << i;
            fill(p_msgs.data + (8 + i) * MSG, MSG, 200 + i);
            ASSERT_EQ(p.send(reinterpret_cast<void*>(uintptr_t{0x200 + i}), p_msgs, (8 + i) * MSG,
                             MSG, 0),
                      STATUS_SUCCESS);
            // a: its send's completion and the pong, in either order.
            auto mine = a.reap(2);
            ASSERT_EQ(mine.size(), 2u);
            bool saw_send = false, saw_recv = false;
            for (const auto& r : mine) {
                EXPECT_EQ(r.Status, STATUS_SUCCESS);
                if (r.Type == NdkOperationTypeSend) {
                    saw_send = r.RequestContext == reinterpret_cast<void*>(uintptr_t{0x100 + i});
                } else if (r.Type == NdkOperationTypeReceive) {
                    saw_recv = r.BytesTransferred == MSG;
                }
            }
            EXPECT_TRUE(saw_send && saw_recv) << "round " << i;
            EXPECT_TRUE(same(a_msgs.data + i * MSG, MSG, 200 + i)) << "pong " << i;
            auto sent = p.reap(1);
            ASSERT_EQ(sent.size(), 1u);
            EXPECT_EQ(sent[0].Type, NdkOperationTypeSend);
        }
        for (ULONG i = 0; i < 8; ++i) {  // replenish the receives
            ASSERT_EQ(p.receive(reinterpret_cast<void*>(uintptr_t{i}), p_msgs, i * MSG, MSG),
                      STATUS_SUCCESS);
            ASSERT_EQ(a.receive(reinterpret_cast<void*>(uintptr_t{i}), a_msgs, i * MSG, MSG),
                      STATUS_SUCCESS);
        }

        // 2. WRITE, then a SEND that solicits p's notification. p advertises its sink region in
        //    a message; it sleeps on NDK_CQ_NOTIFY_SOLICITED, so a plain (unsolicited) send does
        //    not wake it; the solicited one does, and by then the written bytes are in place.
        region sink = p.make_region(BULK, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
        region bulk = a.make_region(BULK, 0);
        advert ad{reinterpret_cast<UINT64>(sink.data),
                  sink.mr->Dispatch->NdkGetRemoteTokenFromMr(sink.mr), BULK};
        std::memcpy(p_msgs.data + 8 * MSG, &ad, sizeof(ad));
        ASSERT_EQ(p.send(nullptr, p_msgs, 8 * MSG, sizeof(ad),
                         NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_INLINE),
                  STATUS_SUCCESS);
        auto adv = a.reap(1);
        ASSERT_EQ(adv.size(), 1u);
        ASSERT_EQ(adv[0].BytesTransferred, sizeof(ad));
        advert remote{};
        std::memcpy(&remote, a_msgs.data, sizeof(remote));
        EXPECT_EQ(remote.token, ad.token);
        fill(bulk.data, BULK, 7);
        p.cq->Dispatch->NdkArmCq(p.cq, NDK_CQ_NOTIFY_SOLICITED);
        ASSERT_EQ(a.send(nullptr, a_msgs, 8 * MSG, 16, NDK_OP_FLAG_SILENT_SUCCESS), STATUS_SUCCESS);
        NDK_SGE w{};
        w.VirtualAddress = bulk.data;
        w.Length = BULK;
        w.MemoryRegionToken = bulk.token;
        ASSERT_EQ(a.qp->Dispatch->NdkWrite(a.qp, reinterpret_cast<void*>(0x300), &w, 1,
                                           remote.address, remote.token, NDK_OP_FLAG_DEFER),
                  STATUS_SUCCESS);
        ASSERT_EQ(a.send(reinterpret_cast<void*>(0x301), a_msgs, 9 * MSG, 8,
                         NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT),
                  STATUS_SUCCESS);
        while (p.notes.count == 0) {
            sc_core::wait(p.notes.ev);
        }
        EXPECT_EQ(p.notes.last, STATUS_SUCCESS);
        auto two = p.reap(2);  // the plain send, then the solicited one
        ASSERT_EQ(two.size(), 2u);
        EXPECT_EQ(two[0].BytesTransferred, 16u);
        EXPECT_EQ(two[1].BytesTransferred, 8u);
        EXPECT_TRUE(same(sink.data, BULK, 7)) << "RDMA WRITE payload";
        auto wdone = a.reap(2);  // the write and the solicited send (the plain one is silent)
        ASSERT_EQ(wdone.size(), 2u);
        EXPECT_EQ(wdone[0].Type, NdkOperationTypeWrite);
        EXPECT_EQ(wdone[0].Status, STATUS_SUCCESS);
        EXPECT_EQ(wdone[1].RequestContext, reinterpret_cast<void*>(0x301));

        // 3. Fast registration: p maps FR_LEN bytes of fresh memory (starting FR_FBO into a
        //    page) through a LAM into a fast-register MR that allows remote writes, advertises
        //    it, and a writes into it.
        NDK_MR* fr = nullptr;
        {
            pending c;
            const NTSTATUS st =
                p.pd->Dispatch->NdkCreateMr(p.pd, TRUE, pending::on_create, &c, &fr);
            ASSERT_EQ(c.wait(st), STATUS_SUCCESS);
            fr = st == STATUS_PENDING ? reinterpret_cast<NDK_MR*>(c.object) : fr;
        }
        ASSERT_LE(FR_PAGES, p.info.FRMRPageCount);
        pending init;
        ASSERT_EQ(init.wait(fr->Dispatch->NdkInitializeFastRegisterMr(fr, FR_PAGES, TRUE,
                                                                      pending::on_request, &init)),
                  STATUS_SUCCESS);
        auto* fr_mem = static_cast<uint8_t*>(p.host().alloc(FR_PAGES * 4096));
        std::memset(fr_mem, 0, FR_PAGES * 4096);
        MDL* fr_mdl = p.host().build_mdl(fr_mem + FR_FBO, FR_LEN);
        ULONG lam_size = 0, fbo = 0;
        ASSERT_EQ(p.adapter->Dispatch->NdkBuildLAM(p.adapter, fr_mdl, FR_LEN, pending::on_request,
                                                   nullptr, nullptr, &lam_size, &fbo),
                  STATUS_BUFFER_TOO_SMALL);
        std::vector<uint8_t> lam_mem(lam_size);
        auto* lam = reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING*>(lam_mem.data());
        pending built;
        ASSERT_EQ(
            built.wait(p.adapter->Dispatch->NdkBuildLAM(
                p.adapter, fr_mdl, FR_LEN, pending::on_request, &built, lam, &lam_size, &fbo)),
            STATUS_SUCCESS);
        ASSERT_EQ(fbo, FR_FBO);
        ASSERT_EQ(lam->AdapterPageCount, FR_PAGES);
        const UINT64 base = 0x40000000ull + FR_FBO;  // FBO + n x PAGE_SIZE
        ASSERT_EQ(p.qp->Dispatch->NdkFastRegister(p.qp, reinterpret_cast<void*>(0x400), fr,
                                                  lam->AdapterPageCount, lam->AdapterPageArray, fbo,
                                                  FR_LEN, reinterpret_cast<PVOID>(base),
                                                  NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
                  STATUS_SUCCESS);
        auto frd = p.reap(1);
        ASSERT_EQ(frd.size(), 1u);
        EXPECT_EQ(frd[0].Type, NdkOperationTypeFastRegister);
        ASSERT_EQ(frd[0].Status, STATUS_SUCCESS);
        advert fad{base, fr->Dispatch->NdkGetRemoteTokenFromMr(fr), FR_LEN};
        std::memcpy(p_msgs.data + 10 * MSG, &fad, sizeof(fad));
        ASSERT_EQ(p.send(nullptr, p_msgs, 10 * MSG, sizeof(fad), NDK_OP_FLAG_SILENT_SUCCESS),
                  STATUS_SUCCESS);
        auto fadv = a.reap(1);
        ASSERT_EQ(fadv.size(), 1u);
        std::memcpy(&remote, a_msgs.data + 1 * MSG, sizeof(remote));
        ASSERT_EQ(remote.address, base);
        // a writes the region in two pieces (the second at an offset: RemoteAddress is the
        // advertised base plus an offset in a's byte order).
        fill(bulk.data, FR_LEN, 9);
        NDK_SGE piece{};
        piece.VirtualAddress = bulk.data;
        piece.Length = 5000;
        piece.MemoryRegionToken = bulk.token;
        ASSERT_EQ(a.qp->Dispatch->NdkWrite(a.qp, nullptr, &piece, 1, remote.address, remote.token,
                                           NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_DEFER),
                  STATUS_SUCCESS);
        piece.VirtualAddress = bulk.data + 5000;
        piece.Length = FR_LEN - 5000;
        ASSERT_EQ(a.qp->Dispatch->NdkWrite(a.qp, reinterpret_cast<void*>(0x500), &piece, 1,
                                           remote.address + 5000, remote.token, 0),
                  STATUS_SUCCESS);
        auto fw = a.reap(1);
        ASSERT_EQ(fw.size(), 1u);
        EXPECT_EQ(fw[0].Status, STATUS_SUCCESS);
        EXPECT_EQ(fw[0].RequestContext, reinterpret_cast<void*>(0x500));
        // The requester's completion says nothing about when the bytes are visible to p's
        // CPU: a SEND after the writes does (its receive completes after the data is placed).
        ASSERT_EQ(a.send(nullptr, a_msgs, 11 * MSG, 4, NDK_OP_FLAG_SILENT_SUCCESS), STATUS_SUCCESS);
        auto fence = p.reap(1);
        ASSERT_EQ(fence.size(), 1u);
        EXPECT_EQ(fence[0].Type, NdkOperationTypeReceive);
        EXPECT_EQ(fence[0].BytesTransferred, 4u);
        EXPECT_TRUE(same(fr_mem + FR_FBO, FR_LEN, 9)) << "write into the fast-registered region";
        for (ULONG i = 0; i < FR_FBO; ++i) {
            ASSERT_EQ(fr_mem[i], 0) << "byte before the region written";
        }
        for (ULONG i = FR_FBO + FR_LEN; i < FR_PAGES * 4096; ++i) {
            ASSERT_EQ(fr_mem[i], 0) << "byte after the region written";
        }

        // Invalidate: later remote writes with the old token fail on a's side.
        ASSERT_EQ(
            p.qp->Dispatch->NdkInvalidate(p.qp, reinterpret_cast<void*>(0x600), &fr->Header, 0),
            STATUS_SUCCESS);
        auto inv = p.reap(1);
        ASSERT_EQ(inv.size(), 1u);
        EXPECT_EQ(inv[0].Type, NdkOperationTypeInvalidate);
        EXPECT_EQ(inv[0].Status, STATUS_SUCCESS);
        piece.VirtualAddress = bulk.data;
        piece.Length = 64;
        ASSERT_EQ(a.qp->Dispatch->NdkWrite(a.qp, reinterpret_cast<void*>(0x700), &piece, 1,
                                           remote.address, remote.token, 0),
                  STATUS_SUCCESS);
        auto bad = a.reap(1);
        ASSERT_GE(bad.size(), 1u);
        EXPECT_EQ(bad[0].RequestContext, reinterpret_cast<void*>(0x700));
        EXPECT_EQ(bad[0].Status, STATUS_ACCESS_VIOLATION);
        EXPECT_NE(bad[0].ProviderErrorCode, 0u);
        p.adapter->Dispatch->NdkReleaseLAM(p.adapter, lam);
        finished = true;
    });
    EXPECT_TRUE(finished);
}

}  // namespace
}  // namespace rnic::ndk::consumer_test
