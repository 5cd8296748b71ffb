// SPDX-License-Identifier: Apache-2.0
// DIR/waves.vcd with an optional time window: the blocks trace into a recorder at elaboration;
// it writes the value changes itself (or through SystemC's VCD writer) while the window is open.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <systemc>

namespace rnic::output {

// SystemC 2.3's sc_trace_file has no enable switch: a VCD file samples every traced variable at
// every time step from the first one to its close, and traces can only be added before that
// first step. This class is what sim_context::vcd points to during elaboration: it records each
// sc_trace() call (variable, name, width) and costs nothing until open(), typically between two
// sc_start() calls, starts the window.
//
// It writes the VCD itself for the scalar C++ types the blocks trace (bool, integers, enums,
// float/double): at each time step it compares every variable with its last written value,
// a load and a compare, and formats only the changes. SystemC's own writer does the same
// through two virtual calls and string formatting per variable per step, which made waveforms
// cost several times the simulation on small-packet runs. When a block traces one of SystemC's
// datatypes (sc_event, sc_time, sc_dt::*) the recorder replays every registration into
// SystemC's VCD writer instead, and patches its header (fix_vcd_header). Both give the same
// file layout: scopes per block, the initial values at the first time step of the window
// ("#t" then $dumpvars), then "#t" blocks of changes.
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

    // Starts the window: `path` (must end in ".vcd") gets every recorded signal, sampled from
    // the next time step on. Call before sc_start() or while the simulation is paused.
    // Idempotent while open; a file that was closed is not reopened. Throws
    // std::runtime_error when the file cannot be created.
    void open(const std::string& path);
    // Ends the window and finishes the file; equal runs give equal bytes (no wall-clock date).
    // A window in which no time step passed leaves no file. Throws std::runtime_error on an
    // I/O error.
    void close();
    bool is_open() const { return m_open; }
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
    // Called by the kernel at the end of every time step while the own writer's window is open.
    void cycle(bool delta_cycle) override;

private:
    // A variable the own writer samples: where it is and how to read it.
    struct probe {
        enum class kind : uint8_t { BOOL, UNSIGNED, SIGNED, REAL32, REAL64 };
        const void* where = nullptr;
        kind k = kind::BOOL;
        uint8_t bytes = 1;  // size of the C++ object
        int width = 1;      // bits written
        uint64_t last = 0;  // last value written (raw bits; reals: the double's bits)
        std::string id;     // VCD identifier
    };

    // The hot loop of cycle(): the raw bytes of every variable of one size, compared with the
    // bytes seen at the previous step; only a difference reads the probe.
    template <typename R>
    struct watch {
        const void* where;
        R raw;
        uint32_t probe;
    };
    template <typename R>
    void scan(std::vector<watch<R>>& w, uint64_t now);

    void record(std::string name, std::string type, int width,
                std::function<void(sc_core::sc_trace_file*)> replay);
    template <typename T>
    void add_probe(const T& object, int width);
    uint64_t sample(const probe& p) const;
    void write_header();
    void write_value(const probe& p, uint64_t v);
    void flush();

    std::vector<signal> m_signals;
    std::vector<std::function<void(sc_core::sc_trace_file*)>> m_replay;
    std::vector<probe> m_probes;  // one per signal while every traced type is a scalar
    std::vector<watch<uint8_t>> m_watch8;
    std::vector<watch<uint16_t>> m_watch16;
    std::vector<watch<uint32_t>> m_watch32;
    std::vector<watch<uint64_t>> m_watch64;
    bool m_all_scalar = true;  // else SystemC's writer (m_sc_file) writes the file
    sc_core::sc_trace_file* m_sc_file = nullptr;
    std::FILE* m_out = nullptr;   // the own writer's file
    std::string m_buf;            // pending output of the own writer
    bool m_dumped = false;        // the initial values ($dumpvars) are written
    uint64_t m_time_written = 0;  // the last "#t" written
    std::string m_path;
    bool m_open = false;
    bool m_opened = false;
    bool m_write_failed = false;
};

// Rewrites the header of a closed SystemC VCD file in place (see waves::close()). Exposed for
// the tests. Throws std::runtime_error when the file cannot be read or written.
void fix_vcd_header(const std::string& path);

}  // namespace rnic::output
