// SPDX-License-Identifier: Apache-2.0
// On-NIC context tables: QP, CQ, SRQ, PD, MPT (memory keys) and MTT (page translations).
// Written by the command processor (and by FAST_REG / BIND / LOCAL_INV work requests), read by
// the data-path blocks. This is the NIC's context memory; the blocks that read it charge their
// own lookup latency.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "hw/cc/cc_state.h"
#include "hw/hsi/hsi.h"
#include "hw/recv_path/rc_responder.h"

namespace rnic::hw {

struct cq_context {
    bool valid = false;
    bool error = false;  // overrun, CQE write error or device fatal: no more CQEs
    uint32_t log_depth = 0;
    uint64_t ring_addr = 0;
    uint32_t msix_vector = 0;
    uint32_t producer = 0;  // free-running CQE count written
    uint32_t consumer = 0;  // last consumer index the driver reported
    uint8_t armed = hsi::CQ_ARM_NONE;
    uint32_t refcount = 0;  // QPs using it
    // Interrupt moderation (CMD_MODIFY_CQ, hw/cq_writer): 0/0 = off.
    uint32_t moderation_count = 0;      // hold the event until this many CQEs are unconsumed
    uint32_t moderation_period_us = 0;  // ... or this long after the first matching CQE
};

struct srq_context {
    bool valid = false;
    uint32_t pdn = 0;
    uint64_t ring_addr = 0;
    uint32_t log_depth = 0;
    uint32_t stride = 0;
    uint32_t producer = 0;  // from RQ doorbells with the SRQ bit
    uint32_t consumer = 0;  // receive WQEs taken
    uint32_t limit = 0;     // limit event threshold (0 = disarmed)
    uint32_t refcount = 0;
    bool error = false;  // a WQE fetch failed (EVENT_SRQ_ERROR): no more receives
};

// A receive WQE taken for an in-progress SEND (or WRITE with immediate).
struct recv_wqe {
    uint16_t wqe_index = 0;
    uint32_t srqn = 0;  // 0: from the QP's own RQ
    std::vector<hsi::wqe_sge> sges;
};

struct qp_context {
    bool valid = false;
    uint8_t state = hsi::QPS_RESET;
    uint32_t pdn = 0;
    uint32_t send_cqn = 0;
    uint32_t recv_cqn = 0;
    uint32_t srqn = 0;
    uint32_t sq_log_depth = 0;
    uint32_t rq_log_depth = 0;
    uint64_t sq_addr = 0;
    uint64_t rq_addr = 0;
    uint32_t sq_stride = 64;
    uint32_t rq_stride = 16;
    uint32_t max_inline = 0;
    // Connection (MODIFY_QP).
    uint32_t dest_qpn = 0;
    uint32_t dest_ip = 0;
    std::array<uint8_t, 6> dest_mac{};
    uint32_t pmtu = 1024;  // bytes
    uint8_t retry_count = 7;
    uint8_t rnr_retry = 7;
    uint8_t timeout_log = 14;
    uint8_t max_rd_atomic = 16;
    // Send queue.
    uint32_t sq_producer = 0;  // from doorbells (free-running, 16 bit on the wire)
    uint32_t sq_fetched = 0;   // WQEs read by WQE fetch
    // Requester transport state.
    uint32_t next_psn = 0;  // next PSN to send
    uint32_t outstanding_reads = 0;
    // Receive queue and responder transport state.
    uint32_t rq_producer = 0;
    uint32_t rq_consumer = 0;
    uint32_t expected_psn = 0;  // next PSN the responder accepts
    bool nak_sent = false;      // a sequence NAK is out for expected_psn (one per gap)
    uint32_t msn = 0;           // messages completed as responder
    bool have_recv = false;     // a receive WQE is held for a multi-packet SEND
    recv_wqe current_recv;
    uint32_t recv_offset = 0;  // bytes placed into current_recv so far
    // WRITE in progress as responder (RETH of the first packet).
    uint64_t write_va = 0;
    uint32_t write_rkey = 0;
    uint32_t write_remaining = 0;
    uint32_t write_offset = 0;  // bytes of the current WRITE placed
    // Selective repeat (rnic.transport.recovery, hw/recv_path/README.md): the responder's
    // bitmap window past expected_psn (hw/recv_path/rc_responder.h).
    sr_window sr;
    // Congestion control (reaction point): rate, target, alpha and the algorithm's state
    // (hw/cc). Zero = not rate limited.
    cc::cc_qp_state cc;
};

struct mpt_entry {           // one memory key (MR, fast-reg MR or MW)
    bool valid = false;      // key usable now
    bool allocated = false;  // object exists (a fast-reg MR may be allocated, not valid)
    bool is_mw = false;
    uint32_t key = 0;  // full key incl. variant byte
    uint32_t pdn = 0;
    uint32_t access = 0;  // hsi::mr_access
    uint64_t base_va = 0;
    uint64_t length = 0;
    uint32_t first_byte_offset = 0;
    uint32_t max_pages = 0;  // fast-reg capacity
    uint32_t mtt_base = 0;   // index of the first page in the MTT
    uint32_t page_count = 0;
    uint32_t parent_index = 0;  // MW: MPT index of the MR it windows
    uint32_t bind_count = 0;    // MR: windows bound to it
};

struct pd_context {
    bool valid = false;
    uint32_t refcount = 0;
};

// A table of `size` entries whose storage comes in pages of PAGE entries, each allocated (its
// entries default-constructed) the first time one of its slots is asked for: an idle NIC's
// tables sized to rnic.limits hold no memory, a busy one's only the pages its handles fall in
// (1024-node fabrics, issue 29). Entries never move once allocated.
template <typename T>
class paged_table {
public:
    static constexpr uint32_t PAGE = 32;
    explicit paged_table(uint32_t size)
        : m_size(size)
        , m_pages((size + PAGE - 1) / PAGE) {}
    uint32_t size() const { return m_size; }
    // The entry, allocating its page; nullptr out of range.
    T* slot(uint32_t i) {
        if (i >= m_size) {
            return nullptr;
        }
        std::unique_ptr<T[]>& page = m_pages[i / PAGE];
        if (!page) {
            page = std::make_unique<T[]>(PAGE);
        }
        return &page[i % PAGE];
    }
    // The entry if its page exists (an absent page's entries are all default: never valid);
    // nullptr otherwise.
    T* find(uint32_t i) {
        if (i >= m_size) {
            return nullptr;
        }
        std::unique_ptr<T[]>& page = m_pages[i / PAGE];
        return page ? &page[i % PAGE] : nullptr;
    }

private:
    uint32_t m_size;
    std::vector<std::unique_ptr<T[]>> m_pages;
};

class context_store {
public:
    context_store(uint32_t max_qps, uint32_t max_cqs, uint32_t max_srqs, uint32_t max_pds,
                  uint32_t max_keys, uint32_t max_mtt_pages);

