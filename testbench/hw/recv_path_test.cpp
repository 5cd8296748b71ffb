// SPDX-License-Identifier: Apache-2.0
// Block bench of the receive path: recv_path on the control bench (host memory, PCIe, DMA, CQ
// writer) with translation, fed RoCEv2 frames built by hw/roce, and a stand-in for the transmit
// engine behind tx_engine_if that records what the receive path asks of it. Expectations are the
// IBA responder and requester rules: a duplicate request is acknowledged again at the PSN before
// the expected one (9.7.5.2.1), an out-of-sequence request is NAKed once per gap with the
// expected PSN (9.7.5.2.2), a SEND with no receive posted gets an RNR NAK with the configured
// timer code (9.7.5.2.8), every AETH syndrome reaches the requester as what it means (table 44,
// table 45 for the RNR delay), and bad frames are dropped and counted. Each TEST is its own
// process.
#include "hw/recv_path/recv_path.h"

#include <gtest/gtest.h>

#include "hw/roce/roce.h"
#include "hw/translation/translation.h"
#include "testbench/hw/control_bench.h"

namespace {

using namespace rnic;
using namespace rnic::hw;
using namespace rnic::testbench::control_bench;

constexpr uint32_t QPN = 5;

// What the receive path asked of the transmit engine, in order.
struct tx_call {
    std::string what;
    uint32_t qpn = 0;
    uint32_t psn = 0;
    uint32_t arg = 0;  // syndrome (responses), status (on_nak), in_order, ...
    sc_time delay;     // on_rnr
    sc_time at;
};

class fake_tx : public tx_engine_if {
public:
    std::vector<tx_call> calls;
    sc_time response_hold;  // post_response blocks this long (a transmit engine busy elsewhere)
    void post_response(tx_job&& job) override {
        calls.push_back(
            {"response", job.desc.src_qpn, job.desc.psn, job.desc.syndrome, {}, sc_time_stamp()});
        if (response_hold != sc_core::SC_ZERO_TIME) {
            sc_core::wait(response_hold);
        }
    }
    void on_ack(uint32_t qpn, uint32_t psn, bool from_wire) override {
        calls.push_back({"ack", qpn, psn, from_wire ? 1u : 0u, {}, sc_time_stamp()});
    }
    void on_nak(uint32_t qpn, uint32_t psn, uint8_t status) override {
        calls.push_back({"nak", qpn, psn, status, {}, sc_time_stamp()});
    }
    void on_nak_sequence(uint32_t qpn, uint32_t psn) override {
        calls.push_back({"nak_sequence", qpn, psn, 0, {}, sc_time_stamp()});
    }
    void on_nak_selective(uint32_t qpn, uint32_t psn) override {
        calls.push_back({"nak_selective", qpn, psn, 0, {}, sc_time_stamp()});
    }
    void on_rnr(uint32_t qpn, uint32_t psn, const sc_time& delay) override {
        calls.push_back({"rnr", qpn, psn, 0, delay, sc_time_stamp()});
    }
    read_target find_read(uint32_t, uint32_t) override { return {}; }
    void on_read_response(uint32_t qpn, uint32_t, uint32_t psn, bool in_order) override {
        calls.push_back({"read_response", qpn, psn, in_order ? 1u : 0u, {}, sc_time_stamp()});
    }
    void on_read_done(uint32_t qpn, uint32_t first_psn) override {
        calls.push_back({"read_done", qpn, first_psn, 0, {}, sc_time_stamp()});
    }
    void on_read_placed(uint32_t qpn, uint32_t, uint32_t psn) override {
        calls.push_back({"read_placed", qpn, psn, 0, {}, sc_time_stamp()});
    }
    void on_read_fault(uint32_t qpn, uint32_t first_psn, uint8_t status) override {
        calls.push_back({"read_fault", qpn, first_psn, status, {}, sc_time_stamp()});
    }
    void qp_error(uint32_t qpn) override {
        calls.push_back({"qp_error", qpn, 0, 0, {}, sc_time_stamp()});
    }
    void set_qp_error_listener(std::function<void(uint32_t)> fn) override {
        listener = std::move(fn);
    }
    std::function<void(uint32_t)> listener;
};

recv_path_config rp_config() {
    recv_path_config c;
    c.rnr_timer_code = 14;  // IBA table 45: 1.28 ms
    return c;
}

struct rp_bench {
    bench b;
    translation xlate;
    fake_tx tx;
    recv_path rp;
    explicit rp_bench(const recv_path_config& cfg = rp_config())
        : xlate("xlate", translation_config{}, b.clk, b.contexts, b.ctx)
        , rp("rp", cfg, b.clk, nic_identity{}, b.contexts, xlate, b.dma, tx, b.cqw, b.ctx) {}
    qp_context& qp(uint8_t state = hsi::QPS_RTS) {
        qp_context& q = b.make_qp(QPN, state);
        q.expected_psn = 100;
        q.next_psn = 7;
        q.pmtu = 1024;
        q.dest_qpn = 9;
        return q;
    }
    // A frame to QPN (or `qpn`) with opcode `op` at `psn`.
    static fabric::eth_frame frame(uint8_t op, uint32_t psn, bool ack_req = false,
                                   uint8_t syndrome = 0, uint32_t qpn = QPN) {
        roce::frame_header h;
        h.bth_.opcode = op;
        h.bth_.dest_qp = qpn;
        h.bth_.psn = psn;
        h.bth_.ack_req = ack_req;
        h.aeth_.syndrome = syndrome;
        fabric::eth_frame f;
        std::vector<uint8_t> payload(roce::info(op).has_payload ? 8 : 0, 0xAB);
        roce::build_frame(h, payload.data(), payload.size(), f.data);
        return f;
    }
    void put(fabric::eth_frame&& f) { rp.receive_frame(std::move(f)); }
    std::vector<tx_call> calls(const std::string& what) const {
        std::vector<tx_call> out;
        for (const auto& c : tx.calls) {
            if (c.what == what) {
                out.push_back(c);
            }
        }
        return out;
    }
};

TEST(RecvPath, DuplicateRequestIsAcknowledgedAgainBeforeTheExpectedPsn) {
    rp_bench t;
    t.qp();
    t.b.drv.body = [&] {
        t.put(rp_bench::frame(roce::RC_WRITE_ONLY, 99, true));   // executed before, asks an ACK
        t.put(rp_bench::frame(roce::RC_WRITE_ONLY, 98, false));  // executed before, no AckReq
        t.b.settle();
    };
    run(t.b);
    const auto r = t.calls("response");
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].psn, 99u);  // everything up to expected - 1 was received
    EXPECT_EQ(r[0].arg, roce::AETH_ACK_NO_CREDIT);
    EXPECT_EQ(t.rp.get_stats().duplicates, 2u);
    EXPECT_EQ(t.rp.get_stats().payload_bytes, 0u);  // nothing placed again
    EXPECT_EQ(t.b.contexts.qp(QPN)->expected_psn, 100u);
}

