//! ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum,
//! ReduceLogSumExp and ReduceSumSquare.
//!
//! Axes come from the `axes` attribute before opset 13 (ReduceSum) / 18 (the others) and
//! from the optional second input after. Absent or empty axes reduce everything, unless
//! `noop_with_empty_axes` is set: then nothing is reduced and each element goes alone
//! through the op's map and finish (as the ONNX reference does: ReduceL1 gives |x| …).
//! An empty set reduces to the op's identity: 0, 1, -inf / +inf (integer min / max, bool
//! false / true), NaN for the mean, -inf for the logs.

use rge_kernels::{
    dispatch_numeric_bool, DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult,
};

use crate::acc::{Acc, Reducible};
use crate::plan::{normalize_axes, ReducePlan};

/// The reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
    L1,
    L2,
    LogSum,
    LogSumExp,
    SumSquare,
}

impl Op {
    fn of(op_type: &str) -> Option<Op> {
        Some(match op_type {
            "ReduceSum" => Op::Sum,
            "ReduceMean" => Op::Mean,
            "ReduceMax" => Op::Max,
            "ReduceMin" => Op::Min,
            "ReduceProd" => Op::Prod,
            "ReduceL1" => Op::L1,
            "ReduceL2" => Op::L2,
            "ReduceLogSum" => Op::LogSum,
            "ReduceLogSumExp" => Op::LogSumExp,
            "ReduceSumSquare" => Op::SumSquare,
            _ => return None,
        })
    }

    /// The first opset whose axes are an input.
    fn axes_input_since(self) -> i64 {
        if self == Op::Sum {
            13
        } else {
            18
        }
    }
}

/// Every reduce op type.
pub const OP_TYPES: &[&str] = &[
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
];

struct Reduce {
    op: Op,
    keepdims: bool,
    noop_with_empty_axes: bool,
    /// Axes from the attribute (old opsets); `None`: read input 1.
    attr_axes: Option<Vec<i64>>,
}

pub fn factory(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let op = Op::of(init.op_type)
        .ok_or_else(|| KernelError::unsupported(format!("reduce op {}", init.op_type)))?;
    let attr_axes = if init.opset < op.axes_input_since() {
        Some(init.ints_or_empty("axes")?)
    } else {
        None
    };
    Ok(Box::new(Reduce {
        op,
        keepdims: init.int_or("keepdims", 1)? != 0,
        noop_with_empty_axes: init.int_or("noop_with_empty_axes", 0)? != 0,
        attr_axes,
    }))
}

impl Kernel for Reduce {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let axes = match &self.attr_axes {
            Some(a) => a.clone(),
            None => match ctx.opt_input(1)? {
                Some(t) => t.to_i64_vec()?,
                None => Vec::new(),
            },
        };
        let rank = x.rank();
        let mask = if axes.is_empty() {
            vec![!self.noop_with_empty_axes; rank]
        } else {
            normalize_axes(&axes, rank)?
        };
        let plan = ReducePlan::new(x.shape(), &mask, self.keepdims);
        let op = self.op;
        let dt = x.dtype();
        let bool_ok = matches!(op, Op::Max | Op::Min);
        if dt == DType::Bool && !bool_ok {
            return Err(KernelError::unsupported(format!("{op:?} of BOOL")));
        }
        dispatch_numeric_bool!(dt, T => {
            let src = x.as_slice::<T>()?;
            let dst = ctx.output::<T>(0, &plan.out_shape)?;
            reduce::<T>(op, &plan, src, dst);
            Ok(())
        })
    }
}

/// Reduces `src` by `plan` into `dst` (`plan.out_len` elements).
pub fn reduce<T: Reducible>(op: Op, plan: &ReducePlan, src: &[T], dst: &mut [T]) {
    if op == Op::LogSumExp {
        return log_sum_exp(plan, src, dst);
    }
    let init = match op {
        Op::Prod => T::A::ONE,
        Op::Max => T::LOWEST,
        Op::Min => T::HIGHEST,
        _ => T::A::ZERO,
    };
    let mut acc = vec![init; plan.out_len];
    let map = |v: T| -> T::A {
        let a = v.load();
        match op {
            Op::L1 => a.abs(),
            Op::L2 | Op::SumSquare => a.mul(a),
            _ => a,
        }
    };
    let combine = |a: T::A, b: T::A| -> T::A {
        match op {
            Op::Prod => a.mul(b),
            Op::Max => T::A::max_nan(a, b),
            Op::Min => T::A::min_nan(a, b),
            _ => a.add(b),
        }
    };
    plan.for_each_run(|i, len, o, step| {
        let run = &src[i..i + len];
        if step == 0 {
            let mut a = acc[o];
            for &v in run {
                a = combine(a, map(v));
            }
            acc[o] = a;
        } else {
            for (a, &v) in acc[o..o + len].iter_mut().zip(run) {
                *a = combine(*a, map(v));
            }
        }
    });
    let n = plan.group;
    for (d, a) in dst.iter_mut().zip(acc) {
        let r = match op {
            Op::Mean => {
                if n == 0 {
                    T::A::from_f64(f64::NAN)
                } else {
                    a.div_count(n)
                }
            }
            Op::L2 => T::A::from_f64(a.to_f64().sqrt()),
            Op::LogSum => T::A::from_f64(a.to_f64().ln()),
            _ => a,
        };
        *d = T::store(r);
    }
}

/// log(sum(exp(x - m))) + m with m the group's largest finite value (0 when none).
fn log_sum_exp<T: Reducible>(plan: &ReducePlan, src: &[T], dst: &mut [T]) {
    let mut mx = vec![f64::NEG_INFINITY; plan.out_len];
    plan.for_each_run(|i, len, o, step| {
        for (j, &v) in src[i..i + len].iter().enumerate() {
            let v = v.load().to_f64();
            let m = &mut mx[o + j * step];
            if v.is_finite() && v > *m {
                *m = v;
            }
        }
    });
    for m in &mut mx {
        if !m.is_finite() {
            *m = 0.0;
        }
    }
    let mut sum = vec![0f64; plan.out_len];
    plan.for_each_run(|i, len, o, step| {
        for (j, &v) in src[i..i + len].iter().enumerate() {
            let k = o + j * step;
            sum[k] += (v.load().to_f64() - mx[k]).exp();
        }
    });
    for ((d, s), m) in dst.iter_mut().zip(sum).zip(mx) {
        *d = T::store(T::A::from_f64(s.ln() + m));
    }
}
