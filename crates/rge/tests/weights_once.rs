//! Weights are in memory once: a session built for running releases the constants its kernels
//! packed (from the program and from the compiled graph), shares the others with the graph
//! instead of copying them, and still computes what the `cpu` engine computes; a session built
//! to save keeps them, and saving a released model is a clear error.

#[path = "common/net.rs"]
mod net;

use net::*;
use rge::engines::{engine_set, EngineArgs};
use rge_kernels::TensorData;
use rge_runtime::{save_model, Session, SessionOptions};

/// (x[16,64] + B[16,64]) · W1[64,96] → Relu → · W2[96,8] → · S[16,8]: the Add's and the
/// Mul's constants are read as data, the MatMuls' are packed. Weights as `raw_data`, as
/// exporters write them.
fn mlp() -> rge_formats::onnx_proto::ModelProto {
    let mut n = Net::new();
    let x = n.input("x", F32, &[16, 64]);
    let b = n.weight(&[16, 64], 4);
    let w1 = n.weight(&[64, 96], 1);
    let w2 = n.weight(&[96, 8], 2);
    let scale = n.weight(&[16, 8], 3);
    let xb = n.op("Add", &[&x, &b], vec![]);
    let h = n.op("MatMul", &[&xb, &w1], vec![]);
    let r = n.op("Relu", &[&h], vec![]);
    let y = n.op("MatMul", &[&r, &w2], vec![]);
    n.op_to("Mul", &[&y, &scale], "y", vec![]);
    n.output("y", F32, &[16, 8]);
    let mut m = n.model();
    for t in &mut m.graph.as_mut().unwrap().initializer {
        t.raw_data = t.float_data.iter().flat_map(|v| v.to_le_bytes()).collect();
        t.float_data.clear();
    }
    m
}

fn session(args: &EngineArgs, keep: bool) -> Session {
    Session::new(SessionOptions {
        keep_compiled_state: keep,
        ..SessionOptions::with_engines(engine_set(args).unwrap())
    })
    .unwrap()
}

fn released_count(model: &rge_runtime::Model) -> usize {
    model
        .program()
        .consts
        .iter()
        .filter(|t| matches!(t.data(), TensorData::Bytes(b) if b.is_empty() && !t.is_empty()))
        .count()
}

#[test]
fn packed_weights_replace_their_sources_and_outputs_stay_right() {
    let m = mlp();
    let run = session(&EngineArgs::default(), false)
        .compile_graph(graph_of(&m))
        .unwrap();
    // Both MatMul weights went into the dense kernels' packed copies; the Mul's did not.
    assert_eq!(released_count(&run), 2, "{:?}", run.program().steps);
    assert!(rge_runtime::release::weights_released(run.graph()));
    let cpu_only = EngineArgs {
        exclude_engines: Some("dense,vector".into()),
        ..EngineArgs::default()
    };
    let reference = session(&cpu_only, false)
        .compile_graph(graph_of(&m))
        .unwrap();
    assert_eq!(released_count(&reference), 0, "cpu kernels absorb nothing");
    let inputs = inputs_of(&m);
    let got = run.run(&inputs).unwrap();
    let want = reference.run(&inputs).unwrap();
    let (g, w) = (
        got[0].as_tensor().unwrap().as_slice::<f32>().unwrap(),
        want[0].as_tensor().unwrap().as_slice::<f32>().unwrap(),
    );
    for (a, b) in g.iter().zip(w) {
        assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "{a} vs {b}");
    }
    // Runs again from the same program (nothing read the released bytes).
    assert_eq!(run.run(&inputs).unwrap()[0], got[0]);
}

#[test]
fn a_model_built_to_save_keeps_its_weights_and_a_released_one_refuses_to_save() {
    let m = mlp();
    let dir = std::env::temp_dir().join(format!("rge-weights-once-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = session(&EngineArgs::default(), false)
        .compile_graph(graph_of(&m))
        .unwrap();
    let err = save_model(&run, &dir.join("run.rge"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("keep_compiled_state"), "{err}");
    assert!(!dir.join("run.rge").exists());
    let kept = session(&EngineArgs::default(), true)
        .compile_graph(graph_of(&m))
        .unwrap();
    assert_eq!(released_count(&kept), 0);
    save_model(&kept, &dir.join("kept.rge")).unwrap();
    let loaded = session(&EngineArgs::default(), false)
        .load_model(&dir.join("kept.rge"))
        .unwrap();
    let inputs = inputs_of(&m);
    assert_eq!(loaded.run(&inputs).unwrap(), kept.run(&inputs).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn constants_no_kernel_absorbs_are_shared_with_the_graph_not_copied() {
    // Weights of an imported file are aligned owned copies (rge_formats::mmap), so the
    // program's constant is the graph's bytes.
    let m = mlp();
    let dir = std::env::temp_dir().join(format!("rge-weights-shared-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.onnx");
    std::fs::write(&path, prost::Message::encode_to_vec(&m)).unwrap();
    let graph = rge_formats::onnx::import_file(&path).unwrap().graph;
    let run = session(&EngineArgs::default(), false)
        .compile_graph(graph)
        .unwrap();
    let shared = run
        .program()
        .consts
        .iter()
        .filter(|t| matches!(t.data(), TensorData::Bytes(b) if b.is_shared()))
        .count();
    assert!(shared >= 1, "the Add's [16, 64] weight (4 KiB) is shared");
    // In the graph: the packed weights were released while lowering, the Add's came back.
    let g = run.graph();
    let (mut emptied, mut kept) = (0, 0);
    for n in g.nodes_of(g.root()) {
        if let Some(t) = g.op(n).and_then(|o| o.const_value()) {
            if t.data.is_empty() && t.desc.shape().element_count().ok().flatten().unwrap_or(0) > 0 {
                emptied += 1;
            } else if t.data.len() >= 4096 {
                kept += 1;
            }
        }
    }
    assert_eq!(emptied, 2, "the two MatMul weights");
    assert!(kept >= 1, "the Add's weight is back in its Const node");
    std::fs::remove_dir_all(&dir).unwrap();
}
