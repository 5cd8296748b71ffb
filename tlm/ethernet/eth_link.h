// SPDX-License-Identifier: Apache-2.0
// Full-duplex Ethernet link between two MACs: serialization at the line rate, propagation
// delay, frame capture. Frames are real bytes (no FCS; the wire cost of FCS, preamble and
// inter-frame gap is counted).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
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
};

struct eth_link_config {
    double rate_gbps = 100.0;      // line rate
    double propagation_ns = 50.0;  // cable + PHY latency, one way
    uint32_t tx_fifo_frames = 4;   // MAC transmit FIFO depth, frames
    std::string name;              // for stats
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
    void set_capture(std::function<void(int side, const eth_frame&)> fn) { m_capture = std::move(fn); }

    const eth_link_config& config() const { return m_cfg; }
    double ps_per_byte() const { return m_ps_per_byte; }

    struct stats {
        uint64_t frames = 0;
        uint64_t bytes = 0;       // frame bytes (no FCS)
        uint64_t wire_bytes = 0;  // incl. FCS, preamble, IFG
        uint64_t busy_ps = 0;
    };
    const stats& get_stats(int side) const { return m_stats[side]; }

private:
    void serializer_thread(int side);
    void delivery_thread(int side);

    eth_link_config m_cfg;
    double m_ps_per_byte;
    std::unique_ptr<hw::channel<eth_frame>> m_tx[2];
    frame_sink_if* m_sink[2] = {nullptr, nullptr};
    std::deque<std::pair<sc_core::sc_time, eth_frame>> m_in_flight[2];
    sc_core::sc_event m_in_flight_event[2];
    std::function<void(int, const eth_frame&)> m_capture;
    stats m_stats[2];
    bool m_busy[2] = {false, false};  // traced: a frame is on the wire
};

}  // namespace rnic::fabric
