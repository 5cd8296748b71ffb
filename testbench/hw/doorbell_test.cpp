// SPDX-License-Identifier: Apache-2.0
// Doorbell block: BAR0 decode, index reconstruction, SQ scheduling, WQE push, CSRs, MSI-X table.
#include "hw/doorbell/doorbell.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

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

TEST(Doorbell, SqAndRqDoorbellsRebuildFreeRunningIndexAcross16BitWrap) {
    bench b;
    b.make_qp(5, hsi::QPS_INIT);  // not schedulable: only the indices move
    srq_context* srq = b.contexts.srq_slot(2);
    srq->valid = true;
    b.drv.body = [&] {
        qp_context& q = *b.contexts.qp(5);
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(5, 0xfff0));
        b.settle();
        EXPECT_EQ(q.sq_producer, 0xfff0u);
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(5, 0x0005));  // wrapped on the wire
        b.settle();
        EXPECT_EQ(q.sq_producer, 0x10005u);
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(5, 0x0005));  // repeated: no change
        b.settle();
        EXPECT_EQ(q.sq_producer, 0x10005u);
        // The 32-bit index itself wraps too.
        q.sq_producer = 0xfffffff0u;
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(5, 0x0003));
        b.settle();
        EXPECT_EQ(q.sq_producer, 0x00000003u);

        b.drv.write64(hsi::REG_RQ_DOORBELL, bench::sq_db(5, 0xffff));
        b.drv.write64(hsi::REG_RQ_DOORBELL, bench::sq_db(5, 0x0001));
        b.drv.write64(hsi::REG_RQ_DOORBELL, 2 | hsi::RQ_DOORBELL_SRQ | (uint64_t{0x8001} << 32));
        b.drv.write64(hsi::REG_RQ_DOORBELL, 2 | hsi::RQ_DOORBELL_SRQ | (uint64_t{0x0002} << 32));
        b.settle();
        EXPECT_EQ(q.rq_producer, 0x10001u);
        EXPECT_EQ(srq->producer, 0x10002u);
    };
    run(b);
    EXPECT_EQ(b.db.get_stats().sq_doorbells, 4u);
    EXPECT_EQ(b.db.get_stats().rq_doorbells, 4u);
    EXPECT_EQ(b.db.get_stats().bad_doorbells, 0u);
    EXPECT_EQ(b.db.get_stats().scheduled, 0u);  // INIT: not scheduled
}

TEST(Doorbell, SchedulesDecodeCyclesAfterArrivalAndOneQpPerCycle) {
    bench_config c;
    c.db.decode_cycles = 3;
    bench b(c);
    for (uint32_t qpn = 1; qpn <= 4; ++qpn) {
        b.make_qp(qpn, hsi::QPS_RTS);
    }
    std::vector<std::pair<uint32_t, sc_time>> got;
    b.drv.aux = [&] {
        for (;;) {
            const uint32_t qpn = b.db.sq_ready().get();
            got.emplace_back(qpn, sc_time_stamp());
        }
    };
    sc_time arrival;
    sc_time kick_at;
    b.drv.body = [&] {
        sc_core::wait(sc_time(1001, SC_PS));  // off the clock grid on purpose
        arrival = b.mmio_arrival(sc_time_stamp(), 8);
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(1, 1));
        b.settle();
        // Three QPs become ready at the same instant: one per cycle.
        for (uint32_t qpn = 2; qpn <= 4; ++qpn) {
            b.contexts.qp(qpn)->sq_producer = 1;
        }
        b.clk.wait_cycles(0);
        kick_at = sc_time_stamp();
        b.db.kick(2);
        b.db.kick(3);
        b.db.kick(4);
        b.settle();
    };
    run(b);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[0].first, 1u);
    // Edge at or after the arrival, + decode_cycles.
    EXPECT_EQ(got[0].second, b.edge(arrival) + b.clk.cycles(3));
    EXPECT_GT(got[0].second, arrival);
    for (uint32_t i = 1; i < 4; ++i) {
        EXPECT_EQ(got[i].first, i + 1);
        EXPECT_EQ(got[i].second, kick_at + b.clk.cycles(i - 1)) << "QP " << i + 1;
    }
    EXPECT_EQ(b.db.get_stats().scheduled, 4u);
}

