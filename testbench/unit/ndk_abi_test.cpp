// SPDX-License-Identifier: Apache-2.0
// ABI tests of the NDK shim headers: Windows base types, NTSTATUS, NDKPI and NetDMA layouts/values.
//
// Expected numbers are transcribed independently from /work/shared/reference/ndkpi.md (sections
// 1-4, 7.2, 9, 10), so a typo in a header shows up as a mismatch here. The headers also pin
// sizes and offsets with static_asserts; these tests repeat the key ones at run time and add
// what static_asserts in the headers cannot check: each dispatch member lands in the slot the
// reference documents when called, every NDK_FN_* has the documented parameter order, and
// C-style consumer and provider code written as in Microsoft's docs compiles and reaches the
// right function with the right arguments.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "ndk_shim/ndk_types.h"
#include "ndk_shim/ndkpi.h"
#include "ndk_shim/netdma.h"
#include "ndk_shim/ntstatus.h"

namespace {

// =============================================================================================
// Windows base types (ndk_types.h)
// =============================================================================================

TEST(WindowsTypes, ScalarSizesMatchWindowsX64) {
    EXPECT_EQ(sizeof(UCHAR), 1u);
    EXPECT_EQ(sizeof(BOOLEAN), 1u);
    EXPECT_EQ(sizeof(USHORT), 2u);
    EXPECT_EQ(sizeof(CSHORT), 2u);
    EXPECT_EQ(sizeof(WCHAR), 2u);
    EXPECT_EQ(sizeof(ULONG), 4u);  // 8 would be Linux `unsigned long`
    EXPECT_EQ(sizeof(LONG), 4u);
    EXPECT_EQ(sizeof(UINT32), 4u);
    EXPECT_EQ(sizeof(NTSTATUS), 4u);
    EXPECT_EQ(sizeof(ULONG64), 8u);
    EXPECT_EQ(sizeof(ULONGLONG), 8u);
    EXPECT_EQ(sizeof(SIZE_T), 8u);
    EXPECT_EQ(sizeof(ULONG_PTR), 8u);
    EXPECT_EQ(sizeof(PVOID), 8u);
    EXPECT_TRUE(std::is_signed_v<LONG>);
    EXPECT_TRUE(std::is_unsigned_v<ULONG>);
    EXPECT_TRUE(std::is_signed_v<NTSTATUS>);
    EXPECT_TRUE((std::is_same_v<SIZE_T, size_t>));
    EXPECT_TRUE((std::is_same_v<ULONG_PTR, uintptr_t>));
    EXPECT_TRUE((std::is_same_v<ULONG64, ULONGLONG>));  // one 64-bit type, as on Windows
    EXPECT_EQ(TRUE, 1);
    EXPECT_EQ(FALSE, 0);
    EXPECT_EQ(MAXULONG, 0xFFFFFFFFu);
    EXPECT_EQ(static_cast<ULONG>(MAXULONG) + 1u, 0u);  // wraps like a 32-bit ULONG
}

TEST(WindowsTypes, LargeIntegerPartsAliasQuadPart) {
    LARGE_INTEGER li;
    li.QuadPart = 0x1122334455667788LL;
    EXPECT_EQ(li.LowPart, 0x55667788u);
    EXPECT_EQ(li.HighPart, 0x11223344);
    EXPECT_EQ(li.u.LowPart, 0x55667788u);
    li.HighPart = -1;
    EXPECT_EQ(li.QuadPart, static_cast<LONGLONG>(0xFFFFFFFF55667788ULL));

    PHYSICAL_ADDRESS pa;
    pa.QuadPart = 0x000000ABCDEF1000LL;
    EXPECT_EQ(pa.LowPart, 0xCDEF1000u);
    EXPECT_EQ(pa.HighPart, 0xAB);
    EXPECT_EQ(sizeof(PHYSICAL_ADDRESS), 8u);
}

TEST(WindowsTypes, GuidGroupAffinityUnicodeStringLayouts) {
    EXPECT_EQ(sizeof(GUID), 16u);
    EXPECT_EQ(offsetof(GUID, Data2), 4u);
    EXPECT_EQ(offsetof(GUID, Data3), 6u);
    EXPECT_EQ(offsetof(GUID, Data4), 8u);
    EXPECT_EQ(sizeof(GROUP_AFFINITY), 16u);
    EXPECT_EQ(offsetof(GROUP_AFFINITY, Mask), 0u);
    EXPECT_EQ(offsetof(GROUP_AFFINITY, Group), 8u);
    EXPECT_EQ(offsetof(GROUP_AFFINITY, Reserved), 10u);
    EXPECT_EQ(sizeof(UNICODE_STRING), 16u);
    EXPECT_EQ(offsetof(UNICODE_STRING, Buffer), 8u);
}

TEST(WindowsTypes, SockaddrIsTheLinuxStruct) {
    EXPECT_TRUE((std::is_same_v<SOCKADDR, struct sockaddr>));
    EXPECT_TRUE((std::is_same_v<PSOCKADDR, struct sockaddr*>));
    EXPECT_EQ(sizeof(SOCKADDR), 16u);
    EXPECT_EQ(sizeof(SOCKADDR_IN), 16u);
    EXPECT_EQ(sizeof(SOCKADDR_IN6), 28u);
    EXPECT_EQ(sizeof(SOCKADDR_INET), 28u);
    SOCKADDR_INET addr{};
    addr.Ipv4.sin_family = AF_INET;
    EXPECT_EQ(addr.si_family, AF_INET);
}

TEST(WindowsTypes, PageMacros) {
    EXPECT_EQ(PAGE_SIZE, 4096);
    EXPECT_EQ(PAGE_SHIFT, 12);
    EXPECT_EQ(BYTE_OFFSET(0x12345), 0x345u);
    EXPECT_EQ(BYTE_OFFSET(reinterpret_cast<PVOID>(0x7000FFFull)), 0xFFFu);
    EXPECT_EQ(PAGE_ALIGN(0x12345), reinterpret_cast<PVOID>(0x12000));
    EXPECT_EQ(PAGE_ALIGN(0xFFFF800000001FFFull), reinterpret_cast<PVOID>(0xFFFF800000001000ull));
    EXPECT_EQ(ADDRESS_AND_SIZE_TO_SPAN_PAGES(0x1000, 0), 0u);
    EXPECT_EQ(ADDRESS_AND_SIZE_TO_SPAN_PAGES(0x1000, 1), 1u);
    EXPECT_EQ(ADDRESS_AND_SIZE_TO_SPAN_PAGES(0x1000, 0x1000), 1u);
    EXPECT_EQ(ADDRESS_AND_SIZE_TO_SPAN_PAGES(0x1001, 0x1000), 2u);
    EXPECT_EQ(ADDRESS_AND_SIZE_TO_SPAN_PAGES(0x1FFF, 2), 2u);
    EXPECT_EQ(ADDRESS_AND_SIZE_TO_SPAN_PAGES(0x10000FF0, 0x2020), 4u);
}

// Another layer with its own PAGE_SIZE (like rnic::hsi::PAGE_SIZE): must compile beside the
// Windows names, and the page macros must keep meaning x64 4 KiB pages inside it.
namespace other_layer {
constexpr uint32_t PAGE_SIZE = 8192;
constexpr ULONG offset_in_x64_page(ULONG_PTR va) {
    return BYTE_OFFSET(va);
}
constexpr SIZE_T x64_pages_spanned(ULONG_PTR va, SIZE_T len) {
    return ADDRESS_AND_SIZE_TO_SPAN_PAGES(va, len);
}
}  // namespace other_layer

TEST(WindowsTypes, PageMacrosIgnoreOtherLayersPageSize) {
    EXPECT_EQ(other_layer::PAGE_SIZE, 8192u);
    EXPECT_EQ(::PAGE_SIZE, 4096);
    EXPECT_EQ(other_layer::offset_in_x64_page(0x1FFF), 0xFFFu);
    EXPECT_EQ(other_layer::x64_pages_spanned(0x1000, 0x2000), 2u);
}

TEST(WindowsTypes, FieldOffsetAndContainingRecord) {
    EXPECT_EQ(FIELD_OFFSET(MDL, ByteCount), 40);
    EXPECT_TRUE((std::is_same_v<decltype(FIELD_OFFSET(MDL, ByteCount)), LONG>));
    EXPECT_EQ(RTL_FIELD_SIZE(MDL, StartVa), 8u);
    EXPECT_EQ(RTL_SIZEOF_THROUGH_FIELD(MDL, ByteCount), 44u);
    MDL mdl{};
    EXPECT_EQ(CONTAINING_RECORD(&mdl.ByteOffset, MDL, ByteOffset), &mdl);
}

TEST(WindowsTypes, NtStatusClassificationMacros) {
    EXPECT_TRUE(NT_SUCCESS(STATUS_SUCCESS));
    EXPECT_TRUE(NT_SUCCESS(STATUS_PENDING));  // PENDING is a success code
    EXPECT_FALSE(NT_SUCCESS(STATUS_BUFFER_OVERFLOW));
    EXPECT_TRUE(NT_WARNING(STATUS_BUFFER_OVERFLOW));
    EXPECT_FALSE(NT_ERROR(STATUS_BUFFER_OVERFLOW));
    EXPECT_TRUE(NT_ERROR(STATUS_CANCELLED));
    EXPECT_FALSE(NT_SUCCESS(STATUS_CONNECTION_INVALID));
    EXPECT_TRUE(NT_INFORMATION(static_cast<NTSTATUS>(0x40000001)));
    EXPECT_FALSE(NT_ERROR(STATUS_SUCCESS));
}

TEST(WindowsTypes, MdlLayoutAccessorsAndPfnArray) {
    EXPECT_EQ(sizeof(MDL), 48u);
    EXPECT_EQ(offsetof(MDL, Next), 0u);
    EXPECT_EQ(offsetof(MDL, Size), 8u);
    EXPECT_EQ(offsetof(MDL, MdlFlags), 10u);
    EXPECT_EQ(offsetof(MDL, AllocationProcessorNumber), 12u);
    EXPECT_EQ(offsetof(MDL, Reserved), 14u);
    EXPECT_EQ(offsetof(MDL, Process), 16u);
    EXPECT_EQ(offsetof(MDL, MappedSystemVa), 24u);
    EXPECT_EQ(offsetof(MDL, StartVa), 32u);
    EXPECT_EQ(offsetof(MDL, ByteCount), 40u);
    EXPECT_EQ(offsetof(MDL, ByteOffset), 44u);

    // One allocation: 48-byte header, then one PFN per spanned page (4 pages here).
    PVOID const va = reinterpret_cast<PVOID>(0x10000FF0ull);
    const SIZE_T length = 0x2020;
    const ULONG pages = static_cast<ULONG>(ADDRESS_AND_SIZE_TO_SPAN_PAGES(va, length));
    ASSERT_EQ(pages, 4u);
    std::vector<ULONG_PTR> storage((sizeof(MDL) + pages * sizeof(PFN_NUMBER)) / sizeof(ULONG_PTR));
    auto* mdl = reinterpret_cast<PMDL>(storage.data());
    mdl->Process = nullptr;
    mdl->MappedSystemVa = nullptr;
    MmInitializeMdl(mdl, va, length);

    EXPECT_EQ(mdl->Next, nullptr);
    EXPECT_EQ(mdl->Size, static_cast<CSHORT>(48 + 4 * 8));
    EXPECT_EQ(mdl->MdlFlags, 0);
    EXPECT_EQ(mdl->StartVa, reinterpret_cast<PVOID>(0x10000000ull));
    EXPECT_EQ(MmGetMdlByteOffset(mdl), 0xFF0u);
    EXPECT_EQ(MmGetMdlByteCount(mdl), 0x2020u);
    EXPECT_EQ(MmGetMdlVirtualAddress(mdl), va);

    PPFN_NUMBER pfns = MmGetMdlPfnArray(mdl);
    EXPECT_EQ(reinterpret_cast<PUCHAR>(pfns), reinterpret_cast<PUCHAR>(mdl) + 48);
    for (ULONG i = 0; i < pages; ++i) {
        pfns[i] = 0x5000 + i;
    }
    const MDL* const_mdl = mdl;
    EXPECT_EQ(MmGetMdlPfnArray(const_mdl)[3], 0x5003u);
    EXPECT_EQ(storage[6 + 3], 0x5003u);  // word 6 is the first PFN after the 48-byte header

    mdl->MdlFlags = MDL_PAGES_LOCKED | MDL_SOURCE_IS_NONPAGED_POOL;
    EXPECT_EQ(mdl->MdlFlags, 0x0006);
    EXPECT_EQ(MDL_MAPPED_TO_SYSTEM_VA, 0x0001);
    EXPECT_EQ(MDL_PARTIAL, 0x0010);
}

// =============================================================================================
// NTSTATUS (ntstatus.h)
// =============================================================================================

struct status_case {
    const char* name;
    NTSTATUS value;
    uint32_t expected;
};
#define STATUS_CASE(symbol, number) \
    status_case {                   \
#symbol, symbol, number     \
    }

// Reference section 7.2, transcribed column by column.
const status_case k_status_cases[] = {
    STATUS_CASE(STATUS_SUCCESS, 0x00000000u),
    STATUS_CASE(STATUS_TIMEOUT, 0x00000102u),
    STATUS_CASE(STATUS_PENDING, 0x00000103u),
    STATUS_CASE(STATUS_BUFFER_OVERFLOW, 0x80000005u),
    STATUS_CASE(STATUS_UNSUCCESSFUL, 0xC0000001u),
    STATUS_CASE(STATUS_NOT_IMPLEMENTED, 0xC0000002u),
    STATUS_CASE(STATUS_ACCESS_VIOLATION, 0xC0000005u),
    STATUS_CASE(STATUS_INVALID_HANDLE, 0xC0000008u),
    STATUS_CASE(STATUS_INVALID_PARAMETER, 0xC000000Du),
    STATUS_CASE(STATUS_NO_MEMORY, 0xC0000017u),
    STATUS_CASE(STATUS_BUFFER_TOO_SMALL, 0xC0000023u),
    STATUS_CASE(STATUS_INVALID_PARAMETER_MIX, 0xC0000030u),
    STATUS_CASE(STATUS_DATA_OVERRUN, 0xC000003Cu),
    STATUS_CASE(STATUS_DATA_ERROR, 0xC000003Eu),
    STATUS_CASE(STATUS_SHARING_VIOLATION, 0xC0000043u),
    STATUS_CASE(STATUS_INSUFFICIENT_RESOURCES, 0xC000009Au),
    STATUS_CASE(STATUS_DEVICE_NOT_READY, 0xC00000A3u),
    STATUS_CASE(STATUS_REQUEST_ABORTED, 0xC0000240u),
    STATUS_CASE(STATUS_IMPLEMENTATION_LIMIT, 0xC000042Bu),
    STATUS_CASE(STATUS_IO_TIMEOUT, 0xC00000B5u),
    STATUS_CASE(STATUS_NOT_SUPPORTED, 0xC00000BBu),
    STATUS_CASE(STATUS_INTERNAL_ERROR, 0xC00000E5u),
    STATUS_CASE(STATUS_CANCELLED, 0xC0000120u),
    STATUS_CASE(STATUS_REMOTE_DISCONNECT, 0xC000013Cu),
    STATUS_CASE(STATUS_REMOTE_RESOURCES, 0xC000013Du),
    STATUS_CASE(STATUS_INVALID_ADDRESS, 0xC0000141u),
    STATUS_CASE(STATUS_INVALID_DEVICE_STATE, 0xC0000184u),
    STATUS_CASE(STATUS_INVALID_BUFFER_SIZE, 0xC0000206u),
    STATUS_CASE(STATUS_TOO_MANY_ADDRESSES, 0xC0000209u),
    STATUS_CASE(STATUS_ADDRESS_ALREADY_EXISTS, 0xC000020Au),
    STATUS_CASE(STATUS_CONNECTION_DISCONNECTED, 0xC000020Cu),
    STATUS_CASE(STATUS_CONNECTION_RESET, 0xC000020Du),
    STATUS_CASE(STATUS_CONNECTION_REFUSED, 0xC0000236u),
    STATUS_CASE(STATUS_CONNECTION_INVALID, 0xC000023Au),
    STATUS_CASE(STATUS_NETWORK_UNREACHABLE, 0xC000023Cu),
    STATUS_CASE(STATUS_HOST_UNREACHABLE, 0xC000023Du),
    STATUS_CASE(STATUS_CONNECTION_ABORTED, 0xC0000241u),
    // NDIS glue (section 9; ndis.h values)
    STATUS_CASE(NDIS_STATUS_BAD_VERSION, 0xC0010004u),
    STATUS_CASE(NDIS_STATUS_ADAPTER_NOT_READY, 0xC0010011u),
};

TEST(NtStatus, ValuesAndNamesMatchReference) {
    EXPECT_EQ(std::size(k_status_cases), 39u);  // all 37 rows of section 7.2 + 2 NDIS codes
    for (const status_case& c : k_status_cases) {
        EXPECT_EQ(static_cast<uint32_t>(c.value), c.expected) << c.name;
        EXPECT_STREQ(ntstatus_name(c.value), c.name);
        EXPECT_STREQ(rnic::ndk::ntstatus_known_name(c.value), c.name);
    }
    EXPECT_TRUE((std::is_same_v<std::remove_cv_t<decltype(STATUS_PENDING)>, NTSTATUS>));
    EXPECT_LT(STATUS_BUFFER_OVERFLOW, 0);  // > INT32_MAX as a code, negative as NTSTATUS
    EXPECT_LT(STATUS_CANCELLED, 0);
}

TEST(NtStatus, NdisAliasesShareNtStatusValues) {
    EXPECT_EQ(NDIS_STATUS_SUCCESS, STATUS_SUCCESS);
    EXPECT_EQ(NDIS_STATUS_PENDING, STATUS_PENDING);
    EXPECT_EQ(NDIS_STATUS_FAILURE, STATUS_UNSUCCESSFUL);
    EXPECT_EQ(NDIS_STATUS_RESOURCES, STATUS_INSUFFICIENT_RESOURCES);
    EXPECT_STREQ(ntstatus_name(NDIS_STATUS_RESOURCES), "STATUS_INSUFFICIENT_RESOURCES");
}

TEST(NtStatus, UnknownCodesAreSpelledInHex) {
    EXPECT_EQ(rnic::ndk::ntstatus_known_name(static_cast<NTSTATUS>(0xC0001234u)), nullptr);
    const std::string first = ntstatus_name(static_cast<NTSTATUS>(0xC0001234u));
    EXPECT_EQ(first, "STATUS_0xC0001234");
    EXPECT_STREQ(ntstatus_name(0x104), "STATUS_0x00000104");
    EXPECT_STREQ(ntstatus_name(static_cast<NTSTATUS>(0xDEADBEEFu)), "STATUS_0xDEADBEEF");
    EXPECT_STREQ(ntstatus_name(STATUS_CANCELLED), "STATUS_CANCELLED");  // known ones unaffected
}

TEST(NtStatus, KnownNameIsUsableInConstantExpressions) {
    constexpr std::string_view name = rnic::ndk::ntstatus_known_name(STATUS_CONNECTION_INVALID);
    static_assert(name == "STATUS_CONNECTION_INVALID");
    constexpr NTSTATUS in_switch = STATUS_REMOTE_RESOURCES;
    switch (in_switch) {  // the constants work as case labels, like the WDK macros
        case STATUS_REMOTE_RESOURCES:
            SUCCEED();
            break;
        default:
            FAIL() << "STATUS_REMOTE_RESOURCES did not match its own case label";
    }
    EXPECT_EQ(name, "STATUS_CONNECTION_INVALID");
}

// =============================================================================================
// NDKPI values (ndkpi.h)
// =============================================================================================

TEST(NdkValues, OperationFlags) {
    EXPECT_EQ(NDK_OP_FLAG_SILENT_SUCCESS, 0x001u);
    EXPECT_EQ(NDK_OP_FLAG_READ_FENCE, 0x002u);
    EXPECT_EQ(NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT, 0x004u);
    EXPECT_EQ(NDK_OP_FLAG_ALLOW_REMOTE_READ, 0x008u);
    EXPECT_EQ(NDK_OP_FLAG_ALLOW_LOCAL_WRITE, 0x010u);
    EXPECT_EQ(NDK_OP_FLAG_ALLOW_REMOTE_WRITE, 0x030u);
    EXPECT_EQ(NDK_OP_FLAG_ALLOW_REMOTE_WRITE & NDK_OP_FLAG_ALLOW_LOCAL_WRITE,
              NDK_OP_FLAG_ALLOW_LOCAL_WRITE);  // remote write implies local write
    EXPECT_EQ(NDK_OP_FLAG_INLINE, 0x040u);
    EXPECT_EQ(NDK_OP_FLAG_RDMA_READ_SINK, 0x080u);
    EXPECT_EQ(NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE, 0x100u);  // not the doc page's 0x200
    EXPECT_EQ(NDK_OP_FLAG_DEFER, 0x200u);
    EXPECT_NE(NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE, NDK_OP_FLAG_DEFER);
    EXPECT_TRUE((std::is_same_v<std::remove_cv_t<decltype(NDK_OP_FLAG_DEFER)>, ULONG>));
}

TEST(NdkValues, MemoryRegionFlagsAndCqNotifyTypes) {
    EXPECT_EQ(NDK_MR_FLAG_ALLOW_LOCAL_READ, 0x0u);
    EXPECT_EQ(NDK_MR_FLAG_ALLOW_LOCAL_WRITE, 0x1u);
    EXPECT_EQ(NDK_MR_FLAG_ALLOW_REMOTE_READ, 0x2u);
    EXPECT_EQ(NDK_MR_FLAG_ALLOW_REMOTE_WRITE, 0x5u);
    EXPECT_EQ(NDK_MR_FLAG_RDMA_READ_SINK, 0x8u);
    EXPECT_EQ(NDK_CQ_NOTIFY_ERRORS, 0u);
    EXPECT_EQ(NDK_CQ_NOTIFY_ANY, 1u);
    EXPECT_EQ(NDK_CQ_NOTIFY_SOLICITED, 2u);
}

TEST(NdkValues, AdapterFlagsAndTechnology) {
    EXPECT_EQ(NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED, 0x00000001u);
    EXPECT_EQ(NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED, 0x00000002u);
    EXPECT_EQ(NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED, 0x00000004u);
    EXPECT_EQ(NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED, 0x00000008u);
    EXPECT_EQ(NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED, 0x00000010u);
    EXPECT_EQ(NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED, 0x00000100u);
    EXPECT_EQ(NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED, 0x00010000u);
    EXPECT_EQ(NdkUndefined, 0);
    EXPECT_EQ(NdkiWarp, 1);
    EXPECT_EQ(NdkInfiniBand, 2);
    EXPECT_EQ(NdkRoCE, 3);
    EXPECT_EQ(NdkRoCEv2, 4);
    EXPECT_EQ(NdkMaxTechnology, 5);
}

TEST(NdkValues, ObjectAndOperationTypes) {
    EXPECT_EQ(NdkObjectTypeUndefined, 0);
    EXPECT_EQ(NdkObjectTypeAdapter, 1);
    EXPECT_EQ(NdkObjectTypeQp, 2);
    EXPECT_EQ(NdkObjectTypeCq, 3);
    EXPECT_EQ(NdkObjectTypeMr, 4);
    EXPECT_EQ(NdkObjectTypeMw, 5);
    EXPECT_EQ(NdkObjectTypePd, 6);
    EXPECT_EQ(NdkObjectTypeSharedEndpoint, 7);
    EXPECT_EQ(NdkObjectTypeConnector, 8);
    EXPECT_EQ(NdkObjectTypeListener, 9);
    EXPECT_EQ(NdkObjectTypeSrq, 10);
    EXPECT_EQ(NdkObjectTypeMax, 11);
    EXPECT_EQ(NdkOperationTypeReceive, 1);
    EXPECT_EQ(NdkOperationTypeReceiveAndInvalidate, 0x8001);
    EXPECT_EQ(NdkOperationTypeSend, 2);
    EXPECT_EQ(NdkOperationTypeFastRegister, 4);
    EXPECT_EQ(NdkOperationTypeBind, 8);
    EXPECT_EQ(NdkOperationTypeInvalidate, 16);
    EXPECT_EQ(NdkOperationTypeRead, 32);
    EXPECT_EQ(NdkOperationTypeWrite, 64);
}

// =============================================================================================
// NDKPI layouts
// =============================================================================================

TEST(NdkLayout, HeaderSgeAndResults) {
    EXPECT_EQ(sizeof(NDK_VERSION), 4u);
    EXPECT_EQ(sizeof(NDK_OBJECT_HEADER), 40u);
    EXPECT_EQ(offsetof(NDK_OBJECT_HEADER, ObjectType), 4u);
    EXPECT_EQ(offsetof(NDK_OBJECT_HEADER, NdkReserved), 8u);
    EXPECT_EQ(sizeof(NDK_SGE), 16u);
    EXPECT_EQ(offsetof(NDK_SGE, LogicalAddress), 0u);
    EXPECT_EQ(offsetof(NDK_SGE, Length), 8u);
    EXPECT_EQ(offsetof(NDK_SGE, MemoryRegionToken), 12u);
    EXPECT_EQ(sizeof(NDK_RESULT), 24u);
    EXPECT_EQ(offsetof(NDK_RESULT, QPContext), 8u);
    EXPECT_EQ(offsetof(NDK_RESULT, RequestContext), 16u);
    EXPECT_EQ(sizeof(NDK_RESULT_EX), 40u);
    EXPECT_EQ(offsetof(NDK_RESULT_EX, Type), 24u);
    EXPECT_EQ(offsetof(NDK_RESULT_EX, ProviderErrorCode), 28u);
    EXPECT_EQ(offsetof(NDK_RESULT_EX, TypeSpecificCompletionOutput), 32u);
    EXPECT_EQ(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageCount), 8u);
    EXPECT_EQ(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray), 16u);
    EXPECT_EQ(sizeof(NDK_EXTENSION_INTERFACE), 8u);

    // The NDK_RESULT prefix of NDK_RESULT_EX is NDK_RESULT itself (same offsets).
    EXPECT_EQ(offsetof(NDK_RESULT_EX, QPContext), offsetof(NDK_RESULT, QPContext));
    EXPECT_EQ(offsetof(NDK_RESULT_EX, RequestContext), offsetof(NDK_RESULT, RequestContext));
}

