#!/usr/bin/env bash
# The machine's fp32 FMA peak: builds ../shared/bench/fma_peak.c (with -mavx512f only when the
# CPU has AVX-512), runs one copy per core at once (each pinned to its core with taskset when
# there is one) and prints each core's GFLOP/s and their sum. The best of the ISAs the binary
# measures (AVX2, AVX-512) is each core's peak; the best of 3 rounds is kept, as other work on
# the machine only ever lowers the figure.
#
#   bash bench/fma_peak.sh [--json]
#
# Env: RGE_FMA_PEAK_SRC (default ../shared/bench/fma_peak.c), CC (default gcc),
# RGE_FMA_PEAK_ROUNDS (default 3).

set -euo pipefail
cd "$(dirname "$0")/.."

JSON=0
for a in "$@"; do
  case "$a" in
    --json) JSON=1 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fma_peak.sh: unknown option \`$a\` (options: --json)" >&2; exit 2 ;;
  esac
done

SRC="${RGE_FMA_PEAK_SRC:-../shared/bench/fma_peak.c}"
CC="${CC:-gcc}"
if [ ! -f "$SRC" ]; then
  echo "fma_peak.sh: $SRC not found (set RGE_FMA_PEAK_SRC to fma_peak.c)" >&2
  exit 1
fi
if ! command -v "$CC" >/dev/null; then
  echo "fma_peak.sh: no C compiler \`$CC\` (set CC)" >&2
  exit 1
fi

FLAGS="-O2 -mfma -mavx2"
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
  FLAGS="$FLAGS -mavx512f"
fi
OUT=build/bench/fma_peak
mkdir -p "$OUT"
BIN="$OUT/fma_peak"
# Rebuilt when the source or the flags change.
if [ ! -x "$BIN" ] || [ "$SRC" -nt "$BIN" ] || [ "$(cat "$BIN.flags" 2>/dev/null)" != "$FLAGS" ]; then
  # shellcheck disable=SC2086
  "$CC" $FLAGS -o "$BIN" "$SRC"
  echo "$FLAGS" > "$BIN.flags"
fi

CORES=$(nproc)
ROUNDS="${RGE_FMA_PEAK_ROUNDS:-3}"
case "$ROUNDS" in
  ''|*[!0-9]*|0) echo "fma_peak.sh: RGE_FMA_PEAK_ROUNDS \`$ROUNDS\`: expected a count of at least 1" >&2; exit 2 ;;
esac
PIN=""
command -v taskset >/dev/null && PIN=taskset
rm -f "$OUT"/core*.txt
for ((r = 0; r < ROUNDS; r++)); do
  pids=()
  for ((c = 0; c < CORES; c++)); do
    if [ -n "$PIN" ]; then
      taskset -c "$c" "$BIN" >> "$OUT/core$c.txt" &
    else
      "$BIN" >> "$OUT/core$c.txt" &
    fi
    pids+=($!)
  done
  for p in "${pids[@]}"; do
    wait "$p"
  done
done

# Each output line: "<ISA> <GFLOP/s> GFLOP/s per core ..."; a core's peak is its best line.
per_core=()
isas=()
for ((c = 0; c < CORES; c++)); do
  best=$(awk '$3 == "GFLOP/s" { if ($2 + 0 > b + 0) { b = $2; isa = $1 } } END { printf "%s %s", b, isa }' "$OUT/core$c.txt")
  if [ -z "${best%% *}" ]; then
    echo "fma_peak.sh: no figure in $OUT/core$c.txt:" >&2
    cat "$OUT/core$c.txt" >&2
    exit 1
  fi
  per_core+=("${best%% *}")
  isas+=("${best##* }")
done
total=$(printf '%s\n' "${per_core[@]}" | awk '{ s += $1 } END { printf "%.1f", s }')
model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)

if [ "$JSON" = 1 ]; then
  list=$(IFS=,; echo "${per_core[*]}")
  printf '{"cpu": "%s", "cores": %d, "isa": "%s", "flags": "%s", "pinned": %s, "rounds": %d, "per_core_gflops": [%s], "machine_gflops": %s}\n' \
    "${model//\"/}" "$CORES" "${isas[0]}" "$FLAGS" "$([ -n "$PIN" ] && echo true || echo false)" "$ROUNDS" "$list" "$total"
else
  echo "fp32 FMA peak (${isas[0]}, $CORES copies at once${PIN:+, pinned}, best of $ROUNDS; $model)"
  for ((c = 0; c < CORES; c++)); do
    printf 'core %d: %8.1f GFLOP/s (%s)\n' "$c" "${per_core[$c]}" "${isas[$c]}"
  done
  printf 'machine: %7.1f GFLOP/s (%d cores)\n' "$total" "$CORES"
fi
