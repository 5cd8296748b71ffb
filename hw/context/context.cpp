// SPDX-License-Identifier: Apache-2.0
// On-NIC context tables.
#include "hw/context/context.h"

#include <algorithm>
#include <limits>
#include <new>

namespace rnic::hw {

context_store::context_store(uint32_t max_qps, uint32_t max_cqs, uint32_t max_srqs,
                             uint32_t max_pds, uint32_t max_keys, uint32_t max_mtt_pages)
    : m_qps(max_qps)
    , m_cqs(max_cqs)
    , m_srqs(max_srqs)
    , m_pds(max_pds)
    , m_mpt(max_keys)
    , m_mtt(static_cast<uint64_t*>(std::calloc(std::max(max_mtt_pages, 1u), sizeof(uint64_t))))
    , m_mtt_free(max_mtt_pages) {
    if (!m_mtt) {
        throw std::bad_alloc();
    }
    m_mtt_holes.emplace_back(0, max_mtt_pages);
}

// A lookup never allocates: a handle in a page never written is not valid.
template <typename T>
static T* valid(paged_table<T>& t, uint32_t i) {
    T* p = t.find(i);
    return p != nullptr && p->valid ? p : nullptr;
}

qp_context* context_store::qp(uint32_t n) {
    return valid(m_qps, n);
}
cq_context* context_store::cq(uint32_t n) {
    return valid(m_cqs, n);
}
srq_context* context_store::srq(uint32_t n) {
    return valid(m_srqs, n);
}
pd_context* context_store::pd(uint32_t n) {
    return valid(m_pds, n);
}
qp_context* context_store::qp_slot(uint32_t n) {
    return m_qps.slot(n);
}
cq_context* context_store::cq_slot(uint32_t n) {
    return m_cqs.slot(n);
}
srq_context* context_store::srq_slot(uint32_t n) {
    return m_srqs.slot(n);
}
pd_context* context_store::pd_slot(uint32_t n) {
    return m_pds.slot(n);
}
mpt_entry* context_store::mpt_slot(uint32_t key) {
    return m_mpt.slot(hsi::key_index(key));
}

mpt_entry* context_store::mpt(uint32_t key) {
    mpt_entry* e = m_mpt.find(hsi::key_index(key));
    if (e == nullptr || !e->allocated || e->key != key) {
        return nullptr;
    }
    return e;
}

uint32_t context_store::mtt_alloc(uint32_t pages) {
    if (pages == 0) {
        return 0;
    }
    for (auto it = m_mtt_holes.begin(); it != m_mtt_holes.end(); ++it) {
        if (it->second >= pages) {
            const uint32_t base = it->first;
            it->first += pages;
            it->second -= pages;
            if (it->second == 0) {
                m_mtt_holes.erase(it);
            }
            m_mtt_free -= pages;
            return base;
        }
    }
    return std::numeric_limits<uint32_t>::max();
}

void context_store::mtt_free(uint32_t base, uint32_t pages) {
    if (pages == 0) {
        return;
    }
    m_mtt_free += pages;
    m_mtt_holes.emplace_back(base, pages);
    std::sort(m_mtt_holes.begin(), m_mtt_holes.end());
    // Merge neighbours.
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (const auto& h : m_mtt_holes) {
        if (!merged.empty() && merged.back().first + merged.back().second == h.first) {
            merged.back().second += h.second;
        } else {
            merged.push_back(h);
        }
    }
    m_mtt_holes = std::move(merged);
}

}  // namespace rnic::hw
