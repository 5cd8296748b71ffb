// SPDX-License-Identifier: Apache-2.0
// Provider driver against a fake NIC: what the driver writes (MMIO registers, command slots, WQE
// bytes in the rings, doorbell values) and how it reacts to what the NIC writes (command status,
// EQ entries, CQEs, MSI-X). One SystemC elaboration per TEST (ctest runs each in its process).
#include <cstring>

#include <gtest/gtest.h>

#include "ndk_shim/provider/provider.h"
#include "ndk_shim/status_map.h"
#include "testbench/ndk/ndk_bench.h"

namespace rnic::ndk::test {
namespace {

host_config sync_cfg() {
    host_config c;
    c.async_create = false;
    return c;
}

// Adapter + PD + one CQ + one QP, created synchronously.
struct endpoint {
    NDK_ADAPTER* adapter = nullptr;
    NDK_PD* pd = nullptr;
    NDK_CQ* cq = nullptr;
    NDK_QP* qp = nullptr;
    notify_log notes;

    void open(node& n, fabric_cm& cm, const adapter_params& p, ULONG inline_size = 64) {
        ASSERT_EQ(open_adapter(n.host, cm, p, &adapter), STATUS_SUCCESS);
        ASSERT_EQ(adapter->Dispatch->NdkCreatePd(adapter, create_log::fn, nullptr, &pd),
                  STATUS_SUCCESS);
        ASSERT_EQ(adapter->Dispatch->NdkCreateCq(adapter, 64, notify_log::fn, &notes, nullptr,
                                                 create_log::fn, nullptr, &cq),
                  STATUS_SUCCESS);
        ASSERT_EQ(pd->Dispatch->NdkCreateQp(pd, cq, cq, this, 16, 16, 4, 4, inline_size,
                                            create_log::fn, nullptr, &qp),
                  STATUS_SUCCESS);
    }
    uint32_t qpn() const { return get_qp_number(qp); }
};

SOCKADDR_IN addr(uint32_t ip, uint16_t port) {
    SOCKADDR_IN a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(ip);
    return a;
}

struct listen_state {
    NDK_CONNECTOR* incoming = nullptr;
    int events = 0;
    static VOID fn(PVOID ctx, NDK_CONNECTOR* c) {
        auto* s = static_cast<listen_state*>(ctx);
        s->incoming = c;
        ++s->events;
    }
};

struct disc_log {
    int calls = 0;
    static VOID fn(PVOID ctx) { ++static_cast<disc_log*>(ctx)->calls; }
};

// Connects a (active) to b (passive, listening on port 5000) through the fabric CM.
struct connection {
    NDK_LISTENER* listener = nullptr;
    NDK_CONNECTOR* active = nullptr;
    listen_state ls;
    request_log connect_done, complete_done, accept_done;
    disc_log a_disc, b_disc;

    void establish(endpoint& a, endpoint& b, uint32_t b_ip) {
        ASSERT_EQ(b.adapter->Dispatch->NdkCreateListener(b.adapter, listen_state::fn, &ls,
                                                         create_log::fn, nullptr, &listener),
                  STATUS_SUCCESS);
        SOCKADDR_IN la = addr(0, 5000);
        ASSERT_EQ(listener->Dispatch->NdkListen(listener, reinterpret_cast<PSOCKADDR>(&la),
                                                sizeof(la), request_log::fn, nullptr),
                  STATUS_SUCCESS);
        ASSERT_EQ(
            a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &active),
            STATUS_SUCCESS);
        SOCKADDR_IN dst = addr(b_ip, 5000);
        const char hello[] = "hello";
        ASSERT_EQ(active->Dispatch->NdkConnect(
                      active, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&dst), sizeof(dst), 4,
                      4, const_cast<char*>(hello), 5, request_log::fn, &connect_done),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return ls.events == 1; }));
        char buf[16] = {};
        ULONG len = sizeof(buf);
        ULONG ird = 0, ord = 0;
        ASSERT_EQ(ls.incoming->Dispatch->NdkGetConnectionData(ls.incoming, &ird, &ord, buf, &len),
                  STATUS_SUCCESS);
        EXPECT_EQ(len, 5u);
        EXPECT_EQ(std::string(buf, 5), "hello");
        EXPECT_EQ(ird, 4u);
        EXPECT_EQ(ord, 4u);
        const char world[] = "world!";
        ASSERT_EQ(
            ls.incoming->Dispatch->NdkAccept(ls.incoming, b.qp, 4, 4, const_cast<char*>(world), 6,
                                             disc_log::fn, &b_disc, request_log::fn, &accept_done),
            STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return connect_done.calls == 1; }));
        ASSERT_EQ(connect_done.status, STATUS_SUCCESS);
        len = 0;
        ASSERT_EQ(active->Dispatch->NdkGetConnectionData(active, nullptr, nullptr, nullptr, &len),
                  STATUS_SUCCESS);
        EXPECT_EQ(len, 6u);
        ASSERT_EQ(active->Dispatch->NdkCompleteConnect(active, disc_log::fn, &a_disc,
                                                       request_log::fn, &complete_done),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return complete_done.calls == 1 && accept_done.calls == 1; }));
        ASSERT_EQ(complete_done.status, STATUS_SUCCESS);
        ASSERT_EQ(accept_done.status, STATUS_SUCCESS);
    }
};

template <typename T>
T at(const std::vector<uint8_t>& b, size_t off) {
    T v{};
    std::memcpy(&v, b.data() + off, sizeof(T));
    return v;
}

// ---------------------------------------------------------------------------------------------

