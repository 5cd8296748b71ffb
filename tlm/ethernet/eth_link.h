// SPDX-License-Identifier: Apache-2.0
// Full-duplex Ethernet link between two MACs: serialization at the line rate, propagation
// delay, frame capture. Frames are real bytes (no FCS; the wire cost of FCS, preamble and
// inter-frame gap is counted).
#pragma once

#include <array>
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
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/common/timestep_arbiter.h"

namespace rnic::fabric {

struct eth_frame {
    std::vector<uint8_t> data;  // Ethernet header .. ICRC, no FCS
    uint64_t flow_id = 0;       // WQE id for the timeline trace
    sc_core::sc_time tx_start;  // first bit on the wire (set by the link)
    uint8_t priority = 0;       // PFC priority the sending MAC transmitted it in (set by the
                                // link from the DSCP for MAC FIFO frames; by a frame source)
    // A frame put into the MAC FIFO before its last byte is in (cut-through from the send path,
    // rnic.send_path.cut_through): when its last byte is in. The MAC starts it no earlier than
    // that minus the wire time of the preamble and the frame, so it cannot underrun. Zero: in.
    sc_core::sc_time complete;
};

// Frame buffers recycled between the blocks that make frames and those that end them: a send
// path takes one for each frame it builds, a receive path gives the frame's back once it has
// handled it, so steady traffic allocates no frame (one malloc and free per packet otherwise).
// take_frame_buffer(): an empty buffer, with the capacity of a frame it held if one is spare.
// give_frame_buffer(): kept for a later take (up to a bound; one without capacity is left as
// is). Per thread: a process simulates on one thread, so this is the process's pool.
std::vector<uint8_t> take_frame_buffer();
void give_frame_buffer(std::vector<uint8_t>&& buf);
// Gives `buf` back when it goes out of scope (a receiver's frame, handled however it ended).
class frame_buffer_return {
public:
    explicit frame_buffer_return(std::vector<uint8_t>& buf)
        : m_buf(buf) {}
    ~frame_buffer_return() { give_frame_buffer(std::move(m_buf)); }
    frame_buffer_return(const frame_buffer_return&) = delete;
    frame_buffer_return& operator=(const frame_buffer_return&) = delete;

private:
    std::vector<uint8_t>& m_buf;
};

class eth_link;

// What a MAC receive side implements: called when the frame's last bit has arrived (or, for a
// cut-through receiver, when its first CUT_THROUGH_BYTES are in). MAC control frames (PFC) are
// consumed by the link's MAC and never reach the sink.
class frame_sink_if {
public:
    virtual ~frame_sink_if() = default;
    virtual void receive_frame(eth_frame&& frame) = 0;
    // Called by eth_link::attach: the receiver asserts PFC XOFF through link.set_xoff(side,..).
    virtual void bind_link(eth_link& link, int side) {
        (void)link;
        (void)side;
    }
    virtual bool cut_through() const { return false; }
    // True: the sink takes its frames ahead (receive_frame_ahead) and wakes itself when they
    // arrive, so a frame on the link costs the sink's one wake-up and none of the link's.
    virtual bool takes_frames_ahead() const { return false; }
    // For a sink that takes_frames_ahead(): the frame that arrives at `at` (after now), handed
    // over when its first bit leaves the sender (or, from another rank, when it is injected);
    // the sink must act on it at `at` exactly as receive_frame would then. Frames of one
    // direction come in the order they were sent (FIFO on equal arrival times). Never a MAC
    // control (PFC) frame: the link's MAC consumes those.
    virtual void receive_frame_ahead(eth_frame&& frame, const sc_core::sc_time& at) {
        (void)at;
        receive_frame(std::move(frame));
    }
};

// A transmitter that arbitrates at the moment the wire is free (a switch egress port) instead
// of through the MAC FIFO. pull() hands over the next frame whose priority is not paused (bit
// p of `paused`) and returns true; or returns false and sets `retry_at` to when a queued frame
// becomes eligible (sc_max_time(): when data_event() fires).
class frame_source_if {
public:
    virtual ~frame_source_if() = default;
    virtual bool pull(uint8_t paused, eth_frame& out, sc_core::sc_time& retry_at) = 0;
    virtual const sc_core::sc_event& data_event() const = 0;
    // False when nothing is queued at all (pull() would return false with retry_at =
    // sc_max_time()): the MAC then sleeps without waiting for the instant to settle.
    virtual bool holds_frames() const { return true; }
    // True when pull() has effects even with nothing queued (a switch with route epochs still
    // to apply or paused queues to follow): the MAC then asks at the end of every frame, as it
    // does when frames are queued; false lets an idle MAC skip that wake-up.
    virtual bool wants_idle_pulls() const { return true; }
};

// 802.1Qbb priority flow control: MAC control frame (EtherType 0x8808, opcode 0x0101) to
// 01:80:C2:00:00:01: class-enable vector (bit p: time[p] valid), then 8 pause times in quanta
// of 512 bit times, padded to the 60-byte minimum (64 with FCS).
constexpr uint16_t ETHERTYPE_MAC_CONTROL = 0x8808;
constexpr uint16_t PFC_OPCODE = 0x0101;
constexpr size_t PFC_FRAME_BYTES = 60;    // without FCS
constexpr size_t CUT_THROUGH_BYTES = 64;  // headers a cut-through receiver needs before forwarding
using pfc_quanta = std::array<uint16_t, 8>;
std::vector<uint8_t> build_pfc_frame(const std::array<uint8_t, 6>& src, uint8_t class_enable,
                                     const pfc_quanta& quanta);
// True for a PFC frame (fills class_enable and quanta); false for anything else.
bool parse_pfc_frame(const std::vector<uint8_t>& frame, uint8_t& class_enable, pfc_quanta& quanta);
// True for a PFC frame (what parse_pfc_frame accepts).
bool is_pfc_frame(const std::vector<uint8_t>& frame);
// Priority of a frame: an 802.1Q tag's PCP (tlm/ethernet/vlan.h); else an IPv4 frame's by the
// default map (DSCP >> 3); 0 for anything else.
uint8_t default_priority(const std::vector<uint8_t>& frame);

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
    // PFC storm (a peer stuck asserting XOFF: a NIC whose receive pipeline hangs keeps sending
    // pause frames): in [pfc_storm_start_ns, pfc_storm_end_ns) the MAC at side pfc_storm_side
    // holds XOFF on the priorities of pfc_storm_priorities (bit p: priority p; 0: no storm) on
    // top of what its receiver asks, with real pause frames (sent and refreshed as for any
    // XOFF). Not one of any()'s kinds: no frame is touched.
    int pfc_storm_side = 0;
    uint8_t pfc_storm_priorities = 0;
    double pfc_storm_start_ns = 0;
    double pfc_storm_end_ns = 1e18;
    uint64_t seed = 1;
    bool any() const {
        return drop > 0 || corrupt > 0 || duplicate > 0 || reorder > 0 || jitter_ns > 0 ||
               !link_down_ns.empty();
    }
};

