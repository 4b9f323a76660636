//! FLOP estimates from op types and the static shapes in op descs. Multiply-adds count two;
//! an unknown dim, a missing desc or an op type not listed gives 0.

use rge_ir::{ComputeGraph, NodeId, OpDesc, Shape};

/// The node's estimated FLOPs: convolutions and matrix products by their multiply-adds,
/// attention by its two batched products, pooling by window, elementwise ops and activations
/// by output elements, reductions by input elements, everything else 0.
pub fn node_flops(graph: &ComputeGraph, node: NodeId) -> u64 {
    graph.op(node).and_then(op_flops).unwrap_or(0)
}

fn op_flops(op: &OpDesc) -> Option<u64> {
    let t = op.op_type();
    match t {
        "Conv" | "ConvInteger" | "DeformConv" | "FusedConv" | "FusedConvNhwc" => conv(op, 1),
        "QLinearConv" => conv(op, 3),
        "ConvTranspose" => {
            // Every input element meets Cout/group · kernel weights.
            let x = elements(in_shape(op, 0)?)?;
            let w = in_shape(op, 1)?;
            mul(&[2, x, product(w.dims().get(1..)?)?])
        }
        "MatMul" | "MatMulInteger" | "QLinearMatMul" | "FusedMatMul" | "BatchMatMul"
        | "BatchMatMulV2" | "MatMulV2" => {
            let a = in_shape(op, 0)?;
            let k = dim(*a.dims().last()?)?;
            mul(&[2, elements(out_shape(op, 0)?)?, k])
        }
        "Gemm" => {
            let a = in_shape(op, 0)?;
            let trans_a = op.attrs().get_int("transA").ok().flatten().unwrap_or(0) != 0;
            let k = *a.dims().get(if trans_a { 0 } else { 1 })?;
            mul(&[2, elements(out_shape(op, 0)?)?, dim(k)?])
        }
        "Attention" | "MultiHeadAttention" | "ScaledDotProductAttention" => attention(op),
        "LSTM" => rnn(op, 4),
        "GRU" => rnn(op, 3),
        "RNN" => rnn(op, 1),
        "MaxPool" | "AveragePool" | "LpPool" => {
            let window = op.attrs().get_list_int("kernel_shape").ok().flatten()?;
            let window = product(window)?;
            mul(&[elements(out_shape(op, 0)?)?, window])
        }
        _ if is_reduction(t) => elements(in_shape(op, 0)?),
        _ if is_elementwise(t) => elements(out_shape(op, 0)?),
        _ => None,
    }
}

/// 2 · N · Cout · spatial_out · (Cin/group) · kernel = 2 · output elements · W[1..].
fn conv(op: &OpDesc, weight: usize) -> Option<u64> {
    let out = elements(out_shape(op, 0)?)?;
    let w = in_shape(op, weight)?;
    mul(&[2, out, product(w.dims().get(1..)?)?])
}

/// An RNN's input and recurrence products: X [seq, batch, in] (or [batch, seq, in] with
/// `layout` 1), W [dirs, gates·hidden, in], R [dirs, gates·hidden, hidden]:
/// 2 · seq · batch · dirs · gates·hidden · (in + hidden).
fn rnn(op: &OpDesc, gates: u64) -> Option<u64> {
    let x = in_shape(op, 0)?.dims();
    let w = in_shape(op, 1)?.dims();
    if x.len() != 3 || w.len() != 3 {
        return None;
    }
    let layout = op.attrs().get_int("layout").ok().flatten().unwrap_or(0);
    let (seq, batch) = if layout == 0 {
        (x[0], x[1])
    } else {
        (x[1], x[0])
    };
    let rows = dim(w[1])?;
    let hidden = rows / gates;
    mul(&[
        2,
        dim(seq)?,
        dim(batch)?,
        dim(w[0])?,
        rows,
        dim(x[2])?.checked_add(hidden)?,
    ])
}

