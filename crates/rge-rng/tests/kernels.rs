//! The rng kernels through their definitions, as the runtime calls them: seeded values the
//! same on every thread count and run key, unseeded ones different per run and node, the
//! distributions right, shapes and dtypes the same as the `cpu` reference kernels' on random
//! shapes, and bad input a clear error.

use proptest::prelude::*;
use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    DType, KernelCtx, KernelInit, KernelRegistryBuilder, KernelResult, OwnedOutputs, Tensor, Value,
    ValueRef,
};

struct Call<'a> {
    op: &'a str,
    node: &'a str,
    opset: i64,
    attrs: Vec<(&'a str, AttrValue)>,
    inputs: Vec<Option<Tensor>>,
    outputs: usize,
    threads: usize,
    run_key: u64,
}

impl<'a> Call<'a> {
    fn new(op: &'a str) -> Self {
        Call {
            op,
            node: "n",
            opset: 22,
            attrs: Vec::new(),
            inputs: Vec::new(),
            outputs: 1,
            threads: 1,
            run_key: 0,
        }
    }
    fn attr(mut self, k: &'a str, v: AttrValue) -> Self {
        self.attrs.push((k, v));
        self
    }
    fn input(mut self, t: Tensor) -> Self {
        self.inputs.push(Some(t));
        self
    }
    fn init_and<R>(&self, f: impl FnOnce(&KernelInit<'_>) -> R) -> R {
        let attrs: AttrMap = self.attrs.iter().cloned().collect();
        let types: Vec<Option<DType>> = self
            .inputs
            .iter()
            .map(|t| t.as_ref().map(Tensor::dtype))
            .collect();
        let init = KernelInit {
            node_name: self.node,
            op_type: self.op,
            domain: "",
            opset: self.opset,
            attrs: &attrs,
            input_types: &types,
            output_types: &[],
            subgraph_attrs: &[],
            constants: &[],
        };
        f(&init)
    }
    /// Runs the rng engine's kernel.
    fn run(&self) -> KernelResult<Vec<Tensor>> {
        let set = rge_rng::kernel_set();
        let def = set.defs("", self.op).first().expect("a definition").clone();
        let kernel = self.init_and(|init| (def.factory)(init))?;
        let values: Vec<Option<Value>> = self
            .inputs
            .iter()
            .map(|t| t.clone().map(Value::Tensor))
            .collect();
        let refs: Vec<Option<ValueRef<'_>>> = values
            .iter()
            .map(|v| v.as_ref().map(Value::as_ref))
            .collect();
        let mut sink = OwnedOutputs::new(self.outputs);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(self.threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut ctx = KernelCtx::new(&refs, &mut sink)
                .with_threads(self.threads)
                .with_run_key(self.run_key);
            kernel.compute(&mut ctx)
        })?;
        Ok(sink
            .into_values()?
            .into_iter()
            .map(|v| v.expect("output").into_tensor().expect("tensor"))
            .collect())
    }
    /// Runs the cpu engine's reference kernel (rge-kernels-misc / -nn).
    fn run_cpu(&self) -> KernelResult<Vec<Tensor>> {
        let mut b = KernelRegistryBuilder::new();
        rge_kernels_misc::register(&mut b).unwrap();
        rge_kernels_nn::register(&mut b).unwrap();
        let reg = b.build();
        let kernel = self.init_and(|init| reg.create(init))?;
        let values: Vec<Option<Value>> = self
            .inputs
            .iter()
            .map(|t| t.clone().map(Value::Tensor))
            .collect();
        let refs: Vec<Option<&Value>> = values.iter().map(Option::as_ref).collect();
        Ok(
            rge_kernels::run_owned(kernel.as_ref(), &refs, self.outputs, 1, None)?
                .into_iter()
                .map(|v| v.expect("output").into_tensor().expect("tensor"))
                .collect(),
        )
    }
}

fn ints(v: &[i64]) -> AttrValue {
    AttrValue::ListInt(v.to_vec())
}

fn f64s(t: &Tensor) -> Vec<f64> {
    t.view().to_f64_vec().unwrap()
}

fn bits(t: &Tensor) -> Vec<u8> {
    t.view().bytes().unwrap().to_vec()
}

