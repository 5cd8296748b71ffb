// SPDX-License-Identifier: Apache-2.0
// Sparse host memory.
#include "tlm/host_memory/host_memory.h"

#include <algorithm>
#include <cstring>

namespace rnic::fabric {

host_memory::host_memory(sc_core::sc_module_name name, sc_core::sc_time latency)
    : sc_module(name)
    , m_latency(latency) {
    dma_in.register_b_transport(this, &host_memory::dma_b_transport);
    dma_in.register_transport_dbg(this, &host_memory::dma_transport_dbg);
}

uint8_t* host_memory::page_for_write_slow(uint64_t page_no) {
    cached_page& c = m_page_cache[page_no % PAGE_CACHE];
    auto& p = m_pages[page_no];
    if (p == nullptr) {
        if (!m_released.empty()) {
            m_released.erase(page_no);  // the CPU writes it: backed again
        }
        auto owned = std::make_unique<page>();
        owned->fill(0);
        p = owned->data();
        m_owned[page_no] = std::move(owned);
    }
    c = {page_no, p};
    return p;
}

const uint8_t* host_memory::page_for_read_slow(uint64_t page_no) const {
    cached_page& c = m_page_cache[page_no % PAGE_CACHE];
    auto it = m_pages.find(page_no);
    if (it == m_pages.end()) {
        return nullptr;  // not cached: the first write backs it
    }
    c = {page_no, it->second};
    return it->second;
}

void host_memory::map_external(uint64_t page_no, uint8_t* backing) {
    forget_cached(page_no);
    m_released.erase(page_no);
    auto owned = m_owned.find(page_no);
    if (owned != m_owned.end()) {
        std::memcpy(backing, owned->second->data(), PAGE_BYTES);
        m_owned.erase(owned);
    }
    m_pages[page_no] = backing;
}

void host_memory::unmap_external(uint64_t page_no) {
    forget_cached(page_no);
    m_pages.erase(page_no);
    m_owned.erase(page_no);
    m_released.insert(page_no);
}

void host_memory::release(uint64_t addr, uint64_t len) {
    for (uint64_t p = addr / PAGE_BYTES; len > 0 && p <= (addr + len - 1) / PAGE_BYTES; ++p) {
        unmap_external(p);
    }
}

bool host_memory::released_slow(uint64_t addr, uint64_t len) const {
    for (uint64_t p = addr / PAGE_BYTES; p <= (addr + len - 1) / PAGE_BYTES; ++p) {
        if (m_released.count(p) != 0) {
            return true;
        }
    }
    return false;
}

void host_memory::read(uint64_t addr, void* data, size_t len) const {
    auto* out = static_cast<uint8_t*>(data);
    while (len > 0) {
        const uint64_t off = addr % PAGE_BYTES;
        const size_t n = std::min<size_t>(len, PAGE_BYTES - off);
        const uint8_t* p = page_for_read(addr / PAGE_BYTES);
        if (p != nullptr) {
            std::memcpy(out, p + off, n);
        } else {
            std::memset(out, 0, n);  // untouched DRAM reads as zero
        }
        addr += n;
        out += n;
        len -= n;
    }
}

void host_memory::write(uint64_t addr, const void* data, size_t len) {
    const auto* in = static_cast<const uint8_t*>(data);
    while (len > 0) {
        const uint64_t off = addr % PAGE_BYTES;
        const size_t n = std::min<size_t>(len, PAGE_BYTES - off);
        std::memcpy(page_for_write(addr / PAGE_BYTES) + off, in, n);
        addr += n;
        in += n;
        len -= n;
    }
}

void host_memory::fill(uint64_t addr, uint8_t value, size_t len) {
    while (len > 0) {
        const uint64_t off = addr % PAGE_BYTES;
        const size_t n = std::min<size_t>(len, PAGE_BYTES - off);
        std::memset(page_for_write(addr / PAGE_BYTES) + off, value, n);
        addr += n;
        len -= n;
    }
}

void host_memory::dma_b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    const uint64_t addr = gp.get_address();
    const unsigned len = gp.get_data_length();
    delay += m_latency;
    if ((gp.is_read() || gp.is_write()) && released(addr, len)) {
        // Unsupported Request: nothing is written; a read carries no data (the buffer is
        // zeroed, so a requester that ignores the status sees what unbacked DRAM used to read).
        if (gp.is_read()) {
            std::memset(gp.get_data_ptr(), 0, len);
        }
        ++m_stats.dma_errors;
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    if (gp.is_read()) {
        read(addr, gp.get_data_ptr(), len);
        ++m_stats.dma_reads;
        m_stats.dma_read_bytes += len;
    } else if (gp.is_write()) {
        write(addr, gp.get_data_ptr(), len);
        ++m_stats.dma_writes;
        m_stats.dma_write_bytes += len;
        m_dma_write_event.notify(sc_core::SC_ZERO_TIME);
    }
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

unsigned int host_memory::dma_transport_dbg(tlm::tlm_generic_payload& gp) {
    if (gp.is_read()) {
        read(gp.get_address(), gp.get_data_ptr(), gp.get_data_length());
    } else if (gp.is_write()) {
        write(gp.get_address(), gp.get_data_ptr(), gp.get_data_length());
    }
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    return gp.get_data_length();
}

}  // namespace rnic::fabric