TEST(NdkLayout, AdapterInfoOffsets) {
    EXPECT_EQ(sizeof(NDK_ADAPTER_INFO), 104u);
    const size_t expected[] = {
        offsetof(NDK_ADAPTER_INFO, Version),                 // 0
        offsetof(NDK_ADAPTER_INFO, VendorId),                // 4
        offsetof(NDK_ADAPTER_INFO, DeviceId),                // 8
        offsetof(NDK_ADAPTER_INFO, MaxRegistrationSize),     // 16
        offsetof(NDK_ADAPTER_INFO, MaxWindowSize),           // 24
        offsetof(NDK_ADAPTER_INFO, FRMRPageCount),           // 32
        offsetof(NDK_ADAPTER_INFO, MaxInitiatorRequestSge),  // 36 ...
        offsetof(NDK_ADAPTER_INFO, MaxReceiveRequestSge),
        offsetof(NDK_ADAPTER_INFO, MaxReadRequestSge),
        offsetof(NDK_ADAPTER_INFO, MaxTransferLength),
        offsetof(NDK_ADAPTER_INFO, MaxInlineDataSize),
        offsetof(NDK_ADAPTER_INFO, MaxInboundReadLimit),
        offsetof(NDK_ADAPTER_INFO, MaxOutboundReadLimit),
        offsetof(NDK_ADAPTER_INFO, MaxReceiveQueueDepth),
        offsetof(NDK_ADAPTER_INFO, MaxInitiatorQueueDepth),
        offsetof(NDK_ADAPTER_INFO, MaxSrqDepth),
        offsetof(NDK_ADAPTER_INFO, MaxCqDepth),
        offsetof(NDK_ADAPTER_INFO, LargeRequestThreshold),
        offsetof(NDK_ADAPTER_INFO, MaxCallerData),
        offsetof(NDK_ADAPTER_INFO, MaxCalleeData),
        offsetof(NDK_ADAPTER_INFO, AdapterFlags),    // 92
        offsetof(NDK_ADAPTER_INFO, RdmaTechnology),  // 96
    };
    const size_t reference[] = {0,  4,  8,  16, 24, 32, 36, 40, 44, 48, 52,
                                56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96};
    ASSERT_EQ(std::size(expected), std::size(reference));
    for (size_t i = 0; i < std::size(reference); ++i) {
        EXPECT_EQ(expected[i], reference[i]) << "NDK_ADAPTER_INFO field #" << i;
    }
}