/// Every op, seeded, at a size that takes the parallel path.
fn seeded_calls<'a>() -> Vec<Call<'a>> {
    let n = 100_000usize;
    let probs = Tensor::from_vec(&[n], (0..n).map(|i| (i % 97) as f32 / 96.0).collect()).unwrap();
    let logits = Tensor::from_vec(&[4, 5], (0..20).map(|i| i as f32 / 7.0).collect()).unwrap();
    let x = Tensor::from_vec(&[n], (0..n).map(|i| i as f32).collect()).unwrap();
    let ratio = Tensor::from_vec(&[], vec![0.3f32]).unwrap();
    let train = Tensor::from_vec(&[], vec![true]).unwrap();
    vec![
        Call::new("RandomUniform")
            .attr("shape", ints(&[n as i64]))
            .attr("seed", AttrValue::Float(3.0)),
        Call::new("RandomNormal")
            .attr("shape", ints(&[250, 400]))
            .attr("seed", AttrValue::Float(4.0)),
        Call::new("RandomUniformLike")
            .input(x.clone())
            .attr("seed", AttrValue::Float(5.0)),
        Call::new("RandomNormalLike")
            .input(x.clone())
            .attr("seed", AttrValue::Float(6.0)),
        Call::new("Bernoulli")
            .input(probs)
            .attr("seed", AttrValue::Float(7.0)),
        Call::new("Multinomial")
            .input(logits)
            .attr("sample_size", AttrValue::Int(10_000))
            .attr("seed", AttrValue::Float(8.0)),
        {
            let mut c = Call::new("Dropout")
                .input(x)
                .input(ratio)
                .input(train)
                .attr("seed", AttrValue::Int(9));
            c.outputs = 2;
            c
        },
    ]
}

#[test]
fn seeded_ops_repeat_on_every_thread_count_and_run() {
    for mut c in seeded_calls() {
        let first = c.run().unwrap();
        for (threads, key) in [(1, 0), (4, 17), (3, u64::MAX)] {
            c.threads = threads;
            c.run_key = key;
            let again = c.run().unwrap();
            for (a, b) in first.iter().zip(&again) {
                assert_eq!(bits(a), bits(b), "{} with {threads} threads", c.op);
            }
        }
    }
}

#[test]
fn unseeded_ops_differ_per_run_and_per_node() {
    for mut c in seeded_calls() {
        c.attrs.retain(|a| a.0 != "seed");
        c.threads = 2;
        c.run_key = 1;
        let a = c.run().unwrap();
        assert_eq!(
            bits(&a[0]),
            bits(&c.run().unwrap()[0]),
            "{}: same run key",
            c.op
        );
        c.run_key = 2;
        let b = c.run().unwrap();
        assert_ne!(bits(&a[0]), bits(&b[0]), "{}: another run", c.op);
        c.node = "other";
        let d = c.run().unwrap();
        assert_ne!(bits(&b[0]), bits(&d[0]), "{}: another node", c.op);
    }
}

#[test]
fn uniform_and_normal_take_their_parameters() {
    let u = Call::new("RandomUniform")
        .attr("shape", ints(&[200_000]))
        .attr("low", AttrValue::Float(-2.0))
        .attr("high", AttrValue::Float(6.0))
        .attr("seed", AttrValue::Float(1.0))
        .run()
        .unwrap();
    let v = f64s(&u[0]);
    assert!(v.iter().all(|x| (-2.0..6.0).contains(x)));
    let m = v.iter().sum::<f64>() / v.len() as f64;
    assert!(
        (m - 2.0).abs() < 5.0 * 8.0 / (12.0 * v.len() as f64).sqrt(),
        "{m}"
    );
    let z = Call::new("RandomNormal")
        .attr("shape", ints(&[200_000]))
        .attr("mean", AttrValue::Float(10.0))
        .attr("scale", AttrValue::Float(0.5))
        .attr("dtype", AttrValue::Int(11))
        .run()
        .unwrap();
    assert_eq!(z[0].dtype(), DType::Double);
    let v = f64s(&z[0]);
    let m = v.iter().sum::<f64>() / v.len() as f64;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64;
    assert!(
        (m - 10.0).abs() < 0.01 && (var - 0.25).abs() < 0.01,
        "{m} {var}"
    );
    // A narrow range in f16 stays below `high` even where rounding would reach it.
    let h = Call::new("RandomUniform")
        .attr("shape", ints(&[50_000]))
        .attr("low", AttrValue::Float(0.999))
        .attr("high", AttrValue::Float(1.0))
        .attr("dtype", AttrValue::Int(10))
        .run()
        .unwrap();
    assert_eq!(h[0].dtype(), DType::Float16);
    assert!(f64s(&h[0]).iter().all(|&x| x < 1.0));
}

