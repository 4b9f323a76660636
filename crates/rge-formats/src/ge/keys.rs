//! Attribute names with a meaning to the serializer (reference §6.3, §6.4, §7).

// ---- OpDef attrs that GE turns into OpDesc fields (written without `val_type`) ----

pub const INPUT_NAME_KEY: &str = "_input_name_key";
pub const INPUT_NAME_VALUE: &str = "_input_name_value";
pub const OUTPUT_NAME_KEY: &str = "_output_name_key";
pub const OUTPUT_NAME_VALUE: &str = "_output_name_value";
/// The 2020 form of the input names: a real attr pair, with `val_type` (SOURCES.md fact 1).
pub const LEGACY_INPUT_NAME_KEY: &str = "_input_name_idx_key";
pub const LEGACY_INPUT_NAME_VALUE: &str = "_input_name_idx_value";
pub const LEGACY_OUTPUT_NAME_KEY: &str = "_output_name_idx_key";
pub const LEGACY_OUTPUT_NAME_VALUE: &str = "_output_name_idx_value";
pub const OPT_INPUT: &str = "_opt_input";
pub const IR_ATTR_NAMES: &str = "_ir_attr_names";
pub const IR_INPUTS_KEY: &str = "_ir_inputs_key";
pub const IR_INPUTS_VALUE: &str = "_ir_inputs_value";
pub const IR_OUTPUTS_KEY: &str = "_ir_outputs_key";
pub const IR_OUTPUTS_VALUE: &str = "_ir_outputs_value";
/// Dump files only: per `input` entry, the consumer's place in the producer anchor's peer list.
pub const SRC_OUT_PEER_INDEX: &str = "_src_out_peer_index_for_ge_txt_load";
/// rge's own: the number of `input` entries that belong to in-data anchors. Written only for
/// ops with a cross link (a control source on a data input, or a data source on the control
/// input), which GE's counter rule cannot place (see docs/ge-modeldef.md).
pub const DATA_INPUT_COUNT: &str = "_rge_data_input_count";
/// rge's own: `OpDesc::domain` (an `s`, written when not the default domain). GE's OpDef has
/// no such field.
pub const RGE_DOMAIN: &str = "_rge_domain";
/// rge's own: `OpDesc::opset` (an `i`, written when set).
pub const RGE_OPSET: &str = "_rge_opset";

/// OpDef attrs that never come from (or go to) the plain attribute map: the writer builds them
/// from the OpDesc, the reader consumes them. `_opt_input` is handled apart.
pub const RESERVED_OP_KEYS: [&str; 18] = [
    INPUT_NAME_KEY,
    INPUT_NAME_VALUE,
    OUTPUT_NAME_KEY,
    OUTPUT_NAME_VALUE,
    LEGACY_INPUT_NAME_KEY,
    LEGACY_INPUT_NAME_VALUE,
    LEGACY_OUTPUT_NAME_KEY,
    LEGACY_OUTPUT_NAME_VALUE,
    IR_ATTR_NAMES,
    IR_INPUTS_KEY,
    IR_INPUTS_VALUE,
    IR_OUTPUTS_KEY,
    IR_OUTPUTS_VALUE,
    SRC_OUT_PEER_INDEX,
    DATA_INPUT_COUNT,
    RGE_DOMAIN,
    RGE_OPSET,
    OPT_INPUT,
];

// ---- TensorDescriptor attrs ----

pub const ORIGIN_FORMAT: &str = "origin_format";
pub const ORIGIN_FORMAT_FOR_INT: &str = "origin_format_for_int";
pub const FORMAT_FOR_INT: &str = "format_for_int";
pub const ORIGIN_DATA_TYPE: &str = "origin_data_type";
pub const ORIGIN_SHAPE: &str = "origin_shape";
pub const ORIGIN_SHAPE_INITIALIZED: &str = "origin_shape_initialized";
pub const SHAPE_RANGE: &str = "shape_range";
pub const ORIGIN_SHAPE_RANGE: &str = "origin_shape_range";
/// Legacy dtype override (reference §2.1).
pub const LEGACY_DTYPE: &str = "__tensor_desc_data_type__";
/// In-memory marker only (never written): the TensorDescriptor had no `shape` field at all,
/// which is not the same as `shape {}` (SOURCES.md fact 5).
pub const SHAPE_UNSET: &str = "__rge_shape_unset";

/// Legacy attrs that override the TensorDescriptor extension fields (`NormalizeGeTensorDescProto`).
pub const LEGACY_EXT: [&str; 12] = [
    "size",
    "weight_size",
    "reuse_input",
    "output_tensor",
    "device_type",
    "input_tensor",
    "real_dim_cnt",
    "reuse_input_index",
    "data_offset",
    "cmps_size",
    "cmps_tab",
    "cmps_tab_offset",
];

/// Desc attrs the writer derives from TensorDesc fields (a plain attr of that name is dropped).
pub const RESERVED_DESC_KEYS: [&str; 8] = [
    ORIGIN_FORMAT,
    ORIGIN_FORMAT_FOR_INT,
    FORMAT_FOR_INT,
    ORIGIN_DATA_TYPE,
    ORIGIN_SHAPE,
    ORIGIN_SHAPE_INITIALIZED,
    LEGACY_DTYPE,
    SHAPE_UNSET,
];

// ---- weights ----

/// Const weights (a TensorDef).
pub const WEIGHTS: &str = "value";
/// Separated weights: path relative to the model file, and byte count.
pub const LOCATION: &str = "location";
pub const LENGTH: &str = "length";

// ---- OM attribute compression (SOURCES.md fact 9) ----

pub const OM_COMPRESS_VERSION: &str = "om_compress_version";
pub const ATTR_NAME_ENUM: &str = "attr_name_enum";
pub const ATTR_VALUE_ENUM: &str = "attr_value_enum";
pub const ATTRS_USE_STRING_VALUE: &str = "attrs_use_string_value";

// ---- rge encodings ----

/// A `NamedAttrs` with this name and one bytes attr [`EXPRESSION_FIELD`] stands for an
/// `AttrDef.expression` value, which rge-ir's `AttrValue` has no variant for.
pub const EXPRESSION_WRAPPER: &str = "__rge_expression__";
pub const EXPRESSION_FIELD: &str = "expression";

/// True for Const/Constant, whose `value` attr holds weights.
pub fn is_const(op_type: &str) -> bool {
    matches!(op_type, "Const" | "Constant")
}
