// SPDX-License-Identifier: Apache-2.0
// CQ writer: writes CQEs into completion rings in host memory, event-queue entries into the
// EQ, and raises MSI-X interrupts for armed CQs and events.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <vector>

#include <systemc>

#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
#include "hw/common/config_reader.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/dma_engine/dma_engine.h"
#include "hw/doorbell/doorbell.h"
#include "hw/hsi/hsi.h"

namespace rnic::hw {

struct cq_writer_config {
    uint32_t latency_cycles = 4;  // request to CQE DMA issue: +4 cycles (context read, format)
    uint32_t fifo_depth = 64;     // completion requests queued
};
cq_writer_config parse_cq_writer_config(config::reader r);

// CQ features of the NIC (`rnic.cq`): interrupt moderation (hsi CMD_MODIFY_CQ).
struct cq_config {
    bool interrupt_moderation = true;  // false: MODIFY_CQ -> CMD_BAD_OPCODE, cap bit clear
    uint32_t moderation_timers = 64;   // CQs that may have a moderation period at once
};
cq_config parse_cq_config(config::reader r);

struct completion_request {
    uint32_t cqn = 0;
    hsi::cqe entry{};      // flags' phase bit is filled in by the CQ writer
    uint64_t flow_id = 0;  // for the timeline
    // When the request was made: requesters build it right before putting it into
    // requests(), so the default is that time. The timeline's "cqe" slice starts here.
    sc_core::sc_time requested = sc_core::sc_time_stamp();
};

// One writer thread serves, in this priority: MSI-X messages owed (EQ re-arm, vector unmask),
// the event queue (all queued events as one batch), then one CQE.
// Timing per CQE: latency_cycles on the NIC grid (CQ context read, format), then a 32 B DMA
// write; the next item starts when its last TLP has left. Per event batch: latency_cycles, then
// one 16 B DMA write per EQE, then the MSI-X message(s) (4 B DMA writes), all in PCIe order,
// so the host sees the CQE before the EQE and the EQE before the interrupt.
// Interrupt moderation: an armed CQ's EVENT_CQ_COMPLETION is held (no EQE, no MSI-X) from the
// first matching CQE until the CQ has moderation_count unconsumed CQEs or moderation_period_us
// passed; all periods share one timer event (the earliest deadline), nothing polls.
// Errors: a CQE write that completes with a PCIe error kills the CQ (EVENT_CQ_ERROR with
// CQ_ERR_DMA_ACCESS) and, like an overrun, moves its QPs to ERROR through the QP error hook.
class cq_writer : public sc_core::sc_module {
public:
    cq_writer(sc_core::sc_module_name name, const cq_writer_config& cfg, const clock_domain& clk,
              context_store& contexts, dma_engine& dma, const bar_registers& regs,
              sim_context& ctx);

    // From the transmit and receive paths.
    channel<completion_request>& requests() { return m_requests; }
    // From the command processor and the data path: an event-queue entry (phase set here).
    void post_event(uint8_t type, uint32_t data, uint32_t data2 = 0);
    // From the doorbell block when a CQ doorbell arrives.
    void cq_doorbell(uint32_t cqn, uint8_t arm, uint32_t consumer);
    // From the doorbell block when the driver writes REG_EQ_CONSUMER (re-arms the EQ).
    void eq_consumer(uint32_t consumer);
    // From the doorbell block after a write to MSI-X table entry `vector`: if the vector is now
    // unmasked and has a pending message, the message is sent.
    void msix_control_written(uint32_t vector);
    // From the command processor when a CQ is created or destroyed: forget per-CQ state (and
    // free its moderation timer).
    void cq_reset(uint32_t cqn);

    // NIC configuration of the CQ features (hw/nic; defaults otherwise).
    void set_cq_config(const cq_config& cfg) { m_cq_cfg = cfg; }
    const cq_config& get_cq_config() const { return m_cq_cfg; }
    // CMD_MODIFY_CQ, from the command processor: returns the hsi::cmd_status. Takes or frees
    // the CQ's moderation timer; new settings apply at once to a held event.
    uint8_t modify_moderation(uint32_t cqn, uint32_t count, uint32_t period_us);
    uint32_t moderation_timers_in_use() const { return m_timers_in_use; }
    // Whether the CQ's completion event is being held by moderation.
    bool moderation_holding(uint32_t cqn) const {
        return cqn < m_moderation.size() && m_moderation[cqn].held;
    }
    // Called for every QP that must go to ERROR because its CQ died (hw/nic: the command
    // processor's qp_to_error).
    void set_qp_error_handler(std::function<void(uint32_t qpn)> fn) {
        m_qp_error_handler = std::move(fn);
    }
    // The hardware moves `qpn` to ERROR because a queue it depends on died (its CQ here, its
    // SRQ in recv_path): through the hook (flush, kick), or just the state without one.
    void qp_error(uint32_t qpn);
    // Catastrophic device error: every CQ is dead from now on (no per-CQ event; the caller
    // posts EVENT_DEVICE_FATAL), held moderation events are dropped.
    void device_fatal();

