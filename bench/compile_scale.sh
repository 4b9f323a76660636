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
source bench/common.sh
need_peers compile_scale.sh onnx onnxruntime openvino
PYTHONDONTWRITEBYTECODE=1 exec "$VENV/bin/python" -u bench/compile_scale.py --rge "$RGE_BIN" "$@"
