#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Runs benchmark scenarios and prints one JSON line per scenario (see scripts/bench)."""
import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_one(rnicsim, scenario, callgrind):
    with tempfile.TemporaryDirectory(prefix="rnicsim-bench-") as tmp:
        out = os.path.join(tmp, "out")
        cmd = [rnicsim, "run", scenario, "--out", out]
        if callgrind:
            cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + os.path.join(tmp, "cg.out")] + cmd
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, _, rusage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        stderr = proc.stderr.read().decode(errors="replace")
        proc.stdout.read()
        name = os.path.splitext(os.path.basename(scenario))[0]
        stats_path = os.path.join(out, "stats.json")
        if not os.path.exists(stats_path):
            return {"scenario": name, "error": stderr.strip().splitlines()[-1:] or ["no stats.json"]}
        with open(stats_path) as f:
            stats = json.load(f)
        s = stats.get("summary", {})
        sim = stats.get("sim", {})
        packets = sim.get("packets", 0)
        sim_wall = sim.get("wall_s", wall) or wall
        row = {
            "scenario": name,
            "goodput_gbps": s.get("goodput_gbps"),
            "msg_rate_mpps": s.get("msg_rate_mpps"),
            "latency_ns": s.get("latency_ns"),
            "simulated_ns": sim.get("simulated_ns"),
            "packets": packets,
            "wall_s": round(sim_wall, 4),
            "process_wall_s": round(wall, 4),
            "packets_per_wall_s": round(packets / sim_wall) if sim_wall > 0 else None,
            "simulated_ns_per_wall_s": round(sim.get("simulated_ns", 0) / sim_wall) if sim_wall > 0 else None,
            "peak_rss_mb": round(rusage.ru_maxrss / 1024.0, 1),
            "integrity_mismatches": stats.get("integrity", {}).get("mismatches"),
        }
        if callgrind:
            total = 0
            with open(os.path.join(tmp, "cg.out")) as f:
                for line in f:
                    if line.startswith("summary:") or line.startswith("totals:"):
                        total = int(line.split()[1])
            row["instructions"] = total
            row["instructions_per_packet"] = round(total / packets) if packets else None
        return row


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rnicsim", required=True)
    ap.add_argument("--callgrind", action="store_true",
                    help="count instructions under valgrind (stable on shared machines; slow)")
    ap.add_argument("scenarios", nargs="*")
    args = ap.parse_args()
    scenarios = args.scenarios or sorted(glob.glob(os.path.join(ROOT, "configs", "bench", "*.json")))
    failed = False
    for sc in scenarios:
        row = run_one(args.rnicsim, sc, args.callgrind)
        failed = failed or "error" in row
        print(json.dumps(row), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
