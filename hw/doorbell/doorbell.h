// SPDX-License-Identifier: Apache-2.0
// Doorbell and QP scheduler: BAR0 target. Decodes register and doorbell writes (hw/hsi/hsi.h),
// keeps the CSRs and the MSI-X table, and schedules send queues with work round-robin to WQE
// fetch.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
#include "hw/common/config_reader.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/hsi/hsi.h"

namespace rnic::hw {

class cq_writer;
class gsi;
class netdma;

struct doorbell_config {
    uint32_t decode_cycles = 2;      // BAR write to doorbell visible: +2 cycles (0..1000)
    uint32_t ready_fifo_depth = 64;  // QPs waiting for WQE fetch (1..65536)
    uint32_t push_buffers = 16;      // WQE-push (BlueFlame) blocks held until fetched (1..4096)
};
doorbell_config parse_doorbell_config(config::reader r);

// CSRs other blocks read.
struct bar_registers {
    uint64_t cmdq_base = 0;
    uint32_t cmdq_log_size = 0;
    uint64_t eq_base = 0;
    uint32_t eq_log_size = 0;
    uint64_t icm_base = 0;
    uint64_t icm_size = 0;
    struct msix_entry {
        uint64_t addr = 0;
        uint32_t data = 0;
        uint32_t control = 1;  // bit 0 = masked (PCI reset value)
    };
    std::array<msix_entry, hsi::MSIX_VECTORS> msix{};
};

// Timing: a BAR access is decoded when it arrives (the PCIe model calls b_transport at the
// arrival time of a posted write). Register and context updates (producer indices, CSRs, MSI-X
// table) take effect at once; an SQ doorbell reaches the scheduler decode_cycles after the
// clock edge at or after its arrival, and the scheduler hands at most one QP per cycle to WQE
// fetch. A read completes decode_cycles after the edge at or after its arrival.
class doorbell : public sc_core::sc_module {
public:
    tlm_utils::simple_target_socket<doorbell> mmio_in{"mmio_in"};  // BAR0 from PCIe

    // REG_DEVICE_ID: bits 0..15 device 0x1017, bits 16..31 vendor 0x15b3, bits 32..47 model
    // revision 1 (rnicsim).
    static constexpr uint64_t DEVICE_ID_VALUE = 0x0000'0001'15b3'1017ull;

    doorbell(sc_core::sc_module_name name, const doorbell_config& cfg, const clock_domain& clk,
             context_store& contexts, sim_context& ctx);

    void bind_cq_writer(cq_writer* cqw) { m_cq_writer = cqw; }
    // NetDMA copy channels: BAR0 accesses in hsi::REG_NETDMA_BASE's window go to `n`.
    void bind_netdma(netdma* n) { m_netdma = n; }
    // GSI (QP1) MAD rings: BAR0 accesses in hsi::REG_GSI_BASE's window go to `g`.
    void bind_gsi(gsi* g) { m_gsi = g; }