TEST(Doorbell, RoundRobinWithoutDuplicateScheduling) {
    bench b;
    b.make_qp(1, hsi::QPS_RTS);
    b.make_qp(2, hsi::QPS_RTS);
    std::vector<uint32_t> order;
    uint32_t max_depth = 0;
    // Stand-in for WQE fetch: one WQE per batch, 10 cycles per batch, then reschedule.
    b.drv.aux = [&] {
        for (;;) {
            const uint32_t qpn = b.db.sq_ready().get();
            max_depth = std::max<uint32_t>(max_depth, b.db.sq_ready().size() + 1);
            order.push_back(qpn);
            b.clk.wait_cycles(10);
            qp_context* q = b.contexts.qp(qpn);
            if (q->sq_fetched != q->sq_producer) {
                ++q->sq_fetched;
            }
            b.db.reschedule(qpn);
        }
    };
    b.drv.body = [&] {
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(1, 1));
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(1, 2));
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(2, 1));
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(1, 3));
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(2, 2));
        b.settle();
        // A doorbell that brings no new WQE schedules nothing.
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(1, 3));
        b.settle();
    };
    run(b);
    EXPECT_EQ(order, (std::vector<uint32_t>{1, 2, 1, 2, 1}));
    EXPECT_EQ(b.contexts.qp(1)->sq_fetched, 3u);
    EXPECT_EQ(b.contexts.qp(2)->sq_fetched, 2u);
    EXPECT_EQ(b.db.get_stats().scheduled, 5u);
    EXPECT_EQ(b.db.get_stats().sq_doorbells, 6u);
    EXPECT_LE(max_depth, 2u);  // never both copies of one QP in the FIFO
}

TEST(Doorbell, OnlyRtsAndErrorQpsAreScheduledAndStaleEntriesAreSkipped) {
    bench b;
    b.make_qp(7, hsi::QPS_INIT);
    std::vector<uint32_t> got;
    b.drv.aux = [&] {
        for (;;) {
            const uint32_t qpn = b.db.sq_ready().get();
            got.push_back(qpn);
            qp_context* q = b.contexts.qp(qpn);
            q->sq_fetched = q->sq_producer;
            b.db.reschedule(qpn);
        }
    };
    b.drv.body = [&] {
        qp_context& q = *b.contexts.qp(7);
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(7, 2));  // posted before RTS
        b.settle();
        EXPECT_TRUE(got.empty());
        q.state = hsi::QPS_RTS;
        b.db.kick(7);  // what MODIFY_QP(RTS) does
        b.settle();
        EXPECT_EQ(got.size(), 1u);
        q.state = hsi::QPS_ERROR;  // WQEs posted in ERROR are fetched to be flushed
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(7, 3));
        b.settle();
        EXPECT_EQ(got.size(), 2u);
        q.state = hsi::QPS_RTR;
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(7, 4));
        b.settle();
        EXPECT_EQ(got.size(), 2u);
        // Scheduled, then destroyed before dispatch: skipped, and the mark is cleared.
        q.state = hsi::QPS_RTS;
        b.clk.wait_cycles(0);
        b.db.kick(7);
        q.valid = false;
        b.settle();
        EXPECT_EQ(got.size(), 2u);
        EXPECT_EQ(b.db.get_stats().stale_skipped, 1u);
        q.valid = true;
        b.db.kick(7);
        b.settle();
        EXPECT_EQ(got.size(), 3u);
    };
    run(b);
    EXPECT_EQ(got, (std::vector<uint32_t>{7, 7, 7}));
}

