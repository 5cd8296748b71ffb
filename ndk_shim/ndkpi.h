// SPDX-License-Identifier: Apache-2.0
// NDKPI provider ABI (ndkpi.h + ndkinfo.h + ndisndk.h) for the shim, Windows x64 layout.
//
// Mirrors /work/shared/reference/ndkpi.md: object model and dispatch-table order (section 1,
// 1.1), common data types (2, 2.1), flag values (3), every provider entry point and consumer
// callback as NDK_FN_* pointer typedefs with the documented parameter order (4.1-4.8), and the
// NDIS glue a miniport registers (9). NDKPI 1.2 is the base; the NDKPI 2.1 additions are
// included (NDK_RESULT_EX.ProviderErrorCode in former x64 padding, the *_EX disconnect callback,
// NdkCompleteConnectEx/NdkAcceptEx as the last two connector slots). Like the WDK the types live
// at global scope in `typedef struct _X {...} X;` form, so C-style consumer code written against
// Microsoft's documentation compiles unchanged: qp->Dispatch->NdkSend(qp, ctx, sge, 1, flags).
//
// ABI pins: every size and offset the reference gives ([C] figures) and the offset of every
// dispatch slot (8 bytes per entry, in documented order) are static_asserts next to the types.
// Not here: behaviour (ndk_shim's provider implements it), SAL meaning (annotations are no-ops).
#pragma once

#include <cstddef>

#include "ndk_shim/ndk_types.h"
#include "ndk_shim/ntstatus.h"

// Static-assert helpers, #undef'd at the end of this header.
#define RNIC_NDK_ASSERT_SLOT(table, member, slot)                    \
    static_assert(offsetof(table, member) == (slot) * sizeof(PVOID), \
                  #table "." #member " must be dispatch slot " #slot)
#define RNIC_NDK_ASSERT_TABLE_SLOTS(table, slots) \
    static_assert(sizeof(table) == (slots) * sizeof(PVOID), #table " must have " #slots " slots")
#define RNIC_NDK_ASSERT_OBJECT(object)                                                             \
    static_assert(                                                                                 \
        sizeof(object) == 48 && offsetof(object, Header) == 0 && offsetof(object, Dispatch) == 40, \
        #object " must be NDK_OBJECT_HEADER (40 bytes) + Dispatch")

// =============================================================================================
// ndkinfo.h: version and adapter information (ref sections 1 and 2.1)
// =============================================================================================

// NDK interface version. 1.1 = {1,1} (Windows Server 2012, NDIS 6.30); 1.2 = {1,2} (WS2012 R2,
// NDIS 6.40). Providers put the negotiated version in NDK_ADAPTER_INFO and every object header.
typedef struct _NDK_VERSION {
    USHORT Major;
    USHORT Minor;
} NDK_VERSION;
static_assert(sizeof(NDK_VERSION) == 4 && offsetof(NDK_VERSION, Minor) == 2);

typedef enum _NDK_RDMA_TECHNOLOGY : int {
    NdkUndefined = 0,
    NdkiWarp = 1,
    NdkInfiniBand = 2,
    NdkRoCE = 3,
    NdkRoCEv2 = 4,
    NdkMaxTechnology = 5
} NDK_RDMA_TECHNOLOGY;
static_assert(sizeof(NDK_RDMA_TECHNOLOGY) == 4);

// Adapter limits and capabilities returned by NdkQueryAdapterInfo. 104 bytes on x64 [C].
typedef struct _NDK_ADAPTER_INFO {
    NDK_VERSION Version;         // NDK interface version in use
    UINT32 VendorId;             // vendor OUI
    UINT32 DeviceId;             // vendor-defined
    SIZE_T MaxRegistrationSize;  // bytes addressable by one registration
    SIZE_T MaxWindowSize;        // max bytes in one memory window
    ULONG FRMRPageCount;         // fast-register MR size in pages at max FRMR count (>= 16)
    ULONG MaxInitiatorRequestSge;
    ULONG MaxReceiveRequestSge;
    ULONG MaxReadRequestSge;  // overrides MaxInitiatorRequestSge for reads
    ULONG MaxTransferLength;  // max sum of SGE lengths per send/recv/read/write
    ULONG MaxInlineDataSize;
    ULONG MaxInboundReadLimit;   // IRD per QP
    ULONG MaxOutboundReadLimit;  // ORD per QP
    ULONG MaxReceiveQueueDepth;
    ULONG MaxInitiatorQueueDepth;
    ULONG MaxSrqDepth;  // 0 = no SRQ support
    ULONG MaxCqDepth;
    ULONG LargeRequestThreshold;  // hint: above this, read/write beats send/receive
    ULONG MaxCallerData;          // private-data bytes on connect
    ULONG MaxCalleeData;          // private-data bytes on accept/reject
    ULONG AdapterFlags;           // NDK_ADAPTER_FLAG_*
    NDK_RDMA_TECHNOLOGY RdmaTechnology;
} NDK_ADAPTER_INFO;
static_assert(sizeof(NDK_ADAPTER_INFO) == 104);
static_assert(offsetof(NDK_ADAPTER_INFO, Version) == 0);
static_assert(offsetof(NDK_ADAPTER_INFO, VendorId) == 4);
static_assert(offsetof(NDK_ADAPTER_INFO, DeviceId) == 8);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxRegistrationSize) == 16);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxWindowSize) == 24);
static_assert(offsetof(NDK_ADAPTER_INFO, FRMRPageCount) == 32);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxInitiatorRequestSge) == 36);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxReceiveRequestSge) == 40);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxReadRequestSge) == 44);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxTransferLength) == 48);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxInlineDataSize) == 52);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxInboundReadLimit) == 56);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxOutboundReadLimit) == 60);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxReceiveQueueDepth) == 64);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxInitiatorQueueDepth) == 68);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxSrqDepth) == 72);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxCqDepth) == 76);
static_assert(offsetof(NDK_ADAPTER_INFO, LargeRequestThreshold) == 80);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxCallerData) == 84);
static_assert(offsetof(NDK_ADAPTER_INFO, MaxCalleeData) == 88);
static_assert(offsetof(NDK_ADAPTER_INFO, AdapterFlags) == 92);
static_assert(offsetof(NDK_ADAPTER_INFO, RdmaTechnology) == 96);

// NDK_ADAPTER_INFO.AdapterFlags (ref 2.1)
inline constexpr ULONG NDK_ADAPTER_FLAG_IN_ORDER_DMA_SUPPORTED = 0x00000001;
inline constexpr ULONG NDK_ADAPTER_FLAG_RDMA_READ_SINK_NOT_REQUIRED = 0x00000002;
inline constexpr ULONG NDK_ADAPTER_FLAG_CQ_INTERRUPT_MODERATION_SUPPORTED = 0x00000004;
inline constexpr ULONG NDK_ADAPTER_FLAG_MULTI_ENGINE_SUPPORTED = 0x00000008;
inline constexpr ULONG NDK_ADAPTER_FLAG_RDMA_READ_LOCAL_INVALIDATE_SUPPORTED = 0x00000010;  // 1.2+
inline constexpr ULONG NDK_ADAPTER_FLAG_CQ_RESIZE_SUPPORTED = 0x00000100;
inline constexpr ULONG NDK_ADAPTER_FLAG_LOOPBACK_CONNECTIONS_SUPPORTED = 0x00010000;

// =============================================================================================
// Object model (ref section 1)
// =============================================================================================

typedef enum _NDK_OBJECT_TYPE : int {
    NdkObjectTypeUndefined = 0,
    NdkObjectTypeAdapter = 1,
    NdkObjectTypeQp = 2,
    NdkObjectTypeCq = 3,
    NdkObjectTypeMr = 4,
    NdkObjectTypeMw = 5,
    NdkObjectTypePd = 6,
    NdkObjectTypeSharedEndpoint = 7,
    NdkObjectTypeConnector = 8,
    NdkObjectTypeListener = 9,
    NdkObjectTypeSrq = 10,
    NdkObjectTypeMax = 11
} NDK_OBJECT_TYPE;
static_assert(sizeof(NDK_OBJECT_TYPE) == 4);

