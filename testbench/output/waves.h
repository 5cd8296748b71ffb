// SPDX-License-Identifier: Apache-2.0
// DIR/waves.vcd with an optional time window: the blocks trace into a recorder at elaboration,
// and the recorder replays every registration into SystemC's VCD writer when the window opens.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <systemc>

namespace rnic::output {

// SystemC 2.3's sc_trace_file has no enable switch: a VCD file samples every traced variable at
// every time step from the first one to its close, and traces can only be added before that
// first step. This stand-in is what sim_context::vcd points to during elaboration. It is not
// registered with the kernel (it never samples anything, so it costs nothing); it records each
// sc_trace() call (variable, name, width) and replays them into a real VCD file created by
// open() when the window starts, typically between two sc_start() calls. SystemC then dumps
// every variable's current value as the initial values, and samples until close().
class waves : public sc_core::sc_trace_file {
public:
    struct signal {
        std::string name;  // hierarchical, dot-separated (VCD scopes)
        std::string type;  // C++ type traced: "bool", "uint32", ...
        int width = 1;     // bits in the VCD
    };

    waves() = default;
    ~waves() override;
    waves(const waves&) = delete;
    waves& operator=(const waves&) = delete;

    // Every traced signal, in registration order.
    const std::vector<signal>& signals() const { return m_signals; }

    // Creates `path` (must end in ".vcd") at the current simulated time with every recorded
    // signal. Call before sc_start() or while the simulation is paused. Idempotent while open;
    // a file that was closed is not reopened.
    void open(const std::string& path);
    // Finishes the file: closes SystemC's writer, then patches the header in place (same
    // length) so that equal runs give equal bytes and viewers place the initial values at the
    // window start: the wall-clock $date becomes a fixed text, and the "initial values" comment
    // becomes "#<start>" before $dumpvars. Throws std::runtime_error on an I/O error.
    void close();
    bool is_open() const { return m_file != nullptr; }
    bool was_opened() const { return m_opened; }

    // sc_trace_file: recorded for open().
#define RNIC_WAVES_TRACE_A(tp) void trace(const tp& object, const std::string& name) override;
#define RNIC_WAVES_TRACE_B(tp) \
    void trace(const tp& object, const std::string& name, int width) override;
    RNIC_WAVES_TRACE_A(sc_core::sc_event)
    RNIC_WAVES_TRACE_A(sc_core::sc_time)
    RNIC_WAVES_TRACE_A(bool)
    RNIC_WAVES_TRACE_A(sc_dt::sc_bit)
    RNIC_WAVES_TRACE_A(sc_dt::sc_logic)
    RNIC_WAVES_TRACE_B(unsigned char)
    RNIC_WAVES_TRACE_B(unsigned short)
    RNIC_WAVES_TRACE_B(unsigned int)
    RNIC_WAVES_TRACE_B(unsigned long)
    RNIC_WAVES_TRACE_B(char)
    RNIC_WAVES_TRACE_B(short)
    RNIC_WAVES_TRACE_B(int)
    RNIC_WAVES_TRACE_B(long)
    RNIC_WAVES_TRACE_B(sc_dt::int64)
    RNIC_WAVES_TRACE_B(sc_dt::uint64)
    RNIC_WAVES_TRACE_A(float)
    RNIC_WAVES_TRACE_A(double)
    RNIC_WAVES_TRACE_A(sc_dt::sc_int_base)
    RNIC_WAVES_TRACE_A(sc_dt::sc_uint_base)
    RNIC_WAVES_TRACE_A(sc_dt::sc_signed)
    RNIC_WAVES_TRACE_A(sc_dt::sc_unsigned)
    RNIC_WAVES_TRACE_A(sc_dt::sc_fxval)
    RNIC_WAVES_TRACE_A(sc_dt::sc_fxval_fast)
    RNIC_WAVES_TRACE_A(sc_dt::sc_fxnum)
    RNIC_WAVES_TRACE_A(sc_dt::sc_fxnum_fast)
    RNIC_WAVES_TRACE_A(sc_dt::sc_bv_base)
    RNIC_WAVES_TRACE_A(sc_dt::sc_lv_base)
#undef RNIC_WAVES_TRACE_A
#undef RNIC_WAVES_TRACE_B
    void trace(const unsigned int& object, const std::string& name,
               const char** enum_literals) override;
    void write_comment(const std::string& comment) override;
    void set_time_unit(double v, sc_core::sc_time_unit tu) override;

protected:
    void cycle(bool delta_cycle) override {}  // never registered with the kernel

private:
    void record(std::string name, std::string type, int width,
                std::function<void(sc_core::sc_trace_file*)> replay);

    std::vector<signal> m_signals;
    std::vector<std::function<void(sc_core::sc_trace_file*)>> m_replay;
    sc_core::sc_trace_file* m_file = nullptr;
    std::string m_path;
    bool m_opened = false;
};

// Rewrites the header of a closed SystemC VCD file in place (see waves::close()). Exposed for
// the tests. Throws std::runtime_error when the file cannot be read or written.
void fix_vcd_header(const std::string& path);

}  // namespace rnic::output
