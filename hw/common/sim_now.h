// SPDX-License-Identifier: Apache-2.0
#pragma once
// The current simulation time, what sc_core::sc_time_stamp() returns, read through the kernel's
// inline accessor: sc_time_stamp() is a library call, and the blocks ask it a few dozen times
// per packet.
#include <systemc>

namespace rnic::hw {

inline const sc_core::sc_time& sim_now() {
    return sc_core::sc_get_curr_simcontext()->time_stamp();
}

}  // namespace rnic::hw
