// SPDX-License-Identifier: Apache-2.0
// Shared-buffer switch (tlm/switch), standalone: hosts are bare link ends. Checked against
// independent formulas: the IPv4 checksum by the RFC 1071 sum over the header, the ICRC by
// hw/roce's compute_icrc, timing by serialization + propagation + pipeline, PFC frames by the
// 802.1Qbb byte layout, ECN by the RED formula, DWRR by the weight ratio.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

#include "hw/common/config_reader.h"
#include "hw/common/sim_context.h"
#include "hw/roce/roce.h"
#include "tlm/ethernet/eth_link.h"
#include "tlm/switch/eth_switch.h"

namespace {

using rnic::fabric::eth_frame;
using rnic::fabric::eth_link;
using rnic::fabric::eth_link_config;
using rnic::fabric::eth_switch;
using rnic::fabric::eth_wire_bytes;
using rnic::fabric::switch_config;
using sc_core::SC_NS;
using sc_core::SC_PS;
using sc_core::sc_time;
namespace roce = rnic::roce;

using mac = std::array<uint8_t, 6>;

mac mac_at(const std::vector<uint8_t>& d, size_t off) {
    mac m{};
    std::copy(d.begin() + static_cast<std::ptrdiff_t>(off),
              d.begin() + static_cast<std::ptrdiff_t>(off + 6), m.begin());
    return m;
}

mac host_mac(uint32_t i) {
    return {0x02, 0x00, 0x00, 0x00, 0x01, static_cast<uint8_t>(i)};
}
mac port_mac(uint32_t i) {
    return {0x02, 0x00, 0x00, 0x00, 0x10, static_cast<uint8_t>(i)};
}
uint32_t host_ip(uint32_t i) {
    return 0x0A000002u | (i << 8);  // 10.0.i.2
}
uint32_t gateway_ip(uint32_t i) {
    return 0x0A000001u | (i << 8);  // 10.0.i.1
}

// A RoCEv2 SEND Only from host `src` to host `dst` with `payload` bytes.
eth_frame roce_frame(uint32_t src, uint32_t dst, size_t payload, uint32_t psn,
                     uint16_t udp_src = 0xC000, uint8_t tos = 0x02) {
    roce::frame_header h;
    h.dst_mac.b = port_mac(src);  // the gateway
    h.src_mac.b = host_mac(src);
    h.src_ip = host_ip(src);
    h.dst_ip = host_ip(dst);
    h.tos = tos;
    h.udp_src_port = udp_src;
    h.bth_.opcode = roce::RC_SEND_ONLY;
    h.bth_.dest_qp = 0x11;
    h.bth_.psn = psn;
    std::vector<uint8_t> body(payload);
    for (size_t i = 0; i < payload; ++i) {
        body[i] = static_cast<uint8_t>(psn * 7 + i);
    }
    eth_frame f;
    roce::build_frame(h, body.data(), body.size(), f.data);
    f.flow_id = psn;
    return f;
}

// RFC 1071: the ones' complement sum over a correct header, checksum included, is 0xFFFF.
bool ipv4_checksum_ok(const std::vector<uint8_t>& f) {
    uint32_t sum = 0;
    for (size_t i = 14; i < 34; i += 2) {
        sum += static_cast<uint32_t>((f[i] << 8) | f[i + 1]);
    }
    while (sum >> 16) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    return sum == 0xFFFF;
}

bool icrc_ok(const std::vector<uint8_t>& f) {
    const uint32_t c = roce::compute_icrc(f.data(), f.size() - 4);
    const size_t n = f.size();
    return f[n - 4] == (c & 0xFF) && f[n - 3] == ((c >> 8) & 0xFF) &&
           f[n - 2] == ((c >> 16) & 0xFF) && f[n - 1] == (c >> 24);
}

struct host : rnic::fabric::frame_sink_if {
    struct rx {
        sc_time at;
        eth_frame frame;
    };
    std::vector<rx> frames;
    void receive_frame(eth_frame&& f) override {
        frames.push_back({sc_core::sc_time_stamp(), std::move(f)});
    }
};

struct captured {
    int side;
    sc_time tx_start;
    std::vector<uint8_t> data;
};

bool is_pause(const std::vector<uint8_t>& d) {
    return d.size() >= 14 && d[12] == 0x88 && d[13] == 0x08;
}

// One switch, host i on port i through link i (side 0: host, side 1: switch); host i is
// 10.0.i.2/24 behind gateway 10.0.i.1.
struct star {
    rnic::hw::sim_context ctx;
    std::vector<std::unique_ptr<eth_link>> links;
    std::vector<std::unique_ptr<host>> hosts;
    std::vector<std::vector<captured>> caps;
    std::unique_ptr<eth_switch> sw;
    star(const switch_config& cfg, uint32_t n, std::vector<eth_link_config> lcfg) {
        sw = std::make_unique<eth_switch>("sw", cfg, n, ctx);
        caps.resize(n);
        for (uint32_t i = 0; i < n; ++i) {
            links.push_back(std::make_unique<eth_link>(("link" + std::to_string(i)).c_str(),
                                                       lcfg[i % lcfg.size()], ctx));
            hosts.push_back(std::make_unique<host>());
            links[i]->attach(0, hosts[i].get());
            links[i]->set_mac(0, host_mac(i));
            links[i]->set_capture([this, i](int side, const eth_frame& f) {
                caps[i].push_back({side, f.tx_start, f.data});
            });
            sw->connect(i, *links[i], 1);
            sw->set_port_address(i, port_mac(i), gateway_ip(i));
            sw->set_neighbor_mac(i, host_mac(i));
            sw->add_route(host_ip(i) & 0xFFFFFF00u, 24, {i});
        }
    }
    star(const switch_config& cfg, uint32_t n)
        : star(cfg, n, {eth_link_config{}}) {}
    void send(uint32_t i, std::vector<eth_frame> frames, sc_time start = sc_time(10, SC_NS)) {
        sc_core::sc_spawn(
            [this, i, frames = std::move(frames), start]() mutable {
                sc_core::wait(start);
                for (auto& f : frames) {
                    links[i]->tx(0).put(std::move(f));
                }
            },
            sc_core::sc_gen_unique_name("host"));
    }
    uint64_t total_drops() const {
        uint64_t d = 0;
        for (uint32_t p = 0; p < sw->ports(); ++p) {
            d += sw->port(p).drops;
        }
        return d;
    }
};

sc_time ps(double v) {
    return sc_time(v, SC_PS);
}

// The bytes after the headers that the switch may rewrite are unchanged.
void expect_forwarded(const eth_frame& in, const eth_frame& out, uint32_t out_port) {
    ASSERT_EQ(in.data.size(), out.data.size());
    EXPECT_EQ(mac_at(out.data, 0), host_mac(out_port));
    EXPECT_EQ(mac_at(out.data, 6), port_mac(out_port));
    EXPECT_EQ(out.data[14 + 8], in.data[14 + 8] - 1) << "TTL decremented";
    EXPECT_TRUE(ipv4_checksum_ok(out.data)) << "IPv4 header checksum updated";
    EXPECT_TRUE(icrc_ok(out.data)) << "ICRC still valid";
    for (size_t i = 12; i < in.data.size(); ++i) {
        if (i == 14 + 1 || i == 14 + 8 || i == 14 + 10 || i == 14 + 11) {
            continue;  // TOS (ECN), TTL, checksum
        }
        ASSERT_EQ(out.data[i], in.data[i]) << "byte " << i;
    }
    roce::parsed_frame pf;
    EXPECT_EQ(roce::parse_frame(out.data.data(), out.data.size(), pf), roce::parse_error::NONE);
}

}  // namespace

