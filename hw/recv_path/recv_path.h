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
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <systemc>

#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/common/timestep_arbiter.h"
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
        uint64_t busy_ps = 0;  // time the receive thread was not waiting for a frame (lanes:
                               // their mean, as of the last time one went idle; lane_stats)
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
    // Per receive lane (rnic.recv_path.lanes > 1; stats.json lane<i>_busy_ps, lane<i>_stall_ps).
    struct lane_stats {
        uint64_t frames = 0;
        uint64_t busy_ps = 0;   // not waiting for a frame (nor for the pipelined parse stage)
        uint64_t stall_ps = 0;  // of that, waiting for the transmit engine's response FIFO, the
                                // CQ writer, the placement buffer or a same-cycle hand-off
    };
    uint32_t lanes() const { return static_cast<uint32_t>(m_lanes.size()); }
    // The lane that handles the frames of `qpn` (per-QP order: one lane per QP).
    uint32_t lane_of(uint32_t qpn) const { return qpn % lanes(); }
    const lane_stats& get_lane_stats(uint32_t lane) const { return m_lanes[lane].stats; }
    // busy_ps with the busy stretch under way counted up to `now` (not before the last event
    // this block ran: timeseries.csv asks at a boundary it has simulated up to). With several
    // lanes, the lanes' mean (a busy fraction of the receive path as a whole).
    uint64_t busy_ps_at(const sc_core::sc_time& now) const {
        if (lanes() == 1) {
            return lane_busy_ps_at(0, now);
        }
        uint64_t sum = 0;
        for (uint32_t i = 0; i < lanes(); ++i) {
            sum += lane_busy_ps_at(i, now);
        }
        return sum / lanes();
    }
    uint64_t lane_busy_ps_at(uint32_t lane, const sc_core::sc_time& now) const {
        const rx_lane& l = m_lanes[lane];
        uint64_t busy = l.stats.busy_ps;
        if (!l.idle) {
            // A wait for the pipelined parse stage is counted whole when it starts; the part of
            // it still ahead of `now` has not been waited yet.
            const sc_core::sc_time ahead =
                l.parse_wait_end > now ? l.parse_wait_end - now : sc_core::SC_ZERO_TIME;
            busy += m_clk.ps_of(now - l.busy_since - (l.parse_wait - ahead));
        }
        if (lanes() == 1) {
            return busy;  // one lane: its waits for downstream blocks count as busy, as before
        }
        // Several lanes: a lane waiting for a downstream block is not what binds (stall_ps).
        const uint64_t stall =
            l.stats.stall_ps + (l.stalling ? m_clk.ps_of(now - l.stall_since) : 0);
        return busy - stall;
    }

