// SPDX-License-Identifier: Apache-2.0
// Provider driver: connectors, listeners and shared endpoints over fabric_cm. The exchange is
// the RDMA-CM one: REQ (caller data, QPN, PSN, IRD/ORD) -> REP or REJ (callee data) -> RTU;
// DREQ -> DREP for a graceful disconnect. QPs move INIT -> RTR -> RTS by CMD_MODIFY_QP with the
// peer's QPN, PSN, IP, MAC, the path MTU and the retry settings.
//
// Active:  Connect -> REQ ... REP -> Connect completes; CompleteConnect -> RTR/RTS -> RTU,
//          CompleteConnect completes.
// Passive: REQ -> listener's connect event (new connector); Accept -> RTR/RTS -> REP ... RTU
//          -> Accept completes. Reject -> REJ (synchronous).
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
// connector_impl
// ---------------------------------------------------------------------------------------------
void connector_impl::send(cm_message m) {
    m.src_conn = conn_id;
    m.dst_conn = peer_conn;
    m.src_ip = local_ip;
    m.src_port = local_port;
    m.dst_ip = peer_ip;
    m.dst_port = peer_port;
    m.mac = adapter->params.mac;
    adapter->cm.send(m);
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
                peer = m;
                have_peer = true;
                peer_conn = m.src_conn;
                state = REPLIED;
                complete_request(STATUS_SUCCESS);
            }
            break;
        case cm_message::REJ:
            if (state == CONNECTING) {
                peer = m;
                have_peer = true;
                state = REJECTED;
                detach_qp(false);
                adapter->conns.erase(conn_id);
                complete_request(m.reject_status);
            } else if (state == REQ_RECEIVED) {
                state = DISCONNECTED;  // the requester gave up before Accept / Reject
            } else if (state == ACCEPTING || state == REPLIED || state == COMPLETING) {
                state = DISCONNECTED;  // the peer abandoned the connection
                detach_qp(true);
                if (awaiting_peer) {
                    complete_request(STATUS_CONNECTION_ABORTED);
                }
            }
            break;
        case cm_message::RTU:
            if (state == ACCEPTING && awaiting_peer) {
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
            if (state == CONNECTED) {
                state = PEER_DISCONNECTED;
                send(rep);
                report_disconnect();  // reported once; no flush (ndkpi.md 6)
            } else {
                send(rep);
                if (state == REQ_RECEIVED || state == REPLIED) {
                    state = DISCONNECTED;  // abandoned before it was accepted / completed
                    detach_qp(false);
                } else if (state == ACCEPTING && awaiting_peer) {
                    state = DISCONNECTED;
                    detach_qp(true);
                    complete_request(STATUS_CONNECTION_ABORTED);
                }
            }
            break;
        }
        case cm_message::DREP:
            if (state == DISCONNECTING) {
                state = DISCONNECTED;
                if (disc_timer != 0 && adapter->host.cancel_dpc(disc_timer)) {
                    --busy;  // the timeout DPC will not run
                }
                disc_timer = 0;
                complete_disconnect(STATUS_SUCCESS);
            }
            break;
        case cm_message::REQ:
            break;
    }
}

