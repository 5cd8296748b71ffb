// SPDX-License-Identifier: Apache-2.0
// Command processor: executes create/modify/destroy commands from the command ring in host
// memory on the context tables, writes each command's status back and posts EVENT_CMD_DONE.
#pragma once

#include <array>
#include <cstdint>
#include <functional>

#include <systemc>

#include "hw/common/clock_domain.h"
#include "hw/common/config_reader.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/context/limits.h"
#include "hw/cq_writer/cq_writer.h"
#include "hw/dma_engine/dma_engine.h"
#include "hw/doorbell/doorbell.h"

namespace rnic::hw {

class context_cache;

struct cmd_processor_config {
    uint32_t cycles_per_command = 200;    // firmware execution time per command (0..1000000)
    uint32_t max_inline_mtt_fetch = 512;  // pages read per DMA when loading a page list (1..4096)
};
cmd_processor_config parse_cmd_processor_config(config::reader r);

// Injected device faults (`rnic.faults`).
struct fault_config {
    double fatal_error_at_ns = 0;  // catastrophic error at this simulated time; 0 = never
};
fault_config parse_fault_config(config::reader r);

// Timing per command, on the NIC clock grid: 64 B DMA read of the slot (PCIe round trip),
// cycles_per_command, the page-list DMA reads of CREATE_MR (in chunks of max_inline_mtt_fetch
// pages), then a 2 B DMA write of status+done and the EVENT_CMD_DONE entry. Commands run one
// at a time, in ring order; context tables change when the command's execution ends.
class cmd_processor : public sc_core::sc_module {
public:
    cmd_processor(sc_core::sc_module_name name, const cmd_processor_config& cfg,
                  const clock_domain& clk, context_store& contexts, dma_engine& dma,
                  const nic_limits& limits, doorbell& db, cq_writer& cqw, sim_context& ctx);

    // Optional: the on-chip context caches. Commands that change a QP context, an MPT entry or
    // MTT entries invalidate the cached copies (the next data-path access misses).
    void set_context_cache(context_cache* cc) { m_context_cache = cc; }
    // Optional: called when MODIFY_QP moves a QP to ERROR, before the command's status is
    // written back (the transmit engine flushes the QP's requests in flight and queued, the
    // receive path its posted receives).
    void set_qp_error_handler(std::function<void(uint32_t qpn)> fn) {
        m_qp_error_handler = std::move(fn);
    }
    // Optional: called when MODIFY_QP moves a QP to RESET or DESTROY_QP removes it, after the
    // context is cleared (the transmit engine, receive path and doorbell drop their per-QP
    // state, so a QP re-created under the same number starts clean).
    void set_qp_reset_handler(std::function<void(uint32_t qpn)> fn) {
        m_qp_reset_handler = std::move(fn);
    }
    // Command-ring index of the next command to execute (free-running).
    uint32_t consumer() const { return m_consumer; }

    // A QP goes to ERROR because the hardware says so (its CQ or SRQ died, fatal error): the
    // same as MODIFY_QP to ERROR (flush through the error handler, kick the SQ).
    void qp_to_error(uint32_t qpn);
    // Catastrophic error (test hook; rnic.faults.fatal_error_at_ns via fatal_error_at): every
    // QP to ERROR, every CQ and SRQ dead, EVENT_DEVICE_FATAL(syndrome) posted, every later
    // command answered CMD_DEVICE_FATAL. From a process during the simulation; nothing in it
    // blocks. Idempotent.
    void inject_fatal_error(uint32_t syndrome = hsi::FATAL_INJECTED);
    // Schedules inject_fatal_error at simulated time `at` (one timed event).
    void fatal_error_at(const sc_core::sc_time& at);
    bool fatal() const { return m_fatal; }

    struct stats {
        uint64_t commands = 0;
        uint64_t failed = 0;
        uint64_t mtt_pages_loaded = 0;
        uint64_t mtt_dma_reads = 0;  // page-list DMA reads
        uint64_t ring_errors = 0;    // doorbells with no usable ring (base 0, bad size/index)
        std::array<uint64_t, 7> by_status{};  // indexed by hsi::cmd_status
    };
    const stats& get_stats() const { return m_stats; }

private:
    void command_thread();
    uint8_t execute(hsi::cmd_slot& cmd);
    // A command that takes a context out of service: it waits for the instant to settle.
    static bool takes_out_of_service(const hsi::cmd_slot& cmd);

    uint8_t create_cq(const hsi::cmd_create_cq& c);
    uint8_t resize_cq(const hsi::cmd_create_cq& c);
    uint8_t destroy_cq(uint32_t cqn);
    uint8_t create_pd(uint32_t pdn);
    uint8_t destroy_pd(uint32_t pdn);
    uint8_t create_qp(const hsi::cmd_create_qp& c);
    uint8_t modify_qp(const hsi::cmd_modify_qp& c);
    uint8_t destroy_qp(uint32_t qpn);
    uint8_t create_mr(const hsi::cmd_create_mr& c);
    uint8_t destroy_mr(uint32_t key);
    uint8_t create_mw(const hsi::cmd_object& c);
    uint8_t destroy_mw(uint32_t key);
    uint8_t create_srq(const hsi::cmd_create_srq& c);
    uint8_t modify_srq(const hsi::cmd_create_srq& c);
    uint8_t destroy_srq(uint32_t srqn);
    uint8_t query_device(hsi::cmd_query_device& out) const;
    void on_fatal_timer();  // SC_METHOD on m_fatal_event
    bool depth_ok(uint32_t log_depth, uint32_t limit) const;
    void invalidate_qp(uint32_t qpn);
    void invalidate_key(uint32_t key);
    void invalidate_mtt(uint32_t base, uint32_t pages);

    cmd_processor_config m_cfg;
    const clock_domain& m_clk;
    context_store& m_contexts;
    const nic_limits& m_limits;
    dma_engine& m_dma;
    doorbell& m_doorbell;
    cq_writer& m_cq_writer;
    context_cache* m_context_cache = nullptr;
    std::function<void(uint32_t)> m_qp_error_handler;
    std::function<void(uint32_t)> m_qp_reset_handler;
    uint32_t m_consumer = 0;
    stats m_stats;
    bool m_busy = false;  // traced
    bool m_fatal = false;
    sc_core::sc_time m_fatal_at = sc_core::SC_ZERO_TIME;  // 0: no scheduled fault
    quick_event m_fatal_event;
};

}  // namespace rnic::hw
