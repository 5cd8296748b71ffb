// SPDX-License-Identifier: Apache-2.0
// Protection errors as the hardware reports them (issue "Reliable transport and hostile
// inputs", part 3): bad rkey / lkey, PD mismatch, missing access rights, out-of-bounds ranges,
// invalidated keys (memory windows, local and remote invalidation), a receive buffer without
// local write, a SEND too large for its receive, and MRs deregistered while a transfer uses
// them. Each case checks the NAK on the wire (captured as it leaves the MAC), the completion on
// each side with its NTSTATUS (ndk_shim/status_map.cpp), the requests behind it flushed, the
// counters, and that not one byte of host memory outside what was allowed was written.
//
// Two real nodes (host, PCIe, NIC) and a link, consumer code written directly against NDK
// (transport_bench.h). One elaboration per process: ctest runs each TEST as its own process.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/system/transport_bench.h"

namespace rnic::transport_test {
namespace {

constexpr size_t PAGE = 4096;
constexpr uint8_t SRC = 0xC3;   // what node 0 sends / node 1 serves to READs
constexpr uint8_t FILL = 0x11;  // what target memory holds before (and must hold after)

// A connected QP pair between node 0 (active) and node 1 (passive).
struct pair_setup {
    consumer c0;
    consumer c1;
    NDK_QP* q0 = nullptr;
    NDK_QP* q1 = nullptr;
    explicit pair_setup(two_node_bench& b)
        : c0(b, 0)
        , c1(b, 1) {}
    // timeout_log 10: 4.2 ms local ACK timeout (nothing here should need it).
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

json bench_doc() {
    return json::object();
}

uintptr_t ctx_of(const NDK_RESULT_EX& r) {
    return reinterpret_cast<uintptr_t>(r.RequestContext);
}

// The requester side of a remote error: the faulting request completes with `first`, every
// request posted behind it with STATUS_CANCELLED, each exactly once and in order.
void expect_requester_errors(const std::vector<NDK_RESULT_EX>& got, size_t posted, NTSTATUS first,
                             NDK_OPERATION_TYPE type) {
    ASSERT_EQ(got.size(), posted);
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(ctx_of(got[i]), i + 1) << "completion " << i;
        EXPECT_EQ(got[i].Type, type);
        EXPECT_EQ(static_cast<uint32_t>(got[i].Status),
                  static_cast<uint32_t>(i == 0 ? first : STATUS_CANCELLED))
            << "completion " << i << ": " << status_name(got[i].Status);
    }
}

// Posts `n` WRITEs (or READs) of `len` bytes at remote `va`/`token`, contexts 1..n.
void post_n(NDK_QP* qp, bool write, const buffer& local, size_t len, uint64_t va, uint32_t token,
            int n) {
    for (int i = 1; i <= n; ++i) {
        NDK_SGE s = sge_of(local, 0, len);
        const auto ctx = reinterpret_cast<PVOID>(uintptr_t(i));
        const NTSTATUS st = write ? qp->Dispatch->NdkWrite(qp, ctx, &s, 1, va, token, 0)
                                  : qp->Dispatch->NdkRead(qp, ctx, &s, 1, va, token, 0);
        ASSERT_EQ(st, STATUS_SUCCESS);
    }
}

// One remote protection case: node 1 exposes `target` (allocated 3 pages, FILL, MR over the
// middle page unless the case says otherwise); node 0 posts three WRITEs or READs at
// (va, token); the first must be NAKed "remote access error".
struct remote_case {
    bool write = true;
    ULONG target_flags = NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ;
    bool target_other_pd = false;
    size_t len = 2048;  // two packets
    // How the request goes wrong, from the correct (va, token).
    std::function<void(uint64_t& va, uint32_t& token)> spoil;
};

void run_remote_case(const remote_case& rc) {
    two_node_bench b(bench_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0;
    std::vector<NDK_RESULT_EX> extra0;
    std::vector<NDK_RESULT_EX> got1;
    buffer local;
    buffer target;
    const bool done = b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        NDK_PD* pd = rc.target_other_pd ? s.c1.create_pd() : s.c1.pd;
        target = s.c1.make_buffer(3 * PAGE, rc.target_flags, pd, FILL, PAGE, PAGE);
        // The sink of a READ is poisoned and allows local write; a WRITE source holds SRC.
        local =
            s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, rc.write ? SRC : FILL);
        uint64_t va = target.va(0);
        uint32_t token = target.token;
        rc.spoil(va, token);
        ASSERT_NO_FATAL_FAILURE(post_n(s.q0, rc.write, local, rc.len, va, token, 3));
        got0 = s.c0.reap(3, 2e6);
        wait_ns(50000);
        extra0 = s.c0.poll();
        got1 = s.c1.poll();
    });
    ASSERT_TRUE(done);
    ASSERT_NO_FATAL_FAILURE(expect_requester_errors(
        got0, 3, STATUS_ACCESS_VIOLATION, rc.write ? NdkOperationTypeWrite : NdkOperationTypeRead));
    EXPECT_TRUE(extra0.empty()) << "a request completed twice";
    EXPECT_TRUE(got1.empty()) << "node 1 posted nothing that could complete";
    // On the wire: node 1 NAKed the first request "remote access error", exactly once, and
    // ACKed nothing.
    EXPECT_EQ(b.naks(1, roce::AETH_NAK_REMOTE_ACCESS_ERROR), 1u);
    for (const auto& f : b.sent(1, roce::RC_ACK)) {
        EXPECT_FALSE(roce::aeth_is_ack(f.syndrome)) << "ACK for psn " << f.psn;
    }
    EXPECT_TRUE(b.sent(1, roce::RC_READ_RESP_FIRST).empty());
    EXPECT_TRUE(b.sent(1, roce::RC_READ_RESP_ONLY).empty());
    EXPECT_EQ(b.stat("node1.nic.recv_path", "protection_errors"), 1u);
    EXPECT_EQ(b.stat("node1.nic.recv_path", "payload_bytes"), 0u);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "error_completions"), 3u);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "flushed"), 2u);
    // Memory: the target (guards included) is untouched; a READ sink got nothing.
    EXPECT_EQ(count_not(target.data, target.bytes, FILL), 0u);
    if (!rc.write) {
        EXPECT_EQ(count_not(local.data, local.bytes, FILL), 0u);
    }
    // Both QPs are in error now.
    const uint32_t qpn0 = ndk::get_qp_number(s.q0);
    EXPECT_EQ(s.c0.nic().contexts().qp(qpn0)->state, hsi::QPS_ERROR);
}