// With parse_pipelined, a frame's parse_cycles are a pipeline stage's latency: the response
// comes no earlier than the parse allows, but the receive thread waiting for the stage is not
// busy (busy_ps is its utilization, what "Bound by" reads), while without the pipeline the
// parse is the thread's own work.
void parse_latency_and_busy(bool pipelined) {
    recv_path_config cfg = rp_config();
    cfg.parse_pipelined = pipelined;
    cfg.parse_cycles = 200;
    rp_bench t(cfg);
    t.qp();
    sc_time put_at;
    t.b.drv.body = [&] {
        put_at = sc_time_stamp();
        t.put(rp_bench::frame(roce::RC_WRITE_ONLY, 99, true));  // a duplicate: ACKed again
        t.b.settle();
    };
    run(t.b);
    const auto r = t.calls("response");
    ASSERT_EQ(r.size(), 1u);
    const sc_time parse = t.b.clk.cycles(200);
    EXPECT_GE(r[0].at, put_at + parse);
    const sc_time busy(static_cast<double>(t.rp.get_stats().busy_ps), SC_PS);
    if (pipelined) {
        EXPECT_LT(busy, t.b.clk.cycles(20)) << "the wait for the parse stage counted as busy";
    } else {
        EXPECT_GE(busy, parse);
    }
}

