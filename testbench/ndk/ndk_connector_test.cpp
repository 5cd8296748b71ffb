// SPDX-License-Identifier: Apache-2.0
// Connectors and listeners over the wire: two real nodes (host, PCIe, NIC) on one Ethernet link.
// The connection exchange is IB CM MADs on QP1 (RoCEv2 UD SEND-only frames) sent and received
// by the NICs' GSI blocks, to the MAC that ARP (RFC 826 frames through the same GSI rings, the
// NIC answering for its own address) resolved; the tests check the NDK statuses, the connection
// data, the MADs and ARP frames on the wire (every frame captured as it leaves a MAC), routing
// (subnet, gateway), unreachable hosts and recovery from lost MADs. One SystemC elaboration per
// TEST (ctest runs each in its own process).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hw/gsi/gsi.h"
#include "hw/roce/roce.h"
#include "ndk_shim/host/neighbor_cache.h"
#include "ndk_shim/ndk_sim.h"
#include "ndk_shim/provider/cm_mad.h"
#include "testbench/output/pcap_writer.h"
#include "testbench/scenario/node.h"
#include "testbench/scenario/scenario_config.h"

namespace rnic::ndk::connector_test {
namespace {

using nlohmann::json;
constexpr size_t MAD_OFFSET = roce::BTH_OFFSET + roce::BTH_BYTES + 8;  // after the DETH
constexpr double CM_TIMEOUT_NS = 50e3;
constexpr uint32_t CM_RETRIES = 3;

// One captured frame (as it left a MAC, before faults).
struct wire_frame {
    int side = 0;  // 0: node 0 -> node 1
    sc_core::sc_time at;
    std::vector<uint8_t> data;
    bool is_mad() const { return data.size() > MAD_OFFSET && data[roce::BTH_OFFSET] == 0x64; }
    bool is_arp() const { return data.size() >= 42 && data[12] == 0x08 && data[13] == 0x06; }
    uint16_t attribute() const {
        return static_cast<uint16_t>(data[MAD_OFFSET + 16] << 8 | data[MAD_OFFSET + 17]);
    }
};

uint32_t be32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
           static_cast<uint32_t>(p[2]) << 8 | p[3];
}

// Two nodes and their link; `link` is the topology.link section (faults).
struct bench {
    hw::sim_context ctx;
    scenario::scenario_config cfg;
    fabric::eth_link link;
    scenario::node n0, n1;
    std::vector<wire_frame> frames;

