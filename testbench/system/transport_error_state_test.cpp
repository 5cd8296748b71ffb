// SPDX-License-Identifier: Apache-2.0
// QP state hygiene of the reliable transport (issue "Reliable transport and hostile inputs",
// leftovers): work requests posted to a QP already in ERROR complete with a flush error on both
// queues (IBA 10.3.1), and a QP number re-used after destroy + create starts with clean transport
// state (no stale PSNs, outstanding requests, READ tracking, retransmission timers).
//
// Two real nodes (host, PCIe, NIC) and a link, consumer code written directly against NDK
// (transport_bench.h). One elaboration per process: ctest runs each TEST as its own process.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/system/transport_bench.h"

namespace rnic::transport_test {
namespace {

constexpr size_t PAGE = 4096;
constexpr uint8_t SRC = 0xC3;
constexpr uint8_t SRC2 = 0x5E;
constexpr uint8_t FILL = 0x11;

struct pair_setup {
    consumer c0;
    consumer c1;
    NDK_QP* q0 = nullptr;
    NDK_QP* q1 = nullptr;
    explicit pair_setup(two_node_bench& b)
        : c0(b, 0)
        , c1(b, 1) {}
    void open(uint8_t timeout_log = 10) {
        auto p0 = c0.params();
        p0.timeout_log = timeout_log;
        auto p1 = c1.params();
        p1.timeout_log = timeout_log;
        c0.open(p0);
        c1.open(p1);
        q0 = c0.create_qp(100);
        q1 = c1.create_qp(101);
        ASSERT_NE(q0, nullptr);
        ASSERT_NE(q1, nullptr);
        consumer::connect_pair(c0, q0, c1, q1);
    }
};

uintptr_t ctx_of(const NDK_RESULT_EX& r) {
    return reinterpret_cast<uintptr_t>(r.RequestContext);
}
PVOID ctx(uintptr_t v) {
    return reinterpret_cast<PVOID>(v);
}
uint32_t st(NTSTATUS s) {
    return static_cast<uint32_t>(s);
}
bool is_request(uint8_t op) {
    return op <= roce::RC_WRITE_ONLY_IMM || op == roce::RC_READ_REQUEST ||
           op == roce::RC_SEND_LAST_INV || op == roce::RC_SEND_ONLY_INV;
}

void close_qp(NDK_QP* qp) {
    async_call c;
    c.wait(qp->Dispatch->NdkCloseQp(&qp->Header, async_call::on_close, &c));
}

// --- work requests posted to a QP in ERROR ---------------------------------------------------

// Receives posted after the QP entered ERROR complete with STATUS_CANCELLED (the RQ doorbell of
// an ERROR QP makes the receive path fetch and flush them), after the ones posted before.
TEST(TransportErrorState, ReceivesPostedAfterErrorAreFlushed) {
    two_node_bench b(json::object());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> before, after, late;
    buffer rb;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        rb = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        for (uintptr_t i = 1; i <= 2; ++i) {
            NDK_SGE r = sge_of(rb, (i - 1) * 1024, 1024);
            ASSERT_EQ(s.q1->Dispatch->NdkReceive(s.q1, ctx(i), &r, 1), STATUS_SUCCESS);
        }
        wait_ns(5000);
        s.q1->Dispatch->NdkFlush(s.q1);
        before = s.c1.reap(2, 1e6);
        // The QP is in ERROR now: these must not sit in the receive queue forever.
        for (uintptr_t i = 3; i <= 5; ++i) {
            NDK_SGE r = sge_of(rb, (i - 3) * 1024, 1024);
            ASSERT_EQ(s.q1->Dispatch->NdkReceive(s.q1, ctx(i), &r, 1), STATUS_SUCCESS);
            wait_ns(i == 3 ? 0 : 3000);  // one alone, then two more while it flushes
        }
        after = s.c1.reap(3, 1e6);
        wait_ns(100000);
        late = s.c1.poll();
    }));
    ASSERT_EQ(before.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(ctx_of(before[i]), i + 1);
        EXPECT_EQ(st(before[i].Status), st(STATUS_CANCELLED));
    }
    ASSERT_EQ(after.size(), 3u) << "receives posted to a QP in ERROR were never flushed";
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(after[i].Type, NdkOperationTypeReceive);
        EXPECT_EQ(ctx_of(after[i]), i + 3);
        EXPECT_EQ(st(after[i].Status), st(STATUS_CANCELLED));
    }
    EXPECT_TRUE(late.empty()) << "a receive completed twice";
    EXPECT_EQ(b.stat("node1.nic.recv_path", "flushed_receives"), 5u);
    EXPECT_EQ(b.stat("node1.nic.doorbell", "rq_flush_requests"), 3u);
    EXPECT_EQ(count_not(rb.data, rb.bytes, FILL), 0u) << "a flushed receive took data";
}

