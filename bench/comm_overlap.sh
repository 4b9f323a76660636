#!/usr/bin/env bash
# Communication overlapping computation: the comm engine's all-reduce on its own stream beside
# a MatMul chain, stream executor against sequential, 2 in-process ranks of one thread each,
# rank 1 reaching the all-reduce 10 ms late
# (crates/rge/examples/comm_overlap.rs, release). Prints both medians and the speedup.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --release -q -p rge --example comm_overlap
