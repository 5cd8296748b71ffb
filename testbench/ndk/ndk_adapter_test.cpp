// SPDX-License-Identifier: Apache-2.0
// NDK adapter family against a fake NIC (one SystemC elaboration per TEST): bring-up,
// QueryAdapterInfo, QueryExtension, both creation modes, command failures, close rules, BuildLAM
// / ReleaseLAM.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/ndk/ndk_bench.h"

namespace rnic::ndk::test {
namespace {

TEST(NdkAdapter, OpenAdapterProgramsRingsAndMsix) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_on(net, n, params_for(1), &a), STATUS_SUCCESS);
        // Posted MMIO writes reach the NIC a PCIe latency later.
        ASSERT_TRUE(wait_until([&] { return n.nic.eq_armed; }));
        EXPECT_EQ(n.nic.writes.back().offset, hsi::REG_EQ_CONSUMER);
        EXPECT_EQ(a->Header.ObjectType, NdkObjectTypeAdapter);
        EXPECT_EQ(a->Header.Version.Major, 1);
        EXPECT_EQ(a->Header.Version.Minor, 2);
        EXPECT_NE(n.nic.cmdq_base, 0u);
        EXPECT_EQ(n.nic.cmdq_base % 4096, 0u);
        EXPECT_EQ(n.nic.cmdq_log, 8u);
        EXPECT_NE(n.nic.eq_base, 0u);
        EXPECT_EQ(n.nic.eq_log, 12u);
        EXPECT_EQ(n.nic.msix[0].addr, n.host.msi_address(0));
        EXPECT_EQ(n.nic.msix[0].data, 0u);
        EXPECT_EQ(n.nic.msix[0].control, 0u);
        EXPECT_TRUE(n.nic.eq_armed);
        // Bad version is refused (ndkpi.md 9).
        adapter_params p = params_for(2);
        p.version = NDK_VERSION{2, 0};
        NDK_ADAPTER* b = nullptr;
        EXPECT_EQ(open_adapter(n.host, p, &b), NDIS_STATUS_BAD_VERSION);
        // The GSI rings (CM MADs, ARP) are programmed too, receive consumer at 0.
        settle();
        ASSERT_EQ(n.nic.values(hsi::REG_GSI_SQ_BASE).size(), 1u);
        EXPECT_NE(n.nic.values(hsi::REG_GSI_SQ_BASE)[0], 0u);
        EXPECT_NE(n.nic.values(hsi::REG_GSI_RQ_BASE)[0], 0u);
        EXPECT_EQ(n.nic.values(hsi::REG_GSI_SQ_LOG_SIZE), std::vector<uint64_t>{6});
        EXPECT_EQ(n.nic.values(hsi::REG_GSI_RQ_CONSUMER), std::vector<uint64_t>{0});
        close_adapter(a);
        // close_adapter turns the receive ring off before freeing it.
        settle();
        EXPECT_EQ(n.nic.values(hsi::REG_GSI_RQ_BASE).back(), 0u);
    });
}

