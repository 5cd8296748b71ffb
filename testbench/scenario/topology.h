// SPDX-License-Identifier: Apache-2.0
// The scenario's topology (key "topology"): nodes, switches and the links between them, in the
// explicit form every other form expands into, with addresses assigned and routes computed.
//
// Forms (configs/README.md, "Topology"):
//   back_to_back  topology.nodes (2) + topology.link: today's two nodes on one cable (default)
//   explicit      topology.nodes + topology.switches + topology.links ("node3:0", "leaf1:5")
//   generators    exactly one of topology.star / leaf_spine / fat_tree: expanded into the
//                 explicit form (what show-config prints and config.json records)
//
// Addresses: a node without "mac" gets 02:00:<index + 1, 32 bits>; without "ip" it gets
// 10.0.0.<index + 1> when it is cabled to another node, else an address in its leaf's subnet
// (10.0.0.0 + leaf x leaf_subnet_size, hosts at odd addresses 2h + 1). A node cabled to a
// switch is routed: its host port is a /31 with the switch port (ip ^ 1) as its default
// gateway, so every host reaches every other one through its leaf (which answers ARP for the
// gateway address; switches never flood ARP).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/common/config_reader.h"
#include "tlm/ethernet/eth_link.h"
#include "tlm/switch/eth_switch.h"

namespace rnic::scenario {

// One node's NIC port (topology.nodes.<i>).
struct node_config {
    std::array<uint8_t, 6> mac{};  // "02:00:00:00:00:01"
    uint32_t ip = 0;               // IPv4, host order ("10.0.0.1")
    uint32_t mtu = 1024;           // RoCE path MTU the provider uses, bytes
    // The host's IPv4 interface; unset: host.ipv4_prefix_length / host.ipv4_gateway.
    std::optional<uint32_t> prefix_length;
    std::optional<uint32_t> gateway;
};

// topology.switches.<i>: a switch with `ports` ports named "<name>:<port>".
struct switch_desc {
    std::string name;
    uint32_t ports = 0;
    double max_rate_gbps = 400;  // the fastest link a port takes
    // Its parameters: topology.switch with the element's own switch keys on top (a
    // generator's per-tier keys, e.g. topology.leaf_spine.spine, are such own keys).
    fabric::switch_config cfg;
};

// One end of a link: a node (its one NIC port, port 0) or a switch port.
struct link_end {
    bool is_switch = false;
    uint32_t index = 0;  // into nodes or switches
    uint32_t port = 0;
    bool operator==(const link_end& o) const {
        return is_switch == o.is_switch && index == o.index && port == o.port;
    }
};

struct link_desc {
    std::string name;  // module name: "link" (back_to_back) or "link<i>"
    link_end a;        // side 0 of the eth_link
    link_end b;        // side 1
    fabric::eth_link_config cfg;
};

// An IPv4 route of one switch: longest prefix match, ECMP over `ports`.
struct route {
    uint32_t prefix = 0;
    uint32_t length = 0;
    std::vector<uint32_t> ports;
    bool operator==(const route& o) const {
        return prefix == o.prefix && length == o.length && ports == o.ports;
    }
};

// topology.clocks: every node's and switch's oscillator (configs/README.md, "Clocks").
struct clocks_config {
    // Each element's offset is a uniform draw in [-ppm, +ppm] (IEEE 802.3 allows +-100 ppm per
    // port), from `seed` and the element's name ("node3", "leaf1"): the same on any number of
    // ranks. 0 (default): every clock exact.
    double ppm = 0;
    double jitter_ps = 0;  // > 0: each frame's slot on the wire stretched by up to this (uniform)
    uint64_t seed = 1;
};
// The offset `c` draws for the element named `name`.
double clock_offset_ppm(const clocks_config& c, const std::string& name);

struct topology_config {
    // "back_to_back", "explicit", "star", "leaf_spine" or "fat_tree": where it came from.
    std::string form = "back_to_back";
    std::vector<node_config> nodes;
    std::vector<switch_desc> switches;
    std::vector<link_desc> links;
    fabric::eth_link_config link;  // topology.link: the back-to-back cable / every link's defaults
    fabric::switch_config sw;      // topology.switch: the defaults of every switch's cfg
    clocks_config clocks;          // topology.clocks

