// SPDX-License-Identifier: Apache-2.0
// Full-duplex Ethernet link.
#include "tlm/ethernet/eth_link.h"

#include <algorithm>
#include <cmath>

#include "hw/common/numeric.h"
#include "hw/common/short_wait.h"
#include "hw/common/sim_now.h"
#include "hw/common/timestep_arbiter.h"
#include "hw/roce/protocol.h"
#include "tlm/ethernet/vlan.h"

namespace rnic::fabric {

eth_link_config parse_eth_link_config(config::reader r) {
    eth_link_config c;
    r.get("rate_gbps", c.rate_gbps, 1.0, 1600.0);
    r.get("propagation_ns", c.propagation_ns, 0.0, 1e9);
    r.get("tx_fifo_frames", c.tx_fifo_frames, 1u, 4096u);
    r.get("ctrl_fifo_frames", c.ctrl_fifo_frames, 1u, 4096u);
    r.get("pfc", c.pfc);
    config::reader f = r.child("faults");
    fault_config& fc = c.faults;
    f.get("drop", fc.drop, 0.0, 1.0);
    f.get("corrupt", fc.corrupt, 0.0, 1.0);
    f.get("duplicate", fc.duplicate, 0.0, 1.0);
    f.get("reorder", fc.reorder, 0.0, 1.0);
    f.get("reorder_delay_ns", fc.reorder_delay_ns, 0.0, 1e9);
    f.get("jitter_ns", fc.jitter_ns, 0.0, 1e9);
    f.get("qp", fc.qp, int64_t{-1}, int64_t{0xFFFFFF});
    f.get("opcode", fc.opcode, -1, 255);
    f.get("window_start_ns", fc.window_start_ns, 0.0, 1e18);
    f.get("window_end_ns", fc.window_end_ns, 0.0, 1e18);
    f.get("ecn_mark", fc.ecn_mark, 0.0, 1.0);
    f.get("seed", fc.seed, uint64_t{0}, ~uint64_t{0});
    std::string storm_side = "a";
    f.get_one_of("pfc_storm_side", storm_side, {"a", "b"});
    fc.pfc_storm_side = storm_side == "a" ? 0 : 1;
    nlohmann::json storm_prios = nlohmann::json::array();
    if (const nlohmann::json* pr = f.raw("pfc_storm_priorities")) {
        bool ok = pr->is_array();
        for (size_t i = 0; ok && i < pr->size(); ++i) {
            const auto& p = (*pr)[i];
            ok = p.is_number_integer() && p.get<int64_t>() >= 0 && p.get<int64_t>() <= 7;
            if (ok) {
                fc.pfc_storm_priorities |= static_cast<uint8_t>(1u << p.get<int>());
            }
        }
        if (!ok) {
            f.error("pfc_storm_priorities", "expected a list of priorities 0 .. 7");
        }
    }
    for (int p = 0; p < 8; ++p) {
        if ((fc.pfc_storm_priorities >> p) & 1) {
            storm_prios.push_back(p);
        }
    }
    f.set_effective("pfc_storm_priorities", storm_prios);
    f.get("pfc_storm_start_ns", fc.pfc_storm_start_ns, 0.0, 1e18);
    f.get("pfc_storm_end_ns", fc.pfc_storm_end_ns, 0.0, 1e18);
    if (fc.pfc_storm_priorities != 0 && fc.pfc_storm_end_ns <= fc.pfc_storm_start_ns) {
        f.error("pfc_storm_end_ns", "must be greater than pfc_storm_start_ns");
    }
    if (fc.pfc_storm_priorities != 0 && !c.pfc) {
        f.error("pfc_storm_priorities", "a PFC storm needs the link's pfc (true)");
    }
    if (const nlohmann::json* down = f.raw("link_down_ns")) {
        bool ok = down->is_array();
        for (size_t i = 0; ok && i < down->size(); ++i) {
            const auto& iv = (*down)[i];
            ok = iv.is_array() && iv.size() == 2 && iv[0].is_number() && iv[1].is_number() &&
                 iv[0].get<double>() >= 0 && iv[1].get<double>() > iv[0].get<double>();
            if (ok) {
                fc.link_down_ns.emplace_back(iv[0].get<double>(), iv[1].get<double>());
            }
        }
        if (!ok) {
            f.error("link_down_ns",
                    "expected a list of [start_ns, end_ns] pairs with end > start >= 0");
        }
    }
    nlohmann::json down = nlohmann::json::array();
    for (const auto& iv : fc.link_down_ns) {
        down.push_back({iv.first, iv.second});
    }
    f.set_effective("link_down_ns", down);
    if (fc.window_end_ns <= fc.window_start_ns) {
        f.error("window_end_ns", "must be greater than window_start_ns");
    }
    f.finish();
    r.finish();
    return c;
}

std::vector<uint8_t> build_pfc_frame(const std::array<uint8_t, 6>& src, uint8_t class_enable,
                                     const pfc_quanta& quanta) {
    std::vector<uint8_t> f(PFC_FRAME_BYTES, 0);
    const uint8_t dst[6] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};
    std::copy(dst, dst + 6, f.begin());
    std::copy(src.begin(), src.end(), f.begin() + 6);
    f[12] = ETHERTYPE_MAC_CONTROL >> 8;
    f[13] = ETHERTYPE_MAC_CONTROL & 0xFF;
    f[14] = PFC_OPCODE >> 8;
    f[15] = PFC_OPCODE & 0xFF;
    f[16] = 0;  // class-enable vector: high byte reserved
    f[17] = class_enable;
    for (size_t p = 0; p < 8; ++p) {
        f[18 + 2 * p] = static_cast<uint8_t>(quanta[p] >> 8);
        f[19 + 2 * p] = static_cast<uint8_t>(quanta[p]);
    }
    return f;  // bytes 34..59: zero pad
}