// The CM's communication-ID table (host config cm_ids): every connector and listener holds an
// entry until it is closed, so CreateConnector and CreateListener fail with
// STATUS_INSUFFICIENT_RESOURCES when it is full; a peer whose table is full refuses a REQ (REJ
// "no resources") and the Connect completes with STATUS_INSUFFICIENT_RESOURCES.
TEST(NdkAdapter, CmIdTableLimitsConnectorsAndListeners) {
    hw::sim_context ctx;
    host_config c1 = sync_cfg();
    c1.cm_ids = 3;
    host_config c2 = host_config{};  // async creation: the failure is still inline
    c2.cm_ids = 1;
    node n1("n1", c1, ctx);
    node n2("n2", c2, ctx);
    fake_network net;
    run([&] {
        endpoint a, b;
        a.open(n1, net, params_for(1));
        b.open(n2, net, params_for(2));
        NDK_CONNECTOR* k1 = nullptr;
        NDK_CONNECTOR* k2 = nullptr;
        NDK_LISTENER* l1 = nullptr;
        listen_state ls;
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &k1),
                  STATUS_SUCCESS);
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &k2),
                  STATUS_SUCCESS);
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateListener(a.adapter, listen_state::fn, &ls,
                                                         create_log::fn, nullptr, &l1),
                  STATUS_SUCCESS);
        // Table full: both calls fail inline and leave the out-parameter alone.
        NDK_CONNECTOR* k3 = nullptr;
        NDK_LISTENER* l2 = nullptr;
        create_log never;
        EXPECT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, &never, &k3),
                  STATUS_INSUFFICIENT_RESOURCES);
        EXPECT_EQ(k3, nullptr);
        EXPECT_EQ(a.adapter->Dispatch->NdkCreateListener(a.adapter, listen_state::fn, &ls,
                                                         create_log::fn, &never, &l2),
                  STATUS_INSUFFICIENT_RESOURCES);
        EXPECT_EQ(l2, nullptr);
        settle();
        EXPECT_EQ(never.calls, 0);
        // Closing a connector frees its entry.
        EXPECT_EQ(k2->Dispatch->NdkCloseConnector(&k2->Header, close_log::fn, nullptr),
                  STATUS_SUCCESS);
        ASSERT_EQ(a.adapter->Dispatch->NdkCreateListener(a.adapter, listen_state::fn, &ls,
                                                         create_log::fn, nullptr, &l2),
                  STATUS_SUCCESS);
        EXPECT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &k3),
                  STATUS_INSUFFICIENT_RESOURCES);
        // b's only entry is its listener: an incoming request finds no room for its connector.
        NDK_LISTENER* bl = nullptr;
        listen_state bls;
        ASSERT_EQ(b.adapter->Dispatch->NdkCreateListener(b.adapter, listen_state::fn, &bls,
                                                         create_log::fn, nullptr, &bl),
                  STATUS_SUCCESS);
        SOCKADDR_IN la = addr(0, 5000);
        ASSERT_EQ(bl->Dispatch->NdkListen(bl, reinterpret_cast<PSOCKADDR>(&la), sizeof(la),
                                          request_log::fn, nullptr),
                  STATUS_SUCCESS);
        NDK_CONNECTOR* k4 = nullptr;
        EXPECT_EQ(b.adapter->Dispatch->NdkCreateConnector(b.adapter, create_log::fn, nullptr, &k4),
                  STATUS_INSUFFICIENT_RESOURCES);
        SOCKADDR_IN dst = addr(params_for(2).ip, 5000);
        request_log r;
        ASSERT_EQ(k1->Dispatch->NdkConnect(k1, a.qp, nullptr, 0, reinterpret_cast<PSOCKADDR>(&dst),
                                           sizeof(dst), 1, 1, nullptr, 0, request_log::fn, &r),
                  STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return r.calls == 1; }));
        EXPECT_EQ(r.status, STATUS_INSUFFICIENT_RESOURCES);
        EXPECT_EQ(bls.events, 0);
        ASSERT_EQ(n2.nic.mads_sent(), std::vector<uint16_t>{hsi::CM_ATTR_REJ});
        const auto& rej = n2.nic.gsi_sent.back().body;
        EXPECT_EQ(rej[24 + 10] << 8 | rej[24 + 11], 3);  // IBA REJ reason 3: no resources
        // The QP is free again (a refusal leaves it IDLE).
        EXPECT_EQ(provider::impl(a.qp)->state, provider::qp_impl::IDLE);
        EXPECT_EQ(k1->Dispatch->NdkCloseConnector(&k1->Header, close_log::fn, nullptr),
                  STATUS_SUCCESS);
        EXPECT_EQ(l1->Dispatch->NdkCloseListener(&l1->Header, close_log::fn, nullptr),
                  STATUS_SUCCESS);
        EXPECT_EQ(a.adapter->Dispatch->NdkCreateConnector(a.adapter, create_log::fn, nullptr, &k3),
                  STATUS_SUCCESS);  // two entries free again
    });
}

