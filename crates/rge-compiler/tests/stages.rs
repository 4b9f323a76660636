//! Rewrites through patches inside the pipeline, and the pipeline's named stages: a fusing
//! optimizer whose result verifies clean, a bad patch named by stage, engine and node, passes
//! inserted after a stage by name, and the debug verifier after every stage.

mod common;

use std::sync::Arc;

use common::*;
use rge_compiler::{CompileError, CompileOptions, EngineManager, FnPass, Pipeline};
use rge_engine::{BasicEngine, EngineResult, GraphOptimizer, GraphRewriter, TableStore};
use rge_ir::{ComputeGraph, GraphPatch, NodeId, OpDesc, Outlet, PatchNode};

/// What the dense engine's fused-stage optimizer does.
#[derive(Clone, Copy)]
enum Fuse {
    /// MatMul + Add → MatMulAdd, by one patch.
    MatMulAdd,
    /// Removes the MatMul without saying what replaces its output.
    Unmapped,
    /// Tries to remove the partition's PlaceHolder.
    Boundary,
}

struct Fuser(Fuse);

fn find(g: &ComputeGraph, ty: &str) -> Option<NodeId> {
    g.nodes_of(g.root())
        .find(|&n| g.op(n).unwrap().op_type() == ty)
}

impl GraphOptimizer for Fuser {
    fn optimize_fused_graph(&self, rw: &mut GraphRewriter<'_>) -> EngineResult<()> {
        let g = rw.graph();
        let Some(mm) = find(g, "MatMul") else {
            return Ok(());
        };
        let mut p = GraphPatch::new();
        match self.0 {
            Fuse::MatMulAdd => {
                let node = g.node(mm).unwrap();
                let add = node.peers_of_output(0)[0].node;
                let inputs: Vec<_> = node.input_peers().iter().flatten().copied().collect();
                let other = g.node(add).unwrap().peer_of_input(1).unwrap();
                p.remove(mm).remove(add);
                let f = p.add_node(
                    OpDesc::new("mm_add", "MatMulAdd")
                        .with_input("a", desc())
                        .with_input("b", desc())
                        .with_input("c", desc())
                        .with_output("y", desc()),
                );
                for (i, src) in inputs.iter().chain([&other]).enumerate() {
                    p.connect(Outlet::old(src.node, src.index as usize), f, i);
                }
                p.shunt(add, 0, Outlet::new_node(f, 0))
                    .carry_control_to(PatchNode::New(f));
            }
            Fuse::Unmapped => {
                p.remove(mm);
            }
            Fuse::Boundary => {
                let ph = find(g, "PlaceHolder").unwrap();
                p.remove(ph).drop_control();
            }
        }
        rw.apply(p)?;
        Ok(())
    }
}

fn fusing_manager(fuse: Fuse) -> Arc<EngineManager> {
    let store = |name: &str, ops: &[&str]| {
        let cost = rge_engine::standard_engine(name).unwrap().compute_cost;
        TableStore::new(name, format!("{name}_store"), cost).with_ops(ops.iter().copied())
    };
    let mut b = EngineManager::builder();
    b.register(
        BasicEngine::standard("dense")
            .unwrap()
            .with_store(store("dense", &["MatMul", "Add", "MatMulAdd"]))
            .with_optimizer(Fuser(fuse)),
    )
    .register(
        BasicEngine::standard("local")
            .unwrap()
            .with_store(store("local", &["Data", "NetOutput", "Identity"])),
    );
    b.build().unwrap()
}

fn mm_add_graph() -> ComputeGraph {
    graph(&[
        ("x", "Data", &[]),
        ("y", "Data", &[]),
        ("mm", "MatMul", &["x", "y"]),
        ("add", "Add", &["mm", "x"]),
        ("out", "NetOutput", &["add"]),
    ])
}

#[test]
fn an_optimizer_fuses_through_a_patch() {
    let model = Pipeline::new(fusing_manager(Fuse::MatMulAdd), CompileOptions::default())
        .compile(mm_add_graph())
        .unwrap();
    model.graph.verify().unwrap();
    assert!(model.find("mm").is_none() && model.find("add").is_none());
    let f = model.find("mm_add").unwrap();
    assert_eq!(model.placement.engine(f), Some("dense"));
    let out = model.find("out").unwrap();
    let src = model.graph.node(out).unwrap().peer_of_input(0).unwrap();
    assert_eq!(model.graph.name_of(src.node), "mm_add");
    let ins: Vec<&str> = model
        .graph
        .node(f)
        .unwrap()
        .input_peers()
        .iter()
        .map(|p| model.graph.name_of(p.unwrap().node))
        .collect();
    assert_eq!(ins, ["x", "y", "x"]);
}

#[test]
fn a_bad_patch_names_stage_engine_and_node() {
    for (fuse, message) in [
        (
            Fuse::Unmapped,
            "stage `optimize_fused_atomic`: engine `dense`: output 0 of removed node `mm` feeds `add:0`",
        ),
        (
            Fuse::Boundary,
            "stage `optimize_fused_atomic`: engine `dense`: node `",
        ),
    ] {
        let e = Pipeline::new(fusing_manager(fuse), CompileOptions::default())
            .compile(mm_add_graph())
            .unwrap_err();
        assert!(
            matches!(&e, CompileError::Stage { stage, .. } if stage == "optimize_fused_atomic"),
            "{e}"
        );
        assert!(e.to_string().starts_with(message), "{e}");
        if let Fuse::Boundary = fuse {
            assert!(e.to_string().contains("(PlaceHolder) is protected"), "{e}");
        }
    }
}

