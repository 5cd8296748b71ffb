// SPDX-License-Identifier: Apache-2.0
// Hardware/software interface of the rnicsim RNIC: BAR registers, doorbells, WQE, CQE,
// command and event formats. The one contract between the driver (ndk_shim/) and the model
// (hw/); nothing else is shared. All multi-byte fields are little-endian in host memory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rnic::hsi {

// ---------------------------------------------------------------------------------------------
// BAR0 (MMIO, 64 KiB). Registers are 64-bit unless noted; doorbells are posted writes.
// ---------------------------------------------------------------------------------------------
constexpr uint64_t BAR0_SIZE = 0x10000;
constexpr uint64_t REG_CMDQ_BASE = 0x0000;      // bus address of the command ring (64 B aligned)
constexpr uint64_t REG_CMDQ_LOG_SIZE = 0x0008;  // log2 of the number of 64 B command slots
constexpr uint64_t REG_CMDQ_DOORBELL = 0x0010;  // u32: command producer index (free-running)
constexpr uint64_t REG_EQ_BASE = 0x0018;        // bus address of the event queue ring
constexpr uint64_t REG_EQ_LOG_SIZE = 0x0020;    // log2 of the number of 16 B event entries
// u32: event consumer index. The NIC signals once per arm (after a batch of EQEs) and then
// stays quiet; writing this re-arms the EQ and signals vector 0 at once if entries are left.
constexpr uint64_t REG_EQ_CONSUMER = 0x0028;
// Read-only: 0x0000_0001_15b3_1017 (device 0x1017, vendor 0x15b3, bits 32..47 revision 1).
constexpr uint64_t REG_DEVICE_ID = 0x0030;
// Context memory ("ICM"): host memory the driver gives the NIC for its context tables (QP
// contexts, then MPT, then MTT; sizes from the NIC's limits and context_cache config). The
// NIC caches entries on chip and reads/writes lines here on misses/evictions. 0 = none: the
// tables are on chip and never miss.
constexpr uint64_t REG_ICM_BASE = 0x0038;  // bus address, 4 KiB aligned, contiguous
constexpr uint64_t REG_ICM_SIZE = 0x0040;  // bytes (read: bytes the NIC needs)
// Send-queue doorbell: bits 0..23 QPN, bits 32..47 SQ producer index (free-running, in WQEs).
constexpr uint64_t REG_SQ_DOORBELL = 0x0100;
// Receive-queue doorbell: bits 0..23 QPN (or SRQN with bit 24 set), bits 32..47 producer index.
constexpr uint64_t REG_RQ_DOORBELL = 0x0108;
constexpr uint64_t RQ_DOORBELL_SRQ = 1ull << 24;
// CQ doorbell: bits 0..23 CQN, bits 24..25 arm request (cq_arm), bits 32..63 consumer index.
// An arm combines with a pending one (ANY wins; 3 = ANY) and fires at once if a matching CQE
// is already unconsumed. Doorbells are single 64-bit writes; the CSRs above also accept two
// 32-bit halves.
constexpr uint64_t REG_CQ_DOORBELL = 0x0110;
// WQE push ("BlueFlame"): a write-combined 64 B write of the first WQE block; the first 8 bytes
// of the block carry the doorbell value in the reserved field so no separate doorbell is needed.
// The block's `qpn` must equal the doorbell's QPN; it stands for the WQE at `wqe_index`.
constexpr uint64_t REG_WQE_PUSH = 0x0800;
// A push carries 64 B (one block) up to WQE_PUSH_MAX_SIZE (the write-combining buffer), a
// multiple of 64; a WQE no larger than the push needs no DMA read.
constexpr uint64_t WQE_PUSH_SIZE = 64;
constexpr uint64_t WQE_PUSH_MAX_SIZE = 256;
// MSI-X table (PCI layout: 16 B per vector: addr lo/hi, data, vector control).
constexpr uint64_t REG_MSIX_TABLE = 0x2000;
constexpr uint32_t MSIX_VECTORS = 64;
constexpr uint32_t MSIX_VECTOR_ASYNC = 0;  // command completions and async events

enum cq_arm : uint8_t { CQ_ARM_NONE = 0, CQ_ARM_ANY = 1, CQ_ARM_SOLICITED = 2 };

