// SPDX-License-Identifier: Apache-2.0
// The scenario workload: perftest-like consumer code on both nodes, written only against the
// NDK dispatch tables (ndk_shim/ndkpi.h) and the ndk_sim entry points, plus the checker that
// compares every payload byte with what its sender wrote.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <systemc>

#include "hw/common/sim_context.h"
#include "ndk_shim/ndk_sim.h"
#include "ndk_shim/ndkpi.h"
#include "testbench/scenario/node.h"
#include "testbench/scenario/run_result.h"
#include "testbench/scenario/scenario_config.h"

namespace rnic::scenario {

// What one node's consumer saw (stats.json: blocks."workload.node<i>").
struct consumer_counters {
    uint64_t posted = 0;  // WRITE / SEND / READ work requests posted
    uint64_t receives_posted = 0;
    uint64_t completions = 0;        // CQEs reaped, all types
    uint64_t write_completions = 0;  // successful, by type
    uint64_t send_completions = 0;
    uint64_t read_completions = 0;
    uint64_t receive_completions = 0;
    uint64_t receive_bytes = 0;           // sum of BytesTransferred of successful receives
    uint64_t error_completions = 0;       // Status != STATUS_SUCCESS
    uint64_t unexpected_completions = 0;  // a type or context this node never posted
    uint64_t empty_polls = 0;             // NdkGetCqResultsEx returned nothing
    uint64_t sleeps = 0;                  // waits for completion activity or a CQ notification
};

// Node 0 connects `qps` QPs to node 1 and runs the operation over them with `queue_depth` work
// requests outstanding per QP; node 1 listens, accepts, and (SEND) keeps receives posted.
// Connections are set up as the NDK does it, with IB CM MADs on QP 1 over the simulated link
// (hw/gsi), so they are in wire.pcap and subject to the link's faults (the CM retransmits).
//
// Buffers: per QP a ring of `slots` message buffers on each side (slots = min(messages of the
// QP, 2 x queue_depth)); message i uses slot i % slots. WRITE/SEND: the sender writes message
// i's pattern into its slot just before posting. READ: node 1's source slots hold a fixed
// pattern per slot, node 0 poisons its sink slot before posting. Checks: SEND at each receive
// completion, READ at each initiator completion, WRITE when the target slot is about to be
// reused and, for the last `slots` messages, after the simulation (finish()).
//
// "mixed": message i of QP q is operation_of(workload, q, i). Node 1's buffer then has three
// regions per QP ring (WRITE targets, READ sources, receive buffers), so the operations never
// share a slot; node 1 keeps receives posted for the SEND share; each message is checked as
// its operation is.
class workload : public sc_core::sc_module {
public:
    workload(sc_core::sc_module_name name, const scenario_config& cfg,
             std::array<node*, NODES> nodes, hw::sim_context& ctx);

    // Both consumers have torn down (or one failed and stopped the simulation).
    bool finished() const { return m_finished[0] && m_finished[1]; }
    // After sc_start returned: final checks of the target buffers, then the workload's part of
    // the result (messages, throughput, latency, integrity, failures).
    void finish(run_result& r);
    const consumer_counters& counters(size_t node) const { return m_side[node].counters; }

private:
    // One node's consumer state: NDK objects, buffers, progress.
    struct side {
        workload* owner = nullptr;
        size_t index = 0;
        node* n = nullptr;
        consumer_counters counters;
        NDK_ADAPTER* adapter = nullptr;
        NDK_ADAPTER_INFO info{};
        NDK_PD* pd = nullptr;
        NDK_CQ* cq = nullptr;
        NDK_MR* mr = nullptr;
        MDL* mdl = nullptr;         // chain describing `buffer`
        uint8_t* buffer = nullptr;  // qps x slots x stride bytes, host_system::alloc
        uint64_t buffer_bytes = 0;
        uint32_t local_token = 0;
        uint32_t remote_token = 0;
        NDK_LISTENER* listener = nullptr;
        std::vector<NDK_QP*> qps;
        std::vector<NDK_CONNECTOR*> connectors;
        // Events from callbacks (DPC thread) to the consumer thread.
        sc_core::sc_event wake;
        bool cq_notified = false;
        std::deque<NDK_CONNECTOR*> incoming;  // connect requests not yet accepted
        uint32_t disconnects = 0;             // peer disconnects reported
        uint32_t outstanding = 0;             // traced: work requests not yet completed
    };
    // The initiator's view of one QP's remote buffer, from node 1's accept private data.
    struct remote_ring {
        uint64_t va = 0;
        uint32_t token = 0;
    };
    // Private data of NdkConnect (node 0 -> 1) and NdkAccept (node 1 -> 0).
    struct connect_private {
        uint32_t magic;
        uint32_t qp_index;
    };
    struct accept_private {
        uint32_t magic;
        uint32_t token;
        uint64_t va;
    };
    static constexpr uint32_t MAGIC = 0x524e4943;  // "RNIC"
    static constexpr uint16_t PORT = 18515;        // perftest's default port