TEST(NdkLayout, EveryObjectIsHeaderPlusDispatch) {
    EXPECT_EQ(sizeof(NDK_ADAPTER), 48u);
    EXPECT_EQ(offsetof(NDK_ADAPTER, Dispatch), 40u);
    EXPECT_EQ(offsetof(NDK_PD, Dispatch), 40u);
    EXPECT_EQ(offsetof(NDK_CQ, Dispatch), 40u);
    EXPECT_EQ(offsetof(NDK_QP, Dispatch), 40u);
    EXPECT_EQ(offsetof(NDK_SRQ, Dispatch), 40u);
    EXPECT_EQ(offsetof(NDK_MR, Dispatch), 40u);
    EXPECT_EQ(offsetof(NDK_MW, Dispatch), 40u);
    EXPECT_EQ(offsetof(NDK_CONNECTOR, Dispatch), 40u);
    EXPECT_EQ(offsetof(NDK_LISTENER, Dispatch), 40u);
    EXPECT_EQ(offsetof(NDK_SHARED_ENDPOINT, Dispatch), 40u);
    EXPECT_TRUE((std::is_same_v<decltype(NDK_QP::Dispatch), const NDK_QP_DISPATCH*>));
    EXPECT_TRUE((std::is_same_v<decltype(NDK_ADAPTER::Dispatch), const NDK_ADAPTER_DISPATCH*>));
}

TEST(NdkLayout, NdisGlue) {
    EXPECT_EQ(sizeof(NDIS_OBJECT_HEADER), 4u);
    EXPECT_EQ(sizeof(NDIS_OPEN_NDK_ADAPTER_PARAMETERS), 12u);
    EXPECT_EQ(sizeof(NDIS_NDK_PROVIDER_CHARACTERISTICS), 24u);
    EXPECT_EQ(offsetof(NDIS_NDK_PROVIDER_CHARACTERISTICS, OpenNDKAdapterHandler), 8u);
    EXPECT_EQ(offsetof(NDIS_NDK_PROVIDER_CHARACTERISTICS, CloseNDKAdapterHandler), 16u);
    EXPECT_EQ(NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1, 24);
    EXPECT_EQ(NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS, 0xB2);
    EXPECT_EQ(NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1, 1);
}

// =============================================================================================
// Function typedefs: documented parameter order (reference section 4)
// =============================================================================================

template <typename A, typename B>
constexpr bool same = std::is_same_v<A, B>;

TEST(NdkSignatures, CallbacksAndGeneric) {
    EXPECT_TRUE((same<NDK_FN_CLOSE_COMPLETION, void (*)(PVOID)>));
    EXPECT_TRUE((same<NDK_FN_REQUEST_COMPLETION, void (*)(PVOID, NTSTATUS)>));
    EXPECT_TRUE((same<NDK_FN_CREATE_COMPLETION, void (*)(PVOID, NTSTATUS, NDK_OBJECT_HEADER*)>));
    EXPECT_TRUE((same<NDK_FN_CQ_NOTIFICATION_CALLBACK, void (*)(PVOID, NTSTATUS)>));
    EXPECT_TRUE((same<NDK_FN_SRQ_NOTIFICATION_CALLBACK, void (*)(PVOID, NTSTATUS)>));
    EXPECT_TRUE((same<NDK_FN_CONNECT_EVENT_CALLBACK, void (*)(PVOID, NDK_CONNECTOR*)>));
    EXPECT_TRUE((same<NDK_FN_DISCONNECT_EVENT_CALLBACK, void (*)(PVOID)>));
    EXPECT_TRUE((same<NDK_FN_DISCONNECT_EVENT_CALLBACK_EX, void (*)(PVOID, ULONG)>));
    EXPECT_TRUE((same<NDK_FN_CLOSE_OBJECT,
                      NTSTATUS (*)(NDK_OBJECT_HEADER*, NDK_FN_CLOSE_COMPLETION, PVOID)>));
    EXPECT_TRUE(
        (same<NDK_FN_QUERY_EXTENSION_INTERFACE,
              NTSTATUS (*)(NDK_OBJECT_HEADER*, GUID*, NDK_VERSION, NDK_EXTENSION_INTERFACE*)>));
}

TEST(NdkSignatures, Adapter) {
    EXPECT_TRUE(
        (same<NDK_FN_QUERY_ADAPTER_INFO, NTSTATUS (*)(NDK_ADAPTER*, NDK_ADAPTER_INFO*, ULONG*)>));
    EXPECT_TRUE((same<NDK_FN_QUERY_ADAPTER_INFO_EX,
                      NTSTATUS (*)(NDK_ADAPTER*, NDK_VERSION, NDK_ADAPTER_INFO*, ULONG*)>));
    EXPECT_TRUE((same<NDK_FN_CREATE_CQ,
                      NTSTATUS (*)(NDK_ADAPTER*, ULONG, NDK_FN_CQ_NOTIFICATION_CALLBACK, PVOID,
                                   GROUP_AFFINITY*, NDK_FN_CREATE_COMPLETION, PVOID, NDK_CQ**)>));
    EXPECT_TRUE((same<NDK_FN_CREATE_PD,
                      NTSTATUS (*)(NDK_ADAPTER*, NDK_FN_CREATE_COMPLETION, PVOID, NDK_PD**)>));
    EXPECT_TRUE((same<NDK_FN_CREATE_SHARED_ENDPOINT,
                      NTSTATUS (*)(NDK_ADAPTER*, PSOCKADDR, ULONG, NDK_FN_CREATE_COMPLETION, PVOID,
                                   NDK_SHARED_ENDPOINT**)>));
    EXPECT_TRUE((same<NDK_FN_CREATE_CONNECTOR, NTSTATUS (*)(NDK_ADAPTER*, NDK_FN_CREATE_COMPLETION,
                                                            PVOID, NDK_CONNECTOR**)>));
    EXPECT_TRUE((same<NDK_FN_CREATE_LISTENER,
                      NTSTATUS (*)(NDK_ADAPTER*, NDK_FN_CONNECT_EVENT_CALLBACK, PVOID,
                                   NDK_FN_CREATE_COMPLETION, PVOID, NDK_LISTENER**)>));
    EXPECT_TRUE((
        same<NDK_FN_BUILD_LAM, NTSTATUS (*)(NDK_ADAPTER*, MDL*, SIZE_T, NDK_FN_REQUEST_COMPLETION,
                                            PVOID, NDK_LOGICAL_ADDRESS_MAPPING*, ULONG*, ULONG*)>));
    EXPECT_TRUE((same<NDK_FN_RELEASE_LAM, void (*)(NDK_ADAPTER*, NDK_LOGICAL_ADDRESS_MAPPING*)>));
}

TEST(NdkSignatures, ProtectionDomain) {
    EXPECT_TRUE((same<NDK_FN_CREATE_MR,
                      NTSTATUS (*)(NDK_PD*, BOOLEAN, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MR**)>));
    EXPECT_TRUE(
        (same<NDK_FN_CREATE_MW, NTSTATUS (*)(NDK_PD*, NDK_FN_CREATE_COMPLETION, PVOID, NDK_MW**)>));
    EXPECT_TRUE(
        (same<NDK_FN_CREATE_SRQ,
              NTSTATUS (*)(NDK_PD*, ULONG, ULONG, ULONG, NDK_FN_SRQ_NOTIFICATION_CALLBACK, PVOID,
                           GROUP_AFFINITY*, NDK_FN_CREATE_COMPLETION, PVOID, NDK_SRQ**)>));
    EXPECT_TRUE((same<NDK_FN_CREATE_QP,
                      NTSTATUS (*)(NDK_PD*, NDK_CQ*, NDK_CQ*, PVOID, ULONG, ULONG, ULONG, ULONG,
                                   ULONG, NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP**)>));
    EXPECT_TRUE((same<NDK_FN_CREATE_QP_WITH_SRQ,
                      NTSTATUS (*)(NDK_PD*, NDK_CQ*, NDK_CQ*, NDK_SRQ*, PVOID, ULONG, ULONG, ULONG,
                                   NDK_FN_CREATE_COMPLETION, PVOID, NDK_QP**)>));
    EXPECT_TRUE((same<NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN, void (*)(NDK_PD*, UINT32*)>));
}

