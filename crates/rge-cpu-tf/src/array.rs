//! Array kernels of the TF dialect: ConcatV2, Pack, Unpack, StridedSlice, Cast, Transpose,
//! Tile, GatherV2, Fill and Select(V2) over the ONNX kernels with the axis, perm or mask
//! read from their inputs; ExpandDims, Squeeze and Reshape as reshapes; Shape, Range and the
//! resizes (rge-media's TF-exact resize) computed here.

use rge_ir::AttrValue;
use rge_kernels::{
    DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor, TensorRef,
};
use rge_ops::ops::tf::strided_slice::{plan, Masks};
use rge_ops::ops::tf::{dtype_attr, flag};

use crate::steps::{attr_err, i64s, put, put_reshaped, Steps};

fn invalid(msg: String) -> KernelError {
    KernelError::invalid(msg)
}

/// A scalar (or 1-element) int input.
fn scalar(t: &TensorRef<'_>, what: &str) -> KernelResult<i64> {
    match t.to_i64_vec()?.as_slice() {
        [v] => Ok(*v),
        v => Err(invalid(format!("{what} must be one integer, got {v:?}"))),
    }
}

/// `axis` in `0..rank`.
fn norm_axis(axis: i64, rank: usize) -> KernelResult<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(invalid(format!(
            "axis {axis} is out of range for rank {rank}"
        )));
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

pub fn create_array(steps: &Steps, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let steps = steps.clone();
    let a = init.attrs;
    let op = match init.op_type {
        "ConcatV2" => ArrayOp::Concat,
        "Pack" => ArrayOp::Pack(init.int_or("axis", 0)?),
        "Unpack" => ArrayOp::Unpack(init.int_or("axis", 0)?),
        "StridedSlice" => ArrayOp::StridedSlice(Masks::from_attrs(a).map_err(attr_err)?),
        "Cast" => {
            let to = match dtype_attr(a, "DstT").map_err(attr_err)? {
                Some(t) => t,
                None => dtype_attr(a, "dst_type")
                    .map_err(attr_err)?
                    .ok_or_else(|| KernelError::attr("DstT", "required but missing"))?,
            };
            let to = DType::from_ir(to)
                .ok_or_else(|| KernelError::attr("DstT", format!("{to} has no runtime type")))?;
            ArrayOp::Cast(to)
        }
        "Transpose" => ArrayOp::Transpose,
        "Tile" => ArrayOp::Tile,
        "GatherV2" => {
            if init.int_or("batch_dims", 0)? != 0 {
                return Err(KernelError::attr("batch_dims", "only 0 is supported"));
            }
            ArrayOp::Gather
        }
        "ExpandDims" => ArrayOp::ExpandDims,
        "Squeeze" => {
            let mut axes = init.ints_or_empty("squeeze_dims")?;
            if axes.is_empty() {
                axes = init.ints_or_empty("axis")?;
            }
            ArrayOp::Squeeze(axes)
        }
        "Reshape" => ArrayOp::Reshape,
        "Shape" => {
            let t = dtype_attr(a, "out_type").map_err(attr_err)?;
            ArrayOp::Shape(match t.and_then(DType::from_ir) {
                None if t.is_none() => DType::Int32,
                Some(d @ (DType::Int32 | DType::Int64)) => d,
                _ => return Err(KernelError::attr("out_type", "must be int32 or int64")),
            })
        }
        "Fill" => ArrayOp::Fill,
        "Range" => ArrayOp::Range,
        "Select" => ArrayOp::Select(false),
        "SelectV2" => ArrayOp::Select(true),
        "ResizeBilinear" | "ResizeNearestNeighbor" => {
            let align = flag(a, &["align_corners"]).map_err(attr_err)?;
            let half = flag(a, &["half_pixel_centers"]).map_err(attr_err)?;
            if align && half {
                return Err(KernelError::attr(
                    "half_pixel_centers",
                    "cannot be set together with align_corners",
                ));
            }
            ArrayOp::Resize {
                bilinear: init.op_type == "ResizeBilinear",
                align,
                half,
            }
        }
        other => return Err(KernelError::unsupported(format!("no array op {other}"))),
    };
    Ok(Box::new(Array { steps, op }))
}

enum ArrayOp {
    Concat,
    Pack(i64),
    Unpack(i64),
    StridedSlice(Masks),
    Cast(DType),
    Transpose,
    Tile,
    Gather,
    ExpandDims,
    Squeeze(Vec<i64>),
    Reshape,
    Shape(DType),
    Fill,
    Range,
    Select(bool),
    Resize {
        bilinear: bool,
        align: bool,
        half: bool,
    },
}

struct Array {
    steps: Steps,
    op: ArrayOp,
}