TEST(Protection, WriteWithBadRkey) {
    run_remote_case({true, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, false, 2048,
                     [](uint64_t&, uint32_t& token) { token ^= 0x5A00; }});
}
TEST(Protection, WriteWithStaleKeyVariant) {
    // Same MPT index, other variant byte (what a key from an earlier registration looks like).
    run_remote_case({true, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, false, 2048,
                     [](uint64_t&, uint32_t& token) { token ^= 0x01; }});
}
TEST(Protection, ReadWithBadRkey) {
    run_remote_case({false, NDK_MR_FLAG_ALLOW_REMOTE_READ, false, 2048,
                     [](uint64_t&, uint32_t& token) { token ^= 0x5A00; }});
}
TEST(Protection, WriteToMrOfAnotherPd) {
    run_remote_case(
        {true, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, true, 2048, [](uint64_t&, uint32_t&) {}});
}
TEST(Protection, ReadFromMrOfAnotherPd) {
    run_remote_case(
        {false, NDK_MR_FLAG_ALLOW_REMOTE_READ, true, 2048, [](uint64_t&, uint32_t&) {}});
}
TEST(Protection, WriteWithoutRemoteWriteRight) {
    run_remote_case({true, NDK_MR_FLAG_ALLOW_REMOTE_READ | NDK_MR_FLAG_ALLOW_LOCAL_WRITE, false,
                     2048, [](uint64_t&, uint32_t&) {}});
}
TEST(Protection, ReadWithoutRemoteReadRight) {
    run_remote_case(
        {false, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, false, 2048, [](uint64_t&, uint32_t&) {}});
}
TEST(Protection, WritePastTheEndOfTheMr) {
    // 2 KiB starting 1 KiB before the end: the first half is inside, the rest is not.
    run_remote_case({true, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, false, 2048,
                     [](uint64_t& va, uint32_t&) { va += PAGE - 1024; }});
}
TEST(Protection, WriteBeforeTheStartOfTheMr) {
    run_remote_case({true, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, false, 2048,
                     [](uint64_t& va, uint32_t&) { va -= 64; }});
}
TEST(Protection, ReadPastTheEndOfTheMr) {
    run_remote_case({false, NDK_MR_FLAG_ALLOW_REMOTE_READ, false, 2048,
                     [](uint64_t& va, uint32_t&) { va += PAGE - 1; }});
}
TEST(Protection, WriteWithAddressWrapAround) {
    // va + len overflows 64 bits: must not pass the bounds check by wrapping.
    run_remote_case({true, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, false, 2048,
                     [](uint64_t& va, uint32_t&) { va = ~uint64_t{0} - 100; }});
}

