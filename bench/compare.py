#!/usr/bin/env python3
"""rge beside ONNX Runtime and OpenVINO, same models, same inputs, same run (bench/compare.sh
sets up the venv and the rge binary, then calls this; docs/bench.md says how to read it).

For every model of make_models.py asked (--only), at every thread count (--threads 1,2):
  rge         `rge bench MODEL --input …test_data_set_0/input_*.pb --threads N --json`
  onnxruntime ORT_ENABLE_ALL, intra_op_num_threads=N, inter_op_num_threads=1, sequential
  OpenVINO    CPU, PERFORMANCE_HINT=LATENCY, INFERENCE_NUM_THREADS=N, INFERENCE_PRECISION_HINT=f32
each warmed up, then the median of --runs runs; rge's outputs are checked against onnxruntime's
(max |rge - ORT| / max |ORT| over each output, the largest over the outputs).

With --layers, also single-op models (onnx.helper) of a 2048^3 f32 MatMul, the distinct Conv
layers of ResNet-50 and MobileNetV2 and the distinct MatMul layers of BERT-base (batch 1,
224x224 / 128 tokens, shapes as make_models.py builds those nets), run the same way, reported as
the geometric mean of rge/ORT per family, with the MatMul's GFLOP/s beside the FMA peak that
bench/fma_peak.sh measures in the same run.
"""
import argparse
import gc
import importlib.util
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

# No __pycache__ beside this script or make_models.py (neither belongs in a repository).
sys.dont_write_bytecode = True

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Bump when the single-op models this script builds change (they are rebuilt then).
LAYERS_VERSION = "1"
OPSET = 17


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class PeerError(Exception):
    """A peer (rge, onnxruntime, OpenVINO) could not load or run a model."""


