#!/usr/bin/env bash
# Each model's latency with and without the gpu engine, and the time its runs spend in
# transfers (MemcpyAsync in the per-op profile), from `rge bench` in the same run.
#
#   bash bench/gpu.sh [--runs N] [--threads N] [MODEL.onnx …]
#
# Default models: build/bench-models/*/model.onnx (bench/compare.sh generates them). Builds the
# release rge with `--features gpu` unless RGE_BENCH_NO_BUILD=1 (RGE_BIN: the binary). With no
# adapter the engine is absent and both columns are the host engines. Figures on Mesa's
# lavapipe (a CPU rasterizer) say nothing about a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=5
THREADS=$(nproc)
MODELS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) MODELS+=("$1"); shift ;;
  esac
done
if [ ${#MODELS[@]} -eq 0 ]; then
  for m in build/bench-models/*/model.onnx; do [ -f "$m" ] && MODELS+=("$m"); done
fi
if [ ${#MODELS[@]} -eq 0 ]; then
  echo "gpu.sh: no models given and none in build/bench-models (run bench/compare.sh once)" >&2
  exit 1
fi
RGE="${RGE_BIN:-target/release/rge}"
if [ "${RGE_BENCH_NO_BUILD:-0}" != 1 ]; then
  cargo build --release --quiet -p rge --features gpu
fi
"$RGE" engines | grep -E '^gpu' || true

bench() { # model, extra args… → the json of rge bench
  local model="$1"; shift
  "$RGE" bench "$model" --random-inputs --runs "$RUNS" --warmup 2 --threads "$THREADS" --json "$@" 2>/dev/null
}

printf '%-28s %12s %12s %8s %14s\n' model "gpu ms" "no-gpu ms" ratio "transfers ms"
for m in "${MODELS[@]}"; do
  name=$(basename "$(dirname "$m")")
  with=$(bench "$m" || echo '{}')
  without=$(bench "$m" --exclude-engines gpu || echo '{}')
  python3 - "$name" "$with" "$without" <<'PY'
import json, sys
name, a, b = sys.argv[1], json.loads(sys.argv[2] or "{}"), json.loads(sys.argv[3] or "{}")
ga, gb = a.get("median_ms"), b.get("median_ms")
tr = a.get("op_ms", {}).get("MemcpyAsync", 0.0)
fmt = lambda v: f"{v:12.2f}" if isinstance(v, (int, float)) else f"{'failed':>12}"
ratio = f"{ga / gb:8.2f}" if ga and gb else f"{'-':>8}"
print(f"{name:<28} {fmt(ga)} {fmt(gb)} {ratio} {tr:14.2f}")
PY
done
