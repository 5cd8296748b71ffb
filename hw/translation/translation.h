// SPDX-License-Identifier: Apache-2.0
// MR/MTT translation: key and bounds checks, access rights, PD match, VA -> bus addresses.
#pragma once

#include <cstdint>
#include <vector>

#include <systemc>

#include "hw/common/clock_domain.h"
#include "hw/common/config_reader.h"
#include "hw/common/sim_context.h"
#include "hw/common/timestep_arbiter.h"
#include "hw/context/context.h"
#include "hw/context_cache/context_cache.h"

namespace rnic::hw {

struct translation_config {
    uint32_t mpt_lookup_cycles = 2;  // key -> MPT entry
    uint32_t mtt_lookup_cycles = 2;  // per page translated (pipelined: 1 page per cycle after)
    // MTT lines of one translation read at once (in flight together) when a request spans
    // several lines: the page list of a long message is fetched ahead of its data. 0 or 1: one
    // miss after the other.
    uint32_t mtt_prefetch_lines = 16;
};
translation_config parse_translation_config(config::reader r);

struct dma_segment {
    uint64_t bus_addr = 0;
    uint32_t len = 0;
};

enum class xlate_status : uint8_t {
    OK,
    BAD_KEY,  // no such key, or key invalidated
    PD_MISMATCH,
    ACCESS,  // rights not granted
    BOUNDS,  // range outside the region
};
const char* to_string(xlate_status s);

// Required rights of an access.
enum xlate_access : uint32_t {
    XLATE_LOCAL_READ = 0,
    XLATE_LOCAL_WRITE = 1,
    XLATE_REMOTE_READ = 2,
    XLATE_REMOTE_WRITE = 4,
};

class translation : public sc_core::sc_module {
public:
    translation(sc_core::sc_module_name name, const translation_config& cfg,
                const clock_domain& clk, context_store& contexts, sim_context& ctx);

    // From an SC_THREAD. The unit is pipelined: one lookup starts per cycle; a caller waits
    // mpt_lookup_cycles + pages x mtt_lookup_cycles... (see .cpp). Appends bus segments,
    // merging physically contiguous pages. `remote` keys must not be the privileged key.
    xlate_status translate(uint32_t key, uint32_t pdn, uint64_t va, uint64_t len, uint32_t access,
                           bool remote, std::vector<dma_segment>& out);

    // MPT and MTT reads go through this cache when set (else they are on-chip hits).
    void set_context_cache(context_cache* cache) { m_cache = cache; }

    struct stats {
        uint64_t lookups = 0;
        uint64_t pages = 0;
        uint64_t faults = 0;
    };
    const stats& get_stats() const { return m_stats; }

private:
    translation_config m_cfg;
    const clock_domain& m_clk;
    context_store& m_contexts;
    timestep_arbiter m_arbiter;  // same-cycle lookups: by requesting process (see .cpp)
    sc_core::sc_time m_free;     // next cycle the lookup pipeline accepts a request
    context_cache* m_cache = nullptr;
    stats m_stats;
};

}  // namespace rnic::hw
