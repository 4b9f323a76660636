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
source bench/common.sh
need_peers run_memory.sh onnx onnxruntime
if [ $# -eq 0 ]; then
  set -- build/bench-models/bert_base build/bench-models/gpt2 build/bench-models/resnet50 \
    build/bench-models/mobilenetv2
fi
PYTHONDONTWRITEBYTECODE=1 exec "$VENV/bin/python" -u bench/run_memory.py --rge "$RGE_BIN" "$@"
