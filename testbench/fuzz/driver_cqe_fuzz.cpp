// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the provider driver's decoding of what a (hostile or broken) NIC writes to
// host memory: CQEs (NdkGetCqResults[Ex]: phase, QP, opcode, WQE index, SRQ, status) and
// event-queue entries (the vector-0 ISR: command done, CQ completion and error, QP error,
// SRQ limit), with CQ arming in between.
//
// One bench per process (SystemC elaborates once): host memory, PCIe, host_system and the fake
// NIC of testbench/ndk/ndk_bench.h, which executes the driver's commands and writes whatever
// CQEs and events the input says. A consumer thread opens the adapter and a PD once; for each
// input it creates a CQ and a QP, posts receives, plays the input's records, drains the CQ, and
// closes the QP and the CQ. Input records (fixed size, the last one zero-filled):
//   [0][32 B CQE]    written to the CQ ring by the fake NIC (it sets the phase bit); byte 1 of
//                    the record selects qpn = this input's QP unless its top bit is set
//   [1][16 B event]  written to the event queue (phase set), MSI-X if armed; not
//                    EVENT_DEVICE_FATAL, which would end the driver for the whole process
//                    (tests: ndk_cq_test DeviceFatal...)
//   [2][n]           NdkGetCqResults for n % 8 results; [3][n] NdkGetCqResultsEx; [4][n] ArmCq
// Checked: no crash, sanitizer report or SystemC error; every result returned names this
// input's QP context; the QP and CQ close within 10 ms of simulated time.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <systemc>

#include "hw/common/sim_context.h"
#include "hw/hsi/hsi.h"
#include "ndk_shim/ndk_sim.h"
#include "testbench/fuzz/fuzz_common.h"
#include "testbench/ndk/ndk_bench.h"

namespace {
using namespace rnic;
using namespace rnic::ndk;
using namespace rnic::ndk::test;

constexpr size_t RECORD_BYTES = 33;
constexpr size_t MAX_RECORDS = 128;
constexpr ULONG CQ_DEPTH = 8;
constexpr double CLOSE_NS = 10e6;

struct close_done {
    bool done = false;
    static VOID fn(PVOID ctx) { static_cast<close_done*>(ctx)->done = true; }
};

class driver_bench {
public:
    hw::sim_context ctx;
    node n{"drv", sync_config(), ctx};
    fake_network net;  // the fake NIC's emulated GSI (no peer: nothing to connect to)

    driver_bench() {
        sc_core::sc_spawn([this] { consumer_thread(); });
    }

    void run(const uint8_t* data, size_t size) {
        m_input.assign(data, data + size);
        m_busy = true;
        m_start.notify(sc_core::SC_ZERO_TIME);
        while (m_busy) {
            sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_US));
        }
    }

