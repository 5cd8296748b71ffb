// SPDX-License-Identifier: Apache-2.0
// The transmit schedulers (hw/tx_engine/tx_scheduler.h) alone, with a hand-written host in
// place of the transmit engine: the order in which each hands out its turns, against sequences
// worked out by hand from the rules in hw/tx_engine/README.md ("Scheduler", "Timing: fifo and
// the rate limiter"), not from a run of the code. No SystemC kernel runs.
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "hw/common/config_reader.h"
#include "hw/send_path/send_path_packets.h"
#include "hw/tx_engine/fifo_scheduler.h"
#include "hw/tx_engine/round_robin_scheduler.h"
#include "hw/tx_engine/tx_scheduler.h"

namespace {

using rnic::hw::tx_engine_config;
using rnic::hw::tx_job;
using rnic::hw::tx_kind;
using rnic::hw::tx_queue;
using rnic::hw::tx_sleep;
using rnic::hw::tx_turn;

constexpr uint32_t PMTU = 1024;

// A job of `packets` full packets of `qpn` (ACKs: one packet, no payload). `tag` is carried in
// flow_id so a test can tell jobs apart.
tx_job job(tx_kind kind, uint32_t qpn, uint32_t packets, uint64_t tag) {
    tx_job j;
    j.desc.kind = kind;
    j.desc.src_qpn = qpn;
    j.desc.pmtu = PMTU;
    j.desc.length = kind == tx_kind::ACK ? 0 : packets * PMTU;
    j.desc.psn = 100;
    j.desc.flow_id = tag;
    return j;
}

// Stands in for the transmit engine: three queues, a set of QPs whose jobs are dropped, a rate
// limiter (slot times by QP) and a congestion window (packets that fit, by QP).
class fake_host final : public rnic::hw::tx_sched_host {
public:
    std::deque<tx_job> q[3];
    std::set<uint32_t> dead;               // jobs of these QPs are not live
    bool pacer = false;                    // a rate limiter exists
    std::map<uint32_t, uint64_t> slot_at;  // limited QPs: their next slot (ps); 0 = due
    uint64_t held = 0;                     // edges the pacer reports a granted packet held
    std::map<uint32_t, uint32_t> fit;      // windowed QPs: packets that fit now
    std::map<uint32_t, bool> supersede;    // resends of these QPs go back over the copy
    std::vector<uint64_t> requests_sent;   // tags, in order
    uint64_t counted_sent = 0;             // packets count_sent saw
    uint64_t dropped = 0;

    void put(tx_queue which, tx_job j) { q[static_cast<int>(which)].push_back(std::move(j)); }

