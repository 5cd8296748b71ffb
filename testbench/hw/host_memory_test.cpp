// SPDX-License-Identifier: Apache-2.0
// Host memory: sparse pages, cross-page CPU accesses, external (caller-owned) page backing,
// the TLM DMA target (latency, stats, debug transport) and the DMA-write event pollers wait on.
#include "tlm/host_memory/host_memory.h"

#include <array>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include <gtest/gtest.h>

namespace {

using rnic::fabric::host_memory;
using sc_core::SC_NS;
using sc_core::sc_time;

constexpr uint64_t PAGE = host_memory::PAGE_BYTES;

// A DMA master in front of the memory: plain blocking transport, as the PCIe link does.
struct dma_master : sc_core::sc_module {
    tlm_utils::simple_initiator_socket<dma_master> out{"out"};
    explicit dma_master(sc_core::sc_module_name n)
        : sc_module(n) {}

    sc_time access(tlm::tlm_command cmd, uint64_t addr, void* data, unsigned len,
                   sc_time delay = sc_core::SC_ZERO_TIME,
                   tlm::tlm_response_status* status = nullptr) {
        tlm::tlm_generic_payload gp;
        gp.set_command(cmd);
        gp.set_address(addr);
        gp.set_data_ptr(static_cast<unsigned char*>(data));
        gp.set_data_length(len);
        gp.set_streaming_width(len);
        gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        out->b_transport(gp, delay);
        if (status != nullptr) {
            *status = gp.get_response_status();
        }
        return delay;
    }
    unsigned debug(tlm::tlm_command cmd, uint64_t addr, void* data, unsigned len) {
        tlm::tlm_generic_payload gp;
        gp.set_command(cmd);
        gp.set_address(addr);
        gp.set_data_ptr(static_cast<unsigned char*>(data));
        gp.set_data_length(len);
        return out->transport_dbg(gp);
    }
};

struct bench {
    host_memory mem{"mem", sc_time(80, SC_NS)};
    dma_master dma{"dma"};
    bench() { dma.out.bind(mem.dma_in); }
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = static_cast<uint8_t>(seed + i * 7);
    }
    return v;
}