struct eth_link_config {
    double rate_gbps = 100.0;       // line rate
    double propagation_ns = 50.0;   // cable + PHY latency, one way
    uint32_t tx_fifo_frames = 4;    // MAC transmit (data) FIFO depth, frames (1..4096)
    uint32_t ctrl_fifo_frames = 8;  // MAC control transmit queue depth, frames (1..4096)
    // Lossless: the MACs send and honour PFC pause frames (802.1Qbb).
    bool pfc = true;
    fault_config faults;
};
eth_link_config parse_eth_link_config(config::reader r);

// Wire bytes of one frame: the frame + FCS 4 + preamble/SFD 8 + IFG 12, at least 84.
uint64_t eth_wire_bytes(size_t frame_len_without_fcs);

class eth_link : public sc_core::sc_module {
public:
    eth_link(sc_core::sc_module_name name, const eth_link_config& cfg, hw::sim_context& ctx);

    // side 0 and side 1: each NIC puts frames into its side's MAC FIFO (blocking when full)
    // and receives the other side's frames through its sink. tx is the data FIFO (the send
    // path's alone); ctrl_tx the management/control queue (GSI: CM MADs, ARP; CNPs), which the
    // serializer serves first at every frame boundary (strict priority: its frames are small
    // and rare), after a pending pause frame and subject to PFC pause of their priority.
    hw::channel<eth_frame>& tx(int side) { return *m_tx[side]; }
    hw::channel<eth_frame>& ctrl_tx(int side) { return *m_ctrl_tx[side]; }
    void attach(int side, frame_sink_if* sink) {
        m_sink[side] = sink;
        if (sink != nullptr) {
            sink->bind_link(*this, side);
        }
    }
    // A pulling transmitter for `side` instead of its MAC FIFO (a switch port).
    void set_source(int side, frame_source_if* source) { m_source[side] = source; }
    // Called as each frame `side` transmits starts on the wire (its first bit; the NIC's
    // congestion control stamps RTT samples here).
    void set_tx_observer(int side, std::function<void(const eth_frame&)> fn) {
        m_tx_observer[side] = std::move(fn);
    }
    // Source MAC of the pause frames the MAC at `side` sends.
    void set_mac(int side, const std::array<uint8_t, 6>& mac) { m_mac[side] = mac; }
    void set_pause_quanta(int side, uint16_t quanta) { m_quanta[side] = quanta; }
    // The oscillator of the MAC at `side` (topology.clocks: its node's or switch's): `ppm` off
    // the nominal bit time (IEEE 802.3 allows +-100 ppm per port), so each frame it sends takes
    // (wire bytes x 8 x bit time) / (1 + ppm/1e6), ps fractions carried from frame to frame;
    // jitter_ps > 0: each frame starts off that schedule by a uniform draw in [0, jitter_ps] ps
    // (phase noise, no change of rate; at most half the 84-byte slot; stream seeded by `seed`).
    // Before the simulation starts. 0 and 0: the nominal bit time exactly, as before clocks.
    void set_clock(int side, double ppm, double jitter_ps, uint64_t seed);
    // The receiver at `side` asserts (on) or releases PFC XOFF for the priorities in `mask`. A
    // change queues one pause frame out of `side`, sent ahead of data once the frame on the wire
    // is done (XOFF: the configured quanta, XON: 0); XOFF is refreshed every half pause time
    // while asserted. No effect when the link's pfc is off.
    void set_xoff(int side, uint8_t mask, bool on);
    // XOFF the receiver at `side` asserts (a storm's, faults.pfc_storm_*, not included).
    uint8_t xoff(int side) const { return m_rx_xoff[side]; }
    // Priorities whose transmission out of `side` is paused now.
    uint8_t paused(int side) const;
    // The same at time `t` (a sample of timeseries.csv, taken whatever this kernel's clock).
    uint8_t paused_at(int side, const sc_core::sc_time& t) const;
    // One pause quantum: 512 bit times at the line rate.
    sc_core::sc_time pause_quantum() const { return m_quantum; }
    // Called with every frame as its first bit leaves a MAC (pcap writer).
    void set_capture(std::function<void(int side, const eth_frame&)> fn) {
        m_capture = std::move(fn);
    }

