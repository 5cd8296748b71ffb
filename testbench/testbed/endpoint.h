// SPDX-License-Identifier: Apache-2.0
// The usual start of an NDK consumer, in NDK calls, for the testbed's consumer threads: an
// adapter with one PD, one CQ and one QP, a connection (listen + accept, or connect +
// CompleteConnect) over the wire, registered buffers, completion reaping, and an orderly close.
// Every call handles both creation outcomes (inline or STATUS_PENDING + callback) and waits with
// a simulated-time timeout; a failure is reported through node_env::fail (naming the NDK call
// and its NTSTATUS) and the call returns false / null. What the consumer does with the queues
// is its own NDK code (examples/).
#pragma once

#include <cstdint>
#include <vector>

#include "testbench/testbed/testbed.h"

namespace rnic::testbed {

// Kernel memory registered as one MR: `data` is plain process memory (the node's DRAM).
struct buffer {
    uint8_t* data = nullptr;
    ULONG bytes = 0;
    MDL* mdl = nullptr;
    NDK_MR* mr = nullptr;
    UINT32 token = 0;  // local token (NDK_SGE::MemoryRegionToken)
    UINT32 remote_token = 0;
    NDK_SGE sge(ULONG offset, ULONG length) const;
};

struct endpoint_options {
    ULONG queue_depth = 64;  // SQ and RQ depth, and the CQ holds both
    ULONG max_sge = 2;
    ULONG inline_bytes = 64;  // capped to the adapter's MaxInlineDataSize
    ULONG read_limit = 4;     // inbound and outbound RDMA READ limits of the connection
    sc_core::sc_time timeout{10, sc_core::SC_MS};  // for each step (create, connect, reap)
};

class endpoint {
public:
    explicit endpoint(node_env& env, endpoint_options o = {});

    NDK_ADAPTER* adapter = nullptr;
    NDK_ADAPTER_INFO info{};
    NDK_PD* pd = nullptr;
    NDK_CQ* cq = nullptr;
    NDK_QP* qp = nullptr;
    NDK_CONNECTOR* connector = nullptr;
    NDK_LISTENER* listener = nullptr;

    // open_adapter, QueryAdapterInfo, CreatePd, CreateCq, CreateQp.
    bool open();
    // Passive side: listen on `port` of this node's address, accept the first request.
    bool accept(uint16_t port);
    // Active side: connect to node `peer`'s `port`, then CompleteConnect.
    bool connect(size_t peer, uint16_t port);
    // alloc + build_mdl + CreateMr + RegisterMr over `bytes`, zero-filled.
    buffer register_buffer(ULONG bytes, ULONG flags);
    // Polls the CQ until `n` more results arrived (appended to `out`; never more than `n`, the
    // rest stays queued) or the timeout.
    bool reap(size_t n, std::vector<NDK_RESULT>& out);
    // Disconnect (if connected), close QP, CQ, MRs, listener, PD, then close_adapter.
    void close();

    // true for STATUS_SUCCESS; else reports "<call>: <status name> (0x...) at <time>" through
    // node_env::fail and returns false.
    bool ok(NTSTATUS st, const char* call);

    node_env& env() { return m_env; }
    const endpoint_options& options() const { return m_opt; }

private:
    node_env& m_env;
    endpoint_options m_opt;
    sc_core::sc_event m_connect_event;
    NDK_CONNECTOR* m_incoming = nullptr;
    std::vector<buffer> m_buffers;
};

}  // namespace rnic::testbed
