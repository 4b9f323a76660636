#!/usr/bin/env bash
# Peak memory of running a model (issue "whole compile at scale": weights + arena + 64 MiB):
# `rge run` beside onnxruntime, on the models bench/compare.sh generates.
#
#   bash bench/run_memory.sh [MODEL_DIR…]   (default: build/bench-models/{bert_base,gpt2,resnet50,mobilenetv2})
#
# Uses the venv and peers of bench/compare.sh (run it once to install them and generate the
# models) and the release rge (built here unless RGE_BENCH_NO_BUILD=1). See docs/bench.md.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=build/venv
if ! "$VENV/bin/python" -c "import onnx, onnxruntime" 2>/dev/null; then
  echo "run_memory.sh: $VENV lacks onnx/onnxruntime: run bench/compare.sh once" >&2
  exit 1
fi
RGE_BIN="${RGE_BIN:-${CARGO_TARGET_DIR:-target}/release/rge}"
if [ "${RGE_BENCH_NO_BUILD:-0}" != 1 ]; then
  cargo build --release -p rge >&2
fi
if [ $# -eq 0 ]; then
  set -- build/bench-models/bert_base build/bench-models/gpt2 build/bench-models/resnet50 \
    build/bench-models/mobilenetv2
fi
PYTHONDONTWRITEBYTECODE=1 exec "$VENV/bin/python" -u bench/run_memory.py --rge "$RGE_BIN" "$@"
