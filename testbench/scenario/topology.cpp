// SPDX-License-Identifier: Apache-2.0
// Topology parsing: the generators, the explicit form, validation, addresses and routes.
#include "testbench/scenario/topology.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <limits>
#include <map>
#include <set>

#include "hw/common/numeric.h"

#include <fmt/format.h>

namespace rnic::scenario {

bool parse_mac(const std::string& s, std::array<uint8_t, 6>& out) {
    // Exactly six two-digit hex groups separated by ':'.
    if (s.size() != 17) {
        return false;
    }
    std::array<uint8_t, 6> mac{};
    for (size_t i = 0; i < 6; ++i) {
        const size_t p = i * 3;
        if (i > 0 && s[p - 1] != ':') {
            return false;
        }
        unsigned v = 0;
        for (size_t k = 0; k < 2; ++k) {
            const char c = s[p + k];
            unsigned d;
            if (c >= '0' && c <= '9') {
                d = c - '0';
            } else if (c >= 'a' && c <= 'f') {
                d = c - 'a' + 10;
            } else if (c >= 'A' && c <= 'F') {
                d = c - 'A' + 10;
            } else {
                return false;
            }
            v = v * 16 + d;
        }
        mac[i] = static_cast<uint8_t>(v);
    }
    out = mac;
    return true;
}

bool parse_ipv4(const std::string& s, uint32_t& out) {
    uint32_t ip = 0;
    size_t pos = 0;
    for (int part = 0; part < 4; ++part) {
        if (part > 0) {
            if (pos >= s.size() || s[pos] != '.') {
                return false;
            }
            ++pos;
        }
        size_t digits = 0;
        unsigned v = 0;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && digits < 4) {
            v = v * 10 + (s[pos] - '0');
            ++pos;
            ++digits;
        }
        if (digits == 0 || digits > 3 || v > 255) {
            return false;
        }
        ip = (ip << 8) | v;
    }
    if (pos != s.size()) {
        return false;
    }
    out = ip;
    return true;
}

std::string format_mac(const std::array<uint8_t, 6>& mac) {
    char buf[18];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                  mac[4], mac[5]);
    return buf;
}

std::string format_ipv4(uint32_t ip) {
    return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 0xff) + "." +
           std::to_string((ip >> 8) & 0xff) + "." + std::to_string(ip & 0xff);
}

namespace {

constexpr uint32_t BASE_IP = 10u << 24;  // 10.0.0.0
constexpr uint32_t MAX_NODES = 65536;
constexpr uint32_t MAX_SWITCHES = 4096;
constexpr uint32_t MAX_PORTS = 4096;
constexpr size_t MAX_ROUTES = size_t{1} << 22;  // switches x leaves

uint32_t mask_of(uint32_t len) {
    return len == 0 ? 0 : ~uint32_t{0} << (32 - len);
}

std::array<uint8_t, 6> node_mac(size_t index) {
    const auto v = static_cast<uint32_t>(index + 1);
    return {0x02,
            0x00,
            static_cast<uint8_t>(v >> 24),
            static_cast<uint8_t>(v >> 16),
            static_cast<uint8_t>(v >> 8),
            static_cast<uint8_t>(v)};
}

std::array<uint8_t, 6> switch_port_mac(uint32_t sw, uint32_t port) {
    return {0x02,
            0x01,
            static_cast<uint8_t>(sw >> 8),
            static_cast<uint8_t>(sw),
            static_cast<uint8_t>(port >> 8),
            static_cast<uint8_t>(port)};
}

// What a node element says before addresses are assigned.
struct node_given {
    bool mac = false;
    bool ip = false;
};

node_config parse_node(config::reader r, size_t index, bool legacy, node_given& given) {
    node_config n;
    n.mac = node_mac(index);
    n.ip = BASE_IP | static_cast<uint32_t>(index + 1);  // 10.0.0.<index+1>; may be reassigned
    given.mac = r.has("mac");
    given.ip = r.has("ip");
    std::string mac = format_mac(n.mac);
    std::string ip = format_ipv4(n.ip);
    r.get("mac", mac);
    if (given.mac && !parse_mac(mac, n.mac)) {
        r.error("mac", nlohmann::json(mac).dump() + " is not a MAC address like 02:00:00:00:00:01");
    }
    r.get("ip", ip);
    if (given.ip && !parse_ipv4(ip, n.ip)) {
        r.error("ip", nlohmann::json(ip).dump() + " is not an IPv4 address like 10.0.0.1");
    }
    r.get_one_of("mtu", n.mtu, {256u, 512u, 1024u, 2048u, 4096u});
    // Only written to the effective config when given (back-to-back) or assigned (the
    // expansion writes them itself).
    if (const nlohmann::json* v = r.raw("prefix_length"); v != nullptr) {
        if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > 32) {
            r.error("prefix_length", config::describe(*v) + " is not an integer in [0, 32]");
        } else {
            n.prefix_length = v->get<uint32_t>();
            if (legacy) {
                r.set_effective("prefix_length", *v);
            }
        }
    }
    if (const nlohmann::json* v = r.raw("gateway"); v != nullptr) {
        uint32_t gw = 0;
        if (!v->is_string() || !parse_ipv4(v->get<std::string>(), gw)) {
            r.error("gateway", config::describe(*v) + " is not an IPv4 address like 10.0.0.254");
        } else {
            n.gateway = gw;
            if (legacy) {
                r.set_effective("gateway", *v);
            }
        }
    }
    r.finish();
    return n;
}

// ---- Generators: the explicit form's switches and links (as JSON) and the node count. -----

struct generated {
    uint32_t nodes = 0;
    nlohmann::json switches = nlohmann::json::array();
    nlohmann::json links = nlohmann::json::array();
    // Per switch and per link: the key (under topology) its own parameters come from, e.g.
    // "leaf_spine.spine" or "leaf_spine.uplink"; errors in them are reported there, once.
    std::vector<std::string> switch_src;
    std::vector<std::string> link_src;
    std::vector<std::string> rate_src;  // per switch: the key its max_rate_gbps comes from
};

// A generator's per-tier switch keys (topology.<generator>.<tier>): any key of topology.switch
// plus max_rate_gbps (which replaces the generator's); the generator sets name and ports. The
// switch keys are checked where the switches are parsed, under this tier's path.
struct tier {
    std::string src;                                // "leaf_spine.spine"
    nlohmann::json own = nlohmann::json::object();  // switch or link keys
    double max_rate_gbps = 0;                       // switch tiers
    std::string rate_src;  // where max_rate_gbps comes from: the tier or the generator
};

