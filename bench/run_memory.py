"""Peak memory of running a model: `rge run` beside onnxruntime (session creation and one run,
same inputs), each in its own process, as max RSS. Prints per model the weight bytes (the ONNX
initializers and Constant values), rge's planned activation arena, rge's peak, the issue's bar
(weights + arena + 64 MiB) and onnxruntime's peak.

usage: run_memory.py --rge BIN MODEL_DIR...   (each MODEL_DIR holds model.onnx)
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

MIB = 1 << 20

ORT = r"""
import sys
import numpy as np
import onnxruntime as ort
so = ort.SessionOptions()
so.intra_op_num_threads = 1
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
rng = np.random.default_rng(1)
feeds = {}
for i in s.get_inputs():
    dims = [d if isinstance(d, int) else 1 for d in i.shape]
    if "int64" in i.type:
        feeds[i.name] = rng.integers(0, 100, dims).astype(np.int64)
    elif "int32" in i.type:
        feeds[i.name] = rng.integers(0, 100, dims).astype(np.int32)
    else:
        feeds[i.name] = rng.standard_normal(dims).astype(np.float32)
s.run(None, feeds)
"""


def max_rss_mib(cmd):
    """Max RSS of `cmd` in MiB; exits with its stderr when it fails."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        out = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tf.name] + cmd,
                             capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr[-2000:]}")
        return int(tf.read().split()[-1]) / 1024, out.stdout


def weight_bytes(path):
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    total = sum(numpy_helper.to_array(t).nbytes for t in m.graph.initializer)
    for n in m.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    total += numpy_helper.to_array(a.t).nbytes
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rge", required=True)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    print(f"{'model':<14} {'weights':>9} {'arena':>8} {'rge peak':>9} {'bar':>8} "
          f"{'rge ÷ bar':>10} {'ORT peak':>9} {'rge ÷ ORT':>10}   (MiB)")
    for d in a.models:
        path = os.path.join(d, "model.onnx")
        name = os.path.basename(os.path.normpath(d))
        w = weight_bytes(path) / MIB
        with tempfile.TemporaryDirectory() as tmp:
            out = subprocess.run([a.rge, "compile", path, "-o", os.path.join(tmp, "m.om")],
                                 capture_output=True, text=True, check=True).stdout
        arena = int(re.search(r"arena (\d+) bytes", out).group(1)) / MIB
        rge, _ = max_rss_mib([a.rge, "run", path])
        ort, _ = max_rss_mib([sys.executable, "-c", ORT, path])
        bar = w + arena + 64
        print(f"{name:<14} {w:>9.1f} {arena:>8.1f} {rge:>9.1f} {bar:>8.1f} {rge / bar:>10.2f} "
              f"{ort:>9.1f} {rge / ort:>10.2f}")


if __name__ == "__main__":
    main()
