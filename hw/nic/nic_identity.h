// SPDX-License-Identifier: Apache-2.0
// Addresses of one NIC port (from the topology).
#pragma once

#include <array>
#include <cstdint>

namespace rnic::hw {

struct nic_identity {
    uint32_t node_id = 0;
    std::array<uint8_t, 6> mac{};
    uint32_t ip = 0;  // IPv4, host order
    // The node's oscillator: its offset from nominal, in ppm (topology.clocks). It sets the
    // period of the NIC's core clock and the bit time of its MAC (tlm/ethernet).
    double clock_ppm = 0;
};

}  // namespace rnic::hw