    explicit bench(const json& link_doc = json::object(), json host = json::object())
        : cfg(scenario::parse_scenario(
              {{"host", with_sync(std::move(host))}, {"topology", {{"link", link_doc}}}}))
        , link("link", cfg.topology.link, ctx)
        , n0("n0", 0, cfg, link, ctx)
        , n1("n1", 1, cfg, link, ctx) {
        link.set_capture([this](int side, const fabric::eth_frame& f) {
            frames.push_back({side, sc_core::sc_time_stamp(), f.data});
        });
    }
    adapter_params params(size_t i) const {
        const auto& nc = cfg.topology.nodes[i];
        adapter_params p;
        p.node_id = static_cast<uint32_t>(i);
        p.mac = nc.mac;
        p.ip = nc.ip;
        p.limits = cfg.rnic.limits;
        p.default_mtu = nc.mtu;
        p.cm_timeout_ns = CM_TIMEOUT_NS;
        p.cm_retries = CM_RETRIES;
        return p;
    }
    uint64_t stat(const std::string& block, const std::string& counter) const {
        for (const auto& e : ctx.stats.entries()) {
            if (e.block == block && e.name == counter) {
                return e.value().get<uint64_t>();
            }
        }
        ADD_FAILURE() << "no stat " << block << "." << counter;
        return 0;
    }
    static json with_sync(json host) {
        host["async_create"] = false;
        return host;
    }
    // ARP frames one side sent, decoded, in order.
    std::vector<arp_packet> arps(int side) const {
        std::vector<arp_packet> v;
        for (const auto& f : frames) {
            arp_packet a;
            if (f.side == side && f.is_arp() && decode_arp(f.data.data(), f.data.size(), a)) {
                v.push_back(a);
            }
        }
        return v;
    }
    // Static neighbour entries for each other's address (no ARP before the first REQ).
    void static_neighbors() {
        n0.host.neighbors().add_static(params(1).ip, params(1).mac);
        n1.host.neighbors().add_static(params(0).ip, params(0).mac);
    }
    // CM MADs one side sent, by attribute, in order.
    std::vector<uint16_t> mads(int side) const {
        std::vector<uint16_t> v;
        for (const auto& f : frames) {
            if (f.side == side && f.is_mad()) {
                v.push_back(f.attribute());
            }
        }
        return v;
    }
};

void run(std::function<void()> body) {
    sc_core::sc_spawn([body] {
        body();
        sc_core::sc_stop();
    });
    sc_core::sc_start();
}

// Evaluates `cond` until it holds (once per 100 ns) or `ns` pass; cond may consume (a poll).
bool wait_until(const std::function<bool()>& cond, double ns) {
    const sc_core::sc_time end = sc_core::sc_time_stamp() + sc_core::sc_time(ns, sc_core::SC_NS);
    for (;;) {
        if (cond()) {
            return true;
        }
        if (sc_core::sc_time_stamp() >= end) {
            return false;
        }
        sc_core::wait(sc_core::sc_time(100, sc_core::SC_NS));
    }
}

void wait_until_time(double ns) {
    const sc_core::sc_time t(ns, sc_core::SC_NS);
    if (sc_core::sc_time_stamp() < t) {
        sc_core::wait(t - sc_core::sc_time_stamp());
    }
}

SOCKADDR_IN addr(uint32_t ip, uint16_t port) {
    SOCKADDR_IN a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(ip);
    return a;
}

struct request_log {
    int calls = 0;
    NTSTATUS status = STATUS_PENDING;
    static VOID fn(PVOID ctx, NTSTATUS st) {
        auto* l = static_cast<request_log*>(ctx);
        ++l->calls;
        l->status = st;
    }
};
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
VOID ignore_create(PVOID, NTSTATUS, NDK_OBJECT_HEADER*) {}
VOID ignore_close(PVOID) {}

// An adapter with a PD, a CQ and a QP (synchronous creation).
struct endpoint {
    NDK_ADAPTER* adapter = nullptr;
    NDK_PD* pd = nullptr;
    NDK_CQ* cq = nullptr;
    NDK_QP* qp = nullptr;
    void open(scenario::node& n, const adapter_params& p) {
        ASSERT_EQ(open_adapter(n.host, p, &adapter), STATUS_SUCCESS);
        ASSERT_EQ(adapter->Dispatch->NdkCreatePd(adapter, ignore_create, nullptr, &pd),
                  STATUS_SUCCESS);
        ASSERT_EQ(adapter->Dispatch->NdkCreateCq(adapter, 64, nullptr, nullptr, nullptr,
                                                 ignore_create, nullptr, &cq),
                  STATUS_SUCCESS);
        qp = new_qp();
        ASSERT_NE(qp, nullptr);
    }
    NDK_QP* new_qp() {
        NDK_QP* q = nullptr;
        EXPECT_EQ(pd->Dispatch->NdkCreateQp(pd, cq, cq, this, 16, 16, 1, 1, 0, ignore_create,
                                            nullptr, &q),
                  STATUS_SUCCESS);
        return q;
    }
    NDK_LISTENER* listen(listen_state& ls, uint16_t port) {
        NDK_LISTENER* l = nullptr;
        EXPECT_EQ(adapter->Dispatch->NdkCreateListener(adapter, listen_state::fn, &ls,
                                                       ignore_create, nullptr, &l),
                  STATUS_SUCCESS);
        SOCKADDR_IN la = addr(0, port);
        EXPECT_EQ(l->Dispatch->NdkListen(l, reinterpret_cast<PSOCKADDR>(&la), sizeof(la), nullptr,
                                         nullptr),
                  STATUS_SUCCESS);
        return l;
    }
    NDK_CONNECTOR* connector() {
        NDK_CONNECTOR* c = nullptr;
        EXPECT_EQ(adapter->Dispatch->NdkCreateConnector(adapter, ignore_create, nullptr, &c),
                  STATUS_SUCCESS);
        return c;
    }
    NTSTATUS connect(NDK_CONNECTOR* c, NDK_QP* q, uint32_t ip, uint16_t port, const char* data,
                     request_log& r) {
        SOCKADDR_IN dst = addr(ip, port);
        return c->Dispatch->NdkConnect(c, q, nullptr, 0, reinterpret_cast<PSOCKADDR>(&dst),
                                       sizeof(dst), 4, 2, const_cast<char*>(data),
                                       static_cast<ULONG>(data != nullptr ? std::strlen(data) : 0),
                                       request_log::fn, &r);
    }
    // A zero-byte SEND answered by a zero-SGE receive: the connected QPs carry traffic.
    void send_empty() { EXPECT_EQ(qp->Dispatch->NdkSend(qp, this, nullptr, 0, 0), STATUS_SUCCESS); }
    void post_receive() {
        EXPECT_EQ(qp->Dispatch->NdkReceive(qp, this, nullptr, 0), STATUS_SUCCESS);
    }
    bool poll(NDK_RESULT& r) { return cq->Dispatch->NdkGetCqResults(cq, &r, 1) == 1; }
};

// Connect (active, node 0) -> Accept (passive, node 1) -> CompleteConnect, with data both ways.
struct connection {
    listen_state ls;
    NDK_LISTENER* listener = nullptr;
    NDK_CONNECTOR* active = nullptr;
    request_log connect_done, complete_done, accept_done;
    disc_log a_disc, b_disc;

    void establish(bench& b, endpoint& a, endpoint& p, double accept_at_ns = 0,
                   double complete_at_ns = 0) {
        listener = p.listen(ls, 5000);
        active = a.connector();
        ASSERT_EQ(a.connect(active, a.qp, b.params(1).ip, 5000, "hello", connect_done),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return ls.events == 1; }, 2e6));
        char buf[64] = {};
        ULONG len = sizeof(buf);
        ULONG ird = 0, ord = 0;
        ASSERT_EQ(ls.incoming->Dispatch->NdkGetConnectionData(ls.incoming, &ird, &ord, buf, &len),
                  STATUS_SUCCESS);
        EXPECT_EQ(len, 5u);
        EXPECT_EQ(std::string(buf, len), "hello");
        EXPECT_EQ(ird, 2u);  // the requester's outbound reads
        EXPECT_EQ(ord, 4u);  // the reads it accepts
        wait_until_time(accept_at_ns);
        const char world[] = "world!";
        ASSERT_EQ(
            ls.incoming->Dispatch->NdkAccept(ls.incoming, p.qp, 4, 4, const_cast<char*>(world), 6,
                                             disc_log::fn, &b_disc, request_log::fn, &accept_done),
            STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return connect_done.calls == 1; }, 2e6));
        ASSERT_EQ(connect_done.status, STATUS_SUCCESS);
        len = sizeof(buf);
        ASSERT_EQ(active->Dispatch->NdkGetConnectionData(active, &ird, &ord, buf, &len),
                  STATUS_SUCCESS);
        EXPECT_EQ(std::string(buf, len), "world!");
        EXPECT_EQ(ord, 2u);  // min(our ORD 2, peer IRD 4)
        EXPECT_EQ(ird, 4u);  // min(our IRD 4, peer ORD 4)
        wait_until_time(complete_at_ns);
        ASSERT_EQ(active->Dispatch->NdkCompleteConnect(active, disc_log::fn, &a_disc,
                                                       request_log::fn, &complete_done),
                  STATUS_PENDING);
        ASSERT_TRUE(
            wait_until([&] { return complete_done.calls == 1 && accept_done.calls == 1; }, 2e6));
        ASSERT_EQ(complete_done.status, STATUS_SUCCESS);
        ASSERT_EQ(accept_done.status, STATUS_SUCCESS);
    }
};

