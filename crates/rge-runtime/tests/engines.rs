//! Engines own their kernels: two engines with different kernels for one op, placement decides
//! which runs; a dtype an engine lacks falls to the next engine; an engine with its own memory
//! space gets transfers exactly at the crossings, and its kernels refuse host memory (so a
//! missing transfer fails); kernel definitions that contradict their prototypes are refused.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use rge_compiler::CompileOptions;
use rge_engine::{BasicEngine, EngineAttributes, KernelStore};
use rge_kernels::{
    DType, Kernel, KernelCtx, KernelDef, KernelError, KernelResult, KernelSet, MemSpace, PortDef,
    TypeSet,
};
use rge_runtime::memory::SpaceAllocator;
use rge_runtime::transfer::TRANSFER_OP;
use rge_runtime::{EngineSet, ExecutorKind, Profiler, RuntimeError, Session, SessionOptions};

/// A Relu that counts its runs (state captured by its definition's factory).
struct CountingRelu(Arc<AtomicUsize>);

impl Kernel for CountingRelu {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        self.0.fetch_add(1, Ordering::Relaxed);
        let a = ctx.input(0)?;
        let shape = a.shape().to_vec();
        let av: Vec<f32> = a.as_slice::<f32>()?.to_vec();
        let out = ctx.output::<f32>(0, &shape)?;
        for (o, x) in out.iter_mut().zip(av) {
            *o = x.max(0.0);
        }
        Ok(())
    }
}

fn fast_engine(runs: Arc<AtomicUsize>) -> BasicEngine {
    let mut set = KernelSet::new();
    set.add(
        KernelDef::new("dense.Relu", "Relu", move |_| {
            Ok(Box::new(CountingRelu(runs.clone())) as Box<dyn Kernel>)
        })
        .all_inputs(TypeSet::of(&[DType::Float]))
        .all_outputs(TypeSet::of(&[DType::Float])),
    );
    BasicEngine::standard("dense")
        .unwrap()
        .with_store(KernelStore::new("dense", "dense_kernels", 1, set))
}

fn relu_model() -> rge_formats::onnx_proto::ModelProto {
    model(
        graph(
            "relu",
            vec![
                node("Relu", "relu", &["x"], &["r"]),
                node("Add", "add", &["r", "x"], &["y"]),
            ],
            vec![vi("x", F32, Some(&[2, 3]))],
            vec![vi("y", F32, Some(&[2, 3]))],
            vec![],
        ),
        14,
    )
}

fn set_with(engine: BasicEngine, options: CompileOptions) -> Arc<EngineSet> {
    let mut b = EngineSet::builder(rge_ops::OpRegistry::builtin());
    b.standard_engines(&kernels()).unwrap();
    b.register(engine);
    b.options(options);
    b.build().unwrap()
}

#[test]
fn placement_decides_which_engines_kernel_runs() {
    let x = tensor(&[2, 3], vec![-1.0, 2.0, -3.0, 4.0, -5.0, 6.0]);
    let want = vec![-1.0, 4.0, -3.0, 8.0, -5.0, 12.0];
    for (exclude, engine, kernel) in [
        (vec![], "dense", "dense.Relu"),
        (vec!["dense".to_string()], "cpu", "cpu.Relu"),
    ] {
        let runs = Arc::new(AtomicUsize::new(0));
        let options = CompileOptions {
            exclude_engines: exclude,
            ..CompileOptions::default()
        };
        let set = set_with(fast_engine(runs.clone()), options);
        let s = Session::new(SessionOptions::with_engines(set)).unwrap();
        let m = s.compile_graph(to_graph(&relu_model())).unwrap();
        let p = Profiler::new();
        let out = m
            .run_with(std::slice::from_ref(&x), ExecutorKind::Sequential, Some(&p))
            .unwrap();
        assert_eq!(floats(&out[0]), want);
        let ev = p.events();
        let relu = ev.iter().find(|e| e.node == "relu").unwrap();
        assert_eq!(
            (relu.engine.as_str(), relu.kernel.as_str()),
            (engine, kernel)
        );
        assert_eq!(runs.load(Ordering::Relaxed), usize::from(engine == "dense"));
        let add = ev.iter().find(|e| e.node == "add").unwrap();
        assert_eq!(add.kernel, "cpu.Add");
    }
}

