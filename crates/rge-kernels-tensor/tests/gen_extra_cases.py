"""Extra single-node cases for the tensor kernels, with expected outputs from the ONNX
reference implementation, written as node-test folders (model.onnx, test_data_set_0/).

    build/venv/bin/python crates/rge-kernels-tensor/tests/gen_extra_cases.py /tmp/tensor-extra
    RGE_ONNX_NODE_TESTS=/tmp/tensor-extra cargo test -p rge-kernels-tensor --test onnx_nodes -- --nocapture

They cover attributes, opsets, dtypes and edge cases the official node tests leave out.
"""

import os
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
from onnx.reference import ReferenceEvaluator

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/tensor-extra"
rng = np.random.default_rng(0)
count = 0


class Seq(list):
    """A sequence input value."""


class Opt:
    """An optional input value (None inside: empty)."""

    def __init__(self, v, elem=TensorProto.FLOAT):
        self.v = v
        self.elem = elem


def vinfo(name, v):
    if isinstance(v, Opt):
        inner = (
            helper.make_tensor_type_proto(v.elem, None)
            if not isinstance(v.v, list)
            else helper.make_sequence_type_proto(helper.make_tensor_type_proto(v.elem, None))
        )
        return helper.make_value_info(name, helper.make_optional_type_proto(inner))
    if isinstance(v, list):
        elem = helper.np_dtype_to_tensor_dtype(v[0].dtype) if v else TensorProto.FLOAT
        return helper.make_tensor_sequence_value_info(name, elem, None)
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)


def proto(name, v):
    if isinstance(v, Opt):
        return numpy_helper.from_optional(v.v, name=name)
    if isinstance(v, list):
        return numpy_helper.from_list(list(v), name=name)
    return numpy_helper.from_array(np.asarray(v), name)


def case(name, op, inputs, attrs=None, opset=None, n_out=1, ref_op=None, expected=None):
    """inputs: list of (name, value) with name '' for an absent optional input."""
    global count
    names = [n for n, _ in inputs]
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(ref_op or op, names, outs, **(attrs or {}))
    feeds = {n: v for n, v in inputs if n}
    ins = [vinfo(n, v) for n, v in inputs if n]
    # Placeholder outputs; replaced once the reference has run.
    g = helper.make_graph([node], name, ins, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs])
    imports = [helper.make_opsetid("", opset or 25)]
    m = helper.make_model(g, opset_imports=imports)
    m.ir_version = 10
    run_feeds = {k: (v.v if isinstance(v, Opt) else (list(v) if isinstance(v, list) else v)) for k, v in feeds.items()}
    try:
        res = expected if expected is not None else ReferenceEvaluator(m).run(None, run_feeds)
    except Exception as e:  # noqa: BLE001
        print(f"skip {name}: reference failed: {e}")
        return
    node.op_type = op
    m.graph.node[0].op_type = op
    del m.graph.output[:]
    for o, r in zip(outs, res):
        if isinstance(r, list):
            elem = helper.np_dtype_to_tensor_dtype(r[0].dtype) if r else TensorProto.FLOAT
            m.graph.output.append(helper.make_tensor_sequence_value_info(o, elem, None))
        else:
            r = np.asarray(r)
            m.graph.output.append(helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(r.dtype), r.shape))
    d = os.path.join(OUT, f"test_x_{name}")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(m, os.path.join(d, "model.onnx"))
    k = 0
    for n, v in inputs:
        if n:
            with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
                f.write(proto(n, v).SerializeToString())
            k += 1
    for i, r in enumerate(res):
        if not isinstance(r, list):
            r = np.asarray(r)
        with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(proto(f"y{i}", r).SerializeToString())
    count += 1


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def i64(*v):
    return np.array(v, dtype=np.int64)


S = np.array([["a", "bc", "d"], ["e", "f", "gh"]], dtype=object)

