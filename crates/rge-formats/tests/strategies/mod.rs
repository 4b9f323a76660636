//! proptest strategies for random `ge.proto` messages.

#![allow(dead_code)]

use std::collections::BTreeMap;

use bytes::Bytes;
use proptest::collection::{btree_map, vec};
use proptest::num::f32 as f32s;
use proptest::option;
use proptest::prelude::*;
use rge_formats::ge_proto::{
    attr_def, attr_def::list_list_float::ListFloat, attr_def::list_list_int::ListInt,
    attr_group_def, attribute_def, AttrDef, AttrGroupDef, AttrGroups, AttributeDef, GraphDef,
    InputSourceDef, ModelDef, NamedAttrs, OpDef, OtherGroupDef, ReplacementDef, ShapeDef,
    ShapeEnvAttrGroupsDef, ShapeEnvSettingDef, SymbolCheckInfoDef, SymbolInfoDef, TensorDef,
    TensorDescAttrGroupsDef, TensorDescriptor,
};

/// Any f32 but NaN (NaN != NaN would break equality checks): normals,
/// subnormals, both zeros, both infinities.
pub fn float() -> impl Strategy<Value = f32> {
    f32s::POSITIVE | f32s::NEGATIVE | f32s::NORMAL | f32s::SUBNORMAL | f32s::ZERO | f32s::INFINITE
}

fn character() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => proptest::char::range('a', 'z'),
        2 => any::<char>(),
        1 => (0u8..0x20).prop_map(char::from),
        1 => prop::sample::select(vec!['"', '\'', '\\', '?', '\u{7f}', '\u{80}', 'é', '\u{10ffff}', ':', '#']),
    ]
}

pub fn string() -> impl Strategy<Value = String> {
    vec(character(), 0..6).prop_map(String::from_iter)
}

pub fn bytes() -> impl Strategy<Value = Bytes> {
    vec(any::<u8>(), 0..8).prop_map(Bytes::from)
}

fn int() -> impl Strategy<Value = i64> {
    prop_oneof![-3i64..3, any::<i64>(), Just(i64::MIN), Just(i64::MAX)]
}

/// An enum field: mostly named values, sometimes numbers without a name.
fn enum_value(max: i32) -> impl Strategy<Value = i32> {
    prop_oneof![4 => 0..=max, 1 => any::<i32>()]
}

fn strings() -> impl Strategy<Value = Vec<String>> {
    vec(string(), 0..3)
}

fn ints() -> impl Strategy<Value = Vec<i64>> {
    vec(int(), 0..3)
}

fn map_of<V: std::fmt::Debug>(
    v: impl Strategy<Value = V>,
) -> impl Strategy<Value = BTreeMap<String, V>> {
    btree_map(string(), v, 0..3)
}

fn attribute_def() -> impl Strategy<Value = AttributeDef> {
    use attribute_def::Value;
    option::of(prop_oneof![
        bytes().prop_map(Value::S),
        int().prop_map(Value::I),
        float().prop_map(Value::F),
        any::<bool>().prop_map(Value::B),
        bytes().prop_map(Value::Bt),
    ])
    .prop_map(|value| AttributeDef { value })
}

fn shape_env() -> impl Strategy<Value = ShapeEnvAttrGroupsDef> {
    let check = || {
        (string(), string(), int(), string()).prop_map(|(expr, file, line, dfx)| {
            SymbolCheckInfoDef {
                expr,
                file,
                line,
                dfx,
            }
        })
    };
    (
        map_of(int()),
        btree_map(
            int(),
            strings().prop_map(|symbols| SymbolInfoDef { symbols }),
            0..3,
        ),
        map_of(
            (any::<i32>(), int()).prop_map(|(input_data_idx, dim_idx)| InputSourceDef {
                input_data_idx,
                dim_idx,
            }),
        ),
        map_of(
            (string(), any::<i32>())
                .prop_map(|(replace_expr, rank)| ReplacementDef { replace_expr, rank }),
        ),
        vec(check(), 0..2),
        vec(check(), 0..2),
        option::of((any::<bool>(), any::<i32>()).prop_map(
            |(specialize_zero_one, dynamic_mode)| ShapeEnvSettingDef {
                specialize_zero_one,
                dynamic_mode,
            },
        )),
        any::<u64>(),
    )
        .prop_map(
            |(stv, vts, sts, rep, sci, sai, ss, id)| ShapeEnvAttrGroupsDef {
                symbol_to_value: stv,
                value_to_symbol: vts,
                symbol_to_source: sts,
                replacements: rep,
                symbol_check_infos: sci,
                symbol_assert_infos: sai,
                shape_setting: ss,
                unique_sym_id: id,
            },
        )
}

