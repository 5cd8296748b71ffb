// SPDX-License-Identifier: Apache-2.0
// hw::channel (hw/common/channel.h): a put and a get of one instant give the same count of full
// waits and the same timing whichever order SystemC runs the two processes in (issue 29: WQE
// fetch's out_full_waits of configs/fidelity/read_32b_incast_8.json moved 240 <-> 241 with
// unrelated events in the kernel).
#include "hw/common/channel.h"

#include <string>
#include <vector>

#include <systemc>

#include <gtest/gtest.h>

namespace {

using rnic::hw::channel;
using sc_core::SC_NS;
using sc_core::sc_time;

struct side {
    channel<int> ch{"ch", 1};
    std::vector<sc_time> put_done;  // when each put returned (its item went in)
};

// Depth 1, full from t = 0. At 10 ns the consumer takes the item and the producer puts another,
// the consumer `consumer_deltas` delta cycles after the producer (negative: before it). At 20 ns
// the producer puts again into the full channel, which the consumer empties only at 30 ns.
void bench(side& s, int consumer_deltas) {
    const std::string tag = std::to_string(consumer_deltas + 2);
    sc_core::sc_spawn(
        [&s, consumer_deltas] {
            s.ch.put(0);
            sc_core::wait(10, SC_NS);
            for (int i = 0; i < -consumer_deltas; ++i) {
                sc_core::wait(sc_core::SC_ZERO_TIME);
            }
            s.ch.put(1);
            s.put_done.push_back(sc_core::sc_time_stamp());
            sc_core::wait(10, SC_NS);
            s.ch.put(2);
            s.put_done.push_back(sc_core::sc_time_stamp());
        },
        ("producer" + tag).c_str());
    sc_core::sc_spawn(
        [&s, consumer_deltas] {
            sc_core::wait(10, SC_NS);
            for (int i = 0; i < consumer_deltas; ++i) {
                sc_core::wait(sc_core::SC_ZERO_TIME);
            }
            EXPECT_EQ(s.ch.get(), 0);
            sc_core::wait(20, SC_NS);
            EXPECT_EQ(s.ch.get(), 1);
        },
        ("consumer" + tag).c_str());
}

TEST(Channel, FullWaitsTheSameWhicheverOfOneInstantsPutAndGetRunsFirst) {
    // The consumer's get at 10 ns runs two delta cycles before the put, in the same delta, or
    // two after: the put found the channel full at its edge in all three (it was full until the
    // edge), and its item goes in at 10 ns in all three.
    std::vector<side> sides(3);
    const int deltas[] = {-2, 0, 2};
    for (size_t k = 0; k < sides.size(); ++k) {
        bench(sides[k], deltas[k]);
    }
    sc_core::sc_start();
    for (size_t k = 0; k < sides.size(); ++k) {
        SCOPED_TRACE(deltas[k]);
        const side& s = sides[k];
        ASSERT_EQ(s.put_done.size(), 2u);
        EXPECT_EQ(s.put_done[0], sc_time(10, SC_NS));
        EXPECT_EQ(s.put_done[1], sc_time(30, SC_NS));  // waited for the get at 30 ns
        // The put at 10 ns (full at the edge) and the one at 20 ns (full until 30 ns).
        EXPECT_EQ(s.ch.full_waits(), 2u);
        EXPECT_EQ(s.ch.total(), 3u);
        EXPECT_EQ(s.ch.max_occupancy(), 1u);
    }
}

TEST(Channel, APutAfterAnEarlierInstantsGetDoesNotWait) {
    channel<int> ch("ch", 2);
    sc_core::sc_spawn(
        [&ch] {
            ch.put(0);
            ch.put(1);  // full now
            sc_core::wait(10, SC_NS);
            ch.put(2);  // the get at 5 ns made room before this instant
            sc_core::wait(sc_core::SC_ZERO_TIME);
            ch.put(3);  // full again (its own put of this instant): waits for the get at 15 ns
            EXPECT_EQ(sc_core::sc_time_stamp(), sc_time(15, SC_NS));
        },
        "producer");
    sc_core::sc_spawn(
        [&ch] {
            sc_core::wait(5, SC_NS);
            EXPECT_EQ(ch.get(), 0);
            sc_core::wait(10, SC_NS);
            EXPECT_EQ(ch.get(), 1);
        },
        "consumer");
    sc_core::sc_start();
    EXPECT_EQ(ch.full_waits(), 1u);
    EXPECT_EQ(ch.total(), 4u);
}

}  // namespace
