//! `rge explain` over real models, and the rule that holds the engine set together: the
//! placement `rge place --json` prints is the engine (and kernel) that ran each node in
//! `rge run --profile`, on every model in `examples/` and the test models.

#[path = "common/net.rs"]
mod net;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use net::{a_float, Net, F32};
use prost::Message;

use rge::cli::{self, run::RunArgs};
use rge::engines::EngineArgs;
use rge_engine::{BasicEngine, EngineAttributes, KernelStore};
use rge_kernels::{
    DType, Kernel, KernelCtx, KernelDef, KernelResult, KernelSet, MemSpace, TypeSet,
};
use rge_runtime::memory::SpaceAllocator;
use rge_runtime::EngineSet;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rge-explain-cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Every model of `examples/` and the GE fixtures that compile.
fn models() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "onnx"))
        .collect();
    let fixtures = root().join("../shared/fixtures/ge/onnx");
    for f in ["onnx_clip_v9.onnx", "onnx_conv2d.onnx"] {
        if fixtures.join(f).exists() {
            v.push(fixtures.join(f));
        }
    }
    assert!(!v.is_empty());
    v
}

#[test]
fn the_placement_rge_place_prints_is_what_rge_run_ran() {
    for model in models() {
        let trace = tmp("trace.json");
        cli::run::run(&RunArgs {
            model: model.clone(),
            profile: Some(trace.clone()),
            ..RunArgs::default()
        })
        .unwrap_or_else(|e| panic!("{}: {}", model.display(), e.message));
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
        let placed: serde_json::Value = serde_json::from_str(
            &cli::engines::place(&model, &EngineArgs::default(), true).unwrap(),
        )
        .unwrap();
        let explained: serde_json::Value = serde_json::from_str(
            &cli::explain::run(&model, &EngineArgs::default(), true, None).unwrap(),
        )
        .unwrap();
        let mut ran = 0;
        for e in v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
        {
            let node = e["name"].as_str().unwrap();
            let find = |doc: &serde_json::Value| {
                doc["nodes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|n| n["name"] == node)
                    .cloned()
                    .unwrap_or_else(|| panic!("{}: `{node}` ran, not listed", model.display()))
            };
            assert_eq!(find(&placed)["engine"], e["args"]["engine"], "{node}");
            let x = find(&explained);
            assert_eq!(x["engine"], e["args"]["engine"], "{node}");
            assert_eq!(x["kernel"], e["args"]["kernel"], "{node}");
            ran += 1;
        }
        assert!(ran > 0, "{}", model.display());
    }
}

#[test]
fn explain_json_text_and_html_of_the_example() {
    let model = root().join("examples/tiny_cnn.onnx");
    let html = tmp("tiny.html");
    let out = cli::explain::run(&model, &EngineArgs::default(), true, Some(&html)).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for key in ["nodes", "partitions", "engines", "transfers", "edges"] {
        assert!(v[key].is_array(), "{key}: {v}");
    }
    // The dense engine fused each Conv with its bias and Relu.
    let conv = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["op_type"] == "FusedConv")
        .unwrap();
    assert_eq!(conv["engine"], "dense");
    assert_eq!(conv["kernel"], "dense.FusedConv");
    assert!(
        conv["partition"].is_string() && conv["stream"].is_u64(),
        "{conv}"
    );
    assert!(conv["notes"].to_string().contains("fused"), "{conv}");
    let c = conv["candidates"].as_array().unwrap();
    // Every engine, in cost order, with its answer and reason.
    let costs: Vec<u64> = c.iter().map(|x| x["cost"].as_u64().unwrap()).collect();
    assert!(costs.windows(2).all(|w| w[0] <= w[1]), "{costs:?}");
    let dense = c.iter().find(|x| x["engine"] == "dense").unwrap();
    assert_eq!(dense["supported"], true);
    let custom = c.iter().find(|x| x["engine"] == "custom").unwrap();
    assert_eq!(custom["supported"], false);
    assert!(
        custom["reason"].as_str().unwrap().contains("no kernel"),
        "{custom}"
    );
    let dense_share = v["engines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "dense")
        .unwrap()["flops_share"]
        .as_f64()
        .unwrap();
    assert!(dense_share > 0.9, "{dense_share}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<svg") && page.contains("dense"),
        "{}",
        &page[..200.min(page.len())]
    );
    let text = cli::explain::run(&model, &EngineArgs::default(), false, None).unwrap();
    assert!(text.contains("custom (0): no"), "{text}");
    // Excluding dense: nothing is fused, the reason says dense was excluded, Conv runs on the
    // next core engine, vector (its Conv is the reference kernel).
    let no_dense = EngineArgs {
        exclude_engines: Some("dense".into()),
        ..EngineArgs::default()
    };
    let v: serde_json::Value =
        serde_json::from_str(&cli::explain::run(&model, &no_dense, true, None).unwrap()).unwrap();
    let conv = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["op_type"] == "Conv")
        .unwrap();
    assert_eq!(conv["engine"], "vector");
    assert_eq!(conv["kernel"], "vector.Conv");
    let dense = conv["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["engine"] == "dense")
        .unwrap();
    assert_eq!(dense["excluded"], true, "{dense}");
}

struct DevRelu;

impl Kernel for DevRelu {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let v: Vec<f32> = x.as_slice::<f32>()?.to_vec();
        let out = ctx.output::<f32>(0, x.shape())?;
        for (o, a) in out.iter_mut().zip(v) {
            *o = a.max(0.0);
        }
        Ok(())
    }
}

struct DevMemory;