TEST(NdkDriver, OpenAdapterProgramsRingsAndMsix) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_adapter(n.host, cm, params_for(1), &a), STATUS_SUCCESS);
        // Posted MMIO writes reach the NIC a PCIe latency later.
        ASSERT_TRUE(wait_until([&] { return n.nic.eq_armed; }));
        EXPECT_EQ(n.nic.writes.back().offset, hsi::REG_EQ_CONSUMER);
        EXPECT_EQ(a->Header.ObjectType, NdkObjectTypeAdapter);
        EXPECT_EQ(a->Header.Version.Major, 1);
        EXPECT_EQ(a->Header.Version.Minor, 2);
        EXPECT_NE(n.nic.cmdq_base, 0u);
        EXPECT_EQ(n.nic.cmdq_base % 4096, 0u);
        EXPECT_EQ(n.nic.cmdq_log, 8u);
        EXPECT_NE(n.nic.eq_base, 0u);
        EXPECT_EQ(n.nic.eq_log, 12u);
        EXPECT_EQ(n.nic.msix[0].addr, n.host.msi_address(0));
        EXPECT_EQ(n.nic.msix[0].data, 0u);
        EXPECT_EQ(n.nic.msix[0].control, 0u);
        EXPECT_TRUE(n.nic.eq_armed);
        // Bad version is refused (ndkpi.md 9).
        adapter_params p = params_for(2);
        p.version = NDK_VERSION{2, 0};
        NDK_ADAPTER* b = nullptr;
        EXPECT_EQ(open_adapter(n.host, cm, p, &b), NDIS_STATUS_BAD_VERSION);
        close_adapter(a);
    });
}

TEST(NdkDriver, AsyncCreateCompletesFromIsr) {
    hw::sim_context ctx;
    node n("n1", host_config{}, ctx);  // async_create = true
    fabric_cm cm;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_adapter(n.host, cm, params_for(1), &a), STATUS_SUCCESS);
        create_log cl;
        NDK_CQ* cq = nullptr;
        notify_log notes;
        ASSERT_EQ(a->Dispatch->NdkCreateCq(a, 100, notify_log::fn, &notes, nullptr, create_log::fn,
                                           &cl, &cq),
                  STATUS_PENDING);
        EXPECT_EQ(cl.calls, 0);
        ASSERT_TRUE(wait_until([&] { return cl.calls == 1; }));
        EXPECT_EQ(cl.status, STATUS_SUCCESS);
        ASSERT_NE(cl.object, nullptr);
        EXPECT_EQ(cl.object->ObjectType, NdkObjectTypeCq);
        cq = reinterpret_cast<NDK_CQ*>(cl.object);
        ASSERT_EQ(n.nic.commands.size(), 1u);
        const hsi::cmd_slot c = n.nic.commands[0];
        EXPECT_EQ(c.opcode, hsi::CMD_CREATE_CQ);
        EXPECT_NE(c.u.cq.cqn, 0u);
        EXPECT_GE(1u << c.u.cq.log_depth, 200u);  // ring >= 2 x depth
        EXPECT_EQ(c.u.cq.ring_addr % 4096, 0u);
        EXPECT_EQ(n.nic.values(hsi::REG_CMDQ_DOORBELL), std::vector<uint64_t>{1});
        EXPECT_GE(n.nic.msis, 1u);
        // The close goes through the command queue too: pending, then the close completion.
        close_log closed;
        EXPECT_EQ(cq->Dispatch->NdkCloseCq(&cq->Header, close_log::fn, &closed), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return closed.calls == 1; }));
        EXPECT_EQ(n.nic.commands.back().opcode, hsi::CMD_DESTROY_CQ);
        EXPECT_EQ(n.nic.commands.back().u.obj.handle, c.u.cq.cqn);
        close_adapter(a);
    });
}

TEST(NdkDriver, SyncCreateAndCommandFailure) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_adapter(n.host, cm, params_for(1), &a), STATUS_SUCCESS);
        NDK_PD* pd = nullptr;
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        ASSERT_EQ(a->Dispatch->NdkCreatePd(a, create_log::fn, nullptr, &pd), STATUS_SUCCESS);
        ASSERT_NE(pd, nullptr);
        EXPECT_GE(sc_core::sc_time_stamp() - t0, sc_core::sc_time(400, sc_core::SC_NS));
        EXPECT_EQ(n.nic.commands.back().opcode, hsi::CMD_CREATE_PD);
        // The NIC refusing a command maps to the NTSTATUS table.
        n.nic.fail[hsi::CMD_CREATE_CQ] = hsi::CMD_NO_RESOURCES;
        NDK_CQ* cq = nullptr;
        EXPECT_EQ(a->Dispatch->NdkCreateCq(a, 8, notify_log::fn, nullptr, nullptr, create_log::fn,
                                           nullptr, &cq),
                  STATUS_INSUFFICIENT_RESOURCES);
        // A NIC that never answers: the synchronous wait gives up.
        n.nic.answer = false;
        NDK_PD* pd2 = nullptr;
        EXPECT_EQ(a->Dispatch->NdkCreatePd(a, create_log::fn, nullptr, &pd2), STATUS_IO_TIMEOUT);
        n.nic.answer = true;
        EXPECT_EQ(pd->Dispatch->NdkClosePd(&pd->Header, close_log::fn, nullptr), STATUS_SUCCESS);
    });
}

