// SPDX-License-Identifier: Apache-2.0
// DIR/waves.vcd with an optional time window: the blocks trace into a recorder at elaboration;
// it writes the value changes itself (or through SystemC's VCD writer) while the window is open.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <systemc>

namespace rnic::distributed {
class mpi_comm;
}

namespace rnic::output {

class record_spool;

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
// file layout: scopes per block, the initial values at the window's start ("#t" then
// $dumpvars: the values at the end of that instant, however many sc_start() calls it took),
// then "#t" blocks of changes. In a partitioned run every rank records its own blocks and rank
// 0 writes the same file (partitioned_waves, below).
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

    // Partitioned runs (output::partitioned_waves): registrations from here on belong to
    // `unit`, a partition-independent number of the block registering them (the testbench
    // numbers its links, nodes, switches, ...); `sub`, when given, splits the unit by signal name
    // (a block that registers for several nodes). Every rank registers a unit's signals in the
    // same order, so (unit, sub, order within them) places a signal in the single process's
    // registration order whichever rank registers it.
    void begin_unit(uint64_t unit, std::function<uint64_t(const std::string&)> sub = {});
    // Signals whose name starts with `prefix` are recorded by another rank (a cut link's
    // direction that the other rank sends in).
    void disown(const std::string& prefix);

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
    // Partitioned runs: records this rank's value changes into `spool` instead of writing a
    // file (open() then takes no path), only at time steps before `until` (ps; the window's end).
    // `global` maps each signal to its index in the merged file (UINT32_MAX: another rank's).
    void spool_to(record_spool* spool, std::vector<uint32_t> global, uint64_t until);
    // Opens a spooling recorder whose initial values belong to `dump_time` (ps): the window's
    // start, which a rank whose clock stands earlier has also simulated up to.
    void open_spool(uint64_t dump_time);

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
    friend class partitioned_waves;

    // A signal's place in the single process's registration order (begin_unit()).
    struct unit_key {
        uint64_t unit = 0;
        uint64_t sub = 0;
        uint32_t seq = 0;
    };

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
    void snapshot();  // every variable's value as the initial value ($dumpvars)
    void dump();      // writes (or, spooling, keeps) the initial values
    void spool_change(uint64_t now, size_t bytes, uint32_t global, uint64_t value);

    std::vector<signal> m_signals;
    std::vector<std::function<void(sc_core::sc_trace_file*)>> m_replay;
    std::vector<probe> m_probes;  // one per signal while every traced type is a scalar
    std::vector<watch<uint8_t>> m_watch8;
    std::vector<watch<uint16_t>> m_watch16;
    std::vector<watch<uint32_t>> m_watch32;
    std::vector<watch<uint64_t>> m_watch64;
    bool m_all_scalar = true;  // else SystemC's writer (m_sc_file) writes the file
    sc_core::sc_trace_file* m_sc_file = nullptr;
    std::FILE* m_out = nullptr;  // the own writer's file
    std::string m_buf;           // pending output of the own writer
    bool m_dumped = false;       // the initial values ($dumpvars) are written
    bool m_cycled = false;       // a time step passed in the window
    uint64_t m_dump_time = 0;    // time of the initial values: the window's start
    // Partitioned runs.
    std::vector<unit_key> m_keys;  // per signal
    std::vector<bool> m_owned;     // per signal: recorded here
    uint64_t m_unit = 0;
    std::function<uint64_t(const std::string&)> m_sub;
    std::map<std::pair<uint64_t, uint64_t>, uint32_t> m_unit_seq;
    record_spool* m_spool = nullptr;
    std::vector<uint32_t> m_global;  // per probe: index in the merged file
    uint64_t m_until = ~uint64_t{0};
    std::vector<uint8_t> m_rec;                            // one spooled record
    std::vector<std::pair<uint32_t, uint64_t>> m_initial;  // spooled initial values (index, value)
    uint64_t m_time_written = 0;                           // the last "#t" written
    std::string m_path;
    bool m_open = false;
    bool m_opened = false;
    bool m_write_failed = false;
};

#ifdef RNICSIM_HAVE_MPI
// waves.vcd of a partitioned run (testbench/distributed): every rank records the signals of its
// own blocks (a cut link's direction: the rank that sends in it) into a spool; rank 0 writes the
// one file the single process writes: the same signals in the same order with the same
// identifiers, the same initial values, and at each time the same changes in the same order
// (by variable size, then registration order, as waves::cycle() scans them).
class partitioned_waves {
public:
    // After elaboration, on every rank (collective): rank 0 merges every rank's signals into
    // the single process's registration order (waves::begin_unit keys) and tells each rank
    // the file index of the signals it records. `until` (ps): the window's end. Throws
    // std::runtime_error when a signal is recorded by two ranks or by none, or is not a scalar.
    partitioned_waves(const distributed::mpi_comm& comm, waves& w, uint64_t until);
    // On every rank once every rank has simulated up to the window's start `t` (ps) and
    // nothing after it.
    void open(uint64_t t);
    // After the run, on every rank (collective): rank 0 writes `path` (no file when the window
    // never opened, as in one process). Throws std::runtime_error on an I/O error.
    void finish(const std::string& path);

private:
    const distributed::mpi_comm& m_comm;
    waves& m_w;
    std::unique_ptr<record_spool> m_spool;
    uint64_t m_open_time = 0;
    std::unique_ptr<waves> m_merged;  // rank 0: every signal in file order, and the writer
};
#endif

// Rewrites the header of a closed SystemC VCD file in place (see waves::close()). Exposed for
// the tests. Throws std::runtime_error when the file cannot be read or written.
void fix_vcd_header(const std::string& path);

}  // namespace rnic::output
