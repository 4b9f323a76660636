//! The compile pipeline end to end with small test engines: infer, the three optimizer
//! stages, composite then atomic partitioning, merging, new nodes re-placed, compile ops,
//! running parameters, kernels, streams, dumps.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use rge_compiler::attr_names::{END, PLACEHOLDER};
use rge_compiler::{CompileError, CompileOptions, EngineManager, FnPass, Pipeline};
use rge_engine::{
    BasicEngine, EngineError, EngineResult, GraphOptimizer, GraphRewriter, Kernel, KernelBuilder,
    KernelInfoStore, NamedKernel, OpInfo, OpTypes, RunningParams, Support,
};
use rge_ir::{AttrValue, ComputeGraph, GraphPatch, NodeId, OpDesc, Outlet};

/// Marks every non-boundary node with `_opt_<stage>_<engine>`; in the fused stage the dense
/// engine also adds an `Identity` reading each MatMul (a new node to be placed), by a patch.
struct Marker {
    engine: &'static str,
    fail_fused: bool,
}

fn is_boundary(g: &ComputeGraph, n: NodeId) -> bool {
    let t = g.op(n).unwrap().op_type();
    t == END || t == PLACEHOLDER
}

fn mark_graph(g: &mut ComputeGraph, key: &str) {
    let nodes: Vec<NodeId> = g.nodes_of(g.root()).collect();
    for n in nodes {
        if !is_boundary(g, n) {
            g.op_mut(n).unwrap().attrs_mut().set(key, true);
        }
    }
}

fn mark(rw: &mut GraphRewriter<'_>, key: &str) -> EngineResult<()> {
    let g = rw.graph();
    let nodes: Vec<NodeId> = g
        .nodes_of(g.root())
        .filter(|&n| !is_boundary(g, n))
        .collect();
    for n in nodes {
        rw.set_attr(n, key, true)?;
    }
    Ok(())
}

impl GraphOptimizer for Marker {
    fn optimize_original_graph(&self, rw: &mut GraphRewriter<'_>) -> EngineResult<()> {
        mark(rw, &format!("_opt_original_{}", self.engine))
    }
    fn optimize_fused_graph(&self, rw: &mut GraphRewriter<'_>) -> EngineResult<()> {
        if self.fail_fused {
            return Err(EngineError::engine(self.engine, "fusion failed on purpose"));
        }
        mark(rw, &format!("_opt_fused_{}", self.engine))?;
        if self.engine == "dense" {
            let g = rw.graph();
            let mms: Vec<NodeId> = g
                .nodes_of(g.root())
                .filter(|&n| g.op(n).unwrap().op_type() == "MatMul")
                .collect();
            for mm in mms {
                let mut p = GraphPatch::new();
                let id = p.add_node(
                    OpDesc::new(format!("{}_id", rw.graph().name_of(mm)), "Identity")
                        .with_input("", desc())
                        .with_output("", desc()),
                );
                p.connect(Outlet::old(mm, 0), id, 0);
                rw.apply(p)?;
            }
        }
        Ok(())
    }
    fn optimize_whole_graph(&self, rw: &mut GraphRewriter<'_>) -> EngineResult<()> {
        mark(rw, &format!("_opt_whole_{}", self.engine))
    }
}

/// The composite engine's optimizer: records the region size on each member.
struct RegionMarker;

impl GraphOptimizer for RegionMarker {
    fn optimize_fused_graph(&self, rw: &mut GraphRewriter<'_>) -> EngineResult<()> {
        let g = rw.graph();
        let nodes: Vec<NodeId> = g
            .nodes_of(g.root())
            .filter(|&n| !is_boundary(g, n))
            .collect();
        for &n in &nodes {
            rw.set_attr(n, "_fused_region", nodes.len() as i64)?;
        }
        Ok(())
    }
}