// ---------------------------------------------------------------------------------------------
// Send-queue WQE: a 64 B control segment followed by data segments, in 64 B basic blocks
// (WQEBBs). The SQ ring holds `sq_depth` slots of `sq_stride` bytes (a multiple of 64).
// ---------------------------------------------------------------------------------------------
enum wqe_opcode : uint8_t {
    WQE_NOP = 0,
    WQE_SEND = 1,
    WQE_SEND_IMM = 2,
    WQE_SEND_INV = 3,
    WQE_WRITE = 4,
    WQE_WRITE_IMM = 5,
    WQE_READ = 6,
    WQE_FAST_REG = 7,   // fast-register an MR (fast_reg_segment follows the control segment)
    WQE_BIND_MW = 8,    // bind a memory window (bind_segment follows)
    WQE_LOCAL_INV = 9,  // invalidate a local key (imm_or_key)
};

enum wqe_flags : uint8_t {
    WQE_FLAG_SIGNALED = 1 << 0,        // write a CQE on success
    WQE_FLAG_SOLICITED = 1 << 1,       // set SE in the last packet
    WQE_FLAG_FENCE = 1 << 2,           // wait for earlier READs to complete
    WQE_FLAG_INLINE = 1 << 3,          // payload is inline after the control segment
    WQE_FLAG_READ_LOCAL_INV = 1 << 4,  // READ: invalidate first SGE's key on success
};

struct wqe_ctrl {        // 64 B
    uint8_t opcode;      // wqe_opcode
    uint8_t flags;       // wqe_flags
    uint8_t num_sge;     // data segments (or 0 with INLINE)
    uint8_t size_bb;     // WQE size in 64 B basic blocks, >= 1
    uint16_t wqe_index;  // producer index of this WQE (wraps at 2^16)
    uint16_t reserved0;
    uint32_t total_length;  // sum of SGE lengths (or inline bytes)
    uint32_t imm_or_key;    // immediate data, key to invalidate, or LOCAL_INV key
    uint64_t remote_va;     // WRITE/READ
    uint32_t rkey;          // WRITE/READ
    uint32_t qpn;           // for WQE push: which QP
    uint64_t doorbell;      // for WQE push: the SQ doorbell value, else 0
    uint8_t reserved1[24];
};
static_assert(sizeof(wqe_ctrl) == 64);

struct wqe_sge {    // 16 B data segment
    uint64_t addr;  // VA within the MR of `lkey`, or a logical (bus) address
    uint32_t length;
    uint32_t lkey;  // local key; the privileged key means `addr` is a bus address
};
static_assert(sizeof(wqe_sge) == 16);

struct fast_reg_segment {     // 64 B, after the control segment of WQE_FAST_REG
    uint32_t key;             // key to (re)register
    uint32_t access;          // access flags (mr_access)
    uint64_t base_va;         // first byte of the region
    uint64_t length;          // bytes
    uint64_t page_list_addr;  // bus address of page_count 8 B page addresses (PAGE_SIZE)
    uint32_t page_count;
    uint32_t first_byte_offset;
    uint8_t reserved[24];
};
static_assert(sizeof(fast_reg_segment) == 64);

struct bind_segment {  // 64 B, after the control segment of WQE_BIND_MW
    uint32_t mw_key;   // window key to bind
    uint32_t mr_key;   // local key of the MR it windows
    uint64_t va;       // window start (within the MR)
    uint64_t length;
    uint32_t access;  // remote rights (mr_access)
    uint8_t reserved[36];
};
static_assert(sizeof(bind_segment) == 64);

// Receive WQE: 16 B header then SGEs; slots of `rq_stride` bytes.
struct rq_wqe_hdr {
    uint16_t wqe_index;
    uint8_t num_sge;
    uint8_t reserved0;
    uint32_t reserved1;
    uint64_t reserved2;
};
static_assert(sizeof(rq_wqe_hdr) == 16);

// ---------------------------------------------------------------------------------------------
// Completion queue entry, 32 B. Ownership by phase bit: an entry is valid when its phase bit
// equals the consumer's current phase (starts at 1, flips at each wrap of the ring).
// ---------------------------------------------------------------------------------------------
enum cqe_opcode : uint8_t {
    CQE_SEND = 1,
    CQE_WRITE = 2,
    CQE_READ = 3,
    CQE_FAST_REG = 4,
    CQE_BIND_MW = 5,
    CQE_LOCAL_INV = 6,
    CQE_RECV = 7,
    CQE_RECV_IMM = 8,  // receive of SEND with immediate or WRITE with immediate
    CQE_RECV_INV = 9,  // receive of SEND with invalidate (key in imm_or_key)
};

