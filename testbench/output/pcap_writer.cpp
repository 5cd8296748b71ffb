// SPDX-License-Identifier: Apache-2.0
// Classic libpcap writer (nanosecond timestamps, Ethernet link type) for wire.pcap outputs.
#include "testbench/output/pcap_writer.h"

#include <algorithm>
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

void pcap_writer::write_frame(uint64_t time_ps, uint32_t link, uint8_t dir, const uint8_t* data,
                              size_t len) {
    if (!m_pending.empty() && m_pending.front().time_ps != time_ps) {
        flush_pending();
    }
    m_pending.push_back({time_ps, link, dir, std::vector<uint8_t>(data, data + len)});
}

void pcap_writer::flush_pending() {
    write_sorted(m_pending);
    m_pending.clear();
}

void pcap_writer::write_sorted(std::vector<keyed_frame>& frames) {
    // Stable: frames of one direction at one instant (none in practice) keep their order.
    std::stable_sort(frames.begin(), frames.end(), [](const keyed_frame& a, const keyed_frame& b) {
        if (a.time_ps != b.time_ps) {
            return a.time_ps < b.time_ps;
        }
        return a.link != b.link ? a.link < b.link : a.dir < b.dir;
    });
    for (const keyed_frame& f : frames) {
        write(f.time_ps / 1000, f.data.data(), f.data.size());  // pcap stamps: ns, floored
    }
}

void pcap_writer::close() {
    if (m_file == nullptr) {
        return;
    }
    flush_pending();
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

// --------------------------------------------------------------------------------------------
// pcap_spool
// --------------------------------------------------------------------------------------------

void pcap_spool::add(uint64_t time_ps, uint32_t link, uint8_t dir, const uint8_t* data,
                     size_t len) {
    append<uint64_t>(m_bytes, time_ps);
    append<uint32_t>(m_bytes, link);
    append<uint8_t>(m_bytes, dir);
    append<uint32_t>(m_bytes, static_cast<uint32_t>(len));
    m_bytes.insert(m_bytes.end(), data, data + len);
    ++m_frames;
}

std::vector<uint8_t> pcap_spool::take() {
    std::vector<uint8_t> out;
    out.swap(m_bytes);
    m_frames = 0;
    return out;
}

void pcap_spool::merge(pcap_writer& out, const std::vector<std::vector<uint8_t>>& spools) {
    // Rank order, then each rank's capture order: a direction is captured on one rank only,
    // so the stable sort gives every direction's frames in their own order.
    std::vector<pcap_writer::keyed_frame> frames;
    for (size_t r = 0; r < spools.size(); ++r) {
        const std::vector<uint8_t>& b = spools[r];
        size_t at = 0;
        auto take = [&](void* dst, size_t n) {
            if (b.size() - at < n) {
                throw std::runtime_error("pcap_spool: rank " + std::to_string(r) +
                                         "'s frames are truncated at byte " + std::to_string(at));
            }
            std::memcpy(dst, b.data() + at, n);
            at += n;
        };
        while (at < b.size()) {
            pcap_writer::keyed_frame f{};
            uint32_t len = 0;
            take(&f.time_ps, sizeof f.time_ps);
            take(&f.link, sizeof f.link);
            take(&f.dir, sizeof f.dir);
            take(&len, sizeof len);
            f.data.resize(len);
            take(f.data.data(), len);
            frames.push_back(std::move(f));
        }
    }
    out.write_sorted(frames);
}

}  // namespace rnic::output
