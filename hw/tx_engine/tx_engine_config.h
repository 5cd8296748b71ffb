// SPDX-License-Identifier: Apache-2.0
// Transmit engine parameters (rnic.tx_engine).
#pragma once

#include <cstdint>

#include "hw/common/config_reader.h"
#include "hw/common/transport_config.h"

namespace rnic::hw {

struct tx_engine_config {
    uint32_t wqe_cycles = 2;           // WQE decode and QP context update: +2 cycles per WQE
    uint32_t job_fifo_depth = 16;      // requests ready to transmit
    uint32_t response_fifo_depth = 64; // ACKs and READ responses waiting for the send path
    uint32_t max_outstanding = 1024;   // WQEs per QP sent and not yet completed
    transport_config transport;        // rnic.transport (loss recovery), set by the NIC
};
tx_engine_config parse_tx_engine_config(config::reader r);

}  // namespace rnic::hw
