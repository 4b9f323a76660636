//! Running a vector kernel and the `cpu` engine's kernel of the same node, and comparing.
#![allow(dead_code)]

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    run_owned, DType, Kernel, KernelInit, KernelRegistry, KernelRegistryBuilder, KernelSet, Tensor,
    Value,
};
use rge_vector::Isa;

/// The reference kernels (the `cpu` engine's families the vector engine covers).
pub fn reference() -> KernelRegistry {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_elementwise::register(&mut b).unwrap();
    rge_kernels_nn::register(&mut b).unwrap();
    rge_kernels_convert::register(&mut b).unwrap();
    rge_kernels_misc::register(&mut b).unwrap();
    b.build()
}

/// One vector kernel set per ISA this machine runs.
pub fn vector_sets() -> Vec<(Isa, KernelSet)> {
    Isa::available()
        .into_iter()
        .map(|i| (i, rge_vector::kernel_set_for(i).unwrap()))
        .collect()
}

pub fn ints(v: &[i64]) -> AttrValue {
    AttrValue::ListInt(v.to_vec())
}

/// A node to run: op type, opset, attributes, inputs, output count.
#[derive(Clone)]
pub struct Case {
    pub op: String,
    pub opset: i64,
    pub attrs: AttrMap,
    pub inputs: Vec<Option<Tensor>>,
    pub outputs: usize,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shapes: Vec<Option<(&[usize], DType)>> = self
            .inputs
            .iter()
            .map(|t| t.as_ref().map(|t| (t.shape(), t.dtype())))
            .collect();
        write!(
            f,
            "{} v{} {:?} inputs {:?}",
            self.op, self.opset, self.attrs, shapes
        )
    }
}

impl Case {
    pub fn new(op: &str, inputs: Vec<Tensor>) -> Case {
        Case {
            op: op.into(),
            opset: 21,
            attrs: AttrMap::new(),
            inputs: inputs.into_iter().map(Some).collect(),
            outputs: 1,
        }
    }

    pub fn attr(mut self, name: &str, v: impl Into<AttrValue>) -> Case {
        self.attrs.set(name, v);
        self
    }

    pub fn opset(mut self, v: i64) -> Case {
        self.opset = v;
        self
    }

    /// The inputs' dtypes and the outputs' (f32).
    fn port_types(&self) -> (Vec<Option<DType>>, Vec<Option<DType>>) {
        let types = self
            .inputs
            .iter()
            .map(|t| t.as_ref().map(Tensor::dtype))
            .collect();
        (types, vec![Some(DType::Float); self.outputs])
    }

    fn init<'a>(&'a self, types: &'a [Option<DType>], out: &'a [Option<DType>]) -> KernelInit<'a> {
        KernelInit {
            node_name: "n",
            op_type: &self.op,
            domain: "",
            opset: self.opset,
            attrs: &self.attrs,
            input_types: types,
            output_types: out,
            subgraph_attrs: &[],
            constants: &[],
        }
    }

    fn run(&self, k: &dyn Kernel, threads: usize) -> Result<Vec<Tensor>, String> {
        let vals: Vec<Option<Value>> = self
            .inputs
            .iter()
            .map(|t| t.clone().map(Value::from))
            .collect();
        let refs: Vec<Option<&Value>> = vals.iter().map(Option::as_ref).collect();
        let out = run_owned(k, &refs, self.outputs, threads, None).map_err(|e| e.to_string())?;
        Ok(out
            .into_iter()
            .flatten()
            .map(|v| v.as_tensor().unwrap().clone())
            .collect())
    }

    /// Runs the node with the reference and with the vector kernel of every ISA (1 and 3
    /// threads) and compares: `|got - want| <= abs + rel·|want|`, NaN for NaN, exact infinities.
    /// Checks that the vector engine selects its own kernel for this node first.
    pub fn check(&self, rel: f64, abs: f64) -> Result<(), String> {
        let (types, out) = self.port_types();
        let init = self.init(&types, &out);
        let reference = reference();
        let rk = reference.get("", &self.op).ok_or("no reference kernel")?(&init)
            .map_err(|e| e.to_string())?;
        let want = self.run(rk.as_ref(), 1)?;
        for (isa, set) in vector_sets() {
            let def = set
                .defs("", &self.op)
                .iter()
                .find(|d| d.serves(self.opset))
                .ok_or_else(|| format!("no vector kernel for {} v{}", self.op, self.opset))?;
            let k = (def.factory)(&init).map_err(|e| e.to_string())?;
            for threads in [1, 3] {
                let got = self.run(k.as_ref(), threads)?;
                if got.len() != want.len() {
                    return Err(format!("{} outputs vs {}", got.len(), want.len()));
                }
                for (g, w) in got.iter().zip(&want) {
                    close(g, w, rel, abs)
                        .map_err(|e| format!("{} threads {threads}: {e}", isa.name()))?;
                }
            }
        }
        Ok(())
    }
}

impl Case {
    /// Runs the node with the vector kernel of every ISA (1 thread), without the reference:
    /// each ISA's outputs or error.
    pub fn run_vector(&self) -> Vec<Result<Vec<Tensor>, String>> {
        let (types, out) = self.port_types();
        let init = self.init(&types, &out);
        vector_sets()
            .into_iter()
            .map(|(_, set)| {
                let def = set
                    .defs("", &self.op)
                    .iter()
                    .find(|d| d.serves(self.opset))
                    .ok_or("no vector kernel")?;
                let k = (def.factory)(&init).map_err(|e| e.to_string())?;
                self.run(k.as_ref(), 1)
            })
            .collect()
    }
}

/// `got` equals `want` in shape and dtype, values within `abs + rel·|want|`.
pub fn close(got: &Tensor, want: &Tensor, rel: f64, abs: f64) -> Result<(), String> {
    if got.shape() != want.shape() || got.dtype() != want.dtype() {
        return Err(format!(
            "shape/dtype {:?} {:?} vs {:?} {:?}",
            got.shape(),
            got.dtype(),
            want.shape(),
            want.dtype()
        ));
    }
    let g = got.view().to_f64_vec().map_err(|e| e.to_string())?;
    let w = want.view().to_f64_vec().map_err(|e| e.to_string())?;
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let ok = if b.is_nan() {
            a.is_nan()
        } else if b.is_infinite() {
            a == b
        } else {
            (a - b).abs() <= abs + rel * b.abs()
        };
        if !ok {
            return Err(format!("element {i}: got {a:e}, want {b:e}"));
        }
    }
    Ok(())
}

/// A tensor of `shape` with values from `vals` (repeated).
pub fn tensor(shape: &[usize], vals: &[f32]) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| {
            if vals.is_empty() {
                0.0
            } else {
                vals[i % vals.len()]
            }
        })
        .collect();
    Tensor::from_vec(shape, v).unwrap()
}
