//! `--control-flow nested|rts` on the command line: `rge run`, `rge compile` and `rge bench` on
//! the VAD-like model (an If over an LSTM and a GRU branch, a Loop over the frames; data from
//! scripts/gen_rts_test_models.py) give the same bytes both ways; a bad value is refused naming
//! the option; a compiled model with flat regions reloads, still flat, with the same outputs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rge::engines::{engine_set, EngineArgs};
use rge_runtime::{Session, SessionOptions};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/rts")
        .join(name)
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rge-rts-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn rge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rge"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = rge(args);
    assert!(
        out.status.success(),
        "rge {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The `--input` arguments of data set `k` of the VAD-like model.
fn inputs(k: usize) -> Vec<String> {
    let set = data("vad_like").join(format!("test_data_set_{k}"));
    ["x", "use_lstm"]
        .iter()
        .enumerate()
        .flat_map(|(i, n)| {
            [
                "--input".to_string(),
                format!("{n}={}", set.join(format!("input_{i}.pb")).display()),
            ]
        })
        .collect()
}

const OUTPUTS: [&str; 3] = ["speech", "sum", "feats"];

/// The bytes of every output .npy under `dir`.
fn outputs(dir: &Path) -> Vec<Vec<u8>> {
    OUTPUTS
        .iter()
        .map(|n| {
            std::fs::read(dir.join(format!("{n}.npy")))
                .unwrap_or_else(|e| panic!("{}/{n}.npy: {e}", dir.display()))
        })
        .collect()
}

/// `rge <cmd> MODEL [extra] --input … --output-dir DIR`: the outputs written.
fn outputs_of(cmd: &str, model: &Path, set: usize, extra: &[&str], tag: &str) -> Vec<Vec<u8>> {
    let dir = tmp(tag);
    let _ = std::fs::remove_dir_all(&dir);
    let model = model.to_str().unwrap().to_string();
    let dir_s = dir.to_str().unwrap().to_string();
    let mut args: Vec<String> = vec![cmd.into(), model];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(inputs(set));
    args.extend(["--output-dir".into(), dir_s]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ok(&args);
    outputs(&dir)
}

#[test]
fn run_and_bench_give_the_same_outputs_with_either_control_flow() {
    let model = data("vad_like").join("model.onnx");
    for set in 0..2 {
        let want = outputs_of("run", &model, set, &["--control-flow", "nested"], "n");
        for (cmd, extra) in [
            ("run", vec!["--control-flow", "rts"]),
            ("run", vec![]),
            ("run", vec!["--control-flow", "rts", "--executor", "stream"]),
            (
                "run",
                vec![
                    "--control-flow",
                    "rts",
                    "--executor",
                    "parallel",
                    "--threads",
                    "2",
                ],
            ),
            (
                "bench",
                vec!["--control-flow", "rts", "--runs", "2", "--warmup", "1"],
            ),
            (
                "bench",
                vec!["--control-flow", "nested", "--runs", "2", "--warmup", "1"],
            ),
        ] {
            let got = outputs_of(cmd, &model, set, &extra, "r");
            assert_eq!(got, want, "set {set}: rge {cmd} {extra:?}");
        }
        // The flag selects a branch: the feats of the two data sets differ.
        if set == 1 {
            let first = outputs_of("run", &model, 0, &[], "f");
            assert_ne!(first[2], want[2]);
        }
    }
}

#[test]
fn bench_json_runs_with_either_control_flow() {
    let model = data("vad_like").join("model.onnx");
    for cf in ["nested", "rts"] {
        let mut args = vec![
            "bench".to_string(),
            model.to_str().unwrap().into(),
            "--control-flow".into(),
            cf.into(),
            "--runs".into(),
            "2".into(),
            "--warmup".into(),
            "0".into(),
            "--json".into(),
        ];
        args.extend(inputs(0));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = ok(&args);
        let v: serde_json::Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{cf}: {e}: {out}"));
        assert_eq!(v["runs"], 2, "{cf}: {out}");
        // The per-op profile shows where control flow ran: the rts steps only under rts.
        let text = out.to_string();
        assert_eq!(text.contains("LabelSwitch"), cf == "rts", "{cf}: {out}");
    }
}

#[test]
fn a_bad_control_flow_value_is_refused_naming_the_option() {
    let model = data("vad_like").join("model.onnx");
    let m = model.to_str().unwrap();
    let om = tmp("bad.om");
    let om = om.to_str().unwrap();
    for args in [
        vec!["run", m, "--control-flow", "flat"],
        vec!["compile", m, "-o", om, "--control-flow", "flat"],
        vec!["bench", m, "--control-flow", "flat"],
        vec!["run", m, "--control-flow", ""],
        vec!["run", m, "--control-flow", "RTS"],
    ] {
        let out = rge(&args);
        assert!(!out.status.success(), "{args:?}");
        let msg = String::from_utf8_lossy(&out.stderr);
        assert!(msg.contains("--control-flow"), "{args:?}: {msg}");
        assert!(
            msg.contains("nested") && msg.contains("rts"),
            "{args:?}: {msg}"
        );
    }
    // The library's check too (what the engine options of every command go through).
    let e = engine_set(&EngineArgs {
        control_flow: Some("flat".into()),
        ..EngineArgs::default()
    })
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(e.contains("--control-flow") && e.contains("flat"), "{e}");
}

#[test]
fn a_compiled_model_with_flat_regions_reloads_with_the_same_outputs() {
    let model = data("vad_like").join("model.onnx");
    let m = model.to_str().unwrap();
    for cf in ["rts", "nested"] {
        let om = tmp(&format!("vad_{cf}.om"));
        ok(&[
            "compile",
            m,
            "-o",
            om.to_str().unwrap(),
            "--control-flow",
            cf,
        ]);
        // The saved program: flat regions under rts, nested programs under nested.
        let set = engine_set(&EngineArgs::default()).unwrap();
        let s = Session::new(SessionOptions::with_engines(set)).unwrap();
        let loaded = s.load_model(&om).unwrap();
        let kinds: Vec<&str> = loaded
            .program()
            .steps
            .iter()
            .map(|st| &*st.op_type)
            .collect();
        let flat = ["StreamActive", "LabelSwitch", "StreamSwitch", "LabelGoto"]
            .iter()
            .all(|k| kinds.contains(k));
        assert_eq!(flat, cf == "rts", "{cf}: {kinds:?}");
        assert_eq!(
            loaded
                .program()
                .steps
                .iter()
                .any(|st| !st.subgraphs.is_empty()),
            cf == "nested",
            "{cf}: {kinds:?}"
        );
        for set in 0..2 {
            let want = outputs_of("run", &model, set, &["--control-flow", "nested"], "w");
            for extra in [vec![], vec!["--executor", "stream"]] {
                let got = outputs_of("run", &om, set, &extra, "o");
                assert_eq!(got, want, "{cf}: set {set}, {extra:?}");
            }
        }
    }
}