impl SpaceAllocator for DevMemory {
    fn space(&self) -> MemSpace {
        MemSpace::new("dev")
    }
    fn alloc_arena(&self, bytes: usize) -> Vec<u128> {
        vec![0; bytes.div_ceil(16).max(1)]
    }
    fn free_arena(&self, _: Vec<u128>) {}
}

#[test]
fn explain_lists_the_transfers_and_memory_spaces() {
    let mut set = KernelSet::new();
    set.add(
        KernelDef::new("dev.Relu", "Relu", |_| {
            Ok(Box::new(DevRelu) as Box<dyn Kernel>)
        })
        .all_inputs(TypeSet::of(&[DType::Float])),
    );
    let mut attrs = EngineAttributes::new("dev", 1);
    attrs.mem_types = vec!["dev".into()];
    let mut b = EngineSet::builder(rge_ops::OpRegistry::builtin());
    b.standard_engines(&rge::kernels::default_kernels())
        .unwrap();
    b.register(BasicEngine::new(attrs).with_store(KernelStore::new("dev", "dev_kernels", 1, set)));
    b.memory_space(Arc::new(DevMemory));
    let engines = b.build().unwrap();
    let (m, _) = rge::model::load(&root().join("examples/tiny_cnn.onnx")).unwrap();
    let compiled = engines.compile(cli::run::graph_of(m)).unwrap();
    let report = cli::explain::explain(&engines, &compiled, "tiny_cnn").unwrap();
    let relu: Vec<_> = report
        .nodes
        .iter()
        .filter(|n| n.op_type == "Relu")
        .collect();
    assert!(!relu.is_empty());
    assert!(relu
        .iter()
        .all(|n| n.engine == "dev" && n.memory_space == "dev"));
    // Each Relu sits between two host nodes: one transfer in, one out.
    assert_eq!(
        report.transfers.len(),
        2 * relu.len(),
        "{:?}",
        report.transfers
    );
    assert!(report
        .transfers
        .iter()
        .any(|t| t.from_space == "host" && t.to_space == "dev"));
    assert!(report
        .transfers
        .iter()
        .any(|t| t.from_space == "dev" && t.to_space == "host"));
    let text = rge::explain::render_text(&report);
    assert!(text.contains("dev"), "{text}");
}

/// The engine `rge explain --json` gives the node named `name` (or of type `name`).
fn explained_engine(model: &Path, name: &str) -> String {
    let out = cli::explain::run(model, &EngineArgs::default(), true, None)
        .unwrap_or_else(|e| panic!("{}: {}", model.display(), e.message));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let node = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name || n["op_type"] == name)
        .unwrap_or_else(|| panic!("no node {name} in {v}"));
    node["engine"].as_str().unwrap().to_string()
}

#[test]
fn explain_names_the_seed_engines_that_take_nodes() {
    // rts: the VAD-like model's If and Loop, lowered flat.
    let vad = root().join("crates/rge/tests/data/rts/vad_like/model.onnx");
    assert_eq!(explained_engine(&vad, "branch"), "rts");
    assert_eq!(explained_engine(&vad, "frames"), "rts");
    // rng: a seeded RandomNormalLike.
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 3]);
    let r = n.op("RandomNormalLike", &[&x], vec![a_float("seed", 3.0)]);
    n.op_to("Add", &[&x, &r], "y", vec![]);
    n.output("y", F32, &[2, 3]);
    let path = tmp("rng.onnx");
    std::fs::write(&path, n.model().encode_to_vec()).unwrap();
    assert_eq!(explained_engine(&path, "RandomNormalLike"), "rng");
    // media: ONNX ImageDecoder.
    let mut n = Net::new();
    n.opset = 20;
    let bytes = n.input("bytes", 2, &[-1]);
    n.op_to("ImageDecoder", &[&bytes], "image", vec![]);
    n.output("image", 2, &[-1, -1, 3]);
    let path = tmp("media.onnx");
    std::fs::write(&path, n.model().encode_to_vec()).unwrap();
    assert_eq!(explained_engine(&path, "ImageDecoder"), "media");
}

/// The dense engine's choice of Winograd for a channels-last 3×3 stride-1 layer is a note of
/// that node in `rge explain` (and only of that node: not the 1×1 one).
#[test]
fn explain_notes_the_winograd_layers() {
    let mut n = Net::new();
    let x = n.input("x", F32, &[1, 32, 8, 8]);
    let pads = net::a_ints("pads", &[1, 1, 1, 1]);
    let w1 = n.weight(&[32, 32, 3, 3], 1);
    let a = n.op("Conv", &[&x, &w1], vec![pads.clone()]);
    let w2 = n.weight(&[32, 32, 3, 3], 2);
    let b = n.op("Conv", &[&a, &w2], vec![pads]);
    let w3 = n.weight(&[32, 32, 1, 1], 3);
    n.op_to("Conv", &[&b, &w3], "y", vec![]);
    n.output("y", F32, &[1, 32, 8, 8]);
    let path = tmp("winograd.onnx");
    std::fs::write(&path, n.model().encode_to_vec()).unwrap();
    let out = cli::explain::run(&path, &EngineArgs::default(), true, None)
        .unwrap_or_else(|e| panic!("{}", e.message));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let marked: Vec<(String, bool)> = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["op_type"] == "FusedConvNhwc")
        .map(|n| {
            let notes = n["notes"].to_string();
            (
                n["name"].to_string(),
                notes.contains("Winograd F(2x2, 3x3)"),
            )
        })
        .collect();
    assert_eq!(marked.iter().filter(|m| m.1).count(), 2, "{marked:?}");
    assert_eq!(marked.len(), 3, "{marked:?}");
}
