// SPDX-License-Identifier: Apache-2.0
// Deterministic payload pattern.
#include "testbench/scenario/pattern.h"

#include <cstring>

#include "hw/common/numeric.h"

namespace rnic::scenario {

namespace {
constexpr uint64_t GOLDEN = SPLITMIX64_GAMMA;

// Word w of a message, as stored in memory (little-endian byte order on every host we build
// for; memcpy keeps it alignment-safe).
inline uint64_t word(uint64_t key, uint64_t w) {
    return key ^ (w * GOLDEN);
}

// Two words at a time in one 128-bit register (GCC/Clang vector extension: SSE2 on x86-64,
// NEON on AArch64, pairs of scalars elsewhere). The fill and the check run over every byte a
// workload sends; the scalar loops cost 0.5 and 1.25 instructions per byte.
using v2 = uint64_t __attribute__((vector_size(16)));
constexpr size_t BLOCK_WORDS = 8;  // 64 bytes: four vectors a step

inline v2 load(const uint8_t* p) {
    v2 v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}
inline void store(uint8_t* p, v2 v) {
    std::memcpy(p, &v, sizeof(v));
}

// Words [w, w + BLOCK_WORDS) of a message, as w advances one block a step: m0..m3 hold the
// products (w + 2i) x GOLDEN and (w + 2i + 1) x GOLDEN; each block adds BLOCK_WORDS x GOLDEN
// (mod 2^64, as the scalar formula). Four named registers, not an array: GCC keeps an array
// of vectors on the stack at -O2.
struct block_products {
    v2 m0 = {0, GOLDEN};
    v2 m1 = {2 * GOLDEN, 3 * GOLDEN};
    v2 m2 = {4 * GOLDEN, 5 * GOLDEN};
    v2 m3 = {6 * GOLDEN, 7 * GOLDEN};
    void next() {
        const v2 step = {BLOCK_WORDS * GOLDEN, BLOCK_WORDS * GOLDEN};
        m0 += step;
        m1 += step;
        m2 += step;
        m3 += step;
    }
};

// Bytes of the 8-byte word at `src` that differ from `expect`.
inline uint64_t bytes_differing(const uint8_t* src, uint64_t expect) {
    uint64_t v;
    std::memcpy(&v, src, 8);
    uint64_t bad = 0;
    for (uint64_t diff = v ^ expect; diff != 0; diff >>= 8) {
        bad += (diff & 0xff) != 0;
    }
    return bad;
}
}  // namespace

uint64_t pattern_key(uint64_t seed, uint32_t qp, uint64_t msg) {
    return splitmix64(splitmix64(seed ^ (uint64_t{qp} << 40)) ^ msg);
}

void pattern_fill(uint64_t key, uint8_t* dst, size_t len) {
    const size_t words = len / 8;
    const v2 k = {key, key};
    block_products p;
    size_t w = 0;
    for (; w + BLOCK_WORDS <= words; w += BLOCK_WORDS, p.next()) {
        uint8_t* d = dst + w * 8;
        store(d, k ^ p.m0);
        store(d + 16, k ^ p.m1);
        store(d + 32, k ^ p.m2);
        store(d + 48, k ^ p.m3);
    }
    for (; w < words; ++w) {
        const uint64_t v = word(key, w);
        std::memcpy(dst + w * 8, &v, 8);
    }
    if (len % 8 != 0) {
        const uint64_t v = word(key, words);
        std::memcpy(dst + words * 8, &v, len % 8);
    }
}

uint64_t pattern_mismatches(uint64_t key, const uint8_t* src, size_t len) {
    uint64_t bad = 0;
    const size_t words = len / 8;
    const v2 k = {key, key};
    block_products p;
    // The differences of one block (BLOCK_WORDS words at s) ORed together: zero when it matches.
    auto differs = [&k](const uint8_t* s, const block_products& b) {
        return (load(s) ^ k ^ b.m0) | (load(s + 16) ^ k ^ b.m1) | (load(s + 32) ^ k ^ b.m2) |
               (load(s + 48) ^ k ^ b.m3);
    };
    // Two blocks compared as one OR of differences; only a pair that differs is counted byte by
    // byte (a clean transfer costs a few instructions per 16 bytes).
    auto count = [&](size_t from, size_t n) {
        for (size_t i = from; i < from + n; ++i) {
            bad += bytes_differing(src + i * 8, word(key, i));
        }
    };
    size_t w = 0;
    for (; w + 2 * BLOCK_WORDS <= words; w += 2 * BLOCK_WORDS) {
        v2 any = differs(src + w * 8, p);
        p.next();
        any |= differs(src + w * 8 + BLOCK_WORDS * 8, p);
        p.next();
        if ((any[0] | any[1]) != 0) {
            count(w, 2 * BLOCK_WORDS);
        }
    }
    if (w + BLOCK_WORDS <= words) {
        const v2 any = differs(src + w * 8, p);
        if ((any[0] | any[1]) != 0) {
            count(w, BLOCK_WORDS);
        }
        w += BLOCK_WORDS;
    }
    for (; w < words; ++w) {
        bad += bytes_differing(src + w * 8, word(key, w));
    }
    if (len % 8 != 0) {
        uint8_t expect[8];
        const uint64_t v = word(key, words);
        std::memcpy(expect, &v, 8);
        for (size_t i = 0; i < len % 8; ++i) {
            bad += src[words * 8 + i] != expect[i];
        }
    }
    return bad;
}

}  // namespace rnic::scenario
