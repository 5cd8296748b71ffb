// SPDX-License-Identifier: Apache-2.0
// Progress bar on stderr.
#include "testbench/output/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>
#include <unistd.h>

namespace rnic::output {

namespace {
constexpr double REDRAW_S = 0.2;
}  // namespace

bool progress_bar::wanted() {
    const char* ci = std::getenv("CI");
    if (ci != nullptr && (std::strcmp(ci, "true") == 0 || std::strcmp(ci, "1") == 0)) {
        return false;
    }
    return isatty(STDERR_FILENO) == 1;
}

progress_bar::progress_bar(double delay_s)
    : m_start(clock::now())
    , m_last_draw(m_start)
    , m_delay_s(delay_s) {}

progress_bar::~progress_bar() {
    finish();
}

double progress_bar::wall_s() const {
    return std::chrono::duration<double>(clock::now() - m_start).count();
}

std::string progress_bar::render(double fraction, const std::string& detail, int width) {
    fraction = std::clamp(std::isfinite(fraction) ? fraction : 0.0, 0.0, 1.0);
    const int full = static_cast<int>(fraction * width);
    return fmt::format("[{}{}] {:3.0f}%  {}", std::string(full, '#'),
                       std::string(width - full, '-'), std::floor(fraction * 100.0), detail);
}

void progress_bar::update(double fraction, const std::string& detail) {
    if (m_finished) {
        return;
    }
    const clock::time_point now = clock::now();
    if (std::chrono::duration<double>(now - m_start).count() < m_delay_s ||
        (m_shown && std::chrono::duration<double>(now - m_last_draw).count() < REDRAW_S)) {
        return;
    }
    m_last_draw = now;
    m_shown = true;
    const std::string line = "\r" + render(fraction, detail) + "\x1b[K";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
}

void progress_bar::finish() {
    if (m_finished) {
        return;
    }
    m_finished = true;
    if (m_shown) {
        std::fputs("\r\x1b[K", stderr);
        std::fflush(stderr);
    }
}

}  // namespace rnic::output
