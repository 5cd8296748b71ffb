// SPDX-License-Identifier: Apache-2.0
// Connection handshake as the driver programs it, against fake NICs whose emulated GSI carries
// the driver's CM MADs and ARP frames (ndk_bench.h fake_network): QP state transitions and
// addresses, neighbour resolution, refusals and rejects, unreachable hosts and networks,
// duplicate addresses, shared endpoints, closing a connector mid-handshake. The object families
// have their own files (ndk_{adapter,pd,cq,qp,srq,mr,mw}_test.cpp); CM over the wire between
// real NICs is ndk_connector_test.cpp.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/ndk/ndk_bench.h"

namespace rnic::ndk::test {
namespace {

// Connects a (active) to b (passive, listening on port 5000) through the emulated GSI.
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

// ---------------------------------------------------------------------------------------------

TEST(NdkDriver, ConnectHandshakeProgramsBothQps) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint a, b;
        a.open(n1, net, params_for(1));
        b.open(n2, net, params_for(2));
        connection c;
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        c.establish(a, b, params_for(2).ip);
        // ARP request and reply, then REQ, REP, RTU: at least five one-way delays.
        EXPECT_GE(sc_core::sc_time_stamp() - t0, sc_core::sc_time(10, sc_core::SC_US));
        // The REQ went unicast to the MAC that ARP resolved; the reply came from b's NIC.
        const auto arps = n1.nic.arp_sent();
        ASSERT_EQ(arps.size(), 1u);
        EXPECT_EQ(arps[0].oper, arp_packet::REQUEST);
        EXPECT_EQ(arps[0].eth_dst, BROADCAST_MAC);
        EXPECT_EQ(arps[0].tpa, params_for(2).ip);
        EXPECT_EQ(arps[0].spa, params_for(1).ip);
        EXPECT_EQ(n2.nic.arp_replies, 1u);
        EXPECT_TRUE(n2.nic.arp_sent().empty());  // the hardware answers, not b's driver
        EXPECT_EQ(n1.host.neighbors().lookup(params_for(2).ip), params_for(2).mac);
        ASSERT_FALSE(n1.nic.gsi_sent.empty());
        const auto& req = n1.nic.gsi_sent[1];
        EXPECT_EQ(req.attribute(), hsi::CM_ATTR_REQ);
        EXPECT_EQ(std::memcmp(req.header.dst_mac, params_for(2).mac.data(), 6), 0);
        EXPECT_EQ(n1.nic.mads_sent(), (std::vector<uint16_t>{hsi::CM_ATTR_REQ, hsi::CM_ATTR_RTU}));
        EXPECT_EQ(n2.nic.mads_sent(), (std::vector<uint16_t>{hsi::CM_ATTR_REP}));
        EXPECT_EQ(get_cm_counters(a.adapter).arp_sent, 1u);
        EXPECT_EQ(get_cm_counters(a.adapter).arp_received, 1u);
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
    fake_network net;
    run([&] {
        endpoint a, b;
        a.open(n1, net, params_for(1));
        b.open(n2, net, params_for(2));
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
        // Unknown host: nobody answers ARP; after the host's retries Connect completes with
        // STATUS_HOST_UNREACHABLE, and no REQ went out.
        NDK_CONNECTOR* c0 = nullptr;
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &c0),
                  STATUS_SUCCESS);
        SOCKADDR_IN nowhere = addr(0x0A0000FE, 6000);
        const size_t mads_before = n1.nic.mads_sent().size();
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        request_log r0;
        ASSERT_EQ(
            c0->Dispatch->NdkConnect(c0, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&nowhere),
                                     sizeof(nowhere), 0, 0, nullptr, 0, request_log::fn, &r0),
            STATUS_PENDING);
        const host_config& hc = n1.host.config();
        ASSERT_TRUE(
            wait_until([&] { return r0.calls == 1; }, hc.arp_timeout_ns * (hc.arp_retries + 2)));
        EXPECT_EQ(r0.status, STATUS_HOST_UNREACHABLE);
        EXPECT_GE(sc_core::sc_time_stamp() - t0,
                  sc_core::sc_time(hc.arp_timeout_ns * (hc.arp_retries + 1), sc_core::SC_NS));
        EXPECT_EQ(n1.nic.mads_sent().size(), mads_before);
        size_t asked = 0;
        for (const auto& arp : n1.nic.arp_sent()) {
            asked += arp.tpa == 0x0A0000FEu ? 1 : 0;
        }
        EXPECT_EQ(asked, hc.arp_retries + 1u);
        EXPECT_FALSE(n1.host.neighbors().lookup(0x0A0000FE).has_value());
        // Outside the adapter's /24 and no default gateway: STATUS_NETWORK_UNREACHABLE inline.
        NDK_CONNECTOR* c2 = nullptr;
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &c2),
                  STATUS_SUCCESS);
        SOCKADDR_IN far = addr(0x0B000002, 6000);  // 11.0.0.2
        EXPECT_EQ(c2->Dispatch->NdkConnect(c2, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&far),
                                           sizeof(far), 0, 0, nullptr, 0, request_log::fn, &r1),
                  STATUS_NETWORK_UNREACHABLE);
        EXPECT_EQ(n1.nic.arp_sent().size(), asked + 1);  // b's address, nothing for 11.0.0.2
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

