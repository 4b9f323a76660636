//! Attribute values and attribute maps (`ge::AnyValue` / `AttrDef`).
//!
//! An [`AttrMap`] is one pointer wide and allocates nothing while empty; it iterates in key
//! order, which is also the order GE's deterministic serializer writes map entries in.

use std::borrow::Cow;
use std::fmt;

use crate::dtype::DataType;
use crate::error::{IrError, Result};
use crate::tensor::Tensor;
use crate::tensor_desc::TensorDesc;

/// The graph type a `Graph` attribute holds.
pub type GraphValue = crate::graph::ComputeGraph;

/// One attribute value; the variants follow the `AttrDef` slots (reference §7.4).
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    /// `i`.
    Int(i64),
    /// `f`.
    Float(f32),
    /// `s`.
    String(String),
    /// `b`.
    Bool(bool),
    /// `bt` (a `ge::Buffer`).
    Bytes(Vec<u8>),
    /// `dt` (stored as the raw `ge::DataType` int).
    DataType(DataType),
    /// `td`.
    TensorDesc(Box<TensorDesc>),
    /// `t`.
    Tensor(Box<Tensor>),
    /// `g`.
    Graph(Box<GraphValue>),
    /// `func`.
    NamedAttrs(NamedAttrs),
    /// `list.i`.
    ListInt(Vec<i64>),
    /// `list.f`.
    ListFloat(Vec<f32>),
    /// `list.s`.
    ListString(Vec<String>),
    /// `list.b`.
    ListBool(Vec<bool>),
    /// `list.bt`.
    ListBytes(Vec<Vec<u8>>),
    /// `list.dt`.
    ListDataType(Vec<DataType>),
    /// `list.td`.
    ListTensorDesc(Vec<TensorDesc>),
    /// `list.t`.
    ListTensor(Vec<Tensor>),
    /// `list.g`.
    ListGraph(Vec<GraphValue>),
    /// `list.na`.
    ListNamedAttrs(Vec<NamedAttrs>),
    /// `list_list_int`.
    ListListInt(Vec<Vec<i64>>),
    /// `list_list_float`.
    ListListFloat(Vec<Vec<f32>>),
}

impl AttrValue {
    /// A short name of the value's kind, e.g. "int", "list_int" (used in error messages).
    pub const fn kind_name(&self) -> &'static str {
        match self {
            AttrValue::Int(_) => "int",
            AttrValue::Float(_) => "float",
            AttrValue::String(_) => "string",
            AttrValue::Bool(_) => "bool",
            AttrValue::Bytes(_) => "bytes",
            AttrValue::DataType(_) => "data_type",
            AttrValue::TensorDesc(_) => "tensor_desc",
            AttrValue::Tensor(_) => "tensor",
            AttrValue::Graph(_) => "graph",
            AttrValue::NamedAttrs(_) => "named_attrs",
            AttrValue::ListInt(_) => "list_int",
            AttrValue::ListFloat(_) => "list_float",
            AttrValue::ListString(_) => "list_string",
            AttrValue::ListBool(_) => "list_bool",
            AttrValue::ListBytes(_) => "list_bytes",
            AttrValue::ListDataType(_) => "list_data_type",
            AttrValue::ListTensorDesc(_) => "list_tensor_desc",
            AttrValue::ListTensor(_) => "list_tensor",
            AttrValue::ListGraph(_) => "list_graph",
            AttrValue::ListNamedAttrs(_) => "list_named_attrs",
            AttrValue::ListListInt(_) => "list_list_int",
            AttrValue::ListListFloat(_) => "list_list_float",
        }
    }

    /// True for the `list` slot kinds (not `list_list_*`).
    pub const fn is_list(&self) -> bool {
        matches!(
            self,
            AttrValue::ListInt(_)
                | AttrValue::ListFloat(_)
                | AttrValue::ListString(_)
                | AttrValue::ListBool(_)
                | AttrValue::ListBytes(_)
                | AttrValue::ListDataType(_)
                | AttrValue::ListTensorDesc(_)
                | AttrValue::ListTensor(_)
                | AttrValue::ListGraph(_)
                | AttrValue::ListNamedAttrs(_)
        )
    }
}

