// SPDX-License-Identifier: Apache-2.0
// The send path conformance stimulus (every opcode, sizes 0 to several MTUs, every header
// alignment and pad length, chunked and late payload, gaps) and the bench that runs the SystemC
// model and an RTL side by side on it, shared by the functional suite (conformance), the timing
// report (conformance_timing), the self-tests (conformance_self) and send_path_calibrate.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <systemc>

#include "hw/roce/roce.h"
#include "hw/send_path/send_path.h"
#include "hw/send_path/send_path_lockstep.h"
#include "hw/send_path/send_path_model.h"
#include "rtl/send_path/send_path_rtl.h"

namespace rnic::sptest {

using namespace rnic::hw;

constexpr double CLOCK_MHZ = 500.0;

// One message of stimulus: descriptor, payload, how it is chunked and when the chunks are in.
struct stim_message {
    tx_descriptor desc;
    std::vector<uint8_t> payload;
    std::vector<uint32_t> chunks;       // chunk sizes (sum = payload size)
    std::vector<uint32_t> ready_delay;  // per chunk: ready this many ns after its put
    uint32_t gap_ns = 0;                // idle time before the descriptor is put
};

inline tx_descriptor make_desc(tx_kind kind, uint32_t length, uint32_t psn, uint32_t pmtu) {
    tx_descriptor d;
    d.kind = kind;
    d.length = length;
    d.psn = psn & 0xFFFFFF;
    d.pmtu = pmtu;
    d.src_qpn = 0x1234 + psn % 7;
    d.dest_qpn = 0xABCDE - psn % 5;
    d.remote_va = 0x00007f0012340000ull + psn * 4096;
    d.rkey = 0xabcd0000u + psn;
    d.imm_or_key = 0x11223344u ^ psn;
    d.syndrome = psn % 3 ? roce::AETH_ACK_NO_CREDIT : roce::AETH_NAK_PSN_SEQ_ERROR;
    d.msn = psn * 3;
    d.src_mac = {0x02, 0, 0, 0, 0, 1};
    d.dst_mac = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(2 + psn % 3)};
    d.src_ip = 0xc0a80101;
    d.dst_ip = 0xc0a80102 + psn % 4;
    return d;
}

inline stim_message simple(tx_descriptor d, std::mt19937& rng) {
    stim_message m;
    m.desc = d;
    if (carries_payload(d)) {
        m.payload.resize(d.length);
        for (auto& b : m.payload) {
            b = static_cast<uint8_t>(rng());
        }
        if (d.length > 0) {
            m.chunks.push_back(d.length);
            m.ready_delay.push_back(0);
        }
    }
    return m;
}

// Every opcode and header length (54, 58, 70, 74 bytes: header mod 64 = 54, 58, 6, 10)
// with payload lengths covering every residue mod 64 (pad 0..3, ICRC in the same beat or
// spilling into the next), plus multi-packet messages at every path MTU.
inline std::vector<stim_message> directed_stimulus() {
    std::mt19937 rng(7);
    std::vector<stim_message> v;
    uint32_t psn = 0xFFFFF0;
    auto add = [&](tx_descriptor d) {
        v.push_back(simple(d, rng));
        psn += packet_count(d);
    };
    for (uint32_t len = 0; len <= 130; ++len) {
        add(make_desc(tx_kind::SEND, len, psn, 256));
        tx_descriptor imm = make_desc(tx_kind::SEND, len, psn, 256);
        imm.with_imm = true;
        imm.solicited = true;
        add(imm);
        tx_descriptor inv = make_desc(tx_kind::SEND, len, psn, 256);
        inv.with_inv = true;
        add(inv);
        add(make_desc(tx_kind::WRITE, len, psn, 256));
        tx_descriptor wimm = make_desc(tx_kind::WRITE, len, psn, 256);
        wimm.with_imm = true;
        add(wimm);
        add(make_desc(tx_kind::READ_RESPONSE, len, psn, 256));
    }
    add(make_desc(tx_kind::READ_REQUEST, 0, psn, 1024));
    add(make_desc(tx_kind::READ_REQUEST, 100000, psn, 1024));
    add(make_desc(tx_kind::ACK, 0, psn, 1024));
    for (uint32_t pmtu : {256u, 512u, 1024u, 2048u, 4096u}) {
        for (uint32_t len : {pmtu - 1, pmtu, pmtu + 1, 3 * pmtu + 5}) {
            for (tx_kind k : {tx_kind::SEND, tx_kind::WRITE, tx_kind::READ_RESPONSE}) {
                tx_descriptor d = make_desc(k, len, psn, pmtu);
                d.with_imm = k != tx_kind::READ_RESPONSE && len % 2 == 1;
                add(d);
            }
        }
    }
    return v;
}

