// SPDX-License-Identifier: Apache-2.0
// The send path's transaction-level edges, shared by the model, the RTL wrapper and the
// lockstep runner: the input FIFOs (descriptors, payload bytes), the frame output and the
// beat-level view of the frame stream that model and RTL are compared on.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include <systemc>

#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
#include "hw/common/quick_event.h"
#include "hw/common/stats.h"
#include "hw/send_path/send_path_config.h"
#include "hw/send_path/send_path_if.h"
#include "tlm/ethernet/eth_link.h"

namespace rnic::hw {

// Clock edges are numbered from time 0 (edge n is at n * period). A value that becomes
// available at time t is first usable on the first edge strictly after t (it is registered).
uint64_t edge_after(const clock_domain& clk, const sc_core::sc_time& t);
sc_core::sc_time time_of_edge(const clock_domain& clk, uint64_t edge);

// One 64-byte beat of the frame stream as it crosses the output handshake.
struct frame_beat {
    uint64_t cycle = 0;              // clock edge of the handshake (valid && ready)
    std::array<uint8_t, 64> data{};  // lane i = frame byte 64 * beat + i
    uint64_t keep = 0;               // byte enables (lane i = bit i)
    bool last = false;               // last beat of the frame
    uint64_t frame = 0;              // frame number since reset (for reports)
    uint32_t index = 0;              // beat number within the frame
};
using beat_observer = std::function<void(const frame_beat&)>;

// Reports the first `nbeats` beats of `frame` (all of them, or those that left before a
// reset), `cycles[j]` being beat j's handshake edge.
void frame_to_beats(const std::vector<uint8_t>& frame, const uint64_t* cycles, uint32_t nbeats,
                    uint64_t frame_no, const beat_observer& fn);

// Downstream of the send path: the frame stream's ready, and where whole frames go.
class frame_output_if {
public:
    virtual ~frame_output_if() = default;
    // First edge >= `edge` at which a beat is accepted; `frame_start` for a frame's first beat.
    // Called from the send path's thread at a time no later than that edge; may wait.
    virtual uint64_t next_ready(uint64_t edge, bool frame_start) = 0;
    // Without waiting: the first edge >= `edge` at which a beat is accepted if nothing else
    // changes, or UINT64_MAX when that takes an event (ready_event()).
    virtual uint64_t peek_ready(uint64_t edge, bool frame_start) = 0;
    // Is a beat accepted at `edge`? Called at the time of that edge (RTL wrapper); may wait
    // zero-time deltas to see every change made at that time.
    virtual bool ready_at(uint64_t edge, bool frame_start) = 0;
    // The frame's last beat was accepted at the current time.
    virtual void put_frame(fabric::eth_frame&& f) = 0;
    // Event on which a not-ready output may become ready, or null when next_ready() computes
    // the edge without waiting (RTL wrapper: to sleep while the frame stream is held).
    virtual const sc_core::sc_event* ready_event() { return nullptr; }
};

class send_path_inputs;

// Simulator statistics of a send path (model and RTL wrapper count the same things).
struct send_path_stats {
    uint64_t messages = 0;                   // descriptors taken
    uint64_t packets = 0;                    // frames out
    uint64_t frames_send = 0;                // SEND First..Only (+Imm/Inv)
    uint64_t frames_write = 0;               // RDMA WRITE First..Only (+Imm)
    uint64_t frames_read_request = 0;        //
    uint64_t frames_read_response = 0;       //
    uint64_t frames_ack = 0;                 //
    uint64_t beats = 0;                      // 64-byte output beats
    uint64_t bytes = 0;                      // frame bytes out
    uint64_t stall_payload_cycles = 0;       // inside a frame, no beat valid (input late)
    uint64_t stall_backpressure_cycles = 0;  // beat valid, output not ready
    uint64_t frames_cut_through = 0;         // model with cut_through: into the MAC at beat 0
    // Counts one frame by its opcode class.
    void count_frame(uint8_t opcode, size_t frame_bytes);
};
void register_send_path_stats(stats_registry& reg, const std::string& block,
                              const send_path_stats& s);

// What the NIC holds: the transaction-level interface plus reset and the beat view.
class send_path_unit : public send_path_if {
public:
    // Hardware reset asserted now, released `cycles` edges later: beats accepted at edges up
    // to now are kept (reported to the observer), everything in flight and both input FIFOs
    // are dropped. Call between edges, with no put_* blocked.
    virtual void reset(uint32_t cycles = 2) = 0;
    // Every output beat with its edge, in order (lockstep and conformance comparison).
    virtual void set_beat_observer(beat_observer fn) = 0;
    virtual const send_path_stats& get_stats() const = 0;
    // The input FIFOs (lockstep mirrors one unit's inputs into another's).
    virtual send_path_inputs& inputs() = 0;
    // The packets the MAC must stomp (see egress_stomp), applied where frames enter the MAC
    // transmit FIFO. Implementations without a MAC output of their own ignore it.
    virtual void set_egress_stomp(egress_stomp* s) = 0;
    // RTL wrapper only: evaluate edges ahead of simulated time where nothing unknown can
    // change them (default on; the model has nothing to switch).
    virtual void set_run_ahead(bool) {}
    // RTL wrapper in waveform-window mode (lockstep with waves): write the RTL waveform of the
    // last edges evaluated (a window ending now) and close the file. Others: nothing to do.
    virtual void dump_waveform_window() {}
};

// The MAC transmit FIFO as frame output: ready while it holds fewer frames than its depth,
// a pop at time t counting from the first edge at or after t. A frame enters at its last beat;
// since only the send path fills it (GSI frames and CNPs go to the MAC's control queue), ready
// cannot fall inside a frame, so only first beats stall. Frames the send path has computed
// ahead of their entry (reserve(), send_path_model) count as held: they enter before any
// later frame's first beat.
class mac_fifo_output : public frame_output_if {
public:
    mac_fifo_output(channel<fabric::eth_frame>& fifo, const clock_domain& clk)
        : m_fifo(fifo)
        , m_clk(clk) {}
    uint64_t next_ready(uint64_t edge, bool frame_start) override;
    bool ready_at(uint64_t edge, bool frame_start) override;
    uint64_t peek_ready(uint64_t edge, bool frame_start) override {
        return frame_start && full() ? UINT64_MAX : edge;
    }
    void put_frame(fabric::eth_frame&& f) override {
        stomp(f);
        m_fifo.put(std::move(f));
    }
    // A frame whose first beat is computed enters later: it holds a slot from now on.
    void reserve() { ++m_reserved; }
    // The reserved frame enters now (put_frame without a wait: its slot was held). `now`:
    // the MAC, if it waits for a frame, is notified at once (channel::put_now), not a delta
    // later (from the producer's wait, send_path_model::wait_payload_room).
    void put_reserved(fabric::eth_frame&& f, bool now = false) {
        --m_reserved;
        if (now) {
            stomp(f);
            m_fifo.put_now(std::move(f));
        } else {
            put_frame(std::move(f));
        }
    }
    void clear_reserved() { m_reserved = 0; }
    const sc_core::sc_event* ready_event() override { return &m_fifo.read_event(); }
    channel<fabric::eth_frame>& fifo() { return m_fifo; }
    void set_stomp(egress_stomp* s) { m_stomp = s; }

private:
    bool full() const { return m_fifo.size() + m_reserved >= m_fifo.depth(); }
    void stomp(fabric::eth_frame& f) {
        if (m_stomp != nullptr && !m_stomp->empty()) {
            m_stomp->apply(f.data);
        }
    }
    channel<fabric::eth_frame>& m_fifo;
    const clock_domain& m_clk;
    egress_stomp* m_stomp = nullptr;
    size_t m_reserved = 0;  // frames computed that have not entered yet
};

// Frame output with a ready pattern given as a function of the edge (benches, conformance
// suite); frames go to `on_frame` with the edge of their last beat.
class pattern_output : public frame_output_if {
public:
    explicit pattern_output(const clock_domain& clk)
        : m_clk(clk) {}
    std::function<bool(uint64_t)> ready = [](uint64_t) { return true; };
    std::function<void(fabric::eth_frame&&, uint64_t)> on_frame;
    uint64_t next_ready(uint64_t edge, bool) override {
        while (!ready(edge)) {
            ++edge;
        }
        return edge;
    }
    uint64_t peek_ready(uint64_t edge, bool fs) override { return next_ready(edge, fs); }
    bool ready_at(uint64_t edge, bool) override { return ready(edge); }
    void put_frame(fabric::eth_frame&& f) override {
        if (on_frame) {
            on_frame(std::move(f), m_clk.cycle_of(sc_core::sc_time_stamp()));
        }
    }

private:
    const clock_domain& m_clk;
};

// The send path's two input FIFOs with their accounting, identical for model and RTL so that
// put_* unblocks at the same times for both. Space is returned when the packet carrying the
// data has left (its last beat was accepted): a descriptor's slot when its message's last
// frame has left, payload bytes when their packet has left (packet-buffer semantics).
class send_path_inputs {
public:
    struct descriptor_entry {
        tx_descriptor desc;
        uint64_t valid_edge = 0;      // first edge the descriptor is visible
        uint64_t payload_offset = 0;  // of its first payload byte in the payload stream
        bool passes_slot = false;     // a segment continuing its message took over its slot
    };

