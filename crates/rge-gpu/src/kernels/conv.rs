//! Conv as an implicit GEMM: per group, the weights [M/g, C/g·KH·KW] times the im2col matrix
//! [C/g·KH·KW, N·OH·OW] that the shader gathers from the input on the fly (zero outside the
//! pads), in 16×16 tiles staged in workgroup memory; the bias is added on the way out. A
//! depthwise Conv is the case C/g = 1.

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::dispatch::{bind, launch};
use crate::error::GpuError;
use crate::kernels::map::{elem_size, enable, wgsl_type};
use crate::kernels::window::Window;
use crate::memory::DeviceMemory;

const TILE: u32 = 16;

fn shader(ty: &str) -> String {
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> x: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> w: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> bs: array<{ty}>;
@group(0) @binding(3) var<storage, read_write> y: array<{ty}>;
@group(0) @binding(4) var<storage, read> p: array<u32>;

var<workgroup> ta: array<array<f32, {TILE}>, {TILE}>;
var<workgroup> tb: array<array<f32, {TILE}>, {TILE}>;

// p: 0 N, 1 C, 2 H, 3 W, 4 M, 5 OH, 6 OW, 7 KH, 8 KW, 9 sh, 10 sw, 11 ph, 12 pw, 13 dh, 14 dw,
// 15 Cg, 16 Mg, 17 x_off, 18 w_off, 19 b_off, 20 y_off, 21 has_bias
@compute @workgroup_size({TILE}, {TILE})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {{
    let g = wg.z;
    let row = wg.y * {TILE}u + l.y;
    let col = wg.x * {TILE}u + l.x;
    let khw = p[7] * p[8];
    let kk = p[15] * khw;
    let pix = p[5] * p[6];
    let cols = p[0] * pix;
    let mg = p[16];
    let n = col / pix;
    let q = col % pix;
    let oh = i32(q / p[6]);
    let ow = i32(q % p[6]);
    var acc = 0.0;
    for (var t = 0u; t < kk; t = t + {TILE}u) {{
        let ka = t + l.x;
        var va = 0.0;
        if (row < mg && ka < kk) {{ va = f32(w[p[18] + (g * mg + row) * kk + ka]); }}
        ta[l.y][l.x] = va;
        let kb = t + l.y;
        var vb = 0.0;
        if (kb < kk && col < cols) {{
            let c = kb / khw;
            let r = kb % khw;
            let ih = oh * i32(p[9]) - i32(p[11]) + i32(r / p[8]) * i32(p[13]);
            let iw = ow * i32(p[10]) - i32(p[12]) + i32(r % p[8]) * i32(p[14]);
            if (ih >= 0 && ih < i32(p[2]) && iw >= 0 && iw < i32(p[3])) {{
                let ci = g * p[15] + c;
                vb = f32(x[p[17] + ((n * p[1] + ci) * p[2] + u32(ih)) * p[3] + u32(iw)]);
            }}
        }}
        tb[l.y][l.x] = vb;
        workgroupBarrier();
        for (var k = 0u; k < {TILE}u; k = k + 1u) {{
            acc = acc + ta[l.y][k] * tb[k][l.x];
        }}
        workgroupBarrier();
    }}
    if (row < mg && col < cols) {{
        let m = g * mg + row;
        if (p[21] != 0u) {{ acc = acc + f32(bs[p[19] + m]); }}
        y[p[20] + (n * p[4] + m) * pix + q] = {ty}(acc);
    }}
}}
",
        en = enable(ty)
    )
}

/// The conv pipeline for `dtype`.
pub fn pipeline(mem: &DeviceMemory, dtype: DType) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    let ty = wgsl_type(dtype).ok_or_else(|| GpuError::Device(format!("Conv: {dtype:?}")))?;
    mem.context().pipeline(&format!("conv.{ty}"), || shader(ty))
}

