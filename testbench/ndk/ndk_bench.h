// SPDX-License-Identifier: Apache-2.0
// Driver-only test bench for the NDK provider: host memory + PCIe link + host_system, and a fake
// BAR0 target that records MMIO writes and plays the NIC (executes commands by answering them,
// writes CQEs and EQ entries into host memory by DMA, raises MSI-X). No hw/ model involved.
// The fake NICs of a bench share a fake_network that emulates the GSI block (hw/hsi/hsi.h GSI
// section): send slots are copied into the receive rings of the addressed fake NICs gsi_ns
// later, and ARP requests for a NIC's own address are answered by that NIC, as the real block's
// hardware responder does. So connections run the driver's real CM and ARP code.
#pragma once

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <gtest/gtest.h>

#include "hw/common/sim_context.h"
#include "hw/hsi/hsi.h"
#include "ndk_shim/host/host_system.h"
#include "ndk_shim/host/neighbor_cache.h"
#include "ndk_shim/ndk_sim.h"
#include "ndk_shim/provider/provider.h"
#include "tlm/host_memory/host_memory.h"
#include "tlm/pcie/pcie_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace rnic::ndk::test {

class fake_network;

class fake_nic : public sc_core::sc_module {
public:
    tlm_utils::simple_target_socket<fake_nic> bar{"bar"};
    tlm_utils::simple_initiator_socket<fake_nic> dma{"dma"};

    struct mmio_write {
        uint64_t offset;
        std::vector<uint8_t> data;
        sc_core::sc_time at;
        uint64_t value() const {
            uint64_t v = 0;
            std::memcpy(&v, data.data(), std::min<size_t>(8, data.size()));
            return v;
        }
    };
    struct cq_state {
        uint64_t ring = 0;
        uint32_t log = 0;
        uint32_t producer = 0;
        uint32_t consumer = 0;
        uint8_t arm = 0;
        // CMD_MODIFY_CQ interrupt moderation (hsi): hold the event until `mod_count` CQEs are
        // unconsumed or `mod_period_us` passed since the first matching CQE.
        uint32_t mod_count = 0;
        uint32_t mod_period_us = 0;
        bool timer = false;    // holds one of the moderation timers
        bool held = false;     // an EVENT_CQ_COMPLETION is being held
        uint64_t hold_id = 0;  // which hold a period timer belongs to
        bool dead = false;     // EVENT_CQ_ERROR posted: CQEs dropped
    };
    struct qp_state {
        hsi::cmd_create_qp create{};
        hsi::cmd_modify_qp last_modify{};
        std::vector<uint8_t> states;
    };
    struct msix_entry {
        uint64_t addr = 0;
        uint32_t data = 0;
        uint32_t control = 1;
    };

    std::vector<mmio_write> writes;
    std::vector<hsi::cmd_slot> commands;  // as read from the ring, in execution order
    std::map<uint8_t, uint8_t> fail;      // opcode -> status to answer with
    bool answer = true;                   // false: never complete commands
    double cmd_ns = 400;                  // command execution time
    uint64_t cmdq_base = 0, eq_base = 0;
    uint32_t cmdq_log = 0, eq_log = 0;
    msix_entry msix[hsi::MSIX_VECTORS];
    uint32_t eq_producer = 0;
    uint32_t eq_consumer = 0;
    bool eq_armed = false;
    uint32_t msis = 0;
    // CMD_QUERY_DEVICE answer and the moderation timers (as rnic.cq configures a real NIC).
    uint32_t caps = hsi::DEVICE_CAP_CQ_MODERATION;
    uint32_t moderation_timers = 64;
    uint32_t timers_in_use = 0;
    std::map<uint32_t, cq_state> cqs;
    std::map<uint32_t, qp_state> qps;

    // GSI emulation: the port's addresses (set by fake_network::attach), the one-way delivery
    // time of a slot to a peer (wire, both NICs' processing), and what went through it.
    struct gsi_slot_record {
        hsi::gsi_send_header header{};
        std::vector<uint8_t> body;  // MAD, or the ARP frame
        sc_core::sc_time at;
        bool is_arp() const { return header.kind == hsi::GSI_KIND_ARP; }
        uint16_t attribute() const {  // CM attribute of a MAD
            return static_cast<uint16_t>(body[16] << 8 | body[17]);
        }
    };
    fake_network* network = nullptr;
    mac_address mac{};
    uint32_t ip = 0;
    double gsi_ns = 2000;
    bool gsi_drop_all = false;  // the port's cable is cut: nothing leaves, nothing arrives
    std::vector<gsi_slot_record> gsi_sent;  // send slots, in order
    uint64_t gsi_received = 0;              // slots written into the receive ring
    uint64_t gsi_no_buffer = 0;             // frames dropped: ring off or full
    uint64_t arp_replies = 0;               // answers of the emulated hardware responder
    uint64_t gsi_not_for_us = 0;            // frames for another MAC / IP

