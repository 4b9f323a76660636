//! The graph optimizations end to end (docs/optimizations.md): each pass fires on a graph
//! built here, the outputs match the unoptimized compile (`--optimization none`), and each
//! near miss is left as it was (and still computes the same).

#[path = "common/net.rs"]
mod net;

use net::*;
use rge::engines::EngineArgs;

#[test]
fn identity_dropout_dead_nodes_and_cse() {
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 3, 4]);
    let i = n.op("Identity", &[&x], vec![]);
    let d = n.op("Dropout", &[&i], vec![]);
    let a = n.op("Relu", &[&d], vec![]);
    let b = n.op("Relu", &[&x], vec![]);
    let _dead = n.op("Sigmoid", &[&x], vec![]);
    n.op_to("Add", &[&a, &b], "y", vec![]);
    n.output("y", F32, &[2, 3, 4]);
    let c = both(&n.model());
    for gone in ["Identity", "Dropout", "Sigmoid"] {
        assert!(!c.has(gone), "{gone}: {:?}", c.types);
    }
    assert_eq!(c.count("Relu"), 1, "{:?}", c.types);
    assert!(c.rewrites("identity_removal") >= 1);
    assert!(c.rewrites("dropout_removal") >= 1);
    assert!(c.rewrites("dead_nodes") >= 1);
    assert!(c.rewrites("common_subexpressions") >= 1);
    // Basic has them all; none leaves the graph as it was.
    let basic = compile(&n.model(), level("basic"));
    assert_eq!(basic.count("Relu"), 1);
    let none = compile(&n.model(), level("none"));
    assert!(none.has("Identity") && none.has("Dropout") && none.count("Relu") == 2);
    assert!(none.reports.is_empty());
}

#[test]
fn an_identity_that_is_a_graph_output_stays() {
    let mut n = Net::new();
    let x = n.input("x", F32, &[4]);
    let r = n.op("Relu", &[&x], vec![]);
    n.op_to("Identity", &[&r], "y", vec![]);
    n.output("y", F32, &[4]);
    let c = both(&n.model());
    assert!(c.has("Identity"), "{:?}", c.types);
}

#[test]
fn a_dropout_in_training_mode_stays() {
    let mut n = Net::new();
    let x = n.input("x", F32, &[4, 4]);
    let ratio = n.scalar(0.0);
    // training_mode from a graph input: not known to be false.
    let t = n.input("t", 9, &[]);
    let d = n.op("Dropout", &[&x, &ratio, &t], vec![]);
    n.op_to("Relu", &[&d], "y", vec![]);
    n.output("y", F32, &[4, 4]);
    let set_none = compile_dropout(&n);
    assert!(set_none.has("Dropout"), "{:?}", set_none.types);
}

fn compile_dropout(n: &Net) -> Compiled {
    // The bool input cannot come from `inputs_of`; only the graph is checked here.
    let set = rge::engines::engine_set(&EngineArgs::default()).unwrap();
    let model = set.pipeline().compile(graph_of(&n.model())).unwrap();
    Compiled::of_root(&model.graph, vec![], model.optimizations)
}

#[test]
fn casts_that_change_nothing_go_and_rounding_ones_stay() {
    let mut n = Net::new();
    let x = n.input("x", F32, &[8]);
    let same = n.op("Cast", &[&x], vec![a_int("to", F32 as i64)]);
    let wide = n.op("Cast", &[&same], vec![a_int("to", F64 as i64)]);
    let back = n.op("Cast", &[&wide], vec![a_int("to", F32 as i64)]);
    // Near miss: through f16, which rounds.
    let half = n.op("Cast", &[&back], vec![a_int("to", F16 as i64)]);
    n.op_to("Cast", &[&half], "y", vec![a_int("to", F32 as i64)]);
    n.output("y", F32, &[8]);
    let c = both(&n.model());
    assert_eq!(c.count("Cast"), 2, "{:?}", c.types);
    assert!(c.rewrites("cast_elimination") >= 2);
}

