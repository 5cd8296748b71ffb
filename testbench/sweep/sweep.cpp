// SPDX-License-Identifier: Apache-2.0
// Sweep file parsing, grid/zip expansion and the up-front check of every point's scenario.
#include "testbench/sweep/sweep.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "hw/common/config_reader.h"
#include "testbench/scenario/scenario_config.h"
#include "testbench/sweep/results.h"

namespace rnic::sweep {

namespace fs = std::filesystem;

namespace {

// The sweep sets outputs.dir of every point itself (its folder under points/).
constexpr const char* OUTPUT_DIR_PATH = "outputs.dir";
constexpr size_t MAX_REPORTED_ERRORS = 50;

// A dot-separated config path: non-empty components.
bool is_config_path(const std::string& p) {
    if (p.empty() || p.front() == '.' || p.back() == '.' || p.find("..") != std::string::npos) {
        return false;
    }
    return p.find_first_of("= \t\n") == std::string::npos;
}

bool is_output_dir_path(const std::string& p) {
    return p == OUTPUT_DIR_PATH || p.rfind(std::string(OUTPUT_DIR_PATH) + ".", 0) == 0 ||
           p == "outputs";
}

// range: {"from", "to", "step"} (arithmetic) or {"from", "to", "factor"} (geometric). Integer
// inputs give integer values.
std::vector<nlohmann::json> parse_range(config::reader r) {
    std::vector<nlohmann::json> out;
    const nlohmann::json* from = r.raw("from");
    const nlohmann::json* to = r.raw("to");
    const nlohmann::json* step = r.raw("step");
    const nlohmann::json* factor = r.raw("factor");
    r.finish();
    bool ok = true;
    for (const auto& [key, v] :
         {std::pair<const char*, const nlohmann::json*>{"from", from}, {"to", to}}) {
        if (v == nullptr) {
            r.error(key, "missing");
            ok = false;
        } else if (!v->is_number()) {
            r.error(key, config::describe(*v) + " is not a number");
            ok = false;
        }
    }
    if ((step == nullptr) == (factor == nullptr)) {
        r.error(step != nullptr ? "factor" : "step",
                step != nullptr ? "give step or factor, not both" : "missing (or factor)");
        return out;
    }
    const nlohmann::json* inc = step != nullptr ? step : factor;
    const char* inc_key = step != nullptr ? "step" : "factor";
    if (!inc->is_number()) {
        r.error(inc_key, config::describe(*inc) + " is not a number");
        return out;
    }
    if (!ok) {
        return out;
    }
    const double a = from->get<double>();
    const double b = to->get<double>();
    const double s = inc->get<double>();
    if (b < a) {
        r.error("to", to->dump() + " is below from (" + from->dump() + ")");
        return out;
    }
    if (step != nullptr && !(s > 0)) {
        r.error("step", inc->dump() + " is not above 0");
        return out;
    }
    if (factor != nullptr && (!(s > 1) || !(a > 0))) {
        r.error(!(s > 1) ? "factor" : "from",
                !(s > 1) ? inc->dump() + " is not above 1" : from->dump() + " is not above 0");
        return out;
    }
    const bool integral =
        from->is_number_integer() && to->is_number_integer() && inc->is_number_integer();
    // A little slack so that 0.1-steps reach `to` despite rounding.
    const double limit = b + std::abs(b) * 1e-9;
    double v = a;
    for (size_t i = 0; v <= limit; ++i) {
        if (out.size() >= MAX_POINTS) {
            r.error("to", "more than " + std::to_string(MAX_POINTS) + " values from " +
                              from->dump() + " to " + to->dump());
            out.clear();
            return out;
        }
        if (integral) {
            out.emplace_back(static_cast<int64_t>(std::llround(v)));
        } else {
            out.emplace_back(v);
        }
        v = step != nullptr ? a + s * static_cast<double>(i + 1) : v * s;
    }
    return out;
}

// One parameter object: {"name"?, "path" | "paths", "values" | "range"}.
parameter parse_parameter(const nlohmann::json& j, const std::string& origin,
                          config::parse_context& ctx) {
    parameter p;
    p.origin = origin;
    config::reader r(j, origin, ctx);
    if (!j.is_object()) {
        return p;
    }
    if (r.has("zip")) {
        r.error("zip", "a zip group cannot be nested");
        r.raw("zip");
    }
    const nlohmann::json* path = r.raw("path");
    const nlohmann::json* paths = r.raw("paths");
    if ((path == nullptr) == (paths == nullptr)) {
        r.error(path != nullptr ? "paths" : "path",
                path != nullptr ? "give path or paths, not both"
                                : "missing (the config path to vary, e.g. workload.message_bytes)");
    } else if (path != nullptr) {
        if (!path->is_string()) {
            r.error("path", config::describe(*path) + " is not a string");
        } else if (!is_config_path(path->get<std::string>())) {
            r.error("path", path->dump() + " is not a config path like workload.message_bytes");
        } else {
            p.paths.push_back(path->get<std::string>());
        }
    } else if (!paths->is_array()) {
        r.error("paths", config::describe(*paths) + " is not an array of config paths");
    } else if (paths->empty()) {
        r.error("paths", "empty (give at least one config path)");
    } else {
        for (size_t i = 0; i < paths->size(); ++i) {
            const nlohmann::json& e = (*paths)[i];
            if (!e.is_string() || !is_config_path(e.get<std::string>())) {
                r.error("paths." + std::to_string(i),
                        config::describe(e) + " is not a config path like workload.message_bytes");
            } else {
                p.paths.push_back(e.get<std::string>());
            }
        }
    }
    for (const auto& q : p.paths) {
        if (is_output_dir_path(q)) {
            r.error(path != nullptr ? "path" : "paths",
                    q + " is chosen by the sweep (each point writes into points/<id>)");
        }
    }

    const nlohmann::json* values = r.raw("values");
    const bool has_range = r.has("range");
    if ((values == nullptr) == !has_range) {
        r.error(values != nullptr ? "range" : "values",
                values != nullptr ? "give values or range, not both"
                                  : "missing (a list of values, or a range)");
        r.raw("range");
    } else if (values != nullptr) {
        if (!values->is_array()) {
            r.error("values", config::describe(*values) + " is not an array");
        } else if (values->empty()) {
            r.error("values", "empty (give at least one value)");
        } else {
            p.values.assign(values->begin(), values->end());
            for (size_t i = 0; i < p.values.size(); ++i) {
                if (p.values[i].is_null()) {
                    r.error("values." + std::to_string(i), "null is not a config value");
                }
            }
        }
    } else {
        p.values = parse_range(r.child("range"));
    }

    const nlohmann::json* name = r.raw("name");
    if (name != nullptr) {
        if (!name->is_string() || name->get<std::string>().empty()) {
            r.error("name", config::describe(*name) + " is not a non-empty string");
        } else {
            p.name = name->get<std::string>();
        }
    }
    if (p.name.empty() && !p.paths.empty()) {
        p.name = p.paths.front();
    }
    if (p.name.find_first_of(",\"\n\r") != std::string::npos) {
        r.error("name", nlohmann::json(p.name).dump() +
                            " holds a comma, quote or newline, which results.csv headers avoid");
    } else if (is_results_column(p.name)) {
        r.error(
            name != nullptr ? "name" : (path != nullptr ? "path" : "paths"),
            nlohmann::json(p.name).dump() + " is a column results.csv already has; give a name");
    }
    r.finish();
    return p;
}

// {"name": "qpc_misses_node1", "stat": "/blocks/node1.nic.context_cache/qpc_misses"}
stat_column parse_stat_column(const nlohmann::json& e, const std::string& origin,
                              config::parse_context& ctx) {
    stat_column c;
    if (!e.is_object()) {
        ctx.errors.push_back(origin + ": " + config::describe(e) +
                             " is not an object {\"name\", \"stat\"}");
        return c;
    }
    config::reader r(e, origin, ctx);
    const nlohmann::json* name = r.raw("name");
    const nlohmann::json* stat = r.raw("stat");
    r.finish();
    if (name == nullptr) {
        r.error("name", "missing (the results.csv column name)");
    } else if (!name->is_string() || name->get<std::string>().empty()) {
        r.error("name", config::describe(*name) + " is not a non-empty string");
    } else if (name->get<std::string>().find_first_of(",\"\n\r") != std::string::npos) {
        r.error("name", name->dump() +
                            " holds a comma, quote or newline, which results.csv "
                            "headers avoid");
    } else if (is_results_column(name->get<std::string>())) {
        r.error("name", name->dump() + " is a column results.csv already has");
    } else {
        c.name = name->get<std::string>();
    }
    if (stat == nullptr) {
        r.error("stat",
                "missing (a JSON pointer into stats.json, like "
                "/blocks/node1.nic.context_cache/qpc_misses)");
    } else if (!stat->is_string() || stat->get<std::string>().empty() ||
               stat->get<std::string>().front() != '/') {
        r.error("stat", config::describe(*stat) +
                            " is not a JSON pointer into stats.json (it starts with /)");
    } else {
        try {
            nlohmann::json::json_pointer check(stat->get<std::string>());
            c.pointer = stat->get<std::string>();
        } catch (const nlohmann::json::exception&) {
            r.error("stat", stat->dump() + " is not a valid JSON pointer (~ must be ~0 or ~1)");
        }
    }
    return c;
}

std::vector<std::string> read_file_or_error(const std::string& file, std::string& text) {
    std::ifstream in(file);
    if (!in) {
        return {file + ": cannot open"};
    }
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    return {};
}

nlohmann::json parse_json_text(const std::string& text) {
    return nlohmann::json::parse(text, nullptr, true, /*ignore_comments=*/true);
}

// The path a scenario error message starts with ("workload.qps: 0 out of range" -> "workload.qps").
std::string error_path(const std::string& message) {
    const size_t colon = message.find(": ");
    return colon == std::string::npos ? std::string() : message.substr(0, colon);
}

bool path_covers(const std::string& varied, const std::string& error_at) {
    return error_at == varied ||
           (error_at.size() > varied.size() && error_at.compare(0, varied.size(), varied) == 0 &&
            error_at[varied.size()] == '.');
}

// Collects validation errors in first-seen order without repeats.
class error_list {
public:
    void add(const std::string& e) {
        if (m_seen.emplace(e, true).second) {
            m_errors.push_back(e);
        }
    }
    std::vector<std::string> take() {
        if (m_errors.size() > MAX_REPORTED_ERRORS) {
            const size_t more = m_errors.size() - MAX_REPORTED_ERRORS;
            m_errors.resize(MAX_REPORTED_ERRORS);
            m_errors.push_back("... and " + std::to_string(more) + " more error" +
                               (more == 1 ? "" : "s"));
        }
        return m_errors;
    }
    bool empty() const { return m_errors.empty(); }

private:
    std::vector<std::string> m_errors;
    std::map<std::string, bool> m_seen;
};

}  // namespace

std::string format_value(const nlohmann::json& v) {
    return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string point_id(size_t index, size_t count) {
    size_t width = 1;
    for (size_t n = count > 0 ? count - 1 : 0; n >= 10; n /= 10) {
        ++width;
    }
    width = std::max<size_t>(width, 4);
    std::string s = std::to_string(index);
    return std::string(s.size() < width ? width - s.size() : 0, '0') + s;
}

sweep_spec parse_sweep(const nlohmann::json& j, const std::string& dir) {
    config::parse_context ctx;
    sweep_spec spec;
    config::reader r(j, "", ctx);

    r.get("description", spec.description);

    const nlohmann::json* base = r.raw("base");
    if (base == nullptr) {
        r.error("base", "missing (the scenario file the points start from)");
    } else if (!base->is_string() || base->get<std::string>().empty()) {
        r.error("base", config::describe(*base) + " is not a file name");
    } else {
        fs::path b(base->get<std::string>());
        if (b.is_relative()) {
            b = fs::path(dir.empty() ? "." : dir) / b;
        }
        spec.base = fs::absolute(b).lexically_normal().string();
    }

    const nlohmann::json* set = r.raw("set");
    if (set != nullptr) {
        if (!set->is_object()) {
            r.error("set", config::describe(*set) + " is not an object of PATH: VALUE");
        } else {
            for (auto it = set->begin(); it != set->end(); ++it) {
                const std::string where = "set." + it.key();
                if (!is_config_path(it.key())) {
                    ctx.errors.push_back(where + ": \"" + it.key() +
                                         "\" is not a config path like workload.messages");
                } else if (is_output_dir_path(it.key())) {
                    ctx.errors.push_back(where + ": " + it.key() +
                                         " is chosen by the sweep (each point writes into "
                                         "points/<id>)");
                } else if (it.value().is_null()) {
                    ctx.errors.push_back(where + ": null is not a config value");
                } else {
                    spec.fixed.emplace_back(it.key(), it.value());
                }
            }
        }
    }

    const nlohmann::json* params = r.raw("parameters");
    if (params == nullptr) {
        r.error("parameters", "missing (the list of parameters to vary)");
    } else if (!params->is_array()) {
        r.error("parameters", config::describe(*params) + " is not an array");
    } else if (params->empty()) {
        r.error("parameters", "empty (give at least one parameter)");
    } else {
        for (size_t i = 0; i < params->size(); ++i) {
            const nlohmann::json& e = (*params)[i];
            const std::string origin = "parameters." + std::to_string(i);
            axis ax;
            if (e.is_object() && e.contains("zip")) {
                config::reader zr(e, origin, ctx);
                const nlohmann::json* zip = zr.raw("zip");
                zr.finish();  // a zip group holds nothing but "zip"
                if (!zip->is_array() || zip->empty()) {
                    zr.error("zip", zip->is_array() ? "empty (give the parameters to zip)"
                                                    : config::describe(*zip) +
                                                          " is not an array of parameters");
                    continue;
                }
                for (size_t k = 0; k < zip->size(); ++k) {
                    ax.params.push_back(
                        parse_parameter((*zip)[k], origin + ".zip." + std::to_string(k), ctx));
                }
                const size_t n = ax.params.front().values.size();
                for (size_t k = 1; k < ax.params.size(); ++k) {
                    const size_t m = ax.params[k].values.size();
                    if (m != n && m != 0 && n != 0) {
                        ctx.errors.push_back(ax.params[k].origin + ".values: " + std::to_string(m) +
                                             " values, but " + ax.params.front().origin + " has " +
                                             std::to_string(n) + " (zipped lists step together)");
                    }
                }
            } else {
                ax.params.push_back(parse_parameter(e, origin, ctx));
            }
            spec.axes.push_back(std::move(ax));
        }
    }
    const nlohmann::json* stats = r.raw("stats_columns");
    if (stats != nullptr) {
        if (!stats->is_array()) {
            r.error("stats_columns",
                    config::describe(*stats) + " is not an array of {\"name\", \"stat\"} objects");
        } else {
            for (size_t i = 0; i < stats->size(); ++i) {
                spec.stat_columns.push_back(
                    parse_stat_column((*stats)[i], "stats_columns." + std::to_string(i), ctx));
            }
        }
    }
    r.finish();

    // Every column and every varied path once.
    std::map<std::string, std::string> names;  // name -> origin
    std::map<std::string, std::string> paths;  // path -> origin
    for (const auto& [path, value] : spec.fixed) {
        paths.emplace(path, "set");
    }
    for (const auto& ax : spec.axes) {
        for (const auto& p : ax.params) {
            if (!p.name.empty() && !names.emplace(p.name, p.origin).second) {
                ctx.errors.push_back(p.origin + ".name: \"" + p.name + "\" is also the name of " +
                                     names[p.name] + "; give each parameter its own name");
            }
            for (const auto& q : p.paths) {
                if (!paths.emplace(q, p.origin).second) {
                    ctx.errors.push_back(p.origin + (p.paths.size() == 1 ? ".path: " : ".paths: ") +
                                         q + " is also set by " + paths[q]);
                }
            }
        }
    }

    for (size_t i = 0; i < spec.stat_columns.size(); ++i) {
        const std::string& n = spec.stat_columns[i].name;
        const std::string origin = "stats_columns." + std::to_string(i);
        if (!n.empty() && !names.emplace(n, origin).second) {
            ctx.errors.push_back(origin + ".name: \"" + n + "\" is also the name of " + names[n] +
                                 "; give each column its own name");
        }
    }

    if (ctx.errors.empty()) {
        double total = 1;
        for (const auto& ax : spec.axes) {
            total *= static_cast<double>(ax.size());
        }
        if (total > static_cast<double>(MAX_POINTS)) {
            std::ostringstream n;
            n.setf(std::ios::fixed);
            n.precision(0);
            n << total;
            ctx.errors.push_back("parameters: the grid has " + n.str() + " points, at most " +
                                 std::to_string(MAX_POINTS) + " are allowed");
        }
    }
    ctx.throw_if_errors();
    return spec;
}

sweep_spec load_sweep(const std::string& file) {
    std::string text;
    auto errors = read_file_or_error(file, text);
    if (!errors.empty()) {
        throw config::config_error(errors);
    }
    nlohmann::json doc;
    try {
        doc = parse_json_text(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw config::config_error({file + ": " + e.what()});
    }
    sweep_spec spec = parse_sweep(doc, fs::path(file).parent_path().string());
    spec.file = file;
    return spec;
}

plan expand(const sweep_spec& spec) {
    plan p;
    p.sweep_file = spec.file.empty() ? "" : fs::absolute(spec.file).lexically_normal().string();
    p.base = spec.base;
    p.description = spec.description;
    p.stat_columns = spec.stat_columns;
    for (const auto& ax : spec.axes) {
        for (const auto& prm : ax.params) {
            p.columns.push_back(prm.name);
        }
    }
    size_t total = 1;
    for (const auto& ax : spec.axes) {
        total *= ax.size();
    }
    std::vector<size_t> pos(spec.axes.size(), 0);  // mixed-radix counter, last axis fastest
    for (size_t index = 0; index < total; ++index) {
        point pt;
        pt.index = index;
        pt.id = point_id(index, total);
        for (const auto& [path, value] : spec.fixed) {
            pt.overrides.push_back(path + "=" + value.dump());
        }
        for (size_t a = 0; a < spec.axes.size(); ++a) {
            for (const auto& prm : spec.axes[a].params) {
                const nlohmann::json& v = prm.values[pos[a]];
                pt.values.push_back(v);
                for (const auto& q : prm.paths) {
                    pt.overrides.push_back(q + "=" + v.dump());
                }
            }
        }
        p.points.push_back(std::move(pt));
        for (size_t a = spec.axes.size(); a-- > 0;) {
            if (++pos[a] < spec.axes[a].size()) {
                break;
            }
            pos[a] = 0;
        }
    }
    return p;
}

void validate(const sweep_spec& spec, const plan& p) {
    std::string text;
    auto read_errors = read_file_or_error(spec.base, text);
    if (!read_errors.empty()) {
        throw config::config_error({"base: " + read_errors.front()});
    }
    nlohmann::json base_doc;
    try {
        base_doc = parse_json_text(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw config::config_error({"base: " + spec.base + ": " + e.what()});
    }

    // Where each override of a point comes from, in the order expand() emits them.
    struct source {
        std::string path;
        const parameter* param = nullptr;  // nullptr: "set"
        size_t value_index = 0;
    };
    std::vector<size_t> pos(spec.axes.size(), 0);

    // (origin, message) -> value indices that gave it, to fold an error every value shares.
    std::vector<std::pair<const parameter*, std::string>> param_keys;
    std::map<std::pair<const parameter*, std::string>, std::vector<size_t>> param_hits;
    // message -> points that gave it (errors no single parameter explains).
    std::vector<std::string> point_keys;
    std::map<std::string, std::vector<size_t>> point_hits;
    error_list out;

    for (const point& pt : p.points) {
        std::vector<source> sources;
        for (const auto& f : spec.fixed) {
            sources.push_back({f.first, nullptr, 0});
        }
        for (size_t a = 0; a < spec.axes.size(); ++a) {
            for (const auto& prm : spec.axes[a].params) {
                for (const auto& q : prm.paths) {
                    sources.push_back({q, &prm, pos[a]});
                }
            }
        }
        for (size_t a = spec.axes.size(); a-- > 0;) {
            if (++pos[a] < spec.axes[a].size()) {
                break;
            }
            pos[a] = 0;
        }

        auto attribute = [&](const std::string& message, const source* src) {
            if (src == nullptr) {
                const std::string at = error_path(message);
                size_t best = 0;
                for (const auto& s : sources) {
                    if (path_covers(s.path, at) && s.path.size() > best) {
                        best = s.path.size();
                        src = &s;
                    }
                }
                // An error about an object the override created on its way (an unknown key
                // `x` when x.y is varied).
                for (size_t i = 0; src == nullptr && !at.empty() && i < sources.size(); ++i) {
                    if (path_covers(at, sources[i].path)) {
                        src = &sources[i];
                    }
                }
            }
            if (src != nullptr && src->param == nullptr) {
                out.add("set." + src->path + ": " + message);
            } else if (src != nullptr) {
                const auto key = std::make_pair(src->param, message);
                auto& hits = param_hits[key];
                if (hits.empty()) {
                    param_keys.push_back(key);
                }
                if (std::find(hits.begin(), hits.end(), src->value_index) == hits.end()) {
                    hits.push_back(src->value_index);
                }
            } else {
                auto& hits = point_hits[message];
                if (hits.empty()) {
                    point_keys.push_back(message);
                }
                hits.push_back(pt.index);
            }
        };

        nlohmann::json doc = base_doc;
        bool overrides_ok = true;
        for (size_t i = 0; i < pt.overrides.size() && i < sources.size(); ++i) {
            const std::string err = scenario::apply_override(doc, pt.overrides[i]);
            if (!err.empty()) {
                attribute(err, &sources[i]);
                overrides_ok = false;
            }
        }
        if (!overrides_ok) {
            continue;
        }
        // As `rnicsim run` does after the overrides: a point may name its preset.
        const std::vector<std::string> reference_errors =
            scenario::resolve_file_references(doc, spec.base);
        for (const auto& m : reference_errors) {
            attribute(m, nullptr);
        }
        if (!reference_errors.empty()) {
            continue;
        }
        try {
            (void)scenario::parse_scenario(doc);
        } catch (const config::config_error& e) {
            for (const auto& m : e.errors) {
                attribute(m, nullptr);
            }
        }
    }

    for (const auto& key : param_keys) {
        const parameter* prm = key.first;
        auto hits = param_hits[key];
        if (hits.size() == prm->values.size() && prm->values.size() > 1) {
            out.add(prm->origin + ": " + key.second);
            continue;
        }
        std::sort(hits.begin(), hits.end());
        for (size_t j : hits) {
            out.add(prm->origin + ".values." + std::to_string(j) + ": " + key.second);
        }
    }
    for (const auto& message : point_keys) {
        const auto& hits = point_hits[message];
        if (hits.size() == p.points.size()) {
            out.add("base: " + message);
            continue;
        }
        for (size_t index : hits) {
            const point& pt = p.points[index];
            std::string values;
            for (size_t c = 0; c < p.columns.size(); ++c) {
                values += (c ? ", " : "") + p.columns[c] + "=" + format_value(pt.values[c]);
            }
            out.add("points." + pt.id + " (" + values + "): " + message);
        }
    }
    if (!out.empty()) {
        throw config::config_error(out.take());
    }
}

plan load_plan(const std::string& sweep_file) {
    const sweep_spec spec = load_sweep(sweep_file);
    plan p = expand(spec);
    validate(spec, p);
    return p;
}

nlohmann::json plan::to_json() const {
    nlohmann::json pts = nlohmann::json::array();
    for (const auto& pt : points) {
        pts.push_back({{"id", pt.id}, {"values", pt.values}, {"overrides", pt.overrides}});
    }
    nlohmann::json stats = nlohmann::json::array();
    for (const auto& c : stat_columns) {
        stats.push_back({{"name", c.name}, {"stat", c.pointer}});
    }
    return {{"format", "rnicsim-sweep-plan-1"},
            {"sweep", sweep_file},
            {"description", description},
            {"base", base},
            {"columns", columns},
            {"stats_columns", stats},
            {"points", pts}};
}

plan plan::from_json(const nlohmann::json& j) {
    std::vector<std::string> errors;
    plan p;
    auto need = [&](const nlohmann::json& obj, const char* key, auto check,
                    const std::string& where) -> const nlohmann::json* {
        if (!obj.is_object() || !obj.contains(key) || !check(obj[key])) {
            errors.push_back(where + key + ": missing or of the wrong type");
            return nullptr;
        }
        return &obj[key];
    };
    auto is_str = [](const nlohmann::json& v) { return v.is_string(); };
    auto is_arr = [](const nlohmann::json& v) { return v.is_array(); };
    if (const auto* v = need(j, "base", is_str, "")) {
        p.base = v->get<std::string>();
    }
    if (const auto* v = need(j, "sweep", is_str, "")) {
        p.sweep_file = v->get<std::string>();
    }
    if (j.is_object() && j.contains("description") && j["description"].is_string()) {
        p.description = j["description"].get<std::string>();
    }
    if (const auto* v = need(j, "columns", is_arr, "")) {
        for (const auto& c : *v) {
            p.columns.push_back(c.is_string() ? c.get<std::string>() : c.dump());
        }
    }
    if (j.is_object() && j.contains("stats_columns")) {  // absent in plans of older sweeps
        const nlohmann::json& v = j["stats_columns"];
        for (size_t i = 0; v.is_array() && i < v.size(); ++i) {
            const std::string where = "stats_columns." + std::to_string(i) + ".";
            const auto* name = need(v[i], "name", is_str, where);
            const auto* stat = need(v[i], "stat", is_str, where);
            if (name != nullptr && stat != nullptr) {
                p.stat_columns.push_back({name->get<std::string>(), stat->get<std::string>()});
            }
        }
        if (!v.is_array()) {
            errors.push_back("stats_columns: not an array");
        }
    }
    if (const auto* v = need(j, "points", is_arr, "")) {
        for (size_t i = 0; i < v->size(); ++i) {
            const std::string where = "points." + std::to_string(i) + ".";
            const nlohmann::json& e = (*v)[i];
            point pt;
            pt.index = i;
            const auto* id = need(e, "id", is_str, where);
            const auto* values = need(e, "values", is_arr, where);
            const auto* ov = need(e, "overrides", is_arr, where);
            if (id == nullptr || values == nullptr || ov == nullptr) {
                continue;
            }
            pt.id = id->get<std::string>();
            if (pt.id.empty() || pt.id.find_first_of("/.") != std::string::npos) {
                errors.push_back(where + "id: " + id->dump() + " is not a folder name");
            }
            pt.values.assign(values->begin(), values->end());
            if (pt.values.size() != p.columns.size()) {
                errors.push_back(where + "values: " + std::to_string(pt.values.size()) +
                                 " values for " + std::to_string(p.columns.size()) + " columns");
            }
            for (const auto& o : *ov) {
                if (!o.is_string()) {
                    errors.push_back(where + "overrides: " + o.dump() + " is not a string");
                } else {
                    pt.overrides.push_back(o.get<std::string>());
                }
            }
            p.points.push_back(std::move(pt));
        }
    }
    if (!errors.empty()) {
        throw config::config_error(errors);
    }
    return p;
}

}  // namespace rnic::sweep