TEST(Doorbell, WqePushStoresBlockAndRingsSqDoorbell) {
    bench_config c;
    c.db.push_buffers = 2;
    bench b(c);
    b.make_qp(3, hsi::QPS_RTS);
    b.make_qp(4, hsi::QPS_RTS);
    std::vector<uint32_t> got;
    b.drv.aux = [&] {
        for (;;) {
            got.push_back(b.db.sq_ready().get());
        }
    };
    auto push = [&](uint32_t qpn, uint16_t index, uint8_t opcode, uint32_t db_qpn) {
        hsi::wqe_ctrl w{};
        w.opcode = opcode;
        w.size_bb = 1;
        w.wqe_index = index;
        w.total_length = 0x1000u + index;
        w.qpn = qpn;
        w.doorbell = bench::sq_db(db_qpn, index + 1u);
        b.drv.write(hsi::REG_WQE_PUSH, &w, sizeof(w));
    };
    b.drv.body = [&] {
        push(3, 7, hsi::WQE_WRITE, 3);
        b.settle();
        EXPECT_EQ(b.contexts.qp(3)->sq_producer, 8u);
        EXPECT_EQ(got, (std::vector<uint32_t>{3}));
        std::vector<uint8_t> bytes;
        hsi::wqe_ctrl out{};
        EXPECT_FALSE(b.db.take_pushed_wqe(3, 6, bytes));  // no block for index 6
        ASSERT_TRUE(b.db.take_pushed_wqe(3, 7, bytes));
        ASSERT_EQ(bytes.size(), sizeof(out));
        std::memcpy(&out, bytes.data(), sizeof(out));
        EXPECT_EQ(out.opcode, hsi::WQE_WRITE);
        EXPECT_EQ(out.total_length, 0x1007u);
        EXPECT_FALSE(b.db.take_pushed_wqe(3, 7, bytes));  // taken once

        // Three pushes into two buffers: the oldest is dropped.
        push(4, 0, hsi::WQE_SEND, 4);
        push(4, 1, hsi::WQE_SEND, 4);
        push(4, 2, hsi::WQE_READ, 4);
        b.settle();
        EXPECT_EQ(b.contexts.qp(4)->sq_producer, 3u);
        EXPECT_FALSE(b.db.take_pushed_wqe(4, 0, bytes));
        // Taking index 2 discards the older block for index 1.
        ASSERT_TRUE(b.db.take_pushed_wqe(4, 2, bytes));
        std::memcpy(&out, bytes.data(), sizeof(out));
        EXPECT_EQ(out.opcode, hsi::WQE_READ);
        EXPECT_FALSE(b.db.take_pushed_wqe(4, 1, bytes));

        // The block's QPN and the doorbell's QPN must agree.
        push(3, 8, hsi::WQE_SEND, 4);
        b.settle();
        EXPECT_EQ(b.contexts.qp(3)->sq_producer, 8u);
        EXPECT_FALSE(b.db.take_pushed_wqe(3, 8, bytes));
    };
    run(b);
    EXPECT_EQ(b.db.get_stats().wqe_pushes, 4u);
    EXPECT_EQ(b.db.get_stats().push_overflows, 1u);
    EXPECT_EQ(b.db.get_stats().pushed_taken, 2u);
    EXPECT_EQ(b.db.get_stats().bad_doorbells, 1u);
}

TEST(Doorbell, BadDoorbellsAreCountedAndIgnored) {
    bench b;
    b.make_qp(1, hsi::QPS_RTS);
    uint64_t unknown_read = 1;
    b.drv.body = [&] {
        const uint64_t v = 0x1234;
        b.drv.write64(0x0400, v);                                        // unknown offset
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(99, 1));        // invalid QP
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(0xffffff, 1));  // QPN out of range
        b.drv.write32(hsi::REG_SQ_DOORBELL, 1);                          // needs 64 bits
        b.drv.write64(hsi::REG_CQ_DOORBELL, 5 | (uint64_t{1} << 24));    // invalid CQ
        b.drv.write64(hsi::REG_RQ_DOORBELL, bench::sq_db(42, 1));        // invalid QP
        b.drv.write64(hsi::REG_RQ_DOORBELL, 3 | hsi::RQ_DOORBELL_SRQ);   // invalid SRQ
        uint8_t block[64] = {};
        b.drv.write(hsi::REG_WQE_PUSH, block, 32);     // short push
        b.drv.write(hsi::REG_WQE_PUSH, block, 64);     // push for QP 0
        b.drv.write64(hsi::REG_DEVICE_ID, v);          // read-only
        b.drv.write(hsi::REG_MSIX_TABLE, &v, 2);       // bad width
        b.drv.write(hsi::REG_MSIX_TABLE + 12, &v, 8);  // crosses an entry
        b.drv.write64(hsi::BAR0_SIZE + 0x100, v);      // outside BAR0
        b.drv.write(hsi::REG_CMDQ_BASE + 2, &v, 4);    // misaligned half
        b.settle();
        unknown_read = b.drv.read(0x0600, 8);
    };
    run(b);
    EXPECT_EQ(b.db.get_stats().bad_doorbells, 14u);
    EXPECT_EQ(b.db.get_stats().bad_reads, 1u);
    EXPECT_EQ(unknown_read, 0u);
    EXPECT_EQ(b.db.get_stats().sq_doorbells, 0u);
    EXPECT_EQ(b.db.get_stats().cq_doorbells, 0u);
    EXPECT_EQ(b.db.get_stats().rq_doorbells, 0u);
    EXPECT_EQ(b.db.registers().cmdq_base, 0u);
    EXPECT_EQ(b.contexts.qp(1)->sq_producer, 0u);
}

