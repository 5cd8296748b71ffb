// SPDX-License-Identifier: Apache-2.0
// Full-duplex Ethernet link between two MACs: serialization at the line rate, propagation
// delay, frame capture. Frames are real bytes (no FCS; the wire cost of FCS, preamble and
// inter-frame gap is counted).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <systemc>

#include "hw/common/channel.h"
#include "hw/common/config_reader.h"
#include "hw/common/sim_context.h"

namespace rnic::fabric {

struct eth_frame {
    std::vector<uint8_t> data;  // Ethernet header .. ICRC, no FCS
    uint64_t flow_id = 0;       // WQE id for the timeline trace
    sc_core::sc_time tx_start;  // first bit on the wire (set by the link)
};

// What a MAC receive side implements: called when the frame's last bit has arrived.
class frame_sink_if {
public:
    virtual ~frame_sink_if() = default;
    virtual void receive_frame(eth_frame&& frame) = 0;
    // Lossless Ethernet (PFC): a receiver whose buffer is full is not ready; the link holds
    // the frame and pauses the sender until ready_event().
    virtual bool ready() const { return true; }
    virtual const sc_core::sc_event* ready_event() const { return nullptr; }
};

// Seeded wire faults (issue: reliable transport). Each probability applies per frame, to the
// frames that match the filters (QP, opcode, time window).
struct fault_config {
    double drop = 0;       // frame lost
    double corrupt = 0;    // one random bit flipped (headers included)
    double duplicate = 0;  // frame delivered twice
    double reorder = 0;    // frame held back by reorder_delay_ns (later ones overtake it)
    double reorder_delay_ns = 2000;
    double jitter_ns = 0;        // extra delay, uniform in [0, jitter_ns]
    int64_t qp = -1;             // only frames to this destination QP (-1: all)
    int32_t opcode = -1;         // only frames with this BTH opcode (-1: all)
    double window_start_ns = 0;  // only frames sent in [start, end)
    double window_end_ns = 1e18;
    std::vector<std::pair<double, double>> link_down_ns;  // frames sent in these are lost
    // ECN: an ECT(0)/ECT(1) frame leaves marked CE (IPv4 ECN = 11, header checksum updated), as
    // a congested switch queue would mark it: lets two nodes exercise congestion control
    // (hw/cc) without a switch. Drawn from its own stream (seeded from `seed`), so setting it
    // changes no other fault's draws; it is not one of any()'s kinds.
    double ecn_mark = 0;
    uint64_t seed = 1;
    bool any() const {
        return drop > 0 || corrupt > 0 || duplicate > 0 || reorder > 0 || jitter_ns > 0 ||
               !link_down_ns.empty();
    }
};

struct eth_link_config {
    double rate_gbps = 100.0;      // line rate
    double propagation_ns = 50.0;  // cable + PHY latency, one way
    uint32_t tx_fifo_frames = 4;   // MAC transmit FIFO depth, frames (2..4096)
    bool pfc = true;               // lossless: a full receiver pauses the sender (802.1Qbb)
    fault_config faults;
};
eth_link_config parse_eth_link_config(config::reader r);

// Wire bytes of one frame: the frame + FCS 4 + preamble/SFD 8 + IFG 12, at least 84.
uint64_t eth_wire_bytes(size_t frame_len_without_fcs);

class eth_link : public sc_core::sc_module {
public:
    eth_link(sc_core::sc_module_name name, const eth_link_config& cfg, hw::sim_context& ctx);

    // side 0 and side 1: each NIC puts frames into its side's MAC FIFO (blocking when full)
    // and receives the other side's frames through its sink.
    hw::channel<eth_frame>& tx(int side) { return *m_tx[side]; }
    void attach(int side, frame_sink_if* sink) { m_sink[side] = sink; }
    // Called with every frame as its first bit leaves a MAC (pcap writer).
    void set_capture(std::function<void(int side, const eth_frame&)> fn) {
        m_capture = std::move(fn);
    }

    const eth_link_config& config() const { return m_cfg; }
    double ps_per_byte() const { return m_ps_per_byte; }

    struct stats {
        uint64_t frames = 0;
        uint64_t bytes = 0;       // frame bytes (no FCS)
        uint64_t wire_bytes = 0;  // incl. FCS, preamble, IFG
        uint64_t busy_ps = 0;
        uint64_t dropped = 0;  // faults injected, by kind
        uint64_t corrupted = 0;
        uint64_t duplicated = 0;
        uint64_t reordered = 0;
        uint64_t delayed = 0;
        uint64_t link_down_drops = 0;
        uint64_t pause_ps = 0;  // time the sender was paused by PFC
        uint64_t pauses = 0;
        uint64_t ecn_marked = 0;  // ECT frames marked CE (faults.ecn_mark)
    };
    const stats& get_stats(int side) const { return m_stats[side]; }

private:
    void serializer_thread(int side);
    void delivery_thread(int side);
    // Applies the fault model to a frame leaving side `side`; queues 0, 1 or 2 deliveries.
    void deliver(int side, eth_frame&& f, const sc_core::sc_time& arrive);
    bool matches(const eth_frame& f) const;
    // faults.ecn_mark: marks an ECT frame CE with that probability (in place, before capture).
    void mark_ecn(int side, eth_frame& f);
    double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(m_rng); }

    eth_link_config m_cfg;
    double m_ps_per_byte;
    std::unique_ptr<hw::channel<eth_frame>> m_tx[2];
    frame_sink_if* m_sink[2] = {nullptr, nullptr};
    std::multimap<sc_core::sc_time, eth_frame> m_in_flight[2];  // by arrival; FIFO on ties
    std::mt19937_64 m_rng;
    std::mt19937_64 m_ecn_rng;  // faults.ecn_mark's own stream
    hw::sim_context& m_ctx;
    sc_core::sc_event m_in_flight_event[2];
    std::function<void(int, const eth_frame&)> m_capture;
    stats m_stats[2];
    bool m_busy[2] = {false, false};    // traced: a frame is on the wire
    bool m_paused[2] = {false, false};  // traced: PFC pause from the receiver of this direction
    sc_core::sc_event m_resume[2];
};

}  // namespace rnic::fabric