// Owned by the NDK framework: the provider zeroes it at creation and never touches it again
// until the object is closed.
typedef struct _NDK_OBJECT_HEADER_RESERVED_BLOCK {
    PVOID rf[4];
} NDK_OBJECT_HEADER_RESERVED_BLOCK;
static_assert(sizeof(NDK_OBJECT_HEADER_RESERVED_BLOCK) == 32);

// First member of every NDK object. Provider sets Version (negotiated), ObjectType (non-zero).
typedef struct _NDK_OBJECT_HEADER {
    NDK_VERSION Version;
    NDK_OBJECT_TYPE ObjectType;
    NDK_OBJECT_HEADER_RESERVED_BLOCK NdkReserved;
} NDK_OBJECT_HEADER;
static_assert(sizeof(NDK_OBJECT_HEADER) == 40);
static_assert(offsetof(NDK_OBJECT_HEADER, Version) == 0);
static_assert(offsetof(NDK_OBJECT_HEADER, ObjectType) == 4);
static_assert(offsetof(NDK_OBJECT_HEADER, NdkReserved) == 8);

// Every object is { NDK_OBJECT_HEADER Header; const <OBJ>_DISPATCH* Dispatch; }.
typedef struct _NDK_ADAPTER NDK_ADAPTER;
typedef struct _NDK_PD NDK_PD;
typedef struct _NDK_CQ NDK_CQ;
typedef struct _NDK_QP NDK_QP;
typedef struct _NDK_SRQ NDK_SRQ;
typedef struct _NDK_MR NDK_MR;
typedef struct _NDK_MW NDK_MW;
typedef struct _NDK_CONNECTOR NDK_CONNECTOR;
typedef struct _NDK_LISTENER NDK_LISTENER;
typedef struct _NDK_SHARED_ENDPOINT NDK_SHARED_ENDPOINT;

// =============================================================================================
// Common data types (ref section 2)
// =============================================================================================

// Completion entry returned by NdkGetCqResults. BytesTransferred is defined for receives only.
typedef struct _NDK_RESULT {
    NTSTATUS Status;
    ULONG BytesTransferred;
    PVOID QPContext;       // value given at QP creation
    PVOID RequestContext;  // value given when the request was posted
} NDK_RESULT;
static_assert(sizeof(NDK_RESULT) == 24);
static_assert(offsetof(NDK_RESULT, Status) == 0 && offsetof(NDK_RESULT, BytesTransferred) == 4);
static_assert(offsetof(NDK_RESULT, QPContext) == 8 && offsetof(NDK_RESULT, RequestContext) == 16);

typedef enum _NDK_OPERATION_TYPE : int {
    NdkOperationTypeReceive = 1,
    NdkOperationTypeReceiveAndInvalidate = 32769,  // 0x8001
    NdkOperationTypeSend = 2,                      // also the sender side of SendAndInvalidate
    NdkOperationTypeFastRegister = 4,
    NdkOperationTypeBind = 8,
    NdkOperationTypeInvalidate = 16,
    NdkOperationTypeRead = 32,
    NdkOperationTypeWrite = 64
} NDK_OPERATION_TYPE;
static_assert(sizeof(NDK_OPERATION_TYPE) == 4);

// Completion entry returned by NdkGetCqResultsEx (1.2+). 40 bytes on x64 [C].
typedef struct _NDK_RESULT_EX {
    NTSTATUS Status;
    ULONG BytesTransferred;
    PVOID QPContext;
    PVOID RequestContext;
    NDK_OPERATION_TYPE Type;
    ULONG ProviderErrorCode;  // NDKPI 2.1: x64 padding in 1.2; must be 0 when Status is SUCCESS
    ULONG_PTR TypeSpecificCompletionOutput;  // ReceiveAndInvalidate: the invalidated token
} NDK_RESULT_EX;
static_assert(sizeof(NDK_RESULT_EX) == 40);
static_assert(offsetof(NDK_RESULT_EX, Status) == 0);
static_assert(offsetof(NDK_RESULT_EX, BytesTransferred) == 4);
static_assert(offsetof(NDK_RESULT_EX, QPContext) == 8);
static_assert(offsetof(NDK_RESULT_EX, RequestContext) == 16);
static_assert(offsetof(NDK_RESULT_EX, Type) == 24);
static_assert(offsetof(NDK_RESULT_EX, ProviderErrorCode) == 28);
static_assert(offsetof(NDK_RESULT_EX, TypeSpecificCompletionOutput) == 32);

typedef PHYSICAL_ADDRESS NDK_LOGICAL_ADDRESS;
static_assert(sizeof(NDK_LOGICAL_ADDRESS) == 8);

// Logical address mapping built by NdkBuildLAM. Variable size:
// FIELD_OFFSET(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) + AdapterPageCount * 8 bytes.
// Consecutive pages are not necessarily contiguous.
typedef struct _NDK_LOGICAL_ADDRESS_MAPPING {
    PVOID AdapterContext;  // provider-private; the consumer must not modify it
    ULONG AdapterPageCount;
    NDK_LOGICAL_ADDRESS AdapterPageArray[1];  // actually AdapterPageCount entries
} NDK_LOGICAL_ADDRESS_MAPPING;
static_assert(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterContext) == 0);
static_assert(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageCount) == 8);
static_assert(offsetof(NDK_LOGICAL_ADDRESS_MAPPING, AdapterPageArray) == 16);
static_assert(sizeof(NDK_LOGICAL_ADDRESS_MAPPING) == 24);

// Scatter/gather entry. MemoryRegionToken == the PD's privileged token => LogicalAddress (from a
// LAM); otherwise VirtualAddress inside a registered MR. Token ignored with NDK_OP_FLAG_INLINE.
typedef struct _NDK_SGE {
    union {
        PVOID VirtualAddress;
        NDK_LOGICAL_ADDRESS LogicalAddress;
    };
    ULONG Length;
    UINT32 MemoryRegionToken;
} NDK_SGE;
static_assert(sizeof(NDK_SGE) == 16);
static_assert(offsetof(NDK_SGE, VirtualAddress) == 0 && offsetof(NDK_SGE, LogicalAddress) == 0);
static_assert(offsetof(NDK_SGE, Length) == 8 && offsetof(NDK_SGE, MemoryRegionToken) == 12);

typedef struct _NDK_EXTENSION_INTERFACE {
    CONST VOID* Dispatch;
} NDK_EXTENSION_INTERFACE;
static_assert(sizeof(NDK_EXTENSION_INTERFACE) == 8);

// =============================================================================================
// Consumer-implemented callbacks (ref 4.1)
// =============================================================================================
typedef VOID (*NDK_FN_CLOSE_COMPLETION)(_In_opt_ PVOID Context);
typedef VOID (*NDK_FN_REQUEST_COMPLETION)(_In_opt_ PVOID Context, _In_ NTSTATUS Status);
typedef VOID (*NDK_FN_CREATE_COMPLETION)(_In_opt_ PVOID Context, _In_ NTSTATUS Status,
                                         _In_ NDK_OBJECT_HEADER* pNdkObject);
typedef VOID (*NDK_FN_CQ_NOTIFICATION_CALLBACK)(_In_opt_ PVOID CqNotificationContext,
                                                _In_ NTSTATUS CqStatus);
typedef VOID (*NDK_FN_SRQ_NOTIFICATION_CALLBACK)(_In_opt_ PVOID SrqNotificationContext,
                                                 _In_ NTSTATUS SrqStatus);