/// A named attribute bundle (`NamedAttrs`, the `func` slot).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct NamedAttrs {
    /// The bundle's name.
    pub name: String,
    /// Its attributes.
    pub attrs: AttrMap,
}

impl NamedAttrs {
    /// An empty bundle named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        NamedAttrs {
            name: name.into(),
            attrs: AttrMap::new(),
        }
    }
}

/// Attributes by name, in key order; one pointer wide, no allocation while empty.
///
/// Stored as a vector sorted by name: ops carry a handful of attributes, for which a sorted
/// vector is smaller (one small allocation instead of a ~700-byte B-tree leaf) and as fast.
/// Names set with [`AttrMap::set_static`] are kept as `&'static str`, with no copy: a pass
/// that stamps the same few attributes on a million ops allocates only their values.
#[derive(Clone, Default)]
// The box keeps the map one pointer wide (a bare Vec is three words).
#[allow(clippy::box_collection)]
pub struct AttrMap(Option<Box<Vec<(Key, AttrValue)>>>);

/// An attribute name: owned, or borrowed for the program's life.
type Key = Cow<'static, str>;

/// Maps up to this size are searched linearly, comparing lengths first (no string is read
/// unless the lengths match); larger ones by binary search.
const LINEAR: usize = 8;

impl AttrMap {
    /// An empty map.
    pub const fn new() -> Self {
        AttrMap(None)
    }

    fn entries(&self) -> &[(Key, AttrValue)] {
        self.0.as_deref().map_or(&[], |v| v.as_slice())
    }

    /// The index of `name`, for reads.
    fn position(&self, name: &str) -> Option<usize> {
        let e = self.entries();
        if e.len() <= LINEAR {
            e.iter()
                .position(|(k, _)| k.len() == name.len() && k.as_ref() == name)
        } else {
            self.find(name).ok()
        }
    }

    fn find(&self, name: &str) -> std::result::Result<usize, usize> {
        self.entries()
            .binary_search_by(|(k, _)| k.as_ref().cmp(name))
    }

    /// The number of attributes.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// True if there are no attributes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Room for `additional` more attributes without reallocating (allocates the map's storage
    /// when empty).
    pub fn reserve(&mut self, additional: usize) {
        if additional > 0 {
            self.0
                .get_or_insert_with(Default::default)
                .reserve_exact(additional);
        }
    }

    /// True if attribute `name` is set.
    pub fn contains(&self, name: &str) -> bool {
        self.position(name).is_some()
    }

    /// Attribute `name`.
    pub fn get(&self, name: &str) -> Option<&AttrValue> {
        let i = self.position(name)?;
        Some(&self.entries()[i].1)
    }

