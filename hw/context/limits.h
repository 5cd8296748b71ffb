// SPDX-License-Identifier: Apache-2.0
// Resource limits of the RNIC (rnic.limits): what QueryAdapterInfo reports and commands check.
#pragma once

#include <cstdint>

#include "hw/common/config_reader.h"

namespace rnic::hw {

struct nic_limits {
    uint32_t max_qps = 1024;
    uint32_t max_cqs = 1024;
    uint32_t max_srqs = 256;
    uint32_t max_pds = 256;
    uint32_t max_keys = 8192;          // MPT entries (MRs + MWs)
    uint32_t max_mtt_pages = 262144;   // 1 GiB of 4 KiB pages
    uint32_t max_qp_depth = 4096;      // WQEs per SQ / RQ
    uint32_t max_cq_depth = 65536;
    uint32_t max_srq_depth = 4096;
    uint32_t max_sge = 16;
    uint32_t max_inline = 256;         // bytes
    uint32_t max_mtu = 4096;
    uint32_t max_read_depth = 16;      // IRD / ORD
    uint32_t max_message = 1u << 30;   // bytes per request
};
nic_limits parse_nic_limits(config::reader r);

}  // namespace rnic::hw
