// SPDX-License-Identifier: Apache-2.0
// One-line progress display on stderr for long runs (rnicsim run on a terminal).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace rnic::output {

// Draws "[#####-----]  45%  <detail>" on one terminal line, redrawn in place at most every
// 0.2 s of wall time, and only once the run has lasted `delay_s`: short runs print nothing.
// The caller decides how often to call update(); the bar itself does no simulation work.
class progress_bar {
public:
    // A terminal is on stderr and CI is not set to true (CI logs do not want \r redraws).
    static bool wanted();

    explicit progress_bar(double delay_s = 2.0);
    ~progress_bar();
    progress_bar(const progress_bar&) = delete;
    progress_bar& operator=(const progress_bar&) = delete;

    // `fraction` of the run done (clamped to 0..1) and a short description of where it is.
    void update(double fraction, const std::string& detail);
    // Erases the line if it was drawn (the summary follows on stdout). Idempotent.
    void finish();

    double wall_s() const;  // since construction
    bool shown() const { return m_shown; }

    // The bar as drawn, without the carriage return and line erase (exposed for tests).
    static std::string render(double fraction, const std::string& detail, int width = 30);

private:
    using clock = std::chrono::steady_clock;
    clock::time_point m_start;
    clock::time_point m_last_draw;
    double m_delay_s;
    bool m_shown = false;
    bool m_finished = false;
};

}  // namespace rnic::output
