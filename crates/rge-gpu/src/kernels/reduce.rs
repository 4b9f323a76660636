//! The Reduce* ops over any set of axes: one thread per output element walks the reduced
//! dims by their strides (kept and reduced dims each merged where contiguous), in f32.

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::dispatch::{bind, groups_1d, launch};
use crate::error::GpuError;
use crate::kernels::map::{elem_size, enable, typed_pipeline};
use crate::kernels::strided::{self, MAX_RANK};
use crate::memory::DeviceMemory;

/// The reduce ops and their mode numbers in the shader.
pub const REDUCE_OPS: &[&str] = &[
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceSumSquare",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
];

fn shader(ty: &str) -> String {
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> x: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> y: array<{ty}>;
@group(0) @binding(2) var<storage, read> p: array<u32>;

// p: 0 n_out, 1 row, 2 keep rank, 3 red rank, 4 x_off, 5 y_off, 6 mode, 7 count,
// 8.. keep dims, 16.. keep strides, 24.. red dims, 32.. red strides
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
    let i = g.x + g.y * p[1];
    if (i >= p[0]) {{ return; }}
    var rem = i;
    var base = p[4];
    for (var d = 0u; d < p[2]; d = d + 1u) {{
        let k = p[2] - 1u - d;
        base = base + (rem % p[8u + k]) * p[16u + k];
        rem = rem / p[8u + k];
    }}
    let mode = p[6];
    var m = bitcast<f32>(0xff800000u);
    if (mode == 9u) {{
        for (var j = 0u; j < p[7]; j = j + 1u) {{
            var r = j;
            var xi = base;
            for (var d = 0u; d < p[3]; d = d + 1u) {{
                let k = p[3] - 1u - d;
                xi = xi + (r % p[24u + k]) * p[32u + k];
                r = r / p[24u + k];
            }}
            m = max(m, f32(x[xi]));
        }}
    }}
    var acc = 0.0;
    if (mode == 2u) {{ acc = bitcast<f32>(0xff800000u); }}
    if (mode == 3u) {{ acc = bitcast<f32>(0x7f800000u); }}
    if (mode == 4u) {{ acc = 1.0; }}
    for (var j = 0u; j < p[7]; j = j + 1u) {{
        var r = j;
        var xi = base;
        for (var d = 0u; d < p[3]; d = d + 1u) {{
            let k = p[3] - 1u - d;
            xi = xi + (r % p[24u + k]) * p[32u + k];
            r = r / p[24u + k];
        }}
        let v = f32(x[xi]);
        switch mode {{
            case 2u: {{ acc = max(acc, v); }}
            case 3u: {{ acc = min(acc, v); }}
            case 4u: {{ acc = acc * v; }}
            case 5u, 7u: {{ acc = acc + v * v; }}
            case 6u: {{ acc = acc + abs(v); }}
            case 9u: {{ acc = acc + exp(v - m); }}
            default: {{ acc = acc + v; }}
        }}
    }}
    switch mode {{
        case 1u: {{ acc = acc / f32(max(p[7], 1u)); }}
        case 7u: {{ acc = sqrt(acc); }}
        case 8u: {{ acc = log(acc); }}
        case 9u: {{ acc = log(acc) + m; }}
        default: {{}}
    }}
    y[p[5] + i] = {ty}(acc);
}}
",
        en = enable(ty)
    )
}

/// The reduce pipeline for `dtype`.
pub fn pipeline(mem: &DeviceMemory, dtype: DType) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    typed_pipeline(mem, "reduce", dtype, "reduce", shader)
}

/// A Reduce* kernel.
pub struct ReduceKernel {
    mem: Arc<DeviceMemory>,
    pipeline: Arc<wgpu::ComputePipeline>,
    dtype: DType,
    mode: u32,
    keepdims: bool,
    noop_with_empty_axes: bool,
    /// Axes from the attribute (older opsets); newer ones take input 1.
    axes_attr: Option<Vec<i64>>,
}

