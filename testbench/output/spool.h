// SPDX-License-Identifier: Apache-2.0
// A rank's records on disk, in their file's order, and the merge of every rank's spool on rank 0:
// how a partitioned run writes wire.pcap and waves.vcd without holding them in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

namespace rnic::distributed {
class mpi_comm;
}

namespace rnic::output {

// Length-prefixed records appended to an anonymous temporary file (in $TMPDIR, else /tmp, on the
// rank's own machine; unlinked at creation, so it goes when the process ends, also by a
// signal), then read back once from the start, in chunks of whole records.
class record_spool {
public:
    // Throws std::runtime_error naming the folder when no temporary file can be created.
    record_spool();
    ~record_spool();
    record_spool(const record_spool&) = delete;
    record_spool& operator=(const record_spool&) = delete;

    // Appends one record. Throws std::runtime_error on a write error (a full disk) or after
    // rewind().
    void append(const uint8_t* data, size_t len);
    // Ends writing; reading starts at the first record.
    void rewind();
    // Appends whole records (each as its 4-byte length, then its bytes) to `out` until `out`
    // holds at least `min_bytes` or the spool is read to its end. Returns false when no record
    // was left.
    bool read_chunk(std::vector<uint8_t>& out, size_t min_bytes);

    uint64_t records() const { return m_records; }

private:
    std::FILE* m_file = nullptr;
    bool m_reading = false;
    uint64_t m_records = 0;
};

// Record order of a merge: a < b.
using record_less =
    std::function<bool(const uint8_t* a, size_t alen, const uint8_t* b, size_t blen)>;
// Takes one record.
using record_sink = std::function<void(const uint8_t* data, size_t len)>;

// One process's side of a merge: hands `spool`'s records to `sink` in order (used by rank 0 for
// its own records, and by a single process).
void drain(record_spool& spool, const record_sink& sink);

// The merge of several spools in one process (rank 0's merge without MPI, and tests): `sink`
// gets every record of every spool in `less` order (equal records: the earlier spool's first).
void merge_local(const std::vector<record_spool*>& spools, const record_less& less,
                 const record_sink& sink);

#ifdef RNICSIM_HAVE_MPI
// Every rank calls this, each with its spool (its records in `less` order). Rank 0's `sink` gets
// every record of every rank, merged in `less` order (equal records: the lower rank's first);
// other ranks' sinks are not called. Rank 0 asks for a chunk (~`chunk_bytes` of whole records)
// from a rank whenever it has used up the last one, so memory is one chunk per rank however
// large the spools are (a broadcast and a gather per refill).
void merge_spools(const distributed::mpi_comm& comm, record_spool& mine, const record_less& less,
                  const record_sink& sink, size_t chunk_bytes = size_t{1} << 20);
#endif

}  // namespace rnic::output
