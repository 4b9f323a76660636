//! rge CPU kernels: tensor ops — shape and layout (Reshape, Transpose, Slice, Pad …), index
//! reads and writes (Gather*, Scatter*), selection (TopK, Unique, NonZero), constants, and
//! the sequence and optional ops.
//!
//! Most kernels only move elements: they describe the movement once, generically over the
//! element ([`elems::Movement`]), and run for every data type, strings and packed sub-byte
//! types included. Many reduce to per-axis offset maps ([`maps::AxisMaps`]).

mod broadcast;
mod concat;
mod constant;
mod elems;
mod gather;
mod layout;
mod maps;
mod misc;
mod pad;
mod reshape;
mod scatter;
mod select;
mod sequence;
mod shape;
mod slice;
mod util;

use rge_kernels::{KernelFactory, KernelRegistryBuilder, KernelResult, ONNX_DOMAIN};

/// (op type, factory) of every kernel of this family (default ONNX domain).
const KERNELS: &[(&str, KernelFactory)] = &[
    ("Identity", reshape::identity),
    ("Constant", constant::constant),
    ("Reshape", reshape::reshape),
    ("Flatten", reshape::flatten),
    ("Squeeze", reshape::squeeze),
    ("Unsqueeze", reshape::unsqueeze),
    ("Transpose", layout::transpose),
    ("DepthToSpace", layout::depth_to_space),
    ("SpaceToDepth", layout::space_to_depth),
    ("Concat", concat::concat),
    ("Split", concat::split),
    ("Slice", slice::slice),
    ("Gather", gather::gather),
    ("GatherElements", gather::gather_elements),
    ("GatherND", gather::gather_nd),
    ("Compress", gather::compress),
    ("Scatter", scatter::scatter_elements),
    ("ScatterElements", scatter::scatter_elements),
    ("ScatterND", scatter::scatter_nd),
    ("TensorScatter", scatter::tensor_scatter),
    ("Pad", pad::pad),
    ("CenterCropPad", pad::center_crop_pad),
    ("Tile", broadcast::tile),
    ("Expand", broadcast::expand),
    ("NonZero", select::non_zero),
    ("Unique", select::unique),
    ("TopK", select::top_k),
    ("OneHot", misc::one_hot),
    ("Trilu", misc::trilu),
    ("ReverseSequence", misc::reverse_sequence),
    ("Range", shape::range),
    ("Shape", shape::shape),
    ("Size", shape::size),
    ("ConstantOfShape", shape::constant_of_shape),
    ("EyeLike", shape::eye_like),
    ("SequenceEmpty", sequence::sequence_empty),
    ("SequenceConstruct", sequence::sequence_construct),
    ("SequenceAt", sequence::sequence_at),
    ("SequenceInsert", sequence::sequence_insert),
    ("SequenceErase", sequence::sequence_erase),
    ("SequenceLength", sequence::sequence_length),
    ("SplitToSequence", sequence::split_to_sequence),
    ("ConcatFromSequence", sequence::concat_from_sequence),
    ("Optional", sequence::optional),
    ("OptionalHasElement", sequence::optional_has_element),
    ("OptionalGetElement", sequence::optional_get_element),
];

/// Registers this family's kernels.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    for &(op, f) in KERNELS {
        b.register(ONNX_DOMAIN, op, f)?;
    }
    Ok(())
}
