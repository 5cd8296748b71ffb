// SPDX-License-Identifier: Apache-2.0
// Small numeric helpers shared across the tree (header only, no SystemC): the splitmix64 mixer
// behind every stateless seeded draw (data patterns, the mixed workload's operations, the
// switch's ECMP hash and its drop generator) and the nearest-rank percentile every latency
// summary reports.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace rnic {

// The golden-ratio increment of splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom
// number generators", OOPSLA 2014; Vigna's reference splitmix64.c).
constexpr uint64_t SPLITMIX64_GAMMA = 0x9E3779B97F4A7C15ull;

// splitmix64's output function of state `x` (the state advanced by one step first).
constexpr uint64_t splitmix64(uint64_t x) {
    x += SPLITMIX64_GAMMA;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Nearest-rank percentile: the smallest of the `sorted` (ascending, not empty) samples with at
// least a fraction `p` (0 < p <= 1) of the samples at or below it: sample ceil(p * n), 1-based.
template <typename T>
T nearest_rank(const std::vector<T>& sorted, double p) {
    const auto k = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
    return sorted[std::max<size_t>(k, 1) - 1];
}

}  // namespace rnic
