// SPDX-License-Identifier: Apache-2.0
// Simulator statistics registry.
#include "hw/common/stats.h"

namespace rnic::hw {

void stats_registry::add(const std::string& block, const std::string& name,
                         const uint64_t& counter, const std::string& unit,
                         const std::string& description) {
    const uint64_t* p = &counter;
    m_entries.push_back({block, name, unit, description, [p] { return nlohmann::json(*p); }});
}

void stats_registry::add(const std::string& block, const std::string& name,
                         std::function<nlohmann::json()> fn, const std::string& unit,
                         const std::string& description) {
    m_entries.push_back({block, name, unit, description, std::move(fn)});
}

nlohmann::json stats_registry::values() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& e : m_entries) {
        j[e.block][e.name] = e.value();
    }
    return j;
}

nlohmann::json stats_registry::descriptions() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& e : m_entries) {
        j[e.block + "." + e.name] = {{"unit", e.unit}, {"description", e.description}};
    }
    return j;
}

}  // namespace rnic::hw
