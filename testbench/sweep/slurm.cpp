// SPDX-License-Identifier: Apache-2.0
// sbatch job-array script, submission and the dependent collect job.
#include "testbench/sweep/slurm.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "testbench/sweep/results.h"
#include "testbench/sweep/runner.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace rnic::sweep {

namespace fs = std::filesystem;

namespace {

struct command_result {
    int exit_code = -1;  // -1: could not start, or killed
    std::string out;     // its stdout
    std::string error;   // why it could not start
};

// Runs a command found on PATH with stdout captured; stderr goes to ours (sbatch's messages).
command_result run_command(const std::vector<std::string>& args) {
    command_result res;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        res.error = std::string("pipe: ") + std::strerror(errno);
        return res;
    }
    std::vector<char*> argv;
    for (const auto& a : args) {
        argv.push_back(const_cast<char*>(a.c_str()));
    }
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, args[0].c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        res.error = "cannot run " + args[0] + ": " + std::strerror(rc);
        return res;
    }
    char buf[4096];
    while (true) {
        const ssize_t n = read(fds[0], buf, sizeof buf);
        if (n > 0) {
            res.out.append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
            break;
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return res;
}

// sbatch --parsable prints "<jobid>[;<cluster>]".
std::string parse_job_id(const std::string& out) {
    std::string line = out.substr(0, out.find('\n'));
    line = line.substr(0, line.find(';'));
    const size_t a = line.find_first_not_of(" \t\r");
    const size_t b = line.find_last_not_of(" \t\r");
    return a == std::string::npos ? std::string() : line.substr(a, b - a + 1);
}

}  // namespace

std::string shell_quote(const std::string& s) {
    if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789_-./=:,+@%") == std::string::npos) {
        return s;
    }
    std::string q = "'";
    for (char c : s) {
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return q + "'";
}

std::string self_executable() {
    char buf[PATH_MAX];
    const ssize_t n = readlink(SELF_EXE, buf, sizeof buf - 1);
    if (n <= 0) {
        throw std::runtime_error(std::string(SELF_EXE) + ": cannot read: " + std::strerror(errno));
    }
    std::string path(buf, static_cast<size_t>(n));
    const std::string deleted = " (deleted)";
    if (path.size() > deleted.size() &&
        path.compare(path.size() - deleted.size(), deleted.size(), deleted) == 0) {
        throw std::runtime_error(path.substr(0, path.size() - deleted.size()) +
                                 " was replaced since this rnicsim started; run the new one");
    }
    return path;
}

std::string array_spec(const std::vector<size_t>& indices, unsigned max_parallel) {
    std::string s;
    for (size_t i = 0; i < indices.size();) {
        size_t j = i;
        while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) {
            ++j;
        }
        s += (s.empty() ? "" : ",") + std::to_string(indices[i]);
        if (j > i) {
            s += "-" + std::to_string(indices[j]);
        }
        i = j + 1;
    }
    if (max_parallel > 0) {
        s += "%" + std::to_string(max_parallel);
    }
    return s;
}

std::string make_sbatch_script(const plan& p, const std::vector<size_t>& indices,
                               const slurm_options& o) {
    const std::string dir = fs::absolute(o.out_dir).lexically_normal().string();
    const std::string logs = (fs::path(dir) / SLURM_LOG_DIR).string();
    std::ostringstream s;
    s << "#!/bin/bash\n"
      << "# Written by `rnicsim sweep --backend slurm`: one array task per point of\n"
      << "#   " << (p.sweep_file.empty() ? p.base : p.sweep_file) << "\n"
      << "# (" << indices.size() << " of " << p.points.size()
      << " points; the task id is the point's index in " << PLAN_FILE << ").\n"
      << "# Submit again with `sbatch " << shell_quote((fs::path(dir) / SBATCH_FILE).string())
      << "`;\n"
      << "# `" << shell_quote(o.binary) << " sweep collect " << shell_quote(dir)
      << "` writes results.csv.\n"
      << "#SBATCH --job-name=" << o.job_name << "\n"
      << "#SBATCH --array=" << array_spec(indices, o.max_parallel) << "\n"
      << "#SBATCH --ntasks=1\n"
      << "#SBATCH --cpus-per-task=1\n"
      << "#SBATCH --output=" << logs << "/%A_%a.out\n"
      << "set -eu\n"
      << "exec " << shell_quote(o.binary) << " sweep point " << shell_quote(dir)
      << " \"$SLURM_ARRAY_TASK_ID\"\n";
    return s.str();
}

