// SPDX-License-Identifier: Apache-2.0
// Partitioning of the topology over ranks (partition.h).
#include "testbench/distributed/partition.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace rnic::distributed {

namespace {
struct union_find {
    std::vector<size_t> parent;
    explicit union_find(size_t n)
        : parent(n) {
        std::iota(parent.begin(), parent.end(), 0);
    }
    size_t find(size_t x) {
        while (parent[x] != x) {
            x = parent[x] = parent[parent[x]];
        }
        return x;
    }
    void unite(size_t a, size_t b) {
        a = find(a);
        b = find(b);
        if (a != b) {
            parent[std::max(a, b)] = std::min(a, b);
        }
    }
};
}  // namespace

partition automatic_partition(const scenario::topology_config& t, int ranks) {
    const size_t nodes = t.nodes.size();
    const size_t switches = t.switches.size();
    partition p;
    p.ranks = ranks;
    p.node_rank.assign(nodes, 0);
    p.switch_rank.assign(switches, 0);
    // Elements: switches first (0..S-1), then nodes (S..S+N-1): a group's representative is
    // its lowest switch, else its lowest node.
    union_find uf(switches + nodes);
    auto id = [&](const scenario::link_end& e) {
        return e.is_switch ? e.index : switches + e.index;
    };
    for (const auto& l : t.links) {
        if (l.a.is_switch && l.b.is_switch) {
            continue;  // switch-to-switch links are where cuts go
        }
        uf.unite(id(l.a), id(l.b));
    }
    size_t group_count = 0;
    for (size_t e = 0; e < switches + nodes; ++e) {
        group_count += uf.find(e) == e ? 1 : 0;
    }
    if (group_count < static_cast<size_t>(ranks)) {
        // Fewer groups than ranks (one switch, a star): every node and switch is its own group,
        // and host links are cut too.
        uf = union_find(switches + nodes);
    }
    // Expected work: a node (its NIC and host) weighs NODE_WEIGHT, a switch PORT_WEIGHT per
    // port (measured on configs/fabric/websearch_64_30.json: a spine's 8 ports cost about 2.5
    // nodes' delta cycles).
    constexpr uint64_t NODE_WEIGHT = 10;
    constexpr uint64_t PORT_WEIGHT = 3;
    std::vector<uint64_t> weight(switches + nodes, 0);
    std::vector<bool> hosted(switches + nodes, false);
    for (size_t n = 0; n < nodes; ++n) {
        weight[uf.find(switches + n)] += NODE_WEIGHT;
        hosted[uf.find(switches + n)] = true;
    }
    for (size_t s = 0; s < switches; ++s) {
        weight[uf.find(s)] += PORT_WEIGHT * std::max<uint64_t>(t.switches[s].ports, 1);
    }
    uint64_t hosted_total = 0;
    std::vector<size_t> groups;
    for (size_t e = 0; e < switches + nodes; ++e) {
        if (uf.find(e) == e) {
            groups.push_back(e);
            hosted_total += hosted[e] ? weight[e] : 0;
        }
    }
    // Groups with nodes (a leaf and its hosts) go to ranks in order, contiguously: a group goes
    // to the rank its middle falls in when these groups are laid end to end over the ranks'
    // equal shares of their total weight.
    std::vector<int> group_rank(switches + nodes, 0);
    std::vector<uint64_t> load(static_cast<size_t>(ranks), 0);
    uint64_t acc = 0;
    for (size_t g : groups) {
        if (!hosted[g]) {
            continue;
        }
        const uint64_t mid2 = 2 * acc + weight[g];  // twice the middle
        const int r = static_cast<int>(
            std::min<uint64_t>(static_cast<uint64_t>(ranks) - 1,
                               mid2 * static_cast<uint64_t>(ranks) / (2 * hosted_total)));
        group_rank[g] = r;
        load[static_cast<size_t>(r)] += weight[g];
        acc += weight[g];
    }
    // Switches without nodes (spines) then even the load out: each, in order, to the rank with
    // the least weight so far (the lowest such rank on a tie).
    for (size_t g : groups) {
        if (hosted[g]) {
            continue;
        }
        const auto r =
            static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        group_rank[g] = static_cast<int>(r);
        load[r] += weight[g];
    }
    for (size_t s = 0; s < switches; ++s) {
        p.switch_rank[s] = group_rank[uf.find(s)];
    }
    for (size_t n = 0; n < nodes; ++n) {
        p.node_rank[n] = group_rank[uf.find(switches + n)];
    }
    return p;
}

partition partition_for(const scenario::topology_config& t, int ranks) {
    if (t.partition_parts == 0) {
        return automatic_partition(t, ranks);
    }
    if (t.partition_parts != static_cast<size_t>(ranks)) {
        throw std::runtime_error("topology.partition: " + std::to_string(t.partition_parts) +
                                 " parts given, but the run has " + std::to_string(ranks) +
                                 " ranks (one part per rank)");
    }
    partition p;
    p.ranks = ranks;
    p.node_rank = t.partition_node;
    p.switch_rank = t.partition_switch;
    return p;
}

sc_core::sc_time link_latency(const scenario::topology_config& t, const scenario::link_desc& l) {
    const double ps_per_byte = 8000.0 / l.cfg.rate_gbps;
    sc_core::sc_time best = sc_core::sc_max_time();
    for (const scenario::link_end& rx : {l.a, l.b}) {
        const bool ct = t.cut_through(rx);  // the receiver's own (per-tier) setting
        // As eth_link's serializer: the last bit (wire - 12 bytes of the 84-byte minimum slot),
        // or, for a cut-through receiver, the 8-byte preamble and the frame's first bytes (at
        // least none: a lower bound).
        const uint64_t in_bytes = ct ? 8 : fabric::eth_wire_bytes(0) - 12;
        // A MAC whose clock runs fast (topology.clocks, at most ppm) sends that much faster.
        const double ser_ps = t.clocks.ppm == 0 && t.clocks.jitter_ps == 0
                                  ? std::round(static_cast<double>(in_bytes) * ps_per_byte)
                                  : std::floor(static_cast<double>(in_bytes) * ps_per_byte /
                                               (1.0 + t.clocks.ppm * 1e-6)) -
                                        1;
        const sc_core::sc_time d = sc_core::sc_time(ser_ps, sc_core::SC_PS) +
                                   sc_core::sc_time(l.cfg.propagation_ns, sc_core::SC_NS);
        best = std::min(best, d);
    }
    return best;
}

sc_core::sc_time lookahead(const scenario::topology_config& t, const partition& p) {
    sc_core::sc_time la = sc_core::sc_max_time();
    for (const auto& l : t.links) {
        if (p.is_cut(l)) {
            la = std::min(la, link_latency(t, l));
        }
    }
    return la;
}

}  // namespace rnic::distributed
