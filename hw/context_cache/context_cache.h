// SPDX-License-Identifier: Apache-2.0
// On-NIC context caches (QP context, MPT, MTT) backed by context tables in host memory (the
// "ICM" a driver hands the NIC at init). A miss stalls the requester for a DMA read of the
// line through the PCIe model; evicting a dirty line writes it back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <systemc>

#include "hw/common/clock_domain.h"
#include "hw/common/config_reader.h"
#include "hw/common/sim_context.h"
#include "hw/common/timestep_arbiter.h"
#include "hw/dma_engine/dma_engine.h"

namespace rnic::hw {

struct cache_config {
    uint32_t entries = 256;      // lines
    uint32_t ways = 4;           // associativity (entries % ways == 0)
    std::string policy = "lru";  // "lru" | "fifo" | "random"
    uint32_t hit_cycles = 2;     // tag + data read on a hit
};

struct context_cache_config {
    cache_config qpc{512, 4, "lru", 2};   // 256 B QP contexts, one per line
    cache_config mpt{1024, 4, "lru", 2};  // 64 B keys, one per line
    cache_config mtt{2048, 8, "lru", 2};  // 64 B lines of eight 8 B page addresses
    uint32_t qpc_bytes = 256;             // QP context size in host memory
    uint32_t mpt_bytes = 64;
    uint32_t mtt_line_bytes = 64;
    uint64_t seed = 1;  // random replacement
};
context_cache_config parse_context_cache_config(config::reader r);

// One set-associative tag store. Pure bookkeeping: the caller charges the time.
class tag_cache {
public:
    tag_cache(const cache_config& cfg, uint64_t seed);
    struct result {
        bool hit = false;
        bool evicted = false;
        bool evicted_dirty = false;
        uint64_t evicted_tag = 0;
    };
    result access(uint64_t tag, bool write);
    void invalidate(uint64_t tag);

private:
    struct line {
        uint64_t tag = 0;
        bool valid = false;
        bool dirty = false;
        uint64_t stamp = 0;  // last use (LRU) or fill time (FIFO)
    };
    cache_config m_cfg;
    bool m_lru;     // policy "lru" (decoded once: looked at on every access)
    bool m_random;  // policy "random"
    uint32_t m_sets;
    // m_sets x ways, allocated by the first access: an idle NIC's caches hold no memory.
    std::vector<line> m_lines;
    uint64_t m_clock = 0;
    uint64_t m_rng;
};

enum class ctx_kind : uint8_t { QPC, MPT, MTT };

// Who looks a context up. The caches share one lookup port (one request per cycle); requests
// of the same cycle are granted in this order, first listed first (hardware priority, see
// README.md), ties by requesting process name.
enum class cache_port : uint8_t {
    RECV_PATH,    // responder: packets keep arriving from the wire; it has the least slack
    TX_ENGINE,    // requester state of the WQE the send path is about to transmit
    TRANSLATION,  // MPT/MTT for a payload DMA already under way
    WQE_FETCH,    // prefetch: the fetched-WQE FIFO in front of the transmit engine hides it
    OTHER,        // anything else
};

class context_cache : public sc_core::sc_module {
public:
    context_cache(sc_core::sc_module_name name, const context_cache_config& cfg,
                  const clock_domain& clk, dma_engine& dma, sim_context& ctx);

    // Where the context tables live in host memory (0: not set up, caches never miss).
    void set_icm_base(uint64_t base, uint32_t qpcs, uint32_t keys);
    // Follow a base register (the BAR's REG_ICM_BASE) for tables of this many entries.
    void watch_icm_base(const uint64_t* reg, uint32_t qpcs, uint32_t keys) {
        m_icm_reg = reg;
        m_qpcs = qpcs;
        m_keys = keys;
    }
    // Bytes of host memory the tables need (the driver allocates them).
    static uint64_t icm_bytes(const context_cache_config& cfg, uint32_t qpcs, uint32_t keys,
                              uint32_t mtt_pages);

    // From an SC_THREAD: looks `index` up in the cache of `kind`, waiting the hit latency or
    // the miss (DMA read of the line, plus a write-back of a dirty victim). `write` marks the
    // line dirty (a context update, e.g. a PSN). `who` is the requester's port: requests of
    // the same cycle are granted by its priority (cache_port), whatever order SystemC runs the
    // requesters in.
    void access(ctx_kind kind, uint32_t index, bool write = false,
                cache_port who = cache_port::OTHER);
    uint32_t mtt_entries_per_line() const { return m_cfg.mtt_line_bytes / 8; }
    // From an SC_THREAD: the MTT entries first..last of one translation (a long sequential
    // message), as a translation unit that fetches a message's page list ahead of its data
    // does: one lookup per line, pipelined on the port, the missing lines read with up to
    // `window` reads in flight; returns when every line is in. `window` <= 1, or a run within
    // one line: access() per line, each miss paid in turn.
    void access_mtt_run(uint32_t first, uint32_t last, uint32_t window,
                        cache_port who = cache_port::TRANSLATION);
    // From an SC_THREAD (a look-ahead unit reading a message's page list before its packets
    // need it, hw/translation): looks MTT line `line` up and, on a miss, issues its read
    // hit_cycles after the lookup without waiting for the data; returns when the line is in
    // (the lookup's end on a hit). A missing line read `ahead` of need counts as
    // `mtt_prefetched`; the requester's wait for the line, if any, is its own (add_mtt_stall).
    sc_core::sc_time read_mtt_line(uint64_t line, bool ahead, cache_port who, bool& miss);
    // A requester waited `ps` for MTT lines read by read_mtt_line (counted as mtt_stall_ps).
    void add_mtt_stall(uint64_t ps) { m_stats[static_cast<int>(ctx_kind::MTT)].stall_ps += ps; }
    // The command processor changed or destroyed an entry: drop the cached copy.
    void invalidate(ctx_kind kind, uint32_t index);

    struct cache_stats {
        uint64_t hits = 0;
        uint64_t misses = 0;
        uint64_t evictions = 0;
        uint64_t writebacks = 0;
        uint64_t stall_ps = 0;
        // MTT only: lines read while another of the run was in flight, or by a look-ahead
        uint64_t prefetched = 0;
    };
    const cache_stats& get_stats(ctx_kind k) const { return m_stats[static_cast<int>(k)]; }
    // The lookup port's arbiter (rounds, contended rounds).
    const timestep_arbiter& port_arbiter() const { return m_arbiter; }

private:
    // The port's arbitration and the tag update of one lookup; `start` gets the grant time.
    // Returns true on a miss (the caller reads the line).
    bool lookup(ctx_kind kind, uint64_t tag, bool write, cache_port who, sc_core::sc_time& start);
    uint64_t line_addr(ctx_kind kind, uint64_t tag) const;
    uint32_t line_bytes(ctx_kind kind) const;

    context_cache_config m_cfg;
    const clock_domain& m_clk;
    dma_engine& m_dma;
    tag_cache m_caches[3];
    cache_stats m_stats[3];
    uint64_t m_base[3] = {0, 0, 0};  // table base per kind; 0 = no backing
    timestep_arbiter m_arbiter;      // same-cycle requests: fixed priority by cache_port
    sc_core::sc_time m_port_free;    // one lookup per cycle
    const uint64_t* m_icm_reg = nullptr;
    uint64_t m_icm_seen = 0;
    uint32_t m_qpcs = 0;
    uint32_t m_keys = 0;
    std::vector<uint8_t> m_line;
};

}  // namespace rnic::hw
