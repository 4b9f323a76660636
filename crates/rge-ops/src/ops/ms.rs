//! com.microsoft ops that onnxruntime's quantization and transformer tools emit (all since
//! version 1 of that domain), and SimplifiedLayerNormalization, which onnxruntime defines in the
//! default domain.

use rge_ir::{DataType, Shape};

use super::util::{all_unknown, broadcast2, fmt_dims};
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::OpProto;
use crate::registry::OpRegistryBuilder;

/// The com.microsoft domain.
pub const MS_DOMAIN: &str = "com.microsoft";

fn ms(op_type: &str) -> OpProto {
    OpProto::new(MS_DOMAIN, op_type, 1)
}

/// Output 0 (and any further outputs) shaped and typed as input 0.
fn like_input0(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    for i in 0..ctx.output_count() {
        ctx.set_output(i, x.dtype, x.shape.clone());
    }
    Ok(())
}

/// Output 0 shaped as input 0 with data type `dtype`.
fn like_input0_typed(ctx: &mut InferCtx<'_>, dtype: DataType) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    ctx.set_output(0, dtype, x.shape);
    Ok(())
}

/// Every output: input 0's type, shape unknown (data-dependent or not worth inferring).
fn typed_unknown(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    all_unknown(ctx, dt)
}

fn float_unknown(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    all_unknown(ctx, DataType::Float)
}

/// The broadcast of inputs `a` and `b` with input 0's type (Q ops put A at 0, B at 3).
fn qlinear_binary(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let a = ctx.input(0)?.clone();
    match (a.dims(), ctx.input(3)?.dims()) {
        (Some(x), Some(y)) => {
            let d = broadcast2(x, y)?;
            ctx.set_output_dims(0, a.dtype, &d);
        }
        _ => ctx.set_output(0, a.dtype, Shape::unknown_rank()),
    }
    Ok(())
}

/// BiasSplitGelu: [N, S, D] → [N, S, D/2].
fn bias_split_gelu(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    match x.dims() {
        Some(d) if !d.is_empty() => {
            let last = d[d.len() - 1];
            if last >= 0 && last % 2 != 0 {
                bail!("the last dim {last} of X is odd; it must split in two halves");
            }
            let mut o = d.to_vec();
            *o.last_mut().unwrap_or(&mut 0) = if last < 0 { -1 } else { last / 2 };
            ctx.set_output_dims(0, x.dtype, &o);
        }
        _ => ctx.set_output(0, x.dtype, Shape::unknown_rank()),
    }
    Ok(())
}

/// SkipLayerNormalization and its simplified form: output and input_skip_bias_sum as the
/// input; mean and inv_std_var float with unknown shape.
fn skip_norm(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    for i in 0..ctx.output_count() {
        if i == 1 || i == 2 {
            ctx.set_output(i, DataType::Float, Shape::unknown_rank());
        } else {
            ctx.set_output(i, x.dtype, x.shape.clone());
        }
    }
    Ok(())
}

/// EmbedLayerNormalization: output [B, S, H] (H from the word embedding), mask_index [B]
/// int32, embedding_sum like output.
fn embed_layer_norm(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let ids = ctx.input(0)?.clone();
    let emb = ctx.input(2)?.clone();
    let (b, s) = match ids.dims() {
        Some([b, s]) => (*b, *s),
        Some(d) => bail!("input_ids must be [batch, sequence], got {}", fmt_dims(d)),
        None => (-1, -1),
    };
    let h = match emb.dims() {
        Some([_, h]) => *h,
        _ => -1,
    };
    ctx.set_output_dims(0, emb.dtype, &[b, s, h]);
    if ctx.output_count() > 1 {
        ctx.set_output_dims(1, DataType::Int32, &[b]);
    }
    if ctx.output_count() > 2 {
        ctx.set_output_dims(2, emb.dtype, &[b, s, h]);
    }
    Ok(())
}

