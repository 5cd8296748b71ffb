#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Runs benchmark scenarios and prints one JSON line per scenario (see scripts/bench), or with
--markdown README's benchmark table. A scenario any of whose runs fails (a non-zero exit, or
stats.json not saying passed) gets a row {"scenario", "error"} naming the failure and no figures,
and the command exits 1.

Speed is reported twice: per wall second (what a user waits) and per CPU second of the rnicsim
process (user + system time). On an idle machine the two agree; on a shared one the wall figures
measure the load, the CPU figures still measure the simulator. --callgrind counts instructions,
which depend on neither.
"""
import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUTPUTS = ("waves", "trace", "pcap")


def effective_config(rnicsim, scenario, sets):
    """The scenario's effective config (`rnicsim show-config`), or None if it does not load."""
    cmd = [rnicsim, "show-config", scenario]
    for s in sets:
        cmd += ["--set", s]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       stdin=subprocess.DEVNULL, text=True)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)


def failure(exit_code, stats, stderr):
    """Why a run failed, or None: it must exit 0 and its stats.json say passed (no figure of a
    failed run is a result)."""
    if exit_code == 0 and stats is not None and stats.get("result", {}).get("passed") is True:
        return None
    why = []
    if exit_code != 0:
        why.append("rnicsim exited %d" % exit_code if exit_code > 0
                   else "rnicsim killed by signal %d" % -exit_code)
    if stats is None:
        why.append("no stats.json")
    else:
        failures = stats.get("result", {}).get("failures") or []
        why.append("FAILED" + (": " + "; ".join(str(f) for f in failures[:3]) if failures else ""))
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    # The first line saying what went wrong (rnicsim prints it before the speed line).
    said = [l for l in lines if "error" in l.lower() or "fail" in l.lower()]
    if (stats is None or not stats.get("result", {}).get("failures")) and (said or lines):
        why.append((said or lines)[0])
    return ", ".join(why)


def execute(rnicsim, scenario, sets, callgrind=False):
    """One `rnicsim run`: (stats, speed, wall_s, cpu_s, rusage, instructions, error)."""
    with tempfile.TemporaryDirectory(prefix="rnicsim-bench-") as tmp:
        out = os.path.join(tmp, "out")
        cmd = [rnicsim, "run", scenario, "--out", out]
        for s in sets:
            cmd += ["--set", s]
        if callgrind:
            # rnicsim re-executes itself once to turn address randomisation off, which valgrind
            # cannot follow; under setarch -R it is off already and rnicsim runs straight on.
            cmd = ["setarch", platform.machine(), "-R", "valgrind", "--tool=callgrind",
                   "--callgrind-out-file=" + os.path.join(tmp, "cg.out")] + cmd
        with open(os.path.join(tmp, "stdout"), "wb") as so, \
                open(os.path.join(tmp, "stderr"), "wb") as se:
            start = time.monotonic()
            proc = subprocess.Popen(cmd, stdout=so, stderr=se)
            _, status, rusage = os.wait4(proc.pid, 0)
            wall = time.monotonic() - start
        with open(os.path.join(tmp, "stderr"), errors="replace") as f:
            stderr = f.read()
        stats_path = os.path.join(out, "stats.json")
        stats = None
        if os.path.exists(stats_path):
            with open(stats_path) as f:
                stats = json.load(f)
        error = failure(os.waitstatus_to_exitcode(status), stats, stderr)
        if error is not None:
            return None, None, wall, 0.0, rusage, None, error
        # Wall-clock figures live in speed.json (stats.json is the same bytes on every run).
        speed = {}
        speed_path = os.path.join(out, "speed.json")
        if os.path.exists(speed_path):
            with open(speed_path) as f:
                speed = json.load(f)
        instructions = None
        if callgrind:
            instructions = 0
            with open(os.path.join(tmp, "cg.out")) as f:
                for line in f:
                    if line.startswith("summary:") or line.startswith("totals:"):
                        instructions = int(line.split()[1])
        cpu = rusage.ru_utime + rusage.ru_stime
        return stats, speed, wall, cpu, rusage, instructions, None


