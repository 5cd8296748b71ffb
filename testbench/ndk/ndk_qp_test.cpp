// SPDX-License-Identifier: Apache-2.0
// NDK QP family against a fake NIC: CreateQp checks, every request kind and flag as WQE bytes and
// doorbells (SILENT_SUCCESS, READ_FENCE, SEND_AND_SOLICIT_EVENT, INLINE, DEFER,
// RDMA_READ_LOCAL_INVALIDATE), Flush, CONNECTION_INVALID, exhaustion, error completions.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/ndk/ndk_bench.h"

namespace rnic::ndk::test {
namespace {

TEST(NdkQp, CreateQpValidatesLimits) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        adapter_params p = params_for(1);
        p.limits.max_qps = 3;  // one usable QPN (0 and 1 are reserved)
        e.open(n, net, p);
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

// Posting: WQE bytes, doorbells, DEFER batching, inline data, statuses.
TEST(NdkQp, PostWritesWqesAndRingsDoorbells) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint a, b;
        a.open(n1, net, params_for(1));
        b.open(n2, net, params_for(2));
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

        force_connected(a.qp);
        force_connected(b.qp);

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

// Opens `a` on n1 and `b` on n2 and puts both QPs in the connected state without a CM exchange.
void open_connected(endpoint& a, endpoint& b, node& n1, node& n2, fake_network& net) {
    a.open(n1, net, params_for(1));
    b.open(n2, net, params_for(2));
    force_connected(a.qp);
    force_connected(b.qp);
}

TEST(NdkQp, WqePushCarriesDoorbell) {
    hw::sim_context ctx;
    host_config cfg = sync_cfg();
    cfg.wqe_push = true;
    node n1("n1", cfg, ctx);
    node n2("n2", cfg, ctx);
    fake_network net;
    run([&] {
        endpoint a, b;
        open_connected(a, b, n1, n2, net);
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

// With a 128 B write-combining buffer a two-block WQE (control + one SGE) is pushed whole; a
// doorbell that covers a deferred WQE too is a plain doorbell write (no push), as mlx5 uses
// BlueFlame only for a doorbell of one WQE.
TEST(NdkQp, WqePushUpToWriteCombiningSize) {
    hw::sim_context ctx;
    host_config cfg = sync_cfg();
    cfg.wqe_push = true;
    cfg.wqe_push_bytes = 128;
    node n1("n1", cfg, ctx);
    node n2("n2", cfg, ctx);
    fake_network net;
    run([&] {
        endpoint a, b;
        open_connected(a, b, n1, n2, net);
        NDK_SGE sge{};
        sge.Length = 8;
        sge.LogicalAddress.QuadPart = 0x1234'5000;
        sge.MemoryRegionToken = 0x77;
        ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, &sge, 1, 0), STATUS_SUCCESS);
        settle();
        EXPECT_TRUE(n1.nic.values(hsi::REG_SQ_DOORBELL).empty());
        std::vector<fake_nic::mmio_write> pushes;
        for (const auto& w : n1.nic.writes) {
            if (w.offset == hsi::REG_WQE_PUSH) {
                pushes.push_back(w);
            }
        }
        ASSERT_EQ(pushes.size(), 1u);
        ASSERT_EQ(pushes[0].data.size(), 128u);
        EXPECT_EQ(pushes[0].data[0], hsi::WQE_SEND);
        EXPECT_EQ(at<uint64_t>(pushes[0].data, 32), a.qpn() | (1ull << 32));
        EXPECT_EQ(at<uint64_t>(pushes[0].data, 64), 0x1234'5000u);  // the SGE, pushed with it
        EXPECT_EQ(at<uint32_t>(pushes[0].data, 76), 0x77u);
        // A deferred post and the one that rings for both: one doorbell write, no push.
        ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, &sge, 1, NDK_OP_FLAG_DEFER),
                  STATUS_SUCCESS);
        ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, &sge, 1, 0), STATUS_SUCCESS);
        settle();
        EXPECT_EQ(n1.nic.values(hsi::REG_SQ_DOORBELL).size(), 1u);
        size_t pushed = 0;
        for (const auto& w : n1.nic.writes) {
            pushed += w.offset == hsi::REG_WQE_PUSH ? 1 : 0;
        }
        EXPECT_EQ(pushed, 1u);
    });
}

