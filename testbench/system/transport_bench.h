// SPDX-License-Identifier: Apache-2.0
// Helpers for the reliable-transport and protection tests: scenario documents with wire faults,
// counter look-ups in a run_result, exact completion checks, and a two-node bench (the real NICs,
// hosts and link of a scenario) on which a test drives NDK consumer code directly.
//
// One elaboration per process: a TEST builds at most one bench or runs one scenario.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hw/common/sim_context.h"
#include "hw/hsi/hsi.h"
#include "hw/roce/roce.h"
#include "ndk_shim/ndk_sim.h"
#include "ndk_shim/ndkpi.h"
#include "ndk_shim/ntstatus.h"
#include "testbench/scenario/ndk_async_call.h"
#include "testbench/scenario/node.h"
#include "testbench/scenario/pattern.h"
#include "testbench/scenario/run_result.h"
#include "testbench/scenario/runner.h"
#include "testbench/scenario/scenario_config.h"
#include "tlm/ethernet/eth_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace rnic::transport_test {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Scenario runs
// ---------------------------------------------------------------------------------------------

// RNICSIM_TEST_SEED=<n> shifts every fault-stream and workload seed of these tests by n, to hunt
// for seed-dependent failures (`RNICSIM_TEST_SEED=3 ctest -R Transport`). Unset: 0, the seeds
// written in the tests.
inline uint64_t seed_shift() {
    const char* s = std::getenv("RNICSIM_TEST_SEED");
    return s != nullptr ? std::strtoull(s, nullptr, 10) : 0;
}

// A scenario document: `workload` keys, `faults` (topology.link.faults) and extra top-level
// sections merged in (e.g. {"rnic": {"recv_path": {"ack_coalesce": 4}}}).
inline json scenario_doc(const json& workload, const json& faults = json::object(),
                         const json& extra = json::object()) {
    json w = workload;
    json f = faults;
    if (const uint64_t shift = seed_shift(); shift != 0) {
        f["seed"] = f.value("seed", uint64_t{1}) + shift;
        if (!w.empty()) {
            w["seed"] = w.value("seed", uint64_t{1}) + shift;
        }
    }
    // The faults hit CM MADs too: a CM resend timer of 262 us (4.096 us x 2^6, close to the
    // former 200 us), not Linux's 4.3 s, keeps a lost REQ from dwarfing the transfer under test.
    json doc = {{"workload", w},
                {"topology", {{"link", {{"faults", f}}}}},
                {"host", {{"cm_response_timeout_log", 6}}}};
    doc.merge_patch(extra);
    return doc;
}

// Counter `name` of block `block` ("node0.nic.tx_engine", "link.dir0", "workload.node1").
inline uint64_t counter(const scenario::run_result& r, const std::string& block,
                        const std::string& name) {
    if (!r.blocks.contains(block) || !r.blocks[block].contains(name)) {
        ADD_FAILURE() << "no counter " << block << "." << name;
        return 0;
    }
    return r.blocks[block][name].get<uint64_t>();
}

// The same counter summed over both nodes' NICs ("tx_engine", "recv_path").
inline uint64_t nic_counter(const scenario::run_result& r, const std::string& unit,
                            const std::string& name) {
    return counter(r, "node0.nic." + unit, name) + counter(r, "node1.nic." + unit, name);
}

// A link fault counter summed over both directions ("faults_dropped", ...).
inline uint64_t link_counter(const scenario::run_result& r, const std::string& name) {
    return counter(r, "link.dir0", name) + counter(r, "link.dir1", name);
}

// Signaled work requests of one QP with `n` messages (the last one is always signaled).
inline uint64_t signaled(uint64_t n, uint32_t every) {
    return n / every + (n % every != 0 ? 1 : 0);
}

