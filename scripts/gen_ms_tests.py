"""The com.microsoft cases of gen_ml_ms_tests.py: single-op graphs (expected outputs from
onnxruntime's CPU kernels; where onnxruntime has no CPU kernel for an op, from onnxruntime
running the equivalent default-domain graph), and small BERT-like, GPT-2-like and CNN graphs
after onnxruntime's own optimizations."""

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

MS = "com.microsoft"
F, I64, I32, U8, I8 = TensorProto.FLOAT, TensorProto.INT64, TensorProto.INT32, TensorProto.UINT8, TensorProto.INT8
NP2ONNX = {np.float32: F, np.int64: I64, np.int32: I32, np.uint8: U8, np.int8: I8}


def _onnx_type(a):
    return NP2ONNX[a.dtype.type]


def single(op, inputs, outputs, consts=(), domain=MS, **attrs):
    """A model of one node. `inputs`: (name, array or None) in order, None an omitted input;
    names in `consts` become initializers; `outputs`: (name, onnx type)."""
    node = helper.make_node(op, [n if a is not None else "" for n, a in inputs], [n if t else "" for n, t in outputs], domain=domain, **attrs)
    g_in, inits, feeds = [], [], {}
    for n, a in inputs:
        if a is None:
            continue
        if n in consts:
            inits.append(numpy_helper.from_array(a, n))
        else:
            g_in.append(helper.make_tensor_value_info(n, _onnx_type(a), a.shape))
            feeds[n] = a
    g_out = [helper.make_tensor_value_info(n, t, None) for n, t in outputs if t]
    graph = helper.make_graph([node], op, g_in, g_out, initializer=inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)], ir_version=9
    )
    return model, feeds


