// SPDX-License-Identifier: Apache-2.0
// NTSTATUS (and the few NDIS_STATUS) codes used by NDKPI and NetDMA, plus ntstatus_name().
//
// Values: /work/shared/reference/ndkpi.md section 7.2 (Wine ntstatus.h + Network Direct
// ndstatus.h); NDIS_STATUS codes are the ones section 9 (ndisndk.h, version negotiation) returns,
// with ndis.h's values. Constants are `inline constexpr NTSTATUS` at global scope so
// docs-style code can use them unqualified, in `switch` labels and in constant expressions.
// Codes >= 0x80000000 (warnings, errors) are negative as NTSTATUS, as on Windows.
//
// Notes from the reference:
//  - NetDMA documentation mentions STATUS_RESOURCES, which does not exist; NetDMA providers
//    return STATUS_INSUFFICIENT_RESOURCES (== NDIS_STATUS_RESOURCES). [ref 7.2, U]
//  - ND_REMOTE_ERROR (user-mode Network Direct) is STATUS_REMOTE_RESOURCES. [ref 7.1]
#pragma once

#include <cstdint>

#include "ndk_shim/ndk_types.h"

// --- success and informational (severity 0) ------------------------------------------------
inline constexpr NTSTATUS STATUS_SUCCESS = ((NTSTATUS)0x00000000L);
inline constexpr NTSTATUS STATUS_TIMEOUT = ((NTSTATUS)0x00000102L);
inline constexpr NTSTATUS STATUS_PENDING = ((NTSTATUS)0x00000103L);  // async: callback follows

// --- warnings (severity 2): NT_SUCCESS() is false ------------------------------------------
inline constexpr NTSTATUS STATUS_BUFFER_OVERFLOW =
    ((NTSTATUS)0x80000005L);  // CQ overrun; recv too small

// --- errors (severity 3) ---------------------------------------------------------------------
inline constexpr NTSTATUS STATUS_UNSUCCESSFUL = ((NTSTATUS)0xC0000001L);
inline constexpr NTSTATUS STATUS_NOT_IMPLEMENTED = ((NTSTATUS)0xC0000002L);
inline constexpr NTSTATUS STATUS_ACCESS_VIOLATION = ((NTSTATUS)0xC0000005L);
inline constexpr NTSTATUS STATUS_INVALID_HANDLE = ((NTSTATUS)0xC0000008L);
inline constexpr NTSTATUS STATUS_INVALID_PARAMETER = ((NTSTATUS)0xC000000DL);
inline constexpr NTSTATUS STATUS_NO_MEMORY = ((NTSTATUS)0xC0000017L);
inline constexpr NTSTATUS STATUS_BUFFER_TOO_SMALL = ((NTSTATUS)0xC0000023L);
inline constexpr NTSTATUS STATUS_INVALID_PARAMETER_MIX = ((NTSTATUS)0xC0000030L);
inline constexpr NTSTATUS STATUS_DATA_OVERRUN = ((NTSTATUS)0xC000003CL);
inline constexpr NTSTATUS STATUS_DATA_ERROR = ((NTSTATUS)0xC000003EL);
inline constexpr NTSTATUS STATUS_SHARING_VIOLATION = ((NTSTATUS)0xC0000043L);
inline constexpr NTSTATUS STATUS_INSUFFICIENT_RESOURCES = ((NTSTATUS)0xC000009AL);
inline constexpr NTSTATUS STATUS_DEVICE_NOT_READY = ((NTSTATUS)0xC00000A3L);
inline constexpr NTSTATUS STATUS_IO_TIMEOUT = ((NTSTATUS)0xC00000B5L);
inline constexpr NTSTATUS STATUS_NOT_SUPPORTED = ((NTSTATUS)0xC00000BBL);
inline constexpr NTSTATUS STATUS_INTERNAL_ERROR = ((NTSTATUS)0xC00000E5L);
inline constexpr NTSTATUS STATUS_CANCELLED = ((NTSTATUS)0xC0000120L);  // flushed requests
inline constexpr NTSTATUS STATUS_REMOTE_DISCONNECT = ((NTSTATUS)0xC000013CL);
inline constexpr NTSTATUS STATUS_REMOTE_RESOURCES = ((NTSTATUS)0xC000013DL);
inline constexpr NTSTATUS STATUS_INVALID_ADDRESS = ((NTSTATUS)0xC0000141L);
inline constexpr NTSTATUS STATUS_INVALID_DEVICE_STATE = ((NTSTATUS)0xC0000184L);
inline constexpr NTSTATUS STATUS_INVALID_BUFFER_SIZE = ((NTSTATUS)0xC0000206L);
inline constexpr NTSTATUS STATUS_TOO_MANY_ADDRESSES = ((NTSTATUS)0xC0000209L);
inline constexpr NTSTATUS STATUS_ADDRESS_ALREADY_EXISTS = ((NTSTATUS)0xC000020AL);
inline constexpr NTSTATUS STATUS_CONNECTION_DISCONNECTED = ((NTSTATUS)0xC000020CL);
inline constexpr NTSTATUS STATUS_CONNECTION_RESET = ((NTSTATUS)0xC000020DL);
inline constexpr NTSTATUS STATUS_CONNECTION_REFUSED = ((NTSTATUS)0xC0000236L);
inline constexpr NTSTATUS STATUS_CONNECTION_INVALID = ((NTSTATUS)0xC000023AL);  // QP not connected
inline constexpr NTSTATUS STATUS_NETWORK_UNREACHABLE = ((NTSTATUS)0xC000023CL);
inline constexpr NTSTATUS STATUS_HOST_UNREACHABLE = ((NTSTATUS)0xC000023DL);
inline constexpr NTSTATUS STATUS_REQUEST_ABORTED = ((NTSTATUS)0xC0000240L);
inline constexpr NTSTATUS STATUS_CONNECTION_ABORTED = ((NTSTATUS)0xC0000241L);
inline constexpr NTSTATUS STATUS_IMPLEMENTATION_LIMIT = ((NTSTATUS)0xC000042BL);