// host.wqe_push_inline_only, mlx5's rule (rdma-core providers/mlx5/qp.c BlueFlames a lone WQE
// only for `inl || prefer_bf`): a WQE with an SGE that would fit the write-combining buffer goes
// by doorbell, the same size of WQE with inline data is pushed.
TEST(NdkQp, WqePushInlineOnlyAsMlx5) {
    hw::sim_context ctx;
    host_config cfg = sync_cfg();
    cfg.wqe_push = true;
    cfg.wqe_push_bytes = 128;
    cfg.wqe_push_inline_only = true;
    node n1("n1", cfg, ctx);
    node n2("n2", cfg, ctx);
    fake_network net;
    run([&] {
        endpoint a, b;
        open_connected(a, b, n1, n2, net);
        auto pushes = [&] {
            size_t k = 0;
            for (const auto& w : n1.nic.writes) {
                k += w.offset == hsi::REG_WQE_PUSH ? 1 : 0;
            }
            return k;
        };
        NDK_SGE sge{};
        sge.Length = 8;
        sge.LogicalAddress.QuadPart = 0x1234'5000;
        sge.MemoryRegionToken = 0x77;
        ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, &sge, 1, 0), STATUS_SUCCESS);
        settle();
        EXPECT_EQ(n1.nic.values(hsi::REG_SQ_DOORBELL).size(), 1u);  // 128 B, but not inline
        EXPECT_EQ(pushes(), 0u);
        char text[8] = "inline";
        NDK_SGE in{};
        in.VirtualAddress = text;
        in.Length = 8;
        ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, nullptr, &in, 1, NDK_OP_FLAG_INLINE),
                  STATUS_SUCCESS);
        settle();
        EXPECT_EQ(n1.nic.values(hsi::REG_SQ_DOORBELL).size(), 1u);
        ASSERT_EQ(pushes(), 1u);
        for (const auto& w : n1.nic.writes) {
            if (w.offset == hsi::REG_WQE_PUSH) {
                ASSERT_EQ(w.data.size(), 128u);
                EXPECT_EQ(std::memcmp(w.data.data() + 64, text, 8), 0);
            }
        }
    });
}

// CreateQp / CreateQpWithSrq parameter checks -> INVALID_PARAMETER; the NIC refusing the QP ->
// INSUFFICIENT_RESOURCES through the create completion (asynchronous mode), its QPN reused.
TEST(NdkQp, CreateChecksAndAsyncExhaustion) {
    hw::sim_context ctx;
    node n("n1", async_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        adapter_params p = params_for(1);
        p.limits.max_qps = 4;  // QPN 0 and 1 reserved: the endpoint's and one more
        e.open(n, net, p);
        NDK_QP* qp = nullptr;
        create_log none;
        auto create = [&](NDK_CQ* rcq, NDK_CQ* icq, ULONG rq, ULONG sq) {
            return e.pd->Dispatch->NdkCreateQp(e.pd, rcq, icq, nullptr, rq, sq, 1, 1, 0,
                                               create_log::fn, &none, &qp);
        };
        EXPECT_EQ(create(nullptr, e.cq, 4, 4), STATUS_INVALID_PARAMETER);
        EXPECT_EQ(create(e.cq, nullptr, 4, 4), STATUS_INVALID_PARAMETER);
        EXPECT_EQ(create(e.cq, e.cq, 0, 4), STATUS_INVALID_PARAMETER);
        EXPECT_EQ(create(e.cq, e.cq, 4, 0), STATUS_INVALID_PARAMETER);
        EXPECT_EQ(e.pd->Dispatch->NdkCreateQpWithSrq(e.pd, e.cq, e.cq, nullptr, nullptr, 4, 1, 0,
                                                     create_log::fn, &none, &qp),
                  STATUS_INVALID_PARAMETER);
        n.nic.fail[hsi::CMD_CREATE_QP] = hsi::CMD_NO_RESOURCES;
        create_log refused;
        ASSERT_EQ(e.pd->Dispatch->NdkCreateQp(e.pd, e.cq, e.cq, nullptr, 4, 4, 1, 1, 0,
                                              create_log::fn, &refused, &qp),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return refused.calls == 1; }));
        EXPECT_EQ(refused.status, STATUS_INSUFFICIENT_RESOURCES);
        EXPECT_EQ(refused.object, nullptr);
        n.nic.fail.clear();
        create_log ok;
        NDK_QP* qp2 = created(e.pd->Dispatch->NdkCreateQp(e.pd, e.cq, e.cq, nullptr, 4, 4, 1, 1, 0,
                                                          create_log::fn, &ok, &qp),
                              qp, ok);
        ASSERT_NE(qp2, nullptr);
        EXPECT_EQ(create(e.cq, e.cq, 4, 4), STATUS_INSUFFICIENT_RESOURCES);  // inline
        settle();
        EXPECT_EQ(none.calls, 0);
    });
}