    fake_nic(sc_core::sc_module_name name, fabric::host_memory& mem)
        : sc_module(name)
        , m_mem(mem) {
        bar.register_b_transport(this, &fake_nic::bar_b_transport);
        SC_HAS_PROCESS(fake_nic);
        SC_THREAD(cmd_thread);
        SC_THREAD(gsi_send_thread);
        SC_THREAD(gsi_recv_thread);
    }

    // CM MADs this NIC sent, by attribute, in order.
    std::vector<uint16_t> mads_sent() const {
        std::vector<uint16_t> v;
        for (const auto& r : gsi_sent) {
            if (!r.is_arp()) {
                v.push_back(r.attribute());
            }
        }
        return v;
    }
    // ARP frames this NIC sent (decoded).
    std::vector<arp_packet> arp_sent() const {
        std::vector<arp_packet> v;
        for (const auto& r : gsi_sent) {
            arp_packet a;
            if (r.is_arp() && decode_arp(r.body.data(), r.body.size(), a)) {
                v.push_back(a);
            }
        }
        return v;
    }

    // A frame from the network (after its delivery delay): the receive side of the GSI block.
    void gsi_arrive(const hsi::gsi_recv_header& h, std::vector<uint8_t> body) {
        m_gsi_rx.push_back({h, std::move(body)});
        m_gsi_rx_event.notify(sc_core::SC_ZERO_TIME);
    }

    // All values written to BAR offset `off`, in order.
    std::vector<uint64_t> values(uint64_t off) const {
        std::vector<uint64_t> v;
        for (const auto& w : writes) {
            if (w.offset == off) {
                v.push_back(w.value());
            }
        }
        return v;
    }
    std::vector<hsi::cmd_slot> commands_of(uint8_t opcode) const {
        std::vector<hsi::cmd_slot> v;
        for (const auto& c : commands) {
            if (c.opcode == opcode) {
                v.push_back(c);
            }
        }
        return v;
    }
    // Bytes of SQ slot `index` of `qpn` (as the NIC would fetch them).
    std::vector<uint8_t> sq_slot(uint32_t qpn, uint32_t index, uint32_t bytes) const {
        const auto& q = qps.at(qpn).create;
        std::vector<uint8_t> b(bytes);
        const uint64_t addr =
            q.sq_addr + static_cast<uint64_t>(index & ((1u << q.sq_log_depth) - 1)) * q.sq_stride;
        m_mem.read(addr, b.data(), bytes);
        return b;
    }
    std::vector<uint8_t> rq_slot(uint32_t qpn, uint32_t index, uint32_t bytes) const {
        const auto& q = qps.at(qpn).create;
        std::vector<uint8_t> b(bytes);
        const uint64_t addr =
            q.rq_addr + static_cast<uint64_t>(index & ((1u << q.rq_log_depth) - 1)) * q.rq_stride;
        m_mem.read(addr, b.data(), bytes);
        return b;
    }

    // True when the write completed without a PCIe error (e.g. an IOMMU-unmapped ring fails).
    bool dma_write(uint64_t addr, const void* data, unsigned len) {
        std::vector<uint8_t> buf(static_cast<const uint8_t*>(data),
                                 static_cast<const uint8_t*>(data) + len);
        tlm::tlm_generic_payload gp;
        gp.set_command(tlm::TLM_WRITE_COMMAND);
        gp.set_address(addr);
        gp.set_data_ptr(buf.data());
        gp.set_data_length(len);
        gp.set_streaming_width(len);
        sc_core::sc_time d = sc_core::SC_ZERO_TIME;
        dma->b_transport(gp, d);
        return gp.get_response_status() == tlm::TLM_OK_RESPONSE;
    }

    void post_event(uint8_t type, uint32_t data, uint32_t data2 = 0) {
        hsi::event_entry e{};
        e.type = type;
        e.data = data;
        e.data2 = data2;
        const uint32_t mask = (1u << eq_log) - 1;
        e.flags = static_cast<uint8_t>((((eq_producer >> eq_log) & 1) ? 0 : 1) << 7);
        dma_write(eq_base + (eq_producer & mask) * sizeof(e), &e, sizeof(e));
        ++eq_producer;
        if (eq_armed && (msix[0].control & 1) == 0) {
            eq_armed = false;
            ++msis;
            dma_write(msix[0].addr, &msix[0].data, 4);
        }
    }

