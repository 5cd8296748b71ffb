// SPDX-License-Identifier: Apache-2.0
// WQE timeline (Chrome trace events).
#include "testbench/output/timeline.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace rnic::output {

timeline::timeline(const std::string& trace_path) {
    if (!trace_path.empty()) {
        m_out.open(trace_path, std::ios::binary | std::ios::trunc);
        if (!m_out) {
            throw std::runtime_error(trace_path + ": cannot open for writing");
        }
        m_out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    }
}

timeline::~timeline() { close(); }

void timeline::emit(const std::string& event) {
    if (!m_out.is_open()) {
        return;
    }
    if (!m_first) {
        m_out << ",\n";
    }
    m_first = false;
    m_out << event;
}

timeline::track timeline::track_of(const std::string& block) {
    auto it = m_tracks.find(block);
    if (it != m_tracks.end()) {
        return it->second;
    }
    // Block names are hierarchical: "<node>.nic.<block>..." -> process <node>, thread <rest>.
    const size_t dot = block.find('.');
    const std::string node = dot == std::string::npos ? block : block.substr(0, dot);
    auto [pit, fresh] = m_pids.emplace(node, static_cast<int>(m_pids.size()) + 1);
    const int pid = pit->second;
    if (fresh) {
        emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})",
                         pid, nlohmann::json(node).dump()));
    }
    const track t{pid, static_cast<int>(m_tracks.size()) + 1};
    m_tracks.emplace(block, t);
    emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})",
                     t.pid, t.tid, nlohmann::json(block).dump()));
    return t;
}

void timeline::slice(const std::string& block, const std::string& stage, uint64_t flow_id,
                     const sc_core::sc_time& start, const sc_core::sc_time& end,
                     const std::string& args_json) {
    ++m_slices;
    const double ts_ns = start.to_seconds() * 1e9;
    const double dur_ns = (end - start).to_seconds() * 1e9;
    m_stage_ns[stage].push_back(dur_ns);
    if (!m_out.is_open()) {
        return;
    }
    const track t = track_of(block);
    // Trace-event times are microseconds; keep picosecond resolution.
    emit(fmt::format(
        R"({{"ph":"X","name":"{}","cat":"wqe","pid":{},"tid":{},"ts":{:.6f},"dur":{:.6f},"args":{{"flow":"0x{:x}"{}{}}}}})",
        stage, t.pid, t.tid, ts_ns / 1000.0, dur_ns / 1000.0, flow_id,
        args_json.empty() ? "" : ",", args_json));
    if (flow_id == 0) {
        return;
    }
    // Flow arrow from the previous slice of the same WQE to this one.
    auto it = m_last.find(flow_id);
    if (it != m_last.end()) {
        const auto& [pt, pts] = it->second;
        const uint64_t id = m_next_flow_event++;
        emit(fmt::format(R"({{"ph":"s","name":"wqe","cat":"flow","id":{},"pid":{},"tid":{},"ts":{:.6f}}})",
                         id, pt.pid, pt.tid, pts / 1000.0));
        emit(fmt::format(
            R"({{"ph":"f","bp":"e","name":"wqe","cat":"flow","id":{},"pid":{},"tid":{},"ts":{:.6f}}})", id,
            t.pid, t.tid, ts_ns / 1000.0));
    }
    m_last[flow_id] = {t, ts_ns};
}

void timeline::close() {
    if (m_out.is_open()) {
        m_out << "\n]}\n";
        m_out.close();
    }
}

nlohmann::json timeline::stage_latency() const {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [stage, v] : m_stage_ns) {
        std::vector<double> s = v;
        std::sort(s.begin(), s.end());
        double sum = 0;
        for (double d : s) {
            sum += d;
        }
        auto pct = [&](double p) {
            const size_t i = std::min(s.size() - 1, static_cast<size_t>(std::ceil(p * s.size())) - 1);
            return s[i];
        };
        j[stage] = {{"count", s.size()},
                    {"avg_ns", sum / static_cast<double>(s.size())},
                    {"p50_ns", pct(0.50)},
                    {"p99_ns", pct(0.99)},
                    {"max_ns", s.back()}};
    }
    return j;
}

}  // namespace rnic::output
