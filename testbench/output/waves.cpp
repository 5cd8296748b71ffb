// SPDX-License-Identifier: Apache-2.0
// Windowed VCD: trace registrations recorded at elaboration; a change-only writer for scalar
// variables, SystemC's VCD writer for SystemC datatypes.
#include "testbench/output/waves.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <type_traits>

#include "testbench/output/spool.h"

#include <fmt/format.h>

#ifdef RNICSIM_HAVE_MPI
#include <tuple>

#include <nlohmann/json.hpp>

#include "testbench/distributed/mpi_comm.h"
#endif

namespace rnic::output {

namespace {

// The type name shown by `rnicsim signals`.
template <typename T>
const char* type_name() {
    if constexpr (std::is_same_v<T, bool>) {
        return "bool";
    } else if constexpr (std::is_same_v<T, sc_core::sc_event>) {
        return "event";
    } else if constexpr (std::is_same_v<T, sc_core::sc_time>) {
        return "time";
    } else if constexpr (std::is_floating_point_v<T>) {
        return "real";
    } else if constexpr (std::is_integral_v<T>) {
        return std::is_signed_v<T> ? "int" : "uint";
    } else {
        return "sc_dt";
    }
}

// VCD width of a traced type without a width argument (0: depends on the object).
template <typename T>
int width_of() {
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, sc_core::sc_event> ||
                  std::is_same_v<T, sc_dt::sc_bit> || std::is_same_v<T, sc_dt::sc_logic>) {
        return 1;
    } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, sc_core::sc_time>) {
        return 64;
    } else {
        return 0;
    }
}

[[noreturn]] void io_error(const std::string& path, const char* what) {
    throw std::runtime_error(path + ": " + what + ": " + std::strerror(errno));
}

// VCD identifiers in registration order: a..z, ba..zz, ... (short, and never "#" or "$").
std::string vcd_id(size_t n) {
    std::string id;
    do {
        id.insert(id.begin(), static_cast<char>('a' + n % 26));
        n /= 26;
    } while (n > 0);
    return id;
}

// The scope tree of the dot-separated signal names, children in name order.
struct scope_node {
    std::map<std::string, scope_node> children;
    std::vector<size_t> signals;  // indices, registration order
};

}  // namespace

template <typename T>
void waves::add_probe(const T& object, int width) {
    probe p;
    p.where = &object;
    p.width = width;
    if constexpr (std::is_same_v<T, bool>) {
        p.k = probe::kind::BOOL;
    } else if constexpr (std::is_integral_v<T>) {
        p.k = std::is_signed_v<T> ? probe::kind::SIGNED : probe::kind::UNSIGNED;
    } else if constexpr (std::is_same_v<T, float>) {
        p.k = probe::kind::REAL32;
    } else if constexpr (std::is_same_v<T, double>) {
        p.k = probe::kind::REAL64;
    } else {
        m_all_scalar = false;  // a SystemC datatype: SystemC's writer knows how to show it
        return;
    }
    if constexpr (std::is_arithmetic_v<T>) {
        p.bytes = sizeof(T);
    }
    if (p.k == probe::kind::UNSIGNED || p.k == probe::kind::SIGNED) {
        p.width = width > 0 && width < 64 ? width : 64;
    }
    p.id = vcd_id(m_probes.size());
    const auto index = static_cast<uint32_t>(m_probes.size());
    switch (p.bytes) {
        case 1:
            m_watch8.push_back({p.where, 0, index});
            break;
        case 2:
            m_watch16.push_back({p.where, 0, index});
            break;
        case 4:
            m_watch32.push_back({p.where, 0, index});
            break;
        default:
            m_watch64.push_back({p.where, 0, index});
            break;
    }
    m_probes.push_back(std::move(p));
}

