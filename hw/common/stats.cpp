// SPDX-License-Identifier: Apache-2.0
// Simulator statistics registry.
#include "hw/common/stats.h"

namespace rnic::hw {

std::string_view stats_registry::intern(const std::string& s) {
    return *m_strings.insert(s).first;
}

void stats_registry::add(const std::string& block, const std::string& name, const uint64_t& counter,
                         const std::string& unit, const std::string& description) {
    const uint64_t* p = &counter;
    m_entries.push_back({intern(block), intern(name), intern(unit), intern(description),
                         [p] { return nlohmann::json(*p); }});
}

void stats_registry::add(const std::string& block, const std::string& name,
                         std::function<nlohmann::json()> fn, const std::string& unit,
                         const std::string& description) {
    m_entries.push_back(
        {intern(block), intern(name), intern(unit), intern(description), std::move(fn)});
}

nlohmann::json stats_registry::values() const {
    nlohmann::json j = nlohmann::json::object();
    // A block registers its counters one after another: look its object up once per run of
    // them (an interned block name has one address).
    const char* block = nullptr;
    nlohmann::json* counters = nullptr;
    for (const auto& e : m_entries) {
        if (e.block.data() != block) {
            block = e.block.data();
            counters = &j[std::string(e.block)];
        }
        (*counters)[std::string(e.name)] = e.value();
    }
    return j;
}

nlohmann::json stats_registry::descriptions() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& e : m_entries) {
        j[std::string(e.block) + "." + std::string(e.name)] = {
            {"unit", std::string(e.unit)}, {"description", std::string(e.description)}};
    }
    return j;
}

}  // namespace rnic::hw
