//! Conv as an implicit GEMM: per group, the weights [M/g, C/g·KH·KW] times the im2col matrix
//! [C/g·KH·KW, N·OH·OW] that the shader gathers from the input on the fly (zero outside the
//! pads), in 64×64 tiles (4×4 per thread; 32×32 and 2×2 for small outputs) staged in
//! workgroup memory; the bias, FusedConv's
//! residual and activation are applied on the way out. A depthwise Conv is the case C/g = 1.

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::dispatch::{bind, groups_1d, launch, GROUP};
use crate::error::GpuError;
use crate::kernels::epilogue::Activation;
use crate::kernels::map::{elem_size, enable, typed_pipeline};
use crate::kernels::tile::{self, Tiled, DEPTH, TILE_THREADS};
use crate::kernels::window::Window;
use crate::memory::{DeviceMemory, Scratch};

/// The parameter words the conv shaders read, and the epilogue that writes output channel
/// `m` at column `col` (image × pixel).
fn epilogue(ty: &str) -> String {
    format!(
        "
// p: 0 N, 1 C, 2 H, 3 W, 4 M, 5 OH, 6 OW, 7 KH, 8 KW, 9 sh, 10 sw, 11 ph, 12 pw, 13 dh, 14 dw,
// 15 Cg, 16 Mg, 17 x_off, 18 w_off, 19 b_off, 20 y_off, 21 has_bias, 22 act a0, 23 act a1,
// 24 has Z, 25 z_off, 26 depth per split, 27 write partial sums, 28 splits, 29 threads per
// grid row (the reduction)
fn epilogue(m: u32, col: u32, acc: f32) {{
    let pix = p[5] * p[6];
    let n = col / pix;
    let q = col % pix;
    var x = acc;
    if (p[21] != 0u) {{ x = x + f32(bs[p[19] + m]); }}
    let yi = (n * p[4] + m) * pix + q;
    if (p[24] != 0u) {{ x = x + f32(z[p[25] + yi]); }}
    y[p[20] + yi] = {ty}(act(x, bitcast<f32>(p[22]), bitcast<f32>(p[23])));
}}
"
    )
}

