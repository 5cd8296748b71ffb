// SPDX-License-Identifier: Apache-2.0
// DMA engine in a node's PCIe path (dma_engine -> pcie_link -> host_memory): issue_cycles on
// the NIC clock grid, then the PCIe model's timing; *_wait variants resume on a NIC clock edge;
// per-client stats.
#include "hw/dma_engine/dma_engine.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <gtest/gtest.h>

#include "hw/common/clock_domain.h"
#include "hw/common/sim_context.h"
#include "tlm/host_memory/host_memory.h"
#include "tlm/pcie/pcie_link.h"

namespace {

using rnic::hw::clock_domain;
using rnic::hw::dma_client;
using rnic::hw::dma_engine;
using rnic::hw::dma_engine_config;
using sc_core::SC_NS;
using sc_core::SC_PS;
using sc_core::sc_time;

sc_time ps(double v) {
    return sc_time(v, SC_PS);
}
double to_ps(const sc_time& t) {
    return static_cast<double>(t.value());
}

// Host CPU (unused here, but a real node has one on the link) and the NIC's BAR.
struct idle_cpu : sc_core::sc_module {
    tlm_utils::simple_initiator_socket<idle_cpu> out{"out"};
    explicit idle_cpu(sc_core::sc_module_name n)
        : sc_module(n) {}
};
struct idle_bar : sc_core::sc_module {
    tlm_utils::simple_target_socket<idle_bar> in{"in"};
    explicit idle_bar(sc_core::sc_module_name n)
        : sc_module(n) {
        in.register_b_transport(this, &idle_bar::b_transport);
    }
    void b_transport(tlm::tlm_generic_payload& gp, sc_time&) {
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
    }
};

struct node : sc_core::sc_module {
    rnic::hw::sim_context ctx;
    clock_domain clk{"nic", 250};  // 4 ns
    rnic::fabric::host_memory mem{"mem", sc_time(80, SC_NS)};
    rnic::fabric::pcie_link link;
    dma_engine dma;
    idle_cpu cpu{"cpu"};
    idle_bar bar{"bar"};

