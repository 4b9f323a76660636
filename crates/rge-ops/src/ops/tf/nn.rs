//! TF-dialect nn ops: Conv2D, DepthwiseConv2dNative, BiasAdd, AvgPool, MaxPool,
//! FusedBatchNorm(V3), Softmax, the activations and the matrix products.

use rge_ir::DataType;

use super::super::util::*;
use super::window::{spatial4, DataFormat, Window};
use super::{add, flag, tf_op};
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpError, OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::FormatRule;
use crate::registry::OpRegistryBuilder;

fn e(s: String) -> OpError {
    OpError(s)
}

/// The [N, H, W, C] dims of a rank-4 input in `format` (`None` for an unknown rank).
fn nhwc(ctx: &InferCtx<'_>, i: usize, f: DataFormat, what: &str) -> OpResult<Option<[i64; 4]>> {
    match ctx.input(i)?.dims() {
        None => Ok(None),
        Some(d) if d.len() == 4 => {
            let (h, w, c) = f.axes();
            Ok(Some([d[0], d[h], d[w], d[c]]))
        }
        Some(d) => bail!("{what} must have rank 4, got shape {}", fmt_dims(d)),
    }
}

fn layout(f: DataFormat, n: i64, h: i64, w: i64, c: i64) -> [i64; 4] {
    match f {
        DataFormat::Nhwc => [n, h, w, c],
        DataFormat::Nchw => [n, c, h, w],
    }
}

/// Conv2D (filter HWIO, grouped when I divides C) and DepthwiseConv2dNative (filter HWCM).
fn conv2d(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let win = Window::from_attrs(ctx.attrs()).map_err(e)?;
    let dt = ctx.input(0)?.dtype;
    let Some([n, h, w, c]) = nhwc(ctx, 0, win.format, "x")? else {
        return all_unknown(ctx, dt);
    };
    let f = match ctx.input(1)?.dims() {
        Some(f) if f.len() == 4 => f.to_vec(),
        Some(f) => bail!("filter must have rank 4 (HWIO), got shape {}", fmt_dims(f)),
        None => vec![-1; 4],
    };
    let depthwise = ctx.op_type() == "DepthwiseConv2dNative";
    let out_c = if depthwise {
        merge_dim(
            c,
            f[2],
            "the filter's channel dim (2) must equal the input's channels",
        )?;
        if f[2] >= 0 && f[3] >= 0 {
            f[2] * f[3]
        } else {
            -1
        }
    } else {
        if c > 0 && f[2] > 0 && c % f[2] != 0 {
            bail!(
                "the input's {c} channels are not a multiple of the filter's input channels {}",
                f[2]
            );
        }
        f[3]
    };
    let ah = win.axis(0, h, f[0]).map_err(e)?;
    let aw = win.axis(1, w, f[1]).map_err(e)?;
    ctx.set_output_dims(0, dt, &layout(win.format, n, ah.out, aw.out, out_c));
    Ok(())
}

fn pool(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let win = Window::from_attrs(ctx.attrs()).map_err(e)?;
    let k = spatial4(ctx.attrs(), "ksize", win.format, None).map_err(e)?;
    let dt = ctx.input(0)?.dtype;
    let Some([n, h, w, c]) = nhwc(ctx, 0, win.format, "x")? else {
        return all_unknown(ctx, dt);
    };
    let ah = win.axis(0, h, k[0]).map_err(e)?;
    let aw = win.axis(1, w, k[1]).map_err(e)?;
    ctx.set_output_dims(0, dt, &layout(win.format, n, ah.out, aw.out, c));
    Ok(())
}

fn bias_add(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let f = DataFormat::from_attrs(ctx.attrs()).map_err(e)?;
    let x = ctx.input(0)?.clone();
    if let (Some(d), Some(b)) = (x.dims(), ctx.input(1)?.dims()) {
        let [nb] = b else {
            bail!("bias must be 1-D, got shape {}", fmt_dims(b));
        };
        if d.len() < 2 {
            bail!("value must have rank ≥ 2, got shape {}", fmt_dims(d));
        }
        let c = if f == DataFormat::Nchw {
            d[1]
        } else {
            d[d.len() - 1]
        };
        merge_dim(c, *nb, "the bias length must equal the channel dim")?;
    }
    ctx.set_output(0, x.dtype, x.shape);
    Ok(())
}

fn fused_batch_norm(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let f = DataFormat::from_attrs(ctx.attrs()).map_err(e)?;
    let x = ctx.input(0)?.clone();
    let mut c = nhwc(ctx, 0, f, "x")?.map_or(-1, |d| d[3]);
    for (i, what) in [(1, "scale"), (2, "offset"), (3, "mean"), (4, "variance")] {
        match ctx.opt_input(i).and_then(|t| t.dims()) {
            Some([k]) => c = merge_dim(c, *k, &format!("{what} must have one value per channel"))?,
            // TF allows empty mean/variance when training.
            Some([]) | None => {}
            Some(d) => bail!("{what} must be 1-D, got shape {}", fmt_dims(d)),
        }
    }
    ctx.set_output(0, x.dtype, x.shape);
    for i in 1..ctx.output_count() {
        ctx.set_output_dims(i, DataType::Float, &[c]);
    }
    Ok(())
}

fn same_as_input(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    ctx.set_output(0, x.dtype, x.shape);
    Ok(())
}

