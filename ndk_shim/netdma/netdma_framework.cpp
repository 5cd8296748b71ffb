// SPDX-License-Identifier: Apache-2.0
// NetDMA: provider registration, channel allocation for clients, ISR/DPC hand-off.
#include "ndk_shim/netdma/netdma_framework.h"

#include <algorithm>
#include <memory>

namespace rnic::ndk::netdma {

namespace {
struct framework_state {
    ULONG processors = 4;
    std::vector<std::unique_ptr<provider_record>> providers;
};

framework_state& state() {
    static framework_state s;
    return s;
}

provider_record* find(PVOID handle) {
    for (auto& p : state().providers) {
        if (p.get() == handle) {
            return p.get();
        }
    }
    return nullptr;
}

bool terminal(ULONG64 word) {
    const auto s = static_cast<NET_DMA_TRANSFER_STATUS>(word & NET_DMA_TRANSFER_STATUS_MASK);
    return s == NetDmaTransferStatusIdle || s == NetDmaTransferStatusHalted ||
           s == NetDmaTransferStatusSuspend;
}

// How long NetDmaProviderStop waits for a channel's outstanding DMA before aborting it.
constexpr double STOP_WAIT_NS = 10e6;
}  // namespace

void set_processor_count(ULONG processors) {
    state().processors = std::max<ULONG>(1, std::min<ULONG>(processors, 64));
}

ULONG processor_count() {
    return state().processors;
}

std::vector<provider_record*> providers() {
    std::vector<provider_record*> v;
    for (auto& p : state().providers) {
        v.push_back(p.get());
    }
    return v;
}

// ---------------------------------------------------------------------------------------------
// channel
// ---------------------------------------------------------------------------------------------
channel::channel(host_system& host, provider_record& provider, const channel_request& request)
    : m_host(host)
    , m_provider(provider)
    , m_request(request) {}

channel::~channel() {
    if (m_completion != nullptr) {
        m_host.free(const_cast<ULONG64*>(m_completion));
    }
}

NTSTATUS channel::open() {
    m_params.Revision = m_request.revision;
    m_params.Size = m_request.revision >= NET_DMA_CHANNEL_REVISION_2
                        ? SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_2
                        : SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_1;
    m_params.Flags = 0;
    if (m_request.completion_word) {
        // NetDMA's completion word: 8 B of non-paged memory the engine writes by DMA.
        m_completion = static_cast<volatile ULONG64*>(m_host.alloc(sizeof(ULONG64), true));
        *m_completion = 0;
        m_params.CompletionVirtualAddress = const_cast<ULONG64*>(m_completion);
        m_params.CompletionPhysicalAddress.QuadPart =
            static_cast<LONGLONG>(m_host.phys(const_cast<ULONG64*>(m_completion)));
    }
    const ULONG mask = m_request.processor_mask;
    m_params.ProcessorAffinityMask = mask;
    m_params.ChannelPriority = m_request.priority;
    m_params.CpuNumber = 0;
    if (m_request.revision >= NET_DMA_CHANNEL_REVISION_2) {
        m_params.ProcessorAffinityMaskEx.Mask = mask;
        m_params.ProcessorAffinityMaskEx.Group = 0;
    }
    const NTSTATUS st = m_provider.chars.AllocateDmaChannel(m_provider.context, &m_params, this,
                                                            &m_provider_channel);
    m_open = NT_SUCCESS(st);
    return st;
}

void channel::close() {
    if (m_open) {
        m_provider.chars.FreeDmaChannel(m_provider_channel);
        m_open = false;
    }
}

NTSTATUS channel::start(NET_DMA_DESCRIPTOR* first, ULONG count) {
    PHYSICAL_ADDRESS pa{};
    pa.QuadPart = static_cast<LONGLONG>(m_host.phys(first));
    const NTSTATUS st = m_provider.chars.StartDma(m_provider_channel, first, pa, count);
    m_submitted |= NT_SUCCESS(st);
    return st;
}

NTSTATUS channel::append(NET_DMA_DESCRIPTOR* first, ULONG count) {
    PHYSICAL_ADDRESS pa{};
    pa.QuadPart = static_cast<LONGLONG>(m_host.phys(first));
    return m_provider.chars.AppendDma(m_provider_channel, first, pa, count);
}

NTSTATUS channel::suspend(PHYSICAL_ADDRESS* last_descriptor) {
    if (m_provider.chars.SuspendDma == nullptr) {
        return STATUS_NOT_SUPPORTED;
    }
    PPHYSICAL_ADDRESS last = nullptr;
    const NTSTATUS st = m_provider.chars.SuspendDma(m_provider_channel, &last);
    if (NT_SUCCESS(st) && last_descriptor != nullptr && last != nullptr) {
        *last_descriptor = *last;
    }
    return st;
}

NTSTATUS channel::resume() {
    return m_provider.chars.ResumeDma == nullptr ? STATUS_NOT_SUPPORTED
                                                 : m_provider.chars.ResumeDma(m_provider_channel);
}

NTSTATUS channel::abort() {
    if (m_provider.chars.AbortDma == nullptr) {
        return STATUS_NOT_SUPPORTED;
    }
    const NTSTATUS st = m_provider.chars.AbortDma(m_provider_channel);
    m_submitted &= !NT_SUCCESS(st);
    return st;
}

NTSTATUS channel::reset() {
    if (m_provider.chars.ResetChannel == nullptr) {
        return STATUS_NOT_SUPPORTED;
    }
    const NTSTATUS st = m_provider.chars.ResetChannel(m_provider_channel);
    m_submitted &= !NT_SUCCESS(st);
    return st;
}

ULONG64 channel::completion_word() const {
    return m_completion != nullptr ? *m_completion : 0;
}

bool channel::wait_for(NET_DMA_TRANSFER_STATUS status, uint64_t descriptor, double timeout_ns) {
    const sc_core::sc_time end =
        sc_core::sc_time_stamp() + sc_core::sc_time(timeout_ns, sc_core::SC_NS);
    auto done = [&] {
        const ULONG64 w = completion_word();
        return transfer_status() == status &&
               (descriptor == 0 ||
                (w & ~static_cast<ULONG64>(NET_DMA_TRANSFER_STATUS_MASK)) == descriptor);
    };
    while (!done()) {
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        if (m_completion == nullptr || now >= end) {
            return false;
        }
        m_host.wait_for_dma((end - now).to_seconds() * 1e9);
    }
    return true;
}

void channel::on_isr(PHYSICAL_ADDRESS descriptor, PULONG cpu) {
    ++m_counters.isrs;
    m_counters.last_isr_descriptor = static_cast<uint64_t>(descriptor.QuadPart);
    if (cpu != nullptr) {
        *cpu = m_params.CpuNumber;  // the DPC runs where the client asked the channel to be
    }
}

void channel::on_dpc(PHYSICAL_ADDRESS descriptor) {
    ++m_counters.dpcs;
    m_counters.last_dpc_descriptor = static_cast<uint64_t>(descriptor.QuadPart);
    if (m_request.on_completion) {
        m_request.on_completion(descriptor, completion_word());
    }
}

NTSTATUS allocate_channel(host_system& host, provider_record* provider,
                          const channel_request& request, channel** out) {
    if (provider == nullptr || out == nullptr || find(provider) == nullptr) {
        return STATUS_INVALID_PARAMETER;
    }
    if (!provider->started) {
        return STATUS_DEVICE_NOT_READY;  // channels exist from NetDmaProviderStart on
    }
    auto c = std::make_unique<channel>(host, *provider, request);
    const NTSTATUS st = c->open();
    if (!NT_SUCCESS(st)) {
        return st;
    }
    *out = c.get();
    provider->channels.push_back(c.release());
    return STATUS_SUCCESS;
}

void free_channel(channel* c) {
    if (c == nullptr) {
        return;
    }
    auto& list = c->provider().channels;
    list.erase(std::remove(list.begin(), list.end(), c), list.end());
    c->close();
    delete c;
}

}  // namespace rnic::ndk::netdma