// Store-and-forward: last bit in + pipeline, then the egress link's serialization and
// propagation. Rewrite: MACs, TTL - 1, checksum; ICRC untouched and still valid.
TEST(EthSwitch, ForwardsWithRewriteAndStoreAndForwardLatency) {
    switch_config cfg;
    cfg.pipeline_ns = 400;
    star s(cfg, 2);
    const eth_frame f = roce_frame(0, 1, 1000, 5);
    s.send(0, {f});
    sc_core::sc_start();
    ASSERT_EQ(s.hosts[1]->frames.size(), 1u);
    expect_forwarded(f, s.hosts[1]->frames[0].frame, 1);
    const double byte_ps = 80;  // 100 Gb/s
    const double last_bit = static_cast<double>(eth_wire_bytes(f.data.size()) - 12) * byte_ps;
    const sc_time expect = sc_time(10, SC_NS) + ps(last_bit) + sc_time(50, SC_NS) +
                           sc_time(400, SC_NS) + ps(last_bit) + sc_time(50, SC_NS);
    EXPECT_EQ(s.hosts[1]->frames[0].at, expect);
    EXPECT_EQ(s.sw->port(0).rx_frames, 1u);
    EXPECT_EQ(s.sw->port(1).tx_frames, 1u);
    EXPECT_EQ(s.sw->queue(1, 0).frames, 1u);
    EXPECT_EQ(s.sw->buffer_used(), 0u);
    EXPECT_EQ(s.sw->buffer_peak(), f.data.size());
    EXPECT_TRUE(s.hosts[0]->frames.empty());
    const nlohmann::json st = s.ctx.stats.values();
    EXPECT_EQ(st["sw"]["frames"], 1);
    EXPECT_EQ(st["sw"]["buffer_peak_bytes"], f.data.size());
    EXPECT_EQ(st["sw.port1"]["tx_frames"], 1);
    EXPECT_EQ(st["sw.port1.q0"]["frames"], 1);
    EXPECT_EQ(st["sw.port1.q0"]["bytes"], f.data.size());
    EXPECT_EQ(st["sw.port0"]["rx_bytes"], f.data.size());
    // The frame sat in the egress queue for exactly the pipeline: average = bytes x 400 ns / run.
    const double run_ps = sc_core::sc_time_stamp().to_seconds() * 1e12;
    EXPECT_NEAR(s.sw->average_occupancy(1, 0) * run_ps, static_cast<double>(f.data.size()) * 400e3,
                1.0);
    EXPECT_EQ(s.sw->buffer().at(1, 0).egress_peak_bytes, f.data.size());
}

// An 802.1Q-tagged frame (as a CNP with np_cnp_prio): queued by its PCP, not its DSCP; its IPv4
// header found after the tag (TTL, checksum); forwarded with the tag as it came.
TEST(EthSwitch, TaggedFrameQueuedByItsPcpAndForwardedWithItsTag) {
    switch_config cfg;
    star s(cfg, 2);
    eth_frame f = roce_frame(0, 1, 200, 9, 0xC000, 48 << 2);    // DSCP 48: priority 6 untagged
    const uint8_t tag[4] = {0x81, 0x00, (3 << 5) | 0x0, 0x00};  // PCP 3, DEI 0, VID 0
    f.data.insert(f.data.begin() + 12, tag, tag + 4);
    s.send(0, {f});
    sc_core::sc_start();
    ASSERT_EQ(s.hosts[1]->frames.size(), 1u);
    const std::vector<uint8_t>& out = s.hosts[1]->frames[0].frame.data;
    ASSERT_EQ(out.size(), f.data.size());
    EXPECT_EQ(mac_at(out, 0), host_mac(1));
    EXPECT_EQ(mac_at(out, 6), port_mac(1));
    for (size_t i = 12; i < 18; ++i) {
        EXPECT_EQ(out[i], f.data[i]) << "tag byte " << i;
    }
    EXPECT_EQ(out[18 + 8], f.data[18 + 8] - 1) << "TTL after the tag decremented";
    std::vector<uint8_t> inner = out;
    inner.erase(inner.begin() + 12, inner.begin() + 16);
    EXPECT_TRUE(ipv4_checksum_ok(inner));
    EXPECT_TRUE(icrc_ok(inner));
    EXPECT_EQ(s.sw->queue(1, 3).frames, 1u);
    EXPECT_EQ(s.sw->queue(1, 6).frames, 0u);
    EXPECT_EQ(s.sw->port(0).no_route, 0u);
}

// Cut-through at equal rates: the egress starts pipeline_ns after the first 64 bytes are in.
TEST(EthSwitch, CutThroughStartsAfterTheHeaders) {
    switch_config cfg;
    cfg.pipeline_ns = 300;
    cfg.cut_through = true;
    star s(cfg, 2);
    const eth_frame f = roce_frame(0, 1, 1000, 5);
    s.send(0, {f});
    sc_core::sc_start();
    ASSERT_EQ(s.hosts[1]->frames.size(), 1u);
    expect_forwarded(f, s.hosts[1]->frames[0].frame, 1);
    const double last_bit = static_cast<double>(eth_wire_bytes(f.data.size()) - 12) * 80;
    const sc_time expect = sc_time(10, SC_NS) + ps((8 + 64) * 80) + sc_time(50, SC_NS) +
                           sc_time(300, SC_NS) + ps(last_bit) + sc_time(50, SC_NS);
    EXPECT_EQ(s.hosts[1]->frames[0].at, expect);
}

// Cut-through into a faster egress would underrun: that frame is stored and forwarded.
TEST(EthSwitch, CutThroughIntoAFasterPortStoresAndForwards) {
    switch_config cfg;
    cfg.pipeline_ns = 300;
    cfg.cut_through = true;
    eth_link_config slow;
    slow.rate_gbps = 25;
    eth_link_config fast;
    star s(cfg, 2, {slow, fast});
    const eth_frame f = roce_frame(0, 1, 1000, 5);
    s.send(0, {f});
    sc_core::sc_start();
    ASSERT_EQ(s.hosts[1]->frames.size(), 1u);
    const double wire = static_cast<double>(eth_wire_bytes(f.data.size()) - 12);
    const sc_time expect = sc_time(10, SC_NS) + ps(wire * 320) + sc_time(50, SC_NS) +
                           sc_time(300, SC_NS) + ps(wire * 80) + sc_time(50, SC_NS);
    EXPECT_EQ(s.hosts[1]->frames[0].at, expect);
}

