//! MatMul and Gemm: one tiled shader (16×16 output tiles, the A and B tiles staged in
//! workgroup memory), with strided A and B (so Gemm's transposes cost nothing), a batch
//! offset table (MatMul's broadcast batch dims), alpha, and an optional broadcast C times
//! beta.

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::dispatch::{bind, launch, Bound};
use crate::error::GpuError;
use crate::kernels::map::{elem_size, enable, wgsl_type};
use crate::kernels::strided;
use crate::memory::DeviceMemory;

const TILE: u32 = 16;
/// Parameter words before the batch table.
const P_HEAD: usize = 16;

fn shader(ty: &str) -> String {
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> a: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> b: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> c: array<{ty}>;
@group(0) @binding(3) var<storage, read_write> o: array<{ty}>;
@group(0) @binding(4) var<storage, read> p: array<u32>;

var<workgroup> ta: array<array<f32, {TILE}>, {TILE}>;
var<workgroup> tb: array<array<f32, {TILE}>, {TILE}>;

@compute @workgroup_size({TILE}, {TILE})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {{
    let m = p[0];
    let n = p[1];
    let kk = p[2];
    let row = wg.y * {TILE}u + l.y;
    let col = wg.x * {TILE}u + l.x;
    let bt = wg.z;
    let abase = p[3] + p[{P_HEAD}u + 2u * bt];
    let bbase = p[4] + p[{P_HEAD}u + 2u * bt + 1u];
    var acc = 0.0;
    for (var t = 0u; t < kk; t = t + {TILE}u) {{
        let ka = t + l.x;
        var va = 0.0;
        if (row < m && ka < kk) {{ va = f32(a[abase + row * p[6] + ka * p[7]]); }}
        ta[l.y][l.x] = va;
        let kb = t + l.y;
        var vb = 0.0;
        if (kb < kk && col < n) {{ vb = f32(b[bbase + kb * p[8] + col * p[9]]); }}
        tb[l.y][l.x] = vb;
        workgroupBarrier();
        for (var k = 0u; k < {TILE}u; k = k + 1u) {{
            acc = acc + ta[l.y][k] * tb[k][l.x];
        }}
        workgroupBarrier();
    }}
    if (row < m && col < n) {{
        var v = bitcast<f32>(p[14]) * acc;
        if (p[10] != 0u) {{
            v = v + bitcast<f32>(p[15]) * f32(c[p[11] + row * p[12] + col * p[13]]);
        }}
        o[p[5] + bt * m * n + row * n + col] = {ty}(v);
    }}
}}
",
        en = enable(ty)
    )
}

/// The MatMul or Gemm kernel.
pub struct MatMulKernel {
    mem: Arc<DeviceMemory>,
    pipeline: Arc<wgpu::ComputePipeline>,
    dtype: DType,
    gemm: Option<GemmAttrs>,
}

#[derive(Clone, Copy)]
struct GemmAttrs {
    alpha: f32,
    beta: f32,
    trans_a: bool,
    trans_b: bool,
}

/// The tiled pipeline for `dtype`.
pub fn pipeline(mem: &DeviceMemory, dtype: DType) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    let ty = wgsl_type(dtype).ok_or_else(|| GpuError::Device(format!("MatMul: {dtype:?}")))?;
    mem.context()
        .pipeline(&format!("matmul.{ty}"), || shader(ty))
}

/// Builds a MatMul (`gemm` false) or Gemm kernel.
pub fn create(
    mem: &Arc<DeviceMemory>,
    init: &KernelInit<'_>,
    gemm: bool,
) -> KernelResult<Box<dyn Kernel>> {
    let dtype = init.input_type(0).unwrap_or(DType::Float);
    let pipeline = pipeline(mem, dtype)?;
    let gemm = if gemm {
        Some(GemmAttrs {
            alpha: init.float_or("alpha", 1.0)?,
            beta: init.float_or("beta", 1.0)?,
            trans_a: init.int_or("transA", 0)? != 0,
            trans_b: init.int_or("transB", 0)? != 0,
        })
    } else {
        None
    };
    Ok(Box::new(MatMulKernel {
        mem: mem.clone(),
        pipeline,
        dtype,
        gemm,
    }))
}

/// One launch's geometry.
struct Geometry {
    m: usize,
    n: usize,
    k: usize,
    out: Vec<usize>,
    /// (A, B) element offsets of each batch.
    batches: Vec<(u32, u32)>,
    strides: [usize; 4],
}

