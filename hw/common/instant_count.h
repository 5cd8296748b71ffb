// SPDX-License-Identifier: Apache-2.0
#pragma once
// A count that holds for one simulated instant: what was added at the current time stamp, zero
// once time has moved on. For same-instant rules: a state change made at an edge that another
// block must not see until the next edge (hw/common/channel.h's full waits, the transmit
// engine's congestion window) is counted here and taken back out of what that block reads.
#include <cstdint>

#include <systemc>

#include "hw/common/sim_now.h"

namespace rnic::hw {

class instant_count {
public:
    void add(uint64_t n) {
        const uint64_t at = now_key();
        if (m_at != at) {
            m_at = at;
            m_count = 0;
        }
        m_count += n;
    }
    uint64_t now() const { return m_at == now_key() ? m_count : 0; }

private:
    // The time stamp plus one time unit, so that 0 means "nothing counted yet".
    static uint64_t now_key() { return sim_now().value() + 1; }
    uint64_t m_at = 0;
    uint64_t m_count = 0;
};

}  // namespace rnic::hw
