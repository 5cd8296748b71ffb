// SPDX-License-Identifier: Apache-2.0
// The testbed's endpoint: adapter, PD, CQ, QP, connection, buffers, reaping, close (NDK calls).
#include "testbench/testbed/endpoint.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace rnic::testbed {

NDK_SGE buffer::sge(ULONG offset, ULONG length) const {
    NDK_SGE s{};
    s.VirtualAddress = data + offset;
    s.Length = length;
    s.MemoryRegionToken = token;
    return s;
}

endpoint::endpoint(node_env& env, endpoint_options o)
    : m_env(env)
    , m_opt(o) {}

bool endpoint::ok(NTSTATUS st, const char* call) {
    if (st != STATUS_SUCCESS) {
        m_env.fail(fmt::format("{}: {} (0x{:08X}) at {}", call, ntstatus_name(st),
                               static_cast<uint32_t>(st), sc_core::sc_time_stamp().to_string()));
        return false;
    }
    return true;
}

bool endpoint::open() {
    if (!ok(ndk::open_adapter(m_env.host(), m_env.adapter_params(), &adapter), "open_adapter")) {
        return false;
    }
    ULONG size = sizeof(info);
    if (!ok(adapter->Dispatch->NdkQueryAdapterInfo(adapter, &info, &size), "NdkQueryAdapterInfo")) {
        return false;
    }
    NTSTATUS st;
    pd = create<NDK_PD>(
        [&](auto cb, auto* r, NDK_PD** out) {
            return adapter->Dispatch->NdkCreatePd(adapter, cb, r, out);
        },
        &st, m_opt.timeout);
    if (!ok(st, "NdkCreatePd")) {
        return false;
    }
    cq = create<NDK_CQ>(
        [&](auto cb, auto* r, NDK_CQ** out) {
            return adapter->Dispatch->NdkCreateCq(adapter, 2 * m_opt.queue_depth, nullptr, nullptr,
                                                  nullptr, cb, r, out);
        },
        &st, m_opt.timeout);
    if (!ok(st, "NdkCreateCq")) {
        return false;
    }
    const ULONG inl = std::min(m_opt.inline_bytes, info.MaxInlineDataSize);
    qp = create<NDK_QP>(
        [&](auto cb, auto* r, NDK_QP** out) {
            return pd->Dispatch->NdkCreateQp(pd, cq, cq, this, m_opt.queue_depth, m_opt.queue_depth,
                                             m_opt.max_sge, m_opt.max_sge, inl, cb, r, out);
        },
        &st, m_opt.timeout);
    return ok(st, "NdkCreateQp");
}

bool endpoint::accept(uint16_t port) {
    NTSTATUS st;
    auto on_connect = [](PVOID ctx, NDK_CONNECTOR* c) {
        auto* self = static_cast<endpoint*>(ctx);
        self->m_incoming = c;
        self->m_connect_event.notify(sc_core::SC_ZERO_TIME);
    };
    listener = create<NDK_LISTENER>(
        [&](auto cb, auto* r, NDK_LISTENER** out) {
            return adapter->Dispatch->NdkCreateListener(adapter, on_connect, this, cb, r, out);
        },
        &st, m_opt.timeout);
    if (!ok(st, "NdkCreateListener")) {
        return false;
    }
    SOCKADDR_IN a = m_env.address_of(m_env.index(), port);
    request l;
    if (!ok(l.wait(listener->Dispatch->NdkListen(listener, reinterpret_cast<PSOCKADDR>(&a),
                                                 sizeof(a), &request::callback, l.context()),
                   m_opt.timeout),
            "NdkListen")) {
        return false;
    }
    if (!wait_until([this] { return m_incoming != nullptr; }, m_connect_event, m_opt.timeout)) {
        return ok(STATUS_IO_TIMEOUT, "waiting for a connection request");
    }
    connector = m_incoming;
    request acc;
    return ok(acc.wait(connector->Dispatch->NdkAccept(connector, qp, m_opt.read_limit,
                                                      m_opt.read_limit, nullptr, 0, nullptr,
                                                      nullptr, &request::callback, acc.context()),
                       m_opt.timeout),
              "NdkAccept");
}

