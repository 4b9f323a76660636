//! The input or output side of an op: tensor descs with optional names. Names are stored only
//! once some port is named (a node from a builder often has none), and vectors grow by half
//! rather than to 4, because a node typically has one to three ports and memory per node
//! matters at a million nodes.

use std::borrow::Cow;

use crate::tensor_desc::TensorDesc;

/// Pushes with modest growth: `Vec::push` would jump to 4 slots on the first element.
pub(crate) fn push_small<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        v.reserve_exact((v.len() / 2).max(1));
    }
    v.push(x);
}

/// Inserts with the same growth rule as `push_small`.
pub(crate) fn insert_small<T>(v: &mut Vec<T>, i: usize, x: T) {
    if v.len() == v.capacity() {
        v.reserve_exact((v.len() / 2).max(1));
    }
    v.insert(i, x);
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Ports {
    pub(crate) descs: Vec<TensorDesc>,
    /// Empty while no port is named; else one per desc, "" for an unnamed one.
    names: Vec<Box<str>>,
}

impl PartialEq for Ports {
    fn eq(&self, other: &Self) -> bool {
        self.descs == other.descs
            && (0..self.descs.len()).all(|i| self.raw_name(i) == other.raw_name(i))
    }
}

impl Ports {
    pub(crate) fn len(&self) -> usize {
        self.descs.len()
    }

    pub(crate) fn raw_name(&self, i: usize) -> Option<&str> {
        if i >= self.descs.len() {
            return None;
        }
        Some(self.names.get(i).map_or("", |n| n))
    }

    /// The name, or `<prefix><i>` when unnamed (GE's `__input<i>`).
    pub(crate) fn name(&self, prefix: &str, i: usize) -> Option<Cow<'_, str>> {
        let n = self.raw_name(i)?;
        Some(if n.is_empty() {
            Cow::Owned(format!("{prefix}{i}"))
        } else {
            Cow::Borrowed(n)
        })
    }

    pub(crate) fn find(&self, prefix: &str, name: &str) -> Option<usize> {
        if !name.is_empty() {
            if let Some(i) = self.names.iter().position(|n| &**n == name) {
                return Some(i);
            }
        }
        // `__input3` addresses an unnamed desc 3.
        let i: usize = name.strip_prefix(prefix)?.parse().ok()?;
        self.raw_name(i)?.is_empty().then_some(i)
    }

    fn materialize_names(&mut self) {
        if self.names.is_empty() && !self.descs.is_empty() {
            self.names = vec![Box::from(""); self.descs.len()];
        }
    }

    pub(crate) fn push(&mut self, name: &str, desc: TensorDesc) {
        push_small(&mut self.descs, desc);
        if !name.is_empty() || !self.names.is_empty() {
            self.materialize_names();
            // materialize_names already covered the new desc when names were empty.
            if self.names.len() < self.descs.len() {
                push_small(&mut self.names, Box::from(name));
            } else {
                *self.names.last_mut().expect("non-empty") = Box::from(name);
            }
        }
    }

    /// Inserts at `index`; unnamed later ports are given their old `<prefix><i>` name so that a
    /// name never silently moves to another desc.
    pub(crate) fn insert(&mut self, prefix: &str, index: usize, name: &str, desc: TensorDesc) {
        if index < self.descs.len() {
            self.pin_names_from(prefix, index);
        }
        insert_small(&mut self.descs, index, desc);
        if !self.names.is_empty() {
            insert_small(&mut self.names, index, Box::from(name));
        } else if !name.is_empty() {
            self.materialize_names();
            self.names[index] = Box::from(name);
        }
    }

    pub(crate) fn remove(&mut self, prefix: &str, index: usize) -> Option<(String, TensorDesc)> {
        let name = self.name(prefix, index)?.into_owned();
        if index + 1 < self.descs.len() {
            self.pin_names_from(prefix, index + 1);
        }
        if !self.names.is_empty() {
            self.names.remove(index);
        }
        Some((name, self.descs.remove(index)))
    }

    fn pin_names_from(&mut self, prefix: &str, from: usize) {
        self.materialize_names();
        for i in from..self.names.len() {
            if self.names[i].is_empty() {
                self.names[i] = format!("{prefix}{i}").into();
            }
        }
    }

    pub(crate) fn set_name(&mut self, index: usize, name: &str) {
        self.materialize_names();
        self.names[index] = Box::from(name);
    }

    pub(crate) fn set_all_names(&mut self, names: &[&str]) {
        self.names = names.iter().map(|n| Box::<str>::from(*n)).collect();
    }
}