TEST(RecvPath, PipelinedParseIsLatencyNotBusyTime) {
    parse_latency_and_busy(true);
}
TEST(RecvPath, UnpipelinedParseIsBusyTime) {
    parse_latency_and_busy(false);
}

TEST(RecvPath, OutOfSequenceRequestsAreNakedOncePerGapAtTheExpectedPsn) {
    rp_bench t;
    t.qp();
    t.b.drv.body = [&] {
        t.put(rp_bench::frame(roce::RC_WRITE_ONLY, 102, true));
        t.put(rp_bench::frame(roce::RC_WRITE_ONLY, 103, true));
        t.put(rp_bench::frame(roce::RC_WRITE_ONLY, 104, false));
        t.b.settle();
    };
    run(t.b);
    const auto r = t.calls("response");
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].psn, 100u);
    EXPECT_EQ(r[0].arg, roce::AETH_NAK_PSN_SEQ_ERROR);
    EXPECT_EQ(t.rp.get_stats().out_of_sequence, 3u);
    EXPECT_EQ(t.rp.get_stats().naks_sent, 1u);
}

// Selective repeat (IRN, Mittal et al. SIGCOMM 2018: the responder NAKs packets past a gap):
// a packet the responder already kept past the NAKed gap at the expected PSN comes again (a copy
// in the requester's go-back resend after a timeout). Without AckReq it is dropped silently (one
// NAK per gap); with AckReq the requester asks for an answer, and the NAK or the resend it asked
// for may have been lost, so the selective NAK of the gap goes again. Without that answer the
// requester waits for its retransmission timer (issue 24: soak_rc_scale_selective's QP that
// expired twice in a row).
TEST(RecvPath, SelectiveKeptPacketAgainWithAckReqPastANakedGapGetsTheNakAgain) {
    recv_path_config cfg = rp_config();
    cfg.transport.recovery = recovery_mode::SELECTIVE_REPEAT;
    rp_bench t(cfg);
    t.qp();
    constexpr uint32_t KEY = 0x0100;  // MPT index 1, variant 0
    mpt_entry& mr = *t.b.contexts.mpt_slot(KEY);
    mr.valid = mr.allocated = true;
    mr.key = KEY;
    mr.access = hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_WRITE;
    mr.base_va = 0x10000;
    mr.length = 4096;
    mr.page_count = mr.max_pages = 1;
    mr.mtt_base = t.b.contexts.mtt_alloc(1);
    t.b.contexts.mtt(mr.mtt_base) = 0x200000;
    // An 8-byte WRITE Only at `psn` into the MR (rp_bench::frame's payload).
    auto write = [](uint32_t psn, bool ack_req) {
        roce::frame_header h;
        h.bth_.opcode = roce::RC_WRITE_ONLY;
        h.bth_.dest_qp = QPN;
        h.bth_.psn = psn;
        h.bth_.ack_req = ack_req;
        h.reth_.va = 0x10000;
        h.reth_.rkey = KEY;
        h.reth_.dma_length = 8;
        fabric::eth_frame f;
        const std::vector<uint8_t> payload(8, 0xAB);
        roce::build_frame(h, payload.data(), payload.size(), f.data);
        return f;
    };
    t.b.drv.body = [&] {
        t.put(write(101, false));  // past the gap at 100: kept, the gap NAKed
        t.put(write(101, false));  // kept already, no AckReq: the gap is NAKed already
        t.put(write(101, true));   // kept already, AckReq: answered by the NAK again
        t.b.settle();
    };
    run(t.b);
    const auto r = t.calls("response");
    ASSERT_EQ(r.size(), 2u);
    for (const auto& c : r) {
        EXPECT_EQ(c.psn, 100u);  // the gap: the expected PSN
        EXPECT_EQ(c.arg, roce::AETH_NAK_SELECTIVE);
    }
    EXPECT_EQ(t.rp.get_stats().sr_ooo_placed, 1u);
    EXPECT_EQ(t.rp.get_stats().sr_repeated_naks, 1u);
    EXPECT_EQ(t.rp.get_stats().duplicates, 2u);
    EXPECT_EQ(t.b.contexts.qp(QPN)->expected_psn, 100u);
}

