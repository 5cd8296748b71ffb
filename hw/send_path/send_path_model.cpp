// SPDX-License-Identifier: Apache-2.0
// Send path, SystemC model.
#include "hw/send_path/send_path_model.h"

#include <algorithm>

namespace rnic::hw {

send_path_model::send_path_model(sc_core::sc_module_name name, const send_path_config& cfg,
                                 const clock_domain& clk, channel<fabric::eth_frame>& mac_tx,
                                 sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_mac(std::make_unique<mac_fifo_output>(mac_tx, clk))
    , m_out(*m_mac)
    , m_ctx(ctx)
    , m_in(std::string(this->name()) + ".in", cfg, clk) {
    init(ctx);
}

send_path_model::send_path_model(sc_core::sc_module_name name, const send_path_config& cfg,
                                 const clock_domain& clk, frame_output_if& out, sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_out(out)
    , m_ctx(ctx)
    , m_in(std::string(this->name()) + ".in", cfg, clk) {
    init(ctx);
}

void send_path_model::init(sim_context& ctx) {
    m_r_prev.assign(m_cfg.timing.output_registers, NEG);
    SC_HAS_PROCESS(send_path_model);
    SC_THREAD(run_thread);
    SC_METHOD(complete_method);
    sensitive << m_pending_event;
    dont_initialize();
    register_send_path_stats(ctx.stats, name(), m_stats);
    if (m_cfg.cut_through) {
        ctx.stats.add(name(), "frames_cut_through", m_stats.frames_cut_through, "count",
                      "frames put into the MAC transmit FIFO at their first beat (cut_through)");
    }
    if (ctx.vcd != nullptr) {
        trace(ctx.vcd);
    }
}

void send_path_model::trace(sc_core::sc_trace_file* tf) const {
    m_in.trace(tf, name());
    sc_core::sc_trace(tf, m_idle, std::string(name()) + ".idle");
    sc_core::sc_trace(tf, m_frames_out, std::string(name()) + ".frames_out");
}

void send_path_model::wait_input() {
    const uint64_t gen = m_reset_gen;
    m_in.listen();
    sc_core::wait(m_in.input_event() | m_reset_event);
    m_in.unlisten();
    if (m_reset_gen != gen) {
        throw reset_unwind{};
    }
}

void send_path_model::run_thread() {
    for (;;) {
        try {
            run();
        } catch (const reset_unwind&) {
            // State was cleared by reset(); start over with descriptor 0.
        }
    }
}

void send_path_model::run() {
    const uint64_t gen = m_reset_gen;
    for (uint64_t seq = 0;; ++seq) {
        // Idle once no message is in progress: no descriptor, and every frame out (the last
        // one's step at its last beat sets it, complete_method).
        m_at_top = true;
        m_idle = m_pending == 0;
        while (!m_in.has_descriptor(seq)) {
            wait_input();
        }
        m_at_top = false;
        m_idle = false;
        const send_path_inputs::descriptor_entry e = m_in.descriptor(seq);
        const tx_descriptor& d = e.desc;
        const std::string why = check_descriptor(d);
        if (!why.empty()) {
            SC_REPORT_ERROR(name(), ("bad descriptor: " + why).c_str());
            return;
        }
        // A segment (tx_descriptor::first_packet) that continues the previous descriptor's
        // message is timed as that message's next packet: the sequencer has its header state,
        // so only the descriptor's own registration (valid + header_edges) can hold it.
        const uint32_t first = d.first_packet;
        const uint32_t end = segment_end(d);
        const bool continues =
            first != 0 && m_prev_end == first && m_prev_qpn == d.src_qpn && m_prev_psn == d.psn;
        if (first == 0) {
            ++m_stats.messages;
        }
        // Descriptor accepted when visible and the sequencer has handed over the previous
        // message's last packet (same edge allowed).
        const int64_t valid = static_cast<int64_t>(std::max(e.valid_edge, m_reset_edge));
        const int64_t s = std::max(valid, m_h_last_msg);
        const uint64_t seg_base = uint64_t{first} * d.pmtu;  // payload offset of packet `first`
        for (uint32_t p = first; p < end; ++p) {
            const packet_plan plan = plan_packet(d, p);
            const uint64_t pay_off = e.payload_offset + plan.payload_offset - seg_base;
            m_cur_desc = d;
            m_cur_plan = plan;
            m_cur_pay_off = pay_off;
            // Header register: header_edges after the sequencer has the message (one edge
            // per further packet), and no earlier than the edge the previous packet's first
            // beat took the previous header.
            const send_path_timing& tm = m_cfg.timing;
            const int64_t next =
                continues ? std::max(valid + tm.header_edges, m_h_prev + 1) : s + tm.header_edges;
            const int64_t h = std::max(p == first ? next : m_h_prev + 1, m_a0_prev);
            m_beat_edges.clear();
            int64_t a0 = 0;
            const size_t regs = m_r_prev.size();  // output_registers
            for (uint32_t j = 0; j < plan.beats; ++j) {
                if (j == 1 && rest_in_closed_form(plan, pay_off)) {
                    break;  // beats 1 .. beats - 1 computed at once
                }
                int64_t avail = NEG;
                if (j == 0) {
                    // Idle edges the RTL leaves between frames (and between messages).
                    const uint32_t gap = p == first && !continues ? tm.message_gap : tm.frame_gap;
                    avail = std::max(h + 1, m_a_last + 1 + gap);
                }
                const int32_t k = plan.input_beat_of(j);
                if (k >= 0) {
                    const uint64_t from = pay_off + uint64_t{64} * static_cast<uint32_t>(k);
                    const uint64_t to = std::min<uint64_t>(from + 64, pay_off + plan.payload_len);
                    while (m_in.payload_end() < to) {
                        wait_input();
                    }
                    avail =
                        std::max(avail, static_cast<int64_t>(m_in.payload_valid_edge(from, to)));
                }
                // Assembler register, then the output registers: each takes the beat when the
                // next one takes the previous beat (a chain without bubbles); the last one's
                // beat leaves at the first ready edge after it.
                const int64_t a = std::max(m_r_prev[0], avail);
                int64_t r = a;
                for (size_t i = 0; i < regs; ++i) {
                    r = std::max(r + 1, i + 1 < regs ? m_r_prev[i + 1] : m_t_prev);
                    m_r_prev[i] = r;
                }
                const int64_t o = r;
                // Inside a frame the MAC FIFO is always ready (mac_fifo_output): no call per beat.
                const uint64_t t = j > 0 && m_mac != nullptr
                                       ? static_cast<uint64_t>(o + 1)
                                       : m_out.next_ready(static_cast<uint64_t>(o + 1), j == 0);
                m_stats.stall_backpressure_cycles += t - static_cast<uint64_t>(o + 1);
                if (j > 0) {
                    m_stats.stall_payload_cycles += static_cast<uint64_t>(o - m_t_prev);
                } else {
                    a0 = a;
                }
                m_a_last = a;
                m_t_prev = static_cast<int64_t>(t);
                m_beat_edges.push_back(t);
            }
            m_h_prev = h;
            m_a0_prev = a0;
            if (p + 1 == end) {
                m_h_last_msg = h;
                m_prev_qpn = d.src_qpn;
                m_prev_psn = d.psn;
                m_prev_end = end;
            }

            // The frame's bytes; it is complete when its last beat is accepted.
            build_current_frame();
            if (m_reset_gen != gen) {
                throw reset_unwind{};  // reset while the thread waited for the MAC FIFO
            }
            // Cut-through (cut_through): into the MAC FIFO at the first beat, with the time
            // its last beat is in (eth_frame::complete); the MAC starts it once it cannot
            // underrun. The beats and their edges are the same.
            const bool cut = m_cfg.cut_through && m_mac != nullptr && plan.beats > 1;
            queue_frame(d, plan, p + 1 == end, cut);
            if (m_mac == nullptr) {
                // Another output (a bench's ready pattern, lockstep's shadow of the MAC FIFO)
                // sees only what entered it: the thread waits for the last beat, as it
                // always did, and does the frame's steps itself.
                while (m_pending != 0) {
                    sc_core::wait(pending_front().next() - sc_core::sc_time_stamp(), m_reset_event);
                    if (m_reset_gen != gen) {
                        throw reset_unwind{};
                    }
                    run_due(sc_core::sc_time_stamp());
                }
            }
        }
    }
}

void send_path_model::queue_frame(const tx_descriptor& d, const packet_plan& plan,
                                  bool last_of_descriptor, bool cut) {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const bool was_empty = m_pending == 0;
    pending_frame& pf = pending_push();
    pf.f = fabric::eth_frame{};
    pf.f.data = std::move(m_frame);  // rebuilt from scratch for the next packet
    pf.f.flow_id = d.flow_id;
    pf.flow_id = d.flow_id;
    pf.frame_bytes = pf.f.data.size();
    if (cut || m_ctx.tracer != nullptr) {
        pf.first = time_of_edge(m_clk, m_beat_edges.front());
    }
    pf.entered = false;
    pf.done = time_of_edge(m_clk, m_beat_edges.back());
    pf.frame_no = m_frame_no++;
    pf.beats = plan.beats;
    pf.payload_len = plan.payload_len;
    pf.opcode = plan.opcode;
    pf.last_of_descriptor = last_of_descriptor;
    pf.cut = cut;
    if (m_observer) {
        pf.edges.swap(m_beat_edges);
    }
    m_beat_edges.clear();
    if (m_mac == nullptr) {
        return;  // the thread does its steps (run())
    }
    m_mac->reserve();
    if (cut && pf.first <= now) {
        enter_mac(pf, false);  // its first beat is now: no wait, as before
    }
    if (was_empty) {
        // A zero delay is a delta notification: the step runs in the next delta, as the
        // thread's zero-time wait did.
        notify_step(pf.next() - now, m_room_waiter);
    }
}

void send_path_model::notify_step(const sc_core::sc_time& delay, bool producer) {
    if (producer) {
        m_step_owner = step_owner::PRODUCER;
        m_room_event.notify(delay);
    } else {
        m_step_owner = step_owner::METHOD;
        m_pending_event.notify(delay);
    }
}

void send_path_model::wait_payload_room(bool continuing) {
    if (m_mac == nullptr || !continuing) {
        // Another output (the thread does the steps, run()), or a producer that looks at
        // other state after its next put: complete_method does them.
        m_in.wait_payload_room();
        return;
    }
    while (m_in.payload_full()) {
        if (m_step_owner == step_owner::METHOD) {
            // complete_method has the next step: the space it returns wakes this producer.
            m_in.wait_space();
            continue;
        }
        // Room comes back only at a frame's last beat: the frames' steps are this producer's
        // while it waits (queue_frame notifies it for the first), done here at their times.
        m_room_waiter = true;
        sc_core::wait(m_room_event);
        m_room_waiter = false;
        if (m_step_owner != step_owner::PRODUCER) {
            continue;  // a reset (nothing pending now)
        }
        m_step_owner = step_owner::NONE;
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        const bool more = run_due(now, true);
        if (more) {
            // The next step: this producer's if it still waits, else the method's.
            notify_step(pending_front().next() - now, m_in.payload_full());
        } else if (m_at_top) {
            m_idle = true;
        }
    }
}

send_path_model::pending_frame& send_path_model::pending_push() {
    if (m_pending == m_ring.size()) {
        // Full: grow, the frames in order from slot 0.
        std::vector<pending_frame> grown(std::max<size_t>(4, 2 * m_ring.size()));
        for (size_t i = 0; i < m_pending; ++i) {
            grown[i] = std::move(m_ring[(m_ring_head + i) % m_ring.size()]);
        }
        m_ring.swap(grown);
        m_ring_head = 0;
    }
    const size_t at = (m_ring_head + m_pending) % m_ring.size();
    ++m_pending;
    return m_ring[at];
}

void send_path_model::complete_method() {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    m_step_owner = step_owner::NONE;
    if (run_due(now)) {
        notify_step(pending_front().next() - now, m_room_waiter);
    } else if (m_at_top) {
        m_idle = true;
    }
}

bool send_path_model::run_due(const sc_core::sc_time& now, bool by_producer) {
    while (m_pending != 0) {
        pending_frame& pf = pending_front();
        if (pf.cut && !pf.entered) {
            if (pf.first > now) {
                return true;
            }
            enter_mac(pf, by_producer);
        }
        if (pf.done > now) {
            return true;
        }
        finish_frame(pf, by_producer);
        pending_pop();
    }
    return false;
}

void send_path_model::enter_mac(pending_frame& pf, bool by_producer) {
    if (m_observer) {
        frame_to_beats(pf.f.data, pf.edges.data(), pf.beats, pf.frame_no, m_observer);
    }
    pf.f.complete = pf.done;
    pf.entered = true;
    ++m_stats.frames_cut_through;
    m_mac->put_reserved(std::move(pf.f), by_producer);
}

void send_path_model::finish_frame(pending_frame& pf, bool by_producer) {
    if (m_observer && !pf.cut) {
        frame_to_beats(pf.f.data, pf.edges.data(), pf.beats, pf.frame_no, m_observer);
    }
    m_stats.count_frame(pf.opcode, pf.frame_bytes);
    ++m_frames_out;
    if (m_ctx.tracer != nullptr) {
        m_slices.slice(*m_ctx.tracer, name(), roce::info(pf.opcode).name, pf.flow_id, pf.first,
                       pf.done + m_clk.period());
    }
    m_in.release_payload(pf.payload_len);
    if (pf.last_of_descriptor) {
        m_in.release_descriptor();
    }
    if (!pf.cut) {
        if (m_mac != nullptr) {
            m_mac->put_reserved(std::move(pf.f), by_producer);
        } else {
            m_out.put_frame(std::move(pf.f));
        }
    }
}

bool send_path_model::rest_in_closed_form(const packet_plan& plan, uint64_t pay_off) {
    // With one output register and the MAC FIFO as output (ready for the whole frame once its
    // first beat went), the recurrence of beats j >= 1 (run() above) is
    //   a_j = max(r_(j-1), v_j),  r_j = max(a_j + 1, t_(j-1)),  t_j = r_j + 1,
    // v_j the valid edge of the payload beat j consumes. From beat 0's r_0 and t_0 (t_0 >=
    // r_0 + 1), if every v_j <= r_0: a_1 = r_0, r_1 = t_0, and for j >= 2 a_j = t_0 + j - 2,
    // r_j = t_0 + j - 1: t_j = t_0 + j, one beat per edge, no stall of either kind. Exactly
    // the loop's values, without one iteration per beat. Otherwise (payload not in, or in
    // late, or another timing) the loop goes on beat by beat.
    if (m_mac == nullptr || m_r_prev.size() != 1) {
        return false;
    }
    const int64_t r0 = m_r_prev[0];
    const int64_t t0 = m_t_prev;
    const uint32_t beats = plan.beats;
    // Payload input beats consumed by output beats 1 .. beats - 1 (input_beat_of).
    const uint32_t hb = plan.header_bytes / SEND_PATH_BEAT_BYTES;
    const uint32_t k_lo = hb >= 1 ? 0 : 1 - hb;
    const int64_t k_hi = std::min<int64_t>(int64_t{beats} - 1 - hb, int64_t{plan.input_beats} - 1);
    if (k_hi >= int64_t{k_lo}) {
        const uint64_t from = pay_off + uint64_t{SEND_PATH_BEAT_BYTES} * k_lo;
        const uint64_t to = std::min<uint64_t>(
            pay_off + uint64_t{SEND_PATH_BEAT_BYTES} * static_cast<uint64_t>(k_hi + 1),
            pay_off + plan.payload_len);
        // The latest valid edge of those bytes bounds every v_j (a streamed chunk's parts
        // come in in order).
        if (m_in.payload_end() < to ||
            static_cast<int64_t>(m_in.payload_valid_edge(from, to)) > r0) {
            return false;
        }
    }
    if (m_observer) {
        m_beat_edges.resize(beats);
        for (uint32_t j = 1; j < beats; ++j) {
            m_beat_edges[j] = static_cast<uint64_t>(t0 + j);
        }
    } else {
        // Without a beat observer only the frame's first and last edges are read (its
        // completion, cut-through, the trace slice; reset reports beats to an observer only).
        m_beat_edges.push_back(static_cast<uint64_t>(t0 + beats - 1));
    }
    m_a_last = beats == 2 ? r0 : t0 + beats - 3;
    m_r_prev[0] = t0 + beats - 2;
    m_t_prev = t0 + beats - 1;
    return true;
}

void send_path_model::build_current_frame() {
    const uint32_t len = m_cur_plan.payload_len;
    const uint64_t have = std::min<uint64_t>(
        len, m_in.payload_end() > m_cur_pay_off ? m_in.payload_end() - m_cur_pay_off : 0);
    // The payload straight from the FIFO chunk that holds it (the usual case: one chunk per
    // packet); else gathered into m_payload.
    const uint8_t* payload = have == len ? m_in.payload_in_place(m_cur_pay_off, len) : nullptr;
    if (payload == nullptr) {
        if (m_payload.size() < len) {
            m_payload.resize(len);  // grows to the largest packet once, then is reused as is
        }
        m_in.copy_payload(m_cur_pay_off, static_cast<size_t>(have), m_payload.data());
        // Bytes not in yet (a reset mid-frame) read as zero; the others were just copied.
        std::fill(m_payload.begin() + static_cast<std::ptrdiff_t>(have),
                  m_payload.begin() + static_cast<std::ptrdiff_t>(len), uint8_t{0});
        payload = m_payload.data();
    }
    m_frame.clear();
    if (m_frame.capacity() == 0) {
        m_frame = fabric::take_frame_buffer();  // the last one went out with its frame
    }
    roce::frame_header h = make_frame_header(m_cur_desc, m_cur_plan);
    h.tos = static_cast<uint8_t>((m_cfg.dscp << 2) | 0x02);  // DSCP (PFC priority), ECT(0)
    if (m_sport_qpn_xor) {
        h.udp_src_port = udp_source_port_qpn_xor(m_cur_desc.src_qpn, m_cur_desc.dest_qpn);
    }
    roce::build_frame(h, payload, len, m_frame);
}

void send_path_model::reset(uint32_t cycles) {
    const uint64_t r = edge_after(m_clk, sc_core::sc_time_stamp());
    // Beats accepted before the reset edge did leave: those of frames computed ahead (a
    // cut-through frame in the MAC FIFO reported them already), then of the packet in progress.
    for (size_t i = 0; i < m_pending; ++i) {
        const pending_frame& pf = m_ring[(m_ring_head + i) % m_ring.size()];
        if (m_observer && !pf.entered && !pf.edges.empty() && pf.edges.front() < r) {
            uint32_t n = 0;
            while (n < pf.edges.size() && pf.edges[n] < r) {
                ++n;
            }
            frame_to_beats(pf.f.data, pf.edges.data(), n, pf.frame_no, m_observer);
        }
    }
    m_pending = 0;
    m_pending_event.cancel();
    m_step_owner = step_owner::NONE;
    if (m_room_waiter) {
        m_room_event.notify(sc_core::SC_ZERO_TIME);  // replaces a step's notification
    }
    if (m_mac != nullptr) {
        m_mac->clear_reserved();
    }
    if (m_observer && !m_beat_edges.empty() && m_beat_edges.front() < r) {
        uint32_t n = 0;
        while (n < m_beat_edges.size() && m_beat_edges[n] < r) {
            ++n;
        }
        build_current_frame();  // bytes not yet in read as zero; their beats did not leave
        frame_to_beats(m_frame, m_beat_edges.data(), n, m_frame_no, m_observer);
    }
    m_beat_edges.clear();
    m_frame_no = 0;
    m_h_last_msg = m_h_prev = m_a0_prev = m_a_last = m_t_prev = NEG;
    m_prev_end = 0;
    std::fill(m_r_prev.begin(), m_r_prev.end(), NEG);
    m_reset_edge = r + cycles;
    m_in.clear();
    m_at_top = true;
    m_idle = true;
    ++m_reset_gen;
    m_reset_event.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace rnic::hw
