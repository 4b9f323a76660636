#!/usr/bin/env python3
"""Where a model's time goes in rge beside onnxruntime, node class by node class, in one run.

    build/venv/bin/python bench/node_compare.py MODEL.onnx [--threads N] [--runs N] [--rge BIN]

Runs `rge bench --json` (its profiled runs give each node's milliseconds) and onnxruntime with
profiling on (its `*_kernel_time` events) on the same model, both with random inputs of the
declared shapes (timing only; `bench/compare.sh` checks outputs), and prints:

- each convolution class (input channels and size, output channels, kernel, output size; rge's
  channels-last `[N,H,W,C]` shapes and ORT's `[N,C,H,W]` matched), rge's and ORT's summed
  milliseconds per run, largest excess first;
- each side's total by op type (fused names differ: rge's FusedConvNhwc is ORT's Conv with
  its fused BatchNormalization, Relu and Add).

Both sides' node times are measured inside the run, so a class's excess is that kernel's, not
the executor's. The machine is shared: compare classes with a clear excess, not the last 3%.
Prints figures only; asserts nothing.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile


def rge_nodes(rge, model, threads, runs):
    out = subprocess.run(
        [rge, "bench", model, "--threads", str(threads), "--runs", str(runs),
         "--random-inputs", "--json"],
        check=True, capture_output=True, text=True).stdout
    d = json.loads(out)
    return d["median_ms"], d["profile"]["nodes"]


def ort_nodes(model, threads, runs):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.gettempdir(), "rge_node_compare")
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in s.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        if "int" in i.type:
            feeds[i.name] = rng.integers(0, 100, size=shape).astype(np.int64)
        else:
            feeds[i.name] = rng.random(shape, dtype=np.float32)
    for _ in range(WARMUP + runs):
        s.run(None, feeds)
    path = s.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    times = collections.defaultdict(list)
    info = {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        times[name].append(e["dur"] / 1000.0)
        a = e.get("args", {})
        shapes = lambda k: [list(x.values())[0] for x in a.get(k, [])]
        info.setdefault(name, (a.get("op_name"), shapes("input_type_shape"),
                               shapes("output_type_shape")))
    # The warm-up runs' events are dropped; each node's median of the rest (rge reports its
    # profiled runs after its own warm-up).
    return [(n, *info[n], median(t[WARMUP:] or t)) for n, t in times.items()]


# Runs of onnxruntime before the profiled ones count (as rge bench's default warm-up, and more).
WARMUP = 3


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


CONV = re.compile(r"\[(\d+),(\d+),(\d+),(\d+)\] \[(\d+),(\d+),(\d+),(\d+)\].*-> \[(\d+),(\d+),(\d+),(\d+)\]")


def rge_conv_class(node):
    if not node["op_type"].startswith(("FusedConv", "Conv")):
        return None
    m = CONV.match(node["shapes"])
    if not m:
        return None
    v = list(map(int, m.groups()))
    if node["op_type"] == "FusedConvNhwc":  # [N,H,W,C] in and out
        _, h, w, c, co, _, kh, kw, _, oh, ow, _ = v
    else:  # [N,C,H,W]
        _, c, h, w, co, _, kh, kw, _, _, oh, ow = v
    return (c, h, w, co, kh, kw, oh, ow)


def ort_conv_class(op, ins, outs):
    if op not in ("Conv", "FusedConv") or len(ins) < 2 or len(ins[0]) != 4 or len(ins[1]) != 4:
        return None
    _, c, h, w = ins[0]
    co, _, kh, kw = ins[1]
    # NCHWc blocked outputs keep [N, C, H, W] dims in ORT's profile.
    oh, ow = outs[0][2], outs[0][3]
    return (c, h, w, co, kh, kw, oh, ow)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rge", default="target/release/rge")
    a = ap.parse_args()
    median, rnodes = rge_nodes(a.rge, a.model, a.threads, a.runs)
    onodes = ort_nodes(a.model, a.threads, a.runs)
    r_conv, o_conv = collections.defaultdict(float), collections.defaultdict(float)
    r_n, o_n = collections.Counter(), collections.Counter()
    r_ops, o_ops = collections.defaultdict(float), collections.defaultdict(float)
    for n in rnodes:
        r_ops[n["op_type"]] += n["ms"]
        k = rge_conv_class(n)
        if k:
            r_conv[k] += n["ms"]
            r_n[k] += 1
    for name, op, ins, outs, ms in onodes:
        o_ops[op] += ms
        k = ort_conv_class(op, ins, outs)
        if k:
            o_conv[k] += ms
            o_n[k] += 1
    print(f"{a.model}, {a.threads} thread(s): rge median {median:.3f} ms; summed node times "
          f"rge {sum(r_ops.values()):.3f} ms, onnxruntime {sum(o_ops.values()):.3f} ms")
    if r_conv or o_conv:
        print("\nconvolutions (Cin HxW -> Cout kernel -> OHxOW): rge ms (nodes)  ORT ms (nodes)  excess")
        rows = sorted(set(r_conv) | set(o_conv), key=lambda k: o_conv[k] - r_conv[k])
        for k in rows:
            c, h, w, co, kh, kw, oh, ow = k
            print(f"  {c:5d} {h:3d}x{w:<3d} -> {co:5d} k{kh}x{kw} -> {oh:3d}x{ow:<3d}"
                  f"  {r_conv[k]:7.3f} ({r_n[k]})  {o_conv[k]:7.3f} ({o_n[k]})"
                  f"  {r_conv[k] - o_conv[k]:+7.3f}")
    print("\nby op type: rge | onnxruntime (ms per run)")
    for op, ms in sorted(r_ops.items(), key=lambda x: -x[1]):
        print(f"  rge  {op:24s} {ms:8.3f}")
    for op, ms in sorted(o_ops.items(), key=lambda x: -x[1]):
        print(f"  ORT  {op:24s} {ms:8.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