// What a workload must complete: the signaled work requests (the CQEs node 0 reaps), by
// operation, and the SENDs (node 1's receives). Mirrors workload.cpp: messages spread evenly
// over the QPs, one signaled in `signal_every` plus the last of each QP.
struct expected_completions {
    uint64_t cqes = 0;
    uint64_t writes = 0;  // signaled, by operation
    uint64_t reads = 0;
    uint64_t sends = 0;
    uint64_t messages_by_op[3] = {0, 0, 0};  // every message: WRITE, SEND, READ
};
inline expected_completions expected_of(const scenario::workload_config& w) {
    expected_completions e;
    for (uint32_t q = 0; q < w.qps; ++q) {
        const uint64_t n = w.messages / w.qps + (q < w.messages % w.qps ? 1 : 0);
        for (uint64_t i = 0; i < n; ++i) {
            const scenario::operation op = scenario::operation_of(w, q, i);
            ++e.messages_by_op[static_cast<int>(op)];
            if ((i + 1) % w.signal_every != 0 && i + 1 != n) {
                continue;
            }
            ++e.cqes;
            (op == scenario::operation::WRITE  ? e.writes
             : op == scenario::operation::READ ? e.reads
                                               : e.sends)++;
        }
    }
    return e;
}

// Every posted request completed exactly once and successfully, every byte landed intact, and
// the CQs hold exactly the completions the workload expects: nothing lost, nothing twice.
inline void expect_clean_run(const scenario::run_result& r, const scenario::workload_config& w) {
    for (const auto& f : r.failures) {
        ADD_FAILURE() << f;
    }
    EXPECT_TRUE(r.passed());
    const uint64_t len = w.message_bytes;
    EXPECT_EQ(r.messages, w.messages);
    EXPECT_EQ(r.bytes_checked, w.messages * len);
    EXPECT_EQ(r.mismatches, 0u);
    const expected_completions e = expected_of(w);
    const uint64_t sends = e.messages_by_op[static_cast<int>(scenario::operation::SEND)];
    EXPECT_EQ(counter(r, "workload.node0", "posted"), w.messages);
    EXPECT_EQ(counter(r, "workload.node0", "completions"), e.cqes);
    EXPECT_EQ(counter(r, "workload.node0", "write_completions"), e.writes);
    EXPECT_EQ(counter(r, "workload.node0", "read_completions"), e.reads);
    EXPECT_EQ(counter(r, "workload.node0", "send_completions"), e.sends);
    EXPECT_EQ(counter(r, "workload.node0", "error_completions"), 0u);
    EXPECT_EQ(counter(r, "workload.node0", "unexpected_completions"), 0u);
    EXPECT_EQ(counter(r, "workload.node1", "error_completions"), 0u);
    EXPECT_EQ(counter(r, "workload.node1", "unexpected_completions"), 0u);
    // Node 1 completes exactly one receive per SEND (none for WRITE/READ).
    EXPECT_EQ(counter(r, "workload.node1", "completions"), sends);
    EXPECT_EQ(counter(r, "workload.node1", "receive_completions"), sends);
    EXPECT_EQ(counter(r, "workload.node1", "receive_bytes"), sends * len);
    // The NICs agree: no error CQE, nothing flushed, no QP failed.
    EXPECT_EQ(nic_counter(r, "tx_engine", "error_completions"), 0u);
    EXPECT_EQ(nic_counter(r, "tx_engine", "flushed"), 0u);
    EXPECT_EQ(nic_counter(r, "tx_engine", "retry_exceeded"), 0u);
    EXPECT_EQ(nic_counter(r, "recv_path", "fatal_naks"), 0u);
    EXPECT_EQ(nic_counter(r, "recv_path", "flushed_receives"), 0u);
}

inline scenario::run_result run_doc(const json& doc) {
    return scenario::run_scenario(scenario::parse_scenario(doc));
}

// Where the source tree is (set by sc_gtest_main for ctest and direct runs).
inline std::string source_dir() {
    const char* d = std::getenv("RNICSIM_SOURCE_DIR");
    return d != nullptr ? d : ".";
}

// ---------------------------------------------------------------------------------------------
// Wire capture
// ---------------------------------------------------------------------------------------------

