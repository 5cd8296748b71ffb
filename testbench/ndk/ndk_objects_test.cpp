// SPDX-License-Identifier: Apache-2.0
// Provider driver against a fake NIC, part 2: SRQ, memory windows, fast registration,
// invalidation, SendAndInvalidate, Flush, CQ resize and moderation, shared endpoints, closing a
// connector mid-handshake, and the asynchronous creation path for QPs.
#include <cstring>

#include <gtest/gtest.h>

#include "ndk_shim/provider/provider.h"
#include "testbench/ndk/ndk_bench.h"

namespace rnic::ndk::test {
namespace {

host_config sync_cfg() {
    host_config c;
    c.async_create = false;
    return c;
}

SOCKADDR_IN addr(uint32_t ip, uint16_t port) {
    SOCKADDR_IN a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(ip);
    return a;
}

template <typename T>
T at(const std::vector<uint8_t>& b, size_t off) {
    T v{};
    std::memcpy(&v, b.data() + off, sizeof(T));
    return v;
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

struct side {
    NDK_ADAPTER* adapter = nullptr;
    NDK_PD* pd = nullptr;
    NDK_CQ* cq = nullptr;
    NDK_QP* qp = nullptr;
    notify_log notes;
    void open(node& n, fabric_cm& cm, uint32_t id) {
        ASSERT_EQ(open_adapter(n.host, cm, params_for(id), &adapter), STATUS_SUCCESS);
        ASSERT_EQ(adapter->Dispatch->NdkCreatePd(adapter, create_log::fn, nullptr, &pd),
                  STATUS_SUCCESS);
        ASSERT_EQ(adapter->Dispatch->NdkCreateCq(adapter, 32, notify_log::fn, &notes, nullptr,
                                                 create_log::fn, nullptr, &cq),
                  STATUS_SUCCESS);
        ASSERT_EQ(pd->Dispatch->NdkCreateQp(pd, cq, cq, this, 8, 8, 2, 2, 32, create_log::fn,
                                            nullptr, &qp),
                  STATUS_SUCCESS);
    }
};

// a connects to b on port 7000 (synchronous mode).
void connect_pair(side& a, side& b, uint32_t b_ip) {
    NDK_LISTENER* l = nullptr;
    static listen_state ls;
    ASSERT_EQ(b.adapter->Dispatch->NdkCreateListener(b.adapter, listen_state::fn, &ls,
                                                     create_log::fn, nullptr, &l),
              STATUS_SUCCESS);
    SOCKADDR_IN la = addr(b_ip, 7000);
    ASSERT_EQ(l->Dispatch->NdkListen(l, reinterpret_cast<PSOCKADDR>(&la), sizeof(la),
                                     request_log::fn, nullptr),
              STATUS_SUCCESS);
    NDK_CONNECTOR* c = nullptr;
    ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &c),
              STATUS_SUCCESS);
    static request_log r1, r2, r3;
    ASSERT_EQ(c->Dispatch->NdkConnect(c, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&la),
                                      sizeof(la), 2, 2, nullptr, 0, request_log::fn, &r1),
              STATUS_PENDING);
    ASSERT_TRUE(wait_until([&] { return ls.events == 1; }));
    ASSERT_EQ(ls.incoming->Dispatch->NdkAccept(ls.incoming, b.qp, 2, 2, nullptr, 0, nullptr,
                                               nullptr, request_log::fn, &r2),
              STATUS_PENDING);
    ASSERT_TRUE(wait_until([&] { return r1.calls == 1; }));
    ASSERT_EQ(c->Dispatch->NdkCompleteConnect(c, nullptr, nullptr, request_log::fn, &r3),
              STATUS_PENDING);
    ASSERT_TRUE(wait_until([&] { return r2.calls == 1 && r3.calls == 1; }));
    ASSERT_EQ(r2.status, STATUS_SUCCESS);
}

