#!/usr/bin/env python3
"""Test data of the cpu_tf engine (crates/rge/tests/cpu_tf_engine.rs): TF-dialect graphs and
their expected outputs computed with numpy alone (no TensorFlow), written to
crates/rge-cpu-tf/tests/data/cases.json.

Each case: feeds (graph inputs), consts, nodes (op type, domain, attributes as [kind, value]),
the graph outputs and the expected tensors. The references follow TensorFlow's documented
semantics: SAME padding puts the odd pad after, AvgPool averages over the window's elements
inside the input, StridedSlice is numpy basic indexing built from the masks, the resizes use
TF's scalers, FloorDiv/FloorMod round toward -inf.

Run: /work/main/build/venv/bin/python scripts/gen_cpu_tf_test_data.py
"""
import json
import math
import os

import numpy as np

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "rge-cpu-tf", "tests", "data", "cases.json")


def vals(shape, salt, scale=1.0, dtype=np.float32):
    n = int(np.prod(shape)) if shape else 1
    i = np.arange(n, dtype=np.int64)
    v = (((i * 37 + salt * 11) % 101) / 50.0 - 1.0) * scale
    return v.reshape(shape).astype(dtype)


def t(name, a):
    a = np.asarray(a)
    kind = {np.float32: "float32", np.int32: "int32", np.int64: "int64", np.bool_: "bool"}[a.dtype.type]
    data = a.reshape(-1).tolist()
    if kind == "bool":
        data = [int(x) for x in data]
    return {"name": name, "dtype": kind, "shape": list(a.shape), "data": data}


def node(name, op, inputs, attrs=None, outputs=1, domain="tf"):
    return {"name": name, "op": op, "domain": domain, "inputs": inputs, "attrs": attrs or {}, "outputs": outputs}


CASES = []


def case(name, feeds, consts, nodes, outputs, expected, atol=1e-4):
    CASES.append({
        "name": name,
        "feeds": [t(k, v) for k, v in feeds],
        "consts": [t(k, v) for k, v in consts],
        "nodes": nodes,
        "outputs": outputs,
        "expected": [t("", e) for e in expected],
        "atol": atol,
    })


# ---- references ----

def same_pads(n, k, s, d):
    eff = (k - 1) * d + 1
    out = -(-n // s)
    total = max((out - 1) * s + eff - n, 0)
    return total // 2, total - total // 2


def conv_nhwc(x, w, strides, dil, pads, depthwise=False):
    """x NHWC, w HWIO (or HWCM when depthwise); pads [(top, bottom), (left, right)]."""
    n, h, wd, c = x.shape
    kh, kw, fi, fo = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), pads[0], pads[1], (0, 0)))
    eh, ew = (kh - 1) * dil[0] + 1, (kw - 1) * dil[1] + 1
    oh = (xp.shape[1] - eh) // strides[0] + 1
    ow = (xp.shape[2] - ew) // strides[1] + 1
    oc = c * fo if depthwise else fo
    y = np.zeros((n, oh, ow, oc))
    groups = 1 if depthwise else c // fi
    for i in range(oh):
        for j in range(ow):
            p = xp[:, i * strides[0]: i * strides[0] + eh: dil[0], j * strides[1]: j * strides[1] + ew: dil[1], :]
            if depthwise:
                y[:, i, j, :] = np.einsum("nhwc,hwcm->ncm", p, w).reshape(n, -1)
            else:
                og = fo // groups
                for g in range(groups):
                    y[:, i, j, g * og:(g + 1) * og] = np.einsum(
                        "nhwc,hwco->no", p[..., g * fi:(g + 1) * fi], w[..., g * og:(g + 1) * og])
    return y.astype(np.float32)


def pool_nhwc(x, k, s, pads, op):
    xp = np.pad(x.astype(np.float64), ((0, 0), pads[0], pads[1], (0, 0)), constant_values=np.nan)
    oh = (xp.shape[1] - k[0]) // s[0] + 1
    ow = (xp.shape[2] - k[1]) // s[1] + 1
    y = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for i in range(oh):
        for j in range(ow):
            p = xp[:, i * s[0]: i * s[0] + k[0], j * s[1]: j * s[1] + k[1], :]
            y[:, i, j, :] = np.nanmax(p, axis=(1, 2)) if op == "max" else np.nanmean(p, axis=(1, 2))
    return y.astype(np.float32)


