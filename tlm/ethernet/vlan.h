// SPDX-License-Identifier: Apache-2.0
// IEEE 802.1Q tags on Ethernet frames (frames here start at the destination MAC, no FCS).
//
// A tag is 4 bytes after the source MAC: TPID 0x8100, then the TCI (PCP 3 bits, DEI 1 bit,
// VLAN ID 12 bits); the frame's own EtherType follows. A priority tag (VID 0, 802.1p) carries
// only the priority. The fabric classifies a tagged frame by its PCP and an untagged IPv4 frame
// by its DSCP (the switches' dscp_to_priority, the NIC MACs' DSCP >> 3); RoCEv2's ICRC does not
// cover the Ethernet header, so a tag added or removed leaves it valid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rnic::fabric {

constexpr uint16_t ETHERTYPE_VLAN = 0x8100;
constexpr size_t VLAN_TAG_BYTES = 4;

// True when the frame carries an 802.1Q tag (TPID 0x8100 after the MACs, and the whole tag).
inline bool vlan_tagged(const uint8_t* f, size_t len) {
    return len >= 12 + VLAN_TAG_BYTES + 2 && f[12] == (ETHERTYPE_VLAN >> 8) &&
           f[13] == (ETHERTYPE_VLAN & 0xFF);
}

// The tag's priority code point (only meaningful when vlan_tagged).
inline uint8_t vlan_pcp(const uint8_t* f) {
    return static_cast<uint8_t>(f[14] >> 5);
}

// Bytes of the Ethernet header, a tag included (14, or 18 when tagged): where the IPv4 header
// starts; the frame's own EtherType is the two bytes before it.
inline size_t l2_header_bytes(const uint8_t* f, size_t len) {
    return vlan_tagged(f, len) ? 14 + VLAN_TAG_BYTES : 14;
}

// Inserts an 802.1p priority tag (VID 0, DEI 0, PCP `pcp`) after the source MAC.
inline void insert_priority_tag(std::vector<uint8_t>& f, uint8_t pcp) {
    const uint8_t tag[VLAN_TAG_BYTES] = {ETHERTYPE_VLAN >> 8, ETHERTYPE_VLAN & 0xFF,
                                         static_cast<uint8_t>((pcp & 7) << 5), 0};
    f.insert(f.begin() + 12, tag, tag + VLAN_TAG_BYTES);
}

// Removes the 802.1Q tag of a tagged frame (a receiving MAC's VLAN strip); false when untagged.
inline bool strip_vlan_tag(std::vector<uint8_t>& f) {
    if (!vlan_tagged(f.data(), f.size())) {
        return false;
    }
    f.erase(f.begin() + 12, f.begin() + 12 + VLAN_TAG_BYTES);
    return true;
}

}  // namespace rnic::fabric
