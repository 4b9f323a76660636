//! The dense engine's Attention against the `cpu` engine's on random shapes: batch, heads,
//! query and key lengths, head sizes (Q·Kᵀ and V's may differ), no mask, bool and additive
//! masks of every broadcast rank (with −∞ and −10000 entries, and fully masked rows), causal
//! masking, explicit and default scale, 1 and 2 threads; and the calls its fast path does not
//! take (3-D inputs with grouped heads), which run the general kernel. Max relative error 1e-4.

use proptest::prelude::*;
use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{run_owned, DType, Kernel, KernelInit, KernelRegistryBuilder, Tensor, Value};

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 4.0 - 2.0
        })
        .collect()
}

fn tensor(shape: &[usize], seed: u64) -> Tensor {
    Tensor::from_vec(shape, values(shape.iter().product(), seed)).unwrap()
}

fn init<'a>(attrs: &'a AttrMap, types: &'a [Option<DType>]) -> KernelInit<'a> {
    KernelInit {
        node_name: "attention",
        op_type: "Attention",
        domain: "",
        opset: 23,
        attrs,
        input_types: types,
        output_types: &[Some(DType::Float)],
        subgraph_attrs: &[],
        constants: &[],
    }
}

fn run(k: &dyn Kernel, inputs: &[Option<Tensor>], threads: usize) -> Vec<f32> {
    let vals: Vec<Option<Value>> = inputs.iter().map(|t| t.clone().map(Value::from)).collect();
    let refs: Vec<Option<&Value>> = vals.iter().map(Option::as_ref).collect();
    let out = run_owned(k, &refs, 1, threads, None).unwrap();
    out[0]
        .as_ref()
        .unwrap()
        .as_tensor()
        .unwrap()
        .as_slice::<f32>()
        .unwrap()
        .to_vec()
}

/// Dense against cpu on `inputs` with `attrs`, 1 and 2 threads.
fn check(attrs: &AttrMap, inputs: &[Option<Tensor>]) -> Result<(), String> {
    let types: Vec<Option<DType>> = inputs
        .iter()
        .map(|t| t.as_ref().map(Tensor::dtype))
        .collect();
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_sequence::register(&mut b).unwrap();
    let reg = b.build();
    let cpu = reg.get("", "Attention").unwrap()(&init(attrs, &types)).unwrap();
    let want = run(cpu.as_ref(), inputs, 1);
    let dense = rge_dense::attention::create_attention(&init(attrs, &types)).unwrap();
    for threads in [1, 2] {
        let got = run(dense.as_ref(), inputs, threads);
        if got.len() != want.len() {
            return Err(format!("{} values, want {}", got.len(), want.len()));
        }
        let scale = want.iter().fold(1e-3f32, |m, v| m.max(v.abs()));
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let ok = (g - w).abs() <= 1e-4 * scale.max(w.abs()) || (g.is_nan() && w.is_nan());
            if !ok {
                return Err(format!("{threads} threads, element {i}: {g} vs {w}"));
            }
        }
    }
    Ok(())
}

/// A mask of `dims`: bool (true attends, about 1 in 4 masked) or additive (0, −10000 or −∞);
/// `full_row` masks the first row everywhere.
fn mask(dims: &[usize], bool_mask: bool, full_row: bool, seed: u64) -> Tensor {
    let n: usize = dims.iter().product();
    let last = *dims.last().unwrap();
    let r = values(n, seed);
    let masked = |i: usize| r[i] < -1.0 || (full_row && i < last);
    if bool_mask {
        let v: Vec<bool> = (0..n).map(|i| !masked(i)).collect();
        Tensor::from_vec(dims, v).unwrap()
    } else {
        let v: Vec<f32> = (0..n)
            .map(|i| match (masked(i), i % 2) {
                (false, _) => r[i] * 0.5,
                (true, 0) => -10000.0,
                (true, _) => f32::NEG_INFINITY,
            })
            .collect();
        Tensor::from_vec(dims, v).unwrap()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn attention_matches_the_reference(
        (b, h, lq, lk) in (1usize..3, 1usize..4, 1usize..40, 1usize..40),
        (d, dv) in (1usize..70, 1usize..40),
        mask_kind in 0usize..5,
        bool_mask: bool,
        full_row: bool,
        causal: bool,
        scale in prop::sample::select(vec![None, Some(0.3f32), Some(1.0)]),
        seed in any::<u64>(),
    ) {
        let mut attrs = AttrMap::new();
        attrs.set("is_causal", i64::from(causal));
        if let Some(s) = scale {
            attrs.set("scale", s);
        }
        let mut inputs = vec![
            Some(tensor(&[b, h, lq, d], seed)),
            Some(tensor(&[b, h, lk, d], seed ^ 1)),
            Some(tensor(&[b, h, lk, dv], seed ^ 2)),
        ];
        let dims = match mask_kind {
            0 => None,
            1 => Some(vec![lk]),
            2 => Some(vec![lq, lk]),
            3 => Some(vec![b, 1, 1, lk]),
            _ => Some(vec![b, h, lq, lk]),
        };
        if let Some(dims) = dims {
            inputs.push(Some(mask(&dims, bool_mask, full_row, seed ^ 3)));
        }
        check(&attrs, &inputs).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn grouped_heads_in_3d_run_the_general_kernel() {
    let (b, s, hq, hkv, d) = (2, 5, 4, 2, 3);
    let mut attrs = AttrMap::new();
    attrs.set("q_num_heads", AttrValue::Int(hq as i64));
    attrs.set("kv_num_heads", AttrValue::Int(hkv as i64));
    let inputs = vec![
        Some(tensor(&[b, s, hq * d], 1)),
        Some(tensor(&[b, s, hkv * d], 2)),
        Some(tensor(&[b, s, hkv * d], 3)),
    ];
    check(&attrs, &inputs).unwrap();
}
