// SPDX-License-Identifier: Apache-2.0
// CQ writer: CQE placement and phase, overrun, CQ arming, event queue, MSI-X delivery and masking.
#include "hw/cq_writer/cq_writer.h"

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

constexpr uint64_t CQ_RING = 0x40000;

cq_context& make_cq(bench& b, uint32_t cqn, uint32_t log_depth, uint32_t vector) {
    cq_context* cq = b.contexts.cq_slot(cqn);
    *cq = cq_context{};
    cq->valid = true;
    cq->log_depth = log_depth;
    cq->ring_addr = CQ_RING + 0x1000ull * cqn;
    cq->msix_vector = vector;
    return *cq;
}

completion_request make_req(uint32_t cqn, uint16_t index, uint8_t flags = 0,
                            uint8_t status = hsi::CQE_OK) {
    completion_request r;
    r.cqn = cqn;
    r.entry.qpn = 0x11;
    r.entry.wqe_index = index;
    r.entry.opcode = hsi::CQE_SEND;
    r.entry.status = status;
    r.entry.byte_len = 100u + index;
    r.entry.flags = flags;
    return r;
}

hsi::cqe cqe_at(bench& b, uint32_t cqn, uint32_t slot) {
    return b.mem.load<hsi::cqe>(CQ_RING + 0x1000ull * cqn + 32ull * slot);
}

hsi::event_entry eqe_at(bench& b, uint32_t slot) {
    return b.mem.load<hsi::event_entry>(EQ_BASE + 16ull * slot);
}

uint64_t cq_db(uint32_t cqn, uint8_t arm, uint32_t consumer) {
    return cqn | (uint64_t{arm} << 24) | (uint64_t{consumer} << 32);
}

// Waits (in the driver thread) until host memory satisfies `pred`; a DMA write wakes it at the
// time the bytes land.
template <typename F>
void wait_mem(bench& b, F pred) {
    while (!pred()) {
        sc_core::wait(b.mem.dma_write_event());
    }
}

TEST(CqWriter, CqeLandsAfterLatencyAndPcieWithPhaseFlippingAtEachWrap) {
    bench b;
    make_cq(b, 3, 2, 1);  // 4 entries
    sc_time posted;
    sc_time visible;
    b.drv.body = [&] {
        b.setup_queues();
        b.clk.wait_cycles(0);
        posted = sc_time_stamp();
        b.cqw.requests().put(make_req(3, 0));
        wait_mem(b, [&] { return (cqe_at(b, 3, 0).flags & hsi::CQE_FLAG_PHASE) != 0; });
        visible = sc_time_stamp();
        for (uint16_t i = 1; i < 4; ++i) {
            b.cqw.requests().put(make_req(3, i));
        }
        b.settle();
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(3, hsi::CQ_ARM_NONE, 4));
        b.settle();
        // Second pass: phase 0. A phase bit set by the producer is overwritten.
        b.cqw.requests().put(make_req(3, 4, hsi::CQE_FLAG_PHASE));
        b.cqw.requests().put(make_req(3, 5));
        b.settle();
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(3, hsi::CQ_ARM_NONE, 6));
        b.settle();
        for (uint16_t i = 6; i < 10; ++i) {
            b.cqw.requests().put(make_req(3, i));
        }
        b.settle();
    };
    run(b);
    // Request on an edge: +latency_cycles (4) + DMA issue (2), then a 32 B MWr and the latency.
    const sc_time issue = posted + b.clk.cycles(4 + 2);
    EXPECT_EQ(visible, bench::ceil_ps(b.ps(issue) + b.wire_ps(24 + 32) + b.lat_ps()));
    EXPECT_GT(visible, posted + sc_time(b.link.config().latency_ns, SC_NS));
    // Slots 0,1: producer 8,9 (third pass, phase 1); slots 2,3: producer 6,7 (second pass).
    const uint16_t expect_index[4] = {8, 9, 6, 7};
    for (uint32_t s = 0; s < 4; ++s) {
        const hsi::cqe e = cqe_at(b, 3, s);
        EXPECT_EQ(e.wqe_index, expect_index[s]) << "slot " << s;
        EXPECT_EQ(e.byte_len, 100u + expect_index[s]);
        EXPECT_EQ(e.qpn, 0x11u);
        EXPECT_EQ(e.opcode, hsi::CQE_SEND);
        const bool phase = (e.flags & hsi::CQE_FLAG_PHASE) != 0;
        EXPECT_EQ(phase, s < 2) << "slot " << s;
    }
    EXPECT_EQ(b.contexts.cq(3)->producer, 10u);
    EXPECT_EQ(b.cqw.get_stats().cqes, 10u);
    EXPECT_EQ(b.cqw.get_stats().overruns, 0u);
    EXPECT_EQ(b.dma.get_stats(dma_client::COMPLETION).writes, 10u);
    EXPECT_TRUE(b.msis.empty());  // nothing armed
}

