// SPDX-License-Identifier: Apache-2.0
// Pin-level access to a Verilated send path (CONTRACT.md ports), independent of which RTL
// was verilated: ours, a hardware team's, or a conformance-suite fault variant.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "hw/send_path/send_path_if.h"

namespace rnic::rtl {

class send_path_core {
public:
    virtual ~send_path_core() = default;
    virtual void set_clk(bool v) = 0;
    virtual void set_rst_n(bool v) = 0;
    // Descriptor stream: fields are driven from `d` (kept while valid is low, too).
    virtual void set_desc(bool valid, const hw::tx_descriptor& d) = 0;
    virtual void set_desc_valid(bool valid) = 0;
    // Payload stream: 64 bytes, lane i = data[i].
    virtual void set_payload(bool valid, const uint8_t* data, uint64_t keep, bool last) = 0;
    virtual void set_payload_valid(bool valid) = 0;
    virtual void set_fr_ready(bool ready) = 0;
    virtual bool desc_ready() const = 0;
    virtual bool pl_ready() const = 0;
    virtual bool fr_valid() const = 0;
    // Frame stream beat: 64 bytes into `data`.
    virtual void fr_beat(uint8_t* data, uint64_t& keep, bool& last) const = 0;
    virtual void eval() = 0;

    // Per-edge fast path (one virtual call each): clock low with the three stream inputs,
    // combinational settle; then the rising edge. Both report the handshake outputs.
    struct outputs {
        bool desc_ready = false;
        bool pl_ready = false;
        bool fr_valid = false;
    };
    virtual void settle(bool desc_valid, bool pl_valid, bool fr_ready, outputs& out) = 0;
    virtual void rise(outputs& out) = 0;
    // The payload data input, 64 lanes, to fill in place (then set_payload_meta).
    virtual uint8_t* payload_lanes() = 0;
    virtual void set_payload_meta(uint64_t keep, bool last) = 0;
    // FST waveform of the RTL's own signals (time in ps).
    virtual void trace_open(const std::string& path) = 0;
    virtual void trace_dump(uint64_t time_ps) = 0;
    virtual void trace_close() = 0;
    virtual void final() = 0;
};

using send_path_core_factory = std::function<std::unique_ptr<send_path_core>(bool trace)>;

// The RTL built into this simulator: rtl/send_path/send_path.sv, or the hardware team's RTL
// when CMake was given -DRNICSIM_SEND_PATH_RTL=<filelist.f>. `trace`: FST will be written.
std::unique_ptr<send_path_core> make_send_path_core(bool trace);
// Which RTL make_send_path_core() builds ("rtl/send_path/send_path.sv" or the filelist).
const char* send_path_core_source();

}  // namespace rnic::rtl
