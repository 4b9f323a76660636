//! The bundled example (README's first command): examples/tiny_cnn.onnx run on the bundled
//! image matches the ONNX reference implementation's output (examples/tiny_cnn_expected.npy),
//! with every executor and after a save/load round trip through `rge compile`.

use std::path::{Path, PathBuf};

use rge::cli::run::{run, RunArgs};
use rge_runtime::io::read_tensor;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn run_example(model: &Path, executor: &str, out: &Path) -> Vec<f32> {
    let _ = std::fs::remove_dir_all(out);
    run(&RunArgs {
        model: model.to_path_buf(),
        inputs: vec![format!(
            "image={}",
            examples().join("tiny_cnn_image.npy").display()
        )],
        output_dir: Some(out.to_path_buf()),
        executor: Some(executor.into()),
        threads: Some(2),
        pin_threads: Default::default(),
        profile: None,
        engines: Default::default(),
        random: Default::default(),
    })
    .unwrap_or_else(|e| panic!("{executor}: {}", e.message));
    let got = read_tensor(&out.join("probs.npy")).unwrap();
    assert_eq!(got.shape(), &[1, 10]);
    got.as_slice::<f32>().unwrap().to_vec()
}

#[test]
fn tiny_cnn_matches_the_reference_on_every_executor_and_after_compile() {
    let want = read_tensor(&examples().join("tiny_cnn_expected.npy")).unwrap();
    let want = want.as_slice::<f32>().unwrap().to_vec();
    let tmp = std::env::temp_dir().join(format!("rge-example-{}", std::process::id()));
    let model = examples().join("tiny_cnn.onnx");
    let check = |got: &[f32], what: &str| {
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 + 1e-3 * w.abs(),
                "{what}: element {i}: {g} vs {w}"
            );
        }
    };
    for ex in [
        "sequential",
        "topological",
        "parallel",
        "priority",
        "stream",
    ] {
        let got = run_example(&model, ex, &tmp.join(ex));
        check(&got, ex);
    }
    let compiled = tmp.join("tiny_cnn.om");
    rge::cli::compile::run(&model, &compiled, &Default::default())
        .unwrap_or_else(|e| panic!("{}", e.message));
    let got = run_example(&compiled, "sequential", &tmp.join("compiled"));
    check(&got, "compiled");
}