// A SEND from a to p completes on both sides.
void check_traffic(endpoint& a, endpoint& p) {
    p.post_receive();
    a.send_empty();
    NDK_RESULT ra{}, rp{};
    ASSERT_TRUE(wait_until([&] { return a.poll(ra); }, 1e6));
    ASSERT_TRUE(wait_until([&] { return p.poll(rp); }, 1e6));
    EXPECT_EQ(ra.Status, STATUS_SUCCESS);
    EXPECT_EQ(rp.Status, STATUS_SUCCESS);
    EXPECT_EQ(rp.QPContext, &p);
}

}  // namespace

TEST(NdkConnector, ConnectAcceptDisconnectOverTheWire) {
    bench b;
    run([&] {
        endpoint a, p;
        a.open(b.n0, b.params(0));
        p.open(b.n1, b.params(1));
        // QP0 and QP1 are reserved: the driver hands out QPNs from 2.
        EXPECT_GE(get_qp_number(a.qp), 2u);
        EXPECT_GE(get_qp_number(p.qp), 2u);
        connection c;
        c.establish(b, a, p);
        check_traffic(a, p);
        // REQ -> REP -> RTU on the wire, nothing else on QP1.
        EXPECT_EQ(b.mads(0), (std::vector<uint16_t>{hsi::CM_ATTR_REQ, hsi::CM_ATTR_RTU}));
        EXPECT_EQ(b.mads(1), (std::vector<uint16_t>{hsi::CM_ATTR_REP}));
        // Graceful disconnect: DREQ -> DREP, the peer hears once.
        request_log disc;
        ASSERT_EQ(c.active->Dispatch->NdkDisconnect(c.active, request_log::fn, &disc),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return disc.calls == 1; }, 1e6));
        EXPECT_EQ(disc.status, STATUS_SUCCESS);
        EXPECT_EQ(c.b_disc.calls, 1);
        EXPECT_EQ(c.a_disc.calls, 0);
        EXPECT_EQ(b.mads(0).back(), hsi::CM_ATTR_DREQ);
        EXPECT_EQ(b.mads(1).back(), hsi::CM_ATTR_DREP);
        EXPECT_EQ(get_cm_counters(a.adapter).retransmits, 0u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "mads_received"), 3u);  // REQ, RTU, DREQ
        EXPECT_EQ(b.stat("n0.nic.gsi", "mads_sent"), 3u);
        EXPECT_EQ(b.stat("n0.nic.recv_path", "parse_errors"), 0u);
        EXPECT_EQ(b.stat("n1.nic.recv_path", "parse_errors"), 0u);
    });
}

