// SPDX-License-Identifier: Apache-2.0
// Receive path: the MAC receive side. Parses and checks every frame (ICRC, lengths, QP, PSN),
// then runs the responder (SEND into receive WQEs, WRITE into registered memory, READ
// requests into READ responses, ACK generation) and the requester's response handling (ACK /
// NAK, READ response placement).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <utility>
#include <vector>

#include <systemc>

#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/context_cache/context_cache.h"
#include "hw/cq_writer/cq_writer.h"
#include "hw/dma_engine/dma_engine.h"
#include "hw/gsi/gsi.h"
#include "hw/nic/nic_identity.h"
#include "hw/recv_path/notification_point.h"
#include "hw/recv_path/rc_responder.h"
#include "hw/recv_path/recv_path_config.h"
#include "hw/roce/roce.h"
#include "hw/translation/translation.h"
#include "hw/tx_engine/tx_engine_if.h"
#include "tlm/ethernet/eth_link.h"

namespace rnic::hw {

class recv_path : public sc_core::sc_module, public fabric::frame_sink_if {
public:
    recv_path(sc_core::sc_module_name name, const recv_path_config& cfg, const clock_domain& clk,
              const nic_identity& id, context_store& contexts, translation& xlate, dma_engine& dma,
              tx_engine_if& tx, cq_writer& cqw, sim_context& ctx);

    // From the link, when the frame's last bit is in.
    void receive_frame(fabric::eth_frame&& frame) override;
    // PFC: XOFF/XON on the receive FIFO go out as pause frames through the link's MAC.
    // The PFC thresholds come from the link's rate and propagation (nic_pfc_thresholds).
    void bind_link(fabric::eth_link& link, int side) override;
    // rnic.recv_path.cut_through: the link hands frames over once their headers are in.
    bool cut_through() const override { return m_cfg.cut_through; }
    const pfc_thresholds& pfc() const { return m_pfc; }

    // QP context reads/updates go through this cache when set (else on-chip hits).
    void set_context_cache(context_cache* cache) { m_cache = cache; }

    // `qpn` entered ERROR: its posted receives (and the one a multi-packet SEND was filling)
    // complete with CQE_WR_FLUSH_ERR, in order. Done by the receive thread between frames, not
    // before `at` (the RQ doorbell of a QP in ERROR asks for it once the doorbell is decoded).
    void flush_receives(uint32_t qpn, const sc_core::sc_time& at = sc_core::SC_ZERO_TIME);
    // The command processor moved `qpn` to RESET or destroyed it: the responder state kept
    // here (held ACK and its timer, receive WQEs read ahead, the translated receive and WRITE
    // targets) starts over, so a QP re-created under the same number inherits nothing.
    void reset_qp(uint32_t qpn);
    // UD SEND-only frames (QP1 MADs) go to the GSI block after the parse stage when set.
    void set_gsi(gsi* g) { m_gsi = g; }
    // Congestion control on: every frame of a known QP passes the notification point (CE marks
    // -> CNPs; arriving CNPs -> reaction point).
    void set_notification_point(notification_point* np) { m_np = np; }
    // HPCC: an ACK that carries an INT stack hands it to congestion control (before the
    // transmit engine takes the ACK itself).
    void set_telemetry_observer(std::function<void(uint32_t qpn, const roce::int_stack&)> fn) {
        m_telemetry_observer = std::move(fn);
    }