template <typename R>
void waves::scan(std::vector<watch<R>>& w, uint64_t now) {
    for (auto& x : w) {
        R v;
        std::memcpy(&v, x.where, sizeof v);  // one load
        if (v == x.raw) {
            continue;
        }
        x.raw = v;
        probe& p = m_probes[x.probe];
        const uint64_t value = sample(p);  // bits outside the traced width may have changed
        if (value != p.last) {
            p.last = value;
            if (m_spool != nullptr) {
                spool_change(now, sizeof(R), m_global[x.probe], value);
                continue;
            }
            if (now != m_time_written) {
                m_buf += fmt::format("#{}\n", now);
                m_time_written = now;
            }
            write_value(p, value);
        }
    }
}

uint64_t waves::sample(const probe& p) const {
    switch (p.k) {
        case probe::kind::BOOL:
            return *static_cast<const bool*>(p.where) ? 1 : 0;
        case probe::kind::UNSIGNED:
        case probe::kind::SIGNED: {
            uint64_t v = 0;
            if (p.k == probe::kind::SIGNED) {  // sign-extend, then keep `width` bits
                switch (p.bytes) {
                    case 1:
                        v = static_cast<uint64_t>(*static_cast<const int8_t*>(p.where));
                        break;
                    case 2:
                        v = static_cast<uint64_t>(*static_cast<const int16_t*>(p.where));
                        break;
                    case 4:
                        v = static_cast<uint64_t>(*static_cast<const int32_t*>(p.where));
                        break;
                    default:
                        v = static_cast<uint64_t>(*static_cast<const int64_t*>(p.where));
                        break;
                }
            } else {
                switch (p.bytes) {
                    case 1:
                        v = *static_cast<const uint8_t*>(p.where);
                        break;
                    case 2:
                        v = *static_cast<const uint16_t*>(p.where);
                        break;
                    case 4:
                        v = *static_cast<const uint32_t*>(p.where);
                        break;
                    default:
                        v = *static_cast<const uint64_t*>(p.where);
                        break;
                }
            }
            return p.width >= 64 ? v : v & ((uint64_t{1} << p.width) - 1);
        }
        case probe::kind::REAL32: {
            const double d = *static_cast<const float*>(p.where);
            uint64_t bits;
            std::memcpy(&bits, &d, sizeof bits);
            return bits;
        }
        case probe::kind::REAL64: {
            uint64_t bits;
            std::memcpy(&bits, p.where, sizeof bits);
            return bits;
        }
    }
    return 0;
}

void waves::write_value(const probe& p, uint64_t v) {
    switch (p.k) {
        case probe::kind::BOOL:
            m_buf += v ? '1' : '0';
            break;
        case probe::kind::REAL32:
        case probe::kind::REAL64: {
            double d;
            std::memcpy(&d, &v, sizeof d);
            m_buf += fmt::format("r{:.16g} ", d);
            break;
        }
        default: {
            // Binary without leading zeros, as SystemC writes it ("b0" for zero).
            char bits[66];
            int n = 0;
            bits[n++] = 'b';
            int top = 63;
            while (top > 0 && ((v >> top) & 1) == 0) {
                --top;
            }
            for (int b = top; b >= 0; --b) {
                bits[n++] = static_cast<char>('0' + ((v >> b) & 1));
            }
            bits[n++] = ' ';
            m_buf.append(bits, n);
            break;
        }
    }
    m_buf += p.id;
    m_buf += '\n';
}

void waves::write_header() {
    scope_node root;
    for (size_t i = 0; i < m_signals.size(); ++i) {
        scope_node* at = &root;
        const std::string& name = m_signals[i].name;
        size_t from = 0;
        for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', from)) {
            at = &at->children[name.substr(from, dot - from)];
            from = dot + 1;
        }
        at->signals.push_back(i);
    }
    m_buf += "$date\n     rnicsim\n$end\n\n$version\n rnicsim (SystemC ";
    m_buf += sc_core::sc_release();
    m_buf += ")\n$end\n\n$timescale\n     " + sc_core::sc_get_time_resolution().to_string() +
             "\n$end\n\n$scope module SystemC $end\n";
    auto write_scope = [&](const scope_node& s, auto& self) -> void {
        for (const size_t i : s.signals) {
            const probe& p = m_probes[i];
            const std::string& name = m_signals[i].name;
            const std::string leaf = name.substr(name.rfind('.') + 1);
            if (p.k == probe::kind::REAL32 || p.k == probe::kind::REAL64) {
                m_buf += fmt::format("$var real 1 {} {} $end\n", p.id, leaf);
            } else if (p.k == probe::kind::BOOL || p.width == 1) {
                m_buf += fmt::format("$var wire 1 {} {} $end\n", p.id, leaf);
            } else {
                m_buf += fmt::format("$var wire {} {} {} [{}:0] $end\n", p.width, p.id, leaf,
                                     p.width - 1);
            }
        }
        for (const auto& [name, child] : s.children) {
            m_buf += "$scope module " + name + " $end\n";
            self(child, self);
            m_buf += "$upscope $end\n";
        }
    };
    write_scope(root, write_scope);
    m_buf += "$upscope $end\n$enddefinitions $end\n\n";
}

