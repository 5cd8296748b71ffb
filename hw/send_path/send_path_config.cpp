// SPDX-License-Identifier: Apache-2.0
// Send path parameters (rnic.send_path).
#include "hw/send_path/send_path_config.h"

namespace rnic::hw {

send_path_config parse_send_path_config(config::reader r) {
    send_path_config c;
    r.get_one_of("impl", c.impl, {"model", "rtl", "lockstep"});
    r.get("desc_fifo_depth", c.desc_fifo_depth, 1u, 4096u);
    // At least one packet of the largest path MTU must fit, or a packet could never complete
    // (buffer space is returned when the packet carrying the bytes has left).
    r.get("payload_fifo_bytes", c.payload_fifo_bytes, 4096u, 1u << 24);
    r.get("dscp", c.dscp, 0u, 63u);
    if (c.dscp != 0 && c.impl != "model") {
        r.error("dscp",
                "the RTL send path sends DSCP 0 (its IPv4 TOS is fixed); another DSCP "
                "needs impl \"model\"");
    }
    r.finish();
    return c;
}

}  // namespace rnic::hw