# Reshape / Squeeze / Unsqueeze / Flatten across opsets and dtypes.
case("reshape_str", "Reshape", [("x", S), ("s", i64(3, -1))])
case("reshape_allowzero_empty", "Reshape", [("x", np.zeros((0, 3), np.float32)), ("s", i64(3, 0))], {"allowzero": 1})
case("squeeze_op11", "Squeeze", [("x", f32(1, 3, 1))], {"axes": [-1]}, opset=11)
case("squeeze_op11_all", "Squeeze", [("x", f32(1, 3, 1))], opset=11)
case("squeeze_noaxes", "Squeeze", [("x", f32(1, 3, 1, 2))])
case("unsqueeze_op11", "Unsqueeze", [("x", f32(3, 2))], {"axes": [0, -1]}, opset=11)
case("unsqueeze_scalar", "Unsqueeze", [("x", np.array(3.0, np.float32)), ("a", i64(0))])
case("flatten_bool", "Flatten", [("x", rng.random((2, 3, 2)) > 0.5)], {"axis": 2})

# Transpose / DepthToSpace / SpaceToDepth.
case("transpose_str", "Transpose", [("x", S)])
case("transpose_i8_perm", "Transpose", [("x", rng.integers(-5, 5, (2, 3, 4, 5)).astype(np.int8))], {"perm": [3, 1, 0, 2]})
case("transpose_f16", "Transpose", [("x", f32(4, 1, 3).astype(np.float16))], {"perm": [1, 2, 0]})
case("d2s_crd", "DepthToSpace", [("x", f32(2, 8, 3, 2))], {"blocksize": 2, "mode": "CRD"})
case("d2s_dcr", "DepthToSpace", [("x", f32(1, 18, 2, 3))], {"blocksize": 3})
case("s2d", "SpaceToDepth", [("x", f32(2, 3, 4, 6))], {"blocksize": 2}, opset=13)

# Slice.
x = f32(5, 6, 7)
case("slice_op1", "Slice", [("x", x)], {"starts": [1, -3], "ends": [100, -1], "axes": [0, 2]}, opset=1)
case("slice_op1_noaxes", "Slice", [("x", x)], {"starts": [1, 2], "ends": [3, 4]}, opset=1)
case("slice_negstep_all", "Slice", [("x", x), ("s", i64(-1, 100)), ("e", i64(-1000, -1000)), ("a", i64(0, 1)), ("p", i64(-2, -3))])
case("slice_i32_params", "Slice", [("x", x), ("s", np.array([1], np.int32)), ("e", np.array([4], np.int32)), ("a", np.array([-1], np.int32)), ("p", np.array([2], np.int32))])
case("slice_str", "Slice", [("x", S), ("s", i64(1)), ("e", i64(3)), ("a", i64(1))])
case("slice_empty", "Slice", [("x", x), ("s", i64(3)), ("e", i64(1)), ("a", i64(0))])

# Concat / Split.
case("concat_str", "Concat", [("a", S), ("b", S[:, :1])], {"axis": 1})
case("concat_empty", "Concat", [("a", f32(2, 0)), ("b", f32(2, 3)), ("c", f32(2, 1))], {"axis": -1})
case("concat_bool_3", "Concat", [("a", np.array([True, False])), ("b", np.array([True])), ("c", np.array([False]))], {"axis": 0})
case("split_op11_attr", "Split", [("x", f32(6, 2))], {"axis": 0, "split": [1, 5]}, opset=11, n_out=2)
case("split_op11_equal", "Split", [("x", f32(2, 6))], {"axis": 1}, opset=11, n_out=3)
case("split_op18_uneven", "Split", [("x", f32(2, 7))], {"axis": 1, "num_outputs": 3}, opset=18, n_out=3)
case("split_op13_input", "Split", [("x", f32(2, 7)), ("s", i64(3, 0, 4))], {"axis": -1}, opset=13, n_out=3)
case("split_str", "Split", [("x", S)], {"axis": 1, "num_outputs": 3}, opset=18, n_out=3)

