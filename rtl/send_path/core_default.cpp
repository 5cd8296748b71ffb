// SPDX-License-Identifier: Apache-2.0
// The send path RTL built into the simulator (ours, or RNICSIM_SEND_PATH_RTL's).
#include "Vsend_path.h"
#include "Vsend_path___024root.h"  // clock trigger state (verilated_core.h, fast edges)
#include "hw/send_path/send_path_config.h"
#include "rtl/send_path/verilated_core.h"

#ifndef RNICSIM_SEND_PATH_RTL_QUIESCENT_EDGES
#define RNICSIM_SEND_PATH_RTL_QUIESCENT_EDGES 4
#endif
#ifndef RNICSIM_SEND_PATH_RTL_SOURCE
#define RNICSIM_SEND_PATH_RTL_SOURCE "rtl/send_path/send_path.sv"
#endif

namespace rnic::rtl {

std::unique_ptr<send_path_core> make_send_path_core(bool trace) {
    return std::make_unique<verilated_core<Vsend_path>>(trace);
}

const char* send_path_core_source() {
    return RNICSIM_SEND_PATH_RTL_SOURCE;
}

}  // namespace rnic::rtl

namespace rnic::hw {

uint32_t built_in_rtl_quiescent_edges() {
    return RNICSIM_SEND_PATH_RTL_QUIESCENT_EDGES;
}

}  // namespace rnic::hw