struct Builder(&'static str);

impl KernelBuilder for Builder {
    fn calc_running_params(&self, g: &ComputeGraph, n: NodeId) -> EngineResult<RunningParams> {
        let mut p = rge_engine::default_running_params(g, n)?;
        p.workspace = vec![16];
        Ok(p)
    }
    fn generate_kernel(
        &self,
        g: &ComputeGraph,
        n: NodeId,
        _: &RunningParams,
    ) -> EngineResult<Box<dyn Kernel>> {
        Ok(Box::new(NamedKernel {
            engine: self.0.into(),
            op_type: g.op(n).unwrap().op_type().into(),
        }))
    }
}

/// A store wrapper counting compile_ops calls.
struct Counting<S>(S, Arc<AtomicUsize>);

impl<S: KernelInfoStore> KernelInfoStore for Counting<S> {
    fn kernel_lib_name(&self) -> &str {
        self.0.kernel_lib_name()
    }
    fn op_info(&self, t: &str) -> Option<&OpInfo> {
        self.0.op_info(t)
    }
    fn op_types(&self) -> OpTypes {
        self.0.op_types()
    }
    fn check_supported(&self, op: &OpDesc) -> Support {
        self.0.check_supported(op)
    }
    fn compile_ops(&self, g: &mut ComputeGraph, nodes: &[NodeId]) -> EngineResult<()> {
        self.1.fetch_add(nodes.len(), Ordering::Relaxed);
        for &n in nodes {
            g.op_mut(n).unwrap().attrs_mut().set("_compiled", true);
        }
        Ok(())
    }
}

/// A store for standard engine `name` answering yes for `ops`.
fn store(name: &str, ops: &[&str]) -> rge_engine::TableStore {
    let cost = rge_engine::standard_engine(name).unwrap().compute_cost;
    rge_engine::TableStore::new(name, format!("{name}_store"), cost).with_ops(ops.iter().copied())
}

fn pipeline_manager(fail_fused: bool, compiled: Arc<AtomicUsize>) -> Arc<EngineManager> {
    let mut b = EngineManager::builder();
    b.register(
        BasicEngine::standard("dense")
            .unwrap()
            .with_store(Counting(store("dense", &["MatMul", "Add"]), compiled))
            .with_optimizer(Marker {
                engine: "dense",
                fail_fused,
            })
            .with_builder(Builder("dense")),
    )
    .register(
        BasicEngine::standard("fused")
            .unwrap()
            .with_store(store("fused", &[]))
            .with_optimizer(RegionMarker),
    )
    .register(
        BasicEngine::standard("vector")
            .unwrap()
            .with_store(store("vector", &["Relu"])),
    )
    .register(
        BasicEngine::standard("cpu")
            .unwrap()
            .with_store(store("cpu", &["Sort"]))
            .with_builder(Builder("cpu")),
    )
    .register(
        BasicEngine::standard("local")
            .unwrap()
            .with_store(store("local", &["Data", "NetOutput", "Identity"])),
    );
    b.build().unwrap()
}

fn model_graph() -> ComputeGraph {
    graph(&[
        ("x", "Data", &[]),
        ("mm", "MatMul", &["x", "x"]),
        ("add", "Add", &["mm", "x"]),
        ("s", "Sort", &["add"]),
        ("mm2", "MatMul", &["s", "x"]),
        ("out", "NetOutput", &["mm2"]),
    ])
}

fn get<'a>(m: &'a rge_compiler::CompiledModel, node: &str, key: &str) -> Option<&'a AttrValue> {
    m.graph.op(m.find(node).unwrap()).unwrap().attrs().get(key)
}

