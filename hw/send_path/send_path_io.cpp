// SPDX-License-Identifier: Apache-2.0
// The send path's transaction-level edges: input FIFOs, frame output, beat view.
#include "hw/send_path/send_path_io.h"

#include <algorithm>
#include <cstring>

#include "hw/roce/roce.h"
#include "hw/send_path/send_path_packets.h"

namespace rnic::hw {

uint64_t edge_after(const clock_domain& clk, const sc_core::sc_time& t) {
    return clk.cycle_after(t);
}

sc_core::sc_time time_of_edge(const clock_domain& clk, uint64_t edge) {
    return clk.time_of_cycle(edge);
}

void frame_to_beats(const std::vector<uint8_t>& frame, const uint64_t* cycles, uint32_t nbeats,
                    uint64_t frame_no, const beat_observer& fn) {
    frame_beat b;
    b.frame = frame_no;
    for (uint32_t j = 0; j < nbeats; ++j) {
        const size_t off = size_t{j} * SEND_PATH_BEAT_BYTES;
        const size_t n = std::min<size_t>(SEND_PATH_BEAT_BYTES, frame.size() - off);
        b.data.fill(0);
        std::memcpy(b.data.data(), frame.data() + off, n);
        b.keep = n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1);
        b.last = off + SEND_PATH_BEAT_BYTES >= frame.size();
        b.cycle = cycles[j];
        b.index = j;
        fn(b);
    }
}

// --- stats ----------------------------------------------------------------------------------

void send_path_stats::count_frame(uint8_t opcode, size_t frame_bytes) {
    ++packets;
    bytes += frame_bytes;
    beats += (frame_bytes + SEND_PATH_BEAT_BYTES - 1) / SEND_PATH_BEAT_BYTES;
    using namespace roce;
    switch (opcode) {
        case RC_READ_REQUEST:
            ++frames_read_request;
            break;
        case RC_ACK:
            ++frames_ack;
            break;
        case RC_READ_RESP_FIRST:
        case RC_READ_RESP_MIDDLE:
        case RC_READ_RESP_LAST:
        case RC_READ_RESP_ONLY:
            ++frames_read_response;
            break;
        case RC_WRITE_FIRST:
        case RC_WRITE_MIDDLE:
        case RC_WRITE_LAST:
        case RC_WRITE_LAST_IMM:
        case RC_WRITE_ONLY:
        case RC_WRITE_ONLY_IMM:
            ++frames_write;
            break;
        default:
            ++frames_send;
            break;
    }
}

void register_send_path_stats(stats_registry& reg, const std::string& b, const send_path_stats& s) {
    reg.add(b, "messages", s.messages, "messages", "message descriptors taken");
    reg.add(b, "packets", s.packets, "packets", "frames sent to the MAC");
    reg.add(b, "frames_send", s.frames_send, "frames", "SEND First/Middle/Last/Only frames");
    reg.add(b, "frames_write", s.frames_write, "frames", "RDMA WRITE frames");
    reg.add(b, "frames_read_request", s.frames_read_request, "frames", "RDMA READ Request frames");
    reg.add(b, "frames_read_response", s.frames_read_response, "frames",
            "RDMA READ Response frames");
    reg.add(b, "frames_ack", s.frames_ack, "frames", "Acknowledge frames");
    reg.add(b, "beats", s.beats, "beats", "64-byte beats on the frame stream");
    reg.add(b, "bytes", s.bytes, "bytes", "frame bytes sent (no FCS)");
    reg.add(b, "stall_payload_cycles", s.stall_payload_cycles, "cycles",
            "cycles inside a frame with no beat valid: payload not yet in");
    reg.add(b, "stall_backpressure_cycles", s.stall_backpressure_cycles, "cycles",
            "cycles with a beat valid that the MAC did not accept");
}

// --- egress_stomp ---------------------------------------------------------------------------

void egress_stomp::add(uint32_t dest_qpn, uint32_t first_psn, uint32_t packets) {
    if (packets != 0) {
        m_ranges.push_back(
            {dest_qpn & roce::QPN_MASK, first_psn & roce::PSN_MASK, packets, packets});
    }
}

void egress_stomp::apply(std::vector<uint8_t>& frame) {
    if (frame.size() < roce::BTH_OFFSET + roce::BTH_BYTES + roce::ICRC_BYTES) {
        return;
    }
    const uint8_t* bth = frame.data() + roce::BTH_OFFSET;
    if (!roce::info(bth[0]).has_payload) {
        return;  // ACK / NAK / READ request: never poisoned
    }
    const uint32_t qpn = uint32_t{bth[5]} << 16 | uint32_t{bth[6]} << 8 | bth[7];
    const uint32_t psn = uint32_t{bth[9]} << 16 | uint32_t{bth[10]} << 8 | bth[11];
    for (auto it = m_ranges.begin(); it != m_ranges.end(); ++it) {
        if (it->dest_qpn == qpn && ((psn - it->first_psn) & roce::PSN_MASK) < it->packets) {
            for (size_t i = frame.size() - roce::ICRC_BYTES; i < frame.size(); ++i) {
                frame[i] = static_cast<uint8_t>(~frame[i]);
            }
            ++stomped;
            if (--it->left == 0) {
                m_ranges.erase(it);
            }
            return;
        }
    }
}

