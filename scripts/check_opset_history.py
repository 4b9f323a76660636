"""Checks rge's op registry against the ONNX schema history.

Every (op type, since_version) that `onnx.defs.get_all_schemas_with_history()` lists for a
domain must be a prototype of rge's registry (`rge ops --json`), so a model importing any opset
of that domain finds each op's version with that version's signature. Prints `N of N` (present
of listed) per domain and exits 1 when one is missing, naming each missing version.

usage: python check_opset_history.py OPS_JSON [--domain DOMAIN ...]

OPS_JSON is the output of `rge ops --json` ("-" reads stdin). DOMAIN defaults to the default
domain ("" / "ai.onnx"); give `--domain ai.onnx.ml` (repeatable) for others. Versions rge
registers that the history does not list are reported as notes (a wrong version boundary),
not failures.
"""

import argparse
import collections
import json
import sys

import onnx.defs


def normalize(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


def onnx_versions(domain: str) -> dict:
    """op type -> sorted since_versions of the schema history of `domain`."""
    out = collections.defaultdict(set)
    for s in onnx.defs.get_all_schemas_with_history():
        if normalize(s.domain) == domain:
            out[s.name].add(s.since_version)
    return {k: sorted(v) for k, v in out.items()}


def rge_versions(ops: list, domain: str) -> dict:
    out = collections.defaultdict(set)
    for o in ops:
        if normalize(o["domain"]) == domain:
            out[o["op_type"]].add(o["since_version"])
    return out


def check(ops: list, domain: str) -> bool:
    want = onnx_versions(domain)
    have = rge_versions(ops, domain)
    missing = [(t, v) for t, vs in sorted(want.items()) for v in vs if v not in have.get(t, ())]
    extra = [
        (t, v)
        for t, vs in sorted(have.items())
        if t in want
        for v in sorted(vs)
        if v not in want[t]
    ]
    total = sum(len(v) for v in want.values())
    name = domain or "ai.onnx"
    for t, v in missing:
        print(f"missing: {name} {t} v{v}")
    for t, v in extra:
        print(f"note: rge registers {name} {t} v{v}, which the ONNX history does not list")
    print(f"{name}: {total - len(missing)} of {total} schema versions "
          f"(onnx {onnx.__version__}, opsets 1-{onnx.defs.onnx_opset_version()})")
    return not missing


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ops_json", help="`rge ops --json` output, or - for stdin")
    ap.add_argument("--domain", action="append", help="domain to check (default: ai.onnx)")
    args = ap.parse_args()
    text = sys.stdin.read() if args.ops_json == "-" else open(args.ops_json).read()
    ops = json.loads(text)["ops"]
    domains = [normalize(d) for d in (args.domain or [""])]
    ok = all([check(ops, d) for d in domains])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
