// SPDX-License-Identifier: Apache-2.0
// NetDMA end to end: the NetDMA provider driver (ndk_shim/netdma) on a real node (host, PCIe,
// the whole NIC with its hw/netdma copy channels). Descriptor chains live in host memory, the
// NIC fetches them by DMA and copies real bytes; every copy is checked byte for byte.
#include "hw/netdma/netdma.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "hw/hsi/hsi.h"
#include "ndk_shim/netdma/netdma_framework.h"
#include "ndk_shim/netdma/netdma_provider.h"
#include "testbench/scenario/node.h"
#include "testbench/scenario/scenario_config.h"

namespace rnic::ndk::netdma {
namespace {

using nlohmann::json;
constexpr uint64_t KIB = 1024;
constexpr uint64_t MIB = 1024 * KIB;

// One node (host + PCIe + NIC); the link's far side stays unattached (no frames are sent).
// Benches are never deleted (as in scenario::run): SystemC keeps their processes, some still
// suspended, until the process exits.
struct bench {
    hw::sim_context ctx;
    scenario::scenario_config cfg;
    fabric::eth_link link;
    scenario::node node;
    host_system& host;
    explicit bench(const json& netdma = json::object(), const std::string& name = "node")
        : cfg(scenario::parse_scenario({{"rnic", {{"netdma", netdma}}}}))
        , link((name + "_link").c_str(), cfg.topology.link, ctx)
        , node(name.c_str(), 0, cfg, link, ctx)
        , host(node.host) {}

    // A counter of the NIC's NetDMA block.
    uint64_t stat(const std::string& counter) const {
        const std::string block = std::string(node.name()) + ".nic.netdma";
        for (const auto& e : ctx.stats.entries()) {
            if (e.block == block && e.name == counter) {
                return e.value().get<uint64_t>();
            }
        }
        ADD_FAILURE() << "no stat " << block << "." << counter;
        return 0;
    }
    uint64_t reg(uint32_t ch, uint64_t r) {
        return host.mmio_read64(hsi::netdma_channel_reg(ch, r));
    }
};

// Runs `body` in an SC_THREAD, then stops the simulation.
void run(std::function<void()> body) {
    sc_core::sc_spawn([body] {
        body();
        sc_core::sc_stop();
    });
    sc_core::sc_start();
}

void wait_ns(double ns) {
    sc_core::wait(sc_core::sc_time(ns, sc_core::SC_NS));
}

void fill_pattern(uint8_t* p, size_t n, uint64_t seed) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = static_cast<uint8_t>(x >> 24);
    }
}

bool all_zero(const uint8_t* p, size_t n) {
    return std::all_of(p, p + n, [](uint8_t b) { return b == 0; });
}

// The provider on a started node, NetDMA's record of it, and a helper to get channels.
struct driver {
    bench& b;
    provider* prov = nullptr;
    provider_record* rec = nullptr;
    explicit driver(bench& bb)
        : b(bb) {}
    void up() {
        ASSERT_EQ(add_and_start_provider(b.host, provider_params{}, &prov), STATUS_SUCCESS);
        for (provider_record* r : providers()) {
            if (r->context == prov) {
                rec = r;
            }
        }
        ASSERT_NE(rec, nullptr);
    }
    channel* open(ULONG mask = 0, ULONG priority = 0, completion_callback cb = nullptr) {
        channel_request r;
        r.processor_mask = mask;
        r.priority = priority;
        r.on_completion = std::move(cb);
        channel* c = nullptr;
        EXPECT_EQ(allocate_channel(b.host, rec, r, &c), STATUS_SUCCESS);
        return c;
    }
    uint32_t hw(channel* c) const { return get_channel_info(c->provider_channel()).index; }
};

// Descriptors in one contiguous array: slot i at pa(i). Chains are runs of slots.
struct ring {
    host_system& host;
    NET_DMA_DESCRIPTOR* d;
    size_t n;
    ring(host_system& h, size_t slots)
        : host(h)
        , d(static_cast<NET_DMA_DESCRIPTOR*>(h.alloc(slots * sizeof(NET_DMA_DESCRIPTOR), true)))
        , n(slots) {}
    uint64_t pa(size_t i) const { return host.phys(&d[i]); }
    void set(size_t i, uint64_t src, uint64_t dst, ULONG size, ULONG flags) {
        d[i] = NET_DMA_DESCRIPTOR{};
        d[i].TransferSize = size;
        d[i].ControlFlags = flags;
        d[i].SourceAddress.QuadPart = static_cast<LONGLONG>(src);
        d[i].DestinationAddress.QuadPart = static_cast<LONGLONG>(dst);
        d[i].UserContext1 = i;
    }
    // Links slots [first, last]: NetDMA 2.0 (`count_mode`) points the tail at the next slot,
    // 1.x ends the list with NULL.
    void link(size_t first, size_t last, bool count_mode) {
        for (size_t i = first; i < last; ++i) {
            d[i].NextDescriptor.QuadPart = static_cast<LONGLONG>(pa(i + 1));
        }
        d[last].NextDescriptor.QuadPart = count_mode ? static_cast<LONGLONG>(pa(last + 1)) : 0;
    }
};

// Source and destination areas: `len` bytes each, source patterned, destination zero.
struct areas {
    host_system& host;
    uint8_t* src;
    uint8_t* dst;
    size_t len;
    areas(host_system& h, size_t bytes, bool contiguous, uint64_t seed)
        : host(h)
        , src(static_cast<uint8_t*>(h.alloc(bytes, contiguous)))
        , dst(static_cast<uint8_t*>(h.alloc(bytes, contiguous)))
        , len(bytes) {
        fill_pattern(src, bytes, seed);
    }
    uint64_t src_pa(size_t off) const { return host.phys(src + off); }
    uint64_t dst_pa(size_t off) const { return host.phys(dst + off); }
    bool copied(size_t off, size_t bytes) const {
        return std::memcmp(src + off, dst + off, bytes) == 0;
    }
    bool untouched(size_t off, size_t bytes) const { return all_zero(dst + off, bytes); }
};

// NetDMA's completion word is client memory: clear it so a repeated value is a new one.
void clear_word(channel* c) {
    *static_cast<volatile ULONG64*>(c->parameters().CompletionVirtualAddress) = 0;
}

// Equal-sized descriptors [first, first+count) copying consecutive `size`-byte blocks.
void blocks(ring& r, areas& a, size_t first, size_t count, ULONG size, ULONG flags = 0) {
    for (size_t i = first; i < first + count; ++i) {
        r.set(i, a.src_pa(i * size), a.dst_pa(i * size), size, flags);
    }
}

