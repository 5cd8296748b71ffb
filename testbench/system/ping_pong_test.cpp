// SPDX-License-Identifier: Apache-2.0
// workload.pattern "ping_pong" end to end (rnicsim run, wire.pcap): perftest's ib_send_lat
// exchange, read off the wire independently of the workload's own bookkeeping. On the link the
// SENDs must alternate (node 1's answer to message i after message i, node 0's message i + 1
// after answer i), every message and answer once; the latency the run reports (half of each
// round trip, post to the answer's receive completion) must cover what the wire shows of that
// round trip (the two SENDs' wire times) and not exceed the exchange's whole period (the next
// message leaves after the answer's completion).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/system/outputs_common.h"

namespace {

using namespace rnic::outputs_test;
using nlohmann::json;

constexpr int MESSAGES = 8;
constexpr uint8_t RC_SEND_ONLY = 0x04;  // IBA table 38: RC SEND Only
constexpr size_t BTH = 14 + 20 + 8;     // Ethernet, IPv4, UDP

TEST(PingPong, SendsAlternateOnTheWireAndTheLatencyIsHalfTheRoundTrip) {
    scratch s;
    const std::string out = s.path("pp");
    const run_outputs r = run_and_read(
        s, out,
        {"run", quickstart(), "--out", out, "--set", "workload.pattern=ping_pong", "--set",
         "workload.operation=send", "--set", "workload.messages=" + std::to_string(MESSAGES),
         "--set", "workload.message_bytes=32", "--set", "workload.inline_threshold=32", "--set",
         "workload.queue_depth=1", "--set", "outputs.pcap=true"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(r.stats["result"]["passed"].get<bool>());
    // The RC SENDs on the wire, in time order: (wire time, sender is node 0).
    std::vector<std::pair<uint64_t, bool>> sends;
    for (const auto& rec : r.pcap.records) {
        const auto& d = rec.data;
        if (d.size() > BTH && be16(d, 12) == 0x0800 && d[BTH] == RC_SEND_ONLY) {
            sends.emplace_back(rec.ns, d[11] == 0x01);  // source MAC 02:00:00:00:00:01
        }
    }
    ASSERT_EQ(sends.size(), 2u * MESSAGES);
    std::vector<double> wire_half;  // per exchange: (answer - message) on the wire / 2
    std::vector<double> period_half;
    for (size_t i = 0; i < sends.size(); ++i) {
        EXPECT_EQ(sends[i].second, i % 2 == 0)
            << "SEND " << i << " at " << sends[i].first << " ns: the two sides must alternate";
    }
    for (size_t k = 0; k + 1 < sends.size(); k += 2) {
        wire_half.push_back((sends[k + 1].first - sends[k].first) / 2.0);
        if (k + 2 < sends.size()) {
            period_half.push_back((sends[k + 2].first - sends[k].first) / 2.0);
        }
    }
    const json& lat = r.stats["summary"]["latency_ns"];
    EXPECT_EQ(lat["samples"].get<uint64_t>(), static_cast<uint64_t>(MESSAGES));
    std::sort(wire_half.begin(), wire_half.end());
    std::sort(period_half.begin(), period_half.end());
    const auto p50 = static_cast<double>(lat["p50"].get<uint64_t>());
    // The round trip a host sees holds the wire's part of it (plus the NICs and PCIe on both
    // ends) and is within the period from one message to the next on the wire.
    EXPECT_GT(p50, wire_half[wire_half.size() / 2]);
    EXPECT_LE(p50, period_half.back() + 1);
    EXPECT_GE(p50, period_half.front() - 1);
}

}  // namespace