// Every field of the MADs that the connection relies on, read back from the captured bytes.
TEST(NdkConnector, MadsOnTheWireAreUdSendsToQp1) {
    bench b;
    run([&] {
        endpoint a, p;
        a.open(b.n0, b.params(0));
        p.open(b.n1, b.params(1));
        connection c;
        c.establish(b, a, p);
        const auto pa = b.params(0), pp = b.params(1);
        int seen = 0;
        for (const auto& f : b.frames) {
            if (!f.is_mad()) {
                continue;
            }
            ++seen;
            const uint8_t* d = f.data.data();
            ASSERT_EQ(f.data.size(), MAD_OFFSET + 256 + 4);
            // ICRC right; BTH: UD SEND-only to QP1; DETH: GSI Q_Key from QP1.
            uint32_t icrc = 0;
            std::memcpy(&icrc, d + f.data.size() - 4, 4);
            EXPECT_EQ(roce::compute_icrc(d, f.data.size() - 4), icrc);
            const uint8_t* bth = d + roce::BTH_OFFSET;
            EXPECT_EQ(be32(bth + 4) & 0xFFFFFF, 1u);
            EXPECT_EQ(be32(bth + 12), 0x80010000u);
            EXPECT_EQ(be32(bth + 16) & 0xFFFFFF, 1u);
            const uint8_t* mad = d + MAD_OFFSET;
            EXPECT_EQ(mad[0], 1);     // base version
            EXPECT_EQ(mad[1], 0x07);  // CM class
            EXPECT_EQ(mad[2], 2);
            // Source and destination IPs follow the direction.
            const uint32_t src = be32(d + 14 + 12), dst = be32(d + 14 + 16);
            EXPECT_EQ(src, f.side == 0 ? pa.ip : pp.ip);
            EXPECT_EQ(dst, f.side == 0 ? pp.ip : pa.ip);
            cm_message m;
            ASSERT_TRUE(decode_cm_mad(mad, m));
            if (m.type == cm_message::REQ) {
                EXPECT_EQ(m.qpn, get_qp_number(a.qp));
                EXPECT_EQ(m.dst_port, 5000);
                EXPECT_EQ(m.src_ip, pa.ip);
                EXPECT_EQ(m.dst_ip, pp.ip);
                EXPECT_EQ(m.ird, 4u);
                EXPECT_EQ(m.ord, 2u);
                EXPECT_EQ(std::string(m.private_data.begin(), m.private_data.end()), "hello");
                // Unicast to the MAC that ARP resolved.
                EXPECT_EQ(std::memcmp(d, pp.mac.data(), 6), 0);
                // IP CM header: IPv4, addresses as IPv4.
                EXPECT_EQ(mad[24 + 140 + 1] >> 4, 4);
            } else if (m.type == cm_message::REP) {
                EXPECT_EQ(m.qpn, get_qp_number(p.qp));
                EXPECT_EQ(std::string(m.private_data.begin(), m.private_data.end()), "world!");
                EXPECT_EQ(std::memcmp(d, pa.mac.data(), 6), 0);  // unicast now
            }
        }
        EXPECT_EQ(seen, 3);
        // Before them: one ARP request (broadcast) and the peer NIC's reply, padded to 60 B.
        ASSERT_GE(b.frames.size(), 2u);
        EXPECT_TRUE(b.frames[0].is_arp());
        EXPECT_EQ(b.frames[0].side, 0);
        EXPECT_TRUE(b.frames[1].is_arp());
        EXPECT_EQ(b.frames[1].side, 1);
        EXPECT_FALSE(b.frames[2].is_arp());
        EXPECT_EQ(b.frames[0].data.size(), 60u);
        EXPECT_EQ(b.frames[1].data.size(), 60u);
        const auto req = b.arps(0), rep = b.arps(1);
        ASSERT_EQ(req.size(), 1u);
        ASSERT_EQ(rep.size(), 1u);
        EXPECT_EQ(req[0].oper, arp_packet::REQUEST);
        EXPECT_EQ(req[0].eth_dst, BROADCAST_MAC);
        EXPECT_EQ(req[0].eth_src, pa.mac);
        EXPECT_EQ(req[0].sha, pa.mac);
        EXPECT_EQ(req[0].spa, pa.ip);
        EXPECT_EQ(req[0].tpa, pp.ip);
        EXPECT_EQ(rep[0].oper, arp_packet::REPLY);
        EXPECT_EQ(rep[0].eth_dst, pa.mac);
        EXPECT_EQ(rep[0].sha, pp.mac);
        EXPECT_EQ(rep[0].spa, pp.ip);
        EXPECT_EQ(rep[0].tha, pa.mac);
        EXPECT_EQ(rep[0].tpa, pa.ip);
        // The peer's NIC answered in hardware and still handed the request to its driver (which
        // learned the requester); the requester's driver learned the reply.
        EXPECT_EQ(b.stat("n1.nic.gsi", "arp_replies_sent"), 1u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "arp_received"), 1u);
        EXPECT_EQ(b.stat("n0.nic.gsi", "arp_received"), 1u);
        EXPECT_EQ(b.stat("n0.nic.gsi", "arp_sent"), 1u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "arp_sent"), 0u);  // p's driver never had to ask
        EXPECT_EQ(get_cm_counters(a.adapter).arp_sent, 1u);
        EXPECT_EQ(get_cm_counters(a.adapter).arp_received, 1u);
        EXPECT_EQ(get_cm_counters(p.adapter).arp_received, 1u);
        EXPECT_EQ(b.n0.host.neighbors().lookup(pp.ip), pp.mac);
        EXPECT_EQ(b.n1.host.neighbors().lookup(pa.ip), pa.mac);
        EXPECT_EQ(b.stat("n0.nic.recv_path", "parse_errors"), 0u);
        EXPECT_EQ(b.stat("n1.nic.recv_path", "parse_errors"), 0u);
    });
}