TEST(NdkDriver, SharedEndpointAndCloseDuringConnect) {
    hw::sim_context ctx;
    host_config dad = host_config{};  // async creation path
    dad.dad_probes = 2;               // duplicate address detection at open
    dad.arp_timeout_ns = 20e3;
    node n1("n1", host_config{}, ctx);
    node n2("n2", dad, ctx);
    node n3("n3", dad, ctx);
    fake_network net;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        NDK_ADAPTER* b = nullptr;
        ASSERT_EQ(open_on(net, n1, params_for(1), &a), STATUS_SUCCESS);
        // n2's probes for 10.0.0.2 go unanswered: the open takes the probe intervals.
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        ASSERT_EQ(open_on(net, n2, params_for(2), &b), STATUS_SUCCESS);
        EXPECT_GE(sc_core::sc_time_stamp() - t0, sc_core::sc_time(40, sc_core::SC_US));
        ASSERT_EQ(n2.nic.arp_sent().size(), 2u);
        EXPECT_EQ(n2.nic.arp_sent()[0].spa, 0u);  // RFC 5227 probe: no sender address
        EXPECT_EQ(n2.nic.arp_sent()[0].tpa, params_for(2).ip);
        // Another NIC with 10.0.0.1: n1's NIC answers the probe, the open fails.
        adapter_params dup = params_for(1);
        dup.mac[5] = 0x33;
        NDK_ADAPTER* c = nullptr;
        EXPECT_EQ(open_on(net, n3, dup, &c), STATUS_ADDRESS_ALREADY_EXISTS);
        EXPECT_EQ(n3.nic.arp_sent().size(), 1u);  // the first probe's answer was enough
        EXPECT_EQ(n1.nic.arp_replies, 1u);
        // One driver instance per NIC.
        EXPECT_EQ(open_adapter(n1.host, params_for(9), &c), NDIS_STATUS_ADAPTER_NOT_READY);
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

// Closing a connector while ARP still resolves its next hop: Connect completes with
// STATUS_CANCELLED (from the DPC, before the close completion), no REQ ever leaves, and the
// neighbour cache stops asking once nobody waits. A second Connect to the same silent address
// while the first resolves shares its ARP requests.
TEST(NdkDriver, CloseDuringArpResolutionCancelsConnect) {
    hw::sim_context ctx;
    host_config cfg = sync_cfg();
    cfg.arp_timeout_ns = 50e3;
    cfg.arp_retries = 3;
    node n1("n1", cfg, ctx);
    fake_network net;
    run([&] {
        endpoint a;
        a.open(n1, net, params_for(1));
        NDK_QP* q2 = nullptr;
        ASSERT_EQ(a.pd->Dispatch->NdkCreateQp(a.pd, a.cq, a.cq, nullptr, 4, 4, 1, 1, 0,
                                              create_log::fn, nullptr, &q2),
                  STATUS_SUCCESS);
        NDK_CONNECTOR* c1 = nullptr;
        NDK_CONNECTOR* c2 = nullptr;
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &c1),
                  STATUS_SUCCESS);
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &c2),
                  STATUS_SUCCESS);
        SOCKADDR_IN silent = addr(0x0A000042, 7000);
        request_log r1, r2;
        ASSERT_EQ(
            c1->Dispatch->NdkConnect(c1, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&silent),
                                     sizeof(silent), 0, 0, nullptr, 0, request_log::fn, &r1),
            STATUS_PENDING);
        ASSERT_EQ(c2->Dispatch->NdkConnect(c2, q2, nullptr, 0, reinterpret_cast<PSOCKADDR>(&silent),
                                           sizeof(silent), 0, 0, nullptr, 0, request_log::fn, &r2),
                  STATUS_PENDING);
        sc_core::wait(sc_core::sc_time(10, sc_core::SC_US));
        EXPECT_EQ(n1.nic.arp_sent().size(), 1u);  // one request serves both
        std::vector<std::string> order;
        close_log closed{0, &order, "close"};
        EXPECT_EQ(c1->Dispatch->NdkCloseConnector(&c1->Header, close_log::fn, &closed),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return closed.calls == 1; }));
        EXPECT_EQ(r1.calls, 1);
        EXPECT_EQ(r1.status, STATUS_CANCELLED);
        EXPECT_EQ(r2.calls, 0);  // still resolving
        // The other waiter keeps the requests going; then it fails alone.
        ASSERT_TRUE(wait_until([&] { return r2.calls == 1; }, 300e3));
        EXPECT_EQ(r2.status, STATUS_HOST_UNREACHABLE);
        EXPECT_EQ(n1.nic.arp_sent().size(), 4u);
        EXPECT_TRUE(n1.nic.mads_sent().empty());  // no REQ (and no REJ) for either
        const auto& ns = n1.host.neighbors().get_stats();
        EXPECT_EQ(ns.requests, 4u);
        EXPECT_EQ(ns.failed, 1u);
        EXPECT_EQ(ns.resolved, 0u);
        // A lone waiter closed mid-resolution stops the requests.
        NDK_CONNECTOR* c3 = nullptr;
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &c3),
                  STATUS_SUCCESS);
        request_log r3;
        ASSERT_EQ(
            c3->Dispatch->NdkConnect(c3, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&silent),
                                     sizeof(silent), 0, 0, nullptr, 0, request_log::fn, &r3),
            STATUS_PENDING);
        sc_core::wait(sc_core::sc_time(10, sc_core::SC_US));
        close_log closed3{0, nullptr, ""};
        c3->Dispatch->NdkCloseConnector(&c3->Header, close_log::fn, &closed3);
        ASSERT_TRUE(wait_until([&] { return closed3.calls == 1; }));
        EXPECT_EQ(r3.status, STATUS_CANCELLED);
        sc_core::wait(sc_core::sc_time(300, sc_core::SC_US));
        EXPECT_EQ(n1.nic.arp_sent().size(), 5u);  // its first request only
        EXPECT_EQ(n1.host.neighbors().get_stats().failed, 1u);
        EXPECT_EQ(r3.calls, 1);
    });
}

