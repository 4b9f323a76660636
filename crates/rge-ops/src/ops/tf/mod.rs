//! The TensorFlow dialect of GE graphs (what GE's TF parser leaves and the seed's AI CPU TF
//! engine runs): Conv2D, BiasAdd, FusedBatchNorm, StridedSlice, ConcatV2, Mean with keep_dims…
//! with TF's inputs, attribute names and defaults. See `docs/cpu-tf-engine.md`.
//!
//! Every prototype is in domain [`TF_DOMAIN`] (a GE op says so with `_rge_domain: "tf"`); the
//! op types ONNX does not use ([`DEFAULT_DOMAIN_OPS`]) are served in the default domain as
//! well, so a GE file without rge's marker still finds Conv2D or StridedSlice. Names that ONNX
//! gives other semantics (MatMul, Max, Mean, Cast, Squeeze, Pad…) need the domain.

use crate::error::OpsError;
use crate::proto::OpProto;
use crate::registry::OpRegistryBuilder;

mod array;
mod math;
mod nn;
pub mod strided_slice;
pub mod window;

/// The domain of the TF-dialect prototypes.
pub const TF_DOMAIN: &str = "tf";

/// TF-dialect op types whose names ONNX does not use: also registered in the default domain.
pub const DEFAULT_DOMAIN_OPS: &[&str] = &[
    "Conv2D",
    "DepthwiseConv2dNative",
    "BiasAdd",
    "MatMulV2",
    "BatchMatMul",
    "BatchMatMulV2",
    "FusedBatchNorm",
    "FusedBatchNormV3",
    "Relu6",
    "AvgPool",
    "ConcatV2",
    "Pack",
    "Unpack",
    "StridedSlice",
    "PadV2",
    "MirrorPad",
    "Prod",
    "ExpandDims",
    "GatherV2",
    "Fill",
    "Select",
    "SelectV2",
    "ResizeBilinear",
    "ResizeNearestNeighbor",
    "AddV2",
    "RealDiv",
    "FloorDiv",
    "FloorMod",
    "SquaredDifference",
    "Rsqrt",
    "Square",
    "Maximum",
    "Minimum",
];

/// A TF-dialect prototype (domain [`TF_DOMAIN`], version 1).
pub(crate) fn tf_op(op_type: &str) -> OpProto {
    OpProto::new(TF_DOMAIN, op_type, 1)
}

/// Registers `p` in the TF domain and, for [`DEFAULT_DOMAIN_OPS`], in the default one.
pub(crate) fn add(b: &mut OpRegistryBuilder, p: OpProto) -> Result<(), OpsError> {
    if DEFAULT_DOMAIN_OPS.contains(&p.op_type.as_str()) {
        let mut d = p.clone();
        d.domain = String::new();
        b.register(d)?;
    }
    b.register(p)
}

/// Registers every TF-dialect prototype.
pub(crate) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    nn::register(b)?;
    math::register(b)?;
    array::register(b)
}

/// A dtype attribute of the TF dialect (`DstT`, `out_type`, `Tidx`): a typed data type, or a
/// `ge::DataType` int as older GE dumps write it (SOURCES.md fact 4).
pub fn dtype_attr(attrs: &rge_ir::AttrMap, name: &str) -> Result<Option<rge_ir::DataType>, String> {
    match attrs.get(name) {
        None => Ok(None),
        Some(rge_ir::AttrValue::DataType(d)) => Ok(Some(*d)),
        Some(rge_ir::AttrValue::Int(i)) => rge_ir::DataType::from_ge_value(*i)
            .map(Some)
            .ok_or_else(|| format!("attribute `{name}`: {i} is not a ge::DataType value")),
        Some(v) => Err(format!(
            "attribute `{name}` is {}, not a data type",
            v.kind_name()
        )),
    }
}

/// A bool attribute under either of two names (TF's and GE's: `transpose_a` / `transpose_x1`).
pub fn flag(attrs: &rge_ir::AttrMap, names: &[&str]) -> Result<bool, String> {
    for n in names {
        match attrs.get(n) {
            None => continue,
            Some(rge_ir::AttrValue::Bool(b)) => return Ok(*b),
            Some(rge_ir::AttrValue::Int(i)) => return Ok(*i != 0),
            Some(v) => return Err(format!("attribute `{n}` is {}, not a bool", v.kind_name())),
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_domain_ops_are_not_onnx_names() {
        let reg = crate::OpRegistry::builtin();
        for op in DEFAULT_DOMAIN_OPS {
            assert!(reg.lookup(TF_DOMAIN, op, 1).is_some(), "{op}");
            assert!(reg.lookup("", op, i64::MAX).is_some(), "{op}");
        }
    }
}
