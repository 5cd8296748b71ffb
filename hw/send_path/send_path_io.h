// SPDX-License-Identifier: Apache-2.0
// The send path's transaction-level edges, shared by the model, the RTL wrapper and the
// lockstep runner: the input FIFOs (descriptors, payload bytes), the frame output and the
// beat-level view of the frame stream that model and RTL are compared on.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include <systemc>

#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
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
    uint64_t cycle = 0;               // clock edge of the handshake (valid && ready)
    std::array<uint8_t, 64> data{};   // lane i = frame byte 64 * beat + i
    uint64_t keep = 0;                // byte enables (lane i = bit i)
    bool last = false;                // last beat of the frame
    uint64_t frame = 0;               // frame number since reset (for reports)
    uint32_t index = 0;               // beat number within the frame
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
    // Is a beat accepted at `edge`? Called at the time of that edge (RTL wrapper); may wait
    // zero-time deltas to see every change made at that time.
    virtual bool ready_at(uint64_t edge, bool frame_start) = 0;
    // The frame's last beat was accepted at the current time.
    virtual void put_frame(fabric::eth_frame&& f) = 0;
};

// The MAC transmit FIFO as frame output: ready while it holds fewer frames than its depth,
// a pop at time t counting from the first edge at or after t. A frame enters at its last beat;
// since only the send path puts, ready cannot fall inside a frame, so only first beats stall.
class mac_fifo_output : public frame_output_if {
public:
    mac_fifo_output(channel<fabric::eth_frame>& fifo, const clock_domain& clk)
        : m_fifo(fifo)
        , m_clk(clk) {}
    uint64_t next_ready(uint64_t edge, bool frame_start) override;
    bool ready_at(uint64_t edge, bool frame_start) override;
    void put_frame(fabric::eth_frame&& f) override { m_fifo.put(std::move(f)); }
    channel<fabric::eth_frame>& fifo() { return m_fifo; }

private:
    channel<fabric::eth_frame>& m_fifo;
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
        uint64_t valid_edge = 0;        // first edge the descriptor is visible
        uint64_t payload_offset = 0;    // of its first payload byte in the payload stream
    };

    send_path_inputs(const std::string& name, const send_path_config& cfg,
                     const clock_domain& clk);

    // Producer side (from an SC_THREAD): block while full.
    void put_descriptor(const tx_descriptor& d);
    // Accepts the chunk's bytes as space allows (a chunk larger than the free space enters in
    // parts, each part usable from the first edge after max(its acceptance, c.ready)).
    void put_payload(payload_chunk&& c);

    // Consumer side. Descriptors are numbered 0, 1, ... since the last clear().
    bool has_descriptor(uint64_t seq) const { return seq < m_desc_base + m_desc.size(); }
    const descriptor_entry& descriptor(uint64_t seq) const { return m_desc[seq - m_desc_base]; }
    uint64_t payload_end() const { return m_pay_end; }
    // Latest valid edge of the payload stream bytes [from, to); to <= payload_end().
    uint64_t payload_valid_edge(uint64_t from, uint64_t to) const;
    void copy_payload(uint64_t from, size_t n, uint8_t* dst) const;
    // Notified (delta) on every put.
    const sc_core::sc_event& input_event() const { return m_input_event; }

    // Return the oldest descriptor's slot / `n` payload bytes from the front.
    void release_descriptor();
    void release_payload(uint64_t n);
    // Reset: drop everything (blocked producers resume into the emptied FIFOs).
    void clear();

    void trace(sc_core::sc_trace_file* tf, const std::string& prefix) const;
    uint64_t payload_bytes_held() const { return m_pay_end - m_pay_base; }
    size_t descriptors_held() const { return m_desc.size(); }

private:
    struct chunk_entry {
        uint64_t offset;  // of bytes[0] in the payload stream
        uint64_t valid_edge;
        std::vector<uint8_t> bytes;
    };
    void update();

    std::string m_name;
    send_path_config m_cfg;
    const clock_domain& m_clk;
    std::deque<descriptor_entry> m_desc;
    uint64_t m_desc_base = 0;
    uint64_t m_desc_payload_end = 0;  // payload stream offset after the last descriptor's bytes
    std::deque<chunk_entry> m_chunks;
    uint64_t m_pay_base = 0;  // stream offset of the oldest byte held
    uint64_t m_pay_end = 0;   // stream offset after the newest byte
    sc_core::sc_event m_input_event;
    sc_core::sc_event m_space_event;
    // traced
    uint32_t m_desc_occupancy = 0;
    uint32_t m_payload_occupancy = 0;
    bool m_desc_ready = true;
    bool m_payload_ready = true;
};

}  // namespace rnic::hw