# Gather family.
case("gather_axis1_neg", "Gather", [("x", f32(3, 4, 2)), ("i", i64(-1, 0, 2, -4).reshape(2, 2))], {"axis": 1})
case("gather_scalar_idx", "Gather", [("x", f32(3, 4)), ("i", np.array(-2, np.int64))], {"axis": 0})
case("gather_str", "Gather", [("x", S), ("i", np.array([2, 0], np.int32))], {"axis": 1})
case("gather_elements_axis1", "GatherElements", [("x", f32(3, 4)), ("i", np.array([[0, -1], [2, 3], [1, 1]], np.int64))], {"axis": 1})
case("gather_elements_rows", "GatherElements", [("x", f32(3, 4)), ("i", np.array([[2, 0, 1, 1]], np.int32))], {"axis": 0})
case("gathernd_batch2", "GatherND", [("x", f32(2, 3, 4, 5)), ("i", rng.integers(0, 4, (2, 3, 6, 1)).astype(np.int64))], {"batch_dims": 2})
case("gathernd_full", "GatherND", [("x", f32(3, 4)), ("i", np.array([[0, 1], [2, -1]], np.int64))])
case("gathernd_batch1_slices", "GatherND", [("x", f32(2, 3, 4)), ("i", np.array([[[1]], [[2]]], np.int64))], {"batch_dims": 1})
case("compress_noaxis_short", "Compress", [("x", f32(3, 2)), ("c", np.array([False, True, True]))])
case("compress_axis1", "Compress", [("x", f32(3, 4)), ("c", np.array([True, False, True, True]))], {"axis": 1})

# Scatter family.
d = f32(4, 5)
case("scatter_elements_axis1_add", "ScatterElements", [("d", d), ("i", np.array([[0, 0], [4, -1]], np.int64)), ("u", f32(2, 2))], {"axis": 1, "reduction": "add"}, opset=18)
case("scatter_elements_i32_mul", "ScatterElements", [("d", rng.integers(1, 5, (3, 3)).astype(np.int32)), ("i", np.array([[1, 1, 1]], np.int64)), ("u", np.array([[2, 3, 4]], np.int32))], {"axis": 0, "reduction": "mul"}, opset=18)
case("scatter_op9", "Scatter", [("d", d), ("i", np.array([[1], [3]], np.int64)), ("u", f32(2, 1))], {"axis": 1}, opset=9, ref_op="ScatterElements")
case("scatternd_slices", "ScatterND", [("d", f32(4, 3, 2)), ("i", np.array([[1], [-1]], np.int64)), ("u", f32(2, 3, 2))])
case("scatternd_str", "ScatterND", [("d", S), ("i", np.array([[0, 2]], np.int64)), ("u", np.array(["zz"], dtype=object))])
case("scatternd_min_i64", "ScatterND", [("d", np.arange(6, dtype=np.int64)), ("i", np.array([[1], [1], [4]], np.int64)), ("u", i64(-3, 7, 2))], {"reduction": "min"}, opset=18)
case("tensorscatter_noidx", "TensorScatter", [("c", f32(2, 3, 6, 4)), ("u", f32(2, 3, 2, 4))], opset=24)
case("tensorscatter_axis2_4d", "TensorScatter", [("c", f32(2, 6, 3, 2)), ("u", f32(2, 6, 1, 2)), ("w", i64(2, 0))], {"axis": 2}, opset=24)
case("tensorscatter_circ", "TensorScatter", [("c", f32(2, 5, 3)), ("u", f32(2, 3, 3)), ("w", i64(4, 1))], {"axis": 1, "mode": "circular"}, opset=24)

# Pad.
x = f32(3, 4)
for mode in ["constant", "reflect", "edge", "wrap"]:
    case(f"pad_{mode}_big", "Pad", [("x", x), ("p", i64(2, 3, 1, 2))], {"mode": mode}, opset=19)
    case(f"pad_{mode}_axes", "Pad", [("x", f32(2, 3, 4)), ("p", i64(1, 2)), ("", None), ("a", i64(-1))], {"mode": mode}, opset=19)
want = np.full((4, 3), 7.5, np.float32)
want[:2, 1:] = x[1:3, :2]
case("pad_constant_neg", "Pad", [("x", x), ("p", i64(-1, 1, 2, -2)), ("v", np.array(7.5, np.float32))], opset=19, expected=[want])
case("pad_op2_value", "Pad", [("x", x)], {"pads": [0, 1, 0, 1], "value": 2.5}, opset=2)
case("pad_op2_reflect", "Pad", [("x", x)], {"pads": [1, 2, 1, 2], "mode": "reflect"}, opset=2)
case("pad_i32_value", "Pad", [("x", np.arange(6, dtype=np.int32).reshape(2, 3)), ("p", i64(1, 0, 0, 1)), ("v", np.array(-9, np.int32))], opset=18)
case("pad_str", "Pad", [("x", S), ("p", i64(0, 1, 0, 1)), ("v", np.array("pad", dtype=object))], opset=18)
case("pad_bool_edge", "Pad", [("x", np.array([[True, False]])), ("p", i64(1, 1, 1, 1))], {"mode": "edge"}, opset=18)
case("ccp_odd", "CenterCropPad", [("x", f32(5, 4, 3)), ("s", i64(2, 7))], {"axes": [0, 1]}, opset=18)
case("ccp_all", "CenterCropPad", [("x", f32(5, 4)), ("s", i64(8, 1))], opset=18)

