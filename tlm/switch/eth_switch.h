// SPDX-License-Identifier: Apache-2.0
// Shared-buffer datacenter Ethernet switch (issue 14): IPv4 forwarding with per-hop MAC
// rewrite and TTL decrement, longest-prefix routes with ECMP by a seeded 5-tuple hash, ARP
// replies for its port addresses, 8 priorities per port mapped from DSCP (strict priority or
// DWRR), a shared buffer with per-queue reserved space and dynamic thresholds, PFC (802.1Qbb
// pause frames on the wire, XOFF/XON per ingress queue with headroom), RED-style ECN marking
// at egress, lossy tail drop per priority. Serialization and propagation are the links'
// (tlm/ethernet); the switch adds its pipeline latency. See tlm/switch/README.md.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <systemc>

#include "hw/common/config_reader.h"
#include "hw/common/sim_context.h"
#include "tlm/ethernet/eth_link.h"

namespace rnic::fabric {

constexpr uint32_t SWITCH_PRIORITIES = 8;

struct switch_config {
    // Shared buffer (bytes of frame data, without FCS/preamble/IFG).
    uint64_t buffer_bytes = 12u << 20;  // total packet buffer
    uint64_t reserved_bytes = 4096;     // guaranteed per egress queue (port, priority)
    double alpha = 1.0;                 // dynamic threshold: a queue may take alpha x free shared
    // Pipeline: a frame may start leaving `pipeline_ns` after its last bit arrived
    // (store-and-forward) or after its headers arrived (cut-through, when the egress rate is
    // not above the ingress rate; otherwise that frame is stored and forwarded).
    double pipeline_ns = 400.0;
    bool cut_through = false;
    // Scheduler between the 8 priorities of an egress port.
    std::string scheduler = "strict";  // "strict" (7 highest) or "dwrr"
    std::array<uint32_t, SWITCH_PRIORITIES> dwrr_weights{1, 1, 1, 1, 1, 1, 1, 1};
    uint32_t dwrr_quantum_bytes = 1536;  // bytes per round per unit of weight
    // DSCP (0..63) -> priority; default: DSCP >> 3 (class selector).
    std::array<uint8_t, 64> dscp_to_priority{};
    // PFC, per priority: lossless priorities pause the upstream at XOFF; lossy ones tail-drop.
    std::array<bool, SWITCH_PRIORITIES> lossless{true, true, true, true, true, true, true, true};
    uint64_t xoff_bytes = 65536;  // ingress queue (port, priority) above this: pause sent
    uint64_t xon_bytes = 32768;   // ... at or below this again: resume (quanta 0) sent
    double xoff_alpha = 0;        // > 0: XOFF at min(xoff_bytes, reserved_bytes + xoff_alpha x free
                                  // shared pool); XON (xoff_bytes - xon_bytes) below it
    uint64_t headroom_bytes = 0;  // per ingress queue beyond XOFF; 0: computed per port from
                                  // its link (round trip + two maximum frames + pause frame)
    uint32_t pause_quanta = 0xFFFF;  // quanta in the XOFF frames (refreshed at half their time)
    // ECN: RED-style marking of ECT frames at egress enqueue, per priority.
    std::array<bool, SWITCH_PRIORITIES> ecn{};  // marking enabled
    std::array<uint64_t, SWITCH_PRIORITIES> kmin_bytes{};
    std::array<uint64_t, SWITCH_PRIORITIES> kmax_bytes{};
    std::array<double, SWITCH_PRIORITIES> pmax{};
    // Where the RED decision is taken: "enqueue" (on the egress queue the frame finds) or
    // "dequeue" (on the queue it leaves behind as it starts out: the mark is not delayed by the
    // queue it waits in; the HPCC authors' ns-3 switch, SwitchNotifyDequeue).
    std::string ecn_mark_at = "enqueue";
    // ECMP hash seed (5-tuple hash; the UDP source port carries RoCEv2's entropy) and the
    // seed of the marking decisions.
    uint64_t ecmp_seed = 0;
    uint64_t seed = 1;
    switch_config();
};
// Reads switch keys (see tlm/switch/README.md); errors name their JSON path.
switch_config parse_switch_config(config::reader r);

class eth_switch : public sc_core::sc_module {
public:
    eth_switch(sc_core::sc_module_name name, const switch_config& cfg, uint32_t ports,
               hw::sim_context& ctx);
    ~eth_switch() override;

