"""Writes the ai.onnx.ml and com.microsoft test suites in the ONNX backend layout.

Each test is `<out>/<suite>/<name>/model.onnx` + `test_data_set_0/{input,output}_N.pb`, with the
expected outputs computed by onnxruntime itself:

- `ml`: models that skl2onnx exports from fitted scikit-learn models (tree ensembles, linear and
  SVM models, scalers, encoders, imputers …), and hand-built graphs for the ai.onnx.ml ops that
  skl2onnx does not emit.
- `ms`: single-op graphs of the com.microsoft ops that onnxruntime's quantization and
  transformer tools emit, and whole small BERT-like and GPT-2-like graphs after onnxruntime's
  own graph optimizations (`optimized_model_filepath`).

usage: python gen_ml_ms_tests.py OUT_DIR
"""

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from gen_ml_tests import ml_tests
from gen_ms_tests import ms_tests, optimized_tests

RNG = np.random.default_rng(20)


def run_ort(model: onnx.ModelProto, feeds: dict) -> list:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(
        model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )
    return sess.run(None, feeds)


def write_test(out: str, name: str, model: onnx.ModelProto, feeds: dict, outputs=None) -> None:
    """Writes one test folder; the expected outputs are onnxruntime's unless given."""
    if outputs is None:
        outputs = run_ort(model, feeds)
    folder = os.path.join(out, name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    names = [i.name for i in model.graph.input]
    inits = {i.name for i in model.graph.initializer}
    names = [n for n in names if n not in inits]
    for k, n in enumerate(names):
        t = numpy_helper.from_array(np.asarray(feeds[n]), n)
        with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
            f.write(t.SerializeToString())
    for k, (o, v) in enumerate(zip(model.graph.output, outputs)):
        t = numpy_helper.from_array(np.asarray(v), o.name)
        with open(os.path.join(data, f"output_{k}.pb"), "wb") as f:
            f.write(t.SerializeToString())


def main() -> None:
    out = sys.argv[1]
    counts = {}
    for suite, tests in (("ml", ml_tests), ("ms", ms_tests)):
        made = 0
        for name, model, feeds in tests(RNG):
            outputs = None
            if isinstance(feeds, tuple):  # (feeds, expected outputs from a reference graph)
                feeds, outputs = feeds
            try:
                write_test(os.path.join(out, suite), name, model, feeds, outputs)
                made += 1
            except Exception as e:  # an op this onnxruntime lacks: reported, not fatal
                print(f"skipped {suite}/{name}: {str(e).splitlines()[0][:200]}", file=sys.stderr)
        counts[suite] = made
    made = 0
    for name, model, feeds, outputs in optimized_tests(RNG, out):
        write_test(os.path.join(out, "ms"), name, model, feeds, outputs)
        made += 1
    counts["ms"] += made
    print(" ".join(f"{k}: {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