// ---------------------------------------------------------------------------------------------
TEST(NetDma, RegistersWithAffinityAndAttributes) {
    bench& b = *new bench(json{{"channels", 6}});
    run([&] {
        driver drv(b);
        drv.up();
        provider_record* rec = drv.rec;
        EXPECT_EQ(providers().size(), 1u);
        EXPECT_EQ(rec->chars.MajorVersion, NET_DMA_PROVIDER_REVISION_2);
        EXPECT_EQ(rec->chars.Size, sizeof(NET_DMA_PROVIDER_CHARACTERISTICS));
        EXPECT_EQ(rec->chars.MaxDmaChannelCount, 6u);
        EXPECT_NE(rec->chars.SuspendDma, nullptr);
        EXPECT_GT(rec->chars.FriendlyName.Length, 0);
        EXPECT_TRUE(rec->started);
        EXPECT_EQ(rec->attributes.DmaChannelCount, 6u);
        EXPECT_EQ(rec->attributes.MaximumTransferSize, 1u << 20);
        EXPECT_EQ(rec->attributes.MaximumAddressSpace.QuadPart, (1ll << 48) - 1);
        EXPECT_EQ(rec->attributes.VendorId, 0x15b3u);
        EXPECT_EQ(NetDmaGetVersion(), 0x00020000u);
        // NetDMA spread the channels over its 4 CPUs; each vector's MSI address names the CPU.
        ASSERT_EQ(rec->affinity.size(), 6u);
        for (uint32_t i = 0; i < 6; ++i) {
            EXPECT_EQ(rec->affinity[i].CpuNumber, i % 4);
            const uint64_t entry = hsi::REG_MSIX_TABLE + 16ull * (1 + i);
            EXPECT_EQ((b.host.mmio_read64(entry) >> 12) & 0xff, i % 4);
            EXPECT_EQ(b.host.mmio_read64(entry + 8), (1ull << 32) | (1 + i));  // data, masked
        }
        // Revision 2 (group affinity): CPU 2 -> hardware channel 2 (vector 3).
        channel* c2 = drv.open(1u << 2, 7);
        ASSERT_NE(c2, nullptr);
        EXPECT_EQ(c2->cpu(), 2u);
        EXPECT_EQ(drv.hw(c2), 2u);
        EXPECT_EQ(get_channel_info(c2->provider_channel()).vector, 3u);
        EXPECT_EQ(b.reg(2, hsi::NETDMA_CHAN_CONTROL), hsi::netdma_control(true, 3, 7));
        EXPECT_EQ(b.reg(2, hsi::NETDMA_CHAN_COMPLETION),
                  static_cast<uint64_t>(c2->parameters().CompletionPhysicalAddress.QuadPart));
        EXPECT_EQ(b.host.mmio_read64(hsi::REG_MSIX_TABLE + 16 * 3 + 8) >> 32, 0u);  // unmasked
        EXPECT_EQ(b.reg(2, hsi::NETDMA_CHAN_STATUS), hsi::NETDMA_STATUS_HALTED);    // just reset
        // Revision 1 (ProcessorAffinityMask): CPU 2 again. Its only channel is taken (CPUs of
        // channels 0..5: 0,1,2,3,0,1), so any free channel, and CpuNumber says which CPU.
        channel_request r1;
        r1.revision = NET_DMA_CHANNEL_REVISION_1;
        r1.processor_mask = 1u << 2;
        channel* any = nullptr;
        ASSERT_EQ(allocate_channel(b.host, rec, r1, &any), STATUS_SUCCESS);
        EXPECT_EQ(any->parameters().Size, SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_1);
        EXPECT_NE(drv.hw(any), 2u);
        EXPECT_EQ(any->cpu(), get_channel_info(any->provider_channel()).cpu);
        r1.processor_mask = 1u << 1;
        channel* c1 = nullptr;
        ASSERT_EQ(allocate_channel(b.host, rec, r1, &c1), STATUS_SUCCESS);
        EXPECT_EQ(c1->cpu(), 1u);
        std::vector<channel*> rest;
        for (int i = 0; i < 3; ++i) {
            rest.push_back(drv.open());
        }
        channel* none = nullptr;
        EXPECT_EQ(allocate_channel(b.host, rec, channel_request{}, &none),
                  STATUS_INSUFFICIENT_RESOURCES);
        EXPECT_EQ(rec->channels.size(), 6u);
        const uint32_t freed_vector = get_channel_info(rest.back()->provider_channel()).vector;
        free_channel(rest.back());
        EXPECT_EQ(b.host.mmio_read64(hsi::REG_MSIX_TABLE + 16ull * freed_vector + 8) >> 32, 1u);
        rest.pop_back();
        rest.push_back(drv.open());
        ASSERT_NE(rest.back(), nullptr);
        // Bad parameters straight to the provider's handler.
        NET_DMA_CHANNEL_PARAMETERS bad{};
        bad.Revision = 9;
        bad.Size = sizeof(bad);
        PVOID ctx = nullptr;
        EXPECT_EQ(rec->chars.AllocateDmaChannel(rec->context, &bad, nullptr, &ctx),
                  STATUS_UNSUCCESSFUL);
        bad.Revision = NET_DMA_CHANNEL_REVISION_2;
        bad.Size = SIZEOF_NET_DMA_CHANNEL_PARAMETERS_REVISION_1;  // too short for revision 2
        EXPECT_EQ(rec->chars.AllocateDmaChannel(rec->context, &bad, nullptr, &ctx),
                  STATUS_UNSUCCESSFUL);
        bad.Size = sizeof(bad);
        bad.CompletionPhysicalAddress.QuadPart = 0x1004;  // not 8 B aligned
        EXPECT_EQ(rec->chars.AllocateDmaChannel(rec->context, &bad, nullptr, &ctx),
                  STATUS_UNSUCCESSFUL);
        // NetDMA refuses incomplete characteristics (Suspend without Resume).
        NET_DMA_PROVIDER_CHARACTERISTICS chars = rec->chars;
        chars.ResumeDma = nullptr;
        PVOID h = nullptr;
        // Only the documented statuses (SUCCESS, RESOURCES, UNSUCCESSFUL) come back.
        EXPECT_EQ(NetDmaRegisterProvider(nullptr, &h, &chars), STATUS_UNSUCCESSFUL);
        chars = rec->chars;
        chars.Size = 8;
        EXPECT_EQ(NetDmaRegisterProvider(nullptr, &h, &chars), STATUS_UNSUCCESSFUL);
        chars = rec->chars;
        EXPECT_EQ(NetDmaRegisterProvider(nullptr, nullptr, &chars), STATUS_UNSUCCESSFUL);
        EXPECT_EQ(NetDmaRegisterProvider(nullptr, &h, nullptr), STATUS_UNSUCCESSFUL);
        // The affinity handler's refusal: RESOURCES passes through, anything else is UNSUCCESSFUL.
        chars.SetDmaChannelCpuAffinity = [](PVOID, PNET_DMA_CHANNEL_CPU_AFFINITY, ULONG) {
            return STATUS_INSUFFICIENT_RESOURCES;
        };
        EXPECT_EQ(NetDmaRegisterProvider(nullptr, &h, &chars), STATUS_INSUFFICIENT_RESOURCES);
        chars.SetDmaChannelCpuAffinity = [](PVOID, PNET_DMA_CHANNEL_CPU_AFFINITY, ULONG) {
            return STATUS_INVALID_DEVICE_STATE;
        };
        EXPECT_EQ(NetDmaRegisterProvider(nullptr, &h, &chars), STATUS_UNSUCCESSFUL);
        EXPECT_EQ(providers().size(), 1u);
        // Power events reach NetDMA.
        notify_power(drv.prov, false);
        notify_power(drv.prov, true);
        ASSERT_EQ(rec->pnp_events.size(), 2u);
        EXPECT_EQ(rec->pnp_events[0], NetDmaNotificationProviderPowerDown);
        EXPECT_EQ(rec->pnp_events[1], NetDmaNotificationProviderPowerUp);
        // Remove: NetDMA stops the provider (frees every channel) and forgets it.
        const provider_counters before = get_provider_counters(drv.prov);
        EXPECT_EQ(before.allocations, 7u);
        remove_provider(drv.prov);
        EXPECT_TRUE(providers().empty());
        for (uint32_t i = 0; i < 6; ++i) {
            EXPECT_EQ(b.reg(i, hsi::NETDMA_CHAN_CONTROL), 0u);
            EXPECT_EQ(b.host.mmio_read64(hsi::REG_MSIX_TABLE + 16ull * (1 + i) + 8) >> 32, 1u);
        }
    });
}

