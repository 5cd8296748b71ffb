// SPDX-License-Identifier: Apache-2.0
// The host's IPv4 neighbour cache (the ARP table of the kernel's IP stack): static entries (as
// `netsh interface ipv4 add neighbors` makes them), dynamic entries learned from ARP (RFC 826)
// frames, and resolution with retransmitted requests. The frames travel through the NIC (the
// provider driver sends and receives them on the GSI rings, hw/hsi/hsi.h GSI section); this
// class only keeps the table, the timers and the waiters. A learned entry is trusted for the
// reachable time after the ARP frame that confirmed it (host config arp_reachable_ns; Windows'
// ReachableTime is about 30 s); after that it is stale: the next resolution asks again (the
// entry is dropped if nobody answers). Not modelled: the unreachable-entry hold-down, the
// randomised reachable time, IPv6 neighbour discovery.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include <systemc>

namespace rnic::ndk {

class host_system;

using mac_address = std::array<uint8_t, 6>;
inline constexpr mac_address BROADCAST_MAC = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};

// One ARP packet for IPv4 over Ethernet, with its Ethernet addresses.
struct arp_packet {
    static constexpr uint16_t REQUEST = 1;
    static constexpr uint16_t REPLY = 2;
    mac_address eth_dst{};
    mac_address eth_src{};
    uint16_t oper = REQUEST;
    mac_address sha{};  // sender hardware address
    uint32_t spa = 0;   // sender IPv4 (host order; 0 in a duplicate-address probe)
    mac_address tha{};  // target hardware address (zero in a request)
    uint32_t tpa = 0;   // target IPv4
};
// The 42 B Ethernet frame of `a` (no padding: the MAC pads it to 60 B).
std::vector<uint8_t> encode_arp(const arp_packet& a);
// Parses an Ethernet frame; false unless it is an ARP request or reply for IPv4 over Ethernet.
bool decode_arp(const uint8_t* frame, size_t len, arp_packet& a);

class neighbor_cache {
public:
    // Retransmission of unanswered requests (host config arp_timeout_ns, arp_retries); how long
    // a learned entry is trusted (arp_reachable_ns).
    neighbor_cache(host_system& host, double timeout_ns, uint32_t retries, double reachable_ns);

    // Static entry (never replaced by ARP, never times out).
    void add_static(uint32_t ip, const mac_address& mac);
    // Removes an entry (static or learned); false if there was none.
    bool remove(uint32_t ip);
    std::optional<mac_address> lookup(uint32_t ip) const;
    size_t size() const { return m_entries.size(); }

    // From a received ARP frame (RFC 826 "merge"): the sender's entry is updated if it exists,
    // or created when `create` (the frame was addressed to us, or answers our request). Static
    // entries stay. Resolutions waiting for `ip` complete.
    void learn(uint32_t ip, const mac_address& mac, bool create);

    using done_fn = std::function<void(bool resolved, const mac_address& mac)>;
    // Resolves `ip`. Known (static, or learned within the reachable time): returns 0 and writes
    // the MAC to `mac` (done is not called).
    // Otherwise joins or starts a resolution: `solicit` (send one ARP request) runs now and after
    // each timeout while retries remain; `done` runs in the host's DPC thread when a reply is
    // learned or when the last request timed out (resolved = false). Returns a token for
    // cancel().
    uint64_t resolve(uint32_t ip, mac_address& mac, std::function<void()> solicit, done_fn done);
    // Drops a waiter (its `done` will not run); the last waiter gone stops the requests.
    void cancel(uint64_t token);

    struct stats {
        uint64_t requests = 0;  // ARP requests asked for (solicit calls)
        uint64_t resolved = 0;  // resolutions answered
        uint64_t failed = 0;    // resolutions that timed out
        uint64_t learned = 0;   // entries created or updated from ARP
        uint64_t stale = 0;     // resolutions of a learned entry past its reachable time
    };
    const stats& get_stats() const { return m_stats; }

private:
    struct entry {
        mac_address mac{};
        bool is_static = false;
        sc_core::sc_time confirmed;  // learned entries: the ARP frame that last confirmed it
    };
    struct pending {
        std::function<void()> solicit;
        std::map<uint64_t, done_fn> waiters;  // by token
        uint32_t retries_left = 0;
        uint64_t timer = 0;  // host DPC token
    };
    void on_timeout(uint32_t ip);
    void finish(uint32_t ip, bool resolved, const mac_address& mac);

    host_system& m_host;
    double m_timeout_ns;
    uint32_t m_retries;
    sc_core::sc_time m_reachable;
    std::map<uint32_t, entry> m_entries;
    std::map<uint32_t, pending> m_pending;
    std::map<uint64_t, uint32_t> m_waiter_ip;  // token -> IP being resolved
    uint64_t m_next_token = 0;
    stats m_stats;
};

}  // namespace rnic::ndk
