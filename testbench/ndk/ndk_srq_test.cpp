// SPDX-License-Identifier: Apache-2.0
// NDK SRQ family against a fake NIC: CreateSrq, SrqReceive, ModifySrq, the limit notification, QPs
// on an SRQ, the SRQ error event. Against a real NIC: the device fatal error of
// rnic.faults.fatal_error_at_ns (STATUS_INTERNAL_ERROR to the SRQ notification).
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

TEST(NdkSrq, SrqReceivesAndLimitEvent) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint s;
        s.open(n, net, params_for(1));
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
    fake_network net;
    run([&] {
        endpoint e;
        adapter_params p = params_for(1);
        p.limits.max_srqs = 2;  // one usable SRQN
        e.open(n, net, p);
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
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n, net, params_for(1));
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

// EVENT_SRQ_ERROR (a receive-WQE fetch from the SRQ ring failed on PCIe): the armed notification
// gets STATUS_INTERNAL_ERROR once; an unarmed SRQ reports it to the next arming ModifySrq (no
// command: the SRQ is dead); receives on a dead SRQ fail with STATUS_DEVICE_NOT_READY.
TEST(NdkSrq, SrqErrorEventIsInternalError) {
    hw::sim_context ctx;
    node n("n1", sync_cfg(), ctx);
    fake_network net;
    run([&] {
        endpoint e;
        e.open(n, net, params_for(1));
        notify_log armed_notes, unarmed_notes;
        NDK_SRQ* armed = nullptr;
        NDK_SRQ* unarmed = nullptr;
        ASSERT_EQ(e.pd->Dispatch->NdkCreateSrq(e.pd, 8, 1, 2, notify_log::fn, &armed_notes, nullptr,
                                               create_log::fn, nullptr, &armed),
                  STATUS_SUCCESS);
        const uint32_t armed_srqn = n.nic.commands_of(hsi::CMD_CREATE_SRQ).back().u.srq.srqn;
        ASSERT_EQ(e.pd->Dispatch->NdkCreateSrq(e.pd, 8, 1, 0, notify_log::fn, &unarmed_notes,
                                               nullptr, create_log::fn, nullptr, &unarmed),
                  STATUS_SUCCESS);
        const uint32_t unarmed_srqn = n.nic.commands_of(hsi::CMD_CREATE_SRQ).back().u.srq.srqn;
        NDK_SGE sge{};
        for (int i = 0; i < 4; ++i) {
            ASSERT_EQ(armed->Dispatch->NdkSrqReceive(armed, nullptr, &sge, 0), STATUS_SUCCESS);
        }
        n.nic.post_event(hsi::EVENT_SRQ_ERROR, armed_srqn, hsi::CQ_ERR_DMA_ACCESS);
        n.nic.post_event(hsi::EVENT_SRQ_ERROR, unarmed_srqn, hsi::CQ_ERR_DMA_ACCESS);
        ASSERT_TRUE(wait_until([&] { return armed_notes.calls == 1; }));
        EXPECT_EQ(armed_notes.status, STATUS_INTERNAL_ERROR);
        settle();
        EXPECT_EQ(unarmed_notes.calls, 0);
        EXPECT_EQ(armed->Dispatch->NdkSrqReceive(armed, nullptr, &sge, 0), STATUS_DEVICE_NOT_READY);
        const size_t cmds = n.nic.commands.size();
        request_log r;
        EXPECT_EQ(unarmed->Dispatch->NdkModifySrq(unarmed, 0, 2, request_log::fn, &r),
                  STATUS_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return unarmed_notes.calls == 1; }));
        EXPECT_EQ(unarmed_notes.status, STATUS_INTERNAL_ERROR);
        EXPECT_EQ(n.nic.commands.size(), cmds);
        // Once: a second event or arm reports nothing more.
        n.nic.post_event(hsi::EVENT_SRQ_ERROR, armed_srqn, hsi::CQ_ERR_DMA_ACCESS);
        EXPECT_EQ(armed->Dispatch->NdkModifySrq(armed, 0, 2, request_log::fn, &r), STATUS_SUCCESS);
        EXPECT_EQ(unarmed->Dispatch->NdkModifySrq(unarmed, 0, 2, request_log::fn, &r),
                  STATUS_SUCCESS);
        wait_until([] { return false; }, 5000);
        EXPECT_EQ(armed_notes.calls, 1);
        EXPECT_EQ(unarmed_notes.calls, 1);
    });
}

