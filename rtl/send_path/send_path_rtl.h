// SPDX-License-Identifier: Apache-2.0
// RTL wrapper: the Verilated send path behind the transaction-level send_path_unit. Bridges
// descriptors and payload bytes to the valid/ready pins, collects frame beats into frames
// stamped with their edge, and runs the clock only while the block has work.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "hw/common/clock_domain.h"
#include "hw/common/sim_context.h"
#include "hw/send_path/send_path_config.h"
#include "hw/send_path/send_path_io.h"
#include "hw/send_path/send_path_packets.h"
#include "rtl/send_path/send_path_core.h"

namespace rnic::rtl {

// Contract (CONTRACT.md): after rnic.send_path.rtl.quiescent_edges edges (default 4) without a
// handshake on any stream, the RTL's state does not change until one of its inputs does; the
// wrapper then stops the clock (clock = "gated"), and checks the rule when it restarts it.

class send_path_rtl : public sc_core::sc_module, public hw::send_path_unit {
public:
    send_path_rtl(sc_core::sc_module_name name, const hw::send_path_config& cfg,
                  const hw::clock_domain& clk, hw::frame_output_if& out, hw::sim_context& ctx,
                  const send_path_core_factory& core, const std::string& fst_path = "",
                  bool window = false);
    send_path_rtl(sc_core::sc_module_name name, const hw::send_path_config& cfg,
                  const hw::clock_domain& clk, hw::channel<fabric::eth_frame>& mac_tx,
                  hw::sim_context& ctx, const send_path_core_factory& core,
                  const std::string& fst_path = "");
    ~send_path_rtl() override;

    void put_descriptor(const hw::tx_descriptor& d) override {
        if (hw::is_segment(d)) {
            // The pins carry whole messages (CONTRACT.md); config validation refuses every
            // source of segments (round_robin, selective_repeat, TIMELY's segment_bytes) with
            // this send path, so this is a wiring error.
            m_ctx->fail(segment_refusal(d));
            return;
        }
        m_in.put_descriptor(d);
    }
    void put_payload(hw::payload_chunk&& c) override { m_in.put_payload(std::move(c)); }
    std::vector<uint8_t> payload_buffer(size_t n) override { return m_in.take_buffer(n); }
    void wait_payload_room(bool = false) override { m_in.wait_payload_room(); }
    // Why descriptor `d` (a segment) cannot go on the pins: the one message both refusals give.
    std::string segment_refusal(const hw::tx_descriptor& d) const;
    void reset(uint32_t cycles = 2) override;
    void set_beat_observer(hw::beat_observer fn) override { m_observer = std::move(fn); }
    const hw::send_path_stats& get_stats() const override { return m_stats; }
    hw::send_path_inputs& inputs() override { return m_in; }
    void set_egress_stomp(hw::egress_stomp* s) override {
        if (m_mac) {
            m_mac->set_stomp(s);
        }
    }

    // Evaluate edges before simulated time reaches them where no pending input can change
    // them (default). The lockstep runner turns it off: its RTL's ready follows the model.
    void set_run_ahead(bool on) override { m_run_ahead = on; }
    // Window mode: a second instance of the RTL replays the pins WINDOW_EDGES edges behind;
    // this writes the replay of the edges still held (the window ending at the last evaluated
    // edge) to the FST file and closes it. Without a call (no divergence) the window is
    // written at the end of the run.
    void dump_waveform_window() override;
    static constexpr size_t WINDOW_EDGES = 512;
    // Clock edges the RTL was evaluated on (the rest were skipped as idle).
    uint64_t clocked_edges() const { return m_clocked; }
    // Contract rules the RTL broke (quiescence, stream rules, malformed frames): the first is
    // reported through sim_context::fail (the run fails naming rule and edge); counted here.
    uint64_t rule_violations() const { return m_violations; }
    uint64_t malformed_frames() const { return m_malformed; }
    // Longest run of edges without a handshake after which an output changed (measured on
    // evaluated edges; with clock = "free" that is every edge): the quiescence window needed.
    uint64_t max_quiet_before_change() const { return m_max_quiet_change; }
    // Conformance benches: record violations (first 100) and go on instead of failing the run.
    void set_stop_on_violation(bool on) { m_stop_on_violation = on; }
    const std::vector<std::string>& violation_log() const { return m_violation_log; }
    void end_of_simulation() override;

private:
    void init(hw::sim_context& ctx, const send_path_core_factory& core);
    void clock_thread();
    bool edge(uint64_t e);             // false: a reset came before the edge was evaluated
    bool sync_to(uint64_t e);          // wait until edge e's time; false if a reset covers e
    bool wait_for_output(uint64_t e);  // wait for a held frame stream to be released
    uint64_t wait_for_change(uint64_t e);
    bool next_payload_beat(uint64_t& valid_edge);
    void apply_reset();
    void complete_frame(uint64_t e);
    // Gated clock, on restart: edges [from, to) of the stopped clock with the pins unchanged;
    // false (and the run failed) if an output changed on one of them.
    bool check_stopped_edges(uint64_t from, uint64_t to);
    void violation(uint64_t edge, const std::string& rule, const std::string& what);
    // One evaluated edge's pins, for the window replay.
    struct pin_record {
        uint64_t edge = 0;
        bool reset = false;
        bool dv = false, pv = false, fr = false;
        bool new_desc = false;
        hw::tx_descriptor desc;
        bool new_pl = false;
        std::array<uint8_t, 64> pl{};
        uint64_t keep = 0;
        bool last = false;
    };
    void replay(const pin_record& r, bool dump);

