// SPDX-License-Identifier: Apache-2.0
// Lockstep send path: the SystemC model and the RTL run on the same stimulus; their frame
// streams are compared beat by beat, cycle by cycle, and the first divergence is reported.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include <nlohmann/json.hpp>

#include "hw/send_path/send_path.h"
#include "hw/send_path/send_path_model.h"

namespace rnic::hw {

// Where two beat streams first differ.
struct beat_divergence {
    uint64_t frame = 0;           // frame number since reset
    uint32_t beat = 0;            // beat within the frame
    uint64_t cycle_expected = 0;  // handshake edge of the reference beat (UINT64_MAX: none)
    uint64_t cycle_got = 0;       // handshake edge of the beat under test (UINT64_MAX: none)
    int64_t byte_offset = -1;     // frame byte offset of the first differing byte, -1: none
    int expected = -1;            // that byte (or -1)
    int got = -1;
    std::string what;  // "cycle", "data", "keep", "last", "missing beat", "extra beat"
    std::string describe() const;
};

// Compares a reference beat stream (expected) with one under test (actual), in order. Beats
// may arrive in any interleaving; the first mismatch is kept and on_divergence called once.
class beat_comparator {
public:
    void expected(const frame_beat& b);
    void actual(const frame_beat& b);
    // End of run: a reference beat never matched, or a whole frame under test that the
    // reference did not produce, is a divergence (an unfinished frame is cut by the end).
    void finish();
    bool diverged() const { return m_diverged; }
    const beat_divergence& divergence() const { return m_div; }
    uint64_t compared() const { return m_compared; }
    std::function<void(const beat_divergence&)> on_divergence;

private:
    void drain();
    void diverge(beat_divergence d);
    std::deque<frame_beat> m_exp, m_act;
    beat_divergence m_div;
    bool m_diverged = false;
    uint64_t m_compared = 0;
};

// Functional comparison of two frame streams (CONTRACT.md's hard rules, not its timing): the
// frames in order, byte for byte within keep, every beat but a frame's last full and the last
// one's keep contiguous from lane 0. It goes on after a difference and reports each (up to
// MAX_REPORTED) naming the packet; timing is measured, not compared, unless a tolerance is set.
struct frame_difference {
    uint64_t frame = 0;        // frame number since reset (expected stream)
    int opcode = -1;           // of the expected frame (BTH)
    uint32_t qp = 0;           // BTH DestQP
    uint32_t psn = 0;          // BTH PSN
    int64_t byte_offset = -1;  // first differing byte (-1: none)
    int expected = -1;         // that byte, or -1 beyond the frame's end
    int got = -1;
    uint64_t cycle_expected = 0;  // handshake edge of the frame's last beat
    uint64_t cycle_got = 0;
    std::string what;  // "data", "length", "keep", "missing frame", "extra frame", "timing"
    std::string describe() const;
};

class frame_comparator {
public:
    static constexpr size_t MAX_REPORTED = 50;
    void expected(const frame_beat& b) { add(m_exp, m_exp_cur, b); }
    void actual(const frame_beat& b) { add(m_act, m_act_cur, b); }
    // End of run: frames left on one side only are differences (an unfinished frame is cut).
    void finish();
    // Reset: partial frames on both sides are dropped; the streams start again at frame 0.
    void cut() {
        m_exp_cur = frame{};
        m_act_cur = frame{};
        m_exp.clear();
        m_act.clear();
    }
    // A frame whose last beat is more than `cycles` edges from the reference's is a
    // difference ("tolerance" lockstep); unset: timing is only measured.
    void set_tolerance(uint32_t cycles) {
        m_tolerance = cycles;
        m_check_timing = true;
    }
    uint64_t compared() const { return m_compared; }              // frames compared
    uint64_t differing() const { return m_differing; }            // frames with a difference
    uint64_t timing_differs() const { return m_timing_differs; }  // frames on other edges
    int64_t min_delta() const { return m_min_delta; }             // last beat edge: got - expected
    int64_t max_delta() const { return m_max_delta; }
    const std::vector<frame_difference>& differences() const { return m_diffs; }
    std::string summary() const;
    std::function<void(const frame_difference&)> on_difference;

private:
    struct frame {
        uint64_t number = 0;
        std::vector<uint8_t> bytes;
        uint64_t first_edge = 0, last_edge = 0;
        std::string beat_problem;  // keep not full before the last beat, or not contiguous
    };
    void add(std::deque<frame>& q, frame& cur, const frame_beat& b);
    void drain();
    void differ(frame_difference d);
    std::deque<frame> m_exp, m_act;
    frame m_exp_cur, m_act_cur;
    std::vector<frame_difference> m_diffs;
    uint64_t m_compared = 0, m_differing = 0, m_timing_differs = 0;
    int64_t m_min_delta = 0, m_max_delta = 0;
    bool m_check_timing = false;
    uint32_t m_tolerance = 0;
};

// Frame output for the RTL of a lockstep pair: ready comes from the real output (which the
// model fills), frames are dropped (the beats are compared instead). A frame the model puts at
// edge e is not yet in the RTL's view at e (the RTL's copy of it is crossing at e): the model
// found the output ready for it, and only pops happened since, so ready is high.
class shadow_output : public frame_output_if {
public:
    explicit shadow_output(frame_output_if& real)
        : m_real(real) {}
    uint64_t model_put_edge = UINT64_MAX;  // edge of the model's latest frame
    uint64_t next_ready(uint64_t edge, bool frame_start) override {
        return m_real.next_ready(edge, frame_start);
    }
    bool ready_at(uint64_t edge, bool frame_start) override {
        const bool r = m_real.ready_at(edge, frame_start);
        return r || model_put_edge == edge;
    }
    uint64_t peek_ready(uint64_t edge, bool frame_start) override {
        return m_real.peek_ready(edge, frame_start);
    }
    void put_frame(fabric::eth_frame&&) override {}
    const sc_core::sc_event* ready_event() override { return m_real.ready_event(); }

private:
    frame_output_if& m_real;
};

class send_path_lockstep : public sc_core::sc_module, public send_path_unit {
public:
    // Builds the RTL side (default: make_send_path_rtl; the conformance suite passes broken
    // variants): output, waveform path, window mode.
    using rtl_factory = std::function<std::unique_ptr<send_path_unit>(
        frame_output_if& out, const std::string& rtl_fst, bool window)>;
    // The model feeds `out`; the RTL sees the same ready. Stats are the model's (under
    // `name`); the RTL's are under `name`.rtl.
    send_path_lockstep(sc_core::sc_module_name name, const send_path_config& cfg,
                       const clock_domain& clk, frame_output_if& out, sim_context& ctx,
                       const std::string& rtl_fst = "", rtl_factory rtl = nullptr);
    send_path_lockstep(sc_core::sc_module_name name, const send_path_config& cfg,
                       const clock_domain& clk, channel<fabric::eth_frame>& mac_tx,
                       sim_context& ctx, const std::string& rtl_fst = "",
                       rtl_factory rtl = nullptr);