    // MSI-X pending bit (PBA) of a vector.
    bool msix_pending(uint32_t vector) const {
        return vector < hsi::MSIX_VECTORS && m_msix_pending[vector];
    }
    uint32_t eq_producer() const { return m_eq_producer; }
    bool eq_armed() const { return m_eq_armed; }

    struct stats {
        uint64_t cqes = 0;
        uint64_t error_cqes = 0;
        uint64_t events = 0;
        uint64_t interrupts = 0;
        uint64_t overruns = 0;
        uint64_t dropped = 0;              // CQE for an invalid or dead CQ
        uint64_t cq_events = 0;            // EVENT_CQ_COMPLETION posted (armed CQ fired)
        uint64_t events_dropped = 0;       // EQ not set up (base 0 or bad size)
        uint64_t eq_overruns = 0;          // EQ full: event lost
        uint64_t masked_interrupts = 0;    // message held because the vector is masked
        uint64_t pending_sent = 0;         // held messages sent on unmask
        uint64_t bad_vectors = 0;          // vector number outside the table
        uint64_t cqe_write_errors = 0;     // CQE writes that failed on PCIe (CQ put in error)
        uint64_t moderated = 0;            // completion events held by moderation
        uint64_t moderation_timeouts = 0;  // held events released by the period
    };
    const stats& get_stats() const { return m_stats; }

private:
    void writer_thread();
    void raise_msix(uint32_t vector);
    void write_cqe(const completion_request& req);
    void write_events();
    void fire_cq(uint32_t cqn, cq_context& cq);
    void kill_cq(uint32_t cqn, cq_context& cq, uint32_t syndrome);
    // Moderation: release the held event when its count or period is reached.
    void moderation_check(uint32_t cqn, const cq_context& cq);
    void release_held(uint32_t cqn);
    void on_moderation_timer();  // SC_METHOD on m_timer_event
    bool solicited_pending(uint32_t cqn, const cq_context& cq) const;

    struct solicited_mark {
        bool valid = false;
        uint32_t end = 0;  // producer index just after the last solicited/error CQE
    };

    cq_writer_config m_cfg;
    const clock_domain& m_clk;
    context_store& m_contexts;
    dma_engine& m_dma;
    const bar_registers& m_regs;
    sim_context& m_ctx;
    channel<completion_request> m_requests;
    std::deque<hsi::event_entry> m_events;
    std::deque<uint32_t> m_irq_owed;  // MSI-X vectors to signal (EQ re-arm, unmask)
    quick_event m_event_posted;
    quick_event m_dma_done;  // the writer's DMA write has left (dma_engine::write_wait)
    // What the idle writer waits on (a request, an event or owed interrupt): built once, not an
    // allocated temporary per wait.
    sc_core::sc_event_or_list m_wake;
    uint32_t m_eq_producer = 0;
    uint32_t m_eq_consumer = 0;
    bool m_eq_armed = true;
    std::array<bool, hsi::MSIX_VECTORS> m_msix_pending{};
    std::vector<solicited_mark> m_solicited;  // per CQN
    struct moderation_state {
        bool held = false;   // an EVENT_CQ_COMPLETION is being held
        bool timer = false;  // owns one of the moderation timers
        sc_core::sc_time since;
        sc_core::sc_time deadline;  // valid while held with a period
    };
    std::vector<moderation_state> m_moderation;             // per CQN
    std::multimap<sc_core::sc_time, uint32_t> m_deadlines;  // may hold stale entries
    quick_event m_timer_event;
    uint32_t m_timers_in_use = 0;
    cq_config m_cq_cfg;
    std::function<void(uint32_t)> m_qp_error_handler;
    stats m_stats;
    uint32_t m_events_queued = 0;  // traced
};

}  // namespace rnic::hw
