// SPDX-License-Identifier: Apache-2.0
// NDK MR family against a fake NIC: RegisterMr from MDLs (and chains), DeregisterMr, tokens,
// CreateMr for fast registration, InitializeFastRegisterMr limits and RemoteAccess,
// FastRegister.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/ndk/ndk_bench.h"

namespace rnic::ndk::test {
namespace {

TEST(NdkMr, RegisterMrBuildsPageList) {
    hw::sim_context ctx;
    node n1("n1", host_config{}, ctx);  // async: RegisterMr pends
    fake_network net;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_on(net, n1, params_for(1), &a), STATUS_SUCCESS);
        create_log pl;
        NDK_PD* pd = nullptr;
        ASSERT_EQ(a->Dispatch->NdkCreatePd(a, create_log::fn, &pl, &pd), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return pl.calls == 1; }));
        pd = reinterpret_cast<NDK_PD*>(pl.object);
        NDK_MR* mr = nullptr;
        ASSERT_EQ(pd->Dispatch->NdkCreateMr(pd, FALSE, create_log::fn, nullptr, &mr),
                  STATUS_SUCCESS);
        // 3 pages + 100 bytes starting 256 bytes into a page: 4 pages spanned.
        auto* buf = static_cast<uint8_t*>(n1.host.alloc(5 * 4096));
        const size_t len = 3 * 4096 + 100;
        MDL* mdl = n1.host.build_mdl(buf + 256, len);
        request_log reg;
        ASSERT_EQ(mr->Dispatch->NdkRegisterMr(
                      mr, mdl, len, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_READ,
                      request_log::fn, &reg),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return reg.calls == 1; }));
        EXPECT_EQ(reg.status, STATUS_SUCCESS);
        const auto cmds = n1.nic.commands_of(hsi::CMD_CREATE_MR);
        ASSERT_EQ(cmds.size(), 1u);
        const auto& m = cmds[0].u.mr;
        EXPECT_EQ(m.va, reinterpret_cast<uint64_t>(buf + 256));
        EXPECT_EQ(m.length, len);
        EXPECT_EQ(m.page_count, 4u);
        EXPECT_EQ(m.first_byte_offset, 256u);
        EXPECT_EQ(m.access & (hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_READ |
                              hsi::ACCESS_REMOTE_WRITE),
                  hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_READ);
        EXPECT_EQ(mr->Dispatch->NdkGetLocalTokenFromMr(mr), m.key);
        EXPECT_EQ(mr->Dispatch->NdkGetRemoteTokenFromMr(mr), m.key);
        EXPECT_NE(m.key >> 8, 0u);  // index 0 is the privileged key's
        UINT32 priv = 0;
        pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(pd, &priv);
        EXPECT_EQ(priv, hsi::PRIVILEGED_KEY);
        // LAM over the same MDL: the same pages, as logical addresses.
        ULONG lam_size = 0, fbo = 0;
        EXPECT_EQ(a->Dispatch->NdkBuildLAM(a, mdl, len, request_log::fn, nullptr, nullptr,
                                           &lam_size, &fbo),
                  STATUS_BUFFER_TOO_SMALL);
        EXPECT_EQ(lam_size, 16u + 4 * 8);
        std::vector<uint8_t> lam_buf(lam_size);
        auto* lam = reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING*>(lam_buf.data());
        ASSERT_EQ(
            a->Dispatch->NdkBuildLAM(a, mdl, len, request_log::fn, nullptr, lam, &lam_size, &fbo),
            STATUS_SUCCESS);
        EXPECT_EQ(fbo, 256u);
        ASSERT_EQ(lam->AdapterPageCount, 4u);
        for (int i = 0; i < 4; ++i) {
            EXPECT_EQ(static_cast<uint64_t>(lam->AdapterPageArray[i].QuadPart),
                      n1.host.phys(buf + i * 4096));
        }
        a->Dispatch->NdkReleaseLAM(a, lam);
        // Deregister: CMD_DESTROY_MR with the same key.
        request_log dereg;
        ASSERT_EQ(mr->Dispatch->NdkDeregisterMr(mr, request_log::fn, &dereg), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return dereg.calls == 1; }));
        EXPECT_EQ(n1.nic.commands.back().opcode, hsi::CMD_DESTROY_MR);
        EXPECT_EQ(n1.nic.commands.back().u.obj.handle, m.key);
        // Re-registration changes the key's variant byte, not its index.
        request_log reg2;
        ASSERT_EQ(mr->Dispatch->NdkRegisterMr(mr, mdl, len, 0, request_log::fn, &reg2),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return reg2.calls == 1; }));
        const UINT32 k2 = mr->Dispatch->NdkGetLocalTokenFromMr(mr);
        EXPECT_EQ(k2 >> 8, m.key >> 8);
        EXPECT_NE(k2 & 0xFF, m.key & 0xFF);
        close_log cm_closed;
        mr->Dispatch->NdkCloseMr(&mr->Header, close_log::fn, &cm_closed);
        ASSERT_TRUE(wait_until([&] { return cm_closed.calls == 1; }));
        n1.host.free_mdl(mdl);
        n1.host.free(buf);
        close_log pd_closed;
        pd->Dispatch->NdkClosePd(&pd->Header, close_log::fn, &pd_closed);
        ASSERT_TRUE(wait_until([&] { return pd_closed.calls == 1; }));
        close_adapter(a);
    });
}

