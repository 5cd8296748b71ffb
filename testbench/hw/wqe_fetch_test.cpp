// SPDX-License-Identifier: Apache-2.0
// WQE fetch in a node (CPU MMIO -> PCIe -> doorbell -> WQE fetch -> DMA engine -> PCIe -> host
// memory): doorbell batching into DMA reads, no read across the ring end, SGE / inline /
// segment parsing, malformed WQEs flagged, WQE push without a DMA read, parse timing, and
// round-robin between send queues.
#include "hw/wqe_fetch/wqe_fetch.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <gtest/gtest.h>

#include "hw/common/clock_domain.h"
#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/dma_engine/dma_engine.h"
#include "hw/doorbell/doorbell.h"
#include "hw/hsi/hsi.h"
#include "tlm/host_memory/host_memory.h"
#include "tlm/pcie/pcie_link.h"

namespace {

namespace hsi = rnic::hsi;
using rnic::hw::dma_client;
using rnic::hw::wqe_fetch_config;
using rnic::hw::wqe_item;
using sc_core::SC_NS;
using sc_core::sc_time;

// The host CPU: MMIO stores to BAR0 through the root port (posted).
struct cpu : sc_core::sc_module {
    tlm_utils::simple_initiator_socket<cpu> out{"out"};
    explicit cpu(sc_core::sc_module_name n)
        : sc_module(n) {}
    void mmio_write(uint64_t offset, const void* data, unsigned len) {
        tlm::tlm_generic_payload gp;
        gp.set_command(tlm::TLM_WRITE_COMMAND);
        gp.set_address(offset);
        gp.set_data_ptr(static_cast<unsigned char*>(const_cast<void*>(data)));
        gp.set_data_length(len);
        gp.set_streaming_width(len);
        sc_time d = sc_core::SC_ZERO_TIME;
        out->b_transport(gp, d);
        sc_core::wait(d);
    }
    void sq_doorbell(uint32_t qpn, uint32_t producer) {
        const uint64_t v = qpn | (static_cast<uint64_t>(producer & 0xffff) << 32);
        mmio_write(hsi::REG_SQ_DOORBELL, &v, 8);
    }
};

struct node : sc_core::sc_module {
    rnic::hw::sim_context ctx;
    rnic::hw::clock_domain clk{"nic", 250};  // 4 ns
    rnic::hw::context_store contexts{16, 4, 4, 4, 16, 64};
    rnic::fabric::host_memory mem{"mem", sc_time(80, SC_NS)};
    rnic::fabric::pcie_link link;
    rnic::hw::dma_engine dma;
    rnic::hw::doorbell db;
    rnic::hw::wqe_fetch fetch;
    cpu host{"host"};
    struct out_item {
        sc_time at;
        wqe_item w;
    };
    std::vector<out_item> items;

