#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest Trace.perfetto.*: trace.perfetto-trace read by an independent decoder.

  perfetto_test.py --rnicsim BIN --work DIR [--max-bytes N] SCENARIO [--set P=V]...

Runs SCENARIO twice, with outputs.trace on in the JSON form (trace.json) and in Perfetto's
protobuf form (outputs.trace_format "perfetto": trace.perfetto-trace), decodes the protobuf with
Debian's python3-protobuf and a module that protoc (protobuf-compiler) generates from
perfetto_trace_subset.proto (Perfetto's own schema text for the messages used), and wants what
Perfetto's trace processor needs to import it:
  - no unknown field anywhere: every field written is one of Perfetto's, with its number and
    wire type;
  - every packet on sequence 1, the first clearing the incremental state
    (SEQ_INCREMENTAL_STATE_CLEARED), every packet that uses an interned name marked
    SEQ_NEEDS_INCREMENTAL_STATE and the name interned before it on the sequence;
  - every TrackEvent with a timestamp, on a track a TrackDescriptor declared before it; a
    thread's track under its process's track with the process's pid, and no tid used twice
    (the trace processor keys threads by tid);
  - the slices as the trace processor forms them: the events sorted by timestamp (file order
    for ties), a begin opens a slice on its track, an end closes the innermost open one, and
    every slice ends;
  - the same slices as trace.json: (track name, stage, start ns, end ns) as multisets, the JSON
    times (us with 6 decimals) floored to ns as the protobuf's;
  - the same flows: per WQE flow id the same slices in the same order, and as many flow links
    (consecutive slices of one WQE) as trace.json's "s"/"f" arrow pairs;
  - a file a fraction of trace.json's size, and under --max-bytes when given.
Exit 0 when the test holds, 1 with the reason otherwise.
"""
import argparse
import collections
import decimal
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def run(a, out, extra):
    shutil.rmtree(out, ignore_errors=True)
    args = [a.rnicsim, "run", a.scenario, "--out", out, "--set", "outputs.trace=true",
            "--set", "outputs.report=false"] + extra
    for s in a.set:
        args += ["--set", s]
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1", CI="true")
    p = subprocess.run(args, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"{' '.join(args)} exited {p.returncode}:\n{p.stderr[-3000:]}")


def load_module(tmp):
    proto = os.path.join(HERE, "perfetto_trace_subset.proto")
    p = subprocess.run(["protoc", f"--proto_path={HERE}", f"--python_out={tmp}", proto],
                       capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"protoc failed (protobuf-compiler installed? scripts/setup):\n{p.stderr}")
    sys.path.insert(0, tmp)
    return importlib.import_module("perfetto_trace_subset_pb2")


def json_slices(path):
    with open(path) as f:
        doc = json.load(f, parse_float=decimal.Decimal)
    names = {}
    for e in doc["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    slices, arrows = [], 0
    for e in doc["traceEvents"]:
        if e.get("ph") == "X":
            start = int(decimal.Decimal(e["ts"]) * 1000000)
            end = start + int(decimal.Decimal(e["dur"]) * 1000000)
            flow = int(e["args"]["flow"], 16)
            slices.append((names[(e["pid"], e["tid"])], e["name"], start // 1000, end // 1000, flow))
        elif e.get("ph") == "s":
            arrows += 1
    return slices, arrows


def unknown_fields(msg, path, out):
    """Appends (path, field number) of every field the schema does not know, recursively."""
    for f in msg.UnknownFields():
        out.append((path, f.field_number))
    for fd, v in msg.ListFields():
        if fd.message_type is None:
            continue
        for sub in (v if fd.label == fd.LABEL_REPEATED else [v]):
            unknown_fields(sub, f"{path}.{fd.name}", out)


def proto_slices(pb, path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    if not trace.packet:
        fail("no packet in the protobuf trace")
    unknown = []
    unknown_fields(trace, "Trace", unknown)
    if unknown:
        fail(f"{len(unknown)} fields Perfetto's schema does not know, e.g. {unknown[:5]}")
    cleared = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    needs = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
    if not trace.packet[0].sequence_flags & cleared:
        fail("the first packet does not clear the incremental state")
    # File order: descriptors and interned names are sequence state, taken as they come.
    tracks, pids, tids, interned, events = {}, {}, set(), {}, []
    for i, p in enumerate(trace.packet):
        if p.trusted_packet_sequence_id != 1:
            fail(f"packet {i} is on sequence {p.trusted_packet_sequence_id}, not 1")
        for n in p.interned_data.event_names:
            interned[n.iid] = n.name
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            if d.uuid in tracks:
                fail(f"packet {i}: track uuid {d.uuid} declared twice")
            if d.HasField("thread"):
                if d.parent_uuid not in tracks or tracks[d.parent_uuid][0] != "process":
                    fail(f"thread track {d.thread.thread_name} has no process track before it")
                if d.thread.pid != pids[d.parent_uuid]:
                    fail(f"thread track {d.thread.thread_name}: pid {d.thread.pid}, its "
                         f"process's {pids[d.parent_uuid]}")
                if d.thread.tid in tids:
                    fail(f"thread track {d.thread.thread_name}: tid {d.thread.tid} used twice")
                tids.add(d.thread.tid)
                tracks[d.uuid] = ("thread", d.thread.thread_name)
            elif d.HasField("process"):
                tracks[d.uuid] = ("process", d.process.process_name)
                pids[d.uuid] = d.process.pid
            else:
                fail(f"packet {i}: a track descriptor without a process or a thread")
        if p.HasField("track_event"):
            e = p.track_event
            if e.track_uuid not in tracks or tracks[e.track_uuid][0] != "thread":
                fail(f"packet {i}: an event on undeclared track {e.track_uuid}")
            if not p.HasField("timestamp"):
                fail(f"packet {i}: an event without a timestamp")
            if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
                if e.name_iid not in interned:
                    fail(f"packet {i}: name iid {e.name_iid} used before it was interned")
                if not p.sequence_flags & needs:
                    fail(f"packet {i}: uses interned data without SEQ_NEEDS_INCREMENTAL_STATE")
                events.append((p.timestamp, i, e.track_uuid, interned[e.name_iid],
                               list(e.flow_ids)))
            elif e.type == pb.TrackEvent.TYPE_SLICE_END:
                events.append((p.timestamp, i, e.track_uuid, None, None))
            else:
                fail(f"packet {i}: event type {e.type}")
    # Timestamp order (the trace processor sorts the events of a file; ties keep file order).
    events.sort(key=lambda x: (x[0], x[1]))
    open_slices, slices = collections.defaultdict(list), []
    for ts, i, track, name, flows in events:
        if name is not None:
            open_slices[track].append((name, ts, flows))
            continue
        if not open_slices[track]:
            fail(f"packet {i}: a slice end on a track with no open slice")
        name, start, flows = open_slices[track].pop()
        slices.append((tracks[track][1], name, start, ts, flows[0] if flows else 0))
    left = sum(len(v) for v in open_slices.values())
    if left:
        fail(f"{left} slices never end")
    return slices


def by_flow(slices):
    flows = collections.defaultdict(list)
    for s in slices:
        if s[4] != 0:
            flows[s[4]].append(s[:4])
    return {k: sorted(v, key=lambda x: (x[2], x[3], x[0], x[1])) for k, v in flows.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rnicsim", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--max-bytes", type=int, default=0)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("scenario")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    jdir, pdir = os.path.join(a.work, "json"), os.path.join(a.work, "perfetto")
    run(a, jdir, [])
    run(a, pdir, ["--set", "outputs.trace_format=perfetto"])
    jpath, ppath = os.path.join(jdir, "trace.json"), os.path.join(pdir, "trace.perfetto-trace")
    if os.path.exists(os.path.join(pdir, "trace.json")):
        fail("the perfetto form also wrote trace.json")
    tmp = tempfile.mkdtemp(prefix="rnicsim-pb-")
    try:
        pb = load_module(tmp)
        ps = proto_slices(pb, ppath)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    js, arrows = json_slices(jpath)
    if not js:
        fail("trace.json holds no slice")
    jc = collections.Counter(s[:4] for s in js)
    pc = collections.Counter(s[:4] for s in ps)
    if jc != pc:
        only_j = list((jc - pc).items())[:5]
        only_p = list((pc - jc).items())[:5]
        fail(f"slices differ: {len(js)} in JSON, {len(ps)} in protobuf; only in JSON {only_j}, "
             f"only in protobuf {only_p}")
    jf, pf = by_flow(js), by_flow(ps)
    if jf != pf:
        diff = [k for k in set(jf) | set(pf) if jf.get(k) != pf.get(k)][:3]
        fail(f"flows differ for {len(diff)}+ WQEs, e.g. {[hex(k) for k in diff]}")
    links = sum(len(v) - 1 for v in pf.values())
    if links != arrows:
        fail(f"{links} flow links in the protobuf, {arrows} arrows in trace.json")
    jsize, psize = os.path.getsize(jpath), os.path.getsize(ppath)
    if psize * 3 > jsize:
        fail(f"trace.perfetto-trace ({psize} B) is not a fraction of trace.json ({jsize} B)")
    if a.max_bytes and psize > a.max_bytes:
        fail(f"trace.perfetto-trace is {psize} B, over {a.max_bytes}")
    print(f"ok: {len(ps)} slices, {len(pf)} WQE flows, {links} links; trace.json {jsize} B, "
          f"trace.perfetto-trace {psize} B ({psize / jsize:.1%})")


if __name__ == "__main__":
    main()
