// SPDX-License-Identifier: Apache-2.0
// Connection manager service shared by all hosts of a run: carries the connection exchange
// (REQ / REP / REJ / RTU, DREQ / DREP) between provider drivers with a simulated one-way delay.
// The legacy stand-in for the CM MADs that adapters opened without it send over the wire
// (hw/gsi): each message is delivered in the destination host's DPC thread `delay_ns` later.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "ndk_shim/ntstatus.h"
#include "ndk_shim/provider/cm_mad.h"

namespace rnic::ndk {

class host_system;

// What a provider adapter exposes to the CM: its host (for delivery) and a receive hook.
class cm_port {
public:
    virtual ~cm_port() = default;
    virtual host_system& cm_host() = 0;
    virtual void cm_receive(const cm_message& msg) = 0;
};

class fabric_cm {
public:
    struct config {
        double delay_ns = 2000;  // one-way delivery time of a CM message
    };
    fabric_cm() = default;
    explicit fabric_cm(const config& cfg)
        : m_cfg(cfg) {}

    const config& get_config() const { return m_cfg; }

    // An adapter owns `ip` from attach until detach. Returns false if the IP is taken.
    bool attach(uint32_t ip, cm_port* port);
    void detach(uint32_t ip, cm_port* port);
    bool reachable(uint32_t ip) const { return m_ports.count(ip) != 0; }

    // Sends `msg` to the adapter owning msg.dst_ip. Returns false (nothing sent) when no
    // adapter owns it. Delivery happens in the destination's DPC thread after delay_ns, and is
    // dropped if the destination detached meanwhile.
    bool send(const cm_message& msg);

    uint64_t messages_sent() const { return m_sent; }

private:
    config m_cfg;
    std::map<uint32_t, cm_port*> m_ports;
    uint64_t m_sent = 0;
};

}  // namespace rnic::ndk