    // Writes a CQE (phase filled in) and, when the CQ is armed for it, an EQ event (held by
    // moderation like the NIC does). A failed write kills the CQ: EVENT_CQ_ERROR(DMA_ACCESS).
    void post_cqe(uint32_t cqn, hsi::cqe e) {
        cq_state& c = cqs.at(cqn);
        if (c.dead) {
            return;
        }
        const uint32_t mask = (1u << c.log) - 1;
        e.flags =
            static_cast<uint8_t>((e.flags & 0x7F) | ((((c.producer >> c.log) & 1) ? 0 : 1) << 7));
        if (!dma_write(c.ring + (c.producer & mask) * sizeof(e), &e, sizeof(e))) {
            c.dead = true;
            c.held = false;
            post_event(hsi::EVENT_CQ_ERROR, cqn, hsi::CQ_ERR_DMA_ACCESS);
            return;
        }
        ++c.producer;
        if (c.held) {
            moderation_check(cqn);
            return;
        }
        const bool match = c.arm == hsi::CQ_ARM_ANY ||
                           (c.arm == hsi::CQ_ARM_SOLICITED &&
                            ((e.flags & hsi::CQE_FLAG_SOLICITED) || e.status != hsi::CQE_OK));
        if (match) {
            c.arm = hsi::CQ_ARM_NONE;
            fire(cqn);
        }
    }

