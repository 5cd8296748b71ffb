// SPDX-License-Identifier: Apache-2.0
// PCIe link between the RNIC (endpoint) and the host (root complex + memory), at TLP level.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "tlm/pcie/dma_stream.h"
#include "tlm/pcie/pcie_config.h"

namespace rnic::fabric {

// Timing model (../shared/reference/pcie_and_rnic_figures.md):
// - Each direction is a serial resource at BW_tlp = raw x (1 - 8/AckLimit - 8/FCUpdate - 4/1538)
//   bytes per ns. A TLP occupies it for (header + payload) / BW_tlp: MWr/MRd 24 B + payload,
//   CplD 20 B + payload (+4 B ECRC). TLPs go out back to back; nothing is clocked while idle.
// - Writes are split at MPS and 4 KiB boundaries, posted: b_transport returns when the last TLP
//   has left the device; the bytes land in host memory latency_ns later, in issue order.
// - Reads are split at MRRS and 4 KiB boundaries; each request takes a tag (max_read_tags),
//   crosses the link, waits for host memory, and returns as CplDs of MPS (or RCB-aligned 64 B)
//   on the other direction. b_transport returns the time the last completion arrives; the tag
//   is free from then on. The data is what memory holds at issue plus writes still in flight
//   ahead of the read (PCIe ordering: a read does not pass a posted write).
// - Streaming (tlm/pcie/dma_stream.h, for a block that cuts through): a read reports each read
//   request's arrival (a prefix of the data is in before the last completion); a write whose
//   data is still coming in at a rate sends each TLP no earlier than its last byte is in.
// Bulk transfers are computed in closed form: no event per TLP.
// Errors: the root complex's IOMMU (iommu_unmap) rejects a DMA that touches an unmapped page
// with Completer Abort (TLM_GENERIC_ERROR_RESPONSE): the TLPs still cross the link (same
// timing), nothing reaches memory, a read's data is zero. A posted write's rejection is
// reported to the device at issue (standing for the fault the NIC would see from its address
// translation / AER), so the requesting block can raise its error. A read of memory that is
// not backed returns host memory's Unsupported Request (TLM_ADDRESS_ERROR_RESPONSE); a posted
// write to it is dropped at memory (no completion, as in PCIe). With nothing unmapped the
// good path costs one emptiness test per DMA.
class pcie_link : public sc_core::sc_module {
public:
    // Device side.
    tlm_utils::simple_target_socket<pcie_link> dev_dma_in{"dev_dma_in"};  // NIC DMA / MSI-X
    tlm_utils::simple_initiator_socket<pcie_link> bar_out{"bar_out"};     // to the NIC's BAR0
    // Host side.
    tlm_utils::simple_target_socket<pcie_link> host_mmio_in{"host_mmio_in"};  // CPU MMIO
    tlm_utils::simple_initiator_socket<pcie_link> mem_out{"mem_out"};         // host memory

    static constexpr uint64_t MSI_BASE = 0xFEE00000;  // MSI window on x86
    static constexpr uint64_t MSI_SIZE = 0x100000;

    pcie_link(sc_core::sc_module_name name, const pcie_config& cfg, const std::string& stats_prefix,
              hw::sim_context& ctx);

    // The host's interrupt controller: called at the time an MSI-X write arrives.
    void set_msi_handler(std::function<void(uint64_t addr, uint32_t data)> fn) {
        m_msi_handler = std::move(fn);
    }

    // IOMMU: DMA to the pages of [addr, addr+len) fails from now on (the host released the
    // adapter's mapping, e.g. ReleaseLAM or a freed ring); iommu_map restores them.
    void iommu_unmap(uint64_t addr, uint64_t len);
    void iommu_map(uint64_t addr, uint64_t len);
    uint64_t iommu_faults() const { return m_iommu_faults; }

    const pcie_config& config() const { return m_cfg; }
    // Wire time of n bytes in one direction.
    double byte_ns() const { return m_byte_ns; }

    struct direction_stats {
        uint64_t mwr_tlps = 0;
        uint64_t mrd_tlps = 0;
        uint64_t cpld_tlps = 0;
        uint64_t payload_bytes = 0;
        uint64_t wire_bytes = 0;  // TLP headers + payload (DLLP overhead is in the rate)
        uint64_t busy_ps = 0;
    };
    const direction_stats& upstream() const { return m_up; }
    const direction_stats& downstream() const { return m_down; }
    uint64_t tag_stall_ps() const { return m_tag_stall_ps; }
    // Busy time of a direction (up: device->host) up to `now_ps`: busy_ps counts a TLP's whole
    // time when the TLP is reserved, possibly ahead of now; this takes off the part still
    // ahead. Only after track_busy(true) before the run (timeseries.csv turns it on; off, a TLP
    // costs nothing more), else busy_ps itself.
    void track_busy(bool on) { m_track_busy = on; }
    uint64_t busy_ps_at(bool up, double now_ps);

private:
    struct pending_write {
        sc_core::sc_time at;
        uint64_t addr;
        std::vector<uint8_t> data;
    };
    struct pending_mmio {
        sc_core::sc_time at;
        uint64_t addr;
        std::vector<uint8_t> data;
    };