def best_of(rnicsim, scenario, sets, repeat):
    """The run with the least CPU time out of `repeat` (noise on a shared machine only adds);
    the first failed run instead, if one fails."""
    best = None
    for _ in range(max(1, repeat)):
        r = execute(rnicsim, scenario, sets)
        if r[6] is not None:
            return r
        if best is None or r[3] < best[3]:
            best = r
    return best


def per(x, t):
    return round(x / t) if t and t > 0 else None


# ns-3's leaf-spine figures (../shared/peers/ns3/results/fabric.jsonl, the peer's own runs on
# the same kind of machine): the median hops per CPU second of the row with the same hosts and
# pattern, beside our packet-hops per CPU second. Fabric benchmarks and their ns-3 row.
NS3_FABRIC = {
    "fabric_incast_16": (16, "incast"),
    "fabric_permutation_16": (16, "permutation"),
    "fabric_websearch_64": (64, "permutation"),  # ns-3 has no web-search traffic
}


def ns3_hops_per_cpu_s(name):
    key = NS3_FABRIC.get(name)
    # The shared folder beside the checkout (../shared), or beside a worktree's parent.
    paths = [os.path.join(ROOT, *up, "shared", "peers", "ns3", "results", "fabric.jsonl")
             for up in ((".."), ("..", ".."))]
    path = next((p for p in paths if os.path.exists(p)), None)
    if key is None or path is None:
        return None
    rates = []
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            cpu = (r.get("cpu_user_seconds") or 0) + (r.get("cpu_sys_seconds") or 0)
            if (r.get("hosts"), r.get("pattern")) == key and cpu > 0:
                rates.append(r["packet_hops"] / cpu)
    if not rates:
        return None
    rates.sort()
    return round(rates[len(rates) // 2])


def run_one(rnicsim, scenario, args):
    """One row: the figures of a scenario, or {"scenario", "error"} if any of its runs failed
    (then no figure at all: a failed run's numbers are not results)."""
    name = os.path.splitext(os.path.basename(scenario))[0]
    sets = args.set
    stats, speed, wall, cpu, rusage, _, error = best_of(rnicsim, scenario, sets, args.repeat)
    if error is not None:
        return {"scenario": name, "error": error}
    s = stats.get("summary", {})
    sim = stats.get("sim", {})
    packets = sim.get("packets", 0)
    simulated_ns = sim.get("simulated_ns", 0)
    sim_wall = speed.get("wall_s", sim.get("wall_s", wall)) or wall
    row = {
        "scenario": name,
        "goodput_gbps": s.get("goodput_gbps"),
        "msg_rate_mpps": s.get("msg_rate_mpps"),
        "latency_ns": s.get("latency_ns"),
        "simulated_ns": simulated_ns,
        "packets": packets,
        "wall_s": round(sim_wall, 4),
        "process_wall_s": round(wall, 4),
        "cpu_s": round(cpu, 4),
        "packets_per_wall_s": per(packets, sim_wall),
        "packets_per_cpu_s": per(packets, cpu),
        "simulated_ns_per_wall_s": per(simulated_ns, sim_wall),
        "simulated_ns_per_cpu_s": per(simulated_ns, cpu),
        "peak_rss_mb": round(rusage.ru_maxrss / 1024.0, 1),
        "integrity_mismatches": stats.get("integrity", {}).get("mismatches"),
    }
    ns3 = ns3_hops_per_cpu_s(name)
    if ns3 is not None:
        # packets are packet-hops (frames on every link), as ns-3's PhyTxEnd count.
        row["ns3_hops_per_cpu_s"] = ns3
        row["vs_ns3"] = round(row["packets_per_cpu_s"] / ns3, 2) if row["packets_per_cpu_s"] else None
    # An idle scenario (workload.idle_ms > 0): the cost of the idle time alone is the difference
    # to the same run without it, each the best of three.
    idle_ms = (effective_config(rnicsim, scenario, sets) or {}).get("workload", {}).get(
        "idle_ms", 0)
    if idle_ms:
        with_idle = best_of(rnicsim, scenario, sets, max(3, args.repeat))
        without = best_of(rnicsim, scenario, sets + ["workload.idle_ms=0"], max(3, args.repeat))
        for what, r in (("idle run", with_idle), ("run without the idle time", without)):
            if r[6] is not None:
                return {"scenario": name, "error": "%s: %s" % (what, r[6])}
        wall_of = lambda r: (r[1] or {}).get("wall_s", r[2]) or r[2]
        row["idle_simulated_ms"] = idle_ms
        row["idle_wall_s"] = round(max(0.0, wall_of(with_idle) - wall_of(without)), 5)
        row["idle_cpu_s"] = round(max(0.0, with_idle[3] - without[3]), 5)
    # The cost of each output, as the ratio of CPU seconds with it on to without.
    if args.outputs:
        for o in OUTPUTS:
            r = best_of(rnicsim, scenario, sets + ["outputs.%s=true" % o], args.repeat)
            if r[6] is not None:
                return {"scenario": name, "error": "with outputs.%s: %s" % (o, r[6])}
            row["cost_" + o] = round(r[3] / cpu, 2) if cpu > 0 else None
    # What congestion control costs the simulator: the same scenario with each algorithm of
    # --cc (rnic.cc.algorithm), per packet (instructions under --callgrind, else CPU time) and
    # as a ratio to "none".
    if args.cc:
        cost = {}
        for alg in args.cc:
            cc_sets = sets + ["rnic.cc.algorithm=" + alg]
            if args.callgrind:
                r = execute(rnicsim, scenario, cc_sets, callgrind=True)
            else:
                r = best_of(rnicsim, scenario, cc_sets, args.repeat)
            if r[6] is not None:
                return {"scenario": name, "error": "with rnic.cc.algorithm=%s: %s" % (alg, r[6])}
            n = r[0].get("sim", {}).get("packets", 0)
            c = {"packets": n}
            if not args.callgrind:  # under valgrind the CPU time is valgrind's
                c["cpu_us_per_packet"] = round(r[3] * 1e6 / n, 3) if n else None
            else:
                c["instructions"] = r[5]
                c["instructions_per_packet"] = per(r[5], n)
            cost[alg] = c
        base = cost.get("none")
        key = "instructions_per_packet" if args.callgrind else "cpu_us_per_packet"
        for alg, c in cost.items():
            if base and base.get(key) and c.get(key) is not None:
                c["per_packet_vs_none"] = round(c[key] / base[key], 4)
            if base and args.callgrind and base.get("instructions"):
                c["instructions_vs_none"] = round(c["instructions"] / base["instructions"], 4)
        row["cc_cost"] = cost
    if args.callgrind:
        _, _, _, _, _, instructions, error = execute(rnicsim, scenario, sets, callgrind=True)
        if error is not None:
            return {"scenario": name, "error": "under callgrind: " + error}
        row["instructions"] = instructions
        row["instructions_per_packet"] = per(instructions, packets)
        if idle_ms:
            # The idle time's own instructions: the difference to the run without it.
            r = execute(rnicsim, scenario, sets + ["workload.idle_ms=0"], callgrind=True)
            if r[6] is not None:
                return {"scenario": name, "error": "under callgrind without the idle time: " +
                        r[6]}
            row["idle_instructions"] = instructions - r[5]
    return row


def size(n):
    for unit, b in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= b and n % b == 0:
            return "%d %s" % (n // b, unit)
    return "%d B" % n


def describe(cfg):
    """What a scenario does, in a few words, from its effective config."""
    if not cfg:
        return ""
    w = cfg.get("workload", {})
    topo = cfg.get("topology", {})
    nodes = topo.get("nodes") or [{}]
    parts = []
    pattern = w.get("pattern", "pairs")
    if topo.get("switches") or pattern != "pairs":
        # A fabric: the traffic pattern, its nodes and switches (packets are packet-hops).
        parts.append("%s, %d nodes, %d switches" % (pattern, len(nodes),
                                                    len(topo.get("switches") or [])))
    if pattern == "flows" and w.get("cdf"):
        parts.append("%s %s sizes at %g%% load" % (
            str(w.get("operation", "")).upper(),
            os.path.splitext(os.path.basename(w["cdf"]))[0], 100 * w.get("load", 0)))
    else:
        parts.append("%s %s" % (str(w.get("operation", "")).upper(), size(w.get("message_bytes", 0))))
    if w.get("qps", 1) != 1:
        parts.append("%d QPs" % w["qps"])
    parts.append("MTU %s" % nodes[0].get("mtu"))
    parts.append("QD %s" % w.get("queue_depth"))
    if w.get("inline_threshold", 0) >= w.get("message_bytes", 0) > 0:
        parts.append("inline")
    if w.get("signal_every", 1) > 1:
        parts.append("1 in %d signaled" % w["signal_every"])
    impl = cfg.get("rnic", {}).get("send_path", {}).get("impl", "model")
    if impl != "model":
        parts.append("send path %s" % ("RTL" if impl == "rtl" else impl))
    cc = cfg.get("rnic", {}).get("cc", {}).get("algorithm", "none")
    if cc != "none":
        mark = topo.get("link", {}).get("faults", {}).get("ecn_mark", 0)
        parts.append("%s%s" % (cc.upper(), ", %g%% CE-marked" % (100 * mark) if mark else ""))
    if w.get("idle_ms"):
        parts.append("then %g ms idle" % w["idle_ms"])
    return ", ".join(parts)


def thousands(x):
    if x is None:
        return ""
    return "%.1f k" % (x / 1000.0) if x >= 1000 else str(x)


def markdown(rows, configs, args):
    """The README's benchmark table: one line per scenario; a failed one says FAILED and why."""
    lines = ["| scenario | what | simulated | packets / CPU s | instructions / packet | peak RSS |",
             "|---|---|---|---|---|---|"]
    for row, cfg in zip(rows, configs):
        name = "`%s`" % row["scenario"]
        if "error" in row:
            lines.append("| %s | %s | **FAILED**: %s | | | |" % (
                name, describe(cfg), row["error"].replace("|", "\\|")))
            continue
        sim = ["%.1f Gb/s" % row["goodput_gbps"] if row.get("goodput_gbps") is not None else "",
               "%.2f M msg/s" % row["msg_rate_mpps"] if row.get("msg_rate_mpps") else ""]
        idle = "idle_cpu_s" in row
        if idle:
            # Its packets are the setup's: the idle time's own cost is what it shows.
            sim.append("the idle %g ms: %s%.0f us CPU over the same run without it" % (
                row["idle_simulated_ms"],
                "%+d instructions, " % row["idle_instructions"]
                if "idle_instructions" in row else "", row["idle_cpu_s"] * 1e6))
        costs = ["%s %.1fx" % (o, row["cost_" + o]) for o in OUTPUTS
                 if row.get("cost_" + o) is not None]
        if costs:
            sim.append("CPU with " + ", ".join(costs))
        if row.get("cc_cost"):
            unit = "instructions" if args.callgrind else "CPU us"
            key = "instructions_per_packet" if args.callgrind else "cpu_us_per_packet"
            cells = []
            for alg, c in row["cc_cost"].items():
                v = c.get(key)
                cells.append("%s %s%s" % (alg, thousands(v) if args.callgrind else v,
                                          " (%+.1f%%)" % (100 * (c["per_packet_vs_none"] - 1))
                                          if alg != "none" and "per_packet_vs_none" in c else ""))
            sim.append("%s / packet with rnic.cc.algorithm " % unit + ", ".join(cells))
        lines.append("| %s | %s | %s | %s | %s | %.0f MB |" % (
            name, describe(cfg), ", ".join(x for x in sim if x),
            "" if idle else thousands(row.get("packets_per_cpu_s")),
            "" if idle else thousands(row.get("instructions_per_packet")),
            row.get("peak_rss_mb", 0)))
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for l in f:
                if l.startswith("model name"):
                    cpu = l.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    flags = "".join(" --repeat %d" % args.repeat if args.repeat > 1 else "")
    flags += " --callgrind" if args.callgrind else ""
    flags += " --outputs" if args.outputs else ""
    flags += " --cc" if args.cc else ""
    flags += (" --cc-algorithms " + ",".join(args.cc)
              if args.cc and args.cc != ["none", "dcqcn", "timely"] else "")
    flags += "".join(" --set " + x for x in args.set)
    lines.append("")
    lines.append("`scripts/bench --markdown%s` at commit %s on %s (%d CPUs, load average %.1f "
                 "at the end)." % (flags, args.commit, cpu,
                                   os.cpu_count() or 0, os.getloadavg()[0]))
    return "\n".join(lines)


# --idle-memory: the quickstart's one flow (node 0 to node 1) in a leaf-spine of 32 hosts per leaf
# and 2 spines, at two sizes; every other node and switch is idle. The difference of the peak RSS
# over the difference of the node count is what one more idle node (and 1/32 of a leaf switch)
# costs, elaboration and all its processes' stacks included.
IDLE_LEAVES = (2, 8)


def idle_memory(rnicsim):
    scenario = os.path.join(ROOT, "configs", "quickstart.json")
    row = {"scenario": "idle_node_memory"}
    rss = []
    for leaves in IDLE_LEAVES:
        topology = {"leaf_spine": {"leaves": leaves, "spines": 2, "hosts_per_leaf": 32}}
        _, _, wall, cpu, rusage, _, error = execute(
            rnicsim, scenario, ["topology=" + json.dumps(topology), "workload.messages=10"])
        if error is not None:
            return {"scenario": "idle_node_memory", "error": "%d nodes: %s" % (32 * leaves, error)}
        rss.append(rusage.ru_maxrss)  # KiB
        row["peak_rss_mb_%d_nodes" % (32 * leaves)] = round(rusage.ru_maxrss / 1024.0, 1)
        row["cpu_s_%d_nodes" % (32 * leaves)] = round(cpu, 3)
    nodes = 32 * (IDLE_LEAVES[1] - IDLE_LEAVES[0])
    row["kb_per_idle_node"] = round((rss[1] - rss[0]) / nodes, 1)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rnicsim", required=True)
    ap.add_argument("--callgrind", action="store_true",
                    help="also count instructions under valgrind (stable on shared machines; slow)")
    ap.add_argument("--outputs", action="store_true",
                    help="also run with waves, trace and pcap on, one at a time, and report each "
                         "one's cost (cost_waves ...: CPU time with it / without)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run each configuration N times and keep the one with the least CPU time")
    ap.add_argument("--cc", action="store_true",
                    help="also run each scenario with each congestion-control algorithm of "
                         "--cc-algorithms (rnic.cc.algorithm) and report what it costs: "
                         "cc_cost.<alg>.{instructions_per_packet (with --callgrind), "
                         "cpu_us_per_packet, per_packet_vs_none}")
    ap.add_argument("--cc-algorithms", default="none,dcqcn,timely", metavar="ALG,...",
                    help="the algorithms --cc runs (default none,dcqcn,timely)")
    ap.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                    help="override a config value of every scenario (as rnicsim run --set)")
    ap.add_argument("--markdown", action="store_true",
                    help="print README's benchmark table (the JSON lines go to stderr)")
    ap.add_argument("--idle-memory", action="store_true",
                    help="only measure the memory of an idle node: peak RSS of the quickstart's "
                         "flow in a leaf-spine of %d and of %d nodes, the difference per node "
                         "(kb_per_idle_node)" % (32 * IDLE_LEAVES[0], 32 * IDLE_LEAVES[1]))
    ap.add_argument("scenarios", nargs="*")
    args = ap.parse_args()
    if args.idle_memory:
        row = idle_memory(args.rnicsim)
        print(json.dumps(row), flush=True)
        sys.exit(1 if "error" in row else 0)
    args.cc = [a for a in args.cc_algorithms.split(",") if a] if args.cc else []
    # The commit of the tree at the start (what scripts/bench just built), for --markdown.
    commit = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty", "--abbrev=12"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    args.commit = commit.stdout.strip() or "unknown"
    scenarios = args.scenarios or sorted(glob.glob(os.path.join(ROOT, "configs", "bench", "*.json")))
    rows, configs = [], []
    for sc in scenarios:
        row = run_one(args.rnicsim, sc, args)
        rows.append(row)
        configs.append(effective_config(args.rnicsim, sc, args.set))
        print(json.dumps(row), flush=True, file=sys.stderr if args.markdown else sys.stdout)
    if args.markdown:
        print(markdown(rows, configs, args), flush=True)
    failed = [r["scenario"] for r in rows if "error" in r]
    if failed:
        print("bench: FAILED: %s (no figures for %s)" % (", ".join(failed),
                                                         "it" if len(failed) == 1 else "them"),
              file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
