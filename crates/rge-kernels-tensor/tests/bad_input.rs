//! Bad inputs give clear errors (never panics), and a few element types the node tests do
//! not reach (strings, packed INT4) move correctly.

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    run_owned, DType, KernelInit, KernelRegistry, KernelRegistryBuilder, KernelResult, Tensor,
    Value,
};

fn registry() -> KernelRegistry {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_tensor::register(&mut b).expect("register");
    b.build()
}

/// Runs `op` (latest opset) with `attrs` on `inputs` (None: absent), `outputs` outputs.
fn run(
    op: &str,
    attrs: &[(&str, AttrValue)],
    inputs: &[Option<Value>],
    outputs: usize,
) -> KernelResult<Vec<Option<Value>>> {
    let mut map = AttrMap::new();
    for (k, v) in attrs {
        map.set(*k, v.clone());
    }
    let init = KernelInit {
        node_name: "n",
        op_type: op,
        domain: "",
        opset: 25,
        attrs: &map,
        input_types: &[],
        output_types: &[],
        subgraph_attrs: &[],
        constants: &[],
    };
    let kernel = registry().create(&init)?;
    let refs: Vec<Option<&Value>> = inputs.iter().map(Option::as_ref).collect();
    run_owned(kernel.as_ref(), &refs, outputs, 1, None)
}

fn t<T: rge_kernels::Elem>(shape: &[usize], v: Vec<T>) -> Option<Value> {
    Some(Value::Tensor(Tensor::from_vec(shape, v).unwrap()))
}

fn f(shape: &[usize]) -> Option<Value> {
    let n = shape.iter().product();
    t(shape, (0..n).map(|i| i as f32).collect())
}

fn i(v: &[i64]) -> Option<Value> {
    t(&[v.len()], v.to_vec())
}

fn s(v: i64) -> Option<Value> {
    t(&[], vec![v])
}

