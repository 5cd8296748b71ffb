// SPDX-License-Identifier: Apache-2.0
#include "testbench/output/timeseries.h"

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

namespace rnic::output {

namespace {
constexpr uint64_t NONE = ~uint64_t{0};
}

timeseries::timeseries(uint64_t start, uint64_t interval, uint64_t end, double ps_per_unit)
    : m_start(start)
    , m_interval(interval)
    , m_end(end)
    , m_ps_per_unit(ps_per_unit)
    , m_next(start) {}

void timeseries::add(std::string name, kind k, double scale, int decimals,
                     std::function<uint64_t(uint64_t)> read) {
    m_columns.push_back({std::move(name), k, scale, decimals, std::move(read), {}});
}

void timeseries::sample_at(uint64_t t) {
    m_times.push_back(t);
    for (column& c : m_columns) {
        if (c.read) {
            c.values.push_back(c.read(t));
        }
    }
}

void timeseries::sample_through(uint64_t now) {
    while (m_next != NONE && m_next <= now) {
        sample_at(m_next);
        m_baseline = true;
        const uint64_t after = m_next + m_interval;
        m_next = (after > m_end || after < m_next) ? NONE : after;
    }
}

void timeseries::finish(uint64_t end) {
    sample_through(end);
    if (m_baseline && end < m_end && end > m_times.back()) {
        sample_at(end);
    }
    m_next = NONE;
}

std::vector<uint8_t> timeseries::take_state() const {
    nlohmann::json j = nlohmann::json::object();
    for (size_t i = 0; i < m_columns.size(); ++i) {
        if (m_columns[i].read) {
            j[std::to_string(i)] = m_columns[i].values;
        }
    }
    return nlohmann::json::to_cbor(j);
}

void timeseries::merge_state(const std::vector<uint8_t>& state) {
    const nlohmann::json j = nlohmann::json::from_cbor(state);
    for (const auto& [k, v] : j.items()) {
        const size_t i = std::stoul(k);
        if (i >= m_columns.size() || v.size() != m_times.size()) {
            throw std::runtime_error("timeseries: another rank's column " + k +
                                     " does not match this rank's rows");
        }
        m_columns[i].values = v.get<std::vector<uint64_t>>();
    }
}

std::string timeseries::csv() const {
    std::string out = "time_ns";
    for (const column& c : m_columns) {
        out += ',';
        out += c.name;
    }
    out += '\n';
    for (size_t r = 1; r < m_times.size(); ++r) {
        const auto ps =
            static_cast<uint64_t>(std::llround(static_cast<double>(m_times[r]) * m_ps_per_unit));
        out += fmt::format("{}.{:03}", ps / 1000, ps % 1000);
        const double dt_ns = static_cast<double>(m_times[r] - m_times[r - 1]) * m_ps_per_unit / 1e3;
        for (const column& c : m_columns) {
            if (c.values.size() != m_times.size()) {
                out += ",";  // nobody sampled it (not expected)
                continue;
            }
            double v = static_cast<double>(c.values[r]) * c.scale;
            if (c.k == kind::rate) {
                v = static_cast<double>(c.values[r] - c.values[r - 1]) * c.scale / dt_ns;
            }
            if (c.decimals == 0) {
                out += fmt::format(",{}", static_cast<uint64_t>(std::llround(v)));
            } else {
                out += fmt::format(",{:.{}f}", v, c.decimals);
            }
        }
        out += '\n';
    }
    return out;
}

}  // namespace rnic::output
