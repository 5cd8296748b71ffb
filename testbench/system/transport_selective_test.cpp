// SPDX-License-Identifier: Apache-2.0
// Selective repeat for RC (issue 18: rnic.transport.recovery = "selective_repeat", after IRN,
// Mittal et al., SIGCOMM 2018). The responder keeps WRITE packets past its expected PSN within a
// bitmap window (placed directly, at the offset their PSN implies) and NAKs each gap once; the
// requester resends only the packet a selective NAK names. Checked against the rules, not
// against the simulator's own output:
//  - every message arrives exactly once, intact, completions in posting order (the workload
//    checks every byte and every CQE);
//  - with loss on requests only (ACK/NAKs intact) and no timer expiry, each lost request packet
//    is sent again exactly once: retransmitted packets = request packets dropped on the wire
//    (IRN: a NAK-recovered loss costs one packet); with timer expiries, at most
//    queue_depth x packets-per-message more per expiry (a timeout goes back from the first
//    unacknowledged PSN);
//  - go-back-N resends at least the rest of the message from every NAKed PSN, so at 1 % loss
//    selective repeat resends fewer packets, and by the bound above.
//
// One elaboration per process: ctest runs each TEST as its own process.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hw/common/config_reader.h"
#include "testbench/system/transport_bench.h"