TEST(CqWriter, SecondPassEntriesReplaceFirstPassOnesWithPhaseZero) {
    bench b;
    make_cq(b, 2, 1, 0);  // 2 entries
    b.drv.body = [&] {
        b.setup_queues();
        b.cqw.requests().put(make_req(2, 0));
        b.cqw.requests().put(make_req(2, 1));
        b.settle();
        EXPECT_NE(cqe_at(b, 2, 0).flags & hsi::CQE_FLAG_PHASE, 0);
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(2, hsi::CQ_ARM_NONE, 1));
        b.settle();
        b.cqw.requests().put(make_req(2, 2));
        wait_mem(b, [&] { return cqe_at(b, 2, 0).wqe_index == 2; });
        EXPECT_EQ(cqe_at(b, 2, 0).flags & hsi::CQE_FLAG_PHASE, 0);
        EXPECT_NE(cqe_at(b, 2, 1).flags & hsi::CQE_FLAG_PHASE, 0);  // still first pass
    };
    run(b);
    EXPECT_EQ(b.cqw.get_stats().cqes, 3u);
}

TEST(CqWriter, OverrunPutsCqInErrorPostsEventAndDropsLaterCqes) {
    bench b;
    make_cq(b, 4, 2, 1);
    b.drv.body = [&] {
        b.setup_queues();
        for (uint16_t i = 0; i < 6; ++i) {
            b.cqw.requests().put(make_req(4, i));
        }
        b.cqw.requests().put(make_req(9, 0));  // no such CQ
        b.settle();
    };
    run(b);
    const cq_context* cq = b.contexts.cq(4);
    EXPECT_TRUE(cq->error);
    EXPECT_EQ(cq->producer, 4u);
    for (uint32_t s = 0; s < 4; ++s) {
        EXPECT_EQ(cqe_at(b, 4, s).wqe_index, s);
    }
    const hsi::event_entry e = eqe_at(b, 0);
    EXPECT_EQ(e.type, hsi::EVENT_CQ_ERROR);
    EXPECT_EQ(e.data, 4u);
    EXPECT_EQ(e.flags, 0x80);
    EXPECT_EQ(eqe_at(b, 1).type, 0);  // only one event
    ASSERT_EQ(b.msis.size(), 1u);     // async vector 0
    EXPECT_EQ(b.msis[0].addr, MSI_ADDR);
    EXPECT_EQ(b.msis[0].data, 0x100u);
    EXPECT_EQ(b.cqw.get_stats().cqes, 4u);
    EXPECT_EQ(b.cqw.get_stats().overruns, 1u);
    EXPECT_EQ(b.cqw.get_stats().dropped, 2u);  // after the error, and the invalid CQ
    EXPECT_EQ(b.cqw.get_stats().events, 1u);
    EXPECT_EQ(b.cqw.get_stats().interrupts, 1u);
}

