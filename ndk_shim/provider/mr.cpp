// SPDX-License-Identifier: Apache-2.0
// Provider driver: memory regions and memory windows. RegisterMr builds the page list (8 B bus
// address per PAGE_SIZE page, from the MDL PFN arrays) in kernel memory and issues
// CMD_CREATE_MR; the NIC loads it into its MTT. Keys: index (bits 8..31) from the adapter's
// key pool, variant byte bumped on every (re)registration; lkey = rkey.
#include <cstring>

#include "ndk_shim/provider/provider.h"
#include "ndk_shim/status_map.h"

namespace rnic::ndk::provider {

namespace {
uint32_t mr_access(ULONG flags) {
    uint32_t a = hsi::ACCESS_MW_BIND;  // any MR may carry windows
    if (flags & NDK_MR_FLAG_ALLOW_LOCAL_WRITE) {
        a |= hsi::ACCESS_LOCAL_WRITE;
    }
    if (flags & NDK_MR_FLAG_ALLOW_REMOTE_READ) {
        a |= hsi::ACCESS_REMOTE_READ;
    }
    if ((flags & NDK_MR_FLAG_ALLOW_REMOTE_WRITE) == NDK_MR_FLAG_ALLOW_REMOTE_WRITE) {
        a |= hsi::ACCESS_REMOTE_WRITE | hsi::ACCESS_LOCAL_WRITE;
    }
    // NDK_MR_FLAG_RDMA_READ_SINK: accepted and ignored (READ_SINK_NOT_REQUIRED is reported).
    return a;
}

hsi::cmd_slot destroy_mr_cmd(uint32_t key, uint32_t pdn) {
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_DESTROY_MR;
    c.u.obj.handle = key;
    c.u.obj.pdn = pdn;
    return c;
}

// Runs `c` as a request (RegisterMr, DeregisterMr, InitializeFastRegisterMr): synchronous
// (inline status) or STATUS_PENDING with the request completion from the ISR. `apply` runs
// with the command's status before the consumer hears of it.
NTSTATUS mr_request(mr_impl* mr, const hsi::cmd_slot& c, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx,
                    std::function<void(NTSTATUS)> apply) {
    adapter_impl* ad = mr->adapter;
    const bool sync = ad->sync();
    NTSTATUS result = STATUS_PENDING;
    ++mr->busy;
    ad->commands({c}, sync, [ad, mr, cb, ctx, sync, apply, &result](uint8_t st) {
        const NTSTATUS s = cmd_status_to_ntstatus(st);
        apply(s);
        --mr->busy;
        if (sync) {
            result = s;
        } else if (cb != nullptr) {
            cb(ctx, s);
        }
        ad->progress(mr);
    });
    return result;
}
}  // namespace

void mr_impl::teardown(std::function<void()> done) {
    adapter_impl* ad = adapter;
    mr_impl* self = this;
    auto release = [ad, self, done] {
        ad->host.free(self->fr_page_list);
        self->fr_page_list = nullptr;
        ad->keys.free(self->index);
        done();
    };
    if (!registered) {
        release();
        return;
    }
    registered = false;
    ad->commands({destroy_mr_cmd(key(), pd->pdn)}, ad->sync(), [release](uint8_t) { release(); });
}

NTSTATUS create_mr(NDK_PD* pdp, BOOLEAN fast_register, NDK_FN_CREATE_COMPLETION, PVOID,
                   NDK_MR** out) {
    pd_impl* pd = impl(pdp);
    adapter_impl* ad = pd->adapter;
    const uint32_t index = ad->keys.alloc();
    if (index == 0) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    // Software object only: the key is programmed by RegisterMr / InitializeFastRegisterMr.
    auto* mr = new mr_impl;
    ad->init_header(mr, NdkObjectTypeMr, &mr_dispatch);
    mr->adapter = ad;
    mr->pd = pd;
    mr->fast_register = fast_register != FALSE;
    mr->index = index;
    mr->variant = ad->key_variant[index];
    mr->add_antecedent(pd);
    *out = mr;
    return STATUS_SUCCESS;
}

NTSTATUS register_mr(NDK_MR* p, MDL* mdl, SIZE_T length, ULONG flags, NDK_FN_REQUEST_COMPLETION cb,
                     PVOID ctx) {
    mr_impl* mr = impl(p);
    adapter_impl* ad = mr->adapter;
    if (mr->fast_register || mr->registered) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    std::vector<uint64_t> pages;
    ULONG fbo = 0;
    const NTSTATUS st = mdl_pages(mdl, length, pages, fbo);
    if (st != STATUS_SUCCESS) {
        return st;
    }
    const uint64_t va = reinterpret_cast<uint64_t>(MmGetMdlVirtualAddress(mdl));
    if (va == 0) {
        return STATUS_INVALID_PARAMETER;  // zero-based VAs are not supported (ndkpi.md 8)
    }
    if (pages.size() > ad->params.limits.max_mtt_pages) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    auto* list = static_cast<uint64_t*>(ad->host.alloc(pages.size() * sizeof(uint64_t), true));
    std::memcpy(list, pages.data(), pages.size() * sizeof(uint64_t));
    // Building the page list is CPU work: a few ns per page, on top of the request itself.
    ad->host.cpu(ad->host.config().post_ns + 2.0 * static_cast<double>(pages.size()));
    mr->variant = ad->new_key(mr->index) & 0xFF;
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_CREATE_MR;
    c.u.mr.key = mr->key();
    c.u.mr.pdn = mr->pd->pdn;
    c.u.mr.va = va;
    c.u.mr.length = length;
    c.u.mr.page_list_addr = ad->host.phys(list);
    c.u.mr.page_count = static_cast<uint32_t>(pages.size());
    c.u.mr.access = mr_access(flags);
    c.u.mr.first_byte_offset = fbo;
    const uint32_t access = c.u.mr.access;
    return mr_request(mr, c, cb, ctx, [ad, mr, list, access](NTSTATUS s) {
        ad->host.free(list);  // the NIC copied it into its MTT
        mr->registered = s == STATUS_SUCCESS;
        mr->access = mr->registered ? access : 0;
    });
}

NTSTATUS deregister_mr(NDK_MR* p, NDK_FN_REQUEST_COMPLETION cb, PVOID ctx) {
    mr_impl* mr = impl(p);
    if (!mr->registered || mr->fast_register) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    mr->registered = false;
    mr->access = 0;
    return mr_request(mr, destroy_mr_cmd(mr->key(), mr->pd->pdn), cb, ctx, [](NTSTATUS) {});
}

NTSTATUS initialize_fast_register_mr(NDK_MR* p, ULONG page_count, BOOLEAN remote_access,
                                     NDK_FN_REQUEST_COMPLETION cb, PVOID ctx) {
    mr_impl* mr = impl(p);
    adapter_impl* ad = mr->adapter;
    if (!mr->fast_register || mr->registered || mr->busy > 0) {
        return STATUS_INVALID_DEVICE_STATE;
    }
    if (page_count == 0 || page_count > ad->params.limits.max_mtt_pages) {
        return STATUS_IMPLEMENTATION_LIMIT;
    }
    mr->page_capacity = page_count;
    mr->remote_access = remote_access != FALSE;
    mr->fr_page_list = static_cast<uint64_t*>(ad->host.alloc(page_count * sizeof(uint64_t), true));
    mr->variant = ad->new_key(mr->index) & 0xFF;
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_CREATE_MR;
    c.u.mr.key = mr->key();
    c.u.mr.pdn = mr->pd->pdn;
    c.u.mr.page_count = page_count;
    c.u.mr.access = hsi::ACCESS_FAST_REG | hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_MW_BIND |
                    (mr->remote_access ? hsi::ACCESS_REMOTE_ACCESS_OK : 0u);
    const uint32_t access = c.u.mr.access;
    return mr_request(mr, c, cb, ctx, [ad, mr, access](NTSTATUS s) {
        mr->registered = s == STATUS_SUCCESS;
        mr->access = mr->registered ? access : 0;
        if (!mr->registered) {
            ad->host.free(mr->fr_page_list);
            mr->fr_page_list = nullptr;
        }
    });
}

UINT32 mr_remote_token(NDK_MR* p) {
    return impl(p)->key();
}
UINT32 mr_local_token(NDK_MR* p) {
    return impl(p)->key();
}

// ---------------------------------------------------------------------------------------------
// Memory windows
// ---------------------------------------------------------------------------------------------
void mw_impl::teardown(std::function<void()> done) {
    adapter_impl* ad = adapter;
    const uint32_t idx = index;
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_DESTROY_MW;
    c.u.obj.handle = key();
    c.u.obj.pdn = pd->pdn;
    ad->commands({c}, ad->sync(), [ad, idx, done](uint8_t) {
        ad->keys.free(idx);
        done();
    });
}

NTSTATUS create_mw(NDK_PD* pdp, NDK_FN_CREATE_COMPLETION cb, PVOID ctx, NDK_MW** out) {
    pd_impl* pd = impl(pdp);
    adapter_impl* ad = pd->adapter;
    const uint32_t index = ad->keys.alloc();
    if (index == 0) {
        return STATUS_INSUFFICIENT_RESOURCES;
    }
    auto* mw = new mw_impl;
    ad->init_header(mw, NdkObjectTypeMw, &mw_dispatch);
    mw->adapter = ad;
    mw->pd = pd;
    mw->index = index;
    mw->variant = ad->new_key(index) & 0xFF;
    hsi::cmd_slot c{};
    c.opcode = hsi::CMD_CREATE_MW;
    c.u.obj.handle = mw->key();
    c.u.obj.pdn = pd->pdn;
    const bool sync = ad->sync();
    NTSTATUS result = STATUS_PENDING;
    ad->commands({c}, sync, [ad, mw, cb, ctx, sync, &result](uint8_t st) {
        const NTSTATUS s = cmd_status_to_ntstatus(st);
        if (s == STATUS_SUCCESS) {
            mw->add_antecedent(mw->pd);
        } else {
            ad->keys.free(mw->index);
            delete mw;
        }
        if (sync) {
            result = s;
        } else {
            cb(ctx, s, s == STATUS_SUCCESS ? &mw->Header : nullptr);
        }
    });
    if (sync && result == STATUS_SUCCESS) {
        *out = mw;
    }
    return result;
}

UINT32 mw_remote_token(NDK_MW* p) {
    return impl(p)->key();
}

}  // namespace rnic::ndk::provider
