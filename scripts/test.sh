#!/usr/bin/env bash
# The test command of README.md: generates the ONNX node-test data (a Python venv under build/,
# pinned onnx 1.23.2; skipped when up to date), then runs every test of the workspace (unit,
# integration, property, conformance and doc tests) in one cargo build, then the bundled
# example as a smoke test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/gen_onnx_node_tests.sh
cargo test --workspace
cargo run --quiet -p rge-ir --example demo > /dev/null
echo "example: ok"
