// SPDX-License-Identifier: Apache-2.0
// Full-duplex Ethernet link.
#include "tlm/ethernet/eth_link.h"

#include <algorithm>
#include <cmath>

namespace rnic::fabric {

eth_link_config parse_eth_link_config(config::reader r) {
    eth_link_config c;
    r.get("rate_gbps", c.rate_gbps, 1.0, 1600.0);
    r.get("propagation_ns", c.propagation_ns, 0.0, 1e9);
    // At least 2: the GSI leaves the last free slot to the send path (hw/gsi/README.md).
    r.get("tx_fifo_frames", c.tx_fifo_frames, 2u, 4096u);
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

uint64_t eth_wire_bytes(size_t frame_len_without_fcs) {
    const size_t with_fcs = std::max<size_t>(frame_len_without_fcs + 4, 64);
    return with_fcs + 8 + 12;
}

eth_link::eth_link(sc_core::sc_module_name name, const eth_link_config& cfg, hw::sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_ps_per_byte(8000.0 / cfg.rate_gbps)
    , m_rng(cfg.faults.seed)
    , m_ecn_rng(cfg.faults.seed ^ 0xEC4E'0000'0000'0000ull)
    , m_ctx(ctx) {
    for (int side = 0; side < 2; ++side) {
        m_tx[side] = std::make_unique<hw::channel<eth_frame>>("mac_tx" + std::to_string(side),
                                                              cfg.tx_fifo_frames);
        sc_core::sc_spawn(sc_core::sc_bind(&eth_link::serializer_thread, this, side),
                          sc_core::sc_gen_unique_name("serializer"));
        sc_core::sc_spawn(sc_core::sc_bind(&eth_link::delivery_thread, this, side),
                          sc_core::sc_gen_unique_name("delivery"));
        const std::string b = std::string(this->name()) + ".dir" + std::to_string(side);
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
                      "times a full receiver paused this direction (PFC)");
        ctx.stats.add(b, "pfc_pause_ps", m_stats[side].pause_ps, "ps",
                      "time this direction was paused by PFC");
        if (cfg.faults.ecn_mark > 0) {  // only then: other runs' stats.json stay as they were
            ctx.stats.add(b, "faults_ecn_marked", m_stats[side].ecn_marked, "count",
                          "ECT frames marked CE (faults.ecn_mark)");
        }
        if (ctx.vcd != nullptr) {
            m_tx[side]->trace(ctx.vcd, this->name());
            sc_core::sc_trace(ctx.vcd, m_busy[side], b + ".busy");
            sc_core::sc_trace(ctx.vcd, m_paused[side], b + ".pfc_paused");
        }
    }
}

void eth_link::serializer_thread(int side) {
    auto& fifo = *m_tx[side];
    for (;;) {
        // A paused MAC finishes the frame on the wire and starts no new one (PFC XOFF).
        if (m_paused[side]) {
            const sc_core::sc_time t0 = sc_core::sc_time_stamp();
            while (m_paused[side]) {
                sc_core::wait(m_resume[side]);
            }
            m_stats[side].pause_ps +=
                static_cast<uint64_t>((sc_core::sc_time_stamp() - t0).to_seconds() * 1e12 + 0.5);
        }
        eth_frame f = fifo.get();
        if (m_paused[side]) {
            // Paused while waiting for a frame: hold it until resumed.
            while (m_paused[side]) {
                sc_core::wait(m_resume[side]);
            }
        }
        f.tx_start = sc_core::sc_time_stamp();
        if (m_cfg.faults.ecn_mark > 0) {
            mark_ecn(side, f);  // before the capture: wire.pcap shows the CE mark
        }
        const uint64_t wire = eth_wire_bytes(f.data.size());
        const sc_core::sc_time dur(std::round(static_cast<double>(wire) * m_ps_per_byte),
                                   sc_core::SC_PS);
        auto& st = m_stats[side];
        ++st.frames;
        st.bytes += f.data.size();
        st.wire_bytes += wire;
        st.busy_ps += static_cast<uint64_t>(dur.to_seconds() * 1e12 + 0.5);
        if (m_capture) {
            m_capture(side, f);
        }
        m_busy[side] = true;
        // The last bit arrives at the peer one propagation delay after it leaves. Preamble
        // and IFG are part of the slot, so the frame's bytes are in after (wire - 12) bytes.
        const sc_core::sc_time arrive =
            f.tx_start +
            sc_core::sc_time(std::round(static_cast<double>(wire - 12) * m_ps_per_byte),
                             sc_core::SC_PS) +
            sc_core::sc_time(m_cfg.propagation_ns, sc_core::SC_NS);
        if (m_ctx.tracer != nullptr) {
            m_ctx.tracer->slice(std::string(name()) + ".dir" + std::to_string(side), "wire",
                                f.flow_id, f.tx_start, arrive);
        }
        deliver(side, std::move(f), arrive);
        sc_core::wait(dur);
        m_busy[side] = false;
    }
}

bool eth_link::matches(const eth_frame& f) const {
    const fault_config& fc = m_cfg.faults;
    const double t = f.tx_start.to_seconds() * 1e9;
    if (t < fc.window_start_ns || t >= fc.window_end_ns) {
        return false;
    }
    constexpr size_t BTH = 14 + 20 + 8;  // Ethernet + IPv4 + UDP
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
    constexpr size_t IP = 14;  // IPv4 header after the Ethernet header
    auto& d = f.data;
    if (d.size() < IP + 20 || d[12] != 0x08 || d[13] != 0x00 || (d[IP] >> 4) != 4) {
        return;
    }
    const uint8_t ecn = d[IP + 1] & 3;
    if ((ecn != 1 && ecn != 2) || !matches(f)) {
        return;  // not ECN-capable (or already CE), or filtered out
    }
    if (std::uniform_real_distribution<double>(0.0, 1.0)(m_ecn_rng) >= m_cfg.faults.ecn_mark) {
        return;
    }
    d[IP + 1] |= 3;
    // IPv4 header checksum over the (option-less or not) header, recomputed.
    const size_t ihl = static_cast<size_t>(d[IP] & 0x0F) * 4;
    if (d.size() < IP + ihl) {
        return;
    }
    d[IP + 10] = d[IP + 11] = 0;
    uint32_t sum = 0;
    for (size_t i = 0; i < ihl; i += 2) {
        sum += (static_cast<uint32_t>(d[IP + i]) << 8) | d[IP + i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    const auto csum = static_cast<uint16_t>(~sum);
    d[IP + 10] = static_cast<uint8_t>(csum >> 8);
    d[IP + 11] = static_cast<uint8_t>(csum);
    ++m_stats[side].ecn_marked;
}

void eth_link::deliver(int side, eth_frame&& f, const sc_core::sc_time& arrive) {
    auto& q = m_in_flight[side];
    auto& st = m_stats[side];
    const fault_config& fc = m_cfg.faults;
    sc_core::sc_time at = arrive;
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
            const bool drop = uniform() < fc.drop;
            const bool corrupt = uniform() < fc.corrupt;
            const bool dup = uniform() < fc.duplicate;
            const bool reorder = uniform() < fc.reorder;
            const double jitter = uniform() * fc.jitter_ns;  // drawn even when jitter_ns is 0
            const size_t bit =
                static_cast<size_t>(uniform() * static_cast<double>(f.data.size() * 8));
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
                q.emplace(at, f);
            }
        }
    }
    q.emplace(at, std::move(f));
    m_in_flight_event[side].notify(sc_core::SC_ZERO_TIME);
}

void eth_link::delivery_thread(int side) {
    auto& q = m_in_flight[side];
    for (;;) {
        while (q.empty()) {
            sc_core::wait(m_in_flight_event[side]);
        }
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        if (q.begin()->first > now) {
            sc_core::wait(q.begin()->first - now, m_in_flight_event[side]);
            continue;
        }
        frame_sink_if* sink = m_sink[1 - side];
        if (sink != nullptr && m_cfg.pfc && !sink->ready()) {
            // Receiver buffer full: pause the sender and hold this frame until it drains.
            // Frames already on the wire wait here (the PFC headroom).
            m_paused[side] = true;
            ++m_stats[side].pauses;
            while (!sink->ready()) {
                sc_core::wait(*sink->ready_event());
            }
            m_paused[side] = false;
            m_resume[side].notify(sc_core::SC_ZERO_TIME);
        }
        eth_frame f = std::move(q.begin()->second);
        q.erase(q.begin());
        if (sink != nullptr) {
            sink->receive_frame(std::move(f));
        }
    }
}

}  // namespace rnic::fabric
