// SPDX-License-Identifier: Apache-2.0
// The host a provider driver runs on: CPU time, kernel memory services (physical pages, kernel
// virtual buffers, MDLs), MMIO to the NIC's BAR0 and MSI-X interrupt dispatch.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "hw/common/config_reader.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "ndk_shim/host/neighbor_cache.h"
#include "ndk_shim/ndk_types.h"
#include "tlm/host_memory/host_memory.h"
#include "tlm/pcie/pcie_link.h"

namespace rnic::ndk {

struct host_config {
    double memory_latency_ns = 90;  // DRAM access behind the root complex
    double post_ns = 40;            // CPU time to build and post one work request
    double mmio_write_ns = 20;      // CPU time of a posted MMIO (doorbell) write
    double poll_ns = 30;            // CPU time of one CQ poll that finds the ring empty
    double interrupt_ns = 1000;     // MSI-X arrival to the ISR/DPC running
    bool async_create = true;       // object creation returns STATUS_PENDING (command queue)
    bool wqe_push = false;          // WQEs up to wqe_push_bytes go to REG_WQE_PUSH (no doorbell)
    uint32_t wqe_push_bytes = 64;   // write-combining buffer: 64, 128, 192 or 256
    bool wqe_push_inline_only = false;    // push only WQEs with inline data (mlx5's default)
    uint64_t dram_base = 0x100000000ull;  // first physical address handed out
    uint64_t seed = 1;                    // physical page scattering
    // Which region of kernel virtual addresses this host's allocations take (16 GiB each): a
    // scenario gives node i region i, so a node's addresses (RETH VAs on the wire) do not depend
    // on which other hosts share the process (a partitioned run, testbench/distributed).
    // UINT64_MAX: the next region in the order hosts are constructed.
    uint64_t va_region = UINT64_MAX;
    // IPv4 stack (the adapter's interface and its neighbour resolution).
    uint32_t ipv4_prefix_length = 24;  // subnet of the adapter's address: 0..32
    uint32_t ipv4_gateway = 0;         // default gateway (host order); 0 = none
    double arp_timeout_ns = 1e6;       // an unanswered ARP request is sent again after this
    uint32_t arp_retries = 2;          // requests after the first; then HOST_UNREACHABLE
    double arp_reachable_ns = 30e9;    // a learned neighbour is trusted this long, then re-ARPed
    uint32_t dad_probes = 0;           // duplicate-address ARP probes at adapter open (0: no DAD)
    // Provider driver: entries of the CM's communication-ID table (connectors, listeners and
    // incoming requests each hold one); CreateConnector / CreateListener fail beyond it.
    // CM_IDS_AUTO (config "auto", the default): sized from the NIC, see cm_id_entries().
    uint32_t cm_ids = 0;
    // Connection manager timers (adapter_params::cm_timeout_ns, cm_retries): a REQ, REP or DREQ
    // without an answer is sent again after 4.096 us x 2^cm_response_timeout_log, cm_retries
    // times. Linux rdma_cm's values (drivers/infiniband/core/cma.c: CMA_CM_RESPONSE_TIMEOUT 20,
    // 4.3 s; CMA_MAX_CM_RETRIES 15): a DREQ behind a deep switch queue is not given up.
    uint32_t cm_response_timeout_log = 20;
    uint32_t cm_retries = 15;
};
// 4.096 us x 2^log, the IBA's timeout encoding, in ns.
inline double cm_timeout_ns_of(uint32_t log) {
    return 4096.0 * static_cast<double>(uint64_t{1} << log);
}
inline constexpr uint32_t CM_IDS_AUTO = 0;
// Entries beyond rnic.limits.max_qps that an "auto" CM ID table has: listeners, and connectors
// not bound to a QP (created before their QP, or closing while a new one connects).
inline constexpr uint32_t CM_IDS_AUTO_EXTRA = 64;
// The CM ID table of a host whose NIC holds `max_qps` QP contexts: cfg.cm_ids, or for "auto"
// max_qps + CM_IDS_AUTO_EXTRA, i.e. a connector for every QP the NIC can connect (max_qps - 2:
// QPNs 0 and 1 are reserved) on an active or a passive node, with room for the listeners.
uint32_t cm_id_entries(const host_config& cfg, uint32_t max_qps);
host_config parse_host_config(config::reader r);

// Every consumer-visible buffer is real process memory (so consumer code dereferences its own
// pointers) whose pages are also the simulated DRAM pages the NIC DMAs to: one set of bytes.
class host_system : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<host_system> mmio_out{"mmio_out"};  // to PCIe host side

    // Binds mmio_out to pcie.host_mmio_in and installs itself as the link's MSI handler.
    host_system(sc_core::sc_module_name name, const host_config& cfg, fabric::host_memory& memory,
                fabric::pcie_link& pcie, hw::sim_context& ctx);
    ~host_system() override;

