// SPDX-License-Identifier: Apache-2.0
// A one-node Slurm cluster for tests (label slurm): munged with a fresh key, slurmctld and slurmd
// with a generated slurm.conf, everything in a temporary folder on localhost, stopped and
// removed afterwards; and the shell helpers those tests use. local_slurm::unavailable says why
// the cluster could not start (slurm-wlm or munge missing, or not root): the test skips.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "testbench/common/cli_run.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

namespace rnic::test_slurm {

namespace fs = std::filesystem;

using rnic::testing::binary_dir;
using rnic::testing::quote;
using rnic::testing::read_file;
using rnic::testing::source_dir;

// A program of slurm-wlm or munge: on PATH, else in the sbin folders a non-login PATH lacks.
inline std::string find_program(const std::string& name) {
    std::string path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
    path += ":/usr/sbin:/sbin:/usr/local/sbin";
    std::istringstream in(path);
    std::string dir;
    while (std::getline(in, dir, ':')) {
        const fs::path p = fs::path(dir.empty() ? "." : dir) / name;
        if (access(p.c_str(), X_OK) == 0) {
            return p.string();
        }
    }
    return "";
}

// A TCP port on 127.0.0.1 that nothing listens on right now.
inline int free_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
        port = ntohs(a.sin_port);
    }
    close(fd);
    return port;
}

struct cmd_result {
    int exit_code = -1;
    std::string out;
    std::string err;
};

// Runs a shell command line with stdout/stderr captured in `dir`.
inline cmd_result shell(const std::string& dir, const std::string& cmd) {
    const std::string out = dir + "/.stdout";
    const std::string err = dir + "/.stderr";
    const int status =
        std::system((cmd + " </dev/null >" + quote(out) + " 2>" + quote(err)).c_str());
    cmd_result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(out);
    r.err = read_file(err);
    return r;
}

// Polls `ready` every 100 ms until it holds or `seconds` pass: daemons coming up.
inline bool wait_until(const std::function<bool()>& ready, double seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
        if (ready()) {
            return true;
        }
        const timespec step{0, 100 * 1000 * 1000};
        nanosleep(&step, nullptr);
    }
    return ready();
}

// munged + slurmctld + slurmd on localhost, in a temporary folder, for one test.
class local_slurm {
public:
    // Empty when the cluster could start, else why not (the test is skipped with it).
    std::string unavailable;
    std::string dir;
    std::string conf;

    local_slurm() {
        if (geteuid() != 0) {
            unavailable = "needs root to start slurmctld, slurmd and munged";
            return;
        }
        for (const char* p : {"munged", "mungekey", "munge", "slurmctld", "slurmd", "sbatch",
                              "scontrol", "sinfo", "scancel"}) {
            m_bin[p] = find_program(p);
            if (m_bin[p].empty()) {
                unavailable = std::string(p) +
                              " not found: install Debian's slurm-wlm and munge "
                              "(apt-get install slurm-wlm munge)";
                return;
            }
        }
        std::string t = (fs::temp_directory_path() / "rnic_slurm_XXXXXX").string();
        dir = mkdtemp(t.data());
        // munged insists that everyone may reach its socket's folder.
        chmod(dir.c_str(), 0755);
        start();
    }

    ~local_slurm() { stop(); }

    local_slurm(const local_slurm&) = delete;
    local_slurm& operator=(const local_slurm&) = delete;

