// SPDX-License-Identifier: Apache-2.0
// Point processes: spawn, wait, file each point's folder atomically; the local N-at-a-time loop.
#include "testbench/sweep/runner.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace rnic::sweep {

namespace fs = std::filesystem;

namespace {

constexpr const char* LOCK_FILE = ".lock";
constexpr const char* RUN_SUBDIR = "run";  // where `rnicsim run --out` writes inside the work dir
constexpr size_t TAIL_LINES = 3;
constexpr size_t TAIL_CHARS = 400;

std::ostream& log_of(const run_options& o) {
    return o.log != nullptr ? *o.log : std::cerr;
}

std::string read_text(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string describe_values(const plan& p, const point& pt) {
    std::string s;
    for (size_t c = 0; c < p.columns.size() && c < pt.values.size(); ++c) {
        s += (c ? " " : "") + p.columns[c] + "=" + format_value(pt.values[c]);
    }
    return s;
}

std::string format_fixed(double v, int decimals) {
    std::ostringstream ss;
    ss.setf(std::ios::fixed);
    ss.precision(decimals);
    ss << v;
    return ss.str();
}

// A point being simulated by a child process.
struct running_point {
    pid_t pid = -1;
    size_t index = 0;
    std::string work;  // points/.<id>.tmp-XXXXXX: becomes points/<id>
    std::chrono::steady_clock::time_point start;
    int spawn_error = 0;  // errno of a failed posix_spawn
};

// Creates the work folder and starts `rnicsim run` for the point.
running_point start_point(const std::string& out_dir, const plan& p, size_t index,
                          const std::string& binary) {
    running_point r;
    r.index = index;
    r.start = std::chrono::steady_clock::now();
    const point& pt = p.points[index];
    const fs::path points = fs::path(out_dir) / POINTS_DIR;
    std::error_code ec;
    fs::create_directories(points, ec);
    std::string templ = (points / ("." + pt.id + ".tmp-XXXXXX")).string();
    if (mkdtemp(templ.data()) == nullptr) {
        throw sweep_dir_error(templ + ": cannot create: " + std::strerror(errno));
    }
    r.work = templ;

    const std::vector<std::string> args =
        point_command(p, pt, binary, (fs::path(r.work) / RUN_SUBDIR).string());
    std::vector<char*> argv;
    for (const auto& a : args) {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);

    const std::string out_file = (fs::path(r.work) / "stdout.txt").string();
    const std::string err_file = (fs::path(r.work) / "stderr.txt").string();
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_file.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_file.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    // The sweep blocks SIGINT/SIGTERM/SIGCHLD while it waits; the point must not inherit that.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none;
    sigemptyset(&none);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int s : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE, SIGHUP}) {
        sigaddset(&defaults, s);
    }
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const int rc = posix_spawn(&r.pid, binary.c_str(), &fa, &attr, argv.data(), environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        r.pid = -1;
        r.spawn_error = rc;
    }
    return r;
}