def nchw(a):
    return np.transpose(a, (0, 3, 1, 2))


def nhwc(a):
    return np.transpose(a, (0, 2, 3, 1))


def conv_attrs(strides, padding, fmt="NHWC", dil=None, explicit=None):
    a = {"strides": ["ints", strides], "padding": ["s", padding], "data_format": ["s", fmt]}
    if dil:
        a["dilations"] = ["ints", dil]
    if explicit:
        a["explicit_paddings"] = ["ints", explicit]
    return a


# ---- Conv2D / DepthwiseConv2dNative ----

x = vals([2, 7, 6, 3], 1)
w = vals([3, 2, 3, 4], 2, 0.5)
case("conv_nhwc_same_stride2", [("x", x)], [("w", w)],
     [node("conv", "Conv2D", ["x", "w"], conv_attrs([1, 2, 2, 1], "SAME"))], ["conv:0"],
     [conv_nhwc(x, w, (2, 2), (1, 1), [same_pads(7, 3, 2, 1), same_pads(6, 2, 2, 1)])])
case("conv_nhwc_valid_dilated", [("x", x)], [("w", w)],
     [node("conv", "Conv2D", ["x", "w"], conv_attrs([1, 1, 1, 1], "VALID", dil=[1, 2, 2, 1]), domain="")],
     ["conv:0"], [conv_nhwc(x, w, (1, 1), (2, 2), [(0, 0), (0, 0)])])
case("conv_nchw_same_dilated_stride", [("x", nchw(x))], [("w", w)],
     [node("conv", "Conv2D", ["x", "w"], conv_attrs([1, 1, 2, 1], "SAME", "NCHW", dil=[1, 1, 1, 2]))],
     ["conv:0"], [nchw(conv_nhwc(x, w, (2, 1), (1, 2), [same_pads(7, 3, 2, 1), same_pads(6, 2, 1, 2)]))])
case("conv_nchw_explicit", [("x", nchw(x))], [("w", w)],
     [node("conv", "Conv2D", ["x", "w"],
           conv_attrs([1, 1, 1, 1], "EXPLICIT", "NCHW", explicit=[0, 0, 0, 0, 2, 1, 0, 3]))],
     ["conv:0"], [nchw(conv_nhwc(x, w, (1, 1), (1, 1), [(2, 1), (0, 3)]))])
wg = vals([3, 3, 1, 6], 3, 0.5)
case("conv_grouped_nhwc_explicit", [("x", x)], [("w", wg)],
     [node("conv", "Conv2D", ["x", "w"],
           conv_attrs([1, 1, 1, 1], "EXPLICIT", explicit=[0, 0, 1, 1, 1, 1, 0, 0]))],
     ["conv:0"], [conv_nhwc(x, wg, (1, 1), (1, 1), [(1, 1), (1, 1)])])
# GE's Conv2D: `pads` [top, bottom, left, right] and no `padding`, NHWC and NCHW.
case("conv_ge_pads_nhwc", [("x", x)], [("w", w)],
     [node("conv", "Conv2D", ["x", "w"], {"strides": ["ints", [1, 2, 1, 1]], "pads": ["ints", [2, 0, 1, 3]]})],
     ["conv:0"], [conv_nhwc(x, w, (2, 1), (1, 1), [(2, 0), (1, 3)])])
case("conv_ge_pads_nchw_dilated", [("x", nchw(x))], [("w", w)],
     [node("conv", "Conv2D", ["x", "w"], {"strides": ["ints", [1, 1, 1, 1]], "pads": ["ints", [1, 1, 0, 2]],
                                           "dilations": ["ints", [1, 1, 2, 1]], "data_format": ["s", "NCHW"]})],
     ["conv:0"], [nchw(conv_nhwc(x, w, (1, 1), (2, 1), [(1, 1), (0, 2)]))])
wd = vals([3, 3, 3, 2], 4, 0.5)
case("depthwise_nhwc_same", [("x", x)], [("w", wd)],
     [node("dw", "DepthwiseConv2dNative", ["x", "w"], conv_attrs([1, 2, 1, 1], "SAME"))], ["dw:0"],
     [conv_nhwc(x, wd, (2, 1), (1, 1), [same_pads(7, 3, 2, 1), same_pads(6, 3, 1, 1)], True)])
