// SPDX-License-Identifier: Apache-2.0
// The host a provider driver runs on: kernel memory, MDLs, MMIO, MSI-X and the DPC thread.
#include "ndk_shim/host/host_system.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>

#include "hw/common/short_wait.h"
#include "hw/common/timestep_arbiter.h"
#include "hw/hsi/hsi.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>

namespace rnic::ndk {

host_config parse_host_config(config::reader r) {
    host_config c;
    r.get("memory_latency_ns", c.memory_latency_ns, 0.0, 100000.0);
    r.get("post_ns", c.post_ns, 0.0, 100000.0);
    r.get("mmio_write_ns", c.mmio_write_ns, 0.0, 100000.0);
    r.get("poll_ns", c.poll_ns, 0.0, 100000.0);
    r.get("interrupt_ns", c.interrupt_ns, 0.0, 1e7);
    r.get("async_create", c.async_create);
    r.get("wqe_push", c.wqe_push);
    r.get("wqe_push_bytes", c.wqe_push_bytes, 64u, static_cast<uint32_t>(hsi::WQE_PUSH_MAX_SIZE));
    r.get("wqe_push_inline_only", c.wqe_push_inline_only);
    if (c.wqe_push_bytes % 64 != 0) {
        r.error("wqe_push_bytes", "must be a multiple of 64");
    }
    r.get("dram_base", c.dram_base, uint64_t{0}, uint64_t{1} << 52);
    r.get("seed", c.seed, uint64_t{0}, UINT64_MAX);
    if (c.dram_base % fabric::host_memory::PAGE_BYTES != 0) {
        r.error("dram_base", "must be a multiple of 4096");
    }
    r.get("ipv4_prefix_length", c.ipv4_prefix_length, 0u, 32u);
    std::string gateway;
    r.get("ipv4_gateway", gateway);
    if (!gateway.empty()) {
        in_addr a{};
        if (inet_pton(AF_INET, gateway.c_str(), &a) != 1) {
            r.error("ipv4_gateway", "\"" + gateway + "\" is not a dotted IPv4 address");
        } else {
            c.ipv4_gateway = ntohl(a.s_addr);
        }
    }
    r.get("arp_timeout_ns", c.arp_timeout_ns, 1.0, 1e10);
    r.get("arp_retries", c.arp_retries, 0u, 100u);
    r.get("arp_reachable_ns", c.arp_reachable_ns, 1e3, 1e13);
    r.get("dad_probes", c.dad_probes, 0u, 10u);
    r.get("cm_response_timeout_log", c.cm_response_timeout_log, 0u, 31u);
    r.get("cm_retries", c.cm_retries, 0u, 100u);
    // cm_ids: "auto" (sized from the NIC's max_qps when the adapter opens) or a number.
    if (const nlohmann::json* v = r.raw("cm_ids"); v != nullptr) {
        if (v->is_string() && *v == "auto") {
            c.cm_ids = CM_IDS_AUTO;
        } else if (!v->is_number_integer() && !v->is_number_unsigned()) {
            r.error("cm_ids", config::describe(*v) + " is not \"auto\" or an integer");
        } else if (v->get<int64_t>() < 1 || v->get<int64_t>() > (1 << 20)) {
            r.error("cm_ids", config::describe(*v) + " out of range [1, 1048576] (or \"auto\")");
        } else {
            c.cm_ids = v->get<uint32_t>();
        }
    }
    r.set_effective("cm_ids",
                    c.cm_ids == CM_IDS_AUTO ? nlohmann::json("auto") : nlohmann::json(c.cm_ids));
    r.finish();
    return c;
}

uint32_t cm_id_entries(const host_config& cfg, uint32_t max_qps) {
    if (cfg.cm_ids != CM_IDS_AUTO) {
        return cfg.cm_ids;
    }
    return static_cast<uint32_t>(
        std::min<uint64_t>(uint64_t{max_qps} + CM_IDS_AUTO_EXTRA, UINT32_MAX));
}

namespace {
constexpr uint64_t PAGE = fabric::host_memory::PAGE_BYTES;

bool in_thread() {
    sc_core::sc_process_handle h = sc_core::sc_get_current_process_handle();
    return h.valid() && h.proc_kind() == sc_core::SC_THREAD_PROC_;
}

// Kernel virtual addresses travel on the wire (RETH VAs of registered buffers), so they must
// not depend on the process: each host maps its allocations at consecutive addresses of its own
// fixed region (host_config::va_region), in allocation order, one unused page apart. Same
// config, same addresses, same bytes (whichever send path implementation or sanitizer allocates
// around them, and whichever other hosts the process simulates).
//
// The region is ONE mapping, made at the host's first allocation (MAP_NORESERVE: only touched
// pages cost memory), and free() gives pages back with madvise instead of munmap. A mapping per
// allocation would cost the process one kernel map entry each, and Linux caps those at
// vm.max_map_count (65,530 by default): 1,024 hosts ran out. With one region per host the count
// is the number of hosts. If the kernel cannot place the region at its address, or the region
// is full, an allocation gets its own mapping anywhere (still correct, no longer reproducible).
constexpr uint64_t VA_BASE = uint64_t{0x4000} << 32;
constexpr uint64_t VA_REGION_BYTES = uint64_t{16} << 30;
uint64_t g_next_auto_region = 0;

uint8_t* map_anywhere(size_t bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);  // zero-filled
}
}  // namespace