// A QP that is not connected refuses every initiator request inline with CONNECTION_INVALID
// (nothing reaches the NIC, no CQE); receives may be posted before the connection exists.
TEST(NdkQp, UnconnectedInitiatorPostsFailInline) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n, net, params_for(1));
        host_buffer b(n.host, 8192);
        NDK_MR* mr = nullptr;
        NDK_MR* fr = nullptr;
        NDK_MW* mw = nullptr;
        ASSERT_EQ(e.pd->Dispatch->NdkCreateMr(e.pd, FALSE, create_log::fn, nullptr, &mr),
                  STATUS_SUCCESS);
        ASSERT_EQ(mr->Dispatch->NdkRegisterMr(mr, b.mdl, 8192, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                              request_log::fn, nullptr),
                  STATUS_SUCCESS);
        ASSERT_EQ(e.pd->Dispatch->NdkCreateMr(e.pd, TRUE, create_log::fn, nullptr, &fr),
                  STATUS_SUCCESS);
        ASSERT_EQ(fr->Dispatch->NdkInitializeFastRegisterMr(fr, 2, TRUE, request_log::fn, nullptr),
                  STATUS_SUCCESS);
        ASSERT_EQ(e.pd->Dispatch->NdkCreateMw(e.pd, create_log::fn, nullptr, &mw), STATUS_SUCCESS);
        NDK_SGE sge{};
        sge.VirtualAddress = b.data;
        sge.Length = 64;
        sge.MemoryRegionToken = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
        NDK_LOGICAL_ADDRESS page{};
        page.QuadPart = static_cast<LONGLONG>(n.host.phys(b.data));
        const uint64_t posted = get_adapter_counters(e.adapter).wqes_posted;
        NDK_QP* q = e.qp;
        const auto* d = q->Dispatch;
        EXPECT_EQ(d->NdkSend(q, nullptr, &sge, 1, 0), STATUS_CONNECTION_INVALID);
        EXPECT_EQ(d->NdkSendAndInvalidate(q, nullptr, &sge, 1, 0, 0x100),
                  STATUS_CONNECTION_INVALID);
        EXPECT_EQ(d->NdkWrite(q, nullptr, &sge, 1, 0x1000, 0x200, 0), STATUS_CONNECTION_INVALID);
        EXPECT_EQ(d->NdkRead(q, nullptr, &sge, 1, 0x1000, 0x200, 0), STATUS_CONNECTION_INVALID);
        EXPECT_EQ(d->NdkBind(q, nullptr, mr, mw, b.data, 64, NDK_OP_FLAG_ALLOW_REMOTE_READ),
                  STATUS_CONNECTION_INVALID);
        EXPECT_EQ(d->NdkFastRegister(q, nullptr, fr, 1, &page, 0, 4096, nullptr, 0),
                  STATUS_CONNECTION_INVALID);
        EXPECT_EQ(d->NdkInvalidate(q, nullptr, &mw->Header, 0), STATUS_CONNECTION_INVALID);
        EXPECT_EQ(get_adapter_counters(e.adapter).wqes_posted, posted);
        EXPECT_EQ(d->NdkReceive(q, nullptr, &sge, 1), STATUS_SUCCESS);
        settle();
        EXPECT_TRUE(n.nic.values(hsi::REG_SQ_DOORBELL).empty());
        EXPECT_EQ(n.nic.values(hsi::REG_RQ_DOORBELL).size(), 1u);
        NDK_RESULT r;
        EXPECT_EQ(e.cq->Dispatch->NdkGetCqResults(e.cq, &r, 1), 0u);
    });
}

