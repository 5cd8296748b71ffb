// SPDX-License-Identifier: Apache-2.0
// Resource limits of the RNIC: parsing of rnic.limits.
#include "hw/context/limits.h"

namespace rnic::hw {

// Ranges: table sizes are what a context memory of a few MiB can hold; queue depths are powers
// of two in hardware but any value is accepted here (commands check 2^log_depth <= limit).
nic_limits parse_nic_limits(config::reader r) {
    nic_limits l;
    r.get("max_qps", l.max_qps, 1u, 1u << 24);  // QPN is 24 bits
    r.get("max_cqs", l.max_cqs, 1u, 1u << 24);  // CQN is 24 bits
    r.get("max_srqs", l.max_srqs, 1u, 1u << 24);
    r.get("max_pds", l.max_pds, 1u, 1u << 24);
    r.get("max_keys", l.max_keys, 2u, 1u << 24);            // key index is 24 bits; 0 is privileged
    r.get("max_mtt_pages", l.max_mtt_pages, 1u, 1u << 28);  // 1 TiB of 4 KiB pages
    r.get("max_qp_depth", l.max_qp_depth, 1u, 32768u);      // 16-bit wire index: < 2^16 in flight
    r.get("max_cq_depth", l.max_cq_depth, 1u, 1u << 24);
    r.get("max_srq_depth", l.max_srq_depth, 1u, 32768u);
    r.get("max_sge", l.max_sge, 1u, 64u);
    r.get("max_inline", l.max_inline, 0u, 4096u);
    r.get_one_of("max_mtu", l.max_mtu, {256u, 512u, 1024u, 2048u, 4096u});
    r.get("max_read_depth", l.max_read_depth, 1u, 256u);
    r.get("max_message", l.max_message, 1u, 1u << 31);
    r.finish();
    return l;
}

}  // namespace rnic::hw