#[test]
fn a_pass_inserted_after_place_runs_there_and_its_nodes_are_placed() {
    let pass = FnPass::new(
        "tap_x",
        |g: &mut ComputeGraph, _: &CompileOptions| -> Result<(), String> {
            let root = g.root();
            let x = g.find_node(root, "x").ok_or("no x")?;
            let t = g
                .add_node(
                    root,
                    OpDesc::new("x_tap", "Identity")
                        .with_input("", desc())
                        .with_output("", desc()),
                )
                .map_err(|e| e.to_string())?;
            g.add_edge(x, 0, t, 0).map_err(|e| e.to_string())
        },
    );
    let model = Pipeline::new(fusing_manager(Fuse::MatMulAdd), CompileOptions::default())
        .with_stage_after("place", Box::new(pass))
        .compile(mm_add_graph())
        .unwrap();
    let names: Vec<&str> = model.stage_times.iter().map(|t| t.name.as_str()).collect();
    let at = names.iter().position(|&n| n == "tap_x").unwrap();
    assert_eq!(names[at - 1], "place");
    assert_eq!(names[at + 1], "reassign");
    let tap = model.find("x_tap").unwrap();
    assert_eq!(model.placement.engine(tap), Some("local"));
    model.graph.verify().unwrap();
}

#[test]
fn inserted_passes_are_checked() {
    let noop = || {
        Box::new(FnPass::new(
            "late",
            |_: &mut ComputeGraph, _: &CompileOptions| Ok(()),
        ))
    };
    let e = Pipeline::new(fusing_manager(Fuse::MatMulAdd), CompileOptions::default())
        .with_stage_after("optimize_fused_atomic", noop())
        .compile(mm_add_graph())
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("stage `late`: cannot insert it after `optimize_fused_atomic`"),
        "{e}"
    );
    let e = Pipeline::new(fusing_manager(Fuse::MatMulAdd), CompileOptions::default())
        .with_stage_after("no_such_stage", noop())
        .compile(mm_add_graph())
        .unwrap_err();
    assert!(
        e.to_string().contains("no stage named `no_such_stage`"),
        "{e}"
    );
    // After compile_ops the nodes are fixed.
    let adder = FnPass::new(
        "adder",
        |g: &mut ComputeGraph, _: &CompileOptions| -> Result<(), String> {
            g.add_root_node(OpDesc::new("late_node", "NoOp"))
                .map(|_| ())
                .map_err(|e| e.to_string())
        },
    );
    let e = Pipeline::new(fusing_manager(Fuse::MatMulAdd), CompileOptions::default())
        .with_stage_after("compile_ops", Box::new(adder))
        .compile(mm_add_graph())
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("stage `adder`: it added or removed nodes after `compile_ops`"),
        "{e}"
    );
}

#[test]
fn verbose_compiles_log_every_stage() {
    // The lines go to stderr (see `stage_log_line`); here only that a verbose compile works.
    let o = CompileOptions {
        verbose: true,
        ..Default::default()
    };
    let model = Pipeline::new(fusing_manager(Fuse::MatMulAdd), o)
        .compile(mm_add_graph())
        .unwrap();
    assert!(model.stage_times.iter().any(|t| t.name == "streams"));
    let line = rge_compiler::stage_log_line("streams", std::time::Duration::from_millis(2));
    assert!(line.starts_with("rge: stage streams 2.000 ms"), "{line}");
    if cfg!(target_os = "linux") {
        // Then the process's memory: resident, and the peak, which is never below it.
        let mib: Vec<f64> = line
            .split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .skip(2)
            .map(|w| w.parse().unwrap())
            .collect();
        assert!(
            line.contains(" MiB, peak ") && mib.len() == 2 && mib[0] <= mib[1],
            "{line}"
        );
    }
}

/// In debug builds the verifier runs after every stage and names the one that broke the graph.
#[cfg(debug_assertions)]
#[test]
fn the_verifier_names_the_stage_that_broke_the_graph() {
    let breaker = FnPass::new(
        "breaker",
        |g: &mut ComputeGraph, _: &CompileOptions| -> Result<(), String> {
            let root = g.root();
            let x = g.find_node(root, "x").ok_or("no x")?;
            // An output index x does not have: the verifier's to find.
            g.set_output_nodes(root, vec![(x, 7)])
                .map_err(|e| e.to_string())
        },
    );
    let e = Pipeline::new(fusing_manager(Fuse::MatMulAdd), CompileOptions::default())
        .with_stage_after("optimize_original", Box::new(breaker))
        .compile(mm_add_graph())
        .unwrap_err();
    assert!(
        matches!(&e, CompileError::Stage { stage, .. } if stage == "breaker"),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("the graph verifier failed after this stage"),
        "{e}"
    );
}
