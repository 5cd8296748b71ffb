// SPDX-License-Identifier: Apache-2.0
// One simulated machine of a scenario: host DRAM, PCIe link, RNIC and the host (CPU, kernel
// services) its provider driver runs on.
#pragma once

#include <cstddef>

#include <systemc>

#include "hw/common/sim_context.h"
#include "hw/nic/nic.h"
#include "ndk_shim/host/host_system.h"
#include "testbench/scenario/scenario_config.h"
#include "tlm/ethernet/eth_link.h"
#include "tlm/host_memory/host_memory.h"
#include "tlm/pcie/pcie_link.h"

namespace rnic::scenario {

//   host (CPU) --mmio_out--> pcie.host_mmio_in   pcie.bar_out --> nic.mmio_in (BAR0)
//   memory.dma_in <--mem_out-- pcie  <--dev_dma_in-- nic.dma_out (DMA, MSI-X)
//   nic <--> eth_link side `side`
class node : public sc_core::sc_module {
private:
    // The host's config with this node's IPv4 interface (topology.nodes.<i>.prefix_length /
    // gateway when set): the host system keeps a reference to it.
    ndk::host_config m_host_cfg;

public:
    fabric::host_memory memory;
    fabric::pcie_link pcie;
    hw::nic nic;
    ndk::host_system host;

    // `index` is the node's position in topology.nodes; its NIC is side `side` of `link`.
    node(sc_core::sc_module_name name, size_t index, const scenario_config& cfg,
         fabric::eth_link& link, int side, hw::sim_context& ctx);
    // Two nodes back to back: node `index` (0 or 1) is side `index` of the cable (the tests'
    // benches).
    node(sc_core::sc_module_name name, size_t index, const scenario_config& cfg,
         fabric::eth_link& link, hw::sim_context& ctx)
        : node(name, index, cfg, link, static_cast<int>(index), ctx) {}

    size_t index() const { return m_index; }

private:
    size_t m_index;
};

}  // namespace rnic::scenario