// --- mac_fifo_output ------------------------------------------------------------------------

uint64_t mac_fifo_output::next_ready(uint64_t edge, bool frame_start) {
    if (!frame_start) {
        return edge;  // nothing but this frame enters the FIFO while it streams
    }
    if (!full()) {
        return edge;  // occupancy can only fall between now and `edge`
    }
    while (full()) {
        sc_core::wait(m_fifo.read_event());  // woken at the time of the pop
    }
    return std::max(edge, m_clk.cycle_of(sim_now()));
}

bool mac_fifo_output::ready_at(uint64_t edge, bool frame_start) {
    // Inside a frame ready stays high (see the class comment). This also keeps a lockstep
    // RTL from seeing the model's copy of the same frame, put at this very edge.
    if (!frame_start || !full()) {
        return true;
    }
    // A pop at exactly this time counts for this edge (as in next_ready), but it may come in
    // any later delta of this time step: wait for it, or until the step is over (one time
    // resolution unit later, well before the next edge).
    const sc_core::sc_time t = sim_now();
    sc_core::wait(sc_core::sc_get_time_resolution(), m_fifo.read_event());
    return sim_now() == t && !full();
}

// --- send_path_inputs ------------------------------------------------------------------------

send_path_inputs::send_path_inputs(const std::string& name, const send_path_config& cfg,
                                   const clock_domain& clk)
    : m_name(name)
    , m_cfg(cfg)
    , m_clk(clk) {
    update();
}

void send_path_inputs::put_descriptor(const tx_descriptor& d) {
    while (m_desc_slots >= m_cfg.desc_fifo_depth &&
           (m_desc.empty() || !continues_segment(m_desc.back().desc, d))) {
        wait_space();
    }
    const uint64_t valid_edge = edge_after(m_clk, sim_now());
    mirror_descriptor(d, valid_edge);
    if (on_descriptor) {
        on_descriptor(d, valid_edge);
    }
}

void send_path_inputs::mirror_descriptor(const tx_descriptor& d, uint64_t valid_edge) {
    descriptor_entry e;
    e.desc = d;
    e.valid_edge = valid_edge;
    e.payload_offset = m_desc_payload_end;
    m_desc_payload_end += segment_payload_bytes(d);
    if (!m_desc.empty() && continues_segment(m_desc.back().desc, d)) {
        m_desc.back().passes_slot = true;  // the message's slot goes on with this segment
    } else {
        ++m_desc_slots;
    }
    m_desc.push_back(e);
    update();
    notify_input();
}

void send_path_inputs::mirror_payload(const uint8_t* p, size_t n, uint64_t valid_edge) {
    chunk_entry e;
    e.offset = m_pay_end;
    e.valid_edge = valid_edge;
    e.bytes = take_buffer(n);
    std::copy(p, p + n, e.bytes.begin());
    m_chunks.push_back(std::move(e));
    m_pay_end += n;
    update();
    notify_input();
}

void send_path_inputs::wait_payload_room() {
    while (m_pay_end - m_pay_base >= m_cfg.payload_fifo_bytes) {
        wait_space();
    }
}

void send_path_inputs::put_payload(payload_chunk&& c) {
    size_t done = 0;
    const size_t total = c.bytes.size();
    while (done < total) {
        while (m_pay_end - m_pay_base >= m_cfg.payload_fifo_bytes) {
            wait_space();
        }
        const size_t room = m_cfg.payload_fifo_bytes - (m_pay_end - m_pay_base);
        const size_t n = std::min(room, total - done);
        const sc_core::sc_time now = sim_now();
        chunk_entry e;
        e.offset = m_pay_end;
        e.valid_edge = edge_after(m_clk, c.ready > now ? c.ready : now);
        // A streamed chunk (payload_chunk::parts): the parts within this piece of it.
        for (const auto& [end, ready] : c.parts) {
            if (end <= done) {
                continue;
            }
            const size_t to = std::min<size_t>(end, done + n);
            e.parts.emplace_back(e.offset + (to - done),
                                 edge_after(m_clk, ready > now ? ready : now));
            if (to == done + n) {
                break;
            }
        }
        if (!e.parts.empty()) {
            e.valid_edge = e.parts.back().second;
        }
        if (done == 0 && n == total) {
            e.bytes = std::move(c.bytes);
        } else {
            e.bytes.assign(c.bytes.begin() + static_cast<std::ptrdiff_t>(done),
                           c.bytes.begin() + static_cast<std::ptrdiff_t>(done + n));
        }
        if (on_payload) {
            if (e.parts.empty()) {
                on_payload(e.bytes.data(), e.bytes.size(), e.valid_edge);
            } else {
                uint64_t at = e.offset;  // a mirror takes each part as a chunk of its own
                for (const auto& [end, edge] : e.parts) {
                    on_payload(e.bytes.data() + (at - e.offset), static_cast<size_t>(end - at),
                               edge);
                    at = end;
                }
            }
        }
        m_chunks.push_back(std::move(e));
        m_pay_end += n;
        done += n;
        update();
        notify_input();
    }
}

