// SPDX-License-Identifier: Apache-2.0
// The independent test send path (deep_send_path.sv: 6 edges from descriptor to first beat,
// its own CRC structure) and its deliberately broken builds, Verilated for the suite's own
// tests whichever RTL the simulator is built with.
#pragma once

#include <memory>

#include "rtl/send_path/send_path_core.h"

namespace rnic::rtl {

std::unique_ptr<send_path_core> make_deep_core(bool trace);
// BREAK = 1: ICRC most significant byte first.
std::unique_ptr<send_path_core> make_deep_core_icrc_order(bool trace);
// BREAK = 2: one pad byte dropped (frames with pad end a byte early).
std::unique_ptr<send_path_core> make_deep_core_pad(bool trace);
// BREAK = 3: fr_valid_o dropped for an edge after each edge the frame stream was held.
std::unique_ptr<send_path_core> make_deep_core_valid(bool trace);

}  // namespace rnic::rtl
