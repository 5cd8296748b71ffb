// SPDX-License-Identifier: Apache-2.0
// RTL wrapper of the send path.
#include "rtl/send_path/send_path_rtl.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include "hw/roce/roce.h"
#include "hw/send_path/send_path.h"
#include "hw/send_path/send_path_packets.h"

namespace rnic::rtl {

namespace {
constexpr uint64_t NONE = std::numeric_limits<uint64_t>::max();
}

send_path_rtl::send_path_rtl(sc_core::sc_module_name name, const hw::send_path_config& cfg,
                             const hw::clock_domain& clk, hw::frame_output_if& out,
                             hw::sim_context& ctx, const send_path_core_factory& core,
                             const std::string& fst_path, bool window)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_out(out)
    , m_in(std::string(this->name()) + ".in", cfg, clk)
    , m_fst_path(fst_path)
    , m_window(window && !fst_path.empty()) {
    init(ctx, core);
}

send_path_rtl::send_path_rtl(sc_core::sc_module_name name, const hw::send_path_config& cfg,
                             const hw::clock_domain& clk, hw::channel<fabric::eth_frame>& mac_tx,
                             hw::sim_context& ctx, const send_path_core_factory& core,
                             const std::string& fst_path)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_mac(std::make_unique<hw::mac_fifo_output>(mac_tx, clk))
    , m_out(*m_mac)
    , m_in(std::string(this->name()) + ".in", cfg, clk)
    , m_fst_path(fst_path) {
    init(ctx, core);
}

send_path_rtl::~send_path_rtl() {
    if (m_core) {
        m_core->trace_close();
    }
    if (m_shadow && !m_window_written) {
        m_window_written = true;
        m_shadow->trace_open(m_fst_path);
        for (const auto& r : m_history) {
            replay(r, true);
        }
        m_shadow->trace_close();
    }
}

void send_path_rtl::init(hw::sim_context& ctx, const send_path_core_factory& core) {
    m_tracer = ctx.tracer;
    m_ctx = &ctx;
    m_quiet_limit = m_cfg.rtl.quiescent_edges;
    m_free_clock = m_cfg.rtl.clock == "free";
    m_core = core(!m_fst_path.empty());
    m_tracing = !m_fst_path.empty() && !m_window;
    if (m_window) {
        m_shadow = core(true);
        m_shadow->set_clk(false);
        m_shadow->set_rst_n(false);
        m_shadow->set_fr_ready(true);
        m_shadow->eval();
        m_shadow->set_rst_n(true);
        m_shadow->eval();
    }
    m_pending_beats.reserve(MAX_FRAME_BYTES / 64 + 1);
    m_pl_shown = false;
    m_half_ps = m_clk.period_ps() / 2;
    m_edge_units = m_clk.period_ps() * sc_core::sc_time(1, sc_core::SC_PS).value();
    SC_HAS_PROCESS(send_path_rtl);
    SC_THREAD(clock_thread);
    hw::register_send_path_stats(ctx.stats, name(), m_stats);
    ctx.stats.add(name(), "clocked_edges", m_clocked, "cycles",
                  "edges the RTL was evaluated on (idle edges are skipped)");
    ctx.stats.add(name(), "rule_violations", m_violations, "count",
                  "contract rules the RTL broke (quiescence, stream rules, malformed frames)");
    ctx.stats.add(name(), "malformed_frames", m_malformed, "count",
                  "frames the RTL sent that do not parse (lengths, checksum, pad, ICRC)");
    if (ctx.vcd != nullptr) {
        m_in.trace(ctx.vcd, name());
    }
}

void send_path_rtl::end_of_simulation() {
    m_core->trace_close();
    // Window mode with no divergence: the window is the end of the run.
    dump_waveform_window();
}

void send_path_rtl::replay(const pin_record& r, bool dump) {
    send_path_core& c = *m_shadow;
    const uint64_t t_ps = r.edge * m_clk.period_ps();
    if (r.reset) {
        c.set_clk(false);
        c.set_rst_n(false);
        c.eval();
        if (dump) {
            c.trace_dump(t_ps);
        }
        c.set_rst_n(true);
        c.eval();
        return;
    }
    if (r.new_desc) {
        c.set_desc(r.dv, r.desc);
    }
    if (r.new_pl) {
        std::copy(r.pl.begin(), r.pl.end(), c.payload_lanes());
        c.set_payload_meta(r.keep, r.last);
    }
    send_path_core::outputs o;
    c.settle(r.dv, r.pv, r.fr, o);
    if (dump) {
        c.trace_dump(t_ps - m_half_ps);
    }
    c.rise(o);
    if (dump) {
        c.trace_dump(t_ps);
    }
}

void send_path_rtl::dump_waveform_window() {
    if (!m_window || m_window_written) {
        return;
    }
    m_window_written = true;
    m_shadow->trace_open(m_fst_path);
    for (const auto& r : m_history) {
        replay(r, true);
    }
    m_history.clear();
    m_shadow->trace_close();
    SC_REPORT_INFO_VERB(name(), ("RTL waveform window written to " + m_fst_path).c_str(),
                        sc_core::SC_LOW);
}

std::string send_path_rtl::segment_refusal(const hw::tx_descriptor& d) const {
    return std::string(name()) + ": a descriptor of packets " + std::to_string(d.first_packet) +
           " .. " + std::to_string(hw::segment_end(d) - 1) + " of a " +
           std::to_string(hw::packet_count(d)) + "-packet " + hw::to_string(d.kind) +
           " message (PSN " + std::to_string(d.psn) +
           ") has no form on the RTL send path's descriptor pins, which carry whole messages "
           "(rtl/send_path/CONTRACT.md); round_robin, selective_repeat and TIMELY's "
           "segment_bytes need rnic.send_path.impl \"model\"";
}

void send_path_rtl::reset(uint32_t cycles) {
    const uint64_t r = hw::edge_after(m_clk, sc_core::sc_time_stamp());
    // Beats of the unfinished frame that crossed before the reset edge did leave; beats the
    // wrapper evaluated ahead of time at or after it never happened.
    for (const auto& pb : m_pending_beats) {
        if (pb.cycle < r && m_observer) {
            m_observer(pb);
        }
    }
    m_pending_beats.clear();
    m_in.clear();
    m_desc_seq = m_pl_msg = m_out_msg = 0;
    m_pl_beat = m_out_pkt = m_out_beat = 0;
    m_span_from = m_span_end = 0;
    m_span_data = nullptr;
    m_pl_de = nullptr;
    m_frame_len = 0;
    m_frame_no = 0;
    m_desc_shown = m_pl_shown = false;
    m_held = false;
    m_reset_pending = true;
    m_reset_edge = r;
    m_reset_cycles = cycles;
    m_release_edge = r + cycles;
    m_reset_event.notify(sc_core::SC_ZERO_TIME);
}

void send_path_rtl::apply_reset() {
    // Asynchronous reset, held over the reset edges (the clock is stopped meanwhile).
    const uint64_t t = m_reset_edge * m_clk.period_ps();
    m_core->set_clk(false);
    m_core->set_rst_n(false);
    m_core->set_desc_valid(false);
    m_core->set_payload_valid(false);
    m_core->eval();
    m_core->trace_dump(t);
    m_core->set_rst_n(true);
    m_core->eval();
    m_reset_pending = false;
    if (m_window && !m_window_written) {
        pin_record r;
        r.edge = m_reset_edge;
        r.reset = true;
        m_history.push_back(r);
    }
    m_fr_valid_after = m_core->fr_valid();
    m_desc_ready_after = m_core->desc_ready();
    m_pl_ready_after = m_core->pl_ready();
    m_no_pop_before_edge = 0;
    m_last_edge = m_release_edge - 1;
    m_last_handshake = m_last_edge;
    m_pin_dv = m_pin_pv = false;
}

bool send_path_rtl::next_payload_beat(uint64_t& valid_edge) {
    for (;;) {
        if (m_pl_msg < m_in.oldest_descriptor()) {
            m_pl_msg = m_in.oldest_descriptor();
            m_pl_beat = 0;
        }
        if (m_pl_de == nullptr || m_pl_de_seq != m_pl_msg) {
            if (!m_in.has_descriptor(m_pl_msg)) {
                return false;
            }
            m_pl_de = &m_in.descriptor(m_pl_msg);  // in place until released (m_pl_msg passed it)
            m_pl_de_seq = m_pl_msg;
        }
        const auto& de = *m_pl_de;
        if (!hw::carries_payload(de.desc) || uint64_t{m_pl_beat} * 64 >= de.desc.length) {
            ++m_pl_msg;
            m_pl_beat = 0;
            continue;
        }
        const uint64_t from = de.payload_offset + uint64_t{m_pl_beat} * 64;
        const uint64_t end = de.payload_offset + de.desc.length;
        const uint64_t to = std::min<uint64_t>(from + 64, end);
        m_beat_from = from;
        m_beat_n = static_cast<uint32_t>(to - from);
        m_beat_last = to == end;
        if (from < m_span_from || to > m_span_end) {
            const auto span = m_in.payload_at(from);
            m_span_data = span.data;
            m_span_from = from;
            m_span_end = from + span.bytes;
            m_span_edge = span.valid_edge;
        }
        if (to <= m_span_end) {
            valid_edge = m_span_edge;  // one chunk holds the whole beat
            return true;
        }
        if (m_in.payload_end() < to) {
            return false;
        }
        valid_edge = m_in.payload_valid_edge(from, to);
        return true;
    }
}

uint64_t send_path_rtl::wait_for_change(uint64_t e) {
    for (;;) {
        uint64_t cand = NONE;
        if (m_reset_pending) {
            cand = std::max(m_reset_edge, e);
        }
        // A quiescent RTL only reacts to a new item on a stream whose ready is high (ready
        // never depends on valid, CONTRACT.md), so only those items and puts wake it.
        bool want_put = false;
        if (m_desc_ready_after && !m_desc_shown) {
            if (m_in.has_descriptor(m_desc_seq)) {
                const uint64_t v = std::max(m_in.descriptor(m_desc_seq).valid_edge, m_release_edge);
                cand = std::min(cand, std::max(v, e));
            } else {
                want_put = true;
            }
        }
        uint64_t v = 0;
        if (m_pl_ready_after && !m_pl_shown) {
            if (next_payload_beat(v)) {
                cand = std::min(cand, std::max(v, e));
            } else {
                want_put = true;
            }
        }
        const sc_core::sc_event* ready_ev = nullptr;
        if (m_fr_valid_after) {
            const uint64_t r = m_out.peek_ready(e, m_out_beat == 0);
            if (r != NONE) {
                cand = std::min(cand, r);
            } else {
                ready_ev = m_out.ready_event();
            }
        }
        sc_core::sc_event_or_list evs;
        if (want_put) {
            evs |= m_in.input_event();
        }
        evs |= m_reset_event;
        if (ready_ev != nullptr) {
            evs |= *ready_ev;
        }
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        if (cand != NONE) {
            const sc_core::sc_time t = hw::time_of_edge(m_clk, cand);
            if (t <= now) {
                return cand;
            }
            m_in.listen(want_put);
            sc_core::wait(t - now, evs);
            m_in.unlisten(want_put);
            if (sc_core::sc_time_stamp() == t) {
                return cand;
            }
        } else {
            m_in.listen(want_put);
            sc_core::wait(evs);
            m_in.unlisten(want_put);
        }
        // Woken by an event: something may be usable from the edge at or after now.
        e = std::max(e, m_clk.cycle_of(sc_core::sc_time_stamp()));
        if (m_fr_valid_after && ready_ev != nullptr &&
            m_out.peek_ready(e, m_out_beat == 0) != NONE) {
            return e;
        }
    }
}

void send_path_rtl::clock_thread() {
    if (m_tracing) {
        m_core->trace_open(m_fst_path);
    }
    // Power-on reset before edge 1.
    m_core->set_clk(false);
    m_core->set_rst_n(false);
    m_core->set_desc_valid(false);
    m_core->set_payload_valid(false);
    m_core->set_fr_ready(true);
    m_core->eval();
    m_core->trace_dump(0);
    m_core->set_rst_n(true);
    m_core->eval();
    m_desc_ready_after = m_core->desc_ready();
    m_pl_ready_after = m_core->pl_ready();
    m_quiet = m_quiet_limit;
    uint64_t e = 1;
    for (;;) {
        if (m_quiet >= m_quiet_limit && !m_free_clock) {
            // Quiescent: stop the clock until an input the RTL reacts to changes. On restart,
            // the first stopped edges are evaluated with the pins unchanged: by the contract
            // nothing changes on them, and an RTL that still had work inside is caught.
            const uint64_t from = e;
            e = wait_for_change(e);
            if (!(m_reset_pending && e >= m_reset_edge) &&
                !check_stopped_edges(
                    from, std::min<uint64_t>(e, from + m_cfg.rtl.quiescence_check_edges))) {
                return;  // the run failed
            }
        } else if (!m_run_ahead || m_quiet >= m_quiet_limit) {
            sync_to(e);  // free clock: idle edges in simulated time, one by one
        }
        if (m_reset_pending && e >= m_reset_edge) {
            const uint64_t at = e;
            apply_reset();
            e = std::max(at + 1, m_release_edge);
            m_quiet = m_quiet_limit;
            continue;
        }
        if (edge(e)) {
            ++e;
        }
        if (m_violations > 0 && m_stop_on_violation) {
            return;  // the run failed; the RTL is not clocked any more
        }
    }
}

bool send_path_rtl::check_stopped_edges(uint64_t from, uint64_t to) {
    for (uint64_t c = from; c < to; ++c) {
        send_path_core::outputs o;
        m_core->settle(m_pin_dv, m_pin_pv, m_pin_fr, o);
        const uint64_t t_ps = c * m_clk.period_ps();
        if (m_tracing) {
            m_core->trace_dump(t_ps - m_half_ps);
        }
        if (m_window && !m_window_written) {
            pin_record& r = m_history.emplace_back();
            r.edge = c;
            r.dv = m_pin_dv;
            r.pv = m_pin_pv;
            r.fr = m_pin_fr;
            while (m_history.size() > WINDOW_EDGES) {
                replay(m_history.front(), false);
                m_history.pop_front();
            }
        }
        // The same accounting as a skipped edge (edge()).
        if (m_fr_valid_after) {
            ++m_stats.stall_backpressure_cycles;
        } else if (m_out_beat > 0) {
            ++m_stats.stall_payload_cycles;
        }
        m_core->rise(o);
        ++m_clocked;
        if (m_tracing) {
            m_core->trace_dump(t_ps);
        }
        m_last_edge = c;
        const char* pin = o.fr_valid != m_fr_valid_after       ? "fr_valid_o"
                          : o.desc_ready != m_desc_ready_after ? "desc_ready_o"
                          : o.pl_ready != m_pl_ready_after     ? "pl_ready_o"
                                                               : nullptr;
        if (pin != nullptr) {
            const uint64_t quiet = c - m_last_handshake;
            violation(c, "quiescence",
                      std::string(pin) +
                          (o.fr_valid != m_fr_valid_after ? (o.fr_valid ? " rose" : " fell")
                                                          : " changed") +
                          " on edge " + std::to_string(c) + ", " + std::to_string(quiet) +
                          " edges after the last handshake (edge " +
                          std::to_string(m_last_handshake) +
                          ") with no input change, while the wrapper had stopped the clock after "
                          "rnic.send_path.rtl.quiescent_edges = " +
                          std::to_string(m_quiet_limit) +
                          " quiet edges: the RTL still had work inside and would leave it late. "
                          "Set rnic.send_path.rtl.quiescent_edges to at least " +
                          std::to_string(quiet) + " or rnic.send_path.rtl.clock = \"free\"");
            if (m_stop_on_violation) {
                return false;
            }
            m_fr_valid_after = o.fr_valid;  // going on: the RTL's outputs as they are
            m_desc_ready_after = o.desc_ready;
            m_pl_ready_after = o.pl_ready;
            return true;
        }
    }
    return true;
}

void send_path_rtl::violation(uint64_t edge, const std::string& rule, const std::string& what) {
    ++m_violations;
    const std::string msg = std::string(name()) + ": RTL broke the " + rule +
                            " rule (rtl/send_path/CONTRACT.md) at edge " + std::to_string(edge) +
                            ": " + what;
    if (!m_stop_on_violation) {
        if (m_violation_log.size() < 100) {
            m_violation_log.push_back(msg);
        }
        return;
    }
    if (m_violations == 1) {
        m_ctx->fail(msg);
        dump_waveform_window();
    }
}

bool send_path_rtl::sync_to(uint64_t e) {
    const sc_core::sc_time t = hw::time_of_edge(m_clk, e);
    while (sc_core::sc_time_stamp() < t) {
        sc_core::wait(t - sc_core::sc_time_stamp(), m_reset_event);
        if (m_reset_pending && e >= m_reset_edge) {
            return false;
        }
    }
    return !(m_reset_pending && e >= m_reset_edge);
}

bool send_path_rtl::wait_for_output(uint64_t e) {
    // The frame stream is held by a full downstream FIFO that only a pop can free. Rather
    // than stepping edge by edge, wait once (up to the quiescence horizon) for the pop; edges
    // whose time passed before it saw the output held.
    const sc_core::sc_time t = hw::time_of_edge(m_clk, e + m_quiet_limit);
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    if (t > now) {
        sc_core::wait(t - now, *m_out.ready_event() | m_reset_event);
    }
    if (m_reset_pending && e >= m_reset_edge) {
        return false;
    }
    m_no_pop_before_edge = m_clk.cycle_of(sc_core::sc_time_stamp());
    return true;
}

bool send_path_rtl::edge(uint64_t e) {
    // Inputs for this edge. Running ahead of simulated time is exact as long as nothing that
    // is not yet known can change them: when the RTL asks for an item of a stream that has not
    // been put yet, the wrapper first waits until the edge's time and looks again; when a
    // held frame beat could be released by the downstream, it waits for that (or the edge).
    bool dv = false, pv = false, fr = false;
    bool new_desc = false, new_pl = false;
    send_path_core::outputs o;
    for (;;) {
        const bool at_time = sc_core::sc_time_stamp().value() >= e * m_edge_units;
        // An item on the pins stays there until its handshake.
        dv = m_desc_shown;
        const bool desc_known = dv || m_in.has_descriptor(m_desc_seq);
        if (!dv && desc_known) {
            const auto& de = m_in.descriptor(m_desc_seq);
            if (std::max(de.valid_edge, m_release_edge) <= e) {
                if (hw::is_segment(de.desc)) {
                    // The pins carry whole messages only (a descriptor mirrored by lockstep
                    // bypasses put_descriptor's check).
                    violation(e, "whole-message descriptor", segment_refusal(de.desc));
                    if (m_stop_on_violation) {
                        return false;
                    }
                }
                dv = true;
                m_core->set_desc(true, de.desc);
                m_desc_shown = true;
                new_desc = true;
            }
        }
        pv = m_pl_shown;
        uint64_t v = 0;
        const bool pl_known = pv || next_payload_beat(v);
        if (!pv && pl_known && v <= e) {
            const size_t n = m_beat_n;
            uint8_t* lanes = m_core->payload_lanes();
            if (m_beat_from + n <= m_span_end) {
                std::memcpy(lanes, m_span_data + (m_beat_from - m_span_from), n);
            } else {
                m_in.copy_payload(m_beat_from, n, lanes);  // the beat spans two chunks
            }
            if (n < 64) {
                std::fill(lanes + n, lanes + 64, uint8_t{0});
            }
            m_core->set_payload_meta(n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1, m_beat_last);
            pv = true;
            m_pl_shown = true;
            new_pl = true;
        }
        // Ready is the downstream's own state (it never looks at valid), so all inputs are set
        // before one evaluation of the combinational paths; the rising edge is the second.
        const bool frame_start = m_out_beat == 0;
        const bool known_held = e < m_no_pop_before_edge;  // see wait_for_output()
        if (known_held) {
            fr = false;
        } else {
            fr = at_time ? m_out.ready_at(e, frame_start) : m_out.peek_ready(e, frame_start) == e;
        }
        m_core->settle(dv, pv, fr, o);
        if (at_time) {
            break;
        }
        const bool input_unsure =
            (!desc_known && !dv && o.desc_ready) || (!pl_known && !pv && o.pl_ready);
        // A not-ready downstream that a pop may release before this edge: its ready may
        // matter to the RTL's combinational paths even with no beat valid.
        const bool output_unsure = !fr && !known_held && m_out.ready_event() != nullptr;
        if (!input_unsure && !output_unsure) {
            break;
        }
        if (!(input_unsure ? sync_to(e) : wait_for_output(e))) {
            return false;  // a reset came first
        }
    }
    // Edges skipped since the last evaluated one had their outputs and inputs unchanged.
    const uint64_t skipped = e - m_last_edge - 1;
    if (skipped > 0) {
        if (m_fr_valid_after) {
            m_stats.stall_backpressure_cycles += skipped;
        } else if (m_out_beat > 0) {
            m_stats.stall_payload_cycles += skipped;
        }
    }
    const uint64_t t_ps = e * m_clk.period_ps();
    if (m_tracing) {
        m_core->trace_dump(t_ps - m_half_ps);
    }
    if (m_window && !m_window_written) {
        // Keep this edge's pins; the replay instance runs WINDOW_EDGES edges behind.
        pin_record& r = m_history.emplace_back();
        r.edge = e;
        r.dv = dv;
        r.pv = pv;
        r.fr = fr;
        if (new_desc) {
            r.new_desc = true;
            r.desc = m_in.descriptor(m_desc_seq).desc;
        }
        if (new_pl) {
            r.new_pl = true;
            const uint8_t* lanes = m_core->payload_lanes();
            std::copy(lanes, lanes + 64, r.pl.begin());
            const size_t n = m_beat_n;
            r.keep = n == 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
            r.last = m_beat_last;
        }
        while (m_history.size() > WINDOW_EDGES) {
            replay(m_history.front(), false);
            m_history.pop_front();
        }
    }

    const bool hs_d = dv && o.desc_ready;
    const bool hs_p = pv && o.pl_ready;
    const bool hs_f = o.fr_valid && fr;
    // Stream rule (CONTRACT.md): a frame beat offered and not taken stays on the pins,
    // unchanged, until its handshake. Read only on edges after one that held the stream.
    if (m_held) {
        std::array<uint8_t, 64> now{};
        uint64_t k = 0;
        bool l = false;
        if (o.fr_valid) {
            m_core->fr_beat(now.data(), k, l);
        }
        const bool data_same = o.fr_valid && k == m_held_keep && l == m_held_last &&
                               std::equal(now.begin(), now.end(), m_held_data.begin());
        if (!data_same) {
            violation(e, "stream (a valid beat holds until ready)",
                      std::string(o.fr_valid ? "fr_data_o/fr_keep_o/fr_last_o changed"
                                             : "fr_valid_o fell") +
                          " while beat " + std::to_string(m_out_beat) + " of frame " +
                          std::to_string(m_frame_no) + ", offered on edge " +
                          std::to_string(m_held_edge) +
                          ", had not been taken (fr_ready_i low since)");
            m_held = false;
        }
    }
    if (m_violations > 0 && m_stop_on_violation) {
        return true;  // the run failed
    }
    if (o.fr_valid && !fr) {
        if (!m_held) {
            m_held = true;
            m_held_edge = e;
            m_core->fr_beat(m_held_data.data(), m_held_keep, m_held_last);
        }
    } else {
        m_held = false;
    }
    if (o.fr_valid && !fr) {
        ++m_stats.stall_backpressure_cycles;
    } else if (!o.fr_valid && m_out_beat > 0) {
        ++m_stats.stall_payload_cycles;
    }
    // The beat goes straight into the frame being received.
    uint64_t keep = 0;
    bool last = false;
    const size_t off = m_frame_len;
    if (hs_f) {
        m_core->fr_beat(m_frame_buf.data() + off, keep, last);
    }

    m_core->rise(o);
    ++m_clocked;
    if (m_tracing) {
        m_core->trace_dump(t_ps);
    }
    // The longest run of edges without a handshake after which an output still changed: the
    // quiescence window this RTL needs (send_path_calibrate reports it).
    if (!(hs_d || hs_p || hs_f) &&
        (o.fr_valid != m_fr_valid_after || o.desc_ready != m_desc_ready_after ||
         o.pl_ready != m_pl_ready_after)) {
        m_max_quiet_change = std::max<uint64_t>(m_max_quiet_change, e - m_last_handshake);
    }
    m_fr_valid_after = o.fr_valid;
    m_desc_ready_after = o.desc_ready;
    m_pl_ready_after = o.pl_ready;
    m_last_edge = e;
    m_pin_dv = dv && !hs_d;
    m_pin_pv = pv && !hs_p;
    m_pin_fr = fr;
    if (hs_d || hs_p || hs_f) {
        m_last_handshake = e;
    }

    if (hs_d) {
        ++m_desc_seq;
        m_desc_shown = false;
        ++m_stats.messages;
    }
    if (hs_p) {
        m_pl_shown = false;
        ++m_pl_beat;
        if (m_beat_last) {
            ++m_pl_msg;
            m_pl_beat = 0;
        }
    }
    m_quiet = (hs_d || hs_p || hs_f) ? 0 : m_quiet + 1;
    if (hs_f) {
        if (m_out_beat == 0) {
            m_frame_first_edge = e;
        }
        // Every beat but a frame's last is full (no popcount call per beat).
        m_frame_len =
            off +
            (keep == ~uint64_t{0} ? size_t{64} : static_cast<size_t>(__builtin_popcountll(keep)));
        if (m_observer) {
            hw::frame_beat& b = m_pending_beats.emplace_back();
            std::copy(m_frame_buf.begin() + static_cast<std::ptrdiff_t>(off),
                      m_frame_buf.begin() + static_cast<std::ptrdiff_t>(m_frame_len),
                      b.data.begin());
            b.keep = keep;
            b.last = last;
            b.cycle = e;
            b.frame = m_frame_no;
            b.index = m_out_beat;
        }
        ++m_out_beat;
        if (m_frame_len + 64 > m_frame_buf.size()) {
            SC_REPORT_ERROR(name(), "the RTL sent a frame longer than the largest RoCEv2 frame");
            m_frame_len = 0;
        }
        if (last) {
            // The frame leaves (and its FIFO space returns) at the time of its last edge.
            if (!sync_to(e)) {
                return true;  // edge done; the reset drops this frame
            }
            complete_frame(e);
        }
    }
    return true;
}

void send_path_rtl::complete_frame(uint64_t e) {
    if (m_observer) {
        for (const auto& pb : m_pending_beats) {
            m_observer(pb);
        }
    }
    m_pending_beats.clear();
    fabric::eth_frame f;
    f.data.assign(m_frame_buf.begin(),
                  m_frame_buf.begin() + static_cast<std::ptrdiff_t>(m_frame_len));
    m_frame_len = 0;
    m_out_beat = 0;
    ++m_frame_no;
    if (!m_in.has_descriptor(m_out_msg)) {
        SC_REPORT_ERROR(name(), "the RTL sent a frame for no outstanding message");
        return;
    }
    const auto& de = m_in.descriptor(m_out_msg);
    const hw::packet_plan plan = hw::plan_packet(de.desc, m_out_pkt);
    f.flow_id = de.desc.flow_id;
    // A frame the peer could not parse is the send path's fault: count it and fail the run
    // naming the frame (the model is trusted; the MAC stomps deliberately only after this).
    roce::parsed_frame pf;
    const roce::parse_error pe = roce::parse_frame(f.data.data(), f.data.size(), pf);
    if (pe != roce::parse_error::NONE) {
        ++m_malformed;
        char what[256];
        std::snprintf(what, sizeof what,
                      "frame %llu (message %llu packet %u: opcode 0x%02x, QP 0x%06x, PSN 0x%06x, "
                      "%zu bytes, handshake edges %llu..%llu) does not parse: %s",
                      static_cast<unsigned long long>(m_frame_no - 1),
                      static_cast<unsigned long long>(m_out_msg), m_out_pkt, plan.opcode,
                      de.desc.dest_qpn & 0xFFFFFFu, (de.desc.psn + m_out_pkt) & 0xFFFFFFu,
                      f.data.size(), static_cast<unsigned long long>(m_frame_first_edge),
                      static_cast<unsigned long long>(e), roce::to_string(pe));
        violation(e, "packet format", what);
    }
    if (m_tracer != nullptr) {  // the same timeline slice as the model's
        m_tracer->slice(name(), roce::info(plan.opcode).name, f.flow_id,
                        hw::time_of_edge(m_clk, m_frame_first_edge),
                        hw::time_of_edge(m_clk, e) + m_clk.period());
    }
    m_stats.count_frame(f.data.size() > 42 ? f.data[42] : 0, f.data.size());
    m_in.release_payload(plan.payload_len);
    if (plan.last) {
        m_in.release_descriptor();
        ++m_out_msg;
        m_out_pkt = 0;
    } else {
        ++m_out_pkt;
    }
    m_out.put_frame(std::move(f));
}

}  // namespace rnic::rtl

namespace rnic::hw {

std::unique_ptr<send_path_unit> make_send_path_rtl(const char* name, const send_path_config& cfg,
                                                   const clock_domain& clk,
                                                   channel<fabric::eth_frame>& mac_tx,
                                                   sim_context& ctx, const std::string& rtl_fst) {
    return std::make_unique<rtl::send_path_rtl>(name, cfg, clk, mac_tx, ctx,
                                                rtl::make_send_path_core, rtl_fst);
}

std::unique_ptr<send_path_unit> make_send_path_rtl(const char* name, const send_path_config& cfg,
                                                   const clock_domain& clk, frame_output_if& out,
                                                   sim_context& ctx, const std::string& rtl_fst,
                                                   bool window) {
    return std::make_unique<rtl::send_path_rtl>(name, cfg, clk, out, ctx, rtl::make_send_path_core,
                                                rtl_fst, window);
}

}  // namespace rnic::hw