tier switch_tier(config::reader& r, const std::string& gen, const std::string& key,
                 double max_rate) {
    tier t{gen + "." + key, nlohmann::json::object(), max_rate, gen};
    const nlohmann::json* v = r.raw(key);
    if (v == nullptr) {
        return t;
    }
    if (!v->is_object()) {
        r.error(key, config::describe(*v) + " is not an object of switch keys");
        return t;
    }
    t.own = *v;
    for (const char* k : {"name", "ports"}) {
        if (t.own.contains(k)) {
            r.error(key + "." + k, "set by the generator, not per tier");
            t.own.erase(k);
        }
    }
    if (t.own.contains("max_rate_gbps")) {
        const nlohmann::json& m = t.own["max_rate_gbps"];
        if (!m.is_number() || m.get<double>() < 1 || m.get<double>() > 1600) {
            r.error(key + ".max_rate_gbps", config::describe(m) + " out of range [1, 1600]");
        } else {
            t.max_rate_gbps = m.get<double>();
            t.rate_src = t.src;
        }
        t.own.erase("max_rate_gbps");
    }
    return t;
}

// A generator's per-kind link keys (topology.<generator>.<key>): any key of topology.link, on
// top of it, for every generated link of that kind. Checked where the links are parsed.
tier link_tier(config::reader& r, const std::string& gen, const std::string& key) {
    tier t{gen + "." + key, nlohmann::json::object(), 0, ""};
    const nlohmann::json* v = r.raw(key);
    if (v == nullptr) {
        return t;
    }
    if (!v->is_object()) {
        r.error(key, config::describe(*v) + " is not an object of link keys");
        return t;
    }
    t.own = *v;
    for (const char* k : {"a", "b"}) {
        if (t.own.contains(k)) {
            r.error(key + "." + k, "set by the generator, not per kind of link");
            t.own.erase(k);
        }
    }
    return t;
}

std::string end(const std::string& name, uint32_t port) {
    return name + ":" + std::to_string(port);
}
std::string node_end(uint32_t i) {
    return "node" + std::to_string(i);
}

void add_switch(generated& g, const std::string& name, uint32_t ports, double max_rate,
                const tier* t = nullptr) {
    nlohmann::json e = {{"name", name}, {"ports", ports}, {"max_rate_gbps", max_rate}};
    std::string src;
    std::string rate_src = "star";  // the only generator without tiers
    if (t != nullptr) {
        e["max_rate_gbps"] = t->max_rate_gbps;
        e.update(t->own);
        src = t->own.empty() ? "" : t->src;
        rate_src = t->rate_src;
    }
    g.switches.push_back(std::move(e));
    g.switch_src.push_back(std::move(src));
    g.rate_src.push_back(std::move(rate_src));
}
void add_link(generated& g, const std::string& a, const std::string& b, const tier* t = nullptr) {
    nlohmann::json e = {{"a", a}, {"b", b}};
    std::string src = "link";
    if (t != nullptr && !t->own.empty()) {
        e.update(t->own);
        src = t->src;
    }
    g.links.push_back(std::move(e));
    g.link_src.push_back(std::move(src));
}

// topology.star: `hosts` nodes on one switch "sw0" (port h: node h).
generated gen_star(config::reader r) {
    uint32_t hosts = 8;
    double max_rate = 400;
    r.get("hosts", hosts, 1u, MAX_PORTS);
    r.get("max_rate_gbps", max_rate, 1.0, 1600.0);
    r.finish();
    generated g;
    g.nodes = hosts;
    add_switch(g, "sw0", hosts, max_rate);
    for (uint32_t h = 0; h < hosts; ++h) {
        add_link(g, node_end(h), end("sw0", h));
    }
    return g;
}

// topology.leaf_spine: leaf l ports 0..hosts_per_leaf-1 are its hosts (node l x hosts_per_leaf
// + h), then `uplinks` ports to each spine in spine order; spine s port l x uplinks + u goes to
// leaf l. Per tier: "leaf" and "spine" (switch keys), "host_link" and "uplink" (link keys).
generated gen_leaf_spine(config::reader r) {
    uint32_t leaves = 4;
    uint32_t spines = 4;
    uint32_t hosts = 4;
    uint32_t uplinks = 1;
    double max_rate = 400;
    r.get("leaves", leaves, 1u, MAX_SWITCHES);
    r.get("spines", spines, 1u, MAX_SWITCHES);
    r.get("hosts_per_leaf", hosts, 1u, MAX_PORTS);
    r.get("uplinks", uplinks, 1u, 64u);
    r.get("max_rate_gbps", max_rate, 1.0, 1600.0);
    const tier leaf_t = switch_tier(r, "leaf_spine", "leaf", max_rate);
    const tier spine_t = switch_tier(r, "leaf_spine", "spine", max_rate);
    const tier host_t = link_tier(r, "leaf_spine", "host_link");
    const tier up_t = link_tier(r, "leaf_spine", "uplink");
    generated g;
    if (uint64_t{leaves} * hosts > MAX_NODES) {
        r.error("hosts_per_leaf",
                fmt::format("{} leaves x {} hosts exceed {} nodes", leaves, hosts, MAX_NODES));
    } else if (hosts + uint64_t{spines} * uplinks > MAX_PORTS ||
               uint64_t{leaves} * uplinks > MAX_PORTS) {
        r.error("uplinks", fmt::format("a leaf or spine would have more than {} ports", MAX_PORTS));
    } else {
        g.nodes = leaves * hosts;
        for (uint32_t l = 0; l < leaves; ++l) {
            add_switch(g, "leaf" + std::to_string(l), hosts + spines * uplinks, max_rate, &leaf_t);
        }
        for (uint32_t s = 0; s < spines; ++s) {
            add_switch(g, "spine" + std::to_string(s), leaves * uplinks, max_rate, &spine_t);
        }
        for (uint32_t l = 0; l < leaves; ++l) {
            const std::string leaf = "leaf" + std::to_string(l);
            for (uint32_t h = 0; h < hosts; ++h) {
                add_link(g, node_end(l * hosts + h), end(leaf, h), &host_t);
            }
        }
        for (uint32_t l = 0; l < leaves; ++l) {
            const std::string leaf = "leaf" + std::to_string(l);
            for (uint32_t s = 0; s < spines; ++s) {
                for (uint32_t u = 0; u < uplinks; ++u) {
                    add_link(g, end(leaf, hosts + s * uplinks + u),
                             end("spine" + std::to_string(s), l * uplinks + u), &up_t);
                }
            }
        }
    }
    r.finish();
    return g;
}