void waves::flush() {
    if (m_out != nullptr && !m_buf.empty()) {
        if (std::fwrite(m_buf.data(), 1, m_buf.size(), m_out) != m_buf.size()) {
            m_write_failed = true;
        }
    }
    m_buf.clear();
}

void waves::snapshot() {
    for (auto& p : m_probes) {
        p.last = sample(p);
    }
    auto seed = [](auto& watches) {
        for (auto& x : watches) {
            std::memcpy(&x.raw, x.where, sizeof x.raw);
        }
    };
    seed(m_watch8);
    seed(m_watch16);
    seed(m_watch32);
    seed(m_watch64);
}

void waves::dump() {
    if (m_spool != nullptr) {
        m_initial.clear();
        for (size_t i = 0; i < m_probes.size(); ++i) {
            if (m_global[i] != UINT32_MAX) {
                m_initial.emplace_back(m_global[i], m_probes[i].last);
            }
        }
    } else {
        write_header();
        m_buf += fmt::format("#{}\n$dumpvars\n", m_dump_time);
        for (const auto& p : m_probes) {
            write_value(p, p.last);
        }
        m_buf += "$end\n";
        m_time_written = m_dump_time;
    }
    m_dumped = true;
}

void waves::spool_change(uint64_t now, size_t bytes, uint32_t global, uint64_t value) {
    m_rec.clear();
    for (int i = 0; i < 8; ++i) {
        m_rec.push_back(static_cast<uint8_t>(now >> (8 * i)));
    }
    m_rec.push_back(static_cast<uint8_t>(bytes));
    for (int i = 0; i < 4; ++i) {
        m_rec.push_back(static_cast<uint8_t>(global >> (8 * i)));
    }
    for (int i = 0; i < 8; ++i) {
        m_rec.push_back(static_cast<uint8_t>(value >> (8 * i)));
    }
    m_spool->append(m_rec.data(), m_rec.size());
}

// The end of a time step. The initial values are those at the end of the window's first
// instant, its start (all of that instant's time steps: sc_start(SC_ZERO_TIME) at time 0 ends
// one after the first delta cycle), written once a later step begins; every later step writes
// the variables that changed since the step before.
void waves::cycle(bool delta_cycle) {
    if (delta_cycle || (m_out == nullptr && m_spool == nullptr) || !m_open) {
        return;
    }
    const uint64_t now = sc_core::sc_time_stamp().value();
    if (now >= m_until) {
        return;  // the window's end (one process closes the file there; a rank just stops)
    }
    m_cycled = true;
    if (!m_dumped) {
        if (now <= m_dump_time) {
            snapshot();
            return;
        }
        dump();
    }
    scan(m_watch8, now);
    scan(m_watch16, now);
    scan(m_watch32, now);
    scan(m_watch64, now);
    if (m_buf.size() >= (size_t{1} << 16)) {
        flush();
    }
}

waves::~waves() {
    try {
        close();
    } catch (const std::exception&) {
        // Destructors must not throw; call close() to see the error.
    }
}

void waves::record(std::string name, std::string type, int width,
                   std::function<void(sc_core::sc_trace_file*)> replay) {
    const uint64_t sub = m_sub ? m_sub(name) : 0;
    m_keys.push_back({m_unit, sub, m_unit_seq[{m_unit, sub}]++});
    m_owned.push_back(true);
    m_signals.push_back({std::move(name), std::move(type), width});
    m_replay.push_back(std::move(replay));
}