TEST(NdkObjects, SrqReceivesAndLimitEvent) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        side s;
        s.open(n, cm, 1);
        NDK_SRQ* srq = nullptr;
        notify_log srq_notes;
        EXPECT_EQ(s.pd->Dispatch->NdkCreateSrq(s.pd, 100000, 1, 0, nullptr, nullptr, nullptr,
                                               create_log::fn, nullptr, &srq),
                  STATUS_INVALID_PARAMETER);
        ASSERT_EQ(s.pd->Dispatch->NdkCreateSrq(s.pd, 8, 2, 2, notify_log::fn, &srq_notes, nullptr,
                                               create_log::fn, nullptr, &srq),
                  STATUS_SUCCESS);
        const auto cmd = n.nic.commands_of(hsi::CMD_CREATE_SRQ).at(0).u.srq;
        EXPECT_EQ(cmd.limit, 2u);
        EXPECT_EQ(cmd.stride, 16 + 2 * 16);
        NDK_QP* qp = nullptr;
        ASSERT_EQ(s.pd->Dispatch->NdkCreateQpWithSrq(s.pd, s.cq, s.cq, srq, nullptr, 8, 1, 0,
                                                     create_log::fn, nullptr, &qp),
                  STATUS_SUCCESS);
        const auto qpc = n.nic.commands_of(hsi::CMD_CREATE_QP).back().u.qp;
        EXPECT_EQ(qpc.srqn, cmd.srqn);
        NDK_SGE sge{};
        sge.Length = 64;
        EXPECT_EQ(qp->Dispatch->NdkReceive(qp, nullptr, &sge, 1), STATUS_INVALID_DEVICE_STATE);
        for (uintptr_t i = 0; i < 8; ++i) {
            ASSERT_EQ(
                srq->Dispatch->NdkSrqReceive(srq, reinterpret_cast<void*>(0x500 + i), &sge, 1),
                STATUS_SUCCESS);
        }
        EXPECT_EQ(srq->Dispatch->NdkSrqReceive(srq, nullptr, &sge, 1),
                  STATUS_INSUFFICIENT_RESOURCES);
        settle();
        const auto dbs = n.nic.values(hsi::REG_RQ_DOORBELL);
        ASSERT_EQ(dbs.size(), 8u);
        EXPECT_EQ(dbs.back(), cmd.srqn | hsi::RQ_DOORBELL_SRQ | (8ull << 32));
        // A receive completion from the SRQ carries the SRQ's request context.
        hsi::cqe e{};
        e.qpn = get_qp_number(qp);
        e.wqe_index = 3;
        e.opcode = hsi::CQE_RECV;
        e.byte_len = 12;
        e.srqn = cmd.srqn | 0x80000000u;
        n.nic.post_cqe(n.nic.cqs.begin()->first, e);
        settle();
        NDK_RESULT r{};
        ASSERT_EQ(s.cq->Dispatch->NdkGetCqResults(s.cq, &r, 1), 1u);
        EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(0x503));
        EXPECT_EQ(r.BytesTransferred, 12u);
        // The NIC's limit event reaches the SRQ notification, once.
        n.nic.post_event(hsi::EVENT_SRQ_LIMIT, cmd.srqn);
        ASSERT_TRUE(wait_until([&] { return srq_notes.calls == 1; }));
        n.nic.post_event(hsi::EVENT_SRQ_LIMIT, cmd.srqn);
        settle();
        settle();
        EXPECT_EQ(srq_notes.calls, 1);
        // ModifySrq re-arms with a threshold the SRQ is already below: fires right away.
        EXPECT_EQ(srq->Dispatch->NdkModifySrq(srq, 0, 9, request_log::fn, nullptr),
                  STATUS_INVALID_PARAMETER);
        EXPECT_EQ(srq->Dispatch->NdkModifySrq(srq, 0, 8, request_log::fn, nullptr), STATUS_SUCCESS);
        EXPECT_EQ(n.nic.commands.back().opcode, hsi::CMD_MODIFY_SRQ);
        ASSERT_TRUE(wait_until([&] { return srq_notes.calls == 2; }));
    });
}

