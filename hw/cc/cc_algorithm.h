// SPDX-License-Identifier: Apache-2.0
// The congestion-control plug-in interface of the NIC (reaction point). One algorithm object per
// NIC; its per-QP state is a fixed slice of the QP context (cc_qp_state), which the NIC caches,
// evicts and writes back with the rest of the QPC. The algorithm sees events and returns
// decisions; only the transmit scheduler's pacer (hw/cc/pacer.h) applies them.
//
// Pure C++ (no SystemC): times are integer picoseconds, so algorithms are unit-tested alone.
// How to add an algorithm: hw/cc/README.md ("Adding an algorithm").
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "hw/cc/cc_state.h"
#include "hw/roce/telemetry.h"

namespace rnic::hw::cc {

enum class cc_event_kind : uint8_t {
    SENT,   // a packet of this QP left the transmit scheduler (bytes: its wire bytes)
    ACK,    // an ACK covering new data; rtt_ps: NIC-measured (send of the acked packet -> ACK)
    NAK,    // a NAK (sequence error or RNR): rtt_ps as for ACK
    CNP,    // a congestion notification packet for this QP arrived
    TIMER,  // this QP's timer (cc_decision::timer_at_ps) expired
};

struct cc_event {
    cc_event_kind kind = cc_event_kind::SENT;
    uint64_t now_ps = 0;
    uint32_t bytes = 0;         // SENT: wire bytes of the packet; ACK: payload bytes newly acked
    uint64_t rtt_ps = 0;        // ACK/NAK: 0 when no sample (nothing timed was acknowledged)
    uint32_t psn = 0;           // ACK/NAK: the newest PSN the ACK covers
    uint32_t next_psn = 0;      // ACK/NAK: the QP's next PSN to send (snd_nxt) when it is taken
    roce::int_stack telemetry;  // ACK/NAK: the INT stack the ACK reflects (nhop 0: none)
};

// What the algorithm decides; unset fields leave the QP's value as it is.
struct cc_decision {
    std::optional<uint64_t> rate_mbps;     // new rate (clamped by the engine to [min, line])
    std::optional<uint64_t> target_mbps;   // shown only (waves, cc.csv)
    std::optional<uint32_t> alpha;         // shown only
    std::optional<uint32_t> window_bytes;  // in-flight cap, 0: none (kept, not applied yet: README)
    std::optional<uint64_t> timer_at_ps;   // absolute; replaces the QP's timer; 0 cancels it
};

// What the NIC tells an algorithm about itself.
struct cc_env {
    uint64_t line_rate_mbps = 100000;
};

// Notification point parameters, when the algorithm wants CNPs (DCQCN's np_* keys).
struct np_params {
    uint64_t min_time_between_cnps_ps = 0;  // per QP
    uint8_t cnp_dscp = 48;
    int8_t cnp_prio = -1;  // 0..7: CNPs carry an 802.1Q priority tag with this PCP; < 0: untagged
};

class cc_algorithm {
public:
    virtual ~cc_algorithm() = default;
    virtual const char* name() const = 0;
    // A QP starts with its slice zeroed (rate 0: not limited) when it is created or reset.
    virtual cc_decision on_event(cc_qp_state& s, const cc_event& e) = 0;
    // SENT events cost one call per packet: an algorithm that does not need them for this QP
    // now (DCQCN at line rate, TIMELY always) says so and the engine skips them.
    virtual bool wants_sent(const cc_qp_state& s) const { return false; }
    // ACK/NAK events need a send timestamp per packet (RTT): only delay-based algorithms.
    virtual bool wants_acks() const { return false; }
    // Non-zero: SEND/WRITE messages longer than this go out as segments of about this many
    // bytes (whole path-MTU packets), each asking for an ACK on its last packet, so that the
    // algorithm gets an RTT sample per segment, not one per message (TIMELY's segment_bytes;
    // hw/tx_engine/README.md, "Congestion control").
    virtual uint32_t ack_segment_bytes() const { return 0; }
    // The segment for this QP now (at most ack_segment_bytes(); TIMELY shrinks it at low rates
    // so that samples keep coming).
    virtual uint32_t ack_segment_bytes(const cc_qp_state& s) const { return ack_segment_bytes(); }
    // ACKs must carry the switches' in-band telemetry (HPCC): the NIC sends every request packet
    // with an INT stack and reflects the stack of a request in the ACK it answers with.
    virtual bool wants_telemetry() const { return false; }
    // Non-null: the receive path's notification point turns CE marks into CNPs with these.
    virtual const np_params* notification_point() const { return nullptr; }
};

// Built from the parsed keys of rnic.cc.<name> when the NIC is elaborated.
using cc_factory = std::function<std::unique_ptr<cc_algorithm>(const cc_env&)>;

}  // namespace rnic::hw::cc
