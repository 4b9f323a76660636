//! MatMul, Gemm and FusedMatMul: one tiled shader (64×64 output tiles, 4×4 per thread, or
//! 32×32 and 2×2 where that gives too few workgroups to fill the device; the
//! A and B tiles staged in workgroup memory), with strided A and B (so Gemm's transposes and
//! FusedMatMul's transB cost nothing), a batch offset table (MatMul's broadcast batch dims),
//! alpha, an optional broadcast C times beta (Gemm's C, FusedMatMul's bias), a residual Z and
//! the fused activation on the way out.

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::dispatch::{bind, Bound, GROUP};
use crate::error::GpuError;
use crate::kernels::epilogue::Activation;
use crate::kernels::map::{elem_size, enable, typed_pipeline};
use crate::kernels::strided;
use crate::kernels::tile::{self, Tiled, DEPTH, TILE_THREADS};
use crate::memory::{DeviceMemory, Scratch};

/// Parameter words before the batch table.
const P_HEAD: usize = 26;

/// The parameter words both shaders read, and the epilogue that writes one output.
fn epilogue(ty: &str) -> String {
    format!(
        "
// p: 0 M, 1 N, 2 K, 3 a_off, 4 b_off, 5 o_off, 6..10 strides (A row, A depth, B depth,
// B col), 10 has C, 11 c_off, 12..14 C strides (row, col), 14 alpha, 15 beta, 16 act a0,
// 17 act a1, 18 has Z, 19 z_off, 20 batches, 21 depth per split, 22 write partial sums,
// 23 splits, 24 threads per grid row (the reduction); from word {P_HEAD}: (A, B) offsets
// per batch.
fn epilogue(bt: u32, row: u32, col: u32, acc: f32) {{
    let m = p[0];
    let n = p[1];
    var x = bitcast<f32>(p[14]) * acc;
    if (p[10] != 0u) {{
        x = x + bitcast<f32>(p[15]) * f32(c[p[11] + row * p[12] + col * p[13]]);
    }}
    let oi = bt * m * n + row * n + col;
    if (p[18] != 0u) {{ x = x + f32(z[p[19] + oi]); }}
    o[p[5] + oi] = {ty}(act(x, bitcast<f32>(p[16]), bitcast<f32>(p[17])));
}}
"
    )
}

/// The reduction of split-K partial sums: one thread per output, the epilogue on the sum.
fn reduce_shader(ty: &str, act: &Activation) -> String {
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> c: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> z: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> o: array<{ty}>;
@group(0) @binding(3) var<storage, read_write> sp: array<f32>;
@group(0) @binding(4) var<storage, read> p: array<u32>;
{act_fn}{epi}
@compute @workgroup_size({GROUP})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
    let i = g.x + g.y * p[24];
    let mn = p[0] * p[1];
    let total = p[20] * mn;
    if (i >= total) {{ return; }}
    var v = 0.0;
    for (var s = 0u; s < p[23]; s = s + 1u) {{ v = v + sp[s * total + i]; }}
    let bt = i / mn;
    let rc = i % mn;
    epilogue(bt, rc / p[1], rc % p[1], v);
}}
",
        en = enable(ty),
        act_fn = act.wgsl(),
        epi = epilogue(ty),
    )
}

