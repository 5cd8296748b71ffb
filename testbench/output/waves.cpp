// SPDX-License-Identifier: Apache-2.0
// Windowed VCD: trace registrations recorded at elaboration, replayed when the window opens.
#include "testbench/output/waves.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

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

}  // namespace

waves::~waves() {
    try {
        close();
    } catch (const std::exception&) {
        // Destructors must not throw; call close() to see the error.
    }
}

void waves::record(std::string name, std::string type, int width,
                   std::function<void(sc_core::sc_trace_file*)> replay) {
    m_signals.push_back({std::move(name), std::move(type), width});
    m_replay.push_back(std::move(replay));
}

#define RNIC_WAVES_TRACE_A(tp)                                                  \
    void waves::trace(const tp& object, const std::string& name) {              \
        const tp* p = &object;                                                  \
        record(name, type_name<tp>(), width_of<tp>(),                           \
               [p, name](sc_core::sc_trace_file* tf) { tf->trace(*p, name); }); \
    }
#define RNIC_WAVES_TRACE_B(tp)                                                                \
    void waves::trace(const tp& object, const std::string& name, int width) {                 \
        const tp* p = &object;                                                                \
        record(name, fmt::format("{}{}", type_name<tp>(), 8 * sizeof(tp)), width,             \
               [p, name, width](sc_core::sc_trace_file* tf) { tf->trace(*p, name, width); }); \
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
}

void waves::write_comment(const std::string& comment) {
    if (m_file != nullptr) {
        m_file->write_comment(comment);
    }
}

void waves::set_time_unit(double v, sc_core::sc_time_unit tu) {
    if (m_file != nullptr) {
        m_file->set_time_unit(v, tu);
    }
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
    m_file = sc_core::sc_create_vcd_trace_file(path.substr(0, path.size() - suffix.size()).c_str());
    m_file->set_time_unit(1, sc_core::SC_PS);  // the kernel's resolution: exact times
    for (const auto& r : m_replay) {
        r(m_file);
    }
    m_opened = true;
}

void waves::close() {
    if (m_file == nullptr) {
        return;
    }
    sc_core::sc_close_vcd_trace_file(m_file);
    m_file = nullptr;
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
