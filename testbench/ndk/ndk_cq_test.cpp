// SPDX-License-Identifier: Apache-2.0
// NDK CQ family against a fake NIC: CQE -> NDK_RESULT(_EX) mapping, ArmCq (any / solicited / errors
// and their combinations), notifications, overrun, ResizeCq, interrupt moderation.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/ndk/ndk_bench.h"

namespace rnic::ndk::test {
namespace {

// Completions: CQE -> NDK_RESULT mapping, unsignalled retirement, phase wrap, consumer
// doorbells, arming and notifications.
TEST(NdkCq, CompletionsMapAndNotify) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint a, b;
        a.open(n1, cm, params_for(1));
        b.open(n2, cm, params_for(2));
        force_connected(a.qp);
        force_connected(b.qp);
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

TEST(NdkCq, FlushResizeAndModeration) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint a, b;
        a.open(n1, cm, params_for(1));
        b.open(n2, cm, params_for(2));
        force_connected(a.qp);
        force_connected(b.qp);
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

// CreateCq: depth 0 or beyond MaxCqDepth -> INVALID_PARAMETER; no CQ number left ->
// INSUFFICIENT_RESOURCES inline; the NIC refusing -> INSUFFICIENT_RESOURCES asynchronously.
TEST(NdkCq, CreateLimitsAndExhaustion) {
    hw::sim_context ctx;
    node n("n1", async_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        adapter_params p = params_for(1);
        p.limits.max_cqs = 2;  // one usable CQN
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_adapter(n.host, cm, p, &a), STATUS_SUCCESS);
        NDK_CQ* cq = nullptr;
        create_log l0;
        EXPECT_EQ(
            a->Dispatch->NdkCreateCq(a, 0, nullptr, nullptr, nullptr, create_log::fn, &l0, &cq),
            STATUS_INVALID_PARAMETER);
        EXPECT_EQ(a->Dispatch->NdkCreateCq(a, p.limits.max_cq_depth + 1, nullptr, nullptr, nullptr,
                                           create_log::fn, &l0, &cq),
                  STATUS_INVALID_PARAMETER);
        n.nic.fail[hsi::CMD_CREATE_CQ] = hsi::CMD_NO_RESOURCES;
        create_log refused;
        ASSERT_EQ(a->Dispatch->NdkCreateCq(a, 8, nullptr, nullptr, nullptr, create_log::fn,
                                           &refused, &cq),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return refused.calls == 1; }));
        EXPECT_EQ(refused.status, STATUS_INSUFFICIENT_RESOURCES);
        EXPECT_EQ(refused.object, nullptr);
        n.nic.fail.clear();
        create_log ok;
        cq = created(a->Dispatch->NdkCreateCq(a, p.limits.max_cq_depth, nullptr, nullptr, nullptr,
                                              create_log::fn, &ok, &cq),
                     cq, ok);
        ASSERT_NE(cq, nullptr);
        NDK_CQ* cq2 = nullptr;
        EXPECT_EQ(
            a->Dispatch->NdkCreateCq(a, 8, nullptr, nullptr, nullptr, create_log::fn, &l0, &cq2),
            STATUS_INSUFFICIENT_RESOURCES);
        settle();
        EXPECT_EQ(l0.calls, 0);
    });
}

