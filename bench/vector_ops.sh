#!/usr/bin/env bash
# Every vector elementwise / normalization / reduction kernel against the cpu engine's kernel
# of the same node on the same large input (median of the runs, output buffer reused as the
# runtime's arena does): the time of each and the ratio vector/cpu (below 1: vector faster).
# Builds and runs crates/rge-vector/examples/ops_vs_cpu.rs (release) once per thread count.
#
#   bash bench/vector_ops.sh [--n FLOATS] [--runs N] [--threads "1 2"]

set -euo pipefail
cd "$(dirname "$0")/.."

N=4194304
RUNS=15
THREADS="1"
while [ $# -gt 0 ]; do
  case "$1" in
    --n) N="$2"; shift ;;
    --runs) RUNS="$2"; shift ;;
    --threads) THREADS="$2"; shift ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "vector_ops.sh: unknown option \`$1\` (options: --n FLOATS, --runs N, --threads LIST)" >&2; exit 2 ;;
  esac
  shift
done

cargo build --release -q -p rge-vector --example ops_vs_cpu
for t in $THREADS; do
  ./target/release/examples/ops_vs_cpu --n "$N" --runs "$RUNS" --threads "$t"
done