TEST(NdkAdapter, QueryAdapterInfoReportsLimits) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        const adapter_params p = params_for(1);
        ASSERT_EQ(open_on(net, n, p, &a), STATUS_SUCCESS);
        NDK_ADAPTER_INFO info{};
        ULONG size = 8;
        EXPECT_EQ(a->Dispatch->NdkQueryAdapterInfo(a, &info, &size), STATUS_BUFFER_TOO_SMALL);
        EXPECT_EQ(size, sizeof(NDK_ADAPTER_INFO));
        ASSERT_EQ(a->Dispatch->NdkQueryAdapterInfo(a, &info, &size), STATUS_SUCCESS);
        EXPECT_EQ(info.MaxInitiatorQueueDepth, p.limits.max_qp_depth);
        EXPECT_EQ(info.MaxCqDepth, p.limits.max_cq_depth);
        EXPECT_EQ(info.MaxInlineDataSize, p.limits.max_inline);
        EXPECT_EQ(info.MaxInitiatorRequestSge, p.limits.max_sge);
        EXPECT_EQ(info.MaxOutboundReadLimit, p.limits.max_read_depth);
        EXPECT_EQ(info.RdmaTechnology, NdkRoCEv2);
        EXPECT_GE(info.FRMRPageCount, 16u);
        EXPECT_TRUE(info.AdapterFlags & NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED);
        NDK_EXTENSION_INTERFACE ext{};
        GUID g{};
        EXPECT_EQ(a->Dispatch->NdkQueryExtension(&a->Header, &g, NDK_VERSION{1, 0}, &ext),
                  STATUS_NOT_SUPPORTED);
        close_adapter(a);
    });
}

TEST(NdkAdapter, AsyncCreateCompletesFromIsr) {
    hw::sim_context ctx;
    node n("n1", host_config{}, ctx);  // async_create = true
    fake_network net;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_on(net, n, params_for(1), &a), STATUS_SUCCESS);
        create_log cl;
        NDK_CQ* cq = nullptr;
        notify_log notes;
        ASSERT_EQ(a->Dispatch->NdkCreateCq(a, 100, notify_log::fn, &notes, nullptr, create_log::fn,
                                           &cl, &cq),
                  STATUS_PENDING);
        EXPECT_EQ(cl.calls, 0);
        ASSERT_TRUE(wait_until([&] { return cl.calls == 1; }));
        EXPECT_EQ(cl.status, STATUS_SUCCESS);
        ASSERT_NE(cl.object, nullptr);
        EXPECT_EQ(cl.object->ObjectType, NdkObjectTypeCq);
        cq = reinterpret_cast<NDK_CQ*>(cl.object);
        ASSERT_EQ(n.nic.commands.size(), 1u);
        const hsi::cmd_slot c = n.nic.commands[0];
        EXPECT_EQ(c.opcode, hsi::CMD_CREATE_CQ);
        EXPECT_NE(c.u.cq.cqn, 0u);
        EXPECT_GE(1u << c.u.cq.log_depth, 200u);  // ring >= 2 x depth
        EXPECT_EQ(c.u.cq.ring_addr % 4096, 0u);
        EXPECT_EQ(n.nic.values(hsi::REG_CMDQ_DOORBELL), std::vector<uint64_t>{1});
        EXPECT_GE(n.nic.msis, 1u);
        // The close goes through the command queue too: pending, then the close completion.
        close_log closed;
        EXPECT_EQ(cq->Dispatch->NdkCloseCq(&cq->Header, close_log::fn, &closed), STATUS_PENDING);
        ASSERT_TRUE(wait_until([&] { return closed.calls == 1; }));
        EXPECT_EQ(n.nic.commands.back().opcode, hsi::CMD_DESTROY_CQ);
        EXPECT_EQ(n.nic.commands.back().u.obj.handle, c.u.cq.cqn);
        close_adapter(a);
    });
}

