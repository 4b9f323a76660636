#!/usr/bin/env python3
"""More benchmark CNNs (real architectures, seeded random weights), built with onnx.helper only,
beside ../shared/bench/make_models.py: same command line, same module interface (MODELS,
feeds_for), its graph builder G and helpers imported from it (by path; RGE_MAKE_MODELS overrides).

Graph shapes follow what the usual exporters produce (opset 17):
  densenet121  torchvision DenseNet-121 (torch.onnx.export): BatchNormalization+Relu before each
               Conv (unfused: it precedes the conv), a Concat of all earlier features per layer,
               AveragePool transitions, GlobalAveragePool + Gemm; 1x3x224x224
  yolov8n      Ultralytics YOLOv8n export: Conv(+folded BN) + SiLU as Sigmoid*Mul, C2f (Split,
               Bottlenecks, Concat), SPPF (3 MaxPool 5x5), Resize nearest x2 neck, Detect head
               with DFL (Softmax + fixed 1x1 Conv) and the anchor decode; 1x3x640x640 -> [1,84,8400]
  ocr_det      PP-OCR DB text detector (paddle2onnx): MobileNetV3-large x0.5 (HardSwish, depthwise,
               SE with HardSigmoid), DBFPN (Resize nearest + Add, Concat), DB head (Conv+BN+Relu,
               2 ConvTranspose, Sigmoid); 1x3x640x640 -> [1,1,640,640]
  ocr_rec      PP-OCR CRNN text recognizer: MobileNetV3-small x0.5 with (2,1) strides, MaxPool,
               Squeeze + Transpose to time-major, 2 bidirectional LSTM layers (hidden 48),
               MatMul + Add to 6625 classes, Softmax; 1x3x48x320 -> [1,80,6625]

    python more_models.py                 # all models -> ./build/bench-models/<name>/model.onnx
    python more_models.py --only yolov8n --out OUTDIR
    python more_models.py --list

Each model directory also gets test_data_set_0/input_*.pb + output_*.pb (onnxruntime's outputs,
when it is installed), as make_models.py writes them. Deterministic for a given --seed (default 0).
"""
import argparse
import importlib.util
import os
import sys
import time

sys.dont_write_bytecode = True   # no __pycache__ beside make_models.py

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_MODELS = os.environ.get("RGE_MAKE_MODELS") or os.path.join(
    HERE, "..", "..", "shared", "bench", "make_models.py")


def _load_make_models(path):
    spec = importlib.util.spec_from_file_location("make_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


mm = _load_make_models(MAKE_MODELS)
G, conv_bn_relu, conv_fused, feeds_for = mm.G, mm.conv_bn_relu, mm.conv_fused, mm.feeds_for


def finish(g, x, out, shape):
    """Renames the last node's output to the graph output `out` and builds the model."""
    assert g.nodes[-1].output[0] == x
    g.nodes[-1].output[0] = out
    g.outputs.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, shape))
    m = g.model()
    m.producer_name = "rge/bench/more_models.py"
    return m


def bn(g, x, c, gamma=(0.5, 1.0)):
    """BatchNormalization with seeded running statistics (as conv_bn_relu makes them)."""
    p = [g.init(g.uniform((c,), *gamma), "bn_scale"), g.init(g.normal((c,), 0.05), "bn_bias"),
         g.init(g.normal((c,), 0.05), "bn_mean"), g.init(g.uniform((c,), 0.5, 1.5), "bn_var")]
    return g.node("BatchNormalization", [x, *p], epsilon=1e-5)