def short(e, limit=300):
    s = " ".join(str(e).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def load_make_models(path):
    spec = importlib.util.spec_from_file_location("make_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------------------ models
def input_files(d):
    """(name, path, array) of d/test_data_set_0/input_<i>.pb, by i."""
    data = os.path.join(d, "test_data_set_0")
    if not os.path.isdir(data):
        return []
    files = [f for f in os.listdir(data) if f.startswith("input_") and f.endswith(".pb")]
    files.sort(key=lambda f: int(f[len("input_"):-len(".pb")]))
    out = []
    for f in files:
        p = os.path.join(data, f)
        t = onnx.load_tensor(p)
        out.append((t.name, p, numpy_helper.to_array(t)))
    return out


def ensure_model(args, name):
    """The directory of make_models.py's `name` under --models, generated when missing or older
    than make_models.py."""
    d = os.path.join(args.models, name)
    model = os.path.join(d, "model.onnx")
    fresh = (os.path.isfile(model) and input_files(d)
             and os.path.getmtime(model) >= os.path.getmtime(args.make_models))
    if not fresh:
        log(f"generating {name} into {args.models} …")
        p = subprocess.run([sys.executable, args.make_models, "--out", args.models, "--only", name],
                           capture_output=True, text=True)
        if p.returncode != 0 or not os.path.isfile(model):
            raise PeerError(f"make_models.py could not build {name}: {short(p.stderr or p.stdout)}")
        if not input_files(d):
            raise PeerError(f"make_models.py wrote no inputs for {name} (is onnxruntime installed?)")
    return d


def conv_flops(x, w, y, attrs):
    return 2 * math.prod(y) * math.prod(w[1:])


def matmul_flops(a, b, y):
    return 2 * math.prod(y) * a[-1]


def extract_layers(model, op_type):
    """The distinct `op_type` nodes of `model`: (input shapes, initializer flags, attributes,
    output shape, count), shapes from onnx's shape inference."""
    m = onnx.shape_inference.infer_shapes(model)
    g = m.graph
    shapes = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        dims = vi.type.tensor_type.shape.dim
        shapes[vi.name] = [d.dim_value for d in dims]
    inits = {t.name: list(t.dims) for t in g.initializer}
    found = {}
    for n in g.node:
        if n.op_type != op_type:
            continue
        ins = []
        for i in n.input:
            if i in inits:
                ins.append((inits[i], True))
            elif i in shapes:
                ins.append((shapes[i], False))
            else:
                raise PeerError(f"no shape for `{i}` of {n.name}")
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
        out = shapes.get(n.output[0])
        if not out or any(d <= 0 for d in out):
            raise PeerError(f"no static output shape for {n.name}")
        key = json.dumps([ins, sorted(attrs.items())])
        if key in found:
            found[key][4] += 1
        else:
            found[key] = [ins, attrs, out, n.name, 1]
    return list(found.values())


def single_op_model(op_type, name, ins, attrs, out, rng):
    """A one-node model: initializer inputs get seeded weights, the others are graph inputs."""
    inputs, inits, names, feeds = [], [], [], []
    for i, (shape, is_init) in enumerate(ins):
        n = f"in{i}"
        names.append(n)
        if is_init:
            fan_in = max(1, math.prod(shape[1:]) if op_type == "Conv" and i == 1 else shape[0])
            std = math.sqrt(2.0 / fan_in) if i == 1 or op_type == "MatMul" else 0.05
            inits.append(numpy_helper.from_array(
                (rng.standard_normal(shape) * std).astype(np.float32), n))
        else:
            inputs.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, shape))
            feeds.append((n, rng.standard_normal(shape).astype(np.float32)))
    node = helper.make_node(op_type, names, ["y"], name=op_type.lower(), **attrs)
    graph = helper.make_graph([node], name, inputs,
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="rge/bench/compare.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m, feeds


def dims(s):
    return "x".join(str(d) for d in s)


def layer_label(op_type, ins, attrs, out):
    if op_type == "Conv":
        k = attrs.get("kernel_shape", ins[1][0][2:])
        s = attrs.get("strides", [1])[0]
        g = attrs.get("group", 1)
        return f"{dims(ins[0][0])} k{k[0]} s{s}{f' g{g}' if g > 1 else ''} -> {dims(out)}"
    return f"{dims(ins[0][0])} @ {dims(ins[1][0])}"


def layer_models(args, mm):
    """Builds (once; cached under --models/layers) the single-op models: {family: [layer]}."""
    root = os.path.join(args.models, "layers")
    manifest = os.path.join(root, "manifest.json")
    stamp = f"{LAYERS_VERSION} {os.path.getmtime(args.make_models)}"
    if os.path.isfile(manifest):
        with open(manifest) as f:
            man = json.load(f)
        if man.get("stamp") == stamp and all(
                os.path.isfile(os.path.join(l["dir"], "model.onnx"))
                for fam in man["families"].values() for l in fam):
            return man["families"]
    log("building the single-op layer models (once) …")
    rng = np.random.default_rng(0)
    families = {}

    def add(family, op_type, layers):
        out = []
        for i, (ins, attrs, y, node, count) in enumerate(layers):
            name = f"{family}_{i:02d}"
            d = os.path.join(root, family, name)
            os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
            m, feeds = single_op_model(op_type, name, ins, attrs, y, rng)
            onnx.save(m, os.path.join(d, "model.onnx"))
            for k, (n, a) in enumerate(feeds):
                onnx.save_tensor(numpy_helper.from_array(a, n),
                                 os.path.join(d, "test_data_set_0", f"input_{k}.pb"))
            shapes = [s for s, _ in ins]
            flops = (conv_flops(shapes[0], shapes[1], y, attrs) if op_type == "Conv"
                     else matmul_flops(shapes[0], shapes[1], y))
            out.append({"name": name, "dir": d, "label": layer_label(op_type, ins, attrs, y),
                        "flops": flops, "count": count, "node": node})
        families[family] = out

    add("matmul_2048", "MatMul", [([([2048, 2048], False), ([2048, 2048], True)], {},
                                   [2048, 2048], "MatMul", 1)])
    for fam, net in [("resnet50_conv", "resnet50"), ("mobilenetv2_conv", "mobilenetv2")]:
        log(f"  {net}: Conv layers")
        add(fam, "Conv", extract_layers(mm.MODELS[net][0](0), "Conv"))
    log("  bert_base: MatMul layers (one encoder layer: every layer has the same MatMuls)")
    try:
        bert = mm.bert("bert_base_layers", 0, layers=1, vocab=8)
    except TypeError:
        bert = mm.MODELS["bert_base"][0](0)
    add("bert_base_matmul", "MatMul", extract_layers(bert, "MatMul"))
    with open(manifest, "w") as f:
        json.dump({"stamp": stamp, "families": families}, f, indent=1)
    return families


# ------------------------------------------------------------------------------------ peers
def file_name(name):
    """The file `rge bench --output-dir` writes for output `name` (as rge's run.rs names it)."""
    s = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in name)
    return f"out_{s}" if not s or s.startswith(".") else s


def timed(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1e3)
    return times, out