TEST(Doorbell, CsrsAndMsixTableReadBackWithRegisterReadLatency) {
    bench_config c;
    c.db.decode_cycles = 5;
    bench b(c);
    std::vector<uint64_t> reads;
    sc_time read_start;
    sc_time read_end;
    b.drv.body = [&] {
        b.drv.write32(hsi::REG_CMDQ_BASE, 0x89abc000u);  // low half
        b.drv.write32(hsi::REG_CMDQ_BASE + 4, 0x12u);    // high half
        b.drv.write64(hsi::REG_CMDQ_LOG_SIZE, 6);
        b.drv.write64(hsi::REG_EQ_BASE, 0x0000'0034'5600'0000ull);
        b.drv.write64(hsi::REG_EQ_LOG_SIZE, 9);
        b.set_msix(5, 0xfee01234, 0x55, 0);
        const uint64_t lo_hi[2] = {0xfee00010ull, 0x66ull | (uint64_t{1} << 32)};
        b.drv.write(hsi::REG_MSIX_TABLE + 16 * 6, &lo_hi[0], 8);      // addr
        b.drv.write(hsi::REG_MSIX_TABLE + 16 * 6 + 8, &lo_hi[1], 8);  // data, control
        b.drv.write32(hsi::REG_MSIX_TABLE + 16 * 7 + 0, 0xfee00020u);
        b.drv.write32(hsi::REG_MSIX_TABLE + 16 * 7 + 4, 0);
        b.drv.write32(hsi::REG_MSIX_TABLE + 16 * 7 + 8, 0x77);
        b.drv.write32(hsi::REG_MSIX_TABLE + 16 * 7 + 12, 0);
        b.settle();
        read_start = sc_time_stamp();
        reads.push_back(b.drv.read(hsi::REG_DEVICE_ID, 8));
        read_end = sc_time_stamp();
        reads.push_back(b.drv.read(hsi::REG_DEVICE_ID + 4, 4));
        reads.push_back(b.drv.read(hsi::REG_CMDQ_BASE, 8));
        reads.push_back(b.drv.read(hsi::REG_CMDQ_BASE + 4, 4));
        reads.push_back(b.drv.read(hsi::REG_CMDQ_LOG_SIZE, 8));
        reads.push_back(b.drv.read(hsi::REG_EQ_BASE, 8));
        reads.push_back(b.drv.read(hsi::REG_EQ_LOG_SIZE, 4));
        reads.push_back(b.drv.read(hsi::REG_MSIX_TABLE + 16 * 6, 8));
        reads.push_back(b.drv.read(hsi::REG_MSIX_TABLE + 16 * 6 + 8, 4));
        reads.push_back(b.drv.read(hsi::REG_MSIX_TABLE + 16 * 6 + 12, 4));
    };
    run(b);
    ASSERT_EQ(reads.size(), 10u);
    EXPECT_EQ(reads[0], doorbell::DEVICE_ID_VALUE);
    EXPECT_EQ(reads[1], 1u);  // revision in the upper half
    EXPECT_EQ(reads[2], 0x12'89abc000ull);
    EXPECT_EQ(reads[3], 0x12u);
    EXPECT_EQ(reads[4], 6u);
    EXPECT_EQ(reads[5], 0x0000'0034'5600'0000ull);
    EXPECT_EQ(reads[6], 9u);
    EXPECT_EQ(reads[7], 0xfee00010u);
    EXPECT_EQ(reads[8], 0x66u);
    EXPECT_EQ(reads[9], 1u);
    const bar_registers& r = b.db.registers();
    EXPECT_EQ(r.cmdq_base, 0x12'89abc000ull);
    EXPECT_EQ(r.cmdq_log_size, 6u);
    EXPECT_EQ(r.eq_base, 0x0000'0034'5600'0000ull);
    EXPECT_EQ(r.eq_log_size, 9u);
    EXPECT_EQ(r.msix[5].addr, 0xfee01234u);
    EXPECT_EQ(r.msix[5].data, 0x55u);
    EXPECT_EQ(r.msix[5].control, 0u);
    EXPECT_EQ(r.msix[6].control, 1u);
    EXPECT_EQ(r.msix[7].addr, 0xfee00020u);
    EXPECT_EQ(r.msix[7].data, 0x77u);
    EXPECT_EQ(r.msix[8].control, 1u);  // reset value: masked
    EXPECT_EQ(b.db.get_stats().msix_writes, 7u);
    EXPECT_EQ(b.db.get_stats().csr_writes, 5u);
    // MRd down, decode_cycles in the NIC, CplD (20 B header + 8 B) up.
    const double down = b.ps(read_start) + b.wire_ps(24);
    const double up = down + b.lat_ps() + b.ps(b.clk.cycles(5)) + b.wire_ps(20 + 8);
    // The BAR sees the read at its arrival, rounded up to a whole ps: allow that 1 ps.
    EXPECT_NEAR(b.ps(read_end), b.ps(bench::ceil_ps(up + b.lat_ps())), 1.5);
}

TEST(Doorbell, IcmBaseMustBePageAlignedAndSizeReadsWhatTheNicNeeds) {
    bench b;
    b.db.set_icm_bytes_needed(0x123000);
    std::vector<uint64_t> reads;
    b.drv.body = [&] {
        b.drv.write64(hsi::REG_ICM_BASE, 0x5000'0000);
        b.drv.write64(hsi::REG_ICM_BASE, 0x6000'0010);  // not 4 KiB aligned: ignored
        b.drv.write32(hsi::REG_ICM_SIZE, 0x200000);     // size allocated, in two halves
        b.drv.write32(hsi::REG_ICM_SIZE + 4, 1);
        b.settle();
        reads.push_back(b.drv.read(hsi::REG_ICM_BASE, 8));
        reads.push_back(b.drv.read(hsi::REG_ICM_SIZE, 8));
    };
    run(b);
    ASSERT_EQ(reads.size(), 2u);
    EXPECT_EQ(reads[0], 0x5000'0000u);
    EXPECT_EQ(reads[1], 0x123000u);  // what the NIC needs, not what was written
    EXPECT_EQ(b.db.registers().icm_base, 0x5000'0000u);
    EXPECT_EQ(b.db.registers().icm_size, 0x1'0020'0000u);
    EXPECT_EQ(b.db.get_stats().bad_doorbells, 1u);
    EXPECT_EQ(b.db.get_stats().csr_writes, 3u);
}

TEST(Doorbell, CqAndEqDoorbellsReachTheCqWriter) {
    bench b;
    cq_context* cq = b.contexts.cq_slot(9);
    cq->valid = true;
    cq->log_depth = 4;
    cq->ring_addr = 0x40000;
    b.drv.body = [&] {
        b.setup_queues();
        b.drv.write64(hsi::REG_CQ_DOORBELL,
                      9 | (uint64_t{hsi::CQ_ARM_SOLICITED} << 24) | (uint64_t{0x1234} << 32));
        b.settle();
        EXPECT_EQ(cq->consumer, 0x1234u);
        EXPECT_EQ(cq->armed, hsi::CQ_ARM_SOLICITED);
        b.drv.write32(hsi::REG_EQ_CONSUMER, 0);
        b.settle();
    };
    run(b);
    EXPECT_EQ(b.db.get_stats().cq_doorbells, 1u);
    EXPECT_EQ(b.db.get_stats().eq_doorbells, 1u);
    EXPECT_TRUE(b.cqw.eq_armed());
    EXPECT_TRUE(b.msis.empty());  // nothing to signal
}

TEST(Doorbell, StatsRegisteredAndChannelsTracedToVcd) {
    bench_config c;
    const std::string base = ::testing::TempDir() + "doorbell_trace";
    c.vcd_path = base;
    bench b(c);
    b.make_qp(1, hsi::QPS_RTS);
    b.drv.aux = [&] {
        for (;;) {
            const uint32_t qpn = b.db.sq_ready().get();
            b.contexts.qp(qpn)->sq_fetched = b.contexts.qp(qpn)->sq_producer;
            b.db.reschedule(qpn);
        }
    };
    b.drv.body = [&] {
        b.drv.write64(hsi::REG_SQ_DOORBELL, bench::sq_db(1, 1));
        b.settle();
    };
    run(b);
    sc_core::sc_close_vcd_trace_file(b.ctx.vcd);
    const nlohmann::json v = b.ctx.stats.values();
    ASSERT_TRUE(v.contains("db"));
    for (const char* k : {"sq_doorbells", "rq_doorbells", "cq_doorbells", "cmd_doorbells",
                          "wqe_pushes", "bad_doorbells", "scheduled", "sq_ready_max"}) {
        EXPECT_TRUE(v["db"].contains(k)) << k;
    }
    EXPECT_EQ(v["db"]["sq_doorbells"], 1);
    EXPECT_EQ(v["db"]["scheduled"], 1);
    EXPECT_EQ(v["db"]["sq_ready_max"], 1);
    std::ifstream f(base + ".vcd");
    ASSERT_TRUE(f.good());
    std::stringstream ss;
    ss << f.rdbuf();
    // VCD scopes follow the dotted names: db / sq_ready / occupancy.
    const std::string text = ss.str();
    const size_t db_scope = text.find("$scope module db $end");
    ASSERT_NE(db_scope, std::string::npos);
    EXPECT_NE(text.find("$scope module sq_ready $end", db_scope), std::string::npos);
    EXPECT_NE(text.find("$scope module cmd_doorbells $end", db_scope), std::string::npos);
    EXPECT_NE(text.find("occupancy", db_scope), std::string::npos);
    EXPECT_NE(text.find("pending", db_scope), std::string::npos);
}

// IBA 10.3.1: a receive posted to a QP in ERROR completes with a flush error. The RQ doorbell of
// such a QP (own receive queue) asks the receive path to flush, once the doorbell is decoded:
// edge at or after the write's arrival + decode_cycles. Other states and SRQ doorbells do not.
TEST(Doorbell, RqDoorbellOfErrorQpAsksTheReceivePathToFlush) {
    bench b;
    b.make_qp(5, hsi::QPS_RTS);
    b.make_qp(6, hsi::QPS_ERROR);
    b.make_qp(7, hsi::QPS_ERROR).srqn = 2;  // receives come from the SRQ, not its own RQ
    srq_context* srq = b.contexts.srq_slot(2);
    srq->valid = true;
    std::vector<std::pair<uint32_t, sc_time>> flushes;
    b.db.set_rq_flush_listener(
        [&](uint32_t qpn, const sc_time& at) { flushes.emplace_back(qpn, at); });
    sc_time expected;
    b.drv.body = [&] {
        b.drv.write64(hsi::REG_RQ_DOORBELL, bench::sq_db(5, 1));
        b.settle();
        EXPECT_TRUE(flushes.empty()) << "RTS: the receive stays posted";
        const sc_time issued = sc_time_stamp();
        b.drv.write64(hsi::REG_RQ_DOORBELL, bench::sq_db(6, 3));
        expected = b.edge(b.mmio_arrival(issued, 8)) + b.clk.cycles(b.cfg.db.decode_cycles);
        b.settle();
        b.drv.write64(hsi::REG_RQ_DOORBELL, bench::sq_db(7, 1));
        b.drv.write64(hsi::REG_RQ_DOORBELL, 2 | hsi::RQ_DOORBELL_SRQ | (uint64_t{1} << 32));
        b.settle();
    };
    run(b);
    ASSERT_EQ(flushes.size(), 1u);
    EXPECT_EQ(flushes[0].first, 6u);
    EXPECT_EQ(flushes[0].second, expected);
    EXPECT_EQ(b.contexts.qp(6)->rq_producer, 3u);  // the index moves as for any doorbell
    EXPECT_EQ(b.db.get_stats().rq_flush_requests, 1u);
    EXPECT_EQ(b.db.get_stats().rq_doorbells, 4u);
}

// MODIFY_QP to RESET / DESTROY_QP: pushed blocks held for the QP belong to its old queue and go;
// another QP's stay.
TEST(Doorbell, ResetQpDropsItsPushedBlocks) {
    bench b;
    b.make_qp(3, hsi::QPS_RTS);
    b.make_qp(4, hsi::QPS_RTS);
    b.drv.aux = [&] {
        for (;;) {
            (void)b.db.sq_ready().get();
        }
    };
    auto push = [&](uint32_t qpn, uint16_t index) {
        hsi::wqe_ctrl w{};
        w.opcode = hsi::WQE_SEND;
        w.size_bb = 1;
        w.wqe_index = index;
        w.qpn = qpn;
        w.doorbell = bench::sq_db(qpn, index + 1u);
        b.drv.write(hsi::REG_WQE_PUSH, &w, sizeof(w));
    };
    bool taken3 = true;
    bool taken4 = false;
    b.drv.body = [&] {
        push(3, 5);
        push(4, 5);
        b.settle();
        b.db.reset_qp(3);
        std::vector<uint8_t> out;
        taken3 = b.db.take_pushed_wqe(3, 5, out);
        taken4 = b.db.take_pushed_wqe(4, 5, out);
    };
    run(b);
    EXPECT_FALSE(taken3) << "a pushed block outlived its QP's reset";
    EXPECT_TRUE(taken4);
    EXPECT_EQ(b.db.get_stats().wqe_pushes, 2u);
}

}  // namespace
