// SPDX-License-Identifier: Apache-2.0
// Transmit engine: the requester and the transmit scheduler. Turns WQEs into messages for the
// send path (translating local buffers and fetching payload through the DMA engine), merges in
// responder traffic (ACKs, READ responses), tracks outstanding requests until they are
// acknowledged, and retires them in order to the CQ writer.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <vector>

#include <systemc>

#include "hw/common/channel.h"
#include "hw/common/clock_domain.h"
#include "hw/common/instant_count.h"
#include "hw/common/quick_event.h"
#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/context_cache/context_cache.h"
#include "hw/cq_writer/cq_writer.h"
#include "hw/dma_engine/dma_engine.h"
#include "hw/nic/nic_identity.h"
#include "hw/send_path/send_path_if.h"
#include "hw/translation/translation.h"
#include "hw/tx_engine/pacer.h"
#include "hw/tx_engine/rc_requester.h"
#include "hw/tx_engine/tx_engine_config.h"
#include "hw/tx_engine/tx_engine_if.h"
#include "hw/tx_engine/tx_scheduler.h"
#include "hw/wqe_fetch/wqe_fetch.h"

namespace rnic::hw {

// The receive path sees it through tx_engine_if (tx_engine_if.h); the transmit scheduler
// (tx_scheduler.h, chosen by name) through tx_sched_host.
class tx_engine final : public sc_core::sc_module, public tx_engine_if, private tx_sched_host {
public:
    tx_engine(sc_core::sc_module_name name, const tx_engine_config& cfg, const clock_domain& clk,
              const nic_identity& id, context_store& contexts, translation& xlate, dma_engine& dma,
              channel<wqe_item>& wqes, send_path_if& send_path, cq_writer& cqw, sim_context& ctx);

    // --- tx_engine_if: from the receive path (documented in tx_engine_if.h) ---
    void post_response(tx_job&& job) override;
    bool response_fifo_full() const override { return m_responses.full(); }
    const sc_core::sc_event* response_taken() const override { return &m_responses.read_event(); }
    void on_ack(uint32_t qpn, uint32_t psn, bool from_wire = false) override;
    void on_nak(uint32_t qpn, uint32_t psn, uint8_t status) override;
    void on_nak_sequence(uint32_t qpn, uint32_t psn) override;
    void on_nak_selective(uint32_t qpn, uint32_t psn) override;
    void on_rnr(uint32_t qpn, uint32_t psn, const sc_core::sc_time& delay) override;
    read_target find_read(uint32_t qpn, uint32_t psn) override;
    void on_read_response(uint32_t qpn, uint32_t first_psn, uint32_t psn, bool in_order) override;
    void on_read_done(uint32_t qpn, uint32_t first_psn) override;
    void on_read_placed(uint32_t qpn, uint32_t first_psn, uint32_t psn) override;
    void on_read_fault(uint32_t qpn, uint32_t first_psn, uint8_t status) override;

    // --- QP error (IBA 10.3.1: every outstanding WR of both queues completes with a flush
    // error) ---
    // The responder hit a fatal error on `qpn` (tx_engine_if).
    void qp_error(uint32_t qpn) override;
    // The command processor moved `qpn` to ERROR (modify QP, e.g. NdkFlush): requests in flight
    // and queued complete with CQE_WR_FLUSH_ERR at once; nothing more of the QP is sent.
    void flush_qp(uint32_t qpn);
    // The command processor moved `qpn` to RESET or destroyed it (IBA 10.3.1: the work queues
    // are emptied without completions). The per-QP requester state starts over: outstanding
    // requests, READ tracking, retransmission timer and retry budgets; jobs of the old
    // incarnation still queued for the send path and WQEs fetched before the reset are dropped.
    void reset_qp(uint32_t qpn);
    // Called whenever a QP enters ERROR through this engine (the receive path flushes the
    // posted receives).
    void set_qp_error_listener(std::function<void(uint32_t)> fn) override {
        m_error_listener = std::move(fn);
    }

    // QP context reads/updates go through this cache when set (else on-chip hits).
    void set_context_cache(context_cache* cache) { m_cache = cache; }

