//! `OpDef` ↔ `OpDesc`, without the edges (reference §7.1): I/O names from the
//! `_input_name_*`/`_output_name_*` attr pairs, IR metadata from `_opt_input`/`_ir_*`, the
//! legacy OpDef fields as compile state, subgraph instance names, and the op domain/opset from
//! rge's own `_rge_domain`/`_rge_opset` attrs (GE's OpDef has no field for them).

use std::borrow::Cow;
use std::collections::HashSet;

use rge_ir::op_desc::IrMeta;
use rge_ir::{AttrValue, IrError, IrInputKind, IrOutputKind, OpDesc};

use super::attr::{special_ints, special_strings, utf8, AttrDefMap};
use super::entries::{Entries, Entry};
use super::error::{fault, Fault, Within};
use super::keys::*;
use super::reader::Reader;
use super::writer::Writer;
use crate::ge_proto::attr_def::Value as V;
use crate::ge_proto::OpDef;

/// An op read from an OpDef, with what the edge reader needs.
pub(crate) struct OpRead {
    pub(crate) op: OpDesc,
    /// `_src_out_peer_index_for_ge_txt_load`, when it has one entry per `input` entry.
    pub(crate) peer_keys: Option<Vec<i64>>,
    /// `_rge_data_input_count`, when present.
    pub(crate) data_input_count: Option<i64>,
}

/// Port names by index ("" = unnamed) from a key/value attr pair, or from the legacy pair when
/// the current one is absent. Bad entries (length mismatch, index out of range, a second name
/// for one index, a repeated name) are dropped, as GE's reader drops them.
fn port_names(
    attrs: &AttrDefMap,
    keys: [&str; 4],
    count: usize,
    prefix: &str,
) -> Result<Vec<String>, Fault> {
    let mut names = vec![String::new(); count];
    let (k, v) = if attrs.contains_key(keys[0]) {
        (keys[0], keys[1])
    } else {
        (keys[2], keys[3])
    };
    let Some(key_def) = attrs.get(k) else {
        return Ok(names);
    };
    let list = special_strings(key_def).within(|| format!("attr `{k}`"))?;
    let list = list.unwrap_or_default();
    let values = attrs.get(v).and_then(special_ints).unwrap_or(&[]);
    if list.len() != values.len() {
        return Ok(names);
    }
    let mut taken = vec![false; count];
    let mut used = HashSet::new();
    for (name, &idx) in list.into_iter().zip(values) {
        let Some(i) = usize::try_from(idx).ok().filter(|&i| i < count) else {
            continue;
        };
        if taken[i] || name.is_empty() || !used.insert(name.clone()) {
            continue;
        }
        taken[i] = true;
        if name != format!("{prefix}{i}") {
            names[i] = name;
        }
    }
    Ok(names)
}

/// An IR key/value pair, `None` when absent or invalid (GE ignores it then).
fn ir_pairs<K>(
    attrs: &AttrDefMap,
    key: &str,
    value: &str,
    kind: fn(i64) -> Option<K>,
) -> Result<Option<Vec<(String, K)>>, Fault> {
    let Some(k) = attrs.get(key) else {
        return Ok(None);
    };
    let names = special_strings(k).within(|| format!("attr `{key}`"))?;
    let values = attrs.get(value).and_then(special_ints).unwrap_or(&[]);
    let Some(names) = names.filter(|n| n.len() == values.len()) else {
        return Ok(None);
    };
    let kinds: Option<Vec<K>> = values.iter().map(|&v| kind(v)).collect();
    Ok(kinds.map(|k| names.into_iter().zip(k).collect()))
}

