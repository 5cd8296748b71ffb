// SPDX-License-Identifier: Apache-2.0
// Provider driver: connectors, listeners and shared endpoints, and the CM agent behind them. The
// exchange is IB CM's (IBA 12) with RoCE's IP addressing: REQ (caller data, QPN, PSN, IRD/ORD)
// -> REP or REJ (callee data) -> RTU; DREQ -> DREP for a graceful disconnect; MRA when the
// consumer has not answered a REQ yet. Each message is a 256 B MAD (cm_mad.h) that the NIC's
// GSI sends as a RoCEv2 UD frame to QP1 (hw/gsi), unicast to the next hop's MAC: the peer's,
// or the default gateway's for a peer outside the adapter's subnet, resolved by ARP through the
// host's neighbour cache (ndk_shim/host/neighbor_cache.h; the ARP frames use the GSI rings
// too). QPs move INIT -> RTR -> RTS by CMD_MODIFY_QP with the peer's QPN, PSN, IP, MAC, the
// path MTU and the retry settings.
//
// Active:  Connect -> [ARP request ... reply] -> REQ ... REP -> Connect completes;
//          CompleteConnect -> RTR/RTS -> RTU, CompleteConnect completes (it is due within
//          cm_timeout_ns x (cm_retries + 2) of the REP, else a REJ goes out and a later
//          CompleteConnect returns STATUS_IO_TIMEOUT). No ARP answer after
//          the host's retries: Connect completes with STATUS_HOST_UNREACHABLE. Outside the
//          subnet without a gateway: STATUS_NETWORK_UNREACHABLE inline.
// Passive: REQ -> listener's connect event (new connector); Accept -> RTR/RTS -> REP ... RTU
//          -> Accept completes. Reject -> REJ (synchronous).
// Loss: QP1 is unreliable. REQ, REP and DREQ are sent again every cm_timeout_ns until answered,
// cm_retries times, then the request fails with STATUS_IO_TIMEOUT (a REJ "timeout" tells the
// peer). Duplicates are answered: a REQ being considered by an MRA, a rejected REQ by the same
// REJ, a REP after CompleteConnect by the RTU again, a DREQ by a DREP.
#include <algorithm>
#include <cstring>

#include "ndk_shim/provider/provider.h"
#include "ndk_shim/status_map.h"