// topology.fat_tree: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores, k^3/4
// hosts. Edge e of pod p ("edge<p>_<e>"): ports 0..k/2-1 hosts, k/2 + a to aggregation a.
// Aggregation a of pod p ("agg<p>_<a>"): port e to edge e, k/2 + j to core a x k/2 + j.
// Core c ("core<c>"): port p to pod p. Per tier: "edge", "aggregation" and "core" (switch
// keys), "host_link", "edge_link" (edge-aggregation) and "core_link" (aggregation-core).
generated gen_fat_tree(config::reader r) {
    uint32_t k = 4;
    double max_rate = 400;
    r.get("k", k, 2u, 32u);
    r.get("max_rate_gbps", max_rate, 1.0, 1600.0);
    const tier edge_t = switch_tier(r, "fat_tree", "edge", max_rate);
    const tier agg_t = switch_tier(r, "fat_tree", "aggregation", max_rate);
    const tier core_t = switch_tier(r, "fat_tree", "core", max_rate);
    const tier host_t = link_tier(r, "fat_tree", "host_link");
    const tier edge_link_t = link_tier(r, "fat_tree", "edge_link");
    const tier core_link_t = link_tier(r, "fat_tree", "core_link");
    generated g;
    if (k % 2 != 0) {
        r.error("k", fmt::format("{} is not even", k));
    } else {
        const uint32_t h = k / 2;
        g.nodes = k * h * h;
        auto edge = [](uint32_t p, uint32_t e) { return fmt::format("edge{}_{}", p, e); };
        auto agg = [](uint32_t p, uint32_t a) { return fmt::format("agg{}_{}", p, a); };
        for (uint32_t p = 0; p < k; ++p) {
            for (uint32_t e = 0; e < h; ++e) {
                add_switch(g, edge(p, e), k, max_rate, &edge_t);
            }
        }
        for (uint32_t p = 0; p < k; ++p) {
            for (uint32_t a = 0; a < h; ++a) {
                add_switch(g, agg(p, a), k, max_rate, &agg_t);
            }
        }
        for (uint32_t c = 0; c < h * h; ++c) {
            add_switch(g, "core" + std::to_string(c), k, max_rate, &core_t);
        }
        for (uint32_t p = 0; p < k; ++p) {
            for (uint32_t e = 0; e < h; ++e) {
                for (uint32_t i = 0; i < h; ++i) {
                    add_link(g, node_end((p * h + e) * h + i), end(edge(p, e), i), &host_t);
                }
            }
        }
        for (uint32_t p = 0; p < k; ++p) {
            for (uint32_t e = 0; e < h; ++e) {
                for (uint32_t a = 0; a < h; ++a) {
                    add_link(g, end(edge(p, e), h + a), end(agg(p, a), e), &edge_link_t);
                }
            }
        }
        for (uint32_t p = 0; p < k; ++p) {
            for (uint32_t a = 0; a < h; ++a) {
                for (uint32_t j = 0; j < h; ++j) {
                    add_link(g, end(agg(p, a), h + j), end("core" + std::to_string(a * h + j), p),
                             &core_link_t);
                }
            }
        }
    }
    r.finish();
    return g;
}

bool valid_name(const std::string& s) {
    if (s.empty() || s.size() > 64) {
        return false;
    }
    for (char c : s) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
            return false;
        }
    }
    return true;
}

// "node<digits>" names a node; switches may not take such names.
bool node_like(const std::string& s, uint32_t& index) {
    if (s.size() <= 4 || s.compare(0, 4, "node") != 0 ||
        s.find_first_not_of("0123456789", 4) != std::string::npos || s.size() > 12) {
        return false;
    }
    index = static_cast<uint32_t>(std::stoull(s.substr(4)));
    return true;
}

// Every switch's distance (in switch hops) from switch `from`; links marked in `down` (if
// given) are not crossed.
std::vector<uint32_t> switch_distances(const topology_config& t, uint32_t from,
                                       const std::vector<bool>* down = nullptr) {
    constexpr uint32_t INF = std::numeric_limits<uint32_t>::max();
    std::vector<uint32_t> dist(t.switches.size(), INF);
    std::deque<uint32_t> q{from};
    dist[from] = 0;
    while (!q.empty()) {
        const uint32_t s = q.front();
        q.pop_front();
        for (const auto& p : t.ports[s]) {
            const link_desc& l = t.links[p.link];
            const link_end& other = p.side == 0 ? l.b : l.a;
            if (other.is_switch && dist[other.index] == INF &&
                (down == nullptr || !(*down)[p.link])) {
                dist[other.index] = dist[s] + 1;
                q.push_back(other.index);
            }
        }
    }
    return dist;
}

}  // namespace

size_t topology_config::hops(size_t from, size_t to) const {
    const link_desc& lf = links[node_link[from]];
    const link_desc& lt = links[node_link[to]];
    const link_end& sf = node_side[from] == 0 ? lf.b : lf.a;
    const link_end& st = node_side[to] == 0 ? lt.b : lt.a;
    if (!sf.is_switch) {
        return 0;  // cabled to the other node
    }
    return switch_distances(*this, sf.index)[st.index] + 1;
}

topology_config::path topology_config::path_between(size_t from, size_t to) const {
    path p;
    p.links.push_back(node_link[from]);
    const link_desc& lf = links[node_link[from]];
    const link_desc& lt = links[node_link[to]];
    const link_end& sf = node_side[from] == 0 ? lf.b : lf.a;
    const link_end& st = node_side[to] == 0 ? lt.b : lt.a;
    if (!sf.is_switch || from == to) {
        return p;  // cabled to the other node
    }
    const std::vector<uint32_t> dist = switch_distances(*this, st.index);
    uint32_t s = sf.index;
    p.switches.push_back(s);
    while (s != st.index) {
        const uint32_t at = s;
        for (const port_info& pi : ports[s]) {
            const link_desc& l = links[pi.link];
            const link_end& other = pi.side == 0 ? l.b : l.a;
            if (other.is_switch && dist[other.index] + 1 == dist[s]) {
                p.links.push_back(pi.link);
                s = other.index;
                break;
            }
        }
        if (s == at) {
            return {};  // no path (a topology parse_topology refuses)
        }
        p.switches.push_back(s);
    }
    p.links.push_back(node_link[to]);
    return p;
}