TEST(NetDma, NoChannelsMeansNoProvider) {
    bench& b = *new bench(json{{"channels", 0}});
    run([&] {
        provider* p = nullptr;
        EXPECT_EQ(b.host.mmio_read64(hsi::REG_NETDMA_CAPS) & 0xff, 0u);
        EXPECT_EQ(add_and_start_provider(b.host, provider_params{}, &p), STATUS_NOT_SUPPORTED);
        EXPECT_TRUE(providers().empty());
    });
}

TEST(NetDma, ConfigRejectsBadValuesWithPaths) {
    auto errors = [](const json& netdma) {
        try {
            scenario::parse_scenario({{"rnic", {{"netdma", netdma}}}});
        } catch (const config::config_error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(errors({{"chunk_bytes", 3000}}).find("rnic.netdma.chunk_bytes"), std::string::npos);
    EXPECT_NE(errors({{"channels", 33}}).find("rnic.netdma.channels"), std::string::npos);
    EXPECT_NE(errors({{"max_transfer_bytes", 100}}).find("rnic.netdma.max_transfer_bytes"),
              std::string::npos);
    EXPECT_NE(errors({{"buffers", 0}}).find("rnic.netdma.buffers"), std::string::npos);
    EXPECT_NE(errors({{"bogus", 1}}).find("rnic.netdma.bogus"), std::string::npos);
    EXPECT_EQ(errors({{"channels", 8}, {"chunk_bytes", 512}}), "");
    const auto eff = scenario::parse_scenario(json::object()).effective;
    EXPECT_EQ(eff["rnic"]["netdma"]["channels"], 4);
    EXPECT_EQ(eff["rnic"]["netdma"]["address_bits"], 48);
}

// ---------------------------------------------------------------------------------------------
// Sizes from 1 B to 1 MiB in one NetDMA 2.0 chain, at odd source/destination offsets.
TEST(NetDma, CopiesOneByteToOneMiBInAChain) {
    bench& b = *new bench();
    run([&] {
        driver drv(b);
        drv.up();
        std::vector<std::pair<uint64_t, uint64_t>> seen;  // (descriptor, word) per DPC
        channel* c = drv.open(0, 0, [&](PHYSICAL_ADDRESS d, ULONG64 w) {
            seen.emplace_back(static_cast<uint64_t>(d.QuadPart), w);
        });
        const std::vector<ULONG> sizes = {1,    2,    7,    63,    64,    65,     511,
                                          4095, 4096, 4097, 12345, 65536, 262143, 1u << 20};
        size_t total = 0;
        std::vector<size_t> offs, doffs;  // misaligned, different on each side, with gaps
        for (size_t i = 0; i < sizes.size(); ++i) {
            offs.push_back(total + (i * 13) % 64);
            doffs.push_back(total + (i * 29) % 61);
            total += sizes[i] + 128;
        }
        areas a(b.host, total, true, 1);
        ring r(b.host, sizes.size() + 1);
        for (size_t i = 0; i < sizes.size(); ++i) {
            r.set(i, a.src_pa(offs[i]), a.dst_pa(doffs[i]), sizes[i], 0);
        }
        const size_t tail = sizes.size() - 1;
        r.d[tail].ControlFlags =
            NET_DMA_STATUS_UPDATE_ON_COMPLETION | NET_DMA_INTERRUPT_ON_COMPLETION;
        r.link(0, tail, true);
        ASSERT_EQ(c->start(r.d, static_cast<ULONG>(sizes.size())), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(tail)));
        wait_ns(5000);  // the interrupt, ISR and DPC
        uint64_t sum = 0;
        size_t prev_end = 0;
        for (size_t i = 0; i < sizes.size(); ++i) {
            EXPECT_EQ(std::memcmp(a.src + offs[i], a.dst + doffs[i], sizes[i]), 0)
                << "block " << i << " (" << sizes[i] << " B)";
            // Nothing outside the blocks was written.
            EXPECT_TRUE(a.untouched(prev_end, doffs[i] - prev_end)) << "before block " << i;
            prev_end = doffs[i] + sizes[i];
            sum += sizes[i];
        }
        EXPECT_TRUE(a.untouched(prev_end, total - prev_end));
        EXPECT_EQ(b.stat("bytes"), sum);
        EXPECT_EQ(b.stat("descriptors"), sizes.size());
        EXPECT_EQ(b.reg(drv.hw(c), hsi::NETDMA_CHAN_COMPLETED), sizes.size());
        EXPECT_EQ(b.reg(drv.hw(c), hsi::NETDMA_CHAN_STATUS), r.pa(tail) | NetDmaTransferStatusIdle);
        ASSERT_EQ(seen.size(), 1u);
        EXPECT_EQ(seen[0].first, r.pa(tail));
        EXPECT_EQ(seen[0].second, r.pa(tail) | NetDmaTransferStatusIdle);
        EXPECT_EQ(c->get_counters().isrs, 1u);
        EXPECT_EQ(c->get_counters().last_isr_descriptor, r.pa(tail));
        EXPECT_EQ(b.stat("interrupts"), 1u);
        EXPECT_EQ(b.stat("completion_writes"), 2u);  // ARMED at START, IDLE at the tail
        remove_provider(drv.prov);
    });
}

// Physically scattered buffers: descriptors of at most a page that cross a page boundary use
// the NetDMA 2.0 page-break fields (a NULL-terminated 1.x list).
TEST(NetDma, ScatteredBuffersWithPageBreaks) {
    bench& b = *new bench();
    run([&] {
        driver drv(b);
        drv.up();
        channel* c = drv.open();
        const size_t bytes = 64 * KIB + 3000;
        areas a(b.host, bytes + 8192, false, 2);
        const size_t src_off = 100, dst_off = 3000;
        std::vector<std::pair<size_t, size_t>> parts;  // (offset, length) of each descriptor
        for (size_t o = 0; o < bytes;) {
            const size_t len = std::min<size_t>(4096 - (o % 4096 == 0 ? 0 : 17), bytes - o);
            parts.emplace_back(o, len);
            o += len;
        }
        ring r(b.host, parts.size());
        size_t breaks = 0;
        for (size_t i = 0; i < parts.size(); ++i) {
            const auto [o, len] = parts[i];
            uint8_t* s = a.src + src_off + o;
            uint8_t* d = a.dst + dst_off + o;
            ULONG flags = 0;
            r.set(i, b.host.phys(s), b.host.phys(d), static_cast<ULONG>(len), 0);
            const size_t s_first = 4096 - reinterpret_cast<uintptr_t>(s) % 4096;
            const size_t d_first = 4096 - reinterpret_cast<uintptr_t>(d) % 4096;
            if (len > s_first) {
                flags |= NET_DMA_SOURCE_PAGE_BREAK;
                r.d[i].NextSourceAddress.QuadPart = static_cast<LONGLONG>(b.host.phys(s + s_first));
            }
            if (len > d_first) {
                flags |= NET_DMA_DESTINATION_PAGE_BREAK;
                r.d[i].NextDestinationAddress.QuadPart =
                    static_cast<LONGLONG>(b.host.phys(d + d_first));
            }
            breaks += (flags != 0);
            r.d[i].ControlFlags = flags;
        }
        EXPECT_GT(breaks, parts.size() / 2);
        r.d[parts.size() - 1].ControlFlags |= NET_DMA_STATUS_UPDATE_ON_COMPLETION;
        r.link(0, parts.size() - 1, false);
        ASSERT_EQ(c->start(r.d, 0), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(parts.size() - 1)));
        EXPECT_EQ(std::memcmp(a.src + src_off, a.dst + dst_off, bytes), 0);
        EXPECT_TRUE(a.untouched(0, dst_off));
        EXPECT_TRUE(a.untouched(dst_off + bytes, a.len - dst_off - bytes));
        EXPECT_EQ(b.stat("bytes"), bytes);
    });
}