fn shader(ty: &str, act: &Activation, r: u32) -> String {
    let tile = TILE_THREADS * r;
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> a: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> b: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> c: array<{ty}>;
@group(0) @binding(3) var<storage, read_write> z: array<{ty}>;
@group(0) @binding(4) var<storage, read_write> o: array<{ty}>;
@group(0) @binding(5) var<storage, read_write> sp: array<f32>;
@group(0) @binding(6) var<storage, read> p: array<u32>;

var<workgroup> ta: array<array<f32, {tile}>, {DEPTH}>;
var<workgroup> tb: array<array<f32, {tile}>, {DEPTH}>;
{act_fn}{epi}
fn store(bt: u32, split: u32, row: u32, col0: u32, v: {vec}) {{
    let m = p[0];
    let n = p[1];
    if (row >= m) {{ return; }}
    for (var j = 0u; j < {r}u; j = j + 1u) {{
        let col = col0 + {TILE_THREADS}u * j;
        if (col < n) {{
            if (p[22] != 0u) {{
                sp[((split * p[20] + bt) * m + row) * n + col] = v[j];
            }} else {{
                epilogue(bt, row, col, v[j]);
            }}
        }}
    }}
}}

@compute @workgroup_size({TILE_THREADS}, {TILE_THREADS})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {{
    let m = p[0];
    let n = p[1];
    let kk = p[2];
    let r0 = wg.y * {tile}u;
    let c0 = wg.x * {tile}u;
    let bt = wg.z % p[20];
    let split = wg.z / p[20];
    let kbeg = split * p[21];
    let kend = min(kk, kbeg + p[21]);
    let abase = p[3] + p[{P_HEAD}u + 2u * bt];
    let bbase = p[4] + p[{P_HEAD}u + 2u * bt + 1u];
    let t = l.y * {TILE_THREADS}u + l.x;
{acc_decl}
    for (var k0 = kbeg; k0 < kend; k0 = k0 + {DEPTH}u) {{
        for (var e = 0u; e < {loads}u; e = e + 1u) {{
            let idx = t + {threads}u * e;
            let ar = idx / {DEPTH}u;
            let ak = idx % {DEPTH}u;
            var va = 0.0;
            if (r0 + ar < m && k0 + ak < kend) {{ va = f32(a[abase + (r0 + ar) * p[6] + (k0 + ak) * p[7]]); }}
            ta[ak][ar] = va;
            let bk = idx / {tile}u;
            let bc = idx % {tile}u;
            var vb = 0.0;
            if (k0 + bk < kend && c0 + bc < n) {{ vb = f32(b[bbase + (k0 + bk) * p[8] + (c0 + bc) * p[9]]); }}
            tb[bk][bc] = vb;
        }}
        workgroupBarrier();
        for (var k = 0u; k < {DEPTH}u; k = k + 1u) {{
            let bv = {bv};
{fma}
        }}
        workgroupBarrier();
    }}
{stores}
}}
",
        en = enable(ty),
        act_fn = act.wgsl(),
        vec = tile::vec_type(r),
        acc_decl = tile::acc_decl(r),
        loads = tile::loads(r),
        threads = TILE_THREADS * TILE_THREADS,
        bv = tile::b_vector(r),
        fma = tile::fma(r),
        stores = tile::stores(r, "store(bt, split, r0 + l.y + {off}u, c0 + l.x, acc{i});"),
        epi = epilogue(ty),
    )
}

/// Which op a [`MatMulKernel`] runs.
#[derive(Clone, Copy, PartialEq)]
pub enum MatMulOp {
    MatMul,
    Gemm,
    /// rge's `FusedMatMul`: `act(A·op(B) + bias + Z)`.
    Fused,
}

/// The MatMul, Gemm or FusedMatMul kernel.
pub struct MatMulKernel {
    mem: Arc<DeviceMemory>,
    /// 2×2 and 4×4 outputs per thread (small and large outputs).
    pipelines: [Arc<wgpu::ComputePipeline>; 2],
    /// Sums split-K partials and applies the epilogue.
    reduce: Arc<wgpu::ComputePipeline>,
    /// The split-K partial sums.
    scratch: Scratch,
    dtype: DType,
    gemm: Option<GemmAttrs>,
    op: MatMulOp,
    act: Activation,
}

#[derive(Clone, Copy)]
struct GemmAttrs {
    alpha: f32,
    beta: f32,
    trans_a: bool,
    trans_b: bool,
}

/// The tiled pipeline for `dtype` with activation `act` in its epilogue, `r`×`r` outputs
/// per thread.
pub fn pipeline(
    mem: &DeviceMemory,
    dtype: DType,
    act: &Activation,
    r: u32,
) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    typed_pipeline(
        mem,
        "MatMul",
        dtype,
        &format!("matmul.{}.{r}", act.key()),
        |ty| shader(ty, act, r),
    )
}

/// The split-K reduction pipeline for `dtype` with `act` in its epilogue.
fn reduce_pipeline(
    mem: &DeviceMemory,
    dtype: DType,
    act: &Activation,
) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    typed_pipeline(
        mem,
        "MatMul",
        dtype,
        &format!("matmul_reduce.{}", act.key()),
        |ty| reduce_shader(ty, act),
    )
}