    struct stats {
        uint64_t frames = 0;
        uint64_t bytes = 0;
        uint64_t busy_ps = 0;  // time the receive thread was not waiting for a frame
        uint64_t fifo_drops = 0;
        uint64_t lossless_drops = 0;  // fifo_drops of PFC priorities on a PFC link
        uint64_t fifo_peak_bytes = 0;
        uint64_t parse_errors = 0;  // any roce::parse_error
        uint64_t bad_icrc = 0;
        uint64_t unknown_qp = 0;
        uint64_t bad_state = 0;  // QP not ready to receive
        uint64_t duplicates = 0;
        uint64_t out_of_sequence = 0;
        uint64_t bad_opcode_sequence = 0;
        uint64_t payload_bytes = 0;
        uint64_t streamed_writes = 0;  // cut_through: payload writes issued as the frame came in
        uint64_t messages = 0;
        uint64_t receive_wqes = 0;
        uint64_t rq_prefetch_hits = 0;
        uint64_t rnr = 0;  // SEND with no receive WQE posted
        uint64_t naks_sent = 0;
        uint64_t acks_received = 0;
        uint64_t naks_received = 0;
        uint64_t read_requests = 0;
        uint64_t duplicate_reads = 0;  // READ requests served again (duplicates)
        uint64_t read_responses = 0;
        uint64_t protection_errors = 0;
        uint64_t fatal_naks = 0;        // NAKs that put the responder QP in error
        uint64_t flushed_receives = 0;  // receive WQEs completed with a flush error
        // Selective repeat only (registered in stats.json when it is on).
        uint64_t sr_selective_naks = 0;  // NAKs asking for one packet (the gap at expected PSN)
        uint64_t sr_goback_naks = 0;     // sequence NAKs: resend from the gap on (drops past it)
        uint64_t sr_repeated_naks = 0;   // selective NAKs again: AckReq past a NAKed gap
        uint64_t sr_ooo_placed = 0;      // packets past the expected PSN placed and kept
        uint64_t sr_window_drops = 0;    // packets past the bitmap window: dropped
        uint64_t sr_unkept = 0;          // past the expected PSN, not placeable: dropped
    };
    const stats& get_stats() const { return m_stats; }
    // busy_ps with the busy stretch under way counted up to `now` (not before the last event
    // this block ran: timeseries.csv asks at a boundary it has simulated up to).
    uint64_t busy_ps_at(const sc_core::sc_time& now) const {
        if (m_idle) {
            return m_stats.busy_ps;
        }
        // A wait for the pipelined parse stage is counted whole when it starts; the part of it
        // still ahead of `now` has not been waited yet.
        const sc_core::sc_time ahead =
            m_parse_wait_end > now ? m_parse_wait_end - now : sc_core::SC_ZERO_TIME;
        return m_stats.busy_ps + m_clk.ps_of(now - m_busy_since - (m_parse_wait - ahead));
    }

private:
    void rx_thread();
    void flush_queue(uint32_t qpn);
    // Responder class C/D errors (IBA 9.9.3): NAK, then the QP goes to ERROR.
    void nak_fatal(uint32_t qpn, qp_context& qp, uint32_t psn, uint8_t syndrome);
    // Per-packet key re-check (through the MPT cache): the key still names a valid region of
    // PD `pdn` (a region deregistered or invalidated mid-transfer fails it).
    bool key_live(uint32_t key, uint32_t pdn);
    void handle(const fabric::eth_frame& f, const roce::parsed_frame& p);
    void handle_request(uint32_t qpn, qp_context& qp, const uint8_t* frame,
                        const roce::parsed_frame& p, uint64_t flow_id);
    void handle_response(uint32_t qpn, qp_context& qp, const uint8_t* frame,
                         const roce::parsed_frame& p);
    enum class recv_take { NONE, OK, FAULT };  // FAULT: a scatter entry failed translation
    recv_take take_receive_wqe(uint32_t qpn, qp_context& qp);
    // Writes `len` bytes to the scatter list at message offset `offset`; false on overflow.
    bool place(const std::vector<dma_segment>& segs, uint64_t offset, const uint8_t* data,
               uint32_t len);
    // `reflect`: the INT stack the ACK carries back (HPCC), null: none.
    void send_ack(uint32_t qpn, const qp_context& qp, uint32_t psn, uint8_t syndrome,
                  const roce::int_stack* reflect = nullptr);
    void post_recv_cqe(uint32_t qpn, qp_context& qp, uint8_t opcode, uint8_t status,
                       uint32_t byte_len, uint32_t imm, bool solicited, uint64_t flow_id);
    void throttle(const sc_core::sc_time& sent);
    // Responder READ: translate and queue the response (again, for a duplicate request).
    void serve_read(uint32_t qpn, qp_context& qp, const roce::parsed_frame& p, uint64_t flow_id,
                    bool first_time);
    // ACK coalescing: hold ACKs for up to ack_coalesce messages or ack_delay_ns.
    void request_ack(uint32_t qpn, qp_context& qp, uint32_t psn);
    void flush_ack(uint32_t qpn, qp_context& qp);
    void ack_thread();

    // Selective repeat (rnic.transport.recovery = selective_repeat, IRN): see README.md.
    // The bitmap window itself is qp_context::sr (sr_window, rc_responder.h).
    bool selective() const { return m_cfg.transport.recovery == recovery_mode::SELECTIVE_REPEAT; }
    // A request past the expected PSN (`diff` ahead): kept if within the window and placeable.
    void sr_out_of_order(uint32_t qpn, qp_context& qp, const uint8_t* frame,
                         const roce::parsed_frame& p, uint32_t diff);
    // After in-order execution moved expected_psn on from `before`: completes the kept
    // packets that follow, then NAKs the next gap or acknowledges.
    void sr_advance(uint32_t qpn, qp_context& qp, uint32_t before, bool ack_req);
    // NAK for the gap at expected_psn: selective (resend that packet) unless a packet past it
    // was dropped unkept, then a sequence NAK (go back from it).
    // A packet past a gap: the gap's NAK, or a repeat of it for an AckReq (README).
    void sr_nak_past_gap(uint32_t qpn, qp_context& qp, bool ack_req);
    void sr_nak(uint32_t qpn, qp_context& qp);
    // Forgets the WRITE targets the expected PSN has passed.
    void sr_prune(uint32_t qpn, const qp_context& qp);
    enum class sr_put { PLACED, NOT_KEPT, FAILED };  // FAILED: NAKed fatally (in order only)
    // A WRITE packet placed through the window's table of WRITE targets (learnt from the
    // RETH of each First/Only): in order or not. `msg_len`: the WRITE's length.
    sr_put sr_write(uint32_t qpn, qp_context& qp, const uint8_t* frame, const roce::parsed_frame& p,
                    bool in_order, uint32_t* msg_len);
    struct sr_write_target {
        uint32_t first_psn = 0;
        uint32_t packets = 0;
        uint32_t length = 0;
        uint32_t rkey = 0;
        std::vector<dma_segment> segments;
    };
    std::vector<std::vector<sr_write_target>> m_sr_writes;  // per QP: WRITEs in the window