    // Congestion control (hw/cc), when on: every request / READ-response packet waits for its
    // slot in the rate limiter before it goes to the send path, and ACKs (with the PSN they
    // cover; NAKs flagged) are reported for the NIC-measured RTT.
    // Congestion control's rate limiter (also registers the scheduler's paced counters:
    // fifo's `paced_bypasses`).
    void set_pacer(pacer* p);
    void set_ack_observer(std::function<void(uint32_t qpn, uint32_t psn, bool nak)> fn) {
        m_ack_observer = std::move(fn);
    }
    // Congestion control that wants an RTT sample per segment of a message (TIMELY's
    // segment_bytes; 0: off): a SEND or WRITE longer than max(1, bytes / pmtu) packets goes to
    // the send path as segments of that many packets (from the message's start), each asking
    // for an ACK on its last packet (tx_descriptor::first_packet; README "Congestion control").
    void set_ack_segment_bytes(uint32_t bytes) { m_ack_segment_bytes = bytes; }
    // HPCC: every SEND/WRITE request packet carries an empty INT stack for the switches to fill
    // (tx_descriptor::telemetry; hw/roce/README.md, "In-band telemetry").
    void set_telemetry(bool on) { m_telemetry = on; }
    // Optional: the segment of one QP now (hw/cc: smaller at low rates), at most the above.
    void set_ack_segment_fn(std::function<uint32_t(uint32_t qpn)> fn) {
        m_ack_segment_fn = std::move(fn);
    }