TEST(RecvPath, SendWithNoReceivePostedGetsAnRnrNakAndTheGapBehindItIsSilent) {
    rp_bench t;
    t.qp();  // no receive posted: rq_producer == rq_consumer
    t.b.drv.body = [&] {
        t.put(rp_bench::frame(roce::RC_SEND_ONLY, 100, true));
        t.put(rp_bench::frame(roce::RC_SEND_ONLY, 101, true));  // part of the same gap
        t.b.settle();
    };
    run(t.b);
    const auto r = t.calls("response");
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].psn, 100u);
    EXPECT_EQ(r[0].arg, roce::AETH_TYPE_RNR_NAK | 14);
    EXPECT_EQ(t.rp.get_stats().rnr, 1u);
    EXPECT_EQ(t.rp.get_stats().naks_sent, 1u);
    EXPECT_EQ(t.b.contexts.qp(QPN)->expected_psn, 100u);  // the SEND is retried from 100
}

TEST(RecvPath, AethSyndromesReachTheRequesterAsWhatTheyMean) {
    rp_bench t;
    t.qp();
    sc_time arrived;
    t.b.drv.body = [&] {
        t.b.clk.wait_cycles(0);
        arrived = sc_time_stamp();
        t.put(rp_bench::frame(roce::RC_ACK, 7, false, roce::AETH_ACK_NO_CREDIT));
        t.put(rp_bench::frame(roce::RC_ACK, 8, false, roce::AETH_NAK_PSN_SEQ_ERROR));
        t.put(rp_bench::frame(roce::RC_ACK, 9, false, roce::AETH_TYPE_RNR_NAK | 14));
        t.put(rp_bench::frame(roce::RC_ACK, 10, false, roce::AETH_NAK_REMOTE_ACCESS_ERROR));
        t.put(rp_bench::frame(roce::RC_ACK, 11, false, roce::AETH_NAK_INVALID_REQUEST));
        t.put(rp_bench::frame(roce::RC_ACK, 12, false, roce::AETH_NAK_REMOTE_OP_ERROR));
        t.b.settle();
    };
    run(t.b);
    const auto& c = t.tx.calls;
    ASSERT_EQ(c.size(), 6u);
    EXPECT_EQ(c[0].what, "ack");
    EXPECT_EQ(c[0].qpn, QPN);
    EXPECT_EQ(c[0].psn, 7u);
    EXPECT_EQ(c[0].arg, 1u);  // an ACK packet from the wire
    // The first frame is handled parse_cycles after it arrived (4 cycles of 2 ns).
    EXPECT_EQ(c[0].at, arrived + t.b.clk.cycles(4));
    EXPECT_EQ(c[1].what, "nak_sequence");
    EXPECT_EQ(c[1].psn, 8u);
    EXPECT_EQ(c[2].what, "rnr");
    EXPECT_EQ(c[2].psn, 9u);
    EXPECT_EQ(c[2].delay, sc_time(1.28, sc_core::SC_MS));  // table 45, code 14
    EXPECT_EQ(c[3].what, "nak");
    EXPECT_EQ(c[3].arg, hsi::CQE_REMOTE_ACCESS_ERR);
    EXPECT_EQ(c[4].what, "nak");
    EXPECT_EQ(c[4].arg, hsi::CQE_REMOTE_INVALID_REQ);
    EXPECT_EQ(c[5].what, "nak");
    EXPECT_EQ(c[5].arg, hsi::CQE_REMOTE_OP_ERR);
    EXPECT_EQ(t.rp.get_stats().acks_received, 1u);
    EXPECT_EQ(t.rp.get_stats().naks_received, 5u);
}

