//! The execution graph (the seed's ExeGraph): what lowering produces for one graph (the root or
//! a subgraph) and what the executors run. Everything a run needs is precomputed here: the step
//! order, each value's storage (arena offset, constant, graph input or run-time value), static
//! shapes for the tensor views kernels receive, the kernel objects, and the dependencies the
//! topological executors schedule by (data, control and memory reuse).

use std::sync::{Arc, Mutex};

use rge_kernels::{DType, Kernel, Tensor};

use crate::plan::MemoryPlan;

/// Where a value lives during a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// Bytes at this offset of the run's arena of memory space `space` (0: the host's; `k`:
    /// `Program::spaces[k - 1]`), static shape, planned.
    Arena { space: u8, offset: usize },
    /// A constant of the program (a view of it when the slot's shape differs).
    Const(u32),
    /// Program input `k` (a view of it when the slot has a static shape).
    Input(u32),
    /// A value made at run time (dynamic shape, strings, sequences, optionals).
    Dynamic(u32),
}

/// One value of the program: a node output, possibly a view of another.
#[derive(Debug, Clone)]
pub struct Slot {
    /// Node name and output index, for messages.
    pub name: String,
    pub dtype: Option<DType>,
    /// The static shape, when known (planned and view slots always have one).
    pub shape: Option<Dims>,
    pub storage: Storage,
    /// Byte size of a planned tensor.
    pub bytes: usize,
    /// The step producing it (`None`: an input, a constant, or a view of one).
    pub producer: Option<u32>,
    /// True for a view of another slot (its shape may differ from the source's).
    pub view: bool,
    /// The memory space (0: the host's; `k`: `Program::spaces[k - 1]`).
    pub space: u8,
}

/// What lowering made of a graph input (a Data node).
#[derive(Debug, Clone)]
pub struct InputSpec {
    pub name: String,
    /// Where the value comes from: the caller's input `k`, or (in a subgraph) a parent input.
    pub source: InputSource,
    pub dtype: Option<DType>,
    /// Declared dims, -1 for unknown; `None`: unknown rank or not a tensor.
    pub dims: Option<Vec<i64>>,
    /// True when the value must be a tensor.
    pub tensor: bool,
}

/// Where a program input comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputSource {
    /// The k-th formal input (the caller's inputs, or a subgraph's formal inputs).
    Formal(usize),
    /// Input `i` of the parent node (an implicit capture).
    Parent(usize),
}

/// A static shape, inline up to rank 4: the executors read it for every input and output, and
/// keeping it beside the slot saves a pointer chase per tensor.
pub type Dims = smallvec::SmallVec<[usize; 4]>;

/// One launch step: a kernel with its inputs and outputs.
pub struct Step {
    pub node: String,
    /// The op type, engine and kernel name repeat over many steps: one shared text each
    /// (`Lowering::interned`), not an allocation per step.
    pub op_type: Arc<str>,
    pub engine: Arc<str>,
    /// The kernel definition that runs it (e.g. `cpu.Conv`).
    pub kernel_name: Arc<str>,
    /// The stream from stream assignment (`None`: a skipped engine).
    pub stream: Option<u32>,
    pub kernel: Box<dyn Kernel>,
    /// Input slots (`None`: an absent optional input), inline up to four (read every run).
    pub inputs: smallvec::SmallVec<[Option<u32>; 4]>,
    /// Output slots, inline up to two.
    pub outputs: smallvec::SmallVec<[u32; 2]>,
    /// True when some output is consumed.
    pub used: Box<[bool]>,
    /// Subgraphs (If, Loop, Scan …), by slot.
    pub subgraphs: Box<[Arc<Program>]>,
    /// Workspace bytes the engine asked for (kernels allocate scratch inside the call).
    pub workspace: Box<[i64]>,
    /// True when an output's shape is only known at run time (the step infers it).
    pub dynamic: bool,
    /// `(input, output)` the output may be written over (the kernel's `reuse_input`, or its
    /// definition's in-place fact).
    pub in_place: Option<(usize, usize)>,
    /// The op's input and output shapes as compiled (`[1,3,224,224] [64,3,7,7] -> [1,64,112,112]`,
    /// `?` for a dim known only at run time): what the profiler reports per node.
    pub shapes: Arc<str>,
    /// A control-flow step of a flat region (`flat.rs`): a label, a jump or a switch.
    pub flow: Option<Flow>,
}

/// What a control-flow step of a flat region does besides (or instead of) its kernel: the
/// region runner (`Frame::run_region`) follows it. Targets are step indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow {
    /// StreamActive: the entry of a flat region whose steps end before step `end`; the
    /// executors schedule the region as one unit through this step.
    Active { end: u32 },
    /// LabelSet: a jump target.
    Label,
    /// LabelGoto: continue at step `target`.
    Goto { target: u32 },
    /// LabelSwitch / StreamSwitch: the kernel writes an int32 index to its output 0; the
    /// runner continues at `targets[index]` (an index past the end takes the last target).
    Switch { targets: Box<[u32]> },
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step")
            .field("node", &self.node)
            .field("op_type", &self.op_type)
            .field("engine", &self.engine)
            .field("kernel", &self.kernel_name)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish()
    }
}

/// A lowered graph.
#[derive(Debug)]
pub struct Program {
    pub name: String,
    pub slots: Vec<Slot>,
    pub steps: Vec<Step>,
    pub consts: Vec<Tensor>,
    pub inputs: Vec<InputSpec>,
    /// Graph outputs: (name, slot), `None` for an unconnected output.
    pub outputs: Vec<(String, Option<u32>)>,
    /// Number of run-time values.
    pub dynamic_count: usize,
    /// Per dynamic value, how many input uses read it (+1 when it is a graph output: never freed
    /// before the end).
    pub dynamic_readers: Vec<u32>,
    /// Successors of each step (data, control and memory-reuse dependencies), CSR.
    pub succ_start: Vec<u32>,
    pub succ: Vec<u32>,
    /// Number of predecessors of each step.
    pub pred_count: Vec<u32>,
    /// Longest path (in steps) from each step to the end; the priority executor's key.
    pub critical: Vec<u32>,
    /// Per step, the step the executors run it through: itself, or the entry (StreamActive)
    /// of the flat control-flow region holding it.
    pub unit: Vec<u32>,
    /// The memory plan (of the host space).
    pub plan: MemoryPlan,
    /// The other memory spaces' plans and allocators.
    pub spaces: Vec<crate::memory::SpacePlan>,
    /// Arenas of finished runs, reused by later runs.
    pub(crate) arenas: Mutex<Vec<crate::frame::Arena>>,
    /// Buffers of run-time values, recycled across steps and runs.
    pub allocator: crate::allocator::CachingAllocator,
}

impl Program {
    /// The successors of step `s`.
    pub fn successors(&self, s: usize) -> &[u32] {
        &self.succ[self.succ_start[s] as usize..self.succ_start[s + 1] as usize]
    }

    /// The number of streams steps use (at least 1).
    pub fn stream_count(&self) -> usize {
        self.steps
            .iter()
            .filter_map(|s| s.stream)
            .max()
            .map_or(1, |m| m as usize + 1)
    }
}
