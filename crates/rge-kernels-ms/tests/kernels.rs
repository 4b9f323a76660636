//! Checks of the com.microsoft kernels on small hand-computed cases, and bad input (clear
//! errors, never a panic).

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    run_owned, DType, KernelInit, KernelRegistryBuilder, KernelResult, Tensor, Value,
};

fn run(
    op: &str,
    attrs: Vec<(&str, AttrValue)>,
    inputs: &[Option<Tensor>],
    outputs: usize,
) -> KernelResult<Vec<Option<Value>>> {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_ms::register(&mut b).expect("register");
    let registry = b.build();
    let attrs: AttrMap = attrs.into_iter().collect();
    let types: Vec<Option<DType>> = inputs
        .iter()
        .map(|t| t.as_ref().map(Tensor::dtype))
        .collect();
    let init = KernelInit {
        node_name: "n",
        op_type: op,
        domain: rge_kernels_ms::MS_DOMAIN,
        opset: 1,
        attrs: &attrs,
        input_types: &types,
        output_types: &[],
        subgraph_attrs: &[],
        constants: &[],
    };
    let kernel = registry.create(&init)?;
    let values: Vec<Option<Value>> = inputs
        .iter()
        .map(|t| t.clone().map(Value::Tensor))
        .collect();
    let refs: Vec<Option<&Value>> = values.iter().map(Option::as_ref).collect();
    run_owned(kernel.as_ref(), &refs, outputs, 1, None)
}

fn f(shape: &[usize], v: Vec<f32>) -> Option<Tensor> {
    Some(Tensor::from_vec(shape, v).unwrap())
}

fn out_f32(v: &[Option<Value>], i: usize) -> Vec<f32> {
    v[i].clone()
        .expect("output")
        .into_tensor()
        .expect("tensor")
        .as_slice::<f32>()
        .expect("f32")
        .to_vec()
}

fn err(r: KernelResult<Vec<Option<Value>>>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn skip_layer_norm_adds_and_normalizes() {
    let x = f(&[1, 2], vec![1.0, 2.0]);
    let skip = f(&[1, 2], vec![1.0, 0.0]);
    let gamma = f(&[2], vec![1.0, 1.0]);
    let beta = f(&[2], vec![0.5, 0.5]);
    let out = run(
        "SkipLayerNormalization",
        vec![("epsilon", AttrValue::Float(0.0))],
        &[x, skip, gamma, beta],
        4,
    )
    .unwrap();
    // input_skip_bias_sum (output 3) is input + skip.
    assert_eq!(out_f32(&out, 3), vec![2.0, 2.0]);
    let x = f(&[1, 2], vec![1.0, 3.0]);
    let skip = f(&[1, 2], vec![0.0, 0.0]);
    let out = run(
        "SkipLayerNormalization",
        vec![("epsilon", AttrValue::Float(0.0))],
        &[x, skip, f(&[2], vec![2.0, 2.0]), f(&[2], vec![0.5, 0.5])],
        1,
    )
    .unwrap();
    assert_eq!(out_f32(&out, 0), vec![-1.5, 2.5]);
}

#[test]
fn fused_matmul_transposes_and_scales() {
    let a = f(&[2, 1], vec![1.0, 2.0]);
    let b = f(&[1, 2], vec![3.0, 4.0]);
    let attrs = vec![
        ("transA", AttrValue::Int(1)),
        ("transB", AttrValue::Int(1)),
        ("alpha", AttrValue::Float(0.5)),
    ];
    let out = run("FusedMatMul", attrs, &[a, b], 1).unwrap();
    assert_eq!(out_f32(&out, 0), vec![5.5]);
}

#[test]
fn gamma_of_the_wrong_length_is_an_error() {
    let x = f(&[1, 3], vec![1.0, 2.0, 3.0]);
    let e = err(run(
        "SkipLayerNormalization",
        vec![],
        &[x.clone(), x, f(&[2], vec![1.0, 1.0])],
        1,
    ));
    assert!(e.contains("gamma has 2 values"), "{e}");
}

#[test]
fn an_embedding_id_outside_the_table_is_an_error() {
    let ids = Some(Tensor::from_vec(&[1, 2], vec![0i32, 9]).unwrap());
    let table = f(&[2, 2], vec![0.0; 4]);
    let g = f(&[2], vec![1.0, 1.0]);
    let e = err(run(
        "EmbedLayerNormalization",
        vec![],
        &[ids, None, table.clone(), table, None, g.clone(), g],
        2,
    ));
    assert!(e.contains("word_embedding index 9"), "{e}");
}

#[test]
fn matmul_nbits_blob_that_does_not_fit_is_an_error() {
    let attrs = vec![
        ("K", AttrValue::Int(32)),
        ("N", AttrValue::Int(2)),
        ("bits", AttrValue::Int(4)),
        ("block_size", AttrValue::Int(16)),
    ];
    let a = f(&[1, 32], vec![0.0; 32]);
    let b = Some(Tensor::from_vec(&[2, 2, 4], vec![0u8; 16]).unwrap());
    let s = f(&[4], vec![1.0; 4]);
    let e = err(run("MatMulNBits", attrs, &[a, b, s], 1));
    assert!(e.contains("need uint8 [2, 2, 8]"), "{e}");
}

#[test]
fn qlinear_add_rounds_half_to_even() {
    // (4 - 0)·0.5/1 + (1 - 0)·0.5/1 = 2.5 → 2; zero point 10.
    let q = |v: u8| Some(Tensor::from_vec(&[1], vec![v]).unwrap());
    let s = |v: f32| f(&[], vec![v]);
    let out = run(
        "QLinearAdd",
        vec![],
        &[q(4), s(0.5), q(0), q(1), s(0.5), q(0), s(1.0), q(10)],
        1,
    )
    .unwrap();
    let t = out[0].clone().unwrap().into_tensor().unwrap();
    assert_eq!(t.as_slice::<u8>().unwrap(), &[12]);
}
