// SPDX-License-Identifier: Apache-2.0
// Lockstep send path: model and RTL compared beat by beat.
#include "hw/send_path/send_path_lockstep.h"

#include <cstdio>
#include <limits>

namespace rnic::hw {

namespace {
constexpr uint64_t NONE = std::numeric_limits<uint64_t>::max();

std::string hex2(int v) {
    char buf[16];
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

std::string frame_difference::describe() const {
    char buf[320];
    std::snprintf(buf, sizeof buf, "frame %llu (opcode 0x%02x, QP 0x%06x, PSN 0x%06x): %s",
                  static_cast<unsigned long long>(frame), opcode < 0 ? 0 : opcode, qp, psn,
                  what.c_str());
    std::string s = buf;
    if (byte_offset >= 0) {
        s += " at byte offset " + std::to_string(byte_offset) + ", expected " +
             (expected < 0 ? std::string("end of frame") : hex2(expected)) + ", got " +
             (got < 0 ? std::string("end of frame") : hex2(got));
    }
    s += " (last beat on edge " +
         (cycle_expected == NONE ? std::string("none") : std::to_string(cycle_expected)) +
         " expected, " + (cycle_got == NONE ? std::string("none") : std::to_string(cycle_got)) +
         " got)";
    return s;
}

void frame_comparator::add(std::deque<frame>& q, frame& cur, const frame_beat& b) {
    if (cur.bytes.empty() && cur.beat_problem.empty()) {
        cur.number = b.frame;
        cur.first_edge = b.cycle;
    }
    // Lanes 0..n-1: n = 64 except on the last beat, where the enables are contiguous from 0.
    const uint64_t k = b.keep;
    const bool contiguous = (k & (k + 1)) == 0 && k != 0;
    if ((!b.last && k != ~uint64_t{0}) || !contiguous) {
        if (cur.beat_problem.empty()) {
            char buf[96];
            std::snprintf(buf, sizeof buf, "keep 0x%016llx on beat %u%s",
                          static_cast<unsigned long long>(k), b.index,
                          b.last ? " (last)" : " (not last: must be all ones)");
            cur.beat_problem = buf;
        }
    }
    const int n = k == ~uint64_t{0} ? 64 : __builtin_popcountll(k);
    cur.bytes.insert(cur.bytes.end(), b.data.begin(), b.data.begin() + n);
    if (b.last) {
        cur.last_edge = b.cycle;
        q.push_back(std::move(cur));
        cur = frame{};
        drain();
    }
}

void frame_comparator::differ(frame_difference d) {
    ++m_differing;
    if (m_diffs.size() < MAX_REPORTED) {
        m_diffs.push_back(d);
    }
    if (on_difference) {
        on_difference(d);
    }
}

void frame_comparator::drain() {
    while (!m_exp.empty() && !m_act.empty()) {
        const frame& e = m_exp.front();
        const frame& a = m_act.front();
        frame_difference d;
        d.frame = e.number;
        if (e.bytes.size() >= 54) {
            d.opcode = e.bytes[42];
            d.qp = (uint32_t{e.bytes[47]} << 16) | (uint32_t{e.bytes[48]} << 8) | e.bytes[49];
            d.psn = (uint32_t{e.bytes[51]} << 16) | (uint32_t{e.bytes[52]} << 8) | e.bytes[53];
        }
        d.cycle_expected = e.last_edge;
        d.cycle_got = a.last_edge;
        const size_t n = std::min(e.bytes.size(), a.bytes.size());
        size_t i = 0;
        while (i < n && e.bytes[i] == a.bytes[i]) {
            ++i;
        }
        if (i < n || e.bytes.size() != a.bytes.size()) {
            d.what = i < n ? "data"
                           : "length " + std::to_string(a.bytes.size()) + ", expected " +
                                 std::to_string(e.bytes.size());
            d.byte_offset = static_cast<int64_t>(i);
            d.expected = i < e.bytes.size() ? e.bytes[i] : -1;
            d.got = i < a.bytes.size() ? a.bytes[i] : -1;
        } else if (!a.beat_problem.empty()) {
            d.what = a.beat_problem;
        }
        const int64_t delta = static_cast<int64_t>(a.last_edge) - static_cast<int64_t>(e.last_edge);
        if (delta != 0) {
            ++m_timing_differs;
        }
        if (m_compared == 0 || delta < m_min_delta) {
            m_min_delta = delta;
        }
        if (m_compared == 0 || delta > m_max_delta) {
            m_max_delta = delta;
        }
        if (d.what.empty() && m_check_timing && (delta > m_tolerance || -delta > m_tolerance)) {
            d.what = "timing: " + std::to_string(delta) + " edges from the model (tolerance " +
                     std::to_string(m_tolerance) + ")";
        }
        ++m_compared;
        if (!d.what.empty()) {
            differ(d);
        }
        m_exp.pop_front();
        m_act.pop_front();
    }
}

void frame_comparator::finish() {
    for (const frame& e : m_exp) {
        frame_difference d;
        d.frame = e.number;
        d.what = "missing frame";
        d.cycle_expected = e.last_edge;
        d.cycle_got = NONE;
        if (e.bytes.size() >= 54) {
            d.opcode = e.bytes[42];
            d.qp = (uint32_t{e.bytes[47]} << 16) | (uint32_t{e.bytes[48]} << 8) | e.bytes[49];
            d.psn = (uint32_t{e.bytes[51]} << 16) | (uint32_t{e.bytes[52]} << 8) | e.bytes[53];
        }
        differ(d);
    }
    for (const frame& a : m_act) {
        frame_difference d;
        d.frame = a.number;
        d.what = "extra frame (" + std::to_string(a.bytes.size()) + " bytes)";
        d.cycle_expected = NONE;
        d.cycle_got = a.last_edge;
        differ(d);
    }
    m_exp.clear();
    m_act.clear();
}

std::string frame_comparator::summary() const {
    return std::to_string(m_compared) + " frames compared, " + std::to_string(m_differing) +
           " with a difference; " + std::to_string(m_timing_differs) +
           " on other edges than the model (last beat " + std::to_string(m_min_delta) + " .. " +
           std::to_string(m_max_delta) + " edges)";
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

// divergence.json's common part: both edges (null where a beat is missing) and, for a byte
// difference, its offset and both values. `D`: beat_divergence or frame_difference.
template <typename D>
static void add_where(nlohmann::json& j, const D& d) {
    j["cycle_expected"] =
        d.cycle_expected == NONE ? nlohmann::json() : nlohmann::json(d.cycle_expected);
    j["cycle_got"] = d.cycle_got == NONE ? nlohmann::json() : nlohmann::json(d.cycle_got);
    if (d.byte_offset >= 0) {
        j["byte_offset"] = d.byte_offset;
        j["expected"] = d.expected;
        j["got"] = d.got;
    }
}

void send_path_lockstep::init(const send_path_config& cfg, const clock_domain& clk,
                              sim_context& ctx, const std::string& rtl_fst,
                              const rtl_factory& rtl) {
    m_ctx = &ctx;
    m_functional = cfg.lockstep.compare != "exact";
    m_compare = cfg.lockstep.compare;
    if (cfg.lockstep.compare == "tolerance") {
        m_frames.set_tolerance(cfg.lockstep.tolerance_cycles);
    }
    // The model's stats appear under this module's name, as with impl = "model".
    m_model_ctx.vcd = ctx.vcd;
    m_model_ctx.tracer = ctx.tracer;
    m_model = std::make_unique<send_path_model>("model", cfg, clk, m_out, m_model_ctx);
    register_send_path_stats(ctx.stats, name(), m_model->get_stats());
    ctx.stats.add(
        name(), "lockstep_frames_compared",
        [this] { return nlohmann::json(m_functional ? m_frames.compared() : m_cmp.compared()); },
        m_functional ? "frames" : "beats",
        "frames (functional) or beats (exact) model and RTL agreed on");
    ctx.stats.add(
        name(), "lockstep_timing_differs",
        [this] { return nlohmann::json(m_frames.timing_differs()); }, "frames",
        "frames the RTL handed over on another edge than the model (functional)");
    ctx.stats.add(
        name(), "lockstep_max_edge_delta",
        [this] { return nlohmann::json(std::max(m_frames.max_delta(), -m_frames.min_delta())); },
        "cycles", "largest difference of a frame's last-beat edge, RTL versus model (functional)");
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
        if (b.index == 0) {
            const auto& d = b.data;
            m_recent.push_back({b.frame,
                                {d[42], (uint32_t{d[47]} << 16) | (uint32_t{d[48]} << 8) | d[49],
                                 (uint32_t{d[51]} << 16) | (uint32_t{d[52]} << 8) | d[53]}});
            if (m_recent.size() > 64) {
                m_recent.pop_front();
            }
        }
        if (m_functional) {
            m_frames.expected(b);
        } else {
            m_cmp.expected(b);
        }
        if (m_observer) {
            m_observer(b);
        }
    });
    m_rtl->set_beat_observer([this](const frame_beat& b) {
        if (m_functional) {
            m_frames.actual(b);
        } else {
            m_cmp.actual(b);
        }
    });
    // The RTL gets exactly what the model's FIFOs accept, when they accept it.
    m_model->inputs().on_descriptor = [this](const tx_descriptor& d, uint64_t v) {
        m_rtl->inputs().mirror_descriptor(d, v);
    };
    m_model->inputs().on_payload = [this](const uint8_t* p, size_t n, uint64_t v) {
        m_rtl->inputs().mirror_payload(p, n, v);
    };
    m_cmp.on_divergence = [this](const beat_divergence& d) {
        nlohmann::json j = {
            {"compare", "exact"},
            {"what", d.what},
            {"frame", d.frame},
            {"beat", d.beat},
        };
        add_where(j, d);
        std::string pkt;
        for (const auto& [f, bth] : m_recent) {
            if (f == d.frame) {
                j["opcode"] = bth[0];
                j["qp"] = bth[1];
                j["psn"] = bth[2];
                char buf[80];
                std::snprintf(buf, sizeof buf, " (opcode 0x%02x, QP 0x%06x, PSN 0x%06x)", bth[0],
                              bth[1], bth[2]);
                pkt = buf;
            }
        }
        diverged(d.describe() + pkt, j);
    };
    m_frames.on_difference = [this](const frame_difference& d) {
        nlohmann::json j = {
            {"compare", m_compare}, {"what", d.what}, {"frame", d.frame},
            {"opcode", d.opcode},   {"qp", d.qp},     {"psn", d.psn},
        };
        add_where(j, d);
        diverged(d.describe(), j);
    };
}

void send_path_lockstep::diverged(const std::string& what, const nlohmann::json& detail) {
    if (!m_ctx->failures.empty()) {
        return;  // the run already failed; the first divergence is the one reported
    }
    m_rtl->dump_waveform_window();
    nlohmann::json j = detail;
    j["block"] = name();
    j["time_ns"] = sc_core::sc_time_stamp().to_seconds() * 1e9;
    m_ctx->outputs["divergence.json"] = j.dump(2) + "\n";
    m_ctx->fail(std::string(name()) + ": model and RTL diverge: " + what);
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
    m_frames.cut();  // frames cut by the reset end at different beats on the two sides
}

void send_path_lockstep::end_of_simulation() {
    if (m_functional) {
        m_frames.finish();
    } else {
        m_cmp.finish();
    }
}

}  // namespace rnic::hw