int run_slurm(const plan& p, const slurm_options& o) {
    std::ostream& out = o.out != nullptr ? *o.out : std::cout;
    std::ostream& log = o.log != nullptr ? *o.log : std::cerr;
    const std::string dir = fs::absolute(o.out_dir).lexically_normal().string();
    const std::vector<size_t> todo = pending_points(dir, p);
    if (todo.empty()) {
        const results_summary s = write_results_csv(dir, p);
        log << "sweep: all " << s.ok << " points already finished; results in "
            << (fs::path(dir) / RESULTS_FILE).string() << "\n";
        return EXIT_OK;
    }
    std::error_code ec;
    fs::create_directories(fs::path(dir) / SLURM_LOG_DIR, ec);
    const std::string script_file = (fs::path(dir) / SBATCH_FILE).string();
    const std::string script = make_sbatch_script(p, todo, o);
    write_file_atomic(script_file, script);
    chmod(script_file.c_str(), 0755);

    std::vector<std::string> cmd = {"sbatch", "--parsable"};
    if (o.wait) {
        cmd.push_back("--wait");
    }
    cmd.insert(cmd.end(), o.sbatch_args.begin(), o.sbatch_args.end());
    cmd.push_back(script_file);

    if (o.dry_run) {
        out << script;
        std::string line;
        for (const auto& a : cmd) {
            line += (line.empty() ? "" : " ") + shell_quote(a);
        }
        log << "sweep: wrote " << script_file << " (" << todo.size()
            << " points); not submitted (--dry-run). Submit with: " << line << "\n";
        return EXIT_OK;
    }

    log << "sweep: submitting " << todo.size() << " of " << p.points.size()
        << " points as a Slurm job array (" << script_file << ")\n";
    const command_result sub = run_command(cmd);
    const std::string job = parse_job_id(sub.out);
    if (!sub.error.empty() || job.empty()) {
        log << "sweep: sbatch failed"
            << (sub.error.empty() ? " (exit " + std::to_string(sub.exit_code) + ")"
                                  : ": " + sub.error)
            << "\n";
        return EXIT_POINT_FAILED;
    }
    out << job << "\n" << std::flush;

    if (o.wait) {
        // sbatch --wait returns when every task has ended; its exit code is non-zero when
        // one failed, which results.csv tells in detail.
        const results_summary s = write_results_csv(dir, p);
        log << "sweep: job " << job << " ended: " << s.ok << " ok, " << s.failed << " failed";
        if (s.missing > 0) {
            log << ", " << s.missing << " not run";
        }
        log << "; results in " << (fs::path(dir) / RESULTS_FILE).string() << "\n";
        return s.failed + s.missing > 0 ? EXIT_POINT_FAILED : EXIT_OK;
    }

    std::vector<std::string> collect = {
        "sbatch",
        "--parsable",
        "--job-name=" + o.job_name + "-collect",
        "--dependency=afterany:" + job,
        "--ntasks=1",
        "--output=" + (fs::path(dir) / SLURM_LOG_DIR / "collect_%j.out").string()};
    collect.insert(collect.end(), o.sbatch_args.begin(), o.sbatch_args.end());
    collect.push_back("--wrap=exec " + shell_quote(o.binary) + " sweep collect " +
                      shell_quote(dir));
    const command_result col = run_command(collect);
    const std::string collect_job = parse_job_id(col.out);
    log << "sweep: submitted job array " << job;
    if (!collect_job.empty()) {
        log << " and collect job " << collect_job << " (results.csv when the array ends)";
    } else {
        log << "; the collect job could not be submitted, run `rnicsim sweep collect " << dir
            << "` when the array has ended";
    }
    log << "; follow with `squeue -j " << job << "`\n";
    return EXIT_OK;
}

}  // namespace rnic::sweep
