// SPDX-License-Identifier: Apache-2.0
// Atomic output folder.
#include "testbench/output/output_dir.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <system_error>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace rnic::output {

namespace fs = std::filesystem;

namespace {
// The staging folder of the live output_dir, for remove_staging_from_signal_handler(): a fixed
// buffer (a signal handler may not allocate), empty when there is none.
char g_staging[PATH_MAX] = {};

void set_signal_staging(const std::string& path) {
    const size_t n = path.size() < sizeof g_staging - 1 ? path.size() : 0;
    g_staging[0] = '\0';
    path.copy(g_staging, n);
    g_staging[n] = '\0';
}
// Holds SIGTERM, SIGINT and SIGHUP for this thread while it lives; one that arrives meanwhile
// is delivered when it ends.
class termination_signals_held {
public:
    termination_signals_held() {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGTERM);
        sigaddset(&s, SIGINT);
        sigaddset(&s, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &s, &m_old);
    }
    ~termination_signals_held() { pthread_sigmask(SIG_SETMASK, &m_old, nullptr); }
    termination_signals_held(const termination_signals_held&) = delete;
    termination_signals_held& operator=(const termination_signals_held&) = delete;

private:
    sigset_t m_old;
};
}  // namespace

void output_dir::remove_staging_from_signal_handler() {
    if (g_staging[0] == '\0') {
        return;
    }
    // open/getdents64/unlinkat/close/rmdir are async-signal-safe (opendir/readdir are not).
    const int fd = open(g_staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        alignas(8) char buf[4096];
        for (;;) {
            const long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
            if (n <= 0) {
                break;
            }
            for (long at = 0; at < n;) {
                const auto* d = reinterpret_cast<const struct dirent64*>(buf + at);
                const char* name = d->d_name;
                if (!(name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))) {
                    unlinkat(fd, name, 0);
                }
                at += d->d_reclen;
            }
        }
        close(fd);
    }
    rmdir(g_staging);
}

bool output_dir::is_output_file(const std::string& name) {
    // Every file a run can write (testbench/cli/main.cpp, runner outputs such as lockstep's
    // divergence.json), and each node's Verilated waveform rtl.node<i>.fst.
    static const std::array<const char*, 12> known = {
        "stats.json", "summary.txt", "config.json",     "speed.json",
        "waves.vcd",  "rtl.fst",     "wire.pcap",       "trace.json",
        "cc.csv",     "flows.csv",   "divergence.json", "rtl.node1.fst"};
    for (const char* k : known) {
        if (name == k) {
            return true;
        }
    }
    const std::string pre = "rtl.node";
    const std::string post = ".fst";
    if (name.size() > pre.size() + post.size() && name.compare(0, pre.size(), pre) == 0 &&
        name.compare(name.size() - post.size(), post.size(), post) == 0) {
        const std::string digits = name.substr(pre.size(), name.size() - pre.size() - post.size());
        return digits.find_first_not_of("0123456789") == std::string::npos;
    }
    return false;
}

bool output_dir::is_plot_output(const std::string& name) {
    // scripts/plot's default outputs beside a run's CSVs (flows.csv, cc.csv, several flows.csv).
    return name == "flows.png" || name == "cc.png" || name == "compare.png";
}

output_dir::output_dir(std::string dir)
    : m_dir(std::move(dir)) {
    std::error_code ec;
    fs::path final_path(m_dir);
    if (fs::exists(final_path, ec)) {
        if (!fs::is_directory(final_path, ec)) {
            throw output_dir_error(m_dir + ": exists and is not a directory");
        }
        // Replacing the folder deletes it: only if it holds nothing but an earlier run's files
        // and scripts/plot's plots of them (which would describe the old run: they go with it).
        for (const auto& e : fs::directory_iterator(final_path, ec)) {
            const std::string name = e.path().filename().string();
            if (!e.is_regular_file() || !(is_output_file(name) || is_plot_output(name))) {
                throw output_dir_error(m_dir + ": holds " + name +
                                       ", which rnicsim did not write; choose another --out");
            }
        }
    }
    fs::path parent = final_path.parent_path();
    if (parent.empty()) {
        parent = ".";
    }
    fs::create_directories(parent, ec);
    if (ec) {
        throw output_dir_error(parent.string() + ": cannot create: " + ec.message());
    }
    std::string templ = (parent / ("." + final_path.filename().string() + ".tmp-XXXXXX")).string();
    {
        // A SIGTERM between mkdtemp and set_signal_staging would leave the folder behind (a
        // partitioned run's ranks are ended by SIGTERM at any time): both happen with it held.
        const termination_signals_held held;
        if (mkdtemp(templ.data()) == nullptr) {
            throw output_dir_error(templ + ": cannot create staging folder");
        }
        set_signal_staging(templ);
    }
    m_staging = templ;
    // mkdtemp makes the folder private (0700); the outputs get the usual umask permissions.
    const mode_t mask = umask(0);
    umask(mask);
    fs::permissions(m_staging, static_cast<fs::perms>(0777 & ~mask), ec);
}

output_dir::~output_dir() {
    // Removed before the signal handler forgets it: a SIGTERM in the middle of remove_all then
    // removes the rest itself.
    if (!m_committed && !m_staging.empty()) {
        std::error_code ec;
        fs::remove_all(m_staging, ec);
    }
    set_signal_staging("");
}

std::string output_dir::staged(const std::string& file) const {
    return (fs::path(m_staging) / file).string();
}

void output_dir::write(const std::string& file, const std::string& content) const {
    std::ofstream out(staged(file), std::ios::binary | std::ios::trunc);
    out << content;
    out.close();
    if (!out) {
        throw output_dir_error(staged(file) + ": write failed");
    }
}

void output_dir::commit() {
    std::error_code ec;
    fs::path final_path(m_dir);
    std::string old;
    if (fs::exists(final_path, ec)) {
        // Move the previous run aside first: rename() cannot replace a non-empty folder.
        old = m_staging + ".old";
        fs::rename(final_path, old, ec);
        if (ec) {
            throw output_dir_error(m_dir + ": cannot move the previous run aside: " + ec.message());
        }
    }
    {
        // The handler forgets the folder exactly when it becomes the run's outputs.
        const termination_signals_held held;
        fs::rename(m_staging, final_path, ec);
        if (!ec) {
            set_signal_staging("");
        }
    }
    if (ec) {
        if (!old.empty()) {
            std::error_code ignore;
            fs::rename(old, final_path, ignore);
        }
        throw output_dir_error(m_dir +
                               ": cannot rename the staging folder into place: " + ec.message());
    }
    m_committed = true;
    if (!old.empty()) {
        fs::remove_all(old, ec);
    }
}

}  // namespace rnic::output
