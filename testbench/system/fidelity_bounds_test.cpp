// SPDX-License-Identifier: Apache-2.0
// Fidelity against physics: large RDMA WRITEs reach the bound that the wire or the PCIe link
// sets, computed here from the formulas (not from the model's own helpers):
// ../shared/reference/pcie_and_rnic_figures.md, issue 6. Latency: fidelity_latency_test.cpp.
//
// One elaboration per process: ctest runs each TEST as its own process. Run the binary by hand
// with --gtest_filter=<one test>.
#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"

namespace {

using nlohmann::json;
using rnic::scenario::run_result;

// --- Bytes on the wire per RoCEv2 packet besides its payload (IBA annex A17, IEEE 802.3) ---
constexpr uint64_t PREAMBLE_SFD = 8;
constexpr uint64_t ETH_HEADER = 14;
constexpr uint64_t FCS = 4;
constexpr uint64_t IFG = 12;
constexpr uint64_t IPV4_HEADER = 20;
constexpr uint64_t UDP_HEADER = 8;
constexpr uint64_t BTH = 12;
constexpr uint64_t RETH = 16;  // first packet of a WRITE only
constexpr uint64_t ICRC = 4;
constexpr uint64_t PER_PACKET =
    PREAMBLE_SFD + ETH_HEADER + IPV4_HEADER + UDP_HEADER + BTH + ICRC + FCS + IFG;  // 82 B

// Wire bytes of one WRITE of `bytes` (a multiple of 4: no pad) at path MTU `mtu`.
uint64_t write_wire_bytes(uint64_t bytes, uint64_t mtu) {
    const uint64_t packets = (bytes + mtu - 1) / mtu;
    return bytes + packets * PER_PACKET + RETH;
}

// --- PCIe (Neugebauer et al., SIGCOMM 2018) ---
// Usable TLP bandwidth in Gb/s: GT/s x lanes x encoding x (1 - 8/AckLimit - 8/FCUpdate - 4/1538).
double pcie_tlp_gbps(uint32_t gen, uint32_t lanes, uint32_t ack_limit, uint32_t fc_update) {
    const double gts[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0};
    const double encoding = gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
    return gts[gen] * lanes * encoding * (1.0 - 8.0 / ack_limit - 8.0 / fc_update - 4.0 / 1538.0);
}
// Share of a direction's bandwidth that is payload, for transfers of `s` bytes split into TLPs
// of at most `mps` with `header` bytes each (MWr/MRd 24 B, CplD 20 B, framing and DLL included).
double tlp_efficiency(uint64_t s, uint64_t mps, uint64_t header) {
    const uint64_t tlps = (s + mps - 1) / mps;
    return static_cast<double>(s) / static_cast<double>(s + header * tlps);
}

// A two-node scenario: 100 Gb/s link, path MTU `mtu` on both nodes, `rnic` as the NIC keys.
json scenario(uint32_t mtu, const json& rnic, const json& workload) {
    return {{"topology",
             {{"nodes",
               {{{"mac", "02:00:00:00:00:01"}, {"ip", "10.0.0.1"}, {"mtu", mtu}},
                {{"mac", "02:00:00:00:00:02"}, {"ip", "10.0.0.2"}, {"mtu", mtu}}}},
              {"link", {{"rate_gbps", 100}, {"propagation_ns", 50}}}}},
            {"rnic", rnic},
            {"workload", workload}};
}

json large_writes(uint64_t messages) {
    return {{"operation", "write"}, {"message_bytes", 65536},
            {"messages", messages}, {"qps", 1},
            {"queue_depth", 16},    {"seed", 3},
            {"signal_every", 1},    {"time_limit_ms", 1000}};
}

run_result run(const json& doc) {
    const run_result r = rnic::scenario::run_scenario(rnic::scenario::parse_scenario(doc));
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    EXPECT_EQ(r.mismatches, 0u);
    return r;
}

// ---------------------------------------------------------------------------------------------
// Wire-bound: PCIe Gen3 x16 moves payload faster than the 100 Gb/s wire at every MTU here, so
// goodput is link rate x payload / (payload + every per-packet wire byte), within 1% (the
// first packet's latency and the last ACK are the only time the wire is not busy).
// ---------------------------------------------------------------------------------------------
class WireBound : public ::testing::TestWithParam<uint32_t> {};

TEST_P(WireBound, WriteGoodputWithinOnePercentOfTheWire) {
    const uint32_t mtu = GetParam();
    const json rnic = {{"clock_mhz", 500}, {"pcie", {{"gen", 3}, {"lanes", 16}, {"mps", 256}}}};
    const uint64_t messages = 256;
    const run_result r = run(scenario(mtu, rnic, large_writes(messages)));
    ASSERT_TRUE(r.passed());
    ASSERT_EQ(r.messages, messages);

    const double bound = 100.0 * 65536.0 / static_cast<double>(write_wire_bytes(65536, mtu));
    EXPECT_LE(r.goodput_gbps, bound * 1.0005) << "faster than the wire allows";
    EXPECT_GE(r.goodput_gbps, bound * 0.99) << "bound " << bound << " Gb/s";
    // The data direction carried at least every packet of every message.
    const uint64_t packets = messages * ((65536 + mtu - 1) / mtu);
    EXPECT_GE(r.blocks["link.dir0"]["frames"].get<uint64_t>(), packets);
    EXPECT_GE(r.blocks["link.dir0"]["wire_bytes"].get<uint64_t>(),
              messages * write_wire_bytes(65536, mtu));
}

INSTANTIATE_TEST_SUITE_P(Mtu, WireBound, ::testing::Values(1024u, 2048u, 4096u),
                         [](const ::testing::TestParamInfo<uint32_t>& i) {
                             return "Mtu" + std::to_string(i.param);
                         });

// ---------------------------------------------------------------------------------------------
// PCIe-bound: on narrow links the NICs' PCIe is the bottleneck. Node 0 reads each packet's
// payload (CplD, 20 B per MPS of data, host -> NIC); node 1 writes it (MWr, 24 B per MPS,
// NIC -> host). Goodput is the smallest of the three bounds, within 2%.
// ---------------------------------------------------------------------------------------------
struct pcie_case {
    uint32_t gen;
    uint32_t lanes;
    uint32_t ack_limit;  // bytes of TLPs per ACK / FC-update DLLP (set so the test owns it)
};

// For test names in ctest: "Gen3 x4".
void PrintTo(const pcie_case& c, std::ostream* os) {
    *os << "Gen" << c.gen << " x" << c.lanes;
}

class PcieBound : public ::testing::TestWithParam<pcie_case> {};

TEST_P(PcieBound, WriteGoodputWithinTwoPercentOfThePcieModel) {
    const pcie_case c = GetParam();
    const uint32_t mtu = 4096;
    const uint32_t mps = 256;
    const json rnic = {{"clock_mhz", 500},
                       {"pcie",
                        {{"gen", c.gen},
                         {"lanes", c.lanes},
                         {"mps", mps},
                         {"mrrs", 512},
                         {"ack_limit", c.ack_limit},
                         {"fc_update", c.ack_limit}}}};
    const uint64_t messages = 400;
    const run_result r = run(scenario(mtu, rnic, large_writes(messages)));
    ASSERT_TRUE(r.passed());

    const double tlp = pcie_tlp_gbps(c.gen, c.lanes, c.ack_limit, c.ack_limit);
    const double read_bound = tlp * tlp_efficiency(mtu, mps, 20);   // node 0, completions
    const double write_bound = tlp * tlp_efficiency(mtu, mps, 24);  // node 1, posted writes
    const double wire_bound = 100.0 * 65536.0 / static_cast<double>(write_wire_bytes(65536, mtu));
    const double bound = std::min({read_bound, write_bound, wire_bound});
    ASSERT_LT(bound, wire_bound) << "not a PCIe-bound case";
    EXPECT_LE(r.goodput_gbps, bound * 1.0005) << "faster than PCIe allows";
    EXPECT_GE(r.goodput_gbps, bound * 0.98) << "bound " << bound << " Gb/s";
    // The bottleneck direction was busy for (nearly) the whole transfer.
    const double busy_ns = r.blocks["node1.pcie"]["up_busy_ps"].get<double>() / 1000.0;
    EXPECT_GE(busy_ns, r.duration_ns * 0.98);
}

INSTANTIATE_TEST_SUITE_P(GenLanes, PcieBound,
                         ::testing::Values(pcie_case{3, 4, 214}, pcie_case{3, 8, 214},
                                           pcie_case{2, 8, 329}, pcie_case{1, 16, 278}),
                         [](const ::testing::TestParamInfo<pcie_case>& i) {
                             return "Gen" + std::to_string(i.param.gen) + "X" +
                                    std::to_string(i.param.lanes);
                         });

}  // namespace
