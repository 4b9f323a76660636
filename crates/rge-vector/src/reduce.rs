//! ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceL1, ReduceL2 and ReduceSumSquare on f32
//! where the reduced axes form one contiguous block once size-1 dims are dropped: the input is
//! then `[outer, reduced, inner]`. With `inner == 1` each output reduces one contiguous row
//! (SIMD reduction); otherwise rows of `inner` are accumulated into the output (SIMD
//! accumulation, in f32 blocks of 64 rows added in f64). Other axis sets, empty tensors and
//! other dtypes run the `cpu` engine's kernel.

use rge_kernels::{
    DType, Kernel, KernelCtx, KernelDef, KernelError, KernelFactory, KernelInit, KernelRegistry,
    KernelResult, KernelSet, PortDef, TypeSet,
};

use crate::elementwise::fallback;
use crate::rows::for_rows;
use crate::simd::{self, Isa, Reduce, UnaryOp};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Sum,
    Mean,
    Max,
    Min,
    L1,
    L2,
    SumSquare,
}

impl Op {
    fn of(op_type: &str) -> Option<Op> {
        Some(match op_type {
            "ReduceSum" => Op::Sum,
            "ReduceMean" => Op::Mean,
            "ReduceMax" => Op::Max,
            "ReduceMin" => Op::Min,
            "ReduceL1" => Op::L1,
            "ReduceL2" => Op::L2,
            "ReduceSumSquare" => Op::SumSquare,
            _ => return None,
        })
    }

