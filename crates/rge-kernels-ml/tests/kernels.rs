//! Checks of the ai.onnx.ml kernels on small hand-computed models, and bad attributes (clear
//! errors naming the attribute, never a panic).

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    run_owned, DType, KernelInit, KernelRegistryBuilder, KernelResult, Tensor, Value,
};

fn run(
    op: &str,
    attrs: Vec<(&str, AttrValue)>,
    inputs: &[Tensor],
    outputs: usize,
) -> KernelResult<Vec<Option<Value>>> {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_ml::register(&mut b).expect("register");
    // LabelEncoder lives in the misc family.
    rge_kernels_misc::register(&mut b).expect("register");
    let registry = b.build();
    let attrs: AttrMap = attrs.into_iter().collect();
    let types: Vec<Option<DType>> = inputs.iter().map(|t| Some(t.dtype())).collect();
    let init = KernelInit {
        node_name: "n",
        op_type: op,
        domain: rge_kernels_ml::ML_DOMAIN,
        opset: 3,
        attrs: &attrs,
        input_types: &types,
        output_types: &[],
        subgraph_attrs: &[],
        constants: &[],
    };
    let kernel = registry.create(&init)?;
    let values: Vec<Value> = inputs.iter().cloned().map(Value::Tensor).collect();
    let refs: Vec<Option<&Value>> = values.iter().map(Some).collect();
    run_owned(kernel.as_ref(), &refs, outputs, 1, None)
}

fn out_f32(v: &[Option<Value>], i: usize) -> Vec<f32> {
    let t = v[i].clone().expect("output").into_tensor().expect("tensor");
    t.as_slice::<f32>().expect("f32").to_vec()
}

fn ints(v: &[i64]) -> AttrValue {
    AttrValue::ListInt(v.to_vec())
}

fn floats(v: &[f32]) -> AttrValue {
    AttrValue::ListFloat(v.to_vec())
}

fn strings(v: &[&str]) -> AttrValue {
    AttrValue::ListString(v.iter().map(|s| s.to_string()).collect())
}

/// Two one-split trees over features 0 and 1: x0 <= 0.5 → 1 else 2; x1 > 0 → 10 else 20.
fn two_trees() -> Vec<(&'static str, AttrValue)> {
    vec![
        ("nodes_treeids", ints(&[0, 0, 0, 1, 1, 1])),
        ("nodes_nodeids", ints(&[0, 1, 2, 0, 1, 2])),
        ("nodes_featureids", ints(&[0, 0, 0, 1, 0, 0])),
        ("nodes_values", floats(&[0.5, 0.0, 0.0, 0.0, 0.0, 0.0])),
        (
            "nodes_modes",
            strings(&["BRANCH_LEQ", "LEAF", "LEAF", "BRANCH_GT", "LEAF", "LEAF"]),
        ),
        ("nodes_truenodeids", ints(&[1, 0, 0, 1, 0, 0])),
        ("nodes_falsenodeids", ints(&[2, 0, 0, 2, 0, 0])),
        ("target_treeids", ints(&[0, 0, 1, 1])),
        ("target_nodeids", ints(&[1, 2, 1, 2])),
        ("target_ids", ints(&[0, 0, 0, 0])),
        ("target_weights", floats(&[1.0, 2.0, 10.0, 20.0])),
    ]
}

#[test]
fn tree_regressor_sums_and_averages_the_leaves() {
    let x = Tensor::from_vec(&[2, 2], vec![0.0f32, 1.0, 1.0, -1.0]).unwrap();
    let sum = run(
        "TreeEnsembleRegressor",
        two_trees(),
        std::slice::from_ref(&x),
        1,
    )
    .unwrap();
    assert_eq!(out_f32(&sum, 0), vec![11.0, 22.0]);
    let mut attrs = two_trees();
    attrs.push(("aggregate_function", AttrValue::String("AVERAGE".into())));
    attrs.push(("base_values", floats(&[0.5])));
    let avg = run("TreeEnsembleRegressor", attrs, &[x], 1).unwrap();
    assert_eq!(out_f32(&avg, 0), vec![6.0, 11.5]);
}

