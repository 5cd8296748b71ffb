// SPDX-License-Identifier: Apache-2.0
// NetDMA copy channels.
#include "hw/netdma/netdma.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace rnic::hw {

namespace {
constexpr uint32_t MSIX_MASKED = 1;  // vector control bit 0
constexpr uint64_t PAGE = hsi::PAGE_SIZE;

uint64_t load_le(const uint8_t* p, unsigned len) {
    uint64_t v = 0;
    for (unsigned i = 0; i < len && i < 8; ++i) {
        v |= static_cast<uint64_t>(p[i]) << (8 * i);
    }
    return v;
}

void store_le(uint8_t* p, unsigned len, uint64_t v) {
    for (unsigned i = 0; i < len; ++i) {
        p[i] = i < 8 ? static_cast<uint8_t>(v >> (8 * i)) : 0;
    }
}

// A 64-bit register written whole or as two 32-bit halves.
bool merge64(uint64_t& reg, unsigned at, const uint8_t* data, unsigned len) {
    if (at == 0 && len == 8) {
        reg = load_le(data, 8);
    } else if ((at == 0 || at == 4) && len == 4) {
        const uint64_t half = load_le(data, 4);
        reg = at == 0 ? (reg & ~0xffffffffull) | half : (reg & 0xffffffffull) | (half << 32);
    } else {
        return false;
    }
    return true;
}
}  // namespace

