// SPDX-License-Identifier: Apache-2.0
// The congestion-control slice of a QP context (hw/context's qp_context holds one), so that the
// rate state is cached, evicted and written back with the rest of the QPC.
#pragma once

#include <array>
#include <cstdint>
#include <type_traits>

namespace rnic::hw::cc {

// The congestion-control slice of a QP context (104 B of the 256 B QPC line). The first fields
// are the same for every algorithm (the pacer reads them, waves.vcd and cc.csv show them); the
// scratch area belongs to the algorithm, which views it through slice<T>().
struct cc_qp_state {
    uint64_t rate_mbps = 0;     // current rate; 0: not limited (line rate)
    uint64_t target_mbps = 0;   // target rate (DCQCN R_T; TIMELY: the same as rate)
    uint32_t alpha = 0;         // congestion estimate the algorithm shows (DCQCN alpha, x1024)
    uint32_t cnps = 0;          // CNPs received by this QP (free-running)
    uint32_t window_bytes = 0;  // in-flight cap; 0: none
    uint32_t epoch = 0;         // bumped on QP reset: timers of an older incarnation are stale
    uint64_t timer_at_ps = 0;   // this QP's pending timer (0: none)
    alignas(8) std::array<uint8_t, 64> scratch{};  // algorithm-private state
};

// The algorithm's private state, kept in cc_qp_state::scratch (trivially copyable, <= 64 B).
template <typename T>
T& slice(cc_qp_state& s) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(s.scratch) &&
                  alignof(T) <= 8);
    return *reinterpret_cast<T*>(s.scratch.data());
}
template <typename T>
const T& slice(const cc_qp_state& s) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(s.scratch) &&
                  alignof(T) <= 8);
    return *reinterpret_cast<const T*>(s.scratch.data());
}

}  // namespace rnic::hw::cc
