// SPDX-License-Identifier: Apache-2.0
// WQE timeline (Chrome trace events) and per-stage latency aggregation.
#include "testbench/output/timeline.h"

#ifdef RNICSIM_HAVE_MPI
#include "testbench/distributed/mpi_comm.h"
#endif

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

namespace rnic::output {

namespace {

constexpr size_t FLUSH_BYTES = 1 << 20;  // trace text is written out in ~1 MiB chunks

// A JSON string literal; names are plain identifiers, so the fast path copies them as they are.
void append_json_string(std::string& out, const std::string& s) {
    const bool plain = std::none_of(s.begin(), s.end(), [](char c) {
        return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20;
    });
    if (plain) {
        out += '"';
        out += s;
        out += '"';
    } else {
        out += nlohmann::json(s).dump();
    }
}

// Trace-event times are microseconds; picoseconds keep the kernel's resolution exactly.
void append_us(std::string& out, uint64_t ps) {
    fmt::format_to(std::back_inserter(out), "{}.{:06}", ps / 1000000, ps % 1000000);
}

double ps_to_ns(double ps) {
    return ps / 1000.0;
}

// Protocol buffers' wire format (what Perfetto's trace is): varints, tags, length-delimited
// fields, fixed64.
void pb_varint(std::string& o, uint64_t v) {
    while (v >= 0x80) {
        o += static_cast<char>((v & 0x7F) | 0x80);
        v >>= 7;
    }
    o += static_cast<char>(v);
}
void pb_uint(std::string& o, uint32_t field, uint64_t v) {
    pb_varint(o, uint64_t{field} << 3);  // wire type 0
    pb_varint(o, v);
}
void pb_bytes(std::string& o, uint32_t field, const std::string& v) {
    pb_varint(o, uint64_t{field} << 3 | 2);
    pb_varint(o, v.size());
    o += v;
}
void pb_fixed64(std::string& o, uint32_t field, uint64_t v) {
    pb_varint(o, uint64_t{field} << 3 | 1);
    for (int i = 0; i < 8; ++i) {
        o += static_cast<char>(v >> (8 * i));
    }
}
// Perfetto's field numbers (testbench/output/perfetto/perfetto_trace_subset.proto: Perfetto's own
// schema text for these messages).
namespace pf {
constexpr uint32_t TRACE_PACKET = 1;  // Trace.packet
constexpr uint32_t TIMESTAMP = 8;     // TracePacket.*
constexpr uint32_t SEQUENCE_ID = 10;
constexpr uint32_t TRACK_EVENT = 11;
constexpr uint32_t INTERNED_DATA = 12;
constexpr uint32_t SEQUENCE_FLAGS = 13;
constexpr uint32_t TRACK_DESCRIPTOR = 60;
constexpr uint32_t EVENT_TYPE = 9;  // TrackEvent.*
constexpr uint32_t EVENT_NAME_IID = 10;
constexpr uint32_t EVENT_TRACK_UUID = 11;
constexpr uint32_t EVENT_FLOW_IDS = 47;
constexpr uint32_t TRACK_UUID = 1;  // TrackDescriptor.*
constexpr uint32_t TRACK_PROCESS = 3;
constexpr uint32_t TRACK_THREAD = 4;
constexpr uint32_t TRACK_PARENT_UUID = 5;
constexpr uint32_t PROCESS_PID = 1;  // ProcessDescriptor.*
constexpr uint32_t PROCESS_NAME = 6;
constexpr uint32_t THREAD_PID = 1;  // ThreadDescriptor.*
constexpr uint32_t THREAD_TID = 2;
constexpr uint32_t THREAD_NAME = 5;
constexpr uint32_t INTERNED_EVENT_NAMES = 2;  // InternedData.event_names
constexpr uint32_t NAME_IID = 1;              // EventName.*
constexpr uint32_t NAME_NAME = 2;
constexpr uint64_t SLICE_BEGIN = 1;
constexpr uint64_t SLICE_END = 2;
constexpr uint64_t STATE_CLEARED = 1;  // sequence_flags
constexpr uint64_t NEEDS_STATE = 2;
constexpr int TID_BASE = 100000;  // lanes' tids apart from the pids
uint64_t process_uuid(int pid) {
    return static_cast<uint64_t>(pid) * 2;
}
uint64_t lane_uuid(int tid) {
    return static_cast<uint64_t>(tid) * 2 + 1;
}
}  // namespace pf

}  // namespace

// --------------------------------------------------------------------------------------------
// latency_histogram
// --------------------------------------------------------------------------------------------

void latency_histogram::merge(const latency_histogram& o) {
    o.m_counts.for_each([this](uint64_t ps, uint64_t n) { m_counts.add(ps, n); });
    if (o.m_run > 0) {
        m_counts.add(o.m_run_ps, o.m_run);
    }
    m_samples += o.m_samples;
    m_sum_ps += o.m_sum_ps;
}

nlohmann::json latency_histogram::summary() const {
    // (duration, slices) sorted by duration: the map's and the pending run's, without a copy of
    // the map (a duration in both is two adjacent entries: the ranks below see the same sums).
    std::vector<std::pair<uint64_t, uint64_t>> sorted;
    sorted.reserve(m_counts.size() + 1);
    m_counts.for_each([&sorted](uint64_t ps, uint64_t n) { sorted.emplace_back(ps, n); });
    if (m_run > 0) {
        sorted.emplace_back(m_run_ps, m_run);
    }
    std::sort(sorted.begin(), sorted.end());
    auto rank = [&](double p) -> uint64_t {
        const auto k = std::max<uint64_t>(
            1, static_cast<uint64_t>(std::ceil(p * static_cast<double>(m_samples))));
        uint64_t seen = 0;
        for (const auto& [ps, n] : sorted) {
            seen += n;
            if (seen >= k) {
                return ps;
            }
        }
        return sorted.empty() ? 0 : sorted.back().first;
    };
    nlohmann::json j;
    j["count"] = m_samples;
    j["avg_ns"] = m_samples == 0 ? 0.0 : ps_to_ns(static_cast<double>(m_sum_ps) / m_samples);
    j["p50_ns"] = ps_to_ns(static_cast<double>(rank(0.50)));
    j["p99_ns"] = ps_to_ns(static_cast<double>(rank(0.99)));
    j["max_ns"] = ps_to_ns(static_cast<double>(sorted.empty() ? 0 : sorted.back().first));
    return j;
}

namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
    put<uint32_t>(out, static_cast<uint32_t>(s.size()));
    out.insert(out.end(), s.begin(), s.end());
}

