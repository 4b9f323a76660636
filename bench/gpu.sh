#!/usr/bin/env bash
# Each model's latency with and without the gpu engine, and the time its runs spend in
# transfers: their own (MemcpyAsync in the per-op profile of a run with RGE_GPU_SYNC=1, where
# every command waits) and with the host's waits for the device at each read-back (the same in
# the normal run), from `rge bench` in the same run.
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
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

printf '%-22s %10s %10s %7s %13s %13s\n' model "gpu ms" "no-gpu ms" ratio "transfers ms" "+waits ms"
for m in "${MODELS[@]}"; do
  name=$(basename "$(dirname "$m")")
  with=$(bench "$m" || echo '{}')
  without=$(bench "$m" --exclude-engines gpu || echo '{}')
  # RGE_GPU_SYNC=1: every gpu command waits, so the transfers' own time shows apart from the
  # device work the host waits for at each read-back.
  synced=$(RGE_GPU_SYNC=1 bench "$m" || echo '{}')
  python3 - "$name" "$with" "$without" "$synced" <<'PY'
import json, sys
name = sys.argv[1]
a, b, s = (json.loads(v or "{}") for v in sys.argv[2:5])
ga, gb = a.get("median_ms"), b.get("median_ms")
waits = a.get("op_ms", {}).get("MemcpyAsync", 0.0)
own = s.get("op_ms", {}).get("MemcpyAsync", 0.0)
fmt = lambda v, w: f"{v:{w}.2f}" if isinstance(v, (int, float)) else f"{'failed':>{w}}"
ratio = f"{ga / gb:7.2f}" if ga and gb else f"{'-':>7}"
print(f"{name:<22} {fmt(ga, 10)} {fmt(gb, 10)} {ratio} {own:13.2f} {waits:13.2f}")
PY
done
