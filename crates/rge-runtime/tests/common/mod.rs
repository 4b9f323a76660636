//! Test helpers: a few f32 kernels (the kernel families are other crates), small ONNX model
//! builders, and fixture paths.
#![allow(dead_code)]

pub mod ge_graphs;

use std::path::PathBuf;

use bytes::Bytes;
use prost::Message;
use rge_formats::onnx_proto::attribute_proto::AttributeType;
use rge_formats::onnx_proto::tensor_shape_proto::{dimension, Dimension};
use rge_formats::onnx_proto::{
    type_proto, AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};
use rge_ir::ComputeGraph;
use rge_kernels::{
    Kernel, KernelCtx, KernelError, KernelInit, KernelRegistry, KernelRegistryBuilder,
    KernelResult, Tensor, TensorRef,
};

// ---- kernels ----

#[derive(Debug)]
struct Binary(fn(f32, f32) -> f32);

fn out_shape<'a>(a: TensorRef<'a>, b: TensorRef<'a>) -> KernelResult<&'a [usize]> {
    let same = a.rank() == b.rank() && a.shape().iter().zip(b.shape()).all(|(x, y)| x == y);
    if same || b.len() == 1 && a.rank() >= b.rank() {
        Ok(a.shape())
    } else if a.len() == 1 && b.rank() >= a.rank() {
        Ok(b.shape())
    } else {
        Err(KernelError::invalid(format!(
            "shapes {:?} and {:?} do not broadcast here",
            a.shape(),
            b.shape()
        )))
    }
}

impl Kernel for Binary {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (a, b) = (ctx.input(0)?, ctx.input(1)?);
        let shape = out_shape(a, b)?;
        let (av, bv) = (a.as_slice::<f32>()?, b.as_slice::<f32>()?);
        let out = ctx.output::<f32>(0, shape)?;
        let f = self.0;
        if av.len() == bv.len() {
            for i in 0..out.len() {
                out[i] = f(av[i], bv[i]);
            }
        } else if bv.len() == 1 {
            for i in 0..out.len() {
                out[i] = f(av[i], bv[0]);
            }
        } else {
            for i in 0..out.len() {
                out[i] = f(av[0], bv[i]);
            }
        }
        Ok(())
    }
}

#[derive(Debug)]
struct Relu;

impl Kernel for Relu {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let shape = a.shape().to_vec();
        let av: Vec<f32> = a.as_slice::<f32>()?.to_vec();
        let out = ctx.output::<f32>(0, &shape)?;
        for (o, x) in out.iter_mut().zip(av) {
            *o = x.max(0.0);
        }
        Ok(())
    }
    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

#[derive(Debug)]
struct MatMul;

impl Kernel for MatMul {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (a, b) = (ctx.input(0)?, ctx.input(1)?);
        let (&[m, k], &[k2, n]) = (a.shape(), b.shape()) else {
            return Err(KernelError::unsupported("2-D MatMul only"));
        };
        if k != k2 {
            return Err(KernelError::invalid("inner dims differ"));
        }
        let (av, bv) = (a.as_slice::<f32>()?, b.as_slice::<f32>()?);
        let out = ctx.output::<f32>(0, &[m, n])?;
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] = (0..k).map(|p| av[i * k + p] * bv[p * n + j]).sum();
            }
        }
        Ok(())
    }
}

#[derive(Debug)]
struct Clip {
    min: f32,
    max: f32,
}

impl Kernel for Clip {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let shape = a.shape().to_vec();
        let av = a.as_slice::<f32>()?;
        let out = ctx.output::<f32>(0, &shape)?;
        for (o, &x) in out.iter_mut().zip(av) {
            *o = x.clamp(self.min, self.max);
        }
        Ok(())
    }
}

/// Less (f32) → bool.
#[derive(Debug)]
struct Less;

impl Kernel for Less {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (a, b) = (ctx.input(0)?, ctx.input(1)?);
        let shape = out_shape(a, b)?;
        let (av, bv) = (a.to_f64_vec()?, b.to_f64_vec()?);
        let out = ctx.output::<bool>(0, shape)?;
        for (i, o) in out.iter_mut().enumerate() {
            let x = av[if av.len() == 1 { 0 } else { i }];
            let y = bv[if bv.len() == 1 { 0 } else { i }];
            *o = x < y;
        }
        Ok(())
    }
}

fn add(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Binary(|a, b| a + b)))
}
fn sub(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Binary(|a, b| a - b)))
}
fn mul(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Binary(|a, b| a * b)))
}
fn relu(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Relu))
}
fn matmul(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(MatMul))
}
fn less(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Less))
}
fn clip(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Clip {
        min: init.float_or("min", f32::MIN)?,
        max: init.float_or("max", f32::MAX)?,
    }))
}

