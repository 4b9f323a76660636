//! The rts engine's kernels: the steps of flat control flow (GE's LabelSwitchByIndex,
//! StreamSwitch, StreamActive, LabelSet, LabelGoto and MemcpyAsync tasks, plus the loop
//! counter and scan-output steps of ONNX's Loop). The region runner jumps on the index a switch
//! writes; these kernels only compute and check.

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelResult, TensorRef};
use rge_runtime::flat::{FlowKernels, SwitchMode};

use crate::engine::RTS;

fn shape_text(t: &TensorRef<'_>) -> String {
    format!("{}{:?}", t.dtype(), t.shape())
}

/// The one element of a condition, trip count or index (an error naming `what` otherwise).
fn single(t: &TensorRef<'_>, what: &str) -> KernelResult<i64> {
    if t.len() != 1 {
        return Err(KernelError::invalid(format!(
            "{what} must have one element, it is {}",
            shape_text(t)
        )));
    }
    if t.dtype().is_integer() || t.dtype() == DType::Bool {
        return Ok(t.to_i64_vec()?.first().copied().unwrap_or(0));
    }
    // A float condition: true when non-zero.
    Ok(t.to_f64_vec()?.first().map_or(0, |&x| i64::from(x != 0.0)))
}

fn write_index(ctx: &mut KernelCtx<'_>, index: i32) -> KernelResult<()> {
    let out = ctx.output::<i32>(0, &[])?;
    out[0] = index;
    Ok(())
}

/// LabelSwitch: a condition or branch index → the branch to run.
struct Switch {
    mode: SwitchMode,
}

impl Kernel for Switch {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let t = ctx.input(0)?;
        let index = match self.mode {
            SwitchMode::OnnxIf => {
                if t.dtype() != DType::Bool {
                    return Err(KernelError::invalid(format!(
                        "the condition must be a bool tensor of one element, it is {}",
                        shape_text(&t)
                    )));
                }
                i32::from(single(&t, "the condition")? == 0)
            }
            SwitchMode::GeTruthy => {
                let go = if t.rank() > 0 {
                    !t.is_empty()
                } else if t.dtype().is_string() {
                    t.as_strings()?.first().is_some_and(|s| !s.is_empty())
                } else {
                    t.to_f64_vec()?.first().is_some_and(|&x| x != 0.0)
                };
                i32::from(!go)
            }
            SwitchMode::Case { branches, clamp } => {
                if !matches!(t.dtype(), DType::Int32 | DType::Int64) {
                    return Err(KernelError::invalid(format!(
                        "branch_index must be an int32 or int64 scalar, it is {}",
                        shape_text(&t)
                    )));
                }
                let i = single(&t, "branch_index")?;
                if branches == 0 {
                    return Err(KernelError::invalid("Case has no branches"));
                }
                let last = branches as i64 - 1;
                if (0..=last).contains(&i) {
                    i as i32
                } else if clamp {
                    // GE's and TensorFlow's rule where the branch count is known: an index out
                    // of range runs the last branch.
                    last as i32
                } else {
                    // As the nested Case kernel: without a branch count from the frontend,
                    // an index out of range selects nothing.
                    return Err(KernelError::invalid(format!(
                        "branch_index {i} selects no branch (the node has {branches})"
                    )));
                }
            }
        };
        write_index(ctx, index)
    }
}

/// StreamSwitch of a Loop: run the body while `iter < M` (when M is given) and `cond`.
struct LoopSwitch;

impl Kernel for LoopSwitch {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let iter = single(&ctx.input(0)?, "the iteration counter")?;
        let more = match ctx.opt_input(1)? {
            Some(m) => iter < single(&m, "the trip count M")?,
            None => true,
        };
        let cond = single(&ctx.input(2)?, "the loop condition")? != 0;
        write_index(ctx, i32::from(!(more && cond)))
    }
}

/// LoopInit: iter = 0, cond = the initial condition (true when absent); checks M.
struct LoopInit;

impl Kernel for LoopInit {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        if let Some(m) = ctx.opt_input(0)? {
            if !m.dtype().is_integer() {
                return Err(KernelError::invalid(format!(
                    "the trip count M must be an int64 scalar, it is {}",
                    shape_text(&m)
                )));
            }
            single(&m, "the trip count M")?;
        }
        let cond = match ctx.opt_input(1)? {
            Some(c) => {
                if c.dtype() != DType::Bool {
                    return Err(KernelError::invalid(format!(
                        "the loop condition must be a bool tensor of one element, it is {}",
                        shape_text(&c)
                    )));
                }
                single(&c, "the loop condition")? != 0
            }
            None => true,
        };
        ctx.output::<i64>(0, &[])?[0] = 0;
        ctx.output_bytes(1, DType::Bool, &[])?[0] = u8::from(cond);
        Ok(())
    }
}