def _f(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def _u8(rng, *shape):
    return rng.integers(0, 256, size=shape).astype(np.uint8)


def _i8(rng, *shape):
    return rng.integers(-128, 128, size=shape).astype(np.int8)


def _s(v):
    return np.array(v, np.float32)


def _fusions(rng):
    x = _f(rng, 2, 3, 8)
    b8 = _f(rng, 8)
    yield "gelu", *single("Gelu", [("X", x)], [("Y", F)])
    yield "fast_gelu", *single("FastGelu", [("X", x), ("bias", b8)], [("Y", F)], consts={"bias"})
    yield "fast_gelu_no_bias", *single("FastGelu", [("X", x)], [("Y", F)])
    yield "bias_gelu", *single("BiasGelu", [("A", x), ("B", b8)], [("C", F)], consts={"B"})
    yield "quick_gelu", *single("QuickGelu", [("X", x)], [("Y", F)], alpha=1.702)
    yield "bias_add", *single("BiasAdd", [("X", x), ("bias", b8), ("skip", _f(rng, 2, 3, 8))], [("Y", F)], consts={"bias"})
    yield "bias_split_gelu", *single("BiasSplitGelu", [("X", x), ("bias", b8)], [("Y", F)], consts={"bias"})
    g, be = (_f(rng, 8) * 0.5 + 1).astype(np.float32), _f(rng, 8)
    yield "skip_layer_norm", *single(
        "SkipLayerNormalization",
        [("input", x), ("skip", _f(rng, 2, 3, 8)), ("gamma", g), ("beta", be), ("bias", b8)],
        [("output", F)], consts={"gamma", "beta", "bias"}, epsilon=1e-5)
    yield "skip_layer_norm_minimal_sum_output", *single(
        "SkipLayerNormalization",
        [("input", x), ("skip", _f(rng, 2, 3, 8)), ("gamma", g)],
        [("output", F), ("mean", None), ("inv_std", None), ("sum", F)], consts={"gamma"})
    yield "skip_simplified_layer_norm", *single(
        "SkipSimplifiedLayerNormalization",
        [("input", x), ("skip", _f(rng, 2, 3, 8)), ("gamma", g), ("bias", b8)],
        [("output", F)], consts={"gamma", "bias"}, epsilon=1e-6)
    yield "simplified_layer_norm", *single(
        "SimplifiedLayerNormalization", [("X", x), ("scale", g)], [("Y", F)],
        consts={"scale"}, domain="", axis=-1, epsilon=1e-5)
    ids = rng.integers(0, 10, size=(2, 5)).astype(np.int32)
    seg = rng.integers(0, 2, size=(2, 5)).astype(np.int32)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int32)
    yield "embed_layer_norm", *single(
        "EmbedLayerNormalization",
        [("input_ids", ids), ("segment_ids", seg), ("word_embedding", _f(rng, 10, 8)),
         ("position_embedding", _f(rng, 16, 8)), ("segment_embedding", _f(rng, 2, 8)),
         ("gamma", g), ("beta", be), ("mask", mask)],
        [("output", F), ("mask_index", I32)],
        consts={"word_embedding", "position_embedding", "segment_embedding", "gamma", "beta"}, epsilon=1e-12)
    xa = _f(rng, 2, 4, 8)
    w, bias = (_f(rng, 8, 24) * 0.3).astype(np.float32), _f(rng, 24)
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], np.int32)
    yield "attention", *single(
        "Attention", [("input", xa), ("weights", w), ("bias", bias), ("mask_index", mask)],
        [("output", F)], consts={"weights", "bias"}, num_heads=2)
    yield "attention_unidirectional", *single(
        "Attention", [("input", xa), ("weights", w), ("bias", bias)],
        [("output", F)], consts={"weights", "bias"}, num_heads=2, unidirectional=1)
    yield "multi_head_attention", *single(
        "MultiHeadAttention", [("query", xa), ("key", _f(rng, 2, 6, 8)), ("value", _f(rng, 2, 6, 8))],
        [("output", F)], num_heads=2)
    yield "multi_head_attention_bias_mask", *single(
        "MultiHeadAttention",
        [("query", xa), ("key", _f(rng, 2, 6, 8)), ("value", _f(rng, 2, 6, 8)), ("bias", _f(rng, 24)),
         ("key_padding_mask", np.array([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], np.int32))],
        [("output", F)], consts={"bias"}, num_heads=2)
    # Past state (GPT-2-style decoding: 4 cached positions, 3 new ones), own generator so the
    # other cases' inputs stay as they were.
    prng = np.random.default_rng(7)
    xp, wp, bp = _f(prng, 2, 3, 8), (_f(prng, 8, 24) * 0.3).astype(np.float32), _f(prng, 24)
    keep7 = np.array([[1, 1, 1, 1, 1, 1, 1], [0, 1, 1, 1, 1, 1, 0]], np.int32)
    yield "attention_past_unidirectional", *single(
        "Attention", [("input", xp), ("weights", wp), ("bias", bp), ("mask_index", keep7), ("past", _f(prng, 2, 2, 2, 4, 4))],
        [("output", F), ("present", F)], consts={"weights", "bias"}, num_heads=2, unidirectional=1)
    yield "attention_past", *single(
        "Attention", [("input", xp), ("weights", wp), ("bias", bp), ("mask_index", None), ("past", _f(prng, 2, 2, 2, 4, 4))],
        [("output", F), ("present", F)], consts={"weights", "bias"}, num_heads=2)
    yield "multi_head_attention_past", *single(
        "MultiHeadAttention",
        [("query", xp), ("key", _f(prng, 2, 3, 8)), ("value", _f(prng, 2, 3, 8)), ("bias", None),
         ("key_padding_mask", keep7), ("attention_bias", None),
         ("past_key", _f(prng, 2, 2, 4, 4)), ("past_value", _f(prng, 2, 2, 4, 4))],
        [("output", F), ("present_key", F), ("present_value", F)], num_heads=2, unidirectional=1)
    yield "group_query_attention", *single(
        "GroupQueryAttention",
        [("query", _f(rng, 1, 3, 32)), ("key", _f(rng, 1, 3, 16)), ("value", _f(rng, 1, 3, 16)),
         ("past_key", np.zeros((1, 2, 3, 8), np.float32)), ("past_value", np.zeros((1, 2, 3, 8), np.float32)),
         ("seqlens_k", np.array([2], np.int32)), ("total_sequence_length", np.array(3, np.int32))],
        [("output", F), ("present_key", F), ("present_value", F)],
        consts={"seqlens_k", "total_sequence_length"}, num_heads=4, kv_num_heads=2)
    pos = np.array([[0, 1, 2]], np.int64)
    cos = np.cos(np.arange(8)[:, None] * np.array([1.0, 0.1])[None]).astype(np.float32)
    sin = np.sin(np.arange(8)[:, None] * np.array([1.0, 0.1])[None]).astype(np.float32)
    for inter in (0, 1):
        yield f"rotary_embedding_interleaved_{inter}", *single(
            "RotaryEmbedding",
            [("input", _f(rng, 1, 3, 8)), ("position_ids", pos), ("cos_cache", cos), ("sin_cache", sin)],
            [("output", F)], consts={"cos_cache", "sin_cache"}, interleaved=inter, num_heads=2)
    xc, wc, bc = _f(rng, 1, 2, 5, 5), _f(rng, 3, 2, 3, 3), _f(rng, 3)
    yield "fused_conv_relu", *single(
        "FusedConv", [("X", xc), ("W", wc), ("B", bc)], [("Y", F)], consts={"W", "B"},
        activation="Relu", pads=[1, 1, 1, 1])
    yield "fused_conv_leaky_relu_sum", *single(
        "FusedConv", [("X", xc), ("W", wc), ("B", bc), ("Z", _f(rng, 1, 3, 3, 3))], [("Y", F)], consts={"W", "B"},
        activation="LeakyRelu", activation_params=[0.1])
    yield "fused_conv_clip", *single(
        "FusedConv", [("X", xc), ("W", wc)], [("Y", F)], consts={"W"},
        activation="Clip", activation_params=[-0.5, 0.5], strides=[2, 2])
    yield "nhwc_conv", *single(
        "NhwcConv", [("X", _f(rng, 1, 5, 5, 2)), ("W", wc), ("B", bc)], [("Y", F)], consts={"W", "B"}, pads=[1, 1, 1, 1])
    a, bm = _f(rng, 3, 4), _f(rng, 4, 5)
    yield "fused_gemm_relu", *single(
        "FusedGemm", [("A", a), ("B", bm), ("C", _f(rng, 5))], [("Y", F)], consts={"B", "C"},
        activation="Relu", alpha=0.5, beta=2.0)
    yield "fused_gemm_leaky_relu_trans", *single(
        "FusedGemm", [("A", a.T.copy()), ("B", bm.T.copy())], [("Y", F)], consts={"B"},
        activation="LeakyRelu", activation_alpha=0.2, transA=1, transB=1)
    yield "fused_matmul", *single(
        "FusedMatMul", [("A", _f(rng, 2, 3, 4)), ("B", _f(rng, 2, 5, 4))], [("Y", F)], alpha=0.5, transB=1)
    yield "fused_matmul_trans_a", *single(
        "FusedMatMul", [("A", _f(rng, 4, 3)), ("B", _f(rng, 2, 4, 5))], [("Y", F)], transA=1)
    yield "trilu_lower", *single(
        "Trilu", [("X", _f(rng, 4, 5)), ("k", np.array(1, np.int64))], [("Y", F)], consts={"k"}, upper=0)
    yield "gather_nd", *single(
        "GatherND", [("data", _f(rng, 2, 3, 4)), ("indices", np.array([[1, 2], [0, 1]], np.int64))], [("Y", F)])


