// SPDX-License-Identifier: Apache-2.0
// Simulator statistics: named counters with unit and description, collected per block.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace rnic::hw {

// Each block registers its counters once, at construction, under its hierarchical name
// (gem5 ADD_STAT style). Counters are never reset by hardware reset. At the end of a run the
// registry writes them all as blocks.<module name>.<counter> in stats.json.
//
// Memory: a thousand nodes register ~400 counters each, most with the same name, unit and
// description as the other nodes' and with one block name for many counters. The registry
// keeps each distinct string once (an entry's strings view that pool) and its entries in a
// deque (no copy of them all as it grows): 96 bytes an entry, not ~270.
class stats_registry {
public:
    struct entry {
        std::string_view block;  // views of the registry's own strings: valid while it lives
        std::string_view name;
        std::string_view unit;
        std::string_view description;
        std::function<nlohmann::json()> value;
    };

    stats_registry() = default;
    stats_registry(const stats_registry&) = delete;  // the entries view its strings
    stats_registry& operator=(const stats_registry&) = delete;
    // A move keeps the views valid: the set's nodes (the strings) change owner, not address.
    stats_registry(stats_registry&&) = default;
    stats_registry& operator=(stats_registry&&) = default;

    void add(const std::string& block, const std::string& name, const uint64_t& counter,
             const std::string& unit, const std::string& description);
    void add(const std::string& block, const std::string& name, std::function<nlohmann::json()> fn,
             const std::string& unit, const std::string& description);

    const std::deque<entry>& entries() const { return m_entries; }
    // {"<block>": {"<counter>": value, ...}, ...}
    nlohmann::json values() const;
    // {"<block>.<counter>": {"unit": ..., "description": ...}}
    nlohmann::json descriptions() const;

private:
    std::string_view intern(const std::string& s);

    std::unordered_set<std::string> m_strings;  // elements keep their address on rehash
    std::deque<entry> m_entries;
};

}  // namespace rnic::hw
