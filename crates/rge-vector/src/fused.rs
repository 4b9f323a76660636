//! The kernel of `ai.rge` FusedElementwise (made by the `fused` engine's optimizer): a whole
//! tree of elementwise ops in one pass over memory. The output is computed tile by tile
//! (`TILE` floats, L1-resident): each instruction of the [`Program`] runs the vector engine's
//! SIMD loop over the tile into a scratch tile, the last one into the output, so no
//! intermediate tensor is ever written. Operands are read in place when they cover the output
//! (same shape), are one value, or repeat over the output's trailing dims (a row broadcast);
//! any other broadcast is expanded first (the optimizer does not make those).

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};
use rge_kernels_elementwise::bcast::{broadcast_shapes, for_chunks};

use crate::program::{Arg, Instr, Program};
use crate::simd::{self, Isa, Src};

/// Floats per tile: 4 KiB, so a program's scratch tiles stay in L1/L2.
const TILE: usize = 1024;

/// The kernel of one FusedElementwise node.
pub struct FusedKernel {
    program: Program,
    isa: Isa,
}

/// Builds the kernel from the node's `program` attribute.
pub fn create_fused(init: &KernelInit<'_>, isa: Isa) -> KernelResult<Box<dyn Kernel>> {
    let text = init
        .str_or("program", "")
        .map_err(|e| KernelError::attr("program", e.to_string()))?;
    let program = Program::parse(text, init.input_types.len())
        .map_err(|e| KernelError::attr("program", e))?;
    Ok(Box::new(FusedKernel { program, isa }))
}

/// How an input is read at output element `i`.
enum Operand<'a> {
    /// `x[i]`.
    Full(&'a [f32]),
    /// One value.
    Scalar(f32),
    /// `x[i % x.len()]`: the input is the output's trailing dims.
    Trailing(&'a [f32]),
    /// Expanded to the output's shape first.
    Expanded(Vec<f32>),
}

/// Whether `shape` (leading 1s dropped) equals the trailing dims of `out`.
fn is_trailing(shape: &[usize], out: &[usize]) -> bool {
    let s: &[usize] = match shape.iter().position(|&d| d != 1) {
        Some(k) => &shape[k..],
        None => &[],
    };
    s.len() <= out.len() && out[out.len() - s.len()..] == *s
}

/// `x` of `shape` broadcast to `out` (row-major), the general numpy rule.
fn expand(x: &[f32], shape: &[usize], out: &[usize]) -> Vec<f32> {
    let r = out.len();
    let mut strides = vec![0usize; r];
    let mut acc = 1;
    for k in (0..shape.len()).rev() {
        let o = r - shape.len() + k;
        strides[o] = if shape[k] == 1 { 0 } else { acc };
        acc *= shape[k];
    }
    let n: usize = out.iter().product();
    let mut idx = vec![0usize; r];
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let off: usize = idx.iter().zip(&strides).map(|(i, s)| i * s).sum();
        y.push(x[off]);
        for k in (0..r).rev() {
            idx[k] += 1;
            if idx[k] < out[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    y
}

impl FusedKernel {
    /// Output elements `start..start + out.len()`, tile by tile.
    fn run_chunk(&self, ops: &[Operand<'_>], out: &mut [f32], start: usize) {
        let n_tmp = self.program.instrs.len() - 1;
        let mut temps = vec![0.0f32; TILE * n_tmp];
        // Each trailing operand repeated to cover a tile from any phase: a tile reads
        // `rep[g0 % p..][..len]` in place (a per-channel row of an NHWC image is short, so most
        // tiles wrap it many times). One scratch tile for a unary op of a scalar.
        let reps: Vec<Vec<f32>> = ops
            .iter()
            .map(|op| match op {
                Operand::Trailing(x) if !x.is_empty() => {
                    let copies = (TILE + x.len()).div_ceil(x.len());
                    x.iter().copied().cycle().take(copies * x.len()).collect()
                }
                _ => Vec::new(),
            })
            .collect();
        let mut fill = vec![0.0f32; TILE];
        let mut t0 = 0;
        while t0 < out.len() {
            let len = TILE.min(out.len() - t0);
            let g0 = start + t0;
            let last = self.program.instrs.len() - 1;
            for (i, ins) in self.program.instrs.iter().enumerate() {
                let (done, rest) = temps.split_at_mut(i.min(n_tmp) * TILE);
                let dst: &mut [f32] = if i == last {
                    &mut out[t0..t0 + len]
                } else {
                    &mut rest[..len]
                };
                let src = |a: Arg| -> Src<'_> {
                    match a {
                        Arg::Temp(j) => Src::Slice(&done[j * TILE..j * TILE + len]),
                        Arg::Input(k) => match &ops[k] {
                            Operand::Full(x) => Src::Slice(&x[g0..g0 + len]),
                            Operand::Scalar(v) => Src::Scalar(*v),
                            Operand::Expanded(x) => Src::Slice(&x[g0..g0 + len]),
                            Operand::Trailing(x) => {
                                let o = g0 % x.len().max(1);
                                Src::Slice(&reps[k][o..o + len])
                            }
                        },
                    }
                };
                match *ins {
                    Instr::Unary(op, a) => match src(a) {
                        Src::Slice(x) => simd::unary(self.isa, &op, x, dst),
                        Src::Scalar(v) => {
                            fill[..len].fill(v);
                            simd::unary(self.isa, &op, &fill[..len], dst)
                        }
                    },
                    Instr::Binary(op, a, b) => simd::binary(self.isa, op, src(a), src(b), dst),
                }
            }
            t0 += len;
        }
    }
}

impl Kernel for FusedKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let n = ctx.input_count();
        if n != self.program.inputs {
            return Err(KernelError::invalid(format!(
                "the program reads {} inputs, the node has {n}",
                self.program.inputs
            )));
        }
        let mut shapes = Vec::with_capacity(n);
        let mut data = Vec::with_capacity(n);
        for i in 0..n {
            let t = ctx.input(i)?;
            if t.dtype() != DType::Float {
                return Err(KernelError::invalid(format!(
                    "FusedElementwise runs f32 only; input {i} is {:?}",
                    t.dtype()
                )));
            }
            shapes.push(t.shape().to_vec());
            data.push(t.as_slice::<f32>()?);
        }
        let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let osh = broadcast_shapes(&refs)?;
        let total: usize = osh.iter().product();
        let ops: Vec<Operand<'_>> = data
            .iter()
            .zip(&shapes)
            .map(|(x, s)| {
                if x.len() == 1 {
                    Operand::Scalar(x[0])
                } else if x.len() == total {
                    Operand::Full(x)
                } else if is_trailing(s, &osh) {
                    Operand::Trailing(x)
                } else {
                    Operand::Expanded(expand(x, s, &osh))
                }
            })
            .collect();
        let out = ctx.output::<f32>(0, &osh)?;
        if total == 0 {
            return Ok(());
        }
        for_chunks(ctx.threads(), out, |o, s| self.run_chunk(&ops, o, s));
        Ok(())
    }
}
