// SPDX-License-Identifier: Apache-2.0
// What each waves.vcd signal means (`rnicsim signals`, configs/README.md): one table of name
// patterns, so a signal added to a block without a line here shows up as undocumented.
#pragma once

#include <string>

namespace rnic::output {

// The meaning of the signal with hierarchical name `name` (e.g.
// "node0.nic.doorbell.sq_ready.occupancy"); "" when no pattern documents it.
std::string signal_meaning(const std::string& name);

}  // namespace rnic::output