typedef VOID (*NDK_FN_CONNECT_EVENT_CALLBACK)(_In_opt_ PVOID ConnectEventContext,
                                              _In_ NDK_CONNECTOR* pNdkConnector);
typedef VOID (*NDK_FN_DISCONNECT_EVENT_CALLBACK)(_In_opt_ PVOID DisconnectEventContext);
// NDKPI 2.1; ProviderDisconnectReason 0 = no reason provided.
typedef VOID (*NDK_FN_DISCONNECT_EVENT_CALLBACK_EX)(_In_opt_ PVOID DisconnectEventContext,
                                                    _In_ ULONG ProviderDisconnectReason);

// =============================================================================================
// Generic entry points, first two slots of every dispatch table but the adapter's (ref 4.2)
// =============================================================================================
// Returns STATUS_SUCCESS or STATUS_PENDING only; the close completion is the last callback.
typedef NTSTATUS (*NDK_FN_CLOSE_OBJECT)(_In_ NDK_OBJECT_HEADER* pNdkObject,
                                        _In_ NDK_FN_CLOSE_COMPLETION CloseCompletion,
                                        _In_opt_ PVOID RequestContext);
// No standard extensions exist: providers return STATUS_NOT_SUPPORTED.
typedef NTSTATUS (*NDK_FN_QUERY_EXTENSION_INTERFACE)(
    _In_ NDK_OBJECT_HEADER* pNdkObject, _In_ GUID* ExtensionInterfaceID,
    _In_ NDK_VERSION ExtensionInterfaceVersion, _Out_ NDK_EXTENSION_INTERFACE* pExtensionInterface);

// =============================================================================================
// Completion queue (ref 3, 4.5, 7)
// =============================================================================================
inline constexpr ULONG NDK_CQ_NOTIFY_ERRORS = 0;     // CQ errors only (overrun, catastrophic)
inline constexpr ULONG NDK_CQ_NOTIFY_ANY = 1;        // next completion
inline constexpr ULONG NDK_CQ_NOTIFY_SOLICITED = 2;  // solicited receive; errors always match

typedef NTSTATUS (*NDK_FN_RESIZE_CQ)(_In_ NDK_CQ* pNdkCq, _In_ ULONG CqDepth,
                                     _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                     _In_opt_ PVOID RequestContext);
typedef VOID (*NDK_FN_ARM_CQ)(_In_ NDK_CQ* pNdkCq, _In_ ULONG Type);
typedef ULONG (*NDK_FN_GET_CQ_RESULTS)(_In_ NDK_CQ* pNdkCq,
                                       _Out_writes_to_(nResults, return ) NDK_RESULT Results[],
                                       _In_ ULONG nResults);
typedef NTSTATUS (*NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION)(_In_ NDK_CQ* pNdkCq,
                                                           _In_ ULONG ModerationInterval,
                                                           _In_ ULONG ModerationCount);
typedef ULONG (*NDK_FN_GET_CQ_RESULTS_EX)(_In_ NDK_CQ* pNdkCq,
                                          _Out_writes_to_(nResults, return )
                                              NDK_RESULT_EX Results[],
                                          _In_ ULONG nResults);

typedef struct _NDK_CQ_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseCq;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_RESIZE_CQ NdkResizeCq;
    NDK_FN_ARM_CQ NdkArmCq;
    NDK_FN_GET_CQ_RESULTS NdkGetCqResults;
    NDK_FN_CONTROL_CQ_INTERRUPT_MODERATION NdkControlCqInterruptModeration;
    NDK_FN_GET_CQ_RESULTS_EX NdkGetCqResultsEx;  // 1.2+
} NDK_CQ_DISPATCH;
RNIC_NDK_ASSERT_TABLE_SLOTS(NDK_CQ_DISPATCH, 7);
RNIC_NDK_ASSERT_SLOT(NDK_CQ_DISPATCH, NdkCloseCq, 0);
RNIC_NDK_ASSERT_SLOT(NDK_CQ_DISPATCH, NdkQueryExtension, 1);
RNIC_NDK_ASSERT_SLOT(NDK_CQ_DISPATCH, NdkResizeCq, 2);
RNIC_NDK_ASSERT_SLOT(NDK_CQ_DISPATCH, NdkArmCq, 3);
RNIC_NDK_ASSERT_SLOT(NDK_CQ_DISPATCH, NdkGetCqResults, 4);
RNIC_NDK_ASSERT_SLOT(NDK_CQ_DISPATCH, NdkControlCqInterruptModeration, 5);
RNIC_NDK_ASSERT_SLOT(NDK_CQ_DISPATCH, NdkGetCqResultsEx, 6);

typedef struct _NDK_CQ {
    NDK_OBJECT_HEADER Header;
    CONST NDK_CQ_DISPATCH* Dispatch;
} NDK_CQ;
RNIC_NDK_ASSERT_OBJECT(NDK_CQ);

// =============================================================================================
// Memory region (ref 3, 4.7, 8)
// =============================================================================================
inline constexpr ULONG NDK_MR_FLAG_ALLOW_LOCAL_READ = 0x00000000;  // implicit
inline constexpr ULONG NDK_MR_FLAG_ALLOW_LOCAL_WRITE = 0x00000001;
inline constexpr ULONG NDK_MR_FLAG_ALLOW_REMOTE_READ = 0x00000002;
inline constexpr ULONG NDK_MR_FLAG_ALLOW_REMOTE_WRITE = 0x00000005;  // includes local write
inline constexpr ULONG NDK_MR_FLAG_RDMA_READ_SINK = 0x00000008;

typedef NTSTATUS (*NDK_FN_REGISTER_MR)(_In_ NDK_MR* pNdkMr, _In_ MDL* Mdl, _In_ SIZE_T Length,
                                       _In_ ULONG Flags,
                                       _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                       _In_opt_ PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_DEREGISTER_MR)(_In_ NDK_MR* pNdkMr,
                                         _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                         _In_opt_ PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_INITIALIZE_FAST_REGISTER_MR)(
    _In_ NDK_MR* pNdkMr, _In_ ULONG AdapterPageCount, _In_ BOOLEAN RemoteAccess,
    _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion, _In_opt_ PVOID RequestContext);
typedef UINT32 (*NDK_FN_GET_REMOTE_TOKEN_FROM_MR)(_In_ NDK_MR* pNdkMr);
typedef UINT32 (*NDK_FN_GET_LOCAL_TOKEN_FROM_MR)(_In_ NDK_MR* pNdkMr);

typedef struct _NDK_MR_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseMr;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_REGISTER_MR NdkRegisterMr;
    NDK_FN_DEREGISTER_MR NdkDeregisterMr;
    NDK_FN_INITIALIZE_FAST_REGISTER_MR NdkInitializeFastRegisterMr;
    NDK_FN_GET_REMOTE_TOKEN_FROM_MR NdkGetRemoteTokenFromMr;
    NDK_FN_GET_LOCAL_TOKEN_FROM_MR NdkGetLocalTokenFromMr;
} NDK_MR_DISPATCH;
RNIC_NDK_ASSERT_TABLE_SLOTS(NDK_MR_DISPATCH, 7);
RNIC_NDK_ASSERT_SLOT(NDK_MR_DISPATCH, NdkCloseMr, 0);
RNIC_NDK_ASSERT_SLOT(NDK_MR_DISPATCH, NdkQueryExtension, 1);
RNIC_NDK_ASSERT_SLOT(NDK_MR_DISPATCH, NdkRegisterMr, 2);
RNIC_NDK_ASSERT_SLOT(NDK_MR_DISPATCH, NdkDeregisterMr, 3);
RNIC_NDK_ASSERT_SLOT(NDK_MR_DISPATCH, NdkInitializeFastRegisterMr, 4);
RNIC_NDK_ASSERT_SLOT(NDK_MR_DISPATCH, NdkGetRemoteTokenFromMr, 5);
RNIC_NDK_ASSERT_SLOT(NDK_MR_DISPATCH, NdkGetLocalTokenFromMr, 6);