    const hw::send_path_config m_cfg;
    const hw::clock_domain& m_clk;
    std::unique_ptr<hw::mac_fifo_output> m_mac;
    hw::frame_output_if& m_out;
    hw::send_path_inputs m_in;
    std::unique_ptr<send_path_core> m_core;
    std::string m_fst_path;
    hw::beat_observer m_observer;
    hw::send_path_stats m_stats;
    sc_core::sc_event m_reset_event;

    // Stream cursors (descriptor numbers are send_path_inputs sequence numbers).
    uint64_t m_desc_seq = 0;  // next descriptor to present
    uint64_t m_pl_msg = 0;    // message whose payload is being presented
    uint32_t m_pl_beat = 0;   // its next payload beat
    // The beat at the payload cursor, as next_payload_beat() last found it: stream bytes
    // [m_beat_from, m_beat_from + m_beat_n), the last of its message when m_beat_last.
    uint64_t m_beat_from = 0;
    uint32_t m_beat_n = 0;
    bool m_beat_last = false;
    // The input chunk the cursor reads (stream bytes [m_span_from, m_span_end) in place at
    // m_span_data, usable from m_span_edge), so that a beat inside it costs no search; and
    // the descriptor entry of m_pl_msg. Both forgotten on reset (the inputs are cleared).
    uint64_t m_span_from = 0, m_span_end = 0, m_span_edge = 0;
    const uint8_t* m_span_data = nullptr;
    const hw::send_path_inputs::descriptor_entry* m_pl_de = nullptr;
    uint64_t m_pl_de_seq = 0;
    uint64_t m_out_msg = 0;   // message of the frame being received
    uint32_t m_out_pkt = 0;   // its packet number
    uint32_t m_out_beat = 0;  // beats of the current frame received
    // Largest frame (4 KiB MTU, WRITE Only Imm) plus room for the beat being copied in.
    static constexpr size_t MAX_FRAME_BYTES = 4096 + 74 + 3 + 4 + 64;
    std::array<uint8_t, MAX_FRAME_BYTES + 64> m_frame_buf{};
    size_t m_frame_len = 0;
    uint64_t m_frame_first_edge = 0;
    hw::event_tracer* m_tracer = nullptr;
    hw::sim_context* m_ctx = nullptr;
    uint32_t m_quiet_limit = 4;  // rnic.send_path.rtl.quiescent_edges
    bool m_free_clock = false;   // rnic.send_path.rtl.clock = "free"
    uint64_t m_violations = 0;
    uint64_t m_malformed = 0;
    uint64_t m_max_quiet_change = 0;
    bool m_stop_on_violation = true;
    std::vector<std::string> m_violation_log;
    // Pins of the last evaluated edge, the last handshake, and a frame beat held by ready low.
    bool m_pin_dv = false, m_pin_pv = false, m_pin_fr = false;
    uint64_t m_last_handshake = 0;
    bool m_held = false;
    uint64_t m_held_edge = 0;
    std::array<uint8_t, 64> m_held_data{};
    uint64_t m_held_keep = 0;
    bool m_held_last = false;
    uint64_t m_frame_no = 0;
    std::vector<hw::frame_beat> m_pending_beats;  // of the frame being received
    bool m_run_ahead = true;

    // Clocking state.
    uint64_t m_last_edge = 0;           // last edge evaluated
    uint32_t m_quiet = 0;               // edges since the last handshake
    bool m_fr_valid_after = false;      // frame valid after the last edge (for skipped edges)
    bool m_desc_ready_after = false;    // descriptor ready after the last edge
    bool m_pl_ready_after = false;      // payload ready after the last edge
    uint64_t m_no_pop_before_edge = 0;  // edges below saw the downstream still full
    bool m_desc_shown = false;          // the descriptor at m_desc_seq was on the pins
    bool m_pl_shown = false;            // the payload beat at the cursor was on the pins
    uint64_t m_release_edge = 0;        // first edge after the last reset
    bool m_reset_pending = false;
    uint64_t m_reset_edge = 0;
    uint32_t m_reset_cycles = 0;
    uint64_t m_clocked = 0;
    uint64_t m_half_ps = 0;
    bool m_tracing = false;
    uint64_t m_edge_units = 0;  // one period in sc_time resolution units
    // Window mode (see dump_waveform_window).
    bool m_window = false;
    std::unique_ptr<send_path_core> m_shadow;
    std::deque<pin_record> m_history;
    bool m_window_written = false;
};

}  // namespace rnic::rtl