TEST(NdkObjects, MemoryWindowsFastRegisterInvalidate) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        side a, b;
        a.open(n1, cm, 1);
        b.open(n2, cm, 2);
        // Before the connection: bind / fast-register / invalidate are refused.
        NDK_MR* mr = nullptr;
        ASSERT_EQ(a.pd->Dispatch->NdkCreateMr(a.pd, FALSE, create_log::fn, nullptr, &mr),
                  STATUS_SUCCESS);
        NDK_MW* mw = nullptr;
        ASSERT_EQ(a.pd->Dispatch->NdkCreateMw(a.pd, create_log::fn, nullptr, &mw), STATUS_SUCCESS);
        const auto mwc = n1.nic.commands_of(hsi::CMD_CREATE_MW).at(0).u.obj;
        EXPECT_EQ(mw->Dispatch->NdkGetRemoteTokenFromMw(mw), mwc.handle);
        EXPECT_EQ(a.qp->Dispatch->NdkInvalidate(a.qp, nullptr, &mw->Header, 0),
                  STATUS_CONNECTION_INVALID);
        connect_pair(a, b, params_for(2).ip);

        auto* buf = static_cast<uint8_t*>(n1.host.alloc(8192));
        MDL* mdl = n1.host.build_mdl(buf, 8192);
        ASSERT_EQ(mr->Dispatch->NdkRegisterMr(mr, mdl, 8192, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                              request_log::fn, nullptr),
                  STATUS_SUCCESS);
        ASSERT_EQ(
            a.qp->Dispatch->NdkBind(a.qp, reinterpret_cast<void*>(0x11), mr, mw, buf + 100, 1000,
                                    NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
            STATUS_SUCCESS);
        settle();
        auto w = n1.nic.sq_slot(get_qp_number(a.qp), 0, 128);
        EXPECT_EQ(w[0], hsi::WQE_BIND_MW);
        EXPECT_EQ(w[3], 2);  // ctrl + bind segment
        EXPECT_EQ(at<uint32_t>(w, 64), mwc.handle);
        EXPECT_EQ(at<uint32_t>(w, 68), mr->Dispatch->NdkGetLocalTokenFromMr(mr));
        EXPECT_EQ(at<uint64_t>(w, 72), reinterpret_cast<uint64_t>(buf + 100));
        EXPECT_EQ(at<uint64_t>(w, 80), 1000u);
        EXPECT_EQ(at<uint32_t>(w, 88) & (hsi::ACCESS_REMOTE_READ | hsi::ACCESS_REMOTE_WRITE),
                  hsi::ACCESS_REMOTE_READ | hsi::ACCESS_REMOTE_WRITE);

        // Fast register: capacity and remote access come from InitializeFastRegisterMr.
        NDK_MR* fr = nullptr;
        ASSERT_EQ(a.pd->Dispatch->NdkCreateMr(a.pd, TRUE, create_log::fn, nullptr, &fr),
                  STATUS_SUCCESS);
        EXPECT_EQ(fr->Dispatch->NdkInitializeFastRegisterMr(fr, 0, FALSE, request_log::fn, nullptr),
                  STATUS_IMPLEMENTATION_LIMIT);
        ASSERT_EQ(fr->Dispatch->NdkInitializeFastRegisterMr(fr, 4, FALSE, request_log::fn, nullptr),
                  STATUS_SUCCESS);
        const auto frc = n1.nic.commands_of(hsi::CMD_CREATE_MR).back().u.mr;
        EXPECT_EQ(frc.page_count, 4u);
        EXPECT_TRUE(frc.access & hsi::ACCESS_FAST_REG);
        EXPECT_FALSE(frc.access & hsi::ACCESS_REMOTE_ACCESS_OK);
        NDK_LOGICAL_ADDRESS pages[2];
        pages[0].QuadPart = static_cast<LONGLONG>(n1.host.phys(buf));
        pages[1].QuadPart = static_cast<LONGLONG>(n1.host.phys(buf + 4096));
        EXPECT_EQ(a.qp->Dispatch->NdkFastRegister(a.qp, nullptr, fr, 2, pages, 0, 8192,
                                                  reinterpret_cast<void*>(0x10000),
                                                  NDK_OP_FLAG_ALLOW_REMOTE_READ),
                  STATUS_ACCESS_VIOLATION);
        EXPECT_EQ(a.qp->Dispatch->NdkFastRegister(a.qp, nullptr, fr, 5, pages, 0, 8192,
                                                  reinterpret_cast<void*>(0x10000), 0),
                  STATUS_INVALID_PARAMETER);
        ASSERT_EQ(a.qp->Dispatch->NdkFastRegister(a.qp, reinterpret_cast<void*>(0x22), fr, 2, pages,
                                                  16, 8000, reinterpret_cast<void*>(0x10010),
                                                  NDK_OP_FLAG_ALLOW_LOCAL_WRITE),
                  STATUS_SUCCESS);
        settle();
        w = n1.nic.sq_slot(get_qp_number(a.qp), 1, 128);
        EXPECT_EQ(w[0], hsi::WQE_FAST_REG);
        const uint32_t new_key = at<uint32_t>(w, 64);
        EXPECT_EQ(new_key, fr->Dispatch->NdkGetLocalTokenFromMr(fr));
        EXPECT_EQ(new_key >> 8, frc.key >> 8);
        EXPECT_NE(new_key, frc.key);
        EXPECT_EQ(at<uint64_t>(w, 72), 0x10010u);
        EXPECT_EQ(at<uint64_t>(w, 80), 8000u);
        EXPECT_EQ(at<uint32_t>(w, 96), 2u);
        EXPECT_EQ(at<uint32_t>(w, 100), 16u);
        uint64_t listed[2];
        n1.mem.read(at<uint64_t>(w, 88), listed, sizeof(listed));
        EXPECT_EQ(listed[0], n1.host.phys(buf));
        EXPECT_EQ(listed[1], n1.host.phys(buf + 4096));
        // Invalidate and SendAndInvalidate carry the key.
        ASSERT_EQ(a.qp->Dispatch->NdkInvalidate(a.qp, nullptr, &fr->Header, 0), STATUS_SUCCESS);
        ASSERT_EQ(a.qp->Dispatch->NdkSendAndInvalidate(a.qp, nullptr, nullptr, 0, 0, 0xABCD01),
                  STATUS_SUCCESS);
        settle();
        w = n1.nic.sq_slot(get_qp_number(a.qp), 2, 64);
        EXPECT_EQ(w[0], hsi::WQE_LOCAL_INV);
        EXPECT_EQ(at<uint32_t>(w, 12), new_key);
        w = n1.nic.sq_slot(get_qp_number(a.qp), 3, 64);
        EXPECT_EQ(w[0], hsi::WQE_SEND_INV);
        EXPECT_EQ(at<uint32_t>(w, 12), 0xABCD01u);
        // The completion types of these operations come from the driver's shadow.
        const uint32_t cqn = n1.nic.cqs.begin()->first;
        for (uint16_t i = 0; i < 4; ++i) {
            hsi::cqe e{};
            e.qpn = get_qp_number(a.qp);
            e.wqe_index = i;
            e.opcode = hsi::CQE_SEND;
            n1.nic.post_cqe(cqn, e);
        }
        settle();
        NDK_RESULT_EX r[4]{};
        ASSERT_EQ(a.cq->Dispatch->NdkGetCqResultsEx(a.cq, r, 4), 4u);
        EXPECT_EQ(r[0].Type, NdkOperationTypeBind);
        EXPECT_EQ(r[0].RequestContext, reinterpret_cast<void*>(0x11));
        EXPECT_EQ(r[1].Type, NdkOperationTypeFastRegister);
        EXPECT_EQ(r[2].Type, NdkOperationTypeInvalidate);
        EXPECT_EQ(r[3].Type, NdkOperationTypeSend);
    });
}

