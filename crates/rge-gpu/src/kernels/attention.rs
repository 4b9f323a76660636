//! Scaled dot-product attention (ONNX `Attention` on 4-D `[batch, heads, seq, dim]` Q, K, V,
//! as the attention fusion writes it): one workgroup per query row computes the row's scores
//! into workgroup memory, their softmax (a row whose keys are all masked gives zeros, as the
//! cpu kernel does) and the weighted sum of V, so the scores never reach device memory.
//! Grouped-query heads (fewer K/V heads) share K and V; the mask is additive (f32) or bool,
//! broadcast to `[batch, heads, seq, total]`.

use std::sync::Arc;

use rge_ir::{DataType, OpDesc};
use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::dispatch::{bind, groups_2d, launch};
use crate::error::GpuError;
use crate::kernels::rows::workgroup_reduce;
use crate::memory::DeviceMemory;

/// Threads per query row.
const THREADS: u32 = 64;
/// The most keys a row may have (its scores live in workgroup memory).
pub const MAX_KEYS: usize = 2048;

fn shader() -> String {
    format!(
        "@group(0) @binding(0) var<storage, read_write> q: array<f32>;
@group(0) @binding(1) var<storage, read_write> k: array<f32>;
@group(0) @binding(2) var<storage, read_write> v: array<f32>;
@group(0) @binding(3) var<storage, read_write> mk: array<u32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<storage, read> p: array<u32>;

var<workgroup> sc: array<f32, {MAX_KEYS}>;
{reduce}
// p: 0 rows (B·Hq·S), 1 workgroups per grid row, 2 Hq, 3 S, 4 T (keys), 5 D, 6 Dv,
// 7 heads per kv head, 8 scale, 9..13 offsets (q, k, v, mask, y), 14 mask kind (0 none,
// 1 f32, 2 bool), 15..19 mask strides (batch, head, row, key), 19 Hkv
@compute @workgroup_size({THREADS})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {{
    let r = wg.x + wg.y * p[1];
    if (r >= p[0]) {{ return; }}
    let t = l.x;
    let s_len = p[3];
    let keys = p[4];
    let d = p[5];
    let dv = p[6];
    let i = r % s_len;
    let h = (r / s_len) % p[2];
    let b = r / (s_len * p[2]);
    let hk = h / p[7];
    let qo = p[9] + r * d;
    let kb = p[10] + (b * p[19] + hk) * keys * d;
    let vb = p[11] + (b * p[19] + hk) * keys * dv;
    let scale = bitcast<f32>(p[8]);
    let neg_inf = bitcast<f32>(0xff800000u);
    var m = neg_inf;
    for (var j = t; j < keys; j = j + {THREADS}u) {{
        var s = 0.0;
        for (var e = 0u; e < d; e = e + 1u) {{ s = s + q[qo + e] * k[kb + j * d + e]; }}
        s = s * scale;
        if (p[14] != 0u) {{
            let mi = b * p[15] + h * p[16] + i * p[17] + j * p[18];
            if (p[14] == 1u) {{
                s = s + bitcast<f32>(mk[p[12] + mi]);
            }} else {{
                let byte = p[12] + mi;
                if (((mk[byte / 4u] >> ((byte % 4u) * 8u)) & 255u) == 0u) {{ s = neg_inf; }}
            }}
        }}
        sc[j] = s;
        m = max(m, s);
    }}
    m = reduce(m, t, true);
    var sum = 0.0;
    for (var j = t; j < keys; j = j + {THREADS}u) {{
        var e = 0.0;
        if (m != neg_inf) {{ e = exp(sc[j] - m); }}
        sc[j] = e;
        sum = sum + e;
    }}
    sum = reduce(sum, t, false);
    var inv = 0.0;
    if (sum > 0.0) {{ inv = 1.0 / sum; }}
    for (var e = t; e < dv; e = e + {THREADS}u) {{
        var acc = 0.0;
        for (var j = 0u; j < keys; j = j + 1u) {{ acc = acc + sc[j] * v[vb + j * dv + e]; }}
        y[p[13] + r * dv + e] = acc * inv;
    }}
}}
",
        reduce = workgroup_reduce(THREADS),
    )
}

/// The attention pipeline (f32).
pub fn pipeline(mem: &DeviceMemory) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    mem.context().pipeline("attention.f32", shader)
}

/// What the gpu kernel takes: 4-D f32 Q, K, V, an optional f32 or bool mask of rank 1 to 4,
/// no past key/value or padding lengths, one output, no causal mask, softcap or other output
/// mode, at most [`MAX_KEYS`] keys.
pub fn check(op: &OpDesc) -> Result<(), String> {
    let present = |i: usize| {
        op.input(i)
            .is_some_and(|d| d.dtype() != DataType::Undefined)
    };
    for i in 0..3 {
        let d = op.input(i).ok_or("Q, K and V are required")?;
        if d.dtype() != DataType::Float || d.shape().rank() != Some(4) {
            return Err(format!("the gpu kernel takes 4-D f32 Q, K, V (input {i})"));
        }
    }
    if (4..op.input_count()).any(present) {
        return Err("the gpu kernel takes no past key/value or padding lengths".into());
    }
    if let Some(m) = op.input(3).filter(|_| present(3)) {
        if !matches!(m.dtype(), DataType::Float | DataType::Bool)
            || !matches!(m.shape().rank(), Some(1..=4))
        {
            return Err("the gpu kernel takes an f32 or bool mask of rank 1 to 4".into());
        }
    }
    let outputs = (0..op.output_count())
        .filter(|&i| {
            op.output(i)
                .is_some_and(|d| d.dtype() != DataType::Undefined)
        })
        .count();
    if outputs > 1 {
        return Err("the gpu kernel writes only Y".into());
    }
    let a = op.attrs();
    let int = |k: &str, d: i64| a.get_int(k).ok().flatten().unwrap_or(d);
    if int("is_causal", 0) != 0
        || int("qk_matmul_output_mode", 0) != 0
        || int("left_window_size", -1) != -1
        || int("right_window_size", -1) != -1
        || a.get_float("softcap").ok().flatten().unwrap_or(0.0) != 0.0
    {
        return Err(
            "the gpu kernel has no causal or windowed mask, softcap or extra output mode".into(),
        );
    }
    let keys = op.input(1).and_then(|d| d.shape().dim(2)).unwrap_or(0);
    if keys > MAX_KEYS as i64 {
        return Err(format!(
            "{keys} keys; the gpu kernel holds at most {MAX_KEYS} per row"
        ));
    }
    Ok(())
}

