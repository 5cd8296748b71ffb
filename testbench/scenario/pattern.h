// SPDX-License-Identifier: Apache-2.0
// Deterministic payload pattern: what the sender writes and the checker expects, per message.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rnic::scenario {

// Message `msg` of QP `qp` under `seed` is a stream of 64-bit words: word w (little-endian) is
// key ^ (w * golden ratio), with key a hash of (seed, qp, msg). Every message differs from every
// other (so stale data from an earlier message in the same slot is caught) and every word of a
// message differs (so data at the wrong offset is caught). One multiply per 8 bytes: cheap
// enough for gigabytes.
uint64_t pattern_key(uint64_t seed, uint32_t qp, uint64_t msg);
void pattern_fill(uint64_t key, uint8_t* dst, size_t len);
// Number of bytes of [src, src+len) that differ from the pattern.
uint64_t pattern_mismatches(uint64_t key, const uint8_t* src, size_t len);

// What receive buffers and read sinks hold before the data arrives: a value no pattern word
// is likely to match byte for byte, so a transfer that never landed reads as mismatches.
inline constexpr uint8_t POISON = 0xA5;

}  // namespace rnic::scenario