// Turns the work folder into points/<id>: run outputs, stdout/stderr, done.json last.
point_outcome finish_point(const std::string& out_dir, const plan& p, const running_point& r,
                           int wait_status, const std::string& binary) {
    const point& pt = p.points[r.index];
    point_outcome o;
    o.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - r.start).count();
    const fs::path work(r.work);
    const fs::path run = work / RUN_SUBDIR;
    std::error_code ec;

    std::string how;
    if (r.spawn_error != 0) {
        how = "cannot start " + binary + ": " + std::strerror(r.spawn_error);
    } else if (WIFEXITED(wait_status)) {
        o.exit_code = WEXITSTATUS(wait_status);
        how = "exit " + std::to_string(o.exit_code);
    } else if (WIFSIGNALED(wait_status)) {
        o.signal = WTERMSIG(wait_status);
        how = std::string("killed by signal ") + std::to_string(o.signal) + " (" +
              strsignal(o.signal) + ")";
    } else {
        how = "ended with wait status " + std::to_string(wait_status);
    }
    const bool has_stats = fs::exists(run / STATS_FILE, ec);
    o.ok = r.spawn_error == 0 && o.exit_code == 0 && has_stats;
    if (!o.ok) {
        const std::string tail = stderr_tail(read_text(work / "stderr.txt"));
        if (o.exit_code == 0 && !has_stats) {
            how += ", but no stats.json";
        }
        o.error = tail.empty() ? how : how + ": " + tail;
    }

    // The run's files join stdout.txt/stderr.txt at the top of the point's folder.
    if (fs::is_directory(run, ec)) {
        for (const auto& e : fs::directory_iterator(run, ec)) {
            fs::rename(e.path(), work / e.path().filename(), ec);
        }
        fs::remove_all(run, ec);
    }
    const nlohmann::json done = {
        {"status", o.ok ? "ok" : "failed"},
        {"exit_code", o.exit_code >= 0 ? nlohmann::json(o.exit_code) : nlohmann::json()},
        {"signal", o.signal != 0 ? nlohmann::json(o.signal) : nlohmann::json()},
        {"error", o.error},
        {"wall_s", o.wall_s},
        {"base", p.base},
        {"overrides", pt.overrides},
        {"command", point_command(p, pt, binary, point_dir(out_dir, pt))},
    };
    write_file_atomic((work / DONE_FILE).string(), done.dump(2) + "\n");

    const fs::path final_dir = point_dir(out_dir, pt);
    fs::remove_all(final_dir, ec);
    fs::rename(work, final_dir, ec);
    if (ec) {
        throw sweep_dir_error(final_dir.string() + ": cannot rename " + r.work +
                              " into place: " + ec.message());
    }
    return o;
}

// Removes work folders left by an interrupted sweep (points/.<id>.tmp-*).
void remove_stale_work(const std::string& out_dir) {
    std::error_code ec;
    const fs::path points = fs::path(out_dir) / POINTS_DIR;
    std::vector<fs::path> stale;
    for (const auto& e : fs::directory_iterator(points, ec)) {
        const std::string name = e.path().filename().string();
        if (name.size() > 1 && name[0] == '.' && name.find(".tmp-") != std::string::npos) {
            stale.push_back(e.path());
        }
    }
    for (const auto& s : stale) {
        fs::remove_all(s, ec);
    }
}

// An exclusive lock on DIR/.lock for as long as the sweep runs there.
class dir_lock {
public:
    explicit dir_lock(const std::string& out_dir) {
        const std::string file = (fs::path(out_dir) / LOCK_FILE).string();
        m_fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (m_fd < 0) {
            throw sweep_dir_error(file + ": cannot open: " + std::strerror(errno));
        }
        if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
            ::close(m_fd);
            throw sweep_dir_error(out_dir + ": another sweep is running in this folder");
        }
    }
    ~dir_lock() { ::close(m_fd); }
    dir_lock(const dir_lock&) = delete;
    dir_lock& operator=(const dir_lock&) = delete;

private:
    int m_fd = -1;
};

// Blocks SIGINT/SIGTERM/SIGCHLD (they are taken with sigwaitinfo) and makes sure children
// can be waited for; restores everything on destruction.
class signal_guard {
public:
    signal_guard() {
        sigemptyset(&m_set);
        for (int s : {SIGINT, SIGTERM, SIGCHLD}) {
            sigaddset(&m_set, s);
        }
        pthread_sigmask(SIG_BLOCK, &m_set, &m_old_mask);
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        sigaction(SIGCHLD, &dfl, &m_old_chld);  // SIG_IGN would reap the points for us
    }
    ~signal_guard() {
        drain();
        sigaction(SIGCHLD, &m_old_chld, nullptr);
        pthread_sigmask(SIG_SETMASK, &m_old_mask, nullptr);
    }
    signal_guard(const signal_guard&) = delete;
    signal_guard& operator=(const signal_guard&) = delete;

