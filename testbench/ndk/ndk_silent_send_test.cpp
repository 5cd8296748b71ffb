// SPDX-License-Identifier: Apache-2.0
// The silent-send rule consumers must know (ndk_shim/README.md, IB semantics; NDKPI is silent):
// a WRITE posted with NDK_OP_FLAG_SILENT_SUCCESS gives no completion and keeps its send-queue
// slot until a later signalled request of the queue completes. On two real nodes (testbed).
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/testbed/endpoint.h"
#include "testbench/testbed/testbed.h"

namespace rnic::testbed {
namespace {

constexpr ULONG DEPTH = 8;
constexpr uint16_t PORT = 7100;

TEST(NdkSilentSend, SilentPostsHoldTheirSlotsUntilASignalledOneCompletes) {
    testbed tb(nlohmann::json::object());
    sc_core::sc_event connected, done;
    UINT64 sink_va = 0;
    UINT32 sink_token = 0;
    bool finished = false;
    tb.spawn(1, "target", [&](node_env& n) {
        endpoint e(n, endpoint_options{DEPTH});
        ASSERT_TRUE(e.open());
        buffer sink = e.register_buffer(4096, NDK_MR_FLAG_ALLOW_REMOTE_WRITE);
        sink_va = reinterpret_cast<UINT64>(sink.data);
        sink_token = sink.remote_token;
        ASSERT_TRUE(e.accept(PORT));
        connected.notify(sc_core::SC_ZERO_TIME);
        wait_until([&] { return finished; }, done, sc_core::sc_time(5, sc_core::SC_MS));
    });
    tb.spawn(0, "initiator", [&](node_env& n) {
        endpoint e(n, endpoint_options{DEPTH});
        ASSERT_TRUE(e.open());
        buffer src = e.register_buffer(4096, 0);
        ASSERT_TRUE(e.connect(1, PORT));
        auto write = [&](ULONG flags) {
            NDK_SGE s = src.sge(0, 64);
            return e.qp->Dispatch->NdkWrite(e.qp, nullptr, &s, 1, sink_va, sink_token, flags);
        };
        std::vector<NDK_RESULT> r;
        // DEPTH - 1 silent and one signalled: one completion retires all DEPTH slots.
        for (ULONG i = 0; i + 1 < DEPTH; ++i) {
            ASSERT_EQ(write(NDK_OP_FLAG_SILENT_SUCCESS), STATUS_SUCCESS) << i;
        }
        ASSERT_EQ(write(0), STATUS_SUCCESS);
        ASSERT_TRUE(e.reap(1, r));
        EXPECT_EQ(r[0].Status, STATUS_SUCCESS);
        // The queue is free again: DEPTH silent posts fit, the next is refused inline...
        for (ULONG i = 0; i < DEPTH; ++i) {
            ASSERT_EQ(write(NDK_OP_FLAG_SILENT_SUCCESS), STATUS_SUCCESS) << i;
        }
        EXPECT_EQ(write(NDK_OP_FLAG_SILENT_SUCCESS), STATUS_INSUFFICIENT_RESOURCES);
        // ... and stays refused once every one of them was executed (their ACKs came back):
        // nothing signalled completed, so no slot was given back; no completion arrived.
        sc_core::wait(sc_core::sc_time(200, sc_core::SC_US));
        EXPECT_EQ(write(0), STATUS_INSUFFICIENT_RESOURCES);
        NDK_RESULT none[1];
        EXPECT_EQ(e.cq->Dispatch->NdkGetCqResults(e.cq, none, 1), 0u);
        finished = true;
        done.notify(sc_core::SC_ZERO_TIME);
    });
    const scenario::run_result r = tb.run({10, ""});
    EXPECT_TRUE(r.passed()) << (r.failures.empty() ? "" : r.failures[0]);
    // Every silent WRITE was executed: 2 x DEPTH WRITEs reached node 1.
    EXPECT_EQ(r.blocks["node1.nic.recv_path"]["messages"].get<uint64_t>(), 2u * DEPTH);
}

}  // namespace
}  // namespace rnic::testbed