case("depthwise_nchw_valid_dilated", [("x", nchw(x))], [("w", wd)],
     [node("dw", "DepthwiseConv2dNative", ["x", "w"],
           conv_attrs([1, 1, 1, 1], "VALID", "NCHW", dil=[1, 1, 2, 1]))], ["dw:0"],
     [nchw(conv_nhwc(x, wd, (1, 1), (2, 1), [(0, 0), (0, 0)], True))])

# ---- pools, BiasAdd, FusedBatchNorm, activations, Softmax ----

pool_attrs = lambda k, s, p, f="NHWC": {"ksize": ["ints", k], "strides": ["ints", s], "padding": ["s", p], "data_format": ["s", f]}
case("avgpool_nhwc_same", [("x", x)], [],
     [node("p", "AvgPool", ["x"], pool_attrs([1, 3, 3, 1], [1, 2, 2, 1], "SAME"))], ["p:0"],
     [pool_nhwc(x, (3, 3), (2, 2), [same_pads(7, 3, 2, 1), same_pads(6, 3, 2, 1)], "avg")])
case("maxpool_nchw_same", [("x", nchw(x))], [],
     [node("p", "MaxPool", ["x"], pool_attrs([1, 1, 2, 3], [1, 1, 2, 2], "SAME", "NCHW"))], ["p:0"],
     [nchw(pool_nhwc(x, (2, 3), (2, 2), [same_pads(7, 2, 2, 1), same_pads(6, 3, 2, 1)], "max"))])
b3 = vals([3], 5)
case("bias_add_nchw", [("x", nchw(x))], [("b", b3)],
     [node("ba", "BiasAdd", ["x", "b"], {"data_format": ["s", "NCHW"]})], ["ba:0"],
     [nchw(x) + b3.reshape(1, 3, 1, 1)])
scale, offset, mean, var = vals([3], 6) + 1.5, vals([3], 7), vals([3], 8), vals([3], 9) + 1.2
bn_out = ((x - mean) / np.sqrt(var + 1e-3) * scale + offset).astype(np.float32)
case("fused_batch_norm_v3_inference", [("x", x)], [("s", scale), ("o", offset), ("m", mean), ("v", var)],
     [node("bn", "FusedBatchNormV3", ["x", "s", "o", "m", "v"],
           {"epsilon": ["f", 1e-3], "is_training": ["b", False], "data_format": ["s", "NHWC"]}, outputs=6)],
     ["bn:0"], [bn_out])
# FusedBatchNorm (V1, five outputs), inference, NCHW.
bn1_out = ((nchw(x) - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1) + 1e-4)
           * scale.reshape(1, 3, 1, 1) + offset.reshape(1, 3, 1, 1)).astype(np.float32)
case("fused_batch_norm_v1_inference_nchw", [("x", nchw(x))], [("s", scale), ("o", offset), ("m", mean), ("v", var)],
     [node("bn", "FusedBatchNorm", ["x", "s", "o", "m", "v"],
           {"is_training": ["b", False], "data_format": ["s", "NCHW"]}, outputs=5)],
     ["bn:0", "bn:1", "bn:2"], [bn1_out, mean, var])


def bn_train(x, scale, offset, mean, var, eps, factor, axes):
    """TF's CPU FusedBatchNorm with is_training: batch statistics over `axes`; y with the
    biased variance; running mean/variance blended by exponential_avg_factor, the variance
    Bessel-corrected; reserve_space_1/2 the batch mean and biased variance."""
    x64 = x.astype(np.float64)
    count = x.size // scale.size
    bm = x64.mean(axes)
    bv = x64.var(axes)
    shape = [1] * x.ndim
    ch = [a for a in range(x.ndim) if a not in axes][0]
    shape[ch] = scale.size
    r = lambda v: v.reshape(shape)
    y = (x64 - r(bm)) / np.sqrt(r(bv) + eps) * r(scale) + r(offset)
    run_mean = (1 - factor) * mean + factor * bm
    run_var = (1 - factor) * var + factor * bv * count / (count - 1)
    f = lambda v: np.asarray(v, np.float32)
    return [f(y), f(run_mean), f(run_var), f(bm), f(bv)]