namespace rnic::ndk::provider {

namespace {
// Initial PSN of a QP's connection: deterministic, differs per node, QP and connection.
uint32_t initial_psn(uint32_t node, uint32_t qpn, uint64_t conn) {
    uint64_t x = (static_cast<uint64_t>(node) << 40) ^ (static_cast<uint64_t>(qpn) << 16) ^ conn;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return static_cast<uint32_t>(x & 0xFFFFFF);
}

// INIT -> RTR -> RTS for `qp` towards the peer described by `peer` (its REQ or REP).
std::vector<hsi::cmd_slot> connect_commands(adapter_impl* ad, qp_impl* qp, const cm_message& peer,
                                            uint32_t my_psn, uint32_t ord) {
    hsi::cmd_slot rtr{};
    rtr.opcode = hsi::CMD_MODIFY_QP;
    auto& m = rtr.u.modify_qp;
    m.qpn = qp->qpn;
    m.state = hsi::QPS_RTR;
    m.pmtu_log = static_cast<uint8_t>(path_mtu_log(ad->params.default_mtu));
    m.retry_count = ad->params.retry_count;
    m.rnr_retry = ad->params.rnr_retry;
    m.dest_qpn = peer.qpn;
    m.sq_psn = my_psn;
    m.rq_psn = peer.psn;
    m.dest_ip = peer.src_ip;
    std::memcpy(m.dest_mac, peer.mac.data(), 6);
    m.timeout_log = ad->params.timeout_log;
    m.max_rd_atomic = static_cast<uint8_t>(ord);
    hsi::cmd_slot rts = rtr;
    rts.u.modify_qp.state = hsi::QPS_RTS;
    return {rtr, rts};
}

NTSTATUS check_private_data(const void* data, ULONG len, ULONG max) {
    if (len > max || (len > 0 && data == nullptr)) {
        return STATUS_INVALID_PARAMETER;
    }
    return STATUS_SUCCESS;
}

std::vector<uint8_t> copy_data(const void* data, ULONG len) {
    const auto* p = static_cast<const uint8_t*>(data);
    return len > 0 ? std::vector<uint8_t>(p, p + len) : std::vector<uint8_t>{};
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Adapter side: CM transport (GSI rings)
// ---------------------------------------------------------------------------------------------
namespace {
uint8_t* gsi_slot(uint8_t* ring, uint32_t log, uint32_t index) {
    return ring + static_cast<size_t>(index & ((1u << log) - 1)) * hsi::GSI_SLOT_BYTES;
}

void arm_timer(connector_impl* c, double ns) {
    ++c->busy;
    c->timer = c->adapter->host.queue_dpc(
        [c] {
            c->timer = 0;
            c->on_timeout();
            --c->busy;
            c->adapter->progress(c);
        },
        ns);
}
}  // namespace

uint32_t adapter_impl::new_conn_id() {
    if (next_conn == 0) {
        next_conn = (params.node_id & 0xFFF) << 20;  // IDs differ per node (easier to read)
    }
    if (++next_conn == 0) {
        ++next_conn;
    }
    return next_conn;
}

void adapter_impl::gsi_init() {
    const size_t bytes = (size_t{1} << params.gsi_log_size) * hsi::GSI_SLOT_BYTES;
    gsi_sq = static_cast<uint8_t*>(host.alloc(bytes, true));
    gsi_rq = static_cast<uint8_t*>(host.alloc(bytes, true));
    std::memset(gsi_sq, 0, bytes);
    std::memset(gsi_rq, 0, bytes);
    gsi_sq_producer = gsi_sq_consumer = gsi_rq_consumer = 0;
    host.mmio_write64(hsi::REG_GSI_SQ_BASE, host.phys(gsi_sq));
    host.mmio_write64(hsi::REG_GSI_SQ_LOG_SIZE, params.gsi_log_size);
    host.mmio_write64(hsi::REG_GSI_RQ_BASE, host.phys(gsi_rq));
    host.mmio_write64(hsi::REG_GSI_RQ_LOG_SIZE, params.gsi_log_size);
    host.mmio_write32(hsi::REG_GSI_RQ_CONSUMER, 0);
}

void adapter_impl::gsi_release() {
    if (gsi_sq == nullptr) {
        return;
    }
    host.mmio_write64(hsi::REG_GSI_RQ_BASE, 0);  // the NIC stops writing into the ring
    host.mmio_write64(hsi::REG_GSI_SQ_BASE, 0);
    host.free(gsi_sq);
    host.free(gsi_rq);
    gsi_sq = gsi_rq = nullptr;
}

bool adapter_impl::take_cm_id() {
    if (cm_ids_in_use >= cm_id_entries(host.config(), params.limits.max_qps)) {
        return false;
    }
    ++cm_ids_in_use;
    return true;
}

void adapter_impl::release_cm_id() {
    --cm_ids_in_use;
}

uint8_t* adapter_impl::gsi_send_slot() {
    const uint32_t size = 1u << params.gsi_log_size;
    // Reclaim the slots the NIC has sent (their done byte, written in ring order).
    while (gsi_sq_consumer != gsi_sq_producer) {
        volatile const uint8_t* done =
            gsi_slot(gsi_sq, params.gsi_log_size, gsi_sq_consumer) + hsi::GSI_SEND_DONE_OFFSET;
        if (*done == 0) {
            break;
        }
        ++gsi_sq_consumer;
    }
    if (gsi_sq_producer - gsi_sq_consumer >= size) {
        ++cm_stats.send_ring_full;  // dropped like a lost frame: the timers recover
        return nullptr;
    }
    return gsi_slot(gsi_sq, params.gsi_log_size, gsi_sq_producer);
}

void adapter_impl::arp_send(const arp_packet& a) {
    uint8_t* slot = gsi_send_slot();
    if (slot == nullptr) {
        return;  // like a lost request: the neighbour cache asks again
    }
    const std::vector<uint8_t> frame = encode_arp(a);
    hsi::gsi_send_header h{};
    h.kind = hsi::GSI_KIND_ARP;
    h.frame_bytes = static_cast<uint16_t>(frame.size());
    std::memcpy(slot + sizeof(h), frame.data(), frame.size());
    std::memcpy(slot, &h, sizeof(h));  // done = 0: the NIC owns the slot
    ++gsi_sq_producer;
    ++cm_stats.arp_sent;
    host.cpu(host.config().post_ns);  // build the frame
    host.mmio_write32(hsi::REG_GSI_SQ_DOORBELL, gsi_sq_producer);
}

void adapter_impl::arp_receive(const arp_packet& a) {
    if (a.spa == params.ip && a.sha != params.mac) {
        dad_conflict = true;  // another node uses our address (RFC 5227 conflict)
        return;
    }
    // RFC 826: update the sender's entry; create it when the frame was for us.
    host.neighbors().learn(a.spa, a.sha, a.tpa == params.ip);
}

bool adapter_impl::address_in_use() {
    const uint32_t probes = host.config().dad_probes;
    if (probes == 0 || params.ip == 0) {
        return false;
    }
    const double gap_ns = host.config().arp_timeout_ns;
    for (uint32_t i = 0; i < probes && !dad_conflict; ++i) {
        arp_packet probe;  // RFC 5227 probe: no sender IP, our address as the target
        probe.eth_dst = BROADCAST_MAC;
        probe.eth_src = params.mac;
        probe.oper = arp_packet::REQUEST;
        probe.sha = params.mac;
        probe.spa = 0;
        probe.tpa = params.ip;
        arp_send(probe);
        // Listen for an answer until the next probe (answers arrive through the ISR).
        const sc_core::sc_time end =
            sc_core::sc_time_stamp() + sc_core::sc_time(gap_ns, sc_core::SC_NS);
        while (!dad_conflict && sc_core::sc_time_stamp() < end) {
            host.wait_for_dma((end - sc_core::sc_time_stamp()).to_seconds() * 1e9);
        }
    }
    return dad_conflict;
}

void adapter_impl::cm_send(cm_message m, const std::array<uint8_t, 6>& dst_mac) {
    m.mac = params.mac;
    m.pmtu_log = static_cast<uint8_t>(path_mtu_log(params.default_mtu));
    m.retry_count = params.retry_count;
    m.rnr_retry = params.rnr_retry;
    m.timeout_log = params.timeout_log;
    uint8_t* slot = gsi_send_slot();
    if (slot == nullptr) {
        return;  // dropped like a lost frame: the timers recover
    }
    hsi::gsi_send_header h{};
    std::memcpy(h.dst_mac, dst_mac.data(), 6);
    std::memcpy(h.src_mac, params.mac.data(), 6);
    h.dst_ip = m.dst_ip;
    h.src_ip = params.ip;
    h.dest_qp = hsi::GSI_QPN;
    h.qkey = hsi::GSI_QKEY;
    h.udp_src_port = static_cast<uint16_t>(0xC000 | (m.src_conn & 0x3FFF));
    h.pkey = 0xFFFF;
    const auto mad = encode_cm_mad(m, (static_cast<uint64_t>(params.node_id) << 48) | ++next_tid);
    std::memcpy(slot + sizeof(h), mad.data(), mad.size());
    std::memcpy(slot, &h, sizeof(h));  // done = 0: the NIC owns the slot
    ++gsi_sq_producer;
    ++cm_stats.mads_sent;
    host.cpu(host.config().post_ns);  // build the MAD
    host.mmio_write32(hsi::REG_GSI_SQ_DOORBELL, gsi_sq_producer);
}

void adapter_impl::gsi_poll() {
    if (gsi_rq == nullptr) {
        return;
    }
    bool took = false;
    for (;;) {
        const uint8_t* slot = gsi_slot(gsi_rq, params.gsi_log_size, gsi_rq_consumer);
        hsi::gsi_recv_header h;
        std::memcpy(&h, slot, sizeof(h));
        const uint8_t phase = ((gsi_rq_consumer >> params.gsi_log_size) & 1) ? 0 : 1;
        if (((h.flags >> 7) & 1) != phase) {
            break;
        }
        std::array<uint8_t, hsi::MAD_BYTES> mad;
        std::memcpy(mad.data(), slot + sizeof(h), mad.size());
        ++gsi_rq_consumer;
        took = true;
        if (h.kind == hsi::GSI_KIND_ARP) {
            arp_packet a;
            if (decode_arp(mad.data(), std::min<size_t>(h.frame_bytes, mad.size()), a)) {
                ++cm_stats.arp_received;
                arp_receive(a);
            } else {
                ++cm_stats.mads_ignored;
            }
            continue;
        }
        cm_message m;
        if (h.src_qp != hsi::GSI_QPN || h.qkey != hsi::GSI_QKEY || !decode_cm_mad(mad.data(), m) ||
            h.dst_ip != params.ip) {
            ++cm_stats.mads_ignored;
            continue;
        }
        if (m.type != cm_message::REQ) {
            m.src_ip = h.src_ip;
            m.dst_ip = h.dst_ip;
        }
        std::memcpy(m.mac.data(), h.src_mac, 6);
        ++cm_stats.mads_received;
        cm_receive(m);
    }
    if (took) {
        host.mmio_write32(hsi::REG_GSI_RQ_CONSUMER, gsi_rq_consumer);  // slots back to the NIC
    }
}

// ---------------------------------------------------------------------------------------------
// connector_impl
// ---------------------------------------------------------------------------------------------
void connector_impl::send(cm_message m) {
    m.src_conn = conn_id;
    m.dst_conn = peer_conn;
    m.src_ip = local_ip;
    m.src_port = local_port;
    m.dst_ip = peer_ip;
    m.dst_port = peer_port;
    adapter->cm_send(m, peer_mac);
}

void connector_impl::send_reliable(cm_message m, double timeout_ns) {
    stop_timer();
    last_sent = m;
    retries_left = adapter->params.cm_retries;
    send(m);
    arm_timer(this, timeout_ns > 0 ? timeout_ns : adapter->params.cm_timeout_ns);
}

void connector_impl::stop_timer() {
    if (timer != 0 && adapter->host.cancel_dpc(timer)) {
        --busy;  // the timeout DPC will not run
    }
    timer = 0;
}

void connector_impl::on_timeout() {
    if (retries_left > 0) {
        --retries_left;
        ++adapter->cm_stats.retransmits;
        send(last_sent);
        arm_timer(this, adapter->params.cm_timeout_ns);
        return;
    }
    ++adapter->cm_stats.timeouts;
    cm_message rej;
    rej.type = cm_message::REJ;
    rej.reject_reason = CM_REJ_TIMEOUT;
    switch (state) {
        case CONNECTING:  // no REP: the peer is silent (or every REQ was lost)
            rej.rejected_msg = 0;
            send(rej);
            state = REJECTED;
            detach_qp(false);
            adapter->conns.erase(conn_id);
            complete_request(STATUS_IO_TIMEOUT);
            break;
        case ACCEPTING:  // no RTU: the peer never called CompleteConnect
            rej.rejected_msg = 1;
            send(rej);
            state = DISCONNECTED;
            detach_qp(true);
            complete_request(STATUS_IO_TIMEOUT);
            break;
        case REPLIED:  // our consumer never called CompleteConnect, and no REJ came
            rej.rejected_msg = 1;
            send(rej);
            state = DISCONNECTED;
            timed_out = true;
            detach_qp(false);  // the QP was never moved past INIT: it may connect again
            break;
        case DISCONNECTING:  // no DREP
            state = DISCONNECTED;
            if (disc_req_cb != nullptr) {
                complete_disconnect(STATUS_IO_TIMEOUT);
            }
            break;
        default:
            break;
    }
}

void connector_impl::complete_request(NTSTATUS status) {
    NDK_FN_REQUEST_COMPLETION cb = req_cb;
    void* ctx = req_ctx;
    req_cb = nullptr;
    awaiting_peer = false;
    if (cb != nullptr) {
        cb(ctx, status);
    }
    --busy;
    adapter->progress(this);
}

void connector_impl::complete_disconnect(NTSTATUS status) {
    NDK_FN_REQUEST_COMPLETION cb = disc_req_cb;
    void* ctx = disc_req_ctx;
    disc_req_cb = nullptr;
    if (cb != nullptr) {
        cb(ctx, status);
    }
    --busy;
    adapter->progress(this);
}

void connector_impl::detach_qp(bool flush) {
    if (qp == nullptr) {
        return;
    }
    if (flush) {
        hsi::cmd_slot c{};
        c.opcode = hsi::CMD_MODIFY_QP;
        c.u.modify_qp.qpn = qp->qpn;
        c.u.modify_qp.state = hsi::QPS_ERROR;
        adapter->commands({c}, false, [](uint8_t) {});
        qp->state = qp_impl::DISCONNECTED;
    } else {
        qp->state = qp_impl::IDLE;  // never connected: the QP may be used again
    }
    qp->connector = nullptr;
    qp = nullptr;
}

void connector_impl::report_disconnect() {
    if (disc_reported || closing) {
        return;
    }
    disc_reported = true;
    if (disc_cb == nullptr && disc_cb_ex == nullptr) {
        return;
    }
    ++busy;
    if (disc_cb_ex != nullptr) {
        disc_cb_ex(disc_ctx, 0);
    } else {
        disc_cb(disc_ctx);
    }
    --busy;
    adapter->progress(this);
}

void connector_impl::on_message(const cm_message& m) {
    switch (m.type) {
        case cm_message::REP:
            if (state == CONNECTING) {
                stop_timer();
                peer = m;
                have_peer = true;
                peer_conn = m.src_conn;
                peer_mac = m.mac;
                state = REPLIED;
                // The peer waits for our RTU through its REP retransmissions, then rejects.
                // CompleteConnect is due before that: one CM timeout after the peer gave up
                // (so its REJ decides when it arrives) the connection times out here too.
                retries_left = 0;
                arm_timer(this, adapter->params.cm_timeout_ns * (adapter->params.cm_retries + 2));
                complete_request(STATUS_SUCCESS);
            } else if (state == CONNECTED) {
                cm_message rtu;  // our RTU was lost: the peer is still waiting for it
                rtu.type = cm_message::RTU;
                send(rtu);
            }
            break;
        case cm_message::MRA:
            if (state == CONNECTING && m.rejected_msg == 0) {
                // The peer got the REQ; its consumer has not answered yet: wait longer.
                stop_timer();
                retries_left = adapter->params.cm_retries;
                arm_timer(this, adapter->params.cm_timeout_ns * adapter->params.cm_mra_factor);
            }
            break;
        case cm_message::REJ:
            if (state == CONNECTING) {
                stop_timer();
                peer = m;
                have_peer = true;
                state = REJECTED;
                detach_qp(false);
                adapter->conns.erase(conn_id);
                complete_request(reject_status(m.reject_reason));
            } else if (state == REQ_RECEIVED) {
                state = DISCONNECTED;  // the requester gave up before Accept / Reject
            } else if (state == ACCEPTING || state == REPLIED || state == COMPLETING) {
                stop_timer();
                state = DISCONNECTED;  // the peer abandoned the connection
                detach_qp(true);
                if (awaiting_peer) {
                    complete_request(STATUS_CONNECTION_ABORTED);
                }
            }
            break;
        case cm_message::RTU:
            if (state == ACCEPTING && awaiting_peer) {
                stop_timer();
                state = CONNECTED;
                if (qp != nullptr) {
                    qp->state = qp_impl::CONNECTED;
                }
                complete_request(STATUS_SUCCESS);
            }
            break;
        case cm_message::DREQ: {
            cm_message rep;
            rep.type = cm_message::DREP;
            send(rep);  // also for a retransmitted DREQ whose DREP was lost
            if (state == CONNECTED) {
                state = PEER_DISCONNECTED;
                report_disconnect();  // reported once; no flush (ndkpi.md 6)
            } else if (state == REQ_RECEIVED || state == REPLIED) {
                state = DISCONNECTED;  // abandoned before it was accepted / completed
                detach_qp(false);
            } else if (state == ACCEPTING && awaiting_peer) {
                // A peer sends DREQ only from the established state, so it had our REP and sent
                // an RTU that was lost: the connection was up (its data may have flowed; a real
                // HCA's first packet on the QP, IB_EVENT_COMM_EST, says the same). Accept
                // completes, then the peer's disconnect is reported, as Linux's CM moves
                // REP_SENT to DREQ_RCVD (drivers/infiniband/core/cm.c, cm_dreq_handler).
                stop_timer();
                state = PEER_DISCONNECTED;
                if (qp != nullptr) {
                    qp->state = qp_impl::CONNECTED;
                }
                complete_request(STATUS_SUCCESS);
                report_disconnect();
            }
            break;
        }
        case cm_message::DREP:
            if (state == DISCONNECTING) {
                stop_timer();
                state = DISCONNECTED;
                complete_disconnect(STATUS_SUCCESS);
            }
            break;
        case cm_message::REQ:
            break;
    }
}

void connector_impl::cancel() {
    adapter_impl* ad = adapter;
    stop_timer();
    const bool req_sent = !resolving;
    if (resolving) {
        ad->host.neighbors().cancel(resolve_token);  // no REQ went out: nobody to tell
        resolving = false;
        resolve_token = 0;
    }
    // Tell the peer, unless it already knows.
    cm_message m;
    m.type = cm_message::REJ;
    m.reject_reason = CM_REJ_STALE_CONN;
    switch (state) {
        case REQ_RECEIVED:
            m.reject_reason = CM_REJ_CONSUMER;
            send(m);
            break;
        case CONNECTING:
            if (req_sent) {
                send(m);
            }
            break;
        case REPLIED:
        case COMPLETING:
        case ACCEPTING:
            m.rejected_msg = passive ? 1 : 2;
            send(m);
            break;
        case CONNECTED:
            m.type = cm_message::DREQ;
            m.qpn = peer.qpn;
            send(m);  // closing: one try, no answer awaited
            break;
        default:
            break;
    }
    const bool connected_qp = state == CONNECTED || state == ACCEPTING || state == COMPLETING ||
                              state == PEER_DISCONNECTED;
    detach_qp(connected_qp);
    ad->conns.erase(conn_id);
    // Requests waiting for the peer will not hear from it any more: cancel them from a DPC
    // (never call back from inside NdkCloseConnector).
    if ((awaiting_peer && req_cb != nullptr) || disc_req_cb != nullptr) {
        ++busy;
        ad->host.queue_dpc([this] {
            if (awaiting_peer) {
                complete_request(STATUS_CANCELLED);
            }
            if (disc_req_cb != nullptr) {
                complete_disconnect(STATUS_SUCCESS);
            }
            --busy;
            adapter->progress(this);
        });
    }
    state = DISCONNECTED;
}

void connector_impl::on_resolved(bool resolved, const std::array<uint8_t, 6>& mac) {
    if (!resolving || state != CONNECTING) {
        return;  // closed meanwhile: cancel() completes the request
    }
    resolving = false;
    resolve_token = 0;
    if (!resolved) {
        // Nobody answered ARP for the next hop (ndkpi.md 7.3: STATUS_HOST_UNREACHABLE).
        state = REJECTED;
        detach_qp(false);
        adapter->conns.erase(conn_id);
        complete_request(STATUS_HOST_UNREACHABLE);
        return;
    }
    peer_mac = mac;
    send_reliable(last_sent);
}

void connector_impl::teardown(std::function<void()> done) {
    if (owns_port) {
        adapter->release_port(local_port);
        owns_port = false;
    }
    if (holds_cm_id) {
        adapter->release_cm_id();
        holds_cm_id = false;
    }
    adapter->conns.erase(conn_id);
    done();
}

// ---------------------------------------------------------------------------------------------
// Adapter side: incoming CM messages
// ---------------------------------------------------------------------------------------------
void adapter_impl::cm_receive(const cm_message& msg) {
    if (msg.type == cm_message::REQ) {
        // A retransmitted REQ: the connection exists already (or was rejected).
        for (auto& [id, c] : conns) {
            if (c->passive && c->peer_conn == msg.src_conn && c->peer_ip == msg.src_ip) {
                if (c->state == connector_impl::REQ_RECEIVED) {
                    cm_message mra;
                    mra.type = cm_message::MRA;
                    mra.rejected_msg = 0;
                    c->send(mra);
                    ++cm_stats.mras_sent;
                }
                return;  // ACCEPTING: the REP timer resends it
            }
        }
        for (const cm_message& rej : recent_rejects) {
            if (rej.dst_conn == msg.src_conn && rej.dst_ip == msg.src_ip) {
                cm_send(rej, msg.mac);
                return;
            }
        }
        auto it = listeners.find(msg.dst_port);
        listener_impl* l = it != listeners.end() ? it->second : nullptr;
        if (l == nullptr || l->paused || l->closing || msg.dst_ip != params.ip) {
            cm_message rej;
            rej.type = cm_message::REJ;
            rej.reject_reason = CM_REJ_INVALID_SERVICE_ID;
            rej.rejected_msg = 0;
            rej.dst_conn = msg.src_conn;
            rej.src_ip = params.ip;
            rej.src_port = msg.dst_port;
            rej.dst_ip = msg.src_ip;
            rej.dst_port = msg.src_port;
            cm_send(rej, msg.mac);
            return;
        }
        if (!take_cm_id()) {
            // The CM's table is full: refuse (the requester's Connect fails with
            // STATUS_INSUFFICIENT_RESOURCES).
            cm_message rej;
            rej.type = cm_message::REJ;
            rej.reject_reason = CM_REJ_NO_RESOURCES;
            rej.rejected_msg = 0;
            rej.dst_conn = msg.src_conn;
            rej.src_ip = params.ip;
            rej.src_port = msg.dst_port;
            rej.dst_ip = msg.src_ip;
            rej.dst_port = msg.src_port;
            cm_send(rej, msg.mac);
            return;
        }
        auto* c = new connector_impl;
        init_header(c, NdkObjectTypeConnector, &connector_dispatch);
        c->adapter = this;
        c->holds_cm_id = true;
        c->passive = true;
        c->state = connector_impl::REQ_RECEIVED;
        c->conn_id = new_conn_id();
        c->peer_conn = msg.src_conn;
        c->peer = msg;
        c->have_peer = true;
        c->peer_mac = msg.mac;
        c->local_ip = params.ip;
        c->local_port = msg.dst_port;
        c->peer_ip = msg.src_ip;
        c->peer_port = msg.src_port;
        c->add_antecedent(this);
        conns[c->conn_id] = c;
        ++l->busy;
        l->connect_cb(l->connect_ctx, c);
        --l->busy;
        progress(l);
        return;
    }
    connector_impl* target = nullptr;
    auto it = conns.find(msg.dst_conn);
    if (it != conns.end() && it->second->peer_ip == msg.src_ip) {
        target = it->second;
    } else {
        // A requester that gives up before the reply does not know our id yet: match its own.
        for (auto& [id, c] : conns) {
            if (c->peer_conn == msg.src_conn && c->peer_ip == msg.src_ip) {
                target = c;
                break;
            }
        }
    }
    if (target != nullptr) {
        // Answering takes host CPU time (cm_send waits), during which the consumer may close
        // the connector: it stays busy until its message is handled, so the close completes
        // after (ndkpi.md 5), not under our feet.
        ++target->busy;
        target->on_message(msg);
        --target->busy;
        progress(target);
    } else if (msg.type == cm_message::DREQ) {
        // The connector is gone: still answer, so the peer's Disconnect completes.
        cm_message rep;
        rep.type = cm_message::DREP;
        rep.src_conn = msg.dst_conn;
        rep.dst_conn = msg.src_conn;
        rep.src_ip = params.ip;
        rep.dst_ip = msg.src_ip;
        cm_send(rep, msg.mac);
    } else {
        ++cm_stats.mads_ignored;
    }
}

// ---------------------------------------------------------------------------------------------
// Connector dispatch
// ---------------------------------------------------------------------------------------------
NTSTATUS create_connector(NDK_ADAPTER* a, NDK_FN_CREATE_COMPLETION, PVOID, NDK_CONNECTOR** out) {
    adapter_impl* ad = impl(a);
    if (out == nullptr) {
        return STATUS_INVALID_PARAMETER;
    }
    if (!ad->take_cm_id()) {
        return STATUS_INSUFFICIENT_RESOURCES;  // every CM ID is in use (cm_id_entries)
    }
    auto* c = new connector_impl;
    ad->init_header(c, NdkObjectTypeConnector, &connector_dispatch);
    c->adapter = ad;
    c->holds_cm_id = true;
    c->add_antecedent(ad);
    *out = c;
    return STATUS_SUCCESS;
}

namespace {
NTSTATUS start_connect(connector_impl* c, NDK_QP* qpp, uint32_t src_ip, uint16_t src_port,
                       bool shared, const SOCKADDR* dst, ULONG dst_len, ULONG ird, ULONG ord,
                       const void* pdata, ULONG plen, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx) {
    adapter_impl* ad = c->adapter;
    if (c->state != connector_impl::IDLE) {
        return STATUS_INVALID_DEVICE_STATE;  // a connector connects once
    }
    if (qpp == nullptr) {
        return STATUS_INVALID_PARAMETER;
    }
    qp_impl* qp = impl(qpp);
    if (qp->adapter != ad || qp->state != qp_impl::IDLE || qp->connector != nullptr) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    NTSTATUS st = check_private_data(pdata, plen, MAX_CALLER_DATA);
    if (st != STATUS_SUCCESS) {
        return st;
    }
    uint32_t dst_ip = 0;
    uint16_t dst_port = 0;
    st = read_sockaddr(dst, dst_len, dst_ip, dst_port);
    if (st != STATUS_SUCCESS || dst_ip == 0 || dst_port == 0) {
        return STATUS_INVALID_ADDRESS;
    }
    if (src_ip == 0) {
        src_ip = ad->params.ip;
    }
    if (src_ip != ad->params.ip) {
        return STATUS_INVALID_ADDRESS;
    }
    // Route: on-link inside the adapter's subnet, else through the default gateway.
    const host_config& hc = ad->host.config();
    const uint32_t mask =
        hc.ipv4_prefix_length == 0 ? 0 : ~uint32_t{0} << (32 - hc.ipv4_prefix_length);
    uint32_t next_hop = dst_ip;
    if (((dst_ip ^ ad->params.ip) & mask) != 0) {
        if (hc.ipv4_gateway == 0) {
            return STATUS_NETWORK_UNREACHABLE;  // no route
        }
        next_hop = hc.ipv4_gateway;
    }
    if (shared) {
        // Connectors share the endpoint's port, so the 4-tuple tells connections apart: a second
        // live connection with the same one is refused (ndkpi.md 7.3).
        for (const auto& [id, other] : ad->conns) {
            if (other->local_port == src_port && other->peer_ip == dst_ip &&
                other->peer_port == dst_port && other->state != connector_impl::REJECTED &&
                other->state != connector_impl::DISCONNECTED) {
                return STATUS_ADDRESS_ALREADY_EXISTS;
            }
        }
    } else {
        st = ad->take_port(src_port);
        if (st != STATUS_SUCCESS) {
            return st;
        }
        c->owns_port = true;
    }
    const uint32_t max_rd = ad->params.limits.max_read_depth;
    c->local_ip = src_ip;
    c->local_port = src_port;
    c->peer_ip = dst_ip;
    c->peer_port = dst_port;
    c->conn_id = ad->new_conn_id();
    c->my_ird = std::min<uint32_t>(ird, max_rd);
    c->my_ord = std::min<uint32_t>(ord, max_rd);
    c->my_psn = initial_psn(ad->params.node_id, qp->qpn, c->conn_id);
    c->qp = qp;
    qp->connector = c;
    qp->state = qp_impl::CONNECTING;
    ad->conns[c->conn_id] = c;
    c->state = connector_impl::CONNECTING;
    c->req_cb = cb;
    c->req_ctx = ctx;
    c->awaiting_peer = true;
    ++c->busy;
    cm_message req;
    req.type = cm_message::REQ;
    req.qpn = qp->qpn;
    req.psn = c->my_psn;
    req.ird = c->my_ird;
    req.ord = c->my_ord;
    req.private_data = copy_data(pdata, plen);
    ad->host.cpu(ad->host.config().post_ns);
    // The REQ goes to the next hop's MAC: from the neighbour cache, or after ARP resolves it.
    c->last_sent = req;
    c->resolving = true;
    mac_address mac{};
    const uint64_t token = ad->host.neighbors().resolve(
        next_hop, mac,
        [ad, next_hop] {
            arp_packet a;
            a.eth_dst = BROADCAST_MAC;
            a.eth_src = ad->params.mac;
            a.oper = arp_packet::REQUEST;
            a.sha = ad->params.mac;
            a.spa = ad->params.ip;
            a.tpa = next_hop;
            ad->arp_send(a);
        },
        [c](bool resolved, const mac_address& m) { c->on_resolved(resolved, m); });
    if (token == 0) {
        c->resolving = false;
        c->peer_mac = mac;
        c->send_reliable(req);
    } else if (c->resolving) {
        c->resolve_token = token;
    }
    return STATUS_PENDING;
}

NTSTATUS finish_connect(connector_impl* c, NDK_FN_DISCONNECT_EVENT_CALLBACK dcb,
                        NDK_FN_DISCONNECT_EVENT_CALLBACK_EX dcb_ex, PVOID dctx,
                        NDK_FN_REQUEST_COMPLETION cb, PVOID ctx) {
    if (!c->passive && c->state == connector_impl::DISCONNECTED && c->timed_out) {
        return STATUS_IO_TIMEOUT;  // called after the connection's RTU deadline
    }
    if (!c->passive && c->state == connector_impl::DISCONNECTED && c->have_peer &&
        c->peer.type == cm_message::REP) {
        return STATUS_CONNECTION_ABORTED;  // the peer gave up (REJ, DREQ) after its REP
    }
    if (c->state != connector_impl::REPLIED || c->passive) {
        return STATUS_CONNECTION_INVALID;
    }
    if (c->qp == nullptr) {
        return STATUS_CONNECTION_ABORTED;
    }
    adapter_impl* ad = c->adapter;
    c->stop_timer();  // the RTU deadline
    c->disc_cb = dcb;
    c->disc_cb_ex = dcb_ex;
    c->disc_ctx = dctx;
    c->state = connector_impl::COMPLETING;
    c->req_cb = cb;
    c->req_ctx = ctx;
    ++c->busy;
    const uint32_t ord = std::min(c->my_ord, c->peer.ird);
    ad->commands(connect_commands(ad, c->qp, c->peer, c->my_psn, ord), false, [c](uint8_t st) {
        if (c->state != connector_impl::COMPLETING) {
            c->complete_request(STATUS_CONNECTION_ABORTED);  // peer left meanwhile
            return;
        }
        if (st != hsi::CMD_OK) {
            cm_message rej;
            rej.type = cm_message::REJ;
            rej.reject_reason = CM_REJ_STALE_CONN;
            rej.rejected_msg = 1;
            c->send(rej);
            c->state = connector_impl::DISCONNECTED;
            c->detach_qp(true);
            c->complete_request(cmd_status_to_ntstatus(st));
            return;
        }
        c->state = connector_impl::CONNECTED;
        c->qp->state = qp_impl::CONNECTED;
        cm_message rtu;
        rtu.type = cm_message::RTU;
        c->send(rtu);
        c->complete_request(STATUS_SUCCESS);
    });
    return STATUS_PENDING;
}

NTSTATUS do_accept(connector_impl* c, NDK_QP* qpp, ULONG ird, ULONG ord, const void* pdata,
                   ULONG plen, NDK_FN_DISCONNECT_EVENT_CALLBACK dcb,
                   NDK_FN_DISCONNECT_EVENT_CALLBACK_EX dcb_ex, PVOID dctx,
                   NDK_FN_REQUEST_COMPLETION cb, PVOID ctx) {
    if (c->state != connector_impl::REQ_RECEIVED) {
        return c->passive && c->state == connector_impl::DISCONNECTED ? STATUS_CONNECTION_ABORTED
                                                                      : STATUS_CONNECTION_INVALID;
    }
    if (qpp == nullptr) {
        return STATUS_INVALID_PARAMETER;
    }
    qp_impl* qp = impl(qpp);
    adapter_impl* ad = c->adapter;
    if (qp->adapter != ad || qp->state != qp_impl::IDLE || qp->connector != nullptr) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    NTSTATUS st = check_private_data(pdata, plen, MAX_CALLEE_DATA);
    if (st != STATUS_SUCCESS) {
        return st;
    }
    const uint32_t max_rd = ad->params.limits.max_read_depth;
    c->my_ird = std::min<uint32_t>(ird, max_rd);
    c->my_ord = std::min<uint32_t>(ord, max_rd);
    c->my_psn = initial_psn(ad->params.node_id, qp->qpn, c->conn_id);
    c->qp = qp;
    qp->connector = c;
    qp->state = qp_impl::CONNECTING;
    c->disc_cb = dcb;
    c->disc_cb_ex = dcb_ex;
    c->disc_ctx = dctx;
    c->state = connector_impl::ACCEPTING;
    c->req_cb = cb;
    c->req_ctx = ctx;
    ++c->busy;
    auto data = copy_data(pdata, plen);
    const uint32_t eff_ord = std::min(c->my_ord, c->peer.ird);
    ad->commands(connect_commands(ad, qp, c->peer, c->my_psn, eff_ord), false,
                 [c, data](uint8_t st) {
                     if (c->state != connector_impl::ACCEPTING) {
                         c->complete_request(STATUS_CONNECTION_ABORTED);
                         return;
                     }
                     if (st != hsi::CMD_OK) {
                         cm_message rej;
                         rej.type = cm_message::REJ;
                         rej.reject_reason = CM_REJ_CONSUMER;
                         c->send(rej);
                         c->state = connector_impl::DISCONNECTED;
                         c->detach_qp(true);
                         c->complete_request(cmd_status_to_ntstatus(st));
                         return;
                     }
                     cm_message rep;
                     rep.type = cm_message::REP;
                     rep.qpn = c->qp->qpn;
                     rep.psn = c->my_psn;
                     rep.ird = c->my_ird;
                     rep.ord = c->my_ord;
                     rep.private_data = data;
                     c->awaiting_peer = true;  // Accept completes on the RTU
                     c->send_reliable(rep);
                 });
    return STATUS_PENDING;
}
}  // namespace

NTSTATUS connect(NDK_CONNECTOR* p, NDK_QP* qp, CONST PSOCKADDR src, ULONG src_len,
                 CONST PSOCKADDR dst, ULONG dst_len, ULONG ird, ULONG ord, CONST PVOID pdata,
                 ULONG plen, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx) {
    uint32_t src_ip = 0;
    uint16_t src_port = 0;
    if (src != nullptr && read_sockaddr(src, src_len, src_ip, src_port) != STATUS_SUCCESS) {
        return STATUS_INVALID_ADDRESS;
    }
    return start_connect(impl(p), qp, src_ip, src_port, false, dst, dst_len, ird, ord, pdata, plen,
                         cb, ctx);
}

NTSTATUS connect_with_shared_endpoint(NDK_CONNECTOR* p, NDK_QP* qp, NDK_SHARED_ENDPOINT* sep,
                                      CONST PSOCKADDR dst, ULONG dst_len, ULONG ird, ULONG ord,
                                      CONST PVOID pdata, ULONG plen, NDK_FN_REQUEST_COMPLETION cb,
                                      PVOID ctx) {
    if (sep == nullptr) {
        return STATUS_INVALID_PARAMETER;
    }
    connector_impl* c = impl(p);
    return start_connect(c, qp, c->adapter->params.ip, impl(sep)->port, true, dst, dst_len, ird,
                         ord, pdata, plen, cb, ctx);
}

NTSTATUS complete_connect(NDK_CONNECTOR* p, NDK_FN_DISCONNECT_EVENT_CALLBACK dcb, PVOID dctx,
                          NDK_FN_REQUEST_COMPLETION cb, PVOID ctx) {
    return finish_connect(impl(p), dcb, nullptr, dctx, cb, ctx);
}

NTSTATUS complete_connect_ex(NDK_CONNECTOR* p, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX dcb, PVOID dctx,
                             NDK_FN_REQUEST_COMPLETION cb, PVOID ctx) {
    return finish_connect(impl(p), nullptr, dcb, dctx, cb, ctx);
}

NTSTATUS accept(NDK_CONNECTOR* p, NDK_QP* qp, ULONG ird, ULONG ord, CONST PVOID pdata, ULONG plen,
                NDK_FN_DISCONNECT_EVENT_CALLBACK dcb, PVOID dctx, NDK_FN_REQUEST_COMPLETION cb,
                PVOID ctx) {
    return do_accept(impl(p), qp, ird, ord, pdata, plen, dcb, nullptr, dctx, cb, ctx);
}

NTSTATUS accept_ex(NDK_CONNECTOR* p, NDK_QP* qp, ULONG ird, ULONG ord, CONST PVOID pdata,
                   ULONG plen, NDK_FN_DISCONNECT_EVENT_CALLBACK_EX dcb, PVOID dctx,
                   NDK_FN_REQUEST_COMPLETION cb, PVOID ctx) {
    return do_accept(impl(p), qp, ird, ord, pdata, plen, nullptr, dcb, dctx, cb, ctx);
}

NTSTATUS reject(NDK_CONNECTOR* p, CONST PVOID pdata, ULONG plen) {
    connector_impl* c = impl(p);
    if (c->state != connector_impl::REQ_RECEIVED) {
        return STATUS_CONNECTION_ABORTED;  // the peer gave up (or this is not a request)
    }
    NTSTATUS st = check_private_data(pdata, plen, MAX_CALLEE_DATA);
    if (st != STATUS_SUCCESS) {
        return st;
    }
    cm_message rej;
    rej.type = cm_message::REJ;
    rej.reject_reason = CM_REJ_CONSUMER;
    rej.rejected_msg = 0;
    rej.private_data = copy_data(pdata, plen);
    c->send(rej);
    // Kept to answer the REQ again if the REJ is lost (the connector may be closed by then).
    rej.src_conn = c->conn_id;
    rej.dst_conn = c->peer_conn;
    rej.src_ip = c->local_ip;
    rej.dst_ip = c->peer_ip;
    auto& recent = c->adapter->recent_rejects;
    recent.push_back(rej);
    if (recent.size() > 64) {
        recent.pop_front();
    }
    c->state = connector_impl::REJECTED;
    c->adapter->conns.erase(c->conn_id);
    return STATUS_SUCCESS;
}

NTSTATUS get_connection_data(NDK_CONNECTOR* p, ULONG* inbound, ULONG* outbound, PVOID pdata,
                             ULONG* plen) {
    connector_impl* c = impl(p);
    if (plen == nullptr) {
        return STATUS_INVALID_PARAMETER;
    }
    if (!c->have_peer) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    const uint32_t max_rd = c->adapter->params.limits.max_read_depth;
    if (c->passive) {
        // What the requester asked for: the reads it will issue and the reads it accepts.
        if (inbound != nullptr) {
            *inbound = std::min(c->peer.ord, max_rd);
        }
        if (outbound != nullptr) {
            *outbound = std::min(c->peer.ird, max_rd);
        }
    } else {
        if (inbound != nullptr) {
            *inbound = std::min(c->my_ird, c->peer.ord);
        }
        if (outbound != nullptr) {
            *outbound = std::min(c->my_ord, c->peer.ird);
        }
    }
    const ULONG rds = static_cast<ULONG>(c->peer.private_data.size());
    if (pdata == nullptr && *plen == 0) {
        *plen = rds;
        return STATUS_SUCCESS;
    }
    const ULONG n = std::min(*plen, rds);
    if (n > 0 && pdata != nullptr) {
        std::memcpy(pdata, c->peer.private_data.data(), n);
    }
    const bool small = *plen < rds;
    *plen = rds;
    return small ? STATUS_BUFFER_TOO_SMALL : STATUS_SUCCESS;
}

NTSTATUS connector_local_address(NDK_CONNECTOR* p, PSOCKADDR a, ULONG* len) {
    connector_impl* c = impl(p);
    if (c->local_ip == 0) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    return write_sockaddr(c->local_ip, c->local_port, a, len);
}

NTSTATUS connector_peer_address(NDK_CONNECTOR* p, PSOCKADDR a, ULONG* len) {
    connector_impl* c = impl(p);
    if (c->peer_ip == 0) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    return write_sockaddr(c->peer_ip, c->peer_port, a, len);
}

NTSTATUS disconnect(NDK_CONNECTOR* p, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx) {
    connector_impl* c = impl(p);
    if (c->state == connector_impl::PEER_DISCONNECTED) {
        c->detach_qp(true);  // implicit flush; the peer already left, no handshake
        c->state = connector_impl::DISCONNECTED;
        return STATUS_SUCCESS;
    }
    if (c->state != connector_impl::CONNECTED) {
        return STATUS_CONNECTION_INVALID;
    }
    cm_message dreq;
    dreq.type = cm_message::DREQ;
    dreq.qpn = c->peer.qpn;
    c->detach_qp(true);
    c->state = connector_impl::DISCONNECTING;
    c->disc_req_cb = cb;
    c->disc_req_ctx = ctx;
    ++c->busy;
    // Completes on the DREP; sent again on timeouts, then STATUS_IO_TIMEOUT.
    c->send_reliable(dreq);
    return STATUS_PENDING;
}

// ---------------------------------------------------------------------------------------------
// Listener
// ---------------------------------------------------------------------------------------------
void listener_impl::teardown(std::function<void()> done) {
    if (listening) {
        adapter->listeners.erase(port);
        adapter->release_port(port);
        listening = false;
    }
    adapter->release_cm_id();
    done();
}

NTSTATUS create_listener(NDK_ADAPTER* a, NDK_FN_CONNECT_EVENT_CALLBACK ev, PVOID ev_ctx,
                         NDK_FN_CREATE_COMPLETION, PVOID, NDK_LISTENER** out) {
    adapter_impl* ad = impl(a);
    if (ev == nullptr || out == nullptr) {
        return STATUS_INVALID_PARAMETER;
    }
    if (!ad->take_cm_id()) {
        return STATUS_INSUFFICIENT_RESOURCES;  // a listen also needs a CM ID
    }
    auto* l = new listener_impl;
    ad->init_header(l, NdkObjectTypeListener, &listener_dispatch);
    l->adapter = ad;
    l->connect_cb = ev;
    l->connect_ctx = ev_ctx;
    l->add_antecedent(ad);
    *out = l;
    return STATUS_SUCCESS;
}

NTSTATUS listen(NDK_LISTENER* p, CONST PSOCKADDR addr, ULONG len, NDK_FN_REQUEST_COMPLETION,
                PVOID) {
    listener_impl* l = impl(p);
    adapter_impl* ad = l->adapter;
    if (l->listening) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    uint32_t ip = 0;
    uint16_t port = 0;
    if (read_sockaddr(addr, len, ip, port) != STATUS_SUCCESS || (ip != 0 && ip != ad->params.ip)) {
        return STATUS_INVALID_ADDRESS;
    }
    const NTSTATUS st = ad->take_port(port);
    if (st != STATUS_SUCCESS) {
        return st;
    }
    l->port = port;
    l->listening = true;
    ad->listeners[port] = l;
    return STATUS_SUCCESS;
}

NTSTATUS listener_local_address(NDK_LISTENER* p, PSOCKADDR a, ULONG* len) {
    listener_impl* l = impl(p);
    if (!l->listening) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    return write_sockaddr(l->adapter->params.ip, l->port, a, len);
}

VOID control_connect_events(NDK_LISTENER* p, BOOLEAN pause) {
    impl(p)->paused = pause != FALSE;
}

// ---------------------------------------------------------------------------------------------
// Shared endpoint: a local address (port) several connectors connect from.
// ---------------------------------------------------------------------------------------------
void shared_endpoint_impl::teardown(std::function<void()> done) {
    adapter->release_port(port);
    done();
}

NTSTATUS create_shared_endpoint(NDK_ADAPTER* a, CONST PSOCKADDR addr, ULONG len,
                                NDK_FN_CREATE_COMPLETION, PVOID, NDK_SHARED_ENDPOINT** out) {
    adapter_impl* ad = impl(a);
    uint32_t ip = 0;
    uint16_t port = 0;
    if (read_sockaddr(addr, len, ip, port) != STATUS_SUCCESS || (ip != 0 && ip != ad->params.ip)) {
        return STATUS_INVALID_ADDRESS;
    }
    const NTSTATUS st = ad->take_port(port);
    if (st != STATUS_SUCCESS) {
        return st;
    }
    auto* e = new shared_endpoint_impl;
    ad->init_header(e, NdkObjectTypeSharedEndpoint, &shared_endpoint_dispatch);
    e->adapter = ad;
    e->port = port;
    e->add_antecedent(ad);
    *out = e;
    return STATUS_SUCCESS;
}

NTSTATUS shared_endpoint_local_address(NDK_SHARED_ENDPOINT* p, PSOCKADDR a, ULONG* len) {
    shared_endpoint_impl* e = impl(p);
    return write_sockaddr(e->adapter->params.ip, e->port, a, len);
}

}  // namespace rnic::ndk::provider
