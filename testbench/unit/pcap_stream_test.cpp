// SPDX-License-Identifier: Apache-2.0
// Unit tests of wire.pcap's streaming (output::pcap_stream) and of the rank spools
// (output::record_spool): the file is read back by an independent reader (the libpcap record
// layout, and tshark when installed) and checked against the order rule (time, link,
// direction, the direction's order); memory is one instant's frames, by the stream's counter.
#include "testbench/output/pcap_stream.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/output/pcap_writer.h"
#include "testbench/output/spool.h"

#include <unistd.h>

namespace {

using rnic::output::pcap_stream;
using rnic::output::pcap_writer;
using rnic::output::record_spool;

std::string temp_path(const std::string& tag) {
    const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
    return ::testing::TempDir() + "rnic_pcap_stream_" + t->name() + "_" + tag + "_" +
           std::to_string(::getpid()) + ".pcap";
}

std::vector<uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

uint64_t le(const uint8_t* p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
        v |= static_cast<uint64_t>(p[i]) << (8 * i);
    }
    return v;
}

// A frame whose bytes name its key (so a reader of the file can check the order): 14 bytes of
// Ethernet header (an unknown EtherType), then ps (8), link (4), side (4), seq (8), padding.
std::vector<uint8_t> frame_for(uint64_t ps, uint32_t link, uint32_t side, uint64_t seq,
                               size_t pad) {
    std::vector<uint8_t> f = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5};
    for (int i = 0; i < 8; ++i) {
        f.push_back(static_cast<uint8_t>(ps >> (8 * i)));
    }
    for (int i = 0; i < 4; ++i) {
        f.push_back(static_cast<uint8_t>(link >> (8 * i)));
    }
    for (int i = 0; i < 4; ++i) {
        f.push_back(static_cast<uint8_t>(side >> (8 * i)));
    }
    for (int i = 0; i < 8; ++i) {
        f.push_back(static_cast<uint8_t>(seq >> (8 * i)));
    }
    f.resize(f.size() + pad, 0xa5);
    return f;
}

// What a capture gives: frames in time order, several at one instant (one per link direction
// at most, as a MAC sends one frame at a time), links and directions in no particular order.
struct capture {
    std::vector<pcap_stream::record> records;  // in arrival order
    size_t largest_instant = 0;
};

capture make_capture(uint32_t seed, size_t instants, uint32_t links) {
    std::mt19937 rng(seed);
    capture c;
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> seq;
    uint64_t ps = 0;
    for (size_t i = 0; i < instants; ++i) {
        ps += 1 + rng() % 5000;  // some instants share a nanosecond
        std::vector<std::pair<uint32_t, uint32_t>> dirs;
        for (uint32_t l = 0; l < links; ++l) {
            for (uint32_t s = 0; s < 2; ++s) {
                if (rng() % 3 == 0) {
                    dirs.emplace_back(l, s);
                }
            }
        }
        if (dirs.empty()) {
            dirs.emplace_back(rng() % links, rng() % 2);
        }
        std::shuffle(dirs.begin(), dirs.end(), rng);
        for (const auto& [l, s] : dirs) {
            const uint64_t q = seq[{l, s}]++;
            c.records.push_back({ps, l, s, q, frame_for(ps, l, s, q, rng() % 64)});
        }
        c.largest_instant = std::max(c.largest_instant, dirs.size());
    }
    return c;
}

// The libpcap file read independently of pcap_writer: every record's ns timestamp and bytes.
struct pcap_file {
    uint32_t magic = 0;
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> records;
};

pcap_file read_pcap(const std::string& path) {
    const std::vector<uint8_t> b = read_file(path);
    pcap_file f;
    if (b.size() < 24) {
        ADD_FAILURE() << path << ": " << b.size() << " bytes, no global header";
        return f;
    }
    f.magic = static_cast<uint32_t>(le(b.data(), 4));
    size_t at = 24;
    while (at + 16 <= b.size()) {
        const uint64_t sec = le(b.data() + at, 4);
        const uint64_t nsec = le(b.data() + at + 4, 4);
        const size_t incl = le(b.data() + at + 8, 4);
        at += 16;
        if (at + incl > b.size()) {
            ADD_FAILURE() << "a record runs past the end of " << path;
            break;
        }
        f.records.emplace_back(
            sec * 1000000000u + nsec,
            std::vector<uint8_t>(b.begin() + static_cast<std::ptrdiff_t>(at),
                                 b.begin() + static_cast<std::ptrdiff_t>(at + incl)));
        at += incl;
    }
    EXPECT_EQ(at, b.size()) << "trailing bytes in " << path;
    return f;
}