fn matmul_geometry(a: &[usize], b: &[usize]) -> KernelResult<Geometry> {
    if a.is_empty() || b.is_empty() {
        return Err(KernelError::invalid("MatMul of a scalar"));
    }
    let a2: Vec<usize> = if a.len() == 1 {
        vec![1, a[0]]
    } else {
        a.to_vec()
    };
    let b2: Vec<usize> = if b.len() == 1 {
        vec![b[0], 1]
    } else {
        b.to_vec()
    };
    let (m, k) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let (kb, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
    if k != kb {
        return Err(KernelError::invalid(format!(
            "MatMul: inner dims differ ({a:?} × {b:?})"
        )));
    }
    let ab = &a2[..a2.len() - 2];
    let bb = &b2[..b2.len() - 2];
    let batch = strided::broadcast_shapes(ab, bb)
        .ok_or_else(|| KernelError::invalid(format!("MatMul: batch dims {ab:?} and {bb:?}")))?;
    let sa: Vec<i64> = strided::broadcast(ab, &batch)
        .iter()
        .map(|s| s * (m * k) as i64)
        .collect();
    let sb: Vec<i64> = strided::broadcast(bb, &batch)
        .iter()
        .map(|s| s * (k * n) as i64)
        .collect();
    let count: usize = batch.iter().product();
    let mut batches = Vec::with_capacity(count);
    for i in 0..count {
        let (mut rem, mut oa, mut ob) = (i, 0i64, 0i64);
        for d in (0..batch.len()).rev() {
            let c = (rem % batch[d]) as i64;
            rem /= batch[d];
            oa += c * sa[d];
            ob += c * sb[d];
        }
        batches.push((oa as u32, ob as u32));
    }
    let mut out = batch.clone();
    if a.len() > 1 {
        out.push(m);
    }
    if b.len() > 1 {
        out.push(n);
    }
    Ok(Geometry {
        m,
        n,
        k,
        out,
        batches,
        strides: [k, 1, n, 1],
    })
}

impl MatMulKernel {
    fn geometry(&self, a: &[usize], b: &[usize]) -> KernelResult<Geometry> {
        let Some(g) = self.gemm else {
            return matmul_geometry(a, b);
        };
        if a.len() != 2 || b.len() != 2 {
            return Err(KernelError::invalid("Gemm takes 2-D A and B"));
        }
        let (m, k) = if g.trans_a {
            (a[1], a[0])
        } else {
            (a[0], a[1])
        };
        let (kb, n) = if g.trans_b {
            (b[1], b[0])
        } else {
            (b[0], b[1])
        };
        if k != kb {
            return Err(KernelError::invalid(format!(
                "Gemm: inner dims differ ({a:?} × {b:?})"
            )));
        }
        let sa = if g.trans_a { [1, m] } else { [k, 1] };
        let sb = if g.trans_b { [1, k] } else { [n, 1] };
        Ok(Geometry {
            m,
            n,
            k,
            out: vec![m, n],
            batches: vec![(0, 0)],
            strides: [sa[0], sa[1], sb[0], sb[1]],
        })
    }
}

fn to_u32(v: usize, what: &str) -> Result<u32, GpuError> {
    u32::try_from(v)
        .map_err(|_| GpuError::Device(format!("{what} {v} exceeds the gpu's index range")))
}

impl Kernel for MatMulKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        let c = if self.gemm.is_some() {
            ctx.opt_input(2)?
        } else {
            None
        };
        let g = self.geometry(a.shape(), b.shape())?;
        let out = ctx.output_bytes(0, self.dtype, &g.out)?;
        if out.is_empty() {
            return Ok(());
        }
        let es = elem_size(self.dtype);
        let ba = bind(&self.mem, a.bytes()?, es)?;
        let bb = bind(&self.mem, b.bytes()?, es)?;
        let bo = bind(&self.mem, out, es)?;
        let gpu = self.mem.context();
        let limit = gpu.limits.max_compute_workgroups_per_dimension as usize;
        if g.batches.len() > limit {
            return Err(GpuError::Device(format!(
                "{} matrices in one MatMul exceed the adapter's dispatch limit {limit}",
                g.batches.len()
            ))
            .into());
        }
        let mut p = vec![0u32; P_HEAD + 2 * g.batches.len()];
        p[0] = to_u32(g.m, "M")?;
        p[1] = to_u32(g.n, "N")?;
        p[2] = to_u32(g.k, "K")?;
        p[3] = ba.elem_offset;
        p[4] = bb.elem_offset;
        p[5] = bo.elem_offset;
        for (i, &s) in g.strides.iter().enumerate() {
            p[6 + i] = to_u32(s, "stride")?;
        }
        let (alpha, beta) = self.gemm.map_or((1.0, 0.0), |g| (g.alpha, g.beta));
        p[14] = f32::to_bits(alpha);
        p[15] = f32::to_bits(beta);
        let bc: Bound;
        let c_bound = match c {
            Some(c) if beta != 0.0 && !c.is_empty() => {
                let s = c.shape();
                let (scm, scn) = match s.len() {
                    0 => (0, 0),
                    1 => (0, usize::from(s[0] != 1)),
                    _ => (
                        if s[s.len() - 2] == 1 {
                            0
                        } else {
                            s[s.len() - 1]
                        },
                        usize::from(s[s.len() - 1] != 1),
                    ),
                };
                bc = bind(&self.mem, c.bytes()?, es)?;
                p[10] = 1;
                p[11] = bc.elem_offset;
                p[12] = to_u32(scm, "stride")?;
                p[13] = to_u32(scn, "stride")?;
                &bc
            }
            _ => &ba,
        };
        for (i, &(oa, ob)) in g.batches.iter().enumerate() {
            p[P_HEAD + 2 * i] = oa;
            p[P_HEAD + 2 * i + 1] = ob;
        }
        let groups = (
            to_u32(g.n.div_ceil(TILE as usize), "N")?,
            to_u32(g.m.div_ceil(TILE as usize), "M")?,
            g.batches.len() as u32,
        );
        launch(gpu, &self.pipeline, &[&ba, &bb, c_bound, &bo], &p, groups)?;
        Ok(())
    }
}
