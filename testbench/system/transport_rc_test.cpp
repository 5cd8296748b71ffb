// SPDX-License-Identifier: Apache-2.0
// RC transport mechanisms one at a time (issue "Reliable transport and hostile inputs", part 1),
// on two real nodes driven by NDK consumer code (transport_bench.h), with the frames captured as
// they leave each MAC: retransmission timer and retry exhaustion (error completion, QP error,
// the rest flushed), RNR NAK back-off and RNR retry exhaustion, ACK coalescing by count and by
// delay, and Flush completing everything outstanding on both queues. Every posted request must
// complete exactly once.
//
// One elaboration per process: ctest runs each TEST as its own process.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/system/transport_bench.h"

namespace rnic::transport_test {
namespace {

constexpr size_t PAGE = 4096;
constexpr uint8_t SRC = 0xC3;
constexpr uint8_t FILL = 0x11;

// Local ACK timeout of these tests: 4.096 us x 2^6 = 262 us.
constexpr uint8_t TIMEOUT_LOG = 6;
const double TIMEOUT_NS = 4096.0 * 64;

// The connection is set up over the wire (ARP, CM MADs), then the link goes down at
// LINK_DOWN_NS for the rest of the test: pair_setup::open waits for it.
constexpr double LINK_DOWN_NS = 1e6;
json link_down_doc() {
    return scenario_doc(json::object(), {{"link_down_ns", {{LINK_DOWN_NS, 1e12}}}});
}

struct pair_setup {
    consumer c0;
    consumer c1;
    NDK_QP* q0 = nullptr;
    NDK_QP* q1 = nullptr;
    // A test whose link goes down later (link_down_doc) starts after that.
    double quiet_from_ns = 0;
    explicit pair_setup(two_node_bench& b)
        : c0(b, 0)
        , c1(b, 1) {
        const auto& down = b.cfg.topology.link.faults.link_down_ns;
        if (!down.empty()) {
            quiet_from_ns = down.front().first;
        }
    }
    void open(uint8_t retry_count = 7, uint8_t rnr_retry = 7, uint8_t timeout_log = TIMEOUT_LOG) {
        auto p0 = c0.params();
        p0.retry_count = retry_count;
        p0.rnr_retry = rnr_retry;
        p0.timeout_log = timeout_log;
        auto p1 = c1.params();
        p1.retry_count = retry_count;
        p1.rnr_retry = rnr_retry;
        p1.timeout_log = timeout_log;
        c0.open(p0);
        c1.open(p1);
        q0 = c0.create_qp(100);
        q1 = c1.create_qp(101);
        ASSERT_NE(q0, nullptr);
        ASSERT_NE(q1, nullptr);
        consumer::connect_pair(c0, q0, c1, q1);
        if (quiet_from_ns > 0) {
            const sc_core::sc_time down(quiet_from_ns, sc_core::SC_NS);
            ASSERT_LT(sc_core::sc_time_stamp(), down) << "connected after the link went down";
            sc_core::wait(down - sc_core::sc_time_stamp());
        }
    }
};

uintptr_t ctx_of(const NDK_RESULT_EX& r) {
    return reinterpret_cast<uintptr_t>(r.RequestContext);
}
PVOID ctx(uintptr_t v) {
    return reinterpret_cast<PVOID>(v);
}
uint32_t st(const NDK_RESULT_EX& r) {
    return static_cast<uint32_t>(r.Status);
}
uint32_t st(NTSTATUS s) {
    return static_cast<uint32_t>(s);
}

// --- retransmission timer and retry exhaustion -----------------------------------------------

// Nothing gets through: the oldest request is sent once and retried retry_count times, one
// local ACK timeout apart; then it completes with "retry exceeded" (STATUS_IO_TIMEOUT), the QP
// goes to error and the requests behind it are flushed (STATUS_CANCELLED), each once.
void retry_exhaustion(uint8_t retry_count) {
    two_node_bench b(link_down_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got, late;
    sc_core::sc_time posted, failed;
    buffer src;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open(retry_count));
        src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        posted = sc_core::sc_time_stamp();
        for (uintptr_t i = 1; i <= 4; ++i) {
            NDK_SGE sg = sge_of(src, 0, 512);
            ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(i), &sg, 1, 0x10000, 0x100, 0),
                      STATUS_SUCCESS);
        }
        got = s.c0.reap(1, 20 * TIMEOUT_NS);
        failed = sc_core::sc_time_stamp();
        for (const auto& r : s.c0.reap(3, 1e6)) {
            got.push_back(r);
        }
        wait_ns(10 * TIMEOUT_NS);
        late = s.c0.poll();
    }));
    ASSERT_EQ(got.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(ctx_of(got[i]), i + 1);
        EXPECT_EQ(got[i].Type, NdkOperationTypeWrite);
        EXPECT_EQ(st(got[i]), st(i == 0 ? STATUS_IO_TIMEOUT : STATUS_CANCELLED)) << i;
    }
    EXPECT_TRUE(late.empty()) << "a request completed twice";
    // (retry_count + 1) timeouts, the error on the last one (the first reap polls every 200 ns).
    const double waited = (failed - posted).to_seconds() * 1e9;
    EXPECT_GE(waited, (retry_count + 1) * TIMEOUT_NS);
    EXPECT_LT(waited, (retry_count + 1) * TIMEOUT_NS + 50000);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "timeouts"), retry_count + 1u);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "retry_exceeded"), 1u);
    // Go-back-N resends all four each time.
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "retransmits"), 4u * retry_count);
    EXPECT_EQ(b.sent(0, roce::RC_WRITE_ONLY).size(), 4u * (retry_count + 1));
    EXPECT_EQ(b.stat("link.dir0", "faults_link_down"), 4u * (retry_count + 1));
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "error_completions"), 4u);
    EXPECT_EQ(s.c0.nic().contexts().qp(ndk::get_qp_number(s.q0))->state, hsi::QPS_ERROR);
}
TEST(TransportRc, RetryExhaustionAfterSevenRetries) {
    retry_exhaustion(7);
}
TEST(TransportRc, RetryExhaustionAfterTwoRetries) {
    retry_exhaustion(2);
}
TEST(TransportRc, RetryCountZeroFailsOnFirstTimeout) {
    retry_exhaustion(0);
}

