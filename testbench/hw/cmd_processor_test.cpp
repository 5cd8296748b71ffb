// SPDX-License-Identifier: Apache-2.0
// Command processor: command ring timing, every command's success and failure statuses, object
// references, MR page-list loading, QP state machine and scheduling; config parsers.

#include <random>

#include <gtest/gtest.h>

#include "testbench/hw/control_bench.h"

namespace {

using namespace rnic;
using namespace rnic::hw;
using namespace rnic::testbench::control_bench;
using sc_core::SC_NS;
using sc_core::SC_PS;
using sc_core::sc_time;
using sc_core::sc_time_stamp;

// ---------------------------------------------------------------------------------------------

constexpr uint64_t RING_AREA = 0x400000;  // CQ/QP/SRQ rings (never touched by these tests)

uint64_t slot_addr(uint32_t index) {
    return CMDQ_BASE + 64ull * (index & ((1u << CMDQ_LOG) - 1));
}

hsi::cmd_slot make_cmd(uint8_t opcode) {
    hsi::cmd_slot s;
    std::memset(&s, 0, sizeof(s));
    s.opcode = opcode;
    return s;
}

hsi::cmd_slot cq_cmd(uint8_t opcode, uint32_t cqn, uint32_t log_depth, uint64_t ring = 0,
                     uint32_t vector = 1) {
    hsi::cmd_slot s = make_cmd(opcode);
    s.u.cq.cqn = cqn;
    s.u.cq.log_depth = log_depth;
    s.u.cq.ring_addr = ring != 0 ? ring : RING_AREA + 0x10000ull * cqn;
    s.u.cq.msix_vector = vector;
    return s;
}

hsi::cmd_slot obj_cmd(uint8_t opcode, uint32_t handle, uint32_t pdn = 0) {
    hsi::cmd_slot s = make_cmd(opcode);
    s.u.obj.handle = handle;
    s.u.obj.pdn = pdn;
    return s;
}

hsi::cmd_slot qp_cmd(uint32_t qpn, uint32_t pdn, uint32_t send_cqn, uint32_t recv_cqn,
                     uint32_t srqn = 0) {
    hsi::cmd_slot s = make_cmd(hsi::CMD_CREATE_QP);
    s.u.qp.qpn = qpn;
    s.u.qp.pdn = pdn;
    s.u.qp.send_cqn = send_cqn;
    s.u.qp.recv_cqn = recv_cqn;
    s.u.qp.srqn = srqn;
    s.u.qp.sq_log_depth = 6;
    s.u.qp.rq_log_depth = 5;
    s.u.qp.sq_addr = RING_AREA + 0x100000ull + 0x10000ull * qpn;
    s.u.qp.rq_addr = RING_AREA + 0x200000ull + 0x10000ull * qpn;
    s.u.qp.sq_stride = 128;
    s.u.qp.rq_stride = 48;
    s.u.qp.max_inline = 64;
    return s;
}

hsi::cmd_slot modify_cmd(uint32_t qpn, uint8_t state, uint8_t pmtu_log = 10) {
    hsi::cmd_slot s = make_cmd(hsi::CMD_MODIFY_QP);
    s.u.modify_qp.qpn = qpn;
    s.u.modify_qp.state = state;
    s.u.modify_qp.pmtu_log = pmtu_log;
    s.u.modify_qp.retry_count = 7;
    s.u.modify_qp.rnr_retry = 7;
    s.u.modify_qp.timeout_log = 14;
    s.u.modify_qp.max_rd_atomic = 4;
    return s;
}

hsi::cmd_slot srq_cmd(uint8_t opcode, uint32_t srqn, uint32_t pdn, uint16_t log_depth = 6,
                      uint16_t stride = 64, uint32_t limit = 0) {
    hsi::cmd_slot s = make_cmd(opcode);
    s.u.srq.srqn = srqn;
    s.u.srq.pdn = pdn;
    s.u.srq.ring_addr = RING_AREA + 0x300000ull + 0x10000ull * srqn;
    s.u.srq.log_depth = log_depth;
    s.u.srq.stride = stride;
    s.u.srq.limit = limit;
    return s;
}

hsi::cmd_slot mr_cmd(uint32_t key, uint32_t pdn, uint32_t page_count, uint64_t page_list,
                     uint64_t length, uint32_t access, uint32_t fbo = 0) {
    hsi::cmd_slot s = make_cmd(hsi::CMD_CREATE_MR);
    s.u.mr.key = key;
    s.u.mr.pdn = pdn;
    s.u.mr.va = 0x7000'0000ull + fbo;
    s.u.mr.length = length;
    s.u.mr.page_list_addr = page_list;
    s.u.mr.page_count = page_count;
    s.u.mr.access = access;
    s.u.mr.first_byte_offset = fbo;
    return s;
}

template <typename F>
void wait_mem(bench& b, F pred) {
    while (!pred()) {
        sc_core::wait(b.mem.dma_write_event());
    }
}

// Driver side of the command queue.
uint32_t post_cmd(bench& b, hsi::cmd_slot s) {
    const uint32_t index = b.cmd_producer++;
    s.status = 0xee;
    s.done = 0;
    s.token = 0x5000 + index;
    b.mem.write(slot_addr(index), &s, sizeof(s));
    return index;
}
void ring_cmd(bench& b) {
    b.drv.write32(hsi::REG_CMDQ_DOORBELL, b.cmd_producer);
}
uint8_t wait_cmd(bench& b, uint32_t index) {
    wait_mem(b, [&] { return b.mem.load<uint8_t>(slot_addr(index) + 2) == 1; });
    return b.mem.load<uint8_t>(slot_addr(index) + 1);
}
uint8_t exec(bench& b, const hsi::cmd_slot& s) {
    const uint32_t index = post_cmd(b, s);
    ring_cmd(b);
    return wait_cmd(b, index);
}

bench_config cmd_config() {
    bench_config c;
    c.cmd.cycles_per_command = 50;
    return c;
}

TEST(CmdProcessor, NopCompletesAfterReadRoundTripExecutionAndWriteThenSignalsEvent) {
    bench b(cmd_config());
    sc_time rung;
    sc_time done;
    sc_time eqe_visible;
    uint8_t status = 0xff;
    b.drv.body = [&] {
        b.setup_queues();
        const uint32_t index = post_cmd(b, make_cmd(hsi::CMD_NOP));
        rung = sc_time_stamp();
        ring_cmd(b);
        status = wait_cmd(b, index);
        done = sc_time_stamp();
        wait_mem(b, [&] { return b.mem.load<hsi::event_entry>(EQ_BASE).flags != 0; });
        eqe_visible = sc_time_stamp();
        b.settle();
    };
    run(b);
    EXPECT_EQ(status, hsi::CMD_OK);
    // Doorbell MWr (4 B) down; slot MRd up; host memory; CplD (64 B) down; 50 cycles; 2 B MWr up.
    const sc_time arrival = b.mmio_arrival(rung, 4);
    const sc_time rd_issue = b.edge(arrival) + b.clk.cycles(2);
    const double at_mem = b.ps(rd_issue) + b.wire_ps(24) + b.lat_ps() + bench::ps(b.mem.latency());
    const sc_time rd_done = bench::ceil_ps(at_mem + b.wire_ps(20 + 64) + b.lat_ps());
    const sc_time exec_end = b.edge(rd_done) + b.clk.cycles(50);
    const double wr_sent = b.ps(exec_end + b.clk.cycles(2)) + b.wire_ps(24 + 2);
    EXPECT_EQ(done, bench::ceil_ps(wr_sent + b.lat_ps()));
    EXPECT_GE(done - rung, b.clk.cycles(50) + sc_time(3 * b.link.config().latency_ns, SC_NS));
    // EQE: latency_cycles after the status write left, then 16 B; then the MSI-X message.
    const sc_time eqe_issue = b.edge(bench::ceil_ps(wr_sent)) + b.clk.cycles(4 + 2);
    const double eqe_sent = b.ps(eqe_issue) + b.wire_ps(24 + 16);
    EXPECT_EQ(eqe_visible, bench::ceil_ps(eqe_sent + b.lat_ps()));
    const hsi::event_entry e = b.mem.load<hsi::event_entry>(EQ_BASE);
    EXPECT_EQ(e.type, hsi::EVENT_CMD_DONE);
    EXPECT_EQ(e.data, 0x5000u);  // the token
    ASSERT_EQ(b.msis.size(), 1u);
    const sc_time msi_issue = b.edge(bench::ceil_ps(eqe_sent)) + b.clk.cycles(2);
    EXPECT_EQ(b.msis[0].at, bench::ceil_ps(b.ps(msi_issue) + b.wire_ps(24 + 4) + b.lat_ps()));
    EXPECT_EQ(b.msis[0].data, 0x100u);
    // Only status and done are written back.
    const hsi::cmd_slot s = b.mem.load<hsi::cmd_slot>(slot_addr(0));
    EXPECT_EQ(s.opcode, hsi::CMD_NOP);
    EXPECT_EQ(s.token, 0x5000u);
    EXPECT_EQ(b.dma.get_stats(dma_client::COMMAND).write_bytes, 2u);
    EXPECT_EQ(b.dma.get_stats(dma_client::COMMAND).read_bytes, 64u);
    EXPECT_EQ(b.cmdp.consumer(), 1u);
    EXPECT_EQ(b.cmdp.get_stats().commands, 1u);
    EXPECT_EQ(b.cmdp.get_stats().by_status[hsi::CMD_OK], 1u);
}

TEST(CmdProcessor, CqCreateResizeDestroyWithEveryFailureStatus) {
    bench_config c = cmd_config();
    c.limits.max_cqs = 16;
    c.limits.max_cq_depth = 1024;
    bench b(c);
    std::vector<std::pair<std::string, uint8_t>> st;
    auto x = [&](const char* what, const hsi::cmd_slot& s) { st.emplace_back(what, exec(b, s)); };
    b.drv.body = [&] {
        b.setup_queues();
        x("create", cq_cmd(hsi::CMD_CREATE_CQ, 1, 4, 0x90000, 3));
        x("create again", cq_cmd(hsi::CMD_CREATE_CQ, 1, 4));
        x("create out of range", cq_cmd(hsi::CMD_CREATE_CQ, 16, 4));
        x("create too deep", cq_cmd(hsi::CMD_CREATE_CQ, 2, 11));
        x("create garbage depth", cq_cmd(hsi::CMD_CREATE_CQ, 2, 200));
        hsi::cmd_slot no_ring = cq_cmd(hsi::CMD_CREATE_CQ, 2, 4);
        no_ring.u.cq.ring_addr = 0;
        x("create ring 0", no_ring);
        x("create bad vector", cq_cmd(hsi::CMD_CREATE_CQ, 2, 4, 0, hsi::MSIX_VECTORS));
        x("resize invalid", cq_cmd(hsi::CMD_RESIZE_CQ, 3, 4));
        x("resize out of range", cq_cmd(hsi::CMD_RESIZE_CQ, 99, 4));
        cq_context* cq = b.contexts.cq(1);
        cq->producer = 10;
        cq->consumer = 2;
        x("resize below unconsumed", cq_cmd(hsi::CMD_RESIZE_CQ, 1, 2));
        x("resize", cq_cmd(hsi::CMD_RESIZE_CQ, 1, 3, 0xa0000));
        x("destroy invalid", obj_cmd(hsi::CMD_DESTROY_CQ, 5));
        x("destroy out of range", obj_cmd(hsi::CMD_DESTROY_CQ, 1000));
        cq->refcount = 1;
        x("destroy busy", obj_cmd(hsi::CMD_DESTROY_CQ, 1));
        cq->refcount = 0;
        x("destroy", obj_cmd(hsi::CMD_DESTROY_CQ, 1));
        x("destroy again", obj_cmd(hsi::CMD_DESTROY_CQ, 1));
    };
    run(b);
    const std::vector<std::pair<std::string, uint8_t>> expect = {
        {"create", hsi::CMD_OK},
        {"create again", hsi::CMD_BAD_PARAM},
        {"create out of range", hsi::CMD_BAD_PARAM},
        {"create too deep", hsi::CMD_BAD_PARAM},
        {"create garbage depth", hsi::CMD_BAD_PARAM},
        {"create ring 0", hsi::CMD_BAD_PARAM},
        {"create bad vector", hsi::CMD_BAD_PARAM},
        {"resize invalid", hsi::CMD_BAD_HANDLE},
        {"resize out of range", hsi::CMD_BAD_PARAM},
        {"resize below unconsumed", hsi::CMD_BAD_PARAM},
        {"resize", hsi::CMD_OK},
        {"destroy invalid", hsi::CMD_BAD_HANDLE},
        {"destroy out of range", hsi::CMD_BAD_PARAM},
        {"destroy busy", hsi::CMD_BUSY},
        {"destroy", hsi::CMD_OK},
        {"destroy again", hsi::CMD_BAD_HANDLE},
    };
    EXPECT_EQ(st, expect);
    EXPECT_EQ(b.contexts.cq(1), nullptr);
    EXPECT_EQ(b.cmdp.get_stats().commands, expect.size());
    EXPECT_EQ(b.cmdp.get_stats().failed, expect.size() - 3);
}

TEST(CmdProcessor, ResizeKeepsIndicesAndTheWriterUsesTheNewRing) {
    bench b(cmd_config());
    b.drv.body = [&] {
        b.setup_queues();
        EXPECT_EQ(exec(b, cq_cmd(hsi::CMD_CREATE_CQ, 4, 1, 0x90000, 2)), hsi::CMD_OK);
        const cq_context* cq = b.contexts.cq(4);
        EXPECT_EQ(cq->log_depth, 1u);
        EXPECT_EQ(cq->ring_addr, 0x90000u);
        EXPECT_EQ(cq->msix_vector, 2u);
        EXPECT_EQ(cq->armed, hsi::CQ_ARM_NONE);
        completion_request r;
        r.cqn = 4;
        r.entry.wqe_index = 1;
        b.cqw.requests().put(r);
        b.settle();
        EXPECT_EQ(exec(b, cq_cmd(hsi::CMD_RESIZE_CQ, 4, 3, 0xa0000)), hsi::CMD_OK);
        EXPECT_EQ(cq->producer, 1u);
        EXPECT_EQ(cq->log_depth, 3u);
        EXPECT_EQ(cq->ring_addr, 0xa0000u);
        r.entry.wqe_index = 2;
        b.cqw.requests().put(r);
        b.settle();
    };
    run(b);
    // Producer 1 of an 8-entry ring: slot 1, phase 1.
    const auto e = b.mem.load<hsi::cqe>(0xa0000 + 32);
    EXPECT_EQ(e.wqe_index, 2u);
    EXPECT_NE(e.flags & hsi::CQE_FLAG_PHASE, 0);
}

TEST(CmdProcessor, ObjectGraphReferencesMakeDestroysBusyUntilReleased) {
    bench_config c = cmd_config();
    c.limits.max_qps = 32;
    c.limits.max_srqs = 8;
    c.limits.max_pds = 8;
    bench b(c);
    std::vector<std::pair<std::string, uint8_t>> st;
    auto x = [&](const char* what, const hsi::cmd_slot& s) { st.emplace_back(what, exec(b, s)); };
    b.drv.body = [&] {
        b.setup_queues();
        x("pd", obj_cmd(hsi::CMD_CREATE_PD, 1));
        x("pd again", obj_cmd(hsi::CMD_CREATE_PD, 1));
        x("pd out of range", obj_cmd(hsi::CMD_CREATE_PD, 8));
        x("cq1", cq_cmd(hsi::CMD_CREATE_CQ, 1, 4));
        x("cq2", cq_cmd(hsi::CMD_CREATE_CQ, 2, 4));
        x("srq", srq_cmd(hsi::CMD_CREATE_SRQ, 3, 1, 6, 64, 10));
        x("qp10", qp_cmd(10, 1, 1, 2, 3));
        x("qp10 again", qp_cmd(10, 1, 1, 2, 3));
        x("qp out of range", qp_cmd(32, 1, 1, 2, 3));
        x("qp missing pd", qp_cmd(11, 5, 1, 2));
        x("qp missing cq", qp_cmd(11, 1, 9, 2));
        x("qp missing srq", qp_cmd(11, 1, 1, 2, 4));
        hsi::cmd_slot deep = qp_cmd(11, 1, 1, 2);
        deep.u.qp.sq_log_depth = 13;  // 8192 > max_qp_depth
        x("qp too deep", deep);
        hsi::cmd_slot stride = qp_cmd(11, 1, 1, 2);
        stride.u.qp.sq_stride = 100;
        x("qp bad stride", stride);
        hsi::cmd_slot inl = qp_cmd(11, 1, 1, 2);
        inl.u.qp.max_inline = 1000;
        x("qp inline too big", inl);
        hsi::cmd_slot norq = qp_cmd(11, 1, 1, 2);
        norq.u.qp.rq_addr = 0;
        x("qp no rq ring", norq);
        x("qp13", qp_cmd(13, 1, 1, 1));
        EXPECT_EQ(b.contexts.pd(1)->refcount, 3u);  // SRQ + 2 QPs
        EXPECT_EQ(b.contexts.cq(1)->refcount, 3u);  // send of QP 10, send+recv of QP 13
        EXPECT_EQ(b.contexts.cq(2)->refcount, 1u);
        EXPECT_EQ(b.contexts.srq(3)->refcount, 1u);
        x("destroy cq busy", obj_cmd(hsi::CMD_DESTROY_CQ, 1));
        x("destroy pd busy", obj_cmd(hsi::CMD_DESTROY_PD, 1));
        x("destroy srq busy", obj_cmd(hsi::CMD_DESTROY_SRQ, 3));
        x("destroy qp10", obj_cmd(hsi::CMD_DESTROY_QP, 10));
        x("destroy qp13", obj_cmd(hsi::CMD_DESTROY_QP, 13));
        x("destroy qp10 again", obj_cmd(hsi::CMD_DESTROY_QP, 10));
        x("destroy qp out of range", obj_cmd(hsi::CMD_DESTROY_QP, 99));
        x("destroy pd still busy", obj_cmd(hsi::CMD_DESTROY_PD, 1));
        x("destroy srq", obj_cmd(hsi::CMD_DESTROY_SRQ, 3));
        x("destroy pd", obj_cmd(hsi::CMD_DESTROY_PD, 1));
        x("destroy pd again", obj_cmd(hsi::CMD_DESTROY_PD, 1));
        x("destroy pd out of range", obj_cmd(hsi::CMD_DESTROY_PD, 100));
        x("destroy cq1", obj_cmd(hsi::CMD_DESTROY_CQ, 1));
        x("destroy cq2", obj_cmd(hsi::CMD_DESTROY_CQ, 2));
    };
    run(b);
    const std::vector<std::pair<std::string, uint8_t>> expect = {
        {"pd", hsi::CMD_OK},
        {"pd again", hsi::CMD_BAD_PARAM},
        {"pd out of range", hsi::CMD_BAD_PARAM},
        {"cq1", hsi::CMD_OK},
        {"cq2", hsi::CMD_OK},
        {"srq", hsi::CMD_OK},
        {"qp10", hsi::CMD_OK},
        {"qp10 again", hsi::CMD_BAD_PARAM},
        {"qp out of range", hsi::CMD_BAD_PARAM},
        {"qp missing pd", hsi::CMD_BAD_HANDLE},
        {"qp missing cq", hsi::CMD_BAD_HANDLE},
        {"qp missing srq", hsi::CMD_BAD_HANDLE},
        {"qp too deep", hsi::CMD_BAD_PARAM},
        {"qp bad stride", hsi::CMD_BAD_PARAM},
        {"qp inline too big", hsi::CMD_BAD_PARAM},
        {"qp no rq ring", hsi::CMD_BAD_PARAM},
        {"qp13", hsi::CMD_OK},
        {"destroy cq busy", hsi::CMD_BUSY},
        {"destroy pd busy", hsi::CMD_BUSY},
        {"destroy srq busy", hsi::CMD_BUSY},
        {"destroy qp10", hsi::CMD_OK},
        {"destroy qp13", hsi::CMD_OK},
        {"destroy qp10 again", hsi::CMD_BAD_HANDLE},
        {"destroy qp out of range", hsi::CMD_BAD_PARAM},
        {"destroy pd still busy", hsi::CMD_BUSY},
        {"destroy srq", hsi::CMD_OK},
        {"destroy pd", hsi::CMD_OK},
        {"destroy pd again", hsi::CMD_BAD_HANDLE},
        {"destroy pd out of range", hsi::CMD_BAD_PARAM},
        {"destroy cq1", hsi::CMD_OK},
        {"destroy cq2", hsi::CMD_OK},
    };
    EXPECT_EQ(st, expect);
    EXPECT_EQ(b.contexts.qp(10), nullptr);
    EXPECT_EQ(b.contexts.pd(1), nullptr);
}

TEST(CmdProcessor, CreateQpFillsContextAndSrqCommandsValidate) {
    bench_config c = cmd_config();
    c.limits.max_srqs = 8;
    bench b(c);
    std::vector<std::pair<std::string, uint8_t>> st;
    auto x = [&](const char* what, const hsi::cmd_slot& s) { st.emplace_back(what, exec(b, s)); };
    b.drv.body = [&] {
        b.setup_queues();
        x("pd", obj_cmd(hsi::CMD_CREATE_PD, 2));
        x("cq", cq_cmd(hsi::CMD_CREATE_CQ, 5, 6));
        x("qp", qp_cmd(7, 2, 5, 5));
        x("srq 0", srq_cmd(hsi::CMD_CREATE_SRQ, 0, 2));
        x("srq out of range", srq_cmd(hsi::CMD_CREATE_SRQ, 8, 2));
        x("srq too deep", srq_cmd(hsi::CMD_CREATE_SRQ, 1, 2, 13));
        x("srq bad stride", srq_cmd(hsi::CMD_CREATE_SRQ, 1, 2, 6, 8));
        x("srq limit > depth", srq_cmd(hsi::CMD_CREATE_SRQ, 1, 2, 6, 64, 65));
        x("srq missing pd", srq_cmd(hsi::CMD_CREATE_SRQ, 1, 3));
        x("srq", srq_cmd(hsi::CMD_CREATE_SRQ, 1, 2, 6, 64, 16));
        x("srq again", srq_cmd(hsi::CMD_CREATE_SRQ, 1, 2));
        x("modify srq", srq_cmd(hsi::CMD_MODIFY_SRQ, 1, 0, 0, 0, 32));
        x("modify srq limit > depth", srq_cmd(hsi::CMD_MODIFY_SRQ, 1, 0, 0, 0, 100));
        x("modify srq invalid", srq_cmd(hsi::CMD_MODIFY_SRQ, 2, 0, 0, 0, 1));
        x("modify srq out of range", srq_cmd(hsi::CMD_MODIFY_SRQ, 9, 0, 0, 0, 1));
        x("destroy srq invalid", obj_cmd(hsi::CMD_DESTROY_SRQ, 2));
        x("destroy srq 0", obj_cmd(hsi::CMD_DESTROY_SRQ, 0));
    };
    run(b);
    const std::vector<std::pair<std::string, uint8_t>> expect = {
        {"pd", hsi::CMD_OK},
        {"cq", hsi::CMD_OK},
        {"qp", hsi::CMD_OK},
        {"srq 0", hsi::CMD_BAD_PARAM},
        {"srq out of range", hsi::CMD_BAD_PARAM},
        {"srq too deep", hsi::CMD_BAD_PARAM},
        {"srq bad stride", hsi::CMD_BAD_PARAM},
        {"srq limit > depth", hsi::CMD_BAD_PARAM},
        {"srq missing pd", hsi::CMD_BAD_HANDLE},
        {"srq", hsi::CMD_OK},
        {"srq again", hsi::CMD_BAD_PARAM},
        {"modify srq", hsi::CMD_OK},
        {"modify srq limit > depth", hsi::CMD_BAD_PARAM},
        {"modify srq invalid", hsi::CMD_BAD_HANDLE},
        {"modify srq out of range", hsi::CMD_BAD_PARAM},
        {"destroy srq invalid", hsi::CMD_BAD_HANDLE},
        {"destroy srq 0", hsi::CMD_BAD_PARAM},
    };
    EXPECT_EQ(st, expect);
    const qp_context* qp = b.contexts.qp(7);
    ASSERT_NE(qp, nullptr);
    EXPECT_EQ(qp->state, hsi::QPS_INIT);
    EXPECT_EQ(qp->pdn, 2u);
    EXPECT_EQ(qp->send_cqn, 5u);
    EXPECT_EQ(qp->recv_cqn, 5u);
    EXPECT_EQ(qp->srqn, 0u);
    EXPECT_EQ(qp->sq_log_depth, 6u);
    EXPECT_EQ(qp->rq_log_depth, 5u);
    EXPECT_EQ(qp->sq_addr, RING_AREA + 0x100000 + 0x70000);
    EXPECT_EQ(qp->rq_addr, RING_AREA + 0x200000 + 0x70000);
    EXPECT_EQ(qp->sq_stride, 128u);
    EXPECT_EQ(qp->rq_stride, 48u);
    EXPECT_EQ(qp->max_inline, 64u);
    EXPECT_EQ(qp->sq_producer, 0u);
    const srq_context* srq = b.contexts.srq(1);
    ASSERT_NE(srq, nullptr);
    EXPECT_EQ(srq->pdn, 2u);
    EXPECT_EQ(srq->log_depth, 6u);
    EXPECT_EQ(srq->stride, 64u);
    EXPECT_EQ(srq->limit, 32u);
    EXPECT_EQ(b.contexts.pd(2)->refcount, 2u);
}

TEST(CmdProcessor, ModifyQpFollowsStateMachineSetsPsnsAndSchedulesOnRtsAndError) {
    bench b(cmd_config());
    std::vector<std::pair<uint32_t, sc_time>> scheduled;
    // Stand-in for WQE fetch.
    b.drv.aux = [&] {
        for (;;) {
            const uint32_t qpn = b.db.sq_ready().get();
            scheduled.emplace_back(qpn, sc_time_stamp());
            qp_context* q = b.contexts.qp(qpn);
            q->sq_fetched = q->sq_producer;
            b.db.reschedule(qpn);
        }
    };
    std::vector<std::pair<std::string, uint8_t>> st;
    auto x = [&](const char* what, const hsi::cmd_slot& s) { st.emplace_back(what, exec(b, s)); };
    sc_time rts_done;
    b.drv.body = [&] {
        b.setup_queues();
        x("pd", obj_cmd(hsi::CMD_CREATE_PD, 1));
        x("cq", cq_cmd(hsi::CMD_CREATE_CQ, 1, 4));
        x("qp20", qp_cmd(20, 1, 1, 1));
        x("qp21", qp_cmd(21, 1, 1, 1));
        b.drv.write64(hsi::REG_SQ_DOORBELL, 20 | (uint64_t{2} << 32));  // WQEs before RTS
        b.settle();
        EXPECT_TRUE(scheduled.empty());
        x("init->rts", modify_cmd(20, hsi::QPS_RTS));
        x("pmtu 128", modify_cmd(20, hsi::QPS_RTR, 7));
        x("pmtu 8192", modify_cmd(20, hsi::QPS_RTR, 13));
        hsi::cmd_slot ord = modify_cmd(20, hsi::QPS_RTR);
        ord.u.modify_qp.max_rd_atomic = 17;
        x("ord too big", ord);
        x("bad state", modify_cmd(20, 9));
        x("invalid qp", modify_cmd(99, hsi::QPS_RTR));
        x("qp out of range", modify_cmd(5000, hsi::QPS_RTR));
        hsi::cmd_slot rtr = modify_cmd(20, hsi::QPS_RTR, 12);
        rtr.u.modify_qp.rq_psn = 0x123456;
        rtr.u.modify_qp.dest_qpn = 0x77;
        rtr.u.modify_qp.dest_ip = 0xc0a80102;
        const uint8_t mac[6] = {2, 0, 0, 0, 0, 9};
        std::memcpy(rtr.u.modify_qp.dest_mac, mac, 6);
        rtr.u.modify_qp.retry_count = 5;
        rtr.u.modify_qp.rnr_retry = 6;
        rtr.u.modify_qp.timeout_log = 18;
        rtr.u.modify_qp.max_rd_atomic = 8;
        x("init->rtr", rtr);
        EXPECT_TRUE(scheduled.empty());  // RTR does not send
        hsi::cmd_slot rts = rtr;
        rts.u.modify_qp.state = hsi::QPS_RTS;
        rts.u.modify_qp.sq_psn = 0xabcdef;
        x("rtr->rts", rts);
        rts_done = sc_time_stamp();
        hsi::cmd_slot rts2 = rts;
        rts2.u.modify_qp.sq_psn = 0x111111;
        rts2.u.modify_qp.pmtu_log = 11;
        x("rts->rts", rts2);
        // ERROR from INIT, other fields ignored; queued WQEs get scheduled to be flushed.
        b.drv.write64(hsi::REG_SQ_DOORBELL, 21 | (uint64_t{4} << 32));
        b.settle();
        x("init->error", modify_cmd(21, hsi::QPS_ERROR, 0));
        x("error->rts", modify_cmd(21, hsi::QPS_RTS));
        x("error->reset", modify_cmd(21, hsi::QPS_RESET, 0));
        x("reset->init", modify_cmd(21, hsi::QPS_INIT));
        x("destroy", obj_cmd(hsi::CMD_DESTROY_QP, 20));
        b.settle();
    };
    run(b);
    const std::vector<std::pair<std::string, uint8_t>> expect = {
        {"pd", hsi::CMD_OK},
        {"cq", hsi::CMD_OK},
        {"qp20", hsi::CMD_OK},
        {"qp21", hsi::CMD_OK},
        {"init->rts", hsi::CMD_BAD_PARAM},
        {"pmtu 128", hsi::CMD_BAD_PARAM},
        {"pmtu 8192", hsi::CMD_BAD_PARAM},
        {"ord too big", hsi::CMD_BAD_PARAM},
        {"bad state", hsi::CMD_BAD_PARAM},
        {"invalid qp", hsi::CMD_BAD_HANDLE},
        {"qp out of range", hsi::CMD_BAD_PARAM},
        {"init->rtr", hsi::CMD_OK},
        {"rtr->rts", hsi::CMD_OK},
        {"rts->rts", hsi::CMD_OK},
        {"init->error", hsi::CMD_OK},
        {"error->rts", hsi::CMD_BAD_PARAM},
        {"error->reset", hsi::CMD_OK},
        {"reset->init", hsi::CMD_OK},
        {"destroy", hsi::CMD_OK},
    };
    EXPECT_EQ(st, expect);
    ASSERT_EQ(scheduled.size(), 2u);
    EXPECT_EQ(scheduled[0].first, 20u);
    EXPECT_LT(scheduled[0].second, rts_done);  // scheduled when RTS executed, before done landed
    EXPECT_EQ(scheduled[1].first, 21u);
    EXPECT_EQ(b.contexts.qp(20), nullptr);
    const qp_context* q21 = b.contexts.qp(21);
    ASSERT_NE(q21, nullptr);
    EXPECT_EQ(q21->state, hsi::QPS_INIT);
    EXPECT_EQ(q21->sq_producer, 0u);                           // RESET cleared the queue state
    EXPECT_EQ(q21->sq_addr, RING_AREA + 0x100000 + 0x150000);  // creation parameters kept
    EXPECT_EQ(b.contexts.pd(1)->refcount, 1u);
    EXPECT_EQ(b.contexts.cq(1)->refcount, 2u);
}

TEST(CmdProcessor, ModifyQpAppliesAttributesAndPsnsOnEnteringStates) {
    bench b(cmd_config());
    b.drv.body = [&] {
        b.setup_queues();
        exec(b, obj_cmd(hsi::CMD_CREATE_PD, 1));
        exec(b, cq_cmd(hsi::CMD_CREATE_CQ, 1, 4));
        exec(b, qp_cmd(3, 1, 1, 1));
        hsi::cmd_slot m = modify_cmd(3, hsi::QPS_RTR, 12);
        m.u.modify_qp.rq_psn = 0x1123456;  // 24-bit PSN: upper bits dropped
        m.u.modify_qp.sq_psn = 0x999;
        m.u.modify_qp.dest_qpn = 0x77;
        m.u.modify_qp.dest_ip = 0xc0a80102;
        const uint8_t mac[6] = {2, 0, 0, 0, 0, 9};
        std::memcpy(m.u.modify_qp.dest_mac, mac, 6);
        m.u.modify_qp.retry_count = 5;
        m.u.modify_qp.rnr_retry = 6;
        m.u.modify_qp.timeout_log = 18;
        m.u.modify_qp.max_rd_atomic = 8;
        EXPECT_EQ(exec(b, m), hsi::CMD_OK);
        const qp_context* q = b.contexts.qp(3);
        EXPECT_EQ(q->state, hsi::QPS_RTR);
        EXPECT_EQ(q->expected_psn, 0x123456u);
        EXPECT_EQ(q->next_psn, 0u);  // not RTS yet
        EXPECT_EQ(q->pmtu, 4096u);
        EXPECT_EQ(q->dest_qpn, 0x77u);
        EXPECT_EQ(q->dest_ip, 0xc0a80102u);
        EXPECT_EQ(q->dest_mac[5], 9);
        EXPECT_EQ(q->retry_count, 5);
        EXPECT_EQ(q->rnr_retry, 6);
        EXPECT_EQ(q->timeout_log, 18);
        EXPECT_EQ(q->max_rd_atomic, 8);
        m.u.modify_qp.state = hsi::QPS_RTS;
        m.u.modify_qp.sq_psn = 0xabcdef;
        m.u.modify_qp.rq_psn = 0;
        EXPECT_EQ(exec(b, m), hsi::CMD_OK);
        EXPECT_EQ(q->next_psn, 0xabcdefu);
        EXPECT_EQ(q->expected_psn, 0x123456u);  // RTR's PSN stays
        m.u.modify_qp.sq_psn = 0x5;
        m.u.modify_qp.pmtu_log = 8;
        EXPECT_EQ(exec(b, m), hsi::CMD_OK);
        EXPECT_EQ(q->next_psn, 0xabcdefu);  // RTS->RTS keeps the live PSN
        EXPECT_EQ(q->pmtu, 256u);
    };
    run(b);
}

TEST(CmdProcessor, MrAndMwCommandsLoadPageListsInChunksAndManageTheMtt) {
    bench_config c = cmd_config();
    c.cmd.max_inline_mtt_fetch = 4;
    c.limits.max_keys = 64;
    c.limits.max_mtt_pages = 16;
    bench b(c);
    constexpr uint64_t PAGE_LIST = 0x80000;
    std::vector<std::pair<std::string, uint8_t>> st;
    auto x = [&](const char* what, const hsi::cmd_slot& s) { st.emplace_back(what, exec(b, s)); };
    const uint32_t rw = hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_READ;
    // State right after the MR is created (checked below).
    mpt_entry mr{};
    std::vector<uint64_t> mtt;
    uint32_t free_after_mr = 0;
    uint64_t dma_reads_after_mr = 0;
    b.drv.body = [&] {
        b.setup_queues();
        for (uint64_t i = 0; i < 10; ++i) {
            b.mem.store<uint64_t>(PAGE_LIST + 8 * i, 0x1000000 + 0x3000 * i);
        }
        x("pd", obj_cmd(hsi::CMD_CREATE_PD, 1));
        x("mr", mr_cmd(0x0205, 1, 10, PAGE_LIST, 10 * 4096 - 0x100, rw, 0x100));
        if (const mpt_entry* e = b.contexts.mpt(0x0205)) {
            mr = *e;
            for (uint32_t i = 0; i < e->page_count; ++i) {
                mtt.push_back(b.contexts.mtt(e->mtt_base + i));
            }
        }
        free_after_mr = b.contexts.mtt_pages_free();
        dma_reads_after_mr = b.cmdp.get_stats().mtt_dma_reads;
        x("mr key index 0", mr_cmd(0x0005, 1, 1, PAGE_LIST, 4096, rw));
        x("mr key out of range", mr_cmd(64u << 8, 1, 1, PAGE_LIST, 4096, rw));
        x("mr index in use", mr_cmd(0x0207, 1, 1, PAGE_LIST, 4096, rw));
        x("mr missing pd", mr_cmd(0x0300, 9, 1, PAGE_LIST, 4096, rw));
        x("mr longer than pages", mr_cmd(0x0300, 1, 1, PAGE_LIST, 4096, rw, 1));
        x("mr bad offset", mr_cmd(0x0300, 1, 2, PAGE_LIST, 4096, rw, 4096));
        x("mr unknown access", mr_cmd(0x0300, 1, 1, PAGE_LIST, 4096, 0x100));
        x("mr no page list", mr_cmd(0x0300, 1, 1, 0, 4096, rw));
        x("mr too many pages", mr_cmd(0x0300, 1, 17, PAGE_LIST, 4096, rw));
        x("mr mtt full", mr_cmd(0x0300, 1, 7, PAGE_LIST, 4096, rw));
        x("fast-reg", mr_cmd(0x0300, 1, 6, 0, 0, hsi::ACCESS_FAST_REG | rw));
        x("fast-reg no pages", mr_cmd(0x0400, 1, 0, 0, 0, hsi::ACCESS_FAST_REG));
        x("mw", obj_cmd(hsi::CMD_CREATE_MW, 0x0500, 1));
        x("mw again", obj_cmd(hsi::CMD_CREATE_MW, 0x0501, 1));
        x("mw missing pd", obj_cmd(hsi::CMD_CREATE_MW, 0x0600, 7));
        x("mw key index 0", obj_cmd(hsi::CMD_CREATE_MW, 0x0010, 1));
        x("destroy pd busy", obj_cmd(hsi::CMD_DESTROY_PD, 1));
        // A BIND_MW WQE (not this block) binds the window to the MR.
        mpt_entry* mw = b.contexts.mpt_slot(0x0500);
        mw->valid = true;
        mw->parent_index = 2;
        b.contexts.mpt_slot(0x0205)->bind_count = 1;
        x("destroy mr with window", obj_cmd(hsi::CMD_DESTROY_MR, 0x0205));
        x("destroy mw as mr", obj_cmd(hsi::CMD_DESTROY_MR, 0x0500));
        x("destroy mr as mw", obj_cmd(hsi::CMD_DESTROY_MW, 0x0205));
        x("destroy mw", obj_cmd(hsi::CMD_DESTROY_MW, 0x0500));
        EXPECT_EQ(b.contexts.mpt_slot(0x0205)->bind_count, 0u);  // the binding went with it
        x("destroy mw again", obj_cmd(hsi::CMD_DESTROY_MW, 0x0500));
        x("destroy mr", obj_cmd(hsi::CMD_DESTROY_MR, 0x0205));
        x("destroy fast-reg, new variant", obj_cmd(hsi::CMD_DESTROY_MR, 0x03ff));
        x("destroy mr again", obj_cmd(hsi::CMD_DESTROY_MR, 0x0205));
        x("destroy mr key index 0", obj_cmd(hsi::CMD_DESTROY_MR, 0x0001));
        x("destroy pd", obj_cmd(hsi::CMD_DESTROY_PD, 1));
    };
    run(b);
    EXPECT_TRUE(mr.valid);
    EXPECT_TRUE(mr.allocated);
    EXPECT_FALSE(mr.is_mw);
    EXPECT_EQ(mr.key, 0x0205u);
    EXPECT_EQ(mr.pdn, 1u);
    EXPECT_EQ(mr.access, rw);
    EXPECT_EQ(mr.base_va, 0x7000'0100u);
    EXPECT_EQ(mr.length, 10u * 4096 - 0x100);
    EXPECT_EQ(mr.first_byte_offset, 0x100u);
    EXPECT_EQ(mr.page_count, 10u);
    ASSERT_EQ(mtt.size(), 10u);
    for (uint64_t i = 0; i < 10; ++i) {
        EXPECT_EQ(mtt[i], 0x1000000 + 0x3000 * i);
    }
    EXPECT_EQ(free_after_mr, 6u);
    EXPECT_EQ(dma_reads_after_mr, 3u);  // 4 + 4 + 2 pages

    const std::vector<std::pair<std::string, uint8_t>> expect = {
        {"pd", hsi::CMD_OK},
        {"mr", hsi::CMD_OK},
        {"mr key index 0", hsi::CMD_BAD_PARAM},
        {"mr key out of range", hsi::CMD_BAD_PARAM},
        {"mr index in use", hsi::CMD_BAD_PARAM},
        {"mr missing pd", hsi::CMD_BAD_HANDLE},
        {"mr longer than pages", hsi::CMD_BAD_PARAM},
        {"mr bad offset", hsi::CMD_BAD_PARAM},
        {"mr unknown access", hsi::CMD_BAD_PARAM},
        {"mr no page list", hsi::CMD_BAD_PARAM},
        {"mr too many pages", hsi::CMD_BAD_PARAM},
        {"mr mtt full", hsi::CMD_NO_RESOURCES},
        {"fast-reg", hsi::CMD_OK},
        {"fast-reg no pages", hsi::CMD_BAD_PARAM},
        {"mw", hsi::CMD_OK},
        {"mw again", hsi::CMD_BAD_PARAM},
        {"mw missing pd", hsi::CMD_BAD_HANDLE},
        {"mw key index 0", hsi::CMD_BAD_PARAM},
        {"destroy pd busy", hsi::CMD_BUSY},
        {"destroy mr with window", hsi::CMD_BUSY},
        {"destroy mw as mr", hsi::CMD_BAD_HANDLE},
        {"destroy mr as mw", hsi::CMD_BAD_HANDLE},
        {"destroy mw", hsi::CMD_OK},
        {"destroy mw again", hsi::CMD_BAD_HANDLE},
        {"destroy mr", hsi::CMD_OK},
        {"destroy fast-reg, new variant", hsi::CMD_OK},
        {"destroy mr again", hsi::CMD_BAD_HANDLE},
        {"destroy mr key index 0", hsi::CMD_BAD_PARAM},
        {"destroy pd", hsi::CMD_OK},
    };
    EXPECT_EQ(st, expect);
    EXPECT_EQ(b.contexts.mtt_pages_free(), 16u);  // everything freed
    EXPECT_EQ(b.cmdp.get_stats().mtt_pages_loaded, 10u);
    EXPECT_EQ(b.cmdp.get_stats().mtt_dma_reads, 3u);
    EXPECT_EQ(b.cmdp.get_stats().by_status[hsi::CMD_NO_RESOURCES], 1u);
    EXPECT_EQ(b.dma.get_stats(dma_client::COMMAND).read_bytes, 64u * st.size() + 80u);
}

TEST(CmdProcessor, FastRegMrAndWindowAreAllocatedButNotValid) {
    bench_config c = cmd_config();
    c.limits.max_mtt_pages = 100;
    bench b(c);
    b.drv.body = [&] {
        b.setup_queues();
        EXPECT_EQ(exec(b, obj_cmd(hsi::CMD_CREATE_PD, 3)), hsi::CMD_OK);
        EXPECT_EQ(
            exec(b, mr_cmd(0x1000, 3, 40, 0, 0, hsi::ACCESS_FAST_REG | hsi::ACCESS_REMOTE_WRITE)),
            hsi::CMD_OK);
        EXPECT_EQ(exec(b, obj_cmd(hsi::CMD_CREATE_MW, 0x2000, 3)), hsi::CMD_OK);
    };
    run(b);
    const mpt_entry* fr = b.contexts.mpt(0x1000);
    ASSERT_NE(fr, nullptr);
    EXPECT_FALSE(fr->valid);
    EXPECT_TRUE(fr->allocated);
    EXPECT_EQ(fr->max_pages, 40u);
    EXPECT_EQ(fr->page_count, 0u);
    EXPECT_EQ(fr->pdn, 3u);
    EXPECT_EQ(b.contexts.mtt_pages_free(), 60u);
    EXPECT_EQ(b.cmdp.get_stats().mtt_dma_reads, 0u);  // nothing to load yet
    const mpt_entry* mw = b.contexts.mpt(0x2000);
    ASSERT_NE(mw, nullptr);
    EXPECT_TRUE(mw->is_mw);
    EXPECT_TRUE(mw->allocated);
    EXPECT_FALSE(mw->valid);
    EXPECT_EQ(b.contexts.pd(3)->refcount, 2u);
}

TEST(CmdProcessor, UnknownOpcodeQueryDeviceAndGarbageCommandsNeverCrash) {
    bench b(cmd_config());
    std::vector<uint8_t> statuses;
    b.drv.body = [&] {
        b.setup_queues();
        statuses.push_back(exec(b, make_cmd(hsi::CMD_QUERY_DEVICE)));
        statuses.push_back(exec(b, make_cmd(hsi::CMD_NOP)));
        statuses.push_back(exec(b, make_cmd(200)));
        std::mt19937 rng(1);
        for (int batch = 0; batch < 20; ++batch) {
            std::vector<uint32_t> idx;
            for (int i = 0; i < 15; ++i) {  // one doorbell for 15 slots of a 16-slot ring
                hsi::cmd_slot s;
                auto* raw = reinterpret_cast<uint8_t*>(&s);
                for (size_t k = 0; k < sizeof(s); ++k) {
                    raw[k] = static_cast<uint8_t>(rng());
                }
                s.opcode = static_cast<uint8_t>(rng() % 20);
                if (rng() % 2 == 0) {  // small handles so some commands get deep
                    s.u.obj.handle = rng() % 8;
                    s.u.obj.pdn = rng() % 4;
                }
                idx.push_back(post_cmd(b, s));
            }
            ring_cmd(b);
            for (uint32_t i : idx) {
                statuses.push_back(wait_cmd(b, i));
            }
        }
    };
    run(b);
    ASSERT_EQ(statuses.size(), 303u);
    EXPECT_EQ(statuses[0], hsi::CMD_OK);
    EXPECT_EQ(statuses[1], hsi::CMD_OK);
    EXPECT_EQ(statuses[2], hsi::CMD_BAD_OPCODE);
    for (uint8_t s : statuses) {
        EXPECT_LE(s, hsi::CMD_BUSY);
    }
    EXPECT_EQ(b.cmdp.get_stats().commands, 303u);
    EXPECT_GT(b.cmdp.get_stats().by_status[hsi::CMD_BAD_OPCODE], 1u);
    EXPECT_EQ(b.cmdp.consumer(), 303u);
    // The driver never consumed the 16-entry EQ: the rest of the EVENT_CMD_DONEs were lost.
    EXPECT_EQ(b.cqw.get_stats().events, 16u);
    EXPECT_EQ(b.cqw.get_stats().eq_overruns, 303u - 16u);
}

TEST(CmdProcessor, BackToBackDoorbellsAreCoalescedAndCommandsRunInOrder) {
    bench b(cmd_config());
    std::vector<sc_time> done(15);
    b.drv.body = [&] {
        b.setup_queues();
        for (uint32_t i = 0; i < 15; ++i) {
            post_cmd(b, make_cmd(hsi::CMD_NOP));
            ring_cmd(b);  // one doorbell per command, back to back
        }
        for (uint32_t i = 0; i < 15; ++i) {
            wait_cmd(b, i);
            done[i] = sc_time_stamp();
        }
    };
    run(b);
    EXPECT_EQ(b.db.get_stats().cmd_doorbells, 15u);
    EXPECT_GT(b.db.get_stats().cmd_coalesced, 0u);
    EXPECT_EQ(b.cmdp.get_stats().commands, 15u);
    for (uint32_t i = 1; i < 15; ++i) {
        // One at a time: each takes at least the read round trip plus the execution time.
        EXPECT_GE(done[i] - done[i - 1], b.clk.cycles(50) + sc_time(240, SC_NS)) << i;
    }
}

TEST(CmdProcessor, DoorbellsWithoutAUsableRingAreIgnoredUntilItIsSetUp) {
    bench b(cmd_config());
    uint8_t done_before = 0xff;
    uint8_t status = 0xff;
    b.drv.body = [&] {
        post_cmd(b, make_cmd(hsi::CMD_NOP));
        ring_cmd(b);  // no CMDQ_BASE yet
        b.settle();
        done_before = b.mem.load<uint8_t>(slot_addr(0) + 2);
        b.setup_queues();
        b.drv.write32(hsi::REG_CMDQ_DOORBELL, 100);  // beyond the ring: ignored
        b.settle();
        ring_cmd(b);
        status = wait_cmd(b, 0);
    };
    run(b);
    EXPECT_EQ(done_before, 0);
    EXPECT_EQ(status, hsi::CMD_OK);
    EXPECT_EQ(b.cmdp.get_stats().ring_errors, 2u);
    EXPECT_EQ(b.cmdp.get_stats().commands, 1u);
}

TEST(CmdProcessor, CommandsInvalidateCachedContexts) {
    bench b(cmd_config());
    context_cache cache("cache", context_cache_config{}, b.clk, b.dma, b.ctx);
    cache.watch_icm_base(&b.db.registers().icm_base, b.limits.max_qps, b.limits.max_keys);
    b.cmdp.set_context_cache(&cache);
    constexpr uint64_t PAGE_LIST = 0x80000;
    uint32_t mtt_base = 0;
    std::vector<uint64_t> qpc_misses;
    std::vector<uint64_t> mpt_misses;
    std::vector<uint64_t> mtt_misses;
    auto snap = [&] {
        qpc_misses.push_back(cache.get_stats(ctx_kind::QPC).misses);
        mpt_misses.push_back(cache.get_stats(ctx_kind::MPT).misses);
        mtt_misses.push_back(cache.get_stats(ctx_kind::MTT).misses);
    };
    b.drv.body = [&] {
        b.setup_queues();
        b.drv.write64(hsi::REG_ICM_BASE, 0x1000'0000);
        b.settle();
        b.mem.store<uint64_t>(PAGE_LIST, 0xabc000);
        b.mem.store<uint64_t>(PAGE_LIST + 8, 0xdef000);
        exec(b, obj_cmd(hsi::CMD_CREATE_PD, 1));
        exec(b, cq_cmd(hsi::CMD_CREATE_CQ, 1, 4));
        exec(b, qp_cmd(7, 1, 1, 1));
        exec(b, mr_cmd(0x0300, 1, 2, PAGE_LIST, 8192, hsi::ACCESS_LOCAL_WRITE));
        mtt_base = b.contexts.mpt(0x0300)->mtt_base;
        cache.access(ctx_kind::QPC, 7);  // miss, then hits
        cache.access(ctx_kind::QPC, 7);
        cache.access(ctx_kind::MPT, 3);
        cache.access(ctx_kind::MTT, mtt_base + 1);
        cache.access(ctx_kind::MPT, 3);
        cache.access(ctx_kind::MTT, mtt_base);
        snap();
        exec(b, modify_cmd(7, hsi::QPS_ERROR));
        cache.access(ctx_kind::QPC, 7);  // invalidated: miss again
        cache.access(ctx_kind::MPT, 3);  // untouched: hit
        snap();
        exec(b, obj_cmd(hsi::CMD_DESTROY_MR, 0x0300));
        cache.access(ctx_kind::MPT, 3);
        cache.access(ctx_kind::MTT, mtt_base);
        snap();
    };
    run(b);
    EXPECT_EQ(qpc_misses, (std::vector<uint64_t>{1, 2, 2}));
    EXPECT_EQ(mpt_misses, (std::vector<uint64_t>{1, 1, 2}));
    EXPECT_EQ(mtt_misses, (std::vector<uint64_t>{1, 1, 2}));
}

TEST(NicLimits, ParsesRangesAndRejectsUnknownKeys) {
    config::parse_context ctx;
    const nlohmann::json j = {{"max_qps", 64}, {"max_mtu", 2048}};
    const nic_limits l = parse_nic_limits(config::reader(j, "rnic.limits", ctx));
    ctx.throw_if_errors();
    EXPECT_EQ(l.max_qps, 64u);
    EXPECT_EQ(l.max_mtu, 2048u);
    EXPECT_EQ(l.max_cqs, nic_limits{}.max_cqs);
    EXPECT_EQ(ctx.effective["rnic"]["limits"]["max_keys"], 8192);

    config::parse_context bad;
    const nlohmann::json jb = {
        {"max_qps", 0}, {"max_mtu", 1000}, {"max_qp", 1}, {"max_sge", "many"}};
    parse_nic_limits(config::reader(jb, "rnic.limits", bad));
    ASSERT_EQ(bad.errors.size(), 4u);
    EXPECT_NE(bad.errors[0].find("rnic.limits.max_qps: 0 out of range"), std::string::npos);
    EXPECT_NE(bad.errors[1].find("rnic.limits.max_sge"), std::string::npos);
    EXPECT_NE(bad.errors[2].find("rnic.limits.max_mtu: 1000 is not one of"), std::string::npos);
    EXPECT_NE(bad.errors[3].find("rnic.limits.max_qp: unknown key"), std::string::npos);
}

TEST(BlockConfigs, ParseDefaultsRangesAndUnknownKeys) {
    config::parse_context ctx;
    const auto db = parse_doorbell_config(
        config::reader({{"decode_cycles", 5}, {"push_buffers", 4}}, "rnic.doorbell", ctx));
    const auto cqw =
        parse_cq_writer_config(config::reader({{"latency_cycles", 7}}, "rnic.cq_writer", ctx));
    const auto cmd = parse_cmd_processor_config(
        config::reader({{"cycles_per_command", 1000}}, "rnic.cmd_processor", ctx));
    ctx.throw_if_errors();
    EXPECT_EQ(db.decode_cycles, 5u);
    EXPECT_EQ(db.push_buffers, 4u);
    EXPECT_EQ(db.ready_fifo_depth, doorbell_config{}.ready_fifo_depth);
    EXPECT_EQ(cqw.latency_cycles, 7u);
    EXPECT_EQ(cqw.fifo_depth, cq_writer_config{}.fifo_depth);
    EXPECT_EQ(cmd.cycles_per_command, 1000u);
    EXPECT_EQ(cmd.max_inline_mtt_fetch, cmd_processor_config{}.max_inline_mtt_fetch);

    config::parse_context bad;
    parse_doorbell_config(config::reader({{"ready_fifo_depth", 0}}, "rnic.doorbell", bad));
    parse_cq_writer_config(config::reader({{"fifo", 1}}, "rnic.cq_writer", bad));
    parse_cmd_processor_config(
        config::reader({{"max_inline_mtt_fetch", 0}}, "rnic.cmd_processor", bad));
    ASSERT_EQ(bad.errors.size(), 3u);
    EXPECT_NE(bad.errors[0].find("rnic.doorbell.ready_fifo_depth"), std::string::npos);
    EXPECT_NE(bad.errors[1].find("rnic.cq_writer.fifo: unknown key"), std::string::npos);
    EXPECT_NE(bad.errors[2].find("rnic.cmd_processor.max_inline_mtt_fetch"), std::string::npos);
    EXPECT_THROW(bad.throw_if_errors(), config::config_error);
}

}  // namespace