    send_path_inputs(const std::string& name, const send_path_config& cfg, const clock_domain& clk);

    // Producer side (from an SC_THREAD): block while full.
    void put_descriptor(const tx_descriptor& d);
    // Accepts the chunk's bytes as space allows (a chunk larger than the free space enters in
    // parts, each part usable from the first edge after max(its acceptance, c.ready)).
    void put_payload(payload_chunk&& c);
    // Returns once the payload FIFO has room (put_payload's first wait).
    void wait_payload_room();
    bool payload_full() const { return m_pay_end - m_pay_base >= m_cfg.payload_fifo_bytes; }
    // One wait for returned space (release_*, clear()), as a producer in put_* waits.
    void wait_space();

    // Consumer side. Descriptors are numbered 0, 1, ... since the last clear().
    bool has_descriptor(uint64_t seq) const {
        return seq >= m_desc_base && seq < m_desc_base + m_desc.size();
    }
    uint64_t oldest_descriptor() const { return m_desc_base; }
    const descriptor_entry& descriptor(uint64_t seq) const { return m_desc[seq - m_desc_base]; }
    uint64_t payload_end() const { return m_pay_end; }
    // Latest valid edge of the payload stream bytes [from, to); to <= payload_end().
    uint64_t payload_valid_edge(uint64_t from, uint64_t to) const {
        uint64_t edge = 0;
        // Chunks are few and searched from the front: the consumer reads near the oldest bytes.
        // Inline: the model asks once per output beat.
        for (const auto& c : m_chunks) {
            if (c.offset >= to) {
                break;
            }
            if (c.offset + c.bytes.size() > from) {
                edge = std::max(edge, c.parts.empty() ? c.valid_edge : part_valid_edge(c, to));
            }
        }
        return edge;
    }
    void copy_payload(uint64_t from, size_t n, uint8_t* dst) const;
    // A buffer of `n` bytes (contents unspecified), recycled from released chunks when one is
    // spare (send_path_if::payload_buffer).
    std::vector<uint8_t> take_buffer(size_t n);
    // The bytes [from, from + n) in place when one chunk holds them all (no copy), else null.
    const uint8_t* payload_in_place(uint64_t from, size_t n) const;
    // The part of the chunk holding stream byte `from` that starts there: its bytes stay in
    // place until the chunk is released (release_payload past its end, or clear()). Empty
    // (data null) when no chunk holds `from`.
    struct payload_span {
        const uint8_t* data = nullptr;
        size_t bytes = 0;
        uint64_t valid_edge = 0;
    };
    payload_span payload_at(uint64_t from) const;
    // Notified (delta) on every put while a consumer listens: listen() before waiting on it,
    // unlisten() once woken (with `on` false, neither counts).
    const sc_core::sc_event& input_event() const { return m_input_event; }
    void listen(bool on = true) { m_input_listeners += on ? 1 : 0; }
    void unlisten(bool on = true) { m_input_listeners -= on ? 1 : 0; }

