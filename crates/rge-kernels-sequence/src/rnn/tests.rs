//! Cell tests against NumPy-computed values, and bad-input checks.

use rge_kernels::{run_owned, Tensor, Value};

use super::test_data::*;
use super::*;

fn kernel(kind: Kind, dirs: usize, reverse: bool, acts: Vec<Act>) -> Recurrent {
    Recurrent {
        kind,
        dirs,
        reverse,
        hidden: Some(2),
        batch_first: false,
        clip: None,
        acts,
        input_forget: false,
        linear_before_reset: false,
        fast: None,
        r_prepared: None,
        w_prepared: None,
        r_blocked: None,
    }
}

fn t(shape: &[usize], v: &[f32]) -> Value {
    Value::Tensor(Tensor::from_slice(shape, v).unwrap())
}

fn run(k: &Recurrent, ins: &[Option<Value>], n_out: usize) -> KernelResult<Vec<Vec<f32>>> {
    let refs: Vec<Option<&Value>> = ins.iter().map(Option::as_ref).collect();
    let outs = run_owned(k, &refs, n_out, 1, None)?;
    Ok(outs
        .into_iter()
        .map(|o| match o {
            Some(Value::Tensor(t)) => t.as_slice::<f32>().unwrap().to_vec(),
            _ => Vec::new(),
        })
        .collect())
}

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 + 1e-4 * w.abs(),
            "element {i}: {g} vs {w}"
        );
    }
}

#[test]
fn lstm_bidirectional_with_lengths_peepholes_and_clip() {
    let mut k = kernel(
        Kind::Lstm,
        2,
        false,
        [Act::Sigmoid, Act::Tanh, Act::Tanh].repeat(2),
    );
    k.clip = Some(0.8);
    let lens = Value::Tensor(Tensor::from_vec(&[3], vec![3i32, 2, 1]).unwrap());
    let ins = vec![
        Some(t(&[3, 3, 2], L_X)),
        Some(t(&[2, 8, 2], L_W)),
        Some(t(&[2, 8, 2], L_R)),
        Some(t(&[2, 16], L_B)),
        Some(lens),
        Some(t(&[2, 3, 2], L_H0)),
        Some(t(&[2, 3, 2], L_C0)),
        Some(t(&[2, 6], L_P)),
    ];
    let out = run(&k, &ins, 3).unwrap();
    close(&out[0], L_Y);
    close(&out[1], L_YH);
    close(&out[2], L_YC);
}

#[test]
fn gru_reverse_linear_before_reset_with_activation_params() {
    let mut k = kernel(
        Kind::Gru,
        1,
        true,
        vec![Act::HardSigmoid(0.3, 0.4), Act::Softsign],
    );
    k.linear_before_reset = true;
    let lens = Value::Tensor(Tensor::from_vec(&[3], vec![2i64, 3, 1]).unwrap());
    let ins = vec![
        Some(t(&[3, 3, 2], G_X)),
        Some(t(&[1, 6, 2], G_W)),
        Some(t(&[1, 6, 2], G_R)),
        Some(t(&[1, 12], G_B)),
        Some(lens),
        Some(t(&[1, 3, 2], G_H0)),
    ];
    let out = run(&k, &ins, 2).unwrap();
    close(&out[0], G_Y);
    close(&out[1], G_YH);
}

