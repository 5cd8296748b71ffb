// SPDX-License-Identifier: Apache-2.0
// Classic libpcap writer (nanosecond timestamps, Ethernet link type) for wire.pcap outputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace rnic::output {

// Writes frames as they appear on the wire without FCS, stamped with simulated time. Byte order
// is the host's (the magic number tells readers). Records are buffered; close() or the
// destructor flushes them.
class pcap_writer {
public:
    static constexpr uint32_t MAGIC_NS = 0xa1b23c4d;  // nanosecond-resolution timestamps
    static constexpr uint16_t VERSION_MAJOR = 2;
    static constexpr uint16_t VERSION_MINOR = 4;
    static constexpr uint32_t SNAPLEN = 65535;
    static constexpr uint32_t LINKTYPE_ETHERNET = 1;
    static constexpr size_t GLOBAL_HEADER_BYTES = 24;
    static constexpr size_t RECORD_HEADER_BYTES = 16;

    // Creates (truncates) `path` and writes the global header. Throws std::runtime_error naming
    // the path if the file cannot be opened or written.
    explicit pcap_writer(const std::string& path);
    ~pcap_writer();
    pcap_writer(const pcap_writer&) = delete;
    pcap_writer& operator=(const pcap_writer&) = delete;

    // Appends one frame captured at `time_ns` of simulated time. Frames longer than SNAPLEN are
    // truncated to it (the record keeps the original length). Throws std::runtime_error on a
    // write error or after close().
    void write(uint64_t time_ns, const uint8_t* data, size_t len);
    // Appends one frame whose first bit left at `time_ps` on direction `dir` (0, 1) of link
    // `link` (topology.links index). Frames that start at the same instant are written in
    // (link, direction) order, whatever order the simulation's processes produced them in: the
    // file is the same for a single process and for any partition over MPI ranks (a direction
    // starts at most one frame per instant; its frames keep their own order). Frames are held
    // until simulated time moves on (or close()); calls must come in time order.
    void write_frame(uint64_t time_ps, uint32_t link, uint8_t dir, const uint8_t* data, size_t len);
    // Flushes and closes the file; idempotent. Throws std::runtime_error on a write error.
    void close();

    const std::string& path() const { return m_path; }
    uint64_t frames_written() const { return m_frames; }

    // One held frame of write_frame() / a pcap_spool: its order key and bytes.
    struct keyed_frame {
        uint64_t time_ps;
        uint32_t link;
        uint8_t dir;
        std::vector<uint8_t> data;
    };
    // Sorts `frames` by (time, link, direction), keeping the given order among equal keys, and
    // writes them.
    void write_sorted(std::vector<keyed_frame>& frames);

private:
    void flush_pending();
    void flush_buffer();
    [[noreturn]] void fail(const char* what, int err);  // err: errno or 0

    std::string m_path;
    std::FILE* m_file = nullptr;
    std::vector<uint8_t> m_buf;  // pending records, flushed when it would exceed its capacity
    uint64_t m_frames = 0;
    std::vector<keyed_frame> m_pending;  // write_frame()'s frames of the latest instant
};

// A partitioned run's captured frames on one rank (rnicsim run --ranks N): kept in memory with
// their order keys, sent to rank 0 as bytes, where merge() writes every rank's frames into one
// wire.pcap in exactly the order a single process writes them (pcap_writer::write_frame).
class pcap_spool {
public:
    void add(uint64_t time_ps, uint32_t link, uint8_t dir, const uint8_t* data, size_t len);
    uint64_t frames() const { return m_frames; }
    // This rank's frames as bytes (and clears them).
    std::vector<uint8_t> take();
    // Writes the frames of every rank's take() into `out`, in wire.pcap's order. Throws
    // std::runtime_error on a malformed spool or a write error.
    static void merge(pcap_writer& out, const std::vector<std::vector<uint8_t>>& spools);

private:
    std::vector<uint8_t> m_bytes;  // records: time_ps u64, link u32, dir u8, len u32, bytes
    uint64_t m_frames = 0;
};

}  // namespace rnic::output
