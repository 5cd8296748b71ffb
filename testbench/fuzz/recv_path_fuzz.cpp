// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the NIC's whole handling of received frames (hw::recv_path and what it
// drives: translation, DMA into host memory, receive WQE fetch, CQ writer, ACK/NAK and READ
// responses through the transmit engine and send path).
//
// SystemC allows one elaboration per process, so LLVMFuzzerInitialize builds one bench: a
// scenario node (host memory, PCIe, NIC; defaults) on side 0 of an Ethernet link. Every input
// is a list of records (fuzz_common.h) that a feeder thread puts on side 1 of the link; the
// input ends when the feeder is done and the NIC has had DRAIN of simulated time to finish.
// Before each input the bench rewrites the contexts (PD, CQ, SRQ, 3 QPs, MRs, a window) to the
// same state, so an input means the same thing whenever it runs (the blocks' own queues and
// the simulated time carry over, as on a NIC that is never reset).
//
// Checked: no crash, ASan or UBSan report, SystemC error or uncaught exception; every frame is
// either counted by recv_path or dropped at its full FIFO (frames + fifo_drops); every frame
// parse_frame rejects is counted as a parse error or a FIFO drop; every frame the NIC sends
// back parses (the NIC never puts a malformed frame on the wire).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <systemc>

#include "hw/common/sim_context.h"
#include "hw/context/context.h"
#include "hw/gsi/gsi.h"
#include "hw/hsi/hsi.h"
#include "hw/roce/roce.h"
#include "testbench/fuzz/fuzz_common.h"
#include "testbench/scenario/node.h"
#include "testbench/scenario/scenario_config.h"
#include "tlm/ethernet/eth_link.h"

namespace {
using namespace rnic;
using namespace rnic::fuzz::bench;

const sc_core::sc_time DRAIN(50, sc_core::SC_US);  // after the last record: DMA, CQEs, ACKs
const sc_core::sc_time STEP(10, sc_core::SC_US);   // sc_start slice while the feeder runs

// Side 1 of the link: what the NIC sends (ACKs, NAKs, READ responses).
class peer_sink : public fabric::frame_sink_if {
public:
    void receive_frame(fabric::eth_frame&& f) override {
        roce::parsed_frame p;
        const roce::parse_error e = roce::parse_frame(f.data.data(), f.data.size(), p);
        if (e != roce::parse_error::NONE) {
            std::fprintf(stderr, "NIC sent a frame that does not parse: %s\n", roce::to_string(e));
            fuzz::fail("frames from the NIC parse");
        }
        ++frames;
    }
    uint64_t frames = 0;
};

class bench : public sc_core::sc_module {
public:
    hw::sim_context ctx;
    scenario::scenario_config cfg;
    fabric::eth_link link;
    scenario::node node;
    peer_sink peer;

    explicit bench(sc_core::sc_module_name name)
        : sc_module(name)
        , cfg(scenario::parse_scenario(nlohmann::json::object()))
        , link("link", cfg.topology.link, ctx)
        , node("node", 0, cfg, link, ctx) {
        link.attach(1, &peer);
        SC_HAS_PROCESS(bench);
        SC_THREAD(feeder_thread);
        for (const auto& e : ctx.stats.entries()) {
            const bool rx = e.block.size() >= 9 && e.block.rfind("recv_path") == e.block.size() - 9;
            if (rx && e.name == "frames") {
                m_rx_frames = &e;
            } else if (rx && e.name == "fifo_drops") {
                m_rx_fifo_drops = &e;
            } else if (rx && e.name == "parse_errors") {
                m_rx_parse_errors = &e;
            }
        }
        if (m_rx_frames == nullptr || m_rx_fifo_drops == nullptr || m_rx_parse_errors == nullptr) {
            fuzz::fail("recv_path publishes frames, fifo_drops and parse_errors");
        }
        write_host_memory();
        m_mtt_rw = node.nic.contexts().mtt_alloc(MR_RW_BYTES / hsi::PAGE_SIZE);
        m_mtt_ro = node.nic.contexts().mtt_alloc(MR_RO_BYTES / hsi::PAGE_SIZE);
        m_mtt_fast = node.nic.contexts().mtt_alloc(MR_FAST_BYTES / hsi::PAGE_SIZE);
    }