TEST(CqWriter, ArmAnyFiresOnceEqeBeforeMsixOnTheCqVectorThenRearm) {
    bench b;
    make_cq(b, 5, 4, 3);
    sc_time cqe_visible;
    sc_time eqe_visible;
    b.drv.body = [&] {
        b.setup_queues();
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(5, hsi::CQ_ARM_ANY, 0));
        b.settle();
        EXPECT_EQ(b.contexts.cq(5)->armed, hsi::CQ_ARM_ANY);
        b.cqw.requests().put(make_req(5, 0));
        wait_mem(b, [&] { return cqe_at(b, 5, 0).flags != 0; });
        cqe_visible = sc_time_stamp();
        wait_mem(b, [&] { return eqe_at(b, 0).flags != 0; });
        eqe_visible = sc_time_stamp();
        b.settle();
        EXPECT_EQ(b.contexts.cq(5)->armed, hsi::CQ_ARM_NONE);
        EXPECT_FALSE(b.cqw.eq_armed());
        b.cqw.requests().put(make_req(5, 1));  // disarmed: no event
        b.settle();
        EXPECT_EQ(b.cqw.get_stats().events, 1u);
        // Driver consumed the EQE: re-arm, nothing more to signal.
        b.drv.write32(hsi::REG_EQ_CONSUMER, 1);
        b.settle();
        EXPECT_TRUE(b.cqw.eq_armed());
        EXPECT_EQ(b.msis.size(), 1u);
        // Arming over two unconsumed CQEs fires at once.
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(5, hsi::CQ_ARM_ANY, 0));
        b.settle();
    };
    run(b);
    const hsi::event_entry e = eqe_at(b, 0);
    EXPECT_EQ(e.type, hsi::EVENT_CQ_COMPLETION);
    EXPECT_EQ(e.data, 5u);
    EXPECT_EQ(eqe_at(b, 1).type, hsi::EVENT_CQ_COMPLETION);
    EXPECT_EQ(eqe_at(b, 1).flags, 0x80);
    ASSERT_EQ(b.msis.size(), 2u);
    EXPECT_EQ(b.msis[0].addr, MSI_ADDR + 12);  // vector 3
    EXPECT_EQ(b.msis[0].data, 0x103u);
    EXPECT_EQ(b.msis[1].data, 0x103u);
    // PCIe order: CQE, then EQE, then the interrupt message.
    EXPECT_LT(cqe_visible, eqe_visible);
    EXPECT_LT(eqe_visible, b.msis[0].at);
    EXPECT_EQ(b.cqw.get_stats().cq_events, 2u);
    EXPECT_EQ(b.cqw.get_stats().interrupts, 2u);
}

TEST(CqWriter, ArmSolicitedFiresOnSolicitedOrErrorCqeOnly) {
    bench b;
    make_cq(b, 6, 4, 1);
    b.drv.body = [&] {
        b.setup_queues();
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(6, hsi::CQ_ARM_SOLICITED, 0));
        b.settle();
        b.cqw.requests().put(make_req(6, 0));
        b.settle();
        EXPECT_EQ(b.cqw.get_stats().cq_events, 0u);
        EXPECT_EQ(b.contexts.cq(6)->armed, hsi::CQ_ARM_SOLICITED);
        b.cqw.requests().put(make_req(6, 1, hsi::CQE_FLAG_SOLICITED));
        b.settle();
        EXPECT_EQ(b.cqw.get_stats().cq_events, 1u);
        b.drv.write32(hsi::REG_EQ_CONSUMER, 1);
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(6, hsi::CQ_ARM_SOLICITED, 2));
        b.settle();
        EXPECT_EQ(b.cqw.get_stats().cq_events, 1u);  // everything consumed: no immediate fire
        b.cqw.requests().put(make_req(6, 2, 0, hsi::CQE_REMOTE_ACCESS_ERR));
        b.settle();
    };
    run(b);
    EXPECT_EQ(b.cqw.get_stats().cq_events, 2u);
    EXPECT_EQ(b.cqw.get_stats().error_cqes, 1u);
    EXPECT_EQ(cqe_at(b, 6, 2).status, hsi::CQE_REMOTE_ACCESS_ERR);
    ASSERT_EQ(b.msis.size(), 2u);
    EXPECT_EQ(b.msis[0].data, 0x101u);
    EXPECT_EQ(b.msis[1].data, 0x101u);
}

TEST(CqWriter, ArmRequestsCombineAndFireImmediatelyOverUnconsumedMatches) {
    bench b;
    make_cq(b, 7, 4, 2);
    b.drv.body = [&] {
        b.setup_queues();
        b.cqw.requests().put(make_req(7, 0));
        b.cqw.requests().put(make_req(7, 1));
        b.settle();
        // Unconsumed, but none solicited: SOLICITED waits.
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(7, hsi::CQ_ARM_SOLICITED, 0));
        b.settle();
        EXPECT_EQ(b.cqw.get_stats().cq_events, 0u);
        // ANY on top of SOLICITED: ANY, and it fires at once.
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(7, hsi::CQ_ARM_ANY, 0));
        b.settle();
        EXPECT_EQ(b.cqw.get_stats().cq_events, 1u);
        EXPECT_EQ(b.contexts.cq(7)->armed, hsi::CQ_ARM_NONE);
        // A solicited CQE while disarmed, then SOLICITED with it unconsumed: fires at once.
        b.cqw.requests().put(make_req(7, 2, hsi::CQE_FLAG_SOLICITED));
        b.settle();
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(7, hsi::CQ_ARM_SOLICITED, 2));
        b.settle();
        EXPECT_EQ(b.cqw.get_stats().cq_events, 2u);
        // Consumed past it: SOLICITED stays armed.
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(7, hsi::CQ_ARM_SOLICITED, 3));
        b.settle();
        EXPECT_EQ(b.cqw.get_stats().cq_events, 2u);
        EXPECT_EQ(b.contexts.cq(7)->armed, hsi::CQ_ARM_SOLICITED);
        // ANY while caught up: armed ANY, no fire; a later SOLICITED request keeps ANY.
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(7, hsi::CQ_ARM_ANY, 3));
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(7, hsi::CQ_ARM_SOLICITED, 3));
        b.settle();
        EXPECT_EQ(b.cqw.get_stats().cq_events, 2u);
        EXPECT_EQ(b.contexts.cq(7)->armed, hsi::CQ_ARM_ANY);
        b.cqw.requests().put(make_req(7, 3));  // plain CQE fires the ANY arm
        b.settle();
    };
    run(b);
    EXPECT_EQ(b.cqw.get_stats().cq_events, 3u);
    EXPECT_EQ(b.cqw.get_stats().events, 3u);
    for (uint32_t i = 0; i < 3; ++i) {
        EXPECT_EQ(eqe_at(b, i).type, hsi::EVENT_CQ_COMPLETION);
        EXPECT_EQ(eqe_at(b, i).data, 7u);
    }
    // The EQ was never re-armed after the first batch: one message.
    EXPECT_EQ(b.msis.size(), 1u);
    EXPECT_EQ(b.cqw.get_stats().interrupts, 1u);
}