// NetDMA 1.x: append by patching the old tail's NULL link, once while the engine works on
// that very tail (it must re-read the link) and once after it went idle.
TEST(NetDma, AppendToNullTerminatedListWhileRunningAndIdle) {
    bench& b = *new bench();
    run([&] {
        driver drv(b);
        drv.up();
        channel* c = drv.open();
        const ULONG blk = 64 * KIB;
        areas a(b.host, 20 * blk, true, 3);
        ring r(b.host, 20);
        blocks(r, a, 0, 20, blk);
        r.d[7].TransferSize = static_cast<ULONG>(blk);  // the first tail
        r.link(0, 7, false);
        ASSERT_EQ(c->start(r.d, 0), STATUS_SUCCESS);
        // Wait until the engine is on descriptor 7, the tail with a NULL link.
        const uint32_t ch = drv.hw(c);
        while (b.reg(ch, hsi::NETDMA_CHAN_COMPLETED) < 7) {
            wait_ns(200);
        }
        EXPECT_FALSE(a.copied(7 * blk, blk));  // still copying the tail
        r.link(8, 15, false);
        r.d[7].NextDescriptor.QuadPart = static_cast<LONGLONG>(r.pa(8));
        r.d[15].ControlFlags = NET_DMA_STATUS_UPDATE_ON_COMPLETION;
        ASSERT_EQ(c->append(&r.d[8], 0), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(15)));
        EXPECT_GE(b.stat("next_rereads"), 1u);
        EXPECT_TRUE(a.copied(0, 16 * blk));
        EXPECT_TRUE(a.untouched(16 * blk, 4 * blk));
        // Idle at a NULL link: the append makes the engine re-read it.
        wait_ns(2000);
        r.link(16, 19, false);
        r.d[19].ControlFlags = NET_DMA_STATUS_UPDATE_ON_COMPLETION;
        r.d[15].NextDescriptor.QuadPart = static_cast<LONGLONG>(r.pa(16));
        ASSERT_EQ(c->append(&r.d[16], 0), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(19)));
        EXPECT_TRUE(a.copied(0, 20 * blk));
        EXPECT_EQ(b.stat("descriptors"), 20u);
        EXPECT_GE(b.stat("next_rereads"), 2u);
        EXPECT_EQ(b.stat("appends"), 2u);
    });
}

// NetDMA 2.0: the chain is linked ahead, Start and Append give counts.
TEST(NetDma, AppendWithCountsWhileRunningAndIdle) {
    bench& b = *new bench();
    run([&] {
        driver drv(b);
        drv.up();
        channel* c = drv.open();
        const ULONG blk = 32 * KIB;
        areas a(b.host, 16 * blk, true, 4);
        ring r(b.host, 17);
        blocks(r, a, 0, 16, blk);
        r.link(0, 15, true);
        r.d[11].ControlFlags = NET_DMA_STATUS_UPDATE_ON_COMPLETION;
        r.d[15].ControlFlags = NET_DMA_STATUS_UPDATE_ON_COMPLETION;
        ASSERT_EQ(c->start(r.d, 6), STATUS_SUCCESS);
        wait_ns(3000);
        EXPECT_LT(b.reg(drv.hw(c), hsi::NETDMA_CHAN_COMPLETED), 6u);  // still running
        ASSERT_EQ(c->append(&r.d[6], 6), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(11)));
        EXPECT_TRUE(a.copied(0, 12 * blk));
        EXPECT_TRUE(a.untouched(12 * blk, 4 * blk));  // the count stops it: link ignored
        ASSERT_EQ(c->append(&r.d[12], 4), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(15)));
        EXPECT_TRUE(a.copied(0, 16 * blk));
        EXPECT_EQ(b.stat("descriptors"), 16u);
        EXPECT_EQ(b.stat("next_rereads"), 0u);  // the 2.0 links were valid all along
        // Append needs a Start after a reset.
        ASSERT_EQ(c->reset(), STATUS_SUCCESS);
        EXPECT_EQ(c->append(&r.d[0], 1), STATUS_UNSUCCESSFUL);
    });
}