std::vector<std::vector<route>> compute_routes(const topology_config& t,
                                               const std::vector<bool>* down) {
    const size_t S = t.switches.size();
    std::vector<std::vector<route>> routes(S);
    // Hosts of each leaf (switch with nodes cabled to it), in node order.
    std::vector<std::vector<uint32_t>> hosts(S);
    std::vector<uint32_t> host_port(t.nodes.size(), 0);
    for (uint32_t n = 0; n < t.nodes.size(); ++n) {
        const link_desc& l = t.links[t.node_link[n]];
        const link_end& other = t.node_side[n] == 0 ? l.b : l.a;
        if (other.is_switch) {
            hosts[other.index].push_back(n);
            host_port[n] = other.port;
        }
    }
    // Each leaf first routes to its own hosts: one /32 per host port.
    for (uint32_t leaf = 0; leaf < S; ++leaf) {
        for (uint32_t n : hosts[leaf]) {
            routes[leaf].push_back({t.nodes[n].ip, 32, {host_port[n]}});
        }
    }
    for (uint32_t leaf = 0; leaf < S; ++leaf) {
        if (hosts[leaf].empty()) {
            continue;
        }
        // The smallest prefix covering the leaf's hosts, if no other node is inside it.
        uint32_t diff = 0;
        const uint32_t first = t.nodes[hosts[leaf][0]].ip;
        for (uint32_t n : hosts[leaf]) {
            diff |= t.nodes[n].ip ^ first;
        }
        uint32_t len = 32;
        while (len > 0 && (diff & mask_of(len)) != 0) {
            --len;
        }
        const uint32_t prefix = first & mask_of(len);
        bool aggregate = true;
        for (uint32_t n = 0; n < t.nodes.size() && aggregate; ++n) {
            const bool on_leaf = std::binary_search(hosts[leaf].begin(), hosts[leaf].end(), n);
            aggregate = on_leaf || (t.nodes[n].ip & mask_of(len)) != prefix;
        }
        // Every other switch: the ports one hop closer to the leaf.
        const std::vector<uint32_t> dist = switch_distances(t, leaf, down);
        for (uint32_t s = 0; s < S; ++s) {
            if (s == leaf || dist[s] == std::numeric_limits<uint32_t>::max()) {
                continue;
            }
            std::vector<uint32_t> group;
            for (uint32_t p = 0; p < t.ports[s].size(); ++p) {
                const link_desc& l = t.links[t.ports[s][p].link];
                const link_end& other = t.ports[s][p].side == 0 ? l.b : l.a;
                if (down != nullptr && (*down)[t.ports[s][p].link]) {
                    continue;
                }
                if (other.is_switch && dist[other.index] + 1 == dist[s]) {
                    group.push_back(p);
                }
            }
            if (aggregate) {
                routes[s].push_back({prefix, len, group});
            } else {
                for (uint32_t n : hosts[leaf]) {
                    routes[s].push_back({t.nodes[n].ip, 32, group});
                }
            }
        }
    }
    return routes;
}

std::vector<std::vector<fabric::eth_switch::route_epoch>> route_epochs(const topology_config& t) {
    // Each switch end of a link with link_down_ns intervals sees the link go down
    // link_down_detect_ns after an interval starts (an interval shorter than that goes unseen)
    // and up again link_up_detect_ns after it ends, with its own switch's keys.
    struct change {
        double at_ns;
        uint32_t link;
        uint32_t sw;
        uint32_t port;
        bool up;
    };
    std::vector<change> changes;
    for (uint32_t li = 0; li < t.links.size(); ++li) {
        const link_desc& l = t.links[li];
        for (const link_end* e : {&l.a, &l.b}) {
            if (!e->is_switch) {
                continue;
            }
            const fabric::switch_config& c = t.switches[e->index].cfg;
            if (!c.reroute) {
                continue;
            }
            for (const auto& [from, to] : l.cfg.faults.link_down_ns) {
                if (to - from <= c.link_down_detect_ns) {
                    continue;
                }
                changes.push_back({from + c.link_down_detect_ns, li, e->index, e->port, false});
                changes.push_back({to + c.link_up_detect_ns, li, e->index, e->port, true});
            }
        }
    }
    std::vector<std::vector<fabric::eth_switch::route_epoch>> out(t.switches.size());
    if (changes.empty()) {
        return out;
    }
    std::stable_sort(changes.begin(), changes.end(),
                     [](const change& x, const change& y) { return x.at_ns < y.at_ns; });
    // A link is left out of the routes while any of its switch ends sees it down.
    // Counts, since an end's up may come after its next down (intervals closer than the
    // detection times): every up follows its own down.
    std::vector<uint32_t> down_ends(t.links.size(), 0);
    std::vector<std::vector<uint32_t>> port_down(t.switches.size());
    for (size_t s = 0; s < t.switches.size(); ++s) {
        port_down[s].assign(t.switches[s].ports, 0);
    }
    for (size_t i = 0; i < changes.size();) {
        const double at = changes[i].at_ns;
        for (; i < changes.size() && changes[i].at_ns == at; ++i) {
            const change& c = changes[i];
            if (c.up) {
                --down_ends[c.link];
                --port_down[c.sw][c.port];
            } else {
                ++down_ends[c.link];
                ++port_down[c.sw][c.port];
            }
        }
        std::vector<bool> down(t.links.size());
        for (size_t l = 0; l < t.links.size(); ++l) {
            down[l] = down_ends[l] > 0;
        }
        const std::vector<std::vector<route>> routes = compute_routes(t, &down);
        for (size_t s = 0; s < t.switches.size(); ++s) {
            fabric::eth_switch::route_epoch e;
            e.at = sc_core::sc_time(at, sc_core::SC_NS);
            for (const route& r : routes[s]) {
                e.routes.push_back({r.prefix, r.length, r.ports});
            }
            e.port_up.resize(port_down[s].size());
            for (size_t p = 0; p < port_down[s].size(); ++p) {
                e.port_up[p] = port_down[s][p] == 0;
            }
            out[s].push_back(std::move(e));
        }
    }
    return out;
}