// Hardware completion syndromes; ndk_shim maps them to NTSTATUS in one table.
enum cqe_status : uint8_t {
    CQE_OK = 0,
    CQE_LOCAL_LENGTH_ERR = 1,  // receive buffer too small, SGE sum mismatch
    CQE_LOCAL_PROT_ERR = 2,    // bad lkey, bounds, rights, PD mismatch on a local buffer
    CQE_LOCAL_QP_OP_ERR = 3,   // malformed WQE
    CQE_WR_FLUSH_ERR = 4,      // flushed (QP in error / NdkFlush)
    CQE_MW_BIND_ERR = 5,
    CQE_REMOTE_ACCESS_ERR = 6,    // NAK remote access error
    CQE_REMOTE_INVALID_REQ = 7,   // NAK invalid request
    CQE_REMOTE_OP_ERR = 8,        // NAK remote operational error
    CQE_RETRY_EXCEEDED = 9,       // transport retry counter exceeded
    CQE_RNR_RETRY_EXCEEDED = 10,  // RNR retry counter exceeded
    CQE_FATAL = 11,
};

enum cqe_flags : uint8_t {
    CQE_FLAG_SOLICITED = 1 << 0,
    CQE_FLAG_PHASE = 1 << 7,
};

struct cqe {  // 32 B
    uint32_t qpn;
    uint16_t wqe_index;   // SQ or RQ index the CQE completes
    uint8_t opcode;       // cqe_opcode
    uint8_t status;       // cqe_status
    uint32_t byte_len;    // received bytes (receives and READ)
    uint32_t imm_or_key;  // immediate data or invalidated key
    uint32_t srqn;        // SRQ the receive came from (0 if none), bit 31 = valid
    uint32_t vendor_err;  // provider diagnostic (ProviderErrorCode)
    uint32_t reserved;
    uint8_t reserved1[3];
    uint8_t flags;  // cqe_flags; written last (the phase bit)
};
static_assert(sizeof(cqe) == 32);

// ---------------------------------------------------------------------------------------------
// Command queue: 64 B slots. The driver fills a slot and rings REG_CMDQ_DOORBELL; the command
// processor DMA-reads it, executes it and DMA-writes the slot's `status`/`out` fields back,
// then posts an event (EVENT_CMD_DONE) on the event queue and signals MSI-X vector 0.
// ---------------------------------------------------------------------------------------------
enum cmd_opcode : uint8_t {
    CMD_NOP = 0,
    CMD_CREATE_CQ = 1,
    CMD_RESIZE_CQ = 2,
    CMD_DESTROY_CQ = 3,
    CMD_CREATE_PD = 4,
    CMD_DESTROY_PD = 5,
    CMD_CREATE_QP = 6,
    CMD_MODIFY_QP = 7,
    CMD_DESTROY_QP = 8,
    CMD_CREATE_MR = 9,  // register (page list in host memory) or reserve a fast-reg MR
    CMD_DESTROY_MR = 10,
    CMD_CREATE_MW = 11,
    CMD_DESTROY_MW = 12,
    CMD_CREATE_SRQ = 13,
    CMD_MODIFY_SRQ = 14,
    CMD_DESTROY_SRQ = 15,
    CMD_QUERY_DEVICE = 16,  // writes a cmd_query_device into the slot's `u` before the status
    CMD_MODIFY_CQ = 17,     // interrupt moderation of a CQ (cmd_modify_cq)
};

enum cmd_status : uint8_t {
    CMD_OK = 0,
    CMD_BAD_OPCODE = 1,
    CMD_BAD_PARAM = 2,
    CMD_NO_RESOURCES = 3,
    CMD_BAD_HANDLE = 4,
    CMD_BUSY = 5,  // object still referenced
    // The NIC had a catastrophic error (EVENT_DEVICE_FATAL): every later command fails with
    // this status and changes nothing (the driver maps it to STATUS_INTERNAL_ERROR).
    CMD_DEVICE_FATAL = 6,
};
// BAD_PARAM: handle out of range (or SRQN 0, key index 0), create on an existing object, bad
// depth/stride/address/vector/access, illegal QP transition. BAD_HANDLE: the object to modify or
// destroy, or an object referenced (PD, CQ, SRQ), does not exist.
// MODIFY_QP: RESET->INIT, INIT->INIT/RTR, RTR->RTR/RTS, RTS->RTS apply and check all fields;
// ERROR and RESET are allowed from any state and ignore the other fields. Entering RTR takes
// rq_psn, entering RTS takes sq_psn. RESIZE_CQ keeps the indices (next CQE at producer & new
// mask, phase from producer >> new log) and the vector. DESTROY_MR/MW match the key's index only.

enum qp_state : uint8_t { QPS_RESET = 0, QPS_INIT = 1, QPS_RTR = 2, QPS_RTS = 3, QPS_ERROR = 4 };

