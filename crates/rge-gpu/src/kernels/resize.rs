//! Resize: the cpu kernel's plan (`rge_kernels_misc::ResizeSpec`: every mode, coordinate
//! transformation, nearest rounding, cubic coefficient, antialias, exclude_outside, crop and
//! extrapolation) maps each output position of each changed axis to its input taps and
//! weights on the host; one dispatch per axis applies them, the table in the parameter
//! buffer. Passes between the first and the last go through the kernel's own f32 scratch
//! buffer (two halves, ping-pong).

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};
use rge_kernels_misc::{AxisPass, ResizeSpec};

use crate::dispatch::{bind, groups_1d, launch_all, Bound, Dispatch, GROUP};
use crate::error::GpuError;
use crate::kernels::map::{elem_size, enable_for, wgsl_type};
use crate::memory::{DeviceMemory, Scratch};

/// Parameter words before the tap table.
const P_HEAD: usize = 12;

fn shader(from: &str, to: &str) -> String {
    let en = enable_for(&[from, to]);
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> x: array<{from}>;
@group(0) @binding(1) var<storage, read_write> y: array<{to}>;
@group(0) @binding(2) var<storage, read> p: array<u32>;

// p: 0 n_out, 1 threads per grid row, 2 in_w, 3 out_w, 4 inner, 5 taps, 6 x_off, 7 y_off,
// 8 extrapolation; from word {P_HEAD}: per output position, taps × (index, weight bits);
// an index of 0xffffffff marks the extrapolation value
@compute @workgroup_size({GROUP})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
    let i = g.x + g.y * p[1];
    if (i >= p[0]) {{ return; }}
    let inner = p[4];
    let e = i % inner;
    let j = (i / inner) % p[3];
    let o = i / (inner * p[3]);
    let taps = p[5];
    let tab = {P_HEAD}u + j * taps * 2u;
    var v = 0.0;
    if (p[tab] == 0xffffffffu) {{
        v = bitcast<f32>(p[8]);
    }} else {{
        for (var t = 0u; t < taps; t = t + 1u) {{
            let w = bitcast<f32>(p[tab + 2u * t + 1u]);
            v = v + w * f32(x[p[6] + (o * p[2] + p[tab + 2u * t]) * inner + e]);
        }}
    }}
    y[p[7] + i] = {to}(v);
}}
"
    )
}

fn pipeline(
    mem: &DeviceMemory,
    from: DType,
    to: DType,
) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    let (Some(f), Some(t)) = (wgsl_type(from), wgsl_type(to)) else {
        return Err(GpuError::Device(format!("Resize: {from:?} -> {to:?}")));
    };
    mem.context()
        .pipeline(&format!("resize.{f}.{t}"), || shader(f, t))
}

/// Compiles the shaders a Resize over `dtype` uses (the placement check).
pub fn pipelines(mem: &DeviceMemory, dtype: DType) -> Result<(), GpuError> {
    for (f, t) in [
        (dtype, dtype),
        (dtype, DType::Float),
        (DType::Float, DType::Float),
        (DType::Float, dtype),
    ] {
        pipeline(mem, f, t)?;
    }
    Ok(())
}

/// A Resize kernel.
pub struct ResizeKernel {
    mem: Arc<DeviceMemory>,
    dtype: DType,
    spec: ResizeSpec,
    /// The intermediate axes of multi-axis resizes.
    scratch: Scratch,
}

/// Builds the kernel.
pub fn create(mem: &Arc<DeviceMemory>, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let dtype = init.input_type(0).unwrap_or(DType::Float);
    pipelines(mem, dtype)?;
    Ok(Box::new(ResizeKernel {
        mem: mem.clone(),
        dtype,
        spec: ResizeSpec::from_init(init)?,
        scratch: Scratch::default(),
    }))
}

