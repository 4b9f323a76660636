//! The register tile shared by the MatMul and Conv shaders: a 16×16 workgroup computes a
//! (16·r)×(16·r) output tile, each thread r×r outputs strided by 16 (so that workgroup-memory
//! reads do not collide), held in r vectors of r lanes. The code is written out per r: GPU
//! compilers put dynamically indexed arrays in slow local memory, vectors stay in registers.

use std::sync::Arc;

use crate::context::GpuContext;
use crate::dispatch::{groups_1d, launch, launch_all, Bound, Dispatch};
use crate::error::GpuError;
use crate::memory::Scratch;

/// Threads per side of the workgroup.
pub const TILE_THREADS: u32 = 16;
/// Depth of one step staged in workgroup memory.
pub const DEPTH: u32 = 16;
/// Outputs per thread per side for small outputs (32×32 tiles).
pub const SMALL: u32 = 2;
/// Outputs per thread per side for large outputs (64×64 tiles).
pub const LARGE: u32 = 4;

/// Workgroups below which the smaller tile is used: a large tile would leave most of a big
/// GPU's multiprocessors idle.
const FEW_GROUPS: usize = 264;

/// The outputs per thread per side for an `m`×`n` output, `batches` times.
pub fn per_thread(m: usize, n: usize, batches: usize) -> u32 {
    let t = (TILE_THREADS * LARGE) as usize;
    if m.div_ceil(t) * n.div_ceil(t) * batches < FEW_GROUPS {
        SMALL
    } else {
        LARGE
    }
}

/// Depth below which a split does not pay for its reduction.
const MIN_SPLIT_DEPTH: usize = 256;
/// The most splits of one product's depth.
const MAX_SPLITS: usize = 32;

/// Split-K for a product of `groups` workgroups and depth `k`: (splits, depth per split, a
/// multiple of [`DEPTH`]). Few workgroups over a long depth leave the device idle; splitting
/// the depth gives each slice its own workgroups, and a second dispatch sums the slices.
pub fn split_k(groups: usize, k: usize) -> (usize, usize) {
    let want = (2 * FEW_GROUPS).div_ceil(groups.max(1));
    let splits = want.min(k / MIN_SPLIT_DEPTH).clamp(1, MAX_SPLITS);
    if splits == 1 || groups >= FEW_GROUPS {
        return (1, k);
    }
    let chunk = k.div_ceil(splits).div_ceil(DEPTH as usize) * DEPTH as usize;
    (k.div_ceil(chunk), chunk)
}

/// One tiled product (MatMul's or Conv's shader) and, when its depth is split, the reduction
/// that sums the slices and applies the epilogue.
pub struct Tiled<'a> {
    pub product: &'a Arc<wgpu::ComputePipeline>,
    pub reduce: &'a Arc<wgpu::ComputePipeline>,
    pub scratch: &'a Scratch,
    /// The product's tensors: the two operands, then bias (or C), residual and output (what
    /// the reduction reads and writes); the partial sums bind after them.
    pub tensors: [&'a Bound; 5],
    pub params: Vec<u32>,
    /// The parameter word that takes the reduction's threads per grid row.
    pub row_word: usize,
    pub grid: (u32, u32, u32),
    pub splits: usize,
    /// Output elements (the partial sums hold `splits` × as many).
    pub outputs: usize,
}

/// Launches `t`: one dispatch, or the split product and its reduction recorded together.
pub fn launch_tiled(gpu: &GpuContext, t: Tiled<'_>) -> Result<(), GpuError> {
    let [a, b, c, z, o] = t.tensors;
    if t.splits == 1 {
        // The partial sums are not written: any binding stands in for them.
        return launch(gpu, t.product, &[a, b, c, z, o, a], &t.params, t.grid);
    }
    let bytes = (t.splits * t.outputs * 4) as u64;
    let buffer = t.scratch.get(gpu, bytes)?;
    let partial = Bound::own(&buffer, 0, bytes);
    let (rx, ry, row) = groups_1d(gpu, t.outputs as u64)?;
    let mut params = t.params;
    params[t.row_word] = row;
    launch_all(
        gpu,
        &[
            Dispatch {
                pipeline: t.product,
                tensors: vec![a, b, c, z, o, &partial],
                params: params.clone(),
                groups: t.grid,
            },
            Dispatch {
                pipeline: t.reduce,
                tensors: vec![c, z, o, &partial],
                params,
                groups: (rx, ry, 1),
            },
        ],
    )
}

/// The WGSL vector of r lanes.
pub fn vec_type(r: u32) -> String {
    format!("vec{r}<f32>")
}

/// `var acc0 = vec(0.0); …`
pub fn acc_decl(r: u32) -> String {
    (0..r)
        .map(|i| format!("    var acc{i} = {}(0.0);\n", vec_type(r)))
        .collect()
}

/// Elements each thread stages per step (the tile's rows × depth over the threads).
pub fn loads(r: u32) -> u32 {
    (TILE_THREADS * r * DEPTH).div_ceil(TILE_THREADS * TILE_THREADS)
}

/// The B vector of step `k`: the thread's r columns.
pub fn b_vector(r: u32) -> String {
    let lanes: Vec<String> = (0..r)
        .map(|j| format!("tb[k][l.x + {}u]", TILE_THREADS * j))
        .collect();
    format!("{}({})", vec_type(r), lanes.join(", "))
}

/// `acc_i += A[row_i] * bv` for each of the thread's rows.
pub fn fma(r: u32) -> String {
    (0..r)
        .map(|i| {
            format!(
                "            acc{i} = acc{i} + ta[k][l.y + {}u] * bv;\n",
                TILE_THREADS * i
            )
        })
        .collect()
}

/// One store line per row, from `pattern` with `{i}` (the row) and `{off}` (its offset).
pub fn stores(r: u32, pattern: &str) -> String {
    (0..r)
        .map(|i| {
            format!(
                "    {}\n",
                pattern
                    .replace("{i}", &i.to_string())
                    .replace("{off}", &(TILE_THREADS * i).to_string())
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tile_code_names_every_row_and_column() {
        assert_eq!(loads(4), 4);
        assert_eq!(loads(2), 2);
        assert_eq!(b_vector(2), "vec2<f32>(tb[k][l.x + 0u], tb[k][l.x + 16u])");
        assert!(fma(4).contains("acc3 = acc3 + ta[k][l.y + 48u] * bv;"));
        assert_eq!(
            stores(2, "s({off}, acc{i});"),
            "    s(0, acc0);\n    s(16, acc1);\n"
        );
        assert_eq!(per_thread(128, 768, 1), SMALL);
        assert_eq!(per_thread(12544, 256, 1), LARGE);
        // BERT's 128×768 output over 3072: 96 workgroups of 32×32, split 6 ways.
        assert_eq!(split_k(96, 3072), (6, 512));
        assert_eq!(split_k(600, 3072), (1, 3072));
        assert_eq!(split_k(10, 300), (1, 300));
        let (s, c) = split_k(4, 4608);
        assert!(
            s * c >= 4608 && (s - 1) * c < 4608 && c % 16 == 0,
            "{s} {c}"
        );
    }
}