// A request posted after the QP failed is flushed, once.
TEST(TransportRc, PostAfterRetryExhaustionIsFlushed) {
    two_node_bench b(link_down_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> first, second;
    NTSTATUS post2 = STATUS_PENDING;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open(1));
        buffer src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        NDK_SGE sg = sge_of(src, 0, 256);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(1), &sg, 1, 0x10000, 0x100, 0),
                  STATUS_SUCCESS);
        first = s.c0.reap(1, 10 * TIMEOUT_NS);
        post2 = s.q0->Dispatch->NdkWrite(s.q0, ctx(2), &sg, 1, 0x10000, 0x100, 0);
        second = s.c0.reap(2, 1e6);
    }));
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(st(first[0]), st(STATUS_IO_TIMEOUT));
    if (post2 == STATUS_SUCCESS) {
        ASSERT_EQ(second.size(), 1u);
        EXPECT_EQ(ctx_of(second[0]), 2u);
        EXPECT_EQ(st(second[0]), st(STATUS_CANCELLED));
    } else {
        EXPECT_TRUE(second.empty());  // failed inline: no completion may follow
    }
    EXPECT_EQ(b.sent(0, roce::RC_WRITE_ONLY).size(), 2u);  // the first, and its one retry
}

// When a QP fails, its posted receives are flushed too (IBA 10.3.1: every outstanding WR of
// both queues completes with a flush error).
TEST(TransportRc, RetryExhaustionFlushesPostedReceives) {
    two_node_bench b(link_down_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open(1));
        buffer src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, SRC);
        for (uintptr_t i = 10; i < 13; ++i) {
            NDK_SGE r = sge_of(src, 1024, 512);
            ASSERT_EQ(s.q0->Dispatch->NdkReceive(s.q0, ctx(i), &r, 1), STATUS_SUCCESS);
        }
        NDK_SGE sg = sge_of(src, 0, 256);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(1), &sg, 1, 0x10000, 0x100, 0),
                  STATUS_SUCCESS);
        got = s.c0.reap(4, 10 * TIMEOUT_NS);
    }));
    size_t writes = 0, receives = 0;
    for (const auto& r : got) {
        if (r.Type == NdkOperationTypeWrite) {
            ++writes;
            EXPECT_EQ(st(r), st(STATUS_IO_TIMEOUT));
        } else {
            EXPECT_EQ(r.Type, NdkOperationTypeReceive);
            EXPECT_EQ(ctx_of(r), 10 + receives);
            EXPECT_EQ(st(r), st(STATUS_CANCELLED));
            ++receives;
        }
    }
    EXPECT_EQ(writes, 1u);
    EXPECT_EQ(receives, 3u) << "posted receives of a failed QP never completed";
}