// RegisterMr failures: an MDL chain that is not virtually contiguous -> INVALID_PARAMETER, more
// pages than one registration may map -> INSUFFICIENT_RESOURCES (both inline, no callback), the
// NIC refusing -> INSUFFICIENT_RESOURCES through the request completion; a contiguous chain
// registers with one page list; READ_SINK is accepted.
TEST(NdkMr, RegisterFromChainsAndFailures) {
    hw::sim_context ctx;
    node n("n1", async_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        adapter_params p = params_for(1);
        p.limits.max_mtt_pages = 8;
        e.open(n, net, p);
        auto* buf = static_cast<uint8_t*>(n.host.alloc(16 * 4096));
        NDK_MR* mr = nullptr;
        ASSERT_EQ(e.pd->Dispatch->NdkCreateMr(e.pd, FALSE, create_log::fn, nullptr, &mr),
                  STATUS_SUCCESS);  // software object: inline in every mode
        MDL* a1 = n.host.build_mdl(buf, 4096);
        MDL* hole = n.host.build_mdl(buf + 8192, 4096);
        a1->Next = hole;
        request_log none;
        EXPECT_EQ(mr->Dispatch->NdkRegisterMr(mr, a1, 8192, 0, request_log::fn, &none),
                  STATUS_INVALID_PARAMETER);
        MDL* big = n.host.build_mdl(buf, 9 * 4096);
        EXPECT_EQ(mr->Dispatch->NdkRegisterMr(mr, big, 9 * 4096, 0, request_log::fn, &none),
                  STATUS_INSUFFICIENT_RESOURCES);
        n.nic.fail[hsi::CMD_CREATE_MR] = hsi::CMD_NO_RESOURCES;
        request_log refused;
        ASSERT_EQ(mr->Dispatch->NdkRegisterMr(mr, big, 4096, 0, request_log::fn, &refused),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return refused.calls == 1; }));
        EXPECT_EQ(refused.status, STATUS_INSUFFICIENT_RESOURCES);
        n.nic.fail.clear();
        settle();
        EXPECT_EQ(none.calls, 0);
        // A contiguous two-MDL chain (boundary inside page 1) starting 100 bytes in.
        MDL* c1 = n.host.build_mdl(buf + 100, 6000);
        MDL* c2 = n.host.build_mdl(buf + 6100, 4000);
        c1->Next = c2;
        request_log ok;
        ASSERT_EQ(mr->Dispatch->NdkRegisterMr(
                      mr, c1, 10000, NDK_MR_FLAG_ALLOW_REMOTE_WRITE | NDK_MR_FLAG_RDMA_READ_SINK,
                      request_log::fn, &ok),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return ok.calls == 1; }));
        ASSERT_EQ(ok.status, STATUS_SUCCESS);
        const auto m = n.nic.commands_of(hsi::CMD_CREATE_MR).back().u.mr;
        EXPECT_EQ(m.va, reinterpret_cast<uint64_t>(buf + 100));
        EXPECT_EQ(m.length, 10000u);
        EXPECT_EQ(m.page_count, 3u);  // bytes 100 .. 10099: pages 0, 1, 2
        EXPECT_EQ(m.first_byte_offset, 100u);
        EXPECT_EQ(m.access & (hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_WRITE),
                  hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_WRITE);
        EXPECT_EQ(mr->Dispatch->NdkGetRemoteTokenFromMr(mr), m.key);
        for (MDL* d : {a1, hole, big, c1, c2}) {
            n.host.free_mdl(d);
        }
    });
}

