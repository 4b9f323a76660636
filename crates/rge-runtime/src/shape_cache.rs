//! Shape-specialized models: a graph whose inputs have unknown dims is compiled for the input
//! shapes it is run with — inference, the memory plan and the kernels then see static shapes —
//! and compiled again when the shapes change. The compiled models are kept in a small LRU cache
//! keyed by the input shapes (8 entries unless told otherwise).
//!
//! ```ignore
//! let m = session.compile_graph_for_shapes(graph)?;   // compiles nothing yet
//! let a = m.run(&[x_batch2])?;                        // compiles for batch 2, runs
//! let b = m.run(&[x_batch3])?;                        // compiles for batch 3, runs
//! let c = m.run(&[x_batch2])?;                        // cached: runs the batch-2 model
//! assert_eq!(m.compilations(), 2);
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rge_ir::{attr_names, op_types, ComputeGraph, NodeId, Shape};
use rge_kernels::{DType, Value, ValueRef};

use crate::error::{RuntimeError, RuntimeResult};
use crate::exec::ExecutorKind;
use crate::lower::is_tensor_desc;
use crate::model::Model;
use crate::profile::Profiler;
use crate::program::{InputSource, InputSpec};
use crate::session::Session;

/// Compiled models a [`ShapeSpecializedModel`] keeps unless told otherwise.
pub const DEFAULT_SHAPE_CACHE_CAPACITY: usize = 8;

/// The cache key: every input's dims (`None` for an input that is not a tensor).
pub type ShapeKey = Vec<Option<Vec<usize>>>;

/// True when `spec` is a tensor input with an unknown rank or an unknown dim.
pub fn is_dynamic_input(spec: &InputSpec) -> bool {
    spec.tensor && spec.dims.as_ref().is_none_or(|d| d.iter().any(|&x| x < 0))
}

/// The names of `model`'s inputs with unknown dims (empty: every input is static).
pub fn dynamic_inputs(model: &Model) -> Vec<String> {
    model
        .inputs()
        .into_iter()
        .filter(|s| is_dynamic_input(s))
        .map(|s| s.name.clone())
        .collect()
}

/// The root graph's inputs (Data nodes), in the order a run takes them, with their nodes.
pub fn graph_inputs(graph: &ComputeGraph) -> Vec<(NodeId, InputSpec)> {
    let mut v: Vec<(i64, NodeId, InputSpec)> = Vec::new();
    for n in graph.nodes_of(graph.root()) {
        let Some(op) = graph.op(n) else { continue };
        if !op_types::is_data(op.op_type()) {
            continue;
        }
        let index = op
            .attrs()
            .get_int(attr_names::DATA_INDEX)
            .ok()
            .flatten()
            .unwrap_or(v.len() as i64);
        let d = op.output(0).or_else(|| op.input(0));
        let (dtype, dims, tensor) = match d {
            Some(d) => {
                let tensor = is_tensor_desc(d);
                let dims =
                    (tensor && !d.shape().is_unknown_rank()).then(|| d.shape().dims().to_vec());
                (DType::from_desc(d).filter(|_| tensor), dims, tensor)
            }
            None => (None, None, false),
        };
        v.push((
            index,
            n,
            InputSpec {
                name: op.name().to_string(),
                source: InputSource::Formal(index.max(0) as usize),
                dtype,
                dims,
                tensor,
            },
        ));
    }
    v.sort_by_key(|(i, _, _)| *i);
    v.into_iter().map(|(_, n, s)| (n, s)).collect()
}

fn dims_text(d: &[usize]) -> String {
    let v: Vec<String> = d.iter().map(|x| x.to_string()).collect();
    format!("[{}]", v.join(","))
}

/// A graph compiled per input shapes: [`ShapeSpecializedModel::run`] compiles it (the full
/// compile pipeline, lowering and memory plan, static throughout) the first time it sees a
/// set of input shapes, and reuses that model while the shapes recur. `Send + Sync`: runs from
/// many threads share the cache.
pub struct ShapeSpecializedModel {
    session: Session,
    graph: ComputeGraph,
    inputs: Vec<(NodeId, InputSpec)>,
    capacity: usize,
    /// Most recently used first.
    cache: Mutex<VecDeque<(ShapeKey, Arc<Model>)>>,
    compilations: AtomicUsize,
}

