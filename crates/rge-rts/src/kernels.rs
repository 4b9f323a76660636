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
            SwitchMode::Case { branches } => {
                if !matches!(t.dtype(), DType::Int32 | DType::Int64) {
                    return Err(KernelError::invalid(format!(
                        "branch_index must be an int32 or int64 scalar, it is {}",
                        shape_text(&t)
                    )));
                }
                let i = single(&t, "branch_index")?;
                let last = branches.saturating_sub(1) as i64;
                // GE's and TensorFlow's rule: an index out of range runs the last branch.
                (if (0..=last).contains(&i) { i } else { last }) as i32
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
