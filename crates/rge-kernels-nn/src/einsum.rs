//! Einsum: any equation (explicit or implicit output, ellipsis with broadcasting, repeated
//! labels as diagonals). Two-operand contractions that are batched matrix products run as
//! GEMMs; everything else runs as one strided sum over all labels. Floats accumulate in f64,
//! integers in wrapping i64.

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef};

use crate::blas::{gemm, Mat};
use crate::util::Real;

#[derive(Debug, Clone, PartialEq)]
enum Term {
    Letter(u8),
    Ellipsis,
}

#[derive(Debug, Clone)]
struct Equation {
    inputs: Vec<Vec<Term>>,
    output: Option<Vec<Term>>,
}

fn parse_term(s: &str) -> KernelResult<Vec<Term>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'.' {
            if b.get(i..i + 3) != Some(b"...") || out.contains(&Term::Ellipsis) {
                return Err(KernelError::attr(
                    "equation",
                    format!("bad ellipsis in '{s}'"),
                ));
            }
            out.push(Term::Ellipsis);
            i += 3;
        } else if b[i].is_ascii_alphabetic() {
            out.push(Term::Letter(b[i]));
            i += 1;
        } else {
            return Err(KernelError::attr(
                "equation",
                format!("unexpected character in '{s}'"),
            ));
        }
    }
    Ok(out)
}

fn parse(eq: &str) -> KernelResult<Equation> {
    let eq: String = eq.chars().filter(|c| !c.is_whitespace()).collect();
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (eq.as_str(), None),
    };
    let inputs = lhs
        .split(',')
        .map(parse_term)
        .collect::<KernelResult<Vec<_>>>()?;
    let output = rhs.map(parse_term).transpose()?;
    Ok(Equation { inputs, output })
}

struct Einsum {
    eq: Equation,
}

pub(crate) fn create_einsum(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let eq = init
        .str_opt("equation")?
        .ok_or_else(|| KernelError::attr("equation", "required but missing"))?;
    Ok(Box::new(Einsum { eq: parse(eq)? }))
}

/// Label ids: letters 0..52, ellipsis dims 52.. (right-aligned across operands).
const ELL: usize = 52;

fn letter_id(c: u8) -> usize {
    if c.is_ascii_uppercase() {
        (c - b'A') as usize
    } else {
        26 + (c - b'a') as usize
    }
}

/// The resolved contraction: label sizes, each operand's stride per label, output labels.
struct Plan {
    sizes: Vec<usize>,
    /// Per operand, per label: element stride (0 when the label is absent or broadcast).
    strides: Vec<Vec<usize>>,
    out_labels: Vec<usize>,
    sum_labels: Vec<usize>,
}

fn plan(eq: &Equation, shapes: &[&[usize]]) -> KernelResult<Plan> {
    if eq.inputs.len() != shapes.len() {
        return Err(KernelError::invalid(format!(
            "Einsum: the equation has {} operands, got {} inputs",
            eq.inputs.len(),
            shapes.len()
        )));
    }
    // Ellipsis rank of each operand and overall.
    let mut ell_ranks = Vec::new();
    for (t, s) in eq.inputs.iter().zip(shapes) {
        let letters = t.iter().filter(|x| **x != Term::Ellipsis).count();
        let has_ell = t.contains(&Term::Ellipsis);
        if s.len() < letters || (!has_ell && s.len() != letters) {
            return Err(KernelError::invalid(format!(
                "Einsum: operand of shape {s:?} does not fit its term"
            )));
        }
        ell_ranks.push(s.len() - letters);
    }
    let e = ell_ranks.iter().copied().max().unwrap_or(0);
    let nl = ELL + e;
    let mut sizes = vec![0usize; nl];
    let mut seen = vec![false; nl];
    let mut count = vec![0usize; nl];
    let mut strides = vec![vec![0usize; nl]; shapes.len()];
    for (oi, (t, s)) in eq.inputs.iter().zip(shapes).enumerate() {
        let st = rge_kernels::shape_util::strides(s);
        let mut axis = 0;
        for term in t {
            let ids: Vec<usize> = match term {
                Term::Letter(c) => vec![letter_id(*c)],
                Term::Ellipsis => (0..ell_ranks[oi])
                    .map(|j| ELL + e - ell_ranks[oi] + j)
                    .collect(),
            };
            for id in ids {
                let d = s[axis];
                let is_ell = id >= ELL;
                if !seen[id] {
                    sizes[id] = d;
                    seen[id] = true;
                } else if sizes[id] != d {
                    if is_ell && (d == 1 || sizes[id] == 1) {
                        sizes[id] = sizes[id].max(d);
                    } else {
                        return Err(KernelError::invalid(format!(
                            "Einsum: label size mismatch ({} vs {d})",
                            sizes[id]
                        )));
                    }
                }
                if !(is_ell && d == 1) {
                    strides[oi][id] += st[axis];
                }
                if !is_ell {
                    count[id] += 1;
                }
                axis += 1;
            }
        }
    }
    // Broadcast ellipsis dims of size 1 keep stride 0; a label that became larger than an
    // operand's size-1 dim is already stride 0 there.
    let out_labels: Vec<usize> = match &eq.output {
        Some(o) => {
            let mut v = Vec::new();
            for term in o {
                match term {
                    Term::Letter(c) => {
                        let id = letter_id(*c);
                        if !seen[id] || v.contains(&id) {
                            return Err(KernelError::invalid(
                                "Einsum: output label missing from the inputs or repeated",
                            ));
                        }
                        v.push(id);
                    }
                    Term::Ellipsis => v.extend(ELL..ELL + e),
                }
            }
            v
        }
        None => {
            let mut v: Vec<usize> = (ELL..ELL + e).collect();
            // Letters seen exactly once, in ASCII order (uppercase first).
            let mut letters: Vec<u8> = (b'A'..=b'Z')
                .chain(b'a'..=b'z')
                .filter(|&c| count[letter_id(c)] == 1)
                .collect();
            letters.sort_unstable();
            v.extend(letters.into_iter().map(letter_id));
            v
        }
    };
    let sum_labels: Vec<usize> = (0..nl)
        .filter(|&l| seen[l] && !out_labels.contains(&l))
        .collect();
    Ok(Plan {
        sizes,
        strides,
        out_labels,
        sum_labels,
    })
}