/// Q·Kᵀ and A·V: 2·L·(Q elements) + 2·L·(Y elements), L the key length (K's dim -2 in both the
/// [B, H, L, D] and [B, L, H·D] layouts).
fn attention(op: &OpDesc) -> Option<u64> {
    let q = elements(in_shape(op, 0)?)?;
    let k = in_shape(op, 1)?;
    let rank = k.rank()?;
    if rank < 3 {
        return None;
    }
    let l = dim(k.dims()[rank - 2])?;
    let y = elements(out_shape(op, 0)?)?;
    mul(&[2, l, q.checked_add(y)?])
}

fn in_shape(op: &OpDesc, i: usize) -> Option<&Shape> {
    op.input(i).map(|d| d.shape())
}

fn out_shape(op: &OpDesc, i: usize) -> Option<&Shape> {
    op.output(i).map(|d| d.shape())
}

fn dim(d: i64) -> Option<u64> {
    u64::try_from(d).ok()
}

/// Elements of a fully known shape (1 for a scalar).
fn elements(s: &Shape) -> Option<u64> {
    if s.is_unknown_rank() {
        return None;
    }
    product(s.dims())
}

fn product(dims: &[i64]) -> Option<u64> {
    dims.iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(dim(d)?))
}

fn mul(factors: &[u64]) -> Option<u64> {
    factors.iter().try_fold(1u64, |acc, &f| acc.checked_mul(f))
}

fn is_reduction(t: &str) -> bool {
    t.starts_with("Reduce")
        || matches!(
            t,
            "ArgMax" | "ArgMin" | "GlobalAveragePool" | "GlobalMaxPool" | "GlobalLpPool"
        )
}

