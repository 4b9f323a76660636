//! `AttrDef` ↔ `AttrValue` (reference §7.4) and the helpers for the special, `val_type`-less
//! lists GE writes for OpDesc fields (§7.1).

use std::collections::BTreeMap;

use bytes::Bytes;
use rge_ir::{AttrMap, AttrValue, DataType, NamedAttrs};

use super::error::{fault, Fault, Within};
use super::keys::{EXPRESSION_FIELD, EXPRESSION_WRAPPER};
use super::reader::Reader;
use super::writer::Writer;
use crate::ge_proto::attr_def::list_list_float::ListFloat;
use crate::ge_proto::attr_def::list_list_int::ListInt;
use crate::ge_proto::attr_def::list_value::ListValueType as Vt;
use crate::ge_proto::attr_def::{ListListFloat, ListListInt, ListValue, Value as V};
use crate::ge_proto::{AttrDef, NamedAttrs as NamedAttrsDef};

pub(crate) type AttrDefMap = BTreeMap<String, AttrDef>;

/// An attribute string (`s`, `list.s`): GE strings are bytes, rge's are UTF-8.
pub(crate) fn utf8(b: &Bytes) -> Result<String, Fault> {
    std::str::from_utf8(b)
        .map(str::to_string)
        .map_err(|e| fault(format!("string is not valid UTF-8 ({e})")))
}

/// A raw `ge::DataType` int (`dt`, `list.dt`); unmapped values are DT_UNDEFINED.
pub(crate) fn dt_from_ge(v: i64) -> DataType {
    DataType::from_ge_value(v).unwrap_or(DataType::Undefined)
}

