// SPDX-License-Identifier: Apache-2.0
// NetDMA copy client: on node 0, the NIC's NetDMA provider is added and started (as Windows does
// at AddDevice / START), a copy channel is allocated, and a chain of descriptors copies BLOCKS
// blocks of BLOCK bytes between kernel buffers by DMA; the client waits for the completion word
// (and the completion DPC), checks every byte and reports the copy bandwidth. The starting point
// for a workload that offloads memory copies.
//
//   netdma_copy [SCENARIO.json] [--set PATH=VALUE]... [--out DIR] [--time-limit-ms MS]
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "ndk_shim/netdma/netdma_framework.h"
#include "ndk_shim/netdma/netdma_provider.h"
#include "testbench/testbed/testbed.h"

namespace {

using namespace rnic::testbed;
namespace netdma = rnic::ndk::netdma;

constexpr ULONG BLOCK = 64 * 1024;
constexpr ULONG BLOCKS = 32;

void client(node_env& env) {
    rnic::ndk::host_system& host = env.host();
    netdma::provider* prov = nullptr;
    NTSTATUS st = netdma::add_and_start_provider(host, netdma::provider_params{}, &prov);
    if (st != STATUS_SUCCESS) {
        env.fail(std::string("add_and_start_provider: ") + ntstatus_name(st));
        return;
    }
    netdma::provider_record* rec = nullptr;
    for (netdma::provider_record* r : netdma::providers()) {
        rec = r->context == prov ? r : rec;  // this node's provider
    }
    // Completion DPCs: NetDmaInterruptDpc hands the client the descriptor that interrupted.
    sc_core::sc_event dpc;
    uint64_t dpc_descriptor = 0;
    netdma::channel_request req;
    req.on_completion = [&](PHYSICAL_ADDRESS d, ULONG64) {
        dpc_descriptor = static_cast<uint64_t>(d.QuadPart);
        dpc.notify(sc_core::SC_ZERO_TIME);
    };
    netdma::channel* ch = nullptr;
    if ((st = netdma::allocate_channel(host, rec, req, &ch)) != STATUS_SUCCESS) {
        env.fail(std::string("allocate_channel: ") + ntstatus_name(st));
        return;
    }
    // Physically contiguous source and destination (one descriptor per block), and the chain.
    auto* src = static_cast<uint8_t*>(host.alloc(BLOCKS * BLOCK, true));
    auto* dst = static_cast<uint8_t*>(host.alloc(BLOCKS * BLOCK, true));
    auto* d = static_cast<NET_DMA_DESCRIPTOR*>(
        host.alloc((BLOCKS + 1) * sizeof(NET_DMA_DESCRIPTOR), true));
    for (size_t i = 0; i < size_t{BLOCKS} * BLOCK; ++i) {
        src[i] = static_cast<uint8_t>(i * 31 + (i >> 16));
    }
    std::memset(dst, 0, BLOCKS * BLOCK);
    for (ULONG i = 0; i < BLOCKS; ++i) {
        d[i] = NET_DMA_DESCRIPTOR{};
        d[i].TransferSize = BLOCK;
        d[i].SourceAddress.QuadPart = static_cast<LONGLONG>(host.phys(src + i * BLOCK));
        d[i].DestinationAddress.QuadPart = static_cast<LONGLONG>(host.phys(dst + i * BLOCK));
        // NetDMA 2.0: chains are counted; the tail points at the slot the next Append will use.
        d[i].NextDescriptor.QuadPart = static_cast<LONGLONG>(host.phys(&d[i + 1]));
    }
    const uint64_t tail = host.phys(&d[BLOCKS - 1]);
    d[BLOCKS - 1].ControlFlags =
        NET_DMA_STATUS_UPDATE_ON_COMPLETION | NET_DMA_INTERRUPT_ON_COMPLETION;

    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    if ((st = ch->start(d, BLOCKS)) != STATUS_SUCCESS) {
        env.fail(std::string("DmaStart: ") + ntstatus_name(st));
        return;
    }
    if (!ch->wait_for(NetDmaTransferStatusIdle, tail, 10e6)) {
        env.fail("the completion word never showed the chain's tail done");
        return;
    }
    const double ns = (sc_core::sc_time_stamp() - t0).to_seconds() * 1e9;
    if (!wait_until([&] { return dpc_descriptor == tail; }, dpc,
                    sc_core::sc_time(1, sc_core::SC_MS))) {
        env.fail("no completion DPC for the chain's tail");
    }
    if (std::memcmp(src, dst, BLOCKS * BLOCK) != 0) {
        env.fail("the copy differs from its source");
    }
    env.report(BLOCKS, uint64_t{BLOCKS} * BLOCK, ns);
    netdma::free_channel(ch);
    netdma::remove_provider(prov);
}

}  // namespace

int sc_main(int argc, char** argv) {
    try {
        testbed::settings run{/*time_limit_ms=*/20, ""};
        testbed tb = testbed::from_args(argc, argv, run);
        tb.spawn(0, "copy", client);
        const rnic::scenario::run_result r = tb.run(run);
        std::cout << "NetDMA copy of " << BLOCKS << " x " << BLOCK << " B: " << r.goodput_gbps
                  << " Gb/s\n";
        return exit_code("netdma_copy", r);
    } catch (const std::exception& e) {
        std::cerr << "netdma_copy: " << e.what() << "\n";
        return 2;
    }
}