// CreateMr / CreateMw share the adapter's key pool: exhaustion -> INSUFFICIENT_RESOURCES inline.
TEST(NdkMr, KeyExhaustion) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        adapter_params p = params_for(1);
        p.limits.max_keys = 3;  // key index 0 is the privileged token: two usable
        e.open(n, net, p);
        NDK_MR* m1 = nullptr;
        NDK_MR* m2 = nullptr;
        NDK_MW* w = nullptr;
        ASSERT_EQ(e.pd->Dispatch->NdkCreateMr(e.pd, FALSE, create_log::fn, nullptr, &m1),
                  STATUS_SUCCESS);
        ASSERT_EQ(e.pd->Dispatch->NdkCreateMw(e.pd, create_log::fn, nullptr, &w), STATUS_SUCCESS);
        EXPECT_EQ(e.pd->Dispatch->NdkCreateMr(e.pd, TRUE, create_log::fn, nullptr, &m2),
                  STATUS_INSUFFICIENT_RESOURCES);
        NDK_MW* w2 = nullptr;
        EXPECT_EQ(e.pd->Dispatch->NdkCreateMw(e.pd, create_log::fn, nullptr, &w2),
                  STATUS_INSUFFICIENT_RESOURCES);
        // Closing one gives its key index back.
        EXPECT_EQ(m1->Dispatch->NdkCloseMr(&m1->Header, close_log::fn, nullptr), STATUS_SUCCESS);
        EXPECT_EQ(e.pd->Dispatch->NdkCreateMr(e.pd, TRUE, create_log::fn, nullptr, &m2),
                  STATUS_SUCCESS);
    });
}