// =============================================================================================
// NetDMA exports (ndk_shim/netdma.h)
// =============================================================================================
using rnic::ndk::netdma::channel;
using rnic::ndk::netdma::provider_record;

extern "C" {

NTSTATUS NetDmaRegisterProvider(PVOID ProviderContext, PVOID* pNetDmaProviderHandle,
                                PNET_DMA_PROVIDER_CHARACTERISTICS ProviderCharacteristics) {
    const PNET_DMA_PROVIDER_CHARACTERISTICS c = ProviderCharacteristics;
    if (pNetDmaProviderHandle == nullptr || c == nullptr ||
        c->Size < sizeof(NET_DMA_PROVIDER_CHARACTERISTICS) ||
        (c->MajorVersion != NET_DMA_PROVIDER_REVISION_1 &&
         c->MajorVersion != NET_DMA_PROVIDER_REVISION_2) ||
        c->MaxDmaChannelCount == 0 || c->SetDmaChannelCpuAffinity == nullptr ||
        c->AllocateDmaChannel == nullptr || c->FreeDmaChannel == nullptr ||
        c->StartDma == nullptr || c->AppendDma == nullptr ||
        (c->SuspendDma != nullptr && c->ResumeDma == nullptr)) {
        return STATUS_UNSUCCESSFUL;  // documented statuses: SUCCESS, RESOURCES, UNSUCCESSFUL
    }
    auto rec = std::make_unique<provider_record>();
    rec->context = ProviderContext;
    rec->chars = *c;
    // Spread the channels over the CPUs; the provider points each channel's MSI-X vector there.
    const ULONG cpus = rnic::ndk::netdma::processor_count();
    for (ULONG i = 0; i < c->MaxDmaChannelCount; ++i) {
        rec->affinity.push_back({i, i % cpus});
    }
    const NTSTATUS st = c->SetDmaChannelCpuAffinity(
        ProviderContext, rec->affinity.data(),
        static_cast<ULONG>(rec->affinity.size() * sizeof(NET_DMA_CHANNEL_CPU_AFFINITY)));
    if (!NT_SUCCESS(st)) {
        // The provider's refusal, as one of the documented statuses.
        return st == STATUS_INSUFFICIENT_RESOURCES ? STATUS_INSUFFICIENT_RESOURCES
                                                   : STATUS_UNSUCCESSFUL;
    }
    *pNetDmaProviderHandle = rec.get();
    rnic::ndk::netdma::state().providers.push_back(std::move(rec));
    return STATUS_SUCCESS;
}

VOID NetDmaProviderStart(PVOID NetDmaProviderHandle,
                         PNET_DMA_PROVIDER_ATTRIBUTES ProviderAttributes) {
    provider_record* p = rnic::ndk::netdma::find(NetDmaProviderHandle);
    if (p == nullptr || ProviderAttributes == nullptr) {
        return;
    }
    p->attributes = *ProviderAttributes;
    p->started = true;
}

VOID NetDmaProviderStop(PVOID NetDmaProviderHandle) {
    provider_record* p = rnic::ndk::netdma::find(NetDmaProviderHandle);
    if (p == nullptr) {
        return;
    }
    // Wait for each channel's outstanding DMA (its completion word reaches a resting state),
    // abort what does not get there, then free every channel.
    while (!p->channels.empty()) {
        channel* c = p->channels.front();
        // A channel without a completion word cannot be watched: it is aborted.
        if (c->submitted() && !rnic::ndk::netdma::terminal(c->completion_word())) {
            const sc_core::sc_time end =
                sc_core::sc_time_stamp() +
                sc_core::sc_time(rnic::ndk::netdma::STOP_WAIT_NS, sc_core::SC_NS);
            while (!rnic::ndk::netdma::terminal(c->completion_word()) &&
                   sc_core::sc_time_stamp() < end) {
                c->host().wait_for_dma((end - sc_core::sc_time_stamp()).to_seconds() * 1e9);
            }
            if (!rnic::ndk::netdma::terminal(c->completion_word())) {
                c->abort();
            }
        }
        rnic::ndk::netdma::free_channel(c);
    }
    p->started = false;
}

VOID NetDmaDeregisterProvider(PVOID NetDmaProviderHandle) {
    provider_record* p = rnic::ndk::netdma::find(NetDmaProviderHandle);
    if (p == nullptr) {
        return;
    }
    if (p->started || !p->channels.empty()) {
        NetDmaProviderStop(p);
    }
    auto& list = rnic::ndk::netdma::state().providers;
    list.erase(
        std::remove_if(list.begin(), list.end(), [p](const auto& r) { return r.get() == p; }),
        list.end());
}

VOID NetDmaIsr(PVOID NetDmaChannelHandle, PHYSICAL_ADDRESS DmaDescriptor, PULONG pCpuNumber) {
    if (NetDmaChannelHandle != nullptr) {
        static_cast<channel*>(NetDmaChannelHandle)->on_isr(DmaDescriptor, pCpuNumber);
    }
}

VOID NetDmaInterruptDpc(PVOID NetDmaChannelHandle, PHYSICAL_ADDRESS DmaDescriptor) {
    if (NetDmaChannelHandle != nullptr) {
        static_cast<channel*>(NetDmaChannelHandle)->on_dpc(DmaDescriptor);
    }
}

UINT NetDmaGetVersion(VOID) {
    return rnic::ndk::netdma::NETDMA_VERSION;
}

VOID NetDmaPnPEventNotify(PVOID NetDmaProviderHandle, PNET_DMA_PNP_NOTIFICATION PnPEvent) {
    provider_record* p = rnic::ndk::netdma::find(NetDmaProviderHandle);
    if (p == nullptr || PnPEvent == nullptr ||
        PnPEvent->StructureRevision != NET_DMA_PNP_NOTIFICATION_REVISION_1 ||
        PnPEvent->StructureSize < sizeof(NET_DMA_PNP_NOTIFICATION)) {
        return;
    }
    // Providers send only the power events; the others go from NetDMA to its clients.
    if (PnPEvent->NotificationCode == NetDmaNotificationProviderPowerDown ||
        PnPEvent->NotificationCode == NetDmaNotificationProviderPowerUp) {
        p->pnp_events.push_back(PnPEvent->NotificationCode);
    }
}

}  // extern "C"