// Frames with TTL 1, a bad IPv4 checksum or no route are dropped and counted.
TEST(EthSwitch, DropsExpiredTtlBadChecksumAndUnrouted) {
    switch_config cfg;
    star s(cfg, 2);
    eth_frame ttl = roce_frame(0, 1, 100, 1);
    ttl.data[14 + 8] = 1;
    ttl.data[14 + 10] = ttl.data[14 + 11] = 0;
    uint32_t sum = 0;
    for (size_t i = 14; i < 34; i += 2) {
        sum += static_cast<uint32_t>((ttl.data[i] << 8) | ttl.data[i + 1]);
    }
    while (sum >> 16) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    ttl.data[14 + 10] = static_cast<uint8_t>(~sum >> 8);
    ttl.data[14 + 11] = static_cast<uint8_t>(~sum);
    ASSERT_TRUE(ipv4_checksum_ok(ttl.data));
    eth_frame bad = roce_frame(0, 1, 100, 2);
    bad.data[14 + 10] ^= 1;
    eth_frame unrouted = roce_frame(0, 7, 100, 3);
    s.send(0, {ttl, bad, unrouted, roce_frame(0, 1, 100, 4)});
    sc_core::sc_start();
    ASSERT_EQ(s.hosts[1]->frames.size(), 1u);
    EXPECT_EQ(s.hosts[1]->frames[0].frame.flow_id, 4u);
    EXPECT_EQ(s.sw->port(0).no_route, 3u);
    EXPECT_EQ(s.sw->port(0).drops, 3u);
}

// ARP request for the port's gateway address: a reply (RFC 826 layout) out of the same port.
TEST(EthSwitch, AnswersArpForTheGatewayAddress) {
    switch_config cfg;
    star s(cfg, 2);
    auto arp_request = [](uint32_t target) {
        eth_frame f;
        f.data = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
        const mac hm = host_mac(0);
        f.data.insert(f.data.end(), hm.begin(), hm.end());
        f.data.insert(f.data.end(), {0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01});
        f.data.insert(f.data.end(), hm.begin(), hm.end());
        const uint32_t ip = host_ip(0);
        for (int k = 3; k >= 0; --k) {
            f.data.push_back(static_cast<uint8_t>(ip >> (8 * k)));
        }
        f.data.insert(f.data.end(), 6, 0);
        for (int k = 3; k >= 0; --k) {
            f.data.push_back(static_cast<uint8_t>(target >> (8 * k)));
        }
        return f;
    };
    s.send(0, {arp_request(gateway_ip(1)), arp_request(gateway_ip(0))});
    sc_core::sc_start();
    ASSERT_EQ(s.hosts[0]->frames.size(), 1u);
    const std::vector<uint8_t> expect = {
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00,                     // to the requester
        0x02, 0x00, 0x00, 0x00, 0x10, 0x00,                     // from port 0
        0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 6,  4, 0x00, 0x02,  // reply
        0x02, 0x00, 0x00, 0x00, 0x10, 0x00, 10, 0, 0,    1,     // sender: port 0, 10.0.0.1
        0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 10, 0, 0,    2,     // target: the requester
    };
    EXPECT_EQ(s.hosts[0]->frames[0].frame.data, expect);
    EXPECT_EQ(s.sw->port(0).arp_replies, 1u);
    EXPECT_EQ(s.sw->port(0).no_route, 1u);  // the request for another port's address
    EXPECT_TRUE(s.hosts[1]->frames.empty());
}

// ECMP: flows (UDP source ports) spread evenly over a 4-way group; a flow's frames all take
// one path, the one ecmp_index names; another seed moves most flows.
TEST(EthSwitch, EcmpSpreadsFlowsAndDependsOnTheSeed) {
    switch_config cfg;
    cfg.ecmp_seed = 1;
    star s(cfg, 5);
    s.sw->add_route(0x0A090000u, 16, {1, 2, 3, 4});  // 10.9/16 over ports 1..4
    eth_switch tier2("tier2", cfg, 5, s.ctx);        // same seed, another switch
    std::vector<eth_frame> frames;
    std::array<uint32_t, 4> count{};
    uint32_t moved = 0;
    uint32_t other_switch = 0;
    const uint32_t flows = 4000;
    for (uint32_t i = 0; i < flows; ++i) {
        eth_frame f = roce_frame(0, 0, 16, i, static_cast<uint16_t>(0xC000 + i));
        // Destination 10.9.x.y (the ICRC is not checked here).
        f.data[14 + 16] = 10;
        f.data[14 + 17] = 9;
        f.data[14 + 18] = static_cast<uint8_t>(i >> 8);
        const uint32_t a = s.sw->ecmp_index(f.data.data(), f.data.size(), 4);
        // Seed 2 on the same switch (same name salt).
        const uint32_t b = eth_switch::ecmp_hash(2, s.sw->salt(), f.data.data(), f.data.size(), 4);
        ASSERT_EQ(a, eth_switch::ecmp_hash(1, s.sw->salt(), f.data.data(), f.data.size(), 4));
        ++count[a];
        moved += a != b ? 1 : 0;
        other_switch += a != tier2.ecmp_index(f.data.data(), f.data.size(), 4) ? 1 : 0;
        if (i < 64) {
            // Fix the IPv4 checksum for the edited address, then send it twice.
            f.data[14 + 10] = f.data[14 + 11] = 0;
            uint32_t sum = 0;
            for (size_t k = 14; k < 34; k += 2) {
                sum += static_cast<uint32_t>((f.data[k] << 8) | f.data[k + 1]);
            }
            while (sum >> 16) {
                sum = (sum & 0xFFFF) + (sum >> 16);
            }
            f.data[14 + 10] = static_cast<uint8_t>(~sum >> 8);
            f.data[14 + 11] = static_cast<uint8_t>(~sum);
            f.flow_id = a + 1;  // the port it must leave by
            frames.push_back(f);
            frames.push_back(f);
        }
    }
    // Binomial(4000, 1/4): mean 1000, sd 27.4; +-120 is over 4 sd.
    for (uint32_t k = 0; k < 4; ++k) {
        EXPECT_NEAR(count[k], 1000.0, 120.0) << "port " << k + 1;
    }
    EXPECT_GT(moved, flows * 6 / 10) << "a new seed should move about 3/4 of the flows";
    EXPECT_GT(other_switch, flows * 6 / 10) << "two switches must not choose alike (polarization)";
    s.send(0, frames);
    sc_core::sc_start();
    uint32_t got = 0;
    for (uint32_t p = 1; p <= 4; ++p) {
        for (const auto& r : s.hosts[p]->frames) {
            EXPECT_EQ(r.frame.flow_id, p);
            ++got;
        }
    }
    EXPECT_EQ(got, frames.size());
}

