// SPDX-License-Identifier: Apache-2.0
// NDK SRQ family against a fake NIC: CreateSrq, SrqReceive, ModifySrq, the limit notification, QPs
// on an SRQ.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/ndk/ndk_bench.h"

namespace rnic::ndk::test {
namespace {

TEST(NdkSrq, SrqReceivesAndLimitEvent) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint s;
        s.open(n, cm, params_for(1));
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

// CreateSrq: depth / SGE limits -> INVALID_PARAMETER; asynchronous creation; no SRQ number left
// -> INSUFFICIENT_RESOURCES inline; the NIC refusing -> INSUFFICIENT_RESOURCES asynchronously.
TEST(NdkSrq, CreateLimitsAsyncAndExhaustion) {
    hw::sim_context ctx;
    node n("n1", async_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint e;
        adapter_params p = params_for(1);
        p.limits.max_srqs = 2;  // one usable SRQN
        e.open(n, cm, p);
        const auto& l = p.limits;
        NDK_SRQ* srq = nullptr;
        create_log none;
        EXPECT_EQ(e.pd->Dispatch->NdkCreateSrq(e.pd, l.max_srq_depth + 1, 1, 0, nullptr, nullptr,
                                               nullptr, create_log::fn, &none, &srq),
                  STATUS_INVALID_PARAMETER);
        EXPECT_EQ(e.pd->Dispatch->NdkCreateSrq(e.pd, 0, 1, 0, nullptr, nullptr, nullptr,
                                               create_log::fn, &none, &srq),
                  STATUS_INVALID_PARAMETER);
        EXPECT_EQ(e.pd->Dispatch->NdkCreateSrq(e.pd, 8, l.max_sge + 1, 0, nullptr, nullptr, nullptr,
                                               create_log::fn, &none, &srq),
                  STATUS_INVALID_PARAMETER);
        n.nic.fail[hsi::CMD_CREATE_SRQ] = hsi::CMD_NO_RESOURCES;
        create_log refused;
        ASSERT_EQ(e.pd->Dispatch->NdkCreateSrq(e.pd, 8, 1, 0, nullptr, nullptr, nullptr,
                                               create_log::fn, &refused, &srq),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return refused.calls == 1; }));
        EXPECT_EQ(refused.status, STATUS_INSUFFICIENT_RESOURCES);
        n.nic.fail.clear();
        create_log ok;
        srq = created(e.pd->Dispatch->NdkCreateSrq(e.pd, 8, 1, 0, nullptr, nullptr, nullptr,
                                                   create_log::fn, &ok, &srq),
                      srq, ok);
        ASSERT_NE(srq, nullptr);
        EXPECT_EQ(srq->Header.ObjectType, NdkObjectTypeSrq);
        NDK_SRQ* srq2 = nullptr;
        EXPECT_EQ(e.pd->Dispatch->NdkCreateSrq(e.pd, 8, 1, 0, nullptr, nullptr, nullptr,
                                               create_log::fn, &none, &srq2),
                  STATUS_INSUFFICIENT_RESOURCES);
        settle();
        EXPECT_EQ(none.calls, 0);
        // A QP on the SRQ (asynchronous) counts as its child: the SRQ close pends until the QP
        // is gone.
        create_log ql;
        NDK_QP* qp = nullptr;
        qp = created(e.pd->Dispatch->NdkCreateQpWithSrq(e.pd, e.cq, e.cq, srq, nullptr, 4, 1, 0,
                                                        create_log::fn, &ql, &qp),
                     qp, ql);
        ASSERT_NE(qp, nullptr);
        std::vector<std::string> order;
        close_log sc{0, &order, "srq"}, qc{0, &order, "qp"};
        EXPECT_EQ(srq->Dispatch->NdkCloseSrq(&srq->Header, close_log::fn, &sc), STATUS_PENDING);
        wait_until([] { return false; }, 5000);
        EXPECT_EQ(sc.calls, 0);
        EXPECT_EQ(qp->Dispatch->NdkCloseQp(&qp->Header, close_log::fn, &qc), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return sc.calls == 1; }));
        EXPECT_EQ(order, (std::vector<std::string>{"qp", "srq"}));
    });
}

// ModifySrq: 0 keeps depth / threshold (no command), a depth below the queued receives or a
// threshold above the depth -> INVALID_PARAMETER, asynchronous re-arm -> PENDING + completion;
// SrqReceive checks its SGE count.
TEST(NdkSrq, ModifyAndReceiveChecks) {
    hw::sim_context ctx;
    node n("n1", async_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint e;
        e.open(n, cm, params_for(1));
        create_log sl;
        NDK_SRQ* srq = nullptr;
        notify_log notes;
        srq = created(e.pd->Dispatch->NdkCreateSrq(e.pd, 8, 2, 0, notify_log::fn, &notes, nullptr,
                                                   create_log::fn, &sl, &srq),
                      srq, sl);
        ASSERT_NE(srq, nullptr);
        NDK_SGE sge[3]{};
        EXPECT_EQ(srq->Dispatch->NdkSrqReceive(srq, nullptr, sge, 3), STATUS_INVALID_PARAMETER);
        for (int i = 0; i < 4; ++i) {
            ASSERT_EQ(srq->Dispatch->NdkSrqReceive(srq, nullptr, sge, 2), STATUS_SUCCESS);
        }
        const size_t cmds = n.nic.commands.size();
        request_log r;
        EXPECT_EQ(srq->Dispatch->NdkModifySrq(srq, 3, 0, request_log::fn, &r),
                  STATUS_INVALID_PARAMETER);  // 4 queued
        EXPECT_EQ(srq->Dispatch->NdkModifySrq(srq, 6, 7, request_log::fn, &r),
                  STATUS_INVALID_PARAMETER);
        EXPECT_EQ(srq->Dispatch->NdkModifySrq(srq, 5, 0, request_log::fn, &r), STATUS_SUCCESS);
        EXPECT_EQ(srq->Dispatch->NdkSrqReceive(srq, nullptr, sge, 1), STATUS_SUCCESS);
        EXPECT_EQ(srq->Dispatch->NdkSrqReceive(srq, nullptr, sge, 1),
                  STATUS_INSUFFICIENT_RESOURCES);  // depth 5 now
        EXPECT_EQ(srq->Dispatch->NdkModifySrq(srq, 0, 0, request_log::fn, &r), STATUS_SUCCESS);
        settle();
        EXPECT_EQ(n.nic.commands.size(), cmds);  // nothing for the NIC
        EXPECT_EQ(r.calls, 0);
        // Threshold 3 with 5 queued: armed, not fired.
        request_log armed;
        ASSERT_EQ(srq->Dispatch->NdkModifySrq(srq, 0, 3, request_log::fn, &armed), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return armed.calls == 1; }));
        EXPECT_EQ(armed.status, STATUS_SUCCESS);
        EXPECT_EQ(n.nic.commands.back().opcode, hsi::CMD_MODIFY_SRQ);
        EXPECT_EQ(n.nic.commands.back().u.srq.limit, 3u);
        wait_until([] { return false; }, 5000);
        EXPECT_EQ(notes.calls, 0);
        n.nic.post_event(hsi::EVENT_SRQ_LIMIT, n.nic.commands.back().u.srq.srqn);
        ASSERT_TRUE(wait_until([&] { return notes.calls == 1; }));
        EXPECT_EQ(notes.status, STATUS_SUCCESS);
    });
}

}  // namespace
}  // namespace rnic::ndk::test