TEST(NdkConnector, RejectAndNoListenerAreRefused) {
    bench b;
    run([&] {
        endpoint a, p;
        a.open(b.n0, b.params(0));
        p.open(b.n1, b.params(1));
        // Nobody listens on 6000: the peer's CM answers REJ (invalid service ID).
        NDK_CONNECTOR* c1 = a.connector();
        request_log r1;
        ASSERT_EQ(a.connect(c1, a.qp, b.params(1).ip, 6000, nullptr, r1), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return r1.calls == 1; }, 1e6));
        EXPECT_EQ(r1.status, STATUS_CONNECTION_REFUSED);
        ASSERT_EQ(b.mads(1).size(), 1u);
        EXPECT_EQ(b.mads(1)[0], hsi::CM_ATTR_REJ);
        // The listener's consumer rejects, with private data.
        listen_state ls;
        NDK_LISTENER* l = p.listen(ls, 6000);
        NDK_CONNECTOR* c2 = a.connector();
        request_log r2;
        ASSERT_EQ(a.connect(c2, a.qp, b.params(1).ip, 6000, "please", r2), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return ls.events == 1; }, 1e6));
        const char no[] = "busy";
        EXPECT_EQ(ls.incoming->Dispatch->NdkReject(ls.incoming, const_cast<char*>(no), 4),
                  STATUS_SUCCESS);
        EXPECT_EQ(ls.incoming->Dispatch->NdkReject(ls.incoming, nullptr, 0),
                  STATUS_CONNECTION_ABORTED);
        ASSERT_TRUE(wait_until([&] { return r2.calls == 1; }, 1e6));
        EXPECT_EQ(r2.status, STATUS_CONNECTION_REFUSED);
        char buf[8] = {};
        ULONG len = sizeof(buf);
        EXPECT_EQ(c2->Dispatch->NdkGetConnectionData(c2, nullptr, nullptr, buf, &len),
                  STATUS_SUCCESS);
        EXPECT_EQ(std::string(buf, len), "busy");
        EXPECT_EQ(c2->Dispatch->NdkCompleteConnect(c2, nullptr, nullptr, request_log::fn, &r2),
                  STATUS_CONNECTION_INVALID);
        // The REJ reasons on the wire: invalid service ID (8), then consumer (28).
        std::vector<uint16_t> reasons;
        for (const auto& f : b.frames) {
            if (f.side == 1 && f.is_mad() && f.attribute() == hsi::CM_ATTR_REJ) {
                const uint8_t* r = f.data.data() + MAD_OFFSET + 24 + 10;
                reasons.push_back(static_cast<uint16_t>(r[0] << 8 | r[1]));
            }
        }
        EXPECT_EQ(reasons, (std::vector<uint16_t>{8, 28}));
        ls.incoming->Dispatch->NdkCloseConnector(&ls.incoming->Header, ignore_close, nullptr);
        l->Dispatch->NdkCloseListener(&l->Header, ignore_close, nullptr);
    });
}

TEST(NdkConnector, SilentPeerTimesOut) {
    bench b;
    run([&] {
        endpoint a, p;
        a.open(b.n0, b.params(0));
        p.open(b.n1, b.params(1));
        // 10.0.0.99 is nobody, but a static neighbour entry (netsh ... add neighbors) sends its
        // frames to node 1's MAC: the REQ goes out, is sent again CM_RETRIES times, then gives up.
        b.n0.host.neighbors().add_static(0x0A000063, b.params(1).mac);
        NDK_CONNECTOR* c = a.connector();
        request_log r;
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        ASSERT_EQ(a.connect(c, a.qp, 0x0A000063, 5000, nullptr, r), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return r.calls == 1; }, 10 * CM_TIMEOUT_NS * CM_RETRIES));
        EXPECT_EQ(r.status, STATUS_IO_TIMEOUT);
        EXPECT_GE(sc_core::sc_time_stamp() - t0,
                  sc_core::sc_time(CM_TIMEOUT_NS * (CM_RETRIES + 1), sc_core::SC_NS));
        sc_core::wait(sc_core::sc_time(10, sc_core::SC_US));  // the REJ reaches the wire
        const auto sent = b.mads(0);
        ASSERT_EQ(sent.size(), CM_RETRIES + 2u);  // REQ x (1 + retries), then REJ (timeout)
        for (size_t i = 0; i + 1 < sent.size(); ++i) {
            EXPECT_EQ(sent[i], hsi::CM_ATTR_REQ);
        }
        EXPECT_EQ(sent.back(), hsi::CM_ATTR_REJ);
        EXPECT_EQ(get_cm_counters(a.adapter).retransmits, CM_RETRIES);
        EXPECT_EQ(get_cm_counters(a.adapter).timeouts, 1u);
        // The peer's NIC saw MADs for another IP and dropped them.
        EXPECT_EQ(b.stat("n1.nic.gsi", "rx_not_for_us"), CM_RETRIES + 2u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "mads_received"), 0u);
        EXPECT_TRUE(b.arps(0).empty());  // the static entry answered
        // The QP is free again: it connects to the real peer.
        connection ok;
        ok.establish(b, a, p);
    });
}

// Nobody answers ARP for 10.0.0.99: the requests go out (broadcast) 1 + arp_retries times,
// arp_timeout_ns apart, no REQ leaves, and Connect completes with STATUS_HOST_UNREACHABLE.
// Outside the /24 without a gateway: STATUS_NETWORK_UNREACHABLE inline, nothing on the wire.
TEST(NdkConnector, UnknownHostAndNetworkAreUnreachable) {
    constexpr double ARP_NS = 30e3;
    bench b(json::object(), {{"arp_timeout_ns", ARP_NS}, {"arp_retries", 3}});
    run([&] {
        endpoint a, p;
        a.open(b.n0, b.params(0));
        p.open(b.n1, b.params(1));
        NDK_CONNECTOR* c = a.connector();
        request_log r;
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        ASSERT_EQ(a.connect(c, a.qp, 0x0A000063, 5000, nullptr, r), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return r.calls == 1; }, ARP_NS * 10));
        EXPECT_EQ(r.status, STATUS_HOST_UNREACHABLE);
        EXPECT_GE(sc_core::sc_time_stamp() - t0, sc_core::sc_time(ARP_NS * 4, sc_core::SC_NS));
        EXPECT_LT(sc_core::sc_time_stamp() - t0, sc_core::sc_time(ARP_NS * 5, sc_core::SC_NS));
        const auto asked = b.arps(0);
        ASSERT_EQ(asked.size(), 4u);
        for (const auto& q : asked) {
            EXPECT_EQ(q.oper, arp_packet::REQUEST);
            EXPECT_EQ(q.tpa, 0x0A000063u);
            EXPECT_EQ(q.eth_dst, BROADCAST_MAC);
        }
        for (size_t i = 1; i < b.frames.size(); ++i) {
            EXPECT_GE(b.frames[i].at - b.frames[i - 1].at,
                      sc_core::sc_time(ARP_NS, sc_core::SC_NS));
        }
        EXPECT_TRUE(b.mads(0).empty());
        EXPECT_EQ(b.stat("n1.nic.gsi", "arp_not_for_us"), 4u);  // node 1 heard, not its address
        EXPECT_EQ(b.stat("n1.nic.gsi", "arp_replies_sent"), 0u);
        EXPECT_EQ(get_cm_counters(a.adapter).timeouts, 0u);  // no CM exchange began
        request_log again;                                   // the connector connects once
        EXPECT_EQ(a.connect(c, a.qp, b.params(1).ip, 5000, nullptr, again),
                  STATUS_INVALID_DEVICE_STATE);
        // 192.168.1.1 is outside 10.0.0.0/24 and no gateway is configured.
        NDK_CONNECTOR* far = a.connector();
        const size_t frames = b.frames.size();
        EXPECT_EQ(a.connect(far, a.qp, 0xC0A80101, 5000, nullptr, again),
                  STATUS_NETWORK_UNREACHABLE);
        EXPECT_EQ(again.calls, 0);
        sc_core::wait(sc_core::sc_time(10, sc_core::SC_US));
        EXPECT_EQ(b.frames.size(), frames);
        // The QP is still free and the same connector (no side effects) reaches the peer.
        listen_state ls;
        p.listen(ls, 5000);
        request_log ok;
        ASSERT_EQ(a.connect(far, a.qp, b.params(1).ip, 5000, nullptr, ok), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return ls.events == 1; }, 1e6));
    });
}

