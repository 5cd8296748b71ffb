// SPDX-License-Identifier: Apache-2.0
// GSI (QP1) MAD rings and UD SEND-only frames.
#include "hw/gsi/gsi.h"

#include <cstring>

#include "hw/common/byte_order.h"
#include "hw/cq_writer/cq_writer.h"
#include "hw/roce/roce.h"

namespace rnic::hw {

namespace {
using namespace rnic::bytes;
constexpr uint8_t UD_SEND_ONLY = 0x64;  // BTH opcode (UD = RC + 0x60)
constexpr size_t DETH_BYTES = 8;
constexpr size_t MAD_OFFSET = roce::BTH_OFFSET + roce::BTH_BYTES + DETH_BYTES;
constexpr size_t UD_FRAME_BYTES = MAD_OFFSET + hsi::MAD_BYTES + roce::ICRC_BYTES;
constexpr uint32_t MAX_LOG = 12;

uint64_t load_le(const uint8_t* p, unsigned len) {
    uint64_t v = 0;
    for (unsigned i = 0; i < len; ++i) {
        v |= static_cast<uint64_t>(p[i]) << (8 * i);
    }
    return v;
}
void store_le(uint8_t* p, unsigned len, uint64_t v) {
    for (unsigned i = 0; i < len; ++i) {
        p[i] = static_cast<uint8_t>(v >> (8 * i));
    }
}
bool is_cm_mad(const uint8_t* mad) {
    return mad[0] == hsi::MAD_BASE_VERSION && mad[1] == hsi::MAD_CLASS_CM;
}
// ARP for IPv4 over Ethernet (RFC 826): offsets in the Ethernet frame.
constexpr size_t ARP_HTYPE = 14, ARP_PTYPE = 16, ARP_HLEN = 18, ARP_PLEN = 19, ARP_OPER = 20,
                 ARP_SHA = 22, ARP_SPA = 28, ARP_THA = 32, ARP_TPA = 38;
constexpr uint16_t ARP_REQUEST = 1, ARP_REPLY = 2;
constexpr size_t ETH_MIN_FRAME = 60;  // without FCS
}  // namespace

gsi_config parse_gsi_config(config::reader r) {
    gsi_config c;
    r.get("process_cycles", c.process_cycles, 0u, 1000u);
    r.get("rx_fifo_frames", c.rx_fifo_frames, 1u, 1024u);
    r.finish();
    return c;
}

gsi::gsi(sc_core::sc_module_name name, const gsi_config& cfg, const clock_domain& clk,
         const nic_identity& id, dma_engine& dma, cq_writer& cqw,
         channel<fabric::eth_frame>& mac_tx, sim_context& ctx)
    : sc_module(name)
    , m_cfg(cfg)
    , m_clk(clk)
    , m_id(id)
    , m_dma(dma)
    , m_cq_writer(cqw)
    , m_mac_tx(mac_tx)
    , m_rx_fifo("rx_fifo", cfg.rx_fifo_frames) {
    SC_HAS_PROCESS(gsi);
    SC_THREAD(send_thread);
    SC_THREAD(recv_thread);
    const std::string b = this->name();
    auto& s = ctx.stats;
    s.add(b, "mads_sent", m_stats.mads_sent, "count", "QP1 MAD frames sent");
    s.add(b, "mads_received", m_stats.mads_received, "count",
          "QP1 MADs written to the receive ring");
    s.add(b, "send_bad_mad", m_stats.send_bad_mad, "count", "send slots dropped: not a CM MAD");
    s.add(b, "rx_fifo_drops", m_stats.rx_fifo_drops, "count", "QP1 frames dropped: FIFO full");
    s.add(b, "rx_malformed", m_stats.rx_malformed, "count", "QP1 frames dropped: bad headers");
    s.add(b, "rx_bad_icrc", m_stats.rx_bad_icrc, "count", "QP1 frames dropped: ICRC mismatch");
    s.add(b, "rx_not_qp1", m_stats.rx_not_qp1, "count", "UD frames dropped: not for QP1");
    s.add(b, "rx_bad_qkey", m_stats.rx_bad_qkey, "count", "QP1 frames dropped: wrong Q_Key");
    s.add(b, "rx_not_for_us", m_stats.rx_not_for_us, "count",
          "QP1 frames dropped: other MAC or IP address");
    s.add(b, "rx_bad_mad", m_stats.rx_bad_mad, "count", "QP1 frames dropped: not a CM MAD");
    s.add(b, "rx_no_buffer", m_stats.rx_no_buffer, "count",
          "QP1 and ARP frames dropped: receive ring off or full");
    s.add(b, "arp_sent", m_stats.arp_sent, "count", "ARP frames sent from send slots");
    s.add(b, "send_bad_frame", m_stats.send_bad_frame, "count",
          "raw send slots dropped: not ARP or bad length");
    s.add(b, "arp_received", m_stats.arp_received, "count",
          "ARP frames written to the receive ring");
    s.add(b, "arp_replies_sent", m_stats.arp_replies_sent, "count",
          "ARP replies of the hardware responder (requests for this port's IPv4)");
    s.add(b, "arp_malformed", m_stats.arp_malformed, "count",
          "ARP frames dropped: not IPv4 over Ethernet or too short");
    s.add(b, "arp_not_for_us", m_stats.arp_not_for_us, "count",
          "ARP frames dropped: for another IPv4 address or MAC");
}

bool gsi::mmio_write(uint64_t offset, const uint8_t* data, unsigned len) {
    if (len != 4 && len != 8) {
        return false;
    }
    const uint64_t v = load_le(data, len);
    switch (offset) {
        case hsi::REG_GSI_SQ_BASE:
            m_sq_base = v;
            return true;
        case hsi::REG_GSI_SQ_LOG_SIZE:
            if (v > MAX_LOG) {
                return false;
            }
            m_sq_log = static_cast<uint32_t>(v);
            m_sq_producer = m_sq_consumer = 0;
            return true;
        case hsi::REG_GSI_SQ_DOORBELL:
            m_sq_producer = static_cast<uint32_t>(v);
            m_doorbell.notify(m_clk.cycles(1));  // decode: +1 cycle
            return true;
        case hsi::REG_GSI_RQ_BASE:
            m_rq_base = v;
            return true;
        case hsi::REG_GSI_RQ_LOG_SIZE:
            if (v > MAX_LOG) {
                return false;
            }
            m_rq_log = static_cast<uint32_t>(v);
            m_rq_producer = m_rq_consumer = 0;
            return true;
        case hsi::REG_GSI_RQ_CONSUMER:
            m_rq_consumer = static_cast<uint32_t>(v);
            return true;
        default:
            return false;
    }
}

bool gsi::mmio_read(uint64_t offset, uint8_t* data, unsigned len) const {
    if (len != 4 && len != 8) {
        return false;
    }
    uint64_t v = 0;
    switch (offset) {
        case hsi::REG_GSI_SQ_BASE:
            v = m_sq_base;
            break;
        case hsi::REG_GSI_SQ_LOG_SIZE:
            v = m_sq_log;
            break;
        case hsi::REG_GSI_SQ_DOORBELL:
            v = m_sq_producer;
            break;
        case hsi::REG_GSI_RQ_BASE:
            v = m_rq_base;
            break;
        case hsi::REG_GSI_RQ_LOG_SIZE:
            v = m_rq_log;
            break;
        case hsi::REG_GSI_RQ_CONSUMER:
            v = m_rq_consumer;
            break;
        default:
            return false;
    }
    store_le(data, len, v);
    return true;
}

bool gsi::is_arp(const std::vector<uint8_t>& f) {
    return f.size() >= roce::ETH_HEADER_BYTES && get16(&f[12]) == hsi::ETHERTYPE_ARP;
}

std::vector<uint8_t> gsi::build_arp_reply(const std::vector<uint8_t>& req, const nic_identity& id) {
    std::vector<uint8_t> f(ETH_MIN_FRAME, 0);
    uint8_t* p = f.data();
    std::memcpy(p, &req[ARP_SHA], 6);  // to the requester
    std::memcpy(p + 6, id.mac.data(), 6);
    put16(p + 12, hsi::ETHERTYPE_ARP);
    put16(p + ARP_HTYPE, 1);
    put16(p + ARP_PTYPE, roce::ETHERTYPE_IPV4);
    p[ARP_HLEN] = 6;
    p[ARP_PLEN] = 4;
    put16(p + ARP_OPER, ARP_REPLY);
    std::memcpy(p + ARP_SHA, id.mac.data(), 6);
    put32(p + ARP_SPA, id.ip);
    std::memcpy(p + ARP_THA, &req[ARP_SHA], 6);
    std::memcpy(p + ARP_TPA, &req[ARP_SPA], 4);
    return f;
}

bool gsi::claims(const std::vector<uint8_t>& f) {
    if (is_arp(f)) {
        return true;
    }
    return f.size() > roce::BTH_OFFSET && get16(&f[12]) == roce::ETHERTYPE_IPV4 &&
           f[23] == roce::IP_PROTO_UDP &&
           get16(&f[roce::ETH_HEADER_BYTES + roce::IPV4_HEADER_BYTES + 2]) ==
               roce::ROCEV2_UDP_PORT &&
           f[roce::BTH_OFFSET] == UD_SEND_ONLY;
}

std::vector<uint8_t> gsi::build_frame(const hsi::gsi_send_header& h, const uint8_t* mad,
                                      uint32_t psn, uint16_t ip_id) {
    std::vector<uint8_t> f(UD_FRAME_BYTES, 0);
    uint8_t* p = f.data();
    std::memcpy(p, h.dst_mac, 6);
    std::memcpy(p + 6, h.src_mac, 6);
    put16(p + 12, roce::ETHERTYPE_IPV4);
    uint8_t* ip = p + roce::ETH_HEADER_BYTES;
    const size_t ip_len = UD_FRAME_BYTES - roce::ETH_HEADER_BYTES;
    ip[0] = 0x45;
    ip[1] = 0x00;  // management traffic: DSCP 0, not ECN-capable
    put16(ip + 2, static_cast<uint16_t>(ip_len));
    put16(ip + 4, ip_id);
    put16(ip + 6, 0x4000);  // DF
    ip[8] = 64;
    ip[9] = roce::IP_PROTO_UDP;
    put32(ip + 12, h.src_ip);
    put32(ip + 16, h.dst_ip);
    put16(ip + 10, roce::ipv4_checksum(ip));
    uint8_t* udp = ip + roce::IPV4_HEADER_BYTES;
    put16(udp, h.udp_src_port);
    put16(udp + 2, roce::ROCEV2_UDP_PORT);
    put16(udp + 4, static_cast<uint16_t>(ip_len - roce::IPV4_HEADER_BYTES));
    uint8_t* bth = p + roce::BTH_OFFSET;
    bth[0] = UD_SEND_ONLY;
    bth[1] = 0;  // SE 0, M 0, pad 0 (256 B), TVer 0
    put16(bth + 2, h.pkey);
    put24(bth + 5, h.dest_qp & roce::QPN_MASK);
    put24(bth + 9, psn & roce::PSN_MASK);
    uint8_t* deth = bth + roce::BTH_BYTES;
    put32(deth, h.qkey);
    put24(deth + 5, hsi::GSI_QPN);  // source QP: always QP1
    std::memcpy(p + MAD_OFFSET, mad, hsi::MAD_BYTES);
    const uint32_t icrc = roce::compute_icrc(p, UD_FRAME_BYTES - roce::ICRC_BYTES);
    store_le(p + UD_FRAME_BYTES - roce::ICRC_BYTES, 4, icrc);
    return f;
}

void gsi::send_thread() {
    std::vector<uint8_t> slot(hsi::GSI_SLOT_BYTES);
    for (;;) {
        while (m_sq_consumer == m_sq_producer || m_sq_base == 0) {
            sc_core::wait(m_doorbell);
        }
        const uint32_t mask = (1u << m_sq_log) - 1;
        const uint64_t addr =
            m_sq_base + static_cast<uint64_t>(m_sq_consumer & mask) * hsi::GSI_SLOT_BYTES;
        ++m_sq_consumer;
        m_dma.read_wait(dma_client::WQE_FETCH, addr, slot.data(), hsi::GSI_SLOT_BYTES);
        m_clk.wait_cycles(m_cfg.process_cycles);  // header build, ICRC
        hsi::gsi_send_header h;
        std::memcpy(&h, slot.data(), sizeof(h));
        const uint8_t* mad = slot.data() + sizeof(h);
        uint8_t done = hsi::GSI_SENT;
        if (h.kind != hsi::GSI_KIND_MAD) {
            send_raw(mad, h.kind == hsi::GSI_KIND_ARP ? h.frame_bytes : 0, done);
        } else if (!is_cm_mad(mad)) {
            ++m_stats.send_bad_mad;
            done = hsi::GSI_DROPPED;
        } else {
            fabric::eth_frame f;
            f.data = build_frame(h, mad, m_psn, m_ip_id);
            m_psn = (m_psn + 1) & roce::PSN_MASK;
            ++m_ip_id;
            m_mac_tx.put(std::move(f));  // MAC control queue: blocks while it is full
            ++m_stats.mads_sent;
        }
        m_dma.write(dma_client::COMPLETION, addr + hsi::GSI_SEND_DONE_OFFSET, &done, 1);
    }
}

void gsi::send_raw(const uint8_t* frame, uint32_t bytes, uint8_t& done) {
    if (bytes < hsi::GSI_MIN_ARP_FRAME || bytes > hsi::GSI_MAX_RAW_FRAME ||
        get16(frame + 12) != hsi::ETHERTYPE_ARP) {
        ++m_stats.send_bad_frame;  // the block carries ARP only
        done = hsi::GSI_DROPPED;
        return;
    }
    fabric::eth_frame f;
    f.data.assign(frame, frame + bytes);
    if (f.data.size() < ETH_MIN_FRAME) {
        f.data.resize(ETH_MIN_FRAME, 0);  // MAC pads short frames
    }
    m_mac_tx.put(std::move(f));  // MAC control queue: blocks while it is full
    ++m_stats.arp_sent;
}

void gsi::receive(fabric::eth_frame&& frame) {
    if (m_rx_fifo.full()) {
        ++m_stats.rx_fifo_drops;
        return;
    }
    m_rx_fifo.put(std::move(frame));  // never blocks: not full
}

bool gsi::accept(const std::vector<uint8_t>& f) {
    const uint8_t* p = f.data();
    const uint8_t* ip = p + roce::ETH_HEADER_BYTES;
    if (f.size() < UD_FRAME_BYTES || ip[0] != 0x45 || (get16(ip + 6) & 0x3FFF) != 0 ||
        get16(ip + 2) != UD_FRAME_BYTES - roce::ETH_HEADER_BYTES || !roce::ipv4_checksum_ok(ip) ||
        get16(ip + roce::IPV4_HEADER_BYTES + 4) !=
            UD_FRAME_BYTES - roce::ETH_HEADER_BYTES - roce::IPV4_HEADER_BYTES ||
        ((p[roce::BTH_OFFSET + 1] >> 4) & 3) != 0) {
        ++m_stats.rx_malformed;  // a MAD frame has exactly one size
        return false;
    }
    const uint32_t icrc = static_cast<uint32_t>(load_le(p + UD_FRAME_BYTES - 4, 4));
    if (roce::compute_icrc(p, UD_FRAME_BYTES - roce::ICRC_BYTES) != icrc) {
        ++m_stats.rx_bad_icrc;
        return false;
    }
    const uint8_t* bth = p + roce::BTH_OFFSET;
    if (get24(bth + 5) != hsi::GSI_QPN) {
        ++m_stats.rx_not_qp1;
        return false;
    }
    if (get32(bth + roce::BTH_BYTES) != hsi::GSI_QKEY) {
        ++m_stats.rx_bad_qkey;
        return false;
    }
    static const uint8_t BROADCAST[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    const bool mac_ok =
        std::memcmp(p, m_id.mac.data(), 6) == 0 || std::memcmp(p, BROADCAST, 6) == 0;
    if (!mac_ok || get32(ip + 16) != m_id.ip) {
        ++m_stats.rx_not_for_us;
        return false;
    }
    if (!is_cm_mad(p + MAD_OFFSET)) {
        ++m_stats.rx_bad_mad;
        return false;
    }
    return true;
}

bool gsi::accept_arp(const std::vector<uint8_t>& f) {
    const uint8_t* p = f.data();
    if (f.size() < hsi::GSI_MIN_ARP_FRAME || f.size() > hsi::GSI_MAX_RAW_FRAME ||
        get16(p + ARP_HTYPE) != 1 || get16(p + ARP_PTYPE) != roce::ETHERTYPE_IPV4 ||
        p[ARP_HLEN] != 6 || p[ARP_PLEN] != 4 ||
        (get16(p + ARP_OPER) != ARP_REQUEST && get16(p + ARP_OPER) != ARP_REPLY)) {
        ++m_stats.arp_malformed;
        return false;
    }
    static const uint8_t BROADCAST[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    const bool mac_ok =
        std::memcmp(p, m_id.mac.data(), 6) == 0 || std::memcmp(p, BROADCAST, 6) == 0;
    const bool for_ip = m_id.ip != 0 && get32(p + ARP_TPA) == m_id.ip;
    const bool reply_to_mac =
        get16(p + ARP_OPER) == ARP_REPLY && std::memcmp(p + ARP_THA, m_id.mac.data(), 6) == 0;
    if (!mac_ok || (!for_ip && !reply_to_mac)) {
        ++m_stats.arp_not_for_us;
        return false;
    }
    if (get16(p + ARP_OPER) == ARP_REQUEST && for_ip) {
        // Hardware responder: the reply leaves before the request reaches the driver.
        m_clk.wait_cycles(m_cfg.process_cycles);  // reply build
        fabric::eth_frame r;
        r.data = build_arp_reply(f, m_id);
        m_mac_tx.put(std::move(r));  // MAC control queue: blocks while it is full
        ++m_stats.arp_replies_sent;
    }
    return true;
}

void gsi::place(const hsi::gsi_recv_header& hdr, const uint8_t* body, size_t body_bytes) {
    std::vector<uint8_t> slot(hsi::GSI_SLOT_BYTES, 0);
    const uint32_t size = 1u << m_rq_log;
    hsi::gsi_recv_header h = hdr;
    h.flags = static_cast<uint8_t>((((m_rq_producer >> m_rq_log) & 1) ? 0 : 1) << 7);
    std::memcpy(slot.data(), &h, sizeof(h));
    std::memcpy(slot.data() + sizeof(h), body, body_bytes);
    const uint64_t addr =
        m_rq_base + static_cast<uint64_t>(m_rq_producer & (size - 1)) * hsi::GSI_SLOT_BYTES;
    ++m_rq_producer;
    m_dma.write(dma_client::RX_PAYLOAD, addr, slot.data(), hsi::GSI_SLOT_BYTES);  // posted
    // The EQE follows the slot write through the same writer path (PCIe order).
    m_cq_writer.post_event(hsi::EVENT_GSI_RECEIVE, m_rq_producer);
}

void gsi::recv_thread() {
    for (;;) {
        fabric::eth_frame f = m_rx_fifo.get();
        m_clk.wait_cycles(m_cfg.process_cycles);  // header and ICRC checks
        const bool arp = is_arp(f.data);
        if (arp ? !accept_arp(f.data) : !accept(f.data)) {
            continue;
        }
        const uint32_t size = 1u << m_rq_log;
        if (m_rq_base == 0 || m_rq_producer - m_rq_consumer >= size) {
            ++m_stats.rx_no_buffer;
            continue;
        }
        const uint8_t* p = f.data.data();
        if (arp) {
            hsi::gsi_recv_header h{};
            std::memcpy(h.dst_mac, p, 6);
            std::memcpy(h.src_mac, p + 6, 6);
            h.kind = hsi::GSI_KIND_ARP;
            h.frame_bytes = static_cast<uint16_t>(f.data.size());
            place(h, p, f.data.size());
            ++m_stats.arp_received;
            continue;
        }
        const uint8_t* ip = p + roce::ETH_HEADER_BYTES;
        const uint8_t* bth = p + roce::BTH_OFFSET;
        hsi::gsi_recv_header h{};
        std::memcpy(h.dst_mac, p, 6);
        std::memcpy(h.src_mac, p + 6, 6);
        h.src_ip = get32(ip + 12);
        h.dst_ip = get32(ip + 16);
        h.src_qp = get24(bth + roce::BTH_BYTES + 5);
        h.qkey = get32(bth + roce::BTH_BYTES);
        h.psn = get24(bth + 9);
        h.pkey = get16(bth + 2);
        h.udp_src_port = get16(ip + roce::IPV4_HEADER_BYTES);
        h.kind = hsi::GSI_KIND_MAD;
        place(h, p + MAD_OFFSET, hsi::MAD_BYTES);
        ++m_stats.mads_received;
    }
}

}  // namespace rnic::hw