impl std::fmt::Debug for ShapeSpecializedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShapeSpecializedModel")
            .field("graph", &self.graph.name())
            .field("capacity", &self.capacity)
            .field("compilations", &self.compilations())
            .finish()
    }
}

impl Session {
    /// A model of `graph` compiled for the input shapes of each run (see
    /// [`ShapeSpecializedModel`]); nothing is compiled until the first run. The models share
    /// this session's engines, options and thread pool.
    pub fn compile_graph_for_shapes(
        &self,
        graph: ComputeGraph,
    ) -> RuntimeResult<ShapeSpecializedModel> {
        ShapeSpecializedModel::new(self.share(), graph, DEFAULT_SHAPE_CACHE_CAPACITY)
    }
}

impl ShapeSpecializedModel {
    /// A model of `graph` compiled by `session`, keeping up to `capacity` compiled models.
    pub fn new(session: Session, graph: ComputeGraph, capacity: usize) -> RuntimeResult<Self> {
        if capacity == 0 {
            return Err(RuntimeError::option(
                "shape cache capacity",
                "must be at least 1",
            ));
        }
        let inputs = graph_inputs(&graph);
        Ok(ShapeSpecializedModel {
            session,
            graph,
            inputs,
            capacity,
            cache: Mutex::new(VecDeque::new()),
            compilations: AtomicUsize::new(0),
        })
    }

    /// The same model keeping up to `capacity` compiled models (at least 1).
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// The graph as given (its inputs' dims as declared).
    pub fn graph(&self) -> &ComputeGraph {
        &self.graph
    }

    /// The inputs as declared (-1 for an unknown dim), in the order a run takes them.
    pub fn inputs(&self) -> Vec<&InputSpec> {
        self.inputs.iter().map(|(_, s)| s).collect()
    }

    /// How many compiled models the cache keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many times the graph was compiled so far.
    pub fn compilations(&self) -> usize {
        self.compilations.load(Ordering::Relaxed)
    }

    /// The input shapes with a compiled model in the cache, most recently used first.
    pub fn cached_shapes(&self) -> Vec<ShapeKey> {
        self.cache
            .lock()
            .map(|c| c.iter().map(|(k, _)| k.clone()).collect())
            .unwrap_or_default()
    }

    /// The key of `inputs`, checked against the declared inputs: the count, each tensor's
    /// rank and its static dims.
    pub fn key_of(&self, inputs: &[Value]) -> RuntimeResult<ShapeKey> {
        let refs: Vec<ValueRef<'_>> = inputs.iter().map(Value::as_ref).collect();
        self.key_of_refs(&refs)
    }

