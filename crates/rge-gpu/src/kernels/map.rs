//! Elementwise kernels: one strided WGSL shader per op and dtype, over up to eight merged
//! dims with broadcasting (binary ops), permuted strides (Transpose) or repeated ones
//! (Expand). Each thread computes one output element in f32.

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelResult};

use crate::dispatch::{bind, groups_1d, launch, GROUP};
use crate::error::GpuError;
use crate::kernels::strided::{self, MAX_RANK};
use crate::memory::DeviceMemory;

/// The WGSL type of an element of `dtype` (the kernels take f32 and, where the adapter has
/// SHADER_F16, f16).
pub fn wgsl_type(dtype: DType) -> Option<&'static str> {
    match dtype {
        DType::Float => Some("f32"),
        DType::Float16 => Some("f16"),
        _ => None,
    }
}

/// The cached pipeline `name.ty` for the WGSL type `ty` of `dtype`, its source made by
/// `source(ty)` on first use; a dtype the kernels lack is an error naming `op`.
pub fn typed_pipeline(
    mem: &DeviceMemory,
    op: &str,
    dtype: DType,
    name: &str,
    source: impl FnOnce(&'static str) -> String,
) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    let ty = wgsl_type(dtype).ok_or_else(|| GpuError::Device(format!("{op}: {dtype:?}")))?;
    mem.context()
        .pipeline(&format!("{name}.{ty}"), || source(ty))
}

/// The element size of a kernel dtype.
pub fn elem_size(dtype: DType) -> u64 {
    if dtype == DType::Float16 {
        2
    } else {
        4
    }
}

/// The `enable` line a shader over `ty` needs.
pub fn enable(ty: &str) -> &'static str {
    enable_for(&[ty])
}

/// The `enable` line a shader over all of `types` needs (a cast or resize between two).
pub fn enable_for(types: &[&str]) -> &'static str {
    if types.contains(&"f16") {
        "enable f16;\n"
    } else {
        ""
    }
}

/// Parameter words: n, rank, row, offsets (y, a, b), alpha, beta, then dims and three
/// stride lists of MAX_RANK each.
const P_DIMS: usize = 8;

fn shader(arity: usize, ty: &str, expr: &str) -> String {
    let (b_decl, b_load, b_idx) = if arity == 2 {
        (
            format!("@group(0) @binding(1) var<storage, read_write> b: array<{ty}>;\n"),
            "let y = f32(b[bi]);",
            "bi += c * bitcast<i32>(p[32u + k]);",
        )
    } else {
        (String::new(), "let y = 0.0;", "")
    };
    let out = arity;
    let par = arity + 1;
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> a: array<{ty}>;
{b_decl}@group(0) @binding({out}) var<storage, read_write> o: array<{ty}>;
@group(0) @binding({par}) var<storage, read> p: array<u32>;

{erf}

// ONNX Pow: a negative base takes integer exponents only (NaN otherwise); x^0 is 1.
fn pow_(x: f32, y: f32) -> f32 {{
    if (y == 0.0) {{ return 1.0; }}
    if (x > 0.0) {{ return pow(x, y); }}
    if (x == 0.0) {{ return select(bitcast<f32>(0x7f800000u), 0.0, y > 0.0); }}
    if (floor(y) != y) {{ return bitcast<f32>(0x7fc00000u); }}
    let m = pow(-x, y);
    return select(m, -m, (abs(y) % 2.0) == 1.0);
}}

fn f(x: f32, y: f32, alpha: f32, beta: f32) -> f32 {{
    return {expr};
}}

@compute @workgroup_size({GROUP})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
    let i = g.x + g.y * p[2];
    if (i >= p[0]) {{ return; }}
    let rank = p[1];
    var rem = i;
    var oi = i32(p[3]);
    var ai = i32(p[4]);
    var bi = i32(p[5]);
    for (var d = 0u; d < rank; d = d + 1u) {{
        let k = rank - 1u - d;
        let dim = p[8u + k];
        let c = i32(rem % dim);
        rem = rem / dim;
        oi += c * bitcast<i32>(p[16u + k]);
        ai += c * bitcast<i32>(p[24u + k]);
        {b_idx}
    }}
    let x = f32(a[ai]);
    {b_load}
    o[oi] = {ty}(f(x, y, bitcast<f32>(p[6]), bitcast<f32>(p[7])));
}}
",
        en = enable(ty),
        erf = crate::kernels::epilogue::ERF_WGSL,
    )
}