// The file holds every frame once, in (time, link, direction, seq) order, each stamped with its
// time floored to ns.
void expect_in_rule_order(const pcap_file& f, const capture& c) {
    ASSERT_EQ(f.magic, 0xa1b23c4du);
    ASSERT_EQ(f.records.size(), c.records.size());
    std::tuple<uint64_t, uint64_t, uint64_t, uint64_t> prev{};
    for (size_t i = 0; i < f.records.size(); ++i) {
        const auto& [ns, data] = f.records[i];
        ASSERT_GE(data.size(), 38u);
        const uint8_t* k = data.data() + 14;
        const auto key = std::make_tuple(le(k, 8), le(k + 8, 4), le(k + 12, 4), le(k + 16, 8));
        EXPECT_EQ(ns, std::get<0>(key) / 1000) << "record " << i;
        if (i > 0) {
            ASSERT_LT(prev, key) << "record " << i << " is out of order";
        }
        prev = key;
    }
}

TEST(PcapStream, FileIsInTheOrderRuleAndHoldsOneInstantAtATime) {
    const capture c = make_capture(7, 20000, 6);
    const std::string path = temp_path("stream");
    pcap_writer w(path);
    pcap_stream s(
        [&w](const pcap_stream::record& r) { w.write(r.ps / 1000, r.data.data(), r.data.size()); });
    size_t held_max = 0;
    for (const auto& r : c.records) {
        s.add(r);
        held_max = std::max(held_max, s.held());
    }
    s.flush();
    w.close();
    EXPECT_EQ(s.held(), 0u);
    EXPECT_EQ(s.records(), c.records.size());
    // Bounded memory: never more than the frames of the busiest instant (12 directions here),
    // not the 20000 instants' ~80000 frames of the run.
    EXPECT_EQ(s.peak_held(), c.largest_instant);
    EXPECT_EQ(held_max, c.largest_instant);
    EXPECT_LE(c.largest_instant, 12u);
    expect_in_rule_order(read_pcap(path), c);

    // Byte for byte what the former writer gave: every frame kept, sorted at the end.
    std::vector<pcap_stream::record> all = c.records;
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
        return std::tie(a.ps, a.link, a.side, a.seq) < std::tie(b.ps, b.link, b.side, b.seq);
    });
    const std::string old_path = temp_path("sorted");
    pcap_writer old(old_path);
    for (const auto& r : all) {
        old.write(r.ps / 1000, r.data.data(), r.data.size());
    }
    old.close();
    EXPECT_TRUE(read_file(path) == read_file(old_path));
    std::remove(path.c_str());
    std::remove(old_path.c_str());
}

TEST(PcapStream, TsharkReadsTheStreamedFileInTimeOrder) {
    const char* candidates[] = {"/usr/bin/tshark", "/usr/local/bin/tshark"};
    std::string tshark;
    for (const char* c : candidates) {
        if (::access(c, X_OK) == 0) {
            tshark = c;
        }
    }
    if (tshark.empty()) {
        GTEST_SKIP() << "tshark not installed";
    }
    const capture c = make_capture(11, 2000, 4);
    const std::string path = temp_path("tshark");
    {
        pcap_writer w(path);
        pcap_stream s([&w](const pcap_stream::record& r) {
            w.write(r.ps / 1000, r.data.data(), r.data.size());
        });
        for (const auto& r : c.records) {
            s.add(r);
        }
        s.flush();
        w.close();
    }
    const std::string cmd =
        tshark + " -n -r " + path + " -T fields -e frame.time_epoch -e frame.len 2>/dev/null";
    std::FILE* p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::vector<std::pair<std::string, size_t>> rows;
    char line[256];
    while (std::fgets(line, sizeof line, p) != nullptr) {
        char t[128];
        size_t len = 0;
        if (std::sscanf(line, "%127s %zu", t, &len) == 2) {
            rows.emplace_back(t, len);
        }
    }
    ASSERT_EQ(::pclose(p), 0);
    // tshark's epoch times (seconds with 9 decimals) in the order the rule gives.
    std::vector<pcap_stream::record> all = c.records;
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
        return std::tie(a.ps, a.link, a.side, a.seq) < std::tie(b.ps, b.link, b.side, b.seq);
    });
    ASSERT_EQ(rows.size(), all.size());
    for (size_t i = 0; i < all.size(); ++i) {
        const uint64_t ns = all[i].ps / 1000;
        char want[64];
        std::snprintf(want, sizeof want, "%llu.%09llu",
                      static_cast<unsigned long long>(ns / 1000000000u),
                      static_cast<unsigned long long>(ns % 1000000000u));
        EXPECT_EQ(rows[i].first, want) << "frame " << i + 1;
        EXPECT_EQ(rows[i].second, all[i].data.size()) << "frame " << i + 1;
    }
    std::remove(path.c_str());
}