    // Waits for a child to end or a stop signal; returns the signal number.
    int wait() {
        siginfo_t info;
        while (true) {
            const int s = sigwaitinfo(&m_set, &info);
            if (s > 0) {
                return s;
            }
        }
    }

    // Takes the signals that arrived and were not waited for; returns SIGINT or SIGTERM if
    // one of them was among them (it is handled as a stop, not re-delivered), else 0.
    int drain() {
        timespec zero{0, 0};
        int stop = 0;
        while (true) {
            const int s = sigtimedwait(&m_set, nullptr, &zero);
            if (s <= 0) {
                return stop;
            }
            if (s != SIGCHLD) {
                stop = s;
            }
        }
    }

private:
    sigset_t m_set;
    sigset_t m_old_mask;
    struct sigaction m_old_chld {};
};

}  // namespace

std::string stderr_tail(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        const size_t a = line.find_first_not_of(" \t\r");
        if (a == std::string::npos) {
            continue;
        }
        const size_t b = line.find_last_not_of(" \t\r");
        lines.push_back(line.substr(a, b - a + 1));
    }
    std::string out;
    const size_t first = lines.size() > TAIL_LINES ? lines.size() - TAIL_LINES : 0;
    for (size_t i = first; i < lines.size(); ++i) {
        out += (out.empty() ? "" : " | ") + lines[i];
    }
    if (out.size() > TAIL_CHARS) {
        out = "..." + out.substr(out.size() - TAIL_CHARS);
    }
    return out;
}

void prepare_out_dir(const std::string& out_dir, const plan& p) {
    std::error_code ec;
    const fs::path dir(out_dir);
    if (fs::exists(dir, ec)) {
        if (!fs::is_directory(dir, ec)) {
            throw sweep_dir_error(out_dir + ": exists and is not a folder");
        }
        const bool empty = fs::is_empty(dir, ec);
        if (!empty && !fs::exists(dir / PLAN_FILE, ec)) {
            throw sweep_dir_error(out_dir + ": holds files but no " + PLAN_FILE +
                                  ", so it is not a sweep's folder; choose another --out");
        }
    }
    fs::create_directories(dir / POINTS_DIR, ec);
    if (ec) {
        throw sweep_dir_error(out_dir + ": cannot create: " + ec.message());
    }
    try {
        write_file_atomic((dir / PLAN_FILE).string(), p.to_json().dump(2) + "\n");
    } catch (const std::runtime_error& e) {
        throw sweep_dir_error(e.what());
    }
}

std::vector<size_t> pending_points(const std::string& out_dir, const plan& p) {
    std::vector<size_t> out;
    for (const auto& pt : p.points) {
        if (read_point(out_dir, p, pt).state != point_state::OK) {
            out.push_back(pt.index);
        }
    }
    return out;
}

std::vector<std::string> point_command(const plan& p, const point& pt, const std::string& binary,
                                       const std::string& run_dir) {
    std::vector<std::string> args = {binary == SELF_EXE ? "rnicsim" : binary, "run", p.base,
                                     "--out", run_dir};
    for (const auto& o : pt.overrides) {
        args.push_back("--set");
        args.push_back(o);
    }
    return args;
}