TEST(NdkObjects, FlushResizeAndModeration) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        side a, b;
        a.open(n1, cm, 1);
        b.open(n2, cm, 2);
        connect_pair(a, b, params_for(2).ip);
        NDK_SGE sge{};
        ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, &sge, 1, NDK_OP_FLAG_DEFER),
                  STATUS_SUCCESS);
        // Flush rings what was deferred, moves the QP to ERROR; later sends fail inline.
        a.qp->Dispatch->NdkFlush(a.qp);
        settle();
        EXPECT_EQ(n1.nic.values(hsi::REG_SQ_DOORBELL).size(), 1u);
        ASSERT_TRUE(wait_until(
            [&] { return n1.nic.qps.at(get_qp_number(a.qp)).states.back() == hsi::QPS_ERROR; }));
        EXPECT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, &sge, 1, 0), STATUS_CONNECTION_INVALID);

        // Resize with queued CQEs: they stay retrievable, at the same indexes in the new ring.
        const uint32_t cqn = n1.nic.cqs.begin()->first;
        hsi::cqe e{};
        e.qpn = get_qp_number(a.qp);
        e.wqe_index = 0;
        e.opcode = hsi::CQE_SEND;
        e.status = hsi::CQE_WR_FLUSH_ERR;
        n1.nic.post_cqe(cqn, e);
        settle();
        NDK_ADAPTER_INFO info{};
        ULONG size = sizeof(info);
        ASSERT_EQ(a.adapter->Dispatch->NdkQueryAdapterInfo(a.adapter, &info, &size),
                  STATUS_SUCCESS);
        ASSERT_TRUE(info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED);
        ASSERT_EQ(a.cq->Dispatch->NdkResizeCq(a.cq, 200, request_log::fn, nullptr), STATUS_SUCCESS);
        const auto rc = n1.nic.commands_of(hsi::CMD_RESIZE_CQ).at(0).u.cq;
        EXPECT_EQ(rc.cqn, cqn);
        EXPECT_GE(1u << rc.log_depth, 400u);
        n1.nic.cqs.at(cqn).ring = rc.ring_addr;  // the fake NIC follows the new ring
        n1.nic.cqs.at(cqn).log = rc.log_depth;
        e.wqe_index = 0;
        e.opcode = hsi::CQE_RECV;
        n1.nic.post_cqe(cqn, e);
        settle();
        NDK_RESULT r[4]{};
        ASSERT_EQ(a.cq->Dispatch->NdkGetCqResults(a.cq, r, 4), 2u);
        EXPECT_EQ(r[0].Status, STATUS_CANCELLED);
        EXPECT_EQ(r[1].Status, STATUS_CANCELLED);

        // Moderation: both off is a bad mix; an interval delays the notification.
        EXPECT_EQ(a.cq->Dispatch->NdkControlCqInterruptModeration(a.cq, MAXULONG, MAXULONG),
                  STATUS_INVALID_PARAMETER_MIX);
        ASSERT_EQ(a.cq->Dispatch->NdkControlCqInterruptModeration(a.cq, 20, MAXULONG),
                  STATUS_SUCCESS);
        a.cq->Dispatch->NdkArmCq(a.cq, NDK_CQ_NOTIFY_ANY);
        settle();
        n1.nic.post_cqe(cqn, e);
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        ASSERT_TRUE(wait_until([&] { return a.notes.calls == 1; }));
        EXPECT_GE(sc_core::sc_time_stamp() - t0, sc_core::sc_time(20, sc_core::SC_US));
    });
}