TEST(CqWriter, EqPhaseWrapOverrunAndRearmFiresWhenEntriesAreLeft) {
    bench b;
    sc_time batch_posted;
    b.drv.body = [&] {
        b.setup_queues();
        b.drv.write64(hsi::REG_EQ_LOG_SIZE, 1);  // 2 entries
        b.settle();
        b.clk.wait_cycles(0);
        batch_posted = sc_time_stamp();
        b.cqw.post_event(hsi::EVENT_QP_ERROR, 21, 0xaa);
        b.cqw.post_event(hsi::EVENT_SRQ_LIMIT, 22, 0xbb);
        b.cqw.post_event(hsi::EVENT_QP_ERROR, 23);  // EQ full (consumer 0): lost
        b.settle();
        EXPECT_EQ(b.msis.size(), 1u);            // one message for the batch
        b.drv.write32(hsi::REG_EQ_CONSUMER, 2);  // all consumed: re-arm only
        b.settle();
        EXPECT_EQ(b.msis.size(), 1u);
        b.cqw.post_event(hsi::EVENT_QP_ERROR, 24);
        b.settle();
        EXPECT_EQ(b.msis.size(), 2u);
        b.cqw.post_event(hsi::EVENT_QP_ERROR, 25);  // EQ disarmed: no message
        b.settle();
        EXPECT_EQ(b.msis.size(), 2u);
        b.drv.write32(hsi::REG_EQ_CONSUMER, 3);  // one left: fires at once
        b.settle();
    };
    run(b);
    const hsi::event_entry e0 = eqe_at(b, 0);
    const hsi::event_entry e1 = eqe_at(b, 1);
    EXPECT_EQ(e0.data, 24u);  // second pass
    EXPECT_EQ(e0.flags, 0);
    EXPECT_EQ(e1.data, 25u);
    EXPECT_EQ(e1.flags, 0);
    EXPECT_EQ(b.cqw.eq_producer(), 4u);
    EXPECT_EQ(b.cqw.get_stats().events, 4u);
    EXPECT_EQ(b.cqw.get_stats().eq_overruns, 1u);
    ASSERT_EQ(b.msis.size(), 3u);
    for (const auto& m : b.msis) {
        EXPECT_EQ(m.addr, MSI_ADDR);
        EXPECT_EQ(m.data, 0x100u);
    }
    // Batch: latency_cycles, two 16 B EQE writes (issue 2 cycles each), then the 4 B message.
    const sc_time eqe1_issue = batch_posted + b.clk.cycles(4 + 2);
    const double eqe1_sent = b.ps(eqe1_issue) + b.wire_ps(24 + 16);
    const sc_time eqe2_issue = b.edge(bench::ceil_ps(eqe1_sent)) + b.clk.cycles(2);
    const double eqe2_sent = b.ps(eqe2_issue) + b.wire_ps(24 + 16);
    const sc_time msi_issue = b.edge(bench::ceil_ps(eqe2_sent)) + b.clk.cycles(2);
    EXPECT_EQ(b.msis[0].at, bench::ceil_ps(b.ps(msi_issue) + b.wire_ps(24 + 4) + b.lat_ps()));
}