/// LoopIncrement: iter + 1.
struct Increment;

impl Kernel for Increment {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let i = single(&ctx.input(0)?, "the iteration counter")?;
        ctx.output::<i64>(0, &[])?[0] = i + 1;
        Ok(())
    }
}

/// MemcpyAsync: copies its input into its (planned) output.
struct Memcpy;

impl Kernel for Memcpy {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let t = ctx.input(0)?;
        let src = t.bytes()?;
        let dst = ctx.output_bytes(0, t.dtype(), t.shape())?;
        if dst.len() != src.len() {
            return Err(KernelError::invalid(format!(
                "copy of {} bytes into {} bytes",
                src.len(),
                dst.len()
            )));
        }
        dst.copy_from_slice(src);
        Ok(())
    }
}

/// ScanWrite: the body's scan value into row `iter` of the scan output.
struct ScanWrite {
    rows: usize,
}

impl Kernel for ScanWrite {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let v = ctx.input(0)?;
        let i = single(&ctx.input(1)?, "the iteration counter")?;
        let row = usize::try_from(i)
            .ok()
            .filter(|&r| r < self.rows)
            .ok_or_else(|| {
                KernelError::invalid(format!(
                    "iteration {i} is past the scan outputs' static length {}",
                    self.rows
                ))
            })?;
        let src = v.bytes()?;
        let mut shape = Vec::with_capacity(v.rank() + 1);
        shape.push(self.rows);
        shape.extend_from_slice(v.shape());
        let dst = ctx.output_bytes(0, v.dtype(), &shape)?;
        let at = row * src.len();
        dst.get_mut(at..at + src.len())
            .ok_or_else(|| KernelError::invalid("scan row out of the output"))?
            .copy_from_slice(src);
        Ok(())
    }
}

/// ScanCheck: the loop ran exactly as many iterations as the scan outputs have rows.
struct ScanCheck {
    rows: usize,
}

impl Kernel for ScanCheck {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let i = single(&ctx.input(0)?, "the iteration counter")?;
        if i != self.rows as i64 {
            return Err(KernelError::invalid(format!(
                "the loop ran {i} iterations, its scan outputs were compiled for {}: a loop whose trip count is known only at run time needs --control-flow nested",
                self.rows
            )));
        }
        Ok(())
    }
}

/// LabelSet, LabelGoto, StreamActive: the region runner acts on them; nothing to compute.
struct NoCompute;

impl Kernel for NoCompute {
    fn compute(&self, _ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        Ok(())
    }
}

/// The rts engine's control steps, as the runtime's flat lowering asks for them.
#[derive(Debug, Clone, Copy, Default)]
pub struct RtsFlow;

