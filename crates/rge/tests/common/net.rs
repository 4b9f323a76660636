//! A small ONNX model builder for the graph-optimization tests, and a compile-and-run helper
//! that checks `--optimization all` against `none`.

#![allow(dead_code)]

use prost::Message;
use rge::engines::{engine_set, EngineArgs};
use rge_formats::onnx_proto::{
    attribute_proto::AttributeType, tensor_shape_proto, type_proto, AttributeProto, GraphProto,
    ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto,
    ValueInfoProto,
};
use rge_kernels::{Tensor, Value};
use rge_runtime::{Session, SessionOptions};

/// ONNX element types.
pub const F32: i32 = 1;
pub const F16: i32 = 10;
pub const F64: i32 = 11;
pub const I64: i32 = 7;

pub fn vi(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: elem,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| tensor_shape_proto::Dimension {
                            value: Some(tensor_shape_proto::dimension::Value::DimValue(d)),
                            ..Default::default()
                        })
                        .collect(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

pub fn a_int(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Int as i32,
        i: v,
        ..Default::default()
    }
}

pub fn a_ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Ints as i32,
        ints: v.to_vec(),
        ..Default::default()
    }
}

pub fn a_str(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::String as i32,
        s: v.as_bytes().to_vec().into(),
        ..Default::default()
    }
}

pub fn a_float(name: &str, v: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Float as i32,
        f: v,
        ..Default::default()
    }
}

/// A graph under construction.
#[derive(Default)]
pub struct Net {
    nodes: Vec<NodeProto>,
    inits: Vec<TensorProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    count: usize,
    pub opset: i64,
}

impl Net {
    pub fn new() -> Self {
        Net {
            opset: 17,
            ..Default::default()
        }
    }

    pub fn input(&mut self, name: &str, elem: i32, dims: &[i64]) -> String {
        self.inputs.push(vi(name, elem, dims));
        name.to_string()
    }

    pub fn output(&mut self, name: &str, elem: i32, dims: &[i64]) {
        self.outputs.push(vi(name, elem, dims));
    }

    fn fresh(&mut self, p: &str) -> String {
        self.count += 1;
        format!("{p}{}", self.count)
    }

    /// A node with one output (named `out`, or fresh when empty); returns the output.
    pub fn op(&mut self, op: &str, ins: &[&str], attrs: Vec<AttributeProto>) -> String {
        let out = self.fresh(&op.to_lowercase());
        self.op_to(op, ins, &out, attrs);
        out
    }

    /// A node writing `out`.
    pub fn op_to(&mut self, op: &str, ins: &[&str], out: &str, attrs: Vec<AttributeProto>) {
        let name = self.fresh("n");
        self.nodes.push(NodeProto {
            op_type: op.into(),
            name,
            input: ins.iter().map(|s| s.to_string()).collect(),
            output: vec![out.to_string()],
            attribute: attrs,
            ..Default::default()
        });
    }

    /// A node writing several outputs.
    pub fn op_outs(&mut self, op: &str, ins: &[&str], outs: &[&str], attrs: Vec<AttributeProto>) {
        let name = self.fresh("n");
        self.nodes.push(NodeProto {
            op_type: op.into(),
            name,
            input: ins.iter().map(|s| s.to_string()).collect(),
            output: outs.iter().map(|s| s.to_string()).collect(),
            attribute: attrs,
            ..Default::default()
        });
    }

    /// A node of another domain writing several outputs.
    pub fn op_in_domain(
        &mut self,
        domain: &str,
        op: &str,
        ins: &[&str],
        outs: &[&str],
        attrs: Vec<AttributeProto>,
    ) {
        self.op_outs(op, ins, outs, attrs);
        if let Some(n) = self.nodes.last_mut() {
            n.domain = domain.into();
        }
    }

