//! The function-expanded node tests of this family's ops (`*_expanded*`), which also use
//! Constant, CastLike and Identity: those three get minimal test-only kernels here so that
//! the elementwise kernels are checked inside the expanded graphs too.

use rge_conformance::{list_tests, node_tests_dir, run_suite, Outcome, Tolerance};
use rge_kernels::{
    dispatch_numeric_bool, DType, Elem, Kernel, KernelCtx, KernelError, KernelInit,
    KernelRegistryBuilder, KernelResult, Tensor,
};

struct Constant(Tensor);

impl Kernel for Constant {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        ctx.put(0, self.0.clone())
    }
}

fn constant(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let t = if let Some(t) = init.tensor_opt("value")? {
        t
    } else if let Some(v) = init.float_opt("value_float")? {
        Tensor::scalar(v)
    } else if let Some(v) = init.int_opt("value_int")? {
        Tensor::scalar(v)
    } else if let Some(v) = init.floats_opt("value_floats")? {
        Tensor::from_slice(&[v.len()], v)?
    } else if let Some(v) = init.ints_opt("value_ints")? {
        Tensor::from_slice(&[v.len()], v)?
    } else {
        return Err(KernelError::attr("value", "no supported value attribute"));
    };
    Ok(Box::new(Constant(t)))
}

struct Identity;

impl Kernel for Identity {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        ctx.put(0, x.to_owned())
    }
}

/// Numeric conversion through f64 (enough for the expanded tests' scalar constants).
trait FromF64: Elem {
    fn from_f64(v: f64) -> Self;
}

macro_rules! from_f64 {
    ($($t:ty => |$v:ident| $e:expr),*) => {$(
        impl FromF64 for $t {
            fn from_f64($v: f64) -> Self { $e }
        }
    )*};
}

from_f64!(
    f32 => |v| v as f32, f64 => |v| v, rge_kernels::f16 => |v| rge_kernels::f16::from_f64(v),
    rge_kernels::bf16 => |v| rge_kernels::bf16::from_f64(v),
    i8 => |v| v as i8, i16 => |v| v as i16, i32 => |v| v as i32, i64 => |v| v as i64,
    u8 => |v| v as u8, u16 => |v| v as u16, u32 => |v| v as u32, u64 => |v| v as u64,
    bool => |v| v != 0.0
);

struct CastLike;

impl Kernel for CastLike {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let to: DType = ctx.input(1)?.dtype();
        let vals = x.to_f64_vec()?;
        let shape = x.shape().to_vec();
        let t = dispatch_numeric_bool!(to, T => Tensor::from_vec(
            &shape,
            vals.iter().map(|&v| T::from_f64(v)).collect::<Vec<T>>()
        ))?;
        ctx.put(0, t)
    }
}

#[test]
fn expanded_node_tests() {
    let dir = node_tests_dir();
    if !dir.is_dir() {
        eprintln!("note: no ONNX node tests at {}; skipping", dir.display());
        return;
    }
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_elementwise::register(&mut b).expect("register");
    let only_elementwise = b.clone().build();
    b.register("", "Constant", constant).expect("Constant");
    b.register("", "Identity", |_| Ok(Box::new(Identity)))
        .expect("Identity");
    b.register("", "CastLike", |_| Ok(Box::new(CastLike)))
        .expect("CastLike");
    let reg = b.build();
    let filter = std::env::var("RGE_NODE_FILTER").unwrap_or_else(|_| "expanded".into());
    let dirs = list_tests(&dir, Some(&filter)).expect("list");
    let covered = |t: &rge_conformance::NodeTest| {
        let r = rge_conformance::suite::registry_covers(&reg, t);
        // Only graphs that use at least one op of this family.
        let ours = rge_conformance::suite::op_types_of(&t.model.graph)
            .iter()
            .any(|(d, o)| only_elementwise.contains(d, o));
        if ours {
            r
        } else {
            Err(vec!["(no elementwise op)".into()])
        }
    };
    let runner = rge_conformance::suite::reference_runner(&reg);
    let report = run_suite(&dirs, Tolerance::default(), &covered, &runner, 2);
    let mut failed = 0;
    for (name, o) in &report.results {
        if let Outcome::Failed(why) = o {
            failed += 1;
            eprintln!("FAIL {name}: {why}");
        }
    }
    eprintln!(
        "elementwise expanded: {} passed, {failed} failed, {} not covered",
        report.passed(),
        report.uncovered()
    );
    assert_eq!(failed, 0);
}