// WRITE, SEND and READ posted after the QP entered ERROR (by the hardware: the responder NAKed
// a bad rkey, so the driver still posts) complete with STATUS_CANCELLED, in order, and nothing
// of them goes on the wire.
TEST(TransportErrorState, SendsPostedAfterErrorAreFlushed) {
    two_node_bench b(json::object());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> failed, got, late;
    buffer src, target;
    size_t requests_before = 0;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, SRC);
        target = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
        NDK_SGE bad = sge_of(src, 0, 256);
        ASSERT_EQ(
            s.q0->Dispatch->NdkWrite(s.q0, ctx(1), &bad, 1, target.va(), target.token ^ 0x100, 0),
            STATUS_SUCCESS);
        failed = s.c0.reap(1, 1e6);
        ASSERT_EQ(failed.size(), 1u);
        wait_ns(5000);
        ASSERT_EQ(s.c0.nic().contexts().qp(ndk::get_qp_number(s.q0))->state, hsi::QPS_ERROR);
        for (const auto& f : b.frames) {
            requests_before += f.side == 0 && f.parsed && is_request(f.opcode) ? 1 : 0;
        }
        NDK_SGE sg = sge_of(src, 0, 512);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(2), &sg, 1, target.va(), target.token, 0),
                  STATUS_SUCCESS);
        ASSERT_EQ(s.q0->Dispatch->NdkSend(s.q0, ctx(3), &sg, 1, 0), STATUS_SUCCESS);
        NDK_SGE rd = sge_of(src, 1024, 512);
        ASSERT_EQ(s.q0->Dispatch->NdkRead(s.q0, ctx(4), &rd, 1, target.va(), target.token, 0),
                  STATUS_SUCCESS);
        got = s.c0.reap(3, 1e6);
        wait_ns(100000);
        late = s.c0.poll();
    }));
    EXPECT_EQ(st(failed[0].Status), st(STATUS_ACCESS_VIOLATION));
    ASSERT_EQ(got.size(), 3u) << "requests posted to a QP in ERROR never completed";
    const NDK_OPERATION_TYPE types[] = {NdkOperationTypeWrite, NdkOperationTypeSend,
                                        NdkOperationTypeRead};
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(ctx_of(got[i]), i + 2);
        EXPECT_EQ(got[i].Type, types[i]);
        EXPECT_EQ(st(got[i].Status), st(STATUS_CANCELLED));
    }
    EXPECT_TRUE(late.empty()) << "a request completed twice";
    size_t requests_after = 0;
    for (const auto& f : b.frames) {
        requests_after += f.side == 0 && f.parsed && is_request(f.opcode) ? 1 : 0;
    }
    EXPECT_EQ(requests_after, requests_before) << "a flushed request went on the wire";
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "flushed"), 3u);
    EXPECT_EQ(count_not(target.data, target.bytes, FILL), 0u);
}

// --- QPN re-use after destroy + create -------------------------------------------------------

// rnic.limits.max_qps 3: the driver has exactly one QPN (2; 1 is the GSI QP), so a QP created
// after a destroy gets the same number. The first QP pair is destroyed (from RTS) with a WRITE,
// a READ and another WRITE outstanding (the link is down, nothing is acknowledged, the
// retransmission timer is armed). The pair re-created under the same QPNs is connected with
// new PSNs and must work: every request completes once, the data is right, no request of the
// old incarnation is ever retransmitted and no old completion shows up.
constexpr double DOWN_FROM_NS = 5e6;
constexpr double DOWN_TO_NS = 6e6;
constexpr double TIMEOUT_NS = 4096.0 * 1024;  // timeout_log 10