bool endpoint::connect(size_t peer, uint16_t port) {
    NTSTATUS st;
    connector = create<NDK_CONNECTOR>(
        [&](auto cb, auto* r, NDK_CONNECTOR** out) {
            return adapter->Dispatch->NdkCreateConnector(adapter, cb, r, out);
        },
        &st, m_opt.timeout);
    if (!ok(st, "NdkCreateConnector")) {
        return false;
    }
    SOCKADDR_IN dst = m_env.address_of(peer, port);
    request c;
    if (!ok(c.wait(connector->Dispatch->NdkConnect(connector, qp, nullptr, 0,
                                                   reinterpret_cast<PSOCKADDR>(&dst), sizeof(dst),
                                                   m_opt.read_limit, m_opt.read_limit, nullptr, 0,
                                                   &request::callback, c.context()),
                   m_opt.timeout),
            "NdkConnect")) {
        return false;
    }
    request done;
    return ok(done.wait(connector->Dispatch->NdkCompleteConnect(connector, nullptr, nullptr,
                                                                &request::callback, done.context()),
                        m_opt.timeout),
              "NdkCompleteConnect");
}

buffer endpoint::register_buffer(ULONG bytes, ULONG flags) {
    buffer b;
    b.bytes = bytes;
    b.data = static_cast<uint8_t*>(m_env.host().alloc(bytes));
    std::memset(b.data, 0, bytes);
    b.mdl = m_env.host().build_mdl(b.data, bytes);
    NTSTATUS st;
    b.mr = create<NDK_MR>(
        [&](auto cb, auto* r, NDK_MR** out) {
            return pd->Dispatch->NdkCreateMr(pd, FALSE, cb, r, out);
        },
        &st, m_opt.timeout);
    if (!ok(st, "NdkCreateMr")) {
        return buffer{};
    }
    request reg;
    if (!ok(reg.wait(b.mr->Dispatch->NdkRegisterMr(b.mr, b.mdl, bytes, flags, &request::callback,
                                                   reg.context()),
                     m_opt.timeout),
            "NdkRegisterMr")) {
        return buffer{};
    }
    b.token = b.mr->Dispatch->NdkGetLocalTokenFromMr(b.mr);
    b.remote_token = b.mr->Dispatch->NdkGetRemoteTokenFromMr(b.mr);
    m_buffers.push_back(b);
    return b;
}

bool endpoint::reap(size_t n, std::vector<NDK_RESULT>& out) {
    const size_t want = out.size() + n;
    NDK_RESULT r[16];
    // Never more than asked for: what is not taken stays in the CQ for the next reap.
    const bool done = poll_until(
        m_env.host(),
        [&] {
            const auto ask = static_cast<ULONG>(std::min<size_t>(16, want - out.size()));
            const ULONG k = cq->Dispatch->NdkGetCqResults(cq, r, ask);
            out.insert(out.end(), r, r + k);
            return out.size() >= want;
        },
        m_opt.timeout);
    if (!done) {
        ok(STATUS_IO_TIMEOUT,
           fmt::format("reaping {} completions (got {})", n, n - (want - out.size())).c_str());
    }
    return done;
}

void endpoint::close() {
    auto close_object = [&](NDK_OBJECT_HEADER* h, NDK_FN_CLOSE_OBJECT fn, const char* what) {
        request r;
        ok(r.wait(fn(h, &request::close_callback, r.context()), m_opt.timeout), what);
    };
    if (connector != nullptr) {
        request d;
        const NTSTATUS st =
            d.wait(connector->Dispatch->NdkDisconnect(connector, &request::callback, d.context()),
                   m_opt.timeout);
        // The peer may have disconnected first: the connection is gone either way.
        if (st != STATUS_SUCCESS && st != STATUS_CONNECTION_INVALID &&
            st != STATUS_CONNECTION_DISCONNECTED) {
            ok(st, "NdkDisconnect");
        }
        close_object(&connector->Header, connector->Dispatch->NdkCloseConnector,
                     "NdkCloseConnector");
    }
    if (listener != nullptr) {
        close_object(&listener->Header, listener->Dispatch->NdkCloseListener, "NdkCloseListener");
    }
    if (qp != nullptr) {
        close_object(&qp->Header, qp->Dispatch->NdkCloseQp, "NdkCloseQp");
    }
    if (cq != nullptr) {
        close_object(&cq->Header, cq->Dispatch->NdkCloseCq, "NdkCloseCq");
    }
    for (buffer& b : m_buffers) {
        close_object(&b.mr->Header, b.mr->Dispatch->NdkCloseMr, "NdkCloseMr");
        m_env.host().free_mdl(b.mdl);
        m_env.host().free(b.data);
    }
    m_buffers.clear();
    if (pd != nullptr) {
        close_object(&pd->Header, pd->Dispatch->NdkClosePd, "NdkClosePd");
    }
    if (adapter != nullptr) {
        ndk::close_adapter(adapter);
    }
    adapter = nullptr;
    pd = nullptr;
    cq = nullptr;
    qp = nullptr;
    connector = nullptr;
    listener = nullptr;
}

}  // namespace rnic::testbed
