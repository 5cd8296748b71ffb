// SPDX-License-Identifier: Apache-2.0
// Fault-injected builds of our send path RTL, for testing the conformance suite itself.
#pragma once

#include <memory>

#include "rtl/send_path/send_path_core.h"

namespace rnic::rtl {

// rtl/send_path/send_path.sv unbroken, whichever RTL is built in.
std::unique_ptr<send_path_core> make_send_path_core_ours(bool trace);
// BREAK = 1: an extra output register, every beat one cycle late.
std::unique_ptr<send_path_core> make_send_path_core_late(bool trace);
// BREAK = 2: the first ICRC byte of every frame inverted.
std::unique_ptr<send_path_core> make_send_path_core_badcrc(bool trace);

}  // namespace rnic::rtl
