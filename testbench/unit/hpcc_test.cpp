// SPDX-License-Identifier: Apache-2.0
// HPCC, unit level (no simulation): the INT hop record's encoding (field widths and units of
// the authors' ns-3 int-header.h) and Algorithm 1 of Li et al. (SIGCOMM 2019) step by step
// against values worked out by hand in the comments (MeasureInflight, ComputeWind, NewAck).
#include "hw/cc/hpcc.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hw/cc/registry.h"
#include "hw/roce/roce.h"
#include "hw/roce/telemetry.h"

#include <zlib.h>

namespace {

using namespace rnic::hw::cc;
using namespace rnic::roce;
using nlohmann::json;

constexpr uint64_t LINE = 100'000;  // Mb/s

hpcc make(const json& keys = json::object(), uint64_t line = LINE) {
    rnic::config::parse_context pc;
    const hpcc_config c = parse_hpcc_config(rnic::config::reader(keys, "rnic.cc.hpcc", pc));
    pc.throw_if_errors();
    cc_env env;
    env.line_rate_mbps = line;
    return hpcc(c, env);
}

// One hop record from its fields in wire units (100G: bytes in 512 B, qlen in 320 B).
uint64_t hop(uint64_t rate, uint64_t ns, uint64_t bytes, uint64_t qlen) {
    return int_encode_hop(rate, ns, bytes, qlen);
}

cc_event ack(uint32_t psn, uint32_t next_psn, std::vector<uint64_t> hops) {
    cc_event e;
    e.kind = cc_event_kind::ACK;
    e.psn = psn;
    e.next_psn = next_psn;
    for (size_t i = 0; i < hops.size(); ++i) {
        e.telemetry.hop[i] = hops[i];
    }
    e.telemetry.nhop = static_cast<uint8_t>(hops.size());
    return e;
}

// --- the hop record ---------------------------------------------------------------------------

// 100G: code 2, byte unit 128 x 4 = 512, qlen unit 80 x 4 = 320 (int-header.h with INT_MULTI =
// bw / 25 = 4, as run.py sets it at 100G). 1,000,000 bytes = 1953 units (999,936 B), qlen
// 50,000 B = 156 units (49,920 B); time 20,000,000 ns mod 2^24 = 3,222,784.
TEST(HpccInt, HopRecordFieldsAndUnits) {
    const uint64_t w = int_encode_hop(100000, 20'000'000, 1'000'000, 50'000);
    EXPECT_EQ(w >> 61, 2u);
    const int_hop h = int_decode_hop(w);
    EXPECT_EQ(h.rate_mbps, 100000u);
    EXPECT_EQ(h.time_ns, 3'222'784u);
    EXPECT_EQ(h.bytes, 1953u);
    EXPECT_EQ(h.byte_unit, 512u);
    EXPECT_EQ(h.qlen, 156u);
    EXPECT_EQ(h.qlen_bytes(), 49'920u);
    // 25G: the authors' units themselves (128 B, 80 B); qlen saturates at 2^17 - 1 units.
    const int_hop q = int_decode_hop(int_encode_hop(25000, 0, 128, 80ull << 20));
    EXPECT_EQ(q.byte_unit, 128u);
    EXPECT_EQ(q.bytes, 1u);
    EXPECT_EQ(q.qlen, (1u << 17) - 1);
    EXPECT_EQ(int_rate_code(100000), 2);
    EXPECT_EQ(int_rate_code(40000), 6);
    EXPECT_EQ(int_rate_code(56000), -1);
    EXPECT_EQ(int_encode_hop(56000, 1, 1, 1), 0u);
}

// Deltas wrap with the fields: time 2^24 - 500 -> 500 is 1000 ns; bytes 2^20 - 2 -> 3 units is
// 5 units (2560 B at 100G).
TEST(HpccInt, DeltasWrapWithTheFieldWidths) {
    const int_hop a =
        int_decode_hop(int_encode_hop(100000, (1u << 24) - 500, ((1u << 20) - 2) * 512ull, 0));
    const int_hop b =
        int_decode_hop(int_encode_hop(100000, (1u << 24) + 500, ((1u << 20) + 3) * 512ull, 0));
    EXPECT_EQ(int_time_delta_ns(b, a), 1000u);
    EXPECT_EQ(int_bytes_delta(b, a), 2560u);
}

TEST(HpccInt, StackRoundTrip) {
    int_stack s;
    s.nhop = 3;
    s.hop = {0x0123456789ABCDEFull, 2, 3, 0, 0};
    uint8_t buf[INT_STACK_BYTES];
    int_write_stack(s, buf);
    EXPECT_EQ(buf[0], INT_TYPE_HPCC);
    EXPECT_EQ(buf[1], 3);
    EXPECT_EQ(buf[4], 0x01);  // network order
    EXPECT_EQ(buf[11], 0xEF);
    int_stack r;
    ASSERT_TRUE(int_read_stack(buf, r));
    EXPECT_EQ(r.nhop, 3);
    EXPECT_EQ(r.hop, s.hop);
    buf[0] = 0;
    EXPECT_FALSE(int_read_stack(buf, r));
}

// --- on the wire -----------------------------------------------------------------------------

// A WRITE Only of 1001 bytes with an INT stack: 3 pad bytes, then the 44-byte stack, then the
// ICRC. The ICRC recomputed here independently (zlib, IBA A17 masking, the stack read as ones)
// matches; two switches push their records: the ICRC still matches, parse_frame returns the
// stack and the payload without it.
uint32_t reference_icrc(const std::vector<uint8_t>& f) {
    std::vector<uint8_t> m(8, 0xFF);
    m.insert(m.end(), f.begin() + 14, f.end() - 4);
    for (size_t off : {1, 8, 10, 11, 26, 27, 32}) {  // TOS, TTL, IP csum, UDP csum, BTH byte 4
        m[8 + off] = 0xFF;
    }
    if (m[8 + 28 + 8] & BTH8_INT_FLAG) {
        std::fill(m.end() - INT_STACK_BYTES, m.end(), 0xFF);
    }
    return static_cast<uint32_t>(crc32(0, m.data(), static_cast<uInt>(m.size())));
}
uint32_t wire_icrc(const std::vector<uint8_t>& f) {
    const size_t n = f.size();
    return uint32_t{f[n - 4]} | uint32_t{f[n - 3]} << 8 | uint32_t{f[n - 2]} << 16 |
           uint32_t{f[n - 1]} << 24;
}

TEST(HpccWire, StackBeforeIcrcSwitchesKeepItValid) {
    frame_header h;
    h.src_ip = 0x0A000001;
    h.dst_ip = 0x0A000002;
    h.bth_.opcode = RC_WRITE_ONLY;
    h.bth_.dest_qp = 0x12;
    h.bth_.psn = 77;
    h.reth_.dma_length = 1001;
    h.telemetry = true;
    std::vector<uint8_t> payload(1001, 0xAB);
    std::vector<uint8_t> f;
    build_frame(h, payload.data(), payload.size(), f);
    ASSERT_EQ(f.size(), frame_bytes(RC_WRITE_ONLY, 1001) + INT_STACK_BYTES);
    EXPECT_EQ(f[42 + 8] & BTH8_INT_FLAG, BTH8_INT_FLAG);
    const size_t off = int_stack_offset(f.data(), f.size());
    ASSERT_EQ(off, f.size() - 4 - INT_STACK_BYTES);
    EXPECT_EQ(f[off], INT_TYPE_HPCC);
    EXPECT_EQ(f[off + 1], 0);  // no hop yet
    EXPECT_EQ(wire_icrc(f), reference_icrc(f));
    ASSERT_TRUE(int_push_hop(f.data(), f.size(), hop(LINE, 123, 4096, 640)));
    ASSERT_TRUE(int_push_hop(f.data(), f.size(), hop(25000, 456, 128, 80)));
    EXPECT_EQ(wire_icrc(f), reference_icrc(f));
    parsed_frame p;
    ASSERT_EQ(parse_frame(f.data(), f.size(), p), parse_error::NONE);
    EXPECT_EQ(p.payload_len, 1001u);
    EXPECT_TRUE(p.hdr.telemetry);
    EXPECT_EQ(p.hdr.int_.nhop, 2);
    EXPECT_EQ(int_decode_hop(p.hdr.int_.hop[0]).time_ns, 123u);
    EXPECT_EQ(int_decode_hop(p.hdr.int_.hop[1]).rate_mbps, 25000u);
    // A flipped flag is a bad ICRC (the flag's byte is covered), not a misread stack.
    f[42 + 8] ^= BTH8_INT_FLAG;
    EXPECT_EQ(parse_frame(f.data(), f.size(), p), parse_error::BAD_ICRC);
    f[42 + 8] ^= BTH8_INT_FLAG;
    // Five hops fill the stack; a sixth is not recorded.
    for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(int_push_hop(f.data(), f.size(), hop(LINE, 1, 1, 1)));
    }
    EXPECT_FALSE(int_push_hop(f.data(), f.size(), hop(LINE, 1, 1, 1)));
    EXPECT_EQ(parse_frame(f.data(), f.size(), p), parse_error::NONE);
    EXPECT_EQ(p.hdr.int_.nhop, 5);
    // An ACK reflecting the stack: AETH, then the stack; no payload.
    frame_header a;
    a.bth_.opcode = RC_ACK;
    a.telemetry = true;
    a.int_ = p.hdr.int_;
    std::vector<uint8_t> af;
    build_frame(a, nullptr, 0, af);
    EXPECT_EQ(af.size(), frame_bytes(RC_ACK, 0) + INT_STACK_BYTES);
    EXPECT_EQ(wire_icrc(af), reference_icrc(af));
    ASSERT_EQ(parse_frame(af.data(), af.size(), p), parse_error::NONE);
    EXPECT_EQ(p.payload_len, 0u);
    EXPECT_EQ(p.hdr.int_.hop, a.int_.hop);
    // Without the flag nothing changes: no stack, the frame of before.
    std::vector<uint8_t> plain;
    h.telemetry = false;
    build_frame(h, payload.data(), payload.size(), plain);
    EXPECT_EQ(plain.size(), frame_bytes(RC_WRITE_ONLY, 1001));
    EXPECT_EQ(int_stack_offset(plain.data(), plain.size()), 0u);
    EXPECT_FALSE(int_push_hop(plain.data(), plain.size(), hop(LINE, 1, 1, 1)));
}

// --- Algorithm 1 ------------------------------------------------------------------------------

// Defaults at 100G with T = 10 us: W_init = 100000 Mb/s x 10 us / 8 = 125,000 B; W_AI = R_AI T
// with R_AI = 10 Mb/s per 25 Gb/s = 40 Mb/s: 40 x 10 / 8 = 50 B; the floor 1000 Mb/s x 10 us / 8
// = 1250 B.
TEST(Hpcc, DerivedWindows) {
    hpcc h = make();
    EXPECT_EQ(h.w_init_bytes(), 125'000u);
    EXPECT_EQ(h.w_ai_bytes(), 50u);
    EXPECT_EQ(make({{"w_ai_bytes", 80}}).w_ai_bytes(), 80u);
    EXPECT_EQ(make({}, 25000).w_init_bytes(), 31'250u);
    EXPECT_EQ(make({}, 25000).w_ai_bytes(), 13u);  // 10 Mb/s x 10 us / 8 = 12.5
    EXPECT_TRUE(h.wants_telemetry());
    EXPECT_EQ(h.ack_segment_bytes(), 1u);
    EXPECT_EQ(h.notification_point(), nullptr);
}

// One hop at 100G (B = 12.5 B/ns, B T = 125,000 B), eta 0.95, maxStage 5, W_AI 50 B.
// ACK1 (psn 5, snd_nxt 10): the first telemetry: L stored, lastUpdateSeq = 10, no decision.
// ACK2 (psn 10 >= 10: full update, snd_nxt 20): ts 1000 -> 6000 (tau 5000 ns), txBytes +125
//   units = 64,000 B: txRate 12.8 B/ns, 1.024 B; qlen 200 -> 150 units (64,000 -> 48,000 B):
//   min 48,000 / 125,000 = 0.384; u = 1.408. U = 0.5 x 0 + 0.5 x 1.408 = 0.704 < eta, stage 0:
//   W = W_c + W_AI = 125,050, bounded by W_init: 125,000; W_c = 125,000, stage 1,
//   lastUpdateSeq = 20. R = W / T = line rate.
// ACK3 (psn 12 < 20: fast reaction, snd_nxt 22): tau 5000, +125 units: 1.024; qlen 150 -> 250
//   units: min 48,000: 0.384; u = 1.408; U = 0.5 x 0.704 + 0.5 x 1.408 = 1.056 >= eta:
//   W = W_c / (U / eta) + W_AI = 125,000 x 0.95 / 1.056 + 50 = 112,502.65 -> 112,502;
//   W_c and stage unchanged. R = 112,502 B / 10 us = 90,001.6 Mb/s -> 90,002.
// ACK4 (psn 20 >= 20: update, snd_nxt 30): tau 2000, +50 units = 25,600 B: 12.8 B/ns: 1.024;
//   qlen 250 -> 0: min 0; u = 1.024; U = 0.8 x 1.056 + 0.2 x 1.024 = 1.0496:
//   W = 118,750 / 1.0496 + 50 = 113,188.34 -> 113,188 = W_c, stage 0. R = 90,550.4 -> 90,550.
// ACK5 (psn 30, update, snd_nxt 40): tau 10,000 (= T: weight 1), +100 units = 51,200 B:
//   5.12 B/ns: u = 0.4096 = U < eta: W = 113,188 + 50 = 113,238 = W_c, stage 1. R = 90,590.
// ACK6..ACK9 (updates, the same load): W_c 113,288, 113,338, 113,388, 113,438, stage 2..5.
// ACK10: stage 5 >= maxStage: W = 113,438 / (0.4096 / 0.95) + 50 = 263,148 -> W_init 125,000,
//   stage 0: back at line rate.
TEST(Hpcc, AlgorithmOneByHand) {
    hpcc h = make({{"base_rtt_us", 10.0}});
    cc_qp_state s;
    EXPECT_FALSE(h.on_event(s, ack(5, 10, {hop(LINE, 1000, 0, 200 * 320)})).rate_mbps);
    cc_decision d = h.on_event(s, ack(10, 20, {hop(LINE, 6000, 125 * 512, 150 * 320)}));
    EXPECT_EQ(*d.rate_mbps, LINE);
    EXPECT_EQ(*d.window_bytes, 125'000u);
    EXPECT_EQ(*d.alpha, 721u);  // U x 1024 = 720.9
    EXPECT_EQ(slice<hpcc_state>(s).inc_stage, 1);
    d = h.on_event(s, ack(12, 22, {hop(LINE, 11000, 250 * 512, 250 * 320)}));
    EXPECT_EQ(*d.window_bytes, 112'502u);
    EXPECT_EQ(*d.rate_mbps, 90'002u);
    EXPECT_EQ(*d.target_mbps, LINE);  // W_c / T: unchanged by a fast reaction
    EXPECT_EQ(*d.alpha, 1081u);
    EXPECT_EQ(slice<hpcc_state>(s).wc_bytes, 125'000u);
    EXPECT_EQ(slice<hpcc_state>(s).inc_stage, 1);
    d = h.on_event(s, ack(20, 30, {hop(LINE, 13000, 300 * 512, 0)}));
    EXPECT_EQ(*d.window_bytes, 113'188u);
    EXPECT_EQ(*d.rate_mbps, 90'550u);
    EXPECT_EQ(slice<hpcc_state>(s).wc_bytes, 113'188u);
    EXPECT_EQ(slice<hpcc_state>(s).inc_stage, 0);
    uint64_t ts = 13000;
    uint64_t units = 300;
    const uint32_t want[] = {113'238, 113'288, 113'338, 113'388, 113'438};
    for (int i = 0; i < 5; ++i) {
        ts += 10000;
        units += 100;
        d = h.on_event(s, ack(30 + 10 * i, 40 + 10 * i, {hop(LINE, ts, units * 512, 0)}));
        EXPECT_EQ(*d.window_bytes, want[i]) << "update " << i;
        EXPECT_EQ(slice<hpcc_state>(s).inc_stage, i + 1);
    }
    EXPECT_EQ(*d.rate_mbps, 90'750u);  // 113,438 x 0.8 = 90,750.4
    d = h.on_event(s, ack(80, 90, {hop(LINE, ts + 10000, (units + 100) * 512, 0)}));
    EXPECT_EQ(*d.window_bytes, 125'000u);
    EXPECT_EQ(*d.rate_mbps, LINE);
    EXPECT_EQ(slice<hpcc_state>(s).inc_stage, 0);
}

// Two hops: the most loaded one sets u and tau. Hop 0 (100G) idle-ish: tau 4000, +10 units =
// 5120 B: 1.28 B/ns / 12.5 = 0.1024. Hop 1 (25G: B = 3.125 B/ns, B T = 31,250 B, units 128 B /
// 80 B) tau 2000: +50 units = 6400 B: 3.2 B/ns: 1.024; qlen 250 -> 300 units (20,000 -> 24,000
// B): min 20,000 / 31,250 = 0.64; u = 1.664, tau 2000: U = 0.2 x 1.664 = 0.3328 < eta:
// W = 125,000 + 50 -> 125,000 (the NIC's W_init bounds it). Next ACK (fast): hop 1 tau 8000,
// +200 units = 25,600 B: 3.2 B/ns: 1.024; qlen min(24,000, 24,000) = 0.768; u = 1.792;
// U = 0.2 x 0.3328 + 0.8 x 1.792 = 1.5002: W = 125,000 / (1.50016 / 0.95) + 50 = 79,208.7 ->
// 79,208 (W_c 125,000 from the update before).
TEST(Hpcc, TheMostLoadedHopSetsU) {
    hpcc h = make();
    cc_qp_state s;
    h.on_event(s, ack(0, 1, {hop(LINE, 0, 0, 0), hop(25000, 100, 0, 250 * 80)}));
    cc_decision d = h.on_event(
        s, ack(1, 2, {hop(LINE, 4000, 10 * 512, 0), hop(25000, 2100, 50 * 128, 300 * 80)}));
    EXPECT_EQ(*d.window_bytes, 125'000u);
    EXPECT_EQ(*d.alpha, 341u);  // 0.3328 x 1024 = 340.8
    d = h.on_event(
        s, ack(1, 3, {hop(LINE, 8000, 20 * 512, 0), hop(25000, 10100, 250 * 128, 300 * 80)}));
    EXPECT_EQ(*d.window_bytes, 79'208u);
    EXPECT_EQ(*d.rate_mbps, 63'366u);  // 79,208 x 0.8 = 63,366.4
}

// tau beyond T counts as T (weight 1); the floor: a hop far above eta takes W to
// min_rate x T = 1250 B (1000 Mb/s).
TEST(Hpcc, FloorAndTauBoundedByT) {
    hpcc h = make();
    cc_qp_state s;
    h.on_event(s, ack(0, 1, {hop(LINE, 0, 0, 100000 * 320)}));
    // tau 50,000 ns > T: U = u = 100,000 units x 320 B / 125,000 + 12.8 B/ns -> 256 + 0.2 (+64,000
    // B in 50 us = 1.28 B/ns / 12.5 = 0.1024): W = 125,000 / (256.1024 / 0.95) + 50 = 513.7: floor.
    const cc_decision d = h.on_event(s, ack(1, 2, {hop(LINE, 50000, 125 * 512, 100000 * 320)}));
    EXPECT_EQ(*d.window_bytes, 1250u);
    EXPECT_EQ(*d.rate_mbps, 1000u);
    EXPECT_NEAR(slice<hpcc_state>(s).u, 256.1024, 1e-9);
}

// Events without telemetry (a CNP, a timer, an ACK whose stack is empty) change nothing; the
// update test runs on PSNs modulo 2^24.
TEST(Hpcc, NoTelemetryNoChangeAndPsnWrap) {
    hpcc h = make();
    cc_qp_state s;
    cc_event cnp;
    cnp.kind = cc_event_kind::CNP;
    EXPECT_FALSE(h.on_event(s, cnp).rate_mbps);
    EXPECT_FALSE(h.on_event(s, ack(1, 2, {})).rate_mbps);
    h.on_event(s, ack(0xFFFFF0, 0xFFFFFE, {hop(LINE, 0, 0, 0)}));
    // psn 0x000002 is past snd_nxt 0xFFFFFE (mod 2^24): a full update. Load 51,200 B in T:
    // U = 0.4096 < eta: additive, stage 1.
    h.on_event(s, ack(0x000002, 0x000010, {hop(LINE, 10000, 100 * 512, 0)}));
    EXPECT_EQ(slice<hpcc_state>(s).last_update_psn, 0x000010u);
    EXPECT_EQ(slice<hpcc_state>(s).inc_stage, 1);
}

std::string config_error(const json& keys) {
    rnic::config::parse_context pc;
    parse_cc_config(rnic::config::reader(keys, "rnic.cc", pc));
    return pc.errors.empty() ? "" : pc.errors.front();
}

TEST(Hpcc, ConfigKeysAndErrors) {
    EXPECT_EQ(config_error({{"algorithm", "hpcc"}}), "");
    EXPECT_EQ(config_error({{"hpcc", {{"eta", 1.5}}}}),
              "rnic.cc.hpcc.eta: 1.5 out of range [0.01, 1.0]");
    EXPECT_EQ(config_error({{"hpcc", {{"w_ai", 1}}}}), "rnic.cc.hpcc.w_ai: unknown key");
}

}  // namespace
