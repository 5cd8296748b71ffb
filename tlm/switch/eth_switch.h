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
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <systemc>

#include "hw/common/config_reader.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "tlm/ethernet/eth_link.h"
#include "tlm/switch/egress_scheduler.h"
#include "tlm/switch/switch_buffer.h"
#include "tlm/switch/switch_config.h"

namespace rnic::fabric {

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
    // Link failure and reroute (README): from `at` on, the ports' state (a port down has its
    // queues flushed and takes no frames) and the whole route table. Applied at the switch's
    // first arrival or transmission choice at or after `at` (no timer: an idle switch stays
    // idle). Epochs in time order, given before the simulation starts.
    struct route_spec {
        uint32_t prefix = 0;
        uint32_t len = 0;
        std::vector<uint32_t> ports;
    };
    struct route_epoch {
        sc_core::sc_time at;
        std::vector<route_spec> routes;
        std::vector<bool> port_up;  // per port
    };
    void set_route_epochs(std::vector<route_epoch> epochs);
    bool port_up(uint32_t port) const;

    // PFC deadlock detection (pfc_deadlock.h): the link and side of port p; whether egress
    // queue (p, k) is stuck (holds frames, paused for pfc_deadlock_detect_ns, no watchdog storm);
    // whether a frame queued there came in at port `in_port`; who to tell when a queue gets
    // stuck.
    const eth_link* port_link(uint32_t p) const;
    int port_side(uint32_t p) const;
    bool queue_stuck(uint32_t p, uint32_t k) const;
    bool holds_from(uint32_t p, uint32_t k, uint32_t in_port) const;
    void set_stuck_observer(std::function<void()> fn) { m_stuck_observer = std::move(fn); }

    uint32_t ports() const { return static_cast<uint32_t>(m_ports.size()); }
    const switch_config& config() const { return m_cfg; }

    struct queue_stats {
        uint64_t frames = 0;  // frames sent from this egress queue
        uint64_t bytes = 0;
        uint64_t drops = 0;  // tail drops (lossy) and headroom overflows (lossless)
        uint64_t ecn_marks = 0;
        uint64_t pauses_sent = 0;     // XOFF transitions of this ingress queue
        uint64_t lossless_drops = 0;  // drops of a lossless priority (headroom overflow): 0
        uint64_t pfcwd_storms = 0;    // PFC watchdog: storms detected on this egress queue
        uint64_t pfcwd_drops = 0;     // ... frames it dropped (action "drop")
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
        uint64_t link_down_drops = 0;  // flushed or routed here while the port was down
        uint64_t link_downs = 0;       // times the port was seen going down
    };
    const queue_stats& queue(uint32_t port, uint32_t prio) const;
    const port_stats& port(uint32_t port) const;
    // Time-weighted average egress occupancy of (port, priority) up to now, bytes.
    double average_occupancy(uint32_t port, uint32_t prio) const;
    // The buffer accounting: occupancy, ingress accounting and XOFF state per (port, priority).
    const switch_buffer& buffer() const { return m_buf; }
    // Shared buffer bytes in use now / peak.
    uint64_t buffer_used() const { return m_buf.used(); }
    uint64_t buffer_peak() const { return m_buf.peak_used(); }
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

    // A frame that arrives at port `in_port` at `at` (the link hands it over when it starts
    // on the wire): queued by arrival time, then ingress port, for process_arrivals.
    void arrive(uint32_t in_port, eth_frame&& f, const sc_core::sc_time& at);
    // Method, woken at each arrival time: takes that instant's arrivals in ingress port order.
    void process_arrivals();
    void receive(uint32_t in_port, eth_frame&& f);
    void answer_arp(uint32_t in_port, const eth_frame& f);
    const route* lookup(uint32_t dst) const;
    bool pull(uint32_t out_port, uint8_t paused, eth_frame& out, sc_core::sc_time& retry_at);
    // Egress occupancy of a queue is about to change from `old_bytes`: integrate it.
    void occupancy_changed(queue_stats& q, uint64_t old_bytes);
    // HPCC: writes this hop's INT record into a frame that carries a stack, as it leaves
    // egress port `out` (switch_config::int_telemetry).
    void stamp_telemetry(port_state& op, uint32_t out, std::vector<uint8_t>& frame,
                         const sc_core::sc_time& now);
    void update_pfc(uint32_t in_port, uint32_t prio);
    // Applies the route epochs due at `now` (set_route_epochs).
    void apply_epochs(const sc_core::sc_time& now);
    // Drops every frame queued at egress port p (counted in its link_down_drops).
    void flush_port(uint32_t p);
    // Drops the frames of egress queue (p, k); returns how many.
    uint64_t flush_queue(uint32_t p, uint32_t k);
    // Paused queues: the watchdog's and the deadlock check's timer (a method process that
    // runs only while some queue holds frames under a pause).
    void watch(port_state& op, uint8_t mask, const sc_core::sc_time& now);
    void schedule_pause_check(const sc_core::sc_time& at, const sc_core::sc_time& now);
    void on_pause_check();
    double uniform();
    // RED: marks the IPv4 header `iph` of an ECT frame CE with the probability of egress queue
    // (out, prio) as it is now (switch_buffer::mark_probability; checksum left to the caller).
    void red_mark(uint8_t* iph, uint32_t out, uint8_t prio, uint64_t& marks);

    switch_config m_cfg;
    hw::sim_context& m_ctx;
    std::vector<std::unique_ptr<port_state>> m_ports;
    std::vector<route> m_routes;  // sorted by prefix length, longest first
    std::vector<route_epoch> m_epochs;
    size_t m_next_epoch = 0;  // the first epoch not yet applied
    uint64_t m_reroutes = 0;  // epochs applied
    switch_buffer m_buf;
    uint64_t m_rng;
    bool m_mark_at_dequeue;                   // ecn_mark_at "dequeue"
    uint64_t m_salt = 0xCBF29CE484222325ull;  // FNV-1a of the switch's name (ECMP hash)
    // Frames on their way in, taken earliest first, ties in ingress port order, each port's in
    // hand-over order: a heap of small keys (arrival time, ingress port, hand-over number) over
    // the frames, which stay in slots of their own (kept, with a list of the free ones): an
    // arrival allocates nothing and the heap moves no frame.
    struct arrival {
        sc_core::sc_time at;
        uint32_t port = 0;
        uint32_t slot = 0;  // in m_arrival_frames
        uint64_t seq = 0;
    };
    std::vector<arrival> m_arrivals;
    std::vector<eth_frame> m_arrival_frames;
    std::vector<uint32_t> m_free_arrival_slots;
    uint64_t m_arrival_seq = 0;
    sc_core::sc_time m_pipeline;  // pipeline_ns
    double m_check_ns = 0;        // the earlier of the watchdog's detection and the deadlock time
    bool m_wd_drop = true;        // pfc_watchdog.action "drop" (else "forward")
    hw::quick_event m_pause_check;
    sc_core::sc_time m_pause_due = sc_core::sc_max_time();  // the check's time (the event steps)
    std::function<void()> m_stuck_observer;
    hw::quick_event m_arrival_event;  // timed at the earliest arrival
};

}  // namespace rnic::fabric