    // A cut link (testbench/distributed): the MAC at `side` is simulated by another rank. Frames
    // the local side sends are not delivered here but kept, with their arrival time, in the
    // outbox (after the fault model, which the sender's rank applies with its direction's own
    // stream); the other rank injects them. `remote_cut_through`: the remote receiver takes
    // frames cut-through (a cut-through switch), which sets their arrival time. The counters of
    // the direction `side` sends in are the other rank's ("<link>.dir<side>" in stats.json).
    // Call before the simulation starts.
    void set_remote(int side, bool remote_cut_through);
    bool remote(int side) const { return m_remote[side]; }
    struct outgoing {
        int from_side = 0;
        sc_core::sc_time arrive;
        eth_frame frame;
    };
    std::vector<outgoing> take_outbox() { return std::move(m_outbox); }
    // A frame the remote side sent, arriving at the local side at `arrive` (not before now).
    // Frames of one direction are injected in the order they were sent, as one process queues
    // them (FIFO on equal arrival times).
    void inject(int from_side, const sc_core::sc_time& arrive, eth_frame&& f);

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
        uint64_t pause_ps = 0;     // time some priority of this direction was paused by PFC
        uint64_t pauses = 0;       // pause frames (nonzero quanta) that paused this direction
        uint64_t pfc_frames = 0;   // pause frames sent in this direction
        uint64_t ecn_marked = 0;   // ECT frames marked CE (faults.ecn_mark)
        uint64_t ctrl_frames = 0;  // frames sent from the control queue
    };
    const stats& get_stats(int side) const { return m_stats[side]; }