pub fn attr_groups() -> impl Strategy<Value = AttrGroups> {
    use attr_group_def::AttrGroup;
    let group = option::of(prop_oneof![
        (strings(), strings()).prop_map(|(origin_symbol_shape, symbolic_value)| {
            AttrGroup::TensorAttrGroup(TensorDescAttrGroupsDef {
                origin_symbol_shape,
                symbolic_value,
            })
        }),
        shape_env().prop_map(AttrGroup::ShapeEnvAttrGroup),
    ])
    .prop_map(|attr_group| AttrGroupDef { attr_group });
    (
        option::of(map_of(attribute_def()).prop_map(|attr| OtherGroupDef { attr })),
        vec(group, 0..2),
    )
        .prop_map(|(other_group_def, attr_group_def)| AttrGroups {
            other_group_def,
            attr_group_def,
        })
}

fn attrs(depth: u32) -> BoxedStrategy<BTreeMap<String, AttrDef>> {
    if depth == 0 {
        Just(BTreeMap::new()).boxed()
    } else {
        map_of(attr_def(depth - 1)).boxed()
    }
}

pub fn tensor_desc(depth: u32) -> BoxedStrategy<TensorDescriptor> {
    let head = (
        string(),
        enum_value(41),
        option::of(ints().prop_map(|dim| ShapeDef { dim })),
        string(),
        attrs(depth),
        option::of(attr_groups()),
        any::<bool>(),
        int(),
        int(),
    );
    let tail = (
        any::<[bool; 3]>(),
        string(),
        [int(), int(), int(), int()],
        string(),
        int(),
    );
    (head, tail)
        .prop_map(
            |(
                (name, dtype, shape, layout, attr, attr_groups, has_out_attr, size, weight_size),
                tail,
            )| {
                let (
                    [reuse_input, output_tensor, input_tensor],
                    device_type,
                    ints,
                    cmps_tab,
                    cmps_tab_offset,
                ) = tail;
                let [real_dim_cnt, reuse_input_index, data_offset, cmps_size] = ints;
                TensorDescriptor {
                    name,
                    dtype,
                    shape,
                    layout,
                    attr,
                    attr_groups,
                    has_out_attr,
                    size,
                    weight_size,
                    reuse_input,
                    output_tensor,
                    device_type,
                    input_tensor,
                    real_dim_cnt,
                    reuse_input_index,
                    data_offset,
                    cmps_size,
                    cmps_tab,
                    cmps_tab_offset,
                }
            },
        )
        .boxed()
}

fn tensor_def(depth: u32) -> BoxedStrategy<TensorDef> {
    (option::of(tensor_desc(depth)), bytes())
        .prop_map(|(desc, data)| TensorDef { desc, data })
        .boxed()
}

fn named_attrs(depth: u32) -> BoxedStrategy<NamedAttrs> {
    (string(), attrs(depth))
        .prop_map(|(name, attr)| NamedAttrs { name, attr })
        .boxed()
}

fn list_value(depth: u32) -> BoxedStrategy<attr_def::ListValue> {
    fn small<T: std::fmt::Debug>(s: BoxedStrategy<T>) -> impl Strategy<Value = Vec<T>> {
        vec(s, 0..2)
    }
    (
        (
            vec(bytes(), 0..3),
            ints(),
            vec(float(), 0..3),
            vec(any::<bool>(), 0..3),
            vec(bytes(), 0..2),
        ),
        (
            small(tensor_desc(depth)),
            small(tensor_def(depth)),
            small(graph_def(depth)),
            small(named_attrs(depth)),
        ),
        ints(),
        enum_value(10),
    )
        .prop_map(
            |((s, i, f, b, bt), (td, t, g, na), dt, val_type)| attr_def::ListValue {
                s,
                i,
                f,
                b,
                bt,
                td,
                t,
                g,
                na,
                dt,
                val_type,
            },
        )
        .boxed()
}