/// The general strided sum: `out[o] = Σ_s Π_k op_k[off_k(o, s)]`.
fn contract<A: Copy>(
    p: &Plan,
    ops: &[Vec<A>],
    zero: A,
    one: A,
    add: impl Fn(A, A) -> A,
    mul: impl Fn(A, A) -> A,
) -> Vec<A> {
    let labels: Vec<usize> = p.out_labels.iter().chain(&p.sum_labels).copied().collect();
    let dims: Vec<usize> = labels.iter().map(|&l| p.sizes[l]).collect();
    let out_n: usize = p.out_labels.iter().map(|&l| p.sizes[l]).product();
    let sum_n: usize = p.sum_labels.iter().map(|&l| p.sizes[l]).product();
    let mut out = vec![zero; out_n];
    if out_n == 0 || sum_n == 0 {
        return out;
    }
    let nd = labels.len();
    let mut idx = vec![0usize; nd];
    let mut offs = vec![0usize; ops.len()];
    let ls: Vec<Vec<usize>> = ops
        .iter()
        .enumerate()
        .map(|(k, _)| labels.iter().map(|&l| p.strides[k][l]).collect())
        .collect();
    for o in out.iter_mut() {
        let mut acc = zero;
        for _ in 0..sum_n {
            let mut prod = one;
            for (k, op) in ops.iter().enumerate() {
                prod = mul(prod, op[offs[k]]);
            }
            acc = add(acc, prod);
            // Advance the full odometer (sum labels innermost).
            for d in (0..nd).rev() {
                idx[d] += 1;
                for k in 0..ops.len() {
                    offs[k] += ls[k][d];
                }
                if idx[d] < dims[d] {
                    break;
                }
                for k in 0..ops.len() {
                    offs[k] -= ls[k][d] * dims[d];
                }
                idx[d] = 0;
            }
        }
        *o = acc;
    }
    out
}