TEST(RecvPath, BadFramesAreDroppedAndCountedByCause) {
    rp_bench t;
    t.qp();
    t.b.drv.body = [&] {
        fabric::eth_frame bad = rp_bench::frame(roce::RC_ACK, 7, false, 0x1F);
        bad.data.back() ^= 0x01;  // ICRC
        t.put(std::move(bad));
        t.put(rp_bench::frame(roce::RC_ACK, 7, false, 0x1F, 77));  // no such QP
        t.b.settle();
    };
    run(t.b);
    EXPECT_TRUE(t.tx.calls.empty());
    EXPECT_EQ(t.rp.get_stats().bad_icrc, 1u);
    EXPECT_EQ(t.rp.get_stats().parse_errors, 1u);
    EXPECT_EQ(t.rp.get_stats().unknown_qp, 1u);
    EXPECT_EQ(t.rp.get_stats().frames, 2u);
}

TEST(RecvPath, ResponsesNeedRtsAndRequestsRtr) {
    rp_bench t;
    t.qp(hsi::QPS_RTR);  // may receive requests, not responses
    t.b.drv.body = [&] {
        t.put(rp_bench::frame(roce::RC_ACK, 7, false, 0x1F));
        t.put(rp_bench::frame(roce::RC_WRITE_ONLY, 99, true));  // a duplicate: re-ACKed
        t.b.settle();
    };
    run(t.b);
    EXPECT_EQ(t.rp.get_stats().bad_state, 1u);
    ASSERT_EQ(t.tx.calls.size(), 1u);
    EXPECT_EQ(t.tx.calls[0].what, "response");
}

// Receive lanes (rnic.recv_path.lanes): a frame goes to lane (destination QPN mod lanes), so
// QP 4 and QP 5 are on lanes 0 and 1 of two. Without the pipelined parse a lane spends
// parse_cycles (P) of its own on each frame; an ACK is then handed to the requester at once.
// Expectations by formula: one lane takes the frames one after the other (frame k of a burst
// handled at t0 + (k+1) P); two lanes take two QPs' frames at the same time (frame k of each QP
// at t0 + (k+1) P), and one QP's frames stay in order behind a frame whose hand-off blocks.
constexpr uint32_t QP_EVEN = 4;  // lane 0 of two
constexpr uint32_t QP_ODD = 5;   // lane 1 of two

std::vector<tx_call> acks_of(const rp_bench& t, uint32_t qpn) {
    std::vector<tx_call> out;
    for (const auto& c : t.calls("ack")) {
        if (c.qpn == qpn) {
            out.push_back(c);
        }
    }
    return out;
}

