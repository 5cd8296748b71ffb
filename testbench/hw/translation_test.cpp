// SPDX-License-Identifier: Apache-2.0
// MR/MTT translation: key checks (privileged, unknown, invalid, variant byte), PD, access
// rights, bounds (overflow-safe), VA -> bus segments over scattered and contiguous pages,
// memory windows through their MR, and the lookup timing (MPT + MTT cycles, one request per
// cycle).
#include "hw/translation/translation.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

#include "hw/common/clock_domain.h"
#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/hsi/hsi.h"

namespace {

namespace hsi = rnic::hsi;
using rnic::hw::dma_segment;
using rnic::hw::mpt_entry;
using rnic::hw::translation;
using rnic::hw::translation_config;
using rnic::hw::XLATE_LOCAL_READ;
using rnic::hw::XLATE_LOCAL_WRITE;
using rnic::hw::XLATE_REMOTE_READ;
using rnic::hw::XLATE_REMOTE_WRITE;
using rnic::hw::xlate_status;
using sc_core::SC_NS;
using sc_core::sc_time;

constexpr uint64_t PAGE = hsi::PAGE_SIZE;
constexpr uint64_t U64_MAX = std::numeric_limits<uint64_t>::max();
constexpr uint32_t ALL_RIGHTS =
    hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_READ | hsi::ACCESS_REMOTE_WRITE;

uint32_t make_key(uint32_t index, uint8_t variant) {
    return index << 8 | variant;
}

struct bench {
    rnic::hw::sim_context ctx;
    rnic::hw::clock_domain clk{"nic", 250};  // 4 ns
    rnic::hw::context_store contexts{8, 8, 8, 8, 64, 256};
    translation xl;

    explicit bench(const translation_config& cfg = {})
        : xl("xlate", cfg, clk, contexts, ctx) {}

    // Registers an MR the way the command processor does: MPT entry + MTT pages.
    mpt_entry& add_mr(uint32_t index, uint8_t variant, uint32_t pdn, uint32_t access,
                      uint64_t base_va, uint64_t length, uint32_t first_byte_offset,
                      const std::vector<uint64_t>& pages) {
        mpt_entry& e = *contexts.mpt_slot(make_key(index, variant));
        e = mpt_entry{};
        e.valid = true;
        e.allocated = true;
        e.key = make_key(index, variant);
        e.pdn = pdn;
        e.access = access;
        e.base_va = base_va;
        e.length = length;
        e.first_byte_offset = first_byte_offset;
        e.page_count = static_cast<uint32_t>(pages.size());
        e.max_pages = e.page_count;
        e.mtt_base = contexts.mtt_alloc(e.page_count);
        for (uint32_t i = 0; i < e.page_count; ++i) {
            contexts.mtt(e.mtt_base + i) = pages[i];
        }
        return e;
    }
    mpt_entry& add_mw(uint32_t index, uint8_t variant, uint32_t pdn, uint32_t access,
                      uint32_t parent_index, uint64_t va, uint64_t length) {
        mpt_entry& e = *contexts.mpt_slot(make_key(index, variant));
        e = mpt_entry{};
        e.valid = true;
        e.allocated = true;
        e.is_mw = true;
        e.key = make_key(index, variant);
        e.pdn = pdn;
        e.access = access;
        e.base_va = va;
        e.length = length;
        e.parent_index = parent_index;
        return e;
    }

    struct result {
        xlate_status status;
        std::vector<dma_segment> segs;
        sc_time start, end;
    };
    // From an SC_THREAD.
    result translate(uint32_t key, uint32_t pdn, uint64_t va, uint64_t len, uint32_t access,
                     bool remote) {
        result r;
        r.start = sc_core::sc_time_stamp();
        r.status = xl.translate(key, pdn, va, len, access, remote, r.segs);
        r.end = sc_core::sc_time_stamp();
        return r;
    }
};

template <typename F>
void run_thread(F body) {
    sc_core::sc_spawn(body, "body");
    sc_core::sc_start();
}

void expect_segs(const std::vector<dma_segment>& got,
                 const std::vector<std::pair<uint64_t, uint32_t>>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].bus_addr, want[i].first) << "segment " << i;
        EXPECT_EQ(got[i].len, want[i].second) << "segment " << i;
    }
}

