//! Every vector elementwise/normalization/reduction kernel against the `cpu` engine's kernel of
//! the same node, on the same large input, through the kernels' own `compute` (so the vector
//! numbers include the engine's threading and dispatch): the median time of each and the
//! ratio vector/cpu (below 1: the vector kernel is faster). The output buffer is allocated
//! once and reused, as the runtime's arena does, so page faults are not timed.
//!
//!   cargo run --release -p rge-vector --example ops_vs_cpu -- [--n 4194304] [--runs 15] [--threads 1]

use std::ptr::NonNull;
use std::time::Instant;

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    DType, Kernel, KernelCtx, KernelInit, KernelResult, OutputSink, Tensor, Value, ValueRef,
};

/// 64-byte aligned storage.
#[derive(Clone, Copy)]
#[repr(align(64))]
struct Line(#[allow(dead_code)] [u8; 64]);

/// One reusable output buffer (the runtime's arena slot).
struct Reuse {
    buf: Vec<Line>,
    taken: bool,
}

// SAFETY: the buffer is 64-aligned, initialized, grown to the requested size, handed out once
// per call (`taken`), and not touched by anything else while the kernel runs.
unsafe impl OutputSink for Reuse {
    fn output_count(&self) -> usize {
        1
    }
    fn alloc(&mut self, index: usize, dtype: DType, shape: &[usize]) -> KernelResult<NonNull<u8>> {
        if index != 0 || self.taken {
            return Err(rge_kernels::KernelError::invalid("one output, once"));
        }
        let bytes = dtype.bytes_for(shape.iter().product());
        let lines = bytes.div_ceil(64).max(1);
        if self.buf.len() < lines {
            self.buf.resize(lines, Line([0; 64]));
        }
        self.taken = true;
        Ok(NonNull::new(self.buf.as_mut_ptr().cast()).expect("non-null"))
    }
    fn put(&mut self, _: usize, _: Value) -> KernelResult<()> {
        Err(rge_kernels::KernelError::invalid("tensor outputs only"))
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time(k: &dyn Kernel, inputs: &[Value], threads: usize, runs: usize) -> f64 {
    let refs: Vec<Option<ValueRef<'_>>> = inputs.iter().map(|v| Some(v.as_ref())).collect();
    let mut sink = Reuse {
        buf: Vec::new(),
        taken: false,
    };
    let once = |sink: &mut Reuse| {
        sink.taken = false;
        let mut ctx = KernelCtx::new(&refs, sink).with_threads(threads);
        k.compute(&mut ctx).expect("kernel runs");
    };
    once(&mut sink);
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                once(&mut sink);
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn arg(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse().unwrap_or_else(|_| {
                eprintln!("ops_vs_cpu: `{name}` needs a positive integer, got `{v}`");
                std::process::exit(2)
            })
        })
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = arg(&args, "--n", 1 << 22);
    let runs = arg(&args, "--runs", 15).max(1);
    let threads = arg(&args, "--threads", 1).max(1);
    let x = Tensor::from_vec(
        &[n / 1024, 1024],
        (0..n).map(|i| (i % 1000) as f32 / 125.0 - 4.0).collect(),
    )
    .expect("tensor");
    let pos = Tensor::from_vec(
        &[n / 1024, 1024],
        (0..n).map(|i| (i % 997) as f32 / 100.0 + 0.01).collect(),
    )
    .expect("tensor");
    let row = Tensor::from_vec(&[1024], (0..1024).map(|i| i as f32 / 512.0).collect()).unwrap();
    let ones = Tensor::from_vec(&[1024], vec![1.0f32; 1024]).unwrap();
    let scalar = Tensor::from_vec(&[], vec![1.5f32]).unwrap();
    let mut cases: Vec<(String, &str, AttrMap, Vec<Tensor>)> = Vec::new();
    for op in rge_vector::elementwise::UNARY_OPS {
        let input = if matches!(*op, "Log" | "Sqrt") {
            &pos
        } else {
            &x
        };
        cases.push((op.to_string(), op, AttrMap::new(), vec![input.clone()]));
    }
    for op in ["Add", "Sub", "Mul", "Div", "Max", "Min", "PRelu"] {
        cases.push((op.into(), op, AttrMap::new(), vec![x.clone(), pos.clone()]));
    }
    cases.push((
        "Add row".into(),
        "Add",
        AttrMap::new(),
        vec![x.clone(), row.clone()],
    ));
    cases.push((
        "Mul scalar".into(),
        "Mul",
        AttrMap::new(),
        vec![x.clone(), scalar.clone()],
    ));
    cases.push((
        "Pow".into(),
        "Pow",
        AttrMap::new(),
        vec![pos.clone(), scalar],
    ));
    let mut axis = AttrMap::new();
    axis.set("axis", AttrValue::Int(-1));
    cases.push(("Softmax".into(), "Softmax", axis.clone(), vec![x.clone()]));
    cases.push((
        "LayerNorm".into(),
        "LayerNormalization",
        axis,
        vec![x.clone(), ones, row],
    ));
    let mut keep = AttrMap::new();
    keep.set("axes", AttrValue::ListInt(vec![-1]));
    cases.push((
        "ReduceSum".into(),
        "ReduceSum",
        AttrMap::new(),
        vec![x.clone()],
    ));
    cases.push(("ReduceMean".into(), "ReduceMean", keep, vec![x.clone()]));

    let mut reference = rge_kernels::KernelRegistryBuilder::new();
    rge_kernels_elementwise::register(&mut reference).unwrap();
    rge_kernels_nn::register(&mut reference).unwrap();
    rge_kernels_convert::register(&mut reference).unwrap();
    let reference = reference.build();
    let set = rge_vector::kernel_set().expect("vector kernels");
    println!(
        "{n} floats, {threads} thread(s), median of {runs}, vector ISA {}",
        rge_vector::Isa::best().name()
    );
    println!(
        "{:<16} {:>10} {:>10} {:>8}",
        "op", "cpu ms", "vector ms", "ratio"
    );
    let mut ratios = Vec::new();
    for (label, op, attrs, inputs) in &cases {
        let types: Vec<Option<DType>> = inputs.iter().map(|t| Some(t.dtype())).collect();
        let out = [Some(DType::Float)];
        let init = KernelInit {
            node_name: "bench",
            op_type: op,
            domain: "",
            opset: 21,
            attrs,
            input_types: &types,
            output_types: &out,
            subgraph_attrs: &[],
            constants: &[],
        };
        let Some(cpu) = reference.get("", op) else {
            continue;
        };
        let Some(def) = set.defs("", op).iter().find(|d| d.serves(21)) else {
            println!("{label:<16} (no vector kernel)");
            continue;
        };
        let (cpu, vec) = match (cpu(&init), (def.factory)(&init)) {
            (Ok(c), Ok(v)) => (c, v),
            (Err(e), _) | (_, Err(e)) => {
                println!("{label:<16} (not built: {e})");
                continue;
            }
        };
        let values: Vec<Value> = inputs.iter().cloned().map(Value::from).collect();
        let tc = time(cpu.as_ref(), &values, threads, runs);
        let tv = time(vec.as_ref(), &values, threads, runs);
        ratios.push(tv / tc);
        println!(
            "{label:<16} {:>10.3} {:>10.3} {:>8.3}",
            tc * 1e3,
            tv * 1e3,
            tv / tc
        );
    }
    let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
    let worst = ratios.iter().cloned().fold(0.0, f64::max);
    println!("geometric mean ratio {geo:.3}, worst {worst:.3}");
}