#[test]
fn transposes_cancel_merge_and_sink_through_elementwise_ops() {
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 3, 4]);
    // Cancel: perm [1,0,2] twice.
    let t1 = n.op("Transpose", &[&x], vec![a_ints("perm", &[1, 0, 2])]);
    let t2 = n.op("Transpose", &[&t1], vec![a_ints("perm", &[1, 0, 2])]);
    // Sink: T([0,2,1]) → Relu → Mul by a scalar → T([0,2,1]).
    let t3 = n.op("Transpose", &[&t2], vec![a_ints("perm", &[0, 2, 1])]);
    let r = n.op("Relu", &[&t3], vec![]);
    let t4 = n.op("Transpose", &[&r], vec![a_ints("perm", &[0, 2, 1])]);
    let two = n.scalar(2.0);
    let t5 = n.op("Transpose", &[&t4], vec![a_ints("perm", &[2, 0, 1])]);
    let m = n.op("Mul", &[&t5, &two], vec![]);
    // Merge: [2,0,1] after [1,0,2] is not the identity: one Transpose stays.
    let t6 = n.op("Transpose", &[&m], vec![a_ints("perm", &[1, 0, 2])]);
    n.op_to("Transpose", &[&t6], "y", vec![a_ints("perm", &[0, 2, 1])]);
    n.output("y", F32, &[2, 3, 4]);
    let c = both(&n.model());
    assert!(c.rewrites("transpose_cancellation") >= 3, "{:?}", c.reports);
    assert!(c.count("Transpose") <= 2, "{:?}", c.types);
}

#[test]
fn reshape_chains_collapse() {
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 3, 4]);
    let s1 = n.ints(&[6, 4]);
    let s2 = n.ints(&[4, 6]);
    let s3 = n.ints(&[2, 3, 4]);
    let r1 = n.op("Reshape", &[&x, &s1], vec![]);
    let r2 = n.op("Reshape", &[&r1, &s2], vec![]);
    let e = n.op("Exp", &[&r2], vec![]);
    let r3 = n.op("Reshape", &[&e, &s1], vec![]);
    let r4 = n.op("Reshape", &[&r3, &s3], vec![]);
    n.op_to("Relu", &[&r4], "y", vec![]);
    n.output("y", F32, &[2, 3, 4]);
    let c = both(&n.model());
    // r1·r2 become one Reshape; r3·r4 give back the shape of `e`: a Reshape to 2x3x4 alone.
    assert_eq!(c.count("Reshape"), 2, "{:?}", c.types);
    assert!(c.rewrites("reshape_cancellation") >= 2);
}

#[test]
fn shape_chains_on_static_shapes_become_constants() {
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 3, 4]);
    let s = n.op("Shape", &[&x], vec![]);
    let zero = n.ints(&[0]);
    let g0 = n.op("Gather", &[&s, &zero], vec![a_int("axis", 0)]);
    let minus = n.ints(&[-1]);
    let shape = n.op("Concat", &[&g0, &minus], vec![a_int("axis", 0)]);
    n.op_to("Reshape", &[&x, &shape], "y", vec![]);
    n.output("y", F32, &[2, 12]);
    let c = both(&n.model());
    for gone in ["Shape", "Gather", "Concat"] {
        assert!(!c.has(gone), "{gone}: {:?}", c.types);
    }
    assert!(c.rewrites("shape_to_const") == 1 && c.rewrites("constant_folding") >= 2);
}

/// `x · 0.5 · (1 + Erf(x / √2))` grouped as `form`, on `[4, 16]`.
fn erf_gelu(form: u8, half: f32, sqrt2: f32) -> Net {
    let mut n = Net::new();
    let x = n.input("x", F32, &[4, 16]);
    let c = n.scalar(sqrt2);
    let d = n.op("Div", &[&x, &c], vec![]);
    let e = n.op("Erf", &[&d], vec![]);
    let one = n.scalar(1.0);
    let a = n.op("Add", &[&e, &one], vec![]);
    let h = n.scalar(half);
    match form {
        0 => {
            let m = n.op("Mul", &[&x, &a], vec![]);
            n.op_to("Mul", &[&m, &h], "y", vec![]);
        }
        1 => {
            let m = n.op("Mul", &[&a, &h], vec![]);
            n.op_to("Mul", &[&x, &m], "y", vec![]);
        }
        _ => {
            let m = n.op("Mul", &[&x, &h], vec![]);
            n.op_to("Mul", &[&m, &a], "y", vec![]);
        }
    }
    n.output("y", F32, &[4, 16]);
    n
}

