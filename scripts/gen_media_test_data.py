#!/usr/bin/env python3
"""Test data of the media engine (crates/rge-media/tests/data, committed; rerun to refresh).

Makes a small synthetic photo as JPEG and PNG with Pillow, then runs the preprocessing front of
crates/rge/tests/media_engine.rs with Pillow and numpy — decode (Pillow, RGB), resize to 32x32
(bilinear, TensorFlow's half-pixel-centres rule), crop 24x24 at (4, 4), normalize
((x/255 - mean)/std, NCHW), then the small CNN (Conv 3x3 pad 1 → Relu → global average pool →
Gemm) with the weights the test computes by the same formula — and stores the expected logits
as little-endian f32 in `<name>.logits`, and the normalized [1, 3, 24, 24] input of the CNN
in `<name>.front`.

It also writes `kernel_cases.json`: ResizeArea at non-integer scales (and align_corners) and
CropAndResize on non-trivial boxes (flipped, partly outside the image, a 1-pixel crop), with
the expected outputs computed here in numpy by TensorFlow's loops (resize_area_op.cc,
crop_and_resize_op.cc), for `crates/rge-media/tests/kernels.rs`.

Needs Pillow and numpy: python3 -m venv /tmp/v && /tmp/v/bin/pip install pillow numpy
(`--kernels` writes kernel_cases.json alone and needs numpy only:
build/venv/bin/python scripts/gen_media_test_data.py --kernels).
"""
import json
import math
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "rge-media", "tests", "data")
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def weight(n, salt):
    """w[i] = (((i * 37 + salt * 11) % 101) / 50 - 1) / 4, as the Rust test computes it."""
    i = np.arange(n, dtype=np.int64)
    return ((((i * 37 + salt * 11) % 101).astype(np.float32) / 50.0 - 1.0) / 4.0).astype(np.float32)


def photo():
    from PIL import Image

    """A 40x48 RGB picture: gradients, a disc and deterministic noise (so JPEG has detail)."""
    h, w = 40, 48
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    rng = np.random.default_rng(7)
    r = 255 * x / (w - 1)
    g = 255 * y / (h - 1)
    b = np.where((x - 30) ** 2 + (y - 18) ** 2 < 100, 230.0, 40.0)
    img = np.stack([r, g, b], -1) + rng.normal(0, 12, (h, w, 3))
    return Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")


def tf_bilinear(img, oh, ow):
    """TensorFlow ResizeBilinear with half_pixel_centers=True on [H, W, C] float."""
    h, w, _ = img.shape

    def axis(n_in, n_out):
        s = n_in / n_out
        c = (np.arange(n_out) + 0.5) * s - 0.5
        f = np.floor(c)
        lo = np.clip(f, 0, n_in - 1).astype(int)
        hi = np.clip(np.ceil(c), 0, n_in - 1).astype(int)
        return lo, hi, (c - f)

    y0, y1, fy = axis(h, oh)
    x0, x1, fx = axis(w, ow)
    img = img.astype(np.float64)
    top = img[y0][:, x0] + (img[y0][:, x1] - img[y0][:, x0]) * fx[None, :, None]
    bot = img[y1][:, x0] + (img[y1][:, x1] - img[y1][:, x0]) * fx[None, :, None]
    return (top + (bot - top) * fy[:, None, None]).astype(np.float32)