// Random messages: kinds, flags, sizes 0..3 MTUs + 100, MTUs, chunking, late payload, gaps.
inline std::vector<stim_message> random_stimulus(uint32_t seed, size_t count) {
    std::mt19937 rng(seed);
    auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
    std::vector<stim_message> v;
    uint32_t psn = rng() & 0xFFFFFF;
    for (size_t i = 0; i < count; ++i) {
        const tx_kind k = static_cast<tx_kind>(pick(5));
        const uint32_t pmtu = 256u << pick(5);
        uint32_t len = 0;
        switch (pick(4)) {
            case 0:
                len = pick(130);
                break;
            case 1:
                len = pick(pmtu + 70);
                break;
            default:
                len = pick(3 * pmtu + 100);
                break;
        }
        tx_descriptor d = make_desc(k, len, psn, pmtu);
        d.with_imm = (k == tx_kind::SEND || k == tx_kind::WRITE) && pick(3) == 0;
        d.with_inv = k == tx_kind::SEND && !d.with_imm && pick(4) == 0;
        d.solicited = pick(2);
        d.ack_req = pick(4) != 0;
        stim_message m = simple(d, rng);
        if (!m.payload.empty()) {
            m.chunks.clear();
            m.ready_delay.clear();
            uint32_t left = len;
            while (left > 0) {
                const uint32_t c = std::min(left, 1 + pick(pick(2) ? 300 : 5000));
                m.chunks.push_back(c);
                m.ready_delay.push_back(pick(4) == 0 ? pick(400) : 0);
                left -= c;
            }
        }
        m.gap_ns = pick(5) == 0 ? pick(300) : 0;
        psn += packet_count(d);
        v.push_back(std::move(m));
    }
    return v;
}

inline size_t expected_beats(const std::vector<stim_message>& msgs) {
    size_t n = 0;
    for (const auto& m : msgs) {
        for (uint32_t p = 0; p < packet_count(m.desc); ++p) {
            n += plan_packet(m.desc, p).beats;
        }
    }
    return n;
}

inline size_t expected_frames(const std::vector<stim_message>& msgs) {
    size_t n = 0;
    for (const auto& m : msgs) {
        n += packet_count(m.desc);
    }
    return n;
}

inline void put_message(send_path_if& sp, const stim_message& m) {
    if (m.gap_ns > 0) {
        sc_core::wait(m.gap_ns, sc_core::SC_NS);
    }
    sp.put_descriptor(m.desc);
    size_t off = 0;
    for (size_t i = 0; i < m.chunks.size(); ++i) {
        payload_chunk c;
        c.bytes.assign(m.payload.begin() + static_cast<std::ptrdiff_t>(off),
                       m.payload.begin() + static_cast<std::ptrdiff_t>(off + m.chunks[i]));
        off += m.chunks[i];
        c.ready = sc_core::sc_time_stamp() + sc_core::sc_time(m.ready_delay[i], sc_core::SC_NS);
        sp.put_payload(std::move(c));
    }
}

inline bool always(uint64_t) {
    return true;
}

// The model timing to compare with: RNICSIM_SEND_PATH_TIMING="output_registers=3,header_edges=1"
// (what send_path_calibrate printed for the built-in RTL), else the defaults.
inline send_path_config model_timing_from_env() {
    send_path_config c;
    const char* env = std::getenv("RNICSIM_SEND_PATH_TIMING");
    std::string s = env != nullptr ? env : "";
    size_t pos = 0;
    while (pos < s.size()) {
        size_t end = s.find(',', pos);
        end = end == std::string::npos ? s.size() : end;
        const std::string kv = s.substr(pos, end - pos);
        const size_t eq = kv.find('=');
        if (eq != std::string::npos) {
            const std::string k = kv.substr(0, eq);
            const uint32_t v =
                static_cast<uint32_t>(std::strtoul(kv.c_str() + eq + 1, nullptr, 10));
            if (k == "header_edges")
                c.timing.header_edges = v;
            else if (k == "output_registers")
                c.timing.output_registers = v;
            else if (k == "frame_gap")
                c.timing.frame_gap = v;
            else if (k == "message_gap")
                c.timing.message_gap = v;
        }
        pos = end + 1;
    }
    return c;
}