// A stream of READs on a perfect link never times out: each completed READ is forward progress
// and restarts the retransmission timer (and its retry budget). Here the timeout is 65 us and
// the stream runs 1 ms with four READs in flight at a time.
TEST(TransportRc, ReadStreamDoesNotTimeOutOnAPerfectLink) {
    two_node_bench b(json::object());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got;
    size_t posted = 0;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open(2, 7, 4));  // 4.096 us x 2^4 = 65.5 us
        buffer sink = s.c0.make_buffer(4 * PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        buffer source = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_REMOTE_READ, nullptr, SRC);
        const sc_core::sc_time end = sc_core::sc_time_stamp() + sc_core::sc_time(1, sc_core::SC_MS);
        while (sc_core::sc_time_stamp() < end) {
            while (posted - got.size() < 4) {
                NDK_SGE sg = sge_of(sink, (posted % 4) * PAGE, PAGE);
                ASSERT_EQ(s.q0->Dispatch->NdkRead(s.q0, ctx(posted + 1), &sg, 1, source.va(),
                                                  source.token, 0),
                          STATUS_SUCCESS);
                ++posted;
            }
            for (const auto& r : s.c0.poll()) {
                got.push_back(r);
            }
            wait_ns(200);
        }
        for (const auto& r : s.c0.reap(posted - got.size(), 1e6)) {
            got.push_back(r);
        }
    }));
    ASSERT_EQ(got.size(), posted);
    size_t errors = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(ctx_of(got[i]), i + 1);
        errors += got[i].Status != STATUS_SUCCESS ? 1 : 0;
    }
    EXPECT_EQ(errors, 0u) << "first error: "
                          << status_name(got.empty() ? STATUS_SUCCESS : got.back().Status);
    EXPECT_GT(posted, 100u);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "timeouts"), 0u) << "spurious timeouts";
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "retransmits"), 0u);
}

// --- Flush (NdkFlush: the QP to ERROR by command) -------------------------------------------

// Requests already on the wire and waiting for their ACK complete with STATUS_CANCELLED at once,
// not never (and not once more when their retransmission timer would have expired).
TEST(TransportRc, FlushCompletesRequestsInFlight) {
    two_node_bench b(link_down_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got, late;
    ASSERT_TRUE(b.run(
        [&] {
            // Default 67 ms timeout: no timer-driven completion can come within the test's window.
            ASSERT_NO_FATAL_FAILURE(s.open(7, 7, 14));
            buffer src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
            for (uintptr_t i = 1; i <= 3; ++i) {
                NDK_SGE sg = sge_of(src, 0, 512);
                ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(i), &sg, 1, 0x10000, 0x100, 0),
                          STATUS_SUCCESS);
            }
            ASSERT_TRUE(wait_until([&] { return b.sent(0, roce::RC_WRITE_ONLY).size() == 3; }));
            s.q0->Dispatch->NdkFlush(s.q0);
            got = s.c0.reap(3, 1e6);
            wait_ns(200e6);  // past 3 timeouts
            late = s.c0.poll();
        },
        5000));
    ASSERT_EQ(got.size(), 3u) << "in-flight requests of a flushed QP never completed";
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(ctx_of(got[i]), i + 1);
        EXPECT_EQ(st(got[i]), st(STATUS_CANCELLED));
    }
    EXPECT_TRUE(late.empty());
}

