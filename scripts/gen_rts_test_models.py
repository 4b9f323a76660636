"""Test data of the rts engine (crates/rge/tests/rts_engine.rs), written with the onnx package
and checked with onnxruntime:

  crates/rge/tests/data/rts/vad_like/   a VAD-shaped model: a flag selects between an LSTM branch
                                        and a GRU branch (If), then a Loop over the frames keeps
                                        a running max and sum of per-frame speech logits; two
                                        data sets (flag true, flag false), outputs from
                                        onnxruntime
  crates/rge/tests/data/rts/bad_cond/   an If whose condition is a float tensor of shape [2]
  crates/rge/tests/data/rts/bad_trip/   a Loop whose trip count has shape [2]
  crates/rge/tests/data/rts/static_loop/  a Loop with a constant trip count (4), a carried
                                        vector and a scan output: static, lowered flat
  crates/rge/tests/data/rts/loop_with_if/ a Loop whose body holds an If on the counter's
                                        parity (an If nested in a Loop): both flat
  crates/rge/tests/data/rts/bad_cond_shape/ an If whose condition is bool[2] (right dtype,
                                        wrong shape)
  crates/rge/tests/data/rts/bad_loop_cond/  a Loop whose initial condition is bool[2]

Each folder has the node tests' layout (model.onnx, test_data_set_N/input_K.pb, output_K.pb).
Run: build/venv/bin/python scripts/gen_rts_test_models.py (needs onnx, numpy, onnxruntime).
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "rge", "tests", "data", "rts")
T, F, H = 12, 5, 6  # frames, features, hidden size
RNG = np.random.default_rng(16)


def w(*shape):
    return (RNG.standard_normal(shape) * 0.4).astype(np.float32)


def write_case(name, model, data_sets, expect=True):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    onnx.checker.check_model(model) if expect else None
    onnx.save(model, os.path.join(d, "model.onnx"))
    if not expect:
        return
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    in_names = [i.name for i in model.graph.input]
    for k, inputs in enumerate(data_sets):
        sd = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(sd, exist_ok=True)
        outs = sess.run(None, dict(zip(in_names, inputs)))
        for i, (n, v) in enumerate(zip(in_names, inputs)):
            t = numpy_helper.from_array(np.asarray(v), n)
            open(os.path.join(sd, f"input_{i}.pb"), "wb").write(t.SerializeToString())
        for i, (o, v) in enumerate(zip(model.graph.output, outs)):
            t = numpy_helper.from_array(np.asarray(v), o.name)
            open(os.path.join(sd, f"output_{i}.pb"), "wb").write(t.SerializeToString())


def vad_like():
    # then: LSTM over x → Y [T,1,1,H] → [T,1,H]
    lstm = helper.make_graph(
        [
            helper.make_node("LSTM", ["x", "lw", "lr", "lb"], ["ly"], hidden_size=H, name="lstm"),
            helper.make_node("Squeeze", ["ly", "ax1"], ["then_y"], name="lstm_squeeze"),
        ],
        "then_lstm",
        [],
        [helper.make_tensor_value_info("then_y", TensorProto.FLOAT, [T, 1, H])],
    )
    gru = helper.make_graph(
        [
            helper.make_node("GRU", ["x", "gw", "gr", "gb"], ["gy"], hidden_size=H, name="gru"),
            helper.make_node("Squeeze", ["gy", "ax1"], ["gru_sq"], name="gru_squeeze"),
            helper.make_node("Tanh", ["gru_sq"], ["else_y"], name="gru_tanh"),
        ],
        "else_gru",
        [],
        [helper.make_tensor_value_info("else_y", TensorProto.FLOAT, [T, 1, H])],
    )
    # Loop over frames: frame i of feats → logits [1,2]; carried running max and sum.
    body = helper.make_graph(
        [
            helper.make_node("Gather", ["feats", "i"], ["frame"], axis=0, name="frame"),
            helper.make_node("MatMul", ["frame", "wd"], ["mm"], name="dense"),
            helper.make_node("Add", ["mm", "bd"], ["logits"], name="dense_bias"),
            helper.make_node("Max", ["mx_in", "logits"], ["mx_out"], name="running_max"),
            helper.make_node("Add", ["sum_in", "logits"], ["sum_out"], name="running_sum"),
            helper.make_node("Identity", ["c_in"], ["c_out"], name="keep_going"),
        ],
        "frames",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("mx_in", TensorProto.FLOAT, [1, 2]),
            helper.make_tensor_value_info("sum_in", TensorProto.FLOAT, [1, 2]),
        ],
        [
            helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("mx_out", TensorProto.FLOAT, [1, 2]),
            helper.make_tensor_value_info("sum_out", TensorProto.FLOAT, [1, 2]),
        ],
    )
    inits = [
        numpy_helper.from_array(w(1, 4 * H, F), "lw"),
        numpy_helper.from_array(w(1, 4 * H, H), "lr"),
        numpy_helper.from_array(w(1, 8 * H), "lb"),
        numpy_helper.from_array(w(1, 3 * H, F), "gw"),
        numpy_helper.from_array(w(1, 3 * H, H), "gr"),
        numpy_helper.from_array(w(1, 6 * H), "gb"),
        numpy_helper.from_array(w(H, 2), "wd"),
        numpy_helper.from_array(w(2), "bd"),
        numpy_helper.from_array(np.array([1], np.int64), "ax1"),
        numpy_helper.from_array(np.array(T, np.int64), "trip"),
        numpy_helper.from_array(np.array(True), "go"),
        numpy_helper.from_array(np.full((1, 2), -1e9, np.float32), "mx0"),
        numpy_helper.from_array(np.zeros((1, 2), np.float32), "sum0"),
    ]
    g = helper.make_graph(
        [
            helper.make_node("If", ["use_lstm"], ["feats"], then_branch=lstm, else_branch=gru, name="branch"),
            helper.make_node("Loop", ["trip", "go", "mx0", "sum0"], ["mx", "sum"], body=body, name="frames"),
            helper.make_node("Sigmoid", ["mx"], ["speech"], name="speech"),
        ],
        "vad_like",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, 1, F]),
            helper.make_tensor_value_info("use_lstm", TensorProto.BOOL, []),
        ],
        [
            helper.make_tensor_value_info("speech", TensorProto.FLOAT, [1, 2]),
            helper.make_tensor_value_info("sum", TensorProto.FLOAT, [1, 2]),
            helper.make_tensor_value_info("feats", TensorProto.FLOAT, [T, 1, H]),
        ],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    x = RNG.standard_normal((T, 1, F)).astype(np.float32)
    write_case("vad_like", m, [[x, np.array(True)], [x, np.array(False)]])


def bad_if(case, cond_type, node):
    """An If whose condition has the wrong type or shape (`cond_type`, 2 elements)."""
    branch = lambda n, v: helper.make_graph(
        [helper.make_node("Constant", [], [n], value=numpy_helper.from_array(np.array([v], np.float32)))],
        n, [], [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1])])
    g = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=branch("a", 1.0), else_branch=branch("b", 2.0), name=node)],
        case,
        [helper.make_tensor_value_info("c", cond_type, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    write_case(case, helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), [], expect=False)


def bad_cond():
    bad_if("bad_cond", TensorProto.FLOAT, "pick")


def counting_body():
    """A Loop body that keeps its condition and adds one to a [1] float."""
    return helper.make_graph(
        [
            helper.make_node("Identity", ["c_in"], ["c_out"]),
            helper.make_node("Add", ["v_in", "one"], ["v_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1]),
        ],
        [
            helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1]),
        ],
    )


def bad_trip():
    body = counting_body()
    g = helper.make_graph(
        [helper.make_node("Loop", ["m", "", "v0"], ["v"], body=body, name="count")],
        "bad_trip",
        [
            helper.make_tensor_value_info("m", TensorProto.INT64, [2]),
            helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, [1])],
        [numpy_helper.from_array(np.array([1.0], np.float32), "one")],
    )
    write_case("bad_trip", helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), [], expect=False)


def static_loop():
    # for i in 0..4: acc = acc * 0.5 + x * i; scan out acc + 1
    body = helper.make_graph(
        [
            helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT, name="iter_float"),
            helper.make_node("Mul", ["x", "fi"], ["xi"], name="scale"),
            helper.make_node("Mul", ["acc_in", "half"], ["acc_h"], name="decay"),
            helper.make_node("Add", ["acc_h", "xi"], ["acc_out"], name="accumulate"),
            helper.make_node("Add", ["acc_out", "one"], ["scan"], name="scan_value"),
            helper.make_node("Identity", ["c_in"], ["c_out"], name="keep_going"),
        ],
        "acc_body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [3]),
        ],
        [
            helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("scan", TensorProto.FLOAT, [3]),
        ],
    )
    g = helper.make_graph(
        [
            helper.make_node("Loop", ["trip", "go", "acc0"], ["acc", "rows"], body=body, name="accumulate_loop"),
        ],
        "static_loop",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("acc0", TensorProto.FLOAT, [3]),
        ],
        [
            helper.make_tensor_value_info("acc", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("rows", TensorProto.FLOAT, [4, 3]),
        ],
        [
            numpy_helper.from_array(np.array(4, np.int64), "trip"),
            numpy_helper.from_array(np.array(True), "go"),
            numpy_helper.from_array(np.array(0.5, np.float32), "half"),
            numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        ],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    f = lambda *s: RNG.standard_normal(s).astype(np.float32)
    write_case("static_loop", m, [[f(3), f(3)], [f(3), np.zeros(3, np.float32)]])


def loop_with_if():
    # for i in 0..5: v = (i % 2 == 0) ? v + x : v * 0.5 - x (an If inside the Loop's body)
    even = helper.make_graph(
        [helper.make_node("Add", ["v_in", "x"], ["even_v"], name="even_add")],
        "even", [], [helper.make_tensor_value_info("even_v", TensorProto.FLOAT, [2, 2])],
    )
    odd = helper.make_graph(
        [
            helper.make_node("Mul", ["v_in", "half"], ["odd_h"], name="odd_half"),
            helper.make_node("Sub", ["odd_h", "x"], ["odd_v"], name="odd_sub"),
        ],
        "odd", [], [helper.make_tensor_value_info("odd_v", TensorProto.FLOAT, [2, 2])],
    )
    body = helper.make_graph(
        [
            helper.make_node("Mod", ["i", "two"], ["r"], name="parity"),
            helper.make_node("Equal", ["r", "zero"], ["is_even"], name="is_even"),
            helper.make_node("If", ["is_even"], ["v_out"], then_branch=even, else_branch=odd, name="parity_if"),
            helper.make_node("Identity", ["c_in"], ["c_out"], name="keep_going"),
        ],
        "parity_body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [2, 2]),
        ],
        [
            helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [2, 2]),
        ],
    )
    g = helper.make_graph(
        [
            helper.make_node("Loop", ["trip", "", "v0"], ["v"], body=body, name="parity_loop"),
            helper.make_node("Neg", ["v"], ["y"], name="negate"),
        ],
        "loop_with_if",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2]),
            helper.make_tensor_value_info("v0", TensorProto.FLOAT, [2, 2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        [
            numpy_helper.from_array(np.array(5, np.int64), "trip"),
            numpy_helper.from_array(np.array(2, np.int64), "two"),
            numpy_helper.from_array(np.array(0, np.int64), "zero"),
            numpy_helper.from_array(np.array(0.5, np.float32), "half"),
        ],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    f = lambda *s: RNG.standard_normal(s).astype(np.float32)
    write_case("loop_with_if", m, [[f(2, 2), f(2, 2)], [f(2, 2), np.ones((2, 2), np.float32)]])


def bad_cond_shape():
    bad_if("bad_cond_shape", TensorProto.BOOL, "pick2")


def bad_loop_cond():
    body = counting_body()
    g = helper.make_graph(
        [helper.make_node("Loop", ["m", "c", "v0"], ["v"], body=body, name="count2")],
        "bad_loop_cond",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, [2]),
            helper.make_tensor_value_info("v0", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, [1])],
        [
            numpy_helper.from_array(np.array([1.0], np.float32), "one"),
            numpy_helper.from_array(np.array(3, np.int64), "m"),
        ],
    )
    write_case("bad_loop_cond", helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), [], expect=False)


if __name__ == "__main__":
    vad_like()
    bad_cond()
    bad_trip()
    static_loop()
    loop_with_if()
    bad_cond_shape()
    bad_loop_cond()
    print("rts test data written to", os.path.normpath(OUT), file=sys.stderr)
