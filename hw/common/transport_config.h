// SPDX-License-Identifier: Apache-2.0
// RC loss recovery (rnic.transport): shared by the requester (hw/tx_engine) and the responder
// (hw/recv_path), which must agree on it.
#pragma once

#include <cstdint>
#include <string>

#include "hw/common/config_reader.h"

namespace rnic::hw {

enum class recovery_mode : uint8_t {
    GO_BACK_N,         // IBA: the responder drops what is not at its expected PSN
    SELECTIVE_REPEAT,  // IRN (Mittal et al., SIGCOMM 2018): a bitmap window, one NAK per gap
};

struct transport_config {
    recovery_mode recovery = recovery_mode::GO_BACK_N;
    // Selective repeat: PSNs past the expected one the responder can keep (its per-QP bitmap).
    uint32_t sr_window = 1024;
};

// `send_path_impl`: selective repeat resends part of a message, which only the model send
// path builds (the RTL's descriptor contract, rtl/send_path/CONTRACT.md, has whole messages).
transport_config parse_transport_config(config::reader r, const std::string& send_path_impl);

}  // namespace rnic::hw