namespace {
// Checks one captured pause frame against the 802.1Qbb layout.
void expect_pfc_layout(const std::vector<uint8_t>& d, const mac& src, uint8_t cev,
                       const std::array<uint16_t, 8>& quanta) {
    ASSERT_EQ(d.size(), 60u);  // 64 with FCS: minimum frame
    const std::vector<uint8_t> dst = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};
    EXPECT_EQ(std::vector<uint8_t>(d.begin(), d.begin() + 6), dst);
    EXPECT_EQ(mac_at(d, 6), src);
    EXPECT_EQ(d[12], 0x88);
    EXPECT_EQ(d[13], 0x08);  // MAC control
    EXPECT_EQ(d[14], 0x01);
    EXPECT_EQ(d[15], 0x01);  // PFC opcode
    EXPECT_EQ(d[16], 0x00);
    EXPECT_EQ(d[17], cev);
    for (size_t p = 0; p < 8; ++p) {
        EXPECT_EQ((d[18 + 2 * p] << 8) | d[19 + 2 * p], quanta[p]) << "priority " << p;
    }
    for (size_t i = 34; i < 60; ++i) {
        EXPECT_EQ(d[i], 0) << "pad byte " << i;
    }
}
}  // namespace

// N:1 burst through the switch, lossless: pause frames on every sender's cable, honoured only
// once they have arrived (frames keep leaving while the pause is on the cable, none after),
// ingress never above XOFF + headroom, no drop, every frame delivered in order.
TEST(EthSwitch, PfcIncastPausesSendersAfterArrivalWithoutLoss) {
    switch_config cfg;
    cfg.xoff_bytes = 32768;
    cfg.xon_bytes = 16384;
    eth_link_config lc;
    lc.propagation_ns = 1000;  // 12.5 kB in flight each way at 100 Gb/s
    lc.tx_fifo_frames = 8;
    const uint32_t senders = 4;
    const uint32_t per_sender = 300;
    star s(cfg, senders + 1, {lc});
    for (uint32_t i = 1; i <= senders; ++i) {
        std::vector<eth_frame> fs;
        for (uint32_t k = 0; k < per_sender; ++k) {
            fs.push_back(roce_frame(i, 0, 1024, i * 1000 + k, static_cast<uint16_t>(0xC000 + i)));
        }
        s.send(i, std::move(fs));
    }
    sc_core::sc_start();
    ASSERT_EQ(s.hosts[0]->frames.size(), senders * per_sender);
    std::map<uint32_t, uint32_t> next;
    for (const auto& r : s.hosts[0]->frames) {
        const uint32_t who = static_cast<uint32_t>(r.frame.flow_id / 1000);
        EXPECT_EQ(r.frame.flow_id % 1000, next[who]++) << "in order per sender";
        EXPECT_TRUE(icrc_ok(r.frame.data));
    }
    EXPECT_EQ(s.total_drops(), 0u);
    EXPECT_EQ(s.sw->queue(1, 0).lossless_drops, 0u);
    // Headroom (independent of the switch's own figure): the round trip on the cable, our
    // pause frame waiting behind one maximum frame, the upstream finishing one maximum frame.
    const uint64_t headroom = 2 * 1000 * 100 / 8 + 2 * (9216 + 24) + 84;
    const double pause_arrive_ps = (84 - 12) * 80.0 + 1000e3;  // last bit of the pause frame
    uint32_t sent_while_in_flight = 0;
    for (uint32_t i = 1; i <= senders; ++i) {
        const auto& q = s.sw->queue(i, 0);
        const auto& bq = s.sw->buffer().at(i, 0);
        EXPECT_GT(bq.ingress_peak_bytes, cfg.xoff_bytes) << "port " << i << " reached XOFF";
        EXPECT_LE(bq.ingress_peak_bytes, cfg.xoff_bytes + headroom) << "port " << i;
        EXPECT_GT(q.pauses_sent, 0u);
        EXPECT_GT(s.links[i]->get_stats(0).pauses, 0u) << "the sender's MAC was paused";
        EXPECT_GT(s.links[i]->get_stats(0).pause_ps, 0u);
        // Pause windows on the sender's transmitter: from each XOFF frame's arrival to the
        // arrival of the next pause frame that releases priority 0.
        const auto& cap = s.caps[i];
        bool first = true;
        for (size_t a = 0; a < cap.size(); ++a) {
            if (cap[a].side != 1 || !is_pause(cap[a].data)) {
                continue;
            }
            const uint16_t q0 = static_cast<uint16_t>((cap[a].data[18] << 8) | cap[a].data[19]);
            if (first) {
                expect_pfc_layout(cap[a].data, port_mac(i), 0x01, {0xFFFF, 0, 0, 0, 0, 0, 0, 0});
                first = false;
            }
            if (q0 == 0) {
                continue;
            }
            const sc_time on = cap[a].tx_start + ps(pause_arrive_ps);
            sc_time off = sc_core::sc_max_time();
            for (size_t b = a + 1; b < cap.size(); ++b) {
                if (cap[b].side == 1 && is_pause(cap[b].data) && cap[b].data[18] == 0 &&
                    cap[b].data[19] == 0) {
                    off = cap[b].tx_start + ps(pause_arrive_ps);
                    break;
                }
            }
            for (const auto& c : cap) {
                if (c.side != 0) {
                    continue;
                }
                EXPECT_FALSE(c.tx_start >= on && c.tx_start < off)
                    << "port " << i << ": frame sent at " << c.tx_start << " in a pause [" << on
                    << ", " << off << ")";
                if (c.tx_start >= cap[a].tx_start && c.tx_start < on) {
                    ++sent_while_in_flight;
                }
            }
        }
        EXPECT_FALSE(first) << "port " << i << ": no pause frame on the wire";
    }
    EXPECT_GT(sent_while_in_flight, 0u) << "a pause must not act before it arrives";
}

// Lossy priority: a burst into a small buffer tail-drops, counted; no pause frames.
TEST(EthSwitch, LossyPriorityTailDropsAndCounts) {
    switch_config cfg;
    cfg.lossless.fill(false);
    cfg.buffer_bytes = 65536;
    cfg.reserved_bytes = 2048;
    cfg.xoff_bytes = 32768;
    const uint32_t senders = 4;
    const uint32_t per_sender = 100;
    star s(cfg, senders + 1);
    for (uint32_t i = 1; i <= senders; ++i) {
        std::vector<eth_frame> fs;
        for (uint32_t k = 0; k < per_sender; ++k) {
            fs.push_back(roce_frame(i, 0, 1024, i * 1000 + k));
        }
        s.send(i, std::move(fs));
    }
    sc_core::sc_start();
    const uint64_t got = s.hosts[0]->frames.size();
    const uint64_t drops = s.total_drops();
    EXPECT_GT(drops, 0u);
    EXPECT_EQ(got + drops, senders * per_sender);
    uint64_t qdrops = 0;
    for (uint32_t i = 1; i <= senders; ++i) {
        qdrops += s.sw->queue(i, 0).drops;
        for (const auto& c : s.caps[i]) {
            EXPECT_FALSE(is_pause(c.data)) << "no PFC on a lossy priority";
        }
    }
    EXPECT_EQ(qdrops, drops);
    EXPECT_LE(s.sw->buffer_peak(), cfg.buffer_bytes);
    EXPECT_LE(s.sw->buffer().at(0, 0).egress_peak_bytes, cfg.buffer_bytes);
}

