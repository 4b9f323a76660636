#!/usr/bin/env bash
# The test command of README.md: every test of the workspace (unit, integration, property and
# doc tests) in one cargo build, then the bundled example as a smoke test.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
cargo run --quiet --locked -p rge-ir --example demo > /dev/null
echo "example: ok"