// InitializeFastRegisterMr: AdapterPageCount 0 or beyond the adapter -> IMPLEMENTATION_LIMIT;
// asynchronous completion; RemoteAccess=TRUE lets FastRegister grant remote rights (the NIC
// learns it); the remote token is readable after the FastRegister call returns, a new one
// each time; FBO / length checks -> INVALID_PARAMETER.
TEST(NdkMr, FastRegisterLimitsAndRemoteAccess) {
    hw::sim_context ctx;
    node n("n1", async_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        adapter_params p = params_for(1);
        p.limits.max_mtt_pages = 32;
        e.open(n, net, p);
        force_connected(e.qp);
        NDK_ADAPTER_INFO info{};
        ULONG size = sizeof(info);
        ASSERT_EQ(e.adapter->Dispatch->NdkQueryAdapterInfo(e.adapter, &info, &size),
                  STATUS_SUCCESS);
        NDK_MR* fr = nullptr;
        ASSERT_EQ(e.pd->Dispatch->NdkCreateMr(e.pd, TRUE, create_log::fn, nullptr, &fr),
                  STATUS_SUCCESS);
        request_log none;
        EXPECT_EQ(fr->Dispatch->NdkInitializeFastRegisterMr(fr, 33, TRUE, request_log::fn, &none),
                  STATUS_IMPLEMENTATION_LIMIT);
        EXPECT_EQ(fr->Dispatch->NdkInitializeFastRegisterMr(fr, 0, TRUE, request_log::fn, &none),
                  STATUS_IMPLEMENTATION_LIMIT);
        request_log init;
        ASSERT_EQ(fr->Dispatch->NdkInitializeFastRegisterMr(fr, info.FRMRPageCount, TRUE,
                                                            request_log::fn, &init),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return init.calls == 1; }));
        EXPECT_EQ(init.status, STATUS_SUCCESS);
        EXPECT_EQ(none.calls, 0);
        const auto c = n.nic.commands_of(hsi::CMD_CREATE_MR).back().u.mr;
        EXPECT_EQ(c.page_count, info.FRMRPageCount);
        EXPECT_TRUE(c.access & hsi::ACCESS_REMOTE_ACCESS_OK);
        auto* buf = static_cast<uint8_t*>(n.host.alloc(4 * 4096));
        NDK_LOGICAL_ADDRESS pages[3];
        for (int i = 0; i < 3; ++i) {
            pages[i].QuadPart = static_cast<LONGLONG>(n.host.phys(buf + i * 4096));
        }
        EXPECT_EQ(e.qp->Dispatch->NdkFastRegister(e.qp, nullptr, fr, 3, pages, 4096, 100,
                                                  reinterpret_cast<void*>(0x1000), 0),
                  STATUS_INVALID_PARAMETER);  // FBO inside page 0
        EXPECT_EQ(e.qp->Dispatch->NdkFastRegister(e.qp, nullptr, fr, 3, pages, 8, 3 * 4096,
                                                  reinterpret_cast<void*>(0x1008), 0),
                  STATUS_INVALID_PARAMETER);  // Length > pages * PAGE_SIZE - FBO
        const UINT32 before = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
        ASSERT_EQ(e.qp->Dispatch->NdkFastRegister(
                      e.qp, nullptr, fr, 3, pages, 8, 3 * 4096 - 8, reinterpret_cast<void*>(0x1008),
                      NDK_OP_FLAG_ALLOW_REMOTE_READ | NDK_OP_FLAG_ALLOW_REMOTE_WRITE |
                          NDK_OP_FLAG_RDMA_READ_SINK),
                  STATUS_SUCCESS);
        const UINT32 after = fr->Dispatch->NdkGetRemoteTokenFromMr(fr);
        EXPECT_NE(after, before);
        EXPECT_EQ(after, fr->Dispatch->NdkGetLocalTokenFromMr(fr));
        auto w = n.nic.sq_slot(e.qpn(), 0, 128);
        EXPECT_EQ(w[0], hsi::WQE_FAST_REG);
        EXPECT_EQ(at<uint32_t>(w, 64), after);
        EXPECT_EQ(at<uint32_t>(w, 68) & (hsi::ACCESS_REMOTE_READ | hsi::ACCESS_REMOTE_WRITE),
                  hsi::ACCESS_REMOTE_READ | hsi::ACCESS_REMOTE_WRITE);
        // Invalidate, then register again: yet another token.
        ASSERT_EQ(e.qp->Dispatch->NdkInvalidate(e.qp, nullptr, &fr->Header, NDK_OP_FLAG_DEFER),
                  STATUS_SUCCESS);
        ASSERT_EQ(e.qp->Dispatch->NdkFastRegister(e.qp, nullptr, fr, 1, pages, 0, 4096, nullptr,
                                                  NDK_OP_FLAG_ALLOW_LOCAL_WRITE),
                  STATUS_SUCCESS);
        EXPECT_NE(fr->Dispatch->NdkGetRemoteTokenFromMr(fr), after);
        settle();
        EXPECT_EQ(n.nic.values(hsi::REG_SQ_DOORBELL).back(), e.qpn() | (3ull << 32));
        // A fast-register MR is not deregistered (it is invalidated); a normal one is.
        request_log r;
        EXPECT_EQ(fr->Dispatch->NdkDeregisterMr(fr, request_log::fn, &r),
                  STATUS_INVALID_DEVICE_STATE);
    });
}

}  // namespace
}  // namespace rnic::ndk::test