def conv(g, x, cin, cout, k, stride=1, group=1, bias=True, gain=2.0):
    """Conv (pads k//2); `stride` an int or (sh, sw). With bias: make_models' conv_fused."""
    if bias and isinstance(stride, int) and gain == 2.0:
        return conv_fused(g, x, cin, cout, k, stride, group=group, act=False)
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    fan_in = cin // group * k * k
    ins = [x, g.init(g.normal((cout, cin // group, k, k), np.sqrt(gain / fan_in)), "conv_w")]
    if bias:
        ins.append(g.init(g.normal((cout,), 0.05), "conv_b"))
    return g.node("Conv", ins, kernel_shape=[k, k], strides=[sh, sw], pads=[k // 2] * 4, group=group)


def resize_nearest(g, x, scale):
    """nn.Upsample / F.interpolate(scale_factor, mode="nearest") as torch and paddle2onnx export it."""
    scales = g.init(np.array([1, 1, scale, scale], np.float32), "scales")
    return g.node("Resize", [x, "", scales], mode="nearest", coordinate_transformation_mode="asymmetric",
                  nearest_mode="floor")


def gap_fc(g, x, cin, classes):
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x])], axis=1)
    return g.node("Gemm", [x, g.init(g.normal((classes, cin), np.sqrt(1.0 / cin)), "fc_w"),
                           g.init(g.normal((classes,), 0.01), "fc_b")], transB=1)


# ----------------------------------------------------------------------------------- DenseNet
def densenet(name, seed, blocks=(6, 12, 24, 16), growth=32, bn_size=4, init=64, classes=1000):
    g = G(name, seed)
    g.inputs.append(helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224]))
    x = conv_bn_relu(g, "input", 3, init, 7, 2)
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = init
    for i, n in enumerate(blocks):
        feats = [x]
        for _ in range(n):   # _DenseLayer: cat(inputs) -> BN-Relu-Conv1x1 -> BN-Relu-Conv3x3
            cat = g.node("Concat", feats, axis=1) if len(feats) > 1 else feats[0]
            cin = c + growth * (len(feats) - 1)
            y = conv(g, g.node("Relu", [bn(g, cat, cin)]), cin, bn_size * growth, 1, bias=False)
            y = conv(g, g.node("Relu", [bn(g, y, bn_size * growth)]), bn_size * growth, growth, 3, bias=False)
            feats.append(y)
        x = g.node("Concat", feats, axis=1)
        c += growth * n
        if i < len(blocks) - 1:   # _Transition: BN-Relu-Conv1x1 (halve) -> AvgPool 2x2
            x = conv(g, g.node("Relu", [bn(g, x, c)]), c, c // 2, 1, bias=False)
            x = g.node("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2])
            c //= 2
    x = g.node("Relu", [bn(g, x, c)])
    return finish(g, gap_fc(g, x, c, classes), "logits", [1, classes])


# ------------------------------------------------------------------------------------ YOLOv8
def silu_conv(g, x, cin, cout, k, stride=1):
    """ultralytics Conv: Conv2d + BN (folded into the bias on export) + SiLU as Sigmoid * Mul.
    Gain 2.15, not He's 2: SiLU keeps less of the second moment than Relu, and 2.15 keeps the
    activations near unit scale through the 60-odd convs (2.0 shrinks them 20x, 2.3 grows them 10x)."""
    y = conv(g, x, cin, cout, k, stride, gain=2.15)
    return g.node("Mul", [y, g.node("Sigmoid", [y])])


def c2f(g, x, cin, cout, n, shortcut):
    c = cout // 2
    y = silu_conv(g, x, cin, 2 * c, 1)
    ys = list(g.node("Split", [y, g.const_i64([c, c], "split")], n_out=2, axis=1))
    for _ in range(n):   # Bottleneck(c, c, shortcut, k=(3, 3), e=1.0)
        b = silu_conv(g, silu_conv(g, ys[-1], c, c, 3), c, c, 3)
        ys.append(g.node("Add", [ys[-1], b]) if shortcut else b)
    return silu_conv(g, g.node("Concat", ys, axis=1), (2 + n) * c, cout, 1)


def sppf(g, x, cin, cout, k=5):
    c = cin // 2
    ys = [silu_conv(g, x, cin, c, 1)]
    for _ in range(3):
        ys.append(g.node("MaxPool", [ys[-1]], kernel_shape=[k, k], strides=[1, 1], pads=[k // 2] * 4))
    return silu_conv(g, g.node("Concat", ys, axis=1), 4 * c, cout, 1)


def yolov8(name, seed, width=0.25, depth=0.33, size=640, nc=80, reg_max=16):
    g = G(name, seed)
    g.inputs.append(helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, size, size]))
    ch = lambda c: int(min(c, 1024) * width)                 # 64..1024 -> 16..256
    rep = lambda n: max(round(n * depth), 1)                 # 3, 6 -> 1, 2
    x = silu_conv(g, "images", 3, ch(64), 3, 2)              # P1/2
    x = silu_conv(g, x, ch(64), ch(128), 3, 2)               # P2/4
    x = c2f(g, x, ch(128), ch(128), rep(3), True)
    x = silu_conv(g, x, ch(128), ch(256), 3, 2)              # P3/8
    p3 = x = c2f(g, x, ch(256), ch(256), rep(6), True)
    x = silu_conv(g, x, ch(256), ch(512), 3, 2)              # P4/16
    p4 = x = c2f(g, x, ch(512), ch(512), rep(6), True)
    x = silu_conv(g, x, ch(512), ch(1024), 3, 2)             # P5/32
    x = c2f(g, x, ch(1024), ch(1024), rep(3), True)
    p5 = x = sppf(g, x, ch(1024), ch(1024))
    # neck (PAN): C2f without shortcut
    x = g.node("Concat", [resize_nearest(g, x, 2), p4], axis=1)
    h4 = x = c2f(g, x, ch(1024) + ch(512), ch(512), rep(3), False)
    x = g.node("Concat", [resize_nearest(g, x, 2), p3], axis=1)
    n3 = x = c2f(g, x, ch(512) + ch(256), ch(256), rep(3), False)
    x = g.node("Concat", [silu_conv(g, x, ch(256), ch(256), 3, 2), h4], axis=1)
    n4 = x = c2f(g, x, ch(256) + ch(512), ch(512), rep(3), False)
    x = g.node("Concat", [silu_conv(g, x, ch(512), ch(512), 3, 2), p5], axis=1)
    n5 = c2f(g, x, ch(512) + ch(1024), ch(1024), rep(3), False)
    # Detect
    feats = [(n3, ch(256), 8), (n4, ch(512), 16), (n5, ch(1024), 32)]
    c2 = max(16, feats[0][1] // 4, reg_max * 4)
    c3 = max(feats[0][1], min(nc, 100))
    no = nc + 4 * reg_max
    flat, anchors, strides = [], [], []
    for f, c, s in feats:
        box = conv(g, silu_conv(g, silu_conv(g, f, c, c2, 3), c2, c2, 3), c2, 4 * reg_max, 1)
        cls = conv(g, silu_conv(g, silu_conv(g, f, c, c3, 3), c3, c3, 3), c3, nc, 1)
        y = g.node("Concat", [box, cls], axis=1)
        flat.append(g.node("Reshape", [y, g.const_i64([1, no, -1])]))
        h = w = size // s                                     # make_anchors, grid_cell_offset 0.5
        sy, sx = np.meshgrid(np.arange(h) + 0.5, np.arange(w) + 0.5, indexing="ij")
        anchors.append(np.stack([sx.ravel(), sy.ravel()]))
        strides.append(np.full((1, h * w), s))
    y = g.node("Concat", flat, axis=2)                        # [1,144,8400]
    n = sum(a.shape[1] for a in anchors)
    box, cls = g.node("Split", [y, g.const_i64([4 * reg_max, nc], "split")], n_out=2, axis=1)
    # DFL: softmax over the 16 bins, expectation by a fixed 1x1 conv with weights 0..15
    d = g.node("Reshape", [box, g.const_i64([1, 4, reg_max, n])])
    d = g.node("Softmax", [g.node("Transpose", [d], perm=[0, 2, 1, 3])], axis=1)
    dfl_w = g.init(np.arange(reg_max, dtype=np.float32).reshape(1, reg_max, 1, 1), "dfl_w")
    d = g.node("Conv", [d, dfl_w], kernel_shape=[1, 1])
    d = g.node("Reshape", [d, g.const_i64([1, 4, n])])
    # dist2bbox(xywh) * strides
    lt, rb = g.node("Split", [d, g.const_i64([2, 2], "split")], n_out=2, axis=1)
    anc = g.init(np.concatenate(anchors, 1)[None].astype(np.float32), "anchors")     # [1,2,8400]
    x1y1 = g.node("Sub", [anc, lt])
    x2y2 = g.node("Add", [anc, rb])
    cxy = g.node("Div", [g.node("Add", [x1y1, x2y2]), g.init(np.array(2, np.float32), "two")])
    wh = g.node("Sub", [x2y2, x1y1])
    dbox = g.node("Mul", [g.node("Concat", [cxy, wh], axis=1),
                          g.init(np.concatenate(strides, 1).astype(np.float32), "strides")])
    y = g.node("Concat", [dbox, g.node("Sigmoid", [cls])], axis=1)
    return finish(g, y, "output0", [1, 4 + nc, n])


# ------------------------------------------------------------------------------ MobileNetV3
def make_divisible(v, divisor=8):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def act(g, x, kind):
    return g.node("Relu" if kind == "relu" else "HardSwish", [x])


def conv_act(g, x, cin, cout, k, stride=1, group=1, kind="hardswish", hs_gain=2.0):
    """PaddleOCR ConvBNLayer, BN folded into the conv's bias (as exported for inference). HardSwish
    keeps from a third (unit scale) to a quarter (small) of the second moment, Relu half: before
    a HardSwish the gain is the model's `hs_gain` (each net's value keeps its activations near
    unit scale; one value for both nets grows one and shrinks the other)."""
    y = conv(g, x, cin, cout, k, stride, group, gain=2.0 if kind == "relu" else hs_gain)
    return act(g, y, kind)


def se(g, x, c, reduction=4):
    """SEModule: GlobalAveragePool -> Conv -> Relu -> Conv -> HardSigmoid(0.2, 0.5) -> Mul."""
    s = g.node("GlobalAveragePool", [x])
    s = g.node("Relu", [conv(g, s, c, c // reduction, 1)])
    # A small excitation keeps the gate near 0.5 (not 0 or 1): see the projection in residual_unit
    s = g.node("HardSigmoid", [conv(g, s, c // reduction, c, 1, gain=0.25)], alpha=0.2, beta=0.5)
    return g.node("Mul", [x, s])


def residual_unit(g, x, cin, mid, cout, k, stride, use_se, kind, hs_gain):
    y = conv_act(g, x, cin, mid, 1, kind=kind, hs_gain=hs_gain)
    y = conv_act(g, y, mid, mid, k, stride, group=mid, kind=kind, hs_gain=hs_gain)
    if use_se:
        y = se(g, y, mid)
    # The linear projection (its output is fed to a conv as is: gain 1) keeps the scale: x4 after
    # SE, whose gate (near 0.5 with random weights) quarters the second moment; /4 on a residual
    # branch, so that the sums grow slowly (trained nets' last BN of a branch is small, too).
    res = cin == cout and stride in (1, (1, 1))
    y = conv(g, y, mid, cout, 1, gain=(4.0 if use_se else 1.0) * (0.25 if res else 1.0))
    return g.node("Add", [x, y]) if res else y


MBV3_LARGE = [  # k, exp, c, se, act, stride
    (3, 16, 16, False, "relu", 1), (3, 64, 24, False, "relu", 2), (3, 72, 24, False, "relu", 1),
    (5, 72, 40, True, "relu", 2), (5, 120, 40, True, "relu", 1), (5, 120, 40, True, "relu", 1),
    (3, 240, 80, False, "hardswish", 2), (3, 200, 80, False, "hardswish", 1),
    (3, 184, 80, False, "hardswish", 1), (3, 184, 80, False, "hardswish", 1),
    (3, 480, 112, True, "hardswish", 1), (3, 672, 112, True, "hardswish", 1),
    (5, 672, 160, True, "hardswish", 2), (5, 960, 160, True, "hardswish", 1),
    (5, 960, 160, True, "hardswish", 1)]

MBV3_SMALL_REC = [  # PaddleOCR rec_mobilenet_v3 "small": (2,1) strides keep the width
    (3, 16, 16, True, "relu", (2, 1)), (3, 72, 24, False, "relu", (2, 1)), (3, 88, 24, False, "relu", 1),
    (5, 96, 40, True, "hardswish", (2, 1)), (5, 240, 40, True, "hardswish", 1),
    (5, 240, 40, True, "hardswish", 1), (5, 120, 48, True, "hardswish", 1),
    (5, 144, 48, True, "hardswish", 1), (5, 288, 96, True, "hardswish", (2, 1)),
    (5, 576, 96, True, "hardswish", 1), (5, 576, 96, True, "hardswish", 1)]


def ocr_det(name, seed, scale=0.5, size=640, fpn=96, hs_gain=2.0):
    g = G(name, seed)
    g.inputs.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size]))
    cin = make_divisible(16 * scale)
    x = conv_act(g, "x", 3, cin, 3, 2, hs_gain=hs_gain)
    stages, chans = [], []
    for i, (k, e, c, use_se, kind, s) in enumerate(MBV3_LARGE):
        if s == 2 and i > 2:          # a stage ends before each stride-2 block (after the first)
            stages.append(x)
            chans.append(cin)
        cout = make_divisible(scale * c)
        x = residual_unit(g, x, cin, make_divisible(scale * e), cout, k, s, use_se, kind, hs_gain)
        cin = cout
    c5 = make_divisible(scale * 960)
    stages.append(conv_act(g, x, cin, c5, 1, hs_gain=hs_gain))
    chans.append(c5)                  # [16, 24, 56, 480] at 1/4, 1/8, 1/16, 1/32
    # DBFPN
    # Gains below He's: the laterals read linear maps, the top-down sums add up to 4 of them.
    ins = [conv(g, s, c, fpn, 1, bias=False, gain=1.0) for s, c in zip(stages, chans)]
    outs = [ins[3]]
    for lat in ins[2::-1]:            # top-down: in4 + up(in5), in3 + up(out4), in2 + up(out3)
        outs.append(g.node("Add", [lat, resize_nearest(g, outs[-1], 2)]))
    p = []
    for j, o in enumerate(outs):      # p5, p4, p3, p2 -> 24 ch each, all at 1/4
        y = conv(g, o, fpn, fpn // 4, 3, bias=False, gain=0.5)
        p.append(resize_nearest(g, y, 2 ** (3 - j)) if j < 3 else y)
    x = g.node("Concat", p, axis=1)
    # DB head (inference: the shrink map only)
    c = fpn // 4
    x = g.node("Relu", [bn(g, conv(g, x, fpn, c, 3, bias=False, gain=1.0), c)])
    x = g.node("ConvTranspose", [x, g.init(g.normal((c, c, 2, 2), np.sqrt(2.0 / c)), "convt_w"),
                                 g.init(g.normal((c,), 0.05), "convt_b")], kernel_shape=[2, 2], strides=[2, 2])
    x = g.node("Relu", [bn(g, x, c)])
    x = g.node("ConvTranspose", [x, g.init(g.normal((c, 1, 2, 2), np.sqrt(1.0 / c)), "convt_w"),
                                 g.init(g.normal((1,), 0.05), "convt_b")], kernel_shape=[2, 2], strides=[2, 2])
    return finish(g, g.node("Sigmoid", [x]), "maps", [1, 1, size, size])


def lstm_bidir(g, x, cin, hidden):
    """One bidirectional ONNX LSTM layer, time-major [T,1,C] -> [T,1,2H] (torch's export pattern).
    Weights twice torch's init range, so the gates are not all near 0.5 and the outputs near 0."""
    s = 2 / np.sqrt(hidden)
    w = g.init(g.uniform((2, 4 * hidden, cin), -s, s), "lstm_W")
    r = g.init(g.uniform((2, 4 * hidden, hidden), -s, s), "lstm_R")
    b = g.init(g.uniform((2, 8 * hidden), -s, s), "lstm_B")
    y, _yh, _yc = g.node("LSTM", [x, w, r, b], n_out=3, hidden_size=hidden, direction="bidirectional")
    y = g.node("Transpose", [y], perm=[0, 2, 1, 3])                       # [T,2,1,H] -> [T,1,2,H]
    return g.node("Reshape", [y, g.const_i64([0, 0, -1])])


def ocr_rec(name, seed, scale=0.5, h=48, w=320, hidden=48, classes=6625, hs_gain=3.0):
    g = G(name, seed)
    g.inputs.append(helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, h, w]))
    cin = make_divisible(16 * scale)
    x = conv_act(g, "x", 3, cin, 3, 2, hs_gain=hs_gain)                                    # 24 x 160
    for k, e, c, use_se, kind, s in MBV3_SMALL_REC:                       # height 12, 6, 3, 2
        cout = make_divisible(scale * c)
        x = residual_unit(g, x, cin, make_divisible(scale * e), cout, k, s, use_se, kind, hs_gain)
        cin = cout
    x = g.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])       # 1 x 80
    c = make_divisible(scale * 576)
    x = conv_act(g, x, cin, c, 1, hs_gain=hs_gain)                        # [1,288,1,80]
    x = g.node("Squeeze", [x, g.const_i64([2], "axes")])                  # Im2Seq: [1,288,80]
    x = g.node("Transpose", [x], perm=[2, 0, 1])                          # [80,1,288]
    for _ in range(2):
        x = lstm_bidir(g, x, c, hidden)
        c = 2 * hidden
    x = g.node("Transpose", [x], perm=[1, 0, 2])                          # [1,80,96]
    # logits of std ~2: peaked rows (max prob 0.01 to 0.2), not a flat 1/6625
    x = g.node("MatMul", [x, g.init(g.normal((c, classes), 8 / np.sqrt(c)), "fc_w")])
    x = g.node("Add", [x, g.init(g.normal((classes,), 0.1), "fc_b")])
    return finish(g, g.node("Softmax", [x], axis=2), "probs", [1, w // 4, classes])


MODELS = {  # name: (builder, kind)
    "densenet121": (lambda s: densenet("densenet121", s), "CNN (dense blocks)"),
    "yolov8n": (lambda s: yolov8("yolov8n", s), "CNN (detector)"),
    "ocr_det": (lambda s: ocr_det("ocr_det", s), "CNN (text detector)"),
    "ocr_rec": (lambda s: ocr_rec("ocr_rec", s), "CNN + LSTM (text recognizer)"),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.getcwd(), "build", "bench-models"))
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-ref", action="store_true", help="do not compute reference outputs with ORT")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.list:
        for k, (_, kind) in MODELS.items():
            print(f"{k:12s} {kind}")
        return 0
    unknown = [n for n in a.only or [] if n not in MODELS]
    if unknown:
        ap.error(f"--only: unknown model(s) {', '.join(unknown)} (models: {', '.join(MODELS)})")
    for name in a.only or MODELS:
        t0 = time.time()
        m = MODELS[name][0](a.seed)
        onnx.checker.check_model(m)
        d = os.path.join(a.out, name)
        data = os.path.join(d, "test_data_set_0")
        os.makedirs(data, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        onnx.save(m, path)
        msg = ""
        if not a.no_ref:
            try:
                import onnxruntime as ort
                feeds = feeds_for(m, np.random.default_rng(a.seed + 1))
                so = ort.SessionOptions(); so.intra_op_num_threads = 2
                outs = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)
                for i, (k, v) in enumerate(feeds.items()):
                    onnx.save_tensor(numpy_helper.from_array(v, k), os.path.join(data, f"input_{i}.pb"))
                for i, (o, v) in enumerate(zip(m.graph.output, outs)):
                    onnx.save_tensor(numpy_helper.from_array(v, o.name), os.path.join(data, f"output_{i}.pb"))
                y = outs[0]
                msg = f"out0 {y.shape} finite={bool(np.isfinite(y).all())} std={float(y.std()):.3g}"
            except ImportError:
                msg = "(onnxruntime not installed: no reference outputs)"
        print(f"{name:12s} {len(m.graph.node):5d} nodes  {os.path.getsize(path) / 2**20:7.1f} MB  "
              f"{time.time() - t0:5.1f}s  {msg}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