    bool has(tx_queue which) const override { return !q[static_cast<int>(which)].empty(); }
    const tx_job& front(tx_queue which) override { return q[static_cast<int>(which)].front(); }
    void take(tx_queue which, tx_job& into) override {
        into = std::move(q[static_cast<int>(which)].front());
        q[static_cast<int>(which)].pop_front();
    }
    bool live(const tx_job& j) {
        if (dead.count(j.desc.src_qpn) != 0) {
            ++dropped;
            return false;
        }
        return true;
    }
    bool response_live(const tx_job& j) override { return live(j); }
    bool request_live(const tx_job& j) override { return live(j); }
    bool resend_live(const tx_job& j) override { return live(j); }
    bool supersedes(const tx_job& r, const tx_job&) const override {
        const auto it = supersede.find(r.desc.src_qpn);
        return it != supersede.end() && it->second;
    }
    bool paced() const override { return pacer; }
    bool limited(uint32_t qpn) const override { return slot_at.count(qpn) != 0; }
    uint64_t try_pace(const rnic::hw::tx_job& job, uint32_t, uint64_t& held_cycles) override {
        held_cycles = held;
        const auto it = slot_at.find(job.desc.src_qpn);
        return it == slot_at.end() ? 0 : it->second;
    }
    uint32_t ack_segment_packets(const rnic::hw::tx_descriptor&) const override { return 0; }
    uint32_t window_fit(const rnic::hw::tx_descriptor& d, uint32_t, uint32_t n,
                        bool& windowed) override {
        const auto it = fit.find(d.src_qpn);
        if (it == fit.end()) {
            return n;
        }
        windowed = true;
        return std::min(n, it->second);
    }
    uint64_t count_sent(const tx_job&, uint32_t, uint32_t packets) override {
        counted_sent += packets;
        return 0;
    }
    void request_sent(const tx_job& j) override { requests_sent.push_back(j.desc.flow_id); }
};

// One turn as a test writes it down: the job's tag, whole or packets first .. first+count-1.
struct turn {
    uint64_t tag;
    bool whole;
    uint32_t first;
    uint32_t count;
    bool operator==(const turn& o) const {
        return tag == o.tag && whole == o.whole && first == o.first && count == o.count;
    }
};
std::ostream& operator<<(std::ostream& os, const turn& t) {
    return os << "{tag " << t.tag << (t.whole ? " whole" : " packets ") << t.first << "+" << t.count
              << "}";
}

// Asks for turns (each reported done) until the scheduler sleeps; returns them and the sleep.
std::vector<turn> drain(rnic::hw::tx_scheduler& s, tx_sleep* sleep = nullptr, size_t max = 100) {
    std::vector<turn> out;
    tx_turn t;
    tx_sleep z;
    while (out.size() < max && s.next(t, z)) {
        out.push_back({t.job->desc.flow_id, t.whole, t.first, t.count});
        s.turn_done(true);
    }
    if (sleep != nullptr) {
        *sleep = z;
    }
    return out;
}

tx_engine_config rr_config(uint32_t burst) {
    tx_engine_config c;
    c.scheduler.policy = "round_robin";
    c.scheduler.burst_packets = burst;
    return c;
}

// --- fifo ---

TEST(FifoScheduler, ResponsesThenResendsThenRequestsEachWhole) {
    fake_host h;
    rnic::hw::fifo_scheduler s(h);
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 1, 4, 1));
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 2, 1, 2));
    h.put(tx_queue::RESENDS, job(tx_kind::WRITE, 3, 2, 3));
    h.put(tx_queue::RESPONSES, job(tx_kind::ACK, 4, 1, 4));
    h.put(tx_queue::RESPONSES, job(tx_kind::READ_RESPONSE, 5, 3, 5));
    tx_sleep z;
    const std::vector<turn> want = {
        {4, true, 0, 0}, {5, true, 0, 0}, {3, true, 0, 0}, {1, true, 0, 0}, {2, true, 0, 0}};
    EXPECT_EQ(drain(s, &z), want);
    // Requester jobs (resends and requests) start their timer once sent; responses do not.
    EXPECT_EQ(h.requests_sent, (std::vector<uint64_t>{3, 1, 2}));
    // Idle: asleep until new work, no timeout, the rate limiter not watched.
    EXPECT_EQ(z.until_ps, UINT64_MAX);
    EXPECT_TRUE(z.on_responses);
    EXPECT_TRUE(z.on_requests);
    EXPECT_FALSE(z.on_rate);
}

TEST(FifoScheduler, DroppedJobsAreSkippedNotSent) {
    fake_host h;
    rnic::hw::fifo_scheduler s(h);
    h.dead = {7};
    h.put(tx_queue::RESPONSES, job(tx_kind::READ_RESPONSE, 7, 2, 1));
    h.put(tx_queue::REQUESTS, job(tx_kind::SEND, 7, 1, 2));
    h.put(tx_queue::REQUESTS, job(tx_kind::SEND, 8, 1, 3));
    EXPECT_EQ(drain(s), (std::vector<turn>{{3, true, 0, 0}}));
    EXPECT_EQ(h.dropped, 2u);
    EXPECT_EQ(h.requests_sent, (std::vector<uint64_t>{3}));
}