case("fused_batch_norm_v3_training_nhwc", [("x", x)], [("s", scale), ("o", offset), ("m", mean), ("v", var)],
     [node("bn", "FusedBatchNormV3", ["x", "s", "o", "m", "v"],
           {"epsilon": ["f", 1e-3], "is_training": ["b", True], "exponential_avg_factor": ["f", 0.25],
            "data_format": ["s", "NHWC"]}, outputs=6)],
     ["bn:0", "bn:1", "bn:2", "bn:3", "bn:4"], bn_train(x, scale, offset, mean, var, 1e-3, 0.25, (0, 1, 2)))
# TF's default is_training (true) and factor (1: the batch statistics alone), NCHW, V1.
case("fused_batch_norm_v1_training_default_nchw", [("x", nchw(x))], [("s", scale), ("o", offset), ("m", mean), ("v", var)],
     [node("bn", "FusedBatchNorm", ["x", "s", "o", "m", "v"], {"data_format": ["s", "NCHW"]}, outputs=5)],
     ["bn:0", "bn:1", "bn:2", "bn:3", "bn:4"], bn_train(nchw(x), scale, offset, mean, var, 1e-4, 1.0, (0, 2, 3)))
xa = vals([3, 4], 10, 8.0)
case("activations", [("x", xa)], [],
     [node("r6", "Relu6", ["x"]), node("elu", "Elu", ["x"]), node("selu", "Selu", ["x"]),
      node("lrelu", "LeakyRelu", ["x"]), node("sm", "Softmax", ["x"]), node("relu", "Relu", ["x"])],
     ["r6:0", "elu:0", "selu:0", "lrelu:0", "sm:0", "relu:0"],
     [np.clip(xa, 0, 6), np.where(xa > 0, xa, np.expm1(xa)),
      (1.0507009873554805 * np.where(xa > 0, xa, 1.6732632423543772 * np.expm1(xa))).astype(np.float32),
      np.where(xa > 0, xa, 0.2 * xa).astype(np.float32),
      (np.exp(xa - xa.max(1, keepdims=True)) / np.exp(xa - xa.max(1, keepdims=True)).sum(1, keepdims=True)).astype(np.float32),
      np.maximum(xa, 0)])

# ---- matrix products ----

a, b = vals([4, 3], 11), vals([5, 4], 12)
bm_a, bm_b = vals([2, 1, 4, 3], 13), vals([3, 5, 4], 14)
case("matmuls", [("a", a), ("b", b)], [("ba", bm_a), ("bb", bm_b)],
     [node("mm", "MatMul", ["a", "b"], {"transpose_a": ["b", True], "transpose_b": ["b", True]}),
      node("mm2", "MatMulV2", ["b", "a"], {"transpose_x1": ["b", False], "transpose_x2": ["b", False]}),
      node("bmm", "BatchMatMulV2", ["ba", "bb"], {"adj_x": ["b", True], "adj_y": ["b", True]})],
     ["mm:0", "mm2:0", "bmm:0"],
     [a.T @ b.T, b @ a, np.matmul(np.swapaxes(bm_a, -1, -2), np.swapaxes(bm_b, -1, -2)).astype(np.float32)])

# GE's spellings: MatMulV2's transpose_x1/transpose_x2, BatchMatMul's adj_x1/adj_x2 (each
# alone, so a default of the other spelling must not hide it); BatchMatMul (V1, equal batch
# dims) with TF's adj_x/adj_y.
b1_a, b1_b = vals([2, 3, 4, 3], 40), vals([2, 3, 5, 4], 41)
case("matmuls_ge_spellings", [("a", a), ("b", b)], [("ba", b1_a), ("bb", b1_b), ("bc", vals([2, 3, 4, 5], 42))],
     [node("mm2t", "MatMulV2", ["a", "b"], {"transpose_x1": ["b", True], "transpose_x2": ["b", True]}),
      node("mm2a", "MatMulV2", ["b", "b"], {"transpose_x2": ["b", True]}),
      node("bmm1", "BatchMatMul", ["ba", "bb"], {"adj_x": ["b", True], "adj_y": ["b", True]}),
      node("bmm_x1", "BatchMatMul", ["ba", "bc"], {"adj_x1": ["b", True]}),
      node("bmm_x2", "BatchMatMulV2", ["bc", "bc"], {"adj_x2": ["b", True]}),
      node("bmm_ge", "BatchMatMulV2", ["bb", "bc"], {"adj_x1": ["b", True], "adj_x2": ["b", True]})],
     ["mm2t:0", "mm2a:0", "bmm1:0", "bmm_x1:0", "bmm_x2:0", "bmm_ge:0"],
     [a.T @ b.T, b @ b.T,
      np.matmul(np.swapaxes(b1_a, -1, -2), np.swapaxes(b1_b, -1, -2)).astype(np.float32),
      np.matmul(np.swapaxes(b1_a, -1, -2), vals([2, 3, 4, 5], 42)).astype(np.float32),
      np.matmul(vals([2, 3, 4, 5], 42), np.swapaxes(vals([2, 3, 4, 5], 42), -1, -2)).astype(np.float32),
      np.matmul(np.swapaxes(b1_b, -1, -2), np.swapaxes(vals([2, 3, 4, 5], 42), -1, -2)).astype(np.float32)])

