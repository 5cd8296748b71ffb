// SPDX-License-Identifier: Apache-2.0
// PCIe link at TLP level against the model of Neugebauer et al. (SIGCOMM 2018,
// /work/shared/reference/pcie_and_rnic_figures.md): BW_tlp, TLP splitting at MPS / MRRS /
// 4 KiB, write and read latency and bandwidth for every generation, width and MPS, read tags,
// posted-write visibility and ordering, MMIO to the BAR, MSI, and the stats counters.
#include "tlm/pcie/pcie_link.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <gtest/gtest.h>

#include "hw/common/config_reader.h"
#include "hw/common/sim_context.h"
#include "tlm/host_memory/host_memory.h"
#include "tlm/pcie/dma_stream.h"
#include "tlm/pcie/pcie_config.h"

namespace {

using rnic::fabric::host_memory;
using rnic::fabric::pcie_config;
using rnic::fabric::pcie_link;
using sc_core::SC_NS;
using sc_core::SC_PS;
using sc_core::sc_time;

// ---- The reference model, written out independently of tlm/pcie -------------------------

constexpr uint32_t MWR_HDR = 24;  // 2 B framing + 6 B DLL + 16 B header (64-bit address)
constexpr uint32_t MRD_HDR = 24;
constexpr uint32_t CPLD_HDR = 20;  // 2 + 6 + 12
constexpr uint32_t GENS[] = {1, 2, 3, 4, 5};
constexpr uint32_t WIDTHS[] = {1, 2, 4, 8, 16};
constexpr uint32_t MPSS[] = {128, 256, 512, 1024, 2048, 4096};

uint64_t ceil_div(uint64_t a, uint64_t b) {
    return (a + b - 1) / b;
}

double raw_gbps(uint32_t gen, uint32_t lanes) {
    const double gts[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0};
    const double enc = gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
    return gts[gen] * lanes * enc;
}

// TLP-layer bytes per ns: raw x (1 - 8/AckLimit - 8/FCUpdate - 4/1538).
double bw_tlp(uint32_t gen, uint32_t lanes, double ack, double fc) {
    return raw_gbps(gen, lanes) / 8.0 * (1.0 - 8.0 / ack - 8.0 / fc - 4.0 / 1538.0);
}
double bw_tlp(const pcie_config& c) {
    return bw_tlp(c.gen, c.lanes, c.effective_ack_limit(), c.effective_fc_update());
}

// PCIe Base Spec 5.0 tables 3-7..3-9 (Ack) and 2-46..2-48 (FC update), as tabulated by the
// pcie-bench model: bytes of TLP traffic per ACK / FC-update DLLP. Identical for both and for
// gen3..gen5 at widths x1..x16. Indexed [gen1, gen2, gen3+][x1, x2, x4, x8, x16][MPS 128..4096].
constexpr uint32_t SPEC_LIMIT[3][5][6] = {
    {{237, 416, 559, 1071, 2095, 4143},
     {128, 217, 289, 545, 1057, 2081},
     {73, 118, 154, 282, 538, 1050},
     {67, 107, 86, 150, 278, 534},
     {48, 72, 86, 150, 278, 534}},
    {{288, 467, 610, 1122, 2146, 4194},
     {179, 268, 340, 596, 1108, 2132},
     {124, 169, 205, 333, 589, 1101},
     {118, 158, 137, 201, 329, 585},
     {99, 123, 137, 201, 329, 585}},
    {{333, 512, 655, 1167, 2191, 4239},
     {224, 313, 385, 641, 1153, 2177},
     {169, 214, 250, 378, 634, 1146},
     {163, 203, 182, 246, 374, 630},
     {144, 168, 182, 246, 374, 630}},
};
uint32_t spec_limit(uint32_t gen, uint32_t lanes, uint32_t mps) {
    const uint32_t g = gen >= 3 ? 2 : gen - 1;
    const uint32_t w = static_cast<uint32_t>(std::log2(lanes));
    const uint32_t m = static_cast<uint32_t>(std::log2(mps)) - 7;
    return SPEC_LIMIT[g][w][m];
}

sc_time ps(double v) {
    return sc_time(v, SC_PS);
}
double to_ps(const sc_time& t) {
    return static_cast<double>(t.value());
}  // 1 ps resolution

// ---- Bench -------------------------------------------------------------------------------

// A TLM master with plain blocking transport: the NIC's DMA engine or the host CPU.
struct master : sc_core::sc_module {
    tlm_utils::simple_initiator_socket<master> out{"out"};
    explicit master(sc_core::sc_module_name n)
        : sc_module(n) {}
    // Returns the completion time relative to the call: the annotated delay plus any time the
    // target spent in wait() (a non-posted access may block the calling thread).
    sc_time access(tlm::tlm_command cmd, uint64_t addr, void* data, unsigned len,
                   sc_time delay = sc_core::SC_ZERO_TIME) {
        const sc_time called = sc_core::sc_time_stamp();
        tlm::tlm_generic_payload gp;
        gp.set_command(cmd);
        gp.set_address(addr);
        gp.set_data_ptr(static_cast<unsigned char*>(data));
        gp.set_data_length(len);
        gp.set_streaming_width(len);
        gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        out->b_transport(gp, delay);
        EXPECT_EQ(gp.get_response_status(), tlm::TLM_OK_RESPONSE);
        return sc_core::sc_time_stamp() - called + delay;
    }
    sc_time write(uint64_t addr, const void* data, unsigned len,
                  sc_time d = sc_core::SC_ZERO_TIME) {
        return access(tlm::TLM_WRITE_COMMAND, addr, const_cast<void*>(data), len, d);
    }
    sc_time read(uint64_t addr, void* data, unsigned len, sc_time d = sc_core::SC_ZERO_TIME) {
        return access(tlm::TLM_READ_COMMAND, addr, data, len, d);
    }
};

// The NIC's BAR0 as seen by the link: a small register file that logs every access with the
// time it reaches the BAR (the call time plus the annotated delay the link passes).
struct bar_target : sc_core::sc_module {
    tlm_utils::simple_target_socket<bar_target> in{"in"};
    struct access {
        sc_time at;
        bool write;
        uint64_t addr;
        std::vector<uint8_t> data;
    };
    std::vector<access> log;
    std::map<uint64_t, std::vector<uint8_t>> regs;
    sc_time read_delay{8, SC_NS};  // register read: decode and mux

