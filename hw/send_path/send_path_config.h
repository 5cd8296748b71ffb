// SPDX-License-Identifier: Apache-2.0
// Send path parameters (rnic.send_path).
#pragma once

#include <cstdint>
#include <string>

#include "hw/common/config_reader.h"

namespace rnic::hw {

struct send_path_config {
    std::string impl = "model";           // "model" | "rtl" | "lockstep"
    uint32_t desc_fifo_depth = 8;         // message descriptors
    uint32_t payload_fifo_bytes = 16384;  // payload buffer in front of the packet builder
    // DSCP of the RoCEv2 frames it builds (ECN field ECT(0)); a switch maps it to a priority
    // (default DSCP >> 3) for queueing and PFC. The RTL sends DSCP 0 only.
    uint32_t dscp = 0;
};
send_path_config parse_send_path_config(config::reader r);

}  // namespace rnic::hw
