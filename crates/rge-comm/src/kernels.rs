//! The collective kernels: each keeps its node's group, reduction and ranks (checked against
//! the communicator when built, so a group naming ranks that do not exist, or a `rank_size`
//! other than the group's, is an error naming the node at compile time) and calls the rank's
//! communicator when computed. Outputs are written directly by the collective (no copy).

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::comm::{check_tag, Communicator};
use crate::error::CommError;
use crate::reduce::{reducible, ReduceOp};

/// What every collective kernel keeps.
struct Common {
    comm: Arc<dyn Communicator>,
    node: String,
    group: String,
    /// The group's size.
    n: usize,
}

impl Common {
    fn new(init: &KernelInit<'_>, comm: &Arc<dyn Communicator>) -> KernelResult<Common> {
        let group = init
            .str_opt("group")?
            .unwrap_or(crate::WORLD_GROUP)
            .to_string();
        let (_, n) = comm
            .member(&group)
            .map_err(|e| KernelError::attr("group", e.to_string()))?;
        Ok(Common {
            comm: comm.clone(),
            node: init.node_name.to_string(),
            group,
            n,
        })
    }

    fn fail(&self, e: CommError) -> KernelError {
        KernelError::invalid(format!(
            "{} (rank {}, {} backend): {e}",
            self.node,
            self.comm.rank(),
            self.comm.backend()
        ))
    }

    /// A group rank attribute (`root_rank`, `dest_rank`, `src_rank`) inside the group.
    fn rank_attr(&self, init: &KernelInit<'_>, name: &str) -> KernelResult<usize> {
        let r = init.int(name)?;
        usize::try_from(r)
            .ok()
            .filter(|&r| r < self.n)
            .ok_or_else(|| {
                KernelError::attr(
                    name,
                    format!(
                        "rank {r} is outside group `{}` of {} ranks",
                        self.group, self.n
                    ),
                )
            })
    }
}

fn reduction(init: &KernelInit<'_>) -> KernelResult<ReduceOp> {
    let r = init.str_opt("reduction")?.unwrap_or("sum");
    ReduceOp::parse(r).ok_or_else(|| {
        KernelError::attr("reduction", format!("`{r}` is not sum, prod, max or min"))
    })
}

fn check_reducible(t: DType) -> KernelResult<()> {
    if reducible(t) {
        Ok(())
    } else {
        Err(KernelError::invalid(format!(
            "{t} tensors cannot be reduced"
        )))
    }
}

/// The first dim of `shape` split into `n` equal blocks.
fn split_first(shape: &[usize], n: usize, what: &str) -> KernelResult<Vec<usize>> {
    let mut out = shape.to_vec();
    match out.first_mut() {
        Some(d0) if *d0 % n == 0 => {
            *d0 /= n;
            Ok(out)
        }
        _ => Err(KernelError::invalid(format!(
            "{what}: shape {shape:?} does not split into {n} equal blocks along its first dim"
        ))),
    }
}

/// HcomAllReduce.
pub struct AllReduce {
    c: Common,
    op: ReduceOp,
}

impl Kernel for AllReduce {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        check_reducible(x.dtype())?;
        let y = ctx.output_bytes(0, x.dtype(), x.shape())?;
        self.c
            .comm
            .all_reduce(&self.c.group, x.bytes()?, y, x.dtype(), self.op)
            .map_err(|e| self.c.fail(e))
    }
}

/// HcomBroadcast (every input to its output).
pub struct Broadcast {
    c: Common,
    root: usize,
}

impl Kernel for Broadcast {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        for i in 0..ctx.input_count() {
            let x = ctx.input(i)?;
            let y = ctx.output_bytes(i, x.dtype(), x.shape())?;
            y.copy_from_slice(x.bytes()?);
            self.c
                .comm
                .broadcast(&self.c.group, y, self.root)
                .map_err(|e| self.c.fail(e))?;
        }
        Ok(())
    }
}

/// HcomAllGather (along the first dim).
pub struct AllGather {
    c: Common,
}

impl Kernel for AllGather {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let mut shape = x.shape().to_vec();
        if shape.is_empty() {
            return Err(KernelError::invalid(
                "HcomAllGather needs a tensor of rank ≥ 1",
            ));
        }
        shape[0] *= self.c.n;
        let y = ctx.output_bytes(0, x.dtype(), &shape)?;
        self.c
            .comm
            .all_gather(&self.c.group, x.bytes()?, y)
            .map_err(|e| self.c.fail(e))
    }
}