#[test]
fn erf_gelu_fuses_in_every_grouping() {
    for form in 0..3 {
        let c = both(&erf_gelu(form, 0.5, std::f32::consts::SQRT_2).model());
        assert_eq!(
            c.types.iter().filter(|t| *t == "Gelu").count(),
            1,
            "{form}: {:?}",
            c.types
        );
        assert!(!c.has("Erf"), "{:?}", c.types);
    }
}

#[test]
fn gelu_near_misses_stay() {
    // A wrong constant.
    let c = both(&erf_gelu(0, 0.6, std::f32::consts::SQRT_2).model());
    assert!(c.has("Erf") && !c.has("Gelu"), "{:?}", c.types);
    let c = both(&erf_gelu(1, 0.5, 1.5).model());
    assert!(c.has("Erf") && !c.has("Gelu"), "{:?}", c.types);
    // An inner value with another reader.
    let mut n = erf_gelu(0, 0.5, std::f32::consts::SQRT_2);
    n.op_to("Neg", &["erf4"], "z", vec![]);
    n.output("z", F32, &[4, 16]);
    let c = both(&n.model());
    assert!(c.has("Erf") && !c.has("Gelu"), "{:?}", c.types);
    // Turned off by name.
    let m = erf_gelu(0, 0.5, std::f32::consts::SQRT_2).model();
    let c = both_with(
        &m,
        EngineArgs {
            disable_passes: Some("gelu_fusion".into()),
            ..no_fused()
        },
    );
    assert!(c.has("Erf") && !c.has("Gelu"), "{:?}", c.types);
}

#[test]
fn tanh_gelu_fuses() {
    let mut n = Net::new();
    let x = n.input("x", F32, &[4, 16]);
    let three = n.scalar(3.0);
    let x3 = n.op("Pow", &[&x, &three], vec![]);
    let k1 = n.scalar(0.044715);
    let m1 = n.op("Mul", &[&x3, &k1], vec![]);
    let s = n.op("Add", &[&x, &m1], vec![]);
    let k2 = n.scalar((2.0 / std::f32::consts::PI).sqrt());
    let i = n.op("Mul", &[&s, &k2], vec![]);
    let t = n.op("Tanh", &[&i], vec![]);
    let one = n.scalar(1.0);
    let a = n.op("Add", &[&t, &one], vec![]);
    let h = n.scalar(0.5);
    let xh = n.op("Mul", &[&x, &h], vec![]);
    n.op_to("Mul", &[&xh, &a], "y", vec![]);
    n.output("y", F32, &[4, 16]);
    let c = both(&n.model());
    assert!(
        c.has("Gelu") && !c.has("Tanh") && !c.has("Pow"),
        "{:?}",
        c.types
    );
}

#[test]
fn gelu_after_a_matmul_goes_into_the_dense_epilogue() {
    let mut n = Net::new();
    let x = n.input("x", F32, &[4, 8]);
    let w = n.weight(&[8, 16], 3);
    let b = n.weight(&[16], 4);
    let mm = n.op("MatMul", &[&x, &w], vec![]);
    let y = n.op("Add", &[&mm, &b], vec![]);
    let c2 = n.scalar(std::f32::consts::SQRT_2);
    let d = n.op("Div", &[&y, &c2], vec![]);
    let e = n.op("Erf", &[&d], vec![]);
    let one = n.scalar(1.0);
    let a = n.op("Add", &[&e, &one], vec![]);
    let m = n.op("Mul", &[&y, &a], vec![]);
    let h = n.scalar(0.5);
    n.op_to("Mul", &[&m, &h], "out", vec![]);
    n.output("out", F32, &[4, 16]);
    let c = both(&n.model());
    assert_eq!(c.count("FusedMatMul"), 1, "{:?}", c.types);
    assert!(
        !c.has("Gelu") && !c.has("Erf") && !c.has("Gemm"),
        "{:?}",
        c.types
    );
}