impl FlowKernels for RtsFlow {
    fn engine(&self) -> &str {
        RTS
    }
    fn switch(&self, _node: &str, mode: SwitchMode) -> Box<dyn Kernel> {
        Box::new(Switch { mode })
    }
    fn loop_switch(&self, _node: &str) -> Box<dyn Kernel> {
        Box::new(LoopSwitch)
    }
    fn loop_init(&self, _node: &str) -> Box<dyn Kernel> {
        Box::new(LoopInit)
    }
    fn increment(&self, _node: &str) -> Box<dyn Kernel> {
        Box::new(Increment)
    }
    fn memcpy(&self, _node: &str) -> Box<dyn Kernel> {
        Box::new(Memcpy)
    }
    fn scan_write(&self, _node: &str, rows: usize) -> Box<dyn Kernel> {
        Box::new(ScanWrite { rows })
    }
    fn scan_check(&self, _node: &str, rows: usize) -> Box<dyn Kernel> {
        Box::new(ScanCheck { rows })
    }
    fn label(&self) -> Box<dyn Kernel> {
        Box::new(NoCompute)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rge_kernels::{KernelCtx, OwnedOutputs, Tensor, Value};

    /// Runs `k` on `inputs`; output 0 as an int32 (the switch index) or the error.
    fn run(k: &dyn Kernel, inputs: &[Option<Value>], outputs: usize) -> Result<Vec<i64>, String> {
        let refs: Vec<_> = inputs
            .iter()
            .map(|v| v.as_ref().map(Value::as_ref))
            .collect();
        let mut sink = OwnedOutputs::new(outputs);
        let mut ctx = KernelCtx::new(&refs, &mut sink);
        k.compute(&mut ctx).map_err(|e| e.to_string())?;
        Ok(sink
            .into_values()
            .unwrap()
            .into_iter()
            .map(|v| v.unwrap().as_tensor().unwrap().view().to_i64_vec().unwrap()[0])
            .collect())
    }

    fn t<T: rge_kernels::Elem>(shape: &[usize], v: Vec<T>) -> Option<Value> {
        Some(Value::Tensor(Tensor::from_vec(shape, v).unwrap()))
    }

    fn case(clamp: bool) -> Switch {
        Switch {
            mode: SwitchMode::Case { branches: 3, clamp },
        }
    }

    #[test]
    fn if_switch_takes_one_bool_and_refuses_other_shapes_and_dtypes() {
        let k = Switch {
            mode: SwitchMode::OnnxIf,
        };
        assert_eq!(run(&k, &[t(&[], vec![true])], 1).unwrap(), vec![0]);
        assert_eq!(run(&k, &[t(&[1], vec![false])], 1).unwrap(), vec![1]);
        let e = run(&k, &[t(&[2], vec![true, false])], 1).unwrap_err();
        assert!(
            e.contains("condition") && e.contains("one element") && e.contains("[2]"),
            "{e}"
        );
        let e = run(&k, &[t(&[0], Vec::<bool>::new())], 1).unwrap_err();
        assert!(e.contains("one element") && e.contains("[0]"), "{e}");
        let e = run(&k, &[t(&[], vec![1.0f32])], 1).unwrap_err();
        assert!(e.contains("bool"), "{e}");
    }

    #[test]
    fn case_switch_checks_the_index_and_follows_the_nested_rule_out_of_range() {
        for clamp in [false, true] {
            let k = case(clamp);
            for i in 0..3i32 {
                assert_eq!(run(&k, &[t(&[], vec![i])], 1).unwrap(), vec![i64::from(i)]);
            }
            assert_eq!(run(&k, &[t(&[1], vec![2i64])], 1).unwrap(), vec![2]);
            let e = run(&k, &[t(&[2], vec![0i32, 1])], 1).unwrap_err();
            assert!(e.contains("branch_index") && e.contains("[2]"), "{e}");
            let e = run(&k, &[t(&[], vec![1.0f32])], 1).unwrap_err();
            assert!(e.contains("int32 or int64"), "{e}");
            for out in [-1i64, 3, i64::MAX, i64::MIN] {
                let r = run(&k, &[t(&[], vec![out])], 1);
                if clamp {
                    assert_eq!(r.unwrap(), vec![2], "{out}");
                } else {
                    let e = r.unwrap_err();
                    assert!(
                        e.contains(&format!("branch_index {out} selects no branch")),
                        "{e}"
                    );
                }
            }
        }
    }

    #[test]
    fn loop_steps_refuse_a_condition_or_trip_count_of_the_wrong_shape() {
        let e = run(&LoopInit, &[t(&[2], vec![3i64, 4]), None], 2).unwrap_err();
        assert!(e.contains("trip count") && e.contains("[2]"), "{e}");
        let e = run(&LoopInit, &[None, t(&[2], vec![true, true])], 2).unwrap_err();
        assert!(e.contains("loop condition") && e.contains("[2]"), "{e}");
        let e = run(&LoopInit, &[None, t(&[], vec![1i64])], 2).unwrap_err();
        assert!(e.contains("bool"), "{e}");
        assert_eq!(
            run(&LoopInit, &[t(&[], vec![3i64]), t(&[], vec![true])], 2).unwrap(),
            vec![0, 1]
        );
        let go = [t(&[], vec![1i64]), t(&[], vec![3i64]), t(&[], vec![true])];
        assert_eq!(run(&LoopSwitch, &go, 1).unwrap(), vec![0]);
        let done = [t(&[], vec![3i64]), t(&[], vec![3i64]), t(&[], vec![true])];
        assert_eq!(run(&LoopSwitch, &done, 1).unwrap(), vec![1]);
        let bad = [
            t(&[], vec![0i64]),
            t(&[2], vec![3i64, 3]),
            t(&[], vec![true]),
        ];
        let e = run(&LoopSwitch, &bad, 1).unwrap_err();
        assert!(e.contains("trip count") && e.contains("[2]"), "{e}");
    }
}