    /// Attribute `name`, mutable.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut AttrValue> {
        let i = self.position(name)?;
        Some(&mut self.0.as_mut()?[i].1)
    }

    /// Sets attribute `name`, returning the previous value.
    pub fn set(
        &mut self,
        name: impl Into<String>,
        value: impl Into<AttrValue>,
    ) -> Option<AttrValue> {
        self.insert(Cow::Owned(name.into()), value.into())
    }

    /// Sets attribute `name` (a constant), returning the previous value. The same as
    /// [`AttrMap::set`] but the name is not copied.
    pub fn set_static(
        &mut self,
        name: &'static str,
        value: impl Into<AttrValue>,
    ) -> Option<AttrValue> {
        self.insert(Cow::Borrowed(name), value.into())
    }

    fn insert(&mut self, name: Key, value: AttrValue) -> Option<AttrValue> {
        match self.find(&name) {
            Ok(i) => Some(std::mem::replace(
                &mut self.0.as_mut().expect("found")[i].1,
                value,
            )),
            Err(i) => {
                let v = self.0.get_or_insert_with(Default::default);
                crate::ports::insert_small(v, i, (name, value));
                None
            }
        }
    }

    /// Removes attribute `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<AttrValue> {
        let i = self.position(name)?;
        let m = self.0.as_mut()?;
        let (_, v) = m.remove(i);
        if m.is_empty() {
            self.0 = None;
        }
        Some(v)
    }

    /// Keeps only the attributes for which `keep` returns true.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &mut AttrValue) -> bool) {
        if let Some(m) = self.0.as_mut() {
            m.retain_mut(|(k, v)| keep(k.as_ref(), v));
            if m.is_empty() {
                self.0 = None;
            }
        }
    }

    /// The attributes in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &AttrValue)> + '_ {
        self.entries().iter().map(|(k, v)| (k.as_ref(), v))
    }

    /// The attributes in key order, values mutable.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut AttrValue)> + '_ {
        self.0
            .iter_mut()
            .flat_map(|m| m.iter_mut())
            .map(|(k, v)| (&**k, v))
    }

    /// The attribute names in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.entries().iter().map(|(k, _)| k.as_ref())
    }

    /// Removes every attribute (and frees the map).
    pub fn clear(&mut self) {
        self.0 = None;
    }

    /// Attribute `name` as `T`: `Ok(None)` if absent, `AttrTypeMismatch` if of another kind.
    pub fn get_as<'a, T: FromAttr<'a>>(&'a self, name: &str) -> Result<Option<T>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => T::from_attr(v)
                .map(Some)
                .ok_or_else(|| IrError::AttrTypeMismatch {
                    name: name.to_string(),
                    expected: T::KIND,
                    found: v.kind_name(),
                }),
        }
    }

    /// Attribute `name` as `T`: `AttrMissing` if absent, `AttrTypeMismatch` if of another kind.
    pub fn require<'a, T: FromAttr<'a>>(&'a self, name: &str) -> Result<T> {
        self.get_as(name)?.ok_or_else(|| IrError::AttrMissing {
            name: name.to_string(),
        })
    }

    /// Int attribute `name`.
    pub fn get_int(&self, name: &str) -> Result<Option<i64>> {
        self.get_as(name)
    }

    /// Float attribute `name`.
    pub fn get_float(&self, name: &str) -> Result<Option<f32>> {
        self.get_as(name)
    }

    /// Bool attribute `name`.
    pub fn get_bool(&self, name: &str) -> Result<Option<bool>> {
        self.get_as(name)
    }

    /// String attribute `name`.
    pub fn get_str(&self, name: &str) -> Result<Option<&str>> {
        self.get_as(name)
    }

    /// List-of-int attribute `name`.
    pub fn get_list_int(&self, name: &str) -> Result<Option<&[i64]>> {
        self.get_as(name)
    }
}

impl PartialEq for AttrMap {
    fn eq(&self, other: &Self) -> bool {
        // An emptied map may in principle hold `Some(empty)`; compare by contents.
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl fmt::Debug for AttrMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Into<String>, V: Into<AttrValue>> FromIterator<(K, V)> for AttrMap {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut m = AttrMap::new();
        m.extend(iter);
        m
    }
}

impl<K: Into<String>, V: Into<AttrValue>> Extend<(K, V)> for AttrMap {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.set(k, v);
        }
    }
}

/// Anything that carries an attribute map (tensor descs, op descs, graphs).
pub trait HasAttrs {
    /// The attributes.
    fn attrs(&self) -> &AttrMap;
    /// The attributes, mutable.
    fn attrs_mut(&mut self) -> &mut AttrMap;
}

impl HasAttrs for NamedAttrs {
    fn attrs(&self) -> &AttrMap {
        &self.attrs
    }
    fn attrs_mut(&mut self) -> &mut AttrMap {
        &mut self.attrs
    }
}

/// A type that can be borrowed or copied out of an [`AttrValue`] of one kind.
pub trait FromAttr<'a>: Sized {
    /// The [`AttrValue::kind_name`] this type reads.
    const KIND: &'static str;
    /// The value, if `v` is of kind [`Self::KIND`].
    fn from_attr(v: &'a AttrValue) -> Option<Self>;
}