// The model (reference; its timing from `ref_cfg.timing`) and an RTL (under test) side by
// side, each with its own output driven by the same ready pattern. Both comparisons run: the
// functional one (frame_comparator: what the conformance label checks) and the exact one
// (beat_comparator: every beat on the model's edge, what the timing report measures). The RTL
// records contract violations instead of stopping the run.
struct conformance_bench {
    conformance_bench(const rtl::send_path_core_factory& core, std::function<bool(uint64_t)> ready,
                      send_path_config cfg = {}, send_path_config ref_cfg_in = {})
        : clk("nic", CLOCK_MHZ)
        , ref_cfg(with_fifos(ref_cfg_in, cfg))
        , ref_out(clk)
        , dut_out(clk)
        , ref("ref", ref_cfg, clk, ref_out, ctx)
        , dut("dut", cfg, clk, dut_out, ctx, core) {
        ref_out.ready = ready;
        dut_out.ready = ready;
        dut.set_stop_on_violation(false);
        ref.set_beat_observer([this](const frame_beat& b) {
            exact.expected(b);
            frames.expected(b);
            if (b.index == 0) {
                ref_first_edges.push_back(b.cycle);
            }
        });
        dut.set_beat_observer([this](const frame_beat& b) {
            ++dut_beats;
            exact.actual(b);
            frames.actual(b);
            if (b.index == 0) {
                dut_first_edges.push_back(b.cycle);
            }
            last_dut_edge = b.cycle;
            dut_beat_edges.push_back(b.cycle);
        });
        // The RTL gets exactly what the model's FIFOs accept, when they accept it.
        ref.inputs().on_descriptor = [this](const tx_descriptor& d, uint64_t v) {
            desc_valid_edges.push_back(v);
            dut.inputs().mirror_descriptor(d, v);
        };
        ref.inputs().on_payload = [this](const uint8_t* p, size_t n, uint64_t v) {
            dut.inputs().mirror_payload(p, n, v);
        };
        dut_out.on_frame = [this](fabric::eth_frame&& f, uint64_t) {
            roce::parsed_frame p;
            if (roce::parse_frame(f.data.data(), f.data.size(), p) != roce::parse_error::NONE) {
                ++dut_bad_frames;
            }
            ++dut_frames;
        };
    }
    static send_path_config with_fifos(send_path_config r, const send_path_config& c) {
        r.desc_fifo_depth = c.desc_fifo_depth;
        r.payload_fifo_bytes = c.payload_fifo_bytes;
        return r;
    }

    void put(const stim_message& m) { put_message(ref, m); }

    // Runs `driver` as an SC_THREAD, then to starvation (or to `limit` if given).
    void run(std::function<void()> driver, sc_core::sc_time limit = sc_core::SC_ZERO_TIME) {
        sc_core::sc_spawn(std::move(driver), "driver");
        if (limit == sc_core::SC_ZERO_TIME) {
            sc_core::sc_start();
        } else {
            sc_core::sc_start(limit);
        }
        exact.finish();
        frames.finish();
    }
    void run_all(const std::vector<stim_message>& msgs) {
        run([this, &msgs] {
            for (const auto& m : msgs) {
                put(m);
            }
        });
    }

    // The functional verdict: every difference and violation printed, then a summary.
    bool functional_report(const std::string& what) const {
        for (const auto& d : frames.differences()) {
            std::cout << "[ conformance ] " << d.describe() << "\n";
        }
        for (const auto& v : dut.violation_log()) {
            std::cout << "[ conformance ] " << v << "\n";
        }
        std::cout << "[ conformance ] " << what << ": " << frames.summary() << "; "
                  << dut.rule_violations() << " contract violations, " << dut.malformed_frames()
                  << " malformed frames" << std::endl;
        return frames.differing() == 0 && dut.rule_violations() == 0;
    }

    sim_context ctx;
    clock_domain clk;
    send_path_config ref_cfg;
    pattern_output ref_out;
    pattern_output dut_out;
    send_path_model ref;
    rtl::send_path_rtl dut;
    beat_comparator exact;
    frame_comparator frames;
    std::vector<uint64_t> desc_valid_edges, ref_first_edges, dut_first_edges, dut_beat_edges;
    uint64_t dut_beats = 0;
    uint64_t dut_frames = 0;
    uint64_t dut_bad_frames = 0;
    uint64_t last_dut_edge = 0;
};

}  // namespace rnic::sptest
