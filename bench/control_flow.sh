#!/usr/bin/env bash
# --control-flow nested against rts, with onnxruntime beside them, on the VAD-like model and
# the static control-flow node tests (bench/control_flow.py; docs/rts-engine.md has figures).
#
#   bash bench/control_flow.sh [--runs N] [--rounds N]
#
# Needs build/venv with onnx and onnxruntime (scripts/gen_onnx_node_tests.sh, bench/compare.sh
# make it) and builds the release rge unless RGE_BENCH_NO_BUILD=1 (then RGE_BIN, default
# target/release/rge).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${RGE_BENCH_NO_BUILD:-0}" != 1 ]; then
  cargo build --release --quiet -p rge
fi
exec build/venv/bin/python bench/control_flow.py "${RGE_BIN:-target/release/rge}" "$@"