// --- NDIS_STATUS codes returned by the NDIS glue (ref section 9, values from ndis.h) ---------
inline constexpr NDIS_STATUS NDIS_STATUS_SUCCESS = ((NDIS_STATUS)STATUS_SUCCESS);
inline constexpr NDIS_STATUS NDIS_STATUS_PENDING = ((NDIS_STATUS)STATUS_PENDING);
inline constexpr NDIS_STATUS NDIS_STATUS_FAILURE = ((NDIS_STATUS)STATUS_UNSUCCESSFUL);
inline constexpr NDIS_STATUS NDIS_STATUS_RESOURCES = ((NDIS_STATUS)STATUS_INSUFFICIENT_RESOURCES);
inline constexpr NDIS_STATUS NDIS_STATUS_BAD_VERSION = ((NDIS_STATUS)0xC0010004L);
inline constexpr NDIS_STATUS NDIS_STATUS_ADAPTER_NOT_READY = ((NDIS_STATUS)0xC0010011L);

namespace rnic::ndk {

// Symbolic name of a status defined above, or nullptr if it is not one of them. Constant-
// evaluable; NDIS_STATUS aliases of NTSTATUS values report the STATUS_* name.
constexpr const char* ntstatus_known_name(NTSTATUS status) noexcept {
    switch (status) {
        case STATUS_SUCCESS:
            return "STATUS_SUCCESS";
        case STATUS_TIMEOUT:
            return "STATUS_TIMEOUT";
        case STATUS_PENDING:
            return "STATUS_PENDING";
        case STATUS_BUFFER_OVERFLOW:
            return "STATUS_BUFFER_OVERFLOW";
        case STATUS_UNSUCCESSFUL:
            return "STATUS_UNSUCCESSFUL";
        case STATUS_NOT_IMPLEMENTED:
            return "STATUS_NOT_IMPLEMENTED";
        case STATUS_ACCESS_VIOLATION:
            return "STATUS_ACCESS_VIOLATION";
        case STATUS_INVALID_HANDLE:
            return "STATUS_INVALID_HANDLE";
        case STATUS_INVALID_PARAMETER:
            return "STATUS_INVALID_PARAMETER";
        case STATUS_NO_MEMORY:
            return "STATUS_NO_MEMORY";
        case STATUS_BUFFER_TOO_SMALL:
            return "STATUS_BUFFER_TOO_SMALL";
        case STATUS_INVALID_PARAMETER_MIX:
            return "STATUS_INVALID_PARAMETER_MIX";
        case STATUS_DATA_OVERRUN:
            return "STATUS_DATA_OVERRUN";
        case STATUS_DATA_ERROR:
            return "STATUS_DATA_ERROR";
        case STATUS_SHARING_VIOLATION:
            return "STATUS_SHARING_VIOLATION";
        case STATUS_INSUFFICIENT_RESOURCES:
            return "STATUS_INSUFFICIENT_RESOURCES";
        case STATUS_DEVICE_NOT_READY:
            return "STATUS_DEVICE_NOT_READY";
        case STATUS_IO_TIMEOUT:
            return "STATUS_IO_TIMEOUT";
        case STATUS_NOT_SUPPORTED:
            return "STATUS_NOT_SUPPORTED";
        case STATUS_INTERNAL_ERROR:
            return "STATUS_INTERNAL_ERROR";
        case STATUS_CANCELLED:
            return "STATUS_CANCELLED";
        case STATUS_REMOTE_DISCONNECT:
            return "STATUS_REMOTE_DISCONNECT";
        case STATUS_REMOTE_RESOURCES:
            return "STATUS_REMOTE_RESOURCES";
        case STATUS_INVALID_ADDRESS:
            return "STATUS_INVALID_ADDRESS";
        case STATUS_INVALID_DEVICE_STATE:
            return "STATUS_INVALID_DEVICE_STATE";
        case STATUS_INVALID_BUFFER_SIZE:
            return "STATUS_INVALID_BUFFER_SIZE";
        case STATUS_TOO_MANY_ADDRESSES:
            return "STATUS_TOO_MANY_ADDRESSES";
        case STATUS_ADDRESS_ALREADY_EXISTS:
            return "STATUS_ADDRESS_ALREADY_EXISTS";
        case STATUS_CONNECTION_DISCONNECTED:
            return "STATUS_CONNECTION_DISCONNECTED";
        case STATUS_CONNECTION_RESET:
            return "STATUS_CONNECTION_RESET";
        case STATUS_CONNECTION_REFUSED:
            return "STATUS_CONNECTION_REFUSED";
        case STATUS_CONNECTION_INVALID:
            return "STATUS_CONNECTION_INVALID";
        case STATUS_NETWORK_UNREACHABLE:
            return "STATUS_NETWORK_UNREACHABLE";
        case STATUS_HOST_UNREACHABLE:
            return "STATUS_HOST_UNREACHABLE";
        case STATUS_REQUEST_ABORTED:
            return "STATUS_REQUEST_ABORTED";
        case STATUS_CONNECTION_ABORTED:
            return "STATUS_CONNECTION_ABORTED";
        case STATUS_IMPLEMENTATION_LIMIT:
            return "STATUS_IMPLEMENTATION_LIMIT";
        case NDIS_STATUS_BAD_VERSION:
            return "NDIS_STATUS_BAD_VERSION";
        case NDIS_STATUS_ADAPTER_NOT_READY:
            return "NDIS_STATUS_ADAPTER_NOT_READY";
        default:
            return nullptr;
    }
}

// Symbolic name of `status` for logs and test messages, e.g. "STATUS_CANCELLED". Unknown codes
// are spelled "STATUS_0x" + 8 upper-case hex digits (e.g. "STATUS_0xC0001234") in a
// thread-local buffer that stays valid until the next unknown-code call on the same thread.
inline const char* ntstatus_name(NTSTATUS status) noexcept {
    if (const char* known = ntstatus_known_name(status)) {
        return known;
    }
    thread_local char buffer[] = "STATUS_0x00000000";
    constexpr size_t first_digit = sizeof("STATUS_0x") - 1;
    const auto bits = static_cast<uint32_t>(status);
    for (size_t i = 0; i < 8; ++i) {
        buffer[first_digit + i] = "0123456789ABCDEF"[(bits >> (28 - 4 * i)) & 0xF];
    }
    return buffer;
}

}  // namespace rnic::ndk

// Docs-style (unqualified) access from consumer code outside rnic::ndk.
using rnic::ndk::ntstatus_known_name;
using rnic::ndk::ntstatus_name;