/// Attention: output [B, S, v_hidden] (v_hidden from `qkv_hidden_sizes` or a third of the
/// weights' columns); present unknown.
fn attention(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    let w = ctx.input(1)?.clone();
    let v_hidden = match ctx.attr_ints("qkv_hidden_sizes")? {
        Some([_, _, v]) => *v,
        Some(s) if !s.is_empty() => bail!("qkv_hidden_sizes must have 3 values, got {}", s.len()),
        _ => match w.dims() {
            Some([_, n]) if *n >= 0 => {
                if n % 3 != 0 {
                    bail!("weights have {n} columns, not a multiple of 3");
                }
                n / 3
            }
            _ => -1,
        },
    };
    match x.dims() {
        Some([b, s, _]) => ctx.set_output_dims(0, x.dtype, &[*b, *s, v_hidden]),
        Some(d) => bail!(
            "input must be [batch, sequence, hidden], got {}",
            fmt_dims(d)
        ),
        None => ctx.set_output(0, x.dtype, Shape::unknown_rank()),
    }
    for i in 1..ctx.output_count() {
        ctx.set_output(i, x.dtype, Shape::unknown_rank());
    }
    Ok(())
}

/// MultiHeadAttention / GroupQueryAttention: output [B, S, v_hidden]; the rest unknown.
fn mha(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let q = ctx.input(0)?.clone();
    for i in 0..ctx.output_count() {
        ctx.set_output(i, q.dtype, Shape::unknown_rank());
    }
    Ok(())
}

fn quantize(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx
        .opt_input(2)
        .map(|z| z.dtype)
        .filter(|d| *d != DataType::Undefined)
        .unwrap_or(DataType::Uint8);
    like_input0_typed(ctx, dt)
}

fn dequantize(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(1)?.dtype;
    like_input0_typed(ctx, dt)
}

/// QGemm: float output without y_scale, else y_zero_point's type (uint8 when absent).
fn qgemm(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = if ctx.opt_input(7).is_none() {
        DataType::Float
    } else {
        ctx.opt_input(8).map(|z| z.dtype).unwrap_or(DataType::Uint8)
    };
    all_unknown(ctx, dt)
}

fn simplified_layer_norm(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    ctx.set_output(0, x.dtype, x.shape.clone());
    for i in 1..ctx.output_count() {
        ctx.set_output(i, DataType::Float, Shape::unknown_rank());
    }
    Ok(())
}