TEST(NdkDriver, CreateQpValidatesLimits) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint e;
        adapter_params p = params_for(1);
        p.limits.max_qps = 2;  // one usable QPN (0 is reserved)
        e.open(n, cm, p);
        NDK_QP* qp = nullptr;
        auto create = [&](ULONG rq, ULONG sq, ULONG rsge, ULONG isge, ULONG inl) {
            return e.pd->Dispatch->NdkCreateQp(e.pd, e.cq, e.cq, nullptr, rq, sq, rsge, isge, inl,
                                               create_log::fn, nullptr, &qp);
        };
        const auto& l = p.limits;
        EXPECT_EQ(create(16, l.max_qp_depth + 1, 1, 1, 0), STATUS_INVALID_PARAMETER);
        EXPECT_EQ(create(l.max_qp_depth + 1, 16, 1, 1, 0), STATUS_INVALID_PARAMETER);
        EXPECT_EQ(create(16, 16, l.max_sge + 1, 1, 0), STATUS_INVALID_PARAMETER);
        EXPECT_EQ(create(16, 16, 1, l.max_sge + 1, 0), STATUS_INVALID_PARAMETER);
        EXPECT_EQ(create(16, 16, 1, 1, l.max_inline + 1), STATUS_INVALID_PARAMETER);
        EXPECT_EQ(create(16, 16, 1, 1, 0), STATUS_INSUFFICIENT_RESOURCES);
        NDK_CQ* cq = nullptr;
        EXPECT_EQ(e.adapter->Dispatch->NdkCreateCq(e.adapter, l.max_cq_depth + 1, notify_log::fn,
                                                   nullptr, nullptr, create_log::fn, nullptr, &cq),
                  STATUS_INVALID_PARAMETER);
        // One command creates the QP (the NIC puts it in INIT).
        const auto& q = n.nic.qps.at(e.qpn());
        EXPECT_TRUE(q.states.empty());
        EXPECT_EQ(q.create.sq_log_depth, 4);
        EXPECT_EQ(q.create.sq_stride % 64, 0);
        EXPECT_GE(q.create.sq_stride, 64 + 64);
        EXPECT_EQ(q.create.rq_stride, 16 + 16 * 4);
        EXPECT_EQ(q.create.max_inline, 64);
    });
}

TEST(NdkDriver, QueryAdapterInfoReportsLimits) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        const adapter_params p = params_for(1);
        ASSERT_EQ(open_adapter(n.host, cm, p, &a), STATUS_SUCCESS);
        NDK_ADAPTER_INFO info{};
        ULONG size = 8;
        EXPECT_EQ(a->Dispatch->NdkQueryAdapterInfo(a, &info, &size), STATUS_BUFFER_TOO_SMALL);
        EXPECT_EQ(size, sizeof(NDK_ADAPTER_INFO));
        ASSERT_EQ(a->Dispatch->NdkQueryAdapterInfo(a, &info, &size), STATUS_SUCCESS);
        EXPECT_EQ(info.MaxInitiatorQueueDepth, p.limits.max_qp_depth);
        EXPECT_EQ(info.MaxCqDepth, p.limits.max_cq_depth);
        EXPECT_EQ(info.MaxInlineDataSize, p.limits.max_inline);
        EXPECT_EQ(info.MaxInitiatorRequestSge, p.limits.max_sge);
        EXPECT_EQ(info.MaxOutboundReadLimit, p.limits.max_read_depth);
        EXPECT_EQ(info.RdmaTechnology, NdkRoCEv2);
        EXPECT_GE(info.FRMRPageCount, 16u);
        EXPECT_TRUE(info.AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED);
        NDK_EXTENSION_INTERFACE ext{};
        GUID g{};
        EXPECT_EQ(a->Dispatch->NdkQueryExtension(&a->Header, &g, NDK_VERSION{1, 0}, &ext),
                  STATUS_NOT_SUPPORTED);
        close_adapter(a);
    });
}

TEST(NdkDriver, ConnectHandshakeProgramsBothQps) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint a, b;
        a.open(n1, cm, params_for(1));
        b.open(n2, cm, params_for(2));
        connection c;
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        c.establish(a, b, params_for(2).ip);
        // REQ, REP, RTU: at least three one-way CM delays.
        EXPECT_GE(sc_core::sc_time_stamp() - t0, sc_core::sc_time(6, sc_core::SC_US));
        const auto& qa = n1.nic.qps.at(a.qpn());
        const auto& qb = n2.nic.qps.at(b.qpn());
        EXPECT_EQ(qa.states, (std::vector<uint8_t>{hsi::QPS_RTR, hsi::QPS_RTS}));
        EXPECT_EQ(qb.states, (std::vector<uint8_t>{hsi::QPS_RTR, hsi::QPS_RTS}));
        EXPECT_EQ(qa.last_modify.dest_qpn, b.qpn());
        EXPECT_EQ(qb.last_modify.dest_qpn, a.qpn());
        EXPECT_EQ(qa.last_modify.dest_ip, params_for(2).ip);
        EXPECT_EQ(qb.last_modify.dest_ip, params_for(1).ip);
        EXPECT_EQ(qa.last_modify.dest_mac[5], 2);
        EXPECT_EQ(qb.last_modify.dest_mac[5], 1);
        EXPECT_EQ(qa.last_modify.sq_psn, qb.last_modify.rq_psn);
        EXPECT_EQ(qb.last_modify.sq_psn, qa.last_modify.rq_psn);
        EXPECT_EQ(qa.last_modify.pmtu_log, 10);
        EXPECT_EQ(qa.last_modify.max_rd_atomic, 4);
        // Addresses.
        SOCKADDR_IN peer{};
        ULONG len = sizeof(peer);
        ASSERT_EQ(c.active->Dispatch->NdkGetPeerAddress(c.active,
                                                        reinterpret_cast<PSOCKADDR>(&peer), &len),
                  STATUS_SUCCESS);
        EXPECT_EQ(ntohl(peer.sin_addr.s_addr), params_for(2).ip);
        EXPECT_EQ(ntohs(peer.sin_port), 5000);
        SOCKADDR_IN local{};
        len = sizeof(local);
        ASSERT_EQ(c.ls.incoming->Dispatch->NdkGetPeerAddress(
                      c.ls.incoming, reinterpret_cast<PSOCKADDR>(&local), &len),
                  STATUS_SUCCESS);
        EXPECT_EQ(ntohl(local.sin_addr.s_addr), params_for(1).ip);
        EXPECT_GE(ntohs(local.sin_port), 49152);
        // Graceful disconnect: the peer hears once, the initiator's QP is flushed.
        request_log disc;
        ASSERT_EQ(c.active->Dispatch->NdkDisconnect(c.active, request_log::fn, &disc),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return disc.calls == 1; }));
        EXPECT_EQ(disc.status, STATUS_SUCCESS);
        EXPECT_EQ(c.b_disc.calls, 1);
        EXPECT_EQ(c.a_disc.calls, 0);
        EXPECT_EQ(n1.nic.qps.at(a.qpn()).states.back(), hsi::QPS_ERROR);
        EXPECT_EQ(n2.nic.qps.at(b.qpn()).states.back(), hsi::QPS_RTS);  // no flush on peer
        NDK_SGE sge{};
        EXPECT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, &sge, 0, 0), STATUS_CONNECTION_INVALID);
    });
}