    // EVENT_CQ_COMPLETION now, or held by moderation from now on.
    void fire(uint32_t cqn) {
        cq_state& c = cqs.at(cqn);
        if (c.mod_count == 0 && c.mod_period_us == 0) {
            post_event(hsi::EVENT_CQ_COMPLETION, cqn);
            return;
        }
        c.held = true;
        const uint64_t id = ++m_hold_ids;
        c.hold_id = id;
        if (c.mod_period_us != 0) {
            const sc_core::sc_time period(c.mod_period_us, sc_core::SC_US);
            sc_core::sc_spawn([this, cqn, id, period] {
                sc_core::wait(period);
                auto it = cqs.find(cqn);
                if (it != cqs.end() && it->second.held && it->second.hold_id == id) {
                    it->second.held = false;
                    post_event(hsi::EVENT_CQ_COMPLETION, cqn);
                }
            });
        }
        moderation_check(cqn);
    }
    void moderation_check(uint32_t cqn) {
        cq_state& c = cqs.at(cqn);
        const bool off = c.mod_count == 0 && c.mod_period_us == 0;
        if (c.held && (off || (c.mod_count != 0 && c.producer - c.consumer >= c.mod_count))) {
            c.held = false;
            post_event(hsi::EVENT_CQ_COMPLETION, cqn);
        }
    }

private:
    void bar_b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time&) {
        const uint64_t off = gp.get_address();
        const uint8_t* p = gp.get_data_ptr();
        if (!gp.is_write()) {
            std::memset(gp.get_data_ptr(), 0, gp.get_data_length());
            gp.set_response_status(tlm::TLM_OK_RESPONSE);
            return;
        }
        mmio_write w{off, std::vector<uint8_t>(p, p + gp.get_data_length()),
                     sc_core::sc_time_stamp()};
        writes.push_back(w);
        const uint64_t v = w.value();
        if (off == hsi::REG_CMDQ_BASE) {
            cmdq_base = v;
        } else if (off == hsi::REG_CMDQ_LOG_SIZE) {
            cmdq_log = static_cast<uint32_t>(v);
        } else if (off == hsi::REG_EQ_BASE) {
            eq_base = v;
        } else if (off == hsi::REG_EQ_LOG_SIZE) {
            eq_log = static_cast<uint32_t>(v);
        } else if (off == hsi::REG_EQ_CONSUMER) {
            eq_consumer = static_cast<uint32_t>(v);
            eq_armed = true;
            if (eq_consumer != eq_producer && (msix[0].control & 1) == 0) {
                // Entries the driver has not seen yet: interrupt again right away.
                eq_armed = false;
                ++msis;
                dma_write(msix[0].addr, &msix[0].data, 4);
            }
        } else if (off == hsi::REG_GSI_SQ_BASE) {
            m_gsi_sq_base = v;
        } else if (off == hsi::REG_GSI_SQ_LOG_SIZE) {
            m_gsi_sq_log = static_cast<uint32_t>(v);
            m_gsi_sq_producer = m_gsi_sq_consumer = 0;
        } else if (off == hsi::REG_GSI_SQ_DOORBELL) {
            m_gsi_sq_producer = static_cast<uint32_t>(v);
            m_gsi_db_event.notify(sc_core::SC_ZERO_TIME);
        } else if (off == hsi::REG_GSI_RQ_BASE) {
            m_gsi_rq_base = v;
        } else if (off == hsi::REG_GSI_RQ_LOG_SIZE) {
            m_gsi_rq_log = static_cast<uint32_t>(v);
            m_gsi_rq_producer = m_gsi_rq_consumer = 0;
        } else if (off == hsi::REG_GSI_RQ_CONSUMER) {
            m_gsi_rq_consumer = static_cast<uint32_t>(v);
        } else if (off == hsi::REG_CMDQ_DOORBELL) {
            m_cmd_db = static_cast<uint32_t>(v);
            m_db_event.notify(sc_core::SC_ZERO_TIME);
        } else if (off == hsi::REG_CQ_DOORBELL) {
            const uint32_t cqn = v & 0xFFFFFF;
            auto it = cqs.find(cqn);
            if (it != cqs.end()) {
                it->second.consumer = static_cast<uint32_t>(v >> 32);
                const uint8_t arm = (v >> 24) & 3;
                if (arm != hsi::CQ_ARM_NONE) {
                    it->second.arm = arm;
                    // Armed behind CQEs already written: notify now (like a real NIC).
                    if (arm == hsi::CQ_ARM_ANY && it->second.producer != it->second.consumer &&
                        !it->second.dead) {
                        it->second.arm = hsi::CQ_ARM_NONE;
                        fire(cqn);
                    }
                }
            }
        } else if (off >= hsi::REG_MSIX_TABLE && off < hsi::REG_MSIX_TABLE + 16 * 64) {
            const uint32_t vec = static_cast<uint32_t>((off - hsi::REG_MSIX_TABLE) / 16);
            const uint32_t field = static_cast<uint32_t>((off - hsi::REG_MSIX_TABLE) % 16);
            if (field == 0) {
                msix[vec].addr = v;
            } else if (field == 8) {
                msix[vec].data = static_cast<uint32_t>(v);
            } else if (field == 12) {
                msix[vec].control = static_cast<uint32_t>(v);
            }
        }
        gp.set_response_status(tlm::TLM_OK_RESPONSE);
    }

    void cmd_thread() {
        for (;;) {
            while (m_cmd_consumer == m_cmd_db) {
                sc_core::wait(m_db_event);
            }
            sc_core::wait(sc_core::sc_time(cmd_ns, sc_core::SC_NS));
            const uint32_t mask = (1u << cmdq_log) - 1;
            const uint64_t addr = cmdq_base + (m_cmd_consumer & mask) * sizeof(hsi::cmd_slot);
            hsi::cmd_slot c{};
            m_mem.read(addr, &c, sizeof(c));
            ++m_cmd_consumer;
            commands.push_back(c);
            if (!answer) {
                continue;
            }
            uint8_t st = hsi::CMD_OK;
            auto f = fail.find(c.opcode);
            if (f != fail.end()) {
                st = f->second;
            } else {
                st = execute(c);
            }
            if (c.opcode == hsi::CMD_QUERY_DEVICE && st == hsi::CMD_OK) {
                hsi::cmd_query_device q{};
                q.caps = caps;
                q.moderation_timers = moderation_timers;
                dma_write(addr + offsetof(hsi::cmd_slot, u), &q, sizeof(q));
            }
            const uint8_t back[2] = {st, 1};
            dma_write(addr + hsi::CMD_STATUS_OFFSET, back, 2);
            post_event(hsi::EVENT_CMD_DONE, c.token);
        }
    }

    uint8_t execute(const hsi::cmd_slot& c) {
        switch (c.opcode) {
            case hsi::CMD_CREATE_CQ:
                cqs[c.u.cq.cqn] = cq_state{c.u.cq.ring_addr, c.u.cq.log_depth};
                break;
            case hsi::CMD_DESTROY_CQ:
                if (cqs.count(c.u.obj.handle) != 0 && cqs.at(c.u.obj.handle).timer) {
                    --timers_in_use;
                }
                cqs.erase(c.u.obj.handle);
                break;
            case hsi::CMD_MODIFY_CQ: {
                if ((caps & hsi::DEVICE_CAP_CQ_MODERATION) == 0) {
                    return hsi::CMD_BAD_OPCODE;
                }
                auto it = cqs.find(c.u.modify_cq.cqn);
                if (it == cqs.end()) {
                    return hsi::CMD_BAD_HANDLE;
                }
                cq_state& q = it->second;
                if (c.u.modify_cq.period_us != 0 && !q.timer) {
                    if (timers_in_use >= moderation_timers) {
                        return hsi::CMD_NO_RESOURCES;
                    }
                    q.timer = true;
                    ++timers_in_use;
                } else if (c.u.modify_cq.period_us == 0 && q.timer) {
                    q.timer = false;
                    --timers_in_use;
                }
                q.mod_count = c.u.modify_cq.count;
                q.mod_period_us = c.u.modify_cq.period_us;
                moderation_check(c.u.modify_cq.cqn);
                break;
            }
            case hsi::CMD_CREATE_QP:
                qps[c.u.qp.qpn].create = c.u.qp;
                break;
            case hsi::CMD_MODIFY_QP:
                qps[c.u.modify_qp.qpn].last_modify = c.u.modify_qp;
                qps[c.u.modify_qp.qpn].states.push_back(c.u.modify_qp.state);
                break;
            default:
                break;
        }
        return hsi::CMD_OK;
    }

    void gsi_send_thread();
    void gsi_recv_thread();

    fabric::host_memory& m_mem;
    uint64_t m_hold_ids = 0;  // moderation holds (a period timer releases only its own)
    uint32_t m_cmd_db = 0;
    uint32_t m_cmd_consumer = 0;
    sc_core::sc_event m_db_event;
    // GSI registers and ring state.
    uint64_t m_gsi_sq_base = 0, m_gsi_rq_base = 0;
    uint32_t m_gsi_sq_log = 0, m_gsi_rq_log = 0;
    uint32_t m_gsi_sq_producer = 0, m_gsi_sq_consumer = 0;
    uint32_t m_gsi_rq_producer = 0, m_gsi_rq_consumer = 0;
    sc_core::sc_event m_gsi_db_event, m_gsi_rx_event;
    std::deque<std::pair<hsi::gsi_recv_header, std::vector<uint8_t>>> m_gsi_rx;
};

