// SPDX-License-Identifier: Apache-2.0
// MR/MTT translation: key and bounds checks, access rights, PD match, VA -> bus addresses.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>

#include "hw/common/clock_domain.h"
#include "hw/common/config_reader.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/common/timestep_arbiter.h"
#include "hw/context/context.h"
#include "hw/context_cache/context_cache.h"

namespace rnic::hw {

struct translation_config {
    uint32_t mpt_lookup_cycles = 2;  // key -> MPT entry
    uint32_t mtt_lookup_cycles = 2;  // per page translated (pipelined: 1 page per cycle after)
    // MTT lines of one translation read at once (in flight together) when a request spans
    // several lines: the page list of a long message is fetched ahead of its data. 0 or 1: one
    // miss after the other.
    uint32_t mtt_prefetch_lines = 16;
    // A message translated as its packets arrive (the responder's RDMA WRITE) keeps its next
    // mtt_prefetch_lines lines requested from a look-ahead unit that reads them while the
    // packets before them arrive (README "Look-ahead"); false: a packet past the lines read
    // fetches the next window and waits for it.
    bool mtt_lookahead = true;
};
translation_config parse_translation_config(config::reader r);

// The translation state of one message translated as its packets arrive (the responder's open
// RDMA WRITE; owned by the caller, one per QP, reset by translation::translate_first).
struct mtt_stream {
    uint64_t ahead = 0;  // look-ahead off: one past the last MTT entry fetched (0: none)
    uint64_t gen = 0;    // which message (requests queued for an earlier one are dropped)
    // Look-ahead on, in MTT lines (absolute entry / entries per line): the lines before
    // `first_ahead` were read by the first packet; [first_ahead, requested) were asked of the
    // look-ahead unit, [first_ahead, issued) have their read out, each in at `ready[line %
    // ready.size()]`; `end_line` is one past the message's last line.
    uint64_t first_ahead = 0;
    uint64_t requested = 0;
    uint64_t issued = 0;
    uint64_t end_line = 0;
    std::vector<sc_core::sc_time> ready;  // allocated by the first message that reads ahead
};

struct dma_segment {
    uint64_t bus_addr = 0;
    uint32_t len = 0;
};

enum class xlate_status : uint8_t {
    OK,
    BAD_KEY,  // no such key, or key invalidated
    PD_MISMATCH,
    ACCESS,  // rights not granted
    BOUNDS,  // range outside the region
};
const char* to_string(xlate_status s);

// Required rights of an access.
enum xlate_access : uint32_t {
    XLATE_LOCAL_READ = 0,
    XLATE_LOCAL_WRITE = 1,
    XLATE_REMOTE_READ = 2,
    XLATE_REMOTE_WRITE = 4,
};

class translation : public sc_core::sc_module {
public:
    translation(sc_core::sc_module_name name, const translation_config& cfg,
                const clock_domain& clk, context_store& contexts, sim_context& ctx);

    // From an SC_THREAD. The unit is pipelined: one lookup starts per cycle; a caller waits
    // mpt_lookup_cycles + pages x mtt_lookup_cycles... (see .cpp). Appends bus segments,
    // merging physically contiguous pages. `remote` keys must not be the privileged key.
    xlate_status translate(uint32_t key, uint32_t pdn, uint64_t va, uint64_t len, uint32_t access,
                           bool remote, std::vector<dma_segment>& out);

    // The responder's RDMA WRITE, translated as its packets arrive (README "Translation per
    // packet"). First packet: the key, PD, rights and bounds are checked for the message's whole
    // range [va, va + msg_len) as translate() checks them, but only the packet's own `len` bytes
    // are translated (timed as translate() of that range). `s` (the message's state) is reset.
    // With the context cache, the packet waits for the MTT lines of its own pages; the lines
    // after them, up to mtt_prefetch_lines lines from its first (within the message), are asked
    // of the look-ahead unit (mtt_lookahead), or read with the packet's and waited for (off).
    xlate_status translate_first(uint32_t key, uint32_t pdn, uint64_t va, uint64_t msg_len,
                                 uint32_t len, uint32_t access, bool remote, mtt_stream& s,
                                 std::vector<dma_segment>& out);
    // A later packet of that WRITE: bytes [va, va + len) of the message [msg_va, msg_va +
    // msg_len) (the key checked already by the caller). No lookup cycle: the page list is read
    // ahead and the next packet's address is known before it arrives. Look-ahead on: the
    // packet keeps mtt_prefetch_lines lines requested from its first line on and waits only if
    // a line of its own is not in yet (counted: packet_waits). Off: a packet that needs an
    // entry past those read reads the next lines (up to mtt_prefetch_lines, within the
    // message) and waits for them. BAD_KEY if the key is gone or the range leaves the message.
    xlate_status translate_next(uint32_t key, uint64_t msg_va, uint64_t msg_len, uint64_t va,
                                uint32_t len, mtt_stream& s, std::vector<dma_segment>& out);