TEST(FifoScheduler, PacedJobGoesAPacketPerSlotAndAnAckPassesIt) {
    // With a rate limiter, a WRITE goes one packet per turn after its slot; an ACK stays whole.
    fake_host h;
    h.pacer = true;
    rnic::hw::fifo_scheduler s(h);
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 1, 3, 1));
    tx_turn t;
    tx_sleep z;
    ASSERT_TRUE(s.next(t, z));
    EXPECT_EQ((turn{t.job->desc.flow_id, t.whole, t.first, t.count}), (turn{1, false, 0, 1}));
    s.turn_done(true);
    // QP 1 is cut: its packet 1's slot is at 5 us. An ACK of QP 2 and a READ response of QP 3
    // (at line rate) queued meanwhile pass it, whole, in their order; then it sleeps to the slot.
    h.slot_at[1] = 5'000'000;
    h.put(tx_queue::RESPONSES, job(tx_kind::ACK, 2, 1, 2));
    h.put(tx_queue::RESPONSES, job(tx_kind::READ_RESPONSE, 3, 2, 3));
    EXPECT_EQ(drain(s, &z), (std::vector<turn>{{2, true, 0, 0}, {3, true, 0, 0}}));
    EXPECT_EQ(z.until_ps, 5'000'000u);
    EXPECT_TRUE(z.on_rate);
    EXPECT_TRUE(z.on_requests);  // a request of another QP could pass it
    // The slot comes: packets 1 and 2, then the request is sent (timer).
    h.slot_at[1] = 0;
    EXPECT_EQ(drain(s), (std::vector<turn>{{1, false, 1, 1}, {1, false, 2, 1}}));
    EXPECT_EQ(h.requests_sent, (std::vector<uint64_t>{1}));
    EXPECT_EQ(s.paced_bypasses(), 2u);
}

TEST(FifoScheduler, RateLimitedReadResponseHoldsWhatIsBehindIt) {
    // Responder order: a READ response of a limited QP waits its slot and holds the responses
    // behind it; nothing of the waiting READ response's own QP passes it.
    fake_host h;
    h.pacer = true;
    rnic::hw::fifo_scheduler s(h);
    h.slot_at[1] = 1'000'000;
    h.slot_at[2] = 1'000'000;
    h.put(tx_queue::RESPONSES, job(tx_kind::READ_RESPONSE, 1, 2, 1));
    h.put(tx_queue::RESPONSES, job(tx_kind::ACK, 1, 1, 2));  // same QP: waits
    h.put(tx_queue::RESPONSES, job(tx_kind::ACK, 9, 1, 3));  // behind it: waits
    tx_sleep z;
    EXPECT_TRUE(drain(s, &z).empty());
    EXPECT_EQ(z.until_ps, 1'000'000u);
    h.q[0].erase(h.q[0].begin());  // now the head is a limited READ response of QP 2
    h.q[0].push_front(job(tx_kind::READ_RESPONSE, 2, 1, 4));
    EXPECT_TRUE(drain(s, &z).empty());
    EXPECT_EQ(h.q[0].size(), 2u);
}

TEST(FifoScheduler, ALineRateRequestOfAnotherQpPassesAWaitingOneWhole) {
    fake_host h;
    h.pacer = true;
    rnic::hw::fifo_scheduler s(h);
    h.slot_at[1] = 2'000'000;
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 1, 2, 1));  // waits for its slot
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 1, 1, 2));  // same QP: never passes it
    tx_sleep z;
    EXPECT_TRUE(drain(s, &z).empty());
    EXPECT_EQ(z.until_ps, 2'000'000u);
    // A resend of QP 2 (line rate) now heads the requester queues: it passes, a packet per
    // turn, and while it goes no other request may pass (its sleep does not wake on requests).
    h.put(tx_queue::RESENDS, job(tx_kind::WRITE, 2, 2, 3));
    tx_turn t;
    ASSERT_TRUE(s.next(t, z));
    EXPECT_EQ((turn{t.job->desc.flow_id, t.whole, t.first, t.count}), (turn{3, false, 0, 1}));
    s.turn_done(true);
    h.slot_at[2] = 3'000'000;  // cut while it passes: it waits, serving responses only
    EXPECT_FALSE(s.next(t, z));
    EXPECT_EQ(z.until_ps, 3'000'000u);
    EXPECT_FALSE(z.on_requests);
    h.slot_at.erase(2);
    EXPECT_EQ(drain(s, &z), (std::vector<turn>{{3, false, 1, 1}}));
    EXPECT_EQ(h.requests_sent, (std::vector<uint64_t>{3}));
    EXPECT_EQ(s.paced_bypasses(), 1u);
    // QP 1's job is still waiting (its slot), the next request of QP 1 behind it.
    EXPECT_EQ(z.until_ps, 2'000'000u);
    h.slot_at.erase(1);
    EXPECT_EQ(drain(s), (std::vector<turn>{{1, false, 0, 1}, {1, false, 1, 1}, {2, false, 0, 0}}));
}