    explicit bar_target(sc_core::sc_module_name n)
        : sc_module(n) {
        in.register_b_transport(this, &bar_target::b_transport);
    }
    void b_transport(tlm::tlm_generic_payload& gp, sc_time& delay) {
        uint8_t* p = gp.get_data_ptr();
        const unsigned len = gp.get_data_length();
        const sc_time at = sc_core::sc_time_stamp() + delay;
        if (gp.is_write()) {
            regs[gp.get_address()].assign(p, p + len);
        } else if (gp.is_read()) {
            auto it = regs.find(gp.get_address());
            for (unsigned i = 0; i < len; ++i) {
                p[i] = it != regs.end() && i < it->second.size() ? it->second[i]
                                                                 : static_cast<uint8_t>(0xA0 + i);
            }
            delay += read_delay;
        }
        log.push_back({at, gp.is_write(), gp.get_address(), std::vector<uint8_t>(p, p + len)});
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
    }
};

// One node's PCIe: NIC DMA -> link -> host memory; CPU -> link -> BAR.
struct pcie_bench : sc_core::sc_module {
    rnic::hw::sim_context ctx;
    host_memory mem;
    pcie_link link;
    master dev{"dev"};
    master cpu{"cpu"};
    bar_target bar{"bar"};
    struct msi {
        sc_time at;
        uint64_t addr;
        uint32_t data;
    };
    std::vector<msi> msis;

    pcie_bench(sc_core::sc_module_name n, const pcie_config& cfg,
               sc_time mem_latency = sc_time(80, SC_NS))
        : sc_module(n)
        , mem("mem", mem_latency)
        , link("link", cfg, "", ctx) {
        dev.out.bind(link.dev_dma_in);
        link.mem_out.bind(mem.dma_in);
        link.bar_out.bind(bar.in);
        cpu.out.bind(link.host_mmio_in);
        link.set_msi_handler([this](uint64_t a, uint32_t d) {
            msis.push_back({sc_core::sc_time_stamp(), a, d});
        });
    }
    // ns per byte on the wire, from the reference formula.
    double bn() const { return 1.0 / bw_tlp(link.config()); }
    double lat_ps() const { return link.config().latency_ns * 1000.0; }
    double mem_ps() const { return to_ps(mem.latency()); }
    nlohmann::json stat(const std::string& key) const {
        return ctx.stats.values()[std::string(link.name())][key];
    }
};

// Expected b_transport delay of an idle-link write of s bytes split into n TLPs, in ps.
double write_ps(const pcie_bench& b, uint64_t s, uint64_t n) {
    return static_cast<double>(s + MWR_HDR * n) * b.bn() * 1000.0;
}
// Expected idle-link read latency: MRd, link, memory, completions, link (completion-bound).
double read_ps(const pcie_bench& b, uint64_t s, uint64_t cpls) {
    return (MRD_HDR + static_cast<double>(s + CPLD_HDR * cpls)) * b.bn() * 1000.0 + 2 * b.lat_ps() +
           b.mem_ps();
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = static_cast<uint8_t>(seed + 13 * i);
    }
    return v;
}

// ---- Config formulas ---------------------------------------------------------------------

TEST(PcieConfig, RawAndTlpBandwidthFormula) {
    for (uint32_t gen : GENS) {
        for (uint32_t lanes : WIDTHS) {
            pcie_config c;
            c.gen = gen;
            c.lanes = lanes;
            EXPECT_NEAR(c.raw_gbps(), raw_gbps(gen, lanes), 1e-9) << gen << " x" << lanes;
            // Explicit AckLimit / FCUpdate are used as given.
            c.ack_limit = 300;
            c.fc_update = 250;
            EXPECT_EQ(c.effective_ack_limit(), 300u);
            EXPECT_EQ(c.effective_fc_update(), 250u);
            EXPECT_NEAR(c.tlp_bytes_per_ns(), bw_tlp(gen, lanes, 300, 250), 1e-9);
        }
    }
    // Absolute numbers: Gen3 x16 = 126.03 Gb/s raw; with 168/168 about 13.99 GB/s of TLPs.
    pcie_config c;
    EXPECT_NEAR(c.raw_gbps(), 126.0308, 1e-3);
    c.ack_limit = 168;
    c.fc_update = 168;
    EXPECT_NEAR(c.tlp_bytes_per_ns(), 15.75385 * (1 - 16.0 / 168 - 4.0 / 1538), 1e-4);
    c.gen = 1;
    c.lanes = 1;
    EXPECT_NEAR(c.raw_gbps(), 2.0, 1e-12);  // 2.5 GT/s x 8b/10b
    c.gen = 5;
    c.lanes = 16;
    EXPECT_NEAR(c.raw_gbps(), 504.123, 1e-3);
}

// The reference's two data points for the default config (MPS 256).
TEST(PcieConfig, DefaultLimitsMatchReferencePoints) {
    pcie_config c;  // gen 3, x16, MPS 256
    EXPECT_EQ(c.effective_ack_limit(), 168u);
    EXPECT_EQ(c.effective_fc_update(), 168u);
    c.lanes = 8;
    EXPECT_EQ(c.effective_ack_limit(), 203u);
    EXPECT_EQ(c.effective_fc_update(), 203u);
}

// AckLimit / FCUpdate depend on generation, width and MPS (the spec tables the reference
// cites), not on the width alone: e.g. Gen1 x16 MPS 128 sends an ACK every 48 bytes.
TEST(PcieConfig, AckAndFcLimitsFollowSpecTables) {
    int wrong = 0;
    for (uint32_t gen : GENS) {
        for (uint32_t lanes : WIDTHS) {
            for (uint32_t mps : MPSS) {
                pcie_config c;
                c.gen = gen;
                c.lanes = lanes;
                c.mps = mps;
                const uint32_t want = spec_limit(gen, lanes, mps);
                const bool limits_ok =
                    c.effective_ack_limit() == want && c.effective_fc_update() == want;
                const bool bw_ok =
                    std::fabs(c.tlp_bytes_per_ns() - bw_tlp(gen, lanes, want, want)) < 1e-9;
                if (!limits_ok || !bw_ok) {
                    if (++wrong <= 8) {
                        ADD_FAILURE()
                            << "gen" << gen << " x" << lanes << " MPS " << mps << ": AckLimit "
                            << c.effective_ack_limit() << ", FCUpdate " << c.effective_fc_update()
                            << ", spec table " << want << "; BW_tlp " << c.tlp_bytes_per_ns()
                            << " B/ns, want " << bw_tlp(gen, lanes, want, want);
                    }
                }
            }
        }
    }
    EXPECT_EQ(wrong, 0) << "combinations whose DLLP overhead is not the spec table's";
}

