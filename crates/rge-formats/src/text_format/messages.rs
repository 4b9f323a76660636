//! Per-message field tables of `ge.proto` for the text format: which fields
//! exist, in field-number order, and of which kind.

use crate::ge_proto::{
    attr_def, attr_def::list_list_float, attr_def::list_list_int, attr_def::list_value,
    attr_group_def, attribute_def, AttrDef, AttrGroupDef, AttrGroups, AttributeDef, DataType,
    GraphDef, InputSourceDef, ModelDef, NamedAttrs, OpDef, OtherGroupDef, ReplacementDef, ShapeDef,
    ShapeEnvAttrGroupsDef, ShapeEnvSettingDef, SymbolCheckInfoDef, SymbolInfoDef, TensorDef,
    TensorDescAttrGroupsDef, TensorDescriptor,
};

use super::parser::{FieldMatch, Parser};
use super::printer::Printer;
use super::TextFormatError;

/// A message the text format knows how to print and parse.
pub(crate) trait TextMessage: Default {
    /// Fully qualified proto name, for error messages.
    const FULL_NAME: &'static str;
    /// Prints all fields that are present, in field-number order.
    fn print_fields(&self, p: &mut Printer);
    /// Parses the value of field `name` (the name is already consumed).
    fn merge_field(
        &mut self,
        name: &str,
        p: &mut Parser<'_>,
    ) -> Result<FieldMatch, TextFormatError>;
}

/// A proto enum, for printing and parsing values by name.
pub(crate) trait ProtoEnum {
    const FULL_NAME: &'static str;
    fn value_name(value: i32) -> Option<&'static str>;
    fn from_name(name: &str) -> Option<i32>;
}

macro_rules! proto_enum {
    ($($t:ty = $full:literal),* $(,)?) => {$(
        impl ProtoEnum for $t {
            const FULL_NAME: &'static str = $full;
            fn value_name(value: i32) -> Option<&'static str> {
                <$t>::try_from(value).ok().map(|e| e.as_str_name())
            }
            fn from_name(name: &str) -> Option<i32> {
                <$t>::from_str_name(name).map(|e| e as i32)
            }
        }
    )*};
}

proto_enum! {
    DataType = "ge.proto.DataType",
    list_value::ListValueType = "ge.proto.AttrDef.ListValue.ListValueType",
}

macro_rules! field_name {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident $name:literal) => {
        $name
    };
}

/// Implements `TextMessage` for a message without oneofs from its field list,
/// written in field-number order: `field: kind`, or `field["name"]: kind` when
/// the Rust name differs; `kind` is a method of both `Printer` and `Parser`.
macro_rules! text_message {
    ($(
        $t:ty = $full:literal {
            $($field:ident $([$name:literal])? : $kind:ident $(<$e:ty>)?),* $(,)?
        }
    )*) => {$(
        impl TextMessage for $t {
            const FULL_NAME: &'static str = $full;
            fn print_fields(&self, p: &mut Printer) {
                $( p.$kind $(::<$e>)? (field_name!($field $($name)?), &self.$field); )*
            }
            fn merge_field(
                &mut self,
                name: &str,
                p: &mut Parser<'_>,
            ) -> Result<FieldMatch, TextFormatError> {
                match name {
                    $( field_name!($field $($name)?) => p.$kind $(::<$e>)? (&mut self.$field), )*
                    _ => Ok(FieldMatch::Unknown),
                }
            }
        }
    )*};
}