/// The f32 expression of a unary op over `x` (with attributes `alpha`, `beta`).
pub fn unary_expr(op: &str) -> Option<&'static str> {
    Some(match op {
        "Relu" => "max(x, 0.0)",
        "Sigmoid" => "1.0 / (1.0 + exp(-x))",
        "Tanh" => "tanh(clamp(x, -15.0, 15.0))",
        "Exp" => "exp(x)",
        "Log" => "log(x)",
        "Abs" => "abs(x)",
        "Neg" => "-x",
        "Sqrt" => "sqrt(x)",
        "Reciprocal" => "1.0 / x",
        "Floor" => "floor(x)",
        "Ceil" => "ceil(x)",
        "Round" => "round(x)",
        "Sign" => "sign(x)",
        "Sin" => "sin(x)",
        "Cos" => "cos(x)",
        "Erf" => "erf_(x)",
        "Softsign" => "x / (1.0 + abs(x))",
        "Softplus" => "select(log(1.0 + exp(x)), x, x > 20.0)",
        "LeakyRelu" => "select(alpha * x, x, x >= 0.0)",
        "Elu" => "select(alpha * (exp(x) - 1.0), x, x >= 0.0)",
        "Selu" => "select(beta * alpha * (exp(x) - 1.0), beta * x, x > 0.0)",
        "HardSigmoid" => "clamp(alpha * x + beta, 0.0, 1.0)",
        "HardSwish" => "x * clamp(x / 6.0 + 0.5, 0.0, 1.0)",
        "ThresholdedRelu" => "select(0.0, x, x > alpha)",
        "Mish" => "x * tanh(clamp(select(log(1.0 + exp(x)), x, x > 20.0), -15.0, 15.0))",
        "Identity" | "Transpose" | "Expand" => "x",
        _ => return None,
    })
}

/// The default (alpha, beta) attributes of a unary op, and their names.
pub fn unary_attrs(op: &str) -> [(&'static str, f32); 2] {
    match op {
        "LeakyRelu" => [("alpha", 0.01), ("", 0.0)],
        "Elu" | "ThresholdedRelu" => [("alpha", 1.0), ("", 0.0)],
        "Selu" => [("alpha", 1.673_263_2), ("gamma", 1.050_701)],
        "HardSigmoid" => [("alpha", 0.2), ("beta", 0.5)],
        _ => [("", 0.0), ("", 0.0)],
    }
}

/// The f32 expression of a binary op over `x` and `y`.
pub fn binary_expr(op: &str) -> Option<&'static str> {
    Some(match op {
        "Add" | "Sum" => "x + y",
        "Sub" => "x - y",
        "Mul" => "x * y",
        "Div" => "x / y",
        "Pow" => "pow_(x, y)",
        "Max" => "max(x, y)",
        "Min" => "min(x, y)",
        "PRelu" => "select(x * y, x, x >= 0.0)",
        _ => return None,
    })
}

/// What a map kernel does with its input's strides.
#[derive(Clone, Debug)]
pub enum Layout {
    /// Inputs broadcast to the output (elementwise ops; Expand with the output's shape).
    Broadcast,
    /// The output's dims are the input's in this order.
    Permute(Option<Vec<i64>>),
}

/// An elementwise kernel.
pub struct MapKernel {
    pub mem: Arc<DeviceMemory>,
    pub pipeline: Arc<wgpu::ComputePipeline>,
    pub arity: usize,
    pub dtype: DType,
    pub alpha: f32,
    pub beta: f32,
    pub layout: Layout,
    /// Expand: the output shape comes from input 1 (on the host).
    pub expand: bool,
    /// PRelu: the slope broadcasts to X (and a 1-D slope matching one dim of X lies along it).
    pub prelu: bool,
}

/// The slope's shape against X, as the cpu kernel reads it: unidirectional numpy
/// broadcasting, else a 1-D slope whose length matches exactly one dim of X.
fn prelu_slope_shape(x: &[usize], s: &[usize]) -> KernelResult<Vec<usize>> {
    if strided::broadcast_shapes(x, s).is_some_and(|o| o == x) {
        return Ok(s.to_vec());
    }
    if let [d] = s {
        if x.iter().filter(|&&v| v == *d).count() == 1 {
            return Ok(x.iter().map(|&v| if v == *d { v } else { 1 }).collect());
        }
    }
    Err(KernelError::invalid(format!(
        "slope of shape {s:?} cannot broadcast to X of shape {x:?}"
    )))
}

/// The pipeline of a map shader (`arity` 1 or 2) for `op` over `dtype`.
pub fn pipeline(
    mem: &DeviceMemory,
    op: &str,
    arity: usize,
    dtype: DType,
) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    let ty = wgsl_type(dtype).ok_or_else(|| GpuError::Device(format!("{op}: dtype {dtype:?}")))?;
    let expr = if arity == 2 {
        binary_expr(op)
    } else {
        unary_expr(op)
    }
    .ok_or_else(|| GpuError::Device(format!("no gpu shader for {op}")))?;
    mem.context()
        .pipeline(&format!("map.{op}.{ty}"), || shader(arity, ty, expr))
}

