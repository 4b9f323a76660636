"""Checks rge's op registry against the ONNX schema history.

Every (op type, since_version) that `onnx.defs.get_all_schemas_with_history()` lists for a
domain must be a prototype of rge's registry (`rge ops --json`), so a model importing any opset
of that domain finds each op's version with that version's signature. Each present version is
also compared with its schema:

- attributes: the same names (an attribute a version does not define is refused on a node of
  that version, and one it defines is accepted);
- inputs and outputs: the same arity, min and max, as onnx computes them (min: up to the last
  required port; max: every port, unbounded with a variadic). rge's variadic ports carry no
  minimum arity, so a variadic counts with the schema's minimum when both sides end in one.
  An outer-scope `captures` input that rge appends to an op with subgraphs (If) is the IR's
  convention (`_onnx_formal_inputs`), not a port of the schema, and is left out.

Prints each mismatch, `N of N` (present of listed) and the number of mismatches per domain,
and exits 1 when a version is missing or a present one mismatches (KNOWN_MISSING_ATTRS and
KNOWN_ARITY below list the only tolerated ones). Versions rge registers
that the history does not list are reported as notes (a wrong version boundary), not failures.

usage: python check_opset_history.py OPS_JSON [--domain DOMAIN ...]

OPS_JSON is the output of `rge ops --json` ("-" reads stdin). DOMAIN defaults to the default
domain ("" / "ai.onnx"); give `--domain ai.onnx.ml` (repeatable) for others.
"""

import argparse
import collections
import json
import sys

import onnx.defs

Option = onnx.defs.OpSchema.FormalParameterOption
UNBOUNDED = "inf"

# Mismatches tolerated while someone else fixes them: (domain, op type, version) -> the
# attribute names that may be missing from rge's prototype there, nothing else. Keep it EMPTY
# except for work in progress named here; an entry whose attributes are no longer missing is
# reported as stale (remove it).
KNOWN_MISSING_ATTRS = {}

# Arity mismatches tolerated, (domain, op type, version) -> the exact mismatch line; the same
# rule: EMPTY except for work in progress named here.
KNOWN_ARITY = {}


def normalize(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


def onnx_schemas(domain: str) -> dict:
    """(op type, since_version) -> schema, for the schema history of `domain`."""
    return {
        (s.name, s.since_version): s
        for s in onnx.defs.get_all_schemas_with_history()
        if normalize(s.domain) == domain
    }


def rge_protos(ops: list, domain: str) -> dict:
    """(op type, since_version) -> prototype (the `rge ops --json` entry)."""
    return {(o["op_type"], o["since_version"]): o for o in ops if normalize(o["domain"]) == domain}


def onnx_arity(params) -> tuple:
    """(min, max) as onnx's OpSchema::Finalize computes them; max "inf" with a variadic."""
    lo = hi = 0
    for p in params:
        if p.option == Option.Single:
            hi += 1
            lo = hi
        elif p.option == Option.Optional:
            hi += 1
        else:
            return hi + p.min_arity, UNBOUNDED
    return lo, hi


def rge_arity(ports: list, variadic_min: int) -> tuple:
    """(min, max) of rge's ports, a variadic counting `variadic_min` (rge keeps none)."""
    lo = hi = 0
    for p in ports:
        if p["kind"] == "required":
            hi += 1
            lo = hi
        elif p["kind"] == "optional":
            hi += 1
        else:
            return hi + variadic_min, UNBOUNDED
    return lo, hi


def variadic_min(params) -> int:
    return next((p.min_arity for p in params if p.option == Option.Variadic), 1)


def formal_inputs(proto: dict) -> list:
    """rge's inputs without the outer-scope captures of an op with subgraphs."""
    ins = proto["inputs"]
    if proto["subgraphs"] and ins and ins[-1]["name"] == "captures":
        return ins[:-1]
    return ins


def mismatches(schema, proto: dict, tolerated=()) -> list:
    """The differences of rge's prototype from the schema, as lines (attributes in
    `tolerated` may be missing)."""
    out = []
    want = {a for a in schema.attributes}
    have = {a["name"] for a in proto["attributes"]}
    parts = []
    missing = want - have - set(tolerated)
    if missing:
        parts.append("missing in rge: " + ", ".join(sorted(missing)))
    if have - want:
        parts.append("not in the schema: " + ", ".join(sorted(have - want)))
    if parts:
        out.append("attributes: " + "; ".join(parts))
    for what, params, ports in (
        ("inputs", schema.inputs, formal_inputs(proto)),
        ("outputs", schema.outputs, proto["outputs"]),
    ):
        w = onnx_arity(params)
        h = rge_arity(ports, variadic_min(params))
        if w != h:
            out.append(f"{what}: arity {h[0]}..{h[1]} in rge, {w[0]}..{w[1]} in the schema")
    return out


def check(ops: list, domain: str) -> bool:
    want = onnx_schemas(domain)
    have = rge_protos(ops, domain)
    name = domain or "ai.onnx"
    missing = sorted(k for k in want if k not in have)
    listed = {t for t, _ in want}
    extra = sorted(k for k in have if k[0] in listed and k not in want)
    bad = 0
    for t, v in missing:
        print(f"missing: {name} {t} v{v}")
    for (t, v), schema in sorted(want.items()):
        if (t, v) not in have:
            continue
        tolerated = KNOWN_MISSING_ATTRS.get((name, t, v), [])
        found = mismatches(schema, have[(t, v)], tolerated)
        rge_attrs = {a["name"] for a in have[(t, v)]["attributes"]}
        if tolerated and set(tolerated) <= rge_attrs:
            print(f"note: stale KNOWN_MISSING_ATTRS entry {name} {t} v{v} (remove it)")
        arity = KNOWN_ARITY.get((name, t, v))
        if arity is not None:
            if arity not in found:
                print(f"note: stale KNOWN_ARITY entry {name} {t} v{v} (remove it)")
            found = [m for m in found if m != arity]
        for m in found:
            print(f"mismatch: {name} {t} v{v}: {m}")
        bad += len(found)
    for t, v in extra:
        print(f"note: rge registers {name} {t} v{v}, which the ONNX history does not list")
    total = len(want)
    print(f"{name}: {total - len(missing)} of {total} schema versions, {bad} mismatches "
          f"(onnx {onnx.__version__}, opsets 1-{onnx.defs.onnx_opset_version()})")
    return not missing and not bad


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
