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
    // Flushes and closes the file; idempotent. Throws std::runtime_error on a write error.
    void close();

    const std::string& path() const { return m_path; }
    uint64_t frames_written() const { return m_frames; }

private:
    void flush_buffer();
    [[noreturn]] void fail(const char* what, int err);  // err: errno or 0

    std::string m_path;
    std::FILE* m_file = nullptr;
    std::vector<uint8_t> m_buf;  // pending records, flushed when it would exceed its capacity
    uint64_t m_frames = 0;
};

}  // namespace rnic::output