typedef struct _NDK_MR {
    NDK_OBJECT_HEADER Header;
    CONST NDK_MR_DISPATCH* Dispatch;
} NDK_MR;
RNIC_NDK_ASSERT_OBJECT(NDK_MR);

// =============================================================================================
// Memory window (ref 4.7)
// =============================================================================================
typedef UINT32 (*NDK_FN_GET_REMOTE_TOKEN_FROM_MW)(_In_ NDK_MW* pNdkMw);

typedef struct _NDK_MW_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseMw;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_GET_REMOTE_TOKEN_FROM_MW NdkGetRemoteTokenFromMw;
} NDK_MW_DISPATCH;
RNIC_NDK_ASSERT_TABLE_SLOTS(NDK_MW_DISPATCH, 3);
RNIC_NDK_ASSERT_SLOT(NDK_MW_DISPATCH, NdkCloseMw, 0);
RNIC_NDK_ASSERT_SLOT(NDK_MW_DISPATCH, NdkQueryExtension, 1);
RNIC_NDK_ASSERT_SLOT(NDK_MW_DISPATCH, NdkGetRemoteTokenFromMw, 2);

typedef struct _NDK_MW {
    NDK_OBJECT_HEADER Header;
    CONST NDK_MW_DISPATCH* Dispatch;
} NDK_MW;
RNIC_NDK_ASSERT_OBJECT(NDK_MW);

// =============================================================================================
// Shared receive queue (ref 4.6, 7)
// =============================================================================================
// SrqDepth 0 keeps the depth; NotifyThreshold 0 keeps the current threshold/arming.
typedef NTSTATUS (*NDK_FN_MODIFY_SRQ)(_In_ NDK_SRQ* pNdkSrq, _In_ ULONG SrqDepth,
                                      _In_ ULONG NotifyThreshold,
                                      _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                      _In_opt_ PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_SRQ_RECEIVE)(_In_ NDK_SRQ* pNdkSrq, _In_opt_ PVOID RequestContext,
                                       _In_reads_(nSge) CONST NDK_SGE* pSgl, _In_ ULONG nSge);

typedef struct _NDK_SRQ_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseSrq;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_MODIFY_SRQ NdkModifySrq;
    NDK_FN_SRQ_RECEIVE NdkSrqReceive;
} NDK_SRQ_DISPATCH;
RNIC_NDK_ASSERT_TABLE_SLOTS(NDK_SRQ_DISPATCH, 4);
RNIC_NDK_ASSERT_SLOT(NDK_SRQ_DISPATCH, NdkCloseSrq, 0);
RNIC_NDK_ASSERT_SLOT(NDK_SRQ_DISPATCH, NdkQueryExtension, 1);
RNIC_NDK_ASSERT_SLOT(NDK_SRQ_DISPATCH, NdkModifySrq, 2);
RNIC_NDK_ASSERT_SLOT(NDK_SRQ_DISPATCH, NdkSrqReceive, 3);

typedef struct _NDK_SRQ {
    NDK_OBJECT_HEADER Header;
    CONST NDK_SRQ_DISPATCH* Dispatch;
} NDK_SRQ;
RNIC_NDK_ASSERT_OBJECT(NDK_SRQ);

// =============================================================================================
// Queue pair: work requests (ref 3, 4.6, 6)
// =============================================================================================
inline constexpr ULONG NDK_OP_FLAG_SILENT_SUCCESS = 0x00000001;  // no CQE on success
inline constexpr ULONG NDK_OP_FLAG_READ_FENCE = 0x00000002;      // wait for prior reads
inline constexpr ULONG NDK_OP_FLAG_SEND_AND_SOLICIT_EVENT = 0x00000004;
inline constexpr ULONG NDK_OP_FLAG_ALLOW_REMOTE_READ = 0x00000008;   // Bind, FastRegister
inline constexpr ULONG NDK_OP_FLAG_ALLOW_LOCAL_WRITE = 0x00000010;   // FastRegister
inline constexpr ULONG NDK_OP_FLAG_ALLOW_REMOTE_WRITE = 0x00000030;  // includes local write
inline constexpr ULONG NDK_OP_FLAG_INLINE = 0x00000040;              // copy payload at post time
inline constexpr ULONG NDK_OP_FLAG_RDMA_READ_SINK = 0x00000080;      // FastRegister
// 1.2+. The NdkRead doc page prints 0x200 for this flag; that is a doc error (0x200 is DEFER).
inline constexpr ULONG NDK_OP_FLAG_RDMA_READ_LOCAL_INVALIDATE = 0x00000100;
inline constexpr ULONG NDK_OP_FLAG_DEFER = 0x00000200;  // 1.2+: provider may delay the doorbell

typedef VOID (*NDK_FN_FLUSH)(_In_ NDK_QP* pNdkQp);
typedef NTSTATUS (*NDK_FN_SEND)(_In_ NDK_QP* pNdkQp, _In_opt_ PVOID RequestContext,
                                _In_reads_(nSge) CONST NDK_SGE* pSgl, _In_ ULONG nSge,
                                _In_ ULONG Flags);
typedef NTSTATUS (*NDK_FN_RECEIVE)(_In_ NDK_QP* pNdkQp, _In_opt_ PVOID RequestContext,
                                   _In_reads_(nSge) CONST NDK_SGE* pSgl, _In_ ULONG nSge);
typedef NTSTATUS (*NDK_FN_BIND)(_In_ NDK_QP* pNdkQp, _In_opt_ PVOID RequestContext,
                                _In_ NDK_MR* pMr, _In_ NDK_MW* pMw, _In_ PVOID VirtualAddress,
                                _In_ SIZE_T Length, _In_ ULONG Flags);
typedef NTSTATUS (*NDK_FN_FAST_REGISTER)(_In_ NDK_QP* pNdkQp, _In_opt_ PVOID RequestContext,
                                         _In_ NDK_MR* pMr, _In_ ULONG AdapterPageCount,
                                         _In_reads_(AdapterPageCount)
                                             CONST NDK_LOGICAL_ADDRESS* AdapterPageArray,
                                         _In_ ULONG FBO, _In_ SIZE_T Length,
                                         _In_ PVOID BaseVirtualAddress, _In_ ULONG Flags);
typedef NTSTATUS (*NDK_FN_INVALIDATE)(_In_ NDK_QP* pNdkQp, _In_opt_ PVOID RequestContext,
                                      _In_ NDK_OBJECT_HEADER* pNdkMrOrMw, _In_ ULONG Flags);
// RemoteAddress is in local host byte order; RemoteToken is opaque.
typedef NTSTATUS (*NDK_FN_READ)(_In_ NDK_QP* pNdkQp, _In_opt_ PVOID RequestContext,
                                _In_reads_(nSge) CONST NDK_SGE* pSgl, _In_ ULONG nSge,
                                _In_ UINT64 RemoteAddress, _In_ UINT32 RemoteToken,
                                _In_ ULONG Flags);
typedef NTSTATUS (*NDK_FN_WRITE)(_In_ NDK_QP* pNdkQp, _In_opt_ PVOID RequestContext,
                                 _In_reads_(nSge) CONST NDK_SGE* pSgl, _In_ ULONG nSge,
                                 _In_ UINT64 RemoteAddress, _In_ UINT32 RemoteToken,
                                 _In_ ULONG Flags);
// 1.2+. Note the order: Flags BEFORE RemoteToken (unlike Read/Write).
typedef NTSTATUS (*NDK_FN_SEND_AND_INVALIDATE)(_In_ NDK_QP* pNdkQp, _In_opt_ PVOID RequestContext,
                                               _In_reads_(nSge) CONST NDK_SGE* pSgl,
                                               _In_ ULONG nSge, _In_ ULONG Flags,
                                               _In_ UINT32 RemoteToken);