TEST(NdkSignatures, CompletionQueue) {
    EXPECT_TRUE(
        (same<NDK_FN_RESIZE_CQ, NTSTATUS (*)(NDK_CQ*, ULONG, NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE((same<NDK_FN_ARM_CQ, void (*)(NDK_CQ*, ULONG)>));
    EXPECT_TRUE((same<NDK_FN_GET_CQ_RESULTS, ULONG (*)(NDK_CQ*, NDK_RESULT*, ULONG)>));
    EXPECT_TRUE((same<NDK_FN_GET_CQ_RESULTS_EX, ULONG (*)(NDK_CQ*, NDK_RESULT_EX*, ULONG)>));
    EXPECT_TRUE(
        (same<NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION, NTSTATUS (*)(NDK_CQ*, ULONG, ULONG)>));
}

TEST(NdkSignatures, QueuePairAndSrq) {
    EXPECT_TRUE((same<NDK_FN_FLUSH, void (*)(NDK_QP*)>));
    EXPECT_TRUE((same<NDK_FN_SEND, NTSTATUS (*)(NDK_QP*, PVOID, const NDK_SGE*, ULONG, ULONG)>));
    EXPECT_TRUE((same<NDK_FN_RECEIVE, NTSTATUS (*)(NDK_QP*, PVOID, const NDK_SGE*, ULONG)>));
    EXPECT_TRUE(
        (same<NDK_FN_BIND, NTSTATUS (*)(NDK_QP*, PVOID, NDK_MR*, NDK_MW*, PVOID, SIZE_T, ULONG)>));
    EXPECT_TRUE((same<NDK_FN_FAST_REGISTER,
                      NTSTATUS (*)(NDK_QP*, PVOID, NDK_MR*, ULONG, const NDK_LOGICAL_ADDRESS*,
                                   ULONG, SIZE_T, PVOID, ULONG)>));
    EXPECT_TRUE((same<NDK_FN_INVALIDATE, NTSTATUS (*)(NDK_QP*, PVOID, NDK_OBJECT_HEADER*, ULONG)>));
    EXPECT_TRUE((same<NDK_FN_READ,
                      NTSTATUS (*)(NDK_QP*, PVOID, const NDK_SGE*, ULONG, UINT64, UINT32, ULONG)>));
    EXPECT_TRUE((same<NDK_FN_WRITE,
                      NTSTATUS (*)(NDK_QP*, PVOID, const NDK_SGE*, ULONG, UINT64, UINT32, ULONG)>));
    // Flags before RemoteToken here, unlike Read/Write.
    EXPECT_TRUE((same<NDK_FN_SEND_AND_INVALIDATE,
                      NTSTATUS (*)(NDK_QP*, PVOID, const NDK_SGE*, ULONG, ULONG, UINT32)>));
    EXPECT_TRUE((same<NDK_FN_MODIFY_SRQ,
                      NTSTATUS (*)(NDK_SRQ*, ULONG, ULONG, NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE((same<NDK_FN_SRQ_RECEIVE, NTSTATUS (*)(NDK_SRQ*, PVOID, const NDK_SGE*, ULONG)>));
}

TEST(NdkSignatures, MemoryRegionAndWindow) {
    EXPECT_TRUE((same<NDK_FN_REGISTER_MR, NTSTATUS (*)(NDK_MR*, MDL*, SIZE_T, ULONG,
                                                       NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE(
        (same<NDK_FN_DEREGISTER_MR, NTSTATUS (*)(NDK_MR*, NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE((same<NDK_FN_INITIALIZE_FAST_REGISTER_MR,
                      NTSTATUS (*)(NDK_MR*, ULONG, BOOLEAN, NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE((same<NDK_FN_GET_REMOTE_TOKEN_FROM_MR, UINT32 (*)(NDK_MR*)>));
    EXPECT_TRUE((same<NDK_FN_GET_LOCAL_TOKEN_FROM_MR, UINT32 (*)(NDK_MR*)>));
    EXPECT_TRUE((same<NDK_FN_GET_REMOTE_TOKEN_FROM_MW, UINT32 (*)(NDK_MW*)>));
}

TEST(NdkSignatures, ConnectorListenerSharedEndpoint) {
    EXPECT_TRUE((same<NDK_FN_CONNECT,
                      NTSTATUS (*)(NDK_CONNECTOR*, NDK_QP*, PSOCKADDR, ULONG, PSOCKADDR, ULONG,
                                   ULONG, ULONG, PVOID, ULONG, NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE((same<NDK_FN_CONNECT_WITH_SHARED_ENDPOINT,
                      NTSTATUS (*)(NDK_CONNECTOR*, NDK_QP*, NDK_SHARED_ENDPOINT*, PSOCKADDR, ULONG,
                                   ULONG, ULONG, PVOID, ULONG, NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE((
        same<NDK_FN_COMPLETE_CONNECT, NTSTATUS (*)(NDK_CONNECTOR*, NDK_FN_DISCONNECT_EVENT_CALLBACK,
                                                   PVOID, NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE((same<NDK_FN_COMPLETE_CONNECT_EX,
                      NTSTATUS (*)(NDK_CONNECTOR*, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX, PVOID,
                                   NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE((same<NDK_FN_ACCEPT, NTSTATUS (*)(NDK_CONNECTOR*, NDK_QP*, ULONG, ULONG, PVOID,
                                                  ULONG, NDK_FN_DISCONNECT_EVENT_CALLBACK, PVOID,
                                                  NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE((same<NDK_FN_ACCEPT_EX, NTSTATUS (*)(NDK_CONNECTOR*, NDK_QP*, ULONG, ULONG, PVOID,
                                                     ULONG, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX,
                                                     PVOID, NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE((same<NDK_FN_REJECT, NTSTATUS (*)(NDK_CONNECTOR*, PVOID, ULONG)>));
    EXPECT_TRUE((same<NDK_FN_GET_CONNECTION_DATA,
                      NTSTATUS (*)(NDK_CONNECTOR*, ULONG*, ULONG*, PVOID, ULONG*)>));
    EXPECT_TRUE((same<NDK_FN_GET_LOCAL_ADDRESS, NTSTATUS (*)(NDK_CONNECTOR*, PSOCKADDR, ULONG*)>));
    EXPECT_TRUE((same<NDK_FN_GET_PEER_ADDRESS, NTSTATUS (*)(NDK_CONNECTOR*, PSOCKADDR, ULONG*)>));
    EXPECT_TRUE(
        (same<NDK_FN_DISCONNECT, NTSTATUS (*)(NDK_CONNECTOR*, NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE((same<NDK_FN_DISCONNECT_EX,
                      NTSTATUS (*)(NDK_CONNECTOR*, BOOLEAN, NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE((same<NDK_FN_LISTEN, NTSTATUS (*)(NDK_LISTENER*, PSOCKADDR, ULONG,
                                                  NDK_FN_REQUEST_COMPLETION, PVOID)>));
    EXPECT_TRUE(
        (same<NDK_FN_GET_LISTENER_LOCAL_ADDRESS, NTSTATUS (*)(NDK_LISTENER*, PSOCKADDR, ULONG*)>));
    EXPECT_TRUE((same<NDK_FN_CONTROL_CONNECT_EVENTS, void (*)(NDK_LISTENER*, BOOLEAN)>));
    EXPECT_TRUE((same<NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS,
                      NTSTATUS (*)(NDK_SHARED_ENDPOINT*, PSOCKADDR, ULONG*)>));
    EXPECT_TRUE(
        (same<OPEN_NDK_ADAPTER_HANDLER,
              NDIS_STATUS (*)(NDIS_HANDLE, PNDIS_OPEN_NDK_ADAPTER_PARAMETERS, NDK_ADAPTER**)>));
    EXPECT_TRUE((same<CLOSE_NDK_ADAPTER_HANDLER, void (*)(NDIS_HANDLE, NDK_ADAPTER*)>));
}

// =============================================================================================
// Dispatch tables: calling each named member lands in the documented slot
// =============================================================================================

// Records which table/slot a dispatch call reached. Each slot_fn<table, slot, FN>::call has
// exactly the NDK_FN_* type FN, so a positional initializer of a dispatch table only compiles
// if the header's members have the documented types in the documented order.
struct slot_log {
    int table = -1;
    int slot = -1;
    int calls = 0;
};
slot_log g_slot_log;

enum table_id {
    ADAPTER_TABLE,
    PD_TABLE,
    CQ_TABLE,
    QP_TABLE,
    SRQ_TABLE,
    MR_TABLE,
    MW_TABLE,
    CONNECTOR_TABLE,
    LISTENER_TABLE,
    SHARED_ENDPOINT_TABLE
};

template <int Table, int Slot, typename Fn>
struct slot_fn;
template <int Table, int Slot, typename R, typename... Args>
struct slot_fn<Table, Slot, R (*)(Args...)> {
    static R call(Args...) {
        g_slot_log.table = Table;
        g_slot_log.slot = Slot;
        ++g_slot_log.calls;
        if constexpr (!std::is_void_v<R>) {
            return R{};
        }
    }
};
#define SLOT(table, slot, fn_type) slot_fn<table, slot, fn_type>::call

// Calls a dispatch entry with value-initialised arguments (the fakes ignore them).
template <typename R, typename... Args>
void call_with_defaults(R (*fn)(Args...)) {
    fn(Args{}...);
}

// Calls dispatch.member and checks the call reached `slot` of `table` and that the member sits
// at slot * 8 bytes.
#define EXPECT_SLOT(type, dispatch, expected_table, member, expected_slot)             \
    do {                                                                               \
        g_slot_log = {};                                                               \
        call_with_defaults((dispatch).member);                                         \
        EXPECT_EQ(g_slot_log.table, (expected_table)) << #type "." #member;            \
        EXPECT_EQ(g_slot_log.slot, (expected_slot)) << #type "." #member;              \
        EXPECT_EQ(g_slot_log.calls, 1) << #type "." #member;                           \
        EXPECT_EQ(offsetof(type, member), (expected_slot) * sizeof(PVOID)) << #member; \
    } while (0)

TEST(NdkDispatch, AdapterTableOrder) {
    const NDK_ADAPTER_DISPATCH d = {
        SLOT(ADAPTER_TABLE, 0, NDK_FN_QUERY_EXTENSION_INTERFACE),
        SLOT(ADAPTER_TABLE, 1, NDK_FN_QUERY_ADAPTER_INFO),
        SLOT(ADAPTER_TABLE, 2, NDK_FN_CREATE_CQ),
        SLOT(ADAPTER_TABLE, 3, NDK_FN_CREATE_PD),
        SLOT(ADAPTER_TABLE, 4, NDK_FN_CREATE_SHARED_ENDPOINT),
        SLOT(ADAPTER_TABLE, 5, NDK_FN_CREATE_CONNECTOR),
        SLOT(ADAPTER_TABLE, 6, NDK_FN_CREATE_LISTENER),
        SLOT(ADAPTER_TABLE, 7, NDK_FN_BUILD_LAM),
        SLOT(ADAPTER_TABLE, 8, NDK_FN_RELEASE_LAM),
    };
    EXPECT_EQ(sizeof(d), 9 * sizeof(PVOID));
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, d, ADAPTER_TABLE, NdkQueryExtension, 0);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, d, ADAPTER_TABLE, NdkQueryAdapterInfo, 1);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, d, ADAPTER_TABLE, NdkCreateCq, 2);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, d, ADAPTER_TABLE, NdkCreatePd, 3);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, d, ADAPTER_TABLE, NdkCreateSharedEndpoint, 4);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, d, ADAPTER_TABLE, NdkCreateConnector, 5);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, d, ADAPTER_TABLE, NdkCreateListener, 6);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, d, ADAPTER_TABLE, NdkBuildLAM, 7);
    EXPECT_SLOT(NDK_ADAPTER_DISPATCH, d, ADAPTER_TABLE, NdkReleaseLAM, 8);
}

TEST(NdkDispatch, PdTableOrder) {
    const NDK_PD_DISPATCH d = {
        SLOT(PD_TABLE, 0, NDK_FN_CLOSE_OBJECT),
        SLOT(PD_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
        SLOT(PD_TABLE, 2, NDK_FN_CREATE_MR),
        SLOT(PD_TABLE, 3, NDK_FN_CREATE_MW),
        SLOT(PD_TABLE, 4, NDK_FN_CREATE_SRQ),
        SLOT(PD_TABLE, 5, NDK_FN_CREATE_QP),
        SLOT(PD_TABLE, 6, NDK_FN_CREATE_QP_WITH_SRQ),
        SLOT(PD_TABLE, 7, NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN),
    };
    EXPECT_EQ(sizeof(d), 8 * sizeof(PVOID));
    EXPECT_SLOT(NDK_PD_DISPATCH, d, PD_TABLE, NdkClosePd, 0);
    EXPECT_SLOT(NDK_PD_DISPATCH, d, PD_TABLE, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_PD_DISPATCH, d, PD_TABLE, NdkCreateMr, 2);
    EXPECT_SLOT(NDK_PD_DISPATCH, d, PD_TABLE, NdkCreateMw, 3);
    EXPECT_SLOT(NDK_PD_DISPATCH, d, PD_TABLE, NdkCreateSrq, 4);
    EXPECT_SLOT(NDK_PD_DISPATCH, d, PD_TABLE, NdkCreateQp, 5);
    EXPECT_SLOT(NDK_PD_DISPATCH, d, PD_TABLE, NdkCreateQpWithSrq, 6);
    EXPECT_SLOT(NDK_PD_DISPATCH, d, PD_TABLE, NdkGetPrivilegedMemoryRegionToken, 7);
}

TEST(NdkDispatch, CqTableOrder) {
    const NDK_CQ_DISPATCH d = {
        SLOT(CQ_TABLE, 0, NDK_FN_CLOSE_OBJECT),
        SLOT(CQ_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
        SLOT(CQ_TABLE, 2, NDK_FN_RESIZE_CQ),
        SLOT(CQ_TABLE, 3, NDK_FN_ARM_CQ),
        SLOT(CQ_TABLE, 4, NDK_FN_GET_CQ_RESULTS),
        SLOT(CQ_TABLE, 5, NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION),
        SLOT(CQ_TABLE, 6, NDK_FN_GET_CQ_RESULTS_EX),
    };
    EXPECT_EQ(sizeof(d), 7 * sizeof(PVOID));
    EXPECT_SLOT(NDK_CQ_DISPATCH, d, CQ_TABLE, NdkCloseCq, 0);
    EXPECT_SLOT(NDK_CQ_DISPATCH, d, CQ_TABLE, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_CQ_DISPATCH, d, CQ_TABLE, NdkResizeCq, 2);
    EXPECT_SLOT(NDK_CQ_DISPATCH, d, CQ_TABLE, NdkArmCq, 3);
    EXPECT_SLOT(NDK_CQ_DISPATCH, d, CQ_TABLE, NdkGetCqResults, 4);
    EXPECT_SLOT(NDK_CQ_DISPATCH, d, CQ_TABLE, NdkControlCqInterruptModeration, 5);
    EXPECT_SLOT(NDK_CQ_DISPATCH, d, CQ_TABLE, NdkGetCqResultsEx, 6);
}

TEST(NdkDispatch, QpTableOrder) {
    const NDK_QP_DISPATCH d = {
        SLOT(QP_TABLE, 0, NDK_FN_CLOSE_OBJECT),
        SLOT(QP_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
        SLOT(QP_TABLE, 2, NDK_FN_FLUSH),
        SLOT(QP_TABLE, 3, NDK_FN_SEND),
        SLOT(QP_TABLE, 4, NDK_FN_RECEIVE),
        SLOT(QP_TABLE, 5, NDK_FN_BIND),
        SLOT(QP_TABLE, 6, NDK_FN_FAST_REGISTER),
        SLOT(QP_TABLE, 7, NDK_FN_INVALIDATE),
        SLOT(QP_TABLE, 8, NDK_FN_READ),
        SLOT(QP_TABLE, 9, NDK_FN_WRITE),
        SLOT(QP_TABLE, 10, NDK_FN_SEND_AND_INVALIDATE),
    };
    EXPECT_EQ(sizeof(d), 11 * sizeof(PVOID));
    EXPECT_SLOT(NDK_QP_DISPATCH, d, QP_TABLE, NdkCloseQp, 0);
    EXPECT_SLOT(NDK_QP_DISPATCH, d, QP_TABLE, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_QP_DISPATCH, d, QP_TABLE, NdkFlush, 2);
    EXPECT_SLOT(NDK_QP_DISPATCH, d, QP_TABLE, NdkSend, 3);
    EXPECT_SLOT(NDK_QP_DISPATCH, d, QP_TABLE, NdkReceive, 4);
    EXPECT_SLOT(NDK_QP_DISPATCH, d, QP_TABLE, NdkBind, 5);
    EXPECT_SLOT(NDK_QP_DISPATCH, d, QP_TABLE, NdkFastRegister, 6);
    EXPECT_SLOT(NDK_QP_DISPATCH, d, QP_TABLE, NdkInvalidate, 7);
    EXPECT_SLOT(NDK_QP_DISPATCH, d, QP_TABLE, NdkRead, 8);
    EXPECT_SLOT(NDK_QP_DISPATCH, d, QP_TABLE, NdkWrite, 9);
    EXPECT_SLOT(NDK_QP_DISPATCH, d, QP_TABLE, NdkSendAndInvalidate, 10);
}

TEST(NdkDispatch, SrqMrMwTableOrder) {
    const NDK_SRQ_DISPATCH srq = {
        SLOT(SRQ_TABLE, 0, NDK_FN_CLOSE_OBJECT),
        SLOT(SRQ_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
        SLOT(SRQ_TABLE, 2, NDK_FN_MODIFY_SRQ),
        SLOT(SRQ_TABLE, 3, NDK_FN_SRQ_RECEIVE),
    };
    EXPECT_EQ(sizeof(srq), 4 * sizeof(PVOID));
    EXPECT_SLOT(NDK_SRQ_DISPATCH, srq, SRQ_TABLE, NdkCloseSrq, 0);
    EXPECT_SLOT(NDK_SRQ_DISPATCH, srq, SRQ_TABLE, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_SRQ_DISPATCH, srq, SRQ_TABLE, NdkModifySrq, 2);
    EXPECT_SLOT(NDK_SRQ_DISPATCH, srq, SRQ_TABLE, NdkSrqReceive, 3);

    const NDK_MR_DISPATCH mr = {
        SLOT(MR_TABLE, 0, NDK_FN_CLOSE_OBJECT),
        SLOT(MR_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
        SLOT(MR_TABLE, 2, NDK_FN_REGISTER_MR),
        SLOT(MR_TABLE, 3, NDK_FN_DEREGISTER_MR),
        SLOT(MR_TABLE, 4, NDK_FN_INITIALIZE_FAST_REGISTER_MR),
        SLOT(MR_TABLE, 5, NDK_FN_GET_REMOTE_TOKEN_FROM_MR),
        SLOT(MR_TABLE, 6, NDK_FN_GET_LOCAL_TOKEN_FROM_MR),
    };
    EXPECT_EQ(sizeof(mr), 7 * sizeof(PVOID));
    EXPECT_SLOT(NDK_MR_DISPATCH, mr, MR_TABLE, NdkCloseMr, 0);
    EXPECT_SLOT(NDK_MR_DISPATCH, mr, MR_TABLE, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_MR_DISPATCH, mr, MR_TABLE, NdkRegisterMr, 2);
    EXPECT_SLOT(NDK_MR_DISPATCH, mr, MR_TABLE, NdkDeregisterMr, 3);
    EXPECT_SLOT(NDK_MR_DISPATCH, mr, MR_TABLE, NdkInitializeFastRegisterMr, 4);
    EXPECT_SLOT(NDK_MR_DISPATCH, mr, MR_TABLE, NdkGetRemoteTokenFromMr, 5);
    EXPECT_SLOT(NDK_MR_DISPATCH, mr, MR_TABLE, NdkGetLocalTokenFromMr, 6);

    const NDK_MW_DISPATCH mw = {
        SLOT(MW_TABLE, 0, NDK_FN_CLOSE_OBJECT),
        SLOT(MW_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
        SLOT(MW_TABLE, 2, NDK_FN_GET_REMOTE_TOKEN_FROM_MW),
    };
    EXPECT_EQ(sizeof(mw), 3 * sizeof(PVOID));
    EXPECT_SLOT(NDK_MW_DISPATCH, mw, MW_TABLE, NdkCloseMw, 0);
    EXPECT_SLOT(NDK_MW_DISPATCH, mw, MW_TABLE, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_MW_DISPATCH, mw, MW_TABLE, NdkGetRemoteTokenFromMw, 2);
}

TEST(NdkDispatch, ConnectorTableOrderIncludingNdkpi21Slots) {
    const NDK_CONNECTOR_DISPATCH d = {
        SLOT(CONNECTOR_TABLE, 0, NDK_FN_CLOSE_OBJECT),
        SLOT(CONNECTOR_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
        SLOT(CONNECTOR_TABLE, 2, NDK_FN_CONNECT),
        SLOT(CONNECTOR_TABLE, 3, NDK_FN_CONNECT_WITH_SHARED_ENDPOINT),
        SLOT(CONNECTOR_TABLE, 4, NDK_FN_COMPLETE_CONNECT),
        SLOT(CONNECTOR_TABLE, 5, NDK_FN_ACCEPT),
        SLOT(CONNECTOR_TABLE, 6, NDK_FN_REJECT),
        SLOT(CONNECTOR_TABLE, 7, NDK_FN_GET_CONNECTION_DATA),
        SLOT(CONNECTOR_TABLE, 8, NDK_FN_GET_LOCAL_ADDRESS),
        SLOT(CONNECTOR_TABLE, 9, NDK_FN_GET_PEER_ADDRESS),
        SLOT(CONNECTOR_TABLE, 10, NDK_FN_DISCONNECT),
        SLOT(CONNECTOR_TABLE, 11, NDK_FN_COMPLETE_CONNECT_EX),
        SLOT(CONNECTOR_TABLE, 12, NDK_FN_ACCEPT_EX),
    };
    EXPECT_EQ(sizeof(d), 13 * sizeof(PVOID));
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkCloseConnector, 0);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkConnect, 2);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkConnectWithSharedEndpoint, 3);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkCompleteConnect, 4);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkAccept, 5);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkReject, 6);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkGetConnectionData, 7);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkGetLocalAddress, 8);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkGetPeerAddress, 9);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkDisconnect, 10);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkCompleteConnectEx, 11);
    EXPECT_SLOT(NDK_CONNECTOR_DISPATCH, d, CONNECTOR_TABLE, NdkAcceptEx, 12);
}

TEST(NdkDispatch, ListenerAndSharedEndpointTableOrder) {
    const NDK_LISTENER_DISPATCH listener = {
        SLOT(LISTENER_TABLE, 0, NDK_FN_CLOSE_OBJECT),
        SLOT(LISTENER_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
        SLOT(LISTENER_TABLE, 2, NDK_FN_LISTEN),
        SLOT(LISTENER_TABLE, 3, NDK_FN_GET_LISTENER_LOCAL_ADDRESS),
        SLOT(LISTENER_TABLE, 4, NDK_FN_CONTROL_CONNECT_EVENTS),
    };
    EXPECT_EQ(sizeof(listener), 5 * sizeof(PVOID));
    EXPECT_SLOT(NDK_LISTENER_DISPATCH, listener, LISTENER_TABLE, NdkCloseListener, 0);
    EXPECT_SLOT(NDK_LISTENER_DISPATCH, listener, LISTENER_TABLE, NdkQueryExtension, 1);
    EXPECT_SLOT(NDK_LISTENER_DISPATCH, listener, LISTENER_TABLE, NdkListen, 2);
    EXPECT_SLOT(NDK_LISTENER_DISPATCH, listener, LISTENER_TABLE, NdkGetLocalAddress, 3);
    EXPECT_SLOT(NDK_LISTENER_DISPATCH, listener, LISTENER_TABLE, NdkControlConnectEvents, 4);

    const NDK_SHARED_ENDPOINT_DISPATCH endpoint = {
        SLOT(SHARED_ENDPOINT_TABLE, 0, NDK_FN_CLOSE_OBJECT),
        SLOT(SHARED_ENDPOINT_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
        SLOT(SHARED_ENDPOINT_TABLE, 2, NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS),
    };
    EXPECT_EQ(sizeof(endpoint), 3 * sizeof(PVOID));
    EXPECT_SLOT(NDK_SHARED_ENDPOINT_DISPATCH, endpoint, SHARED_ENDPOINT_TABLE,
                NdkCloseSharedEndpoint, 0);
    EXPECT_SLOT(NDK_SHARED_ENDPOINT_DISPATCH, endpoint, SHARED_ENDPOINT_TABLE, NdkQueryExtension,
                1);
    EXPECT_SLOT(NDK_SHARED_ENDPOINT_DISPATCH, endpoint, SHARED_ENDPOINT_TABLE, NdkGetLocalAddress,
                2);
}

// =============================================================================================
// Docs-style consumer <-> fake provider. The provider functions and the consumer functions are
// written in the C style of the WDK docs and Microsoft's NDK sample (no C++ features), and go
// through the real dispatch tables; the test checks what arrives on the other side.
// =============================================================================================

struct provider_log {
    // NdkSend
    int sends = 0;
    NDK_QP* send_qp = nullptr;
    PVOID send_context = nullptr;
    NDK_SGE send_sge{};
    ULONG send_nsge = 0;
    ULONG send_flags = 0;
    // NdkRead
    int reads = 0;
    NDK_SGE read_sgl[2]{};
    ULONG read_nsge = 0;
    UINT64 read_remote_address = 0;
    UINT32 read_remote_token = 0;
    ULONG read_flags = 0;
    // NdkSendAndInvalidate
    ULONG send_inv_flags = 0;
    UINT32 send_inv_token = 0;
    // NdkArmCq / NdkGetCqResultsEx
    ULONG arm_type = MAXULONG;
    ULONG cq_delivered = 0;
    // NdkCreateQp (completes later, STATUS_PENDING)
    NDK_FN_CREATE_COMPLETION pending_create = nullptr;
    PVOID pending_create_context = nullptr;
    ULONG create_depths[5]{};
    PVOID create_qp_context = nullptr;
    // NdkConnect
    SOCKADDR_IN connect_dest{};
    ULONG connect_dest_length = 0;
    ULONG connect_ird = 0;
    ULONG connect_ord = 0;
    ULONG connect_private_length = 0;
    // NdkCloseQp
    NDK_OBJECT_HEADER* closed_object = nullptr;
};
provider_log g_provider;

// ---- fake provider (C style) ----------------------------------------------------------------

NDK_QP g_fake_qp;  // the QP the fake PD "creates"
NDK_CQ g_fake_cq;

NTSTATUS FakeCloseQp(NDK_OBJECT_HEADER* pNdkObject, NDK_FN_CLOSE_COMPLETION CloseCompletion,
                     PVOID RequestContext) {
    g_provider.closed_object = pNdkObject;
    /* PENDING means exactly one CloseCompletion; a provider may call it before returning. */
    CloseCompletion(RequestContext);
    return STATUS_PENDING;
}

NTSTATUS FakeSend(NDK_QP* pNdkQp, PVOID RequestContext, CONST NDK_SGE* pSgl, ULONG nSge,
                  ULONG Flags) {
    g_provider.sends++;
    g_provider.send_qp = pNdkQp;
    g_provider.send_context = RequestContext;
    g_provider.send_sge = pSgl[0];
    g_provider.send_nsge = nSge;
    g_provider.send_flags = Flags;
    return STATUS_SUCCESS;
}

NTSTATUS FakeRead(NDK_QP* pNdkQp, PVOID RequestContext, CONST NDK_SGE* pSgl, ULONG nSge,
                  UINT64 RemoteAddress, UINT32 RemoteToken, ULONG Flags) {
    ULONG i;
    g_provider.reads++;
    for (i = 0; i < nSge && i < 2; i++) {
        g_provider.read_sgl[i] = pSgl[i];
    }
    g_provider.read_nsge = nSge;
    g_provider.read_remote_address = RemoteAddress;
    g_provider.read_remote_token = RemoteToken;
    g_provider.read_flags = Flags;
    return STATUS_SUCCESS;
}

NTSTATUS FakeSendAndInvalidate(NDK_QP* pNdkQp, PVOID RequestContext, CONST NDK_SGE* pSgl,
                               ULONG nSge, ULONG Flags, UINT32 RemoteToken) {
    g_provider.send_inv_flags = Flags;
    g_provider.send_inv_token = RemoteToken;
    return STATUS_SUCCESS;
}

VOID FakeArmCq(NDK_CQ* pNdkCq, ULONG Type) {
    g_provider.arm_type = Type;
}

// Two completions queued: a receive and a send; delivered up to nResults at a time.
ULONG FakeGetCqResultsEx(NDK_CQ* pNdkCq, NDK_RESULT_EX Results[], ULONG nResults) {
    ULONG n = 0;
    ULONG& delivered = g_provider.cq_delivered;
    while (n < nResults && delivered < 2) {
        Results[n].Status = (delivered == 0) ? STATUS_SUCCESS : STATUS_CANCELLED;
        Results[n].BytesTransferred = (delivered == 0) ? 1500 : 0;
        Results[n].QPContext = (PVOID)0x51;
        Results[n].RequestContext = (PVOID)(ULONG_PTR)(0x100 + delivered);
        Results[n].Type = (delivered == 0) ? NdkOperationTypeReceive : NdkOperationTypeSend;
        Results[n].ProviderErrorCode = (delivered == 0) ? 0 : 0x77;
        Results[n].TypeSpecificCompletionOutput = 0;
        n++;
        delivered++;
    }
    return n;
}

NTSTATUS FakeCreateQp(NDK_PD* pNdkPd, NDK_CQ* pReceiveCq, NDK_CQ* pInitiatorCq, PVOID QPContext,
                      ULONG ReceiveQueueDepth, ULONG InitiatorQueueDepth,
                      ULONG MaxReceiveRequestSge, ULONG MaxInitiatorRequestSge,
                      ULONG InlineDataSize, NDK_FN_CREATE_COMPLETION CreateCompletion,
                      PVOID RequestContext, NDK_QP** ppNdkQp) {
    g_provider.create_depths[0] = ReceiveQueueDepth;
    g_provider.create_depths[1] = InitiatorQueueDepth;
    g_provider.create_depths[2] = MaxReceiveRequestSge;
    g_provider.create_depths[3] = MaxInitiatorRequestSge;
    g_provider.create_depths[4] = InlineDataSize;
    g_provider.create_qp_context = QPContext;
    g_provider.pending_create = CreateCompletion;
    g_provider.pending_create_context = RequestContext;
    return STATUS_PENDING;  // *ppNdkQp is ignored; the object arrives via CreateCompletion
}

NTSTATUS FakeConnect(NDK_CONNECTOR* pNdkConnector, NDK_QP* pNdkQp, CONST PSOCKADDR pSrcAddress,
                     ULONG SrcAddressLength, CONST PSOCKADDR pDestAddress, ULONG DestAddressLength,
                     ULONG InboundReadLimit, ULONG OutboundReadLimit, CONST PVOID pPrivateData,
                     ULONG PrivateDataLength, NDK_FN_REQUEST_COMPLETION RequestCompletion,
                     PVOID RequestContext) {
    memcpy(&g_provider.connect_dest, pDestAddress, sizeof(SOCKADDR_IN));
    g_provider.connect_dest_length = DestAddressLength;
    g_provider.connect_ird = InboundReadLimit;
    g_provider.connect_ord = OutboundReadLimit;
    g_provider.connect_private_length = PrivateDataLength;
    RequestCompletion(RequestContext, STATUS_CONNECTION_REFUSED);  // async failure
    return STATUS_PENDING;
}

// Needs 3 pages: reports the size first, then fills the caller's LAM.
NTSTATUS FakeBuildLam(NDK_ADAPTER* pNdkAdapter, MDL* Mdl, SIZE_T Length,
                      NDK_FN_REQUEST_COMPLETION RequestCompletion, PVOID RequestContext,
                      NDK_LOGICAL_ADDRESS_MAPPING* pNdkLAM, ULONG* pLAMSize, ULONG* pFBO) {
    ULONG pages = (ULONG)ADDRESS_AND_SIZE_TO_SPAN_PAGES(MmGetMdlVirtualAddress(Mdl), Length);
    ULONG needed = FIELD_OFFSET(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) +
                   pages * sizeof(NDK_LOGICAL_ADDRESS);
    ULONG i;
    if (*pLAMSize < needed) {
        *pLAMSize = needed;
        return STATUS_BUFFER_TOO_SMALL;
    }
    pNdkLAM->AdapterContext = NULL;
    pNdkLAM->AdapterPageCount = pages;
    for (i = 0; i < pages; i++) {
        pNdkLAM->AdapterPageArray[i].QuadPart = (LONGLONG)(MmGetMdlPfnArray(Mdl)[i] << PAGE_SHIFT);
    }
    *pLAMSize = needed;
    *pFBO = MmGetMdlByteOffset(Mdl);
    return STATUS_SUCCESS;
}

// ---- consumer (C style, as in Microsoft's docs and NDK sample) ------------------------------

NTSTATUS PostInlineSend(NDK_QP* Qp, PVOID RequestContext, PVOID Buffer, ULONG Length) {
    NDK_SGE sge;
    sge.VirtualAddress = Buffer;
    sge.Length = Length;
    sge.MemoryRegionToken = 0; /* ignored for NDK_OP_FLAG_INLINE */
    return Qp->Dispatch->NdkSend(Qp, RequestContext, &sge, 1, NDK_OP_FLAG_INLINE);
}

NTSTATUS PostFencedRead(NDK_QP* Qp, PVOID Buffer, ULONG Length, UINT32 LocalToken,
                        UINT64 RemoteAddress, UINT32 RemoteToken) {
    NDK_SGE sgl[2];
    sgl[0].VirtualAddress = Buffer;
    sgl[0].Length = Length / 2;
    sgl[0].MemoryRegionToken = LocalToken;
    sgl[1].VirtualAddress = (PUCHAR)Buffer + Length / 2;
    sgl[1].Length = Length - Length / 2;
    sgl[1].MemoryRegionToken = LocalToken;
    return Qp->Dispatch->NdkRead(Qp, NULL, sgl, 2, RemoteAddress, RemoteToken,
                                 NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_DEFER);
}

ULONG g_consumer_completions = 0;
NTSTATUS g_consumer_last_status = STATUS_SUCCESS;
NDK_QP* g_consumer_qp = NULL;

VOID ConsumerCreateCompletion(PVOID Context, NTSTATUS Status, NDK_OBJECT_HEADER* pNdkObject) {
    g_consumer_completions++;
    g_consumer_last_status = Status;
    if (NT_SUCCESS(Status)) {
        g_consumer_qp = CONTAINING_RECORD(pNdkObject, NDK_QP, Header);
    }
}

VOID ConsumerRequestCompletion(PVOID Context, NTSTATUS Status) {
    g_consumer_completions++;
    g_consumer_last_status = Status;
    *(PULONG)Context = 1;
}

VOID ConsumerCloseCompletion(PVOID Context) {
    *(PULONG)Context = 1;
}

TEST(NdkDocsStyle, InlineSendReachesProviderSendSlot) {
    const NDK_QP_DISPATCH qp_dispatch = {FakeCloseQp,
                                         SLOT(QP_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
                                         SLOT(QP_TABLE, 2, NDK_FN_FLUSH),
                                         FakeSend,
                                         SLOT(QP_TABLE, 4, NDK_FN_RECEIVE),
                                         SLOT(QP_TABLE, 5, NDK_FN_BIND),
                                         SLOT(QP_TABLE, 6, NDK_FN_FAST_REGISTER),
                                         SLOT(QP_TABLE, 7, NDK_FN_INVALIDATE),
                                         FakeRead,
                                         SLOT(QP_TABLE, 9, NDK_FN_WRITE),
                                         FakeSendAndInvalidate};
    NDK_QP qp;
    memset(&qp, 0, sizeof(qp));
    qp.Header.Version.Major = 1;
    qp.Header.Version.Minor = 2;
    qp.Header.ObjectType = NdkObjectTypeQp;
    qp.Dispatch = &qp_dispatch;

    char payload[64] = "hello rnic";
    PVOID ctx = (PVOID)0xC0FFEE;
    g_provider = {};
    EXPECT_EQ(PostInlineSend(&qp, ctx, payload, 11), STATUS_SUCCESS);
    EXPECT_EQ(g_provider.sends, 1);
    EXPECT_EQ(g_provider.send_qp, &qp);
    EXPECT_EQ(g_provider.send_context, ctx);
    EXPECT_EQ(g_provider.send_sge.VirtualAddress, payload);
    EXPECT_EQ(g_provider.send_sge.Length, 11u);
    EXPECT_EQ(g_provider.send_nsge, 1u);
    EXPECT_EQ(g_provider.send_flags, NDK_OP_FLAG_INLINE);

    // The exact call from the task brief.
    NDK_QP* const p_qp = &qp;
    const NDK_SGE sge[1] = {{{payload}, 4, 0x1234}};
    EXPECT_EQ(p_qp->Dispatch->NdkSend(p_qp, ctx, sge, 1, NDK_OP_FLAG_INLINE), STATUS_SUCCESS);
    EXPECT_EQ(g_provider.sends, 2);
    EXPECT_EQ(g_provider.send_sge.MemoryRegionToken, 0x1234u);

    EXPECT_EQ(PostFencedRead(&qp, payload, 64, 0xAA, 0x7000000000001000ull, 0xBB), STATUS_SUCCESS);
    EXPECT_EQ(g_provider.reads, 1);
    EXPECT_EQ(g_provider.read_nsge, 2u);
    EXPECT_EQ(g_provider.read_sgl[1].VirtualAddress, payload + 32);
    EXPECT_EQ(g_provider.read_sgl[1].Length, 32u);
    EXPECT_EQ(g_provider.read_remote_address, 0x7000000000001000ull);
    EXPECT_EQ(g_provider.read_remote_token, 0xBBu);
    EXPECT_EQ(g_provider.read_flags, NDK_OP_FLAG_READ_FENCE | NDK_OP_FLAG_DEFER);

    // SendAndInvalidate: Flags then RemoteToken.
    EXPECT_EQ(
        qp.Dispatch->NdkSendAndInvalidate(&qp, NULL, sge, 1, NDK_OP_FLAG_SILENT_SUCCESS, 0xDEAD),
        STATUS_SUCCESS);
    EXPECT_EQ(g_provider.send_inv_flags, NDK_OP_FLAG_SILENT_SUCCESS);
    EXPECT_EQ(g_provider.send_inv_token, 0xDEADu);

    ULONG closed = 0;
    EXPECT_EQ(qp.Dispatch->NdkCloseQp(&qp.Header, ConsumerCloseCompletion, &closed),
              STATUS_PENDING);
    EXPECT_EQ(closed, 1u);
    EXPECT_EQ(g_provider.closed_object, &qp.Header);
}

TEST(NdkDocsStyle, PendingCreateDeliversObjectThroughCompletion) {
    const NDK_PD_DISPATCH pd_dispatch = {
        SLOT(PD_TABLE, 0, NDK_FN_CLOSE_OBJECT),
        SLOT(PD_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
        SLOT(PD_TABLE, 2, NDK_FN_CREATE_MR),
        SLOT(PD_TABLE, 3, NDK_FN_CREATE_MW),
        SLOT(PD_TABLE, 4, NDK_FN_CREATE_SRQ),
        FakeCreateQp,
        SLOT(PD_TABLE, 6, NDK_FN_CREATE_QP_WITH_SRQ),
        SLOT(PD_TABLE, 7, NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN)};
    NDK_PD pd;
    memset(&pd, 0, sizeof(pd));
    pd.Header.ObjectType = NdkObjectTypePd;
    pd.Dispatch = &pd_dispatch;

    g_provider = {};
    g_consumer_completions = 0;
    g_consumer_qp = NULL;
    NDK_QP* qp = NULL;
    NTSTATUS status = pd.Dispatch->NdkCreateQp(&pd, &g_fake_cq, &g_fake_cq, (PVOID)0x51, 128, 64, 4,
                                               2, 256, ConsumerCreateCompletion, (PVOID)0x99, &qp);
    EXPECT_EQ(status, STATUS_PENDING);
    EXPECT_EQ(g_consumer_completions, 0u);
    EXPECT_EQ(g_provider.create_qp_context, (PVOID)0x51);
    const ULONG expected_depths[5] = {128, 64, 4, 2, 256};
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(g_provider.create_depths[i], expected_depths[i]) << "CreateQp ULONG #" << i;
    }

    // Later (e.g. when the command queue answers) the provider completes the create.
    ASSERT_NE(g_provider.pending_create, nullptr);
    g_provider.pending_create(g_provider.pending_create_context, STATUS_SUCCESS, &g_fake_qp.Header);
    EXPECT_EQ(g_consumer_completions, 1u);
    EXPECT_EQ(g_consumer_last_status, STATUS_SUCCESS);
    EXPECT_EQ(g_consumer_qp, &g_fake_qp);
}

TEST(NdkDocsStyle, CqArmAndResultsExDrainLoop) {
    const NDK_CQ_DISPATCH cq_dispatch = {SLOT(CQ_TABLE, 0, NDK_FN_CLOSE_OBJECT),
                                         SLOT(CQ_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
                                         SLOT(CQ_TABLE, 2, NDK_FN_RESIZE_CQ),
                                         FakeArmCq,
                                         SLOT(CQ_TABLE, 4, NDK_FN_GET_CQ_RESULTS),
                                         SLOT(CQ_TABLE, 5, NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION),
                                         FakeGetCqResultsEx};
    NDK_CQ cq;
    memset(&cq, 0, sizeof(cq));
    cq.Dispatch = &cq_dispatch;

    g_provider = {};
    cq.Dispatch->NdkArmCq(&cq, NDK_CQ_NOTIFY_SOLICITED);
    EXPECT_EQ(g_provider.arm_type, NDK_CQ_NOTIFY_SOLICITED);

    /* Consumer drain loop, one entry at a time. */
    NDK_RESULT_EX results[1];
    ULONG total = 0;
    ULONG bytes = 0;
    NTSTATUS statuses[4];
    ULONG errors[4];
    while (cq.Dispatch->NdkGetCqResultsEx(&cq, results, 1) == 1) {
        statuses[total] = results[0].Status;
        errors[total] = results[0].ProviderErrorCode;
        if (results[0].Type == NdkOperationTypeReceive) {
            bytes += results[0].BytesTransferred;
        }
        total++;
    }
    ASSERT_EQ(total, 2u);
    EXPECT_EQ(statuses[0], STATUS_SUCCESS);
    EXPECT_EQ(errors[0], 0u);
    EXPECT_EQ(statuses[1], STATUS_CANCELLED);
    EXPECT_EQ(errors[1], 0x77u);
    EXPECT_EQ(bytes, 1500u);
}

TEST(NdkDocsStyle, ConnectWithSockaddrIn) {
    const NDK_CONNECTOR_DISPATCH connector_dispatch = {
        SLOT(CONNECTOR_TABLE, 0, NDK_FN_CLOSE_OBJECT),
        SLOT(CONNECTOR_TABLE, 1, NDK_FN_QUERY_EXTENSION_INTERFACE),
        FakeConnect,
        SLOT(CONNECTOR_TABLE, 3, NDK_FN_CONNECT_WITH_SHARED_ENDPOINT),
        SLOT(CONNECTOR_TABLE, 4, NDK_FN_COMPLETE_CONNECT),
        SLOT(CONNECTOR_TABLE, 5, NDK_FN_ACCEPT),
        SLOT(CONNECTOR_TABLE, 6, NDK_FN_REJECT),
        SLOT(CONNECTOR_TABLE, 7, NDK_FN_GET_CONNECTION_DATA),
        SLOT(CONNECTOR_TABLE, 8, NDK_FN_GET_LOCAL_ADDRESS),
        SLOT(CONNECTOR_TABLE, 9, NDK_FN_GET_PEER_ADDRESS),
        SLOT(CONNECTOR_TABLE, 10, NDK_FN_DISCONNECT),
        SLOT(CONNECTOR_TABLE, 11, NDK_FN_COMPLETE_CONNECT_EX),
        SLOT(CONNECTOR_TABLE, 12, NDK_FN_ACCEPT_EX)};
    NDK_CONNECTOR connector;
    memset(&connector, 0, sizeof(connector));
    connector.Dispatch = &connector_dispatch;

    SOCKADDR_IN src;
    SOCKADDR_IN dst;
    memset(&src, 0, sizeof(src));
    memset(&dst, 0, sizeof(dst));
    src.sin_family = AF_INET;
    dst.sin_family = AF_INET;
    dst.sin_port = htons(445);
    dst.sin_addr.s_addr = htonl(0x0A000002);
    UCHAR private_data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    ULONG done = 0;

    g_provider = {};
    g_consumer_completions = 0;
    NTSTATUS status = connector.Dispatch->NdkConnect(
        &connector, &g_fake_qp, (PSOCKADDR)&src, sizeof(src), (PSOCKADDR)&dst, sizeof(dst), 8, 4,
        private_data, sizeof(private_data), ConsumerRequestCompletion, &done);
    EXPECT_EQ(status, STATUS_PENDING);
    EXPECT_EQ(done, 1u);
    EXPECT_EQ(g_consumer_completions, 1u);
    EXPECT_EQ(g_consumer_last_status, STATUS_CONNECTION_REFUSED);
    EXPECT_EQ(g_provider.connect_dest.sin_port, htons(445));
    EXPECT_EQ(g_provider.connect_dest.sin_addr.s_addr, htonl(0x0A000002));
    EXPECT_EQ(g_provider.connect_dest_length, sizeof(SOCKADDR_IN));
    EXPECT_EQ(g_provider.connect_ird, 8u);
    EXPECT_EQ(g_provider.connect_ord, 4u);
    EXPECT_EQ(g_provider.connect_private_length, 8u);
}

TEST(NdkDocsStyle, BuildLamSizeQueryThenFill) {
    const NDK_ADAPTER_DISPATCH adapter_dispatch = {
        SLOT(ADAPTER_TABLE, 0, NDK_FN_QUERY_EXTENSION_INTERFACE),
        SLOT(ADAPTER_TABLE, 1, NDK_FN_QUERY_ADAPTER_INFO),
        SLOT(ADAPTER_TABLE, 2, NDK_FN_CREATE_CQ),
        SLOT(ADAPTER_TABLE, 3, NDK_FN_CREATE_PD),
        SLOT(ADAPTER_TABLE, 4, NDK_FN_CREATE_SHARED_ENDPOINT),
        SLOT(ADAPTER_TABLE, 5, NDK_FN_CREATE_CONNECTOR),
        SLOT(ADAPTER_TABLE, 6, NDK_FN_CREATE_LISTENER),
        FakeBuildLam,
        SLOT(ADAPTER_TABLE, 8, NDK_FN_RELEASE_LAM)};
    NDK_ADAPTER adapter;
    memset(&adapter, 0, sizeof(adapter));
    adapter.Dispatch = &adapter_dispatch;

    // An MDL for 0x2000 bytes starting 0x100 into a page: spans 3 pages.
    ULONG_PTR mdl_storage[(sizeof(MDL) + 3 * sizeof(PFN_NUMBER)) / sizeof(ULONG_PTR)];
    PMDL mdl = (PMDL)mdl_storage;
    PVOID va = (PVOID)0x20000100ull;
    MmInitializeMdl(mdl, va, 0x2000);
    MmGetMdlPfnArray(mdl)[0] = 0x700;
    MmGetMdlPfnArray(mdl)[1] = 0x9A0;  // not contiguous: one LAM may need several SGEs
    MmGetMdlPfnArray(mdl)[2] = 0x9A1;

    ULONG lam_size = 0;
    ULONG fbo = MAXULONG;
    NTSTATUS status =
        adapter.Dispatch->NdkBuildLAM(&adapter, mdl, 0x2000, NULL, NULL, NULL, &lam_size, &fbo);
    EXPECT_EQ(status, STATUS_BUFFER_TOO_SMALL);
    EXPECT_EQ(lam_size, 16u + 3u * 8u);

    std::vector<UCHAR> lam_buffer(lam_size);
    NDK_LOGICAL_ADDRESS_MAPPING* lam = (NDK_LOGICAL_ADDRESS_MAPPING*)lam_buffer.data();
    status = adapter.Dispatch->NdkBuildLAM(&adapter, mdl, 0x2000, NULL, NULL, lam, &lam_size, &fbo);
    EXPECT_EQ(status, STATUS_SUCCESS);
    EXPECT_EQ(fbo, 0x100u);
    ASSERT_EQ(lam->AdapterPageCount, 3u);
    EXPECT_EQ(lam->AdapterPageArray[0].QuadPart, 0x700000);
    EXPECT_EQ(lam->AdapterPageArray[1].QuadPart, 0x9A0000);
    EXPECT_EQ(lam->AdapterPageArray[2].QuadPart, 0x9A1000);

    // An SGE addressing the LAM through the privileged token carries a logical address.
    NDK_SGE sge;
    sge.LogicalAddress.QuadPart = lam->AdapterPageArray[0].QuadPart + fbo;
    sge.Length = PAGE_SIZE - fbo;
    sge.MemoryRegionToken = 0x1; /* PD privileged token */
    EXPECT_EQ(reinterpret_cast<ULONG_PTR>(sge.VirtualAddress), 0x700100u);  // same 8 bytes
}

// =============================================================================================
// NDIS glue: a miniport's OpenNDKAdapterHandler using the documented version rule
// =============================================================================================

NDK_ADAPTER g_miniport_adapter;
const NDK_VERSION g_provider_highest = {1, 2};

NDIS_STATUS MiniportOpenNdkAdapter(NDIS_HANDLE MiniportAdapterContext,
                                   PNDIS_OPEN_NDK_ADAPTER_PARAMETERS Parameters,
                                   NDK_ADAPTER** ppNdkAdapter) {
    rnic::ndk::ndk_version_negotiation n =
        rnic::ndk::negotiate_ndk_version(Parameters->Version, g_provider_highest);
    if (n.status != NDIS_STATUS_SUCCESS) {
        return n.status;
    }
    memset(&g_miniport_adapter, 0, sizeof(g_miniport_adapter));
    g_miniport_adapter.Header.Version = n.version;
    g_miniport_adapter.Header.ObjectType = NdkObjectTypeAdapter;
    *ppNdkAdapter = &g_miniport_adapter;
    return NDIS_STATUS_SUCCESS;
}

VOID MiniportCloseNdkAdapter(NDIS_HANDLE MiniportAdapterContext, NDK_ADAPTER* pNdkAdapter) {
    pNdkAdapter->Header.ObjectType = NdkObjectTypeUndefined;
}

TEST(NdisGlue, VersionNegotiationRule) {
    using rnic::ndk::NDK_VERSION_1_1;
    using rnic::ndk::NDK_VERSION_1_2;
    using rnic::ndk::negotiate_ndk_version;
    EXPECT_EQ(NDK_VERSION_1_1.Major, 1);
    EXPECT_EQ(NDK_VERSION_1_1.Minor, 1);
    EXPECT_EQ(NDK_VERSION_1_2.Minor, 2);

    // Lower minor accepted, reported as the provider's highest ("asks 1.0, gets 1.1" example).
    auto n = negotiate_ndk_version({1, 0}, NDK_VERSION_1_1);
    EXPECT_EQ(n.status, NDIS_STATUS_SUCCESS);
    EXPECT_EQ(n.version, NDK_VERSION_1_1);
    n = negotiate_ndk_version(NDK_VERSION_1_1, NDK_VERSION_1_2);
    EXPECT_EQ(n.status, NDIS_STATUS_SUCCESS);
    EXPECT_EQ(n.version, NDK_VERSION_1_2);
    n = negotiate_ndk_version(NDK_VERSION_1_2, NDK_VERSION_1_2);
    EXPECT_EQ(n.status, NDIS_STATUS_SUCCESS);
    // Higher minor or different major: BAD_VERSION.
    EXPECT_EQ(negotiate_ndk_version({1, 3}, NDK_VERSION_1_2).status, NDIS_STATUS_BAD_VERSION);
    EXPECT_EQ(negotiate_ndk_version({2, 0}, NDK_VERSION_1_2).status, NDIS_STATUS_BAD_VERSION);
    EXPECT_EQ(negotiate_ndk_version({0, 9}, NDK_VERSION_1_2).status, NDIS_STATUS_BAD_VERSION);
    static_assert(negotiate_ndk_version({1, 1}, {1, 2}).version == NDK_VERSION_1_2);
}

TEST(NdisGlue, ProviderCharacteristicsRegisterOpenAndClose) {
    NDIS_NDK_PROVIDER_CHARACTERISTICS chars;
    memset(&chars, 0, sizeof(chars));
    chars.Header.Type = NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS;
    chars.Header.Revision = NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1;
    chars.Header.Size = NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1;
    chars.OpenNDKAdapterHandler = MiniportOpenNdkAdapter;
    chars.CloseNDKAdapterHandler = MiniportCloseNdkAdapter;
    EXPECT_EQ(chars.Header.Size, sizeof(chars));

    // What NDIS does on behalf of a consumer asking for 1.1.
    NDIS_OPEN_NDK_ADAPTER_PARAMETERS params;
    memset(&params, 0, sizeof(params));
    params.Version.Major = 1;
    params.Version.Minor = 1;
    NDK_ADAPTER* adapter = NULL;
    EXPECT_EQ(chars.OpenNDKAdapterHandler((NDIS_HANDLE)0x1234, &params, &adapter),
              NDIS_STATUS_SUCCESS);
    ASSERT_EQ(adapter, &g_miniport_adapter);
    EXPECT_EQ(adapter->Header.Version.Major, 1);
    EXPECT_EQ(adapter->Header.Version.Minor, 2);
    EXPECT_EQ(adapter->Header.ObjectType, NdkObjectTypeAdapter);
    chars.CloseNDKAdapterHandler((NDIS_HANDLE)0x1234, adapter);
    EXPECT_EQ(adapter->Header.ObjectType, NdkObjectTypeUndefined);

    params.Version.Major = 2;
    EXPECT_EQ(chars.OpenNDKAdapterHandler((NDIS_HANDLE)0x1234, &params, &adapter),
              NDIS_STATUS_BAD_VERSION);
    EXPECT_STREQ(ntstatus_name(NDIS_STATUS_BAD_VERSION), "NDIS_STATUS_BAD_VERSION");
}

// =============================================================================================
// NetDMA (netdma.h)
// =============================================================================================

TEST(NetDma, ControlFlagsAndConstants) {
    EXPECT_EQ(NET_DMA_INTERRUPT_ON_COMPLETION, 0x00000001u);
    EXPECT_EQ(NET_DMA_SOURCE_NO_SNOOP, 0x00000002u);
    EXPECT_EQ(NET_DMA_DESTINATION_NO_SNOOP, 0x00000004u);
    EXPECT_EQ(NET_DMA_STATUS_UPDATE_ON_COMPLETION, 0x00000008u);
    EXPECT_EQ(NET_DMA_SERIALIZE_TRANSFER, 0x00000010u);
    EXPECT_EQ(NET_DMA_NULL_TRANSFER, 0x00000020u);
    EXPECT_EQ(NET_DMA_SOURCE_PAGE_BREAK, 0x00000040u);
    EXPECT_EQ(NET_DMA_DESTINATION_PAGE_BREAK, 0x00000080u);
    EXPECT_EQ(NET_DMA_DESTINATION_DCA_ENABLE, 0x00000200u);
    EXPECT_EQ(NET_DMA_OP_TYPE_STANDARD_DMA, 0x00000000u);
    EXPECT_EQ(NET_DMA_OP_TYPE_CONTEXT_CHANGE, 0xFF000000u);
    EXPECT_EQ(NET_DMA_DCA_CONTEXT_CHANGE, 0x00000001u);
    EXPECT_EQ(NET_DMA_TRANSFER_STATUS_MASK, 0x7u);
    EXPECT_EQ(NetDmaTransferStatusActive, 0);
    EXPECT_EQ(NetDmaTransferStatusIdle, 1);
    EXPECT_EQ(NetDmaTransferStatusSuspend, 2);
    EXPECT_EQ(NetDmaTransferStatusHalted, 3);
    EXPECT_EQ(NetDmaTransferStatusArmed, 4);
    EXPECT_EQ(NET_DMA_PROVIDER_REVISION_1, 1);
    EXPECT_EQ(NET_DMA_PROVIDER_REVISION_2, 2);
    EXPECT_EQ(NET_DMA_CHANNEL_REVISION_1, 1);
    EXPECT_EQ(NET_DMA_CHANNEL_REVISION_2, 2);
    EXPECT_EQ(NET_DMA_PROVIDER_CHARACTERISTICS_DCA_SUPPORTED, 0x1u);
    EXPECT_EQ(NET_DMA_PROVIDER_SUPPORTS_PROC_GROUPS, 0x2u);
    EXPECT_EQ(NET_DMA_PNP_NOTIFICATION_REVISION_1, 1u);
    EXPECT_EQ(NetDmaNotificationProviderRegistered, 1);
    EXPECT_EQ(NetDmaNotificationProviderArrival, 2);
    EXPECT_EQ(NetDmaNotificationProviderRemoval, 3);
    EXPECT_EQ(NetDmaNotificationChannelArrival, 4);
    EXPECT_EQ(NetDmaNotificationProviderPowerDown, 5);
    EXPECT_EQ(NetDmaNotificationProviderPowerUp, 6);
    EXPECT_EQ(NetDmaNotificationMax, 7);
}

TEST(NetDma, DescriptorIs64BytesWithDocumentedOffsets) {
    EXPECT_EQ(sizeof(NET_DMA_DESCRIPTOR), 64u);
    NET_DMA_DESCRIPTOR d;
    memset(&d, 0, sizeof(d));
    d.TransferSize = 0x11223344;
    d.ControlFlags = NET_DMA_INTERRUPT_ON_COMPLETION | NET_DMA_STATUS_UPDATE_ON_COMPLETION;
    d.SourceAddress.QuadPart = 0x1000;
    d.DestinationAddress.QuadPart = 0x2000;
    d.NextDescriptor.QuadPart = 0x3000;
    d.NextSourceAddress.QuadPart = 0x4000;
    d.NextDestinationAddress.QuadPart = 0x5000;
    d.UserContext1 = 0x6000;
    d.UserContext2 = 0x7000;

    // Read back through raw bytes, the way the DMA engine model sees a descriptor in memory.
    UCHAR raw[64];
    memcpy(raw, &d, sizeof(raw));
    auto u32 = [&raw](size_t off) {
        uint32_t v;
        memcpy(&v, raw + off, 4);
        return v;
    };
    auto u64 = [&raw](size_t off) {
        uint64_t v;
        memcpy(&v, raw + off, 8);
        return v;
    };
    EXPECT_EQ(u32(0), 0x11223344u);
    EXPECT_EQ(u32(4), 0x9u);
    EXPECT_EQ(u64(8), 0x1000u);
    EXPECT_EQ(u64(16), 0x2000u);
    EXPECT_EQ(u64(24), 0x3000u);
    EXPECT_EQ(u64(32), 0x4000u);
    EXPECT_EQ(u64(40), 0x5000u);
    EXPECT_EQ(u64(48), 0x6000u);
    EXPECT_EQ(u64(56), 0x7000u);
    EXPECT_EQ(d.Reserved1, 0x4000u);  // union with NextSourceAddress
    EXPECT_EQ(d.Reserved2, 0x5000u);

    // DCA context views alias the low bits of TransferSize (APIC id in context-change ops).
    EXPECT_EQ(d.DCAContext32.DCAContext, 0x11223344u);
    EXPECT_EQ(d.DCAContext16.DCAContext, 0x3344u);
    EXPECT_EQ(d.DCAContext8.DCAContext, 0x44u);
    d.DCAContext8.DCAContext = 0x0F;
    EXPECT_EQ(d.TransferSize, 0x1122330Fu);
}

TEST(NetDma, CompletionWordCarriesDescriptorAddressAndStatus) {
    // 64-bit completion word = PA of last completed descriptor | status (descriptors are 64-byte
    // aligned, so the low bits are free).
    const ULONG64 last_descriptor_pa = 0x00000001234567C0ull;
    const ULONG64 word = last_descriptor_pa | NetDmaTransferStatusIdle;
    EXPECT_EQ(word & NET_DMA_TRANSFER_STATUS_MASK, static_cast<ULONG64>(NetDmaTransferStatusIdle));
    EXPECT_EQ(word & ~static_cast<ULONG64>(NET_DMA_TRANSFER_STATUS_MASK), last_descriptor_pa);
    EXPECT_EQ(NetDmaTransferStatusArmed & ~NET_DMA_TRANSFER_STATUS_MASK, 0u);  // fits in 3 bits
}

TEST(NetDma, StructureLayouts) {
    EXPECT_EQ(sizeof(NET_DMA_CHANNEL_CPU_AFFINITY), 8u);
    EXPECT_EQ(sizeof(NET_DMA_CHANNEL_PARAMETERS), 56u);
    EXPECT_EQ(offsetof(NET_DMA_CHANNEL_PARAMETERS, CompletionPhysicalAddress), 16u);
    EXPECT_EQ(offsetof(NET_DMA_CHANNEL_PARAMETERS, CpuNumber), 32u);
    EXPECT_EQ(offsetof(NET_DMA_CHANNEL_PARAMETERS, ProcessorAffinityMaskEx), 40u);
    EXPECT_EQ(SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_1, 36);
    EXPECT_EQ(SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_2, 56);
    EXPECT_EQ(sizeof(NET_DMA_PROVIDER_CHARACTERISTICS), 112u);
    EXPECT_EQ(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, SetDmaChannelCpuAffinity), 24u);
    EXPECT_EQ(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, ResetChannel), 88u);
    EXPECT_EQ(offsetof(NET_DMA_PROVIDER_CHARACTERISTICS, FriendlyName), 96u);
    EXPECT_EQ(sizeof(NET_DMA_PROVIDER_ATTRIBUTES), 32u);
    EXPECT_EQ(offsetof(NET_DMA_PROVIDER_ATTRIBUTES, MaximumAddressSpace), 24u);
    EXPECT_EQ(sizeof(NET_DMA_PNP_NOTIFICATION), 32u);
    EXPECT_EQ(offsetof(NET_DMA_PNP_NOTIFICATION, Buffer), 16u);
}

TEST(NetDma, CallbackAndServiceSignatures) {
    EXPECT_TRUE((same<DMA_CHANNELS_CPU_AFFINITY_HANDLER,
                      NTSTATUS (*)(PVOID, PNET_DMA_CHANNEL_CPU_AFFINITY, ULONG)>));
    EXPECT_TRUE((same<DMA_CHANNEL_ALLOCATE_HANDLER,
                      NTSTATUS (*)(PVOID, PNET_DMA_CHANNEL_PARAMETERS, PVOID, PVOID*)>));
    EXPECT_TRUE((same<DMA_CHANNEL_FREE_HANDLER, void (*)(PVOID)>));
    EXPECT_TRUE((same<DMA_START_HANDLER,
                      NTSTATUS (*)(PVOID, PNET_DMA_DESCRIPTOR, PHYSICAL_ADDRESS, ULONG)>));
    EXPECT_TRUE((same<DMA_APPEND_HANDLER,
                      NTSTATUS (*)(PVOID, PNET_DMA_DESCRIPTOR, PHYSICAL_ADDRESS, ULONG)>));
    EXPECT_TRUE((same<DMA_SUSPEND_HANDLER, NTSTATUS (*)(PVOID, PPHYSICAL_ADDRESS*)>));
    EXPECT_TRUE((same<DMA_RESUME_HANDLER, NTSTATUS (*)(PVOID)>));
    EXPECT_TRUE((same<DMA_ABORT_HANDLER, NTSTATUS (*)(PVOID)>));
    EXPECT_TRUE((same<DMA_RESET_HANDLER, NTSTATUS (*)(PVOID)>));
    // Declarations only (defined by the shim's NetDMA implementation): checked unevaluated.
    EXPECT_TRUE((same<decltype(&NetDmaRegisterProvider),
                      NTSTATUS (*)(PVOID, PVOID*, PNET_DMA_PROVIDER_CHARACTERISTICS)>));
    EXPECT_TRUE((same<decltype(&NetDmaDeregisterProvider), void (*)(PVOID)>));
    EXPECT_TRUE(
        (same<decltype(&NetDmaProviderStart), void (*)(PVOID, PNET_DMA_PROVIDER_ATTRIBUTES)>));
    EXPECT_TRUE((same<decltype(&NetDmaProviderStop), void (*)(PVOID)>));
    EXPECT_TRUE((same<decltype(&NetDmaIsr), void (*)(PVOID, PHYSICAL_ADDRESS, PULONG)>));
    EXPECT_TRUE((same<decltype(&NetDmaInterruptDpc), void (*)(PVOID, PHYSICAL_ADDRESS)>));
    EXPECT_TRUE((same<decltype(&NetDmaGetVersion), UINT (*)()>));
    EXPECT_TRUE(
        (same<decltype(&NetDmaPnPEventNotify), void (*)(PVOID, PNET_DMA_PNP_NOTIFICATION)>));
}

// ---- docs-style NetDMA provider (C style) ---------------------------------------------------

struct fake_channel {
    PVOID netdma_handle;
    ULONG cpu;
    PNET_DMA_DESCRIPTOR first;
    LONGLONG first_pa;
    ULONG count;
};
fake_channel g_channel;
ULONG g_affinity_entries = 0;

NTSTATUS ProviderSetAffinity(PVOID ProviderContext, PNET_DMA_CHANNEL_CPU_AFFINITY CpuAffinityArray,
                             ULONG CpuAffinityArraySize) {
    g_affinity_entries = CpuAffinityArraySize / sizeof(NET_DMA_CHANNEL_CPU_AFFINITY);
    return STATUS_SUCCESS;
}

NTSTATUS ProviderAllocateChannel(PVOID ProviderContext,
                                 PNET_DMA_CHANNEL_PARAMETERS ChannelParameters,
                                 PVOID NetDmaChannelHandle, PVOID* pProviderChannelContext) {
    if (ChannelParameters->Revision < NET_DMA_CHANNEL_REVISION_1 ||
        ChannelParameters->Size < SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_1) {
        return STATUS_INVALID_PARAMETER;
    }
    g_channel.netdma_handle = NetDmaChannelHandle;
    g_channel.cpu = (ChannelParameters->Revision >= NET_DMA_CHANNEL_REVISION_2)
                        ? (ULONG)ChannelParameters->ProcessorAffinityMaskEx.Group * 64 + 3
                        : 3;
    ChannelParameters->CpuNumber = g_channel.cpu;
    *pProviderChannelContext = &g_channel;
    return STATUS_SUCCESS;
}

VOID ProviderFreeChannel(PVOID ProviderChannelContext) {
    ((fake_channel*)ProviderChannelContext)->netdma_handle = NULL;
}

NTSTATUS ProviderStartDma(PVOID ProviderChannelContext,
                          PNET_DMA_DESCRIPTOR DescriptorVirtualAddress,
                          PHYSICAL_ADDRESS DescriptorPhysicalAddress, ULONG DescriptorCount) {
    fake_channel* channel = (fake_channel*)ProviderChannelContext;
    channel->first = DescriptorVirtualAddress;
    channel->first_pa = DescriptorPhysicalAddress.QuadPart;
    channel->count = DescriptorCount;
    return STATUS_SUCCESS;
}

NTSTATUS ProviderAppendDma(PVOID ProviderChannelContext,
                           PNET_DMA_DESCRIPTOR DescriptorVirtualAddress,
                           PHYSICAL_ADDRESS DescriptorPhysicalAddress, ULONG DescriptorCount) {
    ((fake_channel*)ProviderChannelContext)->count += DescriptorCount;
    return STATUS_SUCCESS;
}

TEST(NetDma, DocsStyleProviderCharacteristicsDriveChannel) {
    static WCHAR name[] = u"rnicsim NetDMA";
    NET_DMA_PROVIDER_CHARACTERISTICS chars;
    memset(&chars, 0, sizeof(chars));
    chars.MajorVersion = 2;
    chars.MinorVersion = 0;
    chars.Size = sizeof(chars);
    chars.Flags = NET_DMA_PROVIDER_SUPPORTS_PROC_GROUPS;
    chars.MaxDmaChannelCount = 4;
    chars.SetDmaChannelCpuAffinity = ProviderSetAffinity;
    chars.AllocateDmaChannel = ProviderAllocateChannel;
    chars.FreeDmaChannel = ProviderFreeChannel;
    chars.StartDma = ProviderStartDma;
    chars.AppendDma = ProviderAppendDma;
    chars.FriendlyName.Buffer = name;
    chars.FriendlyName.Length = (USHORT)((sizeof(name) / sizeof(WCHAR) - 1) * sizeof(WCHAR));
    chars.FriendlyName.MaximumLength = sizeof(name);
    EXPECT_EQ(chars.FriendlyName.Length, 28u);  // bytes, not characters
    EXPECT_EQ(chars.SuspendDma, nullptr);       // optional handlers left NULL

    // What NetDMA does: affinity, then allocate (Win7 revision), start, append.
    NET_DMA_CHANNEL_CPU_AFFINITY affinity[4];
    memset(affinity, 0, sizeof(affinity));
    EXPECT_EQ(chars.SetDmaChannelCpuAffinity(NULL, affinity, sizeof(affinity)), STATUS_SUCCESS);
    EXPECT_EQ(g_affinity_entries, 4u);

    NET_DMA_CHANNEL_PARAMETERS params;
    memset(&params, 0, sizeof(params));
    params.Revision = NET_DMA_CHANNEL_REVISION_2;
    params.Size = SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_2;
    params.ProcessorAffinityMaskEx.Group = 1;
    params.ProcessorAffinityMaskEx.Mask = 0x8;
    PVOID channel_context = NULL;
    EXPECT_EQ(chars.AllocateDmaChannel(NULL, &params, (PVOID)0xCAFE, &channel_context),
              STATUS_SUCCESS);
    EXPECT_EQ(channel_context, &g_channel);
    EXPECT_EQ(params.CpuNumber, 67u);
    EXPECT_EQ(g_channel.netdma_handle, (PVOID)0xCAFE);

    NET_DMA_DESCRIPTOR ring[3];
    memset(ring, 0, sizeof(ring));
    PHYSICAL_ADDRESS ring_pa;
    ring_pa.QuadPart = 0x40000;
    for (int i = 0; i < 3; ++i) {
        ring[i].TransferSize = 4096;
        ring[i].NextDescriptor.QuadPart = ring_pa.QuadPart + (i + 1) * sizeof(NET_DMA_DESCRIPTOR);
    }
    ring[2].ControlFlags = NET_DMA_INTERRUPT_ON_COMPLETION | NET_DMA_STATUS_UPDATE_ON_COMPLETION;
    EXPECT_EQ(chars.StartDma(channel_context, ring, ring_pa, 2), STATUS_SUCCESS);
    EXPECT_EQ(g_channel.first, ring);
    EXPECT_EQ(g_channel.first_pa, 0x40000);
    PHYSICAL_ADDRESS tail_pa;
    tail_pa.QuadPart = ring[1].NextDescriptor.QuadPart;
    EXPECT_EQ(tail_pa.QuadPart, 0x40080);
    EXPECT_EQ(chars.AppendDma(channel_context, &ring[2], tail_pa, 1), STATUS_SUCCESS);
    EXPECT_EQ(g_channel.count, 3u);
    chars.FreeDmaChannel(channel_context);
    EXPECT_EQ(g_channel.netdma_handle, nullptr);
}

}  // namespace