// One frame as it left a MAC (before any fault), decoded.
struct wire_frame {
    int side = 0;  // 0: node 0 -> node 1
    bool parsed = false;
    uint8_t opcode = 0;
    uint32_t dest_qp = 0;
    uint32_t psn = 0;
    uint8_t syndrome = 0;  // AETH (ACK, READ response First/Last/Only)
    uint32_t payload_len = 0;
    sc_core::sc_time at;
};

// ---------------------------------------------------------------------------------------------
// Two-node bench for direct NDK consumers
// ---------------------------------------------------------------------------------------------

// The nodes and link of a scenario (its topology, rnic and host sections; the workload section
// is ignored), with every frame captured. Tests write consumer code against NDK in `run()`.
class two_node_bench {
public:
    hw::sim_context ctx;
    scenario::scenario_config cfg;
    std::unique_ptr<fabric::eth_link> link;
    std::unique_ptr<scenario::node> nodes[2];
    std::vector<wire_frame> frames;

    explicit two_node_bench(const json& doc)
        : cfg(scenario::parse_scenario(doc)) {
        link = std::make_unique<fabric::eth_link>("link", cfg.topology.link, ctx);
        for (size_t i = 0; i < 2; ++i) {
            nodes[i] = std::make_unique<scenario::node>(("node" + std::to_string(i)).c_str(), i,
                                                        cfg, *link, ctx);
        }
        link->set_capture([this](int side, const fabric::eth_frame& f) {
            wire_frame w;
            w.side = side;
            w.at = sc_core::sc_time_stamp();
            roce::parsed_frame p;
            if (roce::parse_frame(f.data.data(), f.data.size(), p) == roce::parse_error::NONE) {
                w.parsed = true;
                w.opcode = p.hdr.bth_.opcode;
                w.dest_qp = p.hdr.bth_.dest_qp;
                w.psn = p.hdr.bth_.psn;
                w.syndrome = p.hdr.aeth_.syndrome;
                w.payload_len = static_cast<uint32_t>(p.payload_len);
            }
            frames.push_back(w);
        });
    }

    // SystemC keeps an elaboration's processes (some still suspended when the body returns) until
    // the process exits, and they refer to the modules: never delete them (as runner.cpp does).
    ~two_node_bench() {
        for (auto& n : nodes) {
            (void)n.release();
        }
        (void)link.release();
    }
    two_node_bench(const two_node_bench&) = delete;
    two_node_bench& operator=(const two_node_bench&) = delete;

    // Runs `body` in an SC_THREAD until it returns (then stops the simulation) or until
    // `limit_ms` of simulated time pass. Returns true if the body finished.
    bool run(std::function<void()> body, double limit_ms = 2000) {
        bool finished = false;
        sc_core::sc_spawn([body, &finished] {
            body();
            finished = true;
            sc_core::sc_stop();
        });
        sc_core::sc_start(sc_core::sc_time(limit_ms, sc_core::SC_MS));
        return finished;
    }

    // All counters, as in stats.json's "blocks".
    json stats() const { return ctx.stats.values(); }
    uint64_t stat(const std::string& block, const std::string& name) const {
        const json s = stats();
        if (!s.contains(block) || !s[block].contains(name)) {
            ADD_FAILURE() << "no counter " << block << "." << name;
            return 0;
        }
        return s[block][name].get<uint64_t>();
    }

    // Frames sent by `side` with this opcode (ACKs: with syndrome matching `syn_filter`).
    std::vector<wire_frame> sent(int side, uint8_t opcode) const {
        std::vector<wire_frame> v;
        for (const auto& f : frames) {
            if (f.side == side && f.parsed && f.opcode == opcode) {
                v.push_back(f);
            }
        }
        return v;
    }
    size_t naks(int side, uint8_t syndrome) const {
        size_t n = 0;
        for (const auto& f : sent(side, roce::RC_ACK)) {
            n += f.syndrome == syndrome ? 1 : 0;
        }
        return n;
    }
    size_t rnr_naks(int side) const {
        size_t n = 0;
        for (const auto& f : sent(side, roce::RC_ACK)) {
            n += roce::aeth_is_rnr_nak(f.syndrome) ? 1 : 0;
        }
        return n;
    }
};

