// SPDX-License-Identifier: Apache-2.0
// WQE decoder (moved out of wqe_fetch::parse; plus the short-slot and zero-SGE guards).
#include "hw/wqe_fetch/wqe_decode.h"

#include <cstring>

#include "hw/hsi/hsi.h"

namespace rnic::hw {

wqe_item parse_wqe(const uint8_t* slot, uint32_t stride) {
    wqe_item w;
    if (stride < sizeof(hsi::wqe_ctrl)) {
        w.malformed = true;  // no room for a control segment (slots are >= 64 B by command)
        return w;
    }
    std::memcpy(&w.ctrl, slot, sizeof(w.ctrl));
    const auto& c = w.ctrl;
    const uint32_t bytes = static_cast<uint32_t>(c.size_bb) * 64;
    if (c.size_bb == 0 || bytes > stride || c.opcode > hsi::WQE_LOCAL_INV) {
        w.malformed = true;
        return w;
    }
    const uint8_t* body = slot + sizeof(hsi::wqe_ctrl);
    const uint32_t body_bytes = bytes - static_cast<uint32_t>(sizeof(hsi::wqe_ctrl));
    switch (c.opcode) {
        case hsi::WQE_FAST_REG:
        case hsi::WQE_BIND_MW:
            if (body_bytes < 64) {
                w.malformed = true;
            } else {
                w.segment.assign(body, body + 64);
            }
            break;
        default:
            if (c.flags & hsi::WQE_FLAG_INLINE) {
                if (c.total_length > body_bytes) {
                    w.malformed = true;
                } else {
                    w.inline_data.assign(body, body + c.total_length);
                }
            } else {
                if (c.num_sge * sizeof(hsi::wqe_sge) > body_bytes) {
                    w.malformed = true;
                    break;
                }
                w.sges.resize(c.num_sge);
                if (c.num_sge != 0) {  // memcpy from/to a null pointer is UB even for 0 bytes
                    std::memcpy(w.sges.data(), body, c.num_sge * sizeof(hsi::wqe_sge));
                }
            }
            break;
    }
    return w;
}

}  // namespace rnic::hw