    fn reduce(self) -> Reduce {
        match self {
            Op::Sum | Op::Mean => Reduce::Sum,
            Op::Max => Reduce::Max,
            Op::Min => Reduce::Min,
            Op::L1 => Reduce::SumAbs,
            Op::L2 | Op::SumSquare => Reduce::SumSquare,
        }
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

/// The reduce op types of the vector engine.
pub const REDUCE_OPS: &[&str] = &[
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
];

struct ReduceKernel {
    op: Op,
    keepdims: bool,
    noop_with_empty_axes: bool,
    attr_axes: Option<Vec<i64>>,
    isa: Isa,
    fallback: Box<dyn Kernel>,
}

/// `(outer, reduced, inner)` when the reduced dims of `shape` are one block once size-1 dims
/// are dropped.
fn split(shape: &[usize], mask: &[bool]) -> Option<(usize, usize, usize)> {
    let (mut outer, mut red, mut inner) = (1usize, 1usize, 1usize);
    // 0: before the block, 1: in it, 2: after it.
    let mut state = 0;
    for (&d, &r) in shape.iter().zip(mask) {
        if d == 1 {
            continue;
        }
        match (state, r) {
            (0, false) => outer *= d,
            (0, true) | (1, true) => {
                state = 1;
                red *= d;
            }
            (1, false) | (2, false) => {
                state = 2;
                inner *= d;
            }
            (2, true) => return None,
            _ => unreachable!("state is 0, 1 or 2"),
        }
    }
    Some((outer, red, inner))
}

impl ReduceKernel {
    fn run(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<bool> {
        let x = ctx.input(0)?;
        if x.dtype() != DType::Float || x.is_empty() {
            return Ok(false);
        }
        let axes = match &self.attr_axes {
            Some(a) => a.clone(),
            None => match ctx.opt_input(1)? {
                Some(t) => t.to_i64_vec()?,
                None => Vec::new(),
            },
        };
        let shape = x.shape();
        let rank = shape.len();
        if axes.is_empty() && self.noop_with_empty_axes {
            return Ok(false);
        }
        let mut mask = vec![axes.is_empty(); rank];
        for &a in &axes {
            let r = rank as i64;
            if a < -r || a >= r {
                return Err(KernelError::invalid(format!(
                    "axis {a} is out of range for rank {rank}"
                )));
            }
            let i = if a < 0 { a + r } else { a } as usize;
            if mask[i] {
                return Err(KernelError::invalid(format!("axis {a} is repeated")));
            }
            mask[i] = true;
        }
        let Some((outer, red, inner)) = split(shape, &mask) else {
            return Ok(false);
        };
        let out_shape: Vec<usize> = shape
            .iter()
            .zip(&mask)
            .filter_map(|(&d, &r)| match (r, self.keepdims) {
                (false, _) => Some(d),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        let xs = x.as_slice::<f32>()?;
        let (isa, op) = (self.isa, self.op);
        let red_op = op.reduce();
        let out = ctx.output::<f32>(0, &out_shape)?;
        let finish = |v: f64| -> f32 {
            match op {
                Op::Mean => (v / red as f64) as f32,
                Op::L2 => v.sqrt() as f32,
                _ => v as f32,
            }
        };
        if inner == 1 {
            let th = ctx.threads();
            // One output per contiguous row of `red`.
            if th > 1 && outer > 1 && xs.len() >= crate::rows::PAR_MIN {
                use rayon::prelude::*;
                out.par_iter_mut().enumerate().for_each(|(o, y)| {
                    *y = finish(simd::reduce(isa, red_op, &xs[o * red..][..red]) as f64)
                });
            } else {
                for (o, y) in out.iter_mut().enumerate() {
                    *y = finish(simd::reduce(isa, red_op, &xs[o * red..][..red]) as f64);
                }
            }
            return Ok(true);
        }
        // Accumulate rows of `inner`: f32 partial sums over blocks of 64 rows, totals in f64.
        let sums = matches!(red_op, Reduce::Sum | Reduce::SumAbs | Reduce::SumSquare);
        for_rows(ctx.threads(), out, inner, |o, y| {
            let base = &xs[o * red * inner..][..red * inner];
            let mut total = vec![0.0f64; if sums { inner } else { 0 }];
            let mut k = 0;
            while k < red {
                let end = if sums { (k + 64).min(red) } else { red };
                let first = &base[k * inner..][..inner];
                match red_op {
                    Reduce::SumAbs => simd::unary(isa, &UnaryOp::Abs, first, y),
                    Reduce::SumSquare => simd::unary(isa, &UnaryOp::Square, first, y),
                    _ => y.copy_from_slice(first),
                }
                for r in k + 1..end {
                    simd::accumulate(isa, red_op, y, &base[r * inner..][..inner]);
                }
                if sums {
                    for (t, v) in total.iter_mut().zip(y.iter()) {
                        *t += *v as f64;
                    }
                }
                k = end;
            }
            if sums {
                for (v, t) in y.iter_mut().zip(&total) {
                    *v = finish(*t);
                }
            }
        });
        Ok(true)
    }
}

impl Kernel for ReduceKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        if self.run(ctx)? {
            Ok(())
        } else {
            self.fallback.compute(ctx)
        }
    }
}

fn create(init: &KernelInit<'_>, r: KernelFactory, isa: Isa) -> KernelResult<Box<dyn Kernel>> {
    let op = Op::of(init.op_type).ok_or_else(|| {
        KernelError::unsupported(format!("`{}` is not a vector reduction", init.op_type))
    })?;
    let attr_axes = if init.opset < op.axes_input_since() {
        Some(init.ints_or_empty("axes")?)
    } else {
        None
    };
    Ok(Box::new(ReduceKernel {
        op,
        keepdims: init.int_or("keepdims", 1)? != 0,
        noop_with_empty_axes: init.int_or("noop_with_empty_axes", 0)? != 0,
        attr_axes,
        isa,
        fallback: fallback(r, init)?,
    }))
}

/// The data input is f32 (or of unknown type).
fn data_is_f32(op: &rge_ir::OpDesc) -> Result<(), String> {
    match op.input(0).and_then(DType::from_desc) {
        None | Some(DType::Float) => Ok(()),
        Some(t) => Err(format!("vector reduces FLOAT; the data is {}", t.name())),
    }
}

/// Adds the reduction kernels.
pub fn add_kernels(set: &mut KernelSet, reg: &KernelRegistry, isa: Isa) -> KernelResult<()> {
    for &op in REDUCE_OPS {
        let r = reg.get("", op).ok_or_else(|| {
            KernelError::unsupported(format!("the reference kernels have no `{op}`"))
        })?;
        set.add(
            KernelDef::new(format!("vector.{op}"), op, move |i| create(i, r, isa))
                // One repeating port for the data and (newer opsets) the axes; the check keeps
                // the data f32 (old prototypes have no axes input to declare).
                .inputs(vec![PortDef::types(TypeSet::of(&[
                    DType::Float,
                    DType::Int64,
                ]))])
                .with_check(data_is_f32)
                .outputs(vec![PortDef::types(TypeSet::of(&[DType::Float]))]),
        );
    }
    Ok(())
}
