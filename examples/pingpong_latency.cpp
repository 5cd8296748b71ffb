// SPDX-License-Identifier: Apache-2.0
// Ping-pong latency: node 0 SENDs a message, node 1 answers with one of the same size as soon as
// its receive completes; node 0 measures each round trip in simulated time and reports half of
// it as the one-way latency. The starting point for a request/response workload.
//
//   pingpong_latency [SCENARIO.json] [--set PATH=VALUE]... [--out DIR] [--time-limit-ms MS]
// Without a scenario: the default two nodes (100 Gb/s link, PCIe Gen3 x16). Exit 0: passed.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "testbench/testbed/endpoint.h"
#include "testbench/testbed/testbed.h"

namespace {

constexpr uint16_t PORT = 7000;
constexpr ULONG MSG = 64;    // bytes per message
constexpr int ROUNDS = 100;  // measured round trips
constexpr int WARMUP = 10;   // round trips before measuring
constexpr ULONG SLOTS = 4;   // receive buffers kept posted

using namespace rnic::testbed;

// Keeps SLOTS receives posted in `in`; slot i is at offset i * MSG, its context i + 1 (sends
// post with a null context).
bool post_receive(endpoint& e, const buffer& in, ULONG slot) {
    NDK_SGE s = in.sge(slot * MSG, MSG);
    const NTSTATUS st =
        e.qp->Dispatch->NdkReceive(e.qp, reinterpret_cast<PVOID>(uintptr_t{slot} + 1), &s, 1);
    if (st != STATUS_SUCCESS) {
        e.env().fail(std::string("NdkReceive: ") + ntstatus_name(st));
    }
    return st == STATUS_SUCCESS;
}

bool send(endpoint& e, const buffer& out, uint32_t seq) {
    std::memcpy(out.data, &seq, sizeof(seq));
    NDK_SGE s = out.sge(0, MSG);
    const NTSTATUS st = e.qp->Dispatch->NdkSend(e.qp, nullptr, &s, 1, 0);
    if (st != STATUS_SUCCESS) {
        e.env().fail(std::string("NdkSend: ") + ntstatus_name(st));
    }
    return st == STATUS_SUCCESS;
}

// Waits for the receive of message `seq` (reaping the send completions on the way) and checks
// its content; posts the slot again.
bool receive(endpoint& e, const buffer& in, uint32_t seq) {
    for (;;) {
        std::vector<NDK_RESULT> r;
        if (!e.reap(1, r)) {
            return false;
        }
        if (r[0].Status != STATUS_SUCCESS) {
            e.env().fail(std::string("completion: ") + ntstatus_name(r[0].Status));
            return false;
        }
        if (r[0].RequestContext == nullptr) {
            continue;  // our send's completion
        }
        const auto slot = static_cast<ULONG>(reinterpret_cast<uintptr_t>(r[0].RequestContext) - 1);
        uint32_t got = 0;
        std::memcpy(&got, in.data + slot * MSG, sizeof(got));
        if (got != seq || r[0].BytesTransferred != MSG) {
            e.env().fail("message " + std::to_string(seq) + " arrived as " + std::to_string(got));
            return false;
        }
        return post_receive(e, in, slot);
    }
}

// Both sides: open, post receives, connect; `active` pings, the other pongs.
void side(node_env& env, bool active) {
    endpoint e(env);
    if (!e.open()) {
        return;
    }
    buffer in = e.register_buffer(SLOTS * MSG, NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    buffer out = e.register_buffer(MSG, 0);
    for (ULONG i = 0; i < SLOTS; ++i) {
        if (!post_receive(e, in, i)) {
            return;
        }
    }
    if (!(active ? e.connect(1, PORT) : e.accept(PORT))) {
        return;
    }
    const sc_core::sc_time start_all = sc_core::sc_time_stamp();
    for (uint32_t seq = 0; seq < WARMUP + ROUNDS; ++seq) {
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        if (active) {
            if (!send(e, out, seq) || !receive(e, in, seq)) {
                return;
            }
            if (seq >= WARMUP) {
                env.latency_sample((sc_core::sc_time_stamp() - t0).to_seconds() * 1e9 / 2);
            }
        } else if (!receive(e, in, seq) || !send(e, out, seq)) {
            return;
        }
    }
    if (active) {  // each send's completion came before the answer to it
        env.report(2 * (WARMUP + ROUNDS), 2ull * (WARMUP + ROUNDS) * MSG,
                   (sc_core::sc_time_stamp() - start_all).to_seconds() * 1e9);
    }
    e.close();
}

}  // namespace

int sc_main(int argc, char** argv) {
    try {
        testbed::settings run{/*time_limit_ms=*/50, ""};
        testbed tb = testbed::from_args(argc, argv, run);
        tb.spawn(1, "pong", [](node_env& n) { side(n, false); });
        tb.spawn(0, "ping", [](node_env& n) { side(n, true); });
        const rnic::scenario::run_result r = tb.run(run);
        std::cout << "one-way latency (half the round trip of " << MSG << " B SENDs): avg "
                  << r.latency.avg_ns << " ns, p50 " << r.latency.p50_ns << " ns, p99 "
                  << r.latency.p99_ns << " ns over " << r.latency.samples << " round trips\n";
        return exit_code("pingpong_latency", r);
    } catch (const std::exception& e) {
        std::cerr << "pingpong_latency: " << e.what() << "\n";
        return 2;
    }
}
