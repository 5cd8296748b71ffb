// SPDX-License-Identifier: Apache-2.0
// PCIe link at TLP level.
#include "tlm/pcie/pcie_link.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "hw/common/sim_now.h"

namespace rnic::fabric {

namespace {
constexpr double PS_PER_NS = 1000.0;

double time_to_ps(const sc_core::sc_time& t) {
    return t.to_seconds() * 1e12;
}

// Bytes from addr up to the next `boundary`-aligned address (a TLP must not cross it); boundary
// is a power of two (4 KiB, MPS, the 64 B RCB).
uint32_t bytes_to_boundary(uint64_t addr, uint32_t boundary) {
    return boundary - static_cast<uint32_t>(addr & (boundary - 1));
}
}  // namespace

// ceil(ps) picoseconds: what sc_time(std::ceil(ps), SC_PS) gives, without the unit conversion
// and rounding per call.
sc_core::sc_time pcie_link::ps_to_time(double ps) const {
    return sc_core::sc_time::from_value(static_cast<uint64_t>(std::ceil(ps)) * m_ps_value);
}

pcie_link::pcie_link(sc_core::sc_module_name name, const pcie_config& cfg,
                     const std::string& stats_prefix, hw::sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_byte_ns(1.0 / cfg.tlp_bytes_per_ns())
    , m_latency_ps(cfg.latency_ns * PS_PER_NS)
    , m_hdr_mem(24 + (cfg.ecrc ? 4 : 0))
    , m_hdr_cpl(20 + (cfg.ecrc ? 4 : 0))
    , m_ps_value(sc_core::sc_time(1, sc_core::SC_PS).value())
    , m_cpl_unit(cfg.rcb_completions ? 64 : cfg.mps)
    , m_cpl_unit_shift(m_cpl_unit == 0 ? 0 : static_cast<uint32_t>(__builtin_ctz(m_cpl_unit)))
    , m_mrd(cost(m_hdr_mem))
    , m_cpl_full(cost(m_hdr_cpl + m_cpl_unit))
    , m_mwr_full(cost(m_hdr_mem + cfg.mps))
    , m_tag_free_ps(cfg.max_read_tags, 0.0) {
    if ((cfg.mps & (cfg.mps - 1)) != 0 || cfg.mps == 0) {
        SC_REPORT_FATAL(this->name(), "pcie: mps must be a power of two");
    }
    dev_dma_in.register_b_transport(this, &pcie_link::dev_b_transport);
    dev_dma_in.register_transport_dbg(this, &pcie_link::dev_transport_dbg);
    host_mmio_in.register_b_transport(this, &pcie_link::host_b_transport);
    SC_HAS_PROCESS(pcie_link);
    SC_METHOD(on_upstream);
    sensitive << m_up_event;
    dont_initialize();
    SC_THREAD(downstream_thread);

    const std::string b = stats_prefix.empty() ? std::string(this->name()) : stats_prefix;
    auto& s = ctx.stats;
    s.add(b, "up_mwr_tlps", m_up.mwr_tlps, "TLPs",
          "memory write TLPs device->host (DMA writes, MSI-X)");
    s.add(b, "up_mrd_tlps", m_up.mrd_tlps, "TLPs", "memory read requests device->host");
    s.add(b, "up_payload_bytes", m_up.payload_bytes, "bytes", "TLP payload bytes device->host");
    s.add(b, "up_wire_bytes", m_up.wire_bytes, "bytes", "TLP bytes incl. headers device->host");
    s.add(b, "up_busy_ps", m_up.busy_ps, "ps", "time the device->host direction was busy");
    s.add(b, "down_mwr_tlps", m_down.mwr_tlps, "TLPs", "memory write TLPs host->device (MMIO)");
    s.add(b, "down_cpld_tlps", m_down.cpld_tlps, "TLPs", "completions with data host->device");
    s.add(b, "down_payload_bytes", m_down.payload_bytes, "bytes", "TLP payload bytes host->device");
    s.add(b, "down_wire_bytes", m_down.wire_bytes, "bytes", "TLP bytes incl. headers host->device");
    s.add(b, "down_busy_ps", m_down.busy_ps, "ps", "time the host->device direction was busy");
    s.add(b, "tag_stall_ps", m_tag_stall_ps, "ps", "time read requests waited for a free tag");
    s.add(b, "msi_writes", m_msi_writes, "count", "MSI-X interrupt messages");
    s.add(b, "iommu_faults", m_iommu_faults, "count",
          "DMA requests rejected by the IOMMU (Completer Abort)");
    if (ctx.vcd != nullptr) {
        const std::string n = this->name();
        sc_core::sc_trace(ctx.vcd, m_up_writes_in_flight, n + ".up_writes_in_flight");
        // TLP timing is closed form: counters step when TLPs are scheduled.
        sc_core::sc_trace(ctx.vcd, m_up.mwr_tlps, n + ".up_mwr_tlps");
        sc_core::sc_trace(ctx.vcd, m_up.mrd_tlps, n + ".up_mrd_tlps");
        sc_core::sc_trace(ctx.vcd, m_down.mwr_tlps, n + ".down_mwr_tlps");
        sc_core::sc_trace(ctx.vcd, m_down.cpld_tlps, n + ".down_cpld_tlps");
        sc_core::sc_trace(ctx.vcd, m_msi_writes, n + ".msi_writes");
    }
}

pcie_link::tlp_cost pcie_link::cost(uint32_t bytes) const {
    const double ps = bytes * m_byte_ns * PS_PER_NS;
    return {ps, static_cast<uint64_t>(ps)};
}

// Inline (every caller is in this file).
inline double pcie_link::start_tlp(double& free_ps, direction_stats& st, double t_ps,
                                   const tlp_cost& c) {
    const double start = std::max(t_ps, free_ps);
    if (m_track_busy) {
        track_reserved(st, start, start == free_ps, c.ps);
    }
    free_ps = start + c.ps;
    return free_ps;
}

inline double pcie_link::more_tlps(double& free_ps, direction_stats& st, const tlp_cost& c,
                                   uint32_t count) {
    double end = free_ps;
    for (uint32_t i = 0; i < count; ++i) {
        end += c.ps;  // one addition per TLP, as start_tlp makes them: the same double
    }
    free_ps = end;
    if (m_track_busy) {
        // Back to back with the TLP before: the same busy stretch (track_reserved's merge).
        const bool up = &st == &m_up;
        (up ? m_up_ahead : m_down_ahead).back().ps += c.whole_ps * count;
        (up ? m_up_ahead_ps : m_down_ahead_ps) += c.whole_ps * count;
    }
    return end;
}

inline double pcie_link::send_tlp(double& free_ps, direction_stats& st, double t_ps,
                                  uint32_t bytes) {
    const tlp_cost c = cost(bytes);
    st.wire_bytes += bytes;
    st.busy_ps += c.whole_ps;
    return start_tlp(free_ps, st, t_ps, c);
}

void pcie_link::track_reserved(const direction_stats& st, double start, bool back_to_back,
                               double dur) {
    const bool up = &st == &m_up;
    std::deque<reserved>& q = up ? m_up_ahead : m_down_ahead;
    if (back_to_back && !q.empty()) {
        q.back().ps += static_cast<uint64_t>(dur);  // one busy stretch with the last TLP
    } else {
        q.push_back({start, static_cast<uint64_t>(dur)});
    }
    (up ? m_up_ahead_ps : m_down_ahead_ps) += static_cast<uint64_t>(dur);
}

uint64_t pcie_link::busy_ps_at(bool up, double now_ps) {
    std::deque<reserved>& q = up ? m_up_ahead : m_down_ahead;
    uint64_t& ahead = up ? m_up_ahead_ps : m_down_ahead_ps;
    // Reserved in time order, one after the other (back-to-back TLPs as one stretch): only the
    // first can straddle now.
    while (!q.empty() && q.front().start + static_cast<double>(q.front().ps) <= now_ps) {
        ahead -= q.front().ps;
        q.pop_front();
    }
    uint64_t done = 0;
    if (!q.empty() && q.front().start < now_ps) {
        done = std::min(q.front().ps, static_cast<uint64_t>(now_ps - q.front().start));
    }
    return (up ? m_up : m_down).busy_ps - ahead + done;
}

double pcie_link::write_timing(double t_ps, uint64_t addr, uint32_t len, double& free_ps,
                               direction_stats& st, const dma_stream_ext* stream) {
    // TLPs of MPS from addr on, cut at 4 KiB boundaries: per 4 KiB page the full ones, then
    // the rest of the page's part. The counters are summed per request.
    const uint32_t mps = m_cfg.mps;
    const tlp_cost& full_cost = m_mwr_full;
    double end = t_ps;
    uint32_t done = 0;
    uint64_t tlps = 0;
    uint64_t busy = 0;
    if (len == 0) {
        // A zero-length write: one TLP, its header.
        end = send_tlp(free_ps, st, t_ps, m_hdr_mem);
        ++st.mwr_tlps;
        return end;
    }
    if (stream != nullptr && stream->ps_per_byte > 0) {
        // A streamed write (dma_stream_ext): each TLP no earlier than its last byte is in.
        const double in_ps = time_to_ps(stream->data_start);
        const double ps_per_byte = stream->ps_per_byte;
        do {
            const uint32_t n = std::min(std::min(len - done, mps), bytes_to_boundary(addr, 4096));
            done += n;
            addr += n;
            const double at = std::max(t_ps, in_ps + static_cast<double>(done) * ps_per_byte);
            const tlp_cost c = n == mps ? full_cost : cost(m_hdr_mem + n);
            end = start_tlp(free_ps, st, at, c);
            busy += c.whole_ps;
            ++tlps;
        } while (done < len);
    } else {
        // Every TLP may go at t_ps: the first at max(t_ps, free), the others back to back.
        do {
            const uint32_t page = std::min(len - done, bytes_to_boundary(addr, 4096));
            uint32_t full = page / mps;
            const uint32_t rest = page - full * mps;
            tlps += full;
            busy += full_cost.whole_ps * full;
            if (full > 0 && done == 0) {
                end = start_tlp(free_ps, st, t_ps, full_cost);
                --full;
            }
            if (full > 0) {
                end = more_tlps(free_ps, st, full_cost, full);
            }
            if (rest > 0) {
                const tlp_cost c = cost(m_hdr_mem + rest);
                // The request's first TLP when its first page holds no full one.
                end = done == 0 && page == rest ? start_tlp(free_ps, st, t_ps, c)
                                                : more_tlps(free_ps, st, c, 1);
                ++tlps;
                busy += c.whole_ps;
            }
            done += page;
            addr += page;
        } while (done < len);
    }
    st.mwr_tlps += tlps;
    st.payload_bytes += len;
    st.wire_bytes += tlps * m_hdr_mem + len;
    st.busy_ps += busy;
    return end;
}

double pcie_link::read_timing(double t_ps, uint64_t addr, uint32_t len, read_parts* parts) {
    if (m_mem_latency_ps < 0) {
        // Host memory latency is part of the read round trip; ask the target once.
        tlm::tlm_generic_payload gp;
        uint8_t dummy = 0;
        gp.set_command(tlm::TLM_IGNORE_COMMAND);
        gp.set_address(0);
        gp.set_data_ptr(&dummy);
        gp.set_data_length(0);
        sc_core::sc_time d = sc_core::SC_ZERO_TIME;
        mem_out->b_transport(gp, d);
        m_mem_latency_ps = time_to_ps(d);
    }
    // Without busy tracking or streamed parts (every payload read of a run without a
    // timeseries), the loop has no calls: its state stays in registers.
    return m_track_busy || parts != nullptr ? read_requests<true>(t_ps, addr, len, parts)
                                            : read_requests<false>(t_ps, addr, len, nullptr);
}

// The loop keeps the link's state in locals, written back at the end: the same doubles in the
// same order as start_tlp / more_tlps compute them on the members, without reloading every
// member through their references at each TLP (a 4 KiB read is 8 requests of 2 completions
// each, and one read goes per packet sent). `Extras`: busy tracking or parts may be on.
template <bool Extras>
double pcie_link::read_requests(double t_ps, uint64_t addr, uint32_t len, read_parts* parts) {
    const uint32_t unit = m_cpl_unit;
    const uint32_t unit_shift = m_cpl_unit_shift;
    const uint32_t mrrs = m_cfg.mrrs;
    const double latency = m_latency_ps;
    const double mem_latency = m_mem_latency_ps;
    const tlp_cost mrd = m_mrd;
    const tlp_cost cpl_full = m_cpl_full;
    const bool track = Extras && m_track_busy;
    double* const tags = m_tag_free_ps.data();
    const size_t tag_count = m_tag_free_ps.size();
    size_t tag_next = m_tag_next;
    double up_free = m_up_free_ps;
    double down_free = m_down_free_ps;
    double data_arrival = t_ps;
    uint32_t done = 0;
    uint64_t requests = 0;
    uint64_t cpls = 0;
    uint64_t cpl_busy = 0;
    uint64_t tag_stall = 0;
    if (!Extras && len != 0 && unit <= mrrs && (addr & (mrrs - 1)) == 0 && len % mrrs == 0) {
        // Whole aligned requests (a payload read of whole pages): each is MRRS bytes from a
        // completion boundary, so one full completion, `more` full ones back to back and no
        // rest. The loop below with its per-request constants taken out: the same doubles.
        const uint32_t more = (mrrs >> unit_shift) - 1;
        requests = len / mrrs;
        cpls = requests * (1 + more);
        cpl_busy = cpl_full.whole_ps * cpls;
        for (uint64_t r = 0; r < requests; ++r) {
            double* tag = tags + tag_next;
            tag_next = tag_next + 1 == tag_count ? 0 : tag_next + 1;
            const double ready = std::max(t_ps, *tag);
            if (*tag > t_ps) {
                tag_stall += static_cast<uint64_t>(*tag - t_ps);
            }
            up_free = std::max(ready, up_free) + mrd.ps;
            double cpl_end = std::max(up_free + latency + mem_latency, down_free) + cpl_full.ps;
            for (uint32_t i = 0; i < more; ++i) {
                cpl_end += cpl_full.ps;
            }
            down_free = cpl_end;
            const double arrival = cpl_end + latency;
            *tag = arrival;
            data_arrival = std::max(data_arrival, arrival);
        }
    } else {
        do {
            const uint32_t n = std::min(std::min(len - done, mrrs), bytes_to_boundary(addr, 4096));
            // Take the tag that frees first. A tag frees when its last completion is in, and
            // completions leave the downstream direction one after the other: every tag taken
            // frees later than every tag taken before it. So the tags' free times, in the order
            // they were taken, are sorted: the one that frees first is the oldest (a ring, where a
            // heap would cost log(tags) per request for the same choice).
            double* tag = tags + tag_next;
            tag_next = tag_next + 1 == tag_count ? 0 : tag_next + 1;
            const double ready = std::max(t_ps, *tag);
            if (*tag > t_ps) {
                tag_stall += static_cast<uint64_t>(*tag - t_ps);
            }
            // The request on the upstream direction (start_tlp).
            const double req_start = std::max(ready, up_free);
            if (track) {
                track_reserved(m_up, req_start, req_start == up_free, mrd.ps);
            }
            up_free = req_start + mrd.ps;
            ++requests;
            const double at_memory = up_free + latency + mem_latency;
            // Completions, split at MPS (or at the 64 B read completion boundary): the first up to
            // a boundary at max(at_memory, free) (start_tlp), the full ones and the rest back to
            // back (more_tlps: one addition per TLP).
            const uint32_t head = std::min(n, bytes_to_boundary(addr, unit));
            const tlp_cost head_cost = head == unit ? cpl_full : cost(m_hdr_cpl + head);
            const double cpl_start = std::max(at_memory, down_free);
            if (track) {
                track_reserved(m_down, cpl_start, cpl_start == down_free, head_cost.ps);
            }
            double cpl_end = cpl_start + head_cost.ps;
            const uint32_t full = (n - head) >> unit_shift;  // unit is a power of two
            const uint32_t rest = n - head - full * unit;
            cpl_busy += head_cost.whole_ps + cpl_full.whole_ps * full;
            cpls += 1 + full;
            for (uint32_t i = 0; i < full; ++i) {
                cpl_end += cpl_full.ps;
            }
            if (track && full > 0) {
                m_down_ahead.back().ps += cpl_full.whole_ps * full;
                m_down_ahead_ps += cpl_full.whole_ps * full;
            }
            if (rest > 0) {
                const tlp_cost rest_cost = cost(m_hdr_cpl + rest);
                cpl_end += rest_cost.ps;
                if (track) {
                    m_down_ahead.back().ps += rest_cost.whole_ps;
                    m_down_ahead_ps += rest_cost.whole_ps;
                }
                cpl_busy += rest_cost.whole_ps;
                ++cpls;
            }
            down_free = cpl_end;
            const double arrival = cpl_end + latency;
            *tag = arrival;  // the newest: the ring's last
            data_arrival = std::max(data_arrival, arrival);
            addr += n;
            done += n;
            if (Extras && parts != nullptr) {
                parts->emplace_back(done, ps_to_time(data_arrival));
            }
        } while (done < len);
    }
    m_tag_next = tag_next;
    m_up_free_ps = up_free;
    m_down_free_ps = down_free;
    m_tag_stall_ps += tag_stall;
    m_up.mrd_tlps += requests;
    m_up.wire_bytes += requests * m_hdr_mem;
    m_up.busy_ps += requests * m_mrd.whole_ps;
    m_down.cpld_tlps += cpls;
    m_down.payload_bytes += len;
    m_down.wire_bytes += cpls * m_hdr_cpl + len;
    m_down.busy_ps += cpl_busy;
    return data_arrival;
}

namespace {
// Re-arms a payload kept across requests (the fields a fresh one would have).
void prepare(tlm::tlm_generic_payload& gp, tlm::tlm_command cmd, uint64_t addr, uint8_t* data,
             uint32_t len) {
    gp.set_command(cmd);
    gp.set_address(addr);
    gp.set_data_ptr(data);
    gp.set_data_length(len);
    gp.set_streaming_width(len);
    gp.set_byte_enable_ptr(nullptr);
    gp.set_byte_enable_length(0);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
}
}  // namespace

std::vector<uint8_t> pcie_link::take_buffer() {
    if (m_free_buffers.empty()) {
        return {};
    }
    std::vector<uint8_t> b = std::move(m_free_buffers.back());
    m_free_buffers.pop_back();
    return b;
}

void pcie_link::recycle(std::vector<uint8_t>&& b) {
    if (m_free_buffers.size() < 256) {
        m_free_buffers.push_back(std::move(b));
    }
}

tlm::tlm_response_status pcie_link::memory_read(uint64_t addr, uint8_t* data, uint32_t len) {
    tlm::tlm_generic_payload& gp = m_mem_gp;
    prepare(gp, tlm::TLM_READ_COMMAND, addr, data, len);
    sc_core::sc_time ignored = sc_core::SC_ZERO_TIME;  // latency is in read_timing
    mem_out->b_transport(gp, ignored);                 // a DMA read: counted by host memory
    if (gp.get_response_status() != tlm::TLM_OK_RESPONSE) {
        return gp.get_response_status();  // not backed: no data (writes in flight do not help)
    }
    // Writes still in flight were issued before this read and land before it (ordering).
    for (const auto& w : m_up_writes) {
        const uint64_t lo = std::max(addr, w.addr);
        const uint64_t hi = std::min(addr + len, w.addr + w.data.size());
        if (lo < hi) {
            std::memcpy(data + (lo - addr), w.data.data() + (lo - w.addr), hi - lo);
        }
    }
    return tlm::TLM_OK_RESPONSE;
}

void pcie_link::iommu_unmap(uint64_t addr, uint64_t len) {
    for (uint64_t p = addr / 4096; len > 0 && p <= (addr + len - 1) / 4096; ++p) {
        m_iommu_unmapped.insert(p);
    }
}

void pcie_link::iommu_map(uint64_t addr, uint64_t len) {
    for (uint64_t p = addr / 4096; len > 0 && p <= (addr + len - 1) / 4096; ++p) {
        m_iommu_unmapped.erase(p);
    }
}

bool pcie_link::iommu_blocks(uint64_t addr, uint32_t len) const {
    if (len == 0 || (addr >= MSI_BASE && addr < MSI_BASE + MSI_SIZE)) {
        return false;  // MSI writes are not translated
    }
    for (uint64_t p = addr / 4096; p <= (addr + len - 1) / 4096; ++p) {
        if (m_iommu_unmapped.count(p) != 0) {
            return true;
        }
    }
    return false;
}

void pcie_link::dev_b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    const sc_core::sc_time& now = hw::sim_now();  // b_transport does not yield
    const double t_ps = time_to_ps(now + delay);
    const uint64_t addr = gp.get_address();
    const uint32_t len = gp.get_data_length();
    tlm::tlm_response_status status = tlm::TLM_OK_RESPONSE;
    const bool blocked = !m_iommu_unmapped.empty() && iommu_blocks(addr, len);
    const dma_stream_ext* stream = gp.get_extension<dma_stream_ext>();
    if (blocked) {
        ++m_iommu_faults;
        status = tlm::TLM_GENERIC_ERROR_RESPONSE;  // Completer Abort from the root complex
    }
    if (gp.is_read()) {
        if (blocked) {
            std::memset(gp.get_data_ptr(), 0, len);
        } else {
            status = memory_read(addr, gp.get_data_ptr(), len);
        }
        const double arrival =
            read_timing(t_ps, addr, len, stream != nullptr ? stream->parts : nullptr);
        delay = ps_to_time(arrival) - now;
    } else if (gp.is_write() && blocked) {
        // The TLPs go out; the root complex drops them.
        const double sent = write_timing(t_ps, addr, len, m_up_free_ps, m_up, stream);
        delay = ps_to_time(sent) - now;
    } else if (gp.is_write()) {
        const double sent = write_timing(t_ps, addr, len, m_up_free_ps, m_up, stream);
        const sc_core::sc_time at = ps_to_time(sent + m_latency_ps);
        const uint8_t* p = gp.get_data_ptr();
        if (addr >= MSI_BASE && addr < MSI_BASE + MSI_SIZE) {
            ++m_msi_writes;
        }
        const bool was_empty = m_up_writes.empty();
        m_up_writes.push_back({at, addr, take_buffer()});
        m_up_writes.back().data.assign(p, p + len);
        m_up_writes_in_flight = static_cast<uint32_t>(m_up_writes.size());
        if (was_empty) {
            // on_upstream runs when it lands. Otherwise it is due for an earlier write, and
            // this one lands no earlier (posted writes leave in order): nothing to notify.
            m_up_event.notify(at - sc_core::sc_time_stamp());
        }
        delay = ps_to_time(sent) - now;
    }
    gp.set_response_status(status);
}

unsigned int pcie_link::dev_transport_dbg(tlm::tlm_generic_payload& gp) {
    return mem_out->transport_dbg(gp);
}

void pcie_link::host_b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    const double t_ps = time_to_ps(sc_core::sc_time_stamp() + delay);
    const uint32_t len = gp.get_data_length();
    if (gp.is_write()) {
        // Posted MMIO write: the CPU is done once the TLP is handed to the root port.
        const double sent = write_timing(t_ps, gp.get_address(), len, m_down_free_ps, m_down);
        const uint8_t* p = gp.get_data_ptr();
        const bool was_empty = m_down_mmio.empty();
        m_down_mmio.push_back(
            {ps_to_time(sent + m_latency_ps), gp.get_address(), std::vector<uint8_t>(p, p + len)});
        if (was_empty) {
            m_down_event.notify(sc_core::SC_ZERO_TIME);  // see dev_b_transport
        }
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
    } else if (gp.is_read()) {
        // Non-posted MMIO read: request down, completion up; the CPU stalls for the round trip.
        const double req_end = send_tlp(m_down_free_ps, m_down, t_ps, m_hdr_mem);
        ++m_down.mrd_tlps;
        const sc_core::sc_time arrival = ps_to_time(req_end + m_latency_ps);
        // PCIe ordering: the read does not pass the posted writes ahead of it. Deliver those
        // first, each annotated with its own arrival time, then the read at its arrival.
        while (!m_down_mmio.empty() && m_down_mmio.front().at <= arrival) {
            pending_mmio w = std::move(m_down_mmio.front());
            m_down_mmio.pop_front();
            tlm::tlm_generic_payload wr;
            wr.set_command(tlm::TLM_WRITE_COMMAND);
            wr.set_address(w.addr);
            wr.set_data_ptr(w.data.data());
            wr.set_data_length(static_cast<unsigned>(w.data.size()));
            wr.set_streaming_width(static_cast<unsigned>(w.data.size()));
            const sc_core::sc_time now = sc_core::sc_time_stamp();
            sc_core::sc_time d = w.at > now ? w.at - now : sc_core::SC_ZERO_TIME;
            bar_out->b_transport(wr, d);
        }
        sc_core::sc_time bar_delay = arrival - sc_core::sc_time_stamp();
        bar_out->b_transport(gp, bar_delay);
        const double cpl_end = send_tlp(
            m_up_free_ps, m_up, time_to_ps(sc_core::sc_time_stamp() + bar_delay), m_hdr_cpl + len);
        ++m_up.cpld_tlps;
        m_up.payload_bytes += len;  // the completion carries the register value
        delay = ps_to_time(cpl_end + m_latency_ps) - sc_core::sc_time_stamp();
    }
}