impl Reader<'_> {
    /// Reads an attribute map, leaving out the keys `skip` accepts. An AttrDef with no value, or
    /// a list whose `val_type` is VT_LIST_NONE, is skipped as GE's reader does.
    pub(crate) fn read_attrs(
        &mut self,
        map: &AttrDefMap,
        skip: &dyn Fn(&str) -> bool,
    ) -> Result<AttrMap, Fault> {
        let mut out = AttrMap::new();
        for (k, v) in map {
            if skip(k) {
                continue;
            }
            if let Some(value) = self.read_value(v).within(|| format!("attr `{k}`"))? {
                out.set(k.clone(), value);
            }
        }
        Ok(out)
    }

    /// One attribute value; `None` for an unset value or an untyped list.
    pub(crate) fn read_value(&mut self, def: &AttrDef) -> Result<Option<AttrValue>, Fault> {
        let Some(v) = def.value.as_ref() else {
            return Ok(None);
        };
        Ok(Some(match v {
            V::S(b) => AttrValue::String(utf8(b)?),
            V::I(i) => AttrValue::Int(*i),
            V::F(f) => AttrValue::Float(*f),
            V::B(b) => AttrValue::Bool(*b),
            V::Bt(b) => AttrValue::Bytes(b.to_vec()),
            V::Dt(d) => AttrValue::DataType(dt_from_ge(*d)),
            V::Expression(e) => {
                let mut na = NamedAttrs::new(EXPRESSION_WRAPPER);
                na.attrs.set(EXPRESSION_FIELD, e.to_vec());
                AttrValue::NamedAttrs(na)
            }
            V::ListListInt(l) => {
                AttrValue::ListListInt(l.list_list_i.iter().map(|x| x.list_i.clone()).collect())
            }
            V::ListListFloat(l) => {
                AttrValue::ListListFloat(l.list_list_f.iter().map(|x| x.list_f.clone()).collect())
            }
            V::Func(na) => {
                self.enter()?;
                let v = AttrValue::NamedAttrs(self.read_named(na)?);
                self.leave();
                v
            }
            V::Td(td) => {
                self.enter()?;
                let v = AttrValue::TensorDesc(Box::new(self.read_desc(td)?));
                self.leave();
                v
            }
            V::T(t) => {
                self.enter()?;
                let v = AttrValue::Tensor(Box::new(self.read_tensor(t)?));
                self.leave();
                v
            }
            V::G(g) => {
                self.enter()?;
                let v = AttrValue::Graph(Box::new(self.read_nested_graph(g)?));
                self.leave();
                v
            }
            V::List(l) => {
                self.enter()?;
                let v = self.read_list(l)?;
                self.leave();
                return Ok(v);
            }
        }))
    }

    fn read_named(&mut self, na: &NamedAttrsDef) -> Result<NamedAttrs, Fault> {
        Ok(NamedAttrs {
            name: na.name.clone(),
            attrs: self.read_attrs(&na.attr, &|_| false)?,
        })
    }

    fn read_list(&mut self, l: &ListValue) -> Result<Option<AttrValue>, Fault> {
        let Ok(vt) = Vt::try_from(l.val_type) else {
            // An unknown list type: GE has no deserializer for it either.
            return Ok(None);
        };
        Ok(Some(match vt {
            Vt::VtListNone => return Ok(None),
            Vt::VtListString => AttrValue::ListString(
                l.s.iter()
                    .enumerate()
                    .map(|(i, s)| utf8(s).within(|| format!("list.s[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            Vt::VtListInt => AttrValue::ListInt(l.i.clone()),
            Vt::VtListFloat => AttrValue::ListFloat(l.f.clone()),
            Vt::VtListBool => AttrValue::ListBool(l.b.clone()),
            Vt::VtListBytes => AttrValue::ListBytes(l.bt.iter().map(|b| b.to_vec()).collect()),
            Vt::VtListDataType => {
                AttrValue::ListDataType(l.dt.iter().map(|&d| dt_from_ge(d)).collect())
            }
            Vt::VtListTensorDesc => AttrValue::ListTensorDesc(
                l.td.iter()
                    .enumerate()
                    .map(|(i, d)| self.read_desc(d).within(|| format!("list.td[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            Vt::VtListTensor => AttrValue::ListTensor(
                l.t.iter()
                    .enumerate()
                    .map(|(i, t)| self.read_tensor(t).within(|| format!("list.t[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            Vt::VtListGraph => AttrValue::ListGraph(
                l.g.iter()
                    .enumerate()
                    .map(|(i, g)| self.read_nested_graph(g).within(|| format!("list.g[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            Vt::VtListNamedAttrs => AttrValue::ListNamedAttrs(
                l.na.iter()
                    .enumerate()
                    .map(|(i, na)| self.read_named(na).within(|| format!("list.na[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
        }))
    }
}

/// The strings of a special list (read whatever its `val_type`, as GE does); `None` when the
/// AttrDef is not a list.
pub(crate) fn special_strings(def: &AttrDef) -> Result<Option<Vec<String>>, Fault> {
    match &def.value {
        Some(V::List(l)) => Ok(Some(l.s.iter().map(utf8).collect::<Result<_, _>>()?)),
        _ => Ok(None),
    }
}

/// The ints of a special list; `None` when the AttrDef is not a list.
pub(crate) fn special_ints(def: &AttrDef) -> Option<&[i64]> {
    match &def.value {
        Some(V::List(l)) => Some(&l.i),
        _ => None,
    }
}

/// A `list.s` without `val_type`, as GE writes its special OpDef attrs.
pub(crate) fn bare_list_s<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> AttrDef {
    AttrDef {
        value: Some(V::List(ListValue {
            s: items
                .into_iter()
                .map(|s| Bytes::copy_from_slice(s.as_ref().as_bytes()))
                .collect(),
            ..Default::default()
        })),
    }
}

/// A `list.i` without `val_type`.
pub(crate) fn bare_list_i(items: impl IntoIterator<Item = i64>) -> AttrDef {
    AttrDef {
        value: Some(V::List(ListValue {
            i: items.into_iter().collect(),
            ..Default::default()
        })),
    }
}

fn list(vt: Vt, fill: impl FnOnce(&mut ListValue)) -> V {
    let mut l = ListValue {
        val_type: vt as i32,
        ..Default::default()
    };
    fill(&mut l);
    V::List(l)
}

fn bytes_of(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

impl Writer<'_> {
    /// Writes an attribute map, leaving out the keys `skip` accepts.
    pub(crate) fn write_attrs(&self, attrs: &AttrMap, skip: &dyn Fn(&str) -> bool) -> AttrDefMap {
        attrs
            .iter()
            .filter(|(k, _)| !skip(k))
            .map(|(k, v)| (k.to_string(), self.write_value(v)))
            .collect()
    }

    /// One attribute value; ordinary lists carry their `val_type`.
    pub(crate) fn write_value(&self, v: &AttrValue) -> AttrDef {
        let value = match v {
            AttrValue::Int(i) => V::I(*i),
            AttrValue::Float(f) => V::F(*f),
            AttrValue::String(s) => V::S(bytes_of(s)),
            AttrValue::Bool(b) => V::B(*b),
            AttrValue::Bytes(b) => V::Bt(Bytes::copy_from_slice(b)),
            AttrValue::DataType(d) => V::Dt(i64::from(d.ge_value())),
            AttrValue::TensorDesc(d) => V::Td(self.write_desc(d)),
            AttrValue::Tensor(t) => V::T(self.write_tensor(t)),
            AttrValue::Graph(g) => V::G(self.write_nested_graph(g)),
            AttrValue::NamedAttrs(na) => match expression_of(na) {
                Some(e) => V::Expression(Bytes::copy_from_slice(e)),
                None => V::Func(self.write_named(na)),
            },
            AttrValue::ListListInt(l) => V::ListListInt(ListListInt {
                list_list_i: l.iter().map(|x| ListInt { list_i: x.clone() }).collect(),
            }),
            AttrValue::ListListFloat(l) => V::ListListFloat(ListListFloat {
                list_list_f: l.iter().map(|x| ListFloat { list_f: x.clone() }).collect(),
            }),
            AttrValue::ListInt(x) => list(Vt::VtListInt, |l| l.i = x.clone()),
            AttrValue::ListFloat(x) => list(Vt::VtListFloat, |l| l.f = x.clone()),
            AttrValue::ListString(x) => list(Vt::VtListString, |l| {
                l.s = x.iter().map(|s| bytes_of(s)).collect()
            }),
            AttrValue::ListBool(x) => list(Vt::VtListBool, |l| l.b = x.clone()),
            AttrValue::ListBytes(x) => list(Vt::VtListBytes, |l| {
                l.bt = x.iter().map(|b| Bytes::copy_from_slice(b)).collect()
            }),
            AttrValue::ListDataType(x) => list(Vt::VtListDataType, |l| {
                l.dt = x.iter().map(|d| i64::from(d.ge_value())).collect()
            }),
            AttrValue::ListTensorDesc(x) => list(Vt::VtListTensorDesc, |l| {
                l.td = x.iter().map(|d| self.write_desc(d)).collect()
            }),
            AttrValue::ListTensor(x) => list(Vt::VtListTensor, |l| {
                l.t = x.iter().map(|t| self.write_tensor(t)).collect()
            }),
            AttrValue::ListGraph(x) => list(Vt::VtListGraph, |l| {
                l.g = x.iter().map(|g| self.write_nested_graph(g)).collect()
            }),
            AttrValue::ListNamedAttrs(x) => list(Vt::VtListNamedAttrs, |l| {
                l.na = x.iter().map(|na| self.write_named(na)).collect()
            }),
        };
        AttrDef { value: Some(value) }
    }

    fn write_named(&self, na: &NamedAttrs) -> NamedAttrsDef {
        NamedAttrsDef {
            name: na.name.clone(),
            attr: self.write_attrs(&na.attrs, &|_| false),
        }
    }
}

/// The expression bytes of an `AttrDef.expression` stand-in.
fn expression_of(na: &NamedAttrs) -> Option<&[u8]> {
    if na.name != EXPRESSION_WRAPPER || na.attrs.len() != 1 {
        return None;
    }
    match na.attrs.get(EXPRESSION_FIELD) {
        Some(AttrValue::Bytes(b)) => Some(b),
        _ => None,
    }
}