namespace {
// topology.partition: [["node0", "leaf0", ...], [...], ...], one list per rank.
void parse_partition(config::reader& r, const nlohmann::json& j, topology_config& t) {
    const size_t nodes = t.nodes.size();
    t.partition_node.assign(nodes, -1);
    t.partition_switch.assign(t.switches.size(), -1);
    if (!j.is_array() || j.empty()) {
        r.error("partition",
                "expected a list of parts (one per rank), each a list of node and switch names "
                "(\"node3\", \"leaf1\")");
        return;
    }
    bool ok = true;
    for (size_t p = 0; p < j.size(); ++p) {
        const nlohmann::json& part = j[p];
        const std::string pp = "partition." + std::to_string(p);
        if (!part.is_array() || part.empty()) {
            r.error(pp, "expected a non-empty list of node and switch names");
            ok = false;
            continue;
        }
        for (size_t k = 0; k < part.size(); ++k) {
            const std::string path = pp + "." + std::to_string(k);
            if (!part[k].is_string()) {
                r.error(path, "expected a node or switch name, got " + config::describe(part[k]));
                ok = false;
                continue;
            }
            const std::string name = part[k].get<std::string>();
            int* slot = nullptr;
            for (size_t s = 0; s < t.switches.size() && slot == nullptr; ++s) {
                if (t.switches[s].name == name) {
                    slot = &t.partition_switch[s];
                }
            }
            if (slot == nullptr && name.size() > 4 && name.compare(0, 4, "node") == 0 &&
                name.find_first_not_of("0123456789", 4) == std::string::npos && name.size() < 14) {
                const uint64_t i = std::stoull(name.substr(4));
                if (i < nodes && name == "node" + std::to_string(i)) {
                    slot = &t.partition_node[i];
                }
            }
            if (slot == nullptr) {
                r.error(path, fmt::format("\"{}\": there is no such node (node0..node{}) or switch",
                                          name, nodes - 1));
                ok = false;
                continue;
            }
            if (*slot >= 0) {
                r.error(path,
                        fmt::format("\"{}\" is already in topology.partition.{}", name, *slot));
                ok = false;
                continue;
            }
            *slot = static_cast<int>(p);
        }
    }
    if (!ok) {
        return;
    }
    for (size_t i = 0; i < nodes; ++i) {
        if (t.partition_node[i] < 0) {
            r.error("partition", fmt::format("node{} is in no part", i));
            return;
        }
    }
    for (size_t s = 0; s < t.switches.size(); ++s) {
        if (t.partition_switch[s] < 0) {
            r.error("partition", fmt::format("{} is in no part", t.switches[s].name));
            return;
        }
    }
    t.partition_parts = j.size();
}
}  // namespace

namespace {
// FNV-1a of a name: the stable key of an element's draws.
uint64_t name_hash(const std::string& name) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (const char c : name) {
        h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
    }
    return h;
}

clocks_config parse_clocks(config::reader r) {
    clocks_config c;
    r.get("ppm", c.ppm, 0.0, 1000.0);
    r.get("jitter_ps", c.jitter_ps, 0.0, 5000.0);
    r.get("seed", c.seed, uint64_t{0}, ~uint64_t{0});
    r.finish();
    return c;
}
}  // namespace

double clock_offset_ppm(const clocks_config& c, const std::string& name) {
    if (c.ppm == 0) {
        return 0;
    }
    // 53 random bits -> [0, 1) -> [-ppm, +ppm).
    const uint64_t x = splitmix64(c.seed ^ name_hash(name));
    const double u = static_cast<double>(x >> 11) * 0x1.0p-53;
    return (2 * u - 1) * c.ppm;
}

uint64_t topology_config::jitter_seed(uint32_t link, int side) const {
    return splitmix64(clocks.seed ^ name_hash(links[link].name) ^ (side == 0 ? 0 : 0xD1D1ull));
}

