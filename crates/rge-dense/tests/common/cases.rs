//! Kernel cases shared by the tests that compare dense kernels with the `cpu` engine's: a
//! case (op, attributes, inputs), building and running a kernel on it, the reference result,
//! the 1e-4 relative comparison, seeded random tensors and permuted copies.
#![allow(dead_code)]

use rge_ir::AttrMap;
use rge_kernels::{
    run_owned, DType, Kernel, KernelInit, KernelRegistry, KernelRegistryBuilder, Tensor, Value,
};

pub fn reference() -> KernelRegistry {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_nn::register(&mut b).unwrap();
    rge_kernels_sequence::register(&mut b).unwrap();
    b.build()
}

#[derive(Clone)]
pub struct Case {
    pub op: &'static str,
    pub attrs: AttrMap,
    pub inputs: Vec<Option<Tensor>>,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shapes: Vec<Option<&[usize]>> = self
            .inputs
            .iter()
            .map(|t| t.as_ref().map(Tensor::shape))
            .collect();
        write!(f, "{} {:?} inputs {:?}", self.op, self.attrs, shapes)
    }
}

pub fn build(
    f: impl Fn(&KernelInit<'_>) -> rge_kernels::KernelResult<Box<dyn Kernel>>,
    c: &Case,
    op_type: &str,
    domain: &str,
    constant_inputs: &[usize],
) -> Box<dyn Kernel> {
    let types: Vec<Option<DType>> = c
        .inputs
        .iter()
        .map(|t| t.as_ref().map(Tensor::dtype))
        .collect();
    let consts: Vec<Option<&Tensor>> = c
        .inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if constant_inputs.contains(&i) {
                t.as_ref()
            } else {
                None
            }
        })
        .collect();
    let init = KernelInit {
        node_name: "n",
        op_type,
        domain,
        opset: 21,
        attrs: &c.attrs,
        input_types: &types,
        output_types: &[Some(DType::Float)],
        subgraph_attrs: &[],
        constants: &consts,
    };
    f(&init).unwrap()
}

pub fn run(k: &dyn Kernel, inputs: &[Option<Tensor>], threads: usize) -> Result<Tensor, String> {
    let vals: Vec<Option<Value>> = inputs.iter().map(|t| t.clone().map(Value::from)).collect();
    let refs: Vec<Option<&Value>> = vals.iter().map(Option::as_ref).collect();
    let out = run_owned(k, &refs, 1, threads, None).map_err(|e| e.to_string())?;
    Ok(out[0].as_ref().unwrap().as_tensor().unwrap().clone())
}

pub fn close(got: &Tensor, want: &Tensor) -> Result<(), String> {
    if got.shape() != want.shape() {
        return Err(format!("shape {:?} vs {:?}", got.shape(), want.shape()));
    }
    let (g, w) = (
        got.as_slice::<f32>().unwrap(),
        want.as_slice::<f32>().unwrap(),
    );
    let scale = w.iter().fold(1e-3f32, |m, v| m.max(v.abs()));
    for (i, (a, b)) in g.iter().zip(w).enumerate() {
        if (a - b).abs() > 1e-4 * scale.max(b.abs()) {
            return Err(format!("element {i}: {a} vs {b} (scale {scale})"));
        }
    }
    Ok(())
}

pub fn tensor(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect();
    Tensor::from_vec(shape, v).unwrap()
}

/// The reference result of `c` with the cpu engine's kernel.
pub fn cpu(c: &Case) -> Tensor {
    let reg = reference();
    let f = reg.get("", c.op).unwrap();
    let k = build(f, c, c.op, "", &[]);
    run(k.as_ref(), &c.inputs, 1).unwrap()
}

/// A 4-D tensor with its dims permuted by `perm`.
pub fn permuted(t: &Tensor, perm: [usize; 4]) -> Tensor {
    let s = t.shape();
    let out: Vec<usize> = perm.iter().map(|&p| s[p]).collect();
    let strides = [s[1] * s[2] * s[3], s[2] * s[3], s[3], 1];
    let v = t.as_slice::<f32>().unwrap();
    let mut o = Vec::with_capacity(v.len());
    for a in 0..out[0] {
        for b in 0..out[1] {
            for c in 0..out[2] {
                for d in 0..out[3] {
                    let idx = [a, b, c, d];
                    let src: usize = (0..4).map(|i| idx[i] * strides[perm[i]]).sum();
                    o.push(v[src]);
                }
            }
        }
    }
    Tensor::from_vec(&out, o).unwrap()
}