namespace rnic::transport_test {
namespace {

json selective(uint32_t window = 256) {
    return {{"rnic", {{"transport", {{"recovery", "selective_repeat"}, {"sr_window", window}}}}},
            {"topology", {{"nodes", json::array({{{"mtu", 256}}, {{"mtu", 256}}})}}}};
}

json go_back_n_small_mtu() {
    return {{"topology", {{"nodes", json::array({{{"mtu", 256}}, {{"mtu", 256}}})}}}};
}

std::vector<std::string> errors_of(const json& doc) {
    try {
        scenario::parse_scenario(doc);
    } catch (const config::config_error& e) {
        return e.errors;
    }
    return {};
}

// --- configuration -----------------------------------------------------------------------------

TEST(TransportSelective, RefusedWithTheRtlSendPath) {
    // The RTL send path's pins carry whole messages only (rtl/send_path/CONTRACT.md).
    for (const char* impl : {"rtl", "lockstep"}) {
        const auto errs = errors_of({{"rnic",
                                      {{"transport", {{"recovery", "selective_repeat"}}},
                                       {"send_path", {{"impl", impl}}}}}});
        ASSERT_EQ(errs.size(), 1u) << impl;
        EXPECT_EQ(errs[0].rfind("rnic.transport.recovery:", 0), 0u) << errs[0];
        EXPECT_NE(errs[0].find("impl \"model\""), std::string::npos) << errs[0];
    }
    // go_back_n (the default) runs on the RTL as before.
    EXPECT_TRUE(errors_of({{"rnic",
                            {{"transport", {{"recovery", "go_back_n"}}},
                             {"send_path", {{"impl", "rtl"}}}}}})
                    .empty());
}

TEST(TransportSelective, KeysAreValidated) {
    auto errs = errors_of({{"rnic", {{"transport", {{"recovery", "irn"}}}}}});
    ASSERT_EQ(errs.size(), 1u);
    EXPECT_EQ(errs[0].rfind("rnic.transport.recovery:", 0), 0u) << errs[0];
    errs = errors_of({{"rnic", {{"transport", {{"sr_window", 1}}}}}});
    ASSERT_EQ(errs.size(), 1u);
    EXPECT_EQ(errs[0].rfind("rnic.transport.sr_window:", 0), 0u) << errs[0];
    errs = errors_of({{"rnic", {{"transport", {{"window", 64}}}}}});
    ASSERT_EQ(errs.size(), 1u);
    EXPECT_EQ(errs[0].rfind("rnic.transport.window:", 0), 0u) << errs[0];
}

// --- the responder's window and the requester's resends ----------------------------------------

// 64 KiB WRITEs (256 packets at MTU 256), only WRITE Middle packets lost, so every NAK and ACK
// reaches the requester.
scenario::run_result run_middles_lost(double drop, uint64_t seed, const json& extra,
                                      scenario::workload_config* w_out) {
    const json w = {{"operation", "write"}, {"message_bytes", 65536}, {"messages", 32},
                    {"qps", 4},             {"queue_depth", 2},       {"seed", 3},
                    {"timeout_log", 10},    {"time_limit_ms", 2000}};
    const json faults = {{"drop", drop}, {"opcode", roce::RC_WRITE_MIDDLE}, {"seed", seed}};
    const scenario::scenario_config cfg =
        scenario::parse_scenario(scenario_doc(w, faults, extra));
    *w_out = cfg.workload;
    return scenario::run_scenario(cfg);
}

TEST(TransportSelective, EachLostPacketIsResentOnce) {
    scenario::workload_config w;
    const scenario::run_result r = run_middles_lost(0.01, 11, selective(), &w);
    expect_clean_run(r, w);
    const uint64_t dropped = counter(r, "link.dir0", "faults_dropped");
    const uint64_t resent = counter(r, "node0.nic.tx_engine", "retransmitted_packets");
    const uint64_t timeouts = counter(r, "node0.nic.tx_engine", "timeouts");
    const uint64_t packets_per_message = 65536 / 256;
    ASSERT_GT(dropped, 20u);
    // Every lost packet goes again at least once; one each if NAKs did all the repairing, and a
    // timeout resends at most the unfinished messages from the first unacknowledged PSN.
    EXPECT_GE(resent, dropped);
    EXPECT_LE(resent, dropped + timeouts * w.queue_depth * packets_per_message)
        << resent << " resent, " << dropped << " dropped, " << timeouts << " timeouts";
    if (timeouts == 0) {
        EXPECT_EQ(resent, dropped);
    }
    // The responder kept what came after each gap and asked for the gap alone.
    const std::string rx = "node1.nic.recv_path";
    EXPECT_GT(counter(r, rx, "sr_ooo_placed"), 0u);
    EXPECT_GT(counter(r, rx, "sr_selective_naks"), 0u);
    EXPECT_EQ(counter(r, rx, "sr_window_drops"), 0u);
    // Every selective NAK the responder sent reached the requester (responses are not dropped)
    // and was acted on or found stale.
    EXPECT_EQ(counter(r, rx, "sr_selective_naks"),
              counter(r, "node0.nic.tx_engine", "selective_naks") +
                  counter(r, "node0.nic.tx_engine", "stale_naks"));
    // Each WRITE was executed once: 32 messages, every byte checked by the workload.
    EXPECT_EQ(counter(r, rx, "messages"), w.messages);
    std::cout << "selective: " << dropped << " dropped, " << resent << " resent, " << timeouts
              << " timeouts, " << counter(r, rx, "sr_ooo_placed") << " placed out of order\n";
}

TEST(TransportSelective, SmallWindowDropsAndStillCompletes) {
    // A window of 8 PSNs is far below what is in flight: packets past it are dropped
    // (sr_window_drops) and the next NAK is a go-back from the gap; every message still arrives
    // once.
    scenario::workload_config w;
    const scenario::run_result r = run_middles_lost(0.01, 12, selective(8), &w);
    expect_clean_run(r, w);
    EXPECT_GT(counter(r, "node1.nic.recv_path", "sr_window_drops"), 0u);
    EXPECT_GT(counter(r, "node1.nic.recv_path", "sr_goback_naks"), 0u);
    EXPECT_EQ(counter(r, "node1.nic.recv_path", "messages"), w.messages);
}

// --- goodput against go-back-N at 1 % loss, both directions, with reordering ------------------

scenario::run_result run_lossy(const json& extra, scenario::workload_config* w_out,
                               const std::string& op = "write") {
    const json w = {{"operation", op},  {"message_bytes", 65536}, {"messages", 64},
                    {"qps", 8},         {"queue_depth", 2},       {"seed", 4},
                    {"timeout_log", 10}, {"time_limit_ms", 5000}};
    const json faults = {{"drop", 0.01}, {"reorder", 0.01}, {"seed", 5}};
    const scenario::scenario_config cfg =
        scenario::parse_scenario(scenario_doc(w, faults, extra));
    *w_out = cfg.workload;
    return scenario::run_scenario(cfg);
}

TEST(TransportSelective, FewerResendsThanGoBackNAtOnePercentLoss) {
    scenario::workload_config w;
    const scenario::run_result sr = run_lossy(selective(), &w);
    expect_clean_run(sr, w);
    const scenario::run_result gbn = run_lossy(go_back_n_small_mtu(), &w);
    expect_clean_run(gbn, w);
    const std::string tx = "node0.nic.tx_engine";
    const uint64_t sr_resent = counter(sr, tx, "retransmitted_packets");
    const uint64_t gbn_resent = counter(gbn, tx, "retransmitted_packets");
    const uint64_t sr_dropped = counter(sr, "link.dir0", "faults_dropped");
    const uint64_t sr_reordered = counter(sr, "link.dir0", "faults_reordered");
    const uint64_t sr_timeouts = counter(sr, tx, "timeouts");
    // Selective repeat: one resend per request packet lost or overtaken (a reordered packet is
    // NAKed as a gap before it arrives; IRN resends it too), plus what timeouts resend.
    EXPECT_LE(sr_resent, sr_dropped + sr_reordered + sr_timeouts * w.queue_depth * 256)
        << sr_resent << " resent, " << sr_dropped << " dropped, " << sr_reordered
        << " reordered, " << sr_timeouts << " timeouts";
    // Go-back-N resends whole messages from the one holding each NAKed PSN: at 256 packets a
    // message, a loss costs on average about half a message. Selective repeat must be far below.
    EXPECT_LT(sr_resent * 4, gbn_resent) << sr_resent << " vs " << gbn_resent;
    EXPECT_GT(sr.goodput_gbps, gbn.goodput_gbps);
    std::cout << "1% loss+1% reorder, 64 KiB @ MTU 256: selective " << sr_resent
              << " resent, " << sr.goodput_gbps << " Gb/s; go-back-N " << gbn_resent
              << " resent, " << gbn.goodput_gbps << " Gb/s\n";
}

// --- soak: loss and reordering, every operation ------------------------------------------------

// configs/soak/soak_rc_scale.json (1 % drop and 1 % reordering both ways, MTU 256, 64 KiB) with
// selective repeat, cut down to 128 QPs x 2 messages.
void soak(uint64_t fault_seed, const std::string& operation) {
    const std::vector<std::string> overrides = {
        "workload.qps=128", "workload.messages=256", "workload.operation=" + operation,
        "rnic.transport.recovery=selective_repeat",
        "topology.link.faults.seed=" + std::to_string(fault_seed + seed_shift())};
    const scenario::scenario_config cfg =
        scenario::load_scenario(source_dir() + "/configs/soak/soak_rc_scale.json", overrides);
    const scenario::run_result r = scenario::run_scenario(cfg);
    expect_clean_run(r, cfg.workload);
    EXPECT_GT(link_counter(r, "faults_dropped"), 0u);
    EXPECT_GT(link_counter(r, "faults_reordered"), 0u);
    const expected_completions e = expected_of(cfg.workload);
    const uint64_t reads = e.messages_by_op[static_cast<int>(scenario::operation::READ)];
    EXPECT_EQ(counter(r, "node1.nic.recv_path", "messages"), cfg.workload.messages - reads);
    const std::string tx = "node0.nic.tx_engine";
    EXPECT_EQ(counter(r, tx, "recovery_failed"), 0u);
    EXPECT_EQ(counter(r, tx, "recovery_nak_episodes") + counter(r, tx, "recovery_timeout_episodes"),
              counter(r, tx, "recovered_by_nak") + counter(r, tx, "recovered_by_timeout"));
    std::cout << "selective soak " << operation << " seed " << fault_seed << ": "
              << counter(r, tx, "selective_naks") << " selective NAKs, "
              << counter(r, tx, "timeouts") << " timeouts, "
              << counter(r, tx, "retransmitted_packets") << " packets resent, "
              << counter(r, "node1.nic.recv_path", "sr_ooo_placed") << " placed out of order, "
              << r.goodput_gbps << " Gb/s\n";
}
TEST(TransportSelective, SoakWriteSeed5) {
    soak(5, "write");
}
TEST(TransportSelective, SoakWriteSeed6) {
    soak(6, "write");
}
TEST(TransportSelective, SoakMixedSeed8) {
    soak(8, "mixed");
}
TEST(TransportSelective, SoakSendSeed9) {
    soak(9, "send");
}

}  // namespace
}  // namespace rnic::transport_test