void need(const std::vector<uint8_t>& in, size_t at, size_t n) {
    if (in.size() < at || in.size() - at < n) {
        throw std::runtime_error("timeline: a rank's state is truncated at byte " +
                                 std::to_string(at));
    }
}

template <typename T>
T get(const std::vector<uint8_t>& in, size_t& at) {
    need(in, at, sizeof(T));
    T v;
    std::memcpy(&v, in.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
}

std::string get_string(const std::vector<uint8_t>& in, size_t& at) {
    const auto n = get<uint32_t>(in, at);
    need(in, at, n);
    std::string s(reinterpret_cast<const char*>(in.data() + at), n);
    at += n;
    return s;
}

}  // namespace

void latency_histogram::save(std::vector<uint8_t>& out) const {
    std::vector<std::pair<uint64_t, uint64_t>> counts;
    m_counts.for_each([&counts](uint64_t ps, uint64_t n) { counts.emplace_back(ps, n); });
    if (m_run > 0) {
        counts.emplace_back(m_run_ps, m_run);
    }
    put<uint64_t>(out, counts.size());
    for (const auto& [ps, n] : counts) {
        put<uint64_t>(out, ps);
        put<uint64_t>(out, n);
    }
    put<uint64_t>(out, m_samples);
    put<uint64_t>(out, m_sum_ps);
}

latency_histogram latency_histogram::load(const std::vector<uint8_t>& in, size_t& at) {
    latency_histogram h;
    const auto n = get<uint64_t>(in, at);
    for (uint64_t i = 0; i < n; ++i) {
        const auto ps = get<uint64_t>(in, at);
        h.m_counts.add(ps, get<uint64_t>(in, at));
    }
    h.m_samples = get<uint64_t>(in, at);
    h.m_sum_ps = get<uint64_t>(in, at);
    return h;
}

// --------------------------------------------------------------------------------------------
// timeline
// --------------------------------------------------------------------------------------------

timeline::timeline(const std::string& trace_path, bool spool, trace_options opts)
    : m_opts(std::move(opts))
    , m_path(trace_path)
    , m_spool(spool)
    , m_ps_per_unit(sc_core::sc_get_time_resolution().to_seconds() * 1e12)
    , m_unit_is_ps(m_ps_per_unit == 1.0) {
    if (spool) {
        m_spool_file = std::make_unique<record_spool>();
    }
    if (trace_path.empty()) {
        return;
    }
    m_file = std::fopen(trace_path.c_str(), "wb");
    if (m_file == nullptr) {
        throw std::runtime_error(trace_path + ": cannot open for writing: " + std::strerror(errno));
    }
    m_buf.reserve(FLUSH_BYTES + 4096);
    if (m_opts.perfetto) {
        return;  // a protobuf trace is its packets, nothing before them
    }
    // displayTimeUnit only changes how chrome://tracing labels the axis; "ts"/"dur" are us.
    m_buf +=
        "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"rnicsim\"},"
        "\"traceEvents\":[";
}