enum mr_access : uint32_t {
    ACCESS_LOCAL_WRITE = 1 << 0,
    ACCESS_REMOTE_READ = 1 << 1,
    ACCESS_REMOTE_WRITE = 1 << 2,
    ACCESS_FAST_REG = 1 << 3,          // MR is a fast-register MR (keys change by WQE)
    ACCESS_REMOTE_ACCESS_OK = 1 << 4,  // fast-reg MR initialised with RemoteAccess
    ACCESS_MW_BIND = 1 << 5,
};

struct cmd_create_cq {  // CMD_CREATE_CQ / CMD_RESIZE_CQ
    uint32_t cqn;
    uint32_t log_depth;
    uint64_t ring_addr;  // bus address of depth x 32 B
    uint32_t msix_vector;
    uint32_t reserved;
};
struct cmd_create_qp {
    uint32_t qpn;
    uint32_t pdn;
    uint32_t send_cqn;
    uint32_t recv_cqn;
    uint32_t srqn;  // 0 = none
    uint16_t sq_log_depth;
    uint16_t rq_log_depth;
    uint64_t sq_addr;
    uint64_t rq_addr;
    uint16_t sq_stride;  // bytes per SQ slot
    uint16_t rq_stride;
    uint16_t max_inline;
    uint16_t reserved;
};
struct cmd_modify_qp {
    uint32_t qpn;
    uint8_t state;     // qp_state
    uint8_t pmtu_log;  // log2 of path MTU bytes (8..12)
    uint8_t retry_count;
    uint8_t rnr_retry;
    uint32_t dest_qpn;
    uint32_t sq_psn;
    uint32_t rq_psn;
    uint32_t dest_ip;  // IPv4, host order
    uint8_t dest_mac[6];
    uint8_t timeout_log;    // 4.096 us x 2^timeout_log
    uint8_t max_rd_atomic;  // ORD
};
struct cmd_create_mr {
    uint32_t key;  // lkey = rkey
    uint32_t pdn;
    uint64_t va;  // base VA of the region
    uint64_t length;
    uint64_t page_list_addr;     // bus address of page_count x 8 B page bus addresses
    uint32_t page_count;         // max pages for a fast-reg MR
    uint32_t access;             // mr_access
    uint32_t first_byte_offset;  // offset of va within the first page
    uint32_t reserved;
};
struct cmd_create_srq {
    uint32_t srqn;
    uint32_t pdn;
    uint64_t ring_addr;
    uint16_t log_depth;
    uint16_t stride;
    uint32_t limit;  // SRQ limit event threshold (0 = off)
};
// CMD_MODIFY_CQ: interrupt moderation (NdkControlCqInterruptModeration). Once an armed CQ has a
// matching CQE, the NIC holds its EVENT_CQ_COMPLETION (and so the MSI-X message) until `count`
// CQEs were written to the CQ since that first one, or `period_us` microseconds passed since
// it, whichever comes first. count 0 = no count limit; period_us 0 = no timer; both 0 =
// moderation off (the event goes out with the first matching CQE). New settings apply at once,
// also to an event already held. A CQ with period_us != 0 holds one of the NIC's moderation
// timers (rnic.cq.moderation_timers): none free -> CMD_NO_RESOURCES; period 0 or DESTROY_CQ
// frees it. A NIC without moderation (rnic.cq.interrupt_moderation false) answers
// CMD_BAD_OPCODE and clears DEVICE_CAP_CQ_MODERATION.
struct cmd_modify_cq {
    uint32_t cqn;
    uint32_t count;      // CQEs
    uint32_t period_us;  // microseconds
    uint32_t reserved;
};
// CMD_QUERY_DEVICE output, written over the slot's `u` (then status and done).
enum device_caps : uint32_t {
    DEVICE_CAP_CQ_MODERATION = 1u << 0,  // CMD_MODIFY_CQ supported
};
struct cmd_query_device {
    uint32_t caps;               // device_caps
    uint32_t moderation_timers;  // CQs that may have a moderation period at once
    uint32_t fatal;              // 1 after a catastrophic error (then the syndrome)
    uint32_t fatal_syndrome;     // fatal_syndrome
};
struct cmd_object {  // PD, MW, destroy: just a handle (MR/MW: the key)
    uint32_t handle;
    uint32_t pdn;
};

struct cmd_slot {    // 64 B
    uint8_t opcode;  // cmd_opcode
    uint8_t status;  // cmd_status, written by the NIC
    uint8_t done;    // 1 when the NIC wrote status (written last)
    uint8_t reserved0;
    uint32_t token;  // driver cookie, echoed in the event
    union {
        cmd_create_cq cq;
        cmd_create_qp qp;
        cmd_modify_qp modify_qp;
        cmd_create_mr mr;
        cmd_create_srq srq;
        cmd_object obj;
        cmd_modify_cq modify_cq;
        cmd_query_device query;
        uint8_t raw[56];
    } u;
};
static_assert(sizeof(cmd_slot) == 64);
constexpr size_t CMD_STATUS_OFFSET = 1;  // status and done bytes written back