    const bar_registers& registers() const { return m_regs; }
    // QPNs whose SQ has WQEs not yet fetched, in round-robin order (to WQE fetch).
    channel<uint32_t>& sq_ready() { return m_sq_ready; }
    // Command doorbells (new producer index), to the command processor. When the channel is
    // full a doorbell is not queued (coalesced): the latest index is always cmd_producer().
    channel<uint32_t>& cmd_doorbells() { return m_cmd_doorbells; }
    // The last command producer index the driver wrote.
    uint32_t cmd_producer() const { return m_cmd_producer; }
    // WQE fetch calls this after fetching: re-queues the QP if it still has work. WQE fetch must
    // call it once for every QPN it takes from sq_ready (also when it fetched nothing, e.g. the
    // QP was destroyed): that clears the "scheduled" mark which prevents duplicates.
    void reschedule(uint32_t qpn);
    // Schedules the QP if it has unfetched WQEs, may send (RTS) or flush (ERROR), and is not
    // already scheduled. The command processor calls this when a QP enters RTS or ERROR.
    void kick(uint32_t qpn);
    // WQE-push payloads (BlueFlame): the first 64-256 B of the WQE (as the driver's
    // write-combined store carried them), taken by WQE fetch before reading. `index` is the SQ
    // producer index of the WQE (compared modulo 2^16 with wqe_index). Taking index i also
    // discards older pushed blocks of the same QP.
    bool take_pushed_wqe(uint32_t qpn, uint32_t index, std::vector<uint8_t>& out);
    // Same-instant order (README "Timing"), for WQE fetch: true while the scheduler takes a QP
    // at this instant and has not yet done so (decided_event() fires when it has); and the SQ
    // producer index WQE fetch reads now, which leaves out an SQ doorbell arriving at this very
    // instant (it schedules the QP again as that doorbell would have).
    bool hands_on_now() const;
    const sc_core::sc_event& decided_event() const { return m_decided; }
    uint32_t sq_producer_now(uint32_t qpn, const qp_context& qp) const {
        return m_sq_rung_at[qpn] == sc_core::sc_time_stamp() ? m_sq_producer_before[qpn]
                                                             : qp.sq_producer;
    }
    // RQ doorbell of a QP in ERROR: `fn(qpn, at)` asks the receive path to fetch the new
    // receive WQEs and complete them with a flush error, from `at` (the doorbell decoded).
    void set_rq_flush_listener(std::function<void(uint32_t, const sc_core::sc_time&)> fn) {
        m_rq_flush = std::move(fn);
    }
    // The command processor moved `qpn` to RESET or destroyed it: WQE-push blocks held for it
    // belong to the old queue and are dropped (a re-created QP starts at index 0 again).
    void reset_qp(uint32_t qpn);
    // What a read of REG_ICM_SIZE returns: the bytes of host memory the context tables need
    // (the top computes it from the limits and the context cache config). 0 = none needed.
    void set_icm_bytes_needed(uint64_t bytes) { m_icm_bytes_needed = bytes; }

    struct stats {
        uint64_t sq_doorbells = 0;
        uint64_t rq_doorbells = 0;
        uint64_t cq_doorbells = 0;
        uint64_t cmd_doorbells = 0;
        uint64_t wqe_pushes = 0;
        uint64_t wqe_push_bytes = 0;
        uint64_t bad_doorbells = 0;  // unknown QP / register: dropped
        uint64_t eq_doorbells = 0;   // REG_EQ_CONSUMER writes
        uint64_t csr_writes = 0;     // CMDQ/EQ/ICM configuration registers
        uint64_t msix_writes = 0;    // MSI-X table writes
        uint64_t mmio_reads = 0;
        uint64_t bad_reads = 0;          // reads of unknown offsets (return 0)
        uint64_t cmd_coalesced = 0;      // command doorbells not queued (channel full)
        uint64_t push_overflows = 0;     // pushed blocks dropped (buffer full; fetch reads by DMA)
        uint64_t pushed_taken = 0;       // pushed blocks used by WQE fetch
        uint64_t scheduled = 0;          // QPs handed to WQE fetch
        uint64_t stale_skipped = 0;      // pending QPs dropped at dispatch (destroyed / no work)
        uint64_t rq_flush_requests = 0;  // RQ doorbells of QPs in ERROR (receives to flush)
    };
    const stats& get_stats() const { return m_stats; }

private:
    // One BAR0 register: natural width, and the handlers (nullptr = not readable/writable).
    struct reg_desc {
        uint64_t offset;
        uint32_t size;  // 4 or 8
        bool halves;    // a 64-bit CSR written as two 32-bit halves
        uint64_t (doorbell::*read)() const;
        void (doorbell::*write)(uint64_t value);
        uint64_t (doorbell::*held)() const;  // value a half write merges with (nullptr: read)
    };
    struct pending_qp {
        uint32_t qpn;
        sc_core::sc_time ready;   // first edge the scheduler may dispatch it
        sc_core::sc_time rung;    // BAR arrival of the doorbell that queued it (timeline)
        bool from_doorbell;       // false: rescheduled after a fetch batch, or kicked
        sc_core::sc_time queued;  // when it entered m_pending (same-instant order)
    };

