// SPDX-License-Identifier: Apache-2.0
// Shared-buffer Ethernet switch. Event-driven: a frame costs one call at its arrival (forward,
// account, enqueue) and one pull when its egress wire is free; an idle switch has no events.
#include "tlm/switch/eth_switch.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "hw/common/numeric.h"
#include "hw/common/quick_event.h"
#include "hw/common/short_wait.h"
#include "hw/common/sim_now.h"
#include "hw/roce/protocol.h"
#include "hw/roce/telemetry.h"
#include "tlm/ethernet/vlan.h"

namespace rnic::fabric {

namespace {

constexpr size_t ETH = 14;
constexpr uint16_t ETHERTYPE_IPV4 = 0x0800;
constexpr uint16_t ETHERTYPE_ARP = 0x0806;
constexpr uint64_t MAX_FRAME_WIRE = 9216 + 24;  // jumbo frame + FCS, preamble, IFG

uint16_t be16(const uint8_t* p) {
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
uint32_t be32(const uint8_t* p) {
    return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
           (static_cast<uint32_t>(p[2]) << 8) | p[3];
}

// The IPv4 header checksum over the header's IHL words (RFC 1071; roce::ipv4_checksum).
uint16_t ipv4_checksum(const uint8_t* ip) {
    return roce::ipv4_checksum(ip, static_cast<size_t>(ip[0] & 0xF) * 4);
}

void set_ipv4_checksum(uint8_t* ip) {
    const uint16_t c = ipv4_checksum(ip);
    ip[10] = static_cast<uint8_t>(c >> 8);
    ip[11] = static_cast<uint8_t>(c);
}

// The checksum of a header whose checksum was right, after its words 0 (TOS) and 4 (TTL)
// changed from `old0` and `old4` (RFC 1624, eqn. 3: HC' = ~(~HC + ~m + m')): what a new
// computation gives (set_ipv4_checksum), both the one representative in 1 .. 0xFFFF of the
// header's ones' complement sum (never zero: the version field is not), complemented.
void update_ipv4_checksum(uint8_t* ip, uint16_t old0, uint16_t old4) {
    uint32_t sum = static_cast<uint16_t>(~be16(ip + 10));
    sum += static_cast<uint16_t>(~old0) + be16(ip);
    sum += static_cast<uint16_t>(~old4) + be16(ip + 8);
    while ((sum >> 16) != 0) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    const auto c = static_cast<uint16_t>(~sum);
    ip[10] = static_cast<uint8_t>(c >> 8);
    ip[11] = static_cast<uint8_t>(c);
}

sc_core::sc_time ps_time(double ps) {
    return sc_core::sc_time(std::round(ps), sc_core::SC_PS);
}

// t.to_seconds() without its library call (twice per forwarded frame): the kernel's own
// expression, the value times the time resolution in fs times 1e-15 in that order, with the
// resolution (a power of ten in fs) read once.
double seconds_of(const sc_core::sc_time& t) {
    static const double res_fs = std::round(sc_core::sc_get_time_resolution().to_seconds() * 1e15);
    return static_cast<double>(t.value()) * res_fs * 1e-15;
}

const sc_core::sc_time& max_time() {
    static const sc_core::sc_time& t = sc_core::sc_max_time();  // a library call each time
    return t;
}

// A FIFO that keeps its storage: a ring of a power-of-two size, doubled when full. An egress
// queue passes millions of frames; std::deque allocated and freed a block every few of them.
template <class T>
class ring_fifo {
public:
    bool empty() const { return m_size == 0; }
    size_t size() const { return m_size; }
    T& front() { return m_slots[m_head]; }
    const T& front() const { return m_slots[m_head]; }
    const T& operator[](size_t i) const { return m_slots[(m_head + i) & (m_slots.size() - 1)]; }
    void push_back(T&& v) {
        if (m_size == m_slots.size()) {
            grow();
        }
        m_slots[(m_head + m_size) & (m_slots.size() - 1)] = std::move(v);
        ++m_size;
    }
    void pop_front() {
        m_slots[m_head] = T{};  // what the element still holds is released now, as a deque does
        m_head = (m_head + 1) & (m_slots.size() - 1);
        --m_size;
    }

private:
    void grow() {
        std::vector<T> next(std::max<size_t>(8, m_slots.size() * 2));
        for (size_t i = 0; i < m_size; ++i) {
            next[i] = std::move(m_slots[(m_head + i) & (m_slots.size() - 1)]);
        }
        m_slots = std::move(next);
        m_head = 0;
    }
    std::vector<T> m_slots;
    size_t m_head = 0;
    size_t m_size = 0;
};

// m_arrivals' heap order: `a` comes after `b`.
template <class A>
bool arrives_later(const A& a, const A& b) {
    if (a.at != b.at) {
        return a.at > b.at;
    }
    return a.port != b.port ? a.port > b.port : a.seq > b.seq;
}

}  // namespace

// One buffered frame.
struct eth_switch::packet {
    eth_frame f;
    uint32_t in_port = 0;
    uint8_t prio = 0;  // ingress priority group = egress queue
    uint64_t bytes = 0;
    sc_core::sc_time arrived;   // handed over by the ingress link
    sc_core::sc_time ready_at;  // may start leaving (pipeline done)
};

struct eth_switch::port_state : frame_sink_if, frame_source_if {
    eth_switch* sw = nullptr;
    uint32_t index = 0;
    std::string track;  // "<switch>.port<index>": its track in the WQE timeline
    eth_link* link = nullptr;
    int side = 0;
    std::array<uint8_t, 6> mac{};
    uint32_t ipv4 = 0;
    std::array<uint8_t, 6> neighbor{};
    bool up = true;               // link failure: the port sees its link (route_epoch)
    uint64_t rate_mbps = 0;       // the link's rate (INT records)
    uint64_t int_hops = 0;        // INT records written into frames leaving here
    uint64_t int_stack_full = 0;  // frames with an INT stack and no free slot left
    uint8_t watched = 0;          // priorities whose pause the pause check follows
    // ... since when each has held frames under a pause without a break (seen at the
    // transmission choices: the MAC asks at every frame boundary, pause expiry and XON while
    // frames are queued, so a break is always seen)
    std::array<sc_core::sc_time, SWITCH_PRIORITIES> paused_since{};
    uint8_t storm = 0;  // priorities in a PFC watchdog storm
    std::array<sc_core::sc_time, SWITCH_PRIORITIES> storm_until{};  // ... until then
    std::array<sc_core::sc_time, SWITCH_PRIORITIES> storm_ended{};  // last storm's end
    // ARP replies (ready time, frame): sent ahead of the queues once ready, never paused.
    std::deque<std::pair<sc_core::sc_time, eth_frame>> ctrl;
    std::array<ring_fifo<packet>, SWITCH_PRIORITIES> q;
    size_t queued = 0;  // frames in q, all priorities
    std::array<queue_stats, SWITCH_PRIORITIES> qs{};
    std::unique_ptr<egress_scheduler> sched;  // between the priorities (switch_config.scheduler)
    port_stats ps{};
    hw::stage_slicer slices;  // its "switch" slices in the WQE timeline
    hw::quick_event data;
    // What the link's MAC does until its next pull (set by pull()): busy with a frame and
    // pulling again at its end (frames are still queued), or else sleeping until mac_retry
    // (sc_max_time(): until `data` is notified). A frame queued meanwhile notifies `data` only
    // if the MAC would not see it in time otherwise.
    bool mac_busy = false;
    sc_core::sc_time mac_retry = sc_core::sc_max_time();