// Flush: deferred WQEs reach the NIC, the QP goes to ERROR; what the NIC flushes from both
// queues completes with STATUS_CANCELLED; initiator posts then fail inline.
TEST(NdkQp, FlushCancelsBothQueues) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n, net, params_for(1));
        force_connected(e.qp);
        NDK_SGE sge{};
        sge.Length = 16;
        ASSERT_EQ(e.qp->Dispatch->NdkReceive(e.qp, reinterpret_cast<void*>(0xA0), &sge, 1),
                  STATUS_SUCCESS);
        ASSERT_EQ(e.qp->Dispatch->NdkSend(e.qp, reinterpret_cast<void*>(0xB0), &sge, 1,
                                          NDK_OP_FLAG_DEFER),
                  STATUS_SUCCESS);
        ASSERT_EQ(e.qp->Dispatch->NdkWrite(e.qp, reinterpret_cast<void*>(0xB1), &sge, 1, 0x1000, 7,
                                           NDK_OP_FLAG_DEFER | NDK_OP_FLAG_SILENT_SUCCESS),
                  STATUS_SUCCESS);
        settle();
        EXPECT_TRUE(n.nic.values(hsi::REG_SQ_DOORBELL).empty());
        e.qp->Dispatch->NdkFlush(e.qp);
        settle();
        EXPECT_EQ(n.nic.values(hsi::REG_SQ_DOORBELL),
                  std::vector<uint64_t>{e.qpn() | (2ull << 32)});
        ASSERT_TRUE(wait_until([&] {
            const auto& s = n.nic.qps.at(e.qpn()).states;
            return !s.empty() && s.back() == hsi::QPS_ERROR;
        }));
        EXPECT_EQ(e.qp->Dispatch->NdkSend(e.qp, nullptr, &sge, 1, 0), STATUS_CONNECTION_INVALID);
        // The NIC flushes all three (unsignalled ones too), each with a CQE.
        const uint32_t cqn = n.nic.cqs.begin()->first;
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 0, hsi::CQE_RECV, hsi::CQE_WR_FLUSH_ERR));
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 0, hsi::CQE_SEND, hsi::CQE_WR_FLUSH_ERR));
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 1, hsi::CQE_WRITE, hsi::CQE_WR_FLUSH_ERR));
        settle();
        NDK_RESULT_EX r[4];
        ASSERT_EQ(e.cq->Dispatch->NdkGetCqResultsEx(e.cq, r, 4), 3u);
        EXPECT_EQ(r[0].Type, NdkOperationTypeReceive);
        EXPECT_EQ(r[0].RequestContext, reinterpret_cast<void*>(0xA0));
        EXPECT_EQ(r[1].Type, NdkOperationTypeSend);
        EXPECT_EQ(r[2].Type, NdkOperationTypeWrite);
        EXPECT_EQ(r[2].RequestContext, reinterpret_cast<void*>(0xB1));
        for (const auto& x : r) {
            if (&x == r + 3) {
                break;
            }
            EXPECT_EQ(x.Status, STATUS_CANCELLED);
            EXPECT_NE(x.ProviderErrorCode, 0u);
        }
    });
}