TEST(CqWriter, MaskedVectorHoldsTheMessageUntilUnmasked) {
    bench b;
    b.drv.body = [&] {
        b.setup_queues();
        b.drv.write32(hsi::REG_MSIX_TABLE + 12, 1);  // mask vector 0
        b.settle();
        b.cqw.post_event(hsi::EVENT_CMD_DONE, 77);
        b.settle();
        EXPECT_EQ(eqe_at(b, 0).data, 77u);
        EXPECT_TRUE(b.msis.empty());
        EXPECT_TRUE(b.cqw.msix_pending(0));
        b.drv.write32(hsi::REG_MSIX_TABLE + 16 + 12, 0);  // unmask vector 1: nothing pending
        b.settle();
        EXPECT_TRUE(b.msis.empty());
        b.drv.write32(hsi::REG_MSIX_TABLE + 8, 0x999);  // new data while masked
        b.drv.write32(hsi::REG_MSIX_TABLE + 12, 0);     // unmask: the held message goes
        b.settle();
    };
    run(b);
    ASSERT_EQ(b.msis.size(), 1u);
    EXPECT_EQ(b.msis[0].data, 0x999u);
    EXPECT_FALSE(b.cqw.msix_pending(0));
    EXPECT_EQ(b.cqw.get_stats().masked_interrupts, 1u);
    EXPECT_EQ(b.cqw.get_stats().pending_sent, 1u);
    EXPECT_EQ(b.cqw.get_stats().interrupts, 1u);
    EXPECT_EQ(b.dma.get_stats(dma_client::INTERRUPT).writes, 1u);
}

TEST(CqWriter, EventsAreDroppedWithoutAnEqAndBadVectorsAreCounted) {
    bench b;
    cq_context& cq = make_cq(b, 8, 2, 0);
    b.drv.body = [&] {
        b.cqw.post_event(hsi::EVENT_CMD_DONE, 1);  // no EQ yet
        b.settle();
        b.setup_queues();
        cq.msix_vector = 100;  // corrupt context: vector outside the table
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(8, hsi::CQ_ARM_ANY, 0));
        b.settle();
        b.cqw.requests().put(make_req(8, 0));
        b.settle();
    };
    run(b);
    EXPECT_EQ(b.cqw.get_stats().events_dropped, 1u);
    EXPECT_EQ(b.cqw.get_stats().events, 1u);
    EXPECT_EQ(b.cqw.get_stats().bad_vectors, 1u);
    EXPECT_TRUE(b.msis.empty());
    EXPECT_EQ(b.mem.load<uint64_t>(0), 0u);  // nothing written at address 0
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// CQ errors, interrupt moderation (CMD_MODIFY_CQ) and the device fatal error
// ---------------------------------------------------------------------------------------------

// One command through the ring (driver thread): returns its status once `done` is written.
uint8_t command(bench& b, hsi::cmd_slot c, hsi::cmd_slot* out = nullptr) {
    const uint64_t a = CMDQ_BASE + 64ull * (b.cmd_producer & ((1u << CMDQ_LOG) - 1));
    c.status = 0;
    c.done = 0;
    b.mem.write(a, &c, sizeof(c));
    ++b.cmd_producer;
    b.drv.write32(hsi::REG_CMDQ_DOORBELL, b.cmd_producer);
    wait_mem(b, [&] { return b.mem.load<hsi::cmd_slot>(a).done == 1; });
    const hsi::cmd_slot back = b.mem.load<hsi::cmd_slot>(a);
    if (out != nullptr) {
        *out = back;
    }
    return back.status;
}

hsi::cmd_slot modify_cq(uint32_t cqn, uint32_t count, uint32_t period_us) {
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_MODIFY_CQ;
    c.u.modify_cq.cqn = cqn;
    c.u.modify_cq.count = count;
    c.u.modify_cq.period_us = period_us;
    return c;
}

// Event-queue entries of `type` written so far (EQ of 16 entries, never wrapped in these tests).
std::vector<hsi::event_entry> events_of(bench& b, uint8_t type) {
    std::vector<hsi::event_entry> v;
    for (uint32_t s = 0; s < (1u << EQ_LOG); ++s) {
        const hsi::event_entry e = eqe_at(b, s);
        if (e.flags != 0 && e.type == type) {
            v.push_back(e);
        }
    }
    return v;
}

