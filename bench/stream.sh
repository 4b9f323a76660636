#!/usr/bin/env bash
# A STREAM-like measurement of the machine's memory bandwidth (copy/scale/add/triad on large
# arrays, median of the runs) and the vector engine's large elementwise loops (Add, Mul, Relu,
# Sigmoid, Erf) as a fraction of the STREAM kernel that moves the same bytes (the bar: 80%).
# Builds and runs crates/rge-vector/examples/stream.rs (release) once per thread count.
#
#   bash bench/stream.sh [--mib N] [--runs N] [--threads "1 2"] [--json]
#
# Env: RGE_STREAM_MIB (default 64), RGE_STREAM_RUNS (default 15), RGE_STREAM_THREADS ("1").

set -euo pipefail
cd "$(dirname "$0")/.."

MIB="${RGE_STREAM_MIB:-64}"
RUNS="${RGE_STREAM_RUNS:-15}"
THREADS="${RGE_STREAM_THREADS:-1}"
JSON=()
while [ $# -gt 0 ]; do
  case "$1" in
    --mib) MIB="$2"; shift ;;
    --runs) RUNS="$2"; shift ;;
    --threads) THREADS="$2"; shift ;;
    --json) JSON=(--json) ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "stream.sh: unknown option \`$1\` (options: --mib N, --runs N, --threads LIST, --json)" >&2; exit 2 ;;
  esac
  shift
done

cargo build --release -q -p rge-vector --example stream
for t in $THREADS; do
  ./target/release/examples/stream --mib "$MIB" --runs "$RUNS" --threads "$t" "${JSON[@]}"
done