    const host_config& config() const { return m_cfg; }
    fabric::host_memory& memory() { return m_memory; }

    // Kernel memory: `bytes` of virtually contiguous memory (page aligned), backed by scattered
    // physical pages (contiguous when `contiguous`, as for DMA rings). Never fails short of
    // running out of the host's address space.
    void* alloc(size_t bytes, bool contiguous = false);
    void free(void* va);
    // Physical (bus) address of a kernel virtual address (valid for alloc()'d memory).
    uint64_t phys(const void* va) const;
    // An MDL (with its PFN array) describing [va, va+len); chain with mdl->Next.
    MDL* build_mdl(void* va, size_t len);
    void free_mdl(MDL* mdl);

    // CPU side of MMIO: posted writes to BAR0 offsets (the CPU spends mmio_write_ns).
    void mmio_write64(uint64_t offset, uint64_t value);
    void mmio_write32(uint64_t offset, uint32_t value);
    void mmio_write(uint64_t offset, const void* data, uint32_t len);
    uint64_t mmio_read64(uint64_t offset);

    // MSI-X: the driver claims a vector; `isr` runs in the host's DPC thread (an SC_THREAD, so
    // it may call wait()) interrupt_ns after the message arrives.
    uint64_t msi_address(uint32_t vector) const;
    void connect_interrupt(uint32_t vector, std::function<void()> isr);

    // Queue a deferred procedure call: `fn` runs in the DPC thread `delay_ns` from now, after
    // everything already queued for that time (interrupts and DPCs run one at a time, in order).
    // Returns a token for cancel_dpc (timers that are usually disarmed before they fire).
    uint64_t queue_dpc(std::function<void()> fn, double delay_ns = 0);
    // Removes a DPC not yet run; false if it ran already (or never existed).
    bool cancel_dpc(uint64_t token);
    // True while the DPC thread runs an ISR or DPC (the caller is "at DISPATCH_LEVEL").
    bool in_dpc() const { return m_in_dpc; }

    // CPU time spent by the calling thread (consumer code or DPC). Outside an SC_THREAD (e.g.
    // before sc_start) no time passes.
    void cpu(double ns);
    // Block the calling thread until the NIC writes host memory (a CPU spinning on a cache
    // line sees the write through coherence) or `timeout_ns` passes, or `also` fires (no
    // timeout only).
    void wait_for_dma(double timeout_ns = 1e9,  // timeout_ns <= 0: no timeout
                      const sc_core::sc_event* also = nullptr);

    // The IPv4 neighbour cache (ARP table) of the host's IP stack.
    neighbor_cache& neighbors() { return m_neighbors; }

private:
    void dpc_thread();
    const sc_core::sc_event_or_list& dma_or_list(const sc_core::sc_event& also);
    // The host's kernel virtual memory: `bytes` (whole pages) at the next address of its region,
    // zero-filled; and the way back (see host_system.cpp).
    uint8_t* map_kernel_va(size_t bytes);
    void unmap_kernel_va(uint8_t* base, size_t bytes);
    bool in_region(const uint8_t* base) const;

    host_config m_cfg;
    fabric::host_memory& m_memory;
    hw::sim_context& m_ctx;
    struct allocation {
        uint8_t* base;
        size_t bytes;
        std::vector<uint64_t> pages;  // physical page numbers
    };
    std::map<uintptr_t, allocation> m_allocs;  // by base VA
    uint64_t m_next_page;
    enum class region_state : uint8_t { unmapped, mapped, unavailable };
    region_state m_region_state = region_state::unmapped;
    uint64_t m_region_base;  // this host's region of kernel virtual addresses
    uint64_t m_next_va;      // where the next allocation is mapped in it
    uint64_t m_rng;
    std::vector<std::function<void()>> m_isr;
    std::vector<bool> m_isr_queued;  // an ISR run for this vector is already queued
    // DPC queue by due time; equal times keep insertion order (multimap guarantees it).
    // Due DPCs in (due time, queue order): a cancelled one leaves no event behind.
    std::map<std::pair<sc_core::sc_time, uint64_t>, std::function<void()>> m_dpcs;
    std::unordered_map<uint64_t, sc_core::sc_time> m_dpc_due;  // token -> due time
    uint64_t m_dpc_seq = 0;
    hw::quick_event m_irq_event;
    // wait_for_dma's `DMA write | also` lists, one per `also` event (built at its first wait and
    // kept: `a | b` would allocate a list at every wait).
    std::vector<std::pair<const sc_core::sc_event*, std::unique_ptr<sc_core::sc_event_or_list>>>
        m_dma_or_lists;
    bool m_in_dpc = false;
    uint64_t m_interrupts = 0;
    uint64_t m_dpc_count = 0;
    uint64_t m_mmio_writes = 0;
    neighbor_cache m_neighbors;
};

}  // namespace rnic::ndk
