// SPDX-License-Identifier: Apache-2.0
// Traffic patterns as flow lists.
#include "testbench/scenario/flows.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace rnic::scenario {

double size_cdf::mean() const {
    // Each segment is uniform between its ends: its mass times its midpoint.
    double m = 0;
    for (size_t i = 1; i < points.size(); ++i) {
        m +=
            (points[i].second - points[i - 1].second) * (points[i].first + points[i - 1].first) / 2;
    }
    return m;
}

double size_cdf::draw(double u) const {
    for (size_t i = 1; i < points.size(); ++i) {
        const auto& [x0, y0] = points[i - 1];
        const auto& [x1, y1] = points[i];
        if (u < y1) {
            return y1 > y0 ? x0 + (u - y0) / (y1 - y0) * (x1 - x0) : x1;
        }
    }
    return points.back().first;
}

std::vector<flow_spec> flows_of(const scenario_config& cfg) {
    const workload_config& w = cfg.workload;
    const auto n = static_cast<uint32_t>(cfg.topology.nodes.size());
    std::vector<flow_spec> flows;
    auto add = [&](uint32_t src, uint32_t dst) {
        flow_spec f;
        f.src = src;
        f.dst = dst;
        f.message_bytes = w.message_bytes;
        f.messages = w.messages;
        flows.push_back(f);
    };
    switch (w.pattern) {
        case traffic_pattern::PAIRS:
            for (const auto& [src, dst] : w.pairs) {
                add(src, dst);
            }
            break;
        case traffic_pattern::INCAST: {
            const uint32_t senders = w.senders == 0 ? n - 1 : w.senders;
            for (uint32_t k = 1; k <= senders; ++k) {
                add((w.receiver + k) % n, w.receiver);
            }
            break;
        }
        case traffic_pattern::PERMUTATION: {
            // Sattolo's algorithm: a uniformly drawn single cycle, so no node sends to itself.
            std::vector<uint32_t> to(n);
            std::iota(to.begin(), to.end(), 0u);
            std::mt19937_64 rng(w.seed);
            for (uint32_t i = n - 1; i > 0; --i) {
                const auto j = static_cast<uint32_t>(rng() % i);  // j < i
                std::swap(to[i], to[j]);
            }
            for (uint32_t i = 0; i < n; ++i) {
                add(i, to[i]);
            }
            break;
        }
        case traffic_pattern::ALL_TO_ALL:
            for (uint32_t s = 0; s < n; ++s) {
                for (uint32_t d = 0; d < n; ++d) {
                    if (s != d) {
                        add(s, d);
                    }
                }
            }
            break;
        case traffic_pattern::RING_ALLREDUCE:
            for (uint32_t i = 0; i < n; ++i) {
                add(i, (i + 1) % n);
                flows.back().messages = 2ull * (n - 1);
                flows.back().gate = (i + n - 1) % n;  // the flow into node i
            }
            break;
        case traffic_pattern::PING_PONG:
            for (const auto& [a, b] : w.pairs) {
                const auto ping = static_cast<int64_t>(flows.size());
                add(a, b);
                flows.back().gate = ping + 1;  // ping i + 1 once answer i is back
                add(b, a);
                flows.back().gate = ping;  // answer i once ping i is in
                flows.back().gate_ahead = 1;
            }
            break;
        case traffic_pattern::FLOWS:
            if (!w.flow_list.empty()) {
                for (const auto& e : w.flow_list) {
                    add(e.src, e.dst);
                    flows.back().message_bytes = e.bytes;
                    flows.back().messages = 1;
                    flows.back().start_ns = e.start_ns;
                }
                break;
            }
            {
                // Per source: exponential gaps with mean = mean size / (load x link rate).
                std::mt19937_64 rng(w.seed);
                std::uniform_real_distribution<double> uni(0.0, 1.0);
                struct arrival {
                    double t;
                    uint32_t src;
                    uint64_t bytes;
                    uint32_t dst;
                };
                std::vector<arrival> all;
                const double mean = w.cdf.mean();
                const double start = w.start_us * 1000;
                const double end = start + w.duration_us * 1000;
                for (uint32_t src = 0; src < n; ++src) {
                    const double rate =
                        cfg.topology.links[cfg.topology.node_link[src]].cfg.rate_gbps;
                    const double gap_ns = mean * 8.0 / (rate * w.load);
                    double t = start;
                    for (;;) {
                        t += -std::log(1.0 - uni(rng)) * gap_ns;
                        if (t >= end) {
                            break;
                        }
                        const auto bytes =
                            static_cast<uint64_t>(std::max(1.0, std::round(w.cdf.draw(uni(rng)))));
                        auto dst = static_cast<uint32_t>(rng() % (n - 1));
                        dst += dst >= src ? 1 : 0;
                        all.push_back({t, src, bytes, dst});
                    }
                }
                std::stable_sort(all.begin(), all.end(),
                                 [](const arrival& a, const arrival& b) { return a.t < b.t; });
                for (const auto& a : all) {
                    add(a.src, a.dst);
                    // Sizes are whole 4-byte words: RDMA pads to them anyway.
                    flows.back().message_bytes = std::max<uint64_t>(4, (a.bytes + 3) / 4 * 4);
                    flows.back().messages = 1;
                    flows.back().start_ns = std::round(a.t);
                }
            }
            break;
    }
    return flows;
}

}  // namespace rnic::scenario
