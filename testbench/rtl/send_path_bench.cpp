// SPDX-License-Identifier: Apache-2.0
// Standalone send path speed bench: a long stream of 4 KiB SEND packets at line rate through
// the send path (model, rtl or lockstep) into a 100 Gb/s Ethernet link. Prints simulated
// packets per wall-clock second and the wire result (frames, last arrival) so that runs of
// the two implementations can be compared.
//   send_path_bench [model|rtl|lockstep] [packets] [fst path or -] [link Gb/s]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <systemc>

#include "hw/send_path/send_path.h"
#include "tlm/ethernet/eth_link.h"

namespace {

using namespace rnic;

struct counting_sink : fabric::frame_sink_if {
    uint64_t frames = 0;
    uint64_t bytes = 0;
    uint64_t hash = 1469598103934665603ull;  // FNV-1a over frame bytes and arrival times
    sc_core::sc_time last;
    void receive_frame(fabric::eth_frame&& f) override {
        ++frames;
        bytes += f.data.size();
        last = sc_core::sc_time_stamp();
        for (size_t i = 0; i + 8 <= f.data.size(); i += 8) {
            uint64_t w;
            std::memcpy(&w, f.data.data() + i, 8);
            hash = (hash ^ w) * 1099511628211ull;
        }
        for (size_t i = f.data.size() & ~size_t{7}; i < f.data.size(); ++i) {
            hash = (hash ^ f.data[i]) * 1099511628211ull;
        }
        hash = (hash ^ last.value()) * 1099511628211ull;
    }
};

}  // namespace

int sc_main(int argc, char** argv) {
    const std::string impl = argc > 1 ? argv[1] : "model";
    const uint64_t packets = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 100000;
    const std::string fst = argc > 3 && std::string(argv[3]) != "-" ? argv[3] : "";

    hw::sim_context ctx;
    hw::clock_domain clk("nic", 500.0);
    fabric::eth_link_config lc;
    lc.rate_gbps = argc > 4 ? std::atof(argv[4]) : 100.0;
    fabric::eth_link link("link", lc, ctx);
    counting_sink sink;
    link.attach(1, &sink);
    hw::send_path_config cfg;
    cfg.impl = impl;
    auto sp = hw::make_send_path("send_path", cfg, clk, link.tx(0), ctx, fst);

    std::vector<uint8_t> payload(4096);
    for (size_t i = 0; i < payload.size(); ++i) {
        payload[i] = static_cast<uint8_t>(i * 13 + 7);
    }
    sc_core::sc_spawn(
        [&] {
            hw::tx_descriptor d;
            d.kind = hw::tx_kind::SEND;
            d.pmtu = 4096;
            d.length = 4096;
            d.src_qpn = 0x11;
            d.dest_qpn = 0x22;
            d.src_mac = {2, 0, 0, 0, 0, 1};
            d.dst_mac = {2, 0, 0, 0, 0, 2};
            d.src_ip = 0xc0a80101;
            d.dst_ip = 0xc0a80102;
            for (uint64_t i = 0; i < packets; ++i) {
                d.psn = static_cast<uint32_t>(i & 0xFFFFFF);
                d.flow_id = i;
                sp->put_descriptor(d);
                hw::payload_chunk c;
                c.bytes = payload;
                c.ready = sc_core::sc_time_stamp();
                sp->put_payload(std::move(c));
            }
        },
        "driver");

    const auto t0 = std::chrono::steady_clock::now();
    sc_core::sc_start();
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto stats = ctx.stats.values();
    std::printf(
        "impl=%s packets=%llu wall_s=%.3f packets_per_wall_s=%.0f sim_us=%.3f "
        "wire_frames=%llu wire_hash=%016llx clocked_edges=%s\n",
        impl.c_str(), static_cast<unsigned long long>(sink.frames), wall,
        static_cast<double>(sink.frames) / wall, sink.last.to_seconds() * 1e6,
        static_cast<unsigned long long>(sink.frames), static_cast<unsigned long long>(sink.hash),
        stats["send_path"].contains("clocked_edges")
            ? stats["send_path"]["clocked_edges"].dump().c_str()
            : "-");
    return sink.frames == packets ? 0 : 1;
}