    void mmio_b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    void handle_write(uint64_t offset, const uint8_t* data, unsigned len);
    bool handle_read(uint64_t offset, uint8_t* data, unsigned len);
    bool msix_write(uint64_t offset, const uint8_t* data, unsigned len);
    bool msix_read(uint64_t offset, uint8_t* data, unsigned len) const;
    const reg_desc* find_reg(uint64_t offset) const;
    void scheduler_thread();  // moves QPs with work into sq_ready, one per cycle
    void sq_doorbell(uint64_t value);
    void try_schedule(uint32_t qpn, const sc_core::sc_time& ready, bool from_doorbell = false,
                      const sc_core::sc_time& rung = sc_core::SC_ZERO_TIME);
    void set_pending_trace();

    // Register handlers (the table in doorbell.cpp).
    uint64_t rd_cmdq_base() const { return m_regs.cmdq_base; }
    uint64_t rd_cmdq_log_size() const { return m_regs.cmdq_log_size; }
    uint64_t rd_cmdq_doorbell() const { return m_cmd_producer; }
    uint64_t rd_eq_base() const { return m_regs.eq_base; }
    uint64_t rd_eq_log_size() const { return m_regs.eq_log_size; }
    uint64_t rd_eq_consumer() const { return m_eq_consumer; }
    uint64_t rd_device_id() const { return DEVICE_ID_VALUE; }
    uint64_t rd_icm_base() const { return m_regs.icm_base; }
    uint64_t rd_icm_size() const { return m_icm_bytes_needed; }
    uint64_t held_icm_size() const { return m_regs.icm_size; }
    void wr_cmdq_base(uint64_t v);
    void wr_cmdq_log_size(uint64_t v);
    void wr_cmdq_doorbell(uint64_t v);
    void wr_eq_base(uint64_t v);
    void wr_eq_log_size(uint64_t v);
    void wr_eq_consumer(uint64_t v);
    void wr_icm_base(uint64_t v);
    void wr_icm_size(uint64_t v);
    void wr_sq_doorbell(uint64_t v) { sq_doorbell(v); }
    void wr_rq_doorbell(uint64_t v);
    void wr_cq_doorbell(uint64_t v);

    static const reg_desc REGS[];

    doorbell_config m_cfg;
    const clock_domain& m_clk;
    context_store& m_contexts;
    sim_context& m_ctx;  // the timeline's tracer (doorbell stage)
    cq_writer* m_cq_writer = nullptr;
    netdma* m_netdma = nullptr;
    gsi* m_gsi = nullptr;
    std::function<void(uint32_t, const sc_core::sc_time&)> m_rq_flush;
    bar_registers m_regs;
    channel<uint32_t> m_sq_ready;
    channel<uint32_t> m_cmd_doorbells;
    uint32_t m_cmd_producer = 0;
    uint32_t m_eq_consumer = 0;
    uint64_t m_icm_bytes_needed = 0;
    sc_core::sc_time m_arrival;        // arrival time of the access being decoded
    std::deque<pending_qp> m_pending;  // QPs rung but not yet in sq_ready
    std::vector<bool> m_scheduled;     // QP is in m_pending or sq_ready or being fetched
    // Per QP: arrival of its last SQ doorbell and sq_producer before it (sq_producer_now).
    std::vector<sc_core::sc_time> m_sq_rung_at;
    std::vector<uint32_t> m_sq_producer_before;
    sc_core::sc_time m_next_slot = sc_core::SC_ZERO_TIME;  // the scheduler's next free cycle
    quick_event m_decided;                                 // the scheduler took a QP
    struct pushed_wqe {
        uint32_t qpn;
        uint16_t index;              // wqe_index of the pushed WQE
        std::vector<uint8_t> bytes;  // 64-256 B: the WQE's first blocks
    };
    std::vector<pushed_wqe> m_pushed;  // oldest first
    quick_event m_pending_event;
    stats m_stats;
    uint32_t m_pending_count = 0;  // traced
};

}  // namespace rnic::hw
