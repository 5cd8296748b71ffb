// SPDX-License-Identifier: Apache-2.0
// MR/MTT translation: key and bounds checks, access rights, PD match, VA -> bus addresses.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>

#include "hw/common/clock_domain.h"
#include "hw/common/config_reader.h"
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
};
translation_config parse_translation_config(config::reader r);

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
    // are translated (timed as translate() of that range). `ahead` (the message's state) is set
    // to the MTT entries fetched ahead: with the context cache, the lines of the packet's pages
    // and of the page list after them, up to mtt_prefetch_lines lines (within the message),
    // read together.
    xlate_status translate_first(uint32_t key, uint32_t pdn, uint64_t va, uint64_t msg_len,
                                 uint32_t len, uint32_t access, bool remote, uint64_t& ahead,
                                 std::vector<dma_segment>& out);
    // A later packet of that WRITE: bytes [va, va + len) of the message [msg_va, msg_va +
    // msg_len) (the key checked already by the caller). No lookup cycle: the page list was
    // read ahead and the next packet's address is known before it arrives. Only when the
    // packet needs an entry past `ahead` are the next lines (up to mtt_prefetch_lines, within
    // the message) read, and the caller waits for them. BAD_KEY if the key is gone or the range
    // leaves the message.
    xlate_status translate_next(uint32_t key, uint64_t msg_va, uint64_t msg_len, uint64_t va,
                                uint32_t len, uint64_t& ahead, std::vector<dma_segment>& out);

    // MPT and MTT reads go through this cache when set (else they are on-chip hits).
    void set_context_cache(context_cache* cache) { m_cache = cache; }

    struct stats {
        uint64_t lookups = 0;
        uint64_t pages = 0;
        uint64_t faults = 0;
    };
    const stats& get_stats() const { return m_stats; }

private:
    // Checks [va, va + len), translates [part_va, part_va + part_len) (translate(): the same
    // range; `ahead` null: every MTT line of it, else fetched ahead as translate_first says).
    xlate_status translate_range(uint32_t key, uint32_t pdn, uint64_t va, uint64_t len,
                                 uint32_t access, bool remote, uint64_t part_va, uint64_t part_len,
                                 uint64_t* ahead, std::vector<dma_segment>& out);
    // MTT lines for bytes [offset, offset + len) of `mr` (offsets in its page list) not fetched
    // ahead yet: from there up to mtt_prefetch_lines lines, at most to `msg_end`.
    void fetch_ahead(const mpt_entry& mr, uint64_t offset, uint64_t len, uint64_t msg_end,
                     uint64_t& ahead);
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
};

}  // namespace rnic::hw
