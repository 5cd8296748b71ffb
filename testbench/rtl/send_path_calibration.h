// SPDX-License-Identifier: Apache-2.0
// Calibration of the send path model's timing (rnic.send_path.timing) to an RTL: the RTL and
// one model per candidate parameter set run on the conformance stimulus with back-pressure;
// the candidate whose every frame beat leaves on the RTL's edge is the answer. If none does,
// the closest one and its first differing beat say which behaviour no parameter expresses.
// One SystemC simulation: call once per process (send_path_calibrate, the self-tests).
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "testbench/rtl/send_path_stimulus.h"

namespace rnic::sptest {

struct calibration_result {
    bool exact = false;
    send_path_timing timing;  // the matching (or closest) parameters
    uint64_t rtl_beats = 0;
    uint64_t matched_beats = 0;  // of the closest candidate, before its first divergence
    beat_divergence first;       // its first divergence (when not exact)
    uint64_t quiescent_edges_needed = 0;
    uint64_t rtl_violations = 0;
    std::vector<std::string> violation_log;

    // What to put in a scenario, or why nothing fits.
    std::string report() const {
        std::ostringstream o;
        o << "send path calibration: " << rtl_beats << " frame beats of the conformance stimulus\n";
        if (exact) {
            o << "the model matches the RTL on every beat with\n";
        } else {
            o << "NO parameter set makes the model match this RTL cycle for cycle; the closest ("
              << matched_beats << " of " << rtl_beats << " beats before its first difference) is\n";
        }
        o << "  --set rnic.send_path.timing.header_edges=" << timing.header_edges
          << " --set rnic.send_path.timing.output_registers=" << timing.output_registers
          << " --set rnic.send_path.timing.frame_gap=" << timing.frame_gap
          << " --set rnic.send_path.timing.message_gap=" << timing.message_gap << "\n";
        o << "  (first frame beat " << timing.first_beat_latency()
          << " edges after the descriptor; the contract's example: 4)\n";
        if (!exact) {
            o << "  first difference (model versus RTL): " << first.describe() << "\n"
              << "  the model cannot express this timing: use lockstep compare \"functional\" or"
                 " \"tolerance\", and tell the rnicsim maintainers which behaviour this is\n";
        }
        o << "quiescence: an output changed after up to " << quiescent_edges_needed
          << " edges without a handshake: --set rnic.send_path.rtl.quiescent_edges="
          << std::max<uint64_t>(4, quiescent_edges_needed)
          << " (or build with -DRNICSIM_SEND_PATH_RTL_QUIESCENT_EDGES="
          << std::max<uint64_t>(4, quiescent_edges_needed) << ")\n";
        if (rtl_violations > 0) {
            o << "the RTL broke contract rules " << rtl_violations
              << " times, first: " << (violation_log.empty() ? "" : violation_log.front()) << "\n";
        }
        return o.str();
    }
};

inline calibration_result calibrate(const rtl::send_path_core_factory& core) {
    struct candidate {
        send_path_timing timing;
        std::unique_ptr<pattern_output> out;
        std::unique_ptr<send_path_model> model;
        beat_comparator cmp;
    };
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    // Back-pressure in bursts and single edges, so that recovery and hold behaviour count.
    auto ready = [](uint64_t e) { return e % 311 >= 23 && e % 7 != 3; };
    send_path_config cfg;
    pattern_output src_out(clk);
    src_out.ready = ready;
    send_path_model src("source", cfg, clk, src_out, ctx);  // paces the inputs only
    send_path_config rtl_cfg = cfg;
    rtl_cfg.rtl.clock = "free";  // every edge: the quiescence window is measured, not assumed
    pattern_output rtl_out(clk);
    rtl_out.ready = ready;
    rtl::send_path_rtl dut("dut", rtl_cfg, clk, rtl_out, ctx, core);
    dut.set_stop_on_violation(false);
    std::vector<std::unique_ptr<candidate>> cands;
    for (uint32_t h = 1; h <= 3; ++h) {
        for (uint32_t r = 1; r <= 8; ++r) {
            for (uint32_t fg = 0; fg <= 2; ++fg) {
                for (uint32_t mg = 0; mg <= 2; ++mg) {
                    auto c = std::make_unique<candidate>();
                    c->timing = {h, r, fg, mg};
                    send_path_config mc = cfg;
                    mc.timing = c->timing;
                    c->out = std::make_unique<pattern_output>(clk);
                    c->out->ready = ready;
                    c->model = std::make_unique<send_path_model>(
                        sc_core::sc_gen_unique_name("candidate"), mc, clk, *c->out, ctx);
                    candidate* cp = c.get();
                    c->model->set_beat_observer([cp](const frame_beat& b) { cp->cmp.actual(b); });
                    cands.push_back(std::move(c));
                }
            }
        }
    }
    uint64_t rtl_beats = 0;
    dut.set_beat_observer([&](const frame_beat& b) {
        ++rtl_beats;
        for (auto& c : cands) {
            c->cmp.expected(b);
        }
    });
    src.inputs().on_descriptor = [&](const tx_descriptor& d, uint64_t v) {
        dut.inputs().mirror_descriptor(d, v);
        for (auto& c : cands) {
            c->model->inputs().mirror_descriptor(d, v);
        }
    };
    src.inputs().on_payload = [&](const uint8_t* p, size_t n, uint64_t v) {
        dut.inputs().mirror_payload(p, n, v);
        for (auto& c : cands) {
            c->model->inputs().mirror_payload(p, n, v);
        }
    };
    std::vector<stim_message> msgs = directed_stimulus();
    for (auto& m : random_stimulus(21, 200)) {
        msgs.push_back(std::move(m));
    }
    // Each kind alone, after idle time: the longest quiet run inside the RTL shows here (an ACK
    // has no payload handshake between its descriptor and its frame).
    std::mt19937 rng(5);
    for (tx_kind k : {tx_kind::ACK, tx_kind::READ_REQUEST, tx_kind::SEND, tx_kind::WRITE,
                      tx_kind::READ_RESPONSE}) {
        for (uint32_t len : {0u, 100u}) {
            stim_message m = simple(make_desc(k, len, 77 + len, 1024), rng);
            m.gap_ns = 1000;
            msgs.push_back(m);
        }
    }
    const uint64_t want = expected_beats(msgs);
    sc_core::sc_spawn(
        [&] {
            for (const auto& m : msgs) {
                put_message(src, m);
            }
            // The free-running RTL clock never lets the simulation starve: stop when all
            // beats are out (or give up after a generous time).
            for (int i = 0; i < 100000 && rtl_beats < want; ++i) {
                sc_core::wait(1, sc_core::SC_US);
            }
            sc_core::wait(10, sc_core::SC_US);
            sc_core::sc_stop();
        },
        "driver");
    sc_core::sc_start();
    calibration_result res;
    res.rtl_beats = rtl_beats;
    res.quiescent_edges_needed = dut.max_quiet_before_change();
    res.rtl_violations = dut.rule_violations();
    res.violation_log = dut.violation_log();
    const candidate* best = nullptr;
    for (auto& c : cands) {
        c->cmp.finish();
        if (best == nullptr || c->cmp.compared() > best->cmp.compared()) {
            best = c.get();
        }
    }
    res.timing = best->timing;
    res.matched_beats = best->cmp.compared();
    res.exact = !best->cmp.diverged() && res.matched_beats == rtl_beats && rtl_beats == want;
    res.first = best->cmp.divergence();
    return res;
}

}  // namespace rnic::sptest
