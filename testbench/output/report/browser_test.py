#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest Report.browser.*: report.html opened in headless Chromium (Debian's `chromium`).

  browser_test.py --rnicsim BIN --work DIR [--expect ID[,ID]...]... [--set P=V]...
                  [--readme-png PNG] (run | sweep) SCENARIO

Runs the scenario (or a sweep of it: 3 message sizes x WRITE/READ) into DIR/out, opens DIR/out/report.html in a fresh headless
Chromium driven over the DevTools protocol (--remote-debugging-pipe: NUL-separated JSON on file
descriptors 3 and 4, no network, no websocket), and wants: no console error and no uncaught
exception; the page's script finished (body data-ready="1"); every chart box has
data-rendered > 0 (it drew points); each --expect ID is among the charts; the page loaded
nothing from the network. Keeps DIR/report.png, a screenshot of the whole page; --readme-png
also writes the README's picture from it (the top of the page at half size, 64 colours).

Exit 0 when the test holds, 1 with the reason otherwise.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

BROWSER_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--disable-default-apps", "--hide-scrollbars", "--remote-debugging-pipe",
]


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


class devtools:
    """The DevTools protocol over --remote-debugging-pipe (Chromium reads fd 3, writes fd 4)."""

    def __init__(self, browser, profile):
        to_browser_r, self.to_browser = os.pipe()
        self.from_browser, from_browser_w = os.pipe()

        def fds():  # in the child: the pipe ends on 3 and 4 (by way of free numbers)
            r, w = os.dup(to_browser_r), os.dup(from_browser_w)
            r, w = os.dup2(r, 100), os.dup2(w, 101)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [browser, *BROWSER_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            pass_fds=(3, 4), preexec_fn=fds,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.buf = b""
        self.next_id = 1
        self.events = []

    def read(self, deadline):
        while b"\0" not in self.buf:
            if time.monotonic() > deadline:
                fail("Chromium did not answer within the time limit")
            chunk = os.read(self.from_browser, 1 << 20)
            if not chunk:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:]
                fail(f"Chromium closed the DevTools pipe:\n{err}")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None, timeout=60):
        mid = self.next_id
        self.next_id += 1
        m = {"id": mid, "method": method, "params": params or {}}
        if session:
            m["sessionId"] = session
        os.write(self.to_browser, json.dumps(m).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            r = self.read(deadline)
            if r.get("id") == mid:
                if "error" in r:
                    fail(f"{method}: {r['error']}")
                return r.get("result", {})
            self.events.append(r)

    def wait_event(self, method, timeout=60):
        deadline = time.monotonic() + timeout
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            e = self.read(deadline)
            if e.get("method") == method:
                return e
            self.events.append(e)

    def close(self):
        try:
            self.call("Browser.close", timeout=10)
        except (SystemExit, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def problems(events):
    """Console errors, uncaught exceptions and network requests among the events."""
    out = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("uncaught: " + d.get("exception", {}).get("description", d.get("text", "")))
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append("console.error: " + " ".join(str(a.get("value", a.get("description", "")))
                                                    for a in p.get("args", [])))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append("log: " + p["entry"].get("text", ""))
        elif m == "Network.requestWillBeSent":
            url = p.get("request", {}).get("url", "")
            if not url.startswith(("file:", "data:", "about:")):
                out.append("network request: " + url)
    return out


CHECK = """(() => {
  const boxes = [...document.querySelectorAll('[data-chart]')];
  return {
    ready: document.body.getAttribute('data-ready'),
    charts: boxes.map(b => [b.getAttribute('data-chart'), Number(b.getAttribute('data-rendered') || 0),
                            b.querySelector('canvas') ? b.querySelector('canvas').width : 0]),
    height: Math.ceil(document.documentElement.scrollHeight),
    tables: document.querySelectorAll('#tables section').length
  };
})()"""


def open_report(html, png):
    browser = shutil.which("chromium") or fail("chromium not found (scripts/setup installs it)")
    profile = tempfile.mkdtemp(prefix="rnicsim-chromium-")
    dt = devtools(browser, profile)
    try:
        targets = dt.call("Target.getTargets")["targetInfos"]
        page = next((t for t in targets if t["type"] == "page"), None)
        tid = page["targetId"] if page else dt.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = dt.call("Target.attachToTarget", {"targetId": tid, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            dt.call(domain + ".enable", session=sid)
        dt.call("Emulation.setDeviceMetricsOverride",
                {"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=sid)
        dt.call("Page.navigate", {"url": "file://" + os.path.abspath(html)}, session=sid)
        dt.wait_event("Page.loadEventFired")
        r = dt.call("Runtime.evaluate", {"expression": CHECK, "returnByValue": True}, session=sid)
        state = r["result"]["value"]
        dt.call("Emulation.setDeviceMetricsOverride",
                {"width": 1400, "height": min(state["height"], 12000), "deviceScaleFactor": 1,
                 "mobile": False}, session=sid)
        shot = dt.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True},
                       session=sid)
        with open(png, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        # Events that arrived with the last answers.
        dt.call("Runtime.evaluate", {"expression": "1"}, session=sid)
        return state, problems(dt.events)
    finally:
        dt.close()
        shutil.rmtree(profile, ignore_errors=True)


def readme_png(png, dest):
    """The README's picture: the page's top 2,400 px at half size, in a 64-colour palette."""
    from PIL import Image  # python3-pil (python3-matplotlib depends on it)
    with Image.open(png) as im:
        top = im.convert("RGB").crop((0, 0, im.width, min(im.height, 2400)))
        small = top.resize((top.width // 2, top.height // 2), Image.LANCZOS)
        small.quantize(colors=64, method=Image.FASTOCTREE).save(dest, optimize=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rnicsim", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--readme-png")
    ap.add_argument("what", choices=["run", "sweep"])
    ap.add_argument("scenario")
    a = ap.parse_args()
    out = os.path.join(a.work, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(a.work, exist_ok=True)
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1", CI="true")
    if a.what == "run":
        args = [a.rnicsim, "run", a.scenario, "--out", out]
        for s in a.set:
            args += ["--set", s]
    else:  # a small sweep over SCENARIO: 3 sizes x 2 operations, few messages
        sweep = os.path.join(a.work, "sweep.json")
        with open(sweep, "w") as f:
            json.dump({"base": os.path.abspath(a.scenario), "set": {"workload.messages": 40},
                       "parameters": [
                           {"path": "workload.message_bytes", "values": [1024, 4096, 16384]},
                           {"path": "workload.operation", "values": ["write", "read"]}]}, f)
        args = [a.rnicsim, "sweep", sweep, "--out", out, "--jobs", "2"]
    p = subprocess.run(args, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"{' '.join(args)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    html = os.path.join(out, "report.html")
    if not os.path.isfile(html):
        fail(f"{html} was not written")
    png = os.path.join(a.work, "report.png")
    state, errs = open_report(html, png)
    if errs:
        fail("the page reported problems:\n  " + "\n  ".join(errs))
    if state["ready"] != "1":
        fail("the page's script did not finish (body data-ready is not 1)")
    if not state["charts"]:
        fail("no chart on the page")
    empty = [c[0] for c in state["charts"] if c[1] <= 0 or c[2] <= 0]
    if empty:
        fail(f"charts drawn without data: {empty}")
    ids = [c[0] for c in state["charts"]]
    expected = [e for x in a.expect for e in x.split(",") if e]
    missing = [e for e in expected if e not in ids]
    if missing:
        fail(f"charts missing: {missing} (the page has {ids})")
    if os.path.getsize(png) < 10000:
        fail(f"{png} is {os.path.getsize(png)} bytes: a blank page?")
    if a.readme_png:
        readme_png(png, a.readme_png)
    print(f"ok: {len(ids)} charts with data ({', '.join(f'{c[0]}={c[1]}' for c in state['charts'])}), "
          f"{state['tables']} tables; screenshot {png}")


if __name__ == "__main__":
    main()