def run_rge(args, model, inputs, threads):
    with tempfile.TemporaryDirectory(prefix="rge-compare-") as tmp:
        cmd = [args.rge, "bench", model, "--threads", str(threads), "--runs", str(args.runs),
               "--warmup", str(args.warmup), "--json", "--output-dir", tmp]
        for name, path, _ in inputs:
            cmd += ["--input", f"{name}={path}"]
        cmd += args.rge_args.split()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            raise PeerError(f"rge did not finish {model} within {args.timeout} s")
        if p.returncode != 0:
            lines = (p.stderr or p.stdout).strip().splitlines()
            raise PeerError(f"rge failed on {model}: {short(lines[-1] if lines else f'exit {p.returncode}')}")
        j = json.loads(p.stdout)
        outs = {}
        for name in j.get("outputs", []):
            f = os.path.join(tmp, file_name(name) + ".npy")
            if os.path.isfile(f):
                outs[name] = np.load(f)
    return {"median_ms": j["median_ms"], "min_ms": j["min_ms"], "p90_ms": j["p90_ms"],
            "compile_ms": j["compile_ms"], "op_share": j.get("op_share", {})}, outs


def run_ort(args, model, inputs, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    t = time.perf_counter()
    try:
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise PeerError(f"onnxruntime could not load {model}: {short(e)}")
    compile_ms = (time.perf_counter() - t) * 1e3
    feeds = {n: a for n, _, a in inputs}
    names = [o.name for o in sess.get_outputs()]
    try:
        times, outs = timed(lambda: sess.run(None, feeds), args.runs, args.warmup)
    except Exception as e:
        raise PeerError(f"onnxruntime could not run {model}: {short(e)}")
    del sess
    gc.collect()
    return ({"median_ms": statistics.median(times), "min_ms": min(times),
             "compile_ms": compile_ms}, dict(zip(names, outs)))


def ov_config(ov, threads):
    try:
        import openvino.properties as props
        import openvino.properties.hint as hints
        return {hints.performance_mode: hints.PerformanceMode.LATENCY,
                props.inference_num_threads: threads,
                hints.inference_precision: ov.Type.f32}
    except Exception:
        return {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": str(threads),
                "INFERENCE_PRECISION_HINT": "f32"}


def run_ov(args, model, inputs, threads):
    import openvino as ov
    core = ov.Core()
    t = time.perf_counter()
    try:
        compiled = core.compile_model(model, "CPU", ov_config(ov, threads))
        req = compiled.create_infer_request()
    except Exception as e:
        raise PeerError(f"OpenVINO could not load {model}: {short(e)}")
    compile_ms = (time.perf_counter() - t) * 1e3
    feeds = {n: a for n, _, a in inputs}
    try:
        times, _ = timed(lambda: req.infer(feeds), args.runs, args.warmup)
    except Exception as e:
        raise PeerError(f"OpenVINO could not run {model}: {short(e)}")
    del req, compiled, core
    gc.collect()
    return {"median_ms": statistics.median(times), "min_ms": min(times),
            "compile_ms": compile_ms}, None


def max_rel_err(rge_outs, ref_outs):
    """max over outputs of max |rge - ref| / max |ref|; inf for a missing or misshapen output."""
    worst = 0.0
    for name, b in ref_outs.items():
        a = rge_outs.get(name)
        if a is None or a.shape != b.shape:
            return math.inf
        a = a.astype(np.float64)
        b = b.astype(np.float64)
        if a.size == 0:
            continue
        den = max(float(np.abs(b).max()), 1e-30)
        err = float(np.abs(a - b).max()) / den
        if not math.isfinite(err):
            return math.inf
        worst = max(worst, err)
    return worst


def bench_one(args, label, model, inputs, threads, notes):
    """One row: the three peers on one model at one thread count."""
    row = {"model": label, "threads": threads, "skipped": sorted(args.skip)}
    rge_outs = ref = None
    for peer, fn in [("rge", run_rge), ("ort", run_ort), ("ov", run_ov)]:
        if peer in args.skip:
            continue
        try:
            r, outs = fn(args, model, inputs, threads)
            row[peer] = r
            if peer == "rge":
                rge_outs = outs
            elif peer == "ort":
                ref = outs
        except PeerError as e:
            notes.append(f"{label} @{threads}: {e}")
            log(f"  {e}")
    ms = lambda p: row.get(p, {}).get("median_ms")
    if ms("rge") and ms("ort"):
        row["rge_over_ort"] = ms("rge") / ms("ort")
    best = [m for m in (ms("ort"), ms("ov")) if m]
    if ms("rge") and best:
        row["rge_over_best"] = ms("rge") / min(best)
    if rge_outs is not None and ref is not None:
        err = max_rel_err(rge_outs, ref)
        if math.isinf(err):
            row["output_mismatch"] = True
            notes.append(f"{label} @{threads}: rge's outputs differ in names, shapes or finiteness from onnxruntime's")
        else:
            row["max_rel_err"] = err
    return row


def geomean(v):
    v = [x for x in v if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def fmt(x, spec=".2f", none="-"):
    return none if x is None else format(x, spec)


def table(rows, first="model"):
    head = [first, "threads", "rge ms", "ORT ms", "OV ms", "rge/ORT", "rge/min(ORT,OV)", "max rel err"]
    body = []
    for r in rows:
        skipped = r.get("skipped", [])
        cell = lambda p, v: "skip" if p in skipped else fmt(v, ".3f", "fail")
        ms = lambda p: r.get(p, {}).get("median_ms")
        err = math.inf if r.get("output_mismatch") else r.get("max_rel_err")
        body.append([r["model"], str(r["threads"]), cell("rge", ms("rge")),
                     cell("ort", ms("ort")), cell("ov", ms("ov")),
                     fmt(r.get("rge_over_ort")), fmt(r.get("rge_over_best")),
                     "-" if err is None else ("mismatch" if math.isinf(err) else f"{err:.1e}")])
    w = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
    line = lambda cells: "  ".join(c.ljust(w[0]) if i == 0 else c.rjust(w[i])
                                   for i, c in enumerate(cells))
    return "\n".join([line(head), line(["-" * x for x in w])] + [line(b) for b in body])


def geomeans_by_threads(rows, threads):
    out = {}
    for t in threads:
        rs = [r for r in rows if r["threads"] == t]
        out[str(t)] = {"rge_over_ort": geomean([r.get("rge_over_ort") for r in rs]),
                       "rge_over_best": geomean([r.get("rge_over_best") for r in rs]),
                       "rows": len(rs)}
    return out


def fma_peak():
    p = subprocess.run(["bash", os.path.join(ROOT, "bench", "fma_peak.sh"), "--json"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise PeerError(f"fma_peak.sh failed: {short(p.stderr)}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rge", default=os.path.join(ROOT, "target", "release", "rge"))
    ap.add_argument("--make-models", default=os.path.join(ROOT, "..", "shared", "bench", "make_models.py"))
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "bench-models"),
                    help="where the generated models are kept (default build/bench-models)")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma separated (default 1,2)")
    ap.add_argument("--runs", type=int, default=10, help="timed runs per peer (median; default 10)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--only", nargs="+", default=None, metavar="NAME",
                    help="models of make_models.py (default: all); commas also separate")
    ap.add_argument("--layers", action="store_true", help="also the single-op layer families")
    ap.add_argument("--no-models", action="store_true", help="skip the whole models (with --layers)")
    ap.add_argument("--families", default="", metavar="NAMES",
                    help="with --layers, only these layer families (comma separated, e.g. "
                         "mobilenetv2_conv,matmul_2048; default: all)")
    ap.add_argument("--skip", default="", help="peers to leave out: rge, ort, ov (comma separated)")
    ap.add_argument("--rge-args", default="", metavar="ARGS",
                    help="more options for rge bench, e.g. \"--exclude-engines dense\"")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds one rge bench may take")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = ap.parse_args()

    try:
        threads = [int(t) for t in args.threads.split(",") if t.strip()]
    except ValueError:
        ap.error(f"--threads `{args.threads}`: expected thread counts like 1,2")
    if not threads or any(t < 1 for t in threads):
        ap.error(f"--threads `{args.threads}`: every count must be at least 1")
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    if args.warmup < 0:
        ap.error("--warmup must not be negative")
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if args.skip - {"rge", "ort", "ov"}:
        ap.error(f"--skip: unknown peer(s) {sorted(args.skip - {'rge', 'ort', 'ov'})} (rge, ort, ov)")
    if not os.path.isfile(args.make_models):
        ap.error(f"--make-models: {args.make_models} not found")
    if "rge" not in args.skip and not os.access(args.rge, os.X_OK):
        ap.error(f"--rge: no rge binary at {args.rge}")
    args.make_models = os.path.abspath(args.make_models)
    args.models = os.path.abspath(args.models)
    mm = load_make_models(args.make_models)
    names = list(mm.MODELS) if args.only is None else [n for a in args.only for n in a.split(",") if n]
    unknown = [n for n in names if n not in mm.MODELS]
    if unknown:
        ap.error(f"--only: unknown model(s) {', '.join(unknown)} (models: {', '.join(mm.MODELS)})")
    if args.no_models:
        names = []

    import onnxruntime
    if "ov" in args.skip:
        ov_version = "skipped"
    else:
        import openvino
        ov_version = openvino.__version__.split("-")[0]
    result = {
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
        "versions": {"onnxruntime": onnxruntime.__version__,
                     "openvino": ov_version,
                     "onnx": onnx.__version__},
        "threads": threads, "runs": args.runs, "warmup": args.warmup,
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    result["machine"]["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    notes = []

    rows = []
    for name in names:
        try:
            d = ensure_model(args, name)
        except PeerError as e:
            notes.append(str(e))
            log(e)
            continue
        inputs = input_files(d)
        for t in threads:
            log(f"{name} @{t} thread(s) …")
            rows.append(bench_one(args, name, os.path.join(d, "model.onnx"), inputs, t, notes))
    result["models"] = rows
    result["geomean"] = geomeans_by_threads(rows, threads)

    if args.layers:
        peak = None
        try:
            peak = fma_peak()
        except PeerError as e:
            notes.append(str(e))
        fams = layer_models(args, mm)
        wanted = [f for f in args.families.split(",") if f]
        unknown = [f for f in wanted if f not in fams]
        if unknown:
            ap.error(f"--families: unknown {', '.join(unknown)} (families: {', '.join(fams)})")
        if wanted:
            fams = {f: v for f, v in fams.items() if f in wanted}
        lrows, summary = [], {}
        for fam, layers in fams.items():
            for l in layers:
                inputs = input_files(l["dir"])
                for t in threads:
                    log(f"{l['name']} ({l['label']}) @{t} …")
                    r = bench_one(args, l["name"], os.path.join(l["dir"], "model.onnx"), inputs, t, notes)
                    r.update({"family": fam, "label": l["label"], "flops": l["flops"], "count": l["count"]})
                    for p in ("rge", "ort", "ov"):
                        if p in r:
                            r[p]["gflops"] = l["flops"] / (r[p]["median_ms"] * 1e6)
                    lrows.append(r)
            summary[fam] = geomeans_by_threads([r for r in lrows if r["family"] == fam], threads)
        mat = {}
        for r in lrows:
            if r["family"] != "matmul_2048":
                continue
            e = {p: r[p]["gflops"] for p in ("rge", "ort", "ov") if p in r}
            if peak:
                # The best cores: other work on the machine only lowers a core's figure.
                e["peak_gflops"] = sum(sorted(peak["per_core_gflops"], reverse=True)[: r["threads"]])
                if "rge" in e:
                    e["rge_of_peak"] = e["rge"] / e["peak_gflops"]
            mat[str(r["threads"])] = e
        result["layers"] = {"rows": lrows, "families": summary, "matmul_2048": mat, "fma_peak": peak}
    result["notes"] = notes

    if args.json:
        print(json.dumps(result, indent=1, default=lambda x: None))
        return 0 if rows or args.layers else 1

    print(f"{result['machine']['cpu']}, {result['machine']['cores']} cores; onnxruntime "
          f"{result['versions']['onnxruntime']}, OpenVINO {result['versions']['openvino']}; "
          f"median of {args.runs} runs after {args.warmup} warm-up")
    if rows:
        print()
        print(table(rows))
        for t, g in result["geomean"].items():
            print(f"geomean @{t} thread(s) over {g['rows']} models: rge/ORT {fmt(g['rge_over_ort'])}, "
                  f"rge/min(ORT,OV) {fmt(g['rge_over_best'])}")
    if args.layers:
        L = result["layers"]
        print()
        print(table([dict(r, model=f"{r['model']} {r['label']}") for r in L["rows"]], first="layer"))
        print()
        for fam, by_t in L["families"].items():
            for t, g in by_t.items():
                print(f"{fam:18s} @{t}: {g['rows']:3d} layers, geomean rge/ORT {fmt(g['rge_over_ort'])}, "
                      f"rge/min(ORT,OV) {fmt(g['rge_over_best'])}")
        for t, e in L["matmul_2048"].items():
            peak_s = ""
            if "peak_gflops" in e:
                peak_s = f"; FMA peak {e['peak_gflops']:.0f} GFLOP/s at {t} core(s)"
                if "rge_of_peak" in e:
                    peak_s += f" (rge at {100 * e['rge_of_peak']:.1f}% of it)"
            print(f"MatMul 2048^3 @{t}: rge {fmt(e.get('rge'), '.1f')} GFLOP/s, ORT {fmt(e.get('ort'), '.1f')}, "
                  f"OV {fmt(e.get('ov'), '.1f')}{peak_s}")
    if notes:
        print()
        print("notes:")
        for n in notes:
            print(f"  {n}")
    return 0 if rows or args.layers else 1


if __name__ == "__main__":
    sys.exit(main())