impl Kernel for Array {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let s = &self.steps;
        let th = ctx.threads();
        let x = ctx.input(0)?;
        match &self.op {
            ArrayOp::Concat => {
                let n = ctx.input_count();
                if n < 2 {
                    return Err(invalid("ConcatV2 needs values and the axis".into()));
                }
                let axis = scalar(&ctx.input(n - 1)?, "concat_dim")?;
                let axis = norm_axis(axis, x.rank())?;
                let ins: Vec<Option<TensorRef<'_>>> = (0..n - 1)
                    .map(|i| ctx.opt_input(i))
                    .collect::<KernelResult<_>>()?;
                let y = s.run(
                    "Concat",
                    vec![("axis", AttrValue::Int(axis as i64))],
                    &ins,
                    th,
                )?;
                put(ctx, 0, y)
            }
            ArrayOp::Pack(axis) => {
                let n = ctx.input_count();
                let axis = norm_axis(*axis, x.rank() + 1)?;
                let mut parts = Vec::with_capacity(n);
                for i in 0..n {
                    let t = ctx.input(i)?;
                    if t.shape() != x.shape() {
                        return Err(invalid(format!(
                            "value {i} has shape {:?}, value 0 {:?}",
                            t.shape(),
                            x.shape()
                        )));
                    }
                    let mut d = t.shape().to_vec();
                    d.insert(axis, 1);
                    parts.push(t.to_owned().reshaped(&d)?);
                }
                let ins: Vec<Option<TensorRef<'_>>> =
                    parts.iter().map(|t| Some(t.view())).collect();
                let y = s.run(
                    "Concat",
                    vec![("axis", AttrValue::Int(axis as i64))],
                    &ins,
                    th,
                )?;
                put(ctx, 0, y)
            }
            ArrayOp::Unpack(axis) => {
                let axis = norm_axis(*axis, x.rank())?;
                let n = ctx.output_count();
                if x.shape()[axis] != n {
                    return Err(invalid(format!(
                        "dim {axis} of {:?} is not the {n} outputs",
                        x.shape()
                    )));
                }
                let g = s.kernel("Gather", vec![("axis", AttrValue::Int(axis as i64))])?;
                for i in 0..n {
                    let idx = Tensor::scalar(i as i64);
                    let y = g.run(&[Some(x), Some(idx.view())], th)?;
                    put(ctx, i, y)?;
                }
                Ok(())
            }
            ArrayOp::StridedSlice(masks) => {
                let [b, e, st] = [1, 2, 3].map(|i| ctx.input(i).and_then(|t| t.to_i64_vec()));
                let dims: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
                let p = plan(&dims, &b?, &e?, &st?, *masks).map_err(invalid)?;
                // ONNX Slice: ends past the front of a negative step are i64::MIN.
                let ends: Vec<i64> = (0..dims.len())
                    .map(|k| {
                        let end = p.begin[k] + p.size[k] * p.stride[k];
                        if p.stride[k] < 0 && end < 0 {
                            i64::MIN
                        } else {
                            end
                        }
                    })
                    .collect();
                let axes: Vec<i64> = (0..dims.len() as i64).collect();
                let [bt, et, at, stt] = [&p.begin, &ends, &axes, &p.stride].map(|v| i64s(v));
                let (bt, et, at, stt) = (bt?, et?, at?, stt?);
                let y = s.run(
                    "Slice",
                    Vec::new(),
                    &[
                        Some(x),
                        Some(bt.view()),
                        Some(et.view()),
                        Some(at.view()),
                        Some(stt.view()),
                    ],
                    th,
                )?;
                let fin: Vec<usize> = p.final_shape.iter().map(|&d| d as usize).collect();
                put(ctx, 0, y.reshaped(&fin)?)
            }
            ArrayOp::Cast(to) => {
                let y = s.run(
                    "Cast",
                    vec![("to", AttrValue::Int(to.onnx().into()))],
                    &[Some(x)],
                    th,
                )?;
                put(ctx, 0, y)
            }
            ArrayOp::Transpose => {
                let perm = ctx.input(1)?.to_i64_vec()?;
                if perm.len() != x.rank() {
                    return Err(invalid(format!(
                        "perm {perm:?} has {} entries for rank {}",
                        perm.len(),
                        x.rank()
                    )));
                }
                let y = s.transpose(x, &perm, th)?;
                put(ctx, 0, y)
            }
            ArrayOp::Tile => {
                let m = i64s(&ctx.input(1)?.to_i64_vec()?)?;
                let y = s.run("Tile", Vec::new(), &[Some(x), Some(m.view())], th)?;
                put(ctx, 0, y)
            }
            ArrayOp::Gather => {
                let axis = norm_axis(scalar(&ctx.input(2)?, "axis")?, x.rank())?;
                let idx = ctx.input(1)?;
                let y = s.run(
                    "Gather",
                    vec![("axis", AttrValue::Int(axis as i64))],
                    &[Some(x), Some(idx)],
                    th,
                )?;
                put(ctx, 0, y)
            }
            ArrayOp::ExpandDims => {
                let axis = norm_axis(scalar(&ctx.input(1)?, "axis")?, x.rank() + 1)?;
                let mut d = x.shape().to_vec();
                d.insert(axis, 1);
                put_reshaped(ctx, 0, x, &d)
            }
            ArrayOp::Squeeze(axes) => {
                let mut keep = Vec::new();
                let norm: Vec<usize> = axes
                    .iter()
                    .map(|&a| norm_axis(a, x.rank()))
                    .collect::<KernelResult<_>>()?;
                for (k, &d) in x.shape().iter().enumerate() {
                    let listed = norm.contains(&k);
                    if listed && d != 1 {
                        return Err(invalid(format!("cannot squeeze dim {k} of size {d}")));
                    }
                    if !(listed || (norm.is_empty() && d == 1)) {
                        keep.push(d);
                    }
                }
                put_reshaped(ctx, 0, x, &keep)
            }
            ArrayOp::Reshape => {
                let shape = ctx.input(1)?.to_i64_vec()?;
                let d = reshape_dims(&shape, x.len())?;
                put_reshaped(ctx, 0, x, &d)
            }
            ArrayOp::Shape(dt) => {
                let d: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
                let t = match dt {
                    DType::Int32 => {
                        let v: Vec<i32> = d
                            .iter()
                            .map(|&v| {
                                i32::try_from(v)
                                    .map_err(|_| invalid(format!("dim {v} overflows int32")))
                            })
                            .collect::<KernelResult<_>>()?;
                        Tensor::from_vec(&[v.len()], v)?
                    }
                    _ => i64s(&d)?,
                };
                put(ctx, 0, t)
            }
            ArrayOp::Fill => {
                let dims = x.to_i64_vec()?;
                if dims.iter().any(|&d| d < 0) {
                    return Err(invalid(format!("dims {dims:?} must be ≥ 0")));
                }
                let v = ctx.input(1)?;
                if v.len() != 1 {
                    return Err(invalid(format!(
                        "value must be a scalar, got {:?}",
                        v.shape()
                    )));
                }
                let shape = i64s(&dims)?;
                let y = s.run("Expand", Vec::new(), &[Some(v), Some(shape.view())], th)?;
                put(ctx, 0, y)
            }
            ArrayOp::Range => range(ctx),
            ArrayOp::Select(v2) => {
                let (t, e) = (ctx.input(1)?, ctx.input(2)?);
                let shaped;
                // Select with a vector condition picks whole rows of x/y.
                let cond = if !*v2 && x.rank() == 1 && t.rank() > 1 {
                    let mut d = vec![1usize; t.rank()];
                    d[0] = x.len();
                    shaped = x.to_owned().reshaped(&d)?;
                    shaped.view()
                } else {
                    if !*v2 && x.shape() != t.shape() {
                        return Err(invalid(format!(
                            "condition {:?} must have the shape of x {:?} or be a vector",
                            x.shape(),
                            t.shape()
                        )));
                    }
                    x
                };
                let y = s.run("Where", Vec::new(), &[Some(cond), Some(t), Some(e)], th)?;
                put(ctx, 0, y)
            }
            ArrayOp::Resize {
                bilinear,
                align,
                half,
            } => resize(ctx, *bilinear, *align, *half),
        }
    }
}