TEST(NdkObjects, SharedEndpointAndCloseDuringConnect) {
    hw::sim_context ctx;
    node n1("n1", host_config{}, ctx);  // async creation path
    node n2("n2", host_config{}, ctx);
    fabric_cm cm;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        NDK_ADAPTER* b = nullptr;
        ASSERT_EQ(open_adapter(n1.host, cm, params_for(1), &a), STATUS_SUCCESS);
        ASSERT_EQ(open_adapter(n2.host, cm, params_for(2), &b), STATUS_SUCCESS);
        adapter_params dup = params_for(1);
        NDK_ADAPTER* c = nullptr;
        EXPECT_EQ(open_adapter(n1.host, cm, dup, &c), STATUS_ADDRESS_ALREADY_EXISTS);
        EXPECT_EQ(open_adapter(n1.host, cm, params_for(9), &c), NDIS_STATUS_ADAPTER_NOT_READY);
        create_log pdl, cql, qpl;
        NDK_PD* pd = nullptr;
        NDK_CQ* cq = nullptr;
        NDK_QP* qp = nullptr;
        ASSERT_EQ(a->Dispatch->NdkCreatePd(a, create_log::fn, &pdl, &pd), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return pdl.calls == 1; }));
        pd = reinterpret_cast<NDK_PD*>(pdl.object);
        ASSERT_EQ(a->Dispatch->NdkCreateCq(a, 16, notify_log::fn, nullptr, nullptr, create_log::fn,
                                           &cql, &cq),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return cql.calls == 1; }));
        cq = reinterpret_cast<NDK_CQ*>(cql.object);
        ASSERT_EQ(pd->Dispatch->NdkCreateQp(pd, cq, cq, nullptr, 4, 4, 1, 1, 0, create_log::fn,
                                            &qpl, &qp),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return qpl.calls == 1; }));
        ASSERT_EQ(qpl.status, STATUS_SUCCESS);
        qp = reinterpret_cast<NDK_QP*>(qpl.object);
        EXPECT_EQ(qp->Header.ObjectType, NdkObjectTypeQp);

        // A shared endpoint holds a port; connectors using it report it as their local port.
        NDK_SHARED_ENDPOINT* sep = nullptr;
        SOCKADDR_IN sa = addr(0, 0);
        ASSERT_EQ(a->Dispatch->NdkCreateSharedEndpoint(a, reinterpret_cast<PSOCKADDR>(&sa),
                                                       sizeof(sa), create_log::fn, nullptr, &sep),
                  STATUS_SUCCESS);
        SOCKADDR_IN local{};
        ULONG len = sizeof(local);
        ASSERT_EQ(sep->Dispatch->NdkGetLocalAddress(sep, reinterpret_cast<PSOCKADDR>(&local), &len),
                  STATUS_SUCCESS);
        const uint16_t port = ntohs(local.sin_port);
        EXPECT_GE(port, 49152);
        EXPECT_EQ(ntohl(local.sin_addr.s_addr), params_for(1).ip);

        // Listener on b, paused: the request is refused as if nobody listened.
        NDK_LISTENER* l = nullptr;
        listen_state ls;
        ASSERT_EQ(
            b->Dispatch->NdkCreateListener(b, listen_state::fn, &ls, create_log::fn, nullptr, &l),
            STATUS_SUCCESS);
        SOCKADDR_IN la = addr(params_for(2).ip, 8000);
        ASSERT_EQ(l->Dispatch->NdkListen(l, reinterpret_cast<PSOCKADDR>(&la), sizeof(la),
                                         request_log::fn, nullptr),
                  STATUS_SUCCESS);
        l->Dispatch->NdkControlConnectEvents(l, TRUE);
        NDK_CONNECTOR* conn = nullptr;
        ASSERT_EQ(a->Dispatch->NdkCreateConnector(a, create_log::fn, nullptr, &conn),
                  STATUS_SUCCESS);
        request_log r1;
        ASSERT_EQ(conn->Dispatch->NdkConnectWithSharedEndpoint(
                      conn, qp, sep, reinterpret_cast<PSOCKADDR>(&la), sizeof(la), 1, 1, nullptr, 0,
                      request_log::fn, &r1),
                  STATUS_PENDING);
        len = sizeof(local);
        ASSERT_EQ(
            conn->Dispatch->NdkGetLocalAddress(conn, reinterpret_cast<PSOCKADDR>(&local), &len),
            STATUS_SUCCESS);
        EXPECT_EQ(ntohs(local.sin_port), port);
        ASSERT_TRUE(wait_until([&] { return r1.calls == 1; }));
        EXPECT_EQ(r1.status, STATUS_CONNECTION_REFUSED);
        EXPECT_EQ(ls.events, 0);

        // Unpaused: the request arrives; closing the active connector before the reply cancels
        // its Connect and the close completes after that callback.
        l->Dispatch->NdkControlConnectEvents(l, FALSE);
        NDK_CONNECTOR* conn2 = nullptr;
        ASSERT_EQ(a->Dispatch->NdkCreateConnector(a, create_log::fn, nullptr, &conn2),
                  STATUS_SUCCESS);
        request_log r2;
        ASSERT_EQ(
            conn2->Dispatch->NdkConnect(conn2, qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&la),
                                        sizeof(la), 1, 1, nullptr, 0, request_log::fn, &r2),
            STATUS_PENDING);
        std::vector<std::string> order;
        close_log closed{0, &order, "close"};
        EXPECT_EQ(conn2->Dispatch->NdkCloseConnector(&conn2->Header, close_log::fn, &closed),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return closed.calls == 1; }));
        EXPECT_EQ(r2.calls, 1);
        EXPECT_EQ(r2.status, STATUS_CANCELLED);
        // The passive side saw the request, then the abort: Accept reports it.
        ASSERT_TRUE(wait_until([&] { return ls.events == 1; }));
        wait_until([] { return false; }, 10000);
        request_log r3;
        EXPECT_EQ(ls.incoming->Dispatch->NdkAccept(ls.incoming, qp, 1, 1, nullptr, 0, nullptr,
                                                   nullptr, request_log::fn, &r3),
                  STATUS_CONNECTION_ABORTED);

        // Everything closes; close_adapter returns once all children are gone.
        int closes = 0;
        close_log any{0, nullptr, ""};
        auto close = [&](NDK_OBJECT_HEADER* h, NTSTATUS st) {
            if (st == STATUS_SUCCESS) {
                ++closes;
            }
        };
        close(&ls.incoming->Header,
              ls.incoming->Dispatch->NdkCloseConnector(&ls.incoming->Header, close_log::fn, &any));
        close(&l->Header, l->Dispatch->NdkCloseListener(&l->Header, close_log::fn, &any));
        close(&conn->Header, conn->Dispatch->NdkCloseConnector(&conn->Header, close_log::fn, &any));
        close(&sep->Header,
              sep->Dispatch->NdkCloseSharedEndpoint(&sep->Header, close_log::fn, &any));
        EXPECT_EQ(closes, 4);  // software objects close inline
        qp->Dispatch->NdkCloseQp(&qp->Header, close_log::fn, &any);
        cq->Dispatch->NdkCloseCq(&cq->Header, close_log::fn, &any);
        pd->Dispatch->NdkClosePd(&pd->Header, close_log::fn, &any);
        close_adapter(a);
        EXPECT_EQ(any.calls, 3);  // QP, CQ, PD closed through the command queue
        close_adapter(b);
    });
}

}  // namespace
}  // namespace rnic::ndk::test
