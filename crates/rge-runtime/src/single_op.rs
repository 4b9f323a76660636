//! The single-op API (ACL's `aclopCompile` / `aclopExecute` counterpart): one op — type, input
//! descs, attributes, engine (the system's choice or a named one) — becomes a one-node graph
//! that goes through the compile pipeline and lowering like any graph; compiled ops are cached
//! by signature, so a second compile of the same op is a lookup.

use std::sync::Arc;

use rge_compiler::attr_names::SPECIFIED_ENGINE_NAME;
use rge_ir::{AttrMap, ComputeGraph, DataType, OpDesc, Shape, TensorDesc};
use rge_kernels::{DType, Value};

use crate::error::{RuntimeError, RuntimeResult};
use crate::model::Model;
use crate::session::Session;

/// One op to compile.
#[derive(Debug, Clone, Default)]
pub struct OpSpec {
    pub op_type: String,
    /// "" for the default ONNX domain.
    pub domain: String,
    /// Input descs (dtype and dims, -1 for unknown); `None` for an absent optional input.
    pub inputs: Vec<Option<(DType, Vec<i64>)>>,
    /// The number of outputs.
    pub outputs: usize,
    pub attrs: AttrMap,
    /// The engine to run on; `None`: the system chooses by cost.
    pub engine: Option<String>,
    /// The opset version of the op's domain (default: the newest).
    pub opset: Option<i64>,
}

impl OpSpec {
    /// An op of the default domain with `inputs` and `outputs` outputs.
    pub fn new(op_type: &str, inputs: Vec<Option<(DType, Vec<i64>)>>, outputs: usize) -> Self {
        OpSpec {
            op_type: op_type.to_string(),
            inputs,
            outputs,
            ..Self::default()
        }
    }

    /// The cache key.
    pub fn signature(&self) -> String {
        let mut attrs: Vec<String> = self
            .attrs
            .iter()
            .map(|(k, v)| format!("{k}={v:?}"))
            .collect();
        attrs.sort();
        format!(
            "{}|{}|{:?}|{}|{}|{:?}|{:?}",
            self.domain,
            self.op_type,
            self.inputs,
            self.outputs,
            attrs.join(";"),
            self.engine,
            self.opset
        )
    }

    fn graph(&self) -> RuntimeResult<ComputeGraph> {
        let bad = |e: rge_ir::IrError| RuntimeError::Other(format!("op {}: {e}", self.op_type));
        let mut g = ComputeGraph::new(format!("single_op_{}", self.op_type));
        let opset = self.opset.unwrap_or(21);
        if let Some(a) = g.graph_attrs_mut(g.root()) {
            a.set(format!("_onnx_opset_{}", self.domain), opset);
        }
        let mut op = OpDesc::new("op", self.op_type.as_str());
        let mut datas = Vec::new();
        for (i, inp) in self.inputs.iter().enumerate() {
            let desc = match inp {
                Some((dt, dims)) => {
                    TensorDesc::with_shape_dtype(Shape::from_slice(dims), dt.to_ir())
                }
                None => TensorDesc::with_shape_dtype(Shape::scalar(), DataType::Undefined),
            };
            op = op.with_input(&format!("x{i}"), desc.clone());
            if inp.is_some() {
                let mut d = OpDesc::new(format!("input{i}"), "Data")
                    .with_input("x", desc.clone())
                    .with_output("y", desc);
                d.attrs_mut().set("index", datas.len() as i64);
                datas.push((i, d));
            }
        }
        for j in 0..self.outputs {
            op = op.with_output(&format!("y{j}"), TensorDesc::default());
        }
        *op.attrs_mut() = self.attrs.clone();
        op.set_domain(self.domain.as_str());
        op.set_opset(Some(opset));
        if let Some(e) = &self.engine {
            op.attrs_mut().set(SPECIFIED_ENGINE_NAME, e.as_str());
        }
        let mut out = OpDesc::new("output", "NetOutput");
        for j in 0..self.outputs {
            out = out.with_input(&format!("y{j}"), TensorDesc::default());
        }
        let node = g.add_root_node(op).map_err(bad)?;
        for (i, d) in datas {
            let dn = g.add_root_node(d).map_err(bad)?;
            g.add_input_node(dn).map_err(bad)?;
            g.add_edge(dn, 0, node, i).map_err(bad)?;
        }
        let net = g.add_root_node(out).map_err(bad)?;
        for j in 0..self.outputs {
            g.add_edge(node, j, net, j).map_err(bad)?;
            g.add_output_node(node, j as u32).map_err(bad)?;
        }
        Ok(g)
    }
}

/// A compiled op.
#[derive(Debug)]
pub struct SingleOp {
    pub spec: OpSpec,
    pub model: Model,
}

impl SingleOp {
    /// Runs the op on `inputs` (one per present input).
    pub fn execute(&self, inputs: &[Value]) -> RuntimeResult<Vec<Value>> {
        self.model.run(inputs)
    }

    /// The engine the op was placed on.
    pub fn engine(&self) -> &str {
        self.model
            .program()
            .steps
            .first()
            .map_or("local", |s| &*s.engine)
    }
}

impl Session {
    /// Compiles one op, or returns the cached one with the same signature.
    pub fn compile_op(&self, spec: &OpSpec) -> RuntimeResult<Arc<SingleOp>> {
        let key = spec.signature();
        if let Some(op) = self
            .op_cache()
            .lock()
            .ok()
            .and_then(|c| c.get(&key).cloned())
        {
            return Ok(op);
        }
        let graph = spec.graph()?;
        let model = self.compile_graph(graph)?;
        let op = Arc::new(SingleOp {
            spec: spec.clone(),
            model,
        });
        if let Ok(mut c) = self.op_cache().lock() {
            c.insert(key, op.clone());
        }
        Ok(op)
    }

    /// Compiles (cached) and runs one op.
    pub fn execute_op(&self, spec: &OpSpec, inputs: &[Value]) -> RuntimeResult<Vec<Value>> {
        self.compile_op(spec)?.execute(inputs)
    }

    /// The number of ops in the single-op cache.
    pub fn cached_ops(&self) -> usize {
        self.op_cache().lock().map_or(0, |c| c.len())
    }
}