uint8_t* host_system::map_kernel_va(size_t bytes) {
    if (m_region_state == region_state::unmapped) {
        void* hint = reinterpret_cast<void*>(static_cast<uintptr_t>(m_next_va));
        void* p = mmap(hint, VA_REGION_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == hint) {
            m_region_state = region_state::mapped;
        } else {
            if (p != MAP_FAILED) {
                munmap(p, VA_REGION_BYTES);
            }
            m_region_state = region_state::unavailable;
        }
    }
    const uint64_t region_end = m_region_base + VA_REGION_BYTES;
    if (m_region_state == region_state::mapped && bytes <= region_end - m_next_va) {
        auto* p = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(m_next_va));
        m_next_va = std::min(region_end, m_next_va + bytes + PAGE);
        return p;  // never handed out before: zero-filled
    }
    return map_anywhere(bytes);
}

bool host_system::in_region(const uint8_t* base) const {
    const auto a = reinterpret_cast<uintptr_t>(base);
    return m_region_state == region_state::mapped && a >= m_region_base &&
           a < m_region_base + VA_REGION_BYTES;
}

void host_system::unmap_kernel_va(uint8_t* base, size_t bytes) {
    if (in_region(base)) {
        madvise(base, bytes, MADV_DONTNEED);  // the pages go back; the addresses are not reused
    } else {
        munmap(base, bytes);
    }
}