namespace {
// Three senders (hosts 1..3) stream `per_sender` 1024-byte RoCE frames back to back at 100 Gb/s
// into a lossy queue toward host 0, host i's MAC `ppm[i - 1]` off nominal and the switch's port
// toward host 0 `switch_ppm` off (set_clock). Returns the frames of each sender host 0 received.
std::vector<uint64_t> lossy_incast_shares(const std::vector<double>& ppm, double switch_ppm,
                                          uint32_t per_sender) {
    switch_config cfg;
    cfg.lossless.fill(false);
    cfg.buffer_bytes = 262144;
    cfg.xoff_bytes = 32768;
    star s(cfg, 4);
    s.links[0]->set_clock(1, switch_ppm, 0, 9);
    for (uint32_t i = 1; i <= 3; ++i) {
        s.links[i]->set_clock(0, ppm[i - 1], 0, i);
        sc_core::sc_spawn(
            [&s, i, per_sender] {
                sc_core::wait(sc_time(10, SC_NS));
                for (uint32_t k = 0; k < per_sender; ++k) {
                    s.links[i]->tx(0).put(roce_frame(i, 0, 1024, k));
                }
            },
            sc_core::sc_gen_unique_name("sender"));
    }
    std::vector<uint64_t> got(3, 0);
    s.hosts[0]->frames.reserve(per_sender * 3);
    sc_core::sc_start();
    for (const auto& r : s.hosts[0]->frames) {
        const uint32_t src =
            (static_cast<uint32_t>(r.frame.data[26 + 2]) << 8) | r.frame.data[26 + 3];
        const uint32_t host = (src >> 8) & 0xFF;  // 10.0.i.2
        if (host >= 1 && host <= 3) {
            ++got[host - 1];
        }
    }
    return got;
}
}  // namespace

// Phase lock (issue 27): three senders on exactly the nominal clock deliver their frames to the
// full egress queue at the same instants, frame after frame, so each slot the egress frees goes
// to the same sender (ties go in ingress port order) and the other two get nothing through: one
// sender takes over 95 % of 20,000 slots.
TEST(EthSwitchClocks, ExactClocksStarveTwoSendersOfALossyIncast) {
    const std::vector<uint64_t> got = lossy_incast_shares({0, 0, 0}, 0, 20000);
    const double total = static_cast<double>(got[0] + got[1] + got[2]);
    ASSERT_GT(total, 19000) << got[0] << " " << got[1] << " " << got[2];  // egress at line rate
    const uint64_t most = std::max({got[0], got[1], got[2]});
    EXPECT_GT(static_cast<double>(most) / total, 0.95) << got[0] << " " << got[1] << " " << got[2];
}

// Each port on its own oscillator within IEEE 802.3's +-100 ppm (senders +100, +30, -40 ppm,
// the switch -100): the arrival phases slide past each other and past the egress slots, a
// 1106-byte slot's phase turning once in 1e6 / (difference in ppm) frames (at most 14,300 here:
// the closest pair is 70 ppm apart), so over 20,000 frames each (1.8 ms) each sender's share of
// what got through is within 0.1 of 1/3. Drift does not make a lossy queue fair over windows
// shorter than that turn (clocks 20 ppm apart take 50,000 frames, 4.4 ms).
TEST(EthSwitchClocks, DriftingClocksShareALossyIncastFairly) {
    const std::vector<uint64_t> got = lossy_incast_shares({100, 30, -40}, -100, 20000);
    const double total = static_cast<double>(got[0] + got[1] + got[2]);
    ASSERT_GT(total, 19000) << got[0] << " " << got[1] << " " << got[2];
    for (int i = 0; i < 3; ++i) {
        EXPECT_NEAR(static_cast<double>(got[i]) / total, 1.0 / 3, 0.1)
            << "sender " << i + 1 << ": " << got[0] << " " << got[1] << " " << got[2];
    }
}

// RED: with the egress held by the receiver's own pause frame, frame k is enqueued behind k
// frames; ECT frames are marked CE with probability 0 below Kmin, Pmax (q - Kmin) / (Kmax -
// Kmin) between, 1 above Kmax; non-ECT frames never. The marked count in the ramp is within 4
// standard deviations of the formula's expectation; marked frames keep valid checksums/ICRC.
TEST(EthSwitch, EcnMarksWithTheRedProbability) {
    switch_config cfg;
    cfg.buffer_bytes = 8u << 20;
    cfg.xoff_bytes = 4u << 20;
    cfg.xon_bytes = 2u << 20;
    cfg.ecn[0] = true;
    cfg.kmin_bytes[0] = 50000;
    cfg.kmax_bytes[0] = 400000;
    cfg.pmax[0] = 0.3;
    cfg.seed = 7;
    eth_link_config lc;
    lc.tx_fifo_frames = 64;
    star s(cfg, 2, {lc});
    const uint32_t n = 500;
    std::vector<eth_frame> fs;
    for (uint32_t k = 0; k < n; ++k) {
        fs.push_back(roce_frame(0, 1, 1024, k, 0xC000, k % 10 == 9 ? 0x00 : 0x02));
    }
    const size_t len = fs[0].data.size();
    s.send(0, std::move(fs), sc_time(1, sc_core::SC_US));
    sc_core::sc_spawn(
        [&] {
            s.links[1]->set_xoff(0, 0x01, true);  // host 1 pauses the switch's port 1
            sc_core::wait(sc_time(200, sc_core::SC_US));
            s.links[1]->set_xoff(0, 0x01, false);
        },
        "receiver");
    sc_core::sc_start();
    ASSERT_EQ(s.hosts[1]->frames.size(), n);
    double expect = 0;
    double var = 0;
    uint32_t marked = 0;
    for (uint32_t k = 0; k < n; ++k) {
        const auto& d = s.hosts[1]->frames[k].frame.data;
        ASSERT_EQ(s.hosts[1]->frames[k].frame.flow_id, k);
        const double q = static_cast<double>(k * len);
        const bool ce = (d[15] & 3) == 3;
        EXPECT_TRUE(ipv4_checksum_ok(d));
        EXPECT_TRUE(icrc_ok(d));
        if (k % 10 == 9) {
            EXPECT_EQ(d[15] & 3, 0) << "not ECT: never marked";
            continue;
        }
        if (q <= 50000) {
            EXPECT_FALSE(ce) << k;
        } else if (q > 400000) {
            EXPECT_TRUE(ce) << k;
        } else {
            const double p = 0.3 * (q - 50000) / (400000 - 50000);
            expect += p;
            var += p * (1 - p);
            marked += ce ? 1 : 0;
        }
    }
    EXPECT_GT(var, 10.0);
    EXPECT_NEAR(marked, expect, 4 * std::sqrt(var));
    EXPECT_EQ(s.sw->buffer().at(1, 0).egress_peak_bytes, n * len);
}