// rnic.pcie in a scenario: values, and errors that name the JSON path.
TEST(PcieConfig, ParsesAndRejectsOutOfRangeValues) {
    rnic::config::parse_context pc;
    const auto j = nlohmann::json::parse(R"({"gen": 4, "lanes": 8, "mps": 512, "mrrs": 1024,
        "rcb_completions": true, "max_read_tags": 32, "latency_ns": 250.5, "ecrc": true})");
    const pcie_config c = rnic::fabric::parse_pcie_config(rnic::config::reader(j, "rnic.pcie", pc));
    EXPECT_TRUE(pc.errors.empty());
    EXPECT_EQ(c.gen, 4u);
    EXPECT_EQ(c.lanes, 8u);
    EXPECT_EQ(c.mps, 512u);
    EXPECT_EQ(c.mrrs, 1024u);
    EXPECT_TRUE(c.rcb_completions);
    EXPECT_EQ(c.max_read_tags, 32u);
    EXPECT_DOUBLE_EQ(c.latency_ns, 250.5);
    EXPECT_TRUE(c.ecrc);
    EXPECT_EQ(pc.effective["rnic"]["pcie"]["ack_limit"], 0);  // defaults recorded

    rnic::config::parse_context bad;
    const auto jb = nlohmann::json::parse(
        R"({"gen": 6, "lanes": 3, "mps": 100, "mrrs": 8192, "max_read_tags": 0, "speed": 1})");
    rnic::fabric::parse_pcie_config(rnic::config::reader(jb, "rnic.pcie", bad));
    EXPECT_EQ(bad.errors.size(), 6u);
    for (const auto& e : bad.errors) {
        EXPECT_EQ(e.rfind("rnic.pcie.", 0), 0u) << e;
    }
}

// ---- Writes ------------------------------------------------------------------------------

TEST(PcieLink, WriteSplitsAtMpsAnd4KiBWithClosedFormDelay) {
    pcie_config cfg;  // MPS 256
    pcie_config cfg_ecrc = cfg;
    cfg_ecrc.ecrc = true;
    cfg_ecrc.mps = 4096;
    pcie_bench b("b", cfg);
    pcie_bench e("e", cfg_ecrc);
    struct expect_row {
        uint64_t addr;
        uint32_t size;
        uint64_t tlps;
    };
    const std::vector<expect_row> rows = {
        {0x10000, 1, 1},     {0x10000, 64, 1},    {0x10000, 256, 1},   {0x10000, 257, 2},
        {0x10000, 1000, 4},  {0x10000, 4096, 16}, {0x10000, 9000, 36}, {0x10000, 65536, 256},
        {0x10F9C, 200, 2},    // 100 B before a 4 KiB boundary: split there
        {0x10080, 256, 1},    // not MPS-aligned, does not cross 4 KiB: one TLP
        {0x10010, 600, 3},    // MPS from the start address: 256, 256, 88
        {0x10F00, 5000, 20},  // 256 to the boundary, 16 x 256, then 256, 256, 136
    };
    const std::vector<expect_row> rows_ecrc = {
        {0x20000, 4096, 1},
        {0x20800, 4096, 2},  // MPS 4096: only the 4 KiB boundary splits
        {0x20000, 9000, 3},
        {0x20000, 100, 1},
    };
    std::vector<sc_time> got;
    std::vector<uint64_t> tlps;
    std::vector<sc_time> got_e;
    std::vector<uint64_t> tlps_e;
    sc_core::sc_spawn(
        [&] {
            for (const auto& r : rows) {
                const auto data = pattern(r.size, 1);
                const uint64_t before = b.link.upstream().mwr_tlps;
                got.push_back(b.dev.write(r.addr, data.data(), r.size));
                tlps.push_back(b.link.upstream().mwr_tlps - before);
                sc_core::wait(sc_time(20, sc_core::SC_US));  // idle again
                std::vector<uint8_t> back(r.size);
                b.mem.read(r.addr, back.data(), r.size);
                EXPECT_EQ(back, data) << r.size;
            }
            for (const auto& r : rows_ecrc) {
                const auto data = pattern(r.size, 2);
                const uint64_t before = e.link.upstream().mwr_tlps;
                got_e.push_back(e.dev.write(r.addr, data.data(), r.size));
                tlps_e.push_back(e.link.upstream().mwr_tlps - before);
                sc_core::wait(sc_time(20, sc_core::SC_US));
            }
        },
        "writer");
    sc_core::sc_start();
    ASSERT_EQ(got.size(), rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(tlps[i], rows[i].tlps) << "size " << rows[i].size;
        EXPECT_NEAR(to_ps(got[i]), write_ps(b, rows[i].size, rows[i].tlps), 1.0)
            << "size " << rows[i].size;
    }
    ASSERT_EQ(got_e.size(), rows_ecrc.size());
    for (size_t i = 0; i < rows_ecrc.size(); ++i) {
        EXPECT_EQ(tlps_e[i], rows_ecrc[i].tlps) << "size " << rows_ecrc[i].size;
        const double want =
            static_cast<double>(rows_ecrc[i].size + (MWR_HDR + 4) * rows_ecrc[i].tlps) * e.bn() *
            1e3;
        EXPECT_NEAR(to_ps(got_e[i]), want, 1.0) << "ecrc size " << rows_ecrc[i].size;
    }
}

// A device streaming writes as fast as the link takes them gets BW_tlp x S / (S + 24 n).
TEST(PcieLink, WriteBandwidthEveryGenWidthMps) {
    const std::vector<uint32_t> sizes = {64, 256, 1500, 4096, 9000};
    constexpr int N = 200;
    std::vector<std::unique_ptr<pcie_bench>> benches;
    struct result {
        uint32_t gen, lanes, mps, size;
        double got, want;
    };
    std::vector<result> results;
    for (uint32_t gen : GENS) {
        for (uint32_t lanes : WIDTHS) {
            for (uint32_t mps : MPSS) {
                pcie_config c;
                c.gen = gen;
                c.lanes = lanes;
                c.mps = mps;
                benches.push_back(
                    std::make_unique<pcie_bench>(sc_core::sc_gen_unique_name("b"), c));
                pcie_bench* b = benches.back().get();
                sc_core::sc_spawn(
                    [b, &sizes, &results] {
                        const auto& c = b->link.config();
                        std::vector<uint8_t> data(9000, 0x5A);
                        for (uint32_t s : sizes) {
                            sc_time t = sc_core::SC_ZERO_TIME;  // local time of the next write
                            for (int i = 0; i < N; ++i) {
                                t = b->dev.write(static_cast<uint64_t>(i % 4) * 16384, data.data(),
                                                 s, t);
                            }
                            const double got = static_cast<double>(N) * s / (to_ps(t) / 1000.0);
                            const double want = bw_tlp(c) * s / (s + MWR_HDR * ceil_div(s, c.mps));
                            results.push_back({c.gen, c.lanes, c.mps, s, got, want});
                            sc_core::wait(t + sc_time(1, sc_core::SC_US));  // drain
                        }
                    },
                    sc_core::sc_gen_unique_name("stream"));
            }
        }
    }
    sc_core::sc_start();
    ASSERT_EQ(results.size(), benches.size() * sizes.size());
    for (const auto& r : results) {
        EXPECT_NEAR(r.got / r.want, 1.0, 0.02)
            << "gen" << r.gen << " x" << r.lanes << " MPS " << r.mps << " S " << r.size << ": "
            << r.got << " B/ns, want " << r.want;
    }
    // The data all arrived: every bench's memory saw N writes per size.
    for (const auto& b : benches) {
        EXPECT_EQ(b->mem.get_stats().dma_writes, static_cast<uint64_t>(N) * sizes.size());
    }
}

