// SPDX-License-Identifier: Apache-2.0
// Host DRAM: sparse, real bytes, a 64-bit physical address space that costs only the pages
// touched. A TLM target for DMA (through the PCIe model) and a direct interface for the CPU.
// A DMA to a page the host released (unmap_external, release) is not backed: it completes with
// TLM_ADDRESS_ERROR_RESPONSE (PCIe Unsupported Request), reads return zeros, writes are
// dropped. The check costs one hash look-up only while released pages exist.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "hw/common/quick_event.h"

namespace rnic::fabric {

class host_memory : public sc_core::sc_module {
public:
    static constexpr uint64_t PAGE_BYTES = 4096;

    tlm_utils::simple_target_socket<host_memory> dma_in{"dma_in"};  // from the root complex

    // latency: DRAM access time added to every DMA access (b_transport delay).
    host_memory(sc_core::sc_module_name name, sc_core::sc_time latency);

    // CPU loads/stores: zero simulated time, as a cached access by the host agent.
    void read(uint64_t addr, void* data, size_t len) const;
    void write(uint64_t addr, const void* data, size_t len);
    void fill(uint64_t addr, uint8_t value, size_t len);
    template <typename T>
    T load(uint64_t addr) const {
        T v{};
        read(addr, &v, sizeof(T));
        return v;
    }
    template <typename T>
    void store(uint64_t addr, const T& v) {
        write(addr, &v, sizeof(T));
    }

    // Notified (delta) after every DMA write: a CPU spinning on a cache line sees the change
    // through coherence, so pollers wait on this instead of polling on a timer.
    const sc_core::sc_event& dma_write_event() const { return m_dma_write_event; }

    // Backs physical page `page_no` with process memory the caller owns (PAGE_BYTES long), so
    // that a host buffer is the same bytes for the CPU (a real pointer) and for DMA.
    void map_external(uint64_t page_no, uint8_t* backing);
    // The OS took the page back: it is not backed any more until a CPU write or map_external
    // backs it again. A DMA to it fails (see dma_b_transport).
    void unmap_external(uint64_t page_no);
    // Pages of [addr, addr+len) stop being backed (the test hook for "the host released this
    // memory"); their bytes are gone.
    void release(uint64_t addr, uint64_t len);
    bool backed(uint64_t page_no) const { return m_released.count(page_no) == 0; }

    uint64_t pages_touched() const { return m_pages.size(); }
    const sc_core::sc_time& latency() const { return m_latency; }

    struct stats {
        uint64_t dma_reads = 0;
        uint64_t dma_writes = 0;
        uint64_t dma_read_bytes = 0;
        uint64_t dma_write_bytes = 0;
        uint64_t dma_errors = 0;  // DMA accesses to pages not backed (failed, nothing moved)
    };
    const stats& get_stats() const { return m_stats; }

private:
    void dma_b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    unsigned int dma_transport_dbg(tlm::tlm_generic_payload& gp);
    // The page's bytes (a cached page inline: every DMA and CPU access asks; the look-up
    // and first-touch allocation out of line).
    uint8_t* page_for_write(uint64_t page_no) {
        const cached_page& c = m_page_cache[page_no % PAGE_CACHE];
        return c.page_no == page_no ? c.bytes : page_for_write_slow(page_no);
    }
    const uint8_t* page_for_read(uint64_t page_no) const {
        const cached_page& c = m_page_cache[page_no % PAGE_CACHE];
        return c.page_no == page_no ? c.bytes : page_for_read_slow(page_no);
    }
    uint8_t* page_for_write_slow(uint64_t page_no);
    const uint8_t* page_for_read_slow(uint64_t page_no) const;

    using page = std::array<uint8_t, PAGE_BYTES>;
    std::unordered_map<uint64_t, uint8_t*> m_pages;  // page number -> bytes
    // The last pages looked up, direct-mapped by page number (a DMA burst, a CPU copy and the
    // integrity check go over the same few pages again and again); a slot is dropped when its
    // page is mapped or unmapped.
    static constexpr size_t PAGE_CACHE = 64;
    struct cached_page {
        uint64_t page_no = ~uint64_t{0};
        uint8_t* bytes = nullptr;
    };
    mutable std::array<cached_page, PAGE_CACHE> m_page_cache{};
    void forget_cached(uint64_t page_no) {
        cached_page& c = m_page_cache[page_no % PAGE_CACHE];
        if (c.page_no == page_no) {
            c = cached_page{};
        }
    }
    std::unordered_map<uint64_t, std::unique_ptr<page>> m_owned;  // pages this model allocated
    // Released pages (unmap_external / release): DMA to them fails. Pages never touched are
    // not in here: sparse DRAM reads as zero and is backed on first write, as benches expect.
    std::unordered_set<uint64_t> m_released;
    bool released(uint64_t addr, uint64_t len) const {
        return !m_released.empty() && len != 0 && released_slow(addr, len);  // the good path: none
    }
    bool released_slow(uint64_t addr, uint64_t len) const;
    sc_core::sc_time m_latency;
    hw::quick_event m_dma_write_event;
    stats m_stats;
};

}  // namespace rnic::fabric