// Suspend mid-chain, edit the list while suspended (skip one descriptor), resume.
TEST(NetDma, SuspendEditResume) {
    bench& b = *new bench();
    run([&] {
        driver drv(b);
        drv.up();
        channel* c = drv.open();
        const ULONG blk = 128 * KIB;
        const size_t n = 10;
        areas a(b.host, n * blk, true, 5);
        ring r(b.host, n);
        blocks(r, a, 0, n, blk);
        r.link(0, n - 1, false);
        r.d[n - 1].ControlFlags = NET_DMA_STATUS_UPDATE_ON_COMPLETION;
        EXPECT_EQ(c->resume(), STATUS_UNSUCCESSFUL);  // nothing to resume
        ASSERT_EQ(c->start(r.d, 0), STATUS_SUCCESS);
        wait_ns(25000);
        PHYSICAL_ADDRESS last{};
        ASSERT_EQ(c->suspend(&last), STATUS_SUCCESS);
        const auto k = static_cast<size_t>((last.QuadPart - static_cast<LONGLONG>(r.pa(0))) / 64);
        ASSERT_LT(k, n - 2);
        EXPECT_EQ(static_cast<uint64_t>(last.QuadPart), r.pa(k));
        EXPECT_EQ(c->completion_word(), r.pa(k) | NetDmaTransferStatusSuspend);
        EXPECT_EQ(b.reg(drv.hw(c), hsi::NETDMA_CHAN_COMPLETED), k + 1);
        EXPECT_TRUE(a.copied(0, (k + 1) * blk));
        // Suspended means suspended: nothing moves for a while.
        wait_ns(50000);
        EXPECT_TRUE(a.untouched((k + 1) * blk, (n - k - 1) * blk));
        PHYSICAL_ADDRESS again{};
        EXPECT_EQ(c->suspend(&again), STATUS_UNSUCCESSFUL);  // already suspended
        // Edit: skip descriptor k+1.
        r.d[k].NextDescriptor.QuadPart = static_cast<LONGLONG>(r.pa(k + 2));
        ASSERT_EQ(c->resume(), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(n - 1)));
        EXPECT_TRUE(a.copied(0, (k + 1) * blk));
        EXPECT_TRUE(a.untouched((k + 1) * blk, blk));
        EXPECT_TRUE(a.copied((k + 2) * blk, (n - k - 2) * blk));
        EXPECT_EQ(b.stat("descriptors"), n - 1);
        EXPECT_EQ(b.stat("suspends"), 1u);
        EXPECT_EQ(b.stat("resumes"), 1u);
    });
}

// Abort mid-chain: the current descriptor is not completed, the rest is untouched; Append is
// refused until a Start, which then finishes the work.
TEST(NetDma, AbortMidChainThenRestart) {
    bench& b = *new bench();
    run([&] {
        driver drv(b);
        drv.up();
        channel* c = drv.open();
        const ULONG blk = 256 * KIB;
        const size_t n = 8;
        areas a(b.host, n * blk, true, 6);
        ring r(b.host, n);
        blocks(r, a, 0, n, blk, NET_DMA_STATUS_UPDATE_ON_COMPLETION);
        r.link(0, n - 1, false);
        ASSERT_EQ(c->start(r.d, 0), STATUS_SUCCESS);
        const uint32_t ch = drv.hw(c);
        while (b.reg(ch, hsi::NETDMA_CHAN_COMPLETED) < 2) {
            wait_ns(500);
        }
        wait_ns(3000);  // well inside descriptor 2 (a 256 KiB copy takes ~20 us)
        ASSERT_EQ(c->abort(), STATUS_SUCCESS);
        const uint64_t word = c->completion_word();
        EXPECT_EQ(word & NET_DMA_TRANSFER_STATUS_MASK, NetDmaTransferStatusHalted);
        const auto done = static_cast<size_t>(b.reg(ch, hsi::NETDMA_CHAN_COMPLETED));
        ASSERT_GE(done, 2u);
        ASSERT_LT(done, n - 1);
        EXPECT_EQ(word, r.pa(done - 1) | NetDmaTransferStatusHalted);
        EXPECT_EQ(b.reg(ch, hsi::NETDMA_CHAN_STATUS), word);
        EXPECT_TRUE(a.copied(0, done * blk));
        EXPECT_FALSE(a.copied(done * blk, blk));  // cut short
        EXPECT_TRUE(a.untouched((done + 1) * blk, (n - done - 1) * blk));
        EXPECT_EQ(b.stat("aborted_descriptors"), 1u);
        wait_ns(50000);
        EXPECT_TRUE(a.untouched((done + 1) * blk, (n - done - 1) * blk));  // stays stopped
        EXPECT_EQ(c->append(&r.d[done], 0), STATUS_UNSUCCESSFUL);
        ASSERT_EQ(c->start(&r.d[done], 0), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(n - 1)));
        EXPECT_TRUE(a.copied(0, n * blk));
    });
}

// Reset mid-chain: halted, back to the allocated state (counters cleared); a new Start works.
TEST(NetDma, ResetMidChainThenNewChain) {
    bench& b = *new bench();
    run([&] {
        driver drv(b);
        drv.up();
        channel* c = drv.open();
        const ULONG blk = 256 * KIB;
        areas a(b.host, 8 * blk, true, 7);
        ring r(b.host, 8);
        blocks(r, a, 0, 6, blk);
        r.link(0, 5, true);
        ASSERT_EQ(c->start(r.d, 6), STATUS_SUCCESS);
        const uint32_t ch = drv.hw(c);
        while (b.reg(ch, hsi::NETDMA_CHAN_COMPLETED) < 1) {
            wait_ns(500);
        }
        ASSERT_EQ(c->reset(), STATUS_SUCCESS);
        EXPECT_EQ(c->transfer_status(), NetDmaTransferStatusHalted);
        EXPECT_EQ(b.reg(ch, hsi::NETDMA_CHAN_STATUS), hsi::NETDMA_STATUS_HALTED);
        EXPECT_EQ(b.reg(ch, hsi::NETDMA_CHAN_COMPLETED), 0u);
        EXPECT_EQ(b.reg(ch, hsi::NETDMA_CHAN_ERROR), 0u);
        EXPECT_TRUE(a.untouched(3 * blk, 3 * blk));
        EXPECT_EQ(b.stat("resets"), 2u);  // one at allocation, this one
        // The channel still has its completion word and vector; a new chain runs.
        blocks(r, a, 6, 2, blk, NET_DMA_STATUS_UPDATE_ON_COMPLETION);
        r.link(6, 7, false);
        ASSERT_EQ(c->start(&r.d[6], 0), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(7)));
        EXPECT_TRUE(a.copied(6 * blk, 2 * blk));
        EXPECT_EQ(b.reg(ch, hsi::NETDMA_CHAN_COMPLETED), 2u);
    });
}