TEST(NdkDriver, ConnectRefusedAndRejected) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint a, b;
        a.open(n1, cm, params_for(1));
        b.open(n2, cm, params_for(2));
        NDK_CONNECTOR* c1 = nullptr;
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &c1),
                  STATUS_SUCCESS);
        SOCKADDR_IN dst = addr(params_for(2).ip, 6000);
        request_log r1;
        // Nobody listens on 6000.
        ASSERT_EQ(c1->Dispatch->NdkConnect(c1, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&dst),
                                           sizeof(dst), 0, 0, nullptr, 0, request_log::fn, &r1),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return r1.calls == 1; }));
        EXPECT_EQ(r1.status, STATUS_CONNECTION_REFUSED);
        // Unknown host.
        NDK_CONNECTOR* c2 = nullptr;
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &c2),
                  STATUS_SUCCESS);
        SOCKADDR_IN nowhere = addr(0x0A0000FE, 6000);
        EXPECT_EQ(
            c2->Dispatch->NdkConnect(c2, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&nowhere),
                                     sizeof(nowhere), 0, 0, nullptr, 0, request_log::fn, &r1),
            STATUS_HOST_UNREACHABLE);
        // Caller data too long.
        char big[provider::MAX_CALLER_DATA + 1] = {};
        EXPECT_EQ(
            c2->Dispatch->NdkConnect(c2, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&dst),
                                     sizeof(dst), 0, 0, big, sizeof(big), request_log::fn, &r1),
            STATUS_INVALID_PARAMETER);
        // Listener rejects with private data.
        NDK_LISTENER* l = nullptr;
        listen_state ls;
        ASSERT_EQ(b.adapter->Dispatch->NdkCreateListener(b.adapter, listen_state::fn, &ls,
                                                         create_log::fn, nullptr, &l),
                  STATUS_SUCCESS);
        SOCKADDR_IN la = addr(params_for(2).ip, 6000);
        ASSERT_EQ(l->Dispatch->NdkListen(l, reinterpret_cast<PSOCKADDR>(&la), sizeof(la),
                                         request_log::fn, nullptr),
                  STATUS_SUCCESS);
        NDK_LISTENER* l2 = nullptr;
        ASSERT_EQ(b.adapter->Dispatch->NdkCreateListener(b.adapter, listen_state::fn, &ls,
                                                         create_log::fn, nullptr, &l2),
                  STATUS_SUCCESS);
        EXPECT_EQ(l2->Dispatch->NdkListen(l2, reinterpret_cast<PSOCKADDR>(&la), sizeof(la),
                                          request_log::fn, nullptr),
                  STATUS_SHARING_VIOLATION);
        request_log r3;
        ASSERT_EQ(c2->Dispatch->NdkConnect(c2, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&dst),
                                           sizeof(dst), 0, 0, nullptr, 0, request_log::fn, &r3),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return ls.events == 1; }));
        const char no[] = "busy";
        EXPECT_EQ(ls.incoming->Dispatch->NdkReject(ls.incoming, const_cast<char*>(no), 4),
                  STATUS_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return r3.calls == 1; }));
        EXPECT_EQ(r3.status, STATUS_CONNECTION_REFUSED);
        char buf[8] = {};
        ULONG len = 2;
        EXPECT_EQ(c2->Dispatch->NdkGetConnectionData(c2, nullptr, nullptr, buf, &len),
                  STATUS_BUFFER_TOO_SMALL);
        EXPECT_EQ(len, 4u);
        EXPECT_EQ(std::string(buf, 2), "bu");
        // The QP can connect again after a refusal: CompleteConnect is not valid now.
        EXPECT_EQ(c2->Dispatch->NdkCompleteConnect(c2, nullptr, nullptr, request_log::fn, &r3),
                  STATUS_CONNECTION_INVALID);
    });
}

