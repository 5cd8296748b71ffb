// SPDX-License-Identifier: Apache-2.0
// What every block of one simulation shares besides its ports: stats and optional trace sinks.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <systemc>

#include "hw/common/stats.h"

namespace rnic::hw {

// Receives the life of each WQE/packet through the blocks (Chrome trace events, issue 5).
// A null pointer in sim_context means tracing is off and costs one branch.
class event_tracer {
public:
    virtual ~event_tracer() = default;
    // One stage of one item: [start, end) on track `block` (hierarchical module name).
    virtual void slice(const std::string& block, const std::string& stage, uint64_t flow_id,
                       const sc_core::sc_time& start, const sc_core::sc_time& end,
                       const std::string& args_json = "") = 0;
    // The same for names that live as long as the caller (a module's name(), a literal), with
    // no arguments: no string is built per slice (a few per packet on every node).
    virtual void slice(const char* block, const char* stage, uint64_t flow_id,
                       const sc_core::sc_time& start, const sc_core::sc_time& end) {
        slice(std::string(block), std::string(stage), flow_id, start, end);
    }
    // A (block, stage) pair named once, for a block that files many slices under it (a few
    // per packet): its id here, then slice(id, ...) files one with no string work at all.
    virtual uint32_t stage_id(const char* block, const char* stage) = 0;
    virtual void slice(uint32_t stage_id, uint64_t flow_id, const sc_core::sc_time& start,
                       const sc_core::sc_time& end) = 0;
    // This tracer's own number, never another's: an id kept by a block (stage_slicer) is
    // asked again when the tracer it came from is not the one in use.
    uint64_t serial() const { return m_serial; }

private:
    static uint64_t next_serial() {
        static std::atomic<uint64_t> next{1};
        return next++;
    }
    const uint64_t m_serial = next_serial();
};

// A block's slices of a few stages through event_tracer::stage_id: each (block, stage) pair's
// id asked once per tracer and kept in one of a few slots (the send path's stage is the
// packet's opcode: first, middle, last, ACK), found again by where the names live. `block` and
// `stage` live as long as the block (its name(), a member, a literal, a static table's name).
class stage_slicer {
public:
    void slice(event_tracer& t, const char* block, const char* stage, uint64_t flow_id,
               const sc_core::sc_time& start, const sc_core::sc_time& end) {
        if (t.serial() != m_serial) {
            m_serial = t.serial();
            m_slots = {};
        }
        for (const slot& s : m_slots) {
            if (s.stage == stage && s.block == block) {
                t.slice(s.id, flow_id, start, end);
                return;
            }
        }
        slot& s = m_slots[m_next];
        m_next = (m_next + 1) % m_slots.size();
        s = {block, stage, t.stage_id(block, stage)};
        t.slice(s.id, flow_id, start, end);
    }

private:
    struct slot {
        const char* block = nullptr;
        const char* stage = nullptr;
        uint32_t id = 0;
    };
    uint64_t m_serial = 0;  // no tracer's
    std::array<slot, 4> m_slots{};
    size_t m_next = 0;  // the slot a new pair takes
};

struct sim_context {
    stats_registry stats;
    sc_core::sc_trace_file* vcd = nullptr;  // model-level waveform, when requested
    event_tracer* tracer = nullptr;         // WQE timeline, when requested
    std::string rtl_fst_base;               // RTL waveforms: <base>.<nic>.fst; empty = off
    // A block that finds the run has gone wrong in a way no completion shows (a co-simulated
    // RTL breaking its contract, a lockstep divergence) records "<block>: <what>" and stops
    // the simulation; the runner lists these first among the run's failures, with the
    // outputs written.
    std::vector<std::string> failures;
    // Files a block adds to the run's outputs folder (name -> content), e.g. divergence.json.
    std::map<std::string, std::string> outputs;
    void fail(const std::string& what) {
        failures.push_back(what);
        if (failures.size() == 1 && !sc_core::sc_end_of_simulation_invoked() &&
            sc_core::sc_get_status() != sc_core::SC_STOPPED) {
            sc_core::sc_stop();
        }
    }
};

}  // namespace rnic::hw
