//! MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool (1-D and 2-D): one thread per
//! output element walks its window.

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::dispatch::{bind, groups_1d, launch};
use crate::error::GpuError;
use crate::kernels::map::{elem_size, enable, typed_pipeline};
use crate::kernels::window::Window;
use crate::memory::DeviceMemory;

fn shader(ty: &str) -> String {
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> x: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> y: array<{ty}>;
@group(0) @binding(2) var<storage, read> p: array<u32>;

// p: 0 total, 1 row, 2 H, 3 W, 4 OH, 5 OW, 6 KH, 7 KW, 8 sh, 9 sw, 10 ph, 11 pw, 12 dh, 13 dw,
// 14 mode (0 max, 1 avg excluding pads, 2 avg including pads), 15 x_off, 16 y_off
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
    let i = g.x + g.y * p[1];
    if (i >= p[0]) {{ return; }}
    let pix = p[4] * p[5];
    let plane = i / pix;
    let q = i % pix;
    let oh = i32(q / p[5]);
    let ow = i32(q % p[5]);
    let mode = p[14];
    var acc = 0.0;
    if (mode == 0u) {{ acc = bitcast<f32>(0xff800000u); }}
    var count = 0u;
    for (var kh = 0u; kh < p[6]; kh = kh + 1u) {{
        let ih = oh * i32(p[8]) - i32(p[10]) + i32(kh * p[12]);
        for (var kw = 0u; kw < p[7]; kw = kw + 1u) {{
            let iw = ow * i32(p[9]) - i32(p[11]) + i32(kw * p[13]);
            let inside = ih >= 0 && ih < i32(p[2]) && iw >= 0 && iw < i32(p[3]);
            if (inside) {{
                let v = f32(x[p[15] + (plane * p[2] + u32(ih)) * p[3] + u32(iw)]);
                if (mode == 0u) {{ acc = max(acc, v); }} else {{ acc = acc + v; }}
                count = count + 1u;
            }} else if (mode == 2u && ih < i32(p[2] + p[10]) && iw < i32(p[3] + p[11])) {{
                count = count + 1u;
            }}
        }}
    }}
    if (mode != 0u) {{ acc = acc / f32(max(count, 1u)); }}
    y[p[16] + i] = {ty}(acc);
}}
",
        en = enable(ty)
    )
}

/// The pool pipeline for `dtype`.
pub fn pipeline(mem: &DeviceMemory, dtype: DType) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    typed_pipeline(mem, "pool", dtype, "pool", shader)
}

/// A pooling kernel.
pub struct PoolKernel {
    mem: Arc<DeviceMemory>,
    pipeline: Arc<wgpu::ComputePipeline>,
    dtype: DType,
    /// None: global pooling.
    window: Option<Window>,
    max: bool,
    count_include_pad: bool,
}

/// Builds the kernel of `op` (MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool).
pub fn create(
    mem: &Arc<DeviceMemory>,
    init: &KernelInit<'_>,
    op: &str,
) -> KernelResult<Box<dyn Kernel>> {
    let dtype = init.input_type(0).unwrap_or(DType::Float);
    let window = if op.starts_with("Global") {
        None
    } else {
        let k = init.ints_or_empty("kernel_shape")?;
        Some(Window::from_init(init, &k, k.len() == 1)?)
    };
    Ok(Box::new(PoolKernel {
        mem: mem.clone(),
        pipeline: pipeline(mem, dtype)?,
        dtype,
        window,
        max: op.contains("Max"),
        count_include_pad: init.int_or("count_include_pad", 0)? != 0,
    }))
}

impl Kernel for PoolKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let s = x.shape().to_vec();
        if s.len() != 3 && s.len() != 4 {
            return Err(KernelError::invalid(
                "the gpu pooling takes 1-D and 2-D inputs",
            ));
        }
        let one_d = s.len() == 3;
        let (h, w) = if one_d { (1, s[2]) } else { (s[2], s[3]) };
        let (win, out_hw, before) = match &self.window {
            Some(win) => {
                if win.one_d != one_d {
                    return Err(KernelError::invalid(
                        "kernel_shape does not match the input rank",
                    ));
                }
                let (o, b) = win.output([h, w])?;
                (win.clone(), o, b)
            }
            None => {
                let win = Window {
                    kernel: [h, w],
                    strides: [1, 1],
                    dilations: [1, 1],
                    pads: [0; 4],
                    auto_pad: "NOTSET".into(),
                    ceil_mode: false,
                    one_d,
                };
                (win, [1, 1], [0, 0])
            }
        };
        let mut out_shape = vec![s[0], s[1]];
        if one_d {
            out_shape.push(out_hw[1]);
        } else {
            out_shape.extend(out_hw);
        }
        let out = ctx.output_bytes(0, self.dtype, &out_shape)?;
        if out.is_empty() {
            return Ok(());
        }
        let es = elem_size(self.dtype);
        let bx = bind(&self.mem, x.bytes()?, es)?;
        let by = bind(&self.mem, out, es)?;
        let total = (s[0] * s[1] * out_hw[0] * out_hw[1]) as u64;
        let gpu = self.mem.context();
        let (gx, gy, row) = groups_1d(gpu, total)?;
        let mode = if self.max {
            0
        } else if self.count_include_pad {
            2
        } else {
            1
        };
        let p: Vec<u32> = [
            total as usize,
            row as usize,
            h,
            w,
            out_hw[0],
            out_hw[1],
            win.kernel[0],
            win.kernel[1],
            win.strides[0],
            win.strides[1],
            before[0],
            before[1],
            win.dilations[0],
            win.dilations[1],
            mode,
        ]
        .iter()
        .map(|&v| v as u32)
        .chain([bx.elem_offset, by.elem_offset])
        .collect();
        launch(gpu, &self.pipeline, &[&bx, &by], &p, (gx, gy, 1))?;
        Ok(())
    }
}