// Re-arming before the first arm fired combines per ndkpi.md 7 (ANY wins, then SOLICITED over
// ERRORS); an ERRORS arm ignores completions, a SOLICITED arm ignores unsolicited successes.
TEST(NdkCq, ArmCombinationTable) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint e;
        e.open(n, cm, params_for(1));
        force_connected(e.qp);
        const uint32_t cqn = n.nic.cqs.begin()->first;
        auto& hw = n.nic.cqs.at(cqn);
        struct row {
            ULONG first, second;
            uint8_t hw_arm;  // what reaches the NIC after the second arm
        };
        const row table[] = {
            {NDK_CQ_NOTIFY_ANY, NDK_CQ_NOTIFY_ANY, hsi::CQ_ARM_ANY},
            {NDK_CQ_NOTIFY_ANY, NDK_CQ_NOTIFY_ERRORS, hsi::CQ_ARM_ANY},
            {NDK_CQ_NOTIFY_ANY, NDK_CQ_NOTIFY_SOLICITED, hsi::CQ_ARM_ANY},
            {NDK_CQ_NOTIFY_ERRORS, NDK_CQ_NOTIFY_ANY, hsi::CQ_ARM_ANY},
            {NDK_CQ_NOTIFY_ERRORS, NDK_CQ_NOTIFY_ERRORS, hsi::CQ_ARM_NONE},
            {NDK_CQ_NOTIFY_ERRORS, NDK_CQ_NOTIFY_SOLICITED, hsi::CQ_ARM_SOLICITED},
            {NDK_CQ_NOTIFY_SOLICITED, NDK_CQ_NOTIFY_ANY, hsi::CQ_ARM_ANY},
            {NDK_CQ_NOTIFY_SOLICITED, NDK_CQ_NOTIFY_ERRORS, hsi::CQ_ARM_SOLICITED},
            {NDK_CQ_NOTIFY_SOLICITED, NDK_CQ_NOTIFY_SOLICITED, hsi::CQ_ARM_SOLICITED},
        };
        NDK_SGE sge{};
        sge.Length = 4;
        uint16_t rq_index = 0;
        for (const row& r : table) {
            SCOPED_TRACE(testing::Message() << r.first << " then " << r.second);
            const int before = e.notes.calls;
            hw.arm = hsi::CQ_ARM_NONE;
            e.cq->Dispatch->NdkArmCq(e.cq, r.first);
            e.cq->Dispatch->NdkArmCq(e.cq, r.second);
            settle();
            EXPECT_EQ(hw.arm, r.hw_arm);
            // An unsolicited successful receive: only ANY notifies.
            ASSERT_EQ(e.qp->Dispatch->NdkReceive(e.qp, nullptr, &sge, 1), STATUS_SUCCESS);
            n.nic.post_cqe(cqn, make_cqe(e.qpn(), rq_index++, hsi::CQE_RECV));
            wait_until([] { return false; }, 3000);
            const bool any = r.hw_arm == hsi::CQ_ARM_ANY;
            EXPECT_EQ(e.notes.calls, before + (any ? 1 : 0));
            // A solicited one satisfies SOLICITED (an ERRORS arm still waits).
            ASSERT_EQ(e.qp->Dispatch->NdkReceive(e.qp, nullptr, &sge, 1), STATUS_SUCCESS);
            hsi::cqe s = make_cqe(e.qpn(), rq_index++, hsi::CQE_RECV);
            s.flags = hsi::CQE_FLAG_SOLICITED;
            n.nic.post_cqe(cqn, s);
            wait_until([] { return false; }, 3000);
            EXPECT_EQ(e.notes.calls, before + (r.hw_arm == hsi::CQ_ARM_NONE ? 0 : 1));
            NDK_RESULT res[4];
            EXPECT_EQ(e.cq->Dispatch->NdkGetCqResults(e.cq, res, 4), 2u);
            if (r.hw_arm == hsi::CQ_ARM_NONE) {
                // The ERRORS arm is still in place: an overrun reaches it.
                EXPECT_GE(provider::impl(e.cq)->arm, 0);
                provider::impl(e.cq)->arm = -1;  // disarm for the next row
            }
        }
    });
}

// Overrun: EVENT_CQ_ERROR is reported once as STATUS_BUFFER_OVERFLOW (to an armed CQ at once,
// else to the next ArmCq); the CQ is dead afterwards: GetCqResults returns nothing.
TEST(NdkCq, OverrunReportedOnceAndCqDead) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint e;
        e.open(n, cm, params_for(1));
        const uint32_t cqn = n.nic.cqs.begin()->first;
        NDK_SGE sge{};
        ASSERT_EQ(e.qp->Dispatch->NdkReceive(e.qp, nullptr, &sge, 1), STATUS_SUCCESS);
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 0, hsi::CQE_RECV));
        n.nic.post_event(hsi::EVENT_CQ_ERROR, cqn);  // nobody armed
        wait_until([] { return false; }, 3000);
        EXPECT_EQ(e.notes.calls, 0);
        e.cq->Dispatch->NdkArmCq(e.cq, NDK_CQ_NOTIFY_ERRORS);
        ASSERT_TRUE(wait_until([&] { return e.notes.calls == 1; }));
        EXPECT_EQ(e.notes.status, STATUS_BUFFER_OVERFLOW);
        NDK_RESULT_EX r[2];
        EXPECT_EQ(e.cq->Dispatch->NdkGetCqResultsEx(e.cq, r, 2), 0u);
        e.cq->Dispatch->NdkArmCq(e.cq, NDK_CQ_NOTIFY_ANY);
        n.nic.post_event(hsi::EVENT_CQ_ERROR, cqn);
        wait_until([] { return false; }, 3000);
        EXPECT_EQ(e.notes.calls, 1);  // reported once
    });
}