// Posted receives complete with STATUS_CANCELLED.
TEST(TransportRc, FlushCompletesPostedReceives) {
    two_node_bench b(json::object());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        buffer rb = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        for (uintptr_t i = 1; i <= 4; ++i) {
            NDK_SGE r = sge_of(rb, (i - 1) * 1024, 1024);
            ASSERT_EQ(s.q1->Dispatch->NdkReceive(s.q1, ctx(i), &r, 1), STATUS_SUCCESS);
        }
        wait_ns(5000);
        s.q1->Dispatch->NdkFlush(s.q1);
        got = s.c1.reap(4, 1e6);
    }));
    ASSERT_EQ(got.size(), 4u) << "posted receives of a flushed QP never completed";
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].Type, NdkOperationTypeReceive);
        EXPECT_EQ(ctx_of(got[i]), i + 1);
        EXPECT_EQ(st(got[i]), st(STATUS_CANCELLED));
    }
}

// --- RNR NAK ---------------------------------------------------------------------------------

// Default rnic.recv_path.rnr_timer_code 1: the responder asks for at least 10 us.
constexpr double RNR_NS = 10000;

// Transmissions of node 0's SEND (Only or First packet), in order.
std::vector<wire_frame> send_starts(const two_node_bench& b) {
    std::vector<wire_frame> v;
    for (const auto& f : b.frames) {
        if (f.side == 0 && f.parsed &&
            (f.opcode == roce::RC_SEND_ONLY || f.opcode == roce::RC_SEND_FIRST)) {
            v.push_back(f);
        }
    }
    return v;
}

// Every NAK frame node 1 sent (RNR NAKs, sequence NAKs, errors).
size_t nak_frames(const two_node_bench& b) {
    size_t n = 0;
    for (const auto& f : b.sent(1, roce::RC_ACK)) {
        n += roce::aeth_is_ack(f.syndrome) ? 0 : 1;
    }
    return n;
}

// No receive posted: RNR NAK, retried after the RNR timer, until the receive is there; then the
// SEND lands and both sides complete once. `bytes` 1000 is one packet, 2000 two (the Last
// packet reaches the responder after it NAKed the First).
void rnr_until_posted(size_t bytes) {
    two_node_bench b(json::object());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0, got1;
    buffer src, rb;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open(7, 7));
        src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        rb = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        NDK_SGE sg = sge_of(src, 0, bytes);
        ASSERT_EQ(s.q0->Dispatch->NdkSend(s.q0, ctx(1), &sg, 1, 0), STATUS_SUCCESS);
        // The consumer posts 35 us late: three or four RNR NAKs at >= 10 us spacing.
        wait_ns(35000);
        NDK_SGE r = sge_of(rb, 0, PAGE);
        ASSERT_EQ(s.q1->Dispatch->NdkReceive(s.q1, ctx(7), &r, 1), STATUS_SUCCESS);
        got0 = s.c0.reap(1, 1e6);
        got1 = s.c1.reap(1, 1e6);
    }));
    ASSERT_EQ(got0.size(), 1u);
    EXPECT_EQ(got0[0].Status, STATUS_SUCCESS);
    ASSERT_EQ(got1.size(), 1u);
    EXPECT_EQ(got1[0].Status, STATUS_SUCCESS);
    EXPECT_EQ(got1[0].BytesTransferred, bytes);
    EXPECT_EQ(count_not(rb.data, bytes, SRC), 0u);
    EXPECT_EQ(count_not(rb.data + bytes, PAGE - bytes, FILL), 0u);
    const size_t rnrs = b.rnr_naks(1);
    EXPECT_GE(rnrs, 3u);
    EXPECT_LE(rnrs, 4u) << "RNR back-off bypassed";
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "rnr_naks"), rnrs);
    EXPECT_EQ(b.stat("node1.nic.recv_path", "rnr"), rnrs);
    // The counter counts each NAK sent once.
    EXPECT_EQ(b.stat("node1.nic.recv_path", "naks_sent"), nak_frames(b));
    // Each retry waited the RNR timer.
    const auto starts = send_starts(b);
    ASSERT_EQ(starts.size(), rnrs + 1);
    for (size_t i = 1; i < starts.size(); ++i) {
        EXPECT_GE((starts[i].at - starts[i - 1].at).to_seconds() * 1e9, RNR_NS) << i;
    }
}
TEST(TransportRc, RnrNakRetriesUntilReceivePosted) {
    rnr_until_posted(1000);
}
TEST(TransportRc, RnrBackoffHoldsForMultiPacketSend) {
    rnr_until_posted(2000);
}