// A put or release at an instant when nobody waits would leave a delta notification that wakes
// no one but still counts as activity at the instant (sc_pending_activity_at_current_time): a
// request the transmit engine makes next would then go through a timestep_arbiter round
// instead of being granted on the spot. Notified only while someone waits: a consumer or
// producer that does not wait checks the FIFO state before it would.
void send_path_inputs::notify_input() {
    if (m_input_listeners != 0) {
        m_input_event.notify(sc_core::SC_ZERO_TIME);
    }
}

void send_path_inputs::notify_space() {
    if (m_space_waiters != 0) {
        m_space_event.notify(sc_core::SC_ZERO_TIME);
    }
}

void send_path_inputs::wait_space() {
    ++m_space_waiters;
    sc_core::wait(m_space_event);
    --m_space_waiters;
}

uint64_t send_path_inputs::part_valid_edge(const chunk_entry& c, uint64_t to) {
    const uint64_t last = std::min<uint64_t>(to, c.offset + c.bytes.size());
    for (const auto& p : c.parts) {
        if (p.first >= last) {
            return p.second;
        }
    }
    return c.valid_edge;
}

void send_path_inputs::copy_payload(uint64_t from, size_t n, uint8_t* dst) const {
    for (const auto& c : m_chunks) {
        if (n == 0) {
            break;
        }
        const uint64_t end = c.offset + c.bytes.size();
        if (end <= from) {
            continue;
        }
        const size_t skip = static_cast<size_t>(from - c.offset);
        const size_t k = std::min(n, c.bytes.size() - skip);
        std::memcpy(dst, c.bytes.data() + skip, k);
        dst += k;
        from += k;
        n -= k;
    }
}

send_path_inputs::payload_span send_path_inputs::payload_at(uint64_t from) const {
    for (const auto& c : m_chunks) {
        const uint64_t end = c.offset + c.bytes.size();
        if (end <= from) {
            continue;
        }
        if (from < c.offset) {
            break;
        }
        return {c.bytes.data() + (from - c.offset), static_cast<size_t>(end - from), c.valid_edge};
    }
    return {};
}

const uint8_t* send_path_inputs::payload_in_place(uint64_t from, size_t n) const {
    const payload_span s = payload_at(from);
    return s.bytes >= n ? s.data : nullptr;
}

std::vector<uint8_t> send_path_inputs::take_buffer(size_t n) {
    if (m_spare.empty()) {
        return std::vector<uint8_t>(n);
    }
    std::vector<uint8_t> b = std::move(m_spare.back());
    m_spare.pop_back();
    b.resize(n);  // a buffer of a chunk as large (the usual case): no byte written
    return b;
}

void send_path_inputs::release_descriptor() {
    if (!m_desc.front().passes_slot) {
        --m_desc_slots;
    }
    m_desc.pop_front();
    ++m_desc_base;
    update();
    notify_space();
}

void send_path_inputs::release_payload(uint64_t n) {
    if (n == 0) {
        return;
    }
    m_pay_base += n;
    while (!m_chunks.empty() &&
           m_chunks.front().offset + m_chunks.front().bytes.size() <= m_pay_base) {
        if (m_spare.size() < SPARE_BUFFERS) {
            m_spare.push_back(std::move(m_chunks.front().bytes));
        }
        m_chunks.pop_front();
    }
    update();
    notify_space();
}

void send_path_inputs::clear() {
    m_desc.clear();
    m_desc_slots = 0;
    m_desc_base = 0;
    m_desc_payload_end = 0;
    m_chunks.clear();
    m_pay_base = 0;
    m_pay_end = 0;
    update();
    notify_space();
}

void send_path_inputs::update() {
    m_desc_occupancy = m_desc_slots;
    m_payload_occupancy = static_cast<uint32_t>(m_pay_end - m_pay_base);
    m_desc_ready = m_desc_slots < m_cfg.desc_fifo_depth;
    m_payload_ready = m_pay_end - m_pay_base < m_cfg.payload_fifo_bytes;
    m_desc_valid = !m_desc.empty();
    m_payload_valid = m_pay_end > m_pay_base;
}

void send_path_inputs::trace(sc_core::sc_trace_file* tf, const std::string& prefix) const {
    sc_core::sc_trace(tf, m_desc_occupancy, prefix + ".desc_fifo.occupancy");
    sc_core::sc_trace(tf, m_desc_valid, prefix + ".desc_fifo.valid");
    sc_core::sc_trace(tf, m_desc_ready, prefix + ".desc_fifo.ready");
    sc_core::sc_trace(tf, m_payload_valid, prefix + ".payload_fifo.valid");
    sc_core::sc_trace(tf, m_payload_occupancy, prefix + ".payload_fifo.bytes");
    sc_core::sc_trace(tf, m_payload_ready, prefix + ".payload_fifo.ready");
}

}  // namespace rnic::hw