// The responder side of a remote access error (IBA 9.9.3, responder class C errors): after
// NAKing, node 1's QP goes to the error state too, and its posted receive is flushed
// (STATUS_CANCELLED), so both consumers learn the connection is dead.
TEST(Protection, ResponderQpFailsAfterAccessNak) {
    two_node_bench b(bench_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0, got1;
    buffer src, target, rbuf;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        target = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
        rbuf = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        NDK_SGE r = sge_of(rbuf, 0, 64);
        ASSERT_EQ(s.q1->Dispatch->NdkReceive(s.q1, reinterpret_cast<PVOID>(uintptr_t(9)), &r, 1),
                  STATUS_SUCCESS);
        NDK_SGE sg = sge_of(src, 0, 512);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, reinterpret_cast<PVOID>(uintptr_t(1)), &sg, 1,
                                           target.va(), target.token ^ 0x4400, 0),
                  STATUS_SUCCESS);
        got0 = s.c0.reap(1, 1e6);
        got1 = s.c1.reap(1, 1e6);
    }));
    ASSERT_EQ(got0.size(), 1u);
    EXPECT_EQ(static_cast<uint32_t>(got0[0].Status),
              static_cast<uint32_t>(STATUS_ACCESS_VIOLATION));
    EXPECT_EQ(s.c1.nic().contexts().qp(ndk::get_qp_number(s.q1))->state, hsi::QPS_ERROR);
    ASSERT_EQ(got1.size(), 1u) << "node 1's receive was never flushed";
    EXPECT_EQ(ctx_of(got1[0]), 9u);
    EXPECT_EQ(static_cast<uint32_t>(got1[0].Status), static_cast<uint32_t>(STATUS_CANCELLED));
    EXPECT_EQ(count_not(rbuf.data, rbuf.bytes, FILL), 0u);
}

// --- local protection errors: nothing goes on the wire ----------------------------------------

struct local_case {
    bool write = true;  // WRITE (source is read) or READ (sink is written)
    ULONG local_flags = NDK_MR_FLAG_ALLOW_LOCAL_WRITE;
    bool local_other_pd = false;
    std::function<void(NDK_SGE&)> spoil;
};

void run_local_case(const local_case& lc) {
    two_node_bench b(bench_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0;
    std::vector<NDK_RESULT_EX> extra0;
    buffer local;
    buffer target;
    const bool done = b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        target = s.c1.make_buffer(
            PAGE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ, nullptr, FILL);
        NDK_PD* pd = lc.local_other_pd ? s.c0.create_pd() : s.c0.pd;
        local = s.c0.make_buffer(3 * PAGE, lc.local_flags, pd, FILL, PAGE, PAGE);
        for (int i = 1; i <= 3; ++i) {
            NDK_SGE sg = sge_of(local, 0, 1024);
            if (i == 1) {
                lc.spoil(sg);
            }
            const auto ctx = reinterpret_cast<PVOID>(uintptr_t(i));
            const NTSTATUS st =
                lc.write ? s.q0->Dispatch->NdkWrite(s.q0, ctx, &sg, 1, target.va(), target.token, 0)
                         : s.q0->Dispatch->NdkRead(s.q0, ctx, &sg, 1, target.va(), target.token, 0);
            ASSERT_EQ(st, STATUS_SUCCESS);
        }
        got0 = s.c0.reap(3, 1e6);
        wait_ns(50000);
        extra0 = s.c0.poll();
    });
    ASSERT_TRUE(done);
    ASSERT_NO_FATAL_FAILURE(expect_requester_errors(
        got0, 3, STATUS_ACCESS_VIOLATION, lc.write ? NdkOperationTypeWrite : NdkOperationTypeRead));
    EXPECT_TRUE(extra0.empty());
    // The faulting request never reached the wire; nor did the flushed ones.
    EXPECT_TRUE(b.sent(0, lc.write ? roce::RC_WRITE_ONLY : roce::RC_READ_REQUEST).empty());
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "messages"), 0u);
    EXPECT_EQ(count_not(target.data, target.bytes, FILL), 0u);
    EXPECT_EQ(count_not(local.data, local.bytes, FILL), 0u);
}

