// SPDX-License-Identifier: Apache-2.0
// NetDMA provider ABI (netdma.h) for the shim: descriptors, channel parameters, callbacks, x64.
//
// Mirrors /work/shared/reference/ndkpi.md section 10: a memory-to-memory DMA engine (the
// "provider", e.g. Intel I/OAT) registers with NetDMA, which allocates channels and hands them
// linked lists of 64-byte NET_DMA_DESCRIPTORs; completion is reported through a 64-bit completion
// word (descriptor PA | NET_DMA_TRANSFER_STATUS in the low 3 bits) and/or channel interrupts.
// Covers NetDMA 1.0/1.1/2.0 including the Windows 7 (processor group) additions.
//
// The NetDma* functions are declarations only (the kernel exports of NetDMA); the shim's NetDMA
// implementation defines them at global scope with C linkage. Windows 8+ dropped NetDMA and the
// WDK header refuses to compile there without ENABLE_LEGACY_NETDMA; that guard does not apply
// here. ABI pins (descriptor 64 bytes and every offset, structure layouts) are static_asserts.
#pragma once

#include <cstddef>

#include "ndk_shim/ndk_types.h"
#include "ndk_shim/ntstatus.h"

// =============================================================================================
// Descriptor control flags (ref 10.4)
// =============================================================================================
inline constexpr ULONG NET_DMA_INTERRUPT_ON_COMPLETION = 0x00000001;  // channel IRQ after this one
inline constexpr ULONG NET_DMA_SOURCE_NO_SNOOP = 0x00000002;          // non-coherent source read
inline constexpr ULONG NET_DMA_DESTINATION_NO_SNOOP = 0x00000004;     // non-coherent dest write
inline constexpr ULONG NET_DMA_STATUS_UPDATE_ON_COMPLETION = 0x00000008;  // write completion word
inline constexpr ULONG NET_DMA_SERIALIZE_TRANSFER = 0x00000010;  // fence: writes done before next
inline constexpr ULONG NET_DMA_NULL_TRANSFER = 0x00000020;       // no data movement
// NetDMA 2.0
inline constexpr ULONG NET_DMA_SOURCE_PAGE_BREAK = 0x00000040;  // continue at NextSourceAddress
inline constexpr ULONG NET_DMA_DESTINATION_PAGE_BREAK = 0x00000080;  // ... NextDestinationAddress
inline constexpr ULONG NET_DMA_DESTINATION_DCA_ENABLE = 0x00000200;  // DCA hint to channel's CPU
// ControlFlags of a NET_DMA_OP_TYPE_CONTEXT_CHANGE descriptor
inline constexpr ULONG NET_DMA_DCA_CONTEXT_CHANGE = 0x00000001;
// Operation type (high byte of ControlFlags)
inline constexpr ULONG NET_DMA_OP_TYPE_STANDARD_DMA = 0x00000000;
inline constexpr ULONG NET_DMA_OP_TYPE_CONTEXT_CHANGE = 0xFF000000;  // DCAContext8 = APIC id

// =============================================================================================
// Completion word status (ref 10.3): low 3 bits of the completed-descriptor address.
// =============================================================================================
inline constexpr ULONG NET_DMA_TRANSFER_STATUS_MASK = 0x00000007;

typedef enum _NET_DMA_TRANSFER_STATUS : int {
    NetDmaTransferStatusActive = 0,   // done, more descriptors pending
    NetDmaTransferStatusIdle = 1,     // done, it was the last pending descriptor
    NetDmaTransferStatusSuspend = 2,  // suspend completed; channel halted
    NetDmaTransferStatusHalted = 3,   // aborted / error
    NetDmaTransferStatusArmed = 4     // first descriptor not complete yet; address invalid
} NET_DMA_TRANSFER_STATUS, *PNET_DMA_TRANSFER_STATUS;
static_assert(sizeof(NET_DMA_TRANSFER_STATUS) == 4);