/// Launches `o = f(a[, b])` over `dims` with the given strides (offsets in elements).
#[allow(clippy::too_many_arguments)]
pub fn run_map(
    mem: &DeviceMemory,
    pipeline: &Arc<wgpu::ComputePipeline>,
    dims: &[usize],
    strides: &[Vec<i64>],
    bound: &[&crate::dispatch::Bound],
    base: &[i64],
    alpha: f32,
    beta: f32,
) -> Result<(), GpuError> {
    let n: usize = dims.iter().product();
    if n == 0 {
        return Ok(());
    }
    let (dims, strides) = strided::merge(dims, strides);
    if dims.len() > MAX_RANK {
        return Err(GpuError::Device(format!(
            "{} dims after merging; the gpu kernels take {MAX_RANK}",
            dims.len()
        )));
    }
    let ctx = mem.context();
    let (gx, gy, row) = groups_1d(ctx, n as u64)?;
    let mut p = vec![0u32; P_DIMS + 4 * MAX_RANK];
    p[0] = u32::try_from(n).map_err(|_| GpuError::Device("tensor too large".into()))?;
    p[1] = dims.len() as u32;
    p[2] = row;
    for (k, &b) in base.iter().enumerate() {
        p[3 + k] = b as i32 as u32;
    }
    p[6] = alpha.to_bits();
    p[7] = beta.to_bits();
    for (d, &v) in dims.iter().enumerate() {
        p[P_DIMS + d] = v as u32;
    }
    for (k, s) in strides.iter().enumerate() {
        for (d, &v) in s.iter().enumerate() {
            p[P_DIMS + (k + 1) * MAX_RANK + d] = v as i32 as u32;
        }
    }
    launch(ctx, pipeline, bound, &p, (gx, gy, 1))
}

fn gpu_err(e: GpuError) -> KernelError {
    e.into()
}

impl Kernel for MapKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let es = elem_size(self.dtype);
        let (out_shape, a_strides, b_shape) = match &self.layout {
            Layout::Permute(perm) => {
                let r = a.rank();
                let perm: Vec<usize> = match perm {
                    Some(p) => p
                        .iter()
                        .map(|&d| if d < 0 { d + r as i64 } else { d } as usize)
                        .collect(),
                    None => (0..r).rev().collect(),
                };
                if perm.len() != r || perm.iter().any(|&d| d >= r) {
                    return Err(KernelError::invalid(format!(
                        "perm {perm:?} does not fit rank {r}"
                    )));
                }
                let own = strided::contiguous(a.shape());
                let shape: Vec<usize> = perm.iter().map(|&d| a.shape()[d]).collect();
                (
                    shape,
                    perm.iter().map(|&d| own[d]).collect::<Vec<_>>(),
                    None,
                )
            }
            Layout::Broadcast => {
                let mut shape = a.shape().to_vec();
                let mut b_shape = None;
                if self.expand {
                    let want: Vec<usize> = ctx
                        .input(1)?
                        .to_i64_vec()?
                        .iter()
                        .map(|&d| d.max(0) as usize)
                        .collect();
                    shape = strided::broadcast_shapes(&shape, &want).ok_or_else(|| {
                        KernelError::invalid(format!("cannot expand {shape:?} to {want:?}"))
                    })?;
                } else if self.arity == 2 && self.prelu {
                    // PRelu broadcasts the slope to X only (its output has X's shape).
                    b_shape = Some(prelu_slope_shape(&shape, ctx.input(1)?.shape())?);
                } else if self.arity == 2 {
                    let b = ctx.input(1)?;
                    shape = strided::broadcast_shapes(&shape, b.shape()).ok_or_else(|| {
                        KernelError::invalid(format!(
                            "shapes {:?} and {:?} do not broadcast",
                            a.shape(),
                            b.shape()
                        ))
                    })?;
                }
                let s = strided::broadcast(a.shape(), &shape);
                (shape, s, b_shape)
            }
        };
        let out = ctx.output_bytes(0, self.dtype, &out_shape)?;
        if out.is_empty() {
            return Ok(());
        }
        let ba = bind(&self.mem, a.bytes()?, es).map_err(gpu_err)?;
        let bo = bind(&self.mem, out, es).map_err(gpu_err)?;
        let mut strides = vec![strided::contiguous(&out_shape), a_strides];
        let mut base = vec![i64::from(bo.elem_offset), i64::from(ba.elem_offset)];
        let bb;
        let mut bound = vec![&ba];
        if self.arity == 2 {
            let b = ctx.input(1)?;
            bb = bind(&self.mem, b.bytes()?, es).map_err(gpu_err)?;
            let b_dims = b_shape.unwrap_or_else(|| b.shape().to_vec());
            strides.push(strided::broadcast(&b_dims, &out_shape));
            base.push(i64::from(bb.elem_offset));
            bound.push(&bb);
        }
        bound.push(&bo);
        run_map(
            &self.mem,
            &self.pipeline,
            &out_shape,
            &strides,
            &bound,
            &base,
            self.alpha,
            self.beta,
        )
        .map_err(gpu_err)
    }
}