    struct stats {
        uint64_t wqes = 0;
        uint64_t messages = 0;
        uint64_t payload_bytes = 0;
        uint64_t payload_read_parts = 0;  // cut_through: read requests streamed on
        uint64_t inline_bytes = 0;
        uint64_t responses = 0;
        uint64_t acks_sent = 0;
        uint64_t completions = 0;
        uint64_t error_completions = 0;
        uint64_t flushed = 0;
        uint64_t local_ops = 0;
        uint64_t fence_waits = 0;
        uint64_t read_limit_waits = 0;
        uint64_t timeouts = 0;            // retransmission timer expiries
        uint64_t retransmits = 0;         // messages sent again (go-back-N)
        uint64_t nak_sequence = 0;        // PSN sequence error NAKs acted on
        uint64_t stale_naks = 0;          // sequence NAKs older than what was acknowledged: ignored
        uint64_t superseded_resends = 0;  // queued resends replaced by a newer go-back-N
        uint64_t rnr_naks = 0;
        uint64_t retry_exceeded = 0;    // QPs put in error: retry or RNR retry exhausted
        uint64_t read_reissues = 0;     // READs re-issued for a missing response
        uint64_t dropped_in_error = 0;  // queued requests / READ responses of an ERROR QP, not sent
        uint64_t source_key_faults = 0;  // payload source key failed its per-packet check
        uint64_t reset_discarded = 0;    // WQEs of a QP reset/destroyed first: no completion
        uint64_t dropped_stale = 0;      // queued jobs of a reset/destroyed QP, not sent
        uint64_t selective_naks = 0;     // selective NAKs acted on (selective repeat only)
        uint64_t tail_resends = 0;       // packets resent after an ACK showed a lost tail
    };
    const stats& get_stats() const { return m_stats; }
    // Loss recovery, per QP and in total (stats.json: the `recovery_*` counters and
    // `recovery_by_qp`; recovery_stats in rc_requester.h, README "Loss recovery counters").
    const recovery_stats& get_recovery() const { return m_recovery; }
    // The same for one QP (zeros if it never recovered from a loss).
    recovery_stats recovery_of(uint32_t qpn) const;
    // The packets of a message whose source key died mid-way (zeros on the payload stream):
    // the NIC gives it to the send path's MAC output, which stomps them (send_path_if.h).
    egress_stomp& stomp() { return m_stomp; }

private:
    struct outstanding {
        uint16_t wqe_index = 0;
        uint8_t cqe_opcode = 0;
        bool signaled = false;
        bool is_read = false;
        bool done = false;
        uint8_t status = 0;  // hsi::cqe_status
        uint32_t first_psn = 0;
        uint32_t last_psn = 0;  // ACK covering this PSN completes a SEND/WRITE
        uint32_t length = 0;
        std::vector<dma_segment> read_segments;
        std::vector<uint32_t> read_keys;  // READ: local keys of the sink (re-checked per packet)
        read_progress resp;               // READ: its responses (rc_requester.h)
        bool on_wire = false;             // a request with PSNs (not a local operation)
        bool sent = false;  // its last packet (the one with AckReq) went to the send path
        uint64_t flow_id = 0;
        tx_job job;  // what went on the wire, kept for retransmission
    };
    struct qp_state {
        std::deque<outstanding> queue;
        uint32_t reads_in_flight = 0;
        // PSNs, retry budgets, recovery episode, resends, tail probe, window (rc_requester.h).
        rc_requester rc;
        // Reliability (IBA 9.7): one retransmission timer per QP, restarted on progress (an
        // RNR back-off when rc.rnr_wait()).
        sc_core::sc_time deadline = sc_core::SC_ZERO_TIME;  // zero: timer stopped
        // Incarnation: bumped by reset_qp. WQEs fetched before reset_at belong to the old one.
        uint32_t generation = 0;
        bool was_reset = false;
        sc_core::sc_time reset_at = sc_core::SC_ZERO_TIME;
        // Congestion window, same-instant rule: bytes that ACKs of this instant took out of
        // rc's in-flight count. The scheduler's check at this instant still counts them in
        // flight (window_in_flight()).
        instant_count window_acked;
    };
    // The QP's unacknowledged SEND/WRITE bytes as the transmit scheduler sees them at this
    // clock edge: an ACK processed at the edge opens the window from the next edge on, whatever
    // order SystemC runs the receive path and the scheduler in at the edge (hw/tx_engine/README.md
    // "Same-instant order").
    static uint64_t window_in_flight(const qp_state& st);
    void requester_thread();
    // The one producer of the send path: asks the scheduler for the next turn and sends it, or
    // sleeps on what the scheduler names.
    void transmit_thread();
    void sleep(const tx_sleep& s);
    // --- tx_sched_host: what the scheduler asks (documented in tx_scheduler.h) ---
    bool has(tx_queue q) const override;
    const tx_job& front(tx_queue q) override;
    void take(tx_queue q, tx_job& into) override;
    bool supersedes(const tx_job& r, const tx_job& copy) const override;
    bool paced() const override { return m_pacer != nullptr; }
    bool limited(uint32_t qpn) const override { return m_pacer->limited(qpn); }
    uint64_t try_pace(const tx_job& job, uint32_t index, uint64_t& held_cycles) override;
    uint32_t window_fit(const tx_descriptor& d, uint32_t next, uint32_t n, bool& windowed) override;
    uint64_t count_sent(const tx_job& job, uint32_t first, uint32_t packets) override;
    void timer_thread();
    void arm_timer(uint32_t qpn, qp_state& st, const sc_core::sc_time& deadline);
    void timers_changed();  // wakes the timer thread if the earliest deadline moved earlier
    void restart_timer(uint32_t qpn, qp_state& st);
    // A request (new or resent) of `job`'s QP went to the send path whole, its last packet (the
    // one with AckReq) included: the message now waits for a response; the timer starts if it
    // is not running.
    void request_sent(const tx_job& job) override;
    // The responder acknowledged every PSN up to `psn` (an ACK, or a NAK for psn + 1). True if
    // that is beyond what was acknowledged before (forward progress, IBA 9.7.6.1.2): the
    // retransmission timer and the retry budget start over, and an episode whose PSN is now
    // acknowledged ends.
    bool acknowledge_through(uint32_t qpn, qp_state& st, uint32_t psn);
    // The QP's open recovery episode ends (rc_requester::end_episode), counted.
    void end_episode(uint32_t qpn, qp_state& st, bool failed);
    recovery_stats& qp_recovery(uint32_t qpn) { return m_recovery_by_qp[qpn]; }
    // A NAK (or a gap in READ responses) opens a recovery episode unless one is open.
    void open_nak_episode(uint32_t qpn, qp_state& st, uint32_t psn);
    // Selective repeat: queues the packets from..to (PSNs) of the unfinished SEND/WRITE messages
    // as resends of their own (never superseded).
    void resend_range(qp_state& st, uint32_t from, uint32_t to);
    // Queues every unfinished message from `psn` on for retransmission (a READ that already
    // placed responses is re-issued from its first missing response). Resends of the QP still
    // queued are kept if the first of them starts at or before `psn` (they cover it), else
    // replaced. False if there is nothing to resend.
    bool go_back_n(uint32_t qpn, uint32_t psn);
    // Packets first..last (indices in the message) of `o`'s message as a job of their own
    // (selective repeat: the send path builds them as Middle/Last when they do not start the
    // message), AckReq on its last packet.
    tx_job slice_job(const outstanding& o, uint32_t first, uint32_t last) const;
    bool selective() const { return m_cfg.transport.recovery == recovery_mode::SELECTIVE_REPEAT; }
    void read_finished(uint32_t qpn, qp_state& st);
    // Selective repeat: re-issues the READ `o` for its missing responses from resp_next up to
    // the next one placed (or its end).
    void reissue_read_gap(uint32_t qpn, qp_state& st, outstanding& o);
    void flush_outstanding(uint32_t qpn);
    bool in_error(uint32_t qpn) const;
    sc_core::sc_time timeout_of(const qp_context& qp) const;
    void process_wqe(wqe_item& w);
    void execute_local(wqe_item& w, outstanding& o);
    void retire(uint32_t qpn);
    void fail_qp(uint32_t qpn);
    void complete_now(const wqe_item& w, uint8_t opcode, uint8_t status);
    void push_cqe(uint32_t qpn, const outstanding& o);
    void send_job(tx_job& job);
    // A response taken from the queue still goes (false: dropped, counted).
    bool response_live(const tx_job& job) override;
    // A go-back-N resend / new request taken from its queue still goes (false: dropped,
    // counted; a resend's retransmission counters are counted here).
    bool resend_live(const tx_job& job) override;
    bool request_live(const tx_job& job) override;
    // Packets per congestion-control segment of `d` (set_ack_segment_bytes), 0: none.
    uint32_t ack_segment_packets(const tx_descriptor& d) const override;
    // Packets first .. first + count - 1 of `job`'s message (count 0: the job's descriptor as
    // it is: the whole message, or a selective-repeat segment). `scheduled`: the round-robin
    // scheduler booked the first packet's rate-limiter slot; the others are passed without
    // waiting. False if a source key failed (the job is over). `ack_at_end`: AckReq on the
    // part's last packet (a congestion window is in force, or a congestion-control segment
    // ends there); the job's last packet has it anyway.
    bool send_packets(tx_job& job, uint32_t first, uint32_t count, bool scheduled,
                      bool ack_at_end = false);
    // The job's source keys still name valid regions of its PD (through the MPT; the lookup is
    // pipelined with the payload read, so a hit costs no cycle).
    bool source_keys_live(const tx_job& job) const;
    // A source key failed at the packet with `psn`: requester -> the WQE completes with
    // CQE_LOCAL_PROT_ERR; responder READ -> NAK remote access error; the QP goes to ERROR.
    void source_fault(const tx_job& job, uint32_t psn);
    uint32_t generation_of(uint32_t qpn) const;
    tx_descriptor base_descriptor(const qp_context& qp, uint32_t qpn) const;