typedef struct _NDK_QP_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseQp;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_FLUSH NdkFlush;
    NDK_FN_SEND NdkSend;
    NDK_FN_RECEIVE NdkReceive;
    NDK_FN_BIND NdkBind;
    NDK_FN_FAST_REGISTER NdkFastRegister;
    NDK_FN_INVALIDATE NdkInvalidate;
    NDK_FN_READ NdkRead;
    NDK_FN_WRITE NdkWrite;
    NDK_FN_SEND_AND_INVALIDATE NdkSendAndInvalidate;  // 1.2+
} NDK_QP_DISPATCH;
RNIC_NDK_ASSERT_TABLE_SLOTS(NDK_QP_DISPATCH, 11);
RNIC_NDK_ASSERT_SLOT(NDK_QP_DISPATCH, NdkCloseQp, 0);
RNIC_NDK_ASSERT_SLOT(NDK_QP_DISPATCH, NdkQueryExtension, 1);
RNIC_NDK_ASSERT_SLOT(NDK_QP_DISPATCH, NdkFlush, 2);
RNIC_NDK_ASSERT_SLOT(NDK_QP_DISPATCH, NdkSend, 3);
RNIC_NDK_ASSERT_SLOT(NDK_QP_DISPATCH, NdkReceive, 4);
RNIC_NDK_ASSERT_SLOT(NDK_QP_DISPATCH, NdkBind, 5);
RNIC_NDK_ASSERT_SLOT(NDK_QP_DISPATCH, NdkFastRegister, 6);
RNIC_NDK_ASSERT_SLOT(NDK_QP_DISPATCH, NdkInvalidate, 7);
RNIC_NDK_ASSERT_SLOT(NDK_QP_DISPATCH, NdkRead, 8);
RNIC_NDK_ASSERT_SLOT(NDK_QP_DISPATCH, NdkWrite, 9);
RNIC_NDK_ASSERT_SLOT(NDK_QP_DISPATCH, NdkSendAndInvalidate, 10);

typedef struct _NDK_QP {
    NDK_OBJECT_HEADER Header;
    CONST NDK_QP_DISPATCH* Dispatch;
} NDK_QP;
RNIC_NDK_ASSERT_OBJECT(NDK_QP);

// =============================================================================================
// Protection domain (ref 4.4)
// =============================================================================================
typedef NTSTATUS (*NDK_FN_CREATE_MR)(_In_ NDK_PD* pNdkPd, _In_ BOOLEAN FastRegister,
                                     _In_ NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     _In_opt_ PVOID RequestContext, _Outptr_ NDK_MR** ppNdkMr);
typedef NTSTATUS (*NDK_FN_CREATE_MW)(_In_ NDK_PD* pNdkPd,
                                     _In_ NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     _In_opt_ PVOID RequestContext, _Outptr_ NDK_MW** ppNdkMw);
typedef NTSTATUS (*NDK_FN_CREATE_SRQ)(_In_ NDK_PD* pNdkPd, _In_ ULONG SrqDepth,
                                      _In_ ULONG MaxReceiveRequestSge, _In_ ULONG NotifyThreshold,
                                      _In_opt_ NDK_FN_SRQ_NOTIFICATION_CALLBACK SrqNotification,
                                      _In_opt_ PVOID SrqNotificationContext,
                                      _In_opt_ GROUP_AFFINITY* Affinity,
                                      _In_ NDK_FN_CREATE_COMPLETION CreateCompletion,
                                      _In_opt_ PVOID RequestContext, _Outptr_ NDK_SRQ** ppNdkSrq);
typedef NTSTATUS (*NDK_FN_CREATE_QP)(_In_ NDK_PD* pNdkPd, _In_ NDK_CQ* pReceiveCq,
                                     _In_ NDK_CQ* pInitiatorCq, _In_opt_ PVOID QPContext,
                                     _In_ ULONG ReceiveQueueDepth, _In_ ULONG InitiatorQueueDepth,
                                     _In_ ULONG MaxReceiveRequestSge,
                                     _In_ ULONG MaxInitiatorRequestSge, _In_ ULONG InlineDataSize,
                                     _In_ NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     _In_opt_ PVOID RequestContext, _Outptr_ NDK_QP** ppNdkQp);
typedef NTSTATUS (*NDK_FN_CREATE_QP_WITH_SRQ)(
    _In_ NDK_PD* pNdkPd, _In_ NDK_CQ* pReceiveCq, _In_ NDK_CQ* pInitiatorCq, _In_ NDK_SRQ* pSrq,
    _In_opt_ PVOID QPContext, _In_ ULONG InitiatorQueueDepth, _In_ ULONG MaxInitiatorRequestSge,
    _In_ ULONG InlineDataSize, _In_ NDK_FN_CREATE_COMPLETION CreateCompletion,
    _In_opt_ PVOID RequestContext, _Outptr_ NDK_QP** ppNdkQp);
// The privileged token: local access to logical addresses without registration, never remote.
typedef VOID (*NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN)(_In_ NDK_PD* pNdkPd,
                                                          _Out_ UINT32* pToken);

typedef struct _NDK_PD_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkClosePd;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_CREATE_MR NdkCreateMr;
    NDK_FN_CREATE_MW NdkCreateMw;
    NDK_FN_CREATE_SRQ NdkCreateSrq;
    NDK_FN_CREATE_QP NdkCreateQp;
    NDK_FN_CREATE_QP_WITH_SRQ NdkCreateQpWithSrq;
    NDK_FN_GET_PRIVILEGED_MEMORY_REGION_TOKEN NdkGetPrivilegedMemoryRegionToken;
} NDK_PD_DISPATCH;
RNIC_NDK_ASSERT_TABLE_SLOTS(NDK_PD_DISPATCH, 8);
RNIC_NDK_ASSERT_SLOT(NDK_PD_DISPATCH, NdkClosePd, 0);
RNIC_NDK_ASSERT_SLOT(NDK_PD_DISPATCH, NdkQueryExtension, 1);
RNIC_NDK_ASSERT_SLOT(NDK_PD_DISPATCH, NdkCreateMr, 2);
RNIC_NDK_ASSERT_SLOT(NDK_PD_DISPATCH, NdkCreateMw, 3);
RNIC_NDK_ASSERT_SLOT(NDK_PD_DISPATCH, NdkCreateSrq, 4);
RNIC_NDK_ASSERT_SLOT(NDK_PD_DISPATCH, NdkCreateQp, 5);
RNIC_NDK_ASSERT_SLOT(NDK_PD_DISPATCH, NdkCreateQpWithSrq, 6);
RNIC_NDK_ASSERT_SLOT(NDK_PD_DISPATCH, NdkGetPrivilegedMemoryRegionToken, 7);

typedef struct _NDK_PD {
    NDK_OBJECT_HEADER Header;
    CONST NDK_PD_DISPATCH* Dispatch;
} NDK_PD;
RNIC_NDK_ASSERT_OBJECT(NDK_PD);

// =============================================================================================
// Shared endpoint (ref 4.8)
// =============================================================================================
typedef NTSTATUS (*NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS)(
    _In_ NDK_SHARED_ENDPOINT* pNdkSharedEndpoint,
    _Out_writes_bytes_to_opt_(*pAddressLength, *pAddressLength) PSOCKADDR pAddress,
    _Inout_ ULONG* pAddressLength);