// rnr_retry 2 and the receive never comes: the SEND goes three times, then completes with
// "RNR retry exceeded" (STATUS_IO_TIMEOUT); the request behind it is flushed.
TEST(TransportRc, RnrRetryExhausted) {
    two_node_bench b(json::object());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got, late;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open(7, 2));
        buffer src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        NDK_SGE sg = sge_of(src, 0, 100);
        ASSERT_EQ(s.q0->Dispatch->NdkSend(s.q0, ctx(1), &sg, 1, 0), STATUS_SUCCESS);
        got = s.c0.reap(1, 1e6);
        ASSERT_EQ(s.q0->Dispatch->NdkSend(s.q0, ctx(2), &sg, 1, 0), STATUS_SUCCESS);
        for (const auto& r : s.c0.reap(1, 1e6)) {
            got.push_back(r);
        }
        wait_ns(1e6);
        late = s.c0.poll();
    }));
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(st(got[0]), st(STATUS_IO_TIMEOUT));
    EXPECT_EQ(st(got[1]), st(STATUS_CANCELLED));
    EXPECT_TRUE(late.empty());
    EXPECT_EQ(b.rnr_naks(1), 3u);
    EXPECT_EQ(send_starts(b).size(), 3u);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "retry_exceeded"), 1u);
}

// An RNR NAK with more requests already behind it on the wire: those arrive out of sequence at
// the responder. The requester must still wait the RNR timer before it retries: the back-off
// is what gives the responder's consumer time to post. Here the receive comes 200 us later, so
// at most ~200 / 10 + 2 RNR NAKs may happen, and every request completes once, successfully.
TEST(TransportRc, RnrBackoffHoldsWithPipelinedRequests) {
    two_node_bench b(json::object());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0, got1;
    buffer src, rb, wt;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open(7, 7));
        src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        rb = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        wt = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
        NDK_SGE sg = sge_of(src, 0, 512);
        ASSERT_EQ(s.q0->Dispatch->NdkSend(s.q0, ctx(1), &sg, 1, 0), STATUS_SUCCESS);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(2), &sg, 1, wt.va(0), wt.token, 0),
                  STATUS_SUCCESS);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(3), &sg, 1, wt.va(1024), wt.token, 0),
                  STATUS_SUCCESS);
        wait_ns(200000);
        NDK_SGE r = sge_of(rb, 0, PAGE);
        ASSERT_EQ(s.q1->Dispatch->NdkReceive(s.q1, ctx(7), &r, 1), STATUS_SUCCESS);
        got0 = s.c0.reap(3, 2e6);
        got1 = s.c1.reap(1, 1e6);
    }));
    EXPECT_LE(b.rnr_naks(1), 22u) << "RNR back-off bypassed: retries at wire speed";
    EXPECT_LE(send_starts(b).size(), 23u);
    ASSERT_EQ(got0.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(ctx_of(got0[i]), i + 1);
        EXPECT_EQ(got0[i].Status, STATUS_SUCCESS);
    }
    ASSERT_EQ(got1.size(), 1u);
    EXPECT_EQ(got1[0].Status, STATUS_SUCCESS);
    EXPECT_EQ(count_not(rb.data, 512, SRC), 0u);
    EXPECT_EQ(count_not(wt.data, 512, SRC), 0u);
    EXPECT_EQ(count_not(wt.data + 1024, 512, SRC), 0u);
}