// A peer outside the subnet is reached through the default gateway: ARP resolves the gateway
// (here node 1's address) and the REQ goes to its MAC with the far peer's IP; node 1's NIC is
// no router and drops it (not its IP), so the Connect ends in STATUS_IO_TIMEOUT.
TEST(NdkConnector, OffSubnetPeerGoesThroughTheGateway) {
    bench b(json::object(), {{"ipv4_gateway", "10.0.0.2"}, {"ipv4_prefix_length", 24}});
    run([&] {
        endpoint a, p;
        a.open(b.n0, b.params(0));
        p.open(b.n1, b.params(1));
        NDK_CONNECTOR* c = a.connector();
        request_log r;
        ASSERT_EQ(a.connect(c, a.qp, 0xC0A80105, 5000, nullptr, r), STATUS_PENDING);  // .1.5
        ASSERT_TRUE(wait_until([&] { return r.calls == 1; }, 10 * CM_TIMEOUT_NS * CM_RETRIES));
        EXPECT_EQ(r.status, STATUS_IO_TIMEOUT);
        sc_core::wait(sc_core::sc_time(10, sc_core::SC_US));  // the REJ reaches node 1
        const auto asked = b.arps(0);
        ASSERT_EQ(asked.size(), 1u);
        EXPECT_EQ(asked[0].tpa, b.params(1).ip);  // the gateway, not the peer
        int reqs = 0;
        for (const auto& f : b.frames) {
            if (f.side == 0 && f.is_mad() && f.attribute() == hsi::CM_ATTR_REQ) {
                ++reqs;
                EXPECT_EQ(std::memcmp(f.data.data(), b.params(1).mac.data(), 6), 0);
                EXPECT_EQ(be32(f.data.data() + 14 + 16), 0xC0A80105u);
            }
        }
        EXPECT_EQ(reqs, static_cast<int>(CM_RETRIES) + 1);
        EXPECT_EQ(b.stat("n1.nic.gsi", "rx_not_for_us"), CM_RETRIES + 2u);  // REQs + REJ
    });
}

// The link drops every frame in windows that cover the first REQ, the first REP and the first
// RTU: retransmissions (and the RTU answering a repeated REP) recover the connection.
TEST(NdkConnector, LostReqRepRtuRecoveredByRetransmission) {
    // REQ at ~1 us (lost; again at ~51 us); Accept at 100 us -> REP at ~105 us (lost; again at
    // ~155 us); CompleteConnect at 180 us -> RTU at ~185 us (lost); the REP repeated at ~205 us
    // is answered by a second RTU.
    bench b(json::parse(
        R"({"faults": {"link_down_ns": [[0, 20e3], [100e3, 120e3], [180e3, 200e3]]}})"));
    b.static_neighbors();  // the first frame on the wire is the REQ
    run([&] {
        endpoint a, p;
        a.open(b.n0, b.params(0));
        p.open(b.n1, b.params(1));
        connection c;
        c.establish(b, a, p, 100e3, 180e3);
        check_traffic(a, p);
        const auto ca = get_cm_counters(a.adapter);
        const auto cp = get_cm_counters(p.adapter);
        EXPECT_GE(ca.retransmits, 1u);  // REQ again
        EXPECT_GE(cp.retransmits, 1u);  // REP again (lost REP, then lost RTU)
        EXPECT_EQ(ca.timeouts + cp.timeouts, 0u);
        EXPECT_GT(b.link.get_stats(0).link_down_drops, 0u);
        EXPECT_GT(b.link.get_stats(1).link_down_drops, 0u);
        // The active side answered a repeated REP with a second RTU.
        const auto sent = b.mads(0);
        EXPECT_GE(std::count(sent.begin(), sent.end(), hsi::CM_ATTR_RTU), 2);
        EXPECT_EQ(c.ls.events, 1);  // the repeated REQ made no second connect event
    });
}

