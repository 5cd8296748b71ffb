// SPDX-License-Identifier: Apache-2.0
// Fidelity label: the 100 Gb/s Gen3 x16 preset (configs/hw/nic100g_gen3x16.json) against
// published figures, each within 15% (configs/hw/README.md lists the sources):
// - 64 B DMA read latency ~550 ns (Neugebauer et al., "Understanding PCIe performance for end
//   host networking", SIGCOMM 2018; ../shared/reference/pcie_and_rnic_figures.md);
// - many-thread 64 B RDMA WRITE rate of one NIC (Kalia, Kaminsky, Andersen, "Design Guidelines
//   for High Performance RDMA Systems", ATC 2016: 80 M/s outbound on 2 x 56 Gb/s): at 100 GbE
//   the wire bound, and the run names the wire as what bound it.
// - inbound 32 B RDMA READs served by one NIC (Kalia et al.: 121.6 M/s on Connect-IB, NIC-bound
//   on 2 x 56 Gb/s): at 100 GbE the wire bound of the READ responses, at 112 Gb/s at least the
//   issue's 100 M/s, the wire named as what bound it either way.
// Cheap: message rates converge within a few thousand messages.
//
// One elaboration per process: ctest runs each TEST as its own process.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hw/common/clock_domain.h"
#include "hw/common/sim_context.h"
#include "hw/dma_engine/dma_engine.h"
#include "ndk_shim/host/host_system.h"
#include "testbench/common/cli_run.h"
#include "testbench/output/run_report.h"
#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"
#include "tlm/host_memory/host_memory.h"
#include "tlm/pcie/pcie_link.h"

namespace {

using nlohmann::json;
using rnic::testing::source_dir;

json read_json(const std::string& path) {
    std::ifstream in(path);
    return json::parse(in, nullptr, true, /*ignore_comments=*/true);
}

json preset(const std::string& file) {
    json rnic = read_json(source_dir() + "/configs/hw/" + file);
    rnic.erase("//");
    return rnic;
}

json preset_100g() {
    return preset("nic100g_gen3x16.json");
}

// Two nodes back to back at 100 Gb/s with the 100G preset.
json two_nodes() {
    return {{"topology",
             {{"nodes",
               {{{"mac", "02:00:00:00:00:01"}, {"ip", "10.0.0.1"}, {"mtu", 4096}},
                {{"mac", "02:00:00:00:00:02"}, {"ip", "10.0.0.2"}, {"mtu", 4096}}}},
              {"link", {{"rate_gbps", 100}, {"propagation_ns", 50}}}}},
            {"rnic", preset_100g()}};
}

// Runs a scenario; its failures are the test's.
rnic::scenario::run_result run(const json& doc) {
    const rnic::scenario::scenario_config cfg = rnic::scenario::parse_scenario(doc);
    rnic::scenario::run_result r = rnic::scenario::run_scenario(cfg);
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    return r;
}

// BAR0 of a NIC and a CPU that are not there: the PCIe link's sockets must be bound.
struct no_bar : sc_core::sc_module {
    tlm_utils::simple_target_socket<no_bar> in{"in"};
    tlm_utils::simple_initiator_socket<no_bar> cpu{"cpu"};
    explicit no_bar(sc_core::sc_module_name n)
        : sc_module(n) {
        in.register_b_transport(this, &no_bar::b_transport);
    }
    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time&) {
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
    }
};

// pcie-bench's figure is the device's view: from the DMA engine's request to the data in, for
// a 64 B read of host memory (median ~550 ns on Gen3 Xeon E5 hosts, 8-64 B alike).
TEST(FidelityPreset100G, DmaRead64BytesAsPcieBench) {
    const rnic::scenario::scenario_config cfg = rnic::scenario::parse_scenario(two_nodes());
    rnic::hw::sim_context ctx;
    rnic::hw::clock_domain clk("nic", cfg.rnic.clock_mhz);
    rnic::fabric::host_memory mem("mem",
                                  sc_core::sc_time(cfg.host.memory_latency_ns, sc_core::SC_NS));
    rnic::fabric::pcie_link link("pcie", cfg.rnic.pcie, "", ctx);
    rnic::hw::dma_engine dma("dma", cfg.rnic.dma, clk, ctx);
    no_bar bar("bar");
    dma.dma_out.bind(link.dev_dma_in);
    link.mem_out.bind(mem.dma_in);
    link.bar_out.bind(bar.in);
    bar.cpu.bind(link.host_mmio_in);
    std::vector<double> ns;
    sc_core::sc_spawn(
        [&] {
            std::vector<uint8_t> buf(64);
            for (int i = 0; i < 8; ++i) {
                // On a clock edge, as a block's request is; well apart, so nothing queues.
                clk.wait_until(sc_core::sc_time_stamp() + sc_core::sc_time(5, sc_core::SC_US));
                const sc_core::sc_time t0 = sc_core::sc_time_stamp();
                dma.read_wait(rnic::hw::dma_client::WQE_FETCH, 0x10000 + 4096 * i, buf.data(), 64);
                ns.push_back((sc_core::sc_time_stamp() - t0).to_seconds() * 1e9);
            }
        },
        "reader");
    sc_core::sc_start();
    ASSERT_EQ(ns.size(), 8u);
    for (double v : ns) {
        EXPECT_NEAR(v, 550.0, 550.0 * 0.15) << "64 B DMA read latency (pcie-bench: ~550 ns)";
    }
}