// Waits (simulated time, 100 ns steps) until `cond` holds or `ns` pass; returns cond().
inline bool wait_until(const std::function<bool()>& cond, double ns = 1e6) {
    const sc_core::sc_time end = sc_core::sc_time_stamp() + sc_core::sc_time(ns, sc_core::SC_NS);
    while (!cond() && sc_core::sc_time_stamp() < end) {
        sc_core::wait(sc_core::sc_time(100, sc_core::SC_NS));
    }
    return cond();
}

inline void wait_ns(double ns) {
    sc_core::wait(sc_core::sc_time(ns, sc_core::SC_NS));
}

using scenario::async_call;

// A registered buffer: real process memory shared with the node's simulated DRAM.
// The allocation is `bytes` long; the MR covers [reg_off, reg_off + reg_len) of it (the rest
// are guard bytes nobody may write).
struct buffer {
    uint8_t* data = nullptr;
    size_t bytes = 0;
    size_t reg_off = 0;
    size_t reg_len = 0;
    MDL* mdl = nullptr;
    NDK_MR* mr = nullptr;
    uint32_t token = 0;  // local = remote token
    // Address of byte `off` of the registered range (what a peer uses as RemoteAddress).
    uint64_t va(size_t off = 0) const {
        return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(data + reg_off + off));
    }
    uint8_t* reg() const { return data + reg_off; }
};

// One node's consumer: adapter, PD, CQ, and helpers to make the objects a test needs. All calls
// from an SC_THREAD (two_node_bench::run). Failures are gtest failures; objects are returned
// null after one.
class consumer {
public:
    consumer(two_node_bench& b, size_t index)
        : m_bench(b)
        , m_node(*b.nodes[index])
        , m_index(index) {}

    ndk::host_system& host() { return m_node.host; }
    hw::nic& nic() { return m_node.nic; }
    uint32_t ip() const { return m_bench.cfg.topology.nodes[m_index].ip; }

    // Adapter parameters with this node's identity; tests change the transport knobs.
    ndk::adapter_params params() const {
        const auto& nc = m_bench.cfg.topology.nodes[m_index];
        ndk::adapter_params p;
        p.node_id = static_cast<uint32_t>(m_index);
        p.mac = nc.mac;
        p.ip = nc.ip;
        p.limits = m_bench.cfg.rnic.limits;
        p.default_mtu = nc.mtu;
        p.cm_timeout_ns = ndk::cm_timeout_ns_of(m_bench.cfg.host.cm_response_timeout_log);
        p.cm_retries = m_bench.cfg.host.cm_retries;
        return p;
    }

    void open(const ndk::adapter_params& p, ULONG cq_depth = 256) {
        ASSERT_EQ(ndk::open_adapter(m_node.host, p, &adapter), STATUS_SUCCESS);
        pd = create_pd();
        async_call c;
        NDK_CQ* out = nullptr;
        const NTSTATUS st = adapter->Dispatch->NdkCreateCq(
            adapter, cq_depth, nullptr, nullptr, nullptr, async_call::on_create, &c, &out);
        ASSERT_EQ(c.wait(st), STATUS_SUCCESS);
        cq = c.created(st, out);
    }

    NDK_PD* create_pd() {
        async_call c;
        NDK_PD* out = nullptr;
        const NTSTATUS st =
            adapter->Dispatch->NdkCreatePd(adapter, async_call::on_create, &c, &out);
        EXPECT_EQ(c.wait(st), STATUS_SUCCESS);
        return c.created(st, out);
    }