// A CQE write that completes with a PCIe error (the ring's IOMMU mapping was released): the CQE
// is lost, the CQ is dead (EVENT_CQ_ERROR with the DMA syndrome, distinct from an overrun), every
// QP using it goes to ERROR through the hook, later CQEs are dropped, arms are ignored.
TEST(CqWriter, CqeWriteErrorKillsTheCqAndMovesItsQpsToError) {
    bench b;
    make_cq(b, 3, 2, 1);
    make_cq(b, 4, 2, 1);
    qp_context& q5 = b.make_qp(5, hsi::QPS_RTS);
    q5.send_cqn = 4;
    q5.recv_cqn = 3;
    qp_context& q6 = b.make_qp(6, hsi::QPS_RTS);
    q6.send_cqn = 4;
    q6.recv_cqn = 4;
    std::vector<uint32_t> failed_qps;
    b.cqw.set_qp_error_handler([&](uint32_t qpn) {
        failed_qps.push_back(qpn);
        b.contexts.qp(qpn)->state = hsi::QPS_ERROR;
    });
    b.drv.body = [&] {
        b.setup_queues();
        b.cqw.requests().put(make_req(3, 0));
        b.settle();
        EXPECT_EQ(cqe_at(b, 3, 0).wqe_index, 0);
        b.link.iommu_unmap(CQ_RING + 0x3000, 4096);  // the host released CQ 3's ring mapping
        b.cqw.requests().put(make_req(3, 1));
        b.settle();
        b.cqw.requests().put(make_req(3, 2));  // dead: dropped
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(3, hsi::CQ_ARM_ANY, 1));
        b.cqw.requests().put(make_req(4, 0));  // the other CQ still works
        b.settle();
    };
    run(b);
    const hsi::event_entry e = eqe_at(b, 0);
    EXPECT_EQ(e.type, hsi::EVENT_CQ_ERROR);
    EXPECT_EQ(e.data, 3u);
    EXPECT_EQ(e.data2, hsi::CQ_ERR_DMA_ACCESS);
    EXPECT_EQ(eqe_at(b, 1).type, 0);  // one event: the arm of the dead CQ fired nothing
    EXPECT_TRUE(b.contexts.cq(3)->error);
    EXPECT_FALSE(b.contexts.cq(4)->error);
    EXPECT_EQ(b.contexts.cq(3)->armed, hsi::CQ_ARM_NONE);
    EXPECT_EQ(failed_qps, std::vector<uint32_t>{5});
    EXPECT_EQ(b.contexts.qp(5)->state, hsi::QPS_ERROR);
    EXPECT_EQ(b.contexts.qp(6)->state, hsi::QPS_RTS);
    EXPECT_EQ(cqe_at(b, 3, 1).flags, 0);  // never written
    EXPECT_EQ(cqe_at(b, 4, 0).wqe_index, 0);
    EXPECT_EQ(b.cqw.get_stats().cqe_write_errors, 1u);
    EXPECT_EQ(b.cqw.get_stats().cqes, 2u);
    EXPECT_EQ(b.cqw.get_stats().dropped, 1u);
    EXPECT_EQ(b.cqw.get_stats().overruns, 0u);
    EXPECT_EQ(b.dma.get_stats(dma_client::COMPLETION).errors, 1u);
    EXPECT_EQ(b.link.iommu_faults(), 1u);
}

// The overrun keeps its own syndrome (0) and also takes the CQ's QPs into ERROR.
TEST(CqWriter, OverrunSyndromeStaysDistinctAndFailsTheQps) {
    bench b;
    make_cq(b, 2, 1, 0);
    b.make_qp(9, hsi::QPS_RTS).recv_cqn = 2;
    b.drv.body = [&] {
        b.setup_queues();
        for (uint16_t i = 0; i < 3; ++i) {
            b.cqw.requests().put(make_req(2, i));
        }
        b.settle();
    };
    run(b);
    EXPECT_EQ(eqe_at(b, 0).type, hsi::EVENT_CQ_ERROR);
    EXPECT_EQ(eqe_at(b, 0).data2, hsi::CQ_ERR_OVERRUN);
    EXPECT_EQ(b.contexts.qp(9)->state, hsi::QPS_ERROR);  // no hook: set directly
    EXPECT_EQ(b.cqw.get_stats().overruns, 1u);
}