TEST(NdkAdapter, SyncCreateAndCommandFailure) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_on(net, n, params_for(1), &a), STATUS_SUCCESS);
        NDK_PD* pd = nullptr;
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        ASSERT_EQ(a->Dispatch->NdkCreatePd(a, create_log::fn, nullptr, &pd), STATUS_SUCCESS);
        ASSERT_NE(pd, nullptr);
        EXPECT_GE(sc_core::sc_time_stamp() - t0, sc_core::sc_time(400, sc_core::SC_NS));
        EXPECT_EQ(n.nic.commands.back().opcode, hsi::CMD_CREATE_PD);
        // The NIC refusing a command maps to the NTSTATUS table.
        n.nic.fail[hsi::CMD_CREATE_CQ] = hsi::CMD_NO_RESOURCES;
        NDK_CQ* cq = nullptr;
        EXPECT_EQ(a->Dispatch->NdkCreateCq(a, 8, notify_log::fn, nullptr, nullptr, create_log::fn,
                                           nullptr, &cq),
                  STATUS_INSUFFICIENT_RESOURCES);
        // A NIC that never answers: the synchronous wait gives up.
        n.nic.answer = false;
        NDK_PD* pd2 = nullptr;
        EXPECT_EQ(a->Dispatch->NdkCreatePd(a, create_log::fn, nullptr, &pd2), STATUS_IO_TIMEOUT);
        n.nic.answer = true;
        EXPECT_EQ(pd->Dispatch->NdkClosePd(&pd->Header, close_log::fn, nullptr), STATUS_SUCCESS);
    });
}

// QueryAdapterInfo: BUFFER_TOO_SMALL with the size written back, the limits from the NIC config,
// and the version negotiated at open time in the info and every object header.
TEST(NdkAdapter, QueryAdapterInfoSizesAndVersion) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        adapter_params p = params_for(1);
        p.version = NDK_VERSION{1, 1};  // lowest acceptable minor: the provider's highest is used
        p.limits.max_srqs = 1;          // no usable SRQN: MaxSrqDepth 0 (no SRQ support)
        endpoint e;
        e.open(n, net, p);
        ULONG size = 0;
        EXPECT_EQ(e.adapter->Dispatch->NdkQueryAdapterInfo(e.adapter, nullptr, &size),
                  STATUS_BUFFER_TOO_SMALL);
        EXPECT_EQ(size, sizeof(NDK_ADAPTER_INFO));
        std::vector<uint8_t> big(sizeof(NDK_ADAPTER_INFO) + 16, 0xEE);
        size = static_cast<ULONG>(big.size());
        auto* info = reinterpret_cast<NDK_ADAPTER_INFO*>(big.data());
        ASSERT_EQ(e.adapter->Dispatch->NdkQueryAdapterInfo(e.adapter, info, &size), STATUS_SUCCESS);
        EXPECT_EQ(size, sizeof(NDK_ADAPTER_INFO));  // bytes written
        EXPECT_EQ(big[sizeof(NDK_ADAPTER_INFO)], 0xEE);
        EXPECT_EQ(info->Version.Major, 1);
        EXPECT_EQ(info->Version.Minor, 2);
        EXPECT_EQ(info->MaxSrqDepth, 0u);
        EXPECT_EQ(info->MaxReceiveQueueDepth, p.limits.max_qp_depth);
        EXPECT_EQ(info->MaxTransferLength, p.limits.max_message);
        EXPECT_EQ(info->MaxRegistrationSize, static_cast<SIZE_T>(p.limits.max_mtt_pages) * 4096);
        EXPECT_TRUE(info->AdapterFlags & NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED);
        for (NDK_OBJECT_HEADER* h :
             {&e.adapter->Header, &e.pd->Header, &e.cq->Header, &e.qp->Header}) {
            EXPECT_EQ(h->Version.Minor, 2);
            EXPECT_NE(h->ObjectType, NdkObjectTypeUndefined);
            for (PVOID r : h->NdkReserved.rf) {
                EXPECT_EQ(r, nullptr);  // zeroed, belongs to the NDK framework
            }
        }
    });
}

