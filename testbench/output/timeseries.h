// SPDX-License-Identifier: Apache-2.0
// timeseries.csv (outputs.timeseries): the fabric's state at every interval boundary, read from
// the blocks' own counters while the simulation is paused there. Sampling adds no events: the
// simulation loop stops at each boundary (as it stops for the waveform window), and nothing
// runs that would not run in one piece. One column per quantity (a link direction's throughput
// and pause state, a switch port's queue, a node's goodput and message rate), one row per
// boundary.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rnic::output {

class timeseries {
public:
    // rate: (value now - value at the previous row) x scale / interval ns (a counter's rate);
    // instant: value x scale (a state at the boundary).
    enum class kind { rate, instant };

    // Rows at start + k x interval (k >= 1) up to `end` and up to the run's end, in kernel time
    // units; `ps_per_unit` converts them to ps for the time column.
    timeseries(uint64_t start, uint64_t interval, uint64_t end, double ps_per_unit);

    // Every rank declares every column, in the same order (from the topology alone), and gives a
    // reader only for the columns of what it simulates (null: another rank's column).
    // `decimals`: digits after the point in the file.
    // `read` gets the boundary's time (kernel units).
    void add(std::string name, kind k, double scale, int decimals,
             std::function<uint64_t(uint64_t)> read);

    // The next boundary to sample (kernel units; ~0 when none is left).
    uint64_t next() const { return m_next; }
    // Samples every boundary up to `now` (inclusive): the caller has simulated every event
    // before each of them and none at or after it; the blocks' state is that of every boundary.
    void sample_through(uint64_t now);
    // After the run, which ended at `end`: samples the boundaries up to it and a last row at the
    // end itself (a shorter last interval) when it is not on a boundary and inside the window.
    void finish(uint64_t end);

    // Partitioned runs: this rank's columns' samples as bytes, and rank 0's merge of another
    // rank's. Throws std::runtime_error on a malformed state.
    std::vector<uint8_t> take_state() const;
    void merge_state(const std::vector<uint8_t>& state);

    // time_ns,<column>,... and one line per row.
    std::string csv() const;

private:
    void sample_at(uint64_t t);
    struct column {
        std::string name;
        kind k;
        double scale;
        int decimals;
        std::function<uint64_t(uint64_t)> read;
        std::vector<uint64_t> values;  // one per row, the baseline first
    };
    uint64_t m_start;
    uint64_t m_interval;
    uint64_t m_end;
    double m_ps_per_unit;
    uint64_t m_next;
    bool m_baseline = false;
    std::vector<uint64_t> m_times;  // the baseline (start) first
    std::vector<column> m_columns;
};

}  // namespace rnic::output