TEST(Protection, LocalBadLkey) {
    run_local_case({true, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, false,
                    [](NDK_SGE& s) { s.MemoryRegionToken ^= 0x3300; }});
}
TEST(Protection, LocalSgeOfAnotherPd) {
    run_local_case({true, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, true, [](NDK_SGE&) {}});
}
TEST(Protection, LocalSgePastTheEndOfTheMr) {
    run_local_case({true, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, false, [](NDK_SGE& s) {
                        s.VirtualAddress = static_cast<uint8_t*>(s.VirtualAddress) + PAGE - 512;
                    }});
}
TEST(Protection, ReadIntoSinkWithoutLocalWrite) {
    run_local_case({false, NDK_MR_FLAG_ALLOW_LOCAL_READ, false, [](NDK_SGE&) {}});
}

// --- receive side -----------------------------------------------------------------------------

// A receive buffer registered without local write: the receive completes with a local
// protection error on node 1, node 0's SEND with "remote operational error".
TEST(Protection, ReceiveIntoBufferWithoutLocalWrite) {
    two_node_bench b(bench_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0, got1, extra;
    buffer src, rbuf;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        rbuf = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_REMOTE_READ, nullptr, FILL);
        NDK_SGE r = sge_of(rbuf, 0, PAGE);
        ASSERT_EQ(s.q1->Dispatch->NdkReceive(s.q1, reinterpret_cast<PVOID>(uintptr_t(7)), &r, 1),
                  STATUS_SUCCESS);
        NDK_SGE sg = sge_of(src, 0, 1500);
        ASSERT_EQ(s.q0->Dispatch->NdkSend(s.q0, reinterpret_cast<PVOID>(uintptr_t(1)), &sg, 1, 0),
                  STATUS_SUCCESS);
        got0 = s.c0.reap(1, 1e6);
        got1 = s.c1.reap(1, 1e6);
        wait_ns(50000);
        extra = s.c0.poll();
        for (const auto& e : s.c1.poll()) {
            extra.push_back(e);
        }
    }));
    ASSERT_EQ(got1.size(), 1u);
    EXPECT_EQ(got1[0].Type, NdkOperationTypeReceive);
    EXPECT_EQ(ctx_of(got1[0]), 7u);
    EXPECT_EQ(static_cast<uint32_t>(got1[0].Status),
              static_cast<uint32_t>(STATUS_ACCESS_VIOLATION));
    ASSERT_EQ(got0.size(), 1u);
    EXPECT_EQ(got0[0].Type, NdkOperationTypeSend);
    EXPECT_EQ(static_cast<uint32_t>(got0[0].Status),
              static_cast<uint32_t>(STATUS_REMOTE_RESOURCES));
    EXPECT_TRUE(extra.empty());
    EXPECT_EQ(b.naks(1, roce::AETH_NAK_REMOTE_OP_ERROR), 1u);
    EXPECT_EQ(count_not(rbuf.data, rbuf.bytes, FILL), 0u);
}

// A SEND of 3000 B into a 2048 B receive: the receive completes with a length error
// (STATUS_BUFFER_OVERFLOW), node 0's SEND with "invalid request"; nothing is written past the
// receive buffer.
TEST(Protection, SendLargerThanReceiveBuffer) {
    two_node_bench b(bench_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0, got1;
    buffer src, rbuf;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        rbuf = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        NDK_SGE r = sge_of(rbuf, 0, 2048);
        ASSERT_EQ(s.q1->Dispatch->NdkReceive(s.q1, reinterpret_cast<PVOID>(uintptr_t(7)), &r, 1),
                  STATUS_SUCCESS);
        NDK_SGE sg = sge_of(src, 0, 3000);
        ASSERT_EQ(s.q0->Dispatch->NdkSend(s.q0, reinterpret_cast<PVOID>(uintptr_t(1)), &sg, 1, 0),
                  STATUS_SUCCESS);
        got0 = s.c0.reap(1, 1e6);
        got1 = s.c1.reap(1, 1e6);
    }));
    ASSERT_EQ(got1.size(), 1u);
    EXPECT_EQ(static_cast<uint32_t>(got1[0].Status), static_cast<uint32_t>(STATUS_BUFFER_OVERFLOW));
    ASSERT_EQ(got0.size(), 1u);
    EXPECT_EQ(static_cast<uint32_t>(got0[0].Status),
              static_cast<uint32_t>(STATUS_INVALID_PARAMETER));
    EXPECT_EQ(b.naks(1, roce::AETH_NAK_INVALID_REQUEST), 1u);
    // The receive buffer holds at most its 2048 bytes of the message, nothing beyond.
    EXPECT_EQ(count_not(rbuf.data + 2048, PAGE - 2048, FILL), 0u);
}