typedef struct _NDK_SHARED_ENDPOINT_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseSharedEndpoint;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_GET_SHARED_ENDPOINT_LOCAL_ADDRESS NdkGetLocalAddress;
} NDK_SHARED_ENDPOINT_DISPATCH;
RNIC_NDK_ASSERT_TABLE_SLOTS(NDK_SHARED_ENDPOINT_DISPATCH, 3);
RNIC_NDK_ASSERT_SLOT(NDK_SHARED_ENDPOINT_DISPATCH, NdkCloseSharedEndpoint, 0);
RNIC_NDK_ASSERT_SLOT(NDK_SHARED_ENDPOINT_DISPATCH, NdkQueryExtension, 1);
RNIC_NDK_ASSERT_SLOT(NDK_SHARED_ENDPOINT_DISPATCH, NdkGetLocalAddress, 2);

typedef struct _NDK_SHARED_ENDPOINT {
    NDK_OBJECT_HEADER Header;
    CONST NDK_SHARED_ENDPOINT_DISPATCH* Dispatch;
} NDK_SHARED_ENDPOINT;
RNIC_NDK_ASSERT_OBJECT(NDK_SHARED_ENDPOINT);

// =============================================================================================
// Connector (ref 4.8, 8). `CONST PSOCKADDR` / `CONST PVOID` are const *pointers*, as in the WDK.
// =============================================================================================
typedef NTSTATUS (*NDK_FN_CONNECT)(
    _In_ NDK_CONNECTOR* pNdkConnector, _In_ NDK_QP* pNdkQp,
    _In_reads_bytes_(SrcAddressLength) CONST PSOCKADDR pSrcAddress, _In_ ULONG SrcAddressLength,
    _In_reads_bytes_(DestAddressLength) CONST PSOCKADDR pDestAddress, _In_ ULONG DestAddressLength,
    _In_ ULONG InboundReadLimit, _In_ ULONG OutboundReadLimit,
    _In_reads_bytes_opt_(PrivateDataLength) CONST PVOID pPrivateData, _In_ ULONG PrivateDataLength,
    _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion, _In_opt_ PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_CONNECT_WITH_SHARED_ENDPOINT)(
    _In_ NDK_CONNECTOR* pNdkConnector, _In_ NDK_QP* pNdkQp,
    _In_ NDK_SHARED_ENDPOINT* pNdkSharedEndpoint,
    _In_reads_bytes_(DestAddressLength) CONST PSOCKADDR pDestAddress, _In_ ULONG DestAddressLength,
    _In_ ULONG InboundReadLimit, _In_ ULONG OutboundReadLimit,
    _In_reads_bytes_opt_(PrivateDataLength) CONST PVOID pPrivateData, _In_ ULONG PrivateDataLength,
    _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion, _In_opt_ PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_COMPLETE_CONNECT)(
    _In_ NDK_CONNECTOR* pNdkConnector, _In_opt_ NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
    _In_opt_ PVOID DisconnectEventContext, _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion,
    _In_opt_ PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_COMPLETE_CONNECT_EX)(  // NDKPI 2.1
    _In_ NDK_CONNECTOR* pNdkConnector, _In_opt_ NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
    _In_opt_ PVOID DisconnectEventContext, _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion,
    _In_opt_ PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_ACCEPT)(_In_ NDK_CONNECTOR* pNdkConnector, _In_ NDK_QP* pNdkQp,
                                  _In_ ULONG InboundReadLimit, _In_ ULONG OutboundReadLimit,
                                  _In_reads_bytes_opt_(PrivateDataLength) CONST PVOID pPrivateData,
                                  _In_ ULONG PrivateDataLength,
                                  _In_opt_ NDK_FN_DISCONNECT_EVENT_CALLBACK DisconnectEvent,
                                  _In_opt_ PVOID DisconnectEventContext,
                                  _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                  _In_opt_ PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_ACCEPT_EX)(  // NDKPI 2.1
    _In_ NDK_CONNECTOR* pNdkConnector, _In_ NDK_QP* pNdkQp, _In_ ULONG InboundReadLimit,
    _In_ ULONG OutboundReadLimit, _In_reads_bytes_opt_(PrivateDataLength) CONST PVOID pPrivateData,
    _In_ ULONG PrivateDataLength, _In_opt_ NDK_FN_DISCONNECT_EVENT_CALLBACK_EX DisconnectEvent,
    _In_opt_ PVOID DisconnectEventContext, _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion,
    _In_opt_ PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_REJECT)(_In_ NDK_CONNECTOR* pNdkConnector,
                                  _In_reads_bytes_opt_(PrivateDataLength) CONST PVOID pPrivateData,
                                  _In_ ULONG PrivateDataLength);
// pPrivateData == NULL && *pPrivateDataLength == 0 queries the size (ref 8).
typedef NTSTATUS (*NDK_FN_GET_CONNECTION_DATA)(
    _In_ NDK_CONNECTOR* pNdkConnector, _Out_opt_ ULONG* pInboundReadLimit,
    _Out_opt_ ULONG* pOutboundReadLimit,
    _Out_writes_bytes_to_opt_(*pPrivateDataLength, *pPrivateDataLength) PVOID pPrivateData,
    _Inout_ ULONG* pPrivateDataLength);
typedef NTSTATUS (*NDK_FN_GET_LOCAL_ADDRESS)(_In_ NDK_CONNECTOR* pNdkConnector,
                                             _Out_writes_bytes_to_opt_(*pAddressLength,
                                                                       *pAddressLength)
                                                 PSOCKADDR pAddress,
                                             _Inout_ ULONG* pAddressLength);
typedef NTSTATUS (*NDK_FN_GET_PEER_ADDRESS)(_In_ NDK_CONNECTOR* pNdkConnector,
                                            _Out_writes_bytes_to_opt_(*pAddressLength,
                                                                      *pAddressLength)
                                                PSOCKADDR pAddress,
                                            _Inout_ ULONG* pAddressLength);
// Graceful disconnect; the provider then flushes the QP implicitly.
typedef NTSTATUS (*NDK_FN_DISCONNECT)(_In_ NDK_CONNECTOR* pNdkConnector,
                                      _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                      _In_opt_ PVOID RequestContext);
// [U] Declared by the 1.2 header copy but in no documented dispatch table: not in any table.
typedef NTSTATUS (*NDK_FN_DISCONNECT_EX)(_In_ NDK_CONNECTOR* pNdkConnector, _In_ BOOLEAN Abortive,
                                         _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                         _In_opt_ PVOID RequestContext);

// A 1.2 consumer ignores the two trailing 2.1 slots; a 2.1 table is a superset.
typedef struct _NDK_CONNECTOR_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseConnector;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_CONNECT NdkConnect;
    NDK_FN_CONNECT_WITH_SHARED_ENDPOINT NdkConnectWithSharedEndpoint;
    NDK_FN_COMPLETE_CONNECT NdkCompleteConnect;
    NDK_FN_ACCEPT NdkAccept;
    NDK_FN_REJECT NdkReject;
    NDK_FN_GET_CONNECTION_DATA NdkGetConnectionData;
    NDK_FN_GET_LOCAL_ADDRESS NdkGetLocalAddress;
    NDK_FN_GET_PEER_ADDRESS NdkGetPeerAddress;
    NDK_FN_DISCONNECT NdkDisconnect;
    NDK_FN_COMPLETE_CONNECT_EX NdkCompleteConnectEx;  // NDKPI 2.1
    NDK_FN_ACCEPT_EX NdkAcceptEx;                     // NDKPI 2.1
} NDK_CONNECTOR_DISPATCH;
RNIC_NDK_ASSERT_TABLE_SLOTS(NDK_CONNECTOR_DISPATCH, 13);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkCloseConnector, 0);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkQueryExtension, 1);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkConnect, 2);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkConnectWithSharedEndpoint, 3);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkCompleteConnect, 4);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkAccept, 5);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkReject, 6);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkGetConnectionData, 7);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkGetLocalAddress, 8);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkGetPeerAddress, 9);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkDisconnect, 10);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkCompleteConnectEx, 11);
RNIC_NDK_ASSERT_SLOT(NDK_CONNECTOR_DISPATCH, NdkAcceptEx, 12);