// ---------------------------------------------------------------------------------------------
// Event queue (16 B entries, phase bit like the CQ), interrupts on MSI-X vector 0.
// ---------------------------------------------------------------------------------------------
enum event_type : uint8_t {
    EVENT_CMD_DONE = 1,       // data = command token
    EVENT_CQ_COMPLETION = 2,  // data = CQN (armed CQ got a matching completion)
    EVENT_CQ_ERROR = 3,       // data = CQN, data2 = cq_error_syndrome; the CQ is dead
    EVENT_QP_ERROR = 4,       // data = QPN
    EVENT_SRQ_LIMIT = 5,      // data = SRQN
    EVENT_GSI_RECEIVE = 6,    // data = GSI receive producer index (hsi GSI section)
    EVENT_SRQ_ERROR = 7,      // data = SRQN, data2 = cq_error_syndrome; the SRQ is dead
    EVENT_DEVICE_FATAL = 8,   // data = fatal_syndrome; the NIC is dead (see below)
};
// Why a CQ (EVENT_CQ_ERROR) or an SRQ (EVENT_SRQ_ERROR) died. After the event the NIC writes
// nothing more to that CQ (later CQEs are dropped, arms ignored) and moves every QP using it
// (send or receive CQ, or the SRQ) to ERROR (their in-flight and queued work is flushed to
// their other CQ if that one is alive). Overrun stays 0, as before the syndrome existed.
enum cq_error_syndrome : uint32_t {
    CQ_ERR_OVERRUN = 0,     // CQ only: no free slot for a CQE (STATUS_BUFFER_OVERFLOW)
    CQ_ERR_DMA_ACCESS = 1,  // a CQE write / SRQ WQE read completed with a PCIe error (UR/CA):
                            // ring not backed or its IOMMU mapping released
    CQ_ERR_FATAL = 2,       // the device had a catastrophic error (EVENT_DEVICE_FATAL)
};
// EVENT_DEVICE_FATAL (catastrophic error, e.g. an internal parity error; injected by a test
// hook or rnic.faults.fatal_error_at_ns): the NIC moves every QP to ERROR, marks every CQ and
// SRQ dead (no EVENT_CQ_ERROR / EVENT_SRQ_ERROR per object: this event stands for all), stops
// writing CQEs and answers every later command with CMD_DEVICE_FATAL. Posted as the last event.
enum fatal_syndrome : uint32_t {
    FATAL_INJECTED = 1,  // test hook / config key
};
struct event_entry {
    uint8_t type;
    uint8_t reserved[6];
    uint8_t flags;  // bit 7 = phase
    uint32_t data;
    uint32_t data2;
};
static_assert(sizeof(event_entry) == 16);

// Keys: bits 8..31 index the MPT entry, bits 0..7 are a variant tag (changed on re-register).
constexpr uint32_t key_index(uint32_t key) {
    return key >> 8;
}
constexpr uint32_t PRIVILEGED_KEY = 0x00000001;  // index 0: logical (bus) addresses, local only

constexpr uint32_t PAGE_SIZE = 4096;