private:
    void rx_thread();
    // Receive lane `i`: takes its frames (those of the QPs steered to it) in arrival order.
    void lane_thread(uint32_t i);
    // The lane a raw frame goes to: by the BTH's destination QP (ARP and others: lane 0).
    uint32_t steer(const fabric::eth_frame& f) const { return lanes() == 1 ? 0 : steer_qpn(f); }
    uint32_t steer_qpn(const fabric::eth_frame& f) const;
    // Several lanes: hand-offs to blocks that take one caller at a time (the transmit engine,
    // the CQ writer, the GSI) go in lane order when lanes reach them in the same instant,
    // whatever order SystemC runs the lane threads in (settle_instant). One lane: nothing.
    void order() {
        if (lanes() > 1) {
            settle_instant();
        }
    }
    // The responder's ACK/NAKs and READ responses to the transmit engine.
    void respond(tx_job&& job) {
        if (lanes() > 1) {
            take_response_turn();
        }
        m_tx.post_response(std::move(job));
    }
    void take_response_turn();
    // Several lanes: a port into a block that takes one hand-off at a time (the transmit
    // engine's response FIFO, the CQ writer's request FIFO). Hand-offs asked in the same
    // instant, and those waiting for room, go round robin over the lanes (and the ACK timer
    // thread), whatever order SystemC runs the lane threads in.
    struct lane_port {
        uint64_t waiting = 0;  // bit i: lane i (bit lanes: the ACK timer thread) waits
        uint32_t last = 0;     // the one served last
        quick_event turn;
    };
    void take_turn(lane_port& port, const std::function<bool()>& full,
                   const sc_core::sc_event* freed);
    lane_port m_response_port;
    lane_port m_cqe_port;
    // The calling thread's lane, -1 for the ACK timer thread.
    int lane_index() const;
    // A lane's wait for a downstream block (stall_ps); -1: not a lane, nothing counted.
    int stall_begin();
    void stall_end(int lane, const sc_core::sc_time& since);
    // The flow of the frame the calling lane handles (ACKs inherit it).
    uint64_t current_flow() const { return lanes() == 1 ? m_current_flow : lane_flow(); }
    uint64_t lane_flow() const;
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
    recv_take take_receive_wqe_from(uint32_t qpn, qp_context& qp, srq_context* srq);
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
    sc_core::sc_time m_placement_lag;  // placement_lag_ns (throttle, per payload write)
    const clock_domain& m_clk;
    nic_identity m_id;
    context_store& m_contexts;
    translation& m_xlate;
    dma_engine& m_dma;
    tx_engine_if& m_tx;  // the transmit engine: responses out, requester events in
    cq_writer& m_cq_writer;
    sim_context& m_ctx;
    // Receive lanes (rnic.recv_path.lanes): lane 0's FIFO is m_fifo (traced as rx_fifo).
    // cut_through: the frame a lane handles, and when its last byte is in (zero: all in).
    struct streaming_frame {
        const uint8_t* data = nullptr;
        size_t size = 0;
        sc_core::sc_time tail;
    };
    struct rx_lane {
        channel<fabric::eth_frame>* fifo = nullptr;
        std::unique_ptr<channel<fabric::eth_frame>> own_fifo;  // lanes 1..N-1
        std::deque<sc_core::sc_time> parsed;  // parse_pipelined: each queued frame's parse end
        std::deque<std::pair<uint32_t, sc_core::sc_time>> flushes;  // (qpn, not before)
        const sc_core::sc_process_b* process = nullptr;
        std::string track;            // trace.json track (lanes > 0: "<block>.lane<i>")
        stage_slicer receive_slices;  // its "receive" and "rx_dma" slices
        stage_slicer dma_slices;
        uint64_t flow = 0;                // flow of the frame being handled
        sc_core::sc_time busy_since;      // the lane's last wake from idle
        sc_core::sc_time parse_wait;      // since then, waiting for the pipelined parse stage
        sc_core::sc_time parse_wait_end;  // the end of the last such wait (may lie ahead)
        bool idle = true;                 // the lane waits for a frame
        bool stalling = false;            // waits for a downstream block since stall_since
        sc_core::sc_time stall_since;
        lane_stats stats;
        streaming_frame streaming;  // cut_through: the frame being handled
        // A frame that arrived at the idle lane: receive_frame takes it from the buffer at once
        // (as the lane would on waking) and wakes the lane when its parse ends, one wake-up
        // instead of two (the frame's arrival and the end of the parse).
        bool handoff = false;
        fabric::eth_frame handoff_frame;
        sc_core::sc_time handoff_arrived;
        sc_core::sc_time handoff_parsed;  // the parse's end: the lane's wake-up
        uint64_t handoff_delta = 0;       // the delta cycle of the hand-off
        // What the take changed in the parse-stage accounting (undone by a same-instant flush).
        sc_core::sc_time handoff_parse_wait;
        sc_core::sc_time handoff_parse_wait_end;
        sc_core::sc_time handoff_parse_entry;  // parse_pipelined: its entry in `parsed`
        // What an idle lane waits on, one event for everything that gives it work: a frame put
        // into its FIFO or a flush asked (the next delta cycle, as the FIFO's own write event),
        // a hand-off (the parse's end). An event holds its earliest notification: a lane woken
        // early (a flush or a second frame before a hand-off's parse has ended) waits for the
        // rest itself, as it did when these were three events of an or-list (one wait on one
        // event instead of three: no or-list to add the lane to and take it off per frame).
        quick_event wake;
    };
    std::deque<rx_lane> m_lanes;  // a deque: a lane holds events (not movable)
    // An SRQ is taken from by one lane at a time (its consumer index and read-ahead).
    std::vector<bool> m_srq_busy;
    quick_event m_srq_free;
    channel<fabric::eth_frame> m_fifo;
    fabric::eth_link* m_link = nullptr;
    int m_link_side = 0;
    pfc_thresholds m_pfc;       // from the link at bind_link
    uint64_t m_fifo_bytes = 0;  // frame bytes in the receive buffer
    // Scatter list of the receive WQE in use, per QP (translated at the first packet).
    std::vector<std::vector<dma_segment>> m_recv_segments;
    // Target of the RDMA WRITE in progress, per QP (translated at the First/Only packet).
    std::vector<std::vector<dma_segment>> m_write_segments;  // this packet's (RDMA WRITE)
    std::vector<mtt_stream> m_write_ahead;                   // translation state of the open WRITE
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
    quick_event m_ack_timer_event;
    stats m_stats;
    context_cache* m_cache = nullptr;
    gsi* m_gsi = nullptr;
    notification_point* m_np = nullptr;
    std::function<void(uint32_t, const roce::int_stack&)> m_telemetry_observer;
    uint64_t m_current_flow = 0;  // flow of the frame handled last (ACKs inherit it)
    // parse_pipelined: the parse stage's next free edge (one frame per cycle, in arrival order).
    sc_core::sc_time m_parse_free;
    // cut_through: waits for the lane's current frame's last byte (its ICRC), if still coming in.
    void wait_frame_tail(rx_lane& lane);
    // A lane takes frame `f` off the receive buffer now (buffer bytes, XON, counters, the
    // pipelined parse's result): returns the edge at which its parse has ended.
    sc_core::sc_time take_frame(rx_lane& lane, const fabric::eth_frame& f);
    // A flush asked in the instant (and delta cycle) a frame was handed to the idle lane: the
    // lane would have seen both on waking and flushed first, so the frame goes back into the
    // buffer as if not taken yet.
    void undo_handoff(rx_lane& lane);
};

}  // namespace rnic::hw
