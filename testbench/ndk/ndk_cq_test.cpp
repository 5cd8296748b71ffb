// SPDX-License-Identifier: Apache-2.0
// NDK CQ family against a fake NIC: CQE -> NDK_RESULT(_EX) mapping, ArmCq (any / solicited / errors
// and their combinations), notifications, overrun, ResizeCq, interrupt moderation. Against a real
// NIC (scenario node): CQE write errors and the device fatal error (STATUS_INTERNAL_ERROR), and
// moderation done by the NIC (rnic.cq.interrupt_moderation, rnic.cq.moderation_timers).
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/ndk/ndk_bench.h"
#include "testbench/scenario/node.h"
#include "testbench/scenario/scenario_config.h"
#include "tlm/ethernet/eth_link.h"

namespace rnic::ndk::test {
namespace {

// The final status of a create in either mode (PENDING waits for the completion in `log`).
NTSTATUS finished_create(NTSTATUS st, create_log& log) {
    if (st != STATUS_PENDING) {
        return st;
    }
    if (!wait_until([&] { return log.calls == 1; })) {
        return STATUS_PENDING;
    }
    return log.status;
}

// Completions: CQE -> NDK_RESULT mapping, unsignalled retirement, phase wrap, consumer
// doorbells, arming and notifications.
TEST(NdkCq, CompletionsMapAndNotify) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint a, b;
        a.open(n1, net, params_for(1));
        b.open(n2, net, params_for(2));
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
    fake_network net;
    run([&] {
        endpoint a, b;
        a.open(n1, net, params_for(1));
        b.open(n2, net, params_for(2));
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
    fake_network net;
    run([&] {
        adapter_params p = params_for(1);
        p.limits.max_cqs = 2;  // one usable CQN
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_on(net, n, p, &a), STATUS_SUCCESS);
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
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n, net, params_for(1));
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
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n, net, params_for(1));
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
    fake_network net;
    run([&] {
        endpoint e;
        const adapter_params p = params_for(1);
        e.open(n, net, p, 64, 8);
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
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n, net, params_for(1), 64, 16);
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
    fake_network net;
    run([&] {
        endpoint a;
        a.open(n1, net, params_for(1));
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

// ---------------------------------------------------------------------------------------------
// Against the real NIC: one scenario node (host, PCIe, NIC) with `rnic` overrides.
// ---------------------------------------------------------------------------------------------
struct real_node {
    hw::sim_context ctx;
    scenario::scenario_config cfg;
    fabric::eth_link* link;
    scenario::node* n;
    explicit real_node(const nlohmann::json& j = nlohmann::json::object())
        : cfg(scenario::parse_scenario(j)) {
        link = new fabric::eth_link("link", cfg.topology.link, ctx);
        n = new scenario::node("node0", 0, cfg, *link, ctx);  // lives until the process ends
    }
    adapter_params params() const {
        const auto& nc = cfg.topology.nodes[0];
        adapter_params p;
        p.mac = nc.mac;
        p.ip = nc.ip;
        p.limits = cfg.rnic.limits;
        p.default_mtu = nc.mtu;
        return p;
    }
};

// Adapter, PD and CQs/QPs on the real NIC, created synchronously or not (scenario default: async).
struct real_objects {
    NDK_ADAPTER* adapter = nullptr;
    NDK_PD* pd = nullptr;
    void open(real_node& r) {
        ASSERT_EQ(open_adapter(r.n->host, r.params(), &adapter), STATUS_SUCCESS);
        create_log l;
        NDK_PD* out = nullptr;
        pd = created(adapter->Dispatch->NdkCreatePd(adapter, create_log::fn, &l, &out), out, l);
        ASSERT_NE(pd, nullptr);
    }
    NDK_CQ* cq(ULONG depth, notify_log* notes) {
        create_log l;
        NDK_CQ* out = nullptr;
        return created(adapter->Dispatch->NdkCreateCq(adapter, depth, notify_log::fn, notes,
                                                      nullptr, create_log::fn, &l, &out),
                       out, l);
    }
    NDK_QP* qp(NDK_CQ* send, NDK_CQ* recv) {
        create_log l;
        NDK_QP* out = nullptr;
        return created(pd->Dispatch->NdkCreateQp(pd, recv, send, this, 8, 8, 2, 2, 0,
                                                 create_log::fn, &l, &out),
                       out, l);
    }
};

// The bus address range of a CQ's ring (what the test takes away from the NIC).
std::pair<uint64_t, uint64_t> ring_of(real_node& r, NDK_CQ* cq) {
    provider::cq_impl* c = provider::impl(cq);
    return {r.n->host.phys(c->ring), (uint64_t{1} << c->log_size) * sizeof(hsi::cqe)};
}

// A CQE write that fails on PCIe (the host released the ring's IOMMU mapping): the NIC kills the
// CQ (EVENT_CQ_ERROR, DMA syndrome) and moves its QPs to ERROR; the armed notification gets
// STATUS_INTERNAL_ERROR once, an unarmed CQ reports it to the next ArmCq, and GetCqResults
// returns nothing more.
TEST(NdkCq, CqeWriteErrorIsInternalErrorAndKillsCqAndQps) {
    real_node r;
    hw::nic& nic = r.n->nic;
    run([&] {
        real_objects o;
        o.open(r);
        notify_log armed_notes, unarmed_notes, other_notes;
        NDK_CQ* armed = o.cq(16, &armed_notes);
        NDK_CQ* unarmed = o.cq(16, &unarmed_notes);
        NDK_CQ* other = o.cq(16, &other_notes);
        ASSERT_NE(armed, nullptr);
        ASSERT_NE(unarmed, nullptr);
        ASSERT_NE(other, nullptr);
        NDK_QP* a = o.qp(armed, armed);    // flushed: its receive CQE hits the dead ring
        NDK_QP* b = o.qp(other, armed);    // not touched: follows the armed CQ into ERROR
        NDK_QP* c = o.qp(other, unarmed);  // flushed: kills the unarmed CQ
        ASSERT_NE(c, nullptr);
        NDK_SGE sge{};
        ASSERT_EQ(a->Dispatch->NdkReceive(a, reinterpret_cast<void*>(1), &sge, 0), STATUS_SUCCESS);
        ASSERT_EQ(c->Dispatch->NdkReceive(c, reinterpret_cast<void*>(2), &sge, 0), STATUS_SUCCESS);
        armed->Dispatch->NdkArmCq(armed, NDK_CQ_NOTIFY_ANY);
        settle();
        const auto ra = ring_of(r, armed);
        const auto ru = ring_of(r, unarmed);
        r.n->pcie.iommu_unmap(ra.first, ra.second);
        r.n->pcie.iommu_unmap(ru.first, ru.second);
        a->Dispatch->NdkFlush(a);
        c->Dispatch->NdkFlush(c);
        ASSERT_TRUE(wait_until([&] { return armed_notes.calls == 1; }, 100000));
        EXPECT_EQ(armed_notes.status, STATUS_INTERNAL_ERROR);
        settle();
        EXPECT_EQ(unarmed_notes.calls, 0);
        const uint32_t qpn_b = get_qp_number(b);
        EXPECT_EQ(nic.contexts().qp(qpn_b)->state, hsi::QPS_ERROR);
        EXPECT_EQ(nic.completions().get_stats().cqe_write_errors, 2u);
        EXPECT_EQ(nic.completions().get_stats().overruns, 0u);
        NDK_RESULT res[4];
        EXPECT_EQ(armed->Dispatch->NdkGetCqResults(armed, res, 4), 0u);
        // The unarmed CQ: the next arm hears about it (from a DPC), once.
        unarmed->Dispatch->NdkArmCq(unarmed, NDK_CQ_NOTIFY_SOLICITED);
        ASSERT_TRUE(wait_until([&] { return unarmed_notes.calls == 1; }));
        EXPECT_EQ(unarmed_notes.status, STATUS_INTERNAL_ERROR);
        armed->Dispatch->NdkArmCq(armed, NDK_CQ_NOTIFY_ANY);
        unarmed->Dispatch->NdkArmCq(unarmed, NDK_CQ_NOTIFY_ANY);
        wait_until([] { return false; }, 5000);
        EXPECT_EQ(armed_notes.calls, 1);
        EXPECT_EQ(unarmed_notes.calls, 1);
        EXPECT_EQ(other_notes.calls, 0);  // the third CQ is alive and quiet
        EXPECT_FALSE(nic.contexts().cq(provider::impl(other)->cqn)->error);
    });
}

// NIC catastrophic error (test hook): every CQ and SRQ gets STATUS_INTERNAL_ERROR (armed: at
// once; unarmed: at the next arm), posts fail (sends: CONNECTION_INVALID, receives:
// DEVICE_NOT_READY) and creates fail with STATUS_INTERNAL_ERROR (the NIC answers every command
// CMD_DEVICE_FATAL).
TEST(NdkCq, DeviceFatalErrorReachesEveryCqAndSrqAndFailsCreatesAndPosts) {
    real_node r;
    hw::nic& nic = r.n->nic;
    run([&] {
        real_objects o;
        o.open(r);
        notify_log armed_notes, unarmed_notes, srq_notes;
        NDK_CQ* armed = o.cq(16, &armed_notes);
        NDK_CQ* unarmed = o.cq(16, &unarmed_notes);
        NDK_QP* qp = o.qp(armed, unarmed);
        ASSERT_NE(qp, nullptr);
        force_connected(qp);
        create_log sl;
        NDK_SRQ* srq_out = nullptr;
        NDK_SRQ* srq =
            created(o.pd->Dispatch->NdkCreateSrq(o.pd, 8, 1, 2, notify_log::fn, &srq_notes, nullptr,
                                                 create_log::fn, &sl, &srq_out),
                    srq_out, sl);
        ASSERT_NE(srq, nullptr);
        NDK_SGE sge{};
        for (int i = 0; i < 4; ++i) {  // above the threshold: armed, quiet
            ASSERT_EQ(srq->Dispatch->NdkSrqReceive(srq, nullptr, &sge, 0), STATUS_SUCCESS);
        }
        armed->Dispatch->NdkArmCq(armed, NDK_CQ_NOTIFY_ERRORS);
        settle();
        nic.firmware().inject_fatal_error();
        ASSERT_TRUE(wait_until([&] { return armed_notes.calls == 1 && srq_notes.calls == 1; }));
        EXPECT_EQ(armed_notes.status, STATUS_INTERNAL_ERROR);
        EXPECT_EQ(srq_notes.status, STATUS_INTERNAL_ERROR);
        EXPECT_EQ(unarmed_notes.calls, 0);
        EXPECT_EQ(nic.contexts().qp(get_qp_number(qp))->state, hsi::QPS_ERROR);
        unarmed->Dispatch->NdkArmCq(unarmed, NDK_CQ_NOTIFY_ANY);
        ASSERT_TRUE(wait_until([&] { return unarmed_notes.calls == 1; }));
        EXPECT_EQ(unarmed_notes.status, STATUS_INTERNAL_ERROR);
        // Posts.
        EXPECT_EQ(qp->Dispatch->NdkSend(qp, nullptr, &sge, 0, 0), STATUS_CONNECTION_INVALID);
        EXPECT_EQ(qp->Dispatch->NdkReceive(qp, nullptr, &sge, 0), STATUS_DEVICE_NOT_READY);
        EXPECT_EQ(srq->Dispatch->NdkSrqReceive(srq, nullptr, &sge, 0), STATUS_DEVICE_NOT_READY);
        // Creates: the NIC refuses every command.
        create_log pl;
        NDK_PD* pd2 = nullptr;
        EXPECT_EQ(finished_create(
                      o.adapter->Dispatch->NdkCreatePd(o.adapter, create_log::fn, &pl, &pd2), pl),
                  STATUS_INTERNAL_ERROR);
        create_log cl;
        NDK_CQ* cq2 = nullptr;
        EXPECT_EQ(
            finished_create(o.adapter->Dispatch->NdkCreateCq(o.adapter, 8, nullptr, nullptr,
                                                             nullptr, create_log::fn, &cl, &cq2),
                            cl),
            STATUS_INTERNAL_ERROR);
        EXPECT_EQ(nic.firmware().get_stats().by_status[hsi::CMD_DEVICE_FATAL], 2u);
        // Later arms do not report again.
        armed->Dispatch->NdkArmCq(armed, NDK_CQ_NOTIFY_ANY);
        wait_until([] { return false; }, 5000);
        EXPECT_EQ(armed_notes.calls, 1);
        EXPECT_EQ(srq_notes.calls, 1);
    });
}

// Moderation in the NIC: a count releases the notification on the count-th CQE, a period after
// ModerationInterval us; rnic.cq.moderation_timers limits the CQs with a period at once
// (INSUFFICIENT_RESOURCES; turning moderation off frees the timer).
TEST(NdkCq, ModerationInTheNicWithLimitedTimers) {
    real_node r(nlohmann::json::parse(R"({"rnic": {"cq": {"moderation_timers": 1}}})"));
    hw::nic& nic = r.n->nic;
    run([&] {
        real_objects o;
        o.open(r);
        notify_log n1, n2;
        NDK_CQ* cq1 = o.cq(16, &n1);
        NDK_CQ* cq2 = o.cq(16, &n2);
        ASSERT_NE(cq2, nullptr);
        NDK_ADAPTER_INFO info{};
        ULONG size = sizeof(info);
        ASSERT_EQ(o.adapter->Dispatch->NdkQueryAdapterInfo(o.adapter, &info, &size),
                  STATUS_SUCCESS);
        EXPECT_NE(info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, 0u);
        EXPECT_EQ(cq1->Dispatch->NdkControlCqInterruptModeration(cq1, 20, MAXULONG),
                  STATUS_SUCCESS);
        EXPECT_EQ(nic.completions().moderation_timers_in_use(), 1u);
        EXPECT_EQ(cq2->Dispatch->NdkControlCqInterruptModeration(cq2, 20, MAXULONG),
                  STATUS_INSUFFICIENT_RESOURCES);
        EXPECT_EQ(cq2->Dispatch->NdkControlCqInterruptModeration(cq2, MAXULONG, 2),
                  STATUS_SUCCESS);  // count only: no timer needed
        EXPECT_EQ(cq2->Dispatch->NdkControlCqInterruptModeration(cq2, MAXULONG, MAXULONG),
                  STATUS_INVALID_PARAMETER_MIX);
        // The period: one flushed receive, the notification 20 us after its CQE.
        NDK_QP* qp = o.qp(cq1, cq1);
        NDK_SGE sge{};
        ASSERT_EQ(qp->Dispatch->NdkReceive(qp, nullptr, &sge, 0), STATUS_SUCCESS);
        cq1->Dispatch->NdkArmCq(cq1, NDK_CQ_NOTIFY_ANY);
        settle();
        qp->Dispatch->NdkFlush(qp);
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        ASSERT_TRUE(wait_until([&] { return n1.calls == 1; }, 100000));
        EXPECT_GE(sc_core::sc_time_stamp() - t0, sc_core::sc_time(20, sc_core::SC_US));
        EXPECT_LT(sc_core::sc_time_stamp() - t0, sc_core::sc_time(26, sc_core::SC_US));
        EXPECT_EQ(n1.status, STATUS_SUCCESS);
        EXPECT_EQ(nic.completions().get_stats().moderation_timeouts, 1u);
        // Off (0, 0) frees the timer for the other CQ.
        EXPECT_EQ(cq1->Dispatch->NdkControlCqInterruptModeration(cq1, 0, 0), STATUS_SUCCESS);
        EXPECT_EQ(cq2->Dispatch->NdkControlCqInterruptModeration(cq2, 20, MAXULONG),
                  STATUS_SUCCESS);
        EXPECT_EQ(nic.contexts().cq(provider::impl(cq2)->cqn)->moderation_period_us, 20u);
    });
}

// rnic.cq.interrupt_moderation false: adapter flag 0x4 clear, the call STATUS_NOT_SUPPORTED.
TEST(NdkCq, ModerationAbsentWhenTheNicHasNone) {
    real_node r(nlohmann::json::parse(R"({"rnic": {"cq": {"interrupt_moderation": false}}})"));
    run([&] {
        real_objects o;
        o.open(r);
        notify_log n1;
        NDK_CQ* cq = o.cq(16, &n1);
        ASSERT_NE(cq, nullptr);
        NDK_ADAPTER_INFO info{};
        ULONG size = sizeof(info);
        ASSERT_EQ(o.adapter->Dispatch->NdkQueryAdapterInfo(o.adapter, &info, &size),
                  STATUS_SUCCESS);
        EXPECT_EQ(info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, 0u);
        EXPECT_NE(info.AdapterFlags & NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, 0u);
        EXPECT_EQ(cq->Dispatch->NdkControlCqInterruptModeration(cq, 20, MAXULONG),
                  STATUS_NOT_SUPPORTED);
        EXPECT_EQ(cq->Dispatch->NdkControlCqInterruptModeration(cq, 0, 0), STATUS_NOT_SUPPORTED);
    });
}

}  // namespace
}  // namespace rnic::ndk::test
