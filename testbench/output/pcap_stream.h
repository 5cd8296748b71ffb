// SPDX-License-Identifier: Apache-2.0
// wire.pcap's record order, kept while the simulation runs: at most one instant's frames are held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace rnic::output {

// wire.pcap holds its frames in a partition-independent order: time (ps, when the first bit
// leaves the MAC), then link index, then direction, then the direction's own order. Frames are
// captured at the current simulated time, so they arrive here in time order; only the frames
// of one instant need sorting. pcap_stream holds the current instant's frames and hands them,
// sorted, to its sink as soon as a frame of a later instant arrives (their order is then
// final), and the last instant at flush(). Memory: one instant's frames (at most one per
// captured link direction and MAC queue), not the run's.
class pcap_stream {
public:
    struct record {
        uint64_t ps = 0;
        uint32_t link = 0;
        uint32_t side = 0;
        uint64_t seq = 0;  // the direction's own order
        std::vector<uint8_t> data;
    };
    using sink = std::function<void(const record&)>;

    explicit pcap_stream(sink s)
        : m_sink(std::move(s)) {}

    // Takes one frame. Throws std::logic_error when `r` is earlier than a frame already taken
    // (a capture out of time order would make the file's order wrong).
    void add(record r);
    // Hands the held instant to the sink (at the end of the run). More frames may follow.
    void flush();

    size_t held() const { return m_held.size(); }
    size_t peak_held() const { return m_peak; }  // the most frames ever held at once
    uint64_t records() const { return m_records; }

    // The byte form of a record in a rank's spool (output::record_spool): ps, link, side, seq
    // (little-endian, 24 bytes: the sort key, compared as numbers), then the frame.
    static void encode(const record& r, std::vector<uint8_t>& out);
    static record decode(const uint8_t* p, size_t len);
    // The file's order on encoded records.
    static bool encoded_less(const uint8_t* a, size_t alen, const uint8_t* b, size_t blen);

private:
    sink m_sink;
    std::vector<record> m_held;  // all of one instant (ps)
    size_t m_peak = 0;
    uint64_t m_records = 0;
};

}  // namespace rnic::output
