//! Einsum's GEMM patterns: two operands, explicit output, letters only (no ellipsis, no label
//! repeated within an operand, every label of an operand either in the output or in the other
//! operand). Labels fall into batch (both operands and the output), m (A and the output),
//! n (B and the output) and k (both operands, summed); A and B are arranged as
//! `[batch, m, k]` and `[batch, k, n]` (no copy when they already are), one packed SGEMM runs
//! per batch, and the `[batch, m, n]` result is arranged into the output's order. Other
//! equations are declined at placement (the `cpu` engine's Einsum runs them).

use rge_ir::OpDesc;
use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::gemm::{self, AOperand, BOperand, Epilogue, GemmParams};
use crate::kernels::{f32s, gemm_err};

/// A parsed GEMM-shaped equation: the labels of A, B and the output, and the label groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GemmEquation {
    a: Vec<u8>,
    b: Vec<u8>,
    out: Vec<u8>,
    batch: Vec<u8>,
    m: Vec<u8>,
    n: Vec<u8>,
    k: Vec<u8>,
}

fn letters(term: &str) -> Result<Vec<u8>, String> {
    let t: Vec<u8> = term.bytes().collect();
    if let Some(c) = t.iter().find(|c| !c.is_ascii_alphabetic()) {
        return Err(format!("`{}` in `{term}` (only letters)", *c as char));
    }
    for (i, c) in t.iter().enumerate() {
        if t[..i].contains(c) {
            return Err(format!("label `{}` repeats in `{term}`", *c as char));
        }
    }
    Ok(t)
}

impl GemmEquation {
    /// Parses `equation`; an error says why it is not a GEMM pattern.
    pub fn parse(equation: &str) -> Result<Self, String> {
        let eq: String = equation.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, out) = eq
            .split_once("->")
            .ok_or("the output is implicit (no `->`)")?;
        let (a, b) = match lhs.split(',').collect::<Vec<_>>()[..] {
            [a, b] => (letters(a)?, letters(b)?),
            _ => return Err("not two operands".into()),
        };
        let out = letters(out)?;
        let (mut batch, mut m, mut n, mut k) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for &c in &out {
            match (a.contains(&c), b.contains(&c)) {
                (true, true) => batch.push(c),
                (true, false) => m.push(c),
                (false, true) => n.push(c),
                (false, false) => {
                    return Err(format!("output label `{}` is in no operand", c as char))
                }
            }
        }
        for &c in &a {
            if !out.contains(&c) {
                if !b.contains(&c) {
                    return Err(format!("label `{}` is summed within A alone", c as char));
                }
                k.push(c);
            }
        }
        if let Some(&c) = b.iter().find(|c| !out.contains(c) && !a.contains(c)) {
            return Err(format!("label `{}` is summed within B alone", c as char));
        }
        Ok(GemmEquation {
            a,
            b,
            out,
            batch,
            m,
            n,
            k,
        })
    }
}

/// Placement check: a GEMM-shaped equation.
pub fn check(op: &OpDesc) -> Result<(), String> {
    match op.attrs().get_str("equation") {
        Ok(Some(eq)) => GemmEquation::parse(eq).map(|_| ()),
        _ => Err("no equation attribute".into()),
    }
}

/// The dense Einsum kernel.
pub struct EinsumKernel {
    eq: GemmEquation,
}

/// Builds the kernel.
pub fn create_einsum(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let eq = init
        .attrs
        .get_str("equation")
        .ok()
        .flatten()
        .ok_or_else(|| KernelError::attr("equation", "missing"))?;
    let eq = GemmEquation::parse(eq).map_err(|e| KernelError::attr("equation", e))?;
    Ok(Box::new(EinsumKernel { eq }))
}