    // MPT and MTT reads go through this cache when set (else they are on-chip hits).
    void set_context_cache(context_cache* cache) { m_cache = cache; }

    struct stats {
        uint64_t lookups = 0;
        uint64_t pages = 0;
        uint64_t faults = 0;
        uint64_t lookahead_lines = 0;  // MTT lines the look-ahead unit looked up
        uint64_t lookahead_reads = 0;  // of them, missing: read from host memory
        uint64_t packet_waits = 0;     // later packets of such messages that waited for MTT lines
        uint64_t packet_wait_ps = 0;   // and how long, in all
    };
    const stats& get_stats() const { return m_stats; }

private:
    // Checks [va, va + len), translates [part_va, part_va + part_len) (translate(): the same
    // range; `ahead` null: every MTT line of it, else fetched ahead as translate_first says).
    xlate_status translate_range(uint32_t key, uint32_t pdn, uint64_t va, uint64_t len,
                                 uint32_t access, bool remote, uint64_t part_va, uint64_t part_len,
                                 mtt_stream* s, std::vector<dma_segment>& out);
    // Look-ahead off: MTT lines for bytes [offset, offset + len) of `mr` (offsets in its page
    // list) not fetched ahead yet: from there up to mtt_prefetch_lines lines, at most to
    // `msg_end`.
    void fetch_ahead(const mpt_entry& mr, uint64_t offset, uint64_t len, uint64_t msg_end,
                     uint64_t& ahead);
    // Look-ahead on: the MTT lines of bytes [offset, offset + len) of `mr`, a packet of the
    // message ending at `msg_end`; `first`: the message's first packet (reads its own lines).
    void stream_lines(const mpt_entry& mr, uint64_t offset, uint64_t len, uint64_t msg_end,
                      bool first, mtt_stream& s);
    // Asks the look-ahead unit for the lines of `s` up to `to` (exclusive); those up to
    // `need` (inclusive) the asking packet needs itself (not read ahead).
    void request_ahead(mtt_stream& s, uint64_t to, uint64_t need);
    // SC_THREAD: the look-ahead unit. Takes requests in order, looks their lines up and reads
    // the missing ones with at most mtt_prefetch_lines reads in flight; sleeps while idle.
    void lookahead_thread();
    // Appends the bus segments of [offset, offset + left) of `mr`'s pages; returns the pages.
    uint32_t walk(const mpt_entry& mr, uint64_t offset, uint64_t left,
                  std::vector<dma_segment>& out);

    translation_config m_cfg;
    const clock_domain& m_clk;
    context_store& m_contexts;
    timestep_arbiter m_arbiter;  // same-cycle lookups: by requesting process (see .cpp)
    sc_core::sc_time m_free;     // next cycle the lookup pipeline accepts a request
    context_cache* m_cache = nullptr;
    stats m_stats;
    struct ahead_request {
        mtt_stream* s;
        uint64_t gen;
        uint64_t from, to;  // lines [from, to)
        uint64_t need;      // lines up to it are needed by the packet that asked
    };
    std::vector<ahead_request> m_ahead_queue;  // FIFO (m_ahead_head: the next one)
    size_t m_ahead_head = 0;
    uint64_t m_gen = 0;                               // messages begun
    std::vector<sc_core::sc_time> m_ahead_in_flight;  // completion times of its reads
    quick_event m_ahead_wake;                         // a request was queued
    quick_event m_ahead_issued;                       // a line's read went out
};

}  // namespace rnic::hw