// Posting: WQE bytes, doorbells, DEFER batching, inline data, statuses.
TEST(NdkDriver, PostWritesWqesAndRingsDoorbells) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint a, b;
        a.open(n1, cm, params_for(1));
        b.open(n2, cm, params_for(2));
        // Not connected yet: initiator posts fail inline, receives are fine.
        NDK_SGE sge[2]{};
        sge[0].LogicalAddress.QuadPart = 0x1000;
        sge[0].Length = 100;
        sge[0].MemoryRegionToken = 0x1234;
        sge[1].LogicalAddress.QuadPart = 0x2000;
        sge[1].Length = 28;
        sge[1].MemoryRegionToken = 0x5678;
        EXPECT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, sge, 2, 0), STATUS_CONNECTION_INVALID);
        settle();
        EXPECT_TRUE(n1.nic.values(hsi::REG_SQ_DOORBELL).empty());
        ASSERT_EQ(a.qp->Dispatch->NdkReceive(a.qp, reinterpret_cast<void*>(0x77), sge, 2),
                  STATUS_SUCCESS);
        settle();
        auto rq = n1.nic.rq_slot(a.qpn(), 0, 48);
        EXPECT_EQ(at<uint16_t>(rq, 0), 0);  // wqe_index
        EXPECT_EQ(at<uint8_t>(rq, 2), 2);   // num_sge
        EXPECT_EQ(at<uint64_t>(rq, 16), 0x1000u);
        EXPECT_EQ(at<uint32_t>(rq, 24), 100u);
        EXPECT_EQ(at<uint32_t>(rq, 28), 0x1234u);
        EXPECT_EQ(n1.nic.values(hsi::REG_RQ_DOORBELL),
                  std::vector<uint64_t>{a.qpn() | (1ull << 32)});

        connection c;
        c.establish(a, b, params_for(2).ip);

        // Send with two SGEs, signalled + solicited.
        ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, reinterpret_cast<void*>(0x10), sge, 2,
                                          NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT),
                  STATUS_SUCCESS);
        settle();
        auto w = n1.nic.sq_slot(a.qpn(), 0, 128);
        EXPECT_EQ(w[0], hsi::WQE_SEND);
        EXPECT_EQ(w[1], hsi::WQE_FLAG_SIGNALED | hsi::WQE_FLAG_SOLICITED);
        EXPECT_EQ(w[2], 2);  // num_sge
        EXPECT_EQ(w[3], 2);  // size_bb: ctrl + one block of SGEs
        EXPECT_EQ(at<uint16_t>(w, 4), 0);
        EXPECT_EQ(at<uint32_t>(w, 8), 128u);  // total_length
        EXPECT_EQ(at<uint64_t>(w, 64), 0x1000u);
        EXPECT_EQ(at<uint32_t>(w, 72), 100u);
        EXPECT_EQ(at<uint32_t>(w, 76), 0x1234u);
        EXPECT_EQ(at<uint64_t>(w, 80), 0x2000u);
        EXPECT_EQ(at<uint32_t>(w, 92), 0x5678u);
        EXPECT_EQ(n1.nic.values(hsi::REG_SQ_DOORBELL),
                  std::vector<uint64_t>{a.qpn() | (1ull << 32)});

        // Write, silent + read fence, and Read.
        ASSERT_EQ(a.qp->Dispatch->NdkWrite(a.qp, nullptr, sge, 1, 0xABCDEF00ull, 0x4242,
                                           NDK_OP_FLAG_SILENT_SUCCESS | NDK_OP_FLAG_READ_FENCE),
                  STATUS_SUCCESS);
        w = n1.nic.sq_slot(a.qpn(), 1, 128);
        EXPECT_EQ(w[0], hsi::WQE_WRITE);
        EXPECT_EQ(w[1], hsi::WQE_FLAG_FENCE);
        EXPECT_EQ(at<uint64_t>(w, 16), 0xABCDEF00ull);
        EXPECT_EQ(at<uint32_t>(w, 24), 0x4242u);
        ASSERT_EQ(a.qp->Dispatch->NdkRead(a.qp, nullptr, sge, 1, 0x5000, 0x99, 0), STATUS_SUCCESS);
        w = n1.nic.sq_slot(a.qpn(), 2, 128);
        EXPECT_EQ(w[0], hsi::WQE_READ);
        EXPECT_EQ(at<uint16_t>(w, 4), 2);

        // DEFER: three deferred posts, then one that rings for all four.
        settle();
        const size_t before = n1.nic.values(hsi::REG_SQ_DOORBELL).size();
        for (int i = 0; i < 3; ++i) {
            ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, sge, 1, NDK_OP_FLAG_DEFER),
                      STATUS_SUCCESS);
        }
        settle();
        EXPECT_EQ(n1.nic.values(hsi::REG_SQ_DOORBELL).size(), before);
        ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, sge, 1, 0), STATUS_SUCCESS);
        settle();
        auto dbs = n1.nic.values(hsi::REG_SQ_DOORBELL);
        ASSERT_EQ(dbs.size(), before + 1);
        EXPECT_EQ(dbs.back(), a.qpn() | (7ull << 32));

        // Inline: the bytes follow the control segment; too much inline fails inline, but only
        // after the deferred WQE before it was handed to the NIC.
        char text[40];
        for (int i = 0; i < 40; ++i) {
            text[i] = static_cast<char>('a' + i % 26);
        }
        NDK_SGE in[2]{};
        in[0].VirtualAddress = text;
        in[0].Length = 30;
        in[0].MemoryRegionToken = 0xDEAD;  // ignored
        in[1].VirtualAddress = text + 30;
        in[1].Length = 10;
        ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, in, 2, NDK_OP_FLAG_INLINE),
                  STATUS_SUCCESS);
        w = n1.nic.sq_slot(a.qpn(), 7, 128);
        EXPECT_EQ(w[1] & hsi::WQE_FLAG_INLINE, hsi::WQE_FLAG_INLINE);
        EXPECT_EQ(w[2], 0);
        EXPECT_EQ(at<uint32_t>(w, 8), 40u);
        EXPECT_EQ(std::memcmp(w.data() + 64, text, 40), 0);
        ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, sge, 1, NDK_OP_FLAG_DEFER),
                  STATUS_SUCCESS);
        settle();
        const size_t n_db = n1.nic.values(hsi::REG_SQ_DOORBELL).size();
        char huge[100] = {};
        NDK_SGE hs{};
        hs.VirtualAddress = huge;
        hs.Length = 100;  // > InlineDataSize 64
        EXPECT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, &hs, 1, NDK_OP_FLAG_INLINE),
                  STATUS_INVALID_PARAMETER);
        settle();
        dbs = n1.nic.values(hsi::REG_SQ_DOORBELL);
        ASSERT_EQ(dbs.size(), n_db + 1);
        EXPECT_EQ(dbs.back(), a.qpn() | (9ull << 32));
        // Too many SGEs.
        NDK_SGE many[5]{};
        EXPECT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, many, 5, 0), STATUS_INVALID_PARAMETER);
        // SQ full (16 slots, 9 used and none retired).
        NTSTATUS st = STATUS_SUCCESS;
        int posted = 0;
        while ((st = a.qp->Dispatch->NdkSend(a.qp, nullptr, sge, 1, 0)) == STATUS_SUCCESS) {
            ++posted;
        }
        EXPECT_EQ(posted, 7);
        EXPECT_EQ(st, STATUS_INSUFFICIENT_RESOURCES);
        const auto counters = get_adapter_counters(a.adapter);
        EXPECT_EQ(counters.wqes_posted, 17u);  // 16 SQ + 1 RQ
    });
}

