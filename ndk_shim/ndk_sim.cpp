// SPDX-License-Identifier: Apache-2.0
// Simulator entry points of the provider driver: open/close an adapter on a host.
#include "ndk_shim/ndk_sim.h"

#include "ndk_shim/provider/provider.h"

namespace rnic::ndk {

// ---------------------------------------------------------------------------------------------
// Simulator entry points
// ---------------------------------------------------------------------------------------------
NTSTATUS open_adapter(host_system& host, const adapter_params& p, NDK_ADAPTER** out) {
    using namespace provider;
    const auto neg = negotiate_ndk_version(p.version, NDK_VERSION_1_2);
    if (neg.status != NDIS_STATUS_SUCCESS) {
        return neg.status;
    }
    if (p.default_mtu < 256 || p.default_mtu > 4096 || (p.default_mtu & (p.default_mtu - 1)) ||
        p.default_mtu > p.limits.max_mtu || p.cmdq_log_size < 1 || p.cmdq_log_size > 16 ||
        p.eq_log_size < 4 || p.eq_log_size > 20 || p.gsi_log_size < 1 || p.gsi_log_size > 12 ||
        p.cm_timeout_ns <= 0 || p.cm_mra_factor < 1 || out == nullptr) {
        return STATUS_INVALID_PARAMETER;
    }
    auto* ad = new adapter_impl(host, p);
    ad->version = neg.version;
    ad->init_header(ad, NdkObjectTypeAdapter, &adapter_dispatch);
    const NTSTATUS st = ad->init();
    if (st != STATUS_SUCCESS) {
        delete ad;
        return st;
    }
    ad->gsi_init();
    if (ad->address_in_use()) {
        ad->gsi_release();
        delete ad;
        return STATUS_ADDRESS_ALREADY_EXISTS;
    }
    *out = ad;
    return STATUS_SUCCESS;
}

void close_adapter(NDK_ADAPTER* adapter) {
    auto* ad = provider::impl(adapter);
    while (ad->children > 0) {
        sc_core::wait(ad->children_gone);
    }
    // Outstanding commands (e.g. a Flush's modify) finish before the rings go away.
    while (!ad->cmds.empty()) {
        const uint32_t before = static_cast<uint32_t>(ad->cmds.size());
        for (auto it = ad->cmds.begin(); it != ad->cmds.end();) {
            const uint32_t t = it->first;
            ++it;
            ad->complete_command(t);
        }
        if (ad->cmds.size() == before) {
            ad->host.wait_for_dma(ad->params.command_timeout_ns);
            if (ad->cmds.size() == before) {
                break;  // the NIC stopped answering: give up
            }
        }
    }
    ad->gsi_release();
    delete ad;
}

uint32_t usable_queue_depth(uint32_t nic_limit) {
    return provider::usable_depth(nic_limit);
}

void wait_for_completion_activity(host_system& host, const sc_core::sc_event* also) {
    host.wait_for_dma(0, also);  // until the NIC writes host memory
}

adapter_counters get_adapter_counters(NDK_ADAPTER* adapter) {
    return provider::impl(adapter)->counters;
}

cm_counters get_cm_counters(NDK_ADAPTER* adapter) {
    return provider::impl(adapter)->cm_stats;
}

uint32_t get_qp_number(NDK_QP* qp) {
    return provider::impl(qp)->qpn;
}

}  // namespace rnic::ndk