    node(sc_core::sc_module_name n, const wqe_fetch_config& cfg)
        : sc_module(n)
        , link("pcie", rnic::fabric::pcie_config{}, "", ctx)
        , dma("dma", rnic::hw::dma_engine_config{}, clk, ctx)
        , db("doorbell", rnic::hw::doorbell_config{}, clk, contexts, ctx)
        , fetch("wqe_fetch", cfg, clk, contexts, dma, db, 1, ctx) {
        dma.dma_out.bind(link.dev_dma_in);
        link.mem_out.bind(mem.dma_in);
        link.bar_out.bind(db.mmio_in);
        host.out.bind(link.host_mmio_in);
        SC_HAS_PROCESS(node);
        SC_THREAD(tx_engine_thread);
    }
    // The transmit engine: always ready.
    void tx_engine_thread() {
        for (;;) {
            wqe_item w = fetch.out().get();
            items.push_back({sc_core::sc_time_stamp(), std::move(w)});
        }
    }
    // A QP in RTS with its SQ ring in host memory.
    rnic::hw::qp_context& add_qp(uint32_t qpn, uint64_t sq_addr, uint32_t log_depth,
                                 uint32_t stride) {
        rnic::hw::qp_context& qp = *contexts.qp_slot(qpn);
        qp = rnic::hw::qp_context{};
        qp.valid = true;
        qp.state = hsi::QPS_RTS;
        qp.sq_addr = sq_addr;
        qp.sq_log_depth = log_depth;
        qp.sq_stride = stride;
        return qp;
    }
    // The driver writes WQE `index` into its slot.
    void post(const rnic::hw::qp_context& qp, uint32_t index, const hsi::wqe_ctrl& ctrl,
              const void* body = nullptr, size_t body_len = 0) {
        const uint32_t slot = index & ((1u << qp.sq_log_depth) - 1);
        const uint64_t a = qp.sq_addr + static_cast<uint64_t>(slot) * qp.sq_stride;
        mem.write(a, &ctrl, sizeof(ctrl));
        if (body_len > 0) {
            mem.write(a + sizeof(ctrl), body, body_len);
        }
    }
};

hsi::wqe_ctrl ctrl(uint8_t opcode, uint16_t index, uint8_t size_bb = 1, uint8_t num_sge = 0,
                   uint8_t flags = 0) {
    hsi::wqe_ctrl c{};
    c.opcode = opcode;
    c.flags = flags;
    c.num_sge = num_sge;
    c.size_bb = size_bb;
    c.wqe_index = index;
    c.imm_or_key = 0x1000u + index;
    return c;
}

TEST(WqeFetch, DoorbellBatchesIntoDmaReads) {
    wqe_fetch_config cfg;
    cfg.batch = 4;
    node n("n", cfg);
    auto& qp = n.add_qp(3, 0x100000, 4, 64);  // 16 slots of 64 B
    for (uint16_t i = 0; i < 10; ++i) {
        n.post(qp, i, ctrl(hsi::WQE_SEND, i));
    }
    sc_core::sc_spawn([&] { n.host.sq_doorbell(3, 10); }, "driver");
    sc_core::sc_start();
    ASSERT_EQ(n.items.size(), 10u);
    for (uint16_t i = 0; i < 10; ++i) {
        EXPECT_EQ(n.items[i].w.qpn, 3u);
        EXPECT_EQ(n.items[i].w.ctrl.wqe_index, i);
        EXPECT_EQ(n.items[i].w.ctrl.imm_or_key, 0x1000u + i);
        EXPECT_FALSE(n.items[i].w.malformed);
    }
    // 10 WQEs with batch 4: reads of 4, 4 and 2 slots.
    EXPECT_EQ(n.fetch.get_stats().dma_reads, 3u);
    EXPECT_EQ(n.fetch.get_stats().wqes, 10u);
    EXPECT_EQ(n.fetch.get_stats().pushed, 0u);
    EXPECT_EQ(n.dma.get_stats(dma_client::WQE_FETCH).reads, 3u);
    EXPECT_EQ(n.dma.get_stats(dma_client::WQE_FETCH).read_bytes, 640u);
    EXPECT_EQ(n.link.upstream().mrd_tlps, 3u);
    EXPECT_EQ(qp.sq_fetched, 10u);
    EXPECT_EQ(n.db.get_stats().sq_doorbells, 1u);
    // Within a batch, one WQE basic block per parse cycle.
    EXPECT_EQ(n.items[1].at - n.items[0].at, n.clk.cycles(1));
    EXPECT_EQ(n.items[3].at - n.items[2].at, n.clk.cycles(1));
    // Between batches the next DMA read round trip (> 300 ns on the default link).
    EXPECT_GT(n.items[4].at - n.items[3].at, sc_time(300, SC_NS));
    for (const auto& it : n.items) {
        EXPECT_EQ(it.at.value() % 4000, 0u) << "not on a NIC clock edge";
    }
}

// A batch never reads across the end of the ring: slots 6, 7 then 0, 1, 2.
TEST(WqeFetch, RingWrapSplitsTheRead) {
    wqe_fetch_config cfg;
    cfg.batch = 8;
    node n("n", cfg);
    auto& qp = n.add_qp(1, 0x200000, 3, 64);  // 8 slots
    qp.sq_producer = 6;
    qp.sq_fetched = 6;
    // Past the ring end: bytes that would parse as a bad WQE if read.
    n.mem.fill(0x200000 + 8 * 64, 0xEE, 512);
    for (uint16_t i = 6; i < 11; ++i) {
        n.post(qp, i, ctrl(hsi::WQE_WRITE, i));
    }
    sc_core::sc_spawn([&] { n.host.sq_doorbell(1, 11); }, "driver");
    sc_core::sc_start();
    ASSERT_EQ(n.items.size(), 5u);
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(n.items[i].w.ctrl.wqe_index, 6 + i);
        EXPECT_EQ(n.items[i].w.ctrl.opcode, hsi::WQE_WRITE);
        EXPECT_FALSE(n.items[i].w.malformed);
    }
    EXPECT_EQ(n.fetch.get_stats().dma_reads, 2u);
    EXPECT_EQ(n.dma.get_stats(dma_client::WQE_FETCH).read_bytes, 5u * 64u);
    EXPECT_EQ(qp.sq_fetched, 11u);
    EXPECT_EQ(n.fetch.get_stats().malformed, 0u);
}

