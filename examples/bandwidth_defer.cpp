// SPDX-License-Identifier: Apache-2.0
// Bandwidth with DEFER batching: node 1 advertises a registered sink (address, token) in a SEND;
// node 0 streams RDMA WRITEs into it in batches of BATCH posts, all but the last of a batch with
// NDK_OP_FLAG_DEFER (one doorbell per batch) and NDK_OP_FLAG_SILENT_SUCCESS (one completion per
// batch), keeping at most DEPTH WRITEs in flight; a final SEND tells node 1 the data is there,
// and node 1 checks every byte. The starting point for a streaming workload.
//
// Silent sends: a WRITE posted with SILENT_SUCCESS gives no completion, and its send-queue slot
// is only freed when a later signalled request on the queue completes. A queue of only silent
// posts fills up and refuses every post with STATUS_INSUFFICIENT_RESOURCES: end each batch with
// a signalled one, as here.
//
//   bandwidth_defer [SCENARIO.json] [--set PATH=VALUE]... [--out DIR] [--time-limit-ms MS]
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "testbench/testbed/endpoint.h"
#include "testbench/testbed/testbed.h"

namespace {

using namespace rnic::testbed;

constexpr uint16_t PORT = 7001;
constexpr ULONG MSG = 64 * 1024;  // bytes per WRITE
constexpr ULONG COUNT = 256;      // WRITEs
constexpr ULONG BATCH = 8;        // posts per doorbell
constexpr ULONG DEPTH = 32;       // WRITEs in flight (queue depth)
constexpr ULONG SINK = 16 * MSG;  // the sink: WRITE i goes to (i % 16) * MSG

struct advert {
    UINT64 address;
    UINT32 token;
    UINT32 length;
};

uint8_t pattern(size_t i) {
    return static_cast<uint8_t>(i * 7 + (i >> 12));
}

void sink(node_env& env) {
    endpoint e(env, endpoint_options{DEPTH + 1});
    if (!e.open()) {
        return;
    }
    buffer data =
        e.register_buffer(SINK, NDK_MR_FLAG_ALLOW_LOCAL_WRITE | NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
    buffer msg = e.register_buffer(sizeof(advert), NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE s = msg.sge(0, sizeof(advert));
    if (!e.ok(e.qp->Dispatch->NdkReceive(e.qp, &msg, &s, 1), "NdkReceive") || !e.accept(PORT)) {
        return;
    }
    const advert a{reinterpret_cast<UINT64>(data.data), data.remote_token, SINK};
    std::memcpy(msg.data, &a, sizeof(a));
    std::vector<NDK_RESULT> r;
    if (!e.ok(e.qp->Dispatch->NdkSend(e.qp, nullptr, &s, 1, 0), "NdkSend") || !e.reap(1, r) ||
        !e.ok(e.qp->Dispatch->NdkReceive(e.qp, &msg, &s, 1), "NdkReceive") || !e.reap(1, r)) {
        return;  // the advert's completion, then the "done" receive
    }
    // The last 16 WRITEs are what the sink holds: WRITE i filled slot i % 16 with pattern(i).
    for (size_t i = 0; i < SINK; ++i) {
        const size_t write = COUNT - 16 + i / MSG;
        if (data.data[i] != pattern(write * MSG + i % MSG)) {
            env.fail("sink byte " + std::to_string(i) + " differs");
            return;
        }
    }
    e.close();
}

void source(node_env& env) {
    endpoint e(env, endpoint_options{DEPTH + 1});
    if (!e.open()) {
        return;
    }
    buffer src = e.register_buffer(COUNT * MSG, 0);
    buffer msg = e.register_buffer(sizeof(advert), NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    for (size_t i = 0; i < size_t{COUNT} * MSG; ++i) {
        src.data[i] = pattern(i);
    }
    NDK_SGE s = msg.sge(0, sizeof(advert));
    std::vector<NDK_RESULT> r;
    if (!e.ok(e.qp->Dispatch->NdkReceive(e.qp, &msg, &s, 1), "NdkReceive") || !e.connect(1, PORT) ||
        !e.reap(1, r)) {
        return;
    }
    advert a;
    std::memcpy(&a, msg.data, sizeof(a));
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    ULONG posted = 0, done = 0;
    while (done < COUNT) {
        while (posted < COUNT && posted + BATCH - done <= DEPTH) {
            for (ULONG b = 0; b < BATCH; ++b, ++posted) {
                const bool last = b == BATCH - 1;
                const ULONG flags = last ? 0 : NDK_OP_FLAG_DEFER | NDK_OP_FLAG_SILENT_SUCCESS;
                NDK_SGE d = src.sge(posted * MSG, MSG);
                if (!e.ok(e.qp->Dispatch->NdkWrite(e.qp, nullptr, &d, 1,
                                                   a.address + (posted % 16) * MSG, a.token, flags),
                          "NdkWrite")) {
                    return;
                }
            }
        }
        r.clear();
        if (!e.reap(1, r) || !e.ok(r[0].Status, "WRITE completion")) {
            return;
        }
        done += BATCH;  // one signalled completion retires its whole batch
    }
    const double ns = (sc_core::sc_time_stamp() - t0).to_seconds() * 1e9;
    env.report(COUNT, uint64_t{COUNT} * MSG, ns);
    if (!e.ok(e.qp->Dispatch->NdkSend(e.qp, nullptr, &s, 1, 0), "NdkSend") || !e.reap(1, r)) {
        return;  // "done": WRITEs before a SEND are placed before it completes at the peer
    }
    e.close();
}

}  // namespace

int sc_main(int argc, char** argv) {
    try {
        testbed::settings run{/*time_limit_ms=*/50, ""};
        testbed tb = testbed::from_args(argc, argv, run);
        tb.spawn(1, "sink", sink);
        tb.spawn(0, "source", source);
        const rnic::scenario::run_result r = tb.run(run);
        std::cout << "RDMA WRITE " << MSG << " B x " << COUNT << ", batches of " << BATCH << ": "
                  << r.goodput_gbps << " Gb/s, " << r.msg_rate_mpps << " M msg/s\n";
        return exit_code("bandwidth_defer", r);
    } catch (const std::exception& e) {
        std::cerr << "bandwidth_defer: " << e.what() << "\n";
        return 2;
    }
}
