"""Generates fp_tables.txt: the small-float conversions of the ONNX reference (ml_dtypes and
onnx.numpy_helper), for the exhaustive tests in tests/small_float.rs.

Run with the venv of scripts/gen_onnx_node_tests.sh:
    build/venv/bin/python crates/rge-kernels-convert/tests/data/gen_fp_tables.py > \
        crates/rge-kernels-convert/tests/data/fp_tables.txt

Lines (hex fields):
    d TYPE CODE F32BITS            decode CODE to float32
    e TYPE SAT F32BITS CODE         encode float32 (SAT 1: saturate) to CODE
    m MODE SAT F32BITS CODE         FLOAT8E8M0 encode with round mode MODE (u/n/d)
TYPE is the ONNX data type number.
"""
import warnings

import ml_dtypes
import numpy as np
from onnx import numpy_helper

warnings.filterwarnings("ignore")

TYPES = {
    17: ml_dtypes.float8_e4m3fn,
    18: ml_dtypes.float8_e4m3fnuz,
    19: ml_dtypes.float8_e5m2,
    20: ml_dtypes.float8_e5m2fnuz,
    23: ml_dtypes.float4_e2m1fn,
    24: ml_dtypes.float8_e8m0fnu,
}
F8 = {17, 18, 19, 20}


def bits(x):
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def f32(b):
    return np.array([b], dtype=np.uint32).view(np.float32)[0]


def main():
    for ty, dt in TYPES.items():
        n = 16 if ty == 23 else 256
        codes = np.arange(n, dtype=np.uint8)
        if ty == 23:
            vals = codes.view(dt)  # ml_dtypes stores one float4 per byte (low nibble)
        else:
            vals = codes.view(dt)
        for c, v in zip(codes, vals.astype(np.float32)):
            print(f"d {ty} {c:x} {bits(v):x}")
        if ty == 24:
            continue
        finite = sorted({float(v) for v in vals.astype(np.float32) if np.isfinite(v) and v >= 0})
        probes = set()
        for a, b in zip(finite, finite[1:]):
            mid = np.float32((a + b) / 2)
            mb = bits(mid)
            probes.update({bits(np.float32(a)), mb, mb - 1, mb + 1})
        top = finite[-1]
        for x in [top, top * 1.01, top * 1.07, top * 1.2, top * 2, 1e30, 3e38, np.inf, np.nan,
                  1e-30, 1e-45, 2.0**-126, 1e-3]:
            probes.add(bits(np.float32(x)))
        probes |= {b | 0x80000000 for b in probes}
        xs = np.array(sorted(probes), dtype=np.uint32).view(np.float32)
        sats = [1, 0] if ty in F8 else [1]
        for sat in sats:
            ys = numpy_helper.saturate_cast(xs, dt) if sat else xs.astype(dt)
            for x, y in zip(xs, ys.view(np.uint8)):
                print(f"e {ty} {sat} {bits(x):x} {y:x}")
    rng = np.random.default_rng(0)
    probes = [0, 1, 0x7FFFFF, 0x800000, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7F000000,
              0x7F000001, 0x7F400000, 0x7F400001, 0x7F600000, 0x3F800000, 0x3FC00000,
              0x3FC00001, 0x3FA00000, 0x3FE00000, 0x40400000, 0x00400000, 0x00400001,
              0x00600000, 0x00200000]
    probes += [int(v) for v in rng.integers(0, 2**32, 300, dtype=np.uint64)]
    probes += [p | 0x80000000 for p in probes[:22]]
    xs = np.array(probes, dtype=np.uint32).view(np.float32)
    for mode in ["up", "nearest", "down"]:
        for sat in [1, 0]:
            ys = numpy_helper.to_float8e8m0(xs, bool(sat), mode).view(np.uint8)
            for x, y in zip(xs, ys):
                print(f"m {mode[0]} {sat} {bits(x):x} {y:x}")


main()