    recv_path_config m_cfg;
    const clock_domain& m_clk;
    nic_identity m_id;
    context_store& m_contexts;
    translation& m_xlate;
    dma_engine& m_dma;
    tx_engine_if& m_tx;  // the transmit engine: responses out, requester events in
    cq_writer& m_cq_writer;
    sim_context& m_ctx;
    channel<fabric::eth_frame> m_fifo;
    fabric::eth_link* m_link = nullptr;
    int m_link_side = 0;
    pfc_thresholds m_pfc;       // from the link at bind_link
    uint64_t m_fifo_bytes = 0;  // frame bytes in the receive buffer
    // Scatter list of the receive WQE in use, per QP (translated at the first packet).
    std::vector<std::vector<dma_segment>> m_recv_segments;
    // Target of the RDMA WRITE in progress, per QP (translated at the First/Only packet).
    std::vector<std::vector<dma_segment>> m_write_segments;
    struct pending_ack {
        uint32_t count = 0;  // messages acknowledged by the held ACK
        uint32_t psn = 0;
        sc_core::sc_time since;
        bool telemetry = false;  // the newest request it answers carried an INT stack: reflected
        roce::int_stack int_;
    };
    std::vector<pending_ack> m_pending_acks;
    // Receive WQEs read ahead, per QP RQ (index qpn) and per SRQ (max_qps + srqn).
    struct prefetched {
        uint32_t index = 0;
        uint64_t ring = 0;
        sc_core::sc_time ready;
        std::vector<uint8_t> bytes;
        dma_status status = dma_status::OK;  // a failed read-ahead fails its take (H2)
    };
    // A list, not a deque: an empty std::list allocates nothing, an empty std::deque a 512 B
    // node, which over every QP of every idle NIC of a 1024-node fabric is 0.6 MiB per node.
    std::vector<std::list<prefetched>> m_rq_prefetch;
    // A receive-WQE read failed on PCIe (H2): an SRQ dies (EVENT_SRQ_ERROR, its QPs to ERROR),
    // a QP's own RQ takes the QP to ERROR.
    void receive_queue_failed(uint32_t qpn, qp_context& qp, srq_context* srq);
    std::deque<std::pair<sc_core::sc_time, uint32_t>> m_ack_timers;  // (deadline, qpn), in order
    sc_core::sc_event m_ack_timer_event;
    std::deque<std::pair<uint32_t, sc_core::sc_time>> m_flushes;  // (qpn, not before)
    sc_core::sc_event m_flush_event;
    stats m_stats;
    context_cache* m_cache = nullptr;
    gsi* m_gsi = nullptr;
    notification_point* m_np = nullptr;
    std::function<void(uint32_t, const roce::int_stack&)> m_telemetry_observer;
    uint64_t m_current_flow = 0;        // flow of the frame being handled (ACKs inherit it)
    sc_core::sc_time m_busy_since;      // the receive thread's last wake from idle
    sc_core::sc_time m_parse_wait;      // since then, waiting for the pipelined parse stage
    sc_core::sc_time m_parse_wait_end;  // the end of the last such wait (may lie ahead)
    bool m_idle = true;                 // the receive thread waits for a frame
    // parse_pipelined: when each frame in the FIFO arrived; the parse stage's next free edge.
    std::deque<sc_core::sc_time> m_arrivals;
    sc_core::sc_time m_parse_free;
    // cut_through: the frame being handled, and when its last byte is in (zero: all in).
    struct streaming_frame {
        const uint8_t* data = nullptr;
        size_t size = 0;
        sc_core::sc_time tail;
    };
    streaming_frame m_streaming;
    // cut_through: waits for the current frame's last byte (its ICRC), if still coming in.
    void wait_frame_tail();
};

}  // namespace rnic::hw
