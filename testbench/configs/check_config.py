#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Runs one file shipped under configs/ the way a user would, cut down to a few seconds, and
checks that it passes (ctest label `configs`: one test per file, see testbench/configs/README.md).

What a file is, from its folder and its content:
  configs/hw/*.json       a NIC preset: the quickstart runs with its "rnic" replaced by
                          {"preset": FILE} (the preset's NIC, the quickstart's workload)
  a "parameters" member   a sweep: `rnicsim sweep --dry-run` validates every point, then the
                          largest point runs (the one whose varied numeric values are largest,
                          compared in parameter order; the last such point in plan order)
  any other JSON          a scenario: `rnicsim run`
Every run must exit 0 with result.passed, zero integrity mismatches and every byte of the
summary checked, and no lossless port dropping a frame (every `lossless_drops` counter 0); a
scenario that shows a failure on purpose says so in a comment line
`// check_config: fails with "TEXT"`: its run must exit 1 with a failure containing TEXT. Runs
move at most --max-messages work requests (`--set workload.messages`, never fewer than one per
QP); everything else is the file's own.

Usage: check_config.py --rnicsim BUILD/rnicsim --root SOURCE_DIR [--max-messages N] FILE
Exit 0 passed, 1 failed (the reason on stderr).
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile


class Failed(Exception):
    pass


def strip_comments(text):
    """JSON with // and /* */ comments (as rnicsim reads it) to plain JSON; strings kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def load(path):
    with open(path) as f:
        return json.loads(strip_comments(f.read()))


def kind_of(path, root, doc):
    rel = os.path.relpath(path, os.path.join(root, "configs")).split(os.sep)
    if rel[0] == "hw":
        return "preset"
    if isinstance(doc, dict) and "parameters" in doc:
        return "sweep"
    return "scenario"


def call(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          stdin=subprocess.DEVNULL)


def effective(rnicsim, scenario, sets):
    cmd = [rnicsim, "show-config", scenario]
    for s in sets:
        cmd += ["--set", s]
    r = call(cmd)
    if r.returncode != 0:
        raise Failed("rnicsim show-config exited %d:\n%s" % (r.returncode, r.stderr.strip()))
    return json.loads(r.stdout)


def expected_failure(path):
    """TEXT of a `// check_config: fails with "TEXT"` line, or None."""
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith('// check_config: fails with "') and line.endswith('"'):
                return line[len('// check_config: fails with "'):-1]
    return None


def run_failing(rnicsim, scenario, text):
    """A scenario that fails on purpose: exit 1, a failure naming `text`."""
    with tempfile.TemporaryDirectory(prefix="rnicsim-configs-") as tmp:
        out = os.path.join(tmp, "out")
        cmd = [rnicsim, "run", scenario, "--out", out]
        print("+ " + " ".join(shlex.quote(a) for a in cmd), flush=True)
        r = call(cmd)
        sys.stdout.write(r.stdout)
        if r.returncode != 1:
            raise Failed("expected exit 1 (fails with %r), got %d:\n%s" %
                         (text, r.returncode, r.stderr.strip()))
        with open(os.path.join(out, "stats.json")) as f:
            failures = json.load(f).get("result", {}).get("failures", [])
        if not any(text in x for x in failures):
            raise Failed("no failure contains %r: %s" % (text, failures))
    print("FAILED AS EXPECTED: %s" % text)


def run_checked(rnicsim, scenario, sets, max_messages):
    """`rnicsim run` with the message count cut down; raises Failed naming what went wrong."""
    cfg = effective(rnicsim, scenario, sets)
    w = cfg.get("workload", {})
    messages, qps = w.get("messages", 0), w.get("qps", 1)
    sets = list(sets)
    if messages > max_messages:
        sets.append("workload.messages=%d" % max(max_messages, qps))
    with tempfile.TemporaryDirectory(prefix="rnicsim-configs-") as tmp:
        out = os.path.join(tmp, "out")
        cmd = [rnicsim, "run", scenario, "--out", out]
        for s in sets:
            cmd += ["--set", s]
        print("+ " + " ".join(shlex.quote(a) for a in cmd), flush=True)
        r = call(cmd)
        sys.stdout.write(r.stdout)
        stats_path = os.path.join(out, "stats.json")
        if r.returncode != 0:
            raise Failed("rnicsim run exited %d:\n%s" % (r.returncode, r.stderr.strip()))
        if not os.path.exists(stats_path):
            raise Failed("rnicsim run exited 0 but wrote no stats.json")
        with open(stats_path) as f:
            stats = json.load(f)
    result = stats.get("result", {})
    integrity = stats.get("integrity", {})
    summary = stats.get("summary", {})
    problems = []
    if result.get("passed") is not True:
        problems.append("result.passed is %r: %s" % (result.get("passed"), result.get("failures")))
    if integrity.get("mismatches") != 0:
        problems.append("integrity.mismatches is %r" % integrity.get("mismatches"))
    if integrity.get("bytes_checked") != summary.get("bytes"):
        problems.append("integrity.bytes_checked %r != summary.bytes %r" %
                        (integrity.get("bytes_checked"), summary.get("bytes")))
    if not summary.get("messages"):
        problems.append("summary.messages is %r" % summary.get("messages"))
    # PFC's promise: a lossless port never drops (a NIC's receive buffer sized with its headroom).
    for block, counters in sorted(stats.get("blocks", {}).items()):
        if isinstance(counters, dict) and counters.get("lossless_drops", 0) != 0:
            problems.append("%s.lossless_drops is %r" % (block, counters["lossless_drops"]))
    if problems:
        raise Failed("; ".join(problems))
    print("PASSED: %s messages, %s bytes checked, 0 mismatches" %
          (summary.get("messages"), integrity.get("bytes_checked")))