    /// A float initializer of `dims` with deterministic values in [-0.5, 0.5).
    pub fn weight(&mut self, dims: &[i64], seed: u32) -> String {
        let n: i64 = dims.iter().product();
        let name = self.fresh("w");
        self.inits.push(TensorProto {
            name: name.clone(),
            dims: dims.to_vec(),
            data_type: F32,
            float_data: (0..n)
                .map(|i| {
                    ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 1000.0
                        - 0.5
                })
                .collect(),
            ..Default::default()
        });
        name
    }

    /// A float scalar initializer.
    pub fn scalar(&mut self, v: f32) -> String {
        let name = self.fresh("c");
        self.inits.push(TensorProto {
            name: name.clone(),
            data_type: F32,
            float_data: vec![v],
            ..Default::default()
        });
        name
    }

    /// A double scalar initializer.
    pub fn scalar_f64(&mut self, v: f64) -> String {
        let name = self.fresh("c");
        self.inits.push(TensorProto {
            name: name.clone(),
            data_type: F64,
            double_data: vec![v],
            ..Default::default()
        });
        name
    }

    /// A 1-D float initializer.
    pub fn floats(&mut self, v: &[f32]) -> String {
        let name = self.fresh("f");
        self.inits.push(TensorProto {
            name: name.clone(),
            dims: vec![v.len() as i64],
            data_type: F32,
            float_data: v.to_vec(),
            ..Default::default()
        });
        name
    }

    /// An int64 initializer.
    pub fn ints(&mut self, v: &[i64]) -> String {
        let name = self.fresh("i");
        self.inits.push(TensorProto {
            name: name.clone(),
            dims: vec![v.len() as i64],
            data_type: I64,
            int64_data: v.to_vec(),
            ..Default::default()
        });
        name
    }

    /// A bool initializer of `dims`.
    pub fn bools(&mut self, dims: &[i64], v: &[bool]) -> String {
        let name = self.fresh("b");
        self.inits.push(TensorProto {
            name: name.clone(),
            dims: dims.to_vec(),
            data_type: 9,
            int32_data: v.iter().map(|&b| i32::from(b)).collect(),
            ..Default::default()
        });
        name
    }

