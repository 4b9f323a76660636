#!/usr/bin/env bash
# The test command of README.md: generates the ONNX node-test data (a Python venv under build/,
# pinned onnx 1.23.2; skipped when up to date), then runs every test of the workspace (unit,
# integration, property, conformance and doc tests) in one cargo build, the Python bindings'
# pytest tests (scripts/test_python.sh), then `rge conformance`
# over the node tests against conformance/floor, then the bundled example as a smoke test.
set -euo pipefail
cd "$(dirname "$0")/.."
# Without a Wayland session, Mesa's device-select layer prints an error line whenever a test
# looks for a gpu adapter; rge's own command line turns it off the same way.
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then export NODEVICE_SELECT=1; fi
bash scripts/gen_onnx_node_tests.sh
# The ai.onnx.ml (skl2onnx) and com.microsoft suites, onnxruntime's outputs (build/mlvenv).
bash scripts/gen_ml_ms_tests.sh
# rge/mpi: the comm engine's MPI backend and its mpirun tests (Open MPI, installed by .ci/run).
# Every cargo command below uses the same features, so that the one build serves them all.
FEATURES=(--features rge/gpu)
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
  FEATURES+=(--features rge/mpi)
else
  echo "test.sh: Open MPI not found: the comm engine's MPI backend and its mpirun tests are skipped" \
    "(apt-get install openmpi-bin libopenmpi-dev libclang-dev clang)"
fi
cargo test --workspace "${FEATURES[@]}"
# The gpu engine's tests on a software adapter (Mesa's lavapipe, installed by .ci/run), which
# the engine skips unless RGE_GPU=1; the other tests above ran without it.
RGE_GPU=1 cargo test --workspace "${FEATURES[@]}" --test gpu_engine
# The Python bindings (python/): built into build/pyvenv, pytest against onnxruntime.
bash scripts/test_python.sh
# The ONNX node tests through the whole pipeline; fails below the floor kept in the repo.
cargo run --quiet -p rge "${FEATURES[@]}" -- conformance build/onnx-node-tests/node --min-pass "$(cat conformance/floor)" | tail -n 12
# Every version of every op of onnx's schema history (all four of its domains) is in the
# registry.
cargo run --quiet -p rge "${FEATURES[@]}" -- ops --json > build/rge-ops.json
build/venv/bin/python scripts/check_opset_history.py build/rge-ops.json --domain ai.onnx \
  --domain ai.onnx.ml --domain ai.onnx.preview.training --domain ai.onnx.preview
# The onnx wheel's model suites (simple, pytorch-converted, pytorch-operator), with floors.
bash scripts/gen_onnx_wheel_tests.sh
# Then again with the gpu engine first in the order (on lavapipe: RGE_GPU=1), same floors.
while read -r suite floor; do
  cargo run --quiet -p rge "${FEATURES[@]}" -- conformance "build/onnx-wheel-tests/$suite" --min-pass "$floor" < /dev/null | tail -n 12
  RGE_GPU=1 cargo run --quiet -p rge "${FEATURES[@]}" -- \
    conformance "build/onnx-wheel-tests/$suite" --min-pass "$floor" < /dev/null | tail -n 3
done < conformance/wheel_floors
# The ai.onnx.ml and com.microsoft suites: every test must pass (no --min-pass: one failure
# fails), and the generator must have written at least the floor's count of tests.
for suite in ml ms; do
  made=$(find "build/ml-ms-tests/$suite" -mindepth 1 -maxdepth 1 -type d | wc -l)
  if [ "$made" -lt "$(cat "conformance/${suite}_floor")" ]; then
    echo "test.sh: $made $suite tests generated, conformance/${suite}_floor expects $(cat "conformance/${suite}_floor")" >&2
    exit 1
  fi
  cargo run --quiet -p rge "${FEATURES[@]}" -- conformance "build/ml-ms-tests/$suite" | tail -n 12
done
cargo run --quiet -p rge "${FEATURES[@]}" -- run examples/tiny_cnn.onnx --input image=examples/tiny_cnn_image.npy > /dev/null
cargo run --quiet -p rge-ir --example demo > /dev/null
echo "examples: ok"
