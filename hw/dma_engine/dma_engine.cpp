// SPDX-License-Identifier: Apache-2.0
// DMA engine.
#include "hw/dma_engine/dma_engine.h"

namespace rnic::hw {

const char* to_string(dma_client c) {
    switch (c) {
        case dma_client::WQE_FETCH:
            return "wqe_fetch";
        case dma_client::TX_PAYLOAD:
            return "tx_payload";
        case dma_client::RX_PAYLOAD:
            return "rx_payload";
        case dma_client::RQ_FETCH:
            return "rq_fetch";
        case dma_client::COMPLETION:
            return "completion";
        case dma_client::COMMAND:
            return "command";
        case dma_client::INTERRUPT:
            return "interrupt";
        case dma_client::NETDMA:
            return "netdma";
        case dma_client::CONTEXT:
            return "context";
        case dma_client::COUNT:
            break;
    }
    return "?";
}

const char* to_string(dma_status s) {
    switch (s) {
        case dma_status::OK:
            return "ok";
        case dma_status::UNSUPPORTED_REQUEST:
            return "unsupported_request";
        case dma_status::COMPLETER_ABORT:
            return "completer_abort";
    }
    return "?";
}

dma_engine_config parse_dma_engine_config(config::reader r) {
    dma_engine_config c;
    r.get("issue_cycles", c.issue_cycles, 0u, 1000u);
    r.finish();
    return c;
}

dma_engine::dma_engine(sc_core::sc_module_name name, const dma_engine_config& cfg,
                       const clock_domain& clk, sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_arbiter(clk) {
    m_stream = new fabric::dma_stream_ext;
    m_gp.set_extension(m_stream);  // freed with m_gp
    for (size_t i = 0; i < m_stats.size(); ++i) {
        const std::string c = to_string(static_cast<dma_client>(i));
        ctx.stats.add(this->name(), c + "_reads", m_stats[i].reads, "count", "DMA reads by " + c);
        ctx.stats.add(this->name(), c + "_writes", m_stats[i].writes, "count",
                      "DMA writes by " + c);
        ctx.stats.add(this->name(), c + "_read_bytes", m_stats[i].read_bytes, "bytes",
                      "bytes read from host memory by " + c);
        ctx.stats.add(this->name(), c + "_write_bytes", m_stats[i].write_bytes, "bytes",
                      "bytes written to host memory by " + c);
        ctx.stats.add(this->name(), c + "_errors", m_stats[i].errors, "count",
                      "DMA requests by " + c + " that completed with a PCIe error (UR/CA)");
    }
    if (ctx.vcd != nullptr) {
        sc_core::sc_trace(ctx.vcd, m_reads_in_flight,
                          std::string(this->name()) + ".reads_in_flight");
        sc_core::sc_trace(ctx.vcd, m_writes_in_flight,
                          std::string(this->name()) + ".writes_in_flight");
    }
}

dma_engine::client_stats& dma_engine::count(dma_client who, tlm::tlm_command cmd, uint32_t len) {
    client_stats& s = m_stats[static_cast<int>(who)];
    if (cmd == tlm::TLM_READ_COMMAND) {
        ++s.reads;
        s.read_bytes += len;
    } else {
        ++s.writes;
        s.write_bytes += len;
    }
    return s;
}

bool dma_engine::issues_at_once() {
    // From another block's grant (the context cache's write-back of the line it evicts, in a
    // timestep_arbiter round): that grant already runs in a fixed order, after every process
    // of the instant. From a method, which cannot wait for a grant.
    return in_grant() || sc_core::sc_get_curr_simcontext()->get_curr_proc_info()->kind ==
                             sc_core::SC_METHOD_PROC_;
}

sc_core::sc_time dma_engine::transport(dma_client who, tlm::tlm_command cmd, uint64_t addr,
                                       void* data, uint32_t len, dma_status* status,
                                       const sc_core::sc_time& hold,
                                       const fabric::dma_stream_ext* stream) {
    client_stats& s = count(who, cmd, len);
    // The link's time is reserved in grant order: two requests of one cycle (say a payload
    // write and a CQE write) must not go in whichever order their processes ran.
    sc_core::sc_time done;
    dma_status st = dma_status::OK;
    if (issues_at_once()) {
        done = issue(cmd, addr, data, len, st, stream);
    } else {
        m_arbiter.request(
            static_cast<uint32_t>(who), [&] { done = issue(cmd, addr, data, len, st, stream); },
            hold);
    }
    if (st != dma_status::OK) {
        ++s.errors;
    }
    if (status != nullptr) {
        *status = st;
    }
    return done;
}

// At the grant (on the clock edge): the request reaches PCIe issue_cycles later.
sc_core::sc_time dma_engine::issue(tlm::tlm_command cmd, uint64_t addr, void* data, uint32_t len,
                                   dma_status& st, const fabric::dma_stream_ext* stream) {
    const sc_core::sc_time now = sim_now();
    const sc_core::sc_time issue = m_clk.edge_at_or_after(now) + m_clk.cycles(m_cfg.issue_cycles);
    tlm::tlm_generic_payload& gp = m_gp;
    gp.set_command(cmd);
    gp.set_address(addr);
    gp.set_data_ptr(static_cast<unsigned char*>(data));
    gp.set_data_length(len);
    gp.set_streaming_width(len);
    gp.set_byte_enable_ptr(nullptr);
    gp.set_byte_enable_length(0);
    gp.set_dmi_allowed(false);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = issue - now;
    if (stream != nullptr) {
        m_stream->copy_from(*stream);
        dma_out->b_transport(gp, delay);
        *m_stream = fabric::dma_stream_ext{};
    } else {
        dma_out->b_transport(gp, delay);
    }
    const tlm::tlm_response_status rs = gp.get_response_status();
    st = dma_status::OK;
    if (rs == tlm::TLM_ADDRESS_ERROR_RESPONSE) {
        st = dma_status::UNSUPPORTED_REQUEST;
    } else if (rs != tlm::TLM_OK_RESPONSE && rs != tlm::TLM_INCOMPLETE_RESPONSE) {
        // INCOMPLETE: a target that does not set a status (plain benches) counts as OK.
        st = dma_status::COMPLETER_ABORT;
    }
    return now + delay;
}

sc_core::sc_time dma_engine::read(dma_client who, uint64_t addr, void* data, uint32_t len,
                                  dma_status* status) {
    return transport(who, tlm::TLM_READ_COMMAND, addr, data, len, status);
}

void dma_engine::read_posted(dma_client who, uint64_t addr, void* data, uint32_t len,
                             posted_read& r, fabric::read_parts* parts) {
    count(who, tlm::TLM_READ_COMMAND, len);
    r.engine = this;
    r.who = who;
    r.addr = addr;
    r.data = data;
    r.len = len;
    r.parts = parts;
    r.status = dma_status::OK;
    if (issues_at_once()) {
        r();
        r.ticket.served = true;
        return;
    }
    m_arbiter.post(static_cast<uint32_t>(who), r, r.ticket);
}

void dma_engine::posted_read::operator()() {
    fabric::dma_stream_ext x;
    if (parts != nullptr) {
        parts->clear();
        x.parts = parts;
    }
    done = engine->issue(tlm::TLM_READ_COMMAND, addr, data, len, status,
                         parts != nullptr ? &x : nullptr);
    if (status != dma_status::OK) {
        ++engine->m_stats[static_cast<int>(who)].errors;
    }
}

sc_core::sc_time dma_engine::write_streamed(dma_client who, uint64_t addr, const void* data,
                                            uint32_t len, const sc_core::sc_time& data_start,
                                            double ps_per_byte) {
    fabric::dma_stream_ext x;
    x.ps_per_byte = ps_per_byte;
    x.data_start = data_start;
    return transport(who, tlm::TLM_WRITE_COMMAND, addr, const_cast<void*>(data), len, nullptr,
                     sc_core::SC_ZERO_TIME, &x);
}

sc_core::sc_time dma_engine::write(dma_client who, uint64_t addr, const void* data, uint32_t len,
                                   dma_status* status) {
    return transport(who, tlm::TLM_WRITE_COMMAND, addr, const_cast<void*>(data), len, status);
}

dma_status dma_engine::read_wait(dma_client who, uint64_t addr, void* data, uint32_t len) {
    ++m_reads_in_flight;
    dma_status st = dma_status::OK;
    // Nothing comes back before issue_cycles after the edge: sleep through them at once.
    const sc_core::sc_time done = transport(who, tlm::TLM_READ_COMMAND, addr, data, len, &st,
                                            m_clk.cycles(m_cfg.issue_cycles));
    m_clk.wait_until(done);
    --m_reads_in_flight;
    return st;
}

dma_status dma_engine::write_wait(dma_client who, uint64_t addr, const void* data, uint32_t len) {
    ++m_writes_in_flight;
    dma_status st = dma_status::OK;
    m_clk.wait_until(transport(who, tlm::TLM_WRITE_COMMAND, addr, const_cast<void*>(data), len, &st,
                               m_clk.cycles(m_cfg.issue_cycles)));
    --m_writes_in_flight;
    return st;
}

dma_status dma_engine::write_wait(dma_client who, uint64_t addr, const void* data, uint32_t len,
                                  sc_core::sc_event& done) {
    ++m_writes_in_flight;
    client_stats& s = count(who, tlm::TLM_WRITE_COMMAND, len);
    dma_status st = dma_status::OK;
    auto grant = [&] {
        const sc_core::sc_time end =
            issue(tlm::TLM_WRITE_COMMAND, addr, const_cast<void*>(data), len, st, nullptr);
        done.notify(m_clk.edge_at_or_after(end) - sc_core::sc_time_stamp());
    };
    timestep_arbiter::ticket t;  // the round marks it served: it outlives the wait below
    if (issues_at_once()) {
        grant();
    } else {
        // Posted: the grant comes in this edge's round, in the order transport() would have it
        // (at once when the request is alone at a settled instant).
        m_arbiter.post(static_cast<uint32_t>(who), grant, t);
    }
    sc_core::wait(done);
    if (st != dma_status::OK) {
        ++s.errors;
    }
    --m_writes_in_flight;
    return st;
}

}  // namespace rnic::hw
