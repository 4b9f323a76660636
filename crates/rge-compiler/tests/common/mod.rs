//! Small engines and graph builders shared by the compiler tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use rge_compiler::{EngineManager, EngineManagerBuilder};
use rge_engine::{BasicEngine, EngineAttributes, Support, TableStore};
use rge_ir::{ComputeGraph, DataType, NodeId, OpDesc, Shape, TensorDesc};

pub fn desc() -> TensorDesc {
    TensorDesc::with_shape_dtype(Shape::new([2, 4]), DataType::Float)
}

/// An atomic test engine with a table store of `ops` (every instance supported).
pub fn eng(name: &str, cost: u8, ops: &[&str]) -> BasicEngine {
    BasicEngine::new(EngineAttributes::new(name, cost)).with_store(
        TableStore::new(name, format!("{name}_store"), cost).with_ops(ops.iter().copied()),
    )
}

/// A standard engine (table costs and flags) with a table store of `ops` ("*" = any op).
pub fn std_eng(name: &str, ops: &[&str]) -> BasicEngine {
    let row = rge_engine::standard_engine(name).unwrap();
    let mut store = TableStore::new(name, format!("{name}_store"), row.compute_cost);
    if ops == ["*"] {
        store = store.with_any_op();
    } else {
        store = store.with_ops(ops.iter().copied());
    }
    BasicEngine::standard(name).unwrap().with_store(store)
}

/// A store that rejects ops carrying attribute `reject_<engine>` (and, claiming any op, the
/// local op types).
pub fn picky(name: &str, ops: &[&str]) -> BasicEngine {
    let row = rge_engine::standard_engine(name).unwrap();
    let key = format!("reject_{name}");
    let ops_any = ops == ["*"];
    let mut store = TableStore::new(name, format!("{name}_store"), row.compute_cost);
    store = if ops == ["*"] {
        store.with_any_op()
    } else {
        store.with_ops(ops.iter().copied())
    };
    let store = store.with_check(move |op| {
        if ops_any && LOCAL_TYPES.contains(&op.op_type()) {
            Support::no("graph inputs and outputs run on local")
        } else if op.attrs().contains(&key) {
            Support::no(format!("attribute `{key}` is set"))
        } else {
            Support::Yes
        }
    });
    BasicEngine::standard(name).unwrap().with_store(store)
}

/// Op types only `local` takes (an any-op store declines them).
pub const LOCAL_TYPES: &[&str] = &["Data", "Const", "NetOutput", "NoOp", "Identity"];

/// dense, vector, cpu (any), local, host (any), comm, rts — the usual test registry.
pub fn builder() -> EngineManagerBuilder {
    let mut b = EngineManager::builder();
    b.register(picky("dense", &["MatMul", "Conv2D", "Add"]))
        .register(picky("vector", &["Add", "Relu", "Exp", "Mul"]))
        .register(std_eng("rts", &["StreamSwitch"]))
        .register(std_eng("comm", &["AllReduce"]))
        .register(picky("cpu", &["*"]))
        .register(std_eng(
            "local",
            &["Data", "Const", "NetOutput", "NoOp", "Identity"],
        ))
        .register(std_eng("host", &["*"]));
    b
}

pub fn manager() -> Arc<EngineManager> {
    builder().build().unwrap()
}

/// Builds a root graph from `(name, type, inputs)`; an input is `src` (output 0), `src:i`,
/// or `^src` (control). Each node gets one output and as many inputs as data inputs listed.
pub fn graph(spec: &[(&str, &str, &[&str])]) -> ComputeGraph {
    let mut g = ComputeGraph::new("g");
    let root = g.root();
    for (name, ty, ins) in spec {
        let data = ins.iter().filter(|i| !i.starts_with('^')).count();
        let mut op = OpDesc::new(*name, *ty);
        for _ in 0..data {
            op.add_input("", desc()).unwrap();
        }
        op.add_output("", desc()).unwrap();
        let n = g.add_node(root, op).unwrap();
        let mut k = 0;
        for i in ins.iter() {
            if let Some(src) = i.strip_prefix('^') {
                let s = g.find_node(root, src).unwrap();
                g.add_control_edge(s, n).unwrap();
            } else {
                let (src, idx) = i
                    .split_once(':')
                    .map_or((*i, 0), |(a, b)| (a, b.parse().unwrap()));
                let s = g.find_node(root, src).unwrap();
                g.add_edge(s, idx, n, k).unwrap();
                k += 1;
            }
        }
    }
    g
}

pub fn node(g: &ComputeGraph, name: &str) -> NodeId {
    g.find_node(g.root(), name).unwrap()
}

pub fn set_attr(g: &mut ComputeGraph, name: &str, key: &str, v: impl Into<rge_ir::AttrValue>) {
    let n = node(g, name);
    g.op_mut(n).unwrap().attrs_mut().set(key, v);
}

/// Every link of the root as `src:idx->dst:idx` strings, sorted.
pub fn links(g: &ComputeGraph) -> Vec<String> {
    let mut out = Vec::new();
    for n in g.nodes_of(g.root()) {
        let node = g.node(n).unwrap();
        for (i, p) in node.input_peers().iter().enumerate() {
            if let Some(p) = p {
                out.push(format!(
                    "{}:{}->{}:{i}",
                    g.name_of(p.node),
                    p.index,
                    node.name()
                ));
            }
        }
        for p in node.in_ctrl_peers() {
            out.push(format!(
                "{}:{}->{}:-1",
                g.name_of(p.node),
                p.index,
                node.name()
            ));
        }
    }
    out.sort();
    out
}

/// The example plugin's shared library (built by `cargo test --workspace`, else built here).
pub fn plugin_path() -> PathBuf {
    let name = format!(
        "{}rge_engine_example_plugin{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let p = profile_dir.join(&name);
    if p.exists() {
        return p;
    }
    let target = profile_dir.parent().unwrap().join("plugin-build");
    let release = profile_dir.file_name().is_some_and(|n| n == "release");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "-p", "rge-engine-example-plugin", "--target-dir"])
        .arg(&target);
    if release {
        cmd.arg("--release");
    }
    assert!(
        cmd.status().unwrap().success(),
        "building the example plugin failed"
    );
    target
        .join(if release { "release" } else { "debug" })
        .join(name)
}
