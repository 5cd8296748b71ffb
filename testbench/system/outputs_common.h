// SPDX-License-Identifier: Apache-2.0
// Helpers of the outputs_*_test files: run the built rnicsim in a scratch folder, read files,
// read stats.json counters, find tools (tshark, vcd2fst), and an independent RoCEv2 frame checker
// (IPv4, UDP, ICRC).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testbench/common/cli_run.h"
#include "testbench/common/scratch_dir.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <zlib.h>

namespace rnic::outputs_test {

namespace fs = std::filesystem;

using rnic::testing::binary_dir;
using rnic::testing::cli_result;
using rnic::testing::quote;
using rnic::testing::read_file;
using rnic::testing::rnicsim;
using rnic::testing::rnicsim_command;
using rnic::testing::shell;
using rnic::testing::source_dir;

// A temporary folder (testbench/common/scratch_dir.h), named for these tests.
struct scratch : rnic::testing::scratch_dir {
    scratch()
        : scratch_dir("rnic_outputs_test") {}
};

inline std::string quickstart() {
    return source_dir() + "/configs/quickstart.json";
}

// A short quickstart run into `out` with extra --set overrides.
inline std::vector<std::string> short_run(const std::string& out,
                                          const std::vector<std::string>& sets) {
    std::vector<std::string> args = {"run", quickstart(), "--out",
                                     out,   "--set",      "workload.messages=8"};
    for (const auto& v : sets) {
        args.push_back("--set");
        args.push_back(v);
    }
    return args;
}

// Counter `name` of block `block` in a stats.json document; a test failure (and 0) when the
// document has no such counter.
inline uint64_t block_counter(const nlohmann::json& stats, const std::string& block,
                              const std::string& name) {
    if (!stats.contains("blocks") || !stats["blocks"].contains(block) ||
        !stats["blocks"][block].contains(name)) {
        ADD_FAILURE() << "no counter " << block << "." << name;
        return 0;
    }
    return stats["blocks"][block][name].get<uint64_t>();
}

// The comma-separated cells of line `index` (0: the header) of `text`, e.g. flows.csv's first
// flow at index 1; empty when there is no such line.
inline std::vector<std::string> csv_cells(const std::string& text, size_t index) {
    std::stringstream in(text);
    std::string line;
    for (size_t i = 0; i <= index; ++i) {
        if (!std::getline(in, line)) {
            return {};
        }
    }
    std::vector<std::string> cells;
    std::stringstream ls(line);
    for (std::string c; std::getline(ls, c, ',');) {
        cells.push_back(c);
    }
    return cells;
}

// The first existing executable named `name` on $PATH, or "".
inline std::string find_tool(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::stringstream ss(path != nullptr ? path : "/usr/bin:/bin");
    std::string dir;
    while (std::getline(ss, dir, ':')) {
        const fs::path p = fs::path(dir) / name;
        if (!dir.empty() && fs::exists(p) && access(p.c_str(), X_OK) == 0) {
            return p.string();
        }
    }
    return "";
}

// ------------------------------------------------------------------------------------------
// pcap reading and an independent RoCEv2 check (reference/rocev2.md)
// ------------------------------------------------------------------------------------------

struct pcap_record {
    uint64_t ns = 0;  // timestamp, nanoseconds
    uint32_t orig_len = 0;
    std::vector<uint8_t> data;
};

struct pcap_file {
    uint32_t magic = 0;
    uint32_t linktype = 0;
    std::vector<pcap_record> records;
    bool truncated = false;  // a record runs past the end of the file
};

inline uint32_t le32(const std::string& b, size_t at) {
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);  // written in host order; the magic says which
    return v;
}

inline pcap_file read_pcap(const std::string& path) {
    const std::string b = read_file(path);
    pcap_file f;
    if (b.size() < 24) {
        f.truncated = true;
        return f;
    }
    f.magic = le32(b, 0);
    f.linktype = le32(b, 20);
    size_t at = 24;
    while (at < b.size()) {
        if (at + 16 > b.size()) {
            f.truncated = true;
            break;
        }
        pcap_record r;
        const uint32_t sec = le32(b, at);
        const uint32_t frac = le32(b, at + 4);
        const uint32_t incl = le32(b, at + 8);
        r.orig_len = le32(b, at + 12);
        r.ns = uint64_t{sec} * 1000000000u + frac;
        at += 16;
        if (at + incl > b.size()) {
            f.truncated = true;
            break;
        }
        r.data.assign(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(at + incl));
        at += incl;
        f.records.push_back(std::move(r));
    }
    return f;
}

