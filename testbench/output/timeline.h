// SPDX-License-Identifier: Apache-2.0
// WQE timeline: collects every block's stage slices, aggregates per-stage latency for
// stats.json and, on request, writes DIR/trace.json in the Chrome trace-event format that
// Perfetto and chrome://tracing open (one process per node, one track per block, slices named
// by stage, flow arrows through each WQE's slices).
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "hw/common/sim_context.h"
#include "testbench/output/spool.h"

namespace rnic::distributed {
class mpi_comm;
}

namespace rnic::output {

// Duration -> count by open addressing (linear probing): an add is one multiply and a probe or
// two, where a node-based map allocates and follows pointers (a fabric adds millions).
class count_map {
public:
    void add(uint64_t key, uint64_t n) {
        if (key == EMPTY) {
            m_empty_key += n;
            return;
        }
        if ((m_used + 1) * 4 > m_slots.size() * 3) {
            grow();
        }
        const size_t mask = m_slots.size() - 1;
        for (size_t i = slot_of(key);; i = (i + 1) & mask) {
            auto& s = m_slots[i];
            if (s.first == key) {
                s.second += n;
                return;
            }
            if (s.first == EMPTY) {
                s = {key, n};
                ++m_used;
                return;
            }
        }
    }
    // How many (key, count) for_each visits.
    size_t size() const { return m_used + (m_empty_key != 0 ? 1 : 0); }
    // Every (key, count), in no particular order.
    template <class F>
    void for_each(F&& f) const {
        for (const auto& s : m_slots) {
            if (s.first != EMPTY) {
                f(s.first, s.second);
            }
        }
        if (m_empty_key != 0) {
            f(EMPTY, m_empty_key);
        }
    }

private:
    static constexpr uint64_t EMPTY = ~uint64_t{0};
    size_t slot_of(uint64_t key) const {
        return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> m_shift);
    }
    void grow() {
        std::vector<std::pair<uint64_t, uint64_t>> old;
        old.swap(m_slots);
        const size_t size = old.empty() ? 16 : old.size() * 2;
        m_slots.assign(size, {EMPTY, 0});
        m_shift = 64;
        for (size_t n = size; n > 1; n >>= 1) {
            --m_shift;
        }
        m_used = 0;
        for (const auto& s : old) {
            if (s.first != EMPTY) {
                add(s.first, s.second);
            }
        }
    }
    std::vector<std::pair<uint64_t, uint64_t>> m_slots;  // power-of-two size; EMPTY: free
    size_t m_used = 0;
    unsigned m_shift = 64;
    uint64_t m_empty_key = 0;  // the one key value a slot cannot hold
};

// Exact latency distribution of one stage: durations are whole kernel time units (ps) and,
// in a cycle-accurate model, take few distinct values, so a value -> count map stays small
// and gives exact percentiles at a fraction of the memory of keeping every sample.
class latency_histogram {
public:
    // Appends this histogram to `out` / reads one back (partitioned runs send them to rank 0).
    void save(std::vector<uint8_t>& out) const;
    // Reads what save() wrote at `at` (advanced past it). Throws std::runtime_error if short.
    static latency_histogram load(const std::vector<uint8_t>& in, size_t& at);

    void add(uint64_t ps) {
        // Runs of equal durations (back-to-back packets) only bump a counter.
        if (ps != m_run_ps) {
            if (m_run > 0) {
                m_counts.add(m_run_ps, m_run);
            }
            m_run_ps = ps;
            m_run = 0;
        }
        ++m_run;
        ++m_samples;
        m_sum_ps += ps;
    }
    void merge(const latency_histogram& o);
    uint64_t samples() const { return m_samples; }
    // {"count", "avg_ns", "p50_ns", "p99_ns", "max_ns"}; percentiles are nearest rank (the
    // smallest duration with at least p% of the samples at or below it), as the workload's.
    nlohmann::json summary() const;

private:
    count_map m_counts;     // duration (ps) -> slices
    uint64_t m_run_ps = 0;  // the latest duration and how many in a row not in m_counts yet
    uint64_t m_run = 0;
    uint64_t m_samples = 0;
    uint64_t m_sum_ps = 0;
};

// What the trace file holds and in which form (outputs.trace_*).
struct trace_options {
    // Perfetto's protobuf trace (TracePacket / TrackEvent with interned names, flows by the WQE's
    // flow id): trace.perfetto-trace, a fraction of the JSON's size. Otherwise Chrome JSON.
    bool perfetto = false;
    uint64_t start_ps = 0;  // only slices overlapping [start_ps, end_ps)
    uint64_t end_ps = ~uint64_t{0};
    std::vector<uint32_t> qps;    // only the WQEs of these QPNs (empty: every QP)
    std::vector<uint32_t> nodes;  // only the WQEs these nodes post, and these nodes' other slices
};