/// A 1-D or 2-D Conv.
pub struct ConvKernel {
    mem: Arc<DeviceMemory>,
    pipeline: Arc<wgpu::ComputePipeline>,
    dtype: DType,
    window: Window,
    group: usize,
}

/// Builds a Conv kernel (the kernel shape from the attribute or the weights at run time).
pub fn create(mem: &Arc<DeviceMemory>, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let dtype = init.input_type(0).unwrap_or(DType::Float);
    let kernel = init.ints_or_empty("kernel_shape")?;
    let one_d = init
        .constant(1)
        .map(|w| w.shape().len() == 3)
        .unwrap_or(kernel.len() == 1);
    Ok(Box::new(ConvKernel {
        mem: mem.clone(),
        pipeline: pipeline(mem, dtype)?,
        dtype,
        window: Window::from_init(init, &kernel, one_d)?,
        group: init.int_or("group", 1)?.max(1) as usize,
    }))
}

impl Kernel for ConvKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let w = ctx.input(1)?;
        let b = ctx.opt_input(2)?.filter(|b| !b.is_empty());
        let one_d = x.rank() == 3;
        if x.rank() != 4 && !one_d || w.rank() != x.rank() {
            return Err(KernelError::invalid(
                "the gpu Conv takes 1-D and 2-D convolutions",
            ));
        }
        let s = x.shape();
        let ws = w.shape();
        let (n, c, h, wd) = if one_d {
            (s[0], s[1], 1, s[2])
        } else {
            (s[0], s[1], s[2], s[3])
        };
        let (m, cg, kh, kw) = if one_d {
            (ws[0], ws[1], 1, ws[2])
        } else {
            (ws[0], ws[1], ws[2], ws[3])
        };
        let mut win = self.window.clone();
        win.kernel = [kh, kw];
        if c != cg * self.group || m % self.group != 0 {
            return Err(KernelError::invalid(format!(
                "{c} input channels, weights {ws:?} and group {} do not agree",
                self.group
            )));
        }
        let ([oh, ow], [ph, pw]) = win.output([h, wd])?;
        let out_shape = if one_d {
            vec![n, m, ow]
        } else {
            vec![n, m, oh, ow]
        };
        let out = ctx.output_bytes(0, self.dtype, &out_shape)?;
        if out.is_empty() {
            return Ok(());
        }
        let es = elem_size(self.dtype);
        let bx = bind(&self.mem, x.bytes()?, es)?;
        let bw = bind(&self.mem, w.bytes()?, es)?;
        let by = bind(&self.mem, out, es)?;
        let bb = b.map(|b| bind(&self.mem, b.bytes()?, es)).transpose()?;
        let mg = m / self.group;
        let p: Vec<u32> = [
            n,
            c,
            h,
            wd,
            m,
            oh,
            ow,
            kh,
            kw,
            win.strides[0],
            win.strides[1],
            ph,
            pw,
            win.dilations[0],
            win.dilations[1],
            cg,
            mg,
        ]
        .iter()
        .map(|&v| v as u32)
        .chain([
            bx.elem_offset,
            bw.elem_offset,
            bb.as_ref().map_or(0, |b| b.elem_offset),
            by.elem_offset,
            u32::from(bb.is_some()),
        ])
        .collect();
        let gpu = self.mem.context();
        let limit = gpu.limits.max_compute_workgroups_per_dimension as usize;
        let gx = (n * oh * ow).div_ceil(TILE as usize);
        let gy = mg.div_ceil(TILE as usize);
        if gx > limit || gy > limit || self.group > limit {
            return Err(
                GpuError::Device("the Conv exceeds the adapter's dispatch limits".into()).into(),
            );
        }
        let b_ref = bb.as_ref().unwrap_or(&bw);
        launch(
            gpu,
            &self.pipeline,
            &[&bx, &bw, b_ref, &by],
            &p,
            (gx as u32, gy as u32, self.group as u32),
        )?;
        Ok(())
    }
}