// N ACKs to each of two QPs, alternating, all in the FIFO at t0; the time of each QP's last ACK.
void two_qps_acks(uint32_t lanes) {
    constexpr uint32_t N = 8;
    recv_path_config cfg = rp_config();
    cfg.lanes = lanes;
    rp_bench t(cfg);
    t.b.make_qp(QP_EVEN, hsi::QPS_RTS);
    t.b.make_qp(QP_ODD, hsi::QPS_RTS);
    sc_time t0;
    t.b.drv.body = [&] {
        t.b.clk.wait_cycles(0);
        t0 = sc_time_stamp();
        for (uint32_t k = 0; k < N; ++k) {
            for (const uint32_t q : {QP_EVEN, QP_ODD}) {
                t.put(rp_bench::frame(roce::RC_ACK, 10 + k, false, roce::AETH_ACK_NO_CREDIT, q));
            }
        }
        t.b.settle();
    };
    run(t.b);
    const sc_time p = t.b.clk.cycles(cfg.parse_cycles);
    for (const uint32_t q : {QP_EVEN, QP_ODD}) {
        const auto a = acks_of(t, q);
        ASSERT_EQ(a.size(), N);
        for (uint32_t k = 0; k < N; ++k) {
            EXPECT_EQ(a[k].psn, 10 + k) << "QP " << q << ": its frames out of order";
            // One lane: frame 2k (+1 for the odd QP) of the burst; two lanes: frame k of its lane.
            const uint32_t nth = lanes == 1 ? 2 * k + (q == QP_ODD ? 1 : 0) : k;
            EXPECT_EQ(a[k].at, t0 + p * static_cast<double>(nth + 1)) << "QP " << q << " ACK " << k;
        }
    }
    if (lanes == 2) {
        EXPECT_EQ(t.rp.get_lane_stats(0).frames, N);
        EXPECT_EQ(t.rp.get_lane_stats(1).frames, N);
        // Each lane was busy P per frame; the block's busy time is the lanes' mean.
        EXPECT_EQ(t.rp.lane_busy_ps_at(0, sc_time_stamp()), t.b.clk.ps_of(p * double(N)));
        EXPECT_EQ(t.rp.busy_ps_at(sc_time_stamp()), t.b.clk.ps_of(p * double(N)));
    }
}

TEST(RecvPathLanes, OneLaneTakesTwoQpsFramesOneAfterTheOther) {
    two_qps_acks(1);
}
TEST(RecvPathLanes, TwoLanesTakeTwoQpsFramesAtOnce) {
    two_qps_acks(2);
}

// The transmit engine holds the odd QP's ACK (a duplicate WRITE asks one) for D: the odd QP's
// next frame waits behind it on its lane (per-QP order), the even QP's go on on the other lane.
TEST(RecvPathLanes, AQpsFramesWaitBehindItsBlockedFrameWhileTheOtherLaneGoesOn) {
    recv_path_config cfg = rp_config();
    cfg.lanes = 2;
    rp_bench t(cfg);
    const sc_time hold(100, SC_NS);
    t.tx.response_hold = hold;
    qp_context& odd = t.b.make_qp(QP_ODD, hsi::QPS_RTS);
    odd.expected_psn = 100;
    t.b.make_qp(QP_EVEN, hsi::QPS_RTS);
    sc_time t0;
    t.b.drv.body = [&] {
        t.b.clk.wait_cycles(0);
        t0 = sc_time_stamp();
        t.put(rp_bench::frame(roce::RC_WRITE_ONLY, 99, true, 0, QP_ODD));  // duplicate: re-ACKed
        t.put(rp_bench::frame(roce::RC_ACK, 7, false, roce::AETH_ACK_NO_CREDIT, QP_EVEN));
        t.put(rp_bench::frame(roce::RC_ACK, 7, false, roce::AETH_ACK_NO_CREDIT, QP_ODD));
        t.put(rp_bench::frame(roce::RC_ACK, 8, false, roce::AETH_ACK_NO_CREDIT, QP_EVEN));
        t.b.settle();
    };
    run(t.b);
    const sc_time p = t.b.clk.cycles(cfg.parse_cycles);
    const auto r = t.calls("response");
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].qpn, QP_ODD);
    EXPECT_EQ(r[0].at, t0 + p);
    const auto even = acks_of(t, QP_EVEN);
    ASSERT_EQ(even.size(), 2u);
    EXPECT_EQ(even[0].at, t0 + p);
    EXPECT_EQ(even[1].at, t0 + 2 * p);  // not behind the held response: another lane
    const auto odd_acks = acks_of(t, QP_ODD);
    ASSERT_EQ(odd_acks.size(), 1u);
    EXPECT_EQ(odd_acks[0].at, t0 + p + hold + p);  // behind its QP's held frame, then its parse
}

}  // namespace
