// SPDX-License-Identifier: Apache-2.0
// Receive path: parser, responder, requester response handling.
#include "hw/recv_path/recv_path.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hw/hsi/hsi.h"
#include "hw/roce/protocol.h"
#include "tlm/ethernet/vlan.h"

namespace rnic::hw {

namespace {
using rc::is_read_response;
using rc::is_send;
using rc::is_write;
using roce::HALF_PSN;
using roce::packets_of;
using roce::PSN_MASK;
}  // namespace

recv_path_config parse_recv_path_config(config::reader r) {
    recv_path_config c;
    r.get("fifo_bytes", c.fifo_bytes, uint64_t{1024}, uint64_t{1} << 32);
    r.get("parse_cycles", c.parse_cycles, 0u, 1000u);
    r.get("parse_pipelined", c.parse_pipelined);
    r.get("lanes", c.lanes, 1u, 32u);
    r.get("placement_lag_ns", c.placement_lag_ns, 0.0, 1e6);
    r.get("ack_coalesce", c.ack_coalesce, 1u, 1024u);
    r.get("ack_delay_ns", c.ack_delay_ns, 0.0, 1e9);
    r.get("rnr_timer_code", c.rnr_timer_code, 0u, 31u);
    r.get("rq_prefetch", c.rq_prefetch, 0u, 64u);
    r.get("cut_through", c.cut_through);
    r.get("pfc_headroom_bytes", c.pfc_headroom_bytes, uint64_t{0}, uint64_t{1} << 32);
    r.get("pfc_response_quanta", c.pfc_response_quanta, 0u, 65535u);
    r.get("pfc_xon_bytes", c.pfc_xon_bytes, uint64_t{0}, uint64_t{1} << 32);
    r.get("pfc_priorities", c.pfc_priorities, 0u, 255u);
    if (c.pfc_headroom_bytes != 0 && c.pfc_headroom_bytes >= c.fifo_bytes) {
        r.error("pfc_headroom_bytes",
                "must be below fifo_bytes (" + std::to_string(c.fifo_bytes) + ")");
    }
    r.finish();
    return c;
}

uint32_t pfc_response_quanta(double rate_gbps) {
    // IEEE 802.3 Table 31D-1 (PFC delay constraints), in pause quanta: 10GBASE-R 60,
    // 25GBASE-R 80, 40GBASE-R 118, 100GBASE-R 394, 400GBASE-R 905 (as bit times: 30720,
    // 40960, 60416, 201728, 463360). A rate between two classes takes the faster class's value.
    if (rate_gbps <= 10) {
        return 60;
    }
    if (rate_gbps <= 25) {
        return 80;
    }
    if (rate_gbps <= 40) {
        return 118;
    }
    if (rate_gbps <= 100) {
        return 394;
    }
    return 905;
}

pfc_thresholds nic_pfc_thresholds(const recv_path_config& c, double rate_gbps,
                                  double propagation_ns) {
    pfc_thresholds t;
    const uint64_t frame = fabric::eth_wire_bytes(c.max_frame_bytes);
    if (c.pfc_headroom_bytes != 0) {
        t.headroom = c.pfc_headroom_bytes;
    } else {
        const uint32_t quanta =
            c.pfc_response_quanta != 0 ? c.pfc_response_quanta : pfc_response_quanta(rate_gbps);
        t.headroom = static_cast<uint64_t>(std::ceil(2.0 * propagation_ns * rate_gbps / 8)) +
                     2 * frame + fabric::eth_wire_bytes(fabric::PFC_FRAME_BYTES) +
                     uint64_t{quanta} * 64;
    }
    t.xoff = c.fifo_bytes > t.headroom ? c.fifo_bytes - t.headroom : 0;
    t.xon = c.pfc_xon_bytes != 0 ? std::min(c.pfc_xon_bytes, t.xoff)
                                 : (t.xoff > frame ? t.xoff - frame : 0);
    return t;
}

recv_path::recv_path(sc_core::sc_module_name name, const recv_path_config& cfg,
                     const clock_domain& clk, const nic_identity& id, context_store& contexts,
                     translation& xlate, dma_engine& dma, tx_engine_if& tx, cq_writer& cqw,
                     sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_id(id)
    , m_contexts(contexts)
    , m_xlate(xlate)
    , m_dma(dma)
    , m_tx(tx)
    , m_cq_writer(cqw)
    , m_ctx(ctx)
    , m_fifo("rx_fifo", cfg.fifo_bytes / 60 + 1)  // bounded by bytes (60 B: shortest frame)
    , m_recv_segments(contexts.max_qps())
    , m_write_segments(contexts.max_qps())
    , m_write_ahead(contexts.max_qps())
    , m_pending_acks(contexts.max_qps())
    , m_rq_prefetch(static_cast<size_t>(contexts.max_qps()) + contexts.max_srqs()) {
    SC_HAS_PROCESS(recv_path);
    SC_THREAD(rx_thread);
    SC_THREAD(ack_thread);
    m_placement_lag = sc_core::sc_time(cfg.placement_lag_ns, sc_core::SC_NS);
    const std::string b = this->name();
    for (uint32_t i = 0; i < cfg.lanes; ++i) {
        m_lanes.emplace_back();
    }
    m_lanes[0].fifo = &m_fifo;
    m_lanes[0].track = b;
    for (uint32_t i = 1; i < cfg.lanes; ++i) {
        // Each lane can hold every frame the buffer can (steering may send all to one lane).
        m_lanes[i].own_fifo = std::make_unique<channel<fabric::eth_frame>>(
            "rx_fifo" + std::to_string(i), cfg.fifo_bytes / 60 + 1);
        m_lanes[i].fifo = m_lanes[i].own_fifo.get();
        m_lanes[i].track = b + ".lane" + std::to_string(i);
        sc_core::sc_spawn([this, i] { lane_thread(i); },
                          ("rx_thread_" + std::to_string(i)).c_str());
    }
    auto& s = ctx.stats;
    s.add(b, "frames", m_stats.frames, "count", "frames received");
    s.add(
        b, "busy_ps", [this] { return nlohmann::json(busy_ps_at(sc_core::sc_time_stamp())); }, "ps",
        "time the receive thread was handling frames (up to now: timeseries.csv reads it)");
    s.add(b, "bytes", m_stats.bytes, "bytes", "frame bytes received");
    s.add(b, "fifo_drops", m_stats.fifo_drops, "count", "frames dropped: receive buffer full");
    s.add(b, "lossless_drops", m_stats.lossless_drops, "count",
          "frames of a PFC-paused priority dropped on a PFC link: receive buffer full although "
          "lossless (the headroom did not cover what was on the cable; never > 0 when sized)");
    s.add(b, "fifo_peak_bytes", m_stats.fifo_peak_bytes, "bytes",
          "peak receive buffer occupancy (frame bytes)");
    s.add(b, "parse_errors", m_stats.parse_errors, "count", "frames dropped: malformed");
    s.add(b, "bad_icrc", m_stats.bad_icrc, "count", "frames dropped: ICRC mismatch");
    s.add(b, "unknown_qp", m_stats.unknown_qp, "count", "frames dropped: no such QP");
    s.add(b, "bad_state", m_stats.bad_state, "count", "frames dropped: QP not ready");
    s.add(b, "duplicates", m_stats.duplicates, "count", "duplicate requests (re-ACKed)");
    s.add(b, "out_of_sequence", m_stats.out_of_sequence, "count",
          "requests ahead of the expected PSN");
    s.add(b, "bad_opcode_sequence", m_stats.bad_opcode_sequence, "count",
          "First/Middle/Last out of order");
    s.add(b, "payload_bytes", m_stats.payload_bytes, "bytes", "payload placed in host memory");
    if (m_cfg.cut_through) {
        s.add(b, "streamed_writes", m_stats.streamed_writes, "count",
              "payload DMA writes issued while their frame was still coming in (cut_through)");
    }
    s.add(b, "messages", m_stats.messages, "count", "request messages completed as responder");
    s.add(b, "receive_wqes", m_stats.receive_wqes, "count", "receive WQEs consumed");
    s.add(b, "rq_prefetch_hits", m_stats.rq_prefetch_hits, "count",
          "receive WQEs found already read ahead");
    s.add(b, "rnr", m_stats.rnr, "count", "SENDs with no receive posted (RNR NAK)");
    s.add(b, "naks_sent", m_stats.naks_sent, "count", "NAKs sent");
    s.add(b, "acks_received", m_stats.acks_received, "count", "ACKs received");
    s.add(b, "naks_received", m_stats.naks_received, "count", "NAKs received");
    s.add(b, "read_requests", m_stats.read_requests, "count", "READ requests served");
    s.add(b, "duplicate_reads", m_stats.duplicate_reads, "count",
          "duplicate READ requests served again (counted in read_requests too)");
    s.add(b, "read_responses", m_stats.read_responses, "count", "READ response packets placed");
    s.add(b, "protection_errors", m_stats.protection_errors, "count",
          "key, PD, rights or bounds faults");
    s.add(b, "fatal_naks", m_stats.fatal_naks, "count",
          "access / invalid request / operational NAKs sent (the QP went to error)");
    s.add(b, "flushed_receives", m_stats.flushed_receives, "count",
          "receive WQEs completed with a flush error (QP in error)");
    if (cfg.lanes > 1) {
        m_srq_busy.resize(contexts.max_srqs());
        for (uint32_t i = 0; i < cfg.lanes; ++i) {
            const std::string l = "lane" + std::to_string(i);
            s.add(b, l + "_frames", m_lanes[i].stats.frames, "count",
                  "frames handled by receive lane " + std::to_string(i));
            s.add(
                b, l + "_busy_ps",
                [this, i] { return nlohmann::json(lane_busy_ps_at(i, sc_core::sc_time_stamp())); },
                "ps", "time receive lane " + std::to_string(i) + " was handling frames");
            s.add(b, l + "_stall_ps", m_lanes[i].stats.stall_ps, "ps",
                  "of that, time receive lane " + std::to_string(i) +
                      " waited for the transmit engine, the CQ writer, the placement buffer or "
                      "another lane's same-cycle hand-off");
        }
    }
    if (selective()) {
        m_sr_writes.resize(contexts.max_qps());  // empty per QP until it sees a WRITE
        s.add(b, "sr_selective_naks", m_stats.sr_selective_naks, "count",
              "selective NAKs sent: resend the one packet at the expected PSN");
        s.add(b, "sr_goback_naks", m_stats.sr_goback_naks, "count",
              "sequence NAKs sent under selective repeat: a packet past the gap was dropped");
        s.add(b, "sr_repeated_naks", m_stats.sr_repeated_naks, "count",
              "selective NAKs sent again: an AckReq packet past a gap already NAKed");
        s.add(b, "sr_ooo_placed", m_stats.sr_ooo_placed, "count",
              "packets past the expected PSN placed directly and kept in the bitmap window");
        s.add(b, "sr_window_drops", m_stats.sr_window_drops, "count",
              "packets past the bitmap window (rnic.transport.sr_window): dropped");
        s.add(b, "sr_unkept", m_stats.sr_unkept, "count",
              "packets past the expected PSN that cannot be placed yet (SEND, READ request, "
              "WRITE with immediate, WRITE whose First is missing): dropped");
    }
    tx.set_qp_error_listener([this](uint32_t qpn) { flush_receives(qpn); });
    if (ctx.vcd != nullptr) {
        m_fifo.trace(ctx.vcd, b);
        sc_core::sc_trace(ctx.vcd, m_stats.frames, b + ".frames");
        sc_core::sc_trace(ctx.vcd, m_stats.messages, b + ".messages");
        sc_core::sc_trace(ctx.vcd, m_stats.acks_received, b + ".acks_received");
        sc_core::sc_trace(ctx.vcd, m_stats.naks_sent, b + ".naks_sent");
        sc_core::sc_trace(ctx.vcd, m_stats.fifo_drops, b + ".fifo_drops");
        sc_core::sc_trace(ctx.vcd, m_stats.bad_icrc, b + ".bad_icrc");
        sc_core::sc_trace(ctx.vcd, m_stats.duplicates, b + ".duplicates");
        sc_core::sc_trace(ctx.vcd, m_stats.out_of_sequence, b + ".out_of_sequence");
    }
}

void recv_path::bind_link(fabric::eth_link& link, int side) {
    m_link = &link;
    m_link_side = side;
    m_pfc = nic_pfc_thresholds(m_cfg, link.config().rate_gbps, link.config().propagation_ns);
}

void recv_path::receive_frame(fabric::eth_frame&& frame) {
    const uint64_t bytes = frame.data.size();
    rx_lane& lane = m_lanes[steer(frame)];
    if (m_fifo_bytes + bytes > m_cfg.fifo_bytes || lane.fifo->full()) {
        ++m_stats.fifo_drops;  // the headroom above XOFF did not cover what was on the cable
        if (m_link != nullptr && m_link->config().pfc &&
            ((m_cfg.pfc_priorities >> (frame.priority & 7)) & 1) != 0) {
            ++m_stats.lossless_drops;
        }
        return;
    }
    if (m_cfg.cut_through && m_link != nullptr) {
        // Cut-through: the link delivers once the preamble and the first CUT_THROUGH_BYTES are
        // in; the rest (and the FCS) follows at the line rate.
        const uint64_t in = 8 + std::min<uint64_t>(bytes, fabric::CUT_THROUGH_BYTES);
        const uint64_t tail = fabric::eth_wire_bytes(bytes) - 12 - in;
        frame.complete =
            sc_core::sc_time_stamp() +
            sc_core::sc_time(std::round(static_cast<double>(tail) * m_link->ps_per_byte()),
                             sc_core::SC_PS);
    }
    m_fifo_bytes += bytes;
    m_stats.fifo_peak_bytes = std::max(m_stats.fifo_peak_bytes, m_fifo_bytes);
    if (m_cfg.parse_pipelined) {
        // Parsed from the edge after it arrived (or after the previous frame entered the
        // stage): one parse stage for every lane, one frame per cycle in arrival order.
        const sc_core::sc_time start =
            std::max(m_clk.edge_at_or_after(sc_core::sc_time_stamp()), m_parse_free);
        m_parse_free = start + m_clk.cycles(1);
        lane.parsed.push_back(start + m_clk.cycles(m_cfg.parse_cycles));
    }
    if (lane.idle && !lane.handoff && lane.fifo->empty() && lane.flushes.empty() &&
        (m_link == nullptr || (m_link->xoff(m_link_side) == 0 && m_fifo_bytes < m_pfc.xoff))) {
        // The lane waits for a frame: it takes this one now, as it would on waking in the next
        // delta cycle, and sleeps on until the parse has ended (the PFC state cannot change:
        // below XOFF, no XON to send).
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        lane.idle = false;
        lane.busy_since = now;
        lane.handoff = true;
        lane.handoff_arrived = now;
        lane.handoff_delta = sc_core::sc_delta_count();
        lane.handoff_parse_wait = lane.parse_wait;
        lane.handoff_parse_wait_end = lane.parse_wait_end;
        if (m_cfg.parse_pipelined) {
            lane.handoff_parse_entry = lane.parsed.front();
        }
        lane.handoff_frame = std::move(frame);
        lane.handoff_parsed = take_frame(lane, lane.handoff_frame);
        if (lane.handoff_parsed > now) {
            lane.wake.notify(lane.handoff_parsed - now);
        } else {
            lane.wake.notify(sc_core::SC_ZERO_TIME);
        }
        return;
    }
    lane.fifo->put(std::move(frame));  // never blocks: not full
    lane.wake.notify(sc_core::SC_ZERO_TIME);
    if (m_link != nullptr && m_fifo_bytes >= m_pfc.xoff) {
        m_link->set_xoff(m_link_side, static_cast<uint8_t>(m_cfg.pfc_priorities), true);
    }
}

sc_core::sc_time recv_path::take_frame(rx_lane& lane, const fabric::eth_frame& f) {
    m_fifo_bytes -= f.data.size();
    if (m_link != nullptr && m_link->xoff(m_link_side) != 0 && m_fifo_bytes <= m_pfc.xon) {
        m_link->set_xoff(m_link_side, static_cast<uint8_t>(m_cfg.pfc_priorities), false);
    }
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    ++m_stats.frames;
    if (lanes() > 1) {
        ++lane.stats.frames;
    }
    m_stats.bytes += f.data.size();
    if (m_cfg.parse_pipelined) {
        // Parsed while the lane was busy with earlier frames (receive_frame): the lane
        // waits only for what is left of it.
        const sc_core::sc_time parsed = lane.parsed.front();
        lane.parsed.pop_front();
        if (parsed > now) {
            lane.parse_wait += parsed - now;
            lane.parse_wait_end = parsed;
        }
        return m_clk.edge_at_or_after(std::max(parsed, now));
    }
    return m_clk.time_of_cycle(m_clk.cycle_of(now) + m_cfg.parse_cycles);
}

void recv_path::undo_handoff(rx_lane& lane) {
    const fabric::eth_frame& f = lane.handoff_frame;
    m_fifo_bytes += f.data.size();  // below XOFF still: it was when the frame came in
    --m_stats.frames;
    if (lanes() > 1) {
        --lane.stats.frames;
    }
    m_stats.bytes -= f.data.size();
    if (m_cfg.parse_pipelined) {
        lane.parsed.push_front(lane.handoff_parse_entry);
        lane.parse_wait = lane.handoff_parse_wait;
        lane.parse_wait_end = lane.handoff_parse_wait_end;
    }
    lane.handoff = false;
    lane.wake.cancel();  // the hand-off's; the frame's put wakes the lane instead
    lane.fifo->put(std::move(lane.handoff_frame));
    lane.wake.notify(sc_core::SC_ZERO_TIME);
}

void recv_path::flush_receives(uint32_t qpn, const sc_core::sc_time& at) {
    rx_lane& lane = m_lanes[lane_of(qpn)];  // between that lane's frames: per-QP order
    if (lane.handoff && lane.handoff_arrived == sc_core::sc_time_stamp() &&
        sc_core::sc_delta_count() == lane.handoff_delta && lane.fifo->empty()) {
        undo_handoff(lane);  // (a second frame behind it in the same delta: one port cannot)
    }
    lane.flushes.emplace_back(qpn, at);
    lane.wake.notify(sc_core::SC_ZERO_TIME);
}

uint32_t recv_path::steer_qpn(const fabric::eth_frame& f) const {
    // The parse stage's result: the BTH's destination QP of a RoCEv2 frame (an 802.1Q tag
    // skipped); anything else (ARP, malformed frames) goes to lane 0.
    const auto& d = f.data;
    size_t l3 = 14;
    if (d.size() >= 18 && d[12] == 0x81 && d[13] == 0x00) {
        l3 += 4;
    }
    if (d.size() < l3 + 20 || d[l3 - 2] != 0x08 || d[l3 - 1] != 0x00 || d[l3 + 9] != 17) {
        return 0;
    }
    const size_t udp = l3 + static_cast<size_t>(d[l3] & 0x0F) * 4;
    const size_t bth = udp + 8;
    if (d.size() < bth + 12 || ((d[udp + 2] << 8) | d[udp + 3]) != roce::ROCEV2_UDP_PORT) {
        return 0;
    }
    const uint32_t qpn = (uint32_t{d[bth + 5]} << 16) | (uint32_t{d[bth + 6]} << 8) | d[bth + 7];
    return lane_of(qpn);
}

int recv_path::lane_index() const {
    const sc_core::sc_process_b* me = sc_core::sc_get_current_process_b();
    for (uint32_t i = 0; i < m_lanes.size(); ++i) {
        if (m_lanes[i].process == me) {
            return static_cast<int>(i);
        }
    }
    return -1;  // the ACK timer thread
}

uint64_t recv_path::lane_flow() const {
    const int i = lane_index();
    // The ACK timer thread: the flow handled last, as with one lane.
    return i < 0 ? m_current_flow : m_lanes[i].flow;
}

int recv_path::stall_begin() {
    const int li = lane_index();
    if (li >= 0) {
        m_lanes[li].stalling = true;
        m_lanes[li].stall_since = sc_core::sc_time_stamp();
    }
    return li;
}

void recv_path::stall_end(int lane, const sc_core::sc_time& since) {
    if (lane >= 0) {
        rx_lane& l = m_lanes[lane];
        l.stats.stall_ps += m_clk.ps_of(sc_core::sc_time_stamp() - since);
        l.stalling = false;
    }
}

void recv_path::take_turn(lane_port& port, const std::function<bool()>& full,
                          const sc_core::sc_event* freed) {
    const int li = lane_index();
    const uint32_t n = lanes() + 1;  // the lanes, then the ACK timer thread
    const uint32_t slot = li < 0 ? lanes() : static_cast<uint32_t>(li);
    const sc_core::sc_time since = sc_core::sc_time_stamp();
    stall_begin();
    port.waiting |= uint64_t{1} << slot;
    settle_instant();  // every hand-off of this instant has asked
    for (;;) {
        if (!full()) {
            // Round robin: the first asker after the one served last.
            uint32_t first = slot;
            for (uint32_t k = 1; k <= n; ++k) {
                const uint32_t c = (port.last + k) % n;
                if (((port.waiting >> c) & 1) != 0) {
                    first = c;
                    break;
                }
            }
            if (first == slot) {
                break;
            }
            sc_core::wait(port.turn);
        } else {
            sc_core::wait(*freed);
        }
        settle_instant();
    }
    port.waiting &= ~(uint64_t{1} << slot);
    port.last = slot;
    port.turn.notify(sc_core::SC_ZERO_TIME);
    stall_end(li, since);
}

void recv_path::take_response_turn() {
    take_turn(
        m_response_port, [this] { return m_tx.response_fifo_full(); }, m_tx.response_taken());
}

void recv_path::reset_qp(uint32_t qpn) {
    if (qpn >= m_contexts.max_qps()) {
        return;
    }
    m_pending_acks[qpn] = pending_ack{};
    m_ack_timers.erase(std::remove_if(m_ack_timers.begin(), m_ack_timers.end(),
                                      [qpn](const auto& t) { return t.second == qpn; }),
                       m_ack_timers.end());
    m_rq_prefetch[qpn].clear();
    m_recv_segments[qpn].clear();
    m_write_segments[qpn].clear();
    if (selective()) {
        m_sr_writes[qpn].clear();
    }
}

void recv_path::flush_queue(uint32_t qpn) {
    qp_context* qp = m_contexts.qp(qpn);
    if (qp == nullptr || qp->state != hsi::QPS_ERROR) {
        return;
    }
    m_pending_acks[qpn].count = 0;  // nothing more is acknowledged
    if (qp->have_recv) {
        // The receive a multi-packet SEND was filling.
        post_recv_cqe(qpn, *qp, hsi::CQE_RECV, hsi::CQE_WR_FLUSH_ERR, 0, 0, false, 0);
        ++m_stats.flushed_receives;
    }
    if (qp->srqn != 0) {
        return;  // SRQ receives belong to the SRQ, not to the failed QP
    }
    // Every posted receive, in ring order: its index comes from the WQE header (read ahead
    // already, or one 16 B DMA read each).
    auto& pf = m_rq_prefetch[qpn];
    while (qp->valid && qp->state == hsi::QPS_ERROR && qp->rq_consumer != qp->rq_producer) {
        const uint32_t index = qp->rq_consumer;
        const uint64_t ring = qp->rq_addr;
        hsi::rq_wqe_hdr h{};
        if (!pf.empty() && pf.front().index == index && pf.front().ring == ring &&
            pf.front().bytes.size() >= sizeof(h)) {
            // Taken off the buffer before waiting: a reset of the QP may clear it meanwhile.
            const prefetched p = std::move(pf.front());
            pf.pop_front();
            m_clk.wait_until(p.ready);
            std::memcpy(&h, p.bytes.data(), sizeof(h));
        } else {
            pf.clear();
            const uint32_t mask = (1u << qp->rq_log_depth) - 1;
            m_dma.read_wait(dma_client::RQ_FETCH,
                            ring + static_cast<uint64_t>(index & mask) * qp->rq_stride, &h,
                            sizeof(h));
        }
        if (!qp->valid || qp->state != hsi::QPS_ERROR || qp->rq_consumer != index) {
            break;  // reset or destroyed meanwhile
        }
        ++qp->rq_consumer;
        qp->current_recv.wqe_index = h.wqe_index;
        qp->current_recv.srqn = 0;
        post_recv_cqe(qpn, *qp, hsi::CQE_RECV, hsi::CQE_WR_FLUSH_ERR, 0, 0, false, 0);
        ++m_stats.flushed_receives;
    }
    pf.clear();
}

void recv_path::rx_thread() {
    lane_thread(0);
}

void recv_path::lane_thread(uint32_t i) {
    rx_lane& lane = m_lanes[i];
    lane.process = sc_core::sc_get_current_process_b();
    channel<fabric::eth_frame>& fifo = *lane.fifo;
    for (;;) {
        // Flushes run between frames, so a receive is never completed twice.
        if (!lane.handoff && fifo.empty() && lane.flushes.empty()) {
            const sc_core::sc_time idle = sc_core::sc_time_stamp();
            // Waiting for the pipelined parse stage is latency, not the thread's work.
            lane.stats.busy_ps += m_clk.ps_of(idle - lane.busy_since - lane.parse_wait);
            lane.parse_wait = sc_core::SC_ZERO_TIME;
            lane.idle = true;
            m_stats.busy_ps = lanes() == 1 ? lane.stats.busy_ps : busy_ps_at(idle);  // lanes: mean
            while (!lane.handoff && fifo.empty() && lane.flushes.empty()) {
                sc_core::wait(lane.wake);
            }
            if (!lane.handoff) {
                lane.idle = false;
                lane.busy_since = sc_core::sc_time_stamp();
            }  // else receive_frame took the frame when it arrived, and marked the lane busy
        }
        fabric::eth_frame f;
        // Its buffer goes back to the send paths once the frame is handled, however this
        // iteration ends (a frame the GSI block takes goes with its buffer).
        const fabric::frame_buffer_return give_back(f.data);
        sc_core::sc_time arrived;
        sc_core::sc_time parsed;
        if (lane.handoff) {
            // Handed over at its arrival, taken then (receive_frame): the lane wakes when its
            // parse has ended (or earlier for a flush, which goes after this frame).
            lane.handoff = false;
            // Its parse-end wake-up, if still pending; a pending wake-up for a frame or flush
            // behind it is not needed either: the lane looks at its queue before it sleeps.
            lane.wake.cancel();
            f = std::move(lane.handoff_frame);
            arrived = lane.handoff_arrived;
            parsed = lane.handoff_parsed;
        } else {
            if (!lane.flushes.empty()) {
                const auto [qpn, at] = lane.flushes.front();
                lane.flushes.pop_front();
                if (at > sc_core::sc_time_stamp()) {
                    m_clk.wait_until(at);
                }
                flush_queue(qpn);
                continue;
            }
            f = fifo.get();
            arrived = sc_core::sc_time_stamp();
            parsed = take_frame(lane, f);
        }
        m_clk.wait_until(parsed);
        // An 802.1Q-tagged frame (a CNP with np_cnp_prio): the MAC strips the tag; its PCP
        // classified the frame on the link already.
        fabric::strip_vlan_tag(f.data);
        lane.streaming = {f.data.data(), f.data.size(), f.complete};
        if (m_gsi != nullptr && gsi::claims(f.data)) {
            order();
            m_gsi->receive(std::move(f));  // QP1 MAD or ARP: the GSI block checks and places it
            continue;
        }
        roce::parsed_frame p;
        const roce::parse_error e = roce::parse_frame(f.data.data(), f.data.size(), p);
        if (e != roce::parse_error::NONE) {
            wait_frame_tail(lane);  // the ICRC is checked at the frame's end
            ++m_stats.parse_errors;
            if (e == roce::parse_error::BAD_ICRC) {
                ++m_stats.bad_icrc;
            }
            continue;
        }
        m_current_flow = f.flow_id;
        lane.flow = f.flow_id;
        if (p.payload_len == 0) {
            wait_frame_tail(lane);  // nothing to place: act once the ICRC is in
        }
        handle(f, p);
        wait_frame_tail(lane);
        if (m_ctx.tracer != nullptr) {
            lane.receive_slices.slice(*m_ctx.tracer, i == 0 ? name() : lane.track.c_str(),
                                      "receive", f.flow_id, arrived, sc_core::sc_time_stamp());
        }
    }
}

void recv_path::handle(const fabric::eth_frame& f, const roce::parsed_frame& p) {
    const uint32_t qpn = p.hdr.bth_.dest_qp;
    if (m_cache != nullptr && qpn < m_contexts.max_qps()) {
        m_cache->access(ctx_kind::QPC, qpn, true, cache_port::RECV_PATH);  // expected PSN, MSN
    }
    order();  // lanes: what follows touches blocks shared by every lane
    qp_context* qp = m_contexts.qp(qpn);
    if (qp == nullptr) {
        ++m_stats.unknown_qp;
        return;
    }
    if (m_np != nullptr && m_np->inspect(qpn, *qp, p.hdr)) {
        return;  // a CNP: congestion control's reaction point took it
    }
    const uint8_t op = p.hdr.bth_.opcode;
    if (is_send(op) || is_write(op) || op == roce::RC_READ_REQUEST) {
        if (qp->state != hsi::QPS_RTR && qp->state != hsi::QPS_RTS) {
            ++m_stats.bad_state;
            return;
        }
        handle_request(qpn, *qp, f.data.data(), p, f.flow_id);
    } else if (op == roce::RC_ACK || is_read_response(op)) {
        if (qp->state != hsi::QPS_RTS) {
            ++m_stats.bad_state;
            return;
        }
        handle_response(qpn, *qp, f.data.data(), p);
    } else {
        ++m_stats.parse_errors;  // CNP and others: not handled by this model
    }
}

void recv_path::throttle(const sc_core::sc_time& sent) {
    const sc_core::sc_time& lag = m_placement_lag;
    const sc_core::sc_time now = sim_now();
    if (sent > now + lag) {
        const int li = lanes() > 1 ? stall_begin() : -1;
        m_clk.wait_until(sent - lag);
        stall_end(li, now);
    }
}

void recv_path::wait_frame_tail(rx_lane& lane) {
    if (!m_cfg.cut_through) {
        return;
    }
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    if (lane.streaming.tail > now) {
        // Latency, not the lane's work (as the parse stage's wait).
        const sc_core::sc_time at = m_clk.edge_at_or_after(lane.streaming.tail);
        lane.parse_wait += at - now;
        lane.parse_wait_end = at;
        m_clk.wait_until(at);
    }
}

bool recv_path::place(const std::vector<dma_segment>& segs, uint64_t offset, const uint8_t* data,
                      uint32_t len) {
    // Cut-through (cut_through): the payload is written as it arrives. Frame byte k is in
    // (size + 4 - k - 1) byte times before the frame's tail (its FCS's last byte).
    // Placement runs on the lane that handles the frame.
    const int lane = lanes() == 1 ? 0 : lane_index();
    static const streaming_frame none;
    const streaming_frame& frame_in = lane >= 0 ? m_lanes[lane].streaming : none;
    const bool streamed = m_cfg.cut_through && frame_in.tail > sim_now() && data >= frame_in.data &&
                          data < frame_in.data + frame_in.size;
    const double ps_per_byte = streamed ? m_link->ps_per_byte() : 0;
    uint64_t seg_start = 0;
    for (const auto& s : segs) {
        if (len == 0) {
            break;
        }
        const uint64_t seg_end = seg_start + s.len;
        if (offset < seg_end) {
            const uint32_t in = static_cast<uint32_t>(offset - seg_start);
            const uint32_t n = std::min<uint32_t>(len, s.len - in);
            const sc_core::sc_time issued = sim_now();
            sc_core::sc_time sent;
            if (streamed) {
                const auto k0 = static_cast<uint64_t>(data - frame_in.data);
                const sc_core::sc_time back(
                    std::round(static_cast<double>(frame_in.size + 4 - k0) * ps_per_byte),
                    sc_core::SC_PS);
                sent = m_dma.write_streamed(dma_client::RX_PAYLOAD, s.bus_addr + in, data, n,
                                            frame_in.tail - back, ps_per_byte);
                ++m_stats.streamed_writes;
            } else {
                sent = m_dma.write(dma_client::RX_PAYLOAD, s.bus_addr + in, data, n);
            }
            if (m_ctx.tracer != nullptr) {
                // Lane 0 and no lane file under the block's name.
                m_lanes[lane <= 0 ? 0 : static_cast<size_t>(lane)].dma_slices.slice(
                    *m_ctx.tracer, lane <= 0 ? name() : m_lanes[lane].track.c_str(), "rx_dma",
                    current_flow(), issued, sent);
            }
            throttle(sent);
            m_stats.payload_bytes += n;
            data += n;
            len -= n;
            offset += n;
        }
        seg_start = seg_end;
    }
    return len == 0;
}

void recv_path::receive_queue_failed(uint32_t qpn, qp_context& qp, srq_context* srq) {
    // The ring is unreachable (host memory released, IOMMU mapping gone). An SRQ is dead for
    // every QP on it: EVENT_SRQ_ERROR, then each of its QPs fails (EVENT_QP_ERROR, flush through
    // the QP error hook, as for a dead CQ).
    if (srq == nullptr) {
        m_cq_writer.post_event(hsi::EVENT_QP_ERROR, qpn);
        m_cq_writer.qp_error(qpn);
        return;
    }
    const uint32_t srqn = qp.srqn;
    srq->error = true;
    m_cq_writer.post_event(hsi::EVENT_SRQ_ERROR, srqn, hsi::CQ_ERR_DMA_ACCESS);
    for (uint32_t q = 0; q < m_contexts.max_qps(); ++q) {
        const qp_context* other = m_contexts.qp(q);
        if (other != nullptr && other->srqn == srqn && other->state != hsi::QPS_ERROR) {
            m_cq_writer.post_event(hsi::EVENT_QP_ERROR, q);
            m_cq_writer.qp_error(q);
        }
    }
}

recv_path::recv_take recv_path::take_receive_wqe(uint32_t qpn, qp_context& qp) {
    // The receive ring to take from: the QP's own RQ or its SRQ (keyed apart in the prefetch
    // buffers: SRQs above the QP numbers).
    srq_context* srq = qp.srqn != 0 ? m_contexts.srq(qp.srqn) : nullptr;
    if ((qp.srqn != 0 && srq == nullptr) || (srq != nullptr && srq->error)) {
        return recv_take::NONE;
    }
    if (srq != nullptr && lanes() > 1) {
        // Lanes: one at a time per SRQ (its consumer index and read-ahead), the waiting ones
        // in lane order.
        const uint32_t srqn = qp.srqn;
        while (m_srq_busy[srqn]) {
            sc_core::wait(m_srq_free);
            settle_instant();
        }
        m_srq_busy[srqn] = true;
        const recv_take t = take_receive_wqe_from(qpn, qp, srq);
        m_srq_busy[srqn] = false;
        m_srq_free.notify(sc_core::SC_ZERO_TIME);
        return t;
    }
    return take_receive_wqe_from(qpn, qp, srq);
}

recv_path::recv_take recv_path::take_receive_wqe_from(uint32_t qpn, qp_context& qp,
                                                      srq_context* srq) {
    uint32_t& consumer = srq != nullptr ? srq->consumer : qp.rq_consumer;
    const uint32_t producer = srq != nullptr ? srq->producer : qp.rq_producer;
    const uint32_t stride = srq != nullptr ? srq->stride : qp.rq_stride;
    const uint64_t ring = srq != nullptr ? srq->ring_addr : qp.rq_addr;
    const uint32_t mask = (1u << (srq != nullptr ? srq->log_depth : qp.rq_log_depth)) - 1;
    if (consumer == producer) {
        return recv_take::NONE;
    }
    auto& pf = m_rq_prefetch[srq != nullptr ? m_contexts.max_qps() + qp.srqn : qpn];
    std::vector<uint8_t> buf;
    dma_status fetch_status = dma_status::OK;
    // Ring addresses are never reused by the host, so (ring, index) identifies the slot even
    // across a destroyed and re-created QP.
    if (!pf.empty() && pf.front().index == consumer && pf.front().ring == ring &&
        pf.front().bytes.size() == stride) {
        // Prefetched when the previous receive WQE was taken: wait only for what is left. Taken
        // off the buffer before waiting: a reset of the QP may clear the buffer meanwhile.
        prefetched p = std::move(pf.front());
        pf.pop_front();
        m_clk.wait_until(p.ready);
        buf = std::move(p.bytes);
        fetch_status = p.status;
        ++m_stats.rq_prefetch_hits;
    } else {
        pf.clear();
        buf.resize(stride);
        fetch_status = m_dma.read_wait(dma_client::RQ_FETCH,
                                       ring + static_cast<uint64_t>(consumer & mask) * stride,
                                       buf.data(), stride);
    }
    if (fetch_status != dma_status::OK) {
        pf.clear();
        receive_queue_failed(qpn, qp, srq);
        return recv_take::NONE;
    }
    ++consumer;
    // Read ahead the next posted WQEs (their slots are not rewritten until consumed).
    while (pf.size() < m_cfg.rq_prefetch && consumer + pf.size() != producer) {
        const uint32_t idx = consumer + static_cast<uint32_t>(pf.size());
        prefetched p;
        p.index = idx;
        p.ring = ring;
        p.bytes.resize(stride);
        p.ready =
            m_dma.read(dma_client::RQ_FETCH, ring + static_cast<uint64_t>(idx & mask) * stride,
                       p.bytes.data(), stride, &p.status);
        pf.push_back(std::move(p));
    }
    if (srq != nullptr && srq->limit != 0 && srq->producer - srq->consumer < srq->limit) {
        srq->limit = 0;  // one-shot
        m_cq_writer.post_event(hsi::EVENT_SRQ_LIMIT, qp.srqn);
    }
    hsi::rq_wqe_hdr h{};
    std::memcpy(&h, buf.data(), sizeof(h));
    const uint32_t max_sge = (stride - sizeof(h)) / sizeof(hsi::wqe_sge);
    const uint32_t n = std::min<uint32_t>(h.num_sge, max_sge);
    qp.current_recv.wqe_index = h.wqe_index;
    qp.current_recv.srqn = qp.srqn;
    qp.current_recv.sges.resize(n);
    if (n != 0) {  // a 0-SGE receive (0-byte SENDs) has no data pointer to copy into
        std::memcpy(qp.current_recv.sges.data(), buf.data() + sizeof(h), n * sizeof(hsi::wqe_sge));
    }
    qp.have_recv = true;
    qp.recv_offset = 0;
    ++m_stats.receive_wqes;
    // Translate the scatter list once for the whole message.
    auto& segs = m_recv_segments[qpn];
    segs.clear();
    for (const auto& sge : qp.current_recv.sges) {
        if (m_xlate.translate(sge.lkey, qp.pdn, sge.addr, sge.length, XLATE_LOCAL_WRITE, false,
                              segs) != xlate_status::OK) {
            segs.clear();
            return recv_take::FAULT;
        }
    }
    return recv_take::OK;
}

void recv_path::send_ack(uint32_t qpn, const qp_context& qp, uint32_t psn, uint8_t syndrome,
                         const roce::int_stack* reflect) {
    tx_job job;
    job.desc.flow_id = current_flow();
    tx_descriptor& d = job.desc;
    d.kind = tx_kind::ACK;
    d.src_qpn = qpn;
    d.dest_qpn = qp.dest_qpn;
    d.psn = psn & PSN_MASK;
    d.pmtu = qp.pmtu;
    d.syndrome = syndrome;
    d.msn = qp.msn & PSN_MASK;
    d.src_mac = m_id.mac;
    d.dst_mac = qp.dest_mac;
    d.src_ip = m_id.ip;
    d.dst_ip = qp.dest_ip;
    if (reflect != nullptr) {
        d.telemetry = true;
        d.int_ = *reflect;
    }
    if (!roce::aeth_is_ack(syndrome)) {
        ++m_stats.naks_sent;
    }
    respond(std::move(job));
}

void recv_path::post_recv_cqe(uint32_t qpn, qp_context& qp, uint8_t opcode, uint8_t status,
                              uint32_t byte_len, uint32_t imm, bool solicited, uint64_t flow_id) {
    completion_request r;
    r.cqn = qp.recv_cqn;
    r.entry.qpn = qpn;
    r.entry.wqe_index = qp.current_recv.wqe_index;
    r.entry.opcode = opcode;
    r.entry.status = status;
    r.entry.byte_len = byte_len;
    r.entry.imm_or_key = imm;
    r.entry.srqn = qp.current_recv.srqn != 0 ? (qp.current_recv.srqn | 0x80000000u) : 0;
    r.entry.flags = solicited ? hsi::CQE_FLAG_SOLICITED : 0;
    r.flow_id = flow_id;
    qp.have_recv = false;
    if (lanes() > 1) {
        auto& q = m_cq_writer.requests();
        take_turn(
            m_cqe_port, [&q] { return q.full(); }, &q.read_event());
    }
    m_cq_writer.requests().put(r);
}

void recv_path::serve_read(uint32_t qpn, qp_context& qp, const roce::parsed_frame& p,
                           uint64_t flow_id, bool first_time) {
    const auto& bth = p.hdr.bth_;
    const auto& reth = p.hdr.reth_;
    tx_job job;
    const xlate_status xs = m_xlate.translate(reth.rkey, qp.pdn, reth.va, reth.dma_length,
                                              XLATE_REMOTE_READ, true, job.segments);
    job.src_keys.push_back(reth.rkey);  // re-checked by the transmit engine for every packet
    job.src_pdn = qp.pdn;
    if (xs != xlate_status::OK) {
        ++m_stats.protection_errors;
        nak_fatal(qpn, qp, bth.psn, roce::AETH_NAK_REMOTE_ACCESS_ERROR);
        return;
    }
    ++m_stats.read_requests;
    if (!first_time) {
        ++m_stats.duplicate_reads;
    }
    if (first_time) {
        flush_ack(qpn, qp);  // responses ACK what came before; keep ACKs in order
        qp.expected_psn = (qp.expected_psn + packets_of(reth.dma_length, qp.pmtu)) & PSN_MASK;
        ++qp.msn;
    }
    tx_descriptor& d = job.desc;
    d.kind = tx_kind::READ_RESPONSE;
    d.src_qpn = qpn;
    d.dest_qpn = qp.dest_qpn;
    d.psn = bth.psn;
    d.pmtu = qp.pmtu;
    d.length = reth.dma_length;
    d.syndrome = roce::AETH_ACK_NO_CREDIT;
    d.msn = qp.msn & PSN_MASK;
    d.src_mac = m_id.mac;
    d.dst_mac = qp.dest_mac;
    d.src_ip = m_id.ip;
    d.dst_ip = qp.dest_ip;
    d.flow_id = flow_id;
    respond(std::move(job));
}

void recv_path::nak_fatal(uint32_t qpn, qp_context& qp, uint32_t psn, uint8_t syndrome) {
    flush_ack(qpn, qp);  // responses in PSN order: held ACKs before the NAK
    send_ack(qpn, qp, psn, syndrome);
    ++m_stats.fatal_naks;
    // The NAK is queued first, so it still goes out; then the QP stops (later requests are
    // dropped as bad_state), its send queue and posted receives are flushed.
    m_tx.qp_error(qpn);
}

bool recv_path::key_live(uint32_t key, uint32_t pdn) {
    if (key == hsi::PRIVILEGED_KEY) {
        return true;
    }
    if (m_cache != nullptr) {
        m_cache->access(ctx_kind::MPT, hsi::key_index(key), false,
                        cache_port::RECV_PATH);  // a hit: hit_cycles
    }
    const mpt_entry* e = m_contexts.mpt(key);
    if (e == nullptr || !e->valid || e->pdn != pdn) {
        return false;
    }
    if (e->is_mw) {
        const mpt_entry* mr = m_contexts.mpt_slot(e->parent_index << 8);
        return mr != nullptr && mr->valid;
    }
    return true;
}

void recv_path::flush_ack(uint32_t qpn, qp_context& qp) {
    pending_ack& a = m_pending_acks[qpn];
    if (a.count > 0) {
        a.count = 0;
        send_ack(qpn, qp, a.psn, roce::AETH_ACK_NO_CREDIT, a.telemetry ? &a.int_ : nullptr);
        a.telemetry = false;
    }
}

void recv_path::ack_thread() {
    // Flushes coalesced ACKs ack_delay_ns after the oldest one was held back.
    for (;;) {
        if (m_ack_timers.empty()) {
            sc_core::wait(m_ack_timer_event);
            continue;
        }
        const auto [deadline, qpn] = m_ack_timers.front();
        const sc_core::sc_time now = sc_core::sc_time_stamp();
        if (deadline > now) {
            sc_core::wait(deadline - now);
            continue;
        }
        m_ack_timers.pop_front();
        if (qp_context* qp = m_contexts.qp(qpn)) {
            pending_ack& a = m_pending_acks[qpn];
            if (a.count > 0 && a.since <= deadline) {
                flush_ack(qpn, *qp);
            }
        }
    }
}

void recv_path::request_ack(uint32_t qpn, qp_context& qp, uint32_t psn) {
    order();  // lanes: the ACK timer's queue in lane order
    pending_ack& a = m_pending_acks[qpn];
    if (a.count == 0) {
        a.since = sc_core::sc_time_stamp();
    }
    a.psn = psn;
    if (++a.count >= m_cfg.ack_coalesce) {
        flush_ack(qpn, qp);
        return;
    }
    m_ack_timers.emplace_back(a.since + sc_core::sc_time(m_cfg.ack_delay_ns, sc_core::SC_NS), qpn);
    m_ack_timer_event.notify(sc_core::SC_ZERO_TIME);
}

void recv_path::handle_request(uint32_t qpn, qp_context& qp, const uint8_t* frame,
                               const roce::parsed_frame& p, uint64_t flow_id) {
    const auto& bth = p.hdr.bth_;
    const uint8_t op = bth.opcode;
    if (p.hdr.telemetry) {
        // HPCC: the ACK that answers (the newest request) reflects its INT stack.
        pending_ack& a = m_pending_acks[qpn];
        a.telemetry = true;
        a.int_ = p.hdr.int_;
    }
    uint32_t diff = 0;
    const rc::psn_check check = rc::check_psn(bth.psn, qp.expected_psn, &diff);
    if (check != rc::psn_check::IN_ORDER) {
        if (check == rc::psn_check::DUPLICATE) {
            ++m_stats.duplicates;
            if (bth.opcode == roce::RC_READ_REQUEST) {
                // A READ is re-executed: its responses may be what was lost (IBA 9.7.5.2.1).
                serve_read(qpn, qp, p, flow_id, false);
            } else if (bth.ack_req) {
                // Already executed: acknowledge again so the requester moves on.
                flush_ack(qpn, qp);
                send_ack(qpn, qp, qp.expected_psn - 1, roce::AETH_ACK_NO_CREDIT);
            }
        } else if (selective()) {
            sr_out_of_order(qpn, qp, frame, p, diff);
        } else {
            ++m_stats.out_of_sequence;
            if (!qp.nak_sent) {  // one NAK per gap
                qp.nak_sent = true;
                flush_ack(qpn, qp);  // held ACKs first: ACK/NAK PSNs never go backwards
                send_ack(qpn, qp, qp.expected_psn, roce::AETH_NAK_PSN_SEQ_ERROR);
            }
        }
        return;
    }
    qp.nak_sent = false;
    const roce::opcode_info& oi = roce::info(op);
    const uint8_t* payload = frame + p.payload_offset;
    const uint32_t len = static_cast<uint32_t>(p.payload_len);
    const uint32_t before = qp.expected_psn;

    if (op == roce::RC_READ_REQUEST) {
        serve_read(qpn, qp, p, flow_id, true);
        if (selective()) {
            sr_advance(qpn, qp, before, false);
        }
        return;
    }

    // Every NAK of a request that passed the PSN check is fatal for the responder QP.
    auto nak = [&](uint8_t syndrome) { nak_fatal(qpn, qp, bth.psn, syndrome); };

    const bool consumes = rc::consumes_receive(op);
    if (rc::send_out_of_sequence(op, qp.have_recv)) {
        // A First/Only while a SEND is open, or a Middle/Last with none open.
        ++m_stats.bad_opcode_sequence;
        nak(roce::AETH_NAK_INVALID_REQUEST);
        return;
    }
    if (consumes) {
        const recv_take t = take_receive_wqe(qpn, qp);
        if (t == recv_take::NONE && qp.state == hsi::QPS_ERROR) {
            return;  // its receive queue died (WQE fetch error): the QP is in error now
        }
        if (t == recv_take::NONE) {
            ++m_stats.rnr;
            // The packets behind this one are part of the same gap: drop them silently until
            // the requester retries this PSN after the RNR timer (a sequence NAK for them would
            // make it retry at once and spend its RNR budget at wire speed).
            qp.nak_sent = true;
            flush_ack(qpn, qp);  // responses in PSN order: held ACKs before the NAK
            send_ack(qpn, qp, bth.psn,
                     roce::AETH_TYPE_RNR_NAK | m_cfg.rnr_timer_code);  // counts naks_sent
            return;
        }
        if (t == recv_take::FAULT) {
            // Receive WQE with a bad local key: local protection error on this side.
            ++m_stats.protection_errors;
            post_recv_cqe(qpn, qp, hsi::CQE_RECV, hsi::CQE_LOCAL_PROT_ERR, 0, 0, true, flow_id);
            nak(roce::AETH_NAK_REMOTE_OP_ERROR);
            return;
        }
    }

    if (is_send(op) && !consumes) {
        // Middle/Last: the receive buffer's keys are checked again for every packet (an MR
        // deregistered while the SEND streams in stops it here).
        for (const auto& sge : qp.current_recv.sges) {
            if (!key_live(sge.lkey, qp.pdn)) {
                ++m_stats.protection_errors;
                post_recv_cqe(qpn, qp, hsi::CQE_RECV, hsi::CQE_LOCAL_PROT_ERR, qp.recv_offset, 0,
                              true, flow_id);
                nak(roce::AETH_NAK_REMOTE_OP_ERROR);
                return;
            }
        }
    }
    if (is_send(op)) {
        const auto& segs = m_recv_segments[qpn];
        uint64_t capacity = 0;
        for (const auto& s : segs) {
            capacity += s.len;
        }
        if (qp.recv_offset + static_cast<uint64_t>(len) > capacity) {
            post_recv_cqe(qpn, qp, hsi::CQE_RECV, hsi::CQE_LOCAL_LENGTH_ERR, qp.recv_offset, 0,
                          true, flow_id);
            nak(roce::AETH_NAK_INVALID_REQUEST);
            return;
        }
        place(segs, qp.recv_offset, payload, len);
        qp.recv_offset += len;
        qp.expected_psn = (qp.expected_psn + 1) & PSN_MASK;
        if (oi.is_last || oi.is_only) {
            ++m_stats.messages;
            ++qp.msn;
            uint8_t opcode = hsi::CQE_RECV;
            uint32_t imm = 0;
            if (oi.has_immdt) {
                opcode = hsi::CQE_RECV_IMM;
                imm = p.hdr.immdt;
            } else if (oi.has_ieth) {
                opcode = hsi::CQE_RECV_INV;
                imm = p.hdr.ieth_rkey;
                mpt_entry* e = m_contexts.mpt(imm);
                if (e != nullptr && e->pdn == qp.pdn &&
                    (e->is_mw || (e->access & hsi::ACCESS_FAST_REG))) {
                    e->valid = false;
                }
            }
            post_recv_cqe(qpn, qp, opcode, hsi::CQE_OK, qp.recv_offset, imm, bth.se, flow_id);
        }
    } else if (selective()) {  // RDMA WRITE, through the window's table of WRITE targets
        uint32_t msg_len = 0;
        if (sr_write(qpn, qp, frame, p, true, &msg_len) != sr_put::PLACED) {
            return;  // NAKed (fatal)
        }
        qp.expected_psn = (qp.expected_psn + 1) & PSN_MASK;
        if (oi.is_last || oi.is_only) {
            ++m_stats.messages;
            ++qp.msn;
            if (oi.has_immdt) {
                post_recv_cqe(qpn, qp, hsi::CQE_RECV_IMM, hsi::CQE_OK, msg_len, p.hdr.immdt, bth.se,
                              flow_id);
            }
        }
    } else {  // RDMA WRITE
        // Translated as the packets arrive (hw/recv_path/README.md "Timing"): the first packet
        // checks the key and the bounds of the whole message and translates its own bytes,
        // each later one its own bytes from the page list fetched ahead.
        auto& segs = m_write_segments[qpn];
        segs.clear();
        if (oi.is_first || oi.is_only) {
            const auto& reth = p.hdr.reth_;
            const xlate_status xs =
                m_xlate.translate_first(reth.rkey, qp.pdn, reth.va, reth.dma_length, len,
                                        XLATE_REMOTE_WRITE, true, m_write_ahead[qpn], segs);
            if (xs != xlate_status::OK) {
                ++m_stats.protection_errors;
                nak(roce::AETH_NAK_REMOTE_ACCESS_ERROR);
                return;
            }
            qp.write_va = reth.va;
            qp.write_rkey = reth.rkey;
            qp.write_remaining = reth.dma_length;
            qp.write_offset = 0;
        } else if (!key_live(qp.write_rkey, qp.pdn)) {
            // Middle/Last: the key is checked again per packet, so a region deregistered (or
            // a window invalidated) mid-WRITE takes no more bytes.
            ++m_stats.protection_errors;
            nak(roce::AETH_NAK_REMOTE_ACCESS_ERROR);
            return;
        }
        if (len > qp.write_remaining) {
            nak(roce::AETH_NAK_INVALID_REQUEST);
            return;
        }
        if (!(oi.is_first || oi.is_only) &&
            m_xlate.translate_next(qp.write_rkey, qp.write_va, qp.write_offset + qp.write_remaining,
                                   qp.write_va + qp.write_offset, len, m_write_ahead[qpn],
                                   segs) != xlate_status::OK) {
            ++m_stats.protection_errors;
            nak(roce::AETH_NAK_REMOTE_ACCESS_ERROR);
            return;
        }
        place(segs, 0, payload, len);
        qp.write_offset += len;
        qp.write_remaining -= len;
        qp.expected_psn = (qp.expected_psn + 1) & PSN_MASK;
        if (oi.is_last || oi.is_only) {
            ++m_stats.messages;
            ++qp.msn;
            if (oi.has_immdt) {
                post_recv_cqe(qpn, qp, hsi::CQE_RECV_IMM, hsi::CQE_OK, qp.write_offset, p.hdr.immdt,
                              bth.se, flow_id);
            }
        }
    }
    if (selective()) {
        sr_advance(qpn, qp, before, bth.ack_req);
    } else if (bth.ack_req) {
        request_ack(qpn, qp, bth.psn);
    }
}

void recv_path::handle_response(uint32_t qpn, qp_context& qp, const uint8_t* frame,
                                const roce::parsed_frame& p) {
    const auto& bth = p.hdr.bth_;
    if (bth.opcode == roce::RC_ACK) {
        const uint8_t syn = p.hdr.aeth_.syndrome;
        switch (syn >> 5) {
            case 0:
                ++m_stats.acks_received;
                if (p.hdr.telemetry && m_telemetry_observer) {
                    m_telemetry_observer(qpn, p.hdr.int_);
                }
                m_tx.on_ack(qpn, bth.psn, true);
                break;
            case 1:
                ++m_stats.naks_received;
                m_tx.on_rnr(qpn, bth.psn,
                            sc_core::sc_time(roce::RNR_TIMER_MS[syn & 0x1F], sc_core::SC_MS));
                break;
            case 3: {
                ++m_stats.naks_received;
                const uint8_t code = syn & 0x1F;
                if (code == 0) {
                    m_tx.on_nak_sequence(qpn, bth.psn);
                    break;
                }
                if (selective() && syn == roce::AETH_NAK_SELECTIVE) {
                    m_tx.on_nak_selective(qpn, bth.psn);
                    break;
                }
                static const uint8_t status[] = {
                    hsi::CQE_RETRY_EXCEEDED, hsi::CQE_REMOTE_INVALID_REQ,
                    hsi::CQE_REMOTE_ACCESS_ERR, hsi::CQE_REMOTE_OP_ERR};
                m_tx.on_nak(qpn, bth.psn, status[std::min<uint8_t>(code, 3)]);
                break;
            }
            default:
                ++m_stats.parse_errors;
                break;
        }
        return;
    }
    // READ response: place at the offset its PSN implies.
    const read_target t = m_tx.find_read(qpn, bth.psn);
    if (!t.found) {
        ++m_stats.duplicates;
        return;
    }
    if (bth.psn != t.next_psn) {
        if (((bth.psn - t.next_psn) & PSN_MASK) >= HALF_PSN || t.placed) {
            ++m_stats.duplicates;  // placed already (responses of a re-issued READ)
            return;
        }
        ++m_stats.out_of_sequence;  // a response is missing
        if (!selective()) {
            m_tx.on_read_response(qpn, t.first_psn, bth.psn, false);  // the READ goes again
            return;
        }
        // Selective repeat: placed directly at the offset its PSN implies (below) and kept.
    }
    const uint64_t offset = static_cast<uint64_t>((bth.psn - t.first_psn) & PSN_MASK) * qp.pmtu;
    const uint32_t len = static_cast<uint32_t>(p.payload_len);
    if (offset + len > t.length) {
        ++m_stats.bad_opcode_sequence;
        return;
    }
    // The sink's keys, per packet: a sink deregistered mid-READ takes no more bytes; the READ
    // completes with a local protection error and the QP fails.
    for (const uint32_t key : t.sink_keys) {
        if (!key_live(key, t.pdn)) {
            ++m_stats.protection_errors;
            order();
            m_tx.on_read_fault(qpn, t.first_psn, hsi::CQE_LOCAL_PROT_ERR);
            return;
        }
    }
    ++m_stats.read_responses;
    place(t.segments, offset, frame + p.payload_offset, len);
    order();
    if (selective()) {
        if (bth.psn != t.next_psn) {
            ++m_stats.sr_ooo_placed;
        }
        m_tx.on_read_placed(qpn, t.first_psn, bth.psn);  // completes the READ when all are in
        return;
    }
    m_tx.on_read_response(qpn, t.first_psn, bth.psn, true);
    const roce::opcode_info& oi = roce::info(bth.opcode);
    if (oi.is_last || oi.is_only) {
        m_tx.on_read_done(qpn, t.first_psn);
    }
}

// --- Selective repeat (IRN) ---

void recv_path::sr_out_of_order(uint32_t qpn, qp_context& qp, const uint8_t* frame,
                                const roce::parsed_frame& p, uint32_t diff) {
    ++m_stats.out_of_sequence;
    const auto& bth = p.hdr.bth_;
    const uint32_t w = m_cfg.transport.sr_window;
    if (!qp.sr.active()) {
        qp.sr.open(w);  // the QP's first loss or reordering
    }
    if (diff >= w) {
        ++m_stats.sr_window_drops;  // no slot for it: the next NAK goes back to the gap
        qp.sr.overflow = true;
    } else {
        uint8_t& slot = qp.sr.slot(diff);
        if ((slot & sr_window::PLACED) != 0) {
            // Kept already: a resend overtaken by the original, or a go-back stream passing
            // what was kept. The gap before it is still open: the stream's copy of the
            // expected PSN was lost, so it is NAKed (once) as for any packet past a gap.
            ++m_stats.duplicates;
            sr_nak_past_gap(qpn, qp, bth.ack_req);
            return;
        }
        qp.sr.seen(diff);
        // Kept: WRITE packets without immediate (placed at the offset their PSN implies, the
        // target known from their message's First). Not kept: SEND (which receive WQE and
        // offset is not known before the messages in front of it arrive), WRITE with
        // immediate (consumes a receive WQE in order), READ requests (responses and the
        // ACKs they imply go in PSN order).
        const uint8_t op = bth.opcode;
        const bool keepable = op == roce::RC_WRITE_FIRST || op == roce::RC_WRITE_MIDDLE ||
                              op == roce::RC_WRITE_LAST || op == roce::RC_WRITE_ONLY;
        if (keepable && sr_write(qpn, qp, frame, p, false, nullptr) == sr_put::PLACED) {
            const roce::opcode_info& oi = roce::info(op);
            slot = sr_window::PLACED | (oi.is_last || oi.is_only ? sr_window::END : 0) |
                   (bth.ack_req ? sr_window::ACKREQ : 0);
            ++m_stats.sr_ooo_placed;
        } else {
            // Dropped; if it was the copy a go-back NAK asked for, that copy has come and gone,
            // so it must be asked for again.
            ++m_stats.sr_unkept;
            slot = sr_window::DROPPED;
        }
    }
    sr_nak_past_gap(qpn, qp, bth.ack_req);
}

void recv_path::sr_nak_past_gap(uint32_t qpn, qp_context& qp, bool ack_req) {
    if (!qp.nak_sent) {  // one NAK per gap
        sr_nak(qpn, qp);
    } else if (ack_req && !qp.sr.needs_go_back()) {
        // The requester asks for an answer (a message's last packet, a selective resend, or a
        // copy of a kept one in a timer's resend) past a gap already NAKed: the NAK or the
        // packet it asked for may have been lost, and nothing else would tell the requester
        // before its retransmission timer (milliseconds). The selective NAK goes again (IRN
        // NAKs every packet past a gap; here one per AckReq). The requester ignores a repeat
        // that no AckReq sent after its resend can have asked (hw/tx_engine: the resend is on
        // its way). A go-back NAK is not repeated: the stream it asked for is on its way.
        ++m_stats.sr_repeated_naks;
        sr_nak(qpn, qp);
    }
}

void recv_path::sr_nak(uint32_t qpn, qp_context& qp) {
    const bool go_back = qp.sr.needs_go_back();
    if (go_back) {
        // The requester resends everything from the gap on: every packet not kept up to the
        // highest one seen is coming again, so reaching it is no new gap.
        qp.sr.cover_unplaced();
        ++m_stats.sr_goback_naks;
    } else {
        ++m_stats.sr_selective_naks;
    }
    qp.nak_sent = true;
    flush_ack(qpn, qp);  // held ACKs first: ACK/NAK PSNs never go backwards
    send_ack(qpn, qp, qp.expected_psn,
             go_back ? roce::AETH_NAK_PSN_SEQ_ERROR : roce::AETH_NAK_SELECTIVE);
}

void recv_path::sr_advance(uint32_t qpn, qp_context& qp, uint32_t before, bool ack_req) {
    const uint32_t executed = (qp.expected_psn - before) & PSN_MASK;
    if (executed == 0) {
        return;  // not executed (a fatal NAK went out)
    }
    bool ack = ack_req;
    if (qp.sr.active()) {
        qp.sr.shift(executed);
        // The kept packets that follow complete now, in PSN order (message by message).
        while ((qp.sr.slot(0) & sr_window::PLACED) != 0) {
            const uint8_t slot = qp.sr.slot(0);
            if ((slot & sr_window::END) != 0) {
                ++m_stats.messages;
                ++qp.msn;
            }
            ack = ack || (slot & sr_window::ACKREQ) != 0;
            qp.sr.shift(1);
            qp.expected_psn = (qp.expected_psn + 1) & PSN_MASK;
        }
        sr_prune(qpn, qp);
        // Something past the expected PSN arrived, and the packet there is not on its way
        // again after a go-back NAK: the next gap, NAKed at once.
        if (qp.sr.next_gap_open()) {
            sr_nak(qpn, qp);  // acknowledges everything before it
            return;
        }
    }
    sr_prune(qpn, qp);
    if (ack) {
        request_ack(qpn, qp, (qp.expected_psn - 1) & PSN_MASK);
    }
}

void recv_path::sr_prune(uint32_t qpn, const qp_context& qp) {
    // WRITE targets whose last PSN is behind the expected one are done.
    auto& targets = m_sr_writes[qpn];
    targets.erase(std::remove_if(targets.begin(), targets.end(),
                                 [&](const sr_write_target& t) {
                                     const uint32_t end = (t.first_psn + t.packets) & PSN_MASK;
                                     return ((qp.expected_psn - end) & PSN_MASK) < HALF_PSN;
                                 }),
                  targets.end());
}

recv_path::sr_put recv_path::sr_write(uint32_t qpn, qp_context& qp, const uint8_t* frame,
                                      const roce::parsed_frame& p, bool in_order,
                                      uint32_t* msg_len) {
    const auto& bth = p.hdr.bth_;
    const roce::opcode_info& oi = roce::info(bth.opcode);
    auto& targets = m_sr_writes[qpn];
    auto fail = [&](uint8_t syndrome) {
        if (!in_order) {
            return sr_put::NOT_KEPT;  // decided when it is the expected PSN
        }
        nak_fatal(qpn, qp, bth.psn, syndrome);
        return sr_put::FAILED;
    };
    sr_write_target* t = nullptr;
    if (oi.is_first || oi.is_only) {
        const auto& reth = p.hdr.reth_;
        sr_write_target n;
        if (m_xlate.translate(reth.rkey, qp.pdn, reth.va, reth.dma_length, XLATE_REMOTE_WRITE, true,
                              n.segments) != xlate_status::OK) {
            if (in_order) {
                ++m_stats.protection_errors;
            }
            return fail(roce::AETH_NAK_REMOTE_ACCESS_ERROR);
        }
        n.first_psn = bth.psn;
        n.packets = packets_of(reth.dma_length, qp.pmtu);
        n.length = reth.dma_length;
        n.rkey = reth.rkey;
        targets.push_back(std::move(n));
        t = &targets.back();
    } else {
        for (auto& c : targets) {
            if (((bth.psn - c.first_psn) & PSN_MASK) < c.packets) {
                t = &c;
                break;
            }
        }
        if (t == nullptr) {
            if (in_order) {
                ++m_stats.bad_opcode_sequence;  // a Middle/Last with no WRITE open
            }
            return fail(roce::AETH_NAK_INVALID_REQUEST);
        }
        if (!key_live(t->rkey, qp.pdn)) {  // re-checked per packet, as in order
            if (in_order) {
                ++m_stats.protection_errors;
            }
            return fail(roce::AETH_NAK_REMOTE_ACCESS_ERROR);
        }
    }
    const uint32_t index = (bth.psn - t->first_psn) & PSN_MASK;
    const uint64_t offset = static_cast<uint64_t>(index) * qp.pmtu;
    const uint32_t len = static_cast<uint32_t>(p.payload_len);
    const bool ends = oi.is_last || oi.is_only;
    // Every packet but the last is a full path MTU; the last one ends the WRITE's length.
    if (offset + len > t->length || (ends ? offset + len != t->length : len != qp.pmtu) ||
        ends != (index + 1 == t->packets)) {
        return fail(roce::AETH_NAK_INVALID_REQUEST);
    }
    place(t->segments, offset, frame + p.payload_offset, len);
    if (msg_len != nullptr) {
        *msg_len = t->length;
    }
    return sr_put::PLACED;
}

}  // namespace rnic::hw