# ---- StridedSlice: numpy basic indexing from the masks ----

def np_strided_slice(x, begin, end, strides, bm=0, em=0, elm=0, nam=0, sam=0):
    idx = []
    for i in range(len(begin)):
        bit = 1 << i
        if elm & bit:
            idx.append(Ellipsis)
        elif nam & bit:
            idx.append(np.newaxis)
        elif sam & bit:
            idx.append(begin[i])
        else:
            idx.append(slice(None if bm & bit else begin[i], None if em & bit else end[i], strides[i]))
    return x[tuple(idx)]


xs = vals([4, 5, 6], 15)
slices = [
    ("basic", [1, 0, 2], [3, 5, 6], [1, 2, 2], {}),
    ("negative_strides", [-1, 4, 0], [0, 0, 6], [-1, -2, 1], {"end_mask": 0b001}),
    ("begin_end_masks", [2, 3, 1], [0, 1, 0], [1, -1, 3], {"begin_mask": 0b101, "end_mask": 0b111}),
    ("ellipsis_shrink", [0, 2], [0, 3], [1, 1], {"ellipsis_mask": 0b01, "shrink_axis_mask": 0b10}),
    ("new_axis", [0, 1, 0], [0, 3, 0], [1, 1, 1], {"new_axis_mask": 0b101}),
    ("shrink_negative", [-2, 0], [0, 0], [1, 1], {"shrink_axis_mask": 0b01, "end_mask": 0b10}),
    ("ellipsis_new_axis", [1, 0, 0], [3, 0, 0], [1, 1, 1], {"ellipsis_mask": 0b010, "new_axis_mask": 0b100}),
    ("clamped", [-10, 2, 1], [10, 100, -1], [2, 1, 1], {}),
]
for name, bg, en, st, masks in slices:
    m = {k: ["i", v] for k, v in masks.items()}
    ref = np_strided_slice(xs, bg, en, st, masks.get("begin_mask", 0), masks.get("end_mask", 0),
                           masks.get("ellipsis_mask", 0), masks.get("new_axis_mask", 0),
                           masks.get("shrink_axis_mask", 0))
    case("strided_slice_" + name, [("x", xs)],
         [("b", np.array(bg, np.int32)), ("e", np.array(en, np.int32)), ("s", np.array(st, np.int32))],
         [node("ss", "StridedSlice", ["x", "b", "e", "s"], m)], ["ss:0"], [np.ascontiguousarray(ref)])

# ---- pads ----

xp = vals([3, 4], 16)
pads = np.array([[1, 2], [2, 3]], np.int32)
case("pads", [("x", xp)], [("p", pads), ("c", np.array(7.5, np.float32))],
     [node("pad", "Pad", ["x", "p"]), node("pad2", "PadV2", ["x", "p", "c"]),
      node("refl", "MirrorPad", ["x", "p"], {"mode": ["s", "REFLECT"]}),
      node("sym", "MirrorPad", ["x", "p"], {"mode": ["s", "SYMMETRIC"]})],
     ["pad:0", "pad2:0", "refl:0", "sym:0"],
     [np.pad(xp, pads), np.pad(xp, pads, constant_values=7.5), np.pad(xp, pads, mode="reflect"),
      np.pad(xp, pads, mode="symmetric")])

