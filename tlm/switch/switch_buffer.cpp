// SPDX-License-Identifier: Apache-2.0
// Shared-buffer accounting (switch_buffer.h); the per-frame operations are inline there.
#include "tlm/switch/switch_buffer.h"

namespace rnic::fabric {

switch_buffer::switch_buffer(const switch_config& cfg, uint32_t ports)
    : m_cfg(cfg)
    , m_q(static_cast<size_t>(ports) * SWITCH_PRIORITIES)
    , m_headroom(ports, cfg.headroom_bytes) {
    const uint64_t reserved_total = cfg.reserved_bytes * SWITCH_PRIORITIES * ports;
    m_shared_size = cfg.buffer_bytes > reserved_total ? cfg.buffer_bytes - reserved_total : 0;
}

}  // namespace rnic::fabric
