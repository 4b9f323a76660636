#!/usr/bin/env bash
# Copies the model test suites the onnx wheel ships (onnx/backend/test/data/{simple,
# pytorch-converted,pytorch-operator}: one folder per test with model.onnx and
# test_data_set_*/{input,output}_N.pb) to build/onnx-wheel-tests/<suite>, for `rge conformance`.
#
#   bash scripts/gen_onnx_wheel_tests.sh     # after scripts/gen_onnx_node_tests.sh made build/venv
#
# The suites are data files of the pinned onnx release in build/venv (gen_onnx_node_tests.sh
# installs it); copied rather than pointed at so the folder layout does not depend on the venv's
# Python version. Re-running is cheap: skipped when the copy is of the same onnx version.
# Env: RGE_ONNX_WHEEL_TESTS_OUT (default build/onnx-wheel-tests).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=build/venv
OUT="${RGE_ONNX_WHEEL_TESTS_OUT:-build/onnx-wheel-tests}"
SUITES="simple pytorch-converted pytorch-operator"
STAMP="$OUT/.onnx-version"

VERSION="$("$VENV/bin/python" -c 'import onnx; print(onnx.__version__)')"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$VERSION" ]; then
  echo "onnx wheel tests: $OUT is up to date (onnx $VERSION)"
  exit 0
fi
DATA="$("$VENV/bin/python" -c 'import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data"))')"
rm -rf "$OUT"
mkdir -p "$OUT"
for s in $SUITES; do
  cp -r "$DATA/$s" "$OUT/$s"
  echo "onnx wheel tests: $(ls "$OUT/$s" | wc -l) tests in $OUT/$s (onnx $VERSION)"
done
echo "$VERSION" > "$STAMP"