// The same with a finite RNR budget that the back-off makes enough: rnr_retry 3 and the
// receive posted 15 us after the first RNR NAK needs two retries at 10 us spacing.
TEST(TransportRc, RnrBudgetIsNotSpentByPipelinedRequests) {
    two_node_bench b(json::object());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open(7, 3));
        buffer src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        buffer rb = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        buffer wt = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
        NDK_SGE sg = sge_of(src, 0, 512);
        ASSERT_EQ(s.q0->Dispatch->NdkSend(s.q0, ctx(1), &sg, 1, 0), STATUS_SUCCESS);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(2), &sg, 1, wt.va(0), wt.token, 0),
                  STATUS_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return b.rnr_naks(1) >= 1; }));
        wait_ns(15000);
        NDK_SGE r = sge_of(rb, 0, PAGE);
        ASSERT_EQ(s.q1->Dispatch->NdkReceive(s.q1, ctx(7), &r, 1), STATUS_SUCCESS);
        got0 = s.c0.reap(2, 1e6);
    }));
    ASSERT_EQ(got0.size(), 2u);
    EXPECT_EQ(st(got0[0]), st(STATUS_SUCCESS)) << "RNR retries exhausted within the back-off";
    EXPECT_EQ(st(got0[1]), st(STATUS_SUCCESS));
    EXPECT_LE(b.rnr_naks(1), 3u);
}

// The RNR retry budget is per message (reset by forward progress, like the transport retry
// budget), not per run of the QP's timer: with rnr_retry 1, two SENDs that each meet one RNR NAK
// both succeed. Node 1's consumer posts one receive after each RNR NAK it sees.
TEST(TransportRc, RnrBudgetIsPerMessage) {
    two_node_bench b(json::object());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0, got1;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open(7, 1));
        buffer src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        buffer rb = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        NDK_SGE sg = sge_of(src, 0, 512);
        ASSERT_EQ(s.q0->Dispatch->NdkSend(s.q0, ctx(1), &sg, 1, 0), STATUS_SUCCESS);
        ASSERT_EQ(s.q0->Dispatch->NdkSend(s.q0, ctx(2), &sg, 1, 0), STATUS_SUCCESS);
        for (uintptr_t k = 1; k <= 2; ++k) {
            if (!wait_until([&] { return b.rnr_naks(1) >= k; }, 200000)) {
                break;
            }
            NDK_SGE r = sge_of(rb, (k - 1) * 1024, 1024);
            ASSERT_EQ(s.q1->Dispatch->NdkReceive(s.q1, ctx(6 + k), &r, 1), STATUS_SUCCESS);
        }
        got0 = s.c0.reap(2, 1e6);
        got1 = s.c1.reap(2, 1e6);
    }));
    ASSERT_EQ(got0.size(), 2u);
    EXPECT_EQ(st(got0[0]), st(STATUS_SUCCESS));
    EXPECT_EQ(st(got0[1]), st(STATUS_SUCCESS)) << "RNR budget of the second SEND already spent";
    EXPECT_EQ(got1.size(), 2u);
}

// --- duplicate detection ----------------------------------------------------------------------