// The wire between the fake NICs of a bench, at GSI-slot level: a MAD slot goes to the NIC with
// the slot's destination MAC (or every other NIC for broadcast) whose IP is the destination IP;
// an ARP frame to the NIC(s) its Ethernet destination names. Each arrives gsi_ns (the sender's)
// later. Replaces the in-simulator CM service the fake-NIC benches used before.
class fake_network {
public:
    // Gives `nic` its port addresses and puts it on this network.
    void attach(fake_nic& nic, const mac_address& mac, uint32_t ip) {
        nic.network = this;
        nic.mac = mac;
        nic.ip = ip;
        if (std::find(m_nics.begin(), m_nics.end(), &nic) == m_nics.end()) {
            m_nics.push_back(&nic);
        }
    }
    // A frame leaving `from`: copies of it arrive at the addressed NICs after from.gsi_ns.
    void transmit(fake_nic& from, const hsi::gsi_recv_header& h, const std::vector<uint8_t>& body) {
        ++frames;
        if (from.gsi_drop_all) {
            return;
        }
        const bool broadcast = std::memcmp(h.dst_mac, BROADCAST_MAC.data(), 6) == 0;
        for (fake_nic* n : m_nics) {
            if (n == &from || n->gsi_drop_all ||
                (!broadcast && std::memcmp(h.dst_mac, n->mac.data(), 6) != 0)) {
                continue;
            }
            const double ns = from.gsi_ns;
            sc_core::sc_spawn([n, h, body, ns] {
                sc_core::wait(sc_core::sc_time(ns, sc_core::SC_NS));
                n->gsi_arrive(h, body);
            });
        }
    }
    uint64_t frames = 0;  // frames put on the network

private:
    std::vector<fake_nic*> m_nics;
};