#[test]
fn bernoulli_frequencies_match_the_probabilities() {
    let n = 60_000;
    for p in [0.0f64, 0.1, 0.5, 0.9, 1.0] {
        let out = Call::new("Bernoulli")
            .input(Tensor::from_vec(&[n], vec![p; n]).unwrap())
            .attr("seed", AttrValue::Float(11.0))
            .run()
            .unwrap();
        let ones = f64s(&out[0]).iter().filter(|&&v| v == 1.0).count() as f64;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        assert!((ones - n as f64 * p).abs() <= 5.0 * sd, "p {p}: {ones}");
    }
    let b = Call::new("Bernoulli")
        .input(Tensor::from_vec(&[3], vec![0.5f64; 3]).unwrap())
        .attr("dtype", AttrValue::Int(9))
        .run()
        .unwrap();
    assert_eq!(b[0].dtype(), DType::Bool);
}

#[test]
fn multinomial_frequencies_match_the_softmax() {
    let logits = [0.0f32, 1.0, 2.0, -1.0];
    let samples = 80_000usize;
    let out = Call::new("Multinomial")
        .input(Tensor::from_vec(&[1, 4], logits.to_vec()).unwrap())
        .attr("sample_size", AttrValue::Int(samples as i64))
        .attr("dtype", AttrValue::Int(7))
        .attr("seed", AttrValue::Float(2.0))
        .run()
        .unwrap();
    assert_eq!(out[0].shape(), [1, samples]);
    assert_eq!(out[0].dtype(), DType::Int64);
    let mut counts = [0f64; 4];
    for v in f64s(&out[0]) {
        counts[v as usize] += 1.0;
    }
    let z: f64 = logits.iter().map(|&l| f64::from(l).exp()).sum();
    // χ² with 3 degrees of freedom; 20 is far beyond its 0.999 quantile (16.3).
    let chi2: f64 = logits
        .iter()
        .zip(counts)
        .map(|(&l, o)| {
            let e = samples as f64 * f64::from(l).exp() / z;
            (o - e).powi(2) / e
        })
        .sum();
    assert!(chi2 < 20.0, "{chi2} {counts:?}");
}

#[test]
fn training_dropout_keeps_the_right_fraction_scaled() {
    let n = 50_000usize;
    let x: Vec<f32> = (0..n).map(|i| 1.0 + i as f32 / n as f32).collect();
    let mut c = Call::new("Dropout")
        .input(Tensor::from_vec(&[n], x.clone()).unwrap())
        .input(Tensor::from_vec(&[], vec![0.25f32]).unwrap())
        .input(Tensor::from_vec(&[], vec![true]).unwrap());
    c.outputs = 2;
    let out = c.run().unwrap();
    let (y, m) = (f64s(&out[0]), f64s(&out[1]));
    assert_eq!(out[1].dtype(), DType::Bool);
    let mut kept = 0.0;
    for i in 0..n {
        if m[i] != 0.0 {
            kept += 1.0;
            assert!((y[i] - f64::from(x[i]) / 0.75).abs() < 1e-5);
        } else {
            assert_eq!(y[i], 0.0);
        }
    }
    let sd = (n as f64 * 0.75 * 0.25).sqrt();
    assert!((kept - 0.75 * n as f64).abs() < 5.0 * sd, "{kept}");
    // Inference: the identity, every element kept.
    c.inputs[2] = Some(Tensor::from_vec(&[], vec![false]).unwrap());
    let out = c.run().unwrap();
    assert_eq!(
        f64s(&out[0]),
        x.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()
    );
    assert!(f64s(&out[1]).iter().all(|&v| v == 1.0));
}