#[test]
fn rnn_bidirectional_per_direction_activations_and_batch_first() {
    let k = kernel(Kind::Rnn, 2, false, vec![Act::LeakyRelu(0.2), Act::Relu]);
    let ins = vec![
        Some(t(&[3, 3, 2], R_X)),
        Some(t(&[2, 2, 2], R_W)),
        Some(t(&[2, 2, 2], R_R)),
        Some(t(&[2, 4], R_B)),
    ];
    let out = run(&k, &ins, 2).unwrap();
    close(&out[0], R_Y);
    close(&out[1], R_YH);

    // layout = 1: the same data, batch first.
    let mut kb = kernel(Kind::Rnn, 2, false, vec![Act::LeakyRelu(0.2), Act::Relu]);
    kb.batch_first = true;
    let xb = swap01(R_X, 3, 3, 2);
    let mut ins_b = ins.clone();
    ins_b[0] = Some(t(&[3, 3, 2], &xb));
    let out_b = run(&kb, &ins_b, 2).unwrap();
    // Y: (seq, dirs, batch, H) → (batch, seq, dirs, H)
    let mut want = Vec::new();
    for b in 0..3 {
        for s in 0..3 {
            for d in 0..2 {
                let o = ((s * 2 + d) * 3 + b) * 2;
                want.extend_from_slice(&R_Y[o..o + 2]);
            }
        }
    }
    close(&out_b[0], &want);
    close(&out_b[1], &swap01(R_YH, 2, 3, 2));
}

#[test]
fn bad_inputs_are_errors() {
    let k = kernel(Kind::Rnn, 1, false, vec![Act::Tanh]);
    let x = t(&[3, 3, 2], R_X);
    let w = t(&[1, 2, 2], &R_W[..4]);
    let r = t(&[1, 2, 2], &R_R[..4]);
    // R of the wrong shape.
    let bad_r = t(&[1, 2, 3], &[0.0; 6]);
    assert!(run(&k, &[Some(x.clone()), Some(w.clone()), Some(bad_r)], 2).is_err());
    // sequence_lens out of range.
    let lens = Value::Tensor(Tensor::from_vec(&[3], vec![1i32, 4, 2]).unwrap());
    let ins = [
        Some(x.clone()),
        Some(w.clone()),
        Some(r.clone()),
        None,
        Some(lens),
    ];
    assert!(run(&k, &ins, 2).is_err());
    // hidden_size disagreeing with W.
    let mut k3 = kernel(Kind::Rnn, 1, false, vec![Act::Tanh]);
    k3.hidden = Some(3);
    assert!(run(&k3, &[Some(x.clone()), Some(w.clone()), Some(r.clone())], 2).is_err());
    // X of rank 2.
    let x2 = t(&[9, 2], R_X);
    assert!(run(&k, &[Some(x2), Some(w), Some(r)], 2).is_err());
}

/// A naive `A·Bᵀ` that counts how often it prepares a B; with `columns`, its prepared
/// operands compute column ranges (32-column aligned), so an LSTM with a constant R takes the
/// blocked path.
#[derive(Default)]
struct CountingGemm {
    prepared: std::sync::atomic::AtomicUsize,
    columns: bool,
}

fn naive_a_bt(
    m: usize,
    n: usize,
    k: usize,
    a: (&[f32], usize),
    b: (&[f32], usize),
    c: (&mut [f32], usize),
) {
    for i in 0..m {
        for j in 0..n {
            c.0[i * c.1 + j] = (0..k).map(|p| a.0[i * a.1 + p] * b.0[j * b.1 + p]).sum();
        }
    }
}

struct NaivePrepared {
    b: Vec<f32>,
    n: usize,
    k: usize,
}

impl PreparedBt for NaivePrepared {
    fn a_bt(
        &self,
        m: usize,
        a: (&[f32], usize),
        c: (&mut [f32], usize),
        _threads: usize,
    ) -> KernelResult<()> {
        naive_a_bt(m, self.n, self.k, a, (&self.b, self.k), c);
        Ok(())
    }

    fn a_bt_columns(
        &self,
        m: usize,
        a: (&[f32], usize),
        cols: std::ops::Range<usize>,
        c: (&mut [f32], usize),
    ) -> KernelResult<bool> {
        assert!(cols.start % 32 == 0 && cols.end <= self.n, "{cols:?}");
        let b = &self.b[cols.start * self.k..cols.end * self.k];
        naive_a_bt(m, cols.len(), self.k, a, (b, self.k), c);
        Ok(true)
    }
}