TEST(NdkDriver, WqePushCarriesDoorbell) {
    hw::sim_context ctx;
    host_config cfg = sync_cfg();
    cfg.wqe_push = true;
    node n1("n1", cfg, ctx);
    node n2("n2", cfg, ctx);
    fabric_cm cm;
    run([&] {
        endpoint a, b;
        a.open(n1, cm, params_for(1));
        b.open(n2, cm, params_for(2));
        connection c;
        c.establish(a, b, params_for(2).ip);
        char t[16] = "pushed";
        NDK_SGE in{};
        in.VirtualAddress = t;
        in.Length = 0;
        // A send without SGEs is one 64 B block: pushed, no doorbell register write.
        ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, &in, 0, 0), STATUS_SUCCESS);
        settle();
        EXPECT_TRUE(n1.nic.values(hsi::REG_SQ_DOORBELL).empty());
        std::vector<fake_nic::mmio_write> pushes;
        for (const auto& w : n1.nic.writes) {
            if (w.offset == hsi::REG_WQE_PUSH) {
                pushes.push_back(w);
            }
        }
        ASSERT_EQ(pushes.size(), 1u);
        ASSERT_EQ(pushes[0].data.size(), 64u);
        EXPECT_EQ(pushes[0].data[0], hsi::WQE_SEND);
        EXPECT_EQ(at<uint32_t>(pushes[0].data, 28), a.qpn());
        EXPECT_EQ(at<uint64_t>(pushes[0].data, 32), a.qpn() | (1ull << 32));
        // Two blocks: a normal doorbell.
        NDK_SGE sge{};
        ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, &sge, 1, 0), STATUS_SUCCESS);
        settle();
        EXPECT_EQ(n1.nic.values(hsi::REG_SQ_DOORBELL).size(), 1u);
    });
}