text_message! {
    attr_def::ListValue = "ge.proto.AttrDef.ListValue" {
        s: repeated,
        i: repeated,
        f: repeated,
        b: repeated,
        bt: repeated,
        td: messages,
        t: messages,
        g: messages,
        na: messages,
        dt: repeated,
        val_type: enumeration<list_value::ListValueType>,
    }
    attr_def::ListListInt = "ge.proto.AttrDef.ListListInt" {
        list_list_i: messages,
    }
    list_list_int::ListInt = "ge.proto.AttrDef.ListListInt.ListInt" {
        list_i: repeated,
    }
    attr_def::ListListFloat = "ge.proto.AttrDef.ListListFloat" {
        list_list_f: messages,
    }
    list_list_float::ListFloat = "ge.proto.AttrDef.ListListFloat.ListFloat" {
        list_f: repeated,
    }
    NamedAttrs = "ge.proto.NamedAttrs" {
        name: scalar,
        attr: map,
    }
    ShapeDef = "ge.proto.ShapeDef" {
        dim: repeated,
    }
    TensorDescriptor = "ge.proto.TensorDescriptor" {
        name: scalar,
        dtype: enumeration<DataType>,
        shape: message,
        layout: scalar,
        attr: map,
        attr_groups: message,
        has_out_attr: scalar,
        size: scalar,
        weight_size: scalar,
        reuse_input: scalar,
        output_tensor: scalar,
        device_type: scalar,
        input_tensor: scalar,
        real_dim_cnt: scalar,
        reuse_input_index: scalar,
        data_offset: scalar,
        cmps_size: scalar,
        cmps_tab: scalar,
        cmps_tab_offset: scalar,
    }
    TensorDef = "ge.proto.TensorDef" {
        desc: message,
        data: scalar,
    }
    OpDef = "ge.proto.OpDef" {
        name: scalar,
        r#type["type"]: scalar,
        input: repeated,
        attr: map,
        attr_groups: message,
        has_out_attr: scalar,
        id: scalar,
        stream_id: scalar,
        input_name: repeated,
        src_name: repeated,
        src_index: repeated,
        dst_name: repeated,
        dst_index: repeated,
        input_i: repeated,
        output_i: repeated,
        workspace: repeated,
        workspace_bytes: repeated,
        is_input_const: repeated,
        input_desc: messages,
        output_desc: messages,
        subgraph_name: repeated,
    }
    GraphDef = "ge.proto.GraphDef" {
        name: scalar,
        input: repeated,
        output: repeated,
        op: messages,
        attr: map,
        attr_groups: message,
    }
    ModelDef = "ge.proto.ModelDef" {
        name: scalar,
        version: scalar,
        custom_version: scalar,
        graph: messages,
        attr: map,
        attr_groups: message,
    }
    AttrGroups = "ge.proto.AttrGroups" {
        other_group_def: message,
        attr_group_def: messages,
    }
    OtherGroupDef = "ge.proto.OtherGroupDef" {
        attr: map,
    }
    TensorDescAttrGroupsDef = "ge.proto.TensorDescAttrGroupsDef" {
        origin_symbol_shape: repeated,
        symbolic_value: repeated,
    }
    ShapeEnvAttrGroupsDef = "ge.proto.ShapeEnvAttrGroupsDef" {
        symbol_to_value: map,
        value_to_symbol: map,
        symbol_to_source: map,
        replacements: map,
        symbol_check_infos: messages,
        symbol_assert_infos: messages,
        shape_setting: message,
        unique_sym_id: scalar,
    }
    InputSourceDef = "ge.proto.InputSourceDef" {
        input_data_idx: scalar,
        dim_idx: scalar,
    }
    ReplacementDef = "ge.proto.ReplacementDef" {
        replace_expr: scalar,
        rank: scalar,
    }
    SymbolCheckInfoDef = "ge.proto.SymbolCheckInfoDef" {
        expr: scalar,
        file: scalar,
        line: scalar,
        dfx: scalar,
    }
    ShapeEnvSettingDef = "ge.proto.ShapeEnvSettingDef" {
        specialize_zero_one: scalar,
        dynamic_mode: scalar,
    }
    SymbolInfoDef = "ge.proto.SymbolInfoDef" {
        symbols: repeated,
    }
}

// ---- messages with a oneof: a set member is always printed ----

/// Parses a oneof member and stores it in `$slot` as `$variant(value)`.
macro_rules! oneof_member {
    ($p:ident, $slot:expr, $oneof:literal, $variant:path) => {{
        $slot = Some($variant($p.value()?));
        Ok(FieldMatch::Oneof($oneof))
    }};
}

impl TextMessage for AttrDef {
    const FULL_NAME: &'static str = "ge.proto.AttrDef";

