// SPDX-License-Identifier: Apache-2.0
// Lockstep send path: model and RTL compared beat by beat.
#include "hw/send_path/send_path_lockstep.h"

#include <cstdio>
#include <limits>

namespace rnic::hw {

namespace {
constexpr uint64_t NONE = std::numeric_limits<uint64_t>::max();

std::string hex2(int v) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", v);
    return buf;
}
}  // namespace

std::string beat_divergence::describe() const {
    std::string s =
        "first divergence (" + what + ") at frame " + std::to_string(frame) + " beat " +
        std::to_string(beat) + ": cycle expected " +
        (cycle_expected == NONE ? std::string("none") : std::to_string(cycle_expected)) + ", got " +
        (cycle_got == NONE ? std::string("none") : std::to_string(cycle_got));
    if (byte_offset >= 0) {
        s += "; byte offset " + std::to_string(byte_offset) + " expected " + hex2(expected) +
             " got " + hex2(got);
    }
    return s;
}

void beat_comparator::expected(const frame_beat& b) {
    if (!m_diverged) {
        m_exp.push_back(b);
        drain();
    }
}

void beat_comparator::actual(const frame_beat& b) {
    if (!m_diverged) {
        m_act.push_back(b);
        drain();
    }
}

void beat_comparator::diverge(beat_divergence d) {
    if (m_diverged) {
        return;
    }
    m_diverged = true;
    m_div = std::move(d);
    if (on_divergence) {
        on_divergence(m_div);
    }
}

void beat_comparator::drain() {
    while (!m_diverged && !m_exp.empty() && !m_act.empty()) {
        const frame_beat& e = m_exp.front();
        const frame_beat& a = m_act.front();
        beat_divergence d;
        d.frame = e.frame;
        d.beat = e.index;
        d.cycle_expected = e.cycle;
        d.cycle_got = a.cycle;
        // Data first: a wrong byte is the more useful report even if timing also differs.
        for (int i = 0; i < 64; ++i) {
            const bool ke = (e.keep >> i) & 1, ka = (a.keep >> i) & 1;
            if (ke && ka && e.data[i] != a.data[i]) {
                d.what = "data";
                d.byte_offset = int64_t{64} * e.index + i;
                d.expected = e.data[i];
                d.got = a.data[i];
                break;
            }
        }
        if (d.what.empty() && e.keep != a.keep) {
            d.what = "keep";
        } else if (d.what.empty() && e.last != a.last) {
            d.what = "last";
        } else if (d.what.empty() && e.cycle != a.cycle) {
            d.what = "cycle";
        }
        if (!d.what.empty()) {
            diverge(d);
            return;
        }
        ++m_compared;
        m_exp.pop_front();
        m_act.pop_front();
    }
}

void beat_comparator::finish() {
    if (m_diverged) {
        return;
    }
    beat_divergence d;
    if (!m_exp.empty()) {
        d.what = "missing beat";
        d.frame = m_exp.front().frame;
        d.beat = m_exp.front().index;
        d.cycle_expected = m_exp.front().cycle;
        d.cycle_got = NONE;
        diverge(d);
    } else if (!m_act.empty() && m_act.back().last) {
        // Beats of a frame the RTL has not finished either are simply cut by the end of run.
        d.what = "extra beat";
        d.frame = m_act.front().frame;
        d.beat = m_act.front().index;
        d.cycle_expected = NONE;
        d.cycle_got = m_act.front().cycle;
        diverge(d);
    }
}

send_path_lockstep::send_path_lockstep(sc_core::sc_module_name name, const send_path_config& cfg,
                                       const clock_domain& clk, frame_output_if& out,
                                       sim_context& ctx, const std::string& rtl_fst,
                                       rtl_factory rtl)
    : sc_module(name)
    , m_out(out)
    , m_shadow(out) {
    init(cfg, clk, ctx, rtl_fst, rtl);
}

send_path_lockstep::send_path_lockstep(sc_core::sc_module_name name, const send_path_config& cfg,
                                       const clock_domain& clk, channel<fabric::eth_frame>& mac_tx,
                                       sim_context& ctx, const std::string& rtl_fst,
                                       rtl_factory rtl)
    : sc_module(name)
    , m_mac(std::make_unique<mac_fifo_output>(mac_tx, clk))
    , m_out(*m_mac)
    , m_shadow(*m_mac) {
    init(cfg, clk, ctx, rtl_fst, rtl);
}

void send_path_lockstep::init(const send_path_config& cfg, const clock_domain& clk,
                              sim_context& ctx, const std::string& rtl_fst,
                              const rtl_factory& rtl) {
    // The model's stats appear under this module's name, as with impl = "model".
    m_model_ctx.vcd = ctx.vcd;
    m_model_ctx.tracer = ctx.tracer;
    m_model = std::make_unique<send_path_model>("model", cfg, clk, m_out, m_model_ctx);
    register_send_path_stats(ctx.stats, name(), m_model->get_stats());
    // With waves on, the RTL keeps its recent pin history and writes only the window of edges
    // before the divergence is found (a whole-run waveform would be mostly agreement).
    m_rtl = rtl ? rtl(m_shadow, rtl_fst, !rtl_fst.empty())
                : make_send_path_rtl("rtl", cfg, clk, m_shadow, ctx, rtl_fst, !rtl_fst.empty());
    // The RTL's ready comes from an output the model fills at its own pace: no running ahead.
    m_rtl->set_run_ahead(false);
    m_model->set_beat_observer([this](const frame_beat& b) {
        if (b.last) {
            m_shadow.model_put_edge = b.cycle;  // reported just before the model's put
        }
        m_cmp.expected(b);
        if (m_observer) {
            m_observer(b);
        }
    });
    m_rtl->set_beat_observer([this](const frame_beat& b) { m_cmp.actual(b); });
    // The RTL gets exactly what the model's FIFOs accept, when they accept it.
    m_model->inputs().on_descriptor = [this](const tx_descriptor& d, uint64_t v) {
        m_rtl->inputs().mirror_descriptor(d, v);
    };
    m_model->inputs().on_payload = [this](const uint8_t* p, size_t n, uint64_t v) {
        m_rtl->inputs().mirror_payload(p, n, v);
    };
    m_cmp.on_divergence = [this](const beat_divergence& d) {
        m_rtl->dump_waveform_window();
        SC_REPORT_ERROR(name(), ("model and RTL diverge: " + d.describe()).c_str());
        sc_core::sc_stop();
    };
}

void send_path_lockstep::put_descriptor(const tx_descriptor& d) {
    m_model->put_descriptor(d);
}

void send_path_lockstep::put_payload(payload_chunk&& c) {
    m_model->put_payload(std::move(c));
}

void send_path_lockstep::reset(uint32_t cycles) {
    m_model->reset(cycles);
    m_rtl->reset(cycles);
}

void send_path_lockstep::end_of_simulation() {
    m_cmp.finish();
}

}  // namespace rnic::hw