fn is_elementwise(t: &str) -> bool {
    matches!(
        t,
        // Arithmetic and comparison.
        "Add" | "Sub" | "Mul" | "Div" | "RealDiv" | "Pow" | "Mod" | "Max" | "Min" | "Sum"
            | "Mean" | "Neg" | "Abs" | "Reciprocal" | "Sqrt" | "Rsqrt" | "Exp" | "Log"
            | "Floor" | "Ceil" | "Round" | "Sign" | "Erf" | "Sin" | "Cos" | "Tan" | "Asin"
            | "Acos" | "Atan" | "Sinh" | "Cosh" | "Asinh" | "Acosh" | "Atanh" | "Equal"
            | "Less" | "LessOrEqual" | "Greater" | "GreaterOrEqual" | "And" | "Or" | "Xor"
            | "Not" | "Where" | "BitShift" | "BitwiseAnd" | "BitwiseOr" | "BitwiseXor"
            | "BitwiseNot" | "IsNaN" | "IsInf" | "Clip"
            // Activations.
            | "Relu" | "LeakyRelu" | "PRelu" | "Elu" | "Selu" | "Celu" | "Gelu" | "FastGelu"
            | "Sigmoid" | "HardSigmoid" | "HardSwish" | "Swish" | "Tanh" | "Softplus"
            | "Softsign" | "Mish" | "ThresholdedRelu" | "Shrink"
            // Normalizations and softmax: a few passes over the output.
            | "Softmax" | "LogSoftmax" | "Hardmax" | "BatchNormalization"
            | "LayerNormalization" | "InstanceNormalization" | "GroupNormalization"
            | "RMSNormalization" | "SimplifiedLayerNormalization" | "LpNormalization"
            | "MeanVarianceNormalization" | "LRN"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rnn_flops_count_the_input_and_recurrence_products() {
        // LSTM: seq 5, batch 2, input 3, hidden 4 (W rows 16), one direction.
        let f = flops(
            "LSTM",
            &[&[5, 2, 3], &[1, 16, 3], &[1, 16, 4]],
            &[5, 1, 2, 4],
            &[],
        );
        assert_eq!(f, 2 * 5 * 2 * 16 * (3 + 4));
        let f = flops(
            "GRU",
            &[&[5, 2, 3], &[2, 12, 3], &[2, 12, 4]],
            &[5, 2, 2, 4],
            &[],
        );
        assert_eq!(f, 2 * 5 * 2 * 2 * 12 * (3 + 4));
    }
    use rge_ir::{AttrValue, DataType, TensorDesc};

    fn desc(dims: &[i64]) -> TensorDesc {
        TensorDesc::with_shape_dtype(Shape::from_slice(dims), DataType::Float)
    }

    fn flops(op_type: &str, inputs: &[&[i64]], out: &[i64], attrs: &[(&str, AttrValue)]) -> u64 {
        let mut op = OpDesc::new("n", op_type);
        for (i, d) in inputs.iter().enumerate() {
            op.add_input(&format!("x{i}"), desc(d)).unwrap();
        }
        op.add_output("y", desc(out)).unwrap();
        for (k, v) in attrs {
            op.attrs_mut().set(*k, v.clone());
        }
        let mut g = ComputeGraph::new("g");
        let n = g.add_root_node(op).unwrap();
        node_flops(&g, n)
    }

    #[test]
    fn conv_counts_multiply_adds() {
        // 1x3x224x224 * 64x3x7x7, stride 2 -> 1x64x112x112.
        let f = flops(
            "Conv",
            &[&[1, 3, 224, 224], &[64, 3, 7, 7]],
            &[1, 64, 112, 112],
            &[],
        );
        assert_eq!(f, 2 * 64 * 112 * 112 * 3 * 7 * 7);
        // Depthwise: group 32, W 32x1x3x3.
        let f = flops(
            "Conv",
            &[&[1, 32, 8, 8], &[32, 1, 3, 3]],
            &[1, 32, 8, 8],
            &[],
        );
        assert_eq!(f, 2 * 32 * 64 * 9);
        // Transposed: 1x16x4x4 with W 16x8x2x2 -> 1x8x8x8.
        let f = flops(
            "ConvTranspose",
            &[&[1, 16, 4, 4], &[16, 8, 2, 2]],
            &[1, 8, 8, 8],
            &[],
        );
        assert_eq!(f, 2 * 16 * 16 * 8 * 4);
    }

    #[test]
    fn matmul_and_gemm() {
        let f = flops("MatMul", &[&[4, 8, 16], &[16, 32]], &[4, 8, 32], &[]);
        assert_eq!(f, 2 * 4 * 8 * 32 * 16);
        let f = flops("Gemm", &[&[10, 20], &[20, 30]], &[10, 30], &[]);
        assert_eq!(f, 2 * 10 * 30 * 20);
        let f = flops(
            "Gemm",
            &[&[20, 10], &[20, 30]],
            &[10, 30],
            &[("transA", AttrValue::Int(1))],
        );
        assert_eq!(f, 2 * 10 * 30 * 20);
    }

    #[test]
    fn attention_pooling_elementwise_reduction() {
        // Q 2x4x8x16, K 2x4x10x16 -> Y 2x4x8x16.
        let f = flops(
            "Attention",
            &[&[2, 4, 8, 16], &[2, 4, 10, 16], &[2, 4, 10, 16]],
            &[2, 4, 8, 16],
            &[],
        );
        assert_eq!(f, 2 * 2 * (2 * 4 * 8 * 10 * 16));
        let f = flops(
            "MaxPool",
            &[&[1, 8, 8, 8]],
            &[1, 8, 4, 4],
            &[("kernel_shape", AttrValue::ListInt(vec![2, 2]))],
        );
        assert_eq!(f, 8 * 16 * 4);
        assert_eq!(flops("Relu", &[&[2, 5]], &[2, 5], &[]), 10);
        assert_eq!(flops("Add", &[&[3, 1], &[1, 4]], &[3, 4], &[]), 12);
        assert_eq!(flops("ReduceSum", &[&[6, 7]], &[1, 7], &[]), 42);
        assert_eq!(flops("Reshape", &[&[6, 7], &[2]], &[42], &[]), 0);
    }

    #[test]
    fn unknown_dims_give_zero() {
        assert_eq!(flops("Relu", &[&[-1, 5]], &[-1, 5], &[]), 0);
        assert_eq!(flops("MatMul", &[&[-1, 16], &[16, 8]], &[-1, 8], &[]), 0);
        let mut g = ComputeGraph::new("g");
        let n = g.add_root_node(OpDesc::new("c", "Conv")).unwrap();
        assert_eq!(node_flops(&g, n), 0, "no descs");
    }
}