/// The Attention kernel.
pub struct AttentionKernel {
    mem: Arc<DeviceMemory>,
    pipeline: Arc<wgpu::ComputePipeline>,
    scale: Option<f32>,
}

/// Builds the kernel.
pub fn create(mem: &Arc<DeviceMemory>, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(AttentionKernel {
        mem: mem.clone(),
        pipeline: pipeline(mem)?,
        scale: init.float_opt("scale")?,
    }))
}

fn u32_of(v: usize) -> Result<u32, GpuError> {
    u32::try_from(v).map_err(|_| GpuError::Device(format!("{v} exceeds the gpu's index range")))
}

impl Kernel for AttentionKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let q = ctx.input(0)?;
        let k = ctx.input(1)?;
        let v = ctx.input(2)?;
        let mask = ctx.opt_input(3)?.filter(|m| !m.is_empty());
        let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
        if qs.len() != 4 || ks.len() != 4 || vs.len() != 4 {
            return Err(KernelError::invalid("the gpu Attention takes 4-D Q, K, V"));
        }
        let (b, hq, s, d) = (qs[0], qs[1], qs[2], qs[3]);
        let (hkv, t, dv) = (ks[1], ks[2], vs[3]);
        if ks[0] != b || vs[0] != b || ks[3] != d || vs[1] != hkv || vs[2] != t {
            return Err(KernelError::invalid(format!(
                "Q {qs:?}, K {ks:?} and V {vs:?} do not agree"
            )));
        }
        if hkv == 0 || hq % hkv != 0 {
            return Err(KernelError::invalid(format!(
                "{hq} query heads are not a multiple of {hkv} key/value heads"
            )));
        }
        if t > MAX_KEYS {
            return Err(KernelError::invalid(format!(
                "{t} keys; the gpu kernel holds at most {MAX_KEYS}"
            )));
        }
        let out = ctx.output_bytes(0, DType::Float, &[b, hq, s, dv])?;
        if out.is_empty() {
            return Ok(());
        }
        let bq = bind(&self.mem, q.bytes()?, 4)?;
        let bk = bind(&self.mem, k.bytes()?, 4)?;
        let bv = bind(&self.mem, v.bytes()?, 4)?;
        let by = bind(&self.mem, out, 4)?;
        let scale = self.scale.unwrap_or(1.0 / (d as f32).sqrt());
        let mut p = vec![0u32; 20];
        let rows = b * hq * s;
        let gpu = self.mem.context();
        let (gx, gy, row) = groups_2d(gpu, rows as u64)?;
        for (i, val) in [rows, row as usize, hq, s, t, d, dv, hq / hkv]
            .into_iter()
            .enumerate()
        {
            p[i] = u32_of(val)?;
        }
        p[8] = scale.to_bits();
        p[9] = bq.elem_offset;
        p[10] = bk.elem_offset;
        p[11] = bv.elem_offset;
        p[13] = by.elem_offset;
        p[19] = u32_of(hkv)?;
        let bm = match &mask {
            Some(m) => {
                let (kind, elem) = match m.dtype() {
                    DType::Float => (1, 4),
                    DType::Bool => (2, 1),
                    other => {
                        return Err(KernelError::invalid(format!(
                            "the gpu Attention takes an f32 or bool mask, not {other:?}"
                        )))
                    }
                };
                let ms = m.shape();
                if ms.is_empty() || ms.len() > 4 {
                    return Err(KernelError::invalid("the mask must have rank 1 to 4"));
                }
                // Right-aligned to [batch, heads, rows, keys]; a dim of 1 broadcasts.
                let full = [b, hq, s, t];
                let mut dims = [1usize; 4];
                dims[4 - ms.len()..].copy_from_slice(ms);
                let mut stride = 1usize;
                let mut strides = [0usize; 4];
                for a in (0..4).rev() {
                    if dims[a] != 1 && dims[a] != full[a] {
                        return Err(KernelError::invalid(format!(
                            "a mask of shape {ms:?} does not broadcast to {full:?}"
                        )));
                    }
                    strides[a] = if dims[a] == 1 { 0 } else { stride };
                    stride *= dims[a];
                }
                let bound = bind(&self.mem, m.bytes()?, elem)?;
                p[12] = bound.elem_offset;
                p[14] = kind;
                for (a, &st) in strides.iter().enumerate() {
                    p[15 + a] = u32_of(st)?;
                }
                Some(bound)
            }
            None => None,
        };
        let m_ref = bm.as_ref().unwrap_or(&bq);
        launch(
            gpu,
            &self.pipeline,
            &[&bq, &bk, &bv, m_ref, &by],
            &p,
            (gx, gy, 1),
        )?;
        Ok(())
    }
}