timeline::~timeline() {
    try {
        close();
    } catch (const std::exception&) {
        // Destructors must not throw; call close() to see the error.
    }
}

void timeline::emit_begin() {
    m_buf += m_first ? "\n" : ",\n";
    m_first = false;
    ++m_events;
}

void timeline::emit_end() {
    if (m_buf.size() >= FLUSH_BYTES) {
        flush(false);
    }
}

void timeline::flush(bool force) {
    if (m_file == nullptr || (m_buf.empty() && !force)) {
        return;
    }
    if (!m_buf.empty() && std::fwrite(m_buf.data(), 1, m_buf.size(), m_file) != m_buf.size()) {
        const int err = errno;
        std::fclose(m_file);
        m_file = nullptr;
        throw std::runtime_error(m_path + ": write failed: " + std::strerror(err));
    }
    m_buf.clear();
}

timeline::place timeline::place_slice(const std::string& block, uint64_t start_ps,
                                      uint64_t end_ps) {
    // One track per block (a Chrome thread per lane of it); the slices carry the stage name.
    m_key.assign(block);
    auto it = m_tracks.find(m_key);
    if (it == m_tracks.end()) {
        // Block names are hierarchical: "<node>.nic.<block>..." -> process <node>.
        const size_t dot = block.find('.');
        const std::string node = dot == std::string::npos ? block : block.substr(0, dot);
        auto [pit, fresh] = m_pids.emplace(node, static_cast<int>(m_pids.size()) + 1);
        if (fresh) {
            m_pid_names.push_back(node);
            m_pid_announced.push_back(false);
        }
        track t;
        t.pid = pit->second;
        // Blocks in first-seen order (the pipeline's order for the first WQE), lanes after.
        t.sort_base = static_cast<int>(m_tracks.size() + 1) * 1000;
        it = m_tracks.emplace(m_key, std::move(t)).first;
    }
    track& t = it->second;
    size_t lane = 0;
    while (lane < t.lane_end.size() && t.lane_end[lane] > start_ps) {
        ++lane;
    }
    if (lane == t.lane_end.size()) {
        // A new lane: "<block> <stage>" for the first, "... #2" and on for slices overlapping it.
        const int tid = m_next_tid++;
        t.lane_tid.push_back(tid);
        t.lane_end.push_back(0);
        const std::string label = lane == 0 ? m_key : fmt::format("{} #{}", m_key, lane + 1);
        if (m_lanes.size() <= static_cast<size_t>(tid)) {
            m_lanes.resize(static_cast<size_t>(tid) + 1);
        }
        m_lanes[static_cast<size_t>(tid)] = {t.pid, label, t.sort_base + static_cast<int>(lane),
                                             false};
    }
    t.lane_end[lane] = std::max(t.lane_end[lane], end_ps);
    return {t.pid, t.lane_tid[lane]};
}

size_t timeline::stage_index(std::string_view block, std::string_view stage) {
    // A fabric has hundreds of (block, stage) pairs: found by hash, in order of first use.
    const size_t h = std::hash<std::string_view>{}(block)*0x9E3779B97F4A7C15ull ^
                     std::hash<std::string_view>{}(stage);
    std::vector<size_t>& ids = m_stage_by_hash[h];
    for (const size_t i : ids) {
        if (m_stages[i].block == block && m_stages[i].stage == stage) {
            return i;
        }
    }
    m_stages.push_back({std::string(block), std::string(stage), {}});
    ids.push_back(m_stages.size() - 1);
    return m_stages.size() - 1;
}

