// SPDX-License-Identifier: Apache-2.0
// The control-path bench the command processor, CQ writer and doorbell tests share: host memory,
// PCIe link, DMA engine, doorbell, CQ writer and command processor on one context store, driven
// by a fake driver thread that does MMIO through the link. Each test builds one `bench` in its own
// process (one SystemC kernel per test).
#pragma once

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <gtest/gtest.h>

#include "hw/cmd_processor/cmd_processor.h"
#include "hw/context/limits.h"
#include "hw/context_cache/context_cache.h"
#include "hw/cq_writer/cq_writer.h"
#include "hw/dma_engine/dma_engine.h"
#include "hw/doorbell/doorbell.h"
#include "tlm/host_memory/host_memory.h"
#include "tlm/pcie/pcie_link.h"

namespace rnic::testbench::control_bench {

using namespace rnic;
using namespace rnic::hw;
using sc_core::SC_NS;
using sc_core::SC_PS;
using sc_core::sc_time;
using sc_core::sc_time_stamp;

// ---------------------------------------------------------------------------------------------
// Bench: host memory + PCIe link + DMA engine + doorbell + CQ writer + command processor on one
// context store, and a fake driver that does MMIO through the link.
// ---------------------------------------------------------------------------------------------
constexpr double CLOCK_MHZ = 500.0;  // 2 ns cycle
constexpr uint64_t CMDQ_BASE = 0x10000;
constexpr uint32_t CMDQ_LOG = 4;
constexpr uint64_t EQ_BASE = 0x20000;
constexpr uint32_t EQ_LOG = 4;
constexpr uint64_t MSI_ADDR = fabric::pcie_link::MSI_BASE;

struct msi_record {
    sc_time at;
    uint64_t addr;
    uint32_t data;
};

class fake_driver : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<fake_driver> mmio{"mmio"};
    std::function<void()> body;  // the driver (an SC_THREAD)
    std::function<void()> aux;   // a second thread, e.g. a stand-in for WQE fetch
    bool finished = false;

    explicit fake_driver(sc_core::sc_module_name n)
        : sc_module(n) {
        SC_HAS_PROCESS(fake_driver);
        SC_THREAD(run);
        SC_THREAD(run_aux);
    }
    // Posted MMIO write: returns at once, arrives at the NIC after the link latency.
    void write(uint64_t offset, const void* data, unsigned len) {
        std::vector<uint8_t> buf(static_cast<const uint8_t*>(data),
                                 static_cast<const uint8_t*>(data) + len);
        tlm::tlm_generic_payload gp;
        gp.set_command(tlm::TLM_WRITE_COMMAND);
        gp.set_address(offset);
        gp.set_data_ptr(buf.data());
        gp.set_data_length(len);
        gp.set_streaming_width(len);
        sc_time d = sc_core::SC_ZERO_TIME;
        mmio->b_transport(gp, d);
    }
    void write64(uint64_t offset, uint64_t v) { write(offset, &v, 8); }
    void write32(uint64_t offset, uint32_t v) { write(offset, &v, 4); }
    // Non-posted read: the CPU stalls for the round trip.
    uint64_t read(uint64_t offset, unsigned len) {
        uint8_t buf[16] = {};
        tlm::tlm_generic_payload gp;
        gp.set_command(tlm::TLM_READ_COMMAND);
        gp.set_address(offset);
        gp.set_data_ptr(buf);
        gp.set_data_length(len);
        gp.set_streaming_width(len);
        sc_time d = sc_core::SC_ZERO_TIME;
        mmio->b_transport(gp, d);
        sc_core::wait(d);
        uint64_t v = 0;
        std::memcpy(&v, buf, std::min(len, 8u));
        return v;
    }

private:
    void run() {
        if (body) {
            body();
        }
        finished = true;
    }
    void run_aux() {
        if (aux) {
            aux();
        }
    }
};

struct bench_config {
    doorbell_config db;
    cq_writer_config cqw;
    cmd_processor_config cmd;
    dma_engine_config dma;
    nic_limits limits;
    std::string vcd_path;
};

inline sim_context make_ctx(const bench_config& c) {
    sim_context ctx;
    if (!c.vcd_path.empty()) {
        ctx.vcd = sc_core::sc_create_vcd_trace_file(c.vcd_path.c_str());
    }
    return ctx;
}