// Completions: CQE -> NDK_RESULT mapping, unsignalled retirement, phase wrap, consumer
// doorbells, arming and notifications.
TEST(NdkDriver, CompletionsMapAndNotify) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint a, b;
        a.open(n1, cm, params_for(1));
        b.open(n2, cm, params_for(2));
        connection c;
        c.establish(a, b, params_for(2).ip);
        NDK_SGE sge{};
        sge.Length = 8;
        const uint32_t cqn = n1.nic.cqs.begin()->first;
        // Three sends, the first two unsignalled.
        for (uintptr_t i = 0; i < 3; ++i) {
            ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, reinterpret_cast<void*>(0x100 + i), &sge, 1,
                                              i < 2 ? NDK_OP_FLAG_SILENT_SUCCESS : 0),
                      STATUS_SUCCESS);
        }
        ASSERT_EQ(a.qp->Dispatch->NdkReceive(a.qp, reinterpret_cast<void*>(0x200), &sge, 1),
                  STATUS_SUCCESS);
        NDK_RESULT_EX r[4]{};
        EXPECT_EQ(a.cq->Dispatch->NdkGetCqResultsEx(a.cq, r, 4), 0u);
        // Arm for any: the NIC's next CQE raises the notification (once).
        a.cq->Dispatch->NdkArmCq(a.cq, NDK_CQ_NOTIFY_ANY);
        settle();
        EXPECT_EQ(n1.nic.cqs.at(cqn).arm, hsi::CQ_ARM_ANY);
        hsi::cqe e{};
        e.qpn = a.qpn();
        e.wqe_index = 2;
        e.opcode = hsi::CQE_SEND;
        n1.nic.post_cqe(cqn, e);
        ASSERT_TRUE(wait_until([&] { return a.notes.calls == 1; }));
        EXPECT_EQ(a.notes.status, STATUS_SUCCESS);
        hsi::cqe rcv{};
        rcv.qpn = a.qpn();
        rcv.wqe_index = 0;
        rcv.opcode = hsi::CQE_RECV_INV;
        rcv.byte_len = 77;
        rcv.imm_or_key = 0xBEEF01;
        rcv.flags = hsi::CQE_FLAG_SOLICITED;
        n1.nic.post_cqe(cqn, rcv);
        settle();
        ASSERT_EQ(a.cq->Dispatch->NdkGetCqResultsEx(a.cq, r, 4), 2u);
        EXPECT_EQ(r[0].Status, STATUS_SUCCESS);
        EXPECT_EQ(r[0].QPContext, &a);
        EXPECT_EQ(r[0].RequestContext, reinterpret_cast<void*>(0x102));
        EXPECT_EQ(r[0].Type, NdkOperationTypeSend);
        EXPECT_EQ(r[0].ProviderErrorCode, 0u);
        EXPECT_EQ(r[1].RequestContext, reinterpret_cast<void*>(0x200));
        EXPECT_EQ(r[1].Type, NdkOperationTypeReceiveAndInvalidate);
        EXPECT_EQ(r[1].BytesTransferred, 77u);
        EXPECT_EQ(r[1].TypeSpecificCompletionOutput, 0xBEEF01u);
        EXPECT_EQ(a.notes.calls, 1);  // one-shot
        // All three SQ slots are free again: 16 more sends fit... minus none outstanding.
        int posted = 0;
        while (a.qp->Dispatch->NdkSend(a.qp, nullptr, &sge, 1, NDK_OP_FLAG_SILENT_SUCCESS) ==
               STATUS_SUCCESS) {
            ++posted;
        }
        EXPECT_EQ(posted, 16);
        // Flushed completions map to STATUS_CANCELLED; the ring wraps (phase flips).
        const uint32_t ring = 1u << n1.nic.cqs.at(cqn).log;
        uint32_t got = 0;
        uint16_t idx = 3;
        NDK_RESULT res[8];
        for (uint32_t i = 0; i < ring + 5; ++i) {
            hsi::cqe f{};
            f.qpn = a.qpn();
            f.wqe_index = idx++;
            f.opcode = hsi::CQE_SEND;
            f.status = hsi::CQE_WR_FLUSH_ERR;
            n1.nic.post_cqe(cqn, f);
            wait_until([&] { return false; }, 200);
            const ULONG k = a.cq->Dispatch->NdkGetCqResults(a.cq, res, 8);
            for (ULONG j = 0; j < k; ++j) {
                EXPECT_EQ(res[j].Status, STATUS_CANCELLED);
            }
            got += k;
            if (idx == 19) {
                idx = 3;  // reuse the 16 posted indexes
            }
        }
        EXPECT_EQ(got, ring + 5);
        // The consumer index reached the NIC (batched).
        EXPECT_GE(n1.nic.cqs.at(cqn).consumer + ring / 4, 2 + ring + 5);
        // Arm SOLICITED: an unsolicited CQE does not notify, an error CQE does.
        a.cq->Dispatch->NdkArmCq(a.cq, NDK_CQ_NOTIFY_SOLICITED);
        settle();
        hsi::cqe plain{};
        plain.qpn = a.qpn();
        plain.wqe_index = 0;
        plain.opcode = hsi::CQE_RECV;
        n1.nic.post_cqe(cqn, plain);
        wait_until([&] { return false; }, 3000);
        EXPECT_EQ(a.notes.calls, 1);
        plain.status = hsi::CQE_LOCAL_PROT_ERR;
        n1.nic.post_cqe(cqn, plain);
        ASSERT_TRUE(wait_until([&] { return a.notes.calls == 2; }));
        // Arming while a completion is already queued fires right away.
        a.cq->Dispatch->NdkArmCq(a.cq, NDK_CQ_NOTIFY_ANY);
        ASSERT_TRUE(wait_until([&] { return a.notes.calls == 3; }, 2000));
        NDK_RESULT two[2];
        ASSERT_EQ(a.cq->Dispatch->NdkGetCqResults(a.cq, two, 2), 2u);
        EXPECT_EQ(two[1].Status, STATUS_ACCESS_VIOLATION);
        // Overrun: EVENT_CQ_ERROR -> STATUS_BUFFER_OVERFLOW to an armed CQ.
        a.cq->Dispatch->NdkArmCq(a.cq, NDK_CQ_NOTIFY_ERRORS);
        settle();
        n1.nic.post_event(hsi::EVENT_CQ_ERROR, cqn);
        ASSERT_TRUE(wait_until([&] { return a.notes.calls == 4; }));
        EXPECT_EQ(a.notes.status, STATUS_BUFFER_OVERFLOW);
    });
}