void waves::begin_unit(uint64_t unit, std::function<uint64_t(const std::string&)> sub) {
    m_unit = unit;
    m_sub = std::move(sub);
}

void waves::disown(const std::string& prefix) {
    for (size_t i = 0; i < m_signals.size(); ++i) {
        if (m_signals[i].name.compare(0, prefix.size(), prefix) == 0) {
            m_owned[i] = false;
        }
    }
}

void waves::spool_to(record_spool* spool, std::vector<uint32_t> global, uint64_t until) {
    m_spool = spool;
    m_global = std::move(global);
    m_until = until;
    // Only this rank's signals are watched.
    auto keep = [this](auto& watches) {
        watches.erase(
            std::remove_if(watches.begin(), watches.end(),
                           [this](const auto& x) { return m_global[x.probe] == UINT32_MAX; }),
            watches.end());
    };
    keep(m_watch8);
    keep(m_watch16);
    keep(m_watch32);
    keep(m_watch64);
}

void waves::open_spool(uint64_t dump_time) {
    if (m_opened) {
        return;
    }
    m_dump_time = dump_time;
    snapshot();
    sc_core::sc_get_curr_simcontext()->add_trace_file(this);
    m_open = true;
    m_opened = true;
}

#define RNIC_WAVES_TRACE_A(tp)                                                  \
    void waves::trace(const tp& object, const std::string& name) {              \
        const tp* p = &object;                                                  \
        record(name, type_name<tp>(), width_of<tp>(),                           \
               [p, name](sc_core::sc_trace_file* tf) { tf->trace(*p, name); }); \
        add_probe(object, width_of<tp>());                                      \
    }
#define RNIC_WAVES_TRACE_B(tp)                                                                \
    void waves::trace(const tp& object, const std::string& name, int width) {                 \
        const tp* p = &object;                                                                \
        record(name, fmt::format("{}{}", type_name<tp>(), 8 * sizeof(tp)), width,             \
               [p, name, width](sc_core::sc_trace_file* tf) { tf->trace(*p, name, width); }); \
        add_probe(object, width);                                                             \
    }
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

void waves::trace(const unsigned int& object, const std::string& name, const char** enum_literals) {
    const unsigned int* p = &object;
    record(name, "enum", 32, [p, name, enum_literals](sc_core::sc_trace_file* tf) {
        tf->trace(*p, name, enum_literals);
    });
    add_probe(object, 32);
}

void waves::write_comment(const std::string& comment) {
    if (m_sc_file != nullptr) {
        m_sc_file->write_comment(comment);
    } else if (m_out != nullptr && m_dumped) {
        m_buf += "$comment\n" + comment + "\n$end\n";
    }
}

void waves::set_time_unit(double v, sc_core::sc_time_unit tu) {
    if (m_sc_file != nullptr) {
        m_sc_file->set_time_unit(v, tu);
    }
    // The own writer's unit is the kernel's time resolution: every time is exact.
}

void waves::open(const std::string& path) {
    if (m_opened) {
        return;
    }
    const std::string suffix = ".vcd";
    if (path.size() <= suffix.size() || path.compare(path.size() - suffix.size(), 4, suffix) != 0) {
        throw std::invalid_argument("waves::open: " + path + " does not end in .vcd");
    }
    m_path = path;
    if (m_all_scalar) {
        m_out = std::fopen(path.c_str(), "wb");
        if (m_out == nullptr) {
            io_error(path, "cannot create");
        }
        m_dump_time = sc_core::sc_time_stamp().value();
        snapshot();
        sc_core::sc_get_curr_simcontext()->add_trace_file(this);
    } else {
        m_sc_file =
            sc_core::sc_create_vcd_trace_file(path.substr(0, path.size() - suffix.size()).c_str());
        m_sc_file->set_time_unit(1, sc_core::SC_PS);  // the kernel's resolution: exact times
        for (const auto& r : m_replay) {
            r(m_sc_file);
        }
    }
    m_open = true;
    m_opened = true;
}