#[test]
fn bad_input_is_a_clear_error() {
    let e = Call::new("RandomUniform")
        .attr("shape", ints(&[2]))
        .attr("seed", AttrValue::Float(1.5))
        .run()
        .unwrap_err();
    assert!(
        e.to_string().contains("seed") && e.to_string().contains("integer"),
        "{e}"
    );
    let e = Call::new("RandomUniform").run().unwrap_err();
    assert!(e.to_string().contains("shape"), "{e}");
    let e = Call::new("RandomUniform")
        .attr("shape", ints(&[-1]))
        .run()
        .unwrap_err();
    assert!(e.to_string().contains("negative"), "{e}");
    let e = Call::new("RandomUniform")
        .attr("shape", ints(&[2]))
        .attr("low", AttrValue::Float(3.0))
        .attr("high", AttrValue::Float(1.0))
        .run()
        .unwrap_err();
    assert!(e.to_string().contains("range"), "{e}");
    let e = Call::new("Bernoulli")
        .input(Tensor::from_vec(&[2], vec![0.5f32, 1.5]).unwrap())
        .run()
        .unwrap_err();
    assert!(e.to_string().contains("outside [0, 1]"), "{e}");
    let e = Call::new("Multinomial")
        .input(Tensor::from_vec(&[3], vec![0.5f32; 3]).unwrap())
        .run()
        .unwrap_err();
    assert!(e.to_string().contains("[batch, classes]"), "{e}");
    let e = Call::new("Multinomial")
        .input(Tensor::from_vec(&[1, 2], vec![f32::NEG_INFINITY; 2]).unwrap())
        .run()
        .unwrap_err();
    assert!(e.to_string().contains("non-zero probability"), "{e}");
    let e = Call::new("Dropout")
        .input(Tensor::from_vec(&[2], vec![1.0f32; 2]).unwrap())
        .input(Tensor::from_vec(&[], vec![1.0f32]).unwrap())
        .input(Tensor::from_vec(&[], vec![true]).unwrap())
        .run()
        .unwrap_err();
    assert!(e.to_string().contains("ratio"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// On random shapes the rng kernels give the cpu reference kernels' shapes and dtypes
    /// (the values differ: different streams); inference Dropout gives the same values.
    #[test]
    fn shapes_and_dtypes_match_the_cpu_kernels(
        dims in prop::collection::vec(0usize..5, 0..4),
        dtype in prop::sample::select(vec![1i64, 10, 11]),
        samples in 0i64..6,
    ) {
        let n: usize = dims.iter().product();
        let idims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        let x = Tensor::from_vec(&dims, (0..n).map(|i| (i % 7) as f32 / 7.0).collect()).unwrap();
        let calls = vec![
            Call::new("RandomUniform").attr("shape", ints(&idims)).attr("dtype", AttrValue::Int(dtype)),
            Call::new("RandomNormal").attr("shape", ints(&idims)).attr("dtype", AttrValue::Int(dtype)),
            Call::new("RandomUniformLike").input(x.clone()),
            Call::new("RandomNormalLike").input(x.clone()).attr("dtype", AttrValue::Int(dtype)),
            Call::new("Bernoulli").input(x.clone()),
            Call::new("Multinomial")
                .input(Tensor::from_vec(&[dims.first().copied().unwrap_or(1), 3], vec![0.0f32; dims.first().copied().unwrap_or(1) * 3]).unwrap())
                .attr("sample_size", AttrValue::Int(samples)),
            {
                let mut c = Call::new("Dropout").input(x.clone()).input(Tensor::from_vec(&[], vec![0.5f32]).unwrap());
                c.outputs = 2;
                c
            },
        ];
        for c in calls {
            let (a, b) = (c.run().unwrap(), c.run_cpu().unwrap());
            for (a, b) in a.iter().zip(&b) {
                prop_assert_eq!(a.dtype(), b.dtype(), "{}", c.op);
                prop_assert_eq!(a.shape(), b.shape(), "{}", c.op);
            }
            if c.op == "Dropout" {
                prop_assert_eq!(bits(&a[0]), bits(&b[0]));
                prop_assert_eq!(bits(&a[1]), bits(&b[1]));
            }
        }
    }
}