    node(sc_core::sc_module_name n, const dma_engine_config& cfg)
        : sc_module(n)
        , link("pcie", rnic::fabric::pcie_config{}, "", ctx)
        , dma("dma", cfg, clk, ctx) {
        dma.dma_out.bind(link.dev_dma_in);
        link.mem_out.bind(mem.dma_in);
        link.bar_out.bind(bar.in);
        cpu.out.bind(link.host_mmio_in);
    }
    // PCIe timing on an idle link (see pcie_link_test for the formulas themselves).
    double write_ps(uint32_t s) const {
        const uint32_t n = (s + link.config().mps - 1) / link.config().mps;
        return (s + 24.0 * n) * link.byte_ns() * 1000.0;
    }
    double read_ps(uint32_t s) const {
        const uint32_t n = (s + link.config().mps - 1) / link.config().mps;
        return (24.0 + s + 20.0 * n) * link.byte_ns() * 1000.0 +
               2 * link.config().latency_ns * 1000.0 + to_ps(mem.latency());
    }
    nlohmann::json stat(const std::string& key) const {
        return ctx.stats.values()[std::string(dma.name())][key];
    }
};

TEST(DmaEngine, IssueCyclesOnTheClockGridThenPcieTiming) {
    dma_engine_config two;  // default: 2 cycles
    dma_engine_config zero;
    zero.issue_cycles = 0;
    dma_engine_config five;
    five.issue_cycles = 5;
    node a("a", two);
    node z("z", zero);
    node f("f", five);
    std::vector<sc_time> ta, tz, tf;
    auto body = [](node& n, std::vector<sc_time>& out) {
        std::vector<uint8_t> buf(512, 0x3C);
        sc_core::wait(ps(1000));  // 1 ns: off the 4 ns grid
        out.push_back(n.dma.read(dma_client::TX_PAYLOAD, 0x1000, buf.data(), 64));
        sc_core::wait(sc_time(10, sc_core::SC_US));  // 10.001 us, link idle again
        out.push_back(n.dma.write(dma_client::RX_PAYLOAD, 0x2000, buf.data(), 512));
        out.push_back(sc_core::sc_time_stamp());
    };
    sc_core::sc_spawn([&] { body(a, ta); }, "ta");
    sc_core::sc_spawn([&] { body(z, tz); }, "tz");
    sc_core::sc_spawn([&] { body(f, tf); }, "tf");
    sc_core::sc_start();
    ASSERT_EQ(ta.size(), 3u);
    ASSERT_EQ(tz.size(), 3u);
    ASSERT_EQ(tf.size(), 3u);
    // Called at 1 ns: the request is decoded from the next edge (4 ns) for issue_cycles.
    EXPECT_NEAR(to_ps(ta[0]), 4000 + 2 * 4000 + a.read_ps(64), 1.0);
    EXPECT_NEAR(to_ps(tz[0]), 4000 + z.read_ps(64), 1.0);
    EXPECT_NEAR(to_ps(tf[0]), 4000 + 5 * 4000 + f.read_ps(64), 1.0);
    // Called at 10.001 us: next edge 10.004 us. The non-waiting call returns at the grant: the
    // request line is sampled at that edge and arbitrated with the cycle's other requests.
    const double t1 = to_ps(ta[2]);
    EXPECT_EQ(t1, 10004000.0);
    EXPECT_NEAR(to_ps(ta[1]), 10004000 + 2 * 4000 + a.write_ps(512), 1.0);
    EXPECT_NEAR(to_ps(tz[1]), 10004000 + z.write_ps(512), 1.0);
    EXPECT_NEAR(to_ps(tf[1]), 10004000 + 5 * 4000 + f.write_ps(512), 1.0);
    // The non-waiting calls took no simulated time beyond the edge, whatever issue_cycles.
    EXPECT_EQ(ta[2], tz[2]);
    EXPECT_EQ(ta[2], tf[2]);
}

// read_wait/write_wait: issue delay + PCIe timing, then resume on the NIC clock edge at or
// after it; the data is really moved.
TEST(DmaEngine, WaitVariantsResumeOnTheEdgeAfterPcieTiming) {
    node n("n", dma_engine_config{});
    const std::vector<uint8_t> host(300, 0x77);
    n.mem.write(0x10000, host.data(), host.size());
    std::vector<uint8_t> got(300);
    sc_time t_read_start, t_read_end, t_write_start, t_write_end;
    uint64_t landed_at_return = 0;
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(ps(5500));
            t_read_start = sc_core::sc_time_stamp();
            n.dma.read_wait(dma_client::WQE_FETCH, 0x10000, got.data(), 300);
            t_read_end = sc_core::sc_time_stamp();
            sc_core::wait(ps(700));
            t_write_start = sc_core::sc_time_stamp();
            const uint64_t cqe = 0xC0FFEEull;
            n.dma.write_wait(dma_client::COMPLETION, 0x20000, &cqe, 8);
            t_write_end = sc_core::sc_time_stamp();
            landed_at_return = n.mem.load<uint64_t>(0x20000);
        },
        "blk");
    sc_core::sc_start();
    EXPECT_EQ(got, host);
    const double issue_r = 8000 + 2 * 4000;  // edge after 5.5 ns, + 2 cycles
    EXPECT_EQ(t_read_end, n.clk.edge_at_or_after(ps(std::ceil(issue_r + n.read_ps(300)))));
    EXPECT_EQ(t_read_end.value() % 4000, 0u);
    const double issue_w = to_ps(n.clk.edge_at_or_after(t_write_start)) + 2 * 4000;
    EXPECT_EQ(t_write_end, n.clk.edge_at_or_after(ps(std::ceil(issue_w + n.write_ps(8)))));
    EXPECT_EQ(t_write_end.value() % 4000, 0u);
    // Posted: write_wait returns when the TLP has left; the CQE is in memory one link latency
    // later, not yet at the return.
    EXPECT_EQ(landed_at_return, 0u);
    EXPECT_EQ(n.mem.load<uint64_t>(0x20000), 0xC0FFEEull);
}