inline void fake_nic::gsi_send_thread() {
    std::vector<uint8_t> slot(hsi::GSI_SLOT_BYTES);
    for (;;) {
        while (m_gsi_sq_consumer == m_gsi_sq_producer || m_gsi_sq_base == 0) {
            sc_core::wait(m_gsi_db_event);
        }
        const uint64_t addr =
            m_gsi_sq_base + static_cast<uint64_t>(m_gsi_sq_consumer & ((1u << m_gsi_sq_log) - 1)) *
                                hsi::GSI_SLOT_BYTES;
        ++m_gsi_sq_consumer;
        m_mem.read(addr, slot.data(), slot.size());
        gsi_slot_record r;
        std::memcpy(&r.header, slot.data(), sizeof(r.header));
        const uint8_t* body = slot.data() + sizeof(r.header);
        const size_t len = r.header.kind == hsi::GSI_KIND_ARP
                               ? std::min<size_t>(r.header.frame_bytes, hsi::GSI_MAX_RAW_FRAME)
                               : hsi::MAD_BYTES;
        r.body.assign(body, body + len);
        r.at = sc_core::sc_time_stamp();
        gsi_sent.push_back(r);
        hsi::gsi_recv_header h{};
        std::memcpy(h.dst_mac, r.header.dst_mac, 6);
        std::memcpy(h.src_mac, r.header.src_mac, 6);
        h.kind = r.header.kind;
        if (r.is_arp()) {
            std::memcpy(h.dst_mac, r.body.data(), 6);  // the frame's own Ethernet header
            std::memcpy(h.src_mac, r.body.data() + 6, 6);
            h.frame_bytes = static_cast<uint16_t>(r.body.size());
        } else {
            h.src_ip = r.header.src_ip;
            h.dst_ip = r.header.dst_ip;
            h.src_qp = hsi::GSI_QPN;
            h.qkey = r.header.qkey;
            h.pkey = r.header.pkey;
            h.udp_src_port = r.header.udp_src_port;
        }
        if (network != nullptr) {
            network->transmit(*this, h, r.body);
        }
        const uint8_t done = hsi::GSI_SENT;
        dma_write(addr + hsi::GSI_SEND_DONE_OFFSET, &done, 1);
    }
}

inline void fake_nic::gsi_recv_thread() {
    std::vector<uint8_t> slot(hsi::GSI_SLOT_BYTES);
    for (;;) {
        while (m_gsi_rx.empty()) {
            sc_core::wait(m_gsi_rx_event);
        }
        auto [h, body] = std::move(m_gsi_rx.front());
        m_gsi_rx.pop_front();
        if (h.kind == hsi::GSI_KIND_ARP) {
            arp_packet a;
            if (!decode_arp(body.data(), body.size(), a)) {
                ++gsi_not_for_us;
                continue;
            }
            const bool for_ip = ip != 0 && a.tpa == ip;
            if (!for_ip && !(a.oper == arp_packet::REPLY && a.tha == mac)) {
                ++gsi_not_for_us;
                continue;
            }
            if (a.oper == arp_packet::REQUEST && for_ip && network != nullptr) {
                // Hardware responder: answer with this port's MAC.
                arp_packet reply;
                reply.eth_dst = a.sha;
                reply.eth_src = mac;
                reply.oper = arp_packet::REPLY;
                reply.sha = mac;
                reply.spa = ip;
                reply.tha = a.sha;
                reply.tpa = a.spa;
                hsi::gsi_recv_header rh{};
                std::memcpy(rh.dst_mac, a.sha.data(), 6);
                std::memcpy(rh.src_mac, mac.data(), 6);
                rh.kind = hsi::GSI_KIND_ARP;
                const auto frame = encode_arp(reply);
                rh.frame_bytes = static_cast<uint16_t>(frame.size());
                ++arp_replies;
                network->transmit(*this, rh, frame);
            }
        } else if (h.dst_ip != ip) {
            ++gsi_not_for_us;
            continue;
        }
        const uint32_t size = 1u << m_gsi_rq_log;
        if (m_gsi_rq_base == 0 || m_gsi_rq_producer - m_gsi_rq_consumer >= size) {
            ++gsi_no_buffer;
            continue;
        }
        h.flags = static_cast<uint8_t>((((m_gsi_rq_producer >> m_gsi_rq_log) & 1) ? 0 : 1) << 7);
        std::fill(slot.begin(), slot.end(), 0);
        std::memcpy(slot.data(), &h, sizeof(h));
        std::memcpy(slot.data() + sizeof(h), body.data(), std::min<size_t>(body.size(), 256));
        dma_write(m_gsi_rq_base +
                      static_cast<uint64_t>(m_gsi_rq_producer & (size - 1)) * hsi::GSI_SLOT_BYTES,
                  slot.data(), hsi::GSI_SLOT_BYTES);
        ++m_gsi_rq_producer;
        ++gsi_received;
        post_event(hsi::EVENT_GSI_RECEIVE, m_gsi_rq_producer);
    }
}

// One host with its PCIe link, a fake NIC and the driver's host_system.
struct node {
    fabric::host_memory mem;
    fabric::pcie_link pcie;
    host_system host;
    fake_nic nic;
    node(const std::string& name, const host_config& cfg, hw::sim_context& ctx)
        : mem((name + "_mem").c_str(), sc_core::sc_time(90, sc_core::SC_NS))
        , pcie((name + "_pcie").c_str(), fabric::pcie_config{}, "", ctx)
        , host((name + "_host").c_str(), cfg, mem, pcie, ctx)
        , nic((name + "_nic").c_str(), mem) {
        pcie.mem_out.bind(mem.dma_in);
        pcie.bar_out.bind(nic.bar);
        nic.dma.bind(pcie.dev_dma_in);
    }
};

