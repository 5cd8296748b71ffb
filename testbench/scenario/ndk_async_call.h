// SPDX-License-Identifier: Apache-2.0
// One asynchronous NDK request, as a consumer thread waits for it. The provider either finishes
// the request inline (any status but STATUS_PENDING, no callback) or returns STATUS_PENDING and
// calls back exactly once, from the host's DPC thread; the consumer thread sleeps on the event
// meanwhile (ndkpi.md 5).
#pragma once

#include <systemc>

#include "ndk_shim/ndkpi.h"
#include "ndk_shim/ntstatus.h"

namespace rnic::scenario {

struct async_call {
    sc_core::sc_event event;
    bool done = false;
    NTSTATUS status = STATUS_PENDING;
    NDK_OBJECT_HEADER* object = nullptr;

    static VOID on_create(PVOID ctx, NTSTATUS st, NDK_OBJECT_HEADER* obj) {
        auto* c = static_cast<async_call*>(ctx);
        c->object = obj;
        c->complete(st);
    }
    static VOID on_request(PVOID ctx, NTSTATUS st) { static_cast<async_call*>(ctx)->complete(st); }
    static VOID on_close(PVOID ctx) { static_cast<async_call*>(ctx)->complete(STATUS_SUCCESS); }

    void complete(NTSTATUS st) {
        status = st;
        done = true;
        event.notify();
    }
    // `returned` is what the provider call returned; the final status of the request.
    NTSTATUS wait(NTSTATUS returned) {
        if (returned != STATUS_PENDING) {
            return returned;
        }
        while (!done) {
            sc_core::wait(event);
        }
        return status;
    }
    // The object of a create call: from the out-parameter when it finished inline, from the
    // create completion when it was pending (every NDK object starts with its NDK_OBJECT_HEADER).
    template <typename T>
    T* created(NTSTATUS returned, T* out) const {
        return returned == STATUS_PENDING ? reinterpret_cast<T*>(object) : out;
    }
};

}  // namespace rnic::scenario