#[test]
fn a_dtype_the_engine_lacks_falls_to_the_next_engine() {
    let runs = Arc::new(AtomicUsize::new(0));
    let set = set_with(fast_engine(runs), CompileOptions::default());
    let mut m = relu_model();
    // Double: the dense engine's Relu takes FLOAT only.
    let g = m.graph.as_mut().unwrap();
    g.input[0] = vi("x", 11, Some(&[2, 3]));
    g.output[0] = vi("y", 11, Some(&[2, 3]));
    let compiled = set.compile(to_graph(&m)).unwrap();
    let graph = &compiled.graph;
    let relu = graph.find_node(graph.root(), "relu").unwrap();
    assert_eq!(graph.op(relu).unwrap().engine_name(), "cpu");
    let reason = compiled.placement.reason(graph, relu);
    assert!(reason.contains("input 0 has dtype DOUBLE"), "{reason}");
    assert!(reason.contains("accepts FLOAT"), "{reason}");
}

/// An allocator of a separate space that remembers its blocks, so kernels can tell its memory
/// from the host's.
#[derive(Default)]
struct AccelMemory {
    blocks: Mutex<Vec<(usize, usize)>>,
}

impl AccelMemory {
    fn owns(&self, p: *const u8, len: usize) -> bool {
        let a = p as usize;
        self.blocks
            .lock()
            .unwrap()
            .iter()
            .any(|&(s, n)| a >= s && a + len <= s + n)
    }
}

struct AccelAlloc(Arc<AccelMemory>);

impl SpaceAllocator for AccelAlloc {
    fn space(&self) -> MemSpace {
        MemSpace::new("accel")
    }
    fn alloc_arena(&self, bytes: usize) -> Vec<u128> {
        let v = vec![0u128; bytes.div_ceil(16).max(1)];
        self.0
            .blocks
            .lock()
            .unwrap()
            .push((v.as_ptr() as usize, v.len() * 16));
        v
    }
    fn free_arena(&self, arena: Vec<u128>) {
        let p = arena.as_ptr() as usize;
        self.0.blocks.lock().unwrap().retain(|b| b.0 != p);
    }
}

/// Relu or Add that refuses tensors outside the accel space.
struct AccelKernel {
    mem: Arc<AccelMemory>,
    add: bool,
}

impl Kernel for AccelKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let n_in = if self.add { 2 } else { 1 };
        let mut vals = Vec::new();
        for i in 0..n_in {
            let t = ctx.input(i)?;
            let b = t.bytes()?;
            if !self.mem.owns(b.as_ptr(), b.len()) {
                return Err(KernelError::invalid(format!(
                    "input {i} is not in accel memory"
                )));
            }
            vals.push((t.shape().to_vec(), t.as_slice::<f32>()?.to_vec()));
        }
        let shape = vals[0].0.clone();
        let out = ctx.output::<f32>(0, &shape)?;
        if !self.mem.owns(out.as_ptr().cast(), out.len() * 4) {
            return Err(KernelError::invalid("output 0 is not in accel memory"));
        }
        for (k, o) in out.iter_mut().enumerate() {
            *o = if self.add {
                vals[0].1[k] + vals[1].1[k]
            } else {
                vals[0].1[k].max(0.0)
            };
        }
        Ok(())
    }
}

fn accel_set(transfers: bool) -> Arc<EngineSet> {
    let mem = Arc::new(AccelMemory::default());
    let mut set = KernelSet::new();
    for (op, add) in [("Relu", false), ("Add", true)] {
        let m = mem.clone();
        set.add(
            KernelDef::new(format!("accel.{op}"), op, move |_| {
                Ok(Box::new(AccelKernel {
                    mem: m.clone(),
                    add,
                }) as Box<dyn Kernel>)
            })
            .inputs(vec![PortDef::types(TypeSet::of(&[DType::Float]))]),
        );
    }
    let mut attrs = EngineAttributes::new("accel", 1);
    attrs.mem_types = vec!["accel".into()];
    let engine =
        BasicEngine::new(attrs).with_store(KernelStore::new("accel", "accel_kernels", 1, set));
    let mut b = EngineSet::builder(rge_ops::OpRegistry::builtin());
    b.standard_engines(&kernels()).unwrap();
    b.register(engine);
    b.memory_space(Arc::new(AccelAlloc(mem)));
    if !transfers {
        b.without_transfer_stage();
    }
    b.build().unwrap()
}

