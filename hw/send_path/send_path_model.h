// SPDX-License-Identifier: Apache-2.0
// Send path, SystemC model: message descriptors and payload in, RoCEv2 frames out
// (segmentation into path-MTU packets, PSNs, Ethernet/IPv4/UDP/BTH/extension headers, payload
// alignment, pad, ICRC). Timed to the cycle of rtl/send_path/send_path.sv; see README.md.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#include <systemc>

#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/send_path/send_path_config.h"
#include "hw/send_path/send_path_if.h"
#include "hw/send_path/send_path_io.h"
#include "hw/send_path/send_path_packets.h"
#include "tlm/ethernet/eth_link.h"

namespace rnic::hw {

// Cycle timing (64-byte datapath, edges numbered from time 0; see README.md for the pipeline):
//   descriptor m valid at D (first edge after its put); accepted at s = max(D, h of the last
//   packet of message m-1); packet headers registered at h = max(s + 1 | h_prev + 1, a0_prev);
//   beat b of the frame stream enters the assembler at a = max(o_prev, avail) with avail =
//   h + 1 for a first beat and >= the valid edge of the payload beat it consumes; the output
//   register at o = max(a + 1, T_prev); it leaves at T = first ready edge >= o + 1.
// With payload ready and no back-pressure the first beat leaves 4 edges after the descriptor
// is accepted and frames follow back to back at one beat per cycle. rnic.send_path.timing
// generalises it for another RTL: h = s + header_edges for a message's first packet; a chain
// of output_registers registers after the assembler (r_i = max(r_(i-1) + 1, r_(i+1) of the
// previous beat), the last one's beat leaving at its first ready edge); frame_gap /
// message_gap idle edges before a frame's first beat enters the assembler.
class send_path_model : public sc_core::sc_module, public send_path_unit {
public:
    using stats = send_path_stats;

    // Frames go into the MAC transmit FIFO (ready while it has a free frame slot).
    send_path_model(sc_core::sc_module_name name, const send_path_config& cfg,
                    const clock_domain& clk, channel<fabric::eth_frame>& mac_tx, sim_context& ctx);
    // Frames go to `out` (benches: any ready pattern).
    send_path_model(sc_core::sc_module_name name, const send_path_config& cfg,
                    const clock_domain& clk, frame_output_if& out, sim_context& ctx);

    void put_descriptor(const tx_descriptor& d) override { m_in.put_descriptor(d); }
    void put_payload(payload_chunk&& c) override { m_in.put_payload(std::move(c)); }
    std::vector<uint8_t> payload_buffer(size_t n) override { return m_in.take_buffer(n); }
    // With the own MAC FIFO and `continuing`, the waiting producer does the pending frames'
    // last-beat steps itself at their times (README "Wake-ups"); otherwise the inputs' wait.
    void wait_payload_room(bool continuing = false) override;

    // See send_path_unit. The model reports a frame's beats when the frame completes, or at
    // reset for the beats of a partial frame that left before the reset edge.
    void reset(uint32_t cycles = 2) override;
    void set_beat_observer(beat_observer fn) override { m_observer = std::move(fn); }
    const stats& get_stats() const override { return m_stats; }
    send_path_inputs& inputs() override { return m_in; }
    void set_egress_stomp(egress_stomp* s) override {
        if (m_mac) {
            m_mac->set_stomp(s);
        }
    }
    bool idle() const { return m_idle; }
    void trace(sc_core::sc_trace_file* tf) const;

private:
    struct reset_unwind {};
    // A frame computed by the thread whose edges are still ahead: what happens at its first
    // beat (cut-through: into the MAC FIFO) and at its last (stats, FIFO space, into the MAC
    // FIFO) is done then by complete_method (own MAC FIFO) or by the thread (another output).
    struct pending_frame {
        fabric::eth_frame f;
        std::vector<uint64_t> edges;  // every beat's edge, with a beat observer
        sc_core::sc_time first;       // time of the first beat's edge (cut-through, trace)
        sc_core::sc_time done;        // time of the last beat's edge
        uint64_t frame_no = 0;
        uint64_t flow_id = 0;
        size_t frame_bytes = 0;
        uint32_t beats = 0;
        uint32_t payload_len = 0;
        uint8_t opcode = 0;
        bool last_of_descriptor = false;
        bool cut = false;      // cut_through: into the MAC FIFO at the first beat
        bool entered = false;  // in the MAC FIFO (cut-through, after its first beat)
        // When the next thing happens to it.
        const sc_core::sc_time& next() const { return cut && !entered ? first : done; }
    };
    void init(sim_context& ctx);
    void run_thread();
    void run();
    void wait_input();
    // Queues the frame just built (m_frame, m_beat_edges) with its timing.
    void queue_frame(const tx_descriptor& d, const packet_plan& plan, bool last_of_descriptor,
                     bool cut);
    // Own MAC FIFO: the pending frames' first- and last-beat steps that are due now, then it
    // sleeps until the next one (a method: no thread switch per frame).
    void complete_method();
    // Steps of pending frames due at `now`, in order; false if none is left.
    // by_producer: the producer waiting for room runs them (wait_payload_room): a frame into
    // the MAC FIFO wakes a waiting MAC at once (put_now), not in the next delta.
    bool run_due(const sc_core::sc_time& now, bool by_producer = false);
    void enter_mac(pending_frame& pf, bool by_producer);     // cut-through: at the first beat
    void finish_frame(pending_frame& pf, bool by_producer);  // at the last beat
    // After beat 0 of the packet: beats 1 .. beats - 1 in closed form when their timing is
    // the free-flowing one (see the .cpp); false: not applicable, computed beat by beat.
    bool rest_in_closed_form(const packet_plan& plan, uint64_t pay_off);
    void build_current_frame();

