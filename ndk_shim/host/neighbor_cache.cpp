// SPDX-License-Identifier: Apache-2.0
// IPv4 neighbour cache and ARP frame codec of the host's IP stack.
#include "ndk_shim/host/neighbor_cache.h"

#include <cstring>

#include "hw/common/byte_order.h"
#include "ndk_shim/host/host_system.h"

namespace rnic::ndk {

namespace {
using namespace rnic::bytes;
// Offsets in the Ethernet frame (RFC 826, IPv4 over Ethernet).
constexpr size_t ETHERTYPE = 12, HTYPE = 14, PTYPE = 16, HLEN = 18, PLEN = 19, OPER = 20, SHA = 22,
                 SPA = 28, THA = 32, TPA = 38, ARP_FRAME = 42;
constexpr uint16_t ETHERTYPE_ARP = 0x0806, ETHERTYPE_IPV4 = 0x0800;
}  // namespace

std::vector<uint8_t> encode_arp(const arp_packet& a) {
    std::vector<uint8_t> f(ARP_FRAME, 0);
    uint8_t* p = f.data();
    std::memcpy(p, a.eth_dst.data(), 6);
    std::memcpy(p + 6, a.eth_src.data(), 6);
    put16(p + ETHERTYPE, ETHERTYPE_ARP);
    put16(p + HTYPE, 1);  // Ethernet
    put16(p + PTYPE, ETHERTYPE_IPV4);
    p[HLEN] = 6;
    p[PLEN] = 4;
    put16(p + OPER, a.oper);
    std::memcpy(p + SHA, a.sha.data(), 6);
    put32(p + SPA, a.spa);
    std::memcpy(p + THA, a.tha.data(), 6);
    put32(p + TPA, a.tpa);
    return f;
}

bool decode_arp(const uint8_t* p, size_t len, arp_packet& a) {
    if (len < ARP_FRAME || get16(p + ETHERTYPE) != ETHERTYPE_ARP || get16(p + HTYPE) != 1 ||
        get16(p + PTYPE) != ETHERTYPE_IPV4 || p[HLEN] != 6 || p[PLEN] != 4) {
        return false;
    }
    a.oper = get16(p + OPER);
    if (a.oper != arp_packet::REQUEST && a.oper != arp_packet::REPLY) {
        return false;
    }
    std::memcpy(a.eth_dst.data(), p, 6);
    std::memcpy(a.eth_src.data(), p + 6, 6);
    std::memcpy(a.sha.data(), p + SHA, 6);
    a.spa = get32(p + SPA);
    std::memcpy(a.tha.data(), p + THA, 6);
    a.tpa = get32(p + TPA);
    return true;
}

neighbor_cache::neighbor_cache(host_system& host, double timeout_ns, uint32_t retries,
                               double reachable_ns)
    : m_host(host)
    , m_timeout_ns(timeout_ns)
    , m_retries(retries)
    , m_reachable(reachable_ns, sc_core::SC_NS) {}

void neighbor_cache::add_static(uint32_t ip, const mac_address& mac) {
    m_entries[ip] = entry{mac, true, sc_core::SC_ZERO_TIME};
    if (m_pending.count(ip) != 0) {
        finish(ip, true, mac);
    }
}

bool neighbor_cache::remove(uint32_t ip) {
    return m_entries.erase(ip) != 0;
}

std::optional<mac_address> neighbor_cache::lookup(uint32_t ip) const {
    auto it = m_entries.find(ip);
    if (it == m_entries.end()) {
        return std::nullopt;
    }
    return it->second.mac;
}

void neighbor_cache::learn(uint32_t ip, const mac_address& mac, bool create) {
    if (ip == 0) {
        return;  // a duplicate-address probe names no sender address
    }
    auto it = m_entries.find(ip);
    const bool waited = m_pending.count(ip) != 0;
    if (it != m_entries.end()) {
        if (!it->second.is_static) {
            it->second.mac = mac;
            it->second.confirmed = sc_core::sc_time_stamp();
            ++m_stats.learned;
        }
    } else if (create || waited) {
        m_entries[ip] = entry{mac, false, sc_core::sc_time_stamp()};
        ++m_stats.learned;
    } else {
        return;
    }
    if (waited) {
        finish(ip, true, m_entries[ip].mac);
    }
}

uint64_t neighbor_cache::resolve(uint32_t ip, mac_address& mac, std::function<void()> solicit,
                                 done_fn done) {
    if (auto e = m_entries.find(ip); e != m_entries.end()) {
        if (e->second.is_static || sc_core::sc_time_stamp() - e->second.confirmed < m_reachable) {
            mac = e->second.mac;
            return 0;
        }
        ++m_stats.stale;  // ask again; the entry stays until the answer (or its absence)
    }
    const uint64_t token = ++m_next_token;
    m_waiter_ip[token] = ip;
    auto it = m_pending.find(ip);
    if (it != m_pending.end()) {
        it->second.waiters.emplace(token, std::move(done));  // a request is already out
        return token;
    }
    pending& p = m_pending[ip];
    p.solicit = std::move(solicit);
    p.waiters.emplace(token, std::move(done));
    p.retries_left = m_retries;
    ++m_stats.requests;
    p.solicit();
    // solicit() may wait (MMIO); the entry may have been resolved meanwhile.
    auto again = m_pending.find(ip);
    if (again != m_pending.end()) {
        again->second.timer = m_host.queue_dpc([this, ip] { on_timeout(ip); }, m_timeout_ns);
    }
    return token;
}

void neighbor_cache::cancel(uint64_t token) {
    auto w = m_waiter_ip.find(token);
    if (w == m_waiter_ip.end()) {
        return;
    }
    const uint32_t ip = w->second;
    m_waiter_ip.erase(w);
    auto it = m_pending.find(ip);
    if (it == m_pending.end()) {
        return;
    }
    it->second.waiters.erase(token);
    if (it->second.waiters.empty()) {
        if (it->second.timer != 0) {
            m_host.cancel_dpc(it->second.timer);
        }
        m_pending.erase(it);  // nobody waits: stop asking
    }
}

void neighbor_cache::on_timeout(uint32_t ip) {
    auto it = m_pending.find(ip);
    if (it == m_pending.end()) {
        return;
    }
    it->second.timer = 0;
    if (it->second.retries_left == 0) {
        ++m_stats.failed;
        finish(ip, false, mac_address{});
        return;
    }
    --it->second.retries_left;
    ++m_stats.requests;
    it->second.solicit();
    auto again = m_pending.find(ip);
    if (again != m_pending.end()) {
        again->second.timer = m_host.queue_dpc([this, ip] { on_timeout(ip); }, m_timeout_ns);
    }
}

void neighbor_cache::finish(uint32_t ip, bool resolved, const mac_address& mac) {
    auto it = m_pending.find(ip);
    if (it == m_pending.end()) {
        return;
    }
    pending p = std::move(it->second);
    m_pending.erase(it);
    if (p.timer != 0) {
        m_host.cancel_dpc(p.timer);
    }
    if (resolved) {
        ++m_stats.resolved;
    } else if (auto e = m_entries.find(ip); e != m_entries.end() && !e->second.is_static) {
        m_entries.erase(e);  // a stale entry nobody confirmed
    }
    for (auto& [token, done] : p.waiters) {
        m_waiter_ip.erase(token);
    }
    // Waiters run in the DPC thread (learn() is called from the ISR path already; a static
    // entry added by consumer code must not call back inline).
    for (auto& [token, done] : p.waiters) {
        m_host.queue_dpc([done = std::move(done), resolved, mac] { done(resolved, mac); });
    }
}

}  // namespace rnic::ndk
