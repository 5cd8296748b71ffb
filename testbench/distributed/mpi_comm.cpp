// SPDX-License-Identifier: Apache-2.0
// MPI wrapper (mpi_comm.h).
#ifdef RNICSIM_HAVE_MPI

#include "testbench/distributed/mpi_comm.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <mpi.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace rnic::distributed {

namespace {

int g_rank = -1;  // for error messages before/after the communicator is known

void check(int rc, const char* call) {
    if (rc == MPI_SUCCESS) {
        return;
    }
    char text[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw std::runtime_error("rank " + std::to_string(g_rank) + ": " + call +
                             " failed: " + std::string(text, static_cast<size_t>(len)) +
                             " (a peer rank died or its connection was lost)");
}

// Open MPI's process manager (PMIx 4.2 as Debian ships it) talks to this rank's launcher over a
// loopback TCP connection without TCP_NODELAY: at MPI_Finalize the rank sends a few small
// messages in a row, and each after the first waits for the launcher's delayed ACK (40 ms on
// Linux; measured: MPI_Finalize 50 ms, 4 ms with TCP_NODELAY). Sets it on every TCP socket of
// this process (after MPI_Init they are MPI's own); a socket that refuses keeps its setting.
void tcp_nodelay_on_mpi_sockets() {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
        const int fd = std::atoi(e.path().filename().c_str());
        int type = 0;
        socklen_t len = sizeof type;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
            continue;
        }
        sockaddr_storage addr{};
        socklen_t alen = sizeof addr;
        if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0 ||
            (addr.ss_family != AF_INET && addr.ss_family != AF_INET6)) {
            continue;
        }
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
}

}  // namespace

bool mpi_comm::launched_by_mpi() {
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"}) {
        if (std::getenv(v) != nullptr) {
            return true;
        }
    }
    return false;
}

mpi_comm::mpi_comm(int* argc, char*** argv) {
    int provided = 0;
    check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    check(MPI_Comm_rank(MPI_COMM_WORLD, &m_rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &m_size), "MPI_Comm_size");
    g_rank = m_rank;
    tcp_nodelay_on_mpi_sockets();
}

mpi_comm::~mpi_comm() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        MPI_Finalize();
    }
}

uint64_t mpi_comm::min(uint64_t v) const {
    uint64_t out = 0;
    check(MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce(min)");
    return out;
}

uint64_t mpi_comm::sum(uint64_t v) const {
    uint64_t out = 0;
    check(MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce(sum)");
    return out;
}

bool mpi_comm::any(bool v) const {
    int in = v ? 1 : 0;
    int out = 0;
    check(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD), "MPI_Allreduce(or)");
    return out != 0;
}

void mpi_comm::barrier() const {
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

std::vector<uint64_t> mpi_comm::allgather(const std::vector<uint64_t>& mine) const {
    std::vector<uint64_t> all(mine.size() * static_cast<size_t>(m_size));
    check(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                        static_cast<int>(mine.size()), MPI_UINT64_T, MPI_COMM_WORLD),
          "MPI_Allgather");
    return all;
}

std::vector<bytes> mpi_comm::exchange(const std::vector<bytes>& out) const {
    const auto n = static_cast<size_t>(m_size);
    std::vector<int> send_counts(n);
    std::vector<int> recv_counts(n);
    for (size_t r = 0; r < n && r < out.size(); ++r) {
        send_counts[r] = static_cast<int>(out[r].size());
    }
    check(MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT,
                       MPI_COMM_WORLD),
          "MPI_Alltoall");
    return exchange(out, std::vector<uint64_t>(recv_counts.begin(), recv_counts.end()));
}

std::vector<bytes> mpi_comm::exchange(const std::vector<bytes>& out,
                                      const std::vector<uint64_t>& in_sizes) const {
    const auto n = static_cast<size_t>(m_size);
    if (out.size() != n || in_sizes.size() != n) {
        throw std::logic_error("mpi_comm::exchange: one buffer per rank expected");
    }
    std::vector<int> send_counts(n), recv_counts(n), send_displs(n), recv_displs(n);
    int total_out = 0;
    for (size_t r = 0; r < n; ++r) {
        send_counts[r] = static_cast<int>(out[r].size());
        send_displs[r] = total_out;
        total_out += send_counts[r];
        recv_counts[r] = static_cast<int>(in_sizes[r]);
    }
    int total_in = 0;
    for (size_t r = 0; r < n; ++r) {
        recv_displs[r] = total_in;
        total_in += recv_counts[r];
    }
    bytes send(static_cast<size_t>(total_out));
    for (size_t r = 0; r < n; ++r) {
        std::copy(out[r].begin(), out[r].end(), send.begin() + send_displs[r]);
    }
    bytes recv(static_cast<size_t>(total_in));
    check(MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), MPI_BYTE, recv.data(),
                        recv_counts.data(), recv_displs.data(), MPI_BYTE, MPI_COMM_WORLD),
          "MPI_Alltoallv");
    std::vector<bytes> in(n);
    for (size_t r = 0; r < n; ++r) {
        in[r].assign(recv.begin() + recv_displs[r], recv.begin() + recv_displs[r] + recv_counts[r]);
    }
    return in;
}