// --- invalidated keys -------------------------------------------------------------------------

// A memory window: a WRITE through it works while bound; after NdkInvalidate (local) or a
// SendAndInvalidate from the peer (remote), the same WRITE is NAKed and writes nothing.
void window_case(bool remote_invalidate) {
    two_node_bench b(bench_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> before, inval0, inval1, after;
    buffer src, target, rbuf;
    uint32_t mw_token = 0;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        target = s.c1.make_buffer(2 * PAGE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
        rbuf = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        NDK_MW* mw = s.c1.create_mw();
        ASSERT_NE(mw, nullptr);
        ASSERT_EQ(s.q1->Dispatch->NdkBind(s.q1, reinterpret_cast<PVOID>(uintptr_t(50)), target.mr,
                                          mw, target.reg(), PAGE, NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
                  STATUS_SUCCESS);
        auto bound = s.c1.reap(1, 1e6);
        ASSERT_EQ(bound.size(), 1u);
        ASSERT_EQ(bound[0].Status, STATUS_SUCCESS);
        mw_token = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);
        // Through the window: works.
        NDK_SGE sg = sge_of(src, 0, 512);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, reinterpret_cast<PVOID>(uintptr_t(1)), &sg, 1,
                                           target.va(0), mw_token, 0),
                  STATUS_SUCCESS);
        before = s.c0.reap(1, 1e6);
        if (remote_invalidate) {
            NDK_SGE r = sge_of(rbuf, 0, 64);
            ASSERT_EQ(
                s.q1->Dispatch->NdkReceive(s.q1, reinterpret_cast<PVOID>(uintptr_t(60)), &r, 1),
                STATUS_SUCCESS);
            NDK_SGE m = sge_of(src, 0, 64);
            ASSERT_EQ(s.q0->Dispatch->NdkSendAndInvalidate(
                          s.q0, reinterpret_cast<PVOID>(uintptr_t(2)), &m, 1, 0, mw_token),
                      STATUS_SUCCESS);
            inval0 = s.c0.reap(1, 1e6);
            inval1 = s.c1.reap(1, 1e6);
        } else {
            ASSERT_EQ(s.q1->Dispatch->NdkInvalidate(s.q1, reinterpret_cast<PVOID>(uintptr_t(61)),
                                                    &mw->Header, 0),
                      STATUS_SUCCESS);
            inval1 = s.c1.reap(1, 1e6);
        }
        // Clear what the first WRITE put there, then try again with the dead key.
        std::memset(target.data, FILL, target.bytes);
        NDK_SGE sg2 = sge_of(src, 0, 512);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, reinterpret_cast<PVOID>(uintptr_t(3)), &sg2, 1,
                                           target.va(256), mw_token, 0),
                  STATUS_SUCCESS);
        after = s.c0.reap(1, 1e6);
    }));
    ASSERT_EQ(before.size(), 1u);
    EXPECT_EQ(before[0].Status, STATUS_SUCCESS);
    if (remote_invalidate) {
        ASSERT_EQ(inval0.size(), 1u);
        EXPECT_EQ(inval0[0].Status, STATUS_SUCCESS);
        ASSERT_EQ(inval1.size(), 1u);
        EXPECT_EQ(inval1[0].Status, STATUS_SUCCESS);
        EXPECT_EQ(inval1[0].Type, NdkOperationTypeReceiveAndInvalidate);
        EXPECT_EQ(inval1[0].TypeSpecificCompletionOutput, mw_token);
    } else {
        ASSERT_EQ(inval1.size(), 1u);
        EXPECT_EQ(inval1[0].Status, STATUS_SUCCESS);
        EXPECT_EQ(inval1[0].Type, NdkOperationTypeInvalidate);
    }
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(static_cast<uint32_t>(after[0].Status),
              static_cast<uint32_t>(STATUS_ACCESS_VIOLATION));
    EXPECT_EQ(b.naks(1, roce::AETH_NAK_REMOTE_ACCESS_ERROR), 1u);
    EXPECT_EQ(count_not(target.data, target.bytes, FILL), 0u);
}
TEST(Protection, WriteThroughLocallyInvalidatedWindow) {
    window_case(false);
}
TEST(Protection, WriteThroughRemotelyInvalidatedWindow) {
    window_case(true);
}

