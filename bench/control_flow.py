"""--control-flow nested against rts (and onnxruntime beside them) on control-flow models: the
VAD-like model of crates/rge/tests/data/rts and the static control-flow node tests. Runs each
rge mode through `rge bench --json` and onnxruntime in this process on the same inputs,
interleaved, best median of `--rounds`; prints medians (ms) and the ratios rts/nested and
rts/onnxruntime.

  python bench/control_flow.py RGE_BIN [--runs N] [--rounds N]
"""

import argparse
import glob
import json
import os
import subprocess
import time

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.join(os.path.dirname(__file__), "..")
MODELS = [
    os.path.join(ROOT, "crates/rge/tests/data/rts/vad_like"),
    os.path.join(ROOT, "build/onnx-node-tests/node/test_if"),
    os.path.join(ROOT, "build/onnx-node-tests/node/test_loop11"),
]


def rge_median(rge, model, inputs, mode, runs):
    cmd = [rge, "bench", os.path.join(model, "model.onnx"), "--json", "--runs", str(runs),
           "--warmup", "20", "--control-flow", mode]
    for name, path in inputs:
        cmd += ["--input", f"{name}={path}"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"]


def ort_median(model, feeds, runs):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    s = ort.InferenceSession(os.path.join(model, "model.onnx"), opts, providers=["CPUExecutionProvider"])
    for _ in range(20):
        s.run(None, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rge")
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    print(f"{'model':<14} {'nested ms':>10} {'rts ms':>10} {'ort ms':>10} {'rts/nested':>11} {'rts/ort':>8}")
    for model in MODELS:
        if not os.path.isdir(model):
            print(f"{os.path.basename(model):<14} missing")
            continue
        m = onnx.load(os.path.join(model, "model.onnx"))
        names = [i.name for i in m.graph.input]
        files = sorted(glob.glob(os.path.join(model, "test_data_set_0", "input_*.pb")))
        inputs = list(zip(names, files))
        feeds = {}
        for n, f in inputs:
            t = onnx.TensorProto()
            t.ParseFromString(open(f, "rb").read())
            feeds[n] = numpy_helper.to_array(t)
        best = {"nested": 1e9, "rts": 1e9, "ort": 1e9}
        for _ in range(a.rounds):
            for mode in ("nested", "rts"):
                best[mode] = min(best[mode], rge_median(a.rge, model, inputs, mode, a.runs))
            best["ort"] = min(best["ort"], ort_median(model, feeds, a.runs))
        print(f"{os.path.basename(model):<14} {best['nested']:>10.4f} {best['rts']:>10.4f} {best['ort']:>10.4f} "
              f"{best['rts'] / best['nested']:>11.3f} {best['rts'] / best['ort']:>8.3f}")


if __name__ == "__main__":
    main()
