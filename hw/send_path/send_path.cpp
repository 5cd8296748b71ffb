// SPDX-License-Identifier: Apache-2.0
// The send path as the NIC instantiates it.
#include "hw/send_path/send_path.h"

#include <stdexcept>

#include "hw/send_path/send_path_lockstep.h"
#include "hw/send_path/send_path_model.h"

namespace rnic::hw {

std::unique_ptr<send_path_unit> make_send_path(const char* name, const send_path_config& cfg,
                                               const clock_domain& clk,
                                               channel<fabric::eth_frame>& mac_tx, sim_context& ctx,
                                               const std::string& rtl_fst) {
    if (cfg.impl == "model") {
        return std::make_unique<send_path_model>(name, cfg, clk, mac_tx, ctx);
    }
    if (cfg.impl == "rtl") {
        return make_send_path_rtl(name, cfg, clk, mac_tx, ctx, rtl_fst);
    }
    if (cfg.impl == "lockstep") {
        return std::make_unique<send_path_lockstep>(name, cfg, clk, mac_tx, ctx, rtl_fst);
    }
    throw std::invalid_argument("send_path impl \"" + cfg.impl +
                                "\" is not model, rtl or lockstep");
}

}  // namespace rnic::hw