// rnic.faults.fatal_error_at_ns on a real NIC: at that time the NIC posts EVENT_DEVICE_FATAL; the
// armed SRQ's notification gets STATUS_INTERNAL_ERROR then, the unarmed one at its next arm.
TEST(NdkSrq, ConfiguredFatalErrorReachesTheSrqs) {
    hw::sim_context ctx;
    const scenario::scenario_config cfg = scenario::parse_scenario(
        nlohmann::json::parse(R"({"rnic": {"faults": {"fatal_error_at_ns": 200000}}})"));
    auto* link = new fabric::eth_link("link", cfg.topology.link, ctx);
    auto* nd = new scenario::node("node0", 0, cfg, *link, ctx);  // lives until the process ends
    run([&] {
        const auto& nc = cfg.topology.nodes[0];
        adapter_params p;
        p.mac = nc.mac;
        p.ip = nc.ip;
        p.limits = cfg.rnic.limits;
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(open_adapter(nd->host, p, &a), STATUS_SUCCESS);
        create_log pl, s1, s2;
        NDK_PD* pd_out = nullptr;
        NDK_PD* pd = created(a->Dispatch->NdkCreatePd(a, create_log::fn, &pl, &pd_out), pd_out, pl);
        ASSERT_NE(pd, nullptr);
        notify_log armed_notes, unarmed_notes;
        NDK_SRQ* out1 = nullptr;
        NDK_SRQ* out2 = nullptr;
        NDK_SRQ* armed =
            created(pd->Dispatch->NdkCreateSrq(pd, 8, 1, 1, notify_log::fn, &armed_notes, nullptr,
                                               create_log::fn, &s1, &out1),
                    out1, s1);
        NDK_SRQ* unarmed =
            created(pd->Dispatch->NdkCreateSrq(pd, 8, 1, 0, notify_log::fn, &unarmed_notes, nullptr,
                                               create_log::fn, &s2, &out2),
                    out2, s2);
        ASSERT_NE(armed, nullptr);
        ASSERT_NE(unarmed, nullptr);
        NDK_SGE sge{};
        ASSERT_EQ(armed->Dispatch->NdkSrqReceive(armed, nullptr, &sge, 0), STATUS_SUCCESS);
        ASSERT_EQ(unarmed->Dispatch->NdkSrqReceive(unarmed, nullptr, &sge, 0), STATUS_SUCCESS);
        ASSERT_LT(sc_core::sc_time_stamp(), sc_core::sc_time(200, sc_core::SC_US));
        ASSERT_TRUE(wait_until([&] { return armed_notes.calls == 1; }, 1e6));
        EXPECT_EQ(armed_notes.status, STATUS_INTERNAL_ERROR);
        EXPECT_GE(sc_core::sc_time_stamp(), sc_core::sc_time(200, sc_core::SC_US));
        EXPECT_TRUE(nd->nic.firmware().fatal());
        EXPECT_EQ(unarmed_notes.calls, 0);
        request_log r;
        EXPECT_EQ(unarmed->Dispatch->NdkModifySrq(unarmed, 0, 1, request_log::fn, &r),
                  STATUS_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return unarmed_notes.calls == 1; }));
        EXPECT_EQ(unarmed_notes.status, STATUS_INTERNAL_ERROR);
        EXPECT_EQ(unarmed->Dispatch->NdkSrqReceive(unarmed, nullptr, &sge, 0),
                  STATUS_DEVICE_NOT_READY);
    });
}

