//! The `gpu` engine (DEVICE runtime, cost 1, its own memory space `gpu`): its attributes and
//! kernel definitions. A definition answers `check_supported` from the kernels' dtypes (f32,
//! and f16 where the adapter has SHADER_F16) and the adapter: every tensor must have a static
//! shape (the device arena is planned), fit the adapter's largest binding, and the op's shader
//! must compile on this adapter; any other node falls to a host engine with the reason.

use std::sync::Arc;

use rge_engine::{BasicEngine, EngineAttributes, EngineKind, KernelStore, RuntimeType};
use rge_ir::{DataType, OpDesc};
use rge_kernels::{
    DType, Kernel, KernelDef, KernelInit, KernelResult, KernelSet, MemSpace, PortDef, TypeSet,
};

use crate::context::GpuContext;
use crate::error::GpuError;
use crate::kernels::epilogue::{Activation, ACTIVATIONS};
use crate::kernels::map::{self, Layout, MapKernel};
use crate::kernels::matmul::MatMulOp;
use crate::kernels::rows::{self, RowOp};
use crate::kernels::tile;
use crate::kernels::{
    attention, cast, conv, copy, gather, matmul, pool, reduce, resize, strided::MAX_RANK, transfer,
};
use crate::memory::{DeviceMemory, GpuAllocator, GPU_SPACE};

/// The engine's name.
pub const GPU: &str = "gpu";

/// The domain of rge's own fused ops (`rge_ops`' `RGE_DOMAIN`).
pub const RGE_DOMAIN: &str = "ai.rge";

/// Unary elementwise ops the engine runs.
pub const UNARY_OPS: &[&str] = &[
    "Relu",
    "Sigmoid",
    "Tanh",
    "Exp",
    "Log",
    "Abs",
    "Neg",
    "Sqrt",
    "Reciprocal",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "Sin",
    "Cos",
    "Erf",
    "Softsign",
    "Softplus",
    "LeakyRelu",
    "Elu",
    "Selu",
    "HardSigmoid",
    "HardSwish",
    "ThresholdedRelu",
    "Mish",
];

/// Binary elementwise ops (numpy broadcasting).
pub const BINARY_OPS: &[&str] = &[
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "PRelu",
];

/// The other ops the engine runs.
pub const OTHER_OPS: &[&str] = &[
    "Transpose",
    "Expand",
    "MatMul",
    "Gemm",
    "Softmax",
    "LogSoftmax",
    "LayerNormalization",
    "Attention",
    "Gather",
    "Cast",
    "Resize",
    "Conv",
    "FusedConv",
    "FusedMatMul",
    "Concat",
    "Slice",
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "GlobalMaxPool",
];

/// Every op type the engine has a kernel for.
pub fn op_types() -> Vec<&'static str> {
    UNARY_OPS
        .iter()
        .chain(BINARY_OPS)
        .chain(OTHER_OPS)
        .chain(crate::kernels::reduce::REDUCE_OPS)
        .copied()
        .collect()
}

/// The engine, its memory and the allocator of its space.
pub struct GpuEngine {
    pub engine: BasicEngine,
    pub memory: Arc<DeviceMemory>,
    pub allocator: Arc<GpuAllocator>,
}

fn floats(ctx: &GpuContext) -> TypeSet {
    if ctx.f16 {
        TypeSet::of(&[DType::Float, DType::Float16])
    } else {
        TypeSet::of(&[DType::Float])
    }
}

/// The checks every gpu kernel makes of a node: static shapes, tensors within the largest
/// binding, at most MAX_RANK dims.
fn check_tensors(ctx: &GpuContext, op: &OpDesc, host_inputs: &[usize]) -> Result<(), String> {
    let max = ctx.max_binding();
    let inputs = (0..op.input_count()).filter(|i| !host_inputs.contains(i));
    let descs = inputs
        .filter_map(|i| op.input(i).map(|d| ("input", i, d)))
        .chain((0..op.output_count()).filter_map(|i| op.output(i).map(|d| ("output", i, d))));
    for (kind, i, d) in descs {
        if d.dtype() == DataType::Undefined {
            continue;
        }
        let shape = d.shape();
        if !shape.is_fully_known() {
            return Err(format!(
                "{kind} {i} has no static shape (the gpu arena is planned at compile time)"
            ));
        }
        if shape.rank().unwrap_or(0) > MAX_RANK {
            return Err(format!("{kind} {i} has more than {MAX_RANK} dims"));
        }
        let bytes = shape.byte_size(d.dtype()).ok().flatten().unwrap_or(0) as u64;
        if bytes > max {
            return Err(format!(
                "{kind} {i} is {bytes} bytes; the adapter's largest buffer binding is {max} bytes"
            ));
        }
    }
    Ok(())
}