    pub fn model(&self) -> ModelProto {
        ModelProto {
            ir_version: 8,
            opset_import: vec![OperatorSetIdProto {
                domain: String::new(),
                version: self.opset,
            }],
            graph: Some(GraphProto {
                name: "g".into(),
                node: self.nodes.clone(),
                input: self.inputs.clone(),
                output: self.outputs.clone(),
                initializer: self.inits.clone(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

pub fn graph_of(m: &ModelProto) -> rge_ir::ComputeGraph {
    rge_formats::onnx::import_bytes(bytes::Bytes::from(m.encode_to_vec()), "t.onnx")
        .unwrap()
        .graph
}

/// Deterministic inputs in [-2, 2) of the model's input shapes (f32).
pub fn inputs_of(m: &ModelProto) -> Vec<Value> {
    let g = m.graph.as_ref().unwrap();
    g.input
        .iter()
        .enumerate()
        .map(|(k, vi)| {
            let Some(type_proto::Value::TensorType(t)) = vi.r#type.as_ref().unwrap().value.as_ref()
            else {
                panic!("not a tensor input")
            };
            let dims: Vec<usize> = t
                .shape
                .as_ref()
                .unwrap()
                .dim
                .iter()
                .map(|d| match d.value {
                    Some(tensor_shape_proto::dimension::Value::DimValue(v)) => v as usize,
                    _ => 1,
                })
                .collect();
            let n: usize = dims.iter().product();
            let v: Vec<f32> = (0..n)
                .map(|i| ((i * 37 + k * 11 + 5) % 101) as f32 / 25.0 - 2.0)
                .collect();
            match t.elem_type {
                F64 => Value::from(
                    Tensor::from_vec(&dims, v.iter().map(|&x| x as f64).collect::<Vec<_>>())
                        .unwrap(),
                ),
                _ => Value::from(Tensor::from_vec(&dims, v).unwrap()),
            }
        })
        .collect()
}

/// What one compile gave: the root op types and the outputs (as f64).
pub struct Compiled {
    pub types: Vec<String>,
    /// Each node's engine, in the order of `types`.
    pub engines: Vec<String>,
    pub outputs: Vec<Vec<f64>>,
    pub reports: Vec<rge_compiler::optimize::PassReport>,
}

impl Compiled {
    /// The op types and engines of `g`'s root nodes, with the given outputs and reports.
    pub fn of_root(
        g: &rge_ir::ComputeGraph,
        outputs: Vec<Vec<f64>>,
        reports: Vec<rge_compiler::optimize::PassReport>,
    ) -> Compiled {
        let (types, engines) = g
            .nodes_of(g.root())
            .map(|n| {
                let op = g.op(n).unwrap();
                (op.op_type().to_string(), op.engine_name().to_string())
            })
            .unzip();
        Compiled {
            types,
            engines,
            outputs,
            reports,
        }
    }
    pub fn count(&self, op: &str) -> usize {
        self.types.iter().filter(|t| *t == op).count()
    }
    pub fn has(&self, op: &str) -> bool {
        self.count(op) > 0
    }
    /// The engines of the nodes of type `op`.
    pub fn engines_of(&self, op: &str) -> Vec<&str> {
        self.types
            .iter()
            .zip(&self.engines)
            .filter(|(t, _)| *t == op)
            .map(|(_, e)| e.as_str())
            .collect()
    }
    /// The rewrites pass `name` made.
    pub fn rewrites(&self, name: &str) -> usize {
        self.reports
            .iter()
            .filter(|r| r.name == name)
            .map(|r| r.rewrites)
            .sum()
    }
}

pub fn to_f64(v: &Value) -> Vec<f64> {
    let t = v.as_tensor().unwrap();
    if let Ok(s) = t.as_slice::<f32>() {
        return s.iter().map(|&x| x as f64).collect();
    }
    if let Ok(s) = t.as_slice::<f64>() {
        return s.to_vec();
    }
    t.view()
        .to_i64_vec()
        .unwrap()
        .iter()
        .map(|&x| x as f64)
        .collect()
}

/// Compiles and runs `m` with `args`.
pub fn compile(m: &ModelProto, args: EngineArgs) -> Compiled {
    let set = engine_set(&args).unwrap();
    let s = Session::new(SessionOptions::with_engines(set.clone())).unwrap();
    let reports = set.pipeline().compile(graph_of(m)).unwrap().optimizations;
    let model = s.compile_graph(graph_of(m)).unwrap();
    let g = model.graph();
    let outputs = model
        .run(&inputs_of(m))
        .unwrap()
        .iter()
        .map(to_f64)
        .collect();
    Compiled::of_root(g, outputs, reports)
}

pub fn level(l: &str) -> EngineArgs {
    EngineArgs {
        optimization: Some(l.to_string()),
        ..no_fused()
    }
}

/// The default engines but `fused`, whose elementwise trees would hide which nodes the graph
/// passes left.
pub fn no_fused() -> EngineArgs {
    EngineArgs {
        exclude_engines: Some("fused".into()),
        ..EngineArgs::default()
    }
}

/// Compiles `m` at level `none` and `all` (plus `extra` arguments); checks the outputs
/// agree within 1e-5 relative; returns the `all` compile.
pub fn both_with(m: &ModelProto, extra: EngineArgs) -> Compiled {
    let none = compile(
        m,
        EngineArgs {
            optimization: Some("none".into()),
            ..extra.clone()
        },
    );
    let all = compile(
        m,
        EngineArgs {
            optimization: Some("all".into()),
            ..extra
        },
    );
    assert_eq!(none.outputs.len(), all.outputs.len());
    for (a, b) in all.outputs.iter().zip(&none.outputs) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x - y).abs() <= 1e-5 * y.abs().max(1.0) || (x.is_nan() && y.is_nan()),
                "optimized {x} vs unoptimized {y}"
            );
        }
    }
    all
}

/// [`both_with`] with [`no_fused`] engines.
pub fn both(m: &ModelProto) -> Compiled {
    both_with(m, no_fused())
}