def numeric(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def largest_point(points):
    """points: [(id, [PATH=VALUE overrides])]. The one whose varied numeric values are largest,
    compared in the order the overrides name them; ties go to the last in plan order."""
    values = []
    for _, sets in points:
        d = {}
        for s in sets:
            path, _, v = s.partition("=")
            try:
                d[path] = json.loads(v)
            except ValueError:
                d[path] = v
        values.append(d)
    paths = []
    for d in values:
        for p in d:
            if p not in paths:
                paths.append(p)
    varied = [p for p in paths if len({json.dumps(d.get(p)) for d in values}) > 1]
    best, best_key = 0, None
    for i, d in enumerate(values):
        key = tuple(d[p] for p in varied if numeric(d.get(p)))
        if best_key is None or key >= best_key:
            best, best_key = i, key
    return best


def sweep_points(rnicsim, sweep):
    """The points of a sweep as `rnicsim sweep --dry-run` lists them: (base scenario,
    [(id, [PATH=VALUE overrides])])."""
    with tempfile.TemporaryDirectory(prefix="rnicsim-configs-sweep-") as tmp:
        out = os.path.join(tmp, "sweep")
        cmd = [rnicsim, "sweep", sweep, "--dry-run", "--out", out]
        print("+ " + " ".join(shlex.quote(a) for a in cmd), flush=True)
        r = call(cmd)
        if r.returncode != 0:
            raise Failed("rnicsim sweep --dry-run exited %d:\n%s" % (r.returncode,
                                                                     r.stderr.strip()))
        sys.stderr.write(r.stderr)
    # Each point: "<id> to run:  rnicsim run BASE --out DIR --set PATH=VALUE ...".
    points = []
    base = None
    for line in r.stdout.splitlines():
        head, sep, command = line.partition(" to run: ")
        if not sep:
            raise Failed("unexpected line from sweep --dry-run: " + line)
        args = shlex.split(command)
        if args[:2] != ["rnicsim", "run"]:
            raise Failed("unexpected command from sweep --dry-run: " + command)
        base = args[2]
        sets = [args[i + 1] for i in range(3, len(args) - 1) if args[i] == "--set"]
        points.append((head.strip(), sets))
    if not points:
        raise Failed("sweep --dry-run listed no points")
    return base, points


def check_sweep(rnicsim, sweep, max_messages):
    base, points = sweep_points(rnicsim, sweep)
    i = largest_point(points)
    print("largest point: %s of %d: %s" % (points[i][0], len(points), " ".join(points[i][1])))
    run_checked(rnicsim, base, points[i][1], max_messages)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rnicsim", required=True)
    ap.add_argument("--root", required=True, help="source tree (configs/ is in it)")
    ap.add_argument("--max-messages", type=int, default=25000)
    ap.add_argument("file")
    args = ap.parse_args()
    path = os.path.abspath(args.file)
    root = os.path.abspath(args.root)
    try:
        try:
            doc = load(path)
        except (OSError, ValueError) as e:
            raise Failed("not readable as JSON (comments allowed): %s" % e)
        kind = kind_of(path, root, doc)
        print("%s: %s" % (os.path.relpath(path, root), kind), flush=True)
        if kind == "preset":
            # `--set rnic.preset=` cannot do this: a preset is merged when the file is read.
            quickstart = load(os.path.join(root, "configs", "quickstart.json"))
            quickstart["rnic"] = {"preset": path}
            with tempfile.TemporaryDirectory(prefix="rnicsim-configs-preset-") as tmp:
                scenario = os.path.join(tmp, "quickstart_" + os.path.basename(path))
                with open(scenario, "w") as f:
                    json.dump(quickstart, f, indent=2)
                run_checked(args.rnicsim, scenario, [], args.max_messages)
        elif kind == "sweep":
            check_sweep(args.rnicsim, path, args.max_messages)
        elif expected_failure(path) is not None:
            run_failing(args.rnicsim, path, expected_failure(path))
        else:
            run_checked(args.rnicsim, path, [], args.max_messages)
    except Failed as e:
        print("FAILED: %s: %s" % (os.path.relpath(path, root), e), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