TEST(TransportErrorState, QpnReusedAfterDestroyStartsClean) {
    json doc = scenario_doc(json::object(), {{"link_down_ns", {{DOWN_FROM_NS, DOWN_TO_NS}}}},
                            {{"rnic", {{"limits", {{"max_qps", 3}}}}}});
    two_node_bench b(doc);
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> old0, got0, got1, late0;
    buffer src, sink, target, source, rb;
    uint32_t qpn0 = 0, qpn1 = 0, qpn0b = 0, qpn1b = 0;
    uint32_t old_psn = 0, new_psn = 0;
    uint64_t retransmits_before_reuse = 0, timeouts_before_reuse = 0;
    ASSERT_TRUE(b.run(
        [&] {
            ASSERT_NO_FATAL_FAILURE(s.open());
            qpn0 = ndk::get_qp_number(s.q0);
            qpn1 = ndk::get_qp_number(s.q1);
            src = s.c0.make_buffer(4 * PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, SRC);
            sink = s.c0.make_buffer(4 * PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
            target = s.c1.make_buffer(4 * PAGE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
            source = s.c1.make_buffer(4 * PAGE, NDK_MR_FLAG_ALLOW_REMOTE_READ, nullptr, SRC2);
            rb = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
            ASSERT_LT(sc_core::sc_time_stamp().to_seconds() * 1e9, DOWN_FROM_NS)
                << "setup ran into the link-down window";
            wait_ns(DOWN_FROM_NS + 1000 - sc_core::sc_time_stamp().to_seconds() * 1e9);
            // Old incarnation: three requests the link swallows.
            NDK_SGE w = sge_of(src, 0, 2 * PAGE);
            ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(1), &w, 1, target.va(), target.token, 0),
                      STATUS_SUCCESS);
            NDK_SGE r = sge_of(sink, 0, 2 * PAGE);
            ASSERT_EQ(s.q0->Dispatch->NdkRead(s.q0, ctx(2), &r, 1, source.va(), source.token, 0),
                      STATUS_SUCCESS);
            ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(3), &w, 1, target.va(), target.token, 0),
                      STATUS_SUCCESS);
            wait_ns(20000);
            old_psn = s.c0.nic().contexts().qp(qpn0)->next_psn;
            // Destroyed from RTS, requests outstanding (IBA: removed without completions).
            close_qp(s.q0);
            close_qp(s.q1);
            old0 = s.c0.poll();
            wait_ns(DOWN_TO_NS + 1000 - sc_core::sc_time_stamp().to_seconds() * 1e9);
            retransmits_before_reuse = b.stat("node0.nic.tx_engine", "retransmits");
            timeouts_before_reuse = b.stat("node0.nic.tx_engine", "timeouts");
            // New incarnation under the same QPNs, new connection, new PSNs.
            NDK_QP* q0b = s.c0.create_qp(200);
            NDK_QP* q1b = s.c1.create_qp(201);
            ASSERT_NE(q0b, nullptr);
            ASSERT_NE(q1b, nullptr);
            qpn0b = ndk::get_qp_number(q0b);
            qpn1b = ndk::get_qp_number(q1b);
            ASSERT_EQ(qpn0b, qpn0);
            ASSERT_EQ(qpn1b, qpn1);
            ASSERT_NO_FATAL_FAILURE(consumer::connect_pair(s.c0, q0b, s.c1, q1b, 7001));
            new_psn = s.c0.nic().contexts().qp(qpn0b)->next_psn;
            std::memset(target.data, FILL, target.bytes);
            std::memset(sink.data, FILL, sink.bytes);
            NDK_SGE rv = sge_of(rb, 0, PAGE);
            ASSERT_EQ(q1b->Dispatch->NdkReceive(q1b, ctx(21), &rv, 1), STATUS_SUCCESS);
            ASSERT_EQ(q0b->Dispatch->NdkWrite(q0b, ctx(11), &w, 1, target.va(), target.token, 0),
                      STATUS_SUCCESS);
            ASSERT_EQ(q0b->Dispatch->NdkRead(q0b, ctx(12), &r, 1, source.va(), source.token, 0),
                      STATUS_SUCCESS);
            NDK_SGE sd = sge_of(src, 0, PAGE);
            ASSERT_EQ(q0b->Dispatch->NdkSend(q0b, ctx(13), &sd, 1, 0), STATUS_SUCCESS);
            got0 = s.c0.reap(3, 2e6);
            got1 = s.c1.reap(1, 1e6);
            // Past the old incarnation's retransmission deadline (twice over).
            wait_ns(DOWN_FROM_NS + 2 * TIMEOUT_NS - sc_core::sc_time_stamp().to_seconds() * 1e9);
            late0 = s.c0.poll();
        },
        100));
    EXPECT_TRUE(old0.empty()) << "a request of the destroyed QP completed";
    EXPECT_NE(new_psn, old_psn);
    ASSERT_EQ(got0.size(), 3u) << "the re-created QP did not complete its requests";
    const NDK_OPERATION_TYPE types[] = {NdkOperationTypeWrite, NdkOperationTypeRead,
                                        NdkOperationTypeSend};
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(ctx_of(got0[i]), 11 + i);
        EXPECT_EQ(got0[i].Type, types[i]);
        EXPECT_EQ(st(got0[i].Status), st(STATUS_SUCCESS)) << status_name(got0[i].Status);
    }
    ASSERT_EQ(got1.size(), 1u);
    EXPECT_EQ(ctx_of(got1[0]), 21u);
    EXPECT_EQ(st(got1[0].Status), st(STATUS_SUCCESS));
    EXPECT_EQ(got1[0].BytesTransferred, PAGE);
    EXPECT_TRUE(late0.empty()) << "a stale completion arrived after the old timer's deadline";
    EXPECT_EQ(count_not(target.data, 2 * PAGE, SRC), 0u);
    EXPECT_EQ(count_not(target.data + 2 * PAGE, 2 * PAGE, FILL), 0u);
    EXPECT_EQ(count_not(sink.data, 2 * PAGE, SRC2), 0u);
    EXPECT_EQ(count_not(sink.data + 2 * PAGE, 2 * PAGE, FILL), 0u);
    EXPECT_EQ(count_not(rb.data, PAGE, SRC), 0u);
    // The requester state started over: no retransmission or timeout after the re-use (the old
    // requests would be resent with the old PSNs when their timer expired).
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "retransmits"), retransmits_before_reuse);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "timeouts"), timeouts_before_reuse);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "retransmits"), 0u);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "reset_discarded"), 3u);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "error_completions"), 0u);
    EXPECT_EQ(b.stat("node1.nic.recv_path", "out_of_sequence"), 0u);
    // On the wire after the link came back: node 0's requests to the QP carry only the new
    // incarnation's PSNs: the WRITE's packets, one READ request (as many PSNs as responses),
    // the SEND's packets, from new_psn on.
    const uint32_t mtu = b.cfg.topology.nodes[0].mtu;
    const uint32_t pk2 = (2 * PAGE + mtu - 1) / mtu;
    const uint32_t pk1 = (PAGE + mtu - 1) / mtu;
    size_t requests = 0;
    for (const auto& f : b.frames) {
        if (f.side != 0 || !f.parsed || !is_request(f.opcode) || f.dest_qp != qpn1 ||
            f.at.to_seconds() * 1e9 < DOWN_TO_NS) {
            continue;
        }
        ++requests;
        EXPECT_LT((f.psn - new_psn) & 0xFFFFFF, 2 * pk2 + pk1)
            << "stale PSN " << f.psn << " on the wire";
    }
    EXPECT_EQ(requests, pk2 + 1 + pk1);
}