    fn print_fields(&self, p: &mut Printer) {
        use attr_def::Value;
        match &self.value {
            None => {}
            Some(Value::List(v)) => p.message_always("list", v),
            Some(Value::S(v)) => p.scalar_always("s", v),
            Some(Value::I(v)) => p.scalar_always("i", v),
            Some(Value::F(v)) => p.scalar_always("f", v),
            Some(Value::B(v)) => p.scalar_always("b", v),
            Some(Value::Bt(v)) => p.scalar_always("bt", v),
            Some(Value::Func(v)) => p.message_always("func", v),
            Some(Value::Td(v)) => p.message_always("td", v),
            Some(Value::T(v)) => p.message_always("t", v),
            Some(Value::G(v)) => p.message_always("g", v),
            Some(Value::ListListInt(v)) => p.message_always("list_list_int", v),
            Some(Value::Dt(v)) => p.scalar_always("dt", v),
            Some(Value::ListListFloat(v)) => p.message_always("list_list_float", v),
            Some(Value::Expression(v)) => p.scalar_always("expression", v),
        }
    }

    fn merge_field(
        &mut self,
        name: &str,
        p: &mut Parser<'_>,
    ) -> Result<FieldMatch, TextFormatError> {
        use attr_def::Value;
        match name {
            "list" => oneof_member!(p, self.value, "value", Value::List),
            "s" => oneof_member!(p, self.value, "value", Value::S),
            "i" => oneof_member!(p, self.value, "value", Value::I),
            "f" => oneof_member!(p, self.value, "value", Value::F),
            "b" => oneof_member!(p, self.value, "value", Value::B),
            "bt" => oneof_member!(p, self.value, "value", Value::Bt),
            "func" => oneof_member!(p, self.value, "value", Value::Func),
            "td" => oneof_member!(p, self.value, "value", Value::Td),
            "t" => oneof_member!(p, self.value, "value", Value::T),
            "g" => oneof_member!(p, self.value, "value", Value::G),
            "list_list_int" => oneof_member!(p, self.value, "value", Value::ListListInt),
            "dt" => oneof_member!(p, self.value, "value", Value::Dt),
            "list_list_float" => oneof_member!(p, self.value, "value", Value::ListListFloat),
            "expression" => oneof_member!(p, self.value, "value", Value::Expression),
            _ => Ok(FieldMatch::Unknown),
        }
    }
}

impl TextMessage for AttrGroupDef {
    const FULL_NAME: &'static str = "ge.proto.AttrGroupDef";

    fn print_fields(&self, p: &mut Printer) {
        use attr_group_def::AttrGroup;
        match &self.attr_group {
            None => {}
            Some(AttrGroup::TensorAttrGroup(v)) => p.message_always("tensor_attr_group", v),
            Some(AttrGroup::ShapeEnvAttrGroup(v)) => p.message_always("shape_env_attr_group", v),
        }
    }

    fn merge_field(
        &mut self,
        name: &str,
        p: &mut Parser<'_>,
    ) -> Result<FieldMatch, TextFormatError> {
        use attr_group_def::AttrGroup;
        match name {
            "tensor_attr_group" => {
                oneof_member!(p, self.attr_group, "attr_group", AttrGroup::TensorAttrGroup)
            }
            "shape_env_attr_group" => {
                oneof_member!(
                    p,
                    self.attr_group,
                    "attr_group",
                    AttrGroup::ShapeEnvAttrGroup
                )
            }
            _ => Ok(FieldMatch::Unknown),
        }
    }
}

impl TextMessage for AttributeDef {
    const FULL_NAME: &'static str = "ge.proto.AttributeDef";

    fn print_fields(&self, p: &mut Printer) {
        use attribute_def::Value;
        match &self.value {
            None => {}
            Some(Value::S(v)) => p.scalar_always("s", v),
            Some(Value::I(v)) => p.scalar_always("i", v),
            Some(Value::F(v)) => p.scalar_always("f", v),
            Some(Value::B(v)) => p.scalar_always("b", v),
            Some(Value::Bt(v)) => p.scalar_always("bt", v),
        }
    }

    fn merge_field(
        &mut self,
        name: &str,
        p: &mut Parser<'_>,
    ) -> Result<FieldMatch, TextFormatError> {
        use attribute_def::Value;
        match name {
            "s" => oneof_member!(p, self.value, "value", Value::S),
            "i" => oneof_member!(p, self.value, "value", Value::I),
            "f" => oneof_member!(p, self.value, "value", Value::F),
            "b" => oneof_member!(p, self.value, "value", Value::B),
            "bt" => oneof_member!(p, self.value, "value", Value::Bt),
            _ => Ok(FieldMatch::Unknown),
        }
    }
}