TEST(PcapStream, AFrameEarlierThanOneTakenIsAnError) {
    std::vector<uint64_t> out;
    pcap_stream s([&out](const pcap_stream::record& r) { out.push_back(r.ps); });
    s.add({2000, 0, 0, 0, {1}});
    s.add({3000, 0, 0, 1, {1}});
    EXPECT_EQ(out, std::vector<uint64_t>{2000});  // final once a later instant began
    EXPECT_THROW(s.add({2500, 1, 0, 0, {1}}), std::logic_error);
}

TEST(PcapStream, EncodedRecordsRoundTripAndCompareByKey) {
    const pcap_stream::record a{5000, 3, 1, 9, {1, 2, 3}};
    const pcap_stream::record b{5000, 3, 1, 10, {}};
    const pcap_stream::record c{5000, 4, 0, 0, {7}};
    const pcap_stream::record d{4999, 9, 1, 99, {7}};
    std::vector<uint8_t> ea, eb, ec, ed;
    pcap_stream::encode(a, ea);
    pcap_stream::encode(b, eb);
    pcap_stream::encode(c, ec);
    pcap_stream::encode(d, ed);
    const auto less = [](const std::vector<uint8_t>& x, const std::vector<uint8_t>& y) {
        return pcap_stream::encoded_less(x.data(), x.size(), y.data(), y.size());
    };
    EXPECT_TRUE(less(ea, eb));  // seq
    EXPECT_TRUE(less(eb, ec));  // link before seq
    EXPECT_TRUE(less(ed, ea));  // time first
    EXPECT_FALSE(less(ea, ea));
    const auto r = pcap_stream::decode(ea.data(), ea.size());
    EXPECT_EQ(std::tie(r.ps, r.link, r.side, r.seq), std::tie(a.ps, a.link, a.side, a.seq));
    EXPECT_EQ(r.data, a.data);
    EXPECT_THROW(pcap_stream::decode(ea.data(), 23), std::runtime_error);
}

TEST(RecordSpool, GivesBackEveryRecordInOrderInWholeChunks) {
    record_spool s;
    std::mt19937 rng(3);
    std::vector<std::vector<uint8_t>> want;
    for (int i = 0; i < 5000; ++i) {
        std::vector<uint8_t> r(rng() % 700);
        for (auto& b : r) {
            b = static_cast<uint8_t>(rng());
        }
        s.append(r.data(), r.size());
        want.push_back(std::move(r));
    }
    EXPECT_EQ(s.records(), 5000u);
    // Chunks of at least 10 kB of whole records (length-prefixed), the last one shorter.
    std::vector<std::vector<uint8_t>> got;
    std::vector<uint8_t> chunk;
    size_t chunks = 0;
    while (chunk.clear(), s.read_chunk(chunk, 10000)) {
        ++chunks;
        for (size_t at = 0; at < chunk.size();) {
            ASSERT_LE(at + 4, chunk.size());
            const auto n = static_cast<size_t>(le(chunk.data() + at, 4));
            ASSERT_LE(at + 4 + n, chunk.size()) << "a record split between chunks";
            got.emplace_back(chunk.begin() + static_cast<std::ptrdiff_t>(at + 4),
                             chunk.begin() + static_cast<std::ptrdiff_t>(at + 4 + n));
            at += 4 + n;
        }
    }
    EXPECT_EQ(got, want);
    EXPECT_GT(chunks, 100u);
    EXPECT_THROW(s.append(nullptr, 0), std::runtime_error);  // written once, read once
}

}  // namespace

namespace {

TEST(RecordSpool, AnUnusableTmpdirIsANamedError) {
    ::setenv("TMPDIR", "/nonexistent-rnicsim-tmp", 1);
    try {
        record_spool s;
        FAIL() << "a spool in a missing folder";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent-rnicsim-tmp"), std::string::npos)
            << e.what();
    }
}

}  // namespace
