// SPDX-License-Identifier: Apache-2.0
// A DMA request of a block that streams (cut-through): the TLM extension the NIC's DMA engine
// sets on a request and the PCIe link reads. Without it (or with its fields at their defaults)
// a request is timed as a whole, as before.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <systemc>
#include <tlm>

namespace rnic::fabric {

// Per read request: its end offset in the transfer and the time the transfer's bytes up to
// there are in (non-decreasing).
using read_parts = std::vector<std::pair<uint32_t, sc_core::sc_time>>;

struct dma_stream_ext : tlm::tlm_extension<dma_stream_ext> {
    // Read: when set, the PCIe link fills it, one entry per read request (MRRS / 4 KiB split),
    // so that a block can use the first bytes before the last completion is in.
    read_parts* parts = nullptr;
    // Write: the data comes in at a rate, byte i of the request from data_start + (i + 1) x
    // ps_per_byte on (a receive path writing a frame's payload as it arrives): a TLP leaves
    // no earlier than its last byte is in. 0: every byte is in at issue.
    double ps_per_byte = 0;
    sc_core::sc_time data_start;

    tlm::tlm_extension_base* clone() const override { return new dma_stream_ext(*this); }
    void copy_from(const tlm::tlm_extension_base& e) override {
        *this = static_cast<const dma_stream_ext&>(e);
    }
};

}  // namespace rnic::fabric