impl FastGemm for CountingGemm {
    fn a_bt(
        &self,
        m: usize,
        n: usize,
        k: usize,
        a: (&[f32], usize),
        b: (&[f32], usize),
        c: (&mut [f32], usize),
        _threads: usize,
    ) -> KernelResult<()> {
        naive_a_bt(m, n, k, a, b, c);
        Ok(())
    }

    fn prepare_bt(
        &self,
        b: &[f32],
        n: usize,
        k: usize,
        ldb: usize,
    ) -> KernelResult<Option<Box<dyn PreparedBt>>> {
        self.prepared
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let b = (0..n)
            .flat_map(|j| b[j * ldb..j * ldb + k].to_vec())
            .collect();
        Ok(Some(Box::new(NaivePrepared { b, n, k })))
    }

    fn column_align(&self) -> Option<usize> {
        self.columns.then_some(32)
    }
}

#[test]
fn constant_weights_are_prepared_once_when_the_kernel_is_built() {
    use rge_ir::{AttrMap, AttrValue};
    let (seq, batch, input, hidden, dirs) = (3, 2, 3, 4, 2);
    let val = |n: usize, s: f32| {
        (0..n)
            .map(|i| ((i as f32 * 0.37 + s).sin()) * 0.5)
            .collect::<Vec<f32>>()
    };
    let x = Tensor::from_vec(&[seq, batch, input], val(seq * batch * input, 0.1)).unwrap();
    let w = Tensor::from_vec(
        &[dirs, 4 * hidden, input],
        val(dirs * 4 * hidden * input, 0.2),
    )
    .unwrap();
    let r = Tensor::from_vec(
        &[dirs, 4 * hidden, hidden],
        val(dirs * 4 * hidden * hidden, 0.3),
    )
    .unwrap();
    let mut attrs = AttrMap::new();
    attrs.set("hidden_size", AttrValue::Int(hidden as i64));
    attrs.set("direction", "bidirectional");
    let types = [Some(DType::Float); 3];
    let ins = [
        Some(Value::Tensor(x)),
        Some(Value::Tensor(w.clone())),
        Some(Value::Tensor(r.clone())),
    ];
    let refs: Vec<Option<&Value>> = ins.iter().map(Option::as_ref).collect();
    let outputs = |k: &dyn Kernel| -> Vec<Vec<f32>> {
        run_owned(k, &refs, 3, 1, None)
            .unwrap()
            .into_iter()
            .map(|o| match o {
                Some(Value::Tensor(t)) => t.as_slice::<f32>().unwrap().to_vec(),
                _ => Vec::new(),
            })
            .collect()
    };
    let build_with = |consts: &[Option<&Tensor>], fast: Option<Arc<CountingGemm>>| {
        let init = KernelInit {
            node_name: "lstm",
            op_type: "LSTM",
            domain: "",
            opset: 22,
            attrs: &attrs,
            input_types: &types,
            output_types: &[Some(DType::Float); 3],
            subgraph_attrs: &[],
            constants: consts,
        };
        match fast {
            Some(f) => recurrent_with(&init, f).unwrap(),
            None => lstm(&init).unwrap(),
        }
    };
    let want = outputs(build_with(&[None, None, None], None).as_ref());
    let run_twice_as_reference = |k: &dyn Kernel| {
        for _ in 0..2 {
            for (g, w) in outputs(k).iter().zip(&want) {
                close(g, w);
            }
        }
    };

    let prepared = |f: &CountingGemm| f.prepared.load(std::sync::atomic::Ordering::Relaxed);
    // (W constant, R constant) → prepares at build, and after two runs.
    for (w_const, r_const, at_build, after) in [
        (false, true, dirs, dirs),
        (true, true, 2 * dirs, 2 * dirs),
        // R given at run time: prepared on every run, once per direction.
        (true, false, dirs, 3 * dirs),
        (false, false, 0, 2 * dirs),
    ] {
        let fast = Arc::new(CountingGemm::default());
        let consts = [None, w_const.then_some(&w), r_const.then_some(&r)];
        let k = build_with(&consts, Some(fast.clone()));
        assert_eq!(
            prepared(&fast),
            at_build,
            "W {w_const}, R {r_const}: at build"
        );
        run_twice_as_reference(k.as_ref());
        assert_eq!(
            prepared(&fast),
            after,
            "W {w_const}, R {r_const}: after two runs"
        );
    }
}

