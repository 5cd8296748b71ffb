// SPDX-License-Identifier: Apache-2.0
// Hardware syndromes -> NTSTATUS, in one place: CQE completion status (hsi::cqe_status) and
// command status (hsi::cmd_status). Mapping per ndkpi.md section 7.1 (the IB-syndrome row is a
// design choice, not Microsoft's): flushed -> STATUS_CANCELLED.
#pragma once

#include <cstdint>

#include "hw/hsi/hsi.h"
#include "ndk_shim/ntstatus.h"

namespace rnic::ndk {

// Status of an NDK_RESULT for a CQE with hardware syndrome `status` (an hsi::cqe_status).
NTSTATUS cqe_status_to_ntstatus(uint8_t status);
// Status of a create/modify/destroy request whose command ended with `status`.
NTSTATUS cmd_status_to_ntstatus(uint8_t status);

// Driver-side pseudo command status: the NIC never answered within the driver's timeout.
constexpr uint8_t CMD_DRIVER_TIMEOUT = 0xFF;

}  // namespace rnic::ndk
