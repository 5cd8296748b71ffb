// SPDX-License-Identifier: Apache-2.0
// IB CM MAD encoding and decoding (offsets: IBA tables 106-113, from the start of the MAD).
#include "ndk_shim/provider/cm_mad.h"

#include <algorithm>
#include <cstring>

#include "hw/common/byte_order.h"

namespace rnic::ndk {

namespace {
using namespace rnic::bytes;
constexpr size_t HDR = 24;  // MAD common header; CM message fields follow it
constexpr uint64_t SERVICE_ID_TCP_PS = 0x0000000001060000ull;  // RDMA_PS_TCP << 16
constexpr size_t IP_CM_HEADER = 36;

// IPv4-mapped GID ::ffff:a.b.c.d.
void put_gid(uint8_t* p, uint32_t ip) {
    std::memset(p, 0, 16);
    p[10] = p[11] = 0xFF;
    put32(p + 12, ip);
}
// EUI-64 from a MAC (the port's CA GUID).
uint64_t guid_of(const std::array<uint8_t, 6>& m) {
    return static_cast<uint64_t>(m[0] ^ 0x02) << 56 | static_cast<uint64_t>(m[1]) << 48 |
           static_cast<uint64_t>(m[2]) << 40 | 0xFFull << 32 | 0xFEull << 24 |
           static_cast<uint64_t>(m[3]) << 16 | static_cast<uint64_t>(m[4]) << 8 | m[5];
}
// Private data with the provider's length byte in front.
void put_data(uint8_t* p, size_t room, const std::vector<uint8_t>& d) {
    const size_t n = std::min(d.size(), room - 1);
    p[0] = static_cast<uint8_t>(n);
    if (n > 0) {
        std::memcpy(p + 1, d.data(), n);
    }
}
bool get_data(const uint8_t* p, size_t room, std::vector<uint8_t>& d) {
    if (p[0] > room - 1) {
        return false;
    }
    d.assign(p + 1, p + 1 + p[0]);
    return true;
}
// IBA path MTU enumeration: 1 = 256 .. 5 = 4096.
uint8_t mtu_enum(uint8_t log) {
    return static_cast<uint8_t>(std::clamp<int>(log, 8, 12) - 7);
}
uint16_t attribute(cm_message::kind k) {
    switch (k) {
        case cm_message::REQ:
            return hsi::CM_ATTR_REQ;
        case cm_message::MRA:
            return hsi::CM_ATTR_MRA;
        case cm_message::REJ:
            return hsi::CM_ATTR_REJ;
        case cm_message::REP:
            return hsi::CM_ATTR_REP;
        case cm_message::RTU:
            return hsi::CM_ATTR_RTU;
        case cm_message::DREQ:
            return hsi::CM_ATTR_DREQ;
        case cm_message::DREP:
            return hsi::CM_ATTR_DREP;
    }
    return 0;
}
}  // namespace

NTSTATUS reject_status(uint16_t reason) {
    switch (reason) {
        case CM_REJ_INVALID_SERVICE_ID:
        case CM_REJ_CONSUMER:
            return STATUS_CONNECTION_REFUSED;
        case CM_REJ_TIMEOUT:
            return STATUS_IO_TIMEOUT;
        case CM_REJ_NO_RESOURCES:
            return STATUS_INSUFFICIENT_RESOURCES;
        default:
            return STATUS_CONNECTION_ABORTED;
    }
}

std::array<uint8_t, hsi::MAD_BYTES> encode_cm_mad(const cm_message& m, uint64_t tid) {
    std::array<uint8_t, hsi::MAD_BYTES> b{};
    uint8_t* p = b.data();
    p[0] = hsi::MAD_BASE_VERSION;
    p[1] = hsi::MAD_CLASS_CM;
    p[2] = hsi::MAD_CM_CLASS_VERSION;
    p[3] = hsi::MAD_METHOD_SEND;
    put64(p + 8, tid);
    put16(p + 16, attribute(m.type));
    uint8_t* c = p + HDR;
    put32(c + 0, m.src_conn);
    switch (m.type) {
        case cm_message::REQ: {
            put64(c + 8, SERVICE_ID_TCP_PS | m.dst_port);
            put64(c + 16, guid_of(m.mac));
            put24(c + 32, m.qpn);
            c[35] = static_cast<uint8_t>(m.ird);
            c[39] = static_cast<uint8_t>(m.ord);
            // Remote CM response timeout 20 (4.096 us x 2^20), RC, end-to-end flow control.
            c[43] = static_cast<uint8_t>(20 << 3 | 0 << 1 | 1);
            put24(c + 44, m.psn);
            c[47] = static_cast<uint8_t>(20 << 3 | (m.retry_count & 7));
            put16(c + 48, 0xFFFF);  // P_Key
            c[50] = static_cast<uint8_t>(mtu_enum(m.pmtu_log) << 4 | (m.rnr_retry & 7));
            c[51] = static_cast<uint8_t>(15 << 4);  // max CM retries
            put16(c + 52, 0xFFFF);                  // LIDs: permissive (RoCE has none)
            put16(c + 54, 0xFFFF);
            put_gid(c + 56, m.src_ip);
            put_gid(c + 72, m.dst_ip);
            c[93] = 64;  // hop limit
            c[95] = static_cast<uint8_t>((m.timeout_log & 0x1F) << 3);
            // Private data: IP CM header (version 0, IPv4, source port, IPs), then ours.
            uint8_t* pd = c + 140;
            pd[0] = 0x00;
            pd[1] = 0x40;
            put16(pd + 2, m.src_port);
            put32(pd + 4 + 12, m.src_ip);
            put32(pd + 20 + 12, m.dst_ip);
            put_data(pd + IP_CM_HEADER, 92 - IP_CM_HEADER, m.private_data);
            break;
        }
        case cm_message::MRA:
            put32(c + 4, m.dst_conn);
            c[8] = static_cast<uint8_t>(m.rejected_msg << 6);
            c[9] = static_cast<uint8_t>(24 << 3);  // service timeout 4.096 us x 2^24
            break;
        case cm_message::REJ:
            put32(c + 4, m.dst_conn);
            c[8] = static_cast<uint8_t>(m.rejected_msg << 6);
            put16(c + 10, m.reject_reason);
            put_data(c + 84, 148, m.private_data);
            break;
        case cm_message::REP:
            put32(c + 4, m.dst_conn);
            put24(c + 12, m.qpn);
            put24(c + 20, m.psn);
            c[24] = static_cast<uint8_t>(m.ird);
            c[25] = static_cast<uint8_t>(m.ord);
            c[26] = static_cast<uint8_t>(15 << 3 | 1);  // target ACK delay, e2e flow control
            c[27] = static_cast<uint8_t>((m.rnr_retry & 7) << 5);
            put64(c + 28, guid_of(m.mac));
            put_data(c + 36, 196, m.private_data);
            break;
        case cm_message::RTU:
        case cm_message::DREP:
            put32(c + 4, m.dst_conn);
            break;
        case cm_message::DREQ:
            put32(c + 4, m.dst_conn);
            put24(c + 8, m.qpn);
            break;
    }
    return b;
}

bool decode_cm_mad(const uint8_t* p, cm_message& m) {
    if (p[0] != hsi::MAD_BASE_VERSION || p[1] != hsi::MAD_CLASS_CM ||
        p[2] != hsi::MAD_CM_CLASS_VERSION) {
        return false;
    }
    const uint8_t* c = p + HDR;
    m.src_conn = get32(c);
    m.dst_conn = get32(c + 4);
    m.private_data.clear();
    switch (get16(p + 16)) {
        case hsi::CM_ATTR_REQ: {
            m.type = cm_message::REQ;
            m.dst_conn = 0;
            const uint64_t sid = get64(c + 8);
            if ((sid & ~0xFFFFull) != SERVICE_ID_TCP_PS) {
                return false;
            }
            m.dst_port = static_cast<uint16_t>(sid);
            m.qpn = get24(c + 32);
            m.ird = c[35];
            m.ord = c[39];
            m.psn = get24(c + 44);
            m.retry_count = c[47] & 7;
            m.pmtu_log = static_cast<uint8_t>((c[50] >> 4) + 7);
            m.rnr_retry = c[50] & 7;
            m.timeout_log = c[95] >> 3;
            const uint8_t* pd = c + 140;
            if ((pd[1] >> 4) != 4) {
                return false;  // IPv4 only
            }
            m.src_port = get16(pd + 2);
            m.src_ip = get32(pd + 4 + 12);
            m.dst_ip = get32(pd + 20 + 12);
            return get_data(pd + IP_CM_HEADER, 92 - IP_CM_HEADER, m.private_data);
        }
        case hsi::CM_ATTR_MRA:
            m.type = cm_message::MRA;
            m.rejected_msg = c[8] >> 6;
            return true;
        case hsi::CM_ATTR_REJ:
            m.type = cm_message::REJ;
            m.rejected_msg = c[8] >> 6;
            m.reject_reason = get16(c + 10);
            return get_data(c + 84, 148, m.private_data);
        case hsi::CM_ATTR_REP:
            m.type = cm_message::REP;
            m.qpn = get24(c + 12);
            m.psn = get24(c + 20);
            m.ird = c[24];
            m.ord = c[25];
            m.rnr_retry = c[27] >> 5;
            return get_data(c + 36, 196, m.private_data);
        case hsi::CM_ATTR_RTU:
            m.type = cm_message::RTU;
            return true;
        case hsi::CM_ATTR_DREQ:
            m.type = cm_message::DREQ;
            m.qpn = get24(c + 8);
            return true;
        case hsi::CM_ATTR_DREP:
            m.type = cm_message::DREP;
            return true;
        default:
            return false;
    }
}

}  // namespace rnic::ndk
