// SPDX-License-Identifier: Apache-2.0
// WQE timeline: collects every block's stage slices, aggregates per-stage latency for
// stats.json and, on request, writes DIR/trace.json in the Chrome trace-event format that
// Perfetto and chrome://tracing open (one track per block per node, flow arrows per WQE).
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/common/sim_context.h"

namespace rnic::output {

class timeline : public hw::event_tracer {
public:
    // `trace_path` empty: aggregate only. Otherwise events stream into the file (its parent
    // directory must exist); close() finishes the JSON document.
    explicit timeline(const std::string& trace_path = "");
    ~timeline() override;

    void slice(const std::string& block, const std::string& stage, uint64_t flow_id,
               const sc_core::sc_time& start, const sc_core::sc_time& end,
               const std::string& args_json = "") override;
    void close();

    // {"<stage>": {"count", "avg_ns", "p50_ns", "p99_ns", "max_ns"}} over every slice.
    nlohmann::json stage_latency() const;
    uint64_t slices() const { return m_slices; }

private:
    struct track {
        int pid;
        int tid;
    };
    track track_of(const std::string& block);
    void emit(const std::string& event);

    std::ofstream m_out;
    bool m_first = true;
    std::unordered_map<std::string, track> m_tracks;
    std::map<std::string, int> m_pids;              // node name -> pid
    std::unordered_map<uint64_t, std::pair<track, double>> m_last;  // flow -> last slice
    std::map<std::string, std::vector<double>> m_stage_ns;
    uint64_t m_slices = 0;
    uint64_t m_next_flow_event = 1;
};

}  // namespace rnic::output