    void dev_b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    void host_b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    unsigned int dev_transport_dbg(tlm::tlm_generic_payload& gp);
    void on_upstream();        // SC_METHOD: applies posted writes to host memory as they land
    void downstream_thread();  // delivers CPU MMIO writes to the NIC BAR when they arrive

    // A TLP's wire time on one direction, and the whole ps busy_ps counts for it.
    struct tlp_cost {
        double ps;
        uint64_t whole_ps;
    };
    tlp_cost cost(uint32_t bytes) const;  // of a TLP of `bytes` (header included)
    // Reserves one direction for a TLP no earlier than `t_ps`; returns its end. The caller
    // counts it (wire_bytes, busy_ps, TLPs).
    double start_tlp(double& free_ps, direction_stats& st, double t_ps, const tlp_cost& c);
    // `count` more TLPs back to back after the one just reserved on that direction: the same
    // end as `count` start_tlp calls. The caller counts them.
    double more_tlps(double& free_ps, direction_stats& st, const tlp_cost& c, uint32_t count);
    // start_tlp for a TLP of `bytes`, counted.
    double send_tlp(double& free_ps, direction_stats& st, double t_ps, uint32_t bytes);
    sc_core::sc_time ps_to_time(double ps) const;  // ceil(ps) ps
    // With track_busy: notes a TLP's reservation (send_tlp).
    void track_reserved(const direction_stats& st, double start, bool back_to_back, double dur);
    // `parts` (dma_stream_ext): filled per read request. `stream`: a write's pacing.
    double read_timing(double t_ps, uint64_t addr, uint32_t len, read_parts* parts = nullptr);
    template <bool Extras>
    double read_requests(double t_ps, uint64_t addr, uint32_t len, read_parts* parts);
    double write_timing(double t_ps, uint64_t addr, uint32_t len, double& free_ps,
                        direction_stats& st, const dma_stream_ext* stream = nullptr);
    tlm::tlm_response_status memory_read(uint64_t addr, uint8_t* data, uint32_t len);
    // Buffers of posted writes in flight are recycled: no allocation per DMA write.
    std::vector<uint8_t> take_buffer();
    void recycle(std::vector<uint8_t>&& b);

    pcie_config m_cfg;
    double m_byte_ns;
    double m_latency_ps;
    double m_mem_latency_ps = -1;
    uint32_t m_hdr_mem;         // MWr / MRd header + framing + DLL
    uint32_t m_hdr_cpl;         // CplD header + framing + DLL
    uint64_t m_ps_value;        // sc_time value of 1 ps
    uint32_t m_cpl_unit;        // completions split at this boundary: MPS, or the 64 B RCB
    uint32_t m_cpl_unit_shift;  // log2(m_cpl_unit)
    tlp_cost m_mrd;             // a read request
    tlp_cost m_cpl_full;        // a completion of m_cpl_unit bytes
    tlp_cost m_mwr_full;        // a write TLP of MPS bytes
    double m_up_free_ps = 0;
    double m_down_free_ps = 0;
    std::vector<double> m_tag_free_ps;  // per read tag: when it frees; a ring, oldest first
    size_t m_tag_next = 0;              // the oldest
    std::deque<pending_write> m_up_writes;
    std::deque<pending_mmio> m_down_mmio;
    hw::quick_event m_up_event;
    hw::quick_event m_down_event;
    std::vector<std::vector<uint8_t>> m_free_buffers;
    tlm::tlm_generic_payload m_mem_gp;  // host memory accesses (b_transport does not yield)
    std::function<void(uint64_t, uint32_t)> m_msi_handler;
    direction_stats m_up;
    direction_stats m_down;
    uint64_t m_tag_stall_ps = 0;
    // With track_busy: per direction, the TLPs reserved and not yet over at the last
    // busy_ps_at (start, ps counted), in time order, and their ps.
    struct reserved {
        double start;
        uint64_t ps;
    };
    bool m_track_busy = false;
    std::deque<reserved> m_up_ahead;
    std::deque<reserved> m_down_ahead;
    uint64_t m_up_ahead_ps = 0;
    uint64_t m_down_ahead_ps = 0;
    uint64_t m_msi_writes = 0;
    uint64_t m_iommu_faults = 0;
    std::unordered_set<uint64_t> m_iommu_unmapped;  // 4 KiB page numbers
    bool iommu_blocks(uint64_t addr, uint32_t len) const;
    // Traced.
    uint32_t m_up_writes_in_flight = 0;
};

}  // namespace rnic::fabric