    void run(const std::vector<fuzz::record>& records) {
        reset_contexts();
        const uint64_t frames0 = counter(m_rx_frames);
        const uint64_t drops0 = counter(m_rx_fifo_drops);
        const uint64_t errors0 = counter(m_rx_parse_errors);
        uint64_t sent = 0;
        uint64_t malformed = 0;
        for (const auto& r : records) {
            if (r.kind == fuzz::RECORD_WAIT) {
                m_queue.push_back(
                    {true,
                     sc_core::sc_time(100.0 * static_cast<double>(r.len), sc_core::SC_NS),
                     {}});
                continue;
            }
            std::vector<uint8_t> f = r.bytes;
            if (r.kind == fuzz::RECORD_FIXED) {
                fuzz::fix_frame(f);
            }
            // Frames the GSI block claims (QP1 MADs) bypass recv_path's parser: hw/gsi checks
            // and counts them itself, so they are not expected among recv_path's parse errors.
            roce::parsed_frame p;
            if (!hw::gsi::claims(f) &&
                roce::parse_frame(f.data(), f.size(), p) != roce::parse_error::NONE) {
                ++malformed;
            }
            ++sent;
            m_queue.push_back({false, sc_core::SC_ZERO_TIME, std::move(f)});
        }
        m_work.notify(sc_core::SC_ZERO_TIME);
        while (!m_queue.empty() || m_feeding) {
            sc_core::sc_start(STEP);
        }
        sc_core::sc_start(DRAIN);
        const uint64_t frames = counter(m_rx_frames) - frames0;
        const uint64_t drops = counter(m_rx_fifo_drops) - drops0;
        const uint64_t errors = counter(m_rx_parse_errors) - errors0;
        RNIC_FUZZ_CHECK(frames + drops == sent);       // every frame arrived and was seen
        RNIC_FUZZ_CHECK(errors + drops >= malformed);  // malformed ones counted and dropped
    }

private:
    struct item {
        bool wait;
        sc_core::sc_time idle;
        std::vector<uint8_t> frame;
    };

    static uint64_t counter(const hw::stats_registry::entry* e) {
        return e->value().get<uint64_t>();
    }

    void feeder_thread() {
        for (;;) {
            while (m_queue.empty()) {
                sc_core::wait(m_work);
            }
            m_feeding = true;
            item it = std::move(m_queue.front());
            m_queue.pop_front();
            if (it.wait) {
                sc_core::wait(it.idle);
            } else {
                fabric::eth_frame f;
                f.data = std::move(it.frame);
                link.tx(1).put(std::move(f));  // blocks while the MAC FIFO is full
            }
            m_feeding = false;
        }
    }

    // Receive WQEs (never written by the NIC) and nothing else: the rest of host memory is
    // the MRs' pages and the CQ ring, which the NIC writes.
    void write_host_memory() {
        fabric::host_memory& mem = node.memory;
        for (uint32_t i = 0; i < (1u << RQ_LOG_DEPTH); ++i) {
            hsi::rq_wqe_hdr h{};
            h.wqe_index = static_cast<uint16_t>(i);
            // Slot 6 claims more SGEs than its slot holds; slot 7 has none (a receive for
            // zero-byte SENDs, which NDK allows).
            h.num_sge = i == 6 ? 255 : i == 7 ? 0 : 2;
            hsi::wqe_sge sge[2] = {
                {MR_RW_VA + i * 4096ull, 1024, i == RQ_BAD_SLOT ? 0xdead00u : MR_RW},
                {MR_RW_VA + i * 4096ull + 2048, 1024, MR_RW}};
            const uint64_t slot = RQ_RING + static_cast<uint64_t>(i) * RQ_STRIDE;
            mem.write(slot, &h, sizeof(h));
            mem.write(slot + sizeof(h), sge, sizeof(sge));
        }
        for (uint32_t i = 0; i < (1u << RQ_LOG_DEPTH); ++i) {
            hsi::rq_wqe_hdr h{};
            h.wqe_index = static_cast<uint16_t>(i);
            h.num_sge = i == 0 ? 0 : 1;
            const hsi::wqe_sge sge{MR_RW_VA + 16384 + i * 1024ull, 1024, MR_RW};
            const uint64_t slot = RQ_RTR_RING + static_cast<uint64_t>(i) * RQ_STRIDE;
            mem.write(slot, &h, sizeof(h));
            mem.write(slot + sizeof(h), &sge, sizeof(sge));
        }
        for (uint32_t i = 0; i < (1u << SRQ_LOG_DEPTH); ++i) {
            hsi::rq_wqe_hdr h{};
            h.wqe_index = static_cast<uint16_t>(i);
            h.num_sge = 1;
            const hsi::wqe_sge sge{MR_RW_VA + 32768 + i * 4096ull, 4096, MR_RW};
            const uint64_t slot = SRQ_RING + static_cast<uint64_t>(i) * SRQ_STRIDE;
            mem.write(slot, &h, sizeof(h));
            mem.write(slot + sizeof(h), &sge, sizeof(sge));
        }
    }