// Posted: b_transport returns when the last TLP has left; memory changes latency_ns later.
TEST(PcieLink, PostedWriteLandsOneLatencyAfterItLeaves) {
    pcie_config cfg;
    pcie_bench b("b", cfg);
    b.mem.store<uint64_t>(0x4000, 0x1111111111111111ull);
    const uint64_t v = 0x2222222222222222ull;
    sc_time sent;
    sc_core::sc_spawn([&] { sent = b.dev.write(0x4000, &v, 8); }, "writer");
    const double sent_exact = write_ps(b, 8, 1);
    const sc_time land = ps(std::ceil(sent_exact + b.lat_ps()));

    // sc_start(d) stops when time reaches now + d, before the processes due then have run;
    // the zero-time step runs them (SCC-style stepping).
    auto run_to = [](const sc_time& t) {
        sc_core::sc_start(t - sc_core::sc_time_stamp());
        if (sc_core::sc_pending_activity_at_current_time()) {
            sc_core::sc_start(sc_core::SC_ZERO_TIME);
        }
    };
    run_to(ps(std::ceil(sent_exact)));
    EXPECT_NEAR(to_ps(sent), sent_exact, 1.0);
    EXPECT_EQ(b.mem.load<uint64_t>(0x4000), 0x1111111111111111ull) << "visible when it left";
    run_to(land - ps(1));
    EXPECT_EQ(b.mem.load<uint64_t>(0x4000), 0x1111111111111111ull) << "visible 1 ps early";
    run_to(land);
    EXPECT_EQ(b.mem.load<uint64_t>(0x4000), v) << "not visible at " << land;
    EXPECT_EQ(b.mem.get_stats().dma_writes, 1u);
}

// A read does not pass a posted write: it returns the written bytes even while the write is
// still in flight, and its completion arrives after the write has landed.
// A payload write and the CQE written right after it (the receive path's data, then the CQ
// writer's entry): a host CPU polling memory (woken by every DMA write, as the driver's CQ poll
// is) sees each at its own landing time, last TLP out + latency, never earlier, and never the
// CQE without the data (PCIe posted writes do not pass each other).
TEST(PcieLink, PostedWritesLandInIssueOrderEachAtItsOwnTime) {
    pcie_bench b("b", pcie_config{});  // MPS 256
    const auto data = pattern(4096, 7);
    const uint64_t cqe[4] = {1, 2, 3, 4};
    sc_core::sc_spawn(
        [&] {
            const sc_time t = b.dev.write(0x10000, data.data(), 4096);
            b.dev.write(0x20000, cqe, sizeof(cqe), t);  // issued as the data's last TLP left
        },
        "writer");
    struct seen {
        sc_time at;
        bool data;
        bool cqe;
    };
    std::vector<seen> wakes;
    sc_core::sc_spawn(
        [&] {
            for (;;) {
                sc_core::wait(b.mem.dma_write_event());
                std::vector<uint8_t> d(4096);
                b.mem.read(0x10000, d.data(), d.size());
                wakes.push_back(
                    {sc_core::sc_time_stamp(), d == data, b.mem.load<uint64_t>(0x20000 + 24) == 4});
            }
        },
        "poller");
    sc_core::sc_start();
    const double data_sent = write_ps(b, 4096, 16);
    const double cqe_sent = std::ceil(data_sent) + write_ps(b, sizeof(cqe), 1);
    const double data_land = std::ceil(data_sent + b.lat_ps());
    const double cqe_land = std::ceil(cqe_sent + b.lat_ps());
    ASSERT_LT(data_land, cqe_land);
    ASSERT_EQ(wakes.size(), 2u);
    EXPECT_NEAR(to_ps(wakes[0].at), data_land, 1.0);
    EXPECT_TRUE(wakes[0].data);
    EXPECT_FALSE(wakes[0].cqe) << "the CQE landed with the data";
    EXPECT_NEAR(to_ps(wakes[1].at), cqe_land, 1.0);
    EXPECT_TRUE(wakes[1].data && wakes[1].cqe);
}

TEST(PcieLink, ReadAfterWriteSeesWrittenData) {
    pcie_config cfg;
    pcie_bench b("b", cfg);
    const auto old_bytes = pattern(64, 100);
    b.mem.write(0x8000 - 32, old_bytes.data(), 64);
    const auto new_bytes = pattern(32, 7);
    std::vector<uint8_t> same_time(32);
    std::vector<uint8_t> straddle(64);
    std::vector<uint8_t> second(8);
    sc_time w1;
    sc_time r1;
    sc_time r2;
    sc_core::sc_spawn(
        [&] {
            w1 = b.dev.write(0x8000, new_bytes.data(), 32);
            // Issued when the write has left, long before it lands.
            r1 = b.dev.read(0x8000, same_time.data(), 32, w1);
            r2 = b.dev.read(0x8000 - 32, straddle.data(), 64, w1);
            // Two writes to one address land in issue order; a read behind both sees the last.
            const uint64_t a = 0x1111, c = 0x2222;
            sc_time t = b.dev.write(0x9000, &a, 8);
            t = b.dev.write(0x9000, &c, 8, t);
            b.dev.read(0x9000, second.data(), 8, t);
        },
        "dev");
    sc_core::sc_start();
    EXPECT_EQ(same_time, new_bytes);
    EXPECT_TRUE(std::equal(old_bytes.begin(), old_bytes.begin() + 32, straddle.begin()));
    EXPECT_TRUE(std::equal(new_bytes.begin(), new_bytes.end(), straddle.begin() + 32));
    EXPECT_GT(to_ps(r1), to_ps(w1) + b.lat_ps()) << "completion before the write landed";
    EXPECT_GT(r2, r1);
    uint64_t last = 0;
    std::memcpy(&last, second.data(), 8);
    EXPECT_EQ(last, 0x2222u);
    EXPECT_EQ(b.mem.load<uint64_t>(0x9000), 0x2222u);
    std::vector<uint8_t> now(32);
    b.mem.read(0x8000, now.data(), 32);
    EXPECT_EQ(now, new_bytes);
}

// ---- Reads -------------------------------------------------------------------------------

