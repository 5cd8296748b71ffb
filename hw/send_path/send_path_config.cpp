// SPDX-License-Identifier: Apache-2.0
// Send path parameters (rnic.send_path).
#include "hw/send_path/send_path_config.h"

namespace rnic::hw {

std::string send_path_timing::describe() const {
    return "header_edges=" + std::to_string(header_edges) +
           " output_registers=" + std::to_string(output_registers) +
           " frame_gap=" + std::to_string(frame_gap) +
           " message_gap=" + std::to_string(message_gap);
}

send_path_config parse_send_path_config(config::reader r) {
    send_path_config c;
    r.get_one_of("impl", c.impl, {"model", "rtl", "lockstep"});
    r.get("desc_fifo_depth", c.desc_fifo_depth, 1u, 4096u);
    // At least one packet of the largest path MTU must fit, or a packet could never complete
    // (buffer space is returned when the packet carrying the bytes has left).
    r.get("payload_fifo_bytes", c.payload_fifo_bytes, 4096u, 1u << 24);
    {
        config::reader t = r.child("timing");
        t.get("header_edges", c.timing.header_edges, 1u, 64u);
        t.get("output_registers", c.timing.output_registers, 1u, 64u);
        t.get("frame_gap", c.timing.frame_gap, 0u, 1024u);
        t.get("message_gap", c.timing.message_gap, 0u, 1024u);
        t.finish();
    }
    {
        config::reader t = r.child("rtl");
        t.get_one_of("clock", c.rtl.clock, {"gated", "free"});
        t.get("quiescent_edges", c.rtl.quiescent_edges, 1u, 4096u);
        t.get("quiescence_check_edges", c.rtl.quiescence_check_edges, 0u, 4096u);
        t.finish();
    }
    {
        config::reader t = r.child("lockstep");
        t.get_one_of("compare", c.lockstep.compare, {"exact", "functional", "tolerance"});
        t.get("tolerance_cycles", c.lockstep.tolerance_cycles, 0u, 1u << 20);
        t.finish();
    }
    r.get("dscp", c.dscp, 0u, 63u);
    if (c.dscp != 0 && c.impl != "model") {
        r.error("dscp",
                "the RTL send path sends DSCP 0 (its IPv4 TOS is fixed); another DSCP "
                "needs impl \"model\"");
    }
    r.get_one_of("udp_sport", c.udp_sport, {"flow_label", "qpn_xor"});
    if (c.udp_sport != "flow_label" && c.impl != "model") {
        r.error("udp_sport",
                "the RTL send path derives the UDP source port from the flow label only; \"" +
                    c.udp_sport + "\" needs impl \"model\"");
    }
    r.get("cut_through", c.cut_through);
    if (c.cut_through && c.impl != "model") {
        r.error("cut_through",
                "the RTL wrapper hands a frame to the MAC at its last beat (rtl/send_path); "
                "cut-through into the MAC needs impl \"model\"");
    }
    r.finish();
    return c;
}

}  // namespace rnic::hw