/// Builds a MatMul, Gemm or FusedMatMul kernel.
pub fn create(
    mem: &Arc<DeviceMemory>,
    init: &KernelInit<'_>,
    op: MatMulOp,
) -> KernelResult<Box<dyn Kernel>> {
    let dtype = init.input_type(0).unwrap_or(DType::Float);
    let act = if op == MatMulOp::Fused {
        Activation::from_init(init)?
    } else {
        Activation::NONE
    };
    let pipelines = [
        pipeline(mem, dtype, &act, tile::SMALL)?,
        pipeline(mem, dtype, &act, tile::LARGE)?,
    ];
    let reduce = reduce_pipeline(mem, dtype, &act)?;
    let gemm = match op {
        MatMulOp::Gemm => Some(GemmAttrs {
            alpha: init.float_or("alpha", 1.0)?,
            beta: init.float_or("beta", 1.0)?,
            trans_a: init.int_or("transA", 0)? != 0,
            trans_b: init.int_or("transB", 0)? != 0,
        }),
        _ => None,
    };
    let trans_b = op == MatMulOp::Fused && init.int_or("transB", 0)? != 0;
    Ok(Box::new(MatMulKernel {
        mem: mem.clone(),
        pipelines,
        reduce,
        scratch: Scratch::default(),
        dtype,
        gemm: gemm.or(trans_b.then_some(GemmAttrs {
            alpha: 1.0,
            beta: 1.0,
            trans_a: false,
            trans_b: true,
        })),
        op,
        act,
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
        let g = match (self.op, self.gemm) {
            (MatMulOp::Gemm, Some(g)) => g,
            (MatMulOp::Fused, Some(_)) if b.len() >= 2 => {
                // transB: B is [.., N, K]; read it as [.., K, N] with swapped strides.
                let mut bt = b.to_vec();
                let r = bt.len();
                bt.swap(r - 2, r - 1);
                let mut geo = matmul_geometry(a, &bt)?;
                geo.strides[2] = 1;
                geo.strides[3] = geo.k;
                return Ok(geo);
            }
            _ => return matmul_geometry(a, b),
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
        let c = if self.op == MatMulOp::MatMul {
            None
        } else {
            ctx.opt_input(2)?
        };
        let z = if self.op == MatMulOp::Fused {
            ctx.opt_input(3)?.filter(|z| !z.is_empty())
        } else {
            None
        };
        let g = self.geometry(a.shape(), b.shape())?;
        let out = ctx.output_bytes(0, self.dtype, &g.out)?;
        let out_len = out.len() as u64;
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
        let (alpha, beta) = match (self.op, self.gemm) {
            (MatMulOp::Gemm, Some(g)) => (g.alpha, g.beta),
            (MatMulOp::Fused, _) => (1.0, 1.0),
            _ => (1.0, 0.0),
        };
        p[16] = f32::to_bits(self.act.params[0]);
        p[17] = f32::to_bits(self.act.params[1]);
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
        let bz = z.map(|z| bind(&self.mem, z.bytes()?, es)).transpose()?;
        if let Some(bz) = &bz {
            if bz.place.len != out_len {
                return Err(KernelError::invalid(
                    "FusedMatMul: the residual Z does not have the output's shape",
                ));
            }
            p[18] = 1;
            p[19] = bz.elem_offset;
        }
        for (i, &(oa, ob)) in g.batches.iter().enumerate() {
            p[P_HEAD + 2 * i] = oa;
            p[P_HEAD + 2 * i + 1] = ob;
        }
        let r = tile::per_thread(g.m, g.n, g.batches.len());
        let tile_size = (TILE_THREADS * r) as usize;
        let groups = g.n.div_ceil(tile_size) * g.m.div_ceil(tile_size) * g.batches.len();
        let (splits, chunk) = tile::split_k(groups, g.k);
        if g.batches.len() * splits > limit {
            return Err(GpuError::Device(format!(
                "{} matrices in one MatMul exceed the adapter's dispatch limit {limit}",
                g.batches.len()
            ))
            .into());
        }
        p[20] = g.batches.len() as u32;
        p[21] = to_u32(chunk, "K")?;
        p[22] = u32::from(splits > 1);
        p[23] = splits as u32;
        let grid = (
            to_u32(g.n.div_ceil(tile_size), "N")?,
            to_u32(g.m.div_ceil(tile_size), "M")?,
            to_u32(g.batches.len() * splits, "batches")?,
        );
        let pipeline = &self.pipelines[usize::from(r == tile::LARGE)];
        let z_bound = bz.as_ref().unwrap_or(&ba);
        tile::launch_tiled(
            gpu,
            Tiled {
                product: pipeline,
                reduce: &self.reduce,
                scratch: &self.scratch,
                tensors: [&ba, &bb, c_bound, z_bound, &bo],
                params: p,
                row_word: 24,
                grid,
                splits,
                outputs: g.batches.len() * g.m * g.n,
            },
        )?;
        Ok(())
    }
}