#[test]
fn compiles_end_to_end() {
    let compiled = Arc::new(AtomicUsize::new(0));
    let m = pipeline_manager(false, compiled.clone());
    let dir = std::env::temp_dir().join(format!("rge-pipeline-dump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = CompileOptions {
        dump_dir: Some(dir.clone()),
        ..Default::default()
    };
    let p = Pipeline::new(m, o).with_infer(FnPass::new(
        "test-infer",
        |g: &mut ComputeGraph, _o: &CompileOptions| {
            mark_graph(g, "_inferred");
            Ok(())
        },
    ));
    let model = p.compile(model_graph()).unwrap();
    model.graph.verify().unwrap();

    // Stages ran in order on every node.
    for key in ["_inferred", "_opt_original_dense", "_opt_whole_dense"] {
        assert_eq!(get(&model, "s", key), Some(&AttrValue::Bool(true)), "{key}");
    }
    // The composite engine saw the region {mm, add}; the dense engine its atomic partitions.
    assert_eq!(
        model
            .composite_partitions
            .iter()
            .map(|p| p.engine.as_str())
            .collect::<Vec<_>>(),
        ["inputNodesSubGraph", "fused", "cpu", "fused", "local"]
    );
    assert_eq!(get(&model, "mm", "_fused_region"), Some(&AttrValue::Int(2)));
    assert_eq!(
        get(&model, "mm", "_opt_fused_dense"),
        Some(&AttrValue::Bool(true))
    );
    assert_eq!(get(&model, "s", "_opt_fused_dense"), None);
    assert_eq!(
        model
            .partitions
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        [
            "partition1_rank0_inputNodeGraph",
            "partition1_rank1_new_sub_graph1",
            "partition1_rank2_new_sub_graph2",
            "partition1_rank3_new_sub_graph3",
            "partition1_rank4_new_sub_graph4",
        ]
    );
    // The dense optimizer's new nodes were placed (on local) with a reason.
    let id = model.find("mm_id").unwrap();
    assert_eq!(model.placement.engine(id), Some("local"));
    assert!(model
        .placement
        .reason(&model.graph, id)
        .contains("local: supported"));
    // Placement reasons survived the merges.
    let mm = model.find("mm").unwrap();
    assert!(model
        .placement
        .reason(&model.graph, mm)
        .contains("dense: supported"));
    // Compile ops, running params, kernels.
    assert_eq!(compiled.load(Ordering::Relaxed), 3);
    assert_eq!(
        get(&model, "mm2", "_compiled"),
        Some(&AttrValue::Bool(true))
    );
    let cn = &model.nodes[mm];
    assert_eq!(cn.params.workspace, [16]);
    assert_eq!(cn.params.output_sizes, [32]);
    let k = model.kernel(mm).unwrap();
    assert_eq!(k.describe(), "dense:MatMul");
    assert!(model.kernel(model.find("x").unwrap()).is_none());
    assert_eq!(
        model
            .graph
            .op(mm)
            .unwrap()
            .compile_state()
            .unwrap()
            .workspace_bytes,
        [16]
    );
    assert_eq!(model.graph.op(mm).unwrap().output(0).unwrap().size(), 32);
    // Streams: dense partitions and cpu have streams, local and the input graph none.
    let s = |n: &str| model.node_streams[model.find(n).unwrap()];
    assert!(s("mm").is_some() && s("s").is_some() && s("mm2").is_some());
    assert_eq!(s("x"), None);
    assert_eq!(s("out"), None);
    assert_eq!(
        model
            .graph
            .op(model.find("out").unwrap())
            .unwrap()
            .stream_id(),
        -1
    );
    for e in &model.events {
        assert_ne!(e.src_stream, e.dst_stream);
    }
    assert!(model
        .summary()
        .contains("partition1_rank1_new_sub_graph1 engine=dense"));
    // Dumps, one per stage, numbered.
    let names: Vec<String> = model
        .dumps
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "00_input.txt",
            "01_infer.txt",
            "02_optimize_original.txt",
            "03_place.txt",
            "04_reassign.txt",
            "05_partition_composite.txt",
            "06_optimize_fused_composite.txt",
            "07_merge_composite.txt",
            "08_partition_atomic.txt",
            "09_optimize_fused_atomic.txt",
            "10_merge_atomic.txt",
            "11_optimize_whole.txt",
            "12_compile_ops.txt",
            "13_running_params.txt",
            "14_streams.txt",
        ]
    );
    // Every stage ran, in order, and was timed.
    let stages: Vec<&str> = model.stage_times.iter().map(|t| t.name.as_str()).collect();
    // Every stage but the graph optimizations (this pipeline has no graph passes).
    let expected: Vec<&str> = rge_compiler::STAGE_NAMES
        .into_iter()
        .filter(|s| !s.starts_with("optimize_graph"))
        .collect();
    assert_eq!(stages, expected);
    let placed = std::fs::read_to_string(dir.join("03_place.txt")).unwrap();
    assert!(
        placed.contains("_lxfusion_engine_name=\"dense\""),
        "{placed}"
    );
    let parts = std::fs::read_to_string(dir.join("08_partition_atomic.txt")).unwrap();
    assert!(
        parts.contains("graph partition1_rank1_new_sub_graph1"),
        "{parts}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failing_optimizer_names_its_stage_and_engine() {
    let m = pipeline_manager(true, Arc::new(AtomicUsize::new(0)));
    let e = Pipeline::new(m, CompileOptions::default())
        .compile(model_graph())
        .unwrap_err();
    assert!(
        matches!(&e, CompileError::Stage { stage, .. } if stage == "optimize_fused_atomic"),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("engine `dense`: fusion failed on purpose"),
        "{e}"
    );
}

