// SPDX-License-Identifier: Apache-2.0
// host_system's kernel memory: reproducible addresses and bounded kernel map entries.
//
// Linux caps a process's memory mappings at vm.max_map_count (65,530 by default), a tunable a
// user often cannot change on a cluster. A thousand simulated hosts, each allocating rings,
// CQs and buffers, must not need a mapping per allocation: the count of /proc/self/maps lines
// may grow by a few per host, never by one per allocation.
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hw/common/sim_context.h"
#include "ndk_shim/host/host_system.h"
#include "tlm/host_memory/host_memory.h"
#include "tlm/pcie/pcie_link.h"

namespace {
using namespace rnic;

size_t process_mappings() {
    std::ifstream maps("/proc/self/maps");
    size_t n = 0;
    for (std::string line; std::getline(maps, line);) {
        ++n;
    }
    return n;
}

struct host_bench {
    hw::sim_context ctx;
    fabric::host_memory mem{"mem", sc_core::sc_time(90, sc_core::SC_NS)};
    fabric::pcie_link pcie{"pcie", fabric::pcie_config{}, "", ctx};
    std::unique_ptr<ndk::host_system> host;
    explicit host_bench(const ndk::host_config& cfg) {
        host = std::make_unique<ndk::host_system>("host", cfg, mem, pcie, ctx);
        pcie.mem_out.bind(mem.dma_in);
    }
};

TEST(HostAlloc, ManyAllocationsTakeFewMappings) {
    ndk::host_config cfg;
    cfg.va_region = 3;
    host_bench b(cfg);
    const size_t before = process_mappings();
    std::vector<void*> blocks;
    for (int i = 0; i < 2000; ++i) {
        blocks.push_back(b.host->alloc(4096 * (1 + i % 3), i % 2 == 0));
        ASSERT_NE(blocks.back(), nullptr);
    }
    for (size_t i = 0; i < blocks.size(); i += 2) {
        b.host->free(blocks[i]);  // frees in the middle must not split the region either
    }
    EXPECT_LE(process_mappings(), before + 8) << "2000 allocations, one host";
}

TEST(HostAlloc, AddressesFollowTheRegionAndAreZeroed) {
    ndk::host_config cfg;
    cfg.va_region = 5;
    host_bench b(cfg);
    constexpr uint64_t region = (uint64_t{0x4000} << 32) + 5 * (uint64_t{16} << 30);
    auto* a = static_cast<uint8_t*>(b.host->alloc(100));
    auto* c = static_cast<uint8_t*>(b.host->alloc(3 * 4096));
    auto* d = static_cast<uint8_t*>(b.host->alloc(1));
    // In allocation order, whole pages, one unused page apart (README of ndk_shim/host).
    EXPECT_EQ(reinterpret_cast<uint64_t>(a), region);
    EXPECT_EQ(reinterpret_cast<uint64_t>(c), region + 2 * 4096);
    EXPECT_EQ(reinterpret_cast<uint64_t>(d), region + 6 * 4096);
    c[0] = 0xAB;
    c[3 * 4096 - 1] = 0xCD;
    b.host->free(c);
    auto* e = static_cast<uint8_t*>(b.host->alloc(3 * 4096));
    EXPECT_EQ(reinterpret_cast<uint64_t>(e), region + 8 * 4096) << "addresses are not reused";
    for (size_t i = 0; i < 3 * 4096; ++i) {
        ASSERT_EQ(e[i], 0) << "byte " << i;
    }
    // The bytes a host writes are what the NIC reads at the physical address.
    e[10] = 0x5A;
    uint8_t seen = 0;
    b.mem.read(b.host->phys(e + 10), &seen, 1);
    EXPECT_EQ(seen, 0x5A);
}
}  // namespace