inline uint16_t be16(const std::vector<uint8_t>& d, size_t at) {
    return static_cast<uint16_t>((d[at] << 8) | d[at + 1]);
}

// ICRC per IBA A17 / rxe_icrc.c, computed here from scratch with zlib's crc32: 8 bytes of
// 0xFF, then the frame from the IP header with the variant fields set to ones (IPv4 TOS, TTL,
// header checksum; UDP checksum; BTH byte 4), up to the ICRC.
inline uint32_t roce_icrc(const std::vector<uint8_t>& frame) {
    std::vector<uint8_t> m(frame.begin() + 14, frame.end() - 4);
    m[1] = 0xff;                   // TOS
    m[8] = 0xff;                   // TTL
    m[10] = m[11] = 0xff;          // header checksum
    m[20 + 6] = m[20 + 7] = 0xff;  // UDP checksum
    m[28 + 4] = 0xff;              // BTH FECN/BECN/reserved
    const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, ones, 8);
    crc = crc32(crc, m.data(), static_cast<uInt>(m.size()));
    return static_cast<uint32_t>(crc);
}

// Why `frame` is not a well-formed RoCEv2 (IPv4) frame with a correct ICRC; "" if it is.
inline std::string check_roce_frame(const std::vector<uint8_t>& f) {
    if (f.size() < 14 + 20 + 8 + 12 + 4) {
        return "too short: " + std::to_string(f.size());
    }
    if (be16(f, 12) != 0x0800) {
        return "ethertype is not IPv4";
    }
    if (f[14] != 0x45) {
        return "IPv4 version/IHL is not 4/5";
    }
    if (be16(f, 16) != f.size() - 14) {
        return "IPv4 total length " + std::to_string(be16(f, 16)) +
               " != " + std::to_string(f.size() - 14);
    }
    if (f[23] != 17) {
        return "IP protocol is not UDP";
    }
    uint32_t sum = 0;
    for (size_t i = 14; i < 34; i += 2) {
        sum += be16(f, i);
    }
    while (sum > 0xffff) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    if (sum != 0xffff) {
        return "IPv4 header checksum is wrong";
    }
    if (be16(f, 36) != 4791) {
        return "UDP destination port is not 4791";
    }
    if (be16(f, 38) != f.size() - 34) {
        return "UDP length " + std::to_string(be16(f, 38)) + " != " + std::to_string(f.size() - 34);
    }
    const uint32_t want = roce_icrc(f);
    const size_t at = f.size() - 4;
    const uint32_t got = f[at] | (f[at + 1] << 8) | (f[at + 2] << 16) |
                         (static_cast<uint32_t>(f[at + 3]) << 24);  // LSB first
    if (got != want) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "ICRC %08x, expected %08x", got, want);
        return buf;
    }
    return "";
}

inline std::vector<uint8_t> from_hex(const std::string& hex) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) {
        out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    }
    return out;
}

// What a test reads back from one `rnicsim args...` run whose outputs go to `out`: the exit
// code, stderr, stats.json (null when not written) and wire.pcap (no records when not written).
struct run_outputs {
    int exit_code = -1;
    std::string err;
    nlohmann::json stats;
    pcap_file pcap;
};

inline run_outputs run_and_read(const scratch& s, const std::string& out,
                                const std::vector<std::string>& args) {
    const cli_result c = rnicsim(s, args);
    run_outputs r;
    r.exit_code = c.exit_code;
    r.err = c.err;
    if (fs::exists(out + "/stats.json")) {
        r.stats = nlohmann::json::parse(read_file(out + "/stats.json"));
    }
    r.pcap = read_pcap(out + "/wire.pcap");
    return r;
}

}  // namespace rnic::outputs_test