# Tile / Expand.
case("tile_3d", "Tile", [("x", f32(2, 1, 3)), ("r", i64(2, 3, 1))])
case("tile_str", "Tile", [("x", S), ("r", i64(1, 2))])
case("tile_zero", "Tile", [("x", f32(2, 3)), ("r", i64(0, 2))])
case("expand_rank_up", "Expand", [("x", f32(3, 1)), ("s", i64(2, 1, 1, 4))])
case("expand_smaller_shape", "Expand", [("x", f32(2, 3)), ("s", i64(3))])
case("expand_zero", "Expand", [("x", f32(1, 3)), ("s", i64(0, 1))])
case("expand_i8", "Expand", [("x", np.array([1, -2], np.int8)), ("s", i64(3, 2))])

# Selection.
xs = np.array([[3, 1, np.nan, 1, 7], [2, 2, 2, -1, 0]], np.float32)
case("topk_nan", "TopK", [("x", xs), ("k", i64(3))], n_out=2)
case("topk_smallest_nan", "TopK", [("x", xs), ("k", i64(3))], {"largest": 0}, n_out=2)
case("topk_axis0", "TopK", [("x", f32(4, 3, 2)), ("k", i64(2))], {"axis": 0}, n_out=2)
case("topk_op1", "TopK", [("x", f32(3, 5))], {"k": 2}, opset=1, n_out=2)
case("topk_i32_k0", "TopK", [("x", np.array([[4, 1, 4]], np.int32)), ("k", i64(0))], n_out=2)
case("topk_f16_ties", "TopK", [("x", np.array([1, 3, 3, 2, 3], np.float16)), ("k", i64(4))], n_out=2)
case("nonzero_3d", "NonZero", [("x", (rng.random((2, 3, 4)) > 0.6).astype(np.float32))])
case("nonzero_bool", "NonZero", [("x", np.array([[True, False], [False, True]]))])
# The reference takes unsorted uniques along axis 0 whatever the axis; the spec's result:
case("unique_axis1_unsorted", "Unique", [("x", np.array([[1, 0, 1, 0], [2, 3, 2, 3]], np.int64))], {"axis": 1, "sorted": 0}, n_out=4,
     expected=[np.array([[1, 0], [2, 3]], np.int64), i64(0, 1), i64(0, 1, 0, 1), i64(2, 2)])
case("unique_axis1_sorted", "Unique", [("x", np.array([[1, 0, 1, 5], [2, 3, 2, 3]], np.int64))], {"axis": 1}, n_out=4)
case("unique_float_nan", "Unique", [("x", np.array([2.0, np.nan, 1.0, np.nan, 2.0], np.float32))], n_out=4)
case("unique_str", "Unique", [("x", np.array(["b", "a", "b", "c"], dtype=object))], n_out=4)
case("unique_str_unsorted", "Unique", [("x", np.array(["b", "a", "b", "c"], dtype=object))], {"sorted": 0}, n_out=4)
case("unique_only_y", "Unique", [("x", np.array([3, 1, 3], np.int32))])