macro_rules! from_attr {
    ($($t:ty, $kind:literal, $var:ident, $x:ident => $e:expr;)*) => {$(
        impl<'a> FromAttr<'a> for $t {
            const KIND: &'static str = $kind;
            fn from_attr(v: &'a AttrValue) -> Option<Self> {
                match v {
                    AttrValue::$var($x) => Some($e),
                    _ => None,
                }
            }
        }
    )*};
}

from_attr! {
    i64, "int", Int, x => *x;
    f32, "float", Float, x => *x;
    bool, "bool", Bool, x => *x;
    DataType, "data_type", DataType, x => *x;
    &'a str, "string", String, x => x.as_str();
    &'a [u8], "bytes", Bytes, x => x.as_slice();
    &'a TensorDesc, "tensor_desc", TensorDesc, x => &**x;
    &'a Tensor, "tensor", Tensor, x => &**x;
    &'a GraphValue, "graph", Graph, x => &**x;
    &'a NamedAttrs, "named_attrs", NamedAttrs, x => x;
    &'a [i64], "list_int", ListInt, x => x.as_slice();
    &'a [f32], "list_float", ListFloat, x => x.as_slice();
    &'a [String], "list_string", ListString, x => x.as_slice();
    &'a [bool], "list_bool", ListBool, x => x.as_slice();
    &'a [Vec<u8>], "list_bytes", ListBytes, x => x.as_slice();
    &'a [DataType], "list_data_type", ListDataType, x => x.as_slice();
    &'a [TensorDesc], "list_tensor_desc", ListTensorDesc, x => x.as_slice();
    &'a [Tensor], "list_tensor", ListTensor, x => x.as_slice();
    &'a [GraphValue], "list_graph", ListGraph, x => x.as_slice();
    &'a [NamedAttrs], "list_named_attrs", ListNamedAttrs, x => x.as_slice();
    &'a [Vec<i64>], "list_list_int", ListListInt, x => x.as_slice();
    &'a [Vec<f32>], "list_list_float", ListListFloat, x => x.as_slice();
}

impl<'a> FromAttr<'a> for &'a AttrValue {
    const KIND: &'static str = "any";
    fn from_attr(v: &'a AttrValue) -> Option<Self> {
        Some(v)
    }
}

macro_rules! into_attr {
    ($($t:ty, $x:ident => $e:expr;)*) => {$(
        impl From<$t> for AttrValue {
            fn from($x: $t) -> Self {
                $e
            }
        }
    )*};
}

