// SPDX-License-Identifier: Apache-2.0
// Windows kernel base types with their Windows x64 sizes, for NDK-shaped code on LP64 Linux.
//
// The NDKPI and NetDMA headers of the shim (ndk_shim/ndkpi.h, ndk_shim/netdma.h) and consumer
// code written against Microsoft's documentation use these names unqualified, so they live at
// global scope like the WDK's. What matters is the x64 ABI: on Linux `long` is 8 bytes, so
// ULONG/LONG are the fixed 32-bit types, and every struct here has its Windows x64 size and
// offsets (pinned by static_asserts next to each type). Source of truth for which types are
// needed: /work/shared/reference/ndkpi.md (sections 1, 2, 4, 8, 10); the layouts are wdm.h/ntdef.h.
//
// Guarding: every macro is #ifndef-guarded, and the numeric ones (TRUE/FALSE, MAX*) and the
// PAGE_SIZE/PAGE_SHIFT constants are re-checked by static_asserts, so a system header that
// already defined one (e.g. <sys/user.h> defines PAGE_SIZE) either agrees or breaks the build
// loudly. GUID uses the Windows GUID_DEFINED guard.
//
// Not modelled: SAL annotations are accepted and ignored; IRQLs are plain numbers (the shim runs
// in SystemC processes, not at an interrupt level); socket address families are Linux's
// (AF_INET is 2 on both, but AF_INET6 is 10 on Linux and 23 on Windows).
#pragma once

#include <cstddef>
#include <cstdint>

#include <netinet/in.h>
#include <sys/socket.h>

static_assert(sizeof(void*) == 8, "the NDK shim reproduces the Windows x64 ABI: 64-bit host only");

// ---------------------------------------------------------------------------------------------
// Scalar types (ntdef.h / basetsd.h), Windows x64 sizes
// ---------------------------------------------------------------------------------------------
#ifndef VOID
#define VOID void
#endif
#ifndef CONST
#define CONST const
#endif

typedef void* PVOID;
typedef void** PPVOID;
typedef char CHAR, *PCHAR;
typedef const char* PCSTR;
typedef uint8_t UCHAR, *PUCHAR;
typedef int16_t SHORT, *PSHORT;
typedef int16_t CSHORT;  // "counted short" used by MDL.Size / MdlFlags
typedef uint16_t USHORT, *PUSHORT;
typedef int32_t LONG, *PLONG;
typedef uint32_t ULONG, *PULONG;
typedef int INT, *PINT;
typedef unsigned int UINT, *PUINT;
typedef int64_t LONGLONG, *PLONGLONG;
typedef uint64_t ULONGLONG, *PULONGLONG;

typedef int8_t INT8, *PINT8;
typedef int16_t INT16, *PINT16;
typedef int32_t INT32, *PINT32;
typedef int64_t INT64, *PINT64;
typedef uint8_t UINT8, *PUINT8;
typedef uint16_t UINT16, *PUINT16;
typedef uint32_t UINT32, *PUINT32;
typedef uint64_t UINT64, *PUINT64;
typedef int32_t LONG32, *PLONG32;
typedef uint32_t ULONG32, *PULONG32;
typedef int64_t LONG64, *PLONG64;
typedef uint64_t ULONG64, *PULONG64;
typedef uint32_t DWORD, *PDWORD;

typedef intptr_t LONG_PTR, *PLONG_PTR;
typedef uintptr_t ULONG_PTR, *PULONG_PTR;
typedef size_t SIZE_T, *PSIZE_T;
typedef ptrdiff_t SSIZE_T, *PSSIZE_T;

typedef uint8_t BOOLEAN, *PBOOLEAN;     // UCHAR on Windows; not C++ bool
typedef char16_t WCHAR, *PWCH, *PWSTR;  // UTF-16 like Windows' 2-byte wchar_t (Linux wchar_t is 4)
typedef const char16_t* PCWSTR;

typedef int32_t NTSTATUS, *PNTSTATUS;    // values: ndk_shim/ntstatus.h
typedef int NDIS_STATUS, *PNDIS_STATUS;  // values: ndk_shim/ntstatus.h
typedef PVOID NDIS_HANDLE, *PNDIS_HANDLE;