// ---------------------------------------------------------------------------------------------
// NetDMA copy channels (hw/netdma, ndk_shim/netdma) -- BEGIN NetDMA section.
// Memory-to-memory copy channels of the DMA engine, driven by a NetDMA provider driver
// (/work/shared/reference/ndkpi.md section 10). BAR0 0x4000..0x4FFF: one read-only capability
// register, then NETDMA_CHANNEL_STRIDE bytes of registers per channel. The descriptor and the
// completion word are NetDMA's own formats (NET_DMA_DESCRIPTOR, ndk_shim/netdma.h), restated
// here as the NIC reads and writes them.
// ---------------------------------------------------------------------------------------------
constexpr uint64_t REG_NETDMA_BASE = 0x4000;
constexpr uint64_t NETDMA_BAR_BYTES = 0x1000;  // the NetDMA register window
// Read-only: bits 0..7 channel count, bits 8..15 address bits (MaximumAddressSpace =
// 2^bits - 1), bits 32..63 MaximumTransferSize in bytes.
constexpr uint64_t REG_NETDMA_CAPS = 0x4000;
constexpr uint64_t REG_NETDMA_CHANNEL0 = 0x4100;  // channel c at REG_NETDMA_CHANNEL0 + c * stride
constexpr uint64_t NETDMA_CHANNEL_STRIDE = 0x40;
constexpr uint32_t NETDMA_MAX_CHANNELS = 32;
constexpr uint64_t netdma_channel_reg(uint32_t channel, uint64_t reg) {
    return REG_NETDMA_CHANNEL0 + channel * NETDMA_CHANNEL_STRIDE + reg;
}
// Per-channel registers (offsets inside a channel's block). 64-bit unless noted.
// CMD, write: one command per 64-bit write, bits 0..7 netdma_cmd, bits 32..63 descriptor count
// (START/APPEND; 0 = the list is NULL-terminated, NetDMA 1.x). Commands run in order; START,
// SUSPEND and RESUME take effect between descriptors, ABORT and RESET at the next chunk.
// CMD, read: bits 0..31 commands the channel has finished (free-running), so the driver waits
// for a SUSPEND, ABORT or RESET by reading until it reaches the number it wrote.
constexpr uint64_t NETDMA_CHAN_CMD = 0x00;
constexpr uint64_t NETDMA_CHAN_CHAINADDR = 0x08;   // RW: first descriptor for START (8 B aligned)
constexpr uint64_t NETDMA_CHAN_COMPLETION = 0x10;  // RW: completion word address (8 B aligned;
                                                   // 0 = no completion writes)
// RW, 32-bit: bit 0 interrupt enable, bits 8..15 MSI-X vector, bits 16..23 priority (higher
// wins the channel arbiter; equal priorities round-robin).
constexpr uint64_t NETDMA_CHAN_CONTROL = 0x18;
constexpr uint64_t NETDMA_CHAN_STATUS = 0x20;     // RO: completion word value (see below)
constexpr uint64_t NETDMA_CHAN_COMPLETED = 0x28;  // RO: descriptors completed since reset
constexpr uint64_t NETDMA_CHAN_ERROR = 0x30;      // RO 32-bit netdma_error; write 1s to clear
constexpr uint64_t NETDMA_CHAN_DCA = 0x38;        // RO 32-bit: APIC id of the last context change

constexpr uint32_t NETDMA_CONTROL_IRQ_ENABLE = 1u << 0;
constexpr uint32_t netdma_control(bool irq, uint32_t vector, uint32_t priority) {
    return (irq ? NETDMA_CONTROL_IRQ_ENABLE : 0) | (vector & 0xff) << 8 | (priority & 0xff) << 16;
}

enum netdma_cmd : uint8_t {
    NETDMA_CMD_START = 1,    // load CHAINADDR (latched at the write) after the current descriptor
    NETDMA_CMD_APPEND = 2,   // `count` more descriptors, or re-read the tail's NextDescriptor
    NETDMA_CMD_SUSPEND = 3,  // finish the current descriptor, then stop with status SUSPEND
    NETDMA_CMD_RESUME = 4,   // re-read the last processed descriptor's NextDescriptor, go on
    NETDMA_CMD_ABORT = 5,    // stop at once (current descriptor not completed): HALTED
    NETDMA_CMD_RESET = 6,    // abort, then back to the allocated state (status HALTED, counters 0)
};

// Channel status: low 3 bits of CHAN_STATUS and of the completion word; the other bits hold the
// physical address of the last completed descriptor (NET_DMA_TRANSFER_STATUS values).
enum netdma_status : uint8_t {
    NETDMA_STATUS_ACTIVE = 0,   // a descriptor completed and more are pending
    NETDMA_STATUS_IDLE = 1,     // a descriptor completed and it was the last one available
    NETDMA_STATUS_SUSPEND = 2,  // suspended (SUSPEND finished)
    NETDMA_STATUS_HALTED = 3,   // aborted, reset or stopped by an error (CHAN_ERROR says which)
    NETDMA_STATUS_ARMED = 4,    // started, first descriptor not complete yet (address invalid)
};
constexpr uint64_t NETDMA_STATUS_MASK = 0x7;

// Why a channel halted by itself (CHAN_ERROR). The channel raises its interrupt on an error.
enum netdma_error : uint32_t {
    NETDMA_ERR_NONE = 0,
    NETDMA_ERR_DESC_ADDRESS = 1,  // descriptor address 0, not 8 B aligned or beyond address bits
    NETDMA_ERR_OPCODE = 2,        // operation type other than standard DMA or context change
    NETDMA_ERR_LENGTH = 3,        // TransferSize above MaximumTransferSize
    NETDMA_ERR_ADDRESS = 4,       // source or destination range beyond the address bits
    NETDMA_ERR_PAGE_BREAK = 5,    // the part after a page break does not fit in one page
};