bool parse_pfc_frame(const std::vector<uint8_t>& f, uint8_t& class_enable, pfc_quanta& quanta) {
    if (!is_pfc_frame(f)) {
        return false;
    }
    class_enable = f[17];
    for (size_t p = 0; p < 8; ++p) {
        quanta[p] = static_cast<uint16_t>((f[18 + 2 * p] << 8) | f[19 + 2 * p]);
    }
    return true;
}

bool is_pfc_frame(const std::vector<uint8_t>& f) {
    return f.size() >= 34 && f[12] == (ETHERTYPE_MAC_CONTROL >> 8) &&
           f[13] == (ETHERTYPE_MAC_CONTROL & 0xFF) && f[14] == (PFC_OPCODE >> 8) &&
           f[15] == (PFC_OPCODE & 0xFF);
}

uint8_t default_priority(const std::vector<uint8_t>& f) {
    if (vlan_tagged(f.data(), f.size())) {
        return vlan_pcp(f.data());  // 802.1Q: the tag's PCP
    }
    if (f.size() < 16 || f[12] != 0x08 || f[13] != 0x00) {
        return 0;
    }
    return static_cast<uint8_t>(f[15] >> 5);  // DSCP (TOS >> 2) >> 3
}

namespace {
// Enough for every frame in flight between two NICs at line rate (a few dozen), not so many
// that a burst's buffers stay held: 256 jumbo frames are 2.3 MB.
constexpr size_t SPARE_FRAME_BUFFERS = 256;
std::vector<std::vector<uint8_t>>& spare_frame_buffers() {
    thread_local std::vector<std::vector<uint8_t>> spare;
    return spare;
}
}  // namespace

std::vector<uint8_t> take_frame_buffer() {
    std::vector<std::vector<uint8_t>>& spare = spare_frame_buffers();
    if (spare.empty()) {
        return {};
    }
    std::vector<uint8_t> buf = std::move(spare.back());
    spare.pop_back();
    return buf;
}

void give_frame_buffer(std::vector<uint8_t>&& buf) {
    std::vector<std::vector<uint8_t>>& spare = spare_frame_buffers();
    if (buf.capacity() == 0 || spare.size() >= SPARE_FRAME_BUFFERS) {
        return;
    }
    buf.clear();
    spare.push_back(std::move(buf));
}

uint64_t eth_wire_bytes(size_t frame_len_without_fcs) {
    const size_t with_fcs = std::max<size_t>(frame_len_without_fcs + 4, 64);
    return with_fcs + 8 + 12;
}

namespace {
// set_clock's phase noise of frame n of a direction: uniform in [0, jitter_ps] whole ps, keyed
// by n and the direction's stream (its first draw, read from a copy: the stream never moves).
double jitter_offset(const std::mt19937_64& rng, double jitter_ps, uint64_t n) {
    const uint64_t key = std::mt19937_64(rng)();
    const double u = static_cast<double>(splitmix64(key ^ n) >> 11) * 0x1.0p-53;
    return std::floor(u * (jitter_ps + 1));
}

// `ps` whole picoseconds (a whole number, as std::round and std::floor give it) as a time:
// what sc_time(ps, SC_PS) gives, without its library call per frame. 1 ps scaled by the
// kernel's inline multiply is the same expression (value x scale + 0.5, truncated) for any time
// resolution that divides 1 ps (SystemC's are powers of ten); a coarser one takes the library.
sc_core::sc_time whole_ps(double ps) {
    static const sc_core::sc_time one(1, sc_core::SC_PS);  // first used after elaboration
    if (one.value() == 0) {
        return sc_core::sc_time(ps, sc_core::SC_PS);
    }
    sc_core::sc_time t = one;
    t *= ps;
    return t;
}

const sc_core::sc_time& max_time() {
    static const sc_core::sc_time& t = sc_core::sc_max_time();  // a library call each time
    return t;
}

// Seed offsets of the fault streams: direction 1's and faults.ecn_mark's (xor'ed into faults.seed).
constexpr uint64_t DIR1_SEED = 0xD1D1'0000'0000'0001ull;
constexpr uint64_t ECN_SEED = 0xEC4E'0000'0000'0000ull;
}  // namespace