into_attr! {
    i64, x => AttrValue::Int(x);
    i32, x => AttrValue::Int(x.into());
    u32, x => AttrValue::Int(x.into());
    f32, x => AttrValue::Float(x);
    bool, x => AttrValue::Bool(x);
    String, x => AttrValue::String(x);
    &str, x => AttrValue::String(x.to_string());
    Vec<u8>, x => AttrValue::Bytes(x);
    DataType, x => AttrValue::DataType(x);
    TensorDesc, x => AttrValue::TensorDesc(Box::new(x));
    Tensor, x => AttrValue::Tensor(Box::new(x));
    GraphValue, x => AttrValue::Graph(Box::new(x));
    NamedAttrs, x => AttrValue::NamedAttrs(x);
    Vec<i64>, x => AttrValue::ListInt(x);
    &[i64], x => AttrValue::ListInt(x.to_vec());
    Vec<f32>, x => AttrValue::ListFloat(x);
    Vec<String>, x => AttrValue::ListString(x);
    Vec<&str>, x => AttrValue::ListString(x.into_iter().map(str::to_string).collect());
    Vec<bool>, x => AttrValue::ListBool(x);
    Vec<Vec<u8>>, x => AttrValue::ListBytes(x);
    Vec<DataType>, x => AttrValue::ListDataType(x);
    Vec<TensorDesc>, x => AttrValue::ListTensorDesc(x);
    Vec<Tensor>, x => AttrValue::ListTensor(x);
    Vec<GraphValue>, x => AttrValue::ListGraph(x);
    Vec<NamedAttrs>, x => AttrValue::ListNamedAttrs(x);
    Vec<Vec<i64>>, x => AttrValue::ListListInt(x);
    Vec<Vec<f32>>, x => AttrValue::ListListFloat(x);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::shape::Shape;

    #[test]
    fn attr_map_is_one_pointer_and_lazy() {
        assert_eq!(std::mem::size_of::<AttrMap>(), 8);
        let mut m = AttrMap::new();
        assert!(m.is_empty() && m.0.is_none());
        m.set("a", 1i64);
        assert!(m.0.is_some());
        assert_eq!(m.remove("a"), Some(AttrValue::Int(1)));
        assert!(m.0.is_none(), "emptied map frees its storage");
        assert_eq!(m, AttrMap::default());
    }

    #[test]
    fn set_get_remove_and_order() {
        let mut m = AttrMap::new();
        assert_eq!(m.set("z", 1i32), None);
        assert_eq!(m.set("a", "x"), None);
        assert_eq!(m.set("m", vec![1i64, 2]), None);
        assert_eq!(m.set("z", 2i64), Some(AttrValue::Int(1)));
        assert_eq!(m.len(), 3);
        assert!(m.contains("a") && !m.contains("b"));
        assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "m", "z"]);
        let kinds: Vec<_> = m.iter().map(|(k, v)| (k, v.kind_name())).collect();
        assert_eq!(kinds, [("a", "string"), ("m", "list_int"), ("z", "int")]);
        if let Some(AttrValue::Int(x)) = m.get_mut("z") {
            *x = 9;
        }
        assert_eq!(m.get_int("z").unwrap(), Some(9));
        for (_, v) in m.iter_mut() {
            if let AttrValue::ListInt(l) = v {
                l.push(3);
            }
        }
        assert_eq!(m.get_list_int("m").unwrap(), Some(&[1, 2, 3][..]));
        m.retain(|k, _| k != "a");
        assert_eq!(m.len(), 2);
        assert_eq!(m.remove("nope"), None);
        m.clear();
        assert!(m.is_empty());
        assert_eq!(
            format!("{:?}", AttrMap::from_iter([("k", true)])),
            r#"{"k": Bool(true)}"#
        );
    }

    #[test]
    fn static_names_reserve_and_large_maps() {
        let mut m = AttrMap::new();
        m.reserve(0);
        assert!(m.0.is_none(), "reserving nothing allocates nothing");
        m.reserve(3);
        assert!(m.0.as_ref().is_some_and(|v| v.capacity() >= 3) && m.is_empty());
        assert_eq!(m.set_static("b", 1i64), None);
        assert_eq!(m.set("a", 2i64), None);
        assert_eq!(m.set_static("a", 3i64), Some(AttrValue::Int(2)));
        assert_eq!(m.set("b", 4i64), Some(AttrValue::Int(1)));
        assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "b"]);
        let mut owned = AttrMap::new();
        owned.set("b", 4i64);
        owned.set("a", 3i64);
        assert_eq!(m, owned, "static and owned names compare by text");
        // Past the linear-search size: binary search, same answers.
        for i in (0..40).rev() {
            m.set(format!("k{i:02}"), i as i64);
        }
        assert_eq!(m.len(), 42);
        for i in 0..40 {
            assert_eq!(m.get_int(&format!("k{i:02}")).unwrap(), Some(i as i64));
        }
        assert!(!m.contains("k40") && m.contains("a"));
        assert_eq!(m.remove("k07"), Some(AttrValue::Int(7)));
        let keys: Vec<&str> = m.keys().collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    }

    #[test]
    fn typed_access() {
        let mut m = AttrMap::new();
        m.set("i", 7i64);
        m.set("f", 1.5f32);
        m.set("b", true);
        m.set("s", "hello");
        m.set("bt", vec![1u8, 2]);
        m.set("dt", DataType::Int32);
        m.set("ls", vec!["a", "b"]);
        m.set("lli", vec![vec![1i64], vec![2, 3]]);
        m.set(
            "td",
            TensorDesc::new(Shape::new([1, 2]), DataType::Float, Format::NCHW),
        );
        m.set("na", NamedAttrs::new("fn"));
        assert_eq!(m.get_int("i").unwrap(), Some(7));
        assert_eq!(m.get_float("f").unwrap(), Some(1.5));
        assert_eq!(m.get_bool("b").unwrap(), Some(true));
        assert_eq!(m.get_str("s").unwrap(), Some("hello"));
        assert_eq!(m.get_as::<&[u8]>("bt").unwrap(), Some(&[1u8, 2][..]));
        assert_eq!(m.require::<DataType>("dt").unwrap(), DataType::Int32);
        assert_eq!(m.require::<&[String]>("ls").unwrap(), ["a", "b"]);
        assert_eq!(m.require::<&[Vec<i64>]>("lli").unwrap().len(), 2);
        assert_eq!(
            m.require::<&TensorDesc>("td").unwrap().format(),
            Format::NCHW
        );
        assert_eq!(m.require::<&NamedAttrs>("na").unwrap().name, "fn");
        assert_eq!(m.require::<&AttrValue>("i").unwrap(), &AttrValue::Int(7));
        assert_eq!(m.get_int("absent").unwrap(), None);
    }

    #[test]
    fn typed_errors_name_the_attribute() {
        let mut m = AttrMap::new();
        m.set("axis", "zero");
        let e = m.get_int("axis").unwrap_err();
        assert_eq!(
            e,
            IrError::AttrTypeMismatch {
                name: "axis".into(),
                expected: "int",
                found: "string"
            }
        );
        assert!(e.to_string().contains("axis"));
        let e = m.require::<&[i64]>("pads").unwrap_err();
        assert_eq!(
            e,
            IrError::AttrMissing {
                name: "pads".into()
            }
        );
        assert!(e.to_string().contains("pads"));
    }

    #[test]
    fn conversions_and_kinds() {
        assert_eq!(AttrValue::from(vec![1u8]), AttrValue::Bytes(vec![1]));
        assert_eq!(AttrValue::from(3i32), AttrValue::Int(3));
        assert_eq!(
            AttrValue::from(String::from("x")),
            AttrValue::String("x".into())
        );
        assert_eq!(AttrValue::from(&[1i64, 2][..]).kind_name(), "list_int");
        assert_eq!(AttrValue::from(vec![1.0f32]).kind_name(), "list_float");
        assert_eq!(AttrValue::from(vec![true]).kind_name(), "list_bool");
        assert_eq!(
            AttrValue::from(vec![DataType::Float]).kind_name(),
            "list_data_type"
        );
        assert_eq!(
            AttrValue::from(vec![vec![1.0f32]]).kind_name(),
            "list_list_float"
        );
        assert_eq!(
            AttrValue::from(vec![TensorDesc::default()]).kind_name(),
            "list_tensor_desc"
        );
        assert_eq!(AttrValue::from(Tensor::default()).kind_name(), "tensor");
        assert_eq!(AttrValue::from(vec![vec![1u8]]).kind_name(), "list_bytes");
        assert!(AttrValue::from(vec![1i64]).is_list());
        assert!(!AttrValue::from(vec![vec![1i64]]).is_list());
        assert!(!AttrValue::from(1i64).is_list());
    }

    #[test]
    fn named_attrs_nest() {
        let mut inner = NamedAttrs::new("inner");
        inner.attrs_mut().set("k", 1i64);
        let mut outer = NamedAttrs::new("outer");
        outer.attrs.set("func", inner.clone());
        outer
            .attrs
            .set("funcs", vec![inner.clone(), NamedAttrs::default()]);
        let got: &NamedAttrs = outer.attrs.require("func").unwrap();
        assert_eq!(got, &inner);
        assert_eq!(got.attrs().get_int("k").unwrap(), Some(1));
        assert_eq!(
            outer.attrs.require::<&[NamedAttrs]>("funcs").unwrap().len(),
            2
        );
    }
}