// Local and remote addresses (ndkpi.md 7.3, CreateSharedEndpoint / Listen / Connect):
// STATUS_INVALID_ADDRESS for a sockaddr that is not IPv4, too short, names another host's local
// address or has no destination; STATUS_TOO_MANY_ADDRESSES once all 16384 ephemeral ports
// (49152-65535) are held, for each of the three calls that take one; STATUS_SHARING_VIOLATION
// for a port in use; STATUS_ADDRESS_ALREADY_EXISTS for a connection whose 4-tuple exists. A port
// freed by a close is handed out again.
TEST(NdkDriver, AddressStatusesOfSharedEndpointListenAndConnect) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint a;
        a.open(n1, net, params_for(1));
        NDK_ADAPTER* ad = a.adapter;
        const uint32_t peer = params_for(2).ip;
        auto create_sep = [&](SOCKADDR_IN sa, ULONG len, NDK_SHARED_ENDPOINT** out) {
            return ad->Dispatch->NdkCreateSharedEndpoint(ad, reinterpret_cast<PSOCKADDR>(&sa), len,
                                                         create_log::fn, nullptr, out);
        };
        NDK_SHARED_ENDPOINT* sep = nullptr;
        SOCKADDR_IN v6 = addr(0, 0);
        v6.sin_family = AF_INET6;
        EXPECT_EQ(create_sep(v6, sizeof(v6), &sep), STATUS_INVALID_ADDRESS);
        EXPECT_EQ(create_sep(addr(0, 0), sizeof(SOCKADDR_IN) - 1, &sep), STATUS_INVALID_ADDRESS);
        EXPECT_EQ(create_sep(addr(peer, 0), sizeof(SOCKADDR_IN), &sep), STATUS_INVALID_ADDRESS);
        EXPECT_EQ(sep, nullptr);

        NDK_LISTENER* l = nullptr;
        listen_state ls;
        ASSERT_EQ(
            ad->Dispatch->NdkCreateListener(ad, listen_state::fn, &ls, create_log::fn, nullptr, &l),
            STATUS_SUCCESS);
        auto listen = [&](SOCKADDR_IN sa) {
            return l->Dispatch->NdkListen(l, reinterpret_cast<PSOCKADDR>(&sa), sizeof(sa),
                                          request_log::fn, nullptr);
        };
        EXPECT_EQ(listen(addr(peer, 6000)), STATUS_INVALID_ADDRESS);
        EXPECT_EQ(listen(v6), STATUS_INVALID_ADDRESS);

        NDK_CONNECTOR* conn = nullptr;
        ASSERT_EQ(ad->Dispatch->NdkCreateConnector(ad, create_log::fn, nullptr, &conn),
                  STATUS_SUCCESS);
        auto connect = [&](const SOCKADDR_IN* src, SOCKADDR_IN dst) {
            return conn->Dispatch->NdkConnect(
                conn, a.qp, reinterpret_cast<PSOCKADDR>(const_cast<SOCKADDR_IN*>(src)),
                src != nullptr ? sizeof(SOCKADDR_IN) : 0, reinterpret_cast<PSOCKADDR>(&dst),
                sizeof(dst), 1, 1, nullptr, 0, request_log::fn, nullptr);
        };
        EXPECT_EQ(connect(nullptr, addr(peer, 0)), STATUS_INVALID_ADDRESS);  // no port
        EXPECT_EQ(connect(nullptr, addr(0, 7000)), STATUS_INVALID_ADDRESS);  // no host
        EXPECT_EQ(connect(nullptr, v6), STATUS_INVALID_ADDRESS);
        const SOCKADDR_IN foreign = addr(peer, 0);
        EXPECT_EQ(connect(&foreign, addr(peer, 7000)), STATUS_INVALID_ADDRESS);

        // Two connections from one shared endpoint need different peers: the same 4-tuple again
        // is STATUS_ADDRESS_ALREADY_EXISTS while the first lives (here: resolving the peer).
        ASSERT_EQ(create_sep(addr(0, 0), sizeof(SOCKADDR_IN), &sep), STATUS_SUCCESS);
        NDK_QP* q2 = nullptr;
        NDK_QP* q3 = nullptr;
        ASSERT_EQ(a.pd->Dispatch->NdkCreateQp(a.pd, a.cq, a.cq, nullptr, 4, 4, 1, 1, 0,
                                              create_log::fn, nullptr, &q2),
                  STATUS_SUCCESS);
        ASSERT_EQ(a.pd->Dispatch->NdkCreateQp(a.pd, a.cq, a.cq, nullptr, 4, 4, 1, 1, 0,
                                              create_log::fn, nullptr, &q3),
                  STATUS_SUCCESS);
        NDK_CONNECTOR* c1 = nullptr;
        NDK_CONNECTOR* c2 = nullptr;
        ASSERT_EQ(ad->Dispatch->NdkCreateConnector(ad, create_log::fn, nullptr, &c1),
                  STATUS_SUCCESS);
        ASSERT_EQ(ad->Dispatch->NdkCreateConnector(ad, create_log::fn, nullptr, &c2),
                  STATUS_SUCCESS);
        auto connect_shared = [&](NDK_CONNECTOR* c, NDK_QP* qp, SOCKADDR_IN dst, request_log* r) {
            return c->Dispatch->NdkConnectWithSharedEndpoint(
                c, qp, sep, reinterpret_cast<PSOCKADDR>(&dst), sizeof(dst), 1, 1, nullptr, 0,
                request_log::fn, r);
        };
        request_log r1, r2;
        ASSERT_EQ(connect_shared(c1, a.qp, addr(peer, 7000), &r1), STATUS_PENDING);
        EXPECT_EQ(connect_shared(c2, q2, addr(peer, 7000), &r2), STATUS_ADDRESS_ALREADY_EXISTS);
        EXPECT_EQ(connect_shared(c2, q3, addr(peer, 7001), &r2), STATUS_PENDING);
        close_log any{0, nullptr, ""};
        c1->Dispatch->NdkCloseConnector(&c1->Header, close_log::fn, &any);
        c2->Dispatch->NdkCloseConnector(&c2->Header, close_log::fn, &any);
        ASSERT_TRUE(wait_until([&] { return r1.calls == 1 && r2.calls == 1; }));
        EXPECT_EQ(r1.status, STATUS_CANCELLED);
        EXPECT_EQ(r2.status, STATUS_CANCELLED);
        sep->Dispatch->NdkCloseSharedEndpoint(&sep->Header, close_log::fn, &any);
        sep = nullptr;

        // Hold every ephemeral port.
        std::vector<NDK_SHARED_ENDPOINT*> held;
        std::vector<bool> seen(16384, false);
        for (int i = 0; i < 16384; ++i) {
            NDK_SHARED_ENDPOINT* e = nullptr;
            ASSERT_EQ(create_sep(addr(0, 0), sizeof(SOCKADDR_IN), &e), STATUS_SUCCESS) << i;
            SOCKADDR_IN local{};
            ULONG len = sizeof(local);
            ASSERT_EQ(e->Dispatch->NdkGetLocalAddress(e, reinterpret_cast<PSOCKADDR>(&local), &len),
                      STATUS_SUCCESS);
            const uint16_t port = ntohs(local.sin_port);
            ASSERT_GE(port, 49152);
            ASSERT_FALSE(seen[port - 49152]) << "port " << port << " handed out twice";
            seen[port - 49152] = true;
            held.push_back(e);
        }
        EXPECT_EQ(create_sep(addr(0, 0), sizeof(SOCKADDR_IN), &sep), STATUS_TOO_MANY_ADDRESSES);
        EXPECT_EQ(listen(addr(0, 0)), STATUS_TOO_MANY_ADDRESSES);
        EXPECT_EQ(connect(nullptr, addr(peer, 7000)), STATUS_TOO_MANY_ADDRESSES);
        // A named port is not ephemeral: free unless someone holds it.
        EXPECT_EQ(listen(addr(0, 6000)), STATUS_SUCCESS);
        EXPECT_EQ(create_sep(addr(0, 6000), sizeof(SOCKADDR_IN), &sep), STATUS_SHARING_VIOLATION);

        // Closing one endpoint frees its port for the next caller.
        SOCKADDR_IN freed{};
        ULONG len = sizeof(freed);
        ASSERT_EQ(held[100]->Dispatch->NdkGetLocalAddress(
                      held[100], reinterpret_cast<PSOCKADDR>(&freed), &len),
                  STATUS_SUCCESS);
        EXPECT_EQ(
            held[100]->Dispatch->NdkCloseSharedEndpoint(&held[100]->Header, close_log::fn, &any),
            STATUS_SUCCESS);
        held.erase(held.begin() + 100);
        ASSERT_EQ(create_sep(addr(0, 0), sizeof(SOCKADDR_IN), &sep), STATUS_SUCCESS);
        SOCKADDR_IN again{};
        len = sizeof(again);
        ASSERT_EQ(sep->Dispatch->NdkGetLocalAddress(sep, reinterpret_cast<PSOCKADDR>(&again), &len),
                  STATUS_SUCCESS);
        EXPECT_EQ(again.sin_port, freed.sin_port);
        held.push_back(sep);

        for (NDK_SHARED_ENDPOINT* e : held) {
            e->Dispatch->NdkCloseSharedEndpoint(&e->Header, close_log::fn, &any);
        }
        conn->Dispatch->NdkCloseConnector(&conn->Header, close_log::fn, &any);
        l->Dispatch->NdkCloseListener(&l->Header, close_log::fn, &any);
    });
}

