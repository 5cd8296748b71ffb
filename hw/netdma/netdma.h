// SPDX-License-Identifier: Apache-2.0
// NetDMA copy channels: memory-to-memory DMA channels of the RNIC's DMA engine, as a NetDMA
// provider (Intel I/OAT style) exposes them. Each channel walks a chain of 64-byte descriptors in
// host memory (hw/hsi/hsi.h, NetDMA section; ndkpi.md 10.4), copies the bytes by DMA read then
// DMA write, writes the completion word and raises its MSI-X vector.
//
// Not modelled: DCA (context-change descriptors only record the APIC id, DCA hints are counted),
// no-snoop attributes, descriptor prefetch (a channel fetches the next descriptor after the
// current one completes).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include <systemc>

#include "hw/common/clock_domain.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/dma_engine/dma_engine.h"
#include "hw/doorbell/doorbell.h"
#include "hw/hsi/hsi.h"
#include "hw/netdma/netdma_config.h"

namespace rnic::hw {

// Timing (NIC clock, event-driven: a channel without work costs nothing):
// - A BAR write to a channel register takes effect at its arrival; a command is decoded
//   decode_cycles after the edge at or after its arrival and joins the channel's command FIFO.
// - A channel thread takes commands between descriptors (ABORT/RESET also at every chunk
//   boundary). Per descriptor: 64 B DMA read, decode_cycles, then the copy, then (if the
//   descriptor asks for status or an interrupt) completion_cycles, the 8 B completion word and
//   the 4 B MSI-X message, all posted in that PCIe order.
// - The copy moves chunks of at most chunk_bytes (ending at chunk_bytes-aligned source
//   addresses and at page breaks) through `buffers` chunk buffers: up to `buffers` reads are in
//   flight ahead of the writes, and a buffer is reused once its write has left the NIC.
// - Every DMA request of every channel passes one arbiter that grants one request per cycle.
//   Priorities (CONTROL bits 16..23) are strict: while a channel is copying, channels of lower
//   priority get no grants; among equal priorities the oldest request wins (round-robin).
class netdma : public sc_core::sc_module {
public:
    netdma(sc_core::sc_module_name name, const netdma_config& cfg, const clock_domain& clk,
           dma_engine& dma, const bar_registers& regs, sim_context& ctx);

    // True for BAR0 offsets in the NetDMA register window (the doorbell block routes them here).
    static bool decodes(uint64_t offset) {
        return offset >= hsi::REG_NETDMA_BASE &&
               offset < hsi::REG_NETDMA_BASE + hsi::NETDMA_BAR_BYTES;
    }
    // A BAR0 write that arrives at `arrival`. False: unknown or read-only register, bad width.
    bool mmio_write(uint64_t offset, const uint8_t* data, unsigned len,
                    const sc_core::sc_time& arrival);
    // A BAR0 read. False: unknown register or bad width (the caller returns zeros).
    bool mmio_read(uint64_t offset, uint8_t* data, unsigned len) const;
    // From the doorbell block after a write to MSI-X table entry `vector`: a message this block
    // held while the vector was masked is sent once it is unmasked.
    void msix_control_written(uint32_t vector);

    uint32_t channels() const { return m_cfg.channels; }
    // CHAN_STATUS of channel `ch` (last completed descriptor | netdma_status).
    uint64_t status(uint32_t ch) const { return m_channels.at(ch)->status; }
    uint64_t completed(uint32_t ch) const { return m_channels.at(ch)->completed; }
    uint32_t error(uint32_t ch) const { return m_channels.at(ch)->error; }