/// TF Reshape dims: one -1 takes the rest.
fn reshape_dims(shape: &[i64], total: usize) -> KernelResult<Vec<usize>> {
    let unknown = shape.iter().filter(|&&d| d == -1).count();
    if unknown > 1 || shape.iter().any(|&d| d < -1) {
        return Err(invalid(format!(
            "shape {shape:?}: at most one -1 and no other negative dim"
        )));
    }
    let known: usize = shape
        .iter()
        .filter(|&&d| d >= 0)
        .map(|&d| d as usize)
        .product();
    let d: Vec<usize> = shape
        .iter()
        .map(|&d| {
            if d == -1 {
                total.checked_div(known).unwrap_or(0)
            } else {
                d as usize
            }
        })
        .collect();
    if d.iter().product::<usize>() != total {
        return Err(invalid(format!(
            "cannot reshape {total} elements into {shape:?}"
        )));
    }
    Ok(d)
}

/// The most elements Range and the resizes make.
const MAX_OUTPUT: usize = 1 << 28;

fn range(ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
    let [s, l, d] = [0, 1, 2].map(|i| ctx.input(i));
    let (s, l, d) = (s?, l?, d?);
    let dt = s.dtype();
    let one = |t: &TensorRef<'_>, w: &str| -> KernelResult<f64> {
        match t.to_f64_vec()?.as_slice() {
            [v] => Ok(*v),
            v => Err(invalid(format!("{w} must be a scalar, got {v:?}"))),
        }
    };
    let (a, b, c) = (one(&s, "start")?, one(&l, "limit")?, one(&d, "delta")?);
    if c == 0.0 {
        return Err(invalid("delta is 0".into()));
    }
    if (c > 0.0 && a > b) || (c < 0.0 && a < b) {
        return Err(invalid(format!(
            "start {a}, limit {b} and delta {c} give no range"
        )));
    }
    let n = ((b - a) / c).abs().ceil();
    // NaN (a NaN bound) fails the test too.
    if n.is_nan() || n > MAX_OUTPUT as f64 {
        return Err(invalid(format!(
            "the range has {n} elements, over the limit"
        )));
    }
    let n = n as usize;
    let t = match dt {
        DType::Float => {
            let (a, c) = (a as f32, c as f32);
            Tensor::from_vec(&[n], (0..n).map(|i| a + i as f32 * c).collect::<Vec<f32>>())?
        }
        DType::Double => {
            Tensor::from_vec(&[n], (0..n).map(|i| a + i as f64 * c).collect::<Vec<f64>>())?
        }
        DType::Int32 => {
            let (a, c) = (a as i32, c as i32);
            Tensor::from_vec(&[n], (0..n).map(|i| a + i as i32 * c).collect::<Vec<i32>>())?
        }
        DType::Int64 => {
            let (a, c) = (a as i64, c as i64);
            Tensor::from_vec(&[n], (0..n).map(|i| a + i as i64 * c).collect::<Vec<i64>>())?
        }
        other => {
            return Err(KernelError::unsupported(format!(
                "Range of {}",
                other.name()
            )))
        }
    };
    put(ctx, 0, t)
}