// The active consumer never calls CompleteConnect and the peer's REJ never arrives (its cable is
// cut after the REP): cm_timeout_ns x (cm_retries + 2) after the REP the active side gives up
// with a REJ of its own, a late CompleteConnect returns STATUS_IO_TIMEOUT, and the QP (never
// moved past INIT) can connect again. The peer's Accept times out on its own.
TEST(NdkDriver, LateCompleteConnectTimesOut) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint a, b;
        a.open(n1, net, params_for(1));
        b.open(n2, net, params_for(2));
        NDK_LISTENER* l = nullptr;
        listen_state ls;
        ASSERT_EQ(b.adapter->Dispatch->NdkCreateListener(b.adapter, listen_state::fn, &ls,
                                                         create_log::fn, nullptr, &l),
                  STATUS_SUCCESS);
        SOCKADDR_IN la = addr(0, 5000);
        ASSERT_EQ(l->Dispatch->NdkListen(l, reinterpret_cast<PSOCKADDR>(&la), sizeof(la),
                                         request_log::fn, nullptr),
                  STATUS_SUCCESS);
        NDK_CONNECTOR* c = nullptr;
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &c),
                  STATUS_SUCCESS);
        SOCKADDR_IN dst = addr(params_for(2).ip, 5000);
        request_log connected, accepted;
        ASSERT_EQ(
            c->Dispatch->NdkConnect(c, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&dst),
                                    sizeof(dst), 1, 1, nullptr, 0, request_log::fn, &connected),
            STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return ls.events == 1; }));
        ASSERT_EQ(ls.incoming->Dispatch->NdkAccept(ls.incoming, b.qp, 1, 1, nullptr, 0, nullptr,
                                                   nullptr, request_log::fn, &accepted),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return connected.calls == 1; }));
        ASSERT_EQ(connected.status, STATUS_SUCCESS);
        const sc_core::sc_time replied = sc_core::sc_time_stamp();
        n2.nic.gsi_drop_all = true;

        const adapter_params p = params_for(1);
        const double deadline_ns = p.cm_timeout_ns * (p.cm_retries + 2);
        ASSERT_TRUE(wait_until([&] { return n1.nic.mads_sent().back() == hsi::CM_ATTR_REJ; },
                               deadline_ns * 2));
        EXPECT_GE(sc_core::sc_time_stamp() - replied,
                  sc_core::sc_time(deadline_ns, sc_core::SC_NS));
        EXPECT_EQ(n1.nic.mads_sent(), (std::vector<uint16_t>{hsi::CM_ATTR_REQ, hsi::CM_ATTR_REJ}));
        request_log late;
        EXPECT_EQ(c->Dispatch->NdkCompleteConnect(c, nullptr, nullptr, request_log::fn, &late),
                  STATUS_IO_TIMEOUT);
        EXPECT_EQ(late.calls, 0);
        EXPECT_EQ(accepted.calls, 1);  // the peer gave up first, on its own REP timer
        EXPECT_EQ(accepted.status, STATUS_IO_TIMEOUT);

        // The QP is free again: another connector may use it.
        NDK_CONNECTOR* c2 = nullptr;
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &c2),
                  STATUS_SUCCESS);
        request_log again;
        EXPECT_EQ(c2->Dispatch->NdkConnect(c2, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&dst),
                                           sizeof(dst), 1, 1, nullptr, 0, request_log::fn, &again),
                  STATUS_PENDING);
        close_log any{0, nullptr, ""};
        c2->Dispatch->NdkCloseConnector(&c2->Header, close_log::fn, &any);
        c->Dispatch->NdkCloseConnector(&c->Header, close_log::fn, &any);
    });
}