/// `src` (dims `dims`, labels `labels`) arranged into label order `order`: the dims in that
/// order, and the data (borrowed when already in that order).
fn arrange<'a>(
    src: &'a [f32],
    dims: &[usize],
    labels: &[u8],
    order: &[u8],
    buf: &'a mut Vec<f32>,
) -> &'a [f32] {
    let perm: Vec<usize> = order
        .iter()
        .map(|c| labels.iter().position(|l| l == c).unwrap_or(0))
        .collect();
    if perm.iter().enumerate().all(|(i, &p)| i == p) {
        return src;
    }
    let strides = rge_kernels::shape_util::strides(dims);
    let out_dims: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    let src_strides: Vec<usize> = perm.iter().map(|&p| strides[p]).collect();
    buf.clear();
    buf.reserve(src.len());
    let nd = out_dims.len();
    let mut idx = vec![0usize; nd];
    let total: usize = out_dims.iter().product();
    let (last, last_stride) = (out_dims[nd - 1], src_strides[nd - 1]);
    let mut done = 0;
    while done < total {
        let base: usize = idx.iter().zip(&src_strides).map(|(i, s)| i * s).sum();
        buf.extend((0..last).map(|j| src[base + j * last_stride]));
        done += last;
        for d in (0..nd - 1).rev() {
            idx[d] += 1;
            if idx[d] < out_dims[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    buf
}

impl Kernel for EinsumKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let e = &self.eq;
        let (a, b) = (ctx.input(0)?, ctx.input(1)?);
        let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
        if sa.len() != e.a.len() || sb.len() != e.b.len() {
            return Err(KernelError::invalid(format!(
                "Einsum: operands of ranks {} and {} for terms of {} and {} labels",
                sa.len(),
                sb.len(),
                e.a.len(),
                e.b.len()
            )));
        }
        let dim = |c: u8| -> KernelResult<usize> {
            let da = e.a.iter().position(|&l| l == c).map(|i| sa[i]);
            let db = e.b.iter().position(|&l| l == c).map(|i| sb[i]);
            match (da, db) {
                (Some(x), Some(y)) if x != y => Err(KernelError::invalid(format!(
                    "Einsum: label `{}` is {x} in A and {y} in B",
                    c as char
                ))),
                (Some(x), _) | (None, Some(x)) => Ok(x),
                (None, None) => Ok(1),
            }
        };
        let size = |ls: &[u8]| -> KernelResult<usize> {
            ls.iter().map(|&c| dim(c)).product::<KernelResult<usize>>()
        };
        let (nb, m, n, k) = (size(&e.batch)?, size(&e.m)?, size(&e.n)?, size(&e.k)?);
        let out_shape: Vec<usize> = e.out.iter().map(|&c| dim(c)).collect::<KernelResult<_>>()?;
        let cat = |x: &[&[u8]]| x.concat();
        let (mut abuf, mut bbuf) = (Vec::new(), Vec::new());
        let av = arrange(
            f32s(&a, "A")?,
            &sa,
            &e.a,
            &cat(&[&e.batch, &e.m, &e.k]),
            &mut abuf,
        );
        let bv = arrange(
            f32s(&b, "B")?,
            &sb,
            &e.b,
            &cat(&[&e.batch, &e.k, &e.n]),
            &mut bbuf,
        );
        let threads = ctx.threads();
        let bmn = cat(&[&e.batch, &e.m, &e.n]);
        let g = BatchedGemm {
            nb,
            m,
            n,
            k,
            threads,
        };
        if bmn == e.out {
            let out = ctx.output::<f32>(0, &out_shape)?;
            g.run(av, bv, out)?;
        } else {
            let mut cbuf = vec![0.0f32; nb * m * n];
            g.run(av, bv, &mut cbuf)?;
            let dims: Vec<usize> = bmn.iter().map(|&l| dim(l)).collect::<KernelResult<_>>()?;
            let mut obuf = Vec::new();
            let arranged = arrange(&cbuf, &dims, &bmn, &e.out, &mut obuf);
            ctx.output::<f32>(0, &out_shape)?.copy_from_slice(arranged);
        }
        Ok(())
    }
}

/// `nb` products `[m×k]·[k×n]` of contiguous operands into contiguous C.
struct BatchedGemm {
    nb: usize,
    m: usize,
    n: usize,
    k: usize,
    threads: usize,
}

impl BatchedGemm {
    fn run(&self, a: &[f32], b: &[f32], c: &mut [f32]) -> KernelResult<()> {
        let (m, n, k) = (self.m, self.n, self.k);
        if m * n == 0 {
            return Ok(());
        }
        if k == 0 {
            c.fill(0.0);
            return Ok(());
        }
        let p = GemmParams::new(m, n, k);
        for bi in 0..self.nb {
            let ao = AOperand::Raw {
                data: &a[bi * m * k..][..m * k],
                ld: k,
                trans: false,
            };
            let bo = BOperand::Raw {
                data: &b[bi * k * n..][..k * n],
                ld: n,
                trans: false,
            };
            let co = &mut c[bi * m * n..][..m * n];
            gemm::sgemm(&p, ao, bo, co, n, &Epilogue::NONE, self.threads).map_err(gemm_err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equations_are_classified_or_declined() {
        let e = GemmEquation::parse("bhid,bhjd->bhij").unwrap();
        assert_eq!(
            (e.batch, e.m, e.n, e.k),
            (b"bh".to_vec(), b"i".to_vec(), b"j".to_vec(), b"d".to_vec())
        );
        for (eq, why) in [
            ("ij,jk", "implicit"),
            ("ii,ij->ij", "repeats"),
            ("...ij,jk->...ik", "only letters"),
            ("ij,jk,kl->il", "two operands"),
            ("ijx,jk->ik", "A alone"),
            ("ij,jky->ik", "B alone"),
            ("ij,jk->iz", "no operand"),
        ] {
            let err = GemmEquation::parse(eq).unwrap_err();
            assert!(err.contains(why), "{eq}: {err}");
        }
    }
}
