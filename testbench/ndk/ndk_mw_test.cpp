// SPDX-License-Identifier: Apache-2.0
// NDK MW family against a fake NIC: CreateMw, Bind rights, GetRemoteTokenFromMw, Invalidate, and
// the fast-register / SendAndInvalidate requests around windows.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/ndk/ndk_bench.h"

namespace rnic::ndk::test {
namespace {

TEST(NdkMw, MemoryWindowsFastRegisterInvalidate) {
    hw::sim_context ctx;
    node n1("n1", sync_cfg(), ctx);
    node n2("n2", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint a, b;
        a.open(n1, net, params_for(1));
        b.open(n2, net, params_for(2));
        // Before the connection: bind / fast-register / invalidate are refused.
        NDK_MR* mr = nullptr;
        ASSERT_EQ(a.pd->Dispatch->NdkCreateMr(a.pd, FALSE, create_log::fn, nullptr, &mr),
                  STATUS_SUCCESS);
        NDK_MW* mw = nullptr;
        ASSERT_EQ(a.pd->Dispatch->NdkCreateMw(a.pd, create_log::fn, nullptr, &mw), STATUS_SUCCESS);
        const auto mwc = n1.nic.commands_of(hsi::CMD_CREATE_MW).at(0).u.obj;
        EXPECT_EQ(mw->Dispatch->NdkGetRemoteTokenFromMw(mw), mwc.handle);
        EXPECT_EQ(a.qp->Dispatch->NdkInvalidate(a.qp, nullptr, &mw->Header, 0),
                  STATUS_CONNECTION_INVALID);
        force_connected(a.qp);
        force_connected(b.qp);

        auto* buf = static_cast<uint8_t*>(n1.host.alloc(8192));
        MDL* mdl = n1.host.build_mdl(buf, 8192);
        ASSERT_EQ(mr->Dispatch->NdkRegisterMr(mr, mdl, 8192, NDK_MR_FLAG_ALLOW_LOCAL_WRITE,
                                              request_log::fn, nullptr),
                  STATUS_SUCCESS);
        ASSERT_EQ(
            a.qp->Dispatch->NdkBind(a.qp, reinterpret_cast<void*>(0x11), mr, mw, buf + 100, 1000,
                                    NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
            STATUS_SUCCESS);
        settle();
        auto w = n1.nic.sq_slot(get_qp_number(a.qp), 0, 128);
        EXPECT_EQ(w[0], hsi::WQE_BIND_MW);
        EXPECT_EQ(w[3], 2);  // ctrl + bind segment
        EXPECT_EQ(at<uint32_t>(w, 64), mwc.handle);
        EXPECT_EQ(at<uint32_t>(w, 68), mr->Dispatch->NdkGetLocalTokenFromMr(mr));
        EXPECT_EQ(at<uint64_t>(w, 72), reinterpret_cast<uint64_t>(buf + 100));
        EXPECT_EQ(at<uint64_t>(w, 80), 1000u);
        EXPECT_EQ(at<uint32_t>(w, 88) & (hsi::ACCESS_REMOTE_READ | hsi::ACCESS_REMOTE_WRITE),
                  hsi::ACCESS_REMOTE_READ | hsi::ACCESS_REMOTE_WRITE);

        // Fast register: capacity and remote access come from InitializeFastRegisterMr.
        NDK_MR* fr = nullptr;
        ASSERT_EQ(a.pd->Dispatch->NdkCreateMr(a.pd, TRUE, create_log::fn, nullptr, &fr),
                  STATUS_SUCCESS);
        EXPECT_EQ(fr->Dispatch->NdkInitializeFastRegisterMr(fr, 0, FALSE, request_log::fn, nullptr),
                  STATUS_IMPLEMENTATION_LIMIT);
        ASSERT_EQ(fr->Dispatch->NdkInitializeFastRegisterMr(fr, 4, FALSE, request_log::fn, nullptr),
                  STATUS_SUCCESS);
        const auto frc = n1.nic.commands_of(hsi::CMD_CREATE_MR).back().u.mr;
        EXPECT_EQ(frc.page_count, 4u);
        EXPECT_TRUE(frc.access & hsi::ACCESS_FAST_REG);
        EXPECT_FALSE(frc.access & hsi::ACCESS_REMOTE_ACCESS_OK);
        NDK_LOGICAL_ADDRESS pages[2];
        pages[0].QuadPart = static_cast<LONGLONG>(n1.host.phys(buf));
        pages[1].QuadPart = static_cast<LONGLONG>(n1.host.phys(buf + 4096));
        EXPECT_EQ(a.qp->Dispatch->NdkFastRegister(a.qp, nullptr, fr, 2, pages, 0, 8192,
                                                  reinterpret_cast<void*>(0x10000),
                                                  NDK_OP_FLAG_ALLOW_REMOTE_READ),
                  STATUS_ACCESS_VIOLATION);
        EXPECT_EQ(a.qp->Dispatch->NdkFastRegister(a.qp, nullptr, fr, 5, pages, 0, 8192,
                                                  reinterpret_cast<void*>(0x10000), 0),
                  STATUS_INVALID_PARAMETER);
        ASSERT_EQ(a.qp->Dispatch->NdkFastRegister(a.qp, reinterpret_cast<void*>(0x22), fr, 2, pages,
                                                  16, 8000, reinterpret_cast<void*>(0x10010),
                                                  NDK_OP_FLAG_ALLOW_LOCAL_WRITE),
                  STATUS_SUCCESS);
        settle();
        w = n1.nic.sq_slot(get_qp_number(a.qp), 1, 128);
        EXPECT_EQ(w[0], hsi::WQE_FAST_REG);
        const uint32_t new_key = at<uint32_t>(w, 64);
        EXPECT_EQ(new_key, fr->Dispatch->NdkGetLocalTokenFromMr(fr));
        EXPECT_EQ(new_key >> 8, frc.key >> 8);
        EXPECT_NE(new_key, frc.key);
        EXPECT_EQ(at<uint64_t>(w, 72), 0x10010u);
        EXPECT_EQ(at<uint64_t>(w, 80), 8000u);
        EXPECT_EQ(at<uint32_t>(w, 96), 2u);
        EXPECT_EQ(at<uint32_t>(w, 100), 16u);
        uint64_t listed[2];
        n1.mem.read(at<uint64_t>(w, 88), listed, sizeof(listed));
        EXPECT_EQ(listed[0], n1.host.phys(buf));
        EXPECT_EQ(listed[1], n1.host.phys(buf + 4096));
        // Invalidate and SendAndInvalidate carry the key.
        ASSERT_EQ(a.qp->Dispatch->NdkInvalidate(a.qp, nullptr, &fr->Header, 0), STATUS_SUCCESS);
        ASSERT_EQ(a.qp->Dispatch->NdkSendAndInvalidate(a.qp, nullptr, nullptr, 0, 0, 0xABCD01),
                  STATUS_SUCCESS);
        settle();
        w = n1.nic.sq_slot(get_qp_number(a.qp), 2, 64);
        EXPECT_EQ(w[0], hsi::WQE_LOCAL_INV);
        EXPECT_EQ(at<uint32_t>(w, 12), new_key);
        w = n1.nic.sq_slot(get_qp_number(a.qp), 3, 64);
        EXPECT_EQ(w[0], hsi::WQE_SEND_INV);
        EXPECT_EQ(at<uint32_t>(w, 12), 0xABCD01u);
        // The completion types of these operations come from the driver's shadow.
        const uint32_t cqn = n1.nic.cqs.begin()->first;
        for (uint16_t i = 0; i < 4; ++i) {
            hsi::cqe e{};
            e.qpn = get_qp_number(a.qp);
            e.wqe_index = i;
            e.opcode = hsi::CQE_SEND;
            n1.nic.post_cqe(cqn, e);
        }
        settle();
        NDK_RESULT_EX r[4]{};
        ASSERT_EQ(a.cq->Dispatch->NdkGetCqResultsEx(a.cq, r, 4), 4u);
        EXPECT_EQ(r[0].Type, NdkOperationTypeBind);
        EXPECT_EQ(r[0].RequestContext, reinterpret_cast<void*>(0x11));
        EXPECT_EQ(r[1].Type, NdkOperationTypeFastRegister);
        EXPECT_EQ(r[2].Type, NdkOperationTypeInvalidate);
        EXPECT_EQ(r[3].Type, NdkOperationTypeSend);
    });
}

// CreateMw in asynchronous mode; Bind rights: remote write on a window needs local write on the
// region -> ACCESS_VIOLATION inline (after the deferred WQEs before it reached the NIC, no CQE);
// remote read only is fine; the remote token is readable right after Bind returns; Invalidate of
// a window carries the window's key.
TEST(NdkMw, BindRightsAsyncCreateAndInvalidate) {
    hw::sim_context ctx;
    node n("n1", async_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n, net, params_for(1));
        force_connected(e.qp);
        create_log wl;
        NDK_MW* mw = nullptr;
        ASSERT_EQ(e.pd->Dispatch->NdkCreateMw(e.pd, create_log::fn, &wl, &mw), STATUS_PENDING);
        mw = created(STATUS_PENDING, mw, wl);
        ASSERT_NE(mw, nullptr);
        EXPECT_EQ(mw->Header.ObjectType, NdkObjectTypeMw);
        const UINT32 key = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);
        EXPECT_EQ(key, n.nic.commands_of(hsi::CMD_CREATE_MW).at(0).u.obj.handle);
        host_buffer b(n.host, 8192);
        NDK_MR* ro = nullptr;
        ASSERT_EQ(e.pd->Dispatch->NdkCreateMr(e.pd, FALSE, create_log::fn, nullptr, &ro),
                  STATUS_SUCCESS);
        request_log reg;
        ASSERT_EQ(
            finished(ro->Dispatch->NdkRegisterMr(ro, b.mdl, 8192, NDK_MR_FLAG_ALLOW_REMOTE_READ,
                                                 request_log::fn, &reg),
                     reg),
            STATUS_SUCCESS);
        NDK_SGE sge{};
        ASSERT_EQ(e.qp->Dispatch->NdkSend(e.qp, nullptr, &sge, 0, NDK_OP_FLAG_DEFER),
                  STATUS_SUCCESS);
        EXPECT_EQ(e.qp->Dispatch->NdkBind(e.qp, nullptr, ro, mw, b.data, 4096,
                                          NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
                  STATUS_ACCESS_VIOLATION);
        settle();
        EXPECT_EQ(n.nic.values(hsi::REG_SQ_DOORBELL),
                  std::vector<uint64_t>{e.qpn() | (1ull << 32)});  // the deferred send only
        ASSERT_EQ(e.qp->Dispatch->NdkBind(e.qp, reinterpret_cast<void*>(0x5), ro, mw, b.data + 64,
                                          4096, NDK_OP_FLAG_ALLOW_REMOTE_READ),
                  STATUS_SUCCESS);
        const UINT32 bound = mw->Dispatch->NdkGetRemoteTokenFromMw(mw);
        auto w = n.nic.sq_slot(e.qpn(), 1, 128);
        EXPECT_EQ(w[0], hsi::WQE_BIND_MW);
        EXPECT_EQ(at<uint32_t>(w, 64), bound);
        EXPECT_EQ(at<uint32_t>(w, 68), ro->Dispatch->NdkGetLocalTokenFromMr(ro));
        EXPECT_EQ(at<uint32_t>(w, 88), static_cast<uint32_t>(hsi::ACCESS_REMOTE_READ));
        ASSERT_EQ(e.qp->Dispatch->NdkInvalidate(e.qp, reinterpret_cast<void*>(0x6), &mw->Header,
                                                NDK_OP_FLAG_SILENT_SUCCESS),
                  STATUS_SUCCESS);
        w = n.nic.sq_slot(e.qpn(), 2, 64);
        EXPECT_EQ(w[0], hsi::WQE_LOCAL_INV);
        EXPECT_EQ(w[1] & hsi::WQE_FLAG_SIGNALED, 0);
        EXPECT_EQ(at<uint32_t>(w, 12), bound);
        // A failed bind completes with an error CQE (the hardware check), typed Bind.
        const uint32_t cqn = n.nic.cqs.begin()->first;
        n.nic.post_cqe(cqn, make_cqe(e.qpn(), 1, hsi::CQE_BIND_MW, hsi::CQE_MW_BIND_ERR));
        settle();
        NDK_RESULT_EX r{};
        ASSERT_EQ(e.cq->Dispatch->NdkGetCqResultsEx(e.cq, &r, 1), 1u);
        EXPECT_EQ(r.Type, NdkOperationTypeBind);
        EXPECT_EQ(r.Status, STATUS_ACCESS_VIOLATION);
        EXPECT_EQ(r.RequestContext, reinterpret_cast<void*>(0x5));
        // Closing the window goes through the command queue.
        close_log closed;
        EXPECT_EQ(mw->Dispatch->NdkCloseMw(&mw->Header, close_log::fn, &closed), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return closed.calls == 1; }));
        EXPECT_EQ(n.nic.commands.back().opcode, hsi::CMD_DESTROY_MW);
    });
}

}  // namespace
}  // namespace rnic::ndk::test
