//! The map ops on hand-built maps: values in the right places, and bad maps and attributes
//! as clear errors, never panics.

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    run_owned, DType, KernelInit, KernelRegistryBuilder, KernelResult, MapValue, Tensor, Value,
};

fn run(op: &str, attrs: Vec<(&str, AttrValue)>, input: Value) -> KernelResult<Value> {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_ml::register(&mut b).expect("register");
    let registry = b.build();
    let attrs: AttrMap = attrs.into_iter().collect();
    let init = KernelInit {
        node_name: "n",
        op_type: op,
        domain: rge_kernels_ml::ML_DOMAIN,
        opset: 3,
        attrs: &attrs,
        input_types: &[None],
        output_types: &[],
        subgraph_attrs: &[],
        constants: &[],
    };
    let kernel = registry.create(&init)?;
    let mut out = run_owned(kernel.as_ref(), &[Some(&input)], 1, 1, None)?;
    Ok(out.remove(0).expect("output"))
}

fn int_map(keys: &[i64], values: &[f32]) -> Value {
    let k = Tensor::from_vec(&[keys.len()], keys.to_vec()).unwrap();
    let v = Tensor::from_vec(&[values.len()], values.to_vec()).unwrap();
    Value::Map(MapValue::new(k, v).unwrap())
}

fn strings(v: &[&str]) -> AttrValue {
    AttrValue::ListString(v.iter().map(|s| s.to_string()).collect())
}

fn f32s(v: Value) -> Vec<f32> {
    v.into_tensor().unwrap().as_slice::<f32>().unwrap().to_vec()
}

#[test]
fn zip_map_makes_one_map_per_row() {
    let x = Tensor::from_vec(&[2, 3], vec![0.1f32, 0.2, 0.7, 1.0, 2.0, 3.0]).unwrap();
    let attrs = vec![("classlabels_strings", strings(&["a", "b", "c"]))];
    let Value::MapSequence { key, value, items } =
        run("ZipMap", attrs.clone(), Value::Tensor(x)).unwrap()
    else {
        panic!("not a sequence of maps")
    };
    assert_eq!((key, value, items.len()), (DType::String, DType::Float, 2));
    assert_eq!(
        items[1].values().as_slice::<f32>().unwrap(),
        &[1.0, 2.0, 3.0]
    );
    assert_eq!(
        items[1].keys().view().as_strings().unwrap(),
        &["a".to_string(), "b".into(), "c".into()]
    );
    // Columns that do not match the labels are an error naming both counts.
    let bad = Tensor::from_vec(&[1, 2], vec![0.5f32, 0.5]).unwrap();
    let e = run("ZipMap", attrs, Value::Tensor(bad))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("2 columns") && e.contains("3 class labels"),
        "{e}"
    );
    // Both label lists, or neither, is an attribute error.
    let e = run(
        "ZipMap",
        vec![],
        Value::Tensor(Tensor::from_vec(&[1], vec![0f32]).unwrap()),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("must be set"), "{e}");
}

#[test]
fn dict_vectorizer_places_values_by_vocabulary() {
    let attrs = vec![("int64_vocabulary", AttrValue::ListInt(vec![5, 1, 3, 8]))];
    let y = run(
        "DictVectorizer",
        attrs.clone(),
        int_map(&[1, 3, 9], &[2.0, 4.0, 9.0]),
    )
    .unwrap();
    assert_eq!(f32s(y), vec![0.0, 2.0, 4.0, 0.0]);
    // A string vocabulary over int64 keys is refused.
    let attrs = vec![("string_vocabulary", strings(&["a"]))];
    let e = run("DictVectorizer", attrs, int_map(&[1], &[2.0]))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("keys are INT64") || e.contains("keys are int64"),
        "{e}"
    );
    // A tensor where a map belongs.
    let t = Value::Tensor(Tensor::from_vec(&[1], vec![1f32]).unwrap());
    let attrs = vec![("int64_vocabulary", AttrValue::ListInt(vec![1]))];
    let e = run("DictVectorizer", attrs, t).unwrap_err().to_string();
    assert!(e.contains("must be a map"), "{e}");
}

#[test]
fn cast_map_dense_and_sparse() {
    let m = || int_map(&[3, 0, 1, 7], &[1.5, -2.25, 7.0, 9.0]);
    let dense = run("CastMap", vec![], m()).unwrap();
    assert_eq!(f32s(dense), vec![-2.25, 7.0, 1.5, 9.0]);
    let sparse = vec![
        ("map_form", AttrValue::String("SPARSE".into())),
        ("max_map", AttrValue::Int(5)),
    ];
    // Key 7 is past max_map: dropped, as onnxruntime does.
    assert_eq!(
        f32s(run("CastMap", sparse.clone(), m()).unwrap()),
        vec![-2.25, 7.0, 0.0, 1.5, 0.0]
    );
    let mut to_int = sparse.clone();
    to_int.push(("cast_to", AttrValue::String("TO_INT64".into())));
    let y = run("CastMap", to_int, m()).unwrap().into_tensor().unwrap();
    assert_eq!(y.as_slice::<i64>().unwrap(), &[-2, 7, 0, 1, 0]);
    let e = run("CastMap", sparse.clone(), int_map(&[-1], &[1.0]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("keys ≥ 0"), "{e}");
    let mut huge = sparse;
    huge[1] = ("max_map", AttrValue::Int(i64::MAX));
    let e = run("CastMap", huge, m()).unwrap_err().to_string();
    assert!(e.contains("max_map"), "{e}");
}

#[test]
fn maps_refuse_repeated_keys_and_mismatched_lengths() {
    let k = Tensor::from_vec(&[2], vec![1i64, 1]).unwrap();
    let v = Tensor::from_vec(&[2], vec![1f32, 2.0]).unwrap();
    assert!(MapValue::new(k, v.clone())
        .unwrap_err()
        .to_string()
        .contains("repeat"));
    let k = Tensor::from_vec(&[3], vec![1i64, 2, 3]).unwrap();
    assert!(MapValue::new(k, v)
        .unwrap_err()
        .to_string()
        .contains("3 keys but 2 values"));
}
