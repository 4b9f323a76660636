"""rge.InferenceSession against onnxruntime: the bundled example, metadata, compiled models,
explain, profiling, threads, and bad input (TypeError/ValueError naming the input)."""

import json
import threading

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import rge


def ort_run(path, feed):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, feed)


def test_tiny_cnn_matches_onnxruntime(tiny_cnn, tiny_cnn_image):
    sess = rge.InferenceSession(tiny_cnn)
    name = sess.get_inputs()[0].name
    got = sess.run(None, {name: tiny_cnn_image})
    want = ort_run(tiny_cnn, {name: tiny_cnn_image})
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert isinstance(g, np.ndarray)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


def test_inputs_and_outputs_describe_the_model(tiny_cnn):
    sess = rge.InferenceSession(tiny_cnn)
    ref = ort.InferenceSession(tiny_cnn, providers=["CPUExecutionProvider"])
    for mine, theirs in [(sess.get_inputs(), ref.get_inputs()), (sess.get_outputs(), ref.get_outputs())]:
        assert [a.name for a in mine] == [b.name for b in theirs]
        assert [a.type for a in mine] == [b.type for b in theirs]
        assert [a.shape for a in mine] == [b.shape for b in theirs]
    assert "NodeArg(name=" in repr(sess.get_inputs()[0])


def dynamic_model(tmp_path):
    """x: float[batch, 3] → Relu → y, with a named dim."""
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph(
        [node],
        "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "dyn.onnx"
    onnx.save(model, path)
    return str(path)


def test_dim_names_are_kept_and_each_shape_runs(tmp_path):
    path = dynamic_model(tmp_path)
    sess = rge.InferenceSession(path)
    assert sess.get_inputs()[0].shape == ["batch", 3]
    assert sess.get_outputs()[0].shape == ["batch", 3]
    for n in (1, 4):
        x = np.linspace(-1, 1, n * 3, dtype=np.float32).reshape(n, 3)
        (y,) = sess.run(["y"], {"x": x})
        np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_output_memory_is_shared_not_copied(tiny_cnn, tiny_cnn_image):
    sess = rge.InferenceSession(tiny_cnn)
    (y,) = sess.run(None, {sess.get_inputs()[0].name: tiny_cnn_image})
    # The array views the runtime's buffer, kept alive by its base object.
    assert y.base is not None and type(y.base).__name__ == "OutputBuffer"
    assert y.flags["C_CONTIGUOUS"] and y.flags["WRITEABLE"]


def test_non_contiguous_input_is_copied_and_still_right(tmp_path):
    path = dynamic_model(tmp_path)
    sess = rge.InferenceSession(path)
    x = np.arange(-6, 6, dtype=np.float32).reshape(3, 4)[:, :3]  # not C-contiguous
    assert not x.flags["C_CONTIGUOUS"]
    (y,) = sess.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.maximum(x, 0))
    # A list is accepted as numpy.asarray takes it.
    (y,) = sess.run(None, {"x": [[-1.0, 2.0, -3.0]]})
    assert y.dtype == np.float32


def test_bad_input_raises_typed_errors_naming_the_input(tmp_path):
    sess = rge.InferenceSession(dynamic_model(tmp_path))
    with pytest.raises(TypeError, match="input `x`.*float"):
        sess.run(None, {"x": np.zeros((1, 3), dtype=np.float64)})
    with pytest.raises(TypeError, match="input `x`.*expected a numpy array"):
        sess.run(None, {"x": object()})
    with pytest.raises(TypeError, match="input `x`"):
        sess.run(None, {"x": {"a": 1}})
    with pytest.raises(ValueError, match="missing input `x`"):
        sess.run(None, {})
    with pytest.raises(ValueError, match="input `nope`.*no such input"):
        sess.run(None, {"x": np.zeros((1, 3), np.float32), "nope": np.zeros(1)})
    with pytest.raises(ValueError, match="input `x`"):
        sess.run(None, {"x": np.zeros((1, 5), np.float32)})
    with pytest.raises(ValueError, match="output `z`"):
        sess.run(["z"], {"x": np.zeros((1, 3), np.float32)})
    with pytest.raises(TypeError, match="input_feed"):
        sess.run(None, [np.zeros((1, 3), np.float32)])