    // Port p is side `side` of `link`: the switch transmits into that side and receives what
    // the other side sends. Every port is connected before simulation starts.
    void connect(uint32_t port, eth_link& link, int side);
    // Port p's own MAC (source MAC of what it forwards out of p, and of its pause frames) and,
    // when nonzero, an IPv4 address it owns on that port (it answers ARP requests for it).
    void set_port_address(uint32_t port, const std::array<uint8_t, 6>& mac, uint32_t ipv4);
    // MAC of the device at the other end of port p (destination MAC of what goes out of p).
    void set_neighbor_mac(uint32_t port, const std::array<uint8_t, 6>& mac);
    // IPv4 route: longest prefix match; `ports` is the ECMP group (one entry: no ECMP).
    void add_route(uint32_t prefix, uint32_t prefix_len, std::vector<uint32_t> ports);

    uint32_t ports() const { return static_cast<uint32_t>(m_ports.size()); }
    const switch_config& config() const { return m_cfg; }

    struct queue_stats {
        uint64_t frames = 0;  // frames sent from this egress queue
        uint64_t bytes = 0;
        uint64_t drops = 0;  // tail drops (lossy) and headroom overflows (lossless)
        uint64_t ecn_marks = 0;
        uint64_t peak_bytes = 0;          // egress queue occupancy peak
        uint64_t occupancy_bytes = 0;     // now (traced)
        uint64_t ingress_peak_bytes = 0;  // ingress accounting of (this port, priority)
        uint64_t ingress_bytes = 0;       // now (traced)
        uint64_t pauses_sent = 0;         // XOFF transitions of this ingress queue
        bool xoff = false;                // traced
        double byte_ps = 0;  // integral of egress occupancy over time (time-weighted average)
        sc_core::sc_time last_change;
    };
    struct port_stats {
        uint64_t rx_frames = 0;
        uint64_t rx_bytes = 0;
        uint64_t tx_frames = 0;
        uint64_t tx_bytes = 0;
        uint64_t drops = 0;     // all drops on this ingress port
        uint64_t no_route = 0;  // dropped: no route, TTL expired, not IPv4, bad header
        uint64_t arp_replies = 0;
        uint64_t pause_frames_sent = 0;
    };
    const queue_stats& queue(uint32_t port, uint32_t prio) const;
    const port_stats& port(uint32_t port) const;
    // Time-weighted average egress occupancy of (port, priority) up to now, bytes.
    double average_occupancy(uint32_t port, uint32_t prio) const;
    // Shared buffer bytes in use now / peak.
    uint64_t buffer_used() const { return m_used; }
    uint64_t buffer_peak() const { return m_peak_used; }
    // ECMP member chosen for a frame among `group_size` (exposed for tests of the hash).
    uint32_t ecmp_index(const uint8_t* frame, size_t len, uint32_t group_size) const;
    // The hash behind it: `salt` is the FNV-1a of the switch's name (salt()).
    static uint32_t ecmp_hash(uint64_t seed, uint64_t salt, const uint8_t* frame, size_t len,
                              uint32_t group_size);
    uint64_t salt() const { return m_salt; }

private:
    struct port_state;
    struct packet;
    struct route {
        uint32_t prefix;
        uint32_t len;
        std::vector<uint32_t> ports;
    };

    void arrive(uint32_t in_port, eth_frame&& f);
    void process_batch();
    void receive(uint32_t in_port, eth_frame&& f);
    void answer_arp(uint32_t in_port, const eth_frame& f);
    const route* lookup(uint32_t dst) const;
    bool pull(uint32_t out_port, uint8_t paused, eth_frame& out, sc_core::sc_time& retry_at);
    void occupancy_changed(queue_stats& q, uint64_t new_bytes);
    void update_pfc(uint32_t in_port, uint32_t prio);
    double uniform();
    // RED: marks the IPv4 header `iph` of an ECT frame CE with the probability of queue length
    // `qlen` at priority `prio` (checksum left to the caller).
    void red_mark(uint8_t* iph, uint8_t prio, uint64_t qlen, uint64_t& marks);

    switch_config m_cfg;
    hw::sim_context& m_ctx;
    std::vector<std::unique_ptr<port_state>> m_ports;
    std::vector<route> m_routes;  // sorted by prefix length, longest first
    uint64_t m_used = 0;          // all buffered bytes
    uint64_t m_shared_used = 0;   // bytes above the queues' reserved space
    uint64_t m_shared_size = 0;   // buffer_bytes minus every queue's reserved space
    uint64_t m_peak_used = 0;
    uint64_t m_rng;
    bool m_dwrr;                                          // scheduler "dwrr" (else strict priority)
    bool m_mark_at_dequeue;                               // ecn_mark_at "dequeue"
    uint64_t m_salt = 0xCBF29CE484222325ull;              // FNV-1a of the switch's name (ECMP hash)
    std::vector<std::pair<uint32_t, eth_frame>> m_batch;  // this instant's arrivals
    sc_core::sc_event m_batch_event;
};

}  // namespace rnic::fabric
