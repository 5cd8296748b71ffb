// SPDX-License-Identifier: Apache-2.0
// WQE decoder: one send-queue slot (hsi::wqe_ctrl + data segments) to a wqe_item. Pure C++, so
// it can be tested and fuzzed without a SystemC bench; wqe_fetch calls it for every slot.
#pragma once

#include <cstdint>

#include "hw/wqe_fetch/wqe_fetch.h"

namespace rnic::hw {

// Decodes the `stride` bytes at `slot` (bytes written by an untrusted driver). Reads nothing
// past slot + stride. A WQE whose size is 0 or larger than the slot, whose opcode is unknown,
// or whose SGE list, inline data or FAST_REG/BIND segment does not fit in its size comes back
// with malformed = true (it completes with CQE_LOCAL_QP_OP_ERR). qpn, flow_id and
// doorbell_time are the caller's to fill in.
wqe_item parse_wqe(const uint8_t* slot, uint32_t stride);

}  // namespace rnic::hw
