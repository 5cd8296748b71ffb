// SPDX-License-Identifier: Apache-2.0
// send_path_calibrate: drives the send path RTL built into this simulator (ours, or the one
// given as -DRNICSIM_SEND_PATH_RTL) with the conformance stimulus and prints the
// rnic.send_path.timing values that make the model match it cycle for cycle (exit 0), or the
// closest ones and the behaviour no parameter expresses (exit 1); and the quiescence window
// the RTL needs (rnic.send_path.rtl.quiescent_edges).
#include <cstdlib>
#include <iostream>

#include <systemc>

#include "rtl/send_path/send_path_core.h"
#include "testbench/rtl/send_path_calibration.h"

int sc_main(int, char**) {
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    std::cout << "RTL: " << rnic::rtl::send_path_core_source() << "\n";
    const auto r = rnic::sptest::calibrate(rnic::rtl::make_send_path_core);
    std::cout << r.report() << std::flush;
    return r.exact ? EXIT_SUCCESS : EXIT_FAILURE;
}
