// SPDX-License-Identifier: Apache-2.0
// The scenario workload: perftest-like consumer code on both nodes, written only against the
// NDK dispatch tables (ndk_shim/ndkpi.h) and the ndk_sim entry points, plus the checker that
// compares every payload byte with what its sender wrote.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "ndk_shim/ndk_sim.h"
#include "ndk_shim/ndkpi.h"
#include "testbench/scenario/flows.h"
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
    uint64_t cm_retransmits = 0;          // the CM's REQ / REP / DREQ resent (at teardown)
    uint64_t cm_timeouts = 0;             // CM exchanges given up (at teardown)
};

// The workload is a list of flows (flows_of(cfg): workload.pattern expanded); flow f has a
// source node that connects `qps` QPs to its destination node and runs the operation over them
// with `queue_depth` work requests outstanding per QP, and a destination that listens, accepts
// and (SEND) keeps receives posted. Each flow is two roles, each an SC_THREAD: the initiator on
// the source and the target on the destination. A node with roles opens one NDK adapter, one
// PD, one MR over one buffer and, per role, one CQ and the role's QPs; a node without roles
// does nothing at all. Connections are set up as the NDK does it, with IB CM MADs on QP 1 over
// the simulated links (hw/gsi), so they are in wire.pcap and subject to the links' faults (the
// CM retransmits).
//
// Buffers: per QP a ring of `slots` message buffers on each side (slots = min(messages of the
// QP, 2 x queue_depth)); message i uses slot i % slots. WRITE/SEND: the sender writes message
// i's pattern into its slot just before posting. READ: the target's source slots hold a fixed
// pattern per slot, the initiator poisons its sink slot before posting. Checks: SEND at each
// receive completion, READ at each initiator completion, WRITE when the target slot is about to
// be reused and, for the last `slots` messages, after the simulation (finish()). Flow f's
// pattern seed is workload.seed + f.
//
// "mixed": message i of QP q is operation_of(workload, q, i). The target's region then has
// three parts per QP ring (WRITE targets, READ sources, receive buffers), so the operations
// never share a slot; the target keeps receives posted for the SEND share; each message is
// checked as its operation is.
//
// Partitioned runs (testbench/distributed): `nodes` holds null for the nodes another rank
// simulates; only the roles of this rank's nodes are elaborated. Nothing couples two nodes but
// the wire: an initiator whose connect is refused (the target's listener is not up yet) retries;
// a target node keeps its adapter open after its roles ended (its CM still answers a DREQ sent
// again after a lost DREP); the check of a WRITE target slot an initiator is about to reuse is
// handed over (take_remote_checks) when the target is elsewhere; and the end-of-run checks and
// figures are split into a part per rank (partial()) that combine() merges.
class workload : public sc_core::sc_module {
public:
    workload(sc_core::sc_module_name name, const scenario_config& cfg, std::vector<node*> nodes,
             hw::sim_context& ctx);

    // Every role of this rank has torn down.
    bool finished() const { return m_nodes_left == 0; }

    // A WRITE target slot's check an initiator here asked for (the target is on another rank):
    // done on the target's rank before its next window, when the slot still holds that message
    // (its successor's data cannot land before one cut-link latency has passed).
    struct remote_check {
        uint64_t flow = 0;
        uint32_t q = 0;
        uint64_t slot = 0;
        uint64_t message = 0;
    };
    std::vector<remote_check> take_remote_checks() { return std::move(m_remote_checks); }
    void run_remote_check(const remote_check& c);
    // Which node a flow's target is on (the rank to send its checks to).
    uint32_t target_node(uint64_t flow) const { return m_flows[flow].spec.dst; }

    // After the simulation. The initiators' progress (per flow: messages done per QP and the
    // last WRITE into each target slot), which the target's final checks need:
    // export_initiators() on every rank, import_initiators() of every rank's export on every
    // rank, then final_checks(). Then partial() is this rank's part of the workload's figures and
    // combine() merges every rank's part into the run's result (what one process reports).
    nlohmann::json export_initiators() const;
    void import_initiators(const nlohmann::json& j);
    void final_checks();
    nlohmann::json partial() const;
    static void combine(const scenario_config& cfg, const std::vector<nlohmann::json>& parts,
                        run_result& r);
    // The single-process path: final_checks(), partial(), combine().
    void finish(run_result& r);
    // Work requests posted so far by every initiator, and in all (progress bar).
    uint64_t posted() const { return m_posted; }
    // Node i's successful initiator completions so far and their payload bytes
    // (timeseries.csv); null when node i has no roles here.
    const uint64_t* done_messages(size_t i) const {
        return m_nodes[i] ? &m_nodes[i]->done_messages : nullptr;
    }
    const uint64_t* done_bytes(size_t i) const {
        return m_nodes[i] ? &m_nodes[i]->done_bytes : nullptr;
    }
    uint64_t total_messages() const { return m_total_all; }
    const std::vector<flow_spec>& flows() const { return m_flow_specs; }