# Misc.
case("onehot_float_idx", "OneHot", [("i", np.array([[1.0, -1.0], [5.0, 0.0]], np.float32)), ("d", np.array(3.0, np.float32)), ("v", np.array([0, 5], np.int32))], {"axis": 1})
case("onehot_axis0", "OneHot", [("i", i64(0, 2, -3)), ("d", np.array(3, np.int64)), ("v", np.array([-1.0, 1.0], np.float32))], {"axis": 0})
case("trilu_3d_k", "Trilu", [("x", f32(2, 3, 4)), ("k", np.array(-1, np.int64))], {"upper": 0})
case("trilu_bool_upper", "Trilu", [("x", rng.random((3, 3)) > 0.3), ("k", np.array(1, np.int64))])
case("revseq_time1", "ReverseSequence", [("x", f32(3, 4, 2)), ("l", i64(4, 1, 0))], {"time_axis": 1, "batch_axis": 0})
case("revseq_str", "ReverseSequence", [("x", np.array([["a", "b"], ["c", "d"], ["e", "f"]], dtype=object)), ("l", i64(3, 2))])
case("range_i64_neg", "Range", [("s", np.array(10, np.int64)), ("l", np.array(-7, np.int64)), ("d", np.array(-3, np.int64))])
case("range_f64", "Range", [("s", np.array(0.5, np.float64)), ("l", np.array(3.1, np.float64)), ("d", np.array(0.3, np.float64))])
case("range_i16_empty", "Range", [("s", np.array(5, np.int16)), ("l", np.array(1, np.int16)), ("d", np.array(2, np.int16))])
case("eyelike_k_neg_int", "EyeLike", [("x", f32(3, 5))], {"k": -1, "dtype": TensorProto.INT32})
case("eyelike_bool", "EyeLike", [("x", np.zeros((4, 2), np.int64))], {"k": 1, "dtype": TensorProto.BOOL})
case("cos_i32_value", "ConstantOfShape", [("s", i64(2, 3))], {"value": numpy_helper.from_array(np.array([7], np.int32))})
case("cos_scalar", "ConstantOfShape", [("s", np.zeros((0,), np.int64))])
case("shape_scalar", "Shape", [("x", np.array(1.0, np.float32))])
case("shape_str_start", "Shape", [("x", S)], {"start": -1})
case("size_str", "Size", [("x", S)])
case("identity_str", "Identity", [("x", S)])

# Constants.
case("const_float", "Constant", [], {"value_float": 2.5})
case("const_floats", "Constant", [], {"value_floats": [1.0, 2.0]})
case("const_int", "Constant", [], {"value_int": 3})
case("const_ints", "Constant", [], {"value_ints": [1, -2, 3]})
case("const_string", "Constant", [], {"value_string": "hi"})
case("const_strings", "Constant", [], {"value_strings": ["a", "b"]})
sp = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.5, 2.5], np.float32), "v"), numpy_helper.from_array(i64(1, 5), "i"), [2, 3])
want = np.zeros((2, 3), np.float32)
want.flat[[1, 5]] = [1.5, 2.5]
case("const_sparse", "Constant", [], {"sparse_value": sp}, expected=[want])

# Sequences and optionals.
a, b, c = f32(2, 3), f32(2, 3), f32(2, 1)
case("seq_construct", "SequenceConstruct", [("a", a), ("b", b)])
case("seq_at_neg", "SequenceAt", [("s", Seq([a, b, c])), ("p", np.array(-1, np.int64))])
case("seq_insert_mid", "SequenceInsert", [("s", Seq([a, b])), ("t", c), ("p", np.array(1, np.int32))])
case("seq_erase_default", "SequenceErase", [("s", Seq([a, b, c]))])
case("seq_erase_pos", "SequenceErase", [("s", Seq([a, b, c])), ("p", np.array(-3, np.int64))])
case("seq_length", "SequenceLength", [("s", Seq([a, b, c]))])
case("seq_empty_i64", "SequenceEmpty", [], {"dtype": TensorProto.INT64})
case("split_to_seq_scalar", "SplitToSequence", [("x", f32(7, 2)), ("s", np.array(3, np.int64))])
case("split_to_seq_nokeep_axis1", "SplitToSequence", [("x", f32(2, 3))], {"axis": 1, "keepdims": 0})
case("split_to_seq_list", "SplitToSequence", [("x", f32(2, 5)), ("s", i64(1, 4))], {"axis": 1})
case("concat_from_seq", "ConcatFromSequence", [("s", Seq([a, b, c]))], {"axis": 1})
case("concat_from_seq_new_axis", "ConcatFromSequence", [("s", Seq([a, b]))], {"axis": -1, "new_axis": 1})
case("concat_from_seq_new_axis0", "ConcatFromSequence", [("s", Seq([a, b]))], {"axis": 0, "new_axis": 1})
case("optional_tensor", "OptionalHasElement", [("o", Opt(a))], opset=18)
case("optional_get_tensor", "OptionalGetElement", [("o", Opt(a))], opset=18)

print(f"wrote {count} cases to {OUT}")