eth_link::eth_link(sc_core::sc_module_name name, const eth_link_config& cfg, hw::sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_ps_per_byte(8000.0 / cfg.rate_gbps)
    , m_rng{std::mt19937_64(cfg.faults.seed), std::mt19937_64(cfg.faults.seed ^ DIR1_SEED)}
    , m_ecn_rng{std::mt19937_64(cfg.faults.seed ^ ECN_SEED),
                std::mt19937_64(cfg.faults.seed ^ ECN_SEED ^ DIR1_SEED)}
    , m_ctx(ctx)
    , m_quantum(std::round(512.0 * 1000.0 / cfg.rate_gbps), sc_core::SC_PS)
    , m_propagation(cfg.propagation_ns, sc_core::SC_NS) {
    for (int side = 0; side < 2; ++side) {
        m_tx[side] = std::make_unique<hw::channel<eth_frame>>("mac_tx" + std::to_string(side),
                                                              cfg.tx_fifo_frames);
        m_ctrl_tx[side] = std::make_unique<hw::channel<eth_frame>>(
            "mac_ctrl_tx" + std::to_string(side), cfg.ctrl_fifo_frames);
        // The serializer: a method (no thread switch per frame), named as the thread it was
        // (the order of same-instant choices goes by that name).
        sc_core::sc_spawn_options sopts;
        sopts.spawn_method();
        sc_core::sc_spawn(sc_core::sc_bind(&eth_link::serializer_method, this, side),
                          sc_core::sc_gen_unique_name("serializer"), &sopts);
        // Delivery: a method woken once per arrival time (the frames' arrival times are known
        // when they start on the wire); none for frames a sink takes ahead.
        sc_core::sc_spawn_options dopts;
        dopts.spawn_method();
        dopts.dont_initialize();
        dopts.set_sensitivity(&m_in_flight_event[side]);
        sc_core::sc_spawn(sc_core::sc_bind(&eth_link::delivery_method, this, side),
                          sc_core::sc_gen_unique_name("delivery"), &dopts);
        if (cfg.faults.pfc_storm_priorities != 0 && cfg.faults.pfc_storm_side == side) {
            sc_core::sc_spawn(sc_core::sc_bind(&eth_link::storm_thread, this, side),
                              sc_core::sc_gen_unique_name("pfc_storm"));
        }
        const std::string b = std::string(this->name()) + ".dir" + std::to_string(side);
        m_track[side] = b;
        ctx.stats.add(b, "frames", m_stats[side].frames, "frames", "frames sent in this direction");
        ctx.stats.add(b, "bytes", m_stats[side].bytes, "bytes", "frame bytes (without FCS)");
        ctx.stats.add(b, "wire_bytes", m_stats[side].wire_bytes, "bytes",
                      "bytes on the wire incl. FCS, preamble and inter-frame gap");
        ctx.stats.add(b, "busy_ps", m_stats[side].busy_ps, "ps", "time the direction was sending");
        ctx.stats.add(b, "faults_dropped", m_stats[side].dropped, "count",
                      "frames dropped by fault injection");
        ctx.stats.add(b, "faults_corrupted", m_stats[side].corrupted, "count",
                      "frames with a bit flipped");
        ctx.stats.add(b, "faults_duplicated", m_stats[side].duplicated, "count",
                      "frames delivered twice");
        ctx.stats.add(b, "faults_reordered", m_stats[side].reordered, "count", "frames held back");
        ctx.stats.add(b, "faults_delayed", m_stats[side].delayed, "count", "frames given jitter");
        ctx.stats.add(b, "faults_link_down", m_stats[side].link_down_drops, "count",
                      "frames lost while the link was down");
        ctx.stats.add(b, "pfc_pauses", m_stats[side].pauses, "count",
                      "PFC pause frames (nonzero quanta) that paused this direction");
        ctx.stats.add(b, "pfc_pause_ps", m_stats[side].pause_ps, "ps",
                      "time some priority of this direction was paused by PFC");
        ctx.stats.add(b, "pfc_frames", m_stats[side].pfc_frames, "count",
                      "PFC pause frames sent in this direction");
        ctx.stats.add(b, "ctrl_frames", m_stats[side].ctrl_frames, "count",
                      "frames sent from the MAC control queue (GSI: CM MADs, ARP; CNPs)");
        ctx.stats.add(
            b, "ctrl_peak_frames",
            [this, side] { return nlohmann::json(m_ctrl_tx[side]->max_occupancy()); }, "frames",
            "MAC control queue: highest occupancy");
        if (cfg.faults.ecn_mark > 0) {  // only then: other runs' stats.json stay as they were
            ctx.stats.add(b, "faults_ecn_marked", m_stats[side].ecn_marked, "count",
                          "ECT frames marked CE (faults.ecn_mark)");
        }
        if (ctx.vcd != nullptr) {
            m_tx[side]->trace(ctx.vcd, this->name());
            m_ctrl_tx[side]->trace(ctx.vcd, this->name());
            sc_core::sc_trace(ctx.vcd, m_busy[side], b + ".busy");
            sc_core::sc_trace(ctx.vcd, m_paused[side], b + ".pfc_paused");
            sc_core::sc_trace(ctx.vcd, m_xoff[side], b + ".pfc_xoff", 8);
        }
    }
}

void eth_link::set_clock(int side, double ppm, double jitter_ps, uint64_t seed) {
    m_fs_per_byte[side] = ppm == 0 ? 0 : 8e6 / m_cfg.rate_gbps / (1.0 + ppm * 1e-6);
    m_carry_fs[side] = 0;
    // At most half the shortest slot (84 bytes): a frame never starts before the last ended.
    m_jitter_ps[side] = std::min(jitter_ps, 42.0 * m_ps_per_byte);
    m_jitter_rng[side].seed(seed);
}

void eth_link::set_xoff(int side, uint8_t mask, bool on) {
    if (!m_cfg.pfc) {
        return;
    }
    m_rx_xoff[side] = on ? (m_rx_xoff[side] | mask) : (m_rx_xoff[side] & ~mask);
    update_xoff(side);
}

void eth_link::update_xoff(int side) {
    const uint8_t next = m_rx_xoff[side] | m_storm_xoff[side];
    const uint8_t changed = next ^ m_xoff[side];
    if (changed == 0) {
        return;
    }
    m_xoff[side] = next;
    queue_pause(side, changed);
}

void eth_link::storm_thread(int side) {
    // The side simulated by another rank storms there (its serializer sends the pause frames).
    const fault_config& fc = m_cfg.faults;
    if (m_remote[side]) {
        return;
    }
    const sc_core::sc_time start(fc.pfc_storm_start_ns, sc_core::SC_NS);
    if (start > sc_core::sc_time_stamp()) {
        sc_core::wait(start - sc_core::sc_time_stamp());
    }
    m_storm_xoff[side] = fc.pfc_storm_priorities;
    update_xoff(side);
    if (fc.pfc_storm_end_ns >= 1e18) {
        return;
    }
    sc_core::wait(sc_core::sc_time(fc.pfc_storm_end_ns, sc_core::SC_NS) - start);
    m_storm_xoff[side] = 0;
    update_xoff(side);
}

void eth_link::queue_pause(int side, uint8_t changed) {
    // One pending frame per side carries the latest state of every priority it names.
    m_ctrl_cev[side] |= static_cast<uint8_t>(changed | m_xoff[side]);
    m_ctrl_pending[side] = true;
    m_ctrl_event[side].notify(sc_core::SC_ZERO_TIME);
}

uint8_t eth_link::paused(int side) const {
    return paused_at(side, hw::sim_now());
}

uint8_t eth_link::paused_at(int side, const sc_core::sc_time& now) const {
    uint8_t m = 0;
    for (int p = 0; p < 8; ++p) {
        if (m_pause_until[side][p] > now) {
            m |= static_cast<uint8_t>(1u << p);
        }
    }
    return m;
}

sc_core::sc_time eth_link::max_pause_until(int side) const {
    sc_core::sc_time t = sc_core::SC_ZERO_TIME;
    for (const auto& u : m_pause_until[side]) {
        t = std::max(t, u);
    }
    return t;
}

void eth_link::apply_pause(int side, uint8_t class_enable, const pfc_quanta& quanta) {
    // Time paused is the union of the priorities' pause windows; every window contains now,
    // so the union is [earliest start, latest end) and grows/shrinks with the latest end.
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const sc_core::sc_time before = std::max(max_pause_until(side), now);
    bool pausing = false;
    for (int p = 0; p < 8; ++p) {
        if ((class_enable >> p) & 1) {
            m_pause_until[side][p] = now + m_quantum * static_cast<double>(quanta[p]);
            pausing = pausing || quanta[p] != 0;
        }
    }
    const sc_core::sc_time after = std::max(max_pause_until(side), now);
    auto& st = m_stats[side];
    const int64_t delta =
        static_cast<int64_t>(after.value()) - static_cast<int64_t>(before.value());
    const int64_t ps_per_tick =
        static_cast<int64_t>(sc_core::sc_get_time_resolution().to_seconds() * 1e12 + 0.5);
    st.pause_ps = static_cast<uint64_t>(static_cast<int64_t>(st.pause_ps) + delta * ps_per_tick);
    st.pauses += pausing ? 1 : 0;
    m_paused[side] = after > now;
    m_ctrl_event[side].notify(sc_core::SC_ZERO_TIME);  // a resume may unblock the transmitter
}

void eth_link::serializer_method(int side) {
    // One activation per step, each setting the method's next trigger where the thread form
    // waited: at a frame's end (or woken while idle after one, once the wire is free) it
    // chooses the next frame and starts it, or starts it later (a cut-through frame's wait).
    tx_mac& mac = m_mac_tx[side];
    switch (mac.state) {
        case tx_state::start:
            start_frame(side);
            return;
        case tx_state::woken:
            // Idle after a frame, woken by something queued: the next frame starts when the
            // wire is free, as if the MAC had woken there.
            if (hw::sim_now() < mac.free_at) {
                mac.state = tx_state::end;
                sc_core::next_trigger(mac.free_at - hw::sim_now());
                return;
            }
            [[fallthrough]];
        case tx_state::end:
            m_busy[side] = false;
            mac.state = tx_state::choose;
            break;
        case tx_state::sleeping:
            if (sc_core::timed_out() && hw::sim_now() < mac.sleep_until && !woken_by_events(side)) {
                sleep(side);  // a step of the sleep ended, nothing else happened
                return;
            }
            mac.state = tx_state::choose;
            break;
        case tx_state::choose:
            break;
    }
    if (choose(side)) {
        start_frame(side);
    }
}

bool eth_link::choose(int side) {
    auto& fifo = *m_tx[side];
    auto& ctrl = *m_ctrl_tx[side];
    tx_mac& mac = m_mac_tx[side];
    const sc_core::sc_time now = hw::sim_now();
    const bool refresh_due = m_xoff[side] != 0 && now >= m_next_refresh[side];
    if (mac.settle.queued() || m_ctrl_pending[side] || refresh_due || !ctrl.empty() ||
        (m_source[side] != nullptr ? m_source[side]->holds_frames() : !fifo.empty())) {
        // There is something to choose from: the choice is made once this instant has
        // settled, when every frame arriving now (a pause frame, a switch's arrivals), every
        // frame queued now and every XOFF change made now is in, whatever order the kernel
        // ran their processes in; transmitters choosing at the same instant go one at a
        // time, by process name (Timing in README.md). With nothing at all to choose from,
        // the MAC sleeps at once (below): whatever comes later at this instant wakes it.
        if (!mac.settle.settled()) {
            return false;  // triggered again at the release
        }
    }
    if (m_xoff[side] != 0 && now >= m_next_refresh[side] && !m_ctrl_pending[side]) {
        queue_pause(side, 0);  // refresh before the upstream's pause expires
    }
    eth_frame& f = mac.frame;
    f = eth_frame{};
    if (m_ctrl_pending[side]) {
        // MAC control goes ahead of data and is never paused itself.
        pfc_quanta q{};
        for (int p = 0; p < 8; ++p) {
            q[p] = ((m_xoff[side] >> p) & 1) ? m_quanta[side] : 0;
        }
        f.data = build_pfc_frame(m_mac[side], m_ctrl_cev[side], q);
        m_ctrl_pending[side] = false;
        m_ctrl_cev[side] = 0;
        ++m_stats[side].pfc_frames;
        if (m_xoff[side] != 0) {
            m_next_refresh[side] = now + m_quantum * (static_cast<double>(m_quanta[side]) / 2);
        }
        return true;
    }
    const uint8_t paused_now = paused(side);
    m_paused[side] = paused_now != 0;
    sc_core::sc_time retry = max_time();
    bool have = false;
    // The control queue first (strict priority over data: CM MADs, ARP and CNPs are
    // small and rare, so they cannot starve data; a data FIFO kept full cannot starve
    // them). Its head waits while its priority is paused; data of other priorities may
    // pass it meanwhile.
    if (!ctrl.empty()) {
        const uint8_t p = default_priority(ctrl.front().data);
        if (((paused_now >> p) & 1) == 0) {
            f = std::move(ctrl.front());
            ctrl.pop();
            f.priority = p;
            ++m_stats[side].ctrl_frames;
            have = true;
        }
    }
    if (have) {
        // a control frame goes first
    } else if (m_source[side] != nullptr) {
        have = m_source[side]->pull(paused_now, f, retry);
    } else if (!fifo.empty()) {
        const uint8_t p = default_priority(fifo.front().data);
        if (((paused_now >> p) & 1) == 0) {
            f = std::move(fifo.front());
            fifo.pop();
            f.priority = p;
            have = true;
            if (f.complete > now) {
                // Cut-through (eth_frame::complete): start once the rest of the frame
                // comes in faster than the wire takes it.
                const sc_core::sc_time need =
                    whole_ps(std::round(static_cast<double>(8 + f.data.size()) * m_ps_per_byte));
                if (f.complete > now + need) {
                    mac.state = tx_state::start;
                    sc_core::next_trigger(f.complete - need - now);
                    f.complete = sc_core::SC_ZERO_TIME;
                    return false;
                }
            }
            f.complete = sc_core::SC_ZERO_TIME;
        }
    }
    if (have) {
        return true;
    }
    // Sleep until something can change: a frame queued, a pause frame to send or
    // received, a pause expiring, a refresh due, a queued frame becoming eligible.
    sc_core::sc_time until = retry;
    for (const auto& u : m_pause_until[side]) {
        if (u > now) {
            until = std::min(until, u);
        }
    }
    if (m_xoff[side] != 0) {
        until = std::min(until, std::max(m_next_refresh[side], now));
    }
    mac.sleep_until = until;
    sleep(side);
    return false;
}

bool eth_link::woken_by_events(int side) const {
    // An event of the sleep notified in the delta cycle its step ended, before this method ran
    // (an immediate notification): it would have ended the sleep, so it ends it now.
    const sc_core::sc_event& data =
        m_source[side] != nullptr ? m_source[side]->data_event() : m_tx[side]->written_event();
    return data.triggered() || m_ctrl_tx[side]->written_event().triggered() ||
           m_ctrl_event[side].triggered();
}

const sc_core::sc_event_or_list& eth_link::wake_events(int side) {
    sc_core::sc_event_or_list& l = m_wake_events[side];
    if (l.empty()) {
        // Built at the first sleep (the source is set before the simulation starts) and kept:
        // `a | b | c` would allocate a list and grow its vector at every sleep.
        l |= m_source[side] != nullptr ? m_source[side]->data_event() : m_tx[side]->written_event();
        l |= m_ctrl_tx[side]->written_event();
        l |= m_ctrl_event[side];
    }
    return l;
}

void eth_link::sleep(int side) {
    tx_mac& mac = m_mac_tx[side];
    if (mac.sleep_until == max_time()) {
        mac.state = tx_state::choose;
        sc_core::next_trigger(wake_events(side));
    } else {
        // A pause's expiry or a refresh can be hundreds of microseconds ahead and is usually cut
        // short by a queued frame: in short steps (hw/common/short_wait.h), so the timed-event
        // queue does not keep the cut-short entries.
        mac.state = tx_state::sleeping;
        sc_core::next_trigger(hw::short_wait_until(mac.sleep_until), wake_events(side));
    }
}

void eth_link::start_frame(int side) {
    auto& fifo = *m_tx[side];
    auto& ctrl = *m_ctrl_tx[side];
    tx_mac& mac = m_mac_tx[side];
    eth_frame& f = mac.frame;
    const sc_core::sc_time now = hw::sim_now();
    f.tx_start = now;
    if (m_tx_observer[side]) {
        m_tx_observer[side](f);
    }
    if (m_cfg.faults.ecn_mark > 0) {
        mark_ecn(side, f);  // before the capture: wire.pcap shows the CE mark
    }
    const uint64_t wire = eth_wire_bytes(f.data.size());
    double dur_ps;
    if (m_fs_per_byte[side] == 0) {
        dur_ps = std::round(static_cast<double>(wire) * m_ps_per_byte);
    } else {
        // The MAC's own bit time (set_clock): whole picoseconds, the fraction carried.
        const double fs = static_cast<double>(wire) * m_fs_per_byte[side] + m_carry_fs[side];
        dur_ps = std::floor(fs / 1000.0);
        m_carry_fs[side] = fs - dur_ps * 1000.0;
    }
    sc_core::sc_time dur = whole_ps(dur_ps);
    auto& st = m_stats[side];
    ++st.frames;
    st.bytes += f.data.size();
    st.wire_bytes += wire;
    st.busy_ps += static_cast<uint64_t>(dur_ps);  // whole ps, what dur holds
    if (m_capture) {
        m_capture(side, f);
    }
    m_busy[side] = true;
    // The last bit arrives at the peer one propagation delay after it leaves. Preamble
    // and IFG are part of the slot, so the frame's bytes are in after (wire - 12) bytes.
    // A cut-through receiver takes the frame once its headers (after the 8-byte preamble) are
    // in.
    const frame_sink_if* rx = m_sink[1 - side];
    const bool mac_control = f.data.size() >= 14 && f.data[12] == (ETHERTYPE_MAC_CONTROL >> 8) &&
                             f.data[13] == (ETHERTYPE_MAC_CONTROL & 0xFF);
    const bool cut_through =
        m_remote[1 - side] ? m_remote_cut_through[1 - side] : rx != nullptr && rx->cut_through();
    const uint64_t in_bytes = (cut_through && !mac_control)
                                  ? 8 + std::min<uint64_t>(f.data.size(), CUT_THROUGH_BYTES)
                                  : wire - 12;
    const double in_ps =
        m_fs_per_byte[side] == 0
            ? std::round(static_cast<double>(in_bytes) * m_ps_per_byte)
            : std::floor(static_cast<double>(in_bytes) * m_fs_per_byte[side] / 1000.0);
    const sc_core::sc_time arrive = f.tx_start + whole_ps(in_ps) + m_propagation;
    if (m_ctx.tracer != nullptr) {
        m_wire_slices[side].slice(*m_ctx.tracer, m_track[side].c_str(), "wire", f.flow_id,
                                  f.tx_start, arrive);
    }
    deliver(side, std::move(f), arrive);
    if (m_jitter_ps[side] > 0) {
        // Phase noise (set_clock): frame n starts off its clock's schedule by a draw keyed
        // by n; the next one's offset replaces this one's, so the rate is unchanged.
        const uint64_t n = st.frames;
        dur = dur +
              sc_core::sc_time(jitter_offset(m_jitter_rng[side], m_jitter_ps[side], n + 1),
                               sc_core::SC_PS) -
              sc_core::sc_time(jitter_offset(m_jitter_rng[side], m_jitter_ps[side], n),
                               sc_core::SC_PS);
    }
    if (m_ctx.vcd == nullptr && m_xoff[side] == 0 && !m_ctrl_pending[side] && ctrl.empty() &&
        (m_source[side] != nullptr
             ? !m_source[side]->holds_frames() && !m_source[side]->wants_idle_pulls()
             : fifo.empty())) {
        // Nothing to send after this frame: no wake-up at its end. The MAC sleeps until
        // something is queued (or a pause frame is due, or one arrives), and then waits out
        // what is left of this frame: the next frame starts when the wire is free, as if it
        // had woken there. (With waves on it wakes at the end, which clears dir<s>.busy.)
        mac.free_at = now + dur;
        mac.state = tx_state::woken;
        sc_core::next_trigger(wake_events(side));
    } else {
        mac.state = tx_state::end;
        sc_core::next_trigger(dur);
    }
}

bool eth_link::matches(const eth_frame& f) const {
    const fault_config& fc = m_cfg.faults;
    const double t = f.tx_start.to_seconds() * 1e9;
    if (t < fc.window_start_ns || t >= fc.window_end_ns) {
        return false;
    }
    // Ethernet (802.1Q tag included) + IPv4 + UDP.
    const size_t BTH = l2_header_bytes(f.data.data(), f.data.size()) + 20 + 8;
    if (fc.opcode >= 0 && (f.data.size() <= BTH || f.data[BTH] != fc.opcode)) {
        return false;
    }
    if (fc.qp >= 0) {
        if (f.data.size() < BTH + 8) {
            return false;
        }
        const uint32_t qp = (static_cast<uint32_t>(f.data[BTH + 5]) << 16) |
                            (static_cast<uint32_t>(f.data[BTH + 6]) << 8) | f.data[BTH + 7];
        if (qp != static_cast<uint32_t>(fc.qp)) {
            return false;
        }
    }
    return true;
}

void eth_link::mark_ecn(int side, eth_frame& f) {
    auto& d = f.data;
    const size_t IP = l2_header_bytes(d.data(), d.size());  // IPv4 after the Ethernet header
    if (d.size() < IP + 20 || d[IP - 2] != 0x08 || d[IP - 1] != 0x00 || (d[IP] >> 4) != 4) {
        return;
    }
    const uint8_t ecn = d[IP + 1] & 3;
    if ((ecn != 1 && ecn != 2) || !matches(f)) {
        return;  // not ECN-capable (or already CE), or filtered out
    }
    if (std::uniform_real_distribution<double>(0.0, 1.0)(m_ecn_rng[side]) >=
        m_cfg.faults.ecn_mark) {
        return;
    }
    d[IP + 1] |= 3;
    // IPv4 header checksum over the (option-less or not) header, recomputed.
    const size_t ihl = static_cast<size_t>(d[IP] & 0x0F) * 4;
    if (d.size() < IP + ihl) {
        return;
    }
    const uint16_t csum = roce::ipv4_checksum(d.data() + IP, ihl);
    d[IP + 10] = static_cast<uint8_t>(csum >> 8);
    d[IP + 11] = static_cast<uint8_t>(csum);
    ++m_stats[side].ecn_marked;
}

void eth_link::deliver(int side, eth_frame&& f, const sc_core::sc_time& arrive) {
    auto& st = m_stats[side];
    const fault_config& fc = m_cfg.faults;
    sc_core::sc_time at = arrive;
    bool twice = false;  // duplicate fault: delivered twice
    if (fc.any()) {
        const double t = f.tx_start.to_seconds() * 1e9;
        for (const auto& iv : fc.link_down_ns) {
            if (t >= iv.first && t < iv.second) {
                ++st.link_down_drops;
                return;
            }
        }
        if (matches(f)) {
            // Draw every decision so one fault kind's setting does not shift another's stream.
            const bool drop = uniform(side) < fc.drop;
            const bool corrupt = uniform(side) < fc.corrupt;
            const bool dup = uniform(side) < fc.duplicate;
            const bool reorder = uniform(side) < fc.reorder;
            const double jitter = uniform(side) * fc.jitter_ns;  // drawn even when jitter_ns is 0
            const size_t bit =
                static_cast<size_t>(uniform(side) * static_cast<double>(f.data.size() * 8));
            if (drop) {
                ++st.dropped;
                return;
            }
            if (corrupt && !f.data.empty()) {
                ++st.corrupted;
                f.data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
            }
            if (reorder) {
                ++st.reordered;
                at += sc_core::sc_time(fc.reorder_delay_ns, sc_core::SC_NS);
            }
            if (jitter > 0) {
                ++st.delayed;
                at += sc_core::sc_time(jitter, sc_core::SC_NS);
            }
            if (dup) {
                ++st.duplicated;
                twice = true;
            }
        }
    }
    if (m_remote[1 - side]) {
        // A cut link: the receiving rank queues it (inject()) at the next window boundary.
        if (twice) {
            m_outbox.push_back({side, at, f});
        }
        m_outbox.push_back({side, at, std::move(f)});
        return;
    }
    if (twice) {
        hand_over(side, eth_frame(f), at);
    }
    hand_over(side, std::move(f), at);
}

void eth_link::hand_over(int side, eth_frame&& f, const sc_core::sc_time& at) {
    frame_sink_if* sink = m_sink[1 - side];
    if (sink != nullptr && sink->takes_frames_ahead() && !is_pfc_frame(f.data)) {
        sink->receive_frame_ahead(std::move(f), at);  // the sink wakes itself at `at`
        return;
    }
    // The delivery method sleeps until the earliest arrival; it needs a new time only when
    // this frame becomes the earliest (an empty queue, or a fault delay let a later one
    // overtake). A timed notification: the method runs once, at the arrival.
    auto& q = m_in_flight[side];
    const size_t head = m_in_flight_head[side];
    const bool earliest = head == q.size() || at < q[head].first;
    auto pos = q.end();  // after every frame arriving at or before `at`
    while (pos - q.begin() > static_cast<std::ptrdiff_t>(head) && at < std::prev(pos)->first) {
        --pos;
    }
    q.emplace(pos, at, std::move(f));
    if (earliest) {
        m_in_flight_event[side].notify(at - hw::sim_now());
    }
}

void eth_link::set_remote(int side, bool remote_cut_through) {
    m_remote[side] = true;
    m_remote_cut_through[side] = remote_cut_through;
}

void eth_link::inject(int from_side, const sc_core::sc_time& arrive, eth_frame&& f) {
    // The exchange hands over frames arriving after the window it ended (runner.cpp checks
    // it), so `arrive` is after now, as for a frame sent here.
    hand_over(from_side, std::move(f), std::max(arrive, sc_core::sc_time_stamp()));
}

void eth_link::delivery_method(int side) {
    auto& q = m_in_flight[side];
    size_t& head = m_in_flight_head[side];
    const sc_core::sc_time now = hw::sim_now();
    while (head < q.size() && q[head].first <= now) {
        eth_frame f = std::move(q[head].second);
        ++head;
        uint8_t cev = 0;
        pfc_quanta quanta{};
        if (parse_pfc_frame(f.data, cev, quanta)) {
            // MAC control: the receiving MAC pauses its own transmitter; the client never sees it.
            if (m_cfg.pfc) {
                apply_pause(1 - side, cev, quanta);
            }
            continue;
        }
        frame_sink_if* sink = m_sink[1 - side];
        if (sink != nullptr) {
            sink->receive_frame(std::move(f));
        }
    }
    if (head == q.size()) {
        q.clear();  // all delivered: the storage is kept
        head = 0;
    } else if (head >= 64 && head * 2 >= q.size()) {
        q.erase(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(head));
        head = 0;
    }
    if (head < q.size()) {
        m_in_flight_event[side].notify(q[head].first - now);
    }
}

}  // namespace rnic::fabric