// A key whose MR was deregistered (and the deregistration completed): NAKed.
TEST(Protection, WriteWithKeyOfDeregisteredMr) {
    two_node_bench b(bench_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> first, second;
    buffer src, target;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        target = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
        NDK_SGE sg = sge_of(src, 0, 512);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, reinterpret_cast<PVOID>(uintptr_t(1)), &sg, 1,
                                           target.va(), target.token, 0),
                  STATUS_SUCCESS);
        first = s.c0.reap(1, 1e6);
        ASSERT_EQ(s.c1.deregister(target), STATUS_SUCCESS);
        std::memset(target.data, FILL, target.bytes);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, reinterpret_cast<PVOID>(uintptr_t(2)), &sg, 1,
                                           target.va(), target.token, 0),
                  STATUS_SUCCESS);
        second = s.c0.reap(1, 1e6);
    }));
    ASSERT_EQ(first.size(), 1u);
    EXPECT_EQ(first[0].Status, STATUS_SUCCESS);
    ASSERT_EQ(second.size(), 1u);
    EXPECT_EQ(static_cast<uint32_t>(second[0].Status),
              static_cast<uint32_t>(STATUS_ACCESS_VIOLATION));
    EXPECT_EQ(count_not(target.data, target.bytes, FILL), 0u);
}

// --- MR deregistered while a transfer uses it -----------------------------------------------
// Once NdkDeregisterMr has completed, the NIC must not touch the memory again (the consumer may
// free it): the transfer fails, and at most the packets already being placed when the
// deregistration ran may still land. 1 MiB = 1024 packets, so a NIC that keeps going writes
// hundreds of KiB after the deregistration.

constexpr size_t BIG = 1 << 20;
constexpr size_t IN_FLIGHT_SLACK = 16 * 1024;  // packets already in the placement pipeline

// Index of the first byte of [p, p+len) that is not `v` (len if none).
size_t landed(const uint8_t* p, size_t len, uint8_t v) {
    size_t i = 0;
    while (i < len && p[i] == v) {
        ++i;
    }
    return i;
}

// Node 1's WRITE target is deregistered mid-WRITE.
TEST(Protection, WriteTargetDeregisteredMidTransfer) {
    two_node_bench b(bench_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0;
    buffer src, target;
    size_t at_dereg = 0;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        src = s.c0.make_buffer(BIG, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        target = s.c1.make_buffer(BIG, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
        NDK_SGE sg = sge_of(src, 0, BIG);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, reinterpret_cast<PVOID>(uintptr_t(1)), &sg, 1,
                                           target.va(), target.token, 0),
                  STATUS_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return target.data[0] == SRC; }));
        ASSERT_EQ(s.c1.deregister(target), STATUS_SUCCESS);
        at_dereg = landed(target.data, BIG, SRC);
        got0 = s.c0.reap(1, 5e6);
    }));
    const size_t final_landed = landed(target.data, BIG, SRC);
    EXPECT_LT(at_dereg, BIG / 2);  // the deregistration really raced the transfer
    EXPECT_LE(final_landed, at_dereg + IN_FLIGHT_SLACK)
        << "bytes written after NdkDeregisterMr completed: " << final_landed - at_dereg;
    ASSERT_EQ(got0.size(), 1u);
    EXPECT_EQ(static_cast<uint32_t>(got0[0].Status), static_cast<uint32_t>(STATUS_ACCESS_VIOLATION))
        << status_name(got0[0].Status);
    EXPECT_GE(b.naks(1, roce::AETH_NAK_REMOTE_ACCESS_ERROR), 1u);
}

// Node 0's READ sink is deregistered while the responses stream in.
TEST(Protection, ReadSinkDeregisteredMidTransfer) {
    two_node_bench b(bench_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0;
    buffer sink, source;
    size_t at_dereg = 0;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        sink = s.c0.make_buffer(BIG, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        source = s.c1.make_buffer(BIG, NDK_MR_FLAG_ALLOW_REMOTE_READ, nullptr, SRC);
        NDK_SGE sg = sge_of(sink, 0, BIG);
        ASSERT_EQ(s.q0->Dispatch->NdkRead(s.q0, reinterpret_cast<PVOID>(uintptr_t(1)), &sg, 1,
                                          source.va(), source.token, 0),
                  STATUS_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return sink.data[0] == SRC; }));
        ASSERT_EQ(s.c0.deregister(sink), STATUS_SUCCESS);
        at_dereg = landed(sink.data, BIG, SRC);
        got0 = s.c0.reap(1, 5e6);
    }));
    const size_t final_landed = landed(sink.data, BIG, SRC);
    EXPECT_LT(at_dereg, BIG / 2);
    EXPECT_LE(final_landed, at_dereg + IN_FLIGHT_SLACK)
        << "bytes written after NdkDeregisterMr completed: " << final_landed - at_dereg;
    ASSERT_EQ(got0.size(), 1u);
    EXPECT_EQ(static_cast<uint32_t>(got0[0].Status), static_cast<uint32_t>(STATUS_ACCESS_VIOLATION))
        << status_name(got0[0].Status);
}