typedef UCHAR KIRQL, *PKIRQL;
typedef ULONG_PTR KAFFINITY, *PKAFFINITY;
typedef ULONG_PTR PFN_NUMBER, *PPFN_NUMBER;

#ifndef FALSE
#define FALSE 0
#endif
#ifndef TRUE
#define TRUE 1
#endif
#ifndef MAXUCHAR
#define MAXUCHAR 0xff
#endif
#ifndef MAXUSHORT
#define MAXUSHORT 0xffff
#endif
#ifndef MAXULONG
#define MAXULONG 0xffffffff
#endif
#ifndef MAXLONG
#define MAXLONG 0x7fffffff
#endif

// IRQL numbers (x64). The shim never raises IRQL; these exist for code that compares or asserts.
#ifndef PASSIVE_LEVEL
#define PASSIVE_LEVEL 0
#endif
#ifndef APC_LEVEL
#define APC_LEVEL 1
#endif
#ifndef DISPATCH_LEVEL
#define DISPATCH_LEVEL 2
#endif

static_assert(sizeof(UCHAR) == 1 && sizeof(BOOLEAN) == 1 && sizeof(CHAR) == 1);
static_assert(sizeof(USHORT) == 2 && sizeof(SHORT) == 2 && sizeof(CSHORT) == 2 &&
              sizeof(WCHAR) == 2);
static_assert(sizeof(ULONG) == 4 && sizeof(LONG) == 4 && sizeof(UINT32) == 4 && sizeof(UINT) == 4);
static_assert(sizeof(ULONG64) == 8 && sizeof(ULONGLONG) == 8 && sizeof(LONGLONG) == 8);
static_assert(sizeof(SIZE_T) == 8 && sizeof(ULONG_PTR) == 8 && sizeof(KAFFINITY) == 8);
static_assert(sizeof(NTSTATUS) == 4 && sizeof(NDIS_STATUS) == 4 && sizeof(KIRQL) == 1);
static_assert(TRUE == 1 && FALSE == 0, "TRUE/FALSE already defined with non-Windows values");
static_assert(MAXULONG == UINT32_MAX && MAXUSHORT == UINT16_MAX && MAXUCHAR == UINT8_MAX);
static_assert(MAXLONG == INT32_MAX);

// ---------------------------------------------------------------------------------------------
// SAL annotations: accepted and ignored, so prototypes copied from the WDK headers compile.
// ---------------------------------------------------------------------------------------------
#ifndef _In_
#define _In_
#endif
#ifndef _In_opt_
#define _In_opt_
#endif
#ifndef _Out_
#define _Out_
#endif
#ifndef _Out_opt_
#define _Out_opt_
#endif
#ifndef _Inout_
#define _Inout_
#endif
#ifndef _Inout_opt_
#define _Inout_opt_
#endif
#ifndef _Outptr_
#define _Outptr_
#endif
#ifndef _In_reads_
#define _In_reads_(n)
#endif
#ifndef _In_reads_bytes_
#define _In_reads_bytes_(n)
#endif
#ifndef _In_reads_bytes_opt_
#define _In_reads_bytes_opt_(n)
#endif
#ifndef _Out_writes_to_
#define _Out_writes_to_(n, c)
#endif
#ifndef _Out_writes_bytes_to_opt_
#define _Out_writes_bytes_to_opt_(n, c)
#endif
#ifndef _IRQL_requires_
#define _IRQL_requires_(irql)
#endif
#ifndef _IRQL_requires_max_
#define _IRQL_requires_max_(irql)
#endif
#ifndef _Function_class_
#define _Function_class_(name)
#endif
#ifndef _Use_decl_annotations_
#define _Use_decl_annotations_
#endif

// ---------------------------------------------------------------------------------------------
// Layout helpers (ntdef.h)
// ---------------------------------------------------------------------------------------------
#ifndef FIELD_OFFSET
#define FIELD_OFFSET(type, field) ((LONG)offsetof(type, field))
#endif
#ifndef RTL_FIELD_SIZE
#define RTL_FIELD_SIZE(type, field) (sizeof(((type*)0)->field))
#endif
#ifndef RTL_SIZEOF_THROUGH_FIELD
#define RTL_SIZEOF_THROUGH_FIELD(type, field) \
    (FIELD_OFFSET(type, field) + RTL_FIELD_SIZE(type, field))
