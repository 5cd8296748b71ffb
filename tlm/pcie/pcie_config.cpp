// SPDX-License-Identifier: Apache-2.0
// PCIe link parameters and the bandwidth model of Neugebauer et al. (SIGCOMM 2018).
#include "tlm/pcie/pcie_config.h"

namespace rnic::fabric {

double pcie_config::raw_gbps() const {
    static const double gts[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0};
    const double encoding = gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
    return gts[gen] * lanes * encoding;
}

// AckLimit / FCUpdate from the PCIe spec tables (reference: Gen3 x8 MPS 256: 203, x16: 168).
uint32_t pcie_config::effective_ack_limit() const {
    if (ack_limit != 0) {
        return ack_limit;
    }
    return lanes >= 16 ? 168 : 203;
}

uint32_t pcie_config::effective_fc_update() const {
    if (fc_update != 0) {
        return fc_update;
    }
    return lanes >= 16 ? 168 : 203;
}

double pcie_config::tlp_bytes_per_ns() const {
    const double dll = 1.0 - 8.0 / effective_ack_limit() - 8.0 / effective_fc_update() -
                       4.0 / 1538.0;
    return raw_gbps() / 8.0 * dll;
}

pcie_config parse_pcie_config(config::reader r) {
    pcie_config c;
    r.get("gen", c.gen, 1u, 5u);
    r.get_one_of("lanes", c.lanes, {1u, 2u, 4u, 8u, 16u});
    r.get_one_of("mps", c.mps, {128u, 256u, 512u, 1024u, 2048u, 4096u});
    r.get_one_of("mrrs", c.mrrs, {128u, 256u, 512u, 1024u, 2048u, 4096u});
    r.get("rcb_completions", c.rcb_completions);
    r.get("max_read_tags", c.max_read_tags, 1u, 1024u);
    r.get("latency_ns", c.latency_ns, 0.0, 100000.0);
    r.get("ack_limit", c.ack_limit, 0u, 65536u);
    r.get("fc_update", c.fc_update, 0u, 65536u);
    r.get("ecrc", c.ecrc);
    r.finish();
    return c;
}

}  // namespace rnic::fabric