// The active consumer never calls CompleteConnect: Accept fails with STATUS_IO_TIMEOUT, and the
// late CompleteConnect finds the connection aborted. A consumer that takes long to Accept keeps
// the requester waiting through MRAs.
TEST(NdkConnector, AcceptTimesOutAndSlowAcceptSendsMra) {
    bench b;
    run([&] {
        endpoint a, p;
        a.open(b.n0, b.params(0));
        p.open(b.n1, b.params(1));
        listen_state ls;
        p.listen(ls, 5000);
        NDK_CONNECTOR* c = a.connector();
        request_log connected;
        ASSERT_EQ(a.connect(c, a.qp, b.params(1).ip, 5000, "x", connected), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return ls.events == 1; }, 1e6));
        // Accept only after three CM timeouts: the repeated REQs get MRAs, Connect still waits.
        sc_core::wait(sc_core::sc_time(3.5 * CM_TIMEOUT_NS, sc_core::SC_NS));
        EXPECT_EQ(connected.calls, 0);
        EXPECT_GE(get_cm_counters(p.adapter).mras_sent, 1u);
        request_log accepted;
        ASSERT_EQ(ls.incoming->Dispatch->NdkAccept(ls.incoming, p.qp, 1, 1, nullptr, 0, nullptr,
                                                   nullptr, request_log::fn, &accepted),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return connected.calls == 1; }, 1e6));
        EXPECT_EQ(connected.status, STATUS_SUCCESS);
        EXPECT_EQ(ls.events, 1);
        // No CompleteConnect: the REP is repeated, then Accept gives up.
        ASSERT_TRUE(
            wait_until([&] { return accepted.calls == 1; }, CM_TIMEOUT_NS * (CM_RETRIES + 2)));
        EXPECT_EQ(accepted.status, STATUS_IO_TIMEOUT);
        ASSERT_TRUE(wait_until([&] { return b.mads(1).back() == hsi::CM_ATTR_REJ; }, 1e5));
        sc_core::wait(sc_core::sc_time(10, sc_core::SC_US));  // the REJ reaches node 0
        request_log late;
        EXPECT_EQ(c->Dispatch->NdkCompleteConnect(c, nullptr, nullptr, request_log::fn, &late),
                  STATUS_CONNECTION_ABORTED);
    });
}

TEST(NdkConnector, DisconnectTimesOutWhenPeerIsGone) {
    // The cable is cut 1 ms in, after the connection is up.
    bench b(json::parse(R"({"faults": {"link_down_ns": [[1e6, 1e12]]}})"));
    run([&] {
        endpoint a, p;
        a.open(b.n0, b.params(0));
        p.open(b.n1, b.params(1));
        connection c;
        c.establish(b, a, p);
        wait_until_time(1e6);
        request_log disc;
        ASSERT_EQ(c.active->Dispatch->NdkDisconnect(c.active, request_log::fn, &disc),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return disc.calls == 1; }, CM_TIMEOUT_NS * (CM_RETRIES + 2)));
        EXPECT_EQ(disc.status, STATUS_IO_TIMEOUT);
        EXPECT_EQ(c.b_disc.calls, 0);
        EXPECT_EQ(b.mads(0).back(), hsi::CM_ATTR_DREQ);
        EXPECT_EQ(get_cm_counters(a.adapter).retransmits, CM_RETRIES);
    });
}

// Frames the GSI must drop, each counted by its reason; a good one still gets through.
TEST(NdkConnector, GsiDropsBadMadFramesWithCounters) {
    bench b;
    run([&] {
        endpoint p;
        p.open(b.n1, b.params(1));
        const auto pa = b.params(0), pp = b.params(1);
        hsi::gsi_send_header h{};
        std::memcpy(h.dst_mac, pp.mac.data(), 6);
        std::memcpy(h.src_mac, pa.mac.data(), 6);
        h.dst_ip = pp.ip;
        h.src_ip = pa.ip;
        h.dest_qp = hsi::GSI_QPN;
        h.qkey = hsi::GSI_QKEY;
        h.udp_src_port = 0xC001;
        h.pkey = 0xFFFF;
        cm_message drep;
        drep.type = cm_message::DREP;
        drep.src_conn = 7;
        drep.dst_conn = 9;
        const auto good = encode_cm_mad(drep, 1);
        auto send = [&](std::vector<uint8_t> f) {
            fabric::eth_frame e;
            e.data = std::move(f);
            b.link.tx(0).put(std::move(e));
        };
        auto bad_class = good;
        bad_class[1] = 0x03;  // subnet administration: not a CM MAD
        send(hw::gsi::build_frame(h, bad_class.data(), 0, 0));
        auto wrong_qkey = h;
        wrong_qkey.qkey = 0x1234;
        send(hw::gsi::build_frame(wrong_qkey, good.data(), 1, 1));
        auto other_qp = h;
        other_qp.dest_qp = 5;
        send(hw::gsi::build_frame(other_qp, good.data(), 2, 2));
        auto corrupt = hw::gsi::build_frame(h, good.data(), 3, 3);
        corrupt[MAD_OFFSET + 40] ^= 1;
        send(corrupt);
        auto other_ip = h;
        other_ip.dst_ip = pp.ip + 7;
        send(hw::gsi::build_frame(other_ip, good.data(), 4, 4));
        auto short_frame = hw::gsi::build_frame(h, good.data(), 5, 5);
        short_frame.resize(short_frame.size() - 8);
        send(short_frame);
        send(hw::gsi::build_frame(h, good.data(), 6, 6));
        sc_core::wait(sc_core::sc_time(20, sc_core::SC_US));
        EXPECT_EQ(b.stat("n1.nic.gsi", "rx_bad_mad"), 1u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "rx_bad_qkey"), 1u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "rx_not_qp1"), 1u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "rx_bad_icrc"), 1u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "rx_not_for_us"), 1u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "rx_malformed"), 1u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "mads_received"), 1u);
        // The driver took the good one (a DREP for no connection: ignored, counted).
        EXPECT_EQ(get_cm_counters(p.adapter).mads_received, 1u);
        EXPECT_EQ(get_cm_counters(p.adapter).mads_ignored, 1u);
        EXPECT_EQ(b.stat("n1.nic.recv_path", "unknown_qp"), 0u);
    });
}