    void set_mr(uint32_t key, uint32_t access, uint64_t va, uint64_t bytes, uint32_t mtt_base,
                uint64_t phys) {
        hw::context_store& cs = node.nic.contexts();
        hw::mpt_entry* e = cs.mpt_slot(key);
        *e = hw::mpt_entry{};
        e->valid = e->allocated = true;
        e->key = key;
        e->pdn = PDN;
        e->access = access;
        e->base_va = va;
        e->length = bytes;
        e->mtt_base = mtt_base;
        e->page_count = e->max_pages = static_cast<uint32_t>(bytes / hsi::PAGE_SIZE);
        for (uint32_t i = 0; i < e->page_count; ++i) {
            cs.mtt(mtt_base + i) = phys + static_cast<uint64_t>(i) * hsi::PAGE_SIZE;
        }
    }

    void set_qp(uint32_t qpn, uint8_t state, uint32_t srqn) {
        hw::qp_context* qp = node.nic.contexts().qp_slot(qpn);
        *qp = hw::qp_context{};
        qp->valid = true;
        qp->state = state;
        qp->pdn = PDN;
        qp->send_cqn = qp->recv_cqn = CQN;
        qp->srqn = srqn;
        qp->sq_log_depth = 4;
        qp->sq_addr = 0x00700000 + 0x10000ull * qpn;
        qp->sq_stride = 64;
        if (srqn == 0) {
            qp->rq_log_depth = RQ_LOG_DEPTH;
            qp->rq_addr = qpn == QP_RTR ? RQ_RTR_RING : RQ_RING;
            qp->rq_stride = RQ_STRIDE;
            qp->rq_producer = 1u << RQ_LOG_DEPTH;
        }
        qp->dest_qpn = PEER_QPN;
        qp->dest_ip = (10u << 24) | 2;
        qp->dest_mac = {0x02, 0, 0, 0, 0, 0x02};
        qp->pmtu = PMTU;
    }

    void reset_contexts() {
        hw::context_store& cs = node.nic.contexts();
        *cs.pd_slot(PDN) = hw::pd_context{};
        cs.pd_slot(PDN)->valid = true;
        hw::cq_context* cq = cs.cq_slot(CQN);
        *cq = hw::cq_context{};
        cq->valid = true;
        cq->log_depth = CQ_LOG_DEPTH;
        cq->ring_addr = CQ_RING;
        cq->msix_vector = 1;
        cq->armed = hsi::CQ_ARM_SOLICITED;
        hw::srq_context* srq = cs.srq_slot(SRQN);
        *srq = hw::srq_context{};
        srq->valid = true;
        srq->pdn = PDN;
        srq->ring_addr = SRQ_RING;
        srq->log_depth = SRQ_LOG_DEPTH;
        srq->stride = SRQ_STRIDE;
        srq->producer = 1u << SRQ_LOG_DEPTH;
        srq->limit = SRQ_LIMIT;
        set_mr(MR_RW,
               hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_READ | hsi::ACCESS_REMOTE_WRITE |
                   hsi::ACCESS_MW_BIND,
               MR_RW_VA, MR_RW_BYTES, m_mtt_rw, MR_RW_PHYS);
        cs.mpt_slot(MR_RW)->bind_count = 1;
        set_mr(MR_RO, hsi::ACCESS_REMOTE_READ, MR_RO_VA, MR_RO_BYTES, m_mtt_ro, MR_RO_PHYS);
        set_mr(MR_FAST, hsi::ACCESS_FAST_REG | hsi::ACCESS_LOCAL_WRITE | hsi::ACCESS_REMOTE_WRITE,
               MR_FAST_VA, MR_FAST_BYTES, m_mtt_fast, MR_FAST_PHYS);
        hw::mpt_entry* mw = cs.mpt_slot(MW);
        *mw = hw::mpt_entry{};
        mw->valid = mw->allocated = mw->is_mw = true;
        mw->key = MW;
        mw->pdn = PDN;
        mw->access = hsi::ACCESS_REMOTE_READ | hsi::ACCESS_REMOTE_WRITE;
        mw->base_va = MW_VA;
        mw->length = MW_BYTES;
        mw->parent_index = hsi::key_index(MR_RW);
        set_qp(QP_RQ, hsi::QPS_RTS, 0);
        set_qp(QP_SRQ, hsi::QPS_RTS, SRQN);
        set_qp(QP_RTR, hsi::QPS_RTR, 0);
    }

    std::deque<item> m_queue;
    bool m_feeding = false;
    sc_core::sc_event m_work;
    const hw::stats_registry::entry* m_rx_frames = nullptr;
    const hw::stats_registry::entry* m_rx_fifo_drops = nullptr;
    const hw::stats_registry::entry* m_rx_parse_errors = nullptr;
    uint32_t m_mtt_rw = 0, m_mtt_ro = 0, m_mtt_fast = 0;
};

// Lives until the process ends (never destroyed: SystemC objects outlive sc_main anyway).
bench* g_bench = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    // Warnings and infos are the models' business; errors and fatals stay fatal (crash).
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
    g_bench = new bench("fuzz");
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // end of elaboration
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    g_bench->run(fuzz::split_records(data, size));
    return 0;
}