# ---- reductions ----

xr = vals([2, 3, 4], 17, 2.0)
ax = np.array([0, -1], np.int32)
case("reductions", [("x", xr)], [("ax", ax), ("one", np.array([1], np.int64)), ("none", np.zeros([0], np.int32))],
     [node("mean", "Mean", ["x", "ax"], {"keep_dims": ["b", True]}),
      node("sum", "Sum", ["x", "one"], {"keep_dims": ["b", False]}),
      node("max", "Max", ["x", "ax"]), node("min", "Min", ["x", "one"], {"keep_dims": ["b", True]}),
      node("prod", "Prod", ["x", "ax"], domain=""), node("noop", "Sum", ["x", "none"])],
     ["mean:0", "sum:0", "max:0", "min:0", "prod:0", "noop:0"],
     [xr.mean((0, 2), keepdims=True), xr.sum(1), xr.max((0, 2)), xr.min(1, keepdims=True),
      xr.prod((0, 2)).astype(np.float32), xr])

# ---- arithmetic ----

p, q = vals([2, 3], 18, 3.0), vals([3], 19, 2.0) + np.float32(2.5)
pi = np.array([[7, -7, 5], [-5, 9, -9]], np.int32)
qi = np.array([2, -3, 4], np.int32)
arith = [("AddV2", p + q), ("RealDiv", p / q), ("Sub", p - q), ("Mul", p * q), ("Maximum", np.maximum(p, q)),
         ("Minimum", np.minimum(p, q)), ("SquaredDifference", (p - q) ** 2),
         ("FloorDiv", np.floor_divide(p, -q)), ("FloorMod", np.mod(p, -q))]
case("arithmetic", [("p", p), ("q", q)], [("nq", -q)],
     [node(op.lower(), op, ["p", "nq" if op.startswith("Floor") else "q"]) for op, _ in arith],
     [op.lower() + ":0" for op, _ in arith], [r.astype(np.float32) for _, r in arith], atol=1e-5)
case("int_floor_ops", [("p", pi), ("q", qi)], [],
     [node("fd", "FloorDiv", ["p", "q"]), node("fm", "FloorMod", ["p", "q"])], ["fd:0", "fm:0"],
     [np.floor_divide(pi, qi), np.mod(pi, qi)])
pu = np.abs(p) + np.float32(0.5)
unary = [("Rsqrt", 1 / np.sqrt(pu)), ("Square", pu * pu), ("Sqrt", np.sqrt(pu)), ("Exp", np.exp(pu)),
         ("Log", np.log(pu)), ("Neg", -pu), ("Abs", np.abs(pu)), ("Tanh", np.tanh(pu)),
         ("Sigmoid", 1 / (1 + np.exp(-pu))), ("Pow", pu ** pu)]
case("unary", [("x", pu)], [],
     [node(op.lower(), op, ["x", "x"] if op == "Pow" else ["x"]) for op, _ in unary],
     [op.lower() + ":0" for op, _ in unary], [r.astype(np.float32) for _, r in unary], atol=1e-4)

# ---- array ops ----

xa3 = vals([2, 3, 4], 20)
ya3 = vals([2, 1, 4], 21)
idx = np.array([[2, 0], [1, 1]], np.int32)
case("array_ops", [("x", xa3), ("y", ya3)],
     [("axis1", np.array(1, np.int32)), ("idx", idx), ("perm", np.array([2, 0, 1], np.int32)),
      ("mult", np.array([1, 2, 1], np.int32)), ("neg1", np.array(-1, np.int32))],
     [node("cat", "ConcatV2", ["x", "y", "axis1"], {"N": ["i", 2]}),
      node("pack", "Pack", ["x", "x"], {"axis": ["i", -1], "N": ["i", 2]}),
      node("unpack", "Unpack", ["x"], {"axis": ["i", 1], "num": ["i", 3]}, outputs=3),
      node("gather", "GatherV2", ["x", "idx", "axis1"]),
      node("tr", "Transpose", ["x", "perm"]), node("tile", "Tile", ["y", "mult"]),
      node("ed", "ExpandDims", ["y", "neg1"]), node("sq", "Squeeze", ["y"], {"squeeze_dims": ["ints", [1]]}),
      node("cast", "Cast", ["x"], {"DstT": ["dt", "int32"]})],
     ["cat:0", "pack:0", "unpack:0", "unpack:2", "gather:0", "tr:0", "tile:0", "ed:0", "sq:0", "cast:0"],
     [np.concatenate([xa3, ya3], 1), np.stack([xa3, xa3], -1), xa3[:, 0], xa3[:, 2], np.take(xa3, idx, 1),
      np.transpose(xa3, (2, 0, 1)), np.tile(ya3, (1, 2, 1)), ya3[..., None], ya3[:, 0],
      (xa3 * 1).astype(np.int32)])

