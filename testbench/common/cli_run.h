// SPDX-License-Identifier: Apache-2.0
// What the tests that run the rnicsim binary share: where the source tree and the build are, the
// contents of a file, and a run of `rnicsim args...` (or any shell command) with its exit code,
// stdout and stderr.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "testbench/common/scratch_dir.h"

#include <sys/wait.h>

namespace rnic::testing {

// $RNICSIM_SOURCE_DIR / $RNICSIM_BINARY_DIR as ctest sets them; by hand, the tree this file is
// in and the folder of the test executable (where rnicsim is built too).
inline std::string source_dir() {
    const char* d = std::getenv("RNICSIM_SOURCE_DIR");
    return d != nullptr
               ? d
               : std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().string();
}
inline std::string binary_dir() {
    const char* d = std::getenv("RNICSIM_BINARY_DIR");
    return d != nullptr ? d
                        : std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
}

// The whole file, bytes as they are ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// `s` as one word for /bin/sh.
inline std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) {
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return q + "'";
}

struct cli_result {
    int exit_code = -1;  // -1: killed by a signal
    std::string out;
    std::string err;
};

// Runs `cmd` through the shell with stdout and stderr captured in files of `s`.
inline cli_result shell(const scratch_dir& s, const std::string& cmd) {
    const std::string out = s.path(".stdout");
    const std::string err = s.path(".stderr");
    const int status = std::system((cmd + " >" + quote(out) + " 2>" + quote(err)).c_str());
    cli_result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(out);
    r.err = read_file(err);
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return r;
}

// `rnicsim args...` as a shell command line (the binary of this build).
inline std::string rnicsim_command(const std::vector<std::string>& args) {
    const std::string bin = binary_dir() + "/rnicsim";
    EXPECT_TRUE(std::filesystem::exists(bin)) << bin << " is not built (ninja rnicsim)";
    std::string cmd = quote(bin);
    for (const auto& a : args) {
        cmd += " " + quote(a);
    }
    return cmd;
}

inline cli_result rnicsim(const scratch_dir& s, const std::vector<std::string>& args) {
    return shell(s, rnicsim_command(args));
}

}  // namespace rnic::testing