void waves::close() {
    if (!m_open) {
        return;
    }
    m_open = false;
    if (m_spool != nullptr) {
        sc_core::sc_get_curr_simcontext()->remove_trace_file(this);
        if (!m_dumped && m_cycled) {
            dump();
        }
        return;
    }
    if (m_out != nullptr) {
        sc_core::sc_get_curr_simcontext()->remove_trace_file(this);
        if (!m_dumped && m_cycled) {
            dump();  // the window's first instant was its only one
        }
        flush();
        const bool failed = m_write_failed || std::fclose(m_out) != 0;
        m_out = nullptr;
        if (!m_dumped) {  // no time step in the window: no file, as with SystemC's writer
            std::error_code ec;
            std::filesystem::remove(m_path, ec);
            return;
        }
        if (failed) {
            io_error(m_path, "cannot write");
        }
        return;
    }
    sc_core::sc_close_vcd_trace_file(m_sc_file);
    m_sc_file = nullptr;
    // SystemC writes the file only once it sampled a time step: a window that opened at the
    // very end may leave nothing.
    std::FILE* f = std::fopen(m_path.c_str(), "rb");
    if (f == nullptr) {
        return;
    }
    std::fclose(f);
    fix_vcd_header(m_path);
}

void fix_vcd_header(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "r+b");
    if (f == nullptr) {
        io_error(path, "cannot open");
    }
    // The header ends at $dumpvars; it grows with the number of signals, so read until found.
    std::string head;
    size_t dumpvars = std::string::npos;
    char chunk[65536];
    while (dumpvars == std::string::npos) {
        const size_t n = std::fread(chunk, 1, sizeof chunk, f);
        if (n == 0) {
            break;
        }
        head.append(chunk, n);
        dumpvars = head.find("$dumpvars");
    }
    auto overwrite = [&](size_t at, const std::string& text) {
        if (std::fseek(f, static_cast<long>(at), SEEK_SET) != 0 ||
            std::fwrite(text.data(), 1, text.size(), f) != text.size()) {
            const int err = errno;
            std::fclose(f);
            errno = err;
            io_error(path, "cannot patch the header");
        }
    };
    // Same length, padded with blanks (VCD tokens are whitespace-separated).
    auto fit = [](std::string text, size_t len) {
        if (text.size() > len) {
            text.resize(len);
        }
        text.append(len - text.size(), ' ');
        return text;
    };

    // $date <wall clock> $end -> a fixed text: equal runs give equal files.
    const size_t date = head.find("$date");
    if (date != std::string::npos) {
        const size_t body = date + 5;
        const size_t end = head.find("$end", body);
        if (end != std::string::npos && end > body + 1) {
            overwrite(body, fit("\n     rnicsim", end - body - 1) + "\n");
        }
    }
    // "$comment All initial values are dumped below at time ... = <N> timescale units. $end"
    // right before $dumpvars -> "#<N>": the initial values belong to the window's start,
    // which readers otherwise take as time 0.
    if (dumpvars != std::string::npos) {
        const size_t comment = head.rfind("$comment", dumpvars);
        const size_t eq = head.find("= ", comment == std::string::npos ? dumpvars : comment);
        const size_t units = head.find(" timescale units", eq == std::string::npos ? 0 : eq);
        if (comment != std::string::npos && eq != std::string::npos && units != std::string::npos &&
            units < dumpvars) {
            const std::string t = head.substr(eq + 2, units - eq - 2);
            if (!t.empty() && t.find_first_not_of("0123456789") == std::string::npos) {
                const size_t len = dumpvars - comment;
                std::string text = "$comment window start $end\n#" + t + "\n";
                if (text.size() < len) {
                    overwrite(comment, fit(text, len - 1) + "\n");
                }
            }
        }
    }
    if (std::fclose(f) != 0) {
        io_error(path, "cannot close");
    }
}

}  // namespace rnic::output

