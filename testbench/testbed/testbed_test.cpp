// SPDX-License-Identifier: Apache-2.0
// The testbed API (testbench/testbed) on real nodes, and what consumers found through it: queue
// depths at a NIC limit that is not a power of two are usable up to what QueryAdapterInfo
// reports, and anything deeper is refused inline.
#include "testbench/testbed/testbed.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hw/common/config_reader.h"
#include "testbench/testbed/endpoint.h"

namespace rnic::testbed {
namespace {

using json = nlohmann::json;

// The largest power of two not above `v`: the deepest ring a NIC limited to `v` entries takes.
uint32_t floor_pow2(uint32_t v) {
    uint32_t p = 1;
    while (p * 2 <= v) {
        p *= 2;
    }
    return p;
}

// With every queue limit at 100 (not a power of two), QueryAdapterInfo reports what creation
// accepts: a QP, CQ and SRQ at the reported depth are created (final status SUCCESS, whichever
// way it comes), one deeper is refused inline with STATUS_INVALID_PARAMETER (no completion).
void depth_limits(bool async_create) {
    const json scenario = {
        {"rnic",
         {{"limits", {{"max_qp_depth", 100}, {"max_cq_depth", 100}, {"max_srq_depth", 100}}}}},
        {"host", {{"async_create", async_create}}}};
    testbed tb(scenario);
    tb.spawn(0, "consumer", [](node_env& n) {
        NDK_ADAPTER* a = nullptr;
        ASSERT_EQ(ndk::open_adapter(n.host(), n.adapter_params(), &a), STATUS_SUCCESS);
        NDK_ADAPTER_INFO info{};
        ULONG size = sizeof(info);
        ASSERT_EQ(a->Dispatch->NdkQueryAdapterInfo(a, &info, &size), STATUS_SUCCESS);
        EXPECT_EQ(info.MaxInitiatorQueueDepth, floor_pow2(100));
        EXPECT_EQ(info.MaxReceiveQueueDepth, floor_pow2(100));
        EXPECT_EQ(info.MaxCqDepth, floor_pow2(100));
        EXPECT_EQ(info.MaxSrqDepth, floor_pow2(100));

        NTSTATUS st;
        NDK_PD* pd = create<NDK_PD>(
            [&](auto cb, auto* r, NDK_PD** out) { return a->Dispatch->NdkCreatePd(a, cb, r, out); },
            &st);
        ASSERT_EQ(st, STATUS_SUCCESS);
        auto make_cq = [&](ULONG depth, NTSTATUS* returned) {
            return create<NDK_CQ>(
                [&](auto cb, auto* r, NDK_CQ** out) {
                    *returned =
                        a->Dispatch->NdkCreateCq(a, depth, nullptr, nullptr, nullptr, cb, r, out);
                    return *returned;
                },
                &st);
        };
        NTSTATUS returned;
        NDK_CQ* cq = make_cq(info.MaxCqDepth, &returned);
        EXPECT_EQ(st, STATUS_SUCCESS) << ntstatus_name(st);
        ASSERT_NE(cq, nullptr);
        EXPECT_EQ(make_cq(info.MaxCqDepth + 1, &returned), nullptr);
        EXPECT_EQ(returned, STATUS_INVALID_PARAMETER) << "inline, not through the completion";

        auto make_qp = [&](ULONG rq, ULONG sq, NTSTATUS* ret) {
            return create<NDK_QP>(
                [&](auto cb, auto* r, NDK_QP** out) {
                    *ret =
                        pd->Dispatch->NdkCreateQp(pd, cq, cq, nullptr, rq, sq, 1, 1, 0, cb, r, out);
                    return *ret;
                },
                &st);
        };
        const ULONG qd = info.MaxInitiatorQueueDepth;
        EXPECT_NE(make_qp(qd, qd, &returned), nullptr);
        EXPECT_EQ(st, STATUS_SUCCESS) << ntstatus_name(st);
        for (ULONG deeper : {qd + 1, ULONG{100}}) {
            EXPECT_EQ(make_qp(16, deeper, &returned), nullptr);
            EXPECT_EQ(returned, STATUS_INVALID_PARAMETER) << "SQ depth " << deeper;
            EXPECT_EQ(make_qp(deeper, 16, &returned), nullptr);
            EXPECT_EQ(returned, STATUS_INVALID_PARAMETER) << "RQ depth " << deeper;
        }

        auto make_srq = [&](ULONG depth, NTSTATUS* ret) {
            return create<NDK_SRQ>(
                [&](auto cb, auto* r, NDK_SRQ** out) {
                    *ret = pd->Dispatch->NdkCreateSrq(pd, depth, 1, 0, nullptr, nullptr, nullptr,
                                                      cb, r, out);
                    return *ret;
                },
                &st);
        };
        EXPECT_NE(make_srq(info.MaxSrqDepth, &returned), nullptr);
        EXPECT_EQ(st, STATUS_SUCCESS) << ntstatus_name(st);
        EXPECT_EQ(make_srq(info.MaxSrqDepth + 1, &returned), nullptr);
        EXPECT_EQ(returned, STATUS_INVALID_PARAMETER);
    });
    const scenario::run_result r = tb.run({5, ""});
    EXPECT_TRUE(r.passed()) << (r.failures.empty() ? "" : r.failures[0]);
}

TEST(Testbed, QueueDepthAtNonPowerOfTwoLimitAsync) {
    depth_limits(true);
}

TEST(Testbed, QueueDepthAtNonPowerOfTwoLimitSync) {
    depth_limits(false);
}

// Every node's adapter_params come from the scenario and the NIC's limits; the outputs are
// written like `rnicsim run`'s, the consumer's figures in the summary.
TEST(Testbed, ParamsFromTheScenarioAndOutputsLikeRun) {
    const json scenario = {
        {"rnic", {{"limits", {{"max_qps", 77}, {"max_sge", 5}}}}},
        {"topology",
         {{"nodes", json::array({{{"ip", "10.1.2.3"}, {"mtu", 2048}}, {{"ip", "10.1.2.4"}}})}}}};
    testbed tb(scenario, {"workload.retry_count=3"});
    ASSERT_EQ(tb.node_count(), 2u);
    for (size_t i = 0; i < tb.node_count(); ++i) {
        tb.spawn(i, "node" + std::to_string(i), [i](node_env& n) {
            const ndk::adapter_params& p = n.adapter_params();
            EXPECT_EQ(p.node_id, i);
            EXPECT_EQ(p.limits.max_qps, 77u);
            EXPECT_EQ(p.limits.max_sge, 5u);
            EXPECT_EQ(p.ip, i == 0 ? 0x0A010203u : 0x0A010204u);
            EXPECT_EQ(p.mac, n.config().topology.nodes[i].mac);
            EXPECT_EQ(p.retry_count, 3);
            if (i == 0) {
                EXPECT_EQ(p.default_mtu, 2048u);
                EXPECT_EQ(n.ip_of(1), 0x0A010204u);
                n.report(10, 10000, 1000);  // 10 kB in 1 us: 80 Gb/s
            }
            sc_core::wait(sc_core::sc_time(3, sc_core::SC_US));
        });
    }
    const std::string out = ::testing::TempDir() + "testbed_outputs";
    std::filesystem::remove_all(out);
    const scenario::run_result r = tb.run({1, out});
    EXPECT_TRUE(r.passed());
    EXPECT_EQ(r.simulated_ns, 3000u);  // the simulation stops when the last thread returns
    std::ifstream f(out + "/stats.json");
    ASSERT_TRUE(f.good());
    const json stats = json::parse(f);
    EXPECT_EQ(stats["summary"]["messages"], 10);
    EXPECT_DOUBLE_EQ(stats["summary"]["goodput_gbps"].get<double>(), 80.0);
    EXPECT_TRUE(stats["blocks"].contains("node1.nic.doorbell"));
    EXPECT_TRUE(std::filesystem::exists(out + "/config.json"));
    EXPECT_TRUE(std::filesystem::exists(out + "/speed.json"));
}

// A thread still waiting at the time limit fails the run, named; wait_until gives up at its
// deadline; a consumer's own failure is reported with its thread's name.
TEST(Testbed, TimeLimitNamesTheStuckThreadAndWaitsTimeOut) {
    testbed tb(json::object());
    sc_core::sc_event never;
    tb.spawn(0, "waiter", [&never](node_env& n) {
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        EXPECT_FALSE(wait_until([] { return false; }, never, sc_core::sc_time(7, sc_core::SC_US)));
        EXPECT_EQ(sc_core::sc_time_stamp() - t0, sc_core::sc_time(7, sc_core::SC_US));
        request req;
        EXPECT_EQ(req.wait(STATUS_PENDING, sc_core::sc_time(1, sc_core::SC_US)), STATUS_IO_TIMEOUT);
        n.fail("checked the timeouts");
    });
    tb.spawn(1, "stuck", [&never](node_env&) { sc_core::wait(never); });
    const scenario::run_result r = tb.run({0.5, ""});
    ASSERT_EQ(r.failures.size(), 2u);
    EXPECT_EQ(r.failures[0], "waiter: checked the timeouts");
    EXPECT_NE(r.failures[1].find("'stuck' still running at the time limit (0.5 ms"),
              std::string::npos)
        << r.failures[1];
    EXPECT_EQ(r.simulated_ns, 500000u);
}

// A bad scenario is a config error naming its JSON path, before anything is elaborated.
TEST(Testbed, BadScenarioIsAConfigErrorWithItsPath) {
    try {
        testbed tb(json{{"rnic", {{"pcie", {{"lanes", 12}}}}}});
        FAIL() << "accepted";
    } catch (const config::config_error& e) {
        ASSERT_FALSE(e.errors.empty());
        EXPECT_EQ(e.errors[0].rfind("rnic.pcie.lanes", 0), 0u) << e.errors[0];
    }
    EXPECT_THROW(testbed::from_file("/nonexistent/scenario.json"), config::config_error);
    // The scenario's own workload is checked against the depths the driver offers.
    try {
        testbed tb(json{{"rnic", {{"limits", {{"max_qp_depth", 100}}}}},
                        {"workload", {{"queue_depth", 80}}}});
        FAIL() << "accepted";
    } catch (const config::config_error& e) {
        ASSERT_EQ(e.errors.size(), 1u);
        EXPECT_EQ(e.errors[0],
                  "workload.queue_depth: 80 exceeds rnic.limits.max_qp_depth 100 as "
                  "usable (a power of two): 64");
    }
    testbed tb(json::object());
    EXPECT_THROW(tb.spawn(2, "x", [](node_env&) {}), std::out_of_range);
}

}  // namespace
}  // namespace rnic::testbed
