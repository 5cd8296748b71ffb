// SPDX-License-Identifier: Apache-2.0
// MR/MTT translation.
#include "hw/translation/translation.h"

#include <algorithm>

#include "hw/hsi/hsi.h"

namespace rnic::hw {

const char* to_string(xlate_status s) {
    switch (s) {
        case xlate_status::OK:
            return "ok";
        case xlate_status::BAD_KEY:
            return "bad_key";
        case xlate_status::PD_MISMATCH:
            return "pd_mismatch";
        case xlate_status::ACCESS:
            return "access";
        case xlate_status::BOUNDS:
            return "bounds";
    }
    return "?";
}

translation_config parse_translation_config(config::reader r) {
    translation_config c;
    r.get("mpt_lookup_cycles", c.mpt_lookup_cycles, 0u, 1000u);
    r.get("mtt_lookup_cycles", c.mtt_lookup_cycles, 0u, 1000u);
    r.get("mtt_prefetch_lines", c.mtt_prefetch_lines, 0u, 256u);
    r.get("mtt_lookahead", c.mtt_lookahead);
    r.finish();
    return c;
}

translation::translation(sc_core::sc_module_name name, const translation_config& cfg,
                         const clock_domain& clk, context_store& contexts, sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_contexts(contexts)
    , m_arbiter(clk) {
    ctx.stats.add(this->name(), "lookups", m_stats.lookups, "count", "key lookups");
    ctx.stats.add(this->name(), "pages", m_stats.pages, "count", "MTT pages translated");
    ctx.stats.add(this->name(), "faults", m_stats.faults, "count",
                  "lookups refused: bad key, PD, rights or bounds");
    ctx.stats.add(this->name(), "lookahead_lines", m_stats.lookahead_lines, "count",
                  "MTT lines the look-ahead unit looked up for messages translated per packet");
    ctx.stats.add(this->name(), "lookahead_reads", m_stats.lookahead_reads, "count",
                  "of them, lines read from host memory (context cache misses)");
    ctx.stats.add(this->name(), "packet_waits", m_stats.packet_waits, "count",
                  "packets after a message's first, translated per packet, that waited for "
                  "MTT lines");
    ctx.stats.add(this->name(), "packet_wait_ps", m_stats.packet_wait_ps, "ps",
                  "time those packets waited");
    SC_HAS_PROCESS(translation);
    SC_THREAD(lookahead_thread);  // first runs at the first request: an idle NIC runs nothing
    sensitive << m_ahead_wake;
    dont_initialize();
    if (ctx.vcd != nullptr) {
        // Timing is closed form (no state to sample): the counters show when lookups happen.
        const std::string b = this->name();
        sc_core::sc_trace(ctx.vcd, m_stats.lookups, b + ".lookups");
        sc_core::sc_trace(ctx.vcd, m_stats.pages, b + ".pages");
        sc_core::sc_trace(ctx.vcd, m_stats.faults, b + ".faults");
    }
}

xlate_status translation::translate(uint32_t key, uint32_t pdn, uint64_t va, uint64_t len,
                                    uint32_t access, bool remote, std::vector<dma_segment>& out) {
    return translate_range(key, pdn, va, len, access, remote, va, len, nullptr, out);
}

xlate_status translation::translate_first(uint32_t key, uint32_t pdn, uint64_t va, uint64_t msg_len,
                                          uint32_t len, uint32_t access, bool remote, mtt_stream& s,
                                          std::vector<dma_segment>& out) {
    s.ahead = 0;
    s.gen = ++m_gen;  // what the look-ahead still has queued for the stream's last message: dropped
    s.first_ahead = s.requested = s.issued = s.end_line = 0;
    return translate_range(key, pdn, va, msg_len, access, remote, va,
                           std::min<uint64_t>(len, msg_len), &s, out);
}

void translation::stream_lines(const mpt_entry& mr, uint64_t offset, uint64_t len, uint64_t msg_end,
                               bool first, mtt_stream& s) {
    if (m_cache == nullptr || len == 0) {
        return;
    }
    // Timing (README "Look-ahead"): the packet's lines [a, b]; the lines from a on, up to
    // mtt_prefetch_lines of them (within the message), are kept asked of the look-ahead unit,
    // which reads them while the packets before them arrive. The first packet reads its own
    // lines as translate() would (the page list's start is known only now) after asking for
    // the rest; a later packet waits only for a line of its own that is not in yet.
    const uint64_t per_line = m_cache->mtt_entries_per_line();
    const uint64_t first_entry = mr.mtt_base + offset / hsi::PAGE_SIZE;
    const uint64_t last_entry = mr.mtt_base + (offset + len - 1) / hsi::PAGE_SIZE;
    const uint64_t a = first_entry / per_line;
    const uint64_t b = last_entry / per_line;
    const uint64_t window = std::max<uint32_t>(1, m_cfg.mtt_prefetch_lines);
    if (first) {
        s.end_line = (mr.mtt_base + (msg_end - 1) / hsi::PAGE_SIZE) / per_line + 1;
        s.first_ahead = s.requested = s.issued = b + 1;
        if (s.ready.size() != window + 4) {
            s.ready.assign(window + 4, sc_core::SC_ZERO_TIME);  // lines [a, requested) fit
        }
    }
    request_ahead(s, std::min(s.end_line, std::max(b + 1, a + window)), b);
    if (first) {
        m_cache->access_mtt_run(static_cast<uint32_t>(first_entry),
                                static_cast<uint32_t>(last_entry), m_cfg.mtt_prefetch_lines,
                                cache_port::TRANSLATION);
        return;
    }
    const sc_core::sc_time t0 = sim_now();
    for (uint64_t line = std::max(a, s.first_ahead); line <= b; ++line) {
        while (s.issued <= line) {
            sc_core::wait(m_ahead_issued);  // the unit has not looked it up yet
        }
        const sc_core::sc_time in = s.ready[line % s.ready.size()];
        if (in > sim_now()) {
            m_clk.wait_until(in);
        }
    }
    const uint64_t waited = m_clk.ps_of(sim_now() - t0);
    if (waited > 0) {
        ++m_stats.packet_waits;
        m_stats.packet_wait_ps += waited;
        m_cache->add_mtt_stall(waited);
    }
}

void translation::request_ahead(mtt_stream& s, uint64_t to, uint64_t need) {
    if (to <= s.requested) {
        return;
    }
    m_ahead_queue.push_back({&s, s.gen, s.requested, to, need});
    s.requested = to;
    m_ahead_wake.notify(sc_core::SC_ZERO_TIME);
}

void translation::lookahead_thread() {
    for (;;) {
        if (m_ahead_head == m_ahead_queue.size()) {
            m_ahead_queue.clear();
            m_ahead_head = 0;
            sc_core::wait();  // m_ahead_wake
            continue;
        }
        const ahead_request r = m_ahead_queue[m_ahead_head++];
        // Timing: one lookup per line on the context cache's port (TRANSLATION), a missing
        // line read hit_cycles after its lookup, at most mtt_prefetch_lines reads in flight
        // (a full window waits for its oldest), as context_cache::access_mtt_run; nobody
        // waits for the unit but a packet that needs a line it has not read yet.
        const size_t max_reads = std::max<uint32_t>(1, m_cfg.mtt_prefetch_lines);
        for (uint64_t line = r.from; line < r.to && r.s->gen == r.gen; ++line) {
            auto done = [](const sc_core::sc_time& t) { return t <= sc_core::sc_time_stamp(); };
            m_ahead_in_flight.erase(
                std::remove_if(m_ahead_in_flight.begin(), m_ahead_in_flight.end(), done),
                m_ahead_in_flight.end());
            if (m_ahead_in_flight.size() >= max_reads) {
                const auto oldest =
                    std::min_element(m_ahead_in_flight.begin(), m_ahead_in_flight.end());
                m_clk.wait_until(*oldest);
                m_ahead_in_flight.erase(oldest);
            }
            bool miss = false;
            const sc_core::sc_time in =
                m_cache->read_mtt_line(line, line > r.need, cache_port::TRANSLATION, miss);
            ++m_stats.lookahead_lines;
            if (miss) {
                ++m_stats.lookahead_reads;
                m_ahead_in_flight.push_back(in);
            }
            if (r.s->gen != r.gen) {
                break;  // its message ended while the line was looked up
            }
            r.s->ready[line % r.s->ready.size()] = in;
            r.s->issued = line + 1;
            m_ahead_issued.notify(sc_core::SC_ZERO_TIME);
        }
    }
}

void translation::fetch_ahead(const mpt_entry& mr, uint64_t offset, uint64_t len, uint64_t msg_end,
                              uint64_t& ahead) {
    // Entries are absolute MTT indices; `ahead` is one past the last entry fetched (0: none).
    if (m_cache == nullptr || len == 0) {
        return;
    }
    const uint64_t first = mr.mtt_base + offset / hsi::PAGE_SIZE;
    const uint64_t last = mr.mtt_base + (offset + len - 1) / hsi::PAGE_SIZE;
    if (last < ahead) {
        return;  // fetched ahead already
    }
    const uint64_t msg_last = mr.mtt_base + (msg_end - 1) / hsi::PAGE_SIZE;
    const uint64_t per_line = m_cache->mtt_entries_per_line();
    const uint64_t from = std::max(first, ahead);
    const uint64_t window = std::max<uint32_t>(1, m_cfg.mtt_prefetch_lines);
    const uint64_t to_line = std::max(last / per_line, from / per_line + window - 1);
    const uint64_t to = std::min(msg_last, (to_line + 1) * per_line - 1);
    m_cache->access_mtt_run(static_cast<uint32_t>(from), static_cast<uint32_t>(to),
                            m_cfg.mtt_prefetch_lines, cache_port::TRANSLATION);
    ahead = to + 1;
}

xlate_status translation::translate_next(uint32_t key, uint64_t msg_va, uint64_t msg_len,
                                         uint64_t va, uint32_t len, mtt_stream& s,
                                         std::vector<dma_segment>& out) {
    if (key == hsi::PRIVILEGED_KEY) {
        if (len > 0) {
            out.push_back({va, len});
        }
        return xlate_status::OK;
    }
    const mpt_entry* e = m_contexts.mpt(key);
    if (e == nullptr || !e->valid || va < msg_va || va + len > msg_va + msg_len) {
        return xlate_status::BAD_KEY;
    }
    const mpt_entry* mr = e;
    if (e->is_mw) {
        mr = m_contexts.mpt_slot(e->parent_index << 8);
        if (mr == nullptr || !mr->valid) {
            return xlate_status::BAD_KEY;
        }
    }
    const uint64_t base = mr->first_byte_offset - mr->base_va;  // va + base: offset in the MTT
    if (m_cfg.mtt_lookahead) {
        stream_lines(*mr, va + base, len, msg_va + msg_len + base, false, s);
    } else {
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        fetch_ahead(*mr, va + base, len, msg_va + msg_len + base, s.ahead);
        const uint64_t waited = m_clk.ps_of(sc_core::sc_time_stamp() - t0);
        if (waited > 0) {
            ++m_stats.packet_waits;
            m_stats.packet_wait_ps += waited;
        }
    }
    m_stats.pages += walk(*mr, va + base, len, out);
    return xlate_status::OK;
}

uint32_t translation::walk(const mpt_entry& mr, uint64_t offset, uint64_t left,
                           std::vector<dma_segment>& out) {
    uint32_t pages = 0;
    while (left > 0) {
        const uint64_t page = offset / hsi::PAGE_SIZE;
        const uint32_t in_page = static_cast<uint32_t>(offset % hsi::PAGE_SIZE);
        const uint32_t n =
            static_cast<uint32_t>(std::min<uint64_t>(left, hsi::PAGE_SIZE - in_page));
        const uint64_t bus = m_contexts.mtt(mr.mtt_base + static_cast<uint32_t>(page)) + in_page;
        if (!out.empty() && out.back().bus_addr + out.back().len == bus) {
            out.back().len += n;  // physically contiguous: one DMA segment
        } else {
            out.push_back({bus, n});
        }
        offset += n;
        left -= n;
        ++pages;
    }
    return pages;
}

xlate_status translation::translate_range(uint32_t key, uint32_t pdn, uint64_t va, uint64_t len,
                                          uint32_t access, bool remote, uint64_t part_va,
                                          uint64_t part_len, mtt_stream* s,
                                          std::vector<dma_segment>& out) {
    ++m_stats.lookups;
    // Timing: the lookup pipeline accepts one request per cycle; a request takes the MPT read
    // then one MTT read per page (pipelined, mtt_lookup_cycles for the first, 1 per page after).
    // Lookups of the same cycle (the transmit engine's and the receive path's) enter in a
    // fixed order, not in SystemC's process order: by requesting process name, so the receive
    // path (node.nic.recv_path.*) goes before the transmit engine (node.nic.tx_engine.*).
    sc_core::sc_time start;
    m_arbiter.request(0, [&] {
        start = std::max(sc_core::sc_time_stamp(), m_free);  // on an edge: sampled there
        m_free = start + m_clk.period();
    });
    auto fail = [&](xlate_status s) {
        ++m_stats.faults;
        m_clk.wait_until(start + m_clk.cycles(m_cfg.mpt_lookup_cycles));
        return s;
    };

    if (key == hsi::PRIVILEGED_KEY) {
        // Logical addresses from a LAM: local access only, no translation.
        if (remote) {
            return fail(xlate_status::BAD_KEY);
        }
        if (part_len > 0) {
            out.push_back({part_va, static_cast<uint32_t>(part_len)});
        }
        m_clk.wait_until(start + m_clk.cycles(m_cfg.mpt_lookup_cycles));
        return xlate_status::OK;
    }
    if (m_cache != nullptr) {
        m_cache->access(ctx_kind::MPT, hsi::key_index(key), false,
                        cache_port::TRANSLATION);  // stalls on a miss
    }
    const mpt_entry* e = m_contexts.mpt(key);
    if (e == nullptr || !e->valid) {
        return fail(xlate_status::BAD_KEY);
    }
    if (e->pdn != pdn) {
        return fail(xlate_status::PD_MISMATCH);
    }
    if ((access & XLATE_LOCAL_WRITE) && !(e->access & hsi::ACCESS_LOCAL_WRITE)) {
        return fail(xlate_status::ACCESS);
    }
    if ((access & XLATE_REMOTE_READ) && !(e->access & hsi::ACCESS_REMOTE_READ)) {
        return fail(xlate_status::ACCESS);
    }
    if ((access & XLATE_REMOTE_WRITE) && !(e->access & hsi::ACCESS_REMOTE_WRITE)) {
        return fail(xlate_status::ACCESS);
    }
    if (va < e->base_va || len > e->length || va - e->base_va > e->length - len) {
        return fail(xlate_status::BOUNDS);
    }
    // A memory window translates through the MR it is bound to.
    const mpt_entry* mr = e;
    if (e->is_mw) {
        mr = m_contexts.mpt_slot(e->parent_index << 8);
        if (mr == nullptr || !mr->valid) {
            return fail(xlate_status::BAD_KEY);
        }
    }
    // The pages of the part asked for ([va, va + len) itself but for the responder's WRITE
    // packets: translate_first).
    const uint64_t offset = part_va - mr->base_va + mr->first_byte_offset;
    if (s != nullptr) {
        const uint64_t msg_end = va - mr->base_va + mr->first_byte_offset + len;
        if (m_cfg.mtt_lookahead) {
            stream_lines(*mr, offset, part_len, msg_end, true, *s);
        } else {
            fetch_ahead(*mr, offset, part_len, msg_end, s->ahead);
        }
    } else if (m_cache != nullptr && part_len > 0) {
        // One MTT cache access per line of page entries the range touches; the lines of a
        // range spanning several are fetched together, up to mtt_prefetch_lines in flight.
        const uint32_t first = mr->mtt_base + static_cast<uint32_t>(offset / hsi::PAGE_SIZE);
        const uint32_t last =
            mr->mtt_base + static_cast<uint32_t>((offset + part_len - 1) / hsi::PAGE_SIZE);
        m_cache->access_mtt_run(first, last, m_cfg.mtt_prefetch_lines, cache_port::TRANSLATION);
    }
    const uint32_t pages = walk(*mr, offset, part_len, out);
    m_stats.pages += pages;
    const uint64_t cycles =
        m_cfg.mpt_lookup_cycles + (pages > 0 ? m_cfg.mtt_lookup_cycles + pages - 1 : 0);
    m_clk.wait_until(start + m_clk.cycles(cycles));
    return xlate_status::OK;
}

}  // namespace rnic::hw