// MODIFY_CQ: the armed CQ's event (EQE + MSI-X) is held until `count` CQEs are unconsumed, or
// until `period_us` after the first matching CQE (one timer event, no polling); new settings
// apply to a held event at once; QUERY_DEVICE reports the capability.
TEST(CqWriter, ModerationHoldsTheEventUntilTheCountOrThePeriod) {
    bench b;
    make_cq(b, 6, 4, 1);
    sc_time t_first;
    sc_time t_released;
    sc_time t_second;
    sc_time t_released2;
    b.drv.body = [&] {
        b.setup_queues();
        hsi::cmd_slot q{};
        q.opcode = hsi::CMD_QUERY_DEVICE;
        hsi::cmd_slot out{};
        ASSERT_EQ(command(b, q, &out), hsi::CMD_OK);
        EXPECT_EQ(out.u.query.caps, hsi::DEVICE_CAP_CQ_MODERATION);
        EXPECT_EQ(out.u.query.moderation_timers, 64u);
        EXPECT_EQ(command(b, modify_cq(6, 3, 0)), hsi::CMD_OK);
        EXPECT_EQ(b.contexts.cq(6)->moderation_count, 3u);
        EXPECT_EQ(command(b, modify_cq(40, 3, 0)), hsi::CMD_BAD_HANDLE);
        EXPECT_EQ(b.cqw.moderation_timers_in_use(), 0u);
        // Count 3: two CQEs hold the event, the third releases it.
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(6, hsi::CQ_ARM_ANY, 0));
        b.settle();
        b.cqw.requests().put(make_req(6, 0));
        b.cqw.requests().put(make_req(6, 1));
        b.settle();
        EXPECT_TRUE(b.cqw.moderation_holding(6));
        EXPECT_TRUE(events_of(b, hsi::EVENT_CQ_COMPLETION).empty());
        b.cqw.requests().put(make_req(6, 2));
        b.settle();
        EXPECT_FALSE(b.cqw.moderation_holding(6));
        EXPECT_EQ(events_of(b, hsi::EVENT_CQ_COMPLETION).size(), 1u);
        // Period 10 us (no count): released 10 us after the first matching CQE.
        EXPECT_EQ(command(b, modify_cq(6, 0, 10)), hsi::CMD_OK);
        EXPECT_EQ(b.cqw.moderation_timers_in_use(), 1u);
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(6, hsi::CQ_ARM_ANY, 3));
        b.settle();
        b.cqw.requests().put(make_req(6, 3));
        wait_mem(b, [&] { return cqe_at(b, 6, 3).flags != 0; });
        t_first = sc_time_stamp();
        b.cqw.requests().put(make_req(6, 4));  // more CQEs do not shorten it
        wait_mem(b, [&] { return events_of(b, hsi::EVENT_CQ_COMPLETION).size() == 2; });
        t_released = sc_time_stamp();
        // A held event and new settings: switching moderation off releases it at once.
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(6, hsi::CQ_ARM_ANY, 5));
        b.settle();
        b.cqw.requests().put(make_req(6, 5));
        b.settle();
        EXPECT_TRUE(b.cqw.moderation_holding(6));
        t_second = sc_time_stamp();
        EXPECT_EQ(command(b, modify_cq(6, 0, 0)), hsi::CMD_OK);
        wait_mem(b, [&] { return events_of(b, hsi::EVENT_CQ_COMPLETION).size() == 3; });
        t_released2 = sc_time_stamp();
        EXPECT_EQ(b.cqw.moderation_timers_in_use(), 0u);  // period 0 freed the timer
    };
    run(b);
    // The CQE lands, then the period runs from the first CQE's write (+ EQE write and link).
    EXPECT_GE(t_released - t_first, sc_time(9, sc_core::SC_US));
    EXPECT_LT(t_released - t_first, sc_time(11, sc_core::SC_US));
    EXPECT_LT(t_released2 - t_second, sc_time(5, sc_core::SC_US));  // not the old 10 us
    EXPECT_EQ(b.cqw.get_stats().moderated, 3u);
    EXPECT_EQ(b.cqw.get_stats().moderation_timeouts, 1u);
    EXPECT_EQ(b.cqw.get_stats().cq_events, 3u);
}