// ceil(S/MRRS) MRd up, ceil(S/MPS) CplD down (64 B units with RCB completions); latency =
// request + 2 x latency + memory + completion serialization.
TEST(PcieLink, ReadSplitsAndIdleLatency) {
    pcie_config cfg;  // MPS 256, MRRS 512
    pcie_config rcb = cfg;
    rcb.rcb_completions = true;
    rcb.latency_ns = 300;
    pcie_bench b("b", cfg);
    pcie_bench r("r", rcb, sc_time(100, SC_NS));
    const std::vector<uint32_t> sizes = {4, 64, 100, 256, 512, 513, 2048, 4096};
    const auto content = pattern(4096, 9);
    b.mem.write(0x40000, content.data(), content.size());
    struct row {
        uint32_t size;
        sc_time delay;
        uint64_t mrd, cpld, down_payload;
        std::vector<uint8_t> data;
    };
    std::vector<row> rows_b;
    std::vector<row> rows_r;
    auto run = [](pcie_bench& x, const std::vector<uint32_t>& sz, std::vector<row>& out) {
        for (uint32_t s : sz) {
            row w{s, {}, 0, 0, 0, std::vector<uint8_t>(s)};
            const auto up = x.link.upstream();
            const auto down = x.link.downstream();
            w.delay = x.dev.read(0x40000, w.data.data(), s);
            w.mrd = x.link.upstream().mrd_tlps - up.mrd_tlps;
            w.cpld = x.link.downstream().cpld_tlps - down.cpld_tlps;
            w.down_payload = x.link.downstream().payload_bytes - down.payload_bytes;
            out.push_back(std::move(w));
            sc_core::wait(sc_time(50, sc_core::SC_US));
        }
    };
    sc_core::sc_spawn([&] { run(b, sizes, rows_b); }, "rd_b");
    sc_core::sc_spawn([&] { run(r, sizes, rows_r); }, "rd_r");
    sc_core::sc_start();
    ASSERT_EQ(rows_b.size(), sizes.size());
    ASSERT_EQ(rows_r.size(), sizes.size());
    for (const auto& w : rows_b) {
        EXPECT_EQ(w.mrd, ceil_div(w.size, 512)) << w.size;
        EXPECT_EQ(w.cpld, ceil_div(w.size, 256)) << w.size;
        EXPECT_EQ(w.down_payload, w.size);
        EXPECT_NEAR(to_ps(w.delay), read_ps(b, w.size, ceil_div(w.size, 256)), 1.0) << w.size;
        EXPECT_TRUE(std::equal(w.data.begin(), w.data.end(), content.begin())) << w.size;
    }
    for (const auto& w : rows_r) {
        EXPECT_EQ(w.mrd, ceil_div(w.size, 512)) << w.size;
        EXPECT_EQ(w.cpld, ceil_div(w.size, 64)) << w.size;
        EXPECT_NEAR(to_ps(w.delay), read_ps(r, w.size, ceil_div(w.size, 64)), 1.0) << w.size;
    }
    // 64 B, Gen3 x16, 120 ns each way, 80 ns DRAM: about 330 ns, the same ballpark as the
    // measured 550 ns of an NFP-6000 (which adds the device's own DMA engine).
    EXPECT_GT(to_ps(rows_b[1].delay), 320e3);
    EXPECT_LT(to_ps(rows_b[1].delay), 340e3);
}

// Completions are cut at the completer's boundaries (MPS, or the 64 B RCB), not every MPS bytes
// from the start: a 600 B read from 0x40010 (MRRS 512: requests of 512 and 88 B) comes back as
// 240 + 256 + 16 and 88 B with MPS 256, and as 48 + 7 x 64 + 16 and 48 + 40 B with the RCB.
// The second request's completions queue behind the first's: completion-bound as a whole.
TEST(PcieLink, ReadCompletionsSplitAtBoundariesFromAnUnalignedAddress) {
    pcie_config cfg;  // MPS 256, MRRS 512
    pcie_config rcb = cfg;
    rcb.rcb_completions = true;
    pcie_bench b("b", cfg);
    pcie_bench r("r", rcb);
    const auto content = pattern(1024, 3);
    b.mem.write(0x40000, content.data(), content.size());
    r.mem.write(0x40000, content.data(), content.size());
    sc_time db;
    sc_time dr;
    std::vector<uint8_t> got_b(600);
    std::vector<uint8_t> got_r(600);
    sc_core::sc_spawn([&] { db = b.dev.read(0x40010, got_b.data(), 600); }, "rd_b");
    sc_core::sc_spawn([&] { dr = r.dev.read(0x40010, got_r.data(), 600); }, "rd_r");
    sc_core::sc_start();
    EXPECT_EQ(b.link.upstream().mrd_tlps, 2u);
    EXPECT_EQ(b.link.downstream().cpld_tlps, 4u);
    EXPECT_EQ(r.link.downstream().cpld_tlps, 11u);
    EXPECT_EQ(b.link.downstream().payload_bytes, 600u);
    EXPECT_EQ(b.link.downstream().wire_bytes, 600u + 4 * CPLD_HDR);
    EXPECT_EQ(r.link.downstream().wire_bytes, 600u + 11 * CPLD_HDR);
    EXPECT_NEAR(to_ps(db), read_ps(b, 600, 4), 1.0);
    EXPECT_NEAR(to_ps(dr), read_ps(r, 600, 11), 1.0);
    EXPECT_TRUE(std::equal(got_b.begin(), got_b.end(), content.begin() + 0x10));
    EXPECT_TRUE(std::equal(got_r.begin(), got_r.end(), content.begin() + 0x10));
}

// busy_ps_at (timeseries.csv's PCIe busy fraction) counts only the part of the reserved TLPs
// that has passed: a 4 KiB read's 16 completions reserve the downstream direction back to back
// from MRd + latency + memory on, so at any instant inside that stretch the busy time is the
// time since it began, and after it the whole reservation.
TEST(PcieLink, BusyTimeCountsOnlyThePassedPartOfTheReservedTlps) {
    pcie_bench b("b", pcie_config{});  // MPS 256, MRRS 512
    b.link.track_busy(true);
    std::vector<uint8_t> data(4096);
    sc_core::sc_spawn([&] { b.dev.read(0x40000, data.data(), 4096); }, "rd");
    sc_core::sc_start();
    const double bn_ps = b.bn() * 1000.0;
    const double start = MRD_HDR * bn_ps + b.lat_ps() + b.mem_ps();  // first CplD on the link
    const double whole = (4096 + 16 * CPLD_HDR) * bn_ps;
    EXPECT_EQ(b.link.busy_ps_at(false, start - 1.0), 0u);
    for (double into : {1000.0, whole / 2, whole - 100.0}) {
        EXPECT_NEAR(static_cast<double>(b.link.busy_ps_at(false, start + into)), into, 1.0) << into;
    }
    const uint64_t all = b.link.busy_ps_at(false, start + whole + 1.0);
    EXPECT_EQ(all, b.link.downstream().busy_ps);
    EXPECT_NEAR(static_cast<double>(all), whole, 16.0);  // whole ps per TLP
}