TEST(DmaEngine, PerClientStats) {
    node n("n", dma_engine_config{});
    sc_core::sc_spawn(
        [&] {
            std::vector<uint8_t> buf(4096);
            n.dma.read_wait(dma_client::WQE_FETCH, 0x1000, buf.data(), 256);
            n.dma.read_wait(dma_client::WQE_FETCH, 0x1100, buf.data(), 128);
            n.dma.read_wait(dma_client::TX_PAYLOAD, 0x8000, buf.data(), 4096);
            n.dma.write_wait(dma_client::RX_PAYLOAD, 0x9000, buf.data(), 1000);
            n.dma.write_wait(dma_client::COMPLETION, 0xA000, buf.data(), 32);
            n.dma.write_wait(dma_client::COMPLETION, 0xA020, buf.data(), 32);
            n.dma.write_wait(dma_client::COMPLETION, 0xA040, buf.data(), 32);
            const uint32_t msi = 3;
            n.dma.write_wait(dma_client::INTERRUPT, rnic::fabric::pcie_link::MSI_BASE, &msi, 4);
            n.dma.read_wait(dma_client::COMMAND, 0xB000, buf.data(), 64);
            n.dma.write_wait(dma_client::COMMAND, 0xB001, buf.data(), 2);
        },
        "clients");
    sc_core::sc_start();
    const auto& wf = n.dma.get_stats(dma_client::WQE_FETCH);
    EXPECT_EQ(wf.reads, 2u);
    EXPECT_EQ(wf.read_bytes, 384u);
    EXPECT_EQ(wf.writes, 0u);
    EXPECT_EQ(n.dma.get_stats(dma_client::TX_PAYLOAD).read_bytes, 4096u);
    EXPECT_EQ(n.dma.get_stats(dma_client::RX_PAYLOAD).writes, 1u);
    EXPECT_EQ(n.dma.get_stats(dma_client::RX_PAYLOAD).write_bytes, 1000u);
    EXPECT_EQ(n.dma.get_stats(dma_client::COMPLETION).writes, 3u);
    EXPECT_EQ(n.dma.get_stats(dma_client::COMPLETION).write_bytes, 96u);
    EXPECT_EQ(n.dma.get_stats(dma_client::INTERRUPT).writes, 1u);
    EXPECT_EQ(n.dma.get_stats(dma_client::COMMAND).reads, 1u);
    EXPECT_EQ(n.dma.get_stats(dma_client::COMMAND).writes, 1u);
    EXPECT_EQ(n.dma.get_stats(dma_client::RQ_FETCH).reads, 0u);
    EXPECT_EQ(n.dma.get_stats(dma_client::NETDMA).writes, 0u);
    // Registry: <client>_<counter> under the engine's name, for every client.
    EXPECT_EQ(n.stat("wqe_fetch_reads").get<uint64_t>(), 2u);
    EXPECT_EQ(n.stat("wqe_fetch_read_bytes").get<uint64_t>(), 384u);
    EXPECT_EQ(n.stat("completion_write_bytes").get<uint64_t>(), 96u);
    EXPECT_EQ(n.stat("interrupt_writes").get<uint64_t>(), 1u);
    EXPECT_EQ(n.stat("netdma_reads").get<uint64_t>(), 0u);
    EXPECT_EQ(std::string(rnic::hw::to_string(dma_client::RQ_FETCH)), "rq_fetch");
    // Everything went through the one PCIe link.
    EXPECT_EQ(n.link.upstream().mrd_tlps, 1u + 1u + 8u + 1u);  // MRRS 512
    EXPECT_EQ(n.link.upstream().mwr_tlps, 4u + 3u + 1u + 1u);  // MPS 256
    EXPECT_EQ(n.mem.get_stats().dma_writes, 5u);               // not the MSI
}

// Pipelining callers use the returned times: back-to-back reads issued in one cycle share
// the link and their completions queue, so the second is one completion later.
TEST(DmaEngine, PipelinedReadsQueueOnTheLink) {
    node n("n", dma_engine_config{});
    std::vector<sc_time> done;
    sc_core::sc_spawn(
        [&] {
            std::vector<uint8_t> buf(256);
            done.push_back(n.dma.read(dma_client::TX_PAYLOAD, 0x1000, buf.data(), 256));
            done.push_back(n.dma.read(dma_client::TX_PAYLOAD, 0x2000, buf.data(), 256));
        },
        "pipe");
    sc_core::sc_start();
    ASSERT_EQ(done.size(), 2u);
    EXPECT_NEAR(to_ps(done[0]), 8000 + n.read_ps(256), 1.0);
    EXPECT_NEAR(to_ps(done[1] - done[0]), (20 + 256) * n.link.byte_ns() * 1000.0, 2.0);
}

