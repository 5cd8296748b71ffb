// SPDX-License-Identifier: Apache-2.0
// A run's output folder, written atomically: files go to a hidden staging folder beside it,
// which replaces the folder in one rename when the run succeeded. A failed or interrupted run
// leaves the previous contents (or nothing) behind, never a half-written set.
#pragma once

#include <stdexcept>
#include <string>

namespace rnic::output {

// The folder cannot be used (it holds files rnicsim did not write, or cannot be created).
struct output_dir_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class output_dir {
public:
    // Checks `dir` (it may be missing, empty, or hold only files a run writes) and creates the
    // staging folder. Throws output_dir_error.
    explicit output_dir(std::string dir);
    // Removes the staging folder unless commit() ran.
    ~output_dir();
    output_dir(const output_dir&) = delete;
    output_dir& operator=(const output_dir&) = delete;

    const std::string& final_path() const { return m_dir; }
    // Where `file` is written before commit().
    std::string staged(const std::string& file) const;
    // Writes `file` in the staging folder. Throws output_dir_error.
    void write(const std::string& file, const std::string& content) const;
    // Puts the staging folder in place of `dir`. Throws output_dir_error.
    void commit();

    // Names a run may leave in its folder; anything else makes the constructor refuse `dir`.
    static bool is_output_file(const std::string& name);
    // scripts/plot's default PNGs beside a run's CSVs (flows.png, cc.png, compare.png): a new
    // run into the folder replaces them with the rest of the old run.
    static bool is_plot_output(const std::string& name);

    // Removes the staging folder of the output_dir alive in this process (its files, then the
    // folder) using only async-signal-safe calls: for a signal handler ending a rank that was
    // told to stop (a partitioned run whose other rank died). Nothing else is touched.
    static void remove_staging_from_signal_handler();

private:
    std::string m_dir;
    std::string m_staging;
    bool m_committed = false;
};

}  // namespace rnic::output
