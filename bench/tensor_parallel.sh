#!/usr/bin/env bash
# Tensor-parallel runs of GPT-2 (../shared/bench/make_models.py, 124M parameters, 128 tokens)
# under mpirun at 1, 2 and 4 ranks (oversubscribed past the cores): each rank's peak memory
# (max RSS, /usr/bin/time), its sharded weight bytes, the run time, and the largest error of
# the logits against the one-process run, relative to the largest logit.
#
#   bash bench/tensor_parallel.sh [MODEL.onnx]     # default: GPT-2 in build/bench-models
#
# Needs Open MPI (openmpi-bin, libopenmpi-dev, libclang-dev) and the venv of
# scripts/gen_onnx_node_tests.sh (onnx, numpy) to make the model.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v mpirun >/dev/null 2>&1; then
  echo "tensor_parallel.sh: mpirun not found (apt-get install openmpi-bin libopenmpi-dev libclang-dev clang)" >&2
  exit 2
fi
[ -x /usr/bin/time ] || { echo "tensor_parallel.sh: /usr/bin/time not found (apt-get install time)" >&2; exit 2; }
[ -x build/venv/bin/python ] || bash scripts/gen_onnx_node_tests.sh >/dev/null
MODEL="${1:-}"
if [ -z "$MODEL" ]; then
  MODEL=build/bench-models/gpt2/model.onnx
  [ -f "$MODEL" ] || build/venv/bin/python ../shared/bench/make_models.py --out build/bench-models --only gpt2 --no-ref
fi
OUT=build/tensor-parallel
mkdir -p "$OUT"
# Feeds: every input of the model, integers in [0, 1000) (token ids), floats in [-1, 1).
build/venv/bin/python - "$MODEL" "$OUT" <<'EOF'
import sys, numpy as np, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
rng = np.random.default_rng(0)
init = {i.name for i in m.graph.initializer}
args = []
for i in m.graph.input:
    if i.name in init:
        continue
    t = i.type.tensor_type
    dims = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
    dt = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
    a = rng.integers(0, 1000, dims).astype(dt) if np.issubdtype(dt, np.integer) else rng.uniform(-1, 1, dims).astype(dt)
    np.save(f"{sys.argv[2]}/{i.name}.npy", a)
    args.append(f"--input {i.name}={sys.argv[2]}/{i.name}.npy")
open(f"{sys.argv[2]}/inputs.txt", "w").write(" ".join(args))
EOF
cargo build --release -q -p rge --features mpi
RGE=target/release/rge
INPUTS=$(cat "$OUT/inputs.txt")
ROOT=()
[ "$(id -u)" = 0 ] && ROOT=(--allow-run-as-root)
printf '%-6s %-6s %14s %22s %10s %14s\n' ranks rank "peak RSS MB" "sharded weights MB" "run ms" "max rel err"
for n in 1 2 4; do
  rm -rf "$OUT/tp$n" && mkdir -p "$OUT/tp$n"
  if [ "$n" = 1 ]; then
    # shellcheck disable=SC2086
    /usr/bin/time -f "%M" -o "$OUT/tp1/rss.0" $RGE run "$MODEL" $INPUTS --output-dir "$OUT/tp1" > "$OUT/tp1/log.0"
  else
    # shellcheck disable=SC2086
    mpirun "${ROOT[@]}" --oversubscribe --bind-to none --mca btl self,vader -np "$n" sh -c \
      "/usr/bin/time -f %M -o $OUT/tp$n/rss.\$OMPI_COMM_WORLD_RANK $RGE run $MODEL $INPUTS --tensor-parallel $n --output-dir $OUT/tp$n > $OUT/tp$n/log.\$OMPI_COMM_WORLD_RANK"
  fi
  for ((r = 0; r < n; r++)); do
    rss=$(( $(tail -n 1 "$OUT/tp$n/rss.$r") / 1024 ))
    w=$(grep -o 'sharded weights [0-9]* of [0-9]*' "$OUT/tp$n/log.0" | awk '{printf "%.1f of %.1f", $3/1048576, $5/1048576}' || true)
    ms=$(grep -o 'run [0-9.]* ms' "$OUT/tp$n/log.0" | awk '{print $2}' || true)
    err=-
    if [ "$r" = 0 ]; then
      err=$(build/venv/bin/python -c "
import glob, numpy as np
e = 0.0
for f in glob.glob('$OUT/tp1/*.npy'):
    a, b = np.load(f), np.load(f.replace('/tp1/', '/tp$n/'))
    e = max(e, float(np.abs(a - b).max() / max(np.abs(a).max(), 1e-30)))
print(f'{e:.2e}')")
    fi
    printf '%-6s %-6s %14s %22s %10s %14s\n' "$n" "$r" "$rss" "${w:-all}" "$ms" "$err"
  done
done