#endif
#ifndef CONTAINING_RECORD
#define CONTAINING_RECORD(address, type, field) ((type*)((PCHAR)(address)-offsetof(type, field)))
#endif

// NTSTATUS classification (ntdef.h): severity is the top two bits.
#ifndef NT_SUCCESS
#define NT_SUCCESS(Status) (((NTSTATUS)(Status)) >= 0)
#endif
#ifndef NT_INFORMATION
#define NT_INFORMATION(Status) ((((ULONG)(Status)) >> 30) == 1)
#endif
#ifndef NT_WARNING
#define NT_WARNING(Status) ((((ULONG)(Status)) >> 30) == 2)
#endif
#ifndef NT_ERROR
#define NT_ERROR(Status) ((((ULONG)(Status)) >> 30) == 3)
#endif

// ---------------------------------------------------------------------------------------------
// Pages (wdm.h, x64): 4 KiB pages. Va may be a pointer or an integer address, as in the WDK.
//
// PAGE_SIZE/PAGE_SHIFT are constants, not the WDK's macros: a macro would break other names
// such as rnic::hsi::PAGE_SIZE. They are `int` like the WDK literal, so ~(PAGE_SIZE - 1) still
// sign-extends to a 64-bit mask. If a system header (<sys/user.h>) already defined them as
// macros, those are used; the values are checked either way. The page macros below use their
// own literal so they mean x64 pages whatever PAGE_SIZE is visible where they expand.
// ---------------------------------------------------------------------------------------------
#ifndef PAGE_SIZE
inline constexpr int PAGE_SIZE = 0x1000;
#endif
#ifndef PAGE_SHIFT
inline constexpr int PAGE_SHIFT = 12;
#endif
static_assert(PAGE_SIZE == 4096 && PAGE_SHIFT == 12,
              "PAGE_SIZE/PAGE_SHIFT defined elsewhere differ");

#ifndef BYTE_OFFSET
#define BYTE_OFFSET(Va) ((ULONG)((LONG_PTR)(Va) & (0x1000 - 1)))
#endif
#ifndef PAGE_ALIGN
#define PAGE_ALIGN(Va) ((PVOID)((ULONG_PTR)(Va) & ~((ULONG_PTR)0x1000 - 1)))
#endif
#ifndef ADDRESS_AND_SIZE_TO_SPAN_PAGES
#define ADDRESS_AND_SIZE_TO_SPAN_PAGES(Va, Size) \
    ((BYTE_OFFSET(Va) + ((SIZE_T)(Size)) + (0x1000 - 1)) >> 12)
#endif

// ---------------------------------------------------------------------------------------------
// 64-bit integers and physical addresses (ntdef.h)
// ---------------------------------------------------------------------------------------------
typedef union _LARGE_INTEGER {
    __extension__ struct {  // anonymous struct: a GNU/MSVC extension, as in the WDK
        ULONG LowPart;
        LONG HighPart;
    };
    struct {
        ULONG LowPart;
        LONG HighPart;
    } u;
    LONGLONG QuadPart;
} LARGE_INTEGER, *PLARGE_INTEGER;

typedef union _ULARGE_INTEGER {
    __extension__ struct {
        ULONG LowPart;
        ULONG HighPart;
    };
    struct {
        ULONG LowPart;
        ULONG HighPart;
    } u;
    ULONGLONG QuadPart;
} ULARGE_INTEGER, *PULARGE_INTEGER;

typedef LARGE_INTEGER PHYSICAL_ADDRESS, *PPHYSICAL_ADDRESS;

static_assert(sizeof(LARGE_INTEGER) == 8 && alignof(LARGE_INTEGER) == 8);
static_assert(offsetof(LARGE_INTEGER, LowPart) == 0 && offsetof(LARGE_INTEGER, HighPart) == 4);
static_assert(sizeof(ULARGE_INTEGER) == 8 && sizeof(PHYSICAL_ADDRESS) == 8);