// ResizeCq: INVALID_PARAMETER beyond MaxCqDepth or below the queued CQEs; PENDING + request
// completion in asynchronous mode; the NIC refusing -> INSUFFICIENT_RESOURCES; queued CQEs survive.
TEST(NdkCq, ResizeAsyncLimitsAndRefusal) {
    hw::sim_context ctx;
    node n("n1", async_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint e;
        const adapter_params p = params_for(1);
        e.open(n, cm, p, 64, 8);
        const uint32_t cqn = n.nic.cqs.begin()->first;
        NDK_SGE sge{};
        for (uint16_t i = 0; i < 3; ++i) {
            ASSERT_EQ(e.qp->Dispatch->NdkReceive(e.qp, reinterpret_cast<void*>(0x40 + i), &sge, 1),
                      STATUS_SUCCESS);
            n.nic.post_cqe(cqn, make_cqe(e.qpn(), i, hsi::CQE_RECV));
        }
        settle();
        request_log r;
        EXPECT_EQ(e.cq->Dispatch->NdkResizeCq(e.cq, p.limits.max_cq_depth + 1, request_log::fn, &r),
                  STATUS_INVALID_PARAMETER);
        EXPECT_EQ(e.cq->Dispatch->NdkResizeCq(e.cq, 0, request_log::fn, &r),
                  STATUS_INVALID_PARAMETER);
        EXPECT_EQ(e.cq->Dispatch->NdkResizeCq(e.cq, 2, request_log::fn, &r),
                  STATUS_INVALID_PARAMETER);  // 3 CQEs queued
        n.nic.fail[hsi::CMD_RESIZE_CQ] = hsi::CMD_NO_RESOURCES;
        request_log refused;
        ASSERT_EQ(e.cq->Dispatch->NdkResizeCq(e.cq, 100, request_log::fn, &refused),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return refused.calls == 1; }));
        EXPECT_EQ(refused.status, STATUS_INSUFFICIENT_RESOURCES);
        n.nic.fail.clear();
        request_log grown;
        ASSERT_EQ(e.cq->Dispatch->NdkResizeCq(e.cq, 100, request_log::fn, &grown), STATUS_PENDING);
        EXPECT_EQ(r.calls, 0);
        ASSERT_TRUE(wait_until([&] { return grown.calls == 1; }));
        EXPECT_EQ(grown.status, STATUS_SUCCESS);
        const auto rc = n.nic.commands_of(hsi::CMD_RESIZE_CQ).back().u.cq;
        EXPECT_GE(1u << rc.log_depth, 200u);
        NDK_RESULT res[4];
        ASSERT_EQ(e.cq->Dispatch->NdkGetCqResults(e.cq, res, 4), 3u);
        EXPECT_EQ(res[2].RequestContext, reinterpret_cast<void*>(0x42));
    });
}

// Moderation by count: with the interval count-controlled (MAXULONG) the notification waits for
// ModerationCount CQEs; a count beyond the depth with MAXULONG is the documented bad mix; with
// both an interval and a count, the interval bounds the wait.
TEST(NdkCq, ModerationByCountAndInterval) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint e;
        e.open(n, cm, params_for(1), 64, 16);
        const uint32_t cqn = n.nic.cqs.begin()->first;
        EXPECT_EQ(e.cq->Dispatch->NdkControlCqInterruptModeration(e.cq, MAXULONG, 17),
                  STATUS_INVALID_PARAMETER_MIX);  // count > depth: interval-controlled too
        ASSERT_EQ(e.cq->Dispatch->NdkControlCqInterruptModeration(e.cq, MAXULONG, 3),
                  STATUS_SUCCESS);
        NDK_SGE sge{};
        for (int i = 0; i < 8; ++i) {
            ASSERT_EQ(e.qp->Dispatch->NdkReceive(e.qp, nullptr, &sge, 1), STATUS_SUCCESS);
        }
        e.cq->Dispatch->NdkArmCq(e.cq, NDK_CQ_NOTIFY_ANY);
        settle();
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 0, hsi::CQE_RECV));
        wait_until([] { return false; }, 5000);
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 1, hsi::CQE_RECV));
        wait_until([] { return false; }, 5000);
        EXPECT_EQ(e.notes.calls, 0);  // two of three
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 2, hsi::CQE_RECV));
        ASSERT_TRUE(wait_until([&] { return e.notes.calls == 1; }, 5000));
        NDK_RESULT res[8];
        EXPECT_EQ(e.cq->Dispatch->NdkGetCqResults(e.cq, res, 8), 3u);
        // Count 4 bounded by a 10 us interval: one CQE notifies after the interval.
        ASSERT_EQ(e.cq->Dispatch->NdkControlCqInterruptModeration(e.cq, 10, 4), STATUS_SUCCESS);
        e.cq->Dispatch->NdkArmCq(e.cq, NDK_CQ_NOTIFY_ANY);
        settle();
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 3, hsi::CQE_RECV));
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        ASSERT_TRUE(wait_until([&] { return e.notes.calls == 2; }, 50000));
        EXPECT_GE(sc_core::sc_time_stamp() - t0, sc_core::sc_time(10, sc_core::SC_US));
        EXPECT_LT(sc_core::sc_time_stamp() - t0, sc_core::sc_time(15, sc_core::SC_US));
        // Moderation off (0, 0): the notification comes with the interrupt.
        ASSERT_EQ(e.cq->Dispatch->NdkControlCqInterruptModeration(e.cq, 0, 0), STATUS_SUCCESS);
        EXPECT_EQ(e.cq->Dispatch->NdkGetCqResults(e.cq, res, 8), 1u);
        e.cq->Dispatch->NdkArmCq(e.cq, NDK_CQ_NOTIFY_ANY);
        settle();
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 4, hsi::CQE_RECV));
        const sc_core::sc_time t1 = sc_core::sc_time_stamp();
        ASSERT_TRUE(wait_until([&] { return e.notes.calls == 3; }, 50000));
        EXPECT_LT(sc_core::sc_time_stamp() - t1, sc_core::sc_time(5, sc_core::SC_US));
    });
}