#ifdef RNICSIM_HAVE_MPI
namespace rnic::output {

namespace {

// A spooled change: time (8 bytes), variable size (1), file index (4), value (8), little-endian.
uint64_t le(const uint8_t* p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
        v |= static_cast<uint64_t>(p[i]) << (8 * i);
    }
    return v;
}

bool change_less(const uint8_t* a, size_t, const uint8_t* b, size_t) {
    const uint64_t ka[3] = {le(a, 8), le(a + 8, 1), le(a + 9, 4)};
    const uint64_t kb[3] = {le(b, 8), le(b + 8, 1), le(b + 9, 4)};
    return std::lexicographical_compare(ka, ka + 3, kb, kb + 3);
}

}  // namespace

partitioned_waves::partitioned_waves(const distributed::mpi_comm& comm, waves& w, uint64_t until)
    : m_comm(comm)
    , m_w(w)
    , m_spool(std::make_unique<record_spool>()) {
    if (!w.m_all_scalar) {
        for (size_t i = 0; i < w.m_signals.size(); ++i) {
            if (w.m_signals[i].type == "sc_dt" || w.m_signals[i].type == "event" ||
                w.m_signals[i].type == "time") {
                throw std::runtime_error(
                    "outputs.waves: a partitioned run records scalar "
                    "signals only; " +
                    w.m_signals[i].name + " is a SystemC " + w.m_signals[i].type);
            }
        }
        throw std::runtime_error("outputs.waves: a partitioned run records scalar signals only");
    }
    // This rank's signals: key, recorded here, and what the file's header needs.
    nlohmann::json mine = nlohmann::json::array();
    for (size_t i = 0; i < w.m_signals.size(); ++i) {
        const auto& k = w.m_keys[i];
        const auto& p = w.m_probes[i];
        const auto& sg = w.m_signals[i];
        mine.push_back({k.unit, k.sub, k.seq, w.m_owned[i], sg.name, sg.type, sg.width,
                        static_cast<int>(p.k), p.bytes, p.width});
    }
    const auto all = comm.gather(nlohmann::json::to_cbor(mine));
    const auto ranks = static_cast<size_t>(comm.size());
    std::vector<distributed::bytes> out(ranks);
    if (comm.rank() == 0) {
        struct entry {
            nlohmann::json desc;
            int owner = -1;
            std::vector<std::pair<size_t, size_t>> at;  // (rank, local index)
        };
        std::map<std::tuple<uint64_t, uint64_t, uint32_t>, entry> merged;
        for (size_t r = 0; r < ranks; ++r) {
            const auto list = nlohmann::json::from_cbor(all[r]);
            for (size_t i = 0; i < list.size(); ++i) {
                const auto& d = list[i];
                entry& e =
                    merged[{d[0].get<uint64_t>(), d[1].get<uint64_t>(), d[2].get<uint32_t>()}];
                if (e.desc.is_null()) {
                    e.desc = d;
                } else if (e.desc[4] != d[4]) {
                    throw std::runtime_error("waves.vcd: ranks disagree on a signal's place: " +
                                             e.desc[4].get<std::string>() + " and " +
                                             d[4].get<std::string>());
                }
                if (d[3].get<bool>()) {
                    if (e.owner >= 0) {
                        throw std::runtime_error(
                            "waves.vcd: " + d[4].get<std::string>() + " is recorded by ranks " +
                            std::to_string(e.owner) + " and " + std::to_string(r));
                    }
                    e.owner = static_cast<int>(r);
                }
                e.at.emplace_back(r, i);
            }
        }
        m_merged = std::make_unique<waves>();
        std::vector<std::vector<uint32_t>> index(ranks);
        for (size_t r = 0; r < ranks; ++r) {
            index[r].assign(nlohmann::json::from_cbor(all[r]).size(), UINT32_MAX);
        }
        for (const auto& [key, e] : merged) {
            if (e.owner < 0) {
                throw std::runtime_error("waves.vcd: no rank records " +
                                         e.desc[4].get<std::string>());
            }
            const auto g = static_cast<uint32_t>(m_merged->m_probes.size());
            m_merged->m_signals.push_back(
                {e.desc[4].get<std::string>(), e.desc[5].get<std::string>(), e.desc[6].get<int>()});
            waves::probe p;
            p.k = static_cast<waves::probe::kind>(e.desc[7].get<int>());
            p.bytes = e.desc[8].get<uint8_t>();
            p.width = e.desc[9].get<int>();
            p.id = vcd_id(g);
            m_merged->m_probes.push_back(std::move(p));
            for (const auto& [r, i] : e.at) {
                if (static_cast<int>(r) == e.owner) {
                    index[r][i] = g;
                }
            }
        }
        for (size_t r = 0; r < ranks; ++r) {
            for (const uint32_t g : index[r]) {
                for (int b = 0; b < 4; ++b) {
                    out[r].push_back(static_cast<uint8_t>(g >> (8 * b)));
                }
            }
        }
    }
    const auto in = comm.exchange(out);
    std::vector<uint32_t> global(w.m_signals.size());
    if (in[0].size() != 4 * global.size()) {
        throw std::runtime_error("waves.vcd: rank 0 sent " + std::to_string(in[0].size() / 4) +
                                 " signal indexes for " + std::to_string(global.size()));
    }
    uint32_t last = 0;
    bool any = false;
    for (size_t i = 0; i < global.size(); ++i) {
        global[i] = static_cast<uint32_t>(le(in[0].data() + 4 * i, 4));
        if (global[i] == UINT32_MAX) {
            continue;
        }
        // This rank's changes go into its spool in registration order; the merge needs them in
        // file order, which is the same order when registration follows the units.
        if (any && global[i] <= last) {
            throw std::runtime_error("waves.vcd: " + w.m_signals[i].name +
                                     " was registered out of its unit order");
        }
        last = global[i];
        any = true;
    }
    w.spool_to(m_spool.get(), std::move(global), until);
}

