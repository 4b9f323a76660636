#!/usr/bin/env bash
# Generates the ai.onnx.ml and com.microsoft test suites (scripts/gen_ml_ms_tests.py) in the
# ONNX backend layout, the expected outputs computed by onnxruntime:
#
#   bash scripts/gen_ml_ms_tests.sh      # → build/ml-ms-tests/{ml,ms}/<test>/…
#
# It makes a Python venv in build/mlvenv (ignored by git) with the pinned onnx, onnxruntime,
# scikit-learn and skl2onnx releases. Re-running is cheap: the venv is kept and the data
# regenerated only when the versions or the generator scripts changed.
# Env: PYTHON (default python3), RGE_ML_MS_TESTS_OUT (default build/ml-ms-tests).
set -euo pipefail
cd "$(dirname "$0")/.."

# sympy: onnxruntime.transformers.optimizer (its symbolic shape inference) needs it.
PINS="onnx==1.23.2 onnxruntime==1.32.0 scikit-learn==1.7.2 skl2onnx==1.20.0 numpy==2.4.6 sympy==1.14.0"
PYTHON="${PYTHON:-python3}"
VENV=build/mlvenv
OUT="${RGE_ML_MS_TESTS_OUT:-build/ml-ms-tests}"
STAMP="$OUT/.versions"
VERSIONS="$PINS $(cat scripts/gen_ml_ms_tests.py scripts/gen_ml_tests.py scripts/gen_ms_tests.py | cksum)"

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$VERSIONS" ]; then
  echo "ml/ms tests: $OUT is up to date ($(ls "$OUT/ml" | wc -l) ml, $(ls "$OUT/ms" | wc -l) ms)"
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
WANT="('1.23.2', '1.32.0', '1.7.2', '1.20.0', '2.4.6', '1.14.0')"
if ! "$VENV/bin/python" -c "import onnx, onnxruntime, sklearn, skl2onnx, numpy, sympy, sys; sys.exit((onnx.__version__, onnxruntime.__version__, sklearn.__version__, skl2onnx.__version__, numpy.__version__, sympy.__version__) != $WANT)" 2>/dev/null; then
  # shellcheck disable=SC2086
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $PINS
fi
rm -rf "$OUT"
mkdir -p "$OUT"
# Warnings are off; errors (a case the generator cannot build) stay visible and stop the run.
"$VENV/bin/python" -W ignore scripts/gen_ml_ms_tests.py "$OUT"
echo "$VERSIONS" > "$STAMP"
