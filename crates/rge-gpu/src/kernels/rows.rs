//! Kernels over rows: Softmax, LogSoftmax and LayerNormalization. A row is `len` elements
//! `stride` apart (the reduced axis, or the flattened trailing dims); one workgroup of 64
//! threads shares one row in f32 (max, sum of exponentials / mean, variance, each reduced in
//! workgroup memory), then writes it.

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::dispatch::{bind, groups_2d, launch, Bound};
use crate::error::GpuError;
use crate::kernels::map::{elem_size, enable, typed_pipeline};
use crate::memory::DeviceMemory;

/// What a rows kernel computes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RowOp {
    Softmax,
    LogSoftmax,
    LayerNorm,
}

/// Threads that share one row.
const ROW_THREADS: u32 = 64;

fn shader(ty: &str) -> String {
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> x: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> sc: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> bi: array<{ty}>;
@group(0) @binding(3) var<storage, read_write> y: array<{ty}>;
@group(0) @binding(4) var<storage, read> p: array<u32>;

{reduce}
// p: 0 outer, 1 mode (0 Softmax, 1 LogSoftmax, 2 LayerNorm), 2 workgroups per row of the
// grid, 3 len, 4 inner, 5 x_off, 6 y_off, 7 epsilon, 8 scale off, 9 bias off, 10 has bias
@compute @workgroup_size({ROW_THREADS})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {{
    let r = wg.x + wg.y * p[2];
    let inner = p[4];
    if (r >= p[0] * inner) {{ return; }}
    let t = l.x;
    let len = p[3];
    let o = r / inner;
    let i = r % inner;
    let base = o * len * inner + i;
    let xo = p[5] + base;
    let yo = p[6] + base;
    let mode = p[1];
    if (mode == 2u) {{
        var s = 0.0;
        for (var a = t; a < len; a = a + {ROW_THREADS}u) {{ s = s + f32(x[xo + a * inner]); }}
        let mean = reduce(s, t, false) / f32(len);
        var q = 0.0;
        for (var a = t; a < len; a = a + {ROW_THREADS}u) {{
            let d = f32(x[xo + a * inner]) - mean;
            q = q + d * d;
        }}
        let inv = 1.0 / sqrt(reduce(q, t, false) / f32(len) + bitcast<f32>(p[7]));
        for (var a = t; a < len; a = a + {ROW_THREADS}u) {{
            var v = (f32(x[xo + a * inner]) - mean) * inv * f32(sc[p[8] + a]);
            if (p[10] != 0u) {{ v = v + f32(bi[p[9] + a]); }}
            y[yo + a * inner] = {ty}(v);
        }}
        return;
    }}
    var m = bitcast<f32>(0xff800000u);
    for (var a = t; a < len; a = a + {ROW_THREADS}u) {{ m = max(m, f32(x[xo + a * inner])); }}
    m = reduce(m, t, true);
    var s = 0.0;
    for (var a = t; a < len; a = a + {ROW_THREADS}u) {{ s = s + exp(f32(x[xo + a * inner]) - m); }}
    s = reduce(s, t, false);
    let ls = log(s);
    for (var a = t; a < len; a = a + {ROW_THREADS}u) {{
        let d = f32(x[xo + a * inner]) - m;
        if (mode == 0u) {{ y[yo + a * inner] = {ty}(exp(d) / s); }}
        else {{ y[yo + a * inner] = {ty}(d - ls); }}
    }}
}}
",
        en = enable(ty),
        reduce = workgroup_reduce(ROW_THREADS),
    )
}

/// WGSL: `reduce(x, t, is_max)`, the sum or max of `x` over the `threads` threads of a
/// workgroup (thread `t`), through workgroup memory; every thread gets the result.
pub fn workgroup_reduce(threads: u32) -> String {
    format!(
        "var<workgroup> red: array<f32, {threads}>;

fn reduce(v: f32, t: u32, is_max: bool) -> f32 {{
    red[t] = v;
    workgroupBarrier();
    for (var s = {threads}u / 2u; s > 0u; s = s / 2u) {{
        if (t < s) {{
            if (is_max) {{ red[t] = max(red[t], red[t + s]); }} else {{ red[t] = red[t] + red[t + s]; }}
        }}
        workgroupBarrier();
    }}
    let out = red[0];
    workgroupBarrier();
    return out;
}}
"
    )
}

