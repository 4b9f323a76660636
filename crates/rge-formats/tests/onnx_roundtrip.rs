//! ONNX export: import → export → import gives an equal model for every test model, and the
//! Python `onnx` checker (when the workspace `.venv` has it) accepts the exported files.

mod onnx_common;

use onnx_common::*;
use rge_formats::onnx;

fn round_trip(name: &str, m1: &onnx::OnnxModel) -> std::path::PathBuf {
    let dir = temp_dir("rt");
    let path = dir.join(name);
    onnx::write_file(&path, m1).unwrap_or_else(|e| panic!("{name}: export: {e}"));
    let m2 = onnx::import_file(&path).unwrap_or_else(|e| panic!("{name}: re-import: {e}"));
    if m1 != &m2 {
        panic!(
            "{name}: round trip differs\n--- first\n{}\n--- second\n{}",
            m1.graph.dump_text(),
            m2.graph.dump_text()
        );
    }
    // The export is SSA with unique names: nothing is renamed the second time.
    assert!(
        !m2.warnings.iter().any(|w| w.contains("renamed")),
        "{name}: {:?}",
        m2.warnings
    );
    path
}

#[test]
fn fixtures_round_trip_and_check() {
    let py = python_with_onnx();
    if py.is_none() {
        println!("note: .venv python with onnx not found; skipping onnx.checker");
    }
    for f in FIXTURES {
        let m1 = onnx::import_file(fixture(f)).unwrap();
        let path = round_trip(f, &m1);
        if let Some(py) = &py {
            let r = onnx_check(py, &path, false);
            println!("{f}: checker {r:?}");
            // The If with no outputs stays as the source has it; every other export is valid,
            // onnx_if.onnx included (its second `res` is renamed, so the export is SSA).
            assert_eq!(r.is_ok(), f != "onnx_if_const_intput.onnx", "{f}: {r:?}");
        }
    }
}

/// Every other model under tests/data/onnx (fuzzing finds) imports and round-trips.
#[test]
fn data_dir_models_round_trip() {
    for e in std::fs::read_dir(data_dir()).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if FIXTURES.contains(&name.as_str()) {
            continue;
        }
        let m1 = onnx::import_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        round_trip(&name, &m1);
    }
}

#[test]
fn synthetic_round_trip_and_check() {
    let py = python_with_onnx();
    for c in models::cases() {
        let m1 = import_proto(&c.model).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let path = round_trip(&format!("{}.onnx", c.name), &m1);
        if let Some(py) = &py {
            let src = temp_dir("src").join("src.onnx");
            std::fs::write(&src, prost::Message::encode_to_vec(&c.model)).unwrap();
            let (plain, full) = (onnx_check(py, &path, false), onnx_check(py, &path, true));
            println!(
                "{}: source {:?} / export {plain:?} / export full_check {full:?}",
                c.name,
                onnx_check(py, &src, false),
            );
            if c.checker_ok {
                assert!(
                    plain.is_ok() && full.is_ok(),
                    "{}: {plain:?} {full:?}",
                    c.name
                );
            }
        }
    }
}

/// Runs a model and its export on ONNX Runtime with the same inputs and compares the outputs.
const ORT_COMPARE: &str = r#"
import sys, numpy as np, onnx, onnxruntime as ort
from onnx import helper
def feeds(path):
    m = onnx.load(path)
    inits = {t.name for t in m.graph.initializer}
    out = {}
    for k, i in enumerate(m.graph.input):
        if i.name in inits:
            continue
        t = i.type.tensor_type
        dt = helper.tensor_dtype_to_np_dtype(t.elem_type)
        shape = [d.dim_value if d.HasField("dim_value") else 2 for d in t.shape.dim]
        if dt == np.bool_:
            out[i.name] = np.ones(shape, dtype=dt)
        elif dt == np.int64 and not shape:
            out[i.name] = np.array(3, dtype=dt)
        else:
            out[i.name] = (np.arange(int(np.prod(shape))) * 0.5 + k).reshape(shape).astype(dt)
    return out
a, b = sys.argv[1], sys.argv[2]
fa = feeds(a)
assert fa.keys() == feeds(b).keys(), (fa.keys(), feeds(b).keys())
rb = ort.InferenceSession(b, providers=["CPUExecutionProvider"]).run(None, fa)
try:
    sa = ort.InferenceSession(a, providers=["CPUExecutionProvider"])
except Exception as e:
    print("source refused by ONNX Runtime (%s); the export runs:" % str(e).split("Error: ")[-1],
          [x.shape for x in rb])
    sys.exit(0)
