// SPDX-License-Identifier: Apache-2.0
// Unit tests of the pcap writer: file layout read back byte by byte, and decoding by tshark.
#include "testbench/output/pcap_writer.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hw/roce/roce.h"

#include <unistd.h>

namespace {

using rnic::output::pcap_writer;
namespace roce = rnic::roce;

std::string temp_path(const std::string& tag) {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    return ::testing::TempDir() + "rnic_pcap_" + t->name() + "_" + tag + "_" +
           std::to_string(::getpid()) + ".pcap";
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

template <typename T>
T load(const std::vector<uint8_t>& b, size_t off) {
    T v{};
    EXPECT_LE(off + sizeof(T), b.size());
    if (off + sizeof(T) <= b.size()) {
        std::memcpy(&v, b.data() + off, sizeof(T));  // host order, as written
    }
    return v;
}

roce::frame_header base_header(uint8_t op) {
    roce::frame_header h;
    h.dst_mac.b = {0x02, 0, 0, 0, 0, 0x02};
    h.src_mac.b = {0x02, 0, 0, 0, 0, 0x01};
    h.src_ip = 0xC0A80101;
    h.dst_ip = 0xC0A80102;
    h.ip_id = 0x1234;
    h.bth_.opcode = op;
    h.bth_.dest_qp = 0x11;
    h.bth_.psn = 0x100;
    return h;
}

// The three frames of the reference: SEND Only (16 B), RDMA WRITE Only (8 B), ACK.
std::vector<std::vector<uint8_t>> three_frames() {
    std::vector<std::vector<uint8_t>> frames(3);
    std::vector<uint8_t> payload(16);
    for (size_t i = 0; i < payload.size(); ++i) {
        payload[i] = static_cast<uint8_t>(i);
    }
    auto h = base_header(roce::RC_SEND_ONLY);
    h.bth_.ack_req = true;
    roce::build_frame(h, payload.data(), payload.size(), frames[0]);
    h = base_header(roce::RC_WRITE_ONLY);
    h.bth_.dest_qp = 0x12;
    h.bth_.psn = 0x200;
    h.bth_.ack_req = true;
    h.reth_ = {0x00007f0000001000ull, 0x1234, 8};
    const uint8_t abc[] = {'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H'};
    roce::build_frame(h, abc, sizeof(abc), frames[1]);
    h = base_header(roce::RC_ACK);
    h.aeth_ = {roce::AETH_ACK_NO_CREDIT, 1};
    roce::build_frame(h, nullptr, 0, frames[2]);
    return frames;
}

const uint64_t TIMES_NS[] = {0, 1500, 2000000123ull};

std::string write_three(const std::string& tag) {
    const std::string path = temp_path(tag);
    pcap_writer w(path);
    const auto frames = three_frames();
    for (size_t i = 0; i < frames.size(); ++i) {
        w.write(TIMES_NS[i], frames[i].data(), frames[i].size());
    }
    EXPECT_EQ(w.frames_written(), 3u);
    w.close();
    return path;
}

TEST(PcapWriter, FileLayoutReadsBack) {
    const std::string path = write_three("layout");
    const auto b = read_file(path);
    const auto frames = three_frames();
    size_t expected_size = 24;
    for (const auto& f : frames) {
        expected_size += 16 + f.size();
    }
    ASSERT_EQ(b.size(), expected_size);

    // Global header.
    EXPECT_EQ(load<uint32_t>(b, 0), 0xa1b23c4du);
    EXPECT_EQ(load<uint16_t>(b, 4), 2);
    EXPECT_EQ(load<uint16_t>(b, 6), 4);
    EXPECT_EQ(load<int32_t>(b, 8), 0);
    EXPECT_EQ(load<uint32_t>(b, 12), 0u);
    EXPECT_EQ(load<uint32_t>(b, 16), 65535u);
    EXPECT_EQ(load<uint32_t>(b, 20), 1u);

    // Records: seconds, nanoseconds, captured length, original length, bytes.
    size_t off = 24;
    for (size_t i = 0; i < frames.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(load<uint32_t>(b, off), TIMES_NS[i] / 1000000000u);
        EXPECT_EQ(load<uint32_t>(b, off + 4), TIMES_NS[i] % 1000000000u);
        EXPECT_EQ(load<uint32_t>(b, off + 8), frames[i].size());
        EXPECT_EQ(load<uint32_t>(b, off + 12), frames[i].size());
        off += 16;
        EXPECT_TRUE(std::equal(frames[i].begin(), frames[i].end(), b.begin() + off));
        roce::parsed_frame p;
        EXPECT_EQ(roce::parse_frame(b.data() + off, frames[i].size(), p), roce::parse_error::NONE);
        off += frames[i].size();
    }
    std::remove(path.c_str());
}

TEST(PcapWriter, TruncatesToSnaplenAndKeepsOriginalLength) {
    const std::string path = temp_path("snap");
    {
        pcap_writer w(path);
        std::vector<uint8_t> big(70000, 0xAB);
        w.write(42, big.data(), big.size());
        w.write(43, big.data(), 3);
    }  // the destructor flushes
    const auto b = read_file(path);
    ASSERT_EQ(b.size(), 24u + 16 + 65535 + 16 + 3);
    EXPECT_EQ(load<uint32_t>(b, 24 + 4), 42u);
    EXPECT_EQ(load<uint32_t>(b, 24 + 8), 65535u);
    EXPECT_EQ(load<uint32_t>(b, 24 + 12), 70000u);
    EXPECT_EQ(load<uint32_t>(b, 24 + 16 + 65535 + 8), 3u);
    std::remove(path.c_str());
}

TEST(PcapWriter, ManyFramesSpanSeveralBufferFlushes) {
    const std::string path = temp_path("many");
    const auto frames = three_frames();
    const size_t n = 30000;  // ~2.4 MB: crosses the 1 MiB buffer twice
    size_t bytes = 24;
    {
        pcap_writer w(path);
        for (size_t i = 0; i < n; ++i) {
            const auto& f = frames[i % 3];
            w.write(i * 1000, f.data(), f.size());
            bytes += 16 + f.size();
        }
        w.close();
        w.close();  // idempotent
        EXPECT_THROW(w.write(0, frames[0].data(), frames[0].size()), std::runtime_error);
    }
    const auto b = read_file(path);
    ASSERT_EQ(b.size(), bytes);
    // Walk every record.
    size_t off = 24, count = 0;
    while (off + 16 <= b.size()) {
        EXPECT_EQ(load<uint32_t>(b, off + 4), (count * 1000) % 1000000000u);
        off += 16 + load<uint32_t>(b, off + 8);
        ++count;
    }
    EXPECT_EQ(off, b.size());
    EXPECT_EQ(count, n);
    std::remove(path.c_str());
}

TEST(PcapWriter, OpenFailureNamesThePath) {
    const std::string path = "/nonexistent-rnicsim-dir/wire.pcap";
    try {
        pcap_writer w(path);
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
}

TEST(PcapWriter, WriteFailureNamesThePath) {
    if (::access("/dev/full", W_OK) != 0) {
        GTEST_SKIP() << "/dev/full not available";
    }
    try {
        pcap_writer w("/dev/full");  // the global header is written at once
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
    }
}

TEST(PcapWriter, TsharkDecodesRoceV2) {
    const char* tshark = "/usr/bin/tshark";
    if (::access(tshark, X_OK) != 0) {
        GTEST_SKIP() << "tshark not installed at /usr/bin/tshark; cannot check decoding";
    }
    const std::string path = write_three("tshark");
    const std::string cmd = std::string(tshark) + " -r '" + path +
                            "' -T fields -E separator=/t -e frame.protocols"
                            " -e infiniband.bth.opcode -e frame.time_epoch"
                            " -e infiniband.invariant.crc -e _ws.malformed 2>/dev/null";
    FILE* pipe = ::popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) {
        out.append(buf, n);
    }
    ASSERT_EQ(::pclose(pipe), 0) << cmd;

    std::vector<std::vector<std::string>> rows;
    size_t start = 0;
    while (start < out.size()) {
        size_t end = out.find('\n', start);
        if (end == std::string::npos) {
            end = out.size();
        }
        std::vector<std::string> cols;
        const std::string line = out.substr(start, end - start);
        size_t c = 0;
        while (true) {
            const size_t tab = line.find('\t', c);
            cols.push_back(line.substr(c, tab == std::string::npos ? std::string::npos : tab - c));
            if (tab == std::string::npos) {
                break;
            }
            c = tab + 1;
        }
        rows.push_back(cols);
        start = end + 1;
    }
    ASSERT_EQ(rows.size(), 3u) << out;
    const auto frames = three_frames();
    const char* opcodes[] = {"4", "10", "17"};
    const char* times[] = {"0.000000000", "0.000001500", "2.000000123"};
    for (size_t i = 0; i < 3; ++i) {
        SCOPED_TRACE(out);
        ASSERT_EQ(rows[i].size(), 5u);
        // Frames with payload end in ":data" (Wireshark's name for the payload bytes).
        const std::string& proto = rows[i][0];
        EXPECT_TRUE(proto == "eth:ethertype:ip:udp:infiniband" ||
                    proto == "eth:ethertype:ip:udp:infiniband:data")
            << proto;
        EXPECT_EQ(rows[i][1], opcodes[i]);
        EXPECT_EQ(rows[i][2], times[i]);
        char icrc[16];
        const auto& f = frames[i];
        std::snprintf(icrc, sizeof(icrc), "0x%02x%02x%02x%02x", f[f.size() - 4], f[f.size() - 3],
                      f[f.size() - 2], f[f.size() - 1]);
        EXPECT_EQ(rows[i][3], icrc);
        EXPECT_EQ(rows[i][4], "");  // no malformed-packet expert info
    }
    std::remove(path.c_str());
}

}  // namespace
