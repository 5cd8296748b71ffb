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
}  // namespace

uint64_t pattern_key(uint64_t seed, uint32_t qp, uint64_t msg) {
    return splitmix64(splitmix64(seed ^ (uint64_t{qp} << 40)) ^ msg);
}

void pattern_fill(uint64_t key, uint8_t* dst, size_t len) {
    const size_t words = len / 8;
    // Word w is key ^ (w * GOLDEN): the products by addition (mod 2^64), four words a step, a
    // few instructions per 32 bytes (this runs over every byte a workload sends).
    constexpr uint64_t G1 = GOLDEN, G2 = 2 * GOLDEN, G3 = 3 * GOLDEN, G4 = 4 * GOLDEN;
    uint64_t m = 0;  // w * GOLDEN
    size_t w = 0;
    for (; w + 4 <= words; w += 4, m += G4) {
        const uint64_t v0 = key ^ m, v1 = key ^ (m + G1), v2 = key ^ (m + G2), v3 = key ^ (m + G3);
        std::memcpy(dst + w * 8, &v0, 8);
        std::memcpy(dst + w * 8 + 8, &v1, 8);
        std::memcpy(dst + w * 8 + 16, &v2, 8);
        std::memcpy(dst + w * 8 + 24, &v3, 8);
    }
    for (; w < words; ++w, m += G1) {
        const uint64_t v = key ^ m;
        std::memcpy(dst + w * 8, &v, 8);
    }
    if (len % 8 != 0) {
        const uint64_t v = word(key, words);
        std::memcpy(dst + words * 8, &v, len % 8);
    }
}

namespace {
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

uint64_t pattern_mismatches(uint64_t key, const uint8_t* src, size_t len) {
    uint64_t bad = 0;
    const size_t words = len / 8;
    // Blocks of eight words compared as one OR of differences; only a block that differs is
    // counted byte by byte (a clean transfer costs a few instructions per 64 bytes).
    constexpr size_t BLOCK = 8;
    uint64_t m = 0;  // w * GOLDEN
    size_t w = 0;
    for (; w + BLOCK <= words; w += BLOCK, m += BLOCK * GOLDEN) {
        uint64_t any = 0;
        for (size_t i = 0; i < BLOCK; ++i) {
            uint64_t v;
            std::memcpy(&v, src + (w + i) * 8, 8);
            any |= v ^ key ^ (m + i * GOLDEN);
        }
        if (any != 0) {
            for (size_t i = 0; i < BLOCK; ++i) {
                bad += bytes_differing(src + (w + i) * 8, key ^ (m + i * GOLDEN));
            }
        }
    }
    for (; w < words; ++w, m += GOLDEN) {
        bad += bytes_differing(src + w * 8, key ^ m);
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