/// The parameter words of `pass` over a tensor of `shape`.
fn params(pass: &AxisPass, shape: &[usize], extrapolation: f64) -> KernelResult<Vec<u32>> {
    let n = pass.taps;
    let mut p = vec![0u32; P_HEAD + pass.out_len * n * 2];
    let too_big = || KernelError::invalid("the resize is larger than the gpu's index range");
    for j in 0..pass.out_len {
        for t in 0..n {
            let k = P_HEAD + (j * n + t) * 2;
            if pass.extrapolate[j] {
                p[k] = u32::MAX;
            } else {
                p[k] = u32::try_from(pass.index[j * n + t]).map_err(|_| too_big())?;
                p[k + 1] = (pass.weight[j * n + t] as f32).to_bits();
            }
        }
    }
    let inner: usize = shape[pass.axis + 1..].iter().product();
    p[2] = u32::try_from(shape[pass.axis]).map_err(|_| too_big())?;
    p[3] = u32::try_from(pass.out_len).map_err(|_| too_big())?;
    p[4] = u32::try_from(inner).map_err(|_| too_big())?;
    p[5] = n as u32;
    p[8] = (extrapolation as f32).to_bits();
    Ok(p)
}

impl Kernel for ResizeKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let in_shape = x.shape().to_vec();
        let plan = self.spec.plan(ctx, &in_shape)?;
        let out = ctx.output_bytes(0, self.dtype, &plan.out_shape)?;
        if out.is_empty() {
            return Ok(());
        }
        let mut passes = plan.passes.clone();
        if passes.is_empty() || in_shape.contains(&0) {
            if in_shape.contains(&0) {
                return Err(KernelError::invalid(
                    "the gpu Resize of an empty input to a non-empty output",
                ));
            }
            // Nothing changes: one pass that copies axis 0.
            let len = in_shape.first().copied().unwrap_or(1);
            passes = vec![AxisPass {
                axis: 0,
                out_len: len,
                taps: 1,
                index: (0..len).collect(),
                weight: vec![1.0; len],
                extrapolate: vec![false; len],
            }];
        }
        let es = elem_size(self.dtype);
        let bx = bind(&self.mem, x.bytes()?, es)?;
        let by = bind(&self.mem, out, es)?;
        // The intermediate shapes, and the scratch halves (aligned) they need.
        let mut shapes = vec![in_shape.clone()];
        for pass in &passes {
            let mut s = shapes.last().cloned().unwrap_or_default();
            if pass.axis >= s.len() {
                return Err(KernelError::invalid("a resize pass names a missing axis"));
            }
            s[pass.axis] = pass.out_len;
            shapes.push(s);
        }
        let gpu = self.mem.context();
        let align = u64::from(gpu.limits.min_storage_buffer_offset_alignment).max(256);
        let half = shapes[1..shapes.len() - 1]
            .iter()
            .map(|s| s.iter().product::<usize>() as u64 * 4)
            .max()
            .unwrap_or(0)
            .div_ceil(align)
            * align;
        let scratch = if passes.len() > 1 {
            Some(self.scratch.get(gpu, 2 * half)?)
        } else {
            None
        };
        let halves: Vec<Bound> = scratch
            .iter()
            .flat_map(|b| [Bound::own(b, 0, half), Bound::own(b, half, half)])
            .collect();
        let last = passes.len() - 1;
        let mut pipelines = Vec::with_capacity(passes.len());
        for k in 0..passes.len() {
            let from = if k == 0 { self.dtype } else { DType::Float };
            let to = if k == last { self.dtype } else { DType::Float };
            pipelines.push(pipeline(&self.mem, from, to)?);
        }
        let mut dispatches = Vec::with_capacity(passes.len());
        for (k, pass) in passes.iter().enumerate() {
            let src = if k == 0 { &bx } else { &halves[(k - 1) % 2] };
            let dst = if k == last { &by } else { &halves[k % 2] };
            let mut p = params(pass, &shapes[k], plan.extrapolation)?;
            let n: usize = shapes[k + 1].iter().product();
            let (gx, gy, row) = groups_1d(gpu, n as u64)?;
            p[0] = n as u32;
            p[1] = row;
            p[6] = src.elem_offset;
            p[7] = dst.elem_offset;
            dispatches.push(Dispatch {
                pipeline: &pipelines[k],
                tensors: vec![src, dst],
                params: p,
                groups: (gx, gy, 1),
            });
        }
        launch_all(gpu, &dispatches)?;
        Ok(())
    }
}