topology_config parse_topology(config::reader r, config::parse_context& ctx) {
    topology_config t;
    t.link = fabric::parse_eth_link_config(r.child("link"));
    const nlohmann::json link_effective = ctx.effective["topology"]["link"];
    const bool clocks_given = r.has("clocks");
    t.clocks = parse_clocks(r.child("clocks"));

    const char* gen_keys[] = {"star", "leaf_spine", "fat_tree"};
    const char* gen_key = nullptr;
    for (const char* k : gen_keys) {
        if (r.has(k)) {
            if (gen_key != nullptr) {
                r.error(k, fmt::format("only one generator: topology.{} is given too", gen_key));
                continue;
            }
            gen_key = k;
        }
    }
    const bool explicit_form = r.has("switches") || r.has("links");
    if (gen_key != nullptr && explicit_form) {
        r.error(r.has("switches") ? "switches" : "links",
                fmt::format("not with topology.{}: the generator gives the switches and links",
                            gen_key));
        r.raw("switches");
        r.raw("links");
        r.raw(gen_key);
        r.raw("nodes");
        r.raw("switch");
        r.raw("partition");
        r.finish();
        return t;  // no nodes: what depends on them is not checked
    }

    // The switches and links to parse (from the file, from a generator, or the one cable).
    nlohmann::json switches = nlohmann::json::array();
    nlohmann::json links = nlohmann::json::array();
    const nlohmann::json* nodes = r.raw("nodes");
    uint32_t node_count = 2;
    bool legacy = false;
    std::vector<std::string> switch_src;  // generated: where each element's own keys come from
    std::vector<std::string> link_src;
    std::vector<std::string> rate_src;
    if (gen_key != nullptr) {
        t.form = gen_key;
        generated g = t.form == "star"         ? gen_star(r.child(gen_key))
                      : t.form == "leaf_spine" ? gen_leaf_spine(r.child(gen_key))
                                               : gen_fat_tree(r.child(gen_key));
        if (g.nodes == 0) {
            r.finish();
            return t;  // the generator's parameters are wrong (reported)
        }
        node_count = g.nodes;
        switches = std::move(g.switches);
        links = std::move(g.links);
        switch_src = std::move(g.switch_src);
        link_src = std::move(g.link_src);
        rate_src = std::move(g.rate_src);
        if (nodes != nullptr && nodes->is_array() && nodes->size() > node_count) {
            r.error("nodes", fmt::format("{} nodes given, topology.{} has {}", nodes->size(),
                                         gen_key, node_count));
            nodes = nullptr;
        }
    } else if (explicit_form) {
        t.form = "explicit";
        for (const char* k : {"switches", "links"}) {
            const nlohmann::json* v = r.raw(k);
            if (v != nullptr && !v->is_array()) {
                r.error(k, config::describe(*v) + " is not an array");
            } else if (v != nullptr) {
                (std::string(k) == "switches" ? switches : links) = *v;
            }
        }
        if (nodes == nullptr || !nodes->is_array() || nodes->empty()) {
            r.error("nodes", nodes == nullptr
                                 ? std::string("missing: the explicit form lists its nodes")
                                 : config::describe(*nodes) + " is not a non-empty array of nodes");
            r.finish();
            return t;
        }
        node_count = static_cast<uint32_t>(std::min<size_t>(nodes->size(), MAX_NODES));
    } else {
        // Back to back: two nodes on topology.link (today's form, unchanged).
        legacy = true;
        if (nodes != nullptr && !(nodes->is_array() && nodes->size() == 2)) {
            r.error("nodes", nodes->is_array()
                                 ? std::to_string(nodes->size()) +
                                       " nodes given: back to back joins exactly 2 (give "
                                       "topology.links or a generator for more)"
                                 : config::describe(*nodes) + " is not an array of nodes");
            nodes = nullptr;
        }
        links.push_back({{"a", "node0"}, {"b", "node1"}});
    }
    if (nodes != nullptr && !nodes->is_array()) {
        r.error("nodes", config::describe(*nodes) + " is not an array of nodes");
        nodes = nullptr;
    }

    // Nodes.
    std::vector<node_given> given(node_count);
    t.nodes.resize(node_count);
    for (uint32_t i = 0; i < node_count; ++i) {
        const nlohmann::json elem = nodes != nullptr && i < nodes->size() && !(*nodes)[i].is_null()
                                        ? (*nodes)[i]
                                        : nlohmann::json::object();
        t.nodes[i] = parse_node(config::reader(elem, r.path_of("nodes." + std::to_string(i)), ctx),
                                i, legacy, given[i]);
    }

    // Switches (generated names, ports and rates are valid by construction). Each switch's
    // parameters are topology.switch's with the element's own switch keys on top; the errors of
    // those keys are reported where they were written (the element, or a generator's tier),
    // once per place.
    std::set<std::string> reported;  // paths whose merged-parameter errors are reported
    nlohmann::json switch_effective = nlohmann::json::object();
    if (!switches.empty()) {
        const size_t before = ctx.errors.size();
        t.sw = fabric::parse_switch_config(r.child("switch"));
        switch_effective = ctx.effective["topology"]["switch"];
        if (ctx.errors.size() != before) {
            reported.insert("*");  // topology.switch is wrong: its errors are not repeated
        }
    } else if (r.has("switch")) {
        r.raw("switch");
        r.error("switch", "no switches in this topology");
    }
    std::vector<nlohmann::json> switch_own(switches.size());
    std::map<std::string, uint32_t> switch_index;
    for (size_t i = 0; i < switches.size(); ++i) {
        config::reader sr(switches[i], r.path_of("switches." + std::to_string(i)), ctx);
        switch_desc d;
        d.name = "sw" + std::to_string(i);
        sr.get("name", d.name);
        sr.get("ports", d.ports, 1u, MAX_PORTS);
        if (!sr.has("ports")) {
            sr.error("ports", "missing: how many ports the switch has");
        }
        sr.get("max_rate_gbps", d.max_rate_gbps, 1.0, 1600.0);
        d.cfg = t.sw;
        if (switches[i].is_object()) {
            nlohmann::json own = switches[i];
            for (const char* k : {"name", "ports", "max_rate_gbps"}) {
                own.erase(k);
            }
            for (auto it = own.begin(); it != own.end(); ++it) {
                sr.raw(it.key());  // a switch key: checked below, in the merged parameters
            }
            if (!own.empty()) {
                const std::string src = i < switch_src.size() && !switch_src[i].empty()
                                            ? r.path_of(switch_src[i])
                                            : sr.path();
                nlohmann::json merged = switch_effective;
                merged.merge_patch(own);
                config::parse_context scratch;
                d.cfg = fabric::parse_switch_config(config::reader(merged, src, scratch));
                if (reported.count("*") == 0 && reported.insert(src).second) {
                    for (auto& err : scratch.errors) {
                        ctx.errors.push_back(err);
                    }
                }
            }
            switch_own[i] = std::move(own);
        }
        sr.finish();
        uint32_t dummy = 0;
        if (!valid_name(d.name) || node_like(d.name, dummy)) {
            sr.error("name", nlohmann::json(d.name).dump() +
                                 " is not a switch name (letters, digits, _; not node<N>)");
        } else if (switch_index.count(d.name) != 0) {
            sr.error("name", fmt::format("\"{}\" is also the name of topology.switches.{}", d.name,
                                         switch_index[d.name]));
        }
        switch_index.emplace(d.name, static_cast<uint32_t>(i));
        t.switches.push_back(d);
    }

    // Links. A generated link's errors name the generator's key (its path is not in the file).
    std::map<std::pair<bool, uint64_t>, size_t> used;  // (is_switch, index << 32 | port) -> link
    t.node_link.assign(node_count, UINT32_MAX);
    t.node_side.assign(node_count, 0);
    t.ports.resize(t.switches.size());
    for (size_t s = 0; s < t.switches.size(); ++s) {
        t.ports[s].resize(t.switches[s].ports);
    }
    std::vector<std::vector<bool>> port_cabled(t.switches.size());
    for (size_t s = 0; s < t.switches.size(); ++s) {
        port_cabled[s].assign(t.switches[s].ports, false);
    }
    nlohmann::json links_effective = nlohmann::json::array();
    bool links_ok = true;
    std::set<std::string> rate_reported;  // generated: once per kind of link
    for (size_t i = 0; i < links.size(); ++i) {
        const nlohmann::json& e = links[i];
        if (!e.is_object()) {
            r.error("links." + std::to_string(i), config::describe(e) + " is not an object");
            links_ok = false;
            continue;
        }
        link_desc d;
        d.name = legacy ? "link" : "link" + std::to_string(i);
        // The link's parameters: topology.link, then its own keys on top.
        nlohmann::json own = e;
        own.erase("a");
        own.erase("b");
        nlohmann::json merged = link_effective;
        merged.merge_patch(own);
        // Errors are reported where the keys were written: the element, or a generator's kind
        // of link (once for all its links).
        const std::string src =
            i < link_src.size() ? r.path_of(link_src[i]) : r.path_of("links." + std::to_string(i));
        config::parse_context scratch;
        d.cfg = fabric::parse_eth_link_config(config::reader(merged, src, scratch));
        if (reported.insert(src).second) {
            for (auto& err : scratch.errors) {
                ctx.errors.push_back(err);
            }
        }
        nlohmann::json eff = {{"a", e.value("a", nlohmann::json())},
                              {"b", e.value("b", nlohmann::json())},
                              {"rate_gbps", d.cfg.rate_gbps},
                              {"propagation_ns", d.cfg.propagation_ns}};
        for (auto it = own.begin(); it != own.end(); ++it) {
            eff[it.key()] = it.value();  // the keys the link sets itself, as given
        }
        // Ends.
        bool ends_ok = true;
        for (int side = 0; side < 2; ++side) {
            const char* key = side == 0 ? "a" : "b";
            const std::string path = "links." + std::to_string(i) + "." + key;
            const nlohmann::json* v = e.contains(key) ? &e[key] : nullptr;
            if (v == nullptr || !v->is_string()) {
                r.error(path, v == nullptr
                                  ? std::string("missing: \"node<i>\" or \"<switch>:<port>\"")
                                  : config::describe(*v) +
                                        " is not an end like \"node3\" or \"leaf0:5\"");
                ends_ok = false;
                continue;
            }
            const std::string text = v->get<std::string>();
            const size_t colon = text.find(':');
            const std::string name = text.substr(0, colon);
            uint32_t port = 0;
            bool port_ok = true;
            if (colon != std::string::npos) {
                const std::string p = text.substr(colon + 1);
                port_ok = !p.empty() && p.size() <= 5 &&
                          p.find_first_not_of("0123456789") == std::string::npos;
                port = port_ok ? static_cast<uint32_t>(std::stoul(p)) : 0;
            }
            link_end end;
            uint32_t n = 0;
            if (!port_ok) {
                r.error(path, fmt::format("\"{}\": the port after ':' is not a number", text));
                ends_ok = false;
                continue;
            }
            if (node_like(name, n)) {
                if (n >= node_count) {
                    r.error(path, fmt::format("\"{}\": there is no {} (topology.nodes has {})",
                                              text, name, node_count));
                    ends_ok = false;
                    continue;
                }
                if (port != 0) {
                    r.error(path, fmt::format("\"{}\": {} has one port, 0", text, name));
                    ends_ok = false;
                    continue;
                }
                end = {false, n, 0};
            } else {
                auto it = switch_index.find(name);
                if (it == switch_index.end()) {
                    r.error(path, fmt::format("\"{}\": no node or switch is named {}", text, name));
                    ends_ok = false;
                    continue;
                }
                if (colon == std::string::npos) {
                    r.error(path, fmt::format("\"{}\": which port of {}? (\"{}:<port>\")", text,
                                              name, name));
                    ends_ok = false;
                    continue;
                }
                const switch_desc& sw = t.switches[it->second];
                if (port >= sw.ports) {
                    r.error(path,
                            fmt::format("\"{}\": {} has ports 0..{}", text, name, sw.ports - 1));
                    ends_ok = false;
                    continue;
                }
                end = {true, it->second, port};
                if (d.cfg.rate_gbps > sw.max_rate_gbps) {
                    // A generated link's rate is its kind's (when that sets it) or
                    // topology.link's; its switch's port rate the generator's or its tier's.
                    const std::string key =
                        gen_key == nullptr          ? "links." + std::to_string(i) + ".rate_gbps"
                        : own.contains("rate_gbps") ? link_src[i] + ".rate_gbps"
                                                    : std::string("link.rate_gbps");
                    const std::string limit =
                        gen_key == nullptr
                            ? fmt::format("topology.switches.{}.max_rate_gbps", it->second)
                            : fmt::format("topology.{}.max_rate_gbps", rate_src[it->second]);
                    if (gen_key == nullptr || rate_reported.insert(key + " " + limit).second) {
                        r.error(key, fmt::format("{} exceeds the port rate of {} ({} Gb/s, {})",
                                                 d.cfg.rate_gbps, name, sw.max_rate_gbps, limit));
                    }
                }
            }
            const auto key2 = std::make_pair(end.is_switch, (uint64_t{end.index} << 32) | end.port);
            if (auto u = used.find(key2); u != used.end()) {
                r.error(path, fmt::format("\"{}\" is already cabled by topology.links.{}", text,
                                          u->second));
                ends_ok = false;
                continue;
            }
            used.emplace(key2, i);
            (side == 0 ? d.a : d.b) = end;
        }
        if (ends_ok && d.a.is_switch && d.b.is_switch && d.a.index == d.b.index) {
            r.error("links." + std::to_string(i),
                    fmt::format("joins {} to itself", t.switches[d.a.index].name));
            ends_ok = false;
        }
        if (!ends_ok) {
            links_ok = false;
            continue;
        }
        const auto li = static_cast<uint32_t>(t.links.size());
        for (int side = 0; side < 2; ++side) {
            const link_end& end = side == 0 ? d.a : d.b;
            if (end.is_switch) {
                t.ports[end.index][end.port].link = li;
                t.ports[end.index][end.port].side = side;
                port_cabled[end.index][end.port] = true;
            } else {
                t.node_link[end.index] = li;
                t.node_side[end.index] = side;
            }
        }
        t.links.push_back(std::move(d));
        links_effective.push_back(std::move(eff));
    }

    // Every node and every switch port cabled, every node reachable from node 0.
    if (links_ok) {
        for (uint32_t n = 0; n < node_count; ++n) {
            if (t.node_link[n] == UINT32_MAX) {
                r.error("nodes." + std::to_string(n),
                        fmt::format("node{} is cabled to no link (topology.links)", n));
                links_ok = false;
            }
        }
        for (size_t s = 0; s < t.switches.size(); ++s) {
            for (uint32_t p = 0; p < t.switches[s].ports; ++p) {
                if (!port_cabled[s][p]) {
                    r.error("switches." + std::to_string(s) + ".ports",
                            fmt::format("port {} of {} is cabled to no link (give the switch "
                                        "only the ports it uses)",
                                        p, t.switches[s].name));
                    links_ok = false;
                    break;
                }
            }
        }
    }
    if (links_ok && node_count > 1) {
        // Breadth-first over nodes (index < N) and switches (N + index).
        std::vector<bool> seen(node_count + t.switches.size(), false);
        std::deque<size_t> q{0};
        seen[0] = true;
        auto visit = [&](const link_end& e) {
            const size_t v = e.is_switch ? node_count + e.index : e.index;
            if (!seen[v]) {
                seen[v] = true;
                q.push_back(v);
            }
        };
        while (!q.empty()) {
            const size_t v = q.front();
            q.pop_front();
            if (v < node_count) {
                const link_desc& l = t.links[t.node_link[v]];
                visit(t.node_side[v] == 0 ? l.b : l.a);
            } else {
                for (const auto& p : t.ports[v - node_count]) {
                    const link_desc& l = t.links[p.link];
                    visit(p.side == 0 ? l.b : l.a);
                }
            }
        }
        for (uint32_t n = 1; n < node_count; ++n) {
            if (!seen[n]) {
                r.error("nodes." + std::to_string(n),
                        fmt::format("node{} has no path to node0 through topology.links", n));
                links_ok = false;
            }
        }
    }

    // Addresses: nodes behind a switch get an address in their leaf's subnet (unless given),
    // a /31 to the switch port and that port as their gateway.
    if (links_ok) {
        std::vector<std::vector<uint32_t>> hosts(t.switches.size());
        for (uint32_t n = 0; n < node_count; ++n) {
            const link_desc& l = t.links[t.node_link[n]];
            const link_end& other = t.node_side[n] == 0 ? l.b : l.a;
            if (other.is_switch) {
                hosts[other.index].push_back(n);
            }
        }
        size_t most = 1;
        for (const auto& h : hosts) {
            most = std::max(most, h.size());
        }
        uint32_t subnet = 256;
        while (subnet < 2 * most) {
            subnet *= 2;
        }
        uint32_t leaf = 0;
        for (size_t s = 0; s < t.switches.size(); ++s) {
            if (hosts[s].empty()) {
                continue;
            }
            for (size_t h = 0; h < hosts[s].size(); ++h) {
                const uint32_t n = hosts[s][h];
                node_config& nc = t.nodes[n];
                if (!given[n].ip) {
                    nc.ip = BASE_IP + leaf * subnet + 2 * static_cast<uint32_t>(h) + 1;
                }
                if (!nc.prefix_length) {
                    nc.prefix_length = 31;
                }
                if (!nc.gateway) {
                    nc.gateway = nc.ip ^ 1;
                }
                const uint32_t m = mask_of(*nc.prefix_length);
                if ((*nc.gateway & m) != (nc.ip & m) || *nc.gateway == nc.ip) {
                    r.error("nodes." + std::to_string(n) + ".gateway",
                            fmt::format("\"{}\" is not another address in node{}'s subnet {}/{}",
                                        format_ipv4(*nc.gateway), n, format_ipv4(nc.ip & m),
                                        *nc.prefix_length));
                }
            }
            ++leaf;
        }
    }
    // Duplicate addresses: each named against the first node that has it.
    std::map<std::array<uint8_t, 6>, uint32_t> macs;
    std::map<uint32_t, uint32_t> ips;
    for (uint32_t i = 0; i < node_count; ++i) {
        if (auto [it, fresh] = macs.emplace(t.nodes[i].mac, i); !fresh) {
            r.error("nodes." + std::to_string(i) + ".mac",
                    fmt::format("\"{}\" is also node {}'s MAC", format_mac(t.nodes[i].mac),
                                it->second));
        }
        if (auto [it, fresh] = ips.emplace(t.nodes[i].ip, i); !fresh) {
            r.error(
                "nodes." + std::to_string(i) + ".ip",
                fmt::format("\"{}\" is also node {}'s IP", format_ipv4(t.nodes[i].ip), it->second));
        }
    }

    // Switch ports: their MACs, their gateway addresses, their neighbours.
    if (links_ok) {
        for (uint32_t s = 0; s < t.switches.size(); ++s) {
            for (uint32_t p = 0; p < t.switches[s].ports; ++p) {
                auto& pi = t.ports[s][p];
                pi.mac = switch_port_mac(s, p);
            }
        }
        for (uint32_t s = 0; s < t.switches.size(); ++s) {
            for (uint32_t p = 0; p < t.switches[s].ports; ++p) {
                auto& pi = t.ports[s][p];
                const link_desc& l = t.links[pi.link];
                const link_end& other = pi.side == 0 ? l.b : l.a;
                if (other.is_switch) {
                    pi.neighbor_mac = t.ports[other.index][other.port].mac;
                } else {
                    pi.neighbor_mac = t.nodes[other.index].mac;
                    pi.ip = t.nodes[other.index].gateway.value_or(0);
                }
            }
        }
        // Every switch gets a route per leaf: keep the tables (and the time to fill them) sane.
        size_t leaves = 0;
        for (uint32_t s = 0; s < t.switches.size(); ++s) {
            for (const auto& pi : t.ports[s]) {
                const link_desc& l = t.links[pi.link];
                if (!(pi.side == 0 ? l.b : l.a).is_switch) {
                    ++leaves;
                    break;
                }
            }
        }
        if (leaves * t.switches.size() > MAX_ROUTES) {
            r.error(gen_key != nullptr ? gen_key : "switches",
                    fmt::format("{} switches x {} leaves: more than {} routes to compute",
                                t.switches.size(), leaves, MAX_ROUTES));
        } else {
            t.routes = compute_routes(t);
        }
    }

    // Each element's clock (topology.clocks), drawn from its name.
    t.node_ppm.resize(t.nodes.size());
    for (size_t i = 0; i < t.nodes.size(); ++i) {
        t.node_ppm[i] = clock_offset_ppm(t.clocks, "node" + std::to_string(i));
    }
    t.switch_ppm.resize(t.switches.size());
    for (size_t s = 0; s < t.switches.size(); ++s) {
        t.switch_ppm[s] = clock_offset_ppm(t.clocks, t.switches[s].name);
    }

    // topology.partition: once the nodes and switches are known.
    const nlohmann::json* partition = r.raw("partition");
    if (partition != nullptr) {
        parse_partition(r, *partition, t);
    }

    // The effective config: today's form unchanged for back to back, else the expansion.
    if (!legacy) {
        nlohmann::json eff = nlohmann::json::object();
        nlohmann::json ns = nlohmann::json::array();
        for (uint32_t i = 0; i < node_count; ++i) {
            const node_config& n = t.nodes[i];
            nlohmann::json e = {
                {"mac", format_mac(n.mac)}, {"ip", format_ipv4(n.ip)}, {"mtu", n.mtu}};
            if (n.prefix_length) {
                e["prefix_length"] = *n.prefix_length;
            }
            if (n.gateway) {
                e["gateway"] = format_ipv4(*n.gateway);
            }
            ns.push_back(std::move(e));
        }
        nlohmann::json ss = nlohmann::json::array();
        for (size_t i = 0; i < t.switches.size(); ++i) {
            const switch_desc& s = t.switches[i];
            nlohmann::json e = {
                {"name", s.name}, {"ports", s.ports}, {"max_rate_gbps", s.max_rate_gbps}};
            if (switch_own[i].is_object()) {
                e.update(switch_own[i]);  // its own switch keys, as given (on topology.switch)
            }
            ss.push_back(std::move(e));
        }
        eff["nodes"] = std::move(ns);
        eff["switches"] = std::move(ss);
        eff["links"] = std::move(links_effective);
        eff["link"] = link_effective;
        eff["clocks"] = ctx.effective["topology"]["clocks"];
        if (!t.switches.empty()) {
            eff["switch"] = ctx.effective["topology"]["switch"];
        }
        if (partition != nullptr) {
            eff["partition"] = *partition;
        }
        ctx.effective["topology"] = std::move(eff);
    } else if (!clocks_given) {
        ctx.effective["topology"].erase("clocks");  // today's two-node form keeps its keys
    }
    r.finish();
    return t;
}

}  // namespace rnic::scenario
