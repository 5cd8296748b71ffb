// SPDX-License-Identifier: Apache-2.0
// The send path as the NIC instantiates it: model, RTL or both in lockstep, chosen by
// rnic.send_path.impl. See README.md.
#pragma once

#include <memory>
#include <string>

#include <systemc>

#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
#include "hw/common/sim_context.h"
#include "hw/send_path/send_path_config.h"
#include "hw/send_path/send_path_io.h"
#include "tlm/ethernet/eth_link.h"

namespace rnic::hw {

// Builds the send path named `name` (an sc_module, registered under that name with ctx.stats)
// feeding `mac_tx`. cfg.impl: "model" (SystemC), "rtl" (Verilated rtl/send_path, or the RTL
// given to CMake as RNICSIM_SEND_PATH_RTL), "lockstep" (both; the first beat where they differ
// is reported and the run stops). `rtl_fst`: when not empty and the RTL runs, its own waveform
// goes there (e.g. "<out>/rtl.fst"). Call during elaboration.
std::unique_ptr<send_path_unit> make_send_path(const char* name, const send_path_config& cfg,
                                               const clock_domain& clk,
                                               channel<fabric::eth_frame>& mac_tx, sim_context& ctx,
                                               const std::string& rtl_fst = "");

// The Verilated send path behind the same interface (defined by the RTL library, rtl/).
std::unique_ptr<send_path_unit> make_send_path_rtl(const char* name, const send_path_config& cfg,
                                                   const clock_domain& clk,
                                                   channel<fabric::eth_frame>& mac_tx,
                                                   sim_context& ctx, const std::string& rtl_fst);
// `window`: rtl_fst receives only a window of edges around a lockstep divergence (see
// send_path_unit::dump_waveform_window), not the whole run.
std::unique_ptr<send_path_unit> make_send_path_rtl(const char* name, const send_path_config& cfg,
                                                   const clock_domain& clk, frame_output_if& out,
                                                   sim_context& ctx, const std::string& rtl_fst,
                                                   bool window = false);

}  // namespace rnic::hw
