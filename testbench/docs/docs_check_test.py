#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/docs checks itself on a small fixture (ctest label docs, `docs.checker`).

A stand-in simulator (this file, called as `fake-rnicsim run|sweep ... --out DIR`) writes a
stats.json and a results.csv whose figures come from its --set arguments, so the test knows the
true values without the real simulator. The fixture README has an inline figure, a figure with a
tolerance and a generated table. Asserted:
  - --check passes on the true figures;
  - a figure changed by hand fails --check, naming FILE:LINE, the documented and the measured
    value; a change within the tolerance passes, one outside it fails;
  - a table cell changed by hand fails, naming its line and both values;
  - --update writes the true figures and table back, after which --check passes again;
  - a run that fails makes --check fail naming the command, and --update leaves the file alone;
  - a figure followed by a comma keeps the comma;
  - a README edited while the runs ran is not overwritten by --update, which fails saying so.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts", "docs")

README = """# Fixture

<!-- docs:run one: build/rnicsim run x.json --out {out} --set goodput=91.62 --set timeouts=0 -->
<!-- docs:run sweep: build/rnicsim sweep s.json --out {out} -->
Selective repeat keeps <!--= one.s('/summary/goodput_gbps'):.1f -->91.6 Gb/s with
<!--= one.s('/timeouts'):,d -->0 timeouts; about <!--= one.s('/summary/goodput_gbps') ~5% -->90 Gb/s.

<!-- docs:table
| drop | goodput |
|---|---|
@for d in [0, 0.01]
| {d*100:g} % | {sweep(drop=d).goodput_gbps:.1f} |
-->
| drop | goodput |
|---|---|
| 0 % | 92.3 |
| 1 % | 12.6 |
<!-- docs:end -->
"""


def fake(argv):
    cmd, out = argv[0], argv[argv.index("--out") + 1]
    if "--fail" in argv:
        print("rnicsim: the run failed on purpose", file=sys.stderr)
        return 1
    if "--edit" in argv:  # someone edits the README while the runs run
        path = argv[argv.index("--edit") + 1]
        with open(path, "a") as f:
            f.write("An edit made while the runs ran.\n")
    os.makedirs(out)
    sets = dict(a.split("=", 1) for a in argv if "=" in a)
    if cmd == "run":
        with open(os.path.join(out, "stats.json"), "w") as f:
            json.dump({"summary": {"goodput_gbps": float(sets["goodput"])},
                       "timeouts": int(sets["timeouts"])}, f)
    else:
        with open(os.path.join(out, "results.csv"), "w") as f:
            f.write("point,drop,status,goodput_gbps\n0000,0,ok,92.31\n0001,0.01,ok,12.64\n")
    return 0


def docs(mode, readme, binary):
    return subprocess.run([sys.executable, DOCS, mode, "--rnicsim", binary, readme],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def main():
    failures = []

    def expect(cond, what, r=None):
        if not cond:
            failures.append(what + (f"\n--- stderr:\n{r.stderr}" if r is not None else ""))

    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "fake-rnicsim")
        with open(binary, "w") as f:
            f.write(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {HERE!r})\n"
                    "import docs_check_test\nsys.exit(docs_check_test.fake(sys.argv[1:]))\n")
        os.chmod(binary, 0o755)
        readme = os.path.join(tmp, "README.md")

        def write(text):
            with open(readme, "w") as f:
                f.write(text)

        def read():
            with open(readme) as f:
                return f.read()

        write(README)
        r = docs("--check", readme, binary)
        expect(r.returncode == 0, "--check fails on the true figures", r)

        # A documented figure changed by hand: named with its line and both values.
        write(README.replace("91.6 Gb/s", "91.9 Gb/s"))
        r = docs("--check", readme, binary)
        expect(r.returncode == 1, "--check passes a changed figure", r)
        expect("README.md:5:" in r.stderr and "documented 91.9, measured 91.6" in r.stderr,
               "--check does not name the figure's line and values", r)
        # Within the 5% tolerance passes; outside it fails.
        write(README.replace("-->90 Gb/s", "-->88 Gb/s"))
        r = docs("--check", readme, binary)
        expect(r.returncode == 0, "a figure within its tolerance fails", r)
        write(README.replace("-->90 Gb/s", "-->80 Gb/s"))
        r = docs("--check", readme, binary)
        expect(r.returncode == 1 and "documented 80, measured 91.62 (tolerance 5%)" in r.stderr,
               "a figure outside its tolerance passes", r)

        # A table cell changed by hand.
        write(README.replace("| 1 % | 12.6 |", "| 1 % | 91.6 |"))
        r = docs("--check", readme, binary)
        expect(r.returncode == 1 and "README.md:17:" in r.stderr
               and "documented 91.6, measured 12.6" in r.stderr,
               "--check passes a changed table cell", r)

        # --update writes the true values back (figure and table), and --check then passes.
        write(README.replace("91.6 Gb/s", "10.0 Gb/s").replace("| 0 % | 92.3 |", "| 0 % | 1.0 |")
              .replace("| 1 % | 12.6 |\n", ""))
        r = docs("--update", readme, binary)
        expect(r.returncode == 0, "--update fails", r)
        expect(read() == README.replace("-->90 Gb/s", "-->91.62 Gb/s"),
               "--update does not write the true figures:\n" + read())
        r = docs("--check", readme, binary)
        expect(r.returncode == 0, "--check fails after --update", r)

        # A failing command: --check names it, --update leaves the file as it was.
        broken = README.replace("--set timeouts=0", "--set timeouts=0 --fail").replace("91.6 Gb/s", "1.0 Gb/s")
        write(broken)
        r = docs("--check", readme, binary)
        expect(r.returncode == 1 and "exit 1" in r.stderr and "failed on purpose" in r.stderr,
               "--check does not name a failed command", r)
        r = docs("--update", readme, binary)
        expect(r.returncode == 1 and read() == broken, "--update wrote a file with a failed run", r)

        # A figure followed by a comma: the comma is text, not part of the number.
        comma = README.replace("-->0 timeouts;", "-->7, then timeouts;")
        write(comma)
        r = docs("--update", readme, binary)
        expect(r.returncode == 0 and "-->0, then timeouts;" in read(),
               "--update took the comma after a figure as part of it:\n" + read(), r)

        # A README edited while the runs ran: --update keeps the edit (writes nothing) and fails.
        edited = README.replace("--set timeouts=0", f"--set timeouts=0 --edit {readme}").replace(
            "91.6 Gb/s", "1.0 Gb/s")
        write(edited)
        r = docs("--update", readme, binary)
        expect(r.returncode == 1 and "changed since the check began" in r.stderr
               and read() == edited + "An edit made while the runs ran.\n",
               "--update overwrote an edit made while the runs ran", r)

    for f in failures:
        print("FAILED:", f)
    print(f"docs checker: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