// DWRR between two backlogged priorities with weights 1 and 3: bytes served 1:3.
TEST(EthSwitch, DwrrSharesFollowTheWeights) {
    switch_config cfg;
    cfg.scheduler = "dwrr";
    cfg.dwrr_weights = {1, 3, 1, 1, 1, 1, 1, 1};
    const uint32_t per_sender = 400;
    star s(cfg, 3);
    for (uint32_t i = 1; i <= 2; ++i) {
        std::vector<eth_frame> fs;
        for (uint32_t k = 0; k < per_sender; ++k) {
            // Host 1: DSCP 0 (priority 0); host 2: DSCP 8 (priority 1).
            fs.push_back(roce_frame(i, 0, 1024, i * 1000 + k, 0xC000, i == 1 ? 0x02 : 0x22));
        }
        s.send(i, std::move(fs));
    }
    sc_core::sc_start();
    ASSERT_EQ(s.hosts[0]->frames.size(), 2 * per_sender);
    // While both are backlogged (the first 400 frames out: priority 1 runs out near 533).
    uint64_t bytes[2] = {0, 0};
    for (size_t k = 50; k < 400; ++k) {
        const auto& r = s.hosts[0]->frames[k];
        bytes[r.frame.flow_id / 1000 - 1] += r.frame.data.size();
    }
    EXPECT_NEAR(static_cast<double>(bytes[1]) / static_cast<double>(bytes[0]), 3.0, 0.15);
    EXPECT_EQ(s.total_drops(), 0u);
}

// Strict priority: once both are queued, priority 1 leaves before any more priority 0.
TEST(EthSwitch, StrictPriorityServesTheHigherFirst) {
    switch_config cfg;
    cfg.scheduler = "strict";
    star s(cfg, 3);
    std::vector<eth_frame> lo;
    std::vector<eth_frame> hi;
    for (uint32_t k = 0; k < 100; ++k) {
        lo.push_back(roce_frame(1, 0, 1024, 1000 + k, 0xC000, 0x02));
        hi.push_back(roce_frame(2, 0, 1024, 2000 + k, 0xC000, 0x22));
    }
    s.send(1, std::move(lo));
    s.send(2, std::move(hi), sc_time(2, sc_core::SC_US));  // after priority 0 has a backlog
    sc_core::sc_start();
    ASSERT_EQ(s.hosts[0]->frames.size(), 200u);
    size_t first_hi = 0;
    size_t last_hi = 0;
    for (size_t k = 0; k < 200; ++k) {
        if (s.hosts[0]->frames[k].frame.flow_id >= 2000) {
            first_hi = first_hi == 0 ? k : first_hi;
            last_hi = k;
        }
    }
    EXPECT_EQ(last_hi - first_hi, 99u) << "priority 1 frames leave back to back";
    EXPECT_LT(first_hi, 100u);
}

TEST(EthSwitchConfig, ParsesKeysAndNamesBadOnesByPath) {
    rnic::config::parse_context pc;
    const nlohmann::json j = {{"buffer_bytes", 1 << 20},
                              {"scheduler", "dwrr"},
                              {"dwrr_weights", {1, 2, 3, 4, 5, 6, 7, 8}},
                              {"lossless", {true, false, true, false, true, false, true, false}},
                              {"ecn", {true, false, false, false, false, false, false, false}},
                              {"kmin_bytes", {1000, 0, 0, 0, 0, 0, 0, 0}},
                              {"kmax_bytes", {2000, 0, 0, 0, 0, 0, 0, 0}},
                              {"pmax", {0.5, 0, 0, 0, 0, 0, 0, 0}},
                              {"cut_through", true}};
    const switch_config c = rnic::fabric::parse_switch_config(rnic::config::reader(j, "sw", pc));
    EXPECT_TRUE(pc.errors.empty());
    EXPECT_EQ(c.buffer_bytes, 1u << 20);
    EXPECT_EQ(c.scheduler, "dwrr");
    EXPECT_EQ(c.dwrr_weights[7], 8u);
    EXPECT_FALSE(c.lossless[1]);
    EXPECT_TRUE(c.cut_through);
    EXPECT_EQ(c.dscp_to_priority[26], 3);  // default DSCP >> 3

    rnic::config::parse_context bad;
    const nlohmann::json b = {{"scheduler", "fifo"},
                              {"xon_bytes", 70000},
                              {"pmax", {2, 0, 0, 0, 0, 0, 0, 0}},
                              {"ecn", {true, false, false, false, false, false, false, false}},
                              {"speed", 1}};
    (void)rnic::fabric::parse_switch_config(rnic::config::reader(b, "topology.switches.0", bad));
    ASSERT_GE(bad.errors.size(), 5u);
    for (const char* key : {"scheduler", "xon_bytes", "pmax", "kmax_bytes", "speed"}) {
        bool found = false;
        for (const auto& e : bad.errors) {
            found = found || e.rfind(std::string("topology.switches.0.") + key, 0) == 0;
        }
        EXPECT_TRUE(found) << key;
    }
}

