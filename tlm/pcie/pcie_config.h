// SPDX-License-Identifier: Apache-2.0
// PCIe link parameters (rnic.pcie in a scenario).
#pragma once

#include <cstdint>

#include "hw/common/config_reader.h"

namespace rnic::fabric {

struct pcie_config {
    uint32_t gen = 3;             // 1..5: 2.5, 5, 8, 16, 32 GT/s per lane
    uint32_t lanes = 16;          // 1, 2, 4, 8, 16
    uint32_t mps = 256;           // max payload size, bytes (128..4096, power of two)
    uint32_t mrrs = 512;          // max read request size, bytes (128..4096, power of two)
    bool rcb_completions = false; // root complex splits completions at the 64 B RCB
    uint32_t max_read_tags = 64;  // outstanding non-posted requests
    double latency_ns = 120;      // one-way latency of the link and root complex pipeline
    uint32_t ack_limit = 0;       // bytes of TLPs per ACK DLLP; 0 = from the spec table
    uint32_t fc_update = 0;       // bytes of TLPs per FC update DLLP; 0 = from the spec table
    bool ecrc = false;            // +4 B per TLP

    double raw_gbps() const;      // GT/s x lanes x encoding
    double tlp_bytes_per_ns() const;  // after DLLP and SKP overhead
    uint32_t effective_ack_limit() const;
    uint32_t effective_fc_update() const;
};

pcie_config parse_pcie_config(config::reader r);

}  // namespace rnic::fabric