    // Derived (computed by parse_topology from the above).
    // Where node i is cabled: links[node_link[i]], side node_side[i].
    std::vector<uint32_t> node_link;
    std::vector<int> node_side;
    // Per switch, per port: the link and side it is, its own MAC, its IPv4 (the gateway of the
    // node behind it; 0 on switch-to-switch ports), the neighbour's MAC.
    struct port_info {
        uint32_t link = 0;
        int side = 0;
        std::array<uint8_t, 6> mac{};
        uint32_t ip = 0;
        std::array<uint8_t, 6> neighbor_mac{};
    };
    std::vector<std::vector<port_info>> ports;
    std::vector<std::vector<route>> routes;  // per switch, in the order given to add_route
    // Per node and per switch: its clock's offset in ppm (drawn from clocks).
    std::vector<double> node_ppm;
    std::vector<double> switch_ppm;
    // The seed of the jitter stream of the MAC at `side` of links[link].
    uint64_t jitter_seed(uint32_t link, int side) const;

    // topology.partition (testbench/distributed): the parts a partitioned run gives its ranks
    // (part k to rank k), each a list of node ("node3") and switch names; every node and switch
    // in exactly one part. 0 parts: not given (the automatic partition).
    size_t partition_parts = 0;
    std::vector<int> partition_node;    // per node: its part
    std::vector<int> partition_switch;  // per switch: its part

    // Whether the receiver at `e` takes frames cut-through: a switch whose own cfg says so (a
    // generator's per-tier keys, e.g. topology.leaf_spine.leaf.cut_through, are in it), a node
    // when its NIC's receive path does (rnic.recv_path.cut_through: nic_cut_through).
    bool cut_through(const link_end& e) const {
        return e.is_switch ? e.index < switches.size() && switches[e.index].cfg.cut_through
                           : nic_cut_through;
    }
    bool nic_cut_through = false;  // rnic.recv_path.cut_through (set by parse_scenario)
    size_t hops(size_t from, size_t to) const;  // switches on a shortest path between two nodes
    // A shortest path from node `from` to node `to`: the links in order (from's cable first)
    // and the switches between them (switches.size() + 1 == links.size()). Among equal-cost
    // paths, the one through the lowest port at each switch (in the generated topologies every
    // equal-cost path crosses the same tiers, hence the same parameters).
    struct path {
        std::vector<uint32_t> links;
        std::vector<uint32_t> switches;
    };
    path path_between(size_t from, size_t to) const;
};

// Parses topology (every form), expands it, validates it, assigns addresses and computes
// routes. Errors (with JSON paths) go to the reader's context; the effective config gets the
// back-to-back form unchanged, and the explicit expansion for every other form.
topology_config parse_topology(config::reader r, config::parse_context& ctx);

// Routes of every switch: for each node, its leaf sends to its port; every other switch
// sends over all ports that start a shortest path to the node's leaf (the ECMP group).
// Destinations are aggregated to one route per leaf subnet when the smallest prefix covering
// a leaf's hosts holds no other node; otherwise each node gets a /32.
// Links marked in `down` (by index) are left out (link failures, route_epochs).
std::vector<std::vector<route>> compute_routes(const topology_config& t,
                                               const std::vector<bool>* down = nullptr);

// Link failures (topology.link(s).faults.link_down_ns) as the switches see them: per switch, its
// ports' state and its routes from each change on, recomputed without the links some switch end
// sees down (tlm/switch/README.md, "Link failure and reroute"). Empty when no link goes down or
// no switch reroutes.
std::vector<std::vector<fabric::eth_switch::route_epoch>> route_epochs(const topology_config& t);

// "02:00:00:00:00:01" / "10.0.0.1" (exposed for the tests).
bool parse_mac(const std::string& s, std::array<uint8_t, 6>& out);
bool parse_ipv4(const std::string& s, uint32_t& out);
std::string format_mac(const std::array<uint8_t, 6>& mac);
std::string format_ipv4(uint32_t ip);

}  // namespace rnic::scenario