// =============================================================================================
// Descriptor (ref 10.4): 64 bytes, 64-bit aligned, chained by physical address.
// =============================================================================================
typedef struct _NET_DMA_DESCRIPTOR {
    __extension__ union {    // unnamed types in an anonymous union: extension, as in the WDK
        ULONG TransferSize;  // bytes to move
        // DCA context = APIC id of the target CPU (context-change descriptors)
        struct {
            ULONG DCAContext : 32;
        } DCAContext32;
        struct {
            ULONG DCAContext : 16;
            ULONG Reserved : 16;
        } DCAContext16;
        struct {
            ULONG DCAContext : 8;
            ULONG Reserved : 24;
        } DCAContext8;
    };
    ULONG ControlFlags;  // NET_DMA_* flags | NET_DMA_OP_TYPE_*
    PHYSICAL_ADDRESS SourceAddress;
    PHYSICAL_ADDRESS DestinationAddress;
    PHYSICAL_ADDRESS NextDescriptor;  // 2.0: never NULL-terminated; holds the next Append PA
    union {
        ULONG64 Reserved1;                   // provider scratch (1.x)
        PHYSICAL_ADDRESS NextSourceAddress;  // 2.0 page break: second source page
    };
    union {
        ULONG64 Reserved2;                        // provider scratch (1.x)
        PHYSICAL_ADDRESS NextDestinationAddress;  // 2.0 page break: second destination page
    };
    ULONG64 UserContext1;  // NetDMA / client private
    ULONG64 UserContext2;  // NetDMA / client private
} NET_DMA_DESCRIPTOR, *PNET_DMA_DESCRIPTOR;
static_assert(sizeof(NET_DMA_DESCRIPTOR) == 64 && alignof(NET_DMA_DESCRIPTOR) == 8);
static_assert(offsetof(NET_DMA_DESCRIPTOR, TransferSize) == 0);
static_assert(offsetof(NET_DMA_DESCRIPTOR, DCAContext32) == 0);
static_assert(offsetof(NET_DMA_DESCRIPTOR, DCAContext16) == 0);
static_assert(offsetof(NET_DMA_DESCRIPTOR, DCAContext8) == 0);
static_assert(sizeof(NET_DMA_DESCRIPTOR::DCAContext8) == 4);
static_assert(offsetof(NET_DMA_DESCRIPTOR, ControlFlags) == 4);
static_assert(offsetof(NET_DMA_DESCRIPTOR, SourceAddress) == 8);
static_assert(offsetof(NET_DMA_DESCRIPTOR, DestinationAddress) == 16);
static_assert(offsetof(NET_DMA_DESCRIPTOR, NextDescriptor) == 24);
static_assert(offsetof(NET_DMA_DESCRIPTOR, Reserved1) == 32);
static_assert(offsetof(NET_DMA_DESCRIPTOR, NextSourceAddress) == 32);
static_assert(offsetof(NET_DMA_DESCRIPTOR, Reserved2) == 40);
static_assert(offsetof(NET_DMA_DESCRIPTOR, NextDestinationAddress) == 40);
static_assert(offsetof(NET_DMA_DESCRIPTOR, UserContext1) == 48);
static_assert(offsetof(NET_DMA_DESCRIPTOR, UserContext2) == 56);

// =============================================================================================
// Channel CPU affinity and channel parameters (ref 10.2, 10.3)
// =============================================================================================
typedef struct _NET_DMA_CHANNEL_CPU_AFFINITY {
    ULONG DmaChannel;
    ULONG CpuNumber;
} NET_DMA_CHANNEL_CPU_AFFINITY, *PNET_DMA_CHANNEL_CPU_AFFINITY;
static_assert(sizeof(NET_DMA_CHANNEL_CPU_AFFINITY) == 8);

inline constexpr USHORT NET_DMA_CHANNEL_REVISION_1 = 1;  // Vista
inline constexpr USHORT NET_DMA_CHANNEL_REVISION_2 = 2;  // Windows 7: ProcessorAffinityMaskEx