fn softmax(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    if let Some(d) = ctx.input(0)?.dims() {
        if d.is_empty() {
            bail!("logits must have rank ≥ 1");
        }
    }
    same_as_input(ctx)
}

/// The product dims with TF's (or GE's) transpose / adjoint flags.
fn matmul(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let batch = ctx.op_type().starts_with("BatchMatMul");
    let (ta, tb) = if batch {
        (
            flag(ctx.attrs(), &["adj_x", "adj_x1"]).map_err(e)?,
            flag(ctx.attrs(), &["adj_y", "adj_x2"]).map_err(e)?,
        )
    } else {
        (
            flag(ctx.attrs(), &["transpose_a", "transpose_x1"]).map_err(e)?,
            flag(ctx.attrs(), &["transpose_b", "transpose_x2"]).map_err(e)?,
        )
    };
    let dt = ctx.input(0)?.dtype;
    let (Some(a), Some(b)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    if a.len() < 2 || b.len() < 2 || (!batch && (a.len() != 2 || b.len() != 2)) {
        bail!(
            "{} needs {} inputs, got {} and {}",
            ctx.op_type(),
            if batch { "rank ≥ 2" } else { "2-D" },
            fmt_dims(a),
            fmt_dims(b)
        );
    }
    let t = |d: &[i64], tr: bool| {
        let (r, c) = (d[d.len() - 2], d[d.len() - 1]);
        if tr {
            (c, r)
        } else {
            (r, c)
        }
    };
    let (m, k1) = t(a, ta);
    let (k2, n) = t(b, tb);
    merge_dim_with(k1, k2, || {
        format!("inner dims of {} @ {} differ", fmt_dims(a), fmt_dims(b))
    })?;
    let mut out = broadcast2(&a[..a.len() - 2], &b[..b.len() - 2])?;
    out.push(m);
    out.push(n);
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    let window = "strides:ints!, padding:string, explicit_paddings:ints, pads:ints, \
                  dilations:ints, data_format:string";
    for name in ["Conv2D", "DepthwiseConv2dNative"] {
        add(
            b,
            tf_op(name)
                .sig("x:T, filter:T, bias?:T, offset_w?:T -> y:T")
                .attrs(window)
                .attrs("groups:int=1, offset_x:int=0")
                .tc("T", FLOATS)
                .infer(conv2d)
                .format(FormatRule::Spatial),
        )?;
    }
    for name in ["AvgPool", "MaxPool"] {
        add(
            b,
            tf_op(name)
                .sig("x:T -> y:T")
                .attrs("ksize:ints!")
                .attrs(window)
                .tc("T", NUMERIC)
                .infer(pool)
                .format(FormatRule::Spatial),
        )?;
    }
    add(
        b,
        tf_op("BiasAdd")
            .sig("x:T, bias:T -> y:T")
            .attrs("data_format:string")
            .tc("T", NUMERIC)
            .infer(bias_add)
            .format(FormatRule::Spatial),
    )?;
    for (name, outs) in [
        (
            "FusedBatchNorm",
            "y:T, batch_mean:U, batch_variance:U, reserve_space_1:U, reserve_space_2:U",
        ),
        (
            "FusedBatchNormV3",
            "y:T, batch_mean:U, batch_variance:U, reserve_space_1:U, reserve_space_2:U, \
             reserve_space_3:U",
        ),
    ] {
        add(
            b,
            tf_op(name)
                .sig(&format!(
                    "x:T, scale:U, offset:U, mean?:U, variance?:U -> {outs}"
                ))
                .attrs(
                    "epsilon:float=0.0001, exponential_avg_factor:float=1.0, \
                     data_format:string, is_training:int=1",
                )
                .tc("T", FLOATS)
                .tc("U", FLOAT32)
                .infer(fused_batch_norm)
                .format(FormatRule::Spatial),
        )?;
    }
    add(
        b,
        tf_op("Softmax")
            .sig("x:T -> y:T")
            .tc("T", FLOATS)
            .infer(softmax),
    )?;
    for (name, attrs) in [
        ("Relu", ""),
        ("Relu6", ""),
        ("Elu", ""),
        ("Selu", ""),
        ("LeakyRelu", "alpha:float=0.2"),
    ] {
        add(
            b,
            tf_op(name)
                .sig("x:T -> y:T")
                .attrs(attrs)
                .tc("T", SIGNED_NUMERIC)
                .infer(same_as_input),
        )?;
    }
    for (name, attrs) in [
        (
            "MatMul",
            "transpose_a:int=0, transpose_b:int=0, transpose_x1:int=0, transpose_x2:int=0",
        ),
        (
            "MatMulV2",
            "transpose_a:int=0, transpose_b:int=0, transpose_x1:int=0, transpose_x2:int=0",
        ),
        (
            "BatchMatMul",
            "adj_x:int=0, adj_y:int=0, adj_x1:int=0, adj_x2:int=0",
        ),
        (
            "BatchMatMulV2",
            "adj_x:int=0, adj_y:int=0, adj_x1:int=0, adj_x2:int=0",
        ),
    ] {
        add(
            b,
            tf_op(name)
                .sig("x1:T, x2:T -> y:T")
                .attrs(attrs)
                .tc("T", NUMERIC)
                .infer(matmul)
                .format(FormatRule::Nd),
        )?;
    }
    Ok(())
}