def cnn(x):
    """Conv(4 filters, 3x3, pad 1) + bias → Relu → global average pool → Gemm(3) + bias."""
    wc = weight(4 * 3 * 3 * 3, 1).reshape(4, 3, 3, 3)
    bc = weight(4, 2)
    wg = weight(3 * 4, 3).reshape(3, 4)  # Gemm transB=1: [out, in]
    bg = weight(3, 4)
    _, c, h, w = x.shape
    p = np.pad(x[0].astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    y = np.zeros((4, h, w))
    for o in range(4):
        for i in range(c):
            for ky in range(3):
                for kx in range(3):
                    y[o] += wc[o, i, ky, kx] * p[i, ky:ky + h, kx:kx + w]
        y[o] += bc[o]
    pooled = np.maximum(y, 0).mean(axis=(1, 2))
    return (wg.astype(np.float64) @ pooled + bg).astype(np.float32)[None, :]


def front(path):
    from PIL import Image

    img = np.asarray(Image.open(path).convert("RGB"))
    r = tf_bilinear(img, 32, 32)[4:28, 4:28]
    x = ((r / 255.0 - MEAN) / STD).astype(np.float32).transpose(2, 0, 1)[None]
    return x, cnn(x)


def tf_resize_area(x, oh, ow, align_corners=False):
    """TensorFlow's ResizeArea on [N, H, W, C], its loop as written: scale in/out
    ((in-1)/(out-1) with align_corners), output cell [o·s, (o+1)·s) covering input cells
    floor(o·s) .. ceil((o+1)·s) - 1 (clamped to the image), each weighted by the length it
    covers, the sum divided by s_y·s_x."""
    n, h, w, c = x.shape

    def scale(i, o):
        return (i - 1) / (o - 1) if align_corners and o > 1 else i / o

    def cells(i, o):
        s = scale(i, o)
        out = []
        for k in range(o):
            a, b = k * s, (k + 1) * s
            row = []
            for j in range(math.floor(a), math.ceil(b)):
                if j < a:
                    wgt = s if j + 1 > b else j + 1 - a
                else:
                    wgt = b - j if j + 1 > b else 1.0
                row.append((min(i - 1, max(0, j)), wgt))
            out.append(row)
        return s, out

    sy, ys = cells(h, oh)
    sx, xs = cells(w, ow)
    x64 = x.astype(np.float64)
    y = np.zeros((n, oh, ow, c))
    for oy, yr in enumerate(ys):
        for ox, xr in enumerate(xs):
            acc = np.zeros((n, c))
            for iy, wy in yr:
                for ix, wx in xr:
                    acc += wy * wx * x64[:, iy, ix, :]
            y[:, oy, ox, :] = acc / (sy * sx)
    return y.astype(np.float32)


def tf_crop_and_resize(img, boxes, box_index, crop, method="bilinear", extrapolation=0.0):
    """TensorFlow's CropAndResize: box (y1, x1, y2, x2) normalized to [0, 1] over
    (size - 1); crop pixel y at y1·(H-1) + y·(y2-y1)·(H-1)/(ch-1) (the box centre when
    ch = 1); a sample outside [0, H-1] × [0, W-1] is the extrapolation value; bilinear
    between floor and ceil, nearest rounds half away from zero."""
    _, h, w, c = img.shape
    ch, cw = crop
    out = np.zeros((len(boxes), ch, cw, c))
    im = img.astype(np.float64)

    def coords(a, b, n, size):
        if n > 1:
            return [a * (size - 1) + k * (b - a) * (size - 1) / (n - 1) for k in range(n)]
        return [0.5 * (a + b) * (size - 1)]

    for k, (y1, x1, y2, x2) in enumerate(boxes):
        b = box_index[k]
        for i, yy in enumerate(coords(y1, y2, ch, h)):
            for j, xx in enumerate(coords(x1, x2, cw, w)):
                if yy < 0 or yy > h - 1 or xx < 0 or xx > w - 1:
                    out[k, i, j] = extrapolation
                elif method == "nearest":
                    out[k, i, j] = im[b, int(math.floor(yy + 0.5)), int(math.floor(xx + 0.5))]
                else:
                    t, bt = math.floor(yy), math.ceil(yy)
                    l, r = math.floor(xx), math.ceil(xx)
                    fy, fx = yy - t, xx - l
                    top = im[b, t, l] + (im[b, t, r] - im[b, t, l]) * fx
                    bot = im[b, bt, l] + (im[b, bt, r] - im[b, bt, l]) * fx
                    out[k, i, j] = top + (bot - top) * fy
    return out.astype(np.float32)


def ramp(shape, salt):
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.int64)
    return (((i * 37 + salt * 11) % 101) * 2.5 - 40.0).reshape(shape).astype(np.float32)


def kernel_cases():
    """ResizeArea and CropAndResize cases: inputs, attributes and TF's expected outputs."""
    def t(a):
        a = np.asarray(a)
        return {"shape": list(a.shape), "data": a.reshape(-1).tolist()}

    cases = []
    x = ramp([2, 7, 10, 3], 1)
    for oh, ow, align in [(3, 4, False), (5, 7, False), (4, 6, True), (9, 13, False), (1, 3, False)]:
        cases.append({"name": f"area_{oh}x{ow}{'_align' if align else ''}", "op": "ResizeArea",
                      "attrs": {"align_corners": int(align)}, "image": t(x), "size": [oh, ow],
                      "expected": t(tf_resize_area(x, oh, ow, align))})
    img = ramp([2, 6, 9, 2], 2)
    boxes = np.array([[0.12, 0.2, 0.8, 0.9],    # inside, non-integer sample points
                      [0.87, 0.7, 0.15, 0.05],  # flipped in both axes
                      [-0.3, 0.35, 0.55, 1.4],  # partly outside: extrapolated samples
                      [0.33, 0.41, 0.33, 0.41]], np.float64)  # a point box
    box_index = [0, 1, 1, 0]
    for method, crop in [("bilinear", (4, 5)), ("nearest", (4, 5)), ("bilinear", (1, 1)), ("nearest", (3, 1))]:
        cases.append({"name": f"crop_and_resize_{method}_{crop[0]}x{crop[1]}", "op": "CropAndResize",
                      "attrs": {"method": method, "extrapolation_value": 0.5}, "image": t(img),
                      "boxes": t(boxes.astype(np.float32)), "box_index": box_index, "crop_size": list(crop),
                      "expected": t(tf_crop_and_resize(img, boxes.astype(np.float32).astype(np.float64),
                                                       box_index, crop, method, 0.5))})
    path = os.path.join(OUT, "kernel_cases.json")
    with open(path, "w") as f:
        json.dump({"generator": "scripts/gen_media_test_data.py", "cases": cases}, f, separators=(",", ":"))
    print(f"{len(cases)} kernel cases -> {path}")


def main():
    os.makedirs(OUT, exist_ok=True)
    kernel_cases()
    if sys.argv[1:] == ["--kernels"]:
        return 0
    pic = photo()
    pic.save(os.path.join(OUT, "photo.jpg"), quality=90)
    pic.save(os.path.join(OUT, "photo.png"))
    for name in ["photo.jpg", "photo.png"]:
        x, logits = front(os.path.join(OUT, name))
        x.astype("<f4").tofile(os.path.join(OUT, name + ".front"))
        logits.astype("<f4").tofile(os.path.join(OUT, name + ".logits"))
        print(name, logits)


if __name__ == "__main__":
    sys.exit(main())
