// SPDX-License-Identifier: Apache-2.0
// Pin access to the Verilated builds of deep_send_path.sv.
// The Verilated headers first: verilated.h must not see SystemC's headers (it would then
// call sc_time_stamp() for its time), as in rtl/send_path/core_default.cpp.
// clang-format off
#include "Vdeep_icrc_order.h"
#include "Vdeep_icrc_order___024root.h"
#include "Vdeep_pad.h"
#include "Vdeep_pad___024root.h"
#include "Vdeep_send_path.h"
#include "Vdeep_send_path___024root.h"
#include "Vdeep_valid.h"
#include "Vdeep_valid___024root.h"
#include "rtl/send_path/verilated_core.h"
#include "testbench/rtl/external/deep_cores.h"
// clang-format on

namespace rnic::rtl {

std::unique_ptr<send_path_core> make_deep_core(bool trace) {
    return std::make_unique<verilated_core<Vdeep_send_path>>(trace);
}

std::unique_ptr<send_path_core> make_deep_core_icrc_order(bool trace) {
    return std::make_unique<verilated_core<Vdeep_icrc_order>>(trace);
}

std::unique_ptr<send_path_core> make_deep_core_pad(bool trace) {
    return std::make_unique<verilated_core<Vdeep_pad>>(trace);
}

std::unique_ptr<send_path_core> make_deep_core_valid(bool trace) {
    return std::make_unique<verilated_core<Vdeep_valid>>(trace);
}

}  // namespace rnic::rtl