// QueryExtensionInterface on every object: no standard extension exists -> NOT_SUPPORTED.
TEST(NdkAdapter, QueryExtensionOnEveryObjectIsNotSupported) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n, net, params_for(1));
        NDK_MR* mr = nullptr;
        NDK_MW* mw = nullptr;
        NDK_SRQ* srq = nullptr;
        NDK_CONNECTOR* conn = nullptr;
        NDK_LISTENER* l = nullptr;
        NDK_SHARED_ENDPOINT* sep = nullptr;
        listen_state ls;
        ASSERT_EQ(e.pd->Dispatch->NdkCreateMr(e.pd, FALSE, create_log::fn, nullptr, &mr),
                  STATUS_SUCCESS);
        ASSERT_EQ(e.pd->Dispatch->NdkCreateMw(e.pd, create_log::fn, nullptr, &mw), STATUS_SUCCESS);
        ASSERT_EQ(e.pd->Dispatch->NdkCreateSrq(e.pd, 8, 1, 0, nullptr, nullptr, nullptr,
                                               create_log::fn, nullptr, &srq),
                  STATUS_SUCCESS);
        ASSERT_EQ(
            e.adapter->Dispatch->NdkCreateConnector(e.adapter, create_log::fn, nullptr, &conn),
            STATUS_SUCCESS);
        ASSERT_EQ(e.adapter->Dispatch->NdkCreateListener(e.adapter, listen_state::fn, &ls,
                                                         create_log::fn, nullptr, &l),
                  STATUS_SUCCESS);
        SOCKADDR_IN sa = addr(0, 0);
        ASSERT_EQ(e.adapter->Dispatch->NdkCreateSharedEndpoint(
                      e.adapter, reinterpret_cast<PSOCKADDR>(&sa), sizeof(sa), create_log::fn,
                      nullptr, &sep),
                  STATUS_SUCCESS);
        GUID g{};
        int asked = 0;
        auto query = [&](auto* obj) {
            NDK_EXTENSION_INTERFACE ext{};
            ext.Dispatch = &g;
            EXPECT_EQ(obj->Dispatch->NdkQueryExtension(&obj->Header, &g, NDK_VERSION{1, 0}, &ext),
                      STATUS_NOT_SUPPORTED);
            EXPECT_EQ(ext.Dispatch, nullptr);
            ++asked;
        };
        query(e.adapter);
        query(e.pd);
        query(e.cq);
        query(e.qp);
        query(srq);
        query(mr);
        query(mw);
        query(conn);
        query(l);
        query(sep);
        EXPECT_EQ(asked, 10);
    });
}

// BuildLAM over an MDL chain: PAGE_SIZE logical pages of the whole range, the first byte offset,
// the exact LAM size written back; ReleaseLAM leaves the MDLs as they were.
TEST(NdkAdapter, BuildLamOverMdlChain) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_on(net, n, params_for(1), &a), STATUS_SUCCESS);
        auto* buf = static_cast<uint8_t*>(n.host.alloc(6 * 4096));
        // Two MDLs describing one virtually contiguous range of 3 x 4096 + 500 bytes that
        // starts 300 bytes into a page; the link between them is inside a page.
        MDL* first = n.host.build_mdl(buf + 300, 5000);
        MDL* second = n.host.build_mdl(buf + 5300, 3 * 4096 + 500 - 5000);
        first->Next = second;
        const size_t len = 3 * 4096 + 500;
        std::vector<uint8_t> before(sizeof(MDL) * 2);
        std::memcpy(before.data(), first, sizeof(MDL));
        std::memcpy(before.data() + sizeof(MDL), second, sizeof(MDL));
        ULONG need = 0, fbo = 77;
        EXPECT_EQ(
            a->Dispatch->NdkBuildLAM(a, first, len, request_log::fn, nullptr, nullptr, &need, &fbo),
            STATUS_BUFFER_TOO_SMALL);
        const ULONG pages = 4;  // bytes 300 .. 300 + 12788 span pages 0..3
        EXPECT_EQ(need, FIELD_OFFSET(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + pages * 8);
        EXPECT_EQ(fbo, 77u);  // untouched by the failure
        std::vector<uint8_t> lam_buf(need + 64, 0);
        auto* lam = reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING*>(lam_buf.data());
        ULONG size = static_cast<ULONG>(lam_buf.size());
        request_log done;
        ASSERT_EQ(finished(a->Dispatch->NdkBuildLAM(a, first, len, request_log::fn, &done, lam,
                                                    &size, &fbo),
                           done),
                  STATUS_SUCCESS);
        EXPECT_EQ(size, need);
        EXPECT_EQ(fbo, 300u);
        ASSERT_EQ(lam->AdapterPageCount, pages);
        for (ULONG i = 0; i < pages; ++i) {
            // PAGE_SIZE, page-aligned adapter pages (no IOMMU: logical = bus address).
            const auto la = static_cast<uint64_t>(lam->AdapterPageArray[i].QuadPart);
            EXPECT_EQ(la % 4096, 0u);
            EXPECT_EQ(la, n.host.phys(buf + i * 4096));
        }
        a->Dispatch->NdkReleaseLAM(a, lam);
        EXPECT_EQ(std::memcmp(before.data(), first, sizeof(MDL)), 0);
        EXPECT_EQ(std::memcmp(before.data() + sizeof(MDL), second, sizeof(MDL)), 0);
        // The privileged token gives local access to logical addresses (LAM SGEs).
        NDK_PD* pd = nullptr;
        ASSERT_EQ(a->Dispatch->NdkCreatePd(a, create_log::fn, nullptr, &pd), STATUS_SUCCESS);
        UINT32 priv = 1;
        pd->Dispatch->NdkGetPrivilegedMemoryRegionToken(pd, &priv);
        EXPECT_EQ(priv, hsi::PRIVILEGED_KEY);
        n.host.free_mdl(second);
        n.host.free_mdl(first);
    });
}