// Writes asked for in the same cycle by different blocks reach the link in client order
// (dma_client: RX_PAYLOAD before COMPLETION), then by requesting process name, whatever order
// SystemC runs them in: the processes are spawned (and so first run) in the opposite order,
// and the one of a later cycle comes after both.
TEST(DmaEngine, SameCycleRequestsGrantedByClientThenProcessName) {
    node n("n", dma_engine_config{});
    std::vector<uint8_t> buf(512, 0x5A);
    sc_time cqe, payload, payload2, late;
    auto at = [](double t_ps) { sc_core::wait(ps(t_ps)); };
    sc_core::sc_spawn(
        [&] {
            at(5000);
            late = n.dma.write(dma_client::NETDMA, 0x5000, buf.data(), 512);
        },
        "a_late");
    sc_core::sc_spawn(
        [&] {
            at(1000);
            cqe = n.dma.write(dma_client::COMPLETION, 0x3000, buf.data(), 64);
        },
        "b_cqe");
    sc_core::sc_spawn(
        [&] {
            at(2000);
            payload2 = n.dma.write(dma_client::RX_PAYLOAD, 0x2000, buf.data(), 512);
        },
        "z_payload");
    sc_core::sc_spawn(
        [&] {
            at(3000);
            payload = n.dma.write(dma_client::RX_PAYLOAD, 0x1000, buf.data(), 512);
        },
        "y_payload");
    sc_core::sc_start();
    // All but `late` sampled at the 4 ns edge, issued 2 cycles later (12 ns), back to back.
    const double issue = 4000 + 2 * 4000;
    EXPECT_NEAR(to_ps(payload), issue + n.write_ps(512), 1.0);  // y_ before z_
    EXPECT_NEAR(to_ps(payload2), issue + 2 * n.write_ps(512), 2.0);
    EXPECT_NEAR(to_ps(cqe), issue + 2 * n.write_ps(512) + n.write_ps(64), 3.0);  // client order
    // Sampled at 8 ns, issued at 16 ns: the link is still busy with the three above.
    EXPECT_NEAR(to_ps(late), to_ps(cqe) + n.write_ps(512), 4.0);
}

// write_wait with the caller's own event (the CQ writer's: one wake-up instead of two) returns
// when the plain write_wait does: granted in the same order among the cycle's requests (a
// payload write of the same edge goes first, by client), on the edge after its TLP has left;
// alone at an instant (granted at once) the same.
TEST(DmaEngine, WriteWaitOnTheCallersEventReturnsWhenThePlainOneDoes) {
    node e("e", dma_engine_config{});
    node p("p", dma_engine_config{});
    struct result {
        sc_time contended, alone;
        rnic::hw::dma_status st = rnic::hw::dma_status::UNSUPPORTED_REQUEST;
    };
    result re, rp;
    sc_core::sc_event done;
    auto payload = [](node& n) {
        std::vector<uint8_t> buf(512, 0x5A);
        sc_core::wait(ps(1000));
        n.dma.write(dma_client::RX_PAYLOAD, 0x1000, buf.data(), 512);
    };
    auto cqe = [&done](node& n, result& r, bool event) {
        const uint64_t v = 0xC0FFEEull;
        sc_core::wait(ps(2000));
        r.st = event ? n.dma.write_wait(dma_client::COMPLETION, 0x3000, &v, 8, done)
                     : n.dma.write_wait(dma_client::COMPLETION, 0x3000, &v, 8);
        r.contended = sc_core::sc_time_stamp();
        sc_core::wait(sc_time(20, sc_core::SC_US));
        const sc_time t0 = sc_core::sc_time_stamp();
        if (event) {
            n.dma.write_wait(dma_client::COMPLETION, 0x3008, &v, 8, done);
        } else {
            n.dma.write_wait(dma_client::COMPLETION, 0x3008, &v, 8);
        }
        r.alone = sc_core::sc_time_stamp() - t0;
    };
    sc_core::sc_spawn([&] { payload(e); }, "e_payload");
    sc_core::sc_spawn([&] { cqe(e, re, true); }, "e_cqe");
    sc_core::sc_spawn([&] { payload(p); }, "p_payload");
    sc_core::sc_spawn([&] { cqe(p, rp, false); }, "p_cqe");
    sc_core::sc_start();
    // Both sampled at the 4 ns edge, issued at 12 ns: the payload's TLPs, then the CQE's.
    const double issue = 4000 + 2 * 4000;
    EXPECT_EQ(re.contended,
              e.clk.edge_at_or_after(ps(std::ceil(issue + e.write_ps(512) + e.write_ps(8)))));
    EXPECT_EQ(re.contended, rp.contended);
    EXPECT_EQ(re.alone, rp.alone);
    EXPECT_EQ(re.st, rnic::hw::dma_status::OK);
    EXPECT_EQ(e.mem.load<uint64_t>(0x3008), 0xC0FFEEull);
    EXPECT_EQ(e.stat("completion_writes").get<uint64_t>(), 2u);
    EXPECT_EQ(e.stat("completion_write_bytes").get<uint64_t>(), 16u);
}

}  // namespace