// Wire bytes of a 64 B RDMA WRITE-only frame on Ethernet, from the standards (not the model):
// preamble+SFD 8, Ethernet 14, IPv4 20, UDP 8, BTH 12, RETH 16, payload 64, ICRC 4, FCS 4,
// inter-frame gap 12.
constexpr double WRITE64_WIRE_BYTES = 8 + 14 + 20 + 8 + 12 + 16 + 64 + 4 + 4 + 12;  // 162

// One NIC, eight posting threads (a flow each) to eight peers through a switch, 64 B WRITEs
// pushed whole with their doorbells (BlueFlame, 128 B write-combining), inline. Kalia et al.
// (ATC'16) measured 80 M/s outbound WRITEs from one Connect-IB (2 x 56 Gb/s). At 100 GbE a
// 64 B RoCEv2 WRITE takes 162 B of wire: at most 77.2 M/s. The preset's NIC must carry the
// wire bound (within 15%), and the run must name the wire as what bound it.
// Eight posting threads (a flow each) from node 0 to eight peers through a switch, 64 B inline
// WRITEs pushed with their doorbells, on `gbps` links with the preset `rnic`.
rnic::scenario::run_result many_thread_write64(const json& rnic, int gbps) {
    json pairs = json::array();
    for (int i = 1; i <= 8; ++i) {
        pairs.push_back({0, i});
    }
    const json doc = {
        {"topology",
         {{"star", {{"hosts", 9}}}, {"link", {{"rate_gbps", gbps}, {"propagation_ns", 50}}}}},
        {"rnic", rnic},
        {"host", {{"wqe_push", true}, {"wqe_push_bytes", 128}}},
        {"workload",
         {{"pattern", "pairs"},
          {"pairs", pairs},
          {"operation", "write"},
          {"message_bytes", 64},
          {"messages", 1500},
          {"qps", 1},
          {"queue_depth", 128},
          {"signal_every", 16},
          {"inline_threshold", 64},
          {"time_limit_ms", 100}}}};
    return run(doc);
}

// The run names a link as what bound it, at least 85% busy.
void expect_a_link_binds(const rnic::scenario::run_result& r) {
    double f = 0;
    const json u = rnic::output::make_utilization(r);
    const std::string bound = rnic::output::binding_resource(u, &f);
    EXPECT_EQ(bound.rfind("link", 0), 0u) << "bound by " << bound << ": " << u.dump();
    EXPECT_GE(f, 0.85);
}

TEST(FidelityPreset100G, ManyThreadWrite64BytesRate) {
    const rnic::scenario::run_result r = many_thread_write64(preset_100g(), 100);
    ASSERT_TRUE(r.passed());
    const double wire_bound = 100e9 / (WRITE64_WIRE_BYTES * 8) / 1e6;  // 77.2 M/s
    EXPECT_GE(r.msg_rate_mpps, 0.85 * wire_bound) << "the 100 GbE wire bound is " << wire_bound;
    EXPECT_LE(r.msg_rate_mpps, wire_bound * 1.001);
    expect_a_link_binds(r);
}

// Issue 25's figure: >= 80 M/s of 64 B WRITEs from one NIC with 8 posting threads. 100 GbE
// cannot carry it (77.2 M/s, above); at Kalia et al.'s 112 Gb/s (2 x 56 Gb/s, 86.4 M/s of
// these frames) the 100G preset's NIC must reach it, the wire still named as the bound.
TEST(FidelityPreset100G, ManyThreadWrite64BytesAt112GbpsAtLeast80M) {
    const rnic::scenario::run_result r = many_thread_write64(preset_100g(), 112);
    ASSERT_TRUE(r.passed());
    const double wire_bound = 112e9 / (WRITE64_WIRE_BYTES * 8) / 1e6;  // 86.4 M/s
    EXPECT_GE(r.msg_rate_mpps, 80.0) << "the 112 Gb/s wire bound is " << wire_bound;
    EXPECT_LE(r.msg_rate_mpps, wire_bound * 1.001);
    expect_a_link_binds(r);
    ::testing::Test::RecordProperty("msg_rate_mpps", std::to_string(r.msg_rate_mpps));
}