// Interrupt-on-completion: ISR -> NetDmaIsr (CPU) -> DPC -> NetDmaInterruptDpc -> client;
// a masked vector holds the message until it is unmasked.
TEST(NetDma, InterruptsReachNetDmaAndMaskedVectorHolds) {
    bench& b = *new bench();
    run([&] {
        driver drv(b);
        drv.up();
        std::vector<uint64_t> dpc_descriptors;
        channel* c = drv.open(1u << 3, 0, [&](PHYSICAL_ADDRESS d, ULONG64) {
            dpc_descriptors.push_back(static_cast<uint64_t>(d.QuadPart));
        });
        ASSERT_EQ(c->cpu(), 3u);
        const ULONG blk = 64 * KIB;
        areas a(b.host, 8 * blk, true, 8);
        ring r(b.host, 8);
        blocks(r, a, 0, 6, blk);
        r.d[1].ControlFlags = NET_DMA_INTERRUPT_ON_COMPLETION;
        r.d[4].ControlFlags = NET_DMA_INTERRUPT_ON_COMPLETION;
        r.d[5].ControlFlags = NET_DMA_STATUS_UPDATE_ON_COMPLETION;
        r.link(0, 5, true);
        ASSERT_EQ(c->start(r.d, 6), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(5)));
        wait_ns(5000);
        EXPECT_TRUE(a.copied(0, 6 * blk));
        EXPECT_EQ(b.stat("interrupts"), 2u);
        EXPECT_EQ(c->get_counters().isrs, 2u);
        ASSERT_EQ(dpc_descriptors.size(), 2u);
        // The ISR reads where the engine is: at or past the interrupting descriptor.
        EXPECT_GE(dpc_descriptors[0], r.pa(1));
        EXPECT_GE(dpc_descriptors[1], r.pa(4));
        EXPECT_LE(dpc_descriptors[1], r.pa(5));
        EXPECT_EQ(get_provider_counters(drv.prov).dpcs, 2u);
        // Mask the channel's vector: the message is held, then sent on unmask.
        const uint64_t ctl =
            hsi::REG_MSIX_TABLE + 16ull * get_channel_info(c->provider_channel()).vector + 12;
        b.host.mmio_write32(ctl, 1);
        blocks(r, a, 6, 2, blk);
        r.d[7].ControlFlags = NET_DMA_INTERRUPT_ON_COMPLETION | NET_DMA_STATUS_UPDATE_ON_COMPLETION;
        r.link(6, 7, true);
        ASSERT_EQ(c->start(&r.d[6], 2), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(7)));
        wait_ns(5000);
        EXPECT_EQ(b.stat("masked_interrupts"), 1u);
        EXPECT_EQ(c->get_counters().isrs, 2u);
        b.host.mmio_write32(ctl, 0);
        wait_ns(5000);
        EXPECT_EQ(b.stat("pending_sent"), 1u);
        EXPECT_EQ(c->get_counters().isrs, 3u);
        ASSERT_EQ(dpc_descriptors.size(), 3u);
        EXPECT_EQ(dpc_descriptors[2], r.pa(7));
    });
}

// Every documented completion-word status: ARMED, ACTIVE, IDLE, SUSPEND, HALTED (abort).
TEST(NetDma, CompletionWordWalksEveryStatus) {
    bench& b = *new bench();
    run([&] {
        driver drv(b);
        drv.up();
        channel* c = drv.open();
        const ULONG blk = 64 * KIB;
        areas a(b.host, 3 * blk, true, 9);
        ring r(b.host, 4);
        blocks(r, a, 0, 3, blk, NET_DMA_STATUS_UPDATE_ON_COMPLETION);
        r.link(0, 2, true);
        std::vector<uint64_t> words;
        ASSERT_EQ(c->start(r.d, 3), STATUS_SUCCESS);
        const sc_core::sc_time end = sc_core::sc_time_stamp() + sc_core::sc_time(1, sc_core::SC_MS);
        while ((words.empty() || words.back() != (r.pa(2) | NetDmaTransferStatusIdle)) &&
               sc_core::sc_time_stamp() < end) {
            b.host.wait_for_dma(1e6);
            const uint64_t w = c->completion_word();
            if (w != 0 && (words.empty() || words.back() != w)) {
                words.push_back(w);
            }
        }
        const std::vector<uint64_t> expect = {
            NetDmaTransferStatusArmed, r.pa(0) | NetDmaTransferStatusActive,
            r.pa(1) | NetDmaTransferStatusActive, r.pa(2) | NetDmaTransferStatusIdle};
        EXPECT_EQ(words, expect);
        EXPECT_TRUE(a.copied(0, 3 * blk));
        // Suspend an idle channel: at once, with the last descriptor.
        PHYSICAL_ADDRESS last{};
        ASSERT_EQ(c->suspend(&last), STATUS_SUCCESS);
        EXPECT_EQ(static_cast<uint64_t>(last.QuadPart), r.pa(2));
        EXPECT_TRUE(c->wait_for(NetDmaTransferStatusSuspend, r.pa(2), 10000));
        ASSERT_EQ(c->resume(), STATUS_SUCCESS);
        ASSERT_EQ(c->abort(), STATUS_SUCCESS);
        EXPECT_TRUE(c->wait_for(NetDmaTransferStatusHalted, r.pa(2), 10000));
        EXPECT_EQ(b.stat("aborted_descriptors"), 0u);
        EXPECT_EQ(b.stat("bad_commands"), 0u);
    });
}