// ---------------------------------------------------------------------------------------------
// GUID (guiddef.h), 16 bytes
// ---------------------------------------------------------------------------------------------
#ifndef GUID_DEFINED
#define GUID_DEFINED
typedef struct _GUID {
    ULONG Data1;
    USHORT Data2;
    USHORT Data3;
    UCHAR Data4[8];
} GUID;
#endif
typedef GUID *PGUID, *LPGUID;
typedef const GUID* LPCGUID;
static_assert(sizeof(GUID) == 16 && offsetof(GUID, Data4) == 8);

// ---------------------------------------------------------------------------------------------
// Processor group affinity (wdm.h/miniport.h), 16 bytes on x64
// ---------------------------------------------------------------------------------------------
typedef struct _GROUP_AFFINITY {
    KAFFINITY Mask;
    USHORT Group;
    USHORT Reserved[3];
} GROUP_AFFINITY, *PGROUP_AFFINITY;
static_assert(sizeof(GROUP_AFFINITY) == 16);
static_assert(offsetof(GROUP_AFFINITY, Group) == 8 && offsetof(GROUP_AFFINITY, Reserved) == 10);

// ---------------------------------------------------------------------------------------------
// Counted UTF-16 string (ntdef.h), used by NET_DMA_PROVIDER_CHARACTERISTICS.FriendlyName.
// Length and MaximumLength are in bytes, not characters.
// ---------------------------------------------------------------------------------------------
typedef struct _UNICODE_STRING {
    USHORT Length;
    USHORT MaximumLength;
    PWCH Buffer;
} UNICODE_STRING, *PUNICODE_STRING;
typedef const UNICODE_STRING* PCUNICODE_STRING;
static_assert(sizeof(UNICODE_STRING) == 16 && offsetof(UNICODE_STRING, Buffer) == 8);

// ---------------------------------------------------------------------------------------------
// Socket addresses (ws2def.h): Linux's structs have the Windows sizes and member names.
// ---------------------------------------------------------------------------------------------
typedef USHORT ADDRESS_FAMILY;
typedef struct sockaddr SOCKADDR, *PSOCKADDR;
typedef const struct sockaddr* PCSOCKADDR;
typedef struct sockaddr_in SOCKADDR_IN, *PSOCKADDR_IN;
typedef struct sockaddr_in6 SOCKADDR_IN6, *PSOCKADDR_IN6;
typedef struct sockaddr_storage SOCKADDR_STORAGE, *PSOCKADDR_STORAGE;
typedef union _SOCKADDR_INET {
    SOCKADDR_IN Ipv4;
    SOCKADDR_IN6 Ipv6;
    ADDRESS_FAMILY si_family;
} SOCKADDR_INET, *PSOCKADDR_INET;
static_assert(sizeof(SOCKADDR) == 16 && sizeof(SOCKADDR_IN) == 16 && sizeof(SOCKADDR_IN6) == 28);
static_assert(sizeof(SOCKADDR_STORAGE) == 128 && sizeof(SOCKADDR_INET) == 28);
static_assert(sizeof(((SOCKADDR*)0)->sa_family) == sizeof(ADDRESS_FAMILY));

// ---------------------------------------------------------------------------------------------
// Opaque kernel objects referenced by pointer only
// ---------------------------------------------------------------------------------------------
struct _EPROCESS;
typedef struct _EPROCESS* PEPROCESS;
struct _DEVICE_OBJECT;
typedef struct _DEVICE_OBJECT DEVICE_OBJECT, *PDEVICE_OBJECT;

// ---------------------------------------------------------------------------------------------
// Memory descriptor list (wdm.h), Windows x64 layout, 48 bytes. The PFN array (one PFN_NUMBER
// per page spanned by StartVa+ByteOffset .. +ByteCount) follows the header in the same
// allocation; Size is the byte size of header plus array. ref §8 (RegisterMr, BuildLam).
// ---------------------------------------------------------------------------------------------
typedef struct _MDL {
    struct _MDL* Next;  // next MDL of a chain (one buffer, several ranges)
    CSHORT Size;        // sizeof(MDL) + PFN array bytes
    CSHORT MdlFlags;    // MDL_* below
    USHORT AllocationProcessorNumber;
    USHORT Reserved;
    struct _EPROCESS* Process;
    PVOID MappedSystemVa;
    PVOID StartVa;     // page-aligned virtual address of the first page
    ULONG ByteCount;   // bytes described
    ULONG ByteOffset;  // offset of the first byte within the first page
} MDL, *PMDL;

