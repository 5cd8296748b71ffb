// SPDX-License-Identifier: Apache-2.0
// RNIC parameters: the `rnic` object of a scenario, one child object per block.
#include "hw/nic/nic_config.h"

#include "hw/roce/roce.h"

namespace rnic::hw {

// Each block owns the keys of its child object; this only walks them in nic_config order, so
// every error is reported with its full path (rnic.<block>.<key>) and the effective config
// lists every block, defaults filled in.
nic_config parse_nic_config(config::reader r) {
    nic_config c;
    r.get("clock_mhz", c.clock_mhz, 1.0, 5000.0);
    c.limits = parse_nic_limits(r.child("limits"));
    c.pcie = fabric::parse_pcie_config(r.child("pcie"));
    c.doorbell = parse_doorbell_config(r.child("doorbell"));
    c.wqe_fetch = parse_wqe_fetch_config(r.child("wqe_fetch"));
    c.translation = parse_translation_config(r.child("translation"));
    c.dma = parse_dma_engine_config(r.child("dma"));
    c.tx_engine = parse_tx_engine_config(r.child("tx_engine"));
    c.send_path = parse_send_path_config(r.child("send_path"));
    c.recv_path = parse_recv_path_config(r.child("recv_path"));
    c.transport = parse_transport_config(r.child("transport"), c.send_path.impl);
    c.tx_engine.transport = c.transport;  // requester and responder of one NIC agree on it
    c.recv_path.transport = c.transport;
    c.recv_path.max_frame_bytes =
        static_cast<uint32_t>(roce::frame_bytes(roce::RC_WRITE_ONLY_IMM, c.limits.max_mtu));
    c.cq_writer = parse_cq_writer_config(r.child("cq_writer"));
    c.cq = parse_cq_config(r.child("cq"));
    c.faults = parse_fault_config(r.child("faults"));
    c.cmd_processor = parse_cmd_processor_config(r.child("cmd_processor"));
    c.context_cache = parse_context_cache_config(r.child("context_cache"));
    c.netdma = parse_netdma_config(r.child("netdma"));
    c.gsi = parse_gsi_config(r.child("gsi"));
    c.cc = cc::parse_cc_config(r.child("cc"));
    if (c.tx_engine.scheduler.policy != "fifo" && c.send_path.impl != "model") {
        // Packet interleaving hands the send path message segments (tx_descriptor::
        // first_packet), which the RTL send path's descriptor pins cannot carry.
        r.error("tx_engine.scheduler.policy",
                "\"" + c.tx_engine.scheduler.policy +
                    "\" needs rnic.send_path.impl \"model\" (the RTL send path's descriptor pins "
                    "carry whole messages only; rtl/send_path/CONTRACT.md)");
    }
    if (c.cc.factory && c.send_path.impl != "model" &&
        c.cc.factory(cc::cc_env{})->wants_telemetry()) {
        r.error("cc.algorithm",
                "\"" + c.cc.algorithm +
                    "\" needs rnic.send_path.impl \"model\" (the RTL send path "
                    "builds no INT stack; hw/roce/README.md, \"In-band telemetry\")");
    } else if (c.cc.factory && c.send_path.impl != "model" &&
               c.cc.factory(cc::cc_env{})->ack_segment_bytes() != 0) {
        // Segments that ask for an ACK mid-message (tx_descriptor::first_packet) have no form
        // on the RTL send path's descriptor pins.
        r.error("cc." + c.cc.algorithm + ".segment_bytes",
                "an RTT sample per segment needs rnic.send_path.impl \"model\" (the RTL send "
                "path's descriptor pins carry whole messages only; rtl/send_path/CONTRACT.md); "
                "set it to 0 for one sample per message");
    }
    r.finish();
    return c;
}

}  // namespace rnic::hw