private:
    static host_config sync_config() {
        host_config c;
        c.async_create = false;  // creation and close wait inline: a simple consumer
        return c;
    }

    void consumer_thread() {
        RNIC_FUZZ_CHECK(open_on(net, n, params_for(1), &m_adapter) == STATUS_SUCCESS);
        RNIC_FUZZ_CHECK(m_adapter->Dispatch->NdkCreatePd(m_adapter, create_log::fn, &m_log,
                                                         &m_pd) == STATUS_SUCCESS);
        for (;;) {
            while (!m_busy) {
                sc_core::wait(m_start);
            }
            one_input();
            m_busy = false;
        }
    }

    void one_input() {
        NDK_CQ* cq = nullptr;
        NDK_QP* qp = nullptr;
        RNIC_FUZZ_CHECK(m_adapter->Dispatch->NdkCreateCq(m_adapter, CQ_DEPTH, notify_log::fn,
                                                         &m_notes, nullptr, create_log::fn, &m_log,
                                                         &cq) == STATUS_SUCCESS);
        RNIC_FUZZ_CHECK(m_pd->Dispatch->NdkCreateQp(m_pd, cq, cq, this, 8, 8, 2, 2, 64,
                                                    create_log::fn, &m_log, &qp) == STATUS_SUCCESS);
        const uint32_t qpn = get_qp_number(qp);
        const uint32_t cqn = n.nic.cqs.rbegin()->first;  // the CQ just created
        NDK_SGE sge{};
        sge.Length = 64;
        for (uintptr_t i = 0; i < 4; ++i) {
            RNIC_FUZZ_CHECK(qp->Dispatch->NdkReceive(qp, reinterpret_cast<void*>(0x100 + i), &sge,
                                                     1) == STATUS_SUCCESS);
        }
        size_t records = 0;
        for (size_t off = 0; off < m_input.size() && records < MAX_RECORDS;
             off += RECORD_BYTES, ++records) {
            uint8_t r[RECORD_BYTES] = {};
            std::memcpy(r, m_input.data() + off, std::min(RECORD_BYTES, m_input.size() - off));
            switch (r[0] % 5) {
                case 0: {
                    hsi::cqe e{};
                    std::memcpy(&e, r + 1, sizeof(e));
                    if ((r[1] & 0x80) == 0) {
                        e.qpn = qpn;
                    }
                    n.nic.post_cqe(cqn, e);
                    break;
                }
                case 1: {
                    hsi::event_entry e{};
                    std::memcpy(&e, r + 1, sizeof(e));
                    if (e.type == hsi::EVENT_DEVICE_FATAL) {
                        break;  // the driver is dead for good: every later input would fail
                    }
                    n.nic.post_event(e.type, e.data);
                    break;
                }
                case 2:
                    poll(cq, r[1] % 8, false);
                    break;
                case 3:
                    poll(cq, r[1] % 8, true);
                    break;
                case 4:
                    cq->Dispatch->NdkArmCq(cq,
                                           r[1] % 2 ? NDK_CQ_NOTIFY_ANY : NDK_CQ_NOTIFY_SOLICITED);
                    break;
            }
            settle();  // MMIO and DMA land, the ISR runs
        }
        while (poll(cq, 8, true) != 0) {
        }
        close_done qp_closed, cq_closed;
        if (qp->Dispatch->NdkCloseQp(&qp->Header, close_done::fn, &qp_closed) == STATUS_SUCCESS) {
            qp_closed.done = true;
        }
        RNIC_FUZZ_CHECK(wait_until([&] { return qp_closed.done; }, CLOSE_NS));
        if (cq->Dispatch->NdkCloseCq(&cq->Header, close_done::fn, &cq_closed) == STATUS_SUCCESS) {
            cq_closed.done = true;
        }
        RNIC_FUZZ_CHECK(wait_until([&] { return cq_closed.done; }, CLOSE_NS));
    }

    ULONG poll(NDK_CQ* cq, ULONG k, bool ex) {
        if (ex) {
            NDK_RESULT_EX r[8]{};
            const ULONG got = cq->Dispatch->NdkGetCqResultsEx(cq, r, k);
            RNIC_FUZZ_CHECK(got <= k);
            for (ULONG i = 0; i < got; ++i) {
                RNIC_FUZZ_CHECK(r[i].QPContext == this);
            }
            return got;
        }
        NDK_RESULT r[8]{};
        const ULONG got = cq->Dispatch->NdkGetCqResults(cq, r, k);
        RNIC_FUZZ_CHECK(got <= k);
        for (ULONG i = 0; i < got; ++i) {
            RNIC_FUZZ_CHECK(r[i].QPContext == this);
        }
        return got;
    }

    NDK_ADAPTER* m_adapter = nullptr;
    NDK_PD* m_pd = nullptr;
    create_log m_log;
    notify_log m_notes;
    std::vector<uint8_t> m_input;
    bool m_busy = false;
    sc_core::sc_event m_start;
};

// Lives until the process ends (never destroyed: SystemC objects outlive sc_main anyway).
driver_bench* g_bench = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
    g_bench = new driver_bench();
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    g_bench->run(data, size);
    return 0;
}
