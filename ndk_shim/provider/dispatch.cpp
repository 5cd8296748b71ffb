// SPDX-License-Identifier: Apache-2.0
// Provider driver: the NDK dispatch tables, in the documented member order (ndkpi.md 1.1).
#include "ndk_shim/provider/provider.h"

namespace rnic::ndk::provider {

const NDK_ADAPTER_DISPATCH adapter_dispatch = {
    query_extension,  query_adapter_info, create_cq, create_pd,   create_shared_endpoint,
    create_connector, create_listener,    build_lam, release_lam,
};

const NDK_PD_DISPATCH pd_dispatch = {
    close_any,  query_extension, create_mr,          create_mw,
    create_srq, create_qp,       create_qp_with_srq, get_privileged_token,
};

const NDK_CQ_DISPATCH cq_dispatch = {
    close_any,      query_extension,       resize_cq,         arm_cq,
    get_cq_results, control_cq_moderation, get_cq_results_ex,
};

const NDK_QP_DISPATCH qp_dispatch = {
    close_any,
    query_extension,
    flush_qp,
    qp_send,
    qp_receive,
    qp_bind,
    qp_fast_register,
    qp_invalidate,
    qp_read,
    qp_write,
    qp_send_and_invalidate,
};

const NDK_SRQ_DISPATCH srq_dispatch = {close_any, query_extension, modify_srq, srq_receive};

const NDK_MR_DISPATCH mr_dispatch = {
    close_any,       query_extension, register_mr, deregister_mr, initialize_fast_register_mr,
    mr_remote_token, mr_local_token,
};

const NDK_MW_DISPATCH mw_dispatch = {close_any, query_extension, mw_remote_token};

const NDK_CONNECTOR_DISPATCH connector_dispatch = {
    close_any,
    query_extension,
    connect,
    connect_with_shared_endpoint,
    complete_connect,
    accept,
    reject,
    get_connection_data,
    connector_local_address,
    connector_peer_address,
    disconnect,
    complete_connect_ex,
    accept_ex,
};

const NDK_LISTENER_DISPATCH listener_dispatch = {
    close_any, query_extension, listen, listener_local_address, control_connect_events,
};

const NDK_SHARED_ENDPOINT_DISPATCH shared_endpoint_dispatch = {
    close_any,
    query_extension,
    shared_endpoint_local_address,
};

}  // namespace rnic::ndk::provider