/// Add, Sub, Mul, Relu, MatMul, Clip, Less (f32).
pub fn kernels() -> KernelRegistry {
    let mut b = KernelRegistryBuilder::new();
    b.register("", "Add", add).unwrap();
    b.register("", "Sub", sub).unwrap();
    b.register("", "Mul", mul).unwrap();
    b.register("", "Relu", relu).unwrap();
    b.register("", "MatMul", matmul).unwrap();
    b.register("", "Clip", clip).unwrap();
    b.register("", "Less", less).unwrap();
    b.build()
}

// ---- ONNX builders ----

pub const F32: i32 = 1;
pub const I64: i32 = 7;
pub const BOOL: i32 = 9;

pub fn tensor_type(elem: i32, dims: Option<&[i64]>) -> TypeProto {
    TypeProto {
        value: Some(type_proto::Value::TensorType(type_proto::Tensor {
            elem_type: elem,
            shape: dims.map(|dims| TensorShapeProto {
                dim: dims
                    .iter()
                    .map(|&d| Dimension {
                        value: Some(if d < 0 {
                            dimension::Value::DimParam("n".into())
                        } else {
                            dimension::Value::DimValue(d)
                        }),
                        ..Default::default()
                    })
                    .collect(),
            }),
        })),
        ..Default::default()
    }
}

/// A typed value; `dims` `None`: unknown rank; a negative dim is symbolic.
pub fn vi(name: &str, elem: i32, dims: Option<&[i64]>) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(tensor_type(elem, dims)),
        ..Default::default()
    }
}

pub fn f32_tensor(name: &str, dims: &[i64], v: &[f32]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: F32,
        float_data: v.to_vec(),
        ..Default::default()
    }
}

pub fn i64_tensor(name: &str, dims: &[i64], v: &[i64]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: I64,
        int64_data: v.to_vec(),
        ..Default::default()
    }
}

pub fn node(op: &str, name: &str, ins: &[&str], outs: &[&str]) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: name.into(),
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: outs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

pub fn attr_int(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Int as i32,
        i: v,
        ..Default::default()
    }
}

pub fn attr_ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Ints as i32,
        ints: v.to_vec(),
        ..Default::default()
    }
}

pub fn attr_graph(name: &str, g: GraphProto) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Graph as i32,
        g: Some(g),
        ..Default::default()
    }
}

pub fn graph(
    name: &str,
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    inits: Vec<TensorProto>,
) -> GraphProto {
    GraphProto {
        name: name.into(),
        node: nodes,
        input: inputs,
        output: outputs,
        initializer: inits,
        ..Default::default()
    }
}

pub fn model(g: GraphProto, opset: i64) -> ModelProto {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
        producer_name: "rge-runtime-tests".into(),
        graph: Some(g),
        ..Default::default()
    }
}

pub fn to_graph(m: &ModelProto) -> ComputeGraph {
    rge_formats::onnx::import_bytes(Bytes::from(m.encode_to_vec()), "test.onnx")
        .unwrap()
        .graph
}

pub fn bytes_of(m: &ModelProto) -> Vec<u8> {
    m.encode_to_vec()
}

/// A chain of `n` Adds on 1-element tensors: y = x + c + c + … (c = 1).
pub fn add_chain(n: usize) -> ModelProto {
    let mut nodes = Vec::with_capacity(n);
    for i in 0..n {
        let a = if i == 0 {
            "x".to_string()
        } else {
            format!("t{}", i - 1)
        };
        let o = if i + 1 == n {
            "y".to_string()
        } else {
            format!("t{i}")
        };
        nodes.push(node("Add", &format!("add{i}"), &[&a, "c"], &[&o]));
    }
    model(
        graph(
            "add_chain",
            nodes,
            vec![vi("x", F32, Some(&[1]))],
            vec![vi("y", F32, Some(&[1]))],
            vec![f32_tensor("c", &[1], &[1.0])],
        ),
        17,
    )
}

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../rge-formats/tests/data/onnx")
        .join(name)
}

pub fn floats(v: &rge_kernels::Value) -> Vec<f32> {
    v.as_tensor().unwrap().as_slice::<f32>().unwrap().to_vec()
}

pub fn tensor(shape: &[usize], v: Vec<f32>) -> rge_kernels::Value {
    rge_kernels::Value::Tensor(Tensor::from_vec(shape, v).unwrap())
}