// rnic.cq.moderation_timers: a period needs a free timer (else CMD_NO_RESOURCES); count-only
// moderation needs none; destroying the CQ frees its timer. Without moderation MODIFY_CQ is an
// unknown command and QUERY_DEVICE clears the capability.
TEST(CqWriter, ModerationTimersAreAResourceAndModerationCanBeAbsent) {
    bench b;
    cq_config cc;
    cc.moderation_timers = 1;
    b.cqw.set_cq_config(cc);
    make_cq(b, 1, 2, 0);
    make_cq(b, 2, 2, 0);
    uint8_t no_timer = 0;
    uint8_t count_only = 0;
    uint8_t after_destroy = 0;
    uint8_t disabled = 0;
    hsi::cmd_slot query{};
    b.drv.body = [&] {
        b.setup_queues();
        EXPECT_EQ(command(b, modify_cq(1, 0, 20)), hsi::CMD_OK);
        no_timer = command(b, modify_cq(2, 0, 20));
        count_only = command(b, modify_cq(2, 4, 0));
        hsi::cmd_slot d{};
        d.opcode = hsi::CMD_DESTROY_CQ;
        d.u.obj.handle = 1;
        EXPECT_EQ(command(b, d), hsi::CMD_OK);
        after_destroy = command(b, modify_cq(2, 4, 20));
        b.drv.write32(hsi::REG_EQ_CONSUMER, b.cqw.eq_producer());
        cq_config off;
        off.interrupt_moderation = false;
        b.cqw.set_cq_config(off);
        disabled = command(b, modify_cq(2, 0, 0));
        hsi::cmd_slot q{};
        q.opcode = hsi::CMD_QUERY_DEVICE;
        command(b, q, &query);
    };
    run(b);
    EXPECT_EQ(no_timer, hsi::CMD_NO_RESOURCES);
    EXPECT_EQ(count_only, hsi::CMD_OK);
    EXPECT_EQ(after_destroy, hsi::CMD_OK);
    EXPECT_EQ(disabled, hsi::CMD_BAD_OPCODE);
    EXPECT_EQ(query.u.query.caps, 0u);
    EXPECT_EQ(b.contexts.cq(2)->moderation_period_us, 20u);
}

// Catastrophic error: every CQ dead, every QP in ERROR (through the command processor's
// qp_to_error), one EVENT_DEVICE_FATAL, later CQEs dropped and later commands answered
// CMD_DEVICE_FATAL; the scheduled form (rnic.faults.fatal_error_at_ns) fires at its time.
TEST(CqWriter, DeviceFatalKillsEverythingAndFailsLaterCommands) {
    bench b;
    make_cq(b, 1, 2, 0);
    make_cq(b, 2, 2, 0);
    b.make_qp(7, hsi::QPS_RTS).send_cqn = 1;
    b.make_qp(8, hsi::QPS_INIT).recv_cqn = 2;
    std::vector<uint32_t> flushed;
    b.cmdp.set_qp_error_handler([&](uint32_t qpn) { flushed.push_back(qpn); });
    b.cmdp.fatal_error_at(sc_time(20, sc_core::SC_US));
    uint8_t late = 0;
    sc_time fatal_seen;
    b.drv.body = [&] {
        b.setup_queues();
        b.drv.write64(hsi::REG_CQ_DOORBELL, cq_db(1, hsi::CQ_ARM_ANY, 0));
        b.settle();
        EXPECT_FALSE(b.cmdp.fatal());
        wait_mem(b, [&] { return !events_of(b, hsi::EVENT_DEVICE_FATAL).empty(); });
        fatal_seen = sc_time_stamp();
        EXPECT_TRUE(b.cmdp.fatal());
        b.cqw.requests().put(make_req(1, 0));
        b.settle();
        hsi::cmd_slot pd{};
        pd.opcode = hsi::CMD_CREATE_PD;
        pd.u.obj.handle = 1;
        late = command(b, pd);
        b.cmdp.inject_fatal_error();  // idempotent: no second event
        b.settle();
    };
    run(b);
    EXPECT_GE(fatal_seen, sc_time(20, sc_core::SC_US));
    EXPECT_LT(fatal_seen, sc_time(21, sc_core::SC_US));
    EXPECT_EQ(events_of(b, hsi::EVENT_DEVICE_FATAL).size(), 1u);
    EXPECT_EQ(events_of(b, hsi::EVENT_DEVICE_FATAL)[0].data, hsi::FATAL_INJECTED);
    EXPECT_TRUE(events_of(b, hsi::EVENT_CQ_COMPLETION).empty());
    EXPECT_TRUE(b.contexts.cq(1)->error);
    EXPECT_TRUE(b.contexts.cq(2)->error);
    EXPECT_EQ(b.contexts.qp(7)->state, hsi::QPS_ERROR);
    EXPECT_EQ(b.contexts.qp(8)->state, hsi::QPS_ERROR);
    EXPECT_EQ(flushed, (std::vector<uint32_t>{7, 8}));
    EXPECT_EQ(late, hsi::CMD_DEVICE_FATAL);
    EXPECT_EQ(b.contexts.pd(1), nullptr);  // the create did nothing
    EXPECT_EQ(b.cqw.get_stats().cqes, 0u);
    EXPECT_EQ(b.cqw.get_stats().dropped, 1u);
}
