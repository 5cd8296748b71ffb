// SPDX-License-Identifier: Apache-2.0
// Typed config parsing with JSON-path errors (STYLE.md section 5).
#pragma once

#include <initializer_list>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace rnic::config {

// Thrown once parsing is over, carrying every error found, one per line, each starting with
// the JSON path of the offending value.
struct config_error : std::runtime_error {
    explicit config_error(const std::vector<std::string>& errors);
    std::vector<std::string> errors;
};

// Shared by all readers of one config file: the errors found and the effective config
// (every value read, defaults filled in), which is what config.json records.
struct parse_context {
    std::vector<std::string> errors;
    nlohmann::json effective = nlohmann::json::object();
    void throw_if_errors() const;
};

// Reads one JSON object at `path`. Each get() takes the member if present (checking type and
// range) and records the value used in the effective config; finish() reports unknown keys.
class reader {
public:
    reader(const nlohmann::json& j, std::string path, parse_context& ctx);
    ~reader() = default;

    const std::string& path() const { return m_path; }
    std::string path_of(const std::string& key) const;
    bool has(const std::string& key) const;

    template <typename T>
    void get(const std::string& key, T& out, T min, T max);
    void get(const std::string& key, bool& out);
    void get(const std::string& key, std::string& out);
    void get_one_of(const std::string& key, std::string& out,
                    std::initializer_list<const char*> allowed);
    template <typename T>
    void get_one_of(const std::string& key, T& out, std::initializer_list<T> allowed);
    // Marks a key as known without reading it (the caller parses it itself).
    const nlohmann::json* raw(const std::string& key);
    // A nested object; a missing key gives an empty object so its defaults apply.
    reader child(const std::string& key);
    // Records a caller-built value in the effective config.
    void set_effective(const std::string& key, const nlohmann::json& value);
    void error(const std::string& key, const std::string& message);
    // Reports every key that no get()/child()/raw() asked for.
    void finish();

private:
    const nlohmann::json* take(const std::string& key);
    nlohmann::json& effective();

    nlohmann::json m_json;
    std::string m_path;
    parse_context& m_ctx;
    std::vector<std::string> m_known;
    bool m_ok = true;  // false when the value is not an object (already reported)
};

std::string describe(const nlohmann::json& v);

template <typename T>
void reader::get(const std::string& key, T& out, T min, T max) {
    static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
    const nlohmann::json* v = take(key);
    if (v != nullptr) {
        bool type_ok = std::is_floating_point_v<T> ? v->is_number()
                                                   : (v->is_number_integer() ||
                                                      v->is_number_unsigned());
        if (!type_ok) {
            error(key, describe(*v) + " is not " +
                           (std::is_floating_point_v<T> ? "a number" : "an integer"));
        } else {
            bool in_range;
            T value{};
            if constexpr (std::is_floating_point_v<T>) {
                const double d = v->get<double>();
                in_range = d >= static_cast<double>(min) && d <= static_cast<double>(max);
                value = static_cast<T>(d);
            } else if (v->is_number_unsigned()) {
                const uint64_t u = v->get<uint64_t>();
                in_range = (min <= 0 || u >= static_cast<uint64_t>(min)) &&
                           u <= static_cast<uint64_t>(max) && max >= 0;
                value = static_cast<T>(u);
            } else {
                const int64_t s = v->get<int64_t>();
                in_range = s >= static_cast<int64_t>(min) &&
                           (max > static_cast<T>(std::numeric_limits<int64_t>::max()) ||
                            s <= static_cast<int64_t>(max));
                value = static_cast<T>(s);
            }
            if (!in_range) {
                error(key, describe(*v) + " out of range [" + nlohmann::json(min).dump() + ", " +
                               nlohmann::json(max).dump() + "]");
            } else {
                out = value;
            }
        }
    }
    effective()[key] = out;
}

template <typename T>
void reader::get_one_of(const std::string& key, T& out, std::initializer_list<T> allowed) {
    const nlohmann::json* v = take(key);
    if (v != nullptr) {
        std::string list;
        bool found = false;
        for (const T& a : allowed) {
            list += (list.empty() ? "" : ", ") + nlohmann::json(a).dump();
            if (v->is_number() && v->get<double>() == static_cast<double>(a)) {
                out = a;
                found = true;
            }
        }
        if (!found) {
            error(key, describe(*v) + " is not one of " + list);
        }
    }
    effective()[key] = out;
}

}  // namespace rnic::config