    // Allocates `bytes` (filled with `fill`) and registers [reg_off, reg_off + reg_len) of
    // them (reg_len 0: all) in `in_pd` with `flags`.
    buffer make_buffer(size_t bytes, ULONG flags, NDK_PD* in_pd = nullptr, uint8_t fill = 0,
                       size_t reg_off = 0, size_t reg_len = 0) {
        buffer b;
        b.bytes = bytes;
        b.reg_off = reg_off;
        b.reg_len = reg_len != 0 ? reg_len : bytes - reg_off;
        b.data = static_cast<uint8_t*>(m_node.host.alloc(bytes));
        std::memset(b.data, fill, bytes);
        b.mdl = m_node.host.build_mdl(b.data + b.reg_off, b.reg_len);
        NDK_PD* p = in_pd != nullptr ? in_pd : pd;
        {
            async_call c;
            NDK_MR* out = nullptr;
            const NTSTATUS st = p->Dispatch->NdkCreateMr(p, FALSE, async_call::on_create, &c, &out);
            EXPECT_EQ(c.wait(st), STATUS_SUCCESS);
            b.mr = c.created(st, out);
        }
        async_call c;
        const NTSTATUS st = b.mr->Dispatch->NdkRegisterMr(b.mr, b.mdl, b.reg_len, flags,
                                                          async_call::on_request, &c);
        EXPECT_EQ(c.wait(st), STATUS_SUCCESS);
        b.token = b.mr->Dispatch->NdkGetLocalTokenFromMr(b.mr);
        return b;
    }

    NTSTATUS deregister(buffer& b) {
        async_call c;
        return c.wait(b.mr->Dispatch->NdkDeregisterMr(b.mr, async_call::on_request, &c));
    }

    NDK_QP* create_qp(uintptr_t context, ULONG rq_depth = 16, ULONG sq_depth = 16,
                      NDK_PD* in_pd = nullptr) {
        NDK_PD* p = in_pd != nullptr ? in_pd : pd;
        async_call c;
        NDK_QP* out = nullptr;
        const NTSTATUS st =
            p->Dispatch->NdkCreateQp(p, cq, cq, reinterpret_cast<PVOID>(context), rq_depth,
                                     sq_depth, 2, 2, 64, async_call::on_create, &c, &out);
        EXPECT_EQ(c.wait(st), STATUS_SUCCESS);
        return c.created(st, out);
    }

    NDK_MW* create_mw(NDK_PD* in_pd = nullptr) {
        NDK_PD* p = in_pd != nullptr ? in_pd : pd;
        async_call c;
        NDK_MW* out = nullptr;
        const NTSTATUS st = p->Dispatch->NdkCreateMw(p, async_call::on_create, &c, &out);
        EXPECT_EQ(c.wait(st), STATUS_SUCCESS);
        return c.created(st, out);
    }

    // Reaps whatever is in the CQ now.
    std::vector<NDK_RESULT_EX> poll() {
        std::vector<NDK_RESULT_EX> v;
        NDK_RESULT_EX r[16];
        for (;;) {
            const ULONG n = cq->Dispatch->NdkGetCqResultsEx(cq, r, 16);
            v.insert(v.end(), r, r + n);
            if (n < 16) {
                return v;
            }
        }
    }
    // Reaps until `count` completions arrived or `ns` of simulated time passed; completions
    // that arrive meanwhile beyond `count` are returned too.
    std::vector<NDK_RESULT_EX> reap(size_t count, double ns = 1e6) {
        std::vector<NDK_RESULT_EX> v;
        const sc_core::sc_time end =
            sc_core::sc_time_stamp() + sc_core::sc_time(ns, sc_core::SC_NS);
        for (;;) {
            for (const auto& r : poll()) {
                v.push_back(r);
            }
            if (v.size() >= count || sc_core::sc_time_stamp() >= end) {
                return v;
            }
            wait_ns(200);
        }
    }

    // Connector of a QP connected by connect_pair (for disconnects).
    NDK_CONNECTOR* connector_of(NDK_QP* qp) const {
        for (const auto& [q, c] : m_connectors) {
            if (q == qp) {
                return c;
            }
        }
        return nullptr;
    }

    NDK_ADAPTER* adapter = nullptr;
    NDK_PD* pd = nullptr;
    NDK_CQ* cq = nullptr;