    struct stats {
        uint64_t descriptors = 0;        // descriptors completed
        uint64_t bytes = 0;              // bytes copied
        uint64_t null_transfers = 0;     // NULL_TRANSFER descriptors
        uint64_t context_changes = 0;    // context-change descriptors
        uint64_t dca_hints = 0;          // DESTINATION_DCA descriptors (hint not modelled)
        uint64_t completion_writes = 0;  // completion words written
        uint64_t interrupts = 0;         // MSI-X messages sent
        uint64_t masked_interrupts = 0;  // messages held because the vector was masked
        uint64_t pending_sent = 0;       // held messages sent on unmask
        uint64_t errors = 0;             // channels halted by a descriptor error
        uint64_t starts = 0;
        uint64_t appends = 0;
        uint64_t suspends = 0;
        uint64_t resumes = 0;
        uint64_t aborts = 0;
        uint64_t resets = 0;
        uint64_t aborted_descriptors = 0;  // descriptors cut short by ABORT/RESET
        uint64_t next_rereads = 0;         // 8 B re-reads of a NextDescriptor (append, resume)
        uint64_t bad_commands = 0;         // commands not allowed in the channel's state (ignored)
        uint64_t bad_accesses = 0;         // unknown registers, read-only writes, bad widths
        uint64_t arbiter_waits = 0;        // requests that waited for another channel's grant
    };
    const stats& get_stats() const { return m_stats; }

private:
    enum class run_state : uint8_t { HALTED = 0, RUNNING = 1, IDLE = 2, SUSPENDED = 3 };
    struct command {
        uint8_t op;
        uint32_t count;
        uint64_t chain;          // CHAINADDR when the START was written
        sc_core::sc_time ready;  // decoded: the channel may take it from here on
    };
    struct channel {
        uint32_t index = 0;
        // Registers.
        uint64_t chainaddr = 0;
        uint64_t completion = 0;
        uint32_t control = 0;
        uint64_t status = hsi::NETDMA_STATUS_HALTED;
        uint64_t completed = 0;
        uint32_t error = 0;
        uint32_t dca = 0;
        uint32_t commands_done = 0;
        // Engine.
        std::deque<command> commands;
        run_state state = run_state::HALTED;
        bool count_mode = false;    // START had a count (NetDMA 2.0) or not (NULL-terminated)
        uint64_t available = 0;     // count mode: descriptors not fetched yet
        bool cursor_valid = false;  // `cursor` is the next descriptor to fetch
        uint64_t cursor = 0;
        uint64_t last = 0;        // last completed descriptor since START (0: none)
        uint64_t last_next = 0;   // its NextDescriptor as read
        uint32_t last_seq = 0;    // append_seq when that was read
        uint32_t append_seq = 0;  // APPENDs taken
        bool reread = false;      // RESUME: read last's NextDescriptor again
        bool granted = false;
        bool copying = false;  // inside a descriptor's copy (strict priority, see arbiter)
        quick_event wake;
        quick_event grant;
        std::vector<std::vector<uint8_t>> buffers;  // made at the first copy
        uint32_t state_trace = 0;                   // traced: run_state
    };
    struct piece {
        uint64_t src;
        uint64_t dst;
        uint32_t len;
    };

    void channel_thread(channel& c);
    void arbiter_thread();
    void irq_thread();
    void arbitrate(channel& c);
    void apply_commands(channel& c);
    bool abort_due(const channel& c) const;
    bool find_next(channel& c);
    void process_descriptor(channel& c);
    // Validates a standard descriptor and cuts it into chunks; returns a netdma_error.
    uint32_t plan_copy(const hsi::netdma_descriptor& d, std::vector<piece>& out) const;
    // Copies; false when an ABORT/RESET cut it short. `last_write` = when the last TLP left.
    bool copy(channel& c, const std::vector<piece>& pieces, sc_core::sc_time& last_write);
    void write_status(channel& c);
    void raise_irq(channel& c);
    void error_halt(channel& c, uint32_t code);
    void halt(channel& c);
    void set_state(channel& c, run_state s);
    bool in_range(uint64_t addr, uint64_t len) const;

    netdma_config m_cfg;
    const clock_domain& m_clk;
    dma_engine& m_dma;
    const bar_registers& m_regs;
    sim_context& m_ctx;
    std::vector<std::unique_ptr<channel>> m_channels;
    std::deque<uint32_t> m_waiting;  // channels waiting for the arbiter, oldest first
    quick_event m_arb_event;
    std::array<bool, hsi::MSIX_VECTORS> m_msix_pending{};
    std::deque<uint32_t> m_irq_owed;  // held messages to send (vector unmasked)
    quick_event m_irq_event;
    stats m_stats;
    uint32_t m_waiting_trace = 0;  // traced: requests waiting for the arbiter
};

}  // namespace rnic::hw