// Every request frame arrives twice (duplicate = 1 for the opcode): the copy is recognised by its
// PSN, acknowledged again, and not executed again. A duplicated SEND consumes one receive, not
// two.
TEST(TransportRc, DuplicateSendIsReAckedNotReExecuted) {
    two_node_bench b(
        scenario_doc(json::object(), {{"duplicate", 1.0}, {"opcode", roce::RC_SEND_ONLY}}));
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0, got1, late1;
    buffer rb;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        buffer src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        rb = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        for (uintptr_t i = 0; i < 4; ++i) {  // four receives for two SENDs
            NDK_SGE r = sge_of(rb, i * 1024, 1024);
            ASSERT_EQ(s.q1->Dispatch->NdkReceive(s.q1, ctx(10 + i), &r, 1), STATUS_SUCCESS);
        }
        for (uintptr_t i = 1; i <= 2; ++i) {
            NDK_SGE sg = sge_of(src, 0, 300);
            ASSERT_EQ(s.q0->Dispatch->NdkSend(s.q0, ctx(i), &sg, 1, 0), STATUS_SUCCESS);
        }
        got0 = s.c0.reap(2, 1e6);
        got1 = s.c1.reap(2, 1e6);
        wait_ns(100000);
        late1 = s.c1.poll();
    }));
    ASSERT_EQ(got0.size(), 2u);
    EXPECT_EQ(got0[0].Status, STATUS_SUCCESS);
    EXPECT_EQ(got0[1].Status, STATUS_SUCCESS);
    ASSERT_EQ(got1.size(), 2u);
    EXPECT_EQ(ctx_of(got1[0]), 10u);
    EXPECT_EQ(ctx_of(got1[1]), 11u);
    EXPECT_TRUE(late1.empty()) << "a duplicate consumed another receive";
    EXPECT_EQ(count_not(rb.data + 2048, 2048, FILL), 0u);
    EXPECT_EQ(b.stat("link.dir0", "faults_duplicated"), 2u);
    EXPECT_EQ(b.stat("node1.nic.recv_path", "duplicates"), 2u);
    EXPECT_EQ(b.stat("node1.nic.recv_path", "messages"), 2u);
    // One ACK per SEND and one more per duplicate.
    size_t acks = 0;
    for (const auto& f : b.sent(1, roce::RC_ACK)) {
        acks += roce::aeth_is_ack(f.syndrome) ? 1 : 0;
    }
    EXPECT_EQ(acks, 4u);
}

// --- ACK coalescing (rnic.recv_path.ack_coalesce, ack_delay_ns) ------------------------------

// ack_coalesce 4: eight back-to-back WRITEs are acknowledged by two ACKs, each covering four
// messages (the ACK PSN is that of the 4th / 8th WRITE).
TEST(TransportRc, AckEveryFourthMessage) {
    two_node_bench b(
        scenario_doc(json::object(), json::object(),
                     {{"rnic", {{"recv_path", {{"ack_coalesce", 4}, {"ack_delay_ns", 1e6}}}}}}));
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        buffer src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        buffer wt = s.c1.make_buffer(8 * 256, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
        for (uintptr_t i = 0; i < 8; ++i) {
            NDK_SGE sg = sge_of(src, 0, 256);
            ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(i + 1), &sg, 1, wt.va(i * 256), wt.token,
                                               i == 7 ? 0 : NDK_OP_FLAG_SILENT_SUCCESS),
                      STATUS_SUCCESS);
        }
        got = s.c0.reap(1, 1e6);
    }));
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].Status, STATUS_SUCCESS);
    const auto writes = b.sent(0, roce::RC_WRITE_ONLY);
    const auto acks = b.sent(1, roce::RC_ACK);
    ASSERT_EQ(writes.size(), 8u);
    ASSERT_EQ(acks.size(), 2u);
    EXPECT_EQ(acks[0].psn, writes[3].psn);
    EXPECT_EQ(acks[1].psn, writes[7].psn);
}

// ack_coalesce 16, ack_delay_ns 5000: a lone WRITE is acknowledged 5 us after it arrived.
TEST(TransportRc, HeldAckGoesOutAfterTheDelay) {
    two_node_bench b(
        scenario_doc(json::object(), json::object(),
                     {{"rnic", {{"recv_path", {{"ack_coalesce", 16}, {"ack_delay_ns", 5000}}}}}}));
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        buffer src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        buffer wt = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
        NDK_SGE sg = sge_of(src, 0, 256);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, ctx(1), &sg, 1, wt.va(), wt.token, 0),
                  STATUS_SUCCESS);
        got = s.c0.reap(1, 1e6);
    }));
    ASSERT_EQ(got.size(), 1u);
    const auto writes = b.sent(0, roce::RC_WRITE_ONLY);
    const auto acks = b.sent(1, roce::RC_ACK);
    ASSERT_EQ(writes.size(), 1u);
    ASSERT_EQ(acks.size(), 1u);
    const double gap = (acks[0].at - writes[0].at).to_seconds() * 1e9;
    EXPECT_GE(gap, 5000);
    EXPECT_LT(gap, 7000);  // + wire, parse, placement and the send path building the ACK
}

}  // namespace
}  // namespace rnic::transport_test
