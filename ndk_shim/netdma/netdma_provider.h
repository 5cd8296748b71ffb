// SPDX-License-Identifier: Apache-2.0
// The NetDMA provider driver of the rnicsim RNIC: exposes the NIC's copy channels (hw/netdma)
// to NetDMA (ndkpi.md 10). It reaches the NIC only through hw/hsi/hsi.h: the NetDMA register
// window of BAR0, the MSI-X table, one MSI-X vector per channel. Descriptors and completion
// words stay where NetDMA put them (host memory); the NIC reads and writes them by DMA.
//
// Threads: every handler runs in the caller's SC_THREAD and may wait() (MMIO). SUSPEND, ABORT,
// RESET and channel allocation/free wait until the NIC acknowledges the command (reads of the
// channel's CMD register). The channel ISRs run in the host's DPC thread.
#pragma once

#include <cstdint>

#include "ndk_shim/host/host_system.h"
#include "ndk_shim/netdma.h"

namespace rnic::ndk::netdma {

struct provider_params {
    uint32_t first_vector = 1;         // MSI-X vector of channel 0 (vector 0: the NDK adapter)
    double command_timeout_ns = 10e6;  // a command not acknowledged by then fails
};

struct provider;  // the driver's device extension

// AddDevice + IRP_MN_START_DEVICE: reads REG_NETDMA_CAPS, registers with NetDMA (which calls
// SetDmaChannelCpuAffinity for every channel; the driver points channel i's MSI-X vector at that
// CPU), then calls NetDmaProviderStart with the hardware's attributes. From an SC_THREAD.
// STATUS_NOT_SUPPORTED when the NIC has no NetDMA channels; STATUS_INVALID_PARAMETER when the
// vectors do not fit the MSI-X table; a NetDmaRegisterProvider failure is returned as is.
NTSTATUS add_and_start_provider(host_system& host, const provider_params& params, provider** out);
// IRP_MN_REMOVE_DEVICE: NetDmaProviderStop (waits for outstanding DMA, frees every channel),
// NetDmaDeregisterProvider, then releases the driver's state.
void remove_provider(provider* p);
// Power events to NetDMA (NetDmaPnPEventNotify): before D3 (`up` false) and after D0.
void notify_power(provider* p, bool up);

struct provider_counters {
    uint64_t commands = 0;    // channel commands written
    uint64_t interrupts = 0;  // channel ISR runs
    uint64_t dpcs = 0;        // NetDmaInterruptDpc calls
    uint64_t allocations = 0;
    uint64_t frees = 0;
    uint64_t errors_seen = 0;  // ISRs that found the channel halted with CHAN_ERROR set
};
provider_counters get_provider_counters(const provider* p);

// What the driver knows about a channel (ProviderChannelContext from AllocateDmaChannel).
struct channel_info {
    uint32_t index = 0;       // hardware channel
    uint32_t vector = 0;      // its MSI-X vector
    ULONG cpu = 0;            // CPU its interrupt targets (from SetDmaChannelCpuAffinity)
    uint32_t last_error = 0;  // hsi::netdma_error the ISR read last (0: none)
    uint64_t interrupts = 0;  // ISR runs
};
channel_info get_channel_info(PVOID provider_channel_context);

}  // namespace rnic::ndk::netdma
