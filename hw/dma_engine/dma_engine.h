// SPDX-License-Identifier: Apache-2.0
// DMA engine: the NIC's one master on PCIe. Every block that reads or writes host memory
// (WQE fetch, payload, receive placement, CQEs, commands, MSI-X) goes through it.
#pragma once

#include <array>
#include <cstdint>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "hw/common/clock_domain.h"
#include "hw/common/config_reader.h"
#include "hw/common/sim_context.h"
#include "hw/common/timestep_arbiter.h"
#include "tlm/pcie/dma_stream.h"

namespace rnic::hw {

enum class dma_client : uint8_t {
    WQE_FETCH,
    TX_PAYLOAD,
    RX_PAYLOAD,
    RQ_FETCH,
    COMPLETION,  // CQEs and EQEs
    COMMAND,
    INTERRUPT,  // MSI-X
    NETDMA,
    CONTEXT,  // context cache fills and write-backs
    COUNT
};
const char* to_string(dma_client c);

// How a DMA request completed on PCIe. A failed read delivers zeros; a failed write changed
// nothing. The requesting block decides what the error means (CQ error, SRQ error, ...).
enum class dma_status : uint8_t {
    OK,
    UNSUPPORTED_REQUEST,  // UR: no memory behind the address (host released it)
    COMPLETER_ABORT,      // CA: the root complex / IOMMU refused it (mapping released)
};
const char* to_string(dma_status s);

struct dma_engine_config {
    uint32_t issue_cycles = 2;  // descriptor decode before the first TLP: +2 cycles per request
};
dma_engine_config parse_dma_engine_config(config::reader r);

// Timing: a request is issued issue_cycles after the caller asks (on the NIC clock grid); the
// PCIe model then returns when the data is in (read) or the last TLP has left (posted write).
// Reads copy the data at issue (the PCIe model accounts for writes still in flight). Callers
// that pipeline use the returned times; simple callers use the *_wait variants.
// Requests of one clock cycle (the blocks' request lines sampled at the edge) are granted the
// link by a fixed priority, the client's (dma_client order), then the requesting process's
// name (timestep_arbiter), never in the order SystemC happens to run the requesters: who gets
// the link first decides every later TLP's time. A call from an SC_THREAD returns at the grant
// (the edge at or after the call); the *_wait variants sleep through issue_cycles. A non-waiting
// call from another arbiter's grant (a method, already in a fixed order) is issued at once.
class dma_engine : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<dma_engine> dma_out{"dma_out"};

    dma_engine(sc_core::sc_module_name name, const dma_engine_config& cfg, const clock_domain& clk,
               sim_context& ctx);

    // Issue now; return the time the last byte has arrived in the NIC. `status` (optional)
    // receives how the request completed.
    sc_core::sc_time read(dma_client who, uint64_t addr, void* data, uint32_t len,
                          dma_status* status = nullptr);
    // Issue now; return the time the last TLP has left the NIC (posted).
    sc_core::sc_time write(dma_client who, uint64_t addr, const void* data, uint32_t len,
                           dma_status* status = nullptr);
    // The same for data still coming in at `ps_per_byte` from `data_start` (byte i in from
    // data_start + (i + 1) x ps_per_byte): each TLP leaves once its bytes are in.
    sc_core::sc_time write_streamed(dma_client who, uint64_t addr, const void* data, uint32_t len,
                                    const sc_core::sc_time& data_start, double ps_per_byte);
    // A read whose requester goes on before the grant (timestep_arbiter::post): read_posted
    // returns at the edge (or at once, issued, when the request is alone at a settled
    // instant), the grant issues it at that edge in the order read() would, and
    // wait_granted() returns when it has (at once if it has): then `done` is the time the
    // last byte is in, `status` how it completed, `parts` (if given) the time each read
    // request's bytes are in (a block that streams the data on as it arrives:
    // tlm/pcie/dma_stream.h). The caller keeps `r` alive until then and does not touch the data
    // before. For a block with other waiting to do first (the transmit engine: the send path's FIFO
    // room); the result is the same as read()'s, without a wake-up at the grant.
    struct posted_read {
        sc_core::sc_time done;
        dma_status status = dma_status::OK;
        // Set by read_posted.
        dma_engine* engine = nullptr;
        dma_client who = dma_client::TX_PAYLOAD;
        uint64_t addr = 0;
        void* data = nullptr;
        uint32_t len = 0;
        fabric::read_parts* parts = nullptr;
        timestep_arbiter::ticket ticket;
        void operator()();  // the grant: issue it
    };
    void read_posted(dma_client who, uint64_t addr, void* data, uint32_t len, posted_read& r,
                     fabric::read_parts* parts = nullptr);
    void wait_granted(const posted_read& r) { m_arbiter.wait_granted(r.ticket); }
    // From an SC_THREAD: issue and wait until done; returns how the request completed (the
    // status costs nothing extra: it is the payload's response status).
    dma_status read_wait(dma_client who, uint64_t addr, void* data, uint32_t len);
    dma_status write_wait(dma_client who, uint64_t addr, const void* data, uint32_t len);
    // The same, sleeping once instead of twice (through issue_cycles, then to the end): the
    // grant notifies `done` for the edge at or after the last TLP has left, the time
    // write_wait returns. `done`: an event only the calling thread waits on (the CQ writer's).
    dma_status write_wait(dma_client who, uint64_t addr, const void* data, uint32_t len,
                          sc_core::sc_event& done);

    struct client_stats {
        uint64_t reads = 0;
        uint64_t writes = 0;
        uint64_t read_bytes = 0;
        uint64_t write_bytes = 0;
        uint64_t errors = 0;  // requests that completed with UR or CA
    };
    const client_stats& get_stats(dma_client c) const { return m_stats[static_cast<int>(c)]; }

private:
    // Arbitrates, then issues; `hold`: the caller waits at least that long after the edge anyway.
    // `stream`: the request's streaming options (null: none).
    sc_core::sc_time transport(dma_client who, tlm::tlm_command cmd, uint64_t addr, void* data,
                               uint32_t len, dma_status* status,
                               const sc_core::sc_time& hold = sc_core::SC_ZERO_TIME,
                               const fabric::dma_stream_ext* stream = nullptr);
    // A request from a grant or a method is issued at once, not through the arbiter.
    static bool issues_at_once();
    // Counts a request of `who` (reads or writes and their bytes); returns its counters.
    client_stats& count(dma_client who, tlm::tlm_command cmd, uint32_t len);
    sc_core::sc_time issue(tlm::tlm_command cmd, uint64_t addr, void* data, uint32_t len,
                           dma_status& status, const fabric::dma_stream_ext* stream);

    dma_engine_config m_cfg;
    const clock_domain& m_clk;
    // One payload for every request: b_transport does not yield, so no two requests share it
    // at once, and a member spares a construction and destruction per request.
    tlm::tlm_generic_payload m_gp;
    fabric::dma_stream_ext* m_stream = nullptr;  // m_gp's extension (owned by m_gp)
    timestep_arbiter m_arbiter;  // same-cycle requests: by client, then requesting process
    std::array<client_stats, static_cast<size_t>(dma_client::COUNT)> m_stats{};
    uint32_t m_reads_in_flight = 0;   // traced
    uint32_t m_writes_in_flight = 0;  // traced: write_wait() callers not yet done
};

}  // namespace rnic::hw
