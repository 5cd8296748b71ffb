// SPDX-License-Identifier: Apache-2.0
// PCIe link parameters and the bandwidth model of Neugebauer et al. (SIGCOMM 2018).
#include "tlm/pcie/pcie_config.h"

#include <algorithm>

namespace rnic::fabric {

double pcie_config::raw_gbps() const {
    static const double gts[] = {0, 2.5, 5.0, 8.0, 16.0, 32.0};
    const double encoding = gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
    return gts[gen] * lanes * encoding;
}

namespace {
// Bytes of TLP traffic per ACK DLLP and per FC-update DLLP: PCIe Base Spec 5.0 tables 3-7..3-9
// and 2-46..2-48 (the values the pcie-bench model uses). The two tables agree for x1..x16, and
// 8 GT/s and faster share one table. [gen1, gen2, gen3+][x1, x2, x4, x8, x16][MPS 128..4096].
constexpr uint32_t DLLP_LIMIT[3][5][6] = {
    {{237, 416, 559, 1071, 2095, 4143},
     {128, 217, 289, 545, 1057, 2081},
     {73, 118, 154, 282, 538, 1050},
     {67, 107, 86, 150, 278, 534},
     {48, 72, 86, 150, 278, 534}},
    {{288, 467, 610, 1122, 2146, 4194},
     {179, 268, 340, 596, 1108, 2132},
     {124, 169, 205, 333, 589, 1101},
     {118, 158, 137, 201, 329, 585},
     {99, 123, 137, 201, 329, 585}},
    {{333, 512, 655, 1167, 2191, 4239},
     {224, 313, 385, 641, 1153, 2177},
     {169, 214, 250, 378, 634, 1146},
     {163, 203, 182, 246, 374, 630},
     {144, 168, 182, 246, 374, 630}},
};

uint32_t log2_u32(uint32_t v) {
    uint32_t n = 0;
    while (v > 1) {
        v >>= 1;
        ++n;
    }
    return n;
}

uint32_t spec_dllp_limit(uint32_t gen, uint32_t lanes, uint32_t mps) {
    const uint32_t g = gen >= 3 ? 2 : gen - 1;
    const uint32_t w = std::min<uint32_t>(log2_u32(lanes), 4);
    const uint32_t m = std::min<uint32_t>(log2_u32(mps) - 7, 5);
    return DLLP_LIMIT[g][w][m];
}
}  // namespace

uint32_t pcie_config::effective_ack_limit() const {
    return ack_limit != 0 ? ack_limit : spec_dllp_limit(gen, lanes, mps);
}

uint32_t pcie_config::effective_fc_update() const {
    return fc_update != 0 ? fc_update : spec_dllp_limit(gen, lanes, mps);
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
