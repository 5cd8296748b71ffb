// SPDX-License-Identifier: Apache-2.0
// Receive path parameters (rnic.recv_path).
#pragma once

#include <cstdint>

#include "hw/common/config_reader.h"

namespace rnic::hw {

struct recv_path_config {
    uint32_t fifo_frames = 64;  // receive FIFO; a frame arriving to a full FIFO is dropped
    uint32_t parse_cycles = 4;  // header parse, ICRC check and QP lookup: +4 cycles per packet
    double placement_lag_ns =
        2000;                     // DMA writes may trail the parser by this much before it stalls
    uint32_t ack_coalesce = 1;    // ACK every Nth AckReq message (1: every one)
    double ack_delay_ns = 2000;   // ... or this long after the oldest unacknowledged one
    uint32_t rnr_timer_code = 1;  // RNR NAK timer field (IBA table: 1 = 0.01 ms)
    uint32_t rq_prefetch = 4;     // receive WQEs read ahead per RQ/SRQ
};
recv_path_config parse_recv_path_config(config::reader r);

}  // namespace rnic::hw
