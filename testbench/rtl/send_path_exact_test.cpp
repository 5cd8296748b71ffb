// SPDX-License-Identifier: Apache-2.0
// Cycle-exact agreement of the built-in RTL with the model (label cycle_exact): the same
// frames on the same edges, so the same wire. Holds for our RTL with the default timing, and
// for another RTL once the model is calibrated to it (RNICSIM_SEND_PATH_TIMING="..." from
// send_path_calibrate).
#include <vector>

#include <gtest/gtest.h>

#include "testbench/rtl/send_path_stimulus.h"
#include "tlm/ethernet/eth_link.h"

namespace {

using namespace rnic;
using namespace rnic::hw;
using namespace rnic::sptest;

}  // namespace

// A whole wire: the same traffic through the model and through the RTL, each into its own
// 100 Gb/s link, gives the same frames with the same capture timestamps (what wire.pcap
// records) and the same arrival times.
TEST(SendPathExact, ModelAndRtlProduceTheSameWire) {
    sim_context ctx;
    clock_domain clk("nic", CLOCK_MHZ);
    fabric::eth_link_config lc;
    lc.rate_gbps = 100.0;
    fabric::eth_link link_m("link_model", lc, ctx);
    fabric::eth_link link_r("link_rtl", lc, ctx);
    send_path_config cfg = model_timing_from_env();
    cfg.impl = "model";
    auto model = make_send_path("send_path_model", cfg, clk, link_m.tx(0), ctx);
    cfg.impl = "rtl";
    auto rtl_sp = make_send_path("send_path_rtl", cfg, clk, link_r.tx(0), ctx);
    struct capture : fabric::frame_sink_if {
        std::vector<std::pair<sc_core::sc_time, std::vector<uint8_t>>> sent, received;
        void receive_frame(fabric::eth_frame&& f) override {
            received.emplace_back(sc_core::sc_time_stamp(), std::move(f.data));
        }
    } cap_m, cap_r;
    link_m.attach(1, &cap_m);
    link_r.attach(1, &cap_r);
    link_m.set_capture(
        [&](int, const fabric::eth_frame& f) { cap_m.sent.emplace_back(f.tx_start, f.data); });
    link_r.set_capture(
        [&](int, const fabric::eth_frame& f) { cap_r.sent.emplace_back(f.tx_start, f.data); });
    const auto msgs = random_stimulus(9, 300);
    for (send_path_if* sp :
         {static_cast<send_path_if*>(model.get()), static_cast<send_path_if*>(rtl_sp.get())}) {
        sc_core::sc_spawn(
            [&msgs, sp] {
                for (const auto& m : msgs) {
                    if (m.gap_ns > 0) {
                        sc_core::wait(m.gap_ns, sc_core::SC_NS);
                    }
                    sp->put_descriptor(m.desc);
                    size_t off = 0;
                    for (size_t i = 0; i < m.chunks.size(); ++i) {
                        payload_chunk c;
                        c.bytes.assign(
                            m.payload.begin() + static_cast<std::ptrdiff_t>(off),
                            m.payload.begin() + static_cast<std::ptrdiff_t>(off + m.chunks[i]));
                        off += m.chunks[i];
                        c.ready = sc_core::sc_time_stamp() +
                                  sc_core::sc_time(m.ready_delay[i], sc_core::SC_NS);
                        sp->put_payload(std::move(c));
                    }
                }
            },
            sc_core::sc_gen_unique_name("driver"));
    }
    sc_core::sc_start();
    size_t frames = 0;
    for (const auto& m : msgs) {
        frames += packet_count(m.desc);
    }
    ASSERT_EQ(cap_m.sent.size(), frames);
    ASSERT_EQ(cap_r.sent.size(), frames);
    ASSERT_EQ(cap_r.received.size(), frames);
    for (size_t i = 0; i < frames; ++i) {
        ASSERT_EQ(cap_m.sent[i].first, cap_r.sent[i].first) << "frame " << i;
        ASSERT_EQ(cap_m.sent[i].second, cap_r.sent[i].second) << "frame " << i;
        ASSERT_EQ(cap_m.received[i].first, cap_r.received[i].first) << "frame " << i;
    }
    EXPECT_EQ(model->get_stats().stall_backpressure_cycles,
              rtl_sp->get_stats().stall_backpressure_cycles);
    EXPECT_GT(model->get_stats().stall_backpressure_cycles, 0u);
}
