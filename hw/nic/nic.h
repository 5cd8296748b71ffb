// SPDX-License-Identifier: Apache-2.0
// The RNIC top: instantiates every block, binds them, and picks the send-path implementation.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include <systemc>
#include <tlm>

#include "hw/cc/cc_engine.h"
#include "hw/cmd_processor/cmd_processor.h"
#include "hw/common/clock_domain.h"
#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/context_cache/context_cache.h"
#include "hw/cq_writer/cq_writer.h"
#include "hw/dma_engine/dma_engine.h"
#include "hw/doorbell/doorbell.h"
#include "hw/gsi/gsi.h"
#include "hw/netdma/netdma.h"
#include "hw/nic/nic_config.h"
#include "hw/recv_path/notification_point.h"
#include "hw/recv_path/recv_path.h"
#include "hw/send_path/send_path.h"
#include "hw/translation/translation.h"
#include "hw/tx_engine/pacer.h"
#include "hw/tx_engine/tx_engine.h"
#include "hw/wqe_fetch/wqe_fetch.h"
#include "tlm/ethernet/eth_link.h"

namespace rnic::hw {

// Block diagram (one SystemC module each):
//   PCIe BAR0 -> doorbell -> wqe_fetch -> tx_engine -> send_path -> MAC (eth_link)
//                    |           |            |   ^                      |
//             cmd_processor  dma_engine  translation |             recv_path <- MAC
//                    |                        |   responses/ACKs <-----/  |
//                 cq_writer <-----------------+-------------------------- +
//   gsi (QP1 MADs): BAR0 rings <-> MAC transmit FIFO / recv_path's UD frames
class nic : public sc_core::sc_module {
public:
    nic(sc_core::sc_module_name name, const nic_config& cfg, const nic_identity& id,
        fabric::eth_link& link, int link_side, sim_context& ctx);
    ~nic() override;

    // PCIe attachment: BAR0 target and DMA initiator.
    tlm::tlm_target_socket<>& mmio_in() { return m_doorbell.mmio_in; }
    tlm::tlm_initiator_socket<>& dma_out() { return m_dma.dma_out; }

    const nic_config& config() const { return m_cfg; }
    const nic_identity& identity() const { return m_id; }
    const clock_domain& clock() const { return m_clk; }
    context_store& contexts() { return m_contexts; }
    // Test hooks: the firmware (inject_fatal_error) and the completion/event block.
    cmd_processor& firmware() { return m_cmd_processor; }
    cq_writer& completions() { return m_cq_writer; }
    // Congestion control (rnic.cc.algorithm other than "none"), else null.
    cc::cc_engine* congestion_control() { return m_cc.get(); }
    // The port: whether it sees its link up now (loss of signal), and when it last saw it go down.
    bool link_up() const { return m_link_up; }
    const sc_core::sc_time& link_down_since() const { return m_link_down_since; }
    notification_point* cnp_generator() { return m_np.get(); }

private:
    // Follows the loss-of-signal intervals of the NIC's link (only when it has any).
    void port_thread(std::vector<std::pair<double, double>> down_ns);

    nic_config m_cfg;
    nic_identity m_id;
    clock_domain m_clk;
    context_store m_contexts;
    dma_engine m_dma;
    context_cache m_context_cache;
    doorbell m_doorbell;
    cq_writer m_cq_writer;
    netdma m_netdma;  // NetDMA copy channels (BAR0 window routed by the doorbell block)
    cmd_processor m_cmd_processor;
    translation m_translation;
    wqe_fetch m_wqe_fetch;
    std::unique_ptr<send_path_unit> m_send_path;  // model, RTL or lockstep (rnic.send_path.impl)
    tx_engine m_tx_engine;
    recv_path m_recv_path;
    gsi m_gsi;  // QP1: CM MADs as UD frames (BAR0 window routed by the doorbell block)
    // The port: link state as the MAC sees it, counters.
    bool m_link_up = true;  // traced
    sc_core::sc_time m_link_down_since;
    struct port_stats {
        uint64_t link_downs = 0;
        uint64_t link_ups = 0;
        uint64_t link_down_ps = 0;  // time seen down (up to the end of the run when still down)
    } m_port_stats;
    // Congestion control, only when rnic.cc.algorithm is not "none": the transmit scheduler's
    // rate limiter, the receive path's notification point, the reaction point's engine.
    std::unique_ptr<pacer> m_pacer;
    std::unique_ptr<notification_point> m_np;
    std::unique_ptr<cc::cc_engine> m_cc;
};

}  // namespace rnic::hw