namespace {

// The error path: memory the host released answers a read with Unsupported Request (no data);
// a page whose IOMMU mapping was released fails reads and writes with Completer Abort at issue,
// with the good path's timing; the requester sees the status and the client's error count.
TEST(DmaEngine, PcieErrorsReachTheRequesterWithTheirStatus) {
    node n("n", dma_engine_config{});
    std::vector<rnic::hw::dma_status> st;
    std::vector<uint8_t> got(64, 0xEE);
    sc_time good_write_done, bad_write_done;
    sc_core::sc_spawn(
        [&] {
            std::vector<uint8_t> buf(64, 0x5A);
            n.mem.write(0x3000, buf.data(), 64);
            n.mem.write(0x5000, buf.data(), 64);
            st.push_back(n.dma.read_wait(dma_client::RQ_FETCH, 0x3000, got.data(), 64));  // OK
            n.mem.release(0x3000, 64);
            st.push_back(n.dma.read_wait(dma_client::RQ_FETCH, 0x3000, got.data(), 64));  // UR
            // A posted write to released memory: no completion, dropped at memory.
            st.push_back(n.dma.write_wait(dma_client::COMPLETION, 0x3000, buf.data(), 64));
            sc_core::wait(sc_time(1, sc_core::SC_US));
            const sc_time t0 = sc_core::sc_time_stamp();
            st.push_back(n.dma.write_wait(dma_client::COMPLETION, 0x5000, buf.data(), 64));  // OK
            good_write_done = sc_core::sc_time_stamp() - t0;
            sc_core::wait(sc_time(1, sc_core::SC_US));
            n.link.iommu_unmap(0x5000, 1);
            const sc_time t1 = sc_core::sc_time_stamp();
            st.push_back(n.dma.write_wait(dma_client::COMPLETION, 0x5000, buf.data(), 64));  // CA
            bad_write_done = sc_core::sc_time_stamp() - t1;
            st.push_back(n.dma.read_wait(dma_client::RQ_FETCH, 0x5010, got.data(), 16));  // CA
            n.link.iommu_map(0x5000, 4096);
            st.push_back(n.dma.read_wait(dma_client::RQ_FETCH, 0x5000, got.data(), 16));  // OK
        },
        "body");
    sc_core::sc_start();
    using rnic::hw::dma_status;
    ASSERT_EQ(st.size(), 7u);
    EXPECT_EQ(st[0], dma_status::OK);
    EXPECT_EQ(st[1], dma_status::UNSUPPORTED_REQUEST);
    EXPECT_EQ(st[2], dma_status::OK);  // posted: the requester cannot know
    EXPECT_EQ(st[3], dma_status::OK);
    EXPECT_EQ(st[4], dma_status::COMPLETER_ABORT);
    EXPECT_EQ(st[5], dma_status::COMPLETER_ABORT);
    EXPECT_EQ(st[6], dma_status::OK);
    EXPECT_EQ(got[0], 0x5A);                      // the last read got the data again
    EXPECT_EQ(bad_write_done, good_write_done);   // the TLPs still cross the link
    EXPECT_EQ(n.mem.get_stats().dma_errors, 2u);  // the UR read and the dropped write
    EXPECT_FALSE(n.mem.backed(0x3));
    EXPECT_TRUE(n.mem.backed(0x5));
    EXPECT_EQ(n.link.iommu_faults(), 2u);
    EXPECT_EQ(n.dma.get_stats(dma_client::RQ_FETCH).errors, 2u);
    EXPECT_EQ(n.dma.get_stats(dma_client::COMPLETION).errors, 1u);
    EXPECT_EQ(n.stat("rq_fetch_errors"), 2);
    EXPECT_EQ(std::string(rnic::hw::to_string(dma_status::COMPLETER_ABORT)), "completer_abort");
}

}  // namespace