/// `_opt_input` as GE derives it: the optional IR inputs, sorted, once each.
fn derived_opt_input(ir: Option<&IrMeta>) -> Vec<String> {
    let mut v: Vec<String> = ir
        .map(|m| {
            m.inputs
                .iter()
                .filter(|(_, k)| *k == IrInputKind::Optional)
                .map(|(n, _)| n.clone())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v.dedup();
    v
}

impl Reader<'_> {
    /// Reads an OpDef's op (edges are read by the graph reader).
    pub(crate) fn read_op(&mut self, def: &OpDef) -> Result<OpRead, Fault> {
        let a = &def.attr;
        let in_names = port_names(
            a,
            [
                INPUT_NAME_KEY,
                INPUT_NAME_VALUE,
                LEGACY_INPUT_NAME_KEY,
                LEGACY_INPUT_NAME_VALUE,
            ],
            def.input_desc.len(),
            "__input",
        )?;
        let out_names = port_names(
            a,
            [
                OUTPUT_NAME_KEY,
                OUTPUT_NAME_VALUE,
                LEGACY_OUTPUT_NAME_KEY,
                LEGACY_OUTPUT_NAME_VALUE,
            ],
            def.output_desc.len(),
            "__output",
        )?;
        let mut op = OpDesc::new(def.name.clone(), def.r#type.clone());
        for (i, td) in def.input_desc.iter().enumerate() {
            let d = self.read_desc(td).within(|| format!("input_desc[{i}]"))?;
            // A name that clashes with another desc's default name falls back to the default.
            match op.add_input(&in_names[i], d.clone()) {
                Err(IrError::DuplicatePortName { .. }) => op.add_input("", d)?,
                r => r?,
            };
        }
        for (i, td) in def.output_desc.iter().enumerate() {
            let d = self.read_desc(td).within(|| format!("output_desc[{i}]"))?;
            match op.add_output(&out_names[i], d.clone()) {
                Err(IrError::DuplicatePortName { .. }) => op.add_output("", d)?,
                r => r?,
            };
        }
        op.set_id(def.id);
        op.set_stream_id(def.stream_id);
        read_domain_opset(a, &mut op)?;
        read_compile_state(def, &mut op);
        for (i, s) in def.subgraph_name.iter().enumerate() {
            op.set_subgraph_instance_name(i, s.clone());
        }

        let attr_names = match a.get(IR_ATTR_NAMES) {
            Some(d) => special_strings(d)
                .within(|| format!("attr `{IR_ATTR_NAMES}`"))?
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let ir_in = ir_pairs(a, IR_INPUTS_KEY, IR_INPUTS_VALUE, IrInputKind::from_value)?
            .unwrap_or_default();
        let ir_out = ir_pairs(
            a,
            IR_OUTPUTS_KEY,
            IR_OUTPUTS_VALUE,
            IrOutputKind::from_value,
        )?
        .unwrap_or_default();
        if !attr_names.is_empty() || !ir_in.is_empty() || !ir_out.is_empty() {
            let m = op.ir_meta_mut();
            m.attr_names = attr_names;
            m.inputs = ir_in;
            m.outputs = ir_out;
        }

        let mut attrs = self.read_attrs(a, &|k| RESERVED_OP_KEYS.contains(&k))?;
        if let Some(d) = a.get(OPT_INPUT) {
            let opt = special_strings(d)
                .within(|| format!("attr `{OPT_INPUT}`"))?
                .unwrap_or_default();
            // Kept as a plain attr only when the IR metadata does not say the same.
            if opt != derived_opt_input(op.ir_meta()) {
                attrs.set(OPT_INPUT, AttrValue::ListString(opt));
            }
        }
        *op.attrs_mut() = attrs;

        let peer_keys = a
            .get(SRC_OUT_PEER_INDEX)
            .and_then(special_ints)
            .filter(|k| k.len() == def.input.len())
            .map(<[i64]>::to_vec);
        let data_input_count = match a.get(DATA_INPUT_COUNT).and_then(|d| d.value.as_ref()) {
            Some(V::I(n)) => Some(*n),
            _ => None,
        };
        Ok(OpRead {
            op,
            peer_keys,
            data_input_count,
        })
    }
}

/// `_rge_domain` / `_rge_opset` back into the OpDesc fields (rge's own attrs; a wrong value
/// type is an error rather than a silently lost domain).
fn read_domain_opset(a: &AttrDefMap, op: &mut OpDesc) -> Result<(), Fault> {
    match a.get(RGE_DOMAIN).and_then(|d| d.value.as_ref()) {
        None => {}
        Some(V::S(b)) => op.set_domain(utf8(b).within(|| format!("attr `{RGE_DOMAIN}`"))?),
        Some(_) => return Err(fault(format!("attr `{RGE_DOMAIN}` is not a string"))),
    }
    match a.get(RGE_OPSET).and_then(|d| d.value.as_ref()) {
        None => {}
        Some(V::I(v)) => op.set_opset(Some(*v)),
        Some(_) => return Err(fault(format!("attr `{RGE_OPSET}` is not an int"))),
    }
    Ok(())
}

fn read_compile_state(def: &OpDef, op: &mut OpDesc) {
    let any = !(def.input_name.is_empty()
        && def.src_name.is_empty()
        && def.src_index.is_empty()
        && def.dst_name.is_empty()
        && def.dst_index.is_empty()
        && def.input_i.is_empty()
        && def.output_i.is_empty()
        && def.workspace.is_empty()
        && def.workspace_bytes.is_empty()
        && def.is_input_const.is_empty());
    if !any {
        return;
    }
    let c = op.compile_state_mut();
    c.legacy_input_names = def.input_name.clone();
    c.src_names = def.src_name.clone();
    c.src_indexes = def.src_index.clone();
    c.dst_names = def.dst_name.clone();
    c.dst_indexes = def.dst_index.clone();
    c.input_offsets = def.input_i.clone();
    c.output_offsets = def.output_i.clone();
    c.workspace = def.workspace.clone();
    c.workspace_bytes = def.workspace_bytes.clone();
    c.is_input_const = def.is_input_const.clone();
}

/// Name/index pairs in name order (GE's `std::map` order).
fn sorted_names<'a>(
    names: impl Iterator<Item = std::borrow::Cow<'a, str>>,
) -> (Vec<String>, Vec<i64>) {
    let mut v: Vec<(String, i64)> = names
        .enumerate()
        .map(|(i, n)| (n.into_owned(), i as i64))
        .collect();
    v.sort();
    v.into_iter().unzip()
}

/// The names of IR ports, borrowed.
fn ir_port_names<K>(ports: &[(String, K)]) -> Vec<Cow<'_, str>> {
    ports.iter().map(|p| Cow::Borrowed(p.0.as_str())).collect()
}

impl Writer<'_> {
    /// An op's attribute map: its own attrs, then the special ones GE derives from its fields.
    pub(crate) fn op_entries<'o>(&self, op: &'o OpDesc) -> Entries<'o> {
        let mut e = Entries::with_capacity(op.attrs().len() + 12);
        for (k, v) in op.attrs().iter() {
            if !RESERVED_OP_KEYS.contains(&k) {
                e.push(k, Entry::Value(v));
            }
        }
        let owned = |v: Vec<String>| v.into_iter().map(Cow::Owned).collect();
        if op.input_count() > 0 {
            let (k, v) = sorted_names((0..op.input_count()).filter_map(|i| op.input_name(i)));
            e.push(INPUT_NAME_KEY, Entry::BareStrings(owned(k)));
            e.push(INPUT_NAME_VALUE, Entry::BareInts(v));
        }
        if op.output_count() > 0 {
            let (k, v) = sorted_names((0..op.output_count()).filter_map(|i| op.output_name(i)));
            e.push(OUTPUT_NAME_KEY, Entry::BareStrings(owned(k)));
            e.push(OUTPUT_NAME_VALUE, Entry::BareInts(v));
        }
        if !op.domain().is_empty() {
            e.push(RGE_DOMAIN, Entry::Str(op.domain().into()));
        }
        if let Some(v) = op.opset() {
            e.push(RGE_OPSET, Entry::Int(v));
        }
        let opt: Vec<Cow<'o, str>> = match op.attrs().get(OPT_INPUT) {
            Some(AttrValue::ListString(l)) => l.iter().map(|s| Cow::Borrowed(s.as_str())).collect(),
            _ => owned(derived_opt_input(op.ir_meta())),
        };
        if !opt.is_empty() {
            e.push(OPT_INPUT, Entry::BareStrings(opt));
        }
        if let Some(m) = op.ir_meta() {
            if !m.attr_names.is_empty() {
                let l = m
                    .attr_names
                    .iter()
                    .map(|s| Cow::Borrowed(s.as_str()))
                    .collect();
                e.push(IR_ATTR_NAMES, Entry::BareStrings(l));
            }
            if !m.inputs.is_empty() {
                e.push(IR_INPUTS_KEY, Entry::BareStrings(ir_port_names(&m.inputs)));
                let kinds = m.inputs.iter().map(|x| x.1 as i64).collect();
                e.push(IR_INPUTS_VALUE, Entry::BareInts(kinds));
            }
            if !m.outputs.is_empty() {
                e.push(
                    IR_OUTPUTS_KEY,
                    Entry::BareStrings(ir_port_names(&m.outputs)),
                );
                let kinds = m.outputs.iter().map(|x| x.1 as i64).collect();
                e.push(IR_OUTPUTS_VALUE, Entry::BareInts(kinds));
            }
        }
        e
    }

    /// An op's OpDef fields but its attribute map ([`Writer::op_entries`]), `input` (the graph
    /// writer adds the edges), `input_desc` and `output_desc` (the writers add them: the
    /// streamed one encodes them one by one).
    pub(crate) fn op_fields_but_attr(&self, op: &OpDesc) -> OpDef {
        let mut def = OpDef {
            name: op.name().to_string(),
            r#type: op.op_type().to_string(),
            has_out_attr: true,
            id: op.id(),
            stream_id: op.stream_id(),
            subgraph_name: op.subgraph_instance_names().to_vec(),
            ..Default::default()
        };
        if let Some(c) = op.compile_state() {
            def.input_name = c.legacy_input_names.clone();
            def.src_name = c.src_names.clone();
            def.src_index = c.src_indexes.clone();
            def.dst_name = c.dst_names.clone();
            def.dst_index = c.dst_indexes.clone();
            def.input_i = c.input_offsets.clone();
            def.output_i = c.output_offsets.clone();
            def.workspace = c.workspace.clone();
            def.workspace_bytes = c.workspace_bytes.clone();
            def.is_input_const = c.is_input_const.clone();
        }
        def
    }
}