    tx_engine_config m_cfg;
    const clock_domain& m_clk;
    nic_identity m_id;
    context_store& m_contexts;
    translation& m_xlate;
    dma_engine& m_dma;
    channel<wqe_item>& m_wqes;
    send_path_if& m_send_path;
    cq_writer& m_cq_writer;
    sim_context& m_ctx;
    channel<tx_job> m_requests;
    channel<tx_job> m_responses;
    std::deque<tx_job> m_retransmits;  // go-back-N resends: after responses, before new work
    void push_resend(tx_job&& j);      // queued now (tx_job::queued_ps)
    quick_event m_retransmit_event;
    std::set<std::pair<sc_core::sc_time, uint32_t>> m_timers;  // (deadline, qpn)
    quick_event m_timer_changed;    // an earlier deadline than m_timer_wake
    sc_core::sc_time m_timer_wake;  // the timer thread's own wake-up (zero: none)
    quick_event m_progress;         // an outstanding request completed
    std::unordered_map<uint32_t, qp_state> m_qps;
    stats m_stats;
    recovery_stats m_recovery;
    std::map<uint32_t, recovery_stats> m_recovery_by_qp;  // QPs that recovered from a loss
    egress_stomp m_stomp;
    fabric::read_parts m_read_parts;  // cut_through: the last payload read's requests
    context_cache* m_cache = nullptr;
    std::function<void(uint32_t)> m_error_listener;
    pacer* m_pacer = nullptr;          // congestion control's rate limiter (null: off)
    uint32_t m_ack_segment_bytes = 0;  // set_ack_segment_bytes
    bool m_telemetry = false;          // set_telemetry
    std::function<uint32_t(uint32_t)> m_ack_segment_fn;  // set_ack_segment_fn
    std::function<void(uint32_t, uint32_t, bool)> m_ack_observer;
    std::unique_ptr<tx_scheduler> m_sched;  // rnic.tx_engine.scheduler.policy
    quick_event m_sched_wake;               // a window opened (ACK; a scheduler that applies them)
};

}  // namespace rnic::hw
