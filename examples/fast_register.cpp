// SPDX-License-Identifier: Apache-2.0
// Fast registration: node 1 creates a fast-register MR (NdkCreateMr FastRegister,
// NdkInitializeFastRegisterMr with remote access), maps a buffer with NdkBuildLam, registers it
// on its QP with NdkFastRegister (a work request: the NIC takes the page list from the send
// queue), and advertises (address, token) in a SEND. Node 0 RDMA WRITEs into it and SENDs
// "done"; node 1 checks the bytes, then NdkInvalidate retires the token. The starting point for
// a workload that registers per I/O.
//
//   fast_register [SCENARIO.json] [--set PATH=VALUE]... [--out DIR] [--time-limit-ms MS]
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "testbench/testbed/endpoint.h"
#include "testbench/testbed/testbed.h"

namespace {

using namespace rnic::testbed;

constexpr uint16_t PORT = 7002;
constexpr ULONG PAGES = 4;             // adapter pages of the fast-registered region
constexpr ULONG FBO = 100;             // first byte offset into the first page
constexpr ULONG LEN = 3 * 4096 + 500;  // bytes registered (and written)

struct advert {
    UINT64 address;
    UINT32 token;
    UINT32 length;
};

void target(node_env& env) {
    endpoint e(env);
    std::vector<NDK_RESULT> r;
    if (!e.open()) {
        return;
    }
    buffer msg = e.register_buffer(sizeof(advert), NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    NDK_SGE s = msg.sge(0, sizeof(advert));
    NTSTATUS st;
    NDK_MR* mr = create<NDK_MR>(
        [&](auto cb, auto* q, NDK_MR** out) {
            return e.pd->Dispatch->NdkCreateMr(e.pd, TRUE, cb, q, out);
        },
        &st);
    request init;
    if (!e.ok(st, "NdkCreateMr") ||
        !e.ok(init.wait(mr->Dispatch->NdkInitializeFastRegisterMr(
                  mr, PAGES, TRUE, &request::callback, init.context())),
              "NdkInitializeFastRegisterMr") ||
        !e.ok(e.qp->Dispatch->NdkReceive(e.qp, &msg, &s, 1), "NdkReceive") || !e.accept(PORT)) {
        return;
    }
    // The region: LEN bytes at FBO into page-aligned kernel memory, mapped by NdkBuildLam.
    auto* mem = static_cast<uint8_t*>(env.host().alloc(PAGES * 4096));
    std::memset(mem, 0, PAGES * 4096);
    MDL* mdl = env.host().build_mdl(mem + FBO, LEN);
    std::vector<uint8_t> lam_bytes(sizeof(NDK_LOGICAL_ADDRESS_MAPPING) +
                                   PAGES * sizeof(NDK_LOGICAL_ADDRESS));
    auto* lam = reinterpret_cast<NDK_LOGICAL_ADDRESS_MAPPING*>(lam_bytes.data());
    ULONG lam_size = static_cast<ULONG>(lam_bytes.size()), fbo = 0;
    if (!e.ok(e.adapter->Dispatch->NdkBuildLAM(e.adapter, mdl, LEN, nullptr, nullptr, lam,
                                               &lam_size, &fbo),
              "NdkBuildLAM") ||
        !e.ok(e.qp->Dispatch->NdkFastRegister(e.qp, nullptr, mr, lam->AdapterPageCount,
                                              lam->AdapterPageArray, fbo, LEN, mem + FBO,
                                              NDK_OP_FLAG_ALLOW_REMOTE_WRITE),
              "NdkFastRegister") ||
        !e.reap(1, r) || !e.ok(r[0].Status, "fast-register completion")) {
        return;
    }
    const advert a{reinterpret_cast<UINT64>(mem + FBO), mr->Dispatch->NdkGetRemoteTokenFromMr(mr),
                   LEN};
    std::memcpy(msg.data, &a, sizeof(a));
    if (!e.ok(e.qp->Dispatch->NdkSend(e.qp, nullptr, &s, 1, 0), "NdkSend") || !e.reap(1, r) ||
        !e.ok(e.qp->Dispatch->NdkReceive(e.qp, &msg, &s, 1), "NdkReceive") || !e.reap(1, r)) {
        return;  // the advert's completion, then the "done" receive
    }
    for (ULONG i = 0; i < LEN; ++i) {
        if (mem[FBO + i] != static_cast<uint8_t>(i * 13 + 1)) {
            env.fail("byte " + std::to_string(i) + " of the fast-registered region differs");
            return;
        }
    }
    r.clear();
    if (!e.ok(e.qp->Dispatch->NdkInvalidate(e.qp, nullptr, &mr->Header, 0), "NdkInvalidate") ||
        !e.reap(1, r) || !e.ok(r[0].Status, "invalidate completion")) {
        return;
    }
    e.adapter->Dispatch->NdkReleaseLAM(e.adapter, lam);
    request closed;
    e.ok(closed.wait(
             mr->Dispatch->NdkCloseMr(&mr->Header, &request::close_callback, closed.context())),
         "NdkCloseMr");
    e.close();
}

void writer(node_env& env) {
    endpoint e(env);
    std::vector<NDK_RESULT> r;
    if (!e.open()) {
        return;
    }
    buffer msg = e.register_buffer(sizeof(advert), NDK_MR_FLAG_ALLOW_LOCAL_WRITE);
    buffer data = e.register_buffer(LEN, 0);
    for (ULONG i = 0; i < LEN; ++i) {
        data.data[i] = static_cast<uint8_t>(i * 13 + 1);
    }
    NDK_SGE s = msg.sge(0, sizeof(advert));
    if (!e.ok(e.qp->Dispatch->NdkReceive(e.qp, &msg, &s, 1), "NdkReceive") || !e.connect(1, PORT) ||
        !e.reap(1, r)) {
        return;
    }
    advert a;
    std::memcpy(&a, msg.data, sizeof(a));
    NDK_SGE d = data.sge(0, a.length);
    r.clear();
    if (!e.ok(e.qp->Dispatch->NdkWrite(e.qp, nullptr, &d, 1, a.address, a.token, 0), "NdkWrite") ||
        !e.reap(1, r) || !e.ok(r[0].Status, "WRITE completion") ||
        !e.ok(e.qp->Dispatch->NdkSend(e.qp, nullptr, &s, 1, 0), "NdkSend") || !e.reap(1, r)) {
        return;
    }
    e.close();
}

}  // namespace

int sc_main(int argc, char** argv) {
    try {
        testbed::settings run{/*time_limit_ms=*/50, ""};
        testbed tb = testbed::from_args(argc, argv, run);
        tb.spawn(1, "target", target);
        tb.spawn(0, "writer", writer);
        const int rc = exit_code("fast_register", tb.run(run));
        std::cout << "fast-registered " << LEN << " B at offset " << FBO << " over " << PAGES
                  << " pages, written remotely, checked, invalidated: "
                  << (rc == 0 ? "ok" : "FAILED") << "\n";
        return rc;
    } catch (const std::exception& e) {
        std::cerr << "fast_register: " << e.what() << "\n";
        return 2;
    }
}