fn resize(ctx: &mut KernelCtx<'_>, bilinear: bool, align: bool, half: bool) -> KernelResult<()> {
    use rge_media::resize::{resize as run, Geometry, Method};
    let x = ctx.input(0)?;
    let [n, h, w, c] = match *x.shape() {
        [n, h, w, c] if h > 0 && w > 0 => [n, h, w, c],
        ref s => {
            return Err(invalid(format!(
                "images must be non-empty [N, H, W, C], got {s:?}"
            )))
        }
    };
    let (oh, ow) = match ctx.input(1)?.to_i64_vec()?.as_slice() {
        [a, b] if *a > 0 && *b > 0 => (*a as usize, *b as usize),
        v => {
            return Err(invalid(format!(
                "size must be two positive values, got {v:?}"
            )))
        }
    };
    let total = n.saturating_mul(oh).saturating_mul(ow).saturating_mul(c);
    if total > MAX_OUTPUT {
        return Err(invalid(format!("{total} output values is over the limit")));
    }
    let v: Vec<f32> = match x.dtype() {
        DType::Float => x.as_slice::<f32>()?.to_vec(),
        _ => x.to_f64_vec()?.into_iter().map(|v| v as f32).collect(),
    };
    let mut out = vec![0f32; total];
    let method = if bilinear {
        Method::Bilinear
    } else {
        Method::Nearest
    };
    run(
        &v,
        Geometry { n, h, w, c },
        oh,
        ow,
        method,
        align,
        half,
        &mut out,
    );
    let shape = [n, oh, ow, c];
    let t = Tensor::from_vec(&shape, out)?;
    // Nearest keeps the element type (its values are source values).
    let t = if bilinear || x.dtype() == DType::Float {
        t
    } else {
        let steps_cast = x.dtype();
        let f = t.view().to_f64_vec()?;
        match steps_cast {
            DType::Double => Tensor::from_vec(&shape, f)?,
            DType::Int32 => {
                Tensor::from_vec(&shape, f.iter().map(|&v| v as i32).collect::<Vec<_>>())?
            }
            DType::Int64 => {
                Tensor::from_vec(&shape, f.iter().map(|&v| v as i64).collect::<Vec<_>>())?
            }
            DType::Uint8 => {
                Tensor::from_vec(&shape, f.iter().map(|&v| v as u8).collect::<Vec<_>>())?
            }
            other => {
                return Err(KernelError::unsupported(format!(
                    "nearest resize of {}",
                    other.name()
                )))
            }
        }
    };
    put(ctx, 0, t)
}
