// SPDX-License-Identifier: Apache-2.0
// Congestion notification point (RoCEv2 annex A17.9): the receive path shows it every RoCE
// frame of a known QP after the parse stage. A data packet (request or READ response) that
// arrived with ECN = CE makes a CNP to the QP that sent it, at most one per QP per
// np_min_time_between_cnps; a CNP that arrives is handed to the reaction point (hw/cc). CNPs
// are built here (BTH opcode 0x81, BECN set, 16 reserved bytes, ICRC; DSCP np_cnp_dscp, ECN
// not-ECT) and queued to the MAC control queue (eth_link::ctrl_tx), sent ahead of data.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <systemc>

#include "hw/cc/cc_algorithm.h"
#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/nic/nic_identity.h"
#include "hw/roce/roce.h"
#include "tlm/ethernet/eth_link.h"

namespace rnic::hw {

class notification_point : public sc_core::sc_module {
public:
    // CNPs waiting for the MAC control queue; one arriving to a full queue is dropped
    // (cnps_dropped).
    static constexpr uint32_t CNP_QUEUE_DEPTH = 16;
    // Cycles from the CE packet's parse to its CNP entering the queue (header build + ICRC).
    static constexpr uint32_t CNP_BUILD_CYCLES = 2;

    notification_point(sc_core::sc_module_name name, const cc::np_params& params,
                       const clock_domain& clk, const nic_identity& id, uint32_t max_qps,
                       channel<fabric::eth_frame>& mac_tx, sim_context& ctx);

    // True when the frame was a CNP (consumed: given to the reaction point). A CE-marked data
    // packet may queue a CNP to qp's peer; the caller goes on handling it either way.
    bool inspect(uint32_t qpn, const qp_context& qp, const roce::frame_header& h);
    void set_reaction_point(std::function<void(uint32_t)> fn) { m_rp = std::move(fn); }
    void reset_qp(uint32_t qpn);

    // The per-QP limiter alone (unit tests): may `qpn` send a CNP at `now_ps`? Books it if so.
    bool admit(uint32_t qpn, uint64_t now_ps);
    // The CNP this NIC sends for a CE packet received on `qpn` (bytes as on the wire, no FCS).
    std::vector<uint8_t> build_cnp(uint32_t qpn, const qp_context& qp) const;

    struct stats {
        uint64_t ce_packets = 0;       // data packets received with ECN = CE
        uint64_t cnps_sent = 0;        // CNPs queued to the MAC
        uint64_t cnps_suppressed = 0;  // CE packets within np_min_time_between_cnps of a CNP
        uint64_t cnps_dropped = 0;     // CNP queue full
        uint64_t cnps_received = 0;    // CNPs handed to the reaction point
    };
    const stats& get_stats() const { return m_stats; }

private:
    void cnp_thread();

    cc::np_params m_params;
    const clock_domain& m_clk;
    nic_identity m_id;
    channel<fabric::eth_frame>& m_mac_tx;
    std::deque<std::pair<sc_core::sc_time, fabric::eth_frame>> m_queue;  // (ready, CNP)
    quick_event m_queued;
    std::vector<uint64_t> m_last_cnp_ps;  // per QP: time of the last CNP
    std::vector<uint8_t> m_sent_once;     // per QP: a CNP was sent since create/reset
    std::function<void(uint32_t)> m_rp;
    stats m_stats;
};

}  // namespace rnic::hw
