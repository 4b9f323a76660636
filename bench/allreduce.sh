#!/usr/bin/env bash
# All-reduce bandwidth of the comm engine (its HcomAllReduce kernel over the MPI backend)
# beside a raw MPI_Allreduce on the same buffers, f32 sum, 4 KiB to 256 MiB, in the same run
# (crates/rge-comm/examples/allreduce_bench.rs, release, under mpirun). The bar: ratio ≥ 0.95
# at every size of 1 MiB and above.
#
#   bash bench/allreduce.sh [NP]        # ranks (default 2; oversubscribed past the cores)
#
# Env: RGE_BENCH_ROUNDS (alternating rounds per size, best counts; default 3),
#      RGE_BENCH_MAX_MIB (largest size; default 256).

set -euo pipefail
cd "$(dirname "$0")/.."
NP="${1:-2}"
if ! command -v mpirun >/dev/null 2>&1; then
  echo "allreduce.sh: mpirun not found (apt-get install openmpi-bin libopenmpi-dev libclang-dev clang)" >&2
  exit 2
fi
cargo build --release -q -p rge-comm --features mpi --example allreduce_bench
ROOT=()
[ "$(id -u)" = 0 ] && ROOT=(--allow-run-as-root)
mpirun "${ROOT[@]}" --oversubscribe --bind-to none -np "$NP" target/release/examples/allreduce_bench