typedef struct _NET_DMA_CHANNEL_PARAMETERS {
    USHORT Revision;                             // NET_DMA_CHANNEL_REVISION_*
    USHORT Size;                                 // SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_*
    ULONG Flags;                                 // 0
    PVOID CompletionVirtualAddress;              // where the engine writes the completion word
    PHYSICAL_ADDRESS CompletionPhysicalAddress;  // same, as the engine addresses it
    ULONG ProcessorAffinityMask;                 // CPUs for the channel (deprecated in Win7)
    ULONG ChannelPriority;                       // lower = lower priority; Vista sets 0
    ULONG CpuNumber;                         // OUT: CPU the provider associated the channel with
    GROUP_AFFINITY ProcessorAffinityMaskEx;  // Win7+
} NET_DMA_CHANNEL_PARAMETERS, *PNET_DMA_CHANNEL_PARAMETERS;
static_assert(offsetof(NET_DMA_CHANNEL_PARAMETERS, Revision) == 0);
static_assert(offsetof(NET_DMA_CHANNEL_PARAMETERS, Size) == 2);
static_assert(offsetof(NET_DMA_CHANNEL_PARAMETERS, Flags) == 4);
static_assert(offsetof(NET_DMA_CHANNEL_PARAMETERS, CompletionVirtualAddress) == 8);
static_assert(offsetof(NET_DMA_CHANNEL_PARAMETERS, CompletionPhysicalAddress) == 16);
static_assert(offsetof(NET_DMA_CHANNEL_PARAMETERS, ProcessorAffinityMask) == 24);
static_assert(offsetof(NET_DMA_CHANNEL_PARAMETERS, ChannelPriority) == 28);
static_assert(offsetof(NET_DMA_CHANNEL_PARAMETERS, CpuNumber) == 32);
static_assert(offsetof(NET_DMA_CHANNEL_PARAMETERS, ProcessorAffinityMaskEx) == 40);
static_assert(sizeof(NET_DMA_CHANNEL_PARAMETERS) == 56);

inline constexpr USHORT SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_1 =
    RTL_SIZEOF_THROUGH_FIELD(NET_DMA_CHANNEL_PARAMETERS, CpuNumber);
inline constexpr USHORT SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_2 =
    RTL_SIZEOF_THROUGH_FIELD(NET_DMA_CHANNEL_PARAMETERS, ProcessorAffinityMaskEx);
static_assert(SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_1 == 36);
static_assert(SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_2 == 56);

// =============================================================================================
// Provider callbacks (ref 10.2). All but the affinity handler run at IRQL <= DISPATCH_LEVEL.
// Returns: STATUS_SUCCESS / STATUS_INSUFFICIENT_RESOURCES / STATUS_UNSUCCESSFUL.
// =============================================================================================
// PASSIVE; called from inside NetDmaRegisterProvider. CpuAffinityArraySize is in bytes.
typedef NTSTATUS (*DMA_CHANNELS_CPU_AFFINITY_HANDLER)(
    _In_ PVOID ProviderContext, _In_ PNET_DMA_CHANNEL_CPU_AFFINITY CpuAffinityArray,
    _In_ ULONG CpuAffinityArraySize);
// Must write the chosen CPU to ChannelParameters->CpuNumber.
typedef NTSTATUS (*DMA_CHANNEL_ALLOCATE_HANDLER)(_In_ PVOID ProviderContext,
                                                 _In_ PNET_DMA_CHANNEL_PARAMETERS ChannelParameters,
                                                 _In_ PVOID NetDmaChannelHandle,
                                                 _Outptr_ PVOID* pProviderChannelContext);
// Nothing is outstanding on the channel; no further calls for it.
typedef VOID (*DMA_CHANNEL_FREE_HANDLER)(_In_ PVOID ProviderChannelContext);
// Finish the current descriptor, then load DescriptorPhysicalAddress (old NextDescriptor ignored).
// DescriptorCount exists since NetDMA 2.0.
typedef NTSTATUS (*DMA_START_HANDLER)(_In_ PVOID ProviderChannelContext,
                                      _In_ PNET_DMA_DESCRIPTOR DescriptorVirtualAddress,
                                      _In_ PHYSICAL_ADDRESS DescriptorPhysicalAddress,
                                      _In_ ULONG DescriptorCount);
// Finish the current descriptor, report Suspend, return the last processed descriptor's PA.
typedef NTSTATUS (*DMA_SUSPEND_HANDLER)(_In_ PVOID ProviderChannelContext,
                                        _Outptr_ PPHYSICAL_ADDRESS* pLastDescriptor);
// Reload the last processed descriptor to pick up a new NextDescriptor.
typedef NTSTATUS (*DMA_RESUME_HANDLER)(_In_ PVOID ProviderChannelContext);
// Stop at once without completing the current descriptor; report Halted.
typedef NTSTATUS (*DMA_ABORT_HANDLER)(_In_ PVOID ProviderChannelContext);
// The old tail's NextDescriptor already points at the new chain; re-read it if parked on it.
typedef NTSTATUS (*DMA_APPEND_HANDLER)(_In_ PVOID ProviderChannelContext,
                                       _In_ PNET_DMA_DESCRIPTOR DescriptorVirtualAddress,
                                       _In_ PHYSICAL_ADDRESS DescriptorPhysicalAddress,
                                       _In_ ULONG DescriptorCount);