typedef struct _NDK_CONNECTOR {
    NDK_OBJECT_HEADER Header;
    CONST NDK_CONNECTOR_DISPATCH* Dispatch;
} NDK_CONNECTOR;
RNIC_NDK_ASSERT_OBJECT(NDK_CONNECTOR);

// =============================================================================================
// Listener (ref 4.8)
// =============================================================================================
// Pause = TRUE: treat incoming requests as if no listener existed.
typedef VOID (*NDK_FN_CONTROL_CONNECT_EVENTS)(_In_ NDK_LISTENER* pNdkListener, _In_ BOOLEAN Pause);
typedef NTSTATUS (*NDK_FN_LISTEN)(_In_ NDK_LISTENER* pNdkListener,
                                  _In_reads_bytes_(AddressLength) CONST PSOCKADDR pAddress,
                                  _In_ ULONG AddressLength,
                                  _In_ NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                  _In_opt_ PVOID RequestContext);
typedef NTSTATUS (*NDK_FN_GET_LISTENER_LOCAL_ADDRESS)(_In_ NDK_LISTENER* pNdkListener,
                                                      _Out_writes_bytes_to_opt_(*pAddressLength,
                                                                                *pAddressLength)
                                                          PSOCKADDR pAddress,
                                                      _Inout_ ULONG* pAddressLength);

typedef struct _NDK_LISTENER_DISPATCH {
    NDK_FN_CLOSE_OBJECT NdkCloseListener;
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_LISTEN NdkListen;
    NDK_FN_GET_LISTENER_LOCAL_ADDRESS NdkGetLocalAddress;
    NDK_FN_CONTROL_CONNECT_EVENTS NdkControlConnectEvents;
} NDK_LISTENER_DISPATCH;
RNIC_NDK_ASSERT_TABLE_SLOTS(NDK_LISTENER_DISPATCH, 5);
RNIC_NDK_ASSERT_SLOT(NDK_LISTENER_DISPATCH, NdkCloseListener, 0);
RNIC_NDK_ASSERT_SLOT(NDK_LISTENER_DISPATCH, NdkQueryExtension, 1);
RNIC_NDK_ASSERT_SLOT(NDK_LISTENER_DISPATCH, NdkListen, 2);
RNIC_NDK_ASSERT_SLOT(NDK_LISTENER_DISPATCH, NdkGetLocalAddress, 3);
RNIC_NDK_ASSERT_SLOT(NDK_LISTENER_DISPATCH, NdkControlConnectEvents, 4);

typedef struct _NDK_LISTENER {
    NDK_OBJECT_HEADER Header;
    CONST NDK_LISTENER_DISPATCH* Dispatch;
} NDK_LISTENER;
RNIC_NDK_ASSERT_OBJECT(NDK_LISTENER);

// =============================================================================================
// Adapter (ref 4.3). No close slot: adapters close through the NDIS CloseNDKAdapterHandler.
// =============================================================================================
// PASSIVE_LEVEL, blocking. In: buffer size; out: bytes written (BUFFER_TOO_SMALL: required size).
typedef NTSTATUS (*NDK_FN_QUERY_ADAPTER_INFO)(_In_ NDK_ADAPTER* pNdkAdapter,
                                              _Out_writes_bytes_to_opt_(*pBufferSize, *pBufferSize)
                                                  NDK_ADAPTER_INFO* pInfo,
                                              _Inout_ ULONG* pBufferSize);
// [U] Declared by the 1.2 header copy but in no documented dispatch table: not in any table.
typedef NTSTATUS (*NDK_FN_QUERY_ADAPTER_INFO_EX)(
    _In_ NDK_ADAPTER* pNdkAdapter, _In_ NDK_VERSION Version,
    _Out_writes_bytes_to_opt_(*pBufferSize, *pBufferSize) NDK_ADAPTER_INFO* pInfo,
    _Inout_ ULONG* pBufferSize);
typedef NTSTATUS (*NDK_FN_CREATE_CQ)(_In_ NDK_ADAPTER* pNdkAdapter, _In_ ULONG CqDepth,
                                     _In_ NDK_FN_CQ_NOTIFICATION_CALLBACK CqNotification,
                                     _In_opt_ PVOID CqNotificationContext,
                                     _In_opt_ GROUP_AFFINITY* Affinity,
                                     _In_ NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     _In_opt_ PVOID RequestContext, _Outptr_ NDK_CQ** ppNdkCq);
typedef NTSTATUS (*NDK_FN_CREATE_PD)(_In_ NDK_ADAPTER* pNdkAdapter,
                                     _In_ NDK_FN_CREATE_COMPLETION CreateCompletion,
                                     _In_opt_ PVOID RequestContext, _Outptr_ NDK_PD** ppNdkPd);
typedef NTSTATUS (*NDK_FN_CREATE_SHARED_ENDPOINT)(
    _In_ NDK_ADAPTER* pNdkAdapter, _In_reads_bytes_(AddressLength) CONST PSOCKADDR pAddress,
    _In_ ULONG AddressLength, _In_ NDK_FN_CREATE_COMPLETION CreateCompletion,
    _In_opt_ PVOID RequestContext, _Outptr_ NDK_SHARED_ENDPOINT** ppNdkSharedEndpoint);
typedef NTSTATUS (*NDK_FN_CREATE_CONNECTOR)(_In_ NDK_ADAPTER* pNdkAdapter,
                                            _In_ NDK_FN_CREATE_COMPLETION CreateCompletion,
                                            _In_opt_ PVOID RequestContext,
                                            _Outptr_ NDK_CONNECTOR** ppNdkConnector);
typedef NTSTATUS (*NDK_FN_CREATE_LISTENER)(_In_ NDK_ADAPTER* pNdkAdapter,
                                           _In_ NDK_FN_CONNECT_EVENT_CALLBACK ConnectEvent,
                                           _In_opt_ PVOID ConnectEventContext,
                                           _In_ NDK_FN_CREATE_COMPLETION CreateCompletion,
                                           _In_opt_ PVOID RequestContext,
                                           _Outptr_ NDK_LISTENER** ppNdkListener);
// LAM == logical address mapping. *pLAMSize in/out (BUFFER_TOO_SMALL: required size); *pFBO out.
typedef NTSTATUS (*NDK_FN_BUILD_LAM)(_In_ NDK_ADAPTER* pNdkAdapter, _In_ MDL* Mdl,
                                     _In_ SIZE_T Length,
                                     _In_opt_ NDK_FN_REQUEST_COMPLETION RequestCompletion,
                                     _In_opt_ PVOID RequestContext,
                                     _Out_writes_bytes_to_opt_(*pLAMSize, *pLAMSize)
                                         NDK_LOGICAL_ADDRESS_MAPPING* pNdkLAM,
                                     _Inout_ ULONG* pLAMSize, _Out_ ULONG* pFBO);
typedef VOID (*NDK_FN_RELEASE_LAM)(_In_ NDK_ADAPTER* pNdkAdapter,
                                   _In_ NDK_LOGICAL_ADDRESS_MAPPING* pNdkLAM);

