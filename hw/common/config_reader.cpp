// SPDX-License-Identifier: Apache-2.0
// Typed config parsing with JSON-path errors.
#include "hw/common/config_reader.h"

#include <algorithm>

namespace rnic::config {

namespace {
std::string join_lines(const std::vector<std::string>& errors) {
    std::string s;
    for (const auto& e : errors) {
        s += (s.empty() ? "" : "\n") + e;
    }
    return s;
}
}  // namespace

config_error::config_error(const std::vector<std::string>& errs)
    : std::runtime_error(join_lines(errs))
    , errors(errs) {}

void parse_context::throw_if_errors() const {
    if (!errors.empty()) {
        throw config_error(errors);
    }
}

std::string describe(const nlohmann::json& v) {
    if (v.is_string()) {
        return v.dump();
    }
    if (v.is_object()) {
        return "an object";
    }
    if (v.is_array()) {
        return "an array";
    }
    return v.dump();
}

reader::reader(const nlohmann::json& j, std::string path, parse_context& ctx)
    : m_json(j.is_null() ? nlohmann::json::object() : j)
    , m_path(std::move(path))
    , m_ctx(ctx) {
    if (!m_json.is_object()) {
        m_ctx.errors.push_back((m_path.empty() ? std::string("(top level)") : m_path) + ": " +
                               describe(m_json) + " is not an object");
        m_ok = false;
        m_json = nlohmann::json::object();
    }
}

std::string reader::path_of(const std::string& key) const {
    return m_path.empty() ? key : m_path + "." + key;
}

bool reader::has(const std::string& key) const { return m_json.contains(key); }

nlohmann::json& reader::effective() {
    nlohmann::json* node = &m_ctx.effective;
    if (!m_path.empty()) {
        node = &(*node)[nlohmann::json::json_pointer(
            "/" + [&] {
                std::string p = m_path;
                std::replace(p.begin(), p.end(), '.', '/');
                return p;
            }())];
    }
    if (node->is_null()) {
        *node = nlohmann::json::object();
    }
    return *node;
}

const nlohmann::json* reader::take(const std::string& key) {
    m_known.push_back(key);
    auto it = m_json.find(key);
    return it == m_json.end() ? nullptr : &*it;
}

void reader::error(const std::string& key, const std::string& message) {
    m_ctx.errors.push_back(path_of(key) + ": " + message);
}

void reader::get(const std::string& key, bool& out) {
    const nlohmann::json* v = take(key);
    if (v != nullptr) {
        if (!v->is_boolean()) {
            error(key, describe(*v) + " is not true or false");
        } else {
            out = v->get<bool>();
        }
    }
    effective()[key] = out;
}

void reader::get(const std::string& key, std::string& out) {
    const nlohmann::json* v = take(key);
    if (v != nullptr) {
        if (!v->is_string()) {
            error(key, describe(*v) + " is not a string");
        } else {
            out = v->get<std::string>();
        }
    }
    effective()[key] = out;
}

void reader::get_one_of(const std::string& key, std::string& out,
                        std::initializer_list<const char*> allowed) {
    const nlohmann::json* v = take(key);
    if (v != nullptr) {
        std::string list;
        bool found = false;
        for (const char* a : allowed) {
            list += (list.empty() ? "\"" : ", \"") + std::string(a) + "\"";
            if (v->is_string() && v->get<std::string>() == a) {
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

const nlohmann::json* reader::raw(const std::string& key) { return take(key); }

reader reader::child(const std::string& key) {
    const nlohmann::json* v = take(key);
    reader r(v != nullptr ? *v : nlohmann::json::object(), path_of(key), m_ctx);
    return r;
}

void reader::set_effective(const std::string& key, const nlohmann::json& value) {
    effective()[key] = value;
}

void reader::finish() {
    if (!m_ok) {
        return;
    }
    for (auto it = m_json.begin(); it != m_json.end(); ++it) {
        if (std::find(m_known.begin(), m_known.end(), it.key()) == m_known.end()) {
            m_ctx.errors.push_back(path_of(it.key()) + ": unknown key");
        }
    }
}

}  // namespace rnic::config