class timeline : public hw::event_tracer {
public:
    // `trace_path` empty: aggregate only (cheap: two hash lookups per slice). Otherwise events
    // stream into the file (its parent directory must exist); close() finishes the JSON
    // document. Throws std::runtime_error if the file cannot be opened.
    //
    // Slices filed at the same instant are written in (start, block name) order (a block's
    // own slices of the same start in the order it filed them), not in the order the simulation's
    // processes ran: trace.json is the same for a single process and for any partition over MPI
    // ranks.
    //
    // `spool` (partitioned runs, trace on): slices go to a temporary file instead; a rank
    // hands its stage latencies to rank 0 with take_state(), rank 0 adds every other rank's
    // with merge_state(), merge_spooled() writes every rank's slices (when `trace_path` is
    // given, rank 0's) in the same order as a single process, and close() ends the file.
    explicit timeline(const std::string& trace_path = "", bool spool = false,
                      trace_options opts = {});
    ~timeline() override;
    timeline(const timeline&) = delete;
    timeline& operator=(const timeline&) = delete;

    void slice(const std::string& block, const std::string& stage, uint64_t flow_id,
               const sc_core::sc_time& start, const sc_core::sc_time& end,
               const std::string& args_json = "") override;
    void slice(const char* block, const char* stage, uint64_t flow_id,
               const sc_core::sc_time& start, const sc_core::sc_time& end) override;
    // The (block, stage) pair's index in the stage latencies (found by content; the same pair
    // named twice gets the same id); slice(id, ...) adds to its histogram directly.
    uint32_t stage_id(const char* block, const char* stage) override;
    void slice(uint32_t stage_id, uint64_t flow_id, const sc_core::sc_time& start,
               const sc_core::sc_time& end) override;
    // Finishes and closes trace.json (idempotent). Throws std::runtime_error on a write error.
    void close();

    // Partitioned runs: this rank's stage latencies as bytes (and slices held in memory: none
    // when spooling, they stay in the spool), and rank 0's merge of another rank's. Throws
    // std::runtime_error on a malformed state.
    std::vector<uint8_t> take_state();
    void merge_state(const std::vector<uint8_t>& state);
    // A spooling timeline keeps its slices, one instant sorted at a time, in a temporary file
    // (output::record_spool), not in memory. Partitioned runs with the trace on: every rank
    // calls merge_spooled(comm) (collective) before close(); rank 0 merges every rank's slices
    // in the order close() writes them in one process, and writes them. The other form does
    // the same in one process with the other ranks' timelines (tests).
    void merge_spooled(const std::vector<timeline*>& others);
#ifdef RNICSIM_HAVE_MPI
    void merge_spooled(const distributed::mpi_comm& comm);
#endif

    // {"<stage>": {"count", "avg_ns", "p50_ns", "p99_ns", "max_ns"}} over every slice.
    nlohmann::json stage_latency() const;
    // {"<block>": {"<stage>": {...}}}: the same per block (node0's receive vs node1's).
    nlohmann::json block_stage_latency() const;
    uint64_t slices() const {
        return m_slices;
    }
    uint64_t events_written() const {
        return m_events;
    }

private:
    // The Chrome threads of one block ("node1.nic.recv_path"): slices are spread over lanes
    // ("node1.nic.recv_path #2", ...) so that slices on one thread never overlap (Perfetto
    // requires strictly nested slices per thread; pipelined and queued stages overlap).
    struct track {
        int pid = 0;
        int sort_base = 0;               // keeps a block's lanes together, in first-seen order
        std::vector<int> lane_tid;       // Chrome tid of each lane
        std::vector<uint64_t> lane_end;  // end (ps) of the last slice placed in each lane
    };
    struct place {
        int pid;
        int tid;
    };
    place place_slice(const std::string& block, uint64_t start_ps, uint64_t end_ps);
    // Trace on: holds a slice (its latency already added) until its instant is over.
    void file(const std::string& block, const std::string& stage, uint64_t flow_id,
              uint64_t start_ps, uint64_t end_ps, const std::string& args_json);
    // `t` in picoseconds.
    uint64_t ps_of(const sc_core::sc_time& t) const;
    // Writes one placed slice and, for a WQE's slice, the flow arrow from its previous one.
    void write_slice(const place& p, const std::string& stage, uint64_t flow_id, uint64_t start_ps,
                     uint64_t end_ps, const std::string& args_json);
    // A doorbell is per QP, not per WQE (flow 0, args "qpn"): its slice is held until the WQE
    // fetch it started reads the QP's next batch, and joins the flow of that batch's first WQE.
    struct held_slice {
        place p;
        uint64_t start_ps;
        uint64_t end_ps;
        std::string args;
    };
    void hold_doorbell(const std::string& block, const place& p, uint64_t start_ps, uint64_t end_ps,
                       const std::string& args_json);
    void attach_doorbell(const std::string& block, uint64_t flow_id, uint64_t start_ps);
    // A slice as filed, held until its instant is over (or, spooling, until close()).
    struct filed_slice {
        uint64_t at;  // kernel time units when it was filed
        std::string block;
        std::string stage;
        uint64_t flow_id;
        uint64_t start_ps;
        uint64_t end_ps;
        std::string args;
    };
    // Writes `slices` in (time filed, start, block) order, stable.
    void write_filed(std::vector<filed_slice>& slices);
    static void sort_filed(std::vector<filed_slice>& slices);
    void spool_filed();                                // m_filed, sorted, to m_spool_file
    void write_spooled(const uint8_t* p, size_t len);  // one merged slice, to the file
    std::unique_ptr<record_spool> m_spool_file;  // spooling: every instant's slices but the last
    bool m_spool_merged = false;
    void write_one(const filed_slice& s);
    // The filters of trace_options: is this slice written?
    bool wanted(const place& p, uint64_t flow_id, uint64_t start_ps, uint64_t end_ps) const;
    // Writes the process and lane descriptions of `p` before its first slice (a track no slice
    // passes the filters for is never described).
    void announce(const place& p);
    // The Perfetto form of one slice: begin and end TrackEvents, the stage's name interned.
    void write_slice_pb(const place& p, const std::string& stage, uint64_t flow_id,
                        uint64_t start_ps, uint64_t end_ps);
    void emit_packet();  // m_pkt as one TracePacket of the trace
    void emit_begin();
    void emit_end();
    void flush(bool force);