// A device request with the streaming extension (tlm/pcie/dma_stream.h) at t = 0.
sc_time streamed(pcie_bench& b, tlm::tlm_command cmd, uint64_t addr, std::vector<uint8_t>& data,
                 rnic::fabric::dma_stream_ext& x) {
    tlm::tlm_generic_payload gp;
    gp.set_command(cmd);
    gp.set_address(addr);
    gp.set_data_ptr(data.data());
    gp.set_data_length(static_cast<unsigned>(data.size()));
    gp.set_streaming_width(static_cast<unsigned>(data.size()));
    gp.set_extension(&x);
    sc_time delay = sc_core::SC_ZERO_TIME;
    b.dev.out->b_transport(gp, delay);
    gp.clear_extension(&x);  // the caller's: not freed with gp
    EXPECT_EQ(gp.get_response_status(), tlm::TLM_OK_RESPONSE);
    return delay;
}

// Cut-through reads: each read request (MRRS 512) reports when its data is in. On an idle Gen3
// x16 link a 4 KiB read is completion-bound: request j's two 256 B CplDs follow those of the
// requests before it, so its data is in at MRd + 2 x latency + memory + (j + 1) x 2 CplDs; the
// last part is the whole read's delay.
TEST(PcieLink, StreamedReadReportsEachRequestAsItsCompletionsArrive) {
    pcie_bench b("b", pcie_config{});  // MPS 256, MRRS 512
    std::vector<uint8_t> data(4096);
    rnic::fabric::read_parts parts;
    sc_time whole;
    sc_core::sc_spawn(
        [&] {
            rnic::fabric::dma_stream_ext x;
            x.parts = &parts;
            whole = streamed(b, tlm::TLM_READ_COMMAND, 0x40000, data, x);
        },
        "rd");
    sc_core::sc_start();
    ASSERT_EQ(parts.size(), 8u);
    const double bn_ps = b.bn() * 1000.0;
    for (size_t j = 0; j < parts.size(); ++j) {
        EXPECT_EQ(parts[j].first, 512u * (j + 1)) << j;
        const double expect = MRD_HDR * bn_ps + 2 * b.lat_ps() + b.mem_ps() +
                              static_cast<double>(j + 1) * 2 * (CPLD_HDR + 256) * bn_ps;
        EXPECT_NEAR(to_ps(parts[j].second), expect, 2.0) << j;
    }
    EXPECT_EQ(parts.back().second, whole);
    EXPECT_NEAR(to_ps(whole), read_ps(b, 4096, 16), 1.0);
}

// Cut-through writes: data coming in at 100 Gb/s (80 ps per byte) is slower than Gen3 x16, so
// each 256 B TLP leaves once its last byte is in and the write ends one TLP after the last byte;
// without the extension the same write goes back to back from t = 0.
TEST(PcieLink, StreamedWriteSendsEachTlpOnceItsBytesAreIn) {
    pcie_bench b("b", pcie_config{});
    std::vector<uint8_t> data = pattern(1024, 5);
    sc_time paced;
    sc_time plain;
    sc_core::sc_spawn(
        [&] {
            rnic::fabric::dma_stream_ext x;
            x.ps_per_byte = 80;
            x.data_start = sc_core::SC_ZERO_TIME;
            paced = streamed(b, tlm::TLM_WRITE_COMMAND, 0x8000, data, x);
            sc_core::wait(sc_time(10, sc_core::SC_US));
            const sc_time t0 = sc_core::sc_time_stamp();
            plain = b.dev.write(0x9000, data.data(), 1024);
            EXPECT_EQ(sc_core::sc_time_stamp(), t0);
        },
        "wr");
    sc_core::sc_start();
    const double tlp_ps = (MWR_HDR + 256) * b.bn() * 1000.0;
    ASSERT_LT(tlp_ps, 256 * 80.0);  // the link is faster than the data
    EXPECT_NEAR(to_ps(paced), 1024 * 80.0 + tlp_ps, 2.0);
    EXPECT_NEAR(to_ps(plain), write_ps(b, 1024, 4), 1.0);
    EXPECT_EQ(b.link.upstream().mwr_tlps, 8u);
    std::vector<uint8_t> got(1024);
    b.mem.read(0x8000, got.data(), got.size());
    EXPECT_EQ(got, data);
}

// max_read_tags = 1 serializes reads: each waits for the previous completion; with enough
// tags the same reads overlap.
TEST(PcieLink, ReadTagLimitStalls) {
    pcie_config one;
    one.max_read_tags = 1;
    pcie_config two = one;
    two.max_read_tags = 2;
    pcie_config many;
    pcie_bench b1("b1", one);
    pcie_bench b2("b2", two);
    pcie_bench bm("bm", many);
    std::vector<sc_time> t1, t2, tm;
    auto issue3 = [](pcie_bench& b, std::vector<sc_time>& out) {
        std::vector<uint8_t> buf(64);
        for (int i = 0; i < 3; ++i) {
            out.push_back(b.dev.read(0x1000 * (i + 1), buf.data(), 64));  // all at t = 0
        }
    };
    sc_core::sc_spawn([&] { issue3(b1, t1); }, "r1");
    sc_core::sc_spawn([&] { issue3(b2, t2); }, "r2");
    sc_core::sc_spawn([&] { issue3(bm, tm); }, "rm");
    sc_core::sc_start();
    const double lat = read_ps(b1, 64, 1);
    ASSERT_EQ(t1.size(), 3u);
    EXPECT_NEAR(to_ps(t1[0]), lat, 1.0);
    EXPECT_NEAR(to_ps(t1[1]), 2 * lat, 2.0);
    EXPECT_NEAR(to_ps(t1[2]), 3 * lat, 3.0);
    // Stall: the 2nd request waited lat, the 3rd 2 x lat.
    EXPECT_NEAR(static_cast<double>(b1.link.tag_stall_ps()), 3 * lat, 3.0);
    EXPECT_EQ(b1.stat("tag_stall_ps").get<uint64_t>(), b1.link.tag_stall_ps());
    // Two tags: the third read takes the first read's tag.
    ASSERT_EQ(t2.size(), 3u);
    EXPECT_NEAR(to_ps(t2[2]), 2 * lat, 2.0);
    EXPECT_LT(t2[1], t1[1]);
    // 64 tags: the requests go back to back; completions queue behind each other.
    ASSERT_EQ(tm.size(), 3u);
    const double cpl = (CPLD_HDR + 64) * bm.bn() * 1000.0;
    EXPECT_NEAR(to_ps(tm[1]), lat + cpl, 2.0);
    EXPECT_NEAR(to_ps(tm[2]), lat + 2 * cpl, 2.0);
    EXPECT_EQ(bm.link.tag_stall_ps(), 0u);
}