TEST(NdkDriver, RegisterMrBuildsPageList) {
    hw::sim_context ctx;
    node n1("n1", host_config{}, ctx);  // async: RegisterMr pends
    fabric_cm cm;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_adapter(n1.host, cm, params_for(1), &a), STATUS_SUCCESS);
        create_log pl;
        NDK_PD* pd = nullptr;
        ASSERT_EQ(a->Dispatch->NdkCreatePd(a, create_log::fn, &pl, &pd), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return pl.calls == 1; }));
        pd = reinterpret_cast<NDK_PD*>(pl.object);
        NDK_MR* mr = nullptr;
        ASSERT_EQ(pd->Dispatch->NdkCreateMr(pd, FALSE, create_log::fn, nullptr, &mr),
                  STATUS_SUCCESS);
        // 3 pages + 100 bytes starting 256 bytes into a page: 4 pages spanned.
        auto* buf = static_cast<uint8_t*>(n1.host.alloc(5 * 4096));
        const size_t len = 3 * 4096 + 100;
        MDL* mdl = n1.host.build_mdl(buf + 256, len);
        request_log reg;
        ASSERT_EQ(mr->Dispatch->NdkRegisterMr(
                      mr, mdl, len, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ,
                      request_log::fn, &reg),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return reg.calls == 1; }));
        EXPECT_EQ(reg.status, STATUS_SUCCESS);
        const auto cmds = n1.nic.commands_of(hsi::CMD_CREATE_MR);
        ASSERT_EQ(cmds.size(), 1u);
        const auto& m = cmds[0].u.mr;
        EXPECT_EQ(m.va, reinterpret_cast<uint64_t>(buf + 256));
        EXPECT_EQ(m.length, len);
        EXPECT_EQ(m.page_count, 4u);
        EXPECT_EQ(m.first_byte_offset, 256u);
        EXPECT_EQ(m.access & (hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_READ |
                              hsi::ACCESS_REMOTE_WRITE),
                  hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_READ);
        EXPECT_EQ(mr->Dispatch->NdkGetLocalTokenFromMr(mr), m.key);
        EXPECT_EQ(mr->Dispatch->NdkGetRemoteTokenFromMr(mr), m.key);
        EXPECT_NE(m.key >> 8, 0u);  // index 0 is the privileged key's
        UINT32 priv = 0;
        pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(pd, &priv);
        EXPECT_EQ(priv, hsi::PRIVILEGED_KEY);
        // LAM over the same MDL: the same pages, as logical addresses.
        ULONG lam_size = 0, fbo = 0;
        EXPECT_EQ(a->Dispatch->NdkBuildLAM(a, mdl, len, request_log::fn, nullptr, nullptr,
                                           &lam_size, &fbo),
                  STATUS_BUFFER_TOO_SMALL);
        EXPECT_EQ(lam_size, 16u + 4 * 8);
        std::vector<uint8_t> lam_buf(lam_size);
        auto* lam = reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING*>(lam_buf.data());
        ASSERT_EQ(
            a->Dispatch->NdkBuildLAM(a, mdl, len, request_log::fn, nullptr, lam, &lam_size, &fbo),
            STATUS_SUCCESS);
        EXPECT_EQ(fbo, 256u);
        ASSERT_EQ(lam->AdapterPageCount, 4u);
        for (int i = 0; i < 4; ++i) {
            EXPECT_EQ(static_cast<uint64_t>(lam->AdapterPageArray[i].QuadPart),
                      n1.host.phys(buf + i * 4096));
        }
        a->Dispatch->NdkReleaseLAM(a, lam);
        // Deregister: CMD_DESTROY_MR with the same key.
        request_log dereg;
        ASSERT_EQ(mr->Dispatch->NdkDeregisterMr(mr, request_log::fn, &dereg), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return dereg.calls == 1; }));
        EXPECT_EQ(n1.nic.commands.back().opcode, hsi::CMD_DESTROY_MR);
        EXPECT_EQ(n1.nic.commands.back().u.obj.handle, m.key);
        // Re-registration changes the key's variant byte, not its index.
        request_log reg2;
        ASSERT_EQ(mr->Dispatch->NdkRegisterMr(mr, mdl, len, 0, request_log::fn, &reg2),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return reg2.calls == 1; }));
        const UINT32 k2 = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
        EXPECT_EQ(k2 >> 8, m.key >> 8);
        EXPECT_NE(k2 & 0xFF, m.key & 0xFF);
        close_log cm_closed;
        mr->Dispatch->NdkCloseMr(&mr->Header, close_log::fn, &cm_closed);
        ASSERT_TRUE(wait_until([&] { return cm_closed.calls == 1; }));
        n1.host.free_mdl(mdl);
        n1.host.free(buf);
        close_log pd_closed;
        pd->Dispatch->NdkClosePd(&pd->Header, close_log::fn, &pd_closed);
        ASSERT_TRUE(wait_until([&] { return pd_closed.calls == 1; }));
        close_adapter(a);
    });
}

TEST(NdkDriver, ParentClosePendsUntilChildrenClosed) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint e;
        e.open(n1, cm, params_for(1));
        std::vector<std::string> order;
        close_log pd_closed{0, &order, "pd"}, cq_closed{0, &order, "cq"},
            qp_closed{0, &order, "qp"};
        EXPECT_EQ(e.pd->Dispatch->NdkClosePd(&e.pd->Header, close_log::fn, &pd_closed),
                  STATUS_PENDING);
        EXPECT_EQ(e.cq->Dispatch->NdkCloseCq(&e.cq->Header, close_log::fn, &cq_closed),
                  STATUS_PENDING);
        EXPECT_TRUE(n1.nic.commands_of(hsi::CMD_DESTROY_PD).empty());
        // Closing the QP (synchronous mode: inline) releases both parents.
        EXPECT_EQ(e.qp->Dispatch->NdkCloseQp(&e.qp->Header, close_log::fn, &qp_closed),
                  STATUS_SUCCESS);
        EXPECT_EQ(qp_closed.calls, 0);  // inline success: no callback
        EXPECT_EQ(order, (std::vector<std::string>{"pd", "cq"}));
        EXPECT_EQ(n1.nic.commands_of(hsi::CMD_DESTROY_QP).size(), 1u);
        EXPECT_EQ(n1.nic.commands_of(hsi::CMD_DESTROY_PD).size(), 1u);
        EXPECT_EQ(n1.nic.commands_of(hsi::CMD_DESTROY_CQ).size(), 1u);
        close_adapter(e.adapter);  // returns: nothing left open
    });
}

}  // namespace
}  // namespace rnic::ndk::test