// BuildLAM failures: not virtually contiguous or too short -> INVALID_PARAMETER, beyond the
// adapter's registration size -> INSUFFICIENT_RESOURCES, buffer too small -> BUFFER_TOO_SMALL;
// none leaves a partial mapping in the consumer's LAM.
TEST(NdkAdapter, BuildLamFailuresLeaveNoMapping) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        adapter_params p = params_for(1);
        p.limits.max_mtt_pages = 8;
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_on(net, n, p, &a), STATUS_SUCCESS);
        auto* buf = static_cast<uint8_t*>(n.host.alloc(16 * 4096));
        MDL* m1 = n.host.build_mdl(buf, 4096);
        MDL* gap = n.host.build_mdl(buf + 2 * 4096, 4096);  // a hole between the two
        m1->Next = gap;
        std::vector<uint8_t> lam_buf(1024, 0xA5);
        auto* lam = reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING*>(lam_buf.data());
        const std::vector<uint8_t> pristine = lam_buf;
        ULONG size = static_cast<ULONG>(lam_buf.size()), fbo = 0;
        EXPECT_EQ(a->Dispatch->NdkBuildLAM(a, m1, 8192, request_log::fn, nullptr, lam, &size, &fbo),
                  STATUS_INVALID_PARAMETER);
        EXPECT_EQ(lam_buf, pristine);
        // Shorter than the length asked for.
        m1->Next = nullptr;
        EXPECT_EQ(a->Dispatch->NdkBuildLAM(a, m1, 4097, request_log::fn, nullptr, lam, &size, &fbo),
                  STATUS_INVALID_PARAMETER);
        EXPECT_EQ(lam_buf, pristine);
        // More pages than one registration may span (MaxRegistrationSize = 8 pages).
        MDL* big = n.host.build_mdl(buf, 9 * 4096);
        EXPECT_EQ(
            a->Dispatch->NdkBuildLAM(a, big, 9 * 4096, request_log::fn, nullptr, lam, &size, &fbo),
            STATUS_INSUFFICIENT_RESOURCES);
        EXPECT_EQ(lam_buf, pristine);
        // Too small a buffer: the required size comes back, the buffer is not written.
        size = 16 + 8;  // room for one page, two needed
        EXPECT_EQ(
            a->Dispatch->NdkBuildLAM(a, big, 4096 + 1, request_log::fn, nullptr, lam, &size, &fbo),
            STATUS_BUFFER_TOO_SMALL);
        EXPECT_EQ(size, 16u + 2 * 8);
        EXPECT_EQ(lam_buf, pristine);
        ASSERT_EQ(
            a->Dispatch->NdkBuildLAM(a, big, 4096 + 1, request_log::fn, nullptr, lam, &size, &fbo),
            STATUS_SUCCESS);
        EXPECT_EQ(lam->AdapterPageCount, 2u);
        EXPECT_EQ(fbo, 0u);
        a->Dispatch->NdkReleaseLAM(a, lam);
        n.host.free_mdl(big);
        n.host.free_mdl(gap);
        n.host.free_mdl(m1);
    });
}

}  // namespace
}  // namespace rnic::ndk::test