#[test]
fn silu_fuses_and_its_near_miss_stays() {
    let mut n = Net::new();
    let x = n.input("x", F32, &[3, 5]);
    let s = n.op("Sigmoid", &[&x], vec![]);
    n.op_to("Mul", &[&x, &s], "y", vec![]);
    n.output("y", F32, &[3, 5]);
    let c = both(&n.model());
    assert!(c.has("Swish") && !c.has("Sigmoid"), "{:?}", c.types);
    // The Sigmoid read by something else too.
    n.op_to("Neg", &[&s], "z", vec![]);
    n.output("z", F32, &[3, 5]);
    let c = both(&n.model());
    assert!(c.has("Sigmoid") && !c.has("Swish"), "{:?}", c.types);
    // x · Sigmoid(y) with y ≠ x.
    let mut n = Net::new();
    let x = n.input("x", F32, &[3, 5]);
    let x2 = n.input("x2", F32, &[3, 5]);
    let s = n.op("Sigmoid", &[&x2], vec![]);
    n.op_to("Mul", &[&x, &s], "y", vec![]);
    n.output("y", F32, &[3, 5]);
    let c = both(&n.model());
    assert!(!c.has("Swish"), "{:?}", c.types);
}

/// Options of the written-out LayerNorm for its near misses.
#[derive(Clone, Copy, Default)]
struct Ln {
    wrong_axis: bool,
    eps_after_sqrt: bool,
    eps_input: bool,
    mean_read_twice: bool,
}

fn layer_norm(o: Ln) -> Net {
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 3, 8]);
    let axes = if o.wrong_axis { vec![1] } else { vec![-1] };
    let mean = n.op("ReduceMean", &[&x], vec![a_ints("axes", &axes)]);
    let d = n.op("Sub", &[&x, &mean], vec![]);
    let two = n.scalar(2.0);
    let p = n.op("Pow", &[&d, &two], vec![]);
    let var = n.op("ReduceMean", &[&p], vec![a_ints("axes", &axes)]);
    let eps = if o.eps_input {
        n.input("eps", F32, &[])
    } else {
        n.scalar(1e-5)
    };
    let s = if o.eps_after_sqrt {
        let q = n.op("Sqrt", &[&var], vec![]);
        n.op("Add", &[&q, &eps], vec![])
    } else {
        let e = n.op("Add", &[&var, &eps], vec![]);
        n.op("Sqrt", &[&e], vec![])
    };
    let div = n.op("Div", &[&d, &s], vec![]);
    let gamma = n.weight(&[8], 1);
    let beta = n.weight(&[8], 2);
    let m = n.op("Mul", &[&div, &gamma], vec![]);
    n.op_to("Add", &[&m, &beta], "y", vec![]);
    n.output("y", F32, &[2, 3, 8]);
    if o.mean_read_twice {
        n.op_to("Neg", &[&mean], "z", vec![]);
        n.output("z", F32, &[2, 3, 1]);
    }
    n
}

#[test]
fn layernorm_fuses() {
    let c = both(&layer_norm(Ln::default()).model());
    assert_eq!(c.count("LayerNormalization"), 1, "{:?}", c.types);
    for gone in ["ReduceMean", "Sqrt", "Pow", "Div"] {
        assert!(!c.has(gone), "{gone}: {:?}", c.types);
    }
}

#[test]
fn layernorm_near_misses_stay() {
    for o in [
        Ln {
            wrong_axis: true,
            ..Ln::default()
        },
        Ln {
            eps_after_sqrt: true,
            ..Ln::default()
        },
        Ln {
            eps_input: true,
            ..Ln::default()
        },
        Ln {
            mean_read_twice: true,
            ..Ln::default()
        },
    ] {
        let c = both(&layer_norm(o).model());
        assert!(
            !c.has("LayerNormalization") && c.has("ReduceMean"),
            "{:?}",
            c.types
        );
    }
}

/// Attention as BERT exports it: heads of Q, K (transposed to [B,H,D,S]) and V, scores
/// divided by √D, an additive [B,1,1,S] mask, Softmax, MatMul V.
#[derive(Clone, Copy, Default)]
struct Att {
    softmax_axis: Option<i64>,
    scale_input: bool,
    scores_read_twice: bool,
    no_mask: bool,
    mul_scale: bool,
    /// A causal `Where` mask instead of the additive one; `true`: its first row masks all.
    where_mask: Option<bool>,
    /// Everything in f64 (the fused op is used for f32 only).
    f64: bool,
}

