// SPDX-License-Identifier: Apache-2.0
// NetDMA provider driver: registration, channel allocation, the ProviderXxx handlers, ISR/DPC.
#include "ndk_shim/netdma/netdma_provider.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "hw/hsi/hsi.h"

namespace rnic::ndk::netdma {

// The descriptor and completion formats are NetDMA's: the NIC's view (hsi.h) must match.
static_assert(sizeof(hsi::netdma_descriptor) == sizeof(NET_DMA_DESCRIPTOR));
static_assert(offsetof(NET_DMA_DESCRIPTOR, NextDescriptor) == hsi::NETDMA_DESC_NEXT_OFFSET);
static_assert(hsi::NETDMA_CTRL_INTERRUPT == NET_DMA_INTERRUPT_ON_COMPLETION);
static_assert(hsi::NETDMA_CTRL_SOURCE_NO_SNOOP == NET_DMA_SOURCE_NO_SNOOP);
static_assert(hsi::NETDMA_CTRL_DESTINATION_NO_SNOOP == NET_DMA_DESTINATION_NO_SNOOP);
static_assert(hsi::NETDMA_CTRL_STATUS_UPDATE == NET_DMA_STATUS_UPDATE_ON_COMPLETION);
static_assert(hsi::NETDMA_CTRL_SERIALIZE == NET_DMA_SERIALIZE_TRANSFER);
static_assert(hsi::NETDMA_CTRL_NULL_TRANSFER == NET_DMA_NULL_TRANSFER);
static_assert(hsi::NETDMA_CTRL_SOURCE_PAGE_BREAK == NET_DMA_SOURCE_PAGE_BREAK);
static_assert(hsi::NETDMA_CTRL_DESTINATION_PAGE_BREAK == NET_DMA_DESTINATION_PAGE_BREAK);
static_assert(hsi::NETDMA_CTRL_DESTINATION_DCA == NET_DMA_DESTINATION_DCA_ENABLE);
static_assert(hsi::NETDMA_OP_CONTEXT_CHANGE == NET_DMA_OP_TYPE_CONTEXT_CHANGE);
static_assert(hsi::NETDMA_STATUS_MASK == NET_DMA_TRANSFER_STATUS_MASK);
constexpr bool same_status(hsi::netdma_status h, NET_DMA_TRANSFER_STATUS n) {
    return static_cast<int>(h) == static_cast<int>(n);
}
static_assert(same_status(hsi::NETDMA_STATUS_ACTIVE, NetDmaTransferStatusActive) &&
              same_status(hsi::NETDMA_STATUS_IDLE, NetDmaTransferStatusIdle) &&
              same_status(hsi::NETDMA_STATUS_SUSPEND, NetDmaTransferStatusSuspend) &&
              same_status(hsi::NETDMA_STATUS_HALTED, NetDmaTransferStatusHalted) &&
              same_status(hsi::NETDMA_STATUS_ARMED, NetDmaTransferStatusArmed));

struct hw_channel {
    provider* owner = nullptr;
    channel_info info;
    bool allocated = false;
    PVOID netdma_handle = nullptr;  // NetDMA's channel handle
    bool started = false;           // Start since allocate / abort / reset
    bool suspended = false;
    uint32_t commands = 0;               // written (free-running, compared with CHAN_CMD reads)
    PHYSICAL_ADDRESS last_descriptor{};  // SuspendDma's out parameter points here
};

struct provider {
    host_system& host;
    provider_params params;
    PVOID netdma_handle = nullptr;
    uint32_t address_bits = 0;
    uint32_t max_transfer = 0;
    uint32_t vendor = 0;
    std::vector<hw_channel> channels;
    NET_DMA_PROVIDER_CHARACTERISTICS chars{};
    std::u16string friendly_name = u"rnicsim RNIC NetDMA copy engine";
    provider_counters counters;
    std::shared_ptr<bool> alive = std::make_shared<bool>(true);  // checked by queued DPCs