// Like abort, then back to the just-allocated state; submitted descriptors are off limits.
typedef NTSTATUS (*DMA_RESET_HANDLER)(_In_ PVOID ProviderChannelContext);

// =============================================================================================
// Registration (ref 10.1)
// =============================================================================================
inline constexpr UCHAR NET_DMA_PROVIDER_REVISION_1 = 1;
inline constexpr UCHAR NET_DMA_PROVIDER_REVISION_2 = 2;

// NET_DMA_PROVIDER_CHARACTERISTICS.Flags (0 for NetDMA 1.0/1.1)
inline constexpr ULONG NET_DMA_PROVIDER_CHARACTERISTICS_DCA_SUPPORTED = 0x00000001;  // 2.0+
inline constexpr ULONG NET_DMA_PROVIDER_SUPPORTS_PROC_GROUPS = 0x00000002;           // Win7+

typedef struct _NET_DMA_PROVIDER_CHARACTERISTICS {
    UCHAR MajorVersion;
    UCHAR MinorVersion;
    USHORT Size;  // sizeof(NET_DMA_PROVIDER_CHARACTERISTICS)
    ULONG Flags;
    PDEVICE_OBJECT PhysicalDeviceObject;
    ULONG MaxDmaChannelCount;
    DMA_CHANNELS_CPU_AFFINITY_HANDLER SetDmaChannelCpuAffinity;
    DMA_CHANNEL_ALLOCATE_HANDLER AllocateDmaChannel;
    DMA_CHANNEL_FREE_HANDLER FreeDmaChannel;
    DMA_START_HANDLER StartDma;
    DMA_SUSPEND_HANDLER SuspendDma;  // optional (NULL)
    DMA_RESUME_HANDLER ResumeDma;    // optional; required if SuspendDma is given
    DMA_ABORT_HANDLER AbortDma;      // optional
    DMA_APPEND_HANDLER AppendDma;
    DMA_RESET_HANDLER ResetChannel;  // optional
    UNICODE_STRING FriendlyName;
} NET_DMA_PROVIDER_CHARACTERISTICS, *PNET_DMA_PROVIDER_CHARACTERISTICS;
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, MajorVersion) == 0);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, MinorVersion) == 1);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, Size) == 2);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, Flags) == 4);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, PhysicalDeviceObject) == 8);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, MaxDmaChannelCount) == 16);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, SetDmaChannelCpuAffinity) == 24);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, AllocateDmaChannel) == 32);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, FreeDmaChannel) == 40);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, StartDma) == 48);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, SuspendDma) == 56);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, ResumeDma) == 64);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, AbortDma) == 72);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, AppendDma) == 80);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, ResetChannel) == 88);
static_assert(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, FriendlyName) == 96);
static_assert(sizeof(NET_DMA_PROVIDER_CHARACTERISTICS) == 112);

// Passed to NetDmaProviderStart when the device starts.
typedef struct _NET_DMA_PROVIDER_ATTRIBUTES {
    UCHAR MajorHwVersion;
    UCHAR MinorHwVersion;
    USHORT Size;     // sizeof(NET_DMA_PROVIDER_ATTRIBUTES)
    ULONG Flags;     // 0
    ULONG VendorId;  // PCI vendor id
    ULONG DmaChannelCount;
    ULONG MaximumTransferSize;             // >= 4 KiB
    PHYSICAL_ADDRESS MaximumAddressSpace;  // highest addressable physical address
} NET_DMA_PROVIDER_ATTRIBUTES, *PNET_DMA_PROVIDER_ATTRIBUTES;
static_assert(offsetof(NET_DMA_PROVIDER_ATTRIBUTES, Flags) == 4);
static_assert(offsetof(NET_DMA_PROVIDER_ATTRIBUTES, VendorId) == 8);
static_assert(offsetof(NET_DMA_PROVIDER_ATTRIBUTES, DmaChannelCount) == 12);
static_assert(offsetof(NET_DMA_PROVIDER_ATTRIBUTES, MaximumTransferSize) == 16);
static_assert(offsetof(NET_DMA_PROVIDER_ATTRIBUTES, MaximumAddressSpace) == 24);
static_assert(sizeof(NET_DMA_PROVIDER_ATTRIBUTES) == 32);