    // A failure of the fabric rather than of a node (a PFC deadlock): recorded as it is
    // (failures are listed as "node<i>: ..." otherwise), and the run ends now (sc_stop).
    void fabric_failure(const std::string& what);

private:
    struct flow;
    struct node_state;
    // One role of a flow on one node: its CQ, its QPs, its part of the node's buffer.
    struct role {
        workload* owner = nullptr;
        node_state* ns = nullptr;
        flow* f = nullptr;
        bool initiator = true;
        NDK_CQ* cq = nullptr;
        std::vector<NDK_QP*> qps;
        std::vector<NDK_CONNECTOR*> connectors;
        uint64_t offset = 0;  // of this role's region in the node's buffer
        uint64_t bytes = 0;
        ULONG cq_depth = 0;
        ULONG sq_depth = 0;
        ULONG rq_depth = 0;
        ULONG mr_flags = 0;
        // Events from callbacks (DPC thread) to the role's thread.
        hw::quick_event wake;
        bool cq_notified = false;
        // The CQ died (its notification came with an error status, e.g. STATUS_INTERNAL_ERROR
        // after the NIC's fatal error): no completion will come; the role's thread ends the run.
        NTSTATUS cq_error = STATUS_SUCCESS;
        hw::quick_event cq_error_event;
        uint32_t disconnects = 0;  // peer disconnects reported
        uint32_t accepted = 0;     // target: connections accepted
        bool done = false;
    };
    // One node's consumer state: NDK objects shared by its roles, counters.
    struct node_state {
        size_t index = 0;
        node* n = nullptr;
        consumer_counters counters;
        uint64_t done_messages = 0;  // successful initiator completions (not in stats.json)
        uint64_t done_bytes = 0;     // and their payload bytes
        std::vector<role*> roles;    // in flow order
        uint32_t roles_left = 0;
        NDK_ADAPTER* adapter = nullptr;
        NDK_ADAPTER_INFO info{};
        NDK_PD* pd = nullptr;
        NDK_MR* mr = nullptr;
        MDL* mdl = nullptr;         // chain describing `buffer`
        uint8_t* buffer = nullptr;  // every role's region, host_system::alloc
        uint64_t buffer_bytes = 0;
        uint32_t local_token = 0;
        uint32_t remote_token = 0;
        NDK_LISTENER* listener = nullptr;
        std::deque<NDK_CONNECTOR*> incoming;  // connect requests not yet accepted
        hw::quick_event wake;                 // a connect request arrived / was accepted
        bool setup_started = false;
        bool ready = false;  // adapter, objects and (targets) the listener are up
        hw::quick_event ready_event;
        uint32_t outstanding = 0;  // traced: work requests not yet completed
    };
    // The initiator's view of one QP's remote buffer, from the target's accept private data.
    struct remote_ring {
        uint64_t va = 0;
        uint32_t token = 0;
    };
    // One flow: its shape and both sides' progress.
    struct flow {
        size_t index = 0;
        flow_spec spec;
        uint64_t seed = 0;  // payload pattern and "mixed" draws
        workload_config w;  // the workload's parameters with this flow's seed
        role init;
        role target;
        // Shape of the rings.
        uint64_t stride = 0;           // bytes between slots (message_bytes, 64 B aligned)
        uint64_t slots = 0;            // message buffers per QP on each side
        uint64_t region_bytes = 0;     // qps x slots x stride: one ring of every QP
        uint32_t regions = 1;          // the target's regions (3 for "mixed")
        std::vector<uint64_t> per_qp;  // messages of each QP
        uint64_t total = 0;
        // Initiator progress, per QP.
        std::vector<remote_ring> remote;
        std::vector<uint64_t> next;          // next message to post
        std::vector<uint64_t> done;          // messages completed (in order)
        std::vector<uint64_t> limit;         // messages that will be posted (< per_qp on error)
        uint64_t limit_total = 0;            // sum of limit
        std::vector<uint64_t> last_write;    // [q * slots + slot]: last WRITE there + 1
        std::vector<uint64_t> read_checked;  // READ: messages verified in their sink slot
        std::vector<sc_core::sc_time> post_time;  // [q * queue_depth + i % queue_depth]
        uint64_t completed = 0;                   // sum of done
        // Target progress (SEND), per QP.
        std::vector<std::vector<uint64_t>> send_index;  // message index of each SEND of the QP
        uint64_t recv_total = 0;                        // SENDs in the whole flow
        std::vector<uint64_t> recv_posted;
        std::vector<uint64_t> recv_done;
        uint64_t received = 0;
        hw::quick_event recv_event;  // a receive completed (flows gated on this one)
        // Results.
        bool started = false;
        sc_core::sc_time first_post;
        sc_core::sc_time last_completion;
    };
    // Private data of NdkConnect (initiator -> target) and NdkAccept (target -> initiator).
    // qp_index: flow x qps + the QP's index in its flow (flow 0: the QP's index, as ever).
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

