// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the scenario config loader (scenario::parse_scenario) on arbitrary JSON.
//
// Checked for every input: bytes that are not JSON stop at nlohmann's parse error; a JSON
// document either parses or throws config::config_error, nothing else (no crash, no other
// exception); every error names where it is, i.e. starts with "(top level): " or with a dotted
// JSON path whose first component is a top-level key of the schema or of the document,
// followed by ": " and a message. An accepted document's effective config (defaults filled in,
// what config.json records) parses again to itself.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "hw/common/config_reader.h"
#include "testbench/fuzz/fuzz_common.h"
#include "testbench/scenario/scenario_config.h"

namespace {

bool names_a_path(const std::string& e, const nlohmann::json& doc) {
    if (e.rfind("(top level): ", 0) == 0) {
        return e.size() > 13;
    }
    // The first path component ends at the first '.' or ": " after it; keys of the document
    // may themselves contain either, so try every split point.
    static const char* const SCHEMA[] = {"topology", "rnic", "host", "workload", "outputs"};
    for (const char* k : SCHEMA) {
        const std::string key(k);
        if (e.rfind(key, 0) == 0 && e.size() > key.size() &&
            (e[key.size()] == '.' || e.compare(key.size(), 2, ": ") == 0)) {
            return e.find(": ", key.size()) != std::string::npos;
        }
    }
    if (!doc.is_object()) {
        return false;
    }
    for (const auto& item : doc.items()) {
        const std::string& key = item.key();
        if (e.rfind(key, 0) == 0 && e.compare(key.size(), 2, ": ") == 0 &&
            e.size() > key.size() + 2) {
            return true;  // an unknown top-level key of the document
        }
    }
    return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(data, data + size);
    } catch (const nlohmann::json::exception&) {
        return 0;  // not JSON: the loader reports nlohmann's message with the file name
    }
    nlohmann::json effective;
    try {
        const rnic::scenario::scenario_config s = rnic::scenario::parse_scenario(doc);
        effective = s.effective;
    } catch (const rnic::config::config_error& e) {
        RNIC_FUZZ_CHECK(!e.errors.empty());
        for (const std::string& line : e.errors) {
            if (!names_a_path(line, doc)) {
                std::fprintf(stderr, "error without a JSON path: \"%s\"\n", line.c_str());
                RNIC_FUZZ_CHECK(names_a_path(line, doc));
            }
        }
        return 0;
    }
    // Any other exception escapes: libFuzzer reports it as a crash (uncaught exception).
    RNIC_FUZZ_CHECK(effective.is_object());
    try {
        const rnic::scenario::scenario_config again = rnic::scenario::parse_scenario(effective);
        RNIC_FUZZ_CHECK(again.effective == effective);
    } catch (const rnic::config::config_error& e) {
        std::fprintf(stderr, "effective config rejected:\n%s\n", e.what());
        RNIC_FUZZ_CHECK(!"the effective config of an accepted scenario parses again");
    }
    return 0;
}