// Each descriptor error halts the channel (completion word HALTED at the last good
// descriptor), raises the interrupt and leaves its code in CHAN_ERROR for the ISR.
TEST(NetDma, DescriptorErrorsHaltAndInterrupt) {
    bench& b = *new bench();
    run([&] {
        driver drv(b);
        drv.up();
        int dpcs = 0;
        channel* c = drv.open(0, 0, [&](PHYSICAL_ADDRESS, ULONG64) { ++dpcs; });
        const uint32_t ch = drv.hw(c);
        areas a(b.host, 64 * KIB, true, 10);
        ring r(b.host, 4);
        struct bad_case {
            uint32_t error;
            std::function<void()> make;  // fills slot 1 (slot 0 is a good 256 B copy)
        };
        const uint64_t page_end = a.src_pa(8192) - 96;  // 96 B before a page boundary
        const std::vector<bad_case> cases = {
            {hsi::NETDMA_ERR_OPCODE, [&] { r.set(1, a.src_pa(0), a.dst_pa(0), 64, 0x01000000); }},
            {hsi::NETDMA_ERR_LENGTH,
             [&] { r.set(1, a.src_pa(0), a.dst_pa(0), (1u << 20) + 1, 0); }},
            {hsi::NETDMA_ERR_ADDRESS, [&] { r.set(1, (1ull << 48) - 32, a.dst_pa(0), 64, 0); }},
            {hsi::NETDMA_ERR_PAGE_BREAK,
             [&] {
                 r.set(1, page_end, a.dst_pa(0), 5000, NET_DMA_SOURCE_PAGE_BREAK);
                 r.d[1].NextSourceAddress.QuadPart = static_cast<LONGLONG>(a.src_pa(16384));
             }},
        };
        uint32_t expected_errors = 0;
        for (const auto& bc : cases) {
            r.set(0, a.src_pa(0), a.dst_pa(0), 256, 0);
            bc.make();
            r.link(0, 1, true);
            clear_word(c);
            ASSERT_EQ(c->start(r.d, 2), STATUS_SUCCESS);
            ASSERT_TRUE(c->wait_for(NetDmaTransferStatusHalted, r.pa(0), 1e6)) << bc.error;
            wait_ns(5000);  // interrupt -> ISR reads and clears CHAN_ERROR
            ++expected_errors;
            EXPECT_EQ(get_channel_info(c->provider_channel()).last_error, bc.error);
            EXPECT_EQ(b.reg(ch, hsi::NETDMA_CHAN_ERROR), 0u);
            EXPECT_EQ(b.stat("errors"), expected_errors);
            EXPECT_EQ(dpcs, static_cast<int>(expected_errors));
        }
        EXPECT_EQ(get_provider_counters(drv.prov).errors_seen, expected_errors);
        // A bad link: NetDMA 2.0 count says two descriptors, the link is not 8 B aligned.
        r.set(0, a.src_pa(0), a.dst_pa(0), 256, 0);
        r.set(1, a.src_pa(0), a.dst_pa(0), 256, 0);
        r.link(0, 1, true);
        r.d[0].NextDescriptor.QuadPart = static_cast<LONGLONG>(r.pa(1) + 4);
        clear_word(c);
        ASSERT_EQ(c->start(r.d, 2), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusHalted, r.pa(0), 1e6));
        wait_ns(5000);
        EXPECT_EQ(get_channel_info(c->provider_channel()).last_error, hsi::NETDMA_ERR_DESC_ADDRESS);
        // The page-break rule itself: the second part fitting in its page is fine.
        r.set(0, page_end, a.dst_pa(0), 2000,
              NET_DMA_SOURCE_PAGE_BREAK | NET_DMA_STATUS_UPDATE_ON_COMPLETION);
        r.d[0].NextSourceAddress.QuadPart = static_cast<LONGLONG>(a.src_pa(16384));
        r.link(0, 0, false);
        ASSERT_EQ(c->start(r.d, 0), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(0), 1e6));
        EXPECT_EQ(std::memcmp(a.dst, a.src + 8192 - 96, 96), 0);
        EXPECT_EQ(std::memcmp(a.dst + 96, a.src + 16384, 2000 - 96), 0);
        // Driver-side checks: a NULL or misaligned chain address never reaches the NIC.
        EXPECT_EQ(drv.rec->chars.StartDma(c->provider_channel(), nullptr, PHYSICAL_ADDRESS{}, 1),
                  STATUS_UNSUCCESSFUL);
    });
}

// Context change (DCA target), NULL transfer, DCA hint and a serialized descriptor whose
// destination the next one reads.
TEST(NetDma, ContextChangeNullTransferAndSerialize) {
    bench& b = *new bench();
    run([&] {
        driver drv(b);
        drv.up();
        channel* c = drv.open();
        const ULONG blk = 16 * KIB;
        areas a(b.host, 4 * blk, true, 11);
        ring r(b.host, 5);
        r.set(0, 0, 0, 0, NET_DMA_OP_TYPE_CONTEXT_CHANGE | NET_DMA_DCA_CONTEXT_CHANGE);
        r.d[0].DCAContext8.DCAContext = 5;
        r.set(1, a.src_pa(0), a.dst_pa(0), blk, NET_DMA_NULL_TRANSFER);
        r.set(2, a.src_pa(blk), a.dst_pa(blk), blk,
              NET_DMA_DESTINATION_DCA_ENABLE | NET_DMA_SERIALIZE_TRANSFER);
        // Reads what descriptor 2 wrote.
        r.set(3, a.dst_pa(blk), a.dst_pa(2 * blk), blk, NET_DMA_STATUS_UPDATE_ON_COMPLETION);
        r.link(0, 3, false);
        ASSERT_EQ(c->start(r.d, 0), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(3)));
        EXPECT_EQ(b.reg(drv.hw(c), hsi::NETDMA_CHAN_DCA), 5u);
        EXPECT_TRUE(a.untouched(0, blk));  // NULL transfer moved nothing
        EXPECT_TRUE(a.copied(blk, blk));
        EXPECT_EQ(std::memcmp(a.dst + 2 * blk, a.src + blk, blk), 0);
        EXPECT_EQ(b.stat("context_changes"), 1u);
        EXPECT_EQ(b.stat("null_transfers"), 1u);
        EXPECT_EQ(b.stat("dca_hints"), 1u);
        EXPECT_EQ(b.stat("descriptors"), 4u);
        EXPECT_EQ(b.stat("bytes"), 2 * blk);
        EXPECT_EQ(b.stat("interrupts"), 0u);  // bit 0 of a context change is not an interrupt
    });
}

