// SPDX-License-Identifier: Apache-2.0
// Which rank simulates which node and switch of a partitioned run (README.md). Cuts are only on
// links; the lookahead of the conservative window loop is the smallest latency of a cut link.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>

#include "testbench/scenario/topology.h"

namespace rnic::distributed {

struct partition {
    int ranks = 1;
    std::vector<int> node_rank;    // per node
    std::vector<int> switch_rank;  // per switch

    int rank_of(const scenario::link_end& e) const {
        return e.is_switch ? switch_rank[e.index] : node_rank[e.index];
    }
    bool is_cut(const scenario::link_desc& l) const { return rank_of(l.a) != rank_of(l.b); }
};

// Automatic: every switch with the nodes cabled to it (a leaf and its hosts), and nodes cabled
// to each other, are one group, never split (with fewer groups than ranks, a star, every node
// and switch is a group of its own). Weights estimate the work: a node 10, a switch 3 per port.
// Groups with nodes go to ranks in order of their lowest switch (else node) index, contiguously,
// balanced by weight: a group goes to the rank whose equal share of their total holds the
// group's middle. Groups without nodes (spines) then go, in index order, each to the rank
// with the least weight so far. Depends on the topology and the rank count alone.
partition automatic_partition(const scenario::topology_config& t, int ranks);

// The partition of a run on `ranks` ranks: topology.partition when given (its part count must
// be `ranks`: std::runtime_error naming topology.partition otherwise), else automatic.
partition partition_for(const scenario::topology_config& t, int ranks);

// The earliest a frame entering cut link `l` in one direction can arrive at the other end:
// propagation plus the shortest frame's serialization (84 wire bytes; CUT_THROUGH_BYTES + the
// 8-byte preamble when the receiver is a cut-through switch). Both directions: the minimum.
sc_core::sc_time link_latency(const scenario::topology_config& t, const scenario::link_desc& l);

// The window loop's lookahead: the minimum link_latency over the cut links; sc_max_time() when
// no link is cut (one rank).
sc_core::sc_time lookahead(const scenario::topology_config& t, const partition& p);

}  // namespace rnic::distributed