private:
    // The MAC's transmitter (a method): at each frame boundary, once the instant has settled,
    // it chooses the next frame (choose: true with mac.frame to start now; false with the next
    // trigger set: to settle, to start it later, to wait for something to send), starts it on
    // the wire (start_frame) and sleeps until its end or, with nothing queued, until something
    // is.
    void serializer_method(int side);
    bool choose(int side);
    void start_frame(int side);
    // Nothing to send: triggered again by a frame queued, a pause frame to send or received,
    // or mac.sleep_until (a pause expiring, a refresh due, a queued frame becoming eligible).
    bool woken_by_events(int side) const;  // sleep's events notified in this delta
    void sleep(int side);
    // What ends a sleep: the data FIFO's (or the source's) data event, the control queue's,
    // m_ctrl_event: one list per side, kept.
    const sc_core::sc_event_or_list& wake_events(int side);
    // Method: delivers the frames of m_in_flight[side] due now, then sleeps until the next one.
    void delivery_method(int side);
    // Applies the fault model to a frame leaving side `side`; queues 0, 1 or 2 deliveries.
    void deliver(int side, eth_frame&& f, const sc_core::sc_time& arrive);
    // Hands a frame sent by `side` that arrives at `at` to its receiver: ahead to a sink that
    // takes frames ahead (not a PFC frame), else into the delivery queue.
    void hand_over(int side, eth_frame&& f, const sc_core::sc_time& at);
    bool matches(const eth_frame& f) const;
    // faults.ecn_mark: marks an ECT frame CE with that probability (in place, before capture).
    void mark_ecn(int side, eth_frame& f);
    // A pause frame arrived at the MAC of `side`: it pauses that side's transmitter.
    void apply_pause(int side, uint8_t class_enable, const pfc_quanta& quanta);
    sc_core::sc_time max_pause_until(int side) const;
    void queue_pause(int side, uint8_t changed);
    // m_xoff[side] = the receiver's XOFF | the storm's; queues a pause frame on a change.
    void update_xoff(int side);
    void storm_thread(int side);
    double uniform(int side) {
        return std::uniform_real_distribution<double>(0.0, 1.0)(m_rng[side]);
    }

    eth_link_config m_cfg;
    double m_ps_per_byte;
    std::unique_ptr<hw::channel<eth_frame>> m_tx[2];
    std::unique_ptr<hw::channel<eth_frame>> m_ctrl_tx[2];
    frame_sink_if* m_sink[2] = {nullptr, nullptr};
    // Frames the link delivers itself (to a sink that does not take them ahead, and PFC
    // frames), by arrival, FIFO on ties: those from m_in_flight_head[side] on (the ones before
    // are delivered). Frames come in the order they arrive but for a fault's delay, so each is
    // put at or near the end and the storage is reused: no allocation per frame.
    std::vector<std::pair<sc_core::sc_time, eth_frame>> m_in_flight[2];
    size_t m_in_flight_head[2] = {0, 0};
    // One stream per direction (side = the sender), seeded from faults.seed and the direction:
    // a direction's draws depend on its own frames alone, so the two halves of a link cut
    // between two ranks (testbench/distributed) draw exactly what one process draws.
    std::mt19937_64 m_rng[2];
    std::mt19937_64 m_ecn_rng[2];  // faults.ecn_mark's own streams
    // set_clock: per direction, femtoseconds per byte (0: nominal, the rounded-ps rule), the
    // fraction of a picosecond carried to the next frame, the jitter and its stream.
    double m_fs_per_byte[2] = {0, 0};
    double m_carry_fs[2] = {0, 0};
    double m_jitter_ps[2] = {0, 0};
    std::mt19937_64 m_jitter_rng[2];
    hw::sim_context& m_ctx;
    hw::quick_event m_in_flight_event[2];
    std::function<void(int, const eth_frame&)> m_capture;
    stats m_stats[2];
    bool m_busy[2] = {false, false};    // traced: a frame is on the wire
    std::string m_track[2];             // "<link>.dir<side>": WQE timeline tracks
    hw::stage_slicer m_wire_slices[2];  // their "wire" slices
    bool m_paused[2] = {false, false};  // traced: some priority paused (updated at pause frames)
    frame_source_if* m_source[2] = {nullptr, nullptr};
    std::function<void(const eth_frame&)> m_tx_observer[2];
    std::array<uint8_t, 6> m_mac[2]{};
    uint16_t m_quanta[2] = {0xFFFF, 0xFFFF};
    sc_core::sc_time m_quantum;
    sc_core::sc_time m_propagation;    // propagation_ns
    uint8_t m_xoff[2] = {0, 0};        // traced: priorities this side's MAC holds off (sent XOFF)
    uint8_t m_rx_xoff[2] = {0, 0};     // what this side's receiver asks (set_xoff)
    uint8_t m_storm_xoff[2] = {0, 0};  // faults.pfc_storm_*: held on top, while the storm lasts
    bool m_ctrl_pending[2] = {false, false};
    uint8_t m_ctrl_cev[2] = {0, 0};  // class-enable vector of the pending pause frame
    sc_core::sc_time m_next_refresh[2];
    hw::quick_event m_ctrl_event[2];  // a pause frame to send, or a pause received
    std::array<sc_core::sc_time, 8> m_pause_until[2];
    // The serializer's step (serializer_method): choosing the next frame (settling the
    // instant first), starting it (after a cut-through frame's wait), woken while idle after a
    // frame (the wire is free at free_at), at a frame's end, sleeping with nothing to send
    // (in short steps until sleep_until).
    enum class tx_state : uint8_t { choose, start, woken, end, sleeping };
    struct tx_mac {
        tx_state state = tx_state::choose;
        hw::settle_ticket settle;
        eth_frame frame;  // chosen, being started
        sc_core::sc_time free_at;
        sc_core::sc_time sleep_until;  // sleeping with nothing to send: until then at most
    };
    tx_mac m_mac_tx[2];
    sc_core::sc_event_or_list m_wake_events[2];  // wake_events()
    bool m_remote[2] = {false, false};
    bool m_remote_cut_through[2] = {false, false};
    std::vector<outgoing> m_outbox;
};

}  // namespace rnic::fabric
