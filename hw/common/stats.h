// SPDX-License-Identifier: Apache-2.0
// Simulator statistics: named counters with unit and description, collected per block.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rnic::hw {

// Each block registers its counters once, at construction, under its hierarchical name
// (gem5 ADD_STAT style). Counters are never reset by hardware reset. At the end of a run the
// registry writes them all as blocks.<module name>.<counter> in stats.json.
class stats_registry {
public:
    struct entry {
        std::string block;
        std::string name;
        std::string unit;
        std::string description;
        std::function<nlohmann::json()> value;
    };

    void add(const std::string& block, const std::string& name, const uint64_t& counter,
             const std::string& unit, const std::string& description);
    void add(const std::string& block, const std::string& name, std::function<nlohmann::json()> fn,
             const std::string& unit, const std::string& description);

    const std::vector<entry>& entries() const { return m_entries; }
    // {"<block>": {"<counter>": value, ...}, ...}
    nlohmann::json values() const;
    // {"<block>.<counter>": {"unit": ..., "description": ...}}
    nlohmann::json descriptions() const;

private:
    std::vector<entry> m_entries;
};

}  // namespace rnic::hw
