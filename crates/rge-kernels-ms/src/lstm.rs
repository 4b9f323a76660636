//! DynamicQuantizeLSTM: an ONNX LSTM (gates i, o, f, c; sigmoid/tanh/tanh) whose weights are
//! int8/uint8, stored transposed (W [D, input, 4·hidden], R [D, hidden, 4·hidden]) with
//! per-tensor or per-column scales and zero points. As onnxruntime does, each product
//! quantizes its float operand dynamically (the whole X once, the hidden state at each step)
//! and multiplies in integers.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::qlinear::q_values;
use crate::qmatmul::{dynamic_quantize, int_matmul};
use crate::util::{f32s, opt_f32s, put_f32};

struct QuantLstm {
    hidden: usize,
    directions: Vec<bool>,
    clip: Option<f32>,
    input_forget: bool,
}

pub(crate) fn dynamic_quantize_lstm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let hidden = init.int("hidden_size")?;
    let hidden = usize::try_from(hidden)
        .ok()
        .filter(|&h| h > 0)
        .ok_or_else(|| {
            KernelError::attr("hidden_size", format!("must be positive, got {hidden}"))
        })?;
    let directions = match init.str_or("direction", "forward")? {
        "forward" => vec![false],
        "reverse" => vec![true],
        "bidirectional" => vec![false, true],
        other => {
            return Err(KernelError::attr(
                "direction",
                format!("`{other}` is not forward, reverse or bidirectional"),
            ))
        }
    };
    if let Some(a) = init.strings_opt("activations")? {
        let default = ["Sigmoid", "Tanh", "Tanh"];
        if a.iter()
            .enumerate()
            .any(|(i, s)| !s.eq_ignore_ascii_case(default[i % 3]))
        {
            return Err(KernelError::attr(
                "activations",
                format!("{a:?}: supported are the defaults Sigmoid, Tanh, Tanh"),
            ));
        }
    }
    let clip = init.float_opt("clip")?;
    if clip.is_some_and(|c| c.is_nan() || c <= 0.0) {
        return Err(KernelError::attr(
            "clip",
            format!("must be positive, got {clip:?}"),
        ));
    }
    Ok(Box::new(QuantLstm {
        hidden,
        directions,
        clip,
        input_forget: init.int_or("input_forget", 0)? != 0,
    }))
}

/// A quantized weight of one direction: values [rows, 4h], and per-column scale and zero point.
struct QWeight {
    q: Vec<i32>,
    scale: Vec<f32>,
    zp: Vec<i32>,
    rows: usize,
}

/// Direction `d` of the weight at inputs `[w, scale, zp]`, shaped `[dirs, rows, cols]`.
fn weight(
    ctx: &KernelCtx<'_>,
    [w, scale, zp]: [usize; 3],
    d: usize,
    [dirs, rows, cols]: [usize; 3],
) -> KernelResult<QWeight> {
    let t = ctx.input(w)?;
    if t.shape() != [dirs, rows, cols] {
        return Err(KernelError::invalid(format!(
            "input {w} is {:?}; need [{dirs}, {rows}, {cols}]",
            t.shape()
        )));
    }
    let all = q_values(&t)?;
    let q = all[d * rows * cols..(d + 1) * rows * cols].to_vec();
    let per_col = |v: Vec<f32>, what: &str| -> KernelResult<Vec<f32>> {
        match v.len() {
            n if n == dirs => Ok(vec![v[d]; cols]),
            n if n == dirs * cols => Ok(v[d * cols..(d + 1) * cols].to_vec()),
            n => Err(KernelError::invalid(format!(
                "{what} has {n} values; need {dirs} or {}",
                dirs * cols
            ))),
        }
    };
    let scale = per_col(f32s(ctx, scale)?, "the weight scale")?;
    let zp = per_col(
        q_values(&ctx.input(zp)?)?
            .into_iter()
            .map(|v| v as f32)
            .collect(),
        "the weight zero point",
    )?;
    Ok(QWeight {
        q,
        scale,
        zp: zp.into_iter().map(|v| v as i32).collect(),
        rows,
    })
}

/// x [m, rows] · W as float, with x quantized dynamically.
fn qgemm(x: &[f32], m: usize, w: &QWeight, cols: usize) -> Vec<f32> {
    let (xq, s, z) = dynamic_quantize(x);
    let acc = int_matmul(&xq, z, &w.q, &w.zp, m, w.rows, cols);
    acc.iter()
        .enumerate()
        .map(|(i, &v)| v as f32 * (s * w.scale[i % cols]))
        .collect()
}

fn sigmoid(v: f32) -> f32 {
    1.0 / (1.0 + (-v).exp())
}