/// r = Relu(x) on accel; m = Mul(r, s) on cpu (accel has no Mul); y = Add(m, r) on accel.
fn crossing_model() -> rge_formats::onnx_proto::ModelProto {
    model(
        graph(
            "cross",
            vec![
                node("Relu", "relu", &["x"], &["r"]),
                node("Mul", "mul", &["r", "s"], &["m"]),
                node("Add", "add", &["m", "r"], &["y"]),
            ],
            vec![vi("x", F32, Some(&[4]))],
            vec![vi("y", F32, Some(&[4]))],
            vec![f32_tensor("s", &[4], &[2.0, 2.0, 2.0, 2.0])],
        ),
        14,
    )
}

#[test]
fn transfers_appear_exactly_at_memory_space_crossings() {
    let s = Session::new(SessionOptions::with_engines(accel_set(true))).unwrap();
    let m = s.compile_graph(to_graph(&crossing_model())).unwrap();
    let g = m.graph();
    let mut transfers: Vec<(String, String)> = g
        .nodes_of(g.root())
        .filter(|&n| g.op(n).unwrap().op_type() == TRANSFER_OP)
        .map(|n| {
            let node = g.node(n).unwrap();
            let from = g.name_of(node.peer_of_input(0).unwrap().node).to_string();
            let to = g.name_of(node.peers_of_output(0)[0].node).to_string();
            (from, to)
        })
        .collect();
    transfers.sort();
    // x → relu (host → accel), relu → mul (accel → host), mul → add (host → accel),
    // add → the graph output (accel → host); none on relu → add (both accel).
    let names: Vec<(&str, &str)> = transfers
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    assert!(names.contains(&("x", "relu")), "{names:?}");
    assert!(names.contains(&("relu", "mul")), "{names:?}");
    assert!(names.contains(&("mul", "add")), "{names:?}");
    assert!(!names.contains(&("relu", "add")), "{names:?}");
    assert_eq!(m.program().spaces.len(), 1);
    let x = tensor(&[4], vec![-1.0, 2.0, -3.0, 4.0]);
    for exec in [ExecutorKind::Sequential, ExecutorKind::Parallel] {
        let out = m.run_with(std::slice::from_ref(&x), exec, None).unwrap();
        // relu = [0,2,0,4]; mul = [0,4,0,8]; add = [0,6,0,12]
        assert_eq!(floats(&out[0]), vec![0.0, 6.0, 0.0, 12.0]);
    }
}

#[test]
fn without_the_transfer_stage_accel_kernels_see_host_memory_and_fail() {
    let s = Session::new(SessionOptions::with_engines(accel_set(false))).unwrap();
    let m = s.compile_graph(to_graph(&crossing_model())).unwrap();
    let x = tensor(&[4], vec![-1.0, 2.0, -3.0, 4.0]);
    let e = m.run(std::slice::from_ref(&x)).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::Kernel { node, msg, .. } if node == "relu" && msg.contains("not in accel memory")),
        "{e}"
    );
}

#[test]
fn a_kernel_definition_contradicting_its_prototype_is_refused() {
    let mut set = KernelSet::new();
    // Relu never takes strings.
    set.add(
        KernelDef::new("bad.Relu", "Relu", |_| Err(KernelError::invalid("unused")))
            .all_inputs(TypeSet::of(&[DType::String])),
    );
    let engine = BasicEngine::standard("dense")
        .unwrap()
        .with_store(KernelStore::new("dense", "dense_kernels", 1, set));
    let mut b = EngineSet::builder(rge_ops::OpRegistry::builtin());
    b.standard_engines(&kernels()).unwrap();
    b.register(engine);
    let e = b.build().unwrap_err();
    assert!(
        matches!(&e, RuntimeError::KernelDef { engine, kernel, msg } if engine == "dense" && kernel == "bad.Relu" && msg.contains("STRING")),
        "{e}"
    );
    // An engine naming a memory space without an allocator.
    let mut attrs = EngineAttributes::new("accel", 1);
    attrs.mem_types = vec!["accel".into()];
    let mut b = EngineSet::builder(rge_ops::OpRegistry::builtin());
    b.register(BasicEngine::new(attrs));
    let e = b.build().unwrap_err().to_string();
    assert!(e.contains("`accel`") && e.contains("no allocator"), "{e}");
    // An option naming an unknown engine.
    let mut b = EngineSet::builder(rge_ops::OpRegistry::builtin());
    b.standard_engines(&kernels()).unwrap();
    b.options(CompileOptions {
        exclude_engines: vec!["nosuch".into()],
        ..CompileOptions::default()
    });
    let e = b.build().unwrap_err().to_string();
    assert!(e.contains("unknown engine `nosuch`"), "{e}");
}