// Responder state: node 1 holds the ACK of a WRITE (ACK coalescing: every 4th message or after
// 1 ms) when both QPs are destroyed. The QPs re-created under the same numbers must not get
// that ACK: node 1 sends no ACK at all until the new incarnation's first request arrives.
TEST(TransportErrorState, HeldAckDoesNotOutliveItsQp) {
    json doc = scenario_doc(json::object(), json::object(),
                            {{"rnic",
                              {{"limits", {{"max_qps", 3}}},
                               {"recv_path", {{"ack_coalesce", 4}, {"ack_delay_ns", 1e6}}}}}});
    two_node_bench b(doc);
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0;
    buffer src, target;
    uint32_t qpn0 = 0;
    sc_core::sc_time destroyed, reused;
    ASSERT_TRUE(b.run(
        [&] {
            ASSERT_NO_FATAL_FAILURE(s.open());
            qpn0 = ndk::get_qp_number(s.q0);
            src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, SRC);
            target = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
            NDK_SGE w = sge_of(src, 0, 512);
            ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(1), &w, 1, target.va(), target.token, 0),
                      STATUS_SUCCESS);
            ASSERT_TRUE(wait_until([&] { return target.data[0] == SRC; }));
            wait_ns(2000);
            close_qp(s.q0);
            close_qp(s.q1);
            destroyed = sc_core::sc_time_stamp();
            NDK_QP* q0b = s.c0.create_qp(200);
            NDK_QP* q1b = s.c1.create_qp(201);
            ASSERT_NE(q0b, nullptr);
            ASSERT_NE(q1b, nullptr);
            ASSERT_EQ(ndk::get_qp_number(q0b), qpn0);
            ASSERT_NO_FATAL_FAILURE(consumer::connect_pair(s.c0, q0b, s.c1, q1b, 7001));
            // Past the old held ACK's deadline before the new QP sends anything.
            wait_ns(1.5e6);
            reused = sc_core::sc_time_stamp();
            for (uintptr_t i = 11; i <= 14; ++i) {  // four: the coalesced ACK goes at once
                ASSERT_EQ(q0b->Dispatch->NdkWrite(q0b, ctx(i), &w, 1, target.va(), target.token, 0),
                          STATUS_SUCCESS);
            }
            got0 = s.c0.reap(4, 1e6);
        },
        100));
    ASSERT_GT(reused, destroyed);
    size_t stale_acks = 0;
    for (const auto& f : b.sent(1, roce::RC_ACK)) {
        if (f.dest_qp == qpn0 && f.at > destroyed && f.at < reused) {
            ++stale_acks;
        }
    }
    EXPECT_EQ(stale_acks, 0u) << "the destroyed QP's held ACK went to its successor";
    ASSERT_EQ(got0.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(ctx_of(got0[i]), 11 + i);
        EXPECT_EQ(st(got0[i].Status), st(STATUS_SUCCESS)) << status_name(got0[i].Status);
    }
}

}  // namespace
}  // namespace rnic::transport_test
