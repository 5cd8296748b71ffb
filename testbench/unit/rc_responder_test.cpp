// SPDX-License-Identifier: Apache-2.0
// The RC responder checks and selective repeat's window (hw/recv_path/rc_responder.h) against
// the IBA rules worked out by hand: the PSN check (9.7.5.2.1-2: half the PSN space behind the
// expected PSN is a duplicate, the other half ahead), the SEND opcode sequence (9.7.5.2.2), which
// requests take a receive WQE, and the bitmap window's ring arithmetic and NAK choice (IRN). No
// SystemC.
#include "hw/recv_path/rc_responder.h"

#include <cstdint>

#include <gtest/gtest.h>

namespace {

using namespace rnic;
using rnic::hw::sr_window;
using rnic::hw::rc::psn_check;

TEST(RcResponder, PsnCheckSplitsThePsnSpaceInHalves) {
    uint32_t ahead = 99;
    EXPECT_EQ(hw::rc::check_psn(10, 10, &ahead), psn_check::IN_ORDER);
    EXPECT_EQ(ahead, 0u);
    EXPECT_EQ(hw::rc::check_psn(9, 10, &ahead), psn_check::DUPLICATE);
    EXPECT_EQ(hw::rc::check_psn(11, 10, &ahead), psn_check::AHEAD);
    EXPECT_EQ(ahead, 1u);
    // 2^23 - 1 ahead is still ahead; 2^23 ahead is as far behind: a duplicate.
    EXPECT_EQ(hw::rc::check_psn(10 + 0x7FFFFF, 10, &ahead), psn_check::AHEAD);
    EXPECT_EQ(hw::rc::check_psn(10 + 0x800000, 10, &ahead), psn_check::DUPLICATE);
    // Across the wrap: expected 0xFFFFFF, 0 and 1 are ahead, 0xFFFFFE behind.
    EXPECT_EQ(hw::rc::check_psn(1, 0xFFFFFF, &ahead), psn_check::AHEAD);
    EXPECT_EQ(ahead, 2u);
    EXPECT_EQ(hw::rc::check_psn(0xFFFFFE, 0xFFFFFF, &ahead), psn_check::DUPLICATE);
}

TEST(RcResponder, SendOpcodeSequenceAndReceiveConsumers) {
    using namespace rnic::roce;
    // A SEND's First/Only takes a receive WQE; so does a WRITE with immediate's Last/Only.
    for (uint8_t op : {RC_SEND_FIRST, RC_SEND_ONLY, RC_SEND_ONLY_IMM, RC_SEND_ONLY_INV,
                       RC_WRITE_LAST_IMM, RC_WRITE_ONLY_IMM}) {
        EXPECT_TRUE(hw::rc::consumes_receive(op)) << int(op);
    }
    for (uint8_t op :
         {RC_SEND_MIDDLE, RC_SEND_LAST, RC_SEND_LAST_IMM, RC_SEND_LAST_INV, RC_WRITE_FIRST,
          RC_WRITE_MIDDLE, RC_WRITE_LAST, RC_WRITE_ONLY, RC_READ_REQUEST}) {
        EXPECT_FALSE(hw::rc::consumes_receive(op)) << int(op);
    }
    // No SEND open: First/Only are in sequence, Middle/Last are not; one open: the reverse.
    EXPECT_FALSE(hw::rc::send_out_of_sequence(RC_SEND_FIRST, false));
    EXPECT_FALSE(hw::rc::send_out_of_sequence(RC_SEND_ONLY, false));
    EXPECT_TRUE(hw::rc::send_out_of_sequence(RC_SEND_MIDDLE, false));
    EXPECT_TRUE(hw::rc::send_out_of_sequence(RC_SEND_LAST_IMM, false));
    EXPECT_TRUE(hw::rc::send_out_of_sequence(RC_SEND_FIRST, true));
    EXPECT_TRUE(hw::rc::send_out_of_sequence(RC_SEND_ONLY_INV, true));
    EXPECT_FALSE(hw::rc::send_out_of_sequence(RC_SEND_MIDDLE, true));
    EXPECT_FALSE(hw::rc::send_out_of_sequence(RC_SEND_LAST, true));
    // WRITEs and READs have no SEND sequence to break.
    EXPECT_FALSE(hw::rc::send_out_of_sequence(RC_WRITE_ONLY_IMM, true));
    EXPECT_FALSE(hw::rc::send_out_of_sequence(RC_READ_REQUEST, false));
    EXPECT_TRUE(hw::rc::is_read_response(RC_READ_RESP_MIDDLE));
    EXPECT_FALSE(hw::rc::is_read_response(RC_ACK));
    EXPECT_TRUE(hw::rc::is_write(RC_WRITE_ONLY_IMM));
    EXPECT_FALSE(hw::rc::is_write(RC_READ_REQUEST));
}

TEST(SrWindow, RingSlotsFollowTheExpectedPsn) {
    sr_window w;
    EXPECT_FALSE(w.active());
    w.shift(3);  // nothing allocated: nothing to do
    w.open(4);   // slots for expected + 0 .. expected + 3
    EXPECT_TRUE(w.active());
    w.slot(2) = sr_window::PLACED;
    w.seen(2);
    w.slot(3) = sr_window::DROPPED;
    w.seen(3);
    EXPECT_EQ(w.beyond, 3u);
    w.shift(2);  // the expected PSN moved on by 2: old slot 2 is slot 0 now
    EXPECT_EQ(w.slot(0), sr_window::PLACED);
    EXPECT_EQ(w.slot(1), sr_window::DROPPED);
    EXPECT_EQ(w.slot(2), 0);  // the slots that left the window came back cleared
    EXPECT_EQ(w.slot(3), 0);
    EXPECT_EQ(w.beyond, 1u);
    w.shift(9);  // further than the window: everything cleared
    for (uint32_t i = 0; i < 4; ++i) {
        EXPECT_EQ(w.slot(i), 0) << i;
    }
    EXPECT_EQ(w.beyond, 0u);
}

TEST(SrWindow, NakGoesBackOnlyWhenSomethingPastTheGapWasNotKept) {
    sr_window w;
    w.open(8);
    // Expected PSN lost; 1 and 2 kept: a selective NAK (resend the one packet) does.
    w.slot(1) = sr_window::PLACED;
    w.slot(2) = sr_window::PLACED;
    w.seen(2);
    EXPECT_FALSE(w.needs_go_back());
    // 3 arrived but could not be kept (e.g. a SEND): the requester must go back from the gap.
    w.slot(3) = sr_window::DROPPED;
    w.seen(3);
    EXPECT_TRUE(w.needs_go_back());
    w.cover_unplaced();  // the go-back NAK went: 0 and 3 are on their way again
    EXPECT_EQ(w.slot(0), sr_window::COVERED);
    EXPECT_EQ(w.slot(1), sr_window::PLACED);
    EXPECT_EQ(w.slot(3), sr_window::COVERED);
    EXPECT_FALSE(w.needs_go_back());
    // Reaching a covered slot is no new gap; an empty one with something past it is.
    EXPECT_FALSE(w.next_gap_open());
    w.shift(4);
    EXPECT_FALSE(w.next_gap_open());  // nothing seen past the expected PSN
    w.slot(2) = sr_window::PLACED;
    w.seen(2);
    EXPECT_TRUE(w.next_gap_open());
    // A packet past the window (overflow) also makes the NAK go back.
    sr_window o;
    o.open(2);
    o.overflow = true;
    EXPECT_TRUE(o.needs_go_back());
    o.cover_unplaced();
    EXPECT_FALSE(o.overflow);
}

}  // namespace