    trace_options m_opts;
    struct lane_info {
        int pid = 0;
        std::string label;
        int sort = 0;
        bool announced = false;
    };
    std::vector<lane_info> m_lanes;                    // by tid
    std::vector<std::string> m_pid_names;              // by pid - 1
    std::vector<bool> m_pid_announced;                 // by pid - 1
    std::unordered_map<std::string, uint64_t> m_iids;  // Perfetto: stage -> interned name id
    std::string m_pkt;                                 // Perfetto: the packet being built
    bool m_pb_first = true;                            // Perfetto: no packet written yet
    std::FILE* m_file = nullptr;
    std::string m_path;
    bool m_spool = false;
    std::vector<filed_slice> m_filed;  // the latest instant's slices (all of them when spooling)
    std::string m_buf;                 // pending JSON text, written out in large chunks
    bool m_first = true;

    std::unordered_map<std::string, track> m_tracks;  // block -> its lanes
    std::map<std::string, int> m_pids;                // node name -> pid
    int m_next_tid = 1;
    std::string m_key;                                                // scratch for the track key
    std::unordered_map<uint64_t, std::pair<place, uint64_t>> m_last;  // flow -> last slice
    // (node, QPN) -> doorbell slices not yet attached, oldest first; and the start of the
    // latest fetch batch seen (the batch's WQEs share it: only its first takes the doorbell).
    std::map<std::pair<std::string, uint32_t>, std::vector<held_slice>> m_held;
    std::map<std::pair<std::string, uint32_t>, uint64_t> m_batch_start;
    // Per (block, stage), found through a small cache keyed by where the caller's two strings
    // live (a module's name, a literal, a member, or a short in-place std::string temporary
    // built at the same place of the same thread's stack every time), else by hash. Always
    // verified by comparing the strings, so the cache only saves time.
    struct stage_entry {
        std::string block;
        std::string stage;
        latency_histogram h;
    };
    // Slots: a 1024-node fabric has about 5,000 (block, stage) pairs (a track per link
    // direction and per switch port), 16 hosts about 150.
    static constexpr size_t STAGE_CACHE = 8192;
    static size_t name_slot_of(const char* block, const char* stage);
    latency_histogram& histogram_of(const std::string& block, const std::string& stage);
    latency_histogram& histogram_of(const char* block, const char* stage);
    // (block, stage) pointers -> m_stages index (checked by content).
    struct name_slot {
        const char* block = nullptr;
        const char* stage = nullptr;
        size_t index = 0;
    };
    std::vector<name_slot> m_name_cache = std::vector<name_slot>(STAGE_CACHE);
    std::vector<stage_entry> m_stages;  // in order of first use
    size_t stage_index(std::string_view block, std::string_view stage);
    std::unordered_map<size_t, std::vector<size_t>> m_stage_by_hash;  // hash -> m_stages indexes
    uint64_t m_slices = 0;
    uint64_t m_events = 0;
    uint64_t m_next_flow_event = 1;
    double m_ps_per_unit = 1;   // kernel time resolution in ps
    bool m_unit_is_ps = false;  // m_ps_per_unit is exactly 1: a time's value is its ps
};

}  // namespace rnic::output