TEST(WqeFetch, ParsesSgesInlineDataAndSegments) {
    wqe_fetch_config cfg;
    cfg.batch = 8;
    cfg.parse_cycles = 2;
    node n("n", cfg);
    auto& qp = n.add_qp(2, 0x300000, 4, 256);  // 4 basic blocks per slot
    // 0: SEND with 3 SGEs (64 + 48 B -> 2 BB).
    std::vector<hsi::wqe_sge> sg3 = {
        {0x7000'0000, 100, 0x0301}, {0x7000'1000, 200, 0x0302}, {0x7000'2000, 300, 0x0303}};
    auto c0 = ctrl(hsi::WQE_SEND, 0, 2, 3, hsi::WQE_FLAG_SIGNALED);
    c0.total_length = 600;
    n.post(qp, 0, c0, sg3.data(), sg3.size() * sizeof(hsi::wqe_sge));
    // 1: WRITE with 100 B inline (64 + 100 -> 3 BB).
    std::vector<uint8_t> inl(100);
    for (size_t i = 0; i < inl.size(); ++i) {
        inl[i] = static_cast<uint8_t>(0x30 + i);
    }
    auto c1 = ctrl(hsi::WQE_WRITE, 1, 3, 0, hsi::WQE_FLAG_INLINE);
    c1.total_length = 100;
    c1.remote_va = 0x1234'5678'9ABCull;
    c1.rkey = 0x00AB'CD01;
    n.post(qp, 1, c1, inl.data(), inl.size());
    // 2: FAST_REG with its 64 B segment.
    hsi::fast_reg_segment fr{};
    fr.key = 0x0500;
    fr.access = hsi::ACCESS_REMOTE_WRITE;
    fr.base_va = 0x4000'0000;
    fr.length = 8192;
    fr.page_list_addr = 0x9000;
    fr.page_count = 2;
    n.post(qp, 2, ctrl(hsi::WQE_FAST_REG, 2, 2), &fr, sizeof(fr));
    // 3: BIND_MW.
    hsi::bind_segment bs{};
    bs.mw_key = 0x0601;
    bs.mr_key = 0x0500;
    bs.va = 0x4000'0100;
    bs.length = 64;
    n.post(qp, 3, ctrl(hsi::WQE_BIND_MW, 3, 2), &bs, sizeof(bs));
    // 4: READ with 12 SGEs (64 + 192 B -> 4 BB, the whole slot).
    std::vector<hsi::wqe_sge> sg12(12);
    for (uint32_t i = 0; i < 12; ++i) {
        sg12[i] = {0x8000'0000ull + i * 0x1000, 16 + i, 0x0700u + i};
    }
    n.post(qp, 4, ctrl(hsi::WQE_READ, 4, 4, 12), sg12.data(), sg12.size() * sizeof(hsi::wqe_sge));
    // 5: zero-length SEND: 1 BB, no SGE.
    n.post(qp, 5, ctrl(hsi::WQE_SEND, 5, 1, 0));
    sc_core::sc_spawn([&] { n.host.sq_doorbell(2, 6); }, "driver");
    sc_core::sc_start();

    ASSERT_EQ(n.items.size(), 6u);
    const auto& w0 = n.items[0].w;
    ASSERT_EQ(w0.sges.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(w0.sges[i].addr, sg3[i].addr);
        EXPECT_EQ(w0.sges[i].length, sg3[i].length);
        EXPECT_EQ(w0.sges[i].lkey, sg3[i].lkey);
    }
    EXPECT_EQ(w0.ctrl.total_length, 600u);
    EXPECT_EQ(w0.ctrl.flags, hsi::WQE_FLAG_SIGNALED);
    EXPECT_TRUE(w0.inline_data.empty());
    const auto& w1 = n.items[1].w;
    EXPECT_EQ(w1.inline_data, inl);
    EXPECT_TRUE(w1.sges.empty());
    EXPECT_EQ(w1.ctrl.remote_va, 0x1234'5678'9ABCull);
    EXPECT_EQ(w1.ctrl.rkey, 0x00AB'CD01u);
    const auto& w2 = n.items[2].w;
    ASSERT_EQ(w2.segment.size(), 64u);
    hsi::fast_reg_segment fr_back;
    std::memcpy(&fr_back, w2.segment.data(), 64);
    EXPECT_EQ(fr_back.key, 0x0500u);
    EXPECT_EQ(fr_back.length, 8192u);
    EXPECT_EQ(fr_back.page_list_addr, 0x9000u);
    const auto& w3 = n.items[3].w;
    ASSERT_EQ(w3.segment.size(), 64u);
    hsi::bind_segment bs_back;
    std::memcpy(&bs_back, w3.segment.data(), 64);
    EXPECT_EQ(bs_back.mw_key, 0x0601u);
    EXPECT_EQ(bs_back.va, 0x4000'0100u);
    const auto& w4 = n.items[4].w;
    ASSERT_EQ(w4.sges.size(), 12u);
    EXPECT_EQ(w4.sges[11].addr, 0x8000'B000u);
    EXPECT_EQ(w4.sges[11].length, 27u);
    EXPECT_EQ(w4.sges[11].lkey, 0x070Bu);
    EXPECT_TRUE(n.items[5].w.sges.empty());
    for (const auto& it : n.items) {
        EXPECT_FALSE(it.w.malformed) << it.w.ctrl.wqe_index;
    }
    // parse_cycles per basic block: each WQE leaves 2 x size_bb cycles after the previous.
    const uint32_t bb[] = {2, 3, 2, 2, 4, 1};
    for (size_t i = 1; i < 6; ++i) {
        EXPECT_EQ(n.items[i].at - n.items[i - 1].at, n.clk.cycles(2 * bb[i])) << i;
    }
    // flow ids are unique and carry the node and QP.
    EXPECT_NE(n.items[0].w.flow_id, n.items[1].w.flow_id);
    EXPECT_EQ(n.items[0].w.flow_id >> 56, 1u);
    EXPECT_EQ((n.items[0].w.flow_id >> 32) & 0xFFFFFF, 2u);
}

// Malformed WQEs are flagged (to complete with LOCAL_QP_OP_ERR), still handed on in order.
TEST(WqeFetch, MalformedWqesAreFlagged) {
    wqe_fetch_config cfg;
    cfg.batch = 16;
    node n("n", cfg);
    auto& qp = n.add_qp(4, 0x400000, 4, 128);  // 2 basic blocks per slot
    std::vector<hsi::wqe_sge> sg(5, hsi::wqe_sge{0x1000, 8, 0x0100});
    std::vector<uint8_t> bytes(64, 0x55);
    n.post(qp, 0, ctrl(hsi::WQE_SEND, 0, 0));                    // size 0
    n.post(qp, 1, ctrl(42, 1, 1));                               // unknown opcode
    n.post(qp, 2, ctrl(hsi::WQE_SEND, 2, 3));                    // 3 BB > 128 B slot
    n.post(qp, 3, ctrl(hsi::WQE_SEND, 3, 2, 5), sg.data(), 64);  // 5 SGEs in a 64 B body
    auto c4 = ctrl(hsi::WQE_SEND, 4, 2, 0, hsi::WQE_FLAG_INLINE);
    c4.total_length = 65;  // inline past the WQE
    n.post(qp, 4, c4, bytes.data(), 64);
    n.post(qp, 5, ctrl(hsi::WQE_FAST_REG, 5, 1));                // no room for the segment
    n.post(qp, 6, ctrl(hsi::WQE_SEND, 6, 2, 4), sg.data(), 64);  // 4 SGEs: fits
    auto c7 = ctrl(hsi::WQE_SEND, 7, 2, 0, hsi::WQE_FLAG_INLINE);
    c7.total_length = 64;  // inline fills the body
    n.post(qp, 7, c7, bytes.data(), 64);
    sc_core::sc_spawn([&] { n.host.sq_doorbell(4, 8); }, "driver");
    sc_core::sc_start();
    ASSERT_EQ(n.items.size(), 8u);
    const bool want[] = {true, true, true, true, true, true, false, false};
    for (size_t i = 0; i < 8; ++i) {
        EXPECT_EQ(n.items[i].w.malformed, want[i]) << "WQE " << i;
        EXPECT_EQ(n.items[i].w.ctrl.wqe_index, i);
    }
    EXPECT_EQ(n.items[6].w.sges.size(), 4u);
    EXPECT_EQ(n.items[7].w.inline_data.size(), 64u);
    EXPECT_EQ(n.fetch.get_stats().malformed, 6u);
    EXPECT_EQ(n.fetch.get_stats().wqes, 8u);
    EXPECT_EQ(n.fetch.get_stats().dma_reads, 1u);
}

// WQE push ("BlueFlame"): the 64 B block arrives with the doorbell; WQE fetch takes it instead
// of reading the ring. A WQE larger than one block falls back to the DMA read.
TEST(WqeFetch, PushedWqeNeedsNoDmaRead) {
    wqe_fetch_config cfg;
    node n("n", cfg);
    auto& qp = n.add_qp(5, 0x500000, 4, 128);
    // The ring holds different bytes: a DMA read would show up as a NOP with 0xBAD.
    for (uint16_t i = 0; i < 4; ++i) {
        auto c = ctrl(hsi::WQE_NOP, i);
        c.imm_or_key = 0xBAD;
        n.post(qp, i, c);
    }
    std::vector<sc_time> rung;
    sc_core::sc_spawn(
        [&] {
            auto push = ctrl(hsi::WQE_SEND, 0, 1);
            push.imm_or_key = 0xF00D;
            push.qpn = 5;
            push.doorbell = 5 | (uint64_t{1} << 32);
            rung.push_back(sc_core::sc_time_stamp());
            n.host.mmio_write(hsi::REG_WQE_PUSH, &push, 64);
            sc_core::wait(sc_time(2, sc_core::SC_US));
            // A plain doorbell for WQE 1: fetched by DMA.
            rung.push_back(sc_core::sc_time_stamp());
            n.host.sq_doorbell(5, 2);
            sc_core::wait(sc_time(2, sc_core::SC_US));
            // A pushed WQE of 2 blocks: the push buffer holds only the first; read by DMA.
            auto big = ctrl(hsi::WQE_SEND, 2, 2);
            big.qpn = 5;
            big.doorbell = 5 | (uint64_t{3} << 32);
            rung.push_back(sc_core::sc_time_stamp());
            n.host.mmio_write(hsi::REG_WQE_PUSH, &big, 64);
        },
        "driver");
    sc_core::sc_start();
    ASSERT_EQ(n.items.size(), 3u);
    EXPECT_EQ(n.items[0].w.ctrl.opcode, hsi::WQE_SEND);
    EXPECT_EQ(n.items[0].w.ctrl.imm_or_key, 0xF00Du);
    EXPECT_EQ(n.items[1].w.ctrl.imm_or_key, 0xBADu);  // from the ring
    EXPECT_EQ(n.items[2].w.ctrl.wqe_index, 2u);
    EXPECT_EQ(n.items[2].w.ctrl.imm_or_key, 0xBADu);
    EXPECT_EQ(n.fetch.get_stats().pushed, 1u);
    EXPECT_EQ(n.fetch.get_stats().dma_reads, 2u);
    EXPECT_EQ(n.db.get_stats().wqe_pushes, 2u);
    EXPECT_EQ(n.dma.get_stats(dma_client::WQE_FETCH).reads, 2u);
    EXPECT_EQ(n.link.upstream().mrd_tlps, 2u);
    // The pushed WQE is out a few cycles after the MMIO write lands; a fetched one a PCIe
    // read round trip later.
    ASSERT_EQ(rung.size(), 3u);
    EXPECT_LT(n.items[0].at - rung[0], sc_time(200, SC_NS));
    EXPECT_GT(n.items[1].at - rung[1], (n.items[0].at - rung[0]) + sc_time(250, SC_NS));
}

// Several send queues with work are served round-robin, one batch at a time.
TEST(WqeFetch, RoundRobinBetweenSendQueues) {
    wqe_fetch_config cfg;
    cfg.batch = 4;
    node n("n", cfg);
    auto& a = n.add_qp(7, 0x600000, 4, 64);
    auto& b = n.add_qp(9, 0x700000, 4, 64);
    for (uint16_t i = 0; i < 8; ++i) {
        n.post(a, i, ctrl(hsi::WQE_SEND, i));
        n.post(b, i, ctrl(hsi::WQE_WRITE, i));
    }
    sc_core::sc_spawn(
        [&] {
            n.host.sq_doorbell(7, 8);
            n.host.sq_doorbell(9, 8);
        },
        "driver");
    sc_core::sc_start();
    ASSERT_EQ(n.items.size(), 16u);
    const uint32_t want_qp[] = {7, 9, 7, 9};
    for (size_t i = 0; i < 16; ++i) {
        EXPECT_EQ(n.items[i].w.qpn, want_qp[i / 4]) << i;
        EXPECT_EQ(n.items[i].w.ctrl.wqe_index, (i / 8) * 4 + i % 4) << i;
    }
    EXPECT_EQ(n.fetch.get_stats().dma_reads, 4u);
    EXPECT_EQ(a.sq_fetched, 8u);
    EXPECT_EQ(b.sq_fetched, 8u);
}

// A WQE pushed whole (128 B: control segment + one SGE, within the 256 B write-combining size)
// needs no DMA read, and its SGE comes from the push, not from the ring.
TEST(WqeFetch, PushedTwoBlockWqeNeedsNoDmaRead) {
    wqe_fetch_config cfg;
    node n("n", cfg);
    auto& qp = n.add_qp(5, 0x500000, 4, 128);
    // The ring holds other bytes: a DMA read would show up as a NOP with 0xBAD.
    auto ring = ctrl(hsi::WQE_NOP, 0);
    ring.imm_or_key = 0xBAD;
    n.post(qp, 0, ring);
    sc_core::sc_spawn(
        [&] {
            uint8_t block[128] = {};
            auto c = ctrl(hsi::WQE_WRITE, 0, 2, 1);
            c.total_length = 64;
            c.qpn = 5;
            c.doorbell = 5 | (uint64_t{1} << 32);
            const hsi::wqe_sge sge{0x7000'0040, 64, 0x0301};
            std::memcpy(block, &c, sizeof(c));
            std::memcpy(block + sizeof(c), &sge, sizeof(sge));
            n.host.mmio_write(hsi::REG_WQE_PUSH, block, sizeof(block));
        },
        "driver");
    sc_core::sc_start();
    ASSERT_EQ(n.items.size(), 1u);
    EXPECT_EQ(n.items[0].w.ctrl.opcode, hsi::WQE_WRITE);
    ASSERT_EQ(n.items[0].w.sges.size(), 1u);
    EXPECT_EQ(n.items[0].w.sges[0].addr, 0x7000'0040u);
    EXPECT_EQ(n.items[0].w.sges[0].lkey, 0x0301u);
    EXPECT_EQ(n.fetch.get_stats().pushed, 1u);
    EXPECT_EQ(n.fetch.get_stats().dma_reads, 0u);
    EXPECT_EQ(n.link.upstream().mrd_tlps, 0u);
    EXPECT_EQ(n.db.get_stats().wqe_push_bytes, 128u);
}

// Several ring reads in flight: with max_outstanding 2 the second send queue's read goes out
// while the first's is still in flight, so its WQEs follow the first's within a few cycles
// instead of a PCIe read round trip later (as RoundRobinBetweenSendQueues shows for 1). WQEs
// still leave in issue order, per QP in ring order.
TEST(WqeFetch, SeveralReadsInFlight) {
    wqe_fetch_config cfg;
    cfg.batch = 4;
    cfg.max_outstanding = 2;
    node n("n", cfg);
    auto& a = n.add_qp(7, 0x600000, 4, 64);
    auto& b = n.add_qp(9, 0x700000, 4, 64);
    for (uint16_t i = 0; i < 8; ++i) {
        n.post(a, i, ctrl(hsi::WQE_SEND, i));
        n.post(b, i, ctrl(hsi::WQE_WRITE, i));
    }
    sc_core::sc_spawn(
        [&] {
            n.host.sq_doorbell(7, 8);
            n.host.sq_doorbell(9, 8);
        },
        "driver");
    sc_core::sc_start();
    ASSERT_EQ(n.items.size(), 16u);
    std::vector<uint32_t> next(16, 0);
    for (size_t i = 0; i < 16; ++i) {
        const auto& w = n.items[i].w;
        EXPECT_EQ(w.ctrl.wqe_index, next[w.qpn]++) << i;  // per-QP order
    }
    EXPECT_EQ(n.items[0].w.qpn, 7u);
    EXPECT_EQ(n.items[4].w.qpn, 9u);
    // The second read overlapped the first: far less than a round trip (> 300 ns) between them.
    EXPECT_LT(n.items[4].at - n.items[3].at, sc_time(100, SC_NS));
    EXPECT_EQ(n.fetch.get_stats().dma_reads, 4u);
    EXPECT_EQ(n.fetch.get_stats().max_in_flight, 2u);
    EXPECT_EQ(a.sq_fetched, 8u);
    EXPECT_EQ(b.sq_fetched, 8u);
    // Busy from the first read's issue to the last WQE parsed, idle otherwise.
    EXPECT_GT(n.fetch.get_stats().busy_ps, 0u);
    EXPECT_LE(n.fetch.get_stats().busy_ps,
              static_cast<uint64_t>((n.items.back().at - n.items.front().at).to_seconds() * 1e12) +
                  1'000'000u);
}

// One deep send queue: its next batches are read while the first is in flight (the fetch index
// moves at issue), so 16 WQEs in batches of 4 take about one round trip, not four.
TEST(WqeFetch, DeepQueueReadsAhead) {
    wqe_fetch_config one;
    one.batch = 4;
    wqe_fetch_config four = one;
    four.max_outstanding = 4;
    node n1("one", one);
    node n4("four", four);
    sc_time rung[2];
    node* nodes[2] = {&n1, &n4};
    for (int k = 0; k < 2; ++k) {
        node& n = *nodes[k];
        auto& qp = n.add_qp(3, 0x100000, 5, 64);
        for (uint16_t i = 0; i < 16; ++i) {
            n.post(qp, i, ctrl(hsi::WQE_SEND, i));
        }
        sc_core::sc_spawn(
            [&n, &rung, k] {
                rung[k] = sc_core::sc_time_stamp();
                n.host.sq_doorbell(3, 16);
            },
            k == 0 ? "driver_one" : "driver_four");
    }
    sc_core::sc_start();
    sc_time span[2];
    for (int k = 0; k < 2; ++k) {
        node& n = *nodes[k];
        ASSERT_EQ(n.items.size(), 16u);
        for (uint16_t i = 0; i < 16; ++i) {
            EXPECT_EQ(n.items[i].w.ctrl.wqe_index, i);
        }
        span[k] = n.items.back().at - rung[k];
    }
    EXPECT_EQ(n1.fetch.get_stats().max_in_flight, 1u);
    EXPECT_EQ(n4.fetch.get_stats().max_in_flight, 4u);
    EXPECT_EQ(n4.fetch.get_stats().dma_reads, 4u);
    // Four round trips against about one (plus the doorbell and 16 parse cycles).
    EXPECT_GT(span[0], 3 * span[1] / 2 + sc_time(600, SC_NS)) << span[0] << " vs " << span[1];
}

}  // namespace