// Descriptor (64 B, 8 B aligned, chained by physical address) = NET_DMA_DESCRIPTOR.
struct netdma_descriptor {
    uint32_t transfer_size;     // bytes; context change: bits 0..7 target APIC id
    uint32_t control;           // NETDMA_CTRL_* | operation type (bits 24..31)
    uint64_t source;            // bus address
    uint64_t destination;       // bus address
    uint64_t next;              // next descriptor (count mode: where the next append starts)
    uint64_t next_source;       // second source page (NETDMA_CTRL_SOURCE_PAGE_BREAK)
    uint64_t next_destination;  // second destination page (NETDMA_CTRL_DESTINATION_PAGE_BREAK)
    uint64_t user_context[2];   // software's, never touched
};
static_assert(sizeof(netdma_descriptor) == 64);
static_assert(offsetof(netdma_descriptor, next) == 24);
constexpr uint64_t NETDMA_DESC_NEXT_OFFSET = 24;

constexpr uint32_t NETDMA_CTRL_INTERRUPT = 0x00000001;             // interrupt after this one
constexpr uint32_t NETDMA_CTRL_SOURCE_NO_SNOOP = 0x00000002;       // accepted, not modelled
constexpr uint32_t NETDMA_CTRL_DESTINATION_NO_SNOOP = 0x00000004;  // accepted, not modelled
constexpr uint32_t NETDMA_CTRL_STATUS_UPDATE = 0x00000008;         // write the completion word
constexpr uint32_t NETDMA_CTRL_SERIALIZE = 0x00000010;      // writes leave before the next reads
constexpr uint32_t NETDMA_CTRL_NULL_TRANSFER = 0x00000020;  // no data movement
constexpr uint32_t NETDMA_CTRL_SOURCE_PAGE_BREAK = 0x00000040;  // source goes on at next_source
constexpr uint32_t NETDMA_CTRL_DESTINATION_PAGE_BREAK = 0x00000080;  // ... at next_destination
constexpr uint32_t NETDMA_CTRL_DESTINATION_DCA = 0x00000200;         // DCA hint (counted only)
constexpr uint32_t NETDMA_OP_MASK = 0xFF000000;
constexpr uint32_t NETDMA_OP_COPY = 0x00000000;
constexpr uint32_t NETDMA_OP_CONTEXT_CHANGE = 0xFF000000;  // transfer_size bits 0..7 = APIC id
// -- END NetDMA section.

// ---------------------------------------------------------------------------------------------
// GSI (QP1) MAD rings (hw/gsi) -- BEGIN GSI section.
// The NIC's general services interface: the driver's CM agent sends and receives 256 B
// management datagrams (IB CM MADs) as RoCEv2 UD SEND-only frames to/from QP1. BAR0
// 0x0200..0x02FF. Two rings in host memory, slots of GSI_SLOT_BYTES (a 64 B header, then the
// MAD). Send: the driver fills slots and writes the producer index to REG_GSI_SQ_DOORBELL; the
// NIC DMA-reads each slot, sends the frame and DMA-writes the slot's `done` byte (1 = sent,
// 2 = dropped: bad MAD). Receive: the NIC DMA-writes each valid QP1 frame into the next slot
// (phase bit like the CQ, starts at 1), posts EVENT_GSI_RECEIVE and signals vector 0; the driver
// returns slots by writing its consumer index to REG_GSI_RQ_CONSUMER. With no free slot the
// frame is dropped (and counted): QP1 traffic is unreliable, the CM retransmits.
//
// ARP (RFC 826, EtherType 0x0806) shares the rings, as on NICs whose management port carries
// the few non-RoCE frames an RDMA-only function needs. A send slot of kind GSI_KIND_ARP holds a
// whole Ethernet frame (frame_bytes of it, 42..256) that the NIC sends as is, padded to 60 B;
// other EtherTypes are dropped (done = 2). Received ARP frames addressed to this port (target
// IPv4 = the port's, or a reply whose target MAC is the port's) go to the receive ring as
// GSI_KIND_ARP slots (the frame, frame_bytes long, after the header). The NIC itself answers
// ARP requests for its own IPv4 (hardware responder, as in ARP offload): the driver never
// replies, it only resolves (sends requests) and learns from what it receives.
// ---------------------------------------------------------------------------------------------
constexpr uint64_t REG_GSI_BASE = 0x0200;
constexpr uint64_t GSI_BAR_BYTES = 0x100;
constexpr uint64_t REG_GSI_SQ_BASE = 0x0200;      // bus address of the send ring (64 B aligned)
constexpr uint64_t REG_GSI_SQ_LOG_SIZE = 0x0208;  // log2 of the send slots (0..12)
constexpr uint64_t REG_GSI_SQ_DOORBELL = 0x0210;  // u32: send producer index (free-running)
constexpr uint64_t REG_GSI_RQ_BASE = 0x0218;      // bus address of the receive ring; 0 = off
constexpr uint64_t REG_GSI_RQ_LOG_SIZE = 0x0220;  // log2 of the receive slots (0..12)
constexpr uint64_t REG_GSI_RQ_CONSUMER = 0x0228;  // u32: receive consumer index (free-running)

