#!/usr/bin/env python3
"""Test data of the media engine (crates/rge-media/tests/data, committed; rerun to refresh).

Makes a small synthetic photo as JPEG and PNG with Pillow, then runs the preprocessing front of
crates/rge/tests/media_engine.rs with Pillow and numpy — decode (Pillow, RGB), resize to 32x32
(bilinear, TensorFlow's half-pixel-centres rule), crop 24x24 at (4, 4), normalize
((x/255 - mean)/std, NCHW), then the small CNN (Conv 3x3 pad 1 → Relu → global average pool →
Gemm) with the weights the test computes by the same formula — and stores the expected logits
as little-endian f32 in `<name>.logits`, and the normalized [1, 3, 24, 24] input of the CNN
in `<name>.front`.

Needs Pillow and numpy: python3 -m venv /tmp/v && /tmp/v/bin/pip install pillow numpy
"""
import os
import sys

import numpy as np
from PIL import Image

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "rge-media", "tests", "data")
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


def weight(n, salt):
    """w[i] = (((i * 37 + salt * 11) % 101) / 50 - 1) / 4, as the Rust test computes it."""
    i = np.arange(n, dtype=np.int64)
    return ((((i * 37 + salt * 11) % 101).astype(np.float32) / 50.0 - 1.0) / 4.0).astype(np.float32)


def photo():
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
    img = np.asarray(Image.open(path).convert("RGB"))
    r = tf_bilinear(img, 32, 32)[4:28, 4:28]
    x = ((r / 255.0 - MEAN) / STD).astype(np.float32).transpose(2, 0, 1)[None]
    return x, cnn(x)


def main():
    os.makedirs(OUT, exist_ok=True)
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