inline adapter_params params_for(uint32_t node_id) {
    adapter_params p;
    p.node_id = node_id;
    p.mac = {0x02, 0, 0, 0, 0, static_cast<uint8_t>(node_id)};
    p.ip = 0x0A000000u | node_id;  // 10.0.0.<id>
    p.limits.max_qps = 64;
    p.limits.max_cqs = 64;
    p.limits.max_pds = 8;
    p.limits.max_srqs = 8;
    p.limits.max_keys = 64;
    // The driver tests time CM retries and give-ups: short timers (200 us x 4 retries, the
    // driver's defaults before they became rdma_cm's 4.3 s x 15) keep them to microseconds.
    p.cm_timeout_ns = 200e3;
    p.cm_retries = 4;
    return p;
}

// Puts the node's fake NIC on `net` with the addresses of `p`, then opens the adapter.
inline NTSTATUS open_on(fake_network& net, node& n, const adapter_params& p, NDK_ADAPTER** out) {
    net.attach(n.nic, p.mac, p.ip);
    return open_adapter(n.host, p, out);
}

// Runs `body` in an SC_THREAD, then stops the simulation.
inline void run(std::function<void()> body) {
    sc_core::sc_spawn([body] {
        body();
        sc_core::sc_stop();
    });
    sc_core::sc_start();
}

// Waits (simulated time) until `cond` holds or `ns` pass; returns cond().
inline bool wait_until(const std::function<bool()>& cond, double ns = 1e6) {
    const sc_core::sc_time end = sc_core::sc_time_stamp() + sc_core::sc_time(ns, sc_core::SC_NS);
    while (!cond() && sc_core::sc_time_stamp() < end) {
        sc_core::wait(sc_core::sc_time(50, sc_core::SC_NS));
    }
    return cond();
}

// Lets posted MMIO writes (doorbells) reach the NIC: a PCIe one-way latency and then some.
inline void settle() {
    sc_core::wait(sc_core::sc_time(1, sc_core::SC_US));
}

// Callback recorders (NDK callbacks are C function pointers with a context).
struct create_log {
    int calls = 0;
    NTSTATUS status = STATUS_PENDING;
    NDK_OBJECT_HEADER* object = nullptr;
    static VOID fn(PVOID ctx, NTSTATUS st, NDK_OBJECT_HEADER* obj) {
        auto* l = static_cast<create_log*>(ctx);
        ++l->calls;
        l->status = st;
        l->object = obj;
    }
};
struct request_log {
    int calls = 0;
    NTSTATUS status = STATUS_PENDING;
    static VOID fn(PVOID ctx, NTSTATUS st) {
        auto* l = static_cast<request_log*>(ctx);
        ++l->calls;
        l->status = st;
    }
};
struct close_log {
    int calls = 0;
    std::vector<std::string>* order = nullptr;
    std::string name;
    static VOID fn(PVOID ctx) {
        auto* l = static_cast<close_log*>(ctx);
        ++l->calls;
        if (l->order != nullptr) {
            l->order->push_back(l->name);
        }
    }
};
struct notify_log {
    int calls = 0;
    NTSTATUS status = STATUS_PENDING;
    static VOID fn(PVOID ctx, NTSTATUS st) {
        auto* l = static_cast<notify_log*>(ctx);
        ++l->calls;
        l->status = st;
    }
};

// ---------------------------------------------------------------------------------------------
// Shared by the per-family tests
// ---------------------------------------------------------------------------------------------

// Synchronous creation (host_config::async_create = false): Create* return the final status.
inline host_config sync_cfg() {
    host_config c;
    c.async_create = false;
    return c;
}
// Asynchronous creation (the default): Create* return STATUS_PENDING and complete from the ISR.
inline host_config async_cfg() {
    return host_config{};
}

inline SOCKADDR_IN addr(uint32_t ip, uint16_t port) {
    SOCKADDR_IN a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(ip);
    return a;
}

// A little-endian field of a byte image (WQE, ring slot).
template <typename T>
T at(const std::vector<uint8_t>& b, size_t off) {
    T v{};
    std::memcpy(&v, b.data() + off, sizeof(T));
    return v;
}

