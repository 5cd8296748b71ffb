// SPDX-License-Identifier: Apache-2.0
// Classic libpcap writer (nanosecond timestamps, Ethernet link type) for wire.pcap outputs.
#include "testbench/output/pcap_writer.h"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace rnic::output {

namespace {

constexpr size_t BUFFER_BYTES = 1 << 20;  // records are written out in ~1 MiB chunks

template <typename T>
void append(std::vector<uint8_t>& buf, T v) {
    uint8_t bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));  // host byte order, as the magic number announces
    buf.insert(buf.end(), bytes, bytes + sizeof(T));
}

}  // namespace

pcap_writer::pcap_writer(const std::string& path)
    : m_path(path) {
    m_file = std::fopen(path.c_str(), "wb");
    if (m_file == nullptr) {
        fail("cannot open", errno);
    }
    std::setvbuf(m_file, nullptr, _IONBF, 0);  // m_buf is the buffer
    m_buf.reserve(BUFFER_BYTES);
    append<uint32_t>(m_buf, MAGIC_NS);
    append<uint16_t>(m_buf, VERSION_MAJOR);
    append<uint16_t>(m_buf, VERSION_MINOR);
    append<int32_t>(m_buf, 0);   // thiszone: timestamps are UTC (simulated time from 0)
    append<uint32_t>(m_buf, 0);  // sigfigs
    append<uint32_t>(m_buf, SNAPLEN);
    append<uint32_t>(m_buf, LINKTYPE_ETHERNET);
    try {
        flush_buffer();  // an unwritable target fails here, not at the first frame
    } catch (...) {
        std::fclose(m_file);
        m_file = nullptr;
        throw;
    }
}

pcap_writer::~pcap_writer() {
    if (m_file != nullptr) {
        // Best effort: destructors must not throw; call close() to see errors.
        if (!m_buf.empty()) {
            std::fwrite(m_buf.data(), 1, m_buf.size(), m_file);
        }
        std::fclose(m_file);
    }
}

void pcap_writer::write(uint64_t time_ns, const uint8_t* data, size_t len) {
    if (m_file == nullptr) {
        fail("write after close", 0);
    }
    const size_t incl = len < SNAPLEN ? len : SNAPLEN;
    if (m_buf.size() + RECORD_HEADER_BYTES + incl > BUFFER_BYTES) {
        flush_buffer();
    }
    append<uint32_t>(m_buf, static_cast<uint32_t>(time_ns / 1000000000u));
    append<uint32_t>(m_buf, static_cast<uint32_t>(time_ns % 1000000000u));
    append<uint32_t>(m_buf, static_cast<uint32_t>(incl));
    append<uint32_t>(m_buf, static_cast<uint32_t>(len > UINT32_MAX ? UINT32_MAX : len));
    m_buf.insert(m_buf.end(), data, data + incl);
    ++m_frames;
}

void pcap_writer::close() {
    if (m_file == nullptr) {
        return;
    }
    flush_buffer();
    std::FILE* f = m_file;
    m_file = nullptr;
    if (std::fclose(f) != 0) {
        fail("cannot close", errno);
    }
}

void pcap_writer::flush_buffer() {
    if (m_buf.empty()) {
        return;
    }
    const size_t n = std::fwrite(m_buf.data(), 1, m_buf.size(), m_file);
    const bool short_write = n != m_buf.size();
    m_buf.clear();
    if (short_write) {
        fail("cannot write", errno);
    }
}

void pcap_writer::fail(const char* what, int err) {
    std::string msg = "pcap_writer: " + std::string(what) + " '" + m_path + "'";
    if (err != 0) {
        msg += ": ";
        msg += std::strerror(err);
    }
    throw std::runtime_error(msg);
}

}  // namespace rnic::output