    // Return the oldest descriptor's slot / `n` payload bytes from the front.
    void release_descriptor();
    void release_payload(uint64_t n);
    // Reset: drop everything (blocked producers resume into the emptied FIFOs).
    void clear();

    // Lockstep: every accepted descriptor / payload part is reported, so that a second
    // send path can be fed the same entries with the same valid edges (mirror_*, which do
    // not block: the mirror's space follows the original's as long as both agree).
    std::function<void(const tx_descriptor&, uint64_t valid_edge)> on_descriptor;
    std::function<void(const uint8_t*, size_t, uint64_t valid_edge)> on_payload;
    void mirror_descriptor(const tx_descriptor& d, uint64_t valid_edge);
    void mirror_payload(const uint8_t* p, size_t n, uint64_t valid_edge);

    void trace(sc_core::sc_trace_file* tf, const std::string& prefix) const;
    uint64_t payload_bytes_held() const { return m_pay_end - m_pay_base; }
    size_t descriptors_held() const { return m_desc.size(); }

private:
    struct chunk_entry {
        uint64_t offset;  // of bytes[0] in the payload stream
        uint64_t valid_edge;
        std::vector<uint8_t> bytes;
        // Streamed chunks: (stream offset after the part, its valid edge), in order; empty:
        // every byte valid from valid_edge.
        std::vector<std::pair<uint64_t, uint64_t>> parts;
    };
    void update();
    // A streamed chunk (chunk_entry::parts): the valid edge of the part holding the last of
    // its bytes below `to` (parts come in in order).
    static uint64_t part_valid_edge(const chunk_entry& c, uint64_t to);
    void notify_input();  // m_input_event, if a consumer listens
    void notify_space();  // m_space_event, if a producer waits