// Timing: a 1 MiB copy is bounded by the PCIe link, and the channel's chunk pipeline matters.
TEST(NetDma, CopyTimeFollowsPcieAndBuffering) {
    bench& fast = *new bench(json::object(), "fast");
    bench& slow = *new bench(json{{"buffers", 1}, {"chunk_bytes", 256}}, "slow");
    double fast_ns = 0, slow_ns = 0;
    auto one = [](bench& b, double& ns) {
        driver drv(b);
        drv.up();
        channel* c = drv.open();
        areas a(b.host, MIB, true, 12);
        ring r(b.host, 1);
        r.set(0, a.src_pa(0), a.dst_pa(0), static_cast<ULONG>(MIB),
              NET_DMA_STATUS_UPDATE_ON_COMPLETION);
        r.link(0, 0, false);
        const sc_core::sc_time t0 = sc_core::sc_time_stamp();
        ASSERT_EQ(c->start(r.d, 0), STATUS_SUCCESS);
        ASSERT_TRUE(c->wait_for(NetDmaTransferStatusIdle, r.pa(0)));
        ns = (sc_core::sc_time_stamp() - t0).to_seconds() * 1e9;
        EXPECT_TRUE(a.copied(0, MIB));
    };
    run([&] {
        // Both nodes run side by side in simulated time (separate hosts and links).
        sc_core::sc_event done;
        int finished = 0;
        sc_core::sc_spawn([&] {
            one(slow, slow_ns);
            ++finished;
            done.notify();
        });
        one(fast, fast_ns);
        ++finished;
        while (finished < 2) {
            sc_core::wait(done);
        }
    });
    const double wire_ns = static_cast<double>(MIB) * fast.node.pcie.byte_ns();
    EXPECT_GT(fast_ns, wire_ns);                 // cannot beat the link
    EXPECT_LT(fast_ns, 1.5 * wire_ns + 5000.0);  // reads and writes overlap
    EXPECT_GT(slow_ns, 1.5 * fast_ns);           // one 256 B buffer: no overlap, more TLPs
}

// Two channels copy at once; the higher CONTROL priority wins the arbiter and finishes first.
TEST(NetDma, HigherPriorityChannelFinishesFirst) {
    bench& b = *new bench(
        json{{"chunk_bytes", 64}, {"buffers", 16}});  // many requests: the arbiter is busy
    run([&] {
        driver drv(b);
        drv.up();
        channel* lo = drv.open(0, 0);
        channel* hi = drv.open(0, 200);
        const ULONG bytes = 512 * KIB;
        areas a1(b.host, bytes, true, 13);
        areas a2(b.host, bytes, true, 14);
        ring r1(b.host, 1), r2(b.host, 1);
        r1.set(0, a1.src_pa(0), a1.dst_pa(0), bytes, NET_DMA_STATUS_UPDATE_ON_COMPLETION);
        r2.set(0, a2.src_pa(0), a2.dst_pa(0), bytes, NET_DMA_STATUS_UPDATE_ON_COMPLETION);
        r1.link(0, 0, false);
        r2.link(0, 0, false);
        ASSERT_EQ(lo->start(r1.d, 0), STATUS_SUCCESS);
        ASSERT_EQ(hi->start(r2.d, 0), STATUS_SUCCESS);
        ASSERT_TRUE(hi->wait_for(NetDmaTransferStatusIdle, r2.pa(0)));
        EXPECT_NE(lo->transfer_status(), NetDmaTransferStatusIdle);  // still copying
        ASSERT_TRUE(lo->wait_for(NetDmaTransferStatusIdle, r1.pa(0)));
        EXPECT_TRUE(a1.copied(0, bytes));
        EXPECT_TRUE(a2.copied(0, bytes));
        EXPECT_GT(b.stat("arbiter_waits"), 0u);
    });
}

// NetDmaProviderStop (device removal) waits for outstanding DMA before freeing the channels.
TEST(NetDma, RemoveWaitsForOutstandingCopy) {
    bench& b = *new bench();
    run([&] {
        driver drv(b);
        drv.up();
        channel* c = drv.open();
        const uint32_t ch = drv.hw(c);
        areas a(b.host, MIB, true, 15);
        ring r(b.host, 4);
        blocks(r, a, 0, 4, static_cast<ULONG>(MIB / 4));
        r.d[3].ControlFlags = NET_DMA_STATUS_UPDATE_ON_COMPLETION;
        r.link(0, 3, false);
        ASSERT_EQ(c->start(r.d, 0), STATUS_SUCCESS);
        wait_ns(1000);
        remove_provider(drv.prov);
        EXPECT_TRUE(a.copied(0, MIB));
        EXPECT_TRUE(providers().empty());
        EXPECT_EQ(b.reg(ch, hsi::NETDMA_CHAN_CONTROL), 0u);
        EXPECT_EQ(b.stat("aborts"), 0u);
        EXPECT_EQ(b.stat("descriptors"), 4u);
    });
}

// Register decode: read-only registers, unknown commands and channels are counted and ignored.
TEST(NetDma, BadRegisterAccessesAreIgnored) {
    bench& b = *new bench(json{{"channels", 2}});
    run([&] {
        const uint64_t caps = b.host.mmio_read64(hsi::REG_NETDMA_CAPS);
        EXPECT_EQ(caps & 0xff, 2u);
        EXPECT_EQ((caps >> 8) & 0xff, 48u);
        EXPECT_EQ(caps >> 32, 1u << 20);
        b.host.mmio_write64(hsi::REG_NETDMA_CAPS, 7);
        b.host.mmio_write64(hsi::netdma_channel_reg(0, hsi::NETDMA_CHAN_STATUS), 1);
        b.host.mmio_write64(hsi::netdma_channel_reg(0, hsi::NETDMA_CHAN_CMD), 0x99);
        b.host.mmio_write64(hsi::netdma_channel_reg(0, hsi::NETDMA_CHAN_COMPLETION), 0x1001);
        b.host.mmio_write64(hsi::netdma_channel_reg(5, hsi::NETDMA_CHAN_CHAINADDR), 0x1000);
        b.host.mmio_write64(hsi::netdma_channel_reg(0, hsi::NETDMA_CHAN_CMD),
                            hsi::NETDMA_CMD_APPEND);
        wait_ns(2000);
        EXPECT_EQ(b.stat("bad_accesses"), 5u);
        EXPECT_EQ(b.stat("bad_commands"), 1u);          // APPEND on a halted channel
        EXPECT_EQ(b.reg(0, hsi::NETDMA_CHAN_CMD), 1u);  // ... still acknowledged
        EXPECT_EQ(b.reg(0, hsi::NETDMA_CHAN_COMPLETION), 0u);
        EXPECT_EQ(b.host.mmio_read64(hsi::netdma_channel_reg(5, hsi::NETDMA_CHAN_STATUS)), 0u);
        // CHAINADDR written as two halves.
        b.host.mmio_write32(hsi::netdma_channel_reg(1, hsi::NETDMA_CHAN_CHAINADDR), 0x89abcdef);
        b.host.mmio_write32(hsi::netdma_channel_reg(1, hsi::NETDMA_CHAN_CHAINADDR) + 4, 0x1234567);
        wait_ns(2000);
        EXPECT_EQ(b.reg(1, hsi::NETDMA_CHAN_CHAINADDR), 0x0123456789abcdefull);
    });
}

}  // namespace
}  // namespace rnic::ndk::netdma
