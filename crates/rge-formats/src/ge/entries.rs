//! An attribute map to write, as borrowed entries: built once per op or tensor desc, then
//! either collected into prost's map (the whole-`ModelDef` writer) or encoded straight to
//! protobuf bytes (the streamed writer, [`super::stream`]). Both give the same bytes: entries in
//! key order, a later entry replacing an earlier one with the same key, as a `BTreeMap` insert
//! does.
//!
//! Encoding directly matters at scale: building a `BTreeMap<String, AttrDef>` per desc (five
//! or six keys, each a `String`, each value a `Bytes`) and then letting prost measure every
//! nested message was about half of saving a 100k-node model.

use std::borrow::Cow;

use bytes::Bytes;
use prost::encoding::{encode_key, encode_varint, encoded_len_varint, WireType};
use prost::Message;
use rge_ir::AttrValue;

use super::attr::{bare_list_i, bare_list_s, AttrDefMap};
use super::writer::Writer;
use crate::ge_proto::attr_def::Value as V;
use crate::ge_proto::AttrDef;

/// One value of an attribute map.
pub(crate) enum Entry<'a> {
    /// An rge attribute, written as [`Writer::write_value`] writes it.
    Value(&'a AttrValue),
    /// A value already in proto form.
    Def(Box<AttrDef>),
    Int(i64),
    Str(Cow<'a, str>),
    Bool(bool),
    /// A list of strings without `val_type` (GE's special lists for OpDesc fields).
    BareStrings(Vec<Cow<'a, str>>),
    /// A list of ints without `val_type`.
    BareInts(Vec<i64>),
}

/// The entries of one attribute map, in insertion order.
#[derive(Default)]
pub(crate) struct Entries<'a>(Vec<(Cow<'a, str>, Entry<'a>)>);

// AttrDef's oneof field numbers (ge_ir.proto) for the kinds encoded directly.
const DEF_LIST: u32 = 1;
const DEF_S: u32 = 2;
const DEF_I: u32 = 3;
const DEF_F: u32 = 4;
const DEF_B: u32 = 5;
// ListValue's `s` and `i`.
const LIST_S: u32 = 2;
const LIST_I: u32 = 3;
// A map entry's key and value.
const MAP_KEY: u32 = 1;
const MAP_VALUE: u32 = 2;

/// Bytes of a length-delimited field's key (tags here are below 16) and length.
fn ld_len(len: usize) -> usize {
    1 + encoded_len_varint(len as u64) + len
}

fn put_ld(tag: u32, bytes: &[u8], out: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

impl<'a> Entries<'a> {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Entries(Vec::with_capacity(n))
    }

    pub(crate) fn push(&mut self, key: impl Into<Cow<'a, str>>, value: Entry<'a>) {
        self.0.push((key.into(), value));
    }

    /// The entries in key order, the last one of each key kept (a `BTreeMap`'s view).
    fn sorted(mut self) -> Vec<(Cow<'a, str>, Entry<'a>)> {
        // Stable, so equal keys keep insertion order; then keep each run's last.
        self.0.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(Cow<'a, str>, Entry<'a>)> = Vec::with_capacity(self.0.len());
        for e in self.0 {
            match out.last_mut() {
                Some(last) if last.0 == e.0 => *last = e,
                _ => out.push(e),
            }
        }
        out
    }

    /// prost's map of these entries.
    pub(crate) fn into_map(self, w: &Writer<'_>) -> AttrDefMap {
        let mut map = AttrDefMap::new();
        for (k, e) in self.0 {
            map.insert(k.into_owned(), w.entry_def(e));
        }
        map
    }

    /// Appends the map as field `tag` of its message, byte for byte what prost writes for
    /// [`Entries::into_map`]'s map.
    pub(crate) fn encode(self, w: &Writer<'_>, tag: u32, out: &mut Vec<u8>) {
        let mut value = Vec::new();
        for (k, e) in self.sorted() {
            value.clear();
            if !w.encode_entry_value(e, &mut value) {
                // prost leaves out a value equal to its default (an AttrDef with no value).
                value.clear();
            }
            // prost also leaves out an empty key.
            let key_len = if k.is_empty() { 0 } else { ld_len(k.len()) };
            let value_len = if value.is_empty() {
                0
            } else {
                ld_len(value.len())
            };
            encode_key(tag, WireType::LengthDelimited, out);
            encode_varint((key_len + value_len) as u64, out);
            if !k.is_empty() {
                put_ld(MAP_KEY, k.as_bytes(), out);
            }
            if !value.is_empty() {
                put_ld(MAP_VALUE, &value, out);
            }
        }
    }
}

impl Writer<'_> {
    /// An entry as an AttrDef.
    fn entry_def(&self, e: Entry<'_>) -> AttrDef {
        let value = match e {
            Entry::Value(v) => return self.write_value(v),
            Entry::Def(d) => return *d,
            Entry::Int(i) => V::I(i),
            Entry::Str(s) => V::S(Bytes::copy_from_slice(s.as_bytes())),
            Entry::Bool(b) => V::B(b),
            Entry::BareStrings(l) => return bare_list_s(l),
            Entry::BareInts(l) => return bare_list_i(l),
        };
        AttrDef { value: Some(value) }
    }

    /// Writes an entry's AttrDef message body to `out`; false when the AttrDef is the default
    /// (no value), which a map leaves out.
    fn encode_entry_value(&self, e: Entry<'_>, out: &mut Vec<u8>) -> bool {
        // The scalar rge kinds are written directly, as the proto ones.
        let e = match e {
            Entry::Value(AttrValue::Int(i)) => Entry::Int(*i),
            Entry::Value(AttrValue::Bool(b)) => Entry::Bool(*b),
            Entry::Value(AttrValue::String(s)) => Entry::Str(Cow::Borrowed(s)),
            other => other,
        };
        match e {
            Entry::Int(i) => {
                encode_key(DEF_I, WireType::Varint, out);
                encode_varint(i as u64, out);
            }
            Entry::Value(AttrValue::Float(f)) => {
                encode_key(DEF_F, WireType::ThirtyTwoBit, out);
                out.extend_from_slice(&f.to_le_bytes());
            }
            Entry::Bool(b) => {
                encode_key(DEF_B, WireType::Varint, out);
                out.push(u8::from(b));
            }
            Entry::Str(s) => put_ld(DEF_S, s.as_bytes(), out),
            Entry::BareStrings(l) => {
                let body: usize = l.iter().map(|s| ld_len(s.len())).sum();
                encode_key(DEF_LIST, WireType::LengthDelimited, out);
                encode_varint(body as u64, out);
                for s in &l {
                    put_ld(LIST_S, s.as_bytes(), out);
                }
            }
            Entry::BareInts(l) => {
                // Packed (proto3's default); an empty list writes no field at all.
                let packed: usize = l.iter().map(|&i| encoded_len_varint(i as u64)).sum();
                let body = if l.is_empty() { 0 } else { ld_len(packed) };
                encode_key(DEF_LIST, WireType::LengthDelimited, out);
                encode_varint(body as u64, out);
                if !l.is_empty() {
                    encode_key(LIST_I, WireType::LengthDelimited, out);
                    encode_varint(packed as u64, out);
                    for &i in &l {
                        encode_varint(i as u64, out);
                    }
                }
            }
            other => {
                let d = self.entry_def(other);
                if d.value.is_none() {
                    return false;
                }
                d.encode_raw(out);
            }
        }
        true
    }
}
