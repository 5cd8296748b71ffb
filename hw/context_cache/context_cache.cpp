// SPDX-License-Identifier: Apache-2.0
// On-NIC context caches.
#include "hw/context_cache/context_cache.h"

#include <algorithm>
#include <deque>

namespace rnic::hw {

namespace {
cache_config parse_cache(config::reader r, cache_config c) {
    r.get("entries", c.entries, 1u, 1u << 24);
    r.get("ways", c.ways, 1u, 64u);
    r.get_one_of("policy", c.policy, {"lru", "fifo", "random"});
    r.get("hit_cycles", c.hit_cycles, 0u, 100u);
    if (c.entries % c.ways != 0) {
        r.error("ways", std::to_string(c.ways) + " does not divide entries (" +
                            std::to_string(c.entries) + ")");
    }
    r.finish();
    return c;
}
}  // namespace

context_cache_config parse_context_cache_config(config::reader r) {
    context_cache_config c;
    c.qpc = parse_cache(r.child("qpc"), c.qpc);
    c.mpt = parse_cache(r.child("mpt"), c.mpt);
    c.mtt = parse_cache(r.child("mtt"), c.mtt);
    r.get_one_of("qpc_bytes", c.qpc_bytes, {64u, 128u, 256u, 512u, 1024u});
    r.get_one_of("mpt_bytes", c.mpt_bytes, {32u, 64u, 128u});
    r.get_one_of("mtt_line_bytes", c.mtt_line_bytes, {8u, 16u, 32u, 64u, 128u});
    r.get("seed", c.seed, uint64_t{0}, ~uint64_t{0});
    r.finish();
    return c;
}

tag_cache::tag_cache(const cache_config& cfg, uint64_t seed)
    : m_cfg(cfg)
    , m_lru(cfg.policy == "lru")
    , m_random(cfg.policy == "random")
    , m_sets(std::max<uint32_t>(1, cfg.entries / std::max<uint32_t>(1, cfg.ways)))
    , m_rng(seed | 1) {}

tag_cache::result tag_cache::access(uint64_t tag, bool write) {
    result r;
    if (m_lines.empty()) {
        m_lines.resize(static_cast<size_t>(m_sets) * m_cfg.ways);  // the first access: all invalid
    }
    const uint32_t set = static_cast<uint32_t>(tag % m_sets);
    line* first = &m_lines[static_cast<size_t>(set) * m_cfg.ways];
    line* last = first + m_cfg.ways;
    ++m_clock;
    for (line* l = first; l != last; ++l) {
        if (l->valid && l->tag == tag) {
            r.hit = true;
            l->dirty = l->dirty || write;
            if (m_lru) {
                l->stamp = m_clock;
            }
            return r;
        }
    }
    // Miss: an invalid way, else the victim the policy picks.
    line* victim = std::find_if(first, last, [](const line& l) { return !l.valid; });
    if (victim == last) {
        if (m_random) {
            m_rng ^= m_rng << 13;
            m_rng ^= m_rng >> 7;
            m_rng ^= m_rng << 17;
            victim = first + (m_rng % m_cfg.ways);
        } else {
            victim = std::min_element(
                first, last, [](const line& a, const line& b) { return a.stamp < b.stamp; });
        }
        r.evicted = true;
        r.evicted_dirty = victim->dirty;
        r.evicted_tag = victim->tag;
    }
    *victim = {tag, true, write, m_clock};
    return r;
}

void tag_cache::invalidate(uint64_t tag) {
    if (m_lines.empty()) {
        return;  // never accessed: nothing cached
    }
    const uint32_t set = static_cast<uint32_t>(tag % m_sets);
    line* first = &m_lines[static_cast<size_t>(set) * m_cfg.ways];
    for (line* l = first; l != first + m_cfg.ways; ++l) {
        if (l->valid && l->tag == tag) {
            l->valid = false;
        }
    }
}

context_cache::context_cache(sc_core::sc_module_name name, const context_cache_config& cfg,
                             const clock_domain& clk, dma_engine& dma, sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_dma(dma)
    , m_caches{tag_cache(cfg.qpc, cfg.seed), tag_cache(cfg.mpt, cfg.seed + 1),
               tag_cache(cfg.mtt, cfg.seed + 2)}
    , m_arbiter(clk)
    , m_line(std::max({cfg.qpc_bytes, cfg.mpt_bytes, cfg.mtt_line_bytes})) {
    static const char* names[] = {"qpc", "mpt", "mtt"};
    for (int k = 0; k < 3; ++k) {
        const std::string p = names[k];
        auto& s = m_stats[k];
        ctx.stats.add(this->name(), p + "_hits", s.hits, "count", p + " cache hits");
        ctx.stats.add(this->name(), p + "_misses", s.misses, "count",
                      p + " cache misses (a DMA read of the line)");
        ctx.stats.add(this->name(), p + "_evictions", s.evictions, "count", p + " lines evicted");
        ctx.stats.add(this->name(), p + "_writebacks", s.writebacks, "count",
                      p + " dirty lines written back to host memory");
        ctx.stats.add(this->name(), p + "_stall_ps", s.stall_ps, "ps",
                      "time requesters waited on " + p + " misses");
        if (k == 2) {
            ctx.stats.add(this->name(), "mtt_prefetched", s.prefetched, "count",
                          "MTT lines read while an earlier line of the same translation was in "
                          "flight (translation.mtt_prefetch_lines), or by the look-ahead of a "
                          "message translated per packet (translation.mtt_lookahead)");
        }
        if (ctx.vcd != nullptr) {
            // Lookups are closed form: the counters show when hits and misses happen.
            const std::string b = std::string(this->name()) + "." + p;
            sc_core::sc_trace(ctx.vcd, s.hits, b + "_hits");
            sc_core::sc_trace(ctx.vcd, s.misses, b + "_misses");
        }
    }
}

uint64_t context_cache::icm_bytes(const context_cache_config& cfg, uint32_t qpcs, uint32_t keys,
                                  uint32_t mtt_pages) {
    return static_cast<uint64_t>(qpcs) * cfg.qpc_bytes +
           static_cast<uint64_t>(keys) * cfg.mpt_bytes + static_cast<uint64_t>(mtt_pages) * 8;
}

void context_cache::set_icm_base(uint64_t base, uint32_t qpcs, uint32_t keys) {
    m_base[0] = base;
    m_base[1] = base == 0 ? 0 : base + static_cast<uint64_t>(qpcs) * m_cfg.qpc_bytes;
    m_base[2] = base == 0 ? 0 : m_base[1] + static_cast<uint64_t>(keys) * m_cfg.mpt_bytes;
}

uint32_t context_cache::line_bytes(ctx_kind kind) const {
    const uint32_t bytes[3] = {m_cfg.qpc_bytes, m_cfg.mpt_bytes, m_cfg.mtt_line_bytes};
    return bytes[static_cast<int>(kind)];
}

uint64_t context_cache::line_addr(ctx_kind kind, uint64_t tag) const {
    return m_base[static_cast<int>(kind)] + tag * line_bytes(kind);
}

bool context_cache::lookup(ctx_kind kind, uint64_t tag, bool write, cache_port who,
                           sc_core::sc_time& start) {
    const int k = static_cast<int>(kind);
    auto& s = m_stats[k];
    const cache_config& cc = k == 0 ? m_cfg.qpc : (k == 1 ? m_cfg.mpt : m_cfg.mtt);
    bool miss = false;
    // Timing: the request is sampled at the edge at or after now; the port takes one lookup
    // per cycle, same-cycle requests in cache_port order (zero simulated time to decide). The
    // tag update and a dirty victim's write-back happen in grant order, at the grant.
    m_arbiter.request(
        static_cast<uint32_t>(who),
        [&] {
            if (m_icm_reg != nullptr && *m_icm_reg != m_icm_seen) {
                m_icm_seen = *m_icm_reg;
                set_icm_base(m_icm_seen, m_qpcs, m_keys);
            }
            start = std::max(sim_now(), m_port_free);
            m_port_free = start + m_clk.period();
            if (m_base[k] == 0) {
                ++s.hits;  // no backing tables: the context is on chip
                return;
            }
            const tag_cache::result r = m_caches[k].access(tag, write);
            if (r.hit) {
                ++s.hits;
                return;
            }
            miss = true;
            ++s.misses;
            if (r.evicted) {
                ++s.evictions;
                if (r.evicted_dirty) {
                    ++s.writebacks;
                    m_dma.write(dma_client::CONTEXT, line_addr(kind, r.evicted_tag), m_line.data(),
                                line_bytes(kind));
                }
            }
        },
        m_clk.cycles(cc.hit_cycles));
    return miss;
}

void context_cache::access(ctx_kind kind, uint32_t index, bool write, cache_port who) {
    const int k = static_cast<int>(kind);
    // MTT lines hold several page entries; the other tables one entry per line.
    const uint64_t tag = kind == ctx_kind::MTT ? index / (m_cfg.mtt_line_bytes / 8) : index;
    const cache_config& cc = k == 0 ? m_cfg.qpc : (k == 1 ? m_cfg.mpt : m_cfg.mtt);
    sc_core::sc_time start;
    const bool miss = lookup(kind, tag, write, who, start);
    // +hit_cycles: tag and data read (on a miss the tag read that finds it missing).
    m_clk.wait_until(start + m_clk.cycles(cc.hit_cycles));
    if (!miss) {
        return;
    }
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    m_dma.read_wait(dma_client::CONTEXT, line_addr(kind, tag), m_line.data(), line_bytes(kind));
    m_stats[k].stall_ps +=
        static_cast<uint64_t>((sc_core::sc_time_stamp() - t0).to_seconds() * 1e12 + 0.5);
}

void context_cache::access_mtt_run(uint32_t first, uint32_t last, uint32_t window, cache_port who) {
    const uint32_t per_line = mtt_entries_per_line();
    const uint64_t first_line = first / per_line;
    const uint64_t last_line = last / per_line;
    if (window <= 1 || first_line == last_line) {
        for (uint64_t l = first_line; l <= last_line; ++l) {
            access(ctx_kind::MTT, static_cast<uint32_t>(l * per_line), false, who);
        }
        return;
    }
    const int k = static_cast<int>(ctx_kind::MTT);
    auto& s = m_stats[k];
    // Timing: the lines are looked up in order, one per cycle on the port (pipelined: a hit
    // does not hold the next lookup). A line that misses is read hit_cycles after its lookup,
    // with at most `window` reads in flight: when the window is full the next read waits for
    // the oldest to complete. The requester goes on when the last line is in. Without the
    // window the misses were paid one after the other (access()).
    std::deque<sc_core::sc_time> in_flight;  // completion times of the outstanding reads
    sc_core::sc_time end = sc_core::SC_ZERO_TIME;
    sc_core::sc_time waited = sc_core::SC_ZERO_TIME;  // on reads (the stall)
    for (uint64_t line = first_line; line <= last_line; ++line) {
        sc_core::sc_time start;
        const bool miss = lookup(ctx_kind::MTT, line, false, who, start);
        const sc_core::sc_time looked_up = start + m_clk.cycles(m_cfg.mtt.hit_cycles);
        end = std::max(end, looked_up);
        if (!miss) {
            continue;
        }
        m_clk.wait_until(looked_up);
        while (!in_flight.empty() && in_flight.front() <= sc_core::sc_time_stamp()) {
            in_flight.pop_front();
        }
        if (in_flight.size() >= window) {
            const sc_core::sc_time t0 = sc_core::sc_time_stamp();
            m_clk.wait_until(in_flight.front());
            waited += sc_core::sc_time_stamp() - t0;
            in_flight.pop_front();
        }
        if (!in_flight.empty()) {
            ++s.prefetched;  // read while an earlier line of the run was still in flight
        }
        const sc_core::sc_time done =
            m_dma.read(dma_client::CONTEXT, line_addr(ctx_kind::MTT, line), m_line.data(),
                       line_bytes(ctx_kind::MTT));
        in_flight.push_back(done);
        end = std::max(end, done);
    }
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    if (end > t0) {
        m_clk.wait_until(end);
        waited += sc_core::sc_time_stamp() - t0;
    }
    s.stall_ps += static_cast<uint64_t>(waited.to_seconds() * 1e12 + 0.5);
}

sc_core::sc_time context_cache::read_mtt_line(uint64_t line, bool ahead, cache_port who,
                                              bool& miss) {
    // Timing: as one line of access_mtt_run: the lookup on the port, and a missing line's read
    // issued hit_cycles after it; the caller goes on at once (it only waits for the lookup of
    // a miss, to issue the read).
    sc_core::sc_time start;
    miss = lookup(ctx_kind::MTT, line, false, who, start);
    const sc_core::sc_time looked_up = start + m_clk.cycles(m_cfg.mtt.hit_cycles);
    if (!miss) {
        return looked_up;
    }
    if (ahead) {
        ++m_stats[static_cast<int>(ctx_kind::MTT)].prefetched;
    }
    m_clk.wait_until(looked_up);
    return m_dma.read(dma_client::CONTEXT, line_addr(ctx_kind::MTT, line), m_line.data(),
                      line_bytes(ctx_kind::MTT));
}

void context_cache::invalidate(ctx_kind kind, uint32_t index) {
    const uint64_t tag = kind == ctx_kind::MTT ? index / (m_cfg.mtt_line_bytes / 8) : index;
    m_caches[static_cast<int>(kind)].invalidate(tag);
}

}  // namespace rnic::hw