# GE's spellings of the array ops' attributes: Cast's dst_type (a ge::DataType int: 3 int32,
# 9 int64), DstT as such an int, Squeeze's axis (and none: every dim of 1).
xq = vals([1, 2, 1, 4], 43, 4.0)
case("array_ops_ge_spellings", [("x", xq)], [],
     [node("cast_dst_type", "Cast", ["x"], {"dst_type": ["dt_int", 3]}),
      node("cast_dstt_int", "Cast", ["x"], {"DstT": ["dt_int", 9]}),
      node("sq_axis", "Squeeze", ["x"], {"axis": ["ints", [-2]]}),
      node("sq_all", "Squeeze", ["x"])],
     ["cast_dst_type:0", "cast_dstt_int:0", "sq_axis:0", "sq_all:0"],
     [np.trunc(xq).astype(np.int32), np.trunc(xq).astype(np.int64), xq[:, :, 0], xq[0, :, 0]])

# Shape arithmetic as TF graphs carry it: Shape → StridedSlice → Pack → Reshape.
case("shape_chain", [("x", xa3)],
     [("b0", np.array([0], np.int32)), ("e1", np.array([1], np.int32)), ("s1", np.array([1], np.int32)),
      ("m1", np.array(-1, np.int32))],
     [node("shape", "Shape", ["x"], {"out_type": ["dt_int", 3]}),
      node("n", "StridedSlice", ["shape", "b0", "e1", "s1"], {"shrink_axis_mask": ["i", 1]}),
      node("dims", "Pack", ["n", "m1"], {"N": ["i", 2]}),
      node("flat", "Reshape", ["x", "dims"])],
     ["shape:0", "flat:0"], [np.array([2, 3, 4], np.int32), xa3.reshape(2, -1)])

cond = np.array([True, False], np.bool_)
cond2 = np.array([[True, False, True, False]], np.bool_)
case("fill_range_select", [("x", xa3[:, 0]), ("y", ya3[:, 0])],
     [("dims", np.array([2, 3], np.int32)), ("v", np.array(1.25, np.float32)),
      ("start", np.array(3, np.int32)), ("limit", np.array(-8, np.int32)), ("delta", np.array(-3, np.int32)),
      ("fs", np.array(0.5, np.float32)), ("fl", np.array(2.0, np.float32)), ("fd", np.array(0.4, np.float32)),
      ("c", cond), ("c2", cond2)],
     [node("fill", "Fill", ["dims", "v"]), node("range", "Range", ["start", "limit", "delta"]),
      node("frange", "Range", ["fs", "fl", "fd"]),
      node("sel", "Select", ["c", "x", "y"]), node("sel2", "SelectV2", ["c2", "x", "y"])],
     ["fill:0", "range:0", "frange:0", "sel:0", "sel2:0"],
     [np.full([2, 3], 1.25, np.float32), np.arange(3, -8, -3, dtype=np.int32),
      np.array([0.5 + i * np.float32(0.4) for i in range(4)], np.float32),
      np.where(cond[:, None], xa3[:, 0], ya3[:, 0]), np.where(cond2, xa3[:, 0], ya3[:, 0])])

# ---- resizes (TF's scalers) ----

def tf_scale(i, o, align):
    return (i - 1) / (o - 1) if align and o > 1 else i / o