fn attention(o: Att) -> Net {
    let (b, s, h, d) = (1i64, 6i64, 2i64, 4i64);
    let mut n = Net::new();
    let t = if o.f64 { F64 } else { F32 };
    let q = n.input("q", t, &[b, s, h * d]);
    let k = n.input("k", t, &[b, s, h * d]);
    let v = n.input("v", t, &[b, s, h * d]);
    let mask = n.input("mask", t, &[b, 1, 1, s]);
    let shape = n.ints(&[b, s, h, d]);
    let heads = |n: &mut Net, x: &str, perm: &[i64]| {
        let r = n.op("Reshape", &[x, &shape], vec![]);
        n.op("Transpose", &[&r], vec![a_ints("perm", perm)])
    };
    let qh = heads(&mut n, &q, &[0, 2, 1, 3]);
    let kt = heads(&mut n, &k, &[0, 2, 3, 1]);
    let vh = heads(&mut n, &v, &[0, 2, 1, 3]);
    let qk = n.op("MatMul", &[&qh, &kt], vec![]);
    let scaled = if o.scale_input {
        let c = n.input("scale", F32, &[]);
        n.op("Div", &[&qk, &c], vec![])
    } else if o.mul_scale {
        let c = n.scalar(0.5);
        n.op("Mul", &[&qk, &c], vec![])
    } else if o.f64 {
        let c = n.scalar_f64((d as f64).sqrt());
        n.op("Div", &[&qk, &c], vec![])
    } else {
        let c = n.scalar((d as f32).sqrt());
        n.op("Div", &[&qk, &c], vec![])
    };
    let masked = if let Some(empty_row) = o.where_mask {
        let mut causal: Vec<bool> = (0..s * s).map(|i| i % s <= i / s).collect();
        if empty_row {
            causal[0] = false;
        }
        let cond = n.bools(&[1, 1, s, s], &causal);
        let neg = n.scalar(f32::MIN);
        n.op("Where", &[&cond, &scaled, &neg], vec![])
    } else if o.no_mask {
        scaled.clone()
    } else {
        n.op("Add", &[&scaled, &mask], vec![])
    };
    let attrs = o
        .softmax_axis
        .map_or_else(Vec::new, |a| vec![a_int("axis", a)]);
    let p = n.op("Softmax", &[&masked], attrs);
    let ctx = n.op("MatMul", &[&p, &vh], vec![]);
    let t = n.op("Transpose", &[&ctx], vec![a_ints("perm", &[0, 2, 1, 3])]);
    let out_shape = n.ints(&[b, s, h * d]);
    n.op_to("Reshape", &[&t, &out_shape], "y", vec![]);
    n.output("y", F32, &[b, s, h * d]);
    if o.scores_read_twice {
        n.op_to("Neg", &[&scaled], "z", vec![]);
        n.output("z", F32, &[b, h, s, s]);
    }
    if o.no_mask || o.where_mask.is_some() {
        // Keep the mask input read.
        n.op_to("Identity", &[&mask], "m", vec![]);
        n.output("m", F32, &[b, 1, 1, s]);
    }
    n
}

#[test]
fn attention_fuses_with_mask_and_scale() {
    let c = both(&attention(Att::default()).model());
    assert_eq!(c.count("Attention"), 1, "{:?}", c.types);
    // The dense engine runs it (its GEMMs and vector softmax), matching the unfused graph.
    assert_eq!(c.engines_of("Attention"), ["dense"]);
    assert!(!c.has("Softmax") && !c.has("MatMul"), "{:?}", c.types);
    // K's transpose to [B,H,D,S] became one to [B,H,S,D]: three Transposes in, one out.
    assert_eq!(c.count("Transpose"), 4, "{:?}", c.types);
    let c = both(
        &attention(Att {
            no_mask: true,
            mul_scale: true,
            ..Att::default()
        })
        .model(),
    );
    assert_eq!(c.count("Attention"), 1, "{:?}", c.types);
    // GPT-2's causal Where mask becomes a bool mask.
    let c = both(
        &attention(Att {
            where_mask: Some(false),
            ..Att::default()
        })
        .model(),
    );
    assert_eq!(c.count("Attention"), 1, "{:?}", c.types);
    assert_eq!(c.engines_of("Attention"), ["dense"]);
    assert!(!c.has("Where"), "{:?}", c.types);
}