// With tags to cover the round trip, a long stream of reads is completion-bound:
// BW_tlp x S / (S + 20 ceil(S/MPS)).
TEST(PcieLink, ReadBandwidthEveryGenWidthMps) {
    const std::vector<uint32_t> sizes = {64, 256, 1024, 4096};
    constexpr int N = 1000;
    std::vector<std::unique_ptr<pcie_bench>> benches;
    struct result {
        uint32_t gen, lanes, mps, mrrs, size;
        double got, want;
    };
    std::vector<result> results;
    for (uint32_t gen : GENS) {
        for (uint32_t lanes : WIDTHS) {
            for (uint32_t mps : MPSS) {
                for (uint32_t mrrs : {512u, 4096u}) {
                    pcie_config c;
                    c.gen = gen;
                    c.lanes = lanes;
                    c.mps = mps;
                    c.mrrs = mrrs;
                    c.max_read_tags = 512;
                    benches.push_back(
                        std::make_unique<pcie_bench>(sc_core::sc_gen_unique_name("b"), c));
                    pcie_bench* b = benches.back().get();
                    sc_core::sc_spawn(
                        [b, &sizes, &results] {
                            const auto& c = b->link.config();
                            std::vector<uint8_t> buf(4096);
                            for (uint32_t s : sizes) {
                                // All requests queued at once; steady state measured over the
                                // second half of the arrivals (no start-up latency in it).
                                std::vector<sc_time> arrival(N);
                                for (int i = 0; i < N; ++i) {
                                    arrival[i] =
                                        b->dev.read(static_cast<uint64_t>(i) * 4096, buf.data(), s);
                                }
                                const double span_ns =
                                    to_ps(arrival[N - 1] - arrival[N / 2]) / 1000.0;
                                const double got = static_cast<double>(N - 1 - N / 2) * s / span_ns;
                                // A completion never spans two requests: with MRRS < MPS the
                                // completions are MRRS-sized (MRRS >= MPS: the reference formula).
                                const uint32_t unit = std::min(c.mps, c.mrrs);
                                const double want =
                                    bw_tlp(c) * s / (s + CPLD_HDR * ceil_div(s, unit));
                                results.push_back({c.gen, c.lanes, c.mps, c.mrrs, s, got, want});
                                sc_core::wait(arrival[N - 1] + sc_time(1, sc_core::SC_US));
                            }
                        },
                        sc_core::sc_gen_unique_name("stream"));
                }
            }
        }
    }
    sc_core::sc_start();
    ASSERT_EQ(results.size(), benches.size() * sizes.size());
    for (const auto& r : results) {
        EXPECT_NEAR(r.got / r.want, 1.0, 0.02)
            << "gen" << r.gen << " x" << r.lanes << " MPS " << r.mps << " MRRS " << r.mrrs << " S "
            << r.size << ": " << r.got << " B/ns, want " << r.want;
    }
}

// ---- MMIO, MSI, stats --------------------------------------------------------------------

TEST(PcieLink, MmioReachesTheBarAfterSerializationAndLatency) {
    pcie_config cfg;
    pcie_bench b("b", cfg);
    sc_time rd_delay;
    std::vector<uint8_t> rd(8);
    sc_core::sc_spawn(
        [&] {
            const uint64_t db = 0x0000'0005'0000'0003ull;
            b.cpu.write(0x100, &db, 8);  // posted doorbell at t = 0
            const uint32_t cmd = 7;
            b.cpu.write(0x10, &cmd, 4);  // right behind it
            sc_core::wait(sc_time(10, sc_core::SC_US));
            rd_delay = b.cpu.read(0x30, rd.data(), 8);  // non-posted: CPU stalls
        },
        "cpu_thread");
    sc_core::sc_start();
    ASSERT_EQ(b.bar.log.size(), 3u);
    const double w1 = (MWR_HDR + 8) * b.bn() * 1000.0;
    const double w2 = w1 + (MWR_HDR + 4) * b.bn() * 1000.0;
    EXPECT_TRUE(b.bar.log[0].write);
    EXPECT_EQ(b.bar.log[0].addr, 0x100u);
    EXPECT_EQ(b.bar.log[0].data.size(), 8u);
    EXPECT_EQ(b.bar.log[0].data[4], 5);
    EXPECT_NEAR(to_ps(b.bar.log[0].at), w1 + b.lat_ps(), 1.0);
    EXPECT_EQ(b.bar.log[1].addr, 0x10u);
    EXPECT_NEAR(to_ps(b.bar.log[1].at), w2 + b.lat_ps(), 1.0);
    // Read: MRd down, BAR read delay, CplD up.
    EXPECT_FALSE(b.bar.log[2].write);
    const double want = (MRD_HDR + CPLD_HDR + 8) * b.bn() * 1000.0 + 2 * b.lat_ps() + 8000.0;
    EXPECT_NEAR(to_ps(rd_delay), want, 2.0);
    EXPECT_EQ(rd[0], 0xA0);
    EXPECT_EQ(rd[7], 0xA7);
    EXPECT_EQ(b.link.downstream().mwr_tlps, 2u);
    EXPECT_EQ(b.link.downstream().mrd_tlps, 1u);
    EXPECT_EQ(b.link.upstream().cpld_tlps, 1u);
    EXPECT_EQ(b.mem.pages_touched(), 0u);  // MMIO never touches host memory
}

