#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/bench never reports a failed run as a figure (ctest: Bench.*).

Runs scripts/bench.py (what scripts/bench execs after setup and build) on tiny scenarios:
  passing        the quickstart at 16 messages: a row of figures, exit 0 (the control);
  failing        the quickstart and a copy of it whose 1 us time limit cannot be met: the
                 copy's row names the failure and holds no figure, the command exits 1, also
                 with --markdown (the table says FAILED for it);
  failed_exit_0  a stand-in rnicsim that exits 0 but writes stats.json with result.passed false:
                 still an error row and exit 1 (the verdict counts, not only the exit code).
  cc             --cc: the cost of congestion control, one entry per algorithm (none, dcqcn,
                 timely: packets, CPU us per packet, the ratio to none, which is 1 for none);
                 an algorithm that does not exist makes the row an error and the exit 1.
Usage: bench_test.py --rnicsim BUILD/rnicsim --root SOURCE_DIR CASE
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

FIGURES = ("goodput_gbps", "msg_rate_mpps", "latency_ns", "packets", "packets_per_cpu_s",
           "wall_s", "cpu_s", "peak_rss_mb")
SMALL = ["--set", "workload.messages=16"]

errors = []


def check(cond, what):
    if not cond:
        errors.append(what)


def bench(root, rnicsim, args):
    cmd = ["/usr/bin/python3", os.path.join(root, "scripts", "bench.py"), "--rnicsim", rnicsim]
    cmd += args
    print("+ " + " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       stdin=subprocess.DEVNULL)
    print(r.stdout + r.stderr, flush=True)
    return r


def rows(text):
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def failing_copy(root, tmp):
    """The quickstart with an impossible time limit: the run ends FAILED (exit 1) at 1 us."""
    with open(os.path.join(root, "configs", "quickstart.json")) as f:
        doc = json.load(f)
    doc["workload"]["time_limit_ms"] = 0.001
    path = os.path.join(tmp, "too_short.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rnicsim", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("case", choices=["passing", "failing", "failed_exit_0", "cc"])
    a = ap.parse_args()
    quickstart = os.path.join(a.root, "configs", "quickstart.json")
    with tempfile.TemporaryDirectory(prefix="rnicsim-bench-test-") as tmp:
        if a.case == "passing":
            r = bench(a.root, a.rnicsim, SMALL + [quickstart])
            check(r.returncode == 0, "a passing run: exit %d, not 0" % r.returncode)
            out = rows(r.stdout)
            check(len(out) == 1 and "error" not in out[0], "a passing run: not one figure row")
            if out:
                check(out[0].get("goodput_gbps", 0) > 0, "a passing run: no goodput")
                check(out[0].get("integrity_mismatches") == 0, "a passing run: mismatches")
        elif a.case == "failing":
            bad = failing_copy(a.root, tmp)
            r = bench(a.root, a.rnicsim, SMALL + [quickstart, bad])
            check(r.returncode == 1, "one failed scenario: exit %d, not 1" % r.returncode)
            out = rows(r.stdout)
            check(len(out) == 2, "%d rows, not 2" % len(out))
            if len(out) == 2:
                ok, failed = out
                check(ok.get("scenario") == "quickstart" and "error" not in ok,
                      "the passing scenario lost its figures: %s" % ok)
                check(failed.get("scenario") == "too_short", "second row: %s" % failed)
                err = failed.get("error", "")
                check("rnicsim exited 1" in err and "FAILED" in err and "time limit" in err,
                      "the error does not name the failure: %r" % err)
                shown = [k for k in FIGURES if k in failed]
                check(not shown, "figures printed for the failed run: %s" % shown)
            check("bench: FAILED: too_short" in r.stderr, "no FAILED summary on stderr")
            # --markdown: the README table has a FAILED row without figures, and exit 1.
            r = bench(a.root, a.rnicsim, SMALL + ["--markdown", bad])
            check(r.returncode == 1, "--markdown, failed scenario: exit %d" % r.returncode)
            line = [l for l in r.stdout.splitlines() if l.startswith("| `too_short`")]
            check(len(line) == 1 and "**FAILED**" in line[0] and "Gb/s" not in line[0] and
                  line[0].rstrip().endswith("| | | |"),
                  "markdown row of the failed run: %s" % line)
        elif a.case == "cc":
            r = bench(a.root, a.rnicsim, SMALL + ["--cc", quickstart])
            check(r.returncode == 0, "--cc: exit %d, not 0" % r.returncode)
            out = rows(r.stdout)
            cost = out[0].get("cc_cost", {}) if len(out) == 1 else {}
            check(sorted(cost) == ["dcqcn", "none", "timely"], "--cc entries: %s" % sorted(cost))
            for alg, c in cost.items():
                check(c.get("packets", 0) > 0 and c.get("cpu_us_per_packet", 0) > 0,
                      "--cc %s: no packets or CPU per packet: %s" % (alg, c))
                check(c.get("per_packet_vs_none", 0) > 0, "--cc %s: no ratio: %s" % (alg, c))
            if "none" in cost:
                check(cost["none"].get("per_packet_vs_none") == 1.0, "none against none != 1")
            r = bench(a.root, a.rnicsim, SMALL + ["--cc", "--markdown", quickstart])
            check(r.returncode == 0 and "rnic.cc.algorithm none" in r.stdout,
                  "--cc --markdown: no cost cell in the table")
            r = bench(a.root, a.rnicsim,
                      SMALL + ["--cc", "--cc-algorithms", "none,no_such_cc", quickstart])
            check(r.returncode == 1, "--cc with an unknown algorithm: exit %d" % r.returncode)
            out = rows(r.stdout)
            check(len(out) == 1 and "no_such_cc" in out[0].get("error", ""),
                  "--cc with an unknown algorithm: no error row naming it: %s" % out)
        else:
            # A stand-in simulator: `run` writes a stats.json that says FAILED, then exits 0.
            fake = os.path.join(tmp, "fake_rnicsim")
            stats = {"summary": {"goodput_gbps": 99.0, "msg_rate_mpps": 1.0},
                     "sim": {"packets": 10, "simulated_ns": 1000},
                     "integrity": {"mismatches": 0},
                     "result": {"passed": False, "failures": ["stand-in verdict"]}}
            with open(fake, "w") as f:
                f.write("#!/bin/sh\n"
                        "[ \"$1\" = show-config ] && { echo '{}'; exit 0; }\n"
                        "mkdir -p \"$4\" && cat > \"$4/stats.json\" <<'EOF'\n%s\nEOF\n"
                        "exit 0\n" % json.dumps(stats))
            os.chmod(fake, 0o755)
            r = bench(a.root, fake, [quickstart])
            check(r.returncode == 1, "FAILED verdict with exit 0: bench exit %d" % r.returncode)
            out = rows(r.stdout)
            check(len(out) == 1 and "stand-in verdict" in out[0].get("error", ""),
                  "no error row naming the verdict: %s" % out)
            check(not any(k in out[0] for k in FIGURES) if out else True,
                  "figures printed for the failed run")
    for e in errors:
        print("FAIL: " + e, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