    std::string m_name;
    send_path_config m_cfg;
    const clock_domain& m_clk;
    std::deque<descriptor_entry> m_desc;
    // Slots taken: one per message in the FIFO. A segment (tx_descriptor::first_packet) that
    // continues the message of the descriptor at the FIFO's tail extends that entry's slot
    // instead of taking one, so a message cut into turns holds the FIFO as the whole message
    // would (the slot is returned when its last segment has left).
    uint32_t m_desc_slots = 0;
    uint64_t m_desc_base = 0;
    uint64_t m_desc_payload_end = 0;  // payload stream offset after the last descriptor's bytes
    std::deque<chunk_entry> m_chunks;
    uint64_t m_pay_base = 0;  // stream offset of the oldest byte held
    uint64_t m_pay_end = 0;   // stream offset after the newest byte
    // Released chunks' buffers, for take_buffer (a few: one is taken per chunk put).
    static constexpr size_t SPARE_BUFFERS = 8;
    std::vector<std::vector<uint8_t>> m_spare;
    quick_event m_input_event;
    quick_event m_space_event;
    uint32_t m_input_listeners = 0;
    uint32_t m_space_waiters = 0;
    // traced
    uint32_t m_desc_occupancy = 0;
    uint32_t m_payload_occupancy = 0;
    bool m_desc_ready = true;
    bool m_payload_ready = true;
    bool m_desc_valid = false;
    bool m_payload_valid = false;
};

}  // namespace rnic::hw