/// The reduction of split-K partial sums: one thread per output, the epilogue on the sum.
fn reduce_shader(ty: &str, act: &Activation) -> String {
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> bs: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> z: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> y: array<{ty}>;
@group(0) @binding(3) var<storage, read_write> sp: array<f32>;
@group(0) @binding(4) var<storage, read> p: array<u32>;
{act_fn}{epi}
@compute @workgroup_size({GROUP})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
    let i = g.x + g.y * p[29];
    let cols = p[0] * p[5] * p[6];
    let total = p[4] * cols;
    if (i >= total) {{ return; }}
    var v = 0.0;
    for (var s = 0u; s < p[28]; s = s + 1u) {{ v = v + sp[s * total + i]; }}
    epilogue(i / cols, i % cols, v);
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
        "{en}@group(0) @binding(0) var<storage, read_write> x: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> w: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> bs: array<{ty}>;
@group(0) @binding(3) var<storage, read_write> z: array<{ty}>;
@group(0) @binding(4) var<storage, read_write> y: array<{ty}>;
@group(0) @binding(5) var<storage, read_write> sp: array<f32>;
@group(0) @binding(6) var<storage, read> p: array<u32>;

var<workgroup> ta: array<array<f32, {tile}>, {DEPTH}>;
var<workgroup> tb: array<array<f32, {tile}>, {DEPTH}>;
{act_fn}
{epi}
fn store(g: u32, split: u32, row: u32, col0: u32, v: {vec}) {{
    let cols = p[0] * p[5] * p[6];
    if (row >= p[16]) {{ return; }}
    let m = g * p[16] + row;
    for (var j = 0u; j < {r}u; j = j + 1u) {{
        let col = col0 + {TILE_THREADS}u * j;
        if (col < cols) {{
            if (p[27] != 0u) {{
                sp[(split * p[4] + m) * cols + col] = v[j];
            }} else {{
                epilogue(m, col, v[j]);
            }}
        }}
    }}
}}

@compute @workgroup_size({TILE_THREADS}, {TILE_THREADS})
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {{
    let groups = p[4] / p[16];
    let g = wg.z % groups;
    let split = wg.z / groups;
    let r0 = wg.y * {tile}u;
    let c0 = wg.x * {tile}u;
    let khw = p[7] * p[8];
    let kk = p[15] * khw;
    let kbeg = split * p[26];
    let kend = min(kk, kbeg + p[26]);
    let pix = p[5] * p[6];
    let cols = p[0] * pix;
    let mg = p[16];
    let t = l.y * {TILE_THREADS}u + l.x;
{acc_decl}
    for (var k0 = kbeg; k0 < kend; k0 = k0 + {DEPTH}u) {{
        for (var e = 0u; e < {loads}u; e = e + 1u) {{
            let idx = t + {threads}u * e;
            let ar = idx / {DEPTH}u;
            let ak = idx % {DEPTH}u;
            var va = 0.0;
            if (r0 + ar < mg && k0 + ak < kend) {{ va = f32(w[p[18] + (g * mg + r0 + ar) * kk + k0 + ak]); }}
            ta[ak][ar] = va;
            let bk = idx / {tile}u;
            let bc = idx % {tile}u;
            let kb = k0 + bk;
            let col = c0 + bc;
            var vb = 0.0;
            if (kb < kend && col < cols) {{
                let n = col / pix;
                let q = col % pix;
                let c = kb / khw;
                let r = kb % khw;
                let ih = i32(q / p[6]) * i32(p[9]) - i32(p[11]) + i32(r / p[8]) * i32(p[13]);
                let iw = i32(q % p[6]) * i32(p[10]) - i32(p[12]) + i32(r % p[8]) * i32(p[14]);
                if (ih >= 0 && ih < i32(p[2]) && iw >= 0 && iw < i32(p[3])) {{
                    let ci = g * p[15] + c;
                    vb = f32(x[p[17] + ((n * p[1] + ci) * p[2] + u32(ih)) * p[3] + u32(iw)]);
                }}
            }}
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
        stores = tile::stores(r, "store(g, split, r0 + l.y + {off}u, c0 + l.x, acc{i});"),
        epi = epilogue(ty),
    )
}

/// The direct shader of a Conv with one output channel per group (depthwise): one thread per
/// output element, the window walked in registers. Same bindings and words as [`shader`],
/// and 26: threads per row of workgroups.
fn direct_shader(ty: &str, act: &Activation) -> String {
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> x: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> w: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> bs: array<{ty}>;
@group(0) @binding(3) var<storage, read_write> z: array<{ty}>;
@group(0) @binding(4) var<storage, read_write> y: array<{ty}>;
@group(0) @binding(5) var<storage, read> p: array<u32>;
{act_fn}
@compute @workgroup_size({GROUP})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
    let i = gid.x + gid.y * p[26];
    let pix = p[5] * p[6];
    if (i >= p[0] * p[4] * pix) {{ return; }}
    let q = i % pix;
    let m = (i / pix) % p[4];
    let n = i / (pix * p[4]);
    let oh = i32(q / p[6]);
    let ow = i32(q % p[6]);
    let khw = p[7] * p[8];
    var v = 0.0;
    for (var c = 0u; c < p[15]; c = c + 1u) {{
        let ci = m * p[15] + c;
        let xb = p[17] + (n * p[1] + ci) * p[2] * p[3];
        let wb = p[18] + (m * p[15] + c) * khw;
        for (var r = 0u; r < p[7]; r = r + 1u) {{
            let ih = oh * i32(p[9]) - i32(p[11]) + i32(r) * i32(p[13]);
            if (ih < 0 || ih >= i32(p[2])) {{ continue; }}
            for (var s = 0u; s < p[8]; s = s + 1u) {{
                let iw = ow * i32(p[10]) - i32(p[12]) + i32(s) * i32(p[14]);
                if (iw < 0 || iw >= i32(p[3])) {{ continue; }}
                v = v + f32(x[xb + u32(ih) * p[3] + u32(iw)]) * f32(w[wb + r * p[8] + s]);
            }}
        }}
    }}
    if (p[21] != 0u) {{ v = v + f32(bs[p[19] + m]); }}
    if (p[24] != 0u) {{ v = v + f32(z[p[25] + i]); }}
    y[p[20] + i] = {ty}(act(v, bitcast<f32>(p[22]), bitcast<f32>(p[23])));
}}
",
        en = enable(ty),
        act_fn = act.wgsl(),
    )
}

/// The split-K reduction pipeline for `dtype` and `act`.
fn reduce_pipeline(
    mem: &DeviceMemory,
    dtype: DType,
    act: &Activation,
) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    typed_pipeline(
        mem,
        "Conv",
        dtype,
        &format!("conv_reduce.{}", act.key()),
        |ty| reduce_shader(ty, act),
    )
}

/// The depthwise (one output channel per group) pipeline for `dtype` and `act`.
fn direct_pipeline(
    mem: &DeviceMemory,
    dtype: DType,
    act: &Activation,
) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    typed_pipeline(mem, "Conv", dtype, &format!("dwconv.{}", act.key()), |ty| {
        direct_shader(ty, act)
    })
}

