// SPDX-License-Identifier: Apache-2.0
// Reliable transport under wire faults (issue "Reliable transport and hostile inputs", parts 1
// and 2): the NDK workload over the whole stack with the link dropping, corrupting,
// duplicating, reordering and delaying frames, alone and combined, with the filters (opcode,
// time window) and link-down intervals. Every run must end with every payload byte intact at
// its destination and every posted request completed exactly once, successfully; the fault
// counters prove the faults happened and the recovery counters that the transport repaired them.
//
// One elaboration per process: ctest runs each TEST as its own process. Run the binary by hand
// with --gtest_filter=TransportFaults.<one test>.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/system/transport_bench.h"

namespace rnic::transport_test {
namespace {

// 4 KiB messages are 4 packets at the default 1024 B path MTU, so First/Middle/Last packets (and
// READ response First/Middle/Last) all cross the faulty wire.
json workload(const std::string& op, uint64_t messages = 480, uint64_t bytes = 4096,
              uint32_t qps = 3) {
    return {{"operation", op}, {"message_bytes", bytes}, {"messages", messages},
            {"qps", qps},      {"queue_depth", 8},       {"signal_every", 2},
            {"seed", 11},      {"time_limit_ms", 20000}};
}

struct outcome {
    scenario::run_result r;
    scenario::workload_config w;
};

outcome run_faulty(const std::string& op, const json& faults, const json& extra = json::object(),
                   uint64_t messages = 480) {
    const json doc = scenario_doc(workload(op, messages), faults, extra);
    const scenario::scenario_config cfg = scenario::parse_scenario(doc);
    return {scenario::run_scenario(cfg), cfg.workload};
}

// The requester that repairs the loss: node 0 for every operation (a READ is repaired by
// re-issuing the request; node 1 only serves it again).
uint64_t requester(const scenario::run_result& r, const char* name) {
    return counter(r, "node0.nic.tx_engine", name);
}

// --- drop ------------------------------------------------------------------------------------

void drop_case(const std::string& op) {
    const outcome o = run_faulty(op, {{"drop", 0.02}, {"seed", 3}});
    expect_clean_run(o.r, o.w);
    EXPECT_GT(link_counter(o.r, "faults_dropped"), 0u);
    EXPECT_GT(requester(o.r, "retransmits"), 0u);
    // Every loss was noticed: by a sequence NAK (a gap at the responder) or a timeout.
    EXPECT_GT(requester(o.r, "nak_sequence") + requester(o.r, "timeouts"), 0u);
}
TEST(TransportFaults, WriteUnderDrop) {
    drop_case("write");
}
TEST(TransportFaults, SendUnderDrop) {
    drop_case("send");
}
TEST(TransportFaults, ReadUnderDrop) {
    drop_case("read");
}

// --- corruption (any bit, headers included; the receiver drops on a bad ICRC or header) -------

void corrupt_case(const std::string& op) {
    const outcome o = run_faulty(op, {{"corrupt", 0.02}, {"seed", 4}});
    expect_clean_run(o.r, o.w);
    EXPECT_GT(link_counter(o.r, "faults_corrupted"), 0u);
    // Most flips land in the ICRC-covered part of a 1 KiB frame and are caught there.
    EXPECT_GT(nic_counter(o.r, "recv_path", "bad_icrc"), 0u);
    EXPECT_LE(nic_counter(o.r, "recv_path", "parse_errors"), link_counter(o.r, "faults_corrupted"));
    EXPECT_GT(requester(o.r, "retransmits"), 0u);
}
TEST(TransportFaults, WriteUnderCorruption) {
    corrupt_case("write");
}
TEST(TransportFaults, SendUnderCorruption) {
    corrupt_case("send");
}
TEST(TransportFaults, ReadUnderCorruption) {
    corrupt_case("read");
}

// --- duplication: executed once, re-ACKed -----------------------------------------------------

void duplicate_case(const std::string& op) {
    const outcome o = run_faulty(op, {{"duplicate", 0.05}, {"seed", 5}});
    expect_clean_run(o.r, o.w);
    const uint64_t dups = link_counter(o.r, "faults_duplicated");
    EXPECT_GT(dups, 0u);
    // Request duplicates are caught by the responder's PSN check, response duplicates by the
    // requester (a READ response for a READ already complete, an old ACK).
    EXPECT_GT(nic_counter(o.r, "recv_path", "duplicates"), 0u);
    // Nothing executed twice: the responder completed exactly the messages sent.
    EXPECT_EQ(counter(o.r, "node1.nic.recv_path", "messages") +
                  counter(o.r, "node1.nic.recv_path", "read_requests") -
                  (op == "read" ? counter(o.r, "node1.nic.recv_path", "duplicates") : 0),
              o.w.messages);
}
TEST(TransportFaults, WriteUnderDuplication) {
    duplicate_case("write");
}
TEST(TransportFaults, SendUnderDuplication) {
    duplicate_case("send");
}
TEST(TransportFaults, ReadUnderDuplication) {
    duplicate_case("read");
}

// --- reordering: sequence NAK and go-back-N ---------------------------------------------------

void reorder_case(const std::string& op) {
    const outcome o = run_faulty(op, {{"reorder", 0.03}, {"reorder_delay_ns", 3000}, {"seed", 6}});
    expect_clean_run(o.r, o.w);
    EXPECT_GT(link_counter(o.r, "faults_reordered"), 0u);
    EXPECT_GT(requester(o.r, "nak_sequence") + requester(o.r, "timeouts"), 0u);
}
TEST(TransportFaults, WriteUnderReordering) {
    reorder_case("write");
}
TEST(TransportFaults, SendUnderReordering) {
    reorder_case("send");
}
TEST(TransportFaults, ReadUnderReordering) {
    reorder_case("read");
}

// --- delay jitter (frames overtake each other when the jitter exceeds a frame time) -----------

void jitter_case(const std::string& op) {
    const outcome o = run_faulty(op, {{"jitter_ns", 400}, {"seed", 7}});
    expect_clean_run(o.r, o.w);
    EXPECT_GT(link_counter(o.r, "faults_delayed"), 0u);
}
TEST(TransportFaults, WriteUnderJitter) {
    jitter_case("write");
}
TEST(TransportFaults, SendUnderJitter) {
    jitter_case("send");
}
TEST(TransportFaults, ReadUnderJitter) {
    jitter_case("read");
}

// --- link down for 20 us in the middle of the transfer (the traffic of these runs starts ~60 us
// into the simulation, once both nodes are set up and connected, and lasts ~90 us). What was
// lost is repaired by a sequence NAK when a later request gets through, else by the
// retransmission timer (the driver's default 67 ms). -----------------------------------------

void link_down_case(const std::string& op) {
    const outcome o = run_faulty(op, {{"link_down_ns", {{80000, 100000}}}});
    expect_clean_run(o.r, o.w);
    EXPECT_GT(link_counter(o.r, "faults_link_down"), 0u)
        << "traffic ran " << o.r.duration_ns << " ns up to " << o.r.simulated_ns << " ns";
    EXPECT_GE(requester(o.r, "timeouts") + requester(o.r, "nak_sequence"), 1u);
    EXPECT_GT(requester(o.r, "retransmits"), 0u);
    // Retries are budgeted per outage, not per run: it did not come close to retry_count.
    EXPECT_EQ(requester(o.r, "retry_exceeded"), 0u);
}
TEST(TransportFaults, WriteAcrossLinkDown) {
    link_down_case("write");
}
TEST(TransportFaults, SendAcrossLinkDown) {
    link_down_case("send");
}
TEST(TransportFaults, ReadAcrossLinkDown) {
    link_down_case("read");
}

// --- filters ---------------------------------------------------------------------------------

// Only ACKs are lost (opcode filter): a later ACK covers the earlier ones (they are
// cumulative); the tail of each burst needs the timer. Requests are never dropped.
TEST(TransportFaults, LostAcksOnly) {
    const outcome o = run_faulty("write", {{"drop", 0.3}, {"opcode", roce::RC_ACK}, {"seed", 8}});
    expect_clean_run(o.r, o.w);
    EXPECT_EQ(counter(o.r, "link.dir0", "faults_dropped"), 0u);  // requests: untouched
    EXPECT_GT(counter(o.r, "link.dir1", "faults_dropped"), 0u);  // ACKs
    EXPECT_EQ(counter(o.r, "node1.nic.recv_path", "out_of_sequence"), 0u);
}

// Only READ response Middle packets are lost: the requester must notice the gap in the
// response PSNs and re-issue the READ; the Last response must not complete a READ with a hole.
TEST(TransportFaults, LostReadResponseMiddles) {
    const outcome o =
        run_faulty("read", {{"drop", 0.2}, {"opcode", roce::RC_READ_RESP_MIDDLE}, {"seed", 9}});
    expect_clean_run(o.r, o.w);
    EXPECT_EQ(counter(o.r, "link.dir0", "faults_dropped"), 0u);
    EXPECT_GT(counter(o.r, "link.dir1", "faults_dropped"), 0u);
}

// A time window: every frame sent in [80 us, 85 us) is dropped (drop = 1 inside the window),
// none outside it.
TEST(TransportFaults, DropWindow) {
    const outcome o =
        run_faulty("write", {{"drop", 1.0}, {"window_start_ns", 80000}, {"window_end_ns", 85000}});
    expect_clean_run(o.r, o.w);
    EXPECT_GT(link_counter(o.r, "faults_dropped"), 0u);
    // Only frames sent inside the window: 5 us at 100 Gb/s is at most ~60 full frames per side.
    EXPECT_LE(link_counter(o.r, "faults_dropped"), 2 * 64u);
    EXPECT_GE(requester(o.r, "timeouts") + requester(o.r, "nak_sequence"), 1u);
}

// --- ACK coalescing under loss: one ACK per 8 messages or 5 us ----------------------------------

TEST(TransportFaults, CoalescedAcksUnderDrop) {
    const outcome o =
        run_faulty("write", {{"drop", 0.02}, {"seed", 12}},
                   {{"rnic", {{"recv_path", {{"ack_coalesce", 8}, {"ack_delay_ns", 5000}}}}}});
    expect_clean_run(o.r, o.w);
    EXPECT_GT(link_counter(o.r, "faults_dropped"), 0u);
    // Fewer ACKs than messages: coalescing really happened.
    EXPECT_LT(counter(o.r, "node0.nic.recv_path", "acks_received"), o.w.messages);
}

// --- everything at once ------------------------------------------------------------------------

void combined_case(const std::string& op) {
    const outcome o = run_faulty(op,
                                 {{"drop", 0.01},
                                  {"corrupt", 0.005},
                                  {"duplicate", 0.01},
                                  {"reorder", 0.01},
                                  {"jitter_ns", 200},
                                  {"link_down_ns", {{90000, 95000}}},
                                  {"seed", 13}},
                                 json::object(), 960);
    expect_clean_run(o.r, o.w);
    EXPECT_GT(link_counter(o.r, "faults_dropped"), 0u);
    EXPECT_GT(link_counter(o.r, "faults_corrupted"), 0u);
    EXPECT_GT(link_counter(o.r, "faults_duplicated"), 0u);
    EXPECT_GT(link_counter(o.r, "faults_reordered"), 0u);
    EXPECT_GT(link_counter(o.r, "faults_delayed"), 0u);
    EXPECT_GT(requester(o.r, "retransmits"), 0u);
}
TEST(TransportFaults, WriteUnderAllFaults) {
    combined_case("write");
}
TEST(TransportFaults, SendUnderAllFaults) {
    combined_case("send");
}
TEST(TransportFaults, ReadUnderAllFaults) {
    combined_case("read");
}

// --- retry exhaustion through the scenario keys ---------------------------------------------

// workload.timeout_log / retry_count reach every QP: with every frame to the responder's data QP
// lost (the connection exchange, on QP 1, gets through) the first WRITE is sent once and retried
// twice, 1 ms apart, then completes with "retry exceeded" (STATUS_IO_TIMEOUT) and the rest of the
// window is flushed.
TEST(TransportFaults, RetryExhaustionThroughScenarioKeys) {
    json w = workload("write", 64, 4096, 1);
    w["timeout_log"] = 8;  // 4.096 us x 2^8 = 1.05 ms
    w["retry_count"] = 2;
    w["time_limit_ms"] = 100;
    // QPNs 0 and 1 are reserved: node 1's one data QP is QP 2.
    const json doc = scenario_doc(w, {{"drop", 1.0}, {"qp", 2}});
    const scenario::scenario_config cfg = scenario::parse_scenario(doc);
    EXPECT_EQ(cfg.workload.timeout_log, 8u);
    EXPECT_EQ(cfg.workload.retry_count, 2u);
    const scenario::run_result r = scenario::run_scenario(cfg);
    EXPECT_FALSE(r.passed());
    ASSERT_FALSE(r.failures.empty());
    EXPECT_NE(r.failures[0].find("QP 0 request 0: completion status 0xc00000b5"), std::string::npos)
        << r.failures[0];
    EXPECT_EQ(counter(r, "node0.nic.tx_engine", "timeouts"), 3u);
    EXPECT_EQ(counter(r, "node0.nic.tx_engine", "retry_exceeded"), 1u);
    // The window of queue_depth WRITEs: the first failed, the other 7 flushed, each once.
    EXPECT_EQ(counter(r, "workload.node0", "posted"), 8u);
    EXPECT_EQ(counter(r, "node0.nic.tx_engine", "error_completions"), 8u);
    EXPECT_EQ(counter(r, "node0.nic.tx_engine", "flushed"), 7u);
    EXPECT_EQ(counter(r, "workload.node0", "error_completions"), 8u);
    EXPECT_EQ(counter(r, "workload.node0", "unexpected_completions"), 0u);
}

// --- the fault streams (link only) -----------------------------------------------------------

// eth_link draws every decision per frame "so one fault kind's setting does not shift another's
// stream": turning jitter on must not change which frames are dropped.
TEST(TransportFaults, JitterDoesNotShiftTheDropStream) {
    struct sink : fabric::frame_sink_if {
        std::vector<uint64_t> flows;
        void receive_frame(fabric::eth_frame&& f) override { flows.push_back(f.flow_id); }
    };
    hw::sim_context ctx;
    fabric::eth_link_config plain;
    plain.faults.drop = 0.3;
    plain.faults.seed = 77 + seed_shift();
    fabric::eth_link_config jittered = plain;
    jittered.faults.jitter_ns = 1;  // 1 ns: never enough to reorder 100 B frames
    fabric::eth_link a("plain", plain, ctx);
    fabric::eth_link b("jittered", jittered, ctx);
    sink ra, rb;
    a.attach(1, &ra);
    b.attach(1, &rb);
    sc_core::sc_spawn([&] {
        for (uint64_t i = 0; i < 200; ++i) {
            fabric::eth_frame f;
            f.data.assign(100, 0x5A);
            f.flow_id = i;
            fabric::eth_frame g = f;
            a.tx(0).put(std::move(f));
            b.tx(0).put(std::move(g));
        }
    });
    sc_core::sc_start();
    EXPECT_GT(a.get_stats(0).dropped, 30u);
    EXPECT_EQ(a.get_stats(0).dropped, b.get_stats(0).dropped);
    EXPECT_EQ(ra.flows, rb.flows) << "the same seed dropped other frames once jitter was on";
}

}  // namespace
}  // namespace rnic::transport_test