size_t timeline::name_slot_of(const char* block, const char* stage) {
    // Both addresses mixed (multiplicative hashing, the product's high bits): the callers'
    // strings lie at regular strides (a link's or a port's track name in objects of one size,
    // temporaries at one offset of every thread's stack), which low address bits alone map to
    // a few slots, so a fabric's tracks evicted each other at every slice.
    const uint64_t h = (reinterpret_cast<uintptr_t>(block) * 0x9E3779B97F4A7C15ull) ^
                       (reinterpret_cast<uintptr_t>(stage) * 0xC2B2AE3D27D4EB4Full);
    return static_cast<size_t>((h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ull >> 40) % STAGE_CACHE;
}

latency_histogram& timeline::histogram_of(const std::string& block, const std::string& stage) {
    // Keyed by where the two strings live: a member (a link's or a port's track name) or a
    // short (in-place) temporary built at the same place of the same thread's stack every time.
    name_slot& slot = m_name_cache[name_slot_of(block.data(), stage.data())];
    if (slot.block == block.data() && slot.stage == stage.data()) {
        stage_entry& e = m_stages[slot.index];
        if (e.stage == stage && e.block == block) {
            return e.h;
        }
    }
    const size_t i = stage_index(block, stage);
    slot = {block.data(), stage.data(), i};
    return m_stages[i].h;
}

latency_histogram& timeline::histogram_of(const char* block, const char* stage) {
    name_slot& slot = m_name_cache[name_slot_of(block, stage)];
    if (slot.block == block && slot.stage == stage) {
        stage_entry& e = m_stages[slot.index];
        if (e.stage == stage && e.block == block) {
            return e.h;
        }
    }
    const size_t i = stage_index(block, stage);
    slot = {block, stage, i};
    return m_stages[i].h;
}

uint64_t timeline::ps_of(const sc_core::sc_time& t) const {
    // Rounded from the kernel's time resolution; with 1 ps (the default) the value itself,
    // as the rounding gives it below 2^53 ps (the double holds every such value exactly).
    const uint64_t v = t.value();
    if (m_unit_is_ps && v < (uint64_t{1} << 53)) {
        return v;
    }
    return static_cast<uint64_t>(std::llround(static_cast<double>(v) * m_ps_per_unit));
}

uint32_t timeline::stage_id(const char* block, const char* stage) {
    return static_cast<uint32_t>(stage_index(block, stage));
}

void timeline::slice(uint32_t stage_id, uint64_t flow_id, const sc_core::sc_time& start,
                     const sc_core::sc_time& end) {
    ++m_slices;
    const uint64_t start_ps = ps_of(start);
    const uint64_t end_ps = std::max(start_ps, ps_of(end));
    stage_entry& e = m_stages[stage_id];
    e.h.add(end_ps - start_ps);
    if (m_file != nullptr || m_spool) {
        file(e.block, e.stage, flow_id, start_ps, end_ps, std::string());
    }
}

void timeline::slice(const char* block, const char* stage, uint64_t flow_id,
                     const sc_core::sc_time& start, const sc_core::sc_time& end) {
    if (m_file != nullptr || m_spool) {
        slice(std::string(block), std::string(stage), flow_id, start, end, std::string());
        return;
    }
    // As below, aggregate only (no trace file, nothing spooled).
    ++m_slices;
    const uint64_t start_ps = ps_of(start);
    const uint64_t end_ps = std::max(start_ps, ps_of(end));
    histogram_of(block, stage).add(end_ps - start_ps);
}

void timeline::slice(const std::string& block, const std::string& stage, uint64_t flow_id,
                     const sc_core::sc_time& start, const sc_core::sc_time& end,
                     const std::string& args_json) {
    ++m_slices;
    const uint64_t start_ps = ps_of(start);
    const uint64_t end_ps = std::max(start_ps, ps_of(end));
    histogram_of(block, stage).add(end_ps - start_ps);
    if (m_file == nullptr && !m_spool) {
        return;
    }
    file(block, stage, flow_id, start_ps, end_ps, args_json);
}

void timeline::file(const std::string& block, const std::string& stage, uint64_t flow_id,
                    uint64_t start_ps, uint64_t end_ps, const std::string& args_json) {
    // Held until the instant is over, then written in block order (partition-independent).
    const uint64_t at = sc_core::sc_time_stamp().value();
    if (!m_filed.empty() && m_filed.front().at != at) {
        if (m_spool) {
            spool_filed();
        } else {
            write_filed(m_filed);
        }
    }
    m_filed.push_back({at, block, stage, flow_id, start_ps, end_ps, args_json});
}

void timeline::sort_filed(std::vector<filed_slice>& slices) {
    std::stable_sort(slices.begin(), slices.end(), [](const filed_slice& a, const filed_slice& b) {
        if (a.at != b.at) {
            return a.at < b.at;
        }
        // Earlier-starting first, so a WQE's flow arrows run in the order its slices began.
        return a.start_ps != b.start_ps ? a.start_ps < b.start_ps : a.block < b.block;
    });
}

void timeline::write_filed(std::vector<filed_slice>& slices) {
    sort_filed(slices);
    for (const filed_slice& f : slices) {
        write_one(f);
    }
    slices.clear();
}

namespace {

// A spooled slice: the sort key (time filed, start, block) first.
void encode_slice(std::vector<uint8_t>& out, uint64_t at, uint64_t start_ps,
                  const std::string& block, uint64_t flow_id, uint64_t end_ps,
                  const std::string& stage, const std::string& args) {
    put<uint64_t>(out, at);
    put<uint64_t>(out, start_ps);
    put_string(out, block);
    put<uint64_t>(out, flow_id);
    put<uint64_t>(out, end_ps);
    put_string(out, stage);
    put_string(out, args);
}

// (time filed, start, block) of a spooled slice: the file's order (ties: the lower rank's first,
// as the former in-memory merge appended the ranks' slices in rank order and sorted stably).
bool spooled_less(const uint8_t* a, size_t alen, const uint8_t* b, size_t blen) {
    uint64_t ka[2];
    uint64_t kb[2];
    std::memcpy(ka, a, 16);
    std::memcpy(kb, b, 16);
    if (ka[0] != kb[0] || ka[1] != kb[1]) {
        return ka[0] != kb[0] ? ka[0] < kb[0] : ka[1] < kb[1];
    }
    uint32_t na;
    uint32_t nb;
    std::memcpy(&na, a + 16, 4);
    std::memcpy(&nb, b + 16, 4);
    if (alen < 20 + size_t{na} || blen < 20 + size_t{nb}) {
        throw std::runtime_error("timeline: a spooled slice is truncated");
    }
    return std::string_view(reinterpret_cast<const char*>(a + 20), na) <
           std::string_view(reinterpret_cast<const char*>(b + 20), nb);
}

}  // namespace

void timeline::spool_filed() {
    sort_filed(m_filed);
    std::vector<uint8_t> rec;
    for (const filed_slice& f : m_filed) {
        rec.clear();
        encode_slice(rec, f.at, f.start_ps, f.block, f.flow_id, f.end_ps, f.stage, f.args);
        m_spool_file->append(rec.data(), rec.size());
    }
    m_filed.clear();
}

void timeline::write_spooled(const uint8_t* p, size_t len) {
    if (m_file == nullptr) {
        return;  // rank 0 without a path: nothing to write
    }
    const std::vector<uint8_t> rec(p, p + len);
    size_t at = 0;
    filed_slice f;
    f.at = get<uint64_t>(rec, at);
    f.start_ps = get<uint64_t>(rec, at);
    f.block = get_string(rec, at);
    f.flow_id = get<uint64_t>(rec, at);
    f.end_ps = get<uint64_t>(rec, at);
    f.stage = get_string(rec, at);
    f.args = get_string(rec, at);
    write_one(f);  // its text goes out in ~1 MiB chunks (emit_end)
}

void timeline::merge_spooled(const std::vector<timeline*>& others) {
    m_spool_merged = true;
    std::vector<record_spool*> spools;
    std::vector<timeline*> all = {this};
    all.insert(all.end(), others.begin(), others.end());
    for (timeline* t : all) {
        if (t->m_spool) {
            t->spool_filed();  // the last instant
            spools.push_back(t->m_spool_file.get());
        }
    }
    merge_local(spools, spooled_less,
                [this](const uint8_t* p, size_t len) { write_spooled(p, len); });
}

#ifdef RNICSIM_HAVE_MPI
void timeline::merge_spooled(const distributed::mpi_comm& comm) {
    if (!m_spool) {
        return;
    }
    m_spool_merged = true;
    spool_filed();  // the last instant
    merge_spools(comm, *m_spool_file, spooled_less,
                 [this](const uint8_t* p, size_t len) { write_spooled(p, len); });
}
#endif

void timeline::write_one(const filed_slice& f) {
    const place p = place_slice(f.block, f.start_ps, f.end_ps);
    if (f.flow_id == 0 && f.stage == "doorbell") {
        hold_doorbell(f.block, p, f.start_ps, f.end_ps, f.args);
        return;
    }
    if (f.flow_id != 0 && f.stage == "wqe_fetch") {
        attach_doorbell(f.block, f.flow_id, f.start_ps);
    }
    write_slice(p, f.stage, f.flow_id, f.start_ps, f.end_ps, f.args);
}

std::vector<uint8_t> timeline::take_state() {
    if (m_spool) {
        spool_filed();  // the slices stay in the spool for merge_spooled()
    }
    std::vector<uint8_t> out;
    put<uint64_t>(out, m_slices);
    put<uint64_t>(out, m_stages.size());
    for (const stage_entry& e : m_stages) {
        put_string(out, e.block);
        put_string(out, e.stage);
        e.h.save(out);
    }
    put<uint64_t>(out, m_filed.size());
    for (const filed_slice& f : m_filed) {
        put<uint64_t>(out, f.at);
        put_string(out, f.block);
        put_string(out, f.stage);
        put<uint64_t>(out, f.flow_id);
        put<uint64_t>(out, f.start_ps);
        put<uint64_t>(out, f.end_ps);
        put_string(out, f.args);
    }
    m_filed.clear();
    return out;
}

void timeline::merge_state(const std::vector<uint8_t>& in) {
    size_t at = 0;
    m_slices += get<uint64_t>(in, at);
    const auto stages = get<uint64_t>(in, at);
    for (uint64_t i = 0; i < stages; ++i) {
        const std::string block = get_string(in, at);
        const std::string stage = get_string(in, at);
        const latency_histogram h = latency_histogram::load(in, at);
        histogram_of(block, stage).merge(h);
    }
    const auto filed = get<uint64_t>(in, at);
    for (uint64_t i = 0; i < filed; ++i) {
        filed_slice f;
        f.at = get<uint64_t>(in, at);
        f.block = get_string(in, at);
        f.stage = get_string(in, at);
        f.flow_id = get<uint64_t>(in, at);
        f.start_ps = get<uint64_t>(in, at);
        f.end_ps = get<uint64_t>(in, at);
        f.args = get_string(in, at);
        m_filed.push_back(std::move(f));
    }
    if (at != in.size()) {
        throw std::runtime_error("timeline: a rank's state has " + std::to_string(in.size() - at) +
                                 " stray bytes");
    }
}

namespace {

// "node0.nic.doorbell" -> "node0": the process of a block.
std::string node_of(const std::string& block) {
    return block.substr(0, block.find('.'));
}

}  // namespace

void timeline::hold_doorbell(const std::string& block, const place& p, uint64_t start_ps,
                             uint64_t end_ps, const std::string& args_json) {
    const size_t at = args_json.find("\"qpn\":");
    if (at == std::string::npos) {
        write_slice(p, "doorbell", 0, start_ps, end_ps, args_json);
        return;
    }
    const auto qpn = static_cast<uint32_t>(std::strtoul(args_json.c_str() + at + 6, nullptr, 10));
    m_held[{node_of(block), qpn}].push_back({p, start_ps, end_ps, args_json});
}

void timeline::attach_doorbell(const std::string& block, uint64_t flow_id, uint64_t start_ps) {
    // WQE fetch's flow ids are node << 56 | QPN << 32 | count (hw/wqe_fetch).
    const std::pair<std::string, uint32_t> key{node_of(block),
                                               static_cast<uint32_t>(flow_id >> 32) & 0xFFFFFF};
    auto [bit, fresh] = m_batch_start.emplace(key, start_ps);
    if (!fresh && bit->second == start_ps) {
        return;  // a later WQE of the same batch
    }
    bit->second = start_ps;
    auto hit = m_held.find(key);
    // The doorbell that queued this batch ended (QP handed to WQE fetch) when the batch began.
    if (hit == m_held.end() || hit->second.empty() || hit->second.front().end_ps > start_ps) {
        return;
    }
    const held_slice h = hit->second.front();
    hit->second.erase(hit->second.begin());
    write_slice(h.p, "doorbell", flow_id, h.start_ps, h.end_ps, h.args);
}

bool timeline::wanted(const place& p, uint64_t flow_id, uint64_t start_ps, uint64_t end_ps) const {
    const trace_options& o = m_opts;
    if (start_ps >= o.end_ps || (end_ps <= o.start_ps && start_ps < o.start_ps)) {
        return false;  // outside the window
    }
    // WQE fetch's flow ids are node << 56 | QPN << 32 | count (hw/wqe_fetch).
    if (!o.qps.empty()) {
        const auto qpn = static_cast<uint32_t>(flow_id >> 32) & 0xFFFFFF;
        if (flow_id == 0 || std::find(o.qps.begin(), o.qps.end(), qpn) == o.qps.end()) {
            return false;
        }
    }
    if (!o.nodes.empty()) {
        uint64_t node = 0;
        if (flow_id != 0) {
            node = flow_id >> 56;
        } else {  // not a WQE's: the node whose block it is ("node<i>.")
            const std::string& name = m_pid_names[static_cast<size_t>(p.pid) - 1];
            if (name.compare(0, 4, "node") != 0 || name.size() == 4 ||
                name.find_first_not_of("0123456789", 4) != std::string::npos) {
                return false;
            }
            node = std::strtoull(name.c_str() + 4, nullptr, 10);
        }
        if (std::find(o.nodes.begin(), o.nodes.end(), node) == o.nodes.end()) {
            return false;
        }
    }
    return true;
}

void timeline::emit_packet() {
    if (m_pb_first) {  // the sequence's interned names start here
        pb_uint(m_pkt, pf::SEQUENCE_FLAGS, pf::STATE_CLEARED | pf::NEEDS_STATE);
        m_pb_first = false;
    }
    pb_uint(m_pkt, pf::SEQUENCE_ID, 1);
    pb_bytes(m_buf, pf::TRACE_PACKET, m_pkt);
    m_pkt.clear();
    ++m_events;
    emit_end();
}

void timeline::announce(const place& p) {
    const auto pi = static_cast<size_t>(p.pid) - 1;
    if (!m_pid_announced[pi]) {
        m_pid_announced[pi] = true;
        const std::string& node = m_pid_names[pi];
        if (m_opts.perfetto) {
            std::string proc;
            pb_uint(proc, pf::PROCESS_PID, static_cast<uint64_t>(p.pid));
            pb_bytes(proc, pf::PROCESS_NAME, node);
            std::string desc;
            pb_uint(desc, pf::TRACK_UUID, pf::process_uuid(p.pid));
            pb_bytes(desc, pf::TRACK_PROCESS, proc);
            pb_bytes(m_pkt, pf::TRACK_DESCRIPTOR, desc);
            emit_packet();
        } else {
            emit_begin();
            fmt::format_to(std::back_inserter(m_buf),
                           R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":)",
                           p.pid);
            append_json_string(m_buf, node);
            m_buf += "}}";
            emit_begin();
            fmt::format_to(
                std::back_inserter(m_buf),
                R"({{"ph":"M","name":"process_sort_index","pid":{0},"tid":0,"args":{{"sort_index":{0}}}}})",
                p.pid);
        }
    }
    lane_info& l = m_lanes[static_cast<size_t>(p.tid)];
    if (l.announced) {
        return;
    }
    l.announced = true;
    if (m_opts.perfetto) {
        std::string thread;
        pb_uint(thread, pf::THREAD_PID, static_cast<uint64_t>(p.pid));
        pb_uint(thread, pf::THREAD_TID, static_cast<uint64_t>(pf::TID_BASE + p.tid));
        pb_bytes(thread, pf::THREAD_NAME, l.label);
        std::string desc;
        pb_uint(desc, pf::TRACK_UUID, pf::lane_uuid(p.tid));
        pb_uint(desc, pf::TRACK_PARENT_UUID, pf::process_uuid(p.pid));
        pb_bytes(desc, pf::TRACK_THREAD, thread);
        pb_bytes(m_pkt, pf::TRACK_DESCRIPTOR, desc);
        emit_packet();
        return;
    }
    emit_begin();
    fmt::format_to(std::back_inserter(m_buf),
                   R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":)", p.pid,
                   p.tid);
    append_json_string(m_buf, l.label);
    m_buf += "}}";
    emit_begin();
    fmt::format_to(
        std::back_inserter(m_buf),
        R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
        p.pid, p.tid, l.sort);
}

void timeline::write_slice_pb(const place& p, const std::string& stage, uint64_t flow_id,
                              uint64_t start_ps, uint64_t end_ps) {
    // Perfetto's times are ns: both ends floored, so slices of one lane still do not overlap.
    auto [it, fresh] = m_iids.emplace(stage, m_iids.size() + 1);
    std::string ev;
    pb_uint(ev, pf::EVENT_TYPE, pf::SLICE_BEGIN);
    pb_uint(ev, pf::EVENT_NAME_IID, it->second);
    pb_uint(ev, pf::EVENT_TRACK_UUID, pf::lane_uuid(p.tid));
    if (flow_id != 0) {  // a flow through every slice of the WQE, in the order they are written
        pb_fixed64(ev, pf::EVENT_FLOW_IDS, flow_id);
    }
    pb_uint(m_pkt, pf::TIMESTAMP, start_ps / 1000);
    pb_bytes(m_pkt, pf::TRACK_EVENT, ev);
    if (fresh) {
        std::string name;
        pb_uint(name, pf::NAME_IID, it->second);
        pb_bytes(name, pf::NAME_NAME, stage);
        std::string interned;
        pb_bytes(interned, pf::INTERNED_EVENT_NAMES, name);
        pb_bytes(m_pkt, pf::INTERNED_DATA, interned);
    }
    if (!m_pb_first) {
        pb_uint(m_pkt, pf::SEQUENCE_FLAGS, pf::NEEDS_STATE);
    }
    emit_packet();
    ev.clear();
    pb_uint(ev, pf::EVENT_TYPE, pf::SLICE_END);
    pb_uint(ev, pf::EVENT_TRACK_UUID, pf::lane_uuid(p.tid));
    pb_uint(m_pkt, pf::TIMESTAMP, end_ps / 1000);
    pb_bytes(m_pkt, pf::TRACK_EVENT, ev);
    emit_packet();
}

void timeline::write_slice(const place& p, const std::string& stage, uint64_t flow_id,
                           uint64_t start_ps, uint64_t end_ps, const std::string& args_json) {
    if (!wanted(p, flow_id, start_ps, end_ps)) {
        return;
    }
    announce(p);
    if (m_opts.perfetto) {
        write_slice_pb(p, stage, flow_id, start_ps, end_ps);
        return;
    }
    emit_begin();
    m_buf += R"({"ph":"X","name":)";
    append_json_string(m_buf, stage);
    fmt::format_to(std::back_inserter(m_buf), R"(,"cat":"wqe","pid":{},"tid":{},"ts":)", p.pid,
                   p.tid);
    append_us(m_buf, start_ps);
    m_buf += R"(,"dur":)";
    append_us(m_buf, end_ps - start_ps);
    fmt::format_to(std::back_inserter(m_buf), R"(,"args":{{"flow":"0x{:x}")", flow_id);
    if (!args_json.empty()) {
        m_buf += ',';
        m_buf += args_json;
    }
    m_buf += "}}";

    if (flow_id != 0) {
        // Flow arrow from the previous slice of the same WQE to this one: "s" binds to the
        // slice enclosing its timestamp (the previous slice starts there), "f" with bp "e" to
        // the slice that starts at its timestamp.
        auto it = m_last.find(flow_id);
        if (it != m_last.end()) {
            const auto& [pp, pts] = it->second;
            const uint64_t id = m_next_flow_event++;
            emit_begin();
            fmt::format_to(
                std::back_inserter(m_buf),
                R"({{"ph":"s","name":"wqe","cat":"flow","id":{},"pid":{},"tid":{},"ts":)", id,
                pp.pid, pp.tid);
            append_us(m_buf, pts);
            m_buf += '}';
            emit_begin();
            fmt::format_to(
                std::back_inserter(m_buf),
                R"({{"ph":"f","bp":"e","name":"wqe","cat":"flow","id":{},"pid":{},"tid":{},"ts":)",
                id, p.pid, p.tid);
            append_us(m_buf, start_ps);
            m_buf += '}';
            it->second = {p, start_ps};
        } else {
            m_last.emplace(flow_id, std::make_pair(p, start_ps));
        }
    }
    emit_end();
}

void timeline::close() {
    if (m_file == nullptr) {
        return;
    }
    if (m_spool && !m_spool_merged) {
        merge_spooled(std::vector<timeline*>());  // this one's own slices
    }
    // The last instant's slices (live), or other ranks' held in memory (merge_state).
    write_filed(m_filed);
    // Doorbells no fetch followed (the QP had nothing left to fetch): per QP, no WQE.
    for (auto& [key, held] : m_held) {
        for (const held_slice& h : held) {
            write_slice(h.p, "doorbell", 0, h.start_ps, h.end_ps, h.args);
        }
        held.clear();
    }
    if (!m_opts.perfetto) {
        m_buf += "\n]}\n";
    }
    flush(true);
    std::FILE* f = m_file;
    m_file = nullptr;
    if (std::fclose(f) != 0) {
        throw std::runtime_error(m_path + ": close failed: " + std::strerror(errno));
    }
}

nlohmann::json timeline::stage_latency() const {
    std::map<std::string, latency_histogram> merged;
    for (const stage_entry& e : m_stages) {
        merged[e.stage].merge(e.h);
    }
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [stage, h] : merged) {
        j[stage] = h.summary();
    }
    return j;
}

nlohmann::json timeline::block_stage_latency() const {
    nlohmann::json j = nlohmann::json::object();
    for (const stage_entry& e : m_stages) {
        j[e.block][e.stage] = e.h.summary();
    }
    return j;
}

}  // namespace rnic::output
