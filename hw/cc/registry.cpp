// SPDX-License-Identifier: Apache-2.0
// The congestion-control algorithm registry: an explicit table (a static library would drop
// self-registering objects nobody references).
#include "hw/cc/registry.h"

namespace rnic::hw::cc {

// Each algorithm's file defines its parse function.
cc_factory parse_dcqcn(config::reader r);
cc_factory parse_timely(config::reader r);
cc_factory parse_hpcc(config::reader r);

const std::vector<registration>& algorithms() {
    static const std::vector<registration> list = {
        {"dcqcn", &parse_dcqcn},
        {"timely", &parse_timely},
        {"hpcc", &parse_hpcc},
    };
    return list;
}

cc_config parse_cc_config(config::reader r) {
    cc_config c;
    r.get("algorithm", c.algorithm);
    std::string names = "\"none\"";
    bool known = c.algorithm == "none";
    for (const registration& a : algorithms()) {
        names += std::string(", \"") + a.name + "\"";
        cc_factory f = a.parse(r.child(a.name));
        if (c.algorithm == a.name) {
            c.factory = std::move(f);
            known = true;
        }
    }
    if (!known) {
        r.error("algorithm", "\"" + c.algorithm + "\" is not one of " + names);
    }
    r.finish();
    return c;
}

}  // namespace rnic::hw::cc