// =============================================================================================
// PnP / power notification (NetDMA 1.1+, ref 10.4)
// =============================================================================================
typedef enum _NET_DMA_PNP_NOTIFICATION_CODE : int {
    NetDmaNotificationProviderRegistered = 1,  // NetDMA -> clients only
    NetDmaNotificationProviderArrival = 2,     // NetDMA -> clients only
    NetDmaNotificationProviderRemoval = 3,     // NetDMA -> clients only
    NetDmaNotificationChannelArrival = 4,      // NetDMA -> clients only
    NetDmaNotificationProviderPowerDown = 5,   // provider, before going to D3
    NetDmaNotificationProviderPowerUp = 6,     // provider, after returning to D0
    NetDmaNotificationMax = 7
} NET_DMA_PNP_NOTIFICATION_CODE, *PNET_DMA_PNP_NOTIFICATION_CODE;

inline constexpr ULONG NET_DMA_PNP_NOTIFICATION_REVISION_1 = 1;

// Buffer NULL and BufferLength 0 for the power events.
typedef struct _NET_DMA_PNP_NOTIFICATION {
    ULONG StructureRevision;  // NET_DMA_PNP_NOTIFICATION_REVISION_1
    ULONG StructureSize;
    NET_DMA_PNP_NOTIFICATION_CODE NotificationCode;
    PVOID Buffer;
    ULONG BufferLength;
} NET_DMA_PNP_NOTIFICATION, *PNET_DMA_PNP_NOTIFICATION;
static_assert(offsetof(NET_DMA_PNP_NOTIFICATION, StructureSize) == 4);
static_assert(offsetof(NET_DMA_PNP_NOTIFICATION, NotificationCode) == 8);
static_assert(offsetof(NET_DMA_PNP_NOTIFICATION, Buffer) == 16);
static_assert(offsetof(NET_DMA_PNP_NOTIFICATION, BufferLength) == 24);
static_assert(sizeof(NET_DMA_PNP_NOTIFICATION) == 32);

// =============================================================================================
// NetDMA services called by providers (ref 10.1, 10.2). Declarations only.
// =============================================================================================
extern "C" {

// PASSIVE, from AddDevice (MSI-X vectors are chosen before START). Calls SetDmaChannelCpuAffinity
// for MaxDmaChannelCount channels before returning. Returns the documented statuses only:
// STATUS_SUCCESS; STATUS_INSUFFICIENT_RESOURCES (the documents' STATUS_RESOURCES: the affinity
// handler said so); STATUS_UNSUCCESSFUL (a NULL handle pointer, characteristics that are too
// short, of another revision or missing a mandatory handler, or any other refusal of the
// affinity handler).
NTSTATUS NetDmaRegisterProvider(_In_ PVOID ProviderContext, _In_ PVOID* pNetDmaProviderHandle,
                                _In_ PNET_DMA_PROVIDER_CHARACTERISTICS ProviderCharacteristics);
// PASSIVE, while handling IRP_MN_REMOVE_DEVICE.
VOID NetDmaDeregisterProvider(_In_ PVOID NetDmaProviderHandle);
// While handling IRP_MN_START_DEVICE: all channels are initialised and ready.
VOID NetDmaProviderStart(_In_ PVOID NetDmaProviderHandle,
                         _In_ PNET_DMA_PROVIDER_ATTRIBUTES ProviderAttributes);
// REMOVE or STOP: waits for outstanding DMA and frees all channels before returning.
VOID NetDmaProviderStop(_In_ PVOID NetDmaProviderHandle);
// DIRQL, from the provider's ISR with the PA of the last completed descriptor; NetDMA writes the
// CPU the provider must queue its DPC to.
VOID NetDmaIsr(_In_ PVOID NetDmaChannelHandle, _In_ PHYSICAL_ADDRESS DmaDescriptor,
               _Out_ PULONG pCpuNumber);
// DISPATCH_LEVEL, from the provider's DPC. DmaDescriptor is optional (zero if not a completion).
VOID NetDmaInterruptDpc(_In_ PVOID NetDmaChannelHandle, _In_opt_ PHYSICAL_ADDRESS DmaDescriptor);
// High 16 bits major, low 16 bits minor. Absent in NetDMA 1.0 (providers look it up dynamically).
UINT NetDmaGetVersion(VOID);
// NetDMA 1.1+, PASSIVE: provider power events (NetDmaNotificationProviderPowerDown/Up).
VOID NetDmaPnPEventNotify(_In_ PVOID NetDmaProviderHandle, _In_ PNET_DMA_PNP_NOTIFICATION PnPEvent);

}  // extern "C"