const CONV_ATTRS: &str = "auto_pad:string=NOTSET, dilations:ints, group:int=1, kernel_shape:ints, pads:ints, strides:ints";

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    let q8 = &[DataType::Uint8, DataType::Int8][..];
    // Activations and their bias forms.
    b.register(
        ms("Gelu")
            .sig("X:T -> Y:T")
            .tc("T", FLOATS)
            .infer(like_input0),
    )?;
    b.register(
        ms("FastGelu")
            .sig("X:T, bias?:T -> Y:T")
            .tc("T", FLOATS)
            .infer(like_input0),
    )?;
    b.register(
        ms("BiasGelu")
            .sig("A:T, B:T -> C:T")
            .tc("T", FLOATS)
            .infer(like_input0),
    )?;
    b.register(
        ms("QuickGelu")
            .sig("X:T -> Y:T")
            .attrs("alpha:float=1.702")
            .tc("T", FLOATS)
            .infer(like_input0),
    )?;
    b.register(
        ms("BiasAdd")
            .sig("X:T, bias:T, skip:T -> Y:T")
            .tc("T", FLOATS)
            .infer(like_input0),
    )?;
    b.register(
        ms("BiasSplitGelu")
            .sig("X:T, bias:T -> Y:T")
            .tc("T", FLOATS)
            .infer(bias_split_gelu),
    )?;
    // Normalizations.
    b.register(
        ms("SkipLayerNormalization")
            .sig("input:T, skip:T, gamma:T, beta?:T, bias?:T -> output:T, mean?:U, inv_std_var?:U, input_skip_bias_sum?:T")
            .attrs("epsilon:float=1e-12")
            .tc("T", FLOATS)
            .tc("U", FLOAT32)
            .infer(skip_norm),
    )?;
    b.register(
        ms("SkipSimplifiedLayerNormalization")
            .sig("input:T, skip:T, gamma:T, bias?:T -> output:T, mean?:U, inv_std_var?:U, input_skip_bias_sum?:T")
            .attrs("epsilon:float=1e-12")
            .tc("T", FLOATS)
            .tc("U", FLOAT32)
            .infer(skip_norm),
    )?;
    b.register(
        OpProto::new("", "SimplifiedLayerNormalization", 1)
            .sig("X:T, scale:V -> Y:V, inv_std_var?:U")
            .attrs("axis:int=-1, epsilon:float=1e-5, stash_type:int=1")
            .tc("T", FLOATS)
            .tc("U", FLOATS)
            .tc("V", FLOATS)
            .infer(simplified_layer_norm),
    )?;
    b.register(
        ms("EmbedLayerNormalization")
            .sig("input_ids:T1, segment_ids?:T1, word_embedding:T, position_embedding:T, segment_embedding?:T, gamma:T, beta:T, mask?:T1, position_ids?:T1 -> output:T, mask_index:T1, embedding_sum?:T")
            .attrs("epsilon:float=1e-12, mask_index_type:int=1")
            .tc("T1", &[DataType::Int32])
            .tc("T", FLOATS)
            .infer(embed_layer_norm),
    )?;
    // Attention.
    b.register(
        ms("Attention")
            .sig("input:T, weights:T, bias?:T, mask_index?:M, past?:T, attention_bias?:T, past_sequence_length?:M -> output:T, present?:T")
            .attrs("do_rotary:int=0, mask_filter_value:float=-10000.0, num_heads:int!, past_present_share_buffer:int=0, qkv_hidden_sizes:ints, rotary_embedding_dim:int=0, scale:float=0.0, unidirectional:int=0")
            .tc("T", FLOATS)
            .tc("M", &[DataType::Int32])
            .infer(attention),
    )?;
    b.register(
        ms("MultiHeadAttention")
            .sig("query:T, key?:T, value?:T, bias?:T, key_padding_mask?:M, attention_bias?:T, past_key?:T, past_value?:T, past_sequence_length?:M, cache_indirection?:M -> output:T, present_key?:T, present_value?:T, qk?:T")
            .attrs("mask_filter_value:float=-10000.0, num_heads:int!, scale:float=0.0, unidirectional:int=0")
            .tc("T", FLOATS)
            .tc("M", &[DataType::Int32])
            .infer(mha),
    )?;
    b.register(
        ms("GroupQueryAttention")
            .sig("query:T, key?:T, value?:T, past_key?:T, past_value?:T, seqlens_k:M, total_sequence_length:M, cos_cache?:T, sin_cache?:T, position_ids?:P, attention_bias?:T, head_sink?:T -> output:T, present_key:T, present_value:T, output_qk?:T")
            .attrs("do_rotary:int=0, kv_num_heads:int!, local_window_size:int=-1, num_heads:int!, qk_output:int=0, rotary_interleaved:int=0, scale:float=0.0, smooth_softmax:int=0, softcap:float=0.0")
            .tc("T", FLOATS)
            .tc("M", &[DataType::Int32])
            .tc("P", INT64)
            .infer(mha),
    )?;
    b.register(
        ms("RotaryEmbedding")
            .sig("input:T, position_ids:M, cos_cache:T, sin_cache:T -> output:T")
            .attrs("interleaved:int=0, is_packed_batching:int=0, num_heads:int=0, rotary_embedding_dim:int=0, scale:float=1.0")
            .tc("T", FLOATS)
            .tc("M", INT64)
            .infer(like_input0),
    )?;
    // Fused matrix products and convolutions.
    b.register(
        ms("FusedConv")
            .sig("X:T, W:T, B?:T, Z?:T -> Y:T")
            .attrs(&format!(
                "{CONV_ATTRS}, activation:string, activation_params:floats"
            ))
            .tc("T", FLOATS)
            .infer(typed_unknown),
    )?;
    b.register(
        ms("NhwcConv")
            .sig("X:T, W:T, B?:T -> Y:T")
            .attrs(CONV_ATTRS)
            .tc("T", FLOATS)
            .infer(typed_unknown),
    )?;
    b.register(
        ms("FusedGemm")
            .sig("A:T, B:T, C?:T -> Y:T")
            .attrs("activation:string, activation_alpha:float=0.0, activation_beta:float=0.0, activation_gamma:float=0.0, alpha:float=1.0, beta:float=1.0, transA:int=0, transB:int=0")
            .tc("T", FLOATS)
            .infer(typed_unknown),
    )?;
    b.register(
        ms("FusedMatMul")
            .sig("A:T, B:T -> Y:T")
            .attrs(
                "alpha:float=1.0, transA:int=0, transB:int=0, transBatchA:int=0, transBatchB:int=0",
            )
            .tc("T", FLOATS)
            .infer(typed_unknown),
    )?;
    b.register(
        ms("Trilu")
            .sig("X:T, k?:K -> Y:T")
            .attrs("upper:int=1")
            .tc("T", ALL)
            .tc("K", INT64)
            .infer(like_input0),
    )?;
    b.register(
        ms("GatherND")
            .sig("data:T, indices:I -> output:T")
            .tc("T", ALL)
            .tc("I", INT32_64)
            .infer(typed_unknown),
    )?;
    // Quantization.
    b.register(
        ms("QuantizeLinear")
            .sig("x:F, y_scale:F, y_zero_point?:Q -> y:Q")
            .attrs("axis:int=1")
            .tc("F", FLOATS)
            .tc("Q", QUANT)
            .infer(quantize),
    )?;
    b.register(
        ms("DequantizeLinear")
            .sig("x:Q, x_scale:F, x_zero_point?:Q -> y:F")
            .attrs("axis:int=1")
            .tc("F", FLOATS)
            .tc("Q", QUANT)
            .infer(dequantize),
    )?;
    for op_type in ["QLinearAdd", "QLinearMul"] {
        b.register(
            ms(op_type)
                .sig("A:Q, A_scale:F, A_zero_point?:Q, B:Q, B_scale:F, B_zero_point?:Q, C_scale:F, C_zero_point?:Q -> C:Q")
                .tc("Q", q8)
                .tc("F", FLOAT32)
                .infer(qlinear_binary),
        )?;
    }
    b.register(
        ms("QLinearSigmoid")
            .sig("X:Q, X_scale:F, X_zero_point?:Q, Y_scale:F, Y_zero_point?:Q -> Y:Q")
            .tc("Q", q8)
            .tc("F", FLOAT32)
            .infer(like_input0),
    )?;
    b.register(
        ms("QLinearLeakyRelu")
            .sig("X:Q, X_scale:F, X_zero_point?:Q, Y_scale:F, Y_zero_point?:Q -> Y:Q")
            .attrs("alpha:float=0.01")
            .tc("Q", q8)
            .tc("F", FLOAT32)
            .infer(like_input0),
    )?;
    b.register(
        ms("QLinearConcat")
            .sig("Y_scale:F, Y_zero_point:Q, inputs+:V -> Y:Q")
            .attrs("axis:int!")
            .tc("F", FLOAT32)
            .tc("Q", q8)
            .tc("V", &[DataType::Uint8, DataType::Int8, DataType::Float])
            .infer(qconcat),
    )?;
    b.register(
        ms("QLinearGlobalAveragePool")
            .sig("X:Q, x_scale:F, x_zero_point?:Q, y_scale:F, y_zero_point?:Q -> Y:Q")
            .attrs("channels_last:int=0")
            .tc("Q", q8)
            .tc("F", FLOAT32)
            .infer(typed_unknown),
    )?;
    b.register(
        ms("QLinearAveragePool")
            .sig("X:Q, x_scale:F, x_zero_point?:Q, y_scale:F, y_zero_point?:Q -> Y:Q")
            .attrs("auto_pad:string=NOTSET, ceil_mode:int=0, channels_last:int=0, count_include_pad:int=0, kernel_shape:ints!, pads:ints, strides:ints")
            .tc("Q", q8)
            .tc("F", FLOAT32)
            .infer(typed_unknown),
    )?;
    b.register(
        ms("QGemm")
            .sig("A:TA, a_scale:F, a_zero_point:TA, B:TB, b_scale:F, b_zero_point:TB, C?:TC, y_scale?:F, y_zero_point?:TY -> Y:TY")
            .attrs("alpha:float=1.0, transA:int=0, transB:int=0")
            .tc("TA", q8)
            .tc("TB", q8)
            .tc("TC", &[DataType::Int32])
            .tc("F", FLOAT32)
            .tc("TY", &[DataType::Float, DataType::Uint8, DataType::Int8])
            .infer(qgemm),
    )?;
    b.register(
        ms("DynamicQuantizeMatMul")
            .sig("A:T1, B:T2, b_scale:T1, b_zero_point?:T2, bias?:T1 -> Y:T1")
            .tc("T1", FLOAT32)
            .tc("T2", q8)
            .infer(float_unknown),
    )?;
    b.register(
        ms("MatMulIntegerToFloat")
            .sig("A:T1, B:T2, a_scale:T3, b_scale:T3, a_zero_point?:T1, b_zero_point?:T2, bias?:T3 -> Y:T3")
            .tc("T1", q8)
            .tc("T2", q8)
            .tc("T3", FLOATS)
            .infer(matmul_integer_to_float),
    )?;
    b.register(
        ms("MatMulNBits")
            .sig("A:T1, B:T2, scales:T1, zero_points?:T3, g_idx?:T4, bias?:T1 -> Y:T1")
            .attrs("K:int!, N:int!, accuracy_level:int=0, bits:int=4, block_size:int!")
            .tc("T1", FLOATS)
            .tc("T2", &[DataType::Uint8, DataType::Int32])
            .tc(
                "T3",
                &[
                    DataType::Uint8,
                    DataType::Int32,
                    DataType::Float16,
                    DataType::Float,
                    DataType::Bf16,
                ],
            )
            .tc("T4", &[DataType::Int32])
            .infer(typed_unknown),
    )?;
    b.register(
        ms("DynamicQuantizeLSTM")
            .sig("X:T, W:T2, R:T2, B?:T, sequence_lens?:T1, initial_h?:T, initial_c?:T, P?:T, W_scale:T, W_zero_point:T2, R_scale:T, R_zero_point:T2 -> Y?:T, Y_h?:T, Y_c?:T")
            .attrs("activation_alpha:floats, activation_beta:floats, activations:strings, clip:float, direction:string=forward, hidden_size:int!, input_forget:int=0")
            .tc("T", FLOAT32)
            .tc("T1", &[DataType::Int32])
            .tc("T2", q8)
            .infer(typed_unknown),
    )?;
    Ok(())
}

fn qconcat(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(1)?.dtype;
    if (ctx.input_count() - 2) % 3 != 0 {
        bail!(
            "{} inputs after Y_scale and Y_zero_point do not form (tensor, scale, zero point) triples",
            ctx.input_count() - 2
        );
    }
    all_unknown(ctx, dt)
}

fn matmul_integer_to_float(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(2)?.dtype;
    all_unknown(ctx, dt)
}
