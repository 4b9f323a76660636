#!/usr/bin/env bash
# Two rge builds compared stage by stage on one model (docs/bench.md):
#
#   bash bench/compile_ab.sh [--runs N] BIN_A BIN_B [MODEL]
#
# Runs `BIN compile MODEL -v` N times per binary, in A B B A order, and prints each stage's
# minimum and median per binary with B ÷ A. The order alternates so that what the previous
# process left (memory the host may take back: docs/bench.md, "On a VM …") falls on both alike;
# the VM's own noise stays (a binary against itself: ±13% on a stage), so repeat.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=8
if [[ "${1:-}" == "--runs" ]]; then runs=$2; shift 2; fi
if [[ $# -lt 2 ]]; then
  echo "usage: bash bench/compile_ab.sh [--runs N] BIN_A BIN_B [MODEL]" >&2
  exit 2
fi
a=$1 b=$2 model=${3:-build/scale/dag_100000.onnx}
for bin in "$a" "$b"; do
  [[ -x "$bin" ]] || { echo "compile_ab.sh: $bin is not an executable" >&2; exit 2; }
done
[[ -f "$model" ]] || { echo "compile_ab.sh: no model $model (bench/compile_scale.sh writes the DAGs)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for i in $(seq "$runs"); do
  if (( i % 2 )); then order=("A:$a" "B:$b"); else order=("B:$b" "A:$a"); fi
  for tagged in "${order[@]}"; do
    tag=${tagged%%:*} bin=${tagged#*:}
    "$bin" compile "$model" -o "$out/m.om" -v 2>&1 | sed -n "s/^rge: stage \([a-z_]*\) \([0-9.]*\) ms.*/$tag \1 \2/p"
  done
done | python3 -c '
import sys, collections, statistics as st
times = collections.defaultdict(lambda: {"A": [], "B": []})
for line in sys.stdin:
    tag, stage, ms = line.split()
    times[stage][tag].append(float(ms))
print("{:26} {:>8} {:>8} {:>5}   {:>8} {:>8} {:>5}".format("stage", "min A", "min B", "B÷A", "med A", "med B", "B÷A"))
for stage, t in times.items():
    if not t["A"] or not t["B"]:
        continue
    a, b = min(t["A"]), min(t["B"])
    ma, mb = st.median(t["A"]), st.median(t["B"])
    if max(a, b) >= 5:
        print(f"{stage:26} {a:8.1f} {b:8.1f} {b / a:5.2f}   {ma:8.1f} {mb:8.1f} {mb / ma:5.2f}")
'