netdma::netdma(sc_core::sc_module_name name, const netdma_config& cfg, const clock_domain& clk,
               dma_engine& dma, const bar_registers& regs, sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_dma(dma)
    , m_regs(regs)
    , m_ctx(ctx) {
    const std::string b = this->name();
    for (uint32_t i = 0; i < cfg.channels; ++i) {
        auto c = std::make_unique<channel>();
        c->index = i;
        channel* p = c.get();
        sc_core::sc_spawn([this, p] { channel_thread(*p); },
                          ("channel" + std::to_string(i)).c_str());
        if (ctx.vcd != nullptr) {
            sc_core::sc_trace(ctx.vcd, p->state_trace,
                              b + ".channel" + std::to_string(i) + ".state");
        }
        m_channels.push_back(std::move(c));
    }
    SC_HAS_PROCESS(netdma);
    SC_THREAD(arbiter_thread);
    SC_THREAD(irq_thread);

    auto& s = ctx.stats;
    s.add(b, "descriptors", m_stats.descriptors, "count", "descriptors completed");
    s.add(b, "bytes", m_stats.bytes, "bytes", "bytes copied (DMA read, then DMA write)");
    s.add(b, "null_transfers", m_stats.null_transfers, "count", "NULL_TRANSFER descriptors");
    s.add(b, "context_changes", m_stats.context_changes, "count", "context-change descriptors");
    s.add(b, "dca_hints", m_stats.dca_hints, "count",
          "descriptors asking for a DCA hint (recorded, not modelled)");
    s.add(b, "completion_writes", m_stats.completion_writes, "count", "completion words written");
    s.add(b, "interrupts", m_stats.interrupts, "count", "MSI-X messages sent by the channels");
    s.add(b, "masked_interrupts", m_stats.masked_interrupts, "count",
          "channel messages held because the vector was masked");
    s.add(b, "pending_sent", m_stats.pending_sent, "count", "held messages sent on unmask");
    s.add(b, "errors", m_stats.errors, "count", "channels halted by a descriptor error");
    s.add(b, "starts", m_stats.starts, "count", "START commands taken");
    s.add(b, "appends", m_stats.appends, "count", "APPEND commands taken");
    s.add(b, "suspends", m_stats.suspends, "count", "SUSPEND commands taken");
    s.add(b, "resumes", m_stats.resumes, "count", "RESUME commands taken");
    s.add(b, "aborts", m_stats.aborts, "count", "ABORT commands taken");
    s.add(b, "resets", m_stats.resets, "count", "RESET commands taken");
    s.add(b, "aborted_descriptors", m_stats.aborted_descriptors, "count",
          "descriptors cut short by ABORT or RESET (not completed)");
    s.add(b, "next_rereads", m_stats.next_rereads, "count",
          "NextDescriptor re-reads (append at the tail, resume)");
    s.add(b, "bad_commands", m_stats.bad_commands, "count",
          "commands not allowed in the channel's state (ignored)");
    s.add(b, "bad_accesses", m_stats.bad_accesses, "count",
          "NetDMA register accesses to unknown or read-only registers or with a bad width");
    s.add(b, "arbiter_waits", m_stats.arbiter_waits, "count",
          "DMA requests that waited behind another channel's grant");
    if (ctx.vcd != nullptr) {
        sc_core::sc_trace(ctx.vcd, m_waiting_trace, b + ".arbiter_waiting");
    }
}

// ---------------------------------------------------------------------------------------------
// Registers
// ---------------------------------------------------------------------------------------------
bool netdma::mmio_write(uint64_t offset, const uint8_t* data, unsigned len,
                        const sc_core::sc_time& arrival) {
    if (offset < hsi::REG_NETDMA_CHANNEL0) {
        ++m_stats.bad_accesses;  // CAPS is read-only
        return false;
    }
    const uint64_t rel = offset - hsi::REG_NETDMA_CHANNEL0;
    const uint64_t ch = rel / hsi::NETDMA_CHANNEL_STRIDE;
    const uint64_t reg = rel % hsi::NETDMA_CHANNEL_STRIDE;
    if (ch >= m_channels.size()) {
        ++m_stats.bad_accesses;
        return false;
    }
    channel& c = *m_channels[ch];
    const uint64_t base = reg & ~7ull;
    const auto at = static_cast<unsigned>(reg & 7);
    bool ok = true;
    switch (base) {
        case hsi::NETDMA_CHAN_CMD: {
            if (at != 0 || (len != 8 && len != 4)) {
                ok = false;
                break;
            }
            const uint64_t v = load_le(data, len);
            const auto op = static_cast<uint8_t>(v);
            if (op < hsi::NETDMA_CMD_START || op > hsi::NETDMA_CMD_RESET) {
                ok = false;
                break;
            }
            // +decode_cycles: the command is decoded and queued for the channel.
            const sc_core::sc_time ready =
                m_clk.edge_at_or_after(arrival) + m_clk.cycles(m_cfg.decode_cycles);
            c.commands.push_back({op, static_cast<uint32_t>(v >> 32), c.chainaddr, ready});
            const sc_core::sc_time now = sc_core::sc_time_stamp();
            c.wake.notify(ready > now ? ready - now : sc_core::SC_ZERO_TIME);
            break;
        }
        case hsi::NETDMA_CHAN_CHAINADDR:
            ok = merge64(c.chainaddr, at, data, len);
            break;
        case hsi::NETDMA_CHAN_COMPLETION: {
            uint64_t v = c.completion;
            ok = merge64(v, at, data, len);
            // The completion word is 8 B aligned (a half write may pass through a misaligned
            // value; only the final value is checked).
            if (ok && (len == 8 || at == 4) && (v & 7) != 0) {
                ok = false;
            } else if (ok) {
                c.completion = v;
            }
            break;
        }
        case hsi::NETDMA_CHAN_CONTROL:
            if (at == 0 && (len == 4 || len == 8)) {
                c.control = static_cast<uint32_t>(load_le(data, len));
            } else {
                ok = false;
            }
            break;
        case hsi::NETDMA_CHAN_ERROR:
            if (at == 0 && (len == 4 || len == 8)) {
                c.error &= ~static_cast<uint32_t>(load_le(data, len));  // write 1 to clear
            } else {
                ok = false;
            }
            break;
        default:
            ok = false;  // STATUS, COMPLETED, DCA are read-only
            break;
    }
    if (!ok) {
        ++m_stats.bad_accesses;
    }
    return ok;
}

bool netdma::mmio_read(uint64_t offset, uint8_t* data, unsigned len) const {
    uint64_t v = 0;
    unsigned at = 0;
    bool wide = true;  // a 64-bit register (halves readable)
    if (offset < hsi::REG_NETDMA_CHANNEL0) {
        if (offset - hsi::REG_NETDMA_CAPS >= 8) {
            return false;
        }
        at = static_cast<unsigned>(offset - hsi::REG_NETDMA_CAPS);
        v = static_cast<uint64_t>(m_cfg.channels) | static_cast<uint64_t>(m_cfg.address_bits) << 8 |
            static_cast<uint64_t>(m_cfg.max_transfer_bytes) << 32;
    } else {
        const uint64_t rel = offset - hsi::REG_NETDMA_CHANNEL0;
        const uint64_t ch = rel / hsi::NETDMA_CHANNEL_STRIDE;
        const uint64_t reg = rel % hsi::NETDMA_CHANNEL_STRIDE;
        if (ch >= m_channels.size()) {
            return false;
        }
        const channel& c = *m_channels[ch];
        at = static_cast<unsigned>(reg & 7);
        switch (reg & ~7ull) {
            case hsi::NETDMA_CHAN_CMD:
                v = c.commands_done;
                wide = false;
                break;
            case hsi::NETDMA_CHAN_CHAINADDR:
                v = c.chainaddr;
                break;
            case hsi::NETDMA_CHAN_COMPLETION:
                v = c.completion;
                break;
            case hsi::NETDMA_CHAN_CONTROL:
                v = c.control;
                wide = false;
                break;
            case hsi::NETDMA_CHAN_STATUS:
                v = c.status;
                break;
            case hsi::NETDMA_CHAN_COMPLETED:
                v = c.completed;
                break;
            case hsi::NETDMA_CHAN_ERROR:
                v = c.error;
                wide = false;
                break;
            default:
                v = c.dca;
                wide = false;
                break;
        }
    }
    if (at == 0 && (len == 8 || len == 4)) {
        store_le(data, len, v);
        return true;
    }
    if (wide && at == 4 && len == 4) {
        store_le(data, 4, v >> 32);
        return true;
    }
    return false;
}

// ---------------------------------------------------------------------------------------------
// Arbiter and interrupts
// ---------------------------------------------------------------------------------------------
void netdma::arbitrate(channel& c) {
    if (!m_waiting.empty()) {
        ++m_stats.arbiter_waits;
    }
    m_waiting.push_back(c.index);
    m_waiting_trace = static_cast<uint32_t>(m_waiting.size());
    m_arb_event.notify(sc_core::SC_ZERO_TIME);
    while (!c.granted) {
        sc_core::wait(c.grant);
    }
    c.granted = false;
}

// One grant per cycle. Strict priority: the grant goes to the highest priority among the
// waiting channels and the channels in the middle of a copy (a copying channel between two
// requests still holds the engine against lower ones); the oldest request among equals. A
// channel that got a grant asks again at the back, so equal priorities round-robin.
void netdma::arbiter_thread() {
    auto prio = [this](uint32_t ch) { return (m_channels[ch]->control >> 16) & 0xff; };
    sc_core::sc_time next_slot = sc_core::SC_ZERO_TIME;
    for (;;) {
        while (m_waiting.empty()) {
            sc_core::wait(m_arb_event);
        }
        m_clk.wait_until(std::max(sc_core::sc_time_stamp(), next_slot));
        uint32_t top = 0;
        for (uint32_t ch : m_waiting) {
            top = std::max(top, prio(ch));
        }
        for (const auto& c : m_channels) {
            if (c->copying) {
                top = std::max(top, prio(c->index));
            }
        }
        auto pick = std::find_if(m_waiting.begin(), m_waiting.end(),
                                 [&](uint32_t ch) { return prio(ch) == top; });
        if (pick == m_waiting.end()) {
            // A higher-priority copy is waiting for its data: nothing may go until it asks
            // again or finishes.
            sc_core::wait(m_arb_event);
            continue;
        }
        channel& c = *m_channels[*pick];
        m_waiting.erase(pick);
        m_waiting_trace = static_cast<uint32_t>(m_waiting.size());
        c.granted = true;
        c.grant.notify(sc_core::SC_ZERO_TIME);
        next_slot = m_clk.edge_at_or_after(sc_core::sc_time_stamp()) + m_clk.period();
    }
}

void netdma::raise_irq(channel& c) {
    if ((c.control & hsi::NETDMA_CONTROL_IRQ_ENABLE) == 0) {
        return;
    }
    const uint32_t vector = (c.control >> 8) & 0xff;
    if (vector >= hsi::MSIX_VECTORS) {
        ++m_stats.bad_accesses;
        return;
    }
    const auto& entry = m_regs.msix[vector];
    if ((entry.control & MSIX_MASKED) != 0) {
        m_msix_pending[vector] = true;
        ++m_stats.masked_interrupts;
        return;
    }
    const uint32_t data = entry.data;
    arbitrate(c);
    m_dma.write(dma_client::INTERRUPT, entry.addr, &data, sizeof(data));  // posted
    ++m_stats.interrupts;
}

void netdma::msix_control_written(uint32_t vector) {
    if (vector >= hsi::MSIX_VECTORS || !m_msix_pending[vector] ||
        (m_regs.msix[vector].control & MSIX_MASKED) != 0) {
        return;
    }
    m_msix_pending[vector] = false;
    m_irq_owed.push_back(vector);
    m_irq_event.notify(sc_core::SC_ZERO_TIME);
}

void netdma::irq_thread() {
    for (;;) {
        while (m_irq_owed.empty()) {
            sc_core::wait(m_irq_event);
        }
        const uint32_t vector = m_irq_owed.front();
        m_irq_owed.pop_front();
        const auto& entry = m_regs.msix[vector];
        const uint32_t data = entry.data;
        m_dma.write_wait(dma_client::INTERRUPT, entry.addr, &data, sizeof(data));
        ++m_stats.interrupts;
        ++m_stats.pending_sent;
    }
}

// ---------------------------------------------------------------------------------------------
// Channel engine
// ---------------------------------------------------------------------------------------------
void netdma::set_state(channel& c, run_state s) {
    c.state = s;
    c.state_trace = static_cast<uint32_t>(s);
}

bool netdma::in_range(uint64_t addr, uint64_t len) const {
    if (m_cfg.address_bits >= 64) {
        return addr + len >= addr;  // no wrap
    }
    const uint64_t limit = 1ull << m_cfg.address_bits;
    return addr <= limit && len <= limit - addr;
}

void netdma::write_status(channel& c) {
    if (c.completion == 0) {
        return;
    }
    arbitrate(c);
    const uint64_t word = c.status;
    m_dma.write(dma_client::NETDMA, c.completion, &word, sizeof(word));  // posted
    ++m_stats.completion_writes;
}

void netdma::halt(channel& c) {
    c.status = (c.last & ~hsi::NETDMA_STATUS_MASK) | hsi::NETDMA_STATUS_HALTED;
    c.cursor_valid = false;
    set_state(c, run_state::HALTED);
    write_status(c);
}

void netdma::error_halt(channel& c, uint32_t code) {
    ++m_stats.errors;
    c.error = code;
    SC_REPORT_INFO_VERB(
        name(),
        ("channel " + std::to_string(c.index) + " halted, error " + std::to_string(code)).c_str(),
        sc_core::SC_DEBUG);
    halt(c);
    raise_irq(c);  // an error always interrupts (when the channel's interrupt is enabled)
}

bool netdma::abort_due(const channel& c) const {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    for (const command& cmd : c.commands) {
        if (cmd.ready > now) {
            break;
        }
        if (cmd.op == hsi::NETDMA_CMD_ABORT || cmd.op == hsi::NETDMA_CMD_RESET) {
            return true;
        }
    }
    return false;
}

void netdma::apply_commands(channel& c) {
    while (!c.commands.empty() && c.commands.front().ready <= sc_core::sc_time_stamp()) {
        const command cmd = c.commands.front();
        c.commands.pop_front();
        switch (cmd.op) {
            case hsi::NETDMA_CMD_START:
                // Allowed in every state; the old list's NextDescriptor is forgotten.
                ++m_stats.starts;
                c.count_mode = cmd.count != 0;
                c.available = cmd.count;
                c.cursor = cmd.chain;
                c.cursor_valid = true;
                c.last = 0;
                c.last_next = 0;
                c.reread = false;
                c.status = hsi::NETDMA_STATUS_ARMED;
                set_state(c, run_state::RUNNING);
                write_status(c);
                break;
            case hsi::NETDMA_CMD_APPEND:
                if (c.state == run_state::HALTED) {
                    ++m_stats.bad_commands;  // START first (after allocate, abort or reset)
                    break;
                }
                ++m_stats.appends;
                ++c.append_seq;
                if (c.count_mode) {
                    c.available += cmd.count;
                }
                if (c.state == run_state::IDLE) {
                    set_state(c, run_state::RUNNING);
                }
                break;
            case hsi::NETDMA_CMD_SUSPEND:
                if (c.state == run_state::HALTED || c.state == run_state::SUSPENDED) {
                    ++m_stats.bad_commands;
                    break;
                }
                ++m_stats.suspends;
                c.status = (c.last & ~hsi::NETDMA_STATUS_MASK) | hsi::NETDMA_STATUS_SUSPEND;
                set_state(c, run_state::SUSPENDED);
                write_status(c);
                break;
            case hsi::NETDMA_CMD_RESUME:
                if (c.state != run_state::SUSPENDED) {
                    ++m_stats.bad_commands;
                    break;
                }
                ++m_stats.resumes;
                if (c.last != 0) {
                    // The list may have been edited while suspended: reload the last
                    // processed descriptor's link.
                    c.cursor_valid = false;
                    c.reread = true;
                }
                c.status = c.last != 0 ? c.last | hsi::NETDMA_STATUS_ACTIVE
                                       : uint64_t{hsi::NETDMA_STATUS_ARMED};
                set_state(c, run_state::RUNNING);
                break;
            case hsi::NETDMA_CMD_ABORT:
                ++m_stats.aborts;
                if (c.state != run_state::HALTED) {
                    halt(c);
                }
                break;
            default:  // RESET
                ++m_stats.resets;
                if (c.state != run_state::HALTED) {
                    halt(c);
                }
                // Back to the allocated state: the engine forgets every descriptor; the
                // completion address, control and chain address registers stay programmed.
                c.status = hsi::NETDMA_STATUS_HALTED;
                c.completed = 0;
                c.error = 0;
                c.dca = 0;
                c.count_mode = false;
                c.available = 0;
                c.last = 0;
                c.last_next = 0;
                c.reread = false;
                break;
        }
        ++c.commands_done;
    }
}

// Decides the next descriptor after `last` (or after a RESUME); may re-read the link (8 B DMA
// read) when an APPEND came after the tail was fetched or the list may have been edited.
bool netdma::find_next(channel& c) {
    if (c.cursor_valid) {
        return true;
    }
    if (c.last == 0) {
        return false;
    }
    if (c.count_mode && c.available == 0) {
        return false;
    }
    // Null mode: a NULL link seen before an APPEND may have been patched since. Count mode:
    // NetDMA 2.0 keeps the link valid, but a NULL link is re-read before it is followed.
    const bool stale = c.last_next == 0 && c.last_seq != c.append_seq;
    if (c.reread || stale || (c.count_mode && c.last_next == 0)) {
        ++m_stats.next_rereads;
        c.last_seq = c.append_seq;
        c.reread = false;
        uint64_t next = 0;
        arbitrate(c);
        m_clk.wait_until(m_dma.read(dma_client::NETDMA, c.last + hsi::NETDMA_DESC_NEXT_OFFSET,
                                    &next, sizeof(next)));
        c.last_next = next;
    }
    if (!c.count_mode && c.last_next == 0) {
        return false;  // end of a NULL-terminated list
    }
    c.cursor = c.last_next;  // count mode: a NULL link here halts the channel at the fetch
    c.cursor_valid = true;
    return true;
}

uint32_t netdma::plan_copy(const hsi::netdma_descriptor& d, std::vector<piece>& out) const {
    const uint64_t size = d.transfer_size;
    if (size > m_cfg.max_transfer_bytes) {
        return hsi::NETDMA_ERR_LENGTH;
    }
    // Each side is one range, or two with a page break: up to the end of the first page, then
    // the rest at next_source / next_destination, which must fit in that page.
    struct side {
        uint64_t first_addr, first_len, second_addr;
    };
    auto make = [&](uint64_t addr, bool brk, uint64_t next, side& s) {
        s.first_addr = addr;
        s.first_len = size;
        s.second_addr = 0;
        if (brk && size > PAGE - addr % PAGE) {
            s.first_len = PAGE - addr % PAGE;
            s.second_addr = next;
            const uint64_t rest = size - s.first_len;
            if (rest > PAGE - next % PAGE) {
                return static_cast<uint32_t>(hsi::NETDMA_ERR_PAGE_BREAK);
            }
            if (!in_range(next, rest)) {
                return static_cast<uint32_t>(hsi::NETDMA_ERR_ADDRESS);
            }
        }
        if (!in_range(addr, s.first_len)) {
            return static_cast<uint32_t>(hsi::NETDMA_ERR_ADDRESS);
        }
        return static_cast<uint32_t>(hsi::NETDMA_ERR_NONE);
    };
    side src{}, dst{};
    if (uint32_t e = make(d.source, (d.control & hsi::NETDMA_CTRL_SOURCE_PAGE_BREAK) != 0,
                          d.next_source, src)) {
        return e;
    }
    if (uint32_t e = make(d.destination, (d.control & hsi::NETDMA_CTRL_DESTINATION_PAGE_BREAK) != 0,
                          d.next_destination, dst)) {
        return e;
    }
    if ((d.control & hsi::NETDMA_CTRL_NULL_TRANSFER) != 0) {
        return hsi::NETDMA_ERR_NONE;  // validated, nothing moves
    }
    auto at = [](const side& s, uint64_t off, uint64_t& left) {
        if (off < s.first_len) {
            left = s.first_len - off;
            return s.first_addr + off;
        }
        left = ~0ull;
        return s.second_addr + (off - s.first_len);
    };
    const uint64_t chunk = m_cfg.chunk_bytes;
    for (uint64_t off = 0; off < size;) {
        uint64_t src_left = 0, dst_left = 0;
        const uint64_t s = at(src, off, src_left);
        const uint64_t t = at(dst, off, dst_left);
        // A chunk ends at a chunk-aligned source address, a page break or the end.
        const uint64_t len = std::min({size - off, src_left, dst_left, chunk - s % chunk});
        out.push_back({s, t, static_cast<uint32_t>(len)});
        off += len;
    }
    return hsi::NETDMA_ERR_NONE;
}

// The chunk pipeline: the next action is whichever comes first of "read the next chunk into a
// free buffer" and "write the oldest chunk whose data has arrived".
bool netdma::copy(channel& c, const std::vector<piece>& pieces, sc_core::sc_time& last_write) {
    if (c.buffers.empty()) {  // at the channel's first copy: an idle channel holds no buffers
        c.buffers.assign(m_cfg.buffers, std::vector<uint8_t>(m_cfg.chunk_bytes));
    }
    const size_t n = pieces.size();
    const size_t nbuf = c.buffers.size();
    const sc_core::sc_time never = sc_core::sc_max_time();
    std::vector<sc_core::sc_time> arrival(n);
    std::vector<sc_core::sc_time> buffer_free(nbuf, sc_core::SC_ZERO_TIME);
    size_t reads = 0;
    size_t writes = 0;
    sc_core::sc_time reads_done = sc_core::SC_ZERO_TIME;
    last_write = sc_core::sc_time_stamp();
    c.copying = true;
    struct copy_end {  // every exit: lower-priority channels may go again
        netdma& self;
        channel& ch;
        ~copy_end() {
            ch.copying = false;
            self.m_arb_event.notify(sc_core::SC_ZERO_TIME);
        }
    } end_guard{*this, c};
    while (writes < n) {
        const sc_core::sc_time t_read =
            reads < n && reads < writes + nbuf ? buffer_free[reads % nbuf] : never;
        const sc_core::sc_time t_write = writes < reads ? arrival[writes] : never;
        m_clk.wait_until(std::min(t_read, t_write));
        if (abort_due(c)) {
            // Stop at once: no further requests; reads already issued still return.
            m_clk.wait_until(reads_done);
            return false;
        }
        arbitrate(c);
        if (t_read <= t_write) {
            const piece& p = pieces[reads];
            arrival[reads] =
                m_dma.read(dma_client::NETDMA, p.src, c.buffers[reads % nbuf].data(), p.len);
            reads_done = std::max(reads_done, arrival[reads]);
            ++reads;
        } else {
            const piece& p = pieces[writes];
            const sc_core::sc_time left =
                m_dma.write(dma_client::NETDMA, p.dst, c.buffers[writes % nbuf].data(), p.len);
            buffer_free[writes % nbuf] = left;
            last_write = left;
            m_stats.bytes += p.len;
            ++writes;
        }
    }
    return true;
}

void netdma::process_descriptor(channel& c) {
    const sc_core::sc_time start = sc_core::sc_time_stamp();
    const uint64_t pa = c.cursor;
    c.cursor_valid = false;
    if (c.count_mode) {
        --c.available;
    }
    if (pa == 0 || (pa & 7) != 0 || !in_range(pa, sizeof(hsi::netdma_descriptor))) {
        error_halt(c, hsi::NETDMA_ERR_DESC_ADDRESS);
        return;
    }
    const uint32_t seq = c.append_seq;  // the link below is as of this fetch
    hsi::netdma_descriptor d{};
    arbitrate(c);
    m_clk.wait_until(m_dma.read(dma_client::NETDMA, pa, &d, sizeof(d)));
    // +decode_cycles: descriptor decode and checks.
    m_clk.wait_cycles(m_cfg.decode_cycles);
    if (abort_due(c)) {
        ++m_stats.aborted_descriptors;
        return;
    }
    const uint32_t op = d.control & hsi::NETDMA_OP_MASK;
    sc_core::sc_time last_write = sc_core::sc_time_stamp();
    if (op == hsi::NETDMA_OP_CONTEXT_CHANGE) {
        c.dca = d.transfer_size & 0xff;  // DCAContext8: the target APIC id
        ++m_stats.context_changes;
    } else if (op != hsi::NETDMA_OP_COPY) {
        error_halt(c, hsi::NETDMA_ERR_OPCODE);
        return;
    } else {
        std::vector<piece> pieces;
        if (uint32_t e = plan_copy(d, pieces)) {
            error_halt(c, e);
            return;
        }
        if ((d.control & hsi::NETDMA_CTRL_DESTINATION_DCA) != 0) {
            ++m_stats.dca_hints;
        }
        if ((d.control & hsi::NETDMA_CTRL_NULL_TRANSFER) != 0) {
            ++m_stats.null_transfers;
        } else if (!copy(c, pieces, last_write)) {
            ++m_stats.aborted_descriptors;
            return;
        }
    }
    if ((d.control & hsi::NETDMA_CTRL_SERIALIZE) != 0) {
        m_clk.wait_until(last_write);  // fence: the data writes have left before anything else
    }
    // Completed.
    c.last = pa;
    c.last_next = d.next;
    c.last_seq = seq;
    ++c.completed;
    ++m_stats.descriptors;
    const uint32_t control = op == hsi::NETDMA_OP_CONTEXT_CHANGE
                                 ? d.control & hsi::NETDMA_CTRL_STATUS_UPDATE
                                 : d.control;  // context change: bit 0 is not an interrupt
    const bool more = find_next(c);
    c.status = pa | (more ? hsi::NETDMA_STATUS_ACTIVE : hsi::NETDMA_STATUS_IDLE);
    if (!more) {
        set_state(c, run_state::IDLE);
    }
    const bool report = (control & hsi::NETDMA_CTRL_STATUS_UPDATE) != 0 && c.completion != 0;
    const bool irq = (control & hsi::NETDMA_CTRL_INTERRUPT) != 0;
    if (report || irq) {
        // +completion_cycles: status formatting; the completion word goes out behind the data
        // and the message behind the completion word (PCIe posted order).
        m_clk.wait_cycles(m_cfg.completion_cycles);
        if (report) {
            write_status(c);
        }
        if (irq) {
            raise_irq(c);
        }
    }
    if (m_ctx.tracer != nullptr) {
        m_ctx.tracer->slice(name(), "netdma_descriptor", pa, start, sc_core::sc_time_stamp(),
                            "{\"channel\":" + std::to_string(c.index) +
                                ",\"bytes\":" + std::to_string(d.transfer_size) + "}");
    }
}

void netdma::channel_thread(channel& c) {
    for (;;) {
        apply_commands(c);
        if (c.state == run_state::RUNNING) {
            if (find_next(c)) {
                process_descriptor(c);
                continue;
            }
            // Nothing left (e.g. RESUME at the end of the list): IDLE at the last descriptor.
            if (c.last != 0) {
                c.status = c.last | hsi::NETDMA_STATUS_IDLE;
            }
            set_state(c, run_state::IDLE);
            continue;  // find_next may have taken time: look at the commands again
        }
        if (c.commands.empty()) {
            sc_core::wait(c.wake);
        } else {
            m_clk.wait_until(c.commands.front().ready);
        }
    }
}

}  // namespace rnic::hw