    // Connects `qa` of `a` (active) to `qb` of `b` (passive), on `port`.
    static void connect_pair(consumer& a, NDK_QP* qa, consumer& b, NDK_QP* qb,
                             uint16_t port = 7000) {
        struct listen_state {
            std::vector<NDK_CONNECTOR*> incoming;
            sc_core::sc_event ev;
            static VOID fn(PVOID ctx, NDK_CONNECTOR* c) {
                auto* s = static_cast<listen_state*>(ctx);
                s->incoming.push_back(c);
                s->ev.notify();
            }
        };
        auto* ls = new listen_state;  // the listener keeps calling it: lives for the test
        NDK_LISTENER* l = nullptr;
        {
            async_call c;
            const NTSTATUS st = b.adapter->Dispatch->NdkCreateListener(
                b.adapter, listen_state::fn, ls, async_call::on_create, &c, &l);
            ASSERT_EQ(c.wait(st), STATUS_SUCCESS);
            l = c.created(st, l);
        }
        SOCKADDR_IN la = sockaddr_of(b.ip(), port);
        {
            async_call c;
            ASSERT_EQ(c.wait(l->Dispatch->NdkListen(l, reinterpret_cast<PSOCKADDR>(&la), sizeof(la),
                                                    async_call::on_request, &c)),
                      STATUS_SUCCESS);
        }
        NDK_CONNECTOR* ca = nullptr;
        {
            async_call c;
            const NTSTATUS st =
                a.adapter->Dispatch->NdkCreateConnector(a.adapter, async_call::on_create, &c, &ca);
            ASSERT_EQ(c.wait(st), STATUS_SUCCESS);
            ca = c.created(st, ca);
        }
        SOCKADDR_IN src = sockaddr_of(a.ip(), 0);
        async_call connected;
        const NTSTATUS cst =
            ca->Dispatch->NdkConnect(ca, qa, reinterpret_cast<PSOCKADDR>(&src), sizeof(src),
                                     reinterpret_cast<PSOCKADDR>(&la), sizeof(la), 8, 8, nullptr, 0,
                                     async_call::on_request, &connected);
        while (ls->incoming.empty()) {
            sc_core::wait(ls->ev);
        }
        NDK_CONNECTOR* cb = ls->incoming.front();
        async_call accepted;
        const NTSTATUS ast = cb->Dispatch->NdkAccept(cb, qb, 8, 8, nullptr, 0, nullptr, nullptr,
                                                     async_call::on_request, &accepted);
        ASSERT_EQ(connected.wait(cst), STATUS_SUCCESS);
        {
            async_call c;
            ASSERT_EQ(c.wait(ca->Dispatch->NdkCompleteConnect(ca, nullptr, nullptr,
                                                              async_call::on_request, &c)),
                      STATUS_SUCCESS);
        }
        ASSERT_EQ(accepted.wait(ast), STATUS_SUCCESS);
        a.m_connectors.emplace_back(qa, ca);
        b.m_connectors.emplace_back(qb, cb);
    }

    static SOCKADDR_IN sockaddr_of(uint32_t ip, uint16_t port) {
        SOCKADDR_IN s{};
        s.sin_family = AF_INET;
        s.sin_port = htons(port);
        s.sin_addr.s_addr = htonl(ip);
        return s;
    }

private:
    two_node_bench& m_bench;
    scenario::node& m_node;
    size_t m_index;
    std::vector<std::pair<NDK_QP*, NDK_CONNECTOR*>> m_connectors;
};

// SGE over [off, off+len) of a buffer's registered range.
inline NDK_SGE sge_of(const buffer& b, size_t off, size_t len) {
    NDK_SGE s{};
    s.VirtualAddress = b.reg() + off;
    s.Length = static_cast<ULONG>(len);
    s.MemoryRegionToken = b.token;
    return s;
}

// Bytes of [p, p+len) that differ from `v`.
inline size_t count_not(const uint8_t* p, size_t len, uint8_t v) {
    size_t n = 0;
    for (size_t i = 0; i < len; ++i) {
        n += p[i] != v ? 1 : 0;
    }
    return n;
}

inline std::string status_name(NTSTATUS s) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", static_cast<uint32_t>(s));
    return buf;
}

}  // namespace rnic::transport_test
