// SPDX-License-Identifier: Apache-2.0
// NDK PD family against a fake NIC: creation in both modes, exhaustion inline and asynchronous, the
// privileged token, parent/child close rules.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/ndk/ndk_bench.h"

namespace rnic::ndk::test {
namespace {

TEST(NdkPd, ParentClosePendsUntilChildrenClosed) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n1, net, params_for(1));
        std::vector<std::string> order;
        close_log pd_closed{0, &order, "pd"}, cq_closed{0, &order, "cq"},
            qp_closed{0, &order, "qp"};
        EXPECT_EQ(e.pd->Dispatch->NdkClosePd(&e.pd->Header, close_log::fn, &pd_closed),
                  STATUS_PENDING);
        EXPECT_EQ(e.cq->Dispatch->NdkCloseCq(&e.cq->Header, close_log::fn, &cq_closed),
                  STATUS_PENDING);
        EXPECT_TRUE(n1.nic.commands_of(hsi::CMD_DESTROY_PD).empty());
        // Closing the QP (synchronous mode: inline) releases both parents.
        EXPECT_EQ(e.qp->Dispatch->NdkCloseQp(&e.qp->Header, close_log::fn, &qp_closed),
                  STATUS_SUCCESS);
        EXPECT_EQ(qp_closed.calls, 0);  // inline success: no callback
        EXPECT_EQ(order, (std::vector<std::string>{"pd", "cq"}));
        EXPECT_EQ(n1.nic.commands_of(hsi::CMD_DESTROY_QP).size(), 1u);
        EXPECT_EQ(n1.nic.commands_of(hsi::CMD_DESTROY_PD).size(), 1u);
        EXPECT_EQ(n1.nic.commands_of(hsi::CMD_DESTROY_CQ).size(), 1u);
        close_adapter(e.adapter);  // returns: nothing left open
    });
}

// CreatePd in both creation modes: synchronous returns the object (no create completion),
// asynchronous returns PENDING and delivers it through the create completion.
TEST(NdkPd, CreateSyncAndAsync) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", async_cfg(), ctx);
    fake_network net;
    run([&] {
        NDK_ADAPTER* s = nullptr;
        NDK_ADAPTER* as = nullptr;
        ASSERT_EQ(open_on(net, n1, params_for(1), &s), STATUS_SUCCESS);
        ASSERT_EQ(open_on(net, n2, params_for(2), &as), STATUS_SUCCESS);
        create_log sl, al;
        NDK_PD* pd = nullptr;
        ASSERT_EQ(s->Dispatch->NdkCreatePd(s, create_log::fn, &sl, &pd), STATUS_SUCCESS);
        ASSERT_NE(pd, nullptr);
        EXPECT_EQ(sl.calls, 0);
        EXPECT_EQ(pd->Header.ObjectType, NdkObjectTypePd);
        EXPECT_EQ(n1.nic.commands_of(hsi::CMD_CREATE_PD).size(), 1u);
        NDK_PD* apd = nullptr;
        ASSERT_EQ(as->Dispatch->NdkCreatePd(as, create_log::fn, &al, &apd), STATUS_PENDING);
        EXPECT_EQ(al.calls, 0);
        ASSERT_TRUE(wait_until([&] { return al.calls == 1; }));
        EXPECT_EQ(al.status, STATUS_SUCCESS);
        ASSERT_NE(al.object, nullptr);
        EXPECT_EQ(al.object->ObjectType, NdkObjectTypePd);
        apd = reinterpret_cast<NDK_PD*>(al.object);
        // Closing: inline in synchronous mode, PENDING + close completion in asynchronous mode.
        close_log sc, ac;
        EXPECT_EQ(pd->Dispatch->NdkClosePd(&pd->Header, close_log::fn, &sc), STATUS_SUCCESS);
        EXPECT_EQ(sc.calls, 0);
        EXPECT_EQ(apd->Dispatch->NdkClosePd(&apd->Header, close_log::fn, &ac), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return ac.calls == 1; }));
        EXPECT_EQ(n2.nic.commands_of(hsi::CMD_DESTROY_PD).size(), 1u);
        close_adapter(s);
        close_adapter(as);
    });
}

// INSUFFICIENT_RESOURCES inline (no PD number left) and asynchronously (the NIC refuses).
TEST(NdkPd, ExhaustionInlineAndAsync) {
    hw::sim_context ctx;
    node n("n1", async_cfg(), ctx);
    fake_network net;
    run([&] {
        adapter_params p = params_for(1);
        p.limits.max_pds = 2;  // one usable PDN
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_on(net, n, p, &a), STATUS_SUCCESS);
        n.nic.fail[hsi::CMD_CREATE_PD] = hsi::CMD_NO_RESOURCES;
        create_log refused;
        NDK_PD* pd = nullptr;
        ASSERT_EQ(a->Dispatch->NdkCreatePd(a, create_log::fn, &refused, &pd), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return refused.calls == 1; }));
        EXPECT_EQ(refused.status, STATUS_INSUFFICIENT_RESOURCES);
        EXPECT_EQ(refused.object, nullptr);
        n.nic.fail.clear();
        create_log ok;
        pd = created(a->Dispatch->NdkCreatePd(a, create_log::fn, &ok, &pd), pd, ok);
        ASSERT_NE(pd, nullptr);  // the refused PD's number was given back
        create_log none;
        NDK_PD* pd2 = nullptr;
        EXPECT_EQ(a->Dispatch->NdkCreatePd(a, create_log::fn, &none, &pd2),
                  STATUS_INSUFFICIENT_RESOURCES);
        settle();
        EXPECT_EQ(none.calls, 0);  // an inline failure has no callback
    });
}

// GetPrivilegedMemoryRegionToken: the same token for every PD, never a registered key.
TEST(NdkPd, PrivilegedTokenIsNotARegistrationKey) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n, net, params_for(1));
        NDK_PD* pd2 = nullptr;
        ASSERT_EQ(e.adapter->Dispatch->NdkCreatePd(e.adapter, create_log::fn, nullptr, &pd2),
                  STATUS_SUCCESS);
        UINT32 t1 = 0, t2 = 0;
        e.pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(e.pd, &t1);
        pd2->Dispatch->NdkGetPrivilegedMemoryRegionToken(pd2, &t2);
        EXPECT_EQ(t1, hsi::PRIVILEGED_KEY);
        EXPECT_EQ(t2, t1);
        host_buffer b(n.host, 4096);
        NDK_MR* mr = nullptr;
        ASSERT_EQ(e.pd->Dispatch->NdkCreateMr(e.pd, FALSE, create_log::fn, nullptr, &mr),
                  STATUS_SUCCESS);
        ASSERT_EQ(mr->Dispatch->NdkRegisterMr(mr, b.mdl, 4096, NDK_MR_FLAG_ALLOW_REMOTE_WRITE,
                                              request_log::fn, nullptr),
                  STATUS_SUCCESS);
        EXPECT_NE(mr->Dispatch->NdkGetLocalTokenFromMr(mr), t1);
        EXPECT_NE(mr->Dispatch->NdkGetRemoteTokenFromMr(mr), t1);
    });
}

}  // namespace
}  // namespace rnic::ndk::test