static_assert(sizeof(MDL) == 48);
static_assert(offsetof(MDL, Next) == 0 && offsetof(MDL, Size) == 8 &&
              offsetof(MDL, MdlFlags) == 10);
static_assert(offsetof(MDL, AllocationProcessorNumber) == 12 && offsetof(MDL, Reserved) == 14);
static_assert(offsetof(MDL, Process) == 16 && offsetof(MDL, MappedSystemVa) == 24);
static_assert(offsetof(MDL, StartVa) == 32 && offsetof(MDL, ByteCount) == 40);
static_assert(offsetof(MDL, ByteOffset) == 44);

// MdlFlags (wdm.h)
#ifndef MDL_MAPPED_TO_SYSTEM_VA
#define MDL_MAPPED_TO_SYSTEM_VA 0x0001
#define MDL_PAGES_LOCKED 0x0002
#define MDL_SOURCE_IS_NONPAGED_POOL 0x0004
#define MDL_ALLOCATED_FIXED_SIZE 0x0008
#define MDL_PARTIAL 0x0010
#define MDL_PARTIAL_HAS_BEEN_MAPPED 0x0020
#define MDL_IO_PAGE_READ 0x0040
#define MDL_WRITE_OPERATION 0x0080
#define MDL_LOCKED_PAGE_TABLES 0x0100
#define MDL_PARENT_MAPPED_SYSTEM_VA MDL_LOCKED_PAGE_TABLES
#define MDL_FREE_EXTRA_PTES 0x0200
#define MDL_DESCRIBES_AWE 0x0400
#define MDL_IO_SPACE 0x0800
#define MDL_NETWORK_HEADER 0x1000
#define MDL_MAPPING_CAN_FAIL 0x2000
#define MDL_PAGE_CONTENTS_INVARIANT 0x4000
#define MDL_ALLOCATED_MUST_SUCCEED MDL_PAGE_CONTENTS_INVARIANT
#define MDL_INTERNAL 0x8000
#endif

// MmGetMdlVirtualAddress: the buffer's first byte (StartVa + ByteOffset).
inline PVOID MmGetMdlVirtualAddress(const MDL* Mdl) {
    return static_cast<PCHAR>(Mdl->StartVa) + Mdl->ByteOffset;
}
inline ULONG MmGetMdlByteCount(const MDL* Mdl) {
    return Mdl->ByteCount;
}
inline ULONG MmGetMdlByteOffset(const MDL* Mdl) {
    return Mdl->ByteOffset;
}
// MmGetMdlPfnArray: the PFN array that follows the 48-byte header ((PPFN_NUMBER)(Mdl + 1)).
inline PPFN_NUMBER MmGetMdlPfnArray(MDL* Mdl) {
    return reinterpret_cast<PPFN_NUMBER>(Mdl + 1);
}
inline const PFN_NUMBER* MmGetMdlPfnArray(const MDL* Mdl) {
    return reinterpret_cast<const PFN_NUMBER*>(Mdl + 1);
}
// MmInitializeMdl (a wdm.h macro): fills the header for [BaseVa, BaseVa + Length); the caller
// provides storage for sizeof(MDL) + span * sizeof(PFN_NUMBER) bytes and fills the PFN array.
// Like the WDK, Process, MappedSystemVa and AllocationProcessorNumber are left untouched.
inline VOID MmInitializeMdl(MDL* MemoryDescriptorList, PVOID BaseVa, SIZE_T Length) {
    MemoryDescriptorList->Next = nullptr;
    MemoryDescriptorList->Size = static_cast<CSHORT>(
        sizeof(MDL) + sizeof(PFN_NUMBER) * ADDRESS_AND_SIZE_TO_SPAN_PAGES(BaseVa, Length));
    MemoryDescriptorList->MdlFlags = 0;
    MemoryDescriptorList->StartVa = PAGE_ALIGN(BaseVa);
    MemoryDescriptorList->ByteOffset = BYTE_OFFSET(BaseVa);
    MemoryDescriptorList->ByteCount = static_cast<ULONG>(Length);
}