void connector_impl::cancel() {
    adapter_impl* ad = adapter;
    // Tell the peer, unless it already knows.
    cm_message m;
    switch (state) {
        case REQ_RECEIVED:
            m.type = cm_message::REJ;
            m.reject_status = STATUS_CONNECTION_REFUSED;
            send(m);
            break;
        case CONNECTING:
        case REPLIED:
        case COMPLETING:
        case ACCEPTING:
        case CONNECTED:
            m.type = state == CONNECTED ? cm_message::DREQ : cm_message::REJ;
            m.reject_status = STATUS_CONNECTION_ABORTED;
            if (peer_conn != 0 || state == CONNECTED || state == CONNECTING) {
                send(m);
            }
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

void connector_impl::teardown(std::function<void()> done) {
    if (owns_port) {
        adapter->release_port(local_port);
        owns_port = false;
    }
    adapter->conns.erase(conn_id);
    done();
}

// ---------------------------------------------------------------------------------------------
// Adapter side: incoming CM messages
// ---------------------------------------------------------------------------------------------
void adapter_impl::cm_receive(const cm_message& msg) {
    if (msg.type == cm_message::REQ) {
        auto it = listeners.find(msg.dst_port);
        listener_impl* l = it != listeners.end() ? it->second : nullptr;
        if (l == nullptr || l->paused || l->closing || msg.dst_ip != params.ip) {
            cm_message rej;
            rej.type = cm_message::REJ;
            rej.reject_status = STATUS_CONNECTION_REFUSED;
            rej.dst_conn = msg.src_conn;
            rej.src_ip = params.ip;
            rej.src_port = msg.dst_port;
            rej.dst_ip = msg.src_ip;
            rej.dst_port = msg.src_port;
            rej.mac = params.mac;
            cm.send(rej);
            return;
        }
        auto* c = new connector_impl;
        init_header(c, NdkObjectTypeConnector, &connector_dispatch);
        c->adapter = this;
        c->passive = true;
        c->state = connector_impl::REQ_RECEIVED;
        c->conn_id = cm.new_connection_id();
        c->peer_conn = msg.src_conn;
        c->peer = msg;
        c->have_peer = true;
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
    if (it != conns.end()) {
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
        target->on_message(msg);
    } else if (msg.type == cm_message::DREQ) {
        // The connector is gone: still answer, so the peer's Disconnect completes.
        cm_message rep;
        rep.type = cm_message::DREP;
        rep.dst_conn = msg.src_conn;
        rep.src_ip = params.ip;
        rep.src_port = msg.dst_port;
        rep.dst_ip = msg.src_ip;
        rep.dst_port = msg.src_port;
        cm.send(rep);
    }
}

// ---------------------------------------------------------------------------------------------
// Connector dispatch
// ---------------------------------------------------------------------------------------------
NTSTATUS create_connector(NDK_ADAPTER* a, NDK_FN_CREATE_COMPLETION, PVOID, NDK_CONNECTOR** out) {
    adapter_impl* ad = impl(a);
    auto* c = new connector_impl;
    ad->init_header(c, NdkObjectTypeConnector, &connector_dispatch);
    c->adapter = ad;
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
    if (!ad->cm.reachable(dst_ip)) {
        return STATUS_HOST_UNREACHABLE;
    }
    if (src_ip == 0) {
        src_ip = ad->params.ip;
    }
    if (src_ip != ad->params.ip) {
        return STATUS_INVALID_ADDRESS;
    }
    if (!shared) {
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
    c->conn_id = ad->cm.new_connection_id();
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
    c->send(req);
    return STATUS_PENDING;
}

NTSTATUS finish_connect(connector_impl* c, NDK_FN_DISCONNECT_EVENT_CALLBACK dcb,
                        NDK_FN_DISCONNECT_EVENT_CALLBACK_EX dcb_ex, PVOID dctx,
                        NDK_FN_REQUEST_COMPLETION cb, PVOID ctx) {
    if (c->state != connector_impl::REPLIED || c->passive) {
        return STATUS_CONNECTION_INVALID;
    }
    if (c->qp == nullptr) {
        return STATUS_CONNECTION_ABORTED;
    }
    adapter_impl* ad = c->adapter;
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
            rej.reject_status = STATUS_CONNECTION_ABORTED;
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
                         rej.reject_status = STATUS_CONNECTION_REFUSED;
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
                     c->send(rep);
                     c->awaiting_peer = true;  // Accept completes on the RTU
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
    rej.reject_status = STATUS_CONNECTION_REFUSED;
    rej.private_data = copy_data(pdata, plen);
    c->send(rej);
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
    adapter_impl* ad = c->adapter;
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
    c->send(dreq);
    c->detach_qp(true);
    c->state = connector_impl::DISCONNECTING;
    c->disc_req_cb = cb;
    c->disc_req_ctx = ctx;
    ++c->busy;
    // The handshake times out if the peer never answers (the DREP cancels the timer).
    ++c->busy;
    c->disc_timer = ad->host.queue_dpc(
        [c] {
            if (c->state == connector_impl::DISCONNECTING && c->disc_req_cb != nullptr) {
                c->state = connector_impl::DISCONNECTED;
                c->complete_disconnect(STATUS_IO_TIMEOUT);
            }
            --c->busy;
            c->adapter->progress(c);
        },
        std::max(1e6, 100 * ad->cm.get_config().delay_ns));
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
    done();
}

NTSTATUS create_listener(NDK_ADAPTER* a, NDK_FN_CONNECT_EVENT_CALLBACK ev, PVOID ev_ctx,
                         NDK_FN_CREATE_COMPLETION, PVOID, NDK_LISTENER** out) {
    adapter_impl* ad = impl(a);
    if (ev == nullptr) {
        return STATUS_INVALID_PARAMETER;
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