impl Kernel for QuantLstm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x_t = ctx.input(0)?;
        let &[seq, batch, input] = x_t.shape() else {
            return Err(KernelError::invalid(format!(
                "X must be [seq, batch, input], got {:?}",
                x_t.shape()
            )));
        };
        let x = f32s(ctx, 0)?;
        let (h, dirs) = (self.hidden, self.directions.len());
        let g = 4 * h;
        let bias = opt_f32s(ctx, 3)?;
        let lens = match ctx.opt_input(4)? {
            Some(t) => t
                .to_i64_vec()?
                .into_iter()
                .map(|v| (v.max(0) as usize).min(seq))
                .collect(),
            None => vec![seq; batch],
        };
        if lens.len() != batch {
            return Err(KernelError::invalid(format!(
                "sequence_lens has {} values; batch is {batch}",
                lens.len()
            )));
        }
        let init_h = opt_f32s(ctx, 5)?;
        let init_c = opt_f32s(ctx, 6)?;
        let peep = opt_f32s(ctx, 7)?;
        for (what, v, n) in [
            ("B", &bias, dirs * 2 * g),
            ("initial_h", &init_h, dirs * batch * h),
            ("initial_c", &init_c, dirs * batch * h),
            ("P", &peep, dirs * 3 * h),
        ] {
            if v.as_ref().is_some_and(|v| v.len() != n) {
                return Err(KernelError::invalid(format!(
                    "{what} has {} values; need {n}",
                    v.as_ref().map_or(0, Vec::len)
                )));
            }
        }
        let mut y = vec![0f32; seq * dirs * batch * h];
        let mut yh = vec![0f32; dirs * batch * h];
        let mut yc = vec![0f32; dirs * batch * h];
        for (d, &reverse) in self.directions.iter().enumerate() {
            let w = weight(ctx, [1, 8, 9], d, [dirs, input, g])?;
            let r = weight(ctx, [2, 10, 11], d, [dirs, h, g])?;
            // X · W for every step at once (one quantization of X, as onnxruntime).
            let xw = qgemm(&x, seq * batch, &w, g);
            let mut hs = init_h.as_ref().map_or(vec![0f32; batch * h], |v| {
                v[d * batch * h..(d + 1) * batch * h].to_vec()
            });
            let mut cs = init_c.as_ref().map_or(vec![0f32; batch * h], |v| {
                v[d * batch * h..(d + 1) * batch * h].to_vec()
            });
            let b: Vec<f32> = match &bias {
                Some(bv) => (0..g)
                    .map(|j| bv[d * 2 * g + j] + bv[d * 2 * g + g + j])
                    .collect(),
                None => vec![0.0; g],
            };
            let p = peep.as_ref().map(|p| &p[d * 3 * h..(d + 1) * 3 * h]);
            for step in 0..seq {
                let t = if reverse { seq - 1 - step } else { step };
                let hr = qgemm(&hs, batch, &r, g);
                for bi in 0..batch {
                    let active = if reverse {
                        t < lens[bi]
                    } else {
                        step < lens[bi]
                    };
                    if !active {
                        continue;
                    }
                    // (x·W + b) + h·R, the order onnxruntime adds them in (the bias goes into
                    // the input projection, the recurrent product is accumulated onto it).
                    let pre = |gate: usize, j: usize| -> f32 {
                        (xw[(t * batch + bi) * g + gate * h + j] + b[gate * h + j])
                            + hr[bi * g + gate * h + j]
                    };
                    for j in 0..h {
                        let c_prev = cs[bi * h + j];
                        let clip = |v: f32| self.clip.map_or(v, |c| v.clamp(-c, c));
                        let pi = p.map_or(0.0, |p| p[j] * c_prev);
                        let pf = p.map_or(0.0, |p| p[2 * h + j] * c_prev);
                        let i = sigmoid(clip(pre(0, j) + pi));
                        let f = if self.input_forget {
                            1.0 - i
                        } else {
                            sigmoid(clip(pre(2, j) + pf))
                        };
                        let c_hat = clip(pre(3, j)).tanh();
                        let c = f * c_prev + i * c_hat;
                        let po = p.map_or(0.0, |p| p[h + j] * c);
                        let o = sigmoid(clip(pre(1, j) + po));
                        cs[bi * h + j] = c;
                        hs[bi * h + j] = o * c.tanh();
                        y[((t * dirs + d) * batch + bi) * h + j] = hs[bi * h + j];
                    }
                }
            }
            yh[d * batch * h..(d + 1) * batch * h].copy_from_slice(&hs);
            yc[d * batch * h..(d + 1) * batch * h].copy_from_slice(&cs);
        }
        if ctx.output_used(0) {
            put_f32(ctx, 0, &[seq, dirs, batch, h], y)?;
        }
        if ctx.output_used(1) {
            put_f32(ctx, 1, &[dirs, batch, h], yh)?;
        }
        if ctx.output_used(2) {
            put_f32(ctx, 2, &[dirs, batch, h], yc)?;
        }
        Ok(())
    }
}
