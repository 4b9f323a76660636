"""Writes the ai.onnx.ml and com.microsoft test suites in the ONNX backend layout.

Each test is `<out>/<suite>/<name>/model.onnx` + `test_data_set_0/{input,output}_N.pb`, with the
expected outputs computed by onnxruntime itself:

- `ml`: models that skl2onnx exports from fitted scikit-learn models (tree ensembles, linear and
  SVM models, scalers, encoders, imputers …), and hand-built graphs for the ai.onnx.ml ops that
  skl2onnx does not emit.
- `ms`: single-op graphs of the com.microsoft ops that onnxruntime's quantization and
  transformer tools emit, whole small BERT-like, GPT-2-like and CNN graphs after onnxruntime's
  own graph optimizations (`optimized_model_filepath`) and after its transformer optimizer, and
  real OCR models from a PyPI wheel.

usage: python gen_ml_ms_tests.py OUT_DIR
"""

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

from gen_ml_tests import ml_tests
from gen_ms_tests import ms_tests, optimized_tests, transformer_optimizer_tests, wheel_model_tests

RNG = np.random.default_rng(20)


def run_ort(model: onnx.ModelProto, feeds: dict) -> list:
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(
        model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )
    return sess.run(None, feeds)


def _map_type(tp: onnx.TypeProto) -> onnx.TypeProto.Map:
    """The map type of a map type, or of the maps of a sequence type."""
    if tp.HasField("sequence_type"):
        tp = tp.sequence_type.elem_type
    return tp.map_type


def _map_proto(d: dict, mt: onnx.TypeProto.Map) -> onnx.MapProto:
    """A MapProto of the declared key and value types (numpy_helper.from_dict cannot take
    string keys and makes float64 of Python floats)."""
    m = onnx.MapProto(key_type=mt.key_type)
    if mt.key_type == onnx.TensorProto.STRING:
        m.string_keys.extend(str(k).encode() for k in d)
    else:
        m.keys.extend(int(k) for k in d)
    vt = mt.value_type.tensor_type.elem_type
    dtype = onnx.helper.tensor_dtype_to_np_dtype(vt)
    m.values.elem_type = onnx.SequenceProto.TENSOR
    for v in d.values():
        a = np.array(str(v) if vt == onnx.TensorProto.STRING else v, dtype=dtype)
        m.values.tensor_values.append(numpy_helper.from_array(a))
    return m


def _value_proto(v, tp: onnx.TypeProto, name: str):
    """The value file of `v` of declared type `tp`: a TensorProto, a MapProto (a dict) or a
    SequenceProto of maps (a list of dicts, as ZipMap gives)."""
    if isinstance(v, dict):
        m = _map_proto(v, _map_type(tp))
        m.name = name
        return m
    if isinstance(v, list) and v and isinstance(v[0], dict):
        seq = onnx.SequenceProto(name=name, elem_type=onnx.SequenceProto.MAP)
        seq.map_values.extend(_map_proto(d, _map_type(tp)) for d in v)
        return seq
    return numpy_helper.from_array(np.asarray(v), name)


def write_test(out: str, name: str, model: onnx.ModelProto, feeds: dict, outputs=None) -> None:
    """Writes one test folder; the expected outputs are onnxruntime's unless given."""
    if outputs is None:
        outputs = run_ort(model, feeds)
    folder = os.path.join(out, name)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    for k, i in enumerate(inputs):
        t = _value_proto(feeds[i.name], i.type, i.name)
        with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
            f.write(t.SerializeToString())
    for k, (o, v) in enumerate(zip(model.graph.output, outputs)):
        t = _value_proto(v, o.type, o.name)
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
    for tests in (optimized_tests, transformer_optimizer_tests, wheel_model_tests):
        for name, model, feeds, outputs in tests(RNG, out):
            write_test(os.path.join(out, "ms"), name, model, feeds, outputs)
            made += 1
    counts["ms"] += made
    print(" ".join(f"{k}: {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
