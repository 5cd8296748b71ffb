// SPDX-License-Identifier: Apache-2.0
// A temporary folder for one test's files, removed with everything in it when the test ends.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <stdlib.h>

namespace rnic::testing {

struct scratch_dir {
    std::string dir;
    // `prefix` names the folder (/tmp/<prefix>_XXXXXX) so a leftover one says whose it was.
    explicit scratch_dir(const std::string& prefix = "rnic_test") {
        std::string t = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
        dir = mkdtemp(t.data());
    }
    ~scratch_dir() { std::filesystem::remove_all(dir); }
    scratch_dir(const scratch_dir&) = delete;
    scratch_dir& operator=(const scratch_dir&) = delete;

    std::string path(const std::string& name) const { return dir + "/" + name; }
    std::string write(const std::string& name, const std::string& text) const {
        std::ofstream(path(name)) << text;
        return path(name);
    }
};

}  // namespace rnic::testing
