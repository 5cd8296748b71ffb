// SPDX-License-Identifier: Apache-2.0
// `rnicsim sweep --backend slurm` on a real one-node Slurm cluster started here: munged with a
// fresh key, slurmctld and slurmd with a generated slurm.conf, everything in a temporary folder
// on localhost, stopped and removed afterwards. Skipped (with the reason) where Slurm cannot
// start: slurm-wlm or munge missing, or not root.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string source_dir() {
    const char* d = std::getenv("RNICSIM_SOURCE_DIR");
    return d != nullptr ? d : fs::path(__FILE__).parent_path().parent_path().parent_path().string();
}
std::string binary_dir() {
    const char* d = std::getenv("RNICSIM_BINARY_DIR");
    return d != nullptr ? d : fs::read_symlink("/proc/self/exe").parent_path().string();
}

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) {
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    }
    return q + "'";
}

// A program of slurm-wlm or munge: on PATH, else in the sbin folders a non-login PATH lacks.
std::string find_program(const std::string& name) {
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
int free_port() {
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
cmd_result shell(const std::string& dir, const std::string& cmd) {
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
bool wait_until(const std::function<bool()>& ready, double seconds) {
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

std::vector<std::map<std::string, std::string>> read_csv(const fs::path& file) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(read_file(file));
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> row;
        std::string field;
        bool quoted = false;
        for (char c : line) {
            if (c == '"') {
                quoted = !quoted;
            } else if (c == ',' && !quoted) {
                row.push_back(field);
                field.clear();
            } else {
                field += c;
            }
        }
        row.push_back(field);
        rows.push_back(row);
    }
    std::vector<std::map<std::string, std::string>> out;
    for (size_t r = 1; r < rows.size(); ++r) {
        std::map<std::string, std::string> m;
        for (size_t c = 0; c < rows[0].size() && c < rows[r].size(); ++c) {
            m[rows[0][c]] = rows[r][c];
        }
        out.push_back(m);
    }
    return out;
}

void expect_rows_match_stats(const fs::path& out) {
    const auto rows = read_csv(out / "results.csv");
    ASSERT_EQ(rows.size(), 3u);
    for (size_t i = 0; i < rows.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(rows[i].at("status"), "ok") << rows[i].at("error");
        const json stats =
            json::parse(read_file(out / "points" / rows[i].at("point") / "stats.json"));
        EXPECT_EQ(json::parse(rows[i].at("goodput_gbps")), stats.at("summary").at("goodput_gbps"));
        EXPECT_EQ(json::parse(rows[i].at("latency_p99_ns")),
                  stats.at("summary").at("latency_ns").at("p99"));
        EXPECT_EQ(json::parse(rows[i].at("packets")), stats.at("sim").at("packets"));
        EXPECT_EQ(json::parse(rows[i].at("messages")), 32);
    }
}

TEST(SweepSlurmCluster, RunsASweepAsAJobArray) {
    local_slurm cluster;
    if (!cluster.unavailable.empty()) {
        GTEST_SKIP() << "Slurm cluster not available: " << cluster.unavailable;
    }
    const std::string rnicsim = binary_dir() + "/rnicsim";
    ASSERT_TRUE(fs::exists(rnicsim)) << rnicsim << " is not built";
    const std::string work = cluster.dir + "/work";
    fs::create_directories(work);
    const std::string sweep = work + "/sweep.json";
    std::ofstream(sweep) << R"({"base": ")" << source_dir() << R"(/configs/quickstart.json",
      "set": {"workload.messages": 32},
      "parameters": [{"path": "workload.operation", "values": ["write", "read", "send"]}]})";
    const fs::path out = work + "/out";

    // --wait: sbatch --wait on the array, then results.csv here.
    const cmd_result r = shell(work, quote(rnicsim) + " sweep " + quote(sweep) + " --out " +
                                         quote(out.string()) + " --backend slurm --wait --jobs 2");
    ASSERT_EQ(r.exit_code, 0) << r.err << cluster.logs();
    EXPECT_NE(r.err.find("3 ok, 0 failed"), std::string::npos) << r.err;
    EXPECT_NE(read_file(out / "sweep.sbatch").find("#SBATCH --array=0-2%2\n"), std::string::npos);
    expect_rows_match_stats(out);
    // Each array task logged into DIR/slurm/.
    size_t task_logs = 0;
    for (const auto& e : fs::directory_iterator(out / "slurm")) {
        task_logs += e.path().extension() == ".out";
    }
    EXPECT_EQ(task_logs, 3u);

    // Resume through the cluster: only the missing point is submitted, and the dependent
    // collect job rewrites results.csv when the array has ended.
    fs::remove_all(out / "points" / "0001");
    fs::remove(out / "results.csv");
    const cmd_result sub = shell(work, quote(rnicsim) + " sweep " + quote(sweep) + " --out " +
                                           quote(out.string()) + " --backend slurm");
    ASSERT_EQ(sub.exit_code, 0) << sub.err << cluster.logs();
    EXPECT_NE(read_file(out / "sweep.sbatch").find("#SBATCH --array=1\n"), std::string::npos);
    const std::string array_job = sub.out.substr(0, sub.out.find('\n'));
    ASSERT_FALSE(array_job.empty()) << sub.err;
    EXPECT_NE(sub.err.find("collect job"), std::string::npos) << sub.err;
    // A job that can only start after the collect job has ended (afterany on everything
    // submitted so far); sbatch --wait returns when it has run.
    const cmd_result wait = shell(work,
                                  "sbatch --wait --dependency=singleton "
                                  "--job-name=rnicsim-sweep-collect --output=/dev/null "
                                  "--wrap=true");
    EXPECT_EQ(wait.exit_code, 0) << wait.err;
    ASSERT_TRUE(fs::exists(out / "results.csv")) << cluster.logs();
    expect_rows_match_stats(out);
}

}  // namespace
