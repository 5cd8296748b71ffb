// SPDX-License-Identifier: Apache-2.0
// Deliberately broken variants of rtl/send_path/send_path.sv (parameter BREAK) that the
// conformance suite must catch: one cycle late, and a wrong ICRC byte.
#include "Vsend_path_badcrc.h"
#include "Vsend_path_badcrc___024root.h"
#include "Vsend_path_late.h"
#include "Vsend_path_late___024root.h"
#include "rtl/send_path/send_path_broken.h"
#include "rtl/send_path/verilated_core.h"

namespace rnic::rtl {

std::unique_ptr<send_path_core> make_send_path_core_late(bool trace) {
    return std::make_unique<verilated_core<Vsend_path_late>>(trace);
}

std::unique_ptr<send_path_core> make_send_path_core_badcrc(bool trace) {
    return std::make_unique<verilated_core<Vsend_path_badcrc>>(trace);
}

}  // namespace rnic::rtl