typedef struct _NDK_ADAPTER_DISPATCH {
    NDK_FN_QUERY_EXTENSION_INTERFACE NdkQueryExtension;
    NDK_FN_QUERY_ADAPTER_INFO NdkQueryAdapterInfo;
    NDK_FN_CREATE_CQ NdkCreateCq;
    NDK_FN_CREATE_PD NdkCreatePd;
    NDK_FN_CREATE_SHARED_ENDPOINT NdkCreateSharedEndpoint;
    NDK_FN_CREATE_CONNECTOR NdkCreateConnector;
    NDK_FN_CREATE_LISTENER NdkCreateListener;
    NDK_FN_BUILD_LAM NdkBuildLAM;
    NDK_FN_RELEASE_LAM NdkReleaseLAM;
} NDK_ADAPTER_DISPATCH;
RNIC_NDK_ASSERT_TABLE_SLOTS(NDK_ADAPTER_DISPATCH, 9);
RNIC_NDK_ASSERT_SLOT(NDK_ADAPTER_DISPATCH, NdkQueryExtension, 0);
RNIC_NDK_ASSERT_SLOT(NDK_ADAPTER_DISPATCH, NdkQueryAdapterInfo, 1);
RNIC_NDK_ASSERT_SLOT(NDK_ADAPTER_DISPATCH, NdkCreateCq, 2);
RNIC_NDK_ASSERT_SLOT(NDK_ADAPTER_DISPATCH, NdkCreatePd, 3);
RNIC_NDK_ASSERT_SLOT(NDK_ADAPTER_DISPATCH, NdkCreateSharedEndpoint, 4);
RNIC_NDK_ASSERT_SLOT(NDK_ADAPTER_DISPATCH, NdkCreateConnector, 5);
RNIC_NDK_ASSERT_SLOT(NDK_ADAPTER_DISPATCH, NdkCreateListener, 6);
RNIC_NDK_ASSERT_SLOT(NDK_ADAPTER_DISPATCH, NdkBuildLAM, 7);
RNIC_NDK_ASSERT_SLOT(NDK_ADAPTER_DISPATCH, NdkReleaseLAM, 8);

typedef struct _NDK_ADAPTER {
    NDK_OBJECT_HEADER Header;
    CONST NDK_ADAPTER_DISPATCH* Dispatch;
} NDK_ADAPTER;
RNIC_NDK_ASSERT_OBJECT(NDK_ADAPTER);

// =============================================================================================
// NDIS glue (ndisndk.h, ref section 9): how a miniport exposes NDK adapters to NDIS.
// =============================================================================================
typedef struct _NDIS_OBJECT_HEADER {
    UCHAR Type;
    UCHAR Revision;
    USHORT Size;
} NDIS_OBJECT_HEADER, *PNDIS_OBJECT_HEADER;
static_assert(sizeof(NDIS_OBJECT_HEADER) == 4);

typedef ULONG NDIS_NIC_SWITCH_ID;
typedef ULONG NDIS_NIC_SWITCH_VPORT_ID;

inline constexpr UCHAR NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS = 0xB2;
inline constexpr UCHAR NDIS_NDK_PROVIDER_CHARACTERISTICS_REVISION_1 = 1;
inline constexpr ULONG NETWORK_DIRECT_GLOBAL_FLAGS_ALLOW_REMOTE_IP_SUBNET = 0x00000001;

// Version = consumer's major + lowest acceptable minor; SwitchId/VPortId since NDIS 6.50.
typedef struct _NDIS_OPEN_NDK_ADAPTER_PARAMETERS {
    NDK_VERSION Version;
    NDIS_NIC_SWITCH_ID SwitchId;
    NDIS_NIC_SWITCH_VPORT_ID VPortId;
} NDIS_OPEN_NDK_ADAPTER_PARAMETERS, *PNDIS_OPEN_NDK_ADAPTER_PARAMETERS;
static_assert(sizeof(NDIS_OPEN_NDK_ADAPTER_PARAMETERS) == 12);
static_assert(offsetof(NDIS_OPEN_NDK_ADAPTER_PARAMETERS, SwitchId) == 4);
static_assert(offsetof(NDIS_OPEN_NDK_ADAPTER_PARAMETERS, VPortId) == 8);

// Returns NDIS_STATUS_SUCCESS (with *ppNdkAdapter), NDIS_STATUS_BAD_VERSION,
// NDIS_STATUS_ADAPTER_NOT_READY (NDK disabled) or NDIS_STATUS_RESOURCES.
typedef NDIS_STATUS (*OPEN_NDK_ADAPTER_HANDLER)(_In_ NDIS_HANDLE MiniportAdapterContext,
                                                _In_ PNDIS_OPEN_NDK_ADAPTER_PARAMETERS Parameters,
                                                _Outptr_ NDK_ADAPTER** ppNdkAdapter);
// Blocking: the consumer's "all callbacks have returned" barrier (ref 5.6).
typedef VOID (*CLOSE_NDK_ADAPTER_HANDLER)(_In_ NDIS_HANDLE MiniportAdapterContext,
                                          _In_ NDK_ADAPTER* pNdkAdapter);

// Passed to NdisSetOptionalHandlers. Header.Type = NDIS_OBJECT_TYPE_NDK_PROVIDER_CHARACTERISTICS,
// Revision = ..._REVISION_1, Size = NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1.
typedef struct _NDIS_NDK_PROVIDER_CHARACTERISTICS {
    NDIS_OBJECT_HEADER Header;
    ULONG Flags;  // reserved, 0
    OPEN_NDK_ADAPTER_HANDLER OpenNDKAdapterHandler;
    CLOSE_NDK_ADAPTER_HANDLER CloseNDKAdapterHandler;
} NDIS_NDK_PROVIDER_CHARACTERISTICS, *PNDIS_NDK_PROVIDER_CHARACTERISTICS;
static_assert(sizeof(NDIS_NDK_PROVIDER_CHARACTERISTICS) == 24);
static_assert(offsetof(NDIS_NDK_PROVIDER_CHARACTERISTICS, Flags) == 4);
static_assert(offsetof(NDIS_NDK_PROVIDER_CHARACTERISTICS, OpenNDKAdapterHandler) == 8);
static_assert(offsetof(NDIS_NDK_PROVIDER_CHARACTERISTICS, CloseNDKAdapterHandler) == 16);

inline constexpr USHORT NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1 =
    RTL_SIZEOF_THROUGH_FIELD(NDIS_NDK_PROVIDER_CHARACTERISTICS, CloseNDKAdapterHandler);
static_assert(NDIS_SIZEOF_NDK_PROVIDER_CHARACTERISTICS_REVISION_1 == 24);

// NDK_VERSION comparison (not in the WDK; NDK_VERSION has no operators there).
constexpr bool operator==(NDK_VERSION a, NDK_VERSION b) noexcept {
    return a.Major == b.Major && a.Minor == b.Minor;
}
constexpr bool operator!=(NDK_VERSION a, NDK_VERSION b) noexcept {
    return !(a == b);
}

namespace rnic::ndk {

// Documented NDK_VERSION values (ndkinfo.h docs). The NDKPI 2.x encoding is not documented.
inline constexpr NDK_VERSION NDK_VERSION_1_1{1, 1};  // Windows Server 2012, NDIS 6.30
inline constexpr NDK_VERSION NDK_VERSION_1_2{1, 2};  // Windows Server 2012 R2, NDIS 6.40

struct ndk_version_negotiation {
    NDIS_STATUS status;   // NDIS_STATUS_SUCCESS or NDIS_STATUS_BAD_VERSION
    NDK_VERSION version;  // on success: the version to report in NDK_ADAPTER_INFO and headers
};

// The OpenNDKAdapterHandler version rule (ref 9): different major => BAD_VERSION; requested minor
// <= provider's highest minor => SUCCESS at the provider's *highest* version; else BAD_VERSION.
constexpr ndk_version_negotiation negotiate_ndk_version(NDK_VERSION requested,
                                                        NDK_VERSION provider_highest) noexcept {
    if (requested.Major != provider_highest.Major || requested.Minor > provider_highest.Minor) {
        return {NDIS_STATUS_BAD_VERSION, requested};
    }
    return {NDIS_STATUS_SUCCESS, provider_highest};
}

}  // namespace rnic::ndk

#undef RNIC_NDK_ASSERT_SLOT
#undef RNIC_NDK_ASSERT_TABLE_SLOTS
#undef RNIC_NDK_ASSERT_OBJECT
