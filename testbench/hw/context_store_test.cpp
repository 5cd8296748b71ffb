// SPDX-License-Identifier: Apache-2.0
// The NIC's context tables (hw/context): an idle NIC holds no memory for them (1024-node
// fabrics, issue 29), and a table's entries behave as one array of rnic.limits entries would.
#include <fstream>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "hw/context/context.h"

#include <unistd.h>

namespace {
using namespace rnic::hw;

// Resident bytes of this process (/proc/self/statm: the second field, in pages).
size_t resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    size_t size = 0;
    size_t resident = 0;
    statm >> size >> resident;
    return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

std::unique_ptr<context_store> default_limits() {
    // rnic.limits' defaults (configs/README.md): 1024 QPs and CQs, 256 SRQs and PDs, 8192 keys,
    // 262144 MTT pages.
    return std::make_unique<context_store>(1024, 1024, 256, 256, 8192, 262144);
}

TEST(ContextStore, IdleTablesHoldNoMemory) {
    // As arrays of their entries the QP (~300 B each), key (~56 B) and CQ tables alone are
    // ~0.8 MB per NIC, written at construction; 32 idle NICs would add ~26 MB of resident memory.
    // Their pages are taken when a handle is first written, so 32 idle stores add (almost)
    // nothing.
    std::vector<std::unique_ptr<context_store>> stores;
    stores.reserve(32);
    const size_t before = resident_bytes();
    for (int i = 0; i < 32; ++i) {
        stores.push_back(default_limits());
    }
    const size_t grown = resident_bytes() - before;
    EXPECT_LT(grown, size_t{2} << 20)
        << "32 idle context stores made " << grown << " bytes resident";
    EXPECT_EQ(stores.back()->max_qps(), 1024u);
    EXPECT_EQ(stores.back()->max_keys(), 8192u);
}

TEST(ContextStore, HandlesBehaveAsOneArrayOfTheLimit) {
    auto cs = default_limits();
    // Never written: not valid, and a lookup finds nothing.
    EXPECT_EQ(cs->qp(5), nullptr);
    EXPECT_EQ(cs->cq(1023), nullptr);
    EXPECT_EQ(cs->mpt(0x1234), nullptr);
    // A slot in range exists with its defaults; beyond the limit there is none.
    qp_context* q = cs->qp_slot(5);
    ASSERT_NE(q, nullptr);
    EXPECT_FALSE(q->valid);
    EXPECT_EQ(q->pmtu, 1024u);
    EXPECT_EQ(q->sq_stride, 64u);
    EXPECT_EQ(cs->qp_slot(1024), nullptr);
    EXPECT_EQ(cs->qp(1024), nullptr);
    EXPECT_EQ(cs->cq_slot(1024), nullptr);
    EXPECT_EQ(cs->srq_slot(256), nullptr);
    EXPECT_EQ(cs->pd_slot(256), nullptr);
    EXPECT_EQ(cs->mpt_slot(8192u << 8), nullptr);
    // Written, it is found at the same address, which stays put while other handles (in other
    // pages and in its own) are written.
    q->valid = true;
    q->dest_qpn = 77;
    EXPECT_EQ(cs->qp(5), q);
    for (uint32_t n : {0u, 4u, 6u, 31u, 32u, 500u, 1023u}) {
        cs->qp_slot(n)->valid = true;
    }
    EXPECT_EQ(cs->qp_slot(5), q);
    EXPECT_EQ(cs->qp(5)->dest_qpn, 77u);
    EXPECT_EQ(cs->qp(1023), cs->qp_slot(1023));
    EXPECT_EQ(cs->qp(7), nullptr);  // in a written page, never written itself
    // A key is found only under its own variant byte.
    mpt_entry* e = cs->mpt_slot(0x0305);
    e->allocated = true;
    e->key = 0x0305;
    EXPECT_EQ(cs->mpt(0x0305), e);
    EXPECT_EQ(cs->mpt(0x0306), nullptr);
}

}  // namespace