def _quant(rng):
    x = _f(rng, 2, 6)
    yield "quantize_linear", *single(
        "QuantizeLinear", [("x", x), ("s", _s(0.02)), ("zp", np.array(128, np.uint8))], [("y", U8)], consts={"s", "zp"})
    yield "quantize_linear_per_axis_int8", *single(
        "QuantizeLinear", [("x", x), ("s", _s([0.01, 0.02, 0.03, 0.04, 0.05, 0.06])), ("zp", np.zeros(6, np.int8))],
        [("y", I8)], consts={"s", "zp"}, axis=1)
    yield "dequantize_linear", *single(
        "DequantizeLinear", [("x", _u8(rng, 2, 6)), ("s", _s(0.02)), ("zp", np.array(100, np.uint8))], [("y", F)],
        consts={"s", "zp"})
    qa, qb = _u8(rng, 2, 6), _u8(rng, 6)
    params = lambda p, s, z: [(p + "_s", _s(s)), (p + "_zp", np.array(z, np.uint8))]
    for op in ("QLinearAdd", "QLinearMul"):
        name = "qlinear_add" if op == "QLinearAdd" else "qlinear_mul"
        ins = [("A", qa), *params("A", 0.05, 120), ("B", qb), *params("B", 0.03, 130), *params("C", 0.1 if op == "QLinearAdd" else 0.2, 128)]
        yield name, *single(op, ins, [("C", U8)], consts={n for n, _ in ins if n not in ("A", "B")})
    for op, name, extra in (("QLinearSigmoid", "qlinear_sigmoid", {}), ("QLinearLeakyRelu", "qlinear_leaky_relu", {"alpha": 0.1})):
        ins = [("X", qa), *params("X", 0.05, 128), *params("Y", 0.004 if op == "QLinearSigmoid" else 0.04, 0 if op == "QLinearSigmoid" else 100)]
        yield name, *single(op, ins, [("Y", U8)], consts={n for n, _ in ins if n != "X"}, **extra)
    xi8 = _i8(rng, 2, 6)
    ins = [("X", xi8), ("X_s", _s(0.05)), ("X_zp", np.array(-3, np.int8)), ("Y_s", _s(0.04)), ("Y_zp", np.array(5, np.int8))]
    yield "qlinear_leaky_relu_int8", *single("QLinearLeakyRelu", ins, [("Y", I8)], consts={"X_s", "X_zp", "Y_s", "Y_zp"}, alpha=0.2)
    ins = [*params("Y", 0.05, 128), ("A", _u8(rng, 2, 3)), *params("A", 0.03, 120), ("B", _u8(rng, 2, 2)), *params("B", 0.07, 140)]
    yield "qlinear_concat", *single("QLinearConcat", ins, [("Y", U8)], consts={n for n, _ in ins if n not in ("A", "B")}, axis=1)
    ins = [("X", _u8(rng, 1, 3, 4, 4)), *params("X", 0.05, 128), *params("Y", 0.03, 120)]
    yield "qlinear_global_average_pool", *single("QLinearGlobalAveragePool", ins, [("Y", U8)], consts={n for n, _ in ins if n != "X"}, channels_last=0)
    ins = [("X", _u8(rng, 1, 2, 5, 5)), *params("X", 0.05, 128), *params("Y", 0.04, 125)]
    yield "qlinear_average_pool", *single("QLinearAveragePool", ins, [("Y", U8)], consts={n for n, _ in ins if n != "X"},
                                          kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1], count_include_pad=0)
    a, b = _u8(rng, 3, 4), _i8(rng, 4, 5)
    base = [("A", a), ("a_s", _s(0.02)), ("a_zp", np.array(120, np.uint8)), ("B", b), ("b_s", _s(0.03)), ("b_zp", np.array(2, np.int8))]
    c = rng.integers(-500, 500, size=(5,)).astype(np.int32)
    yield "qgemm_float_output", *single("QGemm", base + [("C", c)], [("Y", F)], consts={"a_s", "a_zp", "B", "b_s", "b_zp", "C"}, alpha=1.0)
    yield "qgemm_uint8_output", *single("QGemm", base + [("C", c), ("y_s", _s(0.1)), ("y_zp", np.array(128, np.uint8))], [("Y", U8)],
                                        consts={"a_s", "a_zp", "B", "b_s", "b_zp", "C", "y_s", "y_zp"})
    af = _f(rng, 3, 4)
    # Int8 weights in [-64, 63] for the dynamically quantized ops: onnxruntime's AVX2 u8s8
    # kernels (no VNNI) add pairs of u8·s8 products in saturating int16, so with full-range
    # weights their outputs (the expected ones) are wrong on such machines (an AMD EPYC).
    b = b // 2
    yield "dynamic_quantize_matmul", *single(
        "DynamicQuantizeMatMul", [("A", af), ("B", b), ("b_s", _s(0.03)), ("b_zp", np.array(3, np.int8)), ("bias", _f(rng, 5))],
        [("Y", F)], consts={"B", "b_s", "b_zp", "bias"})
    yield "dynamic_quantize_matmul_per_column", *single(
        "DynamicQuantizeMatMul", [("A", af), ("B", b), ("b_s", _s([0.01, 0.02, 0.03, 0.04, 0.05]))],
        [("Y", F)], consts={"B", "b_s"})
    yield "matmul_integer_to_float", *single(
        "MatMulIntegerToFloat",
        [("A", a), ("B", b), ("a_s", _s(0.02)), ("b_s", _s([0.01, 0.02, 0.03, 0.04, 0.05])),
         ("a_zp", np.array(120, np.uint8)), ("b_zp", np.array(1, np.int8)), ("bias", _f(rng, 5))],
        [("Y", F)], consts={"B", "a_s", "b_s", "a_zp", "b_zp", "bias"})
    k, n, block = 32, 5, 16
    blocks = k // block
    packed = _u8(rng, n, blocks, block // 2)
    yield "matmul_nbits", *single(
        "MatMulNBits",
        [("A", _f(rng, 3, k)), ("B", packed), ("scales", (np.abs(_f(rng, n * blocks)) * 0.1).astype(np.float32)),
         ("zero_points", _u8(rng, n * ((blocks * 4 + 7) // 8)))],
        [("Y", F)], consts={"B", "scales", "zero_points"}, K=k, N=n, bits=4, block_size=block)
    yield "matmul_nbits_no_zero_points", *single(
        "MatMulNBits",
        [("A", _f(rng, 2, k)), ("B", packed), ("scales", (np.abs(_f(rng, n * blocks)) * 0.1).astype(np.float32))],
        [("Y", F)], consts={"B", "scales"}, K=k, N=n, bits=4, block_size=block)
    h, inp = 3, 4
    yield "dynamic_quantize_lstm", *single(
        "DynamicQuantizeLSTM",
        [("X", _f(rng, 2, 1, inp)), ("W", _i8(rng, 1, inp, 4 * h) // 2), ("R", _i8(rng, 1, h, 4 * h) // 2),
         ("B", (_f(rng, 1, 8 * h) * 0.1).astype(np.float32)), ("sequence_lens", None), ("initial_h", None), ("initial_c", None), ("P", None),
         ("W_scale", _s([0.01])), ("W_zero_point", np.zeros(1, np.int8)),
         ("R_scale", _s([0.02])), ("R_zero_point", np.zeros(1, np.int8))],
        [("Y", F), ("Y_h", F), ("Y_c", F)],
        consts={"W", "R", "B", "W_scale", "W_zero_point", "R_scale", "R_zero_point"}, hidden_size=h)


def _reference_graph(name, model, feeds):
    """For ops onnxruntime has no CPU kernel for: the expected outputs from onnxruntime running
    the same computation written with default-domain ops."""
    if name == "nhwc_conv":
        node = model.graph.node[0]
        g = helper.make_graph(
            [helper.make_node("Transpose", ["X"], ["Xt"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["Xt", "W", "B"], ["Yt"], pads=[1, 1, 1, 1]),
             helper.make_node("Transpose", ["Yt"], ["Y"], perm=[0, 2, 3, 1])],
            "ref", list(model.graph.input), list(model.graph.output), initializer=list(model.graph.initializer))
        del node
    elif name == "bias_add":
        g = helper.make_graph(
            [helper.make_node("Add", ["X", "bias"], ["t"]), helper.make_node("Add", ["t", "skip"], ["Y"])],
            "ref", list(model.graph.input), list(model.graph.output), initializer=list(model.graph.initializer))
    elif name == "bias_split_gelu":
        g = helper.make_graph(
            [helper.make_node("Add", ["X", "bias"], ["t"]),
             helper.make_node("Split", ["t"], ["l", "r"], axis=-1, num_outputs=2),
             helper.make_node("Gelu", ["r"], ["gr"]), helper.make_node("Mul", ["l", "gr"], ["Y"])],
            "ref", list(model.graph.input), list(model.graph.output), initializer=list(model.graph.initializer))
    else:
        return None
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)], ir_version=9)
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def ms_tests(rng):
    for name, model, feeds in list(_fusions(rng)) + list(_quant(rng)):
        try:
            ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        except Exception:
            ref = _reference_graph(name, model, feeds)
            if ref is None:
                raise
            model.doc_string = "expected outputs: onnxruntime on the default-domain equivalent (no CPU kernel)"
            yield name, model, (feeds, ref)
            continue
        yield name, model, feeds


def _layer_norm(x, g, b, out):
    return helper.make_node("LayerNormalization", [x, g, b], [out], axis=-1, epsilon=1e-5)


def _transformer(rng, causal, torch_style=False):
    """A one-layer transformer encoder (BERT-like) or decoder (GPT-2-like) block written with
    default-domain ops, as exporters write them. `torch_style` (BERT): the embeddings and the
    mask as PyTorch's BERT export writes them (word, token-type and sliced position Gathers;
    two Unsqueezes, then the Cast), the forms onnxruntime's transformer optimizer fuses into
    EmbedLayerNormalization and Attention."""
    b, s, h, heads = 2, 5, 16, 2
    d = h // heads
    inits = {}

    def w(name, *shape, scale=0.3):
        inits[name] = (rng.standard_normal(shape) * scale).astype(np.float32)
        return name

    def c(name, v):
        inits[name] = np.array(v)
        return name

    if torch_style and not causal:
        nodes = [
            helper.make_node("Gather", [w("wte", 20, h), "input_ids"], ["tok"]),
            helper.make_node("Gather", [w("wtt", 2, h), "token_type_ids"], ["typ"]),
            helper.make_node("Add", ["tok", "typ"], ["tok_typ"]),
            helper.make_node("Shape", ["input_ids"], ["ids_shape"]),
            helper.make_node("Gather", ["ids_shape", c("one_i", np.array(1, np.int64))], ["seq_len"], axis=0),
            helper.make_node("Unsqueeze", ["seq_len", c("ax0", np.array([0], np.int64))], ["seq_end"]),
            helper.make_node("Slice", [c("position_ids", np.arange(16, dtype=np.int64)[None]), c("zero_i", np.array([0], np.int64)),
                                       "seq_end", c("ax1_s", np.array([1], np.int64)), c("step1", np.array([1], np.int64))], ["pos_ids"]),
            helper.make_node("Gather", [w("wpe", 16, h), "pos_ids"], ["pos"]),
            helper.make_node("Add", ["tok_typ", "pos"], ["emb"]),
        ]
    else:
        nodes = [
            helper.make_node("Gather", [w("wte", 20, h), "input_ids"], ["tok"]),
            helper.make_node("Add", ["tok", w("wpe", s, h)], ["emb"]),
        ]
    ln = "emb"
    if not causal:
        nodes.append(_layer_norm("emb", w("ln0_g", h), w("ln0_b", h), "x0"))
        ln = "x0"
    x = ln
    if causal:
        nodes.append(_layer_norm(x, w("ln1_g", h), w("ln1_b", h), "xa"))
        x = "xa"
    for p in "qkv":
        nodes += [
            helper.make_node("MatMul", [x, w(f"w{p}", h, h)], [f"{p}m"]),
            helper.make_node("Add", [f"{p}m", w(f"b{p}", h)], [f"{p}b"]),
            helper.make_node("Reshape", [f"{p}b", c("shape_bsnd", np.array([0, 0, heads, d], np.int64))], [f"{p}r"]),
            helper.make_node("Transpose", [f"{p}r"], [f"{p}t"], perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3]),
        ]
    nodes += [
        helper.make_node("MatMul", ["qt", "kt"], ["qk"]),
        helper.make_node("Div", ["qk", c("sqrt_d", np.array(np.sqrt(d), np.float32))], ["qks"]),
    ]
    if causal:
        tri = np.triu(np.full((s, s), -10000.0, np.float32), 1)
        nodes.append(helper.make_node("Add", ["qks", c("causal", tri)], ["qkm"]))
    else:
        # The attention mask, as BERT exporters write it: (1 - mask) * -10000 added to the scores.
        if torch_style:
            nodes += [
                helper.make_node("Unsqueeze", ["attention_mask", c("ax1", np.array([1], np.int64))], ["m3"]),
                helper.make_node("Unsqueeze", ["m3", c("ax2", np.array([2], np.int64))], ["m4"]),
            ]
        else:
            nodes.append(helper.make_node("Unsqueeze", ["attention_mask", c("ax12", np.array([1, 2], np.int64))], ["m4"]))
        nodes += [
            helper.make_node("Cast", ["m4"], ["mf"], to=F),
            helper.make_node("Sub", [c("one", np.array(1.0, np.float32)), "mf"], ["inv"]),
            helper.make_node("Mul", ["inv", c("neg", np.array(-10000.0, np.float32))], ["madd"]),
            helper.make_node("Add", ["qks", "madd"], ["qkm"]),
        ]
    nodes += [
        helper.make_node("Softmax", ["qkm"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "vt"], ["ctx"]),
        helper.make_node("Transpose", ["ctx"], ["ctxt"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctxt", c("shape_bsh", np.array([0, 0, h], np.int64))], ["ctxr"]),
        helper.make_node("MatMul", ["ctxr", w("wo", h, h)], ["om"]),
        helper.make_node("Add", ["om", w("bo", h)], ["ob"]),
        helper.make_node("Add", ["ob", ln], ["res1"]),
    ]
    if causal:
        nodes.append(_layer_norm("res1", w("ln2_g", h), w("ln2_b", h), "xf"))
        y = "res1"
    else:
        nodes.append(_layer_norm("res1", w("ln1_g", h), w("ln1_b", h), "xf"))
        y = "xf"
    nodes += [
        helper.make_node("MatMul", ["xf", w("w1", h, 4 * h)], ["f1"]),
        helper.make_node("Add", ["f1", w("b1", 4 * h)], ["f1b"]),
    ]
    if causal:
        # GPT-2's tanh approximation of GELU.
        nodes += [
            helper.make_node("Pow", ["f1b", c("three", np.array(3.0, np.float32))], ["cube"]),
            helper.make_node("Mul", ["cube", c("k0", np.array(0.044715, np.float32))], ["t0"]),
            helper.make_node("Add", ["f1b", "t0"], ["t1"]),
            helper.make_node("Mul", ["t1", c("k1", np.array(np.sqrt(2 / np.pi), np.float32))], ["t2"]),
            helper.make_node("Tanh", ["t2"], ["t3"]),
            helper.make_node("Add", ["t3", c("one_g", np.array(1.0, np.float32))], ["t4"]),
        ]
        if torch_style:
            # 0.5·x first, as the GPT-2 exports write it: the form fused into FastGelu.
            nodes += [
                helper.make_node("Mul", ["f1b", c("half", np.array(0.5, np.float32))], ["t5"]),
                helper.make_node("Mul", ["t5", "t4"], ["act"]),
            ]
        else:
            nodes += [
                helper.make_node("Mul", ["f1b", "t4"], ["t5"]),
                helper.make_node("Mul", ["t5", c("half", np.array(0.5, np.float32))], ["act"]),
            ]
    else:
        # BERT's erf GELU.
        nodes += [
            helper.make_node("Div", ["f1b", c("sqrt2", np.array(np.sqrt(2), np.float32))], ["e0"]),
            helper.make_node("Erf", ["e0"], ["e1"]),
            helper.make_node("Add", ["e1", c("one_e", np.array(1.0, np.float32))], ["e2"]),
            helper.make_node("Mul", ["f1b", "e2"], ["e3"]),
            helper.make_node("Mul", ["e3", c("half", np.array(0.5, np.float32))], ["act"]),
        ]
    nodes += [
        helper.make_node("MatMul", ["act", w("w2", 4 * h, h)], ["f2"]),
        helper.make_node("Add", ["f2", w("b2", h)], ["f2b"]),
        helper.make_node("Add", ["f2b", y], ["res2"]),
    ]
    last = "res2"
    nodes.append(_layer_norm(last, w("lnf_g", h), w("lnf_b", h), "hidden"))
    inputs = [helper.make_tensor_value_info("input_ids", I64, [b, s])]
    feeds = {"input_ids": rng.integers(0, 20, size=(b, s)).astype(np.int64)}
    if torch_style and not causal:
        inputs.append(helper.make_tensor_value_info("token_type_ids", I64, [b, s]))
        feeds["token_type_ids"] = np.array([[0, 0, 0, 1, 1], [0, 0, 1, 1, 1]], np.int64)
    if not causal:
        inputs.append(helper.make_tensor_value_info("attention_mask", I64, [b, s]))
        feeds["attention_mask"] = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], np.int64)
    graph = helper.make_graph(
        nodes, "gpt2_like" if causal else "bert_like", inputs,
        [helper.make_tensor_value_info("hidden", F, [b, s, h])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), feeds


def _cnn(rng):
    inits = {
        "w1": (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32), "b1": _f(rng, 4),
        "w2": (rng.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32), "b2": _f(rng, 4),
        "fc": (rng.standard_normal((4, 5)) * 0.3).astype(np.float32), "fcb": _f(rng, 5),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["s"]),
        helper.make_node("Relu", ["s"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["g"]),
        helper.make_node("Relu", ["g"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "cnn_like", [helper.make_tensor_value_info("x", F, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", F, [1, 5])],
        initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), {"x": _f(rng, 1, 3, 8, 8)}


def _nchwc_cnns(rng):
    """Two CNNs whose onnxruntime-saved form (ORT_ENABLE_ALL) is in com.microsoft.nchwc blocks:
    one over a 16-channel input (ReorderInput, MaxPool, Conv + Relu, depthwise Conv + Clip, a
    1x1 Conv fused with an Add, AveragePool, Upsample by Resize, Concat, GlobalMaxPool), one from
    a 3-channel image (plain-input Conv, 24 channels padded to the block, ReorderOutput)."""
    def w(*shape):
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    inits = {"w1": w(32, 16, 3, 3), "b1": _f(rng, 32), "wd": w(32, 1, 3, 3), "bd": _f(rng, 32),
             "w3": w(32, 32, 1, 1), "b3": _f(rng, 32), "fc": w(64, 5), "fcb": _f(rng, 5),
             "scales": np.array([1, 1, 2, 2], np.float32)}
    nodes = [
        helper.make_node("MaxPool", ["x"], ["m"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Conv", ["m", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "wd", "bd"], ["d"], pads=[1, 1, 1, 1], group=32),
        helper.make_node("Clip", ["d", "lo", "hi"], ["dc"]),
        helper.make_node("Conv", ["dc", "w3", "b3"], ["c3"]),
        helper.make_node("Add", ["c3", "r1"], ["s"]),
        helper.make_node("AveragePool", ["s"], ["a"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Resize", ["a", "", "scales"], ["u"], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
        helper.make_node("Concat", ["u", "s"], ["cat"], axis=1),
        helper.make_node("GlobalMaxPool", ["cat"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"]),
    ]
    consts = [numpy_helper.from_array(v, k) for k, v in inits.items()]
    consts += [numpy_helper.from_array(np.array(0, np.float32), "lo"), numpy_helper.from_array(np.array(6, np.float32), "hi")]
    graph = helper.make_graph(nodes, "nchwc_blocks", [helper.make_tensor_value_info("x", F, [1, 16, 12, 12])],
                              [helper.make_tensor_value_info("y", F, [1, 5])], initializer=consts)
    yield "ort_saved_all_nchwc_blocks", helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), {"x": _f(rng, 1, 16, 12, 12)}
    inits = {"w1": w(24, 3, 3, 3), "b1": _f(rng, 24), "w2": w(8, 24, 1, 1), "b2": _f(rng, 8)}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "nchwc_padded", [helper.make_tensor_value_info("x", F, [2, 3, 9, 9])],
                              [helper.make_tensor_value_info("y", F, [2, 8, 5, 5])],
                              initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
    yield "ort_saved_all_nchwc_padded", helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), {"x": _f(rng, 2, 3, 9, 9)}
    # Linear upsampling in blocks, in both of onnxruntime's coordinate rules it blocks.
    for coords in ("asymmetric", "align_corners"):
        inits = {"w1": w(16, 16, 3, 3), "b1": _f(rng, 16), "scales": np.array([1, 1, 2, 3], np.float32)}
        nodes = [
            helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
            helper.make_node("Resize", ["c1", "", "scales"], ["y"], mode="linear", coordinate_transformation_mode=coords),
        ]
        graph = helper.make_graph(nodes, "nchwc_linear", [helper.make_tensor_value_info("x", F, [1, 16, 5, 4])],
                                  [helper.make_tensor_value_info("y", F, [1, 16, 10, 12])],
                                  initializer=[numpy_helper.from_array(v, k) for k, v in inits.items()])
        yield f"ort_saved_all_nchwc_upsample_linear_{coords}", helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), {"x": _f(rng, 1, 16, 5, 4)}


def optimized_tests(rng, out):
    """The BERT-like, GPT-2-like and CNN graphs as onnxruntime saves them after its graph
    optimizations (extended level: the transformer and conv fusions), and two CNNs saved at the
    default level (the NCHWc layout), with onnxruntime's outputs of the saved model."""
    tmp = os.path.join(out, "ort-saved")
    os.makedirs(tmp, exist_ok=True)
    extended = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    cases = [
        ("ort_optimized_bert_like", *_transformer(rng, False), extended),
        ("ort_optimized_gpt2_like", *_transformer(rng, True), extended),
        ("ort_optimized_cnn_like", *_cnn(rng), extended),
    ]
    # The default level adds the layout changes: com.microsoft.nchwc blocks.
    cases += [(n, m, f, ort.GraphOptimizationLevel.ORT_ENABLE_ALL) for n, m, f in _nchwc_cnns(rng)]
    for name, model, feeds, level in cases:
        path = os.path.join(tmp, name + ".onnx")
        opts = ort.SessionOptions()
        opts.graph_optimization_level = level
        opts.optimized_model_filepath = path
        ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        opt = onnx.load(path)
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        want = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"]).run(None, feeds)
        yield name, opt, feeds, want


def transformer_optimizer_tests(rng, out):
    """The BERT-like and GPT-2-like graphs, written as PyTorch exports write them, through
    onnxruntime's transformer optimizer (`onnxruntime.transformers.optimizer.optimize_model`,
    the Python fusions, as users run it before deployment): the BERT comes out as
    EmbedLayerNormalization, Attention (with its mask as a mask index), SkipLayerNormalization
    and BiasGelu, the GPT-2 as SkipLayerNormalization and FastGelu (the optimizer fuses GPT-2's
    attention only in exports with past state). Expected: onnxruntime's outputs of the optimized
    model, checked here against its outputs of the original."""
    from onnxruntime.transformers import optimizer

    tmp = os.path.join(out, "ort-transformers")
    os.makedirs(tmp, exist_ok=True)
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want_ops = {"bert": {"EmbedLayerNormalization", "Attention", "SkipLayerNormalization", "BiasGelu"},
                "gpt2": {"SkipLayerNormalization", "FastGelu"}}
    for causal, kind in ((False, "bert"), (True, "gpt2")):
        model, feeds = _transformer(rng, causal, torch_style=True)
        src = os.path.join(tmp, kind + ".onnx")
        onnx.save(model, src)
        opt = optimizer.optimize_model(src, model_type=kind, num_heads=2, hidden_size=16, opt_level=0).model
        fused = {n.op_type for n in opt.graph.node if n.domain == MS}
        assert want_ops[kind] <= fused, f"{kind}: onnxruntime's optimizer fused only {sorted(fused)}"
        run = lambda m: ort.InferenceSession(m.SerializeToString(), plain, providers=["CPUExecutionProvider"]).run(None, feeds)
        want = run(opt)
        for a, b in zip(want, run(model)):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
        yield f"ort_transformers_optimized_{kind}_like", opt, feeds, want


def wheel_model_tests(rng, out):
    """Real models from PyPI wheels. ddddocr 1.6.1's OCR models: the float CRNN recognizer
    and detector whole, and the DynamicQuantizeLSTM of its int8 recognizer (`common_old`) on
    the activations onnxruntime computes for it. The int8 model whole is not a test: its
    DynamicQuantizeLinear steps turn 1-ulp differences of Sigmoid into quantization steps, so
    its logits differ from onnxruntime's by up to about 1% (the recognized text is the same).
    Silero VAD 6.2.3's model at both of its sample rates."""
    import shutil
    import subprocess
    import zipfile

    tmp = os.path.join(out, "wheels")
    os.makedirs(tmp, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--disable-pip-version-check",
                    "ddddocr==1.6.1", "-d", tmp], check=True)
    wheel = [f for f in os.listdir(tmp) if f.startswith("ddddocr") and f.endswith(".whl")][0]
    models = {}
    with zipfile.ZipFile(os.path.join(tmp, wheel)) as z:
        for name in ("common", "common_det", "common_old"):
            models[name] = onnx.load_from_string(z.read(f"ddddocr/{name}.onnx"))
    shutil.rmtree(tmp)
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL

    def run(m, feeds):
        return ort.InferenceSession(m.SerializeToString(), plain, providers=["CPUExecutionProvider"]).run(None, feeds)

    image = rng.random((1, 1, 64, 160)).astype(np.float32)
    yield "ddddocr_common", models["common"], {"input1": image}, None
    yield "ddddocr_common_det", models["common_det"], {"images": rng.random((1, 3, 416, 416)).astype(np.float32)}, None
    old = models["common_old"]
    lstm = next(n for n in old.graph.node if n.op_type == "DynamicQuantizeLSTM")
    cut = onnx.ModelProto()
    cut.CopyFrom(old)
    cut.graph.output.append(helper.make_value_info(lstm.input[0], onnx.TypeProto()))
    x = run(cut, {"input1": image})[-1]
    hidden = [a.i for a in lstm.attribute if a.name == "hidden_size"][0]
    state = np.zeros((2, 1, hidden), np.float32)
    names = [lstm.input[0], lstm.input[5], lstm.input[6]]
    inits = [i for i in old.graph.initializer if i.name in set(lstm.input)]
    graph = helper.make_graph(
        [lstm], "ddddocr_lstm",
        [helper.make_tensor_value_info(names[0], F, list(x.shape))]
        + [helper.make_tensor_value_info(n, F, list(state.shape)) for n in names[1:]],
        [helper.make_tensor_value_info(lstm.output[0], F, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=old.opset_import, ir_version=old.ir_version)
    feeds = {names[0]: x, names[1]: state, names[2]: state}
    yield "ddddocr_common_old_dynamic_quantize_lstm", model, feeds, run(model, feeds)[:1]

    # Silero VAD 6.2.3's model (MIT): If on the sample rate, with nested Ifs and an LSTM in
    # each branch; the branch not taken does not fit the other rate's window (a shape error
    # there is not the model's). Both rates, with a carried state.
    tmp = os.path.join(out, "wheels")
    os.makedirs(tmp, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--disable-pip-version-check",
                    "silero-vad==6.2.3", "-d", tmp], check=True)
    wheel = [f for f in os.listdir(tmp) if f.startswith("silero_vad") and f.endswith(".whl")][0]
    with zipfile.ZipFile(os.path.join(tmp, wheel)) as z:
        vad = onnx.load_from_string(z.read("silero_vad/data/silero_vad.onnx"))
    shutil.rmtree(tmp)
    for rate, window in ((16000, 512), (8000, 256)):
        feeds = {"input": (rng.standard_normal((1, window)) * 0.1).astype(np.float32),
                 "state": (rng.standard_normal((2, 1, 128)) * 0.1).astype(np.float32),
                 "sr": np.array(rate, np.int64)}
        yield f"silero_vad_{rate // 1000}k", vad, feeds, run(vad, feeds)
