//! OM attribute compression (`om_compress_version: 1`, SOURCES.md fact 9), decoded on read,
//! best effort: op and desc attr keys of exactly two bytes are big-endian, 1-based indexes into
//! the model attr `attr_name_enum`; for a name whose `attrs_use_string_value` entry is true, an
//! `i` value is a 0-based index into `attr_value_enum` and stands for that string. Keys that are
//! not valid UTF-8 (indexes whose low byte is ≥ 0x80) cannot be decoded by prost and fail the
//! read. The four model attrs are dropped after decoding, so the model is written uncompressed.

use bytes::Bytes;

use super::attr::AttrDefMap;
use super::keys::{ATTRS_USE_STRING_VALUE, ATTR_NAME_ENUM, ATTR_VALUE_ENUM, OM_COMPRESS_VERSION};
use crate::ge_proto::attr_def::Value as V;
use crate::ge_proto::{AttrDef, GraphDef, ModelDef, TensorDescriptor};

struct Decoder {
    names: Vec<String>,
    values: Vec<Bytes>,
    use_string: Vec<bool>,
}

fn list(def: &ModelDef, key: &str) -> Option<crate::ge_proto::attr_def::ListValue> {
    match &def.attr.get(key)?.value {
        Some(V::List(l)) => Some(l.clone()),
        _ => None,
    }
}

/// The decoded model, or `None` when `def` is not compressed.
/// True when `def`'s attributes say it is OM-compressed.
pub(crate) fn is_compressed(def: &ModelDef) -> bool {
    def.attr.contains_key(OM_COMPRESS_VERSION)
}

pub(crate) fn decode(def: &ModelDef) -> Option<ModelDef> {
    match def.attr.get(OM_COMPRESS_VERSION)?.value {
        Some(V::I(1)) => {}
        _ => return None,
    }
    let names = list(def, ATTR_NAME_ENUM).unwrap_or_default();
    let dec = Decoder {
        names: names
            .s
            .iter()
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
        values: list(def, ATTR_VALUE_ENUM).unwrap_or_default().s,
        use_string: list(def, ATTRS_USE_STRING_VALUE).unwrap_or_default().b,
    };
    let mut out = def.clone();
    for k in [
        OM_COMPRESS_VERSION,
        ATTR_NAME_ENUM,
        ATTR_VALUE_ENUM,
        ATTRS_USE_STRING_VALUE,
    ] {
        out.attr.remove(k);
    }
    for g in &mut out.graph {
        dec.graph(g);
    }
    Some(out)
}

impl Decoder {
    fn graph(&self, g: &mut GraphDef) {
        for op in &mut g.op {
            self.map(&mut op.attr);
            for d in op.input_desc.iter_mut().chain(op.output_desc.iter_mut()) {
                self.desc(d);
            }
        }
    }

    fn desc(&self, d: &mut TensorDescriptor) {
        self.map(&mut d.attr);
    }

    /// The decoded key and its enum index, if the key is compressed.
    fn key(&self, k: &str) -> (String, Option<usize>) {
        if let [hi, lo] = k.as_bytes() {
            let i = usize::from(u16::from_be_bytes([*hi, *lo]));
            if (1..=self.names.len()).contains(&i) {
                return (self.names[i - 1].clone(), Some(i - 1));
            }
        }
        (k.to_string(), None)
    }

    fn map(&self, m: &mut AttrDefMap) {
        for (k, mut v) in std::mem::take(m) {
            let (key, idx) = self.key(&k);
            if let (Some(i), Some(V::I(j))) = (idx, &v.value) {
                let s = usize::try_from(*j).ok().and_then(|j| self.values.get(j));
                if let (Some(true), Some(s)) = (self.use_string.get(i), s) {
                    v.value = Some(V::S(s.clone()));
                }
            }
            self.value(&mut v);
            m.entry(key).or_insert(v);
        }
    }

    fn value(&self, v: &mut AttrDef) {
        match &mut v.value {
            Some(V::Td(d)) => self.desc(d),
            Some(V::T(t)) => {
                if let Some(d) = &mut t.desc {
                    self.desc(d);
                }
            }
            Some(V::Func(na)) => self.map(&mut na.attr),
            Some(V::G(g)) => self.graph(g),
            Some(V::List(l)) => {
                l.td.iter_mut().for_each(|d| self.desc(d));
                for t in &mut l.t {
                    if let Some(d) = &mut t.desc {
                        self.desc(d);
                    }
                }
                l.na.iter_mut().for_each(|na| self.map(&mut na.attr));
                l.g.iter_mut().for_each(|g| self.graph(g));
            }
            _ => {}
        }
    }
}