#[test]
fn a_failing_infer_stage_is_reported() {
    let m = pipeline_manager(false, Arc::new(AtomicUsize::new(0)));
    let e =
        Pipeline::new(m, CompileOptions::default())
            .with_infer(FnPass::new(
                "shapes",
                |_: &mut ComputeGraph, _: &CompileOptions| {
                    Err("node `mm`: inputs disagree".to_string())
                },
            ))
            .compile(model_graph())
            .unwrap_err();
    assert_eq!(
        e.to_string(),
        "stage `infer (shapes)`: node `mm`: inputs disagree"
    );
}

/// A node a re-assign pass moves is recorded on its op with its new engine (name and GE's
/// attributes), the nodes it did not move with theirs: the pipeline records placement once
/// and then only the moved nodes.
#[test]
fn reassigned_nodes_record_their_new_engine() {
    let mut g = graph(&[
        ("x", "Data", &[]),
        ("mm", "MatMul", &["x", "x"]),
        ("mm2", "MatMul", &["mm", "x"]),
        ("out", "NetOutput", &["mm2"]),
    ]);
    set_attr(&mut g, "mm", rge_compiler::attr_names::HOST_EXEC_FLAG, true);
    let model = Pipeline::new(manager(), CompileOptions::default())
        .compile(g)
        .unwrap();
    let g = &model.graph;
    for (name, engine) in [("mm", "host"), ("mm2", "dense")] {
        let op = g.op(node(g, name)).unwrap();
        assert_eq!(op.engine_name(), engine, "{name}");
        assert!(!op.kernel_lib_name().is_empty(), "{name}");
        assert_eq!(
            op.attrs()
                .get_str(rge_compiler::attr_names::LXFUSION_ENGINE_NAME)
                .unwrap(),
            Some(engine),
            "{name}"
        );
        assert_eq!(
            op.attrs()
                .get_str(rge_compiler::attr_names::OP_KERNEL_LIB_NAME)
                .unwrap(),
            Some(op.kernel_lib_name()),
            "{name}"
        );
    }
}

/// The whole pipeline on a 50k-node random graph (run with `--ignored`; prints its time).
#[test]
#[ignore]
fn pipeline_scale() {
    let compiled = Arc::new(AtomicUsize::new(0));
    let m = pipeline_manager(false, compiled);
    let mut g = ComputeGraph::new("scale");
    let root = g.root();
    let types = ["MatMul", "Add", "Sort", "Relu"];
    let mut ids = vec![g
        .add_node(root, OpDesc::new("x", "Data").with_output("", desc()))
        .unwrap()];
    let mut seed = 12345u64;
    let mut rnd = |n: usize| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) as usize) % n
    };
    for i in 1..50_000 {
        let t = types[rnd(types.len())];
        let t = if t == "Relu" { "Sort" } else { t };
        let k = 1 + rnd(2);
        let mut op = OpDesc::new(format!("n{i}"), t);
        for _ in 0..k {
            op.add_input("", desc()).unwrap();
        }
        op.add_output("", desc()).unwrap();
        let n = g.add_node(root, op).unwrap();
        for j in 0..k {
            let src = ids[ids.len() - 1 - rnd(ids.len().min(32))];
            g.add_edge(src, 0, n, j).unwrap();
        }
        ids.push(n);
    }
    let t = std::time::Instant::now();
    let model = Pipeline::new(m, CompileOptions::default())
        .compile(g)
        .unwrap();
    println!(
        "pipeline: {} nodes, {} partitions, {} streams, {} events in {:.2?}",
        model.graph.node_count(model.graph.root()),
        model.partitions.len(),
        model.stream_count,
        model.events.len(),
        t.elapsed()
    );
}

/// A composite optimizer that can work on the whole graph: each `vector` Relu becomes a
/// `FusedRelu` (a new node, placed after the merge).
struct ReluFuser;

impl GraphOptimizer for ReluFuser {
    fn fused_in_place(&self) -> bool {
        true
    }
    fn optimize_fused_graph(&self, rw: &mut GraphRewriter<'_>) -> EngineResult<()> {
        let g = rw.graph();
        let relus: Vec<NodeId> = g
            .nodes_of(g.root())
            .filter(|&n| {
                let op = g.op(n).unwrap();
                op.op_type() == "Relu" && op.engine_name() == "vector"
            })
            .collect();
        for n in relus {
            let op = rw.graph().op(n).unwrap();
            let fused = OpDesc::new(format!("{}_f", op.name()), "FusedRelu")
                .with_input("", desc())
                .with_output("", desc());
            rw.replace_node(n, fused)?;
        }
        Ok(())
    }
}