ra = sa.run(None, fa)
assert len(ra) == len(rb)
for x, y in zip(ra, rb):
    np.testing.assert_array_equal(x, y)
print("same outputs", [x.shape for x in ra])
"#;

#[test]
fn onnxruntime_runs_exports_like_the_sources() {
    let Some(py) = python_with_onnx() else {
        println!("note: .venv python with onnx not found; skipping the ONNX Runtime comparison");
        return;
    };
    let has_ort = std::process::Command::new(&py)
        .args(["-c", "import onnxruntime"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_ort {
        println!("note: onnxruntime is not installed in .venv; skipping");
        return;
    }
    let dir = temp_dir("ort");
    let mut pairs = Vec::new();
    for f in ["onnx_clip_v9.onnx", "onnx_conv2d.onnx"] {
        pairs.push((fixture(f), f.to_string()));
    }
    for c in models::cases() {
        if [
            "loop_capture",
            "unsorted",
            "unsorted_body",
            "scan9",
            "names_ir3",
        ]
        .contains(&c.name)
        {
            let src = dir.join(format!("{}_src.onnx", c.name));
            std::fs::write(&src, prost::Message::encode_to_vec(&c.model)).unwrap();
            pairs.push((src, c.name.to_string()));
        }
    }
    for (src, name) in pairs {
        let m = onnx::import_file(&src).unwrap();
        let out = dir.join(format!("{name}_export.onnx"));
        onnx::write_file(&out, &m).unwrap();
        let r = std::process::Command::new(&py)
            .args(["-c", ORT_COMPARE])
            .arg(&src)
            .arg(&out)
            .output()
            .unwrap();
        let text =
            String::from_utf8_lossy(&r.stdout).to_string() + &String::from_utf8_lossy(&r.stderr);
        println!("{name}: {}", text.trim());
        assert!(r.status.success(), "{name}: {text}");
    }
}

/// With `RGE_ONNX_CORPUS=<dir>`, writes the synthetic models there (fuzzing seeds).
#[test]
fn write_fuzz_seeds_when_asked() {
    let Some(dir) = std::env::var_os("RGE_ONNX_CORPUS") else {
        return;
    };
    for c in models::cases() {
        let path = std::path::Path::new(&dir).join(format!("{}.onnx", c.name));
        std::fs::write(path, prost::Message::encode_to_vec(&c.model)).unwrap();
    }
}

/// FLOAT8E4M3FNUZ, FLOAT8E5M2FNUZ and UINT4 are rge types of their own: graph inputs and
/// initializers import with them (no stand-in, no tag) and export with the same ONNX types,
/// type protos and bytes.
#[test]
fn fnuz_and_uint4_import_as_their_own_types_and_export_unchanged() {
    use rge_formats::onnx_proto::TensorProto;
    use rge_ir::DataType;
    let types = [
        (18, DataType::Float8E4M3Fnuz, vec![0x00, 0x40, 0x80, 0x7f]),
        (20, DataType::Float8E5M2Fnuz, vec![0x01, 0x3c, 0x80, 0xff]),
        (21, DataType::Uint4, vec![0x21, 0xf3]),
    ];
    let (mut nodes, mut inputs, mut outputs, mut inits) = (vec![], vec![], vec![], vec![]);
    for (k, (code, _, raw)) in types.iter().enumerate() {
        let (x, w) = (format!("x{k}"), format!("w{k}"));
        let (y, z) = (format!("y{k}"), format!("z{k}"));
        inputs.push(vi(&x, *code, &[4]));
        inits.push(TensorProto {
            name: w.clone(),
            dims: vec![4],
            data_type: *code,
            raw_data: raw.clone().into(),
            ..Default::default()
        });
        nodes.push(node("Identity", &format!("ix{k}"), &[&x], &[&y]));
        nodes.push(node("Identity", &format!("iw{k}"), &[&w], &[&z]));
        outputs.push(vi(&y, *code, &[4]));
        outputs.push(vi(&z, *code, &[4]));
    }
    let src = model(graph("types", nodes, inputs, outputs, inits), 21);
    let m = import_proto(&src).unwrap();
    let g = &m.graph;
    for (k, (_, dt, raw)) in types.iter().enumerate() {
        let x = g
            .op(g.find_node(g.root(), &format!("x{k}")).unwrap())
            .unwrap();
        assert_eq!(x.output(0).unwrap().dtype(), *dt, "input x{k}");
        let w = g
            .op(g.find_node(g.root(), &format!("w{k}")).unwrap())
            .unwrap();
        let t = w
            .attrs()
            .get_as::<&rge_ir::Tensor>("value")
            .unwrap()
            .unwrap();
        assert_eq!(
            (t.desc.dtype(), &t.data[..]),
            (*dt, &raw[..]),
            "initializer w{k}"
        );
        assert!(t.desc.attrs().is_empty(), "no stand-in tag on w{k}");
        let id = g
            .op(g.find_node(g.root(), &format!("ix{k}")).unwrap())
            .unwrap();
        assert_eq!(id.output(0).unwrap().dtype(), *dt, "value_info of y{k}");
    }
    let out = onnx::export(&m).unwrap();
    let (a, b) = (src.graph.as_ref().unwrap(), out.graph.as_ref().unwrap());
    assert_eq!(b.input, a.input, "graph input types");
    assert_eq!(b.output, a.output, "graph output types");
    for (x, y) in a.initializer.iter().zip(&b.initializer) {
        assert_eq!(
            (&y.name, y.data_type, &y.dims, &y.raw_data),
            (&x.name, x.data_type, &x.dims, &x.raw_data)
        );
    }
    round_trip("fnuz_uint4.onnx", &m);
}

/// A node of another domain keeps its domain and its domain's opset, as OpDesc fields, through
/// import (root and If bodies), GE ModelDef binary and text, and export.
#[test]
fn custom_domain_and_opset_survive_onnx_ge_onnx() {
    use rge_formats::ge::{GeModel, WriteOptions};
    use rge_formats::onnx_proto::OperatorSetIdProto;
    let mut gelu = node("Gelu", "gelu", &["x"], &["g"]);
    gelu.domain = "com.microsoft".into();
    let mut inner = node("Gelu", "inner", &["g"], &["t"]);
    inner.domain = "com.microsoft".into();
    let then_b = graph("then", vec![inner], vec![], vec![vi("t", 1, &[2])], vec![]);
    let else_b = graph(
        "else",
        vec![node("Relu", "r", &["g"], &["e"])],
        vec![],
        vec![vi("e", 1, &[2])],
        vec![],
    );
    let mut iff = node("If", "iff", &["c"], &["y"]);
    iff.attribute.push(attr_graph("then_branch", then_b));
    iff.attribute.push(attr_graph("else_branch", else_b));
    let mut src = model(
        graph(
            "dom",
            vec![gelu, iff],
            vec![vi("x", 1, &[2]), vi("c", 9, &[])],
            vec![vi("y", 1, &[2])],
            vec![],
        ),
        17,
    );
    src.opset_import.push(OperatorSetIdProto {
        domain: "com.microsoft".into(),
        version: 1,
    });
    let m = import_proto(&src).unwrap();
    let check = |g: &rge_ir::ComputeGraph, how: &str| {
        let find = |name: &str| {
            std::iter::once(g.root())
                .chain(g.subgraphs().iter().copied())
                .find_map(|s| g.find_node(s, name))
                .and_then(|n| g.op(n))
                .unwrap_or_else(|| panic!("{how}: no node {name}"))
        };
        let at = |name: &str| (find(name).domain().to_string(), find(name).opset());
        assert_eq!(at("gelu"), ("com.microsoft".into(), Some(1)), "{how}");
        assert_eq!(
            at("inner"),
            ("com.microsoft".into(), Some(1)),
            "{how}: If body"
        );
        assert_eq!(at("iff"), (String::new(), Some(17)), "{how}");
        assert_eq!(at("r"), (String::new(), Some(17)), "{how}: If body");
        assert!(!find("gelu").attrs().contains("_onnx_domain"), "{how}");
    };
    check(&m.graph, "import");
    let ge = GeModel::new(m.graph.clone());
    let bin = GeModel::from_binary_bytes(
        ge.to_binary_bytes(&WriteOptions::default()).unwrap(),
        "m.pb",
    )
    .unwrap();
    check(&bin.graph, "GE binary");
    let text =
        GeModel::from_text_str(&ge.to_text(&WriteOptions::dump()).unwrap(), "m.txt").unwrap();
    check(&text.graph, "GE text");
    assert_eq!(bin.graph, m.graph);
    let out = onnx::export(&bin.graph).unwrap();
    let g = out.graph.as_ref().unwrap();
    let gelu = g.node.iter().find(|n| n.name == "gelu").unwrap();
    assert_eq!(gelu.domain, "com.microsoft");
    assert!(out
        .opset_import
        .iter()
        .any(|o| o.domain == "com.microsoft" && o.version == 1));
    check(&import_proto(&out).unwrap().graph, "re-import");
}
