// SPDX-License-Identifier: Apache-2.0
// RNIC parameters (`rnic` in a scenario): clock, limits, and one typed struct per block.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "hw/cc/registry.h"
#include "hw/cmd_processor/cmd_processor.h"
#include "hw/common/config_reader.h"
#include "hw/common/transport_config.h"
#include "hw/context/limits.h"
#include "hw/context_cache/context_cache.h"
#include "hw/cq_writer/cq_writer.h"
#include "hw/dma_engine/dma_engine.h"
#include "hw/doorbell/doorbell.h"
#include "hw/gsi/gsi.h"
#include "hw/netdma/netdma_config.h"
#include "hw/nic/nic_identity.h"
#include "hw/recv_path/recv_path_config.h"
#include "hw/send_path/send_path_config.h"
#include "hw/translation/translation.h"
#include "hw/tx_engine/tx_engine_config.h"
#include "hw/wqe_fetch/wqe_fetch.h"
#include "tlm/pcie/pcie_config.h"

namespace rnic::hw {

struct nic_config {
    double clock_mhz = 500.0;  // core clock of every block
    nic_limits limits;
    fabric::pcie_config pcie;
    doorbell_config doorbell;
    wqe_fetch_config wqe_fetch;
    translation_config translation;
    dma_engine_config dma;
    tx_engine_config tx_engine;
    send_path_config send_path;
    recv_path_config recv_path;
    transport_config transport;  // RC loss recovery: go-back-N or selective repeat
    cq_writer_config cq_writer;
    cq_config cq;         // CQ features: interrupt moderation (hw/cq_writer)
    fault_config faults;  // injected device faults (hw/cmd_processor)
    cmd_processor_config cmd_processor;
    context_cache_config context_cache;
    netdma_config netdma;
    gsi_config gsi;
    cc::cc_config cc;  // congestion control (hw/cc): algorithm and its keys
};

nic_config parse_nic_config(config::reader r);

}  // namespace rnic::hw