// The object of a create call in either mode: `st` is what the call returned; PENDING waits for
// the create completion recorded in `log`. Null (and a gtest failure) if the creation failed.
// `out` is the call's out-parameter, read after the call (hence by reference).
template <typename T>
T* created(NTSTATUS st, T*& out, create_log& log) {
    if (st == STATUS_PENDING) {
        if (!wait_until([&] { return log.calls == 1; })) {
            ADD_FAILURE() << "create completion never came";
            return nullptr;
        }
        st = log.status;
        if (st == STATUS_SUCCESS) {
            return reinterpret_cast<T*>(log.object);
        }
    }
    EXPECT_EQ(st, STATUS_SUCCESS) << ntstatus_name(st);
    return st == STATUS_SUCCESS ? out : nullptr;
}

// The final status of a request in either mode (PENDING waits for the completion in `log`).
inline NTSTATUS finished(NTSTATUS st, request_log& log) {
    if (st != STATUS_PENDING) {
        return st;
    }
    if (!wait_until([&] { return log.calls == 1; })) {
        return STATUS_PENDING;
    }
    return log.status;
}

// The fake NIC has no wire: the tests of posting rules mark a QP connected (RTS) the way the
// connector does once CompleteConnect / Accept finished, without a peer.
inline void force_connected(NDK_QP* qp) {
    provider::impl(qp)->state = provider::qp_impl::CONNECTED;
}

// Listener connect events: the last incoming connector and how many arrived.
struct listen_state {
    NDK_CONNECTOR* incoming = nullptr;
    int events = 0;
    static VOID fn(PVOID ctx, NDK_CONNECTOR* c) {
        auto* s = static_cast<listen_state*>(ctx);
        s->incoming = c;
        ++s->events;
    }
};
struct disc_log {
    int calls = 0;
    static VOID fn(PVOID ctx) { ++static_cast<disc_log*>(ctx)->calls; }
};

// Adapter + PD + one CQ (armed notifications go to `notes`) + one QP, in either creation mode.
struct endpoint {
    NDK_ADAPTER* adapter = nullptr;
    NDK_PD* pd = nullptr;
    NDK_CQ* cq = nullptr;
    NDK_QP* qp = nullptr;
    notify_log notes;

    // Puts the node's fake NIC on `net` with the addresses of `p`, then opens the adapter.
    void open(node& n, fake_network& net, const adapter_params& p, ULONG inline_size = 64,
              ULONG cq_depth = 64) {
        net.attach(n.nic, p.mac, p.ip);
        ASSERT_EQ(open_adapter(n.host, p, &adapter), STATUS_SUCCESS);
        create_log pl, cl, ql;
        NDK_PD* pd_out = nullptr;
        pd = created(adapter->Dispatch->NdkCreatePd(adapter, create_log::fn, &pl, &pd_out), pd_out,
                     pl);
        ASSERT_NE(pd, nullptr);
        NDK_CQ* cq_out = nullptr;
        cq = created(adapter->Dispatch->NdkCreateCq(adapter, cq_depth, notify_log::fn, &notes,
                                                    nullptr, create_log::fn, &cl, &cq_out),
                     cq_out, cl);
        ASSERT_NE(cq, nullptr);
        NDK_QP* qp_out = nullptr;
        qp = created(pd->Dispatch->NdkCreateQp(pd, cq, cq, this, 16, 16, 4, 4, inline_size,
                                               create_log::fn, &ql, &qp_out),
                     qp_out, ql);
        ASSERT_NE(qp, nullptr);
    }
    uint32_t qpn() const { return get_qp_number(qp); }
};

// Host memory the driver and the NIC can both see, with an MDL over it.
struct host_buffer {
    host_system* host = nullptr;
    uint8_t* data = nullptr;
    MDL* mdl = nullptr;
    host_buffer(host_system& h, size_t bytes, size_t mdl_off = 0, size_t mdl_len = 0)
        : host(&h)
        , data(static_cast<uint8_t*>(h.alloc(bytes))) {
        mdl = h.build_mdl(data + mdl_off, mdl_len != 0 ? mdl_len : bytes - mdl_off);
    }
    ~host_buffer() {
        host->free_mdl(mdl);
        host->free(data);
    }
    host_buffer(const host_buffer&) = delete;
    host_buffer& operator=(const host_buffer&) = delete;
};

// A CQE as the NIC would write it for `qp`.
inline hsi::cqe make_cqe(uint32_t qpn, uint16_t wqe_index, uint8_t opcode,
                         uint8_t status = hsi::CQE_OK) {
    hsi::cqe e{};
    e.qpn = qpn;
    e.wqe_index = wqe_index;
    e.opcode = opcode;
    e.status = status;
    return e;
}

}  // namespace rnic::ndk::test
