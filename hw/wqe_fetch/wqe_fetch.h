// SPDX-License-Identifier: Apache-2.0
// WQE fetch: reads WQEs of scheduled send queues from host memory by DMA, in batches, and
// hands them on parsed to the transmit engine.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>

#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
#include "hw/common/config_reader.h"
#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/context_cache/context_cache.h"
#include "hw/dma_engine/dma_engine.h"
#include "hw/doorbell/doorbell.h"
#include "hw/hsi/hsi.h"

namespace rnic::hw {

struct wqe_fetch_config {
    uint32_t batch = 8;         // WQEs read per DMA (contiguous slots)
    uint32_t parse_cycles = 1;  // per WQE basic block
    uint32_t fifo_depth = 32;   // WQEs queued towards the transmit engine
    // Ring reads in flight for the whole NIC (each also takes PCIe read tags, pcie.max_read_tags):
    // while one is in flight the unit takes the next scheduled QP and issues its read.
    uint32_t max_outstanding = 1;
};
wqe_fetch_config parse_wqe_fetch_config(config::reader r);

// A WQE as the transmit engine sees it.
struct wqe_item {
    uint32_t qpn = 0;
    hsi::wqe_ctrl ctrl{};
    std::vector<hsi::wqe_sge> sges;
    std::vector<uint8_t> inline_data;
    std::vector<uint8_t> segment;    // FAST_REG / BIND segment (64 B)
    bool malformed = false;          // bad size/opcode: completes with LOCAL_QP_OP_ERR
    uint64_t flow_id = 0;            // unique per WQE (node, qpn, index)
    sc_core::sc_time doorbell_time;  // when the doorbell arrived (for the timeline)
};

class wqe_fetch : public sc_core::sc_module {
public:
    wqe_fetch(sc_core::sc_module_name name, const wqe_fetch_config& cfg, const clock_domain& clk,
              context_store& contexts, dma_engine& dma, doorbell& db, uint32_t node_id,
              sim_context& ctx);

    channel<wqe_item>& out() { return m_out; }

    // QP context reads/updates go through this cache when set (else on-chip hits).
    void set_context_cache(context_cache* cache) { m_cache = cache; }

    struct stats {
        uint64_t wqes = 0;
        uint64_t dma_reads = 0;
        uint64_t pushed = 0;  // WQEs taken from a doorbell push (no DMA read)
        uint64_t malformed = 0;
        uint64_t max_in_flight = 0;     // most ring reads in flight at once
        uint64_t outstanding_full = 0;  // a scheduled QP waited: max_outstanding reads in flight
        // Slot time: each read's issue to its last WQE parsed, over max_outstanding (with 1:
        // the time a read was in flight or its WQEs were parsed).
        uint64_t busy_ps = 0;
        uint64_t stall_ps = 0;  // time blocked on the transmit engine (output FIFO full)
    };
    const stats& get_stats() const { return m_stats; }
    // busy_ps with the reads in flight counted up to `now` (stats.json: the end of the run;
    // timeseries.csv: a boundary it has simulated up to).
    uint64_t busy_ps_at(const sc_core::sc_time& now) const;

private:
    // One ring read: up to `batch` WQEs of a QP, in flight until `done`, parsed in issue order.
    struct batch {
        uint32_t qpn = 0;
        uint32_t n = 0;
        uint32_t next = 0;  // WQEs of it parsed so far
        uint32_t stride = 0;
        sc_core::sc_time done;
        sc_core::sc_time doorbell_time;  // also when the read was issued
        std::vector<uint8_t> bytes;
    };
    void fetch_thread();
    // Takes a scheduled QP and issues its read into the next free batch (none: nothing to do).
    void issue(uint32_t qpn);

    wqe_item parse(uint32_t qpn, const uint8_t* slot, uint32_t stride);

    wqe_fetch_config m_cfg;
    const clock_domain& m_clk;
    context_store& m_contexts;
    dma_engine& m_dma;
    doorbell& m_doorbell;
    uint32_t m_node_id;
    sim_context& m_ctx;
    channel<wqe_item> m_out;
    stats m_stats;
    context_cache* m_cache = nullptr;
    std::vector<batch> m_batches;   // ring of max_outstanding reads in flight, oldest at m_head
    std::vector<uint8_t> m_pushed;  // a WQE taken from the doorbell's push buffers
    uint32_t m_head = 0;
    uint32_t m_count = 0;
};

}  // namespace rnic::hw