fn err(r: KernelResult<Vec<Option<Value>>>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn tree_arrays_of_different_lengths_are_an_error() {
    let mut attrs = two_trees();
    attrs.retain(|(k, _)| *k != "nodes_values");
    attrs.push(("nodes_values", floats(&[0.5, 0.0, 0.0])));
    let x = Tensor::from_vec(&[1, 2], vec![0.0f32, 1.0]).unwrap();
    let e = err(run("TreeEnsembleRegressor", attrs, &[x], 1));
    assert!(e.contains("nodes_values") && e.contains("3 values"), "{e}");
}

#[test]
fn a_child_outside_the_tree_is_an_error() {
    let mut attrs = two_trees();
    attrs.retain(|(k, _)| *k != "nodes_falsenodeids");
    attrs.push(("nodes_falsenodeids", ints(&[7, 0, 0, 2, 0, 0])));
    let x = Tensor::from_vec(&[1, 2], vec![0.0f32, 1.0]).unwrap();
    let e = err(run("TreeEnsembleRegressor", attrs, &[x], 1));
    assert!(e.contains("points to node 7"), "{e}");
}

#[test]
fn a_cycle_is_an_error() {
    let mut attrs = two_trees();
    attrs.retain(|(k, _)| *k != "nodes_truenodeids");
    attrs.push(("nodes_truenodeids", ints(&[0, 0, 0, 1, 0, 0])));
    let x = Tensor::from_vec(&[1, 2], vec![0.0f32, 1.0]).unwrap();
    let e = err(run("TreeEnsembleRegressor", attrs, &[x], 1));
    assert!(e.contains("cycle"), "{e}");
}

#[test]
fn too_few_features_is_an_error() {
    let x = Tensor::from_vec(&[1, 1], vec![0.0f32]).unwrap();
    let e = err(run("TreeEnsembleRegressor", two_trees(), &[x], 1));
    assert!(e.contains("feature 1") && e.contains("1 features"), "{e}");
}

#[test]
fn linear_classifier_picks_the_best_class_and_softmaxes() {
    let attrs = vec![
        ("coefficients", floats(&[1.0, 0.0, 0.0, 1.0])),
        ("intercepts", floats(&[0.0, 0.0])),
        ("classlabels_ints", ints(&[5, 7])),
        ("post_transform", AttrValue::String("SOFTMAX".into())),
    ];
    let x = Tensor::from_vec(&[1, 2], vec![2.0f32, 0.0]).unwrap();
    let out = run("LinearClassifier", attrs, &[x], 2).unwrap();
    let label = out[0].clone().unwrap().into_tensor().unwrap();
    assert_eq!(label.as_slice::<i64>().unwrap(), &[5]);
    let s = out_f32(&out, 1);
    let e = (2.0f32).exp();
    assert!(
        (s[0] - e / (e + 1.0)).abs() < 1e-6 && (s[1] - 1.0 / (e + 1.0)).abs() < 1e-6,
        "{s:?}"
    );
}

#[test]
fn category_mapper_lists_of_different_lengths_are_an_error() {
    let attrs = vec![
        ("cats_strings", strings(&["a", "b"])),
        ("cats_int64s", ints(&[1])),
    ];
    let x = Tensor::from_strings(&[1], vec!["a".into()]).unwrap();
    let e = err(run("CategoryMapper", attrs, &[x], 1));
    assert!(e.contains("cats_int64s"), "{e}");
}

#[test]
fn svm_sizes_that_do_not_fit_are_an_error() {
    let attrs = vec![
        ("classlabels_ints", ints(&[0, 1, 2])),
        ("vectors_per_class", ints(&[1, 1, 1])),
        ("support_vectors", floats(&[0.0; 6])),
        ("coefficients", floats(&[1.0])),
        ("rho", floats(&[0.0, 0.0, 0.0])),
    ];
    let x = Tensor::from_vec(&[1, 2], vec![0.0f32, 1.0]).unwrap();
    let e = err(run("SVMClassifier", attrs, &[x], 2));
    assert!(e.contains("coefficients"), "{e}");
}

#[test]
fn label_encoder_keys_and_values_of_different_counts_are_an_error() {
    let attrs = vec![
        ("keys_strings", strings(&["a", "b", "c"])),
        ("values_int64s", ints(&[1, 2])),
    ];
    let x = Tensor::from_strings(&[1], vec!["a".into()]).unwrap();
    let e = err(run("LabelEncoder", attrs, &[x], 1));
    assert!(e.contains("3 keys but 2 values"), "{e}");
}