pub fn attr_def(depth: u32) -> BoxedStrategy<AttrDef> {
    use attr_def::Value;
    let leaf = prop_oneof![
        bytes().prop_map(Value::S),
        int().prop_map(Value::I),
        float().prop_map(Value::F),
        any::<bool>().prop_map(Value::B),
        bytes().prop_map(Value::Bt),
        vec(ints().prop_map(|list_i| ListInt { list_i }), 0..3)
            .prop_map(|list_list_i| Value::ListListInt(attr_def::ListListInt { list_list_i })),
        int().prop_map(Value::Dt),
        vec(
            vec(float(), 0..3).prop_map(|list_f| ListFloat { list_f }),
            0..3
        )
        .prop_map(|list_list_f| Value::ListListFloat(attr_def::ListListFloat { list_list_f })),
        bytes().prop_map(Value::Expression),
    ];
    let value = if depth == 0 {
        leaf.boxed()
    } else {
        prop_oneof![
            6 => leaf,
            1 => list_value(depth - 1).prop_map(Value::List),
            1 => named_attrs(depth - 1).prop_map(Value::Func),
            1 => tensor_desc(depth - 1).prop_map(Value::Td),
            1 => tensor_def(depth - 1).prop_map(Value::T),
            1 => graph_def(depth - 1).prop_map(Value::G),
        ]
        .boxed()
    };
    option::weighted(0.9, value)
        .prop_map(|value| AttrDef { value })
        .boxed()
}

fn op_def(depth: u32) -> BoxedStrategy<OpDef> {
    let head = (
        string(),
        string(),
        strings(),
        attrs(depth),
        option::of(attr_groups()),
        any::<bool>(),
        int(),
        int(),
    );
    let legacy = (
        strings(),
        strings(),
        ints(),
        strings(),
        ints(),
        ints(),
        ints(),
        ints(),
        ints(),
    );
    let tail = (
        vec(any::<bool>(), 0..3),
        vec(tensor_desc(depth), 0..2),
        vec(tensor_desc(depth), 0..2),
        strings(),
    );
    (head, legacy, tail)
        .prop_map(|(head, legacy, tail)| {
            let (name, r#type, input, attr, attr_groups, has_out_attr, id, stream_id) = head;
            let (
                input_name,
                src_name,
                src_index,
                dst_name,
                dst_index,
                input_i,
                output_i,
                workspace,
                workspace_bytes,
            ) = legacy;
            let (is_input_const, input_desc, output_desc, subgraph_name) = tail;
            OpDef {
                name,
                r#type,
                input,
                attr,
                attr_groups,
                has_out_attr,
                id,
                stream_id,
                input_name,
                src_name,
                src_index,
                dst_name,
                dst_index,
                input_i,
                output_i,
                workspace,
                workspace_bytes,
                is_input_const,
                input_desc,
                output_desc,
                subgraph_name,
            }
        })
        .boxed()
}

pub fn graph_def(depth: u32) -> BoxedStrategy<GraphDef> {
    let ops = if depth == 0 {
        Just(Vec::new()).boxed()
    } else {
        vec(op_def(depth - 1), 0..3).boxed()
    };
    (
        string(),
        strings(),
        strings(),
        ops,
        attrs(depth),
        option::of(attr_groups()),
    )
        .prop_map(|(name, input, output, op, attr, attr_groups)| GraphDef {
            name,
            input,
            output,
            op,
            attr,
            attr_groups,
        })
        .boxed()
}

pub fn model_def() -> impl Strategy<Value = ModelDef> {
    (
        string(),
        any::<u32>(),
        string(),
        vec(graph_def(3), 0..3),
        attrs(2),
        option::of(attr_groups()),
    )
        .prop_map(
            |(name, version, custom_version, graph, attr, attr_groups)| ModelDef {
                name,
                version,
                custom_version,
                graph,
                attr,
                attr_groups,
            },
        )
}