fn in_place_manager() -> Arc<EngineManager> {
    let mut b = EngineManager::builder();
    b.register(
        BasicEngine::standard("dense")
            .unwrap()
            .with_store(store("dense", &["MatMul"])),
    )
    .register(
        BasicEngine::standard("fused")
            .unwrap()
            .with_store(store("fused", &[]))
            .with_optimizer(ReluFuser),
    )
    .register(
        BasicEngine::standard("vector")
            .unwrap()
            .with_store(store("vector", &["Relu", "FusedRelu"])),
    )
    .register(
        BasicEngine::standard("cpu")
            .unwrap()
            .with_store(store("cpu", &["Sort"])),
    )
    .register(
        BasicEngine::standard("local")
            .unwrap()
            .with_store(store("local", &["Data", "NetOutput"])),
    );
    b.build().unwrap()
}

/// Every node's name, op type and engine, with its inputs' producers, and the output list.
fn shape_of(m: &rge_compiler::CompiledModel) -> (Vec<String>, Vec<String>) {
    let g = &m.graph;
    let mut nodes: Vec<String> = g
        .nodes_of(g.root())
        .map(|n| {
            let op = g.op(n).unwrap();
            let node = g.node(n).unwrap();
            let ins: Vec<String> = (0..node.in_data_count())
                .map(|i| {
                    node.peer_of_input(i)
                        .map_or("-".into(), |p| g.name_of(p.node).to_string())
                })
                .collect();
            format!(
                "{} {} {} <- {}",
                op.name(),
                op.op_type(),
                m.placement.engine(n).unwrap_or("?"),
                ins.join(",")
            )
        })
        .collect();
    nodes.sort();
    let outs = g
        .output_nodes(g.root())
        .iter()
        .map(|&(n, i)| format!("{}:{i}", g.name_of(n)))
        .collect();
    (nodes, outs)
}

#[test]
fn a_composite_optimizer_in_place_gives_what_moved_partitions_give() {
    // Two fused partitions (a cpu Sort between them), Relus that are graph outputs and Relus
    // read across partitions.
    let model = || {
        graph(&[
            ("x", "Data", &[]),
            ("r1", "Relu", &["x"]),
            ("mm", "MatMul", &["r1", "x"]),
            ("r2", "Relu", &["mm"]),
            ("s", "Sort", &["r2"]),
            ("r3", "Relu", &["s"]),
            ("mm2", "MatMul", &["r3", "r1"]),
            ("r4", "Relu", &["mm2"]),
            ("out", "NetOutput", &["r4", "r1", "r2"]),
        ])
    };
    let with_outputs = |mut g: ComputeGraph| {
        let outs = ["r4", "r1", "r2"].map(|n| (node(&g, n), 0)).to_vec();
        g.set_output_nodes(g.root(), outs).unwrap();
        g
    };
    // A dump asks for the partition graphs, so the stage moves them; without one it runs in
    // place.
    let dir = std::env::temp_dir().join(format!("rge-in-place-dump-{}", std::process::id()));
    let moved = Pipeline::new(
        in_place_manager(),
        CompileOptions {
            dump_dir: Some(dir.clone()),
            ..Default::default()
        },
    )
    .compile(with_outputs(model()))
    .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let in_place = Pipeline::new(in_place_manager(), CompileOptions::default())
        .compile(with_outputs(model()))
        .unwrap();
    in_place.graph.verify().unwrap();
    let (nodes, outs) = shape_of(&in_place);
    assert_eq!(nodes, shape_of(&moved).0);
    assert!(
        nodes.contains(&"r1_f FusedRelu vector <- x".to_string()),
        "{nodes:?}"
    );
    // In place, the patches keep the output list (the moved path restores it by name, so the
    // outputs whose nodes were replaced leave it; NetOutput reads them either way).
    assert_eq!(outs, ["r4_f:0", "r1_f:0", "r2_f:0"]);
    assert_eq!(
        in_place
            .composite_partitions
            .iter()
            .map(|p| p.engine.as_str())
            .collect::<Vec<_>>(),
        moved
            .composite_partitions
            .iter()
            .map(|p| p.engine.as_str())
            .collect::<Vec<_>>()
    );
}