/// The rows pipeline for `dtype`.
pub fn pipeline(mem: &DeviceMemory, dtype: DType) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    typed_pipeline(mem, "rows", dtype, "rows", shader)
}

/// A Softmax, LogSoftmax or LayerNormalization kernel.
pub struct RowsKernel {
    mem: Arc<DeviceMemory>,
    pipeline: Arc<wgpu::ComputePipeline>,
    dtype: DType,
    op: RowOp,
    axis: i64,
    /// Softmax before opset 13 flattens the dims from `axis` on into the row.
    flatten: bool,
    epsilon: f32,
}

/// Builds the kernel of `op`.
pub fn create(
    mem: &Arc<DeviceMemory>,
    init: &KernelInit<'_>,
    op: RowOp,
) -> KernelResult<Box<dyn Kernel>> {
    let dtype = init.input_type(0).unwrap_or(DType::Float);
    let legacy = op != RowOp::LayerNorm && init.opset < 13;
    let axis = init.int_or("axis", if legacy { 1 } else { -1 })?;
    Ok(Box::new(RowsKernel {
        mem: mem.clone(),
        pipeline: pipeline(mem, dtype)?,
        dtype,
        op,
        axis,
        flatten: legacy || op == RowOp::LayerNorm,
        epsilon: init.float_or("epsilon", 1e-5)?,
    }))
}

impl Kernel for RowsKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let shape = x.shape().to_vec();
        let r = shape.len() as i64;
        let axis = if self.axis < 0 {
            self.axis + r
        } else {
            self.axis
        };
        if axis < 0 || axis > r || (axis == r && !self.flatten) {
            return Err(KernelError::invalid(format!(
                "axis {} out of range for rank {r}",
                self.axis
            )));
        }
        let axis = axis as usize;
        let outer: usize = shape[..axis].iter().product();
        let (len, inner) = if self.flatten {
            (shape[axis..].iter().product::<usize>(), 1)
        } else {
            (shape[axis], shape[axis + 1..].iter().product())
        };
        let es = elem_size(self.dtype);
        let (scale, bias) = if self.op == RowOp::LayerNorm {
            let s = ctx.input(1)?;
            let b = ctx.opt_input(2)?;
            for (name, t) in [("scale", Some(s)), ("bias", b)] {
                if let Some(t) = t {
                    if t.len() != len {
                        return Err(KernelError::invalid(format!(
                            "{name} has {} elements; the normalized dims have {len}",
                            t.len()
                        )));
                    }
                }
            }
            (Some(s), b)
        } else {
            (None, None)
        };
        let out = ctx.output_bytes(0, self.dtype, &shape)?;
        if out.is_empty() {
            return Ok(());
        }
        let bx = bind(&self.mem, x.bytes()?, es)?;
        let by = bind(&self.mem, out, es)?;
        let bs: Option<Bound> = scale.map(|s| bind(&self.mem, s.bytes()?, es)).transpose()?;
        let bb: Option<Bound> = bias
            .filter(|b| !b.is_empty())
            .map(|b| bind(&self.mem, b.bytes()?, es))
            .transpose()?;
        let gpu = self.mem.context();
        let (gx, gy, row) = groups_2d(gpu, (outer * inner) as u64)?;
        let mut p = vec![0u32; 11];
        p[0] = outer as u32;
        p[1] = match self.op {
            RowOp::Softmax => 0,
            RowOp::LogSoftmax => 1,
            RowOp::LayerNorm => 2,
        };
        p[2] = row;
        p[3] = len as u32;
        p[4] = inner as u32;
        p[5] = bx.elem_offset;
        p[6] = by.elem_offset;
        p[7] = self.epsilon.to_bits();
        p[8] = bs.as_ref().map_or(0, |b| b.elem_offset);
        p[9] = bb.as_ref().map_or(0, |b| b.elem_offset);
        p[10] = u32::from(bb.is_some());
        let s_ref = bs.as_ref().unwrap_or(&bx);
        let b_ref = bb.as_ref().unwrap_or(&bx);
        launch(
            gpu,
            &self.pipeline,
            &[&bx, s_ref, b_ref, &by],
            &p,
            (gx, gy, 1),
        )?;
        Ok(())
    }
}
