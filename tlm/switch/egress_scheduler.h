// SPDX-License-Identifier: Apache-2.0
// The switch's egress scheduler between the 8 priorities of one port, chosen by name
// (topology.switch.scheduler) from the table in egress_scheduler.cpp, as hw/cc chooses its
// algorithms. SystemC-free: one object per egress port, unit-tested alone.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tlm/switch/switch_config.h"

namespace rnic::fabric {

class egress_scheduler {
public:
    virtual ~egress_scheduler() = default;
    // The priority whose head frame leaves next. `eligible` (never 0): bit k set when
    // priority k's head frame may leave now (queued, ready, not paused); `head_bytes[k]`: its
    // size (valid where eligible); `backlogged`: bit k set when priority k holds a frame at
    // all (eligible or not).
    virtual uint32_t pick(uint8_t eligible, uint8_t backlogged,
                          const std::array<uint64_t, SWITCH_PRIORITIES>& head_bytes) = 0;
    // The frame just picked emptied priority k's queue.
    virtual void drained(uint32_t k) = 0;
};

// Strict priority: the highest eligible priority (7 highest).
class strict_priority_scheduler final : public egress_scheduler {
public:
    uint32_t pick(uint8_t eligible, uint8_t backlogged,
                  const std::array<uint64_t, SWITCH_PRIORITIES>& head_bytes) override;
    void drained(uint32_t) override {}
};

// Deficit round robin (Shreedhar & Varghese, SIGCOMM 1995): a visit adds weight x quantum
// bytes to the priority's deficit; it sends while its head frame fits; a priority with
// nothing queued forgets its deficit.
class dwrr_scheduler final : public egress_scheduler {
public:
    dwrr_scheduler(const std::array<uint32_t, SWITCH_PRIORITIES>& weights, uint32_t quantum_bytes);
    uint32_t pick(uint8_t eligible, uint8_t backlogged,
                  const std::array<uint64_t, SWITCH_PRIORITIES>& head_bytes) override;
    void drained(uint32_t k) override;
    int64_t deficit(uint32_t k) const { return m_deficit[k]; }

private:
    std::array<int64_t, SWITCH_PRIORITIES> m_quantum{};  // weight x quantum bytes
    std::array<int64_t, SWITCH_PRIORITIES> m_deficit{};
    std::array<bool, SWITCH_PRIORITIES> m_granted{};  // this visit's quantum already added
    uint32_t m_rr = 0;                                // the priority being visited
};

// One line per scheduler in egress_scheduler.cpp: its name and its constructor.
struct egress_scheduler_registration {
    const char* name;
    std::unique_ptr<egress_scheduler> (*make)(const switch_config& cfg);
};
const std::vector<egress_scheduler_registration>& egress_schedulers();
// The scheduler cfg.scheduler names (parse_switch_config accepts only registered names).
std::unique_ptr<egress_scheduler> make_egress_scheduler(const switch_config& cfg);

}  // namespace rnic::fabric
