// SPDX-License-Identifier: Apache-2.0
// Provider driver: adapter bring-up, command queue, event queue ISR, close machinery, PD, LAM,
// QueryAdapterInfo.
#include <algorithm>
#include <cstring>

#include "ndk_shim/provider/provider.h"
#include "ndk_shim/status_map.h"

namespace rnic::ndk {
namespace provider {

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------
uint32_t handle_pool::alloc() {
    const uint32_t n = static_cast<uint32_t>(m_used.size());
    for (uint32_t i = 0; i + 1 < n; ++i) {
        uint32_t h = m_next + i;
        if (h >= n) {
            h = h - n + 1;
        }
        if (h != 0 && h < n && !m_used[h]) {
            m_used[h] = true;
            m_next = h + 1 < n ? h + 1 : 1;
            ++m_in_use;
            return h;
        }
    }
    return 0;
}

void handle_pool::free(uint32_t h) {
    if (h != 0 && h < m_used.size() && m_used[h]) {
        m_used[h] = false;
        --m_in_use;
    }
}

uint32_t log2_ceil(uint32_t v) {
    uint32_t l = 0;
    while ((1ull << l) < v) {
        ++l;
    }
    return l;
}

uint32_t usable_depth(uint32_t nic_limit) {
    uint32_t d = 1;
    while (nic_limit != 0 && d <= nic_limit / 2) {
        d *= 2;
    }
    return nic_limit == 0 ? 0 : d;
}

uint32_t path_mtu_log(uint32_t mtu) {
    return log2_ceil(std::clamp(mtu, 256u, 4096u));
}

NTSTATUS mdl_pages(const MDL* mdl, SIZE_T length, std::vector<uint64_t>& pages, ULONG& fbo) {
    if (mdl == nullptr || length == 0) {
        return STATUS_INVALID_PARAMETER;
    }
    const auto* start = static_cast<const uint8_t*>(MmGetMdlVirtualAddress(mdl));
    const uint8_t* expect = start;
    SIZE_T left = length;
    for (const MDL* m = mdl; m != nullptr && left > 0; m = m->Next) {
        const auto* va = static_cast<const uint8_t*>(MmGetMdlVirtualAddress(m));
        if (va != expect) {
            return STATUS_INVALID_PARAMETER;  // not virtually contiguous
        }
        const SIZE_T take = std::min<SIZE_T>(left, m->ByteCount);
        const size_t span = ADDRESS_AND_SIZE_TO_SPAN_PAGES(va, take);
        const PFN_NUMBER* pfn = MmGetMdlPfnArray(m);
        for (size_t i = 0; i < span; ++i) {
            const uint64_t pa = static_cast<uint64_t>(pfn[i]) << PAGE_SHIFT;
            // A chain whose boundary is inside a page lists that page twice: keep one.
            if (i == 0 && !pages.empty() && BYTE_OFFSET(va) != 0 && pages.back() == pa) {
                continue;
            }
            pages.push_back(pa);
        }
        expect = va + m->ByteCount;
        left -= take;
    }
    if (left > 0) {
        return STATUS_INVALID_PARAMETER;
    }
    fbo = BYTE_OFFSET(start);
    return STATUS_SUCCESS;
}

NTSTATUS read_sockaddr(const SOCKADDR* a, ULONG len, uint32_t& ip, uint16_t& port) {
    if (a == nullptr || len < sizeof(SOCKADDR_IN) || a->sa_family != AF_INET) {
        return STATUS_INVALID_ADDRESS;
    }
    const auto* in = reinterpret_cast<const SOCKADDR_IN*>(a);
    ip = ntohl(in->sin_addr.s_addr);
    port = ntohs(in->sin_port);
    return STATUS_SUCCESS;
}

NTSTATUS write_sockaddr(uint32_t ip, uint16_t port, SOCKADDR* a, ULONG* len) {
    if (len == nullptr) {
        return STATUS_INVALID_PARAMETER;
    }
    if (a == nullptr || *len < sizeof(SOCKADDR_IN)) {
        *len = sizeof(SOCKADDR_IN);
        return STATUS_BUFFER_TOO_SMALL;
    }
    SOCKADDR_IN in{};
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    in.sin_addr.s_addr = htonl(ip);
    std::memcpy(a, &in, sizeof(in));
    *len = sizeof(SOCKADDR_IN);
    return STATUS_SUCCESS;
}

object_base* base_of(NDK_OBJECT_HEADER* h) {
    switch (h->ObjectType) {
        case NdkObjectTypeAdapter:
            return impl(reinterpret_cast<NDK_ADAPTER*>(h));
        case NdkObjectTypeQp:
            return impl(reinterpret_cast<NDK_QP*>(h));
        case NdkObjectTypeCq:
            return impl(reinterpret_cast<NDK_CQ*>(h));
        case NdkObjectTypeMr:
            return impl(reinterpret_cast<NDK_MR*>(h));
        case NdkObjectTypeMw:
            return impl(reinterpret_cast<NDK_MW*>(h));
        case NdkObjectTypePd:
            return impl(reinterpret_cast<NDK_PD*>(h));
        case NdkObjectTypeSharedEndpoint:
            return impl(reinterpret_cast<NDK_SHARED_ENDPOINT*>(h));
        case NdkObjectTypeConnector:
            return impl(reinterpret_cast<NDK_CONNECTOR*>(h));
        case NdkObjectTypeListener:
            return impl(reinterpret_cast<NDK_LISTENER*>(h));
        case NdkObjectTypeSrq:
            return impl(reinterpret_cast<NDK_SRQ*>(h));
        default:
            return nullptr;
    }
}

NTSTATUS query_extension(NDK_OBJECT_HEADER*, GUID*, NDK_VERSION, NDK_EXTENSION_INTERFACE* out) {
    if (out != nullptr) {
        out->Dispatch = nullptr;
    }
    return STATUS_NOT_SUPPORTED;  // no standard NDK extension interfaces exist (ndkpi.md 4.2)
}

NTSTATUS close_any(NDK_OBJECT_HEADER* h, NDK_FN_CLOSE_COMPLETION cb, PVOID ctx) {
    object_base* o = base_of(h);
    return o->adapter->close_object(o, cb, ctx);
}

// ---------------------------------------------------------------------------------------------
// Adapter bring-up
// ---------------------------------------------------------------------------------------------
adapter_impl::adapter_impl(host_system& h, const adapter_params& p)
    : host(h)
    , params(p)
    , qpns(p.limits.max_qps, 2)  // QP0 (SMI) and QP1 (GSI) are reserved
    , cqns(p.limits.max_cqs)
    , pdns(p.limits.max_pds)
    , srqns(p.limits.max_srqs)
    , keys(p.limits.max_keys)
    , key_variant(p.limits.max_keys, 0)
    , qp_table(p.limits.max_qps, nullptr)
    , cq_table(p.limits.max_cqs, nullptr)
    , srq_table(p.limits.max_srqs, nullptr) {
    adapter = this;
}

namespace {
// One driver instance per host (the NIC has one command queue and one event queue).
std::map<const host_system*, adapter_impl*>& host_owners() {
    static std::map<const host_system*, adapter_impl*> owners;
    return owners;
}
}  // namespace

adapter_impl::~adapter_impl() {
    auto& owners = host_owners();
    auto it = owners.find(&host);
    if (it != owners.end() && it->second == this) {
        host.connect_interrupt(hsi::MSIX_VECTOR_ASYNC, nullptr);
        owners.erase(it);
    }
    host.free(cmdq);
    host.free(eq);
    if (icm != nullptr) {
        host.free(icm);
    }
}

NTSTATUS adapter_impl::init() {
    if (!host_owners().emplace(&host, this).second) {
        return NDIS_STATUS_ADAPTER_NOT_READY;  // this host's NIC already has a driver instance
    }
    const uint32_t cmd_slots = 1u << params.cmdq_log_size;
    const uint32_t eq_entries = 1u << params.eq_log_size;
    cmdq = static_cast<hsi::cmd_slot*>(host.alloc(cmd_slots * sizeof(hsi::cmd_slot), true));
    eq = static_cast<hsi::event_entry*>(host.alloc(eq_entries * sizeof(hsi::event_entry), true));
    slot_token.assign(cmd_slots, 0);
    host.connect_interrupt(hsi::MSIX_VECTOR_ASYNC, [this] { isr(); });
    // Rings first, then the MSI-X entry (unmasked last), then arm the EQ.
    host.mmio_write64(hsi::REG_CMDQ_BASE, host.phys(cmdq));
    host.mmio_write64(hsi::REG_CMDQ_LOG_SIZE, params.cmdq_log_size);
    host.mmio_write64(hsi::REG_EQ_BASE, host.phys(eq));
    host.mmio_write64(hsi::REG_EQ_LOG_SIZE, params.eq_log_size);
    const uint64_t entry = hsi::REG_MSIX_TABLE + 16ull * hsi::MSIX_VECTOR_ASYNC;
    host.mmio_write64(entry, host.msi_address(hsi::MSIX_VECTOR_ASYNC));
    host.mmio_write32(entry + 8, hsi::MSIX_VECTOR_ASYNC);
    host.mmio_write32(entry + 12, 0);  // vector control: unmask
    host.mmio_write32(hsi::REG_EQ_CONSUMER, eq_consumer);
    // Context memory for the NIC's QP/MPT/MTT tables (its on-chip caches miss into it).
    const uint64_t icm_bytes = host.mmio_read64(hsi::REG_ICM_SIZE);
    if (icm_bytes > 0) {
        icm = host.alloc(icm_bytes, true);
        host.mmio_write64(hsi::REG_ICM_BASE, host.phys(icm));
    }
    return STATUS_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Command queue
// ---------------------------------------------------------------------------------------------
uint32_t adapter_impl::post_command(const hsi::cmd_slot& cmd, std::function<void(uint8_t)> done) {
    const uint32_t size = 1u << params.cmdq_log_size;
    const uint32_t mask = size - 1;
    // Ring full: the oldest command must finish first (poll its slot; no interrupt needed).
    while (cmd_producer - cmd_consumer >= size) {
        const uint32_t oldest = slot_token[cmd_consumer & mask];
        if (oldest == 0 || !complete_command(oldest)) {
            host.wait_for_dma(params.command_timeout_ns);
        }
    }
    const uint32_t slot = cmd_producer & mask;
    uint32_t token = ++next_token;
    if (token == 0) {
        token = ++next_token;
    }
    hsi::cmd_slot s = cmd;
    s.status = 0;
    s.done = 0;
    s.token = token;
    std::memcpy(&cmdq[slot], &s, sizeof(s));
    slot_token[slot] = token;
    cmds[token] = pending_cmd{slot, std::move(done)};
    ++cmd_producer;
    ++counters.commands;
    host.mmio_write32(hsi::REG_CMDQ_DOORBELL, cmd_producer);
    return token;
}

bool adapter_impl::complete_command(uint32_t token) {
    auto it = cmds.find(token);
    if (it == cmds.end()) {
        return false;
    }
    const uint32_t slot = it->second.slot;
    volatile const uint8_t* s = reinterpret_cast<volatile const uint8_t*>(&cmdq[slot]);
    if (s[2] == 0) {
        return false;  // EQ entry ahead of the status write can't happen (DMA order); be safe
    }
    const uint8_t status = s[hsi::CMD_STATUS_OFFSET];
    std::function<void(uint8_t)> done = std::move(it->second.done);
    cmds.erase(it);
    slot_token[slot] = 0;
    const uint32_t mask = (1u << params.cmdq_log_size) - 1;
    while (cmd_consumer != cmd_producer && slot_token[cmd_consumer & mask] == 0) {
        ++cmd_consumer;
    }
    if (done) {
        done(status);
    }
    return true;
}

void adapter_impl::commands(std::vector<hsi::cmd_slot> list, bool wait,
                            std::function<void(uint8_t)> done) {
    struct batch {
        uint32_t remaining;
        uint8_t status = hsi::CMD_OK;
        std::function<void(uint8_t)> done;
        bool finished = false;
    };
    auto b = std::make_shared<batch>();
    b->remaining = static_cast<uint32_t>(list.size());
    b->done = std::move(done);
    if (list.empty()) {
        b->done(hsi::CMD_OK);
        return;
    }
    std::vector<uint32_t> tokens;
    for (const auto& c : list) {
        tokens.push_back(post_command(c, [b](uint8_t st) {
            if (b->status == hsi::CMD_OK && st != hsi::CMD_OK) {
                b->status = st;
            }
            if (--b->remaining == 0 && !b->finished) {
                b->finished = true;
                b->done(b->status);
            }
        }));
    }
    if (!wait) {
        return;
    }
    // Synchronous: spin on the slots' done bytes (the CPU sees the NIC's writes by coherence).
    sc_core::sc_time last_progress = sc_core::sc_time_stamp();
    const sc_core::sc_time limit(params.command_timeout_ns, sc_core::SC_NS);
    while (!b->finished) {
        bool progressed = false;
        for (uint32_t t : tokens) {
            progressed |= complete_command(t);
        }
        if (b->finished) {
            break;
        }
        if (progressed) {
            last_progress = sc_core::sc_time_stamp();
        } else if (sc_core::sc_time_stamp() - last_progress >= limit) {
            for (uint32_t t : tokens) {
                auto it = cmds.find(t);
                if (it != cmds.end()) {
                    it->second.done = nullptr;  // a late answer completes nothing
                }
            }
            b->finished = true;
            b->done(CMD_DRIVER_TIMEOUT);
            break;
        }
        host.wait_for_dma(params.command_timeout_ns);
    }
}

// Vector 0: drain the event queue, dispatch, then re-arm it by writing the consumer index.
void adapter_impl::isr() {
    ++counters.interrupts;
    const uint32_t mask = (1u << params.eq_log_size) - 1;
    for (;;) {
        const hsi::event_entry* e = &eq[eq_consumer & mask];
        const uint8_t phase = ((eq_consumer >> params.eq_log_size) & 1) ? 0 : 1;
        if (((e->flags >> 7) & 1) != phase) {
            break;
        }
        const hsi::event_entry ev = *e;
        ++eq_consumer;
        switch (ev.type) {
            case hsi::EVENT_CMD_DONE:
                complete_command(ev.data);
                break;
            case hsi::EVENT_CQ_COMPLETION:
                if (ev.data < cq_table.size() && cq_table[ev.data] != nullptr) {
                    cq_table[ev.data]->on_event(STATUS_SUCCESS);
                }
                break;
            case hsi::EVENT_CQ_ERROR:
                if (ev.data < cq_table.size() && cq_table[ev.data] != nullptr) {
                    // data2: overrun (consumer bug) or a hardware error (hsi cq_error_syndrome).
                    const NTSTATUS st = ev.data2 == hsi::CQ_ERR_OVERRUN ? STATUS_BUFFER_OVERFLOW
                                                                        : STATUS_INTERNAL_ERROR;
                    if (!cq_table[ev.data]->overrun) {
                        cq_table[ev.data]->dead_status = st;
                    }
                    cq_table[ev.data]->overrun = true;
                    cq_table[ev.data]->on_event(st);
                }
                break;
            case hsi::EVENT_SRQ_ERROR:
                if (ev.data < srq_table.size() && srq_table[ev.data] != nullptr) {
                    srq_table[ev.data]->on_error();
                }
                break;
            case hsi::EVENT_DEVICE_FATAL:
                device_fatal(this);  // cq.cpp
                break;
            case hsi::EVENT_QP_ERROR:
                // The NIC moved the QP to ERROR and flushes it; completions report it.
                break;
            case hsi::EVENT_GSI_RECEIVE:
                gsi_poll();  // CM MADs (connector.cpp)
                break;
            case hsi::EVENT_SRQ_LIMIT:
                if (ev.data < srq_table.size() && srq_table[ev.data] != nullptr) {
                    srq_impl* s = srq_table[ev.data];
                    if (s->notify_cb != nullptr && s->notify_threshold != 0 && !s->closing) {
                        s->notify_threshold = 0;  // one-shot
                        ++s->busy;
                        s->notify_cb(s->notify_ctx, STATUS_SUCCESS);
                        --s->busy;
                        progress(s);
                    }
                }
                break;
            default:
                break;
        }
    }
    host.mmio_write32(hsi::REG_EQ_CONSUMER, eq_consumer);
}

// ---------------------------------------------------------------------------------------------
// Close machinery (ndkpi.md 5)
// ---------------------------------------------------------------------------------------------
NTSTATUS adapter_impl::close_object(object_base* o, NDK_FN_CLOSE_COMPLETION cb, void* ctx) {
    bool inline_done = false;
    o->closing = true;
    o->close_cb = cb;
    o->close_ctx = ctx;
    o->closed_inline = &inline_done;
    o->cancel();
    progress(o);
    if (inline_done) {
        return STATUS_SUCCESS;  // o is gone
    }
    o->closed_inline = nullptr;
    return STATUS_PENDING;
}

void adapter_impl::progress(object_base* o) {
    if (!o->closing || o->children > 0 || o->busy > 0) {
        return;
    }
    if (!o->teardown_started) {
        o->teardown_started = true;
        o->teardown([this, o] {
            o->teardown_done = true;
            progress(o);
        });
        return;
    }
    if (o->teardown_done) {
        finalize(o);
    }
}

void adapter_impl::finalize(object_base* o) {
    std::vector<object_base*> ante = o->antecedents;
    if (o->closed_inline != nullptr) {
        *o->closed_inline = true;
    } else if (o->close_cb != nullptr) {
        o->close_cb(o->close_ctx);  // last callback of the object, before the parents learn
    }
    if (o != this) {
        delete o;
    }
    for (object_base* a : ante) {
        --a->children;
        if (a == this && children == 0) {
            children_gone.notify(sc_core::SC_ZERO_TIME);
        }
        progress(a);
    }
}

// ---------------------------------------------------------------------------------------------
// Ports and keys
// ---------------------------------------------------------------------------------------------
NTSTATUS adapter_impl::take_port(uint16_t& port) {
    if (port != 0) {
        if (port_refs.count(port) != 0) {
            return STATUS_SHARING_VIOLATION;
        }
        port_refs[port] = 1;
        return STATUS_SUCCESS;
    }
    for (uint32_t i = 0; i < 16384; ++i) {
        const uint16_t p = static_cast<uint16_t>(49152 + (next_ephemeral - 49152 + i) % 16384);
        if (port_refs.count(p) == 0) {
            port_refs[p] = 1;
            next_ephemeral = static_cast<uint16_t>(p == 65535 ? 49152 : p + 1);
            port = p;
            return STATUS_SUCCESS;
        }
    }
    return STATUS_TOO_MANY_ADDRESSES;
}

void adapter_impl::release_port(uint16_t port) {
    auto it = port_refs.find(port);
    if (it != port_refs.end() && --it->second == 0) {
        port_refs.erase(it);
    }
}

uint32_t adapter_impl::new_key(uint32_t index) {
    key_variant[index] = static_cast<uint8_t>(key_variant[index] + 1);
    return index << 8 | key_variant[index];
}

// ---------------------------------------------------------------------------------------------
// Adapter dispatch: QueryAdapterInfo, CreatePd, LAM
// ---------------------------------------------------------------------------------------------
NTSTATUS query_adapter_info(NDK_ADAPTER* a, NDK_ADAPTER_INFO* info, ULONG* size) {
    adapter_impl* ad = impl(a);
    if (size == nullptr) {
        return STATUS_INVALID_PARAMETER;
    }
    if (info == nullptr || *size < sizeof(NDK_ADAPTER_INFO)) {
        *size = sizeof(NDK_ADAPTER_INFO);
        return STATUS_BUFFER_TOO_SMALL;
    }
    const hw::nic_limits& l = ad->params.limits;
    NDK_ADAPTER_INFO i{};
    i.Version = ad->version;
    i.VendorId = 0x00525400;  // locally administered OUI 52:54:00
    i.DeviceId = 0x1;
    i.MaxRegistrationSize = static_cast<SIZE_T>(l.max_mtt_pages) * hsi::PAGE_SIZE;
    i.MaxWindowSize = i.MaxRegistrationSize;
    i.FRMRPageCount = std::max<uint32_t>(16, std::min<uint32_t>(l.max_mtt_pages, 256));
    i.MaxInitiatorRequestSge = l.max_sge;
    i.MaxReceiveRequestSge = l.max_sge;
    i.MaxReadRequestSge = l.max_sge;
    i.MaxTransferLength = l.max_message;
    i.MaxInlineDataSize = l.max_inline;
    i.MaxInboundReadLimit = l.max_read_depth;
    i.MaxOutboundReadLimit = l.max_read_depth;
    // Queue depths as usable: power-of-two rings within the NIC's limits (usable_depth).
    i.MaxReceiveQueueDepth = usable_depth(l.max_qp_depth);
    i.MaxInitiatorQueueDepth = usable_depth(l.max_qp_depth);
    i.MaxSrqDepth = l.max_srqs > 1 ? usable_depth(l.max_srq_depth) : 0;
    i.MaxCqDepth = usable_depth(l.max_cq_depth);
    i.LargeRequestThreshold = 8192;
    i.MaxCallerData = MAX_CALLER_DATA;
    i.MaxCalleeData = MAX_CALLEE_DATA;
    // Moderation only if the NIC has it (CMD_QUERY_DEVICE, rnic.cq.interrupt_moderation).
    const ULONG moderation = (device_caps(ad) & hsi::DEVICE_CAP_CQ_MODERATION) != 0
                                 ? NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED
                                 : 0;
    i.AdapterFlags = NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED |
                     NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED | moderation |
                     NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED |
                     NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED |
                     NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED;
    i.RdmaTechnology = NdkRoCEv2;
    std::memcpy(info, &i, sizeof(i));
    *size = sizeof(NDK_ADAPTER_INFO);
    return STATUS_SUCCESS;
}

void pd_impl::teardown(std::function<void()> done) {
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_DESTROY_PD;
    c.u.obj.handle = pdn;
    adapter_impl* ad = adapter;
    const uint32_t h = pdn;
    ad->commands({c}, ad->sync(), [ad, h, done](uint8_t) {
        ad->pdns.free(h);
        done();
    });
}

NTSTATUS create_pd(NDK_ADAPTER* a, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_PD** out) {
    adapter_impl* ad = impl(a);
    const uint32_t pdn = ad->pdns.alloc();
    if (pdn == 0) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    auto* pd = new pd_impl;
    ad->init_header(pd, NdkObjectTypePd, &pd_dispatch);
    pd->adapter = ad;
    pd->pdn = pdn;
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_CREATE_PD;
    c.u.obj.handle = pdn;
    c.u.obj.pdn = pdn;
    const bool sync = ad->sync();
    NTSTATUS result = STATUS_PENDING;
    ad->commands({c}, sync, [ad, pd, cb, ctx, sync, &result](uint8_t st) {
        NTSTATUS s = cmd_status_to_ntstatus(st);
        if (s == STATUS_SUCCESS) {
            pd->add_antecedent(ad);
        } else {
            ad->pdns.free(pd->pdn);
            delete pd;
        }
        if (sync) {
            result = s;
        } else {
            cb(ctx, s, s == STATUS_SUCCESS ? &pd->Header : nullptr);
        }
    });
    if (sync && result == STATUS_SUCCESS) {
        *out = pd;
    }
    return result;
}

VOID get_privileged_token(NDK_PD*, UINT32* token) {
    if (token != nullptr) {
        *token = hsi::PRIVILEGED_KEY;
    }
}

// LAM: the page list of a locked MDL range as adapter logical addresses (no IOMMU is modelled,
// so logical = bus = physical). Synchronous.
NTSTATUS build_lam(NDK_ADAPTER* a, MDL* mdl, SIZE_T length, NDK_FN_REQUEST_COMPLETION, PVOID,
                   NDK_LOGICAL_ADDRESS_MAPPING* lam, ULONG* lam_size, ULONG* fbo) {
    if (mdl == nullptr || lam_size == nullptr || fbo == nullptr || length == 0) {
        return STATUS_INVALID_PARAMETER;
    }
    std::vector<uint64_t> pages;
    ULONG first = 0;
    const NTSTATUS st = mdl_pages(mdl, length, pages, first);
    if (st != STATUS_SUCCESS) {
        return st;  // nothing was written into the consumer's LAM: no partial mapping
    }
    if (pages.size() > impl(a)->params.limits.max_mtt_pages) {
        return STATUS_INSUFFICIENT_RESOURCES;  // beyond MaxRegistrationSize
    }
    const ULONG need =
        static_cast<ULONG>(FIELD_OFFSET(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) +
                           pages.size() * sizeof(NDK_LOGICAL_ADDRESS));
    if (lam == nullptr || *lam_size < need) {
        *lam_size = need;
        return STATUS_BUFFER_TOO_SMALL;
    }
    lam->AdapterContext = impl(a);
    lam->AdapterPageCount = static_cast<ULONG>(pages.size());
    for (size_t i = 0; i < pages.size(); ++i) {
        lam->AdapterPageArray[i].QuadPart = static_cast<LONGLONG>(pages[i]);
    }
    *lam_size = need;
    *fbo = first;
    impl(a)->host.cpu(impl(a)->host.config().post_ns);
    return STATUS_SUCCESS;
}

VOID release_lam(NDK_ADAPTER*, NDK_LOGICAL_ADDRESS_MAPPING* lam) {
    if (lam != nullptr) {
        lam->AdapterContext = nullptr;  // nothing is pinned beyond the consumer's MDL
    }
}

}  // namespace provider

}  // namespace rnic::ndk
