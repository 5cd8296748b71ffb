// SPDX-License-Identifier: Apache-2.0
// GoogleTest main for SystemC tests (VCML test/testing.cpp pattern): main() parses the gtest
// flags and enters SystemC; sc_main() runs the tests. SystemC warnings and errors become test
// failures. Each TEST is run as its own process by ctest (gtest_discover_tests), so a TEST may
// elaborate a fresh bench and call sc_start().
#include <gtest/gtest.h>

#include <cstdlib>

#include <systemc>

namespace {
void report_to_gtest(const sc_core::sc_report& rep, const sc_core::sc_actions& actions) {
    if (rep.get_severity() >= sc_core::SC_WARNING) {
        ADD_FAILURE() << sc_core::sc_report_compose_message(rep);
    }
    sc_core::sc_report_handler::default_handler(
        rep, actions & ~(sc_core::SC_THROW | sc_core::SC_STOP | sc_core::SC_ABORT));
    if (rep.get_severity() >= sc_core::SC_ERROR) {
        throw rep;
    }
}
}  // namespace

int sc_main(int argc, char** argv) {
    sc_core::sc_report_handler::set_handler(report_to_gtest);
    return RUN_ALL_TESTS();
}

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
#ifdef RNICSIM_SOURCE_DIR_DEFAULT
    setenv("RNICSIM_SOURCE_DIR", RNICSIM_SOURCE_DIR_DEFAULT, 0);
    setenv("RNICSIM_BINARY_DIR", RNICSIM_BINARY_DIR_DEFAULT, 0);
#endif
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
