// SPDX-License-Identifier: Apache-2.0
// Switch keys (switch_config.h; tlm/switch/README.md, "Config").
#include "tlm/switch/switch_config.h"

#include <type_traits>

#include "tlm/switch/egress_scheduler.h"

namespace rnic::fabric {

namespace {

template <typename T, size_t N>
void get_array(config::reader& r, const std::string& key, std::array<T, N>& out, T min, T max) {
    const nlohmann::json* v = r.raw(key);
    if (v != nullptr) {
        bool ok = v->is_array() && v->size() == N;
        for (size_t i = 0; ok && i < N; ++i) {
            const auto& e = (*v)[i];
            if constexpr (std::is_same_v<T, bool>) {
                ok = e.is_boolean();
            } else if constexpr (std::is_floating_point_v<T>) {
                ok = e.is_number() && e.get<double>() >= min && e.get<double>() <= max;
            } else {
                ok = (e.is_number_unsigned() || e.is_number_integer()) && e.get<int64_t>() >= 0 &&
                     static_cast<uint64_t>(e.get<int64_t>()) >= static_cast<uint64_t>(min) &&
                     static_cast<uint64_t>(e.get<int64_t>()) <= static_cast<uint64_t>(max);
            }
        }
        if (!ok) {
            std::string what = std::is_same_v<T, bool>
                                   ? "booleans"
                                   : "numbers in [" + nlohmann::json(min).dump() + ", " +
                                         nlohmann::json(max).dump() + "]";
            r.error(key, "expected a list of " + std::to_string(N) + " " + what);
        } else {
            for (size_t i = 0; i < N; ++i) {
                out[i] = (*v)[i].get<T>();
            }
        }
    }
    r.set_effective(key, out);
}

}  // namespace

switch_config::switch_config() {
    for (size_t d = 0; d < dscp_to_priority.size(); ++d) {
        dscp_to_priority[d] = static_cast<uint8_t>(d >> 3);
    }
}

switch_config parse_switch_config(config::reader r) {
    switch_config c;
    r.get("buffer_bytes", c.buffer_bytes, uint64_t{16384}, uint64_t{1} << 40);
    r.get("reserved_bytes", c.reserved_bytes, uint64_t{0}, uint64_t{1} << 30);
    r.get("alpha", c.alpha, 1.0 / 1024, 1024.0);
    r.get("pipeline_ns", c.pipeline_ns, 0.0, 1e6);
    r.get("cut_through", c.cut_through);
    r.get("scheduler", c.scheduler);
    std::string names;
    bool known = false;
    for (const auto& s : egress_schedulers()) {
        names += (names.empty() ? "\"" : ", \"") + std::string(s.name) + "\"";
        known = known || c.scheduler == s.name;
    }
    if (!known) {
        r.error("scheduler", "\"" + c.scheduler + "\" is not one of " + names);
    }
    get_array(r, "dwrr_weights", c.dwrr_weights, 1u, 1000u);
    r.get("dwrr_quantum_bytes", c.dwrr_quantum_bytes, 64u, 1u << 20);
    get_array(r, "dscp_to_priority", c.dscp_to_priority, uint8_t{0}, uint8_t{7});
    get_array(r, "lossless", c.lossless, false, true);
    r.get("xoff_bytes", c.xoff_bytes, uint64_t{0}, uint64_t{1} << 40);
    r.get("xon_bytes", c.xon_bytes, uint64_t{0}, uint64_t{1} << 40);
    r.get("xoff_alpha", c.xoff_alpha, 0.0, 1024.0);
    r.get("headroom_bytes", c.headroom_bytes, uint64_t{0}, uint64_t{1} << 40);
    r.get("pause_quanta", c.pause_quanta, 1u, 0xFFFFu);
    get_array(r, "ecn", c.ecn, false, true);
    get_array(r, "kmin_bytes", c.kmin_bytes, uint64_t{0}, uint64_t{1} << 40);
    get_array(r, "kmax_bytes", c.kmax_bytes, uint64_t{0}, uint64_t{1} << 40);
    get_array(r, "pmax", c.pmax, 0.0, 1.0);
    r.get_one_of("ecn_mark_at", c.ecn_mark_at, {"enqueue", "dequeue"});
    r.get("int_telemetry", c.int_telemetry);
    r.get("ecmp_seed", c.ecmp_seed, uint64_t{0}, ~uint64_t{0});
    r.get("seed", c.seed, uint64_t{0}, ~uint64_t{0});
    r.get("reroute", c.reroute);
    r.get("link_down_detect_ns", c.link_down_detect_ns, 0.0, 1e12);
    r.get("link_up_detect_ns", c.link_up_detect_ns, 0.0, 1e12);
    {
        config::reader w = r.child("pfc_watchdog");
        w.get("detection_ns", c.pfc_watchdog.detection_ns, 0.0, 1e12);
        w.get("restoration_ns", c.pfc_watchdog.restoration_ns, 1.0, 1e12);
        w.get_one_of("action", c.pfc_watchdog.action, {"drop", "forward"});
        w.finish();
    }
    r.get("pfc_deadlock_detect_ns", c.pfc_deadlock_detect_ns, 0.0, 1e12);
    if (c.xon_bytes >= c.xoff_bytes) {
        r.error("xon_bytes", "must be below xoff_bytes (" + std::to_string(c.xoff_bytes) + ")");
    }
    if (c.xoff_bytes >= c.buffer_bytes) {
        r.error("xoff_bytes",
                "must be below buffer_bytes (" + std::to_string(c.buffer_bytes) + ")");
    }
    for (size_t p = 0; p < SWITCH_PRIORITIES; ++p) {
        if (c.ecn[p] && c.kmax_bytes[p] <= c.kmin_bytes[p]) {
            r.error("kmax_bytes", "priority " + std::to_string(p) +
                                      ": kmax_bytes must be above kmin_bytes where ecn is on");
            break;
        }
    }
    r.finish();
    return c;
}

}  // namespace rnic::fabric