void partitioned_waves::open(uint64_t t) {
    m_open_time = t;
    m_w.open_spool(t);
}

void partitioned_waves::finish(const std::string& path) {
    m_w.close();
    if (m_w.m_opened && !m_w.m_dumped) {
        m_w.dump();  // the values at the window's start: no time step of this rank after it
    }
    // Every rank's initial values, and whether its window saw a time step (the single process
    // writes the file when its window saw one).
    distributed::bytes mine;
    mine.push_back(m_w.m_cycled ? 1 : 0);
    for (const auto& [g, v] : m_w.m_initial) {
        for (int b = 0; b < 4; ++b) {
            mine.push_back(static_cast<uint8_t>(g >> (8 * b)));
        }
        for (int b = 0; b < 8; ++b) {
            mine.push_back(static_cast<uint8_t>(v >> (8 * b)));
        }
    }
    const auto all = m_comm.gather(mine);
    waves* f = m_merged.get();
    bool write = false;
    if (m_comm.rank() == 0) {
        for (const auto& b : all) {
            write = write || (!b.empty() && b[0] != 0);
        }
    }
    if (write) {
        for (const auto& b : all) {
            for (size_t at = 1; at + 12 <= b.size(); at += 12) {
                f->m_probes.at(le(b.data() + at, 4)).last = le(b.data() + at + 4, 8);
            }
        }
        f->m_path = path;
        f->m_out = std::fopen(path.c_str(), "wb");
        if (f->m_out == nullptr) {
            io_error(path, "cannot create");
        }
        f->m_dump_time = m_open_time;
        f->dump();
    }
    merge_spools(m_comm, *m_spool, change_less, [f, write](const uint8_t* p, size_t) {
        if (!write) {
            return;
        }
        const uint64_t t = le(p, 8);
        if (t != f->m_time_written) {
            f->m_buf += fmt::format("#{}\n", t);
            f->m_time_written = t;
        }
        f->write_value(f->m_probes[le(p + 9, 4)], le(p + 13, 8));
        if (f->m_buf.size() >= (size_t{1} << 16)) {
            f->flush();
        }
    });
    if (write) {
        f->flush();
        const bool failed = f->m_write_failed || std::fclose(f->m_out) != 0;
        f->m_out = nullptr;
        if (failed) {
            io_error(path, "cannot write");
        }
    }
}

}  // namespace rnic::output
#endif