    struct setup_failed {};  // thrown inside a consumer thread after fail() recorded why

    void initiator_thread();  // node 0
    void target_thread();     // node 1

    // Both sides: adapter, PD, CQ, buffer + MR, QPs.
    void open(side& s, ULONG cq_depth, ULONG sq_depth, ULONG rq_depth, ULONG mr_flags);
    void connect_all(side& s);
    void accept_all(side& s);
    void post_receive(side& s, uint32_t q, uint64_t j);
    void post_message(side& s, uint32_t q, uint64_t i);
    // Reaps up to a batch of completions; false if the CQ was empty.
    bool reap(side& s);
    void on_completion(side& s, const NDK_RESULT_EX& r);
    // Sleeps until the CQ may have something: CQ notification (use_events) or DMA activity.
    void wait_for_completions(side& s);
    void disconnect_all(side& s);
    void teardown(side& s);
    void done(side& s);
    void stop_posting(uint32_t q, uint64_t at);  // lowers m_limit[q] to `at`

    NTSTATUS check(side& s, NTSTATUS st, const char* what);
    [[noreturn]] void fail(side& s, const std::string& what);
    void record_failure(const std::string& what);

    uint64_t slot_offset(uint32_t q, uint64_t slot) const {
        return (uint64_t{q} * m_slots + slot) * m_stride;
    }
    uint8_t* slot_ptr(const side& s, uint32_t q, uint64_t slot, uint32_t region = 0) const {
        return s.buffer + region * m_region_bytes + slot_offset(q, slot);
    }
    // Node 1's region of an operation: 0 WRITE target (and everything when not mixed), 1 READ
    // source, 2 receive buffers.
    uint32_t region_of(operation op) const {
        if (m_w.op != operation::MIXED) {
            return 0;
        }
        return op == operation::READ ? 1 : op == operation::SEND ? 2 : 0;
    }
    void check_bytes(uint64_t key, const uint8_t* p);

    // Consumer callbacks (NDK_FN_*), run by the provider in the host's DPC thread.
    static VOID on_cq_notification(PVOID ctx, NTSTATUS status);
    static VOID on_connect_event(PVOID ctx, NDK_CONNECTOR* connector);
    static VOID on_disconnect_event(PVOID ctx);

    const scenario_config& m_cfg;
    const workload_config& m_w;
    std::array<side, NODES> m_side;
    bool m_finished[NODES] = {false, false};

    // Shape of the rings.
    uint64_t m_stride;               // bytes between slots (message_bytes, 64 B aligned)
    uint64_t m_slots;                // message buffers per QP on each side
    uint64_t m_region_bytes = 0;     // qps x slots x stride: one ring of every QP
    uint32_t m_regions = 1;          // node 1's regions (3 for "mixed")
    std::vector<uint64_t> m_per_qp;  // messages of each QP
    uint64_t m_total = 0;

    // Initiator progress, per QP.
    std::vector<remote_ring> m_remote;
    std::vector<uint64_t> m_next;          // next message to post
    std::vector<uint64_t> m_done;          // messages completed (in order)
    std::vector<uint64_t> m_limit;         // messages that will be posted (< per_qp on error)
    uint64_t m_limit_total = 0;            // sum of m_limit
    std::vector<uint64_t> m_last_write;    // [q * slots + slot]: last WRITE there + 1 (0: none)
    std::vector<uint64_t> m_read_checked;  // READ: messages verified in their sink slot
    std::vector<sc_core::sc_time> m_post_time;  // [q * queue_depth + i % queue_depth]
    uint64_t m_completed = 0;                   // sum of m_done
    // Target progress (SEND), per QP.
    std::vector<std::vector<uint64_t>> m_send_index;  // message index of each SEND of the QP
    uint64_t m_recv_total = 0;                        // SENDs in the whole workload
    std::vector<uint64_t> m_recv_posted;
    std::vector<uint64_t> m_recv_done;
    uint64_t m_received = 0;
    bool m_listening = false;
    sc_core::sc_event m_listening_event;
    // Node 0's Disconnects all completed: until then node 1's host keeps its adapter open, so
    // its CM answers a DREQ sent again after a lost DREP (a closed adapter would drop it).
    bool m_disconnected = false;
    sc_core::sc_event m_disconnected_event;

    // Results.
    std::vector<uint64_t> m_latency_ns;  // signaled WRs, post to completion reaped
    sc_core::sc_time m_first_post;
    sc_core::sc_time m_last_completion;
    uint64_t m_bytes_checked = 0;
    uint64_t m_mismatches = 0;
    std::vector<std::string> m_failures;
    uint64_t m_failures_dropped = 0;
};

}  // namespace rnic::scenario