// --- source side: the payload's own key dies mid-transfer ----------------------------------
// The NIC translates the gather list for every packet it reads (mlx5: through the MKey/MTT cache,
// which a deregistration invalidates), so once NdkDeregisterMr has completed it reads nothing
// more of the region: the consumer overwrites the buffer with SECRET right away, and not one
// SECRET byte may reach the peer. The request completes with a local protection error
// (STATUS_ACCESS_VIOLATION) and the QP goes to ERROR.
constexpr uint8_t SECRET = 0x5A;

// Node 0's WRITE source is deregistered mid-WRITE.
TEST(Protection, WriteSourceDeregisteredMidTransfer) {
    two_node_bench b(bench_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0, late0;
    buffer src, target;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        src = s.c0.make_buffer(BIG, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        target = s.c1.make_buffer(BIG, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
        NDK_SGE sg = sge_of(src, 0, BIG);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, reinterpret_cast<PVOID>(uintptr_t(1)), &sg, 1,
                                           target.va(), target.token, 0),
                  STATUS_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return target.data[0] == SRC; }));
        ASSERT_EQ(s.c0.deregister(src), STATUS_SUCCESS);
        std::memset(src.data, SECRET, BIG);  // the consumer re-uses its memory
        got0 = s.c0.reap(1, 5e6);
        wait_ns(100000);
        late0 = s.c0.poll();
    }));
    ASSERT_EQ(got0.size(), 1u);
    EXPECT_EQ(static_cast<uint32_t>(got0[0].Status), static_cast<uint32_t>(STATUS_ACCESS_VIOLATION))
        << status_name(got0[0].Status);
    EXPECT_TRUE(late0.empty());
    EXPECT_EQ(count_not(target.data, BIG, SECRET), BIG)
        << "the NIC read the source after NdkDeregisterMr completed";
    EXPECT_LT(landed(target.data, BIG, SRC), BIG / 2);  // the deregistration raced the transfer
    // The packets after the fault were stomped at node 0's MAC and dropped by node 1: the
    // target holds the source's bytes or its old ones, never the zeros those packets carried.
    const size_t sent = landed(target.data, BIG, SRC);
    EXPECT_EQ(count_not(target.data + sent, BIG - sent, FILL), 0u) << "zeros after byte " << sent;
    EXPECT_GT(b.stat("node0.nic.tx_engine", "stomped_packets"), 0u);
    EXPECT_EQ(b.stat("node1.nic.recv_path", "bad_icrc"),
              b.stat("node0.nic.tx_engine", "stomped_packets"));
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "source_key_faults"), 1u);
    EXPECT_LT(b.stat("node0.nic.tx_engine", "payload_bytes"), BIG);
    EXPECT_EQ(s.c0.nic().contexts().qp(ndk::get_qp_number(s.q0))->state, hsi::QPS_ERROR);
}

