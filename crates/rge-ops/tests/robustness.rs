//! Bad input never panics: every built-in op version gets nodes with random input counts,
//! data types, shapes (unknown dims and ranks included), values and attributes (huge, negative,
//! wrong-typed); inference may fail, but with an error that names the node.

use std::panic::{catch_unwind, AssertUnwindSafe};

use rge_ir::{AttrValue, ComputeGraph, DataType, OpDesc, Shape, Tensor, TensorDesc};
use rge_ops::{infer_graph, AttrType, InferOptions, OpRegistry, Value};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn int(&mut self) -> i64 {
        match self.below(8) {
            0 => i64::MAX,
            1 => i64::MIN,
            2 => -(self.below(5) as i64) - 1,
            _ => self.below(6) as i64,
        }
    }
    fn dims(&mut self) -> Shape {
        match self.below(10) {
            0 => Shape::unknown_rank(),
            _ => {
                let r = self.below(5) as usize;
                Shape::new((0..r).map(|_| match self.below(6) {
                    0 => -1,
                    1 => 0,
                    _ => self.below(5) as i64 + 1,
                }))
            }
        }
    }
}

const DTYPES: [DataType; 6] = [
    DataType::Float,
    DataType::Int64,
    DataType::Int32,
    DataType::Bool,
    DataType::Float16,
    DataType::Uint8,
];

fn attr(rng: &mut Rng, ty: AttrType) -> AttrValue {
    if rng.below(6) == 0 {
        // The wrong type on purpose.
        return AttrValue::String("x".into());
    }
    match ty {
        AttrType::Int => AttrValue::Int(rng.int()),
        AttrType::Float => {
            AttrValue::Float([0.0, -1.0, 1e30, f32::NAN, 0.5][rng.below(5) as usize])
        }
        AttrType::String => AttrValue::String(
            ["", "NOTSET", "SAME_UPPER", "none", "RGB"][rng.below(5) as usize].into(),
        ),
        AttrType::Ints => AttrValue::ListInt((0..rng.below(6)).map(|_| rng.int()).collect()),
        AttrType::Floats => AttrValue::ListFloat(
            (0..rng.below(5))
                .map(|_| rng.below(4) as f32 - 1.0)
                .collect(),
        ),
        AttrType::Strings => AttrValue::ListString(vec!["a".into(); rng.below(3) as usize]),
        AttrType::Tensor => {
            AttrValue::Tensor(Box::new(Tensor::from_i64(Shape::new([2]), &[rng.int(), 3])))
        }
        _ => AttrValue::Int(0),
    }
}

#[test]
fn random_nodes_never_panic() {
    let reg = OpRegistry::builtin();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut runs = 0;
    let mut panics: Vec<String> = Vec::new();
    for (domain, op_type, versions) in reg.ops() {
        for proto in versions {
            if !proto.subgraphs.is_empty() {
                continue;
            }
            for trial in 0..80 {
                let mut g = ComputeGraph::new("g");
                let n_in = proto.inputs.len() + rng.below(3) as usize;
                let mut ins = Vec::new();
                let mut opts = InferOptions::with_opsets([(domain, proto.since_version)]);
                for i in 0..n_in {
                    if rng.below(8) == 0 {
                        ins.push(None);
                        continue;
                    }
                    let dt = DTYPES[rng.below(DTYPES.len() as u64) as usize];
                    let shape = rng.dims();
                    let d = TensorDesc::with_shape_dtype(shape.clone(), dt);
                    let name = format!("in{i}");
                    let id = g
                        .add_root_node(
                            OpDesc::new(&name, "Data")
                                .with_input("", d.clone())
                                .with_output("", d),
                        )
                        .unwrap();
                    if let (Some(count), true) =
                        (shape.element_count().ok().flatten(), dt == DataType::Int64)
                    {
                        if count <= 8 && rng.below(2) == 0 {
                            let vals = (0..count).map(|_| rng.int()).collect();
                            opts.input_values
                                .insert(name, Value::ints(dt, shape.dims().to_vec(), vals));
                        }
                    }
                    ins.push(Some(id));
                }
                let n_out = proto.outputs.len().max(1) + rng.below(2) as usize;
                let mut op = OpDesc::new("n", op_type).with_ports(n_in, n_out);
                op.set_domain(domain);
                for a in &proto.attrs {
                    if rng.below(3) != 0 {
                        op.attrs_mut().set(a.name.clone(), attr(&mut rng, a.ty));
                    }
                }
                let id = g.add_root_node(op).unwrap();
                for (i, src) in ins.iter().enumerate() {
                    if let Some(s) = src {
                        g.add_edge(*s, 0, id, i).unwrap();
                    }
                }
                let r = catch_unwind(AssertUnwindSafe(|| infer_graph(&mut g, &reg, &opts)));
                match r {
                    Err(_) => panics.push(format!(
                        "{domain}.{op_type} v{} (trial {trial})",
                        proto.since_version
                    )),
                    Ok(Err(e)) => {
                        let m = e.to_string();
                        assert!(
                            m.contains("`n`") || m.contains("`in"),
                            "{op_type}: error without a node: {m}"
                        );
                    }
                    Ok(Ok(_)) => {}
                }
                runs += 1;
            }
        }
    }
    assert!(panics.is_empty(), "panicked: {}", panics.join(", "));
    assert!(runs > 5000, "{runs}");
}

/// A TF Reshape whose target shape's element count overflows i64 is an error naming the node
/// (the random test above found it panicking).
#[test]
fn a_tf_reshape_to_an_overflowing_shape_is_an_error() {
    let reg = OpRegistry::builtin();
    let (domain, _, versions) = reg
        .ops()
        .into_iter()
        .find(|(d, op, _)| *op == "Reshape" && *d == "tf")
        .expect("tf Reshape is registered");
    let mut g = ComputeGraph::new("g");
    let x = TensorDesc::with_shape_dtype(Shape::new([2, 3]), DataType::Float);
    let s = TensorDesc::with_shape_dtype(Shape::new([3]), DataType::Int64);
    let x_id = g
        .add_root_node(
            OpDesc::new("in0", "Data")
                .with_input("", x.clone())
                .with_output("", x),
        )
        .unwrap();
    let s_id = g
        .add_root_node(
            OpDesc::new("in1", "Data")
                .with_input("", s.clone())
                .with_output("", s),
        )
        .unwrap();
    let mut opts = InferOptions::with_opsets([(domain, versions[0].since_version)]);
    opts.input_values.insert(
        "in1".into(),
        Value::ints(DataType::Int64, vec![3], vec![i64::MAX, 4, -1]),
    );
    let mut op = OpDesc::new("n", "Reshape").with_ports(2, 1);
    op.set_domain(domain);
    let n = g.add_root_node(op).unwrap();
    g.add_edge(x_id, 0, n, 0).unwrap();
    g.add_edge(s_id, 0, n, 1).unwrap();
    let err = infer_graph(&mut g, &reg, &opts).unwrap_err().to_string();
    assert!(err.contains("`n`") && err.contains("overflows"), "{err}");
}
