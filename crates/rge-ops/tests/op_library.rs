//! Loading the example op library (crates/rge-ops-example, a cdylib) through the C ABI.
//! `cargo test --workspace` builds it; run alone, the test builds it with
//! `cargo build -p rge-ops-example` when it is missing.

use std::path::{Path, PathBuf};

use rge_ir::{AttrValue, ComputeGraph, DataType, OpDesc, Shape, TensorDesc};
use rge_ops::{
    infer_graph, load_op_library, load_op_library_symbol, InferOptions, OpRegistryBuilder, OpsError,
};

fn lib_name() -> String {
    format!(
        "{}rge_ops_example{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// The target dir: CARGO_TARGET_DIR, else <workspace>/target.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

/// Locates (building it at most once per test binary) the example library.
fn example_library() -> PathBuf {
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(find_or_build).clone()
}

fn find_or_build() -> PathBuf {
    // The profile dir is the test binary's grandparent (target/<profile>/deps/test-…).
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).map(Path::to_path_buf);
    let mut candidates: Vec<PathBuf> = profile_dir.iter().map(|d| d.join(lib_name())).collect();
    candidates.push(target_dir().join("debug").join(lib_name()));
    if let Some(p) = candidates.iter().find(|p| p.is_file()) {
        return p.clone();
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "-p", "rge-ops-example"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .expect("run cargo build -p rge-ops-example");
    assert!(status.success(), "cargo build -p rge-ops-example failed");
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{} not found after building it", lib_name()))
}

fn my_scale_graph(dims: &[i64], dt: DataType) -> ComputeGraph {
    let mut g = ComputeGraph::new("g");
    let d = TensorDesc::with_shape_dtype(Shape::from_slice(dims), dt);
    let x = g
        .add_root_node(
            OpDesc::new("x", "Data")
                .with_input("", d.clone())
                .with_output("", d),
        )
        .unwrap();
    let mut op = OpDesc::new("scale", "MyScale").with_ports(1, 1);
    op.set_domain("com.example");
    op.attrs_mut().set("scale", AttrValue::Float(2.0));
    let s = g.add_root_node(op).unwrap();
    g.add_edge(x, 0, s, 0).unwrap();
    let r = g
        .add_root_node(OpDesc::new("relu", "Relu").with_ports(1, 1))
        .unwrap();
    g.add_edge(s, 0, r, 0).unwrap();
    g
}

#[test]
fn example_library_registers_and_infers() {
    let path = example_library();
    let mut b = OpRegistryBuilder::with_builtins();
    let info = load_op_library(&mut b, &path).unwrap();
    assert_eq!(info.name, "rge-ops-example");
    assert!(info
        .ops
        .contains(&("com.example".to_string(), "MyScale".to_string(), 1)));
    // Loading closed the override window again: the registry is locked.
    assert!(!b.is_overridable());
    let reg = b.freeze();
    assert_eq!(reg.libraries().len(), 1);
    let proto = reg.lookup("com.example", "MyScale", 1).unwrap();
    assert_eq!(proto.source, path.display().to_string());
    assert!(rge_ops::render_ops_text(&reg)
        .contains("com.example.MyScale v1+  (x:T) -> (y:T)  | scale:float=1.0"));

    let mut g = my_scale_graph(&[2, -1, 5], DataType::Float16);
    infer_graph(&mut g, &reg, &InferOptions::default()).unwrap();
    let s = g.find_node(g.root(), "scale").unwrap();
    let d = g.op(s).unwrap().output(0).unwrap();
    assert_eq!(
        (d.dtype(), d.shape().dims()),
        (DataType::Float16, &[2, -1, 5][..])
    );
    let r = g.find_node(g.root(), "relu").unwrap();
    assert_eq!(
        g.op(r).unwrap().output(0).unwrap().shape().dims(),
        &[2, -1, 5]
    );

    // The prototype's checks apply to library ops too: int32 is not a `T` of MyScale.
    let mut g = my_scale_graph(&[2], DataType::Int32);
    let e = infer_graph(&mut g, &reg, &InferOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("`scale`") && e.contains("DT_INT32"), "{e}");

    // An error reported by the library through the ABI comes back naming the node.
    let mut g = ComputeGraph::new("g");
    let d = TensorDesc::with_shape_dtype(Shape::new([2, 2]), DataType::Float);
    let x = g
        .add_root_node(OpDesc::new("x", "Data").with_output("", d))
        .unwrap();
    let mut op = OpDesc::new("pair", "MyConcatPair").with_ports(2, 1);
    op.set_domain("com.example");
    let p = g.add_root_node(op).unwrap();
    g.add_edge(x, 0, p, 0).unwrap();
    g.add_edge(x, 0, p, 1).unwrap();
    let e = infer_graph(&mut g, &reg, &InferOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("`pair`") && e.contains("1-D"), "{e}");
}

#[test]
fn wrong_abi_version_and_bad_paths_are_refused() {
    let path = example_library();
    let mut b = OpRegistryBuilder::new();
    let e = load_op_library_symbol(&mut b, &path, "rge_op_library_bad_abi").unwrap_err();
    assert!(
        matches!(
            e,
            OpsError::AbiVersion {
                found: 1001,
                expected: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("ABI version 1001"), "{e}");
    let e = load_op_library_symbol(&mut b, &path, "no_such_symbol").unwrap_err();
    assert!(e.to_string().contains("no_such_symbol"), "{e}");
    let e = load_op_library(&mut b, "/nonexistent/librge_nothing.so").unwrap_err();
    assert!(
        e.to_string().contains("/nonexistent/librge_nothing.so"),
        "{e}"
    );
}

#[test]
fn a_library_may_override_a_builtin_only_while_loading() {
    let path = example_library();
    let mut b = OpRegistryBuilder::with_builtins();
    load_op_library(&mut b, &path).unwrap();
    // Loading the same library again replaces its ops (the window is open while it loads).
    load_op_library(&mut b, &path).unwrap();
    // Outside loading, registering the same version again is an error.
    let dup = rge_ops::OpProto::new("com.example", "MyScale", 1)
        .sig("x:T -> y:T")
        .tc("T", &[DataType::Float]);
    assert!(matches!(b.register(dup), Err(OpsError::Duplicate { .. })));
}
