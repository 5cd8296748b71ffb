// SPDX-License-Identifier: Apache-2.0
// wire.pcap's record order, kept while the simulation runs.
#include "testbench/output/pcap_stream.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>

namespace rnic::output {

namespace {

constexpr size_t KEY_BYTES = 24;

void put(std::vector<uint8_t>& b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) {
        b.push_back(static_cast<uint8_t>(v >> (8 * i)));
    }
}

uint64_t get(const uint8_t* p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
        v |= static_cast<uint64_t>(p[i]) << (8 * i);
    }
    return v;
}

auto key(const pcap_stream::record& r) {
    return std::tie(r.ps, r.link, r.side, r.seq);
}

}  // namespace

void pcap_stream::add(record r) {
    if (!m_held.empty() && r.ps != m_held.front().ps) {
        if (r.ps < m_held.front().ps) {
            throw std::logic_error("pcap_stream: a frame at " + std::to_string(r.ps) +
                                   " ps after one at " + std::to_string(m_held.front().ps) +
                                   " ps (captures must come in time order)");
        }
        flush();
    }
    m_held.push_back(std::move(r));
    m_peak = std::max(m_peak, m_held.size());
    ++m_records;
}

void pcap_stream::flush() {
    std::sort(m_held.begin(), m_held.end(),
              [](const record& a, const record& b) { return key(a) < key(b); });
    for (const record& r : m_held) {
        m_sink(r);
    }
    m_held.clear();
}

void pcap_stream::encode(const record& r, std::vector<uint8_t>& out) {
    put(out, r.ps, 8);
    put(out, r.link, 4);
    put(out, r.side, 4);
    put(out, r.seq, 8);
    out.insert(out.end(), r.data.begin(), r.data.end());
}

pcap_stream::record pcap_stream::decode(const uint8_t* p, size_t len) {
    if (len < KEY_BYTES) {
        throw std::runtime_error("pcap_stream: a spooled record of " + std::to_string(len) +
                                 " bytes (at least 24)");
    }
    record r;
    r.ps = get(p, 8);
    r.link = static_cast<uint32_t>(get(p + 8, 4));
    r.side = static_cast<uint32_t>(get(p + 12, 4));
    r.seq = get(p + 16, 8);
    r.data.assign(p + KEY_BYTES, p + len);
    return r;
}

bool pcap_stream::encoded_less(const uint8_t* a, size_t, const uint8_t* b, size_t) {
    const uint64_t ka[4] = {get(a, 8), get(a + 8, 4), get(a + 12, 4), get(a + 16, 8)};
    const uint64_t kb[4] = {get(b, 8), get(b + 8, 4), get(b + 12, 4), get(b + 16, 8)};
    return std::lexicographical_compare(ka, ka + 4, kb, kb + 4);
}

}  // namespace rnic::output