/// Builds the kernel of `op`.
pub fn create(
    mem: &Arc<DeviceMemory>,
    init: &KernelInit<'_>,
    op: &str,
) -> KernelResult<Box<dyn Kernel>> {
    let dtype = init.input_type(0).unwrap_or(DType::Float);
    let mode = REDUCE_OPS
        .iter()
        .position(|&o| o == op)
        .ok_or_else(|| KernelError::invalid(format!("no gpu reduce {op}")))? as u32;
    Ok(Box::new(ReduceKernel {
        mem: mem.clone(),
        pipeline: pipeline(mem, dtype)?,
        dtype,
        mode,
        keepdims: init.int_or("keepdims", 1)? != 0,
        noop_with_empty_axes: init.int_or("noop_with_empty_axes", 0)? != 0,
        axes_attr: init.ints_opt("axes")?.map(<[i64]>::to_vec),
    }))
}

impl Kernel for ReduceKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let shape = x.shape().to_vec();
        let r = shape.len() as i64;
        let axes = match (&self.axes_attr, ctx.opt_input(1)?) {
            (Some(a), _) => a.clone(),
            (None, Some(t)) => t.to_i64_vec()?,
            (None, None) => Vec::new(),
        };
        let mut reduced = vec![false; shape.len()];
        if axes.is_empty() && !self.noop_with_empty_axes {
            reduced.iter_mut().for_each(|v| *v = true);
        }
        for &a in &axes {
            let a = if a < 0 { a + r } else { a };
            if a < 0 || a >= r {
                return Err(KernelError::invalid(format!(
                    "axis {a} out of range for rank {r}"
                )));
            }
            reduced[a as usize] = true;
        }
        let out_shape: Vec<usize> = shape
            .iter()
            .zip(&reduced)
            .filter_map(|(&d, &red)| match (red, self.keepdims) {
                (true, true) => Some(1),
                (true, false) => None,
                (false, _) => Some(d),
            })
            .collect();
        let out = ctx.output_bytes(0, self.dtype, &out_shape)?;
        if out.is_empty() {
            return Ok(());
        }
        let strides = strided::contiguous(&shape);
        let pick = |want: bool| -> (Vec<usize>, Vec<i64>) {
            let dims: Vec<usize> = (0..shape.len())
                .filter(|&d| reduced[d] == want)
                .map(|d| shape[d])
                .collect();
            let st: Vec<i64> = (0..shape.len())
                .filter(|&d| reduced[d] == want)
                .map(|d| strides[d])
                .collect();
            let (d, s) = strided::merge(&dims, &[st]);
            (d, s.into_iter().next().unwrap_or_default())
        };
        let (kd, ks) = pick(false);
        let (rd, rs) = pick(true);
        if kd.len() > MAX_RANK || rd.len() > MAX_RANK {
            return Err(KernelError::invalid("too many dims for the gpu reduce"));
        }
        let count: usize = rd.iter().product();
        let es = elem_size(self.dtype);
        let bx = bind(&self.mem, x.bytes()?, es)?;
        let by = bind(&self.mem, out, es)?;
        let n_out: usize = out_shape.iter().product();
        let gpu = self.mem.context();
        let (gx, gy, row) = groups_1d(gpu, n_out as u64)?;
        let mut p = vec![0u32; 8 + 4 * MAX_RANK];
        p[0] = n_out as u32;
        p[1] = row;
        p[2] = kd.len() as u32;
        p[3] = rd.len() as u32;
        p[4] = bx.elem_offset;
        p[5] = by.elem_offset;
        p[6] = self.mode;
        p[7] = count as u32;
        for (k, (&d, &s)) in kd.iter().zip(&ks).enumerate() {
            p[8 + k] = d as u32;
            p[16 + k] = s as u32;
        }
        for (k, (&d, &s)) in rd.iter().zip(&rs).enumerate() {
            p[24 + k] = d as u32;
            p[32 + k] = s as u32;
        }
        launch(gpu, &self.pipeline, &[&bx, &by], &p, (gx, gy, 1))?;
        Ok(())
    }
}