/// HcomReduceScatter (blocks along the first dim).
pub struct ReduceScatter {
    c: Common,
    op: ReduceOp,
}

impl Kernel for ReduceScatter {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        check_reducible(x.dtype())?;
        let shape = split_first(x.shape(), self.c.n, "HcomReduceScatter")?;
        let y = ctx.output_bytes(0, x.dtype(), &shape)?;
        self.c
            .comm
            .reduce_scatter(&self.c.group, x.bytes()?, y, x.dtype(), self.op)
            .map_err(|e| self.c.fail(e))
    }
}

/// HcomAllToAll (blocks along the first dim).
pub struct AllToAll {
    c: Common,
}

impl Kernel for AllToAll {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        split_first(x.shape(), self.c.n, "HcomAllToAll")?;
        let y = ctx.output_bytes(0, x.dtype(), x.shape())?;
        self.c
            .comm
            .all_to_all(&self.c.group, x.bytes()?, y)
            .map_err(|e| self.c.fail(e))
    }
}

/// HcomSend.
pub struct Send {
    c: Common,
    dest: usize,
    tag: i32,
}

impl Kernel for Send {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        self.c
            .comm
            .send(&self.c.group, x.bytes()?, self.dest, self.tag)
            .map_err(|e| self.c.fail(e))
    }
}

/// HcomReceive.
pub struct Receive {
    c: Common,
    src: usize,
    tag: i32,
    dtype: DType,
    shape: Vec<usize>,
}

impl Kernel for Receive {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let y = ctx.output_bytes(0, self.dtype, &self.shape)?;
        self.c
            .comm
            .recv(&self.c.group, y, self.src, self.tag)
            .map_err(|e| self.c.fail(e))
    }
}

fn tag(init: &KernelInit<'_>) -> KernelResult<i32> {
    check_tag(init.int("sr_tag")?).map_err(|e| KernelError::attr("sr_tag", e.to_string()))
}

/// The kernel of op `op_type` on `comm`.
pub fn create(
    op_type: &str,
    init: &KernelInit<'_>,
    comm: &Arc<dyn Communicator>,
) -> KernelResult<Box<dyn Kernel>> {
    let c = Common::new(init, comm)?;
    let rank_size = |c: &Common| -> KernelResult<()> {
        let r = init.int("rank_size")?;
        if r != c.n as i64 {
            return Err(KernelError::attr(
                "rank_size",
                format!("{r}, but group `{}` has {} ranks", c.group, c.n),
            ));
        }
        Ok(())
    };
    Ok(match op_type {
        "HcomAllReduce" => Box::new(AllReduce {
            op: reduction(init)?,
            c,
        }),
        "HcomBroadcast" => Box::new(Broadcast {
            root: c.rank_attr(init, "root_rank")?,
            c,
        }),
        "HcomAllGather" => {
            rank_size(&c)?;
            Box::new(AllGather { c })
        }
        "HcomReduceScatter" => {
            rank_size(&c)?;
            Box::new(ReduceScatter {
                op: reduction(init)?,
                c,
            })
        }
        "HcomAllToAll" => Box::new(AllToAll { c }),
        "HcomSend" => Box::new(Send {
            dest: c.rank_attr(init, "dest_rank")?,
            tag: tag(init)?,
            c,
        }),
        "HcomReceive" => {
            let code = init.int("dtype")?;
            let dtype = i32::try_from(code)
                .ok()
                .and_then(DType::from_onnx)
                .ok_or_else(|| KernelError::attr("dtype", format!("{code} is not a data type")))?;
            let shape = init
                .ints_or_empty("shape")?
                .iter()
                .map(|&d| usize::try_from(d))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| KernelError::attr("shape", "dims must be ≥ 0"))?;
            Box::new(Receive {
                src: c.rank_attr(init, "src_rank")?,
                tag: tag(init)?,
                dtype,
                shape,
                c,
            })
        }
        other => {
            return Err(KernelError::unsupported(format!(
                "the comm engine has no kernel for {other}"
            )))
        }
    })
}
