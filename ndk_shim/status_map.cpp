// SPDX-License-Identifier: Apache-2.0
// Hardware syndromes -> NTSTATUS (one table each).
#include "ndk_shim/status_map.h"

#include <array>

namespace rnic::ndk {

namespace {
// Indexed by hsi::cqe_status. ndkpi.md 7.1: local length / receive too small -> BUFFER_OVERFLOW;
// local and remote protection -> ACCESS_VIOLATION; flushed -> CANCELLED; remote operational
// error -> REMOTE_RESOURCES (ND_REMOTE_ERROR); transport and RNR retries exhausted -> IO_TIMEOUT.
constexpr std::array<NTSTATUS, 12> CQE_STATUS = {
    STATUS_SUCCESS,            // CQE_OK
    STATUS_BUFFER_OVERFLOW,    // CQE_LOCAL_LENGTH_ERR
    STATUS_ACCESS_VIOLATION,   // CQE_LOCAL_PROT_ERR
    STATUS_INVALID_PARAMETER,  // CQE_LOCAL_QP_OP_ERR (malformed request)
    STATUS_CANCELLED,          // CQE_WR_FLUSH_ERR
    STATUS_ACCESS_VIOLATION,   // CQE_MW_BIND_ERR
    STATUS_ACCESS_VIOLATION,   // CQE_REMOTE_ACCESS_ERR
    STATUS_INVALID_PARAMETER,  // CQE_REMOTE_INVALID_REQ
    STATUS_REMOTE_RESOURCES,   // CQE_REMOTE_OP_ERR
    STATUS_IO_TIMEOUT,         // CQE_RETRY_EXCEEDED
    STATUS_IO_TIMEOUT,         // CQE_RNR_RETRY_EXCEEDED
    STATUS_INTERNAL_ERROR,     // CQE_FATAL
};
static_assert(CQE_STATUS[hsi::CQE_WR_FLUSH_ERR] == STATUS_CANCELLED);
static_assert(CQE_STATUS[hsi::CQE_FATAL] == STATUS_INTERNAL_ERROR);

// Indexed by hsi::cmd_status.
constexpr std::array<NTSTATUS, 7> CMD_STATUS = {
    STATUS_SUCCESS,                 // CMD_OK
    STATUS_NOT_SUPPORTED,           // CMD_BAD_OPCODE
    STATUS_INVALID_PARAMETER,       // CMD_BAD_PARAM
    STATUS_INSUFFICIENT_RESOURCES,  // CMD_NO_RESOURCES
    STATUS_INVALID_HANDLE,          // CMD_BAD_HANDLE
    STATUS_INVALID_DEVICE_STATE,    // CMD_BUSY
    STATUS_INTERNAL_ERROR,          // CMD_DEVICE_FATAL (the device reported EVENT_DEVICE_FATAL)
};
static_assert(CMD_STATUS[hsi::CMD_NO_RESOURCES] == STATUS_INSUFFICIENT_RESOURCES);
static_assert(CMD_STATUS[hsi::CMD_DEVICE_FATAL] == STATUS_INTERNAL_ERROR);
}  // namespace

NTSTATUS cqe_status_to_ntstatus(uint8_t status) {
    return status < CQE_STATUS.size() ? CQE_STATUS[status] : STATUS_INTERNAL_ERROR;
}

NTSTATUS cmd_status_to_ntstatus(uint8_t status) {
    if (status == CMD_DRIVER_TIMEOUT) {
        return STATUS_IO_TIMEOUT;
    }
    return status < CMD_STATUS.size() ? CMD_STATUS[status] : STATUS_INTERNAL_ERROR;
}

}  // namespace rnic::ndk