// Neighbour ageing (host arp_reachable_ns): within the reachable time a second Connect to the
// same peer sends no ARP; after it the entry is stale and the next Connect asks again (and
// still connects to the answer); a stale entry nobody confirms is dropped and the Connect fails
// with STATUS_HOST_UNREACHABLE. No listener on the peer: each Connect ends in a REJ
// (STATUS_CONNECTION_REFUSED), which is enough to show the REQ reached it.
TEST(NdkDriver, StaleNeighbourIsAskedAgain) {
    hw::sim_context ctx;
    host_config cfg = sync_cfg();
    cfg.arp_reachable_ns = 200e3;
    cfg.arp_timeout_ns = 20e3;
    cfg.arp_retries = 1;
    node n1("n1", cfg, ctx);
    node n2("n2", cfg, ctx);
    fake_network net;
    run([&] {
        endpoint a, b;
        a.open(n1, net, params_for(1));
        b.open(n2, net, params_for(2));
        const uint32_t peer = params_for(2).ip;
        auto connect = [&]() {
            NDK_CONNECTOR* c = nullptr;
            EXPECT_EQ(
                a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &c),
                STATUS_SUCCESS);
            SOCKADDR_IN dst = addr(peer, 5000);
            request_log r;
            EXPECT_EQ(
                c->Dispatch->NdkConnect(c, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&dst),
                                        sizeof(dst), 1, 1, nullptr, 0, request_log::fn, &r),
                STATUS_PENDING);
            EXPECT_TRUE(wait_until([&] { return r.calls == 1; }, 1e6));
            close_log any{0, nullptr, ""};
            c->Dispatch->NdkCloseConnector(&c->Header, close_log::fn, &any);
            return r.status;
        };
        EXPECT_EQ(connect(), STATUS_CONNECTION_REFUSED);
        EXPECT_EQ(n1.nic.arp_sent().size(), 1u);
        EXPECT_EQ(connect(), STATUS_CONNECTION_REFUSED);  // fresh entry: no ARP
        EXPECT_EQ(n1.nic.arp_sent().size(), 1u);

        sc_core::wait(sc_core::sc_time(250, sc_core::SC_US));  // the entry goes stale
        EXPECT_EQ(connect(), STATUS_CONNECTION_REFUSED);
        EXPECT_EQ(n1.nic.arp_sent().size(), 2u);
        EXPECT_EQ(n1.host.neighbors().get_stats().stale, 1u);
        EXPECT_EQ(n1.host.neighbors().lookup(peer), params_for(2).mac);

        sc_core::wait(sc_core::sc_time(250, sc_core::SC_US));
        n2.nic.gsi_drop_all = true;  // the peer is gone
        EXPECT_EQ(connect(), STATUS_HOST_UNREACHABLE);
        EXPECT_EQ(n1.nic.arp_sent().size(), 4u);  // first request and one retry
        EXPECT_EQ(n1.host.neighbors().get_stats().stale, 2u);
        EXPECT_FALSE(n1.host.neighbors().lookup(peer).has_value());
    });
}

}  // namespace
}  // namespace rnic::ndk::test