// The same on the 200 Gb/s Gen4 x16 preset (ConnectX-6 class) at 200 GbE, where the wire no
// longer holds 64 B WRITEs under Kalia et al.'s 80 M/s (154 M/s of these frames fit): one NIC
// with 8 posting threads must reach at least the 80 M/s Connect-IB figure (issue 25's target)
// and stay under the 215 M/s NVIDIA publishes for ConnectX-6 and under the wire. What binds
// must be what the run says: a NIC or link resource at least 80% busy (summary.txt "Bound by"),
// or, when none is, the posting threads themselves: 8 threads of one post (host.post_ns) and
// one WQE-push MMIO (host.mmio_write_ns) per message, within 15%.
TEST(FidelityPreset200G, ManyThreadWrite64BytesRateAtLeastKalia) {
    const rnic::scenario::run_result r = many_thread_write64(preset("nic200g_gen4x16.json"), 200);
    ASSERT_TRUE(r.passed());
    const double wire_bound = 200e9 / (WRITE64_WIRE_BYTES * 8) / 1e6;  // 154.3 M/s
    EXPECT_GE(r.msg_rate_mpps, 80.0);
    EXPECT_LE(r.msg_rate_mpps, std::min(215.0, wire_bound * 1.001));
    double f = 0;
    const json u = rnic::output::make_utilization(r);
    const std::string bound = rnic::output::binding_resource(u, &f);
    const rnic::ndk::host_config host;  // the scenario leaves the host's CPU costs at defaults
    const double posting_bound = 8 * 1e3 / (host.post_ns + host.mmio_write_ns);  // M/s
    if (f < 0.80) {
        EXPECT_GE(r.msg_rate_mpps, 0.85 * posting_bound)
            << "no resource is 80% busy (most: " << bound << " " << f
            << "), so the 8 posting threads must bind: " << posting_bound << " M/s";
    }
    EXPECT_LE(r.msg_rate_mpps, posting_bound * 1.001);
    ::testing::Test::RecordProperty("msg_rate_mpps", std::to_string(r.msg_rate_mpps));
    ::testing::Test::RecordProperty("bound_by", bound);
}

// Wire bytes of a 32 B RDMA READ response (RC READ Response Only) on Ethernet, from the
// standards: preamble+SFD 8, Ethernet 14, IPv4 20, UDP 8, BTH 12, AETH 4, payload 32, ICRC 4,
// FCS 4, inter-frame gap 12.
constexpr double READ32_RESPONSE_WIRE_BYTES = 8 + 14 + 20 + 8 + 12 + 4 + 32 + 4 + 4 + 12;  // 118

// Eight clients (4 QPs each, 16 READs outstanding per QP) through a switch READ 32 B each from
// node 0, whose NIC serves them: every request crosses node 0's receive path, every response
// node 0's link to the switch (link0.dir0), on `gbps` links with the 100G preset.
rnic::scenario::run_result inbound_read32(int gbps) {
    const json doc = {
        {"topology",
         {{"star", {{"hosts", 9}}}, {"link", {{"rate_gbps", gbps}, {"propagation_ns", 50}}}}},
        {"rnic", preset_100g()},
        {"workload",
         {{"pattern", "incast"},
          {"receiver", 0},
          {"operation", "read"},
          {"message_bytes", 32},
          {"messages", 2000},
          {"qps", 4},
          {"queue_depth", 16},
          {"time_limit_ms", 100}}}};
    return run(doc);
}

// The run reached `at_least` M/s, under the responses' wire bound, and named node 0's link
// toward the switch (the READ responses) as its bound, at least 85% busy.
void expect_responses_wire_bound(const rnic::scenario::run_result& r, double wire_bound,
                                 double at_least) {
    ASSERT_TRUE(r.passed());
    EXPECT_GE(r.msg_rate_mpps, at_least) << "the wire bound is " << wire_bound;
    EXPECT_LE(r.msg_rate_mpps, wire_bound * 1.001);
    double f = 0;
    const json u = rnic::output::make_utilization(r);
    const std::string bound = rnic::output::binding_resource(u, &f);
    EXPECT_EQ(bound, "link0.dir0") << u.dump();
    EXPECT_GE(f, 0.85);
    ::testing::Test::RecordProperty("msg_rate_mpps", std::to_string(r.msg_rate_mpps));
}

// At 100 GbE the READ responses leaving node 0 bind: 105.9 M/s of 118 B frames. The rate over
// the whole run (connection set-up and the last round trip included) must be within 15% of it,
// and the run must name node 0's link toward the switch as its bound, not the receive path
// (its lanes, rnic.recv_path.lanes, carry the requests).
TEST(FidelityPreset100G, InboundRead32BytesAtTheWireBound) {
    const double wire_bound = 100e9 / (READ32_RESPONSE_WIRE_BYTES * 8) / 1e6;  // 105.9 M/s
    expect_responses_wire_bound(inbound_read32(100), wire_bound, 0.85 * wire_bound);
}

// Issue 25's figure: 32 B inbound READs at >= 100 M/s at 112 Gb/s (Kalia et al.'s 2 x 56 Gb/s),
// where the wire carries 118.6 M/s of the responses; the bound the run names is still the wire
// (the NIC's receive lanes, payload reads and send path keep up).
TEST(FidelityPreset100G, InboundRead32BytesAt112GbpsAtLeast100M) {
    const double wire_bound = 112e9 / (READ32_RESPONSE_WIRE_BYTES * 8) / 1e6;  // 118.6 M/s
    expect_responses_wire_bound(inbound_read32(112), wire_bound, 100.0);
}

}  // namespace
