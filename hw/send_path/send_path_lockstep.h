// SPDX-License-Identifier: Apache-2.0
// Lockstep send path: the SystemC model and the RTL run on the same stimulus; their frame
// streams are compared beat by beat, cycle by cycle, and the first divergence is reported.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include <systemc>

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
    void reset(uint32_t cycles = 2) override;
    void set_beat_observer(beat_observer fn) override { m_observer = std::move(fn); }
    const send_path_stats& get_stats() const override { return m_model->get_stats(); }
    send_path_inputs& inputs() override { return m_model->inputs(); }
    void set_egress_stomp(egress_stomp* s) override {
        if (m_mac) {
            m_mac->set_stomp(s);
        }
    }

    // Default on divergence: the RTL's waveform window is written (when waves are on), then
    // SC_REPORT_ERROR names the beat and the run stops. Replace to inspect it instead (tests).
    beat_comparator& comparator() { return m_cmp; }
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
    beat_comparator m_cmp;
    beat_observer m_observer;
};

}  // namespace rnic::hw
