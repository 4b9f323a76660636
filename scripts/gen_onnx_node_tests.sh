#!/usr/bin/env bash
# Generates the ONNX backend node tests (model.onnx + test_data_set_0/{input,output}_N.pb per
# test) that crates/rge-ops/tests/onnx_node_inference.rs checks shape/dtype inference against.
#
#   bash scripts/gen_onnx_node_tests.sh            # → build/onnx-node-tests/node/<test>/…
#
# It makes a Python venv in build/venv (ignored by git), pip-installs the pinned onnx release
# (and numpy) and runs upstream's writer (`onnx.backend.test.cmd_tools.generate_data`) over the
# node test cases (scripts/gen_onnx_node_tests.py). Re-running is cheap: the venv is kept and the
# data regenerated only when the onnx version changed or the folder is missing.
# Env: PYTHON (default python3), RGE_ONNX_VERSION (default 1.23.2), RGE_ONNX_NODE_TESTS_OUT
# (default build/onnx-node-tests).
set -euo pipefail
cd "$(dirname "$0")/.."

ONNX_VERSION="${RGE_ONNX_VERSION:-1.23.2}"
# ml_dtypes decides the expected outputs of out-of-range casts to 2- and 4-bit integers: 0.7
# saturates to 0 where 0.5 wraps (what the ONNX spec and rge's kernels do). Pinned so the
# data, and CI's pass count, do not depend on what pip picks.
ML_DTYPES_VERSION=0.5.4
PYTHON="${PYTHON:-python3}"
VENV=build/venv
OUT="${RGE_ONNX_NODE_TESTS_OUT:-build/onnx-node-tests}"
STAMP="$OUT/.onnx-version"
VERSIONS="$ONNX_VERSION ml_dtypes $ML_DTYPES_VERSION"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$VERSIONS" ] && [ -d "$OUT/node" ]; then
  echo "onnx node tests: $OUT/node is up to date (onnx $ONNX_VERSION, $(ls "$OUT/node" | wc -l) tests)"
  exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import onnx, ml_dtypes, sys; sys.exit(onnx.__version__ != '$ONNX_VERSION' or ml_dtypes.__version__ != '$ML_DTYPES_VERSION')" 2>/dev/null; then
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "onnx==$ONNX_VERSION" "ml_dtypes==$ML_DTYPES_VERSION" numpy
fi

rm -rf "$OUT"
mkdir -p "$OUT"
# The writer puts node tests under <out>/node/<test name>/.
"$VENV/bin/python" -W ignore scripts/gen_onnx_node_tests.py "$OUT" >/dev/null
echo "$VERSIONS" > "$STAMP"
echo "onnx node tests: $(ls "$OUT/node" | wc -l) tests in $OUT/node (onnx $ONNX_VERSION)"