TEST(FifoScheduler, ASourceKeyFailureEndsTheJob) {
    fake_host h;
    h.pacer = true;
    rnic::hw::fifo_scheduler s(h);
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 1, 3, 1));
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 2, 1, 2));
    tx_turn t;
    tx_sleep z;
    ASSERT_TRUE(s.next(t, z));
    s.turn_done(false);  // packet 0 failed its key check: packets 1 and 2 are not sent
    ASSERT_TRUE(s.next(t, z));
    EXPECT_EQ(t.job->desc.flow_id, 2u);
}

// --- round_robin ---

TEST(RoundRobinScheduler, QpsTakeTurnsOfOnePacket) {
    fake_host h;
    rnic::hw::round_robin_scheduler s(rr_config(1), h);
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 1, 3, 1));
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 2, 1, 2));
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 3, 2, 3));
    // A one-packet message is its descriptor as it is (count 0).
    const std::vector<turn> want = {{1, false, 0, 1}, {2, false, 0, 0}, {3, false, 0, 1},
                                    {1, false, 1, 1}, {3, false, 1, 1}, {1, false, 2, 1}};
    tx_sleep z;
    EXPECT_EQ(drain(s, &z), want);
    // Each message's timer starts after its last turn.
    EXPECT_EQ(h.requests_sent, (std::vector<uint64_t>{2, 3, 1}));
    EXPECT_EQ(h.counted_sent, 6u);
    EXPECT_EQ(s.get_stats().turns, 6u);
    EXPECT_EQ(z.until_ps, UINT64_MAX);
    EXPECT_TRUE(z.on_window);
}

TEST(RoundRobinScheduler, BurstOfTwoAndAQpsMessagesInOrder) {
    fake_host h;
    rnic::hw::round_robin_scheduler s(rr_config(2), h);
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 1, 3, 1));
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 1, 2, 2));  // QP 1's next: after message 1
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 2, 2, 3));
    const std::vector<turn> want = {
        {1, false, 0, 2}, {3, false, 0, 0}, {1, false, 2, 1}, {2, false, 0, 0}};
    EXPECT_EQ(drain(s), want);
}

TEST(RoundRobinScheduler, AnAckWithNothingAheadGoesBetweenTurns) {
    fake_host h;
    rnic::hw::round_robin_scheduler s(rr_config(1), h);
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 1, 3, 1));
    h.put(tx_queue::RESPONSES, job(tx_kind::READ_RESPONSE, 5, 2, 2));
    tx_turn t;
    tx_sleep z;
    ASSERT_TRUE(s.next(t, z));
    EXPECT_EQ(t.job->desc.flow_id, 2u);  // responses are staged first: QP 5's lane is ahead
    s.turn_done(true);
    // An ACK of QP 6 (empty responder lane) goes next, before QP 1's turn; an ACK of QP 5 waits
    // behind QP 5's READ response (its lane is busy).
    h.put(tx_queue::RESPONSES, job(tx_kind::ACK, 6, 1, 3));
    h.put(tx_queue::RESPONSES, job(tx_kind::ACK, 5, 1, 4));
    const std::vector<turn> want = {{3, true, 0, 0},  {1, false, 0, 1}, {2, false, 1, 1},
                                    {1, false, 1, 1}, {4, false, 0, 0}, {1, false, 2, 1}};
    EXPECT_EQ(drain(s), want);
}