// Pauses propagate hop by hop: senders 1..4 on switch A, receiver 0 on switch B, A-B at
// 400 Gb/s so B's 100 Gb/s downlink is the bottleneck. B's ingress from A crosses XOFF and
// pauses A's port toward B; A's queue to B then fills and A pauses every sender. Nothing is
// lost, everything arrives.
TEST(EthSwitch, PausesPropagateHopByHop) {
    rnic::hw::sim_context ctx;
    switch_config cfg;
    cfg.xoff_bytes = 32768;
    cfg.xon_bytes = 16384;
    eth_switch a("a", cfg, 5, ctx);
    eth_switch b("b", cfg, 2, ctx);
    eth_link_config host_link;
    eth_link_config trunk_cfg;
    trunk_cfg.rate_gbps = 400;
    std::vector<std::unique_ptr<eth_link>> links;
    std::vector<std::unique_ptr<host>> hosts;
    for (uint32_t i = 0; i < 5; ++i) {
        links.push_back(
            std::make_unique<eth_link>(("h" + std::to_string(i)).c_str(), host_link, ctx));
        hosts.push_back(std::make_unique<host>());
        links[i]->attach(0, hosts[i].get());
        links[i]->set_mac(0, host_mac(i));
    }
    eth_link trunk("trunk", trunk_cfg, ctx);
    // A: port 0 to B, ports 1..4 to hosts 1..4. B: port 0 to A, port 1 to host 0.
    a.connect(0, trunk, 0);
    b.connect(0, trunk, 1);
    b.connect(1, *links[0], 1);
    a.set_port_address(0, port_mac(20), 0);
    b.set_port_address(0, port_mac(30), 0);
    b.set_port_address(1, port_mac(0), gateway_ip(0));
    a.set_neighbor_mac(0, port_mac(30));
    b.set_neighbor_mac(0, port_mac(20));
    b.set_neighbor_mac(1, host_mac(0));
    for (uint32_t i = 1; i <= 4; ++i) {
        a.connect(i, *links[i], 1);
        a.set_port_address(i, port_mac(i), gateway_ip(i));
        a.set_neighbor_mac(i, host_mac(i));
        a.add_route(host_ip(i) & 0xFFFFFF00u, 24, {i});
        b.add_route(host_ip(i) & 0xFFFFFF00u, 24, {0});
    }
    a.add_route(host_ip(0) & 0xFFFFFF00u, 24, {0});
    b.add_route(host_ip(0) & 0xFFFFFF00u, 24, {1});
    const uint32_t per_sender = 200;
    for (uint32_t i = 1; i <= 4; ++i) {
        sc_core::sc_spawn(
            [&, i] {
                for (uint32_t k = 0; k < per_sender; ++k) {
                    links[i]->tx(0).put(roce_frame(i, 0, 1024, i * 1000 + k));
                }
            },
            sc_core::sc_gen_unique_name("host"));
    }
    sc_core::sc_start();
    EXPECT_EQ(hosts[0]->frames.size(), 4 * per_sender);
    uint64_t drops = 0;
    for (uint32_t p = 0; p < 5; ++p) {
        drops += a.port(p).drops;
    }
    drops += b.port(0).drops + b.port(1).drops;
    EXPECT_EQ(drops, 0u);
    // Hop 1: B paused A's trunk port. Hop 2: A paused every sender.
    EXPECT_GT(trunk.get_stats(1).pfc_frames, 0u) << "B sent pause frames up the trunk";
    EXPECT_GT(trunk.get_stats(0).pauses, 0u);
    EXPECT_GT(trunk.get_stats(0).pause_ps, 0u) << "A's port toward B was paused";
    for (uint32_t i = 1; i <= 4; ++i) {
        EXPECT_GT(links[i]->get_stats(1).pfc_frames, 0u) << "A paused sender " << i;
        EXPECT_GT(links[i]->get_stats(0).pause_ps, 0u) << i;
        EXPECT_GT(a.queue(i, 0).pauses_sent, 0u) << i;
    }
    EXPECT_GT(a.buffer().at(0, 0).egress_peak_bytes, cfg.xoff_bytes)
        << "A's queue toward B backed up";
}

// An idle switch costs nothing: elaborated, connected, no traffic: the simulation has no
// event to run and ends at time 0.
TEST(EthSwitch, IdleSwitchSchedulesNothing) {
    switch_config cfg;
    star s(cfg, 64);
    sc_core::sc_start();
    EXPECT_EQ(sc_core::sc_time_stamp(), sc_core::SC_ZERO_TIME);
    EXPECT_FALSE(sc_core::sc_pending_activity());
    EXPECT_LE(sc_core::sc_delta_count(), 2u);
}

// A lossless headroom too small for the cable is not silent: the frames beyond XOFF + headroom
// are dropped and counted on their ingress queue.
TEST(EthSwitch, LosslessHeadroomOverflowIsCounted) {
    switch_config cfg;
    cfg.xoff_bytes = 16384;
    cfg.xon_bytes = 8192;
    cfg.headroom_bytes = 1200;  // about one frame; 12.5 kB are in flight each way
    eth_link_config lc;
    lc.propagation_ns = 1000;
    star s(cfg, 3, {lc});
    for (uint32_t i = 1; i <= 2; ++i) {
        std::vector<eth_frame> fs;
        for (uint32_t k = 0; k < 100; ++k) {
            fs.push_back(roce_frame(i, 0, 1024, i * 1000 + k));
        }
        s.send(i, std::move(fs));
    }
    sc_core::sc_start();
    const uint64_t drops = s.sw->queue(1, 0).drops + s.sw->queue(2, 0).drops;
    EXPECT_GT(drops, 0u);
    EXPECT_EQ(drops, s.total_drops());
    EXPECT_EQ(s.sw->queue(1, 0).lossless_drops + s.sw->queue(2, 0).lossless_drops, drops)
        << "a lossless priority's drops are counted as such";
    EXPECT_EQ(s.hosts[0]->frames.size() + drops, 200u);
    EXPECT_LE(s.sw->buffer().at(1, 0).ingress_peak_bytes, cfg.xoff_bytes + cfg.headroom_bytes);
}

// Dynamic XOFF: with xoff_alpha the ingress queues pause at reserved + alpha x the free shared
// pool when that is below xoff_bytes, so an incast that the static threshold alone would let
// fill the buffer pauses early: every ingress peak stays within that bound (taken at an empty
// pool, its largest value) plus headroom, the buffer never fills, nothing is lost.
TEST(EthSwitch, DynamicXoffPausesBeforeTheBufferFills) {
    switch_config cfg;
    cfg.buffer_bytes = 262144;
    cfg.reserved_bytes = 1024;
    cfg.xoff_bytes = 200000;  // static threshold alone: 4 x 200 kB would not fit
    cfg.xon_bytes = 190000;
    cfg.xoff_alpha = 0.125;
    cfg.headroom_bytes = 24000;
    const uint32_t senders = 4;
    star s(cfg, senders + 1);
    for (uint32_t i = 1; i <= senders; ++i) {
        std::vector<eth_frame> fs;
        for (uint32_t k = 0; k < 300; ++k) {
            fs.push_back(roce_frame(i, 0, 1024, i * 1000 + k));
        }
        s.send(i, std::move(fs));
    }
    sc_core::sc_start();
    EXPECT_EQ(s.hosts[0]->frames.size(), senders * 300u);
    EXPECT_EQ(s.total_drops(), 0u);
    const uint64_t shared = cfg.buffer_bytes - 5 * 8 * cfg.reserved_bytes;
    const double bound = cfg.reserved_bytes + cfg.xoff_alpha * shared + cfg.headroom_bytes;
    for (uint32_t i = 1; i <= senders; ++i) {
        EXPECT_GT(s.sw->queue(i, 0).pauses_sent, 0u) << i;
        EXPECT_LE(s.sw->buffer().at(i, 0).ingress_peak_bytes, bound) << i;
    }
    EXPECT_LT(s.sw->buffer_peak(), cfg.buffer_bytes);
}

