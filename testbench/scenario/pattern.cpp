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

// Four words at a time in one 256-bit vector (GCC/Clang vector extension). On x86-64 the fill
// and the check are built twice (target_clones): for AVX2, one register per vector, and for the
// x86-64 baseline, two SSE2 registers; the loader picks what the CPU runs. Elsewhere the
// compiler's own vectors (NEON on AArch64) or scalars. They run over every byte a workload
// sends; the scalar loops cost 0.5 and 1.25 instructions per byte. No function takes or returns
// a vector (the baseline clone has no AVX calling convention): loads and stores are memcpy.
using v4 = uint64_t __attribute__((vector_size(32)));
constexpr size_t BLOCK_WORDS = 16;  // 128 bytes: four vectors (the fill and check step twice this)

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RNIC_PATTERN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define RNIC_PATTERN_CLONES
#endif

// The products w x GOLDEN of words w = first + 4i + j (vector i, lane j) of a block.
constexpr uint64_t G(uint64_t n) {
    return n * GOLDEN;
}

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

RNIC_PATTERN_CLONES void pattern_fill(uint64_t key, uint8_t* dst, size_t len) {
    // Eight vectors (256 bytes) a step: fewer additions and loop tests per byte than four.
    const size_t words = len / 8;
    const v4 k = {key, key, key, key};
    constexpr size_t STEP_WORDS = 2 * BLOCK_WORDS;
    const v4 step = {G(STEP_WORDS), G(STEP_WORDS), G(STEP_WORDS), G(STEP_WORDS)};
    v4 m0 = {G(0), G(1), G(2), G(3)}, m1 = {G(4), G(5), G(6), G(7)};
    v4 m2 = {G(8), G(9), G(10), G(11)}, m3 = {G(12), G(13), G(14), G(15)};
    v4 m4 = {G(16), G(17), G(18), G(19)}, m5 = {G(20), G(21), G(22), G(23)};
    v4 m6 = {G(24), G(25), G(26), G(27)}, m7 = {G(28), G(29), G(30), G(31)};
    size_t w = 0;
    for (; w + STEP_WORDS <= words; w += STEP_WORDS) {
        uint8_t* d = dst + w * 8;
        const v4 o0 = k ^ m0, o1 = k ^ m1, o2 = k ^ m2, o3 = k ^ m3;
        const v4 o4 = k ^ m4, o5 = k ^ m5, o6 = k ^ m6, o7 = k ^ m7;
        std::memcpy(d, &o0, 32);
        std::memcpy(d + 32, &o1, 32);
        std::memcpy(d + 64, &o2, 32);
        std::memcpy(d + 96, &o3, 32);
        std::memcpy(d + 128, &o4, 32);
        std::memcpy(d + 160, &o5, 32);
        std::memcpy(d + 192, &o6, 32);
        std::memcpy(d + 224, &o7, 32);
        m0 += step;
        m1 += step;
        m2 += step;
        m3 += step;
        m4 += step;
        m5 += step;
        m6 += step;
        m7 += step;
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

RNIC_PATTERN_CLONES uint64_t pattern_mismatches(uint64_t key, const uint8_t* src, size_t len) {
    // A clean transfer is the rule: the whole buffer is first compared as one OR of
    // differences, eight vectors (256 bytes) a step with no branch and no horizontal reduction
    // per step (about 18 instructions per 128 bytes; a test per 128-byte block cost 29). Only a
    // buffer that differs somewhere is then counted byte by byte, every word of it.
    const size_t words = len / 8;
    const v4 k = {key, key, key, key};
    constexpr size_t STEP_WORDS = 2 * BLOCK_WORDS;
    const v4 step = {G(STEP_WORDS), G(STEP_WORDS), G(STEP_WORDS), G(STEP_WORDS)};
    v4 m0 = {G(0), G(1), G(2), G(3)}, m1 = {G(4), G(5), G(6), G(7)};
    v4 m2 = {G(8), G(9), G(10), G(11)}, m3 = {G(12), G(13), G(14), G(15)};
    v4 m4 = {G(16), G(17), G(18), G(19)}, m5 = {G(20), G(21), G(22), G(23)};
    v4 m6 = {G(24), G(25), G(26), G(27)}, m7 = {G(28), G(29), G(30), G(31)};
    v4 acc = {0, 0, 0, 0};
    size_t w = 0;
    for (; w + STEP_WORDS <= words; w += STEP_WORDS) {
        const uint8_t* s = src + w * 8;
        v4 s0, s1, s2, s3, s4, s5, s6, s7;
        std::memcpy(&s0, s, 32);
        std::memcpy(&s1, s + 32, 32);
        std::memcpy(&s2, s + 64, 32);
        std::memcpy(&s3, s + 96, 32);
        std::memcpy(&s4, s + 128, 32);
        std::memcpy(&s5, s + 160, 32);
        std::memcpy(&s6, s + 192, 32);
        std::memcpy(&s7, s + 224, 32);
        acc |= (s0 ^ k ^ m0) | (s1 ^ k ^ m1) | (s2 ^ k ^ m2) | (s3 ^ k ^ m3);
        acc |= (s4 ^ k ^ m4) | (s5 ^ k ^ m5) | (s6 ^ k ^ m6) | (s7 ^ k ^ m7);
        m0 += step;
        m1 += step;
        m2 += step;
        m3 += step;
        m4 += step;
        m5 += step;
        m6 += step;
        m7 += step;
    }
    uint64_t differs = acc[0] | acc[1] | acc[2] | acc[3];
    for (; w < words; ++w) {
        uint64_t v;
        std::memcpy(&v, src + w * 8, 8);
        differs |= v ^ word(key, w);
    }
    uint8_t expect[8];
    if (len % 8 != 0) {
        const uint64_t v = word(key, words);
        std::memcpy(expect, &v, 8);
        for (size_t i = 0; i < len % 8; ++i) {
            differs |= src[words * 8 + i] ^ expect[i];
        }
    }
    if (differs == 0) {
        return 0;
    }
    uint64_t bad = 0;
    for (size_t i = 0; i < words; ++i) {
        bad += bytes_differing(src + i * 8, word(key, i));
    }
    for (size_t i = 0; i < len % 8; ++i) {
        bad += src[words * 8 + i] != expect[i];
    }
    return bad;
}

}  // namespace rnic::scenario