void mpi_comm::round(const std::vector<uint64_t>& header, std::vector<bytes>& out,
                     round_result& res) const {
    constexpr int TAG = 23;
    const auto n = static_cast<size_t>(m_size);
    const size_t hbytes = header_bytes(header);
    if (out.size() != n) {
        throw std::logic_error("mpi_comm::round: one buffer per rank expected");
    }
    std::vector<MPI_Request> reqs;
    reqs.reserve(n);
    for (size_t r = 0; r < n; ++r) {
        if (static_cast<int>(r) == m_rank) {
            continue;
        }
        bytes& m = out[r];
        if (m.size() < hbytes) {
            throw std::logic_error("mpi_comm::round: no room for the header");
        }
        std::memcpy(m.data(), header.data(), hbytes);
        reqs.emplace_back();
        check(MPI_Isend(m.data(), static_cast<int>(m.size()), MPI_BYTE, static_cast<int>(r), TAG,
                        MPI_COMM_WORLD, &reqs.back()),
              "MPI_Isend(window)");
    }
    res.headers.resize(header.size() * n);
    res.in.resize(n);
    std::copy(header.begin(), header.end(),
              res.headers.begin() + static_cast<std::ptrdiff_t>(header.size()) * m_rank);
    res.in[static_cast<size_t>(m_rank)].clear();
    for (size_t r = 0; r < n; ++r) {
        if (static_cast<int>(r) == m_rank) {
            continue;
        }
        MPI_Status st;
        check(MPI_Probe(static_cast<int>(r), TAG, MPI_COMM_WORLD, &st), "MPI_Probe(window)");
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        bytes& buf = res.in[r];
        buf.resize(static_cast<size_t>(count));
        check(MPI_Recv(buf.data(), count, MPI_BYTE, static_cast<int>(r), TAG, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE),
              "MPI_Recv(window)");
        if (static_cast<size_t>(count) < hbytes) {
            throw std::runtime_error("rank " + std::to_string(m_rank) +
                                     ": short window message from rank " + std::to_string(r));
        }
        std::memcpy(res.headers.data() + header.size() * r, buf.data(), hbytes);
    }
    check(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE),
          "MPI_Waitall(window)");
}

std::vector<bytes> mpi_comm::gather(const bytes& mine) const {
    const auto n = static_cast<size_t>(m_size);
    uint64_t len = mine.size();
    std::vector<uint64_t> lens(m_rank == 0 ? n : 0);
    check(MPI_Gather(&len, 1, MPI_UINT64_T, lens.data(), 1, MPI_UINT64_T, 0, MPI_COMM_WORLD),
          "MPI_Gather(sizes)");
    std::vector<bytes> all(m_rank == 0 ? n : 0);
    if (m_rank != 0) {
        // Point to point: a result may exceed MPI_Gatherv's int displacements.
        check(MPI_Send(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, 0, 17, MPI_COMM_WORLD),
              "MPI_Send(result)");
        return all;
    }
    all[0] = mine;
    for (size_t r = 1; r < n; ++r) {
        all[r].resize(lens[r]);
        check(MPI_Recv(all[r].data(), static_cast<int>(lens[r]), MPI_BYTE, static_cast<int>(r), 17,
                       MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv(result)");
    }
    return all;
}

void mpi_comm::broadcast(bytes& b) const {
    uint64_t len = b.size();
    check(MPI_Bcast(&len, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast(size)");
    b.resize(len);
    check(MPI_Bcast(b.data(), static_cast<int>(len), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

void mpi_comm::abort(int code) const {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::abort();
}

}  // namespace rnic::distributed

#endif  // RNICSIM_HAVE_MPI
