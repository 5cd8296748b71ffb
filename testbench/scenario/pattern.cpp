// SPDX-License-Identifier: Apache-2.0
// Deterministic payload pattern.
#include "testbench/scenario/pattern.h"

#include <cstring>

namespace rnic::scenario {

namespace {
constexpr uint64_t GOLDEN = 0x9E3779B97F4A7C15ull;

uint64_t splitmix64(uint64_t x) {
    x += GOLDEN;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

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
    for (size_t w = 0; w < words; ++w) {
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
    for (size_t w = 0; w < words; ++w) {
        uint64_t v;
        std::memcpy(&v, src + w * 8, 8);
        uint64_t diff = v ^ word(key, w);
        if (diff != 0) {
            for (int b = 0; b < 8; ++b, diff >>= 8) {
                bad += (diff & 0xff) != 0;
            }
        }
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