constexpr uint32_t GSI_QPN = 1;            // QP0 (SMI) and QP1 (GSI) are reserved
constexpr uint32_t GSI_QKEY = 0x80010000;  // the well-known GSI Q_Key
constexpr uint32_t MAD_BYTES = 256;
constexpr uint32_t GSI_SLOT_BYTES = 64 + MAD_BYTES;
constexpr uint8_t MAD_BASE_VERSION = 1;
constexpr uint8_t MAD_CLASS_CM = 0x07;  // communication management
constexpr uint8_t MAD_CM_CLASS_VERSION = 2;
constexpr uint8_t MAD_METHOD_SEND = 0x03;
// CM attribute IDs (IBA 12.6; big-endian in the MAD header at byte 16).
enum cm_attribute : uint16_t {
    CM_ATTR_REQ = 0x0010,
    CM_ATTR_MRA = 0x0011,
    CM_ATTR_REJ = 0x0012,
    CM_ATTR_REP = 0x0013,
    CM_ATTR_RTU = 0x0014,
    CM_ATTR_DREQ = 0x0015,
    CM_ATTR_DREP = 0x0016,
};

enum gsi_send_done : uint8_t { GSI_SENT = 1, GSI_DROPPED = 2 };
// What a slot holds after its 64 B header.
enum gsi_slot_kind : uint8_t {
    GSI_KIND_MAD = 0,  // a 256 B MAD; the NIC builds the RoCEv2 UD frame around it
    GSI_KIND_ARP = 1,  // a raw Ethernet frame (EtherType 0x0806) of frame_bytes
};
constexpr uint16_t ETHERTYPE_ARP = 0x0806;
constexpr uint32_t GSI_MIN_ARP_FRAME = 42;  // Ethernet 14 + ARP for IPv4 over Ethernet 28
constexpr uint32_t GSI_MAX_RAW_FRAME = MAD_BYTES;

// Send slot header (the address vector; the NIC takes it as given, like a UD WQE's). For
// GSI_KIND_ARP only kind and frame_bytes count: the frame carries its own addresses.
struct gsi_send_header {  // 64 B
    uint8_t dst_mac[6];
    uint8_t src_mac[6];
    uint32_t dst_ip;  // IPv4, host order
    uint32_t src_ip;
    uint32_t dest_qp;       // GSI_QPN
    uint32_t qkey;          // GSI_QKEY
    uint16_t udp_src_port;  // flow entropy (>= 0xC000)
    uint16_t pkey;
    uint8_t kind;  // gsi_slot_kind
    uint8_t reserved0;
    uint16_t frame_bytes;  // GSI_KIND_ARP: Ethernet frame length (no FCS, no padding)
    uint8_t reserved[27];
    uint8_t done;  // written by the NIC (gsi_send_done), written last
};
static_assert(sizeof(gsi_send_header) == 64);
constexpr size_t GSI_SEND_DONE_OFFSET = 63;
static_assert(offsetof(gsi_send_header, done) == GSI_SEND_DONE_OFFSET);

// Receive slot header, written by the NIC in one DMA write with the MAD after it.
struct gsi_recv_header {  // 64 B
    uint8_t src_mac[6];
    uint8_t dst_mac[6];
    uint32_t src_ip;  // host order
    uint32_t dst_ip;
    uint32_t src_qp;  // DETH source QP
    uint32_t qkey;    // DETH Q_Key
    uint32_t psn;     // BTH PSN of the frame
    uint16_t pkey;
    uint16_t udp_src_port;
    uint8_t kind;  // gsi_slot_kind (GSI_KIND_ARP: only the MACs and frame_bytes are set)
    uint8_t reserved0;
    uint16_t frame_bytes;  // GSI_KIND_ARP: the received frame's length (padding included)
    uint8_t reserved[23];
    uint8_t flags;  // bit 7 = phase
};
static_assert(sizeof(gsi_recv_header) == 64);
static_assert(offsetof(gsi_recv_header, flags) == 63);
// -- END GSI section.

}  // namespace rnic::hsi
