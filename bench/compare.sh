#!/usr/bin/env bash
# rge beside ONNX Runtime and OpenVINO on the models of ../shared/bench/make_models.py and
# bench/more_models.py (and, with --layers, on single-op models of their Conv and MatMul layers),
# same inputs, same run.
#
#   bash bench/compare.sh [--threads 1,2] [--runs N] [--warmup N] [--only NAME…] [--layers [--families F,…]] [--json]
#
# Installs onnxruntime and openvino (pinned below) into build/venv, the venv
# scripts/gen_onnx_node_tests.sh makes, builds the release rge, generates the models into
# build/bench-models (kept between runs; never committed) and runs bench/compare.py. See
# docs/bench.md for what it measures and how to read the ratios.
#
# Env: RGE_ORT_VERSION (default 1.32.0), RGE_OV_VERSION (default 2026.4.1), PYTHON (default
# python3), RGE_BENCH_NO_BUILD=1 (use the rge binary already built), RGE_BIN (the rge binary).
set -euo pipefail
cd "$(dirname "$0")/.."

case " $* " in
  *" -h "*|*" --help "*) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac

ORT_VERSION="${RGE_ORT_VERSION:-1.32.0}"
OV_VERSION="${RGE_OV_VERSION:-2026.4.1}"
# The venv's onnx: the version gen_onnx_node_tests.sh pins, when it has not installed one yet.
ONNX_VERSION="${RGE_ONNX_VERSION:-1.23.2}"
PYTHON="${PYTHON:-python3}"
VENV=build/venv
MAKE_MODELS=../shared/bench/make_models.py

if [ ! -f "$MAKE_MODELS" ]; then
  echo "compare.sh: $MAKE_MODELS not found (the shared benchmark material)" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
if ! "$VENV/bin/python" - "$ORT_VERSION" "$OV_VERSION" <<'EOF' 2>/dev/null
import sys
import numpy, onnx, onnxruntime, openvino
ov = openvino.__version__.split("-")[0]
sys.exit(onnxruntime.__version__ != sys.argv[1] or ov != sys.argv[2])
EOF
then
  pkgs=("onnxruntime==$ORT_VERSION" "openvino==$OV_VERSION" numpy)
  "$VENV/bin/python" -c "import onnx" 2>/dev/null || pkgs+=("onnx==$ONNX_VERSION")
  echo "compare.sh: installing ${pkgs[*]} into $VENV" >&2
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${pkgs[@]}"
fi

RGE_BIN="${RGE_BIN:-${CARGO_TARGET_DIR:-target}/release/rge}"
if [ "${RGE_BENCH_NO_BUILD:-0}" != 1 ]; then
  cargo build --release -p rge >&2
fi
if [ ! -x "$RGE_BIN" ]; then
  echo "compare.sh: no rge binary at $RGE_BIN (build it: cargo build --release -p rge)" >&2
  exit 1
fi

PYTHONDONTWRITEBYTECODE=1 exec "$VENV/bin/python" -u bench/compare.py --rge "$RGE_BIN" --make-models "$MAKE_MODELS" "$@"
