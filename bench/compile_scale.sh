#!/usr/bin/env bash
# The whole compile at scale (issue "whole compile at scale"): rge compile beside onnxruntime's
# session creation and OpenVINO's compile_model on random elementwise DAGs of 10k–100k nodes.
#
#   bash bench/compile_scale.sh [--nodes 10000,30000,100000] [--runs 3]
#
# Uses the venv and peers of bench/compare.sh (build/venv; run compare.sh once to install
# them) and the release rge (built here unless RGE_BENCH_NO_BUILD=1). See docs/bench.md.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=build/venv
if ! "$VENV/bin/python" -c "import onnx, onnxruntime, openvino" 2>/dev/null; then
  echo "compile_scale.sh: $VENV lacks onnx/onnxruntime/openvino: run bench/compare.sh once" >&2
  exit 1
fi
RGE_BIN="${RGE_BIN:-${CARGO_TARGET_DIR:-target}/release/rge}"
if [ "${RGE_BENCH_NO_BUILD:-0}" != 1 ]; then
  cargo build --release -p rge >&2
fi
PYTHONDONTWRITEBYTECODE=1 exec "$VENV/bin/python" -u bench/compile_scale.py --rge "$RGE_BIN" "$@"
