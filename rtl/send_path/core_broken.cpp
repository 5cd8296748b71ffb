// SPDX-License-Identifier: Apache-2.0
// Deliberately broken variants of rtl/send_path/send_path.sv (parameter BREAK) that the
// conformance suite must catch: one cycle late, and a wrong ICRC byte.
#include "Vsend_path_badcrc.h"
#include "Vsend_path_badcrc___024root.h"
#include "Vsend_path_late.h"
#include "Vsend_path_late___024root.h"
#ifdef RNICSIM_OURS_SEPARATE
#include "Vsend_path_ours.h"
#include "Vsend_path_ours___024root.h"
#endif
#include "rtl/send_path/send_path_broken.h"
#include "rtl/send_path/verilated_core.h"

namespace rnic::rtl {

std::unique_ptr<send_path_core> make_send_path_core_late(bool trace) {
    return std::make_unique<verilated_core<Vsend_path_late>>(trace);
}

std::unique_ptr<send_path_core> make_send_path_core_badcrc(bool trace) {
    return std::make_unique<verilated_core<Vsend_path_badcrc>>(trace);
}

std::unique_ptr<send_path_core> make_send_path_core_ours(bool trace) {
#ifdef RNICSIM_OURS_SEPARATE
    return std::make_unique<verilated_core<Vsend_path_ours>>(trace);
#else
    return make_send_path_core(trace);  // the built-in RTL is ours
#endif
}

}  // namespace rnic::rtl