/// The conv pipeline for `dtype` with activation `act` in its epilogue, `r`×`r` outputs per
/// thread.
pub fn pipeline(
    mem: &DeviceMemory,
    dtype: DType,
    act: &Activation,
    r: u32,
) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    typed_pipeline(
        mem,
        "Conv",
        dtype,
        &format!("conv.{}.{r}", act.key()),
        |ty| shader(ty, act, r),
    )
}

/// A 1-D or 2-D Conv.
pub struct ConvKernel {
    mem: Arc<DeviceMemory>,
    /// 2×2 and 4×4 outputs per thread (small and large outputs).
    pipelines: [Arc<wgpu::ComputePipeline>; 2],
    /// Depthwise convolutions (one output channel per group).
    direct: Arc<wgpu::ComputePipeline>,
    /// Sums split-K partials and applies the epilogue.
    reduce: Arc<wgpu::ComputePipeline>,
    /// The split-K partial sums.
    scratch: Scratch,
    dtype: DType,
    window: Window,
    group: usize,
    act: Activation,
    /// FusedConv: input 3 is a residual of the output's shape.
    fused: bool,
}

/// Builds a Conv or FusedConv kernel (the kernel shape from the attribute or the weights at
/// run time).
pub fn create(
    mem: &Arc<DeviceMemory>,
    init: &KernelInit<'_>,
    fused: bool,
) -> KernelResult<Box<dyn Kernel>> {
    let dtype = init.input_type(0).unwrap_or(DType::Float);
    let act = if fused {
        Activation::from_init(init)?
    } else {
        Activation::NONE
    };
    let kernel = init.ints_or_empty("kernel_shape")?;
    let one_d = init
        .constant(1)
        .map(|w| w.shape().len() == 3)
        .unwrap_or(kernel.len() == 1);
    Ok(Box::new(ConvKernel {
        mem: mem.clone(),
        pipelines: [
            pipeline(mem, dtype, &act, tile::SMALL)?,
            pipeline(mem, dtype, &act, tile::LARGE)?,
        ],
        direct: direct_pipeline(mem, dtype, &act)?,
        reduce: reduce_pipeline(mem, dtype, &act)?,
        scratch: Scratch::default(),
        dtype,
        act,
        fused,
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
        let z = if self.fused {
            ctx.opt_input(3)?.filter(|z| !z.is_empty())
        } else {
            None
        };
        let bz = z.map(|z| bind(&self.mem, z.bytes()?, es)).transpose()?;
        if bz.as_ref().is_some_and(|z| z.place.len != by.place.len) {
            return Err(KernelError::invalid(
                "FusedConv: the residual Z does not have the output's shape",
            ));
        }
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
            self.act.params[0].to_bits(),
            self.act.params[1].to_bits(),
            u32::from(bz.is_some()),
            bz.as_ref().map_or(0, |z| z.elem_offset),
        ])
        .collect();
        let gpu = self.mem.context();
        let b_ref = bb.as_ref().unwrap_or(&bw);
        let z_ref = bz.as_ref().unwrap_or(&bw);
        if mg == 1 {
            let (gx, gy, row) = groups_1d(gpu, (n * m * oh * ow) as u64)?;
            let mut p = p;
            p.push(row);
            launch(
                gpu,
                &self.direct,
                &[&bx, &bw, b_ref, z_ref, &by],
                &p,
                (gx, gy, 1),
            )?;
            return Ok(());
        }
        let limit = gpu.limits.max_compute_workgroups_per_dimension as usize;
        let cols = n * oh * ow;
        let r = tile::per_thread(mg, cols, self.group);
        let tile_size = (TILE_THREADS * r) as usize;
        let gx = cols.div_ceil(tile_size);
        let gy = mg.div_ceil(tile_size);
        let (splits, chunk) = tile::split_k(gx * gy * self.group, cg * kh * kw);
        if gx > limit || gy > limit || self.group * splits > limit {
            return Err(
                GpuError::Device("the Conv exceeds the adapter's dispatch limits".into()).into(),
            );
        }
        let mut p = p;
        p.resize(30, 0);
        p[26] = chunk as u32;
        p[27] = u32::from(splits > 1);
        p[28] = splits as u32;
        let pipeline = &self.pipelines[usize::from(r == tile::LARGE)];
        let grid = (gx as u32, gy as u32, (self.group * splits) as u32);
        tile::launch_tiled(
            gpu,
            Tiled {
                product: pipeline,
                reduce: &self.reduce,
                scratch: &self.scratch,
                tensors: [&bx, &bw, b_ref, z_ref, &by],
                params: p,
                row_word: 29,
                grid,
                splits,
                outputs: m * cols,
            },
        )?;
        Ok(())
    }
}