/// The blocked LSTM (each thread a fixed range of hidden units, R in block order) gives the
/// reference kernel's outputs: hidden sizes with a short last block and several blocks,
/// rows of different lengths, peepholes, clip, both directions, 1 to 4 threads.
#[test]
fn blocked_lstm_matches_the_reference() {
    use rge_ir::{AttrMap, AttrValue};
    let val = |n: usize, s: f32| {
        (0..n)
            .map(|i| ((i as f32 * 0.37 + s).sin()) * 0.4)
            .collect::<Vec<f32>>()
    };
    for (hidden, direction, dirs) in [
        (70, "bidirectional", 2),
        (130, "forward", 1),
        (8, "reverse", 1),
    ] {
        let (seq, batch, input) = (5, 3, 4);
        let tensor = |shape: &[usize], s: f32| {
            Tensor::from_vec(shape, val(shape.iter().product(), s)).unwrap()
        };
        let x = tensor(&[seq, batch, input], 0.1);
        let w = tensor(&[dirs, 4 * hidden, input], 0.2);
        let r = tensor(&[dirs, 4 * hidden, hidden], 0.3);
        let b = tensor(&[dirs, 8 * hidden], 0.4);
        let lens = Tensor::from_vec(&[batch], vec![5i32, 3, 1]).unwrap();
        let h0 = tensor(&[dirs, batch, hidden], 0.5);
        let c0 = tensor(&[dirs, batch, hidden], 0.6);
        let p = tensor(&[dirs, 3 * hidden], 0.7);
        let mut attrs = AttrMap::new();
        attrs.set("hidden_size", AttrValue::Int(hidden as i64));
        attrs.set("direction", direction);
        attrs.set("clip", AttrValue::Float(0.9));
        let types = [Some(DType::Float); 8];
        let ins: Vec<Option<Value>> = [x, w, r.clone(), b, lens, h0, c0, p]
            .into_iter()
            .map(|t| Some(Value::Tensor(t)))
            .collect();
        let refs: Vec<Option<&Value>> = ins.iter().map(Option::as_ref).collect();
        let consts = [None, None, Some(&r)];
        let init = KernelInit {
            node_name: "lstm",
            op_type: "LSTM",
            domain: "",
            opset: 22,
            attrs: &attrs,
            input_types: &types,
            output_types: &[Some(DType::Float); 3],
            subgraph_attrs: &[],
            constants: &consts,
        };
        let outputs = |k: &dyn Kernel, threads: usize| -> Vec<Vec<f32>> {
            run_owned(k, &refs, 3, threads, None)
                .unwrap()
                .into_iter()
                .map(|o| match o {
                    Some(Value::Tensor(t)) => t.as_slice::<f32>().unwrap().to_vec(),
                    _ => Vec::new(),
                })
                .collect()
        };
        let want = outputs(lstm(&init).unwrap().as_ref(), 1);
        let fast = Arc::new(CountingGemm {
            columns: true,
            ..Default::default()
        });
        let k = recurrent_with(&init, fast.clone()).unwrap();
        assert_eq!(
            fast.prepared.load(std::sync::atomic::Ordering::Relaxed),
            dirs,
            "R prepared once per direction, in block order"
        );
        for threads in 1..=4 {
            let got = outputs(k.as_ref(), threads);
            for (g, w) in got.iter().zip(&want) {
                close(g, w);
            }
        }
    }
}