// Node 1's READ source (the responder side) is deregistered while it serves the READ: the
// responder reads no more of it, NAKs "remote access error" and its QP goes to ERROR.
TEST(Protection, ReadSourceDeregisteredMidTransfer) {
    two_node_bench b(bench_doc());
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0;
    buffer sink, source;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open());
        sink = s.c0.make_buffer(BIG, NDK_MR_FLAG_ALLOW_LOCAL_WRITE, nullptr, FILL);
        source = s.c1.make_buffer(BIG, NDK_MR_FLAG_ALLOW_REMOTE_READ, nullptr, SRC);
        NDK_SGE sg = sge_of(sink, 0, BIG);
        ASSERT_EQ(s.q0->Dispatch->NdkRead(s.q0, reinterpret_cast<PVOID>(uintptr_t(1)), &sg, 1,
                                          source.va(), source.token, 0),
                  STATUS_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return sink.data[0] == SRC; }));
        ASSERT_EQ(s.c1.deregister(source), STATUS_SUCCESS);
        std::memset(source.data, SECRET, BIG);
        got0 = s.c0.reap(1, 5e6);
        wait_ns(100000);
    }));
    EXPECT_EQ(count_not(sink.data, BIG, SECRET), BIG)
        << "the responder read its source after NdkDeregisterMr completed";
    EXPECT_LT(landed(sink.data, BIG, SRC), BIG / 2);
    EXPECT_EQ(b.stat("node1.nic.tx_engine", "source_key_faults"), 1u);
    EXPECT_LT(b.stat("node1.nic.tx_engine", "payload_bytes"), BIG);
    EXPECT_EQ(b.naks(1, roce::AETH_NAK_REMOTE_ACCESS_ERROR), 1u);
    EXPECT_EQ(s.c1.nic().contexts().qp(ndk::get_qp_number(s.q1))->state, hsi::QPS_ERROR);
    EXPECT_EQ(s.c0.nic().contexts().qp(ndk::get_qp_number(s.q0))->state, hsi::QPS_ERROR);
    // The rest of the response was stomped at node 1's MAC (node 0 drops it: bad ICRC), so the
    // READ never has all its data: the NAK completes it with a remote access error, and the
    // sink holds the served bytes or its old ones, never zeros.
    EXPECT_GT(b.stat("node1.nic.tx_engine", "stomped_packets"), 0u);
    EXPECT_EQ(b.stat("node0.nic.recv_path", "bad_icrc"),
              b.stat("node1.nic.tx_engine", "stomped_packets"));
    const size_t served = landed(sink.data, BIG, SRC);
    EXPECT_EQ(count_not(sink.data + served, BIG - served, FILL), 0u)
        << "zeros after byte " << served;
    ASSERT_EQ(got0.size(), 1u);
    EXPECT_EQ(static_cast<uint32_t>(got0[0].Status), static_cast<uint32_t>(STATUS_ACCESS_VIOLATION))
        << status_name(got0[0].Status);
}

// The source is deregistered while the WRITE waits for a retransmission (the link drops the
// first transmission): the go-back-N resend re-checks the key before anything goes out, so
// the resend never happens and the WRITE completes with a local protection error.
TEST(Protection, WriteSourceDeregisteredBeforeRetransmission) {
    two_node_bench b(scenario_doc(json::object(), {{"link_down_ns", {{3e6, 3.2e6}}}}));
    pair_setup s(b);
    std::vector<NDK_RESULT_EX> got0;
    buffer src, target;
    size_t writes_before = 0;
    ASSERT_TRUE(b.run([&] {
        ASSERT_NO_FATAL_FAILURE(s.open(6));  // 262 us local ACK timeout
        src = s.c0.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_LOCAL_READ, nullptr, SRC);
        target = s.c1.make_buffer(PAGE, NDK_MR_FLAG_ALLOW_REMOTE_WRITE, nullptr, FILL);
        ASSERT_LT(sc_core::sc_time_stamp().to_seconds(), 3e-3);
        wait_ns(3e6 + 1000 - sc_core::sc_time_stamp().to_seconds() * 1e9);
        NDK_SGE sg = sge_of(src, 0, 512);
        ASSERT_EQ(s.q0->Dispatch->NdkWrite(s.q0, reinterpret_cast<PVOID>(uintptr_t(1)), &sg, 1,
                                           target.va(), target.token, 0),
                  STATUS_SUCCESS);
        wait_ns(20000);
        writes_before = b.sent(0, roce::RC_WRITE_ONLY).size();
        ASSERT_EQ(s.c0.deregister(src), STATUS_SUCCESS);
        std::memset(src.data, SECRET, PAGE);
        got0 = s.c0.reap(1, 5e6);
    }));
    ASSERT_EQ(got0.size(), 1u);
    EXPECT_EQ(static_cast<uint32_t>(got0[0].Status), static_cast<uint32_t>(STATUS_ACCESS_VIOLATION))
        << status_name(got0[0].Status);
    EXPECT_EQ(writes_before, 1u);
    EXPECT_EQ(b.sent(0, roce::RC_WRITE_ONLY).size(), 1u) << "the resend went out";
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "timeouts"), 1u);
    EXPECT_EQ(b.stat("node0.nic.tx_engine", "source_key_faults"), 1u);
    EXPECT_EQ(count_not(target.data, PAGE, FILL), 0u);
}

}  // namespace
}  // namespace rnic::transport_test
