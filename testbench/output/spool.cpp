// SPDX-License-Identifier: Apache-2.0
// Rank spools and their k-way merge on rank 0.
#include "testbench/output/spool.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <unistd.h>

#ifdef RNICSIM_HAVE_MPI
#include "testbench/distributed/mpi_comm.h"
#endif

namespace rnic::output {

namespace {

[[noreturn]] void fail(const char* what, int err) {
    std::string msg = std::string("record_spool: ") + what;
    if (err != 0) {
        msg += ": ";
        msg += std::strerror(err);
    }
    throw std::runtime_error(msg);
}

// One rank's records as rank 0 reads them: the current chunk and where in it.
struct cursor {
    std::vector<uint8_t> buf;
    size_t at = 0;
    bool done = false;  // the rank's spool is used up

    bool empty() const { return at >= buf.size(); }
    uint32_t len() const {
        uint32_t n;
        std::memcpy(&n, buf.data() + at, 4);
        return n;
    }
    const uint8_t* data() const { return buf.data() + at + 4; }
    void next() { at += 4 + len(); }
};

// Hands the least record of the cursors to `sink` while every unfinished cursor holds one.
// Returns false when a cursor needs its next chunk, true when every cursor is done.
bool merge_some(std::vector<cursor>& c, const record_less& less, const record_sink& sink) {
    for (;;) {
        int best = -1;
        for (size_t r = 0; r < c.size(); ++r) {
            if (c[r].done) {
                continue;
            }
            if (c[r].empty()) {
                return false;
            }
            if (best < 0 || less(c[r].data(), c[r].len(), c[static_cast<size_t>(best)].data(),
                                 c[static_cast<size_t>(best)].len())) {
                best = static_cast<int>(r);
            }
        }
        if (best < 0) {
            return true;
        }
        cursor& b = c[static_cast<size_t>(best)];
        sink(b.data(), b.len());
        b.next();
    }
}

}  // namespace

record_spool::record_spool() {
    // In $TMPDIR (else /tmp), unlinked at once: the file goes with the process, however it ends.
    const char* dir = std::getenv("TMPDIR");
    std::string path =
        std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/rnicsim-spool-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) {
        fail(("cannot create a temporary file in " + path.substr(0, path.rfind('/'))).c_str(),
             errno);
    }
    ::unlink(path.c_str());
    m_file = ::fdopen(fd, "w+b");
    if (m_file == nullptr) {
        const int err = errno;
        ::close(fd);
        fail("cannot open a temporary file", err);
    }
    std::setvbuf(m_file, nullptr, _IOFBF, size_t{1} << 20);
}

record_spool::~record_spool() {
    if (m_file != nullptr) {
        std::fclose(m_file);
    }
}

void record_spool::append(const uint8_t* data, size_t len) {
    if (m_reading) {
        fail("append after rewind", 0);
    }
    if (len > UINT32_MAX) {
        fail("a record longer than 4 GiB", 0);
    }
    const auto n = static_cast<uint32_t>(len);
    if (std::fwrite(&n, 4, 1, m_file) != 1 ||
        (len > 0 && std::fwrite(data, 1, len, m_file) != len)) {
        fail("cannot write the temporary file", errno);
    }
    ++m_records;
}

void record_spool::rewind() {
    if (std::fflush(m_file) != 0 || std::fseek(m_file, 0, SEEK_SET) != 0) {
        fail("cannot rewind the temporary file", errno);
    }
    m_reading = true;
}

bool record_spool::read_chunk(std::vector<uint8_t>& out, size_t min_bytes) {
    if (!m_reading) {
        rewind();
    }
    const size_t start = out.size();
    while (out.size() - start < min_bytes) {
        uint32_t n;
        if (std::fread(&n, 4, 1, m_file) != 1) {
            if (std::ferror(m_file)) {
                fail("cannot read the temporary file", errno);
            }
            break;  // end of the spool
        }
        const size_t at = out.size();
        out.resize(at + 4 + n);
        std::memcpy(out.data() + at, &n, 4);
        if (n > 0 && std::fread(out.data() + at + 4, 1, n, m_file) != n) {
            fail("the temporary file ends inside a record", errno);
        }
    }
    return out.size() > start;
}

void drain(record_spool& spool, const record_sink& sink) {
    std::vector<cursor> c(1);
    for (;;) {
        c[0].buf.clear();
        c[0].at = 0;
        if (!spool.read_chunk(c[0].buf, size_t{1} << 20)) {
            return;
        }
        while (!c[0].empty()) {
            sink(c[0].data(), c[0].len());
            c[0].next();
        }
    }
}

void merge_local(const std::vector<record_spool*>& spools, const record_less& less,
                 const record_sink& sink) {
    std::vector<cursor> c(spools.size());
    for (;;) {
        for (size_t r = 0; r < c.size(); ++r) {
            if (!c[r].done && c[r].empty()) {
                c[r].buf.clear();
                c[r].at = 0;
                c[r].done = !spools[r]->read_chunk(c[r].buf, size_t{1} << 20);
            }
        }
        if (merge_some(c, less, sink)) {
            return;
        }
    }
}

#ifdef RNICSIM_HAVE_MPI
void merge_spools(const distributed::mpi_comm& comm, record_spool& mine, const record_less& less,
                  const record_sink& sink, size_t chunk_bytes) {
    const auto n = static_cast<size_t>(comm.size());
    const auto me = static_cast<size_t>(comm.rank());
    if (me != 0) {
        // Serve rank 0's requests: a mask with one byte per rank (non-zero: send a chunk), or
        // an empty one when the merge is done.
        for (;;) {
            distributed::bytes mask;
            comm.broadcast(mask);
            if (mask.empty()) {
                return;
            }
            distributed::bytes chunk;
            if (mask.size() != n) {
                throw std::runtime_error("merge_spools: a request of " +
                                         std::to_string(mask.size()) + " bytes for " +
                                         std::to_string(n) + " ranks");
            }
            if (mask[me] != 0) {
                mine.read_chunk(chunk, chunk_bytes);  // empty: used up
            }
            comm.gather(chunk);
        }
    }
    std::vector<cursor> c(n);
    for (;;) {
        if (!c[0].done && c[0].empty()) {
            c[0].buf.clear();
            c[0].at = 0;
            c[0].done = !mine.read_chunk(c[0].buf, chunk_bytes);
        }
        distributed::bytes mask(n, 0);
        bool ask = false;
        for (size_t r = 1; r < n; ++r) {
            if (!c[r].done && c[r].empty()) {
                mask[r] = 1;
                ask = true;
            }
        }
        if (ask) {
            comm.broadcast(mask);
            auto got = comm.gather({});
            for (size_t r = 1; r < n; ++r) {
                if (mask[r] != 0) {
                    c[r].buf = std::move(got[r]);
                    c[r].at = 0;
                    c[r].done = c[r].buf.empty();
                }
            }
            continue;
        }
        if (merge_some(c, less, sink)) {
            break;
        }
    }
    distributed::bytes done;
    comm.broadcast(done);
}
#endif

}  // namespace rnic::output