    const send_path_config m_cfg;
    const bool m_sport_qpn_xor = m_cfg.udp_sport == "qpn_xor";  // read per frame
    const clock_domain& m_clk;
    std::unique_ptr<mac_fifo_output> m_mac;
    frame_output_if& m_out;
    sim_context& m_ctx;
    send_path_inputs m_in;
    beat_observer m_observer;
    stats m_stats;
    quick_event m_reset_event;
    uint64_t m_reset_gen = 0;
    uint64_t m_reset_edge = 0;  // first edge after the last reset's release

    // Pipeline state (edges; NEG = never). See the class comment.
    static constexpr int64_t NEG = -(int64_t{1} << 40);
    int64_t m_h_last_msg = NEG;  // header edge of the previous descriptor's last packet
    // The previous descriptor (message or segment): a segment that continues it (same message,
    // next packet) is timed as that message's next packet.
    uint32_t m_prev_qpn = 0;
    uint32_t m_prev_psn = 0;
    uint32_t m_prev_end = 0;        // one past its last packet; 0: none
    int64_t m_h_prev = NEG;         // header edge of the previous packet
    int64_t m_a0_prev = NEG;        // assembler edge of the previous packet's first beat
    int64_t m_a_last = NEG;         // assembler edge of the previous beat
    std::vector<int64_t> m_r_prev;  // output-register edges of the previous beat (timing)
    int64_t m_t_prev = NEG;         // handshake edge of the previous beat

    // The packet being built (kept for reset: its beats before the reset edge are reported).
    std::vector<uint8_t> m_frame;
    std::vector<uint8_t> m_payload;
    // Handshake edges computed so far (a frame computed in closed form without a beat
    // observer: its first and last only).
    std::vector<uint64_t> m_beat_edges;
    tx_descriptor m_cur_desc;
    packet_plan m_cur_plan;
    uint64_t m_cur_pay_off = 0;
    uint64_t m_frame_no = 0;
    // Frames computed whose first- or last-beat step is still ahead, in order (their steps'
    // times increase); with the own MAC FIFO they count against its room (mac_fifo_output::
    // reserve) until they enter it. A ring whose slots (and their vectors) are reused.
    std::vector<pending_frame> m_ring;
    size_t m_ring_head = 0;
    size_t m_pending = 0;  // frames in the ring
    pending_frame& pending_front() { return m_ring[m_ring_head]; }
    pending_frame& pending_push();  // a slot at the back (fields of an earlier frame)
    void pending_pop() {
        m_ring_head = m_ring_head + 1 == m_ring.size() ? 0 : m_ring_head + 1;
        --m_pending;
    }
    quick_event m_pending_event;  // complete_method: the front's next step is due
    // Who does the front's next step at its time: complete_method (m_pending_event), or the
    // producer waiting in wait_payload_room (m_room_event), whose room that step returns:
    // one wake-up instead of the method's run and then the producer's. Notified for one owner
    // at a time; NONE while nothing is pending.
    enum class step_owner : uint8_t { NONE, METHOD, PRODUCER };
    step_owner m_step_owner = step_owner::NONE;
    bool m_room_waiter = false;  // the producer waits on m_room_event
    quick_event m_room_event;    // its wake-up: the front's step, or a reset
    // Hands the front's next step, `delay` from now, to the producer if `producer`, else to
    // complete_method.
    void notify_step(const sc_core::sc_time& delay, bool producer);
    bool m_at_top = true;       // the thread waits for the next descriptor
    bool m_idle = true;         // traced: no message in progress
    uint64_t m_frames_out = 0;  // traced
    stage_slicer m_slices;      // the trace's stage: the packet's opcode
};

}  // namespace rnic::hw