// Frames arriving at the same instant are taken in ingress port order, whatever order the
// kernel runs the links' processes in: here port 2's link is elaborated (and so runs) first,
// yet port 1's frame leaves first, as it does when the links are elaborated the other way.
TEST(EthSwitch, SameInstantArrivalsGoInIngressPortOrder) {
    rnic::hw::sim_context ctx;
    switch_config cfg;
    eth_switch sw("sw", cfg, 3, ctx);
    eth_link_config lc;
    eth_link l2("l2", lc, ctx);
    eth_link l1("l1", lc, ctx);
    eth_link l0("l0", lc, ctx);
    host h0;
    host h1;
    host h2;
    l0.attach(0, &h0);
    l1.attach(0, &h1);
    l2.attach(0, &h2);
    sw.connect(2, l2, 1);
    sw.connect(1, l1, 1);
    sw.connect(0, l0, 1);
    for (uint32_t p = 0; p < 3; ++p) {
        sw.set_port_address(p, port_mac(p), gateway_ip(p));
    }
    sw.set_neighbor_mac(0, host_mac(0));
    sw.add_route(host_ip(0) & 0xFFFFFF00u, 24, {0});
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(sc_time(10, SC_NS));
            l2.tx(0).put(roce_frame(2, 0, 500, 2000));
            l1.tx(0).put(roce_frame(1, 0, 500, 1000));
        },
        "hosts");
    sc_core::sc_start();
    ASSERT_EQ(h0.frames.size(), 2u);
    EXPECT_EQ(h0.frames[0].frame.flow_id, 1000u) << "port 1 before port 2";
    EXPECT_EQ(h0.frames[1].frame.flow_id, 2000u);
}

namespace {

// PFC storm (issue 27): host 0 keeps asserting XOFF on priority 0 from 1 ns on (a NIC stuck
// in XOFF), host 1 sends it 200 frames. The switch's queue toward host 0 fills, its ingress
// from host 1 crosses XOFF and pauses host 1: the storm spreads. Returns the bench after
// `run_us`.
constexpr uint32_t STORM_FRAMES = 200;
std::unique_ptr<star> storm(const switch_config& cfg, double run_us) {
    auto s = std::make_unique<star>(cfg, 2);
    star* sp = s.get();
    sc_core::sc_spawn(
        [sp]() {
            sc_core::wait(1, SC_NS);
            sp->links[0]->set_xoff(0, 1, true);  // never released
        },
        "stuck_nic");
    std::vector<eth_frame> fs;
    for (uint32_t k = 0; k < STORM_FRAMES; ++k) {
        fs.push_back(roce_frame(1, 0, 1000, k));
    }
    s->send(1, std::move(fs));
    sc_core::sc_start(run_us, sc_core::SC_US);
    return s;
}

uint64_t data_frames(const host& h) {
    return h.frames.size();
}

// The switch's pause frames to host 1 (side 1 of link 1): their times and whether XOFF.
std::vector<std::pair<sc_time, bool>> pauses_to_host1(const star& s) {
    std::vector<std::pair<sc_time, bool>> out;
    for (const auto& c : s.caps[1]) {
        uint8_t cev = 0;
        rnic::fabric::pfc_quanta q{};
        if (c.side == 1 && rnic::fabric::parse_pfc_frame(c.data, cev, q) && (cev & 1)) {
            out.emplace_back(c.tx_start, q[0] != 0);
        }
    }
    return out;
}

}  // namespace

// Without the watchdog the storm holds: nothing reaches host 0, host 1 stays paused, its
// frames stay in the buffer.
TEST(EthSwitchWatchdog, WithoutItAStormSpreadsToTheSender) {
    switch_config cfg;
    cfg.pfc_deadlock_detect_ns = 0;
    auto s = storm(cfg, 300);
    EXPECT_EQ(data_frames(*s->hosts[0]), 0u);
    EXPECT_TRUE(s->sw->buffer().at(1, 0).xoff) << "host 1 still paused";
    EXPECT_GT(s->sw->buffer_used(), 0u);
    EXPECT_EQ(s->sw->queue(0, 0).pfcwd_storms, 0u);
    const auto p = pauses_to_host1(*s);
    ASSERT_FALSE(p.empty());
    for (const auto& x : p) {
        EXPECT_TRUE(x.second) << "no XON to host 1";
    }
}

// Watchdog, action drop, detection 50 us: 50 us after host 0's pause reached the switch the
// queue toward it is in a storm: its frames are dropped (counted), the ingress from host 1
// drains below XON (the switch's XON goes out at that instant), host 1 sends the rest, which
// is dropped as it arrives while the storm lasts (restoration 1 ms, past the run). Every
// frame is accounted for: all 200 dropped by the watchdog, none delivered, no lossless drop.
TEST(EthSwitchWatchdog, DropActionBreaksTheStormAndCountsItsDrops) {
    switch_config cfg;
    cfg.pfc_deadlock_detect_ns = 0;
    cfg.pfc_watchdog.detection_ns = 50000;
    cfg.pfc_watchdog.restoration_ns = 1e6;
    cfg.pfc_watchdog.action = "drop";
    auto s = storm(cfg, 300);
    EXPECT_EQ(s->sw->queue(0, 0).pfcwd_storms, 1u);
    EXPECT_EQ(s->sw->queue(0, 0).pfcwd_drops, STORM_FRAMES);
    EXPECT_EQ(data_frames(*s->hosts[0]), 0u);
    EXPECT_EQ(s->sw->buffer_used(), 0u);
    EXPECT_FALSE(s->sw->buffer().at(1, 0).xoff) << "host 1 released";
    EXPECT_EQ(s->sw->queue(1, 0).lossless_drops, 0u);
    // The queue toward host 0 first holds a frame under the pause when host 1's first frame is
    // ready: its last bit in at 10 ns + (1082 - 12) byte times + 50 ns, plus the 400 ns
    // pipeline (a 1000-byte SEND Only is a 1058-byte frame, 1082 on the wire). The XON to
    // host 1 leaves when the storm is declared, 50 us after that (the pause check runs then).
    const double pause_at_ns = 10 + (1082 - 12) * 0.08 + 50 + 400;
    const auto p = pauses_to_host1(*s);
    ASSERT_GE(p.size(), 2u);
    EXPECT_TRUE(p.front().second);
    sc_time xon;
    for (const auto& x : p) {
        if (!x.second) {
            xon = x.first;
            break;
        }
    }
    EXPECT_NEAR(xon.to_seconds() * 1e9, pause_at_ns + 50000, 1.0);
}

// Watchdog, action forward: the queue stops honouring the pauses for the storm and sends;
// host 0 gets every frame, nothing is dropped.
TEST(EthSwitchWatchdog, ForwardActionSendsIgnoringThePauses) {
    switch_config cfg;
    cfg.pfc_deadlock_detect_ns = 0;
    cfg.pfc_watchdog.detection_ns = 50000;
    cfg.pfc_watchdog.restoration_ns = 1e6;
    cfg.pfc_watchdog.action = "forward";
    auto s = storm(cfg, 300);
    EXPECT_EQ(s->sw->queue(0, 0).pfcwd_storms, 1u);
    EXPECT_EQ(s->sw->queue(0, 0).pfcwd_drops, 0u);
    EXPECT_EQ(data_frames(*s->hosts[0]), STORM_FRAMES);
    EXPECT_EQ(s->total_drops(), 0u);
}
