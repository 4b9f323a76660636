#!/usr/bin/env bash
# The Python bindings' tests: makes a venv in build/pyvenv (maturin, pytest, numpy,
# onnxruntime and onnx from PyPI; kept between runs), builds the `rge` extension into it with
# `maturin develop` (the dev profile, sharing target/ with `cargo test`), then runs pytest over
# python/tests (the bundled example and a node-test sample against onnxruntime).
# Env: PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
VENV=build/pyvenv
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import maturin, pytest, numpy, onnxruntime, onnx" 2>/dev/null; then
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
    "maturin>=1.9,<2" pytest numpy onnxruntime "onnx==1.23.2"
fi
VIRTUAL_ENV="$PWD/$VENV" PATH="$PWD/$VENV/bin:$PATH" \
  "$VENV/bin/maturin" develop --quiet --manifest-path python/Cargo.toml
"$VENV/bin/python" -m pytest -q -p no:cacheprovider python/tests