    void put_descriptor(const tx_descriptor& d) override;
    void put_payload(payload_chunk&& c) override;
    std::vector<uint8_t> payload_buffer(size_t n) override { return m_model->payload_buffer(n); }
    void wait_payload_room(bool continuing = false) override {
        m_model->wait_payload_room(continuing);
    }
    void reset(uint32_t cycles = 2) override;
    void set_beat_observer(beat_observer fn) override { m_observer = std::move(fn); }
    const send_path_stats& get_stats() const override { return m_model->get_stats(); }
    send_path_inputs& inputs() override { return m_model->inputs(); }
    void set_egress_stomp(egress_stomp* s) override {
        if (m_mac) {
            m_mac->set_stomp(s);
        }
    }

    // Default on divergence (rnic.send_path.lockstep.compare "exact": the first beat that
    // differs in data, keep, last or edge; "functional"/"tolerance": the first frame that
    // differs): the RTL's waveform window is written (when waves are on), divergence.json is
    // filed (sim_context::outputs) and the run fails (sim_context::fail), naming the packet.
    // Replace on_divergence / on_difference to inspect it instead (tests).
    beat_comparator& comparator() { return m_cmp; }
    frame_comparator& frames() { return m_frames; }
    bool functional() const { return m_functional; }
    send_path_unit& rtl() { return *m_rtl; }
    void end_of_simulation() override;

private:
    void init(const send_path_config& cfg, const clock_domain& clk, sim_context& ctx,
              const std::string& rtl_fst, const rtl_factory& rtl);
    std::unique_ptr<mac_fifo_output> m_mac;
    frame_output_if& m_out;
    sim_context m_model_ctx;  // the model's own registry (its stats are re-registered above)
    shadow_output m_shadow;
    std::unique_ptr<send_path_model> m_model;
    std::unique_ptr<send_path_unit> m_rtl;
    void diverged(const std::string& what, const nlohmann::json& detail);
    beat_comparator m_cmp;
    frame_comparator m_frames;
    bool m_functional = false;  // compare "functional" or "tolerance"
    std::string m_compare;
    sim_context* m_ctx = nullptr;
    // BTH fields of the model's recent frames (frame number -> opcode, QP, PSN), for reports.
    std::deque<std::pair<uint64_t, std::array<uint32_t, 3>>> m_recent;
    beat_observer m_observer;
};

}  // namespace rnic::hw