    uint32_t max_qps() const { return static_cast<uint32_t>(m_qps.size()); }
    uint32_t max_cqs() const { return static_cast<uint32_t>(m_cqs.size()); }
    uint32_t max_srqs() const { return static_cast<uint32_t>(m_srqs.size()); }
    uint32_t max_pds() const { return static_cast<uint32_t>(m_pds.size()); }
    uint32_t max_keys() const { return static_cast<uint32_t>(m_mpt.size()); }

    // Lookups return nullptr for out-of-range or invalid handles.
    qp_context* qp(uint32_t qpn);
    cq_context* cq(uint32_t cqn);
    srq_context* srq(uint32_t srqn);
    pd_context* pd(uint32_t pdn);
    mpt_entry* mpt(uint32_t key);  // by key index; checks the variant byte only if valid
    // Raw slots for the command processor (range-checked, may be invalid).
    qp_context* qp_slot(uint32_t qpn);
    cq_context* cq_slot(uint32_t cqn);
    srq_context* srq_slot(uint32_t srqn);
    pd_context* pd_slot(uint32_t pdn);
    mpt_entry* mpt_slot(uint32_t key);

    // MTT: page bus addresses. alloc returns the first index or UINT32_MAX when full.
    uint32_t mtt_alloc(uint32_t pages);
    void mtt_free(uint32_t base, uint32_t pages);
    uint64_t& mtt(uint32_t index) { return m_mtt[index]; }
    uint32_t mtt_pages_free() const { return m_mtt_free; }

private:
    paged_table<qp_context> m_qps;
    paged_table<cq_context> m_cqs;
    paged_table<srq_context> m_srqs;
    paged_table<pd_context> m_pds;
    paged_table<mpt_entry> m_mpt;
    // calloc'd, not a std::vector: the zero pages come fresh from the OS and stay unmapped until
    // a registration writes them, so an idle NIC does not pay its 2 MiB of RSS (1024-node fabrics).
    struct free_deleter {
        void operator()(uint64_t* p) const { std::free(p); }
    };
    std::unique_ptr<uint64_t[], free_deleter> m_mtt;
    std::vector<std::pair<uint32_t, uint32_t>> m_mtt_holes;  // free extents (base, pages)
    uint32_t m_mtt_free;
};

}  // namespace rnic::hw