// ARP frames at the GSI: a request for the port's address is answered by the hardware (the
// driver, which never sends replies, learns the requester); malformed ARP and ARP for other
// addresses are dropped and counted.
TEST(NdkConnector, GsiAnswersArpForItsAddressAndDropsTheRest) {
    bench b;
    run([&] {
        endpoint p;
        p.open(b.n1, b.params(1));
        const auto pp = b.params(1);
        const mac_address stranger = {0x02, 0xAA, 0, 0, 0, 0x07};
        auto send = [&](const arp_packet& a, uint16_t ptype = 0x0800) {
            fabric::eth_frame e;
            e.data = encode_arp(a);
            e.data[16] = static_cast<uint8_t>(ptype >> 8);
            e.data[17] = static_cast<uint8_t>(ptype);
            b.link.tx(0).put(std::move(e));
        };
        arp_packet who;
        who.eth_dst = BROADCAST_MAC;
        who.eth_src = stranger;
        who.sha = stranger;
        who.spa = 0x0A000009;
        who.tpa = pp.ip;
        send(who, 0x86DD);  // IPv6 as the protocol type: not ARP for IPv4
        arp_packet other = who;
        other.tpa = pp.ip + 1;
        send(other);  // for another address
        arp_packet stray;
        stray.eth_dst = stranger;  // a reply between two other hosts
        stray.eth_src = {0x02, 0xBB, 0, 0, 0, 1};
        stray.oper = arp_packet::REPLY;
        stray.sha = stray.eth_src;
        stray.spa = 0x0A000010;
        stray.tha = stranger;
        stray.tpa = 0x0A000009;
        send(stray);
        send(who);  // the good one
        sc_core::wait(sc_core::sc_time(20, sc_core::SC_US));
        EXPECT_EQ(b.stat("n1.nic.gsi", "arp_malformed"), 1u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "arp_not_for_us"), 2u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "arp_replies_sent"), 1u);
        EXPECT_EQ(b.stat("n1.nic.gsi", "arp_received"), 1u);
        EXPECT_EQ(b.stat("n1.nic.recv_path", "parse_errors"), 0u);
        const auto replies = b.arps(1);
        ASSERT_EQ(replies.size(), 1u);
        EXPECT_EQ(replies[0].oper, arp_packet::REPLY);
        EXPECT_EQ(replies[0].eth_dst, stranger);
        EXPECT_EQ(replies[0].eth_src, pp.mac);
        EXPECT_EQ(replies[0].sha, pp.mac);
        EXPECT_EQ(replies[0].spa, pp.ip);
        EXPECT_EQ(replies[0].tha, stranger);
        EXPECT_EQ(replies[0].tpa, 0x0A000009u);
        EXPECT_EQ(get_cm_counters(p.adapter).arp_received, 1u);
        EXPECT_EQ(get_cm_counters(p.adapter).arp_sent, 0u);
        EXPECT_EQ(b.n1.host.neighbors().lookup(0x0A000009), stranger);  // learned (RFC 826)
        EXPECT_FALSE(b.n1.host.neighbors().lookup(0x0A000010).has_value());
    });
}

// The capture as a pcap that tshark decodes as InfiniBand CM without malformed packets.
TEST(NdkConnector, TsharkDecodesTheCmExchange) {
    if (std::system("command -v tshark >/dev/null 2>&1") != 0) {
        GTEST_SKIP() << "tshark not installed";
    }
    bench b;
    run([&] {
        endpoint a, p;
        a.open(b.n0, b.params(0));
        p.open(b.n1, b.params(1));
        connection c;
        c.establish(b, a, p);
        request_log disc;
        ASSERT_EQ(c.active->Dispatch->NdkDisconnect(c.active, request_log::fn, &disc),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return disc.calls == 1; }, 1e6));
    });
    const std::string path = ::testing::TempDir() + "ndk_connector_cm.pcap";
    {
        output::pcap_writer w(path);
        for (const auto& f : b.frames) {
            w.write(static_cast<uint64_t>(f.at.to_seconds() * 1e9), f.data.data(), f.data.size());
        }
    }
    const std::string cmd = "tshark -r " + path + " -V 2>&1";
    FILE* pipe = popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof(buf), pipe)) {
        out.append(buf, n);
    }
    pclose(pipe);
    EXPECT_EQ(out.find("Malformed"), std::string::npos) << out.substr(0, 4000);
    for (const char* s :
         {"ConnectRequest", "ConnectReply", "ReadyToUse", "DisconnectRequest", "DisconnectReply",
          "Address Resolution Protocol (request)", "Address Resolution Protocol (reply)",
          "Target IP address: 10.0.0.2", "Sender MAC address: 02:00:00:00:00:02"}) {
        EXPECT_NE(out.find(s), std::string::npos) << s;
    }
}

}  // namespace rnic::ndk::connector_test
