// SPDX-License-Identifier: Apache-2.0
// NetDMA copy channel parameters.
#include "hw/netdma/netdma_config.h"

#include "hw/hsi/hsi.h"

namespace rnic::hw {

netdma_config parse_netdma_config(config::reader r) {
    netdma_config c;
    r.get("channels", c.channels, 0u, hsi::NETDMA_MAX_CHANNELS);
    r.get("chunk_bytes", c.chunk_bytes, 64u, 65536u);
    if ((c.chunk_bytes & (c.chunk_bytes - 1)) != 0) {
        r.error("chunk_bytes", std::to_string(c.chunk_bytes) + " is not a power of two");
    }
    r.get("buffers", c.buffers, 1u, 16u);
    r.get("decode_cycles", c.decode_cycles, 0u, 1000u);
    r.get("completion_cycles", c.completion_cycles, 0u, 1000u);
    r.get("max_transfer_bytes", c.max_transfer_bytes, 4096u, 1u << 31);
    r.get("address_bits", c.address_bits, 32u, 64u);
    r.finish();
    return c;
}

}  // namespace rnic::hw
