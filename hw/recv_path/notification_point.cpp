// SPDX-License-Identifier: Apache-2.0
// Congestion notification point, see notification_point.h.
#include "hw/recv_path/notification_point.h"

#include "hw/send_path/send_path_packets.h"
#include "tlm/ethernet/vlan.h"

namespace rnic::hw {

notification_point::notification_point(sc_core::sc_module_name name, const cc::np_params& params,
                                       const clock_domain& clk, const nic_identity& id,
                                       uint32_t max_qps, channel<fabric::eth_frame>& mac_tx,
                                       sim_context& ctx)
    : sc_module(name)
    , m_params(params)
    , m_clk(clk)
    , m_id(id)
    , m_mac_tx(mac_tx)
    , m_last_cnp_ps(max_qps, 0)
    , m_sent_once(max_qps, 0) {
    SC_HAS_PROCESS(notification_point);
    SC_THREAD(cnp_thread);
    const std::string b = this->name();
    auto& s = ctx.stats;
    s.add(b, "ce_packets", m_stats.ce_packets, "count", "data packets received with ECN CE");
    s.add(b, "cnps_sent", m_stats.cnps_sent, "count", "CNPs sent");
    s.add(b, "cnps_suppressed", m_stats.cnps_suppressed, "count",
          "CE packets within np_min_time_between_cnps of their QP's last CNP (no CNP)");
    s.add(b, "cnps_dropped", m_stats.cnps_dropped, "count", "CNPs dropped: CNP queue full");
    s.add(b, "cnps_received", m_stats.cnps_received, "count",
          "CNPs received and handed to the reaction point");
    if (ctx.vcd != nullptr) {
        sc_core::sc_trace(ctx.vcd, m_stats.ce_packets, b + ".ce_packets");
        sc_core::sc_trace(ctx.vcd, m_stats.cnps_sent, b + ".cnps_sent");
        sc_core::sc_trace(ctx.vcd, m_stats.cnps_received, b + ".cnps_received");
    }
}

bool notification_point::admit(uint32_t qpn, uint64_t now_ps) {
    if (qpn >= m_last_cnp_ps.size()) {
        return false;
    }
    if (m_sent_once[qpn] && now_ps - m_last_cnp_ps[qpn] < m_params.min_time_between_cnps_ps) {
        return false;
    }
    m_sent_once[qpn] = 1;
    m_last_cnp_ps[qpn] = now_ps;
    return true;
}

void notification_point::reset_qp(uint32_t qpn) {
    if (qpn < m_sent_once.size()) {
        m_sent_once[qpn] = 0;
        m_last_cnp_ps[qpn] = 0;
    }
}

std::vector<uint8_t> notification_point::build_cnp(uint32_t qpn, const qp_context& qp) const {
    roce::frame_header h;
    h.dst_mac.b = qp.dest_mac;
    h.src_mac.b = m_id.mac;
    h.src_ip = m_id.ip;
    h.dst_ip = qp.dest_ip;
    h.tos = static_cast<uint8_t>(m_params.cnp_dscp << 2);  // ECN 00: a CNP is never marked
    h.udp_src_port = udp_source_port(qpn, qp.dest_qpn);
    h.bth_.opcode = roce::CNP;
    h.bth_.becn = true;  // annex A17.9.3: the CNP's BECN bit is set
    h.bth_.dest_qp = qp.dest_qpn;
    h.bth_.psn = 0;
    std::vector<uint8_t> out;
    roce::build_frame(h, nullptr, 0, out);
    if (m_params.cnp_prio >= 0) {
        // np_cnp_prio: an 802.1p priority tag (VID 0) after the MACs; the fabric then classifies
        // the CNP by its PCP instead of its DSCP. The ICRC does not cover the Ethernet header.
        fabric::insert_priority_tag(out, static_cast<uint8_t>(m_params.cnp_prio));
    }
    return out;
}

bool notification_point::inspect(uint32_t qpn, const qp_context& qp, const roce::frame_header& h) {
    const uint8_t op = h.bth_.opcode;
    if (op == roce::CNP) {
        ++m_stats.cnps_received;
        if (m_rp) {
            m_rp(qpn);
        }
        return true;
    }
    if ((h.tos & 3) != 3 || op == roce::RC_ACK) {
        return false;  // not CE, or an ACK (no data: ACKs are not reacted to)
    }
    ++m_stats.ce_packets;
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    if (!admit(qpn, static_cast<uint64_t>(now.to_seconds() * 1e12 + 0.5))) {
        ++m_stats.cnps_suppressed;
        return false;
    }
    if (m_queue.size() >= CNP_QUEUE_DEPTH) {
        ++m_stats.cnps_dropped;
        return false;
    }
    fabric::eth_frame f;
    f.data = build_cnp(qpn, qp);
    m_queue.emplace_back(now + m_clk.cycles(CNP_BUILD_CYCLES), std::move(f));
    ++m_stats.cnps_sent;
    m_queued.notify(sc_core::SC_ZERO_TIME);
    return false;
}

void notification_point::cnp_thread() {
    for (;;) {
        while (m_queue.empty()) {
            sc_core::wait(m_queued);
        }
        m_clk.wait_until(m_queue.front().first);
        fabric::eth_frame f = std::move(m_queue.front().second);
        m_queue.pop_front();
        m_mac_tx.put(std::move(f));  // MAC control queue: blocks while it is full
    }
}

}  // namespace rnic::hw
