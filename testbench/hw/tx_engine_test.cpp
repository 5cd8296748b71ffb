// SPDX-License-Identifier: Apache-2.0
// Block bench of the transmit engine: tx_engine on the control bench (host memory, PCIe, DMA,
// CQ writer) with translation, fed parsed WQEs on its input channel, and a stand-in send path
// that records every descriptor and payload chunk (and can be made slow, so work queues up
// behind it). The receive path's calls are made directly (tx_engine_if). Expectations are the
// IBA requester rules and the scheduler rules of hw/tx_engine/README.md: PSNs per message
// (ceil(len / pmtu)), completion on the ACK that covers the last PSN (9.7.5.1), the local ACK
// timeout 4.096 us x 2^timeout started when the last packet is handed on and expiring into a
// go-back-N from the first unacknowledged PSN (9.7.6.1.2), a sequence NAK resending from the
// message that holds its PSN (9.7.5.1.3), responses before requests (fifo), QPs taking turns
// of a packet (round_robin). Each TEST is its own process.
#include "hw/tx_engine/tx_engine.h"

#include <numeric>

#include <gtest/gtest.h>

#include "hw/send_path/send_path_packets.h"
#include "hw/translation/translation.h"
#include "testbench/hw/control_bench.h"

namespace {

using namespace rnic;
using namespace rnic::hw;
using namespace rnic::testbench::control_bench;

constexpr uint32_t QPN = 5;
constexpr uint32_t PMTU = 1024;

struct sent_desc {
    tx_descriptor d;
    sc_time at;
};

// The send path as the engine sees it: records, and takes `busy` per descriptor.
class fake_send_path : public send_path_if {
public:
    std::vector<sent_desc> descs;
    uint64_t payload_bytes = 0;
    std::vector<uint8_t> bytes;  // payload in order
    sc_time busy = sc_core::SC_ZERO_TIME;
    void put_descriptor(const tx_descriptor& d) override {
        descs.push_back({d, sc_time_stamp()});
        if (busy != sc_core::SC_ZERO_TIME) {
            sc_core::wait(busy);
        }
    }
    void put_payload(payload_chunk&& c) override {
        payload_bytes += c.bytes.size();
        bytes.insert(bytes.end(), c.bytes.begin(), c.bytes.end());
    }
};

tx_engine_config tx_config(const std::string& policy = "fifo") {
    tx_engine_config c;
    c.scheduler.policy = policy;
    return c;
}

struct tx_bench {
    bench b;
    translation xlate;
    channel<wqe_item> wqes{"wqes", 16};
    fake_send_path sp;
    tx_engine tx;
    explicit tx_bench(const tx_engine_config& cfg = tx_config())
        : xlate("xlate", translation_config{}, b.clk, b.contexts, b.ctx)
        , tx("tx", cfg, b.clk, nic_identity{}, b.contexts, xlate, b.dma, wqes, sp, b.cqw, b.ctx) {}
    qp_context& qp(uint32_t qpn = QPN) {
        qp_context& q = b.make_qp(qpn, hsi::QPS_RTS);
        q.next_psn = 7;
        q.pmtu = PMTU;
        q.dest_qpn = 9;
        q.timeout_log = 1;  // 8.192 us
        q.retry_count = 7;
        q.send_cqn = 1;
        return q;
    }
    // An inline, signalled WRITE of `len` bytes (byte i = i + seed) on `qpn`.
    static wqe_item write(uint32_t len, uint16_t index, uint32_t qpn = QPN, uint8_t seed = 0) {
        wqe_item w;
        w.qpn = qpn;
        w.ctrl.opcode = hsi::WQE_WRITE;
        w.ctrl.flags = hsi::WQE_FLAG_INLINE | hsi::WQE_FLAG_SIGNALED;
        w.ctrl.wqe_index = index;
        w.ctrl.remote_va = 0x1000;
        w.ctrl.rkey = 0x77;
        w.inline_data.resize(len);
        for (uint32_t i = 0; i < len; ++i) {
            w.inline_data[i] = static_cast<uint8_t>(i + seed);
        }
        w.flow_id = index;
        return w;
    }
    static tx_job ack(uint32_t qpn, uint32_t psn) {
        tx_job j;
        j.desc.kind = tx_kind::ACK;
        j.desc.src_qpn = qpn;
        j.desc.psn = psn;
        j.desc.pmtu = PMTU;
        return j;
    }
    std::vector<sent_desc> of_qp(uint32_t qpn) const {
        std::vector<sent_desc> out;
        for (const auto& s : sp.descs) {
            if (s.d.src_qpn == qpn) {
                out.push_back(s);
            }
        }
        return out;
    }
};

TEST(TxEngine, WriteTakesItsPsnsAndCompletesOnTheAckOfItsLastPacket) {
    tx_bench t;
    qp_context& q = t.qp();
    t.b.drv.body = [&] {
        t.wqes.put(tx_bench::write(3000, 0));
        t.b.settle();
        // ceil(3000 / 1024) = 3 packets: PSNs 7, 8, 9; the next message starts at 10.
        EXPECT_EQ(q.next_psn, 10u);
        t.tx.on_ack(QPN, 8);  // packets 7 and 8 only: not complete
        t.b.settle();
        EXPECT_EQ(t.tx.get_stats().completions, 0u);
        t.tx.on_ack(QPN, 9, true);
        t.b.settle();
    };
    run(t.b);
    ASSERT_EQ(t.sp.descs.size(), 1u);  // fifo, no congestion control: the message whole
    const tx_descriptor& d = t.sp.descs[0].d;
    EXPECT_EQ(d.kind, tx_kind::WRITE);
    EXPECT_EQ(d.psn, 7u);
    EXPECT_EQ(d.length, 3000u);
    EXPECT_EQ(d.dest_qpn, 9u);
    EXPECT_EQ(segment_packets(d), 3u);
    std::vector<uint8_t> want(3000);
    std::iota(want.begin(), want.end(), uint8_t{0});
    EXPECT_EQ(t.sp.bytes, want);
    EXPECT_EQ(t.tx.get_stats().completions, 1u);
    EXPECT_EQ(t.tx.get_stats().timeouts, 0u);
}

TEST(TxEngine, RetransmissionTimerExpiresIntoAResendAfterTheLocalAckTimeout) {
    tx_bench t;
    t.qp().retry_count = 3;
    t.b.drv.body = [&] { t.wqes.put(tx_bench::write(2048, 0)); };  // never acknowledged
    run(t.b);
    // 4.096 us x 2^1: the timer started when the message went to the send path; it expires
    // (at most a clock cycle later) into a go-back-N from PSN 7, the whole message again, and
    // again after as long (no progress): retry_cnt 3 resends, then the fourth expiry completes
    // the WQE with a retry-exceeded error and the QP goes to ERROR (IBA 9.7.6.1.2, 10.3.1).
    const sc_time timeout(8.192, sc_core::SC_US);
    ASSERT_EQ(t.sp.descs.size(), 4u);
    for (size_t i = 1; i < 4; ++i) {
        EXPECT_EQ(t.sp.descs[i].d.psn, 7u);
        EXPECT_EQ(t.sp.descs[i].d.length, 2048u);
        const sc_time gap = t.sp.descs[i].at - t.sp.descs[i - 1].at;
        EXPECT_GE(gap, timeout) << i;
        EXPECT_LE(gap, timeout + t.b.clk.period()) << i;
    }
    EXPECT_EQ(t.tx.get_stats().timeouts, 4u);
    EXPECT_EQ(t.tx.get_recovery().retransmitted_packets, 3u * 2u);
    EXPECT_EQ(t.tx.get_stats().retry_exceeded, 1u);
    EXPECT_EQ(t.tx.get_stats().error_completions, 1u);
    EXPECT_EQ(t.b.contexts.qp(QPN)->state, hsi::QPS_ERROR);
}

TEST(TxEngine, SequenceNakResendsFromTheMessageHoldingItsPsn) {
    tx_bench t;
    t.qp();
    t.b.drv.body = [&] {
        t.wqes.put(tx_bench::write(3072, 0));  // PSNs 7..9
        t.wqes.put(tx_bench::write(2048, 1));  // PSNs 10..11
        t.b.settle();
        t.tx.on_nak_sequence(QPN, 10);  // 7..9 arrived; 10 did not
        t.b.settle();
        t.tx.on_ack(QPN, 11, true);
        t.b.settle();
    };
    run(t.b);
    ASSERT_EQ(t.sp.descs.size(), 3u);
    EXPECT_EQ(t.sp.descs[2].d.psn, 10u);  // the second message again, whole
    EXPECT_EQ(t.sp.descs[2].d.length, 2048u);
    EXPECT_EQ(t.tx.get_stats().nak_sequence, 1u);
    EXPECT_EQ(t.tx.get_recovery().retransmitted_packets, 2u);
    EXPECT_EQ(t.tx.get_recovery().recovered_by_nak, 1u);
    EXPECT_EQ(t.tx.get_stats().completions, 2u);
}

TEST(TxEngine, FifoSendsResponsesBeforeRequestsQueuedEarlier) {
    tx_bench t;
    t.qp();
    t.qp(6);
    t.sp.busy = sc_time(1, sc_core::SC_US);  // the send path holds each descriptor 1 us
    t.b.drv.body = [&] {
        t.wqes.put(tx_bench::write(100, 0));  // goes at once, holds the send path
        t.wqes.put(tx_bench::write(100, 1));  // queued behind it
        sc_core::wait(sc_time(100, sc_core::SC_NS));
        t.tx.post_response(tx_bench::ack(6, 40));  // queued after the request
        t.b.settle();
        t.b.settle();
        t.tx.on_ack(QPN, 8, true);
    };
    run(t.b);
    ASSERT_EQ(t.sp.descs.size(), 3u);
    EXPECT_EQ(t.sp.descs[0].d.kind, tx_kind::WRITE);
    EXPECT_EQ(t.sp.descs[1].d.kind, tx_kind::ACK);  // responses first
    EXPECT_EQ(t.sp.descs[1].d.psn, 40u);
    EXPECT_EQ(t.sp.descs[2].d.psn, 8u);
    EXPECT_EQ(t.tx.get_stats().acks_sent, 1u);
}

TEST(TxEngine, RoundRobinQpsTakeTurnsOfAPacket) {
    tx_bench t(tx_config("round_robin"));
    t.qp();
    t.qp(6);
    t.qp(7);
    t.sp.busy = sc_time(200, sc_core::SC_NS);  // slower than the requester: work queues up
    t.b.drv.body = [&] {
        t.wqes.put(tx_bench::write(100, 0, 7));  // holds the send path while the others queue
        t.wqes.put(tx_bench::write(3072, 0, QPN, 0));
        t.wqes.put(tx_bench::write(3072, 0, 6, 100));
        t.b.settle();
        t.tx.on_ack(7, 7, true);
        t.tx.on_ack(QPN, 9, true);
        t.tx.on_ack(6, 9, true);
    };
    run(t.b);
    // QP 7's one packet, then QPs 5 and 6 (staged together, in arrival order) alternate, one
    // packet per turn (a segment: first_packet / packets 1), AckReq on each message's last.
    ASSERT_EQ(t.sp.descs.size(), 7u);
    EXPECT_EQ(t.sp.descs[0].d.src_qpn, 7u);
    const uint32_t want_qp[6] = {QPN, 6, QPN, 6, QPN, 6};
    const uint32_t want_first[6] = {0, 0, 1, 1, 2, 2};
    for (size_t i = 0; i < 6; ++i) {
        const tx_descriptor& d = t.sp.descs[i + 1].d;
        EXPECT_EQ(d.src_qpn, want_qp[i]) << i;
        EXPECT_EQ(d.first_packet, want_first[i]) << i;
        EXPECT_EQ(d.packets, 1u) << i;
        EXPECT_EQ(d.ack_req, want_first[i] == 2) << i;
    }
    EXPECT_EQ(t.sp.payload_bytes, 100u + 2u * 3072u);
    EXPECT_EQ(t.tx.get_stats().completions, 3u);
}

// Same-instant order of the congestion window (issue 29): an ACK that the receive path hands
// on at a clock edge opens the window for the scheduler from the next edge, whichever delta
// cycle of the edge it comes in and whatever the scheduler did at that edge. Two QPs with a
// 2-packet window each WRITE 4 packets; their first two go at once, then both are held. At
// one edge QP 5's ACK of its first two comes in the edge's first delta cycle and QP 6's three
// delta cycles later: both third packets go at the next edge (before, QP 5's went at the same
// edge and QP 6's at the same edge too, or not, as the scheduler's wake-up fell).
TEST(TxEngine, AWindowOpenedByAnAckOfAnEdgeIsSeenFromTheNextEdge) {
    tx_bench t(tx_config("round_robin"));
    t.qp().cc.window_bytes = 2 * PMTU;
    t.qp(6).cc.window_bytes = 2 * PMTU;
    sc_time acked_at;
    t.b.drv.body = [&] {
        t.wqes.put(tx_bench::write(4 * PMTU, 0, QPN, 0));
        t.wqes.put(tx_bench::write(4 * PMTU, 0, 6, 100));
        t.b.settle();
        ASSERT_EQ(t.sp.descs.size(), 4u);  // two packets of each, then both windows are full
        acked_at = sc_core::sc_time_stamp();
        ASSERT_EQ(acked_at, t.b.clk.edge_at_or_after(acked_at));  // on an edge
        t.tx.on_ack(QPN, 8, true);                                // PSNs 7 and 8
        for (int i = 0; i < 3; ++i) {
            sc_core::wait(sc_core::SC_ZERO_TIME);
        }
        t.tx.on_ack(6, 8, true);
        t.b.settle();
        t.tx.on_ack(QPN, 10, true);
        t.tx.on_ack(6, 10, true);
        t.b.settle();
    };
    run(t.b);
    for (const uint32_t qpn : {QPN, 6u}) {
        const std::vector<sent_desc> d = t.of_qp(qpn);
        ASSERT_EQ(d.size(), 4u) << qpn;
        EXPECT_LT(d[1].at, acked_at) << qpn;
        EXPECT_EQ(d[2].d.first_packet, 2u) << qpn;
        EXPECT_EQ(d[2].at, acked_at + t.b.clk.period()) << qpn;
    }
    EXPECT_EQ(t.tx.get_stats().completions, 2u);
}

}  // namespace
