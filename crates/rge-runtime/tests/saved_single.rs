//! Saved compiled models and the single-op API.

mod common;

use common::*;
use rge_kernels::{DType, Tensor, Value};
use rge_runtime::{save_model, ExecutorKind, OpSpec, Profiler, Session, SessionOptions};

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("rge-runtime-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&d);
    d
}

#[test]
fn saved_model_loads_and_gives_the_same_outputs() {
    let s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    for (name, m, inputs) in [
        ("chain", add_chain(50), vec![tensor(&[1], vec![2.0])]),
        (
            "scan_free",
            {
                let mut m = add_chain(4);
                m.graph.as_mut().unwrap().node[2].op_type = "Mul".into();
                m
            },
            vec![tensor(&[1], vec![3.0])],
        ),
    ] {
        let built = s.compile_graph(to_graph(&m)).unwrap();
        let want = built.run(&inputs).unwrap();
        let path = tmp(&format!("{name}.om"));
        save_model(&built, &path).unwrap();
        assert!(rge_runtime::is_compiled_model(&path));
        // Saving a model the caller is done with (its steps dropped first, the writer given
        // the headroom under the peak) writes the same file.
        let into = tmp(&format!("{name}-into.om"));
        let mut done = s.compile_graph(to_graph(&m)).unwrap();
        rge_runtime::save_model_into(&mut done, &into).unwrap();
        assert!(
            std::fs::read(&into).unwrap() == std::fs::read(&path).unwrap(),
            "{name}: save_model_into wrote other bytes"
        );
        let _ = std::fs::remove_file(&into);
        let loaded = s.load_model(&path).unwrap();
        assert_eq!(loaded.plan(), built.plan());
        for kind in ExecutorKind::ALL {
            assert_eq!(
                loaded.run_with(&inputs, kind, None).unwrap(),
                want,
                "{name} {kind}"
            );
        }
        let _ = std::fs::remove_file(&path);
    }
}

/// A saved model's buffer offsets are what loading uses (not a fresh plan): a valid plan
/// without reuse loads as it is; an overlapping one is a clear error naming the file.
#[test]
fn saved_offsets_are_used_and_checked() {
    use rge_formats::ge::GeModel;
    use rge_ir::AttrValue;
    let s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    let built = s.compile_graph(to_graph(&add_chain(50))).unwrap();
    let inputs = vec![tensor(&[1], vec![2.0])];
    let want = built.run(&inputs).unwrap();
    let path = tmp("offsets.om");
    save_model(&built, &path).unwrap();
    let n = built.plan().offsets.len();
    assert!(n > 2, "{:?}", built.plan());
    let rewrite = |offsets: Vec<i64>, size: i64| {
        let mut ge = GeModel::read_binary(&path).unwrap();
        ge.attrs
            .set("_rge_memory_offsets", AttrValue::ListInt(offsets));
        ge.attrs.set("memory_size", size);
        ge.write_binary(&path, &Default::default()).unwrap();
    };
    // Every buffer apart: valid, larger than the planner's two buffers.
    rewrite((0..n as i64).map(|i| i * 64).collect(), n as i64 * 64);
    let loaded = s.load_model(&path).unwrap();
    assert_eq!(loaded.plan().arena_bytes, n * 64);
    assert!(built.plan().arena_bytes < n * 64);
    for kind in ExecutorKind::ALL {
        assert_eq!(
            loaded.run_with(&inputs, kind, None).unwrap(),
            want,
            "{kind}"
        );
    }
    // Every buffer at 0: consecutive adds overlap.
    rewrite(vec![0; n], 64);
    let e = s.load_model(&path).unwrap_err().to_string();
    assert!(e.contains("saved memory plan does not fit"), "{e}");
    assert!(e.contains("offsets.om"), "{e}");
    rewrite(vec![0; n - 1], 64);
    let e = s.load_model(&path).unwrap_err().to_string();
    assert!(e.contains("buffer offsets for"), "{e}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn loading_a_plain_graph_is_a_clear_error() {
    let s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    let path = tmp("plain.pb");
    rge_formats::ge::GeModel::new(to_graph(&add_chain(2)))
        .write_binary(&path, &Default::default())
        .unwrap();
    let e = s.load_model(&path).unwrap_err().to_string();
    assert!(e.contains("not a compiled model"), "{e}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn single_op_compiles_once_and_runs() {
    let s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    let spec = OpSpec::new(
        "Add",
        vec![
            Some((DType::Float, vec![2, 2])),
            Some((DType::Float, vec![2, 2])),
        ],
        1,
    );
    let a = tensor(&[2, 2], vec![1.0, 2.0, 3.0, 4.0]);
    let b = tensor(&[2, 2], vec![10.0, 20.0, 30.0, 40.0]);
    let out = s.execute_op(&spec, &[a.clone(), b.clone()]).unwrap();
    assert_eq!(floats(&out[0]), vec![11.0, 22.0, 33.0, 44.0]);
    let op = s.compile_op(&spec).unwrap();
    assert_eq!(s.cached_ops(), 1);
    assert_eq!(op.engine(), "cpu");
    // A named engine.
    let mut on_host = spec.clone();
    on_host.engine = Some("host".into());
    let op = s.compile_op(&on_host).unwrap();
    assert_eq!(op.engine(), "host");
    assert_eq!(s.cached_ops(), 2);
    assert_eq!(op.execute(&[a, b]).unwrap(), out);
    // Bad input names the input.
    let e = op
        .execute(&[
            Value::Tensor(Tensor::scalar(1i64)),
            tensor(&[2, 2], vec![0.0; 4]),
        ])
        .unwrap_err();
    assert!(e.to_string().contains("input0"), "{e}");
}

#[test]
fn profile_is_a_chrome_trace_with_engines() {
    let s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    let m = s.compile_graph(to_graph(&add_chain(5))).unwrap();
    for kind in ExecutorKind::ALL {
        let p = Profiler::new();
        m.run_with(&[tensor(&[1], vec![0.0])], kind, Some(&p))
            .unwrap();
        assert_eq!(p.events().len(), 5, "{kind}");
        let j = p.chrome_trace();
        assert!(
            j.contains("\"traceEvents\"") && j.contains("\"engine\":\"cpu\""),
            "{j}"
        );
    }
}