    void initiator_thread(flow& f);
    void target_thread(flow& f);

    // The node's adapter, PD, CQs, buffer + MR and QPs of every role; the target roles'
    // receives and READ sources, and the listener if the node is a target.
    void setup_node(node_state& ns);
    void wait_ready(node_state& ns);
    void connect_all(role& r);
    // Accepts incoming connections (of any of the node's flows) until r's flow has all its QPs.
    void accept_for(role& r);
    void post_receive(role& r, uint32_t q, uint64_t j);
    // `defer`: NDK_OP_FLAG_DEFER (a later post of the QP rings the doorbell for it).
    void post_message(role& r, uint32_t q, uint64_t i, bool defer = false);
    // Reaps up to a batch of completions; false if the CQ was empty.
    bool reap(role& r);
    void on_completion(role& r, const NDK_RESULT_EX& res);
    // Sleeps until the CQ may have something: CQ notification (use_events) or DMA activity.
    // The role's CQ died (cq_error): fail() the run, naming the status (a fatal NIC error).
    void end_if_cq_dead(role& r);
    void wait_for_completions(role& r);
    void disconnect_all(role& r);
    // The role is over; the node's last role tears the node down.
    void role_done(role& r);
    void teardown(node_state& ns);
    void stop_posting(flow& f, uint32_t q, uint64_t at);  // lowers f.limit[q] to `at`

    NTSTATUS check(node_state& ns, NTSTATUS st, const char* what);
    [[noreturn]] void fail(node_state& ns, const std::string& what);
    void record_failure(size_t node, const std::string& what);

    uint8_t* slot_ptr(const role& r, uint32_t q, uint64_t slot, uint32_t region = 0) const {
        const flow& f = *r.f;
        return r.ns->buffer + r.offset + region * f.region_bytes +
               (uint64_t{q} * f.slots + slot) * f.stride;
    }
    // The target's region of an operation: 0 WRITE target (and everything when not mixed), 1
    // READ source, 2 receive buffers.
    uint32_t region_of(operation op) const {
        if (m_w.op != operation::MIXED) {
            return 0;
        }
        return op == operation::READ ? 1 : op == operation::SEND ? 2 : 0;
    }
    void check_bytes(uint64_t key, const uint8_t* p, uint64_t len);

    // Consumer callbacks (NDK_FN_*), run by the provider in the host's DPC thread.
    static VOID on_cq_notification(PVOID ctx, NTSTATUS status);
    static VOID on_connect_event(PVOID ctx, NDK_CONNECTOR* connector);
    static VOID on_disconnect_event(PVOID ctx);

    const scenario_config& m_cfg;
    const workload_config& m_w;
    std::vector<flow_spec> m_flow_specs;
    std::deque<flow> m_flows;                          // stable addresses (roles point into them)
    std::vector<std::unique_ptr<node_state>> m_nodes;  // null for nodes without roles
    uint32_t m_nodes_left = 0;
    uint64_t m_total_all = 0;
    uint64_t m_posted = 0;

    // Results.
    std::vector<uint64_t> m_latency_ns;  // signaled WRs, post to completion reaped
    bool m_any_post = false;
    sc_core::sc_time m_first_post;
    sc_core::sc_time m_last_completion;
    uint64_t m_bytes_checked = 0;
    uint64_t m_mismatches = 0;
    // In the order they happened here; combine() orders every rank's by (time, node, order).
    struct failure_rec {
        uint64_t time_ps = 0;
        uint64_t node = 0;
        uint64_t seq = 0;
        std::string text;
    };
    std::vector<failure_rec> m_failures;
    std::vector<remote_check> m_remote_checks;
};

}  // namespace rnic::scenario
