#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest label `mpi` (issue 16): partitioned runs against the single process.

  mpi_test.py --rnicsim BIN --work DIR single SCENARIO [--set P=V]...
      the reference: one process (no MPI), outputs in DIR/single; must pass.
  mpi_test.py --rnicsim BIN --work DIR ranks N SCENARIO [--set P=V]...
      `rnicsim run --ranks N` into DIR/ranks<N>; every output file of the reference but
      speed.json and config.json (its outputs.dir differs) must be byte for byte the same, no file
      more or less, and speed.json must hold N per-rank entries.
  mpi_test.py --rnicsim BIN --work DIR death N VICTIM SCENARIO [--set P=V]...
      a partitioned run whose rank VICTIM is killed (SIGKILL) once every rank is running: the run
      must exit non-zero, every other rank must print its own error line, and neither the output
      folder nor its staging folder may be left.

Exit 0 when the test holds, 1 with the reason otherwise.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

# Outputs that may differ: the simulator's speed, and the effective config (its outputs.dir).
MAY_DIFFER = {"speed.json", "config.json"}


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def env():
    e = dict(os.environ)
    e["SYSTEMC_DISABLE_COPYRIGHT_MESSAGE"] = "1"
    e["CI"] = "true"  # no progress bar
    for k in list(e):  # a test started under mpirun/srun must not look like a rank itself
        if k.startswith(("OMPI_", "PMIX_", "PMI_")) or k == "SLURM_STEP_NUM_TASKS":
            del e[k]
    return e


def run_args(a, out):
    args = [a.rnicsim, "run", a.scenario, "--out", out]
    for s in a.set or []:
        args += ["--set", s]
    return args


def single(a):
    out = os.path.join(a.work, "single")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(a.work, exist_ok=True)
    p = subprocess.run(run_args(a, out), env=env(), capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"the single-process run exited {p.returncode}:\n{p.stderr[-3000:]}")
    print(f"single process: {sorted(os.listdir(out))}")


def ranks(a):
    ref = os.path.join(a.work, "single")
    if not os.path.isdir(ref):
        fail(f"no reference run in {ref} (the `single` test runs first: ctest fixture)")
    out = os.path.join(a.work, f"ranks{a.n}")
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.run(run_args(a, out) + ["--ranks", str(a.n)], env=env(), capture_output=True,
                       text=True, timeout=a.timeout)
    if p.returncode != 0:
        fail(f"--ranks {a.n} exited {p.returncode}:\n{p.stderr[-3000:]}")
    want = set(os.listdir(ref)) - MAY_DIFFER
    got = set(os.listdir(out)) - MAY_DIFFER
    if want != got:
        fail(f"--ranks {a.n} wrote {sorted(got)}, the single process {sorted(want)}")
    differ = []
    for f in sorted(want):
        with open(os.path.join(ref, f), "rb") as x, open(os.path.join(out, f), "rb") as y:
            bx, by = x.read(), y.read()
        if bx == by:
            print(f"{f}: identical ({len(bx)} bytes)")
            continue
        at = next((i for i in range(min(len(bx), len(by))) if bx[i] != by[i]),
                  min(len(bx), len(by)))
        msg = f"{f}: differs at byte {at} ({len(by)} vs {len(bx)} bytes)"
        if not f.endswith(".pcap"):  # text: the first line that differs, both ways
            line = bx[:at].count(b"\n")
            lx, ly = bx.split(b"\n"), by.split(b"\n")
            msg += (f", line {line + 1}:\n  single : {lx[line][:200].decode(errors='replace')}"
                    f"\n  ranks{a.n}: {ly[line][:200].decode(errors='replace') if line < len(ly) else ''}")
        print(msg)
        differ.append(f)
    if differ:
        fail(f"--ranks {a.n} differs from the single process in {', '.join(differ)}")
    with open(os.path.join(out, "speed.json")) as s:
        speed = json.load(s)
    per_rank = speed.get("ranks", [])
    if [r.get("rank") for r in per_rank] != list(range(a.n)):
        fail(f"speed.json: want one 'ranks' entry per rank 0..{a.n - 1}, got {per_rank}")
    if a.n > 1 and any(r.get("windows", 0) == 0 or r.get("delta_cycles", 0) == 0 for r in per_rank):
        fail(f"speed.json: a rank without windows or events (not partitioned?): {per_rank}")


def rank_pids(launcher_pid):
    """{rank: pid} of the processes mpirun (our child, exec'd by rnicsim) started."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != launcher_pid:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                m = re.search(rb"(?:^|\0)OMPI_COMM_WORLD_RANK=(\d+)", f.read())
            if m:
                found[int(m.group(1))] = int(pid)
        except (OSError, IndexError, ValueError):
            continue
    return found


def catches_sigterm(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            caught = re.search(r"^SigCgt:\s*([0-9a-f]+)", f.read(), re.M)
    except OSError:
        return False
    return caught is not None and (int(caught.group(1), 16) >> (signal.SIGTERM - 1)) & 1 == 1


def death(a):
    os.makedirs(a.work, exist_ok=True)
    out = os.path.join(a.work, f"death{a.n}")
    shutil.rmtree(out, ignore_errors=True)
    p = subprocess.Popen(run_args(a, out) + ["--ranks", str(a.n)], env=env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    # Wait (polling, bounded) until every rank runs with its SIGTERM handler installed: the
    # kill then hits a running simulation, never a rank still starting up.
    deadline = time.monotonic() + a.timeout
    pids = {}
    while time.monotonic() < deadline and p.poll() is None:
        pids = rank_pids(p.pid)
        if len(pids) == a.n and all(catches_sigterm(q) for q in pids.values()):
            break
        time.sleep(0.05)
    else:
        os.killpg(p.pid, signal.SIGKILL)
        fail(f"the {a.n} ranks never all ran (found {pids}, run exit {p.poll()})")
    os.kill(pids[a.victim], signal.SIGKILL)
    try:
        _, err = p.communicate(timeout=a.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        fail(f"the run did not end within {a.timeout} s after rank {a.victim} died")
    print(err)
    if p.returncode == 0:
        fail("the run exited 0 although a rank died (did it end before the kill?)")
    for r in range(a.n):
        if r == a.victim:
            continue
        if not re.search(rf"rnicsim: rank {r} of {a.n} \(.*\): .*(stopped because|aborted)", err):
            fail(f"rank {r} (survivor) printed no error line naming itself")
    if os.path.exists(out):
        fail(f"{out} exists: a failed run left outputs")
    stray = [f for f in os.listdir(a.work) if f.startswith(f".death{a.n}.tmp-")]
    if stray:
        fail(f"staging folder(s) left behind: {stray}")
    print(f"rank {a.victim} killed: exit {p.returncode}, every other rank reported, no outputs")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rnicsim", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--timeout", type=float, default=600)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("single")
    s.add_argument("scenario")
    s.add_argument("--set", action="append")
    r = sub.add_parser("ranks")
    r.add_argument("n", type=int)
    r.add_argument("scenario")
    r.add_argument("--set", action="append")
    d = sub.add_parser("death")
    d.add_argument("n", type=int)
    d.add_argument("victim", type=int)
    d.add_argument("scenario")
    d.add_argument("--set", action="append")
    a = ap.parse_args()
    {"single": single, "ranks": ranks, "death": death}[a.cmd](a)


if __name__ == "__main__":
    main()