// Read: READ_LOCAL_INVALIDATE carries the first SGE's token; INLINE is meaningless on a read;
// INLINE on Write is accepted; transfers above MaxTransferLength are refused; hardware errors
// complete with the documented statuses (REMOTE_RESOURCES for a remote operational error).
TEST(NdkQp, ReadWriteFlagsAndErrorCompletions) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n, net, params_for(1));
        force_connected(e.qp);
        NDK_SGE sge{};
        sge.LogicalAddress.QuadPart = 0x4000;
        sge.Length = 32;
        sge.MemoryRegionToken = 0x3301;
        ASSERT_EQ(e.qp->Dispatch->NdkRead(e.qp, reinterpret_cast<void*>(1), &sge, 1, 0x8000, 0x77,
                                          NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE |
                                              NDK_OP_FLAG_INLINE | NDK_OP_FLAG_READ_FENCE),
                  STATUS_SUCCESS);
        auto w = n.nic.sq_slot(e.qpn(), 0, 128);
        EXPECT_EQ(w[0], hsi::WQE_READ);
        EXPECT_EQ(w[1],
                  hsi::WQE_FLAG_SIGNALED | hsi::WQE_FLAG_FENCE | hsi::WQE_FLAG_READ_LOCAL_INV);
        EXPECT_EQ(w[2], 1);  // an SGE, not inline data
        EXPECT_EQ(at<uint32_t>(w, 12), 0x3301u);
        EXPECT_EQ(at<uint64_t>(w, 64), 0x4000u);
        char text[24] = "inline write payload!!";
        NDK_SGE in{};
        in.VirtualAddress = text;
        in.Length = sizeof(text);
        ASSERT_EQ(e.qp->Dispatch->NdkWrite(e.qp, reinterpret_cast<void*>(2), &in, 1, 0x9000, 0x78,
                                           NDK_OP_FLAG_INLINE),
                  STATUS_SUCCESS);
        w = n.nic.sq_slot(e.qpn(), 1, 128);
        EXPECT_EQ(w[0], hsi::WQE_WRITE);
        EXPECT_TRUE(w[1] & hsi::WQE_FLAG_INLINE);
        EXPECT_EQ(std::memcmp(w.data() + 64, text, sizeof(text)), 0);
        NDK_SGE too_long[2]{};
        too_long[0].Length = params_for(1).limits.max_message;
        too_long[1].Length = 1;
        EXPECT_EQ(e.qp->Dispatch->NdkWrite(e.qp, nullptr, too_long, 2, 0x9000, 0x78, 0),
                  STATUS_INVALID_PARAMETER);
        ASSERT_EQ(e.qp->Dispatch->NdkSend(e.qp, reinterpret_cast<void*>(3), &sge, 1, 0),
                  STATUS_SUCCESS);
        ASSERT_EQ(e.qp->Dispatch->NdkSend(e.qp, reinterpret_cast<void*>(4), &sge, 1, 0),
                  STATUS_SUCCESS);
        // Error completions (the hardware error -> NTSTATUS table, status_map.cpp).
        const uint32_t cqn = n.nic.cqs.begin()->first;
        hsi::cqe rd = make_cqe(e.qpn(), 0, hsi::CQE_READ, hsi::CQE_REMOTE_OP_ERR);
        rd.vendor_err = 0x1234;
        n.nic.post_cqe(cqn, rd);
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 1, hsi::CQE_WRITE, hsi::CQE_REMOTE_ACCESS_ERR));
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 2, hsi::CQE_SEND, hsi::CQE_RETRY_EXCEEDED));
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 3, hsi::CQE_SEND, hsi::CQE_LOCAL_PROT_ERR));
        settle();
        NDK_RESULT_EX r[4];
        ASSERT_EQ(e.cq->Dispatch->NdkGetCqResultsEx(e.cq, r, 4), 4u);
        EXPECT_EQ(r[0].Type, NdkOperationTypeRead);
        EXPECT_EQ(r[0].Status, STATUS_REMOTE_RESOURCES);
        EXPECT_EQ(r[0].ProviderErrorCode, 0x1234u);
        EXPECT_EQ(r[1].Type, NdkOperationTypeWrite);
        EXPECT_EQ(r[1].Status, STATUS_ACCESS_VIOLATION);
        EXPECT_EQ(r[2].Status, STATUS_IO_TIMEOUT);
        EXPECT_EQ(r[3].Status, STATUS_ACCESS_VIOLATION);
        EXPECT_EQ(r[3].RequestContext, reinterpret_cast<void*>(4));
    });
}

// Receive queue: too many SGEs -> INVALID_PARAMETER; a full queue -> INSUFFICIENT_RESOURCES,
// free again once completions retire the WQEs.
TEST(NdkQp, ReceiveQueueLimits) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n, net, params_for(1));
        NDK_SGE sge[5]{};
        EXPECT_EQ(e.qp->Dispatch->NdkReceive(e.qp, nullptr, sge, 5), STATUS_INVALID_PARAMETER);
        int posted = 0;
        NTSTATUS st;
        while ((st = e.qp->Dispatch->NdkReceive(e.qp, nullptr, sge, 1)) == STATUS_SUCCESS) {
            ++posted;
        }
        EXPECT_EQ(posted, 16);
        EXPECT_EQ(st, STATUS_INSUFFICIENT_RESOURCES);
        const uint32_t cqn = n.nic.cqs.begin()->first;
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 0, hsi::CQE_RECV));
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 1, hsi::CQE_RECV));
        settle();
        NDK_RESULT r[2];
        ASSERT_EQ(e.cq->Dispatch->NdkGetCqResults(e.cq, r, 2), 2u);
        EXPECT_EQ(e.qp->Dispatch->NdkReceive(e.qp, nullptr, sge, 1), STATUS_SUCCESS);
        EXPECT_EQ(e.qp->Dispatch->NdkReceive(e.qp, nullptr, sge, 1), STATUS_SUCCESS);
        EXPECT_EQ(e.qp->Dispatch->NdkReceive(e.qp, nullptr, sge, 1), STATUS_INSUFFICIENT_RESOURCES);
    });
}

}  // namespace
}  // namespace rnic::ndk::test