void pcie_link::on_upstream() {
    // Every write that has landed by now, in issue order; then sleep until the next one lands.
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    while (!m_up_writes.empty() && m_up_writes.front().at <= now) {
        pending_write w = std::move(m_up_writes.front());
        m_up_writes.pop_front();
        m_up_writes_in_flight = static_cast<uint32_t>(m_up_writes.size());
        if (w.addr >= MSI_BASE && w.addr < MSI_BASE + MSI_SIZE) {
            uint32_t data = 0;
            std::memcpy(&data, w.data.data(), std::min<size_t>(4, w.data.size()));
            if (m_msi_handler) {
                m_msi_handler(w.addr, data);
            }
            recycle(std::move(w.data));
            continue;
        }
        tlm::tlm_generic_payload& gp = m_mem_gp;
        prepare(gp, tlm::TLM_WRITE_COMMAND, w.addr, w.data.data(),
                static_cast<uint32_t>(w.data.size()));
        sc_core::sc_time d = sc_core::SC_ZERO_TIME;
        mem_out->b_transport(gp, d);  // memory latency does not delay a posted write's effect
        recycle(std::move(w.data));
    }
    if (!m_up_writes.empty()) {
        m_up_event.notify(m_up_writes.front().at - now);
    }
}

void pcie_link::downstream_thread() {
    for (;;) {
        while (m_down_mmio.empty()) {
            sc_core::wait(m_down_event);
        }
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        if (m_down_mmio.front().at > now) {
            sc_core::wait(m_down_mmio.front().at - now);
            continue;
        }
        pending_mmio w = std::move(m_down_mmio.front());
        m_down_mmio.pop_front();
        tlm::tlm_generic_payload gp;
        gp.set_command(tlm::TLM_WRITE_COMMAND);
        gp.set_address(w.addr);
        gp.set_data_ptr(w.data.data());
        gp.set_data_length(static_cast<unsigned>(w.data.size()));
        sc_core::sc_time d = sc_core::SC_ZERO_TIME;
        bar_out->b_transport(gp, d);
    }
}

}  // namespace rnic::fabric
