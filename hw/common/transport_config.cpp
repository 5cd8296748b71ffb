// SPDX-License-Identifier: Apache-2.0
// rnic.transport: RC loss recovery.
#include "hw/common/transport_config.h"

namespace rnic::hw {

transport_config parse_transport_config(config::reader r, const std::string& send_path_impl) {
    transport_config c;
    std::string recovery = "go_back_n";
    r.get_one_of("recovery", recovery, {"go_back_n", "selective_repeat"});
    c.recovery =
        recovery == "selective_repeat" ? recovery_mode::SELECTIVE_REPEAT : recovery_mode::GO_BACK_N;
    r.get("sr_window", c.sr_window, 2u, 32768u);
    if (c.recovery == recovery_mode::SELECTIVE_REPEAT && send_path_impl != "model") {
        r.error("recovery",
                "selective_repeat resends single packets of a message (a descriptor that starts "
                "or ends mid-message), which the RTL send path's descriptor contract does not "
                "have (rtl/send_path/CONTRACT.md); it needs rnic.send_path.impl \"model\"");
    }
    r.finish();
    return c;
}

}  // namespace rnic::hw