    /// [`ShapeSpecializedModel::key_of`] over borrowed inputs.
    pub fn key_of_refs(&self, inputs: &[ValueRef<'_>]) -> RuntimeResult<ShapeKey> {
        if inputs.len() != self.inputs.len() {
            return Err(RuntimeError::input(
                format!("#{}", inputs.len().min(self.inputs.len())),
                format!(
                    "{} inputs given, the graph has {}",
                    inputs.len(),
                    self.inputs.len()
                ),
            ));
        }
        let mut key = Vec::with_capacity(inputs.len());
        for ((_, spec), v) in self.inputs.iter().zip(inputs) {
            let dims = match v {
                ValueRef::Tensor(t) if spec.tensor => Some(t.shape().to_vec()),
                _ => None,
            };
            if let (Some(got), Some(declared)) = (&dims, &spec.dims) {
                let fits = got.len() == declared.len()
                    && got
                        .iter()
                        .zip(declared)
                        .all(|(&g, &d)| d < 0 || g as i64 == d);
                if !fits {
                    let decl: Vec<String> = declared
                        .iter()
                        .map(|&d| if d < 0 { "?".into() } else { d.to_string() })
                        .collect();
                    return Err(RuntimeError::input(
                        &spec.name,
                        format!(
                            "shape {} does not fit the declared [{}]",
                            dims_text(got),
                            decl.join(",")
                        ),
                    ));
                }
            }
            key.push(dims);
        }
        Ok(key)
    }

    /// The model compiled for the shapes of `inputs` (compiled now when not cached).
    pub fn model_for(&self, inputs: &[Value]) -> RuntimeResult<Arc<Model>> {
        let key = self.key_of(inputs)?;
        self.model_for_key(&key)
    }

    /// The model compiled for the input shapes `key` (compiled now when not cached).
    pub fn model_for_key(&self, key: &ShapeKey) -> RuntimeResult<Arc<Model>> {
        if let Some(m) = self.lookup(key) {
            return Ok(m);
        }
        // Compile without the lock: runs of cached shapes go on meanwhile.
        let model = Arc::new(self.compile_for(key)?);
        self.compilations.fetch_add(1, Ordering::Relaxed);
        let mut cache = self
            .cache
            .lock()
            .map_err(|_| RuntimeError::Other("shape cache poisoned".into()))?;
        if let Some(i) = cache.iter().position(|(k, _)| k == key) {
            // Another thread compiled the same shapes meanwhile: keep the first.
            let e = cache.remove(i).expect("present");
            let m = e.1.clone();
            cache.push_front(e);
            return Ok(m);
        }
        cache.push_front((key.clone(), model.clone()));
        cache.truncate(self.capacity);
        Ok(model)
    }

    fn lookup(&self, key: &ShapeKey) -> Option<Arc<Model>> {
        let mut cache = self.cache.lock().ok()?;
        let i = cache.iter().position(|(k, _)| k == key)?;
        let e = cache.remove(i)?;
        let m = e.1.clone();
        cache.push_front(e);
        Some(m)
    }

    /// The graph with its inputs fixed to `key`, compiled.
    fn compile_for(&self, key: &ShapeKey) -> RuntimeResult<Model> {
        let mut g = self.graph.clone();
        let mut shown = Vec::new();
        for ((n, spec), dims) in self.inputs.iter().zip(key) {
            let Some(dims) = dims else { continue };
            shown.push(format!("{}={}", spec.name, dims_text(dims)));
            let shape = Shape::new(dims.iter().map(|&d| d as i64));
            let op = g
                .op_mut(*n)
                .ok_or_else(|| RuntimeError::input(&spec.name, "its Data node is gone"))?;
            if let Some(d) = op.input_mut(0) {
                d.set_shape(shape.clone());
            }
            if let Some(d) = op.output_mut(0) {
                d.set_shape(shape);
            }
        }
        self.session.compile_graph(g).map_err(|e| {
            RuntimeError::Other(format!(
                "compiling for input shapes {}: {e}",
                shown.join(" ")
            ))
        })
    }

    /// Runs with inputs in order: compiles for their shapes when needed, then runs that model
    /// with its executor.
    pub fn run(&self, inputs: &[Value]) -> RuntimeResult<Vec<Value>> {
        self.model_for(inputs)?.run(inputs)
    }

    /// [`ShapeSpecializedModel::run`] with `executor`, timing each step into `profile`.
    pub fn run_with(
        &self,
        inputs: &[Value],
        executor: ExecutorKind,
        profile: Option<&Profiler>,
    ) -> RuntimeResult<Vec<Value>> {
        self.model_for(inputs)?.run_with(inputs, executor, profile)
    }

    /// [`ShapeSpecializedModel::run_with`] over borrowed inputs (nothing is copied).
    pub fn run_refs(
        &self,
        inputs: &[ValueRef<'_>],
        executor: ExecutorKind,
        profile: Option<&Profiler>,
    ) -> RuntimeResult<Vec<Value>> {
        let key = self.key_of_refs(inputs)?;
        self.model_for_key(&key)?
            .run_refs(inputs, executor, profile)
    }

    /// Runs with inputs by name (every input must be given once).
    pub fn run_named(&self, inputs: &[(String, Value)]) -> RuntimeResult<Vec<Value>> {
        let ordered = self.order_inputs(inputs)?;
        self.run(&ordered)
    }

    /// Puts named inputs in the graph's input order; errors name unknown or missing inputs.
    pub fn order_inputs(&self, inputs: &[(String, Value)]) -> RuntimeResult<Vec<Value>> {
        for (name, _) in inputs {
            if !self.inputs.iter().any(|(_, s)| &s.name == name) {
                let known: Vec<&str> = self.inputs.iter().map(|(_, s)| s.name.as_str()).collect();
                return Err(RuntimeError::input(
                    name,
                    format!("the graph has no such input (inputs: {})", known.join(", ")),
                ));
            }
        }
        self.inputs
            .iter()
            .map(|(_, s)| {
                inputs
                    .iter()
                    .find(|(n, _)| n == &s.name)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| RuntimeError::input(&s.name, "missing"))
            })
            .collect()
    }
}