    provider(host_system& h, const provider_params& p)
        : host(h)
        , params(p) {}
    uint64_t reg(const hw_channel& c, uint64_t r) const {
        return hsi::netdma_channel_reg(c.info.index, r);
    }
    uint64_t msix_entry(const hw_channel& c) const {
        return hsi::REG_MSIX_TABLE + 16ull * c.info.vector;
    }
    void command(hw_channel& c, uint8_t op, uint32_t count = 0) {
        host.mmio_write64(reg(c, hsi::NETDMA_CHAN_CMD), op | static_cast<uint64_t>(count) << 32);
        ++c.commands;
        ++counters.commands;
    }
    // Reads CHAN_CMD until the NIC has finished every command written (a non-posted read
    // cannot pass the posted command writes).
    bool wait_ack(hw_channel& c) {
        const sc_core::sc_time end =
            sc_core::sc_time_stamp() + sc_core::sc_time(params.command_timeout_ns, sc_core::SC_NS);
        for (;;) {
            const auto done = static_cast<uint32_t>(host.mmio_read64(reg(c, hsi::NETDMA_CHAN_CMD)));
            if (done == c.commands) {
                return true;
            }
            if (sc_core::sc_time_stamp() >= end) {
                return false;
            }
            host.cpu(host.config().poll_ns);
        }
    }
    void isr(hw_channel& c);
};

namespace {
hw_channel* as_channel(PVOID ctx) {
    return static_cast<hw_channel*>(ctx);
}

// x86 MSI: bits 19..12 of the message address are the destination APIC id, so pointing a
// vector at a CPU is the address the driver writes into the MSI-X table.
uint64_t msi_address_for(const host_system& host, uint32_t vector, ULONG cpu) {
    return host.msi_address(vector) | (static_cast<uint64_t>(cpu & 0xff) << 12);
}

// ---------------------------------------------------------------------------------------------
// Provider handlers (NET_DMA_PROVIDER_CHARACTERISTICS)
// ---------------------------------------------------------------------------------------------
NTSTATUS set_affinity(PVOID ctx, PNET_DMA_CHANNEL_CPU_AFFINITY array, ULONG bytes) {
    auto* p = static_cast<provider*>(ctx);
    if (array == nullptr || bytes % sizeof(NET_DMA_CHANNEL_CPU_AFFINITY) != 0) {
        return STATUS_UNSUCCESSFUL;
    }
    const ULONG n = bytes / sizeof(NET_DMA_CHANNEL_CPU_AFFINITY);
    for (ULONG i = 0; i < n; ++i) {
        if (array[i].DmaChannel >= p->channels.size() || array[i].CpuNumber > 0xff) {
            return STATUS_UNSUCCESSFUL;
        }
    }
    for (ULONG i = 0; i < n; ++i) {
        hw_channel& c = p->channels[array[i].DmaChannel];
        c.info.cpu = array[i].CpuNumber;
        // The vector stays masked until a client allocates the channel.
        const uint64_t entry = p->msix_entry(c);
        p->host.mmio_write64(entry, msi_address_for(p->host, c.info.vector, c.info.cpu));
        p->host.mmio_write32(entry + 8, c.info.vector);
        p->host.mmio_write32(entry + 12, 1);
    }
    return STATUS_SUCCESS;
}

NTSTATUS allocate_channel_handler(PVOID ctx, PNET_DMA_CHANNEL_PARAMETERS params,
                                  PVOID netdma_channel, PVOID* out) {
    auto* p = static_cast<provider*>(ctx);
    if (params == nullptr || out == nullptr ||
        (params->Revision != NET_DMA_CHANNEL_REVISION_1 &&
         params->Revision != NET_DMA_CHANNEL_REVISION_2) ||
        params->Size < (params->Revision == NET_DMA_CHANNEL_REVISION_2
                            ? SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_2
                            : SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_1) ||
        (params->CompletionPhysicalAddress.QuadPart & 7) != 0) {
        return STATUS_UNSUCCESSFUL;
    }
    // Windows 7 passes the CPUs as a group affinity (group 0 on this host).
    KAFFINITY mask = params->ProcessorAffinityMask;
    if (params->Revision == NET_DMA_CHANNEL_REVISION_2) {
        mask =
            params->ProcessorAffinityMaskEx.Group == 0 ? params->ProcessorAffinityMaskEx.Mask : 0;
    }
    // A free channel whose vector targets a wanted CPU; else any free channel.
    hw_channel* pick = nullptr;
    for (hw_channel& c : p->channels) {
        if (!c.allocated && c.info.cpu < 64 && ((mask >> c.info.cpu) & 1) != 0) {
            pick = &c;
            break;
        }
    }
    for (size_t i = 0; pick == nullptr && i < p->channels.size(); ++i) {
        if (!p->channels[i].allocated) {
            pick = &p->channels[i];
        }
    }
    if (pick == nullptr) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    hw_channel& c = *pick;
    // A clean engine, then the completion word, the vector and the priority; unmask last.
    p->command(c, hsi::NETDMA_CMD_RESET);
    if (!p->wait_ack(c)) {
        return STATUS_UNSUCCESSFUL;
    }
    p->host.mmio_write64(p->reg(c, hsi::NETDMA_CHAN_COMPLETION),
                         static_cast<uint64_t>(params->CompletionPhysicalAddress.QuadPart));
    p->host.mmio_write32(
        p->reg(c, hsi::NETDMA_CHAN_CONTROL),
        hsi::netdma_control(true, c.info.vector, std::min<ULONG>(params->ChannelPriority, 0xff)));
    p->host.mmio_write32(p->msix_entry(c) + 12, 0);
    c.allocated = true;
    c.started = false;
    c.suspended = false;
    c.netdma_handle = netdma_channel;
    c.info.last_error = 0;
    params->CpuNumber = c.info.cpu;
    *out = &c;
    ++p->counters.allocations;
    return STATUS_SUCCESS;
}

VOID free_channel_handler(PVOID ctx) {
    hw_channel* c = as_channel(ctx);
    if (c == nullptr || !c->allocated) {
        return;
    }
    provider* p = c->owner;
    p->command(*c, hsi::NETDMA_CMD_RESET);
    p->wait_ack(*c);
    p->host.mmio_write32(p->msix_entry(*c) + 12, 1);  // mask
    p->host.mmio_write32(p->reg(*c, hsi::NETDMA_CHAN_CONTROL), 0);
    p->host.mmio_write64(p->reg(*c, hsi::NETDMA_CHAN_COMPLETION), 0);
    c->allocated = false;
    c->started = false;
    c->suspended = false;
    c->netdma_handle = nullptr;
    ++p->counters.frees;
}

NTSTATUS start_handler(PVOID ctx, PNET_DMA_DESCRIPTOR, PHYSICAL_ADDRESS pa, ULONG count) {
    hw_channel* c = as_channel(ctx);
    if (c == nullptr || !c->allocated || pa.QuadPart == 0 || (pa.QuadPart & 7) != 0) {
        return STATUS_UNSUCCESSFUL;
    }
    provider* p = c->owner;
    // CHAINADDR is latched by the START write that follows it.
    p->host.mmio_write64(p->reg(*c, hsi::NETDMA_CHAN_CHAINADDR),
                         static_cast<uint64_t>(pa.QuadPart));
    p->command(*c, hsi::NETDMA_CMD_START, count);
    c->started = true;
    c->suspended = false;
    return STATUS_SUCCESS;
}

NTSTATUS append_handler(PVOID ctx, PNET_DMA_DESCRIPTOR, PHYSICAL_ADDRESS, ULONG count) {
    hw_channel* c = as_channel(ctx);
    if (c == nullptr || !c->allocated || !c->started) {
        return STATUS_UNSUCCESSFUL;  // Start is mandatory after allocate, abort and reset
    }
    // NetDMA has already linked the old tail to the new chain (1.x: patched NextDescriptor;
    // 2.0: the tail's link was valid all along): the NIC re-reads or follows it.
    c->owner->command(*c, hsi::NETDMA_CMD_APPEND, count);
    return STATUS_SUCCESS;
}

NTSTATUS suspend_handler(PVOID ctx, PPHYSICAL_ADDRESS* last) {
    hw_channel* c = as_channel(ctx);
    if (c == nullptr || !c->allocated || !c->started || c->suspended || last == nullptr) {
        return STATUS_UNSUCCESSFUL;
    }
    provider* p = c->owner;
    // The NIC finishes the current descriptor first: the acknowledgement comes after it.
    p->command(*c, hsi::NETDMA_CMD_SUSPEND);
    if (!p->wait_ack(*c)) {
        return STATUS_UNSUCCESSFUL;
    }
    const uint64_t status = p->host.mmio_read64(p->reg(*c, hsi::NETDMA_CHAN_STATUS));
    if ((status & hsi::NETDMA_STATUS_MASK) != hsi::NETDMA_STATUS_SUSPEND) {
        c->started = false;  // halted by an error meanwhile: needs a Start
        return STATUS_UNSUCCESSFUL;
    }
    c->last_descriptor.QuadPart = static_cast<LONGLONG>(status & ~hsi::NETDMA_STATUS_MASK);
    *last = &c->last_descriptor;
    c->suspended = true;
    return STATUS_SUCCESS;
}

NTSTATUS resume_handler(PVOID ctx) {
    hw_channel* c = as_channel(ctx);
    if (c == nullptr || !c->allocated || !c->suspended) {
        return STATUS_UNSUCCESSFUL;
    }
    c->owner->command(*c, hsi::NETDMA_CMD_RESUME);
    c->suspended = false;
    return STATUS_SUCCESS;
}

NTSTATUS stop_channel(PVOID ctx, uint8_t op) {
    hw_channel* c = as_channel(ctx);
    if (c == nullptr || !c->allocated) {
        return STATUS_UNSUCCESSFUL;
    }
    provider* p = c->owner;
    p->command(*c, op);
    c->started = false;
    c->suspended = false;
    return p->wait_ack(*c) ? STATUS_SUCCESS : STATUS_UNSUCCESSFUL;
}

NTSTATUS abort_handler(PVOID ctx) {
    return stop_channel(ctx, hsi::NETDMA_CMD_ABORT);
}

NTSTATUS reset_handler(PVOID ctx) {
    return stop_channel(ctx, hsi::NETDMA_CMD_RESET);
}
}  // namespace

// The channel's MSI-X vector: read where the engine is (it may be past the descriptor that
// interrupted), tell NetDMA, and queue the DPC for the CPU NetDMA names.
void provider::isr(hw_channel& c) {
    if (!c.allocated) {
        return;  // freed while the message was on its way
    }
    ++counters.interrupts;
    ++c.info.interrupts;
    const uint64_t status = host.mmio_read64(reg(c, hsi::NETDMA_CHAN_STATUS));
    if ((status & hsi::NETDMA_STATUS_MASK) == hsi::NETDMA_STATUS_HALTED) {
        const auto err = static_cast<uint32_t>(host.mmio_read64(reg(c, hsi::NETDMA_CHAN_ERROR)));
        if (err != hsi::NETDMA_ERR_NONE) {
            c.info.last_error = err;
            ++counters.errors_seen;
            host.mmio_write32(reg(c, hsi::NETDMA_CHAN_ERROR), err);  // write 1s to clear
            c.started = false;
        }
    }
    PHYSICAL_ADDRESS pa{};
    pa.QuadPart = static_cast<LONGLONG>(status & ~hsi::NETDMA_STATUS_MASK);
    ULONG cpu = c.info.cpu;
    PVOID handle = c.netdma_handle;
    NetDmaIsr(handle, pa, &cpu);
    // One DPC queue on this host: the CPU NetDMA chose is where a real kernel would run it.
    host.queue_dpc([this, &c, handle, pa, alive = alive] {
        if (*alive && c.allocated && c.netdma_handle == handle) {
            ++counters.dpcs;
            NetDmaInterruptDpc(handle, pa);
        }
    });
}

NTSTATUS add_and_start_provider(host_system& host, const provider_params& params, provider** out) {
    if (out == nullptr) {
        return STATUS_INVALID_PARAMETER;
    }
    const uint64_t caps = host.mmio_read64(hsi::REG_NETDMA_CAPS);
    const auto channels = static_cast<uint32_t>(caps & 0xff);
    if (channels == 0) {
        return STATUS_NOT_SUPPORTED;
    }
    if (params.first_vector == hsi::MSIX_VECTOR_ASYNC ||
        params.first_vector + channels > hsi::MSIX_VECTORS) {
        return STATUS_INVALID_PARAMETER;
    }
    auto* p = new provider(host, params);
    p->address_bits = static_cast<uint32_t>((caps >> 8) & 0xff);
    p->max_transfer = static_cast<uint32_t>(caps >> 32);
    p->vendor = static_cast<uint32_t>((host.mmio_read64(hsi::REG_DEVICE_ID) >> 16) & 0xffff);
    p->channels.resize(channels);
    for (uint32_t i = 0; i < channels; ++i) {
        hw_channel& c = p->channels[i];
        c.owner = p;
        c.info.index = i;
        c.info.vector = params.first_vector + i;
        host.connect_interrupt(c.info.vector, [p, &c] { p->isr(c); });
    }

    NET_DMA_PROVIDER_CHARACTERISTICS& ch = p->chars;
    ch.MajorVersion = NET_DMA_PROVIDER_REVISION_2;
    ch.MinorVersion = 0;
    ch.Size = sizeof(NET_DMA_PROVIDER_CHARACTERISTICS);
    ch.Flags = 0;  // no DCA (context changes are accepted, the hint is not modelled)
    ch.PhysicalDeviceObject = nullptr;
    ch.MaxDmaChannelCount = channels;
    ch.SetDmaChannelCpuAffinity = set_affinity;
    ch.AllocateDmaChannel = allocate_channel_handler;
    ch.FreeDmaChannel = free_channel_handler;
    ch.StartDma = start_handler;
    ch.SuspendDma = suspend_handler;
    ch.ResumeDma = resume_handler;
    ch.AbortDma = abort_handler;
    ch.AppendDma = append_handler;
    ch.ResetChannel = reset_handler;
    ch.FriendlyName.Length = static_cast<USHORT>(p->friendly_name.size() * sizeof(char16_t));
    ch.FriendlyName.MaximumLength = ch.FriendlyName.Length;
    ch.FriendlyName.Buffer = p->friendly_name.data();

    const NTSTATUS st = NetDmaRegisterProvider(p, &p->netdma_handle, &ch);
    if (!NT_SUCCESS(st)) {
        for (const hw_channel& c : p->channels) {
            host.connect_interrupt(c.info.vector, [] {});
        }
        delete p;
        return st;
    }
    NET_DMA_PROVIDER_ATTRIBUTES attrs{};
    attrs.MajorHwVersion = 1;
    attrs.MinorHwVersion = 0;
    attrs.Size = sizeof(attrs);
    attrs.Flags = 0;
    attrs.VendorId = p->vendor;
    attrs.DmaChannelCount = channels;
    attrs.MaximumTransferSize = p->max_transfer;
    attrs.MaximumAddressSpace.QuadPart =
        static_cast<LONGLONG>(p->address_bits >= 64 ? ~0ull : (1ull << p->address_bits) - 1);
    NetDmaProviderStart(p->netdma_handle, &attrs);
    *out = p;
    return STATUS_SUCCESS;
}

void remove_provider(provider* p) {
    if (p == nullptr) {
        return;
    }
    NetDmaProviderStop(p->netdma_handle);
    NetDmaDeregisterProvider(p->netdma_handle);
    for (hw_channel& c : p->channels) {
        if (c.allocated) {
            free_channel_handler(&c);  // NetDMA freed them all; be safe
        }
        p->host.connect_interrupt(c.info.vector, [] {});  // a message still on its way
    }
    *p->alive = false;
    delete p;
}

void notify_power(provider* p, bool up) {
    if (p == nullptr) {
        return;
    }
    NET_DMA_PNP_NOTIFICATION n{};
    n.StructureRevision = NET_DMA_PNP_NOTIFICATION_REVISION_1;
    n.StructureSize = sizeof(n);
    n.NotificationCode =
        up ? NetDmaNotificationProviderPowerUp : NetDmaNotificationProviderPowerDown;
    n.Buffer = nullptr;
    n.BufferLength = 0;
    NetDmaPnPEventNotify(p->netdma_handle, &n);
}

provider_counters get_provider_counters(const provider* p) {
    return p != nullptr ? p->counters : provider_counters{};
}

channel_info get_channel_info(PVOID provider_channel_context) {
    const hw_channel* c = as_channel(provider_channel_context);
    return c != nullptr ? c->info : channel_info{};
}

}  // namespace rnic::ndk::netdma
