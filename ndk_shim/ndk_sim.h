// SPDX-License-Identifier: Apache-2.0
// Simulator-specific entry points of the NDK provider driver. Consumer code uses only the NDK
// dispatch tables (ndk_shim/ndkpi.h) plus these: open an adapter on a host (the NDIS
// OpenNDKAdapterHandler role), close it (CloseNDKAdapterHandler: blocking), and a spin-wait
// primitive for polling consumers.
#pragma once

#include <array>
#include <cstdint>

#include "hw/context/limits.h"
#include "ndk_shim/host/host_system.h"
#include "ndk_shim/ndkpi.h"

namespace rnic::ndk {

struct adapter_params {
    uint32_t node_id = 0;
    std::array<uint8_t, 6> mac{};
    uint32_t ip = 0;              // IPv4, host byte order (SOCKADDR_IN carries it in network order)
    hw::nic_limits limits;        // must equal the NIC's: testbed::node_env::adapter_params()
    uint32_t default_mtu = 1024;  // path MTU programmed at connect: 256..4096, power of two
    NDK_VERSION version{1, 2};    // NDK version requested by the consumer (ndkpi.md 9)
    uint8_t retry_count = 7;      // transport retries per QP
    uint8_t rnr_retry = 7;        // RNR retries per QP (7 = infinite in IB)
    uint8_t timeout_log = 14;     // local ACK timeout 4.096 us x 2^14 = 67 ms
    uint32_t cmdq_log_size = 8;   // command ring: 256 slots of 64 B
    uint32_t eq_log_size = 12;    // event queue: 4096 entries of 16 B
    double command_timeout_ns = 10e6;  // sync waits give up (STATUS_IO_TIMEOUT) after this
    // Connection manager: a REQ, REP or DREQ without an answer is sent again after
    // cm_timeout_ns, cm_retries times; then Connect / Accept / Disconnect fail with
    // STATUS_IO_TIMEOUT. An MRA (the peer's consumer has not answered yet) stretches the wait
    // to cm_timeout_ns x cm_mra_factor. CompleteConnect is due within cm_timeout_ns x
    // (cm_retries + 2) of the REP, else it fails with STATUS_IO_TIMEOUT. Defaults: Linux
    // rdma_cm's (drivers/infiniband/core/cma.c: CMA_CM_RESPONSE_TIMEOUT 20, i.e. 4.096 us x
    // 2^20 = 4.3 s; CMA_MAX_CM_RETRIES 15); the scenario's host.cm_response_timeout_log and
    // host.cm_retries set them.
    double cm_timeout_ns = 4096.0 * (1 << 20);
    uint32_t cm_retries = 15;
    uint32_t cm_mra_factor = 16;
    uint32_t gsi_log_size = 6;  // GSI send and receive rings: 64 MAD slots each
};

// Initialises the NIC through MMIO (command ring, event queue, MSI-X vector 0, GSI rings) and
// returns the NDK adapter. Must be called from an SC_THREAD. Fails with NDIS_STATUS_BAD_VERSION
// for an unsupported p.version, STATUS_INVALID_PARAMETER for a bad MTU,
// NDIS_STATUS_ADAPTER_NOT_READY if `host` already has an open adapter (one driver instance per
// NIC: it owns the command and event queues), STATUS_ADDRESS_ALREADY_EXISTS if duplicate address
// detection (host config dad_probes > 0: ARP probes for p.ip, arp_timeout_ns apart) hears
// another node answer for p.ip. The connection exchange travels as IB CM MADs through the NIC's
// GSI (QP1) over the wire, to the MAC that ARP resolves for the peer (or the gateway).
NTSTATUS open_adapter(host_system& host, const adapter_params& p, NDK_ADAPTER** out);
// Blocking: waits until every child object is closed and every callback has returned
// (ndkpi.md 5.6), then releases the adapter. From an SC_THREAD, never from a callback.
void close_adapter(NDK_ADAPTER* adapter);
// Consumer spin-wait: blocks until the NIC next writes host memory (e.g. a CQE). No timeout:
// a write that landed while the caller's own poll was in flight is only seen at the next one,
// so a polling loop should bound its wait (testbed::poll_until does, testbench/testbed).
// `also`: an event that ends the wait too (e.g. a consumer's own error notification).
void wait_for_completion_activity(host_system& host, const sc_core::sc_event* also = nullptr);

// The deepest queue (SQ, RQ, SRQ, CQ) the driver offers under a NIC limit: the largest power
// of two not above it (rings are powers of two; QueryAdapterInfo reports this).
uint32_t usable_queue_depth(uint32_t nic_limit);

// Driver counters of an adapter (for tests and stats).
struct adapter_counters {
    uint64_t commands = 0;
    uint64_t sq_doorbells = 0;
    uint64_t rq_doorbells = 0;
    uint64_t cq_doorbells = 0;
    uint64_t wqe_pushes = 0;
    uint64_t wqes_posted = 0;
    uint64_t cqes_polled = 0;
    uint64_t interrupts = 0;  // ISR runs on vector 0
    uint64_t cq_notifications = 0;
};
adapter_counters get_adapter_counters(NDK_ADAPTER* adapter);

// Connection-manager counters of an adapter.
struct cm_counters {
    uint64_t mads_sent = 0;       // CM MADs put on the GSI send ring
    uint64_t mads_received = 0;   // CM MADs taken from the GSI receive ring
    uint64_t mads_ignored = 0;    // undecodable, not for this adapter, or no matching connection
    uint64_t send_ring_full = 0;  // MADs not sent: ring full (the retransmission recovers)
    uint64_t retransmits = 0;     // REQ / REP / DREQ sent again after a timeout
    uint64_t timeouts = 0;        // exchanges given up after cm_retries
    uint64_t mras_sent = 0;
    uint64_t arp_sent = 0;      // ARP requests and probes put on the GSI send ring
    uint64_t arp_received = 0;  // ARP frames taken from the GSI receive ring
};
cm_counters get_cm_counters(NDK_ADAPTER* adapter);

// The QP number the driver allocated for `qp` (tests, traces).
uint32_t get_qp_number(NDK_QP* qp);

}  // namespace rnic::ndk
