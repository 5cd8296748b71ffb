// SPDX-License-Identifier: Apache-2.0
// Congestion-control algorithms by name (rnic.cc.algorithm) and the rnic.cc config.
#pragma once

#include <string>
#include <vector>

#include "hw/cc/cc_algorithm.h"
#include "hw/common/config_reader.h"

namespace rnic::hw::cc {

// One line per algorithm in registry.cpp: its name (the key under rnic.cc as well) and the
// function that parses rnic.cc.<name> and returns its factory.
struct registration {
    const char* name;
    cc_factory (*parse)(config::reader r);
};
const std::vector<registration>& algorithms();

struct cc_config {
    std::string algorithm = "none";  // "none" | a registered name
    cc_factory factory;              // empty for "none"
};
// Every registered algorithm's keys are validated (and shown in the effective config), the
// selected one's factory is kept.
cc_config parse_cc_config(config::reader r);

}  // namespace rnic::hw::cc
