// SPDX-License-Identifier: Apache-2.0
// Interim factory for the send path while the RTL swap lands: the model only. A weak symbol,
// so hw/send_path's own make_send_path (model / rtl / lockstep) replaces it when linked.
#include "hw/send_path/send_path_if.h"
#include "hw/send_path/send_path_model.h"

namespace rnic::hw {

__attribute__((weak)) std::unique_ptr<sc_core::sc_module> make_send_path(
    const char* name, const send_path_config& cfg, const clock_domain& clk,
    channel<fabric::eth_frame>& mac_tx, sim_context& ctx, send_path_if*& out) {
    auto m = std::make_unique<send_path_model>(name, cfg, clk, mac_tx, ctx);
    out = m.get();
    return m;
}

}  // namespace rnic::hw
