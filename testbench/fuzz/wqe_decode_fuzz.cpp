// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the WQE decoder (hw::parse_wqe) on send-queue slots written by a hostile
// driver. Input: [stride selector:1][slot bytes]; the slot is a heap buffer of exactly `stride`
// bytes (the rest of the input, zero-filled), so any read past it is an ASan report.
//
// Checked: a WQE that decodes without `malformed` has a size within the slot, a known opcode,
// and SGEs / inline data / a 64 B segment that lie inside its size and equal the slot's bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hw/hsi/hsi.h"
#include "hw/wqe_fetch/wqe_decode.h"
#include "testbench/fuzz/fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace rnic;
    if (size == 0) {
        return 0;
    }
    // Strides the command processor accepts are 64..MAX_STRIDE in steps of 64; the decoder is
    // also given the ones it must refuse (below 64, not a multiple of 64).
    static const uint32_t STRIDES[] = {64, 128, 192, 256, 512, 1024, 4096, 0, 16, 63, 100, 65};
    const uint32_t stride = STRIDES[data[0] % (sizeof(STRIDES) / sizeof(STRIDES[0]))];
    std::vector<uint8_t> slot(stride);
    const size_t n = std::min<size_t>(size - 1, stride);
    if (n != 0) {
        std::memcpy(slot.data(), data + 1, n);
    }
    const hw::wqe_item w = hw::parse_wqe(slot.data(), stride);
    if (w.malformed) {
        return 0;
    }
    const hsi::wqe_ctrl& c = w.ctrl;
    const uint32_t bytes = static_cast<uint32_t>(c.size_bb) * 64;
    RNIC_FUZZ_CHECK(stride >= sizeof(hsi::wqe_ctrl));
    RNIC_FUZZ_CHECK(std::memcmp(&c, slot.data(), sizeof(c)) == 0);
    RNIC_FUZZ_CHECK(c.size_bb >= 1 && bytes <= stride);
    RNIC_FUZZ_CHECK(c.opcode <= hsi::WQE_LOCAL_INV);
    const uint8_t* body = slot.data() + sizeof(hsi::wqe_ctrl);
    const size_t body_bytes = bytes - sizeof(hsi::wqe_ctrl);
    if (c.opcode == hsi::WQE_FAST_REG || c.opcode == hsi::WQE_BIND_MW) {
        RNIC_FUZZ_CHECK(w.segment.size() == 64 && body_bytes >= 64);
        RNIC_FUZZ_CHECK(std::memcmp(w.segment.data(), body, 64) == 0);
        RNIC_FUZZ_CHECK(w.sges.empty() && w.inline_data.empty());
    } else if (c.flags & hsi::WQE_FLAG_INLINE) {
        RNIC_FUZZ_CHECK(w.inline_data.size() == c.total_length && c.total_length <= body_bytes);
        RNIC_FUZZ_CHECK(w.inline_data.empty() ||
                        std::memcmp(w.inline_data.data(), body, w.inline_data.size()) == 0);
        RNIC_FUZZ_CHECK(w.sges.empty());
    } else {
        RNIC_FUZZ_CHECK(w.sges.size() == c.num_sge);
        RNIC_FUZZ_CHECK(w.sges.size() * sizeof(hsi::wqe_sge) <= body_bytes);
        RNIC_FUZZ_CHECK(w.sges.empty() || std::memcmp(w.sges.data(), body,
                                                      w.sges.size() * sizeof(hsi::wqe_sge)) == 0);
        RNIC_FUZZ_CHECK(w.inline_data.empty());
    }
    return 0;
}