def test_bad_files_and_options_raise_with_the_command_lines_message(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(rge.RgeError, match="bad.onnx"):
        rge.InferenceSession(str(bad))
    assert issubclass(rge.RgeError, RuntimeError)
    path = dynamic_model(tmp_path)
    with pytest.raises(ValueError, match="option `threads`"):
        rge.InferenceSession(path, threads=0)
    with pytest.raises(ValueError, match="option `pin_threads`: `always` is not one of"):
        rge.InferenceSession(path, pin_threads="always")
    with pytest.raises(ValueError, match="option `engines`.*nosuch"):
        rge.InferenceSession(path, engines=["nosuch"])
    with pytest.raises(ValueError, match="executor"):
        rge.InferenceSession(path, executor="fastest")
    with pytest.raises(TypeError, match="path"):
        rge.InferenceSession(42)


def test_engines_and_exclusions_change_the_placement(tiny_cnn):
    engines = rge.get_available_engines()
    assert "cpu" in engines and "dense" in engines
    only_cpu = rge.InferenceSession(tiny_cnn, engines=["cpu", "host"]).explain()
    used = {n["engine"] for n in only_cpu["nodes"]}
    assert "dense" not in used, used
    no_dense = rge.InferenceSession(tiny_cnn, exclude_engines="dense").explain()
    assert "dense" not in {n["engine"] for n in no_dense["nodes"]}


def test_explain_is_a_dict_like_the_command_line_json(tiny_cnn):
    report = rge.InferenceSession(tiny_cnn).explain()
    assert isinstance(report, dict)
    assert report["nodes"] and "engine" in report["nodes"][0]


def test_compile_save_and_load(tmp_path, tiny_cnn, tiny_cnn_image):
    om = tmp_path / "tiny.om"
    rge.compile(tiny_cnn, str(om))
    sess = rge.InferenceSession(str(om))
    name = sess.get_inputs()[0].name
    (got,) = sess.run(None, {name: tiny_cnn_image})
    (want,) = ort_run(tiny_cnn, {name: tiny_cnn_image})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    om2 = tmp_path / "again.om"
    rge.InferenceSession(tiny_cnn).save(om2)
    (again,) = rge.InferenceSession(str(om2)).run(None, {name: tiny_cnn_image})
    np.testing.assert_array_equal(again, got)


def test_profiling_writes_a_trace_with_shapes(tmp_path, tiny_cnn, tiny_cnn_image):
    prefix = str(tmp_path / "prof")
    sess = rge.InferenceSession(tiny_cnn, enable_profiling=True, profile_file_prefix=prefix)
    sess.run(None, {sess.get_inputs()[0].name: tiny_cnn_image})
    path = sess.end_profiling()
    assert path.startswith(prefix)
    trace = json.load(open(path))
    boxes = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert boxes and all("->" in e["args"]["shapes"] for e in boxes)
    assert sess.end_profiling() == ""


def test_threads_run_one_session_at_once(tiny_cnn, tiny_cnn_image):
    sess = rge.InferenceSession(tiny_cnn, threads=2)
    name = sess.get_inputs()[0].name
    (want,) = sess.run(None, {name: tiny_cnn_image})
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(sess.run(None, {name: tiny_cnn_image})[0])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 20
    for r in results:
        np.testing.assert_array_equal(r, want)


def test_zipmap_outputs_are_lists_of_dicts_like_onnxruntime(tmp_path):
    """ZipMap's sequence of maps comes back as onnxruntime gives it: a list of dicts."""
    node = helper.make_node("ZipMap", ["x"], ["z"], domain="ai.onnx.ml", classlabels_strings=["no", "yes"])
    seq_map = helper.make_sequence_type_proto(
        helper.make_map_type_proto(TensorProto.STRING, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    )
    graph = helper.make_graph(
        [node], "zm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])], [helper.make_value_info("z", seq_map)]
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)], ir_version=9
    )
    path = str(tmp_path / "zipmap.onnx")
    onnx.save(model, path)
    x = np.array([[0.25, 0.75], [0.5, 0.5]], np.float32)
    got = rge.InferenceSession(path).run(None, {"x": x})[0]
    want = ort_run(path, {"x": x})[0]
    assert got == want


def test_dict_inputs_are_maps_like_onnxruntime(tmp_path):
    """A dict feeds a map input (DictVectorizer's), as onnxruntime takes it."""
    node = helper.make_node("DictVectorizer", ["x"], ["y"], domain="ai.onnx.ml", string_vocabulary=["c", "b", "a"])
    map_t = helper.make_map_type_proto(TensorProto.STRING, helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    graph = helper.make_graph(
        [node], "dv", [helper.make_value_info("x", map_t)], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])]
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)], ir_version=9
    )
    path = str(tmp_path / "dv.onnx")
    onnx.save(model, path)
    feed = {"x": {"a": 1.5, "c": -2.0, "zz": 9.0}}
    got = rge.InferenceSession(path).run(None, feed)[0]
    np.testing.assert_array_equal(got, ort_run(path, feed)[0])
    with pytest.raises(TypeError, match="input `x`: map keys"):
        rge.InferenceSession(path).run(None, {"x": {1.5: 2.0}})