fn dtype_of(op: &OpDesc) -> DType {
    op.input(0)
        .and_then(|d| DType::from_ir(d.dtype()))
        .unwrap_or(DType::Float)
}

type Compile = dyn Fn(&DeviceMemory, DType) -> Result<(), GpuError> + Send + Sync;

/// A definition of `op` with the common checks, the shader check and `factory`.
fn def(
    mem: &Arc<DeviceMemory>,
    op: &str,
    inputs: Vec<PortDef>,
    host_inputs: &'static [usize],
    extra: impl Fn(&OpDesc) -> Result<(), String> + Send + Sync + 'static,
    compile: Arc<Compile>,
    factory: impl Fn(&Arc<DeviceMemory>, &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>>
        + Send
        + Sync
        + 'static,
) -> KernelDef {
    let f = floats(mem.context());
    let check_mem = mem.clone();
    let make_mem = mem.clone();
    KernelDef::new(format!("{GPU}.{op}"), op, move |init| {
        factory(&make_mem, init)
    })
    .inputs(inputs)
    .outputs(vec![PortDef::types(f)])
    .with_check(move |op| {
        check_tensors(check_mem.context(), op, host_inputs)?;
        extra(op)?;
        compile(&check_mem, dtype_of(op)).map_err(|e| e.to_string())
    })
}

fn no_check(_: &OpDesc) -> Result<(), String> {
    Ok(())
}

fn binary_arity(op: &OpDesc) -> Result<(), String> {
    let present = (0..op.input_count())
        .filter(|&i| {
            op.input(i)
                .is_some_and(|d| d.dtype() != DataType::Undefined)
        })
        .count();
    if present == 2 {
        Ok(())
    } else {
        Err(format!(
            "the gpu kernel takes 2 inputs; this node has {present}"
        ))
    }
}

fn map_factory(
    op: &'static str,
    arity: usize,
    layout: Layout,
) -> impl Fn(&Arc<DeviceMemory>, &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> + Send + Sync {
    move |mem, init| {
        let dtype = init.input_type(0).unwrap_or(DType::Float);
        let pipeline = map::pipeline(mem, op, arity, dtype)?;
        let [(an, ad), (bn, bd)] = map::unary_attrs(op);
        let alpha = if an.is_empty() {
            ad
        } else {
            init.float_or(an, ad)?
        };
        let beta = if bn.is_empty() {
            bd
        } else {
            init.float_or(bn, bd)?
        };
        let layout = match &layout {
            Layout::Permute(_) => Layout::Permute(init.ints_opt("perm")?.map(<[i64]>::to_vec)),
            l => l.clone(),
        };
        Ok(Box::new(MapKernel {
            mem: mem.clone(),
            pipeline,
            arity,
            dtype,
            alpha,
            beta,
            layout,
            expand: op == "Expand",
            prelu: op == "PRelu",
        }) as Box<dyn Kernel>)
    }
}

fn map_compile(op: &'static str, arity: usize) -> Arc<Compile> {
    Arc::new(move |mem, dtype| map::pipeline(mem, op, arity, dtype).map(|_| ()))
}

/// The gpu engine's kernel definitions over `mem`.
pub fn kernel_set(mem: &Arc<DeviceMemory>) -> KernelSet {
    let f = || PortDef::types(floats(mem.context()));
    let host = || PortDef::ANY.in_space(MemSpace::host());
    let mut set = KernelSet::new();
    let m = mem.clone();
    set.add(KernelDef::new(
        format!("{GPU}.{}", rge_runtime::transfer::TRANSFER_OP),
        rge_runtime::transfer::TRANSFER_OP,
        move |init| transfer::create(&m, init),
    ));
    for &op in UNARY_OPS {
        set.add(def(
            mem,
            op,
            vec![f()],
            &[],
            no_check,
            map_compile(op, 1),
            map_factory(op, 1, Layout::Broadcast),
        ));
    }
    for &op in BINARY_OPS {
        set.add(def(
            mem,
            op,
            vec![f()],
            &[],
            binary_arity,
            map_compile(op, 2),
            map_factory(op, 2, Layout::Broadcast),
        ));
    }
    set.add(def(
        mem,
        "Transpose",
        vec![f()],
        &[],
        no_check,
        map_compile("Transpose", 1),
        map_factory("Transpose", 1, Layout::Permute(None)),
    ));
    set.add(def(
        mem,
        "Expand",
        vec![f(), host()],
        &[1],
        no_check,
        map_compile("Expand", 1),
        map_factory("Expand", 1, Layout::Broadcast),
    ));
    let mm: Arc<Compile> = Arc::new(|mem, dtype| {
        matmul::pipeline(mem, dtype, &Activation::NONE, tile::LARGE).map(|_| ())
    });
    set.add(def(
        mem,
        "MatMul",
        vec![f()],
        &[],
        no_check,
        mm.clone(),
        |mem, init| matmul::create(mem, init, MatMulOp::MatMul),
    ));
    set.add(def(
        mem,
        "Gemm",
        vec![f()],
        &[],
        no_check,
        mm.clone(),
        |mem, init| matmul::create(mem, init, MatMulOp::Gemm),
    ));
    // The dense engine's optimizer writes these before placement; the gpu runs them with the
    // same epilogue (bias, residual, activation) so that it keeps the fused nodes.
    set.add(
        def(
            mem,
            "FusedMatMul",
            vec![f()],
            &[],
            known_activation,
            mm,
            |mem, init| matmul::create(mem, init, MatMulOp::Fused),
        )
        .domain(RGE_DOMAIN),
    );
    // Gather: the indices stay on the host (they travel in the parameter buffer).
    let gather: Arc<Compile> = Arc::new(|mem, dtype| gather::pipeline(mem, dtype).map(|_| ()));
    set.add(def(
        mem,
        "Gather",
        vec![
            f(),
            PortDef::types(TypeSet::of(&[DType::Int32, DType::Int64])).in_space(MemSpace::host()),
        ],
        &[1],
        no_check,
        gather,
        gather::create,
    ));
    let casts = if mem.context().f16 {
        TypeSet::of(&[DType::Float, DType::Float16, DType::Int32])
    } else {
        TypeSet::of(&[DType::Float, DType::Int32])
    };
    set.add(
        KernelDef::new(format!("{GPU}.Cast"), "Cast", {
            let mem = mem.clone();
            move |init| cast::create(&mem, init)
        })
        .inputs(vec![PortDef::types(casts)])
        .outputs(vec![PortDef::types(casts)])
        .with_check({
            let mem = mem.clone();
            move |op| {
                check_tensors(mem.context(), op, &[])?;
                let of = |d: Option<&rge_ir::TensorDesc>| {
                    d.and_then(|d| DType::from_ir(d.dtype()))
                        .ok_or("the gpu Cast needs known types")
                };
                let (from, to) = (of(op.input(0))?, of(op.output(0))?);
                cast::pipeline(&mem, from, to)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        }),
    );
    // Resize: the scales, sizes and roi stay on the host, where the plan is made.
    let resize: Arc<Compile> = Arc::new(resize::pipelines);
    for (since, until, ports, hosts) in [
        (10, 10, 2, &[1usize][..]),
        (11, i64::MAX, 4, &[1, 2, 3][..]),
    ] {
        let mut inputs = vec![f()];
        inputs.extend((1..ports).map(|_| host()));
        set.add(
            def(
                mem,
                "Resize",
                inputs,
                hosts,
                no_check,
                resize.clone(),
                resize::create,
            )
            .opsets(since, until),
        );
    }
    // Attention as the attention fusion writes it (4-D Q, K, V, an optional mask).
    let attention: Arc<Compile> = Arc::new(|mem, _| attention::pipeline(mem).map(|_| ()));
    set.add(
        KernelDef::new(format!("{GPU}.Attention"), "Attention", {
            let mem = mem.clone();
            move |init| attention::create(&mem, init)
        })
        .inputs(vec![
            PortDef::types(TypeSet::of(&[DType::Float])),
            PortDef::types(TypeSet::of(&[DType::Float])),
            PortDef::types(TypeSet::of(&[DType::Float])),
            PortDef::types(TypeSet::of(&[DType::Float, DType::Bool])),
        ])
        .outputs(vec![PortDef::types(TypeSet::of(&[DType::Float]))])
        .with_check({
            let mem = mem.clone();
            move |op| {
                check_tensors(mem.context(), op, &[])?;
                attention::check(op)?;
                attention(&mem, DType::Float).map_err(|e| e.to_string())
            }
        }),
    );
    let rows: Arc<Compile> = Arc::new(|mem, dtype| rows::pipeline(mem, dtype).map(|_| ()));
    for (op, kind) in [
        ("Softmax", RowOp::Softmax),
        ("LogSoftmax", RowOp::LogSoftmax),
        ("LayerNormalization", RowOp::LayerNorm),
    ] {
        set.add(def(
            mem,
            op,
            vec![f()],
            &[],
            one_output,
            rows.clone(),
            move |mem, init| rows::create(mem, init, kind),
        ));
    }
    let conv: Arc<Compile> = Arc::new(|mem, dtype| {
        conv::pipeline(mem, dtype, &Activation::NONE, tile::LARGE).map(|_| ())
    });
    set.add(def(
        mem,
        "Conv",
        vec![f()],
        &[],
        spatial_1d_2d,
        conv.clone(),
        |mem, init| conv::create(mem, init, false),
    ));
    set.add(
        def(
            mem,
            "FusedConv",
            vec![f()],
            &[],
            |o| spatial_1d_2d(o).and_then(|()| known_activation(o)),
            conv,
            |mem, init| conv::create(mem, init, true),
        )
        .domain(RGE_DOMAIN),
    );
    let pool: Arc<Compile> = Arc::new(|mem, dtype| pool::pipeline(mem, dtype).map(|_| ()));
    for op in [
        "MaxPool",
        "AveragePool",
        "GlobalAveragePool",
        "GlobalMaxPool",
    ] {
        set.add(def(
            mem,
            op,
            vec![f()],
            &[],
            |o| spatial_1d_2d(o).and_then(|()| one_output(o)),
            pool.clone(),
            move |mem, init| pool::create(mem, init, op),
        ));
    }
    let reduce: Arc<Compile> = Arc::new(|mem, dtype| reduce::pipeline(mem, dtype).map(|_| ()));
    for &op in reduce::REDUCE_OPS {
        // The axes moved from an attribute to input 1 (a host tensor) at this opset.
        let switch = if op == "ReduceSum" { 13 } else { 18 };
        set.add(
            def(
                mem,
                op,
                vec![f()],
                &[],
                no_check,
                reduce.clone(),
                move |mem, init| reduce::create(mem, init, op),
            )
            .opsets(1, switch - 1),
        );
        set.add(
            def(
                mem,
                op,
                vec![f(), host()],
                &[1],
                no_check,
                reduce.clone(),
                move |mem, init| reduce::create(mem, init, op),
            )
            .opsets(switch, i64::MAX),
        );
    }
    let copy = map_compile("Identity", 1);
    set.add(def(
        mem,
        "Concat",
        vec![f()],
        &[],
        no_check,
        copy.clone(),
        |mem, init| copy::create(mem, init, false),
    ));
    // Slice-1 takes starts/ends/axes as attributes; from opset 10 they are host inputs.
    set.add(
        def(
            mem,
            "Slice",
            vec![f()],
            &[],
            no_check,
            copy.clone(),
            |mem, init| copy::create(mem, init, true),
        )
        .opsets(1, 9),
    );
    set.add(
        def(
            mem,
            "Slice",
            vec![f(), host(), host(), host(), host()],
            &[1, 2, 3, 4],
            no_check,
            copy,
            |mem, init| copy::create(mem, init, true),
        )
        .opsets(10, i64::MAX),
    );
    set
}

/// A fused op's activation is one the gpu's epilogues apply.
fn known_activation(op: &OpDesc) -> Result<(), String> {
    let name = op
        .attrs()
        .get_str("activation")
        .ok()
        .flatten()
        .unwrap_or("");
    if ACTIVATIONS.contains(&name) {
        Ok(())
    } else {
        Err(format!("the gpu epilogue has no activation `{name}`"))
    }
}

/// Conv and pooling kernels are 1-D and 2-D.
fn spatial_1d_2d(op: &OpDesc) -> Result<(), String> {
    match op.input(0).and_then(|d| d.shape().rank()) {
        Some(3 | 4) => Ok(()),
        r => Err(format!(
            "the gpu kernel is 1-D and 2-D; input 0 has rank {r:?}"
        )),
    }
}

/// The kernels write one output (LayerNormalization's Mean and InvStdDev stay on cpu).
fn one_output(op: &OpDesc) -> Result<(), String> {
    let n = (0..op.output_count())
        .filter(|&i| {
            op.output(i)
                .is_some_and(|d| d.dtype() != DataType::Undefined)
        })
        .count();
    if n <= 1 {
        Ok(())
    } else {
        Err(format!("the gpu kernel writes 1 output; this node has {n}"))
    }
}

/// The gpu engine on `ctx`'s device: cost 1, DEVICE runtime, memory space `gpu`.
pub fn gpu_engine(ctx: Arc<GpuContext>) -> GpuEngine {
    let memory = DeviceMemory::new(ctx);
    let attrs = EngineAttributes {
        name: GPU.into(),
        mem_types: vec![GPU_SPACE.into()],
        compute_cost: 1,
        runtime: RuntimeType::Device,
        input_format: rge_ir::Format::RESERVED,
        output_format: rge_ir::Format::RESERVED,
        kind: EngineKind::Atomic,
    };
    let engine = BasicEngine::new(attrs).with_store(KernelStore::new(
        GPU,
        "gpu_kernels",
        1,
        kernel_set(&memory),
    ));
    GpuEngine {
        allocator: Arc::new(GpuAllocator(memory.clone())),
        engine,
        memory,
    }
}