// A receive-WQE fetch from the SRQ ring that fails on PCIe (the host released the ring's IOMMU
// mapping) on a real NIC: a SEND arrives for a QP on the SRQ, the NIC's read of the receive WQE
// completes with Completer Abort, the SRQ dies (EVENT_SRQ_ERROR) and its QPs go to ERROR; the
// SRQ notification reports STATUS_INTERNAL_ERROR. The two QPs are connected by MODIFY_QP commands
// of their drivers (no CM exchange needed for this).
TEST(NdkSrq, SrqWqeFetchErrorIsInternalError) {
    hw::sim_context ctx;
    const scenario::scenario_config cfg = scenario::parse_scenario(nlohmann::json::object());
    auto* link = new fabric::eth_link("link", cfg.topology.link, ctx);
    scenario::node* nd[2] = {new scenario::node("node0", 0, cfg, *link, ctx),
                             new scenario::node("node1", 1, cfg, *link, ctx)};
    run([&] {
        NDK_ADAPTER* ad[2] = {};
        NDK_PD* pd[2] = {};
        NDK_CQ* cq[2] = {};
        notify_log cq_notes[2];
        for (int i = 0; i < 2; ++i) {
            const auto& nc = cfg.topology.nodes[i];
            adapter_params p;
            p.node_id = static_cast<uint32_t>(i);
            p.mac = nc.mac;
            p.ip = nc.ip;
            p.limits = cfg.rnic.limits;
            p.default_mtu = nc.mtu;
            ASSERT_EQ(open_adapter(nd[i]->host, p, &ad[i]), STATUS_SUCCESS);
            create_log pl, cl;
            NDK_PD* pd_out = nullptr;
            pd[i] = created(ad[i]->Dispatch->NdkCreatePd(ad[i], create_log::fn, &pl, &pd_out),
                            pd_out, pl);
            NDK_CQ* cq_out = nullptr;
            cq[i] = created(ad[i]->Dispatch->NdkCreateCq(ad[i], 16, notify_log::fn, &cq_notes[i],
                                                         nullptr, create_log::fn, &cl, &cq_out),
                            cq_out, cl);
            ASSERT_NE(cq[i], nullptr);
        }
        notify_log srq_notes;
        create_log sl, ql0, ql1;
        NDK_SRQ* srq_out = nullptr;
        NDK_SRQ* srq =
            created(pd[1]->Dispatch->NdkCreateSrq(pd[1], 8, 1, 1, notify_log::fn, &srq_notes,
                                                  nullptr, create_log::fn, &sl, &srq_out),
                    srq_out, sl);
        ASSERT_NE(srq, nullptr);
        NDK_QP* qp_out = nullptr;
        NDK_QP* qa = created(pd[0]->Dispatch->NdkCreateQp(pd[0], cq[0], cq[0], nullptr, 8, 8, 1, 1,
                                                          0, create_log::fn, &ql0, &qp_out),
                             qp_out, ql0);
        NDK_QP* qb =
            created(pd[1]->Dispatch->NdkCreateQpWithSrq(pd[1], cq[1], cq[1], srq, nullptr, 8, 1, 0,
                                                        create_log::fn, &ql1, &qp_out),
                    qp_out, ql1);
        ASSERT_NE(qa, nullptr);
        ASSERT_NE(qb, nullptr);
        // INIT -> RTR -> RTS on both sides, each pointing at the other.
        NDK_QP* qps[2] = {qa, qb};
        for (int i = 0; i < 2; ++i) {
            const auto& peer = cfg.topology.nodes[1 - i];
            std::vector<hsi::cmd_slot> cmds;
            for (uint8_t state : {hsi::QPS_RTR, hsi::QPS_RTS}) {
                hsi::cmd_slot c{};
                c.opcode = hsi::CMD_MODIFY_QP;
                c.u.modify_qp.qpn = get_qp_number(qps[i]);
                c.u.modify_qp.state = state;
                c.u.modify_qp.pmtu_log = 10;
                c.u.modify_qp.retry_count = 7;
                c.u.modify_qp.rnr_retry = 7;
                c.u.modify_qp.dest_qpn = get_qp_number(qps[1 - i]);
                c.u.modify_qp.dest_ip = peer.ip;
                std::copy(peer.mac.begin(), peer.mac.end(), c.u.modify_qp.dest_mac);
                c.u.modify_qp.timeout_log = 14;
                c.u.modify_qp.max_rd_atomic = 1;
                cmds.push_back(c);
            }
            uint8_t st = 0xFF;
            provider::impl(ad[i])->commands(cmds, true, [&st](uint8_t s) { st = s; });
            ASSERT_EQ(st, hsi::CMD_OK);
            force_connected(qps[i]);
        }
        NDK_SGE sge{};
        for (int i = 0; i < 2; ++i) {
            ASSERT_EQ(srq->Dispatch->NdkSrqReceive(srq, nullptr, &sge, 0), STATUS_SUCCESS);
        }
        settle();
        provider::srq_impl* s = provider::impl(srq);
        nd[1]->pcie.iommu_unmap(nd[1]->host.phys(s->ring),
                                (uint64_t{1} << s->log_size) * s->stride);
        ASSERT_EQ(qa->Dispatch->NdkSend(qa, nullptr, &sge, 0, 0), STATUS_SUCCESS);
        ASSERT_TRUE(wait_until([&] { return srq_notes.calls == 1; }, 100000));
        EXPECT_EQ(srq_notes.status, STATUS_INTERNAL_ERROR);
        hw::nic& nic_b = nd[1]->nic;
        EXPECT_TRUE(nic_b.contexts().srq(s->srqn)->error);
        EXPECT_EQ(nic_b.contexts().qp(get_qp_number(qb))->state, hsi::QPS_ERROR);
        EXPECT_EQ(nd[1]->pcie.iommu_faults(), 1u);
        EXPECT_EQ(srq->Dispatch->NdkSrqReceive(srq, nullptr, &sge, 0), STATUS_DEVICE_NOT_READY);
        EXPECT_EQ(cq_notes[1].calls, 0);  // the CQ itself is fine
    });
}

}  // namespace
}  // namespace rnic::ndk::test
