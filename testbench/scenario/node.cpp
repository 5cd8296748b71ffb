// SPDX-License-Identifier: Apache-2.0
// One simulated machine: assembly and bindings.
#include "testbench/scenario/node.h"

#include <string>

namespace rnic::scenario {

namespace {
ndk::host_config host_of(const scenario_config& cfg, size_t index, const node_config& n) {
    ndk::host_config h = cfg.host;
    h.va_region = index;  // the node's own addresses, whichever rank simulates it
    if (n.prefix_length) {
        h.ipv4_prefix_length = *n.prefix_length;
    }
    if (n.gateway) {
        h.ipv4_gateway = *n.gateway;
    }
    return h;
}

hw::nic_identity identity_of(size_t index, const topology_config& t) {
    const node_config& n = t.nodes[index];
    hw::nic_identity id;
    id.node_id = static_cast<uint32_t>(index);
    id.mac = n.mac;
    id.ip = n.ip;
    id.clock_ppm = index < t.node_ppm.size() ? t.node_ppm[index] : 0;
    return id;
}
}  // namespace

node::node(sc_core::sc_module_name name, size_t index, const scenario_config& cfg,
           fabric::eth_link& link, int side, hw::sim_context& ctx)
    : sc_module(name)
    , m_host_cfg(host_of(cfg, index, cfg.topology.nodes[index]))
    , memory("memory", sc_core::sc_time(cfg.host.memory_latency_ns, sc_core::SC_NS))
    , pcie("pcie", cfg.rnic.pcie, "", ctx)
    , nic("nic", cfg.rnic, identity_of(index, cfg.topology), link, side, ctx)
    , host("host", m_host_cfg, memory, pcie, ctx)  // binds host.mmio_out -> pcie.host_mmio_in
    , m_index(index) {
    nic.dma_out().bind(pcie.dev_dma_in);
    pcie.bar_out.bind(nic.mmio_in());
    pcie.mem_out.bind(memory.dma_in);

    // host_memory keeps plain counters; publish them like every other block's.
    const std::string b = memory.name();
    const auto& s = memory.get_stats();
    ctx.stats.add(b, "dma_reads", s.dma_reads, "count", "DMA read transactions served");
    ctx.stats.add(b, "dma_writes", s.dma_writes, "count", "DMA write transactions served");
    ctx.stats.add(b, "dma_read_bytes", s.dma_read_bytes, "bytes", "bytes read by DMA");
    ctx.stats.add(b, "dma_write_bytes", s.dma_write_bytes, "bytes", "bytes written by DMA");
}

}  // namespace rnic::scenario
