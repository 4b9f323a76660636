//! Compiled models are recognised by their content, whatever the file's name; `inspect` reads
//! them; a truncated one, or one written by a different engine set, is a clear error naming
//! the file and the node.

#[path = "../../rge-engine/tests/common/mod.rs"]
mod plugin;

use std::path::{Path, PathBuf};

use rge::cli::{self, run::RunArgs};
use rge::engines::EngineArgs;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rge-compiled-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn run_model(model: &Path, engines: EngineArgs) -> Result<String, cli::CliError> {
    cli::run::run(&RunArgs {
        model: model.to_path_buf(),
        inputs: vec![format!(
            "image={}",
            examples().join("tiny_cnn_image.npy").display()
        )],
        engines,
        ..RunArgs::default()
    })
}

#[test]
fn a_compiled_model_is_recognised_whatever_its_name() {
    let model = examples().join("tiny_cnn.onnx");
    for name in ["tiny.bin", "tiny", "tiny.onnx.compiled"] {
        let out = tmp(name);
        cli::compile::run(&model, &out, &EngineArgs::default())
            .unwrap_or_else(|e| panic!("{}", e.message));
        let ran =
            run_model(&out, EngineArgs::default()).unwrap_or_else(|e| panic!("{}", e.message));
        assert!(ran.contains("output probs"), "{ran}");
        let info = cli::inspect::run(&out, false).unwrap_or_else(|e| panic!("{}", e.message));
        assert!(info.contains("compiled model"), "{info}");
        // The pooling and softmax nodes run on the vector engine.
        assert!(info.contains("vector:"), "{info}");
        let v: serde_json::Value =
            serde_json::from_str(&cli::inspect::run(&out, true).unwrap()).unwrap();
        assert!(
            v["compiled"]["engines"]["vector"].as_u64().unwrap() > 0,
            "{v}"
        );
    }
}

#[test]
fn a_truncated_compiled_model_is_an_error_naming_the_file() {
    let model = examples().join("tiny_cnn.onnx");
    let out = tmp("whole.om");
    cli::compile::run(&model, &out, &EngineArgs::default()).unwrap();
    let bytes = std::fs::read(&out).unwrap();
    let cut = tmp("cut.om");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let e = run_model(&cut, EngineArgs::default()).unwrap_err();
    assert!(e.message.contains("cut.om"), "{}", e.message);
    let garbage = tmp("garbage.bin");
    std::fs::write(&garbage, b"\x01\x02not a model at all\xff").unwrap();
    let e = run_model(&garbage, EngineArgs::default()).unwrap_err();
    assert!(e.message.contains("garbage.bin"), "{}", e.message);
}

#[test]
fn a_model_compiled_by_another_engine_set_is_refused_naming_the_node() {
    let model = examples().join("tiny_cnn.onnx");
    let with_plugin = EngineArgs {
        exclude_engines: Some("cpu,dense,vector".into()),
        plugins: vec![plugin::plugin_path()],
        ..EngineArgs::default()
    };
    let out = tmp("plugin.om");
    cli::compile::run(&model, &out, &with_plugin).unwrap_or_else(|e| panic!("{}", e.message));
    // With the plugin it runs; without it the Relu nodes' engine is missing.
    run_model(&out, with_plugin).unwrap_or_else(|e| panic!("{}", e.message));
    let e = run_model(&out, EngineArgs::default()).unwrap_err();
    assert!(e.message.contains("plugin.om"), "{}", e.message);
    assert!(
        e.message
            .contains("engine `example` is not in the engine set"),
        "{}",
        e.message
    );
    assert!(e.message.contains("relu"), "{}", e.message);
}

#[test]
fn saved_models_keep_the_prepacked_weights_and_check_them() {
    let model = examples().join("tiny_cnn.onnx");
    let out = tmp("packed.om");
    cli::compile::run(&model, &out, &EngineArgs::default()).unwrap();
    // The dense nodes carry their packed weights in the file.
    let ge = rge_formats::ge::GeModel::read_binary(&out).unwrap();
    let g = &ge.graph;
    let packed: Vec<String> = g
        .nodes_of(g.root())
        .filter(|&n| {
            let a = g.op(n).unwrap().attrs();
            a.contains(rge_dense::kernels::PACKED_W_ATTR)
                || a.contains(rge_dense::kernels::PACKED_B_ATTR)
        })
        .map(|n| g.name_of(n).to_string())
        .collect();
    assert_eq!(packed.len(), 3, "{packed:?}");
    run_model(&out, EngineArgs::default()).unwrap_or_else(|e| panic!("{}", e.message));
    // A flipped byte in a packed weight is caught by its checksum, naming the node.
    let mut ge = ge;
    let fc = ge.graph.find_node(ge.graph.root(), &packed[2]).unwrap();
    let op = ge.graph.op_mut(fc).unwrap();
    for key in [
        rge_dense::kernels::PACKED_W_ATTR,
        rge_dense::kernels::PACKED_B_ATTR,
    ] {
        match op.attrs_mut().get_mut(key) {
            Some(rge_ir::AttrValue::Bytes(b)) => b[100] ^= 0x40,
            Some(rge_ir::AttrValue::ListBytes(v)) => v[0][100] ^= 0x40,
            _ => {}
        }
    }
    let bad = tmp("bad_packed.om");
    ge.write_binary(&bad, &rge_formats::ge::WriteOptions::default())
        .unwrap();
    let e = run_model(&bad, EngineArgs::default()).unwrap_err();
    assert!(
        e.message.contains("bad_packed.om") && e.message.contains(&packed[2]),
        "{}",
        e.message
    );
    assert!(e.message.contains("checksum"), "{}", e.message);
}