    void receive_frame(eth_frame&& f) override {
        sw->arrive(index, std::move(f), sc_core::sc_time_stamp());
    }
    // The link hands frames over as they start on the wire: the switch wakes once per arrival
    // instant for all its ports (no wake-up of the link's own delivery).
    bool takes_frames_ahead() const override { return true; }
    void receive_frame_ahead(eth_frame&& f, const sc_core::sc_time& at) override {
        sw->arrive(index, std::move(f), at);
    }
    bool cut_through() const override { return sw->m_cfg.cut_through; }
    bool pull(uint8_t paused, eth_frame& out, sc_core::sc_time& retry_at) override {
        return sw->pull(index, paused, out, retry_at);
    }
    const sc_core::sc_event& data_event() const override { return data; }
    // With nothing queued a pull changes nothing (no frame, and no paused queue is followed:
    // a followed queue holds frames) but for applying route epochs that are due.
    bool wants_idle_pulls() const override { return sw->m_next_epoch < sw->m_epochs.size(); }
    bool holds_frames() const override { return queued != 0 || !ctrl.empty(); }
};

eth_switch::eth_switch(sc_core::sc_module_name name, const switch_config& cfg, uint32_t ports,
                       hw::sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_ctx(ctx)
    , m_buf(cfg, ports)
    , m_rng(splitmix64(cfg.seed))
    , m_mark_at_dequeue(cfg.ecn_mark_at == "dequeue") {
    m_pipeline = sc_core::sc_time(m_cfg.pipeline_ns, sc_core::SC_NS);
    for (const char* c = this->name(); *c != 0; ++c) {
        m_salt = (m_salt ^ static_cast<uint8_t>(*c)) * 0x100000001B3ull;  // FNV-1a
    }
    if (ports == 0) {
        throw std::invalid_argument(std::string(this->name()) + ": a switch needs ports");
    }
    for (uint32_t p = 0; p < ports; ++p) {
        auto pt = std::make_unique<port_state>();
        pt->sw = this;
        pt->index = p;
        pt->track = std::string(this->name()) + ".port" + std::to_string(p);
        pt->sched = make_egress_scheduler(m_cfg);
        m_ports.push_back(std::move(pt));
    }
    // Switch totals (block "<switch>"), summed over its ports when stats are written.
    const std::string b = this->name();
    auto sum = [this](auto field) {
        return [this, field]() {
            uint64_t t = 0;
            for (const auto& pt : m_ports) {
                t += field(*pt);
            }
            return nlohmann::json(t);
        };
    };
    ctx.stats.add(b, "buffer_peak_bytes", m_buf.peak_used(), "bytes",
                  "shared buffer occupancy peak");
    ctx.stats.add(b, "frames", sum([](const port_state& p) { return p.ps.tx_frames; }), "frames",
                  "frames sent, all ports");
    ctx.stats.add(b, "drops", sum([](const port_state& p) { return p.ps.drops; }), "frames",
                  "frames dropped, all ports and reasons");
    ctx.stats.add(b, "link_down_drops",
                  sum([](const port_state& p) { return p.ps.link_down_drops; }), "frames",
                  "frames dropped because their egress port was down, all ports");
    auto per_queue = [](auto field) {
        return [field](const port_state& p) {
            uint64_t t = 0;
            for (const auto& q : p.qs) {
                t += field(q);
            }
            return t;
        };
    };
    ctx.stats.add(b, "lossless_drops",
                  sum(per_queue([](const queue_stats& q) { return q.lossless_drops; })), "frames",
                  "frames of lossless priorities dropped by the buffer (headroom overflow): "
                  "PFC promises 0");
    ctx.stats.add(b, "pfcwd_storms",
                  sum(per_queue([](const queue_stats& q) { return q.pfcwd_storms; })), "count",
                  "PFC watchdog: storms detected, all queues");
    ctx.stats.add(b, "pfcwd_drops",
                  sum(per_queue([](const queue_stats& q) { return q.pfcwd_drops; })), "frames",
                  "PFC watchdog: frames dropped in storms (action drop), all queues");
    ctx.stats.add(b, "reroutes", m_reroutes, "count",
                  "route tables installed after a link went down or came back");
    ctx.stats.add(b, "ecn_marks", sum([](const port_state& p) {
                      uint64_t t = 0;
                      for (const auto& q : p.qs) {
                          t += q.ecn_marks;
                      }
                      return t;
                  }),
                  "frames", "frames marked CE, all queues");
    ctx.stats.add(b, "pause_frames_sent", sum([](const port_state& p) {
                      return p.link != nullptr ? p.link->get_stats(p.side).pfc_frames : 0;
                  }),
                  "frames", "PFC pause frames sent, all ports");
    ctx.stats.add(b, "paused_ps", sum([](const port_state& p) {
                      return p.link != nullptr ? p.link->get_stats(p.side).pause_ps : 0;
                  }),
                  "ps", "time ports' transmitters were paused by PFC, summed over ports");
    // Arrivals of one instant are processed together, in ingress port order (below).
    sc_core::sc_spawn_options opts;
    opts.spawn_method();
    opts.dont_initialize();
    opts.set_sensitivity(&m_arrival_event);
    sc_core::sc_spawn(sc_core::sc_bind(&eth_switch::process_arrivals, this), "arrivals", &opts);
    // Paused queues are followed only with the watchdog or the deadlock check on.
    const double wd = m_cfg.pfc_watchdog.detection_ns;
    const double dl = m_cfg.pfc_deadlock_detect_ns;
    m_check_ns = wd > 0 && dl > 0 ? std::min(wd, dl) : std::max(wd, dl);
    m_wd_drop = m_cfg.pfc_watchdog.action == "drop";
    if (m_check_ns > 0) {
        sc_core::sc_spawn_options w;
        w.spawn_method();
        w.dont_initialize();
        w.set_sensitivity(&m_pause_check);
        sc_core::sc_spawn(sc_core::sc_bind(&eth_switch::on_pause_check, this), "pause_check", &w);
    }
}

eth_switch::~eth_switch() = default;

void eth_switch::connect(uint32_t p, eth_link& link, int side) {
    if (p >= m_ports.size() || (side != 0 && side != 1)) {
        throw std::out_of_range(std::string(name()) + ": port " + std::to_string(p) + " side " +
                                std::to_string(side) + " does not exist");
    }
    port_state& pt = *m_ports[p];
    if (pt.link != nullptr) {
        throw std::logic_error(std::string(name()) + ": port " + std::to_string(p) +
                               " connected twice");
    }
    pt.link = &link;
    pt.side = side;
    link.attach(side, &pt);
    link.set_source(side, &pt);
    link.set_mac(side, pt.mac);
    link.set_pause_quanta(side, static_cast<uint16_t>(m_cfg.pause_quanta));
    // Headroom: what the upstream may still send after we decide XOFF: our pause frame may
    // wait behind one frame of ours, then the round trip on the cable, while the upstream
    // finishes the frame it has started.
    const eth_link_config& lc = link.config();
    m_buf.set_headroom(
        p, m_cfg.headroom_bytes != 0
               ? m_cfg.headroom_bytes
               : static_cast<uint64_t>(std::ceil(2.0 * lc.propagation_ns * lc.rate_gbps / 8)) +
                     2 * MAX_FRAME_WIRE + eth_wire_bytes(PFC_FRAME_BYTES));

    const std::string b = std::string(name()) + ".port" + std::to_string(p);
    auto& s = m_ctx.stats;
    s.add(b, "rx_frames", pt.ps.rx_frames, "frames", "frames received");
    s.add(b, "rx_bytes", pt.ps.rx_bytes, "bytes", "bytes received (without FCS)");
    s.add(b, "tx_frames", pt.ps.tx_frames, "frames", "frames sent (pause frames excluded)");
    s.add(b, "tx_bytes", pt.ps.tx_bytes, "bytes", "bytes sent (without FCS)");
    s.add(b, "drops", pt.ps.drops, "frames", "frames received here and dropped (any reason)");
    s.add(b, "no_route", pt.ps.no_route, "frames",
          "dropped: not IPv4/ARP, bad IPv4 header, TTL expired or no route");
    s.add(b, "arp_replies", pt.ps.arp_replies, "frames", "ARP replies for the port's address");
    s.add(b, "link_down_drops", pt.ps.link_down_drops, "frames",
          "frames flushed from this port's queues or routed to it while its link was down");
    s.add(b, "link_downs", pt.ps.link_downs, "count", "times this port saw its link go down");
    pt.rate_mbps = static_cast<uint64_t>(std::llround(lc.rate_gbps * 1000.0));
    if (m_cfg.int_telemetry) {
        if (roce::int_rate_code(pt.rate_mbps) < 0) {
            throw std::invalid_argument(
                std::string(name()) + ".port" + std::to_string(p) + ": int_telemetry: a " +
                std::to_string(lc.rate_gbps) +
                " Gb/s link has no INT rate code (10, 25, 40, 50, 100, 200, 400, 800 Gb/s)");
        }
        s.add(b, "int_hops", pt.int_hops, "count",
              "INT records written into frames leaving this port (8 bytes each)");
        s.add(b, "int_stack_full", pt.int_stack_full, "frames",
              "frames leaving with an INT stack whose 5 slots were taken (hop not recorded)");
    }
    s.add(b, "pause_frames_sent", link.get_stats(side).pfc_frames, "frames",
          "PFC pause frames sent (XOFF, refresh and XON)");
    s.add(b, "pauses_received", link.get_stats(side).pauses, "frames",
          "PFC pause frames received that paused this port's transmitter");
    s.add(b, "paused_ps", link.get_stats(side).pause_ps, "ps",
          "time some priority of this port's transmitter was paused");
    for (uint32_t k = 0; k < SWITCH_PRIORITIES; ++k) {
        const std::string qb = b + ".q" + std::to_string(k);
        queue_stats& q = pt.qs[k];
        const switch_buffer::queue& bq = m_buf.at(p, k);
        s.add(qb, "frames", q.frames, "frames", "frames sent from this egress queue");
        s.add(qb, "bytes", q.bytes, "bytes", "bytes sent from this egress queue");
        s.add(qb, "drops", q.drops, "frames",
              "frames of this ingress priority dropped (lossy tail drop, lossless headroom "
              "overflow)");
        s.add(qb, "ecn_marks", q.ecn_marks, "frames", "frames marked CE at this egress queue");
        s.add(qb, "peak_bytes", bq.egress_peak_bytes, "bytes", "egress queue occupancy peak");
        s.add(qb, "ingress_peak_bytes", bq.ingress_peak_bytes, "bytes",
              "ingress accounting peak of this port and priority (PFC)");
        s.add(qb, "pauses_sent", q.pauses_sent, "count", "XOFF transitions of this ingress queue");
        s.add(
            qb, "lossless_drops", q.lossless_drops, "frames",
            "frames of this lossless ingress priority dropped (headroom overflow): PFC promises 0");
        s.add(qb, "pfcwd_storms", q.pfcwd_storms, "count",
              "PFC watchdog: storms detected on this egress queue");
        s.add(qb, "pfcwd_drops", q.pfcwd_drops, "frames",
              "PFC watchdog: frames of this egress queue dropped in storms (action drop)");
        s.add(
            qb, "avg_bytes", [this, p, k]() { return nlohmann::json(average_occupancy(p, k)); },
            "bytes", "time-weighted average egress queue occupancy");
        if (m_ctx.vcd != nullptr) {
            sc_core::sc_trace(m_ctx.vcd, bq.egress_bytes, qb + ".occupancy_bytes");
            sc_core::sc_trace(m_ctx.vcd, bq.ingress_bytes, qb + ".ingress_bytes");
            sc_core::sc_trace(m_ctx.vcd, bq.xoff, qb + ".xoff");
        }
    }
}

void eth_switch::set_port_address(uint32_t p, const std::array<uint8_t, 6>& mac, uint32_t ipv4) {
    port_state& pt = *m_ports.at(p);
    pt.mac = mac;
    pt.ipv4 = ipv4;
    if (pt.link != nullptr) {
        pt.link->set_mac(pt.side, mac);
    }
}

void eth_switch::set_neighbor_mac(uint32_t p, const std::array<uint8_t, 6>& mac) {
    m_ports.at(p)->neighbor = mac;
}

void eth_switch::add_route(uint32_t prefix, uint32_t prefix_len, std::vector<uint32_t> ports) {
    if (prefix_len > 32 || ports.empty()) {
        throw std::invalid_argument(std::string(name()) + ": bad route (prefix length " +
                                    std::to_string(prefix_len) + ", " +
                                    std::to_string(ports.size()) + " ports)");
    }
    for (uint32_t p : ports) {
        if (p >= m_ports.size()) {
            throw std::out_of_range(std::string(name()) + ": route to missing port " +
                                    std::to_string(p));
        }
    }
    const uint32_t mask = prefix_len == 0 ? 0 : ~uint32_t{0} << (32 - prefix_len);
    route r{prefix & mask, prefix_len, std::move(ports)};
    // Longest prefix first; among equal lengths, insertion order.
    auto it = std::find_if(m_routes.begin(), m_routes.end(),
                           [&](const route& x) { return x.len < prefix_len; });
    m_routes.insert(it, std::move(r));
}

void eth_switch::set_route_epochs(std::vector<route_epoch> epochs) {
    for (const route_epoch& e : epochs) {
        if (e.port_up.size() != m_ports.size()) {
            throw std::invalid_argument(std::string(name()) + ": route epoch with " +
                                        std::to_string(e.port_up.size()) + " port states");
        }
    }
    m_epochs = std::move(epochs);
    m_next_epoch = 0;
}

bool eth_switch::port_up(uint32_t p) const {
    return m_ports.at(p)->up;
}

void eth_switch::apply_epochs(const sc_core::sc_time& now) {
    while (m_next_epoch < m_epochs.size() && m_epochs[m_next_epoch].at <= now) {
        route_epoch& e = m_epochs[m_next_epoch++];
        for (uint32_t p = 0; p < m_ports.size(); ++p) {
            port_state& pt = *m_ports[p];
            if (pt.up && !e.port_up[p]) {
                pt.up = false;
                ++pt.ps.link_downs;
                flush_port(p);
            } else if (!pt.up && e.port_up[p]) {
                pt.up = true;
            }
        }
        m_routes.clear();
        for (route_spec& r : e.routes) {
            add_route(r.prefix, r.len, std::move(r.ports));
        }
        ++m_reroutes;
    }
}

void eth_switch::flush_port(uint32_t p) {
    port_state& op = *m_ports[p];
    op.mac_busy = false;  // its MAC may find nothing queued at its frame's end and sleep
    op.ctrl.clear();
    for (uint32_t k = 0; k < SWITCH_PRIORITIES; ++k) {
        if (op.q[k].empty()) {
            continue;
        }
        while (!op.q[k].empty()) {
            const packet& pk = op.q[k].front();
            occupancy_changed(op.qs[k], m_buf.at(p, k).egress_bytes);
            m_buf.dequeue(pk.in_port, p, k, pk.bytes);
            update_pfc(pk.in_port, pk.prio);
            ++op.ps.link_down_drops;
            op.q[k].pop_front();
            --op.queued;
        }
        op.sched->drained(k);
    }
}

uint64_t eth_switch::flush_queue(uint32_t p, uint32_t k) {
    port_state& op = *m_ports[p];
    op.mac_busy = false;  // as flush_port
    uint64_t n = 0;
    while (!op.q[k].empty()) {
        const packet& pk = op.q[k].front();
        occupancy_changed(op.qs[k], m_buf.at(p, k).egress_bytes);
        m_buf.dequeue(pk.in_port, p, k, pk.bytes);
        update_pfc(pk.in_port, pk.prio);
        op.q[k].pop_front();
        --op.queued;
        ++n;
    }
    if (n > 0) {
        op.sched->drained(k);
    }
    return n;
}

const eth_link* eth_switch::port_link(uint32_t p) const {
    return m_ports.at(p)->link;
}

int eth_switch::port_side(uint32_t p) const {
    return m_ports.at(p)->side;
}

bool eth_switch::queue_stuck(uint32_t p, uint32_t k) const {
    const port_state& op = *m_ports.at(p);
    if (m_cfg.pfc_deadlock_detect_ns <= 0 || op.q[k].empty() || op.link == nullptr ||
        ((op.storm >> k) & 1) || ((op.watched >> k) & 1) == 0 ||
        ((op.link->paused(op.side) >> k) & 1) == 0) {
        return false;
    }
    const sc_core::sc_time since = op.paused_since[k];
    return sc_core::sc_time_stamp() - since >=
           sc_core::sc_time(m_cfg.pfc_deadlock_detect_ns, sc_core::SC_NS);
}

bool eth_switch::holds_from(uint32_t p, uint32_t k, uint32_t in_port) const {
    const ring_fifo<packet>& q = m_ports.at(p)->q.at(k);
    for (size_t i = 0; i < q.size(); ++i) {
        if (q[i].in_port == in_port) {
            return true;
        }
    }
    return false;
}

// The pause check follows the paused priorities in `mask` of port `op` (they hold frames):
// it runs when the earliest of them could reach a threshold.
void eth_switch::watch(port_state& op, uint8_t mask, const sc_core::sc_time& now) {
    op.watched |= mask;
    sc_core::sc_time at = sc_core::sc_max_time();
    for (uint32_t k = 0; k < SWITCH_PRIORITIES; ++k) {
        if ((mask >> k) & 1) {
            op.paused_since[k] = now;
            const sc_core::sc_time since = std::max(now, op.storm_ended[k]);
            at = std::min(at, since + sc_core::sc_time(m_check_ns, sc_core::SC_NS));
        }
    }
    schedule_pause_check(at, now);
}

void eth_switch::schedule_pause_check(const sc_core::sc_time& at, const sc_core::sc_time& now) {
    // The earliest wins. The event is notified at most a short step ahead (hw/common/
    // short_wait.h): the check is cancelled when the pause ends, usually long before `at`, and
    // SystemC keeps a cancelled notification in its timed-event queue until its time; a step
    // before m_pause_due does nothing but step on (on_pause_check).
    m_pause_due = std::min(m_pause_due, at);
    m_pause_check.notify(m_pause_due > now ? hw::short_wait_until(m_pause_due)
                                           : sc_core::SC_ZERO_TIME);
}

void eth_switch::on_pause_check() {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    if (now < m_pause_due) {
        schedule_pause_check(m_pause_due, now);  // a step: nothing due yet
        return;
    }
    m_pause_due = sc_core::sc_max_time();
    const double wd_ns = m_cfg.pfc_watchdog.detection_ns;
    const double dl_ns = m_cfg.pfc_deadlock_detect_ns;
    sc_core::sc_time next = sc_core::sc_max_time();
    bool stuck = false;
    for (uint32_t p = 0; p < m_ports.size(); ++p) {
        port_state& op = *m_ports[p];
        for (uint32_t k = 0; k < SWITCH_PRIORITIES; ++k) {
            const auto bit = static_cast<uint8_t>(1u << k);
            if ((op.storm & bit) != 0) {
                if (op.storm_until[k] <= now) {
                    op.storm &= static_cast<uint8_t>(~bit);  // restored: pauses honoured again
                    op.storm_ended[k] = now;
                    op.data.notify(sc_core::SC_ZERO_TIME);
                } else {
                    next = std::min(next, op.storm_until[k]);
                }
            }
        }
        if (op.watched == 0) {
            continue;
        }
        const uint8_t paused = op.link->paused(op.side);
        for (uint32_t k = 0; k < SWITCH_PRIORITIES; ++k) {
            const auto bit = static_cast<uint8_t>(1u << k);
            if ((op.watched & bit) == 0) {
                continue;
            }
            if (op.q[k].empty() || (paused & bit) == 0 || (op.storm & bit) != 0) {
                op.watched &= static_cast<uint8_t>(~bit);  // drained or resumed: unwatched
                continue;
            }
            const sc_core::sc_time since = std::max(op.paused_since[k], op.storm_ended[k]);
            if (wd_ns > 0) {
                const sc_core::sc_time at = since + sc_core::sc_time(wd_ns, sc_core::SC_NS);
                if (at <= now) {
                    // A PFC storm: for restoration_ns, drop (the queue and what comes for it)
                    // or send ignoring the pauses.
                    op.storm |= bit;
                    op.watched &= static_cast<uint8_t>(~bit);
                    op.storm_until[k] =
                        now + sc_core::sc_time(m_cfg.pfc_watchdog.restoration_ns, sc_core::SC_NS);
                    next = std::min(next, op.storm_until[k]);
                    ++op.qs[k].pfcwd_storms;
                    if (m_wd_drop) {
                        op.qs[k].pfcwd_drops += flush_queue(p, k);
                    }
                    op.data.notify(sc_core::SC_ZERO_TIME);
                    continue;
                }
                next = std::min(next, at);
            }
            if (dl_ns > 0) {
                const sc_core::sc_time at = since + sc_core::sc_time(dl_ns, sc_core::SC_NS);
                if (at <= now) {
                    stuck = true;
                    next = std::min(next, now + sc_core::sc_time(dl_ns, sc_core::SC_NS));
                } else {
                    next = std::min(next, at);
                }
            }
        }
    }
    if (next != sc_core::sc_max_time()) {
        schedule_pause_check(next, now);
    }
    if (stuck && m_stuck_observer) {
        m_stuck_observer();
    }
}

const eth_switch::route* eth_switch::lookup(uint32_t dst) const {
    for (const route& r : m_routes) {
        const uint32_t mask = r.len == 0 ? 0 : ~uint32_t{0} << (32 - r.len);
        if ((dst & mask) == r.prefix) {
            return &r;
        }
    }
    return nullptr;
}

const eth_switch::queue_stats& eth_switch::queue(uint32_t p, uint32_t prio) const {
    return m_ports.at(p)->qs.at(prio);
}

const eth_switch::port_stats& eth_switch::port(uint32_t p) const {
    return m_ports.at(p)->ps;
}

double eth_switch::average_occupancy(uint32_t p, uint32_t prio) const {
    const queue_stats& q = m_ports.at(p)->qs.at(prio);
    const double now_ps = sc_core::sc_time_stamp().to_seconds() * 1e12;
    if (now_ps <= 0) {
        return 0;
    }
    const double last_ps = q.last_change.to_seconds() * 1e12;
    const double bytes = static_cast<double>(m_buf.at(p, prio).egress_bytes);
    return (q.byte_ps + bytes * (now_ps - last_ps)) / now_ps;
}

uint32_t eth_switch::ecmp_index(const uint8_t* f, size_t len, uint32_t group_size) const {
    return ecmp_hash(m_cfg.ecmp_seed, m_salt, f, len, group_size);
}

uint32_t eth_switch::ecmp_hash(uint64_t seed, uint64_t salt, const uint8_t* f, size_t len,
                               uint32_t group_size) {
    if (group_size <= 1) {
        return 0;
    }
    // 5-tuple: source and destination address, protocol, and the UDP/TCP ports when present;
    // salted with the switch's name so that the tiers of a fabric do not all decide alike
    // (hash polarization).
    uint64_t h = splitmix64(seed ^ salt);
    const size_t l2 = len >= ETH ? l2_header_bytes(f, len) : ETH;  // 802.1Q tag included
    if (len >= l2 + 20) {
        const uint8_t* ip = f + l2;
        const size_t ihl = static_cast<size_t>(ip[0] & 0xF) * 4;
        h = splitmix64(h ^ be32(ip + 12));
        h = splitmix64(h ^ be32(ip + 16));
        h = splitmix64(h ^ ip[9]);
        if ((ip[9] == 17 || ip[9] == 6) && len >= l2 + ihl + 4) {
            h = splitmix64(h ^ be32(ip + ihl));  // source port << 16 | destination port
        }
    }
    return static_cast<uint32_t>(h % group_size);
}

void eth_switch::red_mark(uint8_t* iph, uint32_t out, uint8_t prio, uint64_t& marks) {
    const uint8_t ecn = iph[1] & 3;
    if (!m_cfg.ecn[prio] || (ecn != 1 && ecn != 2)) {
        return;
    }
    const double pm = m_buf.mark_probability(out, prio);
    if (pm > 0 && uniform() < pm) {
        iph[1] |= 3;
        ++marks;
    }
}

double eth_switch::uniform() {
    m_rng = splitmix64(m_rng);
    return static_cast<double>(m_rng >> 11) * (1.0 / 9007199254740992.0);
}

void eth_switch::stamp_telemetry(port_state& op, uint32_t out, std::vector<uint8_t>& f,
                                 const sc_core::sc_time& now) {
    if (roce::int_stack_offset(f.data(), f.size()) == 0) {
        return;  // no stack (not HPCC traffic)
    }
    // The record of the frame's dequeue: bytes queued on the port after it left (every
    // priority), bytes the port sent before it, the time in ns (the authors' PushHop).
    uint64_t queued = 0;
    for (uint32_t k = 0; k < SWITCH_PRIORITIES; ++k) {
        queued += m_buf.at(out, k).egress_bytes;
    }
    static const sc_core::sc_time::value_type NS = sc_core::sc_time(1, sc_core::SC_NS).value();
    const uint64_t word =
        roce::int_encode_hop(op.rate_mbps, now.value() / NS, op.ps.tx_bytes, queued);
    if (roce::int_push_hop(f.data(), f.size(), word)) {
        ++op.int_hops;
    } else {
        ++op.int_stack_full;
    }
}

void eth_switch::occupancy_changed(queue_stats& q, uint64_t old_bytes) {
    const sc_core::sc_time now = hw::sim_now();
    q.byte_ps += static_cast<double>(old_bytes) * (seconds_of(now - q.last_change) * 1e12);
    q.last_change = now;
}

void eth_switch::answer_arp(uint32_t in, const eth_frame& f) {
    port_state& pt = *m_ports[in];
    const uint8_t* a = f.data.data() + ETH;
    // Ethernet/IPv4 request (htype 1, ptype 0x0800, hlen 6, plen 4, oper 1) for our address.
    if (f.data.size() < ETH + 28 || be16(a) != 1 || be16(a + 2) != ETHERTYPE_IPV4 || a[4] != 6 ||
        a[5] != 4 || be16(a + 6) != 1 || pt.ipv4 == 0 || be32(a + 24) != pt.ipv4) {
        ++pt.ps.no_route;
        ++pt.ps.drops;
        return;
    }
    eth_frame r;
    r.data.assign(ETH + 28, 0);
    uint8_t* d = r.data.data();
    std::copy(a + 8, a + 14, d);  // to the requester
    std::copy(pt.mac.begin(), pt.mac.end(), d + 6);
    d[12] = ETHERTYPE_ARP >> 8;
    d[13] = ETHERTYPE_ARP & 0xFF;
    uint8_t* o = d + ETH;
    std::copy(a, a + 6, o);  // htype, ptype, hlen, plen
    o[6] = 0;
    o[7] = 2;  // reply
    std::copy(pt.mac.begin(), pt.mac.end(), o + 8);
    std::copy(a + 24, a + 28, o + 14);  // sender IP: the address asked for
    std::copy(a + 8, a + 18, o + 18);   // target MAC + IP: the requester's
    r.flow_id = f.flow_id;
    ++pt.ps.arp_replies;
    const sc_core::sc_time delay = m_pipeline;
    pt.ctrl.emplace_back(sc_core::sc_time_stamp() + delay, std::move(r));
    pt.data.notify(delay);
}

// Frames that arrive at the same instant (from different links, sent in whatever order the
// kernel ran the links' processes) are taken in ingress port order, each port's in arrival
// order: admission, ECN draws, PFC and queue order then do not depend on process order. The
// links hand frames over when they start on the wire, with their arrival time (computed then
// in closed form: tlm/ethernet/README.md), so the switch wakes once per arrival instant.
void eth_switch::arrive(uint32_t in, eth_frame&& f, const sc_core::sc_time& at) {
    const bool earliest = m_arrivals.empty() || at < m_arrivals.front().at;
    uint32_t slot;
    if (m_free_arrival_slots.empty()) {
        slot = static_cast<uint32_t>(m_arrival_frames.size());
        m_arrival_frames.push_back(std::move(f));
    } else {
        slot = m_free_arrival_slots.back();
        m_free_arrival_slots.pop_back();
        m_arrival_frames[slot] = std::move(f);
    }
    m_arrivals.push_back({at, in, slot, m_arrival_seq++});
    std::push_heap(m_arrivals.begin(), m_arrivals.end(), arrives_later<arrival>);
    if (earliest) {
        m_arrival_event.notify(at - hw::sim_now());  // the earliest pending wins
    }
}

void eth_switch::process_arrivals() {
    const sc_core::sc_time now = hw::sim_now();
    if (m_next_epoch < m_epochs.size()) {
        apply_epochs(now);
    }
    while (!m_arrivals.empty() && m_arrivals.front().at <= now) {
        std::pop_heap(m_arrivals.begin(), m_arrivals.end(), arrives_later<arrival>);
        const arrival a = m_arrivals.back();
        m_arrivals.pop_back();
        receive(a.port, std::move(m_arrival_frames[a.slot]));
        m_free_arrival_slots.push_back(a.slot);
    }
    if (!m_arrivals.empty()) {
        m_arrival_event.notify(m_arrivals.front().at - now);
    }
}

void eth_switch::receive(uint32_t in, eth_frame&& f) {
    port_state& ip = *m_ports[in];
    const sc_core::sc_time now = hw::sim_now();
    ++ip.ps.rx_frames;
    ip.ps.rx_bytes += f.data.size();
    auto drop_bad = [&]() {
        ++ip.ps.no_route;
        ++ip.ps.drops;
    };
    if (f.data.size() < ETH) {
        drop_bad();
        return;
    }
    // An 802.1Q-tagged frame: its IPv4 header after the tag, its priority the tag's PCP (kept
    // on the way out); untagged: the DSCP's.
    const bool tagged = vlan_tagged(f.data.data(), f.data.size());
    const size_t l2 = tagged ? ETH + VLAN_TAG_BYTES : ETH;
    const uint16_t type = be16(f.data.data() + l2 - 2);
    if (type == ETHERTYPE_ARP && !tagged) {
        answer_arp(in, f);
        return;
    }
    uint8_t* iph = f.data.data() + l2;
    if (type != ETHERTYPE_IPV4 || f.data.size() < l2 + 20 || (iph[0] >> 4) != 4 ||
        (iph[0] & 0xF) < 5 || f.data.size() < l2 + static_cast<size_t>(iph[0] & 0xF) * 4 ||
        be16(iph + 10) != ipv4_checksum(iph) || iph[8] <= 1) {
        drop_bad();  // a router drops TTL 1 (time exceeded; no ICMP is modelled)
        return;
    }
    const route* r = lookup(be32(iph + 16));
    if (r == nullptr) {
        drop_bad();
        return;
    }
    const uint32_t out =
        r->ports[ecmp_index(f.data.data(), f.data.size(), static_cast<uint32_t>(r->ports.size()))];
    port_state& op = *m_ports[out];
    if (!op.up) {
        ++op.ps.link_down_drops;  // the host behind a down port (the routes avoid other ones)
        ++ip.ps.drops;
        return;
    }
    const uint8_t prio = tagged ? vlan_pcp(f.data.data()) : m_cfg.dscp_to_priority[iph[1] >> 2];
    const uint64_t bytes = f.data.size();

    // Admission (switch_buffer::admit): lossless priorities up to XOFF + headroom on the
    // ingress (PFC keeps them there; beyond it the headroom was too small and the frame is
    // lost, counted); lossy ones within the egress queue's reserve and dynamic threshold.
    queue_stats& iq = ip.qs[prio];
    queue_stats& eq = op.qs[prio];
    if (!m_buf.admit(in, out, prio, bytes)) {
        ++iq.drops;
        iq.lossless_drops += m_cfg.lossless[prio] ? 1 : 0;
        ++ip.ps.drops;
        return;
    }
    if (((op.storm >> prio) & 1) && m_wd_drop) {
        ++eq.pfcwd_drops;  // a PFC storm on that queue: the watchdog drops what comes for it
        ++ip.ps.drops;
        return;
    }

    // Rewrite: next hop's MAC, our port's MAC, TTL - 1; ICRC masks TTL, ECN and checksum.
    std::copy(op.neighbor.begin(), op.neighbor.end(), f.data.begin());
    std::copy(op.mac.begin(), op.mac.end(), f.data.begin() + 6);
    const uint16_t tos_word = be16(iph);      // version, IHL, DSCP, ECN
    const uint16_t ttl_word = be16(iph + 8);  // TTL, protocol
    --iph[8];
    // RED marking of ECT frames on the egress queue length found at enqueue (or at dequeue,
    // in pull()).
    if (!m_mark_at_dequeue) {
        red_mark(iph, out, prio, eq.ecn_marks);
    }
    update_ipv4_checksum(iph, tos_word, ttl_word);

    // Accounting.
    occupancy_changed(eq, m_buf.at(out, prio).egress_bytes);
    m_buf.enqueue(in, out, prio, bytes);
    update_pfc(in, prio);

    // Pipeline: from the last bit (store-and-forward) or from the headers (cut-through, only
    // when the egress does not outrun the ingress; the link handed us the frame at the headers).
    sc_core::sc_time start = now;
    if (m_cfg.cut_through) {
        const double in_ps = ip.link->ps_per_byte();
        if (op.link->ps_per_byte() < in_ps) {
            const uint64_t wire = eth_wire_bytes(bytes);
            const uint64_t seen = 8 + std::min<uint64_t>(bytes, CUT_THROUGH_BYTES);
            start += ps_time(static_cast<double>(wire - 12 - seen) * in_ps);
        }
    }
    packet pk;
    pk.in_port = in;
    pk.prio = prio;
    pk.bytes = bytes;
    pk.arrived = now;
    pk.ready_at = start + m_pipeline;
    pk.f = std::move(f);
    const sc_core::sc_time ready_at = pk.ready_at;
    op.q[prio].push_back(std::move(pk));
    ++op.queued;
    if (!op.mac_busy && ready_at < op.mac_retry) {
        // The egress wakes when this frame may leave (earlier pending wins). Not needed while
        // its MAC sends a frame with more queued behind it (it pulls at that frame's end) or
        // sleeps until a retry time at or before this one (it pulls then): pull() sets both.
        op.data.notify(ready_at - now);
    }
}

void eth_switch::update_pfc(uint32_t in, uint32_t prio) {
    const switch_buffer::pfc_change c = m_buf.update_pfc(in, prio);
    if (c == switch_buffer::pfc_change::none) {
        return;
    }
    port_state& ip = *m_ports[in];
    const bool on = c == switch_buffer::pfc_change::xoff;
    if (on) {
        ++ip.qs[prio].pauses_sent;
    }
    ip.link->set_xoff(ip.side, static_cast<uint8_t>(1u << prio), on);
}

bool eth_switch::pull(uint32_t o, uint8_t paused, eth_frame& out, sc_core::sc_time& retry_at) {
    port_state& op = *m_ports[o];
    const sc_core::sc_time now = hw::sim_now();
    retry_at = max_time();
    if (m_next_epoch < m_epochs.size()) {
        apply_epochs(now);
    }
    if (!op.ctrl.empty()) {
        if (op.ctrl.front().first <= now) {
            out = std::move(op.ctrl.front().second);
            op.ctrl.pop_front();
            ++op.ps.tx_frames;
            op.ps.tx_bytes += out.data.size();
            op.mac_busy = op.holds_frames();
            op.mac_retry = max_time();
            return true;
        }
        retry_at = op.ctrl.front().first;
    }
    if (op.storm != 0 && !m_wd_drop) {
        paused &= static_cast<uint8_t>(~op.storm);  // PFC watchdog "forward": pauses ignored
    }
    uint8_t eligible = 0;
    uint8_t backlogged = 0;
    std::array<uint64_t, SWITCH_PRIORITIES> head_bytes;
    for (uint32_t k = 0; k < SWITCH_PRIORITIES; ++k) {
        if (op.q[k].empty()) {
            continue;
        }
        backlogged |= static_cast<uint8_t>(1u << k);
        if ((paused >> k) & 1) {
            continue;
        }
        const packet& head = op.q[k].front();
        if (head.ready_at <= now) {
            eligible |= static_cast<uint8_t>(1u << k);
            head_bytes[k] = head.bytes;
        } else {
            retry_at = std::min(retry_at, head.ready_at);
        }
    }
    // The pause check's pending wake-up is cancelled once nothing is followed any more, so it
    // never keeps a finished run going (the run ends when nothing is left to simulate).
    auto forget_when_idle = [this](uint8_t before, uint8_t after) {
        if (before != 0 && after == 0) {
            for (const auto& pt : m_ports) {
                if (pt->watched != 0 || pt->storm != 0) {
                    return;
                }
            }
            m_pause_check.cancel();
            m_pause_due = sc_core::sc_max_time();
        }
    };
    if (m_check_ns > 0) {
        const uint8_t before = op.watched;
        op.watched &= paused;  // a pause that ended is forgotten
        const auto fresh = static_cast<uint8_t>(backlogged & paused & ~op.watched);
        if (fresh != 0) {
            watch(op, fresh, now);
        }
        forget_when_idle(before, op.watched);
    }
    if (eligible == 0) {
        op.mac_busy = false;
        op.mac_retry = retry_at;
        return false;
    }
    const uint32_t k = op.sched->pick(eligible, backlogged, head_bytes);
    packet pk = std::move(op.q[k].front());
    op.q[k].pop_front();
    --op.queued;
    if (op.q[k].empty()) {
        op.sched->drained(k);
        if (m_check_ns > 0) {
            const uint8_t before = op.watched;
            op.watched &= static_cast<uint8_t>(~(1u << k));  // drained: forgotten
            forget_when_idle(before, op.watched);
        }
    }
    // Release the buffer as the frame leaves (its egress serialization is the link's).
    queue_stats& eq = op.qs[k];
    occupancy_changed(eq, m_buf.at(o, k).egress_bytes);
    m_buf.dequeue(pk.in_port, o, k, pk.bytes);
    if (m_mark_at_dequeue) {
        // RED on the queue the frame leaves behind (an IPv4 frame: receive() checked it).
        const size_t l2 =
            vlan_tagged(pk.f.data.data(), pk.f.data.size()) ? ETH + VLAN_TAG_BYTES : ETH;
        uint8_t* iph = pk.f.data.data() + l2;
        const uint64_t before = eq.ecn_marks;
        red_mark(iph, o, pk.prio, eq.ecn_marks);
        if (eq.ecn_marks != before) {
            set_ipv4_checksum(iph);
        }
    }
    if (m_cfg.int_telemetry) {
        stamp_telemetry(op, o, pk.f.data, now);
    }
    update_pfc(pk.in_port, pk.prio);
    ++eq.frames;
    eq.bytes += pk.bytes;
    ++op.ps.tx_frames;
    op.ps.tx_bytes += pk.bytes;
    if (m_ctx.tracer != nullptr) {
        // The hop through the switch: from the ingress link's hand-over to the egress wire.
        op.slices.slice(*m_ctx.tracer, op.track.c_str(), "switch", pk.f.flow_id, pk.arrived, now);
    }
    out = std::move(pk.f);
    out.priority = static_cast<uint8_t>(k);
    // With frames still queued the MAC pulls again at this frame's end whatever comes (with
    // none it may sleep until one is queued: tlm/ethernet eth_link's idle MAC).
    op.mac_busy = op.holds_frames();
    op.mac_retry = max_time();
    return true;
}

}  // namespace rnic::fabric
