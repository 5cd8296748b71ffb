// SPDX-License-Identifier: Apache-2.0
// Connection manager service: message routing between provider drivers.
#include "ndk_shim/provider/fabric_cm.h"

#include "ndk_shim/host/host_system.h"

namespace rnic::ndk {

bool fabric_cm::attach(uint32_t ip, cm_port* port) {
    return m_ports.emplace(ip, port).second;
}

void fabric_cm::detach(uint32_t ip, cm_port* port) {
    auto it = m_ports.find(ip);
    if (it != m_ports.end() && it->second == port) {
        m_ports.erase(it);
    }
}

bool fabric_cm::send(const cm_message& msg) {
    auto it = m_ports.find(msg.dst_ip);
    if (it == m_ports.end()) {
        return false;
    }
    ++m_sent;
    host_system& host = it->second->cm_host();
    cm_port* port = it->second;
    const uint32_t ip = msg.dst_ip;
    host.queue_dpc(
        [this, port, ip, msg] {
            // Deliver only if the same adapter still owns the address.
            auto now = m_ports.find(ip);
            if (now != m_ports.end() && now->second == port) {
                port->cm_receive(msg);
            }
        },
        m_cfg.delay_ns);
    return true;
}

}  // namespace rnic::ndk
