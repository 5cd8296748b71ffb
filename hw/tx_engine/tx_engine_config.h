// SPDX-License-Identifier: Apache-2.0
// Transmit engine parameters (rnic.tx_engine).
#pragma once

#include <cstdint>
#include <string>

#include "hw/common/config_reader.h"
#include "hw/common/transport_config.h"

namespace rnic::hw {

// The transmit scheduler (rnic.tx_engine.scheduler; hw/tx_engine/README.md, "Scheduler").
struct tx_scheduler_config {
    // "fifo": one message at a time, in the order the requester made them (responses first,
    // then go-back-N resends, then new requests; a paced packet holds the whole engine).
    // "round_robin": per-QP arbitration at packet granularity: QPs with work take turns of up
    // to burst_packets packets; a QP whose rate limiter slot is not due or whose congestion
    // window is full is skipped.
    std::string policy = "fifo";
    uint32_t burst_packets = 1;       // packets per turn of a QP (round_robin)
    uint32_t arbitration_cycles = 0;  // cycles per decision, before each turn's descriptor
};

struct tx_engine_config {
    uint32_t wqe_cycles = 2;            // WQE decode and QP context update: +2 cycles per WQE
    uint32_t job_fifo_depth = 16;       // requests ready to transmit
    uint32_t response_fifo_depth = 64;  // ACKs and READ responses waiting for the send path
    uint32_t max_outstanding = 1024;    // WQEs per QP sent and not yet completed
    // Cut-through payload: the send path may use a packet's payload per PCIe read request (of
    // at most pcie.mrrs bytes) as each one's completions are in, not once the whole path-MTU
    // chunk is (hw/tx_engine/README.md, "Payload reads").
    bool cut_through = false;
    tx_scheduler_config scheduler;
    transport_config transport;  // rnic.transport (loss recovery), set by the NIC
};
tx_engine_config parse_tx_engine_config(config::reader r);

}  // namespace rnic::hw
