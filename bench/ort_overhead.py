"""Times ONNX Runtime (1 thread) on an ONNX file whose inputs are 1-element float tensors; prints
`ort_ns_per_node <optimization> <ns>` lines for rge-runtime's overhead benchmark.

usage: ort_overhead.py MODEL.onnx NODES RUNS
"""
import sys
import time

import numpy as np
import onnxruntime as ort


def bench(path, nodes, runs, level, name):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = level
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feeds = {i.name: np.zeros([d if isinstance(d, int) else 1 for d in i.shape], np.float32)
             for i in s.get_inputs()}
    for _ in range(max(3, runs // 10)):
        s.run(None, feeds)
    best = float("inf")
    for _ in range(2):
        t = time.perf_counter()
        for _ in range(runs):
            s.run(None, feeds)
        best = min(best, (time.perf_counter() - t) / runs)
    print(f"ort_ns_per_node {name} {best * 1e9 / nodes:.1f}", flush=True)


def main():
    path, nodes, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    print(f"ort_version {ort.__version__}", flush=True)
    bench(path, nodes, runs, ort.GraphOptimizationLevel.ORT_ENABLE_ALL, "enable_all")
    bench(path, nodes, runs, ort.GraphOptimizationLevel.ORT_DISABLE_ALL, "disable_all")


if __name__ == "__main__":
    main()