fn err(r: KernelResult<Vec<Option<Value>>>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

fn out(r: KernelResult<Vec<Option<Value>>>, k: usize) -> Tensor {
    r.unwrap()[k].clone().unwrap().into_tensor().unwrap()
}

#[test]
fn indices_out_of_range() {
    assert!(err(run("Gather", &[], &[f(&[3, 2]), i(&[3])], 1)).contains("out of range"));
    assert!(err(run("Gather", &[], &[f(&[3, 2]), i(&[-4])], 1)).contains("out of range"));
    let ge = run(
        "GatherElements",
        &[],
        &[f(&[2, 2]), t(&[1, 2], vec![0i64, 2])],
        1,
    );
    assert!(err(ge).contains("out of range"));
    let gnd = run("GatherND", &[], &[f(&[2, 2]), t(&[1, 2], vec![0i64, 5])], 1);
    assert!(err(gnd).contains("out of range"));
    let snd = run(
        "ScatterND",
        &[],
        &[f(&[2]), t(&[1, 1], vec![2i64]), f(&[1])],
        1,
    );
    assert!(err(snd).contains("out of range"));
    let se = run("ScatterElements", &[], &[f(&[2]), i(&[7]), f(&[1])], 1);
    assert!(err(se).contains("out of range"));
    let seq = Some(Value::Sequence {
        elem: DType::Float,
        items: vec![Tensor::from_vec(&[1], vec![1f32]).unwrap()],
    });
    assert!(err(run("SequenceAt", &[], &[seq.clone(), s(1)], 1)).contains("out of range"));
    assert!(err(run("SequenceErase", &[], &[seq, s(-2)], 1)).contains("out of range"));
    let ts = run(
        "TensorScatter",
        &[],
        &[f(&[1, 3, 2]), f(&[1, 2, 2]), i(&[2])],
        1,
    );
    assert!(err(ts).contains("outside the cache"));
    let rs = run("ReverseSequence", &[], &[f(&[2, 2]), i(&[3, 1])], 1);
    assert!(err(rs).contains("outside"));
}

#[test]
fn bad_shapes_and_params() {
    assert!(run("Reshape", &[], &[f(&[2, 3]), i(&[4, -1])], 1).is_err());
    assert!(run("Reshape", &[], &[f(&[2, 3]), i(&[-1, -1])], 1).is_err());
    let perm = [("perm", AttrValue::ListInt(vec![0, 0]))];
    assert!(run("Transpose", &perm, &[f(&[2, 3])], 1).is_err());
    let z = run(
        "Slice",
        &[],
        &[f(&[4]), i(&[0]), i(&[4]), i(&[0]), i(&[0])],
        1,
    );
    assert!(err(z).contains("step is 0"));
    let split = run("Split", &[], &[f(&[4]), i(&[1, 2])], 2);
    assert!(err(split).contains("add up"));
    let axis = [("axis", AttrValue::Int(0))];
    assert!(run("Concat", &axis, &[f(&[2, 3]), f(&[2, 2])], 1).is_err());
    let mixed = run("Concat", &axis, &[f(&[2]), t(&[2], vec![1i64, 2])], 1);
    assert!(err(mixed).contains("one type"));
    let reflect = [("mode", AttrValue::String("reflect".into()))];
    assert!(run("Pad", &reflect, &[f(&[0, 2]), i(&[1, 0, 0, 0])], 1).is_err());
    assert!(run("Pad", &[], &[f(&[2, 2]), i(&[1, 1])], 1).is_err());
    assert!(run("TopK", &[], &[f(&[2, 3]), i(&[4])], 2).is_err());
    assert!(run("TopK", &[], &[f(&[2, 3]), i(&[-1])], 2).is_err());
    let vals = t(&[2], vec![0f32, 1.0]);
    assert!(run("OneHot", &[], &[i(&[1]), s(0), vals], 1).is_err());
    let r = run("Range", &[], &[s(0), s(4), s(0)], 1);
    assert!(err(r).contains("delta"));
    assert!(run("Tile", &[], &[f(&[2, 2]), i(&[2])], 1).is_err());
    assert!(run("Expand", &[], &[f(&[2, 3]), i(&[4, 3])], 1).is_err());
    assert!(run("Expand", &[], &[f(&[2, 3]), i(&[-1, 3])], 1).is_err());
    assert!(run("Squeeze", &[], &[f(&[2, 1]), i(&[0])], 1).is_err());
    assert!(run("Unsqueeze", &[], &[f(&[2]), i(&[0, 0])], 1).is_err());
    assert!(run("Trilu", &[], &[f(&[3])], 1).is_err());
    let opt = Some(Value::Optional(None));
    assert!(err(run("OptionalGetElement", &[], &[opt], 1)).contains("empty"));
    let block = [("blocksize", AttrValue::Int(2))];
    assert!(run("DepthToSpace", &block, &[f(&[1, 3, 2, 2])], 1).is_err());
    assert!(run("SpaceToDepth", &block, &[f(&[1, 1, 3, 2])], 1).is_err());
    assert!(run("Flatten", &[("axis", AttrValue::Int(3))], &[f(&[2, 2])], 1).is_err());
    assert!(run(
        "Gather",
        &[("axis", AttrValue::Int(2))],
        &[f(&[2, 2]), i(&[0])],
        1
    )
    .is_err());
    let cond = t(&[3], vec![true, false, true]);
    assert!(run(
        "Compress",
        &[("axis", AttrValue::Int(0))],
        &[f(&[2]), cond],
        1
    )
    .is_err());
    assert!(run("SplitToSequence", &[], &[f(&[3]), s(0)], 1).is_err());
}

#[test]
fn strings_move() {
    let strs = |shape: &[usize], v: &[&str]| {
        Some(Value::Tensor(
            Tensor::from_strings(shape, v.iter().map(|s| s.to_string()).collect()).unwrap(),
        ))
    };
    let x = strs(&[2, 2], &["a", "b", "c", "d"]);
    let y = out(run("Transpose", &[], std::slice::from_ref(&x), 1), 0);
    assert_eq!(y.view().as_strings().unwrap(), ["a", "c", "b", "d"]);
    let pad = run("Pad", &[], &[x, i(&[0, 1, 0, 0]), strs(&[], &["z"])], 1);
    let y = out(pad, 0);
    assert_eq!(y.shape(), [2, 3]);
    assert_eq!(
        y.view().as_strings().unwrap(),
        ["z", "a", "b", "z", "c", "d"]
    );
}

#[test]
fn packed_int4_moves() {
    // INT4 [1, 2, 3, 4, 5, 6] as 2x3, low nibble first.
    let x = Tensor::from_bytes(DType::Int4, &[2, 3], &[0x21, 0x43, 0x65]).unwrap();
    let y = out(
        run("Transpose", &[], &[Some(Value::Tensor(x.clone()))], 1),
        0,
    );
    assert_eq!(y.dtype(), DType::Int4);
    assert_eq!(y.shape(), [3, 2]);
    // [1, 4, 2, 5, 3, 6]
    assert_eq!(y.view().bytes().unwrap(), [0x41, 0x52, 0x63]);
    let r = out(
        run("Reshape", &[], &[Some(Value::Tensor(x)), i(&[3, 2])], 1),
        0,
    );
    assert_eq!(r.view().bytes().unwrap(), [0x21, 0x43, 0x65]);
}

#[test]
fn scalar_and_empty_edges() {
    let y = out(run("Identity", &[], &[t(&[], vec![2.5f32])], 1), 0);
    assert_eq!(y.as_slice::<f32>().unwrap(), [2.5]);
    let y = out(run("Transpose", &[], &[t(&[], vec![1.5f32])], 1), 0);
    assert_eq!(y.as_slice::<f32>().unwrap(), [1.5]);
    let y = out(run("Expand", &[], &[f(&[0, 3]), i(&[2, 1, 3])], 1), 0);
    assert_eq!(y.shape(), [2, 0, 3]);
    let y = out(run("NonZero", &[], &[t(&[], vec![3i32])], 1), 0);
    assert_eq!(y.shape(), [0, 1]);
    let y = out(
        run(
            "Slice",
            &[],
            &[f(&[0]), i(&[-1]), i(&[-5]), i(&[0]), i(&[-1])],
            1,
        ),
        0,
    );
    assert_eq!(y.shape(), [0]);
}
