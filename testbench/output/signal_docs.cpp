// SPDX-License-Identifier: Apache-2.0
// The meaning of every waves.vcd signal.
#include "testbench/output/signal_docs.h"

#include <fnmatch.h>

namespace rnic::output {

namespace {

struct entry {
    const char* pattern;  // fnmatch(3) pattern over the hierarchical name; '*' crosses dots
    const char* meaning;
};

// Signals that are not FIFO fields. Names are "<node>.nic.<block>.<signal>" etc.; counters are
// the block's stats.json counters, traced so that their steps show when things happen (blocks
// with closed-form timing have no other state to sample).
const entry SIGNALS[] = {
    // Ethernet link
    {"link.dir0.busy",
     "a frame is being serialized from node 0 to node 1 (its wire slot: "
     "preamble to inter-frame gap)"},
    {"link.dir1.busy",
     "a frame is being serialized from node 1 to node 0 (its wire slot: "
     "preamble to inter-frame gap)"},
    {"link.dir0.pfc_paused",
     "PFC: a pause frame from node 1 holds some priority of node 0's transmitter (802.1Qbb; "
     "set when a pause frame arrives, cleared by the next one or when node 0 next looks after "
     "expiry)"},
    {"link.dir1.pfc_paused",
     "PFC: a pause frame from node 0 holds some priority of node 1's transmitter (802.1Qbb; "
     "set when a pause frame arrives, cleared by the next one or when node 1 next looks after "
     "expiry)"},
    {"link.dir0.pfc_xoff",
     "PFC: priorities node 0's receive FIFO holds off (bit p: XOFF sent for priority p, "
     "hw/recv_path/README.md, PFC)"},
    {"link.dir1.pfc_xoff",
     "PFC: priorities node 1's receive FIFO holds off (bit p: XOFF sent for priority p, "
     "hw/recv_path/README.md, PFC)"},
    // Links of a fabric (topology links) and switches (tlm/switch/README.md)
    {"*.dir*.busy", "a frame is being serialized in this direction of the link (side d sends)"},
    {"*.dir*.pfc_paused", "PFC: some priority of side d's transmitter is paused by a pause frame"},
    {"*.dir*.pfc_xoff", "PFC: priorities side d's receiver holds off (bit p: XOFF for priority p)"},
    {"*.port*.q*.occupancy_bytes", "switch: egress queue (port, priority) occupancy, bytes"},
    {"*.port*.q*.ingress_bytes",
     "switch: ingress accounting of (port, priority): bytes received there and still buffered "
     "(PFC XOFF/XON compare it)"},
    {"*.port*.q*.xoff", "switch: the ingress queue (port, priority) has sent XOFF (PFC)"},
    // doorbell
    {"node*.nic.doorbell.pending", "QPs rung (doorbell decoded) and waiting for the scheduler"},
    {"node*.nic.doorbell.sq_doorbells", "counter: send-queue doorbells received"},
    {"node*.nic.doorbell.scheduled", "counter: QPs handed to WQE fetch"},
    // command processor
    {"node*.nic.cmd_processor.busy", "a command is executing (firmware time)"},
    {"node*.nic.cmd_processor.consumer", "command-queue consumer index"},
    // WQE fetch
    {"node*.nic.wqe_fetch.wqes_fetched", "counter: WQEs fetched"},
    {"node*.nic.wqe_fetch.dma_reads", "counter: DMA reads of send-queue rings"},
    // translation and context cache
    {"node*.nic.translation.lookups", "counter: key lookups (MPT)"},
    {"node*.nic.translation.pages", "counter: MTT pages translated"},
    {"node*.nic.translation.faults", "counter: lookups refused (bad key, PD, rights, bounds)"},
    {"node*.nic.context_cache.qpc_hits", "counter: QP context cache hits"},
    {"node*.nic.context_cache.qpc_misses", "counter: QP context cache misses (line read by DMA)"},
    {"node*.nic.context_cache.mpt_hits", "counter: MPT (key) cache hits"},
    {"node*.nic.context_cache.mpt_misses", "counter: MPT cache misses"},
    {"node*.nic.context_cache.mtt_hits", "counter: MTT cache hits"},
    {"node*.nic.context_cache.mtt_misses", "counter: MTT cache misses"},
    // DMA engine
    {"node*.nic.dma_engine.reads_in_flight", "DMA reads issued and not yet complete (all clients)"},
    {"node*.nic.dma_engine.writes_in_flight",
     "DMA writes whose requester waits for the last TLP to leave"},
    // QP context state of the QPs chosen by outputs.waves_qps (hw::qp_context)
    {"node*.nic.qp*.state",
     "QP state: 0 RESET, 1 INIT, 2 RTR, 3 RTS, 4 ERROR (set by MODIFY_QP commands)"},
    {"node*.nic.qp*.sq_producer", "send-queue producer index from the doorbells (free-running)"},
    {"node*.nic.qp*.sq_fetched", "send-queue WQEs read by WQE fetch (free-running)"},
    {"node*.nic.qp*.next_psn", "requester: next PSN to send"},
    {"node*.nic.qp*.outstanding_reads", "requester: RDMA READs in flight"},
    {"node*.nic.qp*.rq_producer", "receive-queue producer index from the doorbells"},
    {"node*.nic.qp*.rq_consumer", "receive WQEs taken by the receive path"},
    {"node*.nic.qp*.expected_psn", "responder: next PSN it accepts"},
    {"node*.nic.qp*.msn", "responder: messages completed (MSN of its ACKs)"},
    {"node*.nic.qp*.cc_rate_mbps",
     "congestion control: the QP's current rate, Mb/s (0: not limited, line rate)"},
    {"node*.nic.qp*.cc_target_mbps", "congestion control: target rate, Mb/s (DCQCN R_T; 0: line)"},
    {"node*.nic.qp*.cc_alpha", "congestion control: DCQCN alpha x1024 (as last updated)"},
    {"node*.nic.qp*.cc_cnps", "congestion control: CNPs received by the QP (steps = arrivals)"},
    // congestion control: notification point
    {"node*.nic.np.ce_packets", "counter: data packets received with ECN CE"},
    {"node*.nic.np.cnps_sent", "counter: CNPs sent (notification point)"},
    {"node*.nic.np.cnps_received", "counter: CNPs received (to the reaction point)"},
    // transmit engine
    {"node*.nic.tx_engine.wqes", "counter: WQEs processed"},
    {"node*.nic.tx_engine.messages", "counter: request messages handed to the send path"},
    {"node*.nic.tx_engine.completions", "counter: send-queue CQEs requested"},
    {"node*.nic.tx_engine.acks_sent", "counter: ACK/NAK packets sent (responder)"},
    {"node*.nic.tx_engine.timeouts", "counter: retransmission timer expiries"},
    {"node*.nic.tx_engine.retransmits", "counter: messages retransmitted (go-back-N)"},
    // send path
    {"node*.nic.send_path.idle", "the send path holds no message (no descriptor, no beat)"},
    {"node*.nic.send_path.frames_out", "counter: frames handed to the MAC"},
    {"node*.nic.send_path.payload_fifo.bytes",
     "payload bytes buffered in front of the packet "
     "builder"},
    // receive path
    {"node*.nic.recv_path.frames", "counter: frames received"},
    {"node*.nic.recv_path.messages", "counter: request messages completed as responder"},
    {"node*.nic.recv_path.acks_received", "counter: ACKs received (requester)"},
    {"node*.nic.recv_path.naks_sent", "counter: NAKs sent"},
    {"node*.nic.recv_path.fifo_drops", "counter: frames dropped, receive FIFO full"},
    {"node*.nic.recv_path.bad_icrc", "counter: frames dropped, ICRC mismatch"},
    {"node*.nic.recv_path.duplicates", "counter: duplicate requests (re-ACKed)"},
    {"node*.nic.recv_path.out_of_sequence", "counter: requests ahead of the expected PSN"},
    // CQ writer
    {"node*.nic.cq_writer.events_queued", "events waiting to be written to the event queue"},
    {"node*.nic.cq_writer.eq_producer", "event-queue producer index"},
    {"node*.nic.cq_writer.eq_armed", "the event queue will raise an interrupt on its next event"},
    {"node*.nic.cq_writer.cqes", "counter: CQEs written"},
    {"node*.nic.cq_writer.interrupts", "counter: MSI-X messages sent"},
    // NetDMA
    {"node*.nic.netdma.arbiter_waiting", "NetDMA requests waiting for the channel arbiter"},
    {"node*.nic.netdma.channel*.state",
     "NetDMA channel run state: 0 halted, 1 running, 2 idle, 3 suspended"},
    // PCIe
    {"node*.pcie.up_writes_in_flight", "posted writes device->host not yet in host memory"},
    {"node*.pcie.up_mwr_tlps", "counter: memory write TLPs device->host (DMA writes, MSI-X)"},
    {"node*.pcie.up_mrd_tlps", "counter: memory read requests device->host"},
    {"node*.pcie.down_mwr_tlps", "counter: memory write TLPs host->device (MMIO, doorbells)"},
    {"node*.pcie.down_cpld_tlps", "counter: completions with data host->device (DMA read data)"},
    {"node*.pcie.msi_writes", "counter: MSI-X interrupt messages"},
    // workload
    {"workload.node*.outstanding",
     "work requests the node's consumer (every flow role on it) posted and has not reaped"},
};

// FIFOs (hw::channel and the send path's input FIFOs): "<scope>.occupancy|valid|ready".
const entry FIFOS[] = {
    {"link.mac_tx0", "node 0's MAC transmit FIFO (frames waiting for the wire)"},
    {"link.mac_tx1", "node 1's MAC transmit FIFO (frames waiting for the wire)"},
    {"*.mac_tx*",
     "the MAC transmit FIFO of side d of a fabric link (a NIC's frames waiting for "
     "the wire)"},
    {"link.mac_ctrl_tx0",
     "node 0's MAC control queue (CM MADs, ARP, CNPs waiting for the wire; sent ahead of data)"},
    {"link.mac_ctrl_tx1",
     "node 1's MAC control queue (CM MADs, ARP, CNPs waiting for the wire; sent ahead of data)"},
    {"*.mac_ctrl_tx*",
     "the MAC control queue of side d of a fabric link (a NIC's CM MADs, ARP and CNPs waiting "
     "for the wire; sent ahead of data)"},
    {"node*.nic.doorbell.sq_ready", "QPs with WQEs to fetch, waiting for WQE fetch"},
    {"node*.nic.doorbell.cmd_doorbells", "command doorbells waiting for the command processor"},
    {"node*.nic.wqe_fetch.wqes", "fetched WQEs waiting for the transmit engine"},
    {"node*.nic.tx_engine.requests", "request jobs waiting for the send path"},
    {"node*.nic.tx_engine.responses", "ACKs and READ responses waiting for the send path"},
    {"node*.nic.send_path.desc_fifo", "message descriptors in the send path's input FIFO"},
    {"node*.nic.send_path.payload_fifo", "the send path's payload buffer"},
    {"node*.nic.send_path.*", "a send path input stream"},
    {"node*.nic.recv_path.rx_fifo", "received frames waiting for the parser"},
    {"node*.nic.cq_writer.requests", "completion requests waiting for the CQ writer"},
};

const entry FIFO_FIELDS[] = {
    {"occupancy", "entries queued"},
    {"valid", "not empty: the consumer has an entry (valid)"},
    {"ready", "not full: the producer may put one (ready)"},
};

bool matches(const char* pattern, const std::string& s) {
    return fnmatch(pattern, s.c_str(), 0) == 0;
}

}  // namespace

std::string signal_meaning(const std::string& name) {
    for (const entry& e : SIGNALS) {
        if (matches(e.pattern, name)) {
            return e.meaning;
        }
    }
    const size_t dot = name.rfind('.');
    if (dot == std::string::npos) {
        return "";
    }
    const std::string scope = name.substr(0, dot);
    const std::string field = name.substr(dot + 1);
    for (const entry& f : FIFO_FIELDS) {
        if (field != f.pattern) {
            continue;
        }
        for (const entry& e : FIFOS) {
            if (matches(e.pattern, scope)) {
                return std::string(e.meaning) + ": " + f.meaning;
            }
        }
    }
    return "";
}

}  // namespace rnic::output