struct bench {
    bench_config cfg;
    sim_context ctx;
    clock_domain clk;
    nic_limits limits;
    context_store contexts;
    fabric::host_memory mem;
    fabric::pcie_link link;
    dma_engine dma;
    doorbell db;
    cq_writer cqw;
    cmd_processor cmdp;
    fake_driver drv;
    std::vector<msi_record> msis;
    uint32_t cmd_producer = 0;

    explicit bench(const bench_config& c = {})
        : cfg(c)
        , ctx(make_ctx(c))
        , clk("nic", CLOCK_MHZ)
        , limits(c.limits)
        , contexts(limits.max_qps, limits.max_cqs, limits.max_srqs, limits.max_pds, limits.max_keys,
                   limits.max_mtt_pages)
        , mem("mem", sc_time(80, SC_NS))
        , link("link", fabric::pcie_config{}, "", ctx)
        , dma("dma", c.dma, clk, ctx)
        , db("db", c.db, clk, contexts, ctx)
        , cqw("cqw", c.cqw, clk, contexts, dma, db.registers(), ctx)
        , cmdp("cmdp", c.cmd, clk, contexts, dma, limits, db, cqw, ctx)
        , drv("drv") {
        db.bind_cq_writer(&cqw);
        drv.mmio.bind(link.host_mmio_in);
        link.bar_out.bind(db.mmio_in);
        link.mem_out.bind(mem.dma_in);
        dma.dma_out.bind(link.dev_dma_in);
        link.set_msi_handler([this](uint64_t a, uint32_t d) {
            msis.push_back({sc_time_stamp(), a, d});
        });
    }

    // --- timing helpers (the PCIe model's closed form, for exact expectations) ---
    double wire_ps(uint32_t bytes) const { return bytes * link.byte_ns() * 1000.0; }
    double lat_ps() const { return link.config().latency_ns * 1000.0; }
    static double ps(const sc_time& t) { return t.to_seconds() * 1e12; }
    static sc_time ceil_ps(double p) { return sc_time(std::ceil(p), SC_PS); }
    sc_time edge(const sc_time& t) const { return clk.edge_at_or_after(t); }
    // Arrival at the NIC of an MMIO write of `len` bytes issued now on an idle link.
    sc_time mmio_arrival(const sc_time& t, unsigned len) const {
        return ceil_ps(ps(t) + wire_ps(24 + len) + lat_ps());
    }

    // --- driver helpers (call from the driver thread) ---
    void settle() { sc_core::wait(sc_time(2, sc_core::SC_US)); }
    void setup_queues() {
        drv.write64(hsi::REG_CMDQ_BASE, CMDQ_BASE);
        drv.write64(hsi::REG_CMDQ_LOG_SIZE, CMDQ_LOG);
        drv.write64(hsi::REG_EQ_BASE, EQ_BASE);
        drv.write64(hsi::REG_EQ_LOG_SIZE, EQ_LOG);
        for (uint32_t v = 0; v < 8; ++v) {
            set_msix(v, MSI_ADDR + 4 * v, 0x100 + v, 0);
        }
        settle();
    }
    void set_msix(uint32_t v, uint64_t addr, uint32_t data, uint32_t control) {
        const uint32_t e[4] = {static_cast<uint32_t>(addr), static_cast<uint32_t>(addr >> 32), data,
                               control};
        drv.write(hsi::REG_MSIX_TABLE + 16 * v, e, 16);
    }
    static uint64_t sq_db(uint32_t qpn, uint32_t pi) {
        return qpn | (static_cast<uint64_t>(pi & 0xffff) << 32);
    }
    qp_context& make_qp(uint32_t qpn, uint8_t state) {
        qp_context* q = contexts.qp_slot(qpn);
        *q = qp_context{};
        q->valid = true;
        q->state = state;
        return *q;
    }
};

// Runs the bench until nothing is left to do and checks the driver thread got to its end.
inline void run(bench& b) {
    sc_core::sc_start();
    EXPECT_TRUE(b.drv.finished) << "driver thread did not finish (waiting for something)";
}

}  // namespace rnic::testbench::control_bench