TEST(HostMemory, UntouchedMemoryReadsZeroAndCostsNoPages) {
    host_memory mem("mem", sc_time(80, SC_NS));
    EXPECT_EQ(mem.pages_touched(), 0u);
    std::vector<uint8_t> buf(3 * PAGE, 0xAA);
    mem.read(0xFFFF'FFFF'FFFF'0000ull, buf.data(), buf.size() / 2);  // top of the 64-bit space
    mem.read(0x1234'5678'9000ull, buf.data() + buf.size() / 2, buf.size() / 2);
    for (uint8_t b : buf) {
        ASSERT_EQ(b, 0);
    }
    EXPECT_EQ(mem.load<uint64_t>(0x7000'0000'0000ull), 0u);
    EXPECT_EQ(mem.pages_touched(), 0u);  // reads never allocate

    mem.store<uint32_t>(0x10, 0xDEADBEEF);
    EXPECT_EQ(mem.pages_touched(), 1u);
    mem.store<uint32_t>(0x20, 0x1);  // same page
    EXPECT_EQ(mem.pages_touched(), 1u);
    mem.store<uint64_t>(0xFFFF'FFFF'FFFF'FFF8ull, 0x0102030405060708ull);  // last page
    EXPECT_EQ(mem.pages_touched(), 2u);
    mem.fill(0x5000'0000, 0x5A, 10);
    EXPECT_EQ(mem.pages_touched(), 3u);
    EXPECT_EQ(mem.load<uint32_t>(0x10), 0xDEADBEEFu);
    EXPECT_EQ(mem.load<uint64_t>(0xFFFF'FFFF'FFFF'FFF8ull), 0x0102030405060708ull);
    EXPECT_EQ(mem.load<uint8_t>(0x5000'0009), 0x5A);
    EXPECT_EQ(mem.load<uint8_t>(0x5000'000A), 0);  // just past the fill
    EXPECT_EQ(mem.load<uint32_t>(0x14), 0u);       // rest of a touched page is zero
}

TEST(HostMemory, CrossPageAccesses) {
    host_memory mem("mem", sc_time(80, SC_NS));
    // 100 bytes straddling the boundary between pages 0 and 1.
    const auto a = pattern(100, 3);
    mem.write(PAGE - 50, a.data(), a.size());
    EXPECT_EQ(mem.pages_touched(), 2u);
    std::vector<uint8_t> back(a.size());
    mem.read(PAGE - 50, back.data(), back.size());
    EXPECT_EQ(back, a);

    // A write spanning three pages touches all three; a read spanning a touched, an untouched
    // and a touched page returns zeros for the untouched one.
    const auto big = pattern(2 * PAGE + 2, 11);
    mem.write(10 * PAGE - 1, big.data(), big.size());
    EXPECT_EQ(mem.pages_touched(), 2u + 4u);  // pages 9, 10, 11, 12
    std::vector<uint8_t> back2(big.size());
    mem.read(10 * PAGE - 1, back2.data(), back2.size());
    EXPECT_EQ(back2, big);

    mem.store<uint8_t>(20 * PAGE + PAGE - 1, 0x11);
    mem.store<uint8_t>(22 * PAGE, 0x22);
    std::vector<uint8_t> span(PAGE + 2, 0xFF);
    mem.read(20 * PAGE + PAGE - 1, span.data(), span.size());
    EXPECT_EQ(span.front(), 0x11);
    EXPECT_EQ(span.back(), 0x22);
    for (size_t i = 1; i + 1 < span.size(); ++i) {
        ASSERT_EQ(span[i], 0) << i;
    }

    // fill across a boundary.
    mem.fill(30 * PAGE - 3, 0xC3, 6);
    EXPECT_EQ(mem.load<uint8_t>(30 * PAGE - 4), 0);
    EXPECT_EQ(mem.load<uint8_t>(30 * PAGE - 3), 0xC3);
    EXPECT_EQ(mem.load<uint8_t>(30 * PAGE + 2), 0xC3);
    EXPECT_EQ(mem.load<uint8_t>(30 * PAGE + 3), 0);
}

TEST(HostMemory, ExternalBackingIsTheSameBytesForCpuAndDma) {
    bench b;
    host_memory& mem = b.mem;
    // Page 5 has content before it is mapped: mapping copies it into the caller's buffer.
    const auto before = pattern(PAGE, 1);
    mem.write(5 * PAGE, before.data(), before.size());
    EXPECT_EQ(mem.pages_touched(), 1u);
    alignas(64) static std::array<uint8_t, PAGE> backing5;
    backing5.fill(0xEE);
    mem.map_external(5, backing5.data());
    EXPECT_EQ(std::memcmp(backing5.data(), before.data(), PAGE), 0);
    EXPECT_EQ(mem.pages_touched(), 1u);

    // Page 7 was never touched: its bytes are whatever the caller's buffer holds.
    alignas(64) static std::array<uint8_t, PAGE> backing7;
    std::iota(backing7.begin(), backing7.end(), uint8_t{0});
    mem.map_external(7, backing7.data());
    EXPECT_EQ(mem.pages_touched(), 2u);
    EXPECT_EQ(mem.load<uint8_t>(7 * PAGE + 200), 200);

    std::vector<uint8_t> dma_seen(16);
    uint64_t cpu_seen = 0;
    sc_core::sc_spawn(
        [&] {
            // CPU store through the raw pointer, DMA read sees it.
            backing5[100] = 0x42;
            b.dma.access(tlm::TLM_READ_COMMAND, 5 * PAGE + 96, dma_seen.data(), 16);
            // DMA write lands in the caller's buffer (and the model's CPU view).
            const uint64_t v = 0x1122334455667788ull;
            uint64_t w = v;
            b.dma.access(tlm::TLM_WRITE_COMMAND, 7 * PAGE + 8, &w, 8);
            std::memcpy(&cpu_seen, backing7.data() + 8, 8);
            // A DMA write across the boundary of the two external pages' neighbours.
            std::vector<uint8_t> x(8, 0x99);
            b.dma.access(tlm::TLM_WRITE_COMMAND, 6 * PAGE - 4, x.data(), 8);
        },
        "cpu");
    sc_core::sc_start();
    EXPECT_EQ(dma_seen[4], 0x42);
    EXPECT_EQ(dma_seen[0], before[96]);
    EXPECT_EQ(cpu_seen, 0x1122334455667788ull);
    EXPECT_EQ(mem.load<uint64_t>(7 * PAGE + 8), 0x1122334455667788ull);
    EXPECT_EQ(backing5[PAGE - 1], 0x99);  // the last 4 bytes of page 5 are the external buffer
    EXPECT_EQ(mem.load<uint32_t>(6 * PAGE), 0x99999999u);  // page 6 is model-owned
    EXPECT_EQ(mem.pages_touched(), 3u);

    // Unmapped: the page no longer has the caller's bytes (and reads as untouched DRAM).
    mem.unmap_external(7);
    EXPECT_EQ(mem.load<uint64_t>(7 * PAGE + 8), 0u);
    EXPECT_EQ(mem.pages_touched(), 2u);
    EXPECT_EQ(backing7[8], 0x88);  // the caller's buffer is left alone
}

TEST(HostMemory, DmaTransportAddsLatencyAndCounts) {
    bench b;
    b.mem.fill(0x1000, 0x5A, 64);
    std::vector<sc_time> delays;
    std::vector<tlm::tlm_response_status> status(3);
    std::vector<uint8_t> rd(64);
    unsigned dbg_len = 0;
    std::vector<uint8_t> dbg(32);
    sc_core::sc_spawn(
        [&] {
            delays.push_back(b.dma.access(tlm::TLM_READ_COMMAND, 0x1000, rd.data(), 64,
                                          sc_core::SC_ZERO_TIME, &status[0]));
            std::vector<uint8_t> w(100, 0x77);
            // The caller's annotated delay is kept and the DRAM latency is added.
            delays.push_back(b.dma.access(tlm::TLM_WRITE_COMMAND, 0x2000, w.data(), 100,
                                          sc_time(10, SC_NS), &status[1]));
            // The PCIe model asks for the latency with an ignore command: latency, no stats.
            uint8_t dummy = 0;
            delays.push_back(b.dma.access(tlm::TLM_IGNORE_COMMAND, 0, &dummy, 0,
                                          sc_core::SC_ZERO_TIME, &status[2]));
            // Debug transport: no time, no stats.
            dbg_len = b.dma.debug(tlm::TLM_READ_COMMAND, 0x2000, dbg.data(), 32);
            std::vector<uint8_t> z(4, 0x33);
            b.dma.debug(tlm::TLM_WRITE_COMMAND, 0x3000, z.data(), 4);
        },
        "cpu");
    sc_core::sc_start();
    ASSERT_EQ(delays.size(), 3u);
    EXPECT_EQ(delays[0], sc_time(80, SC_NS));
    EXPECT_EQ(delays[1], sc_time(90, SC_NS));
    EXPECT_EQ(delays[2], sc_time(80, SC_NS));
    EXPECT_EQ(b.mem.latency(), sc_time(80, SC_NS));
    for (auto s : status) {
        EXPECT_EQ(s, tlm::TLM_OK_RESPONSE);
    }
    for (uint8_t x : rd) {
        ASSERT_EQ(x, 0x5A);
    }
    EXPECT_EQ(dbg_len, 32u);
    EXPECT_EQ(dbg[31], 0x77);
    EXPECT_EQ(b.mem.load<uint32_t>(0x3000), 0x33333333u);
    const auto& st = b.mem.get_stats();
    EXPECT_EQ(st.dma_reads, 1u);
    EXPECT_EQ(st.dma_read_bytes, 64u);
    EXPECT_EQ(st.dma_writes, 1u);
    EXPECT_EQ(st.dma_write_bytes, 100u);
}

TEST(HostMemory, DmaWriteEventWakesPollers) {
    bench b;
    std::vector<sc_time> woke;
    std::vector<uint32_t> seen;
    sc_core::sc_spawn(
        [&] {
            // A CPU poller spinning on a cache line: sleeps on the event, checks the line.
            for (;;) {
                sc_core::wait(b.mem.dma_write_event());
                woke.push_back(sc_core::sc_time_stamp());
                seen.push_back(b.mem.load<uint32_t>(0x40));
            }
        },
        "poller");
    sc_core::sc_spawn(
        [&] {
            sc_core::wait(sc_time(5, SC_NS));
            b.mem.store<uint32_t>(0x40, 1);  // a CPU store is not a DMA write: no event
            sc_core::wait(sc_time(5, SC_NS));
            uint32_t v = 2;
            b.dma.access(tlm::TLM_WRITE_COMMAND, 0x40, &v, 4);  // at 10 ns
            sc_core::wait(sc_time(20, SC_NS));
            v = 3;
            b.dma.access(tlm::TLM_WRITE_COMMAND, 0x40, &v, 4);  // at 30 ns
            sc_core::wait(sc_time(20, SC_NS));
            b.dma.access(tlm::TLM_READ_COMMAND, 0x40, &v, 4);  // reads do not notify
        },
        "writer");
    sc_core::sc_start();
    ASSERT_EQ(woke.size(), 2u);
    EXPECT_EQ(woke[0], sc_time(10, SC_NS));  // delta-notified at the time of the write
    EXPECT_EQ(woke[1], sc_time(30, SC_NS));
    EXPECT_EQ(seen[0], 2u);
    EXPECT_EQ(seen[1], 3u);
}

// Released pages are not backed: a DMA touching one fails with Unsupported Request
// (TLM_ADDRESS_ERROR_RESPONSE) and moves nothing (a read gets zeros, a write is dropped); the
// latency is charged the same. A CPU write or map_external backs the page again; untouched pages
// keep reading as zero (sparse DRAM, not an error).
TEST(HostMemory, ReleasedPagesFailDmaUntilBackedAgain) {
    bench b;
    b.mem.fill(0x4000, 0x11, 2 * PAGE);
    b.mem.release(0x5000, 1);  // the second page only
    std::vector<tlm::tlm_response_status> st(6);
    std::vector<sc_time> d;
    std::vector<uint8_t> rd(64, 0xEE);
    std::vector<uint8_t> other(8, 0xEE);
    std::array<uint8_t, PAGE> backing{};
    sc_core::sc_spawn(
        [&] {
            std::vector<uint8_t> w(32, 0x99);
            // Crossing from the backed page into the released one: the whole request fails.
            d.push_back(b.dma.access(tlm::TLM_READ_COMMAND, 0x5000 - 32, rd.data(), 64,
                                     sc_core::SC_ZERO_TIME, &st[0]));
            d.push_back(b.dma.access(tlm::TLM_WRITE_COMMAND, 0x4FF0, w.data(), 32,
                                     sc_core::SC_ZERO_TIME, &st[1]));
            b.dma.access(tlm::TLM_READ_COMMAND, 0x9000, other.data(), 8, sc_core::SC_ZERO_TIME,
                         &st[2]);                   // never touched: zeros, OK
            b.mem.store<uint32_t>(0x5100, 0xABCD);  // the CPU backs it again
            b.dma.access(tlm::TLM_READ_COMMAND, 0x5100, rd.data(), 4, sc_core::SC_ZERO_TIME,
                         &st[3]);
            b.mem.unmap_external(0x6);  // an OS page taken back
            b.dma.access(tlm::TLM_WRITE_COMMAND, 0x6000, w.data(), 4, sc_core::SC_ZERO_TIME,
                         &st[4]);
            b.mem.map_external(0x6, backing.data());
            b.dma.access(tlm::TLM_WRITE_COMMAND, 0x6000, w.data(), 4, sc_core::SC_ZERO_TIME,
                         &st[5]);
        },
        "cpu");
    sc_core::sc_start();
    EXPECT_EQ(st[0], tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(st[1], tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(st[2], tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(st[3], tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(st[4], tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(st[5], tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(d[0], sc_time(80, SC_NS));
    EXPECT_EQ(d[1], sc_time(80, SC_NS));
    EXPECT_EQ(rd[0], 0xCD);
    EXPECT_EQ(other[0], 0);
    EXPECT_EQ(b.mem.load<uint8_t>(0x4FF0), 0x11);  // the failed write left the backed page
    EXPECT_EQ(backing[0], 0x99);
    EXPECT_TRUE(b.mem.backed(0x5));
    EXPECT_TRUE(b.mem.backed(0x6));
    EXPECT_EQ(b.mem.get_stats().dma_errors, 3u);
    EXPECT_EQ(b.mem.get_stats().dma_reads, 2u);  // failed accesses are not counted as served
}

}  // namespace
