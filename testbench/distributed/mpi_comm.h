// SPDX-License-Identifier: Apache-2.0
// A thin wrapper over MPI for the partitioned run (README.md): start-up and shutdown, rank and
// size, the collectives of the conservative window loop, the exchange of cut-link frames, and
// the gather of every rank's result to rank 0. Compiled only when RNICSIM_HAVE_MPI is defined;
// everything here is blocking and called by every rank in the same order.
#pragma once

#ifdef RNICSIM_HAVE_MPI

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rnic::distributed {

using bytes = std::vector<uint8_t>;

class mpi_comm {
public:
    // True when this process was started by mpirun/mpiexec (Open MPI's OMPI_COMM_WORLD_SIZE)
    // or by srun with PMI/PMIx (PMI_SIZE, PMIX_RANK): then MPI is initialised even without
    // --ranks.
    static bool launched_by_mpi();

    // MPI_Init (once per process; MPI_THREAD_FUNNELED: only the simulation thread calls MPI).
    // Errors are returned (MPI_ERRORS_RETURN) and thrown as std::runtime_error naming the call
    // and this rank, so a lost peer ends this rank with a clear message.
    mpi_comm(int* argc, char*** argv);
    ~mpi_comm();  // MPI_Finalize
    mpi_comm(const mpi_comm&) = delete;
    mpi_comm& operator=(const mpi_comm&) = delete;

    int rank() const { return m_rank; }
    int size() const { return m_size; }

    // Window collectives: every rank's value in, the minimum / sum / logical or out.
    uint64_t min(uint64_t v) const;
    uint64_t sum(uint64_t v) const;
    bool any(bool v) const;
    void barrier() const;

    // Personalised exchange: out[r] goes to rank r (out.size() == size(); out[rank()] is
    // handed back as is); returns in[r], what rank r sent here. Sizes first, then the bytes.
    std::vector<bytes> exchange(const std::vector<bytes>& out) const;

    // Every rank's `mine` (the same length on every rank), in rank order, on every rank.
    std::vector<uint64_t> allgather(const std::vector<uint64_t>& mine) const;
    // exchange() when every rank already knows what it receives: in_sizes[r] bytes from rank r.
    std::vector<bytes> exchange(const std::vector<bytes>& out,
                                const std::vector<uint64_t>& in_sizes) const;

    // One round of the window loop, point to point: `header` (the same length on every rank)
    // and a payload go to every other rank r in one message, out[r] as it is: its first
    // header_bytes(header) bytes are room for the header (round writes it there), the payload
    // follows. Fills res.headers with every rank's header (in rank order, this rank's own
    // included) and res.in[r] with the message rank r sent here (its payload from byte
    // header_bytes on; empty for this rank). One message each way per pair of ranks: a single
    // round trip, where allgather + exchange take two. `out` and `res` keep their buffers from
    // round to round (no allocation once they have grown).
    struct round_result {
        std::vector<uint64_t> headers;
        std::vector<bytes> in;
    };
    static std::size_t header_bytes(const std::vector<uint64_t>& header) {
        return header.size() * sizeof(uint64_t);
    }
    void round(const std::vector<uint64_t>& header, std::vector<bytes>& out,
               round_result& res) const;

    // Gather to rank 0: on rank 0 every rank's buffer in rank order; empty elsewhere.
    std::vector<bytes> gather(const bytes& mine) const;
    // Broadcast from rank 0: `b` on rank 0 becomes every rank's `b`.
    void broadcast(bytes& b) const;

    // Ends every rank at once (MPI_Abort): for a rank that cannot go on.
    [[noreturn]] void abort(int code) const;

private:
    int m_rank = 0;
    int m_size = 1;
};

}  // namespace rnic::distributed

#endif  // RNICSIM_HAVE_MPI