// A non-posted MMIO read must not pass the posted MMIO writes ahead of it (PCIe ordering):
// the driver's "write the CSR, read it back" sees the new value, and the read reaches the BAR
// one request serialization + latency after it was issued, behind the write.
TEST(PcieLink, MmioReadDoesNotPassPostedWrite) {
    pcie_config cfg;
    pcie_bench b("b", cfg);
    uint64_t back = 0;
    sc_time rd_delay;
    b.bar.regs[0x0] = std::vector<uint8_t>(8, 0x11);  // the CSR's old value
    sc_core::sc_spawn(
        [&] {
            const uint64_t v = 0x0000'0001'2345'6000ull;
            b.cpu.write(0x0, &v, 8);               // posted, at t = 0
            rd_delay = b.cpu.read(0x0, &back, 8);  // read-back, issued right after
        },
        "cpu_thread");
    sc_core::sc_start();
    EXPECT_EQ(back, 0x0000'0001'2345'6000ull) << "the read returned the CSR's old value";
    ASSERT_EQ(b.bar.log.size(), 2u);
    EXPECT_TRUE(b.bar.log[0].write) << "the read reached the BAR before the write";
    const double w_end = (MWR_HDR + 8) * b.bn() * 1000.0;
    const double r_end = w_end + MRD_HDR * b.bn() * 1000.0;  // the MRd follows the MWr down
    EXPECT_NEAR(to_ps(b.bar.log[0].at), w_end + b.lat_ps(), 1.0);
    if (b.bar.log.size() == 2) {
        EXPECT_NEAR(to_ps(b.bar.log[1].at), r_end + b.lat_ps(), 1.0) << "read arrival at the BAR";
    }
    const double want = r_end + 2 * b.lat_ps() + 8000.0 + (CPLD_HDR + 8) * b.bn() * 1000.0;
    EXPECT_NEAR(to_ps(rd_delay), want, 2.0);
}

TEST(PcieLink, MsiWritesGoToTheHandlerNotMemory) {
    pcie_config cfg;
    pcie_bench b("b", cfg);
    sc_time sent;
    uint64_t cqe_seen_by_handler = 0;
    sc_core::sc_spawn(
        [&] {
            const uint32_t data = 0x41;
            sent = b.dev.write(pcie_link::MSI_BASE + 0x1000, &data, 4);
            const uint64_t plain = 7;
            b.dev.write(0x2000, &plain, 8, sent);  // an ordinary write right behind it
            sc_core::wait(sc_time(1, sc_core::SC_US));
            // A CQE then its interrupt: the handler must find the CQE in memory.
            const uint64_t cqe = 0xC0E;
            const sc_time t = b.dev.write(0x3000, &cqe, 8);
            const uint32_t v = 0x42;
            b.dev.write(pcie_link::MSI_BASE + 0x1000, &v, 4, t);
        },
        "dev_thread");
    b.link.set_msi_handler([&](uint64_t a, uint32_t d) {
        b.msis.push_back({sc_core::sc_time_stamp(), a, d});
        if (d == 0x42) {
            cqe_seen_by_handler = b.mem.load<uint64_t>(0x3000);
        }
    });
    sc_core::sc_start();
    ASSERT_EQ(b.msis.size(), 2u);
    EXPECT_EQ(cqe_seen_by_handler, 0xC0Eu) << "interrupt overtook the CQE write";
    EXPECT_EQ(b.msis[0].addr, pcie_link::MSI_BASE + 0x1000);
    EXPECT_EQ(b.msis[0].data, 0x41u);
    EXPECT_NEAR(to_ps(b.msis[0].at), write_ps(b, 4, 1) + b.lat_ps(), 1.0);
    EXPECT_EQ(b.mem.load<uint32_t>(pcie_link::MSI_BASE + 0x1000), 0u);
    EXPECT_EQ(b.mem.get_stats().dma_writes, 2u);  // only the ordinary writes
    EXPECT_EQ(b.mem.load<uint64_t>(0x2000), 7u);
    EXPECT_EQ(b.link.upstream().mwr_tlps, 4u);
    EXPECT_EQ(b.stat("msi_writes").get<uint64_t>(), 2u);
}

// Device reads through the link are DMA reads of host memory and show in its stats, like
// device writes do.
TEST(PcieLink, DeviceReadsCountInHostMemoryStats) {
    pcie_config cfg;
    pcie_bench b("b", cfg);
    sc_core::sc_spawn(
        [&] {
            std::vector<uint8_t> buf(1024);
            b.dev.read(0x3000, buf.data(), 1024);
            b.dev.read(0x5000, buf.data(), 64);
            b.dev.write(0x6000, buf.data(), 100);
        },
        "dev_thread");
    sc_core::sc_start();
    EXPECT_EQ(b.mem.get_stats().dma_writes, 1u);
    EXPECT_EQ(b.mem.get_stats().dma_write_bytes, 100u);
    EXPECT_EQ(b.mem.get_stats().dma_reads, 2u);
    EXPECT_EQ(b.mem.get_stats().dma_read_bytes, 1088u);
}

TEST(PcieLink, StatsCounters) {
    pcie_config cfg;  // MPS 256, MRRS 512
    pcie_bench b("b", cfg);
    sc_core::sc_spawn(
        [&] {
            std::vector<uint8_t> buf(1024, 1);
            sc_time t = b.dev.write(0x1000, buf.data(), 300);  // 2 MWr
            t = b.dev.write(0x2000, buf.data(), 64, t);        // 1 MWr
            t = b.dev.read(0x3000, buf.data(), 1024, t);       // 2 MRd, 4 CplD
            const uint32_t msi = 1;
            b.dev.write(pcie_link::MSI_BASE, &msi, 4, t);  // 1 MWr
            b.cpu.write(0x100, buf.data(), 8);             // 1 MWr down
            sc_core::wait(sc_time(1, sc_core::SC_US));
            b.cpu.read(0x30, buf.data(), 8);  // 1 MRd down, 1 CplD up
        },
        "traffic");
    sc_core::sc_start();
    const auto& up = b.link.upstream();
    const auto& down = b.link.downstream();
    EXPECT_EQ(up.mwr_tlps, 4u);
    EXPECT_EQ(up.mrd_tlps, 2u);
    EXPECT_EQ(up.cpld_tlps, 1u);
    EXPECT_EQ(up.payload_bytes, 300u + 64u + 4u + 8u);  // incl. the MMIO read completion
    EXPECT_EQ(up.wire_bytes, 368u + 4 * MWR_HDR + 2 * MRD_HDR + CPLD_HDR + 8);
    EXPECT_EQ(down.mwr_tlps, 1u);
    EXPECT_EQ(down.mrd_tlps, 1u);
    EXPECT_EQ(down.cpld_tlps, 4u);
    EXPECT_EQ(down.payload_bytes, 1024u + 8u);
    EXPECT_EQ(down.wire_bytes, 1024u + 4 * CPLD_HDR + 8 + MWR_HDR + MRD_HDR);
    EXPECT_NEAR(static_cast<double>(up.busy_ps), up.wire_bytes * b.bn() * 1000.0, 10.0);
    EXPECT_NEAR(static_cast<double>(down.busy_ps), down.wire_bytes * b.bn() * 1000.0, 10.0);
    // The registry mirrors the counters under the link's name.
    EXPECT_EQ(b.stat("up_mwr_tlps").get<uint64_t>(), up.mwr_tlps);
    EXPECT_EQ(b.stat("up_mrd_tlps").get<uint64_t>(), up.mrd_tlps);
    EXPECT_EQ(b.stat("up_wire_bytes").get<uint64_t>(), up.wire_bytes);
    EXPECT_EQ(b.stat("down_cpld_tlps").get<uint64_t>(), down.cpld_tlps);
    EXPECT_EQ(b.stat("down_payload_bytes").get<uint64_t>(), down.payload_bytes);
    EXPECT_EQ(b.stat("down_busy_ps").get<uint64_t>(), down.busy_ps);
    EXPECT_EQ(b.stat("msi_writes").get<uint64_t>(), 1u);
    EXPECT_EQ(b.stat("tag_stall_ps").get<uint64_t>(), 0u);
}

}  // namespace
