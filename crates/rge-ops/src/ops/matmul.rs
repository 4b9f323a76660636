//! Matrix products: MatMul, MatMulInteger, QLinearMatMul, Gemm, Einsum, Det.

use rge_ir::DataType;

use super::util::*;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::FormatRule;
use crate::registry::OpRegistryBuilder;

/// numpy.matmul dims of `a` @ `b`.
pub(super) fn matmul_dims(a: &[i64], b: &[i64]) -> OpResult<Vec<i64>> {
    if a.is_empty() || b.is_empty() {
        bail!("matmul of a scalar ({} @ {})", fmt_dims(a), fmt_dims(b));
    }
    let a2: Vec<i64> = if a.len() == 1 {
        vec![1, a[0]]
    } else {
        a.to_vec()
    };
    let b2: Vec<i64> = if b.len() == 1 {
        vec![b[0], 1]
    } else {
        b.to_vec()
    };
    let (m, k1) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let (k2, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
    merge_dim_with(k1, k2, || {
        format!("inner dims of {} @ {} differ", fmt_dims(a), fmt_dims(b))
    })?;
    let mut out = broadcast2(&a2[..a2.len() - 2], &b2[..b2.len() - 2])?;
    if a.len() != 1 {
        out.push(m);
    }
    if b.len() != 1 {
        out.push(n);
    }
    Ok(out)
}

fn matmul_of(ctx: &mut InferCtx<'_>, ia: usize, ib: usize, dtype: DataType) -> OpResult<()> {
    let (Some(a), Some(b)) = (ctx.input(ia)?.dims(), ctx.input(ib)?.dims()) else {
        return all_unknown(ctx, dtype);
    };
    let out = matmul_dims(a, b)?;
    ctx.set_output_dims(0, dtype, &out);
    Ok(())
}

fn matmul(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    matmul_of(ctx, 0, 1, dt)
}

/// FusedMatMul: MatMul, with B's last two dims swapped when `transB` is set.
fn fused_matmul(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let trans_b = ctx.attr_int("transB")? != 0;
    let (Some(a), Some(b)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    let mut b = b.to_vec();
    if trans_b {
        if b.len() < 2 {
            bail!("transB needs a B of rank 2 or more, got {}", fmt_dims(&b));
        }
        let r = b.len();
        b.swap(r - 2, r - 1);
    }
    let out = matmul_dims(a, &b)?;
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn matmul_integer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    matmul_of(ctx, 0, 1, DataType::Int32)
}

fn qlinear_matmul(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(7)?.dtype;
    matmul_of(ctx, 0, 3, dt)
}

fn gemm(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(a), Some(b)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    if a.len() != 2 || b.len() != 2 {
        bail!(
            "A and B must be 2-D, got {} and {}",
            fmt_dims(a),
            fmt_dims(b)
        );
    }
    let ta = ctx.attr_int("transA")? != 0;
    let tb = ctx.attr_int("transB")? != 0;
    let (m, k1) = if ta { (a[1], a[0]) } else { (a[0], a[1]) };
    let (k2, n) = if tb { (b[1], b[0]) } else { (b[0], b[1]) };
    merge_dim_with(k1, k2, || {
        format!(
            "inner dims of A {} and B {} differ",
            fmt_dims(a),
            fmt_dims(b)
        )
    })?;
    if let Some(c) = ctx.opt_input(2).and_then(|c| c.dims()) {
        let bc = broadcast2(&[m, n], c)?;
        if bc.len() != 2 {
            bail!("C {} does not broadcast to [{m},{n}]", fmt_dims(c));
        }
    }
    ctx.set_output_dims(0, dt, &[m, n]);
    Ok(())
}

fn einsum(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let eq: String = ctx
        .attr_str("equation")?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let dt = ctx.input(0)?.dtype;
    let (lhs, rhs) = match eq.split_once("->") {
        Some((l, r)) => (l.to_string(), Some(r.to_string())),
        None => (eq.clone(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != ctx.input_count() {
        bail!(
            "equation `{eq}` has {} operands for {} inputs",
            terms.len(),
            ctx.input_count()
        );
    }
    let mut label_dim: std::collections::BTreeMap<char, i64> = Default::default();
    let mut counts: std::collections::BTreeMap<char, usize> = Default::default();
    let mut ellipsis: Vec<i64> = Vec::new();
    for (i, t) in terms.iter().enumerate() {
        let Some(d) = ctx.input(i)?.dims() else {
            return all_unknown(ctx, dt);
        };
        let labels: Vec<char> = t.replace("...", ".").chars().collect();
        let n_named = labels.iter().filter(|&&c| c != '.').count();
        if labels.contains(&'.') {
            if d.len() < n_named {
                bail!("operand {i} `{t}` needs rank ≥ {n_named}, got {}", d.len());
            }
        } else if d.len() != n_named {
            bail!("operand {i} `{t}` needs rank {n_named}, got {}", d.len());
        }
        let mut k = 0;
        for c in labels {
            if c == '.' {
                let n = d.len() - n_named;
                ellipsis = broadcast2(&ellipsis, &d[k..k + n])?;
                k += n;
                continue;
            }
            let e = label_dim.entry(c).or_insert(d[k]);
            *e = if *e == 1 {
                d[k]
            } else if d[k] == 1 {
                *e
            } else {
                merge_dim_with(*e, d[k], || format!("label `{c}` has two sizes"))?
            };
            *counts.entry(c).or_default() += 1;
            k += 1;
        }
    }
    let out_labels: String = match rhs {
        Some(r) => r,
        None => {
            let mut s = String::from("...");
            s.extend(counts.iter().filter(|(_, &n)| n == 1).map(|(&c, _)| c));
            s
        }
    };
    let mut out = Vec::new();
    for c in out_labels.replace("...", ".").chars() {
        if c == '.' {
            out.extend_from_slice(&ellipsis);
        } else {
            match label_dim.get(&c) {
                Some(&d) => out.push(d),
                None => bail!("output label `{c}` is not in the inputs of `{eq}`"),
            }
        }
    }
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn det(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    if d.len() < 2 {
        bail!("input must have rank ≥ 2, got {}", fmt_dims(d));
    }
    merge_dim(d[d.len() - 2], d[d.len() - 1], "matrices must be square")?;
    ctx.set_output_dims(0, dt, &d[..d.len() - 2]);
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    // A MatMul with its epilogue: `Y = act(A·op(B) + bias + Z)` (bias over the last dim, Z of
    // Y's shape, both optional; op(B) swaps B's last two dims when `transB` is set), made by the
    // dense engine's optimizer.
    b.register(
        crate::proto::OpProto::new(super::conv::RGE_DOMAIN, "FusedMatMul", 1)
            .sig("A:T, B:T, bias?:T, Z?:T -> Y:T")
            .attrs(super::conv::EPILOGUE_ATTRS)
            .attrs("transB:int=0")
            .tc("T", FLOATS)
            .infer(fused_matmul)
            .format(FormatRule::Nd),
    )?;
    for v in [1, 9, 13] {
        b.register(
            op("MatMul", v)
                .sig("A:T, B:T -> Y:T")
                .tc("T", NUMERIC)
                .infer(matmul)
                .format(FormatRule::Nd),
        )?;
    }
    b.register(
        op("MatMulInteger", 10)
            .sig("A:T1, B:T2, a_zero_point?:T1, b_zero_point?:T2 -> Y:T3")
            .tc("T1", INTS)
            .tc("T2", INTS)
            .tc("T3", INT32_64)
            .infer(matmul_integer)
            .format(FormatRule::Nd),
    )?;
    for v in [10, 21] {
        b.register(
            op("QLinearMatMul", v)
                .sig("a:T1, a_scale:TS, a_zero_point:T1, b:T2, b_scale:TS, b_zero_point:T2, y_scale:TS, y_zero_point:T3 -> y:T3")
                .tc("T1", QUANT)
                .tc("T2", QUANT)
                .tc("T3", QUANT)
                .tc("TS", FLOATS)
                .infer(qlinear_matmul)
                .format(FormatRule::Nd),
        )?;
    }
    for v in [7, 9, 11, 13] {
        // `C` is optional from 11 on.
        b.register(
            op("Gemm", v)
                .sig(if v >= 11 {
                    "A:T, B:T, C?:T -> Y:T"
                } else {
                    "A:T, B:T, C:T -> Y:T"
                })
                .attrs("alpha:float=1.0, beta:float=1.0, transA:int=0, transB:int=0")
                .tc("T", NUMERIC)
                .infer(gemm)
                .format(FormatRule::Nd),
        )?;
    }
    b.register(
        op("Einsum", 12)
            .sig("Inputs*:T -> Output:T")
            .attrs("equation:string!")
            .tc("T", NUMERIC)
            .infer(einsum)
            .format(FormatRule::Nd),
    )?;
    for v in [11, 22] {
        b.register(
            op("Det", v)
                .sig("X:T -> Y:T")
                .tc("T", FLOATS)
                .infer(det)
                .format(FormatRule::Nd),
        )?;
    }
    Ok(())
}