host_system::host_system(sc_core::sc_module_name name, const host_config& cfg,
                         fabric::host_memory& memory, fabric::pcie_link& pcie, hw::sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_memory(memory)
    , m_ctx(ctx)
    , m_next_page(cfg.dram_base / PAGE)
    , m_region_base(VA_BASE + (cfg.va_region == UINT64_MAX ? g_next_auto_region++ : cfg.va_region) *
                                  VA_REGION_BYTES)
    , m_next_va(m_region_base)
    , m_rng(cfg.seed * 0x9E3779B97F4A7C15ull + 0x1234567ull)
    , m_isr(hsi::MSIX_VECTORS)
    , m_isr_queued(hsi::MSIX_VECTORS, false)
    , m_neighbors(*this, cfg.arp_timeout_ns, cfg.arp_retries, cfg.arp_reachable_ns) {
    mmio_out.bind(pcie.host_mmio_in);
    pcie.set_msi_handler([this](uint64_t addr, uint32_t data) {
        // The interrupt controller decodes the message data as the vector (msi_address/data
        // are programmed by the driver); the ISR runs interrupt_ns later in the DPC thread.
        const uint32_t vector = data;
        if (vector >= m_isr.size() || !m_isr[vector] || m_isr_queued[vector]) {
            return;  // spurious, unclaimed, or already pending: one ISR run serves them all
        }
        ++m_interrupts;
        m_isr_queued[vector] = true;
        queue_dpc(
            [this, vector] {
                m_isr_queued[vector] = false;
                m_isr[vector]();
            },
            m_cfg.interrupt_ns);
    });
    SC_HAS_PROCESS(host_system);
    SC_THREAD(dpc_thread);
    const std::string b = this->name();
    ctx.stats.add(b, "interrupts", m_interrupts, "count", "MSI-X messages that ran an ISR");
    ctx.stats.add(b, "dpcs", m_dpc_count, "count", "ISRs and DPCs run by the DPC thread");
    ctx.stats.add(b, "mmio_writes", m_mmio_writes, "count", "posted MMIO writes to BAR0");
}

host_system::~host_system() {
    for (auto& [base, a] : m_allocs) {
        for (uint64_t p : a.pages) {
            m_memory.unmap_external(p);
        }
        if (!in_region(a.base)) {
            munmap(a.base, a.bytes);
        }
    }
    if (m_region_state == region_state::mapped) {
        munmap(reinterpret_cast<void*>(static_cast<uintptr_t>(m_region_base)), VA_REGION_BYTES);
    }
}

void* host_system::alloc(size_t bytes, bool contiguous) {
    const size_t n = std::max<size_t>(1, (bytes + PAGE - 1) / PAGE);
    uint8_t* base = map_kernel_va(n * PAGE);
    if (base == nullptr) {
        SC_REPORT_ERROR(name(), "host memory allocation failed");
        return nullptr;
    }
    allocation a{base, n * PAGE, std::vector<uint64_t>(n)};
    if (contiguous || n == 1) {
        std::iota(a.pages.begin(), a.pages.end(), m_next_page);
    } else {
        // Scattered: the block's pages in a random order (Fisher-Yates, xorshift64), as a
        // long-running kernel's allocator hands out physically discontiguous pages.
        std::iota(a.pages.begin(), a.pages.end(), m_next_page);
        for (size_t i = n - 1; i > 0; --i) {
            m_rng ^= m_rng << 13;
            m_rng ^= m_rng >> 7;
            m_rng ^= m_rng << 17;
            std::swap(a.pages[i], a.pages[m_rng % (i + 1)]);
        }
    }
    m_rng ^= m_rng << 13;
    m_rng ^= m_rng >> 7;
    m_rng ^= m_rng << 17;
    m_next_page += n + (contiguous ? 0 : m_rng % 8);  // a gap keeps blocks apart
    for (size_t i = 0; i < n; ++i) {
        m_memory.map_external(a.pages[i], base + i * PAGE);
    }
    m_allocs.emplace(reinterpret_cast<uintptr_t>(base), std::move(a));
    return base;
}

void host_system::free(void* va) {
    if (va == nullptr) {
        return;
    }
    auto it = m_allocs.find(reinterpret_cast<uintptr_t>(va));
    if (it == m_allocs.end()) {
        SC_REPORT_ERROR(name(), "free of memory not from alloc()");
        return;
    }
    for (uint64_t p : it->second.pages) {
        m_memory.unmap_external(p);
    }
    unmap_kernel_va(it->second.base, it->second.bytes);
    m_allocs.erase(it);
}

uint64_t host_system::phys(const void* va) const {
    const auto addr = reinterpret_cast<uintptr_t>(va);
    auto it = m_allocs.upper_bound(addr);
    if (it != m_allocs.begin()) {
        --it;
        const allocation& a = it->second;
        if (addr < it->first + a.bytes) {
            const uint64_t off = addr - it->first;
            return a.pages[off / PAGE] * PAGE + off % PAGE;
        }
    }
    SC_REPORT_ERROR(name(), "phys() of an address outside host_system::alloc() memory");
    return 0;
}

MDL* host_system::build_mdl(void* va, size_t len) {
    const size_t span = ADDRESS_AND_SIZE_TO_SPAN_PAGES(va, len);
    auto* raw = new uint8_t[sizeof(MDL) + span * sizeof(PFN_NUMBER)]();
    MDL* mdl = reinterpret_cast<MDL*>(raw);
    MmInitializeMdl(mdl, va, len);
    mdl->MdlFlags = MDL_PAGES_LOCKED | MDL_SOURCE_IS_NONPAGED_POOL | MDL_MAPPED_TO_SYSTEM_VA;
    mdl->MappedSystemVa = va;
    PFN_NUMBER* pfn = MmGetMdlPfnArray(mdl);
    auto* page_va = static_cast<uint8_t*>(mdl->StartVa);
    for (size_t i = 0; i < span; ++i) {
        pfn[i] = phys(page_va + i * PAGE) / PAGE;
    }
    return mdl;
}

void host_system::free_mdl(MDL* mdl) {
    delete[] reinterpret_cast<uint8_t*>(mdl);
}

void host_system::mmio_write(uint64_t offset, const void* data, uint32_t len) {
    std::vector<uint8_t> buf(static_cast<const uint8_t*>(data),
                             static_cast<const uint8_t*>(data) + len);
    tlm::tlm_generic_payload gp;
    gp.set_command(tlm::TLM_WRITE_COMMAND);
    gp.set_address(offset);
    gp.set_data_ptr(buf.data());
    gp.set_data_length(len);
    gp.set_streaming_width(len);
    gp.set_byte_enable_ptr(nullptr);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    mmio_out->b_transport(gp, delay);  // posted: the TLP leaves now
    ++m_mmio_writes;
    cpu(m_cfg.mmio_write_ns);
}

void host_system::mmio_write64(uint64_t offset, uint64_t value) {
    mmio_write(offset, &value, sizeof(value));
}

void host_system::mmio_write32(uint64_t offset, uint32_t value) {
    mmio_write(offset, &value, sizeof(value));
}

uint64_t host_system::mmio_read64(uint64_t offset) {
    uint64_t value = 0;
    tlm::tlm_generic_payload gp;
    gp.set_command(tlm::TLM_READ_COMMAND);
    gp.set_address(offset);
    gp.set_data_ptr(reinterpret_cast<unsigned char*>(&value));
    gp.set_data_length(sizeof(value));
    gp.set_streaming_width(sizeof(value));
    gp.set_byte_enable_ptr(nullptr);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    mmio_out->b_transport(gp, delay);  // non-posted: the CPU stalls for the round trip
    if (in_thread() && delay > sc_core::SC_ZERO_TIME) {
        sc_core::wait(delay);
    }
    return value;
}

uint64_t host_system::msi_address(uint32_t vector) const {
    // Inside the x86 MSI window; the interrupt controller takes the vector from the data.
    return fabric::pcie_link::MSI_BASE + 0x10ull * vector;
}

void host_system::connect_interrupt(uint32_t vector, std::function<void()> isr) {
    if (vector >= m_isr.size()) {
        SC_REPORT_ERROR(name(), "connect_interrupt: vector out of range");
        return;
    }
    m_isr[vector] = std::move(isr);
}

uint64_t host_system::queue_dpc(std::function<void()> fn, double delay_ns) {
    const sc_core::sc_time at =
        sc_core::sc_time_stamp() + sc_core::sc_time(std::max(0.0, delay_ns), sc_core::SC_NS);
    const uint64_t token = ++m_dpc_seq;
    m_dpcs.emplace(std::make_pair(at, token), std::move(fn));
    m_dpc_due.emplace(token, at);
    m_irq_event.notify(sc_core::SC_ZERO_TIME);
    return token;
}

bool host_system::cancel_dpc(uint64_t token) {
    auto it = m_dpc_due.find(token);
    if (it == m_dpc_due.end()) {
        return false;
    }
    m_dpcs.erase({it->second, token});
    m_dpc_due.erase(it);
    m_irq_event.notify(sc_core::SC_ZERO_TIME);  // the DPC thread may be waiting for it
    return true;
}

void host_system::cpu(double ns) {
    if (ns > 0 && in_thread()) {
        sc_core::wait(sc_core::sc_time(ns, sc_core::SC_NS));
        // The CPU goes on once everything else due at this instant is done: it sees every
        // posted DMA write that lands now (a CQE), whatever order SystemC runs processes in.
        hw::settle_instant();
    }
}

const sc_core::sc_event_or_list& host_system::dma_or_list(const sc_core::sc_event& also) {
    for (const auto& [e, list] : m_dma_or_lists) {
        if (e == &also) {
            return *list;
        }
    }
    auto list = std::make_unique<sc_core::sc_event_or_list>();
    *list |= m_memory.dma_write_event();
    *list |= also;
    m_dma_or_lists.emplace_back(&also, std::move(list));
    return *m_dma_or_lists.back().second;
}

void host_system::wait_for_dma(double timeout_ns, const sc_core::sc_event* also) {
    if (!in_thread()) {
        return;
    }
    if (timeout_ns <= 0) {
        if (also != nullptr) {
            sc_core::wait(dma_or_list(*also));
            return;
        }
        sc_core::wait(m_memory.dma_write_event());  // no timeout: nothing left in the event queue
        return;
    }
    // In short steps (hw/common/short_wait.h): a command's 10 ms timeout is nearly always cut
    // short by the NIC's answer.
    hw::short_wait(sc_core::sc_time(timeout_ns, sc_core::SC_NS), m_memory.dma_write_event());
}

void host_system::dpc_thread() {
    // One CPU runs ISRs and DPCs back to back, in due-time order; a DPC may wait() (CPU time,
    // MMIO) and so delays the ones after it, as DPCs on one core do.
    for (;;) {
        if (m_dpcs.empty()) {
            sc_core::wait(m_irq_event);
            continue;
        }
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        auto first = m_dpcs.begin();
        if (first->first.first > now) {
            // A short wait at a time (hw/common/short_wait.h): each interrupt cuts it short,
            // and a connection's CM timer DPC may be seconds away.
            sc_core::wait(hw::short_wait_until(first->first.first), m_irq_event);
            continue;
        }
        std::function<void()> fn = std::move(first->second);
        m_dpc_due.erase(first->first.second);
        m_dpcs.erase(first);
        ++m_dpc_count;
        m_in_dpc = true;
        fn();
        m_in_dpc = false;
    }
}

}  // namespace rnic::ndk