/// Two operands whose labels split into batch (both + output), left (A + output), right
/// (B + output) and contracted (both, not output), each label at most once per operand:
/// runs as batched GEMMs in f64. Returns None when the pattern does not apply.
fn try_gemm(p: &Plan, ops: &[Vec<f64>], shapes: &[&[usize]], eq: &Equation) -> Option<Vec<f64>> {
    if ops.len() != 2
        || eq.inputs.iter().zip(shapes).any(|(t, s)| {
            let letters = t.iter().filter(|x| **x != Term::Ellipsis).count();
            let mut ids: Vec<u8> = t
                .iter()
                .filter_map(|x| {
                    if let Term::Letter(c) = x {
                        Some(*c)
                    } else {
                        None
                    }
                })
                .collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len() != letters || s.iter().any(|&d| d <= 1)
        })
    {
        return None;
    }
    let (sa, sb) = (&p.strides[0], &p.strides[1]);
    let in_a = |l: usize| sa[l] != 0;
    let in_b = |l: usize| sb[l] != 0;
    let batch: Vec<usize> = p
        .out_labels
        .iter()
        .copied()
        .filter(|&l| in_a(l) && in_b(l))
        .collect();
    let left: Vec<usize> = p
        .out_labels
        .iter()
        .copied()
        .filter(|&l| in_a(l) && !in_b(l))
        .collect();
    let right: Vec<usize> = p
        .out_labels
        .iter()
        .copied()
        .filter(|&l| !in_a(l) && in_b(l))
        .collect();
    let red: Vec<usize> = p.sum_labels.clone();
    if red.iter().any(|&l| !(in_a(l) && in_b(l)))
        || batch.len() + left.len() + right.len() != p.out_labels.len()
    {
        return None;
    }
    let size = |ls: &[usize]| ls.iter().map(|&l| p.sizes[l]).product::<usize>();
    let (nb, m, n, k) = (size(&batch), size(&left), size(&right), size(&red));
    // Gather A as [batch, left, red] and B as [batch, red, right].
    let gather = |op: &[f64], st: &[usize], groups: [&[usize]; 3]| -> Vec<f64> {
        let labels: Vec<usize> = groups.iter().flat_map(|g| g.iter().copied()).collect();
        let dims: Vec<usize> = labels.iter().map(|&l| p.sizes[l]).collect();
        let mut out = Vec::with_capacity(dims.iter().product());
        crate::util::for_each_index(&dims, |_, ix| {
            let off: usize = ix.iter().zip(&labels).map(|(&i, &l)| i * st[l]).sum();
            out.push(op[off]);
        });
        out
    };
    let a = gather(&ops[0], sa, [&batch, &left, &red]);
    let b = gather(&ops[1], sb, [&batch, &red, &right]);
    let mut c = vec![0f64; nb * m * n];
    for bi in 0..nb {
        gemm(
            m,
            k,
            n,
            1.0,
            &a[bi * m * k..],
            Mat::row_major(k),
            &b[bi * k * n..],
            Mat::row_major(n),
            0.0,
            &mut c[bi * m * n..],
            Mat::row_major(n),
        )
        .ok()?;
    }
    // Reorder [batch, left, right] to the output label order.
    let order: Vec<usize> = batch.iter().chain(&left).chain(&right).copied().collect();
    if order == p.out_labels {
        return Some(c);
    }
    let cst =
        rge_kernels::shape_util::strides(&order.iter().map(|&l| p.sizes[l]).collect::<Vec<_>>());
    let odims: Vec<usize> = p.out_labels.iter().map(|&l| p.sizes[l]).collect();
    let pos: Vec<usize> = p
        .out_labels
        .iter()
        .map(|l| order.iter().position(|x| x == l).unwrap_or(0))
        .collect();
    let mut out = Vec::with_capacity(c.len());
    crate::util::for_each_index(&odims, |_, ix| {
        let off: usize = ix.iter().enumerate().map(|(d, &i)| i * cst[pos[d]]).sum();
        out.push(c[off]);
    });
    Some(out)
}

fn float_run<T: Real>(
    ctx: &mut KernelCtx<'_>,
    eq: &Equation,
    ins: &[TensorRef<'_>],
    p: &Plan,
    shape: &[usize],
) -> KernelResult<()> {
    let ops: Vec<Vec<f64>> = ins
        .iter()
        .map(|t| Ok(t.as_slice::<T>()?.iter().map(|v| v.to_f64()).collect()))
        .collect::<KernelResult<_>>()?;
    let shapes: Vec<&[usize]> = ins.iter().map(|t| t.shape()).collect();
    let res = match try_gemm(p, &ops, &shapes, eq) {
        Some(r) => r,
        None => contract(p, &ops, 0.0, 1.0, |a, b| a + b, |a, b| a * b),
    };
    let y = ctx.output::<T>(0, shape)?;
    y.iter_mut()
        .zip(&res)
        .for_each(|(o, &v)| *o = T::from_f64(v));
    Ok(())
}

fn int_write<T: rge_kernels::Elem>(
    ctx: &mut KernelCtx<'_>,
    shape: &[usize],
    vals: &[i64],
) -> KernelResult<()>
where
    i64: num_traits::AsPrimitive<T>,
{
    use num_traits::AsPrimitive;
    let y = ctx.output::<T>(0, shape)?;
    // `as` wraps like the element type's own arithmetic.
    y.iter_mut().zip(vals).for_each(|(o, &v)| *o = v.as_());
    Ok(())
}

impl Kernel for Einsum {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let ins: Vec<TensorRef<'_>> = (0..ctx.input_count())
            .map(|i| ctx.input(i))
            .collect::<KernelResult<_>>()?;
        let dt = ins
            .first()
            .ok_or_else(|| KernelError::invalid("Einsum: no inputs"))?
            .dtype();
        if ins.iter().any(|t| t.dtype() != dt) {
            return Err(KernelError::invalid("Einsum: inputs of different types"));
        }
        let shapes: Vec<&[usize]> = ins.iter().map(|t| t.shape()).collect();
        let p = plan(&self.eq, &shapes)?;
        let shape: Vec<usize> = p.out_labels.iter().map(|&l| p.sizes[l]).collect();
        match dt {
            DType::Float | DType::Double | DType::Float16 | DType::Bfloat16 => {
                rge_kernels::dispatch_float!(dt, T => float_run::<T>(ctx, &self.eq, &ins, &p, &shape))
            }
            dt => {
                let ops: Vec<Vec<i64>> = ins
                    .iter()
                    .map(|t| t.to_i64_vec())
                    .collect::<KernelResult<_>>()?;
                let res = contract(&p, &ops, 0i64, 1i64, i64::wrapping_add, i64::wrapping_mul);
                rge_kernels::dispatch_int!(dt, T => int_write::<T>(ctx, &shape, &res))
            }
        }
    }
}