TEST(Translation, PrivilegedKeyIsLocalOnlyAndUntranslated) {
    bench b;
    std::vector<bench::result> r;
    run_thread([&] {
        r.push_back(b.translate(hsi::PRIVILEGED_KEY, 0, 0x1234'5000, 100, XLATE_LOCAL_READ, false));
        r.push_back(b.translate(hsi::PRIVILEGED_KEY, 7, 0x9000, 8192, XLATE_LOCAL_WRITE, false));
        r.push_back(b.translate(hsi::PRIVILEGED_KEY, 0, 0x9000, 64, XLATE_REMOTE_READ, true));
        r.push_back(b.translate(hsi::PRIVILEGED_KEY, 0, 0x9000, 64, XLATE_REMOTE_WRITE, true));
        r.push_back(b.translate(hsi::PRIVILEGED_KEY, 0, 0x9000, 0, XLATE_LOCAL_READ, false));
    });
    ASSERT_EQ(r.size(), 5u);
    EXPECT_EQ(r[0].status, xlate_status::OK);
    expect_segs(r[0].segs, {{0x1234'5000, 100}});
    EXPECT_EQ(r[1].status, xlate_status::OK);  // any PD: logical addresses belong to the kernel
    expect_segs(r[1].segs, {{0x9000, 8192}});  // one segment, no page walk
    EXPECT_EQ(r[2].status, xlate_status::BAD_KEY);
    EXPECT_TRUE(r[2].segs.empty());
    EXPECT_EQ(r[3].status, xlate_status::BAD_KEY);
    EXPECT_EQ(r[4].status, xlate_status::OK);
    EXPECT_TRUE(r[4].segs.empty());
    EXPECT_EQ(b.xl.get_stats().lookups, 5u);
    EXPECT_EQ(b.xl.get_stats().faults, 2u);
    EXPECT_EQ(b.xl.get_stats().pages, 0u);
}

TEST(Translation, UnknownInvalidAndStaleKeysAreBadKeys) {
    bench b;
    b.add_mr(3, 0x42, 1, ALL_RIGHTS, 0x10000, 0x1000, 0, {0xA000'0000});
    mpt_entry& fr = b.add_mr(4, 0x10, 1, ALL_RIGHTS, 0x20000, 0x1000, 0, {0xB000'0000});
    fr.valid = false;  // fast-reg MR allocated but not (yet) registered, or invalidated
    std::vector<bench::result> r;
    run_thread([&] {
        r.push_back(b.translate(make_key(3, 0x42), 1, 0x10000, 16, XLATE_LOCAL_READ, false));
        r.push_back(b.translate(make_key(3, 0x43), 1, 0x10000, 16, XLATE_LOCAL_READ, false));
        r.push_back(b.translate(make_key(3, 0x42 ^ 0x80), 1, 0x10000, 16, XLATE_REMOTE_READ, true));
        r.push_back(b.translate(make_key(4, 0x10), 1, 0x20000, 16, XLATE_LOCAL_READ, false));
        r.push_back(b.translate(make_key(5, 0x00), 1, 0x10000, 16, XLATE_LOCAL_READ, false));
        r.push_back(b.translate(make_key(1000, 0x42), 1, 0x10000, 16, XLATE_LOCAL_READ, false));
        r.push_back(b.translate(0xFFFF'FFFFu, 1, 0x10000, 16, XLATE_LOCAL_READ, false));
    });
    ASSERT_EQ(r.size(), 7u);
    EXPECT_EQ(r[0].status, xlate_status::OK);
    EXPECT_EQ(r[1].status, xlate_status::BAD_KEY) << "variant byte mismatch";
    EXPECT_EQ(r[2].status, xlate_status::BAD_KEY) << "variant byte mismatch (remote)";
    EXPECT_EQ(r[3].status, xlate_status::BAD_KEY) << "allocated, not valid";
    EXPECT_EQ(r[4].status, xlate_status::BAD_KEY) << "unallocated slot";
    EXPECT_EQ(r[5].status, xlate_status::BAD_KEY) << "index beyond the MPT";
    EXPECT_EQ(r[6].status, xlate_status::BAD_KEY) << "index beyond the MPT";
    for (size_t i = 1; i < r.size(); ++i) {
        EXPECT_TRUE(r[i].segs.empty()) << i;
    }
    EXPECT_EQ(b.xl.get_stats().faults, 6u);
    EXPECT_EQ(std::string(rnic::hw::to_string(xlate_status::BAD_KEY)), "bad_key");
}

TEST(Translation, PdMismatch) {
    bench b;
    b.add_mr(2, 1, 5, ALL_RIGHTS, 0x10000, 0x1000, 0, {0xA000'0000});
    std::vector<bench::result> r;
    run_thread([&] {
        r.push_back(b.translate(make_key(2, 1), 5, 0x10000, 64, XLATE_REMOTE_WRITE, true));
        r.push_back(b.translate(make_key(2, 1), 6, 0x10000, 64, XLATE_REMOTE_WRITE, true));
        r.push_back(b.translate(make_key(2, 1), 0, 0x10000, 64, XLATE_LOCAL_READ, false));
    });
    EXPECT_EQ(r[0].status, xlate_status::OK);
    EXPECT_EQ(r[1].status, xlate_status::PD_MISMATCH);
    EXPECT_EQ(r[2].status, xlate_status::PD_MISMATCH);
    EXPECT_TRUE(r[1].segs.empty());
}

// Each right is checked on its own: local read is always allowed; local write, remote read and
// remote write each need their flag.
TEST(Translation, AccessRights) {
    bench b;
    const uint32_t rights[] = {0, hsi::ACCESS_LOCAL_WRITE, hsi::ACCESS_REMOTE_READ,
                               hsi::ACCESS_REMOTE_WRITE, ALL_RIGHTS};
    for (uint32_t i = 0; i < 5; ++i) {
        b.add_mr(1 + i, 0, 1, rights[i], 0x10000 * (i + 1), 0x1000, 0, {0xA000'0000 + i * PAGE});
    }
    struct req {
        uint32_t access;
        bool remote;
    };
    const req reqs[] = {{XLATE_LOCAL_READ, false},
                        {XLATE_LOCAL_WRITE, false},
                        {XLATE_REMOTE_READ, true},
                        {XLATE_REMOTE_WRITE, true},
                        {XLATE_REMOTE_READ | XLATE_REMOTE_WRITE, true}};  // e.g. an atomic
    xlate_status got[5][5];
    run_thread([&] {
        for (uint32_t i = 0; i < 5; ++i) {
            for (uint32_t j = 0; j < 5; ++j) {
                got[i][j] = b.translate(make_key(1 + i, 0), 1, 0x10000 * (i + 1), 8, reqs[j].access,
                                        reqs[j].remote)
                                .status;
            }
        }
    });
    const auto OK = xlate_status::OK;
    const auto NO = xlate_status::ACCESS;
    const xlate_status want[5][5] = {
        {OK, NO, NO, NO, NO},  // no rights
        {OK, OK, NO, NO, NO},  // local write
        {OK, NO, OK, NO, NO},  // remote read
        {OK, NO, NO, OK, NO},  // remote write
        {OK, OK, OK, OK, OK},  // all
    };
    for (uint32_t i = 0; i < 5; ++i) {
        for (uint32_t j = 0; j < 5; ++j) {
            EXPECT_EQ(got[i][j], want[i][j]) << "MR rights " << rights[i] << ", request " << j;
        }
    }
}

TEST(Translation, BoundsAreOverflowSafe) {
    bench b;
    b.add_mr(1, 0, 1, ALL_RIGHTS, 0x10000, 0x3000, 0, {0xA000'0000, 0xA000'1000, 0xA000'2000});
    b.add_mr(2, 0, 1, ALL_RIGHTS, U64_MAX - 0xFFF, 0x1000, 0, {0xB000'0000});  // top page
    struct req {
        uint32_t key;
        uint64_t va, len;
        xlate_status want;
    };
    const uint32_t k = make_key(1, 0);
    const uint32_t top = make_key(2, 0);
    const std::vector<req> reqs = {
        {k, 0x10000, 0x3000, xlate_status::OK},  // the whole region
        {k, 0x12FFF, 1, xlate_status::OK},       // last byte
        {k, 0x13000, 0, xlate_status::OK},       // empty, at the end
        {k, 0xFFFF, 1, xlate_status::BOUNDS},    // starts below
        {k, 0xFFFF, 0x3001, xlate_status::BOUNDS},
        {k, 0x12FFF, 2, xlate_status::BOUNDS},  // ends past the end
        {k, 0x13000, 1, xlate_status::BOUNDS},
        {k, 0x10000, 0x3001, xlate_status::BOUNDS},
        {k, 0x10000, U64_MAX, xlate_status::BOUNDS},            // va + len wraps
        {k, 0x11000, U64_MAX - 0x10FFF, xlate_status::BOUNDS},  // va + len == 0 (mod 2^64)
        {k, U64_MAX, 2, xlate_status::BOUNDS},
        {k, U64_MAX - 0x100, 0x200, xlate_status::BOUNDS},
        {top, U64_MAX - 0xFFF, 0x1000, xlate_status::OK},  // region ends at 2^64
        {top, U64_MAX, 1, xlate_status::OK},
        {top, U64_MAX, 2, xlate_status::BOUNDS},
        {top, U64_MAX - 0xFFF, U64_MAX, xlate_status::BOUNDS},
    };
    std::vector<bench::result> r;
    run_thread([&] {
        for (const auto& q : reqs) {
            r.push_back(b.translate(q.key, 1, q.va, q.len, XLATE_LOCAL_WRITE, false));
        }
    });
    ASSERT_EQ(r.size(), reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
        EXPECT_EQ(r[i].status, reqs[i].want)
            << "request " << i << ": va " << std::hex << reqs[i].va << " len " << reqs[i].len;
        if (reqs[i].want != xlate_status::OK) {
            EXPECT_TRUE(r[i].segs.empty()) << i;
        }
    }
    expect_segs(r[1].segs, {{0xA000'2FFF, 1}});
    EXPECT_TRUE(r[2].segs.empty());
    expect_segs(r[13].segs, {{0xB000'0FFF, 1}});
}

// VA -> bus: one segment per run of physically contiguous pages; the first page starts at
// first_byte_offset.
TEST(Translation, MultiPageScatteredAndContiguous) {
    bench b;
    const uint64_t va = 0x7F00'0000'1100ull;  // first_byte_offset 0x100
    b.add_mr(1, 0, 1, ALL_RIGHTS, va, 0x3000, 0x100,
             {0xA000'0000, 0xB000'0000, 0xB000'1000, 0xC000'0000});
    b.add_mr(2, 0, 1, ALL_RIGHTS, 0x40000, 4 * PAGE, 0,
             {0xD000'0000, 0xD000'1000, 0xD000'2000, 0xD000'3000});
    std::vector<bench::result> r;
    run_thread([&] {
        r.push_back(b.translate(make_key(1, 0), 1, va, 0x3000, XLATE_LOCAL_READ, false));
        r.push_back(b.translate(make_key(1, 0), 1, va + 0x1F00, 0x10, XLATE_LOCAL_READ, false));
        r.push_back(b.translate(make_key(1, 0), 1, va + 0xEFF, 2, XLATE_LOCAL_READ, false));
        r.push_back(
            b.translate(make_key(2, 0), 1, 0x40010, 4 * PAGE - 0x10, XLATE_LOCAL_READ, false));
    });
    ASSERT_EQ(r.size(), 4u);
    for (const auto& x : r) {
        EXPECT_EQ(x.status, xlate_status::OK);
    }
    // Pages 1 and 2 are adjacent in bus space: merged.
    expect_segs(r[0].segs, {{0xA000'0100, 0xF00}, {0xB000'0000, 0x2000}, {0xC000'0000, 0x100}});
    expect_segs(r[1].segs, {{0xB000'1000, 0x10}});                 // inside page 2
    expect_segs(r[2].segs, {{0xA000'0FFF, 1}, {0xB000'0000, 1}});  // straddles pages 0/1
    expect_segs(r[3].segs, {{0xD000'0010, 4 * PAGE - 0x10}});      // all contiguous: one segment
    EXPECT_EQ(b.xl.get_stats().pages, 4u + 1u + 2u + 4u);
}

// A memory window checks its own key, PD, rights and range, and translates through the MR it
// is bound to (the MR's base VA and MTT).
TEST(Translation, MemoryWindowTranslatesThroughItsMr) {
    bench b;
    mpt_entry& mr = b.add_mr(2, 0x11, 3, ALL_RIGHTS | hsi::ACCESS_MW_BIND, 0x10000, 4 * PAGE, 0,
                             {0xA000'0000, 0xB000'0000, 0xC000'0000, 0xD000'0000});
    b.add_mw(5, 0x22, 3, hsi::ACCESS_REMOTE_READ, 2, 0x11800, 0x1000);
    std::vector<bench::result> r;
    run_thread([&] {
        const uint32_t mw = make_key(5, 0x22);
        r.push_back(b.translate(mw, 3, 0x11800, 0x1000, XLATE_REMOTE_READ, true));  // 0
        r.push_back(
            b.translate(mw, 3, 0x11000, 0x10, XLATE_REMOTE_READ, true));  // 1: in MR, not MW
        r.push_back(
            b.translate(mw, 3, 0x12000, 0x1000, XLATE_REMOTE_READ, true));         // 2: past MW end
        r.push_back(b.translate(mw, 3, 0x11800, 0x10, XLATE_REMOTE_WRITE, true));  // 3: MW right
        r.push_back(b.translate(mw, 4, 0x11800, 0x10, XLATE_REMOTE_READ, true));   // 4: PD
        r.push_back(
            b.translate(make_key(5, 0x23), 3, 0x11800, 0x10, XLATE_REMOTE_READ, true));  // 5
        mr.valid = false;  // the parent MR was invalidated
        r.push_back(b.translate(mw, 3, 0x11800, 0x10, XLATE_REMOTE_READ, true));  // 6
    });
    ASSERT_EQ(r.size(), 7u);
    EXPECT_EQ(r[0].status, xlate_status::OK);
    // Window offset 0x1800 into the MR: page 1 at 0x800, then page 2.
    expect_segs(r[0].segs, {{0xB000'0800, 0x800}, {0xC000'0000, 0x800}});
    EXPECT_EQ(r[1].status, xlate_status::BOUNDS);
    EXPECT_EQ(r[2].status, xlate_status::BOUNDS);
    EXPECT_EQ(r[3].status, xlate_status::ACCESS);
    EXPECT_EQ(r[4].status, xlate_status::PD_MISMATCH);
    EXPECT_EQ(r[5].status, xlate_status::BAD_KEY);
    EXPECT_EQ(r[6].status, xlate_status::BAD_KEY);
    EXPECT_TRUE(r[6].segs.empty());
}

// Latency: MPT lookup, then the first MTT read, then one page per cycle; faults and the
// privileged key cost the MPT lookup only. The unit starts one request per cycle.
TEST(Translation, LookupTiming) {
    bench b;  // mpt 2, mtt 2 cycles, 4 ns clock
    b.add_mr(1, 0, 1, ALL_RIGHTS, 0x10000, 8 * PAGE, 0,
             {0xA000'0000, 0xA100'0000, 0xA200'0000, 0xA300'0000, 0xA400'0000, 0xA500'0000,
              0xA600'0000, 0xA700'0000});
    const uint32_t k = make_key(1, 0);
    std::vector<bench::result> r;
    run_thread([&] {
        r.push_back(b.translate(k, 1, 0x10000, 64, XLATE_LOCAL_READ, false));        // 1 page
        r.push_back(b.translate(k, 1, 0x10000, 4 * PAGE, XLATE_LOCAL_READ, false));  // 4 pages
        r.push_back(b.translate(k, 1, 0x10000, 8 * PAGE, XLATE_LOCAL_READ, false));  // 8 pages
        r.push_back(b.translate(k, 9, 0x10000, 64, XLATE_LOCAL_READ, false));        // PD fault
        r.push_back(b.translate(hsi::PRIVILEGED_KEY, 0, 0x5000, 64, XLATE_LOCAL_READ, false));
        r.push_back(b.translate(k, 1, 0x10000, 0, XLATE_LOCAL_READ, false));  // 0 pages
        sc_core::wait(sc_time(1, SC_NS));                                     // off the grid
        r.push_back(b.translate(k, 1, 0x10000, 64, XLATE_LOCAL_READ, false));
    });
    ASSERT_EQ(r.size(), 7u);
    const uint64_t cycles[] = {4, 2 + 2 + 3, 2 + 2 + 7, 2, 2, 2};
    for (size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(r[i].end - r[i].start, b.clk.cycles(cycles[i])) << "request " << i;
    }
    // Called 1 ns after an edge: starts on the next edge.
    EXPECT_EQ(r[6].end, b.clk.edge_at_or_after(r[6].start) + b.clk.cycles(4));
    EXPECT_EQ(r[6].end.value() % 4000, 0u);
}

TEST(Translation, PipelineAcceptsOneRequestPerCycle) {
    translation_config cfg;
    cfg.mpt_lookup_cycles = 3;
    cfg.mtt_lookup_cycles = 5;
    bench b(cfg);
    b.add_mr(1, 0, 1, ALL_RIGHTS, 0x10000, 4 * PAGE, 0,
             {0xA000'0000, 0xA100'0000, 0xA200'0000, 0xA300'0000});
    std::vector<sc_time> end(4);
    for (int i = 0; i < 4; ++i) {
        sc_core::sc_spawn(
            [&b, &end, i] {
                std::vector<dma_segment> segs;
                EXPECT_EQ(
                    b.xl.translate(make_key(1, 0), 1, 0x10000, 64, XLATE_LOCAL_READ, false, segs),
                    xlate_status::OK);
                end[i] = sc_core::sc_time_stamp();
            },
            sc_core::sc_gen_unique_name("req"));
    }
    // A fifth caller arrives at cycle 2 with a 3-page request: the pipeline's next free slot is
    // cycle 4 (after the four requests of cycle 0..3).
    sc_time late_end;
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(b.clk.cycles(2));
            std::vector<dma_segment> segs;
            EXPECT_EQ(
                b.xl.translate(make_key(1, 0), 1, 0x10000, 3 * PAGE, XLATE_LOCAL_READ, false, segs),
                xlate_status::OK);
            late_end = sc_core::sc_time_stamp();
        },
        "late");
    sc_core::sc_start();
    // All four asked at t = 0: they start on cycles 0, 1, 2, 3 and each takes 3 + 5 cycles.
    std::vector<sc_time> sorted = end;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(sorted[i], b.clk.cycles(i + 8)) << i;
    }
    EXPECT_EQ(late_end, b.clk.cycles(4 + 3 + 5 + 2));
    EXPECT_EQ(b.xl.get_stats().lookups, 5u);
    EXPECT_EQ(b.xl.get_stats().pages, 4u + 3u);
}

}  // namespace
