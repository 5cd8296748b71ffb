// SPDX-License-Identifier: Apache-2.0
// The NetDMA side of the NetDMA interface (ndkpi.md 10): what Windows' NetDMA component does for
// providers (NetDmaRegisterProvider, NetDmaProviderStart/Stop, NetDmaIsr, NetDmaInterruptDpc,
// ...; the C exports declared in ndk_shim/netdma.h are defined in netdma_framework.cpp) and, for
// consumer code, NetDMA's client view of a channel: allocate it with a CPU affinity, hand it
// descriptor chains, see completions.
//
// Threads: like the NDK provider, every call runs in the caller's SC_THREAD (consumer code or
// the host's DPC thread) and may wait() (MMIO, CPU time). Completion callbacks run in the
// host's DPC thread, from NetDmaInterruptDpc.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ndk_shim/host/host_system.h"
#include "ndk_shim/netdma.h"

namespace rnic::ndk::netdma {

class channel;

// NetDMA's record of one registered provider (the NetDmaProviderHandle points at it).
struct provider_record {
    PVOID context = nullptr;                             // ProviderContext
    NET_DMA_PROVIDER_CHARACTERISTICS chars{};            // as registered
    std::vector<NET_DMA_CHANNEL_CPU_AFFINITY> affinity;  // what NetDMA handed the provider
    bool started = false;                                // between NetDmaProviderStart and ...Stop
    NET_DMA_PROVIDER_ATTRIBUTES attributes{};            // from NetDmaProviderStart
    std::vector<NET_DMA_PNP_NOTIFICATION_CODE> pnp_events;  // NetDmaPnPEventNotify, in order
    std::vector<channel*> channels;                         // allocated, not freed
};

// NetDMA's view of the machine: channel i of a provider gets CPU i % processors (default 4).
void set_processor_count(ULONG processors);
ULONG processor_count();
// Registered providers, oldest first.
std::vector<provider_record*> providers();
// What NetDmaGetVersion returns: NetDMA 2.0 (processor-group aware, as on Windows 7).
inline constexpr UINT NETDMA_VERSION = 2u << 16 | 0u;

// A completion reported to the client: the descriptor NetDmaInterruptDpc was given and the
// channel's completion word as the DPC read it (0 if the channel has none).
using completion_callback =
    std::function<void(PHYSICAL_ADDRESS descriptor, ULONG64 completion_word)>;

struct channel_request {
    USHORT revision = NET_DMA_CHANNEL_REVISION_2;  // 1: ProcessorAffinityMask (Vista)
    ULONG processor_mask = 0;                      // CPUs wanted; 0 = any
    ULONG priority = 0;                            // ChannelPriority (higher wins)
    bool completion_word = true;        // allocate a completion word for the provider to write
    completion_callback on_completion;  // from NetDmaInterruptDpc
};

// One allocated channel: the NetDmaChannelHandle the provider got. Entry points call the
// provider's handlers exactly as NetDMA does (descriptor PAs from host_system::phys).
class channel {
public:
    channel(host_system& host, provider_record& provider, const channel_request& request);
    ~channel();
    channel(const channel&) = delete;
    channel& operator=(const channel&) = delete;

    // DmaStartHandler / DmaAppendHandler. `count` descriptors from `first` (NetDMA 2.0); 0: the
    // list is NULL-terminated (NetDMA 1.x; to append, patch the old tail's NextDescriptor first).
    NTSTATUS start(NET_DMA_DESCRIPTOR* first, ULONG count);
    NTSTATUS append(NET_DMA_DESCRIPTOR* first, ULONG count);
    // Optional handlers: STATUS_NOT_SUPPORTED when the provider has none.
    NTSTATUS suspend(PHYSICAL_ADDRESS* last_descriptor);
    NTSTATUS resume();
    NTSTATUS abort();
    NTSTATUS reset();

    // The completion word (0 when the channel has none).
    ULONG64 completion_word() const;
    NET_DMA_TRANSFER_STATUS transfer_status() const {
        return static_cast<NET_DMA_TRANSFER_STATUS>(completion_word() &
                                                    NET_DMA_TRANSFER_STATUS_MASK);
    }
    // Spin (simulated time) until the completion word shows `status` (and `descriptor`, when
    // not 0); false after timeout_ns.
    bool wait_for(NET_DMA_TRANSFER_STATUS status, uint64_t descriptor = 0,
                  double timeout_ns = 10e6);

    const NET_DMA_CHANNEL_PARAMETERS& parameters() const { return m_params; }
    ULONG cpu() const { return m_params.CpuNumber; }  // as the provider chose it
    PVOID provider_channel() const { return m_provider_channel; }
    // Descriptors were handed to the provider and not taken back by Abort/Reset.
    bool submitted() const { return m_submitted; }
    provider_record& provider() const { return m_provider; }
    host_system& host() const { return m_host; }

    // NetDmaIsr / NetDmaInterruptDpc bookkeeping.
    struct counters {
        uint64_t isrs = 0;
        uint64_t dpcs = 0;
        uint64_t last_isr_descriptor = 0;
        uint64_t last_dpc_descriptor = 0;
    };
    const counters& get_counters() const { return m_counters; }

    // Called by the NetDMA exports (not by clients).
    NTSTATUS open();
    void on_isr(PHYSICAL_ADDRESS descriptor, PULONG cpu);
    void on_dpc(PHYSICAL_ADDRESS descriptor);
    void close();  // FreeDmaChannel

private:
    host_system& m_host;
    provider_record& m_provider;
    channel_request m_request;
    NET_DMA_CHANNEL_PARAMETERS m_params{};
    volatile ULONG64* m_completion = nullptr;  // the completion word (host memory)
    PVOID m_provider_channel = nullptr;
    bool m_open = false;
    bool m_submitted = false;  // descriptors handed over since allocate / abort / reset
    counters m_counters;
};

// Allocates a channel of `provider` (DmaChannelAllocateHandler). The provider's status is
// returned as is (STATUS_INSUFFICIENT_RESOURCES when every channel is taken).
NTSTATUS allocate_channel(host_system& host, provider_record* provider,
                          const channel_request& request, channel** out);
// DmaChannelFreeHandler; the caller makes sure nothing is outstanding (NetDMA's rule).
void free_channel(channel* c);

}  // namespace rnic::ndk::netdma
