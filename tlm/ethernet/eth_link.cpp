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
    r.get("tx_fifo_frames", c.tx_fifo_frames, 1u, 4096u);
    r.finish();
    return c;
}

uint64_t eth_wire_bytes(size_t frame_len_without_fcs) {
    const size_t with_fcs = std::max<size_t>(frame_len_without_fcs + 4, 64);
    return with_fcs + 8 + 12;
}

eth_link::eth_link(sc_core::sc_module_name name, const eth_link_config& cfg,
                   hw::sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_ps_per_byte(8000.0 / cfg.rate_gbps) {
    for (int side = 0; side < 2; ++side) {
        m_tx[side] = std::make_unique<hw::channel<eth_frame>>(
            "mac_tx" + std::to_string(side), cfg.tx_fifo_frames);
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
        if (ctx.vcd != nullptr) {
            m_tx[side]->trace(ctx.vcd, this->name());
            sc_core::sc_trace(ctx.vcd, m_busy[side], b + ".busy");
        }
    }
}

void eth_link::serializer_thread(int side) {
    auto& fifo = *m_tx[side];
    for (;;) {
        eth_frame f = fifo.get();
        f.tx_start = sc_core::sc_time_stamp();
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
            f.tx_start + sc_core::sc_time(std::round(static_cast<double>(wire - 12) * m_ps_per_byte),
                                          sc_core::SC_PS) +
            sc_core::sc_time(m_cfg.propagation_ns, sc_core::SC_NS);
        m_in_flight[side].emplace_back(arrive, std::move(f));
        m_in_flight_event[side].notify(sc_core::SC_ZERO_TIME);
        sc_core::wait(dur);
        m_busy[side] = false;
    }
}

void eth_link::delivery_thread(int side) {
    auto& q = m_in_flight[side];
    for (;;) {
        while (q.empty()) {
            sc_core::wait(m_in_flight_event[side]);
        }
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        if (q.front().first > now) {
            sc_core::wait(q.front().first - now);
            continue;
        }
        eth_frame f = std::move(q.front().second);
        q.pop_front();
        if (m_sink[1 - side] != nullptr) {
            m_sink[1 - side]->receive_frame(std::move(f));
        }
    }
}

}  // namespace rnic::fabric