// A polling consumer sleeps until the next DMA write when a poll comes back empty
// (wait_for_completion_activity), so an empty poll must mean "nothing queued when the poll
// returned": a CQE landing while that poll writes the consumer doorbell (CPU time of a posted
// MMIO write) is returned by the same poll, not left for a wake-up that never comes.
TEST(NdkCq, EmptyPollSeesCqeLandingDuringItsDoorbell) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    fabric_cm cm;
    run([&] {
        endpoint a;
        a.open(n1, cm, params_for(1));
        force_connected(a.qp);
        NDK_SGE sge{};
        sge.Length = 8;
        const uint32_t cqn = n1.nic.cqs.begin()->first;
        for (uintptr_t i = 0; i < 2; ++i) {
            ASSERT_EQ(a.qp->Dispatch->NdkSend(a.qp, reinterpret_cast<void*>(0x100 + i), &sge, 1, 0),
                      STATUS_SUCCESS);
        }
        settle();
        // The first CQE also measures how long a NIC write takes to reach host memory.
        hsi::cqe e{};
        e.qpn = a.qpn();
        e.wqe_index = 0;
        e.opcode = hsi::CQE_SEND;
        const sc_core::sc_time issued = sc_core::sc_time_stamp();
        n1.nic.post_cqe(cqn, e);
        sc_core::wait(n1.mem.dma_write_event());
        const sc_core::sc_time latency = sc_core::sc_time_stamp() - issued;
        settle();
        NDK_RESULT r[4];
        // One CQE: below the report threshold, so the consumer index is not reported yet.
        ASSERT_EQ(a.cq->Dispatch->NdkGetCqResults(a.cq, r, 4), 1u);
        settle();
        ASSERT_EQ(n1.nic.cqs.at(cqn).consumer, 0u);
        // The next poll reads an empty ring after poll_ns, then reports the consumer index
        // (mmio_write_ns); the second CQE lands halfway through that doorbell write.
        const host_config& hc = n1.host.config();
        const sc_core::sc_time land(hc.poll_ns + hc.mmio_write_ns / 2, sc_core::SC_NS);
        ASSERT_GT(latency, land);
        e.wqe_index = 1;
        n1.nic.post_cqe(cqn, e);
        sc_core::wait(latency - land);
        sc_core::sc_time landed_at;
        sc_core::sc_spawn([&] {
            sc_core::wait(n1.mem.dma_write_event());
            landed_at = sc_core::sc_time_stamp();
        });
        const sc_core::sc_time start = sc_core::sc_time_stamp();
        const ULONG k = a.cq->Dispatch->NdkGetCqResults(a.cq, r, 4);
        // The CQE did land during the poll, after its (first) look at the ring.
        ASSERT_GT(landed_at, start + sc_core::sc_time(hc.poll_ns, sc_core::SC_NS));
        ASSERT_LT(landed_at, sc_core::sc_time_stamp());
        ASSERT_EQ(k, 1u);
        EXPECT_EQ(r[0].RequestContext, reinterpret_cast<void*>(0x101));
        settle();
        EXPECT_EQ(n1.nic.cqs.at(cqn).consumer, 1u);  // the empty poll's doorbell
    });
}

}  // namespace
}  // namespace rnic::ndk::test