TEST(RoundRobinScheduler, PacedAndWindowedQpsArePassedOver) {
    fake_host h;
    h.pacer = true;
    rnic::hw::round_robin_scheduler s(rr_config(4), h);
    h.slot_at[1] = 7'000'000;  // QP 1 limited, slot not due
    h.fit[2] = 0;              // QP 2's window full
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 1, 2, 1));
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 2, 2, 2));
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 3, 2, 3));
    tx_sleep z;
    EXPECT_EQ(drain(s, &z), (std::vector<turn>{{3, false, 0, 0}}));
    // Passed over in both rounds, but counted only when it goes, as the rate limiter says.
    EXPECT_EQ(s.get_stats().skipped_paced, 0u);
    EXPECT_EQ(s.get_stats().skipped_window, 2u);
    // Asleep until QP 1's slot, a rate change or an ACK (QP 2's window).
    EXPECT_EQ(z.until_ps, 7'000'000u);
    EXPECT_TRUE(z.on_rate);
    EXPECT_TRUE(z.on_window);
    // QP 1's slot is due: a limited QP's turn is one packet whatever the burst. QP 2's window
    // opens by one packet: a turn of one packet, with AckReq on it (a window is in force).
    // It was held 14 clock edges (the rate limiter's count, pacer::try_pace).
    h.slot_at[1] = 0;
    h.held = 14;
    h.fit[2] = 1;
    tx_turn t;
    ASSERT_TRUE(s.next(t, z));
    EXPECT_EQ((turn{t.job->desc.flow_id, t.whole, t.first, t.count}), (turn{1, false, 0, 1}));
    EXPECT_EQ(s.get_stats().skipped_paced, 14u);
    h.held = 0;
    s.turn_done(true);
    ASSERT_TRUE(s.next(t, z));
    EXPECT_EQ((turn{t.job->desc.flow_id, t.whole, t.first, t.count}), (turn{2, false, 0, 1}));
    EXPECT_TRUE(t.ack_at_end);
    s.turn_done(true);
}

TEST(RoundRobinScheduler, AGoBackNResendEndsTheCopyGoingOut) {
    fake_host h;
    rnic::hw::round_robin_scheduler s(rr_config(1), h);
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 1, 4, 1));
    tx_turn t;
    tx_sleep z;
    ASSERT_TRUE(s.next(t, z));
    s.turn_done(true);
    // A go-back-N of QP 1 to the message's first PSN: the rest of this copy is not sent, the
    // resend (the whole message again) goes from its first packet; request_sent only for it.
    h.supersede[1] = true;
    h.put(tx_queue::RESENDS, job(tx_kind::WRITE, 1, 4, 2));
    const std::vector<turn> want = {
        {2, false, 0, 1}, {2, false, 1, 1}, {2, false, 2, 1}, {2, false, 3, 1}};
    EXPECT_EQ(drain(s), want);
    EXPECT_EQ(h.requests_sent, (std::vector<uint64_t>{2}));
}

TEST(RoundRobinScheduler, ASelectiveResendGoesAndTheCopyResumes) {
    fake_host h;
    rnic::hw::round_robin_scheduler s(rr_config(1), h);
    h.put(tx_queue::REQUESTS, job(tx_kind::WRITE, 1, 3, 1));
    tx_turn t;
    tx_sleep z;
    ASSERT_TRUE(s.next(t, z));
    s.turn_done(true);
    // Selective repeat asks for packet 0 again: it goes alone, then the copy resumes at 1.
    tx_job r = job(tx_kind::WRITE, 1, 3, 2);
    r.selective = true;
    r.desc.first_packet = 0;
    r.desc.packets = 1;
    h.put(tx_queue::RESENDS, r);
    const std::vector<turn> want = {{2, false, 0, 0}, {1, false, 1, 1}, {1, false, 2, 1}};
    EXPECT_EQ(drain(s), want);
    EXPECT_EQ(h.requests_sent, (std::vector<uint64_t>{2, 1}));
}

// --- by name ---

TEST(TxSchedulerRegistry, PoliciesByName) {
    std::vector<std::string> names;
    for (const auto& r : rnic::hw::tx_schedulers()) {
        names.emplace_back(r.name);
    }
    EXPECT_EQ(names, (std::vector<std::string>{"fifo", "round_robin"}));
    fake_host h;
    tx_engine_config c;
    EXPECT_FALSE(rnic::hw::make_tx_scheduler(c, h)->applies_windows());
    c.scheduler.policy = "round_robin";
    EXPECT_TRUE(rnic::hw::make_tx_scheduler(c, h)->applies_windows());
    rnic::config::parse_context pc;
    const nlohmann::json j = {{"scheduler", {{"policy", "lottery"}}}};
    (void)rnic::hw::parse_tx_engine_config(rnic::config::reader(j, "rnic.tx_engine", pc));
    ASSERT_EQ(pc.errors.size(), 1u);
    EXPECT_EQ(pc.errors[0].rfind("rnic.tx_engine.scheduler.policy: \"lottery\" is not one of "
                                 "\"fifo\", \"round_robin\"",
                                 0),
              0u)
        << pc.errors[0];
}

}  // namespace