    // Logs of the daemons, for a failure message.
    std::string logs() const {
        std::string s;
        for (const char* f :
             {"munged.log", "slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"}) {
            s += std::string("--- ") + f + "\n" + read_file(fs::path(dir) / f);
        }
        return s;
    }

private:
    void start() {
        const std::string key = dir + "/munge.key";
        const std::string socket = dir + "/munge.socket";
        if (shell(dir, quote(m_bin["mungekey"]) + " -c -k " + quote(key)).exit_code != 0) {
            unavailable = "mungekey could not create a key";
            return;
        }
        spawn({m_bin["munged"], "-F", "--key-file=" + key, "--socket=" + socket,
               "--pid-file=" + dir + "/munged.pid", "--log-file=" + dir + "/munged.log",
               "--seed-file=" + dir + "/munged.seed"},
              dir + "/munged.out");
        const std::string check = quote(m_bin["munge"]) + " -n -S " + quote(socket);
        if (!wait_until([&] { return shell(dir, check).exit_code == 0; }, 20)) {
            unavailable = "munged did not start:\n" + read_file(dir + "/munged.out");
            return;
        }

        char host[256] = {};
        gethostname(host, sizeof host - 1);
        std::string hostname(host);
        hostname = hostname.substr(0, hostname.find('.'));
        fs::create_directories(dir + "/state");
        fs::create_directories(dir + "/spool");
        conf = dir + "/slurm.conf";
        std::ofstream(conf) << "ClusterName=rnicsimtest\n"
                            << "SlurmctldHost=" << hostname << "(127.0.0.1)\n"
                            << "SlurmctldPort=" << free_port() << "\n"
                            << "SlurmdPort=" << free_port() << "\n"
                            << "AuthType=auth/munge\nCredType=cred/munge\n"
                            << "AuthInfo=socket=" << socket << "\n"
                            << "SlurmUser=root\nSlurmdUser=root\n"
                            << "StateSaveLocation=" << dir << "/state\n"
                            << "SlurmdSpoolDir=" << dir << "/spool\n"
                            << "SlurmctldPidFile=" << dir << "/slurmctld.pid\n"
                            << "SlurmdPidFile=" << dir << "/slurmd.pid\n"
                            << "SlurmctldLogFile=" << dir << "/slurmctld.log\n"
                            << "SlurmdLogFile=" << dir << "/slurmd.log\n"
                            << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                            << "JobAcctGatherType=jobacct_gather/none\n"
                            << "AccountingStorageType=accounting_storage/none\n"
                            << "SchedulerType=sched/builtin\n"
                            << "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
                            << "ReturnToService=2\nMpiDefault=none\nMailProg=/bin/true\n"
                            << "NodeName=rnicsimnode NodeHostname=" << hostname
                            << " NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN\n"
                            << "PartitionName=debug Nodes=rnicsimnode Default=YES "
                            << "MaxTime=INFINITE State=UP\n";
        setenv("SLURM_CONF", conf.c_str(), 1);
        spawn({m_bin["slurmctld"], "-D", "-i", "-f", conf}, dir + "/slurmctld.out");
        spawn({m_bin["slurmd"], "-D", "-N", "rnicsimnode", "-f", conf}, dir + "/slurmd.out");
        const std::string sinfo = quote(m_bin["sinfo"]) + " -h -N -o %T";
        if (!wait_until([&] { return shell(dir, sinfo).out.rfind("idle", 0) == 0; }, 60)) {
            unavailable = "the Slurm node did not come up idle:\n" + logs();
        }
    }

    void spawn(const std::vector<std::string>& args, const std::string& log) {
        std::vector<char*> argv;
        for (const auto& a : args) {
            argv.push_back(const_cast<char*>(a.c_str()));
        }
        argv.push_back(nullptr);
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(),
                                         O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
        pid_t pid = -1;
        if (posix_spawn(&pid, args[0].c_str(), &fa, nullptr, argv.data(), environ) == 0) {
            m_pids.push_back(pid);
        }
        posix_spawn_file_actions_destroy(&fa);
    }

    void stop() {
        if (!conf.empty() && !m_bin["scancel"].empty()) {
            shell(dir, quote(m_bin["scancel"]) + " --user=root");
        }
        // slurmd, slurmctld, munged: in reverse order of starting, each given 10 s.
        for (auto it = m_pids.rbegin(); it != m_pids.rend(); ++it) {
            kill(*it, SIGTERM);
            int status = 0;
            if (!wait_until([&] { return waitpid(*it, &status, WNOHANG) == *it; }, 10)) {
                kill(*it, SIGKILL);
                waitpid(*it, &status, 0);
            }
        }
        m_pids.clear();
        if (!conf.empty()) {
            unsetenv("SLURM_CONF");
        }
        if (!dir.empty()) {
            std::error_code ec;
            fs::remove_all(dir, ec);
        }
    }

    std::map<std::string, std::string> m_bin;
    std::vector<pid_t> m_pids;
};

}  // namespace rnic::test_slurm
