# Sourced by the bench scripts that run the release rge beside the peers of bench/compare.sh
# (from the repository root). Sets VENV (build/venv) and RGE_BIN (default: the release rge,
# built here unless RGE_BENCH_NO_BUILD=1); `need_peers SCRIPT MODULE…` exits unless the venv
# imports every MODULE.
VENV=build/venv
need_peers() {
  local who=$1 mods
  shift
  mods=$(IFS=,; echo "$*")
  if ! "$VENV/bin/python" -c "import $mods" 2>/dev/null; then
    echo "$who: $VENV lacks $mods: run bench/compare.sh once" >&2
    exit 1
  fi
}
RGE_BIN="${RGE_BIN:-${CARGO_TARGET_DIR:-target}/release/rge}"
if [ "${RGE_BENCH_NO_BUILD:-0}" != 1 ]; then
  cargo build --release -p rge >&2
fi