def resize_bilinear(x, oh, ow, align, half):
    n, h, w, c = x.shape
    def coords(i, o):
        s = tf_scale(i, o, align)
        src = (np.arange(o) + 0.5) * s - 0.5 if half else np.arange(o) * s
        lo = np.floor(src)
        lerp = src - lo
        return np.clip(lo, 0, i - 1).astype(int), np.clip(np.ceil(src), 0, i - 1).astype(int), lerp
    yl, yh, yf = coords(h, oh)
    xl, xh, xf = coords(w, ow)
    x64 = x.astype(np.float64)
    top = x64[:, yl][:, :, xl] * (1 - xf)[None, None, :, None] + x64[:, yl][:, :, xh] * xf[None, None, :, None]
    bot = x64[:, yh][:, :, xl] * (1 - xf)[None, None, :, None] + x64[:, yh][:, :, xh] * xf[None, None, :, None]
    return (top * (1 - yf)[None, :, None, None] + bot * yf[None, :, None, None]).astype(np.float32)


def resize_nearest(x, oh, ow, align, half):
    n, h, w, c = x.shape
    def src(i, o):
        s = tf_scale(i, o, align)
        v = (np.arange(o) + 0.5) * s if half else np.arange(o) * s
        # TF rounds half away from zero (roundf), not to even as np.round does.
        v = np.floor(v + 0.5) if align else np.floor(v)
        return np.minimum(v.astype(int), i - 1)
    return x[:, src(h, oh)][:, :, src(w, ow)]


xi = vals([1, 4, 5, 2], 22, 10.0)
for name, align, half in [("legacy", False, False), ("align", True, False), ("half", False, True)]:
    flags = {"align_corners": ["b", align], "half_pixel_centers": ["b", half]}
    case("resize_" + name, [("x", xi)], [("size", np.array([7, 3], np.int32))],
         [node("bl", "ResizeBilinear", ["x", "size"], flags), node("nn", "ResizeNearestNeighbor", ["x", "size"], flags)],
         ["bl:0", "nn:0"], [resize_bilinear(xi, 7, 3, align, half), resize_nearest(xi, 7, 3, align, half)])

# ---- a TF-style CNN end to end ----

xc = vals([2, 8, 8, 3], 23)
wc = vals([3, 3, 3, 4], 24, 0.4)
bc = vals([4], 25, 0.1)
sc, oc, mc, vc = vals([4], 26) + 1.2, vals([4], 27, 0.2), vals([4], 28, 0.3), vals([4], 29, 0.2) + 0.5
wf = vals([64, 5], 30, 0.3)
bf = vals([5], 31, 0.1)
h1 = conv_nhwc(xc, wc, (1, 1), (1, 1), [same_pads(8, 3, 1, 1)] * 2) + bc
h2 = (h1 - mc) / np.sqrt(vc + 1e-3) * sc + oc
h3 = np.clip(h2, 0, 6)
h4 = pool_nhwc(h3.astype(np.float32), (2, 2), (2, 2), [(0, 0), (0, 0)], "max")
h5 = h4.reshape(2, 64).astype(np.float64) @ wf + bf
logits = np.exp(h5 - h5.max(1, keepdims=True))
probs = (logits / logits.sum(1, keepdims=True)).astype(np.float32)
case("tf_cnn", [("x", xc)],
     [("wc", wc), ("bc", bc), ("sc", sc), ("oc", oc), ("mc", mc), ("vc", vc),
      ("shape", np.array([-1, 64], np.int32)), ("wf", wf), ("bf", bf)],
     [node("conv", "Conv2D", ["x", "wc"], conv_attrs([1, 1, 1, 1], "SAME")),
      node("bias", "BiasAdd", ["conv:0", "bc"]),
      node("bn", "FusedBatchNormV3", ["bias", "sc", "oc", "mc", "vc"],
           {"epsilon": ["f", 1e-3], "is_training": ["b", False]}, outputs=6),
      node("relu6", "Relu6", ["bn:0"]),
      node("pool", "MaxPool", ["relu6"], pool_attrs([1, 2, 2, 1], [1, 2, 2, 1], "VALID")),
      node("flat", "Reshape", ["pool", "shape"]),
      node("fc", "MatMul", ["flat", "wf"]),
      node("fc_bias", "BiasAdd", ["fc", "bf"]),
      node("probs", "Softmax", ["fc_bias"])],
     ["probs:0"], [probs])

with open(OUT, "w") as f:
    json.dump({"generator": "scripts/gen_cpu_tf_test_data.py", "cases": CASES}, f, separators=(",", ":"))
print(f"{len(CASES)} cases -> {OUT}")