#[test]
fn attention_in_a_type_the_fused_op_is_not_used_for_stays() {
    let m = attention(Att {
        f64: true,
        ..Att::default()
    })
    .model();
    let c = both(&m);
    assert!(!c.has("Attention") && c.has("Softmax"), "{:?}", c.types);
}

#[test]
fn attention_near_misses_stay() {
    for o in [
        Att {
            softmax_axis: Some(2),
            ..Att::default()
        },
        Att {
            scale_input: true,
            ..Att::default()
        },
        Att {
            scores_read_twice: true,
            ..Att::default()
        },
        // A row masked everywhere: uniform under Where, zero under a bool mask.
        Att {
            where_mask: Some(true),
            ..Att::default()
        },
    ] {
        let c = both(&attention(o).model());
        assert!(!c.has("Attention") && c.has("Softmax"), "{:?}", c.types);
    }
}

fn matmul_add() -> Net {
    let mut n = Net::new();
    let x = n.input("x", F32, &[4, 8]);
    let w = n.weight(&[8, 16], 3);
    let b = n.weight(&[16], 4);
    let mm = n.op("MatMul", &[&x, &w], vec![]);
    n.op_to("Add", &[&mm, &b], "y", vec![]);
    n.output("y", F32, &[4, 16]);
    n
}

#[test]
fn matmul_add_becomes_gemm_where_dense_does_not_fuse_it() {
    let no_dense = EngineArgs {
        exclude_engines: Some("dense".into()),
        ..EngineArgs::default()
    };
    let c = both_with(&matmul_add().model(), no_dense);
    assert_eq!(c.count("Gemm"), 1, "{:?}", c.types);
    assert!(!c.has("MatMul") && !c.has("Add"));
    // With the dense engine its epilogue fusion takes the pair first.
    let c = both(&matmul_add().model());
    assert_eq!(c.count("FusedMatMul"), 1, "{:?}", c.types);
    assert!(!c.has("Gemm"));
}

#[test]
fn matmul_add_near_miss_3d_stays() {
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 4, 8]);
    let w = n.weight(&[8, 16], 3);
    let b = n.weight(&[16], 4);
    let mm = n.op("MatMul", &[&x, &w], vec![]);
    n.op_to("Add", &[&mm, &b], "y", vec![]);
    n.output("y", F32, &[2, 4, 16]);
    let no_dense = EngineArgs {
        exclude_engines: Some("dense".into()),
        ..EngineArgs::default()
    };
    let c = both_with(&n.model(), no_dense);
    assert!(!c.has("Gemm") && c.has("MatMul"), "{:?}", c.types);
}

#[test]
fn bad_levels_and_pass_names_are_errors_naming_the_option() {
    let e = rge::engines::engine_set(&level("most")).unwrap_err();
    assert!(e.to_string().contains("--optimization"), "{e}");
    assert!(e.to_string().contains("`most`"), "{e}");
    let e = rge::engines::engine_set(&EngineArgs {
        disable_passes: Some("gelu".into()),
        ..EngineArgs::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("--disable-passes"), "{e}");
    assert!(e.to_string().contains("`gelu`"), "{e}");
}

#[test]
fn explain_lists_the_passes_and_what_each_fused_node_replaced() {
    use prost::Message;
    let dir = std::env::temp_dir().join(format!("rge_graph_opt_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("gelu.onnx");
    let m = erf_gelu(0, 0.5, std::f32::consts::SQRT_2).model();
    std::fs::write(&file, m.encode_to_vec()).unwrap();
    let text = rge::cli::explain::run(&file, &EngineArgs::default(), false, None).unwrap();
    assert!(text.contains("graph optimizations (14):"), "{text}");
    assert!(
        text.contains("gelu_fusion (all): 1 rewrites, nodes 10 -> 3"),
        "{text}"
    );
    assert!(text.contains("made by pass `gelu_fusion` from: "), "{text}");
    let none = rge::cli::explain::run(&file, &level("none"), false, None).unwrap();
    assert!(
        none.contains("graph optimizations (0):") || none.contains("graph optimizations: none"),
        "{none}"
    );
    let json = rge::cli::explain::run(&file, &EngineArgs::default(), true, None).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v["passes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p["name"] == "gelu_fusion" && p["rewrites"] == 1));
    std::fs::remove_dir_all(&dir).ok();
}