point_outcome run_one_point(const std::string& out_dir, const plan& p, size_t index,
                            const std::string& binary) {
    running_point r = start_point(out_dir, p, index, binary);
    int status = 0;
    if (r.pid > 0) {
        while (waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    return finish_point(out_dir, p, r, status, binary);
}

int run_local(const plan& p, const run_options& o) {
    std::ostream& log = log_of(o);
    dir_lock lock(o.out_dir);
    remove_stale_work(o.out_dir);
    const std::vector<size_t> todo = pending_points(o.out_dir, p);
    const unsigned jobs = std::max(1u, o.jobs);
    const size_t reused = p.points.size() - todo.size();
    log << "sweep: " << p.points.size() << " point" << (p.points.size() == 1 ? "" : "s");
    if (reused > 0) {
        log << ", " << reused << " already finished";
    }
    log << "; running " << todo.size() << ", " << jobs << " at a time, in " << o.out_dir << "\n";

    size_t next = 0;
    size_t finished = 0;
    size_t failed = 0;
    int stop_signal = 0;
    std::map<pid_t, running_point> running;
    {
        signal_guard signals;
        auto report = [&](const running_point& r, const point_outcome& out) {
            ++finished;
            const point& pt = p.points[r.index];
            log << "sweep: [" << finished << "/" << todo.size() << "] " << pt.id << " "
                << describe_values(p, pt) << ": " << (out.ok ? "ok" : "FAILED") << " ("
                << format_fixed(out.wall_s, 1) << " s)";
            if (!out.ok) {
                ++failed;
                log << ": " << out.error;
            }
            log << "\n" << std::flush;
        };
        // Stops the running points (SIGTERM) and drops their work folders: an unfinished
        // point leaves nothing behind and reruns when the sweep is started again.
        auto stop_all = [&](int sig) {
            stop_signal = sig;
            log << "sweep: " << (sig == SIGINT ? "interrupted" : "terminated") << "; stopping "
                << running.size() << " running point" << (running.size() == 1 ? "" : "s")
                << " (they rerun when the sweep is started again)\n";
            for (const auto& [pid, r] : running) {
                kill(pid, SIGTERM);
            }
            for (auto& [pid, r] : running) {
                int st = 0;
                while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
                }
                std::error_code ec;
                fs::remove_all(r.work, ec);
            }
            running.clear();
        };
        while (stop_signal == 0 && (next < todo.size() || !running.empty())) {
            while (next < todo.size() && running.size() < jobs) {
                running_point r = start_point(o.out_dir, p, todo[next++], o.binary);
                if (r.pid < 0) {
                    report(r, finish_point(o.out_dir, p, r, 0, o.binary));
                } else {
                    running.emplace(r.pid, std::move(r));
                }
            }
            if (running.empty()) {
                continue;
            }
            int status = 0;
            const pid_t pid = waitpid(-1, &status, WNOHANG);
            if (pid > 0) {
                auto it = running.find(pid);
                if (it == running.end()) {
                    continue;  // not one of ours
                }
                running_point r = std::move(it->second);
                running.erase(it);
                // A point killed by the terminal's Ctrl-C is an interruption, not a failure.
                if (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) {
                    std::error_code ec;
                    fs::remove_all(r.work, ec);
                    stop_all(SIGINT);
                    continue;
                }
                report(r, finish_point(o.out_dir, p, r, status, o.binary));
                continue;
            }
            if (pid < 0 && errno != EINTR) {
                break;  // no child left to wait for (someone else reaped them)
            }
            const int s = signals.wait();
            if (s == SIGINT || s == SIGTERM) {
                stop_all(s);
            }
        }
        // A Ctrl-C that reached the points first is still pending for the sweep itself.
        const int pending = signals.drain();
        if (stop_signal == 0 && pending != 0) {
            stop_signal = pending;
        }
    }

    results_summary s;
    try {
        s = write_results_csv(o.out_dir, p);
    } catch (const std::runtime_error& e) {
        throw sweep_dir_error(e.what());
    }
    log << "sweep: " << s.ok << " ok, " << s.failed << " failed";
    if (s.missing > 0) {
        log << ", " << s.missing << " not run";
    }
    log << "; results in " << (fs::path(o.out_dir) / RESULTS_FILE).string() << "\n";
    if (stop_signal != 0) {
        return EXIT_INTERRUPTED;
    }
    return s.failed + s.missing > 0 ? EXIT_POINT_FAILED : EXIT_OK;
}

}  // namespace rnic::sweep
