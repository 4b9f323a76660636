#!/usr/bin/env bash
# Per-node overhead of rge-runtime's executors beside ONNX Runtime (1 thread) on the same ONNX
# file (a chain of 10,000 Adds on 1-element tensors), and the memory plan's peak against its
# lower bound. Installs onnxruntime into build/venv (from PyPI) when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x build/venv/bin/python ]; then
  python3 -m venv build/venv
fi
if ! build/venv/bin/python -c "import onnxruntime, numpy" 2>/dev/null; then
  build/venv/bin/pip install --quiet onnxruntime numpy
fi
cargo bench -p rge-runtime --bench overhead
