// SPDX-License-Identifier: Apache-2.0
// NetDMA copy channel parameters (rnic.netdma).
#pragma once

#include <cstdint>

#include "hw/common/config_reader.h"

namespace rnic::hw {

struct netdma_config {
    uint32_t channels = 4;                   // copy channels, 0..32 (0 = no NetDMA)
    uint32_t chunk_bytes = 4096;             // bytes per read/write burst, 64..65536, power of 2
    uint32_t buffers = 4;                    // chunk buffers per channel (reads ahead), 1..16
    uint32_t decode_cycles = 2;              // command or descriptor decode: +2 cycles
    uint32_t completion_cycles = 2;          // status formatting before the completion write
    uint32_t max_transfer_bytes = 1u << 20;  // MaximumTransferSize, 4096..2^31
    uint32_t address_bits = 48;              // MaximumAddressSpace = 2^bits - 1, 32..64
};
netdma_config parse_netdma_config(config::reader r);

}  // namespace rnic::hw
